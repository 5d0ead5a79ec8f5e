// The finite amax pass behind ComputeNvfp4TensorScale: the largest sign-less
// bit pattern below Inf's over a whole f32 / bf16 / f16 tensor.
#ifndef MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_H_
#define MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_H_

#include <cstddef>
#include <cstdint>

#include "mxpack/dispatch.h"
#include "mxpack/format.h"

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

// The finite amax bits of the `bytes / storage bytes` values of `from` (f32,
// bf16 or f16) at `p`: the functions above by format. Maxima of parts of a
// tensor combine into the tensor's by max.
uint32_t MaxFiniteMagnitudeBits(Format from, const uint8_t* p, size_t bytes,
                                Impl impl);

// The NVFP4 tensor scale from the finite amax bits of a tensor in `from`
// (docs/semantics.md section 5): amax / 2688 in f32, or 1 when amax is 0.
float Nvfp4TensorScaleFromAmaxBits(Format from, uint32_t amax_bits);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_MX_NVFP4_TENSOR_AMAX_H_
