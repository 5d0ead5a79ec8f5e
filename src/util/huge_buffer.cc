// NewOutputBuffer: new[] plus a huge-page advice on the buffer's interior;
// BufferRecycler: a free list of them behind a counting wait.
#include "src/util/huge_buffer.h"

#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mxpack::internal {

std::unique_ptr<uint8_t[]> NewOutputBuffer(size_t n, bool zero) {
  std::unique_ptr<uint8_t[]> p(new uint8_t[n]);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (n >= kHugeBufferMinBytes) {
    // Only whole 2 MiB pages inside [p, p + n) can be huge; the advice
    // applies to the mapping's pages, not to the allocator's bookkeeping,
    // and failing (no THP support) leaves ordinary pages.
    constexpr uintptr_t kHuge = uintptr_t{2} << 20;
    const uintptr_t begin =
        (reinterpret_cast<uintptr_t>(p.get()) + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t end =
        (reinterpret_cast<uintptr_t>(p.get()) + n) & ~(kHuge - 1);
    if (end > begin) {
      (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
  }
#endif
  if (zero) std::memset(p.get(), 0, n);
  return p;
}

std::shared_ptr<uint8_t> BufferRecycler::Acquire(size_t n) {
  Buffer b;
  {
    std::unique_lock<std::mutex> lock(mu_);
    returned_.wait(lock, [&] { return leased_ < count_; });
    ++leased_;
    // The largest free buffer: sizes settle at the largest request, after
    // which no request allocates.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (best == free_.end() || it->size > best->size) best = it;
    }
    if (best != free_.end()) {
      b = std::move(*best);
      free_.erase(best);
    }
  }
  if (b.size < n) {
    try {
      b.data = NewOutputBuffer(n, /*zero=*/false);
    } catch (...) {
      Return(std::move(b));  // a failed allocation ends the lease
      throw;
    }
    b.size = n;
  }
  uint8_t* data = b.data.get();
  // The deleter owns the buffer until it hands it back.
  return std::shared_ptr<uint8_t>(
      data, [this, keep = std::make_shared<Buffer>(std::move(b))](uint8_t*) {
        Return(std::move(*keep));
      });
}

void BufferRecycler::Return(Buffer b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(b));
    --leased_;
  }
  returned_.notify_one();
}

}  // namespace mxpack::internal
