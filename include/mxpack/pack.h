// Packed layouts of DESIGN.md section 2 and the tcgen05.cp decompression
// (b4x16_p64 / b6x16_p32 -> b8x16), scalar reference and dispatched SIMD.
#ifndef MXPACK_PACK_H_
#define MXPACK_PACK_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/scalar.h"

namespace mxpack {

enum class Layout : uint8_t {
  kDense4,    // 2 elements per byte, element 2i in bits [3:0].
  kDense6,    // 4 elements per 3 bytes (24-bit LE word, element j in [6j+5:6j]).
  kB4x16P64,  // 16 elements -> 8 bytes dense4 + 8 bytes padding (TMA 16U4_ALIGN16B).
  kB6x16P32,  // 16 elements -> 12 bytes dense6 + 4 bytes padding (TMA 16U6_ALIGN16B).
};

// Placement of a 6-bit code inside its 8-bit tcgen05.cp container (open in
// DESIGN.md section 2). 4-bit codes always sit in bits [5:2].
enum class Fp6Container : uint8_t {
  kLow6,  // 00xxxxxx: code in bits [5:0] (default; PTX mma / TMA text).
  kMid6,  // 0xxxxxx0: code in bits [6:1] (one CuTe DSL example).
};

absl::string_view LayoutName(Layout l);
absl::StatusOr<Layout> ParseLayout(absl::string_view name);
absl::string_view Fp6ContainerName(Fp6Container c);
absl::StatusOr<Fp6Container> ParseFp6Container(absl::string_view name);  // low6|mid6

// Bits per element (4 or 6) of a layout.
int LayoutElementBits(Layout l);
// Bytes needed for `n` elements; padded layouts round n up to whole groups of
// 16 (the final group is padded with zero codes), dense4/dense6 to whole
// bytes / 3-byte groups.
size_t PackedBytes(Layout l, size_t n);

// codes: one code per byte (upper bits must be zero: an error names the first
// offending index). packed.size() must equal PackedBytes(l, codes.size()).
absl::Status Pack(Layout l, absl::Span<const uint8_t> codes,
                  absl::Span<uint8_t> packed, Impl impl = {});
// Inverse of Pack: codes.size() elements are read from `packed`
// (packed.size() must equal PackedBytes(l, codes.size())); padding ignored.
absl::Status Unpack(Layout l, absl::Span<const uint8_t> packed,
                    absl::Span<uint8_t> codes, Impl impl = {});

// tcgen05.cp decompression: src is kB4x16P64 or kB6x16P32; packed.size() must
// be a multiple of 16 and b8x16.size() == packed.size(). Padding is ignored.
absl::Status Decompress(Layout src, absl::Span<const uint8_t> packed,
                        absl::Span<uint8_t> b8x16,
                        Fp6Container c = Fp6Container::kLow6, Impl impl = {});
// Inverse: containers with bits outside the payload are an error naming the
// offending index. Writes zero padding.
absl::Status Compress(Layout dst, absl::Span<const uint8_t> b8x16,
                      absl::Span<uint8_t> packed,
                      Fp6Container c = Fp6Container::kLow6, Impl impl = {});

}  // namespace mxpack

#endif  // MXPACK_PACK_H_
