// The tcgen05 scale-tile layout against an independent derivation, scale
// relayout, dequantization, error statistics and error messages of the MX
// entry points.
#include <algorithm>
#include <cmath>
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
// Scale layouts.

// The tcgen05 tile layout derived independently, the way torch-style
// "to_blocked" code builds it: pad [rows][blocks] to [R][K] (R % 128 == 0,
// K % 4 == 0), view as [R/128][128][K/4][4], permute to [R/128][K/4][128][4],
// view each tile's 128 rows as [4][32] and transpose to [32][4] (row
// r = 32*i + j goes to position j*4 + i), flatten.
std::vector<size_t> BlockedOffsets(size_t rows, size_t blocks) {
  const size_t R = (rows + 127) / 128 * 128, K = (blocks + 3) / 4 * 4;
  std::vector<size_t> off(rows * blocks);
  size_t pos = 0;
  for (size_t rt = 0; rt < R / 128; ++rt) {
    for (size_t kt = 0; kt < K / 4; ++kt) {
      for (size_t j = 0; j < 32; ++j) {      // position inside the [32] axis
        for (size_t i = 0; i < 4; ++i) {     // the [4] axis after transpose
          for (size_t kk = 0; kk < 4; ++kk, ++pos) {
            const size_t r = rt * 128 + i * 32 + j, k = kt * 4 + kk;
            if (r < rows && k < blocks) off[r * blocks + k] = pos;
          }
        }
      }
    }
  }
  return off;
}

TEST(MxScaleLayout, TileOffsetsMatchIndependentDerivation) {
  for (auto [rows, cols] : {std::pair<size_t, size_t>{128, 128}, {256, 512},
                            {130, 96}, {1, 32}, {384, 1056}}) {
    MxShape s{MxFormat::kMxfp8E4m3, ElementLayout::kCodes,
              ScaleLayout::kTcgen05, rows, cols};
    const std::vector<size_t> want = BlockedOffsets(rows, s.blocks_per_row());
    std::vector<bool> used(s.scale_bytes(), false);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t k = 0; k < s.blocks_per_row(); ++k) {
        const size_t o = s.ScaleOffset(r, k);
        ASSERT_EQ(o, want[r * s.blocks_per_row() + k]) << r << "," << k;
        ASSERT_LT(o, s.scale_bytes());
        ASSERT_FALSE(used[o]);
        used[o] = true;
        // Inside the tile: (r % 32) * 16 + (r / 32 % 4) * 4 + k % 4.
        ASSERT_EQ(o % 512, (r % 32) * 16 + (r % 128) / 32 * 4 + k % 4);
      }
    }
  }
}

TEST(MxScaleLayout, RelayoutBothDirectionsAndQuantizerAgree) {
  const size_t rows = 200, cols = 33 * 32 + 7;
  const std::vector<float> x = RandomTensor(rows * cols, 5, false);
  MxOptions lin, til;
  til.scale_layout = ScaleLayout::kTcgen05;
  absl::StatusOr<MxTensor> a =
      QuantizeMx(MxFormat::kMxfp8E5m2, Format::kF32, F32Bytes(x), rows, cols, lin);
  absl::StatusOr<MxTensor> b =
      QuantizeMx(MxFormat::kMxfp8E5m2, Format::kF32, F32Bytes(x), rows, cols, til);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<uint8_t> to_tiled(b->scales.size(), 0xAA);
  ASSERT_TRUE(RelayoutScales(a->shape, a->scales, ScaleLayout::kTcgen05,
                             absl::MakeSpan(to_tiled))
                  .ok());
  EXPECT_EQ(to_tiled, b->scales);  // padding 0x00 in both
  std::vector<uint8_t> back(a->scales.size());
  ASSERT_TRUE(RelayoutScales(b->shape, b->scales, ScaleLayout::kLinear,
                             absl::MakeSpan(back))
                  .ok());
  EXPECT_EQ(back, a->scales);
  EXPECT_EQ(a->elements, b->elements);
  EXPECT_FALSE(RelayoutScales(a->shape, a->scales, ScaleLayout::kTcgen05,
                              absl::MakeSpan(back))
                   .ok());
}

// ---------------------------------------------------------------------------
// Dequantization and statistics.

