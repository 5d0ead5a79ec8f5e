// Benchmarks of the dispatched conversions (best target) and their scalar
// reference, bytes read + written, at L1/L2/DRAM working sets.
#include <vector>

#include "bench/bench_util.h"
#include "mxpack/convert.h"
#include "mxpack/scalar.h"

namespace mxpack::bench {
namespace {

template <Format kFrom, Format kTo, bool kScalar>
void BM_Convert(benchmark::State& state) {
  const int ib = Traits(kFrom).storage_bytes, ob = Traits(kTo).storage_bytes;
  const size_t n = static_cast<size_t>(state.range(0)) / static_cast<size_t>(ib + ob);
  std::vector<uint8_t> in(n * ib), out(n * ob);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(RandomBits(1, i));
  if (IsNarrow(kFrom)) {
    // Valid codes: fp4/fp6 use the low bits, ue4m3 requires a zero MSB.
    const FormatTraits& t = Traits(kFrom);
    const int width = t.exp_bits + t.man_bits + (t.has_sign ? 1 : 0);
    for (auto& b : in) b = static_cast<uint8_t>(b & ((1u << width) - 1));
  }
  EncodePolicy p;
  if (kTo == Format::kUE8M0) p.rounding = Rounding::kRP;
  const Impl impl{kScalar ? Impl::kScalar : Impl::kBest};
  for (auto _ : state) {
    const absl::Status s = ConvertArray(kFrom, kTo, p, in, absl::MakeSpan(out), {}, impl);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * (ib + ob)));
}

#define MXPACK_CONVERT_BENCH(FROM, TO)                                              \
  BENCHMARK_TEMPLATE(BM_Convert, Format::FROM, Format::TO, false)->Apply(WorkingSets); \
  BENCHMARK_TEMPLATE(BM_Convert, Format::FROM, Format::TO, true)->Arg(kL2Bytes)

MXPACK_CONVERT_BENCH(kF32, kE4M3);
MXPACK_CONVERT_BENCH(kF32, kE5M2);
MXPACK_CONVERT_BENCH(kF32, kE2M1);
MXPACK_CONVERT_BENCH(kF32, kE2M3);
MXPACK_CONVERT_BENCH(kF32, kE3M2);
MXPACK_CONVERT_BENCH(kF32, kUE8M0);
MXPACK_CONVERT_BENCH(kF32, kUE4M3);
MXPACK_CONVERT_BENCH(kF32, kBF16);
MXPACK_CONVERT_BENCH(kF32, kF16);
MXPACK_CONVERT_BENCH(kBF16, kE4M3);
MXPACK_CONVERT_BENCH(kBF16, kE2M1);
MXPACK_CONVERT_BENCH(kF16, kE4M3);
MXPACK_CONVERT_BENCH(kE4M3, kF32);
MXPACK_CONVERT_BENCH(kE2M1, kF32);
MXPACK_CONVERT_BENCH(kE4M3, kBF16);
MXPACK_CONVERT_BENCH(kE5M2, kF16);

}  // namespace
}  // namespace mxpack::bench
