// MX / NVFP4 block quantization (include/mxpack/mx.h): names, shapes, scale
// layouts, argument checks, the dispatched entry points, dequantization and
// error statistics. The per-block formulas live in src/mx/mx_scalar.cc (the
// reference) and src/mx/quantize-inl.h (the fused SIMD kernel).
#include "mxpack/mx.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxpack/convert.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "src/format/convert_params.h"
#include "src/mx/error_stats.h"
#include "src/mx/mx_internal.h"
#include "src/mx/nvfp4_tensor_amax.h"
#include "src/util/fp_env.h"

namespace mxpack {
namespace {

constexpr MxFormat kAllFormats[] = {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2,
                                    MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2,
                                    MxFormat::kMxfp4,     MxFormat::kNvfp4};
constexpr Nvfp4Arithmetic kAllArithmetics[] = {
    Nvfp4Arithmetic::kExact, Nvfp4Arithmetic::kF32Quotient, Nvfp4Arithmetic::kTorchao,
    Nvfp4Arithmetic::kModelOpt};
constexpr ScaleMode kAllModes[] = {ScaleMode::kFloor, ScaleMode::kRceil,
                                   ScaleMode::kCeil, ScaleMode::kEven};
constexpr ElementLayout kAllLayouts[] = {
    ElementLayout::kCodes, ElementLayout::kDense4, ElementLayout::kDense6,
    ElementLayout::kB4x16P64, ElementLayout::kB6x16P32};
constexpr ScaleLayout kAllScaleLayouts[] = {ScaleLayout::kLinear,
                                            ScaleLayout::kTcgen05};

// Parses `name` (case-insensitive) against the names of `all`.
template <typename T, size_t N, typename NameFn>
absl::StatusOr<T> ParseByName(absl::string_view what, absl::string_view name,
                              const T (&all)[N], NameFn name_of) {
  const std::string lower = absl::AsciiStrToLower(name);
  std::vector<std::string> names;
  for (T v : all) {
    if (lower == name_of(v)) return v;
    names.emplace_back(name_of(v));
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown %s '%s'; expected one of: %s", what, name,
                      absl::StrJoin(names, ", ")));
}

size_t RoundUp(size_t x, size_t m) { return (x + m - 1) / m * m; }

bool MulOverflows(size_t a, size_t b) {
  return a != 0 && b > std::numeric_limits<size_t>::max() / a;
}

// Quantization sources are f32, bf16 and f16.
absl::Status CheckSource(Format from) {
  if (from == Format::kF32 || from == Format::kBF16 || from == Format::kF16) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "from: expected f32, bf16 or f16, got %s", FormatName(from)));
}

}  // namespace

