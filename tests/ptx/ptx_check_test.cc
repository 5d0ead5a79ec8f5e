// Unit tests of the ptx-check front end that need no ptxas: the operand
// splitter and the tcgen05 spelling freedoms ptxas 13 allows
// (docs/ptx_check.md); tests/ptx/ptxas_agreement_test.cc checks the same
// verdicts against ptxas itself.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mxpack/ptx_check.h"
#include "src/util/ptx_operands.h"

namespace mxpack {
namespace {

TEST(PtxOperands, SplitsAndClassifies) {
  auto ops = ptx::ParseOperands("{%r1, _, 0x10}, [ %rd2 + -8 ], 1.5");
  ASSERT_TRUE(ops.ok()) << ops.status();
  ASSERT_EQ(ops->size(), 3u);
  EXPECT_EQ((*ops)[0].kind, ptx::OperandKind::kVector);
  ASSERT_EQ((*ops)[0].elements.size(), 3u);
  EXPECT_EQ((*ops)[0].elements[1].kind, ptx::OperandKind::kSink);
  EXPECT_EQ((*ops)[0].elements[2].kind, ptx::OperandKind::kImmediate);
  EXPECT_EQ((*ops)[1].kind, ptx::OperandKind::kAddress);
  EXPECT_EQ((*ops)[1].base, "%rd2");
  EXPECT_EQ((*ops)[1].offset, -8);
  EXPECT_TRUE((*ops)[2].float_literal);
  for (const char* bad : {"garbage garbage", "{%r1", "[%rd1-8]", "%r1,,%r2", "{{%r1}}",
                          "[%rd1+%rd2]", "%r1)"}) {
    EXPECT_FALSE(ptx::ParseOperands(bad).ok()) << bad;
  }
  EXPECT_EQ(ptx::RegClassOf("%rd12"), ptx::RegClass::kB64);
  EXPECT_EQ(ptx::RegClassOf("%hh1"), ptx::RegClass::kF16x2);
  EXPECT_EQ(ptx::RegClassOf("%rx1"), ptx::RegClass::kUnknown);
  EXPECT_EQ(ptx::RegClassOf("val_b32"), ptx::RegClass::kUnknown);
}

TEST(PtxCheckTcgen05, FollowsPtxasSpellingFreedoms) {
  struct Case {
    const char* spelling;
    bool legal;
    const char* text;  // Substring of the verdict.
  };
  for (const Case& c : std::vector<Case>{
           {"tcgen05.ld.aligned.sync.32x32b.x1.b32 {%r1}, [%r2];", true, "in any order"},
           {"tcgen05.ld.sync.32x32b.x1.b32 {%r1}, [%r2];", true, "without .aligned"},
           {"tcgen05.ld.sync.sync.aligned.32x32b.x1.b32 {%r1}, [%r2];", true, "repeated .sync"},
           {"tcgen05.st.sync.aligned.32x32b.x1.b8x16.b32 [%r2], {%r1};", true,
            "ignores .b8x16"},
           {"tcgen05.cp.128x256b.cta_group::1 [%r1], %rd1;", true, "in any order"},
           {"tcgen05.shift.down.cta_group::1 [%r1];", true, ""},
           {"tcgen05.ld.aligned.32x32b.x1.b32 {%r1}, [%r2];", false, ".sync is required"},
           {"tcgen05.ld.sync.aligned.aligned.32x32b.x1.b32 {%r1}, [%r2];", false, "second"},
           {"tcgen05.ld.sync.aligned.32x32b.x1.b32 %r1, [%r2];", false, "in braces"},
           {"tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%rd2];", false, "32-bit register"},
           {"tcgen05.ld.sync.aligned.32x32b.x1.b32 {%rd1}, [%r2];", false, "32-bit register"},
           {"tcgen05.cp.cta_group::1.128x256b [%r1], %r2;", false, ".b64 register"},
           {"tcgen05.cp.cta_group::1.128x256b.b6x16_p32.b8x16 [%r1], %rd1;", false, ""},
       }) {
    const PtxCheckResult r = CheckPtx(c.spelling, "sm_100a");
    EXPECT_EQ(r.ok, c.legal) << c.spelling << ": " << r.text;
    EXPECT_FALSE(r.usage_error) << c.spelling;
    EXPECT_NE(r.text.find(c.text), std::string::npos) << c.spelling << ": " << r.text;
  }
  EXPECT_TRUE(CheckPtx("tcgen05.alloc.cta_group::1.sync.aligned.b32 [%r1], 32;").usage_error);
  EXPECT_TRUE(CheckPtx("tcgen05.ld.sync.aligned.32x32b.x1.b32", "sm_bogus").usage_error);
}

}  // namespace
}  // namespace mxpack
