// Highway kernel of DequantizeMx (docs/semantics.md section 5,
// "Dequantization"): one row of element codes (one per byte) and its block
// scales -> f32, bf16 or f16 in one pass, bit-identical to the scalar path
// of src/mx/mx.cc.
//
// Per block the scale is read once and broadcast; per vector the codes are
// decoded to their exact f32 values (FastDecodeNarrow), multiplied by the
// block scale (MX: e * 2^s, exact or +-Inf; NVFP4: (e * d) exact, then one
// rounding by * t, the scalar path's operation order), NaN canonicalized to
// 0x7FFFFFFF, and either stored or rounded once to bf16 / f16 in integer
// lanes (FastEncodeF32, rn, no saturation: the scalar path's ConvertArray).

// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_DEQUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_DEQUANTIZE_INL_H_
#undef MXPACK_SRC_MX_DEQUANTIZE_INL_H_
#else
#define MXPACK_SRC_MX_DEQUANTIZE_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "src/format/codec-inl.h"  // FastDecodeNarrow
#include "src/format/encode_fast-inl.h"
#include "src/util/lanes-inl.h"  // StoreLanes

// Target-independent arguments: defined once.
#ifndef MXPACK_SRC_MX_DEQUANTIZE_ARGS_
#define MXPACK_SRC_MX_DEQUANTIZE_ARGS_
namespace mxpack::internal {

// NVFP4 into bf16 / f16: the 16 results of each scale code (the general
// step's values of the codes 0..15 under that scale), filled on first use
// within one call (so in the caller's floating-point environment of the
// call, as every path multiplies).
struct Nvfp4HalfTable {
  uint64_t have[2] = {0, 0};
  bool fill_all = false;  // fill every row first (calls with many blocks)
  alignas(32) uint16_t row[128][16];
};

// MX into bf16 / f16 (calls of kMxHalfMinBlocks blocks or more): per scale
// code, the general step's results of the element codes (fp4: the 16 codes,
// twice; fp6: the 64 codes; fp8: the 128 magnitudes, NaN stored as 0xFFFF),
// filled on first use within one call (so in the call's floating-point
// environment). `rows` holds 256 rows of MxHalfTableEntries(bits).
struct MxHalfTable {
  uint8_t ready[256] = {};  // 1: row filled (and the kernel takes the scale)
  uint16_t* rows = nullptr;
};
inline constexpr size_t kMxHalfMinBlocks = 64;
constexpr size_t MxHalfTableEntries(int bits) {
  return bits == 4 ? 32 : (bits == 6 ? 64 : 128);
}

// One row of a validated MX / NVFP4 tensor to dequantize.
struct MxDequantRow {
  // The row's elements: cols_padded codes, one per byte, or (group_bytes
  // != 0, fp4 / fp6 on targets where MxDequantizeReadsPacked) groups of 16
  // codes as dense4 / dense6 bytes, group_bytes apart (dense4: 8,
  // dense6: 12, b4x16_p64 and b6x16_p32: 16).
  const uint8_t* codes;
  size_t group_bytes;
  // Scale byte of block k: scales[(k / 4) * stride4 + k % 4] (linear: 4,
  // tcgen05: 512, from the row's first block).
  const uint8_t* scales;
  size_t stride4;
  const float* scale_lut;  // f32 value of every scale code (256 entries)
  float tensor_scale;      // NVFP4 t (unused for MX)
  size_t cols;
  uint8_t* out;  // cols values of the output format
  Nvfp4HalfTable* nvfp4_half;  // NVFP4 into bf16 / f16, else null
  MxHalfTable* mx_half;        // see MxHalfTable, else null
  // Rows 0..rows-1 of the call: row r's codes, scales and output are at
  // codes + r * code_stride, MxScaleRow(*this, r) and out + r * out_stride.
  size_t rows = 1;
  size_t code_stride = 0, out_stride = 0;
  // Scales: linear rows scale_row_stride apart (scale_tile_stride 0), or
  // tcgen05 tiles of 128 rows scale_tile_stride apart.
  size_t scale_row_stride = 0, scale_tile_stride = 0;
};

// The first scale byte of row r (docs/semantics.md section 5: in a tcgen05
// tile, row r's blocks 0..3 start at (r % 32) * 16 + (r % 128 / 32) * 4).
inline const uint8_t* MxScaleRow(const MxDequantRow& a, size_t r) {
  if (a.scale_tile_stride == 0) return a.scales + r * a.scale_row_stride;
  return a.scales + (r / 128) * a.scale_tile_stride + (r % 32) * 16 +
         (r % 128 / 32) * 4;
}

// Row r of `a` as a one-row MxDequantRow.
inline MxDequantRow MxRowAt(const MxDequantRow& a, size_t r) {
  MxDequantRow b = a;
  b.codes = a.codes + r * a.code_stride;
  b.scales = MxScaleRow(a, r);
  b.out = a.out + r * a.out_stride;
  b.rows = 1;
  return b;
}

}  // namespace mxpack::internal
#endif  // MXPACK_SRC_MX_DEQUANTIZE_ARGS_

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Targets without a fast block path: every block takes the general steps.
struct NoFastBlocks {
  static constexpr bool Takes(float) { return false; }
  void Block(float, const uint8_t*, size_t, uint8_t*) const {}
};
struct NoHalfBlocks {
  static constexpr bool Takes(uint8_t) { return false; }
  void Block(uint8_t, const uint8_t*, size_t, uint8_t*) const {}
};

