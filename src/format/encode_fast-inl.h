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

#if defined(MXPACK_SRC_FORMAT_ENCODE_FAST_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_FAST_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_FAST_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_FAST_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "src/util/fp16_target.h"
#include "src/util/lanes-inl.h"  // U8From2U16
#if HWY_ARCH_X86
#include <xmmintrin.h>  // _mm_getcsr / _mm_setcsr
#endif

// Target-independent constants: defined once (outside the per-target part).
#ifndef MXPACK_SRC_FORMAT_ENCODE_FAST_CONSTANTS_
#define MXPACK_SRC_FORMAT_ENCODE_FAST_CONSTANTS_
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
#endif  // MXPACK_SRC_FORMAT_ENCODE_FAST_CONSTANTS_

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

#undef MXPACK_HAVE_FP16_HALF_ENCODE  // per target: this header is re-included
#if MXPACK_FP16_INTRIN && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && \
    !defined(HWY_DISABLE_F16C)  // the f32 path uses F16cEncodeF32's truncation
#define MXPACK_HAVE_FP16_HALF_ENCODE 1
// bf16 or f16 -> narrow codes, rn satfinite, with AVX512-FP16 arithmetic
// (32 u16 lanes; only on CPUs with AVX512-FP16, internal::CpuHasAvx512Fp16):
//
//   Fp16EncodeHalf<kTo, kRelu, kBF16>::EncodeRn(bits)   (kSupported formats)
//
// bit-identical to scalar::Convert(kBF16 or kF16, kTo, bits, rn satfinite).
// Method, for a = |x| clamped to max finite (satfinite; Inf too, NaN is
// patched at the end):
//  * h, the f16 of a: a itself for f16 sources; for bf16, (a -sat 0x3800)
//    << 3 is the f16 of a for a >= 2^-14 (rebias 127 -> 15; bf16's 7
//    mantissa bits fit), and smaller a give an f16 below 2^-14.
//  * c = max(2^(e + 10 - man), 2^(emin - man + 10)) with e = exponent of h:
//    h + c lies in c's binade, whose f16 ulp is the code's ulp at a (normal:
//    2^(e - man); subnormal: 2^(emin - man)), so one RNE f16 add rounds a
//    to the code grid, normals and subnormals alike: sum = c + k * ulp(c).
//  * The code is k + ((E_c - E_min) << man), E_c the exponent field of c
//    and E_min that of 2^(emin - man + 10) (normal: k = 2^man + mantissa,
//    or 2^(man+1) on a carry into the next binade; subnormal: c is that
//    constant and k is the code). k <= 2^(man+1) < 256, so sum's low byte
//    is k and its high byte E_c << 2: one pmaddubsw forms code + E_min <<
//    man, and the bias is dropped by a subtract or, where it only has bits
//    at or above the sign bit (e4m3, e2m1), by the sign-merging select.
// kSupported: codes of at most 8 bits with man <= 3, bias <= 15 and half the
// smallest subnormal >= 2^-14 (bias + man <= 14), so every a < 2^-14 (and
// any f16 image of one) encodes to 0: e2m1, e2m3, e3m2, e4m3, ue4m3; not
// e5m2. The add uses explicit RNE (_MM_FROUND_TO_NEAREST_INT) and f16
// arithmetic ignores FTZ/DAZ, so MXCSR does not matter. bf16 -> e4m3: 13
// vector operations per 32 elements with EncodeRn plus 1 to narrow
// (FastEncodeBF16: 20), 12 in all with Encode64; f16: 2 fewer.
template <Format kTo, bool kRelu, bool kBF16>
struct Fp16EncodeHalf {
  using F32 = FastEncodeF32<kTo, true, kRelu>;  // policy legality
  static constexpr internal::FastFormat kT = F32::kT;
  static constexpr bool kSupported = kT.bits <= 8 && kT.man_bits <= 3 &&
                                     kT.bias + kT.man_bits <= 14 && kTo != Format::kUE8M0;
  // Source bits of max finite (exponent field max_code >> man, mantissa the
  // rest) and of Inf (NaN lies above it).
  static constexpr int kSrcMan = kBF16 ? 7 : 10;
  static constexpr uint16_t kMaxBits = static_cast<uint16_t>(
      (((kT.max_code >> kT.man_bits) - kT.bias + (kBF16 ? 127 : 15)) << kSrcMan) |
      ((kT.max_code & ((1u << kT.man_bits) - 1)) << (kSrcMan - kT.man_bits)));
  static constexpr uint16_t kInfBits = kBF16 ? 0x7F80 : 0x7C00;
  static constexpr uint16_t kUlpShift = static_cast<uint16_t>((10 - kT.man_bits) << 10);
  // bf16 -> f16 rebias (127 - 15) << 7, subtracted with saturation.
  static constexpr uint16_t kRebias = 112 << 7;
  static constexpr uint16_t kSubMagic =
      static_cast<uint16_t>((26 - kT.bias - kT.man_bits) << 10);  // 2^(emin-man+10)
  // E_min << man, E_min the exponent field of kSubMagic.
  static constexpr uint16_t kCodeBias =
      static_cast<uint16_t>((26 - kT.bias - kT.man_bits) << kT.man_bits);
  // The high byte of c for each f16 exponent field E < 64 (only E <= 30
  // occurs): max(E + 10 - man, E_min) << 2, capped at 30 << 2.
  struct ExpTable {
    alignas(64) uint8_t v[64];
  };
  static constexpr ExpTable MakeExpTable() {
    ExpTable t{};
    for (int e = 0; e < 64; ++e) {
      int f = e + (kUlpShift >> 10);
      if (f < (kSubMagic >> 10)) f = kSubMagic >> 10;
      if (f > 30) f = 30;
      t.v[e] = static_cast<uint8_t>(f << 2);
    }
    return t;
  }
  static constexpr ExpTable kExpTableData = MakeExpTable();
  static constexpr const uint8_t* kExpTable = kExpTableData.v;
  // pmaddubsw weights (low byte 1, high byte 2^(man-2)), for man >= 2.
  static constexpr uint16_t kByteWeights =
      static_cast<uint16_t>(((1u << (kT.man_bits >= 2 ? kT.man_bits - 2 : 0)) << 8) | 1u);

