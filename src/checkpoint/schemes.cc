// The table of checkpoint export schemes and the scalar helpers they share.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxpack/scalar.h"
#include "src/checkpoint/scheme.h"

namespace mxpack::internal {
using scalar::DecodeToF32;
using scalar::EncodeF32;
using scalar::F32Bits;

const std::vector<const Scheme*>& Schemes() {
  static const std::vector<const Scheme*>* table = new std::vector<const Scheme*>{
      CompressedTensorsScheme(),
      ModelOptScheme(),
      GptOssScheme(),
      MxpackScheme(),
  };
  return *table;
}

absl::StatusOr<const Scheme*> FindScheme(absl::string_view name) {
  std::vector<std::string> names;
  for (const Scheme* s : Schemes()) {
    if (s->name() == name) return s;
    names.emplace_back(s->name());
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "scheme: unknown scheme '%s'; expected one of %s", name,
      absl::StrJoin(names, ", ")));
}

std::vector<FoundQuantized> FindQuantized(const SafetensorsView& v) {
  std::vector<FoundQuantized> all;
  for (const Scheme* s : Schemes()) {
    std::vector<FoundQuantized> f = s->Find(v);
    all.insert(all.end(), f.begin(), f.end());
  }
  return all;
}

uint8_t E2m1Nibble(float q) {
  if (q == 0.0f) return 0;
  constexpr EncodePolicy kRnSat = {Rounding::kRN, Saturation::kSatFinite, false,
                                   OverflowTie::kEven};
  return static_cast<uint8_t>(EncodeF32(q, Format::kE2M1, kRnSat));
}

float RoundToDtype(Format w, float x) {
  if (w == Format::kF32) return x;
  constexpr EncodePolicy kRnNoSat = {Rounding::kRN, Saturation::kNoSat, false,
                                     OverflowTie::kEven};
  return DecodeToF32(w, EncodeF32(x, w, kRnNoSat));
}

float LoadAsF32(Format from, const uint8_t* p, size_t i) {
  if (from == Format::kF32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  const uint16_t h = static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
  return DecodeToF32(from, h);
}

}  // namespace mxpack::internal

namespace mxpack {

std::vector<std::string> CheckpointSchemeNames() {
  std::vector<std::string> names;
  for (const internal::Scheme* s : internal::Schemes()) names.emplace_back(s->name());
  return names;
}

}  // namespace mxpack
