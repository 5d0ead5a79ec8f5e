// Benchmarks of the multimem array reductions: N = 2, 4, 8 sources for e4m3
// (acc::f16), bf16 (acc::f32) and f32 add under kSequential, and e4m3 / bf16
// max, SIMD (best target) and scalar. range(0) = bytes read + written (N
// sources + 1 output), so the numbers read as ratios against BM_Memcpy.
// Run: mxpack_bench --benchmark_filter='Memcpy|Multimem'.
#include <cstdint>
#include <vector>

#include "bench/bench_util.h"
#include "mxpack/dispatch.h"
#include "mxpack/multimem.h"
#include "src/multimem/reduce_args.h"

namespace mxpack::bench {
namespace {

void RunReduce(benchmark::State& state, MmType type, AccPrec acc, int nsrc, Impl impl,
               ReduceOp op = ReduceOp::kAdd) {
  const size_t eb = static_cast<size_t>(MmTypeTraits(type).element_bytes);
  const size_t n = static_cast<size_t>(state.range(0)) / (eb * (nsrc + 1));
  const ReduceSpec spec{type, op, acc, ReduceModel::kSequential};
  std::vector<std::vector<uint8_t>> src(static_cast<size_t>(nsrc), std::vector<uint8_t>(n * eb));
  uint32_t x = 12345;
  for (auto& v : src) {
    for (size_t i = 0; i < v.size(); ++i) {
      x = x * 1664525u + 1013904223u;
      uint8_t b = static_cast<uint8_t>(x >> 24);
      // Finite values: fp8 codes without NaN/Inf, 16/32-bit with moderate
      // exponents (so timings are of the common path).
      if (eb == 1) b &= 0xF7;
      if (eb > 1 && i % eb == eb - 1) b = static_cast<uint8_t>((b & 0x80) | 0x3C | (b & 0x01));
      v[i] = b;
    }
  }
  std::vector<absl::Span<const uint8_t>> spans(src.begin(), src.end());
  std::vector<uint8_t> out(n * eb);
  for (auto _ : state) {
    if (!ReduceArrays(spec, spans, absl::MakeSpan(out), impl).ok()) {
      state.SkipWithError("ReduceArrays failed");
      break;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(n * eb * static_cast<size_t>(nsrc + 1)));
}

void BM_MultimemAddE4M3AccF16(benchmark::State& s) {
  RunReduce(s, MmType::kE4M3, AccPrec::kF16, static_cast<int>(s.range(1)), SimdImpl());
}
// The Highway kernel of the same target on CPUs whose best path is the
// AVX512-FP16 one (identical to BM_MultimemAddE4M3AccF16 elsewhere).
void BM_MultimemAddE4M3AccF16Highway(benchmark::State& s) {
  internal::SetReduceNativeF16Enabled(false);
  RunReduce(s, MmType::kE4M3, AccPrec::kF16, static_cast<int>(s.range(1)), SimdImpl());
  internal::SetReduceNativeF16Enabled(true);
}
void BM_MultimemAddE4M3AccF16Scalar(benchmark::State& s) {
  RunReduce(s, MmType::kE4M3, AccPrec::kF16, static_cast<int>(s.range(1)), Impl{Impl::kScalar});
}
void BM_MultimemAddBF16AccF32(benchmark::State& s) {
  RunReduce(s, MmType::kBF16, AccPrec::kF32, static_cast<int>(s.range(1)), SimdImpl());
}
void BM_MultimemAddBF16AccF32Scalar(benchmark::State& s) {
  RunReduce(s, MmType::kBF16, AccPrec::kF32, static_cast<int>(s.range(1)), Impl{Impl::kScalar});
}
void BM_MultimemAddF32(benchmark::State& s) {
  RunReduce(s, MmType::kF32, AccPrec::kNone, static_cast<int>(s.range(1)), SimdImpl());
}
void BM_MultimemAddF32Scalar(benchmark::State& s) {
  RunReduce(s, MmType::kF32, AccPrec::kNone, static_cast<int>(s.range(1)), Impl{Impl::kScalar});
}
void BM_MultimemMaxE4M3(benchmark::State& s) {
  RunReduce(s, MmType::kE4M3, AccPrec::kNone, static_cast<int>(s.range(1)), SimdImpl(),
            ReduceOp::kMax);
}
void BM_MultimemMaxBF16(benchmark::State& s) {
  RunReduce(s, MmType::kBF16, AccPrec::kNone, static_cast<int>(s.range(1)), SimdImpl(),
            ReduceOp::kMax);
}

// Working set x sources; the scalar baselines only at L1/L2 (they are slow).
void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {kL1Bytes, kL2Bytes, kDramBytes}) {
    for (int64_t nsrc : {2, 4, 8}) b->Args({bytes, nsrc});
  }
}
void ScalarSizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {kL1Bytes, kL2Bytes}) {
    for (int64_t nsrc : {2, 4, 8}) b->Args({bytes, nsrc});
  }
}

BENCHMARK(BM_MultimemAddE4M3AccF16)->Apply(Sizes);
BENCHMARK(BM_MultimemAddE4M3AccF16Highway)->Apply(ScalarSizes);
BENCHMARK(BM_MultimemAddE4M3AccF16Scalar)->Apply(ScalarSizes);
BENCHMARK(BM_MultimemAddBF16AccF32)->Apply(Sizes);
BENCHMARK(BM_MultimemAddBF16AccF32Scalar)->Apply(ScalarSizes);
BENCHMARK(BM_MultimemAddF32)->Apply(Sizes);
BENCHMARK(BM_MultimemAddF32Scalar)->Apply(ScalarSizes);
BENCHMARK(BM_MultimemMaxE4M3)->Apply(Sizes);
BENCHMARK(BM_MultimemMaxBF16)->Apply(Sizes);

}  // namespace
}  // namespace mxpack::bench