absl::string_view MxFormatName(MxFormat f) {
  switch (f) {
    case MxFormat::kMxfp8E4m3:
      return "mxfp8_e4m3";
    case MxFormat::kMxfp8E5m2:
      return "mxfp8_e5m2";
    case MxFormat::kMxfp6E2m3:
      return "mxfp6_e2m3";
    case MxFormat::kMxfp6E3m2:
      return "mxfp6_e3m2";
    case MxFormat::kMxfp4:
      return "mxfp4";
    case MxFormat::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

absl::StatusOr<MxFormat> ParseMxFormat(absl::string_view name) {
  return ParseByName<MxFormat>("MX format", name, kAllFormats, MxFormatName);
}

absl::string_view ScaleModeName(ScaleMode m) {
  switch (m) {
    case ScaleMode::kFloor:
      return "floor";
    case ScaleMode::kRceil:
      return "rceil";
    case ScaleMode::kCeil:
      return "ceil";
    case ScaleMode::kEven:
      return "even";
  }
  return "?";
}

absl::StatusOr<ScaleMode> ParseScaleMode(absl::string_view name) {
  return ParseByName<ScaleMode>("scale mode", name, kAllModes, ScaleModeName);
}

absl::string_view Nvfp4ArithmeticName(Nvfp4Arithmetic a) {
  switch (a) {
    case Nvfp4Arithmetic::kExact:
      return "exact";
    case Nvfp4Arithmetic::kF32Quotient:
      return "f32_quotient";
    case Nvfp4Arithmetic::kTorchao:
      return "torchao";
    case Nvfp4Arithmetic::kModelOpt:
      return "modelopt";
  }
  return "?";
}

absl::StatusOr<Nvfp4Arithmetic> ParseNvfp4Arithmetic(absl::string_view name) {
  return ParseByName<Nvfp4Arithmetic>("NVFP4 arithmetic", name,
                                      kAllArithmetics, Nvfp4ArithmeticName);
}

absl::string_view ElementLayoutName(ElementLayout l) {
  switch (l) {
    case ElementLayout::kCodes:
      return "codes";
    case ElementLayout::kDense4:
      return "dense4";
    case ElementLayout::kDense6:
      return "dense6";
    case ElementLayout::kB4x16P64:
      return "b4x16_p64";
    case ElementLayout::kB6x16P32:
      return "b6x16_p32";
  }
  return "?";
}

absl::StatusOr<ElementLayout> ParseElementLayout(absl::string_view name) {
  return ParseByName<ElementLayout>("element layout", name, kAllLayouts,
                                    ElementLayoutName);
}

absl::string_view ScaleLayoutName(ScaleLayout l) {
  return l == ScaleLayout::kLinear ? "linear" : "tcgen05";
}

absl::StatusOr<ScaleLayout> ParseScaleLayout(absl::string_view name) {
  return ParseByName<ScaleLayout>("scale layout", name, kAllScaleLayouts,
                                  ScaleLayoutName);
}

Format MxElementFormat(MxFormat f) {
  switch (f) {
    case MxFormat::kMxfp8E4m3:
      return Format::kE4M3;
    case MxFormat::kMxfp8E5m2:
      return Format::kE5M2;
    case MxFormat::kMxfp6E2m3:
      return Format::kE2M3;
    case MxFormat::kMxfp6E3m2:
      return Format::kE3M2;
    case MxFormat::kMxfp4:
    case MxFormat::kNvfp4:
      return Format::kE2M1;
  }
  return Format::kE2M1;
}

Format MxScaleFormat(MxFormat f) {
  return f == MxFormat::kNvfp4 ? Format::kUE4M3 : Format::kUE8M0;
}

size_t MxBlockSize(MxFormat f) { return f == MxFormat::kNvfp4 ? 16 : 32; }

ScaleMode DefaultScaleMode(MxFormat f) {
  return f == MxFormat::kNvfp4 ? ScaleMode::kEven : ScaleMode::kFloor;
}

size_t MxShape::element_row_bytes() const {
  const std::optional<Layout> packed = internal::PackedLayout(layout);
  return packed ? PackedBytes(*packed, cols_padded()) : cols_padded();
}

size_t MxShape::scale_bytes() const {
  if (scale_layout == ScaleLayout::kLinear) return rows * blocks_per_row();
  return RoundUp(rows, 128) * RoundUp(blocks_per_row(), 4);
}

size_t MxShape::ScaleOffset(size_t r, size_t k) const {
  if (scale_layout == ScaleLayout::kLinear) return r * blocks_per_row() + k;
  // 512-byte tiles of 128 rows x 4 blocks, row-tile-major; inside a tile
  // row r, block k at (r % 32) * 16 + (r / 32) * 4 + k.
  const size_t k_tiles = RoundUp(blocks_per_row(), 4) / 4;
  const size_t tile = (r / 128) * k_tiles + k / 4;
  const size_t rr = r % 128;
  return tile * 512 + (rr % 32) * 16 + (rr / 32) * 4 + k % 4;
}

absl::Status CheckMxShape(const MxShape& s) {
  const Format elem = MxElementFormat(s.format);
  const std::optional<Layout> packed = internal::PackedLayout(s.layout);
  if (packed) {
    if (!CheckLayoutFormat(*packed, elem).ok()) {
      const int bits = Traits(elem).bits;
      return absl::InvalidArgumentError(absl::StrFormat(
          "layout: %s cannot hold %s elements (%s); expected %s",
          ElementLayoutName(s.layout), MxFormatName(s.format), FormatName(elem),
          bits == 4   ? "codes, dense4 or b4x16_p64"
          : bits == 6 ? "codes, dense6 or b6x16_p32"
                      : "codes (fp8 has no packed layout)"));
    }
  }
  if (s.rows == 0 || s.cols == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shape: rows and cols must be >= 1, got rows=%d cols=%d", s.rows,
        s.cols));
  }
  // Every size below must fit size_t (with room for the 128/4 rounding).
  const size_t limit = std::numeric_limits<size_t>::max() / 4;
  if (s.cols > limit || s.rows > limit ||
      MulOverflows(s.rows + 128, s.cols_padded() * 4)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shape: rows=%d x cols=%d is too large", s.rows, s.cols));
  }
  return absl::OkStatus();
}

