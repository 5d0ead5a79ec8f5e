// `mxpack ptx-check`: judges PTX spellings through the CheckPtx family
// registry (mxpack/ptx_check.h), one per argument or one per line of a file,
// and exits 0 (all legal), 1 (some illegal) or 2 (usage error).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "mxpack/ptx_check.h"
#include "tools/cli.h"

ABSL_FLAG(std::string, target, "",
          "Check legality on this target (sm_90, sm_100a, sm_100f, sm_103a, "
          "sm_110a, sm_120a, ...); empty: report requirements only");
ABSL_FLAG(std::string, file, "",
          "Read spellings from PATH, one per line ('-': standard input); "
          "blank lines and lines starting with '#' or '//' are skipped");

namespace mxpack::cli {
namespace {

// The first line of a result text (the verdict line of a family's report
// is its last line when legal, the rule when illegal).
std::string OneLine(const PtxCheckResult& r) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(r.text, '\n', absl::SkipWhitespace());
  if (lines.empty()) return r.ok ? "legal" : "illegal";
  if (r.ok) {
    // "legal on sm_100a with PTX ISA 8.6 or later" when a target was given.
    std::string out(absl::StripAsciiWhitespace(lines.back()));
    if (!absl::StartsWith(out, "legal")) out = "legal";
    for (absl::string_view l : lines) {
      l = absl::StripAsciiWhitespace(l);
      if (absl::ConsumePrefix(&l, "note:")) {
        absl::StrAppend(&out, "; ", absl::StripAsciiWhitespace(l));
      }
    }
    return out;
  }
  // Illegal or not checked: the line that says so.
  for (absl::string_view l : lines) {
    l = absl::StripAsciiWhitespace(l);
    if (absl::StartsWith(l, "illegal") || absl::StartsWith(l, "not checked")) {
      return std::string(l);
    }
  }
  return absl::StrCat(r.usage_error ? "not checked: " : "illegal: ",
                      absl::StripAsciiWhitespace(lines.front()));
}

int RunPtxCheck(const std::vector<std::string>& args) {
  const std::string file = absl::GetFlag(FLAGS_file);
  std::vector<std::string> spellings = args;
  if (!file.empty()) {
    absl::StatusOr<std::string> text = ReadInput(file);
    if (!text.ok()) return Fail("ptx-check", text.status());
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (line.empty() || absl::StartsWith(line, "#") ||
          absl::StartsWith(line, "//")) {
        continue;
      }
      spellings.emplace_back(line);
    }
  }
  if (spellings.empty()) {
    return Fail("ptx-check", absl::InvalidArgumentError(
                                 "expected at least one instruction spelling "
                                 "(an argument, quoted when it has operands, "
                                 "or --file=PATH)"));
  }
  const std::string target = absl::GetFlag(FLAGS_target);
  bool any_illegal = false, any_usage = false;
  if (spellings.size() == 1) {
    // One spelling: the full report.
    const PtxCheckResult r = CheckPtx(spellings[0], target);
    FILE* f = r.ok ? stdout : stderr;
    std::fputs(r.text.c_str(), f);
    if (r.text.empty() || r.text.back() != '\n') std::fputc('\n', f);
    any_usage = r.usage_error;
    any_illegal = !r.ok && !r.usage_error;
  } else {
    // Several: one verdict line each, "SPELLING\tVERDICT", in input order.
    for (const std::string& s : spellings) {
      const PtxCheckResult r = CheckPtx(s, target);
      any_usage |= r.usage_error;
      any_illegal |= !r.ok && !r.usage_error;
      std::printf("%s\t%s\n", s.c_str(), OneLine(r).c_str());
    }
  }
  if (any_usage) return 2;
  return any_illegal ? 1 : 0;
}

const bool kPtxCheck = RegisterCommand(
    {"ptx-check",
     "judge PTX spellings as ptxas does; report target/ISA needs",
     "ptx-check [--target=sm_XX[a|f]] [--file=PATH|-] [SPELLING...]\n\n"
     "Each SPELLING (one per argument; quote full lines) or each line of\n"
     "--file is a bare opcode (multimem.ld_reduce.add.acc::f16.v4.e4m3) or a\n"
     "full instruction line with operands and ';' (operands are then checked\n"
     "too). One spelling prints the decoded instruction, its minimum PTX ISA\n"
     "version and targets, or the violated rule; several print one\n"
     "'SPELLING<TAB>VERDICT' line each. Legality follows ptxas (CUDA 13);\n"
     "where the PTX ISA text differs the verdict says so (docs/ptx_check.md).\n"
     "Exit status: 0 all legal (on --target when given), 1 some illegal,\n"
     "2 usage error (no spelling, unknown target, unmodelled instruction).\n"
     "Families: multimem.{ld_reduce,st,red}, tcgen05.{cp,shift,ld,st}.",
     {"target", "file"},
     RunPtxCheck});

}  // namespace
}  // namespace mxpack::cli
