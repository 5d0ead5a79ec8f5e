// Every compiled Highway target of the packed-layout kernels against the
// scalar reference: every code in every lane position, random buffers,
// lengths 0..5 vectors (+ tails), unaligned pointers, garbage padding, both
// FP6 container placements, and the fused decode/encode paths.
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/pack/pack_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "mxpack/dispatch.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"

#ifndef MXPACK_TESTS_PACK_TEST_HELPERS_
#define MXPACK_TESTS_PACK_TEST_HELPERS_
namespace mxpack {
namespace pack_test {

using Bytes = std::vector<uint8_t>;

constexpr Layout kLayouts[] = {Layout::kDense4, Layout::kDense6,
                               Layout::kB4x16P64, Layout::kB6x16P32};
constexpr Fp6Container kContainers[] = {Fp6Container::kLow6,
                                        Fp6Container::kMid6};

// Offset-able buffer: data at base + offset (offset 0..63 -> unaligned).
struct Buf {
  Bytes storage;
  size_t offset;
  Buf(size_t n, size_t off, uint8_t fill) : storage(n + off + 64, fill), offset(off) {}
  uint8_t* data() { return storage.data() + offset; }
};

// First mismatch as a message naming target, what, index, expected, actual.
::testing::AssertionResult SameBytes(const std::string& what, const uint8_t* want,
                                     const uint8_t* got, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (want[i] != got[i]) {
      char msg[160];
      std::snprintf(msg, sizeof(msg), "%s: byte %zu of %zu: expected 0x%02X, got 0x%02X",
                    what.c_str(), i, n, want[i], got[i]);
      return ::testing::AssertionFailure() << msg;
    }
  }
  return ::testing::AssertionSuccess();
}

std::string Where(Impl impl, Layout l, size_t n, size_t off) {
  return ImplName(impl) + " " + std::string(LayoutName(l)) + " n=" +
         std::to_string(n) + " offset=" + std::to_string(off);
}

// Skips targets this library was not built for (never expected).
bool LibraryHas(int64_t target) {
  for (int64_t t : AvailableTargets()) {
    if (t == target) return true;
  }
  return false;
}

}  // namespace pack_test
}  // namespace mxpack
#endif  // MXPACK_TESTS_PACK_TEST_HELPERS_

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace pack_test;  // NOLINT

size_t VectorBytes() { return hn::Lanes(hn::ScalableTag<uint8_t>()); }

// Pack and Unpack: iota codes (code k+i at index i for every k, so every
// code visits every lane), lengths 0..5 vectors + 17, offsets 0..3 and 61.
void TestPackUnpack() {
  if (!LibraryHas(HWY_TARGET)) return;
  const Impl impl{HWY_TARGET};
  const size_t max_n = 5 * VectorBytes() + 17;
  std::mt19937 rng(123);
  for (Layout l : kLayouts) {
    const uint32_t mask = (1u << LayoutElementBits(l)) - 1;
    for (size_t n = 0; n <= max_n; ++n) {
      // Full iota sweep on a few lengths, one shift elsewhere.
      const uint32_t shifts = (n == max_n || n == 5 * VectorBytes()) ? mask + 1 : 1;
      for (uint32_t k = 0; k < shifts; ++k) {
        const size_t off = (n + k) % 4 == 3 ? 61 : (n + k) % 4;
        Buf codes(n, off, 0);
        for (size_t i = 0; i < n; ++i) {
          codes.data()[i] = static_cast<uint8_t>(
              (shifts > 1 ? (k + i) : rng()) & mask);
        }
        const size_t pb = PackedBytes(l, n);
        Bytes want(pb, 0xEE);
        ASSERT_TRUE(scalar::Pack(l, absl::MakeConstSpan(codes.data(), n),
                                 absl::MakeSpan(want)).ok());
        Buf got(pb, (off * 7) % 64, 0xEE);
        ASSERT_TRUE(Pack(l, absl::MakeConstSpan(codes.data(), n),
                         absl::MakeSpan(got.data(), pb), impl).ok());
        ASSERT_TRUE(SameBytes("Pack " + Where(impl, l, n, off), want.data(),
                              got.data(), pb));
        ASSERT_EQ(got.data()[pb], 0xEE) << "Pack wrote past the end";
        // Garbage in padding (and in the unused bits of a final dense
        // group is NOT garbage: those are code bits of elements >= n, which
        // Unpack ignores too).
        if (l == Layout::kB4x16P64 || l == Layout::kB6x16P32) {
          const size_t pad = l == Layout::kB4x16P64 ? 8 : 12;
          for (size_t g = 0; g < pb / 16; ++g) {
            for (size_t b = pad; b < 16; ++b) got.data()[16 * g + b] = static_cast<uint8_t>(rng());
          }
        }
        if (n % 2 == 1 && l == Layout::kDense4) got.data()[pb - 1] |= 0xA0;
        Buf back(n, off, 0xEE);
        ASSERT_TRUE(Unpack(l, absl::MakeConstSpan(got.data(), pb),
                           absl::MakeSpan(back.data(), n), impl).ok());
        ASSERT_TRUE(SameBytes("Unpack " + Where(impl, l, n, off), codes.data(),
                              back.data(), n));
        ASSERT_EQ(back.data()[n], 0xEE) << "Unpack wrote past the end";
      }
    }
  }
}

