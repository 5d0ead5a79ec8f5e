// quantize-model / dequantize-model over safetensors checkpoints: planning,
// chunked parallel (de)quantization with QuantizeMxRows / DequantizeMx, the
// metadata records and the reports.
#include "mxpack/model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "src/util/thread_pool.h"

#ifndef MXPACK_LIB_VERSION
#define MXPACK_LIB_VERSION "unknown"
#endif

namespace mxpack {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool IsFp8(MxFormat f) {
  return f == MxFormat::kMxfp8E4m3 || f == MxFormat::kMxfp8E5m2;
}
bool IsFp6(MxFormat f) {
  return f == MxFormat::kMxfp6E2m3 || f == MxFormat::kMxfp6E3m2;
}

// Chunks are whole multiples of 128 rows (one tcgen05 scale tile row), so a
// chunk's scales are a contiguous range in both scale layouts, and about
// kChunkBytes of input so that small and large tensors both balance.
constexpr uint64_t kChunkBytes = 2u << 20;
constexpr size_t kTileRows = 128;

size_t ChunkRows(size_t row_bytes) {
  const size_t tiles = std::max<uint64_t>(1, kChunkBytes / (kTileRows * row_bytes));
  return tiles * kTileRows;
}

// Rows [r0, r1) of a quantized tensor as a tensor of its own (r0 % 128 == 0).
MxTensorView ChunkView(const MxShape& shape, absl::Span<const uint8_t> elements,
                       absl::Span<const uint8_t> scales, float tensor_scale,
                       size_t r0, size_t r1) {
  MxTensorView v;
  v.shape = shape;
  v.shape.rows = r1 - r0;
  v.elements = elements.subspan(r0 * shape.element_row_bytes(), v.shape.element_bytes());
  v.scales = scales.subspan(shape.ScaleOffset(r0, 0), v.shape.scale_bytes());
  v.tensor_scale = tensor_scale;
  return v;
}

// Sums behind MxErrorStats, so chunk statistics combine exactly as if the
// tensor had been measured at once (up to the order of additions, which is
// fixed: chunks are combined in row order).
struct StatsSum {
  MxErrorStats s;
  double sum_x2 = 0, sum_e2 = 0;

  void Add(const MxErrorStats& c) {
    const double finite =
        static_cast<double>(c.elements - c.nan_inf_inputs - c.nan_outputs);
    s.elements += c.elements;
    s.nan_inf_inputs += c.nan_inf_inputs;
    s.nan_outputs += c.nan_outputs;
    s.saturated += c.saturated;
    s.max_abs_error = std::max(s.max_abs_error, c.max_abs_error);
    sum_x2 += c.signal_power * finite;
    sum_e2 += c.rmse * c.rmse * finite;
  }
  MxErrorStats Get() const {
    MxErrorStats r = s;
    const size_t finite = s.elements - s.nan_inf_inputs - s.nan_outputs;
    if (finite > 0) {
      r.rmse = std::sqrt(sum_e2 / static_cast<double>(finite));
      r.signal_power = sum_x2 / static_cast<double>(finite);
    }
    r.sqnr_db = sum_e2 == 0.0 ? std::numeric_limits<double>::infinity()
                              : 10.0 * std::log10(sum_x2 / sum_e2);
    return r;
  }
};

// Serializes progress callbacks.
class ProgressTracker {
 public:
  ProgressTracker(std::function<void(const ModelProgress&)> cb, size_t tensors_total,
                  uint64_t bytes_total, size_t tensors_done)
      : cb_(std::move(cb)), t0_(Clock::now()) {
    p_.tensors_total = tensors_total;
    p_.bytes_total = bytes_total;
    p_.tensors_done = tensors_done;
  }
  void Add(uint64_t bytes, bool tensor_finished) {
    if (!cb_) return;
    std::lock_guard<std::mutex> lock(mu_);
    p_.bytes_done += bytes;
    p_.tensors_done += tensor_finished ? 1 : 0;
    p_.seconds = Since(t0_);
    cb_(p_);
  }

