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

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_MULTIMEM_REDUCE_ARGS_H_