namespace internal {

MxElementInfo ElementInfo(MxFormat f) {
  const Format elem = MxElementFormat(f);
  const FormatTraits& t = Traits(elem);
  const float max_finite =
      static_cast<float>(scalar::ToDouble(elem, t.max_code));
  int fe = 0;
  std::frexp(max_finite, &fe);
  return {elem, fe - 1, t.man_bits, max_finite};
}

MxScaleParams ScaleParams(MxFormat f, ScaleMode mode) {
  const MxElementInfo info = ElementInfo(f);
  const uint32_t max_bits = scalar::F32Bits(info.max_finite);
  // `even`: m >= 2 - 2^-(man_bits+1)  <=>  mant >= 2^23 - 2^(22 - man_bits).
  const uint32_t even = (1u << 23) - (1u << (22 - info.man_bits));
  return {info.emax, max_bits & 0x7FFFFFu, even, mode};
}

std::optional<Layout> PackedLayout(ElementLayout l) {
  switch (l) {
    case ElementLayout::kCodes:
      return std::nullopt;
    case ElementLayout::kDense4:
      return Layout::kDense4;
    case ElementLayout::kDense6:
      return Layout::kDense6;
    case ElementLayout::kB4x16P64:
      return Layout::kB4x16P64;
    case ElementLayout::kB6x16P32:
      return Layout::kB6x16P32;
  }
  return std::nullopt;
}

void StoreElementRow(const MxShape& s, uint8_t* elements, size_t r,
                     const uint8_t* codes, Impl impl) {
  const size_t n = s.cols_padded();
  const size_t row_bytes = s.element_row_bytes();
  uint8_t* dst = elements + r * row_bytes;
  const std::optional<Layout> packed = PackedLayout(s.layout);
  if (!packed) {
    std::memcpy(dst, codes, n);
    return;
  }
  // Sizes are consistent by construction, so Pack cannot fail here.
  const absl::Status st = Pack(*packed, absl::MakeConstSpan(codes, n),
                               absl::MakeSpan(dst, row_bytes), impl);
  (void)st;
}

float SourceToF32(Format from, const uint8_t* p) {
  switch (from) {
    case Format::kF32: {
      uint32_t b;
      std::memcpy(&b, p, 4);
      return scalar::F32FromBits(b);
    }
    case Format::kBF16:
      return scalar::F32FromBits(static_cast<uint32_t>(p[0] | (p[1] << 8))
                                 << 16);
    default:  // f16
      return scalar::DecodeToF32(Format::kF16,
                                 static_cast<uint32_t>(p[0] | (p[1] << 8)));
  }
}

absl::StatusOr<MxJob> CheckQuantizeArgs(MxFormat format, Format from,
                                        absl::Span<const uint8_t> in,
                                        size_t rows, size_t cols,
                                        size_t row_begin, size_t row_end,
                                        const MxOptions& options,
                                        absl::Span<uint8_t> elements,
                                        absl::Span<uint8_t> scales) {
  if (absl::Status st = CheckSource(from); !st.ok()) return st;
  MxShape shape{format, options.layout, options.scale_layout, rows, cols};
  if (absl::Status st = CheckMxShape(shape); !st.ok()) return st;
  if (row_begin > row_end || row_end > rows) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "row range: expected row_begin <= row_end <= rows=%d, got [%d, %d)",
        rows, row_begin, row_end));
  }
  const size_t src_bytes = static_cast<size_t>(Traits(from).storage_bytes);
  const size_t want_in = (row_end - row_begin) * cols * src_bytes;
  if (in.size() != want_in) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "in: expected %d bytes (%d rows x %d cols x %d-byte %s), got %d",
        want_in, row_end - row_begin, cols, src_bytes, FormatName(from),
        in.size()));
  }
  if (elements.size() != shape.element_bytes()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "elements: expected %d bytes (%d rows x %d bytes per %s row), got %d",
        shape.element_bytes(), rows, shape.element_row_bytes(),
        ElementLayoutName(shape.layout), elements.size()));
  }
  if (scales.size() != shape.scale_bytes()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "scales: expected %d bytes (%s scale layout), got %d",
        shape.scale_bytes(), ScaleLayoutName(shape.scale_layout),
        scales.size()));
  }
  float tensor_scale = 1.0f;
  if (static_cast<int>(options.nvfp4_arithmetic) >
      static_cast<int>(Nvfp4Arithmetic::kModelOpt)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "nvfp4_arithmetic: expected exact, f32_quotient, torchao or modelopt, got %d",
        static_cast<int>(options.nvfp4_arithmetic)));
  }
  if (format == MxFormat::kNvfp4) {
    if (!options.tensor_scale) {
      return absl::InvalidArgumentError(
          "tensor_scale: NVFP4 row-range quantization needs the tensor scale "
          "(ComputeNvfp4TensorScale over the whole tensor)");
    }
    tensor_scale = *options.tensor_scale;
    if (!(std::isfinite(tensor_scale) && tensor_scale > 0.0f)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor_scale: expected a finite value > 0, got %g", tensor_scale));
    }
  }
  return MxJob{shape,
               from,
               options.scale_mode.value_or(DefaultScaleMode(format)),
               tensor_scale,
               options.nvfp4_arithmetic,
               row_begin,
               row_end,
               in.data(),
               elements.data(),
               scales.data()};
}

}  // namespace internal

