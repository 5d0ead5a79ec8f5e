// Passes 2 and 3 of NVFP4 under Nvfp4Arithmetic::kExact for the block
// quantizer (src/mx/quantize-inl.h): scale codes from the exact quotient and
// elements by comparison with per-scale-code thresholds.
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_NVFP4_EXACT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_NVFP4_EXACT_INL_H_
#undef MXPACK_SRC_MX_NVFP4_EXACT_INL_H_
#else
#define MXPACK_SRC_MX_NVFP4_EXACT_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "src/mx/mx_internal.h"  // kMxChunkBlocks
#include "src/util/lanes-inl.h"  // StoreLanes
#include "src/format/encode_fast-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// NVFP4 under Nvfp4Arithmetic::kExact: the block scale codes rounded once
// from the exact quotient amax / (6 t), and the e2m1 codes by comparison
// with the thresholds of src/mx/nvfp4_thresholds.h.
class Nvfp4ExactOps {
 public:
  using D = hn::CappedTag<float, 16>;
  using DU = hn::RebindToUnsigned<D>;
  using DI = hn::RebindToSigned<D>;
  using VU = hn::Vec<DU>;

#if HWY_ARCH_X86
  // ExactScaleCodesRn with DAZ cleared (a caller's DAZ would read subnormal
  // amax as 0) and FTZ set (see ExactScaleCodesRn).
  static HWY_NOINLINE void ExactScaleCodesRnNoDaz(const uint32_t* HWY_RESTRICT amax, size_t nb,
                                                  float tensor_scale,
                                                  uint8_t* HWY_RESTRICT scale_codes,
                                                  uint32_t* HWY_RESTRICT span) {
    const internal::ScopedFlushDenormals ftz(/*daz=*/false);
    ExactScaleCodesRn(amax, nb, tensor_scale, scale_codes, span);
  }
#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // ExactScaleCodesRn without MXCSR writes on the common path: 6 t and the
  // quotients are rounded by explicit rn ({rn-sae}), so the caller's
  // rounding mode does not enter; a caller's DAZ reads a subnormal amax as
  // 0 and FTZ flushes a subnormal quotient, but both only occur in blocks
  // whose quotient lies below 2^-6 (amax < 2^-126 and 6 t >= 6 * 2^-120),
  // which, like the near-midpoint vectors, go to ExactScaleCodesRnF64 under
  // ScopedFlushDenormals(daz = false) after the loop (so that no call
  // inside the loop clobbers its vector constants). An amax of 0 (q = 0,
  // code 0, exact in any environment) stays on the fast path.
  static HWY_INLINE void ExactScaleCodesRnNoMxcsr(const uint32_t* HWY_RESTRICT amax, size_t nb,
                                                  float tensor_scale,
                                                  uint8_t* HWY_RESTRICT scale_codes,
                                                  uint32_t* HWY_RESTRICT span) {
    if (!(tensor_scale >= 0x1p-120f)) {  // 6 t not a normal f32 (or NaN)
      return ExactScaleCodesRnNoDaz(amax, nb, tensor_scale, scale_codes, span);
    }
    constexpr int kRn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const DU du;
    const __m512 den = _mm512_broadcastss_ps(
        _mm_mul_round_ss(_mm_set_ss(tensor_scale), _mm_set_ss(6.0f), kRn));
    static_assert(internal::kMxChunkBlocks <= 64 * 16, "pending: one bit per vector");
    uint64_t pending = 0;  // vectors for ExactScaleCodesRnF64
    for (size_t b = 0; b < nb; b += 16) {
      const __m512i a = _mm512_loadu_si512(amax + b);
      const __m512i q =
          _mm512_castps_si512(_mm512_div_round_ps(_mm512_castsi512_ps(a), den, kRn));
      // Low 20 bits within 3 of 0x80000: (q - 0x7FFFD) mod 2^20 <= 6.
      const __mmask16 near = _mm512_cmplt_epu32_mask(
          _mm512_and_si512(_mm512_sub_epi32(q, _mm512_set1_epi32(0x7FFFD)),
                           _mm512_set1_epi32(0xFFFFF)),
          _mm512_set1_epi32(7));
      const __mmask16 tiny = _mm512_mask_cmplt_epi32_mask(_mm512_test_epi32_mask(a, a), q,
                                                          _mm512_set1_epi32(121 << 23));
      if (HWY_UNLIKELY((near | tiny) != 0)) {
        pending |= uint64_t{1} << (b / 16);
        continue;
      }
      // Codes <= 0x7F: one truncating narrow (vpmovdb).
      const VU code = FastEncodeF32<Format::kUE4M3, true>::EncodeRn(du, VU{q});
      _mm_storeu_si128(reinterpret_cast<__m128i*>(scale_codes + b), _mm512_cvtepi32_epi8(code.raw));
    }
    if (HWY_UNLIKELY(pending != 0)) {
      ExactScaleCodesRnPending(amax, pending, tensor_scale, scale_codes);
    }
    // The span of the codes (lanes past nb included, as in ExactScaleCodesRn).
    __m128i lo = _mm_set1_epi8(0x7F), hi = _mm_setzero_si128();
    for (size_t b = 0; b < nb; b += 16) {
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scale_codes + b));
      lo = _mm_min_epu8(lo, c);
      hi = _mm_max_epu8(hi, c);
    }
    span[0] = static_cast<uint8_t>(_mm512_reduce_min_epu32(_mm512_cvtepu8_epi32(lo)));
    span[1] = static_cast<uint8_t>(_mm512_reduce_max_epu32(_mm512_cvtepu8_epi32(hi)));
  }

  // ExactScaleCodesRnF64 of the 16-block vectors whose bits are set in
  // `pending`, with DAZ cleared and FTZ set.
  static HWY_NOINLINE void ExactScaleCodesRnPending(const uint32_t* HWY_RESTRICT amax,
                                                    uint64_t pending, float tensor_scale,
                                                    uint8_t* HWY_RESTRICT scale_codes) {
    const internal::ScopedFlushDenormals ftz(/*daz=*/false);
    for (; pending != 0; pending &= pending - 1) {
      const size_t b = 16 * static_cast<size_t>(__builtin_ctzll(pending));
      ExactScaleCodesRnF64(amax + b, 16, tensor_scale, scale_codes + b);
    }
  }
