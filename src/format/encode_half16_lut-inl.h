// bf16 / f16 -> narrow codes by byte-table lookups (Avx512LutEncodeHalf16,
// AVX3_DL: vpermi2b), and f16 / bf16 -> ue8m0 the same way: 64 elements
// per call in byte lanes, with no subnormal or NaN fallback path. Part of
// the fast encoders of src/format/encode_fast-inl.h.

// Target-independent part: the compile-time tables (once, outside the
// per-target section).
#ifndef MXPACK_SRC_FORMAT_ENCODE_HALF16_LUT_TABLES_
#define MXPACK_SRC_FORMAT_ENCODE_HALF16_LUT_TABLES_

#include <cstdint>

#include "src/format/encode_rn-inl.h"  // internal::FastFormat

namespace mxpack::internal {

// Magnitude code of a 16-bit source magnitude v (15 bits, bf16 or f16 bit
// layout) under rn (docs/semantics.md section 1): the model the tables are
// built from, written like the scalar reference's RoundFinite. The code
// grid is 2^q with q = max(floor(log2 v), emin) - man, so the code counts
// grid steps: code = (max(e, emin) - emin) << man + r, r = v / 2^q rounded
// to nearest even (r = 2^man is the smallest normal; a carry to 2^(man+1)
// is the next binade's first code). Above max_code: satfinite max_code,
// else overflow_code. NaN gives nan_mag (a marker the encoder resolves).
constexpr uint32_t Half16RnMagnitude(bool bf16, uint32_t v, FastFormat t, bool satfinite,
                                     uint32_t nan_mag) {
  const int man = bf16 ? 7 : 10, bias = bf16 ? 127 : 15;
  const uint32_t e_all_ones = bf16 ? 0xFFu : 0x1Fu;
  const uint32_t clamp = satfinite ? t.max_code : t.overflow_code;
  const uint32_t e_field = v >> man, m_field = v & ((1u << man) - 1u);
  if (e_field == e_all_ones) return m_field != 0 ? nan_mag : clamp;  // NaN, Inf
  if (v == 0) return 0;
  const uint32_t sig = e_field != 0 ? (1u << man) | m_field : m_field;
  const int sig_exp = static_cast<int>(e_field != 0 ? e_field : 1u) - bias - man;
  int top = 0;
  while ((sig >> (top + 1)) != 0) ++top;
  const int emin = 1 - t.bias;
  const int e = top + sig_exp > emin ? top + sig_exp : emin;
  const int s = e - t.man_bits - sig_exp;  // discarded bits of sig
  uint32_t r = 0;
  if (s <= 0) {
    r = sig << -s;
  } else if (s < 31) {
    const uint32_t rem = sig & ((1u << s) - 1u), half = 1u << (s - 1);
    r = sig >> s;
    if (rem > half || (rem == half && (r & 1u) != 0)) ++r;
  }  // s >= 31: sig < 2^11 is below half a grid step, r = 0.
  const uint32_t code = (static_cast<uint32_t>(e - emin) << t.man_bits) + r;
  return code > t.max_code ? clamp : code;
}

// The tables of one (source, destination, saturation). An element is split
// into its high byte H and low byte L; vpermi2b reads bits 6:0 of an index
// byte, so H's sign never reaches a lookup:
//   f16:   H = s EEEEE MM   L = MMMMMMMM
//   bf16:  H = s EEEEEEE    L = E MMMMMMM
// Every lookup class c covers magnitudes whose code is non-decreasing in L
// and steps by one (the source grid is finer than the code's), so
//   code = base[c] + (L > step1[c]) + (L > step2[c])   (255: no step).
//  * f16: c = H & 0x7F, a quarter binade: at most two steps (3-bit codes).
//  * bf16: H holds only an exponent pair p. pair[p] = P | k, with P a
//    multiple of 8 and k < 8 a pattern shared by every pair whose codes are
//    P plus the same function of L (all the normal pairs: P moves by the
//    pair's exponents). c = (L >> 4) << 3 | k, an eighth of a binade: at
//    most one step, and base[c] is the pattern's code offset minus k, so
//      code = base[c] + pair[p] + (L > step1[c]).
struct Half16Lut {
  alignas(64) uint8_t pair[128];  // bf16 only
  alignas(64) uint8_t base[128];
  alignas(64) uint8_t step1[128];
  alignas(64) uint8_t step2[128];  // f16 only
  int steps;  // the most steps of any class
  bool ok;    // every class fits (bf16: at most 8 patterns)
};

struct Half16Class {
  uint8_t base, step1, step2;
  int steps;
};

// The class of the magnitudes v0 + l, l < count (count <= 256): base and the
// thresholds v0-relative l - 1 at each step (bisection; at most two).
constexpr Half16Class DescribeHalf16Class(bool bf16, uint32_t v0, uint32_t count, FastFormat t,
                                          bool satfinite, uint32_t nan_mag) {
  const uint32_t lo = Half16RnMagnitude(bf16, v0, t, satfinite, nan_mag);
  const uint32_t hi = Half16RnMagnitude(bf16, v0 + count - 1, t, satfinite, nan_mag);
  Half16Class c{static_cast<uint8_t>(lo), 255, 255, static_cast<int>(hi - lo)};
  for (int k = 0; k < c.steps && k < 2; ++k) {
    uint32_t a = 1, b = count - 1;  // smallest l with code(v0 + l) > lo + k
    while (a < b) {
      const uint32_t mid = (a + b) / 2;
      if (Half16RnMagnitude(bf16, v0 + mid, t, satfinite, nan_mag) > lo + k) {
        b = mid;
      } else {
        a = mid + 1;
      }
    }
    (k == 0 ? c.step1 : c.step2) = static_cast<uint8_t>(a - 1);
  }
  return c;
}

constexpr Half16Lut MakeHalf16Lut(bool bf16, FastFormat t, bool satfinite, uint32_t nan_mag) {
  Half16Lut lut{};
  lut.ok = true;
  if (!bf16) {
    for (uint32_t c = 0; c < 128; ++c) {
      const Half16Class f = DescribeHalf16Class(false, c << 8, 256, t, satfinite, nan_mag);
      lut.base[c] = f.base;
      lut.step1[c] = f.step1;
      lut.step2[c] = f.step2;
      lut.ok = lut.ok && f.steps <= 2;
      lut.steps = f.steps > lut.steps ? f.steps : lut.steps;
    }
    return lut;
  }
  // Patterns: code offsets from P and thresholds over the 16 L ranges.
  uint8_t offset[8][16] = {}, step[8][16] = {};
  int patterns = 0;
  for (uint32_t p = 0; p < 128; ++p) {
    uint8_t off[16] = {}, st[16] = {};
    uint32_t base_p = 0;
    for (uint32_t s = 0; s < 16; ++s) {
      const Half16Class f =
          DescribeHalf16Class(true, (p << 8) | (s << 4), 16, t, satfinite, nan_mag);
      lut.ok = lut.ok && f.steps <= 1;
      lut.steps = f.steps > lut.steps ? f.steps : lut.steps;
      if (s == 0) base_p = f.base & ~7u;
      off[s] = static_cast<uint8_t>(f.base - base_p);
      // Thresholds compare against L itself, whose top bits are s.
      st[s] = f.step1 == 255 ? 255 : static_cast<uint8_t>(f.step1 + (s << 4));
    }
    int k = -1;
    for (int q = 0; q < patterns && k < 0; ++q) {
      bool same = true;
      for (int s = 0; s < 16; ++s) same = same && offset[q][s] == off[s] && step[q][s] == st[s];
      if (same) k = q;
    }
    if (k < 0) {
      lut.ok = lut.ok && patterns < 8;
      k = patterns < 8 ? patterns++ : 0;
      for (int s = 0; s < 16; ++s) {
        offset[k][s] = off[s];
        step[k][s] = st[s];
      }
    }
    lut.pair[p] = static_cast<uint8_t>(base_p | static_cast<uint32_t>(k));
  }
  for (uint32_t k = 0; k < 8; ++k) {
    for (uint32_t s = 0; s < 16; ++s) {
      lut.base[(s << 3) | k] = static_cast<uint8_t>(offset[k][s] - k);
      lut.step1[(s << 3) | k] = step[k][s];
      lut.step2[(s << 3) | k] = 255;
    }
  }
  return lut;
}

// ue8m0 code of an f16 magnitude v under rz (floor of log2 |x|) or rp
// (ceiling), docs/semantics.md section 1: the exponent of |x| plus 127, plus
// one under rp when |x| is not a power of two; zero gives 0, NaN 0xFF, Inf
// 0xFE (satfinite) or 0xFF. Every f16 lies in [2^-24, 2^16].
constexpr uint32_t F16UE8M0(uint32_t v, bool rp, bool satfinite) {
  const uint32_t e_field = v >> 10, m_field = v & 0x3FFu;
  if (e_field == 0x1F) return m_field != 0 || !satfinite ? 0xFFu : 0xFEu;
  if (v == 0) return 0;
  const uint32_t sig = e_field != 0 ? 0x400u | m_field : m_field;
  int top = 0;
  while ((sig >> (top + 1)) != 0) ++top;
  const int e = top + static_cast<int>(e_field != 0 ? e_field : 1u) - 25;
  return static_cast<uint32_t>(e + 127) + (rp && sig != (1u << top) ? 1u : 0u);
}

// Tables of f16 -> ue8m0: for H >= 1 (|x| >= 2^-16, codes >= 111) a class
// is code = base[H] + (L > step1[H]) (one step at most: rp above a power of
// two, satfinite from Inf to NaN). H = 0 (|x| = L 2^-24) has one code per power of two of L; there the
// code is max(low[L & 0x7F], min(L - 18 (saturating), cap)), cap = 110 (rz)
// or 111 (rp): low[] holds the codes of L < 128, and min(L - 18, cap) is the
// code of every L >= 128 (110, or under rp 110 at L = 128 and 111 above)
// while staying at or below low[L] for L < 128. Both terms stay below 111
// (rp: at most 111), the smallest code of H >= 1, so the encoder takes the
// max of the two forms for every lane and class 0 has base 0, no step.
struct F16UE8M0Lut {
  alignas(64) uint8_t base[128];
  alignas(64) uint8_t step1[128];
  alignas(64) uint8_t low[128];
  bool steps;  // some class steps (rp; rz satfinite: Inf -> NaN)
  bool ok;
};

constexpr F16UE8M0Lut MakeF16UE8M0Lut(bool rp, bool satfinite) {
  F16UE8M0Lut lut{};
  lut.ok = true;
  const uint32_t cap = rp ? 111 : 110;
  for (uint32_t c = 0; c < 128; ++c) {
    const uint32_t lo = F16UE8M0(c << 8, rp, satfinite), hi = F16UE8M0((c << 8) | 0xFF, rp, satfinite);
    lut.base[c] = static_cast<uint8_t>(c == 0 ? 0 : lo);
    lut.step1[c] = 255;
    lut.ok = lut.ok && (c == 0 || lo >= cap);
    if (c != 0 && hi != lo) {
      uint32_t a = 1, b = 255;  // smallest L with a larger code
      while (a < b) {
        const uint32_t mid = (a + b) / 2;
        if (F16UE8M0((c << 8) | mid, rp, satfinite) > lo) {
          b = mid;
        } else {
          a = mid + 1;
        }
      }
      lut.step1[c] = static_cast<uint8_t>(a - 1);
      lut.steps = true;
      lut.ok = lut.ok && hi == lo + 1;
    }
    lut.low[c] = static_cast<uint8_t>(F16UE8M0(c, rp, satfinite));
  }
  for (uint32_t l = 0; l < 256; ++l) {  // the H = 0 form, checked against the model
    const uint32_t low = F16UE8M0(l & 0x7F, rp, satfinite), tail = l > 18 ? l - 18 : 0;
    const uint32_t form = low > (tail < cap ? tail : cap) ? low : (tail < cap ? tail : cap);
    lut.ok = lut.ok && form == F16UE8M0(l, rp, satfinite);
  }
  return lut;
}

// ue8m0 code of a bf16 magnitude v (15 bits) under rz (floor of log2 |x|)
// or rp (ceiling), docs/semantics.md section 1: the exponent field E, plus
// one under rp when the fraction is not zero. Values below 2^-127 (0x0040)
// give 0 and 2^-127 itself gives 0; under rp (2^-127, 2^-126) gives 1. A
// carry out of 254 (rp) overflows like Inf: 0xFE (satfinite) or 0xFF; NaN
// gives 0xFF.
constexpr uint32_t BF16UE8M0(uint32_t v, bool rp, bool satfinite) {
  const uint32_t e_field = v >> 7, m_field = v & 0x7Fu;
  if (e_field == 0xFF && m_field != 0) return 0xFFu;  // NaN
  if (e_field == 0) return rp && m_field > 0x40 ? 1u : 0u;
  const uint32_t code = e_field + (rp && m_field != 0 ? 1u : 0u);  // Inf: 0xFF
  return code == 0xFF && satfinite ? 0xFEu : code;
}

// Tables of bf16 -> ue8m0. An element's bytes are H = s EEEEEEE and
// L = E MMMMMMM; every class H & 0x7F (two binades) has codes
// non-decreasing in L by steps of one, at most two steps:
//   rz: 2H, 2H + 1 above L = 0x7F (class 0x7F satfinite: Inf stays 254,
//       the step is above 0x80, NaN);
//   rp: 2H, 2H + 1 above L = 0 (class 0: above 0x40), 2H + 2 above 0x80
//       (class 0x7F: 254, then 255 for the carry, Inf and NaN; satfinite
//       keeps 254 up to Inf).
// so code = base[H] + (L > step1[H]) + (L > step2[H]), 255 meaning no step.
// A step table whose entries are all one threshold is a constant compare.
struct BF16UE8M0Lut {
  alignas(64) uint8_t base[128];
  alignas(64) uint8_t step1[128];
  alignas(64) uint8_t step2[128];
  int steps;        // the most steps of any class
  bool step1_same;  // every step1 entry equals step1[0]
  bool step2_same;
  bool ok;  // every class fits (codes rise by one, at most 2 steps)
};

constexpr BF16UE8M0Lut MakeBF16UE8M0Lut(bool rp, bool satfinite) {
  BF16UE8M0Lut lut{};
  lut.ok = true;
  for (uint32_t h = 0; h < 128; ++h) {
    uint32_t code = BF16UE8M0(h << 8, rp, satfinite);
    lut.base[h] = static_cast<uint8_t>(code);
    lut.step1[h] = lut.step2[h] = 255;
    int steps = 0;
    for (uint32_t l = 1; l < 256; ++l) {
      const uint32_t next = BF16UE8M0((h << 8) | l, rp, satfinite);
      if (next == code) continue;
      lut.ok = lut.ok && next == code + 1 && steps < 2;
      (steps == 0 ? lut.step1[h] : lut.step2[h]) = static_cast<uint8_t>(l - 1);
      ++steps;
      code = next;
    }
    lut.steps = steps > lut.steps ? steps : lut.steps;
  }
  lut.step1_same = lut.step2_same = true;
  for (uint32_t h = 0; h < 128; ++h) {
    lut.step1_same = lut.step1_same && lut.step1[h] == lut.step1[0];
    lut.step2_same = lut.step2_same && lut.step2[h] == lut.step2[0];
  }
  return lut;
}

// vpermt2b indices of a:b (two vectors of 32 u16): byte i of the result is
// byte 2i + 1 (hi) or 2i (lo), the high and low bytes of element i.
struct Half16Gather {
  alignas(64) uint8_t hi[64];
  alignas(64) uint8_t lo[64];
};
constexpr Half16Gather MakeHalf16Gather() {
  Half16Gather g{};
  for (int i = 0; i < 64; ++i) {
    g.lo[i] = static_cast<uint8_t>(2 * i);
    g.hi[i] = static_cast<uint8_t>(2 * i + 1);
  }
  return g;
}
inline constexpr Half16Gather kHalf16Gather = MakeHalf16Gather();

}  // namespace mxpack::internal
#endif  // MXPACK_SRC_FORMAT_ENCODE_HALF16_LUT_TABLES_

