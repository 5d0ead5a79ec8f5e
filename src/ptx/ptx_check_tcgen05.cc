// The tcgen05 family (cp, shift, ld, st) of the `mxpack ptx-check` registry
// of include/mxpack/ptx_check.h: the spelling is first brought to the PTX
// syntax order with the freedoms ptxas 13 allows (docs/ptx_check.md), the
// operands are checked as ptxas checks them, then CheckTcgen05
// (include/mxpack/tcgen05.h) judges the canonical spelling.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "mxpack/ptx_check.h"
#include "mxpack/tcgen05.h"
#include "src/util/ptx_operands.h"

namespace mxpack {
namespace {

PtxCheckResult Illegal(std::string text) {
  PtxCheckResult r;
  r.text = absl::StrCat("illegal: ", text, "\n");
  return r;
}

bool IsCpShape(absl::string_view t) {
  return t == "128x256b" || t == "128x128b" || t == "4x256b" ||
         t == "64x128b" || t == "32x128b";
}
bool IsLdStShape(absl::string_view t) {
  return t == "32x32b" || t == "16x64b" || t == "16x128b" || t == "16x256b" ||
         t == "16x32bx2";
}
bool IsNum(absl::string_view t) {
  return t.size() >= 2 && t[0] == 'x' &&
         t.find_first_not_of("0123456789", 1) == absl::string_view::npos;
}

// Qualifiers in the PTX syntax order, or the reason ptxas 13 rejects them.
// ptxas takes the qualifiers in any order, each kind once, except that
// ld/st accept a repeated .sync, a missing .aligned and stray .b8x16
// qualifiers (ignored), and cp needs .b8x16 right before its source format.
struct Canonical {
  std::string opcode;
  std::vector<std::string> notes;
  std::string error;
};

Canonical Canonicalize(absl::string_view op,
                       const std::vector<absl::string_view>& toks) {
  Canonical c;
  std::map<std::string, std::string> slot;  // kind -> token
  std::vector<std::string> order;           // kinds in order of appearance
  int syncs = 0, b8x16 = 0;
  auto put = [&](const std::string& kind, absl::string_view tok) {
    if (slot.count(kind)) {
      c.error = absl::StrCat("tcgen05.", op, ": a second ", kind, " '.", tok,
                             "' (ptxas 13: \"Multiple ", kind,
                             " modifiers specified\"); expected at most one");
      return;
    }
    slot[kind] = std::string(tok);
    order.push_back(kind);
  };
  const bool ldst = op == "ld" || op == "st";
  for (size_t i = 0; i < toks.size() && c.error.empty(); ++i) {
    const absl::string_view t = toks[i];
    if (op == "cp" && t == "b8x16" && i + 1 < toks.size() &&
        (toks[i + 1] == "b6x16_p32" || toks[i + 1] == "b4x16_p64")) {
      put("decompression", absl::StrCat(t, ".", toks[i + 1]));
      ++i;
    } else if (absl::StartsWith(t, "cta_group::") && !ldst) {
      put("cta_group", t);
    } else if (op == "cp" && IsCpShape(t)) {
      put("shape", t);
    } else if (op == "cp" && absl::StartsWith(t, "warpx")) {
      put("multicast", t);
    } else if (op == "shift" && t == "down") {
      put("down", t);
    } else if (ldst && t == "sync") {
      if (++syncs == 1) order.push_back("sync");
    } else if (ldst && t == "aligned") {
      put("aligned", t);
    } else if (ldst && IsLdStShape(t)) {
      put("shape", t);
    } else if (ldst && IsNum(t)) {
      put("num", t);
    } else if (ldst && (t == "pack::16b" || t == "unpack::16b")) {
      put("pack", t);
    } else if (ldst && t == "b32") {
      put("type", t);
    } else if (ldst && t == "b8x16") {
      ++b8x16;
    } else {
      // Unknown or misplaced: the family checker names the rule.
      put(absl::StrCat("other", i), t);
    }
  }
  if (!c.error.empty()) return c;
  std::vector<std::string> canon_order;
  if (op == "cp") {
    canon_order = {"cta_group", "shape", "multicast", "decompression"};
  } else if (op == "shift") {
    // Both orders are PTX syntax; CheckTcgen05 keeps the one written.
    canon_order = order;
  } else {
    canon_order = {"sync", "aligned", "shape", "num", "pack", "type"};
    if (syncs == 0) {
      c.error = absl::StrCat("tcgen05.", op,
                             ": .sync is required (ptxas 13: \".sync "
                             "modifier required\")");
      return c;
    }
    slot["sync"] = "sync";
    if (!slot.count("aligned")) {
      slot["aligned"] = "aligned";
      c.notes.push_back(
          absl::StrCat("accepted: ptxas 13 accepts tcgen05.", op,
                       " without .aligned although the PTX ISA syntax requires "
                       ".sync.aligned"));
    }
    if (syncs > 1) {
      c.notes.push_back(absl::StrCat(
          "accepted: ptxas 13 accepts a repeated .sync on tcgen05.", op,
          " although the PTX ISA syntax has one"));
    }
    if (b8x16 > 0) {
      c.notes.push_back(absl::StrCat(
          "accepted: ptxas 13 accepts and ignores .b8x16 on tcgen05.", op,
          " although the PTX ISA syntax has no such qualifier there"));
    }
  }
  std::vector<std::string> parts = {"tcgen05", std::string(op)};
  for (const std::string& k : canon_order) {
    if (slot.count(k)) parts.push_back(slot[k]);
  }
  // Unknown tokens go last, where the family checker reports them.
  for (const std::string& k : order) {
    if (absl::StartsWith(k, "other")) parts.push_back(slot[k]);
  }
  c.opcode = absl::StrJoin(parts, ".");
  // The written order (each kind once, as `order` holds it) differs from
  // the syntax order, ignoring what the canonical form adds.
  std::vector<std::string> want;
  for (const std::string& k : canon_order) {
    if (std::find(order.begin(), order.end(), k) != order.end()) {
      want.push_back(k);
    }
  }
  std::vector<std::string> got;
  for (const std::string& k : order) {
    if (std::find(canon_order.begin(), canon_order.end(), k) !=
        canon_order.end()) {
      got.push_back(k);
    }
  }
  if (op != "shift" && got != want) {
    c.notes.push_back(absl::StrCat(
        "accepted: ptxas 13 accepts the qualifiers of tcgen05.", op,
        " in any order although the PTX ISA syntax fixes it (", c.opcode, ")"));
  }
  return c;
}

// Operand checks ptxas 13 makes beyond the counts CheckTcgen05 checks: the
// tensor-memory address is a 32-bit register ([%r1], [%r1+imm]); the cp
// descriptor a .b64 register; ld/st data registers 32-bit, in braces.
std::string CheckOperands(absl::string_view op, absl::string_view text) {
  absl::StatusOr<std::vector<ptx::Operand>> ops = ptx::ParseOperands(text);
  if (!ops.ok()) return std::string(ops.status().message());
  for (const ptx::Operand& o : *ops) {
    if (o.kind == ptx::OperandKind::kAddress) {
      const ptx::RegClass c = ptx::RegClassOf(o.base);
      if (o.base_is_immediate ||
          (c != ptx::RegClass::kUnknown && ptx::RegClassBits(c) != 32)) {
        return absl::StrCat("tensor-memory address '", o.text,
                            "': expected a 32-bit register ([%r1] or "
                            "[%r1+imm])");
      }
    }
  }
  if (op == "cp" && ops->size() == 2) {
    const ptx::Operand& d = (*ops)[1];
    const ptx::RegClass c = ptx::RegClassOf(d.text);
    if (d.kind != ptx::OperandKind::kRegister ||
        (c != ptx::RegClass::kUnknown && c != ptx::RegClass::kB64)) {
      return absl::StrCat("descriptor '", d.text,
                          "': expected a .b64 register (%rd1)");
    }
  }
  if ((op == "ld" || op == "st") && ops->size() >= 2) {
    // ld: {regs}, [taddr]{, imm}; st: [taddr]{, imm}, {regs}.
    const ptx::Operand& v = op == "ld" ? ops->front() : ops->back();
    if (v.kind != ptx::OperandKind::kVector) {
      return absl::StrCat("'", v.text,
                          "': expected the registers in braces {%r1, ...}");
    }
    for (const ptx::Operand& e : v.elements) {
      const ptx::RegClass c = ptx::RegClassOf(e.text);
      if (e.kind == ptx::OperandKind::kRegister &&
          c != ptx::RegClass::kUnknown &&
          (ptx::RegClassBits(c) != 32 || c == ptx::RegClass::kPred)) {
        return absl::StrCat("register ", e.text, " (", ptx::RegClassName(c),
                            " by its name): expected a 32-bit register");
      }
    }
  }
  return "";
}

PtxCheckResult CheckTcgen05Family(absl::string_view spelling,
                                  absl::string_view target) {
  PtxCheckResult out;
  // Only the data-movement instructions are modelled; tcgen05.mma, .alloc,
  // .commit, ... are neither legal nor illegal here.
  const absl::string_view opcode = PtxOpcodeOf(spelling);
  std::vector<absl::string_view> toks =
      absl::StrSplit(opcode.substr(sizeof("tcgen05.") - 1), '.');
  const absl::string_view op = toks.front();
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
  toks.erase(toks.begin());
  Canonical c = Canonicalize(op, toks);
  if (!c.error.empty()) return Illegal(c.error);
  absl::string_view junk;
  const absl::string_view operands = PtxOperandsOf(spelling, &junk);
  if (!junk.empty()) {
    return Illegal(
        absl::StrCat(c.opcode, ": unexpected text '", junk, "' after ';'"));
  }
  if (!operands.empty()) {
    const std::string bad = CheckOperands(op, operands);
    if (!bad.empty()) return Illegal(absl::StrCat(c.opcode, ": ", bad));
  }
  const std::string line =
      operands.empty() ? c.opcode : absl::StrCat(c.opcode, " ", operands, ";");
  absl::StatusOr<std::string> r = CheckTcgen05(
      line,
      target.empty() ? std::nullopt : std::optional<absl::string_view>(target));
  out.ok = r.ok();
  out.text = r.ok() ? *r : std::string(r.status().message());
  if (!out.text.empty() && out.text.back() != '\n') out.text.push_back('\n');
  for (const std::string& n : c.notes) {
    absl::StrAppend(&out.text, "  note:      ", n, "\n");
  }
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
