// PTX inspection of the CUDA backend (registered only when it is built):
// the .ptx files the build keeps (<build>/cuda_ptx, nvcc -ptx per kernel
// file and architecture) must contain the exact instruction spellings of
// the backend's specification and of every form in mxpack/cuda.h's tables, every tcgen05 /
// multimem instruction in them must pass the project's ptx-check registry on
// the PTX's target, every packed cvt must be a legal host conversion that
// the table lists, and ptxas must have assembled a cubin for sm_100a.
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "mxpack/cuda.h"
#include "mxpack/ptx_check.h"
#include "mxpack/tcgen05.h"

#ifndef MXPACK_CUDA_PTX_DIR
#error "MXPACK_CUDA_PTX_DIR must name the build's cuda_ptx directory"
#endif

namespace mxpack {
namespace cuda {
namespace {

const char* const kKernels[] = {"kernels_cvt", "kernels_tcgen05", "kernels_multimem"};

std::string Path(const std::string& kernel, const std::string& suffix) {
  return std::string(MXPACK_CUDA_PTX_DIR) + "/" + kernel + "." + suffix;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Instruction lines (opcode + operands) of a PTX file, without predicates.
std::vector<std::string> Instructions(const std::string& ptx) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(ptx, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '/' || line[0] == '.' || line[0] == '{' ||
        line[0] == '}') {
      continue;
    }
    if (line[0] == '@') {
      const size_t space = line.find_first_of(" \t");
      if (space == absl::string_view::npos) continue;
      line = absl::StripLeadingAsciiWhitespace(line.substr(space));
    }
    out.emplace_back(line);
  }
  return out;
}

std::set<std::string> Opcodes(const std::string& ptx) {
  std::set<std::string> out;
  for (const std::string& line : Instructions(ptx)) {
    out.insert(std::string(PtxOpcodeOf(line)));
  }
  return out;
}

std::string AllPtx(const std::string& arch) {
  std::string all;
  for (const char* k : kKernels) all += ReadFile(Path(k, arch + ".ptx"));
  return all;
}

TEST(CudaPtx, FilesExistAndCubinsAssembledForSm100a) {
  for (const char* k : kKernels) {
    for (const char* arch : {"sm_100a", "sm_90"}) {
      const std::string ptx = ReadFile(Path(k, std::string(arch) + ".ptx"));
      ASSERT_FALSE(ptx.empty()) << Path(k, std::string(arch) + ".ptx");
      EXPECT_TRUE(absl::StrContains(ptx, std::string(".target ") + arch))
          << k << " " << arch;
    }
    const std::string cubin = ReadFile(Path(k, "sm_100a.cubin"));
    ASSERT_GE(cubin.size(), 64u) << Path(k, "sm_100a.cubin");
    EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f"
                                              "ELF"))
        << "not an ELF cubin: " << k;
  }
}

// The spellings the backend is specified to emit, verbatim.
TEST(CudaPtx, IssueSpellingsPresent) {
  const std::string ptx = AllPtx("sm_100a");
  for (const char* s : {
           "tcgen05.cp.cta_group::1.128x256b.b8x16.b4x16_p64",
           "tcgen05.cp.cta_group::1.128x256b.b8x16.b6x16_p32",
           "tcgen05.shift.cta_group::1.down",
           "tcgen05.ld.sync.aligned.32x32b",
           "cvt.rn.satfinite.e2m1x2.f32",
           "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
           "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
           "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned",
           "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
           "mbarrier.try_wait.parity.shared::cta.b64",
           "tcgen05.wait::ld.sync.aligned",
           "tcgen05.wait::st.sync.aligned",
           "tcgen05.fence::before_thread_sync",
           "tcgen05.fence::after_thread_sync",
           "tcgen05.st.sync.aligned.32x32b.x8.b32",
       }) {
    EXPECT_TRUE(absl::StrContains(ptx, s)) << "missing " << s;
  }
  EXPECT_TRUE(
      std::regex_search(ptx, std::regex(R"(multimem\.ld_reduce\S*\.acc::f16\S*\.e4m3)")))
      << "missing multimem.ld_reduce...acc::f16...e4m3";
  // Every cp shape / multicast form with every decompression format.
  for (const char* shape : {"128x256b", "128x128b", "4x256b", "64x128b.warpx2::02_13",
                            "64x128b.warpx2::01_23", "32x128b.warpx4"}) {
    for (const char* fmt : {"", ".b8x16.b6x16_p32", ".b8x16.b4x16_p64"}) {
      const std::string op = std::string("tcgen05.cp.cta_group::1.") + shape + fmt + " [";
      EXPECT_TRUE(absl::StrContains(ptx, op)) << "missing " << op;
    }
  }
}

