// Compile-time specialized round-to-nearest-even encoders from f32 bits, for
// the hot SIMD paths (convert, fused pack, MX block quantizer).
//
// Stable interface (other kernels include this header):
//
//   template <Format kTo, bool kSatFinite, bool kRelu = false>
//   struct FastEncodeF32 {
//     template <class DU32>
//     static hn::Vec<DU32> EncodeRn(DU32 du, hn::Vec<DU32> f32_bits);
//   };
//
// `f32_bits` holds f32 values as bits in u32 lanes (any u32 tag: full,
// partial or Rebind); the result holds the destination code in the low bits of
// each lane, upper bits zero. It is bit-identical to scalar::Convert(kF32, kTo,
// bits, {kRN, kSatFinite ? kSatFinite : kNoSat, kRelu}) for every input,
// including NaN, Inf, f32 subnormals and signed zero (OverflowTie::kEven).
// FastFormatOf also describes ue8m0 (for decoders); it has no rn encoder.
// kTo: e2m1, e2m3, e3m2, e4m3, e5m2, ue4m3, f16, bf16 (nosat only where the
// policy is legal: e4m3, e5m2, ue4m3, f16, bf16; relu only for signed kTo).
//
// Requires the default floating-point environment (round to nearest even,
// FP exceptions masked). The subnormal path adds a magic constant in f32; with
// DAZ/FTZ set the results are unchanged (f32 subnormal inputs round to zero in
// every format that takes this path, and the sum is never subnormal).

#if defined(MXPACK_SRC_FORMAT_ENCODE_RN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_RN_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_RN_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_RN_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "mxpack/scalar.h"  // Rounding
#include "src/util/fp16_target.h"
#include "src/util/lanes-inl.h"  // U8From2U16
#if HWY_ARCH_X86
#include <smmintrin.h>  // _MM_FROUND_*
#include <xmmintrin.h>  // _mm_getcsr / _mm_setcsr
#endif

