// Dispatch of the finite amax pass (src/mx/nvfp4_tensor_amax.h) and its
// scalar reference.
#include "src/mx/nvfp4_tensor_amax.h"

#include <algorithm>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/mx/nvfp4_tensor_amax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/mx/nvfp4_tensor_amax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

uint32_t MaxFiniteMagnitudeBits32Simd(const uint8_t* p, size_t n) {
  return MaxFiniteMagnitudeBits<uint32_t>(p, n, 0x7F800000u);
}
uint16_t MaxFiniteMagnitudeBits16Simd(const uint8_t* p, size_t n,
                                      uint16_t inf_bits) {
  return MaxFiniteMagnitudeBits<uint16_t>(p, n, inf_bits);
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/mx/mx_internal.h"  // SourceToF32
#include "src/util/dispatch_util.h"

namespace mxpack::internal {
namespace {

HWY_EXPORT(MaxFiniteMagnitudeBits32Simd);
HWY_EXPORT(MaxFiniteMagnitudeBits16Simd);

// The reference: one value at a time.
template <typename T>
T MaxFiniteMagnitudeBitsScalar(const uint8_t* p, size_t n, T abs_mask,
                               T inf_bits) {
  T m = 0;
  for (size_t i = 0; i < n; ++i) {
    T b;
    std::memcpy(&b, p + i * sizeof(T), sizeof(T));
    b = static_cast<T>(b & abs_mask);
    if (b < inf_bits) m = std::max(m, b);
  }
  return m;
}

}  // namespace

uint32_t MaxFiniteMagnitudeBits32(const uint8_t* p, size_t n, Impl impl) {
  if (impl.target == Impl::kScalar) {
    return MaxFiniteMagnitudeBitsScalar<uint32_t>(p, n, 0x7FFFFFFFu,
                                                  0x7F800000u);
  }
  return Pick(HWY_DISPATCH_TABLE(MaxFiniteMagnitudeBits32Simd), impl)(p, n);
}

uint16_t MaxFiniteMagnitudeBits16(const uint8_t* p, size_t n, uint16_t inf_bits,
                                  Impl impl) {
  if (impl.target == Impl::kScalar) {
    return MaxFiniteMagnitudeBitsScalar<uint16_t>(p, n, uint16_t{0x7FFF},
                                                  inf_bits);
  }
  return Pick(HWY_DISPATCH_TABLE(MaxFiniteMagnitudeBits16Simd), impl)(p, n,
                                                                      inf_bits);
}

uint32_t MaxFiniteMagnitudeBits(Format from, const uint8_t* p, size_t bytes,
                                Impl impl) {
  if (from == Format::kF32) return MaxFiniteMagnitudeBits32(p, bytes / 4, impl);
  const uint16_t inf = from == Format::kBF16 ? 0x7F80 : 0x7C00;  // bf16 / f16
  return MaxFiniteMagnitudeBits16(p, bytes / 2, inf, impl);
}

float Nvfp4TensorScaleFromAmaxBits(Format from, uint32_t amax_bits) {
  uint8_t bytes[4];
  std::memcpy(bytes, &amax_bits, 4);  // little-endian hosts: low bytes first
  const float amax = SourceToF32(from, bytes);
  return amax > 0.0f ? amax / 2688.0f : 1.0f;
}

}  // namespace mxpack::internal
#endif  // HWY_ONCE
