// Dispatch of the stack-exact block quantizers (stack_blocks.h): one Highway
// kernel per stack arithmetic and input dtype (stack_blocks-inl.h); HWY_SCALAR
// (never dispatched) runs the scalar reference.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/checkpoint/stack_blocks.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/checkpoint/stack_blocks-inl.h"
#include "src/checkpoint/stack_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

void StackBlocks(const internal::StackBlocksArgs& a, const uint8_t* in,
                 size_t nb, uint8_t* elements, uint8_t* scales) {
#if HWY_TARGET == HWY_SCALAR
  internal::QuantizeStackBlocksScalar(a, in, nb, elements, scales);
#else
  using internal::SrcKind;
  using internal::StackArith;
  const auto run = [&](auto arith) {
    constexpr StackArith kArith = decltype(arith)::value;
    switch (a.from) {
      case Format::kF32:
        return StackBlockQuantizer<kArith, SrcKind::kF32>::Run(
            a.tensor_scale, in, nb, elements, scales);
      case Format::kF16:
        return StackBlockQuantizer<kArith, SrcKind::kF16>::Run(
            a.tensor_scale, in, nb, elements, scales);
      default:
        return StackBlockQuantizer<kArith, SrcKind::kBF16>::Run(
            a.tensor_scale, in, nb, elements, scales);
    }
  };
  switch (a.arith) {
    case StackArith::kCtNvfp4:
      return run(std::integral_constant<StackArith, StackArith::kCtNvfp4>());
    case StackArith::kCtMxfp4:
      return run(std::integral_constant<StackArith, StackArith::kCtMxfp4>());
    case StackArith::kCtMxfp8:
      return run(std::integral_constant<StackArith, StackArith::kCtMxfp8>());
    case StackArith::kModelOptNvfp4:
      return run(
          std::integral_constant<StackArith, StackArith::kModelOptNvfp4>());
    case StackArith::kModelOptMxfp8:
      return run(
          std::integral_constant<StackArith, StackArith::kModelOptMxfp8>());
  }
#endif
}