  // How Plus treats NaN lanes: kOut reports them in *is_nan; kForm gives
  // them 0x7F (the pmaddubsw's merge mask; man >= 2 only); kFree: the
  // caller has none, or overrides them (their plus is then arbitrary).
  enum class Nan { kOut, kForm, kFree };

  // plus = code + kCodeBias in each u16 lane for |x| (the sign is left to
  // the caller). max_bits / rebias: the source bits of max finite and the
  // bf16 -> f16 rebias 112 << 7; MX passes the rebias of a scaled block
  // instead (Encode64MxAbs).
  template <Nan kNan>
  static MXPACK_FP16_INLINE __m512i Plus(__m512i x, __mmask32* is_nan = nullptr) {
    return Plus<kNan>(x, _mm512_set1_epi16(static_cast<short>(kMaxBits)),
                      _mm512_set1_epi16(static_cast<short>(kRebias)), is_nan);
  }
  template <Nan kNan>
  static MXPACK_FP16_INLINE __m512i Plus(__m512i x, __m512i max_bits, __m512i rebias,
                                         __mmask32* is_nan = nullptr) {
    static_assert(kSupported, "Fp16EncodeHalf: unsupported destination");
    const auto u16 = [](uint16_t v) { return _mm512_set1_epi16(static_cast<short>(v)); };
    const __m512i a = _mm512_and_si512(x, u16(0x7FFF));
    __mmask32 not_nan = 0;
    if constexpr (kNan == Nan::kForm) {
      not_nan = _mm512_cmple_epi16_mask(a, u16(kInfBits));
    } else if constexpr (kNan == Nan::kOut) {
      *is_nan = _mm512_cmpgt_epi16_mask(a, u16(kInfBits));
    } else {
      (void)is_nan;
    }
    return PlusOfAbs<kNan>(a, max_bits, rebias, not_nan);
  }
  // Plus from a = |x| (x & 0x7FFF); not_nan: kForm's mask of non-NaN lanes.
  // !kClamp: a is not clamped to max_bits (Encode64MxAbs). kTwice (bf16,
  // !kClamp): a and rebias are given doubled, a = x << 1 (which drops the
  // sign: no mask) and rebias << 1 (below 2^16 for every MX rebias), so that
  // the saturating subtract yields twice the rebiased bf16, which is the
  // exponent table's index as it stands (one shift fewer).
  template <Nan kNan, bool kClamp = true, bool kTwice = false>
  static MXPACK_FP16_INLINE __m512i PlusOfAbs(__m512i a, __m512i max_bits, __m512i rebias,
                                              __mmask32 not_nan = 0) {
    static_assert(!kTwice || (kBF16 && !kClamp), "kTwice: MX bf16 blocks only");
    constexpr int kRn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const auto u16 = [](uint16_t v) { return _mm512_set1_epi16(static_cast<short>(v)); };
    if constexpr (kNan != Nan::kForm) (void)not_nan;
    __m512i h = kClamp ? _mm512_min_epi16(a, max_bits) : a;
    if constexpr (!kBF16) (void)rebias;
    __m512i c;
#if HWY_TARGET == HWY_AVX3_DL
    // c's high byte from a 64-entry byte table (vpermb) indexed by the
    // exponent field of h in each high byte (bf16: the field of the rebiased
    // bf16 sits at bits 7..14, so one shift left by 1; f16: shift right by
    // 2); low bytes zeroed by the mask. 2 operations instead of 3.
    const __m512i table = _mm512_loadu_si512(kExpTable);
    constexpr __mmask64 kHighBytes = 0xAAAAAAAAAAAAAAAAull;
    if constexpr (kTwice) {
      const __m512i t2 = _mm512_subs_epu16(h, rebias);
      h = _mm512_slli_epi16(t2, 2);
      c = _mm512_maskz_permutexvar_epi8(kHighBytes, t2, table);
    } else if constexpr (kBF16) {
      const __m512i t = _mm512_subs_epu16(h, rebias);
      h = _mm512_slli_epi16(t, 3);
      c = _mm512_maskz_permutexvar_epi8(kHighBytes, _mm512_slli_epi16(t, 1), table);
    } else {
      c = _mm512_maskz_permutexvar_epi8(kHighBytes, _mm512_srli_epi16(h, 2), table);
    }
#else
    if constexpr (kTwice) {
      h = _mm512_slli_epi16(_mm512_subs_epu16(h, rebias), 2);
    } else if constexpr (kBF16) {
      h = _mm512_slli_epi16(_mm512_subs_epu16(h, rebias), 3);
    }
    c = _mm512_max_epi16(_mm512_add_epi16(_mm512_and_si512(h, u16(0x7C00)), u16(kUlpShift)),
                         u16(kSubMagic));
#endif
    const __m512h ch = _mm512_castsi512_ph(c);
    const __m512h sum = _mm512_add_round_ph(_mm512_castsi512_ph(h), ch, kRn);
    // plus = code + kCodeBias = k + (E_c << man) from sum's bytes (lo = k,
    // hi = E_c << 2): pmaddubsw by (1, 2^(man-2)); e2m1 by (2, 1), halved.
    const __m512i sum_bits = _mm512_castph_si512(sum);
    if constexpr (kNan == Nan::kForm) {
      static_assert(kT.man_bits >= 2, "Fp16EncodeHalf::Plus: NaN form needs man >= 2");
      return _mm512_mask_maddubs_epi16(u16(0x7F), not_nan, sum_bits, u16(kByteWeights));
    } else if constexpr (kT.man_bits >= 2) {
      return _mm512_maddubs_epi16(sum_bits, u16(kByteWeights));
    } else {
      return _mm512_srli_epi16(_mm512_maddubs_epi16(sum_bits, u16(0x0102)), 1);
    }
  }

