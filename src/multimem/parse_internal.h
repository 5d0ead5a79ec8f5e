// Internal to src/multimem: helpers the spelling parser, the operand checks
// and the target rules share.
#ifndef MXPACK_SRC_MULTIMEM_PARSE_INTERNAL_H_
#define MXPACK_SRC_MULTIMEM_PARSE_INTERNAL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "mxpack/multimem.h"

namespace mxpack {
namespace multimem_internal {

inline bool IsFp8(MmType t) {
  const Format e = MmTypeTraits(t).element;
  return MmTypeTraits(t).is_float && (e == Format::kE4M3 || e == Format::kE5M2);
}
inline bool IsHalf(MmType t) {
  const Format e = MmTypeTraits(t).element;
  return MmTypeTraits(t).is_float && (e == Format::kF16 || e == Format::kBF16);
}

inline absl::Status RuleError(MultimemRule rule, MultimemRule* out,
                       const std::string& message) {
  if (out != nullptr) *out = rule;
  return absl::InvalidArgumentError(
      absl::StrCat("[", MultimemRuleName(rule), "] ", message));
}

}  // namespace multimem_internal
}  // namespace mxpack

#endif  // MXPACK_SRC_MULTIMEM_PARSE_INTERNAL_H_
