// Internal: the interface of a checkpoint export scheme (one serving stack's
// on-disk convention) and the table of schemes. Adding a stack means one
// scheme_<name>.cc file and one line in schemes.cc.
#ifndef MXPACK_SRC_CHECKPOINT_SCHEME_H_
#define MXPACK_SRC_CHECKPOINT_SCHEME_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mxpack/model.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"
#include "nlohmann/json.hpp"
#include "src/util/thread_pool.h"

namespace mxpack::internal {

using Json = nlohmann::json;

// A selected weight as the schemes see it: `experts` stacked matrices of
// [rows, cols] = [output features, input features] (experts == 1 for a 2-D
// tensor, E for a fused [E, out, in] expert tensor).
struct WeightShape {
  size_t experts = 1;
  size_t rows = 0;
  size_t cols = 0;
  bool stacked = false;  // the input was 3-D
};

// Everything a scheme needs to quantize one tensor.
struct SchemeJob {
  const StTensorInfo* info = nullptr;
  absl::Span<const uint8_t> bytes;  // the input tensor
  Format from = Format::kF32;       // f32, bf16 or f16
  WeightShape shape;
  MxFormat format = MxFormat::kNvfp4;
  // NVFP4: the amax of the tensor's fused group, one per expert (the global
  // scale is a function of it, shared by the group).
  std::vector<float> group_amax;
  const CheckpointOptions* options = nullptr;
};

// A quantized tensor found in a checkpoint, with the tensors it consumes and
// its dequantized value (f32) computed on demand.
struct FoundQuantized {
  std::string name;                 // the tensor it replaces
  std::string scheme;               // "compressed-tensors", "mxpack", ...
  std::string format;               // "nvfp4", "mxfp4", ...
  std::vector<uint64_t> shape;      // dequantized shape
  StDtype dtype = StDtype::kBF16;   // dequantized dtype by default
  std::vector<std::string> parts;   // consumed tensor names
  // The parts' entries in the view Find was given (same order), so that
  // Dequantize, called once per row range, does not search for them again.
  std::vector<const StTensorInfo*> part_info;

