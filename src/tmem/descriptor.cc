// Shared-memory matrix descriptor of tcgen05 [PTX 9.7.16.4.1]: encode,
// decode and the K-major chunk address walk (no swizzle and 32/64/128-byte
// swizzles).
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "mxpack/tcgen05.h"

namespace mxpack {
namespace tcgen05 {
namespace {

// Bit fields of the 64-bit descriptor:
//  63..61  60..53  52   51..49  48..46  45..32  31..30  29..16  15..14  13..0
//  swizzle   0    mode  base    0b001    SBO>>4    0     LBO>>4    0    start>>4
constexpr uint64_t kFixedBits = uint64_t{1} << 46;  // [48:46] = 0b001.
constexpr uint64_t kReservedMask = (uint64_t{3} << 14) | (uint64_t{3} << 30) |
                                   (uint64_t{0xFF} << 53);

absl::Status CheckByteField(absl::string_view name, uint32_t bytes) {
  if (bytes % 16 != 0 || bytes >= (1u << 18)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "descriptor %s: expected a multiple of 16 below 2^18 (14-bit field of "
        "bytes >> 4), got %u",
        name, bytes));
  }
  return absl::OkStatus();
}

bool IsDefinedSwizzle(uint32_t code) {
  return code == 0 || code == 1 || code == 2 || code == 4 || code == 6;
}

}  // namespace

absl::string_view SwizzleName(Swizzle s) {
  switch (s) {
    case Swizzle::kNone: return "none";
    case Swizzle::k128BBase32B: return "128b_base32b";
    case Swizzle::k128B: return "128b";
    case Swizzle::k64B: return "64b";
    case Swizzle::k32B: return "32b";
  }
  return "?";
}

absl::StatusOr<Swizzle> ParseSwizzle(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  for (Swizzle s : {Swizzle::kNone, Swizzle::k128BBase32B, Swizzle::k128B,
                    Swizzle::k64B, Swizzle::k32B}) {
    if (n == SwizzleName(s)) return s;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "swizzle: expected none, 128b_base32b, 128b, 64b or 32b, got '%s'", name));
}

absl::StatusOr<uint64_t> EncodeDescriptor(const SmemDescriptor& d) {
  if (absl::Status s = CheckByteField("start_address", d.start_address); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckByteField("leading_byte_offset", d.leading_byte_offset);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckByteField("stride_byte_offset", d.stride_byte_offset);
      !s.ok()) {
    return s;
  }
  if (d.base_offset > 7) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "descriptor base_offset: expected 0..7 (3 bits), got %u", d.base_offset));
  }
  const uint32_t sw = static_cast<uint32_t>(d.swizzle);
  if (!IsDefinedSwizzle(sw)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "descriptor swizzle: expected 0, 1, 2, 4 or 6, got %u", sw));
  }
  return uint64_t{d.start_address >> 4} | (uint64_t{d.leading_byte_offset >> 4} << 16) |
         (uint64_t{d.stride_byte_offset >> 4} << 32) | kFixedBits |
         (uint64_t{d.base_offset} << 49) | (uint64_t{d.lbo_absolute} << 52) |
         (uint64_t{sw} << 61);
}

absl::StatusOr<SmemDescriptor> DecodeDescriptor(uint64_t bits) {
  if ((bits & kReservedMask) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "descriptor 0x%016x: reserved bits [15:14], [31:30] and [60:53] must be "
        "0, got 0x%016x",
        bits, bits & kReservedMask));
  }
  const uint64_t fixed = (bits >> 46) & 7;
  if (fixed != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "descriptor 0x%016x: bits [48:46] must be the fixed constant 0b001, got "
        "0b%d%d%d",
        bits, (fixed >> 2) & 1, (fixed >> 1) & 1, fixed & 1));
  }
  const uint32_t sw = static_cast<uint32_t>(bits >> 61);
  if (!IsDefinedSwizzle(sw)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "descriptor 0x%016x: swizzle mode bits [63:61] must be 0, 1, 2, 4 or 6, "
        "got %u",
        bits, sw));
  }
  SmemDescriptor d;
  d.start_address = static_cast<uint32_t>(bits & 0x3FFF) << 4;
  d.leading_byte_offset = static_cast<uint32_t>((bits >> 16) & 0x3FFF) << 4;
  d.stride_byte_offset = static_cast<uint32_t>((bits >> 32) & 0x3FFF) << 4;
  d.base_offset = static_cast<uint32_t>((bits >> 49) & 7);
  d.lbo_absolute = ((bits >> 52) & 1) != 0;
  d.swizzle = static_cast<Swizzle>(sw);
  return d;
}

std::string DescribeDescriptor(const SmemDescriptor& d) {
  return absl::StrFormat(
      "start=0x%x lbo=%u sbo=%u base_offset=%u lbo_mode=%s swizzle=%s",
      d.start_address, d.leading_byte_offset, d.stride_byte_offset, d.base_offset,
      d.lbo_absolute ? "absolute" : "relative", SwizzleName(d.swizzle));
}

absl::StatusOr<uint32_t> ChunkAddress(const SmemDescriptor& d, int row, int chunk) {
  if (row < 0 || chunk < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ChunkAddress: row and chunk must be >= 0, got %d, %d",
                        row, chunk));
  }
  if (d.base_offset != 0) {
    return absl::UnimplementedError(absl::StrFormat(
        "descriptor base_offset: only 0 is modelled (pattern-aligned start "
        "address), got %u; see docs/tmem_open_points.md",
        d.base_offset));
  }
  if (d.lbo_absolute) {
    return absl::UnimplementedError(
        "descriptor LBO mode: only relative (bit 52 = 0) is modelled; see "
        "docs/tmem_open_points.md");
  }
  const uint32_t r = static_cast<uint32_t>(row);
  const uint32_t c = static_cast<uint32_t>(chunk);
  if (d.swizzle == Swizzle::kNone) {
    // docs/semantics.md section 3: 8 rows of one 16-byte chunk form a core matrix
    // (128 contiguous bytes); SBO steps 8-row groups, LBO steps chunks.
    return d.start_address + (r % 8) * 16 + (r / 8) * d.stride_byte_offset +
           c * d.leading_byte_offset;
  }
  uint32_t width = 0, xor_mask = 0, xor_shift = 4;
  switch (d.swizzle) {
    case Swizzle::k128B: width = 128; xor_mask = 7; break;  // Swizzle<3,4,3>
    case Swizzle::k64B: width = 64; xor_mask = 3; break;    // Swizzle<2,4,3>
    case Swizzle::k32B: width = 32; xor_mask = 1; break;    // Swizzle<1,4,3>
    case Swizzle::k128BBase32B:                              // Swizzle<2,5,2>
      width = 128; xor_mask = 3; xor_shift = 5; break;
    case Swizzle::kNone: break;
  }
  const uint32_t per_row = width / 16;
  const uint32_t a = d.start_address + (r % 8) * width + (r / 8) * d.stride_byte_offset +
                     (c / per_row) * d.leading_byte_offset + (c % per_row) * 16;
  //   address bits: ... [9:7] row-in-atom | [6:4] 16-byte chunk | [3:0] byte
  // The chunk field (or the 32-byte unit for 128b_base32b) is XORed with the
  // row-in-atom bits.
  return a ^ (((a >> 7) & xor_mask) << xor_shift);
}

}  // namespace tcgen05
}  // namespace mxpack
