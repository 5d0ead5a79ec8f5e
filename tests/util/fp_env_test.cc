// Results never depend on the caller's floating-point environment
// (docs/kernels.md, "Ground rules"): every public entry point that does
// floating-point arithmetic gives the same bytes under a caller's directed
// rounding mode, FTZ and DAZ as under the IEEE default, on every target and
// the scalar reference, and leaves the caller's control bits as it found them.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "mxpack/convert.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/multimem.h"
#include "mxpack/mx.h"
#include "mxpack/scalar.h"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <xmmintrin.h>
#define MXPACK_TEST_HAS_MXCSR 1
#endif

namespace mxpack {
namespace {

#ifdef MXPACK_TEST_HAS_MXCSR

constexpr unsigned kFtz = 0x8000, kDaz = 0x0040, kRcMask = 0x6000;
constexpr unsigned kRz = 0x6000, kRm = 0x2000, kRp = 0x4000;

struct CallerEnv {
  const char* name;
  unsigned bits;  // rounding control | FTZ | DAZ
};

constexpr CallerEnv kEnvs[] = {
    {"rz", kRz},
    {"rm", kRm},
    {"rp", kRp},
    {"ftz", kFtz},
    {"daz", kDaz},
    {"ftz+daz", kFtz | kDaz},
    {"rz+ftz+daz", kRz | kFtz | kDaz},
    {"rp+daz", kRp | kDaz},
};

// Runs fn under `env` and checks that the control bits come back unchanged.
template <typename Fn>
void UnderEnv(const CallerEnv& env, Fn&& fn) {
  const unsigned saved = _mm_getcsr();
  const unsigned set = (saved & ~(kFtz | kDaz | kRcMask)) | env.bits;
  _mm_setcsr(set);
  fn();
  const unsigned after = _mm_getcsr();
  _mm_setcsr(saved);
  EXPECT_EQ(after & ~0x3Fu, set & ~0x3Fu)
      << env.name << ": the caller's MXCSR control bits were not restored";
}

std::vector<Impl> Impls() {
  std::vector<Impl> impls{Impl{Impl::kScalar}};
  for (int64_t t : AvailableTargets()) impls.push_back(Impl{t});
  return impls;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f32 values whose scaled, rounded or widened results depend on the
// environment if a kernel lets it in: f32 subnormals, values near the top of
// the range, values between every narrow grid's points, Inf/NaN in a few
// blocks, and each 32-value block at its own magnitude (block scales from
// 2^-140 to 2^127).
std::vector<float> F32Input(size_t rows, size_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(rows * cols);
  for (size_t i = 0; i < v.size(); i += 32) {
    const int e = static_cast<int>(rng() % 268) - 140;  // block exponent
    for (size_t j = i; j < i + 32 && j < v.size(); ++j) {
      const uint32_t r = static_cast<uint32_t>(rng());
      float x = std::ldexp(1.0f + static_cast<float>(r >> 9) * 0x1p-23f,
                           e - static_cast<int>(r % 12));
      if (r & 0x100) x = -x;
      v[j] = x;
    }
  }
  v[5] = FromBits(0x00000001);   // smallest subnormal
  v[6] = -FromBits(0x007FFFFF);  // largest subnormal
  v[7] = 3.4028235e38f;          // f32 max
  v[40] = std::numeric_limits<float>::infinity();
  v[75] = std::numeric_limits<float>::quiet_NaN();
  v[100] = 0.0f;
  v[101] = -0.0f;
  return v;
}

// 16-bit inputs: random bit patterns (every class: subnormals, Inf, NaN).
std::vector<uint16_t> HalfInput(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = static_cast<uint16_t>(rng());
  return v;
}

template <typename T>
absl::Span<const uint8_t> Bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

TEST(FpEnv, ConvertArray) {
  const size_t n = 4096 + 37;
  std::vector<float> f32 = F32Input(1, n, 1);
  std::vector<uint16_t> f16 = HalfInput(n, 2), bf16 = HalfInput(n, 3);
  std::vector<uint32_t> rbits(n);
  std::mt19937 rng(4);
  for (auto& r : rbits) r = static_cast<uint32_t>(rng());
  const Format dsts[] = {Format::kE4M3,  Format::kE5M2, Format::kE2M1,
                         Format::kE2M3,  Format::kE3M2, Format::kUE8M0,
                         Format::kUE4M3, Format::kBF16, Format::kF16,
                         Format::kF32};
  const Rounding modes[] = {Rounding::kRN, Rounding::kRZ, Rounding::kRM,
                            Rounding::kRP, Rounding::kRS};
  struct Src {
    Format f;
    absl::Span<const uint8_t> in;
  } srcs[] = {{Format::kF32, Bytes(f32)},
              {Format::kF16, Bytes(f16)},
              {Format::kBF16, Bytes(bf16)}};
  for (const Src& src : srcs) {
    for (Format to : dsts) {
      if (to == src.f) continue;
      for (Rounding mode : modes) {
        for (Saturation sat : {Saturation::kSatFinite, Saturation::kNoSat}) {
          EncodePolicy p;
          p.rounding = mode;
          p.saturation = sat;
          const size_t ob = static_cast<size_t>(Traits(to).storage_bytes);
          std::vector<uint8_t> want(n * ob);
          const absl::Span<const uint32_t> rb =
              mode == Rounding::kRS ? absl::MakeConstSpan(rbits)
                                    : absl::Span<const uint32_t>();
          if (!ConvertArray(src.f, to, p, src.in, absl::MakeSpan(want), rb,
                            Impl{Impl::kScalar})
                   .ok()) {
            continue;  // not a legal policy for this destination
          }
          for (const Impl& impl : Impls()) {
            for (const CallerEnv& env : kEnvs) {
              std::vector<uint8_t> got(n * ob, 0xA5);
              UnderEnv(env, [&] {
                ASSERT_TRUE(ConvertArray(src.f, to, p, src.in,
                                         absl::MakeSpan(got), rb, impl)
                                .ok());
              });
              ASSERT_EQ(got, want)
                  << FormatName(src.f) << " -> " << FormatName(to) << " "
                  << RoundingName(mode) << " " << SaturationName(sat)
                  << " under " << env.name << " on " << ImplName(impl);
            }
          }
        }
      }
    }
  }
}

constexpr MxFormat kMxFormats[] = {MxFormat::kMxfp8E4m3, MxFormat::kMxfp8E5m2,
                                   MxFormat::kMxfp6E2m3, MxFormat::kMxfp6E3m2,
                                   MxFormat::kMxfp4,     MxFormat::kNvfp4};

struct Source {
  Format f;
  std::vector<uint8_t> bytes;
};

std::vector<Source> MxSources(size_t rows, size_t cols) {
  std::vector<float> f32 = F32Input(rows, cols, 7);
  std::vector<Source> s;
  s.push_back({Format::kF32,
               std::vector<uint8_t>(Bytes(f32).begin(), Bytes(f32).end())});
  std::vector<uint16_t> h(rows * cols), b(rows * cols);
  for (size_t i = 0; i < f32.size(); ++i) {
    b[i] = static_cast<uint16_t>(Bits(f32[i]) >> 16);  // bf16 by truncation
    // f16: the same blocks, moved into f16 range (exponents -24..15); zeros,
    // Inf and NaN as they are.
    const float v = f32[i];
    const float x = std::isfinite(v) && v != 0.0f
                        ? std::ldexp(v, -std::ilogb(v) +
                                            static_cast<int>(i / 32 % 40) - 24)
                        : v;
    uint16_t code = 0;
    EncodePolicy rn;
    (void)ConvertArray(Format::kF32, Format::kF16, rn,
                       {reinterpret_cast<const uint8_t*>(&x), 4},
                       {reinterpret_cast<uint8_t*>(&code), 2}, {},
                       Impl{Impl::kScalar});
    h[i] = code;
  }
  s.push_back(
      {Format::kBF16, std::vector<uint8_t>(Bytes(b).begin(), Bytes(b).end())});
  s.push_back(
      {Format::kF16, std::vector<uint8_t>(Bytes(h).begin(), Bytes(h).end())});
  return s;
}

TEST(FpEnv, QuantizeMxAndErrorStats) {
  const size_t rows = 8, cols = 512 + 32 * 3 + 16;
  for (const Source& src : MxSources(rows, cols)) {
    for (MxFormat fmt : kMxFormats) {
      for (ScaleMode mode : {ScaleMode::kFloor, ScaleMode::kRceil,
                             ScaleMode::kCeil, ScaleMode::kEven}) {
        MxOptions o;
        o.scale_mode = mode;
        if (fmt == MxFormat::kNvfp4) {
          auto t =
              ComputeNvfp4TensorScale(src.f, src.bytes, Impl{Impl::kScalar});
          ASSERT_TRUE(t.ok());
          for (const CallerEnv& env : kEnvs) {
            UnderEnv(env, [&] {
              auto u = ComputeNvfp4TensorScale(src.f, src.bytes);
              ASSERT_TRUE(u.ok());
              EXPECT_EQ(Bits(*u), Bits(*t))
                  << "tensor scale under " << env.name;
            });
          }
        }
        auto want = QuantizeMx(fmt, src.f, src.bytes, rows, cols, o,
                               Impl{Impl::kScalar});
        if (!want.ok()) continue;  // scale mode not offered for this format
        auto want_stats = ComputeMxErrorStats(src.f, src.bytes, View(*want));
        ASSERT_TRUE(want_stats.ok());
        for (const Impl& impl : Impls()) {
          for (const CallerEnv& env : kEnvs) {
            const std::string what =
                absl::StrCat(MxFormatName(fmt), " from ", FormatName(src.f),
                             " ", ScaleModeName(mode), " under ", env.name,
                             " on ", ImplName(impl));
            UnderEnv(env, [&] {
              auto got = QuantizeMx(fmt, src.f, src.bytes, rows, cols, o, impl);
              ASSERT_TRUE(got.ok()) << what;
              EXPECT_EQ(got->elements, want->elements) << what;
              EXPECT_EQ(got->scales, want->scales) << what;
              EXPECT_EQ(Bits(got->tensor_scale), Bits(want->tensor_scale))
                  << what;
              auto st = ComputeMxErrorStats(src.f, src.bytes, View(*want));
              ASSERT_TRUE(st.ok()) << what;
              EXPECT_EQ(st->saturated, want_stats->saturated) << what;
              EXPECT_EQ(st->nan_outputs, want_stats->nan_outputs) << what;
              EXPECT_EQ(std::memcmp(&st->max_abs_error,
                                    &want_stats->max_abs_error, 8),
                        0)
                  << what;
              EXPECT_EQ(std::memcmp(&st->rmse, &want_stats->rmse, 8), 0)
                  << what;
              EXPECT_EQ(
                  std::memcmp(&st->signal_power, &want_stats->signal_power, 8),
                  0)
                  << what;
            });
          }
        }
      }
    }
  }
}

TEST(FpEnv, DequantizeMx) {
  // Random codes and random scale codes: products at every scale, so f32
  // subnormal, overflowing and half-way bf16/f16 results all occur.
  const size_t rows = 16, cols = 2048 + 32;  // enough blocks for result tables
  std::mt19937 rng(9);
  const Format tos[] = {Format::kF32, Format::kBF16, Format::kF16,
                        Format::kF64};
  for (MxFormat fmt : kMxFormats) {
    MxShape s;
    s.format = fmt;
    s.rows = rows;
    s.cols = cols;
    std::vector<uint8_t> el(s.element_bytes()), sc(s.scale_bytes());
    const uint8_t mask =
        static_cast<uint8_t>((1u << Traits(MxElementFormat(fmt)).bits) - 1);
    for (auto& e : el) e = static_cast<uint8_t>(rng()) & mask;
    for (auto& c : sc) {
      c = static_cast<uint8_t>(rng());
      if (fmt == MxFormat::kNvfp4) c &= 0x7F;  // ue4m3: no sign bit
    }
    MxTensorView q;
    q.shape = s;
    q.elements = el;
    q.scales = sc;
    q.tensor_scale = fmt == MxFormat::kNvfp4 ? 0x1p-100f * 1.3f : 1.0f;
    for (Format to : tos) {
      const size_t ob = static_cast<size_t>(Traits(to).storage_bytes);
      std::vector<uint8_t> want(rows * cols * ob);
      ASSERT_TRUE(
          DequantizeMx(q, to, absl::MakeSpan(want), Impl{Impl::kScalar}).ok());
      for (const Impl& impl : Impls()) {
        for (const CallerEnv& env : kEnvs) {
          std::vector<uint8_t> got(want.size(), 0xA5);
          UnderEnv(env, [&] {
            ASSERT_TRUE(DequantizeMx(q, to, absl::MakeSpan(got), impl).ok());
          });
          ASSERT_EQ(got, want)
              << MxFormatName(fmt) << " -> " << FormatName(to) << " under "
              << env.name << " on " << ImplName(impl);
        }
      }
    }
  }
}

TEST(FpEnv, ReduceArrays) {
  struct Case {
    MmType type;
    AccPrec acc;
    size_t bytes;
  } cases[] = {
      {MmType::kE4M3, AccPrec::kF16, 1}, {MmType::kE5M2, AccPrec::kF16, 1},
      {MmType::kF16, AccPrec::kF32, 2},  {MmType::kBF16, AccPrec::kF32, 2},
      {MmType::kF16, AccPrec::kNone, 2}, {MmType::kF32, AccPrec::kNone, 4}};
  const ReduceModel models[] = {
      ReduceModel::kSequential, ReduceModel::kPairwiseTree,
      ReduceModel::kExactOnce, ReduceModel::kNcclSoftware};
  const size_t n = 1024 + 7, srcs = 5;
  std::mt19937 rng(11);
  for (const Case& c : cases) {
    std::vector<std::vector<uint8_t>> data(srcs,
                                           std::vector<uint8_t>(n * c.bytes));
    for (auto& d : data)
      for (auto& b : d) b = static_cast<uint8_t>(rng());
    std::vector<absl::Span<const uint8_t>> spans(data.begin(), data.end());
    for (ReduceModel m : models) {
      for (ReduceOp op : {ReduceOp::kAdd, ReduceOp::kMin, ReduceOp::kMax}) {
        ReduceSpec spec{c.type, op, c.acc, m};
        if (!ValidateReduceSpec(spec).ok()) continue;
        std::vector<uint8_t> want(n * c.bytes);
        if (!scalar::ReduceArrays(spec, spans, absl::MakeSpan(want)).ok())
          continue;
        for (const Impl& impl : Impls()) {
          for (const CallerEnv& env : kEnvs) {
            std::vector<uint8_t> got(want.size(), 0xA5);
            UnderEnv(env, [&] {
              ASSERT_TRUE(
                  ReduceArrays(spec, spans, absl::MakeSpan(got), impl).ok());
            });
            ASSERT_EQ(got, want)
                << ReduceOpName(op) << " " << ReduceModelName(m) << " type "
                << static_cast<int>(c.type) << " " << AccPrecName(c.acc)
                << " under " << env.name << " on " << ImplName(impl);
          }
        }
      }
    }
  }
}

#else
TEST(FpEnv, NeedsMxcsr) { GTEST_SKIP() << "the MXCSR tests are x86 only"; }
#endif

}  // namespace
}  // namespace mxpack
