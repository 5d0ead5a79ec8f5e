// Tests of the multimem spelling validator: the whole grammar is enumerated
// and compared with an independent transcription of the PTX ISA 9.7.9.14
// tables as ptxas 13 applies them (docs/ptx_check.md; tests/ptx/ compares
// with ptxas itself); a table of illegal spellings checks the rule each one
// violates.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mxpack/multimem.h"
#include "mxpack/ptx_check.h"

namespace mxpack {
namespace {

// PTX "valid usage of .vec and base floating-point type" table, verbatim.
const std::set<std::string>& VecTable(int vec) {
  static const std::set<std::string> kNone = {"f16x2", "bf16x2", "f32", "f64", "e5m2x4", "e4m3x4"};
  static const std::set<std::string> kV2 = {"f16", "f16x2", "bf16", "bf16x2", "f32",
                                            "e5m2x2", "e5m2x4", "e4m3x2", "e4m3x4"};
  static const std::set<std::string> kV4 = {"f16",  "f16x2",  "bf16",   "bf16x2", "f32",   "e5m2",
                                            "e5m2x2", "e5m2x4", "e4m3", "e4m3x2", "e4m3x4"};
  static const std::set<std::string> kV8 = {"f16", "bf16", "e5m2", "e4m3", "e5m2x2", "e4m3x2"};
  return vec == 1 ? kNone : vec == 2 ? kV2 : vec == 4 ? kV4 : kV8;
}

// PTX ".op / base type" table, verbatim.
bool OpTable(const std::string& op, const std::string& t) {
  static const std::set<std::string> kAdd = {"u32", "u64", "s32", "f16", "f16x2", "bf16", "bf16x2", "f32",
                                             "f64", "e5m2", "e5m2x2", "e5m2x4", "e4m3", "e4m3x2", "e4m3x4"};
  static const std::set<std::string> kBit = {"b32", "b64"};
  static const std::set<std::string> kMinMax = {"u32", "s32", "u64", "s64", "f16", "f16x2", "bf16",
                                                "bf16x2", "e5m2", "e5m2x2", "e5m2x4", "e4m3", "e4m3x2", "e4m3x4"};
  if (op == "add") return kAdd.count(t) > 0;
  if (op == "and" || op == "or" || op == "xor") return kBit.count(t) > 0;
  if (op == "min" || op == "max") return kMinMax.count(t) > 0;
  return false;
}

bool IsInt(const std::string& t) { return t.size() == 3 && (t[0] == 'b' || t[0] == 'u' || t[0] == 's'); }
bool IsFp8(const std::string& t) { return t[0] == 'e'; }
bool IsHalf(const std::string& t) { return t.rfind("f16", 0) == 0 || t.rfind("bf16", 0) == 0; }

// Independent legality oracle: the PTX syntax block and tables, with the
// differences ptxas 13 makes (docs/ptx_check.md): a sem needs a scope and a
// scope a sem; st/red accept and ignore .acc_prec; red float .min/.max on
// the f16/bf16 forms with .vec; red has no fp8 types.
bool Legal(const std::string& kind, const std::string& sem, const std::string& scope,
           const std::string& op, const std::string& acc, int vec, const std::string& t) {
  const bool integer = IsInt(t);
  if (integer && vec != 1) return false;
  if (!integer && !VecTable(vec).count(t)) return false;
  if (sem == "weak" && !scope.empty()) return false;
  if ((sem.empty() || sem == "weak") != scope.empty()) return false;
  if (kind == "ld_reduce") {
    if (!(sem.empty() || sem == "weak" || sem == "relaxed" || sem == "acquire")) return false;
    if (op.empty() || !OpTable(op, t)) return false;
    if (!acc.empty() && op != "add") return false;
    if (acc == "acc::f32" && !IsHalf(t)) return false;
    if (acc == "acc::f16" && !IsFp8(t)) return false;
    return true;
  }
  if (kind == "st") {
    if (!(sem.empty() || sem == "weak" || sem == "relaxed" || sem == "release")) return false;
    return op.empty();
  }
  if (!(sem.empty() || sem == "relaxed" || sem == "release")) return false;
  if (op.empty() || IsFp8(t)) return false;
  if (integer) return OpTable(op, t);
  if (op == "add") return true;
  return (op == "min" || op == "max") && IsHalf(t) && vec != 1;
}

TEST(multimemValidator, EnumeratesTheWholeGrammar) {
  const std::vector<std::string> kinds = {"ld_reduce", "st", "red"};
  const std::vector<std::string> sems = {"", "weak", "relaxed", "acquire", "release"};
  const std::vector<std::string> scopes = {"", "cta", "cluster", "gpu", "sys"};
  const std::vector<std::string> ops = {"", "add", "min", "max", "and", "or", "xor"};
  const std::vector<std::string> accs = {"", "acc::f32", "acc::f16"};
  const std::vector<std::string> types = {"b32", "b64", "u32", "u64", "s32", "s64",
                                          "f16", "f16x2", "bf16", "bf16x2", "f32", "f64",
                                          "e5m2", "e5m2x2", "e5m2x4", "e4m3", "e4m3x2", "e4m3x4"};
  size_t legal = 0, total = 0;
  size_t legal_by_kind[3] = {};
  for (size_t k = 0; k < kinds.size(); ++k) {
    for (const auto& sem : sems) {
      for (const auto& scope : scopes) {
        for (int global = 0; global < 2; ++global) {
          for (const auto& op : ops) {
            for (const auto& acc : accs) {
              for (int vec : {1, 2, 4, 8}) {
                for (const auto& t : types) {
                  std::string s = "multimem." + kinds[k];
                  if (!sem.empty()) s += "." + sem;
                  if (!scope.empty()) s += "." + scope;
                  if (global) s += ".global";
                  if (!op.empty()) s += "." + op;
                  if (!acc.empty()) s += "." + acc;
                  if (vec != 1) s += ".v" + std::to_string(vec);
                  s += "." + t;
                  const bool want = Legal(kinds[k], sem, scope, op, acc, vec, t);
                  absl::StatusOr<MultimemInstruction> got = ParseMultimem(s);
                  ASSERT_EQ(got.ok(), want)
                      << s << ": " << (got.ok() ? "accepted" : got.status().message());
                  ++total;
                  if (want) {
                    ++legal;
                    ++legal_by_kind[k];
                    // st / red drop the .acc_prec ptxas ignores.
                    EXPECT_EQ(got->ToString(), kinds[k] == "ld_reduce" || acc.empty()
                                                   ? s
                                                   : s.replace(s.find("." + acc),
                                                               acc.size() + 1, ""));
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(total, 3u * 5 * 5 * 2 * 7 * 3 * 4 * 18);
  EXPECT_GT(legal_by_kind[0], 0u);
  EXPECT_GT(legal_by_kind[1], 0u);
  EXPECT_GT(legal_by_kind[2], 0u);
  RecordProperty("legal", static_cast<int>(legal));
}

struct Bad {
  const char* spelling;
  MultimemRule rule;
};

TEST(multimemValidator, RejectsWithTheRightRule) {
  const Bad kBad[] = {
      {"multimem.ld_reduce.add.f16", MultimemRule::kVecSize},          // 16 bits
      {"multimem.ld_reduce.add.v8.f32", MultimemRule::kVecSize},       // 256 bits
      {"multimem.ld_reduce.add.v2.e4m3", MultimemRule::kVecSize},      // 16 bits
      {"multimem.ld_reduce.add.v8.e4m3x4", MultimemRule::kVecSize},    // 256 bits
      {"multimem.st.v8.f16x2", MultimemRule::kVecSize},
      {"multimem.red.add.bf16", MultimemRule::kVecSize},
      {"multimem.ld_reduce.add.v2.f64", MultimemRule::kF64Vec},
      {"multimem.red.add.v2.f64", MultimemRule::kF64Vec},
      {"multimem.ld_reduce.add.acc::f32.v2.f32", MultimemRule::kAccType},
      {"multimem.ld_reduce.add.acc::f32.v4.e4m3", MultimemRule::kAccType},
      {"multimem.ld_reduce.add.acc::f16.v2.f16", MultimemRule::kAccType},
      {"multimem.ld_reduce.add.acc::f16.f64", MultimemRule::kAccType},
      {"multimem.ld_reduce.min.acc::f32.v2.bf16", MultimemRule::kAccType},
      {"multimem.ld_reduce.min.f32", MultimemRule::kOpType},
      {"multimem.ld_reduce.max.f64", MultimemRule::kOpType},
      {"multimem.ld_reduce.add.s64", MultimemRule::kOpType},
      {"multimem.ld_reduce.and.u32", MultimemRule::kOpType},
      {"multimem.ld_reduce.min.b32", MultimemRule::kOpType},
      {"multimem.ld_reduce.xor.f16x2", MultimemRule::kOpType},
      {"multimem.red.max.f64", MultimemRule::kOpType},
      {"multimem.red.min.v2.f32", MultimemRule::kOpType},
      {"multimem.red.min.f16x2", MultimemRule::kRedForm},  // .min needs .vec
      {"multimem.red.max.bf16x2", MultimemRule::kRedForm},
      {"multimem.red.add.e4m3x4", MultimemRule::kRedForm},
      {"multimem.red.add.v2.e5m2x2", MultimemRule::kRedForm},
      {"multimem.ld_reduce.add.v2.u32", MultimemRule::kIntegerForm},
      {"multimem.ld_reduce.add.acc::f32.u32", MultimemRule::kIntegerForm},
      {"multimem.st.v2.b32", MultimemRule::kIntegerForm},
      {"multimem.st.add.f32", MultimemRule::kStForm},
      {"multimem.red.weak.add.u32", MultimemRule::kSemantics},
      {"multimem.ld_reduce.release.gpu.add.u32", MultimemRule::kSemantics},
      {"multimem.st.acquire.gpu.b32", MultimemRule::kSemantics},
      {"multimem.red.acquire.gpu.add.u32", MultimemRule::kSemantics},
      {"multimem.ld_reduce.weak.gpu.add.u32", MultimemRule::kSemantics},
      // ptxas 13: a scope needs a sem and a sem needs a scope.
      {"multimem.st.cta.bf16x2", MultimemRule::kSemantics},
      {"multimem.ld_reduce.sys.add.bf16x2", MultimemRule::kSemantics},
      {"multimem.st.relaxed.global.u64", MultimemRule::kSemantics},
      {"multimem.red.release.min.s32", MultimemRule::kSemantics},
      {"multimem.ld_reduce.acquire.add.u32", MultimemRule::kSemantics},
      {"multimem.ld_reduce.relaxed.relaxed.gpu.add.u32", MultimemRule::kDuplicate},
      {"multimem.ld_reduce.relaxed.acquire.gpu.add.u32", MultimemRule::kDuplicate},
      {"multimem.ld_reduce.relaxed.gpu.sys.add.u32", MultimemRule::kDuplicate},
      {"multimem.ld_reduce.add.min.u32", MultimemRule::kDuplicate},
      {"multimem.ld_reduce.global.global.add.u32", MultimemRule::kDuplicate},
      {"multimem.ld_reduce.add.v4.v2.f32", MultimemRule::kDuplicate},
      {"multimem.ld_reduce.add.f32.f32", MultimemRule::kDuplicate},
      {"multimem.st.acc::f32.acc::f16.f32", MultimemRule::kDuplicate},
      {"multimem.ld_reduce.add", MultimemRule::kSyntax},
      {"multimem.ld_reduce.u32", MultimemRule::kSyntax},
      {"multimem.red.f32", MultimemRule::kSyntax},
      {"multimem.ld.add.u32", MultimemRule::kSyntax},
      {"multimem.ld_reduce.add.v16.e4m3", MultimemRule::kSyntax},
      {"multimem.ld_reduce.add.acc::f64.f32", MultimemRule::kSyntax},
      {"multimem.ld_reduce.shared.add.u32", MultimemRule::kSyntax},
      {"multimem.ld_reduce.add.f32 %r1, [%rd1];;", MultimemRule::kSyntax},
      // Operands.
      {"multimem.ld_reduce.add.f32 garbage garbage ;;; )))", MultimemRule::kSyntax},
      {"multimem.ld_reduce.add.f32 garbage garbage;", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.f32 %r1;", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.f32 %r1, [%rd1], %r2;", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.f32 [%rd1], %r1;", MultimemRule::kOperand},
      {"multimem.st.f32 %r1, [%rd1];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.f32 %rd1, [%rd1];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.f32 %r1, [%r2];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.f32 %r1, [%rd1-8];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.f32 %r1, [8];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.f32 _, [%rd1];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.v2.f32 {_, _}, [%rd1];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.v2.f32 %r1, [%rd1];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.v2.f32 {%r1}, [%rd1];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.v2.f32 {%r1, %r2, %r3}, [%rd1];", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.u32 {%r1}, [%rd1];", MultimemRule::kOperand},
      {"multimem.red.add.f32 [%rd1], {%r1};", MultimemRule::kOperand},
      {"multimem.st.v2.f32 [%rd1], {%r1, _};", MultimemRule::kOperand},
      {"multimem.st.v2.f32 [%rd1], {1.0, 2.0};", MultimemRule::kOperand},
      {"multimem.st.v4.e4m3 [%rd1], {%rs1, %rs2, %rs3, %rs4};", MultimemRule::kOperand},
      {"multimem.red.add.v2.bf16 [%rd1], {%h1, %h2};", MultimemRule::kOperand},
      {"multimem.st.u32 [%rd1], %f1;", MultimemRule::kOperand},
      {"multimem.ld_reduce.add.U32", MultimemRule::kSyntax},
      {"ld.global.u32", MultimemRule::kSyntax},
      {"", MultimemRule::kSyntax},
  };
  for (const Bad& b : kBad) {
    MultimemRule rule = MultimemRule::kTarget;
    absl::StatusOr<MultimemInstruction> got = ParseMultimem(b.spelling, &rule);
    ASSERT_FALSE(got.ok()) << b.spelling;
    EXPECT_EQ(rule, b.rule) << b.spelling << ": " << got.status().message();
    EXPECT_NE(got.status().message().find(
                  absl::StrCat("[", MultimemRuleName(b.rule), "]")),
              std::string::npos)
        << got.status().message();
  }
}

TEST(multimemValidator, PtxExamplesAndDefaults) {
  // Examples of PTX 9.7.9.14 (all but the red.max.f64 one, see above).
  for (const char* s : {
           "multimem.ld_reduce.and.b32                    val1_b32, [addr1];",
           "multimem.ld_reduce.acquire.gpu.global.add.u32 val2_u32, [addr2];",
           "multimem.st.relaxed.gpu.b32                [addr3], val3_b32;",
           "multimem.st.release.cta.global.u32         [addr4], val4_u32;",
           "multimem.red.release.cta.global.add.v4.f32 [addr6], {val6, val7, val8, val9};",
           "multimem.ld_reduce.add.acc::f32.v2.f16x2   {val_10, val_11}, [addr7];",
           "multimem.ld_reduce.relaxed.cta.min.v2.e4m3x2 {val_12, val_13}, [addr8];",
           "multimem.ld_reduce.relaxed.cta.add.v4.e4m3   {val_14, val_15, val_16, val_17}, [addr9];",
           "multimem.ld_reduce.add.acc::f16.v4.e5m2      {val_18, val_19, val_20, val_21}, [addr10];",
       }) {
    EXPECT_TRUE(ParseMultimem(s).ok()) << s << ": " << ParseMultimem(s).status();
  }
  auto in = ParseMultimem("multimem.red.add.v2.f16x2");
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->EffectiveSem(), MemSem::kRelaxed);
  EXPECT_EQ(in->EffectiveScope(), MemScope::kSys);
  EXPECT_EQ(in->AccessBytes(), 8);
  EXPECT_EQ(in->AccessElements(), 4);
  in = ParseMultimem("multimem.ld_reduce.add.acc::f16.v8.e4m3x2");
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->EffectiveSem(), MemSem::kWeak);
  EXPECT_EQ(in->AccessBytes(), 16);
  EXPECT_EQ(in->AccessElements(), 16);
}

TEST(multimemValidator, IsaAndTargets) {
  auto isa = [](const char* s) { return MultimemMinPtxIsa(*ParseMultimem(s)); };
  EXPECT_EQ(isa("multimem.ld_reduce.add.u32"), 81);
  EXPECT_EQ(isa("multimem.ld_reduce.add.acc::f32.v2.f16x2"), 82);
  EXPECT_EQ(isa("multimem.st.v4.e4m3"), 86);
  EXPECT_EQ(isa("multimem.ld_reduce.add.acc::f16.v4.e5m2"), 86);

  struct Case {
    const char* spelling;
    const char* target;
    int isa;  // 0: illegal on that target
  };
  const Case kCases[] = {
      {"multimem.ld_reduce.add.u32", "sm_90", 81},
      {"multimem.ld_reduce.add.u32", "sm_90a", 81},
      {"multimem.ld_reduce.add.u32", "sm_80", 0},
      {"multimem.ld_reduce.add.u32", "sm_89", 0},
      {"multimem.ld_reduce.add.u32", "sm_100", 86},
      {"multimem.ld_reduce.add.u32", "sm_110", 90},
      {"multimem.ld_reduce.add.acc::f32.v2.f16x2", "sm_90", 82},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_90", 0},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_90a", 0},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_100", 0},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_100a", 86},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_101a", 86},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_110a", 90},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_120a", 87},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_121a", 88},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_100f", 88},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_103f", 88},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_103a", 88},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_101f", 88},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_110f", 90},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_120f", 0},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_121f", 0},
      {"multimem.ld_reduce.add.v4.e4m3", "sm_120", 0},
      {"multimem.ld_reduce.add.acc::f16.v4.e5m2", "sm_100a", 86},
      {"multimem.ld_reduce.add.acc::f16.v4.e5m2", "sm_90", 0},
      {"multimem.st.e4m3x4", "sm_103", 0},
  };
  for (const Case& c : kCases) {
    auto in = ParseMultimem(c.spelling);
    ASSERT_TRUE(in.ok()) << c.spelling;
    auto t = ParsePtxTarget(c.target);
    ASSERT_TRUE(t.ok()) << c.target;
    EXPECT_EQ(t->ToString(), c.target);
    absl::StatusOr<int> got = CheckMultimemTarget(*in, *t);
    if (c.isa == 0) {
      EXPECT_FALSE(got.ok()) << c.spelling << " on " << c.target;
      if (!got.ok()) {
        EXPECT_NE(got.status().message().find("[target]"), std::string::npos);
      }
    } else {
      ASSERT_TRUE(got.ok()) << c.spelling << " on " << c.target << ": " << got.status();
      EXPECT_EQ(*got, c.isa) << c.spelling << " on " << c.target;
    }
  }
  EXPECT_FALSE(ParsePtxTarget("sm_").ok());
  EXPECT_FALSE(ParsePtxTarget("gfx90a").ok());
  EXPECT_FALSE(ParsePtxTarget("sm_100x").ok());
}

TEST(multimemPtxCheck, DispatchesByPrefix) {
  PtxCheckResult r = CheckPtx("multimem.ld_reduce.add.acc::f16.v4.e4m3 {a,b,c,d}, [p];");
  EXPECT_TRUE(r.ok) << r.text;
  EXPECT_NE(r.text.find("acc:       f16"), std::string::npos) << r.text;
  r = CheckPtx("multimem.ld_reduce.add.acc::f16.v4.e4m3", "sm_90");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text.find("[target]"), std::string::npos) << r.text;
  r = CheckPtx("multimem.ld_reduce.add.acc::f16.v4.e4m3", "sm_100f");
  EXPECT_TRUE(r.ok) << r.text;
  EXPECT_NE(r.text.find("PTX ISA 8.8"), std::string::npos) << r.text;
  r = CheckPtx("multimem.ld_reduce.min.f32");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text.find("[op-type]"), std::string::npos) << r.text;
  r = CheckPtx("tcgen05.mma.cta_group::1.kind::f16");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.usage_error) << r.text;
  r = CheckPtx("wgmma.fence.sync.aligned");
  EXPECT_TRUE(r.usage_error);
  EXPECT_NE(r.text.find("unknown instruction family"), std::string::npos);

