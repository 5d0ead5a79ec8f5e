// `mxpack demo`: the README's main job on a built-in checkpoint. Writes a
// deterministic transformer-like model directory (model.safetensors +
// config.json) to a temporary directory, exports it with quantize-model's
// default scheme (compressed-tensors NVFP4, what vLLM loads), dequantizes it
// with dequantize-model and verifies every tensor against the original.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/model.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"
#include "mxpack/scalar.h"
#include "tools/cli.h"

namespace mxpack::cli {
namespace {

std::string MiB(uint64_t n) {
  return absl::StrFormat("%.2f MiB", static_cast<double>(n) / 1048576.0);
}

// Tensor names sorted with digit runs compared as numbers (layer 2 before 10).
bool NaturalLess(const std::string& a, const std::string& b) {
  auto key = [](const std::string& s) {
    std::vector<std::pair<std::string, uint64_t>> k;
    for (size_t i = 0; i < s.size();) {
      size_t j = i;
      while (j < s.size() && !absl::ascii_isdigit(static_cast<unsigned char>(s[j]))) ++j;
      uint64_t n = 0;
      size_t e = j;
      while (e < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[e]))) {
        n = n * 10 + static_cast<uint64_t>(s[e] - '0');
        ++e;
      }
      k.emplace_back(s.substr(i, j - i), n);
      i = e;
    }
    return k;
  };
  return key(a) < key(b);
}

