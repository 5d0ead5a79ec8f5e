// The in-memory engine of the mxpack scheme: one safetensors file's tensors
// quantized with QuantizeMxRows / dequantized with DequantizeMx in chunks on a
// thread pool, with their metadata records (records.cc parses them; reports
// are rendered by model_report.cc).
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
#include "src/checkpoint/record_dequantize.h"
#include "src/mx/nvfp4_tensor_amax.h"
#include "src/util/fp_env.h"
#include "src/util/huge_buffer.h"
#include "src/util/output_file.h"
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
                         StDtype dtype, const std::string& name,
                         const std::vector<uint64_t>& tensor_shape) {
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
  // A 3-D tensor is quantized as rows = its first two dimensions.
  if (tensor_shape.size() != 2) j["tensor_shape"] = tensor_shape;
  return j.dump();
}

// Large buffers are backed by huge pages where the system offers them
// (src/util/huge_buffer.h): the workers' first writes then fault them in
// 2 MiB at a time.
absl::Span<uint8_t> NewBuffer(ModelOutput& out, size_t n, bool zero) {
  out.buffers.push_back(internal::NewOutputBuffer(n, zero));
  return {out.buffers.back().get(), n};
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

static absl::StatusOr<ModelOutput> QuantizeModelInDefaultEnv(
    const SafetensorsView& in, const QuantizeModelOptions& options) {
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
    const size_t rank = options.select ? 3 : 2;  // highest rank accepted
    if (!float_dtype || t.shape.size() < 2 || t.shape.size() > rank ||
        t.num_elements() == 0) {
      continue;
    }
    if (options.select) {
      if (!options.select(t)) continue;
    } else {
      if (!options.include.empty() && !std::regex_search(t.name, *include)) continue;
      if (!options.exclude.empty() && std::regex_search(t.name, *exclude)) continue;
    }
    auto job = std::make_unique<Job>();
    job->in = &t;
    job->from = *StDtypeFormat(t.dtype);
    job->shape.format = options.format;
    job->shape.layout = ModelElementLayout(options.format, options.layout);
    job->shape.scale_layout = ModelScaleLayout(options.layout);
    job->shape.rows = t.shape.size() == 3 ? t.shape[0] * t.shape[1] : t.shape[0];
    job->shape.cols = t.shape.back();
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

  // NVFP4: the tensor scale needs the whole tensor first: the finite amax
  // of every tensor's kChunkBytes parts (all tensors' parts spread over the
  // pool), combined by max per tensor, so as of the whole tensor.
  if (options.format == MxFormat::kNvfp4) {
    struct Part {
      size_t job;
      size_t begin, end;  // byte range of the tensor's data
    };
    std::vector<Part> parts;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const size_t bytes = jobs[j]->in->num_bytes();
      const size_t value_bytes = Traits(jobs[j]->from).storage_bytes;
      const size_t step = kChunkBytes / value_bytes * value_bytes;
      for (size_t b = 0; b < bytes; b += step) parts.push_back({j, b, std::min(bytes, b + step)});
    }
    std::vector<uint32_t> part_amax(parts.size());
    pool.ParallelFor(parts.size(), [&](size_t k) {
      const Part& p = parts[k];
      const Job& job = *jobs[p.job];
      part_amax[k] = internal::MaxFiniteMagnitudeBits(
          job.from, in.Bytes(*job.in).data() + p.begin, p.end - p.begin, options.impl);
    });
    std::vector<uint32_t> amax(jobs.size(), 0);
    for (size_t k = 0; k < parts.size(); ++k) {
      amax[parts[k].job] = std::max(amax[parts[k].job], part_amax[k]);
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
      jobs[j]->tensor_scale = internal::Nvfp4TensorScaleFromAmaxBits(jobs[j]->from, amax[j]);
    }
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
          TensorRecord(s, mode, options.layout, t.dtype, t.name, t.shape);
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

absl::StatusOr<ModelOutput> QuantizeModel(const SafetensorsView& in,
                                          const QuantizeModelOptions& options) {
  return internal::InDefaultFpEnv(
      [&] { return QuantizeModelInDefaultEnv(in, options); });
}

namespace internal {

absl::StatusOr<RecordPlan> PlanRecordDequantize(
    const SafetensorsView& in, const std::optional<Format>& to) {
  absl::StatusOr<std::vector<QuantizedTensorInfo>> list = ListQuantizedTensors(in);
  if (!list.ok()) return list.status();
  RecordPlan plan;
  plan.records = *std::move(list);
  for (const QuantizedTensorInfo& q : plan.records) {
    if (in.Find(q.name) != nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s' is both quantized (metadata) and present as a tensor", q.name));
    }
    for (const std::string* n : {&q.qdata, &q.scales, &q.tscale}) {
      if (n->empty()) continue;
      if (!plan.consumed.insert(*n).second) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "tensor '%s' is claimed by two quantization records", *n));
      }
    }
    RecordJob job;
    job.info = &q;
    absl::StatusOr<MxTensorView> v = QuantizedTensorView(in, q);
    if (!v.ok()) return v.status();
    job.view = *v;
    if (to.has_value()) {
      job.to = *to;
      job.dtype = DequantizedDtype(*to);
    } else {
      job.dtype = q.dtype;
      job.to = *StDtypeFormat(q.dtype);
    }
    plan.job_of_qdata[q.qdata] = plan.jobs.size();
    plan.jobs.push_back(job);
  }
  return plan;
}

