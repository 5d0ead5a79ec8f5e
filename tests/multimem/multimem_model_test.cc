// Tests of the multimem scalar reduction models against an independent
// oracle: codes are decoded by a separate mini decoder, sums are computed
// exactly in double (checked exact with TwoSum where not obvious), and every
// rounding is a nearest-value search over the decoded code table (ties to the
// even code), not scalar::Convert.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/multimem.h"

namespace mxpack {
namespace {

// --- Independent oracle ----------------------------------------------------

struct MiniFormat {
  int ebits, mbits, bias;
  bool e4m3_nan;  // NaN only at S.1111.111 (no Inf); else IEEE specials.
  uint32_t nan;   // Canonical NaN code.
};
const MiniFormat kE4M3{4, 3, 7, true, 0x7F};
const MiniFormat kE5M2{5, 2, 15, false, 0x7F};
const MiniFormat kF16{5, 10, 15, false, 0x7FFF};
const MiniFormat kBF16{8, 7, 127, false, 0x7FFF};

int Bits(const MiniFormat& f) { return 1 + f.ebits + f.mbits; }

double Decode(const MiniFormat& f, uint32_t code) {
  const uint32_t sign = code >> (f.ebits + f.mbits) & 1;
  const uint32_t e = code >> f.mbits & ((1u << f.ebits) - 1);
  const uint32_t m = code & ((1u << f.mbits) - 1);
  double v;
  if (f.e4m3_nan && e == (1u << f.ebits) - 1 && m == (1u << f.mbits) - 1) {
    v = NAN;
  } else if (!f.e4m3_nan && e == (1u << f.ebits) - 1) {
    v = m ? NAN : INFINITY;
  } else if (e == 0) {
    v = std::ldexp(m, 1 - f.bias - f.mbits);
  } else {
    v = std::ldexp(m + (1u << f.mbits), static_cast<int>(e) - f.bias - f.mbits);
  }
  return sign ? -v : v;
}

struct Grid {
  MiniFormat f;
  std::vector<std::pair<double, uint32_t>> pos;  // Positive finite, sorted.
  uint32_t sign_bit;
};

Grid MakeGrid(const MiniFormat& f) {
  Grid g{f, {}, 1u << (Bits(f) - 1)};
  for (uint32_t c = 0; c < g.sign_bit; ++c) {
    const double v = Decode(f, c);
    if (std::isfinite(v)) g.pos.push_back({v, c});
  }
  std::sort(g.pos.begin(), g.pos.end());
  return g;
}

const Grid& G(const MiniFormat& f) {
  static const Grid e4 = MakeGrid(kE4M3), e5 = MakeGrid(kE5M2), h = MakeGrid(kF16),
                    b = MakeGrid(kBF16);
  return &f == &kE4M3 ? e4 : &f == &kE5M2 ? e5 : &f == &kF16 ? h : b;
}

// Round to nearest, ties to the even code, by searching the table.
uint32_t Rne(const MiniFormat& f, double x, bool satfinite) {
  const Grid& g = G(f);
  if (std::isnan(x)) return f.nan;
  const uint32_t sign = std::signbit(x) ? g.sign_bit : 0;
  const double ax = std::fabs(x);
  const auto& maxp = g.pos.back();
  if (ax > maxp.first) {
    const double prev = g.pos[g.pos.size() - 2].first;
    // Beyond max: satfinite clamps; IEEE overflows at max + half ulp (the tie
    // goes to the even overflow value because max has an odd mantissa).
    if (satfinite || ax < maxp.first + (maxp.first - prev) / 2) return maxp.second | sign;
    return ((((1u << f.ebits) - 1) << f.mbits)) | sign;  // Inf
  }
  auto it = std::lower_bound(g.pos.begin(), g.pos.end(), std::make_pair(ax, 0u));
  if (it->first == ax) return it->second | sign;
  const auto hi = *it, lo = *(it - 1);
  const double dlo = ax - lo.first, dhi = hi.first - ax;
  if (dlo < dhi) return lo.second | sign;
  if (dhi < dlo) return hi.second | sign;
  return ((lo.second & 1) ? hi.second : lo.second) | sign;
}

double RneValue(const MiniFormat& f, double x, bool sat) { return Decode(f, Rne(f, x, sat)); }

// Exact double sum check (TwoSum error term is zero).
bool ExactSum(double a, double b) {
  const double s = a + b;
  if (!std::isfinite(s)) return true;
  const double bb = s - a;
  return (a - (s - bb)) + (b - bb) == 0;
}

const MiniFormat& Mini(MmType t) {
  switch (MmTypeTraits(t).element) {
    case Format::kE4M3: return kE4M3;
    case Format::kE5M2: return kE5M2;
    case Format::kF16: return kF16;
    default: return kBF16;
  }
}

bool IsFp8(const MiniFormat& f) { return &f == &kE4M3 || &f == &kE5M2; }

// The model definitions of docs/semantics.md section 4, written on the oracle.
uint32_t OracleAdd(const ReduceSpec& spec, const std::vector<uint32_t>& codes) {
  const MiniFormat& e = Mini(spec.type);
  const bool fp8 = IsFp8(e);
  std::vector<double> v;
  for (uint32_t c : codes) v.push_back(Decode(e, c));
  // One accumulation step in the accumulation type.
  auto step = [&](double a, double b) {
    const double s = a + b;  // Exact (checked below for the cases used).
    if (spec.acc == AccPrec::kF16) return RneValue(kF16, s, false);
    if (spec.acc == AccPrec::kF32) return static_cast<double>(static_cast<float>(s));
    return RneValue(e, s, fp8);
  };
  switch (spec.model) {
    case ReduceModel::kSequential: {
      double acc = v[0];
      for (size_t i = 1; i < v.size(); ++i) acc = step(acc, v[i]);
      return Rne(e, acc, fp8);
    }
    case ReduceModel::kPairwiseTree: {
      while (v.size() > 1) {
        std::vector<double> next;
        for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(step(v[i], v[i + 1]));
        if (v.size() % 2) next.push_back(v.back());
        v = next;
      }
      return Rne(e, v[0], fp8);
    }
    case ReduceModel::kExactOnce: {
      double s = 0;
      bool all_neg_zero = true;
      for (double x : v) {
        all_neg_zero &= x == 0 && std::signbit(x);
        s += x;
      }
      if (s == 0) s = all_neg_zero ? -0.0 : 0.0;
      return Rne(e, s, fp8);
    }
    case ReduceModel::kNcclSoftware: {
      if (v.size() == 1) return Rne(e, v[0], fp8);
      double acc = v[0];
      for (size_t i = 1; i < v.size(); ++i) {
        acc = fp8 ? RneValue(e, RneValue(kF16, acc + v[i], false), true)
                  : RneValue(e, acc + v[i], false);
      }
      return Rne(e, acc, fp8);
    }
  }
  return 0;
}

uint32_t OracleMinMax(const MiniFormat& e, bool is_min, uint32_t a, uint32_t b) {
  const double x = Decode(e, a), y = Decode(e, b);
  if (std::isnan(x) && std::isnan(y)) return e.nan;
  if (std::isnan(x)) return b;
  if (std::isnan(y)) return a;
  // Total order with -0 < +0.
  const bool a_less = x < y || (x == y && std::signbit(x) && !std::signbit(y));
  const bool b_less = y < x || (x == y && std::signbit(y) && !std::signbit(x));
  if (!a_less && !b_less) return a;
  return (a_less == is_min) ? a : b;
}

uint64_t RunModel(const ReduceSpec& spec, const std::vector<uint32_t>& codes) {
  std::vector<uint64_t> c(codes.begin(), codes.end());
  return scalar::ReduceElement(spec, c);
}

const ReduceModel kModels[] = {ReduceModel::kSequential, ReduceModel::kPairwiseTree,
                               ReduceModel::kExactOnce, ReduceModel::kNcclSoftware};

// 32-bit random words without -Wconversion noise.
struct Rng {
  explicit Rng(uint32_t seed) : g(seed) {}
  uint32_t operator()() { return static_cast<uint32_t>(g()); }
  std::mt19937 g;
};

// --- Tests -----------------------------------------------------------------

TEST(multimemModel, OracleSelfCheck) {
  // The oracle itself: known roundings (bit-annotated).
  EXPECT_EQ(Rne(kE4M3, 464.0, true), 0x7Eu);   // 464: tie -> 448 (even), satfinite
  EXPECT_EQ(Rne(kE4M3, 1.0625, true), 0x38u);  // 1 + 1/16: tie -> 1.0 (even)
  EXPECT_EQ(Rne(kE4M3, 1.1875, true), 0x3Au);  // 1 + 3/16: tie -> 1.25 (even)
  EXPECT_EQ(Rne(kF16, 65520.0, false), 0x7C00u);  // tie above max -> Inf
  EXPECT_EQ(Rne(kF16, 65519.0, false), 0x7BFFu);
  EXPECT_EQ(Rne(kE5M2, -61440.0, true), 0xFBu);  // satfinite -max
  EXPECT_EQ(Rne(kE4M3, std::ldexp(1, -10), true), 0x00u);  // half min sub: tie -> 0
  EXPECT_EQ(Rne(kE4M3, -std::ldexp(3, -11), true), 0x81u); // 0.75 ulp -> -min sub
}

TEST(multimemModel, AllFp8PairsAllModels) {
  size_t checked = 0;
  for (MmType t : {MmType::kE4M3, MmType::kE5M2x2}) {
    const MiniFormat& e = Mini(t);
    for (AccPrec acc : {AccPrec::kNone, AccPrec::kF16}) {
      for (ReduceModel m : kModels) {
        const ReduceSpec spec{t, ReduceOp::kAdd, acc, m};
        ASSERT_TRUE(ValidateReduceSpec(spec).ok());
        for (uint32_t a = 0; a < 256; ++a) {
          for (uint32_t b = 0; b < 256; ++b) {
            ASSERT_TRUE(ExactSum(Decode(e, a), Decode(e, b)));
            const uint64_t got = RunModel(spec, {a, b});
            const uint32_t want = OracleAdd(spec, {a, b});
            ASSERT_EQ(got, want) << absl::StrFormat(
                "%s acc=%s model=%s a=0x%02X b=0x%02X", MmTypeTraits(t).name,
                AccPrecName(acc), ReduceModelName(m), a, b);
            ++checked;
          }
        }
      }
    }
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
      const ReduceSpec spec{t, op, AccPrec::kNone, ReduceModel::kSequential};
      for (uint32_t a = 0; a < 256; ++a) {
        for (uint32_t b = 0; b < 256; ++b) {
          ASSERT_EQ(RunModel(spec, {a, b}), OracleMinMax(e, op == ReduceOp::kMin, a, b))
              << absl::StrFormat("%s %s a=0x%02X b=0x%02X", MmTypeTraits(t).name,
                                 ReduceOpName(op), a, b);
        }
      }
    }
  }
  EXPECT_EQ(checked, 2u * 2 * 4 * 65536);
}

// Structured f16/bf16 codes: every exponent with mantissa patterns 0, 1, mid,
// max-1, max, both signs, plus zeros, Inf and NaN.
std::vector<uint32_t> StructuredCodes(const MiniFormat& f) {
  std::vector<uint32_t> out;
  const uint32_t mmax = (1u << f.mbits) - 1;
  for (uint32_t e = 0; e < (1u << f.ebits); ++e) {
    for (uint32_t m : {0u, 1u, 2u, mmax / 2, mmax / 2 + 1, mmax - 1, mmax}) {
      for (uint32_t s : {0u, 1u}) out.push_back(s << (f.ebits + f.mbits) | e << f.mbits | m);
    }
  }
  return out;
}

TEST(multimemModel, HalfPairsStructuredAndRandom) {
  Rng rng(12345);
  for (MmType t : {MmType::kF16x2, MmType::kBF16}) {
    const MiniFormat& e = Mini(t);
    std::vector<uint32_t> codes = StructuredCodes(e);
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (uint32_t a : codes) {
      for (size_t k = 0; k < codes.size(); k += 3) pairs.push_back({a, codes[k]});
    }
    for (int i = 0; i < 100000; ++i) pairs.push_back({rng() & 0xFFFF, rng() & 0xFFFF});
    size_t checked = 0;
    for (AccPrec acc : {AccPrec::kNone, AccPrec::kF32}) {
      for (ReduceModel m : kModels) {
        const ReduceSpec spec{t, ReduceOp::kAdd, acc, m};
        for (auto [a, b] : pairs) {
          if (!ExactSum(Decode(e, a), Decode(e, b))) continue;  // bf16 far apart
          ASSERT_EQ(RunModel(spec, {a, b}), OracleAdd(spec, {a, b})) << absl::StrFormat(
              "%s acc=%s model=%s a=0x%04X b=0x%04X", MmTypeTraits(t).name,
              AccPrecName(acc), ReduceModelName(m), a, b);
          ++checked;
        }
      }
    }
    EXPECT_GT(checked, 8u * 100000);
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
      const ReduceSpec spec{t, op, AccPrec::kNone, ReduceModel::kSequential};
      for (auto [a, b] : pairs) {
        ASSERT_EQ(RunModel(spec, {a, b}), OracleMinMax(e, op == ReduceOp::kMin, a, b));
      }
    }
  }
}

