// The ModelOpt export scheme (NVIDIA TensorRT Model Optimizer's unified
// Hugging Face checkpoint, read by vLLM's and TensorRT-LLM's "modelopt"
// loaders): NVFP4 and MXFP8 weights with ModelOpt's own arithmetic
// (NVFP4QTensor, MXFP8QTensor), hf_quant_config.json and the
// quantization_config ModelOpt writes into config.json. Its MXFP8 tensors
// have the names, dtypes and shapes of compressed-tensors' mxfp8-quantized
// ones and the same dequantization (e4m3 * 2^(code - 127)), so the
// compressed-tensors scheme recognizes them. Sources of every rule:
// docs/checkpoints.md.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "mxpack/scalar.h"
#include "src/checkpoint/scheme.h"
#include "src/checkpoint/stack_blocks.h"

#ifndef MXPACK_LIB_VERSION
#define MXPACK_LIB_VERSION "unknown"
#endif

namespace mxpack::internal {
using scalar::DecodeToF32;

namespace {

class ModelOpt final : public Scheme {
 public:
  absl::string_view name() const override { return "modelopt"; }
  std::vector<MxFormat> formats() const override {
    return {MxFormat::kNvfp4, MxFormat::kMxfp8E4m3};
  }
  MxFormat default_format() const override { return MxFormat::kNvfp4; }

  std::string Unsupported(const WeightShape& s, MxFormat f) const override {
    if (s.stacked) return "ModelOpt exports experts as per-expert 2-D weights";
    const size_t block = f == MxFormat::kNvfp4 ? 16 : 32;
    if (s.cols % block != 0) {
      return absl::StrFormat("input dimension %d is not a multiple of %d", s.cols, block);
    }
    return "";
  }

  // X.weight stays X.weight (NVFP4: packed), plus X.weight_scale (and for
  // NVFP4 X.weight_scale_2).
  std::vector<PlannedOutput> Outputs(const StTensorInfo& t, const WeightShape& s,
                                     MxFormat f, const CheckpointOptions&) const override {
    const std::string base = absl::EndsWith(t.name, ".weight")
                                 ? t.name.substr(0, t.name.size() - 7)
                                 : t.name;
    const uint64_t n = s.rows;
    if (f == MxFormat::kMxfp8E4m3) {
      return {{t.name, StDtype::kF8E4M3, {n, s.cols}, n * s.cols},
              {base + ".weight_scale", StDtype::kU8, {n, s.cols / 32}, n * (s.cols / 32)}};
    }
    return {{t.name, StDtype::kU8, {n, s.cols / 2}, n * (s.cols / 2)},
            {base + ".weight_scale", StDtype::kF8E4M3, {n, s.cols / 16}, n * (s.cols / 16)},
            {base + ".weight_scale_2", StDtype::kF32, {}, 4}};
  }

  bool NeedsGroupAmax(MxFormat f) const override { return f == MxFormat::kNvfp4; }
  bool WritesEveryByte() const override { return true; }

  absl::Status Quantize(const SchemeJob& job, ThreadPool& pool,
                        absl::Span<const absl::Span<uint8_t>> outs,
                        std::map<std::string, std::string>&) const override {
    const size_t rows = job.shape.rows, cols = job.shape.cols;
    const size_t step = std::max<size_t>(1, (size_t{1} << 18) / cols);
    const size_t in_row = cols * (job.from == Format::kF32 ? 4 : 2);
    const Impl impl = job.options != nullptr ? job.options->impl : Impl{};
    StackBlocksArgs a;
    a.from = job.from;
    if (job.format == MxFormat::kMxfp8E4m3) {
      // The unified HF export's MXFP8 branch: the E8M0 scale from the weight
      // (get_weights_scaling_factor_from_quantizer without a stored _scale),
      // then quantize_with_scale.
      a.arith = StackArith::kModelOptMxfp8;
      pool.ParallelFor((rows + step - 1) / step, [&](size_t c) {
        const size_t r = c * step, end = std::min(rows, r + step);
        QuantizeStackBlocks(a, job.bytes.data() + r * in_row, (end - r) * (cols / 32),
                            outs[0].data() + r * cols, outs[1].data() + r * (cols / 32),
                            impl);
      });
      return absl::OkStatus();
    }
    // get_weights_scaling_factor_2_from_quantizer: amax.float() / (6 * 448),
    // amax the fused group's (preprocess_linear_fusion takes the max).
    const float t = job.group_amax[0] / 2688.0f;
    if (!(t > 0.0f)) {
      return absl::InvalidArgumentError(
          "all-zero weights: ModelOpt's tensor scale amax / 2688 would be 0");
    }
    std::memcpy(outs[2].data(), &t, 4);
    a.arith = StackArith::kModelOptNvfp4;
    a.tensor_scale = t;
    pool.ParallelFor((rows + step - 1) / step, [&](size_t c) {
      const size_t r = c * step, end = std::min(rows, r + step);
      QuantizeStackBlocks(a, job.bytes.data() + r * in_row, (end - r) * (cols / 16),
                          outs[0].data() + r * (cols / 2), outs[1].data() + r * (cols / 16),
                          impl);
    });
    return absl::OkStatus();
  }

