// Parser and validator of the multimem.* spellings (opcode and operands) and
// their target / PTX ISA requirements.
//
// Sources: PTX ISA 9.x, section 9.7.9.14 "Data Movement and Conversion
// Instructions: multimem.ld_reduce, multimem.st, multimem.red" (syntax
// block, the ".vec / base float-type" table, the ".op / base type" table,
// the ".acc_prec" table, "PTX ISA Notes" and "Target ISA Notes"), and the
// installed ptxas (CUDA 13.0), which decides where it and the text differ:
// docs/ptx_check.md lists each difference, docs/semantics.md section 4 the
// rules in brief. tests/ptx/ compares this file with ptxas.
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
#include "mxpack/multimem.h"
#include "mxpack/ptx_check.h"
#include "src/multimem/parse_internal.h"
#include "src/util/ptx_operands.h"

namespace mxpack {

using namespace multimem_internal;  // NOLINT: this domain's own helpers
namespace {

// name, bits, elements, float, signed, element format, element bytes.
constexpr MmTypeInfo kMmTypes[kNumMmTypes] = {
    {MmType::kB32, "b32", 32, 1, false, false, Format::kF32, 4},
    {MmType::kB64, "b64", 64, 1, false, false, Format::kF32, 8},
    {MmType::kU32, "u32", 32, 1, false, false, Format::kF32, 4},
    {MmType::kU64, "u64", 64, 1, false, false, Format::kF32, 8},
    {MmType::kS32, "s32", 32, 1, false, true, Format::kF32, 4},
    {MmType::kS64, "s64", 64, 1, false, true, Format::kF32, 8},
    {MmType::kF16, "f16", 16, 1, true, true, Format::kF16, 2},
    {MmType::kF16x2, "f16x2", 32, 2, true, true, Format::kF16, 2},
    {MmType::kBF16, "bf16", 16, 1, true, true, Format::kBF16, 2},
    {MmType::kBF16x2, "bf16x2", 32, 2, true, true, Format::kBF16, 2},
    {MmType::kF32, "f32", 32, 1, true, true, Format::kF32, 4},
    {MmType::kF64, "f64", 64, 1, true, true, Format::kF64, 8},
    {MmType::kE5M2, "e5m2", 8, 1, true, true, Format::kE5M2, 1},
    {MmType::kE5M2x2, "e5m2x2", 16, 2, true, true, Format::kE5M2, 1},
    {MmType::kE5M2x4, "e5m2x4", 32, 4, true, true, Format::kE5M2, 1},
    {MmType::kE4M3, "e4m3", 8, 1, true, true, Format::kE4M3, 1},
    {MmType::kE4M3x2, "e4m3x2", 16, 2, true, true, Format::kE4M3, 1},
    {MmType::kE4M3x4, "e4m3x4", 32, 4, true, true, Format::kE4M3, 1},
};

// The ".op / base type" table of 9.7.9.14 (ld_reduce, and red integer forms).
//   .add           .u32 .u64 .s32 | .f16 .f16x2 .bf16 .bf16x2 .f32 .f64 fp8*
//   .and .or .xor  .b32 .b64
//   .min .max      .u32 .s32 .u64 .s64 | .f16 .f16x2 .bf16 .bf16x2 fp8*
bool OpTypeLegal(ReduceOp op, MmType t) {
  switch (op) {
    case ReduceOp::kAdd:
      return t == MmType::kU32 || t == MmType::kU64 || t == MmType::kS32 ||
             MmTypeTraits(t).is_float;
    case ReduceOp::kAnd:
    case ReduceOp::kOr:
    case ReduceOp::kXor:
      return t == MmType::kB32 || t == MmType::kB64;
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return t == MmType::kU32 || t == MmType::kS32 || t == MmType::kU64 ||
             t == MmType::kS64 || IsHalf(t) || IsFp8(t);
    case ReduceOp::kNone:
      return false;
  }
  return false;
}

std::string OpTypeExpected(ReduceOp op) {
  switch (op) {
    case ReduceOp::kAdd:
      return ".u32, .u64, .s32, .f16, .f16x2, .bf16, .bf16x2, .f32, .f64, "
             ".e5m2, .e5m2x2, .e5m2x4, .e4m3, .e4m3x2, .e4m3x4";
    case ReduceOp::kAnd:
    case ReduceOp::kOr:
    case ReduceOp::kXor:
      return ".b32, .b64";
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return ".u32, .s32, .u64, .s64, .f16, .f16x2, .bf16, .bf16x2, .e5m2, "
             ".e5m2x2, .e5m2x4, .e4m3, .e4m3x2, .e4m3x4";
    case ReduceOp::kNone:
      break;
  }
  return "";
}

// Qualifier kinds, in the order of the PTX syntax block.
enum Slot { kSlotSem = 1, kSlotScope, kSlotSs, kSlotOp, kSlotAcc, kSlotVec, kSlotType };

const char* SlotName(int slot) {
  switch (slot) {
    case kSlotSem: return "memory semantics (.weak/.relaxed/.acquire/.release)";
    case kSlotScope: return "scope (.cta/.cluster/.gpu/.sys)";
    case kSlotSs: return "state space (.global)";
    case kSlotOp: return "operation (.add/.min/.max/.and/.or/.xor)";
    case kSlotAcc: return "accumulation precision (.acc::f32/.acc::f16)";
    case kSlotVec: return "vector width (.v2/.v4/.v8)";
    case kSlotType: return "type";
  }
  return "?";
}

struct Token {
  int slot = 0;
  MemSem sem = MemSem::kDefault;
  MemScope scope = MemScope::kDefault;
  ReduceOp op = ReduceOp::kNone;
  AccPrec acc = AccPrec::kNone;
  int vec = 1;
  MmType type = MmType::kB32;
};

bool ClassifyToken(absl::string_view tok, Token* t) {
  static constexpr struct { const char* s; MemSem v; } kSems[] = {
      {"weak", MemSem::kWeak}, {"relaxed", MemSem::kRelaxed},
      {"acquire", MemSem::kAcquire}, {"release", MemSem::kRelease}};
  static constexpr struct { const char* s; MemScope v; } kScopes[] = {
      {"cta", MemScope::kCta}, {"cluster", MemScope::kCluster},
      {"gpu", MemScope::kGpu}, {"sys", MemScope::kSys}};
  for (const auto& s : kSems) {
    if (tok == s.s) { t->slot = kSlotSem; t->sem = s.v; return true; }
  }
  for (const auto& s : kScopes) {
    if (tok == s.s) { t->slot = kSlotScope; t->scope = s.v; return true; }
  }
  if (tok == "global") { t->slot = kSlotSs; return true; }
  if (tok == "v2" || tok == "v4" || tok == "v8") {
    t->slot = kSlotVec;
    t->vec = tok[1] - '0';
    return true;
  }
  if (tok == "acc::f32") { t->slot = kSlotAcc; t->acc = AccPrec::kF32; return true; }
  if (tok == "acc::f16") { t->slot = kSlotAcc; t->acc = AccPrec::kF16; return true; }
  for (ReduceOp op : {ReduceOp::kAdd, ReduceOp::kMin, ReduceOp::kMax,
                      ReduceOp::kAnd, ReduceOp::kOr, ReduceOp::kXor}) {
    if (tok == ReduceOpName(op)) { t->slot = kSlotOp; t->op = op; return true; }
  }
  for (const MmTypeInfo& info : kMmTypes) {
    if (tok == info.name) { t->slot = kSlotType; t->type = info.type; return true; }
  }
  return false;
}

}  // namespace

const MmTypeInfo& MmTypeTraits(MmType t) {
  return kMmTypes[static_cast<int>(t) % kNumMmTypes];
}

absl::string_view MultimemKindName(MultimemKind k) {
  switch (k) {
    case MultimemKind::kLdReduce: return "ld_reduce";
    case MultimemKind::kSt: return "st";
    case MultimemKind::kRed: return "red";
  }
  return "?";
}

absl::string_view MemSemName(MemSem s) {
  switch (s) {
    case MemSem::kDefault: return "";
    case MemSem::kWeak: return "weak";
    case MemSem::kRelaxed: return "relaxed";
    case MemSem::kAcquire: return "acquire";
    case MemSem::kRelease: return "release";
  }
  return "?";
}

absl::string_view MemScopeName(MemScope s) {
  switch (s) {
    case MemScope::kDefault: return "";
    case MemScope::kCta: return "cta";
    case MemScope::kCluster: return "cluster";
    case MemScope::kGpu: return "gpu";
    case MemScope::kSys: return "sys";
  }
  return "?";
}

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kNone: return "none";
    case ReduceOp::kAdd: return "add";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kAnd: return "and";
    case ReduceOp::kOr: return "or";
    case ReduceOp::kXor: return "xor";
  }
  return "?";
}