TEST(multimemModel, NWayRandom) {
  Rng rng(777);
  size_t differ_seq_nccl = 0, differ_seq_exact = 0;
  for (MmType t : {MmType::kE4M3x4, MmType::kE5M2, MmType::kF16, MmType::kBF16x2}) {
    const MiniFormat& e = Mini(t);
    const bool fp8 = IsFp8(e);
    for (int iter = 0; iter < 4000; ++iter) {
      const size_t n = 1 + rng() % 12;
      std::vector<uint32_t> codes(n);
      // Mostly moderate magnitudes (so that sums are exact in double), some
      // specials.
      for (auto& c : codes) {
        c = rng() & ((1u << Bits(e)) - 1);
        if (!fp8) c &= 0xC3FF | (rng() % 4 == 0 ? 0x3C00u : 0x0C00u);
        if (!fp8 && &e == &kBF16) c = (c & 0x807F) | ((120 + rng() % 16) << 7);
      }
      if (rng() % 20 == 0) codes[rng() % n] = e.nan;
      for (AccPrec acc : {AccPrec::kNone, fp8 ? AccPrec::kF16 : AccPrec::kF32}) {
        uint32_t r[4];
        for (int mi = 0; mi < 4; ++mi) {
          const ReduceSpec spec{t, ReduceOp::kAdd, acc, kModels[mi]};
          r[mi] = static_cast<uint32_t>(RunModel(spec, codes));
          ASSERT_EQ(r[mi], OracleAdd(spec, codes)) << absl::StrFormat(
              "%s acc=%s model=%s n=%d iter=%d", MmTypeTraits(t).name, AccPrecName(acc),
              ReduceModelName(kModels[mi]), n, iter);
        }
        differ_seq_nccl += r[0] != r[3];
        differ_seq_exact += r[0] != r[2];
      }
    }
  }
  // The models are not all the same function (guards against a model
  // silently delegating to another).
  EXPECT_GT(differ_seq_nccl, 0u);
  EXPECT_GT(differ_seq_exact, 0u);
}