#undef MXPACK_HAVE_DEQUANT_FAST512  // per target: this header is re-included
#undef MXPACK_HAVE_DEQUANT_TABLE512
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
#define MXPACK_HAVE_DEQUANT_FAST512 1
// AVX-512 blocks, 16 elements per step, decoded by a table or the f16
// conversion, equal to the general step. The scale table holds NaN as
// 0x7FFFFFFF, and x86 returns a product's only NaN operand (quieted), so a
// NaN scale times a non-NaN element is already the canonical NaN:
// - e2m1: vpermps of the 16 signed values; x = e * d (NVFP4: (e * d) * t).
// - fp6: vpermi2ps of the 32 magnitudes with the code's sign ORed in gives
//   e; x = e * d.
// - e5m2: code << 8 is the f16 of the value (Inf and NaN included);
//   vcvtph2ps is exact (and ignores DAZ); NaN results become 0x7FFFFFFF.
// - e4m3: S EEEE MMM -> f16 S 0EEEE MMM 0000000 holds e * 2^-8 (e4m3
//   subnormals are f16 subnormals on the same grid, converted exactly and
//   never below 2^-17), times d * 2^8, exact while d <= 2^119 (dmax; the
//   same product as e * d, also under DAZ); mag 0x7F is NaN.
// Outputs: f32 as is; f16 by vcvtps2ph with an explicit round-to-nearest-
// even immediate (IEEE rn, Inf on overflow, subnormal results kept;
// 0x7FFFFFFF -> 0x7FFF, the canonical NaN); bf16 for MX by truncation,
// exact unless d < dmin, which keeps every nonzero |e| * d at or above
// 2^-126 (the values have at most 4 significant bits; 0x7FFFFFFF becomes
// 0x7FFF), and for NVFP4 by one integer rn step. Other blocks take the
// general step.
template <Format kElem, bool kNvfp4, Format kTo>
class FastBlocks512 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kElem);
  static constexpr size_t kBlock = kNvfp4 ? 16 : 32;
  static constexpr size_t kOutBytes = kTo == Format::kF32 ? 4 : 2;
  // The smallest nonzero element magnitude is 2^kMinExp.
  static constexpr int kMinExp = 1 - kT.bias - kT.man_bits;
  static constexpr float kTwoTo126Inv = 1.1754943508222875e-38f;  // 2^-126

 public:
  explicit FastBlocks512(float t) : t_(_mm512_set1_ps(t)) {
    const hn::Full512<uint32_t> du;
    if constexpr (kT.bits == 4) {
      tab0_ = _mm512_castsi512_ps(
          FastDecodeNarrow<kElem>::ToF32(du, hn::Iota(du, 0)).raw);
    } else if constexpr (kT.bits == 6) {
      tab0_ = _mm512_castsi512_ps(
          FastDecodeNarrow<kElem>::ToF32(du, hn::Iota(du, 0)).raw);
      tab1_ = _mm512_castsi512_ps(
          FastDecodeNarrow<kElem>::ToF32(du, hn::Iota(du, 16)).raw);
    }
    if (kNvfp4) {
      dmin_ = 0.0f;
    } else if (kTo == Format::kBF16) {
      dmin_ = kMinExp < 0 ? kTwoTo126Inv * static_cast<float>(1ull << -kMinExp)
                          : kTwoTo126Inv;
    } else {
      dmin_ = kTwoTo126Inv;
    }
    dmax_ = kElem == Format::kE4M3 ? 6.64613997892457936e35f /* 2^119 */
                                   : std::numeric_limits<float>::max();
  }

  // Whether the block with scale d takes this path (see above).
  bool Takes(float d) const {
    const bool in_range = kElem != Format::kE4M3 || !(d > dmax_);
    if (kTo == Format::kBF16 && !kNvfp4) return !(d < dmin_) && in_range;
    return in_range;
  }

  // kBlock elements at `codes` (one per byte, or kBlock / 16 groups of
  // dense4 / dense6 bytes `group_bytes` apart) into `out`.
  HWY_INLINE void Block(float d, const uint8_t* HWY_RESTRICT codes,
                        size_t group_bytes, uint8_t* HWY_RESTRICT out) const {
    if constexpr (kElem == Format::kE4M3) {
      // NaN codes (S 1111 111) are rare: one test per block, so that blocks
      // without them skip the per-vector replacement.
      const __m256i b =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes));
      if (HWY_UNLIKELY(_mm256_cmpeq_epi8_mask(
                           _mm256_or_si256(b, _mm256_set1_epi8(INT8_MIN)),
                           _mm256_set1_epi8(-1)) != 0)) {
        return BlockT<true>(d, codes, group_bytes, out);
      }
      return BlockT<false>(d, codes, group_bytes, out);
    } else {
      return BlockT<true>(d, codes, group_bytes, out);
    }
  }

 private:
  // kNanCodes: the block may hold NaN element codes.
  template <bool kNanCodes>
  HWY_INLINE void BlockT(float d, const uint8_t* HWY_RESTRICT codes,
                         size_t group_bytes, uint8_t* HWY_RESTRICT out) const {
    const __m512 vd = _mm512_set1_ps(kElem == Format::kE4M3 ? d * 256.0f : d);
    if constexpr (kTo == Format::kBF16 && !kNvfp4) {
      // Both vectors of the block at once: the high halves of their f32
      // lanes, in order, through one vpermt2w.
      const __m512i x0 =
          _mm512_castps_si512(ValuesAt<kNanCodes>(vd, codes, group_bytes, 0));
      const __m512i x1 =
          _mm512_castps_si512(ValuesAt<kNanCodes>(vd, codes, group_bytes, 16));
      _mm512_storeu_si512(out, _mm512_permutex2var_epi16(x0, high_halves_, x1));
    } else {
      for (size_t i = 0; i < kBlock; i += 16) {
        Store(ValuesAt<kNanCodes>(vd, codes, group_bytes, i),
              out + i * kOutBytes);
      }
    }
  }

  // The codes of elements i..i+15 of the block in u32 lanes.
  HWY_INLINE __m512i Codes(const uint8_t* HWY_RESTRICT codes,
                           size_t group_bytes, size_t i) const {
    if (kT.bits == 4 && group_bytes != 0) {
      // Byte j of the group feeds lanes 2j (bits [3:0]) and 2j + 1
      // (bits [7:4], shifted down); vpermps reads only index bits [3:0].
      const __m128i b = _mm_loadl_epi64(
          reinterpret_cast<const __m128i*>(codes + i / 16 * group_bytes));
      return _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b)),
                               nibble_shift_);
    }
    if (kT.bits == 6 && group_bytes != 0) {
      // Lane j gets the 4 bytes from byte 6j / 8 on, shifted right by
      // 6j % 8: code j in bits [5:0] (the permutes read bits [4:0], the
      // sign is bit 5). dense6 groups (12 bytes, the row may end there)
      // are read by a masked load, b6x16_p32 groups whole.
      const uint8_t* g = codes + i / 16 * group_bytes;
      const __m512i b =
          group_bytes == 16
              ? _mm512_broadcast_i32x4(
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(g)))
              : _mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(0x0FFF, g));
      return _mm512_srlv_epi32(_mm512_shuffle_epi8(b, dense6_index_),
                               dense6_shift_);
    }
    return _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i)));
  }

  // The values of elements i..i+15 of the block.
  template <bool kNanCodes>
  HWY_INLINE __m512 ValuesAt(__m512 vd, const uint8_t* HWY_RESTRICT codes,
                             size_t group_bytes, size_t i) const {
    if constexpr (kT.bits == 8) {  // fp8 reads the bytes itself
      return Values<kNanCodes>(
          vd, _mm512_setzero_si512(),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i)));
    } else {
      return Values(vd, Codes(codes, group_bytes, i));
    }
  }

  // c: the codes in u32 lanes (fp4: only bits [3:0] are read); c8 (fp8):
  // the 16 code bytes.
  template <bool kNanCodes = true>
  HWY_INLINE __m512 Values(__m512 vd, __m512i c,
                           __m128i c8 = _mm_setzero_si128()) const {
    if constexpr (kT.bits == 4) {
      const __m512 x = _mm512_mul_ps(_mm512_permutexvar_ps(c, tab0_), vd);
      return kNvfp4 ? _mm512_mul_ps(x, t_) : x;
    } else if constexpr (kT.bits == 6) {
      // e = magnitude | (c << 26 & 0x80000000): A | (B & C) = 0xF8.
      const __m512i e = _mm512_ternarylogic_epi32(
          _mm512_castps_si512(_mm512_permutex2var_ps(tab0_, c, tab1_)),
          _mm512_slli_epi32(c, 26), _mm512_set1_epi32(INT32_MIN), 0xF8);
      return _mm512_mul_ps(_mm512_castsi512_ps(e), vd);
    } else {
      (void)c;
      const __m256i c16 = _mm256_cvtepi8_epi16(c8);  // sign-extended
      __m512 x;
      __mmask16 nan;
      if constexpr (kElem == Format::kE5M2) {
        x = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_slli_epi16(c16, 8)),
                          vd);  // (low byte)
        nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
      } else {
        // The sign-extended code shifted left by 7 has the sign in bits 15
        // and 14 and the magnitude in bits 13..7; bit 14 cleared, it is h.
        const __m256i h =
            _mm256_and_si256(_mm256_slli_epi16(c16, 7),
                             _mm256_set1_epi16(static_cast<int16_t>(0xBF80)));
        x = _mm512_mul_ps(_mm512_cvtph_ps(h), vd);
        // (A NaN scale gives 0x7FFFFFFF already.)
        if (!kNanCodes) return x;
        // Magnitude 0x7F: h is 0x3F80 or 0xBF80.
        nan = _mm256_cmpeq_epi16_mask(
            _mm256_or_si256(h, _mm256_set1_epi16(INT16_MIN)),
            _mm256_set1_epi16(static_cast<int16_t>(0xBF80)));
      }
      return _mm512_castsi512_ps(_mm512_mask_blend_epi32(
          nan, _mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF)));
    }
  }

  HWY_INLINE void Store(__m512 x, uint8_t* out) const {
    if constexpr (kTo == Format::kF32) {
      _mm512_storeu_ps(out, x);
    } else if constexpr (kTo == Format::kF16) {
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(out),
          _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else {
      __m512i b = _mm512_castps_si512(x);
      if (kNvfp4) {
        // rn: (b + 0x7FFF + bit 16) >> 16; the NaN 0x7FFFFFFF (the only
        // NaN here) is first lowered to 0x7FFF7FFF, which gives 0x7FFF.
        b = _mm512_min_epi32(b, _mm512_set1_epi32(0x7FFF7FFF));
        b = _mm512_add_epi32(
            _mm512_add_epi32(b, _mm512_set1_epi32(0x7FFF)),
            _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1)));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                          _mm512_cvtepi32_epi16(_mm512_srli_epi32(b, 16)));
    }
  }

  __m512 tab0_ = _mm512_setzero_ps(), tab1_ = _mm512_setzero_ps();
  const __m512i nibble_shift_ = _mm512_set4_epi32(4, 0, 4, 0);
  // u16 lane j: lane 2j + 1 of the first vector (j < 16), else lane
  // 2 (j - 16) + 1 of the second (index + 32).
  const __m512i high_halves_ = _mm512_set_epi16(
      63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29,
      27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  // Lanes 4q..4q+3 of 128-bit block q: codes 4q..4q+3 start at byte 3q
  // (bit offsets 0, 6, 12, 18 from there).
  const __m512i dense6_index_ = _mm512_set_epi32(
      0x0E0D0C0B, 0x0D0C0B0A, 0x0C0B0A09, 0x0C0B0A09, 0x0B0A0908, 0x0A090807,
      0x09080706, 0x09080706, 0x08070605, 0x07060504, 0x06050403, 0x06050403,
      0x05040302, 0x04030201, 0x03020100, 0x03020100);
  const __m512i dense6_shift_ =
      _mm512_set_epi32(2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0);
  __m512 t_;
  float dmin_, dmax_;
};

