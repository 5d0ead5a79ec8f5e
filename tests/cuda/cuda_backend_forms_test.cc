// The CUDA backend's instruction tables (mxpack/cuda.h) against the host
// models, in every build: each cvt form is a legal host conversion, each
// tcgen05 / multimem form passes the ptx-check registry on its target, and
// without a device (or without the backend) every device entry point says
// kUnavailable with a reason.
#include <set>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "mxpack/cuda.h"
#include "mxpack/multimem.h"
#include "mxpack/pack.h"
#include "mxpack/ptx_check.h"
#include "mxpack/tcgen05.h"
#include "mxpack/tmem.h"

namespace mxpack {
namespace cuda {
namespace {

TEST(CudaForms, CvtFormsAreLegalHostConversions) {
  ASSERT_FALSE(CvtForms().empty());
  std::set<std::string> seen;
  for (const CvtForm& f : CvtForms()) {
    EXPECT_TRUE(seen.insert(f.ptx).second) << "duplicate " << f.ptx;
    EXPECT_TRUE(ValidateConversion(f.from, f.to, f.policy).ok())
        << f.ptx << ": " << ValidateConversion(f.from, f.to, f.policy);
    EXPECT_TRUE(absl::StartsWith(f.ptx, "cvt.")) << f.ptx;
    // The spelling carries the policy: .rs / .relu / .satfinite.
    const std::string p = f.ptx;
    EXPECT_EQ(absl::StrContains(p, ".relu"), f.policy.relu) << p;
    EXPECT_EQ(absl::StartsWith(p, "cvt.rs."), f.policy.rounding == Rounding::kRS) << p;
    EXPECT_EQ(absl::StartsWith(p, "cvt.rz."), f.policy.rounding == Rounding::kRZ) << p;
    EXPECT_EQ(absl::StartsWith(p, "cvt.rp."), f.policy.rounding == Rounding::kRP) << p;
    if (IsNarrow(f.to)) {
      EXPECT_EQ(absl::StrContains(p, ".satfinite"),
                f.policy.saturation == Saturation::kSatFinite)
          << p;
    }
    EXPECT_EQ(f.width, f.policy.rounding == Rounding::kRS && IsNarrow(f.to) ? 4 : 2) << p;
    // fp8 forms from f32/f16 and the f16x2 decodes of fp8 run on sm_90;
    // everything else needs sm_100a.
    const bool fp8 = (f.from == Format::kE4M3 || f.from == Format::kE5M2 ||
                      f.to == Format::kE4M3 || f.to == Format::kE5M2) &&
                     f.policy.rounding != Rounding::kRS;
    EXPECT_EQ(f.arch, fp8 ? Arch::kSm90 : Arch::kSm100a) << p;
  }
}

TEST(CudaForms, Tcgen05FormsPassPtxCheck) {
  RegisterTcgen05PtxFamily();
  std::set<std::pair<tcgen05::Shape, tcgen05::Multicast>> shapes;
  std::set<tcgen05::SrcFmt> formats;
  for (const char* s : TmemCpForms()) {
    const PtxCheckResult r = CheckPtx(s, "sm_100a");
    EXPECT_TRUE(r.ok) << s << ": " << r.text;
    auto inst = tcgen05::Parse(s);
    ASSERT_TRUE(inst.ok()) << s;
    EXPECT_EQ(inst->op, tcgen05::Op::kCp);
    shapes.insert({inst->shape, inst->multicast});
    formats.insert(inst->src_fmt);
  }
  // Every shape and multicast form, each with and without decompression.
  EXPECT_EQ(shapes.size(), 6u);
  EXPECT_EQ(formats.size(), 3u);
  EXPECT_EQ(TmemCpForms().size(), 18u);
  // Every ld and st fragment form: legal on sm_100a, the right op, and one
  // of the kernels' 2- and 4-register variants.
  for (const auto& [forms, op] :
       {std::pair{&TmemLdForms(), tcgen05::Op::kLd}, std::pair{&TmemStForms(), tcgen05::Op::kSt}}) {
    for (const char* s : *forms) {
      const PtxCheckResult r = CheckPtx(s, "sm_100a");
      EXPECT_TRUE(r.ok) << s << ": " << r.text;
      auto inst = tcgen05::Parse(s);
      ASSERT_TRUE(inst.ok()) << s;
      EXPECT_EQ(inst->op, op);
      EXPECT_TRUE(tcgen05::NumRegisters(*inst) == 2 || tcgen05::NumRegisters(*inst) == 4)
          << s;
    }
  }
  // st and ld cover the same shapes.
  EXPECT_EQ(TmemStForms().size(), TmemLdForms().size());
  // StPattern: low and high halves distinct across all registers.
  std::set<uint32_t> halves;
  for (int w = 0; w < 4; ++w) {
    for (int t = 0; t < 32; ++t) {
      for (int j = 0; j < 4; ++j) {
        EXPECT_TRUE(halves.insert(StPattern(w, t, j) & 0xFFFF).second);
        EXPECT_TRUE(halves.insert(StPattern(w, t, j) >> 16).second);
      }
    }
  }
  const PtxCheckResult shift = CheckPtx("tcgen05.shift.cta_group::1.down", "sm_100a");
  EXPECT_TRUE(shift.ok) << shift.text;
}

// The host half of the tcgen05.cp checks: every job gpu-verify builds is
// accepted by the Tmem model, writes exactly the cells of its shape, covers
// every code when decompressing, and tells the two FP6 placements apart.
TEST(CudaForms, CpJobsRunOnTheTmemModel) {
  for (size_t form = 0; form < TmemCpForms().size(); ++form) {
    const char* s = TmemCpForms()[form];
    auto inst = tcgen05::Parse(s);
    ASSERT_TRUE(inst.ok()) << s;
    auto job = MakeCpJob(form, tcgen05::Swizzle::kNone, /*seed=*/3);
    ASSERT_TRUE(job.ok()) << s << ": " << job.status();
    EXPECT_EQ(job->cp_form, form);
    auto low = ModelCp(*job, Fp6Container::kLow6);
    ASSERT_TRUE(low.ok()) << s << ": " << low.status();
    int written = 0;
    std::set<uint8_t> codes;
    const int bits = inst->src_fmt == tcgen05::SrcFmt::kB4x16P64 ? 4 : 6;
    for (int lane = 0; lane < tcgen05::kLanes; ++lane) {
      for (int col = 0; col < tcgen05::kColumns; ++col) {
        const uint32_t v = low->At(lane, col);
        if (v == kCpFill) continue;
        ++written;
        EXPECT_TRUE(col >= 16 && col < 16 + 4 * tcgen05::CpChunksPerRow(inst->shape))
            << s << " wrote column " << col;
        for (int k = 0; k < 4 && inst->src_fmt != tcgen05::SrcFmt::kNone; ++k) {
          codes.insert(scalar::FromContainer(bits, static_cast<uint8_t>(v >> (8 * k)),
                                             Fp6Container::kLow6));
        }
      }
    }
    EXPECT_EQ(written,
              tcgen05::NumLanes(*inst) * 4 * tcgen05::CpChunksPerRow(inst->shape))
        << s;
    if (inst->src_fmt != tcgen05::SrcFmt::kNone) {
      EXPECT_EQ(codes.size(), size_t{1} << bits) << s;
    }
    auto mid = ModelCp(*job, Fp6Container::kMid6);
    ASSERT_TRUE(mid.ok()) << s;
    bool differ = false;
    for (int lane = 0; lane < tcgen05::kLanes && !differ; ++lane) {
      for (int col = 0; col < tcgen05::kColumns && !differ; ++col) {
        differ = low->At(lane, col) != mid->At(lane, col);
      }
    }
    EXPECT_EQ(differ, inst->src_fmt == tcgen05::SrcFmt::kB6x16P32) << s;
  }
  for (tcgen05::Swizzle sw : {tcgen05::Swizzle::k128B, tcgen05::Swizzle::k64B,
                              tcgen05::Swizzle::k32B, tcgen05::Swizzle::k128BBase32B}) {
    auto job = MakeCpJob(0, sw, 3);
    ASSERT_TRUE(job.ok()) << tcgen05::SwizzleName(sw) << ": " << job.status();
    EXPECT_TRUE(ModelCp(*job, Fp6Container::kLow6).ok()) << tcgen05::SwizzleName(sw);
  }
  for (uint32_t lane : {0u, 32u, 64u, 96u}) {
    auto job = MakeCpJob(0, tcgen05::Swizzle::kNone, 3);
    ASSERT_TRUE(job.ok());
    job->shift = true;
    job->shift_taddr = tcgen05::MakeTaddr(lane, 16);
    auto shifted = ModelCp(*job, Fp6Container::kLow6);
    ASSERT_TRUE(shifted.ok()) << lane << ": " << shifted.status();
    auto plain = ModelCp(*MakeCpJob(0, tcgen05::Swizzle::kNone, 3), Fp6Container::kLow6);
    ASSERT_TRUE(plain.ok());
    // Lane lane+1 now holds what lane `lane` held.
    EXPECT_EQ(shifted->At(static_cast<int>(lane) + 1, 16),
              plain->At(static_cast<int>(lane), 16));
  }
  EXPECT_EQ(MakeCpJob(TmemCpForms().size(), tcgen05::Swizzle::kNone, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The host half of the tcgen05.ld / st checks: the Tmem model accepts every
// form at column 16 for warps 0-3, and each ld register names the cell its
// FragmentPattern value came from.
TEST(CudaForms, LdStFormsRunOnTheTmemModel) {
  Tmem t;
  for (int lane = 0; lane < tcgen05::kLanes; ++lane) {
    for (int col = 0; col < tcgen05::kColumns; ++col) {
      ASSERT_TRUE(t.Write(lane, col, FragmentPattern(lane, col)).ok());
    }
  }
  for (const char* s : TmemLdForms()) {
    auto inst = ParseFragmentForm(s);
    ASSERT_TRUE(inst.ok()) << s;
    // The immHalfSplitoff operand: set exactly for the 16x32bx2 forms.
    if (inst->shape == tcgen05::Shape::k16x32bx2) {
      EXPECT_EQ(inst->half_split_offset, kLdHalfSplitOffset) << s;
    } else {
      EXPECT_FALSE(inst->half_split_offset.has_value()) << s;
    }
    for (int w = 0; w < 4; ++w) {
      auto regs = t.Ld(*inst, w, tcgen05::MakeTaddr(32u * static_cast<uint32_t>(w), 16));
      ASSERT_TRUE(regs.ok()) << s << " warp " << w << ": " << regs.status();
      ASSERT_EQ(regs->size(), 32u);
      for (int th = 0; th < 32; ++th) {
        for (int j = 0; j < tcgen05::NumRegisters(*inst); ++j) {
          const tcgen05::FragmentCell c = tcgen05::Fragment(*inst, th, j);
          const int lane = 32 * w + c.lane, col = 16 + c.column;
          const uint32_t want = inst->pack16
                                    ? (FragmentPattern(lane, col) & 0xFFFF) |
                                          (FragmentPattern(lane, 16 + c.column_hi) << 16)
                                    : FragmentPattern(lane, col);
          EXPECT_EQ((*regs)[th][j], want)
              << s << " warp " << w << " t " << th << " j " << j;
        }
      }
    }
  }
  for (const char* s : TmemStForms()) {
    auto inst = ParseFragmentForm(s);
    ASSERT_TRUE(inst.ok()) << s;
    // The immHalfSplitoff operand: set exactly for the 16x32bx2 forms.
    if (inst->shape == tcgen05::Shape::k16x32bx2) {
      EXPECT_EQ(inst->half_split_offset, kLdHalfSplitOffset) << s;
    } else {
      EXPECT_FALSE(inst->half_split_offset.has_value()) << s;
    }
    Tmem st = t;
    for (int w = 0; w < 4; ++w) {
      WarpRegisters regs(32, std::vector<uint32_t>(tcgen05::NumRegisters(*inst)));
      for (int th = 0; th < 32; ++th) {
        for (size_t j = 0; j < regs[th].size(); ++j) {
          regs[th][j] = StPattern(w, th, static_cast<int>(j));
        }
      }
      EXPECT_TRUE(
          st.St(*inst, w, tcgen05::MakeTaddr(32u * static_cast<uint32_t>(w), 16), regs)
              .ok())
          << s << " warp " << w;
    }
  }
}

TEST(CudaForms, MultimemFormsPassPtxCheck) {
  std::set<MultimemKind> kinds;
  for (const char* s : MultimemForms()) {
    auto instr = ParseMultimem(s);
    ASSERT_TRUE(instr.ok()) << s << ": " << instr.status();
    kinds.insert(instr->kind);
    const bool fp8 = MultimemNeedsFp8Target(*instr);
    const PtxCheckResult r100 = CheckPtx(s, "sm_100a");
    EXPECT_TRUE(r100.ok) << s << ": " << r100.text;
    const PtxCheckResult r90 = CheckPtx(s, "sm_90");
    EXPECT_EQ(r90.ok, !fp8) << s << ": " << r90.text;
    // One 32- or 64-bit register per access (the kernel's operand forms).
    EXPECT_TRUE(instr->AccessBytes() == 4 || instr->AccessBytes() == 8) << s;
  }
  EXPECT_EQ(kinds.size(), 3u);
}

TEST(CudaForms, DeviceEntryPointsWithoutDeviceAreUnavailable) {
  auto dev = QueryDevice(0);
  if (dev.ok()) GTEST_SKIP() << "a CUDA device is present: " << dev->name;
  EXPECT_EQ(dev.status().code(), absl::StatusCode::kUnavailable) << dev.status();
  EXPECT_FALSE(dev.status().message().empty());
  if (!BuiltWithCuda()) {
    EXPECT_TRUE(absl::StrContains(dev.status().message(), "built without CUDA"))
        << dev.status();
  }
  EXPECT_EQ(RequireArch(Arch::kSm90).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(RequireArch(Arch::kSm100a).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(MulticastDeviceCount().status().code(), absl::StatusCode::kUnavailable);
  // A valid request still reports the missing device, never a crash.
  std::vector<uint8_t> in(8, 0), out(2, 0);
  EXPECT_EQ(DeviceConvert(0, in, absl::MakeSpan(out)).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(RunTmemLd(0, 0).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(RunTmemSt(0, 0).status().code(), absl::StatusCode::kUnavailable);
  // VerifyAll has nothing to run; each group lists its checks as skipped.
  EXPECT_EQ(VerifyAll({}).status().code(), absl::StatusCode::kUnavailable);
  VerifyOptions quick;
  quick.exhaustive_cvt = false;
  for (const auto& rows : {VerifyCvt(quick), VerifyTmem(quick), VerifyMultimem(quick)}) {
    ASSERT_FALSE(rows.empty());
    for (const CheckResult& r : rows) {
      EXPECT_EQ(r.outcome, Outcome::kSkipped) << r.name << ": " << r.detail;
      EXPECT_FALSE(r.detail.empty()) << r.name;
    }
  }
  EXPECT_EQ(VerifyCvt(quick).size(), CvtForms().size());
  EXPECT_EQ(VerifyMultimem(quick).size(), MultimemForms().size());
}

}  // namespace
}  // namespace cuda
}  // namespace mxpack