struct Golden {
  MmType type;
  ReduceOp op;
  AccPrec acc;
  ReduceModel model;
  std::vector<uint64_t> in;
  uint64_t want;
  const char* why;
};

TEST(multimemModel, SpecialCases) {
  const auto kSeq = ReduceModel::kSequential;
  const auto kTree = ReduceModel::kPairwiseTree;
  const auto kExact = ReduceModel::kExactOnce;
  const auto kNccl = ReduceModel::kNcclSoftware;
  const Golden kCases[] = {
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16, kSeq, {0x7E, 0x7E}, 0x7E,
       "448 + 448 = 896 (exact in f16) -> e4m3 satfinite 448"},
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16, kSeq, {0xFF, 0x38}, 0x7F,
       "NaN (0xFF) + 1.0 -> canonical NaN 0x7F"},
      {MmType::kE5M2, ReduceOp::kAdd, AccPrec::kF16, kSeq, {0x7B, 0x7B}, 0x7B,
       "57344 + 57344 overflows f16 to Inf -> e5m2 satfinite 57344"},
      {MmType::kE5M2, ReduceOp::kAdd, AccPrec::kF16, kSeq, {0x7C, 0xFC}, 0x7F,
       "+Inf + -Inf -> NaN 0x7F"},
      {MmType::kE5M2, ReduceOp::kAdd, AccPrec::kF16, kExact, {0x7C, 0x3C}, 0x7B,
       "Inf + 1 = Inf -> satfinite max (fp8 results are satfinite)"},
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16, kSeq, {0x80, 0x80}, 0x80,
       "-0 + -0 = -0"},
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16, kExact, {0x80, 0x00}, 0x00,
       "-0 + +0 = +0 (RNE)"},
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16, kExact, {0x38, 0xB8}, 0x00,
       "1 + -1 = +0"},
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16, kSeq, {0x01, 0x01}, 0x02,
       "2^-9 + 2^-9 = 2^-8 (subnormal min doubles)"},
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16, kSeq, {0x07, 0x01}, 0x08,
       "7*2^-9 + 2^-9 = 2^-6: subnormal sum becomes the first normal"},
      // 3 x 1.125 (0x39): exact 3.375 -> e4m3 tie between 3.25 (0x45) and 3.5
      // (0x46) -> even 0x46; kNccl rounds 2.25 then 3.375 the same way.
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16, kExact, {0x39, 0x39, 0x39}, 0x46,
       "tie to even at the final rounding"},
      // 448 + 16 + 16: sequential f16 acc = 480 -> e4m3 satfinite 448; NCCL
      // rounds 464 -> 448 (tie to even) after each add: 448, 448.
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16, kNccl, {0x7E, 0x58, 0x58}, 0x7E,
       "NCCL per-step satfinite"},
      // 2^-9 added 8 times to 1.0 in e4m3 accumulation (no .acc): each add
      // rounds back to 1.0; with .acc::f16 the sum is exact 1.015625 -> 1.0
      // too; the tree adds 2^-9 pairs first: 1 + 2^-9 -> 1, ... check seq.
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kNone, kSeq,
       {0x38, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01}, 0x38,
       "fp8 accumulation swallows 2^-9 each step"},
      {MmType::kE4M3, ReduceOp::kAdd, AccPrec::kNone, kTree,
       {0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x38}, 0x38,
       "tree: 8 x 2^-9 = 2^-6, then carried 1.0 + 2^-6 = 1.015625 -> 1.0"},
      {MmType::kE5M2, ReduceOp::kMax, AccPrec::kNone, kSeq, {0x7F, 0x3C}, 0x3C,
       "max(NaN, 1) = 1"},
      {MmType::kE5M2, ReduceOp::kMin, AccPrec::kNone, kSeq, {0x00, 0x80}, 0x80,
       "min(+0, -0) = -0"},
      {MmType::kE5M2, ReduceOp::kMax, AccPrec::kNone, kSeq, {0x80, 0x00}, 0x00,
       "max(-0, +0) = +0"},
      {MmType::kE5M2, ReduceOp::kMin, AccPrec::kNone, kSeq, {0x7D, 0xFF}, 0x7F,
       "min(NaN, NaN) = canonical NaN"},
      {MmType::kE5M2, ReduceOp::kMax, AccPrec::kNone, kSeq, {0x7C, 0x7B}, 0x7C,
       "max is exact: Inf stays Inf"},
      {MmType::kF16, ReduceOp::kAdd, AccPrec::kF32, kSeq, {0x7BFF, 0x4C00}, 0x7C00,
       "65504 + 16 = 65520: tie above f16 max -> Inf"},
      {MmType::kBF16, ReduceOp::kAdd, AccPrec::kF32, kSeq, {0x3F80, 0x3380, 0x3380}, 0x3F80,
       "1 + 2^-24 + 2^-24 in f32 = 1 + 2^-23 -> bf16 1.0"},
      {MmType::kF32, ReduceOp::kAdd, AccPrec::kNone, kSeq, {0x71800000, 0x3F800000, 0xF1800000}, 0,
       "2^100 + 1 - 2^100: sequential loses the 1"},
      {MmType::kF32, ReduceOp::kAdd, AccPrec::kNone, kExact, {0x71800000, 0x3F800000, 0xF1800000},
       0x3F800000, "exact accumulator keeps the 1"},
      {MmType::kF32, ReduceOp::kAdd, AccPrec::kNone, kExact, {0x3F800000, 0x33800000, 0x21800000},
       0x3F800001, "1 + 2^-24 + 2^-60: sticky bit breaks the tie upward"},
      {MmType::kF32, ReduceOp::kAdd, AccPrec::kNone, kSeq, {0x3F800000, 0x33800000, 0x21800000},
       0x3F800000, "sequential: 1 + 2^-24 ties to 1"},
      {MmType::kF32, ReduceOp::kAdd, AccPrec::kNone, kSeq, {0x7FC00001, 0x3F800000}, 0x7FFFFFFF,
       "NaN payload -> canonical NaN"},
      {MmType::kF64, ReduceOp::kAdd, AccPrec::kNone, kExact,
       {0x3FF0000000000000, 0x3CA0000000000000, 0x3950000000000000}, 0x3FF0000000000001,
       "f64: 1 + 2^-53 + 2^-106 rounds up via hi + lo (round to odd at 106 bits)"},
      {MmType::kF64, ReduceOp::kAdd, AccPrec::kNone, kSeq,
       {0x3FF0000000000000, 0x3CA0000000000000, 0x3950000000000000}, 0x3FF0000000000000,
       "f64 sequential: ties to 1"},
      {MmType::kF64, ReduceOp::kAdd, AccPrec::kNone, kExact,
       {0x7FE0000000000000, 0x7FE0000000000000, 0xFFE0000000000000}, 0x7FE0000000000000,
       "f64: 2^1023 + 2^1023 - 2^1023 exact = 2^1023 (no intermediate overflow)"},
      {MmType::kF64, ReduceOp::kAdd, AccPrec::kNone, kSeq,
       {0x7FE0000000000000, 0x7FE0000000000000, 0xFFE0000000000000}, 0x7FF0000000000000,
       "f64 sequential overflows to Inf"},
      {MmType::kF64, ReduceOp::kAdd, AccPrec::kNone, kExact,
       {0x0000000000000001, 0x0000000000000001, 0x8000000000000000}, 0x0000000000000002,
       "f64 subnormals add exactly"},
      {MmType::kU32, ReduceOp::kAdd, AccPrec::kNone, kSeq, {0xFFFFFFFF, 2}, 1, "u32 add wraps"},
      {MmType::kS32, ReduceOp::kMin, AccPrec::kNone, kSeq, {1, 0xFFFFFFFF}, 0xFFFFFFFF,
       "s32 min is signed"},
      {MmType::kU32, ReduceOp::kMin, AccPrec::kNone, kSeq, {1, 0xFFFFFFFF}, 1, "u32 min unsigned"},
      {MmType::kS64, ReduceOp::kMax, AccPrec::kNone, kSeq, {0x8000000000000000, 5}, 5,
       "s64 max signed"},
      {MmType::kU64, ReduceOp::kAdd, AccPrec::kNone, kSeq, {~0ull, ~0ull}, ~0ull - 1, "u64 wraps"},
      {MmType::kB32, ReduceOp::kXor, AccPrec::kNone, kSeq, {0xF0F0, 0xFF00, 0x1}, 0x0FF1, "xor"},
      {MmType::kB64, ReduceOp::kAnd, AccPrec::kNone, kSeq, {~0ull, 0xF0ull << 40}, 0xF0ull << 40,
       "and"},
      {MmType::kB32, ReduceOp::kOr, AccPrec::kNone, kSeq, {1, 2, 4}, 7, "or"},
  };
  for (const Golden& g : kCases) {
    const ReduceSpec spec{g.type, g.op, g.acc, g.model};
    ASSERT_TRUE(ValidateReduceSpec(spec).ok()) << g.why;
    EXPECT_EQ(scalar::ReduceElement(spec, g.in), g.want)
        << g.why << absl::StrFormat(" (got 0x%X)", scalar::ReduceElement(spec, g.in));
  }
}

