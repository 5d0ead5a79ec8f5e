// Every compiled SIMD target of ConvertArray against the scalar reference:
// every f16 and bf16 input under every legal policy and destination, every
// narrow code decoded, the structured f32 sweep, lengths 0..5 vectors at
// unaligned offsets. Inputs sit in consecutive lanes, so lane placement is
// checked too.
#include "mxpack/convert.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>  // _mm_getcsr / _mm_setcsr
#endif

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "hwy/targets.h"
#include "mxpack/dispatch.h"
#include "mxpack/scalar.h"
#include "src/format/encode_fast-inl.h"
#include "tests/common/oracle.h"

namespace mxpack {
namespace {

constexpr Format kNarrow[] = {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                              Format::kE5M2, Format::kUE8M0, Format::kUE4M3};
constexpr Format kDests[] = {Format::kE2M1, Format::kE2M3, Format::kE3M2,
                             Format::kE4M3, Format::kE5M2, Format::kUE8M0,
                             Format::kUE4M3, Format::kF16,  Format::kBF16};

class ConvertTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  Impl impl() const { return Impl{GetParam()}; }

  // Converts `in` with the target and with the scalar reference; reports the
  // first differing elements with input bits, expected and actual in hex.
  void Check(Format from, Format to, const EncodePolicy& p, const std::vector<uint8_t>& in,
             const std::vector<uint32_t>& rbits = {}) {
    const int ib = Traits(from).storage_bytes, ob = Traits(to).storage_bytes;
    const size_t n = in.size() / ib;
    std::vector<uint8_t> want(n * ob), got(n * ob, 0xCD);
    ASSERT_TRUE(scalar::ConvertArray(from, to, p, in, absl::MakeSpan(want), rbits).ok());
    {
#if defined(__x86_64__) || defined(__i386__)
      const unsigned saved = _mm_getcsr();
      if (caller_ftz_daz_) _mm_setcsr(saved | 0x8040u);  // FTZ | DAZ
#endif
      const absl::Status s = ConvertArray(from, to, p, in, absl::MakeSpan(got), rbits, impl());
#if defined(__x86_64__) || defined(__i386__)
      _mm_setcsr(saved);
#endif
      ASSERT_TRUE(s.ok()) << s;
    }
    if (want == got) return;
    int shown = 0;
    for (size_t i = 0; i < n && shown < 5; ++i) {
      uint64_t w = 0, g = 0, x = 0;
      std::memcpy(&w, &want[i * ob], ob);
      std::memcpy(&g, &got[i * ob], ob);
      std::memcpy(&x, &in[i * ib], ib);
      if (w != g) {
        ++shown;
        ADD_FAILURE() << absl::StrFormat(
            "%s%s %s -> %s %s index %u input 0x%X rbits 0x%X: expected 0x%X, got 0x%X",
            hwy::TargetName(GetParam()), caller_ftz_daz_ ? " (caller FTZ+DAZ)" : "",
            FormatName(from), FormatName(to), PolicyToString(p), i,
            x, rbits.empty() ? 0 : rbits[i], w, g);
      }
    }
  }

  // Every f16 and bf16 input into each of `dests` under every legal policy.
  template <size_t kN>
  void CheckEveryHalfInput(const Format (&dests)[kN], uint64_t rbits_seed);

