// Large uninitialized output buffers backed by transparent huge pages where
// the kernel offers them, so that filling a freshly allocated buffer of
// hundreds of MiB costs one page fault per 2 MiB instead of one per 4 KiB;
// and a small set of such buffers reused in turn, whose pages are faulted in
// once instead of once per use.
#ifndef MXPACK_SRC_UTIL_HUGE_BUFFER_H_
#define MXPACK_SRC_UTIL_HUGE_BUFFER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

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

// At most `count` buffers leased at a time, each returned for reuse when the
// last copy of its lease is destroyed (on any thread). A producer that hands
// leases to a consumer thread is throttled by Acquire to `count` buffers in
// flight. Must outlive every lease.
class BufferRecycler {
 public:
  explicit BufferRecycler(size_t count) : count_(count) {}
  BufferRecycler(const BufferRecycler&) = delete;
  BufferRecycler& operator=(const BufferRecycler&) = delete;

  // A buffer of at least `n` bytes, uninitialized (it may hold an earlier
  // lease's bytes); waits while `count` buffers are leased.
  std::shared_ptr<uint8_t> Acquire(size_t n);

 private:
  struct Buffer {
    std::unique_ptr<uint8_t[]> data;
    size_t size = 0;
  };
  void Return(Buffer b);

  const size_t count_;
  std::mutex mu_;
  std::condition_variable returned_;
  std::vector<Buffer> free_;
  size_t leased_ = 0;
};

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_UTIL_HUGE_BUFFER_H_
