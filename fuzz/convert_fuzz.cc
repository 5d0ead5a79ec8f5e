// Differential fuzzer: input bytes choose source/destination formats, policy,
// target and data; every SIMD target must equal the scalar reference byte for
// byte, and both must agree on errors.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mxpack/convert.h"
#include "mxpack/dispatch.h"
#include "mxpack/scalar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxpack;
  if (size < 4) return 0;
  static const Format kSrc[] = {Format::kF32, Format::kF16, Format::kBF16, Format::kE2M1,
                                Format::kE2M3, Format::kE3M2, Format::kE4M3, Format::kE5M2,
                                Format::kUE8M0, Format::kUE4M3};
  static const Format kDst[] = {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                                Format::kE5M2, Format::kUE8M0, Format::kUE4M3, Format::kF16,
                                Format::kBF16, Format::kF32};
  const Format from = kSrc[data[0] % 10];
  const Format to = kDst[data[1] % 10];
  EncodePolicy p;
  p.rounding = static_cast<Rounding>(data[2] % 5);
  p.saturation = (data[2] >> 3) & 1 ? Saturation::kNoSat : Saturation::kSatFinite;
  p.relu = (data[2] >> 4) & 1;
  const std::vector<int64_t> targets = AvailableTargets();
  const Impl impl{targets[data[3] % targets.size()]};
  std::vector<uint8_t> in(data + 4, data + size);
  if (IsNarrow(from)) {  // Mostly valid codes; sometimes raw bytes (errors).
    const int width = Traits(from).exp_bits + Traits(from).man_bits + Traits(from).has_sign;
    if ((data[3] & 0x80) == 0) for (auto& b : in) b = static_cast<uint8_t>(b & ((1 << width) - 1));
  }
  const size_t n = in.size() / Traits(from).storage_bytes;
  std::vector<uint32_t> rbits(p.rounding == Rounding::kRS ? n : 0);
  for (size_t i = 0; i < rbits.size(); ++i) rbits[i] = RandomBits(size, i);
  std::vector<uint8_t> a(n * Traits(to).storage_bytes, 0x11), b(a.size(), 0x22);
  const absl::Status sa = scalar::ConvertArray(from, to, p, in, absl::MakeSpan(a), rbits);
  const absl::Status sb = ConvertArray(from, to, p, in, absl::MakeSpan(b), rbits, impl);
  if (sa != sb || (sa.ok() && a != b)) {
    std::fprintf(stderr, "MISMATCH %s -> %s %s target %s: %s / %s\n", Traits(from).name,
                 Traits(to).name, PolicyToString(p).c_str(), ImplName(impl).c_str(),
                 sa.ToString().c_str(), sb.ToString().c_str());
    std::abort();
  }
  return 0;
}
