// safetensors reader (validating parser over a memory-mapped file) and writer.
#include "mxpack/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "src/checkpoint/checkpoint_io.h"
#include "src/util/output_file.h"

namespace mxpack {
namespace {

using Json = nlohmann::json;

struct DtypeEntry {
  StDtype dtype;
  const char* name;
  size_t bits;
};

constexpr DtypeEntry kDtypes[] = {
    {StDtype::kBool, "BOOL", 8},        {StDtype::kU8, "U8", 8},
    {StDtype::kI8, "I8", 8},            {StDtype::kU16, "U16", 16},
    {StDtype::kI16, "I16", 16},         {StDtype::kF16, "F16", 16},
    {StDtype::kBF16, "BF16", 16},       {StDtype::kU32, "U32", 32},
    {StDtype::kI32, "I32", 32},         {StDtype::kF32, "F32", 32},
    {StDtype::kU64, "U64", 64},         {StDtype::kI64, "I64", 64},
    {StDtype::kF64, "F64", 64},         {StDtype::kF8E4M3, "F8_E4M3", 8},
    {StDtype::kF8E5M2, "F8_E5M2", 8},   {StDtype::kF8E8M0, "F8_E8M0", 8},
    {StDtype::kF4, "F4", 4},            {StDtype::kF6E2M3, "F6_E2M3", 6},
    {StDtype::kF6E3M2, "F6_E3M2", 6},   {StDtype::kC64, "C64", 64},
};

const DtypeEntry& Entry(StDtype d) {
  for (const DtypeEntry& e : kDtypes) {
    if (e.dtype == d) return e;
  }
  return kDtypes[1];
}

std::string ShapeString(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status Invalid(const std::string& msg) {
  return absl::InvalidArgumentError(absl::StrCat("safetensors: ", msg));
}

// product(shape), or nullopt on uint64 overflow.
std::optional<uint64_t> Elements(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d) return std::nullopt;
    n *= d;
  }
  return n;
}

const char* JsonTypeName(const Json& j) { return j.type_name(); }

absl::StatusOr<StTensorInfo> ParseTensorEntry(const std::string& name,
                                              const Json& j, uint64_t data_size) {
  if (!j.is_object()) {
    return Invalid(absl::StrFormat("tensor '%s': expected an object, got %s",
                                   name, JsonTypeName(j)));
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!j.contains(key)) {
      return Invalid(absl::StrFormat("tensor '%s': missing \"%s\"", name, key));
    }
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return Invalid(absl::StrFormat(
          "tensor '%s': unknown field \"%s\"; expected dtype, shape, data_offsets",
          name, key));
    }
  }
  StTensorInfo t;
  t.name = name;
  const Json& dtype = j["dtype"];
  if (!dtype.is_string()) {
    return Invalid(absl::StrFormat("tensor '%s': dtype must be a string, got %s",
                                   name, JsonTypeName(dtype)));
  }
  absl::StatusOr<StDtype> d = ParseStDtype(dtype.get<std::string>());
  if (!d.ok()) {
    return Invalid(absl::StrFormat("tensor '%s': %s", name, d.status().message()));
  }
  t.dtype = *d;
  const Json& shape = j["shape"];
  if (!shape.is_array()) {
    return Invalid(absl::StrFormat(
        "tensor '%s': shape must be an array of non-negative integers, got %s",
        name, JsonTypeName(shape)));
  }
  for (const Json& dim : shape) {
    if (!dim.is_number_unsigned()) {
      return Invalid(absl::StrFormat(
          "tensor '%s': shape must be an array of non-negative integers, got %s",
          name, shape.dump()));
    }
    t.shape.push_back(dim.get<uint64_t>());
  }
  const Json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    return Invalid(absl::StrFormat(
        "tensor '%s': data_offsets must be [begin, end] (non-negative integers), "
        "got %s",
        name, offsets.dump()));
  }
  t.begin = offsets[0].get<uint64_t>();
  t.end = offsets[1].get<uint64_t>();
  if (t.begin > t.end || t.end > data_size) {
    return Invalid(absl::StrFormat(
        "tensor '%s': data_offsets [%d, %d] out of range: expected begin <= end "
        "<= %d (the data section size)",
        name, t.begin, t.end, data_size));
  }
  const std::optional<uint64_t> elements = Elements(t.shape);
  const std::optional<uint64_t> bytes =
      elements.has_value() ? StDtypeBytes(t.dtype, *elements) : std::nullopt;
  if (!bytes.has_value()) {
    return Invalid(absl::StrFormat(
        "tensor '%s': shape %s of %s overflows 64 bits or does not end on a "
        "byte boundary",
        name, ShapeString(t.shape), StDtypeName(t.dtype)));
  }
  if (*bytes != t.end - t.begin) {
    return Invalid(absl::StrFormat(
        "tensor '%s': shape %s of %s needs %d bytes, but data_offsets [%d, %d] "
        "span %d",
        name, ShapeString(t.shape), StDtypeName(t.dtype), *bytes, t.begin, t.end,
        t.end - t.begin));
  }
  return t;
}

}  // namespace