#if defined(MXPACK_SRC_FORMAT_ENCODE_HALF16_LUT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_HALF16_LUT_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_HALF16_LUT_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_HALF16_LUT_INL_H_
#endif

#include "hwy/highway.h"
#include "src/format/convert_params.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

#undef MXPACK_HAVE_HALF16_LUT_ENCODE  // per target: this header is re-included
#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX3_DL
#define MXPACK_HAVE_HALF16_LUT_ENCODE 1
// bf16 / f16 (kSrc) -> kTo (at most 8 bits) under rn, 64 elements per call:
//
//   using Enc = Avx512LutEncodeHalf16<kSrc, kTo, kSatFinite, kRelu>;
//   const Enc::Tables t = Enc::LoadTables();   // once, outside the loop
//   Enc::Encode64(t, a, b) -> __m512i
//
// returns the codes of the 32 + 32 source elements of a and b, in order, as
// u8 lanes, bit-identical to scalar::Convert(kSrc, kTo, rn policy) for every
// input (docs/semantics.md section 1). Two vpermt2b split the elements into
// high bytes H and low bytes L; the magnitude code is that of Half16Lut,
//   f16:  base[H] + (L > step1[H]) + (L > step2[H])
//   bf16: base[c] + pair[H] + (L > step1[c]),  c = (L >> 4) << 3 | pair[H] & 7,
// each table a 128-entry vpermi2b and each step one unsigned compare and a
// masked add (f16: 5 lookups, bf16: 5 lookups and a shift). Normal,
// subnormal, saturating and NaN inputs are the same operations; only the
// sign is applied after the lookups:
//  * NaN magnitudes get the marker kNanMag = clamp + 1, one step above Inf's
//    code in the class (Inf, NaN) of the smallest NaN bit patterns; the marker
//    leaves the sign off and becomes nan_code.
//  * signed 8-bit codes with kNanMag >= nan_code: bit 7 of a vpavgb (or the
//    code itself) flags the marker, and one ternary op keeps H's sign bit
//    where it is clear; fp4 / fp6 and e5m2 flag it with a byte compare.
template <internal::SrcKind kSrc, Format kTo, bool kSatFinite, bool kRelu>
struct Avx512LutEncodeHalf16 {
  static_assert(kSrc == internal::SrcKind::kBF16 || kSrc == internal::SrcKind::kF16,
                "16-bit sources only");
  static_assert(internal::HasFastEncode(kTo, kSatFinite, kRelu), "no rn encoder for this policy");
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kTo);
  static_assert(kT.bits <= 8 && kTo != Format::kUE8M0, "narrow rn destinations only");
  static constexpr bool kBF16 = kSrc == internal::SrcKind::kBF16;
  static constexpr uint32_t kClamp = kSatFinite ? kT.max_code : kT.overflow_code;
  // Signed formats: a marker one above every other magnitude; unsigned
  // (ue4m3): nan_code itself, no sign to suppress.
  static constexpr uint8_t kNanMag = static_cast<uint8_t>(kT.has_sign ? kClamp + 1 : kT.nan_code);
  static constexpr internal::Half16Lut kLut =
      internal::MakeHalf16Lut(kBF16, kT, kSatFinite, kNanMag);
  static_assert(kLut.ok, "a class needs more thresholds (or bf16 more patterns) than Encode64 has");

  struct Tables {
    __m512i hi_idx, lo_idx, pair0, pair1, base0, base1, step1_0, step1_1, step2_0, step2_1;
  };

  static HWY_INLINE Tables LoadTables() {
    const auto load = [](const uint8_t* p) { return _mm512_loadu_si512(p); };
    return {load(internal::kHalf16Gather.hi),
            load(internal::kHalf16Gather.lo),
            load(kLut.pair),
            load(kLut.pair + 64),
            load(kLut.base),
            load(kLut.base + 64),
            load(kLut.step1),
            load(kLut.step1 + 64),
            load(kLut.step2),
            load(kLut.step2 + 64)};
  }

  static HWY_INLINE __m512i Encode64(const Tables& t, __m512i a, __m512i b) {
    const __m512i hi = _mm512_permutex2var_epi8(a, t.hi_idx, b);
    const __m512i lo = _mm512_permutex2var_epi8(a, t.lo_idx, b);
    const __m512i one = _mm512_set1_epi8(1);
    if constexpr (kBF16) {
      // c = (L >> 4) << 3 | k: L >> 1 puts L's bits 7:4 at 6:3 (the 16-bit
      // shift moves a neighbour's bit into bit 7, which vpermi2b ignores),
      // and pair[p]'s bits 2:0 are k.
      const __m512i pair = _mm512_permutex2var_epi8(t.pair0, hi, t.pair1);
      const __m512i cls = _mm512_ternarylogic_epi32(pair, _mm512_srli_epi16(lo, 1),
                                                    _mm512_set1_epi8(7), 0xE4);
      __m512i code = _mm512_add_epi8(_mm512_permutex2var_epi8(t.base0, cls, t.base1), pair);
      code = _mm512_mask_add_epi8(
          code, _mm512_cmpgt_epu8_mask(lo, _mm512_permutex2var_epi8(t.step1_0, cls, t.step1_1)),
          code, one);
      return Finish(code, hi);
    }
    __m512i code = _mm512_permutex2var_epi8(t.base0, hi, t.base1);
    code = _mm512_mask_add_epi8(
        code, _mm512_cmpgt_epu8_mask(lo, _mm512_permutex2var_epi8(t.step1_0, hi, t.step1_1)),
        code, one);
    if constexpr (kLut.steps > 1) {
      code = _mm512_mask_add_epi8(
          code, _mm512_cmpgt_epu8_mask(lo, _mm512_permutex2var_epi8(t.step2_0, hi, t.step2_1)),
          code, one);
    }
    return Finish(code, hi);
  }

 private:
  // code (magnitudes, NaN = kNanMag) and H (sign in bit 7) -> the codes.
  static HWY_INLINE __m512i Finish(__m512i code, __m512i hi) {
    const __m512i nan_code = _mm512_set1_epi8(static_cast<char>(kT.nan_code));
    if constexpr (!kT.has_sign) {
      return code;  // kNanMag = nan_code
    } else if constexpr (kRelu) {
      // Negative non-NaN lanes (and -0) become +0.
      const __mmask64 is_nan = _mm512_cmpeq_epi8_mask(code, _mm512_set1_epi8(kNanMag));
      code = _mm512_mask_mov_epi8(code, is_nan, nan_code);
      return _mm512_maskz_mov_epi8(~_mm512_movepi8_mask(hi) | is_nan, code);
    } else if constexpr (kT.bits == 8 && kNanMag >= kT.nan_code) {
      // Bit 7 of flag is set exactly on the marker: the code itself when the
      // marker is 0x80 (e4m3 nosat), else (code + 0x100 - kNanMag) >> 1.
      const __m512i flag =
          kNanMag >= 0x80
              ? code
              : _mm512_avg_epu8(code, _mm512_set1_epi8(static_cast<char>(0xFF - kNanMag)));
      // H & ~flag & 0x80: the sign of the non-NaN lanes.
      const __m512i sign =
          _mm512_ternarylogic_epi32(hi, flag, _mm512_set1_epi8(static_cast<char>(0x80)), 0x20);
      if constexpr (kNanMag != kT.nan_code) code = _mm512_min_epu8(code, nan_code);
      return _mm512_or_si512(code, sign);
    } else if constexpr (kT.bits == 8) {
      // e5m2: the marker sits below nan_code.
      const __mmask64 is_nan = _mm512_cmpeq_epi8_mask(code, _mm512_set1_epi8(kNanMag));
      const __m512i signed_code =
          _mm512_ternarylogic_epi32(code, hi, _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);
      return _mm512_mask_mov_epi8(signed_code, is_nan, nan_code);
    } else {
      // fp4 / fp6 (satfinite): the sign goes to bit bits - 1 of the
      // negative non-NaN lanes; NaN is positive max finite (= nan_code).
      const __mmask64 negative =
          _mm512_mask_cmplt_epu8_mask(_mm512_movepi8_mask(hi), code, _mm512_set1_epi8(kNanMag));
      code = _mm512_min_epu8(code, nan_code);
      return _mm512_mask_add_epi8(code, negative, code,
                                  _mm512_set1_epi8(static_cast<char>(1u << (kT.bits - 1))));
    }
  }

};

