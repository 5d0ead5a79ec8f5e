// tcgen05 data-movement instructions on the host (docs/semantics.md section 3): the
// PTX spellings of tcgen05.cp / .shift / .ld / .st parsed and validated
// (shapes, multicast, decompression formats, .num, pack, targets), the
// shared-memory matrix descriptor and its address generation, and the
// register-fragment tables of tcgen05.ld / tcgen05.st.
//
// Sources (read, not copied; every table below names the one it follows):
//  [PTX]     PTX ISA 9.x, 9.7.16.2.3 "Data Movement Shape" (+ matrix fragment
//            figures 183-187, Table 49 ".num"), 9.7.16.4 "Shared memory
//            descriptor", 9.7.16.8.3 tcgen05.ld / tcgen05.st, 9.7.16.9
//            tcgen05.cp (with decompression) and tcgen05.shift.
//  [CUTLASS] include/cute/atom/copy_traits_sm100.hpp (Copy_Traits of
//            SM100_TMEM_LOAD_* / _STORE_*: ValID / DstLayout per shape) and
//            include/cute/arch/copy_sm100.hpp (SM100_UTCCP_* spellings).
//  [CCCL]    libcudacxx cuda::ptx tcgen05_{cp,ld,st,shift} generated wrappers
//            (register counts per .num, target lists).
// Mappings that could not be confirmed from text are in
// docs/tmem_open_points.md.
#ifndef MXPACK_TCGEN05_H_
#define MXPACK_TCGEN05_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace mxpack {
namespace tcgen05 {

// Tensor memory geometry per CTA [PTX 9.7.16.2.1]: 128 lanes x 512 columns
// of 32-bit cells. A TMEM address holds the lane in bits [31:16] and the
// column in bits [15:0].
inline constexpr int kLanes = 128;
inline constexpr int kColumns = 512;
inline constexpr uint32_t MakeTaddr(uint32_t lane, uint32_t column) {
  return (lane << 16) | (column & 0xFFFFu);
}
inline constexpr uint32_t TaddrLane(uint32_t taddr) { return taddr >> 16; }
inline constexpr uint32_t TaddrColumn(uint32_t taddr) { return taddr & 0xFFFFu; }

enum class Op : uint8_t { kCp, kShift, kLd, kSt };

enum class CtaGroup : uint8_t { k1 = 1, k2 = 2 };

enum class Shape : uint8_t {
  // tcgen05.cp
  k128x256b,
  k128x128b,
  k4x256b,
  k64x128b,
  k32x128b,
  // tcgen05.ld / tcgen05.st
  k32x32b,
  k16x64b,
  k16x128b,
  k16x256b,
  k16x32bx2,
  // tcgen05.shift (implicit, never spelled)
  k31x256b,
};

// tcgen05.cp multicast qualifier.
enum class Multicast : uint8_t {
  kNone,
  kWarpx2_02_13,  // .warpx2::02_13
  kWarpx2_01_23,  // .warpx2::01_23
  kWarpx4,        // .warpx4
};

// tcgen05.cp decompression source format; the destination format is always
// .b8x16 and is spelled only together with one of these.
enum class SrcFmt : uint8_t { kNone, kB6x16P32, kB4x16P64 };

// One decoded instruction. Fields that do not apply to `op` keep their
// defaults (Validate() rejects anything else).
struct Instruction {
  Op op = Op::kCp;
  CtaGroup cta_group = CtaGroup::k1;  // cp, shift.
  Shape shape = Shape::k128x256b;
  Multicast multicast = Multicast::kNone;  // cp.
  SrcFmt src_fmt = SrcFmt::kNone;          // cp.
  int num = 0;                             // ld/st: .x1 .. .x128.
  bool pack16 = false;                     // ld .pack::16b / st .unpack::16b.
  // ld/st .16x32bx2: the immHalfSplitoff operand (column offset of the
  // second half-warp). Unknown when parsed from an opcode without operands.
  std::optional<int> half_split_offset;
  // shift only: true when spelled ".down.cta_group::N" (PTX shows both
  // orders); Spelling() reproduces the order it was parsed in.
  bool down_first = false;

