// MX / NVFP4 block quantization (mxpack/mx.h) for the Python module:
// quantized buffers become numpy arrays without a copy (a capsule owns the
// std::vector), DequantizeMx and the error statistics read numpy buffers in
// place; kernels run with the GIL released, quantization and dequantization
// of large tensors split by rows over threads (QuantizeMxRows on disjoint row
// ranges; the NVFP4 tensor amax as a maximum of per-chunk maxima), so the
// bytes do not depend on the thread count.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxpack/format.h"
#include "mxpack/mx.h"
#include "mxpack/scalar.h"
#include "python/src/bind_util.h"

namespace mxpack::python {
namespace {

using U8Array = nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>;

MxFormat ParseMxFormatArg(const std::string& name) {
  absl::StatusOr<MxFormat> f = ParseMxFormat(name);
  if (!f.ok()) ThrowIfError(Prefixed("format", f.status()));
  return *f;
}

// The shape of a quantized tensor from the Python arguments, validated.
MxShape ShapeArg(const std::string& format, const std::string& layout,
                 const std::string& scale_layout, size_t rows, size_t cols) {
  MxShape s;
  s.format = ParseMxFormatArg(format);
  absl::StatusOr<ElementLayout> l = ParseElementLayout(layout);
  if (!l.ok()) ThrowIfError(Prefixed("layout", l.status()));
  absl::StatusOr<ScaleLayout> sl = ParseScaleLayout(scale_layout);
  if (!sl.ok()) ThrowIfError(Prefixed("scale_layout", sl.status()));
  s.layout = *l;
  s.scale_layout = *sl;
  s.rows = rows;
  s.cols = cols;
  ThrowIfError(CheckMxShape(s));
  return s;
}

// A numpy uint8 array that owns `bytes` (no copy).
U8Array OwnedArray(std::vector<uint8_t> bytes) {
  auto* v = new std::vector<uint8_t>(std::move(bytes));
  nb::capsule owner(v, [](void* p) noexcept {
    delete static_cast<std::vector<uint8_t>*>(p);
  });
  return U8Array(v->data(), {v->size()}, owner);
}

nb::dict MxFormatInfo(const std::string& name) {
  const MxFormat f = ParseMxFormatArg(name);
  nb::dict d;
  d["name"] = std::string(MxFormatName(f));
  d["element"] = std::string(FormatName(MxElementFormat(f)));
  d["scale"] = std::string(FormatName(MxScaleFormat(f)));
  d["block"] = MxBlockSize(f);
  d["default_scale_mode"] = std::string(ScaleModeName(DefaultScaleMode(f)));
  return d;
}

std::vector<std::string> MxFormatNames() {
  std::vector<std::string> names;
  for (MxFormat f :
       {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2, MxFormat::kMxfp6E2m3,
        MxFormat::kMxfp6E3m2, MxFormat::kMxfp4, MxFormat::kNvfp4}) {
    names.emplace_back(MxFormatName(f));
  }
  return names;
}

nb::dict MxShapeInfo(const std::string& format, const std::string& layout,
                     const std::string& scale_layout, size_t rows,
                     size_t cols) {
  const MxShape s = ShapeArg(format, layout, scale_layout, rows, cols);
  nb::dict d;
  d["format"] = std::string(MxFormatName(s.format));
  d["layout"] = std::string(ElementLayoutName(s.layout));
  d["scale_layout"] = std::string(ScaleLayoutName(s.scale_layout));
  d["block"] = s.block();
  d["blocks_per_row"] = s.blocks_per_row();
  d["cols_padded"] = s.cols_padded();
  d["element_row_bytes"] = s.element_row_bytes();
  d["element_bytes"] = s.element_bytes();
  d["scale_bytes"] = s.scale_bytes();
  return d;
}

// Largest sign-less bit pattern below `inf` of n IEEE values: the bits of the
// largest finite magnitude (magnitudes order like their sign-less bits, and
// Inf / NaN patterns are the largest).
template <typename T>
T MaxFiniteBits(const uint8_t* p, size_t n, T inf) {
  T m = 0;
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    v = static_cast<T>(v & static_cast<T>(static_cast<T>(~T{0}) >> 1));
    m = v < inf && v > m ? v : m;
  }
  return m;
}

// ComputeNvfp4TensorScale on `threads` threads: the amax of each chunk, their
// maximum (order-free), then the same single f32 division. Validation and
// small inputs go to the library function itself.
absl::StatusOr<float> TensorScale(Format from, absl::Span<const uint8_t> in,
                                  Impl impl, size_t threads) {
  const bool f32 = from == Format::kF32;
  const bool f16ish = from == Format::kBF16 || from == Format::kF16;
  const size_t sb = f32 ? 4 : 2;
  const size_t n = in.size() / sb;
  if (!(f32 || f16ish) || in.size() % sb != 0 || ResolveThreads(threads) <= 1 ||
      n < 2 * kMinUnitsPerChunk) {
    return ComputeNvfp4TensorScale(from, in, impl);
  }
  const size_t t = ResolveThreads(threads);
  const size_t chunk = std::max(kMinUnitsPerChunk, (n + t - 1) / t);
  const size_t chunks = (n + chunk - 1) / chunk;
  std::vector<uint32_t> maxima(chunks, 0);
  const uint16_t inf16 = from == Format::kBF16 ? 0x7F80 : 0x7C00;
  // maxima[c] = the largest finite magnitude's bits of chunk c.
  auto fill = [&](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) {
      const size_t lo = c * chunk, len = std::min(n, lo + chunk) - lo;
      maxima[c] =
          f32 ? MaxFiniteBits<uint32_t>(in.data() + lo * 4, len, 0x7F800000u)
              : MaxFiniteBits<uint16_t>(in.data() + lo * 2, len, inf16);
    }
    return absl::OkStatus();
  };
  absl::Status st =
      RunChunked(threads, chunks, 1, 1, fill, [&] { return fill(0, chunks); });
  if (!st.ok()) return st;
  uint32_t m = 0;
  for (uint32_t v : maxima) m = std::max(m, v);
  const float amax = scalar::DecodeToF32(from, m);
  return amax > 0.0f ? amax / 2688.0f : 1.0f;
}