// Every form of the host tables is an opcode of the PTX of its target, and
// the sm_100a-only forms are absent from the sm_90 PTX.
TEST(CudaPtx, EveryTableFormIsEmitted) {
  const std::set<std::string> sm100 = Opcodes(AllPtx("sm_100a"));
  const std::set<std::string> sm90 = Opcodes(AllPtx("sm_90"));
  for (const CvtForm& f : CvtForms()) {
    EXPECT_EQ(sm100.count(f.ptx), 1u) << f.ptx;
    EXPECT_EQ(sm90.count(f.ptx), f.arch == Arch::kSm90 ? 1u : 0u) << f.ptx;
  }
  for (const char* s : TmemCpForms()) EXPECT_EQ(sm100.count(s), 1u) << s;
  for (const char* s : TmemLdForms()) EXPECT_EQ(sm100.count(s), 1u) << s;
  for (const char* s : TmemStForms()) EXPECT_EQ(sm100.count(s), 1u) << s;
  for (const char* s : MultimemForms()) {
    auto instr = ParseMultimem(s);
    ASSERT_TRUE(instr.ok()) << s;
    EXPECT_EQ(sm100.count(s), 1u) << s;
    EXPECT_EQ(sm90.count(s), MultimemNeedsFp8Target(*instr) ? 0u : 1u) << s;
  }
  for (const std::string& op : sm90) {
    EXPECT_FALSE(absl::StartsWith(op, "tcgen05.")) << "tcgen05 in sm_90 PTX: " << op;
  }
}

// Model and backend agree: every tcgen05 data-movement instruction and every
// multimem instruction in the PTX passes mxpack::CheckPtx on that target.
TEST(CudaPtx, EmittedSpellingsPassPtxCheckRegistry) {
  RegisterTcgen05PtxFamily();
  int checked = 0;
  for (const char* arch : {"sm_100a", "sm_90"}) {
    for (const std::string& line : Instructions(AllPtx(arch))) {
      const std::string op(PtxOpcodeOf(line));
      const bool data_movement =
          absl::StartsWith(op, "tcgen05.cp.") || absl::StartsWith(op, "tcgen05.shift.") ||
          absl::StartsWith(op, "tcgen05.ld.") || absl::StartsWith(op, "tcgen05.st.");
      if (!data_movement && !absl::StartsWith(op, "multimem.")) continue;
      const PtxCheckResult r = CheckPtx(op, arch);
      EXPECT_TRUE(r.ok) << arch << ": " << line << "\n" << r.text;
      ++checked;
    }
  }
  EXPECT_GE(checked, static_cast<int>(TmemCpForms().size() + TmemLdForms().size() +
                                      TmemStForms().size() + MultimemForms().size()));
}

// cvt has no ptx-check family: every packed-format cvt in the PTX must be a
// row of CvtForms() (whose host conversion ValidateConversion accepts).
TEST(CudaPtx, EmittedCvtFormsAreTableRows) {
  std::set<std::string> table;
  for (const CvtForm& f : CvtForms()) table.insert(f.ptx);
  const std::regex packed(
      R"(^cvt\..*\.(e4m3|e5m2|e2m1|e2m3|e3m2|ue8m0|f16|bf16)x[24](\.|$))");
  const std::regex rs(R"(^cvt\.rs\.)");
  int found = 0;
  for (const char* arch : {"sm_100a", "sm_90"}) {
    for (const std::string& line : Instructions(AllPtx(arch))) {
      const std::string op(PtxOpcodeOf(line));
      if (!absl::StartsWith(op, "cvt.")) continue;
      if (!std::regex_search(op, packed) && !std::regex_search(op, rs)) continue;
      ++found;
      EXPECT_EQ(table.count(op), 1u) << arch << ": " << line << " is not in CvtForms()";
    }
  }
  EXPECT_GE(found, static_cast<int>(CvtForms().size()));
}

}  // namespace
}  // namespace cuda
}  // namespace mxpack
