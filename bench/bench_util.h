// Shared pieces of the benchmarks: working-set sizes and byte accounting.
#ifndef MXPACK_BENCH_BENCH_UTIL_H_
#define MXPACK_BENCH_BENCH_UTIL_H_

#include <cstddef>
#include <cstdint>

#include "benchmark/benchmark.h"

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

}  // namespace mxpack::bench

#endif  // MXPACK_BENCH_BENCH_UTIL_H_
