// Pass 3 of the MX block quantizer (src/mx/quantize-inl.h) for bf16 into
// MXFP6 (e2m3, e3m2) on AVX3_DL: the codes of bf16 values by VBMI
// byte-table lookups on the bucket of the scaled magnitude, without
// widening to f32 (Encode64Bf16: 64 values per lookup; f32 sources, as in
// src/mx/encode_e2m1_bf16-inl.h: Codes32, 32 per lookup).
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_ENCODE_FP6_BF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_ENCODE_FP6_BF16_INL_H_
#undef MXPACK_SRC_MX_ENCODE_FP6_BF16_INL_H_
#else
#define MXPACK_SRC_MX_ENCODE_FP6_BF16_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "src/mx/encode_e2m1_bf16-inl.h"  // F32Halves
#include "mxpack/format.h"
#include "src/format/encode_rn-inl.h"  // FastFormatOf

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

#undef MXPACK_HAVE_MX_FP6_BF16  // per target: this header is re-included
#if HWY_TARGET == HWY_AVX3_DL
#define MXPACK_HAVE_MX_FP6_BF16 1
// encode_rn_satfinite(x * 2^-X) into kElem (e2m3 or e3m2) of bf16 x in a
// block of scale 2^X (docs/semantics.md section 5), for finite x whose
// block has |x| * 2^-X < 2^(emax + 1) (every MX scale mode guarantees it)
// and X >= kMinX. As MxE2m1FromBf16 (src/mx/encode_e2m1_bf16-inl.h), per
// u16 lane (bf16 h, magnitude a = E << 7 | M), with B = 2^-(bias + man + 1)
// (half the smallest subnormal: e2m3 2^-5, e3m2 2^-6):
//  * w = a -sat K, K = (X + kBase) << 7 >= 0 (kBase = 127 + log2 B): w =
//    E' << 7 | M with E' = E - X - kBase the binade of y = x * 2^-X counted
//    from B (w < (emax + bias + man + 2) << 7), or 0 for y < B; bf16
//    subnormals give 0 (K >= 128) or, at K = 0, w = M in E' = 0, y =
//    M * 2^-133 * 2^-kMinX < 2B: code 0 either way, as for every y in
//    E' = 0 ([B, 2B), below the first midpoint 2B).
//  * Every decision point of y (the grid and its midpoints) has
//    M % 2^kShift == 0 (kShift = 6 - man), so the code depends on the
//    bucket w >> kShift = E' * 2^(man + 1) + M >> kShift (< 128: e2m3 8
//    binades of 16, e3m2 11 of 8) and on z (M % 2^kShift == 0: y on the
//    bucket's lower end, where ties resolve to even).
//  * Two vpermi2b of 128-byte tables (inside / at z) and one byte blend by
//    z give the magnitude code in the low byte (0 in the high byte: index
//    0); one ternary-logic op merges the sign into bit 5.
// 9 operations per 32 elements.
template <Format kElem>
struct MxFp6FromBf16 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kElem);
  static_assert(kT.bits == 6 && kT.has_sign, "MXFP6 elements");
  static constexpr int kMan = kT.man_bits;
  static constexpr int kBias = kT.bias;
  static constexpr int kBase = 127 - kBias - kMan - 1;
  static constexpr int kShift = 6 - kMan;
  static constexpr int kEmax = static_cast<int>(kT.max_code >> kMan) - kBias;  // 2, 4
  static constexpr int kBuckets = (kEmax + kBias + kMan + 2) << (kMan + 1);
  static_assert(kBuckets <= 128, "one 128-byte table per kind");
  // Scale exponents below this make K negative; those chunks take another
  // path.
  static constexpr int kMinX = -kBase;

  // The u16 K of scale exponent X, in both halves of a u32.
  static HWY_INLINE __m512i K2(__m512i x) {
    const __m512i k = _mm512_slli_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(kBase)), 7);
    return _mm512_or_si512(k, _mm512_slli_epi32(k, 16));
  }

  // rn-even magnitude code (satfinite) of y = v * B / 256, v an integer.
  static constexpr int CodeOf(int64_t v) {
    // Value of code c = e << man | m in units of B / 256: m, or (2^man + m)
    // << (e - 1), times 2^(1 - bias - man) / (B / 256) = 2^10.
    int best = 0;
    int64_t best_d = v;  // |v - value(0)|
    for (int c = 1; c < 32; ++c) {
      const int e = c >> kMan, m = c & ((1 << kMan) - 1);
      const int64_t val =
          (e == 0 ? int64_t{m} : int64_t{(1 << kMan) + m} << (e - 1)) * 1024;
      const int64_t d = v > val ? v - val : val - v;
      if (d < best_d || (d == best_d && c % 2 == 0)) {
        best = c;
        best_d = d;
      }
    }
    return best;  // past max the nearest is 31 (satfinite)
  }

  // Encode64Bf16's K2 (kMinX and K2, as FastTail reads them): K2 itself.
  using Bf16K = MxFp6FromBf16;

  struct Consts {
    __m512i abs, low, sign, inside_lo, inside_hi, at_z_lo, at_z_hi, weights, idx;
    __m512i low_bytes, sign8, weights8, weights16, idx32;  // Encode64Bf16
    F32Halves f32;  // f32 sources
  };
  template <bool kPadded>
  static HWY_INLINE Consts Make() {
    struct Table {
      alignas(64) uint8_t v[128];
    };
    // y * 256 / B = 2 (128 + M) << E' at the bucket's lower end (M = (b %
    // 2^(man + 1)) << kShift, E' = b >> (man + 1)), and that plus half a
    // bf16 step inside it. (Buckets from kBuckets on do not occur.)
    static constexpr Table kInside = [] {
      Table t{};
      for (int b = 0; b < kBuckets; ++b) {
        const int m = (b & ((2 << kMan) - 1)) << kShift;
        t.v[b] = static_cast<uint8_t>(CodeOf(int64_t{2 * (128 + m) + 1} << (b >> (kMan + 1))));
      }
      return t;
    }();
    static constexpr Table kAtZ = [] {
      Table t{};
      for (int b = 0; b < kBuckets; ++b) {
        const int m = (b & ((2 << kMan) - 1)) << kShift;
        t.v[b] = static_cast<uint8_t>(CodeOf(int64_t{2 * (128 + m)} << (b >> (kMan + 1))));
      }
      return t;
    }();
    // kPadded (b6x16_p32): per group g of 16 elements, the 12 low bytes of
    // the u64 lanes 2 (g % 2) .. + 1 ... (three bytes per u64) of vector
    // g / 2, bytes 12..15 zero (the zeroing mask); else the low byte of
    // every u16 lane.
    static constexpr Table kIdx = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) {
        const int g = j / 16, m = j % 16;
        t.v[j] = static_cast<uint8_t>(
            !kPadded ? 2 * j : (m < 12 ? 64 * (g / 2) + 8 * (4 * (g % 2) + m / 3) + m % 3 : 0));
      }
      return t;
    }();
    // Encode64Bf16: the low byte of every u16 lane of two vectors, in order.
    static constexpr Table kLowBytes = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) t.v[j] = static_cast<uint8_t>(2 * j);
      return t;
    }();
    // Encode64Bf16, kPadded: per group g of 16 elements, the three low
    // bytes of u32 lanes 4 g .. 4 g + 3 (four codes each), bytes 12..15
    // zero (the zeroing mask); else unused.
    static constexpr Table kIdx32 = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) {
        const int g = j / 16, m = j % 16;
        t.v[j] = static_cast<uint8_t>(m < 12 ? 4 * (4 * g + m / 3) + m % 3 : 0);
      }
      return t;
    }();
    Consts k;
    k.low_bytes = _mm512_load_si512(kLowBytes.v);
    k.sign8 = _mm512_set1_epi8(0x20);
    k.weights8 = _mm512_set1_epi16(0x4001);
    k.weights16 = _mm512_set1_epi32(0x10000001);
    k.idx32 = _mm512_load_si512(kIdx32.v);
    k.abs = _mm512_set1_epi16(0x7FFF);
    k.low = _mm512_set1_epi16((1 << kShift) - 1);
    k.sign = _mm512_set1_epi16(0x20);
    k.inside_lo = _mm512_load_si512(kInside.v);
    k.inside_hi = _mm512_load_si512(kInside.v + 64);
    k.at_z_lo = _mm512_load_si512(kAtZ.v);
    k.at_z_hi = _mm512_load_si512(kAtZ.v + 64);
    k.weights = _mm512_set1_epi32(0x00400001);
    k.idx = _mm512_load_si512(kIdx.v);
    k.f32 = F32Halves::Make(kShift);
    return k;
  }

  // The codes (u16 lanes: s << 5 | magnitude code) of the 32 bf16 values h
  // of one block; k2: K2(X) of its scale; z: the lanes at their bucket's
  // lower end (bf16: M % 2^kShift == 0; f32 sources: F32Halves).
  static HWY_INLINE __m512i Codes32(__m512i h, __mmask32 z, __m512i k2, const Consts& k) {
    const __m512i w = _mm512_subs_epu16(_mm512_and_si512(h, k.abs), k2);
    const __m512i idx = _mm512_srli_epi16(w, kShift);  // < 128: the high byte stays 0
    // Both tables read entry 0 (code 0) in the high bytes.
    const __m512i c = _mm512_mask_mov_epi16(_mm512_permutex2var_epi8(k.inside_lo, idx, k.inside_hi),
                                            z, _mm512_permutex2var_epi8(k.at_z_lo, idx, k.at_z_hi));
    // s from bit 15 to bit 5: c | (h >> 10 & 0x20).
    return _mm512_ternarylogic_epi32(c, _mm512_srli_epi16(h, 10), k.sign, 0xF8);
  }
  static HWY_INLINE __m512i Codes32(__m512i h, __m512i k2, const Consts& k) {
    return Codes32(h, _mm512_testn_epi16_mask(h, k.low), k2, k);
  }

  // The 64 codes of Codes32's results c0, c1 (two blocks) as stored: b6x16_p32
  // groups (kPadded) or one code per byte.
  template <bool kPadded>
  static HWY_INLINE __m512i Pack(__m512i c0, __m512i c1, const Consts& k) {
    if constexpr (kPadded) {
      // u32 lane = even code + 64 * odd code (12 bits, one pmaddwd); then
      // u64 lane bits 0..23 = low u32 | high u32 << 12 (the high u32's bits
      // 12..31 and the low u32's bits 12..31 are zero), then the groups.
      c0 = _mm512_madd_epi16(c0, k.weights);
      c1 = _mm512_madd_epi16(c1, k.weights);
      c0 = _mm512_or_si512(c0, _mm512_srli_epi64(c0, 20));
      c1 = _mm512_or_si512(c1, _mm512_srli_epi64(c1, 20));
      return _mm512_maskz_permutex2var_epi8(0x0FFF0FFF0FFF0FFFull, c0, k.idx, c1);
    } else {
      return _mm512_permutex2var_epi8(c0, k.idx, c1);
    }
  }

  // The 64 codes of two blocks of bf16 values at p as stored (see Pack);
  // k2a, k2b: K2(X) of their scales. As Codes32, with the bucket indices
  // of both blocks in bytes first (one vpermt2b), so that the two table
  // lookups, the z blend and the sign (a byte add of 0x20 under the sign
  // mask) run once per 64 elements; kPadded: one pmaddubsw (even + 64 *
  // odd code, 12 bits per u16), one pmaddwd (low + 4096 * high u16: four
  // codes in the low 24 bits of a u32) and one vpermb with a zeroing mask
  // give the b6x16_p32 groups. 18 operations per 64 elements (padded).
  template <bool kPadded>
  static HWY_INLINE __m512i Encode64Bf16(const uint8_t* HWY_RESTRICT p, __m512i k2a, __m512i k2b,
                                         const Consts& k) {
    __m512i ha = _mm512_loadu_si512(p);
    __m512i hb = _mm512_loadu_si512(p + 64);
    // One load per block: GCC would otherwise fold the load into each use.
    asm("" : "+v"(ha), "+v"(hb));  // NOLINT(hicpp-no-assembler)
    const auto bucket = [&k](__m512i h, __m512i k2) {
      return _mm512_srli_epi16(_mm512_subs_epu16(_mm512_and_si512(h, k.abs), k2), kShift);
    };
    // Buckets < 128: bytes 0..127 of the tables; lane j of a is element j.
    const __m512i idx = _mm512_permutex2var_epi8(bucket(ha, k2a), k.low_bytes, bucket(hb, k2b));
    const __mmask64 z = _mm512_kunpackd(_mm512_testn_epi16_mask(hb, k.low),
                                        _mm512_testn_epi16_mask(ha, k.low));
    const __mmask64 s = _mm512_kunpackd(_mm512_movepi16_mask(hb), _mm512_movepi16_mask(ha));
    __m512i c = _mm512_mask_blend_epi8(z, _mm512_permutex2var_epi8(k.inside_lo, idx, k.inside_hi),
                                       _mm512_permutex2var_epi8(k.at_z_lo, idx, k.at_z_hi));
    c = _mm512_mask_add_epi8(c, s, c, k.sign8);
    if constexpr (kPadded) {
      const __m512i c2 = _mm512_madd_epi16(_mm512_maddubs_epi16(c, k.weights8), k.weights16);
      return _mm512_maskz_permutexvar_epi8(0x0FFF0FFF0FFF0FFFull, k.idx32, c2);
    } else {
      return c;
    }
  }
};
#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_ENCODE_FP6_BF16_INL_H_
