// Large uninitialized output buffers backed by transparent huge pages where
// the kernel offers them, so that filling a freshly allocated buffer of
// hundreds of MiB costs one page fault per 2 MiB instead of one per 4 KiB.
#ifndef MXPACK_SRC_UTIL_HUGE_BUFFER_H_
#define MXPACK_SRC_UTIL_HUGE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mxpack::internal {

// Buffers of at least this many bytes are advised to use huge pages.
inline constexpr size_t kHugeBufferMinBytes = size_t{4} << 20;

// `n` bytes from new[] (so the result frees like any
// std::unique_ptr<uint8_t[]>), uninitialized, or zeroed when `zero`. From
// kHugeBufferMinBytes on, the 2 MiB-aligned pages inside the buffer are
// advised (madvise MADV_HUGEPAGE, Linux) before any byte is touched, so
// first writes fault them in 2 MiB at a time (THP "madvise" and "always"
// modes; a no-op elsewhere). A zeroed buffer is cleared after the advice.
std::unique_ptr<uint8_t[]> NewOutputBuffer(size_t n, bool zero);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_UTIL_HUGE_BUFFER_H_