// MX blocks into bf16 or f16 on AVX-512, 32 elements per step in u16 lanes:
// every element value e is a normal bf16 (f16: a normal f16 for fp4, fp6
// and e4m3) and e * 2^s is exact, so while every nonzero finite |e| * 2^s
// stays a normal of the output format (s in [kSLo, kSHi], which also
// excludes the NaN scale 0xFF), its bits are e's bits plus s in the
// exponent field: one masked 16-bit add on the looked-up bits of e, the
// adds skipping zeros, Inf and NaN. e's bits come from vpermw (fp4: 16
// signed codes), vpermt2w (fp6: 64 signed codes) or two vpermt2w of the
// 128 magnitudes plus the sign (fp8), from tables of FastDecodeNarrow16.
template <Format kElem, Format kTo>
class HalfBlocks512 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kElem);
  static constexpr internal::FastFormat kW = internal::FastFormatOf(kTo);
  static constexpr int kELo = 1 - kT.bias - kT.man_bits;  // log2 min |e|
  static constexpr int kEHi =
      static_cast<int>(kT.max_code >> kT.man_bits) - kT.bias;
  static constexpr int kWMinExp = 1 - kW.bias;  // smallest normal exponent
  static constexpr int kWMaxExp = kW.bias;
  static_assert(kELo >= kWMinExp, "element values must be normal outputs");

 public:
  static constexpr int kSLo = kWMinExp - kELo, kSHi = kWMaxExp - kEHi;

  HalfBlocks512() {
    using Dec = FastDecodeNarrow16<kElem, kTo>;
    const hn::Full512<uint16_t> d16;
    if constexpr (kT.bits == 4) {
      tab_[0] = Dec::Decode(
                    d16, hn::And(hn::Iota(d16, 0), hn::Set(d16, uint16_t{0xF})))
                    .raw;
    } else {
      for (int j = 0; j < (kT.bits == 6 ? 2 : 4); ++j) {
        tab_[j] = Dec::Decode(d16, hn::Iota(d16, 32 * j)).raw;
      }
    }
  }

  static bool Takes(uint8_t scale) {
    const int s = static_cast<int>(scale) - 127;
    return s >= kSLo && s <= kSHi;
  }

  HWY_INLINE void Block(uint8_t scale, const uint8_t* HWY_RESTRICT codes,
                        size_t group_bytes, uint8_t* HWY_RESTRICT out) const {
    const __m512i delta = _mm512_set1_epi16(static_cast<int16_t>(
        (static_cast<int>(scale) - 127) * (1 << kW.man_bits)));
    __m512i c, base;
    __mmask32 scaled, nan = 0;
    if constexpr (kT.bits == 4) {
      if (group_bytes != 0) {
        // Byte j feeds lanes 2j and 2j + 1 (shifted down by 4); vpermw
        // reads index bits [4:0] and the table repeats after 16 entries.
        const __m128i b = _mm_unpacklo_epi64(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes)),
            _mm_loadl_epi64(
                reinterpret_cast<const __m128i*>(codes + group_bytes)));
        c = _mm512_srlv_epi16(
            _mm512_cvtepu8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(b, b),
                                                  _mm_unpacklo_epi8(b, b))),
            _mm512_set1_epi32(0x00040000));
      } else {
        c = _mm512_cvtepu8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
      }
      base = _mm512_permutexvar_epi16(c, tab_[0]);
      scaled = _mm512_test_epi16_mask(c, _mm512_set1_epi16(0x7));
    } else if constexpr (kT.bits == 6) {
      if (group_bytes != 0) {
        // u16 lane r of 128-bit block q: code 8 (q % 2) + r of group q / 2,
        // from the byte pair at 6j / 8, shifted right by 6j % 8.
        // (dense6 groups by masked loads: the row may end after 12 bytes.)
        const __m128i g0 =
            group_bytes == 16
                ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes))
                : _mm_maskz_loadu_epi8(0x0FFF, codes);
        const __m128i g1 =
            group_bytes == 16
                ? _mm_loadu_si128(
                      reinterpret_cast<const __m128i*>(codes + group_bytes))
                : _mm_maskz_loadu_epi8(0x0FFF, codes + group_bytes);
        const __m512i v = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_broadcastsi128_si256(g0)),
            _mm256_broadcastsi128_si256(g1), 1);
        c = _mm512_srlv_epi16(_mm512_shuffle_epi8(v, dense6_index16_),
                              dense6_shift16_);
      } else {
        c = _mm512_cvtepu8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
      }
      base = _mm512_permutex2var_epi16(tab_[0], c, tab_[1]);
      scaled = _mm512_test_epi16_mask(c, _mm512_set1_epi16(0x1F));
    } else {
      c = _mm512_cvtepu8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
      const __m512i mag = _mm512_and_si512(c, _mm512_set1_epi16(0x7F));
      const __m512i lo = _mm512_permutex2var_epi16(tab_[0], mag, tab_[1]);
      const __m512i hi = _mm512_permutex2var_epi16(tab_[2], mag, tab_[3]);
      // | sign (bit 7 -> bit 15): A | (B & C) = 0xF8.
      base = _mm512_ternarylogic_epi32(
          _mm512_mask_blend_epi16(
              _mm512_test_epi16_mask(c, _mm512_set1_epi16(0x40)), lo, hi),
          _mm512_slli_epi16(c, 8), _mm512_set1_epi16(INT16_MIN), 0xF8);
      // Finite nonzero magnitudes 1..max_code are scaled; NaN codes become
      // the canonical NaN.
      scaled = _mm512_cmplt_epu16_mask(
          _mm512_sub_epi16(mag, _mm512_set1_epi16(1)),
          _mm512_set1_epi16(static_cast<int16_t>(kT.max_code)));
      nan = kElem == Format::kE5M2
                ? _mm512_cmpgt_epu16_mask(mag, _mm512_set1_epi16(0x7C))
                : _mm512_cmpeq_epi16_mask(mag, _mm512_set1_epi16(0x7F));
    }
    __m512i y = _mm512_mask_add_epi16(base, scaled, base, delta);
    if (kT.bits == 8)
      y = _mm512_mask_mov_epi16(y, nan, _mm512_set1_epi16(0x7FFF));
    _mm512_storeu_si512(out, y);
  }

 private:
  static __m512i Dense6Index16() {
    alignas(64) uint8_t idx[64];
    for (int q = 0; q < 4; ++q) {
      for (int r = 0; r < 8; ++r) {
        const int j = 8 * (q % 2) + r, b = 6 * j / 8;
        idx[16 * q + 2 * r] = static_cast<uint8_t>(b);
        idx[16 * q + 2 * r + 1] = static_cast<uint8_t>(b + 1);
      }
    }
    return _mm512_load_si512(idx);
  }
  static __m512i Dense6Shift16() {
    alignas(64) uint16_t sh[32];
    for (int l = 0; l < 32; ++l)
      sh[l] = static_cast<uint16_t>(6 * (l % 16) % 8);
    return _mm512_load_si512(sh);
  }

  __m512i tab_[4] = {};
  const __m512i dense6_index16_ = Dense6Index16();
  const __m512i dense6_shift16_ = Dense6Shift16();
};
#if HWY_TARGET <= HWY_AVX3_DL
#define MXPACK_HAVE_DEQUANT_TABLE512 1
// Two groups of 16 packed fp4 codes (8 bytes each) -> u16 lanes 0..15 and
// 16..31 with the code in bits [3:0] (bits [7:4] hold the next code):
// qwords 0..3 get group 0, 4..7 group 1 (broadcast loads), and
// vpmultishiftqb gives byte 2m of qword k the bits from 4 (4 (k % 4) + m).
HWY_INLINE __m512i Fp4GroupsToU16(const uint8_t* g0, const uint8_t* g1) {
  struct Shifts {
    alignas(64) uint8_t b[64];
  };
  static constexpr Shifts kShifts = [] {
    Shifts r{};
    for (int k = 0; k < 8; ++k) {
      for (int m = 0; m < 4; ++m) {
        r.b[8 * k + 2 * m] = static_cast<uint8_t>(16 * (k % 4) + 4 * m);
      }
    }
    return r;
  }();
  int64_t q0, q1;
  std::memcpy(&q0, g0, 8);
  std::memcpy(&q1, g1, 8);
  return _mm512_multishift_epi64_epi8(
      _mm512_load_si512(kShifts.b),
      _mm512_mask_set1_epi64(_mm512_set1_epi64(q0), 0xF0, q1));
}

