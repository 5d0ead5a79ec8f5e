// NVFP4 element thresholds (Nvfp4Arithmetic::kExact): for each ue4m3 scale
// code, the f32 bounds that decide every e2m1 code of x / (d * t) exactly,
// shared by the SIMD kernels (src/mx/nvfp4_exact-inl.h), filled on first use
// and kept per thread while the tensor scale stays the same (src/mx/quantize.cc).
#ifndef MXPACK_SRC_MX_NVFP4_THRESHOLDS_H_
#define MXPACK_SRC_MX_NVFP4_THRESHOLDS_H_

#include <cstdint>
#include <cstring>

namespace mxpack::internal {

// The largest f32 (bits) at or below m (a double >= 0, or NaN -> f32 max);
// `exact` says whether it equals m. Integer arithmetic: independent of MXCSR.
inline uint32_t F32BitsAtOrBelow(double m, bool* exact) {
  uint64_t b;
  std::memcpy(&b, &m, 8);
  if (b == 0) {
    *exact = true;
    return 0;
  }
  const int e = static_cast<int>(b >> 52) - 1023;  // m = mant * 2^(e - 52)
  const uint64_t mant = (b & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
  if (e > 127) {  // beyond f32 max (and NaN)
    *exact = false;
    return 0x7F7FFFFFu;
  }
  // Keep 24 bits (normal) or the bits down to 2^-149 (subnormal).
  const int shift = e >= -126 ? 29 : 29 + (-126 - e);
  if (shift >= 64) {
    *exact = false;
    return 0;
  }
  const uint64_t q = mant >> shift;
  *exact = (mant & ((uint64_t{1} << shift) - 1)) == 0;
  return e >= -126 ? static_cast<uint32_t>(e + 127) << 23 | static_cast<uint32_t>(q & 0x7FFFFF)
                   : static_cast<uint32_t>(q);
}

// NVFP4 (Nvfp4Arithmetic::kExact) elements by comparison: with P = d * t
// and the e2m1 midpoints m_i = 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5 (between
// magnitude codes i and i + 1), |code| = the number of i with |x| > m_i * P
// (i even) or |x| >= m_i * P (i odd: the tie goes up to the even code), and
// satfinite comes for free (|x| > 5P gives 7). d (4 significant bits), t (24)
// and m_i (3) make every m_i * P exact in f64; each test becomes
// |x| > T_i for the f32 T_i = the largest f32 below m_i * P (odd i, m_i * P
// an f32) or at or below it (else), so the kernels compare f32 bits as
// integers. thr[i] = T_i bits for i < 7; thr[7] = 8 when P == 0 (then every
// T_i is f32 max: finite x gives +-0 = encode(x * 0), +-Inf gives 7, which
// must be the unsigned encode(NaN) = 0x7), else 0.
inline void Nvfp4ElementThresholds(float d, float tensor_scale, uint32_t* thr) {
  const double p = static_cast<double>(d) * static_cast<double>(tensor_scale);
  static constexpr double kMid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  if (p == 0.0) {
    for (int i = 0; i < 7; ++i) thr[i] = 0x7F7FFFFFu;
    thr[7] = 8;
    return;
  }
  for (int i = 0; i < 7; ++i) {
    bool exact;
    const uint32_t t = F32BitsAtOrBelow(kMid[i] * p, &exact);
    thr[i] = (i % 2 == 1 && exact) ? t - 1 : t;  // (exact: t >= 1)
  }
  thr[7] = 0;
}

// The smallest f32 r with r * p >= 1, for p = d t (d a ue4m3 value, t an
// f32: exact in f64) with 1 / p a normal f32. Each r * p (24 + 28
// significant bits) is exact in f64, so the steps from the f64 quotient's
// f32 (rounded in whatever mode the caller set) decide exactly.
inline float RecipUp(double p) {
  const float guess = static_cast<float>(1.0 / p);
  uint32_t b;
  std::memcpy(&b, &guess, 4);
  const auto at = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return static_cast<double>(f);
  };
  while (at(b) * p < 1.0) ++b;       // (positive normal f32: the next one up)
  while (at(b - 1) * p >= 1.0) --b;  // and down
  float r;
  std::memcpy(&r, &b, 4);
  return r;
}

// The byte-table form of one scale code's bf16 thresholds thr16[0..6]
// (T_i >> 16, non-decreasing), for Nvfp4ExactOps::Bf16TableCodes64. A bf16
// magnitude a = E << 7 | M exceeds T = E_T << 7 | M_T iff E > E_T, or
// E == E_T and M > M_T; so within one binade E the count of T_i below a is
// B(E) (the T_i below E << 7) plus [M > M_T] for each T_i in binade E with
// M_T < 127 (one with M_T = 127 is never exceeded there). With first = the
// binade of T_0 + 1 (the lowest binade whose count is not always 0):
//   j = min(max(E - ebase, 0), 7), ebase = first - 1,
// row j = 0 (E < first) has count 0, rows 1..6 are the binades first ..
// first + 5, and row 7 every binade from first + 6 on, which holds count 7
// when T_6 lies below binade first + 6 (T_6 / T_0 = 20 < 2^5 for normal
// thresholds). Every row needs at most two T_i with M_T < 127 in its binade
// (consecutive T_i are at least 1.4 apart; more fit only in subnormal
// binades). Row bytes: base[j] = B, t1[j] <= t2[j] the bytes M_T << 1 | 1
// of those T_i, 255 for a missing one: compared unsigned with M << 1 | s
// (any s) they give M > M_T. False (not representable) when first is 0 or a
// binade needs more than two T_i or T_6 lies too high.
struct Bf16ByteRow {
  uint8_t base[8], t1[8], t2[8];
};
inline bool MakeBf16ByteRow(const uint16_t* thr16, uint8_t* ebase, Bf16ByteRow* row) {
  const int first = (thr16[0] + 1) >> 7;
  if (first == 0 || thr16[6] >= (first + 6) << 7) return false;
  *ebase = static_cast<uint8_t>(first - 1);
  int below[9] = {};  // below[r + 1]: the T_i in row r's binade (prefix sums: base)
  for (int j = 0; j < 8; ++j) row->t1[j] = row->t2[j] = 255;
  for (int i = 0; i < 7; ++i) {
    // Row of T_i's binade: 0 (binade first - 1, M_T = 127) .. 6.
    const int r = (thr16[i] >> 7) - first + 1, mt = thr16[i] & 127;
    ++below[r + 1];
    if (r >= 1 && mt < 127) {
      if (row->t2[r] != 255) return false;
      (row->t1[r] == 255 ? row->t1 : row->t2)[r] = static_cast<uint8_t>(mt << 1 | 1);
    }
  }
  int base = 0;
  for (int j = 0; j < 8; ++j) {
    base += below[j];
    row->base[j] = static_cast<uint8_t>(j == 0 ? 0 : base);
  }
  return true;
}

// Nvfp4ElementThresholds of every scale code a call meets, filled on first
// use (a call usually meets a handful of the 128 codes).
struct Nvfp4ThresholdTable {
  Nvfp4ThresholdTable(float t, const float* table) : tensor_scale(t), ue4m3(table) {
    std::memset(thr16[128], 0, sizeof(thr16[128]));
    // Unused slots (code 0 reads row 0 of slot 0 before any row is added):
    // code 0.
    std::memset(bf16_t1, 255, sizeof(bf16_t1));
    std::memset(bf16_t2, 255, sizeof(bf16_t2));
    // The codes whose d t reaches 2^-123 (recip below).
    while (recip_min_code < 128 &&
           !(static_cast<double>(ue4m3[recip_min_code]) * static_cast<double>(t) >= 0x1p-123)) {
      ++recip_min_code;
    }
  }

