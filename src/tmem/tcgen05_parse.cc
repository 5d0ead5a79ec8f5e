// Parser and validator of the tcgen05 data-movement spellings (cp, shift,
// ld, st) and their operands (see include/mxpack/tcgen05.h for sources).
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

// Splits an operand list at top-level commas (commas inside {...} or [...]
// belong to one operand).
std::vector<std::string> SplitOperands(absl::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(std::string(absl::StripAsciiWhitespace(cur)));
      cur.clear();
      continue;
    }
    cur.push_back(c);
  }
  if (!absl::StripAsciiWhitespace(cur).empty() || !out.empty()) {
    out.push_back(std::string(absl::StripAsciiWhitespace(cur)));
  }
  return out;
}

bool IsBracketed(absl::string_view s) {
  return s.size() >= 2 && s.front() == '[' && s.back() == ']';
}

// Number of registers in "{a, b, c}"; nullopt for a non-vector operand.
std::optional<int> VectorLength(absl::string_view s) {
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return std::nullopt;
  s = s.substr(1, s.size() - 2);
  if (absl::StripAsciiWhitespace(s).empty()) return 0;
  int n = 1;
  for (char c : s) n += c == ',';
  return n;
}

absl::StatusOr<std::optional<int>> ParseImmediate(absl::string_view s) {
  int64_t v = 0;
  bool ok = false;
  if (absl::StartsWithIgnoreCase(s, "0x")) {
    ok = absl::SimpleHexAtoi(s.substr(2), &v);
  } else {
    ok = absl::SimpleAtoi(s, &v);
  }
  if (!ok) {
    return RuleError("immHalfSplitoff",
                     absl::StrFormat("expected an integer immediate, got '%s'", s));
  }
  if (v < 0 || v >= kColumns) {
    return RuleError("immHalfSplitoff",
                     absl::StrFormat("expected 0..%d columns, got %d",
                                     kColumns - 1, v));
  }
  return std::optional<int>(static_cast<int>(v));
}

