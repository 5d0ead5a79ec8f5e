// `mxpack ptx-check`: decodes a PTX spelling through the CheckPtx family
// registry (mxpack/ptx_check.h) and reports its target / ISA requirements.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "mxpack/ptx_check.h"
#include "tools/cli.h"

ABSL_FLAG(std::string, target, "",
          "Check legality on this target (sm_90, sm_100a, sm_100f, sm_103a, "
          "sm_110a, sm_120a, ...); empty: report requirements only");

namespace mxpack::cli {
namespace {

int RunPtxCheck(const std::vector<std::string>& args) {
  if (args.empty()) {
    return Fail("ptx-check", absl::InvalidArgumentError(
                                 "expected one instruction spelling (quote full lines)"));
  }
  // An unquoted full line arrives split into several arguments.
  const std::string line = absl::StrJoin(args, " ");
  const PtxCheckResult r = CheckPtx(line, absl::GetFlag(FLAGS_target));
  // Families differ in whether their text ends with a newline; the printer
  // owns the line ending.
  FILE* f = r.ok ? stdout : stderr;
  std::fputs(r.text.c_str(), f);
  if (r.text.empty() || r.text.back() != '\n') std::fputc('\n', f);
  return r.ok ? 0 : 1;
}

const bool kPtxCheck = RegisterCommand(
    {"ptx-check", "decode a PTX spelling, report legality and target/ISA needs",
     "ptx-check [--target=sm_XX[a|f]] \"SPELLING\"\n\n"
     "SPELLING is a bare opcode (multimem.ld_reduce.add.acc::f16.v4.e4m3) or a\n"
     "full instruction line with operands and ';'. Prints the decoded\n"
     "instruction and its minimum PTX ISA version and targets, or the violated\n"
     "rule. Exit status 0 only when legal (on --target when given), 1 when\n"
     "illegal, 2 on usage errors. Families: multimem.* (more register through\n"
     "mxpack/ptx_check.h).",
     {"target"},
     RunPtxCheck});

}  // namespace
}  // namespace mxpack::cli
