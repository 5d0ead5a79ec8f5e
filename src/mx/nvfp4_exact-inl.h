// Passes 2 and 3 of NVFP4 under Nvfp4Arithmetic::kExact for the block
// quantizer (src/mx/quantize-inl.h): scale codes from the exact quotient
// (rn on AVX3_DL: from a table of one binade of amax) and elements by
// comparison with per-scale-code thresholds.
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_NVFP4_EXACT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_NVFP4_EXACT_INL_H_
#undef MXPACK_SRC_MX_NVFP4_EXACT_INL_H_
#else
#define MXPACK_SRC_MX_NVFP4_EXACT_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "src/mx/mx_internal.h"  // kMxChunkBlocks
#include "src/mx/nvfp4_thresholds.h"  // F32BitsAtOrBelow
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

#if HWY_TARGET == HWY_AVX3_DL
  // The rn scale codes of one binade of bf16 amax for ExactScaleCodesRnTable<false>
  // (Nvfp4ThresholdTable::amax_code, see there): returns E0, the biased
  // exponent of the amax binade 2^(E0 - 127) that holds 6 t / 2 (6 t exact
  // in f64), or -1 where E0 falls outside 1..254 (t not positive and
  // finite, or 6 t far from 1). Its quotients amax / (6 t) lie in (0.5, 2):
  // ue4m3 normals, their codes from ExactScaleCodesRnF64.
  static HWY_NOINLINE int BuildBf16AmaxCodes(float tensor_scale,
                                             uint8_t* HWY_RESTRICT amax_code) {
    const double six_t = 6.0 * static_cast<double>(tensor_scale);
    uint64_t b;
    std::memcpy(&b, &six_t, 8);
    // 6 t in [2^(x - 1023), 2^(x - 1022)) for the biased f64 exponent x
    // (sign included: a negative t lands far outside 1..254).
    const int e0 = static_cast<int>(b >> 52) - (1023 - 127);
    if (e0 < 1 || e0 > 254) return -1;
    HWY_ALIGN uint32_t amax[128];
    HWY_ALIGN uint8_t codes[128];
    for (uint32_t m = 0; m < 128; ++m) amax[m] = static_cast<uint32_t>(e0) << 23 | m << 16;
    {
      const internal::ScopedFlushDenormals ftz(/*daz=*/false);
      ExactScaleCodesRnF64(amax, 128, tensor_scale, codes);
    }
    for (uint32_t m = 0; m < 128; ++m) amax_code[m] = static_cast<uint8_t>(codes[m] - (m >> 4));
    return e0;
  }

  // BuildBf16AmaxCodes for f32 amax (Nvfp4ThresholdTable::f32_amax_*):
  // returns E0, or -1 (no table). A bucket of 2^16 f32 spans at most 2^-7
  // of a binade of q and ue4m3 steps 2^-4 .. 2^-3, so its codes rise by at
  // most one, at the midpoint of the two codes' values d0, d1: q = (d0 +
  // d1) / 2, amax = (d0 + d1) / 2 * 6 t, exact in f64 (5 + 26 significant
  // bits). Its first f32 at or above it rounds up, except at a tie (that
  // f32 equal to it) toward an odd code. Each such step is checked against
  // ExactScaleCodesRnF64 at the f32 below and at it (-1 if one differs).
  static HWY_NOINLINE int BuildF32AmaxCodes(float tensor_scale, const float* HWY_RESTRICT ue4m3,
                                            uint8_t* HWY_RESTRICT amax_code,
                                            uint16_t* HWY_RESTRICT amax_low) {
    const double six_t = 6.0 * static_cast<double>(tensor_scale);
    uint64_t b;
    std::memcpy(&b, &six_t, 8);
    const int e0 = static_cast<int>(b >> 52) - (1023 - 127);
    if (e0 < 1 || e0 > 254) return -1;
    HWY_ALIGN uint32_t amax[256];
    HWY_ALIGN uint8_t codes[256];
    for (uint32_t m = 0; m < 128; ++m) {
      amax[m] = static_cast<uint32_t>(e0) << 23 | m << 16;
      amax[128 + m] = amax[m] | 0xFFFF;
    }
    const internal::ScopedFlushDenormals ftz(/*daz=*/false);
    ExactScaleCodesRnF64(amax, 256, tensor_scale, codes);
    uint8_t first[128];
    for (uint32_t m = 0; m < 128; ++m) {
      const unsigned c0 = codes[m], c1 = codes[128 + m];
      first[m] = static_cast<uint8_t>(c0);
      if (c1 == c0) {
        amax_code[m] = static_cast<uint8_t>(c0 - 1 - (m >> 4));
        amax_low[m] = 0;
        continue;
      }
      if (c1 != c0 + 1) return -1;
      const double mid = (static_cast<double>(ue4m3[c0]) + static_cast<double>(ue4m3[c1])) *
                         0.5 * six_t;
      bool exact;
      const uint32_t at = internal::F32BitsAtOrBelow(mid, &exact);
      const uint32_t up = exact && c1 % 2 == 0 ? at : at + 1;
      if (up >> 16 != amax[m] >> 16 || (up & 0xFFFF) == 0) return -1;
      amax_code[m] = static_cast<uint8_t>(c0 - (m >> 4));
      amax_low[m] = static_cast<uint16_t>(up & 0xFFFF);
      amax[m] = up - 1;
      amax[128 + m] = up;
    }
    ExactScaleCodesRnF64(amax, 256, tensor_scale, codes);
    for (uint32_t m = 0; m < 128; ++m) {
      if (amax_low[m] != 0 && (codes[m] != first[m] || codes[128 + m] != first[m] + 1u)) {
        return -1;
      }
    }
    return e0;
  }

  // span[0], span[1]: the smallest and largest u16 lane of lo, hi and the
  // codes of the `pending` vectors of 32 blocks (ExactScaleCodesRnNoMxcsr).
  static HWY_INLINE void SpanAndPending(const uint32_t* HWY_RESTRICT amax, size_t nb,
                                        float tensor_scale, __m512i lo, __m512i hi,
                                        uint32_t pending, uint8_t* HWY_RESTRICT scale_codes,
                                        uint32_t* HWY_RESTRICT span) {
    // Min and max of the u16 lanes (max as the complement's min).
    const auto min_u16 = [](__m512i v) {
      const __m256i m256 =
          _mm256_min_epu16(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
      const __m128i m128 =
          _mm_min_epu16(_mm256_castsi256_si128(m256), _mm256_extracti128_si256(m256, 1));
      return static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_minpos_epu16(m128)) & 0xFFFF);
    };
    span[0] = min_u16(lo);
    span[1] = 0xFFFF - min_u16(_mm512_xor_si512(hi, _mm512_set1_epi32(-1)));
    for (; pending != 0; pending &= pending - 1) {
      const size_t b = 32 * static_cast<size_t>(__builtin_ctz(pending));
      uint32_t s[2];
      ExactScaleCodesRnNoMxcsr(amax + b, HWY_MIN(nb - b, size_t{32}), tensor_scale,
                               scale_codes + b, s);
      span[0] = HWY_MIN(span[0], s[0]);
      span[1] = HWY_MAX(span[1], s[1]);
    }
  }

  // ExactScaleCodesRn for bf16 amax (f32 bits, low half zero), 32 blocks
  // per vector in u16 lanes without a division: h = E << 7 | m (the bf16
  // bits), and for E0, amax_code of BuildBf16AmaxCodes the code is
  // c = c(m) + 8 (E - E0) = amax_code[m] + (h >> 4) - 8 E0 (h >> 4 =
  // 8 E + (m >> 4)). Scaling amax by 2^(E - E0) scales the exact quotient
  // q likewise, and rn to 4 significant bits commutes with it while the
  // result stays a ue4m3 normal: so c is exact for c >= 9 (q > 2^-6) and
  // for c = 8 (q >= 2^-6 (1 - 2^-5), where the subnormal grid, 2^-9 apart,
  // also gives 2^-6); c >= 0x7F (rn beyond 448) saturates to 0x7E. Zero
  // amax gives code 0. Vectors holding a code below 8 (ue4m3 subnormals),
  // a subnormal amax (not 1.m * 2^(E - 127)) or an amax above f32 max
  // (NaN) take ExactScaleCodesRnNoMxcsr.
  // For f32 amax (kF32) the low halves l count too: the code is c0(m) +
  // [l >= low(m)] + 8 (E - E0) (BuildF32AmaxCodes, amax_low = low), the
  // same steps scaled by 2^(E - E0).
  template <bool kF32>
  static HWY_INLINE void ExactScaleCodesRnTable(const uint32_t* HWY_RESTRICT amax, size_t nb,
                                                float tensor_scale, int e0,
                                                const uint8_t* HWY_RESTRICT amax_code,
                                                const uint16_t* HWY_RESTRICT amax_low,
                                                uint8_t* HWY_RESTRICT scale_codes,
                                                uint32_t* HWY_RESTRICT span) {
    struct Table {
      alignas(64) uint16_t v[32];
    };
    static constexpr Table kHigh = [] {  // the high / low u16 of each u32 of a pair
      Table t{};
      for (int j = 0; j < 32; ++j) t.v[j] = static_cast<uint16_t>(2 * j + 1);
      return t;
    }();
    static constexpr Table kLow = [] {
      Table t{};
      for (int j = 0; j < 32; ++j) t.v[j] = static_cast<uint16_t>(2 * j);
      return t;
    }();
    const __m512i high = _mm512_load_si512(kHigh.v);
    const __m512i tlo = _mm512_load_si512(amax_code);
    const __m512i thi = _mm512_load_si512(amax_code + 64);
    __m512i low, l0, l1, l2, l3;
    if constexpr (kF32) {
      low = _mm512_load_si512(kLow.v);
      l0 = _mm512_load_si512(amax_low);
      l1 = _mm512_load_si512(amax_low + 32);
      l2 = _mm512_load_si512(amax_low + 64);
      l3 = _mm512_load_si512(amax_low + 96);
    }
    const __m512i bias = _mm512_set1_epi16(static_cast<int16_t>(-8 * e0));
    const __m512i eight = _mm512_set1_epi16(8);
    const __m512i max_code = _mm512_set1_epi16(0x7E);
    const __m512i min_normal = _mm512_set1_epi16(0x80);
    const __m512i normal_span = _mm512_set1_epi16(0x7F7F - 0x80);
    __m512i lo = _mm512_set1_epi16(0x7F), hi = _mm512_setzero_si512();
    static_assert(internal::kMxChunkBlocks <= 32 * 32, "pending: one bit per vector");
    uint32_t pending = 0;  // vectors for ExactScaleCodesRnNoMxcsr
    for (size_t b = 0; b < nb; b += 32) {
      const __mmask32 lanes =
          nb - b >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << (nb - b)) - 1);
      const __m512i a0 = _mm512_maskz_loadu_epi32(static_cast<__mmask16>(lanes), amax + b);
      const __m512i a1 =
          _mm512_maskz_loadu_epi32(static_cast<__mmask16>(lanes >> 16), amax + b + 16);
      const __m512i h = _mm512_permutex2var_epi16(a0, high, a1);
      // amax_code[m] in the low byte (index: h's low byte, 7 bits = m).
      const __m512i t = _mm512_maskz_permutex2var_epi8(0x5555555555555555ull, tlo, h, thi);
      __m512i c = _mm512_add_epi16(_mm512_add_epi16(t, _mm512_srli_epi16(h, 4)), bias);
      __mmask32 nz;
      if constexpr (kF32) {
        const __m512i l = _mm512_permutex2var_epi16(a0, low, a1);
        // low(m): m < 64 from l0, l1, else from l2, l3 (vpermt2w: 6 index bits).
        const __m512i step = _mm512_mask_blend_epi16(
            _mm512_test_epi16_mask(h, _mm512_set1_epi16(0x40)),
            _mm512_permutex2var_epi16(l0, h, l1), _mm512_permutex2var_epi16(l2, h, l3));
        c = _mm512_mask_add_epi16(c, _mm512_cmpge_epu16_mask(l, step), c,
                                  _mm512_set1_epi16(1));
        nz = _mm512_test_epi16_mask(_mm512_or_si512(h, l), _mm512_or_si512(h, l));
      } else {
        nz = _mm512_test_epi16_mask(h, h);
      }
      // h - 0x80 (mod 2^16) beyond 0x7F7F - 0x80: subnormal amax (E = 0,
      // no 1.m) or NaN.
      if (HWY_UNLIKELY((_mm512_mask_cmplt_epi16_mask(nz, c, eight) |
                        _mm512_mask_cmpgt_epu16_mask(nz, _mm512_sub_epi16(h, min_normal),
                                                     normal_span)) != 0)) {
        pending |= uint32_t{1} << (b / 32);
        continue;
      }
      const __m512i code = _mm512_maskz_min_epi16(nz, c, max_code);
      _mm512_mask_cvtepi16_storeu_epi8(scale_codes + b, lanes, code);
      lo = _mm512_mask_min_epu16(lo, lanes, lo, code);
      hi = _mm512_mask_max_epu16(hi, lanes, hi, code);
    }
    SpanAndPending(amax, nb, tensor_scale, lo, hi, pending, scale_codes, span);
  }
