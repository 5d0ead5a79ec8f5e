// Dispatched entry points of the packed layouts (DESIGN.md section 2).
// Temporary: forwards to the scalar reference until the SIMD kernels land.
#include "mxpack/pack.h"

namespace mxpack {

absl::Status Pack(Layout l, absl::Span<const uint8_t> codes,
                  absl::Span<uint8_t> packed, Impl) {
  return scalar::Pack(l, codes, packed);
}
absl::Status Unpack(Layout l, absl::Span<const uint8_t> packed,
                    absl::Span<uint8_t> codes, Impl) {
  return scalar::Unpack(l, packed, codes);
}
absl::Status Decompress(Layout src, absl::Span<const uint8_t> packed,
                        absl::Span<uint8_t> b8x16, Fp6Container c, Impl) {
  return scalar::Decompress(src, packed, b8x16, c);
}
absl::Status Compress(Layout dst, absl::Span<const uint8_t> b8x16,
                      absl::Span<uint8_t> packed, Fp6Container c, Impl) {
  return scalar::Compress(dst, b8x16, packed, c);
}
absl::Status DecodePacked(Layout src, Format elem, Format to,
                          absl::Span<const uint8_t> packed,
                          absl::Span<uint8_t> out, Impl) {
  return scalar::DecodePacked(src, elem, to, packed, out);
}
absl::Status DecodeContainers(Format elem, Format to,
                              absl::Span<const uint8_t> b8x16,
                              absl::Span<uint8_t> out, Fp6Container c, Impl) {
  return scalar::DecodeContainers(elem, to, b8x16, out, c);
}
absl::Status EncodePacked(Format from, Format elem, Layout dst,
                          const EncodePolicy& policy,
                          absl::Span<const uint8_t> in,
                          absl::Span<uint8_t> packed,
                          absl::Span<const uint32_t> rbits, Impl) {
  return scalar::EncodePacked(from, elem, dst, policy, in, packed, rbits);
}

}  // namespace mxpack
