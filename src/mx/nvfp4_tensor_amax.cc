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

}  // namespace mxpack::internal
#endif  // HWY_ONCE