#endif

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
  // blocks) in u16 lanes without widening, one block per 256-bit vector (so
  // that every lane shares the block's thresholds and the vectors run at
  // full rate on CPUs that split 512-bit operations). The block's u16
  // thresholds (Nvfp4ThresholdTable::thr16; exact for bf16, see there)
  // stay in one 128-bit row, and ThresholdCodes' binary search reads them
  // with vpermw: T_3 (broadcast), then T_1 or T_5 (from the row moved down
  // one lane, at the count 0 or 4), then T_0, T_2, T_4 or T_6; the count is
  // the final index. For chunks without Inf or NaN elements (no kZeroInf
  // fix, no NaN blocks) that Bf16TableCodes64 does not cover.
  struct Bf16Consts {
    __m256i abs, four, plus1, plus2, eight, weights;
    __m512i idx;  // Bf16Codes64's final byte permutation
  };
  template <bool kPadded>
  static HWY_INLINE Bf16Consts MakeBf16Consts() {
    struct Table {
      alignas(64) uint8_t v[64];
    };
    // kPadded: the nibble pairs of block g (Bf16Codes64's b: bytes 0..3 at
    // 4g, bytes 4..7 at 16 + 4g) into bytes 16g..16g+7, bytes 8..15 zero
    // (its zeroing mask). Else the code of element 16g + m: from the packed
    // vector pair g / 2 (lanes of 8 bytes: block 2(g / 2) low half, block
    // 2(g / 2) + 1 low half, then the high halves) at 32 (g / 2) + 16 (m / 8) +
    // 8 (g % 2) + m % 8.
    static constexpr Table kIdx = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) {
        const int g = j / 16, m = j % 16;
        int v;
        if (kPadded) {
          v = m < 4 ? 4 * g + m : (m < 8 ? 16 + 4 * g + m - 4 : 0);
        } else {
          v = 32 * (g / 2) + 16 * (m / 8) + 8 * (g % 2) + m % 8;
        }
        t.v[j] = static_cast<uint8_t>(v);
      }
      return t;
    }();
    Bf16Consts k;
    k.abs = _mm256_set1_epi16(0x7FFF);
    k.four = _mm256_set1_epi16(4);
    k.plus1 = _mm256_set1_epi16(1);
    k.plus2 = _mm256_set1_epi16(2);
    k.eight = _mm256_set1_epi16(8);
    k.weights = _mm256_set1_epi16(0x1001);  // bytes (1, 16): even + 16 * odd
    k.idx = _mm512_load_si512(kIdx.v);
    return k;
  }
  // The codes (u16 lanes: count | sign << 3) of the 16 bf16 x of one block
  // with the thresholds row (T_0..T_6, 0); tv1 is the row moved down one
  // lane (T_1..T_6, 0, then the next row's T_0, unused).
  static HWY_INLINE __m256i Bf16Codes16(__m256i x, const uint16_t* HWY_RESTRICT row,
                                        const Bf16Consts& k) {
    const __m256i tv =
        _mm256_castsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(row)));
    const __m256i tv1 =
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 1)));
    const __m256i ax = _mm256_and_si256(x, k.abs);
    const __mmask16 k1 =
        _mm256_cmpgt_epu16_mask(ax, _mm256_set1_epi16(static_cast<int16_t>(row[3])));
    __m256i idx = _mm256_maskz_mov_epi16(k1, k.four);
    const __mmask16 k2 = _mm256_cmpgt_epu16_mask(ax, _mm256_permutexvar_epi16(idx, tv1));
    idx = _mm256_mask_add_epi16(idx, k2, idx, k.plus2);  // then T_0, T_2, T_4 or T_6
    const __mmask16 k3 = _mm256_cmpgt_epu16_mask(ax, _mm256_permutexvar_epi16(idx, tv));
    idx = _mm256_mask_add_epi16(idx, k3, idx, k.plus1);
    // (x >> 12 & 8) | idx: the sign into bit 3.
    return _mm256_ternarylogic_epi32(_mm256_srli_epi16(x, 12), k.eight, idx, 0xEA);
  }
  // The 64 codes of the four blocks at p (bf16 bits) with scale codes
  // codes[0..3], as 64 code bytes or (kPadded) four b4x16_p64 groups; k:
  // MakeBf16Consts<kPadded>(). Reads thr16[codes[j] + 1][0] (row1's lane 7,
  // unused): thr16 has a spare row.
  template <bool kPadded>
  static HWY_INLINE __m512i Bf16Codes64(const uint16_t* HWY_RESTRICT p,
                                        const uint16_t (*thr16)[8],
                                        const uint8_t* HWY_RESTRICT codes, const Bf16Consts& k) {
    __m256i c[4];
    for (int j = 0; j < 4; ++j) {
      c[j] = Bf16Codes16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 * j)),
                         thr16[codes[j]], k);
    }
    // 128-bit lane L of packus(c0, c1): c0's codes 8L..8L+7, then c1's.
    const __m256i a01 = _mm256_packus_epi16(c[0], c[1]);
    const __m256i a23 = _mm256_packus_epi16(c[2], c[3]);
    if constexpr (kPadded) {
      // Nibble pairs (u16 lanes), then bytes: lane L of b holds bytes
      // 4L..4L+3 of blocks 0, 1, 2, 3 in turn.
      const __m256i b = _mm256_packus_epi16(_mm256_maddubs_epi16(a01, k.weights),
                                            _mm256_maddubs_epi16(a23, k.weights));
      return _mm512_maskz_permutexvar_epi8(0x00FF00FF00FF00FFull, k.idx,
                                           _mm512_castsi256_si512(b));
    } else {
      return _mm512_permutexvar_epi8(
          k.idx, _mm512_inserti64x4(_mm512_castsi256_si512(a01), a23, 1));
    }
  }
