// Shared helpers of the fuzzers: a reader that turns the input bytes into
// choices (bytes, words from a vocabulary, a remaining payload) and a check
// that aborts with a message, so that libFuzzer and the replay driver both
// report it.
#ifndef MXPACK_FUZZ_FUZZ_INPUT_H_
#define MXPACK_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mxpack::fuzz {

struct Reader {
  const uint8_t* p;
  size_t n;
  uint8_t Byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  uint64_t U64() {
    uint64_t x = 0;
    for (int i = 0; i < 8; ++i) x |= uint64_t{Byte()} << (8 * i);
    return x;
  }
  template <size_t N>
  const char* Pick(const char* const (&words)[N]) {
    return words[Byte() % N];
  }
  // Up to `max` raw bytes as text.
  std::string Text(size_t max) {
    const size_t len = Byte() % (max + 1);
    std::string s;
    while (s.size() < len && n > 0) s += static_cast<char>(Byte());
    return s;
  }
};

// Aborts with `what` and both texts when `ok` is false.
inline void Check(bool ok, const char* what, const std::string& a = {},
                  const std::string& b = {}) {
  if (ok) return;
  std::fprintf(stderr,
               "fuzz check failed: %s\n  first:  '%s'\n  second: '%s'\n", what,
               a.c_str(), b.c_str());
  std::abort();
}

}  // namespace mxpack::fuzz

#endif  // MXPACK_FUZZ_FUZZ_INPUT_H_
