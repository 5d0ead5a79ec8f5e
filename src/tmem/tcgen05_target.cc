// Target table of the tcgen05 data-movement instructions: which sm_ targets
// and PTX ISA versions accept each form, and the combined check behind
// `mxpack ptx-check` (see include/mxpack/tcgen05.h for sources).
#include "mxpack/tcgen05.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"

#include "src/tmem/tcgen05_internal.h"

namespace mxpack {
namespace tcgen05 {

using namespace internal;  // NOLINT: this domain's own helpers

namespace {

// PTX ISA versions known to the table, oldest first (10 * major + minor).
constexpr int kPtxVersions[] = {86, 87, 88, 90, 91, 92};

std::string VersionName(int v) { return absl::StrFormat("%d.%d", v / 10, v % 10); }

// Whether the target name exists in PTX ISA version v (only the SMs the
// tcgen05 rules mention are tracked; others are assumed to exist).
bool TargetExists(const Target& t, int v, std::string* why) {
  int from = 0, until = 1000;  // [from, until).
  switch (t.sm) {
    case 100: from = t.suffix == 'f' ? 88 : 86; break;
    case 101: from = t.suffix == 'f' ? 88 : 86; until = 90; break;
    case 103: from = 88; break;
    case 110: from = 90; break;
    default: return true;
  }
  if (v < from) {
    *why = absl::StrFormat("%s needs PTX ISA %s or later, got %s", TargetName(t),
                           VersionName(from), VersionName(v));
    return false;
  }
  if (v >= until) {
    *why = absl::StrFormat("%s was renamed sm_110%s from PTX ISA 9.0, got %s",
                           TargetName(t), t.suffix ? std::string(1, t.suffix) : "",
                           VersionName(v));
    return false;
  }
  return true;
}

// The tcgen05 target rule for one PTX version (names assumed to exist).
bool RuleAllows(const Instruction& inst, const Target& t, int v) {
  if (v < 86) return false;
  if (inst.op == Op::kShift) {
    // [PTX] tcgen05.shift Target ISA notes: sm_100a, sm_101a (sm_110a from
    // 9.0), sm_103a; no family-specific targets.
    return t.suffix == 'a' &&
           (t.sm == 100 || t.sm == 101 || t.sm == 103 || t.sm == 110);
  }
  // cp, ld, st [PTX Target ISA notes]: sm_100a, sm_101a (sm_110a from 9.0);
  // from PTX 8.8 also family sm_100f / sm_110f "or higher in the same
  // family" (family 100: sm_100, sm_103; family 110: sm_110, named sm_101
  // before 9.0). An 'a' target includes the features of its family.
  if (t.suffix == 'a' && (t.sm == 100 || t.sm == 101 || t.sm == 110)) return true;
  const bool family = t.sm == 100 || t.sm == 103 || t.sm == 101 || t.sm == 110;
  return (t.suffix == 'a' || t.suffix == 'f') && family && v >= 88;
}

std::string RuleText(const Instruction& inst) {
  if (inst.op == Op::kShift) {
    return "tcgen05.shift is supported on sm_100a, sm_101a (sm_110a from PTX ISA "
           "9.0) and sm_103a only, from PTX ISA 8.6; no family-specific targets";
  }
  return absl::StrCat(OpFull(inst.op),
                      " is supported on sm_100a and sm_101a (sm_110a from PTX ISA "
                      "9.0) from PTX ISA 8.6, and on the families sm_100f (sm_100, "
                      "sm_103) and sm_110f from PTX ISA 8.8");
}

}  // namespace

absl::StatusOr<Target> ParseTarget(absl::string_view spelling) {
  absl::string_view s = absl::StripAsciiWhitespace(spelling);
  Target t;
  absl::string_view version;
  if (size_t at = s.find('@'); at != absl::string_view::npos) {
    version = s.substr(at + 1);
    s = s.substr(0, at);
    absl::ConsumePrefix(&version, "ptx");
    std::vector<absl::string_view> parts = absl::StrSplit(version, '.');
    int major = 0, minor = 0;
    if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &major) &&
        absl::SimpleAtoi(parts[1], &minor) && major >= 1 && major < 100 &&
        minor >= 0 && minor < 10) {
      t.ptx_version = major * 10 + minor;
    } else if (parts.size() == 1 && version.size() == 2 &&
               absl::SimpleAtoi(version, &major)) {
      t.ptx_version = major;  // "@ptx88".
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "target: expected a PTX ISA version like '@ptx8.8', got '@%s'", version));
    }
  }
  if (!absl::ConsumePrefix(&s, "sm_")) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "target: expected 'sm_<NN>[a|f][@ptxM.m]' (e.g. sm_100a), got '%s'",
        spelling));
  }
  if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) {
    t.suffix = s.back();
    s.remove_suffix(1);
  }
  if (s.empty() || s.size() > 3 || !absl::SimpleAtoi(s, &t.sm) || t.sm < 10) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "target: expected 'sm_<NN>[a|f][@ptxM.m]' (e.g. sm_100a), got '%s'",
        spelling));
  }
  return t;
}