  bool operator==(const Instruction& o) const {
    return op == o.op && cta_group == o.cta_group && shape == o.shape &&
           multicast == o.multicast && src_fmt == o.src_fmt && num == o.num &&
           pack16 == o.pack16 && half_split_offset == o.half_split_offset &&
           down_first == o.down_first;
  }
};

absl::string_view OpName(Op op);              // "cp", "shift", "ld", "st"
absl::string_view ShapeName(Shape s);         // "128x256b", ...
absl::string_view MulticastName(Multicast m);  // "", "warpx2::02_13", ...
absl::string_view SrcFmtName(SrcFmt f);        // "", "b6x16_p32", ...

// Parses a PTX spelling, e.g.
//   tcgen05.cp.cta_group::1.128x256b [taddr], sdesc;
//   tcgen05.cp.cta_group::2.64x128b.warpx2::01_23.b8x16.b4x16_p64
//   tcgen05.shift.cta_group::1.down [taddr];   (or .down.cta_group::1)
//   tcgen05.ld.sync.aligned.16x32bx2.x4.pack::16b.b32 {r0,r1,r2,r3}, [ta], 8;
//   tcgen05.st.sync.aligned.32x32b.x2.unpack::16b.b32 [ta], {r0, r1};
// Operands are optional; when present their count is checked (register
// vector length, immHalfSplitoff present exactly for .16x32bx2, whose value
// is recorded when it is a literal). Every rule of Validate() applies; the
// error names the violated rule, the expected and the actual spelling.
absl::StatusOr<Instruction> Parse(absl::string_view spelling);

// The rules (each error message starts with the rule it names):
//  - cp shapes: 128x256b, 128x128b, 4x256b, 64x128b, 32x128b; ld/st shapes:
//    32x32b, 16x64b, 16x128b, 16x256b, 16x32bx2; shift: implicit 31x256b.
//  - multicast: .64x128b needs .warpx2::02_13 or .warpx2::01_23, .32x128b
//    needs .warpx4, other cp shapes take none.
//  - decompression: .b8x16 and a source format only as a pair.
//  - cta_group: ::1 or ::2 (cp, shift); ld/st take none.
//  - .num per shape (Table 49 [PTX]; [CCCL] register counts): 32x32b,
//    16x64b, 16x32bx2: x1..x128; 16x128b: x1..x64; 16x256b: x1..x32; powers
//    of two only.
//  - .pack::16b only on ld, .unpack::16b only on st.
//  - immHalfSplitoff only for 16x32bx2, and (if known) 0..511.
absl::Status Validate(const Instruction& inst);

// Canonical PTX opcode spelling (no operands), e.g.
// "tcgen05.ld.sync.aligned.16x64b.x2.pack::16b.b32". Parse(Spelling(i))
// gives back i, except half_split_offset (an operand, not in the opcode).
std::string Spelling(const Instruction& inst);

// Multi-line human-readable description: the canonical spelling, the data
// moved (lanes x bits, TMEM columns), registers per thread, lane pattern.
std::string Describe(const Instruction& inst);

// ---------------------------------------------------------------------------
// Targets [PTX "PTX ISA notes" / "Target ISA notes" of each instruction].

// A compilation target: "sm_100a", "sm_103f", ... optionally with the PTX ISA
// version as "@ptx8.8" (or "@8.8"): "sm_101a@ptx8.7".
struct Target {
  int sm = 0;            // 100, 101, 103, 110, 120, ...
  char suffix = '\0';    // '\0', 'a' (arch-specific) or 'f' (family).
  int ptx_version = 0;   // 10 * major + minor; 0 = not given.
};
absl::StatusOr<Target> ParseTarget(absl::string_view spelling);
std::string TargetName(const Target& t);

// Checks the target rules for inst (minimum PTX ISA version 8.6 for every
// tcgen05 instruction):
//  - cp, ld, st: sm_100a, sm_101a (renamed sm_110a from PTX ISA 9.0); the
//    family targets sm_100f and sm_110f "or higher in the same family" from
//    PTX ISA 8.8 (family 100 = sm_100, sm_103; family 110 = sm_110; sm_101f
//    before 9.0). An 'a' target of a family member includes its family.
//  - shift: sm_100a, sm_101a, sm_103a, sm_110a only (no family targets).
//  - Each SM name exists only within its PTX versions: sm_100a/sm_101a from
//    8.6, sm_103a and the 'f' targets from 8.8, sm_110a/sm_110f from 9.0 and
//    sm_101* only before 9.0.
// Without a PTX version the target is legal if some PTX version allows it
// (the message of an OK check is available from CheckTcgen05()).
absl::Status CheckTarget(const Instruction& inst, const Target& target);
// The PTX ISA version range ("8.6", "8.8 .. 8.9") in which inst is legal on
// target; NotFound if none.
absl::StatusOr<std::string> LegalPtxVersions(const Instruction& inst,
                                             const Target& target);

// ---------------------------------------------------------------------------
// Geometry.

// Lanes one instruction touches per warp (ld/st: 32 or 16) or in total (cp:
// destination lanes including multicast replicas; shift: 32).
int NumLanes(const Instruction& inst);
// Columns touched, counted from the taddr column. ld/st: shape bits * num /
// 32, doubled with (un)pack::16b; 16x32bx2 adds half_split_offset (which
// must be known). cp: 8 for 256b shapes, 4 for 128b shapes. shift: 8.
absl::StatusOr<int> NumColumns(const Instruction& inst);
// 32-bit registers per thread of an ld/st (Table 49 [PTX], the same with
// and without (un)pack::16b [CCCL]).
int NumRegisters(const Instruction& inst);

// tcgen05.cp source geometry: rows of the shape and 16-byte chunks per row
// (2 for 256b, 1 for 128b). With decompression every 16-byte chunk becomes
// 16 bytes (4 columns) of 8-bit containers [PTX 9.7.16.9.1].
int CpRows(Shape s);
int CpChunksPerRow(Shape s);
// Destination lane offsets (relative to the taddr lane) of source row r
// (docs/semantics.md section 3 table; [PTX] tcgen05.cp multicast figures).
std::vector<int> CpDestLanes(Shape s, Multicast m, int row);

// Where register j of thread t of an ld/st lives, relative to taddr.
// Without (un)pack::16b the 32-bit register is the whole cell (lane,
// column). With it, bits [15:0] are the low 16 bits of cell (lane, column)
// and bits [31:16] the low 16 bits of (lane, column_hi = column + 1)
// ([CUTLASS] *_16b ValID: 16 bits at stride 32).
struct FragmentCell {
  int lane = 0;
  int column = 0;
  int column_hi = -1;  // -1 without (un)pack::16b.
};
// Preconditions: Validate(inst).ok(), 0 <= t < 32, 0 <= j <
// NumRegisters(inst), half_split_offset known for 16x32bx2.
FragmentCell Fragment(const Instruction& inst, int t, int j);

// ---------------------------------------------------------------------------
// Shared-memory matrix descriptor [PTX 9.7.16.4.1], 64 bits:
//   [13:0] start address >> 4   [15:14] 0
//   [29:16] leading byte offset >> 4   [31:30] 0
//   [45:32] stride byte offset >> 4
//   [48:46] fixed 0b001   [51:49] base offset   [52] LBO mode
//   [60:53] 0   [63:61] swizzle mode
enum class Swizzle : uint8_t {
  kNone = 0,
  k128BBase32B = 1,  // 128-byte swizzle with 32-byte atomicity.
  k128B = 2,
  k64B = 4,
  k32B = 6,
};
absl::string_view SwizzleName(Swizzle s);  // none, 128b_base32b, 128b, 64b, 32b
absl::StatusOr<Swizzle> ParseSwizzle(absl::string_view name);

struct SmemDescriptor {
  uint32_t start_address = 0;        // Bytes; multiple of 16, < 2^18.
  uint32_t leading_byte_offset = 0;  // Bytes; multiple of 16, < 2^18.
  uint32_t stride_byte_offset = 0;   // Bytes; multiple of 16, < 2^18.
  uint32_t base_offset = 0;          // 3 bits.
  bool lbo_absolute = false;         // Bit 52 (leading dimension stride mode).
  Swizzle swizzle = Swizzle::kNone;

