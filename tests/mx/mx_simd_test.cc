// Every SIMD target of MX / NVFP4 quantization equals the scalar reference:
// random tensors over every format, mode, source and layout, and structured
// inputs aimed at each fast path (tiny and huge blocks, NaN blocks and row
// padding, every scale code, ties, a caller's FTZ / DAZ, row ranges).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/dispatch.h"
#include "mxpack/mx.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "src/mx/mx_internal.h"
#include "tests/common/oracle.h"
#include "tests/mx/mx_test_util.h"

namespace mxpack::mx_test {
namespace {

// ---------------------------------------------------------------------------
// Every SIMD target equals the scalar reference.

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (MxFormat f : kFormats) {
    const int bits = Traits(MxElementFormat(f)).bits;
    std::vector<ElementLayout> layouts = {ElementLayout::kCodes};
    if (bits == 4) {
      layouts.push_back(ElementLayout::kDense4);
      layouts.push_back(ElementLayout::kB4x16P64);
    }
    if (bits == 6) {
      layouts.push_back(ElementLayout::kDense6);
      layouts.push_back(ElementLayout::kB6x16P32);
    }
    for (ScaleMode m : kModes) {
      for (Format from : {Format::kF32, Format::kBF16, Format::kF16}) {
        for (ElementLayout l : layouts) {
          for (ScaleLayout sl : {ScaleLayout::kLinear, ScaleLayout::kTcgen05}) {
            // Aligned (flat run across rows), ragged, and one long row.
            cases.push_back({f, m, from, l, sl, 130, 64});
            cases.push_back({f, m, from, l, sl, 9, 77});
            cases.push_back({f, m, from, l, sl, 2, 2080});
          }
        }
      }
    }
  }
  return cases;
}

TEST(MxSimd, EveryTargetEqualsScalar) {
  const std::vector<int64_t> targets = AvailableTargets();
  ASSERT_FALSE(targets.empty());
  uint32_t seed = 1;
  for (const Case& c : AllCases()) {
    const std::vector<float> x = RandomTensor(c.rows * c.cols, seed++, true);
    const std::vector<uint8_t> in = ToSource(x, c.from);
    MxOptions o;
    o.scale_mode = c.mode;
    o.layout = c.layout;
    o.scale_layout = c.scale_layout;
    const std::string what = absl::StrFormat(
        "%s %s from %s %s %s %dx%d", MxFormatName(c.format),
        ScaleModeName(c.mode), FormatName(c.from), ElementLayoutName(c.layout),
        ScaleLayoutName(c.scale_layout), c.rows, c.cols);
    absl::StatusOr<MxTensor> ref =
        QuantizeMx(c.format, c.from, in, c.rows, c.cols, o, Impl{Impl::kScalar});
    ASSERT_TRUE(ref.ok()) << what << ": " << ref.status();
    for (int64_t target : targets) {
      absl::StatusOr<MxTensor> got =
          QuantizeMx(c.format, c.from, in, c.rows, c.cols, o, Impl{target});
      ASSERT_TRUE(got.ok()) << what;
      ASSERT_EQ(F32Bits(got->tensor_scale), F32Bits(ref->tensor_scale));
      for (size_t i = 0; i < ref->scales.size(); ++i) {
        ASSERT_EQ(got->scales[i], ref->scales[i])
            << what << " target " << ImplName(Impl{target}) << " scale byte "
            << i;
      }
      for (size_t i = 0; i < ref->elements.size(); ++i) {
        ASSERT_EQ(got->elements[i], ref->elements[i])
            << what << " target " << ImplName(Impl{target}) << " element byte "
            << i;
      }
    }
  }
}

TEST(MxSimd, TinyBlocksEveryTarget) {
  // Whole blocks of f32 subnormals and tiny normals: their scales multiply
  // the elements up (by as much as 2^127), so the SIMD encoders must see the
  // exact subnormal inputs (the F16C path runs with FTZ but without DAZ) and
  // round the scaled values with the right sticky bits. Random mantissas at
  // every binade from 2^-149 to 2^-110; each target equals the reference.
  constexpr size_t kRows = 40, kCols = 64;
  const std::vector<float> x = RandomAtBinades(kRows * kCols, 4242, [](size_t i) {
    return -110 - static_cast<int>((i / 16) % 40);  // per 16 elements
  });
  ExpectEveryTargetEqualsScalar(x, kRows, kCols, "tiny blocks");
}

TEST(MxSimd, HugeBlocksEveryTarget) {
  // Blocks at 2^100 .. 2^127: their multipliers 2^-s (with the F16C path's
  // folded 2^(bias - 15)) are f32 subnormals, built from bits and applied
  // without DAZ; bf16 sources into e2m1 / e3m2 / e5m2 also skip the sticky
  // OR. Each target equals the reference.
  constexpr size_t kRows = 28, kCols = 64;
  const std::vector<float> x = RandomAtBinades(kRows * kCols, 9191, [](size_t i) {
    return 128 - static_cast<int>((i / 16) % 28);  // per 16 elements
  });
  ExpectEveryTargetEqualsScalar(x, kRows, kCols, "huge blocks");
}

TEST(MxSimd, NanBlocksRowPaddingAndScaleRunsEveryTarget) {
  // Deterministic NaN blocks whose rows end in padding: with 100 (MX) and
  // 120 (NVFP4) columns a row is 128 padded elements, so on 512-bit targets
  // the partial block with the NaN and its padding lanes lies in a whole
  // 64-element step (not the tail). Padding must stay code 0 in every
  // layout. 9 blocks per row over more than one chunk starts chunks at a
  // block that is not a multiple of 4, followed by whole tcgen05 groups.
  for (size_t cols : {size_t{100}, size_t{120}, size_t{9 * 32}, size_t{9 * 16}}) {
    const size_t rows = cols > 120 ? 40 : 9;
    std::vector<float> x = RandomTensor(rows * cols, static_cast<uint32_t>(cols), false);
    for (size_t r = 1; r < rows; r += 2) {
      x[r * cols + cols - 3] = std::numeric_limits<float>::quiet_NaN();
    }
    x[5] = -std::numeric_limits<float>::infinity();
    ExpectEveryTargetEqualsScalar(x, rows, cols, "NaN blocks");
  }
}

TEST(MxSimd, Bf16EveryMagnitudeBelowAnAnchorEveryTarget) {
  // bf16 into MXFP8 takes a direct integer path on x86 (u16 lanes, no
  // widening) for vectors whose scaled values are all normals of the element
  // format or +-0, and the general path otherwise (MXFP4, whose bf16 path
  // is the general one, runs the same tensors). Each anchor A (the amax)
  // is followed by every bf16 magnitude from 0 to A in ascending order, 31
  // per block after A, with alternating signs: the upper blocks take the
  // direct path (rounding ties included: every mantissa occurs), the lower
  // ones hold scaled subnormals and bf16 subnormals (general path), and the
  // top binade saturates in floor mode. The first block also holds +-Inf
  // (saturate), the second +-Inf and +-A only: no small value sends it to
  // the general path, only its Inf does (read as 2^128, Inf would not
  // saturate under ceil / rceil near 2^128), and the last block +-0 only.
  // Anchors put the scale code at its extremes (0 and 254) and in between.
  constexpr size_t kCols = 64;
  for (const uint16_t anchor : {uint16_t{0x7F7F}, uint16_t{0x7E80}, uint16_t{0x5F00},
                                uint16_t{0x4380}, uint16_t{0x3FC0}, uint16_t{0x3F80},
                                uint16_t{0x2000}, uint16_t{0x0400}, uint16_t{0x0100},
                                uint16_t{0x0080}}) {
    std::vector<uint16_t> bits;
    size_t m = 0;
    for (size_t b = 0; m <= anchor || bits.size() % kCols != 0; ++b) {
      bits.push_back(anchor);
      for (size_t j = 1; j < 32; ++j) {
        uint16_t v = 0;
        if (b <= 1 && j <= 2) {
          v = j == 1 ? 0x7F80 : 0xFF80;  // +Inf, -Inf
        } else if (b == 1) {
          v = static_cast<uint16_t>(anchor | ((j & 1) << 15));  // no small values
        } else if (m <= anchor) {
          v = static_cast<uint16_t>(m | ((m & 1) << 15));
          ++m;
        } else {
          v = static_cast<uint16_t>((j & 1) << 15);  // +0 / -0
        }
        bits.push_back(v);
      }
    }
    std::vector<uint8_t> in(bits.size() * 2);
    std::memcpy(in.data(), bits.data(), in.size());
    const size_t rows = bits.size() / kCols;
    for (MxFormat f : {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2, MxFormat::kMxfp4}) {
      for (ScaleMode mode : kModes) {
        MxOptions o;
        o.scale_mode = mode;
        const std::string name = absl::StrFormat("anchor 0x%04x %s %s", anchor, MxFormatName(f),
                                                 ScaleModeName(mode));
        absl::StatusOr<MxTensor> ref =
            QuantizeMx(f, Format::kBF16, in, rows, kCols, o, Impl{Impl::kScalar});
        ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
        for (int64_t target : AvailableTargets()) {
          absl::StatusOr<MxTensor> got = QuantizeMx(f, Format::kBF16, in, rows, kCols, o,
                                                    Impl{target});
          ASSERT_TRUE(got.ok()) << name;
          ASSERT_EQ(got->scales, ref->scales) << name << " " << ImplName(Impl{target});
          for (size_t i = 0; i < ref->elements.size(); ++i) {
            ASSERT_EQ(got->elements[i], ref->elements[i])
                << name << " " << ImplName(Impl{target}) << " element " << i << " bf16 0x"
                << std::hex << bits[i];
          }
        }
      }
    }
  }
}

TEST(MxSimd, Bf16EveryScaleCodeEveryTarget) {
  // bf16 into MXFP8 e4m3 on CPUs with AVX512-FP16 folds the block scale 2^X
  // into an integer rebias and saturates the code bytes
  // (Fp16EncodeHalf::Encode64MxAbs), for chunks (128 consecutive blocks)
  // without NaN / Inf whose blocks have amax 0 or a scale code of at least
  // 15; other chunks take the other paths. On AVX3_DL every MX format from
  // bf16 folds the scale into RangeEncodeF32's constants, the values
  // widened in unpack order, for chunks whose every block's X lies in the
  // fold range (clamping elements in chunks with an Inf); bf16 into MXFP8
  // chunks outside it take EncodeDirect.
  // Chunk k holds blocks whose amax has bf16 exponent field E in [2k, 2k +
  // 7] (so every scale code a finite amax gives, in every mode, meets both
  // sides of the code-15 boundary and of both fold bounds within one
  // chunk), every 16th block all +-0 (amax 0). A block holds its amax,
  // elements at random exponents from E down to E - 12 (around the code-0
  // boundary of 2^-X and the subnormal codes), some far below and one bf16
  // subnormal, signs random. Every 3rd chunk has a block with a +-Inf
  // element, every 7th a NaN block. 3 blocks per row; the last chunk has 3
  // blocks (the odd last step).
  constexpr size_t kCols = 96;
  std::mt19937 rng(20261122);
  std::vector<uint16_t> bits;
  const auto block = [&](uint32_t e) {
    const uint16_t amax = static_cast<uint16_t>(e << 7 | (rng() & 0x7F));
    bits.push_back(static_cast<uint16_t>(amax | (rng() & 1) << 15));
    for (size_t j = 1; j < 32; ++j) {
      const uint32_t r = static_cast<uint32_t>(rng());
      int64_t ej = static_cast<int64_t>(e) - static_cast<int64_t>(r % 13);
      if (j % 8 == 7) ej = static_cast<int64_t>(e) - 13 - static_cast<int64_t>((r >> 8) % 40);
      if (j == 31) ej = 0;  // a bf16 subnormal (or 0)
      const uint16_t mag =
          ej < 0 ? 0 : std::min<uint16_t>(static_cast<uint16_t>(ej << 7 | (r >> 16 & 0x7F)), amax);
      bits.push_back(static_cast<uint16_t>(mag | (r >> 24 & 1) << 15));
    }
  };
  for (uint32_t k = 0; k < 126; ++k) {
    for (uint32_t j = 0; j < 128; ++j) {
      if (j % 16 == 5) {
        for (size_t i = 0; i < 32; ++i) bits.push_back(static_cast<uint16_t>((rng() & 1) << 15));
      } else {
        block(std::min<uint32_t>(2 * k + j % 8, 254));
        uint16_t* b = &bits[bits.size() - 32];
        if (k % 3 == 1 && j == 9) b[7] = static_cast<uint16_t>(0x7F80 | (rng() & 1) << 15);
        if (k % 7 == 2 && j == 11) b[3] = 0xFFC1;  // NaN
      }
    }
  }
  for (uint32_t e : {100u, 101u, 102u}) block(e);
  ASSERT_EQ(bits.size() % kCols, 0u);
  std::vector<uint8_t> in(bits.size() * 2);
  std::memcpy(in.data(), bits.data(), in.size());
  const size_t rows = bits.size() / kCols;
  for (MxFormat f : {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2, MxFormat::kMxfp6E2m3,
                     MxFormat::kMxfp6E3m2, MxFormat::kMxfp4}) {
    for (ScaleMode mode : kModes) {
      MxOptions o;
      o.scale_mode = mode;
      const std::string name = absl::StrFormat("%s %s", MxFormatName(f), ScaleModeName(mode));
      absl::StatusOr<MxTensor> ref =
          QuantizeMx(f, Format::kBF16, in, rows, kCols, o, Impl{Impl::kScalar});
      ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
      for (int64_t target : AvailableTargets()) {
        absl::StatusOr<MxTensor> got =
            QuantizeMx(f, Format::kBF16, in, rows, kCols, o, Impl{target});
        ASSERT_TRUE(got.ok()) << name;
        ASSERT_EQ(got->scales, ref->scales) << name << " " << ImplName(Impl{target});
        for (size_t i = 0; i < ref->elements.size(); ++i) {
          ASSERT_EQ(got->elements[i], ref->elements[i])
              << name << " " << ImplName(Impl{target}) << " element " << i << " bf16 0x"
              << std::hex << bits[i] << " scale 0x" << int{ref->scales[i / 32]};
        }
      }
    }
  }
}


TEST(MxSimd, Bf16TableCodecsEveryBucketEveryTarget) {
  // bf16 into MXFP4 and MXFP6 on AVX3_DL encodes by table lookups on the
  // bucket of the scaled magnitude (MxE2m1FromBf16, MxFp6FromBf16) for
  // chunks without NaN / Inf whose every nonzero block has X >= kMinX
  // (e2m1 -124, e2m3 -122, e3m2 -121). Per anchor x (one chunk of 128
  // blocks each), blocks whose amax has mantissa 0x7F: 1.9921875 * 2^(x +
  // 2) (floor: scale 2^x for e2m1 / e2m3, 2^(x - 2) for e3m2), and whose
  // other elements run through every bf16 magnitude from 2^(x - 8) to the
  // amax (for each format every bucket from half the smallest subnormal up,
  // every tie, every mantissa, the saturating top), bf16 subnormals and
  // +-0, signs varying; scales below kMinX and the other modes take other
  // paths.
  constexpr size_t kCols = 64;
  std::vector<uint16_t> bits;
  for (const int x : {-126, -125, -124, -123, -122, -121, -120, -119, -118, -60, -2, 0, 1, 60,
                      120, 125}) {
    const uint16_t amax = static_cast<uint16_t>((x + 129) << 7 | 0x7F);
    std::vector<uint16_t> vals;
    for (int e = std::max(1, x + 119); e <= x + 129; ++e) {
      for (int m = 0; m < 128; ++m) {
        const uint16_t h = static_cast<uint16_t>(e << 7 | m);
        if (h <= amax) vals.push_back(h);
      }
    }
    for (int sub : {0x0001, 0x0040, 0x007F, 0x0000}) vals.push_back(static_cast<uint16_t>(sub));
    size_t v = 0;
    for (size_t blk = 0; blk < 128; ++blk) {
      bits.push_back(static_cast<uint16_t>(amax | (blk % 2) << 15));
      for (size_t j = 1; j < 32; ++j, ++v) {
        bits.push_back(static_cast<uint16_t>(vals[v % vals.size()] | ((v + v / 5) % 2) << 15));
      }
    }
  }
  std::vector<uint8_t> in(bits.size() * 2);
  std::memcpy(in.data(), bits.data(), in.size());
  const size_t rows = bits.size() / kCols;
  for (MxFormat f : {MxFormat::kMxfp4, MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2}) {
    ASSERT_NO_FATAL_FAILURE(
        ExpectEveryLayoutAndModeEqualsScalar(f, Format::kBF16, in, rows, kCols));
  }
}

TEST(MxSimd, Bf16Fp8TableCodecEveryMagnitudeEveryTarget) {
  // bf16 into MXFP8 on AVX3_DL encodes by the bf16 byte tables of the
  // element format with its bias raised by kBase after one saturating u16
  // subtract of the block scale (MxFp8FromBf16) for chunks without NaN /
  // Inf whose every nonzero block has X >= kMinX (e4m3 -116, e5m2 -109).
  // Per anchor x (two chunks of 128 blocks each), blocks whose amax has
  // mantissa 0x7F: 1.9921875 * 2^(x + emax) (floor: scale 2^x; the other
  // modes 2^(x + 1)), and whose other elements run through every bf16
  // magnitude from 2^(x - bias - man - 3) to the amax (every subnormal of
  // the element, every tie, every mantissa, the saturating top, and the
  // magnitudes below half the smallest subnormal that saturate the
  // subtract or leave a bf16 subnormal), bf16 subnormals and +-0, signs
  // varying; anchors on both sides of kMinX and at the largest scales.
  // Then chunks with one NaN or Inf (every lane position of a 64-element
  // step), which take other paths, and one last block (an odd block count
  // in the last chunk: through EncodeChunkFp8Table's buffers). 64 columns
  // (one step per row) and 96.
  for (MxFormat f : {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2}) {
    const bool e4m3 = f == MxFormat::kMxfp8E4m3;
    const int emax = e4m3 ? 8 : 15, bias = e4m3 ? 7 : 15, man = e4m3 ? 3 : 2;
    const int min_x = -(126 - bias - man);
    const int max_x = 254 - 127 - emax;
    for (const size_t cols : {size_t{64}, size_t{96}}) {
      std::vector<uint16_t> bits;
      std::vector<int> anchors = {-127, -60, -2, 0, 1, 60, max_x - 1, max_x};
      for (int d = -3; d <= 3; ++d) anchors.push_back(min_x + d);
      for (const int x : anchors) {
        const uint16_t amax = static_cast<uint16_t>((x + 127 + emax) << 7 | 0x7F);
        std::vector<uint16_t> vals;
        for (int e = std::max(1, x + 127 - bias - man - 3); e <= x + 127 + emax; ++e) {
          for (int m = 0; m < 128; ++m) {
            const uint16_t h = static_cast<uint16_t>(e << 7 | m);
            if (h <= amax) vals.push_back(h);
          }
        }
        for (int sub : {0x0001, 0x0040, 0x007F, 0x0000}) vals.push_back(static_cast<uint16_t>(sub));
        size_t v = 0;
        for (size_t blk = 0; blk < 256; ++blk) {
          bits.push_back(static_cast<uint16_t>(amax | (blk % 2) << 15));
          for (size_t j = 1; j < 32; ++j, ++v) {
            bits.push_back(static_cast<uint16_t>(vals[v % vals.size()] | ((v + v / 5) % 2) << 15));
          }
        }
      }
      for (size_t lane = 0; lane < 64; ++lane) {
        // One chunk (128 blocks) per NaN / Inf position, the rest
        // table-eligible.
        for (size_t j = 0; j < 128 * 32; ++j) {
          const uint16_t m = static_cast<uint16_t>((j * 2654435761u) >> 9) & 0x3FF;
          bits.push_back(static_cast<uint16_t>((j % 32 == 0 ? 0x3F7F : (0x3A00 | m)) |
                                               (j % 3 == 0) << 15));
        }
        bits[bits.size() - 128 * 32 + 64 * 5 + lane] = lane % 3 == 0   ? 0x7FC0
                                                       : lane % 3 == 1 ? 0xFF81
                                                                       : (lane % 2 ? 0x7F80 : 0xFF80);
      }
      // A last table-eligible block (with 96 columns alone in the last
      // chunk).
      for (size_t j = 0; j < 32; ++j) {
        bits.push_back(static_cast<uint16_t>((j == 7 ? 0x437F : 0x3A00 | (j * 37 % 0x400)) |
                                             (j % 3 == 0) << 15));
      }
      while (bits.size() % cols != 0) bits.push_back(0);
      std::vector<uint8_t> in(bits.size() * 2);
      std::memcpy(in.data(), bits.data(), in.size());
      const size_t rows = bits.size() / cols;
      ASSERT_NO_FATAL_FAILURE(ExpectEveryLayoutAndModeEqualsScalar(
          f, Format::kBF16, in, rows, cols,
          [&bits](size_t i) { return absl::StrFormat("input 0x%04x", bits[i]); }));
    }
  }
}

TEST(MxSimd, F32TableCodecsEveryBucketEveryTarget) {
  // f32 into MXFP4 and MXFP6 on AVX3_DL encodes by the bf16 table codecs
  // on the high halves of the values plus a flag of their low bits
  // (F32Halves) for chunks without NaN / Inf whose every nonzero block has
  // X >= kMinX (e2m1 -124, e2m3 -122, e3m2 -121). As
  // Bf16TableCodecsEveryBucketEveryTarget, per anchor x (the floor scale
  // 2^x for e2m1 / e2m3, 2^(x - 2) for e3m2; anchors on both sides of
  // every kMinX), blocks whose amax has an all-ones mantissa and whose
  // other elements run through every bf16 magnitude from 2^(x - 8) to the
  // amax, each with the low 16 f32 bits 0 (on a bucket's lower end where
  // the bf16 mantissa allows it: the ties), 1, 0x8000 and 0xFFFF, f32
  // subnormals and +-0, signs varying. 64 columns (whole steps) and 48
  // (every second block ends in 16 padding lanes); then chunks with one
  // NaN (every lane position of a block and of a 64-element step), which
  // take the general path.
  for (const size_t cols : {size_t{64}, size_t{48}}) {
    std::vector<uint32_t> bits;
    for (const int x : {-126, -125, -124, -123, -122, -121, -120, -119, -60, -2, 0, 1, 60, 120,
                        125}) {
      const uint32_t amax = static_cast<uint32_t>(x + 129) << 23 | 0x7FFFFF;
      std::vector<uint32_t> vals;
      for (int e = std::max(1, x + 119); e <= x + 129; ++e) {
        for (uint32_t m = 0; m < 128; ++m) {
          for (uint32_t low : {0u, 1u, 0x8000u, 0xFFFFu}) {
            const uint32_t v = static_cast<uint32_t>(e) << 23 | m << 16 | low;
            if (v <= amax) vals.push_back(v);
          }
        }
      }
      for (uint32_t sub : {0x000001u, 0x400000u, 0x7FFFFFu, 0x000000u}) vals.push_back(sub);
      size_t v = 0;
      for (size_t blk = 0; blk < 192; ++blk) {
        bits.push_back(amax | static_cast<uint32_t>(blk % 2) << 31);
        for (size_t j = 1; j < 32; ++j, ++v) {
          bits.push_back(vals[v % vals.size()] | static_cast<uint32_t>((v + v / 5) % 2) << 31);
        }
      }
    }
    for (size_t lane = 0; lane < 64; ++lane) {
      // One chunk (128 blocks) per NaN position, the rest table-eligible.
      for (size_t j = 0; j < 128 * 32; ++j) {
        const uint32_t m = static_cast<uint32_t>((j * 2654435761u) >> 9) & 0x7FFFFF;
        bits.push_back((j % 32 == 0 ? 0x3F7FFFFFu : (0x3C000000u | m)) |
                       static_cast<uint32_t>(j % 3 == 0) << 31);
      }
      bits[bits.size() - 128 * 32 + 64 * 5 + lane] = lane % 2 ? 0x7FC00000u : 0xFF800001u;
    }
    // Whole rows of `cols` data values (with 48 columns the driver pads
    // every row's second block with 16 zero lanes).
    while (bits.size() % cols != 0) bits.push_back(0);
    std::vector<uint8_t> in(bits.size() * 4);
    std::memcpy(in.data(), bits.data(), in.size());
    const size_t rows = bits.size() / cols;
    for (MxFormat f : {MxFormat::kMxfp4, MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2}) {
      ASSERT_NO_FATAL_FAILURE(
          ExpectEveryLayoutAndModeEqualsScalar(f, Format::kF32, in, rows, cols));
    }
  }
}

TEST(MxSimd, F32HalvesAmaxEveryTarget) {
  // f32 into MXFP4 and MXFP6 under the floor scale mode on AVX3_DL takes
  // the block amax from the high halves of the values (the low 16 bits
  // truncated) and leaves their F32Halves form in a buffer for pass 3;
  // chunks (128 consecutive blocks) with an Inf or NaN, or with a nonzero
  // block of X < kMinX, fall back to the f32 values. Every chunk mixes
  // blocks of f32 subnormals all below 2^-133 (truncated amax 0), amax
  // with all-ones low bits, exact powers of two, low bits only above a
  // power of two, and random blocks with ties (low 21 bits zero), signs
  // random; then chunks that also hold a block of subnormals at or above
  // 2^-133 (a truncated amax that is a nonzero subnormal: X = -127), a
  // NaN whose payload lies in the low 16 bits only, or an Inf. 1 and 3
  // blocks per row (odd chunks at the end), every layout and mode.
  std::mt19937 rng(7);
  const auto bits_of = [&](uint32_t e, uint32_t mant) {
    return e << 23 | (mant & 0x7FFFFFu) | static_cast<uint32_t>(rng() & 1u) << 31;
  };
  std::vector<uint32_t> blocks;
  const auto add_block = [&](size_t kind, uint32_t e) {
    for (size_t i = 0; i < 32; ++i) {
      const uint32_t r = static_cast<uint32_t>(rng());
      uint32_t v;
      switch (kind) {
        case 0:  // subnormals below 2^-133 (bits < 0x10000) and +-0
          v = (i % 7 == 0 ? 0u : (r & 0xFFFFu)) | (r >> 31) << 31;
          break;
        case 1:  // subnormals from 2^-133 up
          v = (0x10000u + (r & 0xFFFFFu)) | (r >> 31) << 31;
          break;
        default: {
          const uint32_t ei = e - (r % 12);
          v = bits_of(ei, i % 4 == 0 ? (r & 0x7E0000u) : r);
          if (i == 5) {
            // The block's amax, by kind.
            const uint32_t am[] = {0, 0, 0x7FFFFFu, 0, 0x7F0000u, 0x00FFFFu, r & 0x7FFFFFu};
            v = bits_of(e, am[kind]);
          }
        }
      }
      blocks.push_back(v);
    }
  };
  for (size_t chunk = 0; chunk < 9; ++chunk) {
    const size_t nb = chunk == 8 ? 37 : 128;  // the last chunk odd
    for (size_t j = 0; j < nb; ++j) {
      const uint32_t e = static_cast<uint32_t>(20 + (j * 29 + chunk * 13) % 200);
      size_t kind = 2 + j % 5;
      if (j % 9 == 0) kind = 0;
      if (j == 77 && chunk % 4 == 1) kind = 1;
      add_block(kind, e);
    }
    const size_t at = blocks.size() - nb * 32 + 32 * 3 + chunk;
    if (chunk % 4 == 2) blocks[at] = chunk % 8 == 2 ? 0x7F800001u : 0xFF800010u;
    if (chunk % 4 == 3) blocks[at] = 0xFF800000u;
  }
  for (const size_t cols : {size_t{32}, size_t{96}}) {
    std::vector<uint32_t> bits = blocks;
    while (bits.size() % cols != 0) bits.push_back(0);
    std::vector<uint8_t> in(bits.size() * 4);
    std::memcpy(in.data(), bits.data(), in.size());
    for (MxFormat f : {MxFormat::kMxfp4, MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2}) {
      ASSERT_NO_FATAL_FAILURE(ExpectEveryLayoutAndModeEqualsScalar(
          f, Format::kF32, in, bits.size() / cols, cols,
          [&bits](size_t i) { return absl::StrFormat("input 0x%08x", bits[i]); }));
    }
  }
}

TEST(MxSimd, F32HalvesSignedMaxAtEveryLaneEveryTarget) {
  // f32 into MXFP4 / MXFP6 on AVX3_DL (floor mode): pass 1 keeps each high
  // half rotated, r = |h| << 1 | sign, takes amax as max r >> 1 and stores
  // the z flags of lanes 0..15 and 16..31 of a block apart; pass 3
  // subtracts 2K from r and takes the sign from its bit 0. Per lane
  // position j of a block: the amax at lane j, negative in every second
  // block (its r then exceeds a positive value one high-half ulp below it
  // by 3, and a positive copy with the low half cleared by 1), bucket
  // lower ends (ties) and low-half-only offsets next to it and in the
  // other 16-lane half, values below the block's K with both signs (codes
  // +-0), f32 subnormals; amax exponents from the smallest table-eligible
  // scale (X = kMinX) and just below it up to the largest finite (2K near
  // 2^16). 64 columns (block pairs), then one block alone at the end.
  std::mt19937 rng(20261127);
  std::vector<uint32_t> bits;
  const uint32_t exps[] = {3, 4, 5, 6, 7, 40, 127, 200, 253, 254};
  for (const uint32_t e : exps) {
    for (size_t j = 0; j < 32; ++j) {
      for (uint32_t neg = 0; neg < 2; ++neg) {
        const uint32_t r0 = static_cast<uint32_t>(rng());
        const uint32_t amax = e << 23 | ((r0 & 0x7F0000u) | 0x10000u) | (r0 & 0xFFFFu);
        uint32_t block[32];
        for (size_t i = 0; i < 32; ++i) {
          const uint32_t r = static_cast<uint32_t>(rng());
          const uint32_t ei = e > 3 + r % 14 ? e - 3 - r % 14 : 0;
          uint32_t v = ei << 23 | (r & 0x7FFFFFu);
          if (i % 5 == 0) v &= ~0x1FFFFFu;   // a bucket's lower end (every format)
          if (i % 7 == 0) v = ei << 23 | 1u;  // low half only above a binade
          if (i % 11 == 0) v = r & 0xFFFFFu;  // f32 subnormal
          block[i] = v | (r >> 31) << 31;
        }
        block[j] = amax | neg << 31;
        block[(j + 1) % 32] = amax - 0x10000u;               // one high-half ulp below
        block[(j + 2) % 32] = (amax & ~0xFFFFu) | 1u << 31;  // same high half, low 0
        block[(j + 16) % 32] = (amax & ~0x1FFFFFu) | (j % 2) << 31;  // tie, other half
        block[(j + 17) % 32] = (amax & ~0x1FFFFFu) | 1u;             // low half only
        bits.insert(bits.end(), block, block + 32);
      }
    }
  }
  bits.resize(bits.size() - 32);  // an odd number of blocks: the last alone
  std::vector<uint8_t> in(bits.size() * 4);
  std::memcpy(in.data(), bits.data(), in.size());
  for (const size_t cols : {size_t{64}, size_t{32}}) {
    const size_t rows = bits.size() / cols;
    const std::vector<uint8_t> part(in.begin(),
                                    in.begin() + static_cast<std::ptrdiff_t>(rows * cols * 4));
    for (MxFormat f : {MxFormat::kMxfp4, MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2}) {
      ASSERT_NO_FATAL_FAILURE(
          ExpectEveryLayoutAndModeEqualsScalar(f, Format::kF32, part, rows, cols));
    }
  }
}

TEST(MxSimd, F32EveryScaleCodeEveryTarget) {
  // f32 into MX on AVX3_DL folds the block scale 2^X into the range
  // encoder's constants (RangeEncodeF32::Consts, no multiply) for chunks
  // (128 consecutive blocks) whose every block has amax 0, a NaN, or X in
  // [kFoldMinX, kFoldMaxX] (-124 .. -109 up to 87 .. 101 by format);
  // other chunks multiply. Chunk k holds blocks whose amax has exponent
  // field E in [2k, 2k + 7] (both fold bounds, and the code-0 and code-254
  // scales, meet a neighbour inside one chunk), every 16th block all +-0,
  // one block per chunk with an Inf element and every 9th chunk a NaN
  // block. Elements: the amax, exponents E down to E - 12 (the element's
  // normals and subnormals) and some far below (rounding to +-0), every
  // 4th with only 5 mantissa bits (ties of every element format), five f32
  // subnormals per block, signs random. One block per row (the last chunk
  // has 3 blocks); codes and, for fp4 / fp6, the padded layouts; every
  // target also under a caller's FTZ + DAZ (the fold runs in the caller's
  // MXCSR: below kFoldMinX, DAZ would zero subnormals that round to codes).
  constexpr size_t kCols = 32;
  std::mt19937 rng(20261122);
  std::vector<uint32_t> bits;
  const auto value = [&](int64_t e, uint32_t r) -> uint32_t {
    uint32_t mant = r & 0x7FFFFF;
    if (r % 4 == 0) mant &= 0x7C0000;  // 5 mantissa bits: exact ties
    if (e <= 0) return (r >> 24 & 1) ? (r & 0x7FFFFF) : 0;  // f32 subnormal or 0
    return static_cast<uint32_t>(e) << 23 | mant;
  };
  const auto block = [&](uint32_t e, bool inf, bool nan) {
    const uint32_t amax = value(e, static_cast<uint32_t>(rng()) | 1);
    bits.push_back(amax | static_cast<uint32_t>(rng() & 1) << 31);
    for (size_t j = 1; j < 32; ++j) {
      const uint32_t r = static_cast<uint32_t>(rng());
      int64_t ej = static_cast<int64_t>(e) - static_cast<int64_t>(r % 13);
      if (j % 8 == 7) ej = static_cast<int64_t>(e) - 13 - static_cast<int64_t>((r >> 8) % 40);
      if (j == 31 || j % 8 == 3) ej = 0;
      uint32_t mag = std::min(value(ej, static_cast<uint32_t>(rng())), amax);
      if (inf && j == 9) mag = 0x7F800000u;
      if (nan && j == 17) mag = 0x7FC00001u;
      bits.push_back(mag | (r >> 31) << 31);
    }
  };
  for (uint32_t k = 0; k < 127; ++k) {
    for (uint32_t j = 0; j < 128; ++j) {
      if (j % 16 == 5) {
        for (size_t i = 0; i < 32; ++i) bits.push_back(static_cast<uint32_t>(rng() & 1) << 31);
      } else {
        block(std::min<uint32_t>(2 * k + j % 8, 254), j == 100, k % 9 == 4 && j == 60);
      }
    }
  }
  for (uint32_t e : {100u, 101u, 102u}) block(e, false, false);
  std::vector<uint8_t> in(bits.size() * 4);
  std::memcpy(in.data(), bits.data(), in.size());
  const size_t rows = bits.size() / kCols;
  for (MxFormat f : kFormats) {
    if (f == MxFormat::kNvfp4) continue;  // MX only
    for (ElementLayout layout : LayoutsOf(f)) {
      for (ScaleMode mode : kModes) {
        MxOptions o;
        o.scale_mode = mode;
        o.layout = layout;
        const std::string name = absl::StrFormat("%s %s layout %d", MxFormatName(f),
                                                 ScaleModeName(mode), static_cast<int>(layout));
        absl::StatusOr<MxTensor> ref =
            QuantizeMx(f, Format::kF32, in, rows, kCols, o, Impl{Impl::kScalar});
        ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
        const size_t bytes_per_block = ref->elements.size() / (ref->scales.size());
        for (int64_t target : AvailableTargets()) {
          // The caller's MXCSR as is, then (x86) with FTZ and DAZ set.
          for (bool ftz_daz : {false, true}) {
            absl::StatusOr<MxTensor> got;
#if defined(__x86_64__) || defined(__i386__)
            if (ftz_daz) {
              const FtzDazGuard guard;
              got = QuantizeMx(f, Format::kF32, in, rows, kCols, o, Impl{target});
            } else  // NOLINT(readability/braces)
#endif
            {
              if (ftz_daz) continue;
              got = QuantizeMx(f, Format::kF32, in, rows, kCols, o, Impl{target});
            }
            ASSERT_TRUE(got.ok()) << name;
            ASSERT_EQ(got->scales, ref->scales) << name << " " << ImplName(Impl{target});
            for (size_t i = 0; i < ref->elements.size(); ++i) {
              const size_t b = i / bytes_per_block;
              ASSERT_EQ(got->elements[i], ref->elements[i])
                  << name << " " << ImplName(Impl{target}) << (ftz_daz ? " FTZ+DAZ" : "")
                  << " byte " << i << " of block " << b << " (scale 0x" << std::hex
                  << int{ref->scales[b]} << ", amax bits 0x" << bits[b * 32] << ")";
            }
          }
        }
      }
    }
  }
}

TEST(MxSimd, F32TopBinadeTiesEveryModeEveryTarget) {
  // Elements in their block's top binade: with the scale folded and no Inf
  // or NaN in the chunk, the AVX3_DL range encoder rounds unclamped and
  // clamps the codes afterwards (RangeEncodeF32's kClamp = false), so the
  // values between max and 2^(emax + 1) (floor mode) and every tie of the
  // code grid there must come out as the reference's saturate-then-round.
  // Per amax exponent field E (fold range and beyond; the fold applies per
  // 128-block chunk, so each E fills one chunk): blocks whose amax has an
  // all-ones mantissa and whose other elements are every grid point and tie
  // of binade E for the element's mantissa width (t * 2^(23 - man - 1)
  // mantissas), each exactly and one f32 ulp either side, signs varying.
  constexpr size_t kCols = 64;
  std::vector<uint32_t> bits;
  for (uint32_t e = 1; e < 255; e += 9) {
    std::vector<uint32_t> vals;
    for (uint32_t t = 0; t < 16; ++t) {
      for (int d : {-1, 0, 1}) {
        const int64_t m = std::clamp<int64_t>((int64_t{t} << 19) + d, 0, 0x7FFFFF);
        vals.push_back(e << 23 | static_cast<uint32_t>(m));
      }
    }
    for (uint32_t t = 0; t < 8; ++t) vals.push_back(e << 23 | (t << 20 | 0x7FFFF));
    size_t v = 0;
    for (size_t blk = 0; blk < 128; ++blk) {
      bits.push_back(e << 23 | 0x7FFFFFu | static_cast<uint32_t>(blk % 2) << 31);
      for (size_t j = 1; j < 32; ++j, ++v) {
        bits.push_back(vals[v % vals.size()] | static_cast<uint32_t>((v + v / 7 + blk) % 2) << 31);
      }
    }
  }
  while (bits.size() % kCols != 0) bits.push_back(0);
  std::vector<uint8_t> in(bits.size() * 4);
  std::memcpy(in.data(), bits.data(), in.size());
  const size_t rows = bits.size() / kCols;
  for (MxFormat f : kFormats) {
    if (f == MxFormat::kNvfp4) continue;
    for (ElementLayout layout : LayoutsOf(f)) {
      for (ScaleMode mode : kModes) {
        MxOptions o;
        o.scale_mode = mode;
        o.layout = layout;
        absl::StatusOr<MxTensor> ref =
            QuantizeMx(f, Format::kF32, in, rows, kCols, o, Impl{Impl::kScalar});
        ASSERT_TRUE(ref.ok()) << ref.status();
        for (int64_t target : AvailableTargets()) {
          absl::StatusOr<MxTensor> got = QuantizeMx(f, Format::kF32, in, rows, kCols, o,
                                                    Impl{target});
          ASSERT_TRUE(got.ok());
          ASSERT_EQ(got->scales, ref->scales) << MxFormatName(f) << " " << ScaleModeName(mode);
          ASSERT_EQ(got->elements, ref->elements)
              << MxFormatName(f) << " " << ScaleModeName(mode) << " layout "
              << static_cast<int>(layout) << " " << ImplName(Impl{target});
        }
      }
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
TEST(MxSimd, CallerFtzDazDoesNotChangeMxResults) {
  // A caller running with MXCSR.FTZ and .DAZ set (-ffast-math libraries,
  // torch.set_flush_denormal): the MX kernels clear DAZ around the element
  // pass, so subnormal inputs that the scale multiplies up still encode
  // exactly, on every target. (NVFP4 computes its scales in the caller's
  // environment and is not covered.)
  constexpr size_t kRows = 24, kCols = 64;
  const std::vector<float> x = RandomAtBinades(kRows * kCols, 777, [](size_t i) {
    return (i / 32) % 2 == 0 ? -128 - static_cast<int>((i / 64) % 20) : -3;
  });
  for (Format from : {Format::kF32, Format::kBF16}) {
    const std::vector<uint8_t> in = ToSource(x, from);
    for (MxFormat f : kFormats) {
      if (f == MxFormat::kNvfp4) continue;
      MxOptions o;
      absl::StatusOr<MxTensor> ref = QuantizeMx(f, from, in, kRows, kCols, o, Impl{Impl::kScalar});
      ASSERT_TRUE(ref.ok()) << ref.status();
      for (int64_t target : AvailableTargets()) {
        absl::StatusOr<MxTensor> got;
        {
          const FtzDazGuard ftz_daz;
          got = QuantizeMx(f, from, in, kRows, kCols, o, Impl{target});
        }
        ASSERT_TRUE(got.ok());
        ASSERT_EQ(got->scales, ref->scales) << MxFormatName(f) << " " << ImplName(Impl{target});
        ASSERT_EQ(got->elements, ref->elements)
            << MxFormatName(f) << " from " << FormatName(from) << " " << ImplName(Impl{target});
      }
    }
  }
}
#endif

TEST(MxSimd, RowRangesComposeToTheWholeTensor) {
  // Quantizing [0,128) and [128,300) separately equals one call (tcgen05 scale
  // tiles span both ranges' rows).
  const size_t rows = 300, cols = 96;
  const std::vector<float> x = RandomTensor(rows * cols, 99, true);
  const std::vector<uint8_t> in = F32Bytes(x);
  MxOptions o;
  o.layout = ElementLayout::kB4x16P64;
  o.scale_layout = ScaleLayout::kTcgen05;
  absl::StatusOr<MxTensor> whole =
      QuantizeMx(MxFormat::kMxfp4, Format::kF32, in, rows, cols, o);
  ASSERT_TRUE(whole.ok());
  std::vector<uint8_t> e(whole->elements.size()), s(whole->scales.size());
  for (auto [b, end] : {std::pair<size_t, size_t>{128, 300}, {0, 128}}) {
    ASSERT_TRUE(QuantizeMxRows(MxFormat::kMxfp4, Format::kF32,
                               absl::MakeConstSpan(in).subspan(b * cols * 4,
                                                               (end - b) * cols * 4),
                               rows, cols, b, end, o, absl::MakeSpan(e),
                               absl::MakeSpan(s))
                    .ok());
  }
  EXPECT_EQ(e, whole->elements);
  EXPECT_EQ(s, whole->scales);
}

// Quantizes the f32 tensor `in` (rows x cols) range by range into
// sentinel-filled buffers (elements 0x5A, scales 0xA5), by the scalar
// reference or by `target`, so that bytes no range writes keep their
// sentinel.
void QuantizeRowRangesF32(MxFormat f, const MxOptions& o, const std::vector<uint8_t>& in,
                          size_t rows, size_t cols,
                          const std::vector<std::pair<size_t, size_t>>& ranges,
                          bool scalar_ref, int64_t target, std::vector<uint8_t>& e,
                          std::vector<uint8_t>& sc) {
  const MxShape s{f, o.layout, o.scale_layout, rows, cols};
  e.assign(s.element_bytes(), 0x5A);
  sc.assign(s.scale_bytes(), 0xA5);
  for (auto [b, end] : ranges) {
    const auto part = absl::MakeConstSpan(in).subspan(b * cols * 4, (end - b) * cols * 4);
    const absl::Status st =
        scalar_ref ? scalar::QuantizeMxRows(f, Format::kF32, part, rows, cols, b, end, o,
                                            absl::MakeSpan(e), absl::MakeSpan(sc))
                   : QuantizeMxRows(f, Format::kF32, part, rows, cols, b, end, o,
                                    absl::MakeSpan(e), absl::MakeSpan(sc), Impl{target});
    ASSERT_TRUE(st.ok()) << st;
  }
}

TEST(MxSimd, ScaleLayoutsEveryRowCountAndRangeEveryTarget) {
  // The driver stages a group of 128 rows' scale codes and then writes them
  // into their layout: tcgen05 whole tiles for whole groups, per row for the
  // rest. Row counts around 32 and 128, blocks per row not a multiple of 4
  // (and above one chunk of 128 blocks), row ranges that start and end
  // inside a group, both scale layouts; scale bytes outside the rows' blocks
  // (tcgen05 padding) keep their prior value. Every target equals the
  // scalar reference on every element and scale byte.
  struct Shape {
    size_t rows, cols;
  };
  const Shape shapes[] = {{1, 32},     {31, 96},    {127, 224},
                          {128, 128},  {129, 40},   {257, 160},
                          {200, 1063}, {130, 4128}, {300, 64}};
  for (MxFormat f : {MxFormat::kMxfp8E4m3, MxFormat::kNvfp4}) {
    for (ScaleLayout sl : {ScaleLayout::kLinear, ScaleLayout::kTcgen05}) {
      for (const Shape& sh : shapes) {
        MxOptions o;
        o.layout = ElementLayout::kCodes;
        o.scale_layout = sl;
        o.tensor_scale = 1.0f;
        const std::vector<float> x =
            RandomTensor(sh.rows * sh.cols,
                         static_cast<uint32_t>(sh.rows * 7 + sh.cols), true);
        const std::vector<uint8_t> in = F32Bytes(x);
        // Row ranges: the whole tensor, and three pieces cut inside groups.
        std::vector<std::pair<size_t, size_t>> ranges = {{0, sh.rows}};
        if (sh.rows > 100) {
          ranges = {{0, 50}, {50, sh.rows - 10}, {sh.rows - 10, sh.rows}};
        }
        const auto run = [&](bool scalar_ref, int64_t target, std::vector<uint8_t>& e,
                             std::vector<uint8_t>& sc) {
          QuantizeRowRangesF32(f, o, in, sh.rows, sh.cols, ranges, scalar_ref, target, e, sc);
        };
        std::vector<uint8_t> want_e, want_s, got_e, got_s;
        run(true, 0, want_e, want_s);
        for (int64_t target : AvailableTargets()) {
          run(false, target, got_e, got_s);
          const std::string what = absl::StrFormat(
              "%s %s %dx%d target %s", MxFormatName(f), ScaleLayoutName(sl),
              sh.rows, sh.cols, ImplName(Impl{target}));
          for (size_t i = 0; i < want_s.size(); ++i) {
            ASSERT_EQ(got_s[i], want_s[i]) << what << " scale byte " << i;
          }
          ASSERT_EQ(got_e, want_e) << what;
        }
      }
    }
  }
}

TEST(MxSimd, Tcgen05TilesEveryTileCountEveryTarget) {
  // The tcgen05 writer transposes 4 rows' u32 columns a vector of 4 or 8
  // tiles at a time, in batches of 16 tiles, with masked stores where a
  // row range cuts a lane's 4 rows: every count of whole tiles per row
  // from 1 to 20 and around 32 and 64 (whole vectors, one partial vector,
  // several batches), with and without a ragged last tile, and row ranges
  // that cut groups at every lane pattern (rows 32 q + i, q cut between 0
  // and 3). Scale bytes outside the rows' blocks keep their prior value.
  std::vector<size_t> tile_counts;
  for (size_t t = 1; t <= 20; ++t) tile_counts.push_back(t);
  for (size_t t : {31, 32, 33, 63, 64, 65}) tile_counts.push_back(t);
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  const size_t rows = 261;
  const Ranges cut = {{0, 37},    {37, 101},  {101, 128},
                      {128, 190}, {190, 260}, {260, 261}};
  for (size_t whole_tiles : tile_counts) {
    for (size_t extra_blocks : {0, 3}) {
      for (const Ranges& ranges : {Ranges{{0, rows}}, cut}) {
        const MxFormat f = MxFormat::kMxfp8E4m3;
        const size_t cols = (4 * whole_tiles + extra_blocks) * 32;
        MxOptions o;
        o.layout = ElementLayout::kCodes;
        o.scale_layout = ScaleLayout::kTcgen05;
        const std::vector<uint8_t> in = F32Bytes(RandomTensor(
            rows * cols, static_cast<uint32_t>(whole_tiles * 5 + extra_blocks),
            true));
        const auto run = [&](bool scalar_ref, int64_t target, std::vector<uint8_t>& e,
                             std::vector<uint8_t>& sc) {
          QuantizeRowRangesF32(f, o, in, rows, cols, ranges, scalar_ref, target, e, sc);
        };
        std::vector<uint8_t> want_e, want_s, got_e, got_s;
        run(true, 0, want_e, want_s);
        for (int64_t target : AvailableTargets()) {
          run(false, target, got_e, got_s);
          const std::string what =
              absl::StrFormat("%dx%d, %d row ranges, target %s", rows, cols,
                              ranges.size(), ImplName(Impl{target}));
          for (size_t i = 0; i < want_s.size(); ++i) {
            ASSERT_EQ(got_s[i], want_s[i]) << what << " scale byte " << i;
          }
          ASSERT_EQ(got_e, want_e) << what;
        }
      }
    }
  }
}

TEST(MxSimd, Nvfp4CallsThatChangeTensorScaleOnOneThreadEveryTarget) {
  // The SIMD driver keeps a thread's NVFP4 threshold table for its next
  // call with the same tensor scale, mode, source and arithmetic: a run
  // of calls on one thread that changes each of them in turn (and comes
  // back to earlier ones) equals the scalar reference at every call.
  const size_t rows = 4, cols = 512;
  const std::vector<float> x = RandomTensor(rows * cols, 77, true);
  struct Call {
    float t;
    ScaleMode mode;
    Format from;
    Nvfp4Arithmetic arithmetic;
  };
  const ScaleMode rn = ScaleMode::kEven;
  const Nvfp4Arithmetic exact = Nvfp4Arithmetic::kExact;
  const Call calls[] = {
      {1.0f, rn, Format::kF32, exact},
      {0.001f, rn, Format::kF32, exact},
      {1.0f, rn, Format::kF32, exact},
      {0x1.000002p0f, rn, Format::kF32, exact},  // 1 ulp above 1
      {0.001f, rn, Format::kBF16, exact},
      {0.001f, ScaleMode::kFloor, Format::kBF16, exact},
      {0.001f, ScaleMode::kCeil, Format::kF32, exact},
      {0.001f, rn, Format::kF32, Nvfp4Arithmetic::kF32Quotient},
      {0x1p-20f, rn, Format::kBF16, exact},
      {0.001f, rn, Format::kF16, exact},
      {0.001f, rn, Format::kF32, exact},
  };
  for (int64_t target : AvailableTargets()) {
    for (const Call& c : calls) {
      MxOptions o;
      o.scale_mode = c.mode;
      o.tensor_scale = c.t;
      o.nvfp4_arithmetic = c.arithmetic;
      const std::vector<uint8_t> in = ToSource(x, c.from);
      const MxShape s{MxFormat::kNvfp4, o.layout, o.scale_layout, rows, cols};
      std::vector<uint8_t> want_e(s.element_bytes()), want_s(s.scale_bytes());
      std::vector<uint8_t> got_e(s.element_bytes()), got_s(s.scale_bytes());
      ASSERT_TRUE(scalar::QuantizeMxRows(
                      MxFormat::kNvfp4, c.from, in, rows, cols, 0, rows, o,
                      absl::MakeSpan(want_e), absl::MakeSpan(want_s))
                      .ok());
      ASSERT_TRUE(QuantizeMxRows(MxFormat::kNvfp4, c.from, in, rows, cols, 0,
                                 rows, o, absl::MakeSpan(got_e),
                                 absl::MakeSpan(got_s), Impl{target})
                      .ok());
      const std::string what = absl::StrFormat(
          "t %a %s from %s arithmetic %d target %s", c.t, ScaleModeName(c.mode),
          FormatName(c.from), static_cast<int>(c.arithmetic),
          ImplName(Impl{target}));
      ASSERT_EQ(got_s, want_s) << what;
      ASSERT_EQ(got_e, want_e) << what;
    }
  }
}

}  // namespace
}  // namespace mxpack::mx_test
