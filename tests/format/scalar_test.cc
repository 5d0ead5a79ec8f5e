// Tests of the scalar reference (the oracle of every other path): golden
// decode tables, exhaustive f16/bf16 encodes against the independent
// nearest-value oracle, the structured f32 sweep, round trips, errors.
#include "mxpack/scalar.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/format.h"
#include "tests/common/oracle.h"

namespace mxpack {
namespace {

using testing::Grid;
using testing::MakeGrid;
using testing::OracleEncode;

constexpr double kNaN = -1.0;  // Marker in the golden tables.
constexpr double kInf = -2.0;
#include "tests/format/golden_tables.inc"

// e2m1 by hand: S EE M, bias 1. 0x1 = 0.5 (subnormal), 0x7 = 1.5 * 2^2 = 6.
constexpr double kGoldenE2M1[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

void CheckGolden(Format f, const double* golden, int n_positive) {
  const FormatTraits& t = Traits(f);
  for (int c = 0; c < (1 << t.bits); ++c) {
    const int mag = t.has_sign ? c & (n_positive - 1) : c;
    const bool neg = t.has_sign && c >= n_positive;
    if (!t.has_sign && c >= n_positive) {  // ue4m3: MSB set is not a code we define
      continue;
    }
    const double g = golden[mag];
    const double v = scalar::ToDouble(f, static_cast<uint64_t>(c));
    if (g == kNaN) {
      EXPECT_TRUE(std::isnan(v)) << t.name << absl::StrFormat(" code 0x%02X", c);
      EXPECT_EQ(scalar::F32Bits(scalar::DecodeToF32(f, c)), 0x7FFFFFFFu);
    } else if (g == kInf) {
      EXPECT_EQ(v, neg ? -HUGE_VAL : HUGE_VAL) << absl::StrFormat("0x%02X", c);
    } else {
      EXPECT_EQ(v, neg ? -g : g) << t.name << absl::StrFormat(" code 0x%02X", c);
      EXPECT_EQ(std::signbit(v), neg) << absl::StrFormat("0x%02X", c);
      // Decode to f32 is exact.
      EXPECT_EQ(static_cast<double>(scalar::DecodeToF32(f, c)), v);
    }
  }
}

TEST(ScalarDecode, GoldenTables) {
  CheckGolden(Format::kE2M1, kGoldenE2M1, 8);
  CheckGolden(Format::kE2M3, kGoldenE2M3, 32);
  CheckGolden(Format::kE3M2, kGoldenE3M2, 32);
  CheckGolden(Format::kE4M3, kGoldenE4M3, 128);
  CheckGolden(Format::kE5M2, kGoldenE5M2, 128);
  CheckGolden(Format::kUE4M3, kGoldenUE4M3, 128);
}

TEST(ScalarDecode, HandCheckedSpecials) {
  // 0x01 = 2^-9: e4m3 smallest subnormal (0.001 * 2^(1-7)).
  EXPECT_EQ(scalar::ToDouble(Format::kE4M3, 0x01), std::ldexp(1.0, -9));
  // 0x7E = 448 = 1.75 * 2^8: e4m3 max finite; 0x7F / 0xFF NaN.
  EXPECT_EQ(scalar::ToDouble(Format::kE4M3, 0x7E), 448.0);
  EXPECT_TRUE(std::isnan(scalar::ToDouble(Format::kE4M3, 0xFF)));
  // e5m2: 0x7B = 57344 max, 0x7C = +Inf, 0xFC = -Inf, 0x01 = 2^-16.
  EXPECT_EQ(scalar::ToDouble(Format::kE5M2, 0x7B), 57344.0);
  EXPECT_EQ(scalar::ToDouble(Format::kE5M2, 0xFC), -HUGE_VAL);
  EXPECT_EQ(scalar::ToDouble(Format::kE5M2, 0x01), std::ldexp(1.0, -16));
  // e3m2: 0x1F = 1.75 * 2^4 = 28; 0x01 = 0.0625. e2m3: 0x1F = 7.5, 0x01 = 0.125.
  EXPECT_EQ(scalar::ToDouble(Format::kE3M2, 0x1F), 28.0);
  EXPECT_EQ(scalar::ToDouble(Format::kE3M2, 0x01), 0.0625);
  EXPECT_EQ(scalar::ToDouble(Format::kE2M3, 0x1F), 7.5);
  EXPECT_EQ(scalar::ToDouble(Format::kE2M3, 0x01), 0.125);
  // ue8m0: code c = 2^(c-127); 0x00 = 2^-127 (no zero), 0xFE = 2^127, 0xFF NaN.
  for (int c = 0; c < 255; ++c) {
    EXPECT_EQ(scalar::ToDouble(Format::kUE8M0, c), std::ldexp(1.0, c - 127)) << c;
  }
  EXPECT_TRUE(std::isnan(scalar::ToDouble(Format::kUE8M0, 0xFF)));
  // ue8m0 0x00 -> f32 subnormal 0x00400000 and bf16 subnormal 0x0040.
  EXPECT_EQ(scalar::Convert(Format::kUE8M0, Format::kF32, 0x00, {}), 0x00400000u);
  EXPECT_EQ(scalar::Convert(Format::kUE8M0, Format::kBF16, 0x00, {}), 0x0040u);
  EXPECT_EQ(scalar::Convert(Format::kUE8M0, Format::kBF16, 0xFF, {}), 0x7FFFu);
  // NaN decodes to the canonical NaN of the destination, either sign.
  EXPECT_EQ(scalar::Convert(Format::kE4M3, Format::kF16, 0xFF, {}), 0x7FFFu);
  EXPECT_EQ(scalar::Convert(Format::kE5M2, Format::kF16, 0xFD, {}), 0x7FFFu);
  EXPECT_EQ(scalar::Convert(Format::kE5M2, Format::kF16, 0xFC, {}), 0xFC00u);
  // Decode with relu (cvt.rn.relu.f16x2.e4m3x2): -1.0 -> +0, NaN stays NaN.
  EncodePolicy relu;
  relu.relu = true;
  EXPECT_EQ(scalar::Convert(Format::kE4M3, Format::kF16, 0xB8, relu), 0x0000u);
  EXPECT_EQ(scalar::Convert(Format::kE4M3, Format::kF16, 0xFF, relu), 0x7FFFu);
}

// Decoding to f16 and bf16 is exact: compare with the golden value's bits,
// built independently (bf16: the top half of the f32; f16: ExactF16Bits).

// The f16 bits of v, which must be an f16 value exactly (finite, or +-Inf).
uint32_t ExactF16Bits(double v) {
  const uint32_t sign = std::signbit(v) ? 0x8000u : 0u;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7C00u;
  if (a < std::ldexp(1.0, -14)) {  // zero or subnormal: a multiple of 2^-24
    const double m = std::ldexp(a, 24);
    EXPECT_EQ(m, std::floor(m)) << v << " is not an f16 subnormal";
    return sign | static_cast<uint32_t>(m);
  }
  int e = 0;
  const double frac = std::frexp(a, &e);  // a = frac * 2^e, frac in [0.5, 1)
  const double m = std::ldexp(frac, 11) - 1024.0;  // 10 fraction bits
  EXPECT_EQ(m, std::floor(m)) << v << " needs more than 10 fraction bits";
  EXPECT_LE(e - 1, 15) << v << " exceeds the f16 range";
  return sign | (static_cast<uint32_t>(e - 1 + 15) << 10) | static_cast<uint32_t>(m);
}

TEST(ScalarDecode, ToF16AndBF16AreExact) {
  for (Format f : {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                   Format::kE5M2, Format::kUE4M3, Format::kUE8M0}) {
    const FormatTraits& t = Traits(f);
    for (uint32_t c = 0; c < (1u << t.bits); ++c) {
      const double v = scalar::ToDouble(f, c);
      const uint32_t f32 = scalar::F32Bits(static_cast<float>(v));
      const uint64_t bf = scalar::Convert(f, Format::kBF16, c, {});
      if (std::isnan(v)) {
        EXPECT_EQ(bf, 0x7FFFu);
        continue;
      }
      EXPECT_EQ(f32 & 0xFFFF, 0u) << "value does not fit bf16?";
      EXPECT_EQ(bf, f32 >> 16) << t.name << absl::StrFormat(" 0x%02X", c);
      if (f == Format::kUE8M0) continue;  // Does not fit f16: an error.
      // f16 bits built field by field (no _Float16: clang 14 lacks it on
      // x86 without AVX512-FP16); ExactF16Bits fails unless v fits exactly.
      EXPECT_EQ(scalar::Convert(f, Format::kF16, c, {}), ExactF16Bits(v))
          << t.name << absl::StrFormat(" 0x%02X", c);
    }
  }
}

// Every f16 and every bf16 input, every destination, every legal policy,
// against the nearest-value oracle.
void ExhaustiveFrom16(Format src) {
  std::mt19937 rng(1234);
  for (Format dst : {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                     Format::kE5M2, Format::kUE8M0, Format::kUE4M3, Format::kF16,
                     Format::kBF16}) {
    if (IsExactConversion(src, dst)) continue;
    const Grid g = MakeGrid(dst);
    for (const EncodePolicy& p : testing::LegalPolicies(src, dst)) {
      size_t failures = 0;
      for (uint32_t bits = 0; bits < 0x10000; ++bits) {
        const double x = scalar::ToDouble(src, bits);
        std::vector<uint32_t> rbits = {0};
        if (p.rounding == Rounding::kRS) {
          rbits = {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu, 0x00001000u,
                   static_cast<uint32_t>(rng())};
        }
        for (uint32_t r : rbits) {
          const uint64_t want = OracleEncode(g, src, x, p, r);
          const uint64_t got = scalar::Convert(src, dst, bits, p, r);
          if (got != want && ++failures <= 5) {
            ADD_FAILURE() << absl::StrFormat(
                "%s -> %s %s: input 0x%04X (%.17g) rbits 0x%08X: expected 0x%X, got 0x%X",
                FormatName(src), FormatName(dst), PolicyToString(p), bits, x, r,
                want, got);
          }
        }
      }
      EXPECT_EQ(failures, 0u) << FormatName(dst) << " " << PolicyToString(p);
    }
  }
}

TEST(ScalarEncode, EveryF16InputEveryPolicy) { ExhaustiveFrom16(Format::kF16); }
TEST(ScalarEncode, EveryBF16InputEveryPolicy) { ExhaustiveFrom16(Format::kBF16); }

TEST(ScalarEncode, StructuredF32SweepEveryPolicy) {
  const std::vector<uint32_t> sweep = testing::StructuredF32Sweep();
  ASSERT_GT(sweep.size(), 100000u);
  for (Format dst : {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                     Format::kE5M2, Format::kUE8M0, Format::kUE4M3, Format::kF16,
                     Format::kBF16}) {
    const Grid g = MakeGrid(dst);
    for (const EncodePolicy& p : testing::LegalPolicies(Format::kF32, dst)) {
      size_t failures = 0;
      for (size_t i = 0; i < sweep.size(); ++i) {
        const uint32_t bits = sweep[i];
        const uint32_t r = p.rounding == Rounding::kRS ? RandomBits(99, i) : 0;
        const double x = scalar::F32FromBits(bits);
        const uint64_t want = OracleEncode(g, Format::kF32, x, p, r);
        const uint64_t got = scalar::Convert(Format::kF32, dst, bits, p, r);
        if (got != want && ++failures <= 5) {
          ADD_FAILURE() << absl::StrFormat(
              "f32 -> %s %s: input 0x%08X (%.9g) rbits 0x%08X: expected 0x%X, got 0x%X",
              FormatName(dst), PolicyToString(p), bits, x, r, want, got);
        }
      }
      EXPECT_EQ(failures, 0u) << FormatName(dst) << " " << PolicyToString(p);
    }
  }
}

TEST(ScalarEncode, F64SourceRoundsOnce) {
  // 448 + 16 = 464 is the e4m3 tie (-> 448, even); 464 + 2^-40 is above the
  // tie and must overflow: rounding through f32 first would lose the 2^-40.
  EncodePolicy nosat;
  nosat.saturation = Saturation::kNoSat;
  EXPECT_EQ(scalar::Convert(Format::kF64, Format::kE4M3, scalar::F64Bits(464.0), nosat), 0x7Eu);
  EXPECT_EQ(scalar::Convert(Format::kF64, Format::kE4M3,
                            scalar::F64Bits(464.0 + std::ldexp(1.0, -40)), nosat),
            0x7Fu);
  // 1 + 2^-4 + 2^-50: just above the e2m3 tie between 1.0 and 1.125.
  EXPECT_EQ(scalar::Convert(Format::kF64, Format::kE2M3,
                            scalar::F64Bits(1.0625 + std::ldexp(1.0, -50)), {}),
            0x09u);
  EXPECT_EQ(scalar::Convert(Format::kF64, Format::kE2M3, scalar::F64Bits(1.0625), {}),
            0x08u);  // Tie -> even mantissa 000.
}

// Golden rounding cases with the reason in the comment.
TEST(ScalarEncode, GoldenRoundingCases) {
  EncodePolicy rn, nosat, rz, rp, rm;
  nosat.saturation = Saturation::kNoSat;
  rz.rounding = Rounding::kRZ;
  rp.rounding = Rounding::kRP;
  rm.rounding = Rounding::kRM;
  auto e = [](float x, Format f, const EncodePolicy& p) {
    return scalar::EncodeF32(x, f, p);
  };
  EXPECT_EQ(e(464.f, Format::kE4M3, nosat), 0x7Eu);    // 464: tie -> 448 (even)
  EXPECT_EQ(e(465.f, Format::kE4M3, nosat), 0x7Fu);    // above tie: NaN (no Inf)
  EXPECT_EQ(e(-465.f, Format::kE4M3, nosat), 0xFFu);   // NaN keeps the sign
  EXPECT_EQ(e(1e6f, Format::kE4M3, rn), 0x7Eu);        // satfinite: max
  EXPECT_EQ(e(61439.f, Format::kE5M2, nosat), 0x7Bu);  // below tie: 57344
  EXPECT_EQ(e(61440.f, Format::kE5M2, nosat), 0x7Cu);  // tie -> even = Inf
  EXPECT_EQ(e(61440.f, Format::kE5M2, rn), 0x7Bu);     // satfinite: max
  EXPECT_EQ(e(1e6f, Format::kE5M2, rz), 0x7Bu);        // satfinite max
  EXPECT_EQ(e(0.25f, Format::kE2M1, rn), 0x0u);        // half of 0.5: tie -> 0
  EXPECT_EQ(e(0.2500001f, Format::kE2M1, rn), 0x1u);   // just above: 0.5
  EXPECT_EQ(e(-0.25f, Format::kE2M1, rn), 0x8u);       // -0 keeps its sign
  EXPECT_EQ(e(5.0f, Format::kE2M1, rn), 0x6u);         // 5 = tie 4|6 -> 4 (even)
  EXPECT_EQ(e(5.0f, Format::kE2M1, rp), 0x7u);         // rp -> 6
  EXPECT_EQ(e(-5.0f, Format::kE2M1, rp), 0xEu);        // rp of -5 -> -4
  EXPECT_EQ(e(-5.0f, Format::kE2M1, rm), 0xFu);        // rm of -5 -> -6
  EXPECT_EQ(e(std::nanf(""), Format::kE2M1, rn), 0x7u);   // NaN -> +max (PTX)
  EXPECT_EQ(e(-std::nanf(""), Format::kE3M2, rn), 0x1Fu); // either sign
  EXPECT_EQ(e(-std::nanf(""), Format::kE4M3, rn), 0x7Fu); // canonical NaN
  EXPECT_EQ(e(-INFINITY, Format::kE4M3, rn), 0xFEu);      // satfinite -max
  EXPECT_EQ(e(-INFINITY, Format::kE5M2, nosat), 0xFCu);   // -Inf
  // ue8m0: rz = floor, rp = ceil of |x| to a power of two.
  EXPECT_EQ(e(3.0f, Format::kUE8M0, rz), 0x80u);          // 2^1
  EXPECT_EQ(e(3.0f, Format::kUE8M0, rp), 0x81u);          // 2^2
  EXPECT_EQ(e(-3.0f, Format::kUE8M0, rp), 0x81u);         // sign ignored
  EXPECT_EQ(e(0.0f, Format::kUE8M0, rp), 0x00u);          // no zero: 2^-127
  EXPECT_EQ(e(1e-40f, Format::kUE8M0, rz), 0x00u);        // tiny clamps to 0x00
  EXPECT_EQ(e(INFINITY, Format::kUE8M0, rz), 0xFEu);      // satfinite
  EncodePolicy rp_nosat = rp;
  rp_nosat.saturation = Saturation::kNoSat;
  EXPECT_EQ(e(INFINITY, Format::kUE8M0, rp_nosat), 0xFFu);  // nosat: NaN
  EXPECT_EQ(e(3.0e38f, Format::kUE8M0, rp_nosat), 0xFFu);   // ceil > 2^127
  // relu: -1 -> +0; -0 -> +0.
  EncodePolicy relu;
  relu.relu = true;
  EXPECT_EQ(e(-1.0f, Format::kE4M3, relu), 0x00u);
  EXPECT_EQ(e(-0.0f, Format::kE4M3, relu), 0x00u);
  EXPECT_EQ(e(-0.0f, Format::kE4M3, rn), 0x80u);
}

TEST(ScalarEncode, OverflowTieOption) {
  EncodePolicy p;
  p.saturation = Saturation::kNoSat;
  p.overflow_tie = OverflowTie::kToMaxFinite;
  EXPECT_EQ(scalar::EncodeF32(61440.f, Format::kE5M2, p), 0x7Bu);  // kToMaxFinite
  EXPECT_EQ(scalar::EncodeF32(61441.f, Format::kE5M2, p), 0x7Cu);  // above: Inf
  EXPECT_EQ(scalar::EncodeF32(-61440.f, Format::kE5M2, p), 0xFBu);
  EXPECT_EQ(scalar::EncodeF32(464.f, Format::kE4M3, p), 0x7Eu);    // unchanged
  p.rounding = Rounding::kRZ;
  EXPECT_FALSE(ValidateConversion(Format::kF32, Format::kE5M2, p).ok());
}

TEST(ScalarEncode, StochasticRoundingAlignment) {
  EncodePolicy rs;
  rs.rounding = Rounding::kRS;
  // 1 + 2^-4 in f32 -> e4m3 (3 mantissa bits): 20 discarded bits, field value
  // 0x80000 (half). rbits low 20 bits >= 0x80000 carry: 1.125 (0x39).
  const float x = 1.0625f;
  EXPECT_EQ(scalar::EncodeF32(x, Format::kE4M3, rs, 0x0007FFFF), 0x38u);
  EXPECT_EQ(scalar::EncodeF32(x, Format::kE4M3, rs, 0x00080000), 0x39u);
  EXPECT_EQ(scalar::EncodeF32(x, Format::kE4M3, rs, 0xFFF00000), 0x38u);  // high bits unused
  // Exact values never round.
  EXPECT_EQ(scalar::EncodeF32(1.0f, Format::kE4M3, rs, 0xFFFFFFFF), 0x38u);
}

TEST(ScalarRoundTrip, EveryNonNanCode) {
  for (Format f : {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                   Format::kE5M2, Format::kUE8M0, Format::kUE4M3}) {
    const FormatTraits& t = Traits(f);
    std::vector<EncodePolicy> policies(1);
    if (f == Format::kUE8M0) {
      policies[0].rounding = Rounding::kRZ;
      policies.push_back(policies[0]);
      policies[1].rounding = Rounding::kRP;
    }
    for (uint32_t c = 0; c < (1u << t.bits); ++c) {
      if (f == Format::kUE4M3 && c > 0x7F) continue;
      if (scalar::Classify(f, c) == scalar::ValueClass::kNaN) continue;
      for (const EncodePolicy& p : policies) {
        EncodePolicy q = p;
        if (scalar::Classify(f, c) == scalar::ValueClass::kInf) {
          q.saturation = Saturation::kNoSat;
        }
        const float v = scalar::DecodeToF32(f, c);
        EXPECT_EQ(scalar::EncodeF32(v, f, q), c) << t.name << " " << c;
      }
    }
  }
}

TEST(ScalarValidate, IllegalCombinationsAreClearErrors) {
  EncodePolicy nosat;
  nosat.saturation = Saturation::kNoSat;
  auto msg = [](const absl::Status& s) { return std::string(s.message()); };
  absl::Status s = ValidateConversion(Format::kF32, Format::kE2M1, nosat);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(msg(s).find("nosat"), std::string::npos) << msg(s);
  EXPECT_NE(msg(s).find("e2m1"), std::string::npos) << msg(s);
  EXPECT_FALSE(ValidateConversion(Format::kF32, Format::kE2M3, nosat).ok());
  EXPECT_FALSE(ValidateConversion(Format::kF32, Format::kE3M2, nosat).ok());
  s = ValidateConversion(Format::kF32, Format::kUE8M0, {});  // rn for ue8m0
  EXPECT_NE(msg(s).find("rz or rp"), std::string::npos) << msg(s);
  EncodePolicy relu_rz;
  relu_rz.rounding = Rounding::kRZ;
  relu_rz.relu = true;
  EXPECT_FALSE(ValidateConversion(Format::kF32, Format::kUE8M0, relu_rz).ok());
  s = ValidateConversion(Format::kUE8M0, Format::kF16, {});
  EXPECT_NE(msg(s).find("do not all fit"), std::string::npos) << msg(s);
  EXPECT_FALSE(ValidateConversion(Format::kF32, Format::kF64, {}).ok());
  // Legal ones.
  EXPECT_TRUE(ValidateConversion(Format::kF32, Format::kE4M3, nosat).ok());
  EXPECT_TRUE(ValidateConversion(Format::kUE8M0, Format::kBF16, {}).ok());
  EXPECT_TRUE(ValidateConversion(Format::kE4M3, Format::kF16, nosat).ok());
}

TEST(ScalarConvertArray, ArgumentErrors) {
  std::vector<uint8_t> in = {1, 2, 3}, out(3);
  absl::Status s = scalar::ConvertArray(Format::kF16, Format::kE4M3, {}, in, absl::MakeSpan(out));
  EXPECT_NE(std::string(s.message()).find("not a multiple"), std::string::npos) << s;
  in = {0, 0, 0, 0};
  s = scalar::ConvertArray(Format::kF16, Format::kE4M3, {}, in, absl::MakeSpan(out));
  EXPECT_NE(std::string(s.message()).find("expected 2 bytes"), std::string::npos) << s;
  std::vector<uint8_t> codes = {1, 0x10};  // 0x10 is not an e2m1 code
  std::vector<uint8_t> f32(8, 0xAB);
  s = scalar::ConvertArray(Format::kE2M1, Format::kF32, {}, codes, absl::MakeSpan(f32));
  EXPECT_NE(std::string(s.message()).find("input[1] = 0x10"), std::string::npos) << s;
  EXPECT_EQ(f32, std::vector<uint8_t>(8, 0xAB)) << "output touched on error";
  std::vector<uint8_t> ue4m3 = {0x7E, 0x80};  // ue4m3: MSB must be 0
  s = scalar::ConvertArray(Format::kUE4M3, Format::kF32, {}, ue4m3, absl::MakeSpan(f32));
  EXPECT_NE(std::string(s.message()).find("input[1] = 0x80 is not a ue4m3 code"),
            std::string::npos) << s;
  EncodePolicy rs;
  rs.rounding = Rounding::kRS;
  in = {0, 0x3C, 0, 0x3C};
  std::vector<uint8_t> o2(2);
  s = scalar::ConvertArray(Format::kF16, Format::kE4M3, rs, in, absl::MakeSpan(o2));
  EXPECT_NE(std::string(s.message()).find("rbits"), std::string::npos) << s;
  std::vector<uint32_t> rb = {0, 0};
  EXPECT_TRUE(scalar::ConvertArray(Format::kF16, Format::kE4M3, rs, in, absl::MakeSpan(o2), rb).ok());
  EXPECT_EQ(o2, (std::vector<uint8_t>{0x38, 0x38}));  // f16 1.0 -> e4m3 1.0
}

TEST(Format, NamesParseAndPrint) {
  for (int i = 0; i < kNumFormats; ++i) {
    const Format f = static_cast<Format>(i);
    absl::StatusOr<Format> p = ParseFormat(FormatName(f));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, f);
  }
  EXPECT_EQ(*ParseFormat("float8_e4m3fn"), Format::kE4M3);
  EXPECT_EQ(*ParseFormat("BF16"), Format::kBF16);
  absl::StatusOr<Format> bad = ParseFormat("e9m9");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("e9m9"), std::string::npos);
  EXPECT_NE(std::string(bad.status().message()).find("e2m1, e2m3"), std::string::npos);
}

TEST(Format, TraitsAgreeWithDecodedMax) {
  // max_code decodes to the documented max finite of docs/semantics.md section 1.
  EXPECT_EQ(scalar::ToDouble(Format::kE2M1, Traits(Format::kE2M1).max_code), 6.0);
  EXPECT_EQ(scalar::ToDouble(Format::kE2M3, Traits(Format::kE2M3).max_code), 7.5);
  EXPECT_EQ(scalar::ToDouble(Format::kE3M2, Traits(Format::kE3M2).max_code), 28.0);
  EXPECT_EQ(scalar::ToDouble(Format::kE4M3, Traits(Format::kE4M3).max_code), 448.0);
  EXPECT_EQ(scalar::ToDouble(Format::kE5M2, Traits(Format::kE5M2).max_code), 57344.0);
  EXPECT_EQ(scalar::ToDouble(Format::kUE8M0, Traits(Format::kUE8M0).max_code),
            std::ldexp(1.0, 127));
  EXPECT_EQ(scalar::ToDouble(Format::kF16, Traits(Format::kF16).max_code), 65504.0);
  EXPECT_EQ(scalar::ToDouble(Format::kF32, Traits(Format::kF32).max_code),
            static_cast<double>(3.4028234663852886e38f));
}

}  // namespace
}  // namespace mxpack
