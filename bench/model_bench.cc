// quantize-model on >= 1 GiB checkpoints:
// BM_QuantizeModel/FORMAT (library QuantizeModel: every 2-D tensor of an f32
// file in memory to each MX format, tcgen05 layouts, 2 threads, MXFP4 also 1;
// no error statistics; BM_QuantizeModelErrorStats: with them) and
// BM_DequantizeModel/FORMAT (DequantizeModel of that model quantized, to f32)
// against BM_MemcpyModel, a memcpy of the same data bytes; and
// BM_QuantizeCheckpoint (QuantizeCheckpoint of a bf16 model directory of 4
// shards on disk to compressed-tensors NVFP4 or MXFP4 with 2 threads, output
// written to disk) against BM_MemcpyCheckpoint, a memcpy of the same tensor
// bytes, and against BM_WriteCheckpointOutput, writing its output files
// alone; BM_DequantizeCheckpoint (that export back to bf16 files) against
// BM_MemcpyCheckpoint and against BM_WriteDequantizedOutput, writing its
// files alone. Every benchmark reports input bytes per second, so
// the ratio of a pair's bytes/s is the figure to quote. BM_QuantizeStackBlocks
// times the block quantizers behind the compressed-tensors and ModelOpt exports
// alone (one thread, bf16 weights; bytes read + written, against BM_Memcpy).
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "mxpack/model.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"
#include "mxpack/scalar.h"
#include "src/checkpoint/stack_blocks.h"

