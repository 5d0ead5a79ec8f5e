// AddRowErrors (src/mx/error_stats.h): the Highway kernel, its dispatch and
// the scalar reference.
#include "src/mx/error_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/mx/error_stats.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// f64 lanes, at most kErrorPartials of them: partial p of the sums is lane
// p % N of accumulator p / N.
using D64 = hn::CappedTag<double, internal::kErrorPartials>;
using DF = hn::Rebind<float, D64>;
constexpr size_t kMaxAcc = internal::kErrorPartials;  // N = 1 (HWY_SCALAR)
constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr double kInfD = std::numeric_limits<double>::infinity();

// The constants of one block.
// The saturation test without a division: MX |x / 2^s| > m is
// |x| > m * 2^s (exact). For NVFP4, the f32 quotient fl(x / p) exceeds m
// exactly when |x| / |p| lies above the midpoint h of m and the next f32;
// h * |p| is exact in f64 (25 + 24 significant bits), and |x| / |p| never
// equals h (h's odd 25-bit significand times p's would not fit x's 24).
// p = 0 (quotient taken as 0) and p = Inf (quotient 0) never saturate.
struct BlockConsts {
  double x_scale;  // X = 2^s, or d * t in f64 (exact)
  double bound;    // saturated: |x| > bound
};

class RowAccumulator {
 public:
  explicit RowAccumulator(const internal::ErrorSums& s) {
    const D64 d;
    const size_t n = hn::Lanes(d);
    for (size_t i = 0; i < Accumulators(); ++i) {
      x2_[i] = hn::LoadU(d, s.x2 + i * n);
      e2_[i] = hn::LoadU(d, s.e2 + i * n);
    }
    max_ = hn::Set(d, s.max_abs_error);
    const DI di;
    nan_inf_ = nan_out_ = hn::Zero(di);
  }

  size_t Accumulators() const { return internal::kErrorPartials / hn::Lanes(D64()); }

  // Eight consecutive elements starting at a column that is a multiple of 8;
  // lanes at or beyond `valid` (a tail) are not counted.
  HWY_INLINE void Group(const float* x, const float* e, const BlockConsts& b,
                        size_t valid) {
    const D64 d;
    const DF df;
    const size_t n = hn::Lanes(d);
    for (size_t i = 0; i < Accumulators(); ++i) {
      const size_t lane0 = i * n;
      const auto xv = hn::PromoteTo(d, hn::LoadU(df, x + lane0));
      const auto xhat = hn::Mul(hn::PromoteTo(d, hn::LoadU(df, e + lane0)),
                                hn::Set(d, b.x_scale));
      const auto err = hn::Sub(xv, xhat);
      const auto over = hn::Gt(hn::Abs(xv), hn::Set(d, b.bound));
      // The usual case: every lane in range, x and xhat finite (err finite),
      // so every lane counts and nothing needs a mask.
      if (valid == internal::kErrorPartials && hn::AllTrue(d, hn::IsFinite(err))) {
        max_ = hn::Max(max_, hn::Abs(err));
        x2_[i] = hn::Add(x2_[i], hn::Mul(xv, xv));
        e2_[i] = hn::Add(e2_[i], hn::Mul(err, err));
        // (A count of mask bits: scalar work beside the f64 vector work.)
        sat_ += hn::CountTrue(d, over);
        continue;
      }
      const auto in_range = hn::FirstN(d, valid > lane0 ? valid - lane0 : 0);
      const auto finite = hn::And(in_range, hn::IsFinite(xv));
      const auto counted = hn::AndNot(hn::IsNaN(xhat), finite);
      max_ = hn::Max(max_, hn::IfThenElseZero(counted, hn::Abs(err)));
      x2_[i] = hn::Add(x2_[i], hn::IfThenElseZero(counted, hn::Mul(xv, xv)));
      e2_[i] = hn::Add(e2_[i], hn::IfThenElseZero(counted, hn::Mul(err, err)));
      // Counts per lane: a true mask lane is -1 as an integer.
      nan_inf_ = hn::Sub(nan_inf_, MaskBits(hn::AndNot(hn::IsFinite(xv), in_range)));
      nan_out_ = hn::Sub(nan_out_, MaskBits(hn::And(finite, hn::IsNaN(xhat))));
      sat_ += hn::CountTrue(d, hn::And(counted, over));
    }
  }

  // Stores the sums after a row of `cols` elements.
  void Store(size_t cols, internal::ErrorSums* s) const {
    const D64 d;
    const size_t n = hn::Lanes(d);
    for (size_t i = 0; i < Accumulators(); ++i) {
      hn::StoreU(x2_[i], d, s->x2 + i * n);
      hn::StoreU(e2_[i], d, s->e2 + i * n);
    }
    s->max_abs_error = hn::GetLane(hn::MaxOfLanes(d, max_));
    const DI di;
    const uint64_t nan_inf = Total(di, nan_inf_), nan_out = Total(di, nan_out_);
    s->finite += cols - nan_inf - nan_out;
    s->nan_inf_inputs += nan_inf;
    s->nan_outputs += nan_out;
    s->saturated += sat_;
  }

 private:
  using DI = hn::RebindToSigned<D64>;