std::tuple<U8Array, U8Array, float, std::string> Quantize(
    const std::string& format, const std::string& src, const InArray& x,
    size_t rows, size_t cols, const std::string& scale_mode,
    const std::string& layout, const std::string& scale_layout,
    std::optional<float> tensor_scale, const std::string& impl,
    size_t threads) {
  const MxShape shape = ShapeArg(format, layout, scale_layout, rows, cols);
  const Format from = ParseFormatArg(src, "src");
  MxOptions options;
  if (!scale_mode.empty()) {
    absl::StatusOr<ScaleMode> m = ParseScaleMode(scale_mode);
    if (!m.ok()) ThrowIfError(Prefixed("scale_mode", m.status()));
    options.scale_mode = *m;
  }
  options.layout = shape.layout;
  options.scale_layout = shape.scale_layout;
  options.tensor_scale = tensor_scale;
  const Impl im = ParseImplArg(impl);
  const absl::Span<const uint8_t> in = InBytes(x, "x");
  const size_t sb = static_cast<size_t>(Traits(from).storage_bytes);
  absl::StatusOr<MxTensor> t;
  {
    nb::gil_scoped_release release;
    const size_t row_units = std::max<size_t>(1, shape.cols_padded());
    const bool split = ResolveThreads(threads) > 1 &&
                       in.size() == rows * cols * sb && rows >= 2 &&
                       rows * row_units >= 2 * kMinUnitsPerChunk;
    if (!split) {
      t = QuantizeMx(shape.format, from, in, rows, cols, options, im);
    } else {
      // QuantizeMx by row ranges: the same tensor scale, zeroed buffers
      // (tcgen05 padding), every row written by exactly one chunk.
      MxTensor q;
      q.shape = shape;
      absl::Status st;
      if (shape.format == MxFormat::kNvfp4 && !options.tensor_scale) {
        absl::StatusOr<float> ts = TensorScale(from, in, im, threads);
        st = ts.status();
        if (ts.ok()) options.tensor_scale = *ts;
      }
      if (st.ok()) {
        q.scale_mode =
            options.scale_mode.value_or(DefaultScaleMode(shape.format));
        q.tensor_scale =
            shape.format == MxFormat::kNvfp4 ? *options.tensor_scale : 1.0f;
        q.elements.assign(shape.element_bytes(), 0);
        q.scales.assign(shape.scale_bytes(), 0);
        const size_t min_rows =
            std::max<size_t>(1, kMinUnitsPerChunk / row_units);
        st = RunChunked(
            threads, rows, 1, min_rows,
            [&](size_t b, size_t e) {
              return QuantizeMxRows(
                  shape.format, from,
                  in.subspan(b * cols * sb, (e - b) * cols * sb), rows, cols, b,
                  e, options, absl::MakeSpan(q.elements),
                  absl::MakeSpan(q.scales), im);
            },
            [&] {
              return QuantizeMxRows(shape.format, from, in, rows, cols, 0, rows,
                                    options, absl::MakeSpan(q.elements),
                                    absl::MakeSpan(q.scales), im);
            });
      }
      if (st.ok()) {
        t = std::move(q);
      } else {
        t = st;
      }
    }
  }
  ThrowIfError(t.status());
  const float ts = t->tensor_scale;
  const std::string mode(ScaleModeName(t->scale_mode));
  return {OwnedArray(std::move(t->elements)), OwnedArray(std::move(t->scales)),
          ts, mode};
}

