// NVFP4 element thresholds (Nvfp4Arithmetic::kExact): for each ue4m3 scale
// code, the f32 bounds that decide every e2m1 code of x / (d * t) exactly,
// shared by the SIMD kernels (src/mx/nvfp4_exact-inl.h) and filled per call.
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

// Nvfp4ElementThresholds of every scale code a call meets, filled on first
// use (a call usually meets a handful of the 128 codes).
struct Nvfp4ThresholdTable {
  Nvfp4ThresholdTable(float t, const float* table) : tensor_scale(t), ue4m3(table) {
    std::memset(thr16[128], 0, sizeof(thr16[128]));
    // The codes whose d t reaches 2^-123 (recip below).
    while (recip_min_code < 128 &&
           !(static_cast<double>(ue4m3[recip_min_code]) * static_cast<double>(t) >= 0x1p-123)) {
      ++recip_min_code;
    }
  }

  float tensor_scale;
  const float* ue4m3;  // decode table of the 128 scale codes
  uint64_t have[2] = {0, 0};
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

  // Fills the missing rows of the codes lo..hi (a chunk's scale codes
  // usually span a few binades; the span costs less to find than the set).
  void Fill(unsigned lo, unsigned hi) {
    for (unsigned w = 0; w < 2; ++w) {
      const unsigned first = lo > 64 * w ? lo - 64 * w : 0;
      if (hi < 64 * w || first > 63) continue;
      const unsigned last = hi - 64 * w < 63 ? hi - 64 * w : 63;
      const uint64_t span = (~uint64_t{0} >> (63 - last)) & (~uint64_t{0} << first);
      for (uint64_t m = span & ~have[w]; m != 0; m &= m - 1) {
        const unsigned c = 64 * w + static_cast<unsigned>(__builtin_ctzll(m));
        Nvfp4ElementThresholds(ue4m3[c], tensor_scale, thr[c]);
        for (int i = 0; i < 7; ++i) thr16[c][i] = static_cast<uint16_t>(thr[c][i] >> 16);
        thr16[c][7] = 0;
        const double p = static_cast<double>(ue4m3[c]) * static_cast<double>(tensor_scale);
        // (A reciprocal below 2^-126, which no block of finite amax meets,
        // would not hold 24 bits: 0 instead.)
        recip[c] = c == 0 || c < recip_min_code || !(1.0 / p >= 0x1p-126) ? 0.0f : RecipUp(p);
      }
      have[w] |= span;
    }
  }
};

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_MX_NVFP4_THRESHOLDS_H_
