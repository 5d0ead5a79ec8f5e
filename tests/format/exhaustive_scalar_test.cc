// Opt-in (ctest label `exhaustive`): all 2^32 f32 inputs, every narrow format,
// every legal policy, scalar reference against the nearest-value oracle.
// Threaded over all cores; prints its wall time.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/scalar.h"
#include "tests/common/oracle.h"

namespace mxpack {
namespace {

TEST(Exhaustive, AllF32EveryNarrowFormatEveryPolicy) {
  const auto start = std::chrono::steady_clock::now();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (Format dst : {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                     Format::kE5M2, Format::kUE8M0, Format::kUE4M3}) {
    const testing::Grid g = testing::MakeGrid(dst);
    std::vector<EncodePolicy> policies;
    for (const EncodePolicy& p : testing::LegalPolicies(Format::kF32, dst)) {
      if (p.rounding != Rounding::kRS) policies.push_back(p);
    }
    // One pseudo-random rbits per input for rs, shared by all rs policies.
    EncodePolicy rs;
    rs.rounding = Rounding::kRS;
    const bool has_rs = ValidateConversion(Format::kF32, dst, rs).ok();
    std::atomic<uint64_t> failures{0};
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const uint64_t begin = (uint64_t{1} << 32) * t / threads;
        const uint64_t end = (uint64_t{1} << 32) * (t + 1) / threads;
        for (uint64_t i = begin; i < end; ++i) {
          const uint32_t bits = static_cast<uint32_t>(i);
          const double x = scalar::F32FromBits(bits);
          for (const EncodePolicy& p : policies) {
            if (OracleEncode(g, Format::kF32, x, p) !=
                scalar::Convert(Format::kF32, dst, bits, p)) {
              if (failures.fetch_add(1) < 5) {
                std::fprintf(stderr, "MISMATCH %s %s input 0x%08X\n",
                             Traits(dst).name, PolicyToString(p).c_str(), bits);
              }
            }
          }
          if (has_rs) {
            const uint32_t r = RandomBits(5, i);
            if (OracleEncode(g, Format::kF32, x, rs, r) !=
                scalar::Convert(Format::kF32, dst, bits, rs, r)) {
              failures.fetch_add(1);
            }
          }
        }
      });
    }
    for (auto& th : pool) th.join();
    EXPECT_EQ(failures.load(), 0u) << Traits(dst).name;
    std::printf("%s: %zu policies%s x 2^32 inputs checked, %.0f s elapsed\n",
                Traits(dst).name, policies.size(), has_rs ? " + rs" : "",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace mxpack