  // Encode64 applies: 8-bit signed codes whose kCodeBias is the sign bit
  // (e4m3), without relu.
  static constexpr bool kPackedSign =
      kT.bits == 8 && kT.has_sign && !kRelu && kCodeBias == 0x80;

  // The 64 codes of x0, x1 (32 source lanes each), in order, as bytes
  // (kPackedSign only). Per vector the masked pmaddubsw leaves code | 0x80
  // (non-NaN lanes) or 0x7F (NaN lanes, mask off) in the low byte, the sign
  // still apart; then, per 64 elements:
  //   mag  = packuswb(plus0, plus1)   (words <= 0xFE: exact)
  //   sign = packsswb(x0, x1)         (signed saturation keeps each source's
  //                                    sign in bit 7)
  //   code = mag & (sign | ~0x80)     (ternary logic 0xD0 = A & (B | !C),
  //                                    C = 0x80: bit 7 = mag's bit 7 (1, or
  //                                    0 for NaN) & the sign; bits 0..6 mag)
  // and one u64 permute undoes the packs' per-128-bit interleave. 12
  // operations per 32 elements against EncodeRn's 13 plus the pack and
  // permute.
  static MXPACK_FP16_INLINE __m512i Encode64(__m512i x0, __m512i x1) {
    return SignedCodes64(Plus<Nan::kForm>(x0), Plus<Nan::kForm>(x1), x0, x1);
  }

  // MX blocks (bf16 sources): the 64 codes of x0 * 2^-X0 and x1 * 2^-X1,
  // given per vector twice the rebias, (112 + X) << 8 (>= 0; X <= 127, so
  // below 2^16), in every u16 lane. The magnitudes enter doubled, x << 1
  // (PlusOfAbs's kTwice: no mask, one shift fewer than |x| and the
  // rebias (112 + X) << 7). Scaling by 2^-X is then part of the rebias:
  // |x| * 2^-X is exact in f16 wherever it is at least 2^-14, and smaller
  // values (bf16 subnormals included) encode to 0 either way, as in
  // EncodeRn. For finite x with every |x| * 2^-X below 2^(emax + 1) (MX
  // blocks without Inf; NaN blocks are overridden by the caller), no clamp
  // is needed before rounding: such a value lies in max's f16 binade (c
  // from the table as for max) and rounds at most to 2^(emax + 1), plus =
  // 0x100, which the u8 pack saturates to 0xFF; one byte min to max's plus
  // (0xFE) per 64 elements then saturates, as clamping first would (every
  // value past max rounds to at least max).
  static MXPACK_FP16_INLINE __m512i Encode64MxAbs(__m512i x0, __m512i twice_rebias0, __m512i x1,
                                                  __m512i twice_rebias1) {
    static_assert(kBF16, "Fp16EncodeHalf::Encode64MxAbs: bf16 sources");
    const __m512i unused = _mm512_setzero_si512();
    return SignedCodes64<true>(
        PlusOfAbs<Nan::kFree, false, true>(_mm512_slli_epi16(x0, 1), unused, twice_rebias0),
        PlusOfAbs<Nan::kFree, false, true>(_mm512_slli_epi16(x1, 1), unused, twice_rebias1), x0,
        x1);
  }

