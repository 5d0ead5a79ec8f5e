// Tests of the tensor-memory host model (include/mxpack/tmem.h): tcgen05.cp
// for every shape (plain and with decompression), tcgen05.shift, the ld/st
// fragment tables and the error paths. Expected values come from formulas
// written here from docs/semantics.md section 3, not from the library.
#include "mxpack/tmem.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mxpack/pack.h"
#include "mxpack/tcgen05.h"

namespace mxpack {
namespace {

using tcgen05::Instruction;
using tcgen05::MakeTaddr;
using tcgen05::Parse;

constexpr uint32_t kSentinel = 0xDEADBEEFu;

Instruction P(absl::string_view s) {
  absl::StatusOr<Instruction> i = Parse(s);
  EXPECT_TRUE(i.ok()) << s << ": " << i.status();
  return *i;
}

// Test-local K-major address walk (docs/semantics.md section 3; swizzles as the CuTe
// Swizzle<B,4,3> functors on the byte address).
uint32_t Addr(uint32_t start, uint32_t lbo, uint32_t sbo, int swizzle_bytes, int r,
              int j) {
  if (swizzle_bytes == 0) return start + (r % 8) * 16 + (r / 8) * sbo + j * lbo;
  const uint32_t a = start + (r % 8) * swizzle_bytes + (r / 8) * sbo + j * 16;
  const uint32_t row_bits = (a >> 7) & (swizzle_bytes / 16 - 1);
  return a ^ (row_bits << 4);
}

// Destination lane offsets of source row r (docs/semantics.md section 3 table).
std::vector<int> Lanes(absl::string_view shape_and_mc, int r) {
  if (absl::StartsWith(shape_and_mc, "128x")) return {r};
  if (shape_and_mc == "4x256b") return {32 * r};
  if (shape_and_mc == "64x128b.warpx2::02_13") return {r, r + 64};
  if (shape_and_mc == "64x128b.warpx2::01_23") {
    return r < 32 ? std::vector<int>{r, r + 32} : std::vector<int>{r + 32, r + 64};
  }
  return {r, r + 32, r + 64, r + 96};  // 32x128b.warpx4
}

struct CpShape {
  const char* name;  // Shape and multicast as spelled.
  int rows;
  int chunks;  // 16-byte chunks per row.
  int lane0;   // taddr lane used by the test.
};
const CpShape kCpShapes[] = {
    {"128x256b", 128, 2, 0},
    {"128x128b", 128, 1, 0},
    {"4x256b", 4, 2, 5},
    {"64x128b.warpx2::02_13", 64, 1, 0},
    {"64x128b.warpx2::01_23", 64, 1, 0},
    {"32x128b.warpx4", 32, 1, 0},
};

// Byte k of chunk j of row r encodes its position: byte 0 = r, byte 1 =
// 0x80 | j, the rest a mix; `salt` distinguishes the peer CTA's copy.
uint8_t PosByte(int r, int j, int k, int salt) {
  if (k == 0) return static_cast<uint8_t>(r);
  if (k == 1) return static_cast<uint8_t>(0x80 | j | (salt << 4));
  return static_cast<uint8_t>(r * 7 + j * 29 + k * 11 + salt * 101);
}

TEST(TmemCp, EveryShapeEveryByte) {
  const uint32_t start = 0x400, lbo = 0x1000, sbo = 0x100;
  for (int swz : {0, 32, 64, 128}) {
    for (const CpShape& shape : kCpShapes) {
      for (int cta_group : {1, 2}) {
        const uint32_t sbo_used = swz == 0 ? sbo : 8 * swz;
        std::vector<uint8_t> smem(0x8000, 0xEE), peer(0x8000, 0xEE);
        for (int r = 0; r < shape.rows; ++r) {
          for (int j = 0; j < shape.chunks; ++j) {
            const uint32_t a = Addr(start, lbo, sbo_used, swz, r, j);
            for (int k = 0; k < 16; ++k) {
              smem[a + k] = PosByte(r, j, k, 0);
              peer[a + k] = PosByte(r, j, k, 1);
            }
          }
        }
        tcgen05::SmemDescriptor d;
        d.start_address = start;
        d.leading_byte_offset = lbo;
        d.stride_byte_offset = sbo_used;
        d.swizzle = swz == 0     ? tcgen05::Swizzle::kNone
                    : swz == 32  ? tcgen05::Swizzle::k32B
                    : swz == 64  ? tcgen05::Swizzle::k64B
                                 : tcgen05::Swizzle::k128B;
        const std::string s = absl::StrCat("tcgen05.cp.cta_group::", cta_group, ".",
                                           shape.name);
        Tmem tmem(/*with_peer=*/true, kSentinel);
        const int col0 = 12;
        ASSERT_TRUE(tmem.Cp(P(s), smem, *tcgen05::EncodeDescriptor(d),
                            MakeTaddr(shape.lane0, col0), Fp6Container::kLow6, peer)
                        .ok())
            << s;
        // Expected image: every written (lane, column, byte) from the formula,
        // everything else untouched.
        for (int cta = 0; cta < 2; ++cta) {
          std::vector<uint32_t> expect(128 * 512, kSentinel);
          if (cta < cta_group) {
            for (int r = 0; r < shape.rows; ++r) {
              for (int lane : Lanes(shape.name, r)) {
                for (int j = 0; j < shape.chunks; ++j) {
                  for (int k = 0; k < 16; ++k) {
                    uint32_t& cell =
                        expect[(shape.lane0 + lane) * 512 + col0 + 4 * j + k / 4];
                    if (k % 4 == 0) cell = 0;
                    cell |= uint32_t{PosByte(r, j, k, cta)} << (8 * (k % 4));
                  }
                }
              }
            }
          }
          for (int lane = 0; lane < 128; ++lane) {
            for (int col = 0; col < 512; ++col) {
              ASSERT_EQ(tmem.At(lane, col, cta), expect[lane * 512 + col])
                  << s << " swizzle " << swz << " cta " << cta << " lane " << lane
                  << " col " << col;
            }
          }
        }
      }
    }
  }
}

// Decompression: every element position of both layouts and both FP6
// container placements (docs/semantics.md section 2 containers; section 3: chunk j
// -> columns 4j..4j+3, element 4c+k in byte k of column c).
TEST(TmemCp, DecompressionEveryElement) {
  for (const char* fmt : {"b4x16_p64", "b6x16_p32"}) {
    const bool fp4 = absl::string_view(fmt) == "b4x16_p64";
    for (Fp6Container placement : {Fp6Container::kLow6, Fp6Container::kMid6}) {
      for (const CpShape& shape : {kCpShapes[0], kCpShapes[5]}) {
        const uint32_t start = 0, lbo = 0x800, sbo = 0x80;
        std::vector<uint8_t> smem(0x1000, 0);
        auto code = [&](int r, int j, int e) {
          return (r * 3 + j * 5 + e * 7) & (fp4 ? 0xF : 0x3F);
        };
        for (int r = 0; r < shape.rows; ++r) {
          for (int j = 0; j < shape.chunks; ++j) {
            uint8_t* c = &smem[Addr(start, lbo, sbo, 0, r, j)];
            if (fp4) {  // dense4: element 2i in bits [3:0] of byte i.
              for (int i = 0; i < 8; ++i) {
                c[i] = static_cast<uint8_t>(code(r, j, 2 * i) | code(r, j, 2 * i + 1) << 4);
              }
              for (int i = 8; i < 16; ++i) c[i] = 0xA5;  // Padding: ignored.
            } else {  // dense6: 24-bit LE words, element q in bits [6q+5:6q].
              for (int g = 0; g < 4; ++g) {
                uint32_t w = 0;
                for (int q = 0; q < 4; ++q) w |= uint32_t(code(r, j, 4 * g + q)) << (6 * q);
                c[3 * g] = static_cast<uint8_t>(w);
                c[3 * g + 1] = static_cast<uint8_t>(w >> 8);
                c[3 * g + 2] = static_cast<uint8_t>(w >> 16);
              }
              for (int i = 12; i < 16; ++i) c[i] = 0x5A;
            }
          }
        }
        tcgen05::SmemDescriptor d;
        d.start_address = start;
        d.leading_byte_offset = lbo;
        d.stride_byte_offset = sbo;
        const std::string s = absl::StrCat("tcgen05.cp.cta_group::1.", shape.name,
                                           ".b8x16.", fmt);
        Tmem tmem(false, kSentinel);
        const int col0 = 100;
        ASSERT_TRUE(tmem.Cp(P(s), smem, *tcgen05::EncodeDescriptor(d),
                            MakeTaddr(0, col0), placement)
                        .ok())
            << s;
        for (int r = 0; r < shape.rows; ++r) {
          for (int lane : Lanes(shape.name, r)) {
            for (int j = 0; j < shape.chunks; ++j) {
              for (int e = 0; e < 16; ++e) {
                const int cd = code(r, j, e);
                const uint32_t container =
                    fp4 ? cd << 2 : (placement == Fp6Container::kLow6 ? cd : cd << 1);
                const uint32_t cell = tmem.At(lane, col0 + 4 * j + e / 4);
                ASSERT_EQ((cell >> (8 * (e % 4))) & 0xFF, container)
                    << s << " " << Fp6ContainerName(placement) << " row " << r
                    << " chunk " << j << " element " << e;
              }
            }
          }
        }
        EXPECT_EQ(tmem.At(0, col0 - 1), kSentinel);
        EXPECT_EQ(tmem.At(0, col0 + 4 * shape.chunks), kSentinel);
      }
    }
  }
}

TEST(TmemCp, Errors) {
  std::vector<uint8_t> smem(4096, 0);
  tcgen05::SmemDescriptor d;
  d.leading_byte_offset = 0x800;
  d.stride_byte_offset = 0x80;
  const uint64_t desc = *tcgen05::EncodeDescriptor(d);
  Tmem tmem;
  const Instruction cp = P("tcgen05.cp.cta_group::1.128x256b");
  // smem out of range: row 127 chunk 1 needs 0x800 + 15*0x80 + 0x70 + 16 bytes.
  absl::Status st = tmem.Cp(cp, absl::MakeConstSpan(smem).subspan(0, 2048), desc, 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(absl::StrContains(st.message(), "smem")) << st;
  // taddr out of range / column overflow / lane overflow.
  st = tmem.Cp(cp, smem, desc, MakeTaddr(128, 0));
  EXPECT_TRUE(absl::StrContains(st.message(), "lane (bits [31:16]) < 128")) << st;
  st = tmem.Cp(cp, smem, desc, MakeTaddr(0, 508));
  EXPECT_TRUE(absl::StrContains(st.message(), "past the last column 511")) << st;
  st = tmem.Cp(cp, smem, desc, MakeTaddr(1, 0));
  EXPECT_TRUE(absl::StrContains(st.message(), "past the last lane 127")) << st;
  st = tmem.Cp(P("tcgen05.cp.cta_group::1.4x256b"), smem, desc, MakeTaddr(32, 0));
  EXPECT_TRUE(absl::StrContains(st.message(), "lands on lane 128")) << st;
  // cta_group::2 without a peer.
  st = tmem.Cp(P("tcgen05.cp.cta_group::2.128x128b"), smem, desc, 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  // Bad descriptor.
  st = tmem.Cp(cp, smem, 0, 0);
  EXPECT_TRUE(absl::StrContains(st.message(), "0b001")) << st;
  // Wrong instruction kind.
  st = tmem.Cp(P("tcgen05.shift.cta_group::1.down"), smem, desc, 0);
  EXPECT_FALSE(st.ok());
  // Nothing was written by any failed call.
  for (int lane = 0; lane < 128; ++lane) {
    for (int col = 0; col < 512; ++col) ASSERT_EQ(tmem.At(lane, col), 0u);
  }
}

// ---------------------------------------------------------------------------
TEST(TmemShift, LanesMoveDownWithinTheBlock) {
  for (int cta_group : {1, 2}) {
    Tmem tmem(/*with_peer=*/true);
    auto value = [](int cta, int lane, int col) {
      return static_cast<uint32_t>(cta << 24 | lane << 12 | col);
    };
    for (int cta = 0; cta < 2; ++cta) {
      for (int lane = 0; lane < 128; ++lane) {
        for (int col = 0; col < 512; ++col) {
          ASSERT_TRUE(tmem.Write(lane, col, value(cta, lane, col), cta).ok());
        }
      }
    }
    const int lane0 = 32, col0 = 8;
    ASSERT_TRUE(tmem.Shift(P(absl::StrCat("tcgen05.shift.cta_group::", cta_group,
                                          ".down")),
                           MakeTaddr(lane0, col0))
                    .ok());
    for (int cta = 0; cta < 2; ++cta) {
      for (int lane = 0; lane < 128; ++lane) {
        for (int col = 0; col < 512; ++col) {
          const bool moved = cta < cta_group && lane > lane0 && lane < lane0 + 32 &&
                             col >= col0 && col < col0 + 8;
          // Lane r+1 takes lane r (r = 0..30); lane 0 of the block keeps its data;
          // the old lane 31 is lost.
          ASSERT_EQ(tmem.At(lane, col, cta), value(cta, moved ? lane - 1 : lane, col))
              << "cta " << cta << " lane " << lane << " col " << col;
        }
      }
    }
  }
}

TEST(TmemShift, Errors) {
  Tmem tmem;
  const Instruction shift = P("tcgen05.shift.down.cta_group::1");
  for (int lane : {1, 16, 31, 40, 127}) {
    absl::Status st = tmem.Shift(shift, MakeTaddr(lane, 0));
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(st.message(), "multiple of 32")) << st;
  }
  EXPECT_TRUE(tmem.Shift(shift, MakeTaddr(96, 504)).ok());
  EXPECT_TRUE(absl::StrContains(tmem.Shift(shift, MakeTaddr(96, 505)).message(),
                                "past the last column"));
  EXPECT_EQ(tmem.Shift(P("tcgen05.shift.cta_group::2.down"), 0).code(),
            absl::StatusCode::kFailedPrecondition);
}

// ---------------------------------------------------------------------------
// ld/st fragments: register j of thread t -> (lane, column) relative to
// taddr, from docs/semantics.md section 3 (sources: 32x32b [PTX Fig. 183]; 16x64b,
// 16x128b, 16x256b, 16x32bx2 [CUTLASS copy_traits_sm100.hpp
// SM100_TMEM_LOAD_16dp{64,128,256,32}b*]).
std::pair<int, int> ExpectedCell(absl::string_view shape, int t, int j, int split) {
  if (shape == "32x32b") return {t, j};
  if (shape == "16x64b") return {t / 4 + 8 * (t % 2), (t / 2) % 2 + 2 * j};
  if (shape == "16x128b") return {t / 4 + (j % 2 ? 8 : 0), t % 4 + 4 * (j / 2)};
  if (shape == "16x256b") {
    return {t / 4 + (j % 4 >= 2 ? 8 : 0), 8 * (j / 4) + 2 * (t % 4) + (j % 2)};
  }
  return {t % 16, (t / 16) * split + j};  // 16x32bx2
}

uint32_t CellValue(int lane, int col) {
  // Low 16 bits identify (lane, column mod 256) so that pack::16b keeps them.
  return static_cast<uint32_t>(col << 16 | (lane & 0xFF) << 8 | (col & 0xFF));
}

TEST(TmemLdSt, FragmentTablesAndRoundTrip) {
  const char* const shapes[] = {"32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2"};
  for (const char* shape : shapes) {
    const int max_num = absl::string_view(shape) == "16x128b"   ? 64
                        : absl::string_view(shape) == "16x256b" ? 32
                                                                : 128;
    for (int num : {1, 2, 8, max_num}) {
      for (bool pack : {false, true}) {
        Instruction ld = P(absl::StrCat("tcgen05.ld.sync.aligned.", shape, ".x", num,
                                        pack ? ".pack::16b" : "", ".b32"));
        Instruction st = P(absl::StrCat("tcgen05.st.sync.aligned.", shape, ".x", num,
                                        pack ? ".unpack::16b" : "", ".b32"));
        const bool split_shape = absl::string_view(shape) == "16x32bx2";
        const int split = (pack ? 2 : 1) * num;
        if (split_shape) {
          if (split + (pack ? 2 : 1) * num > 512) continue;
          ld.half_split_offset = split;
          st.half_split_offset = split;
        }
        const int cols = *tcgen05::NumColumns(ld);
        const int col0 = 512 - cols >= 7 ? 7 : 0;
        for (int warp : {0, 5}) {
          // 16-lane shapes also at the upper half of the warp's lane quarter.
          const int lane0 = 32 * (warp % 4) + (absl::string_view(shape) == "32x32b" ? 0 : 16);
          Tmem tmem;
          for (int lane = 0; lane < 128; ++lane) {
            for (int col = 0; col < 512; ++col) {
              ASSERT_TRUE(tmem.Write(lane, col, CellValue(lane, col)).ok());
            }
          }
          const std::string what = absl::StrCat(tcgen05::Spelling(ld), " warp ", warp);
          absl::StatusOr<WarpRegisters> regs = tmem.Ld(ld, warp, MakeTaddr(lane0, col0));
          ASSERT_TRUE(regs.ok()) << what << ": " << regs.status();
          ASSERT_EQ(regs->size(), 32u);
          for (int t = 0; t < 32; ++t) {
            ASSERT_EQ((*regs)[t].size(), static_cast<size_t>(tcgen05::NumRegisters(ld)));
            for (int j = 0; j < tcgen05::NumRegisters(ld); ++j) {
              auto [lane, col] = ExpectedCell(shape, t, j, split);
              uint32_t expect;
              if (!pack) {
                expect = CellValue(lane0 + lane, col0 + col);
              } else {
                // pack::16b: column c of the unpacked view becomes the column
                // pair (2c, 2c+1); low halves packed low-first.
                const int half = split_shape ? (t / 16) * split : 0;
                const int c = half + 2 * (col - half);
                expect = (CellValue(lane0 + lane, col0 + c) & 0xFFFF) |
                         (CellValue(lane0 + lane, col0 + c + 1) << 16);
              }
              ASSERT_EQ((*regs)[t][j], expect) << what << " t=" << t << " j=" << j;
            }
          }
          // st of these registers into a clean TMEM, then ld, gives them back;
          // without unpack the cells equal the originals.
          Tmem fresh;
          ASSERT_TRUE(fresh.St(st, warp, MakeTaddr(lane0, col0), *regs).ok()) << what;
          absl::StatusOr<WarpRegisters> back = fresh.Ld(ld, warp, MakeTaddr(lane0, col0));
          ASSERT_TRUE(back.ok());
          EXPECT_EQ(*back, *regs) << what;
          if (!pack && !split_shape) {
            const int lanes = absl::string_view(shape) == "32x32b" ? 32 : 16;
            for (int lane = 0; lane < lanes; ++lane) {
              for (int col = 0; col < cols; ++col) {
                ASSERT_EQ(fresh.At(lane0 + lane, col0 + col),
                          CellValue(lane0 + lane, col0 + col))
                    << what;
              }
            }
          }
        }
      }
    }
  }
}

TEST(TmemLdSt, Errors) {
  Tmem tmem;
  const Instruction ld = P("tcgen05.ld.sync.aligned.32x32b.x8.b32");
  // Warp lane-access rule: warp w accesses lanes 32*(w%4) .. +31.
  absl::Status st = tmem.Ld(ld, 1, MakeTaddr(0, 0)).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(st.message(), "warp 1 may access lanes 32..63")) << st;
  EXPECT_TRUE(tmem.Ld(ld, 5, MakeTaddr(32, 0)).ok());
  st = tmem.Ld(P("tcgen05.ld.sync.aligned.16x64b.x1.b32"), 0, MakeTaddr(17, 0)).status();
  EXPECT_TRUE(absl::StrContains(st.message(), "touches lanes 17..32")) << st;
  st = tmem.Ld(ld, 0, MakeTaddr(0, 505)).status();
  EXPECT_TRUE(absl::StrContains(st.message(), "past the last column 511")) << st;
  st = tmem.Ld(ld, 0, MakeTaddr(0, 512)).status();
  EXPECT_TRUE(absl::StrContains(st.message(), "column (bits [15:0]) < 512")) << st;
  st = tmem.Ld(ld, -1, 0).status();
  EXPECT_TRUE(absl::StartsWith(st.message(), "warp")) << st;
  st = tmem.Ld(P("tcgen05.ld.sync.aligned.16x32bx2.x1.b32"), 0, 0).status();
  EXPECT_TRUE(absl::StrContains(st.message(), "immHalfSplitoff")) << st;
  st = tmem.Ld(P("tcgen05.st.sync.aligned.32x32b.x8.b32"), 0, 0).status();
  EXPECT_FALSE(st.ok());
  const Instruction st8 = P("tcgen05.st.sync.aligned.32x32b.x8.b32");
  EXPECT_TRUE(absl::StrContains(tmem.St(st8, 0, 0, WarpRegisters(31)).message(),
                                "expected 32 threads"));
  WarpRegisters regs(32, std::vector<uint32_t>(7));
  EXPECT_TRUE(absl::StrContains(tmem.St(st8, 0, 0, regs).message(),
                                "needs 8 registers per thread, got 7"));
  EXPECT_FALSE(tmem.Read(128, 0).ok());
  EXPECT_FALSE(tmem.Write(0, 512, 1).ok());
  EXPECT_FALSE(tmem.Read(0, 0, 1).ok());  // No peer.
}

// The question of the issue: after tcgen05.cp.128x256b of a tile and
// tcgen05.shift, what does tcgen05.ld.32x32b.x8 give thread 17? Lane 17 holds
// source row 16 after the shift; register j is column j, i.e. bytes 4j..4j+3
// of the row (chunk j/4... 8 columns = 2 chunks).
TEST(TmemScenario, CpShiftLd) {
  std::vector<uint8_t> smem(0x2000);
  tcgen05::SmemDescriptor d;
  d.leading_byte_offset = 0x800;
  d.stride_byte_offset = 0x80;
  for (int r = 0; r < 128; ++r) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 16; ++k) {
        smem[(r % 8) * 16 + (r / 8) * 0x80 + j * 0x800 + k] = PosByte(r, j, k, 0);
      }
    }
  }
  Tmem tmem;
  ASSERT_TRUE(tmem.Cp(P("tcgen05.cp.cta_group::1.128x256b"), smem,
                      *tcgen05::EncodeDescriptor(d), 0)
                  .ok());
  ASSERT_TRUE(tmem.Shift(P("tcgen05.shift.cta_group::1.down"), 0).ok());
  absl::StatusOr<WarpRegisters> regs =
      tmem.Ld(P("tcgen05.ld.sync.aligned.32x32b.x8.b32"), 0, 0);
  ASSERT_TRUE(regs.ok());
  for (int j = 0; j < 8; ++j) {
    uint32_t expect = 0;
    for (int b = 0; b < 4; ++b) {
      expect |= uint32_t{PosByte(16, j / 4, 4 * (j % 4) + b, 0)} << (8 * b);
    }
    EXPECT_EQ((*regs)[17][j], expect) << j;
  }
  // Thread 0 still sees row 0 (lane 0 of the block is not written).
  EXPECT_EQ((*regs)[0][0] & 0xFF, 0u);
  EXPECT_EQ((*regs)[1][0] & 0xFF, 0u);  // Lane 1 took row 0.
  EXPECT_EQ((*regs)[2][0] & 0xFF, 1u);
}

}  // namespace
}  // namespace mxpack
