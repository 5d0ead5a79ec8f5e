// Target selection (src/util/dispatch_util.h): a kernel pointer picked before
// any other dispatch in the process is the chosen target's function, not
// Highway's initializing trampoline (which queries the CPU on every call).
#include "src/util/dispatch_util.h"

#include "gtest/gtest.h"

namespace mxpack::internal {
namespace {

int Trampoline() { return -1; }
int Kernel() { return 1; }

TEST(Pick, InitializesTheChosenTargetFirst) {
  // A table shaped like HWY_EXPORT's: entry 0 is what an uninitialized
  // choice selects; every target entry holds the kernel.
  using Fn = int (*)();
  Fn table[HWY_MAX_DYNAMIC_TARGETS + 2];
  for (Fn& f : table) f = Kernel;
  table[0] = Trampoline;
  hwy::GetChosenTarget().DeInit();  // as at process start
  ASSERT_FALSE(hwy::GetChosenTarget().IsInitialized());
  const Fn picked = Pick(table, Impl{});
  EXPECT_TRUE(hwy::GetChosenTarget().IsInitialized());
  EXPECT_EQ(picked(), 1);
}

}  // namespace
}  // namespace mxpack::internal
