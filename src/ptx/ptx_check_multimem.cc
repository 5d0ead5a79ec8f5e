// The "multimem." family of `mxpack ptx-check`: parses the spelling and its
// operands with the multimem validator and turns the result into a verdict
// (legal, illegal with the rule, or a usage error) per include/mxpack/ptx_check.h.
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
#include "src/util/ptx_operands.h"

namespace mxpack {


// ---------------------------------------------------------------------------
// ptx-check family "multimem.".
// ---------------------------------------------------------------------------
namespace {

std::string IsaText(int isa) { return absl::StrFormat("%d.%d", isa / 10, isa % 10); }

// Targets ptxas 13 (CUDA 13.0) knows. sm_101* was renamed sm_110* in PTX
// ISA 9.0 and is unknown to it; architectures before sm_75 were dropped.
bool KnownToPtxas13(const PtxTarget& t) {
  switch (t.sm) {
    case 75: case 80: case 86: case 87: case 88: case 89:
      return t.suffix == '\0';
    case 90:
      return t.suffix != 'f';
    case 100: case 103: case 110: case 120: case 121:
      return true;
    default:
      return false;
  }
}

PtxCheckResult UsageError(std::string text) {
  PtxCheckResult r;
  r.usage_error = true;
  r.text = absl::StrCat("not checked: ", text, "\n");
  return r;
}

PtxCheckResult CheckMultimemPtx(absl::string_view spelling,
                                absl::string_view target) {
  PtxCheckResult r;
  const absl::string_view opcode = PtxOpcodeOf(spelling);
  // multimem.cp.async.bulk, multimem.cp.reduce.async.bulk, ... exist but are
  // not modelled: neither legal nor illegal here.
  absl::string_view kind = opcode.substr(sizeof("multimem.") - 1);
  kind = kind.substr(0, kind.find('.'));
  if (kind != "ld_reduce" && kind != "st" && kind != "red") {
    return UsageError(absl::StrCat(
        "multimem.", kind,
        " is not modelled; expected multimem.ld_reduce, multimem.st or "
        "multimem.red"));
  }
  std::optional<PtxTarget> t;
  if (!target.empty()) {
    absl::StatusOr<PtxTarget> pt = ParsePtxTarget(target);
    if (!pt.ok()) return UsageError(std::string(pt.status().message()));
    if (!KnownToPtxas13(*pt)) {
      return UsageError(absl::StrCat(
          "target='", target, "': unknown to ptxas 13",
          pt->sm == 101 ? " (sm_101 was renamed sm_110 in PTX ISA 9.0)" : "",
          "; expected sm_75, sm_80, sm_86, sm_87, sm_88, sm_89, sm_90, "
          "sm_90a, or sm_100, sm_103, sm_110, sm_120, sm_121 with an optional "
          "a or f suffix"));
    }
    t = *pt;
  }
  MultimemRule rule = MultimemRule::kSyntax;
  absl::StatusOr<MultimemInstruction> in = ParseMultimem(opcode, &rule);
  if (!in.ok()) {
    r.text = absl::StrCat("illegal: ", in.status().message(), "\n");
    return r;
  }
  absl::string_view junk;
  const absl::string_view operands = PtxOperandsOf(spelling, &junk);
  if (!junk.empty()) {
    r.text = absl::StrCat("illegal: [syntax] ", in->ToString(),
                          ": unexpected text '", junk, "' after ';'\n");
    return r;
  }
  std::vector<std::string> notes = MultimemPtxasNotes(*in);
  if (absl::Status s = CheckMultimemOperands(*in, operands, &notes);
      !s.ok()) {
    if (absl::IsUnimplemented(s)) {
      return UsageError(std::string(s.message()));
    }
    r.text = absl::StrCat("illegal: ", s.message(), "\n");
    return r;
  }
  const MmTypeInfo& ti = MmTypeTraits(in->type);
  r.text = absl::StrCat("instruction: ", in->ToString(), "\n");
  absl::StrAppend(&r.text, "  kind:      multimem.", MultimemKindName(in->kind),
                  "\n");
  absl::StrAppend(&r.text, "  sem:       .", MemSemName(in->EffectiveSem()),
                  in->sem == MemSem::kDefault ? " (default)" : "", "\n");
  if (in->EffectiveScope() != MemScope::kDefault) {
    absl::StrAppend(&r.text, "  scope:     .", MemScopeName(in->EffectiveScope()),
                    in->scope == MemScope::kDefault ? " (default)" : "", "\n");
  }
  absl::StrAppend(&r.text, "  space:     ",
                  in->global ? ".global" : "generic (must point to .global)",
                  "\n");
  if (in->op != ReduceOp::kNone) {
    absl::StrAppend(&r.text, "  op:        .", ReduceOpName(in->op), "\n");
  }
  if (in->kind == MultimemKind::kLdReduce && ti.is_float) {
    const char* acc = in->acc == AccPrec::kF32   ? "f32"
                      : in->acc == AccPrec::kF16 ? "f16"
                                                 : ti.name;
    absl::StrAppend(&r.text, "  acc:       ", acc,
                    in->acc == AccPrec::kNone ? " (default: the type)" : "",
                    "\n");
  }
  absl::StrAppend(&r.text, "  type:      .", ti.name, " (", ti.bits, " bits, ",
                  ti.elements, " element", ti.elements > 1 ? "s" : "", ")\n");
  absl::StrAppend(&r.text, "  access:    ", in->AccessBytes(), " bytes, ",
                  in->AccessElements(), " elements per replica\n");
  if (!operands.empty()) {
    absl::StrAppend(&r.text, "  operands:  ", operands, "\n");
  }
  absl::StrAppend(&r.text, "  requires:  PTX ISA ", IsaText(MultimemMinPtxIsa(*in)),
                  ", ", MultimemTargetText(*in), "\n");
  for (const std::string& n : notes) {
    absl::StrAppend(&r.text, "  note:      ", n, "\n");
  }
  if (!t.has_value()) {
    r.ok = true;
    return r;
  }
  absl::StatusOr<int> isa = CheckMultimemTarget(*in, *t);
  if (!isa.ok()) {
    absl::StrAppend(&r.text, "illegal on ", t->ToString(), ": ",
                    isa.status().message(), "\n");
    return r;
  }
  absl::StrAppend(&r.text, "legal on ", t->ToString(), " with PTX ISA ",
                  IsaText(*isa), " or later\n");
  r.ok = true;
  return r;
}

}  // namespace

// Registered by the registry itself (src/ptx/ptx_check.cc) so that it is
// never dropped by the static-library linker.
PtxFamily MultimemPtxFamily() {
  return {"multimem.", "multimem (PTX ISA 9.7.9.14: ld_reduce, st, red)",
          &CheckMultimemPtx};
}


}  // namespace mxpack
