// Fuzzer of the tcgen05 spelling parser: must never crash, and every accepted
// spelling must round-trip: Parse(Spelling(Parse(s))) == Parse(s) (minus the
// immHalfSplitoff operand, which is not part of the opcode). Inputs are used
// both as raw text and as a recipe that assembles spellings from the known
// qualifier vocabulary, so that valid instructions are reached often.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "mxpack/tcgen05.h"

namespace {

const char* const kWords[] = {
    "cp",           "shift",         "ld",           "st",
    "sync",         "aligned",       "cta_group::1", "cta_group::2",
    "cta_group::3", "down",          "128x256b",     "128x128b",
    "4x256b",       "64x128b",       "32x128b",      "32x32b",
    "16x64b",       "16x128b",       "16x256b",      "16x32bx2",
    "31x256b",      "warpx2::02_13", "warpx2::01_23", "warpx4",
    "b8x16",        "b6x16_p32",     "b4x16_p64",    "x1",
    "x2",           "x4",            "x32",          "x64",
    "x128",         "x3",            "pack::16b",    "unpack::16b",
    "b32",          "red",           "",             "x99999999999",
};
const char* const kOperands[] = {"", " [t], d;", " [t];", " {a}, [t];", " {a,b}, [t], 8;",
                                 " [t], 4, {a};", " {a,b,c,d}, [t]", " [t], {a, b}"};

void CheckRoundTrip(const std::string& s) {
  absl::StatusOr<mxpack::tcgen05::Instruction> a = mxpack::tcgen05::Parse(s);
  if (!a.ok()) return;
  const std::string canonical = mxpack::tcgen05::Spelling(*a);
  absl::StatusOr<mxpack::tcgen05::Instruction> b = mxpack::tcgen05::Parse(canonical);
  mxpack::tcgen05::Instruction expect = *a;
  expect.half_split_offset.reset();
  if (!b.ok() || !(*b == expect) || mxpack::tcgen05::Spelling(*b) != canonical) {
    std::abort();
  }
  (void)mxpack::tcgen05::Describe(*a);
  (void)mxpack::CheckTcgen05(s, "sm_100a");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CheckRoundTrip(std::string(reinterpret_cast<const char*>(data), size));
  // Recipe: each byte picks a word; the first byte the operand suffix.
  std::string s = "tcgen05";
  for (size_t i = 1; i < size && i < 10; ++i) {
    s += ".";
    s += kWords[data[i] % (sizeof(kWords) / sizeof(kWords[0]))];
  }
  if (size > 0) s += kOperands[data[0] % (sizeof(kOperands) / sizeof(kOperands[0]))];
  CheckRoundTrip(s);
  (void)mxpack::tcgen05::ParseTarget(
      std::string(reinterpret_cast<const char*>(data), size < 16 ? size : 16));
  return 0;
}
