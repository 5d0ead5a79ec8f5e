// Implementation selection shared by every dispatched kernel family.
#include "mxpack/dispatch.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hwy/highway.h"
#include "hwy/targets.h"

namespace mxpack {

std::vector<int64_t> AvailableTargets() {
  std::vector<int64_t> out;
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) out.push_back(t);
  return out;
}

std::string ImplName(Impl impl) {
  if (impl.target == Impl::kBest) return "best";
  if (impl.target == Impl::kScalar) return "scalar";
  return hwy::TargetName(impl.target);
}

absl::StatusOr<Impl> ParseImpl(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "best" || lower == "auto") return Impl{Impl::kBest};
  if (lower == "scalar") return Impl{Impl::kScalar};
  std::string valid = "best, scalar";
  for (int64_t t : AvailableTargets()) {
    if (lower == absl::AsciiStrToLower(hwy::TargetName(t))) return Impl{t};
    absl::StrAppend(&valid, ", ", absl::AsciiStrToLower(hwy::TargetName(t)));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown or unavailable implementation '%s'; expected one of: %s", name, valid));
}

}  // namespace mxpack