TEST(MxDequantize, EqualsExactValueRoundedOnce) {
  for (MxFormat f : kFormats) {
    MxOptions o;
    if (Traits(MxElementFormat(f)).bits == 4) o.layout = ElementLayout::kB4x16P64;
    if (Traits(MxElementFormat(f)).bits == 6) o.layout = ElementLayout::kB6x16P32;
    o.scale_layout = ScaleLayout::kTcgen05;
    const size_t rows = 3, cols = 50;
    std::vector<float> x = RandomTensor(rows * cols, 77, true);
    x[7] = 3.0e38f;  // large scale: e * 2^s may pass f32 range for e4m3
    absl::StatusOr<MxTensor> q =
        QuantizeMx(f, Format::kF32, F32Bytes(x), rows, cols, o);
    ASSERT_TRUE(q.ok());
    const Format elem = MxElementFormat(f);
    std::vector<uint8_t> codes(q->shape.cols_padded());
    for (Format to : {Format::kF64, Format::kF32, Format::kBF16, Format::kF16}) {
      const size_t ob = static_cast<size_t>(Traits(to).storage_bytes);
      std::vector<uint8_t> out(rows * cols * ob);
      ASSERT_TRUE(DequantizeMx(View(*q), to, absl::MakeSpan(out)).ok());
      for (size_t r = 0; r < rows; ++r) {
        const size_t rb = q->shape.element_row_bytes();
        const auto row = absl::MakeConstSpan(q->elements).subspan(r * rb, rb);
        if (o.layout == ElementLayout::kCodes) {
          std::memcpy(codes.data(), row.data(), rb);
        } else {
          ASSERT_TRUE(scalar::Unpack(*internal::PackedLayout(o.layout), row,
                                     absl::MakeSpan(codes))
                          .ok());
        }
        for (size_t c = 0; c < cols; ++c) {
          const uint8_t sc = q->scales[q->shape.ScaleOffset(r, c / q->shape.block())];
          const double e = scalar::ToDouble(elem, codes[c]);
          double exact = e * scalar::ToDouble(MxScaleFormat(f), sc);
          uint64_t want;
          if (f == MxFormat::kNvfp4) {
            exact *= q->tensor_scale;
            const float v32 = static_cast<float>(e * scalar::ToDouble(Format::kUE4M3, sc)) *
                              q->tensor_scale;
            EncodePolicy rn;
            rn.saturation = Saturation::kNoSat;
            want = to == Format::kF64 ? scalar::F64Bits(exact)
                   : to == Format::kF32
                       ? F32Bits(v32)
                       : scalar::Convert(Format::kF32, to, F32Bits(v32), rn);
          } else {
            EncodePolicy rn;
            rn.saturation = Saturation::kNoSat;
            want = to == Format::kF64
                       ? scalar::F64Bits(exact)
                       : scalar::Convert(Format::kF64, to, scalar::F64Bits(exact), rn);
          }
          uint64_t got = 0;
          std::memcpy(&got, out.data() + (r * cols + c) * ob, ob);
          if (std::isnan(exact)) {
            EXPECT_EQ(scalar::Classify(to, got), scalar::ValueClass::kNaN);
            if (to == Format::kF32) {
              EXPECT_EQ(got, 0x7FFFFFFFu);
            }
            continue;
          }
          ASSERT_EQ(got, want) << MxFormatName(f) << " to " << FormatName(to)
                               << " r" << r << " c" << c;
        }
      }
    }
  }
}

TEST(MxStats, HandExample) {
  // MXFP4 floor, one block: 6 exact, 7 saturates to 6 (error 1), 1.25 -> tie
  // between 1 and 1.5 -> even mantissa: 1 (error 0.25); one NaN-free block.
  std::vector<float> x = {6.0f, 7.0f, 1.25f, std::numeric_limits<float>::infinity()};
  x.resize(32, 0.0f);
  absl::StatusOr<MxTensor> q = QuantizeMx(MxFormat::kMxfp4, Format::kF32,
                                          F32Bytes(x), 1, 32, MxOptions{});
  ASSERT_TRUE(q.ok());
  absl::StatusOr<MxErrorStats> st =
      ComputeMxErrorStats(Format::kF32, F32Bytes(x), View(*q));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->elements, 32u);
  EXPECT_EQ(st->nan_inf_inputs, 1u);
  EXPECT_EQ(st->saturated, 1u);
  EXPECT_EQ(st->max_abs_error, 1.0);
  const double sum_e2 = 1.0 + 0.0625, sum_x2 = 36 + 49 + 1.5625;
  EXPECT_DOUBLE_EQ(st->rmse, std::sqrt(sum_e2 / 31));
  EXPECT_DOUBLE_EQ(st->sqnr_db, 10 * std::log10(sum_x2 / sum_e2));
}

