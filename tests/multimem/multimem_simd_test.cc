// Every compiled SIMD target of the multimem array reductions equals the
// scalar model bit for bit: all pairs of fp8 codes (finite pairs, and every
// pair for min/max), chunks with NaN/Inf codes, random N-way data, lengths
// 0..5 chunks and unaligned starts, for every kernel (e4m3/e5m2 acc::f16,
// NCCL fp8, f16/bf16 acc::f32 and NCCL, f32, fp8/f16/bf16 min and max,
// kExactOnce on e4m3/e5m2/f16) and
// model; on CPUs with AVX512-FP16 both with and without the native f16
// kernels of the AVX3 targets.
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/multimem/multimem_simd_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"

#ifndef MXPACK_TESTS_MULTIMEM_SIMD_TEST_HELPERS_
#define MXPACK_TESTS_MULTIMEM_SIMD_TEST_HELPERS_
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/dispatch.h"
#include "mxpack/multimem.h"
#include "src/multimem/reduce_args.h"

namespace mxpack::testing_mm {

// The specs with SIMD kernels.
inline std::vector<ReduceSpec> KernelSpecs() {
  const auto kSeq = ReduceModel::kSequential, kTree = ReduceModel::kPairwiseTree,
             kNccl = ReduceModel::kNcclSoftware;
  std::vector<ReduceSpec> s;
  for (MmType t : {MmType::kE4M3, MmType::kE5M2x4}) {
    s.push_back({t, ReduceOp::kAdd, AccPrec::kF16, kSeq});
    s.push_back({t, ReduceOp::kAdd, AccPrec::kF16, kTree});
    s.push_back({t, ReduceOp::kAdd, AccPrec::kF16, kNccl});
    s.push_back({t, ReduceOp::kAdd, AccPrec::kNone, kNccl});
  }
  for (MmType t : {MmType::kF16x2, MmType::kBF16}) {
    s.push_back({t, ReduceOp::kAdd, AccPrec::kF32, kSeq});
    s.push_back({t, ReduceOp::kAdd, AccPrec::kF32, kTree});
    s.push_back({t, ReduceOp::kAdd, AccPrec::kNone, kSeq});
    s.push_back({t, ReduceOp::kAdd, AccPrec::kF32, kNccl});
  }
  s.push_back({MmType::kF32, ReduceOp::kAdd, AccPrec::kNone, kSeq});
  s.push_back({MmType::kF32, ReduceOp::kAdd, AccPrec::kNone, kTree});
  s.push_back({MmType::kF32, ReduceOp::kAdd, AccPrec::kNone, kNccl});
  // kExactOnce (e4m3, e5m2, f16; the .acc is irrelevant).
  const auto kExact = ReduceModel::kExactOnce;
  s.push_back({MmType::kE4M3x4, ReduceOp::kAdd, AccPrec::kF16, kExact});
  s.push_back({MmType::kE5M2, ReduceOp::kAdd, AccPrec::kNone, kExact});
  s.push_back({MmType::kF16, ReduceOp::kAdd, AccPrec::kF32, kExact});
  // Min / max (exact; the model is irrelevant).
  for (MmType t : {MmType::kE4M3, MmType::kE5M2x2, MmType::kF16x2, MmType::kBF16}) {
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
      s.push_back({t, op, AccPrec::kNone, kSeq});
    }
  }
  return s;
}

inline std::string SpecName(const ReduceSpec& s) {
  return absl::StrFormat("%s.%s.%s/%s", ReduceOpName(s.op), AccPrecName(s.acc),
                         MmTypeTraits(s.type).name, ReduceModelName(s.model));
}

// Runs `impl` and the scalar model on the same sources and compares.
inline void Compare(const ReduceSpec& spec, const std::vector<std::vector<uint8_t>>& src,
                    size_t offset, size_t bytes, Impl impl, size_t* checked) {
  std::vector<absl::Span<const uint8_t>> spans;
  for (const auto& v : src) spans.push_back(absl::MakeConstSpan(v.data() + offset, bytes));
  std::vector<uint8_t> want(bytes + 1, 0xEE), got(bytes + 1, 0xEE);
  ASSERT_TRUE(scalar::ReduceArrays(spec, spans, absl::MakeSpan(want.data(), bytes)).ok());
  ASSERT_TRUE(ReduceArrays(spec, spans, absl::MakeSpan(got.data(), bytes), impl).ok());
  ASSERT_EQ(got[bytes], 0xEE) << "wrote past the end";
  const size_t eb = static_cast<size_t>(MmTypeTraits(spec.type).element_bytes);
  for (size_t i = 0; i < bytes; i += eb) {
    if (std::memcmp(&want[i], &got[i], eb) != 0) {
      uint64_t w = 0, g = 0;
      std::memcpy(&w, &want[i], eb);
      std::memcpy(&g, &got[i], eb);
      std::string ins;
      for (const auto& s : spans) {
        uint64_t c = 0;
        std::memcpy(&c, s.data() + i, eb);
        ins += absl::StrFormat(" 0x%X", c);
      }
      FAIL() << absl::StrFormat("%s target %s n=%d index %d inputs%s: expected 0x%X got 0x%X",
                                SpecName(spec), ImplName(impl), src.size(), i / eb, ins, w, g);
    }
  }
  *checked += bytes / eb;
}

