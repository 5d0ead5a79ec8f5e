// NewOutputBuffer: new[] plus a huge-page advice on the buffer's interior.
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

}  // namespace mxpack::internal