TEST(multimemModel, ReduceSpecRules) {
  EXPECT_FALSE(ValidateReduceSpec({MmType::kF32, ReduceOp::kMin, AccPrec::kNone,
                                   ReduceModel::kSequential}).ok());
  EXPECT_FALSE(ValidateReduceSpec({MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF32,
                                   ReduceModel::kSequential}).ok());
  EXPECT_TRUE(ValidateReduceSpec({MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16,
                                  ReduceModel::kSequential}).ok());
  EXPECT_TRUE(ValidateReduceSpec({MmType::kF64, ReduceOp::kAdd, AccPrec::kNone,
                                  ReduceModel::kSequential}).ok());
}

TEST(multimemModel, ArrayArgumentErrors) {
  const ReduceSpec spec{MmType::kF16, ReduceOp::kAdd, AccPrec::kF32, ReduceModel::kSequential};
  std::vector<uint8_t> a(8), b(6), out(8);
  std::vector<absl::Span<const uint8_t>> srcs = {a, b};
  absl::Status s = scalar::ReduceArrays(spec, srcs, absl::MakeSpan(out));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("sources[1]: expected 8 bytes"), std::string::npos) << s;
  std::vector<uint8_t> odd(3);
  srcs = {odd, odd};
  std::vector<uint8_t> out3(3);
  s = scalar::ReduceArrays(spec, srcs, absl::MakeSpan(out3));
  EXPECT_NE(s.message().find("not a multiple"), std::string::npos) << s;
  srcs = {a, a};
  std::vector<uint8_t> out4(4);
  EXPECT_FALSE(scalar::ReduceArrays(spec, srcs, absl::MakeSpan(out4)).ok());
  EXPECT_FALSE(scalar::ReduceArrays(spec, {}, absl::MakeSpan(out4)).ok());
}

