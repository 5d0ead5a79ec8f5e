// PTX spelling checker shared by every instruction family mxpack models:
// `CheckPtx` dispatches on the instruction prefix ("multimem.", "tcgen05.")
// to the family's checker through a small registry. Legality follows the
// installed ptxas (CUDA 13); docs/ptx_check.md lists the rules, every place
// where ptxas and the PTX ISA text differ, and the CLI's exit codes.
//
// The multimem and tcgen05 families are built in. Adding a family = adding
// one file that calls RegisterPtxFamily from a static initializer
// (MXPACK_REGISTER_PTX_FAMILY). Note: mxpack is a static library, and the
// linker drops archive members nobody references, so put the registering
// file where it is always linked (e.g. tools/ptx_<family>.cc for the CLI,
// which links every tools/*.cc) or call RegisterPtxFamily explicitly.
#ifndef MXPACK_PTX_CHECK_H_
#define MXPACK_PTX_CHECK_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace mxpack {

struct PtxCheckResult {
  bool ok = false;  // Legal (and, when a target was given, legal there).
  // Neither legal nor illegal: the input is outside what the checker models
  // (unknown instruction family or instruction, unknown target). `ok` is
  // false. `mxpack ptx-check` exits 2 for these, 1 for illegal spellings.
  bool usage_error = false;
  std::string
      text;  // Decoded instruction + requirements, or the violated rule.
};

// A family checker: `spelling` is the trimmed line from the opcode on (no
// leading predicate; operands and ';' as given), `target` empty when none
// was given. Must never crash on any input.
using PtxFamilyChecker = PtxCheckResult (*)(absl::string_view spelling,
                                            absl::string_view target);

struct PtxFamily {
  const char* prefix;  // Matched case-sensitively, e.g. "multimem.".
  const char* name;    // For listings, e.g. "multimem (PTX 9.7.9.14)".
  PtxFamilyChecker check;
};

// Registers a family; a later registration with the same prefix replaces it.
bool RegisterPtxFamily(const PtxFamily& family);
// Every registered family, longest prefix first.
std::vector<PtxFamily> PtxFamilies();

// Checks one instruction. Accepts a bare spelling or a full line with
// operands, an optional "@p" / "@!p" predicate and a trailing ';'. Operands,
// when present, are checked too. An unknown prefix gives usage_error and a
// text listing the known families. Legality follows the installed ptxas
// (CUDA 13) where it and the PTX ISA text differ; docs/ptx_check.md lists
// the rules and every difference.
PtxCheckResult CheckPtx(absl::string_view spelling,
                        absl::string_view target = {});

// Strips a leading predicate, trailing ';', and operands: returns only the
// dotted opcode ("multimem.st.v4.f32").
absl::string_view PtxOpcodeOf(absl::string_view line);

// The operand text of a line: what follows the opcode, without a trailing
// ';' or a "//" comment, trimmed ("{%r1, %r2}, [%rd1]"). `junk` (when
// non-null) receives anything after the ';' other than a comment.
absl::string_view PtxOperandsOf(absl::string_view line,
                                absl::string_view* junk = nullptr);

}  // namespace mxpack

#define MXPACK_PTX_CONCAT_INNER_(a, b) a##b
#define MXPACK_PTX_CONCAT_(a, b) MXPACK_PTX_CONCAT_INNER_(a, b)
// Usage at namespace scope: MXPACK_REGISTER_PTX_FAMILY({"tcgen05.", "...",
// &F});
#define MXPACK_REGISTER_PTX_FAMILY(...)                  \
  [[maybe_unused]] static const bool MXPACK_PTX_CONCAT_( \
      mxpack_ptx_family_registered_, __LINE__) =         \
      ::mxpack::RegisterPtxFamily(::mxpack::PtxFamily __VA_ARGS__)

#endif  // MXPACK_PTX_CHECK_H_
