// MX block scales (include/mxpack/mx.h, docs/semantics.md section 5):
// hand-computed golden blocks of every MX format and mode, the scalar
// reference against an independent evaluation of the formulas, and the
// integer scale formula of the SIMD path on every target.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/dispatch.h"
#include "mxpack/mx.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "src/mx/mx_internal.h"
#include "tests/common/oracle.h"
#include "tests/mx/mx_test_util.h"

namespace mxpack::mx_test {
namespace {

// ---------------------------------------------------------------------------
// Golden blocks, computed by hand. e2m1 codes: 0 0, 1 0.5, 2 1, 3 1.5, 4 2,
// 5 3, 6 4, 7 6; bit 3 is the sign.

TEST(MxGolden, Mxfp4FloorExactBlock) {
  // amax 6 = 1.5 * 2^2: floor s = 2 - emax(2) = 0, X = 1 (scale code 0x7F).
  const MxTensor t =
      QuantizeBlock(MxFormat::kMxfp4, {6.0f, 3.0f, -1.5f, 0.25f, -0.0f},
                    ScaleMode::kFloor);
  EXPECT_EQ(t.scales[0], 0x7F);
  EXPECT_EQ(t.elements[0], 0x7);  // 6
  EXPECT_EQ(t.elements[1], 0x5);  // 3
  EXPECT_EQ(t.elements[2], 0xB);  // -1.5 = sign | 0x3
  EXPECT_EQ(t.elements[3], 0x0);  // 0.25: tie between 0 and 0.5 -> even (0)
  EXPECT_EQ(t.elements[4], 0x8);  // -0 keeps its sign
  EXPECT_EQ(t.elements[5], 0x0);
}

TEST(MxGolden, Mxfp4AmaxPowerOfTwoEveryMode) {
  // amax 4 = 1.0 * 2^2 exactly. floor: 2-2 = 0. ceil: ceil(log2 4) = 2 -> 0.
  // rceil: smallest s with 4 <= 6 * 2^s is 0. even: 4 does not round up into
  // the next binade -> 0. Every mode: X = 1, 4 -> code 6.
  for (ScaleMode m : kModes) {
    const MxTensor t = QuantizeBlock(MxFormat::kMxfp4, {4.0f, 1.0f}, m);
    EXPECT_EQ(t.scales[0], 0x7F) << ScaleModeName(m);
    EXPECT_EQ(t.elements[0], 0x6) << ScaleModeName(m);
    EXPECT_EQ(t.elements[1], 0x2) << ScaleModeName(m);
  }
}

TEST(MxGolden, Mxfp4AmaxSevenModesDisagree) {
  // amax 7 = 1.75 * 2^2.
  // floor: s = 0, 7 > 6 saturates to 6 (code 7).
  const MxTensor fl = QuantizeBlock(MxFormat::kMxfp4, {7.0f}, ScaleMode::kFloor);
  EXPECT_EQ(fl.scales[0], 0x7F);
  EXPECT_EQ(fl.elements[0], 0x7);
  // rceil: 7 > 6 * 2^0, 7 <= 6 * 2^1 -> s = 1, 7 / 2 = 3.5: tie between 3
  // (0b101) and 4 (0b110) -> even mantissa -> 4 (code 6).
  // ceil: ceil(log2 7) = 3 -> s = 1, same. even: 1.75 rounded to 1 mantissa
  // bit, ties away, is 2.0 -> next binade -> s = 1, same.
  for (ScaleMode m : {ScaleMode::kRceil, ScaleMode::kCeil, ScaleMode::kEven}) {
    const MxTensor t = QuantizeBlock(MxFormat::kMxfp4, {7.0f}, m);
    EXPECT_EQ(t.scales[0], 0x80) << ScaleModeName(m);
    EXPECT_EQ(t.elements[0], 0x6) << ScaleModeName(m);
  }
}

TEST(MxGolden, Mxfp4AmaxFiveEvenStays) {
  // amax 5 = 1.25 * 2^2. even: 1.25 with 1 mantissa bit is the tie between
  // 1.0 and 1.5, away -> 1.5, still below 2: s = 0. ceil: ceil(log2 5) = 3
  // -> s = 1. rceil: 5 <= 6 -> s = 0.
  EXPECT_EQ(QuantizeBlock(MxFormat::kMxfp4, {5.0f}, ScaleMode::kEven).scales[0],
            0x7F);
  EXPECT_EQ(QuantizeBlock(MxFormat::kMxfp4, {5.0f}, ScaleMode::kCeil).scales[0],
            0x80);
  EXPECT_EQ(
      QuantizeBlock(MxFormat::kMxfp4, {5.0f}, ScaleMode::kRceil).scales[0],
      0x7F);
}

TEST(MxGolden, ZeroBlockEveryFormatAndMode) {
  // amax = 0: scale code 0x00 (2^-127) and zero elements, sign kept.
  for (MxFormat f : kFormats) {
    for (ScaleMode m : kModes) {
      const MxTensor t = QuantizeBlock(f, {0.0f, -0.0f}, m);
      EXPECT_EQ(t.scales[0], 0x00) << MxFormatName(f) << " " << ScaleModeName(m);
      const uint8_t neg0 = f == MxFormat::kMxfp8E4m3 || f == MxFormat::kMxfp8E5m2
                               ? 0x80
                               : (f == MxFormat::kMxfp4 || f == MxFormat::kNvfp4
                                      ? 0x08
                                      : 0x20);
      EXPECT_EQ(t.elements[0], 0x00);
      EXPECT_EQ(t.elements[1], neg0) << MxFormatName(f);
    }
  }
}

TEST(MxGolden, NanBlockGetsNanScaleAndSaturatedNanElements) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // e4m3: scale 0xFF, every element encode(NaN) = 0x7F.
  MxTensor t = QuantizeBlock(MxFormat::kMxfp8E4m3, {1.0f, nan, -2.0f},
                             ScaleMode::kFloor);
  EXPECT_EQ(t.scales[0], 0xFF);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(t.elements[i], 0x7F) << i;
  // e2m1 has no NaN: satfinite NaN is +max (0x7).
  t = QuantizeBlock(MxFormat::kMxfp4, {1.0f, nan}, ScaleMode::kRceil);
  EXPECT_EQ(t.scales[0], 0xFF);
  EXPECT_EQ(t.elements[0], 0x7);
  // NVFP4: ue4m3 NaN scale 0x7F.
  t = QuantizeBlock(MxFormat::kNvfp4, {nan, 1.0f}, ScaleMode::kEven, 1.0f);
  EXPECT_EQ(t.scales[0], 0x7F);
  EXPECT_EQ(t.elements[1], 0x7);
}

TEST(MxGolden, InfBlockScaledByFiniteAmax) {
  const float inf = std::numeric_limits<float>::infinity();
  // Finite amax 1 = 2^0: floor s = 0 - 2 = -2 (code 0x7D), X = 1/4: 1 -> 4
  // (code 6); +Inf -> +6 (0x7), -Inf -> -6 (0xF) under satfinite.
  const MxTensor t = QuantizeBlock(MxFormat::kMxfp4, {inf, 1.0f, -inf},
                                   ScaleMode::kFloor);
  EXPECT_EQ(t.scales[0], 0x7D);
  EXPECT_EQ(t.elements[0], 0x7);
  EXPECT_EQ(t.elements[1], 0x6);
  EXPECT_EQ(t.elements[2], 0xF);
}

TEST(MxGolden, SubnormalInputsClampScale) {
  // x = 2^-140 (an f32 subnormal): floor(log2) - 15 < -127 clamps to scale
  // code 0x00 (X = 2^-127); x / X = 2^-13 = e5m2 normal, exponent field
  // -13 + 15 = 2 -> code 0x08.
  const float x = std::ldexp(1.0f, -140);
  const MxTensor t =
      QuantizeBlock(MxFormat::kMxfp8E5m2, {x, -x}, ScaleMode::kFloor);
  EXPECT_EQ(t.scales[0], 0x00);
  EXPECT_EQ(t.elements[0], 0x08);
  EXPECT_EQ(t.elements[1], 0x88);
}

TEST(MxGolden, E4m3FloorSaturatesRceilDoesNot) {
  // amax 500 = 1.953 * 2^8. floor: s = 8 - 8 = 0, 500 > 464 saturates to 448
  // (0x7E). rceil: 500 > 448 -> s = 1, 250 rounds to 256 (candidates 240,
  // 256) = 2^8 -> exponent field 15 -> 0x78.
  MxTensor t = QuantizeBlock(MxFormat::kMxfp8E4m3, {500.0f}, ScaleMode::kFloor);
  EXPECT_EQ(t.scales[0], 0x7F);
  EXPECT_EQ(t.elements[0], 0x7E);
  t = QuantizeBlock(MxFormat::kMxfp8E4m3, {500.0f}, ScaleMode::kRceil);
  EXPECT_EQ(t.scales[0], 0x80);
  EXPECT_EQ(t.elements[0], 0x78);
}

TEST(MxGolden, Mxfp6E2m3EveryMode) {
  // e2m3: bias 1, 3 mantissa bits, max 7.5 = 1.875 * 2^2 (emax 2); steps
  // 0.125 below 2, 0.25 in [2, 4), 0.5 in [4, 7.5]; sign bit 0x20.
  // amax 15 = 1.875 * 2^3. floor / rceil (15 <= 7.5 * 2) / even (1.875 <
  // 2 - 2^-4): s = 1, X = 2: 15 -> 7.5 (0x1F), 1 -> 0.5 = 4 * 0.125 (0x04),
  // -0.1 -> -0.05 rounds to -0 (0x20). ceil: ceil(log2 15) = 4 -> s = 2,
  // X = 4: 15 -> 3.75 = 1.875 * 2^1 (exp field 2: 0x17), 1 -> 0.25 (0x02).
  for (ScaleMode m : {ScaleMode::kFloor, ScaleMode::kRceil, ScaleMode::kEven}) {
    const MxTensor t =
        QuantizeBlock(MxFormat::kMxfp6E2m3, {15.0f, 1.0f, -0.1f}, m);
    EXPECT_EQ(t.scales[0], 0x80) << ScaleModeName(m);
    EXPECT_EQ(t.elements[0], 0x1F);
    EXPECT_EQ(t.elements[1], 0x04);
    EXPECT_EQ(t.elements[2], 0x20);
  }
  const MxTensor c =
      QuantizeBlock(MxFormat::kMxfp6E2m3, {15.0f, 1.0f}, ScaleMode::kCeil);
  EXPECT_EQ(c.scales[0], 0x81);
  EXPECT_EQ(c.elements[0], 0x17);
  EXPECT_EQ(c.elements[1], 0x02);
}

TEST(MxGolden, Mxfp6E3m2EveryMode) {
  // e3m2: bias 3, 2 mantissa bits, max 28 = 1.75 * 2^4 (emax 4), subnormal
  // step 0.0625. amax 30 = 1.875 * 2^4.
  // floor: s = 0: 30 saturates to 28 (0x1F); 0.1 / 0.0625 = 1.6 -> 2 (0x02).
  MxTensor t = QuantizeBlock(MxFormat::kMxfp6E3m2, {30.0f, 0.1f}, ScaleMode::kFloor);
  EXPECT_EQ(t.scales[0], 0x7F);
  EXPECT_EQ(t.elements[0], 0x1F);
  EXPECT_EQ(t.elements[1], 0x02);
  // rceil (30 > 28), ceil (ceil(log2 30) = 5), even (1.875 >= 2 - 2^-3):
  // s = 1: 30 -> 15, the tie between 14 (1.11b) and 16 (1.00b * 2^4) goes to
  // the even mantissa: 16, exp field 7 -> 0x1C; 0.1 -> 0.05 = 0.8 steps -> 1
  // (0x01).
  for (ScaleMode m : {ScaleMode::kRceil, ScaleMode::kCeil, ScaleMode::kEven}) {
    t = QuantizeBlock(MxFormat::kMxfp6E3m2, {30.0f, 0.1f}, m);
    EXPECT_EQ(t.scales[0], 0x80) << ScaleModeName(m);
    EXPECT_EQ(t.elements[0], 0x1C) << ScaleModeName(m);
    EXPECT_EQ(t.elements[1], 0x01) << ScaleModeName(m);
  }
}

TEST(MxGolden, Mxfp8E5m2EveryMode) {
  // amax 86016 = 1.3125 * 2^16; e5m2 emax 15, max 57344 = 1.75 * 2^15.
  // floor / rceil (86016 <= 57344 * 2) / even (1.3125 < 1.875): s = 1:
  // 43008 = 1.3125 * 2^15 rounds to 1.25 * 2^15 (exp 30, mant 01: 0x79).
  // ceil: s = 17 - 15 = 2: 21504 -> 1.25 * 2^14 (0x75).
  for (ScaleMode m : {ScaleMode::kFloor, ScaleMode::kRceil, ScaleMode::kEven}) {
    const MxTensor t = QuantizeBlock(MxFormat::kMxfp8E5m2, {-86016.0f}, m);
    EXPECT_EQ(t.scales[0], 0x80) << ScaleModeName(m);
    EXPECT_EQ(t.elements[0], 0xF9) << ScaleModeName(m);
  }
  const MxTensor c = QuantizeBlock(MxFormat::kMxfp8E5m2, {86016.0f}, ScaleMode::kCeil);
  EXPECT_EQ(c.scales[0], 0x81);
  EXPECT_EQ(c.elements[0], 0x75);
}


// ---------------------------------------------------------------------------
// Independent per-block evaluation of the formulas of mx.h.

int FloorLog2(double a) { return std::ilogb(a); }

// Scale exponent of one MX block, straight from the definitions.
int IndependentMxScale(MxFormat f, ScaleMode m, double amax) {
  const Format elem = MxElementFormat(f);
  const testing::Grid g = testing::MakeGrid(elem);
  const double max = g.values.back();
  const int emax = FloorLog2(max);
  int s = 0;
  switch (m) {
    case ScaleMode::kFloor:
      s = FloorLog2(amax) - emax;
      break;
    case ScaleMode::kCeil: {
      int c = FloorLog2(amax);
      if (std::ldexp(1.0, c) < amax) ++c;  // ceil(log2 amax)
      s = c - emax;
      break;
    }
    case ScaleMode::kRceil:
      s = -300;
      while (!(amax <= std::ldexp(max, s))) ++s;
      break;
    case ScaleMode::kEven: {
      const int e = FloorLog2(amax);
      const int mb = Traits(elem).man_bits;
      // Round amax to mb mantissa bits, ties away from zero.
      const double units = std::ldexp(amax, mb - e);
      const double rounded = std::ldexp(std::floor(units + 0.5), e - mb);
      s = FloorLog2(rounded) - emax;
      break;
    }
  }
  return std::max(-127, std::min(127, s));
}


TEST(MxIndependent, ScalarReferenceEqualsDirectFormulas) {
  for (MxFormat f : kFormats) {
    if (f == MxFormat::kNvfp4) continue;  // checked below
    const Format elem = MxElementFormat(f);
    const testing::Grid g = testing::MakeGrid(elem);
    for (ScaleMode m : kModes) {
      const size_t rows = 7, cols = 96 + 5;  // ragged last block
      const std::vector<float> x = RandomTensor(rows * cols, 17, false);
      MxOptions o;
      o.scale_mode = m;
      absl::StatusOr<MxTensor> q = QuantizeMx(
          f, Format::kF32, F32Bytes(x), rows, cols, o, Impl{Impl::kScalar});
      ASSERT_TRUE(q.ok()) << q.status();
      const size_t bpr = q->shape.blocks_per_row();
      for (size_t r = 0; r < rows; ++r) {
        for (size_t k = 0; k < bpr; ++k) {
          double amax = 0;
          for (size_t c = k * 32; c < std::min(cols, k * 32 + 32); ++c) {
            amax = std::max(amax, std::fabs(double{x[r * cols + c]}));
          }
          const int s = amax == 0 ? -127 : IndependentMxScale(f, m, amax);
          ASSERT_EQ(q->scales[r * bpr + k], s + 127)
              << MxFormatName(f) << " " << ScaleModeName(m) << " r" << r
              << " k" << k << " amax " << amax;
          for (size_t c = k * 32; c < k * 32 + 32; ++c) {
            const uint64_t want =
                c < cols ? testing::OracleEncode(
                               g, Format::kF64,
                               std::ldexp(double{x[r * cols + c]}, -s),
                               EncodePolicy{})
                         : 0;
            ASSERT_EQ(q->elements[r * q->shape.cols_padded() + c], want)
                << MxFormatName(f) << " " << ScaleModeName(m) << " r" << r
                << " c" << c << " x " << x[r * cols + c];
          }
        }
      }
    }
  }
}

// amax bit patterns around every scale threshold: every exponent with
// mantissas 0, 1, max_mant +-1, even_mant +-1 of every format, all ones.
std::vector<uint32_t> ThresholdAmaxBits() {
  std::vector<uint32_t> amax_bits = {0, 1, 0x007FFFFF, 0x00400000};
  for (uint32_t e = 1; e < 255; ++e) {
    for (uint32_t m : {0u, 1u, 0x200000u, 0x3FFFFFu, 0x400000u, 0x400001u,
                       0x5FFFFFu, 0x600000u, 0x600001u, 0x6FFFFFu, 0x700000u,
                       0x700001u, 0x77FFFFu, 0x780000u, 0x780001u, 0x7BFFFFu,
                       0x7C0000u, 0x7C0001u, 0x7FFFFFu}) {
      amax_bits.push_back(e << 23 | m);
    }
  }
  return amax_bits;
}

TEST(MxSimd, ScaleThresholdsEveryTarget) {
  // One block per amax pattern (amax first, then a few smaller values); the
  // SIMD scale pass (a vector of blocks at a time) equals the reference.
  const std::vector<uint32_t> amax_bits = ThresholdAmaxBits();
  std::vector<float> x(amax_bits.size() * 32, 0.0f);
  for (size_t b = 0; b < amax_bits.size(); ++b) {
    x[b * 32] = F32FromBits(amax_bits[b]);
    x[b * 32 + 5] = -0.5f * F32FromBits(amax_bits[b]);
  }
  for (MxFormat f : kFormats) {
    if (f == MxFormat::kNvfp4) continue;
    for (ScaleMode m : kModes) {
      MxOptions o;
      o.scale_mode = m;
      absl::StatusOr<MxTensor> ref = QuantizeMx(f, Format::kF32, F32Bytes(x),
                                                amax_bits.size(), 32, o,
                                                Impl{Impl::kScalar});
      ASSERT_TRUE(ref.ok());
      for (int64_t target : AvailableTargets()) {
        absl::StatusOr<MxTensor> got = QuantizeMx(
            f, Format::kF32, F32Bytes(x), amax_bits.size(), 32, o, Impl{target});
        ASSERT_TRUE(got.ok());
        for (size_t b = 0; b < amax_bits.size(); ++b) {
          ASSERT_EQ(got->scales[b], ref->scales[b])
              << MxFormatName(f) << " " << ScaleModeName(m) << " "
              << ImplName(Impl{target}) << " amax bits 0x" << std::hex
              << amax_bits[b];
        }
        ASSERT_EQ(got->elements, ref->elements)
            << MxFormatName(f) << " " << ScaleModeName(m) << " "
            << ImplName(Impl{target});
      }
    }
  }
}

TEST(MxIndependent, IntegerScaleFormulaEqualsReference) {
  std::vector<uint32_t> amax_bits = ThresholdAmaxBits();
  for (MxFormat f : kFormats) {
    if (f == MxFormat::kNvfp4) continue;
    for (ScaleMode m : kModes) {
      const internal::MxScaleParams p = internal::ScaleParams(f, m);
      for (uint32_t b : amax_bits) {
        for (bool nan : {false, true}) {
          ASSERT_EQ(internal::MxScaleCodeFromBits(p, b, nan),
                    scalar::MxScaleCode(f, m, F32FromBits(b), nan))
              << MxFormatName(f) << " " << ScaleModeName(m) << " amax bits 0x"
              << std::hex << b;
        }
      }
    }
  }
}

}  // namespace
}  // namespace mxpack::mx_test