  float tensor_scale;
  const float* ue4m3;  // decode table of the 128 scale codes
  uint64_t have[2] = {0, 0};  // thr, thr16
  uint64_t have_recip[2] = {0, 0};
  uint64_t have_bf16[2] = {0, 0};
  uint32_t thr[128][8];
  // thr >> 16 (entry 7: 0), for bf16 sources: a bf16 magnitude h (h << 16
  // in f32 bits, low half zero) exceeds T iff h > T >> 16, so the u16
  // compares decide exactly as the u32 ones.
  // (A spare row: Nvfp4ExactOps::Bf16Codes64 reads one u16 past a row.)
  alignas(16) uint16_t thr16[128 + 1][8];
  // The smallest f32 at or above 1 / (d t) (RecipUp: independent of the
  // rounding mode) for the codes recip_min_code..127 (d t >= 2^-123: at
  // most 2^123, far from f32 max); 0 for the others (code 0: d t = 0),
  // whose products (+-0) send their steps to the thresholds.
  float recip[128];
  unsigned recip_min_code = 1;
  // MakeBf16ByteRow of each filled code: the rows in up to 8 slots (index
  // 8 slot + j; codes of one ue4m3 significand share a row when their
  // thresholds are normal f32), and per code its ebase and 8 slot. Code 0
  // (d t = 0, thresholds f32 max: ebase 0xFE, every finite a in row 0)
  // shares slot 0. bf16_bad: codes without a row (more rows, or
  // MakeBf16ByteRow false).
  alignas(64) uint8_t bf16_base[64] = {};
  alignas(64) uint8_t bf16_t1[64] = {};
  alignas(64) uint8_t bf16_t2[64] = {};
  alignas(64) uint8_t bf16_ebase[128] = {};
  alignas(64) uint8_t bf16_slot8[128] = {};
  uint64_t bf16_bad[2] = {0, 0};
  unsigned bf16_slots = 0;
  // rn scale codes of bf16 amax by one binade of amax (built on first use
  // by Nvfp4ExactOps::BuildBf16AmaxCodes): amax_e0 is the biased exponent
  // E0 of the binade whose quotients amax / (6 t) lie in (0.5, 2) (0: not
  // built; -1: none, E0 outside 1..254), and amax_code[m] = c(m) - (m >> 4)
  // with c(m) the code of the amax 1.m * 2^(E0 - 127) (7-bit m).
  int amax_e0 = 0;
  alignas(64) uint8_t amax_code[128] = {};
  // The same for f32 amax (Nvfp4ExactOps::BuildF32AmaxCodes): f32_amax_e0
  // as amax_e0; per 7-bit m (an amax bucket of 2^16 f32), the code c0(m)
  // of the bucket's first f32 and f32_amax_low[m], the low 16 bits of the
  // first f32 of the bucket whose code is c0(m) + 1 (0 where the whole
  // bucket has one code, then stored as c0(m) - 1); f32_amax_code[m] holds
  // that code - (m >> 4).
  int f32_amax_e0 = 0;
  alignas(64) uint8_t f32_amax_code[128] = {};
  alignas(64) uint16_t f32_amax_low[128] = {};

