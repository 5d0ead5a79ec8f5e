// Operand checks of multimem.* instruction lines: operand count and order,
// vector braces, register classes as ptxas 13 types them, addresses
// (docs/ptx_check.md). tests/ptx/ compares them with ptxas.
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


}  // namespace mxpack
