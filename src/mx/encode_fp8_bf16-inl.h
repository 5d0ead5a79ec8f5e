// Pass 3 of the MX block quantizer (src/mx/quantize-inl.h) for bf16 into
// MXFP8 (e4m3, e5m2) on AVX3_DL: the codes of 64 bf16 values (two blocks)
// in byte lanes by the bf16 byte tables of Avx512LutEncodeHalf16
// (src/format/encode_half16_lut-inl.h), built for the element format with
// its bias raised by kBase so that one saturating u16 subtract applies the
// block scale.
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_ENCODE_FP8_BF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_ENCODE_FP8_BF16_INL_H_
#undef MXPACK_SRC_MX_ENCODE_FP8_BF16_INL_H_
#else
#define MXPACK_SRC_MX_ENCODE_FP8_BF16_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "src/format/encode_half16_lut-inl.h"  // internal::MakeHalf16Lut
#include "src/format/encode_rn-inl.h"          // FastFormatOf

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

#undef MXPACK_HAVE_MX_FP8_BF16  // per target: this header is re-included
#if HWY_TARGET == HWY_AVX3_DL
#define MXPACK_HAVE_MX_FP8_BF16 1
// encode_rn_satfinite(x * 2^-X) into kElem (e4m3 or e5m2) of bf16 x in a
// block of scale 2^X (docs/semantics.md section 5), for finite x and X >=
// kMinX. Per u16 lane (bf16 h, magnitude a = E << 7 | M), with kBase =
// 126 - bias - man (e4m3 116, e5m2 109; 2^(kBase - 126) is half the
// smallest subnormal of kElem):
//  * w = a -sat K, K = (X + kBase) << 7 >= 0: for
//    E - X - kBase >= 1, w is the bf16 of |y| * 2^-kBase exactly (y = x *
//    2^-X; its exponent field is at most E < 255, as K >= 0). Smaller
//    magnitudes (y < 2^(kBase - 126), below half the
//    smallest subnormal: code 0) give w = M (a bf16 subnormal, which
//    encodes as a value below 2^(kBase - 126) * 2^-kBase too) or 0. bf16
//    subnormal x (E = 0) give 0 for K >= 128; at K = 0 (X = -kBase) w = M
//    is y * 2^-kBase exactly.
//  * The code of y in kElem is the code of y * 2^-kBase in kElem with its
//    bias raised by kBase (every value of that format is 2^-kBase times
//    kElem's), which the bf16 tables of internal::MakeHalf16Lut give for
//    w: two vpermt2b split w into high bytes H (exponent pair) and low
//    bytes L, then base[c] + pair[H] + (L > step1[c]) with c = (L >> 4) << 3
//    | pair[H] & 7, and the sign of h (a third vpermt2b gathers h's high
//    bytes) into bit 7.
// 16 operations per 64 elements, 6 of them vpermt2b / vpermi2b.
template <Format kElem>
struct MxFp8FromBf16 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kElem);
  static_assert(kT.bits == 8 && kT.has_sign && kT.man_bits >= 2, "MXFP8 elements");
  static constexpr int kBase = 126 - kT.bias - kT.man_bits;
  // Scale exponents below this make K negative; those chunks take another
  // path.
  static constexpr int kMinX = -kBase;
  // kElem with its bias raised by kBase.
  static constexpr internal::FastFormat kShifted = {kT.bits,     kT.man_bits,  kT.bias + kBase,
                                                    kT.has_sign, kT.max_code,  kT.nan_code,
                                                    kT.overflow_code};
  // (No NaN reaches the tables: w's exponent field stays below 255.)
  static constexpr internal::Half16Lut kLut =
      internal::MakeHalf16Lut(true, kShifted, true, kT.max_code + 1);
  static_assert(kLut.ok && kLut.steps <= 1, "the bf16 tables need one threshold per class");

  // The u16 K of scale exponent X, in both halves of a u32 (one broadcast
  // per block).
  static HWY_INLINE __m512i K2(__m512i x) {
    const __m512i k = _mm512_slli_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(kBase)), 7);
    return _mm512_or_si512(k, _mm512_slli_epi32(k, 16));
  }

  // The constants, built once per chunk.
  struct Consts {
    __m512i abs, hi_idx, lo_idx, pair0, pair1, base0, base1, step0, step1;
  };
  static HWY_INLINE Consts Make() {
    const auto load = [](const uint8_t* p) { return _mm512_loadu_si512(p); };
    Consts k;
    k.abs = _mm512_set1_epi16(0x7FFF);
    k.hi_idx = load(internal::kHalf16Gather.hi);
    k.lo_idx = load(internal::kHalf16Gather.lo);
    k.pair0 = load(kLut.pair);
    k.pair1 = load(kLut.pair + 64);
    k.base0 = load(kLut.base);
    k.base1 = load(kLut.base + 64);
    k.step0 = load(kLut.step1);
    k.step1 = load(kLut.step1 + 64);
    return k;
  }

  // w of the 32 bf16 values h of one block (k2: K2(X) of its scale), without
  // the sign.
  static HWY_INLINE __m512i Shift(__m512i h, __m512i k2, const Consts& k) {
    return _mm512_subs_epu16(_mm512_and_si512(h, k.abs), k2);
  }

  // The 64 codes of the two blocks at p (scales k2a, k2b), in order.
  static HWY_INLINE __m512i Encode64(const uint16_t* HWY_RESTRICT p, __m512i k2a, __m512i k2b,
                                     const Consts& k) {
    __m512i ha = _mm512_loadu_si512(p);
    __m512i hb = _mm512_loadu_si512(p + 32);
    // One load per block: GCC would otherwise fold the load into each use.
    asm("" : "+v"(ha), "+v"(hb));  // NOLINT(hicpp-no-assembler)
    const __m512i wa = Shift(ha, k2a, k);
    const __m512i wb = Shift(hb, k2b, k);
    // The high bytes of h (the signs in bit 7) and of w (H; no sign: pair[]
    // reads its 7 low bits) and the low bytes of w (L).
    const __m512i hs = _mm512_permutex2var_epi8(ha, k.hi_idx, hb);
    const __m512i hi = _mm512_permutex2var_epi8(wa, k.hi_idx, wb);
    const __m512i lo = _mm512_permutex2var_epi8(wa, k.lo_idx, wb);
    // As Avx512LutEncodeHalf16::Encode64 (bf16).
    const __m512i pair = _mm512_permutex2var_epi8(k.pair0, hi, k.pair1);
    const __m512i cls =
        _mm512_ternarylogic_epi32(pair, _mm512_srli_epi16(lo, 1), _mm512_set1_epi8(7), 0xE4);
    __m512i code = _mm512_add_epi8(_mm512_permutex2var_epi8(k.base0, cls, k.base1), pair);
    code = _mm512_mask_add_epi8(
        code, _mm512_cmpgt_epu8_mask(lo, _mm512_permutex2var_epi8(k.step0, cls, k.step1)), code,
        _mm512_set1_epi8(1));
    // code | (h's high byte & 0x80).
    return _mm512_ternarylogic_epi32(code, hs, _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);
  }
};
#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_ENCODE_FP8_BF16_INL_H_
