// Differential fuzzer of multimem: (1) arbitrary spellings through the
// validator and CheckPtx never crash, and every accepted spelling round-trips
// through ToString; (2) input bytes choose a kernel spec, source count, length
// and data; every compiled SIMD target must equal the scalar model (on CPUs
// with AVX512-FP16 with and without the native f16 kernels).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mxpack/dispatch.h"
#include "mxpack/multimem.h"
#include "mxpack/ptx_check.h"
#include "src/multimem/reduce_args.h"

namespace {

const mxpack::MmType kTypes[] = {mxpack::MmType::kE4M3, mxpack::MmType::kE5M2,
                                 mxpack::MmType::kF16,  mxpack::MmType::kBF16,
                                 mxpack::MmType::kF32,  mxpack::MmType::kE4M3x2,
                                 mxpack::MmType::kF64,  mxpack::MmType::kS32};

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "multimem_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxpack;
  if (size < 4) return 0;
  const uint8_t mode = data[0];
  if (mode % 4 == 0) {
    // Spelling mode: the rest is text; also splice it after a valid prefix.
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    for (const std::string& s : {text, "multimem." + text, "multimem.ld_reduce." + text}) {
      absl::StatusOr<MultimemInstruction> in = ParseMultimem(s);
      if (in.ok()) {
        absl::StatusOr<MultimemInstruction> again = ParseMultimem(in->ToString());
        Check(again.ok() && again->ToString() == in->ToString(), "round trip");
      }
      (void)CheckPtx(s, "sm_100a");
      (void)CheckPtx(s, text);
    }
    return 0;
  }
  // Data mode.
  ReduceSpec spec;
  spec.type = kTypes[data[1] % (sizeof(kTypes) / sizeof(kTypes[0]))];
  spec.op = static_cast<ReduceOp>(1 + (data[2] >> 4) % 3);  // add, min, max
  spec.acc = static_cast<AccPrec>(data[2] % 3);
  spec.model = static_cast<ReduceModel>((data[2] >> 2) % 4);
  if (!ValidateReduceSpec(spec).ok()) return 0;
  const size_t nsrc = 1 + data[3] % 9;
  const size_t eb = static_cast<size_t>(MmTypeTraits(spec.type).element_bytes);
  const size_t n = (size - 4) / (nsrc * eb);
  std::vector<absl::Span<const uint8_t>> srcs;
  for (size_t r = 0; r < nsrc; ++r) srcs.push_back({data + 4 + r * n * eb, n * eb});
  std::vector<uint8_t> want(n * eb), got(n * eb);
  Check(scalar::ReduceArrays(spec, srcs, absl::MakeSpan(want)).ok(), "scalar failed");
  const bool both = internal::ReduceNativeF16Available();
  for (int native = both ? 0 : 1; native <= 1; ++native) {
    internal::SetReduceNativeF16Enabled(native == 1);
    for (int64_t t : AvailableTargets()) {
      Check(ReduceArrays(spec, srcs, absl::MakeSpan(got), Impl{t}).ok(), "simd failed");
      if (got != want) {
        std::fprintf(stderr, "mismatch on %s (native f16 %d) for %s\n",
                     ImplName(Impl{t}).c_str(), native, MmTypeTraits(spec.type).name);
        std::abort();
      }
    }
  }
  return 0;
}
