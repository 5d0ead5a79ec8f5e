// Whole-checkpoint quantization (mxpack/model.h) for the Python module:
// deployable checkpoints of every export scheme (export_checkpoint) and the
// single-file mxpack records (quantize_model), with the GIL released for the
// whole run. Reports come back as JSON text (the Python layer parses it).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "mxpack/format.h"
#include "mxpack/model.h"
#include "mxpack/mx.h"
#include "python/src/bind_util.h"

namespace mxpack::python {
namespace {

std::string QuantizeModelJson(const std::string& in_path,
                              const std::string& out_path,
                              const std::string& format,
                              const std::string& scale_mode,
                              const std::string& layout,
                              const std::string& include,
                              const std::string& exclude, size_t threads,
                              bool error_stats, const std::string& impl) {
  QuantizeModelOptions o;
  absl::StatusOr<MxFormat> f = ParseMxFormat(format);
  if (!f.ok()) ThrowIfError(Prefixed("format", f.status()));
  o.format = *f;
  if (!scale_mode.empty()) {
    absl::StatusOr<ScaleMode> m = ParseScaleMode(scale_mode);
    if (!m.ok()) ThrowIfError(Prefixed("scale_mode", m.status()));
    o.scale_mode = *m;
  }
  absl::StatusOr<ModelLayout> l = ParseModelLayout(layout);
  if (!l.ok()) ThrowIfError(Prefixed("layout", l.status()));
  o.layout = *l;
  o.include = include;
  o.exclude = exclude;
  o.threads = threads;
  o.error_stats = error_stats;
  o.impl = ParseImplArg(impl);
  absl::StatusOr<ModelReport> r;
  {
    nb::gil_scoped_release release;
    r = QuantizeModelFile(in_path, out_path, o);
  }
  ThrowIfError(r.status());
  return ModelReportJson(*r);
}

// The options of dequantize_model and dequantize_checkpoint.
DequantizeModelOptions DequantizeOptions(const std::string& to, size_t threads,
                                         const std::string& impl) {
  DequantizeModelOptions o;
  if (!to.empty()) o.to = ParseFormatArg(to, "to");
  o.threads = threads;
  o.impl = ParseImplArg(impl);
  return o;
}

std::string DequantizeModelJson(const std::string& in_path,
                                const std::string& out_path,
                                const std::string& to, size_t threads,
                                const std::string& impl) {
  const DequantizeModelOptions o = DequantizeOptions(to, threads, impl);
  absl::StatusOr<ModelReport> r;
  {
    nb::gil_scoped_release release;
    r = DequantizeModelFile(in_path, out_path, o);
  }
  ThrowIfError(r.status());
  return ModelReportJson(*r);
}

// QuantizeCheckpoint: a file or model directory in, a deployable checkpoint
// of `scheme` out (as `mxpack quantize-model`).
std::string ExportCheckpointJson(const std::string& in_path,
                                 const std::string& out_path,
                                 const std::string& scheme,
                                 const std::string& format,
                                 const std::string& include,
                                 const std::string& ignore, bool dry_run,
                                 uint64_t max_shard_bytes, size_t threads,
                                 const std::string& impl) {
  CheckpointOptions o;
  if (!scheme.empty()) o.scheme = scheme;
  if (!format.empty()) {
    absl::StatusOr<MxFormat> f = ParseMxFormat(format);
    if (!f.ok()) ThrowIfError(Prefixed("format", f.status()));
    o.format = *f;
  }
  o.include = include;
  o.ignore = ignore;
  o.dry_run = dry_run;
  if (max_shard_bytes > 0) o.max_shard_bytes = max_shard_bytes;
  o.threads = threads;
  o.impl = ParseImplArg(impl);
  absl::StatusOr<CheckpointReport> r;
  {
    nb::gil_scoped_release release;
    r = QuantizeCheckpoint(in_path, out_path, o);
  }
  ThrowIfError(r.status());
  return CheckpointReportJson(*r);
}

// DequantizeCheckpoint: any scheme back to a plain checkpoint.
std::string DequantizeCheckpointJson(const std::string& in_path,
                                     const std::string& out_path,
                                     const std::string& to, size_t threads,
                                     const std::string& impl) {
  const DequantizeModelOptions o = DequantizeOptions(to, threads, impl);
  absl::StatusOr<CheckpointReport> r;
  {
    nb::gil_scoped_release release;
    r = DequantizeCheckpoint(in_path, out_path, o);
  }
  ThrowIfError(r.status());
  return CheckpointReportJson(*r);
}

}  // namespace

void BindModel(nb::module_& m) {
  using nb::arg;
  m.def("quantize_model", &QuantizeModelJson, arg("in_path"), arg("out_path"),
        arg("format"), arg("scale_mode"), arg("layout"), arg("include"),
        arg("exclude"), arg("threads"), arg("error_stats"), arg("impl"),
        "mxpack::QuantizeModelFile; returns ModelReportJson.");
  m.def("dequantize_model", &DequantizeModelJson, arg("in_path"),
        arg("out_path"), arg("to"), arg("threads"), arg("impl"),
        "mxpack::DequantizeModelFile; returns ModelReportJson.");
  m.def("export_checkpoint", &ExportCheckpointJson, arg("in_path"),
        arg("out_path"), arg("scheme"), arg("format"), arg("include"),
        arg("ignore"), arg("dry_run"), arg("max_shard_bytes"), arg("threads"),
        arg("impl"), "mxpack::QuantizeCheckpoint; returns CheckpointReportJson.");
  m.def("dequantize_checkpoint", &DequantizeCheckpointJson, arg("in_path"),
        arg("out_path"), arg("to"), arg("threads"), arg("impl"),
        "mxpack::DequantizeCheckpoint; returns CheckpointReportJson.");
}

}  // namespace mxpack::python
