// The finite amax pass behind ComputeNvfp4TensorScale: the largest sign-less
// bit pattern below Inf's over a whole f32 / bf16 / f16 tensor.
#ifndef MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_H_
#define MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_H_

#include <cstddef>
#include <cstdint>

#include "mxpack/dispatch.h"

namespace mxpack::internal {

// The largest (bits & 0x7FFFFFFF) below 0x7F800000 over the `n` f32 values
// at `p` (little-endian, any alignment; 0 if none). IEEE magnitudes order
// like their sign-less bits and Inf / NaN bits are the largest, so this is
// the bits of the finite amax. impl: kScalar, kBest or one available target.
uint32_t MaxFiniteMagnitudeBits32(const uint8_t* p, size_t n, Impl impl);
// The same over `n` 16-bit values (bf16: inf_bits 0x7F80; f16: 0x7C00),
// sign-less mask 0x7FFF.
uint16_t MaxFiniteMagnitudeBits16(const uint8_t* p, size_t n, uint16_t inf_bits,
                                  Impl impl);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_H_
