// Tests of the tcgen05 spelling validator, target table, shared-memory
// descriptor and ld/st fragment tables (include/mxpack/tcgen05.h). Expected
// values are written out independently of the implementation, each with its
// source.
#include "mxpack/tcgen05.h"

#include "mxpack/ptx_check.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace mxpack {
namespace tcgen05 {
namespace {

const char* const kCpShapes[] = {"128x256b", "128x128b", "4x256b", "64x128b",
                                 "32x128b"};
const char* const kLdStShapes[] = {"32x32b", "16x64b", "16x128b", "16x256b",
                                   "16x32bx2"};

// ---------------------------------------------------------------------------
// tcgen05.cp: every shape x multicast x format x cta_group combination.
// Rules [PTX 9.7.16.9.1]: .64x128b needs .warpx2::02_13|01_23, .32x128b needs
// .warpx4, other shapes take none; .b8x16 and a .src_fmt only as a pair.
TEST(Tcgen05ParseCp, EveryCombination) {
  const char* const ctas[] = {"cta_group::1", "cta_group::2", "cta_group::3", ""};
  std::vector<std::string> shapes(std::begin(kCpShapes), std::end(kCpShapes));
  shapes.push_back("32x32b");  // An ld/st shape: illegal on cp.
  shapes.push_back("");
  const char* const multicasts[] = {"", "warpx2::02_13", "warpx2::01_23", "warpx4",
                                    "warpx2"};
  const char* const fmts[] = {"", "b8x16.b6x16_p32", "b8x16.b4x16_p64", "b8x16",
                              "b6x16_p32", "b4x16_p64", "b6x16_p32.b8x16"};
  int legal_count = 0, total = 0;
  for (const char* cta : ctas) {
    for (const std::string& shape : shapes) {
      for (const char* mc : multicasts) {
        for (const char* fmt : fmts) {
          std::string s = "tcgen05.cp";
          for (absl::string_view q : {absl::string_view(cta), absl::string_view(shape),
                                      absl::string_view(mc), absl::string_view(fmt)}) {
            if (!q.empty()) absl::StrAppend(&s, ".", q);
          }
          const absl::string_view m = mc, f = fmt;
          const bool cta_ok = absl::string_view(cta) == "cta_group::1" ||
                              absl::string_view(cta) == "cta_group::2";
          bool shape_ok = false;
          for (const char* c : kCpShapes) shape_ok |= shape == c;
          bool mc_ok;
          if (shape == "64x128b") {
            mc_ok = m == "warpx2::02_13" || m == "warpx2::01_23";
          } else if (shape == "32x128b") {
            mc_ok = m == "warpx4";
          } else {
            mc_ok = m.empty();
          }
          const bool fmt_ok =
              f.empty() || f == "b8x16.b6x16_p32" || f == "b8x16.b4x16_p64";
          const bool legal = cta_ok && shape_ok && mc_ok && fmt_ok;
          absl::StatusOr<Instruction> inst = Parse(s);
          ++total;
          ASSERT_EQ(inst.ok(), legal) << s << ": " << inst.status();
          if (legal) {
            ++legal_count;
            EXPECT_EQ(Spelling(*inst), s);
            EXPECT_EQ(inst->op, Op::kCp);
            EXPECT_EQ(ShapeName(inst->shape), shape);
            EXPECT_EQ(MulticastName(inst->multicast), m);
            EXPECT_EQ(static_cast<int>(inst->cta_group), cta[11] - '0');
            EXPECT_EQ(inst->src_fmt != SrcFmt::kNone, !f.empty());
            // With operands as well.
            EXPECT_TRUE(Parse(s + " [taddr], sdesc;").ok()) << s;
          } else {
            // The message names one of the violated rules.
            std::vector<std::string> rules;
            if (!cta_ok) rules.push_back("cta_group");
            if (!shape_ok) rules.push_back("shape");
            if (!mc_ok) rules.push_back("multicast");
            if (!fmt_ok) {
              rules.push_back("decompression");
              rules.push_back("qualifier order");
            }
            const std::string msg(inst.status().message());
            bool named = false;
            for (const std::string& r : rules) named |= absl::StartsWith(msg, r);
            EXPECT_TRUE(named) << s << " -> " << msg;
          }
        }
      }
    }
  }
  // 5 shapes: 3 with 1 multicast choice, 64x128b with 2, 32x128b with 1 -> 6,
  // times 3 formats, times 2 cta groups.
  EXPECT_EQ(legal_count, 6 * 3 * 2);
  EXPECT_EQ(total, 4 * 7 * 5 * 7);
}

TEST(Tcgen05ParseCp, ErrorsNameTheRule) {
  struct Case {
    const char* spelling;
    const char* rule;
  } cases[] = {
      {"tcgen05.cp.cta_group::1.64x128b", "multicast: tcgen05.cp.64x128b requires "
                                          ".warpx2::02_13 or .warpx2::01_23, got none"},
      {"tcgen05.cp.cta_group::1.32x128b.warpx2::02_13", "multicast: tcgen05.cp.32x128b "
                                                        "requires .warpx4"},
      {"tcgen05.cp.cta_group::1.128x256b.warpx4", "multicast: tcgen05.cp.128x256b "
                                                  "requires no multicast"},
      {"tcgen05.cp.cta_group::1.128x256b.b8x16", "decompression:"},
      {"tcgen05.cp.cta_group::1.128x256b.b4x16_p64", "decompression:"},
      {"tcgen05.cp.128x256b", "cta_group: tcgen05.cp requires"},
      {"tcgen05.cp.cta_group::1", "shape: tcgen05.cp requires"},
      {"tcgen05.cp.128x256b.cta_group::1", "qualifier order:"},
      {"tcgen05.cp.cta_group::1.128x256b.128x128b", "qualifier: shape given twice"},
      {"tcgen05.cp.cta_group::1.16x64b", "shape: tcgen05.cp takes"},
      {"tcgen05.cp.cta_group::1.128x256b.foo", "qualifier: unknown qualifier '.foo'"},
      {"tcgen05.cp.cta_group::1.128x256b [taddr]", "operands:"},
      {"tcgen05.cp.cta_group::1.128x256b.sync", "qualifier:"},
      {"tcgen05.mma.cta_group::1.kind::f16", "opcode: tcgen05.mma is not modelled"},
      {"tcgen05.frob", "opcode: unknown instruction"},
      {"wgmma.mma_async", "opcode:"},
      {"", "opcode:"},
      {"tcgen05..cp", "opcode: empty qualifier"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Instruction> inst = Parse(c.spelling);
    ASSERT_FALSE(inst.ok()) << c.spelling;
    EXPECT_TRUE(absl::StartsWith(inst.status().message(), c.rule))
        << c.spelling << " -> " << inst.status().message();
  }
}

// ---------------------------------------------------------------------------
// tcgen05.shift [PTX 9.7.16.9.2]: both qualifier orders the PTX ISA shows.
TEST(Tcgen05ParseShift, BothOrdersAndErrors) {
  for (const char* s :
       {"tcgen05.shift.cta_group::1.down", "tcgen05.shift.cta_group::2.down",
        "tcgen05.shift.down.cta_group::1", "tcgen05.shift.down.cta_group::2",
        "tcgen05.shift.cta_group::1.down [taddr];"}) {
    absl::StatusOr<Instruction> inst = Parse(s);
    ASSERT_TRUE(inst.ok()) << s << ": " << inst.status();
    EXPECT_EQ(inst->op, Op::kShift);
    EXPECT_EQ(inst->shape, Shape::k31x256b);
    EXPECT_TRUE(absl::StartsWith(s, Spelling(*inst))) << Spelling(*inst);
  }
  struct Case {
    const char* spelling;
    const char* rule;
  } cases[] = {
      {"tcgen05.shift.cta_group::1", "down: tcgen05.shift requires .down"},
      {"tcgen05.shift.down", "cta_group: tcgen05.shift requires"},
      {"tcgen05.shift.cta_group::1.down.31x256b", "shape: tcgen05.shift has the "
                                                  "implicit shape"},
      {"tcgen05.shift.cta_group::1.down.down", "qualifier: .down given twice"},
      {"tcgen05.shift.cta_group::3.down", "cta_group:"},
      {"tcgen05.shift.cta_group::1.up", "qualifier: unknown qualifier '.up'"},
      {"tcgen05.shift.cta_group::1.down [a], b", "operands:"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Instruction> inst = Parse(c.spelling);
    ASSERT_FALSE(inst.ok()) << c.spelling;
    EXPECT_TRUE(absl::StartsWith(inst.status().message(), c.rule))
        << c.spelling << " -> " << inst.status().message();
  }
}

// ---------------------------------------------------------------------------
// tcgen05.ld / st: shapes x .num x pack, per-shape .num ranges of PTX Table 49
// (32x32b, 16x64b, 16x32bx2: x1..x128; 16x128b: x1..x64; 16x256b: x1..x32),
// confirmed by the [CCCL] wrappers' register counts.
int MaxNum(absl::string_view shape) {
  if (shape == "16x128b") return 64;
  if (shape == "16x256b") return 32;
  return 128;
}
int RegsPerNum(absl::string_view shape) {
  if (shape == "16x128b") return 2;
  if (shape == "16x256b") return 4;
  return 1;
}

TEST(Tcgen05ParseLdSt, EveryShapeNumAndPack) {
  int legal_count = 0;
  for (const char* op : {"ld", "st"}) {
    std::vector<std::string> shapes(std::begin(kLdStShapes), std::end(kLdStShapes));
    shapes.push_back("128x256b");  // A cp shape.
    for (const std::string& shape : shapes) {
      for (int num : {1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 0}) {
        for (const char* pack : {"", "pack::16b", "unpack::16b"}) {
          std::string s = absl::StrCat("tcgen05.", op, ".sync.aligned.", shape, ".x",
                                       num);
          if (*pack) absl::StrAppend(&s, ".", pack);
          absl::StrAppend(&s, ".b32");
          bool shape_ok = false;
          for (const char* c : kLdStShapes) shape_ok |= shape == c;
          const bool num_ok = shape_ok && num >= 1 && num <= MaxNum(shape) &&
                              (num & (num - 1)) == 0;
          const absl::string_view p = pack;
          const bool pack_ok = p.empty() || (absl::string_view(op) == "ld"
                                                 ? p == "pack::16b"
                                                 : p == "unpack::16b");
          const bool legal = shape_ok && num_ok && pack_ok;
          absl::StatusOr<Instruction> inst = Parse(s);
          ASSERT_EQ(inst.ok(), legal) << s << ": " << inst.status();
          if (!legal) {
            const char* rule = !pack_ok ? "pack" : !shape_ok ? "shape" : "num";
            EXPECT_TRUE(absl::StartsWith(inst.status().message(), rule))
                << s << " -> " << inst.status().message();
            continue;
          }
          ++legal_count;
          EXPECT_EQ(Spelling(*inst), s);
          EXPECT_EQ(inst->num, num);
          EXPECT_EQ(inst->pack16, !p.empty());
          // Register count is independent of (un)pack::16b [CCCL].
          EXPECT_EQ(NumRegisters(*inst), RegsPerNum(shape) * num) << s;
        }
      }
    }
  }
  // Per op: (8 + 8 + 7 + 6 + 8) nums x 2 pack choices.
  EXPECT_EQ(legal_count, 2 * 37 * 2);
}

TEST(Tcgen05ParseLdSt, OperandsAndHalfSplitOffset) {
  absl::StatusOr<Instruction> ld =
      Parse("tcgen05.ld.sync.aligned.16x32bx2.x2.b32 {r0, r1}, [taddr], 16;");
  ASSERT_TRUE(ld.ok()) << ld.status();
  EXPECT_EQ(ld->half_split_offset, 16);
  absl::StatusOr<Instruction> st =
      Parse("tcgen05.st.sync.aligned.16x32bx2.x1.unpack::16b.b32 [t], 0x20, {r0};");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->half_split_offset, 32);
  EXPECT_TRUE(Parse("tcgen05.ld.sync.aligned.16x256b.x1.b32 {a,b,c,d}, [t];").ok());
  struct Case {
    const char* spelling;
    const char* rule;
  } cases[] = {
      {"tcgen05.ld.sync.aligned.16x32bx2.x2.b32 {r0, r1}, [taddr];", "operands:"},
      {"tcgen05.ld.sync.aligned.32x32b.x2.b32 {r0, r1}, [taddr], 4;", "operands:"},
      {"tcgen05.ld.sync.aligned.16x256b.x1.b32 {r0, r1}, [taddr];",
       "registers: tcgen05.ld.16x256b.x1 needs a vector of 4 .b32 registers, got 2"},
      {"tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {r0}, [taddr], n;", "immHalfSplitoff:"},
      {"tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {r0}, [taddr], 512;",
       "immHalfSplitoff: expected 0..511"},
      {"tcgen05.ld.sync.aligned.32x32b.x1.b32.pack::16b", "qualifier order:"},
      {"tcgen05.ld.aligned.32x32b.x1.b32", "qualifier: tcgen05.ld requires .sync"},
      {"tcgen05.ld.sync.aligned.32x32b.b32", "num: tcgen05.ld requires .num"},
      {"tcgen05.ld.sync.aligned.x1.b32", "shape: tcgen05.ld requires a shape"},
      {"tcgen05.ld.sync.aligned.32x32b.x1", "qualifier: tcgen05.ld requires .b32"},
      {"tcgen05.ld.sync.aligned.32x32b.x1.unpack::16b.b32", "pack: tcgen05.ld takes "
                                                            ".pack::16b"},
      {"tcgen05.st.sync.aligned.32x32b.x1.pack::16b.b32", "pack: tcgen05.st takes "
                                                          ".unpack::16b"},
      {"tcgen05.ld.sync.aligned.16x128b.x128.b32", "num: tcgen05.ld.16x128b takes .x1, "
                                                   ".x2, .x4, ... .x64, got .x128"},
      {"tcgen05.ld.red.sync.aligned.32x32b.x1.min.u32", "opcode: tcgen05.ld.red"},
      {"tcgen05.ld.sync.aligned.cta_group::1.32x32b.x1.b32", "qualifier:"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Instruction> inst = Parse(c.spelling);
    ASSERT_FALSE(inst.ok()) << c.spelling;
    EXPECT_TRUE(absl::StartsWith(inst.status().message(), c.rule))
        << c.spelling << " -> " << inst.status().message();
  }
}

TEST(Tcgen05Validate, RejectsFieldsThatDoNotApply) {
  Instruction ld;
  ld.op = Op::kLd;
  ld.shape = Shape::k32x32b;
  ld.num = 4;
  EXPECT_TRUE(Validate(ld).ok());
  Instruction bad = ld;
  bad.cta_group = CtaGroup::k2;
  EXPECT_TRUE(absl::StartsWith(Validate(bad).message(), "cta_group"));
  bad = ld;
  bad.half_split_offset = 4;
  EXPECT_TRUE(absl::StartsWith(Validate(bad).message(), "immHalfSplitoff"));
  bad = ld;
  bad.multicast = Multicast::kWarpx4;
  EXPECT_TRUE(absl::StartsWith(Validate(bad).message(), "multicast"));
  Instruction cp;
  cp.num = 1;
  EXPECT_TRUE(absl::StartsWith(Validate(cp).message(), "num"));
}

// ---------------------------------------------------------------------------
// Target table [PTX Target ISA notes of tcgen05.cp / .ld / .st / .shift]:
// cp/ld/st: sm_100a, sm_101a (renamed sm_110a in PTX 9.0), family sm_100f /
// sm_110f from PTX 8.8; shift: sm_100a, sm_101a, sm_103a, sm_110a only.
TEST(Tcgen05Target, Table) {
  struct Row {
    const char* target;
    bool cp;     // Also ld and st.
    bool shift;
  } rows[] = {
      {"sm_100a", true, true},          {"sm_100a@ptx8.6", true, true},
      {"sm_100a@ptx8.5", false, false}, {"sm_101a@ptx8.6", true, true},
      {"sm_101a@ptx8.7", true, true},   {"sm_101a@ptx9.0", false, false},
      {"sm_101a", true, true},          {"sm_110a", true, true},
      {"sm_110a@ptx8.8", false, false}, {"sm_110a@ptx9.0", true, true},
      {"sm_103a", true, true},          {"sm_103a@ptx8.7", false, false},
      {"sm_103a@ptx8.8", true, true},   {"sm_100f@ptx8.8", true, false},
      {"sm_100f@ptx8.7", false, false}, {"sm_100f", true, false},
      {"sm_103f@8.8", true, false},     {"sm_110f@ptx9.0", true, false},
      {"sm_110f@ptx8.8", false, false}, {"sm_101f@ptx8.8", true, false},
      {"sm_100", false, false},         {"sm_103", false, false},
      {"sm_90a", false, false},         {"sm_120a", false, false},
      {"sm_120f", false, false},        {"sm_121a", false, false},
  };
  const char* const cp_like[] = {"tcgen05.cp.cta_group::1.128x256b",
                                 "tcgen05.ld.sync.aligned.32x32b.x1.b32",
                                 "tcgen05.st.sync.aligned.16x64b.x2.b32"};
  const absl::StatusOr<Instruction> shift = Parse("tcgen05.shift.cta_group::1.down");
  ASSERT_TRUE(shift.ok());
  for (const Row& r : rows) {
    absl::StatusOr<Target> t = ParseTarget(r.target);
    ASSERT_TRUE(t.ok()) << r.target << ": " << t.status();
    for (const char* s : cp_like) {
      absl::Status st = CheckTarget(*Parse(s), *t);
      EXPECT_EQ(st.ok(), r.cp) << s << " on " << r.target << ": " << st;
      if (!st.ok()) {
        EXPECT_TRUE(absl::StartsWith(st.message(), "target:")) << st;
      }
    }
    absl::Status st = CheckTarget(*shift, *t);
    EXPECT_EQ(st.ok(), r.shift) << "shift on " << r.target << ": " << st;
  }
  EXPECT_EQ(*LegalPtxVersions(*shift, *ParseTarget("sm_101a")), "8.6 .. 8.8");
  EXPECT_EQ(*LegalPtxVersions(*shift, *ParseTarget("sm_110a")), "9.0 or later");
  EXPECT_EQ(*LegalPtxVersions(*Parse(cp_like[0]), *ParseTarget("sm_100f")),
            "8.8 or later");
  for (const char* bad : {"sm100a", "sm_", "sm_100x", "sm_100a@ptx", "sm_100a@9",
                          "compute_100a"}) {
    EXPECT_FALSE(ParseTarget(bad).ok()) << bad;
  }
}

TEST(Tcgen05Check, DescriptionAndTarget) {
  absl::StatusOr<std::string> d =
      CheckTcgen05("tcgen05.cp.cta_group::2.64x128b.warpx2::01_23.b8x16.b4x16_p64",
                   "sm_100a");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(absl::StrContains(*d, "b4x16_p64")) << *d;
  EXPECT_TRUE(absl::StrContains(*d, "target sm_100a: legal with PTX ISA 8.6 or later"))
      << *d;
  EXPECT_FALSE(CheckTcgen05("tcgen05.shift.down.cta_group::1", "sm_100f").ok());
  EXPECT_TRUE(CheckTcgen05("tcgen05.shift.down.cta_group::1", "sm_103a").ok());
  EXPECT_FALSE(CheckTcgen05("tcgen05.shift.down.cta_group::1", "bogus").ok());
  EXPECT_TRUE(CheckTcgen05("tcgen05.ld.sync.aligned.16x32bx2.x1.b32").ok());
}

// `mxpack ptx-check` dispatch through the registry of ptx_check.h.
TEST(Tcgen05Check, PtxCheckRegistry) {
  ASSERT_TRUE(RegisterTcgen05PtxFamily());
  PtxCheckResult r = CheckPtx("tcgen05.shift.down.cta_group::1 [taddr];", "sm_103a");
  EXPECT_TRUE(r.ok) << r.text;
  r = CheckPtx("tcgen05.shift.cta_group::1.down", "sm_103f");
  EXPECT_FALSE(r.ok) << r.text;
  EXPECT_TRUE(absl::StartsWith(r.text, "target:")) << r.text;
  r = CheckPtx("tcgen05.cp.cta_group::1.64x128b", "");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(absl::StartsWith(r.text, "multicast:")) << r.text;
  EXPECT_TRUE(CheckPtx("@p tcgen05.ld.sync.aligned.16x256b.x1.b32 {a,b,c,d}, [t];").ok);
}

// ---------------------------------------------------------------------------
// Shared-memory descriptor [PTX 9.7.16.4.1] / docs/semantics.md section 3.
TEST(Tcgen05Descriptor, EncodeDecodeAllFields) {
  SmemDescriptor d;
  d.start_address = 0x3FFF0;  // All 14 bits set.
  d.leading_byte_offset = 0x10;
  d.stride_byte_offset = 0x3FFF0;
  d.base_offset = 5;
  d.lbo_absolute = true;
  d.swizzle = Swizzle::k64B;
  absl::StatusOr<uint64_t> bits = EncodeDescriptor(d);
  ASSERT_TRUE(bits.ok()) << bits.status();
  // [13:0]=0x3FFF, [29:16]=1, [45:32]=0x3FFF, [48:46]=001, [51:49]=101, [52]=1,
  // [63:61]=100.
  EXPECT_EQ(*bits, 0x3FFFull | (1ull << 16) | (0x3FFFull << 32) | (1ull << 46) |
                       (5ull << 49) | (1ull << 52) | (4ull << 61));
  absl::StatusOr<SmemDescriptor> back = DecodeDescriptor(*bits);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, d);
  for (Swizzle s : {Swizzle::kNone, Swizzle::k128BBase32B, Swizzle::k128B,
                    Swizzle::k64B, Swizzle::k32B}) {
    SmemDescriptor e;
    e.swizzle = s;
    e.start_address = 0x400;
    e.leading_byte_offset = 0x80;
    e.stride_byte_offset = 0x100;
    absl::StatusOr<SmemDescriptor> r = DecodeDescriptor(*EncodeDescriptor(e));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, e);
    EXPECT_EQ(*ParseSwizzle(SwizzleName(s)), s);
  }
  // Errors name the field.
  SmemDescriptor bad;
  bad.start_address = 8;
  EXPECT_TRUE(absl::StrContains(EncodeDescriptor(bad).status().message(),
                                "start_address"));
  bad = {};
  bad.stride_byte_offset = 1u << 18;
  EXPECT_TRUE(absl::StrContains(EncodeDescriptor(bad).status().message(),
                                "stride_byte_offset"));
  bad = {};
  bad.base_offset = 8;
  EXPECT_TRUE(absl::StrContains(EncodeDescriptor(bad).status().message(),
                                "base_offset"));
  EXPECT_TRUE(absl::StrContains(DecodeDescriptor(0).status().message(), "0b001"));
  EXPECT_TRUE(absl::StrContains(
      DecodeDescriptor((1ull << 46) | (1ull << 14)).status().message(), "reserved"));
  EXPECT_TRUE(absl::StrContains(
      DecodeDescriptor((1ull << 46) | (1ull << 55)).status().message(), "reserved"));
  EXPECT_TRUE(absl::StrContains(
      DecodeDescriptor((1ull << 46) | (3ull << 61)).status().message(), "swizzle"));
}

TEST(Tcgen05Descriptor, ChunkAddressNoSwizzle) {
  SmemDescriptor d;
  d.start_address = 0x200;
  d.leading_byte_offset = 0x800;
  d.stride_byte_offset = 0x80;
  // start + (r%8)*16 + (r/8)*SBO + j*LBO (docs/semantics.md section 3).
  EXPECT_EQ(*ChunkAddress(d, 0, 0), 0x200u);
  EXPECT_EQ(*ChunkAddress(d, 7, 0), 0x200u + 7 * 16);
  EXPECT_EQ(*ChunkAddress(d, 8, 0), 0x200u + 0x80);
  EXPECT_EQ(*ChunkAddress(d, 127, 1), 0x200u + 7 * 16 + 15 * 0x80 + 0x800);
}

TEST(Tcgen05Descriptor, ChunkAddressSwizzled) {
  // 128B swizzle, 1024-byte aligned start: row r (r < 8) starts at r*128 and
  // its chunk c sits at ((c ^ r) * 16) (CuTe Swizzle<3,4,3>).
  SmemDescriptor d;
  d.start_address = 0x1000;
  d.stride_byte_offset = 1024;
  d.leading_byte_offset = 0x4000;
  d.swizzle = Swizzle::k128B;
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 8; ++c) {
      EXPECT_EQ(*ChunkAddress(d, r, c),
                0x1000u + (r / 8) * 1024 + (r % 8) * 128 + ((c ^ (r % 8)) * 16))
          << r << "," << c;
    }
  }
  // Chunk 8 is the next 128-byte-wide K block at LBO.
  EXPECT_EQ(*ChunkAddress(d, 1, 8), 0x1000u + 0x4000 + 128 + 16);
  // 64B swizzle: row pitch 64, chunk c ^ ((r%8)/2) (Swizzle<2,4,3>).
  d.swizzle = Swizzle::k64B;
  d.stride_byte_offset = 512;
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(*ChunkAddress(d, r, c), 0x1000u + r * 64 + ((c ^ (r / 2)) * 16));
    }
  }
  // 32B swizzle: row pitch 32, chunk c ^ ((r%8)/4) (Swizzle<1,4,3>).
  d.swizzle = Swizzle::k32B;
  d.stride_byte_offset = 256;
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(*ChunkAddress(d, r, c), 0x1000u + r * 32 + ((c ^ (r / 4)) * 16));
    }
  }
  // Unmodelled fields are explicit errors.
  d.base_offset = 1;
  EXPECT_EQ(ChunkAddress(d, 0, 0).status().code(), absl::StatusCode::kUnimplemented);
  d.base_offset = 0;
  d.lbo_absolute = true;
  EXPECT_EQ(ChunkAddress(d, 0, 0).status().code(), absl::StatusCode::kUnimplemented);
}

