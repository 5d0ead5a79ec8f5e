// Tests of MX / NVFP4 block quantization (include/mxpack/mx.h): hand-computed
// golden blocks, an independent per-block evaluation of the docs/semantics.md section 5
// formulas, every SIMD target against the scalar reference, the tcgen05
// scale-tile layout against an independent reshape/permute derivation,
// dequantization, error statistics and error paths.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
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

namespace mxpack {
namespace {

using scalar::F32Bits;
using scalar::F32FromBits;

constexpr MxFormat kFormats[] = {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2,
                                 MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2,
                                 MxFormat::kMxfp4,     MxFormat::kNvfp4};
constexpr ScaleMode kModes[] = {ScaleMode::kFloor, ScaleMode::kRceil,
                                ScaleMode::kCeil, ScaleMode::kEven};

std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// One block of 32 (MX) / 16 (NVFP4) values, zero-filled, quantized into
// codes + linear scales with the scalar reference.
MxTensor QuantizeBlock(MxFormat f, std::vector<float> x, ScaleMode mode,
                       std::optional<float> tensor_scale = std::nullopt) {
  x.resize(MxBlockSize(f), 0.0f);
  MxOptions o;
  o.scale_mode = mode;
  o.tensor_scale = tensor_scale;
  absl::StatusOr<MxTensor> t = QuantizeMx(f, Format::kF32, F32Bytes(x), 1,
                                          x.size(), o, Impl{Impl::kScalar});
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

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

TEST(MxGolden, Nvfp4ScaleRoundingPerMode) {
  // t = 1, block amax 7: 7 / 6 = 1.1667 in ue4m3 (steps of 0.125 in [1, 2)):
  // floor -> rz 1.125 (0x39), even -> rn 1.125 (0x39), ceil/rceil -> rp
  // 1.25 (0x3A). Elements: 7 / 1.125 = 6.22 -> 6 (0x7, saturated), 1 / 1.125
  // = 0.89 -> 1.0 (0x2); 7 / 1.25 = 5.6 -> 6 (0x7), 1 / 1.25 = 0.8 -> 1.0.
  for (ScaleMode m : kModes) {
    const MxTensor t =
        QuantizeBlock(MxFormat::kNvfp4, {7.0f, 1.0f}, m, 1.0f);
    const bool up = m == ScaleMode::kCeil || m == ScaleMode::kRceil;
    EXPECT_EQ(t.scales[0], up ? 0x3A : 0x39) << ScaleModeName(m);
    EXPECT_EQ(t.elements[0], 0x7) << ScaleModeName(m);
    EXPECT_EQ(t.elements[1], 0x2) << ScaleModeName(m);
  }
}

TEST(MxGolden, Nvfp4UnitBlockAndSaturatingBlock) {
  // t = 1: block amax 6 -> 6 / (6 * 1) = 1.0 = ue4m3 0x38 (exp 7, mant 0),
  // d * t = 1, elements unchanged.
  MxTensor t = QuantizeBlock(MxFormat::kNvfp4, {6.0f, -0.5f}, ScaleMode::kEven,
                             1.0f);
  EXPECT_EQ(t.scales[0], 0x38);
  EXPECT_EQ(t.elements[0], 0x7);
  EXPECT_EQ(t.elements[1], 0x9);
  // Every element 10752 = 6 * 448 * 4: the block scale 1792 saturates to 448
  // (0x7E), 10752 / 448 = 24 > 6: every element saturates to +-6.
  std::vector<float> big(16, 10752.0f);
  big[3] = -10752.0f;
  t = QuantizeBlock(MxFormat::kNvfp4, big, ScaleMode::kEven, 1.0f);
  EXPECT_EQ(t.scales[0], 0x7E);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(t.elements[i], i == 3 ? 0xF : 0x7);
  absl::StatusOr<MxErrorStats> st = ComputeMxErrorStats(
      Format::kF32, F32Bytes(big), View(t));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->saturated, 16u);
}

TEST(MxGolden, Nvfp4TensorScaleFormula) {
  // amax_tensor 26.88 -> t = 26.88 / 2688 in f32; all-zero tensor -> 1.0.
  std::vector<float> x(16, 0.0f);
  x[5] = -26.88f;
  absl::StatusOr<float> t = ComputeNvfp4TensorScale(Format::kF32, F32Bytes(x));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(F32Bits(*t), F32Bits(26.88f / 2688.0f));
  std::vector<float> z(16, 0.0f);
  EXPECT_EQ(*ComputeNvfp4TensorScale(Format::kF32, F32Bytes(z)), 1.0f);
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

struct Case {
  MxFormat format;
  ScaleMode mode;
  Format from;
  ElementLayout layout;
  ScaleLayout scale_layout;
  size_t rows, cols;
};

// Random tensor with sprinkled specials: mixed magnitudes per block (so scales
// differ), subnormals, zeros, ties, and a few NaN/Inf.
std::vector<float> RandomTensor(size_t n, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-40, 40);
  std::vector<float> x(n);
  int be = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 16 == 0) be = e(rng);  // magnitudes correlated within a block
    x[i] = std::ldexp(u(rng), be - static_cast<int>(rng() % 8u));
    const uint32_t r = static_cast<uint32_t>(rng() % 1000u);
    if (r < 10) x[i] = 0.0f;
    if (r >= 10 && r < 15) x[i] = std::ldexp(u(rng), -135);  // subnormal
    if (r >= 15 && r < 25) x[i] = static_cast<float>(rng() % 13u) * 0.5f;
    if (specials && r == 998) x[i] = std::numeric_limits<float>::quiet_NaN();
    if (specials && r == 999) x[i] = -std::numeric_limits<float>::infinity();
  }
  return x;
}

std::vector<uint8_t> ToSource(const std::vector<float>& x, Format from) {
  if (from == Format::kF32) return F32Bytes(x);
  std::vector<uint8_t> b(x.size() * 2);
  EncodePolicy rn;
  rn.saturation = Saturation::kNoSat;
  for (size_t i = 0; i < x.size(); ++i) {
    const uint64_t c = scalar::Convert(Format::kF32, from, F32Bits(x[i]), rn);
    b[2 * i] = static_cast<uint8_t>(c);
    b[2 * i + 1] = static_cast<uint8_t>(c >> 8);
  }
  return b;
}

