// Dispatch of the stack-exact block quantizers (stack_blocks.h): one Highway
// kernel per stack arithmetic and input dtype (stack_blocks-inl.h); HWY_SCALAR
// (never dispatched) runs the scalar reference.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/checkpoint/stack_blocks.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/checkpoint/stack_blocks-inl.h"
#include "src/checkpoint/stack_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

void StackBlocks(const internal::StackBlocksArgs& a, const uint8_t* in,
                 size_t nb, uint8_t* elements, uint8_t* scales) {
#if HWY_TARGET == HWY_SCALAR
  internal::QuantizeStackBlocksScalar(a, in, nb, elements, scales);
#else
  using internal::SrcKind;
  using internal::StackArith;
  const auto run = [&](auto arith) {
    constexpr StackArith kArith = decltype(arith)::value;
    switch (a.from) {
      case Format::kF32:
        return StackBlockQuantizer<kArith, SrcKind::kF32>::Run(
            a.tensor_scale, in, nb, elements, scales);
      case Format::kF16:
        return StackBlockQuantizer<kArith, SrcKind::kF16>::Run(
            a.tensor_scale, in, nb, elements, scales);
      default:
        return StackBlockQuantizer<kArith, SrcKind::kBF16>::Run(
            a.tensor_scale, in, nb, elements, scales);
    }
  };
  switch (a.arith) {
    case StackArith::kCtNvfp4:
      return run(std::integral_constant<StackArith, StackArith::kCtNvfp4>());
    case StackArith::kCtMxfp4:
      return run(std::integral_constant<StackArith, StackArith::kCtMxfp4>());
    case StackArith::kCtMxfp8:
      return run(std::integral_constant<StackArith, StackArith::kCtMxfp8>());
    case StackArith::kModelOptNvfp4:
      return run(
          std::integral_constant<StackArith, StackArith::kModelOptNvfp4>());
    case StackArith::kModelOptMxfp8:
      return run(
          std::integral_constant<StackArith, StackArith::kModelOptMxfp8>());
  }
#endif
}

uint32_t StackAbsMaxBits(Format from, const uint8_t* in, size_t n) {
#if HWY_TARGET == HWY_SCALAR
  return internal::AbsMaxBitsScalar(from, in, n);
#else
  switch (from) {
    case Format::kF32:
      return AbsMaxBitsOf<internal::SrcKind::kF32>(in, n);
    case Format::kF16:
      return AbsMaxBitsOf<internal::SrcKind::kF16>(in, n);
    default:
      return AbsMaxBitsOf<internal::SrcKind::kBF16>(in, n);
  }
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/util/dispatch_util.h"

namespace mxpack {
HWY_EXPORT(StackBlocks);
HWY_EXPORT(StackAbsMaxBits);

namespace internal {

void QuantizeStackBlocks(const StackBlocksArgs& a, const uint8_t* in, size_t nb,
                         uint8_t* elements, uint8_t* scales, Impl impl) {
  if (impl.target == Impl::kScalar) {
    return QuantizeStackBlocksScalar(a, in, nb, elements, scales);
  }
  Pick(HWY_DISPATCH_TABLE(StackBlocks), impl)(a, in, nb, elements, scales);
}

uint32_t AbsMaxBits(Format from, const uint8_t* in, size_t n, Impl impl) {
  if (impl.target == Impl::kScalar) return AbsMaxBitsScalar(from, in, n);
  return Pick(HWY_DISPATCH_TABLE(StackAbsMaxBits), impl)(from, in, n);
}

}  // namespace internal
}  // namespace mxpack
#endif  // HWY_ONCE
