// Quantizing whole checkpoints: safetensors in, MX/NVFP4 safetensors out
// (mxpack quantize-model / dequantize-model / inspect).
//
// Two levels. QuantizeCheckpoint / DequantizeCheckpoint (below) take a file or
// a Hugging Face model directory and export it in a serving stack's scheme
// (compressed-tensors, modelopt, gpt-oss) or mxpack's own; docs/checkpoints.md
// gives every scheme's on-disk convention and its sources. QuantizeModel /
// DequantizeModel are the mxpack scheme's in-memory engine for one file:
//
// QuantizeModel quantizes every 2-D F32/F16/BF16 tensor whose name matches
// `include` and not `exclude` (ECMAScript regexes searched anywhere in the
// name; or those `select` accepts, 3-D ones included) with QuantizeMx along
// its rows: shape [rows, cols] = [output features, input features], blocks of
// 32 (16 for NVFP4) along cols. Every other tensor is copied byte for byte. A
// quantized tensor NAME becomes
//   NAME.qdata   element bytes, shape [rows, MxShape::element_row_bytes()];
//                dtype F8_E4M3 / F8_E5M2 for MXFP8, U8 otherwise
//   NAME.scales  U8 scale bytes: linear [rows, blocks_per_row], or
//                tcgen05 [ceil(rows/128), ceil(blocks_per_row/4), 512]
//   NAME.tscale  NVFP4 only: F32 [1], the tensor scale
// and the file's __metadata__ gets "mxpack.version" and, per tensor,
// "mxpack.tensor.NAME" = a JSON object string:
//   {"format": "mxfp4", "layout": "dense", "element_layout": "dense4",
//    "scale_layout": "linear", "scale_mode": "floor", "block_size": 32,
//    "dtype": "F32", "shape": [rows, cols], "qdata": "NAME.qdata",
//    "scales": "NAME.scales", ["tscale": "NAME.tscale",]
//    ["tensor_shape": [E, out, in],] "mxpack_version": "0.1.0"}
// Metadata already in the input is kept.
//
// Layouts (--layout):
//   dense    (default) element layout codes (fp8) / dense6 (fp6) / dense4
//            (fp4), linear scales: the smallest file, and the global-memory
//            layout every TMA data type loads (docs/semantics.md section 2).
//   tcgen05  codes (fp8) / b6x16_p32 (fp6) / b4x16_p64 (fp4) elements and the
//            tcgen05 block-scaled-MMA scale tiles: what TMA + tcgen05.cp load.
//
// Work is split into (tensor, 128-row chunk) items on a thread pool; chunk
// boundaries depend only on the shapes, so the output bytes and the report
// (apart from timings) are identical for every thread count.
//
// DequantizeModel inverts it: every tensor described by "mxpack.tensor.*"
// metadata is rebuilt with DequantizeMx in its original dtype (or `to`), the
// other tensors are copied, and the mxpack.* metadata keys are dropped.
#ifndef MXPACK_MODEL_H_
#define MXPACK_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"

namespace mxpack {

enum class ModelLayout : uint8_t { kDense, kTcgen05 };

absl::string_view ModelLayoutName(ModelLayout l);  // "dense", "tcgen05"
absl::StatusOr<ModelLayout> ParseModelLayout(absl::string_view name);
ElementLayout ModelElementLayout(MxFormat f, ModelLayout l);
ScaleLayout ModelScaleLayout(ModelLayout l);

// Metadata keys.
inline constexpr char kModelVersionKey[] = "mxpack.version";
inline constexpr char kModelTensorKeyPrefix[] = "mxpack.tensor.";

struct ModelProgress {
  size_t tensors_done = 0;
  size_t tensors_total = 0;
  uint64_t bytes_done = 0;  // input bytes processed
  uint64_t bytes_total = 0;
  double seconds = 0;
};

struct QuantizeModelOptions {
  MxFormat format = MxFormat::kMxfp4;
  std::optional<ScaleMode> scale_mode;  // unset: DefaultScaleMode(format)
  ModelLayout layout = ModelLayout::kDense;
  std::string include;  // empty: every name
  std::string exclude;  // empty: none
  // When set, decides instead of include/exclude which tensors are quantized
  // (checkpoint selection, below); 3-D tensors it accepts are quantized as
  // [shape[0] * shape[1], shape[2]] and recorded with their original shape.
  std::function<bool(const StTensorInfo&)> select;
  size_t threads = 0;   // 0: all cores
  // Compute MxErrorStats per tensor (ComputeMxErrorStats: an f64
  // dequantization of every element, in the same pass over each chunk).
  bool error_stats = false;
  Impl impl = {};
  // Called after each chunk, serialized (never concurrently).
  std::function<void(const ModelProgress&)> progress;
};

struct DequantizeModelOptions {
  std::optional<Format> to;  // f32, bf16 or f16; unset: the original dtype
  size_t threads = 0;
  Impl impl = {};
  // DequantizeModel: called after each chunk, serialized. DequantizeCheckpoint:
  // after each output tensor, on the calling thread; bytes_total is the size
  // of the input files, tensors_total counts the output tensors of the
  // shards opened so far (one shard at a time).
  std::function<void(const ModelProgress&)> progress;
};

struct TensorReport {
  std::string name;
  bool quantized = false;
  StDtype dtype = StDtype::kU8;  // input dtype
  std::vector<uint64_t> shape;   // input shape
  uint64_t in_bytes = 0;
  uint64_t out_bytes = 0;  // qdata + scales (+ tscale), or the copy
  std::optional<MxErrorStats> stats;  // quantized with error_stats
};

struct ModelReport {
  std::string operation;  // "quantize" or "dequantize"
  MxFormat format = MxFormat::kMxfp4;  // quantize only
  ScaleMode scale_mode = ScaleMode::kFloor;
  ModelLayout layout = ModelLayout::kTcgen05;
  size_t threads = 1;
  std::vector<TensorReport> tensors;  // in input order
  size_t quantized_tensors = 0;
  uint64_t in_bytes = 0;   // whole input data section
  uint64_t out_bytes = 0;  // whole output data section
  uint64_t processed_bytes = 0;  // input bytes of the (de)quantized tensors
  std::optional<MxErrorStats> total;  // over every quantized element
  double seconds = 0;  // (de)quantization time (no file I/O)
  double total_seconds = 0;  // including reading and writing files

