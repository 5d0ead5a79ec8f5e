// Replay driver for the fuzzers when libFuzzer is not linked: runs every file
// of the given directories, then --random=N deterministic pseudo-random inputs.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

size_t RunFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return 0;
  std::vector<uint8_t> buf;
  uint8_t tmp[4096];
  size_t got;
  while ((got = std::fread(tmp, 1, sizeof(tmp), f)) > 0) buf.insert(buf.end(), tmp, tmp + got);
  std::fclose(f);
  LLVMFuzzerTestOneInput(buf.data(), buf.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  size_t random_runs = 0, files = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--random=", 9) == 0) {
      random_runs = std::strtoull(argv[i] + 9, nullptr, 10);
      continue;
    }
    if (DIR* d = opendir(argv[i])) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        files += RunFile(std::string(argv[i]) + "/" + e->d_name);
      }
      closedir(d);
    } else {
      files += RunFile(argv[i]);
    }
  }
  uint64_t state = 0x2545F4914F6CDD1Dull;
  std::vector<uint8_t> buf;
  for (size_t r = 0; r < random_runs; ++r) {
    // xorshift64*: sizes 0..4095 bytes, biased toward short inputs.
    auto next = [&state] {
      state ^= state >> 12; state ^= state << 25; state ^= state >> 27;
      return state * 2685821657736338717ull;
    };
    const size_t size = (next() >> 40) % ((r % 4 == 0) ? 4096 : 64);
    buf.resize(size);
    for (auto& b : buf) b = static_cast<uint8_t>(next() >> 56);
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
  }
  std::printf("replayed %zu corpus files and %zu random inputs: OK\n", files, random_runs);
  return 0;
}
