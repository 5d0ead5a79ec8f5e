// NVFP4 (include/mxpack/mx.h, docs/semantics.md section 5): golden blocks,
// the tensor scale, the scalar reference against independent exact
// formulas, and every target against it for every Nvfp4Arithmetic.
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
#include "src/mx/nvfp4_tensor_amax.h"
#include "src/mx/nvfp4_thresholds.h"
#include "tests/common/oracle.h"
#include "tests/mx/mx_test_util.h"

namespace mxpack::mx_test {
namespace {

// ---------------------------------------------------------------------------
// Golden blocks, computed by hand. e2m1 codes: 0 0, 1 0.5, 2 1, 3 1.5, 4 2,
// 5 3, 6 4, 7 6; bit 3 is the sign.

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

// The tensor amax pass (src/mx/nvfp4_tensor_amax.h) on every target against
// the scalar reference and against the planted maximum: lengths 0..200
// values (every tail of every vector width, u16 lanes included), unaligned
// starts, the largest finite magnitude (the value just below Inf, either
// sign, or a random one) at every position, with +-Inf and NaN bit patterns
// around it that must not count.
TEST(MxTensorScale, AmaxPassEveryTargetEqualsScalar) {
  std::mt19937 gen(7);
  const auto rng = [&] { return static_cast<uint32_t>(gen()); };
  struct Case {
    size_t bytes;
    uint32_t inf;
  };
  for (const Case c : {Case{4, 0x7F800000u}, Case{2, 0x7F80u}, Case{2, 0x7C00u}}) {
    const uint32_t sign = c.bytes == 4 ? 0x80000000u : 0x8000u;
    const uint32_t specials[] = {c.inf, c.inf | sign, c.inf + 1, c.inf | (c.inf >> 1),
                                 (c.inf | (c.inf >> 1)) | sign, sign - 1};
    for (size_t n = 0; n <= 200; ++n) {
      for (size_t offset : {size_t{0}, size_t{1}, size_t{3}}) {
        for (size_t k = 0; k < std::max<size_t>(n, 1); k += (n > 40 ? 7 : 1)) {
          std::vector<uint8_t> buf(offset + n * c.bytes);
          uint32_t planted = 0;
          for (size_t i = 0; i < n; ++i) {
            // Random finite magnitudes below a quarter of Inf's bits.
            uint32_t v = rng() % (c.inf / 4) | (rng() & sign);
            if (rng() % 8 == 0) v = specials[rng() % std::size(specials)];
            if (i == k) {
              planted = rng() % 2 ? c.inf - 1 : c.inf / 4 + rng() % (c.inf / 2);
              v = planted | (rng() & sign);
            }
            std::memcpy(buf.data() + offset + i * c.bytes, &v, c.bytes);
          }
          const uint8_t* p = buf.data() + offset;
          const auto run = [&](Impl impl) -> uint32_t {
            return c.bytes == 4 ? internal::MaxFiniteMagnitudeBits32(p, n, impl)
                                : internal::MaxFiniteMagnitudeBits16(
                                      p, n, static_cast<uint16_t>(c.inf), impl);
          };
          const uint32_t ref = run(Impl{Impl::kScalar});
          ASSERT_EQ(ref, planted) << "scalar n=" << n << " k=" << k;
          for (int64_t target : AvailableTargets()) {
            ASSERT_EQ(run(Impl{target}), ref)
                << ImplName(Impl{target}) << " inf=0x" << std::hex << c.inf << std::dec
                << " n=" << n << " offset=" << offset << " k=" << k;
          }
        }
      }
    }
  }
}

TEST(MxIndependent, Nvfp4F32QuotientReferenceEqualsDirectFormulas) {
  const testing::Grid e2m1 = testing::MakeGrid(Format::kE2M1);
  const testing::Grid ue4m3 = testing::MakeGrid(Format::kUE4M3);
  for (ScaleMode m : kModes) {
    const size_t rows = 5, cols = 64 + 9;
    std::vector<float> x = RandomTensor(rows * cols, 23, false);
    MxOptions o;
    o.scale_mode = m;
    o.nvfp4_arithmetic = Nvfp4Arithmetic::kF32Quotient;
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

// ---------------------------------------------------------------------------
// Nvfp4Arithmetic::kExact: single rounding from the exact quotients.

constexpr Nvfp4Arithmetic kArithmetics[] = {Nvfp4Arithmetic::kExact,
                                            Nvfp4Arithmetic::kF32Quotient,
                                            Nvfp4Arithmetic::kTorchao,
                                            Nvfp4Arithmetic::kModelOpt};
// The two arithmetics of docs/semantics.md section 5's formulas (the stack
// orders clamp the scale: no zero scale).
constexpr Nvfp4Arithmetic kCoreArithmetics[] = {Nvfp4Arithmetic::kExact,
                                                Nvfp4Arithmetic::kF32Quotient};

double Ue4m3(int code) { return scalar::ToDouble(Format::kUE4M3, static_cast<uint64_t>(code)); }

// The block scale code of amax / (6 t) rounded per mode, found by comparing
// amax with exact f64 products (ue4m3 values and midpoints have at most 5
// significant bits, 6 t 26): no quotient is formed.
uint8_t ExactScaleOracle(ScaleMode m, float amax, float t) {
  const double a = amax, st = 6.0 * static_cast<double>(t);
  int code = 0;
  switch (m) {
    case ScaleMode::kFloor:  // rz: the largest value <= the quotient
      for (int k = 1; k <= 0x7E; ++k) {
        if (Ue4m3(k) * st <= a) code = k;
      }
      break;
    case ScaleMode::kCeil:  // rp: the smallest value >= it, satfinite
    case ScaleMode::kRceil:
      code = 0x7E;
      for (int k = 0x7E; k >= 0; --k) {
        if (Ue4m3(k) * st >= a) code = k;
      }
      break;
    case ScaleMode::kEven:  // rn: past each midpoint; a tie goes to the even code
      for (int k = 0; k < 0x7E; ++k) {
        const double mid = (Ue4m3(k) + Ue4m3(k + 1)) / 2 * st;
        if (a > mid || (a == mid && k % 2 == 1)) code = k + 1;
      }
      break;
  }
  return static_cast<uint8_t>(code);
}

// The e2m1 code of x / (d t), d = decode(scale code), rounded once: |x|
// against the exact f64 products of the midpoints 0.25 .. 5 (between
// magnitude codes i and i + 1; a tie goes to the even code) and d t.
uint8_t ExactElementOracle(float x, uint8_t scale_code, float t) {
  const double p = Ue4m3(scale_code) * static_cast<double>(t);
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  if (p == 0) return std::isinf(x) ? 0x7 : sign;  // encode(x * 0); Inf * 0 = NaN -> +max
  static constexpr double kMid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  const double a = std::fabs(static_cast<double>(x));
  int c = 0;
  for (int i = 0; i < 7; ++i) {
    const double m = kMid[i] * p;
    if (a > m || (a == m && i % 2 == 1)) ++c;
  }
  return static_cast<uint8_t>(c | sign);
}

// Quantizes x ([rows][cols] f32) as NVFP4 codes + linear scales.
MxTensor QuantizeNvfp4(const std::vector<float>& x, size_t rows, size_t cols, float t,
                       ScaleMode m, Nvfp4Arithmetic arith, Impl impl,
                       ElementLayout layout = ElementLayout::kCodes) {
  MxOptions o;
  o.scale_mode = m;
  o.tensor_scale = t;
  o.nvfp4_arithmetic = arith;
  o.layout = layout;
  absl::StatusOr<MxTensor> q = QuantizeMx(MxFormat::kNvfp4, Format::kF32, F32Bytes(x), rows,
                                          cols, o, impl);
  EXPECT_TRUE(q.ok()) << q.status();
  return q.ok() ? *q : MxTensor{};
}

TEST(MxNvfp4, SingleRoundingGoldenEveryTarget) {
  // t = 0x3DBF3CF4 = 0.0933779776..., block scale d = 3 (0x44: 1.5 * 2^1),
  // set by the element f32(18 t) (18 t / 6 t = 3). x = -0.98046875: exact
  // x / (d t) = -3.49999995 -> -3 (0xD: sign | code 5); the f32 product
  // d t and f32 quotient give -3.5, a tie -> -4 (0xE, even).
  const float t = F32FromBits(0x3DBF3CF4u);
  const float a = static_cast<float>(18.0 * static_cast<double>(t));
  const std::vector<float> x = {-0.98046875f, a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(scalar::Nvfp4ElementCode(-0.98046875f, 0x44, t), 0xD);
  EXPECT_EQ(scalar::Nvfp4ElementCode(-0.98046875f, 0x44, t, Nvfp4Arithmetic::kF32Quotient),
            0xE);
  std::vector<int64_t> impls = AvailableTargets();
  impls.push_back(Impl::kScalar);
  for (int64_t target : impls) {
    for (Nvfp4Arithmetic ar : kCoreArithmetics) {
      const MxTensor q = QuantizeNvfp4(x, 1, 16, t, ScaleMode::kEven, ar, Impl{target});
      ASSERT_EQ(q.scales.size(), 1u);
      EXPECT_EQ(q.scales[0], 0x44) << ImplName(Impl{target});
      EXPECT_EQ(q.elements[0], ar == Nvfp4Arithmetic::kExact ? 0xD : 0xE)
          << ImplName(Impl{target}) << " " << Nvfp4ArithmeticName(ar);
      EXPECT_EQ(q.elements[1], 0x7) << ImplName(Impl{target});  // 6
    }
  }
}

TEST(MxNvfp4, ZeroScaleBlocksEncodeTimesZeroEveryTarget) {
  // amax 0 (only +-0 and +-Inf): scale 0x00, d t = 0, elements encode(x * 0):
  // +-0 keep their sign (0x0 / 0x8), +-Inf * 0 = NaN -> +max (0x7) unsigned.
  // A tiny amax (1e-30 / 6 rounds to scale 0) behaves the same.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {inf, -inf, -0.0f, 0.0f, -inf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<uint8_t> want = {0x7, 0x7, 0x8, 0x0, 0x7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<float> tiny = x;
  tiny[2] = -1e-30f;
  tiny[3] = 1e-30f;
  x.insert(x.end(), tiny.begin(), tiny.end());
  std::vector<int64_t> impls = AvailableTargets();
  impls.push_back(Impl::kScalar);
  for (int64_t target : impls) {
    for (Nvfp4Arithmetic ar : kCoreArithmetics) {
      const MxTensor q = QuantizeNvfp4(x, 2, 16, 1.0f, ScaleMode::kEven, ar, Impl{target});
      const std::string what = ImplName(Impl{target}) + " " + std::string(Nvfp4ArithmeticName(ar));
      ASSERT_EQ(q.scales, std::vector<uint8_t>({0, 0})) << what;
      for (size_t i = 0; i < 32; ++i) EXPECT_EQ(q.elements[i], want[i % 16]) << what << " " << i;
    }
  }
}

// Blocks of 16 f32 values: the first sets the block scale (amax = f32(6 d t)
// for the scale code c), the others lie within 2 ulps of each decision
// point m_i * d t (m_i = 0.25 .. 5), both signs; then blocks of zeros up to
// a multiple of 8 blocks.
std::vector<float> BoundaryBlocks(float t) {
  static constexpr double kMid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  std::vector<float> x;
  for (int c = 1; c <= 0x7E; ++c) {
    const double p = Ue4m3(c) * static_cast<double>(t);
    const double amax = 6.0 * p;
    if (amax > std::numeric_limits<float>::max()) continue;
    std::vector<float> v;
    for (double m : kMid) {
      const uint32_t b = F32Bits(static_cast<float>(m * p));
      for (int k = -2; k <= 2; ++k) {
        if (static_cast<int64_t>(b) + k < 0) continue;
        const float f = F32FromBits(b + static_cast<uint32_t>(k));
        v.push_back(f);
        v.push_back(-f);
      }
    }
    for (size_t i = 0; i < v.size(); i += 15) {
      x.push_back(static_cast<float>(amax));
      for (size_t j = i; j < i + 15; ++j) x.push_back(j < v.size() ? v[j] : 0.0f);
    }
  }
  while (x.size() % 128 != 0) x.push_back(0.0f);
  return x;
}

TEST(MxNvfp4, ExactAtEveryDecisionPointEveryScaleCodeEveryTarget) {
  // Every ue4m3 scale code 1..0x7E, tensor scales from subnormal to large
  // (the golden example's among them), every e2m1 decision point +-2 ulps:
  // the scalar reference equals the independent exact oracles (kExact), and
  // every target equals the reference (both arithmetics, codes and
  // b4x16_p64, every scale mode).
  const float ts[] = {F32FromBits(0x3DBF3CF4u), 1.0f, 0.001f, 1.3f * std::ldexp(1.0f, -20),
                      3.7e-30f, 1e-40f, 5e30f, F32FromBits(0x3F7FFFFFu)};
  for (float t : ts) {
    const std::vector<float> x = BoundaryBlocks(t);
    const size_t cols = 128, rows = x.size() / cols;
    for (ScaleMode m : kModes) {
      for (Nvfp4Arithmetic ar : kArithmetics) {
        const MxTensor ref = QuantizeNvfp4(x, rows, cols, t, m, ar, Impl{Impl::kScalar});
        const std::string what = absl::StrFormat("t=%a %s %s", static_cast<double>(t),
                                                 ScaleModeName(m), Nvfp4ArithmeticName(ar));
        if (ar == Nvfp4Arithmetic::kExact) {
          for (size_t b = 0; b < x.size() / 16; ++b) {
            float amax = 0;
            for (size_t j = 0; j < 16; ++j) amax = std::max(amax, std::fabs(x[16 * b + j]));
            ASSERT_EQ(ref.scales[b], ExactScaleOracle(m, amax, t))
                << what << " block " << b << " amax " << F32Bits(amax);
            for (size_t j = 0; j < 16; ++j) {
              const float v = x[16 * b + j];
              ASSERT_EQ(ref.elements[16 * b + j], ExactElementOracle(v, ref.scales[b], t))
                  << what << " block " << b << " x bits 0x" << std::hex << F32Bits(v)
                  << " scale 0x" << int{ref.scales[b]};
            }
          }
        }
        for (ElementLayout layout : {ElementLayout::kCodes, ElementLayout::kB4x16P64}) {
          const MxTensor want =
              layout == ElementLayout::kCodes
                  ? ref
                  : QuantizeNvfp4(x, rows, cols, t, m, ar, Impl{Impl::kScalar}, layout);
          for (int64_t target : AvailableTargets()) {
            const MxTensor got = QuantizeNvfp4(x, rows, cols, t, m, ar, Impl{target}, layout);
            ASSERT_EQ(got.scales, want.scales) << what << " " << ImplName(Impl{target});
            for (size_t i = 0; i < want.elements.size(); ++i) {
              ASSERT_EQ(got.elements[i], want.elements[i])
                  << what << " " << ElementLayoutName(layout) << " " << ImplName(Impl{target})
                  << " byte " << i;
            }
          }
        }
      }
    }
  }
}

TEST(MxNvfp4, ExactScaleAtEveryMidpointAndValueEveryTarget) {
  // Block amax within 3 ulps of every ue4m3 value and midpoint times 6 t
  // (exact ties included where f32 holds them), for tensor scales that make
  // the products exact or not, normal or subnormal: every mode's scale code
  // equals the oracle on the reference, and every target equals the
  // reference (scales and elements).
  const float ts[] = {1.0f, F32FromBits(0x3DBF3CF4u), 0.0625f, 1e-3f, 1e-36f, 1e-41f, 1e33f};
  for (float t : ts) {
    std::vector<float> x;
    for (int k = 0; k < 0x7E; ++k) {
      for (double v : {Ue4m3(k + 1), (Ue4m3(k) + Ue4m3(k + 1)) / 2}) {
        const double target = v * 6.0 * static_cast<double>(t);
        if (!(target < std::numeric_limits<float>::max())) continue;
        const uint32_t bits = F32Bits(static_cast<float>(target));
        for (int off = -3; off <= 3; ++off) {
          if (static_cast<int64_t>(bits) + off <= 0) continue;
          const float a = F32FromBits(bits + static_cast<uint32_t>(off));
          x.push_back(off % 2 == 0 ? a : -a);
          x.push_back(a / 3);
          for (int j = 2; j < 16; ++j) x.push_back(j % 5 == 0 ? -a / 7 : 0.0f);
        }
      }
    }
    while (x.size() % 128 != 0) x.push_back(0.0f);
    const size_t cols = 128, rows = x.size() / cols;
    for (ScaleMode m : kModes) {
      const MxTensor ref =
          QuantizeNvfp4(x, rows, cols, t, m, Nvfp4Arithmetic::kExact, Impl{Impl::kScalar});
      const std::string what = absl::StrFormat("t=%a %s", static_cast<double>(t), ScaleModeName(m));
      for (size_t b = 0; b < x.size() / 16; ++b) {
        float amax = 0;
        for (size_t j = 0; j < 16; ++j) amax = std::max(amax, std::fabs(x[16 * b + j]));
        ASSERT_EQ(ref.scales[b], ExactScaleOracle(m, amax, t))
            << what << " block " << b << " amax bits 0x" << std::hex << F32Bits(amax);
      }
      for (int64_t target : AvailableTargets()) {
        const MxTensor got =
            QuantizeNvfp4(x, rows, cols, t, m, Nvfp4Arithmetic::kExact, Impl{target});
        ASSERT_EQ(got.scales, ref.scales) << what << " " << ImplName(Impl{target});
        ASSERT_EQ(got.elements, ref.elements) << what << " " << ImplName(Impl{target});
      }
    }
  }
}

TEST(MxNvfp4, ExactReferenceEqualsOraclesOnRandomTensors) {
  // Random blocks (subnormals, ties, +-Inf; no NaN) with the computed tensor
  // scale and tensor scales far from it.
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    const size_t rows = 7, cols = 16 * 9;
    std::vector<float> x = RandomTensor(rows * cols, seed, false);
    if (seed % 2 == 0) x[5] = -std::numeric_limits<float>::infinity();
    for (ScaleMode m : kModes) {
      for (float t : {*ComputeNvfp4TensorScale(Format::kF32, F32Bytes(x)), 1e-12f, 3e7f}) {
        const MxTensor q =
            QuantizeNvfp4(x, rows, cols, t, m, Nvfp4Arithmetic::kExact, Impl{Impl::kScalar});
        for (size_t b = 0; b < x.size() / 16; ++b) {
          float amax = 0;
          for (size_t j = 0; j < 16; ++j) {
            if (std::isfinite(x[16 * b + j])) amax = std::max(amax, std::fabs(x[16 * b + j]));
          }
          ASSERT_EQ(q.scales[b], ExactScaleOracle(m, amax, t)) << "seed " << seed << " b " << b;
          for (size_t j = 0; j < 16; ++j) {
            ASSERT_EQ(q.elements[16 * b + j], ExactElementOracle(x[16 * b + j], q.scales[b], t))
                << "seed " << seed << " b " << b << " j " << j;
          }
        }
      }
    }
  }
}

TEST(MxNvfp4, EveryArithmeticEveryTargetEqualsScalar) {
  // Random tensors with NaN and Inf from every source into every element and
  // scale layout, both arithmetics, every mode.
  uint32_t seed = 100;
  for (Nvfp4Arithmetic ar : kArithmetics) {
    for (ScaleMode m : kModes) {
      for (Format from : {Format::kF32, Format::kBF16, Format::kF16}) {
        for (ElementLayout l :
             {ElementLayout::kCodes, ElementLayout::kDense4, ElementLayout::kB4x16P64}) {
          for (ScaleLayout sl : {ScaleLayout::kLinear, ScaleLayout::kTcgen05}) {
            for (size_t cols : {size_t{64}, size_t{77}, size_t{4096 + 48}}) {
              const size_t rows = cols > 1000 ? 3 : 33;
              const std::vector<float> x = RandomTensor(rows * cols, seed++, true);
              const std::vector<uint8_t> in = ToSource(x, from);
              MxOptions o;
              o.scale_mode = m;
              o.layout = l;
              o.scale_layout = sl;
              o.nvfp4_arithmetic = ar;
              const std::string what = absl::StrFormat(
                  "%s %s from %s %s %s %dx%d", Nvfp4ArithmeticName(ar), ScaleModeName(m),
                  FormatName(from), ElementLayoutName(l), ScaleLayoutName(sl), rows, cols);
              absl::StatusOr<MxTensor> ref =
                  QuantizeMx(MxFormat::kNvfp4, from, in, rows, cols, o, Impl{Impl::kScalar});
              ASSERT_TRUE(ref.ok()) << what << ": " << ref.status();
              for (int64_t target : AvailableTargets()) {
                absl::StatusOr<MxTensor> got =
                    QuantizeMx(MxFormat::kNvfp4, from, in, rows, cols, o, Impl{target});
                ASSERT_TRUE(got.ok()) << what;
                ASSERT_EQ(got->scales, ref->scales) << what << " " << ImplName(Impl{target});
                ASSERT_EQ(got->elements, ref->elements) << what << " " << ImplName(Impl{target});
              }
            }
          }
        }
      }
    }
  }
}


// Quantizes `in` ([rows][cols] of `from`) as NVFP4 kExact.
absl::StatusOr<MxTensor> QuantizeNvfp4Exact(Format from, const std::vector<uint8_t>& in,
                                            size_t rows, size_t cols, float t, ScaleMode m,
                                            ElementLayout layout, Impl impl) {
  MxOptions o;
  o.scale_mode = m;
  o.tensor_scale = t;
  o.nvfp4_arithmetic = Nvfp4Arithmetic::kExact;
  o.layout = layout;
  return QuantizeMx(MxFormat::kNvfp4, from, in, rows, cols, o, impl);
}

// bf16 blocks of 16 (one per row): an anchor (the amax, about 6 d t for
// each ue4m3 code d) and bf16 values within 3 ulps of every decision point
// m_i * d' t of the anchor's scale code d' (ties included where bf16 holds
// m_i d' t), alternating signs.
std::vector<uint16_t> Bf16BoundaryBlocks(float t) {
  static constexpr double kMid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  std::vector<uint16_t> x;
  for (int c = 1; c <= 0x7E; ++c) {
    const double amax = 6.0 * Ue4m3(c) * static_cast<double>(t);
    if (!(amax < 3e38)) continue;
    const uint16_t anchor = static_cast<uint16_t>(F32Bits(static_cast<float>(amax)) >> 16);
    if (anchor == 0) continue;
    const uint8_t code = ExactScaleOracle(ScaleMode::kEven, F32FromBits(anchor << 16), t);
    const double p = Ue4m3(code) * static_cast<double>(t);
    std::vector<uint16_t> v;
    for (double m : kMid) {
      const int b = static_cast<int>(F32Bits(static_cast<float>(m * p)) >> 16);
      for (int k = -3; k <= 3; ++k) {
        if (b + k < 0 || b + k > anchor) continue;
        v.push_back(static_cast<uint16_t>((b + k) | (v.size() % 2) << 15));
      }
    }
    for (size_t i = 0; i < v.size(); i += 15) {
      x.push_back(anchor);
      for (size_t j = i; j < i + 15; ++j) x.push_back(j < v.size() ? v[j] : uint16_t{0x8000});
    }
  }
  return x;
}

TEST(MxNvfp4, Bf16ExactAtEveryDecisionPointEveryTarget) {
  // bf16 into NVFP4 kExact compares the bf16 bits with u16 thresholds on
  // AVX3_DL (four blocks per step) in chunks without Inf or NaN elements;
  // chunks with them take the f32 path. Every scale code, decision point
  // +-3 ulps and tensor scales from subnormal to large; each tensor also
  // with blocks appended so that the last, partial step holds 0..3 blocks
  // of different scale codes, with an Inf in
  // its first block, and with a NaN in its second chunk; codes, dense4 and
  // b4x16_p64; every target equals the reference.
  const float ts[] = {1.0f, F32FromBits(0x3DBF3CF4u), 0.001f, 0.0625f, 1.3f * std::ldexp(1.0f, -20),
                      3.7e-30f, 1e-40f, 5e30f};
  for (float t : ts) {
    const std::vector<uint16_t> base = Bf16BoundaryBlocks(t);
    for (int variant = 0; variant < 6; ++variant) {
      std::vector<uint16_t> x = base;
      if (variant < 4) {
        // Blocks of other scale codes (and a zero block) until the block
        // count is `variant` mod 4: the last step's blocks differ.
        for (size_t k = 0; (x.size() / 16) % 4 != static_cast<size_t>(variant) || k < 4; ++k) {
          const size_t from = (37 * k + 11) % (base.size() / 16);
          for (size_t j = 0; j < 16; ++j) x.push_back(k == 2 ? 0 : base[16 * from + j]);
        }
      }
      if (variant == 4) x[3] = 0xFF80;                      // -Inf in the first chunk
      if (variant == 5 && x.size() > 16 * 130) x[16 * 129 + 7] = 0x7FC1;  // a NaN, second chunk
      std::vector<uint8_t> in(2 * x.size());
      std::memcpy(in.data(), x.data(), in.size());
      const size_t rows = x.size() / 16;
      for (ElementLayout l :
           {ElementLayout::kCodes, ElementLayout::kDense4, ElementLayout::kB4x16P64}) {
        const std::string what = absl::StrFormat("t=%a variant %d %s", static_cast<double>(t),
                                                 variant, ElementLayoutName(l));
        absl::StatusOr<MxTensor> ref = QuantizeNvfp4Exact(Format::kBF16, in, rows, 16, t,
                                                          ScaleMode::kEven, l, Impl{Impl::kScalar});
        ASSERT_TRUE(ref.ok()) << what;
        for (int64_t target : AvailableTargets()) {
          absl::StatusOr<MxTensor> got =
              QuantizeNvfp4Exact(Format::kBF16, in, rows, 16, t, ScaleMode::kEven, l, Impl{target});
          ASSERT_TRUE(got.ok()) << what;
          ASSERT_EQ(got->scales, ref->scales) << what << " " << ImplName(Impl{target});
          for (size_t i = 0; i < ref->elements.size(); ++i) {
            ASSERT_EQ(got->elements[i], ref->elements[i])
                << what << " " << ImplName(Impl{target}) << " byte " << i << " bf16 0x" << std::hex
                << x[l == ElementLayout::kCodes ? i : 0];
          }
        }
      }
    }
  }
}

// Every target against the reference for bf16 into NVFP4 kExact, rn, in
// the three element layouts (the codes' order and nibble packing differ).
void ExpectBf16EveryTargetEqualsScalar(const std::vector<uint16_t>& x, size_t cols, float t,
                                       const std::string& what) {
  std::vector<uint8_t> in(2 * x.size());
  std::memcpy(in.data(), x.data(), in.size());
  const size_t rows = x.size() / cols;
  for (ElementLayout l :
       {ElementLayout::kCodes, ElementLayout::kDense4, ElementLayout::kB4x16P64}) {
    absl::StatusOr<MxTensor> ref =
        QuantizeNvfp4Exact(Format::kBF16, in, rows, cols, t, ScaleMode::kEven, l,
                           Impl{Impl::kScalar});
    ASSERT_TRUE(ref.ok()) << what;
    for (int64_t target : AvailableTargets()) {
      absl::StatusOr<MxTensor> got =
          QuantizeNvfp4Exact(Format::kBF16, in, rows, cols, t, ScaleMode::kEven, l, Impl{target});
      ASSERT_TRUE(got.ok()) << what;
      const std::string where =
          absl::StrFormat("%s %s %s", what, ElementLayoutName(l), ImplName(Impl{target}));
      ASSERT_EQ(got->scales, ref->scales) << where;
      for (size_t i = 0; i < ref->elements.size(); ++i) {
        ASSERT_EQ(got->elements[i], ref->elements[i])
            << where << " byte " << i << " bf16 0x" << std::hex
            << x[l == ElementLayout::kCodes ? i : 0];
      }
    }
  }
}

TEST(MxNvfp4, ThresholdTableEqualsDirectRowsEveryCode) {
  // Nvfp4ThresholdTable::Fill derives codes from code - 8 (thresholds and
  // reciprocals doubled or halved, bf16 rows shifted by a binade) where
  // that is exact: every code's thr, thr16, recip and bf16 row equal their
  // direct computation, filled in one span or code by code, for tensor
  // scales whose thresholds reach the subnormal and the overflow ends.
  float ue4m3[128];
  for (int c = 0; c < 128; ++c) ue4m3[c] = static_cast<float>(Ue4m3(c));
  std::vector<float> ts = {1.0f, F32FromBits(0x3DBF3CF4u), 0.001f, 1e-40f, 3.7e-30f, 1e-36f,
                           5e30f, 1e34f, 7e35f, F32FromBits(0x7F7FFFFFu), 0.0f};
  for (int e = -149; e <= 127; e += 3) ts.push_back(std::ldexp(1.37f, e));
  using Table = internal::Nvfp4ThresholdTable;
  for (float t : ts) {
    for (int order = 0; order < 2; ++order) {
      for (Table::Extra extra : {Table::Extra::kRecip, Table::Extra::kBf16Rows}) {
        Table tab(t, ue4m3);
        if (order == 0) {
          tab.Fill(0, 0x7F, extra);
        } else {
          for (unsigned c = 0; c <= 0x7F; ++c) tab.Fill(c, c, extra);
        }
        for (int c = 0; c <= 0x7F; ++c) {
          const std::string what = absl::StrFormat("t=%a code 0x%02x order %d extra %d",
                                                   static_cast<double>(t), c, order,
                                                   static_cast<int>(extra));
          uint32_t want[8];
          internal::Nvfp4ElementThresholds(ue4m3[c], t, want);
          for (int i = 0; i < 8; ++i) ASSERT_EQ(tab.thr[c][i], want[i]) << what << " i " << i;
          for (int i = 0; i < 7; ++i) ASSERT_EQ(tab.thr16[c][i], want[i] >> 16) << what;
          if (extra == Table::Extra::kRecip) {
            const double p = static_cast<double>(ue4m3[c]) * static_cast<double>(t);
            const float r = c == 0 || static_cast<unsigned>(c) < tab.recip_min_code ||
                                    !(1.0 / p >= 0x1p-126)
                                ? 0.0f
                                : internal::RecipUp(p);
            ASSERT_EQ(F32Bits(tab.recip[c]), F32Bits(r)) << what;
            continue;
          }
          internal::Bf16ByteRow row;
          uint8_t ebase;
          const bool ok = internal::MakeBf16ByteRow(tab.thr16[c], &ebase, &row);
          if (!tab.Bf16RowsCover(c, c) || c == 0) continue;
          ASSERT_TRUE(ok) << what;
          const int s = tab.bf16_slot8[c];
          ASSERT_EQ(tab.bf16_ebase[c], ebase) << what;
          for (int j = 0; j < 8; ++j) {
            ASSERT_EQ(tab.bf16_base[s + j], row.base[j]) << what << " j " << j;
            ASSERT_EQ(tab.bf16_t1[s + j], row.t1[j]) << what << " j " << j;
            ASSERT_EQ(tab.bf16_t2[s + j], row.t2[j]) << what << " j " << j;
          }
        }
      }
    }
  }
}

TEST(MxNvfp4, Bf16ByteRowsEqualOracleForEveryBf16EveryScaleCode) {
  // The byte-table form of the bf16 thresholds (internal::MakeBf16ByteRow,
  // as Nvfp4ExactOps::Bf16TableCodes64 reads it) against the independent
  // oracle: every finite bf16 of either sign in rows 0..7 (E - ebase <=
  // 7; the kernel does not clamp the row), every scale code 0..0x7D,
  // tensor scales from subnormal to large. Tensor scales whose thresholds
  // are normal f32 give every code below 0x7E a row (eight significand
  // rows); the saturated code 0x7E has none. A bf16 beyond row 7 lies
  // above 12 d t, where no element of a block of that code lies in any
  // scale mode (amax / (6 t) rounds to d from below 2 d).
  float ue4m3[128];
  for (int c = 0; c < 128; ++c) ue4m3[c] = static_cast<float>(Ue4m3(c));
  const float ts[] = {1.0f,     F32FromBits(0x3DBF3CF4u), 0.001f, 0.0625f,
                      1.3f * std::ldexp(1.0f, -20), 3.7e-30f, 1e-40f, 5e30f,
                      F32FromBits(0x3F7FFFFFu)};
  for (float t : ts) {
    internal::Nvfp4ThresholdTable tab(t, ue4m3);
    tab.Fill(0, 0x7E, internal::Nvfp4ThresholdTable::Extra::kBf16Rows);
    const bool normal = t >= 1e-30f && t <= 1e30f;
    if (normal) {
      EXPECT_TRUE(tab.Bf16RowsCover(0, 0x7D)) << "t=" << t;
    }
    EXPECT_FALSE(tab.Bf16RowsCover(0x7E, 0x7E)) << "t=" << t;
    for (int c = 0; c <= 0x7E; ++c) {
      if (!tab.Bf16RowsCover(c, c)) continue;
      for (uint32_t h = 0; h < 0x10000; ++h) {
        if ((h & 0x7F80) == 0x7F80) continue;  // Inf, NaN
        const int e = (h >> 7) & 0xFF;
        const int m1 = (h & 0x7F) << 1 | h >> 15;  // M << 1 | s
        const int j = std::max(e - tab.bf16_ebase[c], 0);
        if (j > 7) {
          ASSERT_GT(std::fabs(static_cast<double>(F32FromBits(h << 16))),
                    12.0 * static_cast<double>(ue4m3[c]) * static_cast<double>(t))
              << absl::StrFormat("t=%a code 0x%02x bf16 0x%04x row %d", static_cast<double>(t),
                                 c, h, j);
          continue;
        }
        const int idx = (j | tab.bf16_slot8[c]) & 63;  // vpermb: 6 index bits
        const int got = tab.bf16_base[idx] + (m1 > tab.bf16_t1[idx]) + (m1 > tab.bf16_t2[idx]) +
                        8 * static_cast<int>(h >> 15);
        const uint8_t want = ExactElementOracle(F32FromBits(h << 16), static_cast<uint8_t>(c), t);
        ASSERT_EQ(got, want) << absl::StrFormat("t=%a code 0x%02x bf16 0x%04x idx %d",
                                                static_cast<double>(t), c, h, idx);
      }
    }
  }
}

TEST(MxNvfp4, Bf16EveryScaleCodeAtEveryBlockOfAStepEveryTarget) {
  // The bf16 kernel encodes four blocks (64 elements) per step, each block
  // with its own threshold row: the decision-point blocks of every scale
  // code (Bf16BoundaryBlocks) behind 0..3 blocks of other codes, so that
  // every code's blocks sit at every position of a step.
  for (float t : {1.0f, 0.001f, F32FromBits(0x3DBF3CF4u)}) {
    const std::vector<uint16_t> base = Bf16BoundaryBlocks(t);
    for (int shift = 0; shift < 4; ++shift) {
      std::vector<uint16_t> x;
      for (int k = 0; k < shift; ++k) {
        // A block of another scale code: 0x3F80 = 1.0, then 0.5 * 2^-k.
        x.push_back(0x3F80);
        for (int j = 1; j < 16; ++j) x.push_back(static_cast<uint16_t>(0x3F00 - 0x80 * k + j));
      }
      x.insert(x.end(), base.begin(), base.end());
      ExpectBf16EveryTargetEqualsScalar(
          x, 16, t, absl::StrFormat("t=%a shift %d", static_cast<double>(t), shift));
    }
  }
}

TEST(MxNvfp4, Bf16EveryFiniteValueUnderTheSaturatedScaleEveryTarget) {
  // Blocks whose amax is bf16 max (scale code 0x7E, saturated): every
  // finite bf16 magnitude, alternating signs, 15 per block, so that
  // elements lie in every binade up to 2^128 above the thresholds (the
  // byte tables' clamped last row, Nvfp4ExactOps::Bf16TableCodes64).
  for (float t : {1.0f, 0.001f, F32FromBits(0x3DBF3CF4u)}) {
    std::vector<uint16_t> x;
    for (uint32_t h = 0; h < 0x7F80;) {
      x.push_back(0x7F7F);
      for (int j = 0; j < 15; ++j, ++h) {
        x.push_back(h < 0x7F80 ? static_cast<uint16_t>(h | (j % 2) << 15) : uint16_t{0});
      }
    }
    ExpectBf16EveryTargetEqualsScalar(x, 16, t, absl::StrFormat("t=%a", static_cast<double>(t)));
  }
}

TEST(MxNvfp4, Bf16EveryFiniteAmaxScaleCodeEveryTarget) {
  // The bf16 scale codes come from one binade of amax (ue4m3 normals by
  // an exponent shift; subnormal codes and NaN blocks by the quotient):
  // one block per finite bf16 magnitude, that amax in lane h % 16 with
  // either sign, beside elements of a quarter of it, under tensor scales
  // whose 6 t lies at a binade's either side (1/3 rounded down and up),
  // near the ends of the table's range (E0 = 1, 254) and outside it.
  for (float t : {1.0f, 0.001f, F32FromBits(0x3DBF3CF4u), F32FromBits(0x3EAAAAAAu),
                  F32FromBits(0x3EAAAAABu), 0x1p-118f, 3e-39f, 4e37f, 1e38f}) {
    std::vector<uint16_t> x;
    for (uint32_t h = 0; h < 0x7F80; ++h) {
      const uint16_t quarter = static_cast<uint16_t>(h >= 0x0100 ? h - 0x0100 : 0);
      for (uint32_t j = 0; j < 16; ++j) {
        x.push_back(j == h % 16 ? static_cast<uint16_t>(h | (h / 16 % 2) << 15)
                                : static_cast<uint16_t>(quarter | (j % 2) << 15));
      }
    }
    ExpectBf16EveryTargetEqualsScalar(x, 16, t, absl::StrFormat("t=%a", static_cast<double>(t)));
    // The kernel sends a whole vector of 32 blocks to the quotient when one
    // needs it, so the amax whose codes lie near the subnormal (5..10) and
    // saturated (0x7C, 0x7D, the first four of 0x7E) ends also fill whole
    // vectors alone.
    std::vector<uint8_t> in(2 * x.size());
    std::memcpy(in.data(), x.data(), in.size());
    absl::StatusOr<MxTensor> ref =
        QuantizeNvfp4Exact(Format::kBF16, in, x.size() / 16, 16, t, ScaleMode::kEven,
                           ElementLayout::kCodes, Impl{Impl::kScalar});
    ASSERT_TRUE(ref.ok());
    std::vector<uint16_t> edge;
    int saturated = 0;
    for (uint32_t h = 0; h < 0x7F80; ++h) {
      const uint8_t c = ref->scales[h];
      if ((c >= 5 && c <= 10) || c == 0x7C || c == 0x7D || (c == 0x7E && saturated++ < 4)) {
        for (int k = 0; k < 32; ++k) {
          edge.insert(edge.end(), x.begin() + 16 * h, x.begin() + 16 * h + 16);
        }
      }
    }
    if (!edge.empty()) {
      ExpectBf16EveryTargetEqualsScalar(edge, 16, t,
                                        absl::StrFormat("t=%a edges", static_cast<double>(t)));
    }
    // A chunk tail of 25 blocks (not a whole vector of 32).
    x.resize(x.size() - 16 * 7);
    ExpectBf16EveryTargetEqualsScalar(x, 16, t,
                                      absl::StrFormat("t=%a tail", static_cast<double>(t)));
  }
}

TEST(MxNvfp4, Bf16NanOrInfInEveryLaneOfAStepEveryTarget) {
  // A NaN or +-Inf element sends its chunk from the bf16 kernel to the
  // general path: one in each of the 64 lanes of one step (blocks 132..135,
  // the second chunk of 128 blocks), in a tensor of varied scale codes;
  // the other chunks stay on the bf16 kernel.
  std::vector<float> f = RandomAtBinades(8 * 512, 7, [](size_t i) {
    return static_cast<int>(i / 16 % 11) - 5;
  });
  std::vector<uint16_t> x(f.size());
  for (size_t i = 0; i < f.size(); ++i) x[i] = static_cast<uint16_t>(F32Bits(f[i]) >> 16);
  const float t = 0.0123f;
  ExpectBf16EveryTargetEqualsScalar(x, 512, t, "no special");
  for (uint16_t special :
       {uint16_t{0x7FC0}, uint16_t{0xFFC1}, uint16_t{0x7F80}, uint16_t{0xFF80}}) {
    for (size_t lane = 0; lane < 64; ++lane) {
      std::vector<uint16_t> y = x;
      y[132 * 16 + lane] = special;
      ExpectBf16EveryTargetEqualsScalar(
          y, 512, t, absl::StrFormat("special 0x%04x lane %d", special, lane));
    }
  }
}

TEST(MxNvfp4, F32ExactTiesAloneInAStepEveryTarget) {
  // The f32 kernel (EncodeChunkF32Recip) sends a whole step of 64 elements
  // to the thresholds when one product lies next to a decision point, so
  // each step here holds one exact tie x = +-m_i d t and otherwise
  // products far from every decision point (anchors 6 d t (1 + 2^-18) and
  // quotients 0.1 .. 5.6), for every scale code, decision point and sign.
  // Tensor scales of 5 significant bits make every tie an f32 and put the
  // exact reciprocal 1 / (d t) on either side of its f32 roundings from
  // code to code.
  static constexpr double kMid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  static constexpr double kSafe[8] = {0.1, 0.6, 1.1, 1.6, 2.2, 3.1, 4.2, 5.6};
  for (int j = 0; j < 16; ++j) {
    const float t = std::ldexp(static_cast<float>(16 + j), -14);
    std::vector<float> x;
    for (int c = 1; c <= 0x7E; ++c) {
      const double p = Ue4m3(c) * static_cast<double>(t);
      const float anchor = static_cast<float>(6.0 * p * (1 + 0x1p-18));
      for (double m : kMid) {
        for (int sgn : {-1, 1}) {
          for (int blk = 0; blk < 4; ++blk) {
            x.push_back(anchor);
            for (int e = 1; e < 16; ++e) {
              const double q = blk == 0 && e == 5 ? m : kSafe[(e + blk) % 8];
              x.push_back(static_cast<float>(sgn * (e % 3 == 0 ? -1 : 1) * q * p));
            }
          }
        }
      }
    }
    const size_t cols = 64, rows = x.size() / cols;
    for (ElementLayout layout : {ElementLayout::kCodes, ElementLayout::kB4x16P64}) {
      const MxTensor ref = QuantizeNvfp4(x, rows, cols, t, ScaleMode::kEven,
                                         Nvfp4Arithmetic::kExact, Impl{Impl::kScalar}, layout);
      for (int64_t target : AvailableTargets()) {
        const MxTensor got = QuantizeNvfp4(x, rows, cols, t, ScaleMode::kEven,
                                           Nvfp4Arithmetic::kExact, Impl{target}, layout);
        ASSERT_EQ(got.scales, ref.scales) << "t=" << t << " " << ImplName(Impl{target});
        for (size_t i = 0; i < ref.elements.size(); ++i) {
          ASSERT_EQ(got.elements[i], ref.elements[i])
              << "t=" << t << " " << ElementLayoutName(layout) << " " << ImplName(Impl{target})
              << " byte " << i << " x bits 0x" << std::hex
              << F32Bits(x[layout == ElementLayout::kCodes ? i : 0]);
        }
      }
    }
  }
}

TEST(MxNvfp4, F32ReciprocalStepsEveryTarget) {
  // f32 into NVFP4 kExact on AVX3_DL multiplies by an f32 reciprocal of
  // d t and encodes with RangeEncodeF32 where no product lies within 8 ulps
  // of a value with its low 21 bits zero (every e2m1 decision point), else
  // compares with the thresholds. Per scale code: an anchor just above
  // 6 d t, then elements k ulps (of the quotient) from every decision point
  // m_i d' t of the anchor's code d', |k| in 0..3 (threshold steps) and
  // 9..24 (reciprocal steps next to the window), random signs; 1..3 blocks
  // past the last whole step, zero blocks (d t = 0) among the others; tensor
  // scales whose small codes have no reciprocal (d t < 2^-123: those
  // chunks take the thresholds) and large ones; codes, dense4 and
  // b4x16_p64.
  static constexpr double kMid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  const float ts[] = {1.0f, F32FromBits(0x3DBF3CF4u), 0.001f, 3e-36f, 1e-38f, 5e30f};
  std::mt19937 rng(7);
  for (float t : ts) {
    std::vector<float> x;
    for (int c = 1; c <= 0x7E; ++c) {
      const double amax_d = 6.0 * Ue4m3(c) * static_cast<double>(t) * (1 + 0x1p-20);
      if (!(amax_d < 3e38) || amax_d < 1e-37) continue;
      const float amax = static_cast<float>(amax_d);
      const double p = Ue4m3(ExactScaleOracle(ScaleMode::kEven, amax, t)) * static_cast<double>(t);
      std::vector<float> v;
      for (double m : kMid) {
        for (int k : {0, 1, 2, 3, 9, 10, 12, 17, 24}) {
          for (int sgn : {-1, 1}) {
            const float e = static_cast<float>(m * p * (1 + sgn * k * 0x1p-23));
            v.push_back(rng() % 2 ? -e : e);
          }
        }
      }
      for (size_t i = 0; i < v.size(); i += 15) {
        x.push_back(amax);
        for (size_t j = i; j < i + 15; ++j) x.push_back(j < v.size() ? v[j] : 0.0f);
      }
      if (c % 9 == 0) x.insert(x.end(), 16, 0.0f);  // a zero block
    }
    while (x.size() / 16 % 4 != 3) x.insert(x.end(), 16, 0.0f);
    x[x.size() - 5] = -x[16 * 7];  // a nonzero block in the partial step
    x[x.size() - 32] = x[16 * 9 + 3];
    const size_t rows = x.size() / 16;
    const std::vector<uint8_t> in = F32Bytes(x);
    for (ElementLayout l :
         {ElementLayout::kCodes, ElementLayout::kDense4, ElementLayout::kB4x16P64}) {
      const std::string what =
          absl::StrFormat("t=%a %s", static_cast<double>(t), ElementLayoutName(l));
      absl::StatusOr<MxTensor> ref = QuantizeNvfp4Exact(Format::kF32, in, rows, 16, t,
                                                        ScaleMode::kEven, l, Impl{Impl::kScalar});
      ASSERT_TRUE(ref.ok()) << what;
      for (int64_t target : AvailableTargets()) {
        absl::StatusOr<MxTensor> got =
            QuantizeNvfp4Exact(Format::kF32, in, rows, 16, t, ScaleMode::kEven, l, Impl{target});
        ASSERT_TRUE(got.ok()) << what;
        ASSERT_EQ(got->scales, ref->scales) << what << " " << ImplName(Impl{target});
        for (size_t i = 0; i < ref->elements.size(); ++i) {
          ASSERT_EQ(got->elements[i], ref->elements[i])
              << what << " " << ImplName(Impl{target}) << " byte " << i << " x bits 0x"
              << std::hex << F32Bits(x[l == ElementLayout::kCodes ? i : 0]);
        }
      }
    }
  }
}

TEST(MxNvfp4, F32ReciprocalUnclampedEncoderBoundsEveryTarget) {
  // The AVX3_DL reciprocal path rounds unclamped (saturating the code
  // bytes) in chunks whose scale codes are all 0 or ue4m3 normals below
  // 448 (every |x| / (d t) <= 6.75 in every mode), or 448 with the chunk's
  // amax at most 2880 t; other chunks clamp. Per scale mode and tensor
  // scale, one call (one chunk of at most 128 blocks) per case:
  //  * every normal code 8..0x7D with the amax at the far end of its
  //    rounding interval (just below the next value: rz; just above the
  //    previous one: rp; just below the midpoint: rn), elements spread
  //    over (-amax, amax), just above 6.5, 7 and 7.5 d t, and (in their
  //    own steps) at every decision point m_i d t, zero blocks among them;
  //  * code 0x7E blocks with amax / (6 t) at 480 (the bound), just above
  //    it, and far above it (saturated scale: |x| / (d t) up to 6 * 2^20 / 448);
  //  * subnormal codes 1..7 next to normal ones (ratios up to 9).
  // codes, dense4 and b4x16_p64.
  static constexpr double kMid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  const float ts[] = {1.0f, F32FromBits(0x3DBF3CF4u), 0.001f, 1e-30f, 5e30f};
  const auto below = [](double v) {  // the largest f32 below v (v > 0)
    const float f = static_cast<float>(v);
    return static_cast<double>(f) < v ? f : std::nextafter(f, 0.0f);
  };
  // One step (four blocks) of values spread over (-amax, amax), never
  // within the reciprocal's window (no zero), each block led by +-amax,
  // with 6.5, 7 and 7.5 p (times 1 + 2^-20) where they fit; then the
  // elements at the decision points m_i p (+-0..2 ulps, threshold steps),
  // padded with zero blocks to whole steps.
  const auto block = [&](std::vector<float>& x, float amax, double p) {
    for (int b = 0; b < 4; ++b) {
      x.push_back(b % 2 ? -amax : amax);
      for (int j = 1; j < 16; ++j) {
        const int k = b * 15 + j;  // 1..60
        float e = static_cast<float>(amax * ((k - 30.5) / 30.5));
        if (k % 20 == 7) {
          const float big = static_cast<float>((6.5 + 0.5 * (k / 20)) * p * (1 + 0x1p-20));
          if (big <= amax) e = k % 2 ? -big : big;
        }
        x.push_back(e);
      }
    }
    std::vector<float> v;
    for (double m : kMid) {
      for (int k : {-2, -1, 0, 1, 2}) v.push_back(static_cast<float>(m * p * (1 + k * 0x1p-23)));
    }
    for (size_t i = 0; i < v.size(); i += 15) {
      x.push_back(i % 2 ? -amax : amax);
      for (size_t j = i; j < i + 15; ++j) x.push_back(j < v.size() ? v[j] : 0.0f);
    }
    while (x.size() % 64 != 0) x.push_back(0.0f);
  };
  const auto check = [&](const std::vector<float>& x, float t, ScaleMode m,
                         const std::string& what) {
    const size_t rows = x.size() / 16;
    const std::vector<uint8_t> in = F32Bytes(x);
    for (ElementLayout l :
         {ElementLayout::kCodes, ElementLayout::kDense4, ElementLayout::kB4x16P64}) {
      absl::StatusOr<MxTensor> ref =
          QuantizeNvfp4Exact(Format::kF32, in, rows, 16, t, m, l, Impl{Impl::kScalar});
      ASSERT_TRUE(ref.ok()) << what;
      for (int64_t target : AvailableTargets()) {
        absl::StatusOr<MxTensor> got = QuantizeNvfp4Exact(Format::kF32, in, rows, 16, t, m, l,
                                                          Impl{target});
        ASSERT_TRUE(got.ok()) << what;
        const std::string w = absl::StrFormat("%s %s %s", what, ElementLayoutName(l),
                                              ImplName(Impl{target}));
        ASSERT_EQ(got->scales, ref->scales) << w;
        for (size_t i = 0; i < ref->elements.size(); ++i) {
          ASSERT_EQ(got->elements[i], ref->elements[i])
              << w << " byte " << i << " x bits 0x" << std::hex
              << F32Bits(x[l == ElementLayout::kCodes ? i : 0]);
        }
      }
    }
  };
  for (ScaleMode m : {ScaleMode::kFloor, ScaleMode::kCeil, ScaleMode::kRceil, ScaleMode::kEven}) {
    for (float t : ts) {
      const double st = 6.0 * static_cast<double>(t);
      const std::string what = absl::StrFormat("mode %d t=%a", static_cast<int>(m),
                                               static_cast<double>(t));
      // Normal codes, a chunk of about 120 blocks at a time.
      std::vector<float> x;
      for (int c = 8; c <= 0x7D; ++c) {
        double q;  // amax / (6 t) at the far end of code c's interval
        if (m == ScaleMode::kFloor) {
          q = Ue4m3(c + 1);
        } else if (m == ScaleMode::kEven) {
          q = (Ue4m3(c) + Ue4m3(c + 1)) / 2;
        } else {
          q = Ue4m3(c - 1);
        }
        if (!(q * st < 3e38) || q * st < 1e-37) continue;
        const float amax = m == ScaleMode::kCeil || m == ScaleMode::kRceil
                               ? std::nextafter(static_cast<float>(q * st), 1e38f)
                               : below(q * st);
        block(x, amax, Ue4m3(ExactScaleOracle(m, amax, t)) * static_cast<double>(t));
        if (c % 11 == 0) x.insert(x.end(), 64, 0.0f);
        if (x.size() / 16 >= 120) {
          check(x, t, m, what + " normal codes");
          x.clear();
        }
      }
      if (!x.empty()) check(x, t, m, what + " normal codes");
      // Code 0x7E: at the bound, just above it, far above it.
      for (double q : {480.0, 480.0 * (1 + 0x1p-20), 0x1p20}) {
        if (!(q * st < 3e38)) continue;
        x.clear();
        for (const float amax : {static_cast<float>(300.0 * st), static_cast<float>(q * st)}) {
          block(x, amax, Ue4m3(ExactScaleOracle(m, amax, t)) * static_cast<double>(t));
        }
        check(x, t, m, what + absl::StrFormat(" max code q=%a", q));
      }
      // Subnormal codes among normal ones.
      x.clear();
      for (int c = 1; c <= 9; ++c) {
        const double q = c < 8 ? (Ue4m3(c) + Ue4m3(c + 1)) / 2 : Ue4m3(c);
        if (q * st < 1e-37) continue;
        const float amax = below(q * st);
        block(x, amax, Ue4m3(ExactScaleOracle(m, amax, t)) * static_cast<double>(t));
      }
      if (!x.empty()) check(x, t, m, what + " subnormal codes");
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
TEST(MxNvfp4, F32ScaleTiesInsideAmaxBucketsEveryTarget) {
  // The f32 scale codes come from one binade of amax, each bucket of 2^16
  // f32 (one 7-bit high mantissa) with at most one step at a midpoint of
  // two codes times 6 t. Tensor scales of 13..19 significant bits make
  // those midpoints f32 with nonzero low halves (a tie inside a bucket):
  // every tie of codes 8..0x7E and its neighbours +-1 ulp, in binades 3
  // apart, blocks of codes from 8 up only (no vector takes the quotient).
  for (float t : {F32FromBits(0x3F803100u), F32FromBits(0x3C0A5600u), F32FromBits(0x4121F9C0u),
                  F32FromBits(0x3F400100u)}) {
    std::vector<float> x;
    const double st = 6.0 * static_cast<double>(t);
    for (int k = 8; k < 0x7E; ++k) {
      const double mid = (Ue4m3(k) + Ue4m3(k + 1)) / 2 * st;
      const float tie = static_cast<float>(mid);
      if (static_cast<double>(tie) != mid) continue;
      for (int s = -3; s <= 3; s += 3) {
        for (int off = -1; off <= 1; ++off) {
          const float a = F32FromBits(F32Bits(std::ldexp(tie, s)) + static_cast<uint32_t>(off));
          if (!(static_cast<double>(a) >= 8 * st / 512 && std::isfinite(a))) continue;
          x.push_back(off == 0 ? -a : a);
          for (int j = 1; j < 16; ++j) x.push_back(a * 0.25f * static_cast<float>(j % 4));
        }
      }
    }
    ASSERT_GE(x.size(), 16u * 64) << t;  // ties inside buckets exist
    while (x.size() % (16 * 32) != 0) x.insert(x.end(), x.end() - 16, x.end() - 16 + 16);
    const size_t rows = x.size() / 16;
    for (int64_t target : AvailableTargets()) {
      const MxTensor got = QuantizeNvfp4(x, rows, 16, t, ScaleMode::kEven,
                                         Nvfp4Arithmetic::kExact, Impl{target});
      ASSERT_EQ(got.scales.size(), rows);
      for (size_t b = 0; b < rows; ++b) {
        const float amax = std::fabs(x[16 * b]);
        ASSERT_EQ(got.scales[b], ExactScaleOracle(ScaleMode::kEven, amax, t))
            << "t=" << t << " " << ImplName(Impl{target}) << " amax bits 0x" << std::hex
            << F32Bits(amax);
      }
    }
  }
}

TEST(MxNvfp4, ExactScalesIndependentOfCallerMxcsrEveryTarget) {
  // The AVX-512 kExact rn scale codes run without MXCSR writes (explicitly
  // rounded divisions), except for blocks whose quotient lies below 2^-6 or
  // near a ue4m3 midpoint. A caller with FTZ, DAZ and round-toward-zero set
  // gets the results of a clean environment, from f32 and bf16: all-zero
  // blocks, subnormal and tiny amax, amax within 2 ulps of every ue4m3
  // midpoint and value times 6 t, tensor scales around the fast path's
  // bound 2^-120 and far from it.
  // (A subnormal t is not in the list: under DAZ the argument check reads
  // it as 0.)
  const float ts[] = {1.0f, 1e-3f, std::ldexp(1.0f, -120), 1.5f * std::ldexp(1.0f, -120),
                      std::ldexp(1.0f, -121), 3e30f};
  for (float t : ts) {
    for (Format from : {Format::kF32, Format::kBF16}) {
      // (Subnormal amax from 2^-127 up: with t near 2^-120 their quotients
      // round to nonzero scale codes, which DAZ would read as 0.)
      std::vector<float> amaxes = {0.0f, 1e-40f, std::ldexp(1.0f, -127), F32FromBits(0x00600000u),
                                   F32FromBits(0x007F0000u), std::ldexp(1.0f, -126),
                                   static_cast<float>(6.0 * t * std::ldexp(1.0, -8)),
                                   static_cast<float>(6.0 * t * std::ldexp(1.0, -6))};
      for (int k = 0; k < 0x7E; ++k) {
        for (double v : {Ue4m3(k + 1), (Ue4m3(k) + Ue4m3(k + 1)) / 2}) {
          const double target = v * 6.0 * static_cast<double>(t);
          if (!(target < 3e38)) continue;
          const uint32_t bits = F32Bits(static_cast<float>(target));
          const int step = from == Format::kBF16 ? 0x10000 : 1;
          for (int off = -2; off <= 2; ++off) {
            const int64_t b =
                static_cast<int64_t>(from == Format::kBF16 ? bits & 0xFFFF0000u : bits) +
                off * step;
            if (b > 0) amaxes.push_back(F32FromBits(static_cast<uint32_t>(b)));
          }
        }
      }
      // Each amax in its own 16 blocks (a vector of scale codes), the other
      // 15 with an amax of 6 t * 3.3 (no midpoint near, not tiny).
      const float plain = static_cast<float>(6.0 * t * 3.3);
      std::vector<float> x;
      for (size_t i = 0; i < 16 * amaxes.size(); ++i) {
        const float a = i % 16 == 0 ? amaxes[i / 16] : plain;
        x.push_back(i % 2 == 0 ? a : -a);
        for (int j = 1; j < 16; ++j) x.push_back(j % 3 == 0 ? -a / 5 : a / 3);
      }
      const std::vector<uint8_t> in = ToSource(x, from);
      const size_t rows = x.size() / 16;
      const std::string what =
          absl::StrFormat("t=%a from %s", static_cast<double>(t), FormatName(from));
      absl::StatusOr<MxTensor> ref = QuantizeNvfp4Exact(
          from, in, rows, 16, t, ScaleMode::kEven, ElementLayout::kCodes, Impl{Impl::kScalar});
      ASSERT_TRUE(ref.ok()) << what;
      for (int64_t target : AvailableTargets()) {
        absl::StatusOr<MxTensor> got;
        {
          const unsigned saved = _mm_getcsr();
          _mm_setcsr(saved | 0x8040u | 0x6000u);  // FTZ, DAZ, round toward zero
          got = QuantizeNvfp4Exact(from, in, rows, 16, t, ScaleMode::kEven, ElementLayout::kCodes,
                                   Impl{target});
          _mm_setcsr(saved);
        }
        ASSERT_TRUE(got.ok()) << what;
        for (size_t b = 0; b < rows; ++b) {
          ASSERT_EQ(got->scales[b], ref->scales[b])
              << what << " " << ImplName(Impl{target}) << " block " << b << " amax bits 0x"
              << std::hex << F32Bits(x[16 * b]);
        }
        ASSERT_EQ(got->elements, ref->elements) << what << " " << ImplName(Impl{target});
      }
    }
  }
}
#endif

TEST(MxNvfp4, StackOrdersMatchPeerGoldensEveryTarget) {
  // Golden bytes from torchao 0.18 nvfp4_quantize(x, 16, per_tensor_scale=t)
  // and ModelOpt 0.47 NVFP4QTensor.quantize(x, 16, None, t) (PyTorch path),
  // x: 2 x 32 f32 (0.3 * randn, seed 0, with +-0 and a zero block), t =
  // amax / 2688 = f32 bits 0x3A73CF3D. They differ in the zero block's scale
  // (torchao clamps to 2^-6: 0x08; ModelOpt replaces 0 by 1.0: 0x38) and in
  // -0 (torchao 0x8, ModelOpt 0x0).
  static constexpr uint32_t kX[64] = {
      0xBEACEDD3u, 0xBEB100A6u, 0xBD99F49Bu, 0x00000000u, 0x80000000u, 0x3E5495D1u,
      0xBDC22883u, 0xBF2272E8u, 0x3DC60177u, 0xBEC20C59u, 0x3DD70799u, 0x3DBD5147u,
      0x3D1342E1u, 0x3EBE1AB1u, 0x3EAB8978u, 0xBD97ED7Eu, 0xBECFC483u, 0xBF023F5Eu,
      0x3E2E1338u, 0x3E73C40Au, 0x40200000u, 0xBFE00000u, 0xBDD1BB59u, 0x3F0E4F96u,
      0x3E66754Eu, 0xBE33DD67u, 0xBD5511E7u, 0x3D61752Cu, 0x3ED5681Au, 0x3EF3A934u,
      0x3E9159F8u, 0xBE8196B9u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u,
      0x00000000u, 0x80000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u,
      0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u,
      0xBE4EC5F3u, 0x3E86111Fu, 0x3EA21A58u, 0x3D5A88CDu, 0xBD8D84A4u, 0xBDF0B1A4u,
      0x3E26E670u, 0xBDF2C8E9u, 0xBE0913F3u, 0x3E64902Cu, 0x3EE99F5Au, 0x3F82F69Bu,
      0xBEEB309Fu, 0xBEBD902Au, 0x3F0BC142u, 0xBE296DFCu,
  };
  static constexpr uint8_t kTorchaoCodes[64] = {
      0xD, 0xD, 0x9, 0x0, 0x8, 0x4, 0xA, 0xF, 0x2, 0xE, 0x2, 0x2, 0x1, 0x6, 0x5, 0x9,
      0xA, 0xA, 0x1, 0x1, 0x7, 0xE, 0x8, 0x3, 0x1, 0x9, 0x8, 0x0, 0x2, 0x2, 0x1, 0x9,
      0x0, 0x0, 0x0, 0x0, 0x0, 0x8, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0,
      0xA, 0x3, 0x4, 0x1, 0x9, 0x9, 0x2, 0x9, 0xA, 0x3, 0x5, 0x7, 0xD, 0xC, 0x5, 0xA,
  };
  static constexpr uint8_t kModelOptCodes[64] = {
      0xD, 0xD, 0x9, 0x0, 0x0, 0x4, 0xA, 0xF, 0x2, 0xE, 0x2, 0x2, 0x1, 0x6, 0x5, 0x9,
      0xA, 0xA, 0x1, 0x1, 0x7, 0xE, 0x8, 0x3, 0x1, 0x9, 0x8, 0x0, 0x2, 0x2, 0x1, 0x9,
      0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0,
      0xA, 0x3, 0x4, 0x1, 0x9, 0x9, 0x2, 0x9, 0xA, 0x3, 0x5, 0x7, 0xD, 0xC, 0x5, 0xA,
  };
  std::vector<float> x(64);
  for (size_t i = 0; i < 64; ++i) x[i] = F32FromBits(kX[i]);
  const float t = F32FromBits(0x3A73CF3Du);
  std::vector<int64_t> impls = AvailableTargets();
  impls.push_back(Impl::kScalar);
  for (int64_t target : impls) {
    const MxTensor ta =
        QuantizeNvfp4(x, 2, 32, t, ScaleMode::kEven, Nvfp4Arithmetic::kTorchao, Impl{target});
    EXPECT_EQ(ta.scales, std::vector<uint8_t>({0x6E, 0x7E, 0x08, 0x73})) << ImplName(Impl{target});
    EXPECT_EQ(ta.elements, std::vector<uint8_t>(kTorchaoCodes, kTorchaoCodes + 64));
    const MxTensor mo =
        QuantizeNvfp4(x, 2, 32, t, ScaleMode::kEven, Nvfp4Arithmetic::kModelOpt, Impl{target});
    EXPECT_EQ(mo.scales, std::vector<uint8_t>({0x6E, 0x7E, 0x38, 0x73})) << ImplName(Impl{target});
    EXPECT_EQ(mo.elements, std::vector<uint8_t>(kModelOptCodes, kModelOptCodes + 64));
  }
}

TEST(MxNvfp4, ArithmeticNamesRoundTrip) {
  for (Nvfp4Arithmetic ar : kArithmetics) {
    absl::StatusOr<Nvfp4Arithmetic> p = ParseNvfp4Arithmetic(Nvfp4ArithmeticName(ar));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, ar);
  }
  EXPECT_FALSE(ParseNvfp4Arithmetic("double").ok());
}

}  // namespace
}  // namespace mxpack::mx_test
