// AVX-512 kernel of the e4m3 .acc::f16 kSequential reduction with finite
// partial sums (docs/semantics.md section 4), for CPUs without AVX512-FP16:
// the f32 adds and roundings of ReduceLoop's scaled e4m3 domain
// (reduce_core-inl.h, kScaledE4M3), with the codes decoded 32 at a time in
// 16-bit lanes. Included by src/multimem/reduce-inl.h.

// Per-target include guard (Highway convention).
#if defined(MXPACK_SRC_MULTIMEM_REDUCE_E4M3_AVX3_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MULTIMEM_REDUCE_E4M3_AVX3_INL_H_
#undef MXPACK_SRC_MULTIMEM_REDUCE_E4M3_AVX3_INL_H_
#else
#define MXPACK_SRC_MULTIMEM_REDUCE_E4M3_AVX3_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hwy/highway.h"
#include "src/multimem/reduce_core-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef MXPACK_REDUCE_HAVE_E4M3_AVX3_KERNEL
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
#define MXPACK_REDUCE_HAVE_E4M3_AVX3_KERNEL 1
// ---------------------------------------------------------------------------
// The same f32 operations as ReduceLoop<kE4M3, kF16, false, false>, so the
// same bits, 64 elements per source read at once.
//
// Decode: the scaled f32 of code c = S EEEE MMM is S 0000 EEEE MMM 0..0: its
// high 16 bits are h = (int16(c) << 4) & 0x87F0, its low 16 bits zero. h is
// made for 32 codes per vector (vpmovsxbw, vpsllw, vpand), and vpunpcklwd /
// vpunpckhwd with zero make the f32 lanes: in 128-bit lane L the low vector
// holds codes 8L .. 8L + 3, the high one codes 8L + 4 .. 8L + 7. Every
// source is laid out alike; the encode puts the codes back in order with one
// vpermt2w.
// Step (RoundToF16): s = acc + x in f32, then (s + 0xFFF + bit 13 of s) &
// ~0x1FFF, the bit-13 add as a masked add.
// Encode (CodeE4M3Scaled): t = s + 0x7FFFF + bit 20 of s, code = min(|t| >>
// 20, 0x7E) | sign; the bits of t below 20 no longer matter, so the rest is
// done on the high 16 bits t_hi: min((t_hi & 0x7FFF) >> 4, 0x7E) |
// ((t_hi >> 8) & 0x80).
// NaN codes (magnitude 0x7F) are not NaN in this domain: chunks holding
// them (signed byte max 0x7F or unsigned byte max 0xFF) run the scalar
// reference, as in reduce_fp16-inl.h.
// ---------------------------------------------------------------------------

// Word k of vpermt2w(a, index, b): the high half of the f32 lane of code k
// (of 32), a holding the unpack-low lanes and b the unpack-high ones.
HWY_INLINE __m512i E4M3Avx3CodeOrder() {
  alignas(64) uint16_t idx[32];
  for (int k = 0; k < 32; ++k) {
    const int lane = k / 8, r = k % 8;
    idx[k] = static_cast<uint16_t>((r / 4) * 32 + 2 * (4 * lane + r % 4) + 1);
  }
  return _mm512_load_si512(idx);
}

inline constexpr size_t kE4M3Avx3PrefetchBytes = 1024;