// Decompress / Compress: random packed bytes (padding included, so padding
// is garbage), 0..5 vectors of groups + 3, both FP6 placements.
void TestDecompressCompress() {
  if (!LibraryHas(HWY_TARGET)) return;
  const Impl impl{HWY_TARGET};
  std::mt19937 rng(7);
  const size_t max_groups = 5 * VectorBytes() / 16 + 3;
  for (Layout l : {Layout::kB4x16P64, Layout::kB6x16P32}) {
    for (Fp6Container c : kContainers) {
      for (size_t groups = 0; groups <= max_groups; ++groups) {
        const size_t bytes = groups * 16;
        const size_t off = groups % 5;
        Buf packed(bytes, off, 0);
        for (size_t i = 0; i < bytes; ++i) packed.data()[i] = static_cast<uint8_t>(rng());
        const auto in = absl::MakeConstSpan(packed.data(), bytes);
        Bytes want(bytes, 0xEE);
        ASSERT_TRUE(scalar::Decompress(l, in, absl::MakeSpan(want), c).ok());
        Buf got(bytes, (off + 3) % 64, 0xEE);
        ASSERT_TRUE(Decompress(l, in, absl::MakeSpan(got.data(), bytes), c, impl).ok());
        ASSERT_TRUE(SameBytes("Decompress " + Where(impl, l, bytes, off) + " " +
                                  std::string(Fp6ContainerName(c)),
                              want.data(), got.data(), bytes));
        ASSERT_EQ(got.data()[bytes], 0xEE);
        // Compress of the containers reproduces the payload with zero padding.
        Bytes want_packed(bytes, 0xEE);
        ASSERT_TRUE(scalar::Compress(l, want, absl::MakeSpan(want_packed), c).ok());
        Buf back(bytes, off + 1, 0xEE);
        ASSERT_TRUE(Compress(l, want, absl::MakeSpan(back.data(), bytes), c, impl).ok());
        ASSERT_TRUE(SameBytes("Compress " + Where(impl, l, bytes, off),
                              want_packed.data(), back.data(), bytes));
        const size_t pad = l == Layout::kB4x16P64 ? 8 : 12;
        for (size_t i = 0; i < bytes; ++i) {
          const uint8_t expect = i % 16 >= pad ? 0 : packed.data()[i];
          ASSERT_EQ(back.data()[i], expect) << "round trip byte " << i;
        }
      }
    }
  }
}

// A container with a bit outside its payload at every position is rejected
// with that index, and nothing is written.
void TestCompressRejects() {
  if (!LibraryHas(HWY_TARGET)) return;
  const Impl impl{HWY_TARGET};
  const size_t bytes = (2 * VectorBytes() + 31) / 16 * 16;
  for (Layout l : {Layout::kB4x16P64, Layout::kB6x16P32}) {
    for (Fp6Container c : kContainers) {
      const uint8_t mask = scalar::ContainerMask(LayoutElementBits(l), c);
      for (size_t pos = 0; pos < bytes; ++pos) {
        Bytes cont(bytes, mask);
        cont[pos] = static_cast<uint8_t>(mask | (1u << (pos % 8)));
        if (cont[pos] == mask) continue;  // bit inside the payload
        Bytes out(bytes, 0x77);
        const absl::Status s = Compress(l, cont, absl::MakeSpan(out), c, impl);
        const std::string needle = "b8x16[" + std::to_string(pos) + "]";
        ASSERT_NE(s.message().find(needle), std::string::npos)
            << ImplName(impl) << ": " << s;
        ASSERT_EQ(out, Bytes(bytes, 0x77));
        // DecodeContainers applies the same rule.
        const Format elem = LayoutElementBits(l) == 4 ? Format::kE2M1 : Format::kE3M2;
        Bytes f(bytes * 4, 0x77);
        const absl::Status s2 =
            DecodeContainers(elem, Format::kF32, cont, absl::MakeSpan(f), c, impl);
        ASSERT_NE(s2.message().find(needle), std::string::npos) << s2;
        ASSERT_EQ(f, Bytes(bytes * 4, 0x77));
      }
    }
  }
}

