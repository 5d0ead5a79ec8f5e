// Registers the tcgen05 family (cp, shift, ld, st) with the `mxpack
// ptx-check` registry of include/mxpack/ptx_check.h.
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "mxpack/ptx_check.h"
#include "mxpack/tcgen05.h"

namespace mxpack {
namespace {

PtxCheckResult CheckTcgen05Family(absl::string_view spelling,
                                  absl::string_view target) {
  absl::StatusOr<std::string> r = CheckTcgen05(
      spelling, target.empty() ? std::nullopt
                               : std::optional<absl::string_view>(target));
  PtxCheckResult out;
  out.ok = r.ok();
  out.text = r.ok() ? *r : std::string(r.status().message());
  return out;
}

constexpr PtxFamily kTcgen05Family = {
    "tcgen05.",
    "tcgen05 cp/shift/ld/st (PTX 9.7.16.2.3, 9.7.16.8.3, 9.7.16.9)",
    &CheckTcgen05Family};

}  // namespace

bool RegisterTcgen05PtxFamily() {
  static const bool registered = RegisterPtxFamily(kTcgen05Family);
  return registered;
}

namespace {
// Also registers itself whenever this object file is linked.
[[maybe_unused]] const bool kRegistered = RegisterTcgen05PtxFamily();
}  // namespace

}  // namespace mxpack
