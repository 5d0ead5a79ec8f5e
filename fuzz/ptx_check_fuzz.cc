// Fuzzer of the PTX spelling checker (CheckPtx, every registered family):
// arbitrary lines and targets never crash it; its answer is deterministic;
// PtxOpcodeOf returns a piece of its input; and a spelling assembled from
// the multimem / tcgen05 vocabulary gets the same verdict bare, with a
// "@p" / "@!p" predicate and with a trailing ';' (the line forms CheckPtx
// accepts). Input: LINE '\n' TARGET for the raw check, the same bytes as a
// recipe for the assembled one.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "fuzz/fuzz_input.h"
#include "mxpack/ptx_check.h"
#include "mxpack/tcgen05.h"

namespace {

using mxpack::fuzz::Check;
using mxpack::fuzz::Reader;

const char* const kMultimemWords[] = {
    "ld_reduce", "st",     "red",    "relaxed", "acquire",  "release",
    "weak",      "sys",    "gpu",    "cluster", "cta",      "global",
    "add",       "min",    "max",    "and",     "or",       "xor",
    "inc",       "v2",     "v4",     "v8",      "acc::f32", "acc::f16",
    "f16",       "f16x2",  "bf16",   "bf16x2",  "f32",      "f64",
    "u32",       "s32",    "u64",    "s64",     "b32",      "b64",
    "e4m3",      "e4m3x2", "e4m3x4", "e5m2",    "e5m2x2",   "e5m2x4",
    "f8",        "",       "v16",    "sat",     "ftz"};
const char* const kTcgen05Words[] = {"cp",
                                     "shift",
                                     "ld",
                                     "st",
                                     "sync",
                                     "aligned",
                                     "cta_group::1",
                                     "cta_group::2",
                                     "down",
                                     "128x256b",
                                     "128x128b",
                                     "4x256b",
                                     "64x128b",
                                     "32x128b",
                                     "32x32b",
                                     "16x64b",
                                     "16x128b",
                                     "16x256b",
                                     "16x32bx2",
                                     "warpx2::02_13",
                                     "warpx2::01_23",
                                     "warpx4",
                                     "b8x16",
                                     "b6x16_p32",
                                     "b4x16_p64",
                                     "x1",
                                     "x2",
                                     "x8",
                                     "x128",
                                     "x3",
                                     "pack::16b",
                                     "unpack::16b",
                                     "b32",
                                     "",
                                     "x256",
                                     "red"};
const char* const kOperands[] = {
    "",          " [a], {r0,r1,r2,r3}", " r0, [a]",     " [a], r0", " [t], d",
    " {a}, [t]", " {a,b}, [t], 8",      " [t], {a, b}", " [a]"};
const char* const kTargets[] = {"",
                                "sm_90",
                                "sm_100a",
                                "sm_100f",
                                "sm_101a",
                                "sm_103a",
                                "sm_110a",
                                "sm_120a",
                                "sm_100a@ptx8.8",
                                "sm_80",
                                "sm_1000000000000",
                                "compute_100a",
                                "sm_100a@9.0"};

std::string Key(const mxpack::PtxCheckResult& r) {
  return std::string(r.ok ? "ok: " : "error: ") + r.text;
}

void CheckLine(absl::string_view line, absl::string_view target) {
  const mxpack::PtxCheckResult a = mxpack::CheckPtx(line, target);
  const mxpack::PtxCheckResult b = mxpack::CheckPtx(line, target);
  Check(a.ok == b.ok && a.text == b.text, "CheckPtx is deterministic",
        std::string(line));
  const absl::string_view op = mxpack::PtxOpcodeOf(line);
  Check(op.empty() || (op.data() >= line.data() &&
                       op.data() + op.size() <= line.data() + line.size()),
        "PtxOpcodeOf returns a piece of its input", std::string(line),
        std::string(op));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = mxpack::RegisterTcgen05PtxFamily();
  (void)registered;
  if (size > 4096) return 0;
  const absl::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t nl = all.find('\n');
  CheckLine(all.substr(0, nl),
            nl == absl::string_view::npos ? "" : all.substr(nl + 1));

  // Recipe: family, up to 8 words, operands, target.
  Reader r{data, size};
  const bool multimem = r.Byte() & 1;
  std::string s = multimem ? "multimem" : "tcgen05";
  const int words = r.Byte() % 9;
  for (int i = 0; i < words; ++i) {
    s += ".";
    s += multimem ? r.Pick(kMultimemWords) : r.Pick(kTcgen05Words);
  }
  s += r.Pick(kOperands);
  const std::string target = r.Pick(kTargets);
  const mxpack::PtxCheckResult bare = mxpack::CheckPtx(s, target);
  for (const std::string& line :
       {"@p " + s, "@!p " + s, s + ";", "@p " + s + ";"}) {
    const mxpack::PtxCheckResult other = mxpack::CheckPtx(line, target);
    Check(other.ok == bare.ok, "predicate / ';' change the verdict",
          Key(bare) + " for " + s, Key(other) + " for " + line);
  }
  CheckLine(s, target);
  return 0;
}
