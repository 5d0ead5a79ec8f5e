// bf16 / f16 -> narrow codes in 16-bit lanes with AVX-512BW mask operations
// (Avx512EncodeHalf16, AVX3; AVX3_DL encodes by byte tables instead,
// src/format/encode_half16_lut-inl.h): 32 elements per vector, twice the
// lanes of the f32 encoders. Part of the fast encoders of
// src/format/encode_fast-inl.h.

#if defined(MXPACK_SRC_FORMAT_ENCODE_HALF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_HALF16_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_HALF16_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_HALF16_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "src/format/avx512bf16_target.h"
#include "src/format/convert_params.h"
#include "src/format/encode_rn-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef MXPACK_HAVE_HALF16_ENCODE  // per target: this header is re-included
#undef MXPACK_HAVE_F16_TO_BF16_ENCODE
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define MXPACK_HAVE_HALF16_ENCODE 1
// bf16 / f16 (kSrc) -> kTo (at most 8 bits) under rn, 64 elements per call:
//
//   Avx512EncodeHalf16<kSrc, kTo, kSatFinite, kRelu>::Encode64(a, b) -> __m512i
//
// returns the codes of the 32 + 32 source elements of a and b, in order, as
// u8 lanes, bit-identical to scalar::Convert(kSrc, kTo, rn policy) for every
// input (docs/semantics.md section 1). Per element, in a u16 lane, with M
// the source mantissa bits, n the code's and K = M - n the dropped bits:
//  * Normal codes (|x| at or above the code's smallest normal): integer
//    round to nearest even on the magnitude bits |h|,
//      pre = |h| + 2^(K-1) - 1 - (bias_src - bias) << M, plus 1 when bit K
//      (the kept lsb) is set (a masked add),
//    so pre >> K is the code; a carry out of the mantissa rolls into the
//    exponent, and the saturation clamp is one unsigned min on pre
//    (min(pre, clamp << K | 2^K - 1) >> K = min(code, clamp)).
//  * Subnormal codes: FastEncodeF32's magic add in f32 on the u32 pairs of
//    lanes: |h| as f32 bits (bf16: << 16; f16: << 13, the value times
//    2^-112, and the magic constant times 2^-112, so the grid is the same),
//    plus C = 2^(emin - n + 23) rounds |x| onto the subnormal grid once and
//    the code is the low byte of the sum's bits (C's mantissa is zero and
//    the code is at most 2^n). Not needed where the code's exponent field
//    is the source's (f16 -> e5m2): the integer rounding covers subnormals.
//  * The code is formed in the high byte of the lane: the shift of pre to
//    bit 8 merges the subnormal lanes (a masked shift), the sign bit (15 for
//    8-bit codes) then comes from h with one ternary-logic op, and the final gather of
//    the high bytes restores element order.
//  * NaN lanes (|h| above Inf) take nan_code through the clamp: a masked min
//    whose other lanes get pre = nan_code << K (plus a marker at the sign
//    bit, which the sign merge turns into a clear sign); relu zeroes
//    negative lanes that are not NaN.
template <internal::SrcKind kSrc, Format kTo, bool kSatFinite, bool kRelu>
struct Avx512EncodeHalf16 {
  static_assert(kSrc == internal::SrcKind::kBF16 || kSrc == internal::SrcKind::kF16,
                "16-bit sources only");
  using F32 = FastEncodeF32<kTo, kSatFinite, kRelu>;  // policy legality
  static constexpr internal::FastFormat kT = F32::kT;
  static_assert(kT.bits <= 8 && kTo != Format::kUE8M0, "narrow rn destinations only");
  static constexpr bool kBF16 = kSrc == internal::SrcKind::kBF16;
  static constexpr int kM = kBF16 ? 7 : 10;
  static constexpr int kSrcBias = kBF16 ? 127 : 15;
  static constexpr int kK = kM - kT.man_bits;
  static constexpr int kEmin = 1 - kT.bias;
  static constexpr uint16_t kAdd = static_cast<uint16_t>(
      ((1u << (kK - 1)) - 1u) - (static_cast<uint32_t>(kSrcBias - kT.bias) << kM));
  static constexpr uint16_t kPreClamp =
      static_cast<uint16_t>((F32::kClamp << kK) | ((1u << kK) - 1u));
  // pre of a NaN lane: the code byte nan_code, plus (signed, no relu) a
  // marker at the sign bit that the sign merge turns into a clear sign.
  static constexpr uint16_t kNanPre = static_cast<uint16_t>(
      (kT.nan_code | (kT.has_sign && !kRelu ? 1u << (kT.bits - 1) : 0u)) << kK);
  static constexpr uint16_t kMinNormal = static_cast<uint16_t>((kEmin + kSrcBias) << kM);
  static constexpr uint16_t kInf = kBF16 ? 0x7F80 : 0x7C00;
  static constexpr bool kNeedsSubnormalPath = kSrcBias != kT.bias;
  // f16 lanes as f32 bits are the value times 2^-112; so is the constant.
  static constexpr uint32_t kMagicBits = F32::kMagicBits - (kBF16 ? 0u : 112u << 23);