  // Check runs the SIMD conversion with MXCSR.FTZ and .DAZ set (x86), as
  // under a -ffast-math caller; the reference runs in the default mode.
  bool caller_ftz_daz_ = false;
};

std::vector<uint8_t> All16() {
  std::vector<uint8_t> v(2 * 65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    v[2 * i] = static_cast<uint8_t>(i);
    v[2 * i + 1] = static_cast<uint8_t>(i >> 8);
  }
  return v;
}

std::vector<uint32_t> Rbits(size_t n, uint64_t seed) {
  std::vector<uint32_t> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = RandomBits(seed, i);
  // Pin edge values in a few places.
  for (size_t i = 0; i < n; i += 7) r[i] = (i % 14 == 0) ? 0u : 0xFFFFFFFFu;
  return r;
}

template <size_t kN>
void ConvertTarget::CheckEveryHalfInput(const Format (&dests)[kN], uint64_t rbits_seed) {
  const std::vector<uint8_t> in = All16();
  for (Format src : {Format::kF16, Format::kBF16}) {
    for (Format dst : dests) {
      for (const EncodePolicy& p : testing::LegalPolicies(src, dst)) {
        const bool rs = p.rounding == Rounding::kRS && !IsExactConversion(src, dst);
        Check(src, dst, p, in, rs ? Rbits(65536, rbits_seed) : std::vector<uint32_t>{});
      }
    }
  }
}

TEST_P(ConvertTarget, EveryF16AndBF16InputEveryPolicy) {
  CheckEveryHalfInput(kDests, 3);
  const std::vector<uint8_t> in = All16();
  for (Format src : {Format::kF16, Format::kBF16}) {
    // Exact decode to f32 (with and without relu).
    EncodePolicy relu;
    relu.relu = true;
    Check(src, Format::kF32, {}, in);
    Check(src, Format::kF32, relu, in);
  }
}

TEST_P(ConvertTarget, EveryF16AndBF16InputUnderCallerFtzDaz) {
  // The results do not depend on the caller's MXCSR: the F16C encoders set
  // their own FTZ/DAZ, the AVX512-FP16 half encoders (bf16/f16 -> e2m1, e2m3,
  // e3m2, e4m3, ue4m3 rn satfinite on Sapphire Rapids and later) compute f16
  // subnormals whatever FTZ/DAZ say, and the other paths work in integer
  // lanes. (No-op off x86.)
  caller_ftz_daz_ = true;
  CheckEveryHalfInput(kNarrow, 5);
  // f16 -> f32 widens through vcvtph2ps where F16C exists, and so do f16 ->
  // bf16 and f16 -> ue8m0 on AVX-512: f16 subnormals must survive a caller's
  // DAZ.
  const std::vector<uint8_t> in = All16();
  for (Format src : {Format::kF16, Format::kBF16}) Check(src, Format::kF32, {}, in);
  for (const EncodePolicy& p : testing::LegalPolicies(Format::kF16, Format::kBF16)) {
    Check(Format::kF16, Format::kBF16, p, in,
          p.rounding == Rounding::kRS ? Rbits(65536, 5) : std::vector<uint32_t>{});
  }
}

TEST_P(ConvertTarget, EveryNarrowCodeDecoded) {
  for (Format src : kNarrow) {
    std::vector<uint8_t> codes;
    for (int rep = 0; rep < 3; ++rep) {
      const uint32_t ncodes = src == Format::kUE4M3 ? 128 : 1u << Traits(src).bits;
      for (uint32_t c = 0; c < ncodes; ++c) codes.push_back(static_cast<uint8_t>(c));
    }
    for (Format dst : {Format::kF32, Format::kF16, Format::kBF16}) {
      if (!ValidateConversion(src, dst, {}).ok()) continue;  // ue8m0 -> f16
      EncodePolicy relu;
      relu.relu = true;
      Check(src, dst, {}, codes);
      Check(src, dst, relu, codes);
    }
  }
}

TEST_P(ConvertTarget, StructuredF32SweepEveryPolicy) {
  const std::vector<uint32_t> sweep = testing::StructuredF32Sweep();
  std::vector<uint8_t> in(sweep.size() * 4);
  std::memcpy(in.data(), sweep.data(), in.size());
  const std::vector<uint32_t> rb = Rbits(sweep.size(), 11);
  for (Format dst : kDests) {
    for (const EncodePolicy& p : testing::LegalPolicies(Format::kF32, dst)) {
      Check(Format::kF32, dst, p, in, p.rounding == Rounding::kRS ? rb : std::vector<uint32_t>{});
    }
  }
}

TEST_P(ConvertTarget, StructuredF32SweepUnderCallerFtzDaz) {
  // The f32 encoders set the MXCSR bits they depend on (directed roundings
  // must see f32 subnormal inputs and produce tiny products), or use
  // explicit rounding and integer lanes only. (No-op off x86.)
  caller_ftz_daz_ = true;
  const std::vector<uint32_t> sweep = testing::StructuredF32Sweep();
  std::vector<uint8_t> in(sweep.size() * 4);
  std::memcpy(in.data(), sweep.data(), in.size());
  const std::vector<uint32_t> rb = Rbits(sweep.size(), 13);
  for (Format dst : kDests) {
    for (const EncodePolicy& p : testing::LegalPolicies(Format::kF32, dst)) {
      Check(Format::kF32, dst, p, in, p.rounding == Rounding::kRS ? rb : std::vector<uint32_t>{});
    }
  }
}

// f32 inputs at and around every code value of each destination (each
// value, its f32 neighbours, the midpoints to the next code and their
// neighbours, both signs) plus zeros, f32 subnormals, the overflow
// thresholds, Inf and NaN, under every legal policy, at a length whose tail
// is a partial step.
TEST_P(ConvertTarget, F32EdgeValuesEveryPolicy) {
  for (Format dst : kDests) {
    std::vector<uint32_t> v = {0x00000000u, 0x00000001u, 0x00400000u, 0x00400001u,
                               0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0x7F800000u,
                               0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu};
    if (dst != Format::kF16 && dst != Format::kBF16) {
      std::vector<uint8_t> codes;
      const uint32_t ncodes = dst == Format::kUE4M3 ? 128 : 1u << Traits(dst).bits;
      for (uint32_t c = 0; c < ncodes; ++c) codes.push_back(static_cast<uint8_t>(c));
      std::vector<uint8_t> f(4 * codes.size());
      ASSERT_TRUE(scalar::ConvertArray(dst, Format::kF32, {}, codes, absl::MakeSpan(f)).ok());
      std::vector<uint32_t> vals(codes.size());
      std::memcpy(vals.data(), f.data(), f.size());
      std::vector<float> mags;
      for (uint32_t b : vals) {
        if ((b & 0x7FFFFFFFu) < 0x7F800000u) {
          float x;
          const uint32_t m = b & 0x7FFFFFFFu;
          std::memcpy(&x, &m, 4);
          mags.push_back(x);
        }
      }
      std::sort(mags.begin(), mags.end());
      mags.erase(std::unique(mags.begin(), mags.end()), mags.end());
      // One step past max finite, as the next binade's step would be.
      mags.push_back(mags.back() + (mags.back() - mags[mags.size() - 2]));
      for (size_t k = 0; k < mags.size(); ++k) {
        const float mids[2] = {mags[k], k + 1 < mags.size() ? (mags[k] + mags[k + 1]) / 2 : mags[k]};
        for (float m : mids) {
          uint32_t b;
          std::memcpy(&b, &m, 4);
          for (uint32_t d : {b - 1, b, b + 1}) v.push_back(d);
        }
      }
    } else {
      // f16: max finite 65504, the overflow tie 65520, the smallest
      // subnormal 2^-24 and its half; bf16: max finite and its tie.
      for (uint32_t b : {0x477FE000u, 0x477FF000u, 0x33800000u, 0x33000000u, 0x7F7F0000u,
                         0x7F7F8000u, 0x387FC000u, 0x38800000u}) {
        for (uint32_t d : {b - 1, b, b + 1}) v.push_back(d);
      }
    }
    const size_t n = v.size();
    for (size_t i = 0; i < n; ++i) v.push_back(v[i] ^ 0x80000000u);
    v.push_back(0x7FA00000u);  // signaling NaN
    v.push_back(0xFFA00000u);
    std::vector<uint8_t> in(4 * v.size());
    std::memcpy(in.data(), v.data(), in.size());
    const std::vector<uint32_t> rb = Rbits(v.size(), 17);
    for (const EncodePolicy& p : testing::LegalPolicies(Format::kF32, dst)) {
      Check(Format::kF32, dst, p, in, p.rounding == Rounding::kRS ? rb : std::vector<uint32_t>{});
    }
  }
}

TEST_P(ConvertTarget, LengthsAndUnalignedOffsets) {
  std::vector<uint8_t> pool(4 * 5 * 64 + 64);
  for (size_t i = 0; i < pool.size(); ++i) pool[i] = static_cast<uint8_t>(RandomBits(1, i));
  for (size_t n = 0; n <= 5 * 16 + 3; ++n) {
    for (size_t offset : {0, 1, 3}) {
      std::vector<uint8_t> in(pool.begin() + offset, pool.begin() + offset + 4 * n);
      Check(Format::kF32, Format::kE4M3, {}, in);
      // 16-bit sources and 8-bit codes through the same tails.
      const std::vector<uint8_t> in16(pool.begin() + offset, pool.begin() + offset + 2 * n);
      Check(Format::kBF16, Format::kE4M3, {}, in16);
      Check(Format::kBF16, Format::kE2M1, {}, in16);
      Check(Format::kF16, Format::kE5M2, {}, in16);
      Check(Format::kF32, Format::kBF16, {}, in);
      const std::vector<uint8_t> in8(pool.begin() + offset, pool.begin() + offset + n);
      Check(Format::kE4M3, Format::kF32, {}, in8);
      Check(Format::kE4M3, Format::kBF16, {}, in8);
      Check(Format::kE5M2, Format::kF16, {}, in8);
      EncodePolicy rz;
      rz.rounding = Rounding::kRZ;
      Check(Format::kF32, Format::kE2M1, rz, in);
      // The f32 kernels of each mode and policy through their tails.
      for (Rounding mode : {Rounding::kRN, Rounding::kRZ, Rounding::kRM, Rounding::kRP}) {
        EncodePolicy q;
        q.rounding = mode;
        Check(Format::kF32, Format::kE4M3, q, in);
        Check(Format::kF32, Format::kF16, q, in);
        q.saturation = Saturation::kNoSat;
        Check(Format::kF32, Format::kE4M3, q, in);
        q.relu = true;
        Check(Format::kF32, Format::kE4M3, q, in);
      }
      // Unaligned destination: write into a buffer at an odd offset.
      std::vector<uint8_t> want(n + 1), got(n + 1, 0x5A);
      ASSERT_TRUE(scalar::ConvertArray(Format::kF32, Format::kE5M2, {}, in,
                                       absl::MakeSpan(want).subspan(1)).ok());
      ASSERT_TRUE(ConvertArray(Format::kF32, Format::kE5M2, {}, in,
                               absl::MakeSpan(got).subspan(1), {}, impl()).ok());
      EXPECT_EQ(got[0], 0x5A) << "wrote before the output span";
      EXPECT_TRUE(std::equal(want.begin() + 1, want.end(), got.begin() + 1)) << n;
    }
  }
}

// Outputs of 2^20 elements and more take the streaming-store path when the
// destination starts on a vector boundary: both alignments, f32 and f16
// sources, every 8-bit destination, against the scalar reference.
TEST_P(ConvertTarget, LargeOutputsAlignedAndNot) {
  const size_t n = (size_t{1} << 20) + 77;
  std::vector<uint8_t> in32(4 * n), in16(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = RandomBits(5, i);
    // Mostly values near the formats' ranges, some arbitrary bit patterns.
    const uint32_t b = i % 8 == 0 ? r : (r & 0x807FFFFFu) | ((112 + r % 36) << 23);
    std::memcpy(&in32[4 * i], &b, 4);
    const uint16_t h = static_cast<uint16_t>(r >> 16);
    std::memcpy(&in16[2 * i], &h, 2);
  }
  std::vector<uint8_t> want(n), buf(n + 128);
  uint8_t* aligned = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64);
  for (Format src : {Format::kF32, Format::kF16}) {
    const std::vector<uint8_t>& in = src == Format::kF32 ? in32 : in16;
    for (Format dst : {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                       Format::kE5M2, Format::kUE4M3}) {
      ASSERT_TRUE(scalar::ConvertArray(src, dst, {}, in, absl::MakeSpan(want)).ok());
      for (size_t offset : {0, 1}) {
        uint8_t* out = aligned + offset;
        std::memset(buf.data(), 0xA5, buf.size());
        ASSERT_TRUE(ConvertArray(src, dst, {}, in, absl::MakeSpan(out, n), {}, impl()).ok());
        EXPECT_TRUE(std::equal(want.begin(), want.end(), out))
            << FormatName(src) << " -> " << FormatName(dst) << " offset " << offset;
        EXPECT_EQ(out[n], 0xA5) << "wrote past the output";
        EXPECT_EQ(out[-1], 0xA5) << "wrote before the output";
      }
    }
  }
  // The range encoder's nosat and relu forms stream too.
  EncodePolicy nosat, relu;
  nosat.saturation = Saturation::kNoSat;
  relu.relu = true;
  for (const EncodePolicy& p : {nosat, relu}) {
    ASSERT_TRUE(scalar::ConvertArray(Format::kF32, Format::kE4M3, p, in32, absl::MakeSpan(want)).ok());
    ASSERT_TRUE(
        ConvertArray(Format::kF32, Format::kE4M3, p, in32, absl::MakeSpan(aligned, n), {}, impl())
            .ok());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), aligned)) << PolicyToString(p);
  }
}

