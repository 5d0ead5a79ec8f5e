// Names, canonical spellings and fragment geometry of the tcgen05
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

#include "src/tmem/tcgen05_internal.h"

namespace mxpack {
namespace tcgen05 {

using namespace internal;  // NOLINT: this domain's own helpers

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

}  // namespace tcgen05
}  // namespace mxpack