  // Codes of 32 elements in the high byte of each u16 lane (low byte: any).
  static HWY_INLINE __m512i EncodeHi(__m512i h) {
    const __m512i abs = _mm512_and_si512(h, _mm512_set1_epi16(0x7FFF));
    // pre = |h| + kAdd + lsb.
    __m512i pre = _mm512_add_epi16(abs, _mm512_set1_epi16(static_cast<int16_t>(kAdd)));
    pre = _mm512_mask_add_epi16(
        pre, _mm512_test_epi16_mask(abs, _mm512_set1_epi16(static_cast<int16_t>(1u << kK))), pre,
        _mm512_set1_epi16(1));
    // Saturation clamp; NaN lanes (|h| above Inf) take kNanPre instead.
    const __mmask32 not_nan =
        _mm512_cmple_epu16_mask(abs, _mm512_set1_epi16(static_cast<int16_t>(kInf)));
    pre = _mm512_mask_min_epu16(_mm512_set1_epi16(static_cast<int16_t>(kNanPre)), not_nan, pre,
                                _mm512_set1_epi16(static_cast<int16_t>(kPreClamp)));
    __m512i code;
    if constexpr (kNeedsSubnormalPath) {
      // u32 lane j holds elements 2j (low half) and 2j+1 (high half).
      __m512i w_even, w_odd;
      if constexpr (kBF16) {
        w_even = _mm512_slli_epi32(abs, 16);
        w_odd = _mm512_and_si512(abs, _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u)));
      } else {
        w_even = _mm512_srli_epi32(_mm512_slli_epi32(abs, 16), 3);
        w_odd = _mm512_and_si512(_mm512_srli_epi32(abs, 3),
                                 _mm512_set1_epi32(static_cast<int32_t>(0xFFFFE000u)));
      }
      const __m512 magic = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int32_t>(kMagicBits)));
      const __m512i s_even = _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(w_even), magic));
      const __m512i s_odd = _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(w_odd), magic));
      // Byte 0 of each sum -> byte 1 (element 2j) and byte 3 (element 2j+1).
      const __m512i sub = _mm512_ternarylogic_epi32(_mm512_slli_epi32(s_even, 8),
                                                    _mm512_slli_epi32(s_odd, 24),
                                                    _mm512_set1_epi32(0x0000FF00), 0xEC);
      const __mmask32 is_normal =
          _mm512_cmpge_epu16_mask(abs, _mm512_set1_epi16(static_cast<int16_t>(kMinNormal)));
      code = kK <= 8 ? _mm512_mask_slli_epi16(sub, is_normal, pre, 8 - kK)
                     : _mm512_mask_srli_epi16(sub, is_normal, pre, kK - 8);
    } else {
      code = kK <= 8 ? _mm512_slli_epi16(pre, 8 - kK) : _mm512_srli_epi16(pre, kK - 8);
    }
    if constexpr (kRelu) {
      return _mm512_mask_mov_epi16(code, _mm512_movepi16_mask(h) & not_nan,
                                   _mm512_setzero_si512());
    } else if constexpr (kT.has_sign) {
      // At the sign bit (7 + bits): ~code & s, so the NaN marker there
      // clears the sign; elsewhere code.
      const __m512i s = kT.bits == 8 ? h : _mm512_srli_epi16(h, 8 - kT.bits);
      return _mm512_ternarylogic_epi32(
          code, s, _mm512_set1_epi16(static_cast<int16_t>(1u << (7 + kT.bits))), 0x58);
    } else {
      return code;
    }
  }

  static HWY_INLINE __m512i Encode64(__m512i a, __m512i b) {
    // Byte i of the result: the high byte of u16 lane i of (a's codes, b's).
    const hn::Full512<uint8_t> d8;
    return hn::ConcatOdd(d8, hn::Vec512<uint8_t>{EncodeHi(b)}, hn::Vec512<uint8_t>{EncodeHi(a)})
        .raw;
  }
};

