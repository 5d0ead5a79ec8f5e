// Dispatch of the SIMD array conversions (src/convert/convert-inl.h).
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/convert/convert.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/convert/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

void ConvertArrayKernel(const internal::ConvertParams& p, const uint8_t* in, uint8_t* out,
                        const uint32_t* rbits, size_t n) {
  ConvertArrayT(p, in, out, rbits, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "mxpack/convert.h"
#include "src/util/dispatch_util.h"
#include "src/util/fp_env.h"

namespace mxpack {
HWY_EXPORT(ConvertArrayKernel);

namespace {

internal::SrcKind SrcKindOf(Format f) {
  switch (f) {
    case Format::kF32: return internal::SrcKind::kF32;
    case Format::kF16: return internal::SrcKind::kF16;
    case Format::kBF16: return internal::SrcKind::kBF16;
    default: return internal::SrcKind::kNarrow;
  }
}

internal::ConvertParams MakeParams(Format from, Format to, const EncodePolicy& policy) {
  const FormatTraits& a = Traits(from);
  const FormatTraits& b = Traits(to);
  internal::ConvertParams p{};
  p.from = from;
  p.to = to;
  p.exact = IsExactConversion(from, to);
  p.src = SrcKindOf(from);
  p.src_bytes = a.storage_bytes;
  p.dst_bytes = b.storage_bytes;
  p.src_bits = a.bits;
  p.src_man = a.man_bits;
  p.src_exp_mask = (1 << a.exp_bits) - 1;
  p.src_bias = a.bias;
  p.src_emin127 = (a.has_subnormals ? 1 - a.bias : -a.bias) + 127;
  p.src_has_sign = a.has_sign;
  p.src_has_inf = a.has_inf;
  p.src_has_subnormals = a.has_subnormals;
  p.src_nan = a.nan;
  p.src_ue8m0 = from == Format::kUE8M0;
  p.src_subnormal_scale = static_cast<float>(scalar::ToDouble(from, 1));
  if (to == Format::kF32) {
    p.dst = internal::DstKind::kF32;
  } else if (to == Format::kUE8M0) {
    p.dst = internal::DstKind::kUE8M0;
  } else {
    p.dst = IsNarrow(to) ? internal::DstKind::kNarrow : internal::DstKind::kF16BF16;
  }
  p.dst_man = b.man_bits;
  p.dst_bias = b.bias;
  p.dst_emin127 = (b.has_subnormals ? 1 - b.bias : -b.bias) + 127;
  p.dst_sign_shift = b.bits - 1;
  p.dst_has_sign = b.has_sign;
  p.dst_max_code = static_cast<uint32_t>(b.max_code);
  p.dst_nan_code = static_cast<uint32_t>(b.canonical_nan);
  p.dst_overflow_code = b.has_inf ? static_cast<uint32_t>(((1u << b.exp_bits) - 1) << b.man_bits)
                                  : static_cast<uint32_t>(b.canonical_nan);
  p.relu = policy.relu;
  if (IsExactConversion(from, to)) {
    // Exact: rounding cannot matter and Inf must stay Inf.
    p.rounding = Rounding::kRN;
    p.satfinite = false;
  } else {
    p.rounding = policy.rounding;
    p.satfinite = policy.saturation == Saturation::kSatFinite;
  }
  return p;
}

}  // namespace

bool HasSimdPath(Format from, Format to, const EncodePolicy& policy) {
  if (from == Format::kF64 || to == Format::kF64) return false;
  if (policy.overflow_tie == OverflowTie::kToMaxFinite) return false;
  const bool exact = IsExactConversion(from, to);
  if (IsNarrow(from)) return exact;        // Decodes only (no narrow re-encode).
  if (to == Format::kF32) return exact;    // f16/bf16 -> f32.
  return true;                             // f32/f16/bf16 -> narrow/f16/bf16.
}

void internal::ConvertArrayUnchecked(Format from, Format to, const EncodePolicy& policy,
                                     const uint8_t* in, uint8_t* out, const uint32_t* rbits,
                                     size_t n, Impl impl) {
  const internal::ConvertParams p = MakeParams(from, to, policy);
  internal::Pick(HWY_DISPATCH_TABLE(ConvertArrayKernel), impl)(p, in, out, rbits, n);
}

static absl::Status ConvertArrayInDefaultEnv(Format from, Format to,
                                             const EncodePolicy& policy,
                                             absl::Span<const uint8_t> in,
                                             absl::Span<uint8_t> out,
                                             absl::Span<const uint32_t> rbits,
                                             Impl impl) {
  if (impl.target == Impl::kScalar || !HasSimdPath(from, to, policy)) {
    return scalar::ConvertArray(from, to, policy, in, out, rbits);
  }
  absl::StatusOr<size_t> n = CheckConvertArrayArgs(from, to, policy, in, out, rbits);
  if (!n.ok()) return n.status();
  internal::ConvertArrayUnchecked(from, to, policy, in.data(), out.data(),
                                  rbits.empty() ? nullptr : rbits.data(), *n, impl);
  return absl::OkStatus();
}

absl::Status ConvertArray(Format from, Format to, const EncodePolicy& policy,
                          absl::Span<const uint8_t> in, absl::Span<uint8_t> out,
                          absl::Span<const uint32_t> rbits, Impl impl) {
  return internal::InDefaultFpEnv([&] {
    return ConvertArrayInDefaultEnv(from, to, policy, in, out, rbits, impl);
  });
}

}  // namespace mxpack
#endif  // HWY_ONCE