  // convert_hf_quant_config_format of the hf_quant_config below.
  // convert_hf_quant_config_format of the hf_quant_config below (MXFP8 has
  // no config_groups branch there).
  Json QuantizationConfig(MxFormat f, const std::vector<std::string>& ignored) const override {
    if (f == MxFormat::kMxfp8E4m3) {
      return {{"ignore", ignored},
              {"quant_algo", "MXFP8"},
              {"producer", Producer()},
              {"quant_method", "modelopt"}};
    }
    const Json args = {{"dynamic", false}, {"num_bits", 4}, {"type", "float"},
                       {"group_size", 16}};
    return {{"config_groups",
             {{"group_0",
               {{"input_activations", args}, {"weights", args}, {"targets", {"Linear"}}}}}},
            {"ignore", ignored},
            {"quant_algo", "NVFP4"},
            {"producer", Producer()},
            {"quant_method", "modelopt"}};
  }

  // get_quant_config: producer and quantization {quant_algo, kv_cache_quant_algo,
  // group_size (the weight quantizer's block), exclude_modules (sorted)},
  // written with indent 4.
  std::map<std::string, std::string> ExtraFiles(
      MxFormat f, const std::vector<std::string>& ignored) const override {
    const bool nv = f == MxFormat::kNvfp4;
    Json j = {{"producer", Producer()},
              {"quantization",
               {{"quant_algo", nv ? "NVFP4" : "MXFP8"},
                {"kv_cache_quant_algo", nullptr},
                {"group_size", nv ? 16 : 32},
                {"exclude_modules", ignored}}}};
    return {{"hf_quant_config.json", j.dump(4) + "\n"}};
  }

  std::vector<FoundQuantized> Find(const SafetensorsView& v) const override {
    std::vector<FoundQuantized> found;
    for (const StTensorInfo& t : v.tensors) {
      if (t.dtype != StDtype::kU8 || t.shape.size() != 2 ||
          !absl::EndsWith(t.name, ".weight")) {
        continue;
      }
      const std::string base = t.name.substr(0, t.name.size() - 7);
      const StTensorInfo* sc = v.Find(base + ".weight_scale");
      const StTensorInfo* s2 = v.Find(base + ".weight_scale_2");
      if (sc == nullptr || s2 == nullptr || sc->dtype != StDtype::kF8E4M3 ||
          s2->dtype != StDtype::kF32 || s2->num_elements() != 1 || sc->shape.size() != 2 ||
          sc->shape[0] != t.shape[0] || sc->shape[1] * 8 != t.shape[1]) {
        continue;
      }
      FoundQuantized q;
      q.name = t.name;
      q.scheme = "modelopt";
      q.format = "nvfp4";
      q.shape = {t.shape[0], t.shape[1] * 2};
      q.parts = {t.name, sc->name, s2->name};
      q.part_info = {&t, sc, s2};
      found.push_back(std::move(q));
    }
    return found;
  }

  // NVFP4QTensor.dequantize: e2m1 * (float(scale) * t) in f32, with its
  // value table, which maps code 0x8 to +0.
  absl::Status Dequantize(const SafetensorsView& v, const FoundQuantized& q,
                          uint64_t first_row,
                          absl::Span<float> out) const override {
    if (absl::Status st = CheckRowRange(q, first_row, out.size()); !st.ok())
      return st;
    if (out.empty()) return absl::OkStatus();
    const uint8_t* e = v.Bytes(*q.Part(v, 0)).data();
    const uint8_t* s = v.Bytes(*q.Part(v, 1)).data();
    float t;
    std::memcpy(&t, v.Bytes(*q.Part(v, 2)).data(), 4);
    const uint64_t cols = q.shape[1];
    const uint64_t end_row = first_row + out.size() / cols;
    // Code 0x8 is +0 whatever the scale (a NaN or negative one included).
    const float* e2m1 = E2m1Values();
    const float* e4m3 = E4m3Values();
    const auto value = [e2m1](unsigned code, float d) {
      return code == 0x8 ? 0.0f : e2m1[code] * d;
    };
    for (uint64_t r = first_row; r < end_row; ++r) {
      for (uint64_t k = 0; k < cols / 16; ++k) {
        const float d = e4m3[s[r * (cols / 16) + k]] * t;
        const uint8_t* b = e + (r * cols + 16 * k) / 2;
        float* o = out.data() + (r - first_row) * cols + 16 * k;
        for (size_t j = 0; j < 8; ++j) {
          o[2 * j] = value(b[j] & 0xFu, d);
          o[2 * j + 1] = value(b[j] >> 4, d);
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  static Json Producer() { return {{"name", "mxpack"}, {"version", MXPACK_LIB_VERSION}}; }
};

}  // namespace

const Scheme* ModelOptScheme() {
  static const ModelOpt* s = new ModelOpt();
  return s;
}

}  // namespace mxpack::internal