  // Whether every code lo..hi (filled) has a bf16 byte row.
  bool Bf16RowsCover(unsigned lo, unsigned hi) const {
    for (unsigned w = 0; w < 2; ++w) {
      const unsigned first = lo > 64 * w ? lo - 64 * w : 0;
      if (hi < 64 * w || first > 63) continue;
      const unsigned last = hi - 64 * w < 63 ? hi - 64 * w : 63;
      const uint64_t span = (~uint64_t{0} >> (63 - last)) & (~uint64_t{0} << first);
      if ((bf16_bad[w] & span) != 0) return false;
    }
    return true;
  }

  // What a source needs besides thr and thr16: recip (f32) or the bf16
  // byte rows.
  enum class Extra { kRecip, kBf16Rows };

  // Fills the missing rows of the codes lo..hi (a chunk's scale codes
  // usually span a few binades; the span costs less to find than the set)
  // and their `extra`. Returns at once inside the last span filled for
  // `extra` (grown while spans overlap): a call's chunks mostly repeat it.
  void Fill(unsigned lo, unsigned hi, Extra extra) {
    unsigned* done = filled[extra == Extra::kRecip ? 0 : 1];
    if (lo >= done[0] && hi <= done[1]) return;
    FillSpan(lo, hi, extra);
    if (lo <= done[1] + 1 && hi + 1 >= done[0]) {
      done[0] = lo < done[0] ? lo : done[0];
      done[1] = hi > done[1] ? hi : done[1];
    } else {
      done[0] = lo;
      done[1] = hi;
    }
  }

 private:
  // Codes lo..hi filled (thr, thr16 and the extra), per Extra (empty: 1, 0).
  unsigned filled[2][2] = {{1, 0}, {1, 0}};

  void FillSpan(unsigned lo, unsigned hi, Extra extra) {
    uint64_t* have_extra = extra == Extra::kRecip ? have_recip : have_bf16;
    for (unsigned w = 0; w < 2; ++w) {
      const unsigned first = lo > 64 * w ? lo - 64 * w : 0;
      if (hi < 64 * w || first > 63) continue;
      const unsigned last = hi - 64 * w < 63 ? hi - 64 * w : 63;
      const uint64_t span = (~uint64_t{0} >> (63 - last)) & (~uint64_t{0} << first);
      // (Codes in increasing order, each marked when done: c - 8 may be
      // one of them.)
      for (uint64_t m = span & ~have[w]; m != 0; m &= m - 1) {
        const unsigned c = 64 * w + static_cast<unsigned>(__builtin_ctzll(m));
        if (!DoubledThresholds(c)) Nvfp4ElementThresholds(ue4m3[c], tensor_scale, thr[c]);
        for (int i = 0; i < 7; ++i) thr16[c][i] = static_cast<uint16_t>(thr[c][i] >> 16);
        thr16[c][7] = 0;
        have[w] |= m & (~m + 1);
      }
      for (uint64_t m = span & ~have_extra[w]; m != 0; m &= m - 1) {
        const unsigned c = 64 * w + static_cast<unsigned>(__builtin_ctzll(m));
        have_extra[w] |= m & (~m + 1);
        if (extra == Extra::kBf16Rows) {
          AddBf16Row(c);
          continue;
        }
        // Half the reciprocal of c - 8 (d doubles, as in DoubledThresholds)
        // when that is at least 2^-124: the half is an f32, the smallest
        // whose product with 2 d t reaches 1, and 1 / (2 d t) > 2^-126.
        if (c >= 16 && c < 0x7F && Has(have_recip, c - 8) && recip[c - 8] >= 0x1p-124f) {
          recip[c] = recip[c - 8] * 0.5f;
          continue;
        }
        const double p = static_cast<double>(ue4m3[c]) * static_cast<double>(tensor_scale);
        // (A reciprocal below 2^-126, which no block of finite amax meets,
        // would not hold 24 bits: 0 instead.)
        recip[c] = c == 0 || c < recip_min_code || !(1.0 / p >= 0x1p-126) ? 0.0f : RecipUp(p);
      }
    }
  }

