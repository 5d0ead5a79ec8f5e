// Byte-plane tables of the narrow -> bf16 / f16 decodes, built once from the
// scalar reference, for the byte-permute decoder in convert-inl.h.
#ifndef MXPACK_SRC_CONVERT_DECODE_TABLE_H_
#define MXPACK_SRC_CONVERT_DECODE_TABLE_H_

#include <cstdint>

#include "mxpack/format.h"

namespace mxpack::internal {

// The 16-bit result of decoding each byte value c: lo[c] its low byte, hi[c]
// its high byte. Bytes that are not codes of the format (rejected before any
// kernel runs) map to 0.
struct DecodeTable16 {
  alignas(64) uint8_t lo[256];
  alignas(64) uint8_t hi[256];
};

// The table of `from` (a narrow format) -> `to` (kBF16 or kF16) with or
// without relu (docs/semantics.md section 1: exact, NaN canonical). Built on
// first use by scalar::Convert, so it is right by construction; thread-safe.
const DecodeTable16& NarrowDecodeTable16(Format from, Format to, bool relu);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_CONVERT_DECODE_TABLE_H_
