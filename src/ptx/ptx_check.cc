// Registry of PTX instruction families behind CheckPtx (see ptx_check.h).
#include "mxpack/ptx_check.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace mxpack {

PtxFamily MultimemPtxFamily();  // src/multimem/parse.cc
PtxFamily Tcgen05PtxFamily();   // src/ptx/ptx_check_tcgen05.cc

namespace {

struct Registry {
  std::mutex mu;
  std::vector<PtxFamily> families;
};

Registry& GetRegistry() {
  static Registry* r = [] {
    auto* reg = new Registry();
    // Built-in families (referenced here so the linker keeps them).
    reg->families.push_back(MultimemPtxFamily());
    reg->families.push_back(Tcgen05PtxFamily());
    return reg;
  }();
  return *r;
}

}  // namespace

bool RegisterPtxFamily(const PtxFamily& family) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (PtxFamily& f : r.families) {
    if (std::strcmp(f.prefix, family.prefix) == 0) {
      f = family;
      return true;
    }
  }
  r.families.push_back(family);
  return true;
}

std::vector<PtxFamily> PtxFamilies() {
  Registry& r = GetRegistry();
  std::vector<PtxFamily> out;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    out = r.families;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PtxFamily& a, const PtxFamily& b) {
                     return std::strlen(a.prefix) > std::strlen(b.prefix);
                   });
  return out;
}

absl::string_view PtxOpcodeOf(absl::string_view line) {
  absl::string_view s = absl::StripAsciiWhitespace(line);
  // Optional guard predicate: "@p" or "@!p" followed by whitespace.
  if (absl::StartsWith(s, "@")) {
    const size_t ws = s.find_first_of(" \t");
    s = ws == absl::string_view::npos
            ? absl::string_view()
            : absl::StripLeadingAsciiWhitespace(s.substr(ws));
  }
  // The opcode ends at the first whitespace, '{', '[' or ';'.
  const size_t end = s.find_first_of(" \t\r\n{[;,");
  if (end != absl::string_view::npos) s = s.substr(0, end);
  return s;
}

absl::string_view PtxOperandsOf(absl::string_view line,
                                absl::string_view* junk) {
  if (junk != nullptr) *junk = {};
  absl::string_view s = absl::StripAsciiWhitespace(line);
  const size_t comment = s.find("//");
  if (comment != absl::string_view::npos) {
    s = absl::StripTrailingAsciiWhitespace(s.substr(0, comment));
  }
  const absl::string_view opcode = PtxOpcodeOf(s);
  if (opcode.empty()) return {};
  s = s.substr(s.find(opcode) + opcode.size());
  const size_t semi = s.find(';');
  if (semi != absl::string_view::npos) {
    if (junk != nullptr) {
      *junk = absl::StripAsciiWhitespace(s.substr(semi + 1));
    }
    s = s.substr(0, semi);
  }
  return absl::StripAsciiWhitespace(s);
}

PtxCheckResult CheckPtx(absl::string_view spelling, absl::string_view target) {
  const absl::string_view opcode = PtxOpcodeOf(spelling);
  // The line from the opcode on: the predicate dropped, operands kept.
  absl::string_view line = absl::StripAsciiWhitespace(spelling);
  if (!opcode.empty()) line = line.substr(line.find(opcode));
  std::string known;
  for (const PtxFamily& f : PtxFamilies()) {
    if (absl::StartsWith(opcode, f.prefix)) return f.check(line, target);
    absl::StrAppend(&known, known.empty() ? "" : ", ", f.prefix, "*");
  }
  PtxCheckResult r;
  r.usage_error = true;
  r.text = absl::StrCat("not checked: '", opcode,
                        "': unknown instruction family; expected one of ",
                        known, "\n");
  return r;
}

}  // namespace mxpack
