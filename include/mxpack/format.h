// Element formats of mxpack as data: one traits table drives every codec.
#ifndef MXPACK_FORMAT_H_
#define MXPACK_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace mxpack {

// Every format mxpack reads or writes. Narrow formats (bits <= 8) are stored
// one code per byte in the low bits unless a packed layout says otherwise.
enum class Format : uint8_t {
  kE2M1,   // float4_e2m1fn: FP4, no Inf/NaN.
  kE2M3,   // float6_e2m3fn: FP6, no Inf/NaN.
  kE3M2,   // float6_e3m2fn: FP6, no Inf/NaN.
  kE4M3,   // float8_e4m3fn: FP8, NaN = S.1111.111, no Inf.
  kE5M2,   // float8_e5m2: FP8, IEEE-like Inf/NaN.
  kUE8M0,  // float8_e8m0fnu: unsigned power of two, 0xFF = NaN, no zero.
  kUE4M3,  // NVFP4 block scale: e4m3 with the sign bit required to be 0.
  kF16,
  kBF16,
  kF32,
  kF64,  // Accepted as an encode source only.
};

inline constexpr int kNumFormats = 11;

// How NaN is encoded.
enum class NanKind : uint8_t {
  kNone,       // No NaN code (e2m1, e2m3, e3m2).
  kIeee,       // All-ones exponent with non-zero mantissa (e5m2, f16, ...).
  kAllOnes,    // Only all-ones exponent AND mantissa (e4m3, ue4m3, ue8m0).
};

struct FormatTraits {
  Format format;
  const char* name;        // Canonical spelling ("e4m3", "bf16", ...).
  const char* ml_dtypes;   // ml_dtypes / numpy spelling, for documentation.
  int bits;                // Total bits of a code.
  int exp_bits;
  int man_bits;
  int bias;
  bool has_sign;
  bool has_inf;            // All-ones exponent with zero mantissa is Inf.
  bool has_subnormals;     // false: exponent field 0 is a normal binade (ue8m0).
  NanKind nan;
  uint64_t max_code;       // Largest positive finite code.
  uint64_t canonical_nan;  // Code produced for NaN; for kNone the positive max.
  int storage_bytes;       // Bytes per element in a one-code-per-element array.
};

// The traits of `f`. Constant time, never fails.
const FormatTraits& Traits(Format f);

// True for the sub-byte and byte formats (e2m1 .. ue4m3).
inline constexpr bool IsNarrow(Format f) {
  return static_cast<int>(f) <= static_cast<int>(Format::kUE4M3);
}

// Canonical name of `f`.
absl::string_view FormatName(Format f);

// Parses a canonical name or an ml_dtypes alias (case-insensitive). Unknown
// names are an InvalidArgument error listing the valid names.
absl::StatusOr<Format> ParseFormat(absl::string_view name);

// "e2m1, e2m3, ..." for help texts and error messages.
std::string FormatNameList();

}  // namespace mxpack

#endif  // MXPACK_FORMAT_H_