 private:
  // kClampBytes: the plus bytes saturate to max's (Encode64MxAbs).
  template <bool kClampBytes = false>
  static MXPACK_FP16_INLINE __m512i SignedCodes64(__m512i plus0, __m512i plus1, __m512i x0,
                                                  __m512i x1) {
    static_assert(kPackedSign, "Fp16EncodeHalf::Encode64: e4m3 only");
    __m512i mag = _mm512_packus_epi16(plus0, plus1);
    if constexpr (kClampBytes) {
      mag = _mm512_min_epu8(mag, _mm512_set1_epi8(static_cast<char>(kT.max_code + kCodeBias)));
    }
    const __m512i sign = _mm512_packs_epi16(x0, x1);
    const __m512i code =
        _mm512_ternarylogic_epi32(mag, sign, _mm512_set1_epi8(static_cast<char>(0x80)), 0xD0);
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), code);
  }

 public:
  static MXPACK_FP16_INLINE __m512i EncodeRn(__m512i x) {
    static_assert(kSupported, "Fp16EncodeHalf: unsupported destination");
    const auto u16 = [](uint16_t v) { return _mm512_set1_epi16(static_cast<short>(v)); };
    __mmask32 is_nan;
    const __m512i plus = Plus<Nan::kOut>(x, &is_nan);
    constexpr uint32_t kSignBit = 1u << (kT.bits - 1);
    if constexpr (kT.has_sign && !kRelu && (kCodeBias & (kSignBit - 1)) == 0) {
      // kCodeBias only has bits at or above the sign bit, so plus = code |
      // kCodeBias and one ternary-logic select, C ? B : A with A = plus,
      // B = x >> (16 - bits) (the sign at the sign bit, zeros above) and C =
      // kCodeBias | kSignBit, both drops the bias and merges the sign
      // (e4m3: bias 0x80; e2m1: bias 0x30).
      const __m512i merged = _mm512_ternarylogic_epi32(
          plus, _mm512_srli_epi16(x, 16 - kT.bits),
          u16(static_cast<uint16_t>(kCodeBias | kSignBit)), 0xD8);
      return _mm512_mask_mov_epi16(merged, is_nan, u16(static_cast<uint16_t>(kT.nan_code)));
    }
    const hn::Full512<uint16_t> d16;
    const hn::Vec512<uint16_t> code{_mm512_sub_epi16(plus, u16(kCodeBias))};
    return SignReluNanU16<kTo, kRelu>(d16, code, hn::Vec512<uint16_t>{x},
                                      hn::Mask512<uint16_t>{is_nan})
        .raw;
  }
};
#endif  // MXPACK_HAVE_FP16_HALF_ENCODE