TEST_P(ConvertTarget, ErrorsMatchScalar) {
  std::vector<uint8_t> in(6), out(2);
  const absl::Status a = ConvertArray(Format::kF32, Format::kE4M3, {}, in, absl::MakeSpan(out), {}, impl());
  const absl::Status b = scalar::ConvertArray(Format::kF32, Format::kE4M3, {}, in, absl::MakeSpan(out));
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, ConvertTarget, ::testing::ValuesIn(AvailableTargets()),
                         [](const ::testing::TestParamInfo<int64_t>& param_info) {
                           return std::string(hwy::TargetName(param_info.param));
                         });

// The fast kernels' compile-time constants mirror the traits table.
TEST(ConvertDispatch, FastFormatConstantsMatchTraits) {
  std::vector<Format> formats(std::begin(kNarrow), std::end(kNarrow));
  formats.push_back(Format::kF16);
  formats.push_back(Format::kBF16);
  for (Format f : formats) {
    const internal::FastFormat c = internal::FastFormatOf(f);
    const FormatTraits& t = Traits(f);
    EXPECT_EQ(c.bits, t.bits) << t.name;
    EXPECT_EQ(c.man_bits, t.man_bits) << t.name;
    EXPECT_EQ(c.bias, t.bias) << t.name;
    EXPECT_EQ(c.has_sign, t.has_sign) << t.name;
    EXPECT_EQ(c.max_code, t.max_code) << t.name;
    EXPECT_EQ(c.nan_code, t.canonical_nan) << t.name;
  }
  // nosat overflow codes: Inf where the format has one, else NaN.
  for (Format f : {Format::kE4M3, Format::kE5M2, Format::kUE4M3, Format::kF16, Format::kBF16}) {
    EncodePolicy nosat;
    nosat.saturation = Saturation::kNoSat;
    EXPECT_EQ(internal::FastFormatOf(f).overflow_code,
              scalar::Convert(Format::kF32, f, 0x7F800000u, nosat))
        << FormatName(f);
  }
}

TEST(ConvertDispatch, TargetsAndImplNames) {
  const std::vector<int64_t> targets = AvailableTargets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(ImplName(Impl{}), "best");
  EXPECT_EQ(ParseImpl("scalar")->target, Impl::kScalar);
  EXPECT_EQ(ParseImpl(hwy::TargetName(targets[0]))->target, targets[0]);
  EXPECT_FALSE(ParseImpl("avx9000").ok());
  EXPECT_TRUE(HasSimdPath(Format::kF32, Format::kE4M3, {}));
  EXPECT_FALSE(HasSimdPath(Format::kF64, Format::kE4M3, {}));
}

}  // namespace
}  // namespace mxpack
