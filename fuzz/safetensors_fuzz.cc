// safetensors parser fuzzer: arbitrary bytes never crash the parser, the
// quantization-record reader or dequantize-model; every accepted file
// re-serializes to a file that parses to the same tensors and metadata.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "mxpack/model.h"
#include "mxpack/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxpack;
  absl::StatusOr<SafetensorsView> v = ParseSafetensors({data, size});
  if (!v.ok()) return 0;
  std::vector<StTensorOut> out;
  for (const StTensorInfo& t : v->tensors) out.push_back({t.name, t.dtype, t.shape, v->Bytes(t)});
  absl::StatusOr<std::vector<uint8_t>> again = SerializeSafetensors(out, v->metadata);
  if (!again.ok()) std::abort();
  absl::StatusOr<SafetensorsView> w = ParseSafetensors(*again);
  if (!w.ok() || w->metadata != v->metadata || w->tensors.size() != v->tensors.size()) {
    std::abort();
  }
  for (const StTensorInfo& t : v->tensors) {
    const StTensorInfo* u = w->Find(t.name);
    if (u == nullptr || u->dtype != t.dtype || u->shape != t.shape ||
        !(w->Bytes(*u) == v->Bytes(t))) {
      std::abort();
    }
  }
  // Quantization records: errors are fine, crashes are not. Output memory is
  // bounded by the input (at most 8 f32 bytes per qdata byte).
  DequantizeModelOptions o;
  o.threads = 1;
  (void)DequantizeModel(*v, o);
  (void)InspectText(*v);
  return 0;
}