 private:
  std::function<void(const ModelProgress&)> cb_;
  Clock::time_point t0_;
  std::mutex mu_;
  ModelProgress p_;
};

// One unit of parallel work: rows [r0, r1) of job `job`.
struct Chunk {
  size_t job;
  size_t r0, r1;
};

absl::Status FirstErrorStatus(const std::vector<absl::Status>& statuses) {
  for (const absl::Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string ShapeString(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<std::regex> CompileRegex(absl::string_view flag,
                                        const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: invalid regular expression '%s': %s", flag, pattern, e.what()));
  }
}

StDtype QdataDtype(MxFormat f) {
  if (f == MxFormat::kMxfp8E4m3) return StDtype::kF8E4M3;
  if (f == MxFormat::kMxfp8E5m2) return StDtype::kF8E5M2;
  return StDtype::kU8;
}

std::vector<uint64_t> ScalesShape(const MxShape& s) {
  if (s.scale_layout == ScaleLayout::kLinear) return {s.rows, s.blocks_per_row()};
  return {(s.rows + kTileRows - 1) / kTileRows, (s.blocks_per_row() + 3) / 4, 512};
}

std::string TensorRecord(const MxShape& s, ScaleMode mode, ModelLayout layout,
                         StDtype dtype, const std::string& name) {
  Json j = {{"format", std::string(MxFormatName(s.format))},
            {"layout", std::string(ModelLayoutName(layout))},
            {"element_layout", std::string(ElementLayoutName(s.layout))},
            {"scale_layout", std::string(ScaleLayoutName(s.scale_layout))},
            {"scale_mode", std::string(ScaleModeName(mode))},
            {"block_size", s.block()},
            {"dtype", std::string(StDtypeName(dtype))},
            {"shape", {s.rows, s.cols}},
            {"qdata", name + ".qdata"},
            {"scales", name + ".scales"},
            {"mxpack_version", MXPACK_LIB_VERSION}};
  if (s.format == MxFormat::kNvfp4) j["tscale"] = name + ".tscale";
  return j.dump();
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

absl::Span<uint8_t> NewBuffer(ModelOutput& out, size_t n, bool zero) {
  out.buffers.emplace_back(zero ? new uint8_t[n]() : new uint8_t[n]);
  return {out.buffers.back().get(), n};
}

std::string Bytes(uint64_t n) {
  if (n >= (uint64_t{1} << 30)) return absl::StrFormat("%.2f GiB", static_cast<double>(n) / 1073741824.0);
  if (n >= (uint64_t{1} << 20)) return absl::StrFormat("%.2f MiB", static_cast<double>(n) / 1048576.0);
  if (n >= (uint64_t{1} << 10)) return absl::StrFormat("%.1f KiB", static_cast<double>(n) / 1024.0);
  return absl::StrFormat("%d B", n);
}

}  // namespace

absl::string_view ModelLayoutName(ModelLayout l) {
  return l == ModelLayout::kDense ? "dense" : "tcgen05";
}

absl::StatusOr<ModelLayout> ParseModelLayout(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "dense") return ModelLayout::kDense;
  if (lower == "tcgen05") return ModelLayout::kTcgen05;
  return absl::InvalidArgumentError(absl::StrFormat(
      "layout: unknown model layout '%s'; expected dense or tcgen05", name));
}

ElementLayout ModelElementLayout(MxFormat f, ModelLayout l) {
  if (IsFp8(f)) return ElementLayout::kCodes;
  if (IsFp6(f)) {
    return l == ModelLayout::kDense ? ElementLayout::kDense6 : ElementLayout::kB6x16P32;
  }
  return l == ModelLayout::kDense ? ElementLayout::kDense4 : ElementLayout::kB4x16P64;
}

ScaleLayout ModelScaleLayout(ModelLayout l) {
  return l == ModelLayout::kDense ? ScaleLayout::kLinear : ScaleLayout::kTcgen05;
}

absl::StatusOr<ModelOutput> QuantizeModel(const SafetensorsView& in,
                                          const QuantizeModelOptions& options) {
  const auto t0 = Clock::now();
  absl::StatusOr<std::regex> include = CompileRegex("include", options.include);
  if (!include.ok()) return include.status();
  absl::StatusOr<std::regex> exclude = CompileRegex("exclude", options.exclude);
  if (!exclude.ok()) return exclude.status();
  const ScaleMode mode = options.scale_mode.value_or(DefaultScaleMode(options.format));

  // Plan: which tensors are quantized, their shapes and output buffers.
  struct Job {
    const StTensorInfo* in;
    Format from;
    MxShape shape;
    absl::Span<uint8_t> elements, scales;  // in out.buffers
    float tensor_scale = 1.0f;
    std::atomic<size_t> chunks_left{0};
  };
  ModelOutput out;
  ModelReport& rep = out.report;
  rep.operation = "quantize";
  rep.format = options.format;
  rep.scale_mode = mode;
  rep.layout = options.layout;
  rep.in_bytes = in.data.size();
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<int> job_of(in.tensors.size(), -1);
  std::set<std::string> names;
  for (const StTensorInfo& t : in.tensors) names.insert(t.name);
  uint64_t bytes_total = 0;
  for (size_t i = 0; i < in.tensors.size(); ++i) {
    const StTensorInfo& t = in.tensors[i];
    const bool float_dtype = t.dtype == StDtype::kF32 || t.dtype == StDtype::kF16 ||
                             t.dtype == StDtype::kBF16;
    if (!float_dtype || t.shape.size() != 2 || t.shape[0] == 0 || t.shape[1] == 0) {
      continue;
    }
    if (!options.include.empty() && !std::regex_search(t.name, *include)) continue;
    if (!options.exclude.empty() && std::regex_search(t.name, *exclude)) continue;
    auto job = std::make_unique<Job>();
    job->in = &t;
    job->from = *StDtypeFormat(t.dtype);
    job->shape.format = options.format;
    job->shape.layout = ModelElementLayout(options.format, options.layout);
    job->shape.scale_layout = ModelScaleLayout(options.layout);
    job->shape.rows = t.shape[0];
    job->shape.cols = t.shape[1];
    if (absl::Status s = CheckMxShape(job->shape); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor '%s': %s", t.name, s.message()));
    }
    for (const char* suffix : {".qdata", ".scales", ".tscale"}) {
      if (names.count(t.name + suffix)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "tensor '%s': output name '%s%s' is already a tensor of the input",
            t.name, t.name, suffix));
      }
    }
    // Element bytes are left uninitialized (QuantizeMxRows writes every byte
    // of its rows, padding included; the workers' first touch spreads the
    // page faults over the threads); scale padding must be zero.
    job->elements = NewBuffer(out, job->shape.element_bytes(), false);
    job->scales = NewBuffer(out, job->shape.scale_bytes(), true);
    bytes_total += t.num_bytes();
    job_of[i] = static_cast<int>(jobs.size());
    jobs.push_back(std::move(job));
  }

