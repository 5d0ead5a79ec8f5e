// Scripts of tcgen05 steps for the tensor-memory model (include/mxpack/tmem.h),
// as `mxpack tmem-sim` reads them: the parser and a canonical writer.
//
// Script format (one step per line; '#' starts a comment; blank lines are
// ignored; TMEM addresses are LANE:COLUMN or a raw 32-bit 0x... taddr):
//
//   peer                         model the peer CTA (for .cta_group::2)
//   fp6 low6|mid6                6-bit container placement for
//                                .b6x16_p32 decompression (default low6)
//   fill VALUE                   set every TMEM cell to VALUE
//   cp SPELLING taddr=A (desc=0xDESC | start=N lbo=N sbo=N [swizzle=S])
//                                tcgen05.cp from the shared-memory image; S
//                                is none, 32b, 64b, 128b or 128b_base32b
//   shift SPELLING taddr=A       tcgen05.shift
//   st SPELLING warp=W taddr=A [split=N]
//                                tcgen05.st of the pattern register j of
//                                thread t = (t << 16) | j
//   ld SPELLING warp=W taddr=A [split=N] [thread=T]
//                                tcgen05.ld; prints every thread's registers
//                                (or only thread T)
//   dump lanes=A:B cols=C:D [cta=0|1]
//                                prints lanes A..B-1 x columns C..D-1
//
// SPELLING is the PTX opcode without operands, e.g.
// tcgen05.cp.cta_group::1.128x256b or tcgen05.ld.sync.aligned.32x32b.x8.b32;
// split=N is the immHalfSplitoff operand of .16x32bx2. `peer` and `fill`
// come before the first cp/shift/st/ld/dump.
//
// Example:
//   absl::StatusOr<TmemScript> s = ParseTmemScript(text);
//   if (!s.ok()) return s.status();  // "script line 3 'ld ...': warp: ..."
//   Tmem tmem(s->peer, s->fill);
//   for (const TmemScriptStep& step : s->steps) { ... }
#ifndef MXPACK_TMEM_SCRIPT_H_
#define MXPACK_TMEM_SCRIPT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "mxpack/pack.h"
#include "mxpack/tcgen05.h"

namespace mxpack {

// One step of a script after `peer` and `fill`. Fields that do not apply to
// `verb` keep their defaults.
struct TmemScriptStep {
  enum class Verb : uint8_t { kFp6, kCp, kShift, kSt, kLd, kDump };
  Verb verb = Verb::kFp6;
  int line = 0;      // 1-based line number in the script.
  std::string text;  // The line without its comment and outer blanks.

  Fp6Container fp6 = Fp6Container::kLow6;  // fp6.
  // cp, shift, st, ld: the instruction (with split= as its
  // half_split_offset) and the TMEM address.
  tcgen05::Instruction inst;
  uint32_t taddr = 0;
  uint64_t desc = 0;          // cp: the 64-bit shared-memory descriptor.
  int warp = 0;               // st, ld.
  std::optional<int> thread;  // ld: print only this thread (0..31).
  // dump: lanes [lane_begin, lane_end) x columns [column_begin, column_end)
  // of CTA `cta` (0 <= begin < end; the model checks the upper bounds).
  int lane_begin = 0, lane_end = 0, column_begin = 0, column_end = 0, cta = 0;
};

struct TmemScript {
  bool peer = false;  // Model the peer CTA.
  uint32_t fill = 0;  // Initial value of every TMEM cell.
  std::vector<TmemScriptStep> steps;
};

// Parses a script. Errors are InvalidArgument (or FailedPrecondition for a
// `peer`/`fill` after the first step) and read
// "script line N 'LINE': <what is wrong>"; numbers are decimal or 0x hex,
// and every step checks its keys, its spelling (tcgen05::Parse, matching the
// verb) and its values. Range checks that depend on the model state (lanes,
// columns, warps, shared-memory bounds) are left to Tmem.
absl::StatusOr<TmemScript> ParseTmemScript(absl::string_view script);

// The script in canonical form (one step per line, hex addresses, raw
// descriptors, canonical spellings): ParseTmemScript(TmemScriptText(s))
// gives back `s` except the line numbers and texts.
std::string TmemScriptText(const TmemScript& script);

}  // namespace mxpack

#endif  // MXPACK_TMEM_SCRIPT_H_
