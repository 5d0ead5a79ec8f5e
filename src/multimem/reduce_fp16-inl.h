// AVX512-FP16 kernels of the fp8 .acc::f16 and NCCL fp8 reduction models:
// native f16 adds in f16 lanes (docs/semantics.md section 4). Compiled into
// the AVX3 targets when the compiler has the intrinsics; used on CPUs with
// AVX512-FP16. Included by src/multimem/reduce-inl.h.

// Per-target include guard (Highway convention).
#if defined(MXPACK_SRC_MULTIMEM_REDUCE_FP16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MULTIMEM_REDUCE_FP16_INL_H_
#undef MXPACK_SRC_MULTIMEM_REDUCE_FP16_INL_H_
#else
#define MXPACK_SRC_MULTIMEM_REDUCE_FP16_INL_H_
#endif

#include "src/multimem/reduce_core-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef MXPACK_REDUCE_HAVE_FP16_KERNEL
#if MXPACK_FP16_INTRIN && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define MXPACK_REDUCE_HAVE_FP16_KERNEL 1
// ---------------------------------------------------------------------------
// AVX512-FP16 kernels of the fp8 acc::f16 models (kSequential, kPairwiseTree)
// and NCCL's fp8 path: 64 elements per chunk in two vectors of 32 f16 lanes,
// each add one IEEE f16 add (vaddph: RNE, subnormals kept, overflow to Inf;
// mxpack never sets MXCSR.FTZ/DAZ), i.e. exactly the model's step.
//
// Lane layout: a chunk's 64 codes are read as 32 16-bit words w = c[2i+1] <<
// 8 | c[2i]; the "even" vector holds the elements 2i, the "odd" vector the
// elements 2i+1, each as f16 bits, so decoding needs no shuffles and the
// encode writes both bytes of a word.
//
// Domains (f16 bits per element):
//  * e5m2: the code is the top byte of the f16 with the same value, c << 8
//    (Inf and NaN included):  odd = w & 0xFF00,  even = w << 8.
//  * e4m3: the f16 of value * 2^-8,  s 0 m6..m0 0000000  (m = exponent and
//    mantissa of the code): the e4m3 exponent field becomes the f16 exponent
//    field (bias 7 vs 15) and e4m3 subnormals become f16 subnormals. Every
//    model value is a multiple of 2^-9 below 2^16 (kE4M3FiniteSources), so
//    the scaled values are multiples of 2^-17 below 2^8: where f16 is
//    subnormal (scaled < 2^-14) both the scaled and the unscaled sums are
//    exact, elsewhere both are normal with the same 11-bit rounding. Hence
//    the scaled f16 add equals the scaled acc::f16 add.
//      odd  = (w >>arith 1) & 0xBF80     s s m6..m0 x -> s 0 m6..m0 0000000
//      even = (128 * int8(c[2i])) & 0xBF80   (pmaddubsw: s s m6..m0 0000000)
//    The NaN codes 0x7F / 0xFF are not NaN in this domain: chunks holding
//    them (signed byte max 0x7F or unsigned byte max 0xFF) run the scalar
//    reference.
// ---------------------------------------------------------------------------

MXPACK_FP16_INLINE __m512i F16Add(__m512i a, __m512i b) {
  return _mm512_castph_si512(
      _mm512_add_ph(_mm512_castsi512_ph(a), _mm512_castsi512_ph(b)));
}

// 64 fp8 codes -> even / odd vectors of f16 bits; for e4m3 folds the signed
// and unsigned byte maxima into *smax / *umax (NaN-code detection).
template <Elem E>
MXPACK_FP16_INLINE void F16Decode(__m512i w, __m512i* even, __m512i* odd, __m512i* smax,
                                  __m512i* umax) {
  if constexpr (E == Elem::kE5M2) {
    (void)smax;
    (void)umax;
    *odd = _mm512_and_si512(w, _mm512_set1_epi16(static_cast<short>(0xFF00)));
    // w << 8 as a byte shuffle (port 5; the shift port also runs vaddph):
    // byte 2i+1 <- byte 2i, byte 2i <- 0 (index bit 7 zeroes).
    const long long lo = 0x0680048002800080LL, hi = 0x0E800C800A800880LL;  // per 128 bits
    *even = _mm512_shuffle_epi8(w, _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo));
  } else {
    *smax = _mm512_max_epi8(*smax, w);
    *umax = _mm512_max_epu8(*umax, w);
    const __m512i mask = _mm512_set1_epi16(static_cast<short>(0xBF80));
    *odd = _mm512_and_si512(_mm512_srai_epi16(w, 1), mask);
    // pmaddubsw(u8 a, s8 b) per word: a.lo * b.lo + a.hi * b.hi = 128 * c[2i].
    *even = _mm512_and_si512(_mm512_maddubs_epi16(_mm512_set1_epi16(0x0080), w), mask);
  }
}

