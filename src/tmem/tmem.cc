// Host model of tensor memory: tcgen05.cp / shift / ld / st semantics of
// docs/semantics.md section 3 on a 128 x 512 x 32-bit array per CTA.
#include "mxpack/tmem.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "mxpack/pack.h"
#include "mxpack/tcgen05.h"

namespace mxpack {

using tcgen05::kColumns;
using tcgen05::kLanes;

namespace {

absl::Status CheckTaddr(uint32_t taddr) {
  const uint32_t lane = tcgen05::TaddrLane(taddr);
  const uint32_t col = tcgen05::TaddrColumn(taddr);
  if (lane >= static_cast<uint32_t>(kLanes) || col >= static_cast<uint32_t>(kColumns)) {
    return absl::OutOfRangeError(absl::StrFormat(
        "taddr 0x%08x: expected lane (bits [31:16]) < %d and column (bits "
        "[15:0]) < %d, got lane %u column %u",
        taddr, kLanes, kColumns, lane, col));
  }
  return absl::OkStatus();
}

absl::Status CheckColumns(uint32_t taddr, int columns, absl::string_view what) {
  const uint32_t col = tcgen05::TaddrColumn(taddr);
  if (col + static_cast<uint32_t>(columns) > static_cast<uint32_t>(kColumns)) {
    return absl::OutOfRangeError(absl::StrFormat(
        "taddr 0x%08x: %s touches columns %u..%u, past the last column %d",
        taddr, what, col, col + columns - 1, kColumns - 1));
  }
  return absl::OkStatus();
}

}  // namespace

Tmem::Tmem(bool with_peer, uint32_t fill)
    : num_ctas_(with_peer ? 2 : 1),
      cells_(static_cast<size_t>(num_ctas_) * kLanes * kColumns, fill) {}

absl::StatusOr<uint32_t> Tmem::Read(int lane, int column, int cta) const {
  if (cta < 0 || cta >= num_ctas_ || lane < 0 || lane >= kLanes || column < 0 ||
      column >= kColumns) {
    return absl::OutOfRangeError(absl::StrFormat(
        "Tmem::Read: expected cta < %d, lane < %d, column < %d, got cta %d lane "
        "%d column %d",
        num_ctas_, kLanes, kColumns, cta, lane, column));
  }
  return At(lane, column, cta);
}

absl::Status Tmem::Write(int lane, int column, uint32_t value, int cta) {
  if (cta < 0 || cta >= num_ctas_ || lane < 0 || lane >= kLanes || column < 0 ||
      column >= kColumns) {
    return absl::OutOfRangeError(absl::StrFormat(
        "Tmem::Write: expected cta < %d, lane < %d, column < %d, got cta %d lane "
        "%d column %d",
        num_ctas_, kLanes, kColumns, cta, lane, column));
  }
  cells_[Index(cta, lane, column)] = value;
  return absl::OkStatus();
}

void Tmem::Fill(uint32_t value) { std::fill(cells_.begin(), cells_.end(), value); }

absl::StatusOr<int> Tmem::CheckIssue(const tcgen05::Instruction& inst,
                                     tcgen05::Op expected, absl::string_view who,
                                     uint32_t taddr) const {
  if (inst.op != expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Tmem::%s: expected a tcgen05.%s instruction, got %s", who,
        tcgen05::OpName(expected), Spelling(inst)));
  }
  if (absl::Status s = tcgen05::Validate(inst); !s.ok()) return s;
  const int ctas = inst.cta_group == tcgen05::CtaGroup::k2 ? 2 : 1;
  if (ctas > num_ctas_) {
    return absl::FailedPreconditionError(
        ".cta_group::2: the Tmem has no peer CTA (construct Tmem(/*with_peer=*/"
        "true))");
  }
  if (absl::Status s = CheckTaddr(taddr); !s.ok()) return s;
  return ctas;
}

