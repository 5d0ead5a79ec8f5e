// The mxpack export scheme: QuantizeMx's exact arithmetic (docs/semantics.md
// section 5) in NAME.qdata / NAME.scales / NAME.tscale with a
// "mxpack.tensor.NAME" metadata record per tensor (include/mxpack/model.h).
// Every MX format and NVFP4, dense (default) or tcgen05 layouts.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/checkpoint/scheme.h"

namespace mxpack::internal {
namespace {

MxShape ShapeOf(const WeightShape& s, MxFormat f, ModelLayout layout) {
  MxShape m;
  m.format = f;
  m.layout = ModelElementLayout(f, layout);
  m.scale_layout = ModelScaleLayout(layout);
  m.rows = s.experts * s.rows;
  m.cols = s.cols;
  return m;
}

class Mxpack final : public Scheme {
 public:
  absl::string_view name() const override { return "mxpack"; }
  std::vector<MxFormat> formats() const override {
    return {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2, MxFormat::kMxfp6E2m3,
            MxFormat::kMxfp6E3m2, MxFormat::kMxfp4,     MxFormat::kNvfp4};
  }
  MxFormat default_format() const override { return MxFormat::kMxfp4; }
  std::string Unsupported(const WeightShape&, MxFormat) const override {
    return "";  // rows are padded to whole blocks
  }

  std::vector<PlannedOutput> Outputs(const StTensorInfo& t, const WeightShape& s,
                                     MxFormat f,
                                     const CheckpointOptions& o) const override {
    const MxShape m = ShapeOf(s, f, o.layout);
    std::vector<PlannedOutput> out;
    const StDtype qd = f == MxFormat::kMxfp8E4m3   ? StDtype::kF8E4M3
                       : f == MxFormat::kMxfp8E5m2 ? StDtype::kF8E5M2
                                                   : StDtype::kU8;
    out.push_back({t.name + ".qdata", qd, {m.rows, m.element_row_bytes()},
                   m.element_bytes()});
    std::vector<uint64_t> sshape =
        m.scale_layout == ScaleLayout::kLinear
            ? std::vector<uint64_t>{m.rows, m.blocks_per_row()}
            : std::vector<uint64_t>{(m.rows + 127) / 128, (m.blocks_per_row() + 3) / 4,
                                    512};
    out.push_back({t.name + ".scales", StDtype::kU8, sshape, m.scale_bytes()});
    if (f == MxFormat::kNvfp4) out.push_back({t.name + ".tscale", StDtype::kF32, {1}, 4});
    return out;
  }

  bool NeedsGroupAmax(MxFormat) const override { return false; }
  bool QuantizeAddsMetadata() const override { return true; }  // the records

  absl::Status Quantize(const SchemeJob& job, ThreadPool& pool,
                        absl::Span<const absl::Span<uint8_t>> outs,
                        std::map<std::string, std::string>& metadata) const override {
    // The in-memory engine on a one-tensor view.
    StTensorInfo one = *job.info;
    one.begin = 0;
    one.end = job.bytes.size();
    SafetensorsView view;
    view.tensors.push_back(one);
    view.data = job.bytes;
    QuantizeModelOptions o;
    o.format = job.format;
    o.scale_mode = job.options->scale_mode;
    o.layout = job.options->layout;
    o.threads = pool.size();
    o.impl = job.options->impl;
    o.select = [](const StTensorInfo&) { return true; };
    absl::StatusOr<ModelOutput> q = QuantizeModel(view, o);
    if (!q.ok()) return q.status();
    if (q->tensors.size() != outs.size()) {
      return absl::InternalError("mxpack scheme: unexpected output tensors");
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (q->tensors[i].data.size() != outs[i].size()) {
        return absl::InternalError("mxpack scheme: unexpected output size");
      }
      std::memcpy(outs[i].data(), q->tensors[i].data.data(), outs[i].size());
    }
    for (const auto& [k, v] : q->metadata) metadata[k] = v;
    return absl::OkStatus();
  }

  Json QuantizationConfig(MxFormat, const std::vector<std::string>&) const override {
    return nullptr;  // no serving stack reads the native records
  }
};

}  // namespace

const Scheme* MxpackScheme() {
  static const Mxpack* s = new Mxpack();
  return s;
}

}  // namespace mxpack::internal