#undef MXPACK_HAVE_RANGE_ENCODE  // per target: this header is re-included
#if HWY_TARGET == HWY_AVX3_DL
#define MXPACK_HAVE_RANGE_ENCODE 1
// f32 -> signed narrow codes, rn satfinite, 64 elements at a time in f32
// arithmetic with AVX-512 DQ (vrangeps) and VBMI (vpermt2b); AVX3_DL only:
//
//   RangeEncodeF32<kTo>::Encode64(y0, y1, y2, y3) -> __m512i
//
// kSupported: e2m1, e2m3, e3m2, e4m3, e5m2 (relu and the unsigned formats
// keep the other encoders). Returns the 64 codes of the f32 bits y0..y3,
// in order, as u8 lanes, bit-identical to scalar::Convert(kF32, kTo, rn
// satfinite) for every input. Method, per element:
//  * a = y clamped to [-max, max] (max: the largest finite code's value):
//    one vrangeps (imm 0x02: the smaller magnitude, with y's sign).
//    Satfinite is then automatic: rounding never passes max. (vrangeps
//    returns the other operand for a quiet NaN and a quiet NaN for a
//    signaling one; NaN lanes are replaced below either way.)
//  * c = +-max(2^(e + 23 - man), 2^(emin - man + 23)) * (1 + j * 2^-23)
//    with a's sign, e the exponent of a: a's sign and exponent field (and),
//    plus the exponent offset (integer add), then a vrangeps (imm 0x03: the
//    larger magnitude, with the first operand's sign). Both constants carry
//    the mantissa j, which keeps their order. Without j this is
//    Fp16EncodeHalf's constant in f32: c's ulp is the code's ulp at a
//    (normal: 2^(e - man); subnormal: 2^(emin - man)), so one f32 add with
//    explicit round-to-nearest-even (vaddps {rn-sae}; a and c share the
//    sign, so the magnitudes add and round symmetrically) rounds a onto the
//    code grid, normals and subnormals alike: |sum| = |c| + k * ulp(c),
//    k <= 2^(man+1) (the binade cannot change: j + k < 2^23). The code
//    magnitude is k + (E_c - E_min) << man, E_c the exponent field of c and
//    E_min that of 2^(emin - man + 23).
//  * sum's low u16 is j + k and its high u16 is s << 15 | E_c << 7, so one
//    pmaddwd by (256, 2^(man+1)) forms (j + k + E_c << man) << 8 -
//    s << (16 + man) = code << 8 + (t - s << man) << 16, where j (< 2^16,
//    even) makes j + E_min << man = 256 t with t = 256: byte 1 of each u32
//    lane is the code magnitude and byte 2 is -s << man (mod 256), so each
//    of its bits man..7, the code's sign bit among them, is s. NaN lanes
//    (vcmpps ordered, as the pmaddwd's merge mask) get nan_code << 8
//    instead (byte 2: 0, a positive sign).
//  * Two vpermt2b gather bytes 1 and 2 of 32 lanes each, two 128-bit lane
//    shuffles split them into the 64 magnitudes and the 64 sign bytes, and
//    one ternary-logic select merges the sign in.
// 7 operations per 16 elements plus 5 per 64: about 17 per 32 elements
// (F16cEncodeF32: 23, Fp16EncodeHalf's f32 path: 21).
// MXCSR: vaddps uses explicit rounding, and f32 subnormal inputs (flushed
// by DAZ or not) encode to 0 either way (the sum is c exactly), so the
// result does not depend on the caller's environment.
template <Format kTo>
struct RangeEncodeF32 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kTo);
  static constexpr bool kSupported =
      kT.has_sign && kT.bits <= 8 && kT.man_bits >= 1 && kT.man_bits <= 3;
  static constexpr int kMan = kT.man_bits;
  // f32 bits of the largest finite code's value.
  static constexpr uint32_t kMaxBits =
      ((((kT.max_code >> kMan) - kT.bias + 127) << 23) |
       ((kT.max_code & ((1u << kMan) - 1)) << (23 - kMan)));
  static constexpr uint32_t kEMin = 151 - kT.bias - kMan;  // field of 2^(emin - man + 23)
  // j + E_min << man = 2^16 (t = 256): byte 2 of the pmaddwd form is then
  // -s << man (mod 256), s in each of its bits man..7.
  static constexpr uint32_t kJ = (0x10000u - (kEMin << kMan)) & 0xFFFFu;
  static_assert(!kSupported || (((kEMin << kMan) + kJ) & 0xFFFF) == 0, "t = 256");
  static_assert(!kSupported || kJ % 2 == 0, "j even: ties to the even code");
  static constexpr uint32_t kUlpShift = (uint32_t{23} - kMan) << 23;
  static constexpr uint32_t kSubMagic = (kEMin << 23) + kJ;
  static constexpr uint32_t kWeights = ((1u << (kMan + 1)) << 16) | 256u;
  static constexpr uint32_t kNanP = kT.nan_code << 8;  // byte 2: 0 (t = 256), a positive sign
  static_assert(!kSupported || kMan <= kT.bits - 1, "the sign bit lies in bits man..7");

  // vpermt2b indices: byte 1 of the 32 u32 lanes of two vectors, then byte 2.
  static HWY_INLINE __m512i MagSignIndex() {
    struct Table {
      alignas(64) uint8_t v[64];
    };
    static constexpr Table kTable = [] {
      Table t{};
      for (int i = 0; i < 64; ++i) t.v[i] = static_cast<uint8_t>(4 * (i & 31) + 1 + i / 32);
      return t;
    }();
    return _mm512_load_si512(kTable.v);
  }

  // The three per-vector constants of Form: the clamp bits (max), the
  // exponent offset plus mantissa j added to a's sign and exponent
  // (offset), and the subnormal floor (sub). Unscaled() encodes y itself.
  // ScaledConsts(x) encodes y * 2^-x for a block scale 2^x (MX) without the
  // multiply: the clamp is max * 2^x, c moves up x binades with a (so its
  // ulp is the scaled code's ulp in y's units), and j becomes j - x << man
  // (mod 2^16), which keeps j + k + E_c << man, i.e. bytes 1 and 2 of the
  // pmaddwd form, unchanged (a carry of j + k into bit 16 adds 2^(man+1) <
  // 256 and a lo u16 at or above 2^15 subtracts 2^24: neither reaches bytes
  // 1 and 2; j stays even, so ties still go to the even code). Valid for x
  // in [kFoldMinX, kFoldMaxX]: max * 2^x, sub and every c stay normal and
  // finite (a's field + 23 - man <= 254), and every y whose scaled value
  // rounds to a nonzero code (|y| > 2^(x - bias - man)) is an f32 normal,
  // so f32 subnormal y (whose field 0 gives c = sub, the element's
  // subnormal ulp) round to +-0, as they do when DAZ reads them as +-0: the
  // fold does not depend on MXCSR. (Down to x = bias - 128 it would still be
  // exact with DAZ clear: subnormal y then scale into the element's
  // subnormals or its lowest binade, whose ulp is sub's.)
  struct Consts {
    __m512i max, offset, sub;
  };
  static constexpr int kFoldMinX = kT.bias + kMan - 126;
  static constexpr int kFoldMaxX = [] {
    const int max_field = static_cast<int>(kMaxBits >> 23);
    int hi = 231 + kMan - max_field;  // a's field + 23 - man <= 254
    if (254 - static_cast<int>(kEMin) < hi) hi = 254 - static_cast<int>(kEMin);  // sub
    return hi;
  }();
  static_assert(!kSupported || (kFoldMinX < 0 && kFoldMaxX > 0), "x = 0 must fold");
  static HWY_INLINE Consts Unscaled() {
    return {_mm512_set1_epi32(static_cast<int>(kMaxBits)),
            _mm512_set1_epi32(static_cast<int>(kUlpShift + kJ)),
            _mm512_set1_epi32(static_cast<int>(kSubMagic))};
  }
  // The constants of 16 scales 2^x (i32 lanes, x in [kFoldMinX, kFoldMaxX]);
  // x = 0 gives Unscaled().
  static HWY_INLINE Consts ScaledConsts(__m512i x) {
    Consts k;
    k.max = _mm512_add_epi32(_mm512_slli_epi32(x, 23), _mm512_set1_epi32(static_cast<int>(kMaxBits)));
    ScaledOffsetSub(x, k.offset, k.sub);
    return k;
  }
  // offset and sub of ScaledConsts(x) (the max is only needed where y is
  // clamped). j - x << man needs no reduction mod 2^16: over the fold range
  // it stays in [0, 2^16) (static_assert), so offset = (kUlpShift + j) - x
  // << man and sub = x << 23 + (kEMin << 23 + j) - x << man.
  static HWY_INLINE void ScaledOffsetSub(__m512i x, __m512i& offset, __m512i& sub) {
    static_assert(!kSupported || (static_cast<int>(kJ) - (kFoldMaxX << kMan) >= 0 &&
                                  static_cast<int>(kJ) - (kFoldMinX * (1 << kMan)) < 0x10000),
                  "j - x << man within [0, 2^16) over the fold range");
    const __m512i xm = _mm512_slli_epi32(x, kMan);
    offset = _mm512_sub_epi32(_mm512_set1_epi32(static_cast<int>(kUlpShift + kJ)), xm);
    sub = _mm512_sub_epi32(
        _mm512_add_epi32(_mm512_slli_epi32(x, 23), _mm512_set1_epi32(static_cast<int>(kSubMagic))),
        xm);
  }

  // The pmaddwd form of one vector (see above); EncodeB4x16 passes other
  // weights and NaN forms for its even lanes. kNanFree: the caller
  // guarantees that no y is NaN, or overrides the codes of NaN lanes (MX
  // NaN blocks), so the NaN compare and merge are skipped. !kClamp (MX
  // blocks, see Encode64): y is not clamped to max; the caller clamps the
  // magnitude bytes instead.
  template <bool kNanFree = false, bool kClamp = true>
  static HWY_INLINE __m512i Form(__m512i y, const Consts& k,
                                 __m512i weights = _mm512_set1_epi32(kWeights),
                                 __m512i nan_p = _mm512_set1_epi32(kNanP)) {
    constexpr int kRn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512 yf = _mm512_castsi512_ps(y);
    const __m512 a = kClamp ? _mm512_range_ps(yf, _mm512_castsi512_ps(k.max), 0x02) : yf;
    const __m512i e =
        _mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(static_cast<int>(0xFF800000u)));
    const __m512 c = _mm512_range_ps(_mm512_castsi512_ps(_mm512_add_epi32(e, k.offset)),
                                     _mm512_castsi512_ps(k.sub), 0x03);
    const __m512 sum = _mm512_add_round_ps(a, c, kRn);
    if constexpr (kNanFree) {
      (void)nan_p;
      return _mm512_madd_epi16(_mm512_castps_si512(sum), weights);
    }
    const __mmask16 ordered = _mm512_cmp_ps_mask(yf, yf, _CMP_ORD_Q);
    return _mm512_mask_madd_epi16(nan_p, ordered, _mm512_castps_si512(sum), weights);
  }

  // Bytes 1 (mag) and 2 (sgn) of the 64 lanes of four pmaddwd forms, in order.
  static HWY_INLINE void GatherMagSign(__m512i f0, __m512i f1, __m512i f2, __m512i f3,
                                       __m512i& mag, __m512i& sgn) {
    const __m512i idx = MagSignIndex();
    const __m512i r01 = _mm512_permutex2var_epi8(f0, idx, f1);
    const __m512i r23 = _mm512_permutex2var_epi8(f2, idx, f3);
    mag = _mm512_shuffle_i64x2(r01, r23, 0x44);  // low halves
    sgn = _mm512_shuffle_i64x2(r01, r23, 0xEE);  // high halves
  }

  // The magnitude clamp moved after the rounding (kClamp = false): valid
  // for finite y whose every |y| (in the units of its block's scale, i.e.
  // |y| * 2^-x) lies below 2^(emax + 1), as MX elements do (amax * 2^-X <
  // 2^(emax + 1) in every scale mode, floor being the largest). Rounding
  // then yields at most the code 2^(bits - 1) (the next binade's first
  // value), which byte 1 of the pmaddwd form holds without a carry into the
  // sign byte (e2m1's even lanes: code << 4 <= 0x80), so one unsigned byte
  // min of the gathered magnitudes per 64 elements replaces a vrangeps per
  // 16: rn then saturate equals saturate then rn (every value past max
  // rounds to at least max).
  // k0..k3: the constants of y0..y3 (Scaled: y0..y3 in blocks of other
  // scales).
  template <bool kNanFree = false, bool kClamp = true>
  static HWY_INLINE __m512i Encode64(__m512i y0, __m512i y1, __m512i y2, __m512i y3,
                                     const Consts& k0 = Unscaled(), const Consts& k1 = Unscaled(),
                                     const Consts& k2 = Unscaled(), const Consts& k3 = Unscaled()) {
    static_assert(kSupported, "RangeEncodeF32: unsupported destination");
    __m512i mag, sgn;
    GatherMagSign(Form<kNanFree, kClamp>(y0, k0), Form<kNanFree, kClamp>(y1, k1),
                  Form<kNanFree, kClamp>(y2, k2), Form<kNanFree, kClamp>(y3, k3), mag, sgn);
    if constexpr (!kClamp) {
      mag = _mm512_min_epu8(mag, _mm512_set1_epi8(static_cast<char>(kT.max_code)));
    }
    // s is already at the code's sign bit (bits man..7 of sgn); select C ? B : A.
    const __m512i bit = _mm512_set1_epi8(static_cast<char>(1u << (kT.bits - 1)));
    return _mm512_ternarylogic_epi32(mag, sgn, bit, 0xD8);
  }

  // e2m1 only: the 64 codes as four b4x16_p64 groups (per 16 elements: 8
  // bytes, element 2i in the low nibble of byte i, then 8 zero bytes).
  // Even lanes use weights (4096, 2^(man+5)), which put their code in the
  // high nibble of byte 1 and s at bits 5..7 of byte 2; odd lanes keep byte
  // 1 and s at bits 1..7. After the sign merge each u16 of gathered bytes
  // holds bits 4..11 = even code | odd code << 4, which one vpmultishiftqb
  // moves to bytes 0..3 of each u64 and one pshufb packs into the groups: 7
  // operations per 64 elements after the pmaddwd forms, against 9 for
  // Encode64 plus PaddedCodec::Compact4.
  template <bool kNanFree = false, bool kClamp = true>
  static HWY_INLINE __m512i EncodeB4x16(__m512i y0, __m512i y1, __m512i y2, __m512i y3,
                                        const Consts& k0 = Unscaled(),
                                        const Consts& k1 = Unscaled(),
                                        const Consts& k2 = Unscaled(),
                                        const Consts& k3 = Unscaled()) {
    static_assert(kTo == Format::kE2M1, "EncodeB4x16: e2m1 only");
    const __m512i w = _mm512_mask_set1_epi32(_mm512_set1_epi32(kWeights), 0x5555,
                                             static_cast<int>(kWeights << 4));
    const __m512i nan_p = _mm512_mask_set1_epi32(_mm512_set1_epi32(kNanP), 0x5555,
                                                 static_cast<int>(kNanP << 4));
    __m512i mag, sgn;
    GatherMagSign(Form<kNanFree, kClamp>(y0, k0, w, nan_p),
                  Form<kNanFree, kClamp>(y1, k1, w, nan_p),
                  Form<kNanFree, kClamp>(y2, k2, w, nan_p),
                  Form<kNanFree, kClamp>(y3, k3, w, nan_p), mag, sgn);
    if constexpr (!kClamp) {
      // Even bytes hold code << 4 (low nibble 0), odd bytes the code.
      mag = _mm512_min_epu8(mag, _mm512_set1_epi16(static_cast<short>(kT.max_code << 8 |
                                                                      kT.max_code << 4)));
    }
    // s: even bytes bits 5..7 (16 * (-s << man)), odd bytes bits 1..7, so
    // already at bit 7 and bit 3; select C ? B : A.
    const __m512i merged =
        _mm512_ternarylogic_epi32(mag, sgn, _mm512_set1_epi16(0x0880), 0xD8);
    const __m512i nibbles =
        _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x0000000034241404LL), merged);
    constexpr int kZero = static_cast<int>(0x80808080u);  // pshufb: zero bytes 8..15
    const __m512i groups = _mm512_set4_epi32(kZero, kZero, 0x0B0A0908, 0x03020100);
    return _mm512_shuffle_epi8(nibbles, groups);
  }
};
#endif  // HWY_TARGET == HWY_AVX3_DL