  internal::ThreadPool pool(options.threads);
  rep.threads = pool.size();
  const auto tq = Clock::now();

  // NVFP4: the tensor scale needs the whole tensor first.
  if (options.format == MxFormat::kNvfp4) {
    std::vector<absl::Status> st(jobs.size());
    pool.ParallelFor(jobs.size(), [&](size_t j) {
      absl::StatusOr<float> t = ComputeNvfp4TensorScale(
          jobs[j]->from, in.Bytes(*jobs[j]->in), options.impl);
      if (t.ok()) {
        jobs[j]->tensor_scale = *t;
      } else {
        st[j] = t.status();
      }
    });
    if (absl::Status s = FirstErrorStatus(st); !s.ok()) return s;
  }

  std::vector<Chunk> chunks;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const MxShape& s = jobs[j]->shape;
    const size_t step = ChunkRows(s.cols * Traits(jobs[j]->from).storage_bytes);
    for (size_t r0 = 0; r0 < s.rows; r0 += step) {
      chunks.push_back({j, r0, std::min(s.rows, r0 + step)});
      jobs[j]->chunks_left.fetch_add(1);
    }
  }
  ProgressTracker progress(options.progress, in.tensors.size(), bytes_total,
                           in.tensors.size() - jobs.size());
  std::vector<absl::Status> status(chunks.size());
  std::vector<MxErrorStats> chunk_stats(chunks.size());
  pool.ParallelFor(chunks.size(), [&](size_t c) {
    const Chunk& ch = chunks[c];
    Job& job = *jobs[ch.job];
    const MxShape& s = job.shape;
    const size_t row_bytes = s.cols * Traits(job.from).storage_bytes;
    const absl::Span<const uint8_t> src =
        in.Bytes(*job.in).subspan(ch.r0 * row_bytes, (ch.r1 - ch.r0) * row_bytes);
    MxOptions mo;
    mo.scale_mode = mode;
    mo.layout = s.layout;
    mo.scale_layout = s.scale_layout;
    if (options.format == MxFormat::kNvfp4) mo.tensor_scale = job.tensor_scale;
    const absl::Span<uint8_t> el = job.elements;
    const absl::Span<uint8_t> sc = job.scales;
    status[c] = QuantizeMxRows(options.format, job.from, src, s.rows, s.cols, ch.r0,
                               ch.r1, mo, el, sc,
                               options.impl);
    if (status[c].ok() && options.error_stats) {
      absl::StatusOr<MxErrorStats> es = ComputeMxErrorStats(
          job.from, src, ChunkView(s, el, sc, job.tensor_scale, ch.r0, ch.r1));
      if (es.ok()) {
        chunk_stats[c] = *es;
      } else {
        status[c] = es.status();
      }
    }
    progress.Add(src.size(), job.chunks_left.fetch_sub(1) == 1);
  });
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (!status[c].ok()) {
      return absl::Status(status[c].code(),
                          absl::StrFormat("tensor '%s': %s", jobs[chunks[c].job]->in->name,
                                          status[c].message()));
    }
  }
  rep.seconds = Since(tq);

  // Per-tensor statistics, combined in chunk (row) order.
  std::vector<StatsSum> sums(jobs.size());
  StatsSum total;
  for (size_t c = 0; c < chunks.size(); ++c) {
    sums[chunks[c].job].Add(chunk_stats[c]);
    total.Add(chunk_stats[c]);
  }

  // The output file: tensors in input order, quantized ones replaced.
  out.metadata = in.metadata;
  out.metadata[kModelVersionKey] = MXPACK_LIB_VERSION;
  for (size_t i = 0; i < in.tensors.size(); ++i) {
    const StTensorInfo& t = in.tensors[i];
    TensorReport tr;
    tr.name = t.name;
    tr.dtype = t.dtype;
    tr.shape = t.shape;
    tr.in_bytes = t.num_bytes();
    if (job_of[i] < 0) {
      out.tensors.push_back({t.name, t.dtype, t.shape, in.Bytes(t)});
      tr.out_bytes = t.num_bytes();
    } else {
      const Job& job = *jobs[static_cast<size_t>(job_of[i])];
      const MxShape& s = job.shape;
      out.tensors.push_back({t.name + ".qdata", QdataDtype(s.format),
                             {s.rows, s.element_row_bytes()},
                             job.elements});
      out.tensors.push_back(
          {t.name + ".scales", StDtype::kU8, ScalesShape(s), job.scales});
      tr.out_bytes = s.element_bytes() + s.scale_bytes();
      if (s.format == MxFormat::kNvfp4) {
        const absl::Span<uint8_t> ts = NewBuffer(out, 4, false);
        std::memcpy(ts.data(), &job.tensor_scale, 4);  // little-endian hosts
        out.tensors.push_back({t.name + ".tscale", StDtype::kF32, {1}, ts});
        tr.out_bytes += 4;
      }
      out.metadata[absl::StrCat(kModelTensorKeyPrefix, t.name)] =
          TensorRecord(s, mode, options.layout, t.dtype, t.name);
      tr.quantized = true;
      if (options.error_stats) tr.stats = sums[static_cast<size_t>(job_of[i])].Get();
      ++rep.quantized_tensors;
      rep.processed_bytes += t.num_bytes();
    }
    rep.out_bytes += tr.out_bytes;
    rep.tensors.push_back(std::move(tr));
  }
  if (options.error_stats && !jobs.empty()) rep.total = total.Get();
  rep.total_seconds = Since(t0);
  return out;
}