uint32_t StackAbsMaxBits(Format from, const uint8_t* in, size_t n) {
#if HWY_TARGET == HWY_SCALAR
  return internal::AbsMaxBitsScalar(from, in, n);
#else
  switch (from) {
    case Format::kF32:
      return AbsMaxBitsOf<internal::SrcKind::kF32>(in, n);
    case Format::kF16:
      return AbsMaxBitsOf<internal::SrcKind::kF16>(in, n);
    default:
      return AbsMaxBitsOf<internal::SrcKind::kBF16>(in, n);
  }
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <limits>

#include "mxpack/scalar.h"
#include "src/checkpoint/scheme.h"
#include "src/mx/nvfp4_thresholds.h"
#include "src/util/dispatch_util.h"

namespace mxpack {
namespace internal {

float StackNvfp4Divisor(StackArith a, float tensor_scale, uint8_t code) {
  const float d = scalar::DecodeToF32(Format::kE4M3, code);
  return a == StackArith::kCtNvfp4 ? d / tensor_scale : d * tensor_scale;
}

void StackNvfp4Thresholds::Reset(StackArith a, float scale) {
  if (a == arith && scalar::F32Bits(scale) == scalar::F32Bits(tensor_scale))
    return;
  arith = a;
  tensor_scale = scale;
  have[0] = have[1] = 0;
  code_table = code_table_filled = false;
}

void StackNvfp4Thresholds::FillCodeTable() {
  if (code_table_filled) return;
  code_table_filled = true;
  code_table = false;
  const bool ct = arith == StackArith::kCtNvfp4;
  // The binade e_ref of amax whose scales lie near 1 (amax ~ 6 / gs, or
  // 6 t), so that every intermediate there is a normal f32 (checked).
  const double target = ct ? 6.0 / static_cast<double>(tensor_scale)
                           : 6.0 * static_cast<double>(tensor_scale);
  if (!(target > 0.0) || !std::isfinite(target)) return;
  // ct: amax / 6 is normal from amax = 2^-123 (biased exponent 4) up.
  const int e_min = ct ? 4 : 1;
  const int e_ref = std::clamp(std::ilogb(target) + 127, e_min, 254);
  constexpr float kMinNormal = std::numeric_limits<float>::min();
  constexpr float kMax = std::numeric_limits<float>::max();
  int code[128];
  int lo = std::numeric_limits<int>::max();
  for (unsigned m7 = 0; m7 < 128; ++m7) {
    const float amax =
        scalar::F32FromBits(static_cast<uint32_t>(e_ref) << 23 | m7 << 16);
    float s;
    if (ct) {
      const float v = RoundToDtype(Format::kBF16, amax / 6.0f);
      if (!(v >= kMinNormal && v <= kMax)) return;
      s = tensor_scale * v;
    } else {
      s = amax / (6.0f * tensor_scale);
    }
    if (!(s >= kMinNormal && s <= kMax)) return;
    // s rounded (ties to even) to 3 mantissa bits: exponent << 3 | mantissa
    // (the carry moves up a binade), rebiased from 127 to 7.
    const uint32_t b = scalar::F32Bits(s);
    code[m7] = static_cast<int>((b + 0x7FFFFu + ((b >> 20) & 1u)) >> 20) - 960;
    lo = std::min(lo, code[m7]);
  }
  for (unsigned m7 = 0; m7 < 128; ++m7) {
    if (code[m7] - lo > 255) return;
    code_lut[m7] = static_cast<uint8_t>(code[m7] - lo);
  }
  code_bias = lo - 8 * e_ref;
  code_min_bits = static_cast<uint32_t>(e_min) << 23;
  code_table = true;
}

void StackNvfp4Thresholds::Fill(unsigned lo, unsigned hi) {
  // The f32 rounding boundaries next to the e2m1 midpoints (see the
  // header): m + ulp(m) / 2 where the tie goes down, m - ulp(m) / 2 where
  // it goes up (ulp in m's binade; none of the m_i is a power of two there).
  static constexpr double kBound[7] = {
      0.25 + 0x1p-26, 0.75 - 0x1p-25, 1.25 + 0x1p-24, 1.75 - 0x1p-24,
      2.5 + 0x1p-23,  3.5 - 0x1p-23,  5.0 + 0x1p-22};
  // Usually every code of the span is there already (one test per word).
  uint64_t missing = 0;
  for (unsigned w = lo / 64; w <= hi / 64; ++w) {
    const unsigned first = w == lo / 64 ? lo % 64 : 0;
    const unsigned last = w == hi / 64 ? hi % 64 : 63;
    missing |=
        (~uint64_t{0} >> (63 - last)) & (~uint64_t{0} << first) & ~have[w];
  }
  if (missing == 0) return;
  for (unsigned c = lo; c <= hi; ++c) {
    uint64_t& word = have[c / 64];
    const uint64_t bit = uint64_t{1} << (c % 64);
    if (word & bit) continue;
    word |= bit;
    const float div =
        StackNvfp4Divisor(arith, tensor_scale, static_cast<uint8_t>(c));
    usable[c] = div > 0.0f && div <= 3.4028234663852886e38f;
    bucketed[c] = false;
    if (!usable[c]) {
      for (int i = 0; i < 8; ++i) row[c][i] = 0;
      continue;
    }
    for (int i = 0; i < 8; ++i) {
      bool exact;
      // (i = 7: q is +-0 iff |x| / div <= 2^-150.)
      const double bound = i < 7 ? kBound[i] : 0x1p-150;
      uint32_t t = F32BitsAtOrBelow(bound * static_cast<double>(div), &exact);
      // Tie up (odd i): the boundary itself passes, T is the f32 below it.
      if (i < 7 && i % 2 == 1 && exact) --t;
      const uint32_t h = t >> 16;
      row[c][i] = h | h << 16;
    }
    unsigned t[7];
    for (int i = 0; i < 7; ++i) t[i] = row[c][i] & 0xFFFF;
    const unsigned base = t[0] >= 31 ? t[0] - 31 : 0;
    const StackBuckets buckets = MakeStackBuckets(t, base);
    for (int j = 0; j < 30; ++j) {
      const unsigned below = buckets.entry[j] >> 11;
      const unsigned offset = buckets.entry[j] & 31;
      bucket[c][j] = buckets.entry[j];
      bucket_add[c][j] =
          static_cast<uint16_t>((below << 5 | (31 - offset)) - 32 * j);
    }
    bucket[c][30] = static_cast<uint16_t>(row[c][7]);
    bucket[c][31] = bucket_add[c][30] = bucket_add[c][31] =
        static_cast<uint16_t>(base);
    bucketed[c] = buckets.ok;
  }
}

}  // namespace internal

HWY_EXPORT(StackBlocks);
HWY_EXPORT(StackAbsMaxBits);

namespace internal {

void QuantizeStackBlocks(const StackBlocksArgs& a, const uint8_t* in, size_t nb,
                         uint8_t* elements, uint8_t* scales, Impl impl) {
  if (impl.target == Impl::kScalar) {
    return QuantizeStackBlocksScalar(a, in, nb, elements, scales);
  }
  Pick(HWY_DISPATCH_TABLE(StackBlocks), impl)(a, in, nb, elements, scales);
}

uint32_t AbsMaxBits(Format from, const uint8_t* in, size_t n, Impl impl) {
  if (impl.target == Impl::kScalar) return AbsMaxBitsScalar(from, in, n);
  return Pick(HWY_DISPATCH_TABLE(StackAbsMaxBits), impl)(from, in, n);
}

}  // namespace internal
}  // namespace mxpack
#endif  // HWY_ONCE