#undef MXPACK_HAVE_F16C_ENCODE  // per target: this header is re-included
#if HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define MXPACK_HAVE_F16C_ENCODE 1
// f32 -> narrow codes through the hardware f32 -> f16 conversion, in u16
// lanes (x86 AVX2 / AVX-512; 256/512-bit vectors):
//
//   F16cEncodeF32<kTo, kSatFinite, kRelu>::EncodeToU8x4(du, v0, v1, v2, v3)
//
// returns the 4N codes of four u32 vectors of f32 bits, in order, as one u8
// vector, bit-identical to FastEncodeF32 (scalar::Convert rn). kTo: e2m1,
// e2m3, e3m2, e4m3, e5m2, ue4m3. (Callers that scale, such as MX, multiply
// first: the sticky bit below assumes the bits it sees are the value's.)
//
// Method. With the scale 2^(bias - 15) the f16 exponent field equals the
// code's exponent field, so the code's grid is the f16 grid with the low
// kDrop = 10 - man mantissa bits removed, subnormals included (as in the
// multimem fp8 kernels). The f32 -> f16 step must not round a second time:
// it truncates (vcvtps2ph, round toward zero) after a sticky bit has been
// ORed into f32 mantissa bit P = 14 + man whenever any lower bit is set. P
// lies at or above the f16 lsb and below the code's guard bit for every f16
// normal (lsb = bit 13, guard = bit 22 - man) and for every scaled value of
// at least 2^(-15 - man), half the smallest code subnormal (lsb = bit -1 - e
// for the binade 2^e, guard = bit 8 - man - e). Smaller values round to zero
// either way. So the truncated f16 keeps the bits above the guard, the guard,
// and a nonzero remainder exactly when the f32 had one, which is all that
// round-to-nearest-even on the code grid needs. Then, in u16 lanes, one
// rounding serves normals and subnormals alike:
//   code = (|h| + 2^(kDrop-1) - 1 + lsb) >> kDrop,  lsb = bit kDrop of |h|,
// then the saturation clamp, sign (or relu) and NaN as FastEncodeF32.
// Overflow: the truncation never produces Inf from a finite value and any
// finite f16 above the code's max clamps, so satfinite and nosat agree with
// FastEncodeF32. Run the loops under internal::ScopedFlushDenormals (results
// are the same without it, only slower on tiny inputs) in a non-inlined
// function.
template <Format kTo, bool kSatFinite, bool kRelu = false>
struct F16cEncodeF32 {
  using F32 = FastEncodeF32<kTo, kSatFinite, kRelu>;  // policy legality
  static constexpr internal::FastFormat kT = F32::kT;
  static_assert(kT.bits <= 8 && kT.bias <= 15 && kT.man_bits <= 3 && kTo != Format::kUE8M0,
                "f16 image needs at most 8 bits, bias <= 15, man <= 3");
  static constexpr int kDrop = 10 - kT.man_bits;
  static constexpr int kStickyBit = 14 + kT.man_bits;
  static constexpr float kScale = 1.0f / static_cast<float>(1u << (15 - kT.bias));