  static HWY_INLINE hn::Vec<DI> MaskBits(hn::Mask<D64> m) {
    return hn::BitCast(DI(), hn::VecFromMask(D64(), m));
  }
  static uint64_t Total(DI di, hn::Vec<DI> v) {
    return static_cast<uint64_t>(hn::GetLane(hn::SumOfLanes(di, v)));
  }

  hn::Vec<D64> x2_[kMaxAcc], e2_[kMaxAcc], max_;
  hn::Vec<DI> nan_inf_, nan_out_;  // per-lane counts
  uint64_t sat_ = 0;
};

template <bool kNvfp4>
void AddRowErrorsT(const internal::ErrorRow& row, internal::ErrorSums* sums) {
  RowAccumulator acc(*sums);
  // The midpoint of max_finite and the next f32 (exact in f64).
  const double mid = (static_cast<double>(row.max_finite) +
                      static_cast<double>(std::nextafter(row.max_finite, kInfF))) / 2;
  const size_t blocks = (row.cols + row.block - 1) / row.block;
  for (size_t k = 0; k < blocks; ++k) {
    const float s = row.scales[k];
    BlockConsts b;
    if constexpr (kNvfp4) {
      b.x_scale = static_cast<double>(s) * row.tensor_scale;
      const float p = std::fabs(s * row.tensor_scale);
      b.bound = p == 0.0f ? kInfD : mid * p;  // Inf * mid: Inf
    } else {
      b.x_scale = s;
      b.bound = static_cast<double>(row.max_finite) * b.x_scale;
    }
    const size_t c0 = k * row.block;
    const size_t c1 = std::min(row.cols, c0 + row.block);
    size_t c = c0;
    for (; c + internal::kErrorPartials <= c1; c += internal::kErrorPartials) {
      acc.Group(row.x + c, row.elements + c, b,
                        internal::kErrorPartials);
    }
    if (c < c1) {  // the row's last, partial group (c is a multiple of 8)
      HWY_ALIGN float xt[internal::kErrorPartials] = {};
      HWY_ALIGN float et[internal::kErrorPartials] = {};
      std::memcpy(xt, row.x + c, (c1 - c) * sizeof(float));
      std::memcpy(et, row.elements + c, (c1 - c) * sizeof(float));
      acc.Group(xt, et, b, c1 - c);
    }
  }
  acc.Store(row.cols, sums);
}

void AddRowErrorsSimd(const internal::ErrorRow& row, internal::ErrorSums* sums) {
  if (row.nvfp4) return AddRowErrorsT<true>(row, sums);
  return AddRowErrorsT<false>(row, sums);
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/util/dispatch_util.h"

namespace mxpack::internal {
namespace {

HWY_EXPORT(AddRowErrorsSimd);

double PairwiseSum(const double (&p)[kErrorPartials]) {
  static_assert(kErrorPartials == 8, "the pairwise order below is for 8 partials");
  const double a = p[0] + p[1], b = p[2] + p[3], c = p[4] + p[5], d = p[6] + p[7];
  const double ab = a + b, cd = c + d;
  return ab + cd;
}

// The reference: one element at a time, in the order of the header. Each
// f64 product is its own statement, so no compiler contracts it into a
// fused multiply-add.
void AddRowErrorsScalar(const ErrorRow& row, ErrorSums* a) {
  for (size_t c0 = 0; c0 < row.cols; c0 += row.block) {
    const float d = row.scales[c0 / row.block];
    const double x_scale =
        row.nvfp4 ? static_cast<double>(d) * row.tensor_scale : static_cast<double>(d);
    const float p = row.nvfp4 ? d * row.tensor_scale : 0.0f;
    const double inv_scale = 1.0 / x_scale;
    const size_t c1 = std::min(row.cols, c0 + row.block);
    for (size_t c = c0; c < c1; ++c) {
      const float x = row.x[c];
      if (!std::isfinite(x)) {
        ++a->nan_inf_inputs;
        continue;
      }
      const double xhat = static_cast<double>(row.elements[c]) * x_scale;
      if (std::isnan(xhat)) {
        ++a->nan_outputs;
        continue;
      }
      const double y = row.nvfp4 ? (p == 0.0f ? 0.0 : static_cast<double>(x / p))
                                 : static_cast<double>(x) * inv_scale;
      if (std::fabs(y) > static_cast<double>(row.max_finite)) ++a->saturated;
      const double xd = x;
      const double err = xd - xhat;
      a->max_abs_error = std::max(a->max_abs_error, std::fabs(err));
      const double x2 = xd * xd;
      const double e2 = err * err;
      a->x2[c % kErrorPartials] += x2;
      a->e2[c % kErrorPartials] += e2;
      ++a->finite;
    }
  }
}

}  // namespace

double ErrorSums::SumX2() const { return PairwiseSum(x2); }
double ErrorSums::SumE2() const { return PairwiseSum(e2); }

void AddRowErrors(const ErrorRow& row, ErrorSums* sums, Impl impl) {
  if (impl.target == Impl::kScalar) return AddRowErrorsScalar(row, sums);
  Pick(HWY_DISPATCH_TABLE(AddRowErrorsSimd), impl)(row, sums);
}

}  // namespace mxpack::internal
#endif  // HWY_ONCE
