// The error-statistics accumulation (src/mx/error_stats.h): every target
// gives the scalar reference's bits, and the reference counts and sums what
// ComputeMxErrorStats documents.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "mxpack/dispatch.h"
#include "src/mx/error_stats.h"

namespace mxpack {
namespace {

using internal::ErrorRow;
using internal::ErrorSums;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// One test row: source values, element values and block scales.
struct Row {
  std::vector<float> x, e, scales;
};

// Random rows with planted NaN / Inf inputs, zero and NaN scales, values
// that saturate, subnormals and exact hits.
Row MakeRow(std::mt19937& rng, size_t cols, size_t block, bool nvfp4, float t) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 39);
  static const float kE2m1[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  Row r;
  const size_t blocks = (cols + block - 1) / block;
  for (size_t k = 0; k < blocks; ++k) {
    float s;
    switch (pick(rng) % 10) {
      case 0: s = nvfp4 ? 0.0f : kNaN; break;  // NVFP4 d = 0, MX code 0xFF
      case 1: s = nvfp4 ? kNaN : std::ldexp(1.0f, -127); break;
      case 2: s = nvfp4 ? 448.0f : std::ldexp(1.0f, 127); break;
      default: s = nvfp4 ? 0.125f * static_cast<float>(1 + pick(rng)) :
                           std::ldexp(1.0f, pick(rng) - 20);
    }
    r.scales.push_back(s);
  }
  for (size_t c = 0; c < cols; ++c) {
    float x = g(rng) * std::ldexp(1.0f, pick(rng) % 8 - 4);
    float e = kE2m1[pick(rng) % 8] * (pick(rng) % 2 ? 1.0f : -1.0f);
    switch (pick(rng)) {
      case 0: x = kNaN; break;
      case 1: x = -kInf; break;
      case 2: x = kInf; break;
      case 3: x = 1e30f; break;                      // saturates
      case 4: x = -std::numeric_limits<float>::denorm_min(); break;
      case 5: x = 0.0f; e = 0.0f; break;
      case 6: x = -0.0f; break;
      case 7: e = kNaN; break;                       // a NaN element code
      case 8: case 9: {  // next to the saturation threshold 6 * divisor
        const float s = r.scales[c / block];
        float v = nvfp4 ? 6.0f * (s * t) : std::ldexp(6.0f, std::ilogb(s));
        for (int k = pick(rng) % 5; k > 0; --k) v = std::nextafter(v, 0.0f);
        for (int k = pick(rng) % 5; k > 0; --k) v = std::nextafter(v, kInf);
        x = pick(rng) % 2 ? v : -v;
        break;
      }
      default: break;
    }
    r.x.push_back(x);
    r.e.push_back(e);
  }
  return r;
}

ErrorRow View(const Row& r, size_t block, bool nvfp4, float t) {
  ErrorRow v;
  v.x = r.x.data();
  v.elements = r.e.data();
  v.scales = r.scales.data();
  v.cols = r.x.size();
  v.block = block;
  v.nvfp4 = nvfp4;
  v.tensor_scale = t;
  v.max_finite = 6.0f;
  return v;
}

void ExpectSameBits(const ErrorSums& a, const ErrorSums& b, const std::string& what) {
  EXPECT_EQ(std::memcmp(a.x2, b.x2, sizeof(a.x2)), 0) << what;
  EXPECT_EQ(std::memcmp(a.e2, b.e2, sizeof(a.e2)), 0) << what;
  EXPECT_EQ(std::memcmp(&a.max_abs_error, &b.max_abs_error, 8), 0) << what;
  EXPECT_EQ(a.finite, b.finite) << what;
  EXPECT_EQ(a.nan_inf_inputs, b.nan_inf_inputs) << what;
  EXPECT_EQ(a.nan_outputs, b.nan_outputs) << what;
  EXPECT_EQ(a.saturated, b.saturated) << what;
}

TEST(MxErrorStats, EveryTargetGivesTheReferenceBits) {
  std::mt19937 rng(7);
  for (bool nvfp4 : {false, true}) {
    const size_t block = nvfp4 ? 16 : 32;
    // t = 1e-40 makes f32(d * t) 0 (or subnormal) for small d; 1e38 makes
    // it Inf for large d.
    for (float t : {1.0f, 3.7e-3f, 1e-40f, 1e38f}) {
      if (!nvfp4 && t != 1.0f) continue;
      for (size_t cols : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 69, 200}) {
        std::vector<Row> rows;
        for (int i = 0; i < 5; ++i) rows.push_back(MakeRow(rng, cols, block, nvfp4, t));
        ErrorSums ref;
        for (const Row& r : rows) {
          internal::AddRowErrors(View(r, block, nvfp4, t), &ref, Impl{Impl::kScalar});
        }
        for (int64_t target : AvailableTargets()) {
          ErrorSums got;
          for (const Row& r : rows) {
            internal::AddRowErrors(View(r, block, nvfp4, t), &got, Impl{target});
          }
          ExpectSameBits(got, ref,
                         ImplName(Impl{target}) + " nvfp4=" + std::to_string(nvfp4) +
                             " t=" + std::to_string(t) + " cols=" + std::to_string(cols));
        }
      }
    }
  }
}

