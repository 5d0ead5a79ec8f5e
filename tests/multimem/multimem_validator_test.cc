// Tests of the multimem spelling validator: the whole grammar is enumerated
// and compared with an independent transcription of the PTX ISA 9.7.9.14
// tables; a table of illegal spellings checks the rule each one violates.
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

// Independent legality oracle from the PTX syntax block.
bool Legal(const std::string& kind, const std::string& sem, const std::string& scope,
           const std::string& op, const std::string& acc, int vec, const std::string& t) {
  const bool integer = IsInt(t);
  if (integer && (vec != 1 || !acc.empty())) return false;
  if (!integer && !VecTable(vec).count(t)) return false;
  if (sem == "weak" && !scope.empty()) return false;
  if (kind == "ld_reduce") {
    if (!(sem.empty() || sem == "weak" || sem == "relaxed" || sem == "acquire")) return false;
    if (op.empty() || !OpTable(op, t)) return false;
    if (acc == "acc::f32" && !IsHalf(t)) return false;
    if (acc == "acc::f16" && !IsFp8(t)) return false;
    return true;
  }
  if (kind == "st") {
    if (!(sem.empty() || sem == "weak" || sem == "relaxed" || sem == "release")) return false;
    return op.empty() && acc.empty();
  }
  // red: no .weak form, no .acc_prec; float .redop = {.add}, .redtype =
  // {f16, f16x2, bf16, bf16x2, f32, f64}; integer forms use the op table.
  if (!(sem.empty() || sem == "relaxed" || sem == "release")) return false;
  if (!acc.empty() || op.empty()) return false;
  if (integer) return OpTable(op, t);
  return op == "add" && !IsFp8(t);
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
                    EXPECT_EQ(got->ToString(), s);
                    // Also accepted as a full instruction line.
                    EXPECT_TRUE(ParseMultimem("@p " + s + " r0, [a];").ok()) << s;
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
      {"multimem.ld_reduce.min.f32", MultimemRule::kOpType},
      {"multimem.ld_reduce.max.f64", MultimemRule::kOpType},
      {"multimem.ld_reduce.add.s64", MultimemRule::kOpType},
      {"multimem.ld_reduce.and.u32", MultimemRule::kOpType},
      {"multimem.ld_reduce.min.b32", MultimemRule::kOpType},
      {"multimem.ld_reduce.xor.f16x2", MultimemRule::kOpType},
      {"multimem.red.max.f64", MultimemRule::kOpType},  // PTX example, vs grammar
      {"multimem.red.min.f16x2", MultimemRule::kOpType},
      {"multimem.red.add.e4m3x4", MultimemRule::kOpType},
      {"multimem.red.add.v2.e5m2x2", MultimemRule::kOpType},
      {"multimem.ld_reduce.add.v2.u32", MultimemRule::kIntegerForm},
      {"multimem.ld_reduce.add.acc::f32.u32", MultimemRule::kIntegerForm},
      {"multimem.st.v2.b32", MultimemRule::kIntegerForm},
      {"multimem.st.add.f32", MultimemRule::kStForm},
      {"multimem.st.acc::f32.f16x2", MultimemRule::kStForm},
      {"multimem.red.add.acc::f32.f16x2", MultimemRule::kRedForm},
      {"multimem.red.weak.add.u32", MultimemRule::kSemantics},
      {"multimem.ld_reduce.release.add.u32", MultimemRule::kSemantics},
      {"multimem.st.acquire.b32", MultimemRule::kSemantics},
      {"multimem.red.acquire.add.u32", MultimemRule::kSemantics},
      {"multimem.ld_reduce.weak.gpu.add.u32", MultimemRule::kSemantics},
      {"multimem.ld_reduce.gpu.relaxed.add.u32", MultimemRule::kQualifierOrder},
      {"multimem.ld_reduce.add.global.u32", MultimemRule::kQualifierOrder},
      {"multimem.ld_reduce.v4.add.f32", MultimemRule::kQualifierOrder},
      {"multimem.ld_reduce.add.v4.acc::f16.e4m3", MultimemRule::kQualifierOrder},
      {"multimem.ld_reduce.relaxed.relaxed.add.u32", MultimemRule::kQualifierOrder},
      {"multimem.ld_reduce.add.f32.v4", MultimemRule::kQualifierOrder},
      {"multimem.ld_reduce.add", MultimemRule::kSyntax},
      {"multimem.ld_reduce.u32", MultimemRule::kSyntax},
      {"multimem.red.f32", MultimemRule::kSyntax},
      {"multimem.ld.add.u32", MultimemRule::kSyntax},
      {"multimem.ld_reduce.add.v16.e4m3", MultimemRule::kSyntax},
      {"multimem.ld_reduce.add.acc::f64.f32", MultimemRule::kSyntax},
      {"multimem.ld_reduce.shared.add.u32", MultimemRule::kSyntax},
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
  EXPECT_NE(r.text.find("unknown instruction family"), std::string::npos);

  // A new family is one registration away.
  RegisterPtxFamily({"fake.", "fake family", [](absl::string_view s, absl::string_view) {
                       PtxCheckResult res;
                       res.ok = s == "fake.ok";
                       res.text = "fake";
                       return res;
                     }});
  EXPECT_TRUE(CheckPtx("@!p fake.ok r1;").ok);
  EXPECT_FALSE(CheckPtx("fake.bad").ok);
  EXPECT_EQ(PtxOpcodeOf("  @p multimem.st.v4.f32 [a], {r0,r1,r2,r3};"), "multimem.st.v4.f32");
}

}  // namespace
}  // namespace mxpack
