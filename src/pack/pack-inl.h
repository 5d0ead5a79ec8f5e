// Highway kernels of the packed layouts (docs/semantics.md section 2): padded groups
// of 16 <-> one byte per element (codes or tcgen05.cp containers), dense4 and
// dense6 <-> codes. Inputs are pre-validated; nothing allocates. Included once
// per target by src/pack/pack.cc.

// Per-target include guard (Highway convention).
#if defined(MXPACK_SRC_PACK_PACK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_PACK_PACK_INL_H_
#undef MXPACK_SRC_PACK_PACK_INL_H_
#else
#define MXPACK_SRC_PACK_PACK_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "mxpack/pack.h"
#include "src/format/codec-inl.h"  // the element codecs (one codec for convert and pack)
#include "src/util/lanes-inl.h"
#include "src/format/padded_codec-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
// HWY_SCALAR (one-lane vectors, compiled by HWY_COMPILE_ALL_ATTAINABLE but
// never dispatched: EMU128 takes the fallback slot) cannot hold a 16-byte
// group; it gets plain loops over the scalar reference helpers.
inline Layout PaddedLayout(int bits) {
  return bits == 4 ? Layout::kB4x16P64 : Layout::kB6x16P32;
}
inline void ExpandPadded(int bits, int shift, const uint8_t* in, uint8_t* out,
                         size_t groups) {
  for (size_t i = 0; i < groups * 16; ++i) {
    out[i] = static_cast<uint8_t>(scalar::GetCode(PaddedLayout(bits), in, i) << shift);
  }
}
inline void CompactPadded(int bits, int shift, const uint8_t* in, uint8_t* out,
                          size_t groups) {
  std::memset(out, 0, groups * 16);
  for (size_t i = 0; i < groups * 16; ++i) {
    scalar::SetCode(PaddedLayout(bits), out, i, static_cast<uint8_t>(in[i] >> shift));
  }
}
inline void UnpackDense4(const uint8_t* in, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = scalar::GetCode(Layout::kDense4, in, i);
}
inline void PackDense4(const uint8_t* in, uint8_t* out, size_t n) {
  std::memset(out, 0, (n + 1) / 2);
  for (size_t i = 0; i < n; ++i) scalar::SetCode(Layout::kDense4, out, i, in[i]);
}
inline void UnpackDense6(const uint8_t* in, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = scalar::GetCode(Layout::kDense6, in, i);
}
inline void PackDense6(const uint8_t* in, uint8_t* out, size_t n) {
  std::memset(out, 0, (n + 3) / 4 * 3);
  for (size_t i = 0; i < n; ++i) scalar::SetCode(Layout::kDense6, out, i, in[i]);
}
inline void ShiftBytesRight(int shift, const uint8_t* in, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(in[i] >> shift);
}
inline bool AnyOutside(const uint8_t* p, size_t n, uint8_t mask) {
  return internal::FirstOutside(p, n, mask) != n;
}
inline bool EncodePaddedFused(Format, Format, bool, const uint8_t*, uint8_t*, size_t) {
  return false;  // the caller runs the tiled convert + pack path
}
#else  // HWY_TARGET != HWY_SCALAR

// Outputs at least this large bypass the caches (non-temporal stores), as
// memcpy does for large copies: it saves the read-for-ownership of every
// destination line, which otherwise halves the throughput from DRAM.
constexpr size_t kStreamBytes = size_t{8} << 20;