absl::Status DequantizeRecordRows(const RecordJob& job, size_t r0, size_t r1,
                                  absl::Span<uint8_t> out, Impl impl) {
  const MxTensorView& v = job.view;
  return DequantizeMx(
      ChunkView(v.shape, v.elements, v.scales, v.tensor_scale, r0, r1), job.to,
      out, impl);
}

size_t RecordChunkRows(const RecordJob& job) {
  return ChunkRows(job.row_bytes());
}

}  // namespace internal

static absl::StatusOr<ModelOutput> DequantizeModelInDefaultEnv(
    const SafetensorsView& in, const DequantizeModelOptions& options) {
  const auto t0 = Clock::now();
  if (options.to.has_value() && *options.to != Format::kF32 &&
      *options.to != Format::kBF16 && *options.to != Format::kF16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "to: expected f32, bf16 or f16, got %s", FormatName(*options.to)));
  }
  absl::StatusOr<internal::RecordPlan> plan =
      internal::PlanRecordDequantize(in, options.to);
  if (!plan.ok()) return plan.status();
  const std::vector<internal::RecordJob>& jobs = plan->jobs;
  const std::set<std::string>& consumed = plan->consumed;
  ModelOutput out;
  ModelReport& rep = out.report;
  rep.operation = "dequantize";
  rep.in_bytes = in.data.size();
  // One uninitialized buffer for every output (DequantizeMx writes every
  // byte), each tensor 64-byte aligned in it: huge pages then cover all but
  // its two ends, where per-tensor buffers would leave up to 4 MiB per
  // tensor to 4 KiB pages.
  constexpr size_t kAlign = 64;
  size_t out_total = 0;
  for (const internal::RecordJob& job : jobs) {
    out_total += (job.out_bytes() + kAlign - 1) / kAlign * kAlign;
  }
  const absl::Span<uint8_t> all = NewBuffer(out, out_total, false);
  std::vector<absl::Span<uint8_t>> job_out;
  size_t out_offset = 0;
  for (const internal::RecordJob& job : jobs) {
    job_out.push_back(all.subspan(out_offset, job.out_bytes()));
    out_offset += (job.out_bytes() + kAlign - 1) / kAlign * kAlign;
  }

  internal::ThreadPool pool(options.threads);
  rep.threads = pool.size();
  const auto tq = Clock::now();
  std::vector<Chunk> chunks;
  std::vector<std::atomic<size_t>> chunks_left(jobs.size());
  uint64_t bytes_total = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const MxShape& s = jobs[j].view.shape;
    bytes_total += s.element_bytes() + s.scale_bytes();
    const size_t step = internal::RecordChunkRows(jobs[j]);
    for (size_t r0 = 0; r0 < s.rows; r0 += step) {
      chunks.push_back({j, r0, std::min(s.rows, r0 + step)});
      chunks_left[j].fetch_add(1);
    }
  }
  ProgressTracker progress(options.progress, in.tensors.size() - consumed.size() +
                                                 jobs.size(),
                           bytes_total, in.tensors.size() - consumed.size());
  std::vector<absl::Status> status(chunks.size());
  pool.ParallelFor(chunks.size(), [&](size_t c) {
    const Chunk& ch = chunks[c];
    const internal::RecordJob& job = jobs[ch.job];
    const size_t row_bytes = job.row_bytes();
    status[c] = internal::DequantizeRecordRows(
        job, ch.r0, ch.r1,
        job_out[ch.job].subspan(ch.r0 * row_bytes, (ch.r1 - ch.r0) * row_bytes),
        options.impl);
    MxShape cs = job.view.shape;  // the chunk's (ChunkView)
    cs.rows = ch.r1 - ch.r0;
    progress.Add(cs.element_bytes() + cs.scale_bytes(),
                 chunks_left[ch.job].fetch_sub(1) == 1);
  });
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (!status[c].ok()) {
      return absl::Status(
          status[c].code(),
          absl::StrFormat("tensor '%s': %s", jobs[chunks[c].job].info->name,
                          status[c].message()));
    }
  }
  rep.seconds = Since(tq);

  for (const auto& [k, v] : in.metadata) {
    if (!absl::StartsWith(k, "mxpack.")) out.metadata.emplace(k, v);
  }
  for (const StTensorInfo& t : in.tensors) {
    auto it = plan->job_of_qdata.find(t.name);
    if (it != plan->job_of_qdata.end()) {
      const internal::RecordJob& job = jobs[it->second];
      const MxShape& s = job.view.shape;
      out.tensors.push_back({job.info->name, job.dtype, job.info->tensor_shape,
                             job_out[it->second]});
      TensorReport tr;
      tr.name = job.info->name;
      tr.quantized = true;
      tr.dtype = job.dtype;
      tr.shape = job.info->tensor_shape;
      tr.in_bytes = s.element_bytes() + s.scale_bytes() + (job.info->tscale.empty() ? 0 : 4);
      tr.out_bytes = job.out_bytes();
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

absl::StatusOr<ModelOutput> DequantizeModel(
    const SafetensorsView& in, const DequantizeModelOptions& options) {
  return internal::InDefaultFpEnv(
      [&] { return DequantizeModelInDefaultEnv(in, options); });
}

namespace {

absl::StatusOr<ModelReport> RunFile(
    const std::string& in_path, const std::string& out_path,
    const std::function<absl::StatusOr<ModelOutput>(const SafetensorsView&)>& run) {
  const auto t0 = Clock::now();
  if (absl::Status s = CheckOutputFiles({out_path}, {in_path}); !s.ok()) return s;
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

static absl::StatusOr<ModelReport> QuantizeModelFileInDefaultEnv(
    const std::string& in_path, const std::string& out_path,
    const QuantizeModelOptions& options) {
  return RunFile(in_path, out_path, [&](const SafetensorsView& v) {
    return QuantizeModel(v, options);
  });
}

absl::StatusOr<ModelReport> QuantizeModelFile(const std::string& in_path,
                                              const std::string& out_path,
                                              const QuantizeModelOptions& options) {
  return internal::InDefaultFpEnv([&] {
    return QuantizeModelFileInDefaultEnv(in_path, out_path, options);
  });
}

static absl::StatusOr<ModelReport> DequantizeModelFileInDefaultEnv(
    const std::string& in_path, const std::string& out_path,
    const DequantizeModelOptions& options) {
  return RunFile(in_path, out_path, [&](const SafetensorsView& v) {
    return DequantizeModel(v, options);
  });
}

absl::StatusOr<ModelReport> DequantizeModelFile(const std::string& in_path,
                                                const std::string& out_path,
                                                const DequantizeModelOptions& options) {
  return internal::InDefaultFpEnv([&] {
    return DequantizeModelFileInDefaultEnv(in_path, out_path, options);
  });
}

}  // namespace mxpack
