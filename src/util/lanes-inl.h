// Lane helpers shared by every Highway kernel: narrowing stores of u32 / u16
// lanes to bytes, and the loop that runs a vector step over an array with
// exactly one zero-padded tail step.

#if defined(MXPACK_SRC_UTIL_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_UTIL_LANES_INL_H_
#undef MXPACK_SRC_UTIL_LANES_INL_H_
#else
#define MXPACK_SRC_UTIL_LANES_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Stores the low kBytes bytes of every u32 lane (values fit: codes are
// < 2^(8 kBytes), so the saturating demotions never saturate).
template <int kBytes, class DU>
HWY_INLINE void StoreLanes(DU du, hn::Vec<DU> v, uint8_t* out) {
  const hn::RebindToSigned<DU> di;
  if (kBytes == 4) {
    hn::StoreU(v, du, reinterpret_cast<uint32_t*>(out));
  } else if (kBytes == 2) {
    const hn::Rebind<uint16_t, DU> d16;
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, v)), d16, reinterpret_cast<uint16_t*>(out));
  } else {
    const hn::Rebind<uint8_t, DU> d8;
    hn::StoreU(hn::DemoteTo(d8, hn::BitCast(di, v)), d8, out);
  }
}

// Software prefetch of the input kPrefetchBytes ahead, for wide sources
// (f32/f16/bf16) beyond L1 (kPrefetchMinBytes): streaming encoders at the DRAM
// size otherwise wait on loads the hardware prefetchers issue too late; the
// distance is not critical (half and twice as far do as well). Prefetches
// past the end of `in` are harmless.
inline constexpr uintptr_t kPrefetchBytes = 1024;
inline constexpr size_t kPrefetchMinBytes = 64 * 1024;

// Whether a loop over n elements of kInBytes each prefetches its input.
template <size_t kInBytes>
HWY_INLINE bool WantPrefetch(size_t n) {
  return kInBytes >= 2 && n * kInBytes >= kPrefetchMinBytes;
}

// Prefetches the `bytes` of input that a step at p reads, kPrefetchBytes ahead.
HWY_INLINE void PrefetchAhead(const uint8_t* p, size_t bytes) {
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(p) + kPrefetchBytes;
  for (size_t line = 0; line < bytes; line += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(ahead + line), 0, 3);
  }
}

// Runs `step(in_ptr, out_ptr)` over n elements, kGroup * N elements per step
// (N = Lanes(d)): whole steps first, then exactly one step through
// zero-padded aligned buffers for the tail (whole vectors, then one padded step).
template <size_t kInBytes, size_t kOutBytes, size_t kGroup, class D, class Step>
HWY_INLINE void ForEachStep(D d, const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                            size_t n, const Step& step) {
  const size_t G = kGroup * hn::Lanes(d);
  size_t i = 0;
  const bool prefetch = WantPrefetch<kInBytes>(n);
  for (; i + G <= n; i += G) {
    if (prefetch) PrefetchAhead(in + i * kInBytes, G * kInBytes);
    step(in + i * kInBytes, out + i * kOutBytes);
  }
  if (i == n) return;
  HWY_ALIGN uint8_t in_buf[kGroup * hn::MaxLanes(d) * kInBytes] = {};
  HWY_ALIGN uint8_t out_buf[kGroup * hn::MaxLanes(d) * kOutBytes];
  const size_t rest = n - i;
  std::memcpy(in_buf, in + i * kInBytes, rest * kInBytes);
  step(in_buf, out_buf);
  std::memcpy(out + i * kOutBytes, out_buf, rest * kOutBytes);
}

// The low bytes of every lane of four u32 vectors, in order, as one u8
// vector (4N bytes). Values must be < 2^15. x86: two-stage saturating packs
// (saturation never triggers) plus, on 256/512-bit vectors, one lane permute
// instead of four separate demotions; other targets go through memory.
template <class DU>
HWY_INLINE hn::Vec<hn::Repartition<uint8_t, DU>> U8From4U32(DU du, hn::Vec<DU> v0, hn::Vec<DU> v1,
                                                           hn::Vec<DU> v2, hn::Vec<DU> v3) {
#if HWY_TARGET <= HWY_AVX3 && HWY_TARGET != HWY_SCALAR
  if constexpr (hn::MaxLanes(du) == 16) {
    // Per 128-bit block k: v0[4k..4k+3] v1[..] v2[..] v3[..] as u32 groups.
    const __m512i ab = _mm512_packus_epi32(v0.raw, v1.raw);
    const __m512i cd = _mm512_packus_epi32(v2.raw, v3.raw);
    const __m512i abcd = _mm512_packus_epi16(ab, cd);
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return hn::Vec<hn::Repartition<uint8_t, DU>>{_mm512_permutexvar_epi32(idx, abcd)};
  }
#elif HWY_TARGET == HWY_AVX2
  if constexpr (hn::MaxLanes(du) == 8) {
    const __m256i ab = _mm256_packus_epi32(v0.raw, v1.raw);
    const __m256i cd = _mm256_packus_epi32(v2.raw, v3.raw);
    const __m256i abcd = _mm256_packus_epi16(ab, cd);
    return hn::Vec<hn::Repartition<uint8_t, DU>>{_mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))};
  }