template <Elem E>
MXPACK_FP16_INLINE bool F16SawNanCode(__m512i smax, __m512i umax) {
  if constexpr (E == Elem::kE4M3) {
    return (_mm512_cmpeq_epi8_mask(smax, _mm512_set1_epi8(0x7F)) |
            _mm512_cmpeq_epi8_mask(umax, _mm512_set1_epi8(static_cast<char>(0xFF)))) != 0;
  } else {
    (void)smax;
    (void)umax;
    return false;
  }
}

// RNE of f16 lanes (domain above) to the fp8 magnitude code, unsaturated, in
// 16-bit integer lanes:  a = |h|,  t = a + half - 1 + lsb,  code = t >> drop
// with drop = 7 (e4m3: 10 - 3 mantissa bits) or 8 (e5m2). The fp8 exponent
// field is the f16 one, and fp8 subnormals sit on the f16 grid in the same
// place, so one shift serves both. Returns t (the caller shifts).
template <Elem E>
MXPACK_FP16_INLINE __m512i F16RoundBiased(__m512i a) {
  constexpr int kDrop = E == Elem::kE4M3 ? 7 : 8;
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi16(a, kDrop), _mm512_set1_epi16(1));
  return _mm512_add_epi16(_mm512_add_epi16(a, _mm512_set1_epi16((1 << (kDrop - 1)) - 1)), lsb);
}

// Final encode of the even / odd f16 vectors to 64 fp8 codes: RNE satfinite.
// Magnitudes are rounded in 16-bit lanes and merged into words (even -> low
// byte, odd -> high byte); saturation, NaN and sign are applied to bytes:
//   e4m3: every caller's sums are finite, |h| < 0x5C00 (|sum| < 2^16 scaled
//         by 2^-8; kE4M3FiniteSources, NCCL's per-step rounding), so there
//         is no NaN to override and no absolute value to take: one vpavgw
//           t = avg(h, 62 | lsb) = (h + 63 + lsb) >> 1,  lsb = bit 7 of h,
//         keeps the sign at bit 14 and the biased magnitude below it
//         (a + 64 < 2^15), so t >> 6 is code | s << 8 and t << 2 has the
//         code in bits 8..15 (13 operations per 64 elements; rounding
//         absolute values as the e5m2 path below does took 19);
//   e5m2: NaN (a NaN code, or Inf - Inf) -> 0x7F; Inf and NaN both round
//         to 0x7C..0x7F, so NaN lanes are forced to 0xFF first and the
//         magnitudes 0xFF told apart by one byte compare.
template <Elem E>
MXPACK_FP16_INLINE __m512i F16EncodeFp8(__m512i even, __m512i odd) {
  // Signs: odd's bit 15 is in place, even's bit 15 moves to bit 7.
  // sign = 0x8000 ? odd : even >> 8 (0xE4 = C ? A : B), then the code |
  // (sign & 0x8080) (0xF8 = A | (B & C)).
  const auto with_sign = [&](__m512i code) MXPACK_FP16_TARGET {
    const __m512i sign = _mm512_ternarylogic_epi32(
        odd, _mm512_srli_epi16(even, 8), _mm512_set1_epi16(static_cast<short>(0x8000)), 0xE4);
    return _mm512_ternarylogic_epi32(code, sign, _mm512_set1_epi16(static_cast<short>(0x8080)),
                                     0xF8);
  };
  const __m512i max_code = _mm512_set1_epi8(static_cast<char>(Fp8<E>::kMaxCode));
  const __m512i low_bytes = _mm512_set1_epi16(0x00FF);
  if constexpr (E == Elem::kE4M3) {
    const __m512i one = _mm512_set1_epi16(1);
    const __m512i bias = _mm512_set1_epi16(62);
    // 62 | (h >> 7 & 1)  (0xF8 with A = 62).
    const __m512i be = _mm512_ternarylogic_epi32(bias, _mm512_srli_epi16(even, 7), one, 0xF8);
    const __m512i bo = _mm512_ternarylogic_epi32(bias, _mm512_srli_epi16(odd, 7), one, 0xF8);
    const __m512i te = _mm512_srli_epi16(_mm512_avg_epu16(even, be), 6);  // code | s << 8
    const __m512i to = _mm512_slli_epi16(_mm512_avg_epu16(odd, bo), 2);   // code << 8 + junk
    // Word = (te & 0x00FF) | (to & 0xFF00)  (0xE4 with C = 0x00FF).
    const __m512i mag = _mm512_ternarylogic_epi32(te, to, low_bytes, 0xE4);
    return with_sign(_mm512_min_epu8(mag, max_code));
  } else {
    const __m512i abs_mask = _mm512_set1_epi16(0x7FFF);
    const __m512i ae = _mm512_and_si512(even, abs_mask);
    const __m512i ao = _mm512_and_si512(odd, abs_mask);
    const __m512i nan_code = _mm512_set1_epi16(0x7C00);
    __m512i te = _mm512_srli_epi16(F16RoundBiased<E>(ae), 8);  // 0 .. 0xFF
    __m512i to = F16RoundBiased<E>(ao);                        // code << 8 + junk
    te = _mm512_mask_mov_epi16(te, _mm512_cmpgt_epu16_mask(ae, nan_code), _mm512_set1_epi16(0xFF));
    to = _mm512_mask_mov_epi16(to, _mm512_cmpgt_epu16_mask(ao, nan_code),
                               _mm512_set1_epi16(static_cast<short>(0xFF00)));
    const __m512i mag = _mm512_ternarylogic_epi32(te, to, low_bytes, 0xE4);
    const __mmask64 finite = _mm512_cmplt_epu8_mask(mag, _mm512_set1_epi8(static_cast<char>(0xFF)));
    // NaN -> 0x7F whatever its sign.
    return _mm512_mask_mov_epi8(_mm512_set1_epi8(0x7F), finite,
                                with_sign(_mm512_min_epu8(mag, max_code)));
  }
}

