// Runtime tests of the CUDA backend (registered only when it is built): each
// group of gpu-verify checks runs on a capable GPU and must have no failed
// check; without one the test reports SKIPPED with the reason. Argument
// errors are checked before any device access, so they run everywhere.
#include <cstdint>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "mxpack/cuda.h"
#include "mxpack/tcgen05.h"

namespace mxpack {
namespace cuda {
namespace {

void ExpectNoFailures(const std::vector<CheckResult>& rows) {
  int ran = 0;
  for (const CheckResult& r : rows) {
    EXPECT_NE(r.outcome, Outcome::kFailed)
        << r.group << " " << r.name << ": " << r.detail;
    ran += r.outcome != Outcome::kSkipped;
  }
  if (ran == 0) GTEST_SKIP() << "every check skipped: " << rows.front().detail;
}

TEST(CudaRuntime, CvtMatchesHostModel) {
  const absl::Status s = RequireArch(Arch::kSm90);
  if (!s.ok()) GTEST_SKIP() << s.message();
  VerifyOptions o;
  o.exhaustive_cvt = false;  // gpu-verify runs the 2^32 sweep.
  ExpectNoFailures(VerifyCvt(o));
}

TEST(CudaRuntime, TensorMemoryMatchesTmemModel) {
  const absl::Status s = RequireArch(Arch::kSm100a);
  if (!s.ok()) GTEST_SKIP() << s.message();
  ExpectNoFailures(VerifyTmem({}));
}

TEST(CudaRuntime, MultimemMatchesAReduceModel) {
  const auto n = MulticastDeviceCount();
  if (!n.ok()) GTEST_SKIP() << n.status().message();
  ExpectNoFailures(VerifyMultimem({}));
}

TEST(CudaRuntime, ArgumentErrorsNameTheArgument) {
  std::vector<uint8_t> out(4);
  absl::Status s = DeviceConvert(CvtForms().size(), {}, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "form")) << s;
  // Form 0 is e4m3x2 from f32: 3 bytes are not a whole f32.
  std::vector<uint8_t> in(3);
  s = DeviceConvert(0, in, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "in:")) << s;
  // One f32 is not a whole instruction group of 2.
  in.assign(4, 0);
  std::vector<uint8_t> one(1);
  s = DeviceConvert(0, in, absl::MakeSpan(one));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "groups of 2")) << s;
  // rbits without cvt.rs.
  in.assign(8, 0);
  std::vector<uint8_t> two(2);
  std::vector<uint32_t> rbits(1);
  s = DeviceConvert(0, in, absl::MakeSpan(two), rbits);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "rbits")) << s;

  TmemCpJob job;
  job.cp_form = TmemCpForms().size();
  EXPECT_EQ(RunTmemCp(job).status().code(), absl::StatusCode::kInvalidArgument);
  job.cp_form = 0;
  job.shift = true;
  job.shift_taddr = tcgen05::MakeTaddr(16, 0);
  const auto cp = RunTmemCp(job);
  EXPECT_EQ(cp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(cp.status().message(), "shift_taddr")) << cp.status();
  const auto ld = RunTmemLd(0, 511);
  EXPECT_EQ(ld.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(ld.status().message(), "column")) << ld.status();
  const auto st = RunTmemSt(TmemStForms().size(), 0);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(st.status().message(), "st_form")) << st.status();
  const auto mm = RunMultimem(0, {std::vector<uint8_t>(6)});
  EXPECT_EQ(mm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(mm.status().message(), "replicas[0]")) << mm.status();
}

}  // namespace
}  // namespace cuda
}  // namespace mxpack