// MX blocks into bf16 or f16 on AVX3_DL, 32 elements per step, looked up in
// the block's MxHalfTable row (the general step's results, so exact for
// every scale it takes):
// - fp4: vpermw on the 16 signed results (twice: index bit 4 is ignored);
// - fp6: vpermt2w on the 64 signed results (index bits [5:0]);
// - fp8: two vpermt2w on the 128 magnitudes, bit 6 selects, then the code's
//   sign: bit 15 = sign & ~t15 with the rest of t (ternary logic 0x58 =
//   C ? (B & ~A) : A), so NaN rows (0xFFFF) give 0x7FFF. The sign is only
//   applied where e * 2^s is an exact normal f32 for every element (s in
//   [kSLo, kSHi]; the NaN scale too), so the result of -e is the result of e
//   with the sign set, in every rounding mode; other blocks take the other
//   steps.
// Packed groups are read by broadcast loads; fp4 codes reach their u16 lanes
// by vpmultishiftqb, fp6 codes by vpshufb of byte pairs and a variable shift
// (the bits above a code are the next code's and are not read).
template <Format kElem, Format kTo>
class TableBlocks512 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kElem);
  static constexpr int kELo = 1 - kT.bias - kT.man_bits;  // log2 min |e|
  static constexpr int kEHi =
      static_cast<int>(kT.max_code >> kT.man_bits) - kT.bias;

 public:
  static constexpr size_t kEntries = internal::MxHalfTableEntries(kT.bits);
  static constexpr int kSLo = -126 - kELo, kSHi = 127 - kEHi;

  static bool Takes(uint8_t scale) {
    if (kT.bits != 8) return true;
    const int s = static_cast<int>(scale) - 127;
    return scale == 0xFF || (s >= kSLo && s <= kSHi);
  }

  HWY_INLINE void Block(const uint16_t* HWY_RESTRICT row,
                        const uint8_t* HWY_RESTRICT codes, size_t group_bytes,
                        uint8_t* HWY_RESTRICT out) const {
    __m512i y;
    if constexpr (kT.bits == 4) {
      __m512i idx;
      if (group_bytes != 0) {
        idx = Fp4GroupsToU16(codes, codes + group_bytes);
      } else {
        idx = _mm512_cvtepu8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
      }
      y = _mm512_permutexvar_epi16(idx, _mm512_load_si512(row));
    } else if constexpr (kT.bits == 6) {
      __m512i idx;
      if (group_bytes != 0) {
        // 128-bit lanes 0, 1 get group 0 and lanes 2, 3 group 1 (broadcast
        // loads; a dense6 group 1 from 4 bytes before it, so that no load
        // passes the row's end); u16 lane r of lane q gets the byte pair
        // of code 8 (q % 2) + r, shifted into bits [5:0].
        const size_t off1 = group_bytes == 16 ? 16 : 8;
        const __m512i v = _mm512_mask_broadcast_i32x4(
            _mm512_broadcast_i32x4(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes))),
            0xFF00,
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + off1)));
        idx = _mm512_srlv_epi16(
            _mm512_shuffle_epi8(
                v, group_bytes == 16 ? dense6_bytes16_ : dense6_bytes12_),
            six_shift_);
      } else {
        idx = _mm512_cvtepu8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
      }
      y = _mm512_permutex2var_epi16(_mm512_load_si512(row), idx,
                                    _mm512_load_si512(row + 32));
    } else {
      const __m512i c = _mm512_cvtepi8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
      const __m512i lo = _mm512_permutex2var_epi16(_mm512_load_si512(row), c,
                                                   _mm512_load_si512(row + 32));
      const __m512i hi = _mm512_permutex2var_epi16(
          _mm512_load_si512(row + 64), c, _mm512_load_si512(row + 96));
      y = _mm512_ternarylogic_epi32(
          _mm512_mask_blend_epi16(
              _mm512_test_epi16_mask(c, _mm512_set1_epi16(0x40)), lo, hi),
          c, _mm512_set1_epi16(INT16_MIN), 0x58);
    }
    _mm512_storeu_si512(out, y);
  }

 private:
  struct Bytes64 {
    alignas(64) uint8_t b[64];
  };
  // u16 lane r of 128-bit lane q: the byte pair from byte 6j / 8 of the
  // group (j = 8 (q % 2) + r), which starts `first1` bytes into lanes 2, 3;
  // shifted right by 6j % 8.
  static constexpr Bytes64 Dense6Bytes(int first1) {
    Bytes64 r{};
    for (int q = 0; q < 4; ++q) {
      for (int l = 0; l < 8; ++l) {
        const int j = 8 * (q % 2) + l, b = 6 * j / 8 + (q >= 2 ? first1 : 0);
        r.b[16 * q + 2 * l] = static_cast<uint8_t>(b);
        r.b[16 * q + 2 * l + 1] = static_cast<uint8_t>(b + 1);
      }
    }
    return r;
  }
  static constexpr Bytes64 SixShift() {
    Bytes64 r{};
    for (int l = 0; l < 32; ++l)
      r.b[2 * l] = static_cast<uint8_t>(6 * (l % 16) % 8);
    return r;
  }
  static constexpr Bytes64 kSixShift = SixShift();
  static constexpr Bytes64 kDense6Bytes12 = Dense6Bytes(4),
                           kDense6Bytes16 = Dense6Bytes(0);

  static __m512i Load(const Bytes64& v) { return _mm512_load_si512(v.b); }

  const __m512i six_shift_ = Load(kSixShift);
  const __m512i dense6_bytes12_ = Load(kDense6Bytes12);
  const __m512i dense6_bytes16_ = Load(kDense6Bytes16);
};