// ---------------------------------------------------------------------------
// Errors.

TEST(MxErrors, NamesArgumentExpectedAndActual) {
  std::vector<uint8_t> in(4 * 32);
  auto msg = [](const absl::Status& s) { return std::string(s.message()); };
  EXPECT_NE(msg(ParseMxFormat("mxfp5").status()).find("mxfp4"), std::string::npos);
  EXPECT_FALSE(ParseScaleMode("round").ok());
  EXPECT_FALSE(ParseElementLayout("dense5").ok());
  EXPECT_FALSE(ParseScaleLayout("tiled").ok());
  MxOptions o;
  o.layout = ElementLayout::kDense4;
  absl::StatusOr<MxTensor> t = QuantizeMx(MxFormat::kMxfp8E4m3, Format::kF32, in, 1, 32, o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(msg(t.status()).find("layout"), std::string::npos);
  t = QuantizeMx(MxFormat::kMxfp4, Format::kF32, in, 2, 32);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(msg(t.status()).find("expected 256 bytes"), std::string::npos) << msg(t.status());
  EXPECT_NE(msg(t.status()).find("got 128"), std::string::npos);
  t = QuantizeMx(MxFormat::kMxfp4, Format::kE4M3, in, 1, 32);
  EXPECT_FALSE(t.ok());
  t = QuantizeMx(MxFormat::kMxfp4, Format::kF32, in, 0, 32);
  EXPECT_FALSE(t.ok());
  // Row ranges: NVFP4 needs a tensor scale; bad ranges are named.
  MxShape s{MxFormat::kNvfp4, ElementLayout::kCodes, ScaleLayout::kLinear, 1, 32};
  std::vector<uint8_t> e(s.element_bytes()), sc(s.scale_bytes());
  absl::Status st = QuantizeMxRows(MxFormat::kNvfp4, Format::kF32, in, 1, 32, 0,
                                   1, MxOptions{}, absl::MakeSpan(e), absl::MakeSpan(sc));
  EXPECT_NE(msg(st).find("tensor_scale"), std::string::npos);
  st = QuantizeMxRows(MxFormat::kMxfp4, Format::kF32, in, 1, 32, 1, 2,
                      MxOptions{}, absl::MakeSpan(e), absl::MakeSpan(sc));
  EXPECT_NE(msg(st).find("row range"), std::string::npos);
  // Dequantize: bad codes and ue4m3 sign bits are rejected, out untouched.
  absl::StatusOr<MxTensor> q = QuantizeMx(MxFormat::kMxfp4, Format::kF32, in, 1, 32);
  ASSERT_TRUE(q.ok());
  q->elements[3] = 0x10;
  std::vector<uint8_t> out(32 * 4, 0xEE);
  st = DequantizeMx(View(*q), Format::kF32, absl::MakeSpan(out));
  EXPECT_NE(msg(st).find("elements[3] = 0x10"), std::string::npos) << msg(st);
  EXPECT_EQ(out, std::vector<uint8_t>(32 * 4, 0xEE));
  q = QuantizeMx(MxFormat::kNvfp4, Format::kF32, in, 1, 32);
  ASSERT_TRUE(q.ok());
  q->scales[1] = 0x80;
  st = DequantizeMx(View(*q), Format::kF32, absl::MakeSpan(out));
  EXPECT_NE(msg(st).find("sign bit"), std::string::npos) << msg(st);
  q->scales[1] = 0;
  EXPECT_FALSE(DequantizeMx(View(*q), Format::kE4M3, absl::MakeSpan(out)).ok());
  EXPECT_FALSE(DequantizeMx(View(*q), Format::kF32, absl::MakeSpan(out).subspan(4)).ok());
  q->tensor_scale = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(DequantizeMx(View(*q), Format::kF32, absl::MakeSpan(out)).ok());
}

}  // namespace
}  // namespace mxpack::mx_test