namespace mxpack::bench {
namespace {

// 6 layers, hidden 2048, ffn 5504, vocab 1024, all F32: 1.23 GB of data.
// Built once, on first use, so other benchmark filters do not pay for it.
struct Checkpoint {
  std::vector<uint8_t> file;
  SafetensorsView view;
};

const Checkpoint& BigCheckpoint() {
  static const Checkpoint* c = [] {
    auto* ck = new Checkpoint;
    SyntheticModelConfig config;
    config.layers = 6;
    config.hidden = 2048;
    config.kv_hidden = 2048;
    config.ffn = 5504;
    config.vocab = 1024;
    config.odd_layers_bf16 = false;
    ck->file = *SyntheticCheckpoint(config);
    ck->view = *ParseSafetensors(ck->file);
    return ck;
  }();
  return *c;
}

void BM_MemcpyModel(benchmark::State& state) {
  const SafetensorsView& v = BigCheckpoint().view;
  std::vector<uint8_t> dst(v.data.size());
  std::memset(dst.data(), 1, dst.size());  // fault the pages in first
  for (auto _ : state) {
    std::memcpy(dst.data(), v.data.data(), v.data.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(v.data.size()));
  state.counters["GiB"] = static_cast<double>(v.data.size()) / (1 << 30);
}
BENCHMARK(BM_MemcpyModel)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// One untimed call before a model benchmark's timed ones. Each timed call
// still allocates and fills its own output, but the process's first use of
// that much fresh memory is slower by an order of magnitude on virtual
// machines (the host backs the guest's pages on first touch; the kernel may
// compact memory for huge pages), a cost a process pays once. BM_MemcpyModel
// likewise faults its destination in before timing.
template <typename Fn>
void WarmUp(Fn call) {
  benchmark::DoNotOptimize(call());
}

// Every MX format, by name in the benchmark names (BM_QuantizeModel/nvfp4/...).
constexpr MxFormat kModelFormats[] = {MxFormat::kMxfp4,     MxFormat::kNvfp4,
                                      MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2,
                                      MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2};

// QuantizeModel of the big checkpoint to `format` (tcgen05 layouts) with
// `threads`; error_stats: with error statistics (quantize-model
// --error-stats). Bytes are the f32 input bytes, the same as BM_MemcpyModel's.
void QuantizeModelBench(benchmark::State& state, MxFormat format, size_t threads,
                        bool error_stats) {
  const SafetensorsView& v = BigCheckpoint().view;
  QuantizeModelOptions o;
  o.format = format;
  o.layout = ModelLayout::kTcgen05;
  o.threads = threads;
  o.error_stats = error_stats;
  uint64_t processed = 0;
  WarmUp([&] { return QuantizeModel(v, o).ok(); });
  for (auto _ : state) {
    absl::StatusOr<ModelOutput> out = QuantizeModel(v, o);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    processed = out->report.processed_bytes;
    benchmark::DoNotOptimize(out->tensors.data());
  }
  // Every tensor is 2-D F32 except the norms (a few KiB, copied).
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(v.data.size()));
  state.counters["quantized_GiB"] = static_cast<double>(processed) / (1 << 30);
}

// The big checkpoint quantized once to `format` (tcgen05 layouts), as the
// bytes of its safetensors file.
const SafetensorsView& QuantizedCheckpoint(MxFormat format) {
  static Checkpoint* cache[std::size(kModelFormats)] = {};
  const size_t i = static_cast<size_t>(
      std::find(std::begin(kModelFormats), std::end(kModelFormats), format) -
      std::begin(kModelFormats));
  Checkpoint*& c = cache[i];
  if (c == nullptr) {
    QuantizeModelOptions o;
    o.format = format;
    o.layout = ModelLayout::kTcgen05;
    o.threads = 2;
    absl::StatusOr<ModelOutput> out = QuantizeModel(BigCheckpoint().view, o);
    if (!out.ok()) return BigCheckpoint().view;  // reported by the benchmark
    c = new Checkpoint;
    c->file = *SerializeSafetensors(out->tensors, out->metadata);
    c->view = *ParseSafetensors(c->file);
  }
  return c->view;
}

// Dequantizes the big checkpoint quantized to `format` back to f32 (the
// output buffers included, as dequantize-model allocates them); bytes are
// the f32 output bytes, the same as BM_MemcpyModel's.
void DequantizeModelBench(benchmark::State& state, MxFormat format, size_t threads) {
  const SafetensorsView& v = QuantizedCheckpoint(format);
  DequantizeModelOptions o;
  o.threads = threads;
  uint64_t out_bytes = 0;
  WarmUp([&] { return DequantizeModel(v, o).ok(); });
  for (auto _ : state) {
    absl::StatusOr<ModelOutput> out = DequantizeModel(v, o);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    out_bytes = out->report.out_bytes;
    benchmark::DoNotOptimize(out->tensors.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(out_bytes));
}

// BM_QuantizeModel/FORMAT/threads:N (MXFP4 also on one thread),
// BM_QuantizeModelErrorStats/FORMAT/threads:2, BM_DequantizeModel/FORMAT/threads:2.
const bool kModelBenchmarks = [] {
  const auto reg = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(3);
  };
  for (MxFormat f : kModelFormats) {
    const std::string n(MxFormatName(f));
    for (size_t threads : {size_t{1}, size_t{2}}) {
      if (threads == 1 && f != MxFormat::kMxfp4) continue;
      reg("BM_QuantizeModel/" + n + "/threads:" + std::to_string(threads),
          [f, threads](benchmark::State& st) { QuantizeModelBench(st, f, threads, false); });
    }
  }
  for (MxFormat f : kModelFormats) {
    const std::string n(MxFormatName(f));
    reg("BM_QuantizeModelErrorStats/" + n + "/threads:2",
        [f](benchmark::State& st) { QuantizeModelBench(st, f, 2, true); });
  }
  for (MxFormat f : kModelFormats) {
    const std::string n(MxFormatName(f));
    reg("BM_DequantizeModel/" + n + "/threads:2",
        [f](benchmark::State& st) { DequantizeModelBench(st, f, 2); });
  }
  return true;
}();

// 11 Llama-like layers (hidden 2048, ffn 5504), all BF16, in 4 shards with
// model.safetensors.index.json and config.json: 1.03 GiB of tensors. Written
// once to a temporary directory, removed at exit (or, when the run was
// killed, by the next run).
struct CheckpointDir {
  std::string dir;
  std::vector<std::unique_ptr<MappedFile>> shards;
  uint64_t bytes = 0;
  ~CheckpointDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// Removes the temporary directories of earlier runs that were killed before
// their exit handlers ran (named mxpack-bench-PID-*, PID no longer running).
void RemoveStaleBenchDirs(const std::filesystem::path& tmp) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(tmp, ec)) {
    int pid = 0;
    if (std::sscanf(e.path().filename().c_str(), "mxpack-bench-%d-", &pid) != 1 ||
        pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) {
      continue;
    }
    std::filesystem::remove_all(e.path(), ec);
  }
}

const CheckpointDir& BigCheckpointDir() {
  // Owned by a static, so the directory is removed at exit.
  static const std::unique_ptr<CheckpointDir> c([] {
    auto* ck = new CheckpointDir;
    const std::filesystem::path tmp = std::filesystem::temp_directory_path();
    RemoveStaleBenchDirs(tmp);
    std::string tmpl =
        (tmp / ("mxpack-bench-" + std::to_string(getpid()) + "-XXXXXX")).string();
    ck->dir = mkdtemp(tmpl.data());
    const std::string model = ck->dir + "/model";
    std::filesystem::create_directory(model);
    const uint64_t h = 2048, f = 5504;
    const int layers = 11, shards = 4;
    std::string index = "{\"metadata\": {}, \"weight_map\": {";
    uint32_t seed = 1;
    for (int s = 0; s < shards; ++s) {
      std::vector<std::vector<uint8_t>> data;
      std::vector<StTensorOut> tensors;
      const std::string shard =
          "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) +
          ".safetensors";
      for (int l = s * layers / shards; l < (s + 1) * layers / shards; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        const std::pair<std::string, std::vector<uint64_t>> specs[] = {
            {"self_attn.q_proj.weight", {h, h}}, {"self_attn.k_proj.weight", {h, h}},
            {"self_attn.v_proj.weight", {h, h}}, {"self_attn.o_proj.weight", {h, h}},
            {"mlp.gate_proj.weight", {f, h}},    {"mlp.up_proj.weight", {f, h}},
            {"mlp.down_proj.weight", {h, f}}};
        for (const auto& [name, shape] : specs) {
          std::vector<uint8_t> b(shape[0] * shape[1] * 2);
          for (size_t i = 0; i < b.size(); i += 2) {
            seed = seed * 1664525u + 1013904223u;
            // bf16 with exponent around 2^-6 and a random sign and mantissa.
            const uint16_t v = static_cast<uint16_t>(0x3C00 + (seed >> 22)) |
                               static_cast<uint16_t>((seed >> 5) & 0x8000);
            b[i] = static_cast<uint8_t>(v);
            b[i + 1] = static_cast<uint8_t>(v >> 8);
          }
          data.push_back(std::move(b));
          tensors.push_back({p + name, StDtype::kBF16, shape, data.back()});
          index += "\"" + p + name + "\": \"" + shard + "\",";
          ck->bytes += data.back().size();
        }
      }
      (void)WriteSafetensors(model + "/" + shard, tensors, {{"format", "pt"}});
      ck->shards.push_back(*MappedFile::Open(model + "/" + shard));
    }
    index.back() = '}';
    index += "}";
    std::ofstream(model + "/model.safetensors.index.json") << index;
    std::ofstream(model + "/config.json") << "{\"model_type\": \"llama\"}";
    return ck;
  }());
  return *c;
}

void BM_MemcpyCheckpoint(benchmark::State& state) {
  const CheckpointDir& c = BigCheckpointDir();
  std::vector<uint8_t> dst(c.bytes + (64 << 20));
  std::memset(dst.data(), 1, dst.size());
  for (auto _ : state) {
    size_t off = 0;
    for (const auto& f : c.shards) {
      std::memcpy(dst.data() + off, f->bytes().data(), f->bytes().size());
      off += f->bytes().size();
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(c.bytes));
  state.counters["GiB"] = static_cast<double>(c.bytes) / (1 << 30);
}
BENCHMARK(BM_MemcpyCheckpoint)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// The export of the checkpoint benchmarks: range(0) 0 = compressed-tensors
// MXFP4, 1 = compressed-tensors NVFP4; 2 threads.
CheckpointOptions ExportOptions(const benchmark::State& state) {
  CheckpointOptions o;
  o.format = state.range(0) == 0 ? MxFormat::kMxfp4 : MxFormat::kNvfp4;
  o.threads = 2;
  return o;
}

// Input bytes per second, one run per repetition, both formats.
void SetCheckpointBytes(benchmark::State& state, const CheckpointDir& c) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(c.bytes));
  state.counters["GiB"] = static_cast<double>(c.bytes) / (1 << 30);
}
void ExportFormats(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nvfp4"})
      ->Arg(0)
      ->Arg(1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1);
}

