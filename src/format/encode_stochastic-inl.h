// f32 -> e4m3 under rs (stochastic rounding) in f32 arithmetic: two FMAs
// with round-toward-zero add the random word at its place, vcvtps2ph
// truncates onto the code grid (FmaStochasticEncodeF32, AVX3_DL). Part of
// the fast encoders of src/format/encode_fast-inl.h.

#if defined(MXPACK_SRC_FORMAT_ENCODE_STOCHASTIC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_STOCHASTIC_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_STOCHASTIC_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_STOCHASTIC_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "mxpack/scalar.h"
#include "src/format/encode_rn-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

#undef MXPACK_HAVE_FMA_STOCHASTIC_ENCODE  // per target: this header is re-included
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX3_DL
#define MXPACK_HAVE_FMA_STOCHASTIC_ENCODE 1
// f32 bits x and random words r -> kTo codes under rs, 64 elements per
// call, bit-identical to scalar::Convert(kF32, kTo, {kRS, saturation,
// relu}, r) (docs/semantics.md section 1):
//
//   FmaStochasticEncodeF32<kTo, kSatFinite, kRelu>::Encode64(tables, x0..x3, r0..r3)
//       -> __m512i (64 u8 codes, in order)
//
// kSupported: e4m3. Method, per element (E: x's f32 exponent field, LSB =
// 2^(E - 150) its last significand bit for E >= 1):
//  * rs rounds |x| up when rem + R carries out of the s discarded bits (R =
//    r mod 2^s, s <= 32), i.e. the code is the truncation onto the code
//    grid of |x| + R LSB. With s > 32 (E < kELo, s = 32 at kELo) the rule
//    reads (sig >> (s - 32)) + r >= 2^32, which is |x| + r 2^-41 >= 2^-9
//    (both sides are multiples of 2^(E - 150 + s - 32) = 2^-41), again a
//    truncation, of |x| + r 2^(kELo - 150). So with E' = max(E, kELo):
//      code = trunc(|x| + (r & m) w),  w = 2^(E' - 150),
//      m = 2^s - 1 (s = 20 for normal codes, 141 - E' below), ~0 at kELo,
//    m from a 32-entry table indexed by E' mod 32 (E' in [kELo, kELo + 31];
//    larger E alias, see below). E' and w (with x's sign) come from
//    x' = vrangeps(x, 2^(kELo - 127)) (the larger magnitude, x's sign):
//    w = (x' & 0xFF800000) - 23 << 23.
//  * R has up to 32 bits, so it is split as R = RH + RL (RL = R & 0xFF):
//    both convert to f32 exactly, and
//      t = fma_rz(RL, w, x),   y = fma_rz(RH, w, t)
//    (magnitudes add, the sign rides along: rz is symmetric). Truncation
//    onto the grid commutes with rz to f32 (grid points are f32 values and
//    rz never crosses one), so trunc(y) = trunc(t + RH w). t may itself
//    have dropped a bit (|x| + RL w needs 25 bits when it reaches the next
//    binade), but trunc(t + RH w) = trunc(|x| + RL w + RH w): a grid point
//    G is passed iff t passes G - RH w, a multiple of 2^8 w that, at or
//    below |x| + RL w < 2^(E' - 126) + 2^8 w, is an f32 value (it needs at
//    most 24 bits, or is the binade's start), which rz cannot cross.
//  * trunc(y) as CvtphEncodeF32 computes it under rz: y * 2^(bias - 15)
//    (exact for every y whose code is not 0; FTZ flushes the others),
//    vcvtps2ph {rz}, code magnitude = the high byte of 2h (f16 Inf 0xF8,
//    NaN above it: vcvtps2ph quiets NaN); one vpermt2b gathers 64 of them.
//    satfinite: an unsigned min with max_code (every y from max up, Inf
//    included, truncates to at least max); nosat: rs overflows like rn, so
//    every magnitude past max_code becomes overflow_code (NaN). Then the
//    sign (a masked add of the sign bit on lanes whose f16 is negative),
//    relu (those lanes zeroed instead) and NaN lanes' canonical code.
//  * E > kELo + 31 (|x| >= 2^14) alias to another m, but every such x is
//    far past max and its y (at least |x|, finite or Inf) saturates or
//    overflows all the same. NaN and Inf stay NaN and Inf through the FMAs.
// MXCSR: run under internal::ScopedFlushDenormals (DAZ on): an f32
// subnormal x only adds below 2^-41 and never decides a carry (it is a
// bit of t below every multiple of 2^-41), and products or sums below
// 2^-118 only give code 0.
// 13 operations per 16 elements plus 12 per 64.
template <Format kTo, bool kSatFinite, bool kRelu>
struct FmaStochasticEncodeF32 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kTo);
  static constexpr bool kSupported =
      kTo == Format::kE4M3 && internal::HasFastEncode(kTo, kSatFinite, kRelu);
  static constexpr int kMan = kT.man_bits;
  static constexpr int kDrop = 10 - kMan;  // f16 mantissa bits below the code's
  static_assert(!kSupported || kDrop == 7, "the code is the high byte of 2h");
  // f32 field whose s is 32: 2^(kELo - 150 + 32) is the subnormal ulp
  // 2^(1 - bias - man).
  static constexpr int kELo = 1 - static_cast<int>(kT.bias) - kMan + 118;
  // The smallest f32 field of a normal code (s = 23 - man from there up).
  static constexpr int kENormal = 1 - static_cast<int>(kT.bias) + 127;
  static constexpr float kScale = 1.0f / static_cast<float>(1u << (15 - kT.bias));
  static constexpr uint32_t kInfCode = 0x7C00u >> kDrop;
  // Every |x| whose field aliases (E > kELo + 31) is past the overflow
  // threshold: 2^(kELo + 32 - 127) > 2 max.
  static_assert(!kSupported || kELo + 32 - 127 > 9, "aliased fields must saturate");

  struct Table {
    alignas(64) uint32_t m[32];
    alignas(64) uint8_t gather[64];
  };
  static constexpr Table kTable = [] {
    Table t{};
    for (int e = kELo; e < kELo + 32; ++e) {
      const int s = e >= kENormal ? 23 - kMan : 150 + 1 - static_cast<int>(kT.bias) - kMan - e;
      t.m[e & 31] = s >= 32 ? 0xFFFFFFFFu : (1u << s) - 1u;
    }
    for (int i = 0; i < 64; ++i) t.gather[i] = static_cast<uint8_t>(2 * i + 1);
    return t;
  }();

  struct Tables {
    __m512i m0, m1, gather;
  };
  static HWY_INLINE Tables LoadTables() {
    return {_mm512_load_si512(kTable.m), _mm512_load_si512(kTable.m + 16),
            _mm512_load_si512(kTable.gather)};
  }

  // 16 lanes -> their scaled f16 bits, truncated (see above).
  static HWY_INLINE __m256i Half(const Tables& t, __m512i x, __m512i r) {
    const __m512 xf = _mm512_castsi512_ps(x);
    const __m512i xc = _mm512_castps_si512(
        _mm512_range_ps(xf, _mm512_castsi512_ps(_mm512_set1_epi32(kELo << 23)), 0x03));
    // vpermi2d reads bits 4:0 of the index: E' mod 32 (the sign sits at bit 8).
    const __m512i m = _mm512_permutex2var_epi32(t.m0, _mm512_srli_epi32(xc, 23), t.m1);
    const __m512 w = _mm512_castsi512_ps(
        _mm512_sub_epi32(_mm512_and_si512(xc, _mm512_set1_epi32(static_cast<int>(0xFF800000u))),
                         _mm512_set1_epi32(23 << 23)));
    // RH = r & m & ~0xFF, RL = r & 0xFF (m keeps at least the low 20 bits).
    const __m512i rh = _mm512_ternarylogic_epi32(r, m, _mm512_set1_epi32(~0xFF), 0x80);
    const __m512i rl = _mm512_and_si512(r, _mm512_set1_epi32(0xFF));
    constexpr int kRz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
    const __m512 lo = _mm512_fmadd_round_ps(_mm512_cvtepu32_ps(rl), w, xf, kRz);
    const __m512 y = _mm512_fmadd_round_ps(_mm512_cvtepu32_ps(rh), w, lo, kRz);
    return _mm512_cvt_roundps_ph(_mm512_mul_ps(y, _mm512_set1_ps(kScale)), kRz);
  }

  static HWY_INLINE __m512i Encode64(const Tables& t, __m512i x0, __m512i x1, __m512i x2,
                                     __m512i x3, __m512i r0, __m512i r1, __m512i r2, __m512i r3) {
    static_assert(kSupported, "FmaStochasticEncodeF32: unsupported destination");
    const __m512i h01 = _mm512_inserti64x4(_mm512_castsi256_si512(Half(t, x0, r0)),
                                           Half(t, x1, r1), 1);
    const __m512i h23 = _mm512_inserti64x4(_mm512_castsi256_si512(Half(t, x2, r2)),
                                           Half(t, x3, r3), 1);
    const __mmask64 neg = _mm512_kunpackd(_mm512_movepi16_mask(h23), _mm512_movepi16_mask(h01));
    __m512i code = _mm512_permutex2var_epi8(_mm512_slli_epi16(h01, 1), t.gather,
                                            _mm512_slli_epi16(h23, 1));
    const __mmask64 nan =
        _mm512_cmpgt_epu8_mask(code, _mm512_set1_epi8(static_cast<char>(kInfCode)));
    const __m512i max_code = _mm512_set1_epi8(static_cast<char>(kT.max_code));
    if constexpr (kSatFinite) {
      code = _mm512_min_epu8(code, max_code);
    } else {
      code = _mm512_mask_mov_epi8(code, _mm512_cmpgt_epu8_mask(code, max_code),
                                  _mm512_set1_epi8(static_cast<char>(kT.overflow_code)));
    }
    if constexpr (kRelu) {
      code = _mm512_maskz_mov_epi8(_knot_mask64(neg), code);
    } else {
      code = _mm512_mask_add_epi8(code, neg, code,
                                  _mm512_set1_epi8(static_cast<char>(1u << (kT.bits - 1))));
    }
    return _mm512_mask_mov_epi8(code, nan, _mm512_set1_epi8(static_cast<char>(kT.nan_code)));
  }
};
#endif  // AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_STOCHASTIC_INL_H_