// kSequential over kK consecutive chunks of 64 elements at `pos`; false if
// they hold NaN codes (nothing written).
template <size_t kK>
HWY_INLINE bool E4M3Avx3SeqChunks(const uint8_t* const* s, size_t nsrc,
                                  size_t pos, uint8_t* o, __m512i order) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i h_mask = _mm512_set1_epi16(static_cast<int16_t>(0x87F0));
  const __m512i one = _mm512_set1_epi32(1);
  __m512i smax = _mm512_set1_epi8(-128), umax = zero;
  // x[0..3]: the f32 lanes of the 64 codes at p.
  const auto decode = [&](const uint8_t* p, __m512i* x) {
    _mm_prefetch(reinterpret_cast<const char*>(p + kE4M3Avx3PrefetchBytes),
                 _MM_HINT_T0);
    const __m512i w = _mm512_loadu_si512(p);
    smax = _mm512_max_epi8(smax, w);
    umax = _mm512_max_epu8(umax, w);
    for (int k = 0; k < 2; ++k) {
      const __m512i h = _mm512_and_si512(
          _mm512_slli_epi16(_mm512_cvtepi8_epi16(_mm256_loadu_si256(
                                reinterpret_cast<const __m256i*>(p + 32 * k))),
                            4),
          h_mask);
      x[2 * k] = _mm512_unpacklo_epi16(zero, h);
      x[2 * k + 1] = _mm512_unpackhi_epi16(zero, h);
    }
  };
  __m512i acc[4 * kK];
  for (size_t j = 0; j < kK; ++j) decode(s[0] + pos + 64 * j, &acc[4 * j]);
  for (size_t r = 1; r < nsrc; ++r) {
    for (size_t j = 0; j < kK; ++j) {
      __m512i x[4];
      decode(s[r] + pos + 64 * j, x);
      for (size_t i = 0; i < 4; ++i) {
        const __m512i u = _mm512_castps_si512(_mm512_add_ps(
            _mm512_castsi512_ps(acc[4 * j + i]), _mm512_castsi512_ps(x[i])));
        const __m512i t = _mm512_add_epi32(u, _mm512_set1_epi32(0xFFF));
        acc[4 * j + i] = _mm512_and_si512(
            _mm512_mask_add_epi32(
                t, _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x2000)), t,
                one),
            _mm512_set1_epi32(~0x1FFF));
      }
    }
  }
  if ((_mm512_cmpeq_epi8_mask(smax, _mm512_set1_epi8(0x7F)) |
       _mm512_cmpeq_epi8_mask(umax, _mm512_set1_epi8(-1))) != 0) {
    return false;
  }
  for (size_t j = 0; j < 2 * kK; ++j) {
    __m512i t[2];
    for (size_t i = 0; i < 2; ++i) {
      const __m512i u = acc[2 * j + i];
      const __m512i b = _mm512_add_epi32(u, _mm512_set1_epi32(0x7FFFF));
      t[i] = _mm512_mask_add_epi32(
          b, _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x100000)), b, one);
    }
    const __m512i hi = _mm512_permutex2var_epi16(t[0], order, t[1]);
    const __m512i mag = _mm512_min_epu16(
        _mm512_srli_epi16(_mm512_and_si512(hi, _mm512_set1_epi16(0x7FFF)), 4),
        _mm512_set1_epi16(0x7E));
    // mag | ((hi >> 8) & 0x80)  (ternary logic 0xF8 = A | (B & C)).
    const __m512i code = _mm512_ternarylogic_epi32(
        mag, _mm512_srli_epi16(hi, 8), _mm512_set1_epi16(0x80), 0xF8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + pos + 32 * j),
                        _mm512_cvtepi16_epi8(code));
  }
  return true;
}

// e4m3 acc::f16 kSequential, nsrc <= kE4M3FiniteSources.
inline void E4M3Avx3SeqLoop(const ReduceSpec& spec, const uint8_t* const* src,
                            size_t nsrc, uint8_t* out, size_t n) {
  const __m512i order = E4M3Avx3CodeOrder();
  std::vector<size_t> fallback;
  std::vector<uint64_t> codes(nsrc);
  ForEachChunkRange<1>(
      src, nsrc, out, n, 64,
      [&](const uint8_t* const* s, uint8_t* o, size_t end) {
        fallback.clear();
        size_t pos = 0;
        constexpr size_t kK = 4;
        for (; pos + 64 * kK <= end; pos += 64 * kK) {
          if (!E4M3Avx3SeqChunks<kK>(s, nsrc, pos, o, order)) {
            for (size_t j = 0; j < kK; ++j) fallback.push_back(pos + 64 * j);
          }
        }
        for (; pos < end; pos += 64) {
          if (!E4M3Avx3SeqChunks<1>(s, nsrc, pos, o, order)) {
            fallback.push_back(pos);
          }
        }
        for (size_t p : fallback) {
          for (size_t k = p; k < p + 64; ++k) {
            for (size_t r = 0; r < nsrc; ++r) codes[r] = s[r][k];
            o[k] = static_cast<uint8_t>(scalar::ReduceElement(spec, codes));
          }
        }
      });
}
#else
#define MXPACK_REDUCE_HAVE_E4M3_AVX3_KERNEL 0
#endif

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MULTIMEM_REDUCE_E4M3_AVX3_INL_H_
