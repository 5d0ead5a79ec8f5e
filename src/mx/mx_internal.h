// Internal: what the public MX entry points (src/mx/mx.cc), the scalar
// reference (src/mx/mx_scalar.cc) and the SIMD kernel (src/mx/quantize.cc) share.
#ifndef MXPACK_SRC_MX_MX_INTERNAL_H_
#define MXPACK_SRC_MX_MX_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/mx.h"
#include "mxpack/pack.h"

namespace mxpack::internal {

// Blocks per chunk of the SIMD quantizer (src/mx/quantize-inl.h): an
// L1-sized piece of the input (MX: 4096 elements, NVFP4: 2048).
inline constexpr size_t kMxChunkBlocks = 128;

// A validated QuantizeMxRows call.
struct MxJob {
  MxShape shape;
  Format from;            // f32, bf16 or f16
  ScaleMode mode;         // resolved (never unset)
  float tensor_scale;     // NVFP4; 1.0 otherwise
  Nvfp4Arithmetic arithmetic;  // NVFP4
  size_t row_begin, row_end;
  const uint8_t* in;      // rows [row_begin, row_end), row-major
  uint8_t* elements;      // whole tensor
  uint8_t* scales;        // whole tensor
};

// Element properties the kernels need, from FormatTraits.
struct MxElementInfo {
  Format elem;
  int emax;           // largest binade of the element (e4m3 8, e2m1 2, ...)
  int man_bits;
  float max_finite;   // 448, 57344, 7.5, 28, 6
};
MxElementInfo ElementInfo(MxFormat f);

// The MX scale formulas of mx.h in integer form, for the SIMD driver: from the
// bits of amax (finite, >= 0). Equal to scalar::MxScaleCode (the frexp-based
// reference) for every input; tests/mx_test.cc proves it.
struct MxScaleParams {
  int emax;
  uint32_t max_mant;   // 23-bit mantissa field of the element's max finite
  uint32_t even_mant;  // mantissa field from which `even` rounds up a binade
  ScaleMode mode;
};
MxScaleParams ScaleParams(MxFormat f, ScaleMode mode);

inline uint8_t MxScaleCodeFromBits(const MxScaleParams& p, uint32_t amax_bits,
                                   bool has_nan) {
  if (has_nan) return 0xFF;
  const int biased = static_cast<int>(amax_bits >> 23);
  // Zero and f32 subnormals: e <= -127, so s <= -127 - emax + 1 < -127.
  if (biased == 0) return 0x00;
  const uint32_t mant = amax_bits & 0x7FFFFFu;
  int s = biased - 127 - p.emax;  // floor(log2(amax)) - emax
  switch (p.mode) {
    case ScaleMode::kFloor:
      break;
    case ScaleMode::kCeil:
      s += mant != 0;
      break;
    case ScaleMode::kRceil:
      s += mant > p.max_mant;
      break;
    case ScaleMode::kEven:
      s += mant >= p.even_mant;
      break;
  }
  s = s < -127 ? -127 : (s > 127 ? 127 : s);
  return static_cast<uint8_t>(s + 127);
}

// The packed layout of an element layout (nullopt for one code per byte).
std::optional<Layout> PackedLayout(ElementLayout l);

// Writes one row of `cols_padded` element codes (one per byte) into row r of
// the element buffer, in the shape's layout.
void StoreElementRow(const MxShape& s, uint8_t* elements, size_t r,
                     const uint8_t* codes, Impl impl);

// Decodes an f32/bf16/f16 source value to f32 (exact).
float SourceToF32(Format from, const uint8_t* p);

// Validates a QuantizeMxRows call (shared by the scalar and SIMD entry
// points so they give identical errors).
absl::StatusOr<MxJob> CheckQuantizeArgs(MxFormat format, Format from,
                                        absl::Span<const uint8_t> in,
                                        size_t rows, size_t cols,
                                        size_t row_begin, size_t row_end,
                                        const MxOptions& options,
                                        absl::Span<uint8_t> elements,
                                        absl::Span<uint8_t> scales);

// The SIMD path of QuantizeMxRows (src/mx/quantize.cc).
void QuantizeMxRowsSimd(const MxJob& job, Impl impl);

// The scalar reference over a validated job (src/mx/mx_scalar.cc).
void QuantizeMxRowsScalar(const MxJob& job);

// The SIMD path of DequantizeMx for a validated view into f32, bf16 or f16
// (`out`: rows x cols values; src/mx/dequantize.cc).
void DequantizeMxSimd(const MxTensorView& q, Format to, uint8_t* out, Impl impl);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_MX_MX_INTERNAL_H_
