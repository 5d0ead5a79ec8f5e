// MX (OCP microscaling) and NVFP4 block quantization of row-major matrices into
// the element and scale-factor byte layouts Blackwell kernels load, and back.
//
// A tensor is row-major [rows][cols] (f32, bf16 or f16, little-endian). Blocks
// run along a row: 32 elements for MX formats, 16 for NVFP4. Every choice on
// which implementations disagree is a named option; the formulas are below and
// in docs/semantics.md section 5.
//
// Scale modes (ue8m0 scale X = 2^s, MX formats; amax = max |x| of the block's
// finite elements, emax = the element's largest binade: e4m3 8, e5m2 15,
// e2m3 2, e3m2 4, e2m1 2; max = the element's max finite value):
//   floor  (OCP v1.0, MX default): s = floor(log2(amax)) - emax
//   rceil  (NVIDIA cvt.rp.ue8m0 of amax/max, computed exactly):
//          s = smallest integer with amax <= max * 2^s (never saturates)
//   ceil   s = ceil(log2(amax)) - emax
//   even   (torchao EVEN): s = floor(log2(amax')) - emax, where amax' is amax
//          rounded to the element's mantissa width, ties away from zero (the
//          scale rises only when amax would round up into the next binade)
//   s is clamped to [-127, 127]; amax == 0 (or a block of zeros / padding)
//   gives scale code 0x00. A block containing NaN gets scale 0xFF and its
//   elements are encode(NaN) under satfinite (e4m3/e5m2 0x7F; fp6/fp4 +max).
//   +-Inf elements do not enter amax and encode to +-max finite (satfinite);
//   they are counted in MxErrorStats::nan_inf_inputs. Elements are
//   encode(x * 2^-s) with rn + satfinite; the power-of-two scaling is applied
//   to the exponent, so x * 2^-s is exact (values that would become f32
//   subnormals are far below half the element's smallest subnormal and round
//   to +-0 either way).
//
// NVFP4 (e2m1 elements, ue4m3 block scale, f32 tensor scale t):
//   t = amax_tensor / 2688 (= 448 * 6, f32 division) over the finite inputs,
//       or 1.0 when that amax is 0; MxOptions::tensor_scale overrides it.
//   block scale code = encode_ue4m3(amax_block / (6 * t)) with rounding
//       floor -> rz, ceil / rceil -> rp, even -> rn (the NVFP4 default);
//       satfinite.
//   elements = encode_e2m1(x / (d * t)) rn satfinite, d = decode(scale code);
//       when d * t == 0 every element is encode(x * 0) (+-0, NaN -> +max).
//   Nvfp4Arithmetic::kExact (default): both quotients are exact, rounded
//       once by the encode. kF32Quotient: the products 6 * t and d * t and
//       both quotients are each rounded to f32 before the encode (a second
//       rounding: x = -0.98046875, d = 3, t = f32 bits 0x3dbf3cf4 has the
//       exact quotient -3.49999995 -> code -3, but f32 quotient -3.5 -> -4).
//   A block containing NaN gets scale 0x7F (ue4m3 NaN).
//
// Ragged shapes: every row is padded with zeros to cols_padded =
// round_up(cols, block) elements (so padded layouts always hold whole 16-element
// groups); padding does not enter amax. Element bytes of one row:
// MxElementRowBytes(); rows follow each other without gaps.
//
// Scale layouts:
//   linear:  row-major [rows][blocks_per_row], one byte per block.
//   tcgen05: the block-scaled MMA scale-factor layout: rows padded to a multiple
//            of 128, blocks_per_row padded to a multiple of 4, tiles of
//            128 rows x 4 blocks = 512 bytes ordered row-tile-major
//            (tile (rt, kt) at byte (rt * ceil(blocks/4) + kt) * 512), and inside
//            a tile, row r (0..127) and block k (0..3) at (r%32)*16 + (r/32)*4 + k.
//            Padding scale bytes are 0x00.
#ifndef MXPACK_MX_H_
#define MXPACK_MX_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"

