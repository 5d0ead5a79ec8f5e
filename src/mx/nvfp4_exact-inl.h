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