absl::StatusOr<std::vector<QuantizedTensorInfo>> ListQuantizedTensors(
    const SafetensorsView& in) {
  std::vector<QuantizedTensorInfo> list;
  for (const auto& entry : in.metadata) {
    // Named references, not structured bindings: the lambdas below capture
    // `key`, which C++17 (and clang 14) does not allow for bindings.
    const std::string& key = entry.first;
    const std::string& value = entry.second;
    if (!absl::StartsWith(key, kModelTensorKeyPrefix)) continue;
    QuantizedTensorInfo q;
    q.name = key.substr(std::strlen(kModelTensorKeyPrefix));
    auto bad = [&](const std::string& msg) {
      return absl::InvalidArgumentError(
          absl::StrFormat("metadata '%s': %s", key, msg));
    };
    Json j;
    try {
      j = Json::parse(value);
    } catch (const Json::exception& e) {
      return bad(absl::StrCat("not valid JSON: ", e.what()));
    }
    if (!j.is_object()) return bad("expected a JSON object");
    auto str = [&](const char* field) -> absl::StatusOr<std::string> {
      if (!j.contains(field) || !j[field].is_string()) {
        return bad(absl::StrFormat("missing string field \"%s\"", field));
      }
      return j[field].get<std::string>();
    };
    absl::StatusOr<std::string> f;
    f = str("format");
    if (!f.ok()) return f.status();
    absl::StatusOr<MxFormat> format = ParseMxFormat(*f);
    if (!format.ok()) return bad(std::string(format.status().message()));
    q.shape.format = *format;
    f = str("element_layout");
    if (!f.ok()) return f.status();
    absl::StatusOr<ElementLayout> el = ParseElementLayout(*f);
    if (!el.ok()) return bad(std::string(el.status().message()));
    q.shape.layout = *el;
    f = str("scale_layout");
    if (!f.ok()) return f.status();
    absl::StatusOr<ScaleLayout> sl = ParseScaleLayout(*f);
    if (!sl.ok()) return bad(std::string(sl.status().message()));
    q.shape.scale_layout = *sl;
    f = str("layout");
    if (!f.ok()) return f.status();
    absl::StatusOr<ModelLayout> ml = ParseModelLayout(*f);
    if (!ml.ok()) return bad(std::string(ml.status().message()));
    q.layout = *ml;
    f = str("scale_mode");
    if (!f.ok()) return f.status();
    absl::StatusOr<ScaleMode> sm = ParseScaleMode(*f);
    if (!sm.ok()) return bad(std::string(sm.status().message()));
    q.scale_mode = *sm;
    f = str("dtype");
    if (!f.ok()) return f.status();
    absl::StatusOr<StDtype> dt = ParseStDtype(*f);
    if (!dt.ok()) return bad(std::string(dt.status().message()));
    if (*dt != StDtype::kF32 && *dt != StDtype::kF16 && *dt != StDtype::kBF16) {
      return bad(absl::StrFormat("dtype: expected F32, F16 or BF16, got %s", *f));
    }
    q.dtype = *dt;
    if (!j.contains("shape") || !j["shape"].is_array() || j["shape"].size() != 2 ||
        !j["shape"][0].is_number_unsigned() || !j["shape"][1].is_number_unsigned()) {
      return bad("shape: expected [rows, cols] of non-negative integers");
    }
    q.shape.rows = j["shape"][0].get<size_t>();
    q.shape.cols = j["shape"][1].get<size_t>();
    if (absl::Status s = CheckMxShape(q.shape); !s.ok()) {
      return bad(std::string(s.message()));
    }
    for (auto [field, dst] : {std::pair<const char*, std::string*>{"qdata", &q.qdata},
                              {"scales", &q.scales}}) {
      f = str(field);
      if (!f.ok()) return f.status();
      *dst = *f;
    }
    if (q.shape.format == MxFormat::kNvfp4) {
      f = str("tscale");
      if (!f.ok()) return f.status();
      q.tscale = *f;
    }
    if (j.contains("mxpack_version") && j["mxpack_version"].is_string()) {
      q.version = j["mxpack_version"].get<std::string>();
    }
    // The named tensors must exist with the sizes the shape implies.
    auto check = [&](const std::string& name, uint64_t bytes,
                     absl::string_view what) -> absl::Status {
      const StTensorInfo* t = in.Find(name);
      if (t == nullptr) {
        return bad(absl::StrFormat("%s tensor '%s' is missing", what, name));
      }
      if (t->num_bytes() != bytes) {
        return bad(absl::StrFormat("%s tensor '%s': expected %d bytes, got %d", what,
                                   name, bytes, t->num_bytes()));
      }
      if (what == "tscale" && t->dtype != StDtype::kF32) {
        return bad(absl::StrFormat("tscale tensor '%s': expected dtype F32, got %s",
                                   name, StDtypeName(t->dtype)));
      }
      return absl::OkStatus();
    };
    if (absl::Status s = check(q.qdata, q.shape.element_bytes(), "qdata"); !s.ok()) {
      return s;
    }
    if (absl::Status s = check(q.scales, q.shape.scale_bytes(), "scales"); !s.ok()) {
      return s;
    }
    if (!q.tscale.empty()) {
      if (absl::Status s = check(q.tscale, 4, "tscale"); !s.ok()) return s;
    }
    list.push_back(std::move(q));
  }
  return list;
}

