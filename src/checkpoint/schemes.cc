// The table of checkpoint export schemes and the scalar helpers they share.
#include <array>
#include <cmath>
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

// The thresholds of round-to-nearest-even between e2m1 magnitudes {0, 0.5, 1,
// 1.5, 2, 3, 4, 6}: a tie goes to the even code (0.25 -> 0, 0.75 -> 1,
// 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4); above 5 saturates at 6.
uint8_t E2m1Nibble(float q) {
  if (q == 0.0f) return 0;
  const uint8_t sign = std::signbit(q) ? 0x8 : 0x0;
  const float a = std::fabs(q);
  const uint8_t m = a <= 0.25f  ? 0
                    : a < 0.75f ? 1
                    : a <= 1.25f ? 2
                    : a < 1.75f ? 3
                    : a <= 2.5f ? 4
                    : a < 3.5f  ? 5
                    : a <= 5.0f ? 6
                                : 7;
  return static_cast<uint8_t>(sign | m);
}

float RoundToDtype(Format w, float x) {
  if (w == Format::kF32) return x;
  constexpr EncodePolicy kRnNoSat = {Rounding::kRN, Saturation::kNoSat, false,
                                     OverflowTie::kEven};
  return DecodeToF32(w, EncodeF32(x, w, kRnNoSat));
}

float LoadAsF32(Format from, const uint8_t* p, size_t i) {
  float f;
  if (from == Format::kF32) {
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  const uint16_t h = static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
  if (from == Format::kBF16) {  // the upper half of an f32
    const uint32_t b = uint32_t{h} << 16;
    std::memcpy(&f, &b, 4);
    return f;
  }
  return DecodeToF32(from, h);
}

namespace {

// DecodeToF32 of the codes 0..N-1 of `f`.
template <size_t N>
std::array<float, N> DecodedValues(Format f) {
  std::array<float, N> r{};
  for (uint32_t c = 0; c < N; ++c) r[c] = DecodeToF32(f, c);
  return r;
}

}  // namespace

const float* E2m1Values() {
  static const std::array<float, 16> t = DecodedValues<16>(Format::kE2M1);
  return t.data();
}

const float* E4m3Values() {
  static const std::array<float, 256> t = DecodedValues<256>(Format::kE4M3);
  return t.data();
}

const double* E8m0Pow2() {
  static const std::array<double, 256> t = [] {
    std::array<double, 256> r{};
    for (int c = 0; c < 256; ++c) r[c] = std::ldexp(1.0, c - 127);
    return r;
  }();
  return t.data();
}

void ScaleByE8m0(float* o, size_t n, uint8_t c) {
  if (c == 255) {
    for (size_t j = 0; j < n; ++j) {
      o[j] = static_cast<float>(static_cast<double>(o[j]) * E8m0Pow2()[255]);
    }
    return;
  }
  const float m = static_cast<float>(E8m0Pow2()[c]);
  for (size_t j = 0; j < n; ++j) o[j] *= m;
}

uint64_t FoundRows(const FoundQuantized& q) {
  uint64_t n = 1;
  for (uint64_t d : q.shape) n *= d;
  return n == 0 ? 0 : n / q.shape.back();
}

absl::Status CheckRowRange(const FoundQuantized& q, uint64_t first_row,
                           size_t out_elements) {
  const uint64_t cols = q.shape.empty() ? 0 : q.shape.back();
  const uint64_t rows = FoundRows(q);
  if (cols == 0 ? out_elements != 0
                : out_elements % cols != 0 || first_row > rows ||
                      out_elements / cols > rows - first_row) {
    return absl::InternalError(
        absl::StrFormat("dequantize '%s': %d elements from row %d are not "
                        "whole rows of its %d x %d",
                        q.name, out_elements, first_row, rows, cols));
  }
  return absl::OkStatus();
}

}  // namespace mxpack::internal

namespace mxpack {

std::vector<std::string> CheckpointSchemeNames() {
  std::vector<std::string> names;
  for (const internal::Scheme* s : internal::Schemes()) names.emplace_back(s->name());
  return names;
}

}  // namespace mxpack