  // Part i of view `v`: part_info[i] where Find set it, else found by name.
  const StTensorInfo* Part(const SafetensorsView& v, size_t i) const {
    return i < part_info.size() ? part_info[i] : v.Find(parts[i]);
  }
};

class Scheme {
 public:
  virtual ~Scheme() = default;
  virtual absl::string_view name() const = 0;
  virtual std::vector<MxFormat> formats() const = 0;
  virtual MxFormat default_format() const = 0;
  // Empty when the scheme can store the tensor, else why not (e.g. the input
  // dimension is not a multiple of the block).
  virtual std::string Unsupported(const WeightShape& s, MxFormat f) const = 0;
  // The output tensors of one quantized input tensor, in order.
  virtual std::vector<PlannedOutput> Outputs(const StTensorInfo& t,
                                             const WeightShape& s,
                                             MxFormat f,
                                             const CheckpointOptions& o) const = 0;
  // Whether Quantize needs SchemeJob::group_amax (an amax pass over every
  // shard before the first tensor is quantized).
  virtual bool NeedsGroupAmax(MxFormat f) const = 0;
  // Whether Quantize adds entries to `metadata`: the driver then knows an
  // output file's header only after its last tensor, and holds the file's
  // tensors until then instead of writing each as it is quantized.
  virtual bool QuantizeAddsMetadata() const { return false; }
  // Whether Quantize writes every byte of `outs`: the driver then leaves the
  // buffers uninitialized instead of zero-filling them first.
  virtual bool WritesEveryByte() const { return false; }
  // Quantizes into `outs` (one buffer per Outputs() entry, sized to it).
  // `metadata` receives per-file metadata entries (mxpack records).
  virtual absl::Status Quantize(const SchemeJob& job, ThreadPool& pool,
                                absl::Span<const absl::Span<uint8_t>> outs,
                                std::map<std::string, std::string>& metadata) const = 0;
  // config.json's "quantization_config" (null: none) and extra files of the
  // output directory (name -> contents). `ignored` lists the modules left
  // unquantized that a loader must know about, sorted.
  virtual Json QuantizationConfig(MxFormat f,
                                  const std::vector<std::string>& ignored) const = 0;
  virtual std::map<std::string, std::string> ExtraFiles(
      MxFormat /*f*/, const std::vector<std::string>& /*ignored*/) const {
    return {};
  }
  // The scheme's quantized tensors in one file, recognized by names, dtypes
  // and shapes (schemes with metadata records return none here).
  virtual std::vector<FoundQuantized> Find(const SafetensorsView& /*v*/) const {
    return {};
  }
  // The f32 value of a found tensor as the stack's own dequantizer computes
  // it before its final cast, rows [first_row, first_row + out.size() /
  // cols) of it (a row: one run of the last dimension, cols = q.shape.back();
  // out.size() a whole number of rows). Any split of the rows gives the
  // values of the whole, so callers may dequantize row ranges in parallel.
  virtual absl::Status Dequantize(const SafetensorsView& /*v*/,
                                  const FoundQuantized& /*q*/,
                                  uint64_t /*first_row*/,
                                  absl::Span<float> /*out*/) const {
    return absl::UnimplementedError("dequantize");
  }
  // Row ranges that start at a multiple of this many rows (and span a
  // multiple of it) are the fastest to dequantize; any range is correct.
  virtual uint64_t DequantizeRowGrain() const { return 1; }
};

// The rows of a found tensor (its elements over its last dimension; 0 for
// an empty one) and whether [first_row, first_row + out_elements / cols)
// is a whole-row range inside it, for Scheme::Dequantize.
uint64_t FoundRows(const FoundQuantized& q);
absl::Status CheckRowRange(const FoundQuantized& q, uint64_t first_row,
                           size_t out_elements);

// The table.
const std::vector<const Scheme*>& Schemes();
// The scheme called `name`, or an error listing the schemes.
absl::StatusOr<const Scheme*> FindScheme(absl::string_view name);

const Scheme* CompressedTensorsScheme();
const Scheme* ModelOptScheme();
const Scheme* GptOssScheme();
const Scheme* MxpackScheme();

// e2m1 nibble of a scaled weight q as compressed-tensors (cast_to_fp4, then
// the sign bit from torch.sign) and ModelOpt (_cast_fp4: sign from q < 0)
// write it: round to nearest even, saturate at 6; a negative q that rounds to
// zero keeps its sign (0x8), q = -0.0 gives 0x0.
uint8_t E2m1Nibble(float q);

// Every scheme's quantized tensors in one file (Scheme::Find of each).
std::vector<FoundQuantized> FindQuantized(const SafetensorsView& v);

// Scalar helpers shared by the schemes.
// x rounded to `w` (f32, bf16 or f16) with rn, overflow to +-Inf: what torch
// does when an operation on `w` tensors computes in f32 and stores `w`.
float RoundToDtype(Format w, float x);
// Reads element i of a f32 / bf16 / f16 array as f32.
float LoadAsF32(Format from, const uint8_t* p, size_t i);

// For the schemes' element-by-element dequantizers: the f32 value of every
// e2m1 code (16 entries) and of every e4m3 byte (256), scalar::DecodeToF32's
// values; and 2^(c - 127) in f64 for every E8M0 byte c (255: 2^128), so that
// for an f32 x, x * E8m0Pow2()[c] is exact: std::ldexp(double(x), c - 127).
const float* E2m1Values();
const float* E4m3Values();
const double* E8m0Pow2();
// o[j] = f32(std::ldexp(double(o[j]), c - 127)) for j < n (an MX block
// scaled by E8M0 code c). For c < 255 one f32 multiply by 2^(c - 127) (an
// f32, subnormal for c = 0), whose exact product rounded once is the same
// value; c = 255 (2^128, no f32) multiplies in f64. Needs DAZ off (the
// library's environment).
void ScaleByE8m0(float* o, size_t n, uint8_t c);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_CHECKPOINT_SCHEME_H_