absl::string_view StDtypeName(StDtype d) { return Entry(d).name; }

absl::StatusOr<StDtype> ParseStDtype(absl::string_view name) {
  std::vector<std::string> names;
  for (const DtypeEntry& e : kDtypes) {
    if (name == e.name) return e.dtype;
    names.push_back(e.name);
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown dtype '%s'; expected one of %s", name, absl::StrJoin(names, ", ")));
}

size_t StDtypeBits(StDtype d) { return Entry(d).bits; }

size_t StDtypeSize(StDtype d) { return (Entry(d).bits + 7) / 8; }

std::optional<uint64_t> StDtypeBytes(StDtype d, uint64_t elements) {
  const uint64_t bits = Entry(d).bits;
  if (elements > UINT64_MAX / bits) return std::nullopt;
  if (elements * bits % 8 != 0) return std::nullopt;
  return elements * bits / 8;
}

std::optional<Format> StDtypeFormat(StDtype d) {
  switch (d) {
    case StDtype::kF32:
      return Format::kF32;
    case StDtype::kF16:
      return Format::kF16;
    case StDtype::kBF16:
      return Format::kBF16;
    case StDtype::kF64:
      return Format::kF64;
    case StDtype::kF8E4M3:
      return Format::kE4M3;
    case StDtype::kF8E5M2:
      return Format::kE5M2;
    default:
      return std::nullopt;
  }
}

uint64_t StTensorInfo::num_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

const StTensorInfo* SafetensorsView::Find(absl::string_view name) const {
  for (const StTensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

absl::StatusOr<SafetensorsView> ParseSafetensors(absl::Span<const uint8_t> file) {
  if (file.size() < 8) {
    return Invalid(absl::StrFormat(
        "file is %d bytes; expected at least 8 (the header length)", file.size()));
  }
  uint64_t header_len = 0;
  for (int b = 7; b >= 0; --b) header_len = (header_len << 8) | file[b];
  if (header_len > kMaxSafetensorsHeaderBytes) {
    return Invalid(absl::StrFormat(
        "header length %d exceeds the limit of %d bytes", header_len,
        kMaxSafetensorsHeaderBytes));
  }
  if (header_len > file.size() - 8) {
    return Invalid(absl::StrFormat(
        "header length %d exceeds the %d bytes that follow the length field",
        header_len, file.size() - 8));
  }
  const char* header = reinterpret_cast<const char*>(file.data() + 8);
  if (header_len == 0 || header[0] != '{') {
    return Invalid("header is not a JSON object: expected '{' as its first byte");
  }
  Json j;
  try {
    j = Json::parse(header, header + header_len);
  } catch (const Json::exception& e) {
    return Invalid(absl::StrCat("header is not valid JSON: ", e.what()));
  }
  if (!j.is_object()) {
    return Invalid(absl::StrFormat("header must be a JSON object, got %s",
                                   JsonTypeName(j)));
  }
  SafetensorsView view;
  view.data = file.subspan(8 + header_len);
  const uint64_t data_size = view.data.size();
  for (const auto& [name, value] : j.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) {
        return Invalid(absl::StrFormat(
            "__metadata__ must be an object of strings, got %s", JsonTypeName(value)));
      }
      for (const auto& [key, v] : value.items()) {
        if (!v.is_string()) {
          return Invalid(absl::StrFormat(
              "__metadata__ value of '%s' must be a string, got %s", key,
              JsonTypeName(v)));
        }
        view.metadata.emplace(key, v.get<std::string>());
      }
      continue;
    }
    absl::StatusOr<StTensorInfo> t = ParseTensorEntry(name, value, data_size);
    if (!t.ok()) return t.status();
    view.tensors.push_back(*std::move(t));
  }
  // Tensors must tile [0, data_size): sort by begin (empty tensors first at
  // equal offsets), then each must start where the previous one ended.
  std::stable_sort(view.tensors.begin(), view.tensors.end(),
                   [](const StTensorInfo& a, const StTensorInfo& b) {
                     return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                   });
  uint64_t pos = 0;
  const StTensorInfo* prev = nullptr;
  for (const StTensorInfo& t : view.tensors) {
    if (t.begin < pos) {
      return Invalid(absl::StrFormat(
          "tensors '%s' [%d, %d) and '%s' [%d, %d) overlap", prev->name,
          prev->begin, prev->end, t.name, t.begin, t.end));
    }
    if (t.begin > pos) {
      return Invalid(absl::StrFormat(
          "data bytes [%d, %d) belong to no tensor (before '%s'); expected "
          "tensors to cover the data section without holes",
          pos, t.begin, t.name));
    }
    pos = t.end;
    prev = &t;
  }
  if (pos != data_size) {
    return Invalid(absl::StrFormat(
        "data bytes [%d, %d) at the end of the file belong to no tensor; "
        "expected tensors to cover the data section exactly",
        pos, data_size));
  }
  return view;
}

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrFormat("%s: cannot open for reading: %s", path, std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: not a regular file", path));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return absl::InternalError(
          absl::StrFormat("%s: mmap failed: %s", path, std::strerror(err)));
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (size_ > 0) ::munmap(const_cast<uint8_t*>(data_), size_);
}