// The export of the big checkpoint into `dir` (replaced), untimed set-up of
// the benchmarks that read it; false (the benchmark skipped with the error)
// if it failed.
bool ExportOnce(benchmark::State& state, const CheckpointDir& c,
                const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  absl::StatusOr<CheckpointReport> r =
      QuantizeCheckpoint(c.dir + "/model", dir, ExportOptions(state));
  if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
  return r.ok();
}

void BM_QuantizeCheckpoint(benchmark::State& state) {
  const CheckpointDir& c = BigCheckpointDir();
  const CheckpointOptions o = ExportOptions(state);
  const std::string out = c.dir + "/out";
  std::error_code ec;
  for (auto _ : state) {
    // The last run's output (another benchmark's, or an earlier
    // repetition's) goes untimed: unlinking its files is not the export's.
    state.PauseTiming();
    std::filesystem::remove_all(out, ec);
    state.ResumeTiming();
    absl::StatusOr<CheckpointReport> r = QuantizeCheckpoint(c.dir + "/model", out, o);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
  }
  SetCheckpointBytes(state, c);
}
BENCHMARK(BM_QuantizeCheckpoint)->Apply(ExportFormats);

// DequantizeCheckpoint of the compressed-tensors export of the same
// checkpoint (made once, untimed) back to bf16 files on disk: the path of
// `mxpack dequantize-model` for the serving stacks' schemes. Bytes: the
// bf16 tensor bytes, as BM_MemcpyCheckpoint's.
void BM_DequantizeCheckpoint(benchmark::State& state) {
  const CheckpointDir& c = BigCheckpointDir();
  const std::string quantized = c.dir + "/dequantize-in",
                    out = c.dir + "/dequantize-out";
  if (!ExportOnce(state, c, quantized)) return;
  std::error_code ec;
  DequantizeModelOptions o;
  o.threads = 2;
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove_all(out, ec);
    state.ResumeTiming();
    absl::StatusOr<CheckpointReport> r =
        DequantizeCheckpoint(quantized, out, o);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
  }
  std::filesystem::remove_all(out, ec);
  std::filesystem::remove_all(quantized, ec);
  SetCheckpointBytes(state, c);
}
BENCHMARK(BM_DequantizeCheckpoint)->Apply(ExportFormats);