// Checks the operand list against the decoded opcode; records the
// immHalfSplitoff literal.
absl::Status CheckOperands(absl::string_view text, Instruction& inst) {
  std::vector<std::string> ops = SplitOperands(text);
  const std::string what = OpFull(inst.op);
  auto count_error = [&](absl::string_view expected) {
    return RuleError("operands",
                     absl::StrFormat("%s takes %s, got %d operand(s) '%s'", what,
                                     expected, ops.size(), text));
  };
  switch (inst.op) {
    case Op::kCp:
      if (ops.size() != 2 || !IsBracketed(ops[0])) return count_error("[taddr], s-desc");
      return absl::OkStatus();
    case Op::kShift:
      if (ops.size() != 1 || !IsBracketed(ops[0])) return count_error("[taddr]");
      return absl::OkStatus();
    case Op::kLd:
    case Op::kSt:
      break;
  }
  const bool split = inst.shape == Shape::k16x32bx2;
  const size_t expected = split ? 3 : 2;
  const char* form = inst.op == Op::kLd
                         ? (split ? "r, [taddr], immHalfSplitoff" : "r, [taddr]")
                         : (split ? "[taddr], immHalfSplitoff, r" : "[taddr], r");
  if (ops.size() != expected) return count_error(form);
  const std::string& regs = inst.op == Op::kLd ? ops[0] : ops.back();
  const std::string& addr = inst.op == Op::kLd ? ops[1] : ops[0];
  if (!IsBracketed(addr)) return count_error(form);
  if (std::optional<int> n = VectorLength(regs);
      n.has_value() && *n != NumRegisters(inst)) {
    return RuleError(
        "registers",
        absl::StrFormat("%s.%s.x%d needs a vector of %d .b32 registers, got %d",
                        what, ShapeName(inst.shape), inst.num,
                        NumRegisters(inst), *n));
  }
  if (split) {
    absl::StatusOr<std::optional<int>> imm =
        ParseImmediate(inst.op == Op::kLd ? ops[2] : ops[1]);
    if (!imm.ok()) return imm.status();
    inst.half_split_offset = *imm;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Validate(const Instruction& inst) {
  const ShapeInfo& si = Info(inst.shape);
  const std::string what = OpFull(inst.op);
  const Op family = IsLdSt(inst.op) ? Op::kLd : inst.op;
  if (si.family != family) {
    return RuleError("shape",
                     absl::StrFormat("%s takes %s; got .%s", what,
                                     family == Op::kShift
                                         ? std::string("the implicit .31x256b only")
                                         : ShapeList(family),
                                     si.name));
  }
  if (inst.cta_group != CtaGroup::k1 && inst.cta_group != CtaGroup::k2) {
    return RuleError("cta_group", "expected .cta_group::1 or .cta_group::2");
  }
  if (IsLdSt(inst.op) && inst.cta_group != CtaGroup::k1) {
    return RuleError("cta_group", absl::StrCat(what, " takes no .cta_group"));
  }
  if (inst.op != Op::kCp) {
    if (inst.multicast != Multicast::kNone) {
      return RuleError("multicast", absl::StrCat(what, " takes no multicast qualifier"));
    }
    if (inst.src_fmt != SrcFmt::kNone) {
      return RuleError("decompression",
                       absl::StrCat(what, " takes no .dst_fmt/.src_fmt"));
    }
  }
  if (inst.op != Op::kShift && inst.down_first) {
    return RuleError("qualifier order", ".down exists only on tcgen05.shift");
  }
  if (inst.op == Op::kCp) {
    // [PTX] 9.7.16.9.1: ".64x128b ... .warpx2::02_13 or .warpx2::01_23",
    // ".32x128b ... .warpx4"; the other shapes have no multicast.
    bool ok = inst.multicast == Multicast::kNone;
    const char* need = "no multicast qualifier";
    if (inst.shape == Shape::k64x128b) {
      ok = inst.multicast == Multicast::kWarpx2_02_13 ||
           inst.multicast == Multicast::kWarpx2_01_23;
      need = ".warpx2::02_13 or .warpx2::01_23";
    } else if (inst.shape == Shape::k32x128b) {
      ok = inst.multicast == Multicast::kWarpx4;
      need = ".warpx4";
    }
    if (!ok) {
      return RuleError(
          "multicast",
          absl::StrFormat("tcgen05.cp.%s requires %s, got %s", si.name, need,
                          inst.multicast == Multicast::kNone
                              ? std::string("none")
                              : absl::StrCat(".", MulticastName(inst.multicast))));
    }
  }
  if (IsLdSt(inst.op)) {
    if (inst.num < 1 || inst.num > si.max_num || (inst.num & (inst.num - 1)) != 0) {
      return RuleError(
          "num", absl::StrFormat("%s.%s takes .x1, .x2, .x4, ... .x%d, got .x%d",
                                 what, si.name, si.max_num, inst.num));
    }
    if (inst.shape != Shape::k16x32bx2 && inst.half_split_offset.has_value()) {
      return RuleError("immHalfSplitoff",
                       absl::StrFormat("only .16x32bx2 takes immHalfSplitoff, "
                                       "shape is .%s", si.name));
    }
    if (inst.half_split_offset.has_value() &&
        (*inst.half_split_offset < 0 || *inst.half_split_offset >= kColumns)) {
      return RuleError("immHalfSplitoff",
                       absl::StrFormat("expected 0..%d, got %d", kColumns - 1,
                                       *inst.half_split_offset));
    }
  } else {
    if (inst.num != 0) {
      return RuleError("num", absl::StrCat(what, " takes no .num"));
    }
    if (inst.pack16) {
      return RuleError("pack", absl::StrCat(what, " takes no .pack::16b/.unpack::16b"));
    }
    if (inst.half_split_offset.has_value()) {
      return RuleError("immHalfSplitoff", absl::StrCat(what, " takes none"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Instruction> Parse(absl::string_view spelling) {
  absl::string_view s = absl::StripAsciiWhitespace(spelling);
  absl::ConsumeSuffix(&s, ";");
  s = absl::StripAsciiWhitespace(s);
  size_t ws = 0;
  while (ws < s.size() && !absl::ascii_isspace(static_cast<unsigned char>(s[ws]))) ++ws;
  const absl::string_view opcode = s.substr(0, ws);
  const absl::string_view operands = absl::StripAsciiWhitespace(s.substr(ws));
  std::vector<absl::string_view> tok = absl::StrSplit(opcode, '.');
  if (tok.size() < 2 || tok[0] != "tcgen05") {
    return RuleError("opcode",
                     absl::StrFormat("expected 'tcgen05.<cp|shift|ld|st>...', got '%s'",
                                     opcode));
  }
  for (size_t i = 1; i < tok.size(); ++i) {
    if (tok[i].empty()) {
      return RuleError("opcode", absl::StrFormat("empty qualifier in '%s'", opcode));
    }
  }
  Instruction inst;
  const absl::string_view op = tok[1];
  if (op == "cp") {
    inst.op = Op::kCp;
  } else if (op == "shift") {
    inst.op = Op::kShift;
    inst.shape = Shape::k31x256b;
  } else if (op == "ld" || op == "st") {
    inst.op = op == "ld" ? Op::kLd : Op::kSt;
    if (tok.size() > 2 && tok[2] == "red") {
      return absl::UnimplementedError(
          "opcode: tcgen05.ld.red is not modelled by mxpack (only tcgen05.cp, "
          "tcgen05.shift, tcgen05.ld, tcgen05.st)");
    }
  } else if (op == "alloc" || op == "dealloc" || op == "relinquish_alloc_permit" ||
             op == "mma" || op == "commit" || op == "fence" || op == "wait") {
    return absl::UnimplementedError(absl::StrFormat(
        "opcode: tcgen05.%s is not modelled by mxpack (only tcgen05.cp, "
        "tcgen05.shift, tcgen05.ld, tcgen05.st)",
        op));
  } else {
    return RuleError("opcode",
                     absl::StrFormat("unknown instruction 'tcgen05.%s'; expected "
                                     "cp, shift, ld or st",
                                     op));
  }
  const std::string what = OpFull(inst.op);

  // Every qualifier belongs to a slot; slots must appear in PTX order
  // (tcgen05.shift accepts .cta_group and .down in either order, as the PTX
  // ISA shows both), each at most once.
  enum Slot {
    kSync, kAligned, kCtaGroup, kShape, kNum, kMulticast, kDstFmt, kSrcFmt,
    kPack, kB32, kDown, kNumSlots
  };
  static const char* const kSlotNames[kNumSlots] = {
      ".sync",   ".aligned", ".cta_group", "shape", ".num", "multicast",
      ".dst_fmt", ".src_fmt", ".pack",      ".b32",  ".down"};
  // PTX order per instruction family.
  Slot order_buf[6] = {kSync, kAligned, kShape, kNum, kPack, kB32};  // ld/st.
  size_t order_size = 6;
  if (inst.op == Op::kCp) {
    const Slot cp[] = {kCtaGroup, kShape, kMulticast, kDstFmt, kSrcFmt};
    std::copy(std::begin(cp), std::end(cp), order_buf);
    order_size = 5;
  } else if (inst.op == Op::kShift) {
    order_buf[0] = kCtaGroup;
    order_buf[1] = kDown;
    order_size = 2;
  }
  const absl::Span<const Slot> order(order_buf, order_size);
  std::vector<int> seen(kNumSlots, -1);
  int last_rank = -1;
  bool has_dst = false;
  for (size_t i = 2; i < tok.size(); ++i) {
    const absl::string_view q = tok[i];
    Slot slot;
    if (q == "sync") {
      slot = kSync;
    } else if (q == "aligned") {
      slot = kAligned;
    } else if (absl::StartsWith(q, "cta_group")) {
      slot = kCtaGroup;
      if (q == "cta_group::1") {
        inst.cta_group = CtaGroup::k1;
      } else if (q == "cta_group::2") {
        inst.cta_group = CtaGroup::k2;
      } else {
        return RuleError("cta_group",
                         absl::StrFormat("expected .cta_group::1 or .cta_group::2, "
                                         "got .%s",
                                         q));
      }
    } else if (q == "down") {
      slot = kDown;
    } else if (q == "b32") {
      slot = kB32;
    } else if (q == "pack::16b" || q == "unpack::16b") {
      slot = kPack;
      const bool is_pack = q == "pack::16b";
      if (inst.op == Op::kLd && !is_pack) {
        return RuleError("pack", "tcgen05.ld takes .pack::16b, not .unpack::16b");
      }
      if (inst.op == Op::kSt && is_pack) {
        return RuleError("pack", "tcgen05.st takes .unpack::16b, not .pack::16b");
      }
      inst.pack16 = true;
    } else if (q == "warpx2::02_13" || q == "warpx2::01_23" || q == "warpx4") {
      slot = kMulticast;
      inst.multicast = q == "warpx4"          ? Multicast::kWarpx4
                       : q == "warpx2::02_13" ? Multicast::kWarpx2_02_13
                                              : Multicast::kWarpx2_01_23;
    } else if (absl::StartsWith(q, "warpx")) {
      return RuleError("multicast",
                       absl::StrFormat("expected .warpx2::02_13, .warpx2::01_23 or "
                                       ".warpx4, got .%s",
                                       q));
    } else if (q == "b8x16") {
      slot = kDstFmt;
      has_dst = true;
    } else if (q == "b6x16_p32" || q == "b4x16_p64") {
      slot = kSrcFmt;
      inst.src_fmt = q == "b6x16_p32" ? SrcFmt::kB6x16P32 : SrcFmt::kB4x16P64;
    } else if (q.size() >= 2 && q[0] == 'x' &&
               absl::ascii_isdigit(static_cast<unsigned char>(q[1]))) {
      slot = kNum;
      int n = 0;
      if (!absl::SimpleAtoi(q.substr(1), &n)) {
        return RuleError("num", absl::StrFormat("malformed .num '.%s'", q));
      }
      inst.num = n;
    } else {
      bool found = false;
      for (const ShapeInfo& si : kShapes) {
        if (q == si.name) {
          found = true;
          inst.shape = si.shape;
        }
      }
      if (!found) {
        return RuleError("qualifier",
                         absl::StrFormat("unknown qualifier '.%s' in %s", q, what));
      }
      slot = kShape;
      if (inst.op == Op::kShift) {
        return RuleError("shape",
                         absl::StrFormat("tcgen05.shift has the implicit shape "
                                         ".31x256b and takes no shape, got .%s",
                                         q));
      }
    }
    int rank = -1;
    for (size_t k = 0; k < order.size(); ++k) {
      if (order[k] == slot) rank = static_cast<int>(k);
    }
    if (rank < 0) {
      return RuleError("qualifier",
                       absl::StrFormat("'.%s' (%s) does not apply to %s", q,
                                       kSlotNames[slot], what));
    }
    if (seen[slot] >= 0) {
      return RuleError("qualifier",
                       absl::StrFormat("%s given twice ('.%s')", kSlotNames[slot], q));
    }
    seen[slot] = static_cast<int>(i);
    if (rank < last_rank) {
      if (inst.op == Op::kShift) {
        inst.down_first = true;  // .down.cta_group::N, shown in the PTX ISA.
      } else {
        std::vector<std::string> names;
        for (Slot o : order) names.push_back(kSlotNames[o]);
        return RuleError("qualifier order",
                         absl::StrFormat("'.%s' is out of order; %s qualifiers "
                                         "come in the order %s",
                                         q, what, absl::StrJoin(names, ", ")));
      }
    }
    last_rank = std::max(last_rank, rank);
  }
  // Required qualifiers.
  auto missing = [&](Slot slot, absl::string_view rule, absl::string_view text) {
    return seen[slot] < 0 ? RuleError(rule, absl::StrCat(what, " requires ", text))
                          : absl::OkStatus();
  };
  switch (inst.op) {
    case Op::kCp:
      if (absl::Status st = missing(kCtaGroup, "cta_group",
                                    ".cta_group::1 or .cta_group::2");
          !st.ok()) {
        return st;
      }
      if (absl::Status st = missing(kShape, "shape", ShapeList(Op::kCp)); !st.ok()) {
        return st;
      }
      // [PTX] 9.7.16.9.1: ".dst_fmt and .src_fmt must be specified together".
      if (has_dst != (inst.src_fmt != SrcFmt::kNone)) {
        return RuleError(
            "decompression",
            has_dst ? "'.b8x16' (.dst_fmt) needs a .src_fmt: .b6x16_p32 or .b4x16_p64"
                    : absl::StrFormat("'.%s' (.src_fmt) needs the .dst_fmt '.b8x16' "
                                      "before it",
                                      SrcFmtName(inst.src_fmt)));
      }
      break;
    case Op::kShift:
      if (absl::Status st = missing(kCtaGroup, "cta_group",
                                    ".cta_group::1 or .cta_group::2");
          !st.ok()) {
        return st;
      }
      if (absl::Status st = missing(kDown, "down", ".down"); !st.ok()) return st;
      break;
    case Op::kLd:
    case Op::kSt:
      for (auto [slot, text] : {std::pair<Slot, const char*>{kSync, ".sync"},
                                {kAligned, ".aligned"},
                                {kShape, "a shape (.32x32b, .16x64b, .16x128b, "
                                         ".16x256b, .16x32bx2)"},
                                {kNum, ".num (.x1 .. .x128)"},
                                {kB32, ".b32"}}) {
        if (absl::Status st = missing(slot, slot == kShape ? "shape"
                                            : slot == kNum ? "num"
                                                           : "qualifier",
                                      text);
            !st.ok()) {
          return st;
        }
      }
      if (seen[kB32] != static_cast<int>(tok.size()) - 1) {
        return RuleError("qualifier order",
                         absl::StrCat(what, " must end with .b32"));
      }
      break;
  }
  if (absl::Status st = Validate(inst); !st.ok()) return st;
  if (!operands.empty()) {
    if (absl::Status st = CheckOperands(operands, inst); !st.ok()) return st;
  }
  return inst;
}


}  // namespace tcgen05
}  // namespace mxpack
