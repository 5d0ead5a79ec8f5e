// Benchmarks of the dispatched conversions (best target) and their scalar
// reference, bytes read + written, at L1/L2/DRAM working sets: every
// (source, destination) pair of docs/semantics.md section 1 under its main policy
// (rn satfinite; ue8m0: rp; decodes: exact), plus the generic-kernel policies
// (rz, rm, rp, rs, relu) for f32 -> e4m3 and f32 -> bf16. The scalar
// reference runs at the L2 size only. Stochastic rounding reads one 4-byte
// random word per element (the caller supplies them, docs/semantics.md
// section 1): those count as bytes read and as part of the working set, like
// the extra sources of the multimem benchmarks. Names:
//   BM_Convert/<from>-><to>/<policy>/bytes:<working set>/<simd|scalar>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "mxpack/convert.h"
#include "mxpack/scalar.h"

namespace mxpack::bench {
namespace {

void BM_Convert(benchmark::State& state, Format from, Format to, EncodePolicy p, bool scalar) {
  const int ib = Traits(from).storage_bytes, ob = Traits(to).storage_bytes;
  const bool stochastic = p.rounding == Rounding::kRS && !IsExactConversion(from, to);
  const int rb = stochastic ? static_cast<int>(sizeof(uint32_t)) : 0;
  const size_t n = static_cast<size_t>(state.range(0)) / static_cast<size_t>(ib + ob + rb);
  std::vector<uint8_t> in(n * ib), out(n * ob);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(RandomBits(1, i));
  if (IsNarrow(from)) {
    // Valid codes: fp4/fp6 use the low bits, ue4m3 requires a zero MSB.
    const FormatTraits& t = Traits(from);
    const int width = t.exp_bits + t.man_bits + (t.has_sign ? 1 : 0);
    for (auto& b : in) b = static_cast<uint8_t>(b & ((1u << width) - 1));
  }
  std::vector<uint32_t> rbits;
  if (stochastic) {
    rbits.resize(n);
    for (size_t i = 0; i < n; ++i) rbits[i] = RandomBits(7, i);
  }
  const Impl impl = scalar ? Impl{Impl::kScalar} : SimdImpl();
  for (auto _ : state) {
    const absl::Status s = ConvertArray(from, to, p, in, absl::MakeSpan(out), rbits, impl);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * (ib + ob + rb)));
}

void Register(Format from, Format to, const EncodePolicy& p) {
  const std::string name = std::string("BM_Convert/") + std::string(FormatName(from)) + "->" +
                           std::string(FormatName(to)) + "/" +
                           (IsExactConversion(from, to) ? std::string("exact") : PolicyToString(p));
  for (bool scalar : {false, true}) {
    auto* b = benchmark::RegisterBenchmark((name + (scalar ? "/scalar" : "/simd")).c_str(),
                                           [=](benchmark::State& st) {
                                             BM_Convert(st, from, to, p, scalar);
                                           });
    b->ArgName("bytes");
    if (scalar) {
      b->Arg(kL2Bytes);
    } else {
      b->Apply(WorkingSets);
    }
  }
}

const int kRegistered = [] {
  const Format narrow[] = {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                           Format::kE5M2, Format::kUE8M0, Format::kUE4M3};
  // Encodes: every wide source to every narrow format, f16 and bf16.
  for (Format from : {Format::kF32, Format::kBF16, Format::kF16}) {
    for (Format to : {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3, Format::kE5M2,
                      Format::kUE8M0, Format::kUE4M3, Format::kF16, Format::kBF16}) {
      if (from == to) continue;
      EncodePolicy p;
      if (to == Format::kUE8M0) p.rounding = Rounding::kRP;
      Register(from, to, p);
    }
  }
  // Decodes: every narrow format to f32, bf16, f16; f16/bf16 -> f32.
  for (Format from : narrow) {
    for (Format to : {Format::kF32, Format::kBF16, Format::kF16}) {
      if (ValidateConversion(from, to, {}).ok()) Register(from, to, {});
    }
  }
  Register(Format::kF16, Format::kF32, {});
  Register(Format::kBF16, Format::kF32, {});
  // The generic kernel's policies.
  for (Format to : {Format::kE4M3, Format::kBF16}) {
    for (Rounding r : {Rounding::kRZ, Rounding::kRM, Rounding::kRP, Rounding::kRS}) {
      EncodePolicy p;
      p.rounding = r;
      Register(Format::kF32, to, p);
    }
    EncodePolicy relu;
    relu.relu = true;
    Register(Format::kF32, to, relu);
    EncodePolicy nosat;
    nosat.saturation = Saturation::kNoSat;
    Register(Format::kF32, to, nosat);
  }
  return 0;
}();

}  // namespace
}  // namespace mxpack::bench