absl::Status RelayoutScales(const MxShape& shape, absl::Span<const uint8_t> in,
                            ScaleLayout to, absl::Span<uint8_t> out) {
  if (absl::Status st = CheckMxShape(shape); !st.ok()) return st;
  MxShape dst = shape;
  dst.scale_layout = to;
  if (in.size() != shape.scale_bytes()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "in: expected %d scale bytes (%s layout), got %d", shape.scale_bytes(),
        ScaleLayoutName(shape.scale_layout), in.size()));
  }
  if (out.size() != dst.scale_bytes()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "out: expected %d scale bytes (%s layout), got %d", dst.scale_bytes(),
        ScaleLayoutName(to), out.size()));
  }
  std::fill(out.begin(), out.end(), 0);
  for (size_t r = 0; r < shape.rows; ++r) {
    for (size_t k = 0; k < shape.blocks_per_row(); ++k) {
      out[dst.ScaleOffset(r, k)] = in[shape.ScaleOffset(r, k)];
    }
  }
  return absl::OkStatus();
}

static absl::StatusOr<float> ComputeNvfp4TensorScaleInDefaultEnv(
    Format from, absl::Span<const uint8_t> in, Impl impl) {
  if (absl::Status st = CheckSource(from); !st.ok()) return st;
  const size_t src_bytes = static_cast<size_t>(Traits(from).storage_bytes);
  if (in.size() % src_bytes != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "in: expected a multiple of %d bytes (%s), got %d", src_bytes,
        FormatName(from), in.size()));
  }
  // One pass over the bits (src/mx/nvfp4_tensor_amax.h): IEEE magnitudes
  // order like their sign-less bits, and Inf/NaN bits are the largest, so
  // the finite amax is the largest sign-less bit pattern below Inf's. Only
  // that one pattern is decoded.
  return internal::Nvfp4TensorScaleFromAmaxBits(
      from, internal::MaxFiniteMagnitudeBits(from, in.data(), in.size(), impl));
}

absl::StatusOr<float> ComputeNvfp4TensorScale(Format from,
                                              absl::Span<const uint8_t> in,
                                              Impl impl) {
  return internal::InDefaultFpEnv(
      [&] { return ComputeNvfp4TensorScaleInDefaultEnv(from, in, impl); });
}

static absl::Status QuantizeMxRowsInDefaultEnv(
    MxFormat format, Format from, absl::Span<const uint8_t> in, size_t rows,
    size_t cols, size_t row_begin, size_t row_end, const MxOptions& options,
    absl::Span<uint8_t> elements, absl::Span<uint8_t> scales, Impl impl) {
  absl::StatusOr<internal::MxJob> job =
      internal::CheckQuantizeArgs(format, from, in, rows, cols, row_begin,
                                  row_end, options, elements, scales);
  if (!job.ok()) return job.status();
  if (impl.target == Impl::kScalar) {
    internal::QuantizeMxRowsScalar(*job);
  } else {
    internal::QuantizeMxRowsSimd(*job, impl);
  }
  return absl::OkStatus();
}

absl::Status QuantizeMxRows(MxFormat format, Format from,
                            absl::Span<const uint8_t> in, size_t rows,
                            size_t cols, size_t row_begin, size_t row_end,
                            const MxOptions& options,
                            absl::Span<uint8_t> elements,
                            absl::Span<uint8_t> scales, Impl impl) {
  return internal::InDefaultFpEnv([&] {
    return QuantizeMxRowsInDefaultEnv(format, from, in, rows, cols, row_begin,
                                      row_end, options, elements, scales, impl);
  });
}

