// quantize-model on a >= 1 GiB f32 checkpoint:
// BM_QuantizeModel (library QuantizeModel: every 2-D tensor to MXFP4 or NVFP4,
// tcgen05 layouts, 1 or 2 threads, no error statistics) against
// BM_MemcpyModel, a memcpy of the same data bytes in the same binary. Both
// report the input data bytes per second, so the ratio of their bytes/s is
// the figure to quote.
#include <cstring>
#include <vector>

#include "bench/bench_util.h"
#include "mxpack/model.h"
#include "mxpack/safetensors.h"

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

// range(0): 0 = MXFP4, 1 = NVFP4; range(1): threads.
void BM_QuantizeModel(benchmark::State& state) {
  const SafetensorsView& v = BigCheckpoint().view;
  QuantizeModelOptions o;
  o.format = state.range(0) == 0 ? MxFormat::kMxfp4 : MxFormat::kNvfp4;
  o.layout = ModelLayout::kTcgen05;
  o.threads = static_cast<size_t>(state.range(1));
  uint64_t processed = 0;
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
BENCHMARK(BM_QuantizeModel)
    ->ArgNames({"nvfp4", "threads"})
    ->Args({0, 1})
    ->Args({0, 2})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
}  // namespace mxpack::bench
