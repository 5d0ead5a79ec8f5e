// Shared helpers of the nanobind module: numpy buffers as byte spans (with
// the contiguity check that names the argument), absl::Status -> Python
// exceptions, name parsing with the argument name in the message, and the
// split of large calls over threads.
#ifndef MXPACK_PYTHON_SRC_BIND_UTIL_H_
#define MXPACK_PYTHON_SRC_BIND_UTIL_H_

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"

namespace mxpack::python {

namespace nb = nanobind;

// Read-only and writable numpy arrays of any dtype and shape (no implicit
// conversion: the buffer is used in place).
using InArray = nb::ndarray<nb::ro, nb::device::cpu>;
using OutArray = nb::ndarray<nb::device::cpu>;

// Raises ValueError (InvalidArgument, OutOfRange, FailedPrecondition,
// NotFound) or RuntimeError (anything else) with the status message.
// Call with the GIL held.
void ThrowIfError(const absl::Status& s);

template <typename T>
T ValueOrThrow(absl::StatusOr<T> v) {
  ThrowIfError(v.status());
  return *std::move(v);
}

// "arg: message" as an InvalidArgument status.
absl::Status Prefixed(absl::string_view arg, const absl::Status& s);

// Raises ValueError naming `arg` unless the array is C-contiguous.
void CheckContiguous(size_t ndim, const size_t* shape, const int64_t* strides,
                     absl::string_view arg);

// The bytes of a C-contiguous array (ValueError naming `arg` otherwise).
absl::Span<const uint8_t> InBytes(const InArray& a, absl::string_view arg);
absl::Span<uint8_t> OutBytes(const OutArray& a, absl::string_view arg);

// The bytes of a uint32 random-bits array; empty for None.
absl::Span<const uint32_t> RandomWords(const nb::handle& rbits);

// Impl from "best", "scalar" or a target name (error names `impl`).
Impl ParseImplArg(const std::string& name);

// A format name or ml_dtypes alias (ValueError prefixed with `arg`).
Format ParseFormatArg(const std::string& name, absl::string_view arg);

// Threads of a call: `threads`, or every core for 0.
size_t ResolveThreads(size_t threads);

// Units (elements, bytes or rows) below which a call runs on one thread: the
// thread start-up costs more than the work it would share.
inline constexpr size_t kMinUnitsPerChunk = size_t{1} << 16;

// Splits [0, n) into chunks whose boundaries are multiples of `grain` and
// runs part(begin, end) for each on up to `threads` threads (0: every core);
// call without the GIL. Each chunk writes its own disjoint part of the
// output, so the result does not depend on the thread count. Runs whole()
// instead when one thread suffices, and again after a failed chunk, so that
// an error reads exactly as the single call's (offsets into the whole
// array).
absl::Status RunChunked(size_t threads, size_t n, size_t grain,
                        size_t min_units,
                        const std::function<absl::Status(size_t, size_t)>& part,
                        const std::function<absl::Status()>& whole);

// Parts of the module defined in other files.
void BindMx(nb::module_& m);
void BindModel(nb::module_& m);

}  // namespace mxpack::python

#endif  // MXPACK_PYTHON_SRC_BIND_UTIL_H_
