// The tcgen05 family (cp, shift, ld, st) of the `mxpack ptx-check` registry
// of include/mxpack/ptx_check.h, over CheckTcgen05 (include/mxpack/tcgen05.h).
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "mxpack/ptx_check.h"
#include "mxpack/tcgen05.h"

namespace mxpack {
namespace {

PtxCheckResult CheckTcgen05Family(absl::string_view spelling,
                                  absl::string_view target) {
  PtxCheckResult out;
  // Only the data-movement instructions are modelled; tcgen05.mma, .alloc,
  // .commit, ... are neither legal nor illegal here.
  absl::string_view op = PtxOpcodeOf(spelling);
  op.remove_prefix(sizeof("tcgen05.") - 1);
  op = op.substr(0, op.find('.'));
  if (op != "cp" && op != "shift" && op != "ld" && op != "st") {
    out.usage_error = true;
    out.text = absl::StrCat("not checked: tcgen05.", op,
                            " is not modelled; expected tcgen05.cp, "
                            "tcgen05.shift, tcgen05.ld or tcgen05.st\n");
    return out;
  }
  if (!target.empty()) {
    absl::StatusOr<tcgen05::Target> t = tcgen05::ParseTarget(target);
    if (!t.ok()) {
      out.usage_error = true;
      out.text = absl::StrCat("not checked: ", t.status().message(), "\n");
      return out;
    }
  }
  absl::StatusOr<std::string> r = CheckTcgen05(
      spelling,
      target.empty() ? std::nullopt : std::optional<absl::string_view>(target));
  out.ok = r.ok();
  out.text = r.ok() ? *r : std::string(r.status().message());
  return out;
}

constexpr PtxFamily kTcgen05Family = {
    "tcgen05.", "tcgen05 cp/shift/ld/st (PTX 9.7.16.2.3, 9.7.16.8.3, 9.7.16.9)",
    &CheckTcgen05Family};

}  // namespace

// Built into the registry by src/ptx/ptx_check.cc.
PtxFamily Tcgen05PtxFamily() { return kTcgen05Family; }

bool RegisterTcgen05PtxFamily() {
  static const bool registered = RegisterPtxFamily(kTcgen05Family);
  return registered;
}

}  // namespace mxpack