  bool operator==(const SmemDescriptor& o) const {
    return start_address == o.start_address &&
           leading_byte_offset == o.leading_byte_offset &&
           stride_byte_offset == o.stride_byte_offset &&
           base_offset == o.base_offset && lbo_absolute == o.lbo_absolute &&
           swizzle == o.swizzle;
  }
};
absl::StatusOr<uint64_t> EncodeDescriptor(const SmemDescriptor& d);
// Rejects non-zero reserved bits, a fixed field other than 0b001 and
// undefined swizzle codes, naming the bits.
absl::StatusOr<SmemDescriptor> DecodeDescriptor(uint64_t bits);
std::string DescribeDescriptor(const SmemDescriptor& d);

// Shared-memory byte address of 16-byte chunk `chunk` of row `row` of a
// K-major tile (docs/semantics.md section 3):
//  - no swizzle: start + (row%8)*16 + (row/8)*SBO + chunk*LBO.
//  - swizzle of width W (32/64/128 bytes): the row pitch inside an 8-row
//    atom is W; chunk c < W/16 lies at c*16 in the row, further chunks at
//    (c / (W/16)) * LBO; then the 16-byte chunk index bits [6:4] of the
//    address are XORed with the row-in-atom bits [9:7] (Swizzle<3,4,3> for
//    128B, <2,4,3> for 64B, <1,4,3> for 32B; 128B_base32B XORs 32-byte
//    units: bits [6:5] with [8:7]), the CUTLASS/CuTe swizzle functors.
// Unimplemented for base_offset != 0 and lbo_absolute (open points).
absl::StatusOr<uint32_t> ChunkAddress(const SmemDescriptor& d, int row,
                                      int chunk);

}  // namespace tcgen05

// `mxpack ptx-check` hook: parses and validates a tcgen05 spelling and, if
// target is given (ParseTarget syntax), checks the target rules. Returns the
// printable decoded description (Describe() plus the legal PTX versions on
// the target); an error names the violated rule. Exit 0 only on OK.
absl::StatusOr<std::string> CheckTcgen05(
    absl::string_view spelling,
    std::optional<absl::string_view> target = std::nullopt);

// Registers CheckTcgen05 as the "tcgen05." family of mxpack::CheckPtx
// (include/mxpack/ptx_check.h). Idempotent; call it from code that is always
// linked (mxpack is a static library: an unreferenced registration object
// would be dropped by the linker). tools/cmd_tmem.cc calls it.
bool RegisterTcgen05PtxFamily();

}  // namespace mxpack

#endif  // MXPACK_TCGEN05_H_
