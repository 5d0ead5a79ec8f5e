// Benchmarks of the packed layouts and tcgen05.cp decompression: every kernel
// at the best target and its scalar path, at L1/L2/DRAM working sets.
// range(0) = bytes read + written per iteration; SetBytesProcessed reports
// exactly that, so bytes/s compare directly with BM_Memcpy.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/bench_util.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"

namespace mxpack::bench {
namespace {

// Elements n such that (bytes in + bytes out per element) * n ~= ws.
size_t Elements(int64_t ws, double bytes_per_element, size_t multiple) {
  size_t n = static_cast<size_t>(static_cast<double>(ws) / bytes_per_element);
  return n / multiple * multiple;
}

void Check(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "benchmark setup failed: %s\n", s.ToString().c_str());
    std::abort();
  }
}

Impl ImplArg(int64_t scalar) { return scalar ? Impl{Impl::kScalar} : SimdImpl(); }

// Decompress: 16 bytes in + 16 bytes out per group.
void BM_Decompress(benchmark::State& state, Layout l) {
  const size_t bytes = Elements(state.range(0), 2, 16);
  std::vector<uint8_t> packed(bytes, 0x5A), out(bytes);
  const Impl impl = ImplArg(state.range(1));
  for (auto _ : state) {
    Check(Decompress(l, packed, absl::MakeSpan(out), Fp6Container::kLow6, impl));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * bytes);
}

void BM_Compress(benchmark::State& state, Layout l) {
  const size_t bytes = Elements(state.range(0), 2, 16);
  std::vector<uint8_t> cont(bytes, 0x14), packed(bytes);
  const Impl impl = ImplArg(state.range(1));
  for (auto _ : state) {
    Check(Compress(l, cont, absl::MakeSpan(packed), Fp6Container::kLow6, impl));
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * bytes);
}

// Pack / Unpack: n codes + PackedBytes(l, n) bytes.
double PackedPerElement(Layout l) {
  switch (l) {
    case Layout::kDense4: return 0.5;
    case Layout::kDense6: return 0.75;
    default: return 1.0;
  }
}

void BM_Pack(benchmark::State& state, Layout l) {
  const size_t n = Elements(state.range(0), 1 + PackedPerElement(l), 64);
  std::vector<uint8_t> codes(n), packed(PackedBytes(l, n));
  for (size_t i = 0; i < n; ++i) codes[i] = static_cast<uint8_t>(i % 13);
  const Impl impl = ImplArg(state.range(1));
  for (auto _ : state) {
    Check(Pack(l, codes, absl::MakeSpan(packed), impl));
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(n + packed.size()));
}

void BM_Unpack(benchmark::State& state, Layout l) {
  const size_t n = Elements(state.range(0), 1 + PackedPerElement(l), 64);
  std::vector<uint8_t> codes(n), packed(PackedBytes(l, n), 0xA7);
  const Impl impl = ImplArg(state.range(1));
  for (auto _ : state) {
    Check(Unpack(l, packed, absl::MakeSpan(codes), impl));
    benchmark::DoNotOptimize(codes.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(n + packed.size()));
}

// Fused quantize f32 -> e2m1 b4x16_p64 (4 bytes in + 1 byte out per element)
// and fused decode b4x16_p64 e2m1 -> f32.
void BM_PackEncodeF32E2M1B4x16(benchmark::State& state) {
  const size_t n = Elements(state.range(0), 5, 16);
  std::vector<uint8_t> in(4 * n), packed(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = scalar::F32Bits(static_cast<float>(i % 97) * 0.0625f - 3.0f);
    for (int k = 0; k < 4; ++k) in[4 * i + k] = static_cast<uint8_t>(b >> (8 * k));
  }
  const Impl impl = ImplArg(state.range(1));
  for (auto _ : state) {
    Check(EncodePacked(Format::kF32, Format::kE2M1, Layout::kB4x16P64,
                       EncodePolicy{}, in, absl::MakeSpan(packed), {}, impl));
    benchmark::DoNotOptimize(packed.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 5 * n);
}

void BM_PackDecodeB4x16E2M1F32(benchmark::State& state) {
  const size_t n = Elements(state.range(0), 5, 16);
  std::vector<uint8_t> packed(n, 0x3C), out(4 * n);
  const Impl impl = ImplArg(state.range(1));
  for (auto _ : state) {
    Check(DecodePacked(Layout::kB4x16P64, Format::kE2M1, Format::kF32, packed,
                       absl::MakeSpan(out), impl));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 5 * n);
}

// Args: {working set, scalar?}. Scalar paths at DRAM size would take minutes
// per iteration count; they run at L1 and L2 only.
void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"bytes", "scalar"});
  for (int64_t ws : {kL1Bytes, kL2Bytes, kDramBytes}) b->Args({ws, 0});
  for (int64_t ws : {kL1Bytes, kL2Bytes}) b->Args({ws, 1});
}

BENCHMARK_CAPTURE(BM_Decompress, b4x16_p64, Layout::kB4x16P64)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Decompress, b6x16_p32, Layout::kB6x16P32)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Compress, b4x16_p64, Layout::kB4x16P64)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Compress, b6x16_p32, Layout::kB6x16P32)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Pack, dense4, Layout::kDense4)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Pack, dense6, Layout::kDense6)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Pack, b4x16_p64, Layout::kB4x16P64)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Pack, b6x16_p32, Layout::kB6x16P32)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Unpack, dense4, Layout::kDense4)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Unpack, dense6, Layout::kDense6)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Unpack, b4x16_p64, Layout::kB4x16P64)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Unpack, b6x16_p32, Layout::kB6x16P32)->Apply(Sizes);
BENCHMARK(BM_PackEncodeF32E2M1B4x16)->Apply(Sizes);
BENCHMARK(BM_PackDecodeB4x16E2M1F32)->Apply(Sizes);

}  // namespace
}  // namespace mxpack::bench