absl::string_view AccPrecName(AccPrec a) {
  switch (a) {
    case AccPrec::kNone: return "none";
    case AccPrec::kF32: return "acc::f32";
    case AccPrec::kF16: return "acc::f16";
  }
  return "?";
}

absl::string_view MultimemRuleName(MultimemRule r) {
  switch (r) {
    case MultimemRule::kSyntax: return "syntax";
    case MultimemRule::kDuplicate: return "duplicate-qualifier";
    case MultimemRule::kSemantics: return "semantics";
    case MultimemRule::kOpType: return "op-type";
    case MultimemRule::kVecSize: return "vec-size";
    case MultimemRule::kF64Vec: return "f64-vec";
    case MultimemRule::kAccType: return "acc-type";
    case MultimemRule::kIntegerForm: return "integer-form";
    case MultimemRule::kStForm: return "st-form";
    case MultimemRule::kRedForm: return "red-form";
    case MultimemRule::kOperand: return "operand";
    case MultimemRule::kTarget: return "target";
  }
  return "?";
}

absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(absl::StripPrefix(name, "."));
  for (ReduceOp op : {ReduceOp::kAdd, ReduceOp::kMin, ReduceOp::kMax,
                      ReduceOp::kAnd, ReduceOp::kOr, ReduceOp::kXor}) {
    if (n == ReduceOpName(op)) return op;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "op='%s': expected one of add, min, max, and, or, xor", name));
}