// MX fp8 blocks into bf16 or f16 on AVX3_DL without a table: where every
// element's product e * 2^s is an exact normal f32 (d = 2^s normal too, so
// no rounding mode, FTZ or DAZ changes it) and a normal of the output
// format, its bits are the code's bits re-biased (docs/semantics.md
// section 5, "Dequantization"): for a normal code S E..E M..M,
//   out = S | (E + bias_out - bias_elem + s) << man_out | M << (man_out -
//         man_elem),
// i.e. the sign-extended code shifted left by man_out - man_elem, the copies
// of the sign between bit 15 and the exponent field cleared, plus the
// per-scale delta (bias_out - bias_elem + s) << man_out (no carry reaches
// the sign: the exponent field stays in [1, max]). That holds for the
// magnitude codes [lo, lo + span] of the scale's Param (normal codes whose
// output exponent field is in range); a block takes this path if all its
// magnitudes are in there, so zeros, fp8 subnormals, NaN / Inf codes and
// products outside the range keep the table. The test runs on the widened
// lanes, whose magnitude bits are the code's magnitude << kShift: one
// unsigned 16-bit compare of (magnitude << kShift) - (lo << kShift) against
// span << kShift. Every per-scale value is held twice in a u32, so that its
// vector is one broadcast load (no shuffle).
template <Format kElem, Format kTo>
class RebiasBlocks512 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kElem);
  static constexpr internal::FastFormat kW = internal::FastFormatOf(kTo);
  static constexpr int kShift = kW.man_bits - kT.man_bits;
  static_assert(kT.bits == 8 && kShift > 0 && kShift <= 8,
                "fp8 into bf16 / f16");
  static constexpr uint16_t kMagMask = static_cast<uint16_t>(0x7F << kShift);

 public:
  // Per scale code, each in both u16 halves: the output delta, and the
  // magnitude fields [lo, lo + span] (shifted by kShift) that re-bias
  // exactly. Where none does, lo = 0x8000 and span = 0: every magnitude
  // field (at most 0x7F00) minus 0x8000 is at least 0x8000 as a u16. Where
  // some do, a field below lo wraps to at least 0x10000 - 0x7F00, above any
  // span.
  struct Param {
    uint32_t delta, lo, span;
  };
  struct Params {
    Param p[256];
  };
  static constexpr uint32_t Twice(int v) {
    return static_cast<uint32_t>(static_cast<uint16_t>(v)) * 0x10001u;
  }
  static constexpr Params MakeParams() {
    Params r{};
    const int bias = kW.bias - kT.bias;
    const int e_max = static_cast<int>(kT.max_code >> kT.man_bits);
    const int w_max = static_cast<int>(kW.max_code >> kW.man_bits);
    for (int c = 0; c < 256; ++c) {
      const int s = c - 127;
      // Normal codes E in [1, e_max] whose output field E + bias + s is in
      // [1, w_max]; the product's f32 field E + 127 - bias_elem + s is then
      // in [1, 254] too (bf16 has f32's exponent range, f16 a narrower one).
      int lo_e = 1, hi_e = e_max;
      lo_e = lo_e > 1 - bias - s ? lo_e : 1 - bias - s;
      hi_e = hi_e < w_max - bias - s ? hi_e : w_max - bias - s;
      // Scale code 0 (2^-127) is an f32 subnormal, 0xFF is NaN.
      if (c == 0 || c == 255 || lo_e > hi_e) {
        r.p[c] = Param{0, Twice(0x8000), 0};
        continue;
      }
      const int lo = lo_e << kT.man_bits;
      int hi = (hi_e << kT.man_bits) | ((1 << kT.man_bits) - 1);
      hi = hi < static_cast<int>(kT.max_code) ? hi
                                              : static_cast<int>(kT.max_code);
      r.p[c] = Param{Twice((bias + s) * (1 << kW.man_bits)),
                     Twice(lo << kShift), Twice((hi - lo) << kShift)};
    }
    return r;
  }
  static constexpr Params kParams = MakeParams();

  // The 32 codes at `codes` re-biased under `scale`; `fits` gets the lanes
  // where that is their value.
  static HWY_INLINE __m512i Rebiased(uint8_t scale,
                                     const uint8_t* HWY_RESTRICT codes,
                                     __mmask32* fits) {
    constexpr uint16_t kMask = static_cast<uint16_t>(0x8000 | kMagMask);
    const Param& p = kParams.p[scale];
    const __m512i u = _mm512_slli_epi16(
        _mm512_cvtepi8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes))),
        kShift);
    const __m512i mag =
        _mm512_and_si512(u, _mm512_set1_epi16(static_cast<int16_t>(kMagMask)));
    *fits = _mm512_cmple_epu16_mask(
        _mm512_sub_epi16(mag, _mm512_set1_epi32(static_cast<int>(p.lo))),
        _mm512_set1_epi32(static_cast<int>(p.span)));
    return _mm512_add_epi16(
        _mm512_and_si512(u, _mm512_set1_epi16(static_cast<int16_t>(kMask))),
        _mm512_set1_epi32(static_cast<int>(p.delta)));
  }
};
#endif  // HWY_TARGET <= HWY_AVX3_DL
#endif  // HWY_TARGET <= HWY_AVX3

// kElem: the element format; kNvfp4: 16-element blocks scaled by (e * d) * t;
// kTo: f32, bf16 or f16.
template <Format kElem, bool kNvfp4, Format kTo>
struct MxRowDequantizer {
  static constexpr size_t kBlock = kNvfp4 ? 16 : 32;
  static constexpr size_t kOutBytes = kTo == Format::kF32 ? 4 : 2;
  static constexpr int kBits = internal::FastFormatOf(kElem).bits;
  using DU = hn::ScalableTag<uint32_t>;
  using DF = hn::RebindToFloat<DU>;
  static_assert(HWY_MAX_BYTES / 4 <= 16,
                "a vector must not span two NVFP4 blocks");

  // The N values at `codes`, scaled by `d` (and `t`), stored at `out`.
  static HWY_INLINE void Step(DU du, const uint8_t* HWY_RESTRICT codes,
                              hn::Vec<DF> d, hn::Vec<DF> t,
                              uint8_t* HWY_RESTRICT out) {
    const DF df;
    const hn::Rebind<uint8_t, DU> du8;
    const auto c = hn::PromoteTo(du, hn::LoadU(du8, codes));
    // Exact element value (every code is a normal f32, zero, Inf or NaN).
    const auto e = hn::BitCast(df, FastDecodeNarrow<kElem>::ToF32(du, c));
    auto x = hn::Mul(e, d);
    if (kNvfp4) x = hn::Mul(x, t);  // (e * d) is exact; one rounding here
    if constexpr (kTo == Format::kF32) {
      const auto bits =
          hn::IfThenElse(hn::RebindMask(du, hn::Eq(x, x)), hn::BitCast(du, x),
                         hn::Set(du, 0x7FFFFFFFu));
      hn::StoreU(bits, du, reinterpret_cast<uint32_t*>(out));
    } else {
      // The encoder maps every NaN to the canonical code, as the scalar
      // path's conversion of 0x7FFFFFFF does.
      StoreLanes<2>(
          du, FastEncodeF32<kTo, false>::EncodeRn(du, hn::BitCast(du, x)), out);
    }
  }

