// quantize-model / dequantize-model over whole checkpoints: plan
// (selection, scheme outputs, output shards), then one tensor at a time (the
// amax of a fused NVFP4 group before its first tensor): quantize, hand its
// bytes to a writer thread that writes the output shards into the staged
// output; copy the directory's other files, commit.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxpack/convert.h"
#include "mxpack/model.h"
#include "mxpack/scalar.h"
#include "src/checkpoint/checkpoint_io.h"
#include "src/checkpoint/record_dequantize.h"
#include "src/checkpoint/scheme.h"
#include "src/checkpoint/selection.h"
#include "src/checkpoint/stack_blocks.h"
#include "src/util/fp_env.h"
#include "src/util/huge_buffer.h"
#include "src/util/output_file.h"
#include "src/util/thread_pool.h"

namespace mxpack {
namespace {

using internal::CheckpointSource;
using internal::Json;
using internal::Scheme;
using internal::StagedOutput;
using internal::WeightShape;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A tensor's place in a layout before its bytes exist: its size alone
// (SafetensorsHeader and SafetensorsDataOffsets read nothing else).
absl::Span<const uint8_t> SizeOnly(uint64_t n) { return {nullptr, n}; }

// The bytes to skip from `p` so that the next byte sits at file position
// `file_pos` modulo the direct-write block (OutputFile::EnableDirectWrites):
// the writer then sends the whole blocks of what is placed there straight to
// the device.
size_t DirectWriteSkip(const uint8_t* p, uint64_t file_pos) {
  return (file_pos - reinterpret_cast<uintptr_t>(p)) % OutputFile::kDirectAlign;
}

absl::Status Prefix(const std::string& what, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

using internal::Open;
using internal::OpenShard;

bool IsFileOutput(const std::string& out) { return absl::EndsWith(out, ".safetensors"); }

// Refuses, before any work, an output that is or holds the input, or that is
// not a regular file (a `.safetensors` output) or a new / empty directory
// (docs/cli.md, "Output files").
absl::Status CheckOutput(const std::string& in_path, const std::string& out_path) {
  if (IsFileOutput(out_path)) return CheckOutputFiles({out_path}, {in_path});
  return CheckOutputDirectory(out_path, {in_path}, /*overwrite=*/false);
}

std::string ShardName(size_t i, size_t n) {
  if (n == 1) return internal::kSingleFile;
  return absl::StrFormat("model-%05d-of-%05d.safetensors", i + 1, n);
}

struct Plan {
  CheckpointSource src;
  std::vector<OpenShard> opened;  // src.shards, mapped
  const Scheme* scheme = nullptr;
  MxFormat format = MxFormat::kNvfp4;
  std::vector<PlannedTensor> tensors;
  std::vector<WeightShape> shapes;
  std::vector<size_t> shard_end;  // tensors of input shard i end here
  std::vector<std::string> out_shards;
  std::vector<size_t> out_end;  // tensors of output shard k end here
  std::vector<std::string> ignored;
  uint64_t out_bytes = 0;
};

absl::StatusOr<Plan> MakePlan(const std::string& in_path, const std::string& out_path,
                              const CheckpointOptions& o) {
  Plan p;
  absl::StatusOr<const Scheme*> scheme = internal::FindScheme(o.scheme);
  if (!scheme.ok()) return scheme.status();
  p.scheme = *scheme;
  p.format = o.format.value_or(p.scheme->default_format());
  const std::vector<MxFormat> formats = p.scheme->formats();
  if (std::find(formats.begin(), formats.end(), p.format) == formats.end()) {
    std::vector<std::string> with;
    for (const Scheme* s : internal::Schemes()) {
      const std::vector<MxFormat> f = s->formats();
      if (std::find(f.begin(), f.end(), p.format) != f.end()) with.emplace_back(s->name());
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "format: scheme '%s' has no %s; schemes with %s: %s", p.scheme->name(),
        MxFormatName(p.format), MxFormatName(p.format),
        with.empty() ? "none" : absl::StrJoin(with, ", ")));
  }
  absl::StatusOr<internal::Selector> selector =
      internal::Selector::Create(o.include, o.ignore);
  if (!selector.ok()) return selector.status();
  absl::StatusOr<CheckpointSource> src = internal::OpenCheckpointSource(in_path);
  if (!src.ok()) return src.status();
  p.src = *std::move(src);

  std::set<std::string> ignored;
  size_t indexed = 0;
  for (const std::string& shard : p.src.shards) {
    absl::StatusOr<OpenShard> s = Open(p.src, shard);
    if (!s.ok()) return s.status();
    p.opened.push_back(*s);
    for (const StTensorInfo& t : s->view.tensors) {
      if (!p.src.weight_map.empty()) {
        auto it = p.src.weight_map.find(t.name);
        if (it == p.src.weight_map.end() || it->second != shard) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: tensor '%s' is in shard '%s' but the index lists %s", p.src.dir,
              t.name, shard,
              it == p.src.weight_map.end() ? "no shard for it"
                                           : absl::StrCat("'", it->second, "'")));
        }
        ++indexed;
      }
      PlannedTensor pt;
      pt.name = t.name;
      pt.shard = shard;
      pt.dtype = t.dtype;
      pt.shape = t.shape;
      pt.bytes = t.num_bytes();
      internal::Decision d = selector->Decide(t);
      pt.reason = d.reason;
      if (d.quantize) {
        const std::string why = p.scheme->Unsupported(d.shape, p.format);
        if (!why.empty()) {
          pt.reason = absl::StrCat(d.reason, ", but ", why);
          if (t.shape.size() == 2 && absl::EndsWith(t.name, ".weight")) {
            ignored.insert(t.name.substr(0, t.name.size() - 7));
          }
        } else {
          pt.quantized = true;
          pt.outputs = p.scheme->Outputs(t, d.shape, p.format, o);
          if (p.scheme->NeedsGroupAmax(p.format)) {
            pt.group = internal::FusedGroup(t.name);
          }
        }
      } else if (std::string m = internal::IgnoredModule(t); !m.empty()) {
        ignored.insert(m);
      }
      p.tensors.push_back(std::move(pt));
      p.shapes.push_back(d.shape);
    }
    p.shard_end.push_back(p.tensors.size());
  }
  if (!p.src.weight_map.empty() && indexed != p.src.weight_map.size()) {
    for (const auto& [name, shard] : p.src.weight_map) {
      bool found = false;
      for (const PlannedTensor& t : p.tensors) found = found || t.name == name;
      if (!found) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: the index lists tensor '%s' in '%s', which does not hold it",
            p.src.dir, name, shard));
      }
    }
  }
  p.ignored.assign(ignored.begin(), ignored.end());

  // Output names must be unique across the checkpoint.
  std::map<std::string, std::string> owner;
  size_t quantized = 0;
  for (const PlannedTensor& t : p.tensors) {
    std::vector<std::string> names;
    if (t.quantized) {
      ++quantized;
      for (const PlannedOutput& po : t.outputs) names.push_back(po.name);
    } else {
      names.push_back(t.name);
    }
    for (const std::string& n : names) {
      auto [it, fresh] = owner.emplace(n, t.name);
      if (!fresh) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "output tensor '%s' (from '%s') collides with the output of '%s'", n,
            t.name, it->second));
      }
    }
  }
  if (quantized == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "no tensor selected for quantization among %d tensors (see the reasons with "
        "--dry-run; --include=REGEX selects more)",
        p.tensors.size()));
  }

  // Output shards: tensors in input order, a new shard when the next tensor
  // (all outputs of a quantized tensor stay together) would exceed the limit.
  uint64_t cur = 0;
  std::vector<uint64_t> unit(p.tensors.size());
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const PlannedTensor& t = p.tensors[i];
    unit[i] = t.bytes;
    if (t.quantized) {
      unit[i] = 0;
      for (const PlannedOutput& po : t.outputs) unit[i] += po.bytes;
    }
    if (cur > 0 && cur + unit[i] > o.max_shard_bytes) {
      p.out_end.push_back(i);
      cur = 0;
    }
    cur += unit[i];
    p.out_bytes += unit[i];
  }
  p.out_end.push_back(p.tensors.size());
  if (IsFileOutput(out_path) && p.out_end.size() > 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the output needs %d shards of at most %d bytes; give a directory as the "
        "output",
        out_path, p.out_end.size(), o.max_shard_bytes));
  }
  size_t k = 0;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    while (i >= p.out_end[k]) ++k;
    p.tensors[i].out_shard =
        IsFileOutput(out_path) ? out_path : ShardName(k, p.out_end.size());
  }
  for (size_t s = 0; s < p.out_end.size(); ++s) {
    p.out_shards.push_back(IsFileOutput(out_path) ? out_path
                                                  : ShardName(s, p.out_end.size()));
  }
  return p;
}

