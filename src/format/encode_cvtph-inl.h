// f32 -> f16 and narrow codes through vcvtps2ph with the rounding mode in
// the instruction (CvtphEncodeF32, AVX3 / AVX3_DL). Part of the fast
// encoders of src/format/encode_fast-inl.h.

#if defined(MXPACK_SRC_FORMAT_ENCODE_CVTPH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_CVTPH_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_CVTPH_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_CVTPH_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "mxpack/scalar.h"
#include "src/format/encode_rn-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef MXPACK_HAVE_CVTPH_ENCODE  // per target: this header is re-included
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define MXPACK_HAVE_CVTPH_ENCODE 1
// f32 bits -> kTo codes under kMode, bit-identical to scalar::Convert(kF32,
// kTo, {kMode, saturation, relu}) (docs/semantics.md section 1):
//
//   CvtphEncodeF32<kTo, kMode, kSatFinite, kRelu>::Encode32(x0, x1) -> __m512i
//       (f16: 32 codes as u16 lanes, in order)
//   CvtphEncodeF32<...>::Encode64(x0, x1, x2, x3) -> __m512i (64 u8 codes;
//       narrow kTo, AVX3_DL)
//
// kSupported: f16 under rn, rz, rm, rp; e2m1, e2m3, e3m2, e4m3, e5m2 and
// ue4m3 under rz, rm, rp. Method:
//  * f16: satfinite clamps |x| to max finite first (vrangeps imm 0x02: the
//    smaller magnitude with x's sign; max finite is exact, so no mode moves
//    it, and it turns Inf into max finite); relu takes the signed-integer
//    max with 0 (negative values and -0 become +0). vcvtps2ph rounds in
//    kMode (IEEE: rn overflows to Inf past 65520, rz never overflows a
//    finite input, rm / rp only in their direction, as the scalar
//    reference's rules say). NaN lanes (an unordered compare of the input)
//    become 0x7FFF.
//  * narrow: multiply by 2^(bias - 15), exact for |x| >= 2^(16 - bias -
//    127) (the product is an f32 normal), so the f16 exponent field equals
//    the code's; the code grid is then the f16 grid with kDrop = 10 - man
//    mantissa bits dropped, subnormals included (as in F16cEncodeF32).
//    Directed roundings compose over nested grids (rounding toward one
//    side onto the f16 grid and then onto its subset the code grid is one
//    rounding toward that side), so vcvtps2ph in kMode followed by
//      code = (|h| + (away ? 2^kDrop - 1 : 0)) >> kDrop
//    (away: rp on non-negative lanes, rm on negative ones; unsigned formats
//    encode |x|, so rp always and rm never) is the directed code (for
//    kDrop = 7 computed as the high byte of 2 |h| plus twice the add, which
//    needs no mask for the sign). Inf and NaN pass through as f16 Inf and
//    NaN, whose codes stay apart: at most 0x7C00 >> kDrop outside NaN
//    lanes, above it in NaN lanes. On the 64 bytes that one vpermt2b
//    gathers from two vectors of u16 lanes, NaN is one unsigned byte
//    compare, satfinite one unsigned min with max_code (every magnitude
//    past max, Inf included, rounds to at least max), NaN lanes get the
//    canonical code, the sign is a masked add of the sign bit on lanes
//    whose f16 is negative, and relu zeroes those lanes instead.
//  * MXCSR: run under internal::ScopedFlushDenormals, with DAZ off for rm
//    and rp (rn and rz send f32 subnormal inputs to +-0 either way). f32
//    subnormal inputs are then read as they are (vcvtps2ph rounds them, so
//    rp and rm send them to the smallest subnormal), and no f32 subnormal is
//    ever a result, which would take a microcode assist: where the mode
//    rounds away from zero, nonzero |x| below 2^(16 - bias - 127) (far
//    below the code's smallest subnormal, where only zero or not matters)
//    are first lifted to that bound (one vrangeps and one vfixupimmps,
//    which keeps ±0 and NaN), so every product is zero or an f32 normal;
//    rz lets FTZ flush them to the same ±0.
//  * narrow nosat (e4m3, e5m2, ue4m3): a code above max_code becomes the
//    overflow code (NaN or Inf) where the input is Inf or the rounding
//    points away from zero (the f16 is then Inf or at least the code past
//    max), else max_code.
template <Format kTo, Rounding kMode, bool kSatFinite, bool kRelu>
struct CvtphEncodeF32 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kTo);
  static constexpr bool kF16 = kTo == Format::kF16;
  static constexpr bool kNarrow = kT.bits <= 8 && kTo != Format::kUE8M0 && kT.man_bits <= 3 &&
                                  kT.bias <= 15 && kTo != Format::kBF16;
  static constexpr bool kSupported =
      internal::HasFastEncode(kTo, kSatFinite, kRelu) &&
      ((kF16 && kMode != Rounding::kRS) ||
       (kNarrow && (kMode == Rounding::kRZ || kMode == Rounding::kRM || kMode == Rounding::kRP)));
  static constexpr int kMan = kF16 ? 10 : kT.man_bits;
  static constexpr int kDrop = 10 - kMan;
  static constexpr int kBias = kF16 ? 15 : kT.bias;
  // f32 bits of the largest finite value.
  static constexpr uint32_t kMaxBits =
      (((kT.max_code >> kMan) + 127u - static_cast<uint32_t>(kBias)) << 23) |
      ((kT.max_code & ((1u << kMan) - 1u)) << (23 - kMan));
  static constexpr float kScale = 1.0f / static_cast<float>(1u << (15 - kBias));
  // Nonzero |x| below this would give f32 subnormal products.
  static constexpr uint32_t kTinyBits = static_cast<uint32_t>(16 - kBias) << 23;
  static constexpr bool kAwayNonNeg = kMode == Rounding::kRP;
  static constexpr bool kAwayNeg = kT.has_sign && kMode == Rounding::kRM;
  static constexpr int kRound = internal::RoundingImmediate(kMode);

  // 16 lanes -> their (scaled) f16 bits, rounded in kMode. Narrow formats
  // leave Inf, NaN and the saturation to the u16 steps.
  static HWY_INLINE __m256i Half(__m512i x) {
    __m512 v = _mm512_castsi512_ps(x);
    if constexpr (kF16 && kSatFinite) {
      v = _mm512_range_ps(v, _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(kMaxBits))),
                          0x02);
    } else if constexpr (kBias != 15 && (kAwayNonNeg || kAwayNeg)) {
      // Lift: the larger magnitude of x and 2^(16 - bias - 127), with x's
      // sign (unsigned formats: cleared), then ±0 and NaN restored from x
      // (vfixupimmps: zero, QNaN and SNaN inputs take x, other lanes keep
      // the lifted value).
      const __m512 lifted = _mm512_range_ps(
          v, _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(kTinyBits))),
          kT.has_sign ? 0x03 : 0x0B);
      v = _mm512_fixupimm_ps(lifted, v, _mm512_set1_epi32(0x111), 0);
    } else if constexpr (!kT.has_sign) {
      v = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF)));
    }
    if constexpr (kBias != 15) v = _mm512_mul_ps(v, _mm512_set1_ps(kScale));
    return _mm512_cvt_roundps_ph(v, kRound);
  }

  // f16: the 32 codes of x0, x1 as u16 lanes, in order.
  static HWY_INLINE __m512i Encode32(__m512i x0_in, __m512i x1_in) {
    static_assert(kSupported && kF16, "Encode32: f16; narrow destinations use Encode64");
    const auto nan_of = [](__m512i x) {
      return _mm512_cmp_ps_mask(_mm512_castsi512_ps(x), _mm512_castsi512_ps(x), _CMP_UNORD_Q);
    };
    const __mmask32 nan = _mm512_kunpackw(nan_of(x1_in), nan_of(x0_in));
    const __m512i x0 = kRelu ? _mm512_max_epi32(x0_in, _mm512_setzero_si512()) : x0_in;
    const __m512i x1 = kRelu ? _mm512_max_epi32(x1_in, _mm512_setzero_si512()) : x1_in;
    const __m512i code = _mm512_inserti64x4(_mm512_castsi256_si512(Half(x0)), Half(x1), 1);
    return _mm512_mask_mov_epi16(code, nan, _mm512_set1_epi16(0x7FFF));
  }

  // Narrow: the code magnitudes of 32 lanes, rounded in kMode, as one byte
  // of each u16 lane (kHighByte: the high byte, else the low byte), with the
  // masks of negative lanes (neg; rp on signed formats leaves it to the
  // caller, as the complement of away) and of lanes rounded away from zero
  // (away).
  // Outside NaN lanes a magnitude is at most the f16 Inf's code
  // kInfCode = 0x7C00 >> kDrop (every f16 from max finite up rounds to it or
  // below), and in NaN lanes (f16 0x7E00 and up: vcvtps2ph quiets NaN) it is
  // above it, so NaN needs no mask here:
  //   kDrop = 7: (2 |h|) + (away ? 2 (2^7 - 1) : 0), unsigned-saturating,
  //              high byte (the shift drops the sign, the saturation keeps
  //              NaN at 0xFC and up);
  //   else:      (|h| + (away ? 2^kDrop - 1 : 0)) >> kDrop, low byte.
  static constexpr bool kHighByte = kDrop == 7;
  static constexpr uint32_t kInfCode = 0x7C00u >> kDrop;
  static HWY_INLINE __m512i Magnitudes32(__m512i x0, __m512i x1, __mmask32& neg,
                                         __mmask32& away) {
    const __m512i h = _mm512_inserti64x4(_mm512_castsi256_si512(Half(x0)), Half(x1), 1);
    // neg: left to Encode64 for rp on signed formats (the complement of
    // away, one mask op for all 64 lanes).
    neg = 0;
    away = 0;
    if constexpr (kAwayNonNeg && kT.has_sign) {
      away = _mm512_cmpgt_epi16_mask(h, _mm512_set1_epi16(-1));
    } else if constexpr (kAwayNonNeg) {
      away = ~__mmask32{0};
    } else if constexpr (kT.has_sign) {
      neg = _mm512_movepi16_mask(h);
      away = kAwayNeg ? neg : 0;
    }
    if constexpr (kHighByte) {
      const __m512i twice = _mm512_slli_epi16(h, 1);
      if constexpr (kAwayNonNeg || kAwayNeg) {
        return _mm512_mask_adds_epu16(twice, away, twice,
                                      _mm512_set1_epi16(2 * ((1 << kDrop) - 1)));
      } else {
        return twice;
      }
    } else {
      __m512i mag = _mm512_and_si512(h, _mm512_set1_epi16(0x7FFF));
      if constexpr (kAwayNonNeg || kAwayNeg) {
        mag = _mm512_mask_add_epi16(mag, away, mag,
                                    _mm512_set1_epi16(static_cast<int16_t>((1 << kDrop) - 1)));
      }
      return _mm512_srli_epi16(mag, kDrop);
    }
  }

