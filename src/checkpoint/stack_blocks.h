// Internal: the block quantizers of the stack-exact export schemes
// (compressed-tensors and ModelOpt), which reproduce each stack's own
// arithmetic byte for byte: the scalar reference (stack_blocks_scalar.cc) and
// its Highway kernels (stack_blocks-inl.h, dispatched by stack_blocks.cc).
#ifndef MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_H_
#define MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_H_

#include <cstddef>
#include <cstdint>

#include "mxpack/dispatch.h"
#include "mxpack/format.h"

namespace mxpack::internal {

// Whose arithmetic a block quantizer reproduces (docs/checkpoints.md).
enum class StackArith : uint8_t {
  kCtNvfp4,        // compressed-tensors nvfp4-pack-quantized
  kCtMxfp4,        // compressed-tensors mxfp4-pack-quantized
  kCtMxfp8,        // compressed-tensors mxfp8-quantized
  kModelOptNvfp4,  // ModelOpt NVFP4QTensor
  kModelOptMxfp8,  // ModelOpt MXFP8QTensor
};

// Elements per block: 16 (NVFP4) or 32 (MX).
constexpr size_t StackBlockSize(StackArith a) {
  return a == StackArith::kCtNvfp4 || a == StackArith::kModelOptNvfp4 ? 16 : 32;
}

// Whether the elements are e4m3 codes (MXFP8) rather than e2m1 nibbles.
constexpr bool StackFp8(StackArith a) {
  return a == StackArith::kCtMxfp8 || a == StackArith::kModelOptMxfp8;
}

struct StackBlocksArgs {
  StackArith arith = StackArith::kCtNvfp4;
  Format from = Format::kBF16;  // the input dtype: f32, bf16 or f16
  // kCtNvfp4: the global scale (CtGlobalScale); kModelOptNvfp4: the tensor
  // scale t = amax / 2688 (> 0); unused by MX.
  float tensor_scale = 1.0f;
};

// Quantizes `nb` whole blocks of little-endian `a.from` elements at `in`:
// `elements` receives the e2m1 nibbles two per byte (low nibble = even
// element) or one e4m3 code per byte (MXFP8), `scales` one scale byte per
// block (e4m3 for NVFP4, the E8M0 exponent for MX). Impl::kScalar runs the
// scalar reference, any other value a Highway target (Pick).
void QuantizeStackBlocks(const StackBlocksArgs& a, const uint8_t* in, size_t nb,
                         uint8_t* elements, uint8_t* scales,
                         Impl impl = Impl{});
void QuantizeStackBlocksScalar(const StackBlocksArgs& a, const uint8_t* in,
                               size_t nb, uint8_t* elements, uint8_t* scales);

// The largest f32 bit pattern of |x| over `n` elements of `from` at `in`: the
// largest |x| where all are finite, and >= 0x7F800000 where any is Inf or NaN.
uint32_t AbsMaxBits(Format from, const uint8_t* in, size_t n,
                    Impl impl = Impl{});
uint32_t AbsMaxBitsScalar(Format from, const uint8_t* in, size_t n);

// The scale code (biased E8M0 exponent) of a ModelOpt MXFP8 block whose
// largest |x| is `amax` (NaN where the block holds one).
uint8_t ModelOptMxfp8ScaleCode(float amax);

// The global scale of a compressed-tensors NVFP4 tensor (group) whose
// largest |x| is `amax`, for input dtype `w`.
float CtGlobalScale(Format w, float amax);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_H_