// Runs `step(d, v)` on every 16-byte group of in[0, groups*16): whole vectors
// first, then one partial step through zero-padded aligned buffers (tail
// rule). Large outputs: a partial head step aligns `out`, then streams.
template <class Step>
HWY_INLINE void ForEachPaddedVector(const uint8_t* HWY_RESTRICT in,
                                    uint8_t* HWY_RESTRICT out, size_t groups,
                                    const Step& step) {
  const hn::ScalableTag<uint8_t> d;
  const size_t N = hn::Lanes(d);
  const size_t bytes = groups * 16;
  HWY_ALIGN uint8_t buf[hn::MaxLanes(d)];
  // One partial step over [i, i + len) through `buf`.
  const auto partial = [&](size_t i, size_t len) {
    std::memset(buf, 0, sizeof(buf));
    std::memcpy(buf, in + i, len);
    hn::Store(step(d, hn::Load(d, buf)), d, buf);
    std::memcpy(out + i, buf, len);
  };
  size_t i = 0;
  const size_t misalign = reinterpret_cast<uintptr_t>(out) % N;
  if (bytes >= kStreamBytes && misalign % 16 == 0) {
    if (misalign != 0) {
      partial(0, N - misalign);  // whole groups: N - misalign is a multiple of 16
      i = N - misalign;
    }
    for (; i + 2 * N <= bytes; i += 2 * N) {
      // Software prefetch 1 KiB ahead, clamped to the input: the streaming
      // stores leave the hardware prefetchers behind on DRAM-sized inputs.
      hwy::Prefetch(in + HWY_MIN(i + 1024, bytes - 1));
      const auto a = hn::LoadU(d, in + i);
      const auto b = hn::LoadU(d, in + i + N);
      hn::Stream(step(d, a), d, out + i);
      hn::Stream(step(d, b), d, out + i + N);
    }
    hwy::FlushStream();
  }
  // Cached outputs: a partial head step aligns `out` too (a misaligned
  // vector store writes two lines).
  if (i == 0 && bytes >= 4 * N && misalign % 16 == 0 && misalign != 0) {
    partial(0, N - misalign);
    i = N - misalign;
  }
  // Two vectors per iteration give the loads more to overlap with.
  for (; i + 2 * N <= bytes; i += 2 * N) {
    const auto a = hn::LoadU(d, in + i);
    const auto b = hn::LoadU(d, in + i + N);
    hn::StoreU(step(d, a), d, out + i);
    hn::StoreU(step(d, b), d, out + i + N);
  }
  for (; i + N <= bytes; i += N) {
    hn::StoreU(step(d, hn::LoadU(d, in + i)), d, out + i);
  }
  if (i < bytes) partial(i, bytes - i);
}

template <int kShift>
void Expand4Impl(const uint8_t* in, uint8_t* out, size_t groups) {
  ForEachPaddedVector(in, out, groups, [](auto d, auto v) {
    return PaddedCodec::Expand4<kShift>(d, v);
  });
}
template <int kShift>
void Expand6Impl(const uint8_t* in, uint8_t* out, size_t groups) {
  ForEachPaddedVector(in, out, groups, [](auto d, auto v) {
    return PaddedCodec::Expand6<kShift>(d, v);
  });
}
template <int kShift>
void Compact4Impl(const uint8_t* in, uint8_t* out, size_t groups) {
  ForEachPaddedVector(in, out, groups, [](auto d, auto v) {
    return PaddedCodec::Compact4<kShift>(d, v);
  });
}
template <int kShift>
void Compact6Impl(const uint8_t* in, uint8_t* out, size_t groups) {
  ForEachPaddedVector(in, out, groups, [](auto d, auto v) {
    return PaddedCodec::Compact6<kShift>(d, v);
  });
}

// Padded groups -> one byte per element. bits: 4 or 6; shift as in
// PaddedCodec (0 = codes).
void ExpandPadded(int bits, int shift, const uint8_t* HWY_RESTRICT in,
                  uint8_t* HWY_RESTRICT out, size_t groups) {
  if (bits == 4) {
    shift == 2 ? Expand4Impl<2>(in, out, groups) : Expand4Impl<0>(in, out, groups);
  } else {
    shift == 1 ? Expand6Impl<1>(in, out, groups) : Expand6Impl<0>(in, out, groups);
  }
}

// One byte per element -> padded groups (zero padding).
void CompactPadded(int bits, int shift, const uint8_t* HWY_RESTRICT in,
                   uint8_t* HWY_RESTRICT out, size_t groups) {
  if (bits == 4) {
    shift == 2 ? Compact4Impl<2>(in, out, groups) : Compact4Impl<0>(in, out, groups);
  } else {
    shift == 1 ? Compact6Impl<1>(in, out, groups) : Compact6Impl<0>(in, out, groups);
  }
}