inline bool Fp8Special(Format f, uint8_t c) {
  return f == Format::kE4M3 ? (c & 0x7F) == 0x7F : (c & 0x7C) == 0x7C;
}

inline void RunAllOnce(Impl impl) {
  std::mt19937 rng(2024);
  size_t checked = 0;
  for (const ReduceSpec& spec : KernelSpecs()) {
    ASSERT_TRUE(HasSimdReduce(spec)) << SpecName(spec);
    const MmTypeInfo& ti = MmTypeTraits(spec.type);
    const size_t eb = static_cast<size_t>(ti.element_bytes);
    const bool fp8 = eb == 1;
    // 1) Every pair of finite fp8 codes (min / max: every pair of codes);
    //    then the same with a NaN/Inf code every 997 elements.
    if (fp8) {
      const bool all_codes = spec.op != ReduceOp::kAdd;
      std::vector<uint8_t> finite;
      for (int c = 0; c < 256; ++c) {
        if (all_codes || !Fp8Special(ti.element, static_cast<uint8_t>(c))) {
          finite.push_back(static_cast<uint8_t>(c));
        }
      }
      std::vector<std::vector<uint8_t>> src(2);
      for (uint8_t a : finite) {
        for (uint8_t b : finite) {
          src[0].push_back(a);
          src[1].push_back(b);
        }
      }
      Compare(spec, src, 0, src[0].size(), impl, &checked);
      // Same with a special every 997 elements (scalar-fallback chunks).
      for (size_t i = 0; i < src[0].size(); i += 997) src[i % 2][i] = 0x7F | (i & 0x80);
      Compare(spec, src, 0, src[0].size(), impl, &checked);
    }
    // 1b) 16-bit acc::f32: every pair of a structured code set (both signs,
    //    every exponent field with mantissas 1 and all ones, zero, Inf, and
    //    a mantissa sweep of the binade of 1.0), which includes zeros,
    //    subnormals, Inf, NaN, and sums that tie at bf16 / f16.
    if (eb == 2 && spec.op == ReduceOp::kAdd && spec.acc == AccPrec::kF32) {
      const bool bf = ti.element == Format::kBF16;
      const int man_bits = bf ? 7 : 10, exp_max = bf ? 0xFF : 0x1F;
      const uint16_t man_all = static_cast<uint16_t>((1u << man_bits) - 1);
      std::vector<uint16_t> codes = {0, static_cast<uint16_t>(exp_max << man_bits)};
      for (int e = 0; e <= exp_max; ++e) {
        for (uint16_t m : {uint16_t{1}, man_all}) {
          codes.push_back(static_cast<uint16_t>((e << man_bits) | m));
        }
      }
      const int one = bf ? 127 : 15;
      for (uint16_t m = 0; m <= man_all; m = static_cast<uint16_t>(m + (bf ? 3 : 9))) {
        codes.push_back(static_cast<uint16_t>((one << man_bits) | m));
      }
      const size_t half = codes.size();
      for (size_t i = 0; i < half; ++i) codes.push_back(codes[i] | 0x8000);
      std::vector<std::vector<uint8_t>> src(2);
      for (uint16_t a : codes) {
        for (uint16_t b : codes) {
          for (int k = 0; k < 2; ++k) {
            src[0].push_back(static_cast<uint8_t>(a >> (8 * k)));
            src[1].push_back(static_cast<uint8_t>(b >> (8 * k)));
          }
        }
      }
      Compare(spec, src, 0, src[0].size(), impl, &checked);
    }
    // 1c) fp8 add, 2, 3 and 8 sources of 1024 elements: a large first code
    //    (e4m3 112 .. 416) then small ones of both signs (e4m3 2^-6 .. 7.5),
    //    so that most f16 steps round and many tie (both parities); every
    //    13th element all -0, every 17th a -0 / +0 mix.
    if (fp8 && spec.op == ReduceOp::kAdd) {
      for (size_t n : {2, 3, 8}) {
        std::vector<std::vector<uint8_t>> src(n, std::vector<uint8_t>(1024));
        for (size_t i = 0; i < 1024; ++i) {
          for (size_t r = 0; r < n; ++r) {
            const uint32_t x = static_cast<uint32_t>(rng());
            const uint8_t sign = static_cast<uint8_t>(x & 0x80);
            uint8_t c = r == 0 ? static_cast<uint8_t>(0x6E + (x >> 8) % 16)
                               : static_cast<uint8_t>(0x08 + (x >> 8) % 0x48);
            if (ti.element == Format::kE5M2) c = static_cast<uint8_t>(c - 0x06);
            c = static_cast<uint8_t>(c | sign);
            if (i % 13 == 0) c = 0x80;
            if (i % 17 == 0) c = static_cast<uint8_t>(x & 0x80);
            src[r][i] = c;
          }
        }
        Compare(spec, src, 0, 1024, impl, &checked);
      }
    }
    // 2) Random N-way data, lengths 0..5 chunks of the widest vector, offsets.
    // (129 and 147 sources: past the e4m3 finite-sum bound, kE4M3FiniteSources
    // = 128, where the kernels keep the f16 overflow check.)
    for (size_t n : {1, 2, 3, 4, 5, 8, 9, 16, 129, 147}) {
      for (int rep = 0; rep < (n > 100 ? 4 : 12); ++rep) {
        const size_t count = rng() % (5 * 64 + 1);
        const size_t offset = (rng() % 4) * eb;
        std::vector<std::vector<uint8_t>> src(n, std::vector<uint8_t>(offset + count * eb));
        const int flavor = rep % 4;  // 0: any bits, 1: no specials, 2: big, 3: small
        for (auto& v : src) {
          for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(rng());
          if (fp8 && flavor != 0) {
            for (auto& c : v) {
              if (flavor == 2) c = static_cast<uint8_t>((c & 0x80) | (0x70 + (c & 0x0B)));
              if (flavor == 3) c &= 0x87;
              if (Fp8Special(ti.element, c)) c ^= 0x01 | 0x04;
            }
          } else if (!fp8 && flavor == 2) {
            // Push exponents near the top (overflow paths).
            for (size_t i = eb - 1; i < v.size(); i += eb) v[i] = static_cast<uint8_t>((v[i] & 0x80) | 0x7B | (v[i] & 0x03));
          } else if (!fp8 && flavor == 3) {
            for (size_t i = eb - 1; i < v.size(); i += eb) v[i] &= 0x80 | 0x03;  // subnormal/tiny
          }
        }
        Compare(spec, src, offset, count * eb, impl, &checked);
      }
    }
  }
  EXPECT_GT(checked, 500000u);
}

