// Parser and canonical writer of tensor-memory model scripts
// (include/mxpack/tmem_script.h).
#include <algorithm>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "mxpack/tmem_script.h"

namespace mxpack {
namespace {

absl::StatusOr<uint64_t> ParseNumber(absl::string_view key,
                                     absl::string_view v) {
  uint64_t x = 0;
  const bool ok = absl::StartsWithIgnoreCase(v, "0x")
                      ? absl::SimpleHexAtoi(v.substr(2), &x)
                      : absl::SimpleAtoi(v, &x);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected a decimal or 0x number, got '%s'", key, v));
  }
  return x;
}

absl::StatusOr<std::pair<int, int>> ParseRange(absl::string_view key,
                                               absl::string_view v) {
  std::vector<absl::string_view> p = absl::StrSplit(v, ':');
  int a = 0, b = 0;
  if (p.size() != 2 || !absl::SimpleAtoi(p[0], &a) ||
      !absl::SimpleAtoi(p[1], &b) || a < 0 || b <= a) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected FIRST:END with FIRST < END, got '%s'", key, v));
  }
  return std::make_pair(a, b);
}

absl::StatusOr<uint32_t> ParseTaddr(absl::string_view v) {
  if (v.find(':') != absl::string_view::npos) {
    std::vector<absl::string_view> p = absl::StrSplit(v, ':');
    uint32_t lane = 0, col = 0;
    if (p.size() != 2 || !absl::SimpleAtoi(p[0], &lane) ||
        !absl::SimpleAtoi(p[1], &col) || lane > 0xFFFF || col > 0xFFFF) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "taddr: expected LANE:COLUMN or 0xTADDR, got '%s'", v));
    }
    return tcgen05::MakeTaddr(lane, col);
  }
  absl::StatusOr<uint64_t> x = ParseNumber("taddr", v);
  if (!x.ok()) return x.status();
  if (*x > 0xFFFFFFFFu) {
    return absl::InvalidArgumentError(
        absl::StrFormat("taddr: %s exceeds 32 bits", v));
  }
  return static_cast<uint32_t>(*x);
}

// A line split into its verb, the spelling (cp/shift/ld/st) and KEY=VALUE
// arguments; a bare word after fp6 or fill is its "value".
struct Words {
  std::string verb;
  std::string spelling;
  std::map<std::string, std::string> args;
};

bool IsInstructionVerb(absl::string_view verb) {
  return verb == "cp" || verb == "shift" || verb == "ld" || verb == "st";
}

absl::StatusOr<Words> SplitLine(absl::string_view line) {
  // `line` is stripped and not empty, so there is at least one word.
  std::vector<absl::string_view> words =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  Words s;
  s.verb = std::string(words[0]);
  size_t i = 1;
  if (IsInstructionVerb(s.verb)) {
    if (words.size() < 2) {
      return absl::InvalidArgumentError(
          absl::StrFormat("'%s' needs a tcgen05 spelling", s.verb));
    }
    s.spelling = std::string(words[1]);
    i = 2;
  }
  for (; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    if (eq == absl::string_view::npos) {
      if (s.verb == "fp6" || s.verb == "fill") {
        s.args["value"] = std::string(words[i]);
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrFormat("expected KEY=VALUE, got '%s'", words[i]));
    }
    s.args[std::string(words[i].substr(0, eq))] =
        std::string(words[i].substr(eq + 1));
  }
  return s;
}