// NCCL step rounding: the f16 sum rounded RNE satfinite to the fp8 grid, kept
// as f16 bits (NaN stays NaN).
template <Elem E>
MXPACK_FP16_INLINE __m512i F16RoundToFp8(__m512i h) {
  constexpr int kDrop = E == Elem::kE4M3 ? 7 : 8;
  const __m512i a = _mm512_and_si512(h, _mm512_set1_epi16(0x7FFF));
  __m512i r = _mm512_srli_epi16(F16RoundBiased<E>(a), kDrop);
  r = _mm512_min_epu16(r, _mm512_set1_epi16(static_cast<short>(Fp8<E>::kMaxCode)));
  r = _mm512_slli_epi16(r, kDrop);
  // r | (h & 0x8000)  (ternary-logic 0xF8 = A | (B & C))
  r = _mm512_ternarylogic_epi32(r, h, _mm512_set1_epi16(static_cast<short>(0x8000)), 0xF8);
  const __mmask32 nan = _mm512_cmpgt_epu16_mask(a, _mm512_set1_epi16(0x7C00));
  return _mm512_mask_mov_epi16(r, nan, h);
}

template <Elem E, Step S>
MXPACK_FP16_INLINE __m512i F16Step(__m512i a, __m512i b) {
  const __m512i s = F16Add(a, b);
  if constexpr (S == Step::kF16Fp8) {
    return F16RoundToFp8<E>(s);
  } else {
    return s;
  }
}

inline constexpr size_t kF16PrefetchBytes = 1024;

// kSequential over kK consecutive chunks of 64 elements at `pos`; false if
// they hold e4m3 NaN codes (nothing written). Each source's kK lines are read
// back to back and prefetched kF16PrefetchBytes ahead: with 8 sources the
// hardware prefetchers alone leave the L2-resident loop waiting on loads
// (2 or 8 chunks and half or twice the distance do no better).
template <Elem E, Step S, size_t kK>
MXPACK_FP16_INLINE bool F16SeqChunks(const uint8_t* const* s, size_t nsrc, size_t pos,
                                     uint8_t* o) {
  __m512i smax = _mm512_set1_epi8(-128), umax = _mm512_setzero_si512();
  __m512i even[kK], odd[kK];
  const uint8_t* p = s[0] + pos;
  for (size_t j = 0; j < kK; ++j) {
    _mm_prefetch(reinterpret_cast<const char*>(p + kF16PrefetchBytes + 64 * j), _MM_HINT_T0);
    F16Decode<E>(_mm512_loadu_si512(p + 64 * j), &even[j], &odd[j], &smax, &umax);
  }
  for (size_t r = 1; r < nsrc; ++r) {
    p = s[r] + pos;
    for (size_t j = 0; j < kK; ++j) {
      __m512i e2, o2;
      _mm_prefetch(reinterpret_cast<const char*>(p + kF16PrefetchBytes + 64 * j), _MM_HINT_T0);
      F16Decode<E>(_mm512_loadu_si512(p + 64 * j), &e2, &o2, &smax, &umax);
      even[j] = F16Step<E, S>(even[j], e2);
      odd[j] = F16Step<E, S>(odd[j], o2);
    }
  }
  if (F16SawNanCode<E>(smax, umax)) return false;
  for (size_t j = 0; j < kK; ++j) {
    _mm512_storeu_si512(o + pos + 64 * j, F16EncodeFp8<E>(even[j], odd[j]));
  }
  return true;
}

