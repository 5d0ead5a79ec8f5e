// `mxpack tmem-sim`: runs a short script of tcgen05 cp / shift / st / ld
// steps (include/mxpack/tmem_script.h) on the host tensor-memory model
// (include/mxpack/tmem.h) with a shared-memory image read from --in, and
// prints TMEM rectangles or per-thread registers as hex grids.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mxpack/tcgen05.h"
#include "mxpack/tmem.h"
#include "mxpack/tmem_script.h"
#include "tools/cli.h"

namespace mxpack::cli {
namespace {

std::string RegisterGrid(const WarpRegisters& regs, std::optional<int> thread) {
  std::string out = "thread";
  const size_t n = regs.empty() ? 0 : regs[0].size();
  for (size_t j = 0; j < n; ++j)
    absl::StrAppendFormat(&out, " %8s", absl::StrCat("r", j));
  out += "\n";
  for (int t = 0; t < 32; ++t) {
    if (thread.has_value() && *thread != t) continue;
    absl::StrAppendFormat(&out, "%6d", t);
    for (uint32_t v : regs[t]) absl::StrAppendFormat(&out, " %08x", v);
    out += "\n";
  }
  return out;
}

// Runs the steps of a parsed script; errors of the model name the step's
// line. The --in image is read at the first cp.
absl::Status RunScript(const TmemScript& script, std::string& out) {
  Tmem tmem(script.peer, script.fill);
  Fp6Container fp6 = Fp6Container::kLow6;
  std::optional<std::string> smem;
  for (const TmemScriptStep& s : script.steps) {
    auto fail = [&](const absl::Status& st) {
      return absl::Status(
          st.code(), absl::StrFormat("script line %d '%s': %s", s.line, s.text,
                                     st.message()));
    };
    using V = TmemScriptStep::Verb;
    switch (s.verb) {
      case V::kFp6:
        fp6 = s.fp6;
        break;
      case V::kDump: {
        absl::StrAppendFormat(
            &out, "# TMEM cta %d lanes %d..%d columns %d..%d\nlane/col", s.cta,
            s.lane_begin, s.lane_end - 1, s.column_begin, s.column_end - 1);
        for (int c = s.column_begin; c < s.column_end; ++c) {
          absl::StrAppendFormat(&out, " %8d", c);
        }
        out += "\n";
        for (int l = s.lane_begin; l < s.lane_end; ++l) {
          absl::StrAppendFormat(&out, "%8d", l);
          for (int c = s.column_begin; c < s.column_end; ++c) {
            absl::StatusOr<uint32_t> v = tmem.Read(l, c, s.cta);
            if (!v.ok()) return fail(v.status());
            absl::StrAppendFormat(&out, " %08x", *v);
          }
          out += "\n";
        }
        break;
      }
      case V::kCp: {
        if (!smem.has_value()) {
          absl::StatusOr<std::string> data = ReadInput(absl::GetFlag(FLAGS_in));
          if (!data.ok()) return fail(data.status());
          smem = std::move(*data);
        }
        const absl::Span<const uint8_t> bytes(
            reinterpret_cast<const uint8_t*>(smem->data()), smem->size());
        if (absl::Status st = tmem.Cp(s.inst, bytes, s.desc, s.taddr, fp6);
            !st.ok()) {
          return fail(st);
        }
        absl::StrAppendFormat(&out, "# %s taddr=0x%08x desc=0x%016x: ok\n",
                              tcgen05::Spelling(s.inst), s.taddr, s.desc);
        break;
      }
      case V::kShift:
        if (absl::Status st = tmem.Shift(s.inst, s.taddr); !st.ok())
          return fail(st);
        absl::StrAppendFormat(&out, "# %s taddr=0x%08x: ok\n",
                              tcgen05::Spelling(s.inst), s.taddr);
        break;
      case V::kSt: {
        WarpRegisters regs(32, std::vector<uint32_t>(static_cast<size_t>(
                                   tcgen05::NumRegisters(s.inst))));
        for (int t = 0; t < 32; ++t) {
          for (size_t j = 0; j < regs[t].size(); ++j) {
            regs[t][j] =
                static_cast<uint32_t>(t) << 16 | static_cast<uint32_t>(j);
          }
        }
        if (absl::Status st = tmem.St(s.inst, s.warp, s.taddr, regs); !st.ok())
          return fail(st);
        absl::StrAppendFormat(
            &out,
            "# %s warp=%d taddr=0x%08x: ok (r[j] of thread t = t<<16|j)\n",
            tcgen05::Spelling(s.inst), s.warp, s.taddr);
        break;
      }
      case V::kLd: {
        absl::StatusOr<WarpRegisters> regs = tmem.Ld(s.inst, s.warp, s.taddr);
        if (!regs.ok()) return fail(regs.status());
        absl::StrAppendFormat(&out, "# %s warp=%d taddr=0x%08x\n",
                              tcgen05::Spelling(s.inst), s.warp, s.taddr);
        out += RegisterGrid(*regs, s.thread);
        break;
      }
    }
  }
  return absl::OkStatus();
}

int RunTmemSim(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return Fail("tmem-sim", absl::InvalidArgumentError(absl::StrFormat(
                                "expected one argument SCRIPT (a file), got %d",
                                args.size())));
  }
  if (absl::Status st = CheckOutputs({absl::GetFlag(FLAGS_out)},
                                    {args[0], absl::GetFlag(FLAGS_in)});
      !st.ok()) {
    return Fail("tmem-sim", st);
  }
  FILE* f = std::fopen(args[0].c_str(), "rb");
  if (f == nullptr) {
    return Fail("tmem-sim",
                absl::NotFoundError(absl::StrFormat(
                    "SCRIPT %s: cannot open for reading", args[0])));
  }
  std::string script;
  char buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0)
    script.append(buf, got);
  std::fclose(f);
  absl::StatusOr<TmemScript> parsed = ParseTmemScript(script);
  if (!parsed.ok()) return Fail("tmem-sim", parsed.status());
  std::string out;
  if (absl::Status st = RunScript(*parsed, out); !st.ok()) {
    return Fail("tmem-sim", st);
  }
  if (absl::Status st = WriteOutput(absl::GetFlag(FLAGS_out), out); !st.ok()) {
    return Fail("tmem-sim", st);
  }
  return 0;
}