// Rejects keys a step does not understand.
absl::Status CheckKeys(const Words& s,
                       std::initializer_list<const char*> allowed) {
  for (const auto& [k, v] : s.args) {
    bool ok = false;
    for (const char* a : allowed) ok |= k == a;
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrFormat("'%s' does not take '%s='", s.verb, k));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Arg(const Words& s, const char* key) {
  auto it = s.args.find(key);
  if (it == s.args.end()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' needs %s=", s.verb, key));
  }
  return it->second;
}

absl::StatusOr<uint64_t> CpDescriptor(const Words& s) {
  if (auto it = s.args.find("desc"); it != s.args.end()) {
    if (s.args.count("start") || s.args.count("lbo") || s.args.count("sbo") ||
        s.args.count("swizzle")) {
      return absl::InvalidArgumentError(
          "cp: give either desc= or start=/lbo=/sbo=/swizzle=, not both");
    }
    return ParseNumber("desc", it->second);
  }
  tcgen05::SmemDescriptor d;
  for (auto [key, field] :
       {std::pair<const char*, uint32_t*>{"start", &d.start_address},
        {"lbo", &d.leading_byte_offset},
        {"sbo", &d.stride_byte_offset}}) {
    absl::StatusOr<std::string> v = Arg(s, key);
    if (!v.ok()) return v.status();
    absl::StatusOr<uint64_t> x = ParseNumber(key, *v);
    if (!x.ok()) return x.status();
    if (*x > 0xFFFFFFFFu)
      return absl::InvalidArgumentError(absl::StrFormat("%s: too large", key));
    *field = static_cast<uint32_t>(*x);
  }
  if (auto it = s.args.find("swizzle"); it != s.args.end()) {
    absl::StatusOr<tcgen05::Swizzle> sw = tcgen05::ParseSwizzle(it->second);
    if (!sw.ok()) return sw.status();
    d.swizzle = *sw;
  }
  return tcgen05::EncodeDescriptor(d);
}

// The instruction of a cp/shift/st/ld step: the spelling must name the verb's
// opcode; split=N sets the immHalfSplitoff operand.
absl::StatusOr<tcgen05::Instruction> StepInstruction(const Words& s) {
  absl::StatusOr<tcgen05::Instruction> inst = tcgen05::Parse(s.spelling);
  if (!inst.ok()) return inst.status();
  if (tcgen05::OpName(inst->op) != s.verb) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' step needs a tcgen05.%s spelling, got %s", s.verb,
                        s.verb, s.spelling));
  }
  if (auto it = s.args.find("split"); it != s.args.end()) {
    absl::StatusOr<uint64_t> x = ParseNumber("split", it->second);
    if (!x.ok()) return x.status();
    inst->half_split_offset =
        static_cast<int>(std::min<uint64_t>(*x, 1u << 20));
    if (absl::Status st = tcgen05::Validate(*inst); !st.ok()) return st;
  }
  return inst;
}

absl::Status ParseDump(const Words& s, TmemScriptStep& step) {
  absl::Status st = CheckKeys(s, {"lanes", "cols", "cta"});
  absl::StatusOr<std::string> lanes = Arg(s, "lanes");
  absl::StatusOr<std::string> cols = Arg(s, "cols");
  if (st.ok() && !lanes.ok()) st = lanes.status();
  if (st.ok() && !cols.ok()) st = cols.status();
  if (!st.ok()) return st;
  absl::StatusOr<std::pair<int, int>> lr = ParseRange("lanes", *lanes);
  absl::StatusOr<std::pair<int, int>> cr = ParseRange("cols", *cols);
  if (!lr.ok()) return lr.status();
  if (!cr.ok()) return cr.status();
  if (auto it = s.args.find("cta");
      it != s.args.end() && !absl::SimpleAtoi(it->second, &step.cta)) {
    return absl::InvalidArgumentError("cta: expected 0 or 1");
  }
  step.lane_begin = lr->first;
  step.lane_end = lr->second;
  step.column_begin = cr->first;
  step.column_end = cr->second;
  return absl::OkStatus();
}

