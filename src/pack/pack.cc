// Dispatched entry points of the packed layouts (docs/semantics.md section 2): argument
// checks, then the per-target kernels of pack-inl.h (or the scalar reference
// for Impl::kScalar). Fused decode/encode run the element conversion on
// L1-resident tiles of codes and pack/unpack each tile with the same Impl.
#include <cstddef>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/pack/pack.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/pack/pack-inl.h"

#if HWY_ONCE
#include "absl/status/status.h"
#include "mxpack/convert.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "src/format/convert_params.h"
#include "src/util/dispatch_util.h"
#include "src/util/fp_env.h"

namespace mxpack {

HWY_EXPORT(ExpandPadded);
HWY_EXPORT(CompactPadded);
HWY_EXPORT(UnpackDense4);
HWY_EXPORT(PackDense4);
HWY_EXPORT(UnpackDense6);
HWY_EXPORT(PackDense6);
HWY_EXPORT(ShiftBytesRight);
HWY_EXPORT(AnyOutside);
HWY_EXPORT(EncodePaddedFused);
HWY_EXPORT(DecodeE2M1F32Groups);

namespace {

using internal::Pick;

bool IsPadded(Layout l) {
  return l == Layout::kB4x16P64 || l == Layout::kB6x16P32;
}

// Elements per tile of the fused paths: 2 KiB of codes stay in L1 together
// with the converted tile.
constexpr size_t kTile = 2048;

int ContainerShift(int bits, Fp6Container c) {
  return bits == 4 ? 2 : (c == Fp6Container::kMid6 ? 1 : 0);
}

// Validated codes -> packed (exactly PackedBytes(l, n) bytes written).
void PackCodes(Layout l, const uint8_t* codes, uint8_t* packed, size_t n,
               Impl impl) {
  const int bits = LayoutElementBits(l);
  if (!IsPadded(l)) {
    (bits == 4 ? Pick(HWY_DISPATCH_TABLE(PackDense4), impl)
               : Pick(HWY_DISPATCH_TABLE(PackDense6), impl))(codes, packed, n);
    return;
  }
  const auto compact = Pick(HWY_DISPATCH_TABLE(CompactPadded), impl);
  const size_t full = n / 16;
  compact(bits, 0, codes, packed, full);
  if (const size_t r = n % 16) {
    uint8_t last[16] = {};
    std::memcpy(last, codes + full * 16, r);
    compact(bits, 0, last, packed + full * 16, 1);
  }
}

// packed -> n codes (padding ignored).
void UnpackCodes(Layout l, const uint8_t* packed, uint8_t* codes, size_t n,
                 Impl impl) {
  const int bits = LayoutElementBits(l);
  if (!IsPadded(l)) {
    (bits == 4 ? Pick(HWY_DISPATCH_TABLE(UnpackDense4), impl)
               : Pick(HWY_DISPATCH_TABLE(UnpackDense6), impl))(packed, codes, n);
    return;
  }
  const auto expand = Pick(HWY_DISPATCH_TABLE(ExpandPadded), impl);
  const size_t full = n / 16;
  expand(bits, 0, packed, codes, full);
  if (const size_t r = n % 16) {
    uint8_t last[16];
    expand(bits, 0, packed + full * 16, last, 1);
    std::memcpy(codes + full * 16, last, r);
  }
}

absl::Status CheckInside(absl::string_view arg, const uint8_t* p, size_t n,
                         uint8_t mask, absl::string_view what, Impl impl) {
  if (!Pick(HWY_DISPATCH_TABLE(AnyOutside), impl)(p, n, mask)) {
    return absl::OkStatus();
  }
  const size_t bad = internal::FirstOutside(p, n, mask);
  return internal::OutsideError(arg, bad, p[bad], mask, what);
}

absl::string_view ContainerWhat(int bits, Fp6Container c) {
  return bits == 4 ? "a 4-bit container 00xxxx00"
                   : (c == Fp6Container::kLow6 ? "a low6 container 00xxxxxx"
                                               : "a mid6 container 0xxxxxx0");
}

// The element conversion of the fused paths: the dispatched convert kernels
// (mxpack/convert.h) with the same Impl as the packing kernels. The callers
// checked their arguments (and unpacked codes are valid by construction), so
// SIMD paths skip ConvertArray's checks.
absl::Status ConvertTile(Format from, Format to, const EncodePolicy& policy,
                         absl::Span<const uint8_t> in, absl::Span<uint8_t> out,
                         absl::Span<const uint32_t> rbits, Impl impl) {
  if (!HasSimdPath(from, to, policy)) {
    return ConvertArray(from, to, policy, in, out, rbits, impl);
  }
  internal::ConvertArrayUnchecked(from, to, policy, in.data(), out.data(),
                                  rbits.empty() ? nullptr : rbits.data(),
                                  in.size() / static_cast<size_t>(Traits(from).storage_bytes),
                                  impl);
  return absl::OkStatus();
}

}  // namespace

absl::Status Pack(Layout l, absl::Span<const uint8_t> codes,
                  absl::Span<uint8_t> packed, Impl impl) {
  if (impl.target == Impl::kScalar) return scalar::Pack(l, codes, packed);
  if (absl::Status s = internal::CheckPackArgs(l, codes.size(), packed.size());
      !s.ok()) {
    return s;
  }
  const int bits = LayoutElementBits(l);
  if (absl::Status s = CheckInside(
          "codes", codes.data(), codes.size(), static_cast<uint8_t>((1u << bits) - 1),
          bits == 4 ? "a 4-bit code" : "a 6-bit code", impl);
      !s.ok()) {
    return s;
  }
  PackCodes(l, codes.data(), packed.data(), codes.size(), impl);
  return absl::OkStatus();
}

absl::Status Unpack(Layout l, absl::Span<const uint8_t> packed,
                    absl::Span<uint8_t> codes, Impl impl) {
  if (impl.target == Impl::kScalar) return scalar::Unpack(l, packed, codes);
  if (absl::Status s = internal::CheckPackArgs(l, codes.size(), packed.size());
      !s.ok()) {
    return s;
  }
  UnpackCodes(l, packed.data(), codes.data(), codes.size(), impl);
  return absl::OkStatus();
}

absl::Status Decompress(Layout src, absl::Span<const uint8_t> packed,
                        absl::Span<uint8_t> b8x16, Fp6Container c, Impl impl) {
  if (impl.target == Impl::kScalar) {
    return scalar::Decompress(src, packed, b8x16, c);
  }
  if (absl::Status s =
          internal::CheckPaddedArgs(src, packed.size(), b8x16.size(), true);
      !s.ok()) {
    return s;
  }
  const int bits = LayoutElementBits(src);
  Pick(HWY_DISPATCH_TABLE(ExpandPadded), impl)(bits, ContainerShift(bits, c),
                                               packed.data(), b8x16.data(),
                                               packed.size() / 16);
  return absl::OkStatus();
}

absl::Status Compress(Layout dst, absl::Span<const uint8_t> b8x16,
                      absl::Span<uint8_t> packed, Fp6Container c, Impl impl) {
  if (impl.target == Impl::kScalar) {
    return scalar::Compress(dst, b8x16, packed, c);
  }
  if (absl::Status s =
          internal::CheckPaddedArgs(dst, packed.size(), b8x16.size(), false);
      !s.ok()) {
    return s;
  }
  const int bits = LayoutElementBits(dst);
  if (absl::Status s =
          CheckInside("b8x16", b8x16.data(), b8x16.size(),
                      scalar::ContainerMask(bits, c), ContainerWhat(bits, c), impl);
      !s.ok()) {
    return s;
  }
  Pick(HWY_DISPATCH_TABLE(CompactPadded), impl)(bits, ContainerShift(bits, c),
                                                b8x16.data(), packed.data(),
                                                packed.size() / 16);
  return absl::OkStatus();
}

static absl::Status DecodePackedInDefaultEnv(Layout src, Format elem, Format to,
                                             absl::Span<const uint8_t> packed,
                                             absl::Span<uint8_t> out,
                                             Impl impl) {
  if (impl.target == Impl::kScalar) {
    return scalar::DecodePacked(src, elem, to, packed, out);
  }
  size_t n = 0;
  if (absl::Status s = internal::CheckDecodePackedArgs(src, elem, to, packed.size(),
                                                       out.size(), &n);
      !s.ok()) {
    return s;
  }
  const size_t ob = static_cast<size_t>(Traits(to).storage_bytes);
  size_t done = 0;
  if (elem == Format::kE2M1 && to == Format::kF32 &&
      (src == Layout::kDense4 || src == Layout::kB4x16P64)) {
    // Whole groups of 16 by the fused kernel where the target has one.
    const size_t groups = n / 16;
    if (Pick(HWY_DISPATCH_TABLE(DecodeE2M1F32Groups), impl)(
            packed.data(), src == Layout::kDense4 ? 8 : 16, out.data(),
            groups)) {
      done = 16 * groups;
    }
  }
  alignas(64) uint8_t codes[kTile];
  for (size_t s0 = done; s0 < n; s0 += kTile) {
    const size_t m = n - s0 < kTile ? n - s0 : kTile;
    UnpackCodes(src, packed.data() + PackedBytes(src, s0), codes, m, impl);
    if (absl::Status s = ConvertTile(elem, to, EncodePolicy{},
                                     absl::MakeConstSpan(codes, m),
                                     out.subspan(s0 * ob, m * ob), {}, impl);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status DecodePacked(Layout src, Format elem, Format to,
                          absl::Span<const uint8_t> packed,
                          absl::Span<uint8_t> out, Impl impl) {
  return internal::InDefaultFpEnv([&] {
    return DecodePackedInDefaultEnv(src, elem, to, packed, out, impl);
  });
}

static absl::Status DecodeContainersInDefaultEnv(
    Format elem, Format to, absl::Span<const uint8_t> b8x16,
    absl::Span<uint8_t> out, Fp6Container c, Impl impl) {
  if (impl.target == Impl::kScalar) {
    return scalar::DecodeContainers(elem, to, b8x16, out, c);
  }
  const int bits = Traits(elem).bits;
  if (absl::Status s = CheckLayoutFormat(
          bits == 4 ? Layout::kB4x16P64 : Layout::kB6x16P32, elem);
      !s.ok()) {
    return s;
  }
  // Same checks and messages as the scalar reference.
  size_t n = 0;
  if (absl::Status s = internal::CheckDecodeArgs(to, out.size(), &n);
      !s.ok() || n != b8x16.size()) {
    return scalar::DecodeContainers(elem, to, b8x16, out, c);
  }
  if (absl::Status s = CheckInside("b8x16", b8x16.data(), n,
                                   scalar::ContainerMask(bits, c),
                                   "a container of the element format", impl);
      !s.ok()) {
    return s;
  }
  const auto shift_right = Pick(HWY_DISPATCH_TABLE(ShiftBytesRight), impl);
  const size_t ob = static_cast<size_t>(Traits(to).storage_bytes);
  alignas(64) uint8_t codes[kTile];
  for (size_t s0 = 0; s0 < n; s0 += kTile) {
    const size_t m = n - s0 < kTile ? n - s0 : kTile;
    shift_right(ContainerShift(bits, c), b8x16.data() + s0, codes, m);
    if (absl::Status s = ConvertTile(elem, to, EncodePolicy{},
                                     absl::MakeConstSpan(codes, m),
                                     out.subspan(s0 * ob, m * ob), {}, impl);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeContainers(Format elem, Format to,
                              absl::Span<const uint8_t> b8x16,
                              absl::Span<uint8_t> out, Fp6Container c,
                              Impl impl) {
  return internal::InDefaultFpEnv([&] {
    return DecodeContainersInDefaultEnv(elem, to, b8x16, out, c, impl);
  });
}

static absl::Status EncodePackedInDefaultEnv(
    Format from, Format elem, Layout dst, const EncodePolicy& policy,
    absl::Span<const uint8_t> in, absl::Span<uint8_t> packed,
    absl::Span<const uint32_t> rbits, Impl impl) {
  if (impl.target == Impl::kScalar) {
    return scalar::EncodePacked(from, elem, dst, policy, in, packed, rbits);
  }
  size_t n = 0;
  if (absl::Status s = internal::CheckEncodePackedArgs(
          from, elem, dst, policy, in.size(), packed.size(), rbits.size(), &n);
      !s.ok()) {
    return s;
  }
  // One pass for rn into padded layouts (the common quantize case).
  if (IsPadded(dst) && policy.rounding == Rounding::kRN &&
      policy.saturation == Saturation::kSatFinite &&
      policy.overflow_tie == OverflowTie::kEven &&
      Pick(HWY_DISPATCH_TABLE(EncodePaddedFused), impl)(from, elem, policy.relu, in.data(),
                                                         packed.data(), n)) {
    return absl::OkStatus();
  }
  const size_t ib = static_cast<size_t>(Traits(from).storage_bytes);
  alignas(64) uint8_t codes[kTile];
  for (size_t s0 = 0; s0 < n; s0 += kTile) {
    const size_t m = n - s0 < kTile ? n - s0 : kTile;
    if (absl::Status s = ConvertTile(
            from, elem, policy, in.subspan(s0 * ib, m * ib),
            absl::MakeSpan(codes, m),
            rbits.empty() ? rbits : rbits.subspan(s0, m), impl);
        !s.ok()) {
      return s;  // Not reached: every argument was checked above.
    }
    PackCodes(dst, codes, packed.data() + PackedBytes(dst, s0), m, impl);
  }
  return absl::OkStatus();
}

absl::Status EncodePacked(Format from, Format elem, Layout dst,
                          const EncodePolicy& policy,
                          absl::Span<const uint8_t> in,
                          absl::Span<uint8_t> packed,
                          absl::Span<const uint32_t> rbits, Impl impl) {
  return internal::InDefaultFpEnv([&] {
    return EncodePackedInDefaultEnv(from, elem, dst, policy, in, packed, rbits,
                                    impl);
  });
}

}  // namespace mxpack
#endif  // HWY_ONCE