  // Two u32 vectors of f32 bits -> 2N f16 bits (u16 lanes, in order) of
  // v * 2^(bias - 15), truncated after the sticky OR. kPrescaled: v already
  // carries the factor 2^(bias - 15) (its producer multiplied by it, and a
  // product below 2^-126 flushed to zero, which encodes as the unscaled
  // product would). kNoSticky: every f32 bit below the sticky bit P is known
  // to be zero (e.g. bf16 sources times powers of two, under FTZ, when P <=
  // 16), so the OR is skipped.
  template <bool kPrescaled, bool kNoSticky, class DU32>
  static HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DU32>> ToScaledF16(
      DU32 du, hn::Vec<DU32> a, hn::Vec<DU32> b) {
    const hn::RebindToFloat<DU32> df;
    const auto mul = hn::Set(df, kScale);
    const hn::Repartition<uint16_t, DU32> d16;
    const auto low = hn::Set(du, (1u << kStickyBit) - 1);
    const auto stick = hn::Set(du, 1u << kStickyBit);
    constexpr int kRz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
#if HWY_TARGET <= HWY_AVX3
    static_assert(hn::MaxLanes(du) == 16, "512-bit vectors");
    const auto one = [&](hn::Vec<DU32> v) {
      hn::Vec<DU32> x = v;
      if constexpr (!kNoSticky) {
        x.raw = _mm512_mask_or_epi32(v.raw, _mm512_test_epi32_mask(v.raw, low.raw), v.raw,
                                     stick.raw);
      }
      const auto f = kPrescaled ? hn::BitCast(df, x) : hn::Mul(hn::BitCast(df, x), mul);
      return _mm512_cvtps_ph(f.raw, kRz);
    };
    return hn::Vec<decltype(d16)>{
        _mm512_inserti64x4(_mm512_castsi256_si512(one(a)), one(b), 1)};
#else
    static_assert(hn::MaxLanes(du) == 8, "256-bit vectors");
    const auto one = [&](hn::Vec<DU32> v) {
      // (v & low) + low carries into bit P exactly when the low bits are nonzero.
      const auto x = kNoSticky ? v : hn::Or(v, hn::And(hn::Add(hn::And(v, low), low), stick));
      const auto f = kPrescaled ? hn::BitCast(df, x) : hn::Mul(hn::BitCast(df, x), mul);
      return _mm256_cvtps_ph(f.raw, kRz);
    };
    return hn::Vec<decltype(d16)>{
        _mm256_inserti128_si256(_mm256_castsi128_si256(one(a)), one(b), 1)};
#endif
  }

