// Highway kernel of the finite amax pass (src/mx/nvfp4_tensor_amax.h): one
// streaming pass of And, compare-select and integer Max over the bits,
// four vectors per step in independent accumulators.
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_INL_H_
#undef MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_INL_H_
#else
#define MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// T: uint32_t (f32) or uint16_t (bf16 / f16). Sign-less bits are below the
// sign bit, so they compare as non-negative signed lanes against inf_bits;
// the maximum is taken in the signed lanes as well (all kept values are
// non-negative), which every target has for i16 and i32.
template <typename T>
HWY_INLINE T MaxFiniteMagnitudeBits(const uint8_t* HWY_RESTRICT p, size_t n,
                                    T inf_bits) {
  using TI = hwy::MakeSigned<T>;
  const hn::ScalableTag<TI> d;
  const size_t N = hn::Lanes(d);
  const auto abs_mask = hn::Set(d, static_cast<TI>(hwy::LimitsMax<TI>()));
  const auto inf = hn::Set(d, static_cast<TI>(inf_bits));
  const auto kept = [&](size_t i) {
    const auto b =
        hn::And(hn::LoadU(d, reinterpret_cast<const TI*>(p) + i), abs_mask);
    return hn::IfThenElseZero(hn::Lt(b, inf), b);
  };
  auto m0 = hn::Zero(d), m1 = hn::Zero(d), m2 = hn::Zero(d), m3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    m0 = hn::Max(m0, kept(i));
    m1 = hn::Max(m1, kept(i + N));
    m2 = hn::Max(m2, kept(i + 2 * N));
    m3 = hn::Max(m3, kept(i + 3 * N));
  }
  for (; i + N <= n; i += N) m0 = hn::Max(m0, kept(i));
  // The tail (fewer than N values): through a zero-padded buffer (0 is a
  // kept value that never raises the maximum).
  if (i < n) {
    HWY_ALIGN TI buf[hn::MaxLanes(d)] = {};
    std::memcpy(buf, p + i * sizeof(T), (n - i) * sizeof(T));
    const auto b = hn::And(hn::Load(d, buf), abs_mask);
    m1 = hn::Max(m1, hn::IfThenElseZero(hn::Lt(b, inf), b));
  }
  const auto m = hn::Max(hn::Max(m0, m1), hn::Max(m2, m3));
  return static_cast<T>(hn::GetLane(hn::MaxOfLanes(d, m)));
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_INL_H_