static absl::StatusOr<MxTensor> QuantizeMxInDefaultEnv(
    MxFormat format, Format from, absl::Span<const uint8_t> in, size_t rows,
    size_t cols, const MxOptions& options, Impl impl) {
  MxTensor t;
  t.shape = {format, options.layout, options.scale_layout, rows, cols};
  if (absl::Status st = CheckMxShape(t.shape); !st.ok()) return st;
  MxOptions opts = options;
  if (format == MxFormat::kNvfp4 && !opts.tensor_scale) {
    absl::StatusOr<float> ts = ComputeNvfp4TensorScale(from, in, impl);
    if (!ts.ok()) return ts.status();
    opts.tensor_scale = *ts;
  }
  t.scale_mode = opts.scale_mode.value_or(DefaultScaleMode(format));
  t.tensor_scale = format == MxFormat::kNvfp4 ? *opts.tensor_scale : 1.0f;
  t.elements.assign(t.shape.element_bytes(), 0);
  t.scales.assign(t.shape.scale_bytes(), 0);  // tcgen05 padding stays 0x00
  absl::Status st = QuantizeMxRows(format, from, in, rows, cols, 0, rows, opts,
                                   absl::MakeSpan(t.elements),
                                   absl::MakeSpan(t.scales), impl);
  if (!st.ok()) return st;
  return t;
}

absl::StatusOr<MxTensor> QuantizeMx(MxFormat format, Format from,
                                    absl::Span<const uint8_t> in, size_t rows,
                                    size_t cols, const MxOptions& options,
                                    Impl impl) {
  return internal::InDefaultFpEnv([&] {
    return QuantizeMxInDefaultEnv(format, from, in, rows, cols, options, impl);
  });
}

namespace {

// Validates a quantized tensor view for reading.
absl::Status CheckView(const MxTensorView& q) {
  if (absl::Status st = CheckMxShape(q.shape); !st.ok()) return st;
  if (q.elements.size() != q.shape.element_bytes()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "elements: expected %d bytes for %d x %d %s in %s, got %d",
        q.shape.element_bytes(), q.shape.rows, q.shape.cols,
        MxFormatName(q.shape.format), ElementLayoutName(q.shape.layout),
        q.elements.size()));
  }
  if (q.scales.size() != q.shape.scale_bytes()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "scales: expected %d bytes (%s scale layout), got %d",
        q.shape.scale_bytes(), ScaleLayoutName(q.shape.scale_layout),
        q.scales.size()));
  }
  if (q.shape.format == MxFormat::kNvfp4 &&
      !(std::isfinite(q.tensor_scale) && q.tensor_scale > 0.0f)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor_scale: expected a finite value > 0, got %g", q.tensor_scale));
  }
  // Whether any byte of p[0, n) has a bit outside `mask` (word-wise, so the
  // common all-valid case is one vectorizable pass; FirstOutside then names
  // the first offending byte).
  const auto any_outside = [](const uint8_t* p, size_t n, uint8_t mask) {
    const uint64_t bad = ~uint64_t{0} / 0xFF * static_cast<uint8_t>(~mask);
    uint64_t acc = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      acc |= w;
    }
    for (; i < n; ++i) acc |= p[i];
    return (acc & bad) != 0;
  };
  // (Every byte is a valid 8-bit code: only narrower codes need the scan.)
  if (q.shape.layout == ElementLayout::kCodes &&
      Traits(MxElementFormat(q.shape.format)).bits < 8) {
    const Format elem = MxElementFormat(q.shape.format);
    const uint8_t mask =
        static_cast<uint8_t>((1u << Traits(elem).bits) - 1u);
    const size_t bad =
        any_outside(q.elements.data(), q.elements.size(), mask)
            ? internal::FirstOutside(q.elements.data(), q.elements.size(), mask)
            : q.elements.size();
    if (bad < q.elements.size()) {
      return internal::OutsideError(
          "elements", bad, q.elements[bad], mask,
          absl::StrFormat("a %s code", FormatName(elem)));
    }
  }
  // NVFP4: the scale bytes (padding included) hold no sign bit in the
  // common case, checked at once; else find the first offending block.
  if (q.shape.format == MxFormat::kNvfp4 &&
      any_outside(q.scales.data(), q.scales.size(), 0x7F)) {
    for (size_t r = 0; r < q.shape.rows; ++r) {
      for (size_t k = 0; k < q.shape.blocks_per_row(); ++k) {
        const size_t off = q.shape.ScaleOffset(r, k);
        if (q.scales[off] & 0x80) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "scales: ue4m3 scale byte %d (row %d, block %d) is 0x%02X; the "
              "sign bit must be 0",
              off, r, k, q.scales[off]));
        }
      }
    }
  }
  return absl::OkStatus();
}