  // Block k of the row, whose scale byte is `scale`, into `out`.
  template <class Fast, class Half>
  static HWY_INLINE void Block(const internal::MxDequantRow& a,
                               const Fast& fast, const Half& half, size_t k,
                               uint8_t scale, uint8_t* HWY_RESTRICT out) {
    const DU du;
    const DF df;
    const size_t N = hn::Lanes(du);
    const uint8_t* codes = a.group_bytes
                               ? a.codes + k * (kBlock / 16) * a.group_bytes
                               : a.codes + k * kBlock;
    if (half.Takes(scale)) return half.Block(scale, codes, a.group_bytes, out);
    const float d = a.scale_lut[scale];
    if (fast.Takes(d)) return fast.Block(d, codes, a.group_bytes, out);
    alignas(64) uint8_t unpacked[kBlock];
    if (a.group_bytes) {
      for (size_t i = 0; i < kBlock; ++i) {
        const uint8_t* g = codes + i / 16 * a.group_bytes;
        const size_t j = i % 16;
        if (kBits == 4) {  // dense4: element j in nibble j % 2 of byte j / 2
          unpacked[i] =
              static_cast<uint8_t>(j % 2 ? g[j / 2] >> 4 : g[j / 2] & 0xF);
        } else {  // dense6: element j in bits 6 (j % 4) of the 24-bit word j /
                  // 4
          const uint8_t* w = g + 3 * (j / 4);
          const uint32_t word =
              w[0] | (w[1] << 8) | (static_cast<uint32_t>(w[2]) << 16);
          unpacked[i] = static_cast<uint8_t>((word >> (6 * (j % 4))) & 0x3F);
        }
      }
      codes = unpacked;
    }
    const auto vd = hn::Set(df, d);
    const auto t = hn::Set(df, a.tensor_scale);
    for (size_t i = 0; i < kBlock; i += N)
      Step(du, codes + i, vd, t, out + i * kOutBytes);
  }

  // Row c of MxHalfTable (`entries` values): the general step on the
  // element codes 0..entries-1 (fp4: 0..15 twice; fp8: the magnitudes, NaN
  // results flagged as 0xFFFF).
  static HWY_NOINLINE void FillMxHalf(const internal::MxDequantRow& a,
                                      unsigned c, uint16_t* row,
                                      size_t entries) {
    const DU du;
    const DF df;
    uint8_t codes[128];
    for (size_t i = 0; i < 128; ++i) codes[i] = static_cast<uint8_t>(i);
    const size_t n = HWY_MIN(size_t{1} << kBits, entries);
    const auto d = hn::Set(df, a.scale_lut[c]);
    const auto t = hn::Set(df, a.tensor_scale);
    for (size_t i = 0; i < n; i += hn::Lanes(du)) {
      Step(du, codes + i, d, t, reinterpret_cast<uint8_t*>(row) + 2 * i);
    }
    for (size_t i = n; i < entries; ++i) row[i] = row[i - n];
    if (kBits == 8) {
      for (size_t i = 0; i < n; ++i) {
        if (row[i] == 0x7FFF) row[i] = 0xFFFF;
      }
    }
  }

#ifdef MXPACK_HAVE_DEQUANT_FAST512
  // NVFP4 into bf16 / f16 on AVX-512: blocks k..k+3 (scale codes sc) by
  // table lookup, two blocks per vpermw: their rows of Nvfp4HalfTable in
  // one vector (block A in u16 lanes 0..15, B in 16..31), each lane's code
  // plus 16 for block B as the index.
  // kFull: every row of the table is filled.
  template <bool kFull>
  static HWY_INLINE void Nvfp4Half4(const internal::MxDequantRow& a, const uint8_t* sc,
                                    size_t k) {
    internal::Nvfp4HalfTable& tab = *a.nvfp4_half;
    const auto row_of = [&](uint8_t scale) {
      const unsigned c = scale & 0x7Fu;
      if (!kFull && HWY_UNLIKELY(((tab.have[c >> 6] >> (c & 63)) & 1) == 0)) FillHalf(a, c);
      return _mm256_load_si256(reinterpret_cast<const __m256i*>(tab.row[c]));
    };
    const __m512i block_b = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(16), 1);
    for (size_t p = 0; p < 4; p += 2) {
      const __m512i tv =
          _mm512_inserti64x4(_mm512_castsi256_si512(row_of(sc[p])), row_of(sc[p + 1]), 1);
      __m512i idx;
      if (a.group_bytes != 0) {
        // idx = (c & 0xF) | block_b: (A & B) | C.
        const uint8_t* g = a.codes + (k + p) * a.group_bytes;
#ifdef MXPACK_HAVE_DEQUANT_TABLE512
        const __m512i c = Fp4GroupsToU16(g, g + a.group_bytes);
#else
        // Byte j feeds lanes 2j (with the odd code in bits 4..7) and
        // 2j + 1 (shifted down by 4).
        const __m128i b = _mm_unpacklo_epi64(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g)),
            _mm_loadl_epi64(
                reinterpret_cast<const __m128i*>(g + a.group_bytes)));
        const __m512i c = _mm512_srlv_epi16(
            _mm512_cvtepu8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(b, b),
                                                  _mm_unpacklo_epi8(b, b))),
            _mm512_set1_epi32(0x00040000));