// ---------------------------------------------------------------------------
// ld/st fragment tables. Expected (lane, column) per (thread t, register j),
// relative to taddr, written from docs/semantics.md section 3 which cites:
//   32x32b   [PTX Fig. 183], [CUTLASS] SM100_TMEM_LOAD_32dp32b*
//   16x64b   [CUTLASS] SM100_TMEM_LOAD_16dp64b* (PTX Fig. 184 is an image)
//   16x128b  [CUTLASS] SM100_TMEM_LOAD_16dp128b*
//   16x256b  [CUTLASS] SM100_TMEM_LOAD_16dp256b*
//   16x32bx2 [CUTLASS] SM100_TMEM_LOAD_16dp32b* with immHalfSplitoff = split
std::pair<int, int> ExpectedCell(absl::string_view shape, int t, int j, int split) {
  if (shape == "32x32b") return {t, j};
  if (shape == "16x64b") return {t / 4 + 8 * (t % 2), (t / 2) % 2 + 2 * j};
  if (shape == "16x128b") return {t / 4 + (j % 2 ? 8 : 0), t % 4 + 4 * (j / 2)};
  if (shape == "16x256b") {
    const int q = j % 4;
    return {t / 4 + (q >= 2 ? 8 : 0), 8 * (j / 4) + 2 * (t % 4) + (q % 2)};
  }
  return {t % 16, (t / 16) * split + j};  // 16x32bx2
}

