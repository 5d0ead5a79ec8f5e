// Choosing the implementation of a dispatched kernel: the best SIMD target,
// a forced Highway target (tests, fuzzing, benchmarks), or the scalar
// reference. Public headers never include Highway; targets are int64 bits
// with Highway's values (HWY_AVX2 etc.).
#ifndef MXPACK_DISPATCH_H_
#define MXPACK_DISPATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace mxpack {

struct Impl {
  // kBest: the best target this CPU supports (default).
  // kScalar: the scalar reference (src/format/scalar.cc), not a SIMD target.
  // Anything else: exactly one Highway target bit, e.g. from AvailableTargets().
  static constexpr int64_t kBest = 0;
  static constexpr int64_t kScalar = -1;
  int64_t target = kBest;
};

// Highway targets compiled into mxpack that this CPU supports, best first.
std::vector<int64_t> AvailableTargets();

// "best", "scalar", or Highway's name of a target ("AVX3_DL", "EMU128", ...).
std::string ImplName(Impl impl);

// Parses "best", "scalar" or a target name (case-insensitive). Targets not
// compiled or not supported by this CPU are an error listing the valid ones.
absl::StatusOr<Impl> ParseImpl(absl::string_view name);

}  // namespace mxpack

#endif  // MXPACK_DISPATCH_H_
