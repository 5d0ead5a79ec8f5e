// ptx-check against the installed ptxas: every verdict of CheckPtx on a
// deterministic sample of multimem spellings (opcodes in every qualifier,
// shuffled qualifier orders, operand variants) and on every tcgen05
// cp/shift/ld/st combination must equal ptxas's (docs/ptx_check.md).
//
// Many instructions go into one kernel per ptxas run. ptxas reports each
// failing line's number; the failing lines are removed and the rest is
// assembled again until it assembles cleanly (a parse error can hide the
// lines after it), so one run judges thousands of lines.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "mxpack/ptx_check.h"

namespace mxpack {
namespace {

std::string FindPtxas() {
  if (const char* env = std::getenv("MXPACK_PTXAS"); env && *env) {
    return access(env, X_OK) == 0 ? env : "";
  }
  std::vector<std::string> dirs = {"/usr/local/cuda/bin"};
  if (const char* path = std::getenv("PATH")) {
    for (absl::string_view d : absl::StrSplit(path, ':')) dirs.emplace_back(d);
  }
  for (const std::string& d : dirs) {
    const std::string p = d + "/ptxas";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

#define MXPACK_REQUIRE_PTXAS(var)                                             \
  const std::string var = FindPtxas();                                        \
  if (var.empty()) {                                                          \
    GTEST_SKIP() << "ptxas not found (MXPACK_PTXAS, /usr/local/cuda/bin, "    \
                    "PATH): the ptxas agreement test needs the CUDA toolkit"; \
  }

// Registers the lines may use, named as docs/ptx_check.md describes.
constexpr char kDecls[] =
    "  .reg .b8 %rc<16>; .reg .b16 %rs<16>; .reg .b32 %r<600>;"
    " .reg .b64 %rd<16>; .reg .f32 %f<16>; .reg .f64 %fd<16>;"
    " .reg .f16 %h<16>; .reg .f16x2 %hh<16>; .reg .pred %p<16>;\n";

// Returns, for each line, whether ptxas assembles it on `target`.
std::vector<bool> PtxasLegal(const std::string& ptxas,
                             const std::vector<std::string>& lines,
                             const std::string& target) {
  char dir[] = "/tmp/mxpack_ptxas_XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/t.ptx";
  const std::string header =
      absl::StrCat(".version 9.0\n.target ", target,
                   "\n.address_size 64\n.visible .entry k() {\n", kDecls);
  const int first_line = 6;  // Line number of the first instruction.
  std::vector<bool> legal(lines.size(), true);
  std::vector<size_t> pending(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) pending[i] = i;
  for (int round = 0; !pending.empty(); ++round) {
    {
      std::ofstream out(file);
      out << header;
      for (size_t i : pending) out << "  " << lines[i] << "\n";
      out << "  ret;\n}\n";
    }
    const std::string cmd =
        absl::StrCat(ptxas, " -arch=", target, " ", file, " -o /dev/null 2>&1");
    FILE* p = popen(cmd.c_str(), "r");
    std::string output;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) output.append(buf, n);
    const int rc = pclose(p);
    // "ptxas t.ptx, line 12; error   : ..." (also "fatal" for parse errors);
    // "... on line '12' ..." for some warnings that turn fatal.
    std::set<size_t> bad, warned;
    for (absl::string_view l : absl::StrSplit(output, '\n')) {
      size_t at = l.find(", line ");
      const bool warning = l.find("; warning") != absl::string_view::npos;
      size_t num_at = std::string::npos;
      if (at != absl::string_view::npos) {
        num_at = at + 7;
      } else if ((at = l.find("on line '")) != absl::string_view::npos) {
        num_at = at + 9;
      }
      if (num_at == std::string::npos) continue;
      size_t end = num_at;
      while (end < l.size() && l[end] >= '0' && l[end] <= '9') ++end;
      int line = 0;
      if (!absl::SimpleAtoi(l.substr(num_at, end - num_at), &line)) continue;
      const long idx = static_cast<long>(line) - first_line;
      if (idx < 0 || idx >= static_cast<long>(pending.size())) continue;
      (warning ? warned : bad).insert(static_cast<size_t>(idx));
    }
    if (rc == 0 && bad.empty()) break;
    if (bad.empty()) bad = warned;
    if (bad.empty()) {
      ADD_FAILURE() << "ptxas failed without a line number:\n" << output;
      break;
    }
    std::vector<size_t> rest;
    for (size_t j = 0; j < pending.size(); ++j) {
      if (bad.count(j)) {
        legal[pending[j]] = false;
      } else {
        rest.push_back(pending[j]);
      }
    }
    pending.swap(rest);
  }
  std::remove(file.c_str());
  rmdir(dir);
  return legal;
}

// Compares CheckPtx with ptxas on every line; lines CheckPtx does not model
// (usage_error) fail the test too. Returns the number of lines compared.
size_t Compare(const std::string& ptxas, const std::vector<std::string>& lines,
               const std::string& target) {
  const std::vector<bool> want = PtxasLegal(ptxas, lines, target);
  size_t mismatches = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const PtxCheckResult got = CheckPtx(lines[i], target);
    if (got.ok != want[i] || got.usage_error) {
      if (++mismatches <= 25) {
        ADD_FAILURE() << target << ": " << lines[i]
                      << "\n  ptxas: " << (want[i] ? "legal" : "illegal")
                      << "\n  ptx-check: " << got.text;
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << lines.size() << " lines on " << target;
  return lines.size();
}

// ---------------------------------------------------------------------------
// multimem.

const std::vector<std::string> kKinds = {"ld_reduce", "st", "red"};
const std::vector<std::string> kSems = {"", "weak", "relaxed", "acquire",
                                        "release"};
const std::vector<std::string> kScopes = {"", "cta", "cluster", "gpu", "sys"};
const std::vector<std::string> kSs = {"", "global"};
const std::vector<std::string> kOps = {"",    "add", "min", "max",
                                       "and", "or",  "xor"};
const std::vector<std::string> kAccs = {"", "acc::f32", "acc::f16"};
const std::vector<int> kVecs = {1, 2, 4, 8};
const std::vector<std::pair<std::string, int>> kTypes = {
    {"b32", 32}, {"b64", 64},    {"u32", 32},   {"u64", 64},    {"s32", 32},
    {"s64", 64}, {"f16", 16},    {"f16x2", 32}, {"bf16", 16},   {"bf16x2", 32},
    {"f32", 32}, {"f64", 64},    {"e5m2", 8},   {"e5m2x2", 16}, {"e5m2x4", 32},
    {"e4m3", 8}, {"e4m3x2", 16}, {"e4m3x4", 32}};
constexpr size_t kGrammarSize = 3 * 5 * 5 * 2 * 7 * 3 * 4 * 18;

struct Spelling {
  std::string kind;
  std::vector<std::string> quals;  // In PTX syntax order.
  int vec = 1;
  int bits = 32;
};

// The i-th spelling of the whole grammar in PTX syntax order (mixed radix).
Spelling NthSpelling(size_t i) {
  Spelling s;
  const auto& [type, bits] = kTypes[i % 18];
  i /= 18;
  s.vec = kVecs[i % 4];
  i /= 4;
  const std::string& acc = kAccs[i % 3];
  i /= 3;
  const std::string& op = kOps[i % 7];
  i /= 7;
  const std::string& ss = kSs[i % 2];
  i /= 2;
  const std::string& scope = kScopes[i % 5];
  i /= 5;
  const std::string& sem = kSems[i % 5];
  i /= 5;
  s.kind = kKinds[i % 3];
  for (const std::string* q : {&sem, &scope, &ss, &op, &acc}) {
    if (!q->empty()) s.quals.push_back(*q);
  }
  if (s.vec != 1) s.quals.push_back(absl::StrCat("v", s.vec));
  s.quals.push_back(type);
  s.bits = bits;
  return s;
}

std::string RegOfBits(int bits, int n) {
  switch (bits) {
    case 8:
      return absl::StrCat("%rc", n);
    case 16:
      return absl::StrCat("%rs", n);
    case 64:
      return absl::StrCat("%rd", n);
    default:
      return absl::StrCat("%r", n);
  }
}

// The line with well-formed operands: untyped registers of the type's width,
// braces with .vec registers, a 64-bit address register.
std::string Line(const Spelling& s) {
  std::string value;
  if (s.vec == 1) {
    value = RegOfBits(s.bits, 1);
  } else {
    std::vector<std::string> regs;
    for (int k = 0; k < s.vec; ++k) regs.push_back(RegOfBits(s.bits, k + 1));
    value = absl::StrCat("{", absl::StrJoin(regs, ", "), "}");
  }
  const std::string op =
      absl::StrCat("multimem.", s.kind, ".", absl::StrJoin(s.quals, "."));
  return s.kind == "ld_reduce" ? absl::StrCat(op, " ", value, ", [%rd9];")
                               : absl::StrCat(op, " [%rd9], ", value, ";");
}

// Deterministic generator (64-bit LCG, Knuth's MMIX constants).
struct Lcg {
  uint64_t s;
  uint32_t Next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 33);
  }
  size_t Below(size_t n) { return Next() % n; }
};

const std::vector<std::string> kTargets = {"sm_90", "sm_100a", "sm_100f"};

// Every 29th spelling of the grammar in syntax order (29 is prime to every
// radix, so every qualifier value appears in every position), plus 1,500
// spellings with shuffled qualifiers and 300 with a duplicated qualifier.
std::vector<std::string> MultimemOpcodeSample() {
  std::vector<std::string> lines;
  for (size_t i = 0; i < kGrammarSize; i += 29)
    lines.push_back(Line(NthSpelling(i)));
  Lcg rng{12345};
  for (int k = 0; k < 1500; ++k) {
    Spelling s = NthSpelling(rng.Below(kGrammarSize));
    for (size_t j = s.quals.size(); j > 1; --j) {
      std::swap(s.quals[j - 1], s.quals[rng.Below(j)]);
    }
    lines.push_back(Line(s));
  }
  for (int k = 0; k < 300; ++k) {
    Spelling s = NthSpelling(rng.Below(kGrammarSize));
    const std::string dup = s.quals[rng.Below(s.quals.size())];
    s.quals.insert(s.quals.begin() + rng.Below(s.quals.size() + 1), dup);
    lines.push_back(Line(s));
  }
  return lines;
}

// Operand variants of legal-looking opcodes: registers of every named class
// in every position, wrong counts, missing or extra braces, sinks, address
// forms and modelled immediates.
std::vector<std::string> MultimemOperandSample() {
  const std::vector<std::string> regs = {"%rc1", "%rs1", "%r1",  "%rd1", "%f1",
                                         "%fd1", "%h1",  "%hh1", "%p1"};
  const std::vector<std::string> addrs = {
      "[%rd2]", "[%rd2+8]", "[%rd2+-16]", "[%rd2+0x10]", "[ %rd2 + 4 ]",
      "[%r2]",  "[%rs2]",   "[8]",        "[%rd2-8]"};
  std::vector<std::string> lines;
  Lcg rng{777};
  for (size_t k = 0; lines.size() < 2400 && k < 200000; ++k) {
    Spelling s = NthSpelling(rng.Below(kGrammarSize));
    // Keep opcodes ptx-check accepts so that the operands decide.
    const std::string op =
        absl::StrCat("multimem.", s.kind, ".", absl::StrJoin(s.quals, "."));
    if (!CheckPtx(op, "sm_100a").ok) continue;
    const int mode = static_cast<int>(rng.Below(10));
    int count = s.vec;
    if (mode == 0) count = s.vec == 1 ? 2 : s.vec / 2;  // Wrong count.
    if (mode == 1) count = s.vec * 2 > 8 ? 1 : s.vec * 2;
    // One register class per line: ptxas types a vector that mixes classes
    // by an order-dependent rule that ptx-check approximates only
    // (docs/ptx_check.md).
    std::vector<std::string> elems;
    const std::string cls = regs[rng.Below(regs.size())];
    for (int e = 0; e < count; ++e) {
      std::string r = mode >= 6 ? RegOfBits(s.bits, e + 1) : cls;
      if (mode == 2 && s.kind == "ld_reduce" && rng.Below(2)) r = "_";
      elems.push_back(r);
    }
    std::string value;
    const bool braces =
        count > 1 ||
        (mode == 3 ? true : (mode == 4 ? false : rng.Below(4) == 0));
    value =
        braces ? absl::StrCat("{", absl::StrJoin(elems, ", "), "}") : elems[0];
    if (mode == 5 && s.kind != "ld_reduce" && s.vec == 1) {
      // Modelled immediates: integer literals for integer types, float
      // literals for .f32 / .f64.
      const std::string& t = s.quals.back();
      if (t == "f32" || t == "f64")
        value = rng.Below(2) ? "1.5" : "0f3F800000";
      else if (t[0] == 'b' || t[0] == 'u' || t[0] == 's')
        value = rng.Below(2) ? "7" : "0x10";
      else
        continue;
    }
    const std::string addr =
        mode >= 7 ? addrs[rng.Below(addrs.size())] : "[%rd2]";
    if (mode == 8 && rng.Below(4) == 0) {
      lines.push_back(absl::StrCat(op, " ", addr, ";"));  // One operand.
      continue;
    }
    lines.push_back(s.kind == "ld_reduce"
                        ? absl::StrCat(op, " ", value, ", ", addr, ";")
                        : absl::StrCat(op, " ", addr, ", ", value, ";"));
  }
  return lines;
}

TEST(PtxasAgreement, MultimemOpcodes) {
  MXPACK_REQUIRE_PTXAS(ptxas);
  const std::vector<std::string> lines = MultimemOpcodeSample();
  ASSERT_GE(lines.size(), 2000u);
  for (const std::string& t : kTargets) Compare(ptxas, lines, t);
  RecordProperty("lines_per_target", static_cast<int>(lines.size()));
}

TEST(PtxasAgreement, MultimemOperands) {
  MXPACK_REQUIRE_PTXAS(ptxas);
  const std::vector<std::string> lines = MultimemOperandSample();
  ASSERT_GE(lines.size(), 2000u);
  for (const std::string& t : kTargets) Compare(ptxas, lines, t);
}

TEST(PtxasAgreement, KnownCases) {
  MXPACK_REQUIRE_PTXAS(ptxas);
  const std::vector<std::string> lines = {
      "multimem.st.cta.bf16x2 [%rd1], %r1;",
      "multimem.ld_reduce.sys.add.bf16x2 %r1, [%rd1];",
      "multimem.st.relaxed.global.u64 [%rd1], %rd2;",
      "multimem.red.release.min.s32 [%rd1], %r1;",
      "multimem.red.min.v2.bf16x2 [%rd1], {%r1, %r2};",
      "multimem.red.max.v4.f16 [%rd1], {%rs1, %rs2, %rs3, %rs4};",
      "multimem.red.min.bf16x2 [%rd1], %r1;",
      "multimem.red.add.acc::f32.v2.bf16x2 [%rd1], {%r1, %r2};",
      "multimem.st.acc::f16.f32 [%rd1], %r1;",
      "multimem.ld_reduce.min.acc::f32.v2.bf16 {%rs1, %rs2}, [%rd1];",
      "multimem.ld_reduce.f32.add.global %r1, [%rd1];",
      "multimem.ld_reduce.add.f32 %r1, [%rd1];;",
      "multimem.ld_reduce.add.v2.f32 {%r1, _}, [%rd1];",
      "multimem.ld_reduce.add.bf16x2 %p1, [%rd1];",
      "multimem.ld_reduce.add.f32 {%r1}, [%rd1];",
  };
  for (const std::string& t : kTargets) Compare(ptxas, lines, t);
}

// ---------------------------------------------------------------------------
// tcgen05: every cp/shift/ld/st combination of the qualifier values.

std::vector<std::string> Tcgen05Lines() {
  std::vector<std::string> lines;
  const std::vector<std::string> cp_shapes = {"128x256b", "128x128b", "4x256b",
                                              "64x128b", "32x128b"};
  const std::vector<std::string> multicast = {"", ".warpx2::02_13",
                                              ".warpx2::01_23", ".warpx4"};
  const std::vector<std::string> decomp = {
      "", ".b8x16.b6x16_p32", ".b8x16.b4x16_p64", ".b8x16", ".b6x16_p32"};
  for (int g : {1, 2}) {
    for (const std::string& sh : cp_shapes) {
      for (const std::string& m : multicast) {
        for (const std::string& d : decomp) {
          lines.push_back(absl::StrCat("tcgen05.cp.cta_group::", g, ".", sh, m,
                                       d, " [%r1], %rd1;"));
        }
      }
    }
    lines.push_back(
        absl::StrCat("tcgen05.shift.cta_group::", g, ".down [%r1];"));
    lines.push_back(
        absl::StrCat("tcgen05.shift.down.cta_group::", g, " [%r1];"));
  }
  // ld / st: registers per .num of each shape, whether or not the
  // combination is legal, so that ptxas judges the opcode.
  const std::vector<std::pair<std::string, int>> shapes = {{"32x32b", 1},
                                                           {"16x64b", 1},
                                                           {"16x128b", 2},
                                                           {"16x256b", 4},
                                                           {"16x32bx2", 1}};
  for (const std::string op : {"ld", "st"}) {
    for (const auto& [sh, per] : shapes) {
      for (int num = 1; num <= 128; num *= 2) {
        for (const std::string pack : {"", ".pack::16b", ".unpack::16b"}) {
          std::vector<std::string> regs;
          for (int k = 0; k < per * num; ++k)
            regs.push_back(absl::StrCat("%r", k + 10));
          const std::string v =
              absl::StrCat("{", absl::StrJoin(regs, ", "), "}");
          const std::string imm = sh == "16x32bx2" ? ", 8" : "";
          const std::string opc = absl::StrCat("tcgen05.", op, ".sync.aligned.",
                                               sh, ".x", num, pack, ".b32");
          lines.push_back(op == "ld"
                              ? absl::StrCat(opc, " ", v, ", [%r1]", imm, ";")
                              : absl::StrCat(opc, " [%r1]", imm, ", ", v, ";"));
        }
      }
    }
  }
  // Spelling freedoms: qualifier orders, a missing .aligned, a repeated
  // .sync, stray .b8x16, repeated qualifiers, and operand forms.
  for (const char* v : {
           "tcgen05.ld.aligned.sync.32x32b.x1.b32 {%r1}, [%r2];",
           "tcgen05.ld.sync.32x32b.x1.b32 {%r1}, [%r2];",
           "tcgen05.ld.sync.sync.aligned.32x32b.x1.b32 {%r1}, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.b8x16.b32 {%r1}, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.b8x16.b8x16.b32 {%r1}, [%r2];",
           "tcgen05.ld.sync.aligned.x1.32x32b.b32 {%r1}, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.b32.x1 {%r1}, [%r2];",
           "tcgen05.ld.sync.aligned.b32.16x64b.x2.pack::16b {%r1, %r2}, [%r3];",
           "tcgen05.ld.sync.aligned.32x32b.x1 {%r1}, [%r2];",
           "tcgen05.ld.sync.aligned.aligned.32x32b.x1.b32 {%r1}, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32.b32 {%r1}, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.x2.b32 {%r1}, [%r2];",
           "tcgen05.ld.sync.aligned.16x64b.x1.pack::16b.pack::16b.b32 {%r1}, [%r2];",
           "tcgen05.ld.aligned.32x32b.x1.b32 {%r1}, [%r2];",
           "tcgen05.st.aligned.32x32b.x1.b32 [%r2], {%r1};",
           "tcgen05.st.sync.32x32b.x1.b32 [%r2], {%r1};",
           "tcgen05.st.sync.aligned.32x32b.x1.b8x16.b32 [%r2], {%r1};",
           "tcgen05.st.x1.sync.32x32b.unpack::16b.b32 [%r2], {%r1};",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32 %r1, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%rd2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%rd1}, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%rs1}, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%f1}, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%hh1}, [%r2];",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%r2+4];",
           "tcgen05.st.sync.aligned.32x32b.x1.b32 [%r2], {%f1};",
           "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1, %r3}, [%r2];",
       }) {
    lines.push_back(v);
  }
  for (int g : {1, 2}) {
    for (const char* v : {
             "tcgen05.cp.128x256b.cta_group::G [%r1], %rd1;",
             "tcgen05.cp.cta_group::G.b8x16.b6x16_p32.128x256b [%r1], %rd1;",
             "tcgen05.cp.cta_group::G.128x256b.b6x16_p32.b8x16 [%r1], %rd1;",
             "tcgen05.cp.cta_group::G.warpx2::02_13.64x128b [%r1], %rd1;",
             "tcgen05.cp.warpx4.cta_group::G.32x128b [%r1], %rd1;",
             "tcgen05.cp.cta_group::G.128x256b.128x256b [%r1], %rd1;",
             "tcgen05.cp.cta_group::G.cta_group::G.128x256b [%r1], %rd1;",
             "tcgen05.cp.cta_group::G.64x128b.warpx2::01_23.warpx2::01_23 [%r1], %rd1;",
             "tcgen05.cp.cta_group::G.b8x16.b4x16_p64.b8x16.128x256b [%r1], %rd1;",
             "tcgen05.cp.cta_group::G.128x256b [%rd1], %rd1;",
             "tcgen05.cp.cta_group::G.128x256b [%r1], %r2;",
             "tcgen05.cp.cta_group::G.128x256b [%r1], %fd1;",
             "tcgen05.cp.cta_group::G.128x256b [%r1+8], %rd1;",
             "tcgen05.cp.cta_group::G.128x256b [%r1];",
             "tcgen05.shift.cta_group::G [%r1];",
             "tcgen05.shift.cta_group::G.down [%rd1];",
             "tcgen05.shift.cta_group::G.down.down [%r1];",
             "tcgen05.shift.cta_group::G.down [%r1+4];",
             "tcgen05.shift.cta_group::G.down %r1;",
         }) {
      std::string l = v;
      for (size_t at; (at = l.find("::G")) != std::string::npos;) {
        l.replace(at, 3, absl::StrCat("::", g));
      }
      lines.push_back(l);
    }
  }
  return lines;
}