absl::StatusOr<MmType> ParseMmType(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(absl::StripPrefix(name, "."));
  std::vector<std::string> names;
  for (const MmTypeInfo& info : kMmTypes) {
    if (n == info.name) return info.type;
    names.push_back(info.name);
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "type='%s': expected one of %s", name, absl::StrJoin(names, ", ")));
}

absl::StatusOr<AccPrec> ParseAccPrec(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(absl::StripPrefix(name, "."));
  n = std::string(absl::StripPrefix(n, "acc::"));
  if (n.empty() || n == "none") return AccPrec::kNone;
  if (n == "f32") return AccPrec::kF32;
  if (n == "f16") return AccPrec::kF16;
  return absl::InvalidArgumentError(absl::StrFormat(
      "acc='%s': expected none, f32 (acc::f32) or f16 (acc::f16)", name));
}

std::string MultimemInstruction::ToString() const {
  std::string s = absl::StrCat("multimem.", MultimemKindName(kind));
  if (sem != MemSem::kDefault) absl::StrAppend(&s, ".", MemSemName(sem));
  if (scope != MemScope::kDefault) absl::StrAppend(&s, ".", MemScopeName(scope));
  if (global) absl::StrAppend(&s, ".global");
  if (op != ReduceOp::kNone) absl::StrAppend(&s, ".", ReduceOpName(op));
  if (acc != AccPrec::kNone) absl::StrAppend(&s, ".", AccPrecName(acc));
  if (vec != 1) absl::StrAppend(&s, ".v", vec);
  absl::StrAppend(&s, ".", MmTypeTraits(type).name);
  return s;
}

MemSem MultimemInstruction::EffectiveSem() const {
  if (sem != MemSem::kDefault) return sem;
  return kind == MultimemKind::kRed ? MemSem::kRelaxed : MemSem::kWeak;
}

MemScope MultimemInstruction::EffectiveScope() const {
  if (scope != MemScope::kDefault) return scope;
  // PTX: "If the .scope qualifier is not specified for multimem.red then .sys
  // scope is assumed". The text states no default for ld_reduce / st.
  return kind == MultimemKind::kRed ? MemScope::kSys : MemScope::kDefault;
}