// The disk's share of a checkpoint benchmark: the files of directory `ref`
// (one run's output, made untimed; read into memory here and then removed),
// written again per iteration as plain files of the same names and sizes into
// a fresh directory, each by direct writes of whole 4 KiB blocks (buffered
// where the file system refuses them), truncated to size, fsync and rename,
// then the directory synced. Input bytes per second like the benchmark it
// serves, so the ratio of the two is that run's speed against writing its
// output and nothing else.
void WriteFilesOf(benchmark::State& state, const CheckpointDir& c,
                  const std::string& ref) {
  const std::string out = c.dir + "/write-out";
  std::error_code ec;
  // Each file's bytes in a 4 KiB-aligned buffer rounded up to whole 4 KiB
  // blocks, for direct writes (as the export's writer does where the file
  // system takes them; buffered writes here otherwise).
  struct File {
    std::string name;
    size_t size = 0;
    std::unique_ptr<uint8_t, decltype(&std::free)> data{nullptr, &std::free};
  };
  constexpr size_t kAlign = 4096;
  std::vector<File> files;
  for (const auto& e : std::filesystem::directory_iterator(ref)) {
    std::ifstream f(e.path(), std::ios::binary);
    const std::string bytes(std::istreambuf_iterator<char>(f), {});
    File file;
    file.name = e.path().filename().string();
    file.size = bytes.size();
    const size_t padded = (bytes.size() + kAlign - 1) / kAlign * kAlign;
    file.data.reset(
        static_cast<uint8_t*>(std::aligned_alloc(kAlign, padded + kAlign)));
    std::memset(file.data.get(), 0, padded + kAlign);
    std::memcpy(file.data.get(), bytes.data(), bytes.size());
    files.push_back(std::move(file));
  }
  std::filesystem::remove_all(ref, ec);
  const auto fail = [&](const std::string& what) {
    state.SkipWithError((what + ": " + std::strerror(errno)).c_str());
  };
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove_all(out, ec);
    state.ResumeTiming();
    std::filesystem::create_directory(out);
    for (const File& file : files) {
      const std::string path = out + "/" + file.name, tmp = path + ".tmp";
      constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
      int fd = open(tmp.c_str(), kFlags | O_DIRECT, 0644);
      size_t len = (file.size + kAlign - 1) / kAlign * kAlign;
      if (fd < 0 && errno == EINVAL) {
        fd = open(tmp.c_str(), kFlags, 0644);
        len = file.size;
      }
      if (fd < 0) return fail("open " + tmp);
      for (size_t done = 0; done < len;) {
        const ssize_t n = write(fd, file.data.get() + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          close(fd);
          return fail("write " + tmp);
        }
        done += static_cast<size_t>(n);
      }
      if (ftruncate(fd, static_cast<off_t>(file.size)) != 0 || fsync(fd) != 0 ||
          close(fd) != 0) {
        return fail("fsync " + tmp);
      }
      if (rename(tmp.c_str(), path.c_str()) != 0) return fail("rename " + tmp);
    }
    const int dfd = open(out.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      fsync(dfd);
      close(dfd);
    }
  }
  std::filesystem::remove_all(out, ec);
  SetCheckpointBytes(state, c);
}