TEST(multimemObject, LdReduceStRed) {
  MulticastObject obj(3, 32);
  for (size_t r = 0; r < 3; ++r) {
    for (size_t i = 0; i < 32; ++i) obj.replica(r)[i] = static_cast<uint8_t>(0x30 + r + i);
  }
  auto in = ParseMultimem("multimem.ld_reduce.add.acc::f16.v4.e4m3");
  ASSERT_TRUE(in.ok());
  auto got = obj.LdReduce(*in, 4);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 4u);
  const ReduceSpec spec = SpecOf(*in);
  for (size_t k = 0; k < 4; ++k) {
    std::vector<uint32_t> codes;
    for (size_t r = 0; r < 3; ++r) codes.push_back(obj.replica(r)[4 + k]);
    EXPECT_EQ((*got)[k], OracleAdd(spec, codes)) << k;
  }
  EXPECT_FALSE(obj.LdReduce(*in, 2).ok());   // misaligned
  EXPECT_FALSE(obj.LdReduce(*in, 32).ok());  // out of range

  auto st = ParseMultimem("multimem.st.relaxed.sys.v2.f32");
  ASSERT_TRUE(st.ok());
  const float vals[2] = {1.5f, -2.0f};
  uint8_t b[8];
  std::memcpy(b, vals, 8);
  ASSERT_TRUE(obj.St(*st, 8, b).ok());
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(std::memcmp(obj.replica(r).data() + 8, b, 8), 0);
  EXPECT_FALSE(obj.St(*st, 8, absl::MakeConstSpan(b, 4)).ok());  // wrong operand size
  EXPECT_FALSE(obj.LdReduce(*st, 8).ok());                       // wrong kind

  auto red = ParseMultimem("multimem.red.add.v2.f32");
  ASSERT_TRUE(red.ok());
  ASSERT_TRUE(obj.Red(*red, 8, b).ok());
  float after[2];
  std::memcpy(after, obj.replica(2).data() + 8, 8);
  EXPECT_EQ(after[0], 3.0f);
  EXPECT_EQ(after[1], -4.0f);

  auto ired = ParseMultimem("multimem.red.max.s32");
  ASSERT_TRUE(ired.ok());
  const int32_t m = -1;
  uint8_t mb[4];
  std::memcpy(mb, &m, 4);
  std::memcpy(obj.replica(0).data(), &m, 4);
  const int32_t big = 7;
  std::memcpy(obj.replica(1).data(), &big, 4);
  ASSERT_TRUE(obj.Red(*ired, 0, mb).ok());
  int32_t r0, r1;
  std::memcpy(&r0, obj.replica(0).data(), 4);
  std::memcpy(&r1, obj.replica(1).data(), 4);
  EXPECT_EQ(r0, -1);
  EXPECT_EQ(r1, 7);
}

}  // namespace
}  // namespace mxpack
