// Dispatched multimem array reductions: argument checks, then the per-target
// kernels of reduce-inl.h, or the scalar reference for Impl::kScalar and for
// specs without a kernel.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/multimem/reduce.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/multimem/reduce-inl.h"

#if HWY_ONCE
#include "absl/status/status.h"
#include "mxpack/multimem.h"
#include "src/multimem/reduce_args.h"
#include "src/util/dispatch_util.h"
#include "src/util/fp_env.h"

namespace mxpack {

HWY_EXPORT(ReduceFloatAdd);

namespace internal {
namespace {
std::atomic<bool> g_native_f16{true};
}  // namespace
bool ReduceNativeF16Enabled() { return g_native_f16.load(std::memory_order_relaxed); }
void SetReduceNativeF16Enabled(bool enabled) {
  g_native_f16.store(enabled, std::memory_order_relaxed);
}
bool ReduceNativeF16Available() {
#if MXPACK_FP16_INTRIN
  return CpuHasAvx512Fp16();
#else
  return false;
#endif
}
}  // namespace internal

namespace {

// Kernel index of ReduceFloatAdd (reduce-inl.h), or -1 without a kernel.
int KernelKind(const ReduceSpec& spec) {
  const MmTypeInfo& ti = MmTypeTraits(spec.type);
  if (!ti.is_float) return -1;
  if (spec.op == ReduceOp::kMin || spec.op == ReduceOp::kMax) {
    const int is_max = spec.op == ReduceOp::kMax ? 1 : 0;
    switch (ti.element) {
      case Format::kE4M3: return 9 + is_max;
      case Format::kE5M2: return 11 + is_max;
      case Format::kF16: return 13 + is_max;
      case Format::kBF16: return 15 + is_max;
      default: return -1;
    }
  }
  if (spec.op != ReduceOp::kAdd) return -1;
  if (spec.model == ReduceModel::kExactOnce) {
    switch (ti.element) {
      case Format::kE4M3: return 17;
      case Format::kE5M2: return 18;
      case Format::kF16: return 19;
      default: return -1;
    }
  }
  const bool seq_or_tree = spec.model == ReduceModel::kSequential ||
                           spec.model == ReduceModel::kPairwiseTree;
  const bool nccl = spec.model == ReduceModel::kNcclSoftware;
  switch (ti.element) {
    case Format::kE4M3:
    case Format::kE5M2: {
      const int e5 = ti.element == Format::kE5M2 ? 1 : 0;
      if (nccl) return 2 + e5;
      if (seq_or_tree && spec.acc == AccPrec::kF16) return e5;
      return -1;
    }
    case Format::kF16:
    case Format::kBF16: {
      const int bf = ti.element == Format::kBF16 ? 1 : 0;
      if (seq_or_tree && spec.acc == AccPrec::kF32) return 4 + bf;
      // NCCL, and kSequential without .acc (accumulate in the element type),
      // round to the element type after every add.
      if (nccl || (spec.model == ReduceModel::kSequential &&
                   spec.acc == AccPrec::kNone)) {
        return 6 + bf;
      }
      return -1;
    }
    case Format::kF32:
      return (seq_or_tree || nccl) ? 8 : -1;
    default:
      return -1;
  }
}

}  // namespace

bool HasSimdReduce(const ReduceSpec& spec) { return KernelKind(spec) >= 0; }

static absl::Status ReduceArraysInDefaultEnv(
    const ReduceSpec& spec, absl::Span<const absl::Span<const uint8_t>> sources,
    absl::Span<uint8_t> out, Impl impl) {
  absl::StatusOr<size_t> n = internal::CheckReduceArgs(spec, sources, out);
  if (!n.ok()) return n.status();
  const int kind = KernelKind(spec);
  // kExactOnce kernels: exact f64 sums up to kExactF64Sources (8192) inputs.
  const bool too_many = kind >= 17 && sources.size() > 8192;
  if (impl.target == Impl::kScalar || kind < 0 || too_many) {
    return scalar::ReduceArrays(spec, sources, out);
  }
  std::vector<const uint8_t*> ptrs(sources.size());
  for (size_t r = 0; r < sources.size(); ++r) ptrs[r] = sources[r].data();
  internal::Pick(HWY_DISPATCH_TABLE(ReduceFloatAdd), impl)(
      kind, spec, ptrs.data(), ptrs.size(), out.data(), *n);
  return absl::OkStatus();
}

absl::Status ReduceArrays(const ReduceSpec& spec,
                          absl::Span<const absl::Span<const uint8_t>> sources,
                          absl::Span<uint8_t> out, Impl impl) {
  return internal::InDefaultFpEnv(
      [&] { return ReduceArraysInDefaultEnv(spec, sources, out, impl); });
}

}  // namespace mxpack
#endif  // HWY_ONCE
