// Functional host model of Blackwell tensor memory (docs/semantics.md section 3):
// tcgen05.cp (with optional decompression), tcgen05.shift and the warp
// fragments of tcgen05.ld / tcgen05.st on a 128-lane x 512-column TMEM, with
// an optional peer CTA for .cta_group::2.
//
// Example: "after this tcgen05.cp from this shared-memory tile, then
// tcgen05.shift, what does tcgen05.ld.32x32b.x8 give thread 17?"
//
//   Tmem tmem;
//   auto cp = tcgen05::Parse("tcgen05.cp.cta_group::1.128x256b");
//   tmem.Cp(*cp, smem, desc, tcgen05::MakeTaddr(0, 0));
//   tmem.Shift(*tcgen05::Parse("tcgen05.shift.cta_group::1.down"), 0);
//   auto regs = tmem.Ld(*tcgen05::Parse("tcgen05.ld.sync.aligned.32x32b.x8.b32"),
//                       /*warp=*/0, 0);
//   // (*regs)[17] holds the 8 registers of thread 17.
#ifndef MXPACK_TMEM_H_
#define MXPACK_TMEM_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mxpack/pack.h"
#include "mxpack/tcgen05.h"

namespace mxpack {

// Registers of one warp: regs[t][j] is register j of thread t (32 threads).
using WarpRegisters = std::vector<std::vector<uint32_t>>;

class Tmem {
 public:
  // `with_peer`: also model the peer CTA's TMEM (index 1) for .cta_group::2.
  explicit Tmem(bool with_peer = false, uint32_t fill = 0);

  bool has_peer() const { return num_ctas_ == 2; }

  // Raw cell access; cta 0 is this CTA, 1 the peer. Errors name the
  // out-of-range argument.
  absl::StatusOr<uint32_t> Read(int lane, int column, int cta = 0) const;
  absl::Status Write(int lane, int column, uint32_t value, int cta = 0);
  // Unchecked access (preconditions: indices in range).
  uint32_t At(int lane, int column, int cta = 0) const {
    return cells_[Index(cta, lane, column)];
  }
  void Fill(uint32_t value);

  // tcgen05.cp: copies the tile described by `desc` (a 64-bit shared-memory
  // descriptor, see tcgen05::DecodeDescriptor) from `smem` (the CTA's shared
  // memory from address 0) to TMEM at `taddr`. Row r of the shape, chunk j
  // (16 bytes at tcgen05::ChunkAddress(desc, r, j)) lands at lanes
  // taddr.lane + CpDestLanes(r), columns taddr.column + 4j .. +3, byte k of
  // the chunk in byte k%4 (little-endian) of column 4j + k/4. With
  // decompression each chunk goes through mxpack::Decompress first
  // (`fp6` chooses the 6-bit container placement).
  // .cta_group::2 writes the peer CTA's TMEM too, from `peer_smem` if given
  // (each CTA reads its own shared memory) else from `smem`.
  // Checks (nothing is written on error): taddr lane/column in range, all
  // destination lanes < 128 and columns < 512, every chunk inside `smem`,
  // cta_group::2 only with a peer.
  absl::Status Cp(const tcgen05::Instruction& inst, absl::Span<const uint8_t> smem,
                  uint64_t desc, uint32_t taddr,
                  Fp6Container fp6 = Fp6Container::kLow6,
                  absl::Span<const uint8_t> peer_smem = {});

  // tcgen05.shift.down: within the 32-lane block starting at taddr.lane
  // (which must be a multiple of 32), lane r+1 takes lane r's 8 columns
  // starting at taddr.column, for r = 30..0; lane 0 of the block keeps its
  // data (docs/semantics.md section 3, open until checked on hardware).
  absl::Status Shift(const tcgen05::Instruction& inst, uint32_t taddr);

  // tcgen05.ld by warp `warp` (any warp id; it may access lanes
  // 32*(warp%4) .. +31 only). For .16x32bx2 inst.half_split_offset must be
  // set. Returns 32 threads x NumRegisters(inst) registers.
  absl::StatusOr<WarpRegisters> Ld(const tcgen05::Instruction& inst, int warp,
                                   uint32_t taddr) const;
  // tcgen05.st: the inverse of Ld; `regs` must be 32 x NumRegisters(inst).
  // With .unpack::16b each register half goes to the low 16 bits of its
  // column and the high 16 bits of the column are written as 0 (open point).
  absl::Status St(const tcgen05::Instruction& inst, int warp, uint32_t taddr,
                  const WarpRegisters& regs);

 private:
  size_t Index(int cta, int lane, int column) const {
    return (static_cast<size_t>(cta) * tcgen05::kLanes + lane) * tcgen05::kColumns +
           column;
  }
  // Checks shared by Cp and Shift: the op is `expected`, the instruction is
  // valid, a peer CTA exists for cta_group::2, taddr is in range. Returns the
  // number of CTAs written (1 or 2).
  absl::StatusOr<int> CheckIssue(const tcgen05::Instruction& inst,
                                 tcgen05::Op expected, absl::string_view who,
                                 uint32_t taddr) const;
  absl::Status CheckLdSt(const tcgen05::Instruction& inst, int warp,
                         uint32_t taddr, tcgen05::Op expected) const;

  int num_ctas_;
  std::vector<uint32_t> cells_;
};

}  // namespace mxpack

#endif  // MXPACK_TMEM_H_