// Target-independent constants: defined once (outside the per-target part).
#ifndef MXPACK_SRC_FORMAT_ENCODE_RN_CONSTANTS_
#define MXPACK_SRC_FORMAT_ENCODE_RN_CONSTANTS_
namespace mxpack::internal {

// The FormatTraits fields the fast encoders need, as constants (format.cc's
// table is not constexpr; tests/convert_test.cc checks that these agree).
struct FastFormat {
  int bits, man_bits, bias;
  bool has_sign;
  uint32_t max_code;       // largest positive finite code
  uint32_t nan_code;       // canonical NaN (fp4/fp6: positive max finite)
  uint32_t overflow_code;  // nosat overflow: Inf, else NaN (fp4/fp6: unused)
};

constexpr FastFormat FastFormatOf(Format f) {
  switch (f) {
    case Format::kE2M1: return {4, 1, 1, true, 0x7, 0x7, 0x7};
    case Format::kE2M3: return {6, 3, 1, true, 0x1F, 0x1F, 0x1F};
    case Format::kE3M2: return {6, 2, 3, true, 0x1F, 0x1F, 0x1F};
    case Format::kE4M3: return {8, 3, 7, true, 0x7E, 0x7F, 0x7F};
    case Format::kE5M2: return {8, 2, 15, true, 0x7B, 0x7F, 0x7C};
    case Format::kUE4M3: return {8, 3, 7, false, 0x7E, 0x7F, 0x7F};
    case Format::kUE8M0: return {8, 0, 127, false, 0xFE, 0xFF, 0xFF};
    case Format::kF16: return {16, 10, 15, true, 0x7BFF, 0x7FFF, 0x7C00};
    case Format::kBF16: return {16, 7, 127, true, 0x7F7F, 0x7FFF, 0x7F80};
    default: return {0, 0, 0, false, 0, 0, 0};  // no fast encoder
  }
}

// True for the destinations FastEncodeF32<kTo, kSatFinite, kRelu> covers.
constexpr bool HasFastEncode(Format to, bool satfinite, bool relu) {
  const FastFormat t = FastFormatOf(to);
  if (t.bits == 0 || to == Format::kUE8M0) return false;  // ue8m0 has no rn
  const bool has_nan_or_inf = t.overflow_code != t.max_code;
  return (satfinite || has_nan_or_inf) && (!relu || t.has_sign);
}

#if HWY_ARCH_X86
// The rounding-control immediate (with exceptions suppressed) of an
// explicitly rounded AVX-512 operation or vcvtps2ph under rn / rz / rm / rp.
constexpr int RoundingImmediate(Rounding mode) {
  return (mode == Rounding::kRN   ? _MM_FROUND_TO_NEAREST_INT
          : mode == Rounding::kRZ ? _MM_FROUND_TO_ZERO
          : mode == Rounding::kRM ? _MM_FROUND_TO_NEG_INF
                                  : _MM_FROUND_TO_POS_INF) |
         _MM_FROUND_NO_EXC;
}

// Puts MXCSR in a known state for its lifetime: FTZ on, DAZ on or off (`daz`),
// round to nearest; on destruction restores the caller's MXCSR, keeping the
// exception flags raised meanwhile. With FTZ, F16cEncodeF32's scaling
// multiply (or the caller's, for prescaled inputs such as MX's folded
// multipliers) flushes products below 2^-126 (they encode to +-0 either way)
// instead of taking a microcode assist for each subnormal result (about 10x
// slower on inputs with tiny values); vcvtps2ph ignores FTZ, so the f16
// subnormal results the codes' subnormals need are unaffected. DAZ is fine
// for a plain convert, whose multiply only scales down; callers that scale
// subnormal inputs up (MX) pass daz = false, which also undoes a DAZ the
// caller may have set. Construct it outside a non-inlined function that
// holds all the guarded floating-point work, so the compiler cannot move
// that work across the MXCSR writes.
class ScopedFlushDenormals {
 public:
  explicit ScopedFlushDenormals(bool daz = true) : saved_(_mm_getcsr()) {
    // Bits: 0x8000 FTZ, 0x0040 DAZ, 0x6000 rounding control (00 = nearest).
    _mm_setcsr((saved_ & ~0x6040u) | 0x8000u | (daz ? 0x0040u : 0u));
  }
  ~ScopedFlushDenormals() { _mm_setcsr(saved_ | (_mm_getcsr() & 0x3Fu)); }
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  unsigned saved_;
};
#endif  // HWY_ARCH_X86

}  // namespace mxpack::internal
#endif  // MXPACK_SRC_FORMAT_ENCODE_RN_CONSTANTS_

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <Format kTo, bool kSatFinite, bool kRelu = false>
struct FastEncodeF32 {
  static_assert(internal::HasFastEncode(kTo, kSatFinite, kRelu),
                "no fast rn encoder for this destination/policy (fp4/fp6 have no "
                "nosat, unsigned formats no relu, ue8m0 no rn)");
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kTo);
  static constexpr int kShift = 23 - kT.man_bits;  // discarded f32 mantissa bits
  static constexpr int kEmin = 1 - kT.bias;       // smallest normal exponent
  // f32 bits of the smallest normal of kTo: below it the subnormal grid applies.
  static constexpr uint32_t kMinNormalBits = static_cast<uint32_t>(kEmin + 127) << 23;
  // Normal path, one add: rebias the exponent (127 -> bias) and add half an
  // ulp minus one; the lsb of the kept part is added separately (ties to even).
  static constexpr uint32_t kNormalAdd =
      ((1u << (kShift - 1)) - 1u) - (static_cast<uint32_t>(127 - kT.bias) << 23);
  // Subnormal path: C = 2^(emin - man + 23). |x| + C (|x| < 2^emin) lies in
  // C's binade, whose ulp is the subnormal ulp 2^(emin - man), so the f32 add
  // rounds |x| to that grid once (ties to even) and bits(sum) - bits(C) is the
  // code (2^man = the smallest normal when it rounds up).
  static constexpr uint32_t kMagicBits =
      static_cast<uint32_t>(kEmin - kT.man_bits + 23 + 127) << 23;
  // bf16 shares f32's exponent range: f32 subnormals are bf16 subnormals on
  // the same aligned grid, so the integer path covers them too.
  static constexpr bool kNeedsSubnormalPath = kTo != Format::kBF16;
  // Largest magnitude code: satfinite clamps to max finite; nosat sends
  // everything above max finite (and Inf) to Inf, or to NaN without Inf.
  static constexpr uint32_t kClamp = kSatFinite ? kT.max_code : kT.overflow_code;

  template <class DU32>
  static HWY_INLINE hn::Vec<DU32> EncodeRn(DU32 du, hn::Vec<DU32> f32_bits) {
    const hn::RebindToSigned<DU32> di;
    const hn::RebindToFloat<DU32> df;
    using VU = hn::Vec<DU32>;
    const VU abs = hn::And(f32_bits, hn::Set(du, 0x7FFFFFFFu));
    // Normal: code = (|x| + kNormalAdd + lsb) >> kShift, where lsb is bit
    // kShift of |x|. A carry out of the mantissa rolls into the exponent, and
    // values beyond max finite give codes above max_code (clamped below).
    //   |x| = 0 EEEEEEEE MMM|ddddddddddddddddddddd   (e4m3: kShift = 20)
    const VU lsb = hn::And(hn::ShiftRight<kShift>(abs), hn::Set(du, 1u));
    VU code = hn::ShiftRight<kShift>(hn::Add(hn::Add(abs, hn::Set(du, kNormalAdd)), lsb));
    const hn::Vec<decltype(di)> abs_i = hn::BitCast(di, abs);
    if (kNeedsSubnormalPath) {
      const VU magic = hn::Set(du, kMagicBits);
      const VU sub = hn::Sub(
          hn::BitCast(du, hn::Add(hn::BitCast(df, abs), hn::BitCast(df, magic))), magic);
      const auto is_sub = hn::Lt(abs_i, hn::Set(di, static_cast<int32_t>(kMinNormalBits)));
      code = hn::IfThenElse(hn::RebindMask(du, is_sub), sub, code);
    }
    // Codes are < 2^31 (|x| < 2^31), so the signed min is the unsigned one.
    code = hn::BitCast(du, hn::Min(hn::BitCast(di, code),
                                   hn::Set(di, static_cast<int32_t>(kClamp))));
    const auto is_nan = hn::RebindMask(du, hn::Gt(abs_i, hn::Set(di, 0x7F800000)));
    if (kRelu) {
      // Negative values and -0 become +0 (NaN is handled below).
      code = hn::IfThenZeroElse(hn::RebindMask(du, hn::Lt(hn::BitCast(di, f32_bits), hn::Zero(di))),
                                code);
    } else if (kT.has_sign) {
      // Sign bit 31 -> bit (bits - 1).
      code = hn::OrAnd(code, hn::ShiftRight<32 - kT.bits>(f32_bits),
                       hn::Set(du, 1u << (kT.bits - 1)));
    }
    return hn::IfThenElse(is_nan, hn::Set(du, kT.nan_code), code);
  }
};