MxTensorView ViewArg(const std::string& format, const std::string& layout,
                     const std::string& scale_layout, size_t rows, size_t cols,
                     const InArray& elements, const InArray& scales,
                     float tensor_scale) {
  MxTensorView v;
  v.shape = ShapeArg(format, layout, scale_layout, rows, cols);
  v.elements = InBytes(elements, "elements");
  v.scales = InBytes(scales, "scales");
  v.tensor_scale = tensor_scale;
  return v;
}

// The rows [b, e) of a quantized tensor as a tensor of their own (b a
// multiple of 128 for the tcgen05 scale layout, whose 128-row tiles are
// contiguous).
MxTensorView RowRange(const MxTensorView& v, size_t b, size_t e) {
  MxTensorView r = v;
  r.shape.rows = e - b;
  const size_t erb = v.shape.element_row_bytes();
  r.elements = v.elements.subspan(b * erb, (e - b) * erb);
  size_t scale_begin = b * v.shape.blocks_per_row();
  if (v.shape.scale_layout == ScaleLayout::kTcgen05) {
    scale_begin = b / 128 * ((v.shape.blocks_per_row() + 3) / 4) * 512;
  }
  r.scales = v.scales.subspan(scale_begin, r.shape.scale_bytes());
  return r;
}

void Dequantize(const std::string& format, const std::string& layout,
                const std::string& scale_layout, size_t rows, size_t cols,
                const InArray& elements, const InArray& scales,
                float tensor_scale, const std::string& to, const OutArray& out,
                const std::string& impl, size_t threads) {
  const MxTensorView v = ViewArg(format, layout, scale_layout, rows, cols,
                                 elements, scales, tensor_scale);
  const Format t = ParseFormatArg(to, "to");
  const Impl im = ParseImplArg(impl);
  const absl::Span<uint8_t> o = OutBytes(out, "out");
  const size_t tb = static_cast<size_t>(Traits(t).storage_bytes);
  const size_t grain = v.shape.scale_layout == ScaleLayout::kTcgen05 ? 128 : 1;
  const bool split = v.elements.size() == v.shape.element_bytes() &&
                     v.scales.size() == v.shape.scale_bytes() &&
                     o.size() == rows * cols * tb;
  absl::Status s;
  {
    nb::gil_scoped_release release;
    auto whole = [&] { return DequantizeMx(v, t, o, im); };
    if (!split) {
      s = whole();
    } else {
      const size_t min_rows = std::max<size_t>(1, kMinUnitsPerChunk / cols);
      s = RunChunked(
          threads, rows, grain, min_rows,
          [&](size_t b, size_t e) {
            return DequantizeMx(RowRange(v, b, e), t,
                                o.subspan(b * cols * tb, (e - b) * cols * tb),
                                im);
          },
          whole);
    }
  }
  ThrowIfError(s);
}