// cp, shift, st, ld: the checks in the order the steps name them.
absl::Status ParseInstructionStep(const Words& s, TmemScriptStep& step) {
  absl::StatusOr<tcgen05::Instruction> inst = StepInstruction(s);
  if (!inst.ok()) return inst.status();
  step.inst = *inst;
  absl::StatusOr<std::string> taddr_text = Arg(s, "taddr");
  if (!taddr_text.ok()) return taddr_text.status();
  absl::StatusOr<uint32_t> taddr = ParseTaddr(*taddr_text);
  if (!taddr.ok()) return taddr.status();
  step.taddr = *taddr;
  if (s.verb == "cp") {
    step.verb = TmemScriptStep::Verb::kCp;
    if (absl::Status st =
            CheckKeys(s, {"taddr", "desc", "start", "lbo", "sbo", "swizzle"});
        !st.ok()) {
      return st;
    }
    absl::StatusOr<uint64_t> desc = CpDescriptor(s);
    if (!desc.ok()) return desc.status();
    step.desc = *desc;
    return absl::OkStatus();
  }
  if (s.verb == "shift") {
    step.verb = TmemScriptStep::Verb::kShift;
    return CheckKeys(s, {"taddr"});
  }
  step.verb =
      s.verb == "st" ? TmemScriptStep::Verb::kSt : TmemScriptStep::Verb::kLd;
  if (absl::Status st = CheckKeys(s, {"taddr", "warp", "split", "thread"});
      !st.ok())
    return st;
  absl::StatusOr<std::string> warp_text = Arg(s, "warp");
  if (!warp_text.ok()) return warp_text.status();
  if (!absl::SimpleAtoi(*warp_text, &step.warp)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("warp: expected an integer, got '%s'", *warp_text));
  }
  if (step.verb == TmemScriptStep::Verb::kSt) return absl::OkStatus();
  if (auto it = s.args.find("thread"); it != s.args.end()) {
    int t = 0;
    if (!absl::SimpleAtoi(it->second, &t) || t < 0 || t > 31) {
      return absl::InvalidArgumentError(
          absl::StrFormat("thread: expected 0..31, got '%s'", it->second));
    }
    step.thread = t;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TmemScript> ParseTmemScript(absl::string_view script) {
  TmemScript out;
  bool started = false;  // a cp/shift/st/ld/dump step was seen
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(script, '\n')) {
    ++line_no;
    absl::string_view line =
        absl::StripAsciiWhitespace(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    auto fail = [&](const absl::Status& st) {
      return absl::Status(
          st.code(), absl::StrFormat("script line %d '%s': %s", line_no, line,
                                     st.message()));
    };
    absl::StatusOr<Words> words = SplitLine(line);
    if (!words.ok()) return fail(words.status());
    const Words& s = *words;
    if (s.verb == "peer" || s.verb == "fill") {
      if (started) {
        return fail(
            absl::FailedPreconditionError("'peer' and 'fill' must come before "
                                          "the first cp/shift/st/ld/dump"));
      }
      if (s.verb == "peer") {
        if (absl::Status st = CheckKeys(s, {}); !st.ok()) return fail(st);
        out.peer = true;
      } else {
        absl::StatusOr<std::string> v = Arg(s, "value");
        if (!v.ok()) return fail(v.status());
        absl::StatusOr<uint64_t> x = ParseNumber("fill", *v);
        if (!x.ok()) return fail(x.status());
        out.fill = static_cast<uint32_t>(*x);  // the low 32 bits
      }
      continue;
    }
    TmemScriptStep step;
    step.line = line_no;
    step.text = std::string(line);
    if (s.verb == "fp6") {
      absl::StatusOr<std::string> v = Arg(s, "value");
      if (!v.ok()) return fail(v.status());
      absl::StatusOr<Fp6Container> c = ParseFp6Container(*v);
      if (!c.ok()) return fail(c.status());
      step.verb = TmemScriptStep::Verb::kFp6;
      step.fp6 = *c;
      out.steps.push_back(std::move(step));
      continue;
    }
    started = true;
    absl::Status st;
    if (s.verb == "dump") {
      step.verb = TmemScriptStep::Verb::kDump;
      st = ParseDump(s, step);
    } else if (IsInstructionVerb(s.verb)) {
      st = ParseInstructionStep(s, step);
    } else {
      st = absl::InvalidArgumentError(
          absl::StrFormat("unknown step '%s'; expected peer, fp6, fill, cp, "
                          "shift, st, ld or dump",
                          s.verb));
    }
    if (!st.ok()) return fail(st);
    out.steps.push_back(std::move(step));
  }
  return out;
}

std::string TmemScriptText(const TmemScript& script) {
  std::string out;
  if (script.peer) out += "peer\n";
  if (script.fill != 0)
    absl::StrAppendFormat(&out, "fill 0x%08x\n", script.fill);
  for (const TmemScriptStep& s : script.steps) {
    using V = TmemScriptStep::Verb;
    switch (s.verb) {
      case V::kFp6:
        absl::StrAppend(&out, "fp6 ", Fp6ContainerName(s.fp6), "\n");
        continue;
      case V::kDump:
        absl::StrAppendFormat(&out, "dump lanes=%d:%d cols=%d:%d cta=%d\n",
                              s.lane_begin, s.lane_end, s.column_begin,
                              s.column_end, s.cta);
        continue;
      case V::kCp:
      case V::kShift:
      case V::kSt:
      case V::kLd:
        break;
    }
    absl::StrAppendFormat(&out, "%s %s", tcgen05::OpName(s.inst.op),
                          tcgen05::Spelling(s.inst));
    if (s.verb == V::kSt || s.verb == V::kLd)
      absl::StrAppendFormat(&out, " warp=%d", s.warp);
    absl::StrAppendFormat(&out, " taddr=0x%08x", s.taddr);
    if (s.verb == V::kCp) absl::StrAppendFormat(&out, " desc=0x%016x", s.desc);
    if (s.inst.half_split_offset.has_value()) {
      absl::StrAppendFormat(&out, " split=%d", *s.inst.half_split_offset);
    }
    if (s.thread.has_value())
      absl::StrAppendFormat(&out, " thread=%d", *s.thread);
    out += "\n";
  }
  return out;
}

}  // namespace mxpack
