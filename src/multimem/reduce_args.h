// Internal: argument checks shared by the scalar and dispatched array
// reductions, so both give identical error messages.
#ifndef MXPACK_SRC_MULTIMEM_REDUCE_ARGS_H_
#define MXPACK_SRC_MULTIMEM_REDUCE_ARGS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "mxpack/multimem.h"

namespace mxpack::internal {

// Validates spec, source count and sizes; returns the element count.
absl::StatusOr<size_t> CheckReduceArgs(
    const ReduceSpec& spec, absl::Span<const absl::Span<const uint8_t>> sources,
    absl::Span<const uint8_t> out);

// Whether the x86 AVX3 targets may run the AVX512-FP16 fp8 kernels on CPUs
// that have AVX512-FP16 (default true). Tests switch it off to cover
// the Highway kernels of the same targets on such CPUs.
bool ReduceNativeF16Enabled();
void SetReduceNativeF16Enabled(bool enabled);
// True if this build and CPU can run the AVX512-FP16 fp8 kernels.
bool ReduceNativeF16Available();

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_MULTIMEM_REDUCE_ARGS_H_
