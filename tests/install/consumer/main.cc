// Encodes a few values to e4m3 and quantizes a block to MXFP4 through the
// installed headers and library; exits non-zero on any unexpected byte.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mxpack/convert.h"
#include "mxpack/mx.h"

int main() {
  const float in[4] = {1.0f, -448.0f, 464.0f, 0.0f};
  uint8_t out[4];
  const absl::Status s = mxpack::ConvertArray(
      mxpack::Format::kF32, mxpack::Format::kE4M3, mxpack::EncodePolicy{},
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(in), sizeof(in)),
      absl::MakeSpan(out, 4));
  // 1.0 = 0x38; -448 = 0xFE; 464 is the tie above 448 -> 448 (0x7E) satfinite.
  const uint8_t want[4] = {0x38, 0xFE, 0x7E, 0x00};
  if (!s.ok() || std::memcmp(out, want, 4) != 0) {
    std::printf("ConvertArray: %s %02x %02x %02x %02x\n", s.ToString().c_str(),
                out[0], out[1], out[2], out[3]);
    return 1;
  }
  std::vector<float> x(32, 3.0f);
  auto q = mxpack::QuantizeMx(
      mxpack::MxFormat::kMxfp4, mxpack::Format::kF32,
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(x.data()), 128), 1, 32);
  // amax 3: floor scale 2^(1 - 2) (code 126); 3 / 0.5 = 6 = e2m1 0x7.
  if (!q.ok() || q->scales[0] != 126 || q->elements[0] != 0x7) {
    std::printf("QuantizeMx: %s\n", q.status().ToString().c_str());
    return 1;
  }
  std::printf("mxpack consumer: ok\n");
  return 0;
}
