// MX / NVFP4 block quantization (mxpack/mx.h) for the Python module:
// QuantizeMx's owned buffers become numpy arrays without a copy (a capsule
// owns the std::vector), DequantizeMx and the error statistics read numpy
// buffers in place; kernels run with the GIL released.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxpack/format.h"
#include "mxpack/mx.h"
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
  for (MxFormat f : {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2,
                     MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2,
                     MxFormat::kMxfp4, MxFormat::kNvfp4}) {
    names.emplace_back(MxFormatName(f));
  }
  return names;
}

nb::dict MxShapeInfo(const std::string& format, const std::string& layout,
                     const std::string& scale_layout, size_t rows, size_t cols) {
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

std::tuple<U8Array, U8Array, float, std::string> Quantize(
    const std::string& format, const std::string& src, const InArray& x,
    size_t rows, size_t cols, const std::string& scale_mode,
    const std::string& layout, const std::string& scale_layout,
    std::optional<float> tensor_scale, const std::string& impl) {
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
  absl::StatusOr<MxTensor> t;
  {
    nb::gil_scoped_release release;
    t = QuantizeMx(shape.format, from, in, rows, cols, options, im);
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

void Dequantize(const std::string& format, const std::string& layout,
                const std::string& scale_layout, size_t rows, size_t cols,
                const InArray& elements, const InArray& scales,
                float tensor_scale, const std::string& to, const OutArray& out,
                const std::string& impl) {
  const MxTensorView v = ViewArg(format, layout, scale_layout, rows, cols,
                                 elements, scales, tensor_scale);
  const Format t = ParseFormatArg(to, "to");
  const Impl im = ParseImplArg(impl);
  const absl::Span<uint8_t> o = OutBytes(out, "out");
  absl::Status s;
  {
    nb::gil_scoped_release release;
    s = DequantizeMx(v, t, o, im);
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
                       const std::string& impl) {
  const Format from = ParseFormatArg(src, "src");
  const Impl im = ParseImplArg(impl);
  const absl::Span<const uint8_t> in = InBytes(x, "x");
  absl::StatusOr<float> t;
  {
    nb::gil_scoped_release release;
    t = ComputeNvfp4TensorScale(from, in, im);
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
        arg("tensor_scale").none(), arg("impl"),
        "mxpack::QuantizeMx: (elements, scales, tensor_scale, scale_mode).");
  m.def("dequantize", &Dequantize, arg("format"), arg("layout"),
        arg("scale_layout"), arg("rows"), arg("cols"), arg("elements"),
        arg("scales"), arg("tensor_scale"), arg("to"), arg("out"), arg("impl"));
  m.def("error_stats", &ErrorStats, arg("src"), arg("x"), arg("format"),
        arg("layout"), arg("scale_layout"), arg("rows"), arg("cols"),
        arg("elements"), arg("scales"), arg("tensor_scale"));
  m.def("nvfp4_tensor_scale", &Nvfp4TensorScale, arg("src"), arg("x"),
        arg("impl"));
  m.def("relayout_scales", &Relayout, arg("format"), arg("layout"),
        arg("scale_layout"), arg("rows"), arg("cols"), arg("scales"), arg("to"),
        arg("out"));
}

}  // namespace mxpack::python