// Per expert largest |x| of a selected tensor; NaN or Inf is an error (no
// scheme's global scale can represent it). Pieces of about 1 MiB of input
// run on the pool, so a single 2-D tensor uses every thread too.
absl::StatusOr<std::vector<float>> ExpertAmax(const PlannedTensor& t,
                                              const WeightShape& s,
                                              absl::Span<const uint8_t> bytes,
                                              internal::ThreadPool& pool, Impl impl) {
  const Format from = *StDtypeFormat(t.dtype);
  const size_t elem = from == Format::kF32 ? 4 : 2;
  const size_t per_expert = s.rows * s.cols;
  const size_t piece = size_t{1} << 18;
  const size_t pieces = std::max<size_t>(1, (per_expert + piece - 1) / piece);
  std::vector<uint32_t> bits(s.experts * pieces, 0);
  pool.ParallelFor(bits.size(), [&](size_t k) {
    const size_t e = k / pieces, first = (k % pieces) * piece;
    const size_t n = std::min(piece, per_expert - std::min(per_expert, first));
    bits[k] = internal::AbsMaxBits(from, bytes.data() + (e * per_expert + first) * elem, n,
                                   impl);
  });
  std::vector<float> amax(s.experts, 0.0f);
  for (size_t e = 0; e < s.experts; ++e) {
    const uint32_t m = *std::max_element(bits.begin() + e * pieces, bits.begin() + (e + 1) * pieces);
    if (m >= 0x7F800000u) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s' holds NaN or Inf, which an NVFP4 global scale cannot "
          "represent; --ignore it",
          t.name));
    }
    std::memcpy(&amax[e], &m, 4);
  }
  return amax;
}

