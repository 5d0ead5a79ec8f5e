// Parser and validator of the multimem.* spellings and their target / PTX ISA
// requirements.
//
// Source of every table below: PTX ISA 9.x, section 9.7.9.14 "Data Movement
// and Conversion Instructions: multimem.ld_reduce, multimem.st,
// multimem.red" (syntax block, the ".vec / base float-type" table, the ".op /
// base type" table, the ".acc_prec" table, "PTX ISA Notes" and "Target ISA
// Notes"), and the PTX 8.6 release notes ("Extends multimem.ld_reduce and
// multimem.st instructions to support .e5m2, ... types"). docs/semantics.md section 4
// restates the same rules; where the PTX text is self-contradictory (its
// example "multimem.red.relaxed.gpu.max.f64" against ".redop = { .add }") we
// follow the grammar and docs/semantics.md section 4: float red is .add only.
#include <algorithm>
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

// Grammar slots in order of appearance.
enum Slot { kSlotSem = 1, kSlotScope, kSlotSs, kSlotOp, kSlotAcc, kSlotVec, kSlotType };

const char* SlotName(int slot) {
  switch (slot) {
    case kSlotSem: return "semantics (.weak/.relaxed/.acquire/.release)";
    case kSlotScope: return ".scope";
    case kSlotSs: return ".ss (.global)";
    case kSlotOp: return ".op";
    case kSlotAcc: return ".acc_prec";
    case kSlotVec: return ".vec";
    case kSlotType: return ".type";
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
    case MultimemRule::kQualifierOrder: return "qualifier-order";
    case MultimemRule::kSemantics: return "semantics";
    case MultimemRule::kOpType: return "op-type";
    case MultimemRule::kVecSize: return "vec-size";
    case MultimemRule::kF64Vec: return "f64-vec";
    case MultimemRule::kAccType: return "acc-type";
    case MultimemRule::kIntegerForm: return "integer-form";
    case MultimemRule::kStForm: return "st-form";
    case MultimemRule::kRedForm: return "red-form";
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
  // Form rules of each instruction.
  if (in.kind == MultimemKind::kSt) {
    if (in.op != ReduceOp::kNone) {
      return RuleError(MultimemRule::kStForm, rule, absl::StrFormat(
          "%s: multimem.st takes no .op; expected none, got .%s", spelled,
          ReduceOpName(in.op)));
    }
    if (in.acc != AccPrec::kNone) {
      return RuleError(MultimemRule::kStForm, rule, absl::StrFormat(
          "%s: multimem.st takes no .acc_prec; expected none, got .%s",
          spelled, AccPrecName(in.acc)));
    }
  } else if (in.op == ReduceOp::kNone) {
    return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
        "%s: multimem.%s requires an .op; expected one of .add .min .max .and "
        ".or .xor, got none",
        spelled, MultimemKindName(in.kind)));
  }
  if (in.kind == MultimemKind::kRed && in.acc != AccPrec::kNone) {
    return RuleError(MultimemRule::kRedForm, rule, absl::StrFormat(
        "%s: multimem.red takes no .acc_prec (only ld_reduce has it); got .%s",
        spelled, AccPrecName(in.acc)));
  }
  if (!ti.is_float && (in.vec != 1 || in.acc != AccPrec::kNone)) {
    return RuleError(MultimemRule::kIntegerForm, rule, absl::StrFormat(
        "%s: integer type .%s takes no %s (PTX integer forms have neither "
        ".vec nor .acc_prec); got %s",
        spelled, ti.name, in.vec != 1 ? ".vec" : ".acc_prec",
        in.vec != 1 ? absl::StrCat(".v", in.vec)
                    : absl::StrCat(".", AccPrecName(in.acc))));
  }
  if (in.vec != 1 && in.vec != 2 && in.vec != 4 && in.vec != 8) {
    return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
        "%s: .vec expected .v2, .v4 or .v8, got %d elements", spelled, in.vec));
  }
  // Semantics tables: .ldsem = {.relaxed, .acquire}, .stsem = .redsem =
  // {.relaxed, .release}; .weak has its own form for ld_reduce and st only,
  // and that form takes no .scope.
  switch (in.sem) {
    case MemSem::kDefault:
    case MemSem::kRelaxed:
      break;
    case MemSem::kWeak:
      if (in.kind == MultimemKind::kRed) {
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
    case MemSem::kAcquire:
      if (in.kind != MultimemKind::kLdReduce) {
        return RuleError(MultimemRule::kSemantics, rule, absl::StrFormat(
            "%s: .%s expected .relaxed or .release, got .acquire", spelled,
            in.kind == MultimemKind::kSt ? "stsem" : "redsem"));
      }
      break;
    case MemSem::kRelease:
      if (in.kind == MultimemKind::kLdReduce) {
        return RuleError(MultimemRule::kSemantics, rule, absl::StrFormat(
            "%s: .ldsem expected .relaxed or .acquire, got .release", spelled));
      }
      break;
  }
  // Op / type tables.
  if (in.kind == MultimemKind::kRed && ti.is_float) {
    if (in.op != ReduceOp::kAdd) {
      return RuleError(MultimemRule::kOpType, rule, absl::StrFormat(
          "%s: multimem.red on float types: .redop expected .add, got .%s",
          spelled, ReduceOpName(in.op)));
    }
    if (IsFp8(in.type)) {
      return RuleError(MultimemRule::kOpType, rule, absl::StrFormat(
          "%s: multimem.red .redtype expected one of .f16, .f16x2, .bf16, "
          ".bf16x2, .f32, .f64, got .%s",
          spelled, ti.name));
    }
  } else if (in.kind != MultimemKind::kSt && !OpTypeLegal(in.op, in.type)) {
    return RuleError(MultimemRule::kOpType, rule, absl::StrFormat(
        "%s: .%s is not defined for .%s; .%s expects one of %s", spelled,
        ReduceOpName(in.op), ti.name, ReduceOpName(in.op),
        OpTypeExpected(in.op)));
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
  // .acc_prec table: .acc::f32 for f16/bf16 forms, .acc::f16 for fp8 forms.
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
  int last_slot = 0;
  bool have_type = false;
  for (size_t i = 1; i < toks.size(); ++i) {
    Token t;
    if (!ClassifyToken(toks[i], &t)) {
      return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
          "'%s': unknown qualifier '.%s' (expected one of .weak .relaxed "
          ".acquire .release, .cta .cluster .gpu .sys, .global, .add .min "
          ".max .and .or .xor, .acc::f32 .acc::f16, .v2 .v4 .v8, or a type)",
          opcode, toks[i]));
    }
    if (have_type) {
      return RuleError(MultimemRule::kQualifierOrder, rule, absl::StrFormat(
          "'%s': the type must be the last qualifier; got '.%s' after it",
          opcode, toks[i]));
    }
    if (t.slot <= last_slot) {
      return RuleError(MultimemRule::kQualifierOrder, rule, absl::StrFormat(
          "'%s': '.%s' (%s) %s; expected order {.sem}{.scope}{.ss}.op"
          "{.acc_prec}{.vec}.type",
          opcode, toks[i], SlotName(t.slot),
          t.slot == last_slot ? "is repeated" : "is out of order"));
    }
    last_slot = t.slot;
    switch (t.slot) {
      case kSlotSem: in.sem = t.sem; break;
      case kSlotScope: in.scope = t.scope; break;
      case kSlotSs: in.global = true; break;
      case kSlotOp: in.op = t.op; break;
      case kSlotAcc: in.acc = t.acc; break;
      case kSlotVec: in.vec = t.vec; break;
      case kSlotType: in.type = t.type; have_type = true; break;
    }
  }
  if (!have_type) {
    return RuleError(MultimemRule::kSyntax, rule, absl::StrFormat(
        "'%s': missing the final .type qualifier", opcode));
  }
  if (absl::Status s = ValidateMultimem(in, rule); !s.ok()) return s;
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

PtxCheckResult CheckMultimemPtx(absl::string_view spelling,
                                absl::string_view target) {
  PtxCheckResult r;
  MultimemRule rule = MultimemRule::kSyntax;
  absl::StatusOr<MultimemInstruction> in = ParseMultimem(spelling, &rule);
  if (!in.ok()) {
    r.text = absl::StrCat("illegal: ", in.status().message(), "\n");
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
  absl::StrAppend(&r.text, "  requires:  PTX ISA ", IsaText(MultimemMinPtxIsa(*in)),
                  ", ", MultimemTargetText(*in), "\n");
  if (target.empty()) {
    r.ok = true;
    return r;
  }
  absl::StatusOr<PtxTarget> t = ParsePtxTarget(target);
  if (!t.ok()) {
    absl::StrAppend(&r.text, "illegal: ", t.status().message(), "\n");
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