float Load(const SafetensorsView& v, const StTensorInfo& t, size_t i) {
  const uint8_t* p = v.Bytes(t).data();
  if (t.dtype == StDtype::kF32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  return scalar::DecodeToF32(*StDtypeFormat(t.dtype),
                             static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
}

struct Row {
  std::string name, shape, dtype, action;
  double sqnr = 0, max_err = 0;
};

// Checks the exported directory and its dequantization against the original:
// unselected tensors byte-identical, every selected tensor dequantized within
// one NVFP4 step of its input (|x - y| <= 0.2 * amax of its 16-block: the
// e2m1 half-gap at the top is 1 of 6, the ue4m3 scale adds at most 1/16),
// config.json carrying the quantization_config.
absl::Status Verify(const SafetensorsView& orig, const std::string& qdir,
                    const std::string& ddir, const CheckpointReport& q,
                    std::vector<Row>& rows, size_t& checks) {
  absl::StatusOr<std::unique_ptr<MappedFile>> qf =
      MappedFile::Open(qdir + "/model.safetensors");
  if (!qf.ok()) return qf.status();
  absl::StatusOr<std::unique_ptr<MappedFile>> df =
      MappedFile::Open(ddir + "/model.safetensors");
  if (!df.ok()) return df.status();
  absl::StatusOr<SafetensorsView> qv = ParseSafetensors((*qf)->bytes());
  if (!qv.ok()) return qv.status();
  absl::StatusOr<SafetensorsView> dv = ParseSafetensors((*df)->bytes());
  if (!dv.ok()) return dv.status();
  std::ifstream cfg(qdir + "/config.json");
  std::string text((std::istreambuf_iterator<char>(cfg)), std::istreambuf_iterator<char>());
  if (text.find("\"nvfp4-pack-quantized\"") == std::string::npos ||
      text.find("\"quant_method\": \"compressed-tensors\"") == std::string::npos) {
    return absl::InternalError("config.json has no compressed-tensors quantization_config");
  }
  ++checks;
  for (const PlannedTensor& p : q.tensors) {
    const StTensorInfo& t = *orig.Find(p.name);
    auto fail = [&](const std::string& what) {
      return absl::InternalError(absl::StrFormat("tensor '%s': %s", t.name, what));
    };
    Row r;
    r.name = t.name;
    r.shape = absl::StrCat("[", t.shape[0], t.shape.size() > 1 ? absl::StrCat(", ", t.shape[1]) : "", "]");
    r.dtype = std::string(StDtypeName(t.dtype));
    if (!p.quantized) {
      const StTensorInfo* qt = qv->Find(t.name);
      if (qt == nullptr || qv->Bytes(*qt) != orig.Bytes(t)) return fail("copied tensor differs");
      r.action = "copied (" + p.reason + ")";
      rows.push_back(r);
      ++checks;
      continue;
    }
    const StTensorInfo* back = dv->Find(t.name);
    if (back == nullptr || back->dtype != StDtype::kF32 || back->shape != t.shape) {
      return fail("missing from the dequantized checkpoint or wrong dtype/shape");
    }
    for (const PlannedOutput& o : p.outputs) {
      if (qv->Find(o.name) == nullptr) return fail(absl::StrCat("output ", o.name, " missing"));
    }
    double sx = 0, se = 0, me = 0;
    const size_t n = t.num_elements();
    for (size_t b = 0; b < n; b += 16) {
      float amax = 0;
      for (size_t i = b; i < b + 16; ++i) amax = std::max(amax, std::fabs(Load(orig, t, i)));
      for (size_t i = b; i < b + 16; ++i) {
        const double x = Load(orig, t, i);
        const double e = std::fabs(x - static_cast<double>(Load(*dv, *back, i)));
        if (e > 0.2 * amax) {
          return fail(absl::StrFormat("element %d: %g dequantized to %g", i, x,
                                      Load(*dv, *back, i)));
        }
        sx += x * x;
        se += e * e;
        me = std::max(me, e);
      }
    }
    r.action = "nvfp4";
    r.sqnr = se == 0 ? INFINITY : 10 * std::log10(sx / se);
    r.max_err = me;
    rows.push_back(r);
    checks += 2;
  }
  return absl::OkStatus();
}

int RunDemo(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return Fail("demo", absl::InvalidArgumentError(
                            absl::StrFormat("unexpected argument '%s'", args[0])));
  }
  char tmpl[] = "/tmp/mxpack-demo-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    return Fail("demo", absl::InternalError("cannot create a temporary directory"));
  }
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};

  SyntheticModelConfig config;
  absl::StatusOr<std::vector<uint8_t>> ckpt = SyntheticCheckpoint(config);
  if (!ckpt.ok()) return Fail("demo", ckpt.status());
  const std::string model = dir + "/model";
  std::filesystem::create_directory(model);
  absl::StatusOr<SafetensorsView> orig = ParseSafetensors(*ckpt);
  if (!orig.ok()) return Fail("demo", orig.status());
  {
    std::ofstream f(model + "/model.safetensors", std::ios::binary);
    f.write(reinterpret_cast<const char*>(ckpt->data()), static_cast<std::streamsize>(ckpt->size()));
    std::ofstream c(model + "/config.json");
    c << absl::StrFormat(
        "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "
        "\"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d, "
        "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"vocab_size\": %d, "
        "\"torch_dtype\": \"float32\"}\n",
        config.hidden, config.ffn, config.layers, config.hidden / 64,
        config.kv_hidden / 64, config.vocab);
    if (!f || !c) return Fail("demo", absl::InternalError("cannot write the model"));
  }
  std::printf(
      "mxpack demo: a built-in %zu-layer Llama-like model directory (hidden %zu, ffn "
      "%zu, vocab %zu;\nGaussian weights with log-normal row scales, outlier channels "
      "and spikes; odd layers BF16)\nwrote %s: %zu tensors, %s, and config.json\n\n",
      config.layers, config.hidden, config.ffn, config.vocab, model.c_str(),
      orig->tensors.size(), MiB(orig->data.size()).c_str());

  // The same steps as:
  //   mxpack quantize-model model model-nvfp4
  //   mxpack dequantize-model model-nvfp4 model-back --to=f32
  const std::string qdir = dir + "/model-nvfp4", ddir = dir + "/model-back";
  CheckpointOptions o;
  absl::StatusOr<CheckpointReport> q = QuantizeCheckpoint(model, qdir, o);
  if (!q.ok()) return Fail("demo", q.status());
  DequantizeModelOptions d;
  d.to = Format::kF32;
  absl::StatusOr<CheckpointReport> back = DequantizeCheckpoint(qdir, ddir, d);
  if (!back.ok()) return Fail("demo", back.status());

  std::vector<Row> rows;
  size_t checks = 0;
  const absl::Status verified = Verify(*orig, qdir, ddir, *q, rows, checks);
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return NaturalLess(a.name, b.name); });
  size_t w = 6;
  for (const Row& r : rows) w = std::max(w, r.name.size());
  std::printf("%-*s %-12s %-5s %8s %9s\n", static_cast<int>(w), "tensor", "shape",
              "dtype", "SQNR dB", "max err");
  for (const Row& r : rows) {
    std::printf("%-*s %-12s %-5s ", static_cast<int>(w), r.name.c_str(), r.shape.c_str(),
                r.dtype.c_str());
    if (r.action != "nvfp4") {
      std::printf("%s\n", r.action.c_str());
    } else {
      std::printf("%8.2f %9.3g\n", r.sqnr, r.max_err);
    }
  }
  std::printf(
      "\nquantize-model (compressed-tensors, nvfp4): %zu tensors quantized, %zu "
      "copied; tensors %s -> %s (%.2fx smaller), %.3f s on %zu threads\n"
      "dequantize-model: %s -> %s, %.3f s\n",
      q->quantized_tensors, q->tensors.size() - q->quantized_tensors,
      MiB(q->in_bytes).c_str(), MiB(q->out_bytes).c_str(),
      static_cast<double>(q->in_bytes) / static_cast<double>(q->out_bytes), q->seconds,
      q->threads, MiB(back->in_bytes).c_str(), MiB(back->out_bytes).c_str(),
      back->seconds);
  std::printf(
      "layout: X.weight_packed (U8, two e2m1 per byte, low nibble first), "
      "X.weight_scale (F8_E4M3\nper 16 inputs), X.weight_global_scale (F32, 448*6/amax "
      "of the fused q/k/v or gate/up group);\nconfig.json quantization_config "
      "nvfp4-pack-quantized: 'vllm serve DIR' loads it as is\n\n");
  if (!verified.ok()) {
    std::printf("verify: FAILED: %s\n", std::string(verified.message()).c_str());
    return 1;
  }
  std::printf(
      "verify: ok (%zu checks): copied tensors byte-identical, every quantized tensor "
      "present and\n        dequantized within one NVFP4 step, config.json "
      "quantization_config written\n",
      checks);
  return 0;
}

const bool kDemo = RegisterCommand(
    {"demo", "the main job on a built-in checkpoint: export for vLLM (compressed-tensors NVFP4)",
     "demo\n\nWrites a built-in deterministic Llama-like model directory "
     "(model.safetensors with F32\nand BF16 layers, config.json) to a temporary "
     "directory, exports it with quantize-model\n(compressed-tensors NVFP4: linear "
     "weights only; embeddings, norms and lm_head kept),\ndequantizes it with "
     "dequantize-model, verifies every tensor and prints per-tensor SQNR,\nmax "
     "error, sizes and times. The directory is removed afterwards.",
     {},
     RunDemo});

}  // namespace
}  // namespace mxpack::cli
