// safetensors parser fuzzer: arbitrary bytes never crash the parser, the
// quantization-record reader, dequantize-model or inspect; every accepted
// file re-serializes to a file that parses to the same tensors and metadata.
// The input is used twice: as a raw file, and as a recipe that writes a
// well-formed file (header length, JSON header with every dtype name the
// format knows or mxpack does not: F8_E8M0, F4, F6_E3M2, F6_E2M3, C64, ...,
// shapes with huge or odd dimensions, consistent or perturbed data_offsets,
// __metadata__ with quantization records) and a data buffer, so the checks
// behind the JSON syntax are reached often.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fuzz/fuzz_input.h"
#include "mxpack/model.h"
#include "mxpack/safetensors.h"

namespace {

using mxpack::fuzz::Check;
using mxpack::fuzz::Reader;

void CheckFile(absl::Span<const uint8_t> file) {
  using namespace mxpack;
  absl::StatusOr<SafetensorsView> v = ParseSafetensors(file);
  if (!v.ok()) return;
  // The reader accepts what the reference implementation accepts, the writer
  // is stricter about names (non-empty): such files are not re-serialized.
  bool writable = true;
  for (const StTensorInfo& t : v->tensors) writable &= !t.name.empty();
  std::vector<StTensorOut> out;
  for (const StTensorInfo& t : v->tensors)
    out.push_back({t.name, t.dtype, t.shape, v->Bytes(t)});
  absl::StatusOr<std::vector<uint8_t>> again =
      SerializeSafetensors(out, v->metadata);
  Check(again.ok() == writable,
        "an accepted file with named tensors re-serializes",
        std::string(again.status().message()));
  if (again.ok()) {
    absl::StatusOr<SafetensorsView> w = ParseSafetensors(*again);
    Check(
        w.ok() && w->metadata == v->metadata &&
            w->tensors.size() == v->tensors.size(),
        "the re-serialized file parses to the same metadata and tensor count");
    for (const StTensorInfo& t : v->tensors) {
      const StTensorInfo* u = w->Find(t.name);
      Check(u != nullptr && u->dtype == t.dtype && u->shape == t.shape &&
                w->Bytes(*u) == v->Bytes(t),
            "the re-serialized file has the same tensor", t.name);
    }
  }
  for (const StTensorInfo& t : v->tensors) {
    absl::StatusOr<StDtype> d = ParseStDtype(StDtypeName(t.dtype));
    Check(d.ok() && *d == t.dtype, "dtype names round-trip", t.name);
  }
  // Quantization records: errors are fine, crashes are not. Output memory is
  // bounded by the input (at most 8 f32 bytes per qdata byte).
  DequantizeModelOptions o;
  o.threads = 1;
  (void)DequantizeModel(*v, o);
  (void)InspectText(*v);
  (void)InspectJson(*v);
}

const char* const kDtypes[] = {
    "BOOL",    "U8",      "I8",   "U16",     "I16",        "F16", "BF16",
    "U32",     "I32",     "F32",  "U64",     "I64",        "F64", "F8_E4M3",
    "F8_E5M2", "F8_E8M0", "F4",   "F6_E3M2", "F6_E2M3",    "C64", "F8_E4M3FNUZ",
    "f32",     "",        "F32 ", "UINT8",   "F8_E5M2FNUZ"};
const char* const kNames[] = {"w",       "layer.0.weight", "__metadata__", "",
                              "w.qdata", "w.scales",       "w.tscale",     "b",
                              "é",       "a\\\"b"};
const char* const kDims[] = {"0",
                             "1",
                             "2",
                             "3",
                             "7",
                             "16",
                             "32",
                             "64",
                             "4294967296",
                             "9223372036854775808",
                             "18446744073709551615",
                             "18446744073709551616",
                             "-1",
                             "1.5",
                             "\"3\"",
                             "null",
                             "1e3"};
const char* const kRecords[] = {
    R"({"format":"mxfp4","element_layout":"codes","scale_layout":"linear","layout":"dense","scale_mode":"floor","dtype":"F32","shape":[1,32],"qdata":"w.qdata","scales":"w.scales"})",
    R"({"format":"nvfp4","element_layout":"dense4","scale_layout":"tcgen05","layout":"tcgen05","scale_mode":"even","dtype":"BF16","shape":[128,64],"qdata":"w.qdata","scales":"w.scales","tscale":"w.tscale"})",
    R"({"format":"mxfp8_e4m3","element_layout":"codes","scale_layout":"linear","layout":"dense","scale_mode":"rceil","dtype":"F16","shape":[2,32],"qdata":"w","scales":"b"})",
    R"({"format":"mxfp6_e2m3","element_layout":"b6x16_p32","scale_layout":"linear","layout":"dense","scale_mode":"ceil","dtype":"F32","shape":[18446744073709551615,32],"qdata":"w","scales":"b"})",
    R"({"shape":[-1,2.5]})",
    R"([1,2,3])",
    R"({"format":7})",
    R"(not json)",
    R"([[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]])",
};

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::vector<uint8_t> RecipeFile(Reader& r) {
  std::string header = "{";
  bool first = true;
  auto comma = [&] {
    if (!first) header += ",";
    first = false;
  };
  const int tensors = r.Byte() % 5;
  uint64_t offset = 0;
  for (int i = 0; i < tensors; ++i) {
    const uint8_t how = r.Byte();
    const std::string dtype = r.Pick(kDtypes);
    std::string name = (how & 1) ? r.Text(8) : r.Pick(kNames);
    comma();
    header +=
        JsonString(name) + ":{\"dtype\":" + JsonString(dtype) + ",\"shape\":[";
    const int rank = r.Byte() % 5;
    uint64_t elements = 1;
    bool exact = true;
    for (int d = 0; d < rank; ++d) {
      const uint8_t pick = r.Byte();
      // Mostly small dimensions, so that the offsets can be consistent.
      const std::string dim =
          (pick & 0x80) ? kDims[pick % (sizeof(kDims) / sizeof(kDims[0]))]
                        : std::to_string(pick % 9);
      if (d) header += ",";
      header += dim;
      if (pick & 0x80)
        exact = false;
      else
        elements *= pick % 9;
    }
    absl::StatusOr<mxpack::StDtype> known = mxpack::ParseStDtype(dtype);
    const uint64_t bytes =
        exact ? elements * (known.ok() ? mxpack::StDtypeSize(*known) : 1) : 0;
    uint64_t begin = offset, end = offset + bytes;
    switch ((how >> 1) % 8) {  // perturbations of data_offsets
      case 1:
        ++end;
        break;
      case 2:
        std::swap(begin, end);
        break;
      case 3:
        end = ~uint64_t{0};
        break;
      case 4:
        begin = end = r.U64();
        break;
      default:
        break;
    }
    offset = end;
    if ((how >> 4) % 8 == 1) {
      header += "],\"data_offsets\":[-1,2]";
    } else if ((how >> 4) % 8 == 2) {
      header += "],\"data_offsets\":[0]";
    } else if ((how >> 4) % 8 == 3) {
      header += "]";  // no data_offsets
    } else {
      header += absl::StrFormat("],\"data_offsets\":[%d,%d]", begin, end);
    }
    if ((how >> 4) % 8 == 4) header += ",\"extra\":1";
    header += "}";
  }
  const uint8_t meta = r.Byte();
  if (meta % 4 != 0) {
    comma();
    header += "\"__metadata__\":{";
    if (meta % 4 == 2) {
      header += "\"format\":\"pt\",\"mxpack.tensor.w\":" +
                JsonString(r.Pick(kRecords));
    } else if (meta % 4 == 3) {
      header += "\"n\":1";  // not a string
    } else {
      header += "\"k\":" + JsonString(r.Text(8));
    }
    header += "}";
  }
  header += "}";
  header.append(r.Byte() % 8, ' ');
  uint64_t header_len = header.size();
  if (r.Byte() % 16 == 0) header_len += r.Byte() - 128;  // a wrong length field
  std::string file;
  for (int i = 0; i < 8; ++i) file += static_cast<char>(header_len >> (8 * i));
  file += header;
  // The data buffer: the offsets' total when small, padded with the rest of
  // the input; sometimes one byte short or long.
  size_t data = offset <= 4096 ? offset : r.n;
  const uint8_t adjust = r.Byte() % 8;
  if (adjust == 1 && data > 0) --data;
  if (adjust == 2) ++data;
  for (size_t i = 0; i < data; ++i) file += static_cast<char>(r.Byte());
  return std::vector<uint8_t>(file.begin(), file.end());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CheckFile({data, size});
  Reader r{data, size};
  const std::vector<uint8_t> file = RecipeFile(r);
  CheckFile(file);
  return 0;
}