namespace mxpack {

enum class MxFormat : uint8_t {
  kMxfp8E4m3,  // "mxfp8_e4m3": e4m3 elements, ue8m0 scale, block 32.
  kMxfp8E5m2,  // "mxfp8_e5m2"
  kMxfp6E2m3,  // "mxfp6_e2m3"
  kMxfp6E3m2,  // "mxfp6_e3m2"
  kMxfp4,      // "mxfp4": e2m1 elements, ue8m0 scale, block 32.
  kNvfp4,      // "nvfp4": e2m1 elements, ue4m3 scale, block 16, f32 tensor scale.
};

enum class ScaleMode : uint8_t { kFloor, kRceil, kCeil, kEven };

// How NVFP4 evaluates its block-scale and element quotients (see above and
// docs/semantics.md section 5).
enum class Nvfp4Arithmetic : uint8_t {
  kExact,        // "exact": each code rounded once from the exact quotient.
  kF32Quotient,  // "f32_quotient": f32 products and quotients, then encode.
  // Operation orders of other stacks (scalar path only; NaN blocks as above):
  // "torchao" (torchao nvfp4_quantize with a tensor scale): scale =
  //   encode_ue4m3(clamp(f32(f32(amax / 6) / t), 2^-6, 448)), elements =
  //   encode_e2m1(f32(x * f32(f32(1 / t) / d))).
  kTorchao,
  // "modelopt" (ModelOpt NVFP4QTensor): q = f32(amax / f32(6 * t)), 1.0
  //   where q == 0, scale = encode_ue4m3(clamp(q, 2^-9, 448)); elements =
  //   encode_e2m1(f32(x / f32(d * t))), +-0 both as code 0x0.
  kModelOpt,
};

// Element byte layout of a quantized tensor.
enum class ElementLayout : uint8_t {
  kCodes,     // "codes": one code per byte (the only layout for fp8).
  kDense4,    // "dense4": fp4 only, see pack.h.
  kDense6,    // "dense6": fp6 only.
  kB4x16P64,  // "b4x16_p64": fp4 only, 16 bytes per 16 elements.
  kB6x16P32,  // "b6x16_p32": fp6 only, 16 bytes per 16 elements.
};

enum class ScaleLayout : uint8_t { kLinear, kTcgen05 };

absl::string_view MxFormatName(MxFormat f);
absl::StatusOr<MxFormat> ParseMxFormat(absl::string_view name);
absl::string_view ScaleModeName(ScaleMode m);
absl::StatusOr<ScaleMode> ParseScaleMode(absl::string_view name);
absl::string_view Nvfp4ArithmeticName(Nvfp4Arithmetic a);
absl::StatusOr<Nvfp4Arithmetic> ParseNvfp4Arithmetic(absl::string_view name);
absl::string_view ElementLayoutName(ElementLayout l);
absl::StatusOr<ElementLayout> ParseElementLayout(absl::string_view name);
absl::string_view ScaleLayoutName(ScaleLayout l);
absl::StatusOr<ScaleLayout> ParseScaleLayout(absl::string_view name);

Format MxElementFormat(MxFormat f);  // e4m3, e5m2, e2m3, e3m2, e2m1, e2m1
Format MxScaleFormat(MxFormat f);    // ue8m0, or ue4m3 for NVFP4
size_t MxBlockSize(MxFormat f);      // 32, or 16 for NVFP4
// floor for MX formats, even for NVFP4.
ScaleMode DefaultScaleMode(MxFormat f);

struct MxOptions {
  std::optional<ScaleMode> scale_mode;  // unset: DefaultScaleMode(format)
  ElementLayout layout = ElementLayout::kCodes;
  ScaleLayout scale_layout = ScaleLayout::kLinear;
  // NVFP4 only: use this tensor scale instead of amax_tensor / 2688 (it must be
  // finite and > 0). Required by QuantizeMxRows, which sees only some rows.
  std::optional<float> tensor_scale;
  // NVFP4 only: how the block scale and element quotients are rounded.
  Nvfp4Arithmetic nvfp4_arithmetic = Nvfp4Arithmetic::kExact;
};

// Shape of a quantized [rows][cols] tensor.
struct MxShape {
  MxFormat format = MxFormat::kMxfp4;
  ElementLayout layout = ElementLayout::kCodes;
  ScaleLayout scale_layout = ScaleLayout::kLinear;
  size_t rows = 0;
  size_t cols = 0;

