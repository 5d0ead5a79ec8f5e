// Reading and writing safetensors files: an 8-byte little-endian header
// length N, N bytes of JSON header, then the raw little-endian tensor bytes.
//
// The header is a JSON object mapping each tensor name to
//   {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}
// (offsets relative to the start of the byte buffer) plus an optional
// "__metadata__" object of string -> string. ParseSafetensors enforces what
// the reference implementation (huggingface/safetensors) enforces: a known
// dtype, shapes of non-negative integers, end - begin == product(shape) *
// dtype size, offsets inside the buffer, and tensors that tile the buffer
// exactly (no overlap, no hole, no trailing bytes). Every violation is an
// InvalidArgument error naming the tensor, the expected and the actual value.
//
// WriteSafetensors writes to a temporary file next to PATH and renames it
// into place, so a failure or an interruption never leaves a partial output
// file; PATH must be a new name or a regular file (a symbolic link is written
// through to its target; docs/cli.md, "Output files"). Tensors are stored ordered by element size
// (largest first, otherwise in the given order) so every tensor is aligned to
// its element size; the header is padded with spaces to a multiple of 8 bytes.
#ifndef MXPACK_SAFETENSORS_H_
#define MXPACK_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mxpack/format.h"

namespace mxpack {

// The safetensors dtypes (names as in the file, e.g. "F32", "F8_E4M3"): every
// dtype the reference implementation reads and writes, the sub-byte F4 (4 bits)
// and F6_E2M3 / F6_E3M2 (6 bits) included. A sub-byte tensor's element count
// times its bit width must be a multiple of 8 (its byte size is bits / 8).
enum class StDtype : uint8_t {
  kBool, kU8, kI8, kU16, kI16, kF16, kBF16, kU32, kI32, kF32,
  kU64, kI64, kF64, kF8E4M3, kF8E5M2, kF8E8M0, kF4, kF6E2M3, kF6E3M2, kC64,
};

absl::string_view StDtypeName(StDtype d);
// Case-sensitive, as in the format. Unknown names are an error listing the
// valid ones.
absl::StatusOr<StDtype> ParseStDtype(absl::string_view name);
size_t StDtypeBits(StDtype d);  // bits per element (4 for F4, 6 for F6_*)
// Bytes per element, rounded up (1 for F4 and F6_*): the alignment unit.
size_t StDtypeSize(StDtype d);
// Bytes of `elements` elements, or nullopt when they do not end on a byte
// boundary (a sub-byte dtype) or overflow 64 bits.
std::optional<uint64_t> StDtypeBytes(StDtype d, uint64_t elements);
// The mxpack format of a float dtype (F32, F16, BF16, F64, F8_E4M3, F8_E5M2).
std::optional<Format> StDtypeFormat(StDtype d);

// Largest header accepted (the reference implementation's limit).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u << 20;

struct StTensorInfo {
  std::string name;
  StDtype dtype = StDtype::kU8;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // data_offsets, relative to the byte buffer
  uint64_t end = 0;

  uint64_t num_elements() const;  // product of shape (1 for rank 0)
  uint64_t num_bytes() const { return end - begin; }
};

// A parsed file whose tensor bytes are spans into caller-owned memory (e.g. a
// MappedFile); it must outlive the view.
struct SafetensorsView {
  std::vector<StTensorInfo> tensors;  // in order of data offset
  std::map<std::string, std::string> metadata;
  absl::Span<const uint8_t> data;  // the byte buffer after the header

  const StTensorInfo* Find(absl::string_view name) const;
  absl::Span<const uint8_t> Bytes(const StTensorInfo& t) const {
    return data.subspan(t.begin, t.end - t.begin);
  }
};

// Parses and validates a whole file held in memory.
absl::StatusOr<SafetensorsView> ParseSafetensors(absl::Span<const uint8_t> file);

// A read-only memory-mapped file (empty files map to an empty span).
class MappedFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

// One tensor to write; `data` must stay valid until the write returns.
struct StTensorOut {
  std::string name;
  StDtype dtype = StDtype::kU8;
  std::vector<uint64_t> shape;
  absl::Span<const uint8_t> data;
};

// Checks names (non-empty, unique, not "__metadata__") and byte sizes, and
// returns the complete header: 8-byte length, then the padded JSON.
absl::StatusOr<std::string> SafetensorsHeader(
    const std::vector<StTensorOut>& tensors,
    const std::map<std::string, std::string>& metadata);

// The whole file in memory.
absl::StatusOr<std::vector<uint8_t>> SerializeSafetensors(
    const std::vector<StTensorOut>& tensors,
    const std::map<std::string, std::string>& metadata);

// Writes the file (temporary name + rename; no partial output on failure).
absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<StTensorOut>& tensors,
                              const std::map<std::string, std::string>& metadata);

}  // namespace mxpack

#endif  // MXPACK_SAFETENSORS_H_