// f16 -> ue8m0 under rz (kRP false) or rp, 64 elements per call
// (docs/semantics.md section 1; the sign is ignored), by the tables of
// F16UE8M0Lut:
//
//   using Enc = Avx512LutF16ToUE8M0<kRP, kSatFinite>;
//   Enc::Encode64(Enc::LoadTables(), a, b) -> __m512i (codes in u8 lanes)
template <bool kRP, bool kSatFinite>
struct Avx512LutF16ToUE8M0 {
  static constexpr internal::F16UE8M0Lut kLut = internal::MakeF16UE8M0Lut(kRP, kSatFinite);
  static_assert(kLut.ok, "f16 -> ue8m0 tables do not fit the encoder");

  struct Tables {
    __m512i hi_idx, lo_idx, base0, base1, step1_0, step1_1, low0, low1;
  };

  static HWY_INLINE Tables LoadTables() {
    const auto load = [](const uint8_t* p) { return _mm512_loadu_si512(p); };
    return {load(internal::kHalf16Gather.hi), load(internal::kHalf16Gather.lo),
            load(kLut.base),                  load(kLut.base + 64),
            load(kLut.step1),                 load(kLut.step1 + 64),
            load(kLut.low),                   load(kLut.low + 64)};
  }

  static HWY_INLINE __m512i Encode64(const Tables& t, __m512i a, __m512i b) {
    const __m512i hi = _mm512_permutex2var_epi8(a, t.hi_idx, b);
    const __m512i lo = _mm512_permutex2var_epi8(a, t.lo_idx, b);
    __m512i code = _mm512_permutex2var_epi8(t.base0, hi, t.base1);
    if constexpr (kLut.steps) {
      code = _mm512_mask_add_epi8(
          code, _mm512_cmpgt_epu8_mask(lo, _mm512_permutex2var_epi8(t.step1_0, hi, t.step1_1)),
          code, _mm512_set1_epi8(1));
    }
    // The H = 0 form (below every other class's codes, so a max merges it).
    const __m512i tail = _mm512_min_epu8(_mm512_subs_epu8(lo, _mm512_set1_epi8(18)),
                                         _mm512_set1_epi8(kRP ? 111 : 110));
    const __m512i low = _mm512_max_epu8(_mm512_permutex2var_epi8(t.low0, lo, t.low1), tail);
    return _mm512_max_epu8(code, low);
  }
};