#endif
        idx =
            _mm512_ternarylogic_epi32(c, _mm512_set1_epi16(0xF), block_b, 0xEA);
      } else {
        idx = _mm512_or_si512(
            _mm512_cvtepu8_epi16(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.codes + (k + p) * 16))),
            block_b);
      }
      _mm512_storeu_si512(a.out + (k + p) * 32, _mm512_permutexvar_epi16(idx, tv));
    }
  }

  // Every row of `a` (whole groups of 4 blocks, every table row filled) as
  // Nvfp4Half4, for group_bytes kGroupBytes.
  template <size_t kGroupBytes>
  static HWY_INLINE void Nvfp4HalfRows(const internal::MxDequantRow& a) {
    const internal::Nvfp4HalfTable& tab = *a.nvfp4_half;
    const __m512i block_b =
        _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(16), 1);
    const size_t whole = a.cols / kBlock;
    const size_t stride4 = a.stride4;  // (in a register: `out` may alias `a`)
    constexpr size_t kStep = kGroupBytes ? kGroupBytes : 16;  // per block
    for (size_t r = 0; r < a.rows; ++r) {
      const uint8_t* codes = a.codes + r * a.code_stride;
      uint8_t* out = a.out + r * a.out_stride;
      const uint8_t* sp = internal::MxScaleRow(a, r);
      for (size_t k = 0; k < whole; k += 4, sp += stride4) {
        uint32_t sc;  // scale bytes k..k + 3
        std::memcpy(&sc, sp, 4);
        for (size_t p = 0; p < 4; p += 2, sc >>= 16) {
          const __m512i tv = _mm512_inserti64x4(
              _mm512_castsi256_si512(_mm256_load_si256(
                  reinterpret_cast<const __m256i*>(tab.row[sc & 0x7F]))),
              _mm256_load_si256(reinterpret_cast<const __m256i*>(
                  tab.row[(sc >> 8) & 0x7F])),
              1);
          const uint8_t* g = codes + (k + p) * kStep;
          __m512i idx;
          if constexpr (kGroupBytes == 0) {
            idx = _mm512_or_si512(_mm512_cvtepu8_epi16(_mm256_loadu_si256(
                                      reinterpret_cast<const __m256i*>(g))),
                                  block_b);
          } else {
            // idx = (c & 0xF) | block_b: (A & B) | C.
#ifdef MXPACK_HAVE_DEQUANT_TABLE512
            const __m512i c = Fp4GroupsToU16(g, g + kGroupBytes);
#else
            const __m128i b = _mm_unpacklo_epi64(
                _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g)),
                _mm_loadl_epi64(
                    reinterpret_cast<const __m128i*>(g + kGroupBytes)));
            const __m512i c = _mm512_srlv_epi16(
                _mm512_cvtepu8_epi16(_mm256_set_m128i(
                    _mm_unpackhi_epi8(b, b), _mm_unpacklo_epi8(b, b))),
                _mm512_set1_epi32(0x00040000));
#endif
            idx = _mm512_ternarylogic_epi32(c, _mm512_set1_epi16(0xF),
                                            block_b, 0xEA);
          }
          _mm512_storeu_si512(out + (k + p) * 32,
                              _mm512_permutexvar_epi16(idx, tv));
        }
      }
    }
  }

  // Every row of Nvfp4HalfTable, as FillHalf.
  static HWY_NOINLINE void FillAllHalf(const internal::MxDequantRow& a) {
    const DU du;
    const DF df;
    alignas(64) static constexpr uint8_t kCodes[16] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const auto t = hn::Set(df, a.tensor_scale);
    internal::Nvfp4HalfTable& tab = *a.nvfp4_half;
    for (unsigned c = 0; c < 128; ++c) {
      const auto d = hn::Set(df, a.scale_lut[c]);
      for (size_t i = 0; i < 16; i += hn::Lanes(du)) {
        Step(du, kCodes + i, d, t,
             reinterpret_cast<uint8_t*>(tab.row[c]) + 2 * i);
      }
    }
    tab.have[0] = tab.have[1] = ~uint64_t{0};
  }

  // Row c of Nvfp4HalfTable: the general step on the codes 0..15.
  static HWY_NOINLINE void FillHalf(const internal::MxDequantRow& a, unsigned c) {
    const DU du;
    const DF df;
    alignas(64) static constexpr uint8_t kCodes[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                       8, 9, 10, 11, 12, 13, 14, 15};
    const auto d = hn::Set(df, a.scale_lut[c]);
    const auto t = hn::Set(df, a.tensor_scale);
    for (size_t i = 0; i < 16; i += hn::Lanes(du)) {
      Step(du, kCodes + i, d, t, reinterpret_cast<uint8_t*>(a.nvfp4_half->row[c]) + 2 * i);
    }
    a.nvfp4_half->have[c >> 6] |= uint64_t{1} << (c & 63);
  }
#endif

  // MX into bf16 / f16: MxHalfTable rows (where the kernel has them).
  static constexpr bool kHalfTable = !kNvfp4 && kTo != Format::kF32;

#ifdef MXPACK_HAVE_DEQUANT_TABLE512
  using Table = TableBlocks512<kElem, kHalfTable ? kTo : Format::kBF16>;

  // Rows whose blocks are looked up in MxHalfTable rows where the table
  // takes their scale; the other blocks take the other steps.
  static HWY_NOINLINE void TableRows(const internal::MxDequantRow& a) {
    switch (a.group_bytes) {
      case 0:
        return TableRowsT<0>(a);
      case 8:
        return TableRowsT<8>(a);
      case 12:
        return TableRowsT<12>(a);
      default:
        return TableRowsT<16>(a);
    }
  }

  template <size_t kGroupBytes>
  static HWY_INLINE void TableRowsT(const internal::MxDequantRow& a) {
    if constexpr (kBits == 8) return Fp8TableRows(a);
    const Table table;
    constexpr size_t kStep = kGroupBytes ? (kBlock / 16) * kGroupBytes : kBlock;
    constexpr size_t kOut = kBlock * kOutBytes;
    const uint16_t* HWY_RESTRICT tab = a.mx_half->rows;
    const uint8_t* ready = a.mx_half->ready;
    const size_t whole = a.cols / kBlock;
    const size_t blocks = (a.cols + kBlock - 1) / kBlock;
    const size_t stride4 = a.stride4;  // (in a register: `out` may alias `a`)
    for (size_t r = 0; r < a.rows; ++r) {
      const uint8_t* row_codes = a.codes + r * a.code_stride;
      const uint8_t* row_scales = internal::MxScaleRow(a, r);
      uint8_t* row_out = a.out + r * a.out_stride;
      size_t k = 0;
      for (const uint8_t* sp = row_scales; k + 4 <= whole;
           k += 4, sp += stride4) {
        uint8_t sc[4];
        std::memcpy(sc, sp, 4);
        if (HWY_UNLIKELY((ready[sc[0]] & ready[sc[1]] & ready[sc[2]] &
                          ready[sc[3]]) == 0)) {
          for (size_t j = 0; j < 4; ++j) {
            TableSlowBlock(a, r, k + j, sc[j], row_out + (k + j) * kOut);
          }
          continue;
        }
        const uint8_t* codes = row_codes + k * kStep;
        uint8_t* out = row_out + k * kOut;
        for (size_t j = 0; j < 4; ++j) {
          table.Block(tab + sc[j] * Table::kEntries, codes + j * kStep,
                      kGroupBytes, out + j * kOut);
        }
      }
      for (; k < blocks; ++k) {
        // The last block may be ragged: its values go through a buffer (the
        // codes are padded to whole blocks).
        alignas(64) uint8_t buf[kOut];
        TableSlowBlock(a, r, k, row_scales[(k / 4) * a.stride4 + k % 4],
                       k < whole ? row_out + k * kOut : buf);
        if (k == whole) {
          std::memcpy(row_out + whole * kOut, buf,
                      (a.cols - whole * kBlock) * kOutBytes);
        }
      }
    }
  }

  // fp8 rows: groups of 4 blocks by RebiasBlocks512 where all their codes
  // fit, else each block by RebiasBlocks512 or its table row.
  static HWY_INLINE void Fp8TableRows(const internal::MxDequantRow& a) {
    using Rebias = RebiasBlocks512<kElem, kHalfTable ? kTo : Format::kBF16>;
    const Table table;
    constexpr size_t kOut = kBlock * kOutBytes;
    const uint16_t* HWY_RESTRICT tab = a.mx_half->rows;
    const uint8_t* ready = a.mx_half->ready;
    const size_t whole = a.cols / kBlock;
    const size_t blocks = (a.cols + kBlock - 1) / kBlock;
    const size_t stride4 = a.stride4;  // (in a register: `out` may alias `a`)
    for (size_t r = 0; r < a.rows; ++r) {
      const uint8_t* row_codes = a.codes + r * a.code_stride;
      const uint8_t* row_scales = internal::MxScaleRow(a, r);
      uint8_t* row_out = a.out + r * a.out_stride;
      size_t k = 0;
      for (const uint8_t* sp = row_scales; k + 4 <= whole;
           k += 4, sp += stride4) {
        uint8_t sc[4];
        std::memcpy(sc, sp, 4);
        const uint8_t* codes = row_codes + k * kBlock;
        uint8_t* out = row_out + k * kOut;
        __m512i v[4];
        __mmask32 fits[4];
        for (size_t j = 0; j < 4; ++j)
          v[j] = Rebias::Rebiased(sc[j], codes + j * kBlock, &fits[j]);
        if (HWY_LIKELY((fits[0] & fits[1] & fits[2] & fits[3]) ==
                       ~__mmask32{0})) {
          for (size_t j = 0; j < 4; ++j)
            _mm512_storeu_si512(out + j * kOut, v[j]);
          continue;
        }
        for (size_t j = 0; j < 4; ++j) {
          if (fits[j] == ~__mmask32{0}) {
            _mm512_storeu_si512(out + j * kOut, v[j]);
          } else if (ready[sc[j]]) {
            table.Block(tab + sc[j] * Table::kEntries, codes + j * kBlock, 0,
                        out + j * kOut);
          } else {
            TableSlowBlock(a, r, k + j, sc[j], out + j * kOut);
          }
        }
      }
      for (; k < blocks; ++k) {
        // The last block may be ragged: its values go through a buffer (the
        // codes are padded to whole blocks).
        alignas(64) uint8_t buf[kOut];
        TableSlowBlock(a, r, k, row_scales[(k / 4) * a.stride4 + k % 4],
                       k < whole ? row_out + k * kOut : buf);
        if (k == whole) {
          std::memcpy(row_out + whole * kOut, buf,
                      (a.cols - whole * kBlock) * kOutBytes);
        }
      }
    }
  }

  // Block k of row r with scale code c through the table (filling its row
  // first if needed), or the other steps where the table does not take c.
  static HWY_NOINLINE void TableSlowBlock(const internal::MxDequantRow& a,
                                          size_t r, size_t k, uint8_t c,
                                          uint8_t* HWY_RESTRICT out) {
    if (!Table::Takes(c)) return OtherBlock(internal::MxRowAt(a, r), k, c, out);
    internal::MxHalfTable& mx = *a.mx_half;
    if (!mx.ready[c]) {
      FillMxHalf(a, c, mx.rows + c * Table::kEntries, Table::kEntries);
      mx.ready[c] = 1;
    }
    const size_t step = a.group_bytes ? (kBlock / 16) * a.group_bytes : kBlock;
    Table().Block(mx.rows + c * Table::kEntries,
                  a.codes + r * a.code_stride + k * step, a.group_bytes, out);
  }

  // Block k by the other steps.
  static HWY_NOINLINE void OtherBlock(const internal::MxDequantRow& a, size_t k,
                                      uint8_t scale,
                                      uint8_t* HWY_RESTRICT out) {
    // (As Row: e5m2 values are not all normal f16s.)
    constexpr bool kUseHalf = !(kTo == Format::kF16 && kElem == Format::kE5M2);
    using Half =
        std::conditional_t<kUseHalf,
                           HalfBlocks512<kElem, kUseHalf ? kTo : Format::kBF16>,
                           NoHalfBlocks>;
    Block(a, FastBlocks512<kElem, kNvfp4, kTo>(a.tensor_scale), Half(), k,
          scale, out);
  }