TEST(MxGolden, Nvfp4TensorScaleIgnoresNanInfEverySource) {
  // amax over the finite values only, whatever the source: the largest
  // finite magnitude here is -3.5 (NaN, -Inf and +Inf present, subnormals
  // and -0 too).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1.0f, nan, -3.5f, inf, std::ldexp(1.0f, -20),
                                -0.0f, -inf, 2.25f};
  for (Format from : {Format::kF32, Format::kBF16, Format::kF16}) {
    absl::StatusOr<float> t = ComputeNvfp4TensorScale(from, ToSource(x, from));
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(F32Bits(*t), F32Bits(3.5f / 2688.0f)) << FormatName(from);
  }
  // Only non-finite values: as an all-zero tensor.
  const std::vector<float> special = {nan, -inf, inf};
  for (Format from : {Format::kF32, Format::kBF16, Format::kF16}) {
    EXPECT_EQ(*ComputeNvfp4TensorScale(from, ToSource(special, from)), 1.0f)
        << FormatName(from);
  }
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

TEST(MxIndependent, Nvfp4ScalarReferenceEqualsDirectFormulas) {
  const testing::Grid e2m1 = testing::MakeGrid(Format::kE2M1);
  const testing::Grid ue4m3 = testing::MakeGrid(Format::kUE4M3);
  for (ScaleMode m : kModes) {
    const size_t rows = 5, cols = 64 + 9;
    std::vector<float> x = RandomTensor(rows * cols, 23, false);
    MxOptions o;
    o.scale_mode = m;
    absl::StatusOr<MxTensor> q = QuantizeMx(
        MxFormat::kNvfp4, Format::kF32, F32Bytes(x), rows, cols, o,
        Impl{Impl::kScalar});
    ASSERT_TRUE(q.ok()) << q.status();
    double amax_t = 0;
    for (float v : x) amax_t = std::max(amax_t, std::fabs(double{v}));
    const float t = static_cast<float>(amax_t) / 2688.0f;
    ASSERT_EQ(F32Bits(q->tensor_scale), F32Bits(t));
    EncodePolicy sp;
    sp.rounding = m == ScaleMode::kFloor  ? Rounding::kRZ
                  : m == ScaleMode::kEven ? Rounding::kRN
                                          : Rounding::kRP;
    const size_t bpr = q->shape.blocks_per_row();
    for (size_t r = 0; r < rows; ++r) {
      for (size_t k = 0; k < bpr; ++k) {
        float amax = 0;
        for (size_t c = k * 16; c < std::min(cols, k * 16 + 16); ++c) {
          amax = std::max(amax, std::fabs(x[r * cols + c]));
        }
        const float qv = amax / (6.0f * t);
        const uint64_t sc =
            testing::OracleEncode(ue4m3, Format::kF32, double{qv}, sp);
        ASSERT_EQ(q->scales[r * bpr + k], sc) << "r" << r << " k" << k;
        const float p =
            static_cast<float>(scalar::ToDouble(Format::kUE4M3, sc)) * t;
        for (size_t c = k * 16; c < k * 16 + 16; ++c) {
          uint64_t want = 0;
          if (c < cols) {
            const float y = p == 0 ? x[r * cols + c] * 0.0f : x[r * cols + c] / p;
            want = testing::OracleEncode(e2m1, Format::kF32, double{y},
                                         EncodePolicy{});
          }
          ASSERT_EQ(q->elements[r * q->shape.cols_padded() + c], want)
              << "r" << r << " c" << c;
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

// ---------------------------------------------------------------------------
// Every SIMD target equals the scalar reference.

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (MxFormat f : kFormats) {
    const int bits = Traits(MxElementFormat(f)).bits;
    std::vector<ElementLayout> layouts = {ElementLayout::kCodes};
    if (bits == 4) {
      layouts.push_back(ElementLayout::kDense4);
      layouts.push_back(ElementLayout::kB4x16P64);
    }
    if (bits == 6) {
      layouts.push_back(ElementLayout::kDense6);
      layouts.push_back(ElementLayout::kB6x16P32);
    }
    for (ScaleMode m : kModes) {
      for (Format from : {Format::kF32, Format::kBF16, Format::kF16}) {
        for (ElementLayout l : layouts) {
          for (ScaleLayout sl : {ScaleLayout::kLinear, ScaleLayout::kTcgen05}) {
            // Aligned (flat run across rows), ragged, and one long row.
            cases.push_back({f, m, from, l, sl, 130, 64});
            cases.push_back({f, m, from, l, sl, 9, 77});
            cases.push_back({f, m, from, l, sl, 2, 2080});
          }
        }
      }
    }
  }
  return cases;
}

TEST(MxSimd, EveryTargetEqualsScalar) {
  const std::vector<int64_t> targets = AvailableTargets();
  ASSERT_FALSE(targets.empty());
  uint32_t seed = 1;
  for (const Case& c : AllCases()) {
    const std::vector<float> x = RandomTensor(c.rows * c.cols, seed++, true);
    const std::vector<uint8_t> in = ToSource(x, c.from);
    MxOptions o;
    o.scale_mode = c.mode;
    o.layout = c.layout;
    o.scale_layout = c.scale_layout;
    const std::string what = absl::StrFormat(
        "%s %s from %s %s %s %dx%d", MxFormatName(c.format),
        ScaleModeName(c.mode), FormatName(c.from), ElementLayoutName(c.layout),
        ScaleLayoutName(c.scale_layout), c.rows, c.cols);
    absl::StatusOr<MxTensor> ref =
        QuantizeMx(c.format, c.from, in, c.rows, c.cols, o, Impl{Impl::kScalar});
    ASSERT_TRUE(ref.ok()) << what << ": " << ref.status();
    for (int64_t target : targets) {
      absl::StatusOr<MxTensor> got =
          QuantizeMx(c.format, c.from, in, c.rows, c.cols, o, Impl{target});
      ASSERT_TRUE(got.ok()) << what;
      ASSERT_EQ(F32Bits(got->tensor_scale), F32Bits(ref->tensor_scale));
      for (size_t i = 0; i < ref->scales.size(); ++i) {
        ASSERT_EQ(got->scales[i], ref->scales[i])
            << what << " target " << ImplName(Impl{target}) << " scale byte "
            << i;
      }
      for (size_t i = 0; i < ref->elements.size(); ++i) {
        ASSERT_EQ(got->elements[i], ref->elements[i])
            << what << " target " << ImplName(Impl{target}) << " element byte "
            << i;
      }
    }
  }
}

// n values u * 2^(binade_of(i) - k), u uniform in (-1, 1), k in 0..3.
template <class BinadeOf>
std::vector<float> RandomAtBinades(size_t n, uint32_t seed, const BinadeOf& binade_of) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::ldexp(u(rng), binade_of(i) - static_cast<int>(rng() % 4u));
  }
  return x;
}

// The GPU layout of a format's elements (packed where one exists).
ElementLayout PaddedLayoutOf(MxFormat f) {
  const int bits = Traits(MxElementFormat(f)).bits;
  return bits == 4 ? ElementLayout::kB4x16P64
                   : (bits == 6 ? ElementLayout::kB6x16P32 : ElementLayout::kCodes);
}

// The element layouts to test for a format: codes, and the padded GPU
// layout where one exists.
std::vector<ElementLayout> LayoutsOf(MxFormat f) {
  const ElementLayout padded = PaddedLayoutOf(f);
  if (padded == ElementLayout::kCodes) return {ElementLayout::kCodes};
  return {ElementLayout::kCodes, padded};
}

// Every format x mode x source (f32, bf16) x element layout (codes and the
// padded one) x scale layout: every target equals the scalar reference.
void ExpectEveryTargetEqualsScalar(const std::vector<float>& x, size_t rows, size_t cols,
                                   const char* what) {
  for (Format from : {Format::kF32, Format::kBF16}) {
    const std::vector<uint8_t> in = ToSource(x, from);
    for (MxFormat f : kFormats) {
      for (ScaleMode m : kModes) {
        for (ElementLayout layout : LayoutsOf(f)) {
          for (ScaleLayout sl : {ScaleLayout::kLinear, ScaleLayout::kTcgen05}) {
            MxOptions o;
            o.scale_mode = m;
            o.layout = layout;
            o.scale_layout = sl;
            const std::string name = absl::StrFormat(
                "%s: %s %s from %s %s %s %dx%d", what, MxFormatName(f), ScaleModeName(m),
                FormatName(from), ElementLayoutName(layout), ScaleLayoutName(sl), rows, cols);
            absl::StatusOr<MxTensor> ref =
                QuantizeMx(f, from, in, rows, cols, o, Impl{Impl::kScalar});
            ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
            for (int64_t target : AvailableTargets()) {
              absl::StatusOr<MxTensor> got = QuantizeMx(f, from, in, rows, cols, o, Impl{target});
              ASSERT_TRUE(got.ok()) << name;
              ASSERT_EQ(got->scales, ref->scales) << name << " " << ImplName(Impl{target});
              ASSERT_EQ(got->elements, ref->elements) << name << " " << ImplName(Impl{target});
            }
          }
        }
      }
    }
  }
}

TEST(MxSimd, TinyBlocksEveryTarget) {
  // Whole blocks of f32 subnormals and tiny normals: their scales multiply
  // the elements up (by as much as 2^127), so the SIMD encoders must see the
  // exact subnormal inputs (the F16C path runs with FTZ but without DAZ) and
  // round the scaled values with the right sticky bits. Random mantissas at
  // every binade from 2^-149 to 2^-110; each target equals the reference.
  constexpr size_t kRows = 40, kCols = 64;
  const std::vector<float> x = RandomAtBinades(kRows * kCols, 4242, [](size_t i) {
    return -110 - static_cast<int>((i / 16) % 40);  // per 16 elements
  });
  ExpectEveryTargetEqualsScalar(x, kRows, kCols, "tiny blocks");
}

TEST(MxSimd, HugeBlocksEveryTarget) {
  // Blocks at 2^100 .. 2^127: their multipliers 2^-s (with the F16C path's
  // folded 2^(bias - 15)) are f32 subnormals, built from bits and applied
  // without DAZ; bf16 sources into e2m1 / e3m2 / e5m2 also skip the sticky
  // OR. Each target equals the reference.
  constexpr size_t kRows = 28, kCols = 64;
  const std::vector<float> x = RandomAtBinades(kRows * kCols, 9191, [](size_t i) {
    return 128 - static_cast<int>((i / 16) % 28);  // per 16 elements
  });
  ExpectEveryTargetEqualsScalar(x, kRows, kCols, "huge blocks");
}

TEST(MxSimd, NanBlocksRowPaddingAndScaleRunsEveryTarget) {
  // Deterministic NaN blocks whose rows end in padding: with 100 (MX) and
  // 120 (NVFP4) columns a row is 128 padded elements, so on 512-bit targets
  // the partial block with the NaN and its padding lanes lies in a whole
  // 64-element step (not the tail). Padding must stay code 0 in every
  // layout. 9 blocks per row over more than one chunk starts chunks at a
  // block that is not a multiple of 4, followed by whole tcgen05 groups.
  for (size_t cols : {size_t{100}, size_t{120}, size_t{9 * 32}, size_t{9 * 16}}) {
    const size_t rows = cols > 120 ? 40 : 9;
    std::vector<float> x = RandomTensor(rows * cols, static_cast<uint32_t>(cols), false);
    for (size_t r = 1; r < rows; r += 2) {
      x[r * cols + cols - 3] = std::numeric_limits<float>::quiet_NaN();
    }
    x[5] = -std::numeric_limits<float>::infinity();
    ExpectEveryTargetEqualsScalar(x, rows, cols, "NaN blocks");
  }
}

TEST(MxSimd, Bf16EveryMagnitudeBelowAnAnchorEveryTarget) {
  // bf16 into MXFP8 takes a direct integer path on x86 (u16 lanes, no
  // widening) for vectors whose scaled values are all normals of the element
  // format or +-0, and the general path otherwise (MXFP4, whose bf16 path
  // is the general one, runs the same tensors). Each anchor A (the amax)
  // is followed by every bf16 magnitude from 0 to A in ascending order, 31
  // per block after A, with alternating signs: the upper blocks take the
  // direct path (rounding ties included: every mantissa occurs), the lower
  // ones hold scaled subnormals and bf16 subnormals (general path), and the
  // top binade saturates in floor mode. The first block also holds +-Inf
  // (saturate), the second +-Inf and +-A only: no small value sends it to
  // the general path, only its Inf does (read as 2^128, Inf would not
  // saturate under ceil / rceil near 2^128), and the last block +-0 only.
  // Anchors put the scale code at its extremes (0 and 254) and in between.
  constexpr size_t kCols = 64;
  for (const uint16_t anchor : {uint16_t{0x7F7F}, uint16_t{0x7E80}, uint16_t{0x5F00},
                                uint16_t{0x4380}, uint16_t{0x3FC0}, uint16_t{0x3F80},
                                uint16_t{0x2000}, uint16_t{0x0400}, uint16_t{0x0100},
                                uint16_t{0x0080}}) {
    std::vector<uint16_t> bits;
    size_t m = 0;
    for (size_t b = 0; m <= anchor || bits.size() % kCols != 0; ++b) {
      bits.push_back(anchor);
      for (size_t j = 1; j < 32; ++j) {
        uint16_t v = 0;
        if (b <= 1 && j <= 2) {
          v = j == 1 ? 0x7F80 : 0xFF80;  // +Inf, -Inf
        } else if (b == 1) {
          v = static_cast<uint16_t>(anchor | ((j & 1) << 15));  // no small values
        } else if (m <= anchor) {
          v = static_cast<uint16_t>(m | ((m & 1) << 15));
          ++m;
        } else {
          v = static_cast<uint16_t>((j & 1) << 15);  // +0 / -0
        }
        bits.push_back(v);
      }
    }
    std::vector<uint8_t> in(bits.size() * 2);
    std::memcpy(in.data(), bits.data(), in.size());
    const size_t rows = bits.size() / kCols;
    for (MxFormat f : {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2, MxFormat::kMxfp4}) {
      for (ScaleMode mode : kModes) {
        MxOptions o;
        o.scale_mode = mode;
        const std::string name = absl::StrFormat("anchor 0x%04x %s %s", anchor, MxFormatName(f),
                                                 ScaleModeName(mode));
        absl::StatusOr<MxTensor> ref =
            QuantizeMx(f, Format::kBF16, in, rows, kCols, o, Impl{Impl::kScalar});
        ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
        for (int64_t target : AvailableTargets()) {
          absl::StatusOr<MxTensor> got = QuantizeMx(f, Format::kBF16, in, rows, kCols, o,
                                                    Impl{target});
          ASSERT_TRUE(got.ok()) << name;
          ASSERT_EQ(got->scales, ref->scales) << name << " " << ImplName(Impl{target});
          for (size_t i = 0; i < ref->elements.size(); ++i) {
            ASSERT_EQ(got->elements[i], ref->elements[i])
                << name << " " << ImplName(Impl{target}) << " element " << i << " bf16 0x"
                << std::hex << bits[i];
          }
        }
      }
    }
  }
}

TEST(MxSimd, Bf16EveryScaleCodeEveryTarget) {
  // bf16 into MXFP8 e4m3 on CPUs with AVX512-FP16 folds the block scale 2^X
  // into an integer rebias and saturates the code bytes
  // (Fp16EncodeHalf::Encode64MxAbs), for chunks (128 consecutive blocks)
  // without NaN / Inf whose blocks have amax 0 or a scale code of at least
  // 15; other chunks take the other paths.
  // Chunk k holds blocks whose amax has bf16 exponent field E in [2k, 2k +
  // 7] (so every scale code a finite amax gives, in every mode, meets both
  // sides of the code-15 boundary within one chunk), every 16th block all
  // +-0 (amax 0). A block holds its amax, elements at random exponents from
  // E down to E - 12 (around the code-0 boundary of 2^-X and the subnormal
  // codes), some far below and one bf16 subnormal, signs random. 3 blocks
  // per row; the last chunk has 3 blocks (the odd last step).
  constexpr size_t kCols = 96;
  std::mt19937 rng(20261122);
  std::vector<uint16_t> bits;
  const auto block = [&](uint32_t e) {
    const uint16_t amax = static_cast<uint16_t>(e << 7 | (rng() & 0x7F));
    bits.push_back(static_cast<uint16_t>(amax | (rng() & 1) << 15));
    for (size_t j = 1; j < 32; ++j) {
      const uint32_t r = static_cast<uint32_t>(rng());
      int64_t ej = static_cast<int64_t>(e) - static_cast<int64_t>(r % 13);
      if (j % 8 == 7) ej = static_cast<int64_t>(e) - 13 - static_cast<int64_t>((r >> 8) % 40);
      if (j == 31) ej = 0;  // a bf16 subnormal (or 0)
      const uint16_t mag =
          ej < 0 ? 0 : std::min<uint16_t>(static_cast<uint16_t>(ej << 7 | (r >> 16 & 0x7F)), amax);
      bits.push_back(static_cast<uint16_t>(mag | (r >> 24 & 1) << 15));
    }
  };
  for (uint32_t k = 0; k < 126; ++k) {
    for (uint32_t j = 0; j < 128; ++j) {
      if (j % 16 == 5) {
        for (size_t i = 0; i < 32; ++i) bits.push_back(static_cast<uint16_t>((rng() & 1) << 15));
      } else {
        block(std::min<uint32_t>(2 * k + j % 8, 254));
      }
    }
  }
  for (uint32_t e : {100u, 101u, 102u}) block(e);
  ASSERT_EQ(bits.size() % kCols, 0u);
  std::vector<uint8_t> in(bits.size() * 2);
  std::memcpy(in.data(), bits.data(), in.size());
  const size_t rows = bits.size() / kCols;
  // (MXFP4 / MXFP6 from bf16 take RangeEncodeF32's scale fold on AVX3_DL,
  // see F32EveryScaleCodeEveryTarget.)
  for (MxFormat f : {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2, MxFormat::kMxfp6E2m3,
                     MxFormat::kMxfp6E3m2, MxFormat::kMxfp4}) {
    for (ScaleMode mode : kModes) {
      MxOptions o;
      o.scale_mode = mode;
      const std::string name = absl::StrFormat("%s %s", MxFormatName(f), ScaleModeName(mode));
      absl::StatusOr<MxTensor> ref =
          QuantizeMx(f, Format::kBF16, in, rows, kCols, o, Impl{Impl::kScalar});
      ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
      for (int64_t target : AvailableTargets()) {
        absl::StatusOr<MxTensor> got =
            QuantizeMx(f, Format::kBF16, in, rows, kCols, o, Impl{target});
        ASSERT_TRUE(got.ok()) << name;
        ASSERT_EQ(got->scales, ref->scales) << name << " " << ImplName(Impl{target});
        for (size_t i = 0; i < ref->elements.size(); ++i) {
          ASSERT_EQ(got->elements[i], ref->elements[i])
              << name << " " << ImplName(Impl{target}) << " element " << i << " bf16 0x"
              << std::hex << bits[i] << " scale 0x" << int{ref->scales[i / 32]};
        }
      }
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
// MXCSR.FTZ and .DAZ set for the guard's lifetime (a -ffast-math caller).
struct FtzDazGuard {
  unsigned saved = _mm_getcsr();
  FtzDazGuard() { _mm_setcsr(saved | 0x8040u); }
  ~FtzDazGuard() { _mm_setcsr(saved); }
};
#endif

TEST(MxSimd, F32EveryScaleCodeEveryTarget) {
  // f32 into MX on AVX3_DL folds the block scale 2^X into the range
  // encoder's constants (RangeEncodeF32::Consts, no multiply) for chunks
  // (128 consecutive blocks) whose every block has amax 0, a NaN, or X in
  // [kFoldMinX, kFoldMaxX] (-124 .. -109 up to 87 .. 101 by format);
  // other chunks multiply. Chunk k holds blocks whose amax has exponent
  // field E in [2k, 2k + 7] (both fold bounds, and the code-0 and code-254
  // scales, meet a neighbour inside one chunk), every 16th block all +-0,
  // one block per chunk with an Inf element and every 9th chunk a NaN
  // block. Elements: the amax, exponents E down to E - 12 (the element's
  // normals and subnormals) and some far below (rounding to +-0), every
  // 4th with only 5 mantissa bits (ties of every element format), five f32
  // subnormals per block, signs random. One block per row (the last chunk
  // has 3 blocks); codes and, for fp4 / fp6, the padded layouts; every
  // target also under a caller's FTZ + DAZ (the fold runs in the caller's
  // MXCSR: below kFoldMinX, DAZ would zero subnormals that round to codes).
  constexpr size_t kCols = 32;
  std::mt19937 rng(20261122);
  std::vector<uint32_t> bits;
  const auto value = [&](int64_t e, uint32_t r) -> uint32_t {
    uint32_t mant = r & 0x7FFFFF;
    if (r % 4 == 0) mant &= 0x7C0000;  // 5 mantissa bits: exact ties
    if (e <= 0) return (r >> 24 & 1) ? (r & 0x7FFFFF) : 0;  // f32 subnormal or 0
    return static_cast<uint32_t>(e) << 23 | mant;
  };
  const auto block = [&](uint32_t e, bool inf, bool nan) {
    const uint32_t amax = value(e, static_cast<uint32_t>(rng()) | 1);
    bits.push_back(amax | static_cast<uint32_t>(rng() & 1) << 31);
    for (size_t j = 1; j < 32; ++j) {
      const uint32_t r = static_cast<uint32_t>(rng());
      int64_t ej = static_cast<int64_t>(e) - static_cast<int64_t>(r % 13);
      if (j % 8 == 7) ej = static_cast<int64_t>(e) - 13 - static_cast<int64_t>((r >> 8) % 40);
      if (j == 31 || j % 8 == 3) ej = 0;
      uint32_t mag = std::min(value(ej, static_cast<uint32_t>(rng())), amax);
      if (inf && j == 9) mag = 0x7F800000u;
      if (nan && j == 17) mag = 0x7FC00001u;
      bits.push_back(mag | (r >> 31) << 31);
    }
  };
  for (uint32_t k = 0; k < 127; ++k) {
    for (uint32_t j = 0; j < 128; ++j) {
      if (j % 16 == 5) {
        for (size_t i = 0; i < 32; ++i) bits.push_back(static_cast<uint32_t>(rng() & 1) << 31);
      } else {
        block(std::min<uint32_t>(2 * k + j % 8, 254), j == 100, k % 9 == 4 && j == 60);
      }
    }
  }
  for (uint32_t e : {100u, 101u, 102u}) block(e, false, false);
  std::vector<uint8_t> in(bits.size() * 4);
  std::memcpy(in.data(), bits.data(), in.size());
  const size_t rows = bits.size() / kCols;
  for (MxFormat f : kFormats) {
    if (f == MxFormat::kNvfp4) continue;  // MX only
    for (ElementLayout layout : LayoutsOf(f)) {
      for (ScaleMode mode : kModes) {
        MxOptions o;
        o.scale_mode = mode;
        o.layout = layout;
        const std::string name = absl::StrFormat("%s %s layout %d", MxFormatName(f),
                                                 ScaleModeName(mode), static_cast<int>(layout));
        absl::StatusOr<MxTensor> ref =
            QuantizeMx(f, Format::kF32, in, rows, kCols, o, Impl{Impl::kScalar});
        ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
        const size_t bytes_per_block = ref->elements.size() / (ref->scales.size());
        for (int64_t target : AvailableTargets()) {
          // The caller's MXCSR as is, then (x86) with FTZ and DAZ set.
          for (bool ftz_daz : {false, true}) {
            absl::StatusOr<MxTensor> got;
#if defined(__x86_64__) || defined(__i386__)
            if (ftz_daz) {
              const FtzDazGuard guard;
              got = QuantizeMx(f, Format::kF32, in, rows, kCols, o, Impl{target});
            } else  // NOLINT(readability/braces)
#endif
            {
              if (ftz_daz) continue;
              got = QuantizeMx(f, Format::kF32, in, rows, kCols, o, Impl{target});
            }
            ASSERT_TRUE(got.ok()) << name;
            ASSERT_EQ(got->scales, ref->scales) << name << " " << ImplName(Impl{target});
            for (size_t i = 0; i < ref->elements.size(); ++i) {
              const size_t b = i / bytes_per_block;
              ASSERT_EQ(got->elements[i], ref->elements[i])
                  << name << " " << ImplName(Impl{target}) << (ftz_daz ? " FTZ+DAZ" : "")
                  << " byte " << i << " of block " << b << " (scale 0x" << std::hex
                  << int{ref->scales[b]} << ", amax bits 0x" << bits[b * 32] << ")";
            }
          }
        }
      }
    }
  }
}

TEST(MxSimd, F32TopBinadeTiesEveryModeEveryTarget) {
  // Elements in their block's top binade: with the scale folded and no Inf
  // or NaN in the chunk, the AVX3_DL range encoder rounds unclamped and
  // clamps the codes afterwards (RangeEncodeF32's kClamp = false), so the
  // values between max and 2^(emax + 1) (floor mode) and every tie of the
  // code grid there must come out as the reference's saturate-then-round.
  // Per amax exponent field E (fold range and beyond; the fold applies per
  // 128-block chunk, so each E fills one chunk): blocks whose amax has an
  // all-ones mantissa and whose other elements are every grid point and tie
  // of binade E for the element's mantissa width (t * 2^(23 - man - 1)
  // mantissas), each exactly and one f32 ulp either side, signs varying.
  constexpr size_t kCols = 64;
  std::vector<uint32_t> bits;
  for (uint32_t e = 1; e < 255; e += 9) {
    std::vector<uint32_t> vals;
    for (uint32_t t = 0; t < 16; ++t) {
      for (int d : {-1, 0, 1}) {
        const int64_t m = std::clamp<int64_t>((int64_t{t} << 19) + d, 0, 0x7FFFFF);
        vals.push_back(e << 23 | static_cast<uint32_t>(m));
      }
    }
    for (uint32_t t = 0; t < 8; ++t) vals.push_back(e << 23 | (t << 20 | 0x7FFFF));
    size_t v = 0;
    for (size_t blk = 0; blk < 128; ++blk) {
      bits.push_back(e << 23 | 0x7FFFFFu | static_cast<uint32_t>(blk % 2) << 31);
      for (size_t j = 1; j < 32; ++j, ++v) {
        bits.push_back(vals[v % vals.size()] | static_cast<uint32_t>((v + v / 7 + blk) % 2) << 31);
      }
    }
  }
  while (bits.size() % kCols != 0) bits.push_back(0);
  std::vector<uint8_t> in(bits.size() * 4);
  std::memcpy(in.data(), bits.data(), in.size());
  const size_t rows = bits.size() / kCols;
  for (MxFormat f : kFormats) {
    if (f == MxFormat::kNvfp4) continue;
    for (ElementLayout layout : LayoutsOf(f)) {
      for (ScaleMode mode : kModes) {
        MxOptions o;
        o.scale_mode = mode;
        o.layout = layout;
        absl::StatusOr<MxTensor> ref =
            QuantizeMx(f, Format::kF32, in, rows, kCols, o, Impl{Impl::kScalar});
        ASSERT_TRUE(ref.ok()) << ref.status();
        for (int64_t target : AvailableTargets()) {
          absl::StatusOr<MxTensor> got = QuantizeMx(f, Format::kF32, in, rows, kCols, o,
                                                    Impl{target});
          ASSERT_TRUE(got.ok());
          ASSERT_EQ(got->scales, ref->scales) << MxFormatName(f) << " " << ScaleModeName(mode);
          ASSERT_EQ(got->elements, ref->elements)
              << MxFormatName(f) << " " << ScaleModeName(mode) << " layout "
              << static_cast<int>(layout) << " " << ImplName(Impl{target});
        }
      }
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
TEST(MxSimd, CallerFtzDazDoesNotChangeMxResults) {
  // A caller running with MXCSR.FTZ and .DAZ set (-ffast-math libraries,
  // torch.set_flush_denormal): the MX kernels clear DAZ around the element
  // pass, so subnormal inputs that the scale multiplies up still encode
  // exactly, on every target. (NVFP4 computes its scales in the caller's
  // environment and is not covered.)
  constexpr size_t kRows = 24, kCols = 64;
  const std::vector<float> x = RandomAtBinades(kRows * kCols, 777, [](size_t i) {
    return (i / 32) % 2 == 0 ? -128 - static_cast<int>((i / 64) % 20) : -3;
  });
  for (Format from : {Format::kF32, Format::kBF16}) {
    const std::vector<uint8_t> in = ToSource(x, from);
    for (MxFormat f : kFormats) {
      if (f == MxFormat::kNvfp4) continue;
      MxOptions o;
      absl::StatusOr<MxTensor> ref = QuantizeMx(f, from, in, kRows, kCols, o, Impl{Impl::kScalar});
      ASSERT_TRUE(ref.ok()) << ref.status();
      for (int64_t target : AvailableTargets()) {
        absl::StatusOr<MxTensor> got;
        {
          const FtzDazGuard ftz_daz;
          got = QuantizeMx(f, from, in, kRows, kCols, o, Impl{target});
        }
        ASSERT_TRUE(got.ok());
        ASSERT_EQ(got->scales, ref->scales) << MxFormatName(f) << " " << ImplName(Impl{target});
        ASSERT_EQ(got->elements, ref->elements)
            << MxFormatName(f) << " from " << FormatName(from) << " " << ImplName(Impl{target});
      }
    }
  }
}
#endif

TEST(MxSimd, RowRangesComposeToTheWholeTensor) {
  // Quantizing [0,128) and [128,300) separately equals one call (tcgen05 scale
  // tiles span both ranges' rows).
  const size_t rows = 300, cols = 96;
  const std::vector<float> x = RandomTensor(rows * cols, 99, true);
  const std::vector<uint8_t> in = F32Bytes(x);
  MxOptions o;
  o.layout = ElementLayout::kB4x16P64;
  o.scale_layout = ScaleLayout::kTcgen05;
  absl::StatusOr<MxTensor> whole =
      QuantizeMx(MxFormat::kMxfp4, Format::kF32, in, rows, cols, o);
  ASSERT_TRUE(whole.ok());
  std::vector<uint8_t> e(whole->elements.size()), s(whole->scales.size());
  for (auto [b, end] : {std::pair<size_t, size_t>{128, 300}, {0, 128}}) {
    ASSERT_TRUE(QuantizeMxRows(MxFormat::kMxfp4, Format::kF32,
                               absl::MakeConstSpan(in).subspan(b * cols * 4,
                                                               (end - b) * cols * 4),
                               rows, cols, b, end, o, absl::MakeSpan(e),
                               absl::MakeSpan(s))
                    .ok());
  }
  EXPECT_EQ(e, whole->elements);
  EXPECT_EQ(s, whole->scales);
}

// ---------------------------------------------------------------------------
// Scale layouts.

// The tcgen05 tile layout derived independently, the way torch-style
// "to_blocked" code builds it: pad [rows][blocks] to [R][K] (R % 128 == 0,
// K % 4 == 0), view as [R/128][128][K/4][4], permute to [R/128][K/4][128][4],
// view each tile's 128 rows as [4][32] and transpose to [32][4] (row
// r = 32*i + j goes to position j*4 + i), flatten.
std::vector<size_t> BlockedOffsets(size_t rows, size_t blocks) {
  const size_t R = (rows + 127) / 128 * 128, K = (blocks + 3) / 4 * 4;
  std::vector<size_t> off(rows * blocks);
  size_t pos = 0;
  for (size_t rt = 0; rt < R / 128; ++rt) {
    for (size_t kt = 0; kt < K / 4; ++kt) {
      for (size_t j = 0; j < 32; ++j) {      // position inside the [32] axis
        for (size_t i = 0; i < 4; ++i) {     // the [4] axis after transpose
          for (size_t kk = 0; kk < 4; ++kk, ++pos) {
            const size_t r = rt * 128 + i * 32 + j, k = kt * 4 + kk;
            if (r < rows && k < blocks) off[r * blocks + k] = pos;
          }
        }
      }
    }
  }
  return off;
}

TEST(MxScaleLayout, TileOffsetsMatchIndependentDerivation) {
  for (auto [rows, cols] : {std::pair<size_t, size_t>{128, 128}, {256, 512},
                            {130, 96}, {1, 32}, {384, 1056}}) {
    MxShape s{MxFormat::kMxfp8E4m3, ElementLayout::kCodes,
              ScaleLayout::kTcgen05, rows, cols};
    const std::vector<size_t> want = BlockedOffsets(rows, s.blocks_per_row());
    std::vector<bool> used(s.scale_bytes(), false);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t k = 0; k < s.blocks_per_row(); ++k) {
        const size_t o = s.ScaleOffset(r, k);
        ASSERT_EQ(o, want[r * s.blocks_per_row() + k]) << r << "," << k;
        ASSERT_LT(o, s.scale_bytes());
        ASSERT_FALSE(used[o]);
        used[o] = true;
        // Inside the tile: (r % 32) * 16 + (r / 32 % 4) * 4 + k % 4.
        ASSERT_EQ(o % 512, (r % 32) * 16 + (r % 128) / 32 * 4 + k % 4);
      }
    }
  }
}

TEST(MxScaleLayout, RelayoutBothDirectionsAndQuantizerAgree) {
  const size_t rows = 200, cols = 33 * 32 + 7;
  const std::vector<float> x = RandomTensor(rows * cols, 5, false);
  MxOptions lin, til;
  til.scale_layout = ScaleLayout::kTcgen05;
  absl::StatusOr<MxTensor> a =
      QuantizeMx(MxFormat::kMxfp8E5m2, Format::kF32, F32Bytes(x), rows, cols, lin);
  absl::StatusOr<MxTensor> b =
      QuantizeMx(MxFormat::kMxfp8E5m2, Format::kF32, F32Bytes(x), rows, cols, til);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<uint8_t> to_tiled(b->scales.size(), 0xAA);
  ASSERT_TRUE(RelayoutScales(a->shape, a->scales, ScaleLayout::kTcgen05,
                             absl::MakeSpan(to_tiled))
                  .ok());
  EXPECT_EQ(to_tiled, b->scales);  // padding 0x00 in both
  std::vector<uint8_t> back(a->scales.size());
  ASSERT_TRUE(RelayoutScales(b->shape, b->scales, ScaleLayout::kLinear,
                             absl::MakeSpan(back))
                  .ok());
  EXPECT_EQ(back, a->scales);
  EXPECT_EQ(a->elements, b->elements);
  EXPECT_FALSE(RelayoutScales(a->shape, a->scales, ScaleLayout::kTcgen05,
                              absl::MakeSpan(back))
                   .ok());
}

// ---------------------------------------------------------------------------
// Dequantization and statistics.

TEST(MxDequantize, EqualsExactValueRoundedOnce) {
  for (MxFormat f : kFormats) {
    MxOptions o;
    if (Traits(MxElementFormat(f)).bits == 4) o.layout = ElementLayout::kB4x16P64;
    if (Traits(MxElementFormat(f)).bits == 6) o.layout = ElementLayout::kB6x16P32;
    o.scale_layout = ScaleLayout::kTcgen05;
    const size_t rows = 3, cols = 50;
    std::vector<float> x = RandomTensor(rows * cols, 77, true);
    x[7] = 3.0e38f;  // large scale: e * 2^s may pass f32 range for e4m3
    absl::StatusOr<MxTensor> q =
        QuantizeMx(f, Format::kF32, F32Bytes(x), rows, cols, o);
    ASSERT_TRUE(q.ok());
    const Format elem = MxElementFormat(f);
    std::vector<uint8_t> codes(q->shape.cols_padded());
    for (Format to : {Format::kF64, Format::kF32, Format::kBF16, Format::kF16}) {
      const size_t ob = static_cast<size_t>(Traits(to).storage_bytes);
      std::vector<uint8_t> out(rows * cols * ob);
      ASSERT_TRUE(DequantizeMx(View(*q), to, absl::MakeSpan(out)).ok());
      for (size_t r = 0; r < rows; ++r) {
        const size_t rb = q->shape.element_row_bytes();
        const auto row = absl::MakeConstSpan(q->elements).subspan(r * rb, rb);
        if (o.layout == ElementLayout::kCodes) {
          std::memcpy(codes.data(), row.data(), rb);
        } else {
          ASSERT_TRUE(scalar::Unpack(*internal::PackedLayout(o.layout), row,
                                     absl::MakeSpan(codes))
                          .ok());
        }
        for (size_t c = 0; c < cols; ++c) {
          const uint8_t sc = q->scales[q->shape.ScaleOffset(r, c / q->shape.block())];
          const double e = scalar::ToDouble(elem, codes[c]);
          double exact = e * scalar::ToDouble(MxScaleFormat(f), sc);
          uint64_t want;
          if (f == MxFormat::kNvfp4) {
            exact *= q->tensor_scale;
            const float v32 = static_cast<float>(e * scalar::ToDouble(Format::kUE4M3, sc)) *
                              q->tensor_scale;
            EncodePolicy rn;
            rn.saturation = Saturation::kNoSat;
            want = to == Format::kF64 ? scalar::F64Bits(exact)
                   : to == Format::kF32
                       ? F32Bits(v32)
                       : scalar::Convert(Format::kF32, to, F32Bits(v32), rn);
          } else {
            EncodePolicy rn;
            rn.saturation = Saturation::kNoSat;
            want = to == Format::kF64
                       ? scalar::F64Bits(exact)
                       : scalar::Convert(Format::kF64, to, scalar::F64Bits(exact), rn);
          }
          uint64_t got = 0;
          std::memcpy(&got, out.data() + (r * cols + c) * ob, ob);
          if (std::isnan(exact)) {
            EXPECT_EQ(scalar::Classify(to, got), scalar::ValueClass::kNaN);
            if (to == Format::kF32) {
              EXPECT_EQ(got, 0x7FFFFFFFu);
            }
            continue;
          }
          ASSERT_EQ(got, want) << MxFormatName(f) << " to " << FormatName(to)
                               << " r" << r << " c" << c;
        }
      }
    }
  }
}

TEST(MxStats, HandExample) {
  // MXFP4 floor, one block: 6 exact, 7 saturates to 6 (error 1), 1.25 -> tie
  // between 1 and 1.5 -> even mantissa: 1 (error 0.25); one NaN-free block.
  std::vector<float> x = {6.0f, 7.0f, 1.25f, std::numeric_limits<float>::infinity()};
  x.resize(32, 0.0f);
  absl::StatusOr<MxTensor> q = QuantizeMx(MxFormat::kMxfp4, Format::kF32,
                                          F32Bytes(x), 1, 32, MxOptions{});
  ASSERT_TRUE(q.ok());
  absl::StatusOr<MxErrorStats> st =
      ComputeMxErrorStats(Format::kF32, F32Bytes(x), View(*q));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->elements, 32u);
  EXPECT_EQ(st->nan_inf_inputs, 1u);
  EXPECT_EQ(st->saturated, 1u);
  EXPECT_EQ(st->max_abs_error, 1.0);
  const double sum_e2 = 1.0 + 0.0625, sum_x2 = 36 + 49 + 1.5625;
  EXPECT_DOUBLE_EQ(st->rmse, std::sqrt(sum_e2 / 31));
  EXPECT_DOUBLE_EQ(st->sqnr_db, 10 * std::log10(sum_x2 / sum_e2));
}

// ---------------------------------------------------------------------------
// Errors.

TEST(MxErrors, NamesArgumentExpectedAndActual) {
  std::vector<uint8_t> in(4 * 32);
  auto msg = [](const absl::Status& s) { return std::string(s.message()); };
  EXPECT_NE(msg(ParseMxFormat("mxfp5").status()).find("mxfp4"), std::string::npos);
  EXPECT_FALSE(ParseScaleMode("round").ok());
  EXPECT_FALSE(ParseElementLayout("dense5").ok());
  EXPECT_FALSE(ParseScaleLayout("tiled").ok());
  MxOptions o;
  o.layout = ElementLayout::kDense4;
  absl::StatusOr<MxTensor> t = QuantizeMx(MxFormat::kMxfp8E4m3, Format::kF32, in, 1, 32, o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(msg(t.status()).find("layout"), std::string::npos);
  t = QuantizeMx(MxFormat::kMxfp4, Format::kF32, in, 2, 32);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(msg(t.status()).find("expected 256 bytes"), std::string::npos) << msg(t.status());
  EXPECT_NE(msg(t.status()).find("got 128"), std::string::npos);
  t = QuantizeMx(MxFormat::kMxfp4, Format::kE4M3, in, 1, 32);
  EXPECT_FALSE(t.ok());
  t = QuantizeMx(MxFormat::kMxfp4, Format::kF32, in, 0, 32);
  EXPECT_FALSE(t.ok());
  // Row ranges: NVFP4 needs a tensor scale; bad ranges are named.
  MxShape s{MxFormat::kNvfp4, ElementLayout::kCodes, ScaleLayout::kLinear, 1, 32};
  std::vector<uint8_t> e(s.element_bytes()), sc(s.scale_bytes());
  absl::Status st = QuantizeMxRows(MxFormat::kNvfp4, Format::kF32, in, 1, 32, 0,
                                   1, MxOptions{}, absl::MakeSpan(e), absl::MakeSpan(sc));
  EXPECT_NE(msg(st).find("tensor_scale"), std::string::npos);
  st = QuantizeMxRows(MxFormat::kMxfp4, Format::kF32, in, 1, 32, 1, 2,
                      MxOptions{}, absl::MakeSpan(e), absl::MakeSpan(sc));
  EXPECT_NE(msg(st).find("row range"), std::string::npos);
  // Dequantize: bad codes and ue4m3 sign bits are rejected, out untouched.
  absl::StatusOr<MxTensor> q = QuantizeMx(MxFormat::kMxfp4, Format::kF32, in, 1, 32);
  ASSERT_TRUE(q.ok());
  q->elements[3] = 0x10;
  std::vector<uint8_t> out(32 * 4, 0xEE);
  st = DequantizeMx(View(*q), Format::kF32, absl::MakeSpan(out));
  EXPECT_NE(msg(st).find("elements[3] = 0x10"), std::string::npos) << msg(st);
  EXPECT_EQ(out, std::vector<uint8_t>(32 * 4, 0xEE));
  q = QuantizeMx(MxFormat::kNvfp4, Format::kF32, in, 1, 32);
  ASSERT_TRUE(q.ok());
  q->scales[1] = 0x80;
  st = DequantizeMx(View(*q), Format::kF32, absl::MakeSpan(out));
  EXPECT_NE(msg(st).find("sign bit"), std::string::npos) << msg(st);
  q->scales[1] = 0;
  EXPECT_FALSE(DequantizeMx(View(*q), Format::kE4M3, absl::MakeSpan(out)).ok());
  EXPECT_FALSE(DequantizeMx(View(*q), Format::kF32, absl::MakeSpan(out).subspan(4)).ok());
  q->tensor_scale = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(DequantizeMx(View(*q), Format::kF32, absl::MakeSpan(out)).ok());
}

}  // namespace
}  // namespace mxpack