// BM_QuantizeCheckpoint's disk baseline: the files of one export.
void BM_WriteCheckpointOutput(benchmark::State& state) {
  const CheckpointDir& c = BigCheckpointDir();
  const std::string ref = c.dir + "/write-ref";
  if (ExportOnce(state, c, ref)) WriteFilesOf(state, c, ref);
}
BENCHMARK(BM_WriteCheckpointOutput)->Apply(ExportFormats);

// BM_DequantizeCheckpoint's disk baseline: the files of one dequantization
// of that export back to bf16.
void BM_WriteDequantizedOutput(benchmark::State& state) {
  const CheckpointDir& c = BigCheckpointDir();
  const std::string quantized = c.dir + "/dequantize-in",
                    ref = c.dir + "/write-ref";
  if (!ExportOnce(state, c, quantized)) return;
  DequantizeModelOptions o;
  o.threads = 2;
  std::error_code ec;
  std::filesystem::remove_all(ref, ec);
  absl::StatusOr<CheckpointReport> r = DequantizeCheckpoint(quantized, ref, o);
  std::filesystem::remove_all(quantized, ec);
  if (!r.ok()) {
    state.SkipWithError(std::string(r.status().message()).c_str());
    return;
  }
  WriteFilesOf(state, c, ref);
}
BENCHMARK(BM_WriteDequantizedOutput)->Apply(ExportFormats);

