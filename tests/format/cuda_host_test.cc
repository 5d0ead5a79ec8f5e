// Cross-check against NVIDIA's own host implementations of cvt in the CUDA 13
// headers (cuda_fp8/fp6/fp4.hpp, compiled by the host compiler): every
// function and mode they offer, on the structured f32 sweep plus 2^24 random
// f32 bit patterns, and every code through their decoders.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>

#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/scalar.h"
#include "tests/common/oracle.h"

namespace mxpack {
namespace {

std::vector<uint32_t> Inputs() {
  std::vector<uint32_t> v = testing::StructuredF32Sweep();
  std::mt19937 rng(2024);
  for (int i = 0; i < (1 << 24); ++i) v.push_back(static_cast<uint32_t>(rng()));
  return v;
}

const std::vector<uint32_t>& CachedInputs() {
  static const auto* inputs = new std::vector<uint32_t>(Inputs());
  return *inputs;
}

template <typename Ref>
void Compare(const char* what, Format dst, const EncodePolicy& p, Ref ref) {
  size_t failures = 0;
  for (uint32_t bits : CachedInputs()) {
    const float x = scalar::F32FromBits(bits);
    const uint32_t want = ref(x);
    const uint32_t got = scalar::EncodeF32(x, dst, p);
    if (want != got && ++failures <= 5) {
      ADD_FAILURE() << absl::StrFormat("%s: input 0x%08X (%.9g): CUDA 0x%02X, mxpack 0x%02X",
                                       what, bits, x, want, got);
    }
  }
  EXPECT_EQ(failures, 0u) << what;
}

TEST(CudaHost, Fp8Encode) {
  EncodePolicy sat, nosat;
  nosat.saturation = Saturation::kNoSat;
  Compare("e4m3 satfinite", Format::kE4M3, sat,
          [](float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); });
  Compare("e4m3 nosat", Format::kE4M3, nosat,
          [](float x) { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3); });
  Compare("e5m2 satfinite", Format::kE5M2, sat,
          [](float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); });
  Compare("e5m2 nosat", Format::kE5M2, nosat,
          [](float x) { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2); });
}

TEST(CudaHost, Fp6AndFp4Encode) {
  EncodePolicy rn, rz;
  rz.rounding = Rounding::kRZ;
  Compare("e2m3 rn", Format::kE2M3, rn,
          [](float x) { return __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundNearest); });
  Compare("e3m2 rn", Format::kE3M2, rn,
          [](float x) { return __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundNearest); });
  Compare("e2m3 rz", Format::kE2M3, rz,
          [](float x) { return __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundZero); });
  Compare("e3m2 rz", Format::kE3M2, rz,
          [](float x) { return __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundZero); });
  Compare("e2m1 rn", Format::kE2M1, rn,
          [](float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest); });
  Compare("e2m1 rz", Format::kE2M1, rz,
          [](float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundZero); });
}

TEST(CudaHost, E8M0Encode) {
  for (Rounding r : {Rounding::kRZ, Rounding::kRP}) {
    for (Saturation s : {Saturation::kSatFinite, Saturation::kNoSat}) {
      EncodePolicy p;
      p.rounding = r;
      p.saturation = s;
      const cudaRoundMode mode = r == Rounding::kRZ ? cudaRoundZero : cudaRoundPosInf;
      const __nv_saturation_t sat = s == Saturation::kSatFinite ? __NV_SATFINITE : __NV_NOSAT;
      Compare(PolicyToString(p).c_str(), Format::kUE8M0, p,
              [&](float x) { return __nv_cvt_float_to_e8m0(x, sat, mode); });
    }
  }
}

TEST(CudaHost, F16AndBF16Encode) {
  EncodePolicy rn, rz, rm, rp;
  rz.rounding = Rounding::kRZ;
  rm.rounding = Rounding::kRM;
  rp.rounding = Rounding::kRP;
  // CUDA's float->half/bfloat16 conversions are IEEE (overflow -> Inf): nosat.
  for (EncodePolicy* p : {&rn, &rz, &rm, &rp}) p->saturation = Saturation::kNoSat;
  auto hb = [](__half h) { __half_raw r = h; return static_cast<uint32_t>(r.x); };
  auto bb = [](__nv_bfloat16 h) { __nv_bfloat16_raw r = h; return static_cast<uint32_t>(r.x); };
  // NaN: CUDA's host paths keep payload bits; compare only non-NaN inputs.
  auto not_nan = [](float x, uint32_t code) { return std::isnan(x) ? 0x7FFFu : code; };
  Compare("f16 rn", Format::kF16, rn, [&](float x) { return not_nan(x, hb(__float2half_rn(x))); });
  Compare("f16 rz", Format::kF16, rz, [&](float x) { return not_nan(x, hb(__float2half_rz(x))); });
  Compare("f16 rm", Format::kF16, rm, [&](float x) { return not_nan(x, hb(__float2half_rd(x))); });
  Compare("f16 rp", Format::kF16, rp, [&](float x) { return not_nan(x, hb(__float2half_ru(x))); });
  Compare("bf16 rn", Format::kBF16, rn, [&](float x) { return not_nan(x, bb(__float2bfloat16_rn(x))); });
  Compare("bf16 rz", Format::kBF16, rz, [&](float x) { return not_nan(x, bb(__float2bfloat16_rz(x))); });
  Compare("bf16 rm", Format::kBF16, rm, [&](float x) { return not_nan(x, bb(__float2bfloat16_rd(x))); });
  Compare("bf16 rp", Format::kBF16, rp, [&](float x) { return not_nan(x, bb(__float2bfloat16_ru(x))); });
}

TEST(CudaHost, DecodersToHalf) {
  for (uint32_t c = 0; c < 256; ++c) {
    EXPECT_EQ(scalar::Convert(Format::kE4M3, Format::kF16, c, {}),
              __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(c), __NV_E4M3).x) << c;
    EXPECT_EQ(scalar::Convert(Format::kE5M2, Format::kF16, c, {}),
              __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(c), __NV_E5M2).x) << c;
    EXPECT_EQ(scalar::Convert(Format::kUE8M0, Format::kBF16, c, {}),
              __nv_cvt_e8m0_to_bf16raw(static_cast<__nv_fp8_storage_t>(c)).x) << c;
  }
  for (uint32_t c = 0; c < 64; ++c) {
    EXPECT_EQ(scalar::Convert(Format::kE2M3, Format::kF16, c, {}),
              __nv_cvt_fp6_to_halfraw(static_cast<__nv_fp6_storage_t>(c), __NV_E2M3).x) << c;
    EXPECT_EQ(scalar::Convert(Format::kE3M2, Format::kF16, c, {}),
              __nv_cvt_fp6_to_halfraw(static_cast<__nv_fp6_storage_t>(c), __NV_E3M2).x) << c;
  }
  for (uint32_t c = 0; c < 16; ++c) {
    EXPECT_EQ(scalar::Convert(Format::kE2M1, Format::kF16, c, {}),
              __nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(c), __NV_E2M1).x) << c;
  }
}

}  // namespace
}  // namespace mxpack