#elif HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3
  if constexpr (hn::MaxLanes(du) == 4) {
    // 128-bit packs keep the lane order (packs_epi32 is SSE2; values < 2^15).
    return hn::Vec<hn::Repartition<uint8_t, DU>>{_mm_packus_epi16(_mm_packs_epi32(v0.raw, v1.raw), _mm_packs_epi32(v2.raw, v3.raw))};
  }
#endif
  const hn::Repartition<uint8_t, DU> d8;
  const size_t N = hn::Lanes(du);
  HWY_ALIGN uint8_t buf[4 * hn::MaxLanes(du)];
  StoreLanes<1>(du, v0, buf);
  StoreLanes<1>(du, v1, buf + N);
  StoreLanes<1>(du, v2, buf + 2 * N);
  StoreLanes<1>(du, v3, buf + 3 * N);
  return hn::Load(d8, buf);
}

// Stores the low byte of every lane of four u32 vectors (4N bytes, in order).
template <class DU>
HWY_INLINE void StoreBytes4(DU du, hn::Vec<DU> v0, hn::Vec<DU> v1, hn::Vec<DU> v2,
                            hn::Vec<DU> v3, uint8_t* out) {
#if HWY_TARGET == HWY_SCALAR  // one lane per vector: no u8 vector of 4N lanes
  StoreLanes<1>(du, v0, out);
  StoreLanes<1>(du, v1, out + 1);
  StoreLanes<1>(du, v2, out + 2);
  StoreLanes<1>(du, v3, out + 3);
#else
  const hn::Repartition<uint8_t, DU> d8;
  hn::StoreU(U8From4U32(du, v0, v1, v2, v3), d8, out);
#endif
}

#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
// The low bytes of two u16 vectors (values <= 0xFF), in order, as one u8
// vector: the x86 saturating pack works per 128-bit block, so 256/512-bit
// vectors need one u64 permute to restore the order.
template <class D16>
HWY_INLINE hn::Vec<hn::Repartition<uint8_t, D16>> U8From2U16(D16 /*d16*/, hn::Vec<D16> lo,
                                                            hn::Vec<D16> hi) {
  using V8 = hn::Vec<hn::Repartition<uint8_t, D16>>;
#if HWY_TARGET <= HWY_AVX3
  static_assert(hn::MaxLanes(D16()) == 32, "512-bit vectors");
  const __m512i idx = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
  return V8{_mm512_permutexvar_epi64(idx, _mm512_packus_epi16(lo.raw, hi.raw))};
#elif HWY_TARGET == HWY_AVX2
  static_assert(hn::MaxLanes(D16()) == 16, "256-bit vectors");
  return V8{_mm256_permute4x64_epi64(_mm256_packus_epi16(lo.raw, hi.raw), 0xD8)};
#else
  static_assert(hn::MaxLanes(D16()) == 8, "128-bit vectors");
  return V8{_mm_packus_epi16(lo.raw, hi.raw)};
#endif
}

// Stores the low bytes of every lane of two u16 vectors (values < 2^8), in
// order (U8From2U16: one saturating pack, plus a u64 permute on 256/512-bit
// vectors).
template <class D16>
HWY_INLINE void StoreBytes2U16(D16 d16, hn::Vec<D16> v0, hn::Vec<D16> v1, uint8_t* out) {
  hn::StoreU(U8From2U16(d16, v0, v1), hn::Repartition<uint8_t, D16>(), out);
}
#endif

// Stores the low 16 bits of every lane of two u32 vectors (values < 2^16).
template <class DU>
HWY_INLINE void StoreHalves2(DU du, hn::Vec<DU> v0, hn::Vec<DU> v1, uint8_t* out) {
#if HWY_TARGET <= HWY_AVX3 && HWY_TARGET != HWY_SCALAR
  if constexpr (hn::MaxLanes(du) == 16) {
    // Per 128-bit block k: v0[4k..4k+3] v1[4k..4k+3] as u64 groups.
    const __m512i ab = _mm512_packus_epi32(v0.raw, v1.raw);
    const __m512i idx = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    _mm512_storeu_si512(out, _mm512_permutexvar_epi64(idx, ab));
    return;
  }
#elif HWY_TARGET == HWY_AVX2
  if constexpr (hn::MaxLanes(du) == 8) {
    const __m256i ab = _mm256_packus_epi32(v0.raw, v1.raw);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute4x64_epi64(ab, 0xD8));
    return;
  }
#endif
  StoreLanes<2>(du, v0, out);
  StoreLanes<2>(du, v1, out + 2 * hn::Lanes(du));
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_UTIL_LANES_INL_H_
