// SyntheticCheckpoint: a deterministic transformer-like safetensors file.
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/model.h"
#include "mxpack/scalar.h"
#include "src/util/thread_pool.h"

namespace mxpack {
namespace {

struct Spec {
  std::string name;
  StDtype dtype;
  std::vector<uint64_t> shape;
  bool norm;  // 1 + small noise instead of a weight matrix
};

// Two independent standard normals from two counter-based uniform draws
// (Box-Muller: cos and sin of the same angle).
std::pair<double, double> GaussianPair(uint64_t seed, uint64_t i) {
  const double u1 = (RandomBits(seed, 2 * i) + 1.0) / 4294967296.0;  // (0, 1]
  const double u2 = RandomBits(seed, 2 * i + 1) / 4294967296.0;
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double a = 6.283185307179586 * u2;
  return {r * std::cos(a), r * std::sin(a)};
}

void Fill(const Spec& s, uint64_t seed, std::vector<uint8_t>& out) {
  const size_t rows = s.shape[0];
  const size_t cols = s.shape.size() > 1 ? s.shape[1] : 1;
  const bool bf16 = s.dtype == StDtype::kBF16;
  out.resize(rows * cols * (bf16 ? 2 : 4));
  const double base = s.norm ? 0.05 : 0.8 / std::sqrt(static_cast<double>(cols));
  EncodePolicy rn;
  for (size_t r = 0; r < rows; ++r) {
    // Log-normal row scale: some output features are much larger than others.
    const double row_scale =
        s.norm ? 1.0 : std::exp(0.3 * GaussianPair(seed ^ 0x5eed, r).first);
    std::pair<double, double> g;
    for (size_t c = 0; c < cols; ++c) {
      const uint64_t i = r * cols + c;
      if (c % 2 == 0) g = GaussianPair(seed, r * ((cols + 1) / 2) + c / 2);
      double w = base * row_scale * (c % 2 == 0 ? g.first : g.second);
      if (s.norm) {
        w += 1.0;
      } else {
        if (c % 97 == 13) w *= 8.0;                                 // outlier channels
        if (RandomBits(seed ^ 0xface, i) < 214748u) w *= 30.0;  // ~1 in 20000 spikes
      }
      const float f = static_cast<float>(w);
      if (bf16) {
        const auto b = static_cast<uint16_t>(
            scalar::Convert(Format::kF32, Format::kBF16, scalar::F32Bits(f), rn));
        std::memcpy(out.data() + 2 * i, &b, 2);
      } else {
        std::memcpy(out.data() + 4 * i, &f, 4);
      }
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> SyntheticCheckpoint(const SyntheticModelConfig& c) {
  if (c.hidden == 0 || c.kv_hidden == 0 || c.ffn == 0 || c.vocab == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SyntheticModelConfig: hidden, kv_hidden, ffn and vocab must be >= 1, got "
        "%d, %d, %d, %d",
        c.hidden, c.kv_hidden, c.ffn, c.vocab));
  }
  std::vector<Spec> specs;
  specs.push_back({"model.embed_tokens.weight", StDtype::kF32, {c.vocab, c.hidden}, false});
  for (size_t l = 0; l < c.layers; ++l) {
    const StDtype d = (c.odd_layers_bf16 && l % 2 == 1) ? StDtype::kBF16 : StDtype::kF32;
    const std::string p = absl::StrCat("model.layers.", l, ".");
    specs.push_back({p + "input_layernorm.weight", d, {c.hidden}, true});
    specs.push_back({p + "self_attn.q_proj.weight", d, {c.hidden, c.hidden}, false});
    specs.push_back({p + "self_attn.k_proj.weight", d, {c.kv_hidden, c.hidden}, false});
    specs.push_back({p + "self_attn.v_proj.weight", d, {c.kv_hidden, c.hidden}, false});
    specs.push_back({p + "self_attn.o_proj.weight", d, {c.hidden, c.hidden}, false});
    specs.push_back({p + "post_attention_layernorm.weight", d, {c.hidden}, true});
    specs.push_back({p + "mlp.gate_proj.weight", d, {c.ffn, c.hidden}, false});
    specs.push_back({p + "mlp.up_proj.weight", d, {c.ffn, c.hidden}, false});
    specs.push_back({p + "mlp.down_proj.weight", d, {c.hidden, c.ffn}, false});
  }
  specs.push_back({"model.norm.weight", StDtype::kF32, {c.hidden}, true});
  specs.push_back({"lm_head.weight", StDtype::kF32, {c.vocab, c.hidden}, false});

  std::vector<std::vector<uint8_t>> data(specs.size());
  internal::ThreadPool pool(c.threads);
  pool.ParallelFor(specs.size(), [&](size_t i) {
    Fill(specs[i], c.seed * 1000003u + i, data[i]);
  });
  std::vector<StTensorOut> tensors;
  for (size_t i = 0; i < specs.size(); ++i) {
    tensors.push_back({specs[i].name, specs[i].dtype, specs[i].shape, data[i]});
  }
  return SerializeSafetensors(
      tensors, {{"format", "pt"}, {"generator", "mxpack SyntheticCheckpoint"}});
}

}  // namespace mxpack