absl::StatusOr<MxTensorView> QuantizedTensorView(const SafetensorsView& in,
                                                 const QuantizedTensorInfo& info) {
  const StTensorInfo* qd = in.Find(info.qdata);
  const StTensorInfo* sc = in.Find(info.scales);
  if (qd == nullptr || sc == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s': qdata '%s' or scales '%s' missing", info.name, info.qdata,
        info.scales));
  }
  MxTensorView v;
  v.shape = info.shape;
  v.elements = in.Bytes(*qd);
  v.scales = in.Bytes(*sc);
  if (!info.tscale.empty()) {
    const StTensorInfo* ts = in.Find(info.tscale);
    if (ts == nullptr || ts->num_bytes() != 4) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor '%s': tscale '%s' missing", info.name, info.tscale));
    }
    std::memcpy(&v.tensor_scale, in.Bytes(*ts).data(), 4);
  }
  return v;
}

absl::StatusOr<ModelOutput> DequantizeModel(const SafetensorsView& in,
                                            const DequantizeModelOptions& options) {
  const auto t0 = Clock::now();
  if (options.to.has_value() && *options.to != Format::kF32 &&
      *options.to != Format::kBF16 && *options.to != Format::kF16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "to: expected f32, bf16 or f16, got %s", FormatName(*options.to)));
  }
  absl::StatusOr<std::vector<QuantizedTensorInfo>> list = ListQuantizedTensors(in);
  if (!list.ok()) return list.status();

  struct Job {
    const QuantizedTensorInfo* info;
    MxTensorView view;
    StDtype dtype;
    Format to;
    absl::Span<uint8_t> out;  // in out.buffers
    std::atomic<size_t> chunks_left{0};
  };
  ModelOutput out;
  ModelReport& rep = out.report;
  rep.operation = "dequantize";
  rep.in_bytes = in.data.size();
  std::vector<std::unique_ptr<Job>> jobs;
  std::map<std::string, size_t> job_of_qdata;
  std::set<std::string> consumed;
  for (const QuantizedTensorInfo& q : *list) {
    if (in.Find(q.name) != nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s' is both quantized (metadata) and present as a tensor", q.name));
    }
    for (const std::string* n : {&q.qdata, &q.scales, &q.tscale}) {
      if (n->empty()) continue;
      if (!consumed.insert(*n).second) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "tensor '%s' is claimed by two quantization records", *n));
      }
    }
    auto job = std::make_unique<Job>();
    job->info = &q;
    absl::StatusOr<MxTensorView> v = QuantizedTensorView(in, q);
    if (!v.ok()) return v.status();
    job->view = *v;
    if (options.to.has_value()) {
      job->to = *options.to;
      job->dtype = *options.to == Format::kF32    ? StDtype::kF32
                   : *options.to == Format::kBF16 ? StDtype::kBF16
                                                  : StDtype::kF16;
    } else {
      job->dtype = q.dtype;
      job->to = *StDtypeFormat(q.dtype);
    }
    // Uninitialized: DequantizeMx writes every byte.
    job->out = NewBuffer(out, q.shape.rows * q.shape.cols * StDtypeSize(job->dtype), false);
    job_of_qdata[q.qdata] = jobs.size();
    jobs.push_back(std::move(job));
  }

  internal::ThreadPool pool(options.threads);
  rep.threads = pool.size();
  const auto tq = Clock::now();
  std::vector<Chunk> chunks;
  uint64_t bytes_total = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const MxShape& s = jobs[j]->view.shape;
    bytes_total += s.element_bytes() + s.scale_bytes();
    const size_t step = ChunkRows(s.cols * StDtypeSize(jobs[j]->dtype));
    for (size_t r0 = 0; r0 < s.rows; r0 += step) {
      chunks.push_back({j, r0, std::min(s.rows, r0 + step)});
      jobs[j]->chunks_left.fetch_add(1);
    }
  }
  ProgressTracker progress(options.progress, in.tensors.size() - consumed.size() +
                                                 jobs.size(),
                           bytes_total, in.tensors.size() - consumed.size());
  std::vector<absl::Status> status(chunks.size());
  pool.ParallelFor(chunks.size(), [&](size_t c) {
    const Chunk& ch = chunks[c];
    Job& job = *jobs[ch.job];
    const MxTensorView& v = job.view;
    const MxTensorView cv =
        ChunkView(v.shape, v.elements, v.scales, v.tensor_scale, ch.r0, ch.r1);
    const size_t row_bytes = v.shape.cols * StDtypeSize(job.dtype);
    status[c] = DequantizeMx(
        cv, job.to,
        job.out.subspan(ch.r0 * row_bytes, (ch.r1 - ch.r0) * row_bytes),
        options.impl);
    progress.Add(cv.elements.size() + cv.scales.size(),
                 job.chunks_left.fetch_sub(1) == 1);
  });
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (!status[c].ok()) {
      return absl::Status(status[c].code(),
                          absl::StrFormat("tensor '%s': %s",
                                          jobs[chunks[c].job]->info->name,
                                          status[c].message()));
    }
  }
  rep.seconds = Since(tq);

  for (const auto& [k, v] : in.metadata) {
    if (!absl::StartsWith(k, "mxpack.")) out.metadata.emplace(k, v);
  }
  for (const StTensorInfo& t : in.tensors) {
    auto it = job_of_qdata.find(t.name);
    if (it != job_of_qdata.end()) {
      const Job& job = *jobs[it->second];
      const MxShape& s = job.view.shape;
      out.tensors.push_back({job.info->name, job.dtype, {s.rows, s.cols},
                             job.out});
      TensorReport tr;
      tr.name = job.info->name;
      tr.quantized = true;
      tr.dtype = job.dtype;
      tr.shape = {s.rows, s.cols};
      tr.in_bytes = s.element_bytes() + s.scale_bytes() + (job.info->tscale.empty() ? 0 : 4);
      tr.out_bytes = job.out.size();
      rep.processed_bytes += tr.in_bytes;
      rep.out_bytes += tr.out_bytes;
      ++rep.quantized_tensors;
      rep.tensors.push_back(std::move(tr));
      continue;
    }
    if (consumed.count(t.name)) continue;
    out.tensors.push_back({t.name, t.dtype, t.shape, in.Bytes(t)});
    TensorReport tr;
    tr.name = t.name;
    tr.dtype = t.dtype;
    tr.shape = t.shape;
    tr.in_bytes = tr.out_bytes = t.num_bytes();
    rep.out_bytes += tr.out_bytes;
    rep.tensors.push_back(std::move(tr));
  }
  rep.total_seconds = Since(t0);
  return out;
}