// Reads row r of a validated view as exact element values times the block
// scale: MX in f32 (exact, or +-Inf beyond f32 range) and NVFP4 as
// (e * d) * t rounded once to f32, or in f64 (`exact64`) exactly.
class RowDecoder {
 public:
  RowDecoder(const MxTensorView& q, Impl impl)
      : q_(q), impl_(impl), codes_(q.shape.cols_padded()),
        values_(q.shape.cols_padded()) {
    // Exact decode table of the scale format (every code).
    const Format scale = MxScaleFormat(q.shape.format);
    for (uint32_t c = 0; c < 256; ++c) {
      scale_lut_[c] = c < 0x80 || scale == Format::kUE8M0
                          ? scalar::DecodeToF32(scale, c)
                          : 0.0f;  // ue4m3 sign bit: rejected by CheckView
    }
  }

  // Element values (unscaled) of row r as f32 (codes already validated).
  void Load(size_t r) {
    const MxShape& s = q_.shape;
    const size_t row_bytes = s.element_row_bytes();
    const uint8_t* src = q_.elements.data() + r * row_bytes;
    const std::optional<Layout> packed = internal::PackedLayout(s.layout);
    const uint8_t* codes = src;
    if (packed) {
      // Sizes are consistent by construction, so Unpack cannot fail.
      (void)Unpack(*packed, absl::MakeConstSpan(src, row_bytes),
                   absl::MakeSpan(codes_), impl_);
      codes = codes_.data();
    }
    // Exact decode through the dispatched converter (the codes are valid:
    // CheckView checked them, so the per-call argument checks are skipped).
    if (impl_.target == Impl::kScalar) {
      (void)ConvertArray(MxElementFormat(s.format), Format::kF32, EncodePolicy{},
                         absl::MakeConstSpan(codes, values_.size()),
                         absl::MakeSpan(reinterpret_cast<uint8_t*>(values_.data()),
                                        4 * values_.size()),
                         {}, impl_);
    } else {
      internal::ConvertArrayUnchecked(MxElementFormat(s.format), Format::kF32,
                                      EncodePolicy{}, codes,
                                      reinterpret_cast<uint8_t*>(values_.data()),
                                      nullptr, values_.size(), impl_);
    }
  }

  float element(size_t c) const { return values_[c]; }
  const float* elements() const { return values_.data(); }

  // The block scale of (r, k): MX 2^s (NaN for 0xFF), NVFP4 d = decode(code).
  float scale(size_t r, size_t k) const {
    return scale_lut_[q_.scales[q_.shape.ScaleOffset(r, k)]];
  }

  // The block scales of row r (ScaleOffset walked incrementally).
  void Scales(size_t r, float* out) const {
    const MxShape& s = q_.shape;
    const size_t bpr = s.blocks_per_row();
    if (s.scale_layout == ScaleLayout::kLinear) {
      for (size_t k = 0; k < bpr; ++k) out[k] = scale_lut_[q_.scales[r * bpr + k]];
      return;
    }
    const uint8_t* base = q_.scales.data() + s.ScaleOffset(r, 0);
    for (size_t k = 0; k < bpr; ++k) out[k] = scale_lut_[base[(k / 4) * 512 + k % 4]];
  }

 private:
  const MxTensorView& q_;
  Impl impl_;
  std::vector<uint8_t> codes_;
  std::vector<float> values_;
  float scale_lut_[256];
};

// out = v * d[k] for the `nb` whole MX blocks k of kBlock elements, as f32
// bytes, NaN as 0x7FFFFFFF (fixed trip counts, so the compiler vectorizes
// each block).
template <size_t kBlock>
void ScaleMxBlocks(const float* __restrict v, const float* __restrict d, size_t nb,
                   uint8_t* __restrict out) {
  for (size_t k = 0; k < nb; ++k) {
    const float dk = d[k];
    const float* vk = v + k * kBlock;
    float y[kBlock];
    int32_t b[kBlock];
    for (size_t i = 0; i < kBlock; ++i) y[i] = vk[i] * dk;
    std::memcpy(b, y, sizeof(y));
    for (size_t i = 0; i < kBlock; ++i) {
      const int32_t nan = -static_cast<int32_t>((b[i] & 0x7FFFFFFF) > 0x7F800000);
      b[i] = (b[i] & ~nan) | (0x7FFFFFFF & nan);
    }
    std::memcpy(out + k * kBlock * 4, b, sizeof(b));
  }
}

