// Internal: picks an entry of a Highway HWY_EXPORT table for a forced target.
// Include after hwy/highway.h, inside `#if HWY_ONCE`.
#ifndef MXPACK_SRC_UTIL_DISPATCH_UTIL_H_
#define MXPACK_SRC_UTIL_DISPATCH_UTIL_H_

#include <cstdint>

#include "hwy/highway.h"
#include "mxpack/dispatch.h"

namespace mxpack::internal {

// Index of `target` (one HWY_* bit) in an HWY_EXPORT table, mirroring
// hwy::ChosenTarget::GetIndex() of Highway 1.0.3.
inline size_t TableIndex(int64_t target) {
  const int64_t mask = (target == HWY_EMU128 || target == HWY_SCALAR)
                           ? HWY_CHOSEN_TARGET_MASK_SCALAR
                           : HWY_CHOSEN_TARGET_SHIFT(target);
  return hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(mask));
}

// Returns the function of `table` for impl.target, or the dynamically chosen
// one for Impl::kBest. Preconditions: impl.target is kBest or a target from
// AvailableTargets() (ParseImpl guarantees it); never kScalar.
//
// Before any dispatch in the process, Highway's chosen target is not yet
// initialized and GetIndex() is 0: the table's entry 0, which queries the CPU
// (cpuid, a VM exit under virtualization) on every call. Callers keep the
// returned pointer for many calls, so initialize the choice first.
template <typename Fn, size_t N>
Fn Pick(Fn const (&table)[N], Impl impl) {
  if (impl.target == Impl::kBest) {
    hwy::ChosenTarget& chosen = hwy::GetChosenTarget();
    if (!chosen.IsInitialized()) chosen.Update(hwy::SupportedTargets());
    return table[chosen.GetIndex()];
  }
  return table[TableIndex(impl.target)];
}

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_UTIL_DISPATCH_UTIL_H_