absl::Status WriteConfig(const CheckpointSource& src, const std::string& out_dir,
                         const std::string& rel, const Json* quantization_config) {
  absl::StatusOr<std::string> text = internal::ReadTextFile(src.dir + "/" + rel);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::string> out =
      internal::RewriteConfigJson(*text, quantization_config, src.dir + "/" + rel);
  if (!out.ok()) return out.status();
  return internal::WriteTextFile(out_dir + "/" + rel, *out);
}

absl::Status WriteIndex(const std::string& out_dir,
                        const std::map<std::string, std::string>& weight_map,
                        uint64_t total) {
  Json j = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  return internal::WriteTextFile(out_dir + "/" + internal::kIndexFile,
                                 j.dump(2) + "\n");
}

// The input shard holding tensor i.
size_t ShardOf(const Plan& p, size_t i) {
  return static_cast<size_t>(
      std::upper_bound(p.shard_end.begin(), p.shard_end.end(), i) -
      p.shard_end.begin());
}

// The __metadata__ entries that output shard k takes from the input shards:
// those of every input shard from the one holding the last tensor of shard
// k - 1 (the first input shard for k = 0) to the one holding shard k's last
// tensor, an earlier shard's value winning.
std::map<std::string, std::string> InputMetadata(const Plan& p, size_t k) {
  const size_t first = k == 0 ? 0 : ShardOf(p, p.out_end[k - 1] - 1);
  const size_t last = ShardOf(p, p.out_end[k] - 1);
  std::map<std::string, std::string> m;
  for (size_t si = first; si <= last; ++si) {
    for (const auto& [key, value] : p.opened[si].view.metadata) m.emplace(key, value);
  }
  return m;
}

// Outputs of one quantized tensor share one buffer, each at a multiple of
// 64 bytes.
constexpr size_t kOutputAlign = 64;

// An output's room in that buffer: its bytes rounded up to kOutputAlign.
size_t PaddedBytes(const PlannedOutput& po) {
  return (po.bytes + kOutputAlign - 1) / kOutputAlign * kOutputAlign;
}

// The bytes of that buffer for tensor t (0 when it is not quantized).
size_t OutputBytes(const PlannedTensor& t) {
  size_t total = 0;
  if (!t.quantized) return total;
  for (const PlannedOutput& po : t.outputs) total += PaddedBytes(po);
  return total;
}