// out[i] = v[i] * ds[i] (MX) or (v[i] * ds[i]) * t (NVFP4) as f32 bytes,
// NaN as 0x7FFFFFFF: element-wise, so that the compiler vectorizes it.
template <bool kNvfp4>
void ScaleRowT(const float* __restrict v, const float* __restrict ds, size_t n, float t,
               uint8_t* __restrict out) {
  constexpr size_t kStep = 64;
  for (size_t i0 = 0; i0 < n; i0 += kStep) {
    const size_t m = std::min(kStep, n - i0);
    float y[kStep];
    int32_t b[kStep];
    for (size_t i = 0; i < m; ++i) {
      y[i] = kNvfp4 ? (v[i0 + i] * ds[i0 + i]) * t : v[i0 + i] * ds[i0 + i];
    }
    std::memcpy(b, y, m * 4);
    // NaN (|bits| above Inf's) -> 0x7FFFFFFF, as integer selects.
    for (size_t i = 0; i < m; ++i) {
      const int32_t nan = -static_cast<int32_t>((b[i] & 0x7FFFFFFF) > 0x7F800000);
      b[i] = (b[i] & ~nan) | (0x7FFFFFFF & nan);
    }
    std::memcpy(out + i0 * 4, b, m * 4);
  }
}

}  // namespace

static absl::Status DequantizeMxInDefaultEnv(const MxTensorView& q, Format to,
                                             absl::Span<uint8_t> out,
                                             Impl impl) {
  if (absl::Status st = CheckView(q); !st.ok()) return st;
  if (!(to == Format::kF32 || to == Format::kBF16 || to == Format::kF16 ||
        to == Format::kF64)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "to: expected f32, bf16, f16 or f64, got %s", FormatName(to)));
  }
  const MxShape& s = q.shape;
  const size_t out_bytes = static_cast<size_t>(Traits(to).storage_bytes);
  if (out.size() != s.rows * s.cols * out_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "out: expected %d bytes (%d x %d %s), got %d",
        s.rows * s.cols * out_bytes, s.rows, s.cols, FormatName(to),
        out.size()));
  }
  if (impl.target != Impl::kScalar && to != Format::kF64) {
    internal::DequantizeMxSimd(q, to, out.data(), impl);
    return absl::OkStatus();
  }
  RowDecoder dec(q, impl);
  const bool nvfp4 = s.format == MxFormat::kNvfp4;
  std::vector<float> row32(s.cols);
  std::vector<float> scales(s.blocks_per_row());
  std::vector<float> per_elem(s.cols_padded());  // each element's block scale
  EncodePolicy rn_nosat;
  rn_nosat.saturation = Saturation::kNoSat;
  for (size_t r = 0; r < s.rows; ++r) {
    dec.Load(r);
    uint8_t* dst = out.data() + r * s.cols * out_bytes;
    if (to != Format::kF64) {
      // MX: e * 2^s in f32 is exact or beyond f32 range (+-Inf); NVFP4:
      // (e * d) exact, then one rounding by * t. f32 goes straight to out.
      dec.Scales(r, scales.data());
      for (size_t k = nvfp4 ? 0 : s.cols / 32; k < s.blocks_per_row(); ++k) {
        std::fill_n(per_elem.begin() + static_cast<ptrdiff_t>(k * s.block()), s.block(),
                    scales[k]);
      }
      uint8_t* row_out = to == Format::kF32 ? dst : reinterpret_cast<uint8_t*>(row32.data());
      const size_t whole = nvfp4 ? 0 : s.cols / 32;  // MX: whole blocks by block
      if (!nvfp4) ScaleMxBlocks<32>(dec.elements(), scales.data(), whole, row_out);
      const size_t c0 = whole * s.block();
      if (nvfp4) {
        ScaleRowT<true>(dec.elements(), per_elem.data(), s.cols, q.tensor_scale, row_out);
      } else if (c0 < s.cols) {
        ScaleRowT<false>(dec.elements() + c0, per_elem.data() + c0, s.cols - c0,
                         q.tensor_scale, row_out + c0 * 4);
      }
    }
    // f64: per block, the scale once, then an exact multiply per element.
    for (size_t k = 0; to == Format::kF64 && k < s.blocks_per_row(); ++k) {
      const size_t c0 = k * s.block(), c1 = std::min(s.cols, c0 + s.block());
      const float d = dec.scale(r, k);  // MX 2^s (NaN for 0xFF), NVFP4 decode
      const double x = nvfp4 ? static_cast<double>(d) * q.tensor_scale : d;
      for (size_t c = c0; c < c1; ++c) {
        const double v = static_cast<double>(dec.element(c)) * x;  // exact
        std::memcpy(dst + c * 8, &v, 8);
      }
    }
    if (to == Format::kF64 || to == Format::kF32) continue;
    // One rn rounding of the f32 value (MX: the exact value); overflow Inf.
    (void)ConvertArray(Format::kF32, to, rn_nosat,
                       absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(row32.data()),
                                           s.cols * 4),
                       absl::MakeSpan(dst, s.cols * out_bytes), {}, impl);
  }
  return absl::OkStatus();
}