// dense4 (n codes in (n+1)/2 bytes) -> n codes.
void UnpackDense4(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                  size_t n) {
  const hn::ScalableTag<uint16_t> d16;
  const hn::Rebind<uint8_t, decltype(d16)> dh;  // N/2 bytes
  const hn::Repartition<uint8_t, decltype(d16)> d8;
  const size_t N = hn::Lanes(d8);
  const auto step = [&](const uint8_t* src, uint8_t* dst) {
    // u16 lane k = packed byte k (zero-extended): low nibble stays in the low
    // byte, high nibble moves to bits [11:8] (= high byte).
    const auto x = hn::PromoteTo(d16, hn::LoadU(dh, src));
    const auto r = hn::OrAnd(hn::And(x, hn::Set(d16, uint16_t{0x000F})),
                             hn::ShiftLeft<4>(x), hn::Set(d16, uint16_t{0x0F00}));
    hn::StoreU(hn::BitCast(d8, r), d8, dst);
  };
  size_t i = 0;
  for (; i + N <= n; i += N) step(in + i / 2, out + i);
  if (i == n) return;
  HWY_ALIGN uint8_t src[hn::MaxLanes(d8)] = {};
  HWY_ALIGN uint8_t dst[hn::MaxLanes(d8)];
  std::memcpy(src, in + i / 2, (n - i + 1) / 2);
  step(src, dst);
  std::memcpy(out + i, dst, n - i);
}

// n codes (< 16) -> dense4 ((n+1)/2 bytes; an odd final high nibble is 0).
void PackDense4(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                size_t n) {
  const hn::ScalableTag<uint16_t> d16;
  const hn::Rebind<uint8_t, decltype(d16)> dh;
  const hn::Repartition<uint8_t, decltype(d16)> d8;
  const size_t N = hn::Lanes(d8);
  const auto step = [&](const uint8_t* src, uint8_t* dst) {
    // u16 lane = c1:c0 with c < 16, so (x | x >> 4) & 0xFF = c1<<4 | c0.
    const auto x = hn::BitCast(d16, hn::LoadU(d8, src));
    const auto b = hn::And(hn::Or(x, hn::ShiftRight<4>(x)), hn::Set(d16, uint16_t{0xFF}));
    // Highway 1.0.3 demotes i16 (not u16) to u8; b <= 0xFF, so no saturation.
    const hn::RebindToSigned<decltype(d16)> di16;
    hn::StoreU(hn::DemoteTo(dh, hn::BitCast(di16, b)), dh, dst);
  };
  size_t i = 0;
  for (; i + N <= n; i += N) step(in + i, out + i / 2);
  if (i == n) return;
  HWY_ALIGN uint8_t src[hn::MaxLanes(d8)] = {};
  HWY_ALIGN uint8_t dst[hn::MaxLanes(d8)];
  std::memcpy(src, in + i, n - i);
  step(src, dst);
  std::memcpy(out + i / 2, dst, (n - i + 1) / 2);
}

// u32 lane indices moving block b's first 12 bytes to bytes 12b.. (pack) or
// back (unpack) on vectors wider than 128 bits.
alignas(64) static constexpr int32_t kDense6Spread[16] = {0, 1, 2,  2,  3,  4,  5,  5,
                                                          6, 7, 8,  8,  9, 10, 11, 11};
// Gather tables per u32 lane count (every index valid for its vector).
alignas(16) static constexpr int32_t kDense6Gather4[4] = {0, 1, 2, 3};
alignas(32) static constexpr int32_t kDense6Gather8[8] = {0, 1, 2, 4, 5, 6, 7, 7};
alignas(64) static constexpr int32_t kDense6Gather16[16] = {0,  1,  2,  4,  5,  6,
                                                            8,  9,  10, 12, 13, 14,
                                                            15, 15, 15, 15};

// dense6 (n codes in ceil(n/4)*3 bytes) -> n codes.
void UnpackDense6(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                  size_t n) {
  const hn::ScalableTag<uint8_t> d;
  const hn::Repartition<uint32_t, decltype(d)> d32;
  const size_t N = hn::Lanes(d);
  const auto idx = hn::SetTableIndices(d32, kDense6Spread);
  const auto step = [&](const uint8_t* src, uint8_t* dst) {
    auto v = hn::LoadU(d, src);  // 3N/4 bytes used
    if (N > 16) {
      v = hn::BitCast(d, hn::TableLookupLanes(hn::BitCast(d32, v), idx));
    }
    hn::StoreU(PaddedCodec::Expand6<0>(d, v), d, dst);
  };
  const size_t in_bytes = (n + 3) / 4 * 3;
  size_t i = 0;
  // A step reads N bytes at 3i/4: stop while that is still inside `in`.
  for (; i + N <= n && i / 4 * 3 + N <= in_bytes; i += N) step(in + i / 4 * 3, out + i);
  HWY_ALIGN uint8_t src[hn::MaxLanes(d)];
  HWY_ALIGN uint8_t dst[hn::MaxLanes(d)];
  while (i < n) {  // at most two steps: the over-read guard and the tail
    const size_t m = n - i < N ? n - i : N;
    std::memset(src, 0, sizeof(src));
    std::memcpy(src, in + i / 4 * 3, (m + 3) / 4 * 3);
    step(src, dst);
    std::memcpy(out + i, dst, m);
    i += m;
  }
}

