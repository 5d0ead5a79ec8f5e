// Tests of src/util/huge_buffer.h: sizes below and above the huge-page
// threshold are writable over their whole length and zeroed on request.
#include "src/util/huge_buffer.h"

#include <cstddef>
#include <cstdint>

#include "gtest/gtest.h"

namespace mxpack::internal {
namespace {

TEST(NewOutputBufferTest, ZeroedOnRequest) {
  for (size_t n : {size_t{1}, size_t{4096}, kHugeBufferMinBytes - 1,
                   kHugeBufferMinBytes, (size_t{9} << 20) + 123}) {
    // Dirty memory first, so that a reused allocation would show it.
    std::unique_ptr<uint8_t[]> dirty = NewOutputBuffer(n, /*zero=*/false);
    for (size_t i = 0; i < n; ++i) dirty[i] = 0xA5;
    dirty.reset();
    std::unique_ptr<uint8_t[]> p = NewOutputBuffer(n, /*zero=*/true);
    ASSERT_NE(p, nullptr);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; ++i) nonzero += p[i] != 0;
    EXPECT_EQ(nonzero, 0u) << "n=" << n;
  }
}

TEST(NewOutputBufferTest, WritableOverItsLength) {
  for (size_t n : {size_t{7}, kHugeBufferMinBytes, (size_t{6} << 20) + 5}) {
    std::unique_ptr<uint8_t[]> p = NewOutputBuffer(n, /*zero=*/false);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 7);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += p[i] != static_cast<uint8_t>(i * 7);
    EXPECT_EQ(bad, 0u) << "n=" << n;
  }
}

}  // namespace
}  // namespace mxpack::internal