  size_t block() const { return MxBlockSize(format); }
  size_t blocks_per_row() const { return (cols + block() - 1) / block(); }
  size_t cols_padded() const { return blocks_per_row() * block(); }
  size_t element_row_bytes() const;  // bytes of one padded row
  size_t element_bytes() const { return rows * element_row_bytes(); }
  size_t scale_bytes() const;
  // Byte offset of the scale of block k of row r in the scale buffer.
  size_t ScaleOffset(size_t r, size_t k) const;
};

// Validates a format / layout / scale-layout combination and the shape
// (rows, cols >= 1; sizes must not overflow size_t).
absl::Status CheckMxShape(const MxShape& shape);

// A quantized tensor that owns its bytes.
struct MxTensor {
  MxShape shape;
  ScaleMode scale_mode = ScaleMode::kFloor;
  std::vector<uint8_t> elements;  // shape.element_bytes()
  std::vector<uint8_t> scales;    // shape.scale_bytes()
  float tensor_scale = 1.0f;      // NVFP4 only (1.0 otherwise)
};

// A view of a quantized tensor (e.g. read from a file).
struct MxTensorView {
  MxShape shape;
  absl::Span<const uint8_t> elements;
  absl::Span<const uint8_t> scales;
  float tensor_scale = 1.0f;
};
inline MxTensorView View(const MxTensor& t) {
  return {t.shape, t.elements, t.scales, t.tensor_scale};
}

// Rewrites the scale bytes of `shape` (stored in shape.scale_layout) into the
// layout `to`; `out` must have the size of that layout (tcgen05 padding bytes
// are written as 0x00). Both directions, so scales are readable and writable
// in either layout.
absl::Status RelayoutScales(const MxShape& shape, absl::Span<const uint8_t> in,
                            ScaleLayout to, absl::Span<uint8_t> out);

// NVFP4 tensor scale of an input tensor: amax over finite values / 2688, or 1.0.
absl::StatusOr<float> ComputeNvfp4TensorScale(Format from,
                                              absl::Span<const uint8_t> in,
                                              Impl impl = {});

// Quantizes `in` (rows * cols values of `from` = f32, bf16 or f16).
absl::StatusOr<MxTensor> QuantizeMx(MxFormat format, Format from,
                                    absl::Span<const uint8_t> in, size_t rows,
                                    size_t cols, const MxOptions& options = {},
                                    Impl impl = {});

// Quantizes rows [row_begin, row_end) of the tensor into caller buffers sized
// for the whole tensor (shape.element_bytes(), shape.scale_bytes()); `in`
// holds only those rows. Disjoint row ranges may run concurrently. For the
// tcgen05 scale layout, the caller must have zeroed the padding scale bytes
// (QuantizeMx does). NVFP4 requires options.tensor_scale. It writes every
// element byte of its rows (row padding and layout padding included) and, for
// the linear layout, every scale byte of its rows, so callers need not
// pre-fill those buffers.
absl::Status QuantizeMxRows(MxFormat format, Format from,
                            absl::Span<const uint8_t> in, size_t rows,
                            size_t cols, size_t row_begin, size_t row_end,
                            const MxOptions& options,
                            absl::Span<uint8_t> elements,
                            absl::Span<uint8_t> scales, Impl impl = {});

// Dequantizes to `to` (f32, bf16, f16 or f64), unpadded row-major
// [rows][cols]. f64 is exact always (e * 2^s, or e * d * t for NVFP4).
// MX f32 is exact except that values beyond f32 range become +-Inf (e * 2^s
// can reach 448 * 2^127); NVFP4 f32 is (e * d) * t with f32 arithmetic (e * d
// exact, one rounding). bf16/f16 are one rn rounding of that f32 value
// (for MX: of the exact value), overflow to +-Inf. A NaN scale or NaN element
// gives the canonical NaN. Malformed element bytes (codes layout with bits
// above the element width) or ue4m3 scales with the sign bit set are an error
// and nothing is written.
absl::Status DequantizeMx(const MxTensorView& q, Format to,
                          absl::Span<uint8_t> out, Impl impl = {});

struct MxErrorStats {
  size_t elements = 0;        // rows * cols
  size_t nan_inf_inputs = 0;  // inputs that are NaN or +-Inf (not in errors)
  size_t nan_outputs = 0;     // finite inputs in a NaN-scaled block (lost)
  size_t saturated = 0;       // finite inputs whose scaled value |x / X|
                              // exceeds the element's max finite
  double max_abs_error = 0;   // over finite inputs, against the f64 dequant
  double rmse = 0;
  double signal_power = 0;    // mean x^2 over finite inputs
  double sqnr_db = 0;         // 10 log10(sum x^2 / sum err^2); +inf if exact
};

// Compares `in` with the f64 dequantization of `q`. The f64 sums follow a
// fixed order (docs/semantics.md section 5, "Error statistics"), so every
// target gives the same bits.
absl::StatusOr<MxErrorStats> ComputeMxErrorStats(Format from,
                                                 absl::Span<const uint8_t> in,
                                                 const MxTensorView& q);

namespace scalar {
// The scalar reference of QuantizeMxRows / DequantizeMx (no SIMD).
absl::Status QuantizeMxRows(MxFormat format, Format from,
                            absl::Span<const uint8_t> in, size_t rows,
                            size_t cols, size_t row_begin, size_t row_end,
                            const MxOptions& options,
                            absl::Span<uint8_t> elements,
                            absl::Span<uint8_t> scales);
// The scale code of one MX block from its amax (finite, >= 0) — the docs/semantics.md section 5
// formulas; `has_nan` forces 0xFF.
uint8_t MxScaleCode(MxFormat format, ScaleMode mode, float amax, bool has_nan);
// The ue4m3 block scale code of one NVFP4 block.
uint8_t Nvfp4ScaleCode(ScaleMode mode, float amax_block, float tensor_scale,
                       bool has_nan,
                       Nvfp4Arithmetic arithmetic = Nvfp4Arithmetic::kExact);
// The e2m1 code of one NVFP4 element x of a block with scale code
// `scale_code` (not NaN): encode_e2m1(x / (d * t)) rn satfinite.
uint8_t Nvfp4ElementCode(float x, uint8_t scale_code, float tensor_scale,
                         Nvfp4Arithmetic arithmetic = Nvfp4Arithmetic::kExact);
}  // namespace scalar

}  // namespace mxpack

#endif  // MXPACK_MX_H_