#endif

  // NVFP4 kExact, rn: the ue4m3 codes of amax / (6 t) of `nb` blocks (NaN
  // amax: 0x7F), a vector of blocks at a time (lanes past nb read amax's
  // zero tail). The f32 quotient q' = f32(amax / f32(6 t)) lies within 2.1
  // ulps of the exact q (two roundings of 2^-24 each, 6 t a normal f32), and
  // no ue4m3 midpoint lies near a binade edge, so where q' is a ue4m3 normal
  // (q' >= 2^-6) whose low 20 bits are more than 3 from 0x80000 (a midpoint:
  // 4 kept bits, then a one) q rounds like q' and the shared encoder gives
  // the code. Other vectors (about 2^-17 of them, and blocks below 2^-6 of
  // 6 t) take ExactScaleCodesRnF64. span[0], span[1]: the smallest and
  // largest code (lanes past nb included, which only widens the span).
  static HWY_INLINE void ExactScaleCodesRn(const uint32_t* HWY_RESTRICT amax, size_t nb,
                                           float tensor_scale, uint8_t* HWY_RESTRICT scale_codes,
                                           uint32_t* HWY_RESTRICT span) {
    const D d;
    const DU du;
    const DI di;
    const size_t N = hn::Lanes(d);
    const bool fast = tensor_scale >= 0x1p-120f;  // 6 t a normal f32
    const hn::Vec<D> den = hn::Set(d, 6.0f * tensor_scale);
    VU lo = hn::Set(du, 0x7Fu), hi = hn::Zero(du);
    for (size_t b = 0; b < nb; b += N) {
      VU code;
      if (fast) {
        const VU q = hn::BitCast(du, hn::Div(hn::BitCast(d, hn::LoadU(du, amax + b)), den));
        const auto qi = hn::BitCast(di, q);
        const auto off = hn::Sub(hn::And(qi, hn::Set(di, 0xFFFFF)), hn::Set(di, 0x80000));
        const auto near = hn::Lt(hn::Abs(off), hn::Set(di, 4));
        const auto tiny = hn::Lt(qi, hn::Set(di, 121 << 23));  // below 2^-6
        if (HWY_LIKELY(hn::AllFalse(di, hn::Or(near, tiny)))) {
          code = FastEncodeF32<Format::kUE4M3, true>::EncodeRn(du, q);
          StoreLanes<1>(du, code, scale_codes + b);
          lo = hn::Min(lo, code);
          hi = hn::Max(hi, code);
          continue;
        }
      }
      ExactScaleCodesRnF64(amax + b, N, tensor_scale, scale_codes + b);
      code = hn::PromoteTo(du, hn::LoadU(hn::Rebind<uint8_t, DU>(), scale_codes + b));
      lo = hn::Min(lo, code);
      hi = hn::Max(hi, code);
    }
    span[0] = hn::GetLane(hn::MinOfLanes(du, lo));
    span[1] = hn::GetLane(hn::MaxOfLanes(du, hi));
  }

  // ExactScaleCodesRn from the f64 quotient, `n` blocks (a multiple of the
  // f64 lane count). 6 t is exact in f64 and the f64 quotient lies on the
  // same side of every ue4m3 value and midpoint as the exact quotient
  // (scalar::Nvfp4ScaleCode); rounded to odd at f32 precision (24 bits, at
  // least 2 more than ue4m3's 4 + 1) it still rounds to the same code,
  // which the shared f32 encoder then gives. Round to odd: the rn f32
  // quotient, one ulp down if that rounded up, then the lsb set if inexact.
  // A quotient that FTZ flushes to 0 thus becomes 2^-149, which like the
  // quotient lies below the smallest ue4m3 midpoint; beyond f32 max it
  // becomes f32 max, which saturates like the quotient.
  static HWY_NOINLINE void ExactScaleCodesRnF64(const uint32_t* HWY_RESTRICT amax, size_t n,
                                                float tensor_scale,
                                                uint8_t* HWY_RESTRICT scale_codes) {
    const hn::CappedTag<double, 8> dd;
    const hn::RebindToUnsigned<decltype(dd)> du64;
    const hn::Rebind<float, decltype(dd)> df;
    const hn::Rebind<uint32_t, decltype(dd)> du;
    const size_t N = hn::Lanes(dd);
    const auto six_t = hn::Set(dd, 6.0 * static_cast<double>(tensor_scale));
    for (size_t b = 0; b < n; b += N) {
      const auto q =
          hn::Div(hn::PromoteTo(dd, hn::LoadU(df, reinterpret_cast<const float*>(amax + b))), six_t);
      const auto f = hn::DemoteTo(df, q);
      const auto back = hn::PromoteTo(dd, f);
      // All-ones u32 lanes where the f32 quotient rounded up / is inexact.
      const auto up = hn::TruncateTo(du, hn::BitCast(du64, hn::VecFromMask(dd, hn::Gt(back, q))));
      const auto inexact =
          hn::TruncateTo(du, hn::BitCast(du64, hn::VecFromMask(dd, hn::Ne(back, q))));
      const auto odd = hn::Or(hn::Add(hn::BitCast(du, f), up), hn::And(inexact, hn::Set(du, 1u)));
      StoreLanes<1>(du, FastEncodeF32<Format::kUE4M3, true>::EncodeRn(du, odd), scale_codes + b);
    }
  }

