// Shared helpers of the MX / NVFP4 tests (tests/mx/*_test.cc): formats and
// modes, source conversions, random tensors and the every-target comparison.
#ifndef MXPACK_TESTS_MX_MX_TEST_UTIL_H_
#define MXPACK_TESTS_MX_MX_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/dispatch.h"
#include "mxpack/mx.h"
#include "mxpack/scalar.h"

namespace mxpack::mx_test {

using scalar::F32Bits;
using scalar::F32FromBits;

inline constexpr MxFormat kFormats[] = {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2,
                                 MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2,
                                 MxFormat::kMxfp4,     MxFormat::kNvfp4};
inline constexpr ScaleMode kModes[] = {ScaleMode::kFloor, ScaleMode::kRceil,
                                ScaleMode::kCeil, ScaleMode::kEven};

inline std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// One block of 32 (MX) / 16 (NVFP4) values, zero-filled, quantized into
// codes + linear scales with the scalar reference.
inline MxTensor QuantizeBlock(MxFormat f, std::vector<float> x, ScaleMode mode,
                       std::optional<float> tensor_scale = std::nullopt) {
  x.resize(MxBlockSize(f), 0.0f);
  MxOptions o;
  o.scale_mode = mode;
  o.tensor_scale = tensor_scale;
  absl::StatusOr<MxTensor> t = QuantizeMx(f, Format::kF32, F32Bytes(x), 1,
                                          x.size(), o, Impl{Impl::kScalar});
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

struct Case {
  MxFormat format;
  ScaleMode mode;
  Format from;
  ElementLayout layout;
  ScaleLayout scale_layout;
  size_t rows, cols;
};

// Random tensor with sprinkled specials: mixed magnitudes per block (so scales
// differ), subnormals, zeros, ties, and a few NaN/Inf.
inline std::vector<float> RandomTensor(size_t n, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-40, 40);
  std::vector<float> x(n);
  int be = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 16 == 0) be = e(rng);  // magnitudes correlated within a block
    x[i] = std::ldexp(u(rng), be - static_cast<int>(rng() % 8u));
    const uint32_t r = static_cast<uint32_t>(rng() % 1000u);
    if (r < 10) x[i] = 0.0f;
    if (r >= 10 && r < 15) x[i] = std::ldexp(u(rng), -135);  // subnormal
    if (r >= 15 && r < 25) x[i] = static_cast<float>(rng() % 13u) * 0.5f;
    if (specials && r == 998) x[i] = std::numeric_limits<float>::quiet_NaN();
    if (specials && r == 999) x[i] = -std::numeric_limits<float>::infinity();
  }
  return x;
}

inline std::vector<uint8_t> ToSource(const std::vector<float>& x, Format from) {
  if (from == Format::kF32) return F32Bytes(x);
  std::vector<uint8_t> b(x.size() * 2);
  EncodePolicy rn;
  rn.saturation = Saturation::kNoSat;
  for (size_t i = 0; i < x.size(); ++i) {
    const uint64_t c = scalar::Convert(Format::kF32, from, F32Bits(x[i]), rn);
    b[2 * i] = static_cast<uint8_t>(c);
    b[2 * i + 1] = static_cast<uint8_t>(c >> 8);
  }
  return b;
}

// n values u * 2^(binade_of(i) - k), u uniform in (-1, 1), k in 0..3.
template <class BinadeOf>
inline std::vector<float> RandomAtBinades(size_t n, uint32_t seed, const BinadeOf& binade_of) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::ldexp(u(rng), binade_of(i) - static_cast<int>(rng() % 4u));
  }
  return x;
}

// The GPU layout of a format's elements (packed where one exists).
inline ElementLayout PaddedLayoutOf(MxFormat f) {
  const int bits = Traits(MxElementFormat(f)).bits;
  return bits == 4 ? ElementLayout::kB4x16P64
                   : (bits == 6 ? ElementLayout::kB6x16P32 : ElementLayout::kCodes);
}

// The element layouts to test for a format: codes, and the padded GPU
// layout where one exists.
inline std::vector<ElementLayout> LayoutsOf(MxFormat f) {
  const ElementLayout padded = PaddedLayoutOf(f);
  if (padded == ElementLayout::kCodes) return {ElementLayout::kCodes};
  return {ElementLayout::kCodes, padded};
}