#if HWY_TARGET <= HWY_AVX3_DL
// Byte 3j + b <- byte 4j + b (j < 16, b < 3); the last 16 bytes are unused.
alignas(64) static constexpr uint8_t kDense6Bytes3Of4[64] = {
    0,  1,  2,  4,  5,  6,  8,  9,  10, 12, 13, 14, 16, 17, 18, 20,
    21, 22, 24, 25, 26, 28, 29, 30, 32, 33, 34, 36, 37, 38, 40, 41,
    42, 44, 45, 46, 48, 49, 50, 52, 53, 54, 56, 57, 58, 60, 61, 62,
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0};
#endif

// n codes (< 64) -> dense6 (ceil(n/4)*3 bytes; the final group zero-padded).
void PackDense6(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                size_t n) {
  const hn::ScalableTag<uint8_t> d;
  const hn::Repartition<uint32_t, decltype(d)> d32;
  const size_t N = hn::Lanes(d);
  const size_t N32 = hn::Lanes(d32);
  const auto idx = hn::SetTableIndices(
      d32, N32 >= 16 ? kDense6Gather16 : (N32 == 8 ? kDense6Gather8 : kDense6Gather4));
  const auto step = [&](const uint8_t* src, uint8_t* dst) {
#if HWY_TARGET <= HWY_AVX3_DL
    // Codes c0..c3 of each u32 lane -> c0 | c1 << 6 | c2 << 12 | c3 << 18 by
    // two multiply-adds (pairs c0 + 64 c1, then the pairs + 4096 times the
    // next), then one vpermb gathers the low 3 bytes of every u32 lane.
    (void)idx;
    const __m512i pairs =
        _mm512_maddubs_epi16(hn::LoadU(d, src).raw, _mm512_set1_epi16(0x4001));
    const __m512i words =
        _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x10000001));
    hn::StoreU(hn::Vec<decltype(d)>{_mm512_permutexvar_epi8(
                   hn::LoadU(d, kDense6Bytes3Of4).raw, words)},
               d, dst);  // 3N/4 bytes meaningful
#else
    auto v = PaddedCodec::Compact6<0>(d, hn::LoadU(d, src));
    if (N > 16) {
      v = hn::BitCast(d, hn::TableLookupLanes(hn::BitCast(d32, v), idx));
    }
    hn::StoreU(v, d, dst);  // 3N/4 bytes meaningful
#endif
  };
  const size_t out_bytes = (n + 3) / 4 * 3;
  size_t i = 0;
  for (; i + N <= n && i / 4 * 3 + N <= out_bytes; i += N) step(in + i, out + i / 4 * 3);
  HWY_ALIGN uint8_t src[hn::MaxLanes(d)];
  HWY_ALIGN uint8_t dst[hn::MaxLanes(d)];
  while (i < n) {
    const size_t m = n - i < N ? n - i : N;
    std::memset(src, 0, sizeof(src));
    std::memcpy(src, in + i, m);
    step(src, dst);
    std::memcpy(out + i / 4 * 3, dst, (m + 3) / 4 * 3);
    i += m;
  }
}

// Byte-wise container -> code: (x >> shift) (containers pre-validated).
void ShiftBytesRight(int shift, const uint8_t* HWY_RESTRICT in,
                     uint8_t* HWY_RESTRICT out, size_t n) {
  const hn::ScalableTag<uint8_t> d;
  const size_t N = hn::Lanes(d);
  const auto step = [&](const uint8_t* src, uint8_t* dst) {
    const auto v = hn::LoadU(d, src);
    hn::StoreU(shift == 2 ? hn::ShiftRight<2>(v)
                          : (shift == 1 ? hn::ShiftRight<1>(v) : v),
               d, dst);
  };
  size_t i = 0;
  for (; i + N <= n; i += N) step(in + i, out + i);
  if (i == n) return;
  HWY_ALIGN uint8_t src[hn::MaxLanes(d)] = {};
  HWY_ALIGN uint8_t dst[hn::MaxLanes(d)];
  std::memcpy(src, in + i, n - i);
  step(src, dst);
  std::memcpy(out + i, dst, n - i);
}