#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
// The same encoders for bf16 sources in u16 lanes (twice the lanes of
// FastEncodeF32), for narrow destinations (kTo of at most 8 bits):
//
//   template <class D16>
//   static hn::Vec<D16> FastEncodeBF16<kTo, kSatFinite, kRelu>::EncodeRn(D16, bf16_bits);
//
// bit-identical to scalar::Convert(kBF16, kTo, bits, rn policy). x86 only
// (the subnormal path widens with per-block zips and re-packs with the x86
// per-block saturating pack, which restores the lane order).
// The last steps of a 16-bit-lane encoder (FastEncodeBF16, F16cEncodeF32):
// `code` is the clamped magnitude code, `src` the source bits with the sign
// in bit 15. relu zeroes negative values and -0; otherwise signed formats get
// the sign bit (bits - 1); NaN lanes become the canonical NaN code.
template <Format kTo, bool kRelu, class D16, class M>
HWY_INLINE hn::Vec<D16> SignReluNanU16(D16 d16, hn::Vec<D16> code, hn::Vec<D16> src, M is_nan) {
  constexpr internal::FastFormat kT = internal::FastFormatOf(kTo);
  const hn::RebindToSigned<D16> di16;
  if (kRelu) {
    code = hn::IfThenZeroElse(hn::RebindMask(d16, hn::Lt(hn::BitCast(di16, src), hn::Zero(di16))),
                              code);
  } else if (kT.has_sign) {
    code = hn::OrAnd(code, hn::ShiftRight<16 - kT.bits>(src),
                     hn::Set(d16, static_cast<uint16_t>(1u << (kT.bits - 1))));
  }
  return hn::IfThenElse(is_nan, hn::Set(d16, static_cast<uint16_t>(kT.nan_code)), code);
}