// Every format x mode x source (f32, bf16) x element layout (codes and the
// padded one) x scale layout: every target equals the scalar reference.
inline void ExpectEveryTargetEqualsScalar(const std::vector<float>& x, size_t rows, size_t cols,
                                   const char* what) {
  for (Format from : {Format::kF32, Format::kBF16}) {
    const std::vector<uint8_t> in = ToSource(x, from);
    for (MxFormat f : kFormats) {
      for (ScaleMode m : kModes) {
        for (ElementLayout layout : LayoutsOf(f)) {
          for (ScaleLayout sl : {ScaleLayout::kLinear, ScaleLayout::kTcgen05}) {
            MxOptions o;
            o.scale_mode = m;
            o.layout = layout;
            o.scale_layout = sl;
            const std::string name = absl::StrFormat(
                "%s: %s %s from %s %s %s %dx%d", what, MxFormatName(f), ScaleModeName(m),
                FormatName(from), ElementLayoutName(layout), ScaleLayoutName(sl), rows, cols);
            absl::StatusOr<MxTensor> ref =
                QuantizeMx(f, from, in, rows, cols, o, Impl{Impl::kScalar});
            ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
            for (int64_t target : AvailableTargets()) {
              absl::StatusOr<MxTensor> got = QuantizeMx(f, from, in, rows, cols, o, Impl{target});
              ASSERT_TRUE(got.ok()) << name;
              ASSERT_EQ(got->scales, ref->scales) << name << " " << ImplName(Impl{target});
              ASSERT_EQ(got->elements, ref->elements) << name << " " << ImplName(Impl{target});
            }
          }
        }
      }
    }
  }
}

// Every element layout of `f` (codes and the padded one) x every scale
// mode: every target's scales and element bytes equal the scalar
// reference's for the rows x cols tensor `in` of `from`. A mismatching
// byte is named with its block, that block's scale code and, where `input`
// is given, what it says of the input behind the byte.
inline void ExpectEveryLayoutAndModeEqualsScalar(
    MxFormat f, Format from, const std::vector<uint8_t>& in, size_t rows, size_t cols,
    const std::function<std::string(size_t)>& input = nullptr) {
  for (ElementLayout layout : LayoutsOf(f)) {
    for (ScaleMode mode : kModes) {
      MxOptions o;
      o.scale_mode = mode;
      o.layout = layout;
      const std::string name =
          absl::StrFormat("%s %s from %s %s cols %d", MxFormatName(f), ScaleModeName(mode),
                          FormatName(from), ElementLayoutName(layout), cols);
      absl::StatusOr<MxTensor> ref = QuantizeMx(f, from, in, rows, cols, o, Impl{Impl::kScalar});
      ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
      const size_t bytes_per_block = ref->elements.size() / ref->scales.size();
      for (int64_t target : AvailableTargets()) {
        absl::StatusOr<MxTensor> got = QuantizeMx(f, from, in, rows, cols, o, Impl{target});
        ASSERT_TRUE(got.ok()) << name;
        ASSERT_EQ(got->scales, ref->scales) << name << " " << ImplName(Impl{target});
        for (size_t i = 0; i < ref->elements.size(); ++i) {
          const size_t b = i / bytes_per_block;
          ASSERT_EQ(got->elements[i], ref->elements[i])
              << name << " " << ImplName(Impl{target}) << " byte " << i << " of block " << b
              << " (scale 0x" << std::hex << int{ref->scales[b]} << std::dec
              << (input ? ", " + input(i) : std::string()) << ")";
        }
      }
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
// MXCSR.FTZ and .DAZ set for the guard's lifetime (a -ffast-math caller).
struct FtzDazGuard {
  unsigned saved = _mm_getcsr();
  FtzDazGuard() { _mm_setcsr(saved | 0x8040u); }
  ~FtzDazGuard() { _mm_setcsr(saved); }
};
#endif

}  // namespace mxpack::mx_test

#endif  // MXPACK_TESTS_MX_MX_TEST_UTIL_H_