// True if some byte of p[0, n) has a bit outside `mask`.
bool AnyOutside(const uint8_t* HWY_RESTRICT p, size_t n, uint8_t mask) {
  const hn::ScalableTag<uint8_t> d;
  const size_t N = hn::Lanes(d);
  const auto bad = hn::Set(d, static_cast<uint8_t>(~mask));
  auto acc = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    acc = hn::OrAnd(acc, hn::LoadU(d, p + i), bad);
    acc = hn::OrAnd(acc, hn::LoadU(d, p + i + N), bad);
  }
  for (; i + N <= n; i += N) acc = hn::OrAnd(acc, hn::LoadU(d, p + i), bad);
  if (i < n) {
    HWY_ALIGN uint8_t buf[hn::MaxLanes(d)] = {};
    std::memcpy(buf, p + i, n - i);
    acc = hn::OrAnd(acc, hn::Load(d, buf), bad);
  }
  return !hn::AllTrue(d, hn::Eq(acc, hn::Zero(d)));
}

// Fused quantize into padded groups in one pass over the input: each step
// encodes four u32 vectors of f32 bits (the rn encoder of encode_fast-inl.h),
// packs their codes into one u8 vector in registers (U8From4U32), compacts
// its 16-element blocks (PaddedCodec) and stores whole groups. The tail goes
// through zero-padded buffers: +0 encodes to code 0, the padding value of a
// final partial group.
template <internal::SrcKind kSrc, Format kElem, bool kRelu>
HWY_NOINLINE void EncodePaddedFusedT(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                     size_t n) {
  using Step = EncodeStep4<kSrc, kElem, /*kSatFinite=*/true, kRelu>;
  constexpr size_t kIn = Step::kIn;
  const hn::ScalableTag<uint32_t> du;
  const hn::Repartition<uint8_t, decltype(du)> d8;
  const size_t N8 = hn::Lanes(d8);  // elements per step = bytes out per step
  const auto step = [du, d8](const uint8_t* src, uint8_t* dst) {
#ifdef MXPACK_HAVE_RANGE_ENCODE
    if constexpr (Step::kRange && kElem == Format::kE2M1) {
      // The range encoder's own b4x16_p64 packing (2 fewer operations).
      hn::StoreU(Step::template Codes<true>(du, src), d8, dst);
      return;
    }
#endif
    const auto codes = Step::Codes(du, src);
    const auto packed = internal::FastFormatOf(kElem).bits == 4
                            ? PaddedCodec::Compact4<0>(d8, codes)
                            : PaddedCodec::Compact6<0>(d8, codes);
    hn::StoreU(packed, d8, dst);
  };
  size_t i = 0;
  // Whole steps, 16 bytes out per 16 elements; the prefetch decided once,
  // outside the loop (a test inside slowed the loop even where no prefetch
  // was issued).
  const auto whole_steps = [&](auto prefetch) {
    for (; i + N8 <= n; i += N8) {
      if constexpr (decltype(prefetch)::value) PrefetchAhead(in + i * kIn, N8 * kIn);
      step(in + i * kIn, out + i);
    }
  };
  if (WantPrefetch<kIn>(n)) {
    whole_steps(std::true_type());
  } else {
    whole_steps(std::false_type());
  }
  if (i == n) return;
  HWY_ALIGN uint8_t in_buf[hn::MaxLanes(d8) * kIn] = {};
  HWY_ALIGN uint8_t out_buf[hn::MaxLanes(d8)];
  const size_t rest = n - i;
  std::memcpy(in_buf, in + i * kIn, rest * kIn);
  step(in_buf, out_buf);
  std::memcpy(out + i, out_buf, (rest + 15) / 16 * 16);
}