template <Format kTo, bool kSatFinite, bool kRelu = false>
struct FastEncodeBF16 {
  using F32 = FastEncodeF32<kTo, kSatFinite, kRelu>;
  static constexpr internal::FastFormat kT = F32::kT;
  static_assert(kT.bits <= 8 && kT.man_bits <= 5, "narrow destinations only");
  static constexpr int kShift = 7 - kT.man_bits;  // discarded bf16 mantissa bits
  static constexpr uint16_t kNormalAdd = static_cast<uint16_t>(
      ((1u << (kShift - 1)) - 1u) - (static_cast<uint32_t>(127 - kT.bias) << 7));
  static constexpr int16_t kMinNormalBits = static_cast<int16_t>(F32::kMinNormalBits >> 16);

  template <class D16>
  static HWY_INLINE hn::Vec<D16> EncodeRn(D16 d16, hn::Vec<D16> bf16_bits) {
    const hn::RebindToSigned<D16> di16;
    const hn::Repartition<uint32_t, D16> d32;
    const hn::RebindToFloat<decltype(d32)> df;
    using V16 = hn::Vec<D16>;
    const V16 abs = hn::And(bf16_bits, hn::Set(d16, uint16_t{0x7FFF}));
    // Normal: as FastEncodeF32, with the f32 mantissa's low 16 bits absent.
    const V16 lsb = hn::And(hn::ShiftRight<kShift>(abs), hn::Set(d16, uint16_t{1}));
    V16 code = hn::ShiftRight<kShift>(hn::Add(hn::Add(abs, hn::Set(d16, kNormalAdd)), lsb));
    // Subnormal: FastEncodeF32's magic add on abs << 16 in u32 lanes.
    const auto magic = hn::Set(d32, F32::kMagicBits);
    const auto sub_of = [&](hn::Vec<decltype(d32)> w) {
      return hn::Sub(hn::BitCast(d32, hn::Add(hn::BitCast(df, w), hn::BitCast(df, magic))), magic);
    };
    const V16 zero = hn::Zero(d16);
    const auto lo = sub_of(hn::ZipLower(d32, zero, abs));  // per 128-bit block
    const auto hi = sub_of(hn::ZipUpper(d32, zero, abs));
#if HWY_TARGET <= HWY_AVX3
    const V16 sub{_mm512_packs_epi32(lo.raw, hi.raw)};
#elif HWY_TARGET == HWY_AVX2
    const V16 sub{_mm256_packs_epi32(lo.raw, hi.raw)};
#else
    const V16 sub{_mm_packs_epi32(lo.raw, hi.raw)};
#endif
    const auto abs_i = hn::BitCast(di16, abs);
    code = hn::IfThenElse(hn::RebindMask(d16, hn::Lt(abs_i, hn::Set(di16, kMinNormalBits))), sub,
                          code);
    code = hn::BitCast(d16, hn::Min(hn::BitCast(di16, code),
                                    hn::Set(di16, static_cast<int16_t>(F32::kClamp))));
    const auto is_nan = hn::RebindMask(d16, hn::Gt(abs_i, hn::Set(di16, int16_t{0x7F80})));
    return SignReluNanU16<kTo, kRelu>(d16, code, bf16_bits, is_nan);
  }
};
#endif  // HWY_ARCH_X86 && !EMU128 && !SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_RN_INL_H_