namespace {

absl::StatusOr<ModelReport> RunFile(
    const std::string& in_path, const std::string& out_path,
    const std::function<absl::StatusOr<ModelOutput>(const SafetensorsView&)>& run) {
  const auto t0 = Clock::now();
  absl::StatusOr<std::unique_ptr<MappedFile>> file = MappedFile::Open(in_path);
  if (!file.ok()) return file.status();
  absl::StatusOr<SafetensorsView> view = ParseSafetensors((*file)->bytes());
  if (!view.ok()) {
    return absl::Status(view.status().code(),
                        absl::StrCat(in_path, ": ", view.status().message()));
  }
  absl::StatusOr<ModelOutput> out = run(*view);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat(in_path, ": ", out.status().message()));
  }
  if (absl::Status s = WriteSafetensors(out_path, out->tensors, out->metadata);
      !s.ok()) {
    return s;
  }
  out->report.total_seconds = Since(t0);
  return std::move(out->report);
}

}  // namespace

absl::StatusOr<ModelReport> QuantizeModelFile(const std::string& in_path,
                                              const std::string& out_path,
                                              const QuantizeModelOptions& options) {
  return RunFile(in_path, out_path,
                 [&](const SafetensorsView& v) { return QuantizeModel(v, options); });
}

absl::StatusOr<ModelReport> DequantizeModelFile(const std::string& in_path,
                                                const std::string& out_path,
                                                const DequantizeModelOptions& options) {
  return RunFile(in_path, out_path,
                 [&](const SafetensorsView& v) { return DequantizeModel(v, options); });
}

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
  return j.dump(2) + "\n";
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
  // Metadata values from a caller-built view need not be UTF-8 (a record may
  // end in a NUL and arbitrary bytes, which Json::parse ignores): replace
  // invalid bytes by U+FFFD instead of throwing.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace mxpack