TEST(Tcgen05Fragment, TablesAndCoverage) {
  for (const char* shape : kLdStShapes) {
    for (int num : {1, 2, 4, 32}) {
      if (num > MaxNum(shape)) continue;
      for (bool pack : {false, true}) {
        std::string s = absl::StrCat("tcgen05.ld.sync.aligned.", shape, ".x", num,
                                     pack ? ".pack::16b" : "", ".b32");
        absl::StatusOr<Instruction> inst = Parse(s);
        ASSERT_TRUE(inst.ok()) << s;
        const int split = (pack ? 2 : 1) * num + 3;  // Non-overlapping halves.
        if (inst->shape == Shape::k16x32bx2) inst->half_split_offset = split;
        const int lanes = absl::string_view(shape) == "32x32b" ? 32 : 16;
        const int cols = *NumColumns(*inst);
        std::set<std::pair<int, int>> cells;
        for (int t = 0; t < 32; ++t) {
          for (int j = 0; j < NumRegisters(*inst); ++j) {
            const FragmentCell f = Fragment(*inst, t, j);
            std::pair<int, int> e = ExpectedCell(shape, t, j, split);
            if (pack) {
              // pack::16b: the unpacked column c becomes the pair (2c, 2c+1)
              // [CUTLASS *_16b ValID]; 16x32bx2 halves start at the split.
              const int half = absl::string_view(shape) == "16x32bx2" ? (t / 16) * split
                                                                      : 0;
              e.second = half + 2 * (e.second - half);
              EXPECT_EQ(f.column_hi, f.column + 1);
            } else {
              EXPECT_EQ(f.column_hi, -1);
            }
            ASSERT_EQ(f.lane, e.first) << s << " t=" << t << " j=" << j;
            ASSERT_EQ(f.column, e.second) << s << " t=" << t << " j=" << j;
            ASSERT_LT(f.lane, lanes);
            ASSERT_LT(f.column, cols);
            EXPECT_TRUE(cells.insert({f.lane, f.column}).second) << s;
            if (pack) {
              EXPECT_TRUE(cells.insert({f.lane, f.column_hi}).second) << s;
            }
          }
        }
        // Every cell of the (non-split) rectangle is covered exactly once.
        if (inst->shape != Shape::k16x32bx2) {
          EXPECT_EQ(static_cast<int>(cells.size()), lanes * cols) << s;
        } else {
          EXPECT_EQ(static_cast<int>(cells.size()), 2 * 16 * (pack ? 2 : 1) * num) << s;
        }
      }
    }
  }
}

