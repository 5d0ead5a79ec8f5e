// Fuzzer of the tmem-sim script parser (include/mxpack/tmem_script.h):
// arbitrary text never crashes it; every accepted script has a canonical text
// that parses to the same steps (ParseTmemScript(TmemScriptText(s)) == s and
// the canonical text is a fixed point); and running the parsed steps on the
// tensor-memory model with a small shared-memory image never crashes (model
// errors are fine). Inputs are used as raw text and as a recipe that
// assembles lines from the script vocabulary, so valid steps are reached
// often.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "fuzz/fuzz_input.h"
#include "mxpack/tcgen05.h"
#include "mxpack/tmem.h"
#include "mxpack/tmem_script.h"

namespace {

using mxpack::TmemScript;
using mxpack::TmemScriptStep;
using mxpack::fuzz::Check;
using mxpack::fuzz::Reader;

bool SameSteps(const TmemScript& a, const TmemScript& b) {
  if (a.peer != b.peer || a.fill != b.fill || a.steps.size() != b.steps.size())
    return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const TmemScriptStep& x = a.steps[i];
    const TmemScriptStep& y = b.steps[i];
    if (x.verb != y.verb || x.fp6 != y.fp6 || !(x.inst == y.inst) ||
        x.taddr != y.taddr || x.desc != y.desc || x.warp != y.warp ||
        x.thread != y.thread || x.lane_begin != y.lane_begin ||
        x.lane_end != y.lane_end || x.column_begin != y.column_begin ||
        x.column_end != y.column_end || x.cta != y.cta) {
      return false;
    }
  }
  return true;
}

// Runs the steps like `mxpack tmem-sim` does, ignoring model errors. Dumps
// read at most a few cells (the CLI prints them all).
void Run(const TmemScript& s, absl::Span<const uint8_t> smem) {
  if (s.steps.empty()) return;
  // One model per peer setting, refilled per script (cheaper than a new one).
  static mxpack::Tmem* const models[2] = {new mxpack::Tmem(false),
                                          new mxpack::Tmem(true)};
  mxpack::Tmem& tmem = *models[s.peer ? 1 : 0];
  tmem.Fill(s.fill);
  mxpack::Fp6Container fp6 = mxpack::Fp6Container::kLow6;
  using V = TmemScriptStep::Verb;
  for (const TmemScriptStep& st : s.steps) {
    switch (st.verb) {
      case V::kFp6:
        fp6 = st.fp6;
        break;
      case V::kDump:
        (void)tmem.Read(st.lane_begin, st.column_begin, st.cta);
        (void)tmem.Read(st.lane_end - 1, st.column_end - 1, st.cta);
        break;
      case V::kCp:
        (void)tmem.Cp(st.inst, smem, st.desc, st.taddr, fp6);
        break;
      case V::kShift:
        (void)tmem.Shift(st.inst, st.taddr);
        break;
      case V::kSt: {
        mxpack::WarpRegisters regs(
            32, std::vector<uint32_t>(
                    static_cast<size_t>(mxpack::tcgen05::NumRegisters(st.inst)),
                    0x5A5A5A5Au));
        (void)tmem.St(st.inst, st.warp, st.taddr, regs);
        break;
      }
      case V::kLd:
        (void)tmem.Ld(st.inst, st.warp, st.taddr);
        break;
    }
  }
}

void CheckScript(const std::string& text, absl::Span<const uint8_t> smem) {
  absl::StatusOr<TmemScript> a = mxpack::ParseTmemScript(text);
  if (!a.ok()) {
    Check(a.status().message().rfind("script line ", 0) == 0,
          "errors start with 'script line N'", text,
          std::string(a.status().message()));
    return;
  }
  const std::string canonical = mxpack::TmemScriptText(*a);
  absl::StatusOr<TmemScript> b = mxpack::ParseTmemScript(canonical);
  Check(b.ok(), "the canonical text parses", text,
        canonical + " -> " + std::string(b.status().message()));
  Check(SameSteps(*a, *b), "the canonical text gives the same steps", text,
        canonical);
  Check(mxpack::TmemScriptText(*b) == canonical,
        "the canonical text is a fixed point", text, canonical);
  Run(*a, smem);
}

const char* const kSpellings[] = {
    "tcgen05.cp.cta_group::1.128x256b",
    "tcgen05.cp.cta_group::2.128x128b",
    "tcgen05.cp.cta_group::1.4x256b",
    "tcgen05.cp.cta_group::1.64x128b.warpx2::02_13",
    "tcgen05.cp.cta_group::1.32x128b.warpx4.b8x16.b4x16_p64",
    "tcgen05.cp.cta_group::1.128x128b.b8x16.b6x16_p32",
    "tcgen05.shift.cta_group::1.down",
    "tcgen05.shift.down.cta_group::2",
    "tcgen05.ld.sync.aligned.32x32b.x8.b32",
    "tcgen05.ld.sync.aligned.16x32bx2.x2.b32",
    "tcgen05.ld.sync.aligned.16x64b.x1.pack::16b.b32",
    "tcgen05.ld.sync.aligned.16x256b.x4.b32",
    "tcgen05.st.sync.aligned.32x32b.x2.unpack::16b.b32",
    "tcgen05.st.sync.aligned.16x32bx2.x1.b32",
    "tcgen05.st.sync.aligned.16x128b.x2.b32",
    "tcgen05.ld.sync.aligned.32x32b.x3.b32",
};
const char* const kVerbs[] = {"peer", "fp6",  "fill", "cp",    "shift", "st",
                              "ld",   "dump", "#",    "bogus", "",      "cp"};
const char* const kKeys[] = {"taddr",   "desc", "start", "lbo",    "sbo",
                             "swizzle", "warp", "split", "thread", "lanes",
                             "cols",    "cta",  "value", ""};
const char* const kValues[] = {"0",
                               "1",
                               "31",
                               "32",
                               "128",
                               "511",
                               "0:0",
                               "32:8",
                               "0:4",
                               "127:511",
                               "0x0",
                               "0x10000",
                               "0xFFFFFFFF",
                               "0x100000000",
                               "-1",
                               "low6",
                               "mid6",
                               "none",
                               "128b",
                               "32b",
                               "64b",
                               "128b_base32b",
                               "2048",
                               "16",
                               "0:1",
                               "1:0",
                               "0:129",
                               "x",
                               "",
                               "4294967296",
                               "18446744073709551616",
                               "0x4000004000100000"};

std::string Recipe(Reader& r) {
  std::string text;
  const int lines = r.Byte() % 8;
  for (int i = 0; i < lines; ++i) {
    const std::string verb = r.Pick(kVerbs);
    text += verb;
    if (verb == "cp" || verb == "shift" || verb == "ld" || verb == "st") {
      text += " ";
      text += r.Pick(kSpellings);
    }
    const int args = r.Byte() % 6;
    for (int j = 0; j < args; ++j) {
      const uint8_t form = r.Byte();
      text += (form & 1) ? "\t" : " ";
      if (form & 2) {
        text += r.Pick(kValues);
      } else {
        text += r.Pick(kKeys);
        text += "=";
        text += r.Pick(kValues);
      }
    }
    if (r.Byte() % 8 == 0) text += " # comment";
    text += "\n";
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  // The shared-memory image: the input itself, so cp reads varied bytes.
  const absl::Span<const uint8_t> smem(data, size);
  CheckScript(std::string(reinterpret_cast<const char*>(data), size), smem);
  Reader r{data, size};
  CheckScript(Recipe(r), smem);
  return 0;
}
