// Scalar reference of MX / NVFP4 block quantization (include/mxpack/mx.h):
// a direct, unoptimized evaluation of the documented formulas. The SIMD path
// (src/mx/quantize.cc) is tested against it, never the other way round.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mxpack/mx.h"
#include "mxpack/scalar.h"
#include "src/mx/mx_internal.h"
#include "src/util/fp_env.h"

namespace mxpack {
namespace scalar {

uint8_t MxScaleCode(MxFormat format, ScaleMode mode, float amax,
                    bool has_nan) {
  if (has_nan) return 0xFF;
  if (!(amax > 0.0f)) return 0x00;  // zero block (amax is finite, >= 0)
  const internal::MxElementInfo info = internal::ElementInfo(format);
  // amax = m * 2^e with m in [1, 2): frexp gives f in [0.5, 1).
  int fe = 0;
  const double m = 2.0 * std::frexp(static_cast<double>(amax), &fe);
  const int e = fe - 1;  // floor(log2(amax)), exact (subnormals included)
  int s = 0;
  switch (mode) {
    case ScaleMode::kFloor:
      s = e - info.emax;
      break;
    case ScaleMode::kCeil:
      s = (m == 1.0 ? e : e + 1) - info.emax;
      break;
    case ScaleMode::kRceil: {
      // Smallest s with amax <= max * 2^s; max = M * 2^emax, M in [1, 2).
      const double big_m = std::ldexp(info.max_finite, -info.emax);
      s = e - info.emax + (m > big_m ? 1 : 0);
      break;
    }
    case ScaleMode::kEven: {
      // amax rounded to man_bits mantissa bits, ties away from zero, reaches
      // the next binade iff m >= 2 - 2^-(man_bits + 1).
      const double bump = 2.0 - std::ldexp(1.0, -(info.man_bits + 1));
      s = (m >= bump ? e + 1 : e) - info.emax;
      break;
    }
  }
  if (s < -127) s = -127;
  if (s > 127) s = 127;
  return static_cast<uint8_t>(s + 127);
}

uint8_t Nvfp4ScaleCode(ScaleMode mode, float amax_block, float tensor_scale,
                       bool has_nan, Nvfp4Arithmetic arithmetic) {
  if (has_nan) return 0x7F;
  EncodePolicy p;
  p.saturation = Saturation::kSatFinite;
  switch (mode) {
    case ScaleMode::kFloor:
      p.rounding = Rounding::kRZ;
      break;
    case ScaleMode::kCeil:
    case ScaleMode::kRceil:
      p.rounding = Rounding::kRP;
      break;
    case ScaleMode::kEven:
      p.rounding = Rounding::kRN;
      break;
  }
  switch (arithmetic) {
    case Nvfp4Arithmetic::kExact:
      break;
    case Nvfp4Arithmetic::kF32Quotient: {
      const float denom = 6.0f * tensor_scale;  // rounded to f32
      const float q = amax_block / denom;       // rounded to f32
      return static_cast<uint8_t>(EncodeF32(q, Format::kUE4M3, p));
    }
    case Nvfp4Arithmetic::kTorchao: {
      const float q = (amax_block / 6.0f) / tensor_scale;  // each rounded to f32
      const float c = std::min(std::max(q, 0x1p-6f), 448.0f);
      return static_cast<uint8_t>(EncodeF32(c, Format::kUE4M3, p));
    }
    case Nvfp4Arithmetic::kModelOpt: {
      float q = amax_block / (6.0f * tensor_scale);  // each rounded to f32
      if (q == 0.0f) q = 1.0f;
      const float c = std::min(std::max(q, 0x1p-9f), 448.0f);
      return static_cast<uint8_t>(EncodeF32(c, Format::kUE4M3, p));
    }
  }
  // 6 * t is exact in f64 (26 significant bits). The f64 quotient of a
  // 24-bit by a 26-bit significand is either exact or at least 2^-32
  // (relative) away from every ue4m3 value and midpoint (at most 5
  // significant bits), far more than its rounding error 2^-53, so it lies on
  // the same side of each as the exact quotient: one more rounding, to
  // ue4m3, gives the exact quotient's code.
  const double q = static_cast<double>(amax_block) /
                   (6.0 * static_cast<double>(tensor_scale));
  return static_cast<uint8_t>(Convert(Format::kF64, Format::kUE4M3, F64Bits(q), p));
}

uint8_t Nvfp4ElementCode(float x, uint8_t scale_code, float tensor_scale,
                         Nvfp4Arithmetic arithmetic) {
  const EncodePolicy rn_sat;  // rn, satfinite
  const float d = DecodeToF32(Format::kUE4M3, scale_code);
  switch (arithmetic) {
    case Nvfp4Arithmetic::kExact:
      break;
    case Nvfp4Arithmetic::kF32Quotient: {
      const float p = d * tensor_scale;  // rounded to f32
      const float y = p == 0.0f ? x * 0.0f : x / p;  // rounded to f32
      return static_cast<uint8_t>(EncodeF32(y, Format::kE2M1, rn_sat));
    }
    case Nvfp4Arithmetic::kTorchao: {
      const float r = (1.0f / tensor_scale) / d;  // each rounded to f32
      return static_cast<uint8_t>(EncodeF32(x * r, Format::kE2M1, rn_sat));
    }
    case Nvfp4Arithmetic::kModelOpt: {
      const float y = x / (d * tensor_scale);  // each rounded to f32
      // Its sign bit comes from y < 0, so -0 encodes as +0.
      return y == 0.0f ? 0 : static_cast<uint8_t>(EncodeF32(y, Format::kE2M1, rn_sat));
    }
  }
  // d * t is exact in f64 (4 + 24 significant bits); as in Nvfp4ScaleCode,
  // the f64 quotient of x (24 bits) by it is exact or at least 2^-31
  // (relative) away from every e2m1 value and midpoint (at most 3 bits), so
  // its one rounding to e2m1 is the exact quotient's.
  const double p = static_cast<double>(d) * static_cast<double>(tensor_scale);
  const double y = p == 0.0 ? static_cast<double>(x) * 0.0 : static_cast<double>(x) / p;
  return static_cast<uint8_t>(Convert(Format::kF64, Format::kE2M1, F64Bits(y), rn_sat));
}

static absl::Status QuantizeMxRowsInDefaultEnv(
    MxFormat format, Format from, absl::Span<const uint8_t> in, size_t rows,
    size_t cols, size_t row_begin, size_t row_end, const MxOptions& options,
    absl::Span<uint8_t> elements, absl::Span<uint8_t> scales) {
  absl::StatusOr<internal::MxJob> job =
      internal::CheckQuantizeArgs(format, from, in, rows, cols, row_begin,
                                  row_end, options, elements, scales);
  if (!job.ok()) return job.status();
  internal::QuantizeMxRowsScalar(*job);
  return absl::OkStatus();
}

absl::Status QuantizeMxRows(MxFormat format, Format from,
                            absl::Span<const uint8_t> in, size_t rows,
                            size_t cols, size_t row_begin, size_t row_end,
                            const MxOptions& options,
                            absl::Span<uint8_t> elements,
                            absl::Span<uint8_t> scales) {
  return internal::InDefaultFpEnv([&] {
    return QuantizeMxRowsInDefaultEnv(format, from, in, rows, cols, row_begin,
                                      row_end, options, elements, scales);
  });
}

}  // namespace scalar

namespace internal {

void QuantizeMxRowsScalar(const MxJob& job) {
  const MxShape& s = job.shape;
  const MxFormat format = s.format;
  const MxElementInfo info = ElementInfo(format);
  const size_t block = s.block();
  const size_t src_bytes = static_cast<size_t>(Traits(job.from).storage_bytes);
  const bool nvfp4 = format == MxFormat::kNvfp4;
  EncodePolicy rn_sat;  // rn, satfinite
  const float nan = scalar::F32FromBits(0x7FC00000u);
  std::vector<uint8_t> codes(s.cols_padded());
  std::vector<float> x(block);

  for (size_t r = job.row_begin; r < job.row_end; ++r) {
    const uint8_t* row = job.in + (r - job.row_begin) * s.cols * src_bytes;
    for (size_t k = 0; k < s.blocks_per_row(); ++k) {
      // The block's values; padding beyond `cols` is +0 and not in amax.
      const size_t c0 = k * block;
      const size_t valid = std::min(block, s.cols - c0);
      float amax = 0.0f;
      bool has_nan = false;
      for (size_t j = 0; j < block; ++j) {
        x[j] = j < valid ? SourceToF32(job.from, row + (c0 + j) * src_bytes)
                         : 0.0f;
        if (std::isnan(x[j])) {
          has_nan = true;
        } else if (std::isfinite(x[j])) {
          amax = std::max(amax, std::fabs(x[j]));
        }
      }
      uint8_t* code = codes.data() + c0;
      if (nvfp4) {
        const uint8_t sc = scalar::Nvfp4ScaleCode(
            job.mode, amax, job.tensor_scale, has_nan, job.arithmetic);
        job.scales[s.ScaleOffset(r, k)] = sc;
        for (size_t j = 0; j < block; ++j) {
          if (j >= valid) {
            code[j] = 0;
          } else if (has_nan) {
            code[j] = static_cast<uint8_t>(scalar::EncodeF32(nan, info.elem, rn_sat));
          } else {
            code[j] = scalar::Nvfp4ElementCode(x[j], sc, job.tensor_scale,
                                               job.arithmetic);
          }
        }
      } else {
        const uint8_t sc = scalar::MxScaleCode(format, job.mode, amax, has_nan);
        job.scales[s.ScaleOffset(r, k)] = sc;
        const int e = static_cast<int>(sc) - 127;
        for (size_t j = 0; j < block; ++j) {
          uint64_t c;
          if (j >= valid) {
            c = 0;
          } else if (has_nan) {
            c = scalar::EncodeF32(nan, info.elem, rn_sat);
          } else {
            // x * 2^-e is exact in f64; one rounding to the element.
            const double y = std::ldexp(static_cast<double>(x[j]), -e);
            c = scalar::Convert(Format::kF64, info.elem, scalar::F64Bits(y),
                                rn_sat);
          }
          code[j] = static_cast<uint8_t>(c);
        }
      }
    }
    StoreElementRow(s, job.elements, r, codes.data(), Impl{Impl::kScalar});
  }
}

}  // namespace internal
}  // namespace mxpack
