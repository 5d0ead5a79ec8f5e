// Benchmarks of MX / NVFP4 block quantization (include/mxpack/mx.h): f32 and
// bf16 input, every format into its GPU layout (b4x16_p64 / b6x16_p32 / codes)
// with tcgen05 scale tiles, and back to f32, bf16 (`_to_bf16`) or f16
// (`_to_f16`), at the L2 and DRAM working sets, best target and scalar
// reference. Bytes = input + elements + scales (dequantization: output +
// elements + scales), so bytes/s compare directly with BM_Memcpy.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "mxpack/mx.h"
#include "mxpack/scalar.h"

namespace mxpack::bench {
namespace {

constexpr size_t kCols = 1024;

ElementLayout GpuLayout(MxFormat f) {
  const int bits = Traits(MxElementFormat(f)).bits;
  return bits == 4 ? ElementLayout::kB4x16P64
                   : (bits == 6 ? ElementLayout::kB6x16P32 : ElementLayout::kCodes);
}

// Gaussian weights with a few outliers, in `from`.
std::vector<uint8_t> Weights(size_t n, Format from) {
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 0.02f);
  std::vector<uint8_t> b(n * static_cast<size_t>(Traits(from).storage_bytes));
  for (size_t i = 0; i < n; ++i) {
    float x = g(rng);
    if (i % 997 == 0) x *= 40.0f;
    const uint32_t bits = scalar::F32Bits(x);
    if (from == Format::kF32) {
      std::memcpy(&b[4 * i], &bits, 4);
    } else {
      const uint16_t h = static_cast<uint16_t>(
          scalar::Convert(Format::kF32, from, bits, EncodePolicy{}));
      std::memcpy(&b[2 * i], &h, 2);
    }
  }
  return b;
}

void BM_QuantizeMx(benchmark::State& state, MxFormat f, Format from) {
  MxShape s{f, GpuLayout(f), ScaleLayout::kTcgen05, 1, kCols};
  const double per_elem = Traits(from).storage_bytes +
                          static_cast<double>(s.element_row_bytes()) / kCols +
                          1.0 / static_cast<double>(s.block());
  s.rows = std::max<size_t>(
      1, static_cast<size_t>(static_cast<double>(state.range(0)) / per_elem) / kCols);
  const std::vector<uint8_t> in = Weights(s.rows * kCols, from);
  std::vector<uint8_t> elements(s.element_bytes()), scales(s.scale_bytes());
  MxOptions o;
  o.layout = s.layout;
  o.scale_layout = s.scale_layout;
  o.tensor_scale = 0.001f;  // NVFP4: as computed once per tensor
  const Impl impl = state.range(1) ? Impl{Impl::kScalar} : SimdImpl();
  for (auto _ : state) {
    const absl::Status st =
        QuantizeMxRows(f, from, in, s.rows, kCols, 0, s.rows, o,
                       absl::MakeSpan(elements), absl::MakeSpan(scales), impl);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      std::abort();
    }
    benchmark::DoNotOptimize(elements.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(in.size() + elements.size() +
                                               s.rows * s.blocks_per_row()));
}

void BM_DequantizeMx(benchmark::State& state, MxFormat f, Format to) {
  MxShape s{f, GpuLayout(f), ScaleLayout::kTcgen05, 1, kCols};
  const size_t out_bytes = static_cast<size_t>(Traits(to).storage_bytes);
  const double per_elem = static_cast<double>(out_bytes) + static_cast<double>(s.element_row_bytes()) / kCols +
                          1.0 / static_cast<double>(s.block());
  s.rows = std::max<size_t>(
      1, static_cast<size_t>(static_cast<double>(state.range(0)) / per_elem) / kCols);
  const std::vector<uint8_t> in = Weights(s.rows * kCols, Format::kF32);
  MxOptions o;
  o.layout = s.layout;
  o.scale_layout = s.scale_layout;
  absl::StatusOr<MxTensor> q = QuantizeMx(f, Format::kF32, in, s.rows, kCols, o);
  if (!q.ok()) std::abort();
  std::vector<uint8_t> out(s.rows * kCols * out_bytes);
  const Impl impl = state.range(1) ? Impl{Impl::kScalar} : SimdImpl();
  for (auto _ : state) {
    if (!DequantizeMx(View(*q), to, absl::MakeSpan(out), impl).ok()) {
      std::abort();
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(out.size() + q->elements.size() +
                                               s.rows * s.blocks_per_row()));
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Args({kL2Bytes, 0})->Args({kDramBytes, 0})->Args({kL2Bytes, 1});
  b->ArgNames({"bytes", "scalar"});
}

#define MXPACK_MX_BENCH(fmt, name)                                             \
  BENCHMARK_CAPTURE(BM_QuantizeMx, name##_f32, MxFormat::fmt, Format::kF32)    \
      ->Apply(Sizes);                                                          \
  BENCHMARK_CAPTURE(BM_QuantizeMx, name##_bf16, MxFormat::fmt, Format::kBF16)  \
      ->Apply(Sizes);                                                          \
  BENCHMARK_CAPTURE(BM_DequantizeMx, name##_f32, MxFormat::fmt, Format::kF32)  \
      ->Apply(Sizes);                                                          \
  BENCHMARK_CAPTURE(BM_DequantizeMx, name##_to_bf16, MxFormat::fmt,           \
                    Format::kBF16)                                             \
      ->Apply(Sizes);                                                          \
  BENCHMARK_CAPTURE(BM_DequantizeMx, name##_to_f16, MxFormat::fmt, Format::kF16) \
      ->Apply(Sizes)

MXPACK_MX_BENCH(kMxfp4, mxfp4);
MXPACK_MX_BENCH(kNvfp4, nvfp4);
MXPACK_MX_BENCH(kMxfp6E2m3, mxfp6_e2m3);
MXPACK_MX_BENCH(kMxfp6E3m2, mxfp6_e3m2);
MXPACK_MX_BENCH(kMxfp8E4m3, mxfp8_e4m3);
MXPACK_MX_BENCH(kMxfp8E5m2, mxfp8_e5m2);

}  // namespace
}  // namespace mxpack::bench
