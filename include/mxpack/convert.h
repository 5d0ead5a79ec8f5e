// Dispatched (Highway SIMD) array conversions between f32/f16/bf16 and every
// narrow format, bit-identical to the scalar reference on every target.
#ifndef MXPACK_CONVERT_H_
#define MXPACK_CONVERT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/scalar.h"

namespace mxpack {

// Same contract and errors as scalar::ConvertArray (raw little-endian element
// arrays, narrow formats one code per byte). `impl` selects the best target
// (default), a forced Highway target, or the scalar reference. Conversions the
// SIMD kernels do not cover (f64 sources, narrow -> narrow re-encodes, f32
// destinations of non-exact conversions, OverflowTie::kToMaxFinite) run the
// scalar reference; HasSimdPath() tells which.
absl::Status ConvertArray(Format from, Format to, const EncodePolicy& policy,
                          absl::Span<const uint8_t> in, absl::Span<uint8_t> out,
                          absl::Span<const uint32_t> rbits = {}, Impl impl = {});

// True when ConvertArray(from, to, policy, ...) runs a SIMD kernel.
bool HasSimdPath(Format from, Format to, const EncodePolicy& policy);

}  // namespace mxpack

#endif  // MXPACK_CONVERT_H_
