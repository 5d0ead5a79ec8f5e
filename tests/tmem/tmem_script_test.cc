// ParseTmemScript / TmemScriptText: the parsed fields of every step kind, the
// canonical text and its round trip, and errors naming line, text and rule.
#include "mxpack/tmem_script.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "mxpack/tcgen05.h"

namespace mxpack {
namespace {

using V = TmemScriptStep::Verb;

constexpr char kScript[] =
    "# comment line\n"
    "peer\n"
    "fill 0xdeadbeef   # every cell\n"
    "\n"
    "fp6 mid6\n"
    "cp tcgen05.cp.cta_group::2.128x256b taddr=0:0 start=0 lbo=2048 sbo=128\n"
    "cp tcgen05.cp.cta_group::1.128x128b taddr=0x00010004 "
    "desc=0x0000400800800000\n"
    "shift\ttcgen05.shift.cta_group::1.down taddr=32:8\n"
    "st tcgen05.st.sync.aligned.16x32bx2.x1.b32 warp=1 taddr=32:100 split=8\n"
    "ld tcgen05.ld.sync.aligned.32x32b.x8.b32 warp=-3 taddr=0:0 thread=17\n"
    "dump lanes=0:2 cols=4:8 cta=1\n";

TEST(TmemScriptTest, ParsesEveryStepKind) {
  absl::StatusOr<TmemScript> s = ParseTmemScript(kScript);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->peer);
  EXPECT_EQ(s->fill, 0xdeadbeefu);
  ASSERT_EQ(s->steps.size(), 7u);

  EXPECT_EQ(s->steps[0].verb, V::kFp6);
  EXPECT_EQ(s->steps[0].fp6, Fp6Container::kMid6);
  EXPECT_EQ(s->steps[0].line, 5);
  EXPECT_EQ(s->steps[0].text, "fp6 mid6");

  const TmemScriptStep& cp = s->steps[1];
  EXPECT_EQ(cp.verb, V::kCp);
  EXPECT_EQ(cp.inst.cta_group, tcgen05::CtaGroup::k2);
  EXPECT_EQ(cp.taddr, 0u);
  // start 0, LBO 2048 >> 4 = 0x80 at bits [29:16], SBO 128 >> 4 = 8 at bits
  // [45:32], the fixed constant 0b001 at bits [48:46].
  EXPECT_EQ(cp.desc, 0x0000400800800000u);
  EXPECT_EQ(s->steps[2].desc, 0x0000400800800000u);
  EXPECT_EQ(s->steps[2].taddr, 0x00010004u);

  EXPECT_EQ(s->steps[3].verb, V::kShift);
  EXPECT_EQ(s->steps[3].taddr, tcgen05::MakeTaddr(32, 8));

  const TmemScriptStep& st = s->steps[4];
  EXPECT_EQ(st.verb, V::kSt);
  EXPECT_EQ(st.warp, 1);
  EXPECT_EQ(st.inst.half_split_offset, 8);
  EXPECT_FALSE(st.thread.has_value());

  const TmemScriptStep& ld = s->steps[5];
  EXPECT_EQ(ld.verb, V::kLd);
  EXPECT_EQ(ld.warp, -3);  // the model checks the lanes a warp may access
  EXPECT_EQ(ld.thread, 17);
  EXPECT_EQ(ld.line, 10);

