// Bit order of the packed layouts pinned to docs/semantics.md section 2 with
// hand-written byte vectors, through the scalar reference and the dispatched
// entry points (best target).
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "mxpack/pack.h"

namespace mxpack {
namespace {

using Bytes = std::vector<uint8_t>;

std::vector<Impl> Impls() {
  std::vector<Impl> v = {Impl{Impl::kScalar}, Impl{Impl::kBest}};
  for (int64_t t : AvailableTargets()) v.push_back(Impl{t});
  return v;
}

Bytes DoPack(Layout l, const Bytes& codes, Impl impl) {
  Bytes out(PackedBytes(l, codes.size()), 0xEE);
  EXPECT_TRUE(Pack(l, codes, absl::MakeSpan(out), impl).ok());
  return out;
}

Bytes DoUnpack(Layout l, const Bytes& packed, size_t n, Impl impl) {
  Bytes out(n, 0xEE);
  EXPECT_TRUE(Unpack(l, packed, absl::MakeSpan(out), impl).ok());
  return out;
}

TEST(PackBitOrder, Dense4) {
  // Element 2i in bits [3:0], 2i+1 in [7:4]: codes 1,2,3 -> 0x21, 0x03.
  const Bytes codes = {0x1, 0x2, 0x3};
  const Bytes want = {0x21, 0x03};
  for (Impl impl : Impls()) {
    SCOPED_TRACE(ImplName(impl));
    EXPECT_EQ(DoPack(Layout::kDense4, codes, impl), want);
    EXPECT_EQ(DoUnpack(Layout::kDense4, want, 3, impl), codes);
  }
}

TEST(PackBitOrder, Dense6) {
  // Codes 0x01, 0x02, 0x03, 0x3F: word = 0x3F<<18 | 3<<12 | 2<<6 | 1
  //   = 0xFC0000 | 0x3000 | 0x80 | 0x1 = 0xFC3081 -> bytes 81 30 FC.
  // A fifth code 0x2A starts a new 3-byte group: 2A 00 00.
  const Bytes codes = {0x01, 0x02, 0x03, 0x3F, 0x2A};
  const Bytes want = {0x81, 0x30, 0xFC, 0x2A, 0x00, 0x00};
  for (Impl impl : Impls()) {
    SCOPED_TRACE(ImplName(impl));
    EXPECT_EQ(DoPack(Layout::kDense6, codes, impl), want);
    EXPECT_EQ(DoUnpack(Layout::kDense6, want, 5, impl), codes);
  }
}

TEST(PackBitOrder, B4x16P64) {
  // 16 codes 0..15 -> bytes 0x10 0x32 0x54 0x76 0x98 0xBA 0xDC 0xFE, then 8
  // bytes of zero padding (bytes 8-15).
  Bytes codes(16);
  for (int i = 0; i < 16; ++i) codes[i] = static_cast<uint8_t>(i);
  const Bytes want = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE,
                      0, 0, 0, 0, 0, 0, 0, 0};
  // Garbage in padding must be ignored by readers.
  Bytes garbage = want;
  for (int i = 8; i < 16; ++i) garbage[i] = 0xA5;
  // Decompressed: code in bits [5:2] of each container.
  Bytes containers(16);
  for (int i = 0; i < 16; ++i) containers[i] = static_cast<uint8_t>(i << 2);
  for (Impl impl : Impls()) {
    SCOPED_TRACE(ImplName(impl));
    EXPECT_EQ(DoPack(Layout::kB4x16P64, codes, impl), want);
    EXPECT_EQ(DoUnpack(Layout::kB4x16P64, garbage, 16, impl), codes);
    Bytes out(16, 0xEE);
    ASSERT_TRUE(Decompress(Layout::kB4x16P64, garbage, absl::MakeSpan(out),
                           Fp6Container::kLow6, impl)
                    .ok());
    EXPECT_EQ(out, containers);
    Bytes back(16, 0xEE);
    ASSERT_TRUE(Compress(Layout::kB4x16P64, containers, absl::MakeSpan(back),
                         Fp6Container::kLow6, impl)
                    .ok());
    EXPECT_EQ(back, want);
  }
}

TEST(PackBitOrder, B6x16P32) {
  // 16 codes: group j of 4 is {j, 0x10+j, 0x20+j, 0x3F}; each group is the
  // 24-bit LE word c0 | c1<<6 | c2<<12 | c3<<18. Group 0: 0 | 0x10<<6 |
  // 0x20<<12 | 0x3F<<18 = 0x000400 + 0x020000 + 0xFC0000 = 0xFE0400 ->
  // 00 04 FE. Bytes 12-15 are padding.
  Bytes codes(16);
  Bytes want(16, 0);
  for (int g = 0; g < 4; ++g) {
    const uint32_t c[4] = {uint32_t(g), 0x10u + g, 0x20u + g, 0x3Fu};
    for (int j = 0; j < 4; ++j) codes[4 * g + j] = static_cast<uint8_t>(c[j]);
    const uint32_t w = c[0] | c[1] << 6 | c[2] << 12 | c[3] << 18;
    want[3 * g] = w & 0xFF;
    want[3 * g + 1] = (w >> 8) & 0xFF;
    want[3 * g + 2] = (w >> 16) & 0xFF;
  }
  EXPECT_EQ(want[0], 0x00);
  EXPECT_EQ(want[1], 0x04);
  EXPECT_EQ(want[2], 0xFE);
  Bytes garbage = want;
  for (int i = 12; i < 16; ++i) garbage[i] = 0x5A;
  for (Impl impl : Impls()) {
    SCOPED_TRACE(ImplName(impl));
    EXPECT_EQ(DoPack(Layout::kB6x16P32, codes, impl), want);
    EXPECT_EQ(DoUnpack(Layout::kB6x16P32, garbage, 16, impl), codes);
    for (Fp6Container c : {Fp6Container::kLow6, Fp6Container::kMid6}) {
      SCOPED_TRACE(Fp6ContainerName(c));
      Bytes cont(16);
      for (int i = 0; i < 16; ++i) {
        cont[i] = static_cast<uint8_t>(codes[i] << (c == Fp6Container::kMid6));
      }
      Bytes out(16, 0xEE);
      ASSERT_TRUE(
          Decompress(Layout::kB6x16P32, garbage, absl::MakeSpan(out), c, impl).ok());
      EXPECT_EQ(out, cont);
      Bytes back(16, 0xEE);
      ASSERT_TRUE(Compress(Layout::kB6x16P32, cont, absl::MakeSpan(back), c, impl).ok());
      EXPECT_EQ(back, want);
    }
  }
}

TEST(PackErrors, MessagesNameArgumentExpectedActual) {
  for (Impl impl : Impls()) {
    SCOPED_TRACE(ImplName(impl));
    Bytes out(15);
    absl::Status s = Decompress(Layout::kB4x16P64, Bytes(15), absl::MakeSpan(out),
                                Fp6Container::kLow6, impl);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("packed: 15 bytes is not a multiple of 16"),
              std::string::npos)
        << s;
    s = Decompress(Layout::kDense4, Bytes(16), absl::MakeSpan(out),
                   Fp6Container::kLow6, impl);
    EXPECT_NE(s.message().find("src: expected layout b4x16_p64 or b6x16_p32, got dense4"),
              std::string::npos)
        << s;
    // Container 0x3D has bit 0 set: outside 00xxxx00.
    Bytes cont(32, 0x04);
    cont[19] = 0x3D;
    Bytes packed(32, 0x77);
    s = Compress(Layout::kB4x16P64, cont, absl::MakeSpan(packed),
                 Fp6Container::kLow6, impl);
    EXPECT_NE(s.message().find("b8x16[19] = 0x3D"), std::string::npos) << s;
    EXPECT_EQ(packed, Bytes(32, 0x77)) << "nothing written on error";
    // mid6: bit 0 must be clear; low6: bits 7:6 must be clear.
    cont.assign(32, 0x7E);
    s = Compress(Layout::kB6x16P32, cont, absl::MakeSpan(packed),
                 Fp6Container::kMid6, impl);
    EXPECT_TRUE(s.ok()) << s;
    s = Compress(Layout::kB6x16P32, cont, absl::MakeSpan(packed),
                 Fp6Container::kLow6, impl);
    EXPECT_NE(s.message().find("b8x16[0] = 0x7E"), std::string::npos) << s;
    Bytes codes = {1, 2, 0x13};
    Bytes p2(2);
    s = Pack(Layout::kDense4, codes, absl::MakeSpan(p2), impl);
    EXPECT_NE(s.message().find("codes[2] = 0x13"), std::string::npos) << s;
    Bytes p3(3);
    s = Pack(Layout::kDense4, codes, absl::MakeSpan(p3), impl);
    EXPECT_NE(s.message().find("packed: expected 2 bytes for 3 elements in layout dense4, got 3"),
              std::string::npos)
        << s;
  }
}

}  // namespace
}  // namespace mxpack