// Hooks the tcgen05 checker into `mxpack ptx-check` (and forces its object
// file out of the static library into the binary).
[[maybe_unused]] const bool kTcgen05PtxCheck = RegisterTcgen05PtxFamily();

const bool kTmemSim = RegisterCommand(
    {"tmem-sim",
     "run a script of tcgen05 cp/shift/st/ld steps on the TMEM model",
     "tmem-sim SCRIPT [--in=SMEM.bin] [--out=FILE]\n\n"
     "Runs the steps of SCRIPT on a host model of Blackwell tensor memory "
     "(128\n"
     "lanes x 512 columns x 32 bit per CTA) with the shared-memory image --in\n"
     "(read on the first cp) and prints the ld registers / dumped TMEM as "
     "hex.\n\n"
     "Script: one step per line, '#' comments; TMEM address A is LANE:COLUMN\n"
     "or a raw 0x taddr; SPELLING is the PTX opcode without operands.\n"
     "  peer                          model the peer CTA (.cta_group::2)\n"
     "  fp6 low6|mid6                 6-bit container placement (default "
     "low6)\n"
     "  fill VALUE                    initial value of every cell (default 0)\n"
     "  cp SPELLING taddr=A desc=0xD  tcgen05.cp, raw 64-bit smem descriptor, "
     "or\n"
     "  cp SPELLING taddr=A start=N lbo=N sbo=N "
     "[swizzle=none|32b|64b|128b|128b_base32b]\n"
     "  shift SPELLING taddr=A        tcgen05.shift (lane multiple of 32)\n"
     "  st SPELLING warp=W taddr=A [split=N]\n"
     "                                tcgen05.st of register j of thread t = "
     "t<<16|j\n"
     "  ld SPELLING warp=W taddr=A [split=N] [thread=T]\n"
     "                                tcgen05.ld, prints thread x register "
     "grid\n"
     "  dump lanes=A:B cols=C:D [cta=0|1]\n"
     "                                prints lanes A..B-1 x columns C..D-1\n"
     "split=N is the immHalfSplitoff operand of .16x32bx2. Example:\n"
     "  cp tcgen05.cp.cta_group::1.128x256b taddr=0:0 start=0 lbo=2048 "
     "sbo=128\n"
     "  shift tcgen05.shift.cta_group::1.down taddr=0:0\n"
     "  ld tcgen05.ld.sync.aligned.32x32b.x8.b32 warp=0 taddr=0:0 thread=17\n"
     "Semantics and open points: docs/semantics.md section 3, "
     "docs/tmem_open_points.md.",
     {"in", "out"},
     &RunTmemSim});

}  // namespace
}  // namespace mxpack::cli