  static bool Has(const uint64_t* set, unsigned c) { return (set[c / 64] >> (c % 64) & 1) != 0; }

  // thr of code c from that of c - 8 when both are ue4m3 normals (c - 8 >=
  // 8, c < 0x7F: d doubles, so does every m_i d t) and every T_i of c - 8
  // is a normal f32 below 2^127: doubling maps the f32 at or below m_i d t
  // (and the exactness of m_i d t) onto those of 2 m_i d t, so each T_i's
  // bits gain 1 << 23 (P > 0: thr[7] = 0). False (nothing written) else.
  bool DoubledThresholds(unsigned c) {
    if (c < 16 || c >= 0x7F || !Has(have, c - 8)) return false;
    const uint32_t* from = thr[c - 8];
    for (int i = 0; i < 7; ++i) {
      if (from[i] < 0x00800000u || from[i] >= 0x7F000000u) return false;
    }
    for (int i = 0; i < 7; ++i) thr[c][i] = from[i] + (uint32_t{1} << 23);
    thr[c][7] = 0;
    return true;
  }

  // Every element x of a block of code c = 1..0x7D lies in row
  // E - ebase <= 7, so Bf16TableCodes64 needs no clamp of the row: with
  // P = d t, 2^(ebase - 127) = 2^(first - 128) exceeds T_0 / 4 > P / 17
  // (T_0: the largest f32 at or below P / 4; first: the binade of the bf16
  // above T_0's), so row 8 starts above 256 P / 17 > 15 P, while every
  // scale mode rounds amax / (6 t) to a d with amax < 12 P (rz: q below
  // the next code's value, at most 2 d for subnormal d, (1 + 2^-3) d for
  // normal d; rn, rp: closer or above).
  // Code 0 (P = 0) has ebase 0xFE: every finite E gives row 0. The
  // saturated code 0x7E bounds nothing (amax / (6 t) may exceed 448 by
  // any factor) and gets no row, so its chunks keep the binary search.
  void AddBf16Row(unsigned c) {
    if (c == 0x7E) {
      bf16_bad[1] |= uint64_t{1} << (0x7E - 64);
      return;
    }
    // thr16 of c - 8 shifted by one binade (+128 each): MakeBf16ByteRow
    // gives the same row and ebase + 1.
    if (c >= 8 && Has(have_bf16, c - 8) && !Has(bf16_bad, c - 8)) {
      bool shifted = true;
      for (int i = 0; i < 7; ++i) shifted &= thr16[c][i] == thr16[c - 8][i] + 128;
      if (shifted) {
        bf16_ebase[c] = static_cast<uint8_t>(bf16_ebase[c - 8] + 1);
        bf16_slot8[c] = bf16_slot8[c - 8];
        return;
      }
    }
    Bf16ByteRow row;
    uint8_t ebase;
    bool ok = MakeBf16ByteRow(thr16[c], &ebase, &row);
    unsigned slot = 0;
    if (ok) {
      const auto u64 = [](const uint8_t* p) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return v;
      };
      while (slot < bf16_slots && ((u64(row.base) ^ u64(bf16_base + 8 * slot)) |
                                   (u64(row.t1) ^ u64(bf16_t1 + 8 * slot)) |
                                   (u64(row.t2) ^ u64(bf16_t2 + 8 * slot))) != 0) {
        ++slot;
      }
      // Code 0: every finite a lies in row 0 of any slot.
      if (c == 0) slot = 0;
      if (slot == bf16_slots && c != 0) {
        if (slot == 8) {
          ok = false;
        } else {
          std::memcpy(bf16_base + 8 * slot, row.base, 8);
          std::memcpy(bf16_t1 + 8 * slot, row.t1, 8);
          std::memcpy(bf16_t2 + 8 * slot, row.t2, 8);
          ++bf16_slots;
        }
      }
    }
    if (!ok) {
      bf16_bad[c / 64] |= uint64_t{1} << (c % 64);
      return;
    }
    bf16_ebase[c] = ebase;
    bf16_slot8[c] = static_cast<uint8_t>(8 * slot);
  }
};

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_MX_NVFP4_THRESHOLDS_H_
