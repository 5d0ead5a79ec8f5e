// The AVX3_DL byte-table codecs of MXFP4 and MXFP6
// (src/mx/encode_e2m1_bf16-inl.h, src/mx/encode_fp6_bf16-inl.h) against the
// scalar reference on every target: every bucket of the scaled magnitude, on
// and off its lower end, with either sign, at every lane of both blocks of a
// 64-element step, for scale exponents on both sides of each codec's kMinX and
// up to the largest scale, from bf16 and from f32 (high halves with low halves
// zero and nonzero), every scale mode (f32 under floor: from the narrowed
// buffer of pass 1; the others: Codes32 on the high halves) and element
// layout, with an odd last block in the last chunk.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "mxpack/mx.h"
#include "tests/mx/mx_test_util.h"

namespace mxpack::mx_test {
namespace {

struct CodecFormat {
  MxFormat format;
  int emax;   // of the element format: the floor scale is 2^(E(amax) - emax)
  int min_x;  // the codec's kMinX: smaller scale exponents take another path
};
constexpr CodecFormat kCodecFormats[] = {{MxFormat::kMxfp4, 2, -124},
                                         {MxFormat::kMxfp6E2m3, 2, -122},
                                         {MxFormat::kMxfp6E3m2, 4, -121}};

// The 32-bit source words (bf16: the low 16 bits) of the blocks for scale
// exponent anchors `xs` of `cf`: per anchor x, blocks whose element 0 is the
// amax 1.9921875 * 2^(x + emax) (scale 2^x under the floor mode, 2^(x + 1)
// under the others), sign alternating, and whose elements 1..31 run through
// the values of `vals(x)` 62 times over, with `gap` +0 after each pass:
// |vals| + gap is odd and not a multiple of 31, so each value meets every
// lane 1..31 of an even and of an odd block (both halves of a 64-element
// step). Then copies of the first blocks until the count is a multiple of 3
// (rows of 96) and odd modulo 128 (an odd last block in the last chunk).
template <class Vals>
std::vector<std::vector<uint32_t>> Blocks(const CodecFormat& cf,
                                          const std::vector<int>& xs,
                                          uint32_t amax_low, const Vals& vals) {
  std::vector<std::vector<uint32_t>> blocks;
  for (const int x : xs) {
    const uint32_t amax = static_cast<uint32_t>(x + cf.emax + 127) << 7 | 0x7F;
    const std::vector<uint32_t> v = vals(x, amax);
    size_t gap = 1;
    while ((v.size() + gap) % 2 == 0 || (v.size() + gap) % 31 == 0) ++gap;
    std::vector<uint32_t> stream;
    for (int rep = 0; rep < 62; ++rep) {
      stream.insert(stream.end(), v.begin(), v.end());
      stream.insert(stream.end(), gap, 0u);
    }
    for (size_t p = 0; p < stream.size(); p += 31) {
      std::vector<uint32_t> b(32, 0);
      b[0] = (amax << 16 | amax_low) | static_cast<uint32_t>(blocks.size() % 2)
                                           << 31;
      for (size_t j = 1; j < 32 && p + j - 1 < stream.size(); ++j)
        b[j] = stream[p + j - 1];
      blocks.push_back(b);
    }
  }
  const size_t n0 = blocks.size();
  while (blocks.size() % 3 != 0 || blocks.size() % 128 % 2 == 0) {
    blocks.push_back(blocks[blocks.size() % n0]);
  }
  return blocks;
}

// Every bf16 magnitude from 2^(x - 10) (below half the smallest subnormal
// of every format at scale 2^x) up to `amax`, the bf16 subnormals 0x0001,
// 0x0040, 0x007F, and +0, each with both signs (bf16 bits in the high half
// of the word, `low` below them).
std::vector<uint32_t> Magnitudes(int x, uint32_t amax,
                                 const std::vector<uint32_t>& lows) {
  std::vector<uint32_t> hs;
  for (int e = std::max(1, x + 127 - 10);
       (static_cast<uint32_t>(e) << 7) <= amax; ++e) {
    for (uint32_t m = 0; m < 128; ++m) {
      const uint32_t h = static_cast<uint32_t>(e) << 7 | m;
      if (h <= amax) hs.push_back(h);
    }
  }
  for (const uint32_t sub : {0x0001u, 0x0040u, 0x007Fu, 0x0000u})
    hs.push_back(sub);
  std::vector<uint32_t> v;
  for (const uint32_t h : hs) {
    for (const uint32_t low : lows) {
      for (const uint32_t s : {0u, 1u}) v.push_back(s << 31 | h << 16 | low);
    }
  }
  return v;
}

std::vector<int> Anchors(const CodecFormat& cf) {
  // Below kMinX (the folded range encoder), kMinX and above, ordinary and
  // the largest scale (amax's exponent field 254).
  return {cf.min_x - 1, cf.min_x, cf.min_x + 1, -3, 0, 254 - 127 - cf.emax};
}

TEST(MxBf16Codec, Bf16EveryBucketLaneAndSignEveryTarget) {
  for (const CodecFormat& cf : kCodecFormats) {
    const auto blocks = Blocks(cf, Anchors(cf), 0, [](int x, uint32_t amax) {
      return Magnitudes(x, amax, {0});
    });
    std::vector<uint8_t> in;
    in.reserve(blocks.size() * 64);
    for (const auto& b : blocks) {
      for (const uint32_t w : b) {
        in.push_back(static_cast<uint8_t>(w >> 16));
        in.push_back(static_cast<uint8_t>(w >> 24));
      }
    }
    const size_t rows = blocks.size() / 3;
    ASSERT_NO_FATAL_FAILURE(ExpectEveryLayoutAndModeEqualsScalar(
        cf.format, Format::kBF16, in, rows, 96));
  }
}

TEST(MxBf16Codec, F32EveryBucketLaneAndSignEveryTarget) {
  // The low halves 0 (on a bucket's lower end where the bf16 allows it),
  // 1 and 0xFFFF (inside the bucket, the largest value that truncates to
  // the same bf16); the amax with 0xFFFF so that its truncation is not the
  // amax.
  for (const CodecFormat& cf : kCodecFormats) {
    const auto blocks =
        Blocks(cf, Anchors(cf), 0xFFFF, [](int x, uint32_t amax) {
          return Magnitudes(x, amax, {0, 1, 0xFFFF});
        });
    std::vector<uint8_t> in(blocks.size() * 128);
    for (size_t i = 0; i < blocks.size(); ++i)
      std::memcpy(&in[128 * i], blocks[i].data(), 128);
    const size_t rows = blocks.size() / 3;
    ASSERT_NO_FATAL_FAILURE(ExpectEveryLayoutAndModeEqualsScalar(
        cf.format, Format::kF32, in, rows, 96));
  }
}

}  // namespace
}  // namespace mxpack::mx_test