#if HWY_TARGET == HWY_AVX3_DL
  // The 64 codes of x0..x3 as u8 lanes: one vpermt2b gathers the magnitude
  // bytes of two Magnitudes32 results; NaN (a magnitude above kInfCode),
  // saturation (an unsigned byte min; nosat first picks the overflow code
  // where the magnitude passes max_code and the f16 is Inf or the rounding
  // points away from zero), the sign (a masked add of the sign bit), relu (a
  // zero-masked move) and NaN's code (a masked move) then work on the 64
  // bytes.
  static HWY_INLINE __m512i Encode64(__m512i x0, __m512i x1, __m512i x2, __m512i x3) {
    static_assert(kSupported && kNarrow, "Encode64: narrow destinations");
    struct Table {
      alignas(64) uint8_t v[64];
    };
    static constexpr Table kGather = [] {
      Table t{};
      for (int i = 0; i < 64; ++i) t.v[i] = static_cast<uint8_t>(2 * i + (kHighByte ? 1 : 0));
      return t;
    }();
    __mmask32 neg0, away0, neg1, away1;
    const __m512i m0 = Magnitudes32(x0, x1, neg0, away0);
    const __m512i m1 = Magnitudes32(x2, x3, neg1, away1);
    const __mmask64 neg = kAwayNonNeg && kT.has_sign ? _knot_mask64(_mm512_kunpackd(away1, away0))
                                                     : _mm512_kunpackd(neg1, neg0);
    __m512i code = _mm512_permutex2var_epi8(m0, _mm512_load_si512(kGather.v), m1);
    const __mmask64 nan =
        _mm512_cmpgt_epu8_mask(code, _mm512_set1_epi8(static_cast<char>(kInfCode)));
    const __m512i max_code = _mm512_set1_epi8(static_cast<char>(kT.max_code));
    if constexpr (!kSatFinite) {
      // NaN lanes pass too; their code is replaced below.
      const __mmask64 ovf = _mm512_cmpgt_epu8_mask(code, max_code);
      const __mmask64 inf =
          _mm512_cmpeq_epi8_mask(code, _mm512_set1_epi8(static_cast<char>(kInfCode)));
      code = _mm512_mask_mov_epi8(_mm512_min_epu8(code, max_code),
                                  ovf & (inf | _mm512_kunpackd(away1, away0)),
                                  _mm512_set1_epi8(static_cast<char>(kT.overflow_code)));
    } else {
      // Every magnitude past max (Inf included) becomes max.
      code = _mm512_min_epu8(code, max_code);
    }
    if constexpr (kRelu) {
      code = _mm512_maskz_mov_epi8(_knot_mask64(neg), code);
    } else if constexpr (kT.has_sign) {
      code = _mm512_mask_add_epi8(code, neg, code,
                                  _mm512_set1_epi8(static_cast<char>(1u << (kT.bits - 1))));
    }
    return _mm512_mask_mov_epi8(code, nan, _mm512_set1_epi8(static_cast<char>(kT.nan_code)));
  }
#endif
};
#endif  // AVX3 / AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_CVTPH_INL_H_