// Runs every kernel on `impl`; where this CPU has AVX512-FP16, once with the
// native f16 kernels (the default) and once with the Highway ones.
inline void RunAll(Impl impl) {
  RunAllOnce(impl);
  if (internal::ReduceNativeF16Available()) {
    internal::SetReduceNativeF16Enabled(false);
    RunAllOnce(impl);
    internal::SetReduceNativeF16Enabled(true);
  }
}

}  // namespace mxpack::testing_mm
#endif  // MXPACK_TESTS_MULTIMEM_SIMD_TEST_HELPERS_

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

// Runs every kernel on the target this function was compiled for.
void TestReduceMatchesScalar() { testing_mm::RunAll(Impl{HWY_TARGET}); }

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mxpack {
HWY_BEFORE_TEST(multimemSimdTest);
HWY_EXPORT_AND_TEST_P(multimemSimdTest, TestReduceMatchesScalar);

// Targets compiled into the library but not into this test binary (e.g.
// EMU128 / SCALAR) are covered by forcing them explicitly.
TEST(multimemSimd, EveryLibraryTarget) {
  for (int64_t t : AvailableTargets()) {
    SCOPED_TRACE(ImplName(Impl{t}));
    testing_mm::RunAll(Impl{t});
  }
}

TEST(multimemSimd, ArgumentErrorsMatchScalar) {
  const ReduceSpec spec{MmType::kE4M3, ReduceOp::kAdd, AccPrec::kF16,
                        ReduceModel::kSequential};
  std::vector<uint8_t> a(16), b(15), out(16);
  std::vector<absl::Span<const uint8_t>> srcs = {a, b};
  const absl::Status s1 = ReduceArrays(spec, srcs, absl::MakeSpan(out));
  const absl::Status s2 = scalar::ReduceArrays(spec, srcs, absl::MakeSpan(out));
  EXPECT_FALSE(s1.ok());
  EXPECT_EQ(s1, s2);
}

}  // namespace mxpack
#endif  // HWY_ONCE
