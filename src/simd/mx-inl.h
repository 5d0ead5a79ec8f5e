// Highway kernel of MX / NVFP4 block quantization: per block, amax over the
// finite values and NaN detection, then the element values scaled into the
// element's range (x * 2^-s, exact; or x / (d * t) for NVFP4), ready for the
// shared f32 -> element encoder. Per-target toggle guard as in STYLE.md.
#if defined(MXPACK_SRC_SIMD_MX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_SIMD_MX_INL_H_
#undef MXPACK_SRC_SIMD_MX_INL_H_
#else
#define MXPACK_SRC_SIMD_MX_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Blocks are 16 or 32 floats: cap the vector at 16 lanes so it divides both.
class MxBlockCodec {
 public:
  using D = hn::CappedTag<float, 16>;
  using V = hn::Vec<D>;

  // amax over the finite values of x[0, block) and whether any is NaN.
  static HWY_INLINE float Amax(const float* HWY_RESTRICT x, size_t block,
                               bool* has_nan) {
    const D d;
    const size_t N = hn::Lanes(d);
    const hn::RebindToUnsigned<D> du;
    const V inf = hn::BitCast(d, hn::Set(du, 0x7F800000u));
    V vmax = hn::Zero(d);
    V nan = hn::Zero(d);
    for (size_t i = 0; i < block; i += N) {
      const V v = hn::LoadU(d, x + i);
      const V a = hn::Abs(v);
      // NaN and Inf fail a < inf: neither enters amax.
      vmax = hn::Max(vmax, hn::IfThenElseZero(a < inf, a));
      nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(v)));
    }
    *has_nan = !hn::AllFalse(d, hn::MaskFromVec(nan));
    return hn::GetLane(hn::MaxOfLanes(d, vmax));
  }

  // y[i] = x[i] * m for i < block (m a power of two: exact in the range that
  // matters), or NaN for every element when has_nan.
  static HWY_INLINE void Scale(const float* HWY_RESTRICT x, size_t block,
                               float m, bool has_nan, float* HWY_RESTRICT y) {
    const D d;
    const size_t N = hn::Lanes(d);
    if (has_nan) {
      const hn::RebindToUnsigned<D> du;
      const V nan = hn::BitCast(d, hn::Set(du, 0x7FC00000u));
      for (size_t i = 0; i < block; i += N) hn::StoreU(nan, d, y + i);
      return;
    }
    const V vm = hn::Set(d, m);
    for (size_t i = 0; i < block; i += N) {
      hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vm), d, y + i);
    }
  }

  // NVFP4: y[i] = x[i] / p (IEEE division), or x[i] * 0 when p == 0.
  static HWY_INLINE void Divide(const float* HWY_RESTRICT x, size_t block,
                                float p, bool has_nan, float* HWY_RESTRICT y) {
    if (has_nan || p == 0.0f) {
      Scale(x, block, 0.0f, has_nan, y);
      return;
    }
    const D d;
    const size_t N = hn::Lanes(d);
    const V vp = hn::Set(d, p);
    for (size_t i = 0; i < block; i += N) {
      hn::StoreU(hn::Div(hn::LoadU(d, x + i), vp), d, y + i);
    }
  }
};

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_SIMD_MX_INL_H_