int MultimemInstruction::AccessBytes() const {
  return vec * MmTypeTraits(type).bits / 8;
}

int MultimemInstruction::AccessElements() const {
  return vec * MmTypeTraits(type).elements;
}

absl::Status ValidateMultimem(const MultimemInstruction& in,
                              MultimemRule* rule) {
  const MmTypeInfo& ti = MmTypeTraits(in.type);
  const std::string spelled = in.ToString();
  const bool ld = in.kind == MultimemKind::kLdReduce;
  const bool st = in.kind == MultimemKind::kSt;
  const bool red = in.kind == MultimemKind::kRed;
  if (in.vec != 1 && in.vec != 2 && in.vec != 4 && in.vec != 8) {
    return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
        "%s: .vec expected .v2, .v4 or .v8, got %d elements", spelled, in.vec));
  }
  // Form rules of each instruction.
  if (st && in.op != ReduceOp::kNone) {
    return RuleError(MultimemRule::kStForm, rule, absl::StrFormat(
        "%s: multimem.st takes no .op; expected none, got .%s", spelled,
        ReduceOpName(in.op)));
  }
  if (!st && in.op == ReduceOp::kNone) {
    return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
        "%s: multimem.%s requires an .op; expected one of .add .min .max .and "
        ".or .xor, got none",
        spelled, MultimemKindName(in.kind)));
  }
  // Memory semantics: .ldsem = {.relaxed, .acquire}, .stsem = .redsem =
  // {.relaxed, .release}; the .weak form (ld_reduce, st) takes no scope.
  // ptxas 13 also requires a scope with .relaxed/.acquire/.release and a
  // memory-semantics qualifier with a scope ("Modifier '.relaxed' requires
  // scope", "Modifier '.cta' requires order"), which the PTX syntax block
  // writes as two independent optional qualifiers.
  switch (in.sem) {
    case MemSem::kDefault:
      if (in.scope != MemScope::kDefault) {
        return RuleError(MultimemRule::kSemantics, rule, absl::StrFormat(
            "%s: .%s needs a memory-semantics qualifier (%s); ptxas 13 rejects "
            "a scope without one although the PTX ISA syntax writes "
            "{.%ssem}{.scope} as independent optional qualifiers",
            spelled, MemScopeName(in.scope),
            ld ? ".relaxed or .acquire" : ".relaxed or .release",
            ld ? "ld" : st ? "st" : "red"));
      }
      break;
    case MemSem::kWeak:
      if (red) {
        return RuleError(MultimemRule::kSemantics, rule, absl::StrFormat(
            "%s: multimem.red has no .weak form; .redsem expected .relaxed or "
            ".release, got .weak",
            spelled));
      }
      if (in.scope != MemScope::kDefault) {
        return RuleError(MultimemRule::kSemantics, rule, absl::StrFormat(
            "%s: the .weak form takes no .scope; expected none, got .%s",
            spelled, MemScopeName(in.scope)));
      }
      break;
    case MemSem::kRelaxed:
    case MemSem::kAcquire:
    case MemSem::kRelease:
      if (in.sem == MemSem::kAcquire && !ld) {
        return RuleError(MultimemRule::kSemantics, rule, absl::StrFormat(
            "%s: .%s expected .relaxed or .release, got .acquire", spelled,
            st ? "stsem" : "redsem"));
      }
      if (in.sem == MemSem::kRelease && ld) {
        return RuleError(MultimemRule::kSemantics, rule, absl::StrFormat(
            "%s: .ldsem expected .relaxed or .acquire, got .release", spelled));
      }
      if (in.scope == MemScope::kDefault) {
        return RuleError(MultimemRule::kSemantics, rule, absl::StrFormat(
            "%s: .%s needs a .scope (.cta, .cluster, .gpu or .sys); ptxas 13 "
            "rejects it without one although the PTX ISA syntax writes "
            "{.%ssem}{.scope} as independent optional qualifiers",
            spelled, MemSemName(in.sem), ld ? "ld" : st ? "st" : "red"));
      }
      break;
  }
  if (!ti.is_float && in.vec != 1) {
    return RuleError(MultimemRule::kIntegerForm, rule, absl::StrFormat(
        "%s: integer type .%s takes no .vec; got .v%d", spelled, ti.name,
        in.vec));
  }
  if (ld && !ti.is_float && in.acc != AccPrec::kNone) {
    return RuleError(MultimemRule::kIntegerForm, rule, absl::StrFormat(
        "%s: integer type .%s takes no .acc_prec; got .%s", spelled, ti.name,
        AccPrecName(in.acc)));
  }
  // Op / type tables.
  if (red && IsFp8(in.type)) {
    return RuleError(MultimemRule::kRedForm, rule, absl::StrFormat(
        "%s: multimem.red .redtype expected one of .u32 .s32 .u64 .s64 .b32 "
        ".b64 .f16 .f16x2 .bf16 .bf16x2 .f32 .f64, got .%s",
        spelled, ti.name));
  }
  if (!st && !OpTypeLegal(in.op, in.type)) {
    return RuleError(MultimemRule::kOpType, rule, absl::StrFormat(
        "%s: .%s is not defined for .%s; .%s expects one of %s", spelled,
        ReduceOpName(in.op), ti.name, ReduceOpName(in.op),
        OpTypeExpected(in.op)));
  }
  if (red && ti.is_float && in.op != ReduceOp::kAdd && in.vec == 1) {
    return RuleError(MultimemRule::kRedForm, rule, absl::StrFormat(
        "%s: ptxas 13 accepts .%s on multimem.red float types only with .vec "
        "(.v2/.v4/.v8); the PTX ISA .redop table allows only .add",
        spelled, ReduceOpName(in.op)));
  }
  if (ti.is_float) {
    // "Type .f64 cannot be used with .vec qualifier."
    if (in.type == MmType::kF64 && in.vec != 1) {
      return RuleError(MultimemRule::kF64Vec, rule, absl::StrFormat(
          "%s: .f64 cannot be used with .vec; expected no .vec, got .v%d",
          spelled, in.vec));
    }
    // "the size of the specified type along with .vec must equal either
    // 32-bits or 64-bits or 128-bits".
    const int total = in.vec * ti.bits;
    if (in.type != MmType::kF64 && total != 32 && total != 64 && total != 128) {
      return RuleError(MultimemRule::kVecSize, rule, absl::StrFormat(
          "%s: .vec x type size must be 32, 64 or 128 bits; got %s%d x %d = "
          "%d bits",
          spelled, in.vec == 1 ? "(no .vec) " : "", in.vec, ti.bits, total));
    }
  }
  // .acc_prec table (ld_reduce): .acc::f32 for f16/bf16 forms, .acc::f16
  // for fp8 forms, .add only (ptxas 13: "Illegal reduction operation").
  if (ld && in.acc != AccPrec::kNone) {
    if (in.op != ReduceOp::kAdd) {
      return RuleError(MultimemRule::kAccType, rule, absl::StrFormat(
          "%s: .%s takes no .acc_prec; the .acc_prec forms are .add only",
          spelled, ReduceOpName(in.op)));
    }
    if (in.acc == AccPrec::kF32 && !IsHalf(in.type)) {
      return RuleError(MultimemRule::kAccType, rule, absl::StrFormat(
          "%s: .acc::f32 expects .f16, .f16x2, .bf16 or .bf16x2, got .%s",
          spelled, ti.name));
    }
    if (in.acc == AccPrec::kF16 && !IsFp8(in.type)) {
      return RuleError(MultimemRule::kAccType, rule, absl::StrFormat(
          "%s: .acc::f16 expects .e5m2, .e5m2x2, .e5m2x4, .e4m3, .e4m3x2 or "
          ".e4m3x4, got .%s",
          spelled, ti.name));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> MultimemPtxasNotes(const MultimemInstruction& in) {
  std::vector<std::string> notes;
  if (in.reordered) {
    notes.push_back(
        "accepted: ptxas 13 accepts the qualifiers in any order although the "
        "PTX ISA syntax fixes {.sem}{.scope}{.ss}.op{.acc_prec}{.vec}.type");
  }
  const AccPrec acc =
      in.ignored_acc != AccPrec::kNone ? in.ignored_acc : in.acc;
  if (in.kind != MultimemKind::kLdReduce && acc != AccPrec::kNone) {
    notes.push_back(absl::StrFormat(
        "accepted: ptxas 13 accepts and ignores .%s on multimem.%s although "
        "the PTX ISA syntax gives .acc_prec to multimem.ld_reduce only",
        AccPrecName(acc), MultimemKindName(in.kind)));
  }
  if (in.kind == MultimemKind::kRed && MmTypeTraits(in.type).is_float &&
      in.op != ReduceOp::kAdd && in.op != ReduceOp::kNone) {
    notes.push_back(absl::StrFormat(
        "accepted: ptxas 13 allows .%s on .%s with .vec although the PTX ISA "
        ".redop table lists only .add for float multimem.red",
        ReduceOpName(in.op), MmTypeTraits(in.type).name));
  }
  return notes;
}

absl::StatusOr<MultimemInstruction> ParseMultimem(absl::string_view spelling,
                                                  MultimemRule* rule) {
  const absl::string_view opcode = PtxOpcodeOf(spelling);
  if (!absl::StartsWith(opcode, "multimem.")) {
    return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
        "'%s': expected an instruction starting with 'multimem.'", opcode));
  }
  std::vector<absl::string_view> toks =
      absl::StrSplit(opcode.substr(9), '.');
  MultimemInstruction in;
  if (toks.empty() || (toks[0] != "ld_reduce" && toks[0] != "st" &&
                       toks[0] != "red")) {
    return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
        "'%s': expected multimem.ld_reduce, multimem.st or multimem.red, got "
        "multimem.%s",
        opcode, toks.empty() ? "" : toks[0]));
  }
  in.kind = toks[0] == "ld_reduce" ? MultimemKind::kLdReduce
            : toks[0] == "st"      ? MultimemKind::kSt
                                   : MultimemKind::kRed;
  // ptxas 13 accepts the qualifiers in any order; each kind at most once.
  int last_slot = 0;
  bool seen[kSlotType + 1] = {};
  for (size_t i = 1; i < toks.size(); ++i) {
    Token t;
    if (!ClassifyToken(toks[i], &t)) {
      return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
          "'%s': unknown qualifier '.%s' (expected one of .weak .relaxed "
          ".acquire .release, .cta .cluster .gpu .sys, .global, .add .min "
          ".max .and .or .xor, .acc::f32 .acc::f16, .v2 .v4 .v8, or a type)",
          opcode, toks[i]));
    }
    if (seen[t.slot]) {
      return RuleError(MultimemRule::kDuplicate, rule, absl::StrFormat(
          "'%s': '.%s' is a second %s; expected at most one", opcode, toks[i],
          SlotName(t.slot)));
    }
    seen[t.slot] = true;
    if (t.slot < last_slot) in.reordered = true;
    last_slot = t.slot;
    switch (t.slot) {
      case kSlotSem: in.sem = t.sem; break;
      case kSlotScope: in.scope = t.scope; break;
      case kSlotSs: in.global = true; break;
      case kSlotOp: in.op = t.op; break;
      case kSlotAcc: in.acc = t.acc; break;
      case kSlotVec: in.vec = t.vec; break;
      case kSlotType: in.type = t.type; break;
    }
  }
  if (!seen[kSlotType]) {
    return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
        "'%s': missing the .type qualifier", opcode));
  }
  // st and red: ptxas 13 accepts and ignores .acc_prec.
  if (in.kind != MultimemKind::kLdReduce) {
    in.ignored_acc = in.acc;
    in.acc = AccPrec::kNone;
  }
  if (absl::Status s = ValidateMultimem(in, rule); !s.ok()) return s;
  absl::string_view junk;
  const absl::string_view operands = PtxOperandsOf(spelling, &junk);
  if (!junk.empty()) {
    return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
        "%s: unexpected text '%s' after ';'", in.ToString(), junk));
  }
  if (absl::Status s = CheckMultimemOperands(in, operands, nullptr, rule);
      !s.ok()) {
    return s;
  }
  return in;
}

}  // namespace mxpack