TEST(Tcgen05Fragment, GoldenSpotChecks) {
  // Thread 17, register 5 of tcgen05.ld.16x256b.x2: j=5 -> q=1 (first 8
  // lanes, odd column), j/4 = 1 -> +8 columns: lane 17/4 = 4, column
  // 8 + 2*(17%4) + 1 = 11 [CUTLASS SM100_TMEM_LOAD_16dp256b2x].
  Instruction i = *Parse("tcgen05.ld.sync.aligned.16x256b.x2.b32");
  EXPECT_EQ(Fragment(i, 17, 5).lane, 4);
  EXPECT_EQ(Fragment(i, 17, 5).column, 11);
  // 16x64b thread 3, register 1: lane 0 + 8, column 1 + 2 = 3.
  i = *Parse("tcgen05.ld.sync.aligned.16x64b.x2.b32");
  EXPECT_EQ(Fragment(i, 3, 1).lane, 8);
  EXPECT_EQ(Fragment(i, 3, 1).column, 3);
}

TEST(Tcgen05Geometry, CpLanesAndColumns) {
  // docs/semantics.md section 3 table.
  EXPECT_EQ(CpDestLanes(Shape::k128x256b, Multicast::kNone, 77), std::vector<int>{77});
  EXPECT_EQ(CpDestLanes(Shape::k4x256b, Multicast::kNone, 3), std::vector<int>{96});
  EXPECT_EQ(CpDestLanes(Shape::k64x128b, Multicast::kWarpx2_02_13, 40),
            (std::vector<int>{40, 104}));
  EXPECT_EQ(CpDestLanes(Shape::k64x128b, Multicast::kWarpx2_01_23, 31),
            (std::vector<int>{31, 63}));
  EXPECT_EQ(CpDestLanes(Shape::k64x128b, Multicast::kWarpx2_01_23, 32),
            (std::vector<int>{64, 96}));
  EXPECT_EQ(CpDestLanes(Shape::k32x128b, Multicast::kWarpx4, 5),
            (std::vector<int>{5, 37, 69, 101}));
  EXPECT_EQ(NumLanes(*Parse("tcgen05.cp.cta_group::1.32x128b.warpx4")), 128);
  EXPECT_EQ(*NumColumns(*Parse("tcgen05.cp.cta_group::1.128x128b")), 4);
  EXPECT_EQ(*NumColumns(*Parse("tcgen05.cp.cta_group::1.4x256b")), 8);
  EXPECT_EQ(*NumColumns(*Parse("tcgen05.ld.sync.aligned.16x256b.x4.pack::16b.b32")),
            64);
  EXPECT_FALSE(NumColumns(*Parse("tcgen05.ld.sync.aligned.16x32bx2.x4.b32")).ok());
}

}  // namespace
}  // namespace tcgen05
}  // namespace mxpack