#endif

#if HWY_TARGET == HWY_AVX3_DL
  // NVFP4 kExact from bf16 (AVX3_DL) by byte tables: the codes of 64
  // elements (four blocks) in one code byte each, without widening. Each
  // bf16 h = s E M becomes the bytes E and M << 1 | s (a rotate left by one
  // of the u16, then two vpermt2b that gather the 64 high and the 64 low
  // bytes in element order, so that 128-bit lane g holds block g). With the
  // block's scale code c (internal::MakeBf16ByteRow, Nvfp4ThresholdTable's
  // bf16_* arrays): idx = (E -sat ebase(c)) | 8 slot(c) (at most 7 | 8
  // slot(c) for every element of a block of code c, see AddBf16Row), then
  // code = base[idx] + [M' > t1[idx]] + [M' > t2[idx]] (64-byte vpermb
  // tables, unsigned byte compares), the sign (bit 0 of M') into bit 3.
  // For chunks without Inf or NaN elements whose codes all have rows
  // (Nvfp4ThresholdTable::Bf16RowsCover).
  struct Bf16TableConsts {
    __m512i base, t1, t2, e_idx, m_idx, lane_sel, one, eight, weights, pack;
  };
  template <bool kPadded>
  static HWY_INLINE Bf16TableConsts MakeBf16TableConsts(const uint8_t* HWY_RESTRICT base,
                                                        const uint8_t* HWY_RESTRICT t1,
                                                        const uint8_t* HWY_RESTRICT t2) {
    struct Table {
      alignas(64) uint8_t v[64];
    };
    // e_idx / m_idx: byte 2j + 1 / 2j of the vector pair (element j's high
    // / low byte); lane_sel: byte g of a broadcast u32 into lane g; pack:
    // the nibble pairs (u16 lanes) of group g into bytes 16g .. 16g + 7.
    static constexpr Table kE = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) t.v[j] = static_cast<uint8_t>(2 * j + 1);
      return t;
    }();
    static constexpr Table kM = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) t.v[j] = static_cast<uint8_t>(2 * j);
      return t;
    }();
    static constexpr Table kSel = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) t.v[j] = static_cast<uint8_t>(j / 16);
      return t;
    }();
    static constexpr Table kPack = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) {
        t.v[j] = static_cast<uint8_t>(j % 16 < 8 ? j - j % 16 + 2 * (j % 16) : 0);
      }
      return t;
    }();
    Bf16TableConsts k;
    k.base = _mm512_load_si512(base);
    k.t1 = _mm512_load_si512(t1);
    k.t2 = _mm512_load_si512(t2);
    k.e_idx = _mm512_load_si512(kE.v);
    k.m_idx = _mm512_load_si512(kM.v);
    k.lane_sel = _mm512_load_si512(kSel.v);
    k.one = _mm512_set1_epi8(1);
    k.eight = _mm512_set1_epi8(8);
    k.weights = _mm512_set1_epi16(0x1001);  // bytes (1, 16): even + 16 * odd
    k.pack = _mm512_load_si512(kPack.v);
    return k;
  }
  // The 64 codes of the four blocks at p (bf16 bits) as 64 code bytes or
  // (kPadded) four b4x16_p64 groups; ebase, slot8: the blocks' bytes
  // (bf16_ebase and bf16_slot8 of their scale codes).
  template <bool kPadded>
  static HWY_INLINE __m512i Bf16TableCodes64(const uint16_t* HWY_RESTRICT p,
                                             const uint8_t* HWY_RESTRICT ebase,
                                             const uint8_t* HWY_RESTRICT slot8,
                                             const Bf16TableConsts& k) {
    const __m512i x0 = _mm512_loadu_si512(p);
    const __m512i x1 = _mm512_loadu_si512(p + 32);
    // u16 E << 8 | M << 1 | s.
    const __m512i r0 = _mm512_shldi_epi16(x0, x0, 1);
    const __m512i r1 = _mm512_shldi_epi16(x1, x1, 1);
    const __m512i e = _mm512_permutex2var_epi8(r0, k.e_idx, r1);
    const __m512i m = _mm512_permutex2var_epi8(r0, k.m_idx, r1);
    uint32_t eb4, sl4;
    std::memcpy(&eb4, ebase, 4);
    std::memcpy(&sl4, slot8, 4);
    const __m512i eb = _mm512_shuffle_epi8(_mm512_set1_epi32(static_cast<int>(eb4)), k.lane_sel);
    const __m512i sl = _mm512_shuffle_epi8(_mm512_set1_epi32(static_cast<int>(sl4)), k.lane_sel);
    // E -sat ebase <= 7 in every block (Nvfp4ThresholdTable::AddBf16Row):
    // no clamp.
    const __m512i idx = _mm512_or_si512(_mm512_subs_epu8(e, eb), sl);
    __m512i c = _mm512_permutexvar_epi8(idx, k.base);
    c = _mm512_mask_add_epi8(
        c, _mm512_cmpgt_epu8_mask(m, _mm512_permutexvar_epi8(idx, k.t1)), c, k.one);
    c = _mm512_mask_add_epi8(
        c, _mm512_cmpgt_epu8_mask(m, _mm512_permutexvar_epi8(idx, k.t2)), c, k.one);
    c = _mm512_mask_add_epi8(c, _mm512_test_epi8_mask(m, k.one), c, k.eight);
    if constexpr (kPadded) {
      return _mm512_maskz_permutexvar_epi8(0x00FF00FF00FF00FFull, k.pack,
                                           _mm512_maddubs_epi16(c, k.weights));
    } else {
      return c;
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