// Fused decode (packed and containers -> f32/bf16/f16) across tile
// boundaries against the scalar reference.
void TestFusedDecode() {
  if (!LibraryHas(HWY_TARGET)) return;
  const Impl impl{HWY_TARGET};
  std::mt19937 rng(99);
  for (size_t n : {size_t{0}, size_t{1}, size_t{33}, size_t{2048}, size_t{2049}, size_t{4099}}) {
    for (Layout l : kLayouts) {
      const bool four = LayoutElementBits(l) == 4;
      for (Format elem : four ? std::vector<Format>{Format::kE2M1}
                              : std::vector<Format>{Format::kE2M3, Format::kE3M2}) {
        for (Format to : {Format::kF32, Format::kBF16, Format::kF16}) {
          const size_t ob = Traits(to).storage_bytes;
          Bytes packed(PackedBytes(l, n));
          for (auto& b : packed) b = static_cast<uint8_t>(rng());
          Bytes want(n * ob), got(n * ob + 1, 0xEE);
          ASSERT_TRUE(scalar::DecodePacked(l, elem, to, packed, absl::MakeSpan(want)).ok());
          ASSERT_TRUE(DecodePacked(l, elem, to, packed, absl::MakeSpan(got.data() + 1, n * ob),
                                   impl).ok());
          ASSERT_TRUE(SameBytes("DecodePacked " + Where(impl, l, n, 1) + " to " +
                                    std::string(FormatName(to)),
                                want.data(), got.data() + 1, n * ob));
          for (Fp6Container c : kContainers) {
            Bytes cont(n);
            for (auto& b : cont) {
              b = scalar::ToContainer(LayoutElementBits(l), static_cast<uint8_t>(rng()), c);
            }
            ASSERT_TRUE(scalar::DecodeContainers(elem, to, cont, absl::MakeSpan(want), c).ok());
            ASSERT_TRUE(DecodeContainers(elem, to, cont, absl::MakeSpan(got.data() + 1, n * ob),
                                         c, impl).ok());
            ASSERT_TRUE(SameBytes("DecodeContainers " + Where(impl, l, n, 1),
                                  want.data(), got.data() + 1, n * ob));
          }
        }
      }
    }
  }
}

// Fused encode (f32/bf16/f16 -> packed) with several policies, inputs full of
// specials, ties and random bits, across tile boundaries.
void TestFusedEncode() {
  if (!LibraryHas(HWY_TARGET)) return;
  const Impl impl{HWY_TARGET};
  std::mt19937 rng(5);
  EncodePolicy rn, rz, rs, relu, rn_relu;
  rz.rounding = Rounding::kRZ;
  rs.rounding = Rounding::kRS;
  relu.relu = true;
  relu.rounding = Rounding::kRP;
  rn_relu.relu = true;  // rn (with and without relu) takes the one-pass fused kernel
  for (size_t n : {size_t{0}, size_t{3}, size_t{31}, size_t{2048}, size_t{2065}}) {
    for (Layout l : kLayouts) {
      const bool four = LayoutElementBits(l) == 4;
      for (Format elem : four ? std::vector<Format>{Format::kE2M1}
                              : std::vector<Format>{Format::kE2M3, Format::kE3M2}) {
        for (Format from : {Format::kF32, Format::kBF16, Format::kF16}) {
          const size_t ib = Traits(from).storage_bytes;
          Bytes in(n * ib);
          for (size_t i = 0; i < n; ++i) {
            // Values near the element range: random sign, small exponents.
            float x = std::ldexp(static_cast<float>(rng() % 4096) / 4096.0f + 1.0f,
                                 static_cast<int>(rng() % 12) - 8);
            if (rng() & 1) x = -x;
            if (i % 97 == 5) x = std::numeric_limits<float>::quiet_NaN();
            if (i % 89 == 7) x = -std::numeric_limits<float>::infinity();
            const uint64_t bits = scalar::Convert(Format::kF32, from, scalar::F32Bits(x), rn);
            for (size_t b = 0; b < ib; ++b) in[i * ib + b] = static_cast<uint8_t>(bits >> (8 * b));
          }
          for (const EncodePolicy& p : {rn, rn_relu, rz, rs, relu}) {
            std::vector<uint32_t> rbits;
            if (p.rounding == Rounding::kRS) {
              for (size_t i = 0; i < n; ++i) rbits.push_back(RandomBits(42, i));
            }
            const size_t pb = PackedBytes(l, n);
            Bytes want(pb), got(pb + 3, 0xEE);
            ASSERT_TRUE(scalar::EncodePacked(from, elem, l, p, in, absl::MakeSpan(want), rbits).ok());
            const absl::Status s = EncodePacked(from, elem, l, p, in,
                                                absl::MakeSpan(got.data() + 3, pb), rbits, impl);
            ASSERT_TRUE(s.ok()) << s;
            ASSERT_TRUE(SameBytes("EncodePacked " + Where(impl, l, n, 3) + " from " +
                                      std::string(FormatName(from)) + " " + PolicyToString(p),
                                  want.data(), got.data() + 3, pb));
          }
        }
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mxpack {
HWY_BEFORE_TEST(PackTest);
HWY_EXPORT_AND_TEST_P(PackTest, TestPackUnpack);
HWY_EXPORT_AND_TEST_P(PackTest, TestDecompressCompress);
HWY_EXPORT_AND_TEST_P(PackTest, TestCompressRejects);
HWY_EXPORT_AND_TEST_P(PackTest, TestFusedDecode);
HWY_EXPORT_AND_TEST_P(PackTest, TestFusedEncode);
}  // namespace mxpack
#endif