// One chunk of 64 elements at element `pos`; false if it holds e4m3 NaN
// codes (nothing written). `scratch` holds 2 * nsrc vectors (tree only).
template <Elem E, Step S, bool kTree>
MXPACK_FP16_INLINE bool F16Chunk(const uint8_t* const* s, size_t nsrc, size_t pos,
                                 uint8_t* o, __m512i* scratch) {
  if constexpr (!kTree) {
    (void)scratch;
    return F16SeqChunks<E, S, 1>(s, nsrc, pos, o);
  } else {
    __m512i smax = _mm512_set1_epi8(-128), umax = _mm512_setzero_si512();
    for (size_t r = 0; r < nsrc; ++r) {
      F16Decode<E>(_mm512_loadu_si512(s[r] + pos), &scratch[2 * r], &scratch[2 * r + 1],
                   &smax, &umax);
    }
    size_t cnt = nsrc;
    while (cnt > 1) {
      for (size_t k = 0; k < cnt / 2; ++k) {
        scratch[2 * k] = F16Step<E, S>(scratch[4 * k], scratch[4 * k + 2]);
        scratch[2 * k + 1] = F16Step<E, S>(scratch[4 * k + 1], scratch[4 * k + 3]);
      }
      if (cnt % 2) {
        scratch[cnt - 1] = scratch[2 * (cnt - 1)];
        scratch[cnt] = scratch[2 * (cnt - 1) + 1];
      }
      cnt = (cnt + 1) / 2;
    }
    if (F16SawNanCode<E>(smax, umax)) return false;
    _mm512_storeu_si512(o + pos, F16EncodeFp8<E>(scratch[0], scratch[1]));
    return true;
  }
}

// Reduces the whole chunks below `end`; appends the positions of chunks it
// could not do (e4m3 NaN codes) to *fallback.
template <Elem E, Step S, bool kTree>
MXPACK_FP16_TARGET void F16Range(const uint8_t* const* s, size_t nsrc, uint8_t* o,
                                 size_t end, __m512i* scratch, std::vector<size_t>* fallback) {
  size_t pos = 0;
  if constexpr (!kTree) {
    constexpr size_t kK = 4;  // 2 and 8 are no faster
    for (; pos + 64 * kK <= end; pos += 64 * kK) {
      if (!F16SeqChunks<E, S, kK>(s, nsrc, pos, o)) {
        for (size_t j = 0; j < kK; ++j) fallback->push_back(pos + 64 * j);
      }
    }
  }
  for (; pos < end; pos += 64) {
    if (!F16Chunk<E, S, kTree>(s, nsrc, pos, o, scratch)) fallback->push_back(pos);
  }
}

template <Elem E, Step S, bool kTree>
void F16Loop(const ReduceSpec& spec, const uint8_t* const* src, size_t nsrc, uint8_t* out,
             size_t n) {
  auto scratch = hwy::AllocateAligned<__m512i>(kTree ? 2 * nsrc : 1);
  __m512i* sc = scratch.get();
  std::vector<size_t> fallback;
  std::vector<uint64_t> codes(nsrc);
  ForEachChunkRange<1>(src, nsrc, out, n, 64,
                       [&](const uint8_t* const* s, uint8_t* o, size_t end) {
    fallback.clear();
    F16Range<E, S, kTree>(s, nsrc, o, end, sc, &fallback);
    for (size_t pos : fallback) {
      for (size_t k = pos; k < pos + 64; ++k) {
        for (size_t r = 0; r < nsrc; ++r) codes[r] = s[r][k];
        o[k] = static_cast<uint8_t>(scalar::ReduceElement(spec, codes));
      }
    }
  });
}

// Whether this CPU runs the AVX512-FP16 kernels (and they are enabled).
inline bool UseF16Kernels() {
  return internal::CpuHasAvx512Fp16() && internal::ReduceNativeF16Enabled();
}
#else
#define MXPACK_REDUCE_HAVE_FP16_KERNEL 0
#endif

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MULTIMEM_REDUCE_FP16_INL_H_