nb::dict ErrorStats(const std::string& src, const InArray& x,
                    const std::string& format, const std::string& layout,
                    const std::string& scale_layout, size_t rows, size_t cols,
                    const InArray& elements, const InArray& scales,
                    float tensor_scale) {
  const MxTensorView v = ViewArg(format, layout, scale_layout, rows, cols,
                                 elements, scales, tensor_scale);
  const Format from = ParseFormatArg(src, "src");
  const absl::Span<const uint8_t> in = InBytes(x, "x");
  absl::StatusOr<MxErrorStats> st;
  {
    nb::gil_scoped_release release;
    st = ComputeMxErrorStats(from, in, v);
  }
  ThrowIfError(st.status());
  nb::dict d;
  d["elements"] = st->elements;
  d["nan_inf_inputs"] = st->nan_inf_inputs;
  d["nan_outputs"] = st->nan_outputs;
  d["saturated"] = st->saturated;
  d["max_abs_error"] = st->max_abs_error;
  d["rmse"] = st->rmse;
  d["signal_power"] = st->signal_power;
  d["sqnr_db"] = st->sqnr_db;
  return d;
}

float Nvfp4TensorScale(const std::string& src, const InArray& x,
                       const std::string& impl, size_t threads) {
  const Format from = ParseFormatArg(src, "src");
  const Impl im = ParseImplArg(impl);
  const absl::Span<const uint8_t> in = InBytes(x, "x");
  absl::StatusOr<float> t;
  {
    nb::gil_scoped_release release;
    t = TensorScale(from, in, im, threads);
  }
  ThrowIfError(t.status());
  return *t;
}

void Relayout(const std::string& format, const std::string& layout,
              const std::string& scale_layout, size_t rows, size_t cols,
              const InArray& scales, const std::string& to,
              const OutArray& out) {
  const MxShape shape = ShapeArg(format, layout, scale_layout, rows, cols);
  absl::StatusOr<ScaleLayout> t = ParseScaleLayout(to);
  if (!t.ok()) ThrowIfError(Prefixed("to", t.status()));
  const absl::Span<const uint8_t> in = InBytes(scales, "scales");
  const absl::Span<uint8_t> o = OutBytes(out, "out");
  absl::Status s;
  {
    nb::gil_scoped_release release;
    s = RelayoutScales(shape, in, *t, o);
  }
  ThrowIfError(s);
}

}  // namespace

void BindMx(nb::module_& m) {
  using nb::arg;
  m.def("mx_format_names", &MxFormatNames);
  m.def("mx_format_info", &MxFormatInfo, arg("format"));
  m.def("mx_shape", &MxShapeInfo, arg("format"), arg("layout"),
        arg("scale_layout"), arg("rows"), arg("cols"));
  m.def("quantize", &Quantize, arg("format"), arg("src"), arg("x"), arg("rows"),
        arg("cols"), arg("scale_mode"), arg("layout"), arg("scale_layout"),
        arg("tensor_scale").none(), arg("impl"), arg("threads") = 1,
        "mxpack::QuantizeMx: (elements, scales, tensor_scale, scale_mode).");
  m.def("dequantize", &Dequantize, arg("format"), arg("layout"),
        arg("scale_layout"), arg("rows"), arg("cols"), arg("elements"),
        arg("scales"), arg("tensor_scale"), arg("to"), arg("out"), arg("impl"),
        arg("threads") = 1);
  m.def("error_stats", &ErrorStats, arg("src"), arg("x"), arg("format"),
        arg("layout"), arg("scale_layout"), arg("rows"), arg("cols"),
        arg("elements"), arg("scales"), arg("tensor_scale"));
  m.def("nvfp4_tensor_scale", &Nvfp4TensorScale, arg("src"), arg("x"),
        arg("impl"), arg("threads") = 1);
  m.def("relayout_scales", &Relayout, arg("format"), arg("layout"),
        arg("scale_layout"), arg("rows"), arg("cols"), arg("scales"), arg("to"),
        arg("out"));
}

}  // namespace mxpack::python