absl::Status Tmem::Cp(const tcgen05::Instruction& inst,
                      absl::Span<const uint8_t> smem, uint64_t desc,
                      uint32_t taddr, Fp6Container fp6,
                      absl::Span<const uint8_t> peer_smem) {
  absl::StatusOr<int> issued = CheckIssue(inst, tcgen05::Op::kCp, "Cp", taddr);
  if (!issued.ok()) return issued.status();
  const int ctas = *issued;
  if (absl::Status s = CheckColumns(taddr, *tcgen05::NumColumns(inst), "tcgen05.cp");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<tcgen05::SmemDescriptor> d = tcgen05::DecodeDescriptor(desc);
  if (!d.ok()) return d.status();

  const int rows = tcgen05::CpRows(inst.shape);
  const int chunks = tcgen05::CpChunksPerRow(inst.shape);
  const uint32_t lane0 = tcgen05::TaddrLane(taddr);
  const uint32_t col0 = tcgen05::TaddrColumn(taddr);
  // Validate all lanes and addresses before writing anything.
  std::vector<uint32_t> addr(static_cast<size_t>(rows) * chunks);
  for (int r = 0; r < rows; ++r) {
    for (int lane : tcgen05::CpDestLanes(inst.shape, inst.multicast, r)) {
      if (lane0 + lane >= static_cast<uint32_t>(kLanes)) {
        return absl::OutOfRangeError(absl::StrFormat(
            "taddr 0x%08x: %s row %d lands on lane %u, past the last lane %d",
            taddr, Spelling(inst), r, lane0 + lane, kLanes - 1));
      }
    }
    for (int j = 0; j < chunks; ++j) {
      absl::StatusOr<uint32_t> a = tcgen05::ChunkAddress(*d, r, j);
      if (!a.ok()) return a.status();
      for (int cta = 0; cta < ctas; ++cta) {
        const absl::Span<const uint8_t> mem =
            (cta == 1 && !peer_smem.empty()) ? peer_smem : smem;
        if (static_cast<size_t>(*a) + 16 > mem.size()) {
          return absl::OutOfRangeError(absl::StrFormat(
              "smem%s: row %d chunk %d reads bytes 0x%x..0x%x, but shared memory "
              "has %u bytes (descriptor %s)",
              cta == 1 && !peer_smem.empty() ? " (peer)" : "", r, j, *a, *a + 15,
              mem.size(), tcgen05::DescribeDescriptor(*d)));
        }
      }
      addr[static_cast<size_t>(r) * chunks + j] = *a;
    }
  }
  // Gather (and decompress) each chunk, then write.
  std::vector<uint32_t> writes;  // Staged so that a Decompress error writes nothing.
  writes.reserve(static_cast<size_t>(ctas) * rows * chunks * 4);
  for (int cta = 0; cta < ctas; ++cta) {
    const absl::Span<const uint8_t> mem =
        (cta == 1 && !peer_smem.empty()) ? peer_smem : smem;
    for (int r = 0; r < rows; ++r) {
      for (int j = 0; j < chunks; ++j) {
        uint8_t chunk[16];
        std::memcpy(chunk, mem.data() + addr[static_cast<size_t>(r) * chunks + j], 16);
        if (inst.src_fmt != tcgen05::SrcFmt::kNone) {
          uint8_t out[16];
          const Layout layout = inst.src_fmt == tcgen05::SrcFmt::kB4x16P64
                                    ? Layout::kB4x16P64
                                    : Layout::kB6x16P32;
          if (absl::Status s = Decompress(layout, absl::MakeConstSpan(chunk, 16),
                                          absl::MakeSpan(out, 16), fp6);
              !s.ok()) {
            return s;
          }
          std::memcpy(chunk, out, 16);
        }
        for (int c = 0; c < 4; ++c) {
          // Byte k of the chunk is byte k%4 (little-endian) of column k/4.
          writes.push_back(uint32_t{chunk[4 * c]} | uint32_t{chunk[4 * c + 1]} << 8 |
                           uint32_t{chunk[4 * c + 2]} << 16 |
                           uint32_t{chunk[4 * c + 3]} << 24);
        }
      }
    }
  }
  size_t w = 0;
  for (int cta = 0; cta < ctas; ++cta) {
    for (int r = 0; r < rows; ++r) {
      const std::vector<int> lanes = tcgen05::CpDestLanes(inst.shape, inst.multicast, r);
      for (int j = 0; j < chunks; ++j) {
        for (int c = 0; c < 4; ++c, ++w) {
          for (int lane : lanes) {
            cells_[Index(cta, static_cast<int>(lane0) + lane,
                         static_cast<int>(col0) + 4 * j + c)] = writes[w];
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Tmem::Shift(const tcgen05::Instruction& inst, uint32_t taddr) {
  absl::StatusOr<int> issued = CheckIssue(inst, tcgen05::Op::kShift, "Shift", taddr);
  if (!issued.ok()) return issued.status();
  const int ctas = *issued;
  const uint32_t lane0 = tcgen05::TaddrLane(taddr);
  if (lane0 % 32 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "taddr 0x%08x: tcgen05.shift needs a lane that is a multiple of 32 (a "
        "warp's lane block), got lane %u",
        taddr, lane0));
  }
  if (absl::Status s = CheckColumns(taddr, 8, "tcgen05.shift (.31x256b)"); !s.ok()) {
    return s;
  }
  const int col0 = static_cast<int>(tcgen05::TaddrColumn(taddr));
  for (int cta = 0; cta < ctas; ++cta) {
    for (int r = 30; r >= 0; --r) {  // Top-down so each lane is read before written.
      for (int c = 0; c < 8; ++c) {
        cells_[Index(cta, static_cast<int>(lane0) + r + 1, col0 + c)] =
            cells_[Index(cta, static_cast<int>(lane0) + r, col0 + c)];
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Tmem::CheckLdSt(const tcgen05::Instruction& inst, int warp,
                             uint32_t taddr, tcgen05::Op expected) const {
  if (inst.op != expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "expected a tcgen05.%s instruction, got %s", tcgen05::OpName(expected),
        Spelling(inst)));
  }
  if (absl::Status s = tcgen05::Validate(inst); !s.ok()) return s;
  if (warp < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("warp: expected a warp id >= 0, got %d", warp));
  }
  if (absl::Status s = CheckTaddr(taddr); !s.ok()) return s;
  absl::StatusOr<int> cols = tcgen05::NumColumns(inst);
  if (!cols.ok()) return cols.status();
  if (absl::Status s = CheckColumns(taddr, *cols, Spelling(inst)); !s.ok()) return s;
  // [PTX] 9.7.16.2.2 "Tensor Memory access restrictions": warp w of a
  // warpgroup accesses lanes 32*(w%4) .. 32*(w%4)+31.
  const uint32_t lo = 32u * static_cast<uint32_t>(warp % 4);
  const uint32_t lane0 = tcgen05::TaddrLane(taddr);
  const uint32_t last = lane0 + static_cast<uint32_t>(tcgen05::NumLanes(inst)) - 1;
  if (lane0 < lo || last > lo + 31) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "taddr 0x%08x: warp %d may access lanes %u..%u only (warp %% 4 = %d), "
        "but %s touches lanes %u..%u",
        taddr, warp, lo, lo + 31, warp % 4, Spelling(inst), lane0, last));
  }
  return absl::OkStatus();
}

absl::StatusOr<WarpRegisters> Tmem::Ld(const tcgen05::Instruction& inst, int warp,
                                       uint32_t taddr) const {
  if (absl::Status s = CheckLdSt(inst, warp, taddr, tcgen05::Op::kLd); !s.ok()) {
    return s;
  }
  const int lane0 = static_cast<int>(tcgen05::TaddrLane(taddr));
  const int col0 = static_cast<int>(tcgen05::TaddrColumn(taddr));
  const int n = tcgen05::NumRegisters(inst);
  WarpRegisters regs(32, std::vector<uint32_t>(static_cast<size_t>(n)));
  for (int t = 0; t < 32; ++t) {
    for (int j = 0; j < n; ++j) {
      const tcgen05::FragmentCell f = tcgen05::Fragment(inst, t, j);
      const uint32_t lo = At(lane0 + f.lane, col0 + f.column);
      regs[t][j] = f.column_hi < 0
                       ? lo
                       : (lo & 0xFFFFu) | (At(lane0 + f.lane, col0 + f.column_hi) << 16);
    }
  }
  return regs;
}

absl::Status Tmem::St(const tcgen05::Instruction& inst, int warp, uint32_t taddr,
                      const WarpRegisters& regs) {
  if (absl::Status s = CheckLdSt(inst, warp, taddr, tcgen05::Op::kSt); !s.ok()) {
    return s;
  }
  const int n = tcgen05::NumRegisters(inst);
  if (regs.size() != 32) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "regs: expected 32 threads, got %u", regs.size()));
  }
  for (int t = 0; t < 32; ++t) {
    if (regs[t].size() != static_cast<size_t>(n)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "regs[%d]: %s needs %d registers per thread, got %u", t, Spelling(inst),
          n, regs[t].size()));
    }
  }
  const int lane0 = static_cast<int>(tcgen05::TaddrLane(taddr));
  const int col0 = static_cast<int>(tcgen05::TaddrColumn(taddr));
  for (int t = 0; t < 32; ++t) {
    for (int j = 0; j < n; ++j) {
      const tcgen05::FragmentCell f = tcgen05::Fragment(inst, t, j);
      const uint32_t v = regs[t][j];
      if (f.column_hi < 0) {
        cells_[Index(0, lane0 + f.lane, col0 + f.column)] = v;
      } else {
        cells_[Index(0, lane0 + f.lane, col0 + f.column)] = v & 0xFFFFu;
        cells_[Index(0, lane0 + f.lane, col0 + f.column_hi)] = v >> 16;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace mxpack