namespace {

// The storage order: larger elements first (stable), so each tensor's offset
// is a multiple of its element size.
std::vector<size_t> StorageOrder(const std::vector<StTensorOut>& tensors) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return StDtypeSize(tensors[a].dtype) > StDtypeSize(tensors[b].dtype);
  });
  return order;
}

}  // namespace

namespace internal {

std::vector<uint64_t> SafetensorsDataOffsets(const std::vector<StTensorOut>& tensors) {
  std::vector<uint64_t> offsets(tensors.size());
  uint64_t offset = 0;
  for (size_t i : StorageOrder(tensors)) {
    offsets[i] = offset;
    offset += tensors[i].data.size();
  }
  return offsets;
}

}  // namespace internal

absl::StatusOr<std::string> SafetensorsHeader(
    const std::vector<StTensorOut>& tensors,
    const std::map<std::string, std::string>& metadata) {
  Json j = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    j["__metadata__"] = std::move(m);
  }
  const std::vector<uint64_t> offsets =
      internal::SafetensorsDataOffsets(tensors);
  for (size_t i : StorageOrder(tensors)) {
    const StTensorOut& t = tensors[i];
    if (t.name.empty() || t.name == "__metadata__") {
      return absl::InvalidArgumentError(absl::StrFormat(
          "safetensors: invalid tensor name '%s' (empty or reserved)", t.name));
    }
    if (j.contains(t.name)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("safetensors: duplicate tensor name '%s'", t.name));
    }
    const std::optional<uint64_t> elements = Elements(t.shape);
    const std::optional<uint64_t> bytes =
        elements.has_value() ? StDtypeBytes(t.dtype, *elements) : std::nullopt;
    if (!bytes.has_value() || *bytes != t.data.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "safetensors: tensor '%s': shape %s of %s needs %s bytes, got %d",
          t.name, ShapeString(t.shape), StDtypeName(t.dtype),
          bytes.has_value() ? absl::StrCat(*bytes) : "a whole number of",
          t.data.size()));
    }
    j[t.name] = Json{{"dtype", std::string(StDtypeName(t.dtype))},
                     {"shape", t.shape},
                     {"data_offsets", {offsets[i], offsets[i] + *bytes}}};
  }
  std::string text = j.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = text.size();
  for (int b = 0; b < 8; ++b) out[b] = static_cast<char>(n >> (8 * b));
  return out + text;
}

absl::StatusOr<std::vector<uint8_t>> SerializeSafetensors(
    const std::vector<StTensorOut>& tensors,
    const std::map<std::string, std::string>& metadata) {
  absl::StatusOr<std::string> header = SafetensorsHeader(tensors, metadata);
  if (!header.ok()) return header.status();
  std::vector<uint8_t> out(header->begin(), header->end());
  for (size_t i : StorageOrder(tensors)) {
    out.insert(out.end(), tensors[i].data.begin(), tensors[i].data.end());
  }
  return out;
}

absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<StTensorOut>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  absl::StatusOr<std::string> header = SafetensorsHeader(tensors, metadata);
  if (!header.ok()) return header.status();
  // Temporary file next to the destination, renamed into place; regular
  // files only (src/util/output_file.h).
  absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create(path);
  if (!f.ok()) return f.status();
  if (absl::Status s = (*f)->Write(*header); !s.ok()) return s;
  for (size_t i : StorageOrder(tensors)) {
    if (absl::Status s = (*f)->Write(tensors[i].data); !s.ok()) return s;
  }
  return (*f)->Commit();
}

}  // namespace mxpack
