// Text and JSON renderings of quantize-model / dequantize-model reports of
// one file and of `mxpack inspect` for one safetensors file.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxpack/model.h"
#include "nlohmann/json.hpp"

namespace mxpack {
namespace {

using Json = nlohmann::json;

std::string ShapeString(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

Json StatsJson(const MxErrorStats& s) {
  return {{"elements", s.elements},
          {"nan_inf_inputs", s.nan_inf_inputs},
          {"nan_outputs", s.nan_outputs},
          {"saturated", s.saturated},
          {"max_abs_error", s.max_abs_error},
          {"rmse", s.rmse},
          {"signal_power", s.signal_power},
          {"sqnr_db", std::isfinite(s.sqnr_db) ? Json(s.sqnr_db) : Json(nullptr)}};
}

std::string Bytes(uint64_t n) {
  if (n >= (uint64_t{1} << 30)) return absl::StrFormat("%.2f GiB", static_cast<double>(n) / 1073741824.0);
  if (n >= (uint64_t{1} << 20)) return absl::StrFormat("%.2f MiB", static_cast<double>(n) / 1048576.0);
  if (n >= (uint64_t{1} << 10)) return absl::StrFormat("%.1f KiB", static_cast<double>(n) / 1024.0);
  return absl::StrFormat("%d B", n);
}

}  // namespace

std::string ModelReportText(const ModelReport& r) {
  std::string s;
  const bool q = r.operation == "quantize";
  if (q) {
    absl::StrAppendFormat(
        &s, "quantize-model: %s, layout %s (elements %s, scales %s), scale mode %s, "
            "%d threads\n",
        MxFormatName(r.format), ModelLayoutName(r.layout),
        ElementLayoutName(ModelElementLayout(r.format, r.layout)),
        ScaleLayoutName(ModelScaleLayout(r.layout)), ScaleModeName(r.scale_mode),
        r.threads);
  } else {
    absl::StrAppendFormat(&s, "dequantize-model: %d threads\n", r.threads);
  }
  size_t w = 6;
  for (const TensorReport& t : r.tensors) w = std::max(w, t.name.size());
  absl::StrAppendFormat(&s, "%-*s %-14s %-5s %-9s %10s %10s %8s %11s %10s %9s\n",
                        static_cast<int>(w), "tensor", "shape", "dtype", "action",
                        "in_bytes", "out_bytes", "sqnr_dB", "max_abs_err", "rmse",
                        "saturated");
  for (const TensorReport& t : r.tensors) {
    absl::StrAppendFormat(&s, "%-*s %-14s %-5s %-9s %10d %10d",
                          static_cast<int>(w), t.name, ShapeString(t.shape),
                          StDtypeName(t.dtype),
                          t.quantized ? (q ? std::string(MxFormatName(r.format))
                                           : std::string("dequant"))
                                      : std::string("copied"),
                          t.in_bytes, t.out_bytes);
    if (t.stats.has_value()) {
      absl::StrAppendFormat(&s, " %8.2f %11.4g %10.4g %9d", t.stats->sqnr_db,
                            t.stats->max_abs_error, t.stats->rmse, t.stats->saturated);
    }
    s += "\n";
  }
  const size_t copied = r.tensors.size() - r.quantized_tensors;
  absl::StrAppendFormat(&s, "total: %d %s, %d copied; data %s -> %s (%.2fx)",
                        r.quantized_tensors, q ? "quantized" : "dequantized", copied,
                        Bytes(r.in_bytes), Bytes(r.out_bytes),
                        r.out_bytes > 0 ? static_cast<double>(r.in_bytes) /
                                              static_cast<double>(r.out_bytes)
                                        : 0.0);
  if (r.total.has_value()) {
    absl::StrAppendFormat(&s, "; SQNR %.2f dB, max abs err %.4g, saturated %d",
                          r.total->sqnr_db, r.total->max_abs_error,
                          r.total->saturated);
    if (r.total->nan_inf_inputs > 0) {
      absl::StrAppendFormat(&s, ", NaN/Inf inputs %d", r.total->nan_inf_inputs);
    }
  } else if (q && r.quantized_tensors > 0) {
    s += "; no error statistics (--error-stats)";
  }
  absl::StrAppendFormat(&s, "\nspeed: %s in %.3f s = %.1f MiB/s (%.3f s with file I/O)\n",
                        Bytes(r.processed_bytes), r.seconds,
                        r.processed_bytes_per_second() / 1048576.0, r.total_seconds);
  return s;
}

std::string ModelReportJson(const ModelReport& r) {
  Json j;
  j["operation"] = r.operation;
  if (r.operation == "quantize") {
    j["format"] = std::string(MxFormatName(r.format));
    j["layout"] = std::string(ModelLayoutName(r.layout));
    j["element_layout"] =
        std::string(ElementLayoutName(ModelElementLayout(r.format, r.layout)));
    j["scale_layout"] = std::string(ScaleLayoutName(ModelScaleLayout(r.layout)));
    j["scale_mode"] = std::string(ScaleModeName(r.scale_mode));
  }
  j["threads"] = r.threads;
  Json tensors = Json::array();
  for (const TensorReport& t : r.tensors) {
    Json e = {{"name", t.name},
              {"dtype", std::string(StDtypeName(t.dtype))},
              {"shape", t.shape},
              {"quantized", t.quantized},
              {"in_bytes", t.in_bytes},
              {"out_bytes", t.out_bytes}};
    if (t.stats.has_value()) e["stats"] = StatsJson(*t.stats);
    tensors.push_back(std::move(e));
  }
  j["tensors"] = std::move(tensors);
  j["quantized_tensors"] = r.quantized_tensors;
  j["in_bytes"] = r.in_bytes;
  j["out_bytes"] = r.out_bytes;
  j["processed_bytes"] = r.processed_bytes;
  if (r.total.has_value()) j["total"] = StatsJson(*r.total);
  j["seconds"] = r.seconds;
  j["total_seconds"] = r.total_seconds;
  j["bytes_per_second"] = r.processed_bytes_per_second();
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

absl::StatusOr<std::string> InspectText(const SafetensorsView& in) {
  absl::StatusOr<std::vector<QuantizedTensorInfo>> list = ListQuantizedTensors(in);
  if (!list.ok()) return list.status();
  std::string s;
  absl::StrAppendFormat(&s, "%d tensors, %d data bytes, %d metadata entries\n",
                        in.tensors.size(), in.data.size(), in.metadata.size());
  size_t w = 6;
  for (const StTensorInfo& t : in.tensors) w = std::max(w, t.name.size());
  absl::StrAppendFormat(&s, "%-*s %-8s %-20s %12s\n", static_cast<int>(w), "tensor",
                        "dtype", "shape", "bytes");
  for (const StTensorInfo& t : in.tensors) {
    absl::StrAppendFormat(&s, "%-*s %-8s %-20s %12d\n", static_cast<int>(w), t.name,
                          StDtypeName(t.dtype), ShapeString(t.shape), t.num_bytes());
  }
  bool header = false;
  for (const auto& [k, v] : in.metadata) {
    if (absl::StartsWith(k, kModelTensorKeyPrefix)) continue;
    if (!header) s += "metadata:\n";
    header = true;
    absl::StrAppendFormat(&s, "  %s = %s\n", k, v);
  }
  if (!list->empty()) s += "quantized tensors:\n";
  for (const QuantizedTensorInfo& q : *list) {
    absl::StrAppendFormat(
        &s, "  %s: %s [%d, %d] -> %s, layout %s (elements %s, scales %s), "
            "scale mode %s, block %d; %s + %s%s%s\n",
        q.name, StDtypeName(q.dtype), q.shape.rows, q.shape.cols,
        MxFormatName(q.shape.format), ModelLayoutName(q.layout),
        ElementLayoutName(q.shape.layout), ScaleLayoutName(q.shape.scale_layout),
        ScaleModeName(q.scale_mode), q.shape.block(), q.qdata, q.scales,
        q.tscale.empty() ? "" : " + ", q.tscale);
  }
  return s;
}

absl::StatusOr<std::string> InspectJson(const SafetensorsView& in) {
  absl::StatusOr<std::vector<QuantizedTensorInfo>> list = ListQuantizedTensors(in);
  if (!list.ok()) return list.status();
  Json j;
  Json tensors = Json::array();
  for (const StTensorInfo& t : in.tensors) {
    tensors.push_back({{"name", t.name},
                       {"dtype", std::string(StDtypeName(t.dtype))},
                       {"shape", t.shape},
                       {"data_offsets", {t.begin, t.end}}});
  }
  j["tensors"] = std::move(tensors);
  j["metadata"] = in.metadata;
  Json quantized = Json::array();
  for (const QuantizedTensorInfo& q : *list) {
    Json e = {{"name", q.name},
              {"format", std::string(MxFormatName(q.shape.format))},
              {"layout", std::string(ModelLayoutName(q.layout))},
              {"element_layout", std::string(ElementLayoutName(q.shape.layout))},
              {"scale_layout", std::string(ScaleLayoutName(q.shape.scale_layout))},
              {"scale_mode", std::string(ScaleModeName(q.scale_mode))},
              {"dtype", std::string(StDtypeName(q.dtype))},
              {"shape", {q.shape.rows, q.shape.cols}},
              {"qdata", q.qdata},
              {"scales", q.scales}};
    if (!q.tscale.empty()) {
      e["tscale"] = q.tscale;
      absl::StatusOr<MxTensorView> v = QuantizedTensorView(in, q);
      if (v.ok()) e["tensor_scale"] = v->tensor_scale;
    }
    quantized.push_back(std::move(e));
  }
  j["quantized"] = std::move(quantized);
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace mxpack
