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
#include "src/ptx/operands.h"

namespace mxpack {
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

bool IsFp8(MmType t) {
  const Format e = MmTypeTraits(t).element;
  return MmTypeTraits(t).is_float && (e == Format::kE4M3 || e == Format::kE5M2);
}
bool IsHalf(MmType t) {
  const Format e = MmTypeTraits(t).element;
  return MmTypeTraits(t).is_float && (e == Format::kF16 || e == Format::kBF16);
}

absl::Status RuleError(MultimemRule rule, MultimemRule* out,
                       const std::string& message) {
  if (out != nullptr) *out = rule;
  return absl::InvalidArgumentError(
      absl::StrCat("[", MultimemRuleName(rule), "] ", message));
}

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

namespace {

// Whether a register of class `c` may hold a `t` operand of `kind`, as
// ptxas 13 decides. Untyped .bN registers need exactly the type's width;
// typed registers follow ptxas's table (tests/ptx/ checks every cell).
bool RegisterFits(ptx::RegClass c, MultimemKind kind, MmType t, bool* quirk) {
  using ptx::RegClass;
  const bool red = kind == MultimemKind::kRed;
  const bool x4 = t == MmType::kE4M3x4 || t == MmType::kE5M2x4;
  const bool x2 = t == MmType::kE4M3x2 || t == MmType::kE5M2x2;
  *quirk = false;
  switch (c) {
    case RegClass::kUnknown:
      return true;
    case RegClass::kB8:
    case RegClass::kB16:
    case RegClass::kB32:
    case RegClass::kB64:
      return ptx::RegClassBits(c) == MmTypeTraits(t).bits;
    case RegClass::kF32:
      return t == MmType::kB32 || t == MmType::kF32 || x4 ||
             (t == MmType::kBF16x2 && !red);
    case RegClass::kF64:
      return t == MmType::kB64 || t == MmType::kF64;
    case RegClass::kF16:
      return t == MmType::kF16 || x2 || (t == MmType::kBF16 && !red);
    case RegClass::kF16x2:
      return t == MmType::kB32 || t == MmType::kU32 || t == MmType::kS32 ||
             t == MmType::kF16x2 || x4 || (t == MmType::kBF16x2 && !red);
    case RegClass::kPred:
      *quirk = kind == MultimemKind::kLdReduce &&
               (t == MmType::kBF16x2 || x4);
      return *quirk;
  }
  return false;
}

bool IsIntegerType(MmType t) { return !MmTypeTraits(t).is_float; }

}  // namespace

absl::Status CheckMultimemOperands(const MultimemInstruction& in,
                                   absl::string_view text,
                                   std::vector<std::string>* notes,
                                   MultimemRule* rule) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return absl::OkStatus();
  const std::string spelled = in.ToString();
  const bool ld = in.kind == MultimemKind::kLdReduce;
  const MmTypeInfo& ti = MmTypeTraits(in.type);
  absl::StatusOr<std::vector<ptx::Operand>> ops = ptx::ParseOperands(text);
  if (!ops.ok()) {
    return RuleError(MultimemRule::kOperand, rule,
                     absl::StrCat(spelled, ": ", ops.status().message()));
  }
  const char* shape = ld ? "d, [a]" : "[a], b";
  if (ops->size() != 2) {
    return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
        "%s: expected 2 operands (%s), got %d: '%s'", spelled, shape,
        ops->size(), text));
  }
  const ptx::Operand& addr = (*ops)[ld ? 1 : 0];
  const ptx::Operand& value = (*ops)[ld ? 0 : 1];
  if (addr.kind != ptx::OperandKind::kAddress) {
    return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
        "%s: operand %d '%s': expected the address [a] (operands %s)",
        spelled, ld ? 2 : 1, addr.text, shape));
  }
  if (addr.base_is_immediate) {
    return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
        "%s: address '%s': expected a register base; ptxas allows immediate "
        "addresses only for .local",
        spelled, addr.text));
  }
  const ptx::RegClass base = ptx::RegClassOf(addr.base);
  if (base != ptx::RegClass::kUnknown && ptx::RegClassBits(base) != 64) {
    return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
        "%s: address '%s': expected a 64-bit register (%%rd<N>), got %s "
        "register %s",
        spelled, addr.text, ptx::RegClassName(base), addr.base));
  }
  if (value.kind == ptx::OperandKind::kAddress) {
    return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
        "%s: operand %d '%s': expected a %s, not an address (operands %s)",
        spelled, ld ? 1 : 2, value.text, ld ? "destination" : "source",
        shape));
  }
  // The value: .vec registers in braces; without .vec one register, bare
  // or in braces.
  std::vector<const ptx::Operand*> elems;
  if (value.kind == ptx::OperandKind::kVector) {
    for (const ptx::Operand& e : value.elements) elems.push_back(&e);
    if (static_cast<int>(elems.size()) != in.vec) {
      return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
          "%s: '%s': expected %d element%s in braces (%s), got %d", spelled,
          value.text, in.vec, in.vec == 1 ? "" : "s",
          in.vec == 1 ? "no .vec" : absl::StrCat(".v", in.vec), elems.size()));
    }
  } else {
    if (in.vec != 1) {
      return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
          "%s: '%s': .v%d expects a vector {e0, ..., e%d} of %d registers",
          spelled, value.text, in.vec, in.vec - 1, in.vec));
    }
    elems.push_back(&value);
  }
  // ptxas 13 takes one register in braces, {%r1}, for a float .type on
  // ld_reduce and st only.
  if (value.kind == ptx::OperandKind::kVector && in.vec == 1 &&
      (!ti.is_float || in.kind == MultimemKind::kRed)) {
    return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
        "%s: '%s': expected a register without braces (ptxas 13 accepts "
        "{reg} only for float types on ld_reduce and st)",
        spelled, value.text));
  }
  int sinks = 0, registers = 0;
  ptx::RegClass typed = ptx::RegClass::kUnknown;
  bool vector_has_untyped = false;
  if (value.kind == ptx::OperandKind::kVector) {
    for (const ptx::Operand* e : elems) {
      if (e->kind != ptx::OperandKind::kRegister) continue;
      const ptx::RegClass c = ptx::RegClassOf(e->text);
      vector_has_untyped |= c == ptx::RegClass::kB8 ||
                            c == ptx::RegClass::kB16 ||
                            c == ptx::RegClass::kB32 ||
                            c == ptx::RegClass::kB64;
    }
  }
  for (const ptx::Operand* e : elems) {
    switch (e->kind) {
      case ptx::OperandKind::kSink:
        if (!ld) {
          return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
              "%s: '%s': the sink '_' is not allowed as a source", spelled,
              value.text));
        }
        ++sinks;
        break;
      case ptx::OperandKind::kImmediate: {
        if (ld) {
          return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
              "%s: '%s': the destination must be a register, got an "
              "immediate",
              spelled, e->text));
        }
        const bool int_ok = IsIntegerType(in.type) && !e->float_literal;
        const bool float_ok =
            (in.type == MmType::kF32 || in.type == MmType::kF64) &&
            e->float_literal;
        if (!int_ok && !float_ok) {
          return absl::UnimplementedError(absl::StrFormat(
              "%s: immediate source '%s' is not modelled; modelled: integer "
              "literals for integer types, float literals (1.0, 0f3F800000) "
              "for .f32/.f64",
              spelled, e->text));
        }
        break;
      }
      case ptx::OperandKind::kRegister: {
        const ptx::RegClass c = ptx::RegClassOf(e->text);
        ++registers;
        // A vector may mix untyped .bN registers with one typed class.
        const bool is_typed = c == ptx::RegClass::kF32 ||
                              c == ptx::RegClass::kF64 ||
                              c == ptx::RegClass::kF16 ||
                              c == ptx::RegClass::kF16x2 ||
                              c == ptx::RegClass::kPred;
        if (is_typed && !vector_has_untyped) {
          if (typed != ptx::RegClass::kUnknown && typed != c) {
            return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
                "%s: '%s': the vector mixes %s and %s registers; ptxas 13 "
                "rejects two typed register classes in one vector",
                spelled, value.text, ptx::RegClassName(typed),
                ptx::RegClassName(c)));
          }
          typed = c;
        }
        bool quirk = false;
        // A vector with an untyped .bN register is checked by width only
        // (ptxas 13 types such a vector as .bN: {%r1, %f1} is .b32; a .pred
        // register counts as 32 bits there).
        if (is_typed && vector_has_untyped) {
          const int bits =
              c == ptx::RegClass::kPred ? 32 : ptx::RegClassBits(c);
          if (bits != ti.bits) {
            return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
                "%s: register %s (%s by its name) in '%s' does not fit .%s; "
                "expected a %d-bit register",
                spelled, e->text, ptx::RegClassName(c), value.text, ti.name,
                ti.bits));
          }
          continue;
        }
        if (!RegisterFits(c, in.kind, in.type, &quirk)) {
          return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
              "%s: register %s (%s by its name) does not fit .%s (%d bits)%s",
              spelled, e->text, ptx::RegClassName(c), ti.name, ti.bits,
              ptx::RegClassBits(c) == ti.bits
                  ? "; ptxas 13 rejects this typed register for this type"
                  : absl::StrFormat("; expected a %d-bit register", ti.bits)));
        }
        if (quirk && notes != nullptr) {
          notes->push_back(absl::StrFormat(
              "accepted: ptxas 13 accepts the .pred register %s as the "
              ".%s destination although the PTX ISA requires a register of "
              "the type's size (%d bits)",
              e->text, ti.name, ti.bits));
        }
        if (c == ptx::RegClass::kUnknown && notes != nullptr) {
          notes->push_back(absl::StrFormat(
              "register %s: width not checked (not an NVVM-named register "
              "such as %%r1 or %%rd1)",
              e->text));
        }
        break;
      }
      default:
        return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
            "%s: '%s': expected a register", spelled, e->text));
    }
  }
  if (sinks > 0 && value.kind != ptx::OperandKind::kVector) {
    return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
        "%s: '%s': the destination must be a register; the sink '_' is "
        "allowed only inside a vector",
        spelled, value.text));
  }
  if (value.kind == ptx::OperandKind::kVector && registers == 0) {
    return RuleError(MultimemRule::kOperand, rule, absl::StrFormat(
        "%s: '%s': the vector needs at least one register (ptxas 13 cannot "
        "type a vector of only %s)",
        spelled, value.text, ld ? "sinks" : "immediates"));
  }
  return absl::OkStatus();
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
