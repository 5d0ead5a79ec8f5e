// Internal: little-endian load/store of 1..8-byte elements, shared by every
// scalar path that walks raw element arrays (conversion, packing, multimem).
#ifndef MXPACK_SRC_UTIL_LITTLE_ENDIAN_H_
#define MXPACK_SRC_UTIL_LITTLE_ENDIAN_H_

#include <cstdint>

namespace mxpack::internal {

// Byte b of the element is bits [8b+7:8b]; compilers fold this to a plain load.
inline uint64_t LoadLE(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int b = 0; b < bytes; ++b) v |= uint64_t{p[b]} << (8 * b);
  return v;
}

inline void StoreLE(uint8_t* p, int bytes, uint64_t v) {
  for (int b = 0; b < bytes; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_UTIL_LITTLE_ENDIAN_H_
