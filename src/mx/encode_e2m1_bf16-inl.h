// Pass 3 of the MX block quantizer (src/mx/quantize-inl.h) for bf16 into
// MXFP4 (e2m1) on AVX3_DL: the codes of bf16 values by VBMI byte-table
// lookups on the bucket of the scaled magnitude, without widening to f32
// (Encode64Bf16: 64 values per lookup); f32 sources enter as their high
// halves plus a flag of their low bits (F32Halves, shared with
// src/mx/encode_fp6_bf16-inl.h), 32 values per lookup (Codes32).
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_ENCODE_E2M1_BF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_ENCODE_E2M1_BF16_INL_H_
#undef MXPACK_SRC_MX_ENCODE_E2M1_BF16_INL_H_
#else
#define MXPACK_SRC_MX_ENCODE_E2M1_BF16_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

#undef MXPACK_HAVE_MX_E2M1_BF16  // per target: this header is re-included
#if HWY_TARGET == HWY_AVX3_DL
#define MXPACK_HAVE_MX_E2M1_BF16 1
// f32 sources of the bf16 table codecs (MxE2m1FromBf16, MxFp6FromBf16):
// 32 f32 values as the codec's bf16 input h, their high halves (bf16
// truncated, u16 lanes in order), and z, the lanes whose f32 bits below
// the codec's bucket (bits 0 .. 15 + shift, shift = the bucket's bf16
// mantissa bits) are all zero. Every bucket is a whole number of bf16
// steps, so truncation keeps each value in its bucket (and h's sign, and
// w's saturation at K, a multiple of 2^7), and an f32 value lies on its
// bucket's lower end (where ties resolve) exactly at z: the table codes of
// (h, z) are those of the f32 value (f32 subnormals too: h is a bf16
// subnormal or +-0, as the codecs' bf16 subnormals). One vpermt2w and two
// vptestmd per 32 values.
struct F32Halves {
  __m512i high_idx;  // vpermt2w: u16 lane j <- the high half of f32 lane j
  __m512i low;       // the f32 bits below the bucket

  static HWY_INLINE F32Halves Make(int shift) {
    struct Table {
      alignas(64) uint16_t v[32];
    };
    static constexpr Table kHigh = [] {
      Table t{};
      for (int j = 0; j < 32; ++j) t.v[j] = static_cast<uint16_t>(2 * j + 1);
      return t;
    }();
    return {_mm512_load_si512(kHigh.v),
            _mm512_set1_epi32(static_cast<int>((1u << (16 + shift)) - 1))};
  }
};

// encode_e2m1_rn_satfinite(x * 2^-X) of bf16 x in a block of scale 2^X
// (docs/semantics.md section 5), for finite x whose block has
// |x| * 2^-X < 8 = 2^(emax + 1) (every MX scale mode guarantees it) and
// X >= kMinX. Method, per u16 lane (one bf16 value h, magnitude a = E << 7
// | M):
//  * w = a -sat K with K = (X + 124) << 7 >= 0 (one unsigned saturating
//    subtract): for a >= K, w = E' << 7 | M with E' = E - X - 124, the
//    binade of y = x * 2^-X counted from 2^-3, so w < 6 << 7 (y < 8);
//    smaller a (y < 2^-3) give 0, whose code is 0. bf16 subnormals
//    (E = 0) give 0 for K >= 128; at K = 0 (X = -124) w = M < 128 lies in
//    E' = 0, code 0 as well (y = M * 2^-9 < 2^-2).
//  * Every e2m1 decision point of y (the midpoints 0.25, 0.75, 1.25, 1.75,
//    2.5, 3.5, 5, and the grid points) has M % 32 == 0, so the code depends
//    only on the bucket w >> 5 = E' * 4 + M / 32 and on whether y lies
//    exactly on the bucket's lower end (z: M % 32 == 0, where a tie
//    resolves to the even code), e.g. bucket 13 (y in [1.25, 1.5)): code 2
//    at z (1.25 ties to 1.0), else 3 (1.5).
//  * index = (w >> 5) << 1 | s, + 64 at z (one VBMI2 funnel shift brings
//    the sign bit s in); one vpermi2b of the 128-byte table gives the code
//    | s << 3 in the low byte of the lane, 0 in the high byte (index 0).
// 7 operations per 32 elements (RangeEncodeF32 on the widened values: 16
// with the unpacks).
struct MxE2m1FromBf16 {
  // Scale exponents below this make K negative; those chunks take another
  // path.
  static constexpr int kMinX = -124;