  // Scaled f16 bits -> codes (u16 lanes, upper bits zero). kNanFree: the
  // caller overrides the codes of NaN inputs (MX NaN blocks), so NaN lanes
  // may get any code (the canonical-NaN select is skipped).
  template <bool kNanFree = false, class D16>
  static HWY_INLINE hn::Vec<D16> EncodeScaled(D16 d16, hn::Vec<D16> h) {
    const hn::RebindToSigned<D16> di16;
    const auto a = hn::And(h, hn::Set(d16, uint16_t{0x7FFF}));
    const auto lsb = hn::And(hn::ShiftRight<kDrop>(a), hn::Set(d16, uint16_t{1}));
    auto code = hn::ShiftRight<kDrop>(
        hn::Add(hn::Add(a, hn::Set(d16, static_cast<uint16_t>((1u << (kDrop - 1)) - 1))), lsb));
    code = hn::Min(code, hn::Set(d16, static_cast<uint16_t>(F32::kClamp)));
    if constexpr (kNanFree) {
      static_assert(!kRelu, "kNanFree: signed codes only");
      return hn::OrAnd(code, hn::ShiftRight<16 - kT.bits>(h),
                       hn::Set(d16, static_cast<uint16_t>(1u << (kT.bits - 1))));
    }
    const auto is_nan =
        hn::RebindMask(d16, hn::Gt(hn::BitCast(di16, a), hn::Set(di16, int16_t{0x7C00})));
    return SignReluNanU16<kTo, kRelu>(d16, code, h, is_nan);
  }

  // Four u32 vectors of f32 bits -> their 4N codes, in order, as u8 lanes
  // (kPrescaled, kNoSticky: as ToScaledF16; kNanFree: as EncodeScaled).
  template <bool kPrescaled = false, bool kNoSticky = false, bool kNanFree = false, class DU32>
  static HWY_INLINE hn::Vec<hn::Repartition<uint8_t, DU32>> EncodeToU8x4(
      DU32 du, hn::Vec<DU32> v0, hn::Vec<DU32> v1, hn::Vec<DU32> v2, hn::Vec<DU32> v3) {
    const hn::Repartition<uint16_t, DU32> d16;
    const auto c0 =
        EncodeScaled<kNanFree>(d16, ToScaledF16<kPrescaled, kNoSticky>(du, v0, v1));
    const auto c1 =
        EncodeScaled<kNanFree>(d16, ToScaledF16<kPrescaled, kNoSticky>(du, v2, v3));
    return U8From2U16(d16, c0, c1);
  }
};
#endif  // F16C encode

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_FAST_INL_H_
