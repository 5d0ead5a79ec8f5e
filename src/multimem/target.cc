// Target and PTX ISA requirements of the multimem.* instructions
// (docs/semantics.md section 4, docs/ptx_check.md).
#include "mxpack/multimem.h"

#include <algorithm>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "mxpack/ptx_check.h"
#include "src/multimem/parse_internal.h"
#include "src/util/ptx_operands.h"

namespace mxpack {

using namespace multimem_internal;  // NOLINT: this domain's own helpers

// ---------------------------------------------------------------------------
// Targets.
// ---------------------------------------------------------------------------

std::string PtxTarget::ToString() const {
  std::string s = absl::StrCat("sm_", sm);
  if (suffix != '\0') s.push_back(suffix);
  return s;
}

absl::StatusOr<PtxTarget> ParsePtxTarget(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
  absl::string_view v = n;
  if (!absl::ConsumePrefix(&v, "sm_")) absl::ConsumePrefix(&v, "compute_");
  PtxTarget t;
  if (!v.empty() && (v.back() == 'a' || v.back() == 'f')) {
    t.suffix = v.back();
    v.remove_suffix(1);
  }
  int sm = 0;
  if (v.empty() || !absl::SimpleAtoi(v, &sm) || sm <= 0 || sm > 1000 ||
      n.size() < 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "target='%s': expected sm_<number>[a|f], e.g. sm_90, sm_100a, sm_100f",
        name));
  }
  t.sm = sm;
  return t;
}

int MultimemMinPtxIsa(const MultimemInstruction& in) {
  // PTX ISA Notes: introduced in 8.1; .acc::f32 in 8.2; fp8 types and
  // .acc::f16 in 8.6.
  if (MultimemNeedsFp8Target(in)) return 86;
  if (in.acc == AccPrec::kF32) return 82;
  return 81;
}

bool MultimemNeedsFp8Target(const MultimemInstruction& in) {
  return IsFp8(in.type) || in.acc == AccPrec::kF16;
}

std::string MultimemTargetText(const MultimemInstruction& in) {
  if (!MultimemNeedsFp8Target(in)) return "sm_90 or higher";
  return "sm_100a, sm_101a (renamed sm_110a in PTX ISA 9.0), sm_120a, "
         "sm_121a; from PTX ISA 8.8 also sm_100f or higher in the same family "
         "(sm_100f, sm_103f, sm_103a) and sm_101f (renamed sm_110f) or higher "
         "in the same family";
}

namespace {

// PTX ISA version (x 10) that introduced a target name; 0 = unknown target.
// From the PTX release notes: sm_90 7.8, sm_90a 8.0, sm_100/100a/101/101a
// 8.6, sm_120/120a 8.7, sm_100f/101f/103*/120f/121* 8.8, sm_110* 9.0.
int TargetIntroduced(const PtxTarget& t) {
  switch (t.sm) {
    case 90:
      if (t.suffix == 'f') return 0;
      return t.suffix == 'a' ? 80 : 78;
    case 100:
    case 101:
      return t.suffix == 'f' ? 88 : 86;
    case 103:
    case 121:
      return 88;
    case 110:
      return 90;
    case 120:
      return t.suffix == 'f' ? 88 : 87;
    default:
      return 0;
  }
}

}  // namespace

absl::StatusOr<int> CheckMultimemTarget(const MultimemInstruction& in,
                                        const PtxTarget& target) {
  const std::string spelled = in.ToString();
  const int introduced = TargetIntroduced(target);
  if (target.sm < 90) {
    return RuleError(MultimemRule::kTarget, nullptr, absl::StrFormat(
        "%s: multimem requires sm_90 or higher; got %s", spelled,
        target.ToString()));
  }
  if (introduced == 0) {
    return RuleError(MultimemRule::kTarget, nullptr, absl::StrFormat(
        "%s: unknown target %s; expected one of sm_90, sm_90a, sm_100[a|f], "
        "sm_101[a|f], sm_103[a|f], sm_110[a|f], sm_120[a|f], sm_121[a|f]",
        spelled, target.ToString()));
  }
  int isa = std::max(MultimemMinPtxIsa(in), introduced);
  if (!MultimemNeedsFp8Target(in)) return isa;
  const char* what = IsFp8(in.type) ? "fp8 types (.e5m2*/.e4m3*)" : ".acc::f16";
  // Directly listed arch-specific targets (from PTX 8.6; 110a is the 9.0 name
  // of 101a).
  const bool listed_a =
      target.suffix == 'a' && (target.sm == 100 || target.sm == 101 ||
                               target.sm == 110 || target.sm == 120 ||
                               target.sm == 121);
  if (listed_a) return isa;
  // Family clauses (from PTX 8.8): "sm_100f or higher in the same family"
  // (sm_100f, sm_103f; sm_103a includes the family features of sm_103f) and
  // "sm_101f or higher in the same family", renamed sm_110f.
  const bool family10 = target.sm >= 100 && target.sm <= 109 && target.sm != 101;
  const bool family11 = target.sm == 101 || (target.sm >= 110 && target.sm <= 119);
  if ((target.suffix == 'f' || target.suffix == 'a') && (family10 || family11)) {
    return std::max(isa, 88);
  }
  return RuleError(MultimemRule::kTarget, nullptr, absl::StrFormat(
      "%s: %s are not supported on %s; expected %s", spelled, what,
      target.ToString(), MultimemTargetText(in)));
}


}  // namespace mxpack