  // The u16 K of scale exponent X, in both halves of a u32 (one broadcast
  // per block).
  static HWY_INLINE __m512i K2(__m512i x) {
    const __m512i k = _mm512_slli_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(124)), 7);
    return _mm512_or_si512(k, _mm512_slli_epi32(k, 16));
  }

  // Encode64Bf16's K2 (kMinX and K2, as FastTail reads them): 2 (K + 1) =
  // (X + 124) << 8 | 2 in both halves (X <= 127: below 2^16).
  struct Bf16K {
    static constexpr int kMinX = -124;
    static HWY_INLINE __m512i K2(__m512i x) {
      const __m512i k = _mm512_or_si512(
          _mm512_slli_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(124)), 8),
          _mm512_set1_epi32(2));
      return _mm512_or_si512(k, _mm512_slli_epi32(k, 16));
    }
  };

  // Code at the inside of bucket b (y strictly above its lower end) and at
  // its lower end (z), per binade E' = b / 4 of y:
  //   E' 0 [1/8, 1/4):  0                       0
  //   E' 1 [1/4, 1/2):  1 1 1 1                 0 1 1 1   (0.25 -> 0)
  //   E' 2 [1/2, 1):    1 1 2 2                 1 1 2 2   (0.75 -> 1.0)
  //   E' 3 [1, 2):      2 3 3 4                 2 2 3 4   (1.25 -> 1.0, 1.75 -> 2)
  //   E' 4 [2, 4):      4 5 5 6                 4 4 5 6   (2.5 -> 2, 3.5 -> 4)
  //   E' 5 [4, 8):      6 7 7 7                 6 6 7 7   (5 -> 4; 7.x -> 6)
  static constexpr uint8_t kInside[24] = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2,
                                          2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 7};
  static constexpr uint8_t kAtZ[24] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2,
                                       2, 2, 3, 4, 4, 4, 5, 6, 6, 6, 7, 7};

  // The constants, built once per chunk.
  struct Consts {
    __m512i abs, low5, z, table_lo, table_hi, weights, idx;
    __m512i idx_bits, bf16_lo, bf16_hi, low_bytes, weights8;  // Encode64Bf16
    F32Halves f32;  // f32 sources
  };
  template <bool kPadded>
  static HWY_INLINE Consts Make() {
    struct Table {
      alignas(64) uint8_t v[128];
    };
    // index = bucket << 1 | s, + 64 at z; buckets 24..31 (y >= 8) do not
    // occur.
    static constexpr Table kCodes = [] {
      Table t{};
      for (int i = 0; i < 128; ++i) {
        const int b = (i >> 1) & 31, s = i & 1, z = i >> 6;
        const uint8_t c = b < 24 ? (z ? kAtZ[b] : kInside[b]) : 7;
        t.v[i] = static_cast<uint8_t>(c | s << 3);
      }
      return t;
    }();
    // kPadded: per group g, bytes 0..7 from the u32 lanes 8 (g % 2) .. + 7
    // of vector g / 2, bytes 8..15 zero (Pack's zeroing mask); else
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
    // Encode64Bf16: index = p << 6 | b' << 1 | s (see there): the code of
    // bucket b' inside (p == b' % 2) or at the lower end of bucket b' + 1.
    static constexpr Table kBf16Codes = [] {
      Table t{};
      for (int i = 0; i < 128; ++i) {
        const int b = (i >> 1) & 31, s = i & 1, p = i >> 6;
        // (Buckets from 24 on and the lower end of bucket 24 do not occur.)
        uint8_t c = 7;
        if (p == b % 2 && b < 24) c = kInside[b];
        if (p != b % 2 && b + 1 < 24) c = kAtZ[b + 1];
        t.v[i] = static_cast<uint8_t>(c | s << 3);
      }
      return t;
    }();
    // The low byte of every u16 lane of two vectors, in order.
    static constexpr Table kLowBytes = [] {
      Table t{};
      for (int j = 0; j < 64; ++j) t.v[j] = static_cast<uint8_t>(2 * j);
      return t;
    }();
    Consts k;
    k.idx_bits = _mm512_set1_epi16(0x3E);
    k.bf16_lo = _mm512_load_si512(kBf16Codes.v);
    k.bf16_hi = _mm512_load_si512(kBf16Codes.v + 64);
    k.low_bytes = _mm512_load_si512(kLowBytes.v);
    k.weights8 = _mm512_set1_epi16(0x1001);
    k.abs = _mm512_set1_epi16(0x7FFF);
    k.low5 = _mm512_set1_epi16(0x1F);
    k.z = _mm512_set1_epi16(64);
    k.table_lo = _mm512_load_si512(kCodes.v);
    k.table_hi = _mm512_load_si512(kCodes.v + 64);
    k.weights = _mm512_set1_epi32(0x00100001);
    k.idx = _mm512_load_si512(kIdx.v);
    k.f32 = F32Halves::Make(5);
    return k;
  }

  // The codes (u16 lanes: code | s << 3) of the 32 bf16 values h of one
  // block; k2: K2(X) of its scale; z: the lanes at their bucket's lower
  // end (bf16: M % 32 == 0; f32 sources: F32Halves).
  static HWY_INLINE __m512i Codes32(__m512i h, __mmask32 z, __m512i k2, const Consts& k) {
    const __m512i w = _mm512_subs_epu16(_mm512_and_si512(h, k.abs), k2);
    // (w >> 5) << 1 | s: w >> 5 < 24, so the high byte stays 0.
    __m512i idx = _mm512_shldi_epi16(_mm512_srli_epi16(w, 5), h, 1);
    idx = _mm512_mask_add_epi16(idx, z, idx, k.z);
    return _mm512_permutex2var_epi8(k.table_lo, idx, k.table_hi);
  }
  static HWY_INLINE __m512i Codes32(__m512i h, __m512i k2, const Consts& k) {
    return Codes32(h, _mm512_testn_epi16_mask(h, k.low5), k2, k);
  }

  // The 64 codes of Codes32's results c0, c1 (two blocks) as stored: b4x16_p64
  // groups (kPadded) or one code per byte.
  template <bool kPadded>
  static HWY_INLINE __m512i Pack(__m512i c0, __m512i c1, const Consts& k) {
    if constexpr (kPadded) {
      // u32 lane = even code + 16 * odd code (one pmaddwd), then the groups.
      c0 = _mm512_madd_epi16(c0, k.weights);
      c1 = _mm512_madd_epi16(c1, k.weights);
      return _mm512_maskz_permutex2var_epi8(0x00FF00FF00FF00FFull, c0, k.idx, c1);
    } else {
      return _mm512_permutex2var_epi8(c0, k.idx, c1);
    }
  }

  // The 64 codes of two blocks of bf16 values at p as stored (see Pack);
  // k2a, k2b: Bf16K::K2(X) of their scales, 2 (K + 1). The lower end of a
  // bucket is told apart without z: with w1 = a -sat (K + 1) (= w - 1 for w
  // >= 1) and b' = w1 >> 5, the pair (b', p), p = bit 5 of a (= bit 5 of
  // w, K being a multiple of 128: the parity of the bucket b = w >> 5), has
  // p == b' % 2 inside bucket b' (w in (32 b', 32 b' + 32), and w = 0: y =
  // 2^-3 or below, code 0 in either bucket 0 entry) and p != b' % 2 at the
  // lower end w = 32 (b' + 1) of the next bucket. The index i = p << 6 |
  // b' << 1 | s comes from h rotated left by one bit, r = a << 1 | s (s in
  // bit 0, p in bit 6), which also serves as the magnitude (no AND with
  // 0x7FFF):
  //   r  = rotl(h, 1)                  [one VBMI2 funnel shift]
  //   w2 = r -sat 2 (K + 1)            [2 w1 + s, or 0 for a < K + 1]
  //   i  = (w2 >> 5) & 0x3E | r & 0x41 [b' in bits 1..5; one ternlog]
  // (w2 = 0 is w1 = 0, whatever s: bits 0 and 6 come from r.) The u16
  // indices of both blocks go to bytes (one vpermt2b), one vpermi2b of a
  // 128-byte table (bit 7 of the index unused) gives the 64 codes | s << 3,
  // and kPadded: one pmaddubsw (even + 16 * odd code) and one vpackuswb
  // with zeros give the b4x16_p64 groups (128-bit lane L: elements 16 L ..
  // 16 L + 15). 12 operations per 64 elements (padded).
  template <bool kPadded>
  static HWY_INLINE __m512i Encode64Bf16(const uint8_t* HWY_RESTRICT p, __m512i k2a, __m512i k2b,
                                         const Consts& k) {
    const auto index = [&k](__m512i h, __m512i k2) {
      const __m512i r = _mm512_shldi_epi16(h, h, 1);
      const __m512i w2 = _mm512_subs_epu16(r, k2);
      // (k.idx_bits ? w2 >> 5 : r) per bit.
      return _mm512_ternarylogic_epi32(_mm512_srli_epi16(w2, 5), r, k.idx_bits, 0xE4);
    };
    __m512i ha = _mm512_loadu_si512(p);
    __m512i hb = _mm512_loadu_si512(p + 64);
    // One load per block: GCC would otherwise fold the load into each use.
    asm("" : "+v"(ha), "+v"(hb));  // NOLINT(hicpp-no-assembler)
    const __m512i i8 = _mm512_permutex2var_epi8(index(ha, k2a), k.low_bytes, index(hb, k2b));
    const __m512i c = _mm512_permutex2var_epi8(k.bf16_lo, i8, k.bf16_hi);
    if constexpr (kPadded) {
      return _mm512_packus_epi16(_mm512_maddubs_epi16(c, k.weights8), _mm512_setzero_si512());
    } else {
      return c;
    }
  }
};
#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_ENCODE_E2M1_BF16_INL_H_