// range(0): working-set bytes (bf16 input + elements + scales); range(1): 1 =
// the scalar reference.
void BM_QuantizeStackBlocks(benchmark::State& state, internal::StackArith arith) {
  const size_t block = internal::StackBlockSize(arith);
  const double el_per_block = internal::StackFp8(arith) ? 1.0 : 0.5;
  const double per_elem = 2.0 + el_per_block + 1.0 / static_cast<double>(block);
  const size_t nb = std::max<size_t>(
      1, static_cast<size_t>(static_cast<double>(state.range(0)) / per_elem) / block);
  std::vector<uint8_t> in(nb * block * 2);
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 0.02f);
  for (size_t i = 0; i < nb * block; ++i) {
    const uint32_t b = scalar::F32Bits(g(rng)) + 0x7FFF;  // ~rn to bf16
    in[2 * i] = static_cast<uint8_t>(b >> 16);
    in[2 * i + 1] = static_cast<uint8_t>(b >> 24);
  }
  std::vector<uint8_t> elements(static_cast<size_t>(el_per_block * static_cast<double>(nb * block))), scales(nb);
  internal::StackBlocksArgs a;
  a.arith = arith;
  a.from = Format::kBF16;
  a.tensor_scale = arith == internal::StackArith::kCtNvfp4 ? 2688.0f / 0.1f : 0.1f / 2688.0f;
  const Impl impl = state.range(1) ? Impl{Impl::kScalar} : SimdImpl();
  for (auto _ : state) {
    internal::QuantizeStackBlocks(a, in.data(), nb, elements.data(), scales.data(), impl);
    benchmark::DoNotOptimize(elements.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(in.size() + elements.size() + nb));
}

// The tensor amax pass of the NVFP4 exports (AbsMaxBits over bf16 weights;
// bytes read, against BM_Memcpy).
void BM_StackAbsMaxBits(benchmark::State& state) {
  std::vector<uint8_t> in(static_cast<size_t>(state.range(0)) & ~size_t{1});
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 0.02f);
  for (size_t i = 0; i < in.size(); i += 2) {
    const uint32_t b = scalar::F32Bits(g(rng)) + 0x7FFF;  // ~rn to bf16
    in[i] = static_cast<uint8_t>(b >> 16);
    in[i + 1] = static_cast<uint8_t>(b >> 24);
  }
  const Impl impl = state.range(1) ? Impl{Impl::kScalar} : SimdImpl();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        internal::AbsMaxBits(Format::kBF16, in.data(), in.size() / 2, impl));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(in.size()));
}

void StackSizes(benchmark::internal::Benchmark* b) {
  b->Args({kL2Bytes, 0})->Args({kDramBytes, 0})->Args({kL2Bytes, 1});
  b->ArgNames({"bytes", "scalar"});
}

BENCHMARK(BM_StackAbsMaxBits)
    ->Name("BM_StackAbsMaxBits/bf16")
    ->Apply(StackSizes);
BENCHMARK_CAPTURE(BM_QuantizeStackBlocks, ct_nvfp4_bf16, internal::StackArith::kCtNvfp4)
    ->Apply(StackSizes);
BENCHMARK_CAPTURE(BM_QuantizeStackBlocks, ct_mxfp4_bf16, internal::StackArith::kCtMxfp4)
    ->Apply(StackSizes);
BENCHMARK_CAPTURE(BM_QuantizeStackBlocks, ct_mxfp8_bf16, internal::StackArith::kCtMxfp8)
    ->Apply(StackSizes);
BENCHMARK_CAPTURE(BM_QuantizeStackBlocks, modelopt_mxfp8_bf16,
                  internal::StackArith::kModelOptMxfp8)
    ->Apply(StackSizes);
BENCHMARK_CAPTURE(BM_QuantizeStackBlocks, modelopt_nvfp4_bf16,
                  internal::StackArith::kModelOptNvfp4)
    ->Apply(StackSizes);

}  // namespace
}  // namespace mxpack::bench