#if HWY_TARGET == HWY_AVX3_DL
  // NVFP4 kExact from bf16 (AVX3_DL): the codes of 64 elements (four
  // blocks) in u16 lanes, 32 per vector, without widening. The four blocks'
  // u16 thresholds (Nvfp4ThresholdTable::thr16; exact for bf16, see there)
  // fill one vector, block j in lanes 8j..8j+7, and ThresholdCodes' binary
  // search runs on them with vpermw: T_3, then T_1 or T_5 (read at the
  // index of the count 0 or 4 from the rows moved down one lane), then T_0,
  // T_2, T_4 or T_6; the lane's table base 8j sits in bits 3..4 of the
  // indices, so the count is the final index's bits 0..2. For chunks without Inf
  // or NaN elements (no kZeroInf fix, no NaN blocks).
  //   bf16 lanes of vector h (0, 1):  | block 2h (16) | block 2h+1 (16) |
  //   table lanes:  | blk 0: T_0..T_6, 0 | blk 1 | blk 2 | blk 3 |
  static HWY_INLINE __m512i Bf16Table(const uint16_t (*thr16)[8], const uint8_t* codes) {
    const auto row = [&](size_t j) {
      return _mm_load_si128(reinterpret_cast<const __m128i*>(thr16[codes[j]]));
    };
    __m512i tv = _mm512_castsi128_si512(row(0));
    tv = _mm512_inserti32x4(tv, row(1), 1);
    tv = _mm512_inserti32x4(tv, row(2), 2);
    return _mm512_inserti32x4(tv, row(3), 3);
  }
  // The table base of each lane of vector h, plus k.
  static HWY_INLINE __m512i Bf16Index(int h, int k) {
    const __m512i lo = _mm512_set1_epi16(static_cast<int16_t>(16 * h + k));
    return _mm512_mask_add_epi16(lo, 0xFFFF0000u, lo, _mm512_set1_epi16(8));
  }
  // The constants of Bf16Codes64, built once per chunk (GCC would rebuild
  // the index vectors in every step).
  struct Bf16Consts {
    __m512i c3[2], c0[2], c4[2];  // Bf16Index(h, 3 / 0 / 4)
    __m512i abs, plus1, plus2, seven, weights, idx;
  };
  template <bool kPadded>
  static HWY_INLINE Bf16Consts MakeBf16Consts() {
    struct Table {
      alignas(64) uint8_t v[64];
    };
    // kPadded: per group g, bytes 0..7 from the u32 lanes 8 (g % 2) .. + 7
    // of vector g / 2, bytes 8..15 zero (Bf16Codes64's zeroing mask); else
    // the low byte of every u16 lane.
    static constexpr Table kIdx = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) {
        const int g = j / 16, m = j % 16;
        t.v[j] = static_cast<uint8_t>(
            !kPadded ? 2 * j : (m < 8 ? 64 * (g / 2) + 4 * (8 * (g % 2) + m) : 0));
      }
      return t;
    }();
    Bf16Consts k;
    for (int h = 0; h < 2; ++h) {
      k.c3[h] = Bf16Index(h, 3);
      k.c0[h] = Bf16Index(h, 0);
      k.c4[h] = Bf16Index(h, 4);
    }
    k.abs = _mm512_set1_epi16(0x7FFF);
    k.plus1 = _mm512_set1_epi16(1);
    k.plus2 = _mm512_set1_epi16(2);
    k.seven = _mm512_set1_epi16(7);
    k.weights = _mm512_set1_epi32(0x00100001);
    k.idx = _mm512_load_si512(kIdx.v);
    return k;
  }
  // The codes (u16 lanes: count | sign << 3) of the 32 bf16 x of vector h;
  // tv1: tv with each block's row moved down one lane (lane 8j + i holds
  // T_(i+1)), so that the second level reads T_(n+1) at the count n (0 or
  // 4) without forming n + 1.
  static HWY_INLINE __m512i Bf16Codes32(__m512i x, __m512i tv, __m512i tv1, const Bf16Consts& k,
                                        int h) {
    const __m512i ax = _mm512_and_si512(x, k.abs);
    const __mmask32 k1 = _mm512_cmpgt_epu16_mask(ax, _mm512_permutexvar_epi16(k.c3[h], tv));
    __m512i idx = _mm512_mask_blend_epi16(k1, k.c0[h], k.c4[h]);
    const __mmask32 k2 = _mm512_cmpgt_epu16_mask(ax, _mm512_permutexvar_epi16(idx, tv1));
    idx = _mm512_mask_add_epi16(idx, k2, idx, k.plus2);  // then T_0, T_2, T_4 or T_6
    const __mmask32 k3 = _mm512_cmpgt_epu16_mask(ax, _mm512_permutexvar_epi16(idx, tv));
    idx = _mm512_mask_add_epi16(idx, k3, idx, k.plus1);
    // Bits 0..2 from idx, the rest from x >> 12 (bit 3: the sign; bits
    // 4..15: 0); select C ? B : A.
    return _mm512_ternarylogic_epi32(_mm512_srli_epi16(x, 12), idx, k.seven, 0xD8);
  }
  // The 64 codes of the four blocks at p (bf16 bits) with scale codes
  // codes[0..3], as 64 code bytes or (kPadded) four b4x16_p64 groups; k:
  // MakeBf16Consts<kPadded>().
  template <bool kPadded>
  static HWY_INLINE __m512i Bf16Codes64(const uint16_t* HWY_RESTRICT p,
                                        const uint16_t (*thr16)[8],
                                        const uint8_t* HWY_RESTRICT codes, const Bf16Consts& k) {
    const __m512i tv = Bf16Table(thr16, codes);
    // Each 128-bit lane is one block's row: a byte shift by 2 moves it down.
    const __m512i tv1 = _mm512_alignr_epi8(tv, tv, 2);
    __m512i c0 = Bf16Codes32(_mm512_loadu_si512(p), tv, tv1, k, 0);
    __m512i c1 = Bf16Codes32(_mm512_loadu_si512(p + 32), tv, tv1, k, 1);
    if constexpr (kPadded) {
      // u32 lane = even code + 16 * odd code (one pmaddwd), then the groups.
      c0 = _mm512_madd_epi16(c0, k.weights);
      c1 = _mm512_madd_epi16(c1, k.weights);
      return _mm512_maskz_permutex2var_epi8(0x00FF00FF00FF00FFull, c0, k.idx, c1);
    } else {
      return _mm512_permutex2var_epi8(c0, k.idx, c1);
    }
  }
