// Independent test oracle for encodes: exhaustive nearest-value search over
// the decoded code table with explicit tie, direction and saturation rules.
// It shares no rounding code with src/format/scalar.cc (only the decoder, which the
// golden tables check separately), so agreement is evidence, not tautology.
#ifndef MXPACK_TESTS_ORACLE_H_
#define MXPACK_TESTS_ORACLE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mxpack/format.h"
#include "mxpack/scalar.h"

namespace mxpack::testing {

// All finite non-negative values of a format in increasing order.
struct Grid {
  Format format;
  std::vector<double> values;
  std::vector<uint64_t> codes;
};

inline Grid MakeGrid(Format f) {
  const FormatTraits& t = Traits(f);
  Grid g{f, {}, {}};
  for (uint64_t c = 0; c <= t.max_code; ++c) {
    const scalar::ValueClass k = scalar::Classify(f, c);
    if (k == scalar::ValueClass::kNaN || k == scalar::ValueClass::kInf) continue;
    g.values.push_back(scalar::ToDouble(f, c));
    g.codes.push_back(c);
  }
  return g;
}

// Exponent of the last significand bit of the finite non-zero value a > 0 in
// format src: the unit in which "discarded bits" are counted for rs.
inline int SourceLsbExp(Format src, double a) {
  const FormatTraits& t = Traits(src);
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const int floor_log2 = e - 1;
  const int min_normal = 1 - t.bias;
  return (floor_log2 < min_normal ? min_normal : floor_log2) - t.man_bits;
}

// The expected code for source value x (exactly representable in double) of
// format src, under policy p (overflow_tie must be kEven).
inline uint64_t OracleEncode(const Grid& g, Format src, double x,
                             const EncodePolicy& p, uint32_t rbits = 0) {
  const FormatTraits& t = Traits(g.format);
  const uint64_t sign_bit = t.has_sign ? uint64_t{1} << (t.bits - 1) : 0;
  if (std::isnan(x)) return t.canonical_nan;
  bool neg = std::signbit(x);
  if (p.relu && neg) return 0;
  if (!t.has_sign) neg = false;
  const uint64_t s = neg ? sign_bit : 0;
  const double a = std::fabs(x);
  const double max = g.values.back();
  const bool sat = p.saturation == Saturation::kSatFinite;
  auto overflow = [&](bool inf_input) -> uint64_t {
    if (sat) return t.max_code | s;
    const bool to_inf = inf_input || p.rounding == Rounding::kRN ||
                        p.rounding == Rounding::kRS ||
                        (p.rounding == Rounding::kRP && !neg) ||
                        (p.rounding == Rounding::kRM && neg);
    if (!to_inf) return t.max_code | s;
    if (t.has_inf) return (((uint64_t{1} << t.exp_bits) - 1) << t.man_bits) | s;
    return t.canonical_nan | s;
  };
  if (std::isinf(a)) return overflow(true);
  if (a == 0) return s;
  if (a < g.values.front()) return g.codes.front();  // ue8m0: no zero.
  const size_t idx = static_cast<size_t>(
      std::upper_bound(g.values.begin(), g.values.end(), a) - g.values.begin() - 1);
  const double lo = g.values[idx];
  if (lo == a) return g.codes[idx] | s;
  const bool virtual_hi = idx + 1 == g.values.size();
  // Beyond max finite: the next value of the unbounded-exponent grid.
  const double hi = virtual_hi ? (t.man_bits == 0 ? 2 * max
                                                  : max + (max - g.values[idx - 1]))
                               : g.values[idx + 1];
  const uint64_t hi_code = virtual_hi ? t.max_code + 1 : g.codes[idx + 1];
  bool up = false;
  if (a >= hi) {
    up = true;  // Already beyond the first unrepresentable value.
  } else {
    switch (p.rounding) {
      case Rounding::kRN: {
        const double mid = lo + (hi - lo) / 2;
        up = a > mid || (a == mid && (hi_code & 1) == 0);
        break;
      }
      case Rounding::kRZ: up = false; break;
      case Rounding::kRP: up = !neg; break;
      case Rounding::kRM: up = neg; break;
      case Rounding::kRS: {
        // In units of the source ulp: rem = (a - lo), field = (hi - lo).
        const int lsb = SourceLsbExp(src, a);
        const double field_d = std::ldexp(hi - lo, -lsb);
        const int sbits = static_cast<int>(std::lround(std::log2(field_d)));
        const unsigned __int128 rem =
            static_cast<unsigned __int128>(std::ldexp(a - lo, -lsb));
        unsigned __int128 r;
        if (sbits <= 32) {
          r = rbits & ((uint64_t{1} << sbits) - 1);
        } else if (sbits <= 85) {
          r = static_cast<unsigned __int128>(rbits) << (sbits - 32);
        } else {
          r = 0;
        }
        up = sbits <= 120 && ((rem + r) >> sbits) != 0;
        break;
      }
    }
  }
  if (!up) return g.codes[idx] | s;
  if (virtual_hi) return overflow(false);
  return hi_code | s;
}

// Every policy ValidateConversion accepts for src -> dst (overflow_tie kEven).
inline std::vector<EncodePolicy> LegalPolicies(Format src, Format dst) {
  std::vector<EncodePolicy> out;
  for (Rounding r : {Rounding::kRN, Rounding::kRZ, Rounding::kRM, Rounding::kRP,
                     Rounding::kRS}) {
    for (Saturation sat : {Saturation::kSatFinite, Saturation::kNoSat}) {
      for (bool relu : {false, true}) {
        EncodePolicy p;
        p.rounding = r;
        p.saturation = sat;
        p.relu = relu;
        if (ValidateConversion(src, dst, p).ok()) out.push_back(p);
      }
    }
  }
  return out;
}

// Structured f32 sweep: every exponent; for cut points c = 1..23 all 4-bit
// kept-mantissa prefixes with the discarded part 0, 1 (sticky), half-1, half
// (tie), half+1, all ones; all 7- and 10-bit prefixes (bf16 / f16 kept bits)
// at every 8th exponent; subnormals, +-0, +-Inf, NaNs with payloads. Both
// signs.
inline std::vector<uint32_t> StructuredF32Sweep() {
  std::vector<uint32_t> mant;
  auto add_cut = [&mant](int c, uint32_t prefixes) {
    const uint32_t half = c < 23 ? uint32_t{1} << (22 - c) : 0;
    for (uint32_t pre = 0; pre < prefixes; ++pre) {
      const uint32_t base = (pre << (23 - c)) & 0x7FFFFF;
      if (half == 0) {
        mant.push_back(base);
        continue;
      }
      for (uint32_t low : {0u, 1u, half - 1, half, half + 1, 2 * half - 1}) {
        mant.push_back(base | low);
      }
    }
  };
  for (int c = 1; c <= 23; ++c) add_cut(c, 1u << (c < 4 ? c : 4));
  std::sort(mant.begin(), mant.end());
  mant.erase(std::unique(mant.begin(), mant.end()), mant.end());
  std::vector<uint32_t> out;
  for (uint32_t e = 0; e < 255; ++e) {
    for (uint32_t m : mant) out.push_back((e << 23) | m);
  }
  mant.clear();
  add_cut(7, 128);
  add_cut(10, 1024);
  for (uint32_t e = 0; e < 255; e += 8) {
    for (size_t i = 0; i < mant.size(); ++i) out.push_back((e << 23) | mant[i]);
  }
  for (uint32_t special : {0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu,
                           0x7FA5A5A5u, 0x00000001u, 0x007FFFFFu}) {
    out.push_back(special);
  }
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) out.push_back(out[i] | 0x80000000u);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace mxpack::testing

#endif  // MXPACK_TESTS_ORACLE_H_