// bf16 -> f16 under rn, 32 elements in u16 lanes (docs/semantics.md section 1):
//
//   Avx512BF16ToF16<kSatFinite, kRelu>::Encode32(h) -> __m512i (f16 bits)
//
// f16 normals hold every bf16 mantissa, so from 2^-14 up the f16 is the
// rebiased bf16 shifted left by 3 (exponent 127 -> 15), with every exponent
// from 2^16 up clamped to Inf (65536 and above all round to Inf under rn:
// the f16 overflow threshold is 65520) and satfinite turning Inf into max
// finite. Below 2^-14, Avx512EncodeHalf16's magic add (C = 2^-1, the
// f16 subnormal grid 2^-24) rounds onto the subnormal grid, the code being
// the low 16 bits of the sum's bits.
template <bool kSatFinite, bool kRelu>
struct Avx512BF16ToF16 {
  static HWY_INLINE __m512i Encode32(__m512i h) {
    const __m512i abs = _mm512_and_si512(h, _mm512_set1_epi16(0x7FFF));
    // (E - 112) << 7 | m, saturating at 0 (those lanes take the subnormal path).
    __m512i t = _mm512_subs_epu16(abs, _mm512_set1_epi16(112 << 7));
    t = _mm512_min_epu16(t, _mm512_set1_epi16(0x0F80));  // << 3: 0x7C00 (Inf)
    const __m512 magic = _mm512_castsi512_ps(_mm512_set1_epi32(126 << 23));
    const __m512i s_even = _mm512_castps_si512(
        _mm512_add_ps(_mm512_castsi512_ps(_mm512_slli_epi32(abs, 16)), magic));
    const __m512i s_odd = _mm512_castps_si512(_mm512_add_ps(
        _mm512_castsi512_ps(
            _mm512_and_si512(abs, _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u)))),
        magic));
    // Low 16 bits of each sum: s_even's in the even lanes, s_odd's in the odd.
    const __m512i sub = _mm512_mask_blend_epi16(0xAAAAAAAAu, s_even, _mm512_slli_epi32(s_odd, 16));
    const __mmask32 is_normal = _mm512_cmpge_epu16_mask(abs, _mm512_set1_epi16(113 << 7));
    __m512i code = _mm512_mask_slli_epi16(sub, is_normal, t, 3);
    if constexpr (kSatFinite) code = _mm512_min_epu16(code, _mm512_set1_epi16(0x7BFF));
    if constexpr (kRelu) {
      code = _mm512_mask_mov_epi16(code, _mm512_movepi16_mask(h), _mm512_setzero_si512());
    } else {
      code = _mm512_ternarylogic_epi32(code, h, _mm512_set1_epi16(static_cast<int16_t>(0x8000)),
                                       0xF8);
    }
    return _mm512_mask_mov_epi16(
        code, _mm512_cmpgt_epu16_mask(abs, _mm512_set1_epi16(0x7F80)), _mm512_set1_epi16(0x7FFF));
  }
};

