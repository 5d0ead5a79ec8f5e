// Checkpoint fuzzer: the first byte picks the target, the rest is its input.
//   0: model.safetensors.index.json text (ParseShardIndex): errors are fine,
//      crashes are not; every accepted shard name is a plain file name.
//   1: a safetensors file: every serving scheme's recognizer (FindQuantized)
//      and dequantizer run on it without crashing or reading out of bounds,
//      and a tensor dequantized in two row ranges equals it dequantized whole.
//   2: config.json text (RewriteConfigJson, with a scheme's
//      quantization_config or none, picked by the next byte): accepted iff
//      it is a JSON object; the output parses to the input with only
//      "quantization_config" replaced or removed.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"
#include "src/checkpoint/checkpoint_io.h"
#include "src/checkpoint/scheme.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxpack;
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  ++data;
  --size;
  if (mode == 0) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    absl::StatusOr<std::map<std::string, std::string>> m = internal::ParseShardIndex(text);
    if (m.ok()) {
      for (const auto& [tensor, shard] : *m) {
        if (shard.empty() || absl::StrContains(shard, "/")) std::abort();
      }
    }
    return 0;
  }
  if (mode == 2) {
    if (size == 0) return 0;
    using internal::Json;
    static const Json* const configs[] = {
        nullptr,
        new Json((*internal::FindScheme("compressed-tensors"))
                     ->QuantizationConfig(MxFormat::kNvfp4, {"lm_head"})),
        new Json((*internal::FindScheme("modelopt"))
                     ->QuantizationConfig(MxFormat::kNvfp4, {"lm_head"}))};
    const Json* qc = configs[data[0] % 3];
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    absl::StatusOr<std::string> out = internal::RewriteConfigJson(text, qc, "config.json");
    Json in = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (out.ok() != in.is_object()) std::abort();
    if (!out.ok()) return 0;
    Json got = Json::parse(*out, nullptr, /*allow_exceptions=*/false);
    if (!got.is_object()) std::abort();
    if (qc == nullptr) {
      in.erase("quantization_config");
    } else {
      in["quantization_config"] = *qc;
    }
    if (got != in) std::abort();
    return 0;
  }
  absl::StatusOr<SafetensorsView> v = ParseSafetensors({data, size});
  if (!v.ok()) return 0;
  // One output buffer for every input: a shape may claim far more elements
  // than the file holds (the dequantizer must refuse it), and zeroing a fresh
  // vector of that size per input would dominate the run.
  constexpr uint64_t kMaxElements = uint64_t{1} << 24;  // bounded memory
  static std::vector<float>* const buffer = new std::vector<float>(kMaxElements);
  static std::vector<float>* const split_buffer =
      new std::vector<float>(kMaxElements);
  for (const internal::FoundQuantized& q : internal::FindQuantized(*v)) {
    uint64_t n = 1;
    for (uint64_t d : q.shape) n = d != 0 && n > kMaxElements / d ? kMaxElements + 1 : n * d;
    if (n > kMaxElements) continue;
    absl::StatusOr<const internal::Scheme*> s = internal::FindScheme(q.scheme);
    if (!s.ok()) std::abort();
    if (!(*s)->Dequantize(*v, q, 0, absl::MakeSpan(buffer->data(), n)).ok())
      continue;
    // Differential: the same bits from two row ranges split at a row picked
    // by the input, as the checkpoint driver's workers dequantize them.
    const uint64_t rows = internal::FoundRows(q),
                   cols = rows == 0 ? 0 : n / rows;
    const uint64_t split =
        rows == 0 ? 0 : (size * 2654435761u + q.name.size()) % (rows + 1);
    float* parts = split_buffer->data();
    if (!(*s)->Dequantize(*v, q, 0, absl::MakeSpan(parts, split * cols)).ok() ||
        !(*s)->Dequantize(
                 *v, q, split,
                 absl::MakeSpan(parts + split * cols, n - split * cols))
             .ok() ||
        std::memcmp(parts, buffer->data(), n * sizeof(float)) != 0) {
      std::abort();
    }
  }
  return 0;
}
