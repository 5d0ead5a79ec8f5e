// The per-row accumulation behind ComputeMxErrorStats (include/mxpack/mx.h):
// a Highway kernel and its scalar reference, which give the same bits.
#ifndef MXPACK_SRC_MX_ERROR_STATS_H_
#define MXPACK_SRC_MX_ERROR_STATS_H_

#include <cstddef>
#include <cstdint>

#include "mxpack/dispatch.h"

namespace mxpack::internal {

// Partial sums of the squares: the element in column c of every row adds to
// partial c % kErrorPartials, rows in order, columns in order. The totals add
// the partials pairwise. The order is fixed, so every target, every thread
// count and every chunking into whole rows give the same bits.
inline constexpr size_t kErrorPartials = 8;

struct ErrorSums {
  double x2[kErrorPartials] = {};  // x^2 of counted inputs
  double e2[kErrorPartials] = {};  // (x - xhat)^2 of counted inputs
  double max_abs_error = 0;
  uint64_t finite = 0;          // counted inputs: finite, block not NaN
  uint64_t nan_inf_inputs = 0;  // NaN / Inf inputs
  uint64_t nan_outputs = 0;     // finite inputs in a NaN-scaled block
  uint64_t saturated = 0;       // counted inputs with |scaled| > max finite

  // ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)).
  double SumX2() const;
  double SumE2() const;
};

// One row of a quantized tensor next to its source.
struct ErrorRow {
  const float* x = nullptr;         // the source row as f32 (exact), cols values
  const float* elements = nullptr;  // element values before scaling, cols values
  const float* scales = nullptr;    // per block: MX 2^s (NaN for 0xFF), NVFP4 d
  size_t cols = 0;
  size_t block = 32;          // 32 (MX) or 16 (NVFP4): a multiple of 8
  bool nvfp4 = false;
  float tensor_scale = 1.0f;  // NVFP4 t; the block divisor is d * t
  float max_finite = 0.0f;    // of the element format
};

// Adds `row` to `sums`. Per finite input x with dequantized value
// xhat = element * X (X = 2^s, or d * t in f64; exact) that is not NaN:
// err = x - xhat in f64, x^2 and err^2 into the partials, |err| into
// the maximum, and `saturated` when the scaled value the encoder saw (MX:
// x / 2^s; NVFP4: the f32 quotient x / f32(d * t), 0 when that divisor is 0)
// exceeds max_finite in magnitude. impl: kScalar (the reference), kBest or
// one available target.
void AddRowErrors(const ErrorRow& row, ErrorSums* sums, Impl impl);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_MX_ERROR_STATS_H_