// Runs EncodePaddedFusedT, under internal::ScopedFlushDenormals on the F16C
// path.
template <internal::SrcKind kSrc, Format kElem, bool kRelu>
HWY_INLINE void EncodePaddedFusedRun(const uint8_t* in, uint8_t* out, size_t n) {
#ifdef MXPACK_HAVE_F16C_ENCODE
  if constexpr (EncodeStep4<kSrc, kElem, true, kRelu>::kF16c) {
    const internal::ScopedFlushDenormals ftz;
    EncodePaddedFusedT<kSrc, kElem, kRelu>(in, out, n);
    return;
  }
#endif
  EncodePaddedFusedT<kSrc, kElem, kRelu>(in, out, n);
}

template <internal::SrcKind kSrc, bool kRelu>
HWY_INLINE bool EncodePaddedFusedFrom(Format elem, const uint8_t* in, uint8_t* out, size_t n) {
  switch (elem) {
    case Format::kE2M1: EncodePaddedFusedRun<kSrc, Format::kE2M1, kRelu>(in, out, n); return true;
    case Format::kE2M3: EncodePaddedFusedRun<kSrc, Format::kE2M3, kRelu>(in, out, n); return true;
    case Format::kE3M2: EncodePaddedFusedRun<kSrc, Format::kE3M2, kRelu>(in, out, n); return true;
    default: return false;
  }
}

// rn satfinite quantize of n f32/f16/bf16 elements into b4x16_p64 (e2m1) or
// b6x16_p32 (e2m3, e3m2) with zero padding. Returns false (nothing written)
// for combinations without a fused kernel.
bool EncodePaddedFused(Format from, Format elem, bool relu, const uint8_t* HWY_RESTRICT in,
                       uint8_t* HWY_RESTRICT out, size_t n) {
  switch (from) {
    case Format::kF32:
      return relu ? EncodePaddedFusedFrom<internal::SrcKind::kF32, true>(elem, in, out, n)
                  : EncodePaddedFusedFrom<internal::SrcKind::kF32, false>(elem, in, out, n);
    case Format::kF16:
      return relu ? EncodePaddedFusedFrom<internal::SrcKind::kF16, true>(elem, in, out, n)
                  : EncodePaddedFusedFrom<internal::SrcKind::kF16, false>(elem, in, out, n);
    case Format::kBF16:
      return relu ? EncodePaddedFusedFrom<internal::SrcKind::kBF16, true>(elem, in, out, n)
                  : EncodePaddedFusedFrom<internal::SrcKind::kBF16, false>(elem, in, out, n);
    default:
      return false;
  }
}

#endif  // HWY_TARGET == HWY_SCALAR

// e2m1 groups of 16 codes (8 bytes, `group_bytes` apart: dense4 8,
// b4x16_p64 16) -> 16 f32 each. On AVX3_DL one broadcast load, vpmultishiftqb
// (byte 4j of the vector takes bits [4j + 7 : 4j] of the group: code j in
// bits [3:0]) and vpermps of the 16 values (index bits [3:0]). Returns false
// (nothing written) on other targets.
bool DecodeE2M1F32Groups(const uint8_t* HWY_RESTRICT in, size_t group_bytes,
                         uint8_t* HWY_RESTRICT out, size_t groups) {
#if HWY_TARGET <= HWY_AVX3_DL
  const hn::Full512<uint32_t> du;
  const __m512 values = _mm512_castsi512_ps(
      FastDecodeNarrow<Format::kE2M1>::ToF32(du, hn::Iota(du, 0)).raw);
  alignas(64) static constexpr uint8_t kShifts[64] = {
      0,  0, 0, 0, 4,  0, 0, 0, 8,  0, 0, 0, 12, 0, 0, 0,  //
      16, 0, 0, 0, 20, 0, 0, 0, 24, 0, 0, 0, 28, 0, 0, 0,  //
      32, 0, 0, 0, 36, 0, 0, 0, 40, 0, 0, 0, 44, 0, 0, 0,  //
      48, 0, 0, 0, 52, 0, 0, 0, 56, 0, 0, 0, 60, 0, 0, 0};
  const __m512i shifts = _mm512_load_si512(kShifts);
  for (size_t g = 0; g < groups; ++g) {
    int64_t q;
    std::memcpy(&q, in + g * group_bytes, 8);
    const __m512i idx =
        _mm512_multishift_epi64_epi8(shifts, _mm512_set1_epi64(q));
    _mm512_storeu_ps(out + 64 * g, _mm512_permutexvar_ps(idx, values));
  }
  return true;
#else
  (void)in;
  (void)group_bytes;
  (void)out;
  (void)groups;
  return false;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_PACK_PACK_INL_H_