// As above on rows whose blocks are mostly whole and finite, the case the
// kernels take without per-lane tests: a few NaN / Inf inputs, NaN elements
// and special scales remain, so both paths meet in one row.
TEST(MxErrorStats, EveryTargetGivesTheReferenceBitsOnMostlyFiniteRows) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> keep(0, 199);
  for (bool nvfp4 : {false, true}) {
    const size_t block = nvfp4 ? 16 : 32;
    for (float t : {1.0f, 3.7e-3f}) {
      if (!nvfp4 && t != 1.0f) continue;
      for (size_t cols : {32, 64, 200, 1024}) {
        std::vector<Row> rows;
        size_t clean_blocks = 0;
        for (int i = 0; i < 6; ++i) {
          Row r = MakeRow(rng, cols, block, nvfp4, t);
          for (size_t c = 0; c < cols; ++c) {
            if (keep(rng) == 0) continue;
            if (!std::isfinite(r.x[c])) r.x[c] = 1.0f;
            if (!std::isfinite(r.e[c])) r.e[c] = 0.5f;
          }
          for (float& s : r.scales) {
            if (keep(rng) >= 20 && !(std::isfinite(s) && s != 0.0f))
              s = nvfp4 ? 0.25f : 1.0f;
          }
          for (size_t k = 0; k * block + block <= cols; ++k) {
            bool clean = std::isfinite(r.scales[k]);
            for (size_t c = k * block; c < (k + 1) * block; ++c) {
              clean = clean && std::isfinite(r.x[c]) && std::isfinite(r.e[c]);
            }
            clean_blocks += clean;
          }
          rows.push_back(std::move(r));
        }
        ASSERT_GT(clean_blocks, 0u);
        ErrorSums ref;
        for (const Row& r : rows) {
          internal::AddRowErrors(View(r, block, nvfp4, t), &ref,
                                 Impl{Impl::kScalar});
        }
        for (int64_t target : AvailableTargets()) {
          ErrorSums got;
          for (const Row& r : rows) {
            internal::AddRowErrors(View(r, block, nvfp4, t), &got,
                                   Impl{target});
          }
          ExpectSameBits(
              got, ref,
              ImplName(Impl{target}) + " nvfp4=" + std::to_string(nvfp4) +
                  " t=" + std::to_string(t) + " cols=" + std::to_string(cols));
        }
      }
    }
  }
}

// The reference against the definition, with sums in long double.
TEST(MxErrorStats, ReferenceCountsAndSumsAsDocumented) {
  std::mt19937 rng(11);
  for (bool nvfp4 : {false, true}) {
    const size_t block = nvfp4 ? 16 : 32;
    const float t = nvfp4 ? 0.37f : 1.0f;
    const size_t cols = 101;
    ErrorSums s;
    uint64_t finite = 0, nan_inf = 0, nan_out = 0, sat = 0;
    long double x2 = 0, e2 = 0;
    double max_err = 0;
    for (int i = 0; i < 20; ++i) {
      const Row r = MakeRow(rng, cols, block, nvfp4, t);
      internal::AddRowErrors(View(r, block, nvfp4, t), &s, Impl{Impl::kScalar});
      for (size_t c = 0; c < cols; ++c) {
        const float x = r.x[c];
        const float d = r.scales[c / block];
        if (!std::isfinite(x)) {
          ++nan_inf;
          continue;
        }
        const double xhat = double{r.e[c]} * (nvfp4 ? double{d} * t : double{d});
        if (std::isnan(xhat)) {
          ++nan_out;
          continue;
        }
        const float p = d * t;
        const double y = nvfp4 ? (p == 0.0f ? 0.0 : double{x / p}) : double{x} / d;
        if (std::fabs(y) > 6.0) ++sat;
        const double err = double{x} - xhat;
        max_err = std::max(max_err, std::fabs(err));
        x2 += static_cast<long double>(x) * x;
        e2 += static_cast<long double>(err) * err;
        ++finite;
      }
    }
    EXPECT_EQ(s.finite, finite);
    EXPECT_EQ(s.nan_inf_inputs, nan_inf);
    EXPECT_EQ(s.nan_outputs, nan_out);
    EXPECT_EQ(s.saturated, sat);
    EXPECT_GT(sat, 0u);
    EXPECT_GT(nan_out, 0u);
    EXPECT_EQ(s.max_abs_error, max_err);
    EXPECT_NEAR(s.SumX2(), static_cast<double>(x2), 1e-12 * static_cast<double>(x2));
    EXPECT_NEAR(s.SumE2(), static_cast<double>(e2), 1e-12 * static_cast<double>(e2));
  }
}

// The partials add pairwise, in a fixed order.
TEST(MxErrorStats, PartialsAddPairwise) {
  ErrorSums s;
  const double p[8] = {1e16, 1, -1e16, 1, 3, 0.5, 0.25, 0.125};
  std::memcpy(s.x2, p, sizeof(p));
  // ((1e16 + 1) + (-1e16 + 1)) + ((3 + 0.5) + (0.25 + 0.125)): 1e16 + 1
  // rounds to 1e16, -1e16 + 1 to -1e16, so the first half is 0.
  EXPECT_EQ(s.SumX2(), 3.875);
}

}  // namespace
}  // namespace mxpack