// Dequantizes found tensor `q` of `view` into `out`, its elements as `to`
// (f32, bf16 or f16), on the pool: chunks of whole rows, each dequantized
// by the scheme into a per-worker f32 scratch of about 64 KiB (f32 output:
// in place) and cast with the stacks' final cast, rn without saturation
// (the SIMD ConvertArray equals the scalar reference bit for bit).
absl::Status DequantizeFound(const internal::Scheme& scheme,
                             const SafetensorsView& view,
                             const internal::FoundQuantized& q, Format to,
                             Impl impl, internal::ThreadPool& pool,
                             absl::Span<uint8_t> out) {
  const uint64_t rows = internal::FoundRows(q);
  if (rows == 0) return absl::OkStatus();
  const uint64_t cols = q.shape.back();
  const size_t esize = to == Format::kF32 ? 4 : 2;
  if (out.size() != rows * cols * esize)
    return absl::InternalError("dequantize: output size");
  constexpr uint64_t kChunkElements = 16384;
  const uint64_t grain = std::max<uint64_t>(1, scheme.DequantizeRowGrain());
  const uint64_t chunk_rows =
      (std::max<uint64_t>(1, kChunkElements / cols) + grain - 1) / grain *
      grain;
  const size_t chunks =
      static_cast<size_t>((rows + chunk_rows - 1) / chunk_rows);
  const size_t workers = std::min(pool.size(), chunks);
  // f32 written in place where the output is 4-byte aligned (its file
  // offset modulo 4096 decides; storage order puts f32 tensors first).
  const bool in_place =
      to == Format::kF32 &&
      reinterpret_cast<uintptr_t>(out.data()) % alignof(float) == 0;
  // (Allocated here: pool workers must not throw.)
  std::vector<std::vector<float>> scratch(
      in_place ? 0 : workers, std::vector<float>(static_cast<size_t>(
                                  std::min(chunk_rows, rows) * cols)));
  std::vector<absl::Status> status(workers);
  std::atomic<size_t> next{0};
  constexpr EncodePolicy kRnNoSat = {Rounding::kRN, Saturation::kNoSat, false,
                                     OverflowTie::kEven};
  pool.ParallelFor(workers, [&](size_t w) {
    for (size_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
      const uint64_t r0 = c * chunk_rows;
      const size_t m =
          static_cast<size_t>(std::min(chunk_rows, rows - r0) * cols);
      uint8_t* dst = out.data() + r0 * cols * esize;
      float* f;
      if (in_place) {
        f = reinterpret_cast<float*>(dst);
      } else {
        f = scratch[w].data();
      }
      absl::Status st = scheme.Dequantize(view, q, r0, absl::MakeSpan(f, m));
      if (st.ok() && !in_place) {
        if (to == Format::kF32) {
          std::memcpy(dst, f, 4 * m);
        } else {
          st = ConvertArray(
              Format::kF32, to, kRnNoSat,
              absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(f), 4 * m),
              absl::MakeSpan(dst, esize * m), {}, impl);
        }
      }
      if (!st.ok()) {
        status[w] = st;
        next.store(chunks);  // the other workers stop after their chunk
        return;
      }
    }
  });
  for (const absl::Status& st : status) {
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace

static absl::StatusOr<CheckpointReport> QuantizeCheckpointInDefaultEnv(
    const std::string& in_path, const std::string& out_path,
    const CheckpointOptions& options) {
  const auto t0 = Clock::now();
  if (!options.dry_run) {
    if (absl::Status st = CheckOutput(in_path, out_path); !st.ok()) return st;
  }
  absl::StatusOr<Plan> plan = MakePlan(in_path, out_path, options);
  if (!plan.ok()) return plan.status();
  Plan& p = *plan;
  CheckpointReport rep;
  rep.operation = "quantize";
  rep.scheme = std::string(p.scheme->name());
  rep.format = p.format;
  rep.dry_run = options.dry_run;
  rep.input_shards = p.src.shards;
  rep.output_shards = p.out_shards;
  rep.copied_files = p.src.other_files;
  rep.out_bytes = p.out_bytes;
  for (const PlannedTensor& t : p.tensors) {
    rep.in_bytes += t.bytes;
    rep.quantized_tensors += t.quantized ? 1 : 0;
  }
  rep.tensors = p.tensors;
  if (options.dry_run) {
    rep.seconds = Since(t0);
    return rep;
  }
  internal::ThreadPool pool(options.threads);
  rep.threads = pool.size();
  ModelProgress progress;
  progress.tensors_total = p.tensors.size();
  progress.bytes_total = rep.in_bytes;
  auto report_progress = [&](uint64_t bytes) {
    if (!options.progress) return;
    progress.tensors_done += 1;
    progress.bytes_done += bytes;
    progress.seconds = Since(t0);
    options.progress(progress);
  };

  // NVFP4 global scales: the amax of a fused group over all its tensors,
  // computed when the group's first tensor comes up, so that each shard is
  // mapped and faulted in once and the writer already runs meanwhile. The
  // group's other tensors follow that one, so their shards are still mapped.
  // A group's members (quantized tensors of one group name and expert
  // count), in order, found once.
  auto group_key = [&](size_t i) {
    return absl::StrCat(p.tensors[i].group, "#", p.shapes[i].experts);
  };
  std::map<std::string, std::vector<size_t>> group_members;
  if (p.scheme->NeedsGroupAmax(p.format)) {
    for (size_t j = 0; j < p.tensors.size(); ++j) {
      if (p.tensors[j].quantized) group_members[group_key(j)].push_back(j);
    }
  }
  std::map<std::string, std::vector<float>> group_amax;
  auto amax_of = [&](size_t i) -> absl::StatusOr<const std::vector<float>*> {
    const size_t experts = p.shapes[i].experts;
    const std::string key = group_key(i);
    auto it = group_amax.find(key);
    if (it != group_amax.end()) return &it->second;
    std::vector<float> g(experts, 0.0f);
    for (size_t j : group_members.at(key)) {
      const PlannedTensor& u = p.tensors[j];
      const SafetensorsView& v = p.opened[ShardOf(p, j)].view;
      absl::StatusOr<std::vector<float>> a =
          ExpertAmax(u, p.shapes[j], v.Bytes(*v.Find(u.name)), pool, options.impl);
      if (!a.ok()) return a.status();
      for (size_t e = 0; e < experts; ++e) g[e] = std::max(g[e], (*a)[e]);
    }
    return &group_amax.emplace(key, std::move(g)).first->second;
  };

  absl::StatusOr<StagedOutput> staged = StagedOutput::Create(out_path, !IsFileOutput(out_path));
  if (!staged.ok()) return staged.status();
  const std::string dir = staged->path();
  auto shard_path = [&](size_t k) {
    return IsFileOutput(out_path) ? dir : dir + "/" + p.out_shards[k];
  };

  const Json config = p.scheme->QuantizationConfig(p.format, p.ignored);
  // Pass 2: tensors in order. A file's header (names, shapes, data offsets
  // and __metadata__) is known from the plan unless the scheme adds metadata
  // as it quantizes; the file is then opened first and each tensor's bytes
  // go to the writer as soon as they are ready, from a few reused buffers.
  // Otherwise a shard's buffers are held until its last tensor. Either way
  // the writer thread writes while the pool computes the next tensor.
  const bool stream = !p.scheme->QuantizeAddsMetadata();
  internal::BufferRecycler recycler(3);
  // Every lease asks for the largest tensor's size, so the three buffers
  // are allocated and faulted in once, not again whenever a larger tensor
  // comes up.
  size_t lease_bytes = 0;
  // Room to place each output at its file offset's position modulo the
  // direct-write block (OutputFile::EnableDirectWrites).
  constexpr size_t kBlock = OutputFile::kDirectAlign;
  for (const PlannedTensor& t : p.tensors) {
    lease_bytes = std::max(lease_bytes, OutputBytes(t) + t.outputs.size() * kBlock);
  }
  // Destroyed first on an error return: it stops and removes its uncommitted
  // files before the recycler and the staged output go.
  internal::ShardWriter writer;
  std::map<std::string, std::string> weight_map;
  // Taken before the loop, which releases each input shard (its view
  // included) after its last tensor.
  std::vector<std::map<std::string, std::string>> input_metadata;
  for (size_t k = 0; k < p.out_shards.size(); ++k) {
    input_metadata.push_back(InputMetadata(p, k));
  }
  size_t si = 0;  // input shard of tensor i
  for (size_t k = 0; k < p.out_shards.size(); ++k) {
    // A held shard is written before the next one is quantized: memory holds
    // one output shard (docs/checkpoints.md).
    if (!stream && k > 0) {
      if (absl::Status st = writer.Drain(); !st.ok()) return st;
    }
    const size_t first = k == 0 ? 0 : p.out_end[k - 1];
    // The shard's tensors in order (quantized ones by size alone until
    // their bytes exist) and where each starts in the data section.
    std::vector<StTensorOut> layout;
    for (size_t i = first; i < p.out_end[k]; ++i) {
      const PlannedTensor& t = p.tensors[i];
      if (!t.quantized) {
        layout.push_back({t.name, t.dtype, t.shape, SizeOnly(t.bytes)});
        continue;
      }
      for (const PlannedOutput& po : t.outputs) {
        layout.push_back({po.name, po.dtype, po.shape, SizeOnly(po.bytes)});
      }
    }
    const std::vector<uint64_t> offsets = internal::SafetensorsDataOffsets(layout);
    std::map<std::string, std::string> metadata = std::move(input_metadata[k]);
    size_t file = 0;
    uint64_t data_start = 0;  // the header's size, once open
    // A file for a serving stack (a scheme with a quantization_config) gets
    // __metadata__ "format" = "pt" whenever it has metadata: transformers'
    // loader requires it.
    auto open = [&]() -> absl::Status {
      if (options.before_write) {
        if (absl::Status st = options.before_write(p.out_shards[k]); !st.ok()) return st;
      }
      if (!config.is_null() && !metadata.empty()) metadata.emplace("format", "pt");
      absl::StatusOr<std::string> header = SafetensorsHeader(layout, metadata);
      if (!header.ok()) return header.status();
      data_start = header->size();
      file = writer.Open(shard_path(k), *std::move(header));
      return absl::OkStatus();
    };
    struct Held {
      uint64_t offset;
      absl::Span<const uint8_t> data;
      std::shared_ptr<const void> keep;
    };
    std::vector<Held> held;
    auto write = [&](size_t j, absl::Span<const uint8_t> data,
                     std::shared_ptr<const void> keep) {
      if (stream) {
        writer.Write(file, offsets[j], data, std::move(keep));
      } else {
        held.push_back({offsets[j], data, std::move(keep)});
      }
    };
    if (stream) {
      if (absl::Status st = open(); !st.ok()) return st;
    }
    size_t j = 0;  // layout entry of tensor i's first output
    for (size_t i = first; i < p.out_end[k]; ++i) {
      while (i >= p.shard_end[si]) ++si;
      const PlannedTensor& t = p.tensors[i];
      const OpenShard& s = p.opened[si];
      const StTensorInfo& info = *s.view.Find(t.name);
      if (!t.quantized) {
        write(j++, s.view.Bytes(info), s.file);
        weight_map[t.name] = p.out_shards[k];
      } else {
        internal::SchemeJob job;
        job.info = &info;
        job.bytes = s.view.Bytes(info);
        job.from = *StDtypeFormat(t.dtype);
        job.shape = p.shapes[i];
        job.format = p.format;
        job.options = &options;
        if (p.scheme->NeedsGroupAmax(p.format)) {
          absl::StatusOr<const std::vector<float>*> amax = amax_of(i);
          if (!amax.ok()) return amax.status();
          job.group_amax = **amax;
        }
        const size_t total = OutputBytes(t);
        // Uninitialized where the scheme writes every byte: the first touch
        // of a fresh buffer then happens on the pool's threads.
        std::shared_ptr<uint8_t> buffer =
            stream ? recycler.Acquire(lease_bytes)
                   : std::shared_ptr<uint8_t>(
                         internal::NewOutputBuffer(total, /*zero=*/false).release(),
                         std::default_delete<uint8_t[]>());
        // Streamed outputs sit at their file position modulo kBlock, so
        // the writer sends their whole blocks to the device directly.
        std::vector<absl::Span<uint8_t>> outs;
        size_t at = 0;
        for (size_t o = 0; o < t.outputs.size(); ++o) {
          const PlannedOutput& po = t.outputs[o];
          if (stream)
            at +=
                DirectWriteSkip(buffer.get() + at, data_start + offsets[j + o]);
          outs.emplace_back(buffer.get() + at, po.bytes);
          at += PaddedBytes(po);
        }
        if (!p.scheme->WritesEveryByte()) {
          for (absl::Span<uint8_t> out : outs) std::memset(out.data(), 0, out.size());
        }
        std::map<std::string, std::string> added;
        if (absl::Status st =
                p.scheme->Quantize(job, pool, outs, stream ? added : metadata);
            !st.ok()) {
          return Prefix(absl::StrCat("tensor '", t.name, "'"), st);
        }
        if (!added.empty()) {
          return absl::InternalError(absl::StrFormat(
              "scheme '%s' added metadata but declares that it does not",
              p.scheme->name()));
        }
        for (size_t o = 0; o < t.outputs.size(); ++o) {
          write(j++, outs[o], buffer);
          weight_map[t.outputs[o].name] = p.out_shards[k];
        }
      }
      report_progress(t.bytes);
      if (absl::Status st = writer.status(); !st.ok()) return st;
      // The mapping stays alive in the writes that still need it; the last
      // reference goes to the writer thread, which unmaps it meanwhile.
      if (i + 1 == p.shard_end[si]) {
        writer.Release(std::move(p.opened[si].file));
        p.opened[si] = OpenShard();
      }
    }
    if (!stream) {
      if (absl::Status st = open(); !st.ok()) return st;
      for (Held& h : held) writer.Write(file, h.offset, h.data, std::move(h.keep));
    }
    writer.Commit(file);
  }
  if (absl::Status st = writer.Finish(); !st.ok()) return st;

  if (!IsFileOutput(out_path)) {
    if (p.out_shards.size() > 1) {
      if (absl::Status st = WriteIndex(dir, weight_map, p.out_bytes); !st.ok()) return st;
    }
    for (const std::string& rel : p.src.other_files) {
      absl::Status st = rel == "config.json"
                            ? WriteConfig(p.src, dir, rel, config.is_null() ? nullptr : &config)
                            : internal::CopyRelativeFile(p.src.dir, dir, rel);
      if (!st.ok()) return st;
    }
    for (const auto& [name, text] : p.scheme->ExtraFiles(p.format, p.ignored)) {
      if (absl::Status st = internal::WriteTextFile(dir + "/" + name, text); !st.ok()) {
        return st;
      }
    }
  }
  if (absl::Status st = staged->Commit(); !st.ok()) return st;
  rep.seconds = Since(t0);
  return rep;
}

absl::StatusOr<CheckpointReport> QuantizeCheckpoint(
    const std::string& in_path, const std::string& out_path,
    const CheckpointOptions& options) {
  return internal::InDefaultFpEnv([&] {
    return QuantizeCheckpointInDefaultEnv(in_path, out_path, options);
  });
}

static absl::StatusOr<CheckpointReport> DequantizeCheckpointInDefaultEnv(
    const std::string& in_path, const std::string& out_path,
    const DequantizeModelOptions& options) {
  const auto t0 = Clock::now();
  if (absl::Status st = CheckOutput(in_path, out_path); !st.ok()) return st;
  if (options.to.has_value() && *options.to != Format::kF32 &&
      *options.to != Format::kBF16 && *options.to != Format::kF16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "to: expected f32, bf16 or f16, got %s", FormatName(*options.to)));
  }
  absl::StatusOr<CheckpointSource> src = internal::OpenCheckpointSource(in_path);
  if (!src.ok()) return src.status();
  const bool file_out = IsFileOutput(out_path);
  if (file_out && src->shards.size() > 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the input has %d shards; give a directory as the output", out_path,
        src->shards.size()));
  }
  absl::StatusOr<StagedOutput> staged = StagedOutput::Create(out_path, !file_out);
  if (!staged.ok()) return staged.status();
  const std::string dir = staged->path();
  CheckpointReport rep;
  rep.operation = "dequantize";
  rep.input_shards = src->shards;
  rep.copied_files = src->other_files;
  std::map<std::string, std::string> weight_map;
  // Each shard streams as the export does: its file is opened with its
  // header first (every output's dtype and size are known from the found
  // tensors or the mxpack records), each dequantized tensor goes to the
  // writer thread as soon as the pool has computed it, from at most three
  // reused buffers, each placed at its file offset modulo the direct-write
  // block; copied tensors are written from the input mapping.
  constexpr size_t kBlock = OutputFile::kDirectAlign;
  // Serving stacks' tensors: `to`, or bf16 (their dequantizers' output).
  const Format stack_to = options.to.value_or(Format::kBF16);
  const StDtype stack_dtype = internal::DequantizedDtype(stack_to);
  internal::ThreadPool pool(options.threads);
  internal::BufferRecycler recycler(3);
  // Destroyed first on an error return: it stops and removes its
  // uncommitted files before the recycler and the staged output go.
  internal::ShardWriter writer;
  // One tensor of an output file: copied (`fill` empty: `tensor.data` holds
  // its bytes) or computed into the bytes `fill` is given
  // (`tensor.data.size()` of them).
  struct Entry {
    StTensorOut tensor;
    std::function<absl::Status(absl::Span<uint8_t>)> fill;
    uint64_t in_bytes = 0;  // of its input tensors (progress)
  };
  // Progress: input file bytes, and output tensors as each shard is laid out.
  ModelProgress progress;
  for (const std::string& shard : src->shards) {
    std::error_code ec;
    const uintmax_t size =
        std::filesystem::file_size(src->ShardPath(shard), ec);
    if (!ec) progress.bytes_total += size;
  }
  uint64_t files_done = 0;  // input bytes of the shards done
  for (const std::string& shard : src->shards) {
    absl::StatusOr<OpenShard> s = Open(*src, shard);
    if (!s.ok()) return s.status();
    const std::string out_shard = src->dir.empty() ? out_path : shard;
    const std::string path = file_out ? dir : dir + "/" + shard;
    rep.output_shards.push_back(out_shard);
    rep.in_bytes += s->view.data.size();
    std::vector<Entry> entries;
    std::map<std::string, std::string> metadata;
    const auto report = [&](const StTensorOut& t, bool quantized,
                            std::string reason) {
      PlannedTensor pt;
      pt.name = t.name;
      pt.shard = shard;
      pt.out_shard = out_shard;
      pt.dtype = t.dtype;
      pt.shape = t.shape;
      pt.bytes = t.data.size();
      pt.quantized = quantized;
      pt.reason = std::move(reason);
      rep.tensors.push_back(pt);
    };
    // mxpack records, or else the serving stacks' tensors.
    absl::StatusOr<internal::RecordPlan> plan =
        internal::PlanRecordDequantize(s->view, options.to);
    if (!plan.ok()) return Prefix(src->ShardPath(shard), plan.status());
    std::vector<internal::FoundQuantized> found;
    if (!plan->jobs.empty()) {
      for (const auto& [k, v] : s->view.metadata) {
        if (!absl::StartsWith(k, "mxpack.")) metadata.emplace(k, v);
      }
      for (const StTensorInfo& t : s->view.tensors) {
        auto it = plan->job_of_qdata.find(t.name);
        if (it == plan->job_of_qdata.end()) {
          if (plan->consumed.count(t.name)) continue;
          entries.push_back({{t.name, t.dtype, t.shape, s->view.Bytes(t)},
                             nullptr,
                             t.num_bytes()});
          report(entries.back().tensor, false, "copied");
          continue;
        }
        const internal::RecordJob& job = plan->jobs[it->second];
        // Rows in chunks of whole 128-row tiles, on the pool.
        auto fill = [&job, &pool, &options](absl::Span<uint8_t> bytes) {
          const size_t rows = job.view.shape.rows,
                       step = internal::RecordChunkRows(job);
          const size_t row_bytes = job.row_bytes();
          std::vector<absl::Status> status((rows + step - 1) / step);
          pool.ParallelFor(status.size(), [&](size_t c) {
            const size_t r0 = c * step, r1 = std::min(rows, r0 + step);
            status[c] = internal::DequantizeRecordRows(
                job, r0, r1,
                bytes.subspan(r0 * row_bytes, (r1 - r0) * row_bytes),
                options.impl);
          });
          for (const absl::Status& st : status) {
            if (!st.ok()) return st;
          }
          return absl::OkStatus();
        };
        entries.push_back({{job.info->name, job.dtype, job.info->tensor_shape,
                            SizeOnly(job.out_bytes())},
                           fill});
        for (const std::string* n :
             {&job.info->qdata, &job.info->scales, &job.info->tscale}) {
          if (const StTensorInfo* part = s->view.Find(*n); part != nullptr) {
            entries.back().in_bytes += part->num_bytes();
          }
        }
        report(entries.back().tensor, true, "mxpack");
      }
    } else {
      metadata = s->view.metadata;
      found = internal::FindQuantized(s->view);
      std::map<std::string, const internal::FoundQuantized*> first;
      std::set<std::string> consumed;
      for (const internal::FoundQuantized& q : found) {
        first[q.parts[0]] = &q;
        consumed.insert(q.parts.begin(), q.parts.end());
      }
      // Every tensor in input order, each found tensor where its first part
      // was.
      for (const StTensorInfo& t : s->view.tensors) {
        auto it = first.find(t.name);
        if (it == first.end()) {
          if (consumed.count(t.name)) continue;
          entries.push_back({{t.name, t.dtype, t.shape, s->view.Bytes(t)},
                             nullptr,
                             t.num_bytes()});
          report(entries.back().tensor, false, "copied");
          continue;
        }
        const internal::FoundQuantized& q = *it->second;
        absl::StatusOr<const internal::Scheme*> scheme =
            internal::FindScheme(q.scheme);
        if (!scheme.ok()) return scheme.status();
        uint64_t n = 1;
        for (uint64_t d : q.shape) n *= d;
        const internal::Scheme* sch = *scheme;
        const SafetensorsView* view = &s->view;
        auto fill = [sch, view, &q, stack_to, &pool,
                     &options](absl::Span<uint8_t> bytes) {
          return DequantizeFound(*sch, *view, q, stack_to, options.impl, pool,
                                 bytes);
        };
        entries.push_back({{q.name, stack_dtype, q.shape,
                            SizeOnly(n * StDtypeSize(stack_dtype))},
                           fill});
        for (const std::string& part : q.parts) {
          entries.back().in_bytes += s->view.Find(part)->num_bytes();
        }
        report(entries.back().tensor, true,
               absl::StrCat(q.scheme, " ", q.format));
      }
    }
    std::vector<StTensorOut> layout;
    size_t lease_bytes = 0;
    for (const Entry& e : entries) {
      layout.push_back(e.tensor);
      weight_map[e.tensor.name] = out_shard;
      rep.out_bytes += e.tensor.data.size();
      if (e.fill)
        lease_bytes = std::max(lease_bytes, e.tensor.data.size() + kBlock);
    }
    const std::vector<uint64_t> offsets =
        internal::SafetensorsDataOffsets(layout);
    absl::StatusOr<std::string> header = SafetensorsHeader(layout, metadata);
    if (!header.ok()) return header.status();
    const uint64_t data_start = header->size();
    const size_t file = writer.Open(path, *std::move(header));
    progress.tensors_total += entries.size();
    const auto report_progress = [&](size_t j) {
      if (!options.progress) return;
      progress.tensors_done += 1;
      // A shard's last tensor completes its file (header and padding too).
      progress.bytes_done = j + 1 == entries.size()
                                ? files_done + s->file->bytes().size()
                                : progress.bytes_done + entries[j].in_bytes;
      progress.seconds = Since(t0);
      options.progress(progress);
    };
    for (size_t j = 0; j < entries.size(); ++j) {
      const StTensorOut& t = entries[j].tensor;
      if (!entries[j].fill) {
        writer.Write(file, offsets[j], t.data, s->file);
        report_progress(j);
        continue;
      }
      std::shared_ptr<uint8_t> buffer = recycler.Acquire(lease_bytes);
      const absl::Span<uint8_t> bytes(
          buffer.get() + DirectWriteSkip(buffer.get(), data_start + offsets[j]),
          t.data.size());
      if (absl::Status st = entries[j].fill(bytes); !st.ok()) {
        return Prefix(src->ShardPath(shard),
                      Prefix(absl::StrCat("tensor '", t.name, "'"), st));
      }
      writer.Write(file, offsets[j], bytes, std::move(buffer));
      if (absl::Status st = writer.status(); !st.ok()) return st;
      report_progress(j);
    }
    files_done += s->file->bytes().size();
    writer.Commit(file);
    // The mapping stays alive in the writes that still need it.
    writer.Release(std::move(s->file));
  }
  if (absl::Status st = writer.Finish(); !st.ok()) return st;
  for (const PlannedTensor& t : rep.tensors) rep.quantized_tensors += t.quantized;
  if (!file_out && !src->dir.empty()) {
    if (!src->weight_map.empty()) {
      if (absl::Status st = WriteIndex(dir, weight_map, rep.out_bytes); !st.ok()) return st;
    }
    for (const std::string& rel : src->other_files) {
      if (rel == "hf_quant_config.json") continue;
      absl::Status st = rel == "config.json"
                            ? WriteConfig(*src, dir, rel, nullptr)
                            : internal::CopyRelativeFile(src->dir, dir, rel);
      if (!st.ok()) return st;
    }
  }
  if (absl::Status st = staged->Commit(); !st.ok()) return st;
  rep.seconds = Since(t0);
  return rep;
}

absl::StatusOr<CheckpointReport> DequantizeCheckpoint(
    const std::string& in_path, const std::string& out_path,
    const DequantizeModelOptions& options) {
  return internal::InDefaultFpEnv([&] {
    return DequantizeCheckpointInDefaultEnv(in_path, out_path, options);
  });
}

}  // namespace mxpack
