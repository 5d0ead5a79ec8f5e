// BM_Memcpy: the baseline every other benchmark in this binary is read against.
#include <cstring>
#include <vector>

#include "bench/bench_util.h"

namespace mxpack::bench {
namespace {

// range(0) = bytes read + written, so half is copied.
void BM_Memcpy(benchmark::State& state) {
  const size_t half = static_cast<size_t>(state.range(0) / 2);
  std::vector<uint8_t> src(half, 1), dst(half);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), half);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Memcpy)->Apply(WorkingSets);

// The SIMD target every "simd" benchmark runs, in the JSON context
// (bench/perf_table.py prints it).
const bool kContext = [] {
  benchmark::AddCustomContext("mxpack_target", ImplName(SimdImpl()) == "best"
                                                   ? ImplName(Impl{AvailableTargets()[0]})
                                                   : ImplName(SimdImpl()));
  return true;
}();

}  // namespace
}  // namespace mxpack::bench