absl::Status DequantizeMx(const MxTensorView& q, Format to,
                          absl::Span<uint8_t> out, Impl impl) {
  return internal::InDefaultFpEnv(
      [&] { return DequantizeMxInDefaultEnv(q, to, out, impl); });
}

static absl::StatusOr<MxErrorStats> ComputeMxErrorStatsInDefaultEnv(
    Format from, absl::Span<const uint8_t> in, const MxTensorView& q) {
  if (absl::Status st = CheckView(q); !st.ok()) return st;
  const MxShape& s = q.shape;
  if (absl::Status st = CheckSource(from); !st.ok()) return st;
  const size_t src_bytes = static_cast<size_t>(Traits(from).storage_bytes);
  if (in.size() != s.rows * s.cols * src_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "in: expected %d bytes (%d x %d %s), got %d",
        s.rows * s.cols * src_bytes, s.rows, s.cols, FormatName(from),
        in.size()));
  }
  const internal::MxElementInfo info = internal::ElementInfo(s.format);
  MxErrorStats st;
  st.elements = s.rows * s.cols;
  internal::ErrorSums sums;
  RowDecoder dec(q, Impl{});
  std::vector<float> xs(s.cols);
  std::vector<float> block_scales(s.blocks_per_row());
  internal::ErrorRow er;
  er.elements = dec.elements();
  er.scales = block_scales.data();
  er.cols = s.cols;
  er.block = s.block();
  er.nvfp4 = s.format == MxFormat::kNvfp4;
  er.tensor_scale = q.tensor_scale;
  er.max_finite = info.max_finite;
  for (size_t r = 0; r < s.rows; ++r) {
    dec.Load(r);
    dec.Scales(r, block_scales.data());
    // The input row as f32 (exact), through the dispatched decoder.
    const absl::Span<const uint8_t> row =
        in.subspan(r * s.cols * src_bytes, s.cols * src_bytes);
    if (from == Format::kF32 &&
        reinterpret_cast<uintptr_t>(row.data()) % alignof(float) == 0) {
      er.x = reinterpret_cast<const float*>(row.data());  // no copy
    } else if (from == Format::kF32) {
      std::memcpy(xs.data(), row.data(), row.size());
      er.x = xs.data();
    } else {
      er.x = xs.data();
      (void)ConvertArray(from, Format::kF32, EncodePolicy{}, row,
                         absl::MakeSpan(reinterpret_cast<uint8_t*>(xs.data()),
                                        s.cols * 4));
    }
    internal::AddRowErrors(er, &sums, Impl{});
  }
  st.nan_inf_inputs = sums.nan_inf_inputs;
  st.nan_outputs = sums.nan_outputs;
  st.saturated = sums.saturated;
  st.max_abs_error = sums.max_abs_error;
  const double sum_x2 = sums.SumX2(), sum_e2 = sums.SumE2();
  const size_t finite = sums.finite;
  if (finite > 0) {
    st.rmse = std::sqrt(sum_e2 / static_cast<double>(finite));
    st.signal_power = sum_x2 / static_cast<double>(finite);
  }
  st.sqnr_db = sum_e2 == 0.0 ? std::numeric_limits<double>::infinity()
                             : 10.0 * std::log10(sum_x2 / sum_e2);
  return st;
}

absl::StatusOr<MxErrorStats> ComputeMxErrorStats(Format from,
                                                 absl::Span<const uint8_t> in,
                                                 const MxTensorView& q) {
  return internal::InDefaultFpEnv(
      [&] { return ComputeMxErrorStatsInDefaultEnv(from, in, q); });
}

}  // namespace mxpack