  // A new family is one registration away.
  RegisterPtxFamily({"fake.", "fake family", [](absl::string_view s, absl::string_view) {
                       PtxCheckResult res;
                       res.ok = PtxOpcodeOf(s) == "fake.ok";
                       res.text = "fake";
                       return res;
                     }});
  EXPECT_TRUE(CheckPtx("@!p fake.ok r1;").ok);
  EXPECT_FALSE(CheckPtx("fake.bad").ok);
  EXPECT_EQ(PtxOpcodeOf("  @p multimem.st.v4.f32 [a], {r0,r1,r2,r3};"), "multimem.st.v4.f32");
}

// Where ptxas 13 accepts what the PTX ISA text does not, ptx-check accepts
// and names the text's rule.
TEST(multimemPtxCheck, FollowsPtxasAndSaysWhereTheTextDiffers) {
  struct Case {
    const char* spelling;
    const char* note;  // Substring of the verdict.
  };
  for (const Case& c : std::vector<Case>{
           {"multimem.red.min.v2.bf16x2 [%rd1], {%r1, %r2};",
            "ptxas 13 allows .min on .bf16x2 with .vec although the PTX ISA "
            ".redop table lists only .add"},
           {"multimem.red.max.v4.f16", "allows .max on .f16 with .vec"},
           {"multimem.ld_reduce.f32.add.global %r1, [%rd1];", "in any order"},
           {"multimem.st.acc::f32.v2.f32", "accepts and ignores .acc::f32 on multimem.st"},
           {"multimem.red.add.acc::f16.u32", "accepts and ignores .acc::f16 on multimem.red"},
           {"multimem.ld_reduce.add.bf16x2 %p1, [%rd1];", "accepts the .pred register %p1"},
       }) {
    const PtxCheckResult r = CheckPtx(c.spelling, "sm_100a");
    EXPECT_TRUE(r.ok) << c.spelling << ": " << r.text;
    EXPECT_NE(r.text.find(c.note), std::string::npos) << c.spelling << ": " << r.text;
  }
  // The reverse: ptxas rejects a sem without a scope and a scope without a
  // sem, which the PTX syntax block writes as independent optional parts.
  for (const char* s : {"multimem.st.cta.bf16x2", "multimem.ld_reduce.sys.add.bf16x2",
                        "multimem.st.relaxed.global.u64", "multimem.red.release.min.s32"}) {
    const PtxCheckResult r = CheckPtx(s, "sm_100a");
    EXPECT_FALSE(r.ok) << s;
    EXPECT_FALSE(r.usage_error) << s;
    EXPECT_NE(r.text.find("[semantics]"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("ptxas 13"), std::string::npos) << r.text;
  }
}

TEST(multimemPtxCheck, OperandsAndUsageErrors) {
  PtxCheckResult r = CheckPtx("multimem.ld_reduce.add.f32 garbage garbage ;;; )))");
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.usage_error);
  r = CheckPtx("multimem.ld_reduce.add.v4.f32 {%r1, %r2, %r3, %r4}, [%rd1+16];", "sm_90");
  EXPECT_TRUE(r.ok) << r.text;
  r = CheckPtx("multimem.ld_reduce.add.v4.f32 {%r1, %r2, %r3}, [%rd1+16];", "sm_90");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text.find("expected 4 elements"), std::string::npos) << r.text;
  r = CheckPtx("multimem.st.v2.f16 [%rd1], {%rs1, %r2};", "sm_90");
  EXPECT_NE(r.text.find("expected a 16-bit register"), std::string::npos) << r.text;
  r = CheckPtx("multimem.st.f32 [%rd1], 1.0;", "sm_90");
  EXPECT_TRUE(r.ok) << r.text;
  // Not modelled, unknown target, unmodelled instruction: usage errors.
  r = CheckPtx("multimem.st.v2.f16 [%rd1], {%rs1, 0x3c00};", "sm_90");
  EXPECT_TRUE(r.usage_error) << r.text;
  r = CheckPtx("multimem.st.f32", "sm_101a");
  EXPECT_TRUE(r.usage_error) << r.text;
  EXPECT_NE(r.text.find("renamed sm_110"), std::string::npos) << r.text;
  r = CheckPtx("multimem.st.f32", "sm_999");
  EXPECT_TRUE(r.usage_error) << r.text;
  r = CheckPtx("multimem.st.f32", "bogus");
  EXPECT_TRUE(r.usage_error) << r.text;
  r = CheckPtx("multimem.cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 16;");
  EXPECT_TRUE(r.usage_error) << r.text;
  // Known targets where multimem is illegal are not usage errors.
  r = CheckPtx("multimem.st.f32", "sm_80");
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.usage_error);
  // fp8 targets.
  for (const char* t : {"sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f",
                        "sm_120a", "sm_121a"}) {
    EXPECT_TRUE(CheckPtx("multimem.st.v4.e4m3", t).ok) << t;
  }
  for (const char* t : {"sm_90", "sm_90a", "sm_100", "sm_103", "sm_120", "sm_120f", "sm_121f"}) {
    r = CheckPtx("multimem.st.v4.e4m3", t);
    EXPECT_FALSE(r.ok) << t;
    EXPECT_FALSE(r.usage_error) << t;
  }
}

}  // namespace
}  // namespace mxpack
