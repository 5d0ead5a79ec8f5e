// Text and JSON reports of QuantizeCheckpoint / DequantizeCheckpoint and
// `mxpack inspect` of a file or a model directory.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxpack/model.h"
#include "src/checkpoint/checkpoint_io.h"
#include "src/checkpoint/scheme.h"

namespace mxpack {
namespace {

using internal::CheckpointSource;
using internal::Json;
using internal::Open;
using internal::OpenShard;

std::string ShapeString(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status Prefix(const std::string& what, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

}  // namespace

namespace {

absl::StatusOr<Json> InspectJsonValue(const std::string& path) {
  absl::StatusOr<CheckpointSource> src = internal::OpenCheckpointSource(path);
  if (!src.ok()) return src.status();
  Json j;
  Json shards = Json::array();
  for (const std::string& shard : src->shards) {
    absl::StatusOr<OpenShard> s = Open(*src, shard);
    if (!s.ok()) return s.status();
    absl::StatusOr<std::string> text = InspectJson(s->view);
    if (!text.ok()) return Prefix(src->ShardPath(shard), text.status());
    Json e = Json::parse(*text);
    e["shard"] = shard;
    Json ct = Json::array();
    for (const internal::FoundQuantized& q : internal::FindQuantized(s->view)) {
      ct.push_back({{"name", q.name},
                    {"scheme", q.scheme},
                    {"format", q.format},
                    {"shape", q.shape},
                    {"tensors", q.parts}});
    }
    e["serving_schemes"] = std::move(ct);
    shards.push_back(std::move(e));
  }
  j["shards"] = std::move(shards);
  if (!src->dir.empty()) {
    absl::StatusOr<std::string> cfg = internal::ReadTextFile(src->dir + "/config.json");
    if (cfg.ok()) {
      try {
        Json c = Json::parse(*cfg);
        if (c.is_object() && c.contains("quantization_config")) {
          j["quantization_config"] = c["quantization_config"];
        }
      } catch (const Json::exception&) {
      }
    }
  }
  return j;
}

}  // namespace

absl::StatusOr<std::string> InspectCheckpointJson(const std::string& path) {
  absl::StatusOr<Json> j = InspectJsonValue(path);
  if (!j.ok()) return j.status();
  return j->dump(2) + "\n";
}

absl::StatusOr<std::string> InspectCheckpointText(const std::string& path) {
  absl::StatusOr<CheckpointSource> src = internal::OpenCheckpointSource(path);
  if (!src.ok()) return src.status();
  std::string out;
  for (const std::string& shard : src->shards) {
    absl::StatusOr<OpenShard> s = Open(*src, shard);
    if (!s.ok()) return s.status();
    absl::StatusOr<std::string> text = InspectText(s->view);
    if (!text.ok()) return Prefix(src->ShardPath(shard), text.status());
    absl::StrAppend(&out, src->ShardPath(shard), ": ", *text);
    const std::vector<internal::FoundQuantized> ct =
        internal::FindQuantized(s->view);
    if (!ct.empty()) out += "quantized tensors of serving schemes:\n";
    for (const internal::FoundQuantized& q : ct) {
      absl::StrAppendFormat(&out, "  %s: %s %s %s <- %s\n", q.name, q.scheme, q.format,
                            ShapeString(q.shape), absl::StrJoin(q.parts, " + "));
    }
  }
  if (!src->dir.empty()) {
    absl::StatusOr<Json> j = InspectJsonValue(path);
    if (j.ok() && j->contains("quantization_config")) {
      absl::StrAppend(&out, "config.json quantization_config: ",
                      (*j)["quantization_config"].dump(-1, ' ', false, Json::error_handler_t::replace), "\n");
    }
    if (!src->other_files.empty()) {
      absl::StrAppend(&out, "other files: ", absl::StrJoin(src->other_files, ", "), "\n");
    }
  }
  return out;
}

std::string CheckpointReportText(const CheckpointReport& r) {
  std::string s;
  const bool q = r.operation == "quantize";
  if (q) {
    absl::StrAppendFormat(&s, "quantize-model%s: scheme %s, format %s; %d input shard%s -> %d output shard%s\n",
                          r.dry_run ? " --dry-run" : "", r.scheme, MxFormatName(r.format),
                          r.input_shards.size(), r.input_shards.size() == 1 ? "" : "s",
                          r.output_shards.size(), r.output_shards.size() == 1 ? "" : "s");
  } else {
    absl::StrAppendFormat(&s, "dequantize-model: %d shard%s\n", r.input_shards.size(),
                          r.input_shards.size() == 1 ? "" : "s");
  }
  size_t w = 6;
  for (const PlannedTensor& t : r.tensors) w = std::max(w, t.name.size());
  absl::StrAppendFormat(&s, "%-*s %-16s %-5s %-9s %s\n", static_cast<int>(w), "tensor",
                        "shape", "dtype", "action", "why");
  for (const PlannedTensor& t : r.tensors) {
    const std::string action =
        t.quantized ? (q ? std::string(MxFormatName(r.format)) : std::string("dequant"))
                    : std::string("copied");
    absl::StrAppendFormat(&s, "%-*s %-16s %-5s %-9s %s\n", static_cast<int>(w), t.name,
                          ShapeString(t.shape), StDtypeName(t.dtype), action, t.reason);
    for (const PlannedOutput& o : t.outputs) {
      absl::StrAppendFormat(&s, "%-*s   -> %s %s %s, %d bytes (%s)\n",
                            static_cast<int>(w), "", o.name, StDtypeName(o.dtype),
                            ShapeString(o.shape), o.bytes, t.out_shard);
    }
  }
  absl::StrAppendFormat(&s, "total: %d %s, %d copied; tensor bytes %d -> %d",
                        r.quantized_tensors, q ? "quantized" : "dequantized",
                        r.tensors.size() - r.quantized_tensors, r.in_bytes, r.out_bytes);
  if (!r.copied_files.empty()) {
    absl::StrAppendFormat(&s, "; files copied: %s", absl::StrJoin(r.copied_files, ", "));
  }
  if (!r.dry_run) absl::StrAppendFormat(&s, "; %.3f s", r.seconds);
  s += "\n";
  return s;
}

std::string CheckpointReportJson(const CheckpointReport& r) {
  Json j;
  j["operation"] = r.operation;
  if (r.operation == "quantize") {
    j["scheme"] = r.scheme;
    j["format"] = std::string(MxFormatName(r.format));
    j["dry_run"] = r.dry_run;
  }
  Json tensors = Json::array();
  for (const PlannedTensor& t : r.tensors) {
    Json e = {{"name", t.name},         {"shard", t.shard},
              {"dtype", std::string(StDtypeName(t.dtype))},
              {"shape", t.shape},       {"bytes", t.bytes},
              {"quantized", t.quantized}, {"reason", t.reason},
              {"out_shard", t.out_shard}};
    if (!t.group.empty()) e["group"] = t.group;
    Json outs = Json::array();
    for (const PlannedOutput& o : t.outputs) {
      outs.push_back({{"name", o.name},
                      {"dtype", std::string(StDtypeName(o.dtype))},
                      {"shape", o.shape},
                      {"bytes", o.bytes}});
    }
    if (!outs.empty()) e["outputs"] = std::move(outs);
    tensors.push_back(std::move(e));
  }
  j["tensors"] = std::move(tensors);
  j["input_shards"] = r.input_shards;
  j["output_shards"] = r.output_shards;
  j["copied_files"] = r.copied_files;
  j["quantized_tensors"] = r.quantized_tensors;
  j["in_bytes"] = r.in_bytes;
  j["out_bytes"] = r.out_bytes;
  j["threads"] = r.threads;
  j["seconds"] = r.seconds;
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace mxpack