std::string TargetName(const Target& t) {
  std::string s = absl::StrCat("sm_", t.sm);
  if (t.suffix) s.push_back(t.suffix);
  return s;
}

absl::StatusOr<std::string> LegalPtxVersions(const Instruction& inst,
                                             const Target& target) {
  int first = 0, last = 0;
  std::string why;
  for (int v : kPtxVersions) {
    if (TargetExists(target, v, &why) && RuleAllows(inst, target, v)) {
      if (first == 0) first = v;
      last = v;
    }
  }
  if (first == 0) return absl::NotFoundError("no PTX ISA version");
  if (last == kPtxVersions[std::size(kPtxVersions) - 1]) {
    return absl::StrCat(VersionName(first), " or later");
  }
  return first == last ? VersionName(first)
                       : absl::StrCat(VersionName(first), " .. ", VersionName(last));
}

absl::Status CheckTarget(const Instruction& inst, const Target& target) {
  if (absl::Status st = Validate(inst); !st.ok()) return st;
  const std::string what = OpFull(inst.op);
  if (target.ptx_version != 0) {
    if (target.ptx_version < 86) {
      return RuleError("target", absl::StrFormat(
                                     "%s needs PTX ISA 8.6 or later, got %s", what,
                                     VersionName(target.ptx_version)));
    }
    std::string why;
    if (!TargetExists(target, target.ptx_version, &why)) {
      return RuleError("target", why);
    }
    if (!RuleAllows(inst, target, target.ptx_version)) {
      return RuleError("target",
                       absl::StrFormat("%s is not supported on %s with PTX ISA %s (%s)",
                                       what, TargetName(target),
                                       VersionName(target.ptx_version),
                                       RuleText(inst)));
    }
    return absl::OkStatus();
  }
  if (!LegalPtxVersions(inst, target).ok()) {
    return RuleError("target",
                     absl::StrFormat("%s is not supported on %s (%s)", what,
                                     TargetName(target), RuleText(inst)));
  }
  return absl::OkStatus();
}

}  // namespace tcgen05

absl::StatusOr<std::string> CheckTcgen05(absl::string_view spelling,
                                         std::optional<absl::string_view> target) {
  absl::StatusOr<tcgen05::Instruction> inst = tcgen05::Parse(spelling);
  if (!inst.ok()) return inst.status();
  std::string out = tcgen05::Describe(*inst);
  if (target.has_value()) {
    absl::StatusOr<tcgen05::Target> t = tcgen05::ParseTarget(*target);
    if (!t.ok()) return t.status();
    if (absl::Status st = tcgen05::CheckTarget(*inst, *t); !st.ok()) return st;
    absl::StatusOr<std::string> versions = tcgen05::LegalPtxVersions(*inst, *t);
    absl::StrAppend(&out, "  target ", tcgen05::TargetName(*t), ": legal",
                    versions.ok() ? absl::StrCat(" with PTX ISA ", *versions) : "",
                    "\n");
  }
  return out;
}

}  // namespace mxpack