#endif

  // NVFP4 kExact: the e2m1 codes of N elements (f32 bits) from their block's
  // thresholds t (internal::Nvfp4ElementThresholds): the count of t[i] below
  // |x| (i32 compares of the f32 bits), the sign in bit 3 except (kZeroInf:
  // chunks holding an Inf) for +-Inf in a block with P == 0 (t[7] = 8 and
  // count 7: bit 2 of the count, shifted to bit 3, clears the sign).
  template <bool kZeroInf>
  static HWY_INLINE VU ThresholdCodes(VU bits, const uint32_t* HWY_RESTRICT t) {
    const DU du;
    const DI di;
    const auto ax = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
    VU cu;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (hn::MaxLanes(DU()) == 16) {
      // Binary search over the non-decreasing T_0..T_6 (the count of T_i
      // below |x| is then the search's index): T_3, then T_1 or T_5 (one
      // permute of the block's 8 thresholds), then T_0, T_2, T_4 or T_6.
      const __m512i tv = _mm512_castsi256_si512(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t)));
      const __m512i one = _mm512_set1_epi32(1);
      __m512i idx = _mm512_maskz_mov_epi32(
          _mm512_cmpgt_epi32_mask(ax.raw, _mm512_set1_epi32(static_cast<int32_t>(t[3]))),
          _mm512_set1_epi32(4));
      const __mmask16 gt2 = _mm512_cmpgt_epi32_mask(
          ax.raw, _mm512_permutexvar_epi32(_mm512_or_si512(idx, one), tv));
      idx = _mm512_mask_add_epi32(idx, gt2, idx, _mm512_set1_epi32(2));
      const __mmask16 gt3 = _mm512_cmpgt_epi32_mask(ax.raw, _mm512_permutexvar_epi32(idx, tv));
      cu = VU{_mm512_mask_add_epi32(idx, gt3, idx, one)};
    } else  // NOLINT(readability/braces)
#endif
    {
      auto c = hn::Zero(di);
      for (int i = 0; i < 7; ++i) {
        c = hn::Sub(c, hn::VecFromMask(di, hn::Gt(ax, hn::Set(di, static_cast<int32_t>(t[i])))));
      }
      cu = hn::BitCast(du, c);
    }
    if constexpr (!kZeroInf) return hn::OrAnd(cu, hn::ShiftRight<28>(bits), hn::Set(du, 8u));
    const VU sign = hn::And(hn::ShiftRight<28>(bits), hn::Set(du, 8u));
    return hn::Or(cu, hn::AndNot(hn::And(hn::ShiftLeft<1>(cu), hn::Set(du, t[7])), sign));
  }
};

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_NVFP4_EXACT_INL_H_