  double processed_bytes_per_second() const {
    return seconds > 0 ? static_cast<double>(processed_bytes) / seconds : 0;
  }
};

// A produced file before it is written: tensors reference `buffers` (owned
// here) and the input view's memory (which must outlive this).
struct ModelOutput {
  std::vector<StTensorOut> tensors;
  std::map<std::string, std::string> metadata;
  std::vector<std::unique_ptr<uint8_t[]>> buffers;  // storage behind data spans
  ModelReport report;
};

absl::StatusOr<ModelOutput> QuantizeModel(const SafetensorsView& in,
                                          const QuantizeModelOptions& options);
absl::StatusOr<ModelOutput> DequantizeModel(const SafetensorsView& in,
                                            const DequantizeModelOptions& options);

// Whole files (mmap in, temporary file + rename out: no partial output).
absl::StatusOr<ModelReport> QuantizeModelFile(const std::string& in_path,
                                              const std::string& out_path,
                                              const QuantizeModelOptions& options);
absl::StatusOr<ModelReport> DequantizeModelFile(const std::string& in_path,
                                                const std::string& out_path,
                                                const DequantizeModelOptions& options);

// The quantization record of one tensor, parsed from its metadata entry.
struct QuantizedTensorInfo {
  std::string name;
  MxShape shape;
  std::vector<uint64_t> tensor_shape;  // the original shape (rows x cols or 3-D)
  ScaleMode scale_mode = ScaleMode::kFloor;
  ModelLayout layout = ModelLayout::kTcgen05;
  StDtype dtype = StDtype::kF32;  // original
  std::string qdata, scales, tscale;  // tensor names (tscale: NVFP4 only)
  std::string version;
};

// Every "mxpack.tensor.*" entry, checked against the tensors it names
// (existence, dtypes, shapes, byte sizes).
absl::StatusOr<std::vector<QuantizedTensorInfo>> ListQuantizedTensors(
    const SafetensorsView& in);

// The tensor as an MxTensorView into `in`'s memory.
absl::StatusOr<MxTensorView> QuantizedTensorView(const SafetensorsView& in,
                                                 const QuantizedTensorInfo& info);

// Human-readable table and JSON (one object) of a report.
std::string ModelReportText(const ModelReport& report);
std::string ModelReportJson(const ModelReport& report);

// `mxpack inspect`: every tensor (name, dtype, shape, bytes) and every
// quantization record, as text or JSON.
absl::StatusOr<std::string> InspectText(const SafetensorsView& in);
absl::StatusOr<std::string> InspectJson(const SafetensorsView& in);

// ---------------------------------------------------------------------------
// Whole checkpoints for serving stacks (`mxpack quantize-model`).
//
// Input: a .safetensors file or a Hugging Face model directory (one
// model.safetensors, or the shards that model.safetensors.index.json lists).
// Shards are read one at a time. Output: a directory mirroring the input
// (shards of at most max_shard_bytes plus model.safetensors.index.json when
// there is more than one; every other file of the input directory copied,
// config.json with the scheme's "quantization_config" added), or one file when
// the output path ends in ".safetensors" (single-shard outputs only). The
// output is staged under a temporary name next to it and renamed when
// complete, so a failed run leaves nothing behind.
//
// Selection (docs/checkpoints.md): by default the weights of linear layers:
// 2-D F32/F16/BF16 tensors named *.weight and 3-D fused expert tensors
// [E, out, in] (name containing "experts"), except embeddings, lm_head, norms,
// biases and MoE routers/gates. `ignore` (never) and `include` (always, if the
// dtype and rank allow) are ECMAScript regexes searched in the name; ignore
// wins. Selecting nothing is an error.
//
// Schemes (`scheme`): "compressed-tensors" (default; vLLM and transformers
// load it as is: nvfp4, mxfp4, mxfp8_e4m3), "modelopt" (nvfp4), "gpt-oss"
// (mxfp4 MoE experts) and "mxpack" (the native records above; every format).
// Each writes its stack's own arithmetic bit for bit; asking a scheme for a
// format it lacks is an error naming the schemes that have it.

inline constexpr uint64_t kDefaultMaxShardBytes = 5000000000;  // 5 GB

struct CheckpointOptions {
  std::string scheme = "compressed-tensors";
  std::optional<MxFormat> format;       // unset: the scheme's default
  std::optional<ScaleMode> scale_mode;  // mxpack scheme only
  ModelLayout layout = ModelLayout::kDense;  // mxpack scheme only
  std::string include;  // regex: quantize also these (empty: none)
  std::string ignore;   // regex: never quantize these (empty: none)
  bool dry_run = false;  // plan only, write nothing
  uint64_t max_shard_bytes = kDefaultMaxShardBytes;
  size_t threads = 0;  // 0: all cores
  Impl impl = {};
  std::function<void(const ModelProgress&)> progress;
  // Called before each output shard is written (tests inject failures); an
  // error aborts the run, which then leaves no output.
  std::function<absl::Status(const std::string& shard)> before_write;
};

struct PlannedOutput {
  std::string name;
  StDtype dtype = StDtype::kU8;
  std::vector<uint64_t> shape;
  uint64_t bytes = 0;
};

struct PlannedTensor {
  std::string name;
  std::string shard;  // input file (relative to the input directory)
  StDtype dtype = StDtype::kU8;
  std::vector<uint64_t> shape;
  uint64_t bytes = 0;
  bool quantized = false;
  std::string reason;  // why it is selected or left as is
  std::string group;   // NVFP4: the fused group sharing one global scale
  std::vector<PlannedOutput> outputs;  // quantized: the scheme's tensors
  std::string out_shard;  // output file
};

struct CheckpointReport {
  std::string operation;  // "quantize" or "dequantize"
  std::string scheme;
  MxFormat format = MxFormat::kNvfp4;
  bool dry_run = false;
  std::vector<PlannedTensor> tensors;     // in input order
  std::vector<std::string> input_shards;  // relative names
  std::vector<std::string> output_shards;
  std::vector<std::string> copied_files;  // other files of the directory
  size_t quantized_tensors = 0;
  uint64_t in_bytes = 0;   // tensor bytes read
  uint64_t out_bytes = 0;  // tensor bytes written (planned when dry_run)
  size_t threads = 1;
  double seconds = 0;  // total, with I/O
};

absl::StatusOr<CheckpointReport> QuantizeCheckpoint(const std::string& in_path,
                                                    const std::string& out_path,
                                                    const CheckpointOptions& options);
// Turns a checkpoint of any scheme back into a plain one (f32/bf16/f16,
// default: the original dtype where recorded, else bf16); the other tensors
// and files are copied, quantization_config is dropped from config.json.
absl::StatusOr<CheckpointReport> DequantizeCheckpoint(
    const std::string& in_path, const std::string& out_path,
    const DequantizeModelOptions& options);
// `mxpack inspect` of a file or a directory: every shard's tensors and the
// quantized tensors of every scheme found.
absl::StatusOr<std::string> InspectCheckpointText(const std::string& path);
absl::StatusOr<std::string> InspectCheckpointJson(const std::string& path);

std::string CheckpointReportText(const CheckpointReport& report);
std::string CheckpointReportJson(const CheckpointReport& report);
std::vector<std::string> CheckpointSchemeNames();

// A deterministic transformer-like checkpoint for demos, tests and
// benchmarks: token embedding [vocab, hidden]; per layer input/post norms
// [hidden], q/o [hidden, hidden], k/v [kv_hidden, hidden], gate/up [ffn,
// hidden], down [hidden, ffn]; final norm; lm_head [vocab, hidden]. Weights are
// Gaussian with log-normal per-row scales, a few outlier input channels (x8)
// and rare spikes (x30), like trained LLM weights; norms are 1 + small noise.
// Layers with odd index are BF16 when odd_layers_bf16, everything else F32.
struct SyntheticModelConfig {
  size_t layers = 4;
  size_t hidden = 256;
  size_t kv_hidden = 128;
  size_t ffn = 688;
  size_t vocab = 2000;
  bool odd_layers_bf16 = true;
  uint64_t seed = 1;
  size_t threads = 0;  // generation threads (0: all cores)
};

// The whole safetensors file in memory (tensor names as in Llama checkpoints,
// e.g. "model.layers.0.self_attn.q_proj.weight").
absl::StatusOr<std::vector<uint8_t>> SyntheticCheckpoint(
    const SyntheticModelConfig& config);

}  // namespace mxpack

#endif  // MXPACK_MODEL_H_
