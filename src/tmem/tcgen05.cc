// Parser, validator, target table and fragment geometry of the tcgen05
// data-movement instructions (see include/mxpack/tcgen05.h for sources).
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

namespace mxpack {
namespace tcgen05 {
namespace {

struct ShapeInfo {
  Shape shape;
  const char* name;
  Op family;        // kCp, kLd (ld and st), kShift.
  int lanes;        // Rows of the shape.
  int bits;         // Bits per lane per repetition.
  int max_num;      // ld/st: largest .num (Table 49 [PTX]); 0 otherwise.
  int regs_per_num; // ld/st: registers per thread per .num.
};

// [PTX] 9.7.16.2.3 shape table; .num limits and register counts from PTX
// Table 49, cross-checked with the [CCCL] wrappers (16x128b stops at .x64
// with 128 registers, 16x256b at .x32 with 128 registers).
constexpr ShapeInfo kShapes[] = {
    {Shape::k128x256b, "128x256b", Op::kCp, 128, 256, 0, 0},
    {Shape::k128x128b, "128x128b", Op::kCp, 128, 128, 0, 0},
    {Shape::k4x256b, "4x256b", Op::kCp, 4, 256, 0, 0},
    {Shape::k64x128b, "64x128b", Op::kCp, 64, 128, 0, 0},
    {Shape::k32x128b, "32x128b", Op::kCp, 32, 128, 0, 0},
    {Shape::k32x32b, "32x32b", Op::kLd, 32, 32, 128, 1},
    {Shape::k16x64b, "16x64b", Op::kLd, 16, 64, 128, 1},
    {Shape::k16x128b, "16x128b", Op::kLd, 16, 128, 64, 2},
    {Shape::k16x256b, "16x256b", Op::kLd, 16, 256, 32, 4},
    {Shape::k16x32bx2, "16x32bx2", Op::kLd, 16, 32, 128, 1},
    {Shape::k31x256b, "31x256b", Op::kShift, 31, 256, 0, 0},
};

const ShapeInfo& Info(Shape s) { return kShapes[static_cast<int>(s)]; }

bool IsLdSt(Op op) { return op == Op::kLd || op == Op::kSt; }

std::string ShapeList(Op family) {
  std::vector<std::string> names;
  for (const ShapeInfo& i : kShapes) {
    if (i.family == family) names.push_back(absl::StrCat(".", i.name));
  }
  return absl::StrJoin(names, ", ");
}

std::string OpFull(Op op) { return absl::StrCat("tcgen05.", OpName(op)); }

absl::Status RuleError(absl::string_view rule, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(rule, ": ", message));
}

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

absl::string_view OpName(Op op) {
  switch (op) {
    case Op::kCp: return "cp";
    case Op::kShift: return "shift";
    case Op::kLd: return "ld";
    case Op::kSt: return "st";
  }
  return "?";
}

absl::string_view ShapeName(Shape s) { return Info(s).name; }

absl::string_view MulticastName(Multicast m) {
  switch (m) {
    case Multicast::kNone: return "";
    case Multicast::kWarpx2_02_13: return "warpx2::02_13";
    case Multicast::kWarpx2_01_23: return "warpx2::01_23";
    case Multicast::kWarpx4: return "warpx4";
  }
  return "?";
}

absl::string_view SrcFmtName(SrcFmt f) {
  switch (f) {
    case SrcFmt::kNone: return "";
    case SrcFmt::kB6x16P32: return "b6x16_p32";
    case SrcFmt::kB4x16P64: return "b4x16_p64";
  }
  return "?";
}

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

std::string Spelling(const Instruction& inst) {
  std::string s = absl::StrCat("tcgen05.", OpName(inst.op));
  const std::string cta = absl::StrCat(".cta_group::", static_cast<int>(inst.cta_group));
  switch (inst.op) {
    case Op::kCp:
      absl::StrAppend(&s, cta, ".", ShapeName(inst.shape));
      if (inst.multicast != Multicast::kNone) {
        absl::StrAppend(&s, ".", MulticastName(inst.multicast));
      }
      if (inst.src_fmt != SrcFmt::kNone) {
        absl::StrAppend(&s, ".b8x16.", SrcFmtName(inst.src_fmt));
      }
      break;
    case Op::kShift:
      absl::StrAppend(&s, inst.down_first ? absl::StrCat(".down", cta)
                                          : absl::StrCat(cta, ".down"));
      break;
    case Op::kLd:
    case Op::kSt:
      absl::StrAppend(&s, ".sync.aligned.", ShapeName(inst.shape), ".x", inst.num);
      if (inst.pack16) {
        absl::StrAppend(&s, inst.op == Op::kLd ? ".pack::16b" : ".unpack::16b");
      }
      absl::StrAppend(&s, ".b32");
      break;
  }
  return s;
}

int NumLanes(const Instruction& inst) {
  switch (inst.op) {
    case Op::kShift: return 32;
    case Op::kLd:
    case Op::kSt: return Info(inst.shape).lanes;
    case Op::kCp: {
      int n = 0;
      for (int r = 0; r < CpRows(inst.shape); ++r) {
        n += static_cast<int>(CpDestLanes(inst.shape, inst.multicast, r).size());
      }
      return n;
    }
  }
  return 0;
}

absl::StatusOr<int> NumColumns(const Instruction& inst) {
  switch (inst.op) {
    case Op::kShift: return 8;
    case Op::kCp: return Info(inst.shape).bits / 32;
    case Op::kLd:
    case Op::kSt: break;
  }
  const ShapeInfo& si = Info(inst.shape);
  const int factor = inst.pack16 ? 2 : 1;
  if (inst.shape == Shape::k16x32bx2) {
    if (!inst.half_split_offset.has_value()) {
      return absl::FailedPreconditionError(
          "immHalfSplitoff: .16x32bx2 needs the immHalfSplitoff operand to know "
          "its columns");
    }
    return *inst.half_split_offset + factor * inst.num;
  }
  return factor * si.bits / 32 * inst.num;
}

int NumRegisters(const Instruction& inst) {
  if (!IsLdSt(inst.op)) return 0;
  return Info(inst.shape).regs_per_num * inst.num;
}

int CpRows(Shape s) { return Info(s).family == Op::kCp ? Info(s).lanes : 0; }

int CpChunksPerRow(Shape s) {
  return Info(s).family == Op::kCp ? Info(s).bits / 128 : 0;
}

std::vector<int> CpDestLanes(Shape s, Multicast m, int row) {
  // docs/semantics.md section 3 table, from the [PTX] 9.7.16.9.1 multicast figures.
  switch (s) {
    case Shape::k128x256b:
    case Shape::k128x128b: return {row};
    case Shape::k4x256b: return {32 * row};
    case Shape::k64x128b:
      if (m == Multicast::kWarpx2_02_13) return {row, row + 64};
      return row < 32 ? std::vector<int>{row, row + 32}
                      : std::vector<int>{row + 32, row + 64};
    case Shape::k32x128b: return {row, row + 32, row + 64, row + 96};
    default: return {};
  }
}

FragmentCell Fragment(const Instruction& inst, int t, int j) {
  // "vc" is the column in the unpacked (32-bit) view; with (un)pack::16b it
  // stands for the column pair (2 vc, 2 vc + 1) [CUTLASS *_16b ValID].
  int lane = 0, vc = 0;
  switch (inst.shape) {
    case Shape::k32x32b:
      // [PTX] Figure 183 / [CUTLASS] SM100_TMEM_LOAD_32dp32b*: thread t owns
      // lane t, register j is column j.
      lane = t;
      vc = j;
      break;
    case Shape::k16x64b:
      // [CUTLASS] SM100_TMEM_LOAD_16dp64b*: DstLayout thread modes (2,2,8)
      // with bit strides (8 lanes, 1 column, 1 lane), value modes (32 bits,
      // 2 columns): lane t/4 + 8 (t%2), column (t/2)%2 + 2j. PTX Figure 184
      // is an image; see docs/tmem_open_points.md.
      lane = t / 4 + 8 * (t % 2);
      vc = (t / 2) % 2 + 2 * j;
      break;
    case Shape::k16x128b:
      // [CUTLASS] SM100_TMEM_LOAD_16dp128b*: thread modes (4,8) = (column,
      // lane); value modes (32 bits, 2 = +8 lanes, N = +4 columns).
      lane = t / 4 + 8 * (j % 2);
      vc = t % 4 + 4 * (j / 2);
      break;
    case Shape::k16x256b:
      // [CUTLASS] SM100_TMEM_LOAD_16dp256b*: thread modes (4,8) = (2
      // columns, lane); value modes (64 bits = 2 columns, 2 = +8 lanes, N =
      // +8 columns).
      lane = t / 4 + 8 * ((j % 4) / 2);
      vc = 8 * (j / 4) + 2 * (t % 4) + j % 2;
      break;
    case Shape::k16x32bx2: {
      // [PTX] 9.7.16.2.3.1.5 / [CUTLASS] SM100_TMEM_LOAD_16dp32b*: threads
      // 0-15 own lanes 0-15 of the first half, threads 16-31 the same lanes
      // of the second half, which starts immHalfSplitoff columns later.
      lane = t % 16;
      const int half_base = (t / 16) * inst.half_split_offset.value_or(0);
      FragmentCell c;
      c.lane = lane;
      if (inst.pack16) {
        c.column = half_base + 2 * j;
        c.column_hi = c.column + 1;
      } else {
        c.column = half_base + j;
      }
      return c;
    }
    default:
      break;
  }
  FragmentCell c;
  c.lane = lane;
  if (inst.pack16) {
    c.column = 2 * vc;
    c.column_hi = 2 * vc + 1;
  } else {
    c.column = vc;
  }
  return c;
}

std::string Describe(const Instruction& inst) {
  std::string s = absl::StrCat(Spelling(inst), "\n");
  const ShapeInfo& si = Info(inst.shape);
  switch (inst.op) {
    case Op::kCp: {
      absl::StrAppendFormat(
          &s, "  copy shared memory -> tensor memory, issued by one thread\n"
              "  shape .%s: %d source rows x %d bits (%d x 16-byte chunks per row)"
              " -> %d TMEM columns per lane\n",
          si.name, si.lanes, si.bits, CpChunksPerRow(inst.shape), si.bits / 32);
      std::string lanes;
      switch (inst.shape) {
        case Shape::k4x256b: lanes = "row r -> lane L0 + 32r"; break;
        case Shape::k64x128b:
          lanes = inst.multicast == Multicast::kWarpx2_02_13
                      ? "row r -> lanes L0 + r and L0 + r + 64"
                      : "row r < 32 -> lanes L0 + r, L0 + r + 32; row r >= 32 -> "
                        "lanes L0 + r + 32, L0 + r + 64";
          break;
        case Shape::k32x128b:
          lanes = "row r -> lanes L0 + r, +32, +64, +96";
          break;
        default: lanes = "row r -> lane L0 + r"; break;
      }
      absl::StrAppend(&s, "  lanes: ", lanes, " (", NumLanes(inst),
                      " lane writes)\n");
      if (inst.src_fmt != SrcFmt::kNone) {
        absl::StrAppendFormat(&s,
                              "  decompression: each 16-byte %s chunk -> 16 8-bit "
                              "containers (.b8x16), 4 columns\n",
                              SrcFmtName(inst.src_fmt));
      }
      absl::StrAppend(&s, inst.cta_group == CtaGroup::k2
                              ? "  cta_group::2: this CTA and its peer CTA\n"
                              : "  cta_group::1: this CTA\n");
      break;
    }
    case Op::kShift:
      absl::StrAppendFormat(
          &s, "  implicit shape .31x256b: within the 32-lane block at taddr (lane "
              "multiple of 32), lane r+1 takes lane r's 8 columns for r = 30..0\n"
              "  cta_group::%d\n",
          static_cast<int>(inst.cta_group));
      break;
    case Op::kLd:
    case Op::kSt: {
      absl::StatusOr<int> cols = NumColumns(inst);
      absl::StrAppendFormat(
          &s, "  %s, warp-collective: %d lanes x %d bits x %d, %d .b32 registers "
              "per thread, %s TMEM columns%s\n",
          inst.op == Op::kLd ? "tensor memory -> registers"
                             : "registers -> tensor memory",
          si.lanes, si.bits, inst.num, NumRegisters(inst),
          cols.ok() ? absl::StrCat(*cols) : std::string("immHalfSplitoff +"),
          inst.pack16 ? (inst.op == Op::kLd
                             ? " (pack::16b: low halves of column pairs -> one register)"
                             : " (unpack::16b: register halves -> low halves of column "
                               "pairs)")
                      : "");
      if (inst.shape == Shape::k16x32bx2) {
        absl::StrAppend(&s, "  immHalfSplitoff: ",
                        inst.half_split_offset.has_value()
                            ? absl::StrCat(*inst.half_split_offset)
                            : std::string("(operand not given)"),
                        "\n");
      }
      break;
    }
  }
  return s;
}

// ---------------------------------------------------------------------------
// Targets.

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