// bf16 -> ue8m0 under rz (kRP false) or rp, 64 elements per call
// (docs/semantics.md section 1; the sign is ignored), by the tables of
// BF16UE8M0Lut:
//
//   using Enc = Avx512LutBF16ToUE8M0<kRP, kSatFinite>;
//   Enc::Encode64(Enc::LoadTables(), a, b) -> __m512i (codes in u8 lanes)
//
// Two vpermt2b split the elements into H and L; one vpermi2b gives the base
// code and each step is a vpermi2b (or a constant), an unsigned compare and
// a masked add: rp 9 operations, rz 5 or 6.
template <bool kRP, bool kSatFinite>
struct Avx512LutBF16ToUE8M0 {
  static constexpr internal::BF16UE8M0Lut kLut = internal::MakeBF16UE8M0Lut(kRP, kSatFinite);
  static_assert(kLut.ok, "bf16 -> ue8m0 tables do not fit the encoder");

  struct Tables {
    __m512i hi_idx, lo_idx, base0, base1, step1_0, step1_1, step2_0, step2_1;
  };

  static HWY_INLINE Tables LoadTables() {
    const auto load = [](const uint8_t* p) { return _mm512_loadu_si512(p); };
    return {load(internal::kHalf16Gather.hi), load(internal::kHalf16Gather.lo),
            load(kLut.base),                  load(kLut.base + 64),
            load(kLut.step1),                 load(kLut.step1 + 64),
            load(kLut.step2),                 load(kLut.step2 + 64)};
  }