#endif

  // The a.rows rows of `a`.
  static HWY_NOINLINE void Rows(const internal::MxDequantRow& a) {
#ifdef MXPACK_HAVE_DEQUANT_TABLE512
    if constexpr (kHalfTable) {
      if (a.mx_half != nullptr) return TableRows(a);
    }
#endif
#ifdef MXPACK_HAVE_DEQUANT_FAST512
    if constexpr (kNvfp4 && kTo != Format::kF32) {
      // Large calls whose rows are whole groups of 4 blocks: every table
      // row first, then only lookups.
      if (a.nvfp4_half != nullptr && a.nvfp4_half->fill_all &&
          a.cols % (4 * kBlock) == 0) {
        FillAllHalf(a);
        switch (a.group_bytes) {
          case 0:
            return Nvfp4HalfRows<0>(a);
          case 8:
            return Nvfp4HalfRows<8>(a);
          default:
            return Nvfp4HalfRows<16>(a);
        }
      }
    }
#endif
    for (size_t r = 0; r < a.rows; ++r) Row(internal::MxRowAt(a, r));
  }

  static HWY_NOINLINE void Row(const internal::MxDequantRow& row) {
    // A local copy: the stores through `out` cannot alias it, so its fields
    // stay in registers.
    const internal::MxDequantRow a = row;
#ifdef MXPACK_HAVE_DEQUANT_FAST512
    const FastBlocks512<kElem, kNvfp4, kTo> fast(a.tensor_scale);
    // MX into bf16, or into f16 where the element values are normal f16s.
    constexpr bool kHalf = !kNvfp4 && kTo != Format::kF32 &&
                           !(kTo == Format::kF16 && kElem == Format::kE5M2);
    using Half = std::conditional_t<
        kHalf, HalfBlocks512<kElem, kHalf ? kTo : Format::kBF16>, NoHalfBlocks>;
    const Half half;
#else
    const NoFastBlocks fast;
    const NoHalfBlocks half;
#endif
    const size_t whole = a.cols / kBlock;
    constexpr size_t kOut = kBlock * kOutBytes;
    size_t k = 0;
#ifdef MXPACK_HAVE_DEQUANT_FAST512
    if constexpr (kNvfp4 && kTo != Format::kF32) {
      if (a.nvfp4_half != nullptr && a.nvfp4_half->fill_all) {
        // Every row at once (large calls), then lookups without checks.
        internal::Nvfp4HalfTable& tab = *a.nvfp4_half;
        for (unsigned c = 0; c < 128 && (tab.have[0] & tab.have[1]) != ~uint64_t{0}; ++c) {
          if (((tab.have[c >> 6] >> (c & 63)) & 1) == 0) FillHalf(a, c);
        }
        for (const uint8_t* sp = a.scales; k + 4 <= whole; k += 4, sp += a.stride4) {
          uint8_t sc[4];
          std::memcpy(sc, sp, 4);
          Nvfp4Half4<true>(a, sc, k);
        }
      }
    }
#endif
    // Groups of 4 blocks: 4 consecutive scale bytes (both scale layouts).
    for (const uint8_t* sp = a.scales; k + 4 <= whole;
         k += 4, sp += a.stride4) {
      uint8_t sc[4];
      std::memcpy(sc, sp, 4);
#ifdef MXPACK_HAVE_DEQUANT_FAST512
      if constexpr (kNvfp4 && kTo != Format::kF32) {
        if (a.nvfp4_half != nullptr) {
          Nvfp4Half4<false>(a, sc, k);
          continue;
        }
      }
      if constexpr (kHalf && (kTo == Format::kBF16 || kBits != 4)) {
        // All four blocks in HalfBlocks512's range: one check, then the
        // blocks without the per-block dispatch (fp4 into f16 keeps it).
        if (Half::Takes(sc[0]) && Half::Takes(sc[1]) && Half::Takes(sc[2]) &&
            Half::Takes(sc[3])) {
          const uint8_t* codes =
              a.group_bytes ? a.codes + k * (kBlock / 16) * a.group_bytes : a.codes + k * kBlock;
          const size_t step = a.group_bytes ? (kBlock / 16) * a.group_bytes : kBlock;
          for (size_t j = 0; j < 4; ++j) {
            half.Block(sc[j], codes + j * step, a.group_bytes, a.out + (k + j) * kOut);
          }
          continue;
        }
      }
#endif
      for (size_t j = 0; j < 4; ++j)
        Block(a, fast, half, k + j, sc[j], a.out + (k + j) * kOut);
    }
    for (; k < whole; ++k)
      Block(a, fast, half, k, a.scales[(k / 4) * a.stride4 + k % 4],
            a.out + k * kOut);
    const size_t rest = a.cols - whole * kBlock;
    if (rest != 0) {
      // The codes are padded to whole blocks; the values go through a buffer.
      alignas(64) uint8_t buf[kOut];
      Block(a, fast, half, whole, a.scales[(whole / 4) * a.stride4 + whole % 4],
            buf);
      std::memcpy(a.out + whole * kOut, buf, rest * kOutBytes);
    }
  }
};

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_DEQUANTIZE_INL_H_
