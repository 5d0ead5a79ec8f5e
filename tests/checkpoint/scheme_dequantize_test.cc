// The serving stacks' dequantizers (Scheme::Dequantize of compressed-tensors,
// ModelOpt and gpt-oss) against their definitions written out element by
// element with scalar::DecodeToF32 and std::ldexp, on tensors of random
// bytes: every e2m1 and e4m3 code, NaN and negative e4m3 scales, E8M0 codes
// 0 and 255, and global scales that make the divisor tiny or huge.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/safetensors.h"
#include "mxpack/scalar.h"
#include "src/checkpoint/scheme.h"

namespace mxpack::internal {
namespace {

using scalar::DecodeToF32;

struct File {
  std::vector<std::vector<uint8_t>> data;
  std::vector<StTensorOut> tensors;
  std::vector<uint8_t> bytes;
  SafetensorsView view;

  void Add(const std::string& name, StDtype dtype, std::vector<uint64_t> shape,
           std::vector<uint8_t> b) {
    data.push_back(std::move(b));
    tensors.push_back({name, dtype, std::move(shape), {}});
  }
  // The data spans are set here, once `data` no longer grows.
  void Finish() {
    for (size_t i = 0; i < tensors.size(); ++i) tensors[i].data = data[i];
    bytes = *SerializeSafetensors(tensors, {});
    view = *ParseSafetensors(bytes);
  }
};

std::vector<uint8_t> Random(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> b(n);
  for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(4 * v.size());
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

uint8_t Nibble(const uint8_t* packed, uint64_t i) {
  return (i % 2 == 0) ? (packed[i / 2] & 0xF) : (packed[i / 2] >> 4);
}

float Pow2Times(float x, int code) {
  return static_cast<float>(std::ldexp(static_cast<double>(x), code - 127));
}

// An NVFP4 tensor of random bytes, [rows, cols]: `packed` (U8, two codes per
// byte), `scale` (F8_E4M3, one per 16) and the f32 scalar `second` = v.
void AddRandomNvfp4(File& f, std::mt19937& rng, uint64_t rows, uint64_t cols,
                    const std::string& packed, const std::string& scale,
                    const std::string& second, float v) {
  f.Add(packed, StDtype::kU8, {rows, cols / 2}, Random(rng, rows * cols / 2));
  f.Add(scale, StDtype::kF8E4M3, {rows, cols / 16},
        Random(rng, rows * cols / 16));
  f.Add(second, StDtype::kF32, {1}, F32Bytes({v}));
  f.Finish();
}

// Dequantizes the one quantized tensor of `f` and compares every element's
// bits with want(i) (NaN: any NaN of the same sign).
template <typename Want>
void Check(const File& f, const std::string& format, uint64_t n, Want want,
           const std::string& what) {
  const std::vector<FoundQuantized> found = FindQuantized(f.view);
  ASSERT_EQ(found.size(), 1u) << what;
  ASSERT_EQ(found[0].format, format) << what;
  const Scheme* s = *FindScheme(found[0].scheme);
  std::vector<float> got(n);
  ASSERT_TRUE(s->Dequantize(f.view, found[0], 0, absl::MakeSpan(got)).ok())
      << what;
  for (uint64_t i = 0; i < n; ++i) {
    const float w = want(i);
    uint32_t gb, wb;
    std::memcpy(&gb, &got[i], 4);
    std::memcpy(&wb, &w, 4);
    const bool same = gb == wb || (std::isnan(got[i]) && std::isnan(w) &&
                                   std::signbit(got[i]) == std::signbit(w));
    if (!same) {
      FAIL() << what
             << absl::StrFormat(": element %d got %08x want %08x", i, gb, wb);
    }
  }
  // The same bits from ranges of 1 to 7 rows, as the checkpoint driver's
  // workers dequantize them (gpt-oss's ranges cross its 32-row groups).
  const uint64_t cols = found[0].shape.back(), rows = n / cols;
  std::vector<float> parts(n);
  std::mt19937 rng(7);
  for (uint64_t r = 0; r < rows;) {
    const uint64_t k = std::min<uint64_t>(1 + rng() % 7, rows - r);
    ASSERT_TRUE(s->Dequantize(f.view, found[0], r,
                              absl::MakeSpan(parts.data() + r * cols, k * cols))
                    .ok())
        << what << ": rows " << r << " + " << k;
    r += k;
  }
  EXPECT_EQ(std::memcmp(parts.data(), got.data(), 4 * n), 0)
      << what << ": row ranges";
}

TEST(SchemeDequantize, CompressedTensorsNvfp4) {
  std::mt19937 rng(1);
  for (float g : {1.0f, 2688.0f / 0.03f, 3.0e-30f, 7.0e35f}) {
    const uint64_t rows = 6, cols = 64;
    File f;
    AddRandomNvfp4(f, rng, rows, cols, "l.weight_packed", "l.weight_scale",
                   "l.weight_global_scale", g);
    const uint8_t* e = f.data[0].data();
    const uint8_t* s = f.data[1].data();
    Check(
        f, "nvfp4", rows * cols,
        [&](uint64_t i) {
          const float d = DecodeToF32(Format::kE4M3, s[i / 16]);
          return DecodeToF32(Format::kE2M1, Nibble(e, i)) * (d / g);
        },
        absl::StrFormat("compressed-tensors nvfp4 g=%g", g));
  }
}

TEST(SchemeDequantize, CompressedTensorsMx) {
  std::mt19937 rng(2);
  const uint64_t rows = 8, cols = 96;
  for (bool fp8 : {false, true}) {
    File f;
    if (fp8) {
      f.Add("l.weight", StDtype::kF8E4M3, {rows, cols},
            Random(rng, rows * cols));
    } else {
      f.Add("l.weight_packed", StDtype::kU8, {rows, cols / 2},
            Random(rng, rows * cols / 2));
    }
    std::vector<uint8_t> scales = Random(rng, rows * cols / 32);
    scales[0] = 0;
    scales[1] = 255;
    scales[2] = 254;
    f.Add("l.weight_scale", StDtype::kU8, {rows, cols / 32}, scales);
    f.Finish();
    const uint8_t* e = f.data[0].data();
    Check(
        f, fp8 ? "mxfp8" : "mxfp4", rows * cols,
        [&](uint64_t i) {
          const float x = fp8 ? DecodeToF32(Format::kE4M3, e[i])
                              : DecodeToF32(Format::kE2M1, Nibble(e, i));
          return Pow2Times(x, scales[i / 32]);
        },
        fp8 ? "compressed-tensors mxfp8" : "compressed-tensors mxfp4");
  }
}

TEST(SchemeDequantize, ModelOptNvfp4) {
  std::mt19937 rng(3);
  for (float t : {1.0f, 0.03f / 2688.0f, 1.0e-38f, 3.0e34f}) {
    const uint64_t rows = 5, cols = 48;
    File f;
    AddRandomNvfp4(f, rng, rows, cols, "l.weight", "l.weight_scale",
                   "l.weight_scale_2", t);
    const uint8_t* e = f.data[0].data();
    const uint8_t* s = f.data[1].data();
    Check(
        f, "nvfp4", rows * cols,
        [&](uint64_t i) {
          const float d = DecodeToF32(Format::kE4M3, s[i / 16]) * t;
          const uint8_t code = Nibble(e, i);
          // Its value table maps code 0x8 to +0, whatever the scale.
          return code == 0x8 ? 0.0f : DecodeToF32(Format::kE2M1, code) * d;
        },
        absl::StrFormat("modelopt nvfp4 t=%g", t));
  }
}

TEST(SchemeDequantize, GptOssExperts) {
  std::mt19937 rng(4);
  const uint64_t experts = 3, outs = 5, in = 64;
  File f;
  f.Add("m.experts.down_proj_blocks", StDtype::kU8,
        {experts, outs, in / 32, 16}, Random(rng, experts * outs * in / 2));
  std::vector<uint8_t> scales = Random(rng, experts * outs * in / 32);
  scales[0] = 0;
  scales[1] = 255;
  f.Add("m.experts.down_proj_scales", StDtype::kU8, {experts, outs, in / 32},
        scales);
  f.Finish();
  const uint8_t* b = f.data[0].data();
  // Output [E, in, out]: element (e, i, o) from row e * outs + o of the blocks.
  Check(
      f, "mxfp4", experts * in * outs,
      [&](uint64_t k) {
        const uint64_t e = k / (in * outs), i = k / outs % in, o = k % outs;
        const uint64_t row = e * outs + o;
        return Pow2Times(
            DecodeToF32(Format::kE2M1, Nibble(b + row * (in / 2), i)),
            scales[row * (in / 32) + i / 32]);
      },
      "gpt-oss mxfp4");
}

// Every e4m3 value (which include every e2m1 value) under every E8M0 code:
// ScaleByE8m0's f32 multiply (f64 for code 255) against ldexp in f64, bits
// equal (NaN: a NaN of the same sign). Subnormal, overflowing and zero
// products included.
TEST(SchemeDequantize, ScaleByE8m0IsLdexpRoundedOnce) {
  for (int c = 0; c < 256; ++c) {
    float v[256];
    for (int x = 0; x < 256; ++x)
      v[x] = DecodeToF32(Format::kE4M3, static_cast<uint32_t>(x));
    ScaleByE8m0(v, 256, static_cast<uint8_t>(c));
    for (int x = 0; x < 256; ++x) {
      const float w =
          Pow2Times(DecodeToF32(Format::kE4M3, static_cast<uint32_t>(x)), c);
      uint32_t gb, wb;
      std::memcpy(&gb, &v[x], 4);
      std::memcpy(&wb, &w, 4);
      if (std::isnan(w)) {
        ASSERT_TRUE(std::isnan(v[x]) && std::signbit(v[x]) == std::signbit(w))
            << absl::StrFormat("code %d, e4m3 %02x", c, x);
      } else {
        ASSERT_EQ(gb, wb) << absl::StrFormat("code %d, e4m3 %02x", c, x);
      }
    }
  }
}

TEST(SchemeDequantize, RowRangesOutsideTheTensorAreRefused) {
  std::mt19937 rng(5);
  const uint64_t rows = 6, cols = 64;
  File f;
  AddRandomNvfp4(f, rng, rows, cols, "l.weight_packed", "l.weight_scale",
                 "l.weight_global_scale", 1.0f);
  const std::vector<FoundQuantized> found = FindQuantized(f.view);
  ASSERT_EQ(found.size(), 1u);
  const Scheme* s = *FindScheme(found[0].scheme);
  std::vector<float> out(3 * cols);
  const auto run = [&](uint64_t first_row, size_t n) {
    return s->Dequantize(f.view, found[0], first_row,
                         absl::MakeSpan(out.data(), n));
  };
  EXPECT_TRUE(run(4, 2 * cols).ok());
  EXPECT_TRUE(run(6, 0).ok());          // an empty range at the end
  EXPECT_FALSE(run(5, 2 * cols).ok());  // past the last row
  EXPECT_FALSE(run(7, 0).ok());
  EXPECT_FALSE(run(0, cols - 1).ok());  // not whole rows
  const absl::Status st = run(0, cols + 3);
  EXPECT_NE(st.message().find("not whole rows"), absl::string_view::npos) << st;
}

}  // namespace
}  // namespace mxpack::internal