TEST(PtxasAgreement, Tcgen05EveryCombination) {
  MXPACK_REQUIRE_PTXAS(ptxas);
  // ptxas rejects a kernel that uses both .cta_group::1 and ::2, so each
  // group is assembled apart.
  std::vector<std::string> group[3];
  for (const std::string& l : Tcgen05Lines()) {
    group[l.find("cta_group::1") != std::string::npos   ? 1
          : l.find("cta_group::2") != std::string::npos ? 2
                                                        : 0]
        .push_back(l);
  }
  for (const std::string& t : kTargets) {
    for (const auto& g : group) Compare(ptxas, g, t);
  }
}

// The whole multimem grammar in syntax order on every target.
TEST(PtxasAgreementLong, MultimemWholeGrammar) {
  MXPACK_REQUIRE_PTXAS(ptxas);
  std::vector<std::string> lines;
  lines.reserve(kGrammarSize);
  for (size_t i = 0; i < kGrammarSize; ++i)
    lines.push_back(Line(NthSpelling(i)));
  for (const std::string& t : kTargets) {
    for (size_t start = 0; start < lines.size(); start += 20000) {
      std::vector<std::string> part(
          lines.begin() + start,
          lines.begin() + std::min(lines.size(), start + 20000));
      Compare(ptxas, part, t);
    }
  }
}

}  // namespace
}  // namespace mxpack
