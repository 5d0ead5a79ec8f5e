// DequantizeMx on every target against the scalar path, bit for bit, on
// tensors built directly from codes: every element code of every format
// under every scale code (NaN 0xFF / 0x7F, zero and subnormal scales), NVFP4
// tensor scales from the smallest subnormal to near the f32 maximum, every
// element layout and both scale layouts, ragged rows, plus random bytes.
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
#include "tests/mx/mx_test_util.h"

namespace mxpack::mx_test {
namespace {

// Every element layout that can hold the format's codes.
std::vector<ElementLayout> AllLayoutsOf(MxFormat f) {
  switch (Traits(MxElementFormat(f)).bits) {
    case 4:
      return {ElementLayout::kCodes, ElementLayout::kDense4,
              ElementLayout::kB4x16P64};
    case 6:
      return {ElementLayout::kCodes, ElementLayout::kDense6,
              ElementLayout::kB6x16P32};
    default:
      return {ElementLayout::kCodes};
  }
}

// A quantized tensor built from codes: code(r, c) per element (row padding
// stays 0) and scale(r, k) per block (layout padding stays 0x00).
template <class CodeFn, class ScaleFn>
MxTensor Build(MxFormat f, ElementLayout layout, ScaleLayout sl, size_t rows,
               size_t cols, float tensor_scale, const CodeFn& code,
               const ScaleFn& scale) {
  MxTensor t;
  t.shape = {f, layout, sl, rows, cols};
  t.tensor_scale = f == MxFormat::kNvfp4 ? tensor_scale : 1.0f;
  t.elements.assign(t.shape.element_bytes(), 0);
  t.scales.assign(t.shape.scale_bytes(), 0);
  std::vector<uint8_t> codes(t.shape.cols_padded());
  const size_t rb = t.shape.element_row_bytes();
  for (size_t r = 0; r < rows; ++r) {
    std::fill(codes.begin(), codes.end(), 0);
    for (size_t c = 0; c < cols; ++c) codes[c] = code(r, c);
    if (layout == ElementLayout::kCodes) {
      std::memcpy(t.elements.data() + r * rb, codes.data(), rb);
    } else {
      EXPECT_TRUE(scalar::Pack(*internal::PackedLayout(layout), codes,
                               absl::MakeSpan(t.elements).subspan(r * rb, rb))
                      .ok());
    }
    for (size_t k = 0; k < t.shape.blocks_per_row(); ++k) {
      t.scales[t.shape.ScaleOffset(r, k)] = scale(r, k);
    }
  }
  return t;
}

// Every target's f32 / bf16 / f16 output equals the scalar path's.
void ExpectTargetsEqualScalar(const MxTensor& t, const std::string& what) {
  const MxShape& s = t.shape;
  for (Format to : {Format::kF32, Format::kBF16, Format::kF16}) {
    const size_t ob = static_cast<size_t>(Traits(to).storage_bytes);
    std::vector<uint8_t> want(s.rows * s.cols * ob), got(want.size());
    ASSERT_TRUE(
        DequantizeMx(View(t), to, absl::MakeSpan(want), Impl{Impl::kScalar})
            .ok())
        << what;
    for (int64_t target : AvailableTargets()) {
      std::fill(got.begin(), got.end(), 0xEE);
      ASSERT_TRUE(
          DequantizeMx(View(t), to, absl::MakeSpan(got), Impl{target}).ok())
          << what;
      if (got == want) continue;
      size_t i = 0;
      while (std::memcmp(&got[i * ob], &want[i * ob], ob) == 0) ++i;
      const size_t r = i / s.cols, c = i % s.cols;
      uint32_t w = 0, g = 0;
      std::memcpy(&w, &want[i * ob], ob);
      std::memcpy(&g, &got[i * ob], ob);
      FAIL() << what << " to " << FormatName(to) << " "
             << ImplName(Impl{target}) << ": r" << r << " c" << c << " scale 0x"
             << std::hex << int{t.scales[s.ScaleOffset(r, c / s.block())]}
             << " t 0x" << F32Bits(t.tensor_scale) << ": expected 0x" << w
             << ", got 0x" << g;
    }
  }
}

std::string Name(MxFormat f, ElementLayout layout, ScaleLayout sl, size_t rows,
                 size_t cols, float ts) {
  return absl::StrFormat("%s %s %s %dx%d t=%a", MxFormatName(f),
                         ElementLayoutName(layout), ScaleLayoutName(sl), rows,
                         cols, ts);
}

constexpr float kTensorScales[] = {1.0f,
                                   0.001f,
                                   3.0e38f,
                                   1.0e20f,
                                   1.0e-30f,
                                   std::numeric_limits<float>::min(),
                                   std::numeric_limits<float>::denorm_min(),
                                   1.0e-40f};

TEST(MxDequantizeSimd, EveryCodeUnderEveryScaleCode) {
  for (MxFormat f : kFormats) {
    const uint32_t ncodes = 1u << Traits(MxElementFormat(f)).bits;
    const size_t nscales = f == MxFormat::kNvfp4 ? 128 : 256;
    const bool nvfp4 = f == MxFormat::kNvfp4;
    for (ElementLayout layout : AllLayoutsOf(f)) {
      for (ScaleLayout sl : {ScaleLayout::kLinear, ScaleLayout::kTcgen05}) {
        // Row r: scale code r in every block; columns cycle through every
        // code (cols = 256 + 5: a ragged last block).
        for (size_t cols : {size_t{256}, size_t{261}}) {
          for (float ts : kTensorScales) {
            if (!nvfp4 && ts != 1.0f) continue;
            const MxTensor t = Build(
                f, layout, sl, nscales, cols, ts,
                [&](size_t r, size_t c) {
                  return static_cast<uint8_t>((c + r) % ncodes);
                },
                [](size_t r, size_t) { return static_cast<uint8_t>(r); });
            ExpectTargetsEqualScalar(t, Name(f, layout, sl, nscales, cols, ts));
          }
        }
      }
    }
  }
}

TEST(MxDequantizeSimd, RandomCodesScalesAndShapes) {
  std::mt19937 rng(2024);
  for (MxFormat f : kFormats) {
    const uint32_t ncodes = 1u << Traits(MxElementFormat(f)).bits;
    const uint32_t nscales = f == MxFormat::kNvfp4 ? 128 : 256;
    for (ElementLayout layout : AllLayoutsOf(f)) {
      for (ScaleLayout sl : {ScaleLayout::kLinear, ScaleLayout::kTcgen05}) {
        for (size_t rows : {size_t{1}, size_t{3}, size_t{130}}) {
          for (size_t cols : {size_t{1}, size_t{7}, size_t{15}, size_t{16},
                              size_t{17}, size_t{31}, size_t{32}, size_t{33},
                              size_t{48}, size_t{100}, size_t{1000}}) {
            if (rows == 130 && cols > 100) continue;
            const float ts = kTensorScales[rng() % std::size(kTensorScales)];
            const MxTensor t = Build(
                f, layout, sl, rows, cols, ts,
                [&](size_t, size_t) {
                  return static_cast<uint8_t>(rng() % ncodes);
                },
                [&](size_t, size_t) {
                  return static_cast<uint8_t>(rng() % nscales);
                });
            ExpectTargetsEqualScalar(t, Name(f, layout, sl, rows, cols, ts));
          }
        }
      }
    }
  }
}

// MX into bf16 / f16 looks blocks up in per-call tables of each scale
// code's results on calls of 64 blocks or more (fp8: magnitudes, the sign
// applied where e * 2^s is an exact f32); calls of 63 and 64 blocks, every
// code, scale codes spread over all 256 (the fp8 range edges among them).
TEST(MxDequantizeSimd, TableThresholdAndScaleSpread) {
  for (MxFormat f : kFormats) {
    if (f == MxFormat::kNvfp4) continue;
    const uint32_t ncodes = 1u << Traits(MxElementFormat(f)).bits;
    for (ElementLayout layout : AllLayoutsOf(f)) {
      for (size_t blocks : {size_t{63}, size_t{64}}) {
        const MxTensor t = Build(
            f, layout, ScaleLayout::kTcgen05, 1, 32 * blocks, 1.0f,
            [&](size_t, size_t c) {
              return static_cast<uint8_t>((c * 5 + c / 32) % ncodes);
            },
            [](size_t, size_t k) {
              // fp8 table range edges: e4m3 codes 10..246, e5m2 17..239
              // (2^-117..2^119, 2^-110..2^112), NaN 0xFF, 0.
              constexpr uint8_t kEdges[] = {9,  10,  246, 247, 16,
                                            17, 239, 240, 255, 0};
              return k < std::size(kEdges) ? kEdges[k]
                                           : static_cast<uint8_t>(k * 67 + 3);
            });
        ExpectTargetsEqualScalar(
            t, Name(f, layout, ScaleLayout::kTcgen05, 1, 32 * blocks, 1.0f));
      }
    }
  }
}

// MX fp8 into bf16 / f16 re-biases the codes' bits where every product of
// a block is an exact normal of the output (no table): blocks whose codes
// share one exponent field E (every mantissa, both signs; E = 0: zeros and
// subnormals; the top field: NaN / Inf) under every scale code, so each
// (scale, E) sits on its side of the output's normal range edges (bf16:
// f32 underflow / overflow; f16: subnormal results, Inf), and blocks that
// mix two adjacent fields.
TEST(MxDequantizeSimd, Fp8RebiasEdgesUnderEveryScaleCode) {
  for (MxFormat f : {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2}) {
    const int man = f == MxFormat::kMxfp8E4m3 ? 3 : 2;
    const size_t fields = size_t{1} << (7 - man);
    // Blocks 0..fields-1: field k; then fields-1 blocks mixing k and k + 1.
    const size_t cols = 32 * (2 * fields - 1);
    const MxTensor t = Build(
        f, ElementLayout::kCodes, ScaleLayout::kLinear, 256, cols, 1.0f,
        [&](size_t r, size_t c) {
          const size_t k = c / 32, i = c % 32;
          const size_t e = k < fields ? k : k - fields + (i % 2);
          const size_t m = (i / 2 + r) % (size_t{1} << man);
          return static_cast<uint8_t>(((i + r) % 3 == 0 ? 0x80 : 0) | e << man |
                                      m);
        },
        [](size_t r, size_t) { return static_cast<uint8_t>(r); });
    ExpectTargetsEqualScalar(t, Name(f, ElementLayout::kCodes,
                                     ScaleLayout::kLinear, 256, cols, 1.0f));
  }
}

#if defined(__x86_64__) || defined(__i386__)
TEST(MxDequantizeSimd, SameUnderCallerFtzDaz) {
  // Both paths multiply in the caller's floating-point environment: tiny
  // scales flush alike. (NVFP4 into bf16 / f16 caches each scale code's
  // results per call: filled on first use, or all first for calls of 2048
  // blocks or more, as 128 rows of 256 columns are.)
  const FtzDazGuard guard;
  for (MxFormat f : kFormats) {
    const uint32_t ncodes = 1u << Traits(MxElementFormat(f)).bits;
    const size_t nscales = f == MxFormat::kNvfp4 ? 128 : 256;
    for (float ts : {1.0f, 1.0e-30f, std::numeric_limits<float>::min()}) {
      for (size_t cols : {size_t{67}, size_t{256}}) {
        const MxTensor t = Build(
            f, ElementLayout::kCodes, ScaleLayout::kLinear, nscales, cols, ts,
            [&](size_t r, size_t c) {
              return static_cast<uint8_t>((c + r) % ncodes);
            },
            [](size_t r, size_t) { return static_cast<uint8_t>(r); });
        ExpectTargetsEqualScalar(t, Name(f, ElementLayout::kCodes,
                                         ScaleLayout::kLinear, nscales, cols, ts) +
                                        " FTZ/DAZ");
      }
    }
  }
}
#endif

}  // namespace
}  // namespace mxpack::mx_test
