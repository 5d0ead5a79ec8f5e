// Packed layouts of docs/semantics.md section 2 and the tcgen05.cp decompression
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
// docs/semantics.md section 2). 4-bit codes always sit in bits [5:2].
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

// ---------------------------------------------------------------------------
// Fused decode / encode: element conversion (the dispatched convert kernels)
// and packing in one pass over L1-resident tiles, no intermediate array.

// Element formats a layout can hold: e2m1 for the 4-bit layouts, e2m3 and
// e3m2 for the 6-bit ones. An error names `elem` and the allowed formats.
absl::Status CheckLayoutFormat(Layout l, Format elem);

// Decodes packed elements of format `elem` (see CheckLayoutFormat) to `to`
// (f32, bf16 or f16; raw little-endian). n = out.size() / bytes-per-`to`
// elements are decoded; packed.size() must equal PackedBytes(src, n).
// Padding is ignored.
absl::Status DecodePacked(Layout src, Format elem, Format to,
                          absl::Span<const uint8_t> packed,
                          absl::Span<uint8_t> out, Impl impl = {});

// Decodes tcgen05.cp containers (one per byte, any count; 4-bit codes in bits
// [5:2], 6-bit codes placed as `c` says) of format `elem` to `to` (f32, bf16,
// f16). out.size() must be b8x16.size() * bytes-per-`to`. A container with
// bits outside its payload is an error naming the first offending index;
// nothing is written then.
absl::Status DecodeContainers(Format elem, Format to,
                              absl::Span<const uint8_t> b8x16,
                              absl::Span<uint8_t> out,
                              Fp6Container c = Fp6Container::kLow6,
                              Impl impl = {});

// Quantizes raw little-endian `from` values (f32, bf16, f16 or f64) to `elem`
// under `policy` (all of EncodePolicy; rbits as in scalar::ConvertArray: one
// word per element with Rounding::kRS, empty otherwise) and packs them into
// layout `dst`. n = in.size() / bytes-per-`from`; packed.size() must equal
// PackedBytes(dst, n); the final group is padded with zero codes and padding
// bytes are zero. Nothing is written on error.
absl::Status EncodePacked(Format from, Format elem, Layout dst,
                          const EncodePolicy& policy,
                          absl::Span<const uint8_t> in,
                          absl::Span<uint8_t> packed,
                          absl::Span<const uint32_t> rbits = {},
                          Impl impl = {});

namespace scalar {

// Scalar references ("oracles") of the functions above: same contracts and
// error messages, written element by element for clarity. Impl{kScalar}
// passed to the dispatched functions lands here.
absl::Status Pack(Layout l, absl::Span<const uint8_t> codes,
                  absl::Span<uint8_t> packed);
absl::Status Unpack(Layout l, absl::Span<const uint8_t> packed,
                    absl::Span<uint8_t> codes);
absl::Status Decompress(Layout src, absl::Span<const uint8_t> packed,
                        absl::Span<uint8_t> b8x16,
                        Fp6Container c = Fp6Container::kLow6);
absl::Status Compress(Layout dst, absl::Span<const uint8_t> b8x16,
                      absl::Span<uint8_t> packed,
                      Fp6Container c = Fp6Container::kLow6);
absl::Status DecodePacked(Layout src, Format elem, Format to,
                          absl::Span<const uint8_t> packed,
                          absl::Span<uint8_t> out);
absl::Status DecodeContainers(Format elem, Format to,
                              absl::Span<const uint8_t> b8x16,
                              absl::Span<uint8_t> out,
                              Fp6Container c = Fp6Container::kLow6);
absl::Status EncodePacked(Format from, Format elem, Layout dst,
                          const EncodePolicy& policy,
                          absl::Span<const uint8_t> in,
                          absl::Span<uint8_t> packed,
                          absl::Span<const uint32_t> rbits = {});

// Element i of a packed layout (no bounds checks) and its inverse.
uint8_t GetCode(Layout l, const uint8_t* packed, size_t i);
void SetCode(Layout l, uint8_t* packed, size_t i, uint8_t code);

// The 8-bit tcgen05.cp container of a code of a 4-bit (bits == 4) or 6-bit
// layout, and the mask of bits a container may have set.
uint8_t ToContainer(int bits, uint8_t code, Fp6Container c);
uint8_t ContainerMask(int bits, Fp6Container c);
uint8_t FromContainer(int bits, uint8_t container, Fp6Container c);

}  // namespace scalar

namespace internal {

// Shared argument checks (scalar and SIMD give identical messages).
absl::Status CheckPackArgs(Layout l, size_t codes, size_t packed_bytes);
// `to` is f32/bf16/f16 and out_bytes a whole number n of its elements.
absl::Status CheckDecodeArgs(Format to, size_t out_bytes, size_t* n);
// Everything DecodePacked checks; sets *n to the element count.
absl::Status CheckDecodePackedArgs(Layout src, Format elem, Format to,
                                   size_t packed_bytes, size_t out_bytes,
                                   size_t* n);
// Everything EncodePacked checks; sets *n to the element count.
absl::Status CheckEncodePackedArgs(Format from, Format elem, Layout dst,
                                   const EncodePolicy& policy, size_t in_bytes,
                                   size_t packed_bytes, size_t rbits,
                                   size_t* n);
absl::Status CheckPaddedArgs(Layout l, size_t packed_bytes,
                             size_t b8x16_bytes, bool decompress);
// First index whose byte has a bit outside `mask`, or n if none.
size_t FirstOutside(const uint8_t* p, size_t n, uint8_t mask);
// Error for codes[index] / b8x16[index] having bits outside `mask`.
absl::Status OutsideError(absl::string_view arg, size_t index, uint8_t value,
                          uint8_t mask, absl::string_view what);

}  // namespace internal

}  // namespace mxpack

#endif  // MXPACK_PACK_H_