#if MXPACK_BF16_INTRIN
#define MXPACK_HAVE_F16_TO_BF16_ENCODE 1
// f16 -> bf16 under rn, 32 elements in u16 lanes, on CPUs with AVX512-BF16
// (internal::CpuHasAvx512Bf16; docs/semantics.md section 1):
//
//   Avx512F16ToBF16<kSatFinite, kRelu>::Encode32(lo, hi) -> __m512i (bf16 bits)
//
// lo and hi hold 16 f16 each. vcvtph2ps widens exactly (every f16, subnormals
// included, is a normal f32 or zero) and vcvtne2ps2bf16 rounds once to
// nearest even; its input flush touches no f16 image and no f16 rounds to a
// bf16 subnormal. Lane fix-ups on the f16 bits: Inf -> max finite under
// satfinite (0x7F80 - 1 keeps the sign), relu zeroes negative non-NaN lanes,
// NaN -> canonical 0x7FFF.
template <bool kSatFinite, bool kRelu>
struct Avx512F16ToBF16 {
  static MXPACK_BF16_TARGET HWY_INLINE __m512i Encode32(__m256i lo, __m256i hi) {
    const __m512i r = reinterpret_cast<__m512i>(
        _mm512_cvtne2ps_pbh(_mm512_cvtph_ps(hi), _mm512_cvtph_ps(lo)));
    const __m512i h = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    const __m512i abs = _mm512_and_si512(h, _mm512_set1_epi16(0x7FFF));
    const __mmask32 is_nan = _mm512_cmpgt_epu16_mask(abs, _mm512_set1_epi16(0x7C00));
    __m512i code = r;
    if constexpr (kSatFinite) {
      code = _mm512_mask_sub_epi16(code, _mm512_cmpeq_epi16_mask(abs, _mm512_set1_epi16(0x7C00)),
                                   code, _mm512_set1_epi16(1));
    }
    if constexpr (kRelu) {
      code = _mm512_maskz_mov_epi16(~_mm512_movepi16_mask(h) | is_nan, code);
    }
    return _mm512_mask_mov_epi16(code, is_nan, _mm512_set1_epi16(0x7FFF));
  }
};
#endif  // MXPACK_BF16_INTRIN

// f16 -> ue8m0 under rz (floor to a power of two) or rp (ceiling), 32
// elements (docs/semantics.md section 1; the sign is ignored):
//
//   Avx512F16ToUE8M0<kRP, kSatFinite>::Encode32(h) -> __m512i (code in u16 lanes)
//
// vcvtph2ps widens |h| exactly (f16 subnormals become normal f32), so the
// code is the f32 exponent field, bits 30..23 of g = bits + c with c = 0
// (rz) or 0x7FE000 (rp: the fraction of an f16 image is zero or at least
// 2^13, so the add carries into the exponent exactly when it is not zero).
// The high halves w = g >> 16 of both f32 vectors are gathered into u16 lanes
// and the code is w >> 7. Zero gives 0. Inf gives 0xFF; under satfinite w is
// first clamped to 0x7F7F (code 0xFE): rp by a signed min, since NaN lanes
// carried into bit 31 (w >= 0x8000, code >= 0x100, which the saturating
// byte pack of the caller turns into 0xFF); rz by a masked move on the Inf
// lanes (NaN lanes keep w >= 0x7F80, code 0xFF).
template <bool kRP, bool kSatFinite>
struct Avx512F16ToUE8M0 {
  static HWY_INLINE __m512i Encode32(__m512i h) {
    const __m512i abs = _mm512_and_si512(h, _mm512_set1_epi16(0x7FFF));
    const auto g = [](__m256i half) {
      const __m512i f = _mm512_castps_si512(_mm512_cvtph_ps(half));
      return hn::Vec512<uint16_t>{kRP ? _mm512_add_epi32(f, _mm512_set1_epi32(0x7FE000)) : f};
    };
    const hn::Full512<uint16_t> d16;
    __m512i w = hn::ConcatOdd(d16, g(_mm512_extracti64x4_epi64(abs, 1)),
                              g(_mm512_castsi512_si256(abs)))
                    .raw;
    if constexpr (kSatFinite && kRP) {
      w = _mm512_min_epi16(w, _mm512_set1_epi16(0x7F7F));
    } else if constexpr (kSatFinite) {
      w = _mm512_mask_mov_epi16(w, _mm512_cmpeq_epi16_mask(abs, _mm512_set1_epi16(0x7C00)),
                                _mm512_set1_epi16(0x7F7F));
    }
    return _mm512_srli_epi16(w, 7);
  }
};
#endif  // AVX3 / AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_HALF16_INL_H_
