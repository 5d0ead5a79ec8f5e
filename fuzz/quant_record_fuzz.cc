// Fuzzer of the JSON quantization records that mxpack checkpoints keep in the
// safetensors __metadata__ ("mxpack.tensor.NAME" -> JSON object, read with
// nlohmann::json): arbitrary text as a record never crashes
// ListQuantizedTensors, QuantizedTensorView, Inspect* or DequantizeModel, and
// an accepted record names tensors that exist with the sizes its shape
// implies. The checkpoint beside the record has small tensors named as the
// records usually name them.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_input.h"
#include "mxpack/model.h"
#include "mxpack/safetensors.h"

namespace {

using mxpack::fuzz::Check;

// Tensors of a small checkpoint (shape 1 x 32 / 2 x 32 / 128 x 64 records).
std::vector<uint8_t> Checkpoint() {
  using namespace mxpack;
  static const std::vector<uint8_t> bytes(128 * 64, 0x3C);
  const absl::Span<const uint8_t> b(bytes);
  std::vector<StTensorOut> t = {
      {"w.qdata", StDtype::kU8, {16}, b.subspan(0, 16)},
      {"w.scales", StDtype::kU8, {1}, b.subspan(0, 1)},
      {"w.tscale", StDtype::kF32, {}, b.subspan(0, 4)},
      {"x.qdata", StDtype::kU8, {128, 32}, b.subspan(0, 128 * 32)},
      {"x.scales", StDtype::kU8, {512}, b.subspan(0, 512)},
      {"y", StDtype::kU8, {64}, b.subspan(0, 64)},
  };
  absl::StatusOr<std::vector<uint8_t>> f = SerializeSafetensors(t, {});
  Check(f.ok(), "the checkpoint serializes");
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxpack;
  if (size > 4096) return 0;
  static const std::vector<uint8_t> file = Checkpoint();
  static const absl::StatusOr<SafetensorsView> parsed = ParseSafetensors(file);
  Check(parsed.ok(), "the checkpoint parses");
  absl::StatusOr<SafetensorsView> v = parsed;
  const std::string record(reinterpret_cast<const char*>(data), size);
  v->metadata[std::string(kModelTensorKeyPrefix) + "w"] = record;
  absl::StatusOr<std::vector<QuantizedTensorInfo>> list =
      ListQuantizedTensors(*v);
  // Inspect* and DequantizeModel read the records with ListQuantizedTensors
  // first; past a rejected record they have nothing more to check.
  if (!list.ok()) return 0;
  for (const QuantizedTensorInfo& q : *list) {
    Check(v->Find(q.qdata) != nullptr && v->Find(q.scales) != nullptr,
          "an accepted record names existing tensors", record);
    (void)QuantizedTensorView(*v, q);
  }
  (void)InspectText(*v);
  (void)InspectJson(*v);
  DequantizeModelOptions o;
  o.threads = 1;
  (void)DequantizeModel(*v, o);
  return 0;
}