  static HWY_INLINE __m512i Encode64(const Tables& t, __m512i a, __m512i b) {
    const __m512i hi = _mm512_permutex2var_epi8(a, t.hi_idx, b);
    const __m512i lo = _mm512_permutex2var_epi8(a, t.lo_idx, b);
    __m512i code = _mm512_permutex2var_epi8(t.base0, hi, t.base1);
    const __m512i one = _mm512_set1_epi8(1);
    if constexpr (kLut.steps >= 1) {
      const __m512i step1 = kLut.step1_same
                                ? _mm512_set1_epi8(static_cast<char>(kLut.step1[0]))
                                : _mm512_permutex2var_epi8(t.step1_0, hi, t.step1_1);
      code = _mm512_mask_add_epi8(code, _mm512_cmpgt_epu8_mask(lo, step1), code, one);
    }
    if constexpr (kLut.steps >= 2) {
      const __m512i step2 = kLut.step2_same
                                ? _mm512_set1_epi8(static_cast<char>(kLut.step2[0]))
                                : _mm512_permutex2var_epi8(t.step2_0, hi, t.step2_1);
      code = _mm512_mask_add_epi8(code, _mm512_cmpgt_epu8_mask(lo, step2), code, one);
    }
    return code;
  }
};
#endif  // AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_HALF16_LUT_INL_H_
