// Shared pieces of the benchmarks: working-set sizes and byte accounting.
#ifndef MXPACK_BENCH_BENCH_UTIL_H_
#define MXPACK_BENCH_BENCH_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "benchmark/benchmark.h"
#include "mxpack/dispatch.h"

namespace mxpack::bench {

// Working sets (bytes read + written) sized for L1, L2 and DRAM on the CI
// machines (48 KiB L1d, 2 MiB L2, >= 32 MiB L3 per core).
inline constexpr int64_t kL1Bytes = 24 << 10;
inline constexpr int64_t kL2Bytes = 768 << 10;
inline constexpr int64_t kDramBytes = 256 << 20;

// Registers Args for the three sizes: each arg is a working-set size in bytes.
inline void WorkingSets(benchmark::internal::Benchmark* b) {
  b->Arg(kL1Bytes)->Arg(kL2Bytes)->Arg(kDramBytes);
}

// The implementation every "simd" benchmark runs: the best target, or the
// one named by the environment variable MXPACK_BENCH_TARGET (a ParseImpl
// name: "AVX3", "avx2", "scalar", ...), so that targets can be compared in
// one binary. An unknown name stops the run with the list of valid ones.
inline Impl SimdImpl() {
  static const Impl impl = [] {
    const char* name = std::getenv("MXPACK_BENCH_TARGET");
    if (name == nullptr || *name == '\0') return Impl{Impl::kBest};
    const absl::StatusOr<Impl> parsed = ParseImpl(name);
    if (!parsed.ok()) {
      std::fprintf(stderr, "MXPACK_BENCH_TARGET: %s\n", parsed.status().ToString().c_str());
      std::exit(2);
    }
    return *parsed;
  }();
  return impl;
}

}  // namespace mxpack::bench

#endif  // MXPACK_BENCH_BENCH_UTIL_H_
