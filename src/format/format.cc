// The format traits table: the single place that describes every format.
#include "mxpack/format.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mxpack {
namespace {

// clang-format off
constexpr FormatTraits kTraits[kNumFormats] = {
  // format         name    ml_dtypes           bits exp man bias  sign   inf    subn   nan               max         canonical_nan        bytes
  {Format::kE2M1,  "e2m1",  "float4_e2m1fn",      4,  2,  1,   1, true,  false, true,  NanKind::kNone,    0x7,        0x7,                 1},
  {Format::kE2M3,  "e2m3",  "float6_e2m3fn",      6,  2,  3,   1, true,  false, true,  NanKind::kNone,    0x1F,       0x1F,                1},
  {Format::kE3M2,  "e3m2",  "float6_e3m2fn",      6,  3,  2,   3, true,  false, true,  NanKind::kNone,    0x1F,       0x1F,                1},
  {Format::kE4M3,  "e4m3",  "float8_e4m3fn",      8,  4,  3,   7, true,  false, true,  NanKind::kAllOnes, 0x7E,       0x7F,                1},
  {Format::kE5M2,  "e5m2",  "float8_e5m2",        8,  5,  2,  15, true,  true,  true,  NanKind::kIeee,    0x7B,       0x7F,                1},
  {Format::kUE8M0, "ue8m0", "float8_e8m0fnu",     8,  8,  0, 127, false, false, false, NanKind::kAllOnes, 0xFE,       0xFF,                1},
  {Format::kUE4M3, "ue4m3", "(none)",             8,  4,  3,   7, false, false, true,  NanKind::kAllOnes, 0x7E,       0x7F,                1},
  {Format::kF16,   "f16",   "float16",           16,  5, 10,  15, true,  true,  true,  NanKind::kIeee,    0x7BFF,     0x7FFF,              2},
  {Format::kBF16,  "bf16",  "bfloat16",          16,  8,  7, 127, true,  true,  true,  NanKind::kIeee,    0x7F7F,     0x7FFF,              2},
  {Format::kF32,   "f32",   "float32",           32,  8, 23, 127, true,  true,  true,  NanKind::kIeee,    0x7F7FFFFF, 0x7FFFFFFF,          4},
  {Format::kF64,   "f64",   "float64",           64, 11, 52, 1023, true, true,  true,  NanKind::kIeee,    0x7FEFFFFFFFFFFFFFu, 0x7FF8000000000000u, 8},
};
// clang-format on

// Accepted aliases besides the canonical names.
struct Alias {
  const char* alias;
  Format format;
};
constexpr Alias kAliases[] = {
    {"fp4", Format::kE2M1},         {"float4_e2m1fn", Format::kE2M1},
    {"float6_e2m3fn", Format::kE2M3}, {"float6_e3m2fn", Format::kE3M2},
    {"float8_e4m3fn", Format::kE4M3}, {"float8_e5m2", Format::kE5M2},
    {"e8m0", Format::kUE8M0},        {"float8_e8m0fnu", Format::kUE8M0},
    {"half", Format::kF16},          {"float16", Format::kF16},
    {"fp16", Format::kF16},          {"bfloat16", Format::kBF16},
    {"float32", Format::kF32},       {"float", Format::kF32},
    {"fp32", Format::kF32},          {"float64", Format::kF64},
    {"double", Format::kF64},        {"fp64", Format::kF64},
};

}  // namespace

const FormatTraits& Traits(Format f) {
  return kTraits[static_cast<int>(f)];
}

absl::string_view FormatName(Format f) { return Traits(f).name; }

std::string FormatNameList() {
  std::string out;
  for (const FormatTraits& t : kTraits) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", t.name);
  }
  return out;
}

absl::StatusOr<Format> ParseFormat(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const FormatTraits& t : kTraits) {
    if (lower == t.name) return t.format;
  }
  for (const Alias& a : kAliases) {
    if (lower == a.alias) return a.format;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown format '%s'; expected one of: %s", name, FormatNameList()));
}

}  // namespace mxpack