  const TmemScriptStep& dump = s->steps[6];
  EXPECT_EQ(dump.verb, V::kDump);
  EXPECT_EQ(dump.lane_begin, 0);
  EXPECT_EQ(dump.lane_end, 2);
  EXPECT_EQ(dump.column_begin, 4);
  EXPECT_EQ(dump.column_end, 8);
  EXPECT_EQ(dump.cta, 1);
}

TEST(TmemScriptTest, CanonicalTextRoundTrips) {
  absl::StatusOr<TmemScript> s = ParseTmemScript(kScript);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string text = TmemScriptText(*s);
  EXPECT_EQ(text,
            "peer\n"
            "fill 0xdeadbeef\n"
            "fp6 mid6\n"
            "cp tcgen05.cp.cta_group::2.128x256b taddr=0x00000000 "
            "desc=0x0000400800800000\n"
            "cp tcgen05.cp.cta_group::1.128x128b taddr=0x00010004 "
            "desc=0x0000400800800000\n"
            "shift tcgen05.shift.cta_group::1.down taddr=0x00200008\n"
            "st tcgen05.st.sync.aligned.16x32bx2.x1.b32 warp=1 "
            "taddr=0x00200064 split=8\n"
            "ld tcgen05.ld.sync.aligned.32x32b.x8.b32 warp=-3 taddr=0x00000000 "
            "thread=17\n"
            "dump lanes=0:2 cols=4:8 cta=1\n");
  absl::StatusOr<TmemScript> again = ParseTmemScript(text);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(TmemScriptText(*again), text);
}

TEST(TmemScriptTest, EmptyAndCommentOnlyScripts) {
  for (const char* text : {"", "\n\n", "# only a comment\n   \t\n"}) {
    absl::StatusOr<TmemScript> s = ParseTmemScript(text);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_FALSE(s->peer);
    EXPECT_EQ(s->fill, 0u);
    EXPECT_TRUE(s->steps.empty());
    EXPECT_EQ(TmemScriptText(*s), "");
  }
}

TEST(TmemScriptTest, ErrorsNameLineTextAndRule) {
  struct Case {
    const char* script;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"\n  frob  \n", absl::StatusCode::kInvalidArgument,
       "script line 2 'frob': unknown step 'frob'; expected peer, fp6, fill, "
       "cp, shift, st, "
       "ld or dump"},
      {"dump lanes=0:1 cols=0:1\npeer", absl::StatusCode::kFailedPrecondition,
       "script line 2 'peer': 'peer' and 'fill' must come before the first "
       "cp/shift/st/ld/dump"},
      {"fill 0x1 0x2 x=1", absl::StatusCode::kInvalidArgument,
       ""},  // extra keys ignored
      {"ld tcgen05.ld.sync.aligned.32x32b.x1.b32 warp=0x1 taddr=0:0",
       absl::StatusCode::kInvalidArgument,
       "script line 1 'ld tcgen05.ld.sync.aligned.32x32b.x1.b32 warp=0x1 "
       "taddr=0:0': warp: "
       "expected an integer, got '0x1'"},
      {"shift tcgen05.cp.cta_group::1.128x256b taddr=0:0",
       absl::StatusCode::kInvalidArgument,
       "'shift' step needs a tcgen05.shift spelling, got "
       "tcgen05.cp.cta_group::1.128x256b"},
      {"cp tcgen05.cp.cta_group::1.128x256b taddr=65536:0 desc=0",
       absl::StatusCode::kInvalidArgument,
       "taddr: expected LANE:COLUMN or 0xTADDR, got '65536:0'"},
      {"dump lanes=0:1 cols=-1:1", absl::StatusCode::kInvalidArgument,
       "cols: expected FIRST:END with FIRST < END, got '-1:1'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<TmemScript> s = ParseTmemScript(c.script);
    if (c.message[0] == '\0') {
      EXPECT_TRUE(s.ok()) << c.script << ": " << s.status();
      continue;
    }
    ASSERT_FALSE(s.ok()) << c.script;
    EXPECT_EQ(s.status().code(), c.code) << c.script;
    EXPECT_NE(s.status().message().find(c.message), absl::string_view::npos)
        << c.script << "\n  got: " << s.status().message();
  }
}

TEST(TmemScriptTest, FillKeepsTheLow32Bits) {
  absl::StatusOr<TmemScript> s = ParseTmemScript("fill 0x1234567890");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->fill, 0x34567890u);
}

}  // namespace
}  // namespace mxpack
