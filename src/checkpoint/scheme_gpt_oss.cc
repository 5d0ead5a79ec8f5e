// The gpt-oss export scheme (OpenAI's MXFP4 MoE checkpoints, loaded by
// transformers' Mxfp4HfQuantizer and vLLM's gpt-oss model): the fused expert
// tensors `*.experts.gate_up_proj` / `*.experts.down_proj`, which gpt-oss
// keeps as [E, in, out] (GptOssExperts multiplies `x @ gate_up_proj[e]`), are
// stored as `*_blocks` U8 [E, out, in/32, 16] and `*_scales` U8 [E, out, in/32]
// (e8m0); everything else stays as is. Arithmetic of triton_kernels'
// downcast_to_mxfp_torch with DequantScaleRoundingMode.ROUND_UP, which
// transformers' quantize_to_mxfp4 calls. Sources: docs/checkpoints.md.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "mxpack/scalar.h"
#include "src/checkpoint/scheme.h"

namespace mxpack::internal {
using scalar::DecodeToF32;
using scalar::F32Bits;
using scalar::F32FromBits;

namespace {

// Round to nearest even, saturating at 6, the sign bit kept (-0 -> 0x8).
uint8_t Nibble(float q) {
  return q == 0.0f ? (std::signbit(q) ? 0x8 : 0x0) : E2m1Nibble(q);
}

class GptOss final : public Scheme {
 public:
  absl::string_view name() const override { return "gpt-oss"; }
  std::vector<MxFormat> formats() const override { return {MxFormat::kMxfp4}; }
  MxFormat default_format() const override { return MxFormat::kMxfp4; }

  // WeightShape reads [E, a, b] as [E, out, in]; gpt-oss's layout is
  // [E, in, out], so here rows = in and cols = out.
  std::string Unsupported(const WeightShape& s, MxFormat) const override {
    if (!s.stacked) return "gpt-oss quantizes only the MoE expert tensors";
    if (s.rows % 32 != 0) return "input dimension is not a multiple of 32";
    return "";
  }

  std::vector<PlannedOutput> Outputs(const StTensorInfo& t, const WeightShape& s,
                                     MxFormat, const CheckpointOptions&) const override {
    const uint64_t e = s.experts, in = s.rows, out = s.cols;
    return {{t.name + "_blocks", StDtype::kU8, {e, out, in / 32, 16}, e * out * in / 2},
            {t.name + "_scales", StDtype::kU8, {e, out, in / 32}, e * out * (in / 32)}};
  }

  bool NeedsGroupAmax(MxFormat) const override { return false; }

  // Per block of 32 inputs (x rounded to bf16 first: quantize_to_mxfp4 casts):
  // scale = 2^ceil(log2(f32(amax / 6))) by rounding the f32 bit pattern up to
  // a power of two (code = its exponent field); elements = rn(x * f32(1 /
  // scale)), saturating at 6, the sign bit kept (-0 -> 0x8); scale 0 gives
  // elements x * 0.
  absl::Status Quantize(const SchemeJob& job, ThreadPool& pool,
                        absl::Span<const absl::Span<uint8_t>> outs,
                        std::map<std::string, std::string>&) const override {
    const size_t experts = job.shape.experts, in = job.shape.rows, out = job.shape.cols;
    const Format w = job.from;
    const uint8_t* src = job.bytes.data();
    pool.ParallelFor(experts * out, [&](size_t eo) {
      const size_t e = eo / out, o = eo % out;
      uint8_t* blocks = outs[0].data() + eo * (in / 2);
      uint8_t* scales = outs[1].data() + eo * (in / 32);
      float x[32];
      for (size_t b = 0; b < in / 32; ++b) {
        float amax = 0;
        for (size_t k = 0; k < 32; ++k) {
          const size_t i = (e * in + b * 32 + k) * out + o;  // [e][in][out]
          x[k] = LoadAsF32(w, src, i);
          if (w != Format::kBF16) x[k] = RoundToDtype(Format::kBF16, x[k]);
          amax = std::max(amax, std::fabs(x[k]));
        }
        const uint32_t r = (F32Bits(amax / 6.0f) + 0x007FFFFFu) & 0x7F800000u;
        scales[b] = static_cast<uint8_t>(r >> 23);
        const float scale = F32FromBits(r);
        const float inv = scale == 0.0f ? 0.0f : 1.0f / scale;
        for (size_t k = 0; k < 32; k += 2) {
          const uint32_t lo = Nibble(x[k] * inv);
          const uint32_t hi = Nibble(x[k + 1] * inv);
          blocks[b * 16 + k / 2] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
    });
    return absl::OkStatus();
  }

  // Mxfp4Config.to_dict.
  Json QuantizationConfig(MxFormat, const std::vector<std::string>& ignored) const override {
    return {{"quant_method", "mxfp4"}, {"modules_to_not_convert", ignored}};
  }

  std::vector<FoundQuantized> Find(const SafetensorsView& v) const override {
    std::vector<FoundQuantized> found;
    for (const StTensorInfo& t : v.tensors) {
      if (!absl::EndsWith(t.name, "_blocks") || t.dtype != StDtype::kU8 ||
          t.shape.size() != 4 || t.shape[3] != 16) {
        continue;
      }
      const std::string base = t.name.substr(0, t.name.size() - 7);
      const StTensorInfo* sc = v.Find(base + "_scales");
      if (sc == nullptr || sc->dtype != StDtype::kU8 ||
          sc->shape != std::vector<uint64_t>(t.shape.begin(), t.shape.end() - 1)) {
        continue;
      }
      FoundQuantized q;
      q.name = base;
      q.scheme = "gpt-oss";
      q.format = "mxfp4";
      q.shape = {t.shape[0], t.shape[2] * 32, t.shape[1]};  // [E, in, out]
      q.parts = {t.name, sc->name};
      q.part_info = {&t, sc};
      found.push_back(std::move(q));
    }
    return found;
  }

  // convert_moe_packed_tensors: lut[nibble] * 2^(code - 127), transposed back
  // to [E, in, out].
  absl::Status Dequantize(const SafetensorsView& v, const FoundQuantized& q,
                          uint64_t first_row,
                          absl::Span<float> out) const override {
    if (absl::Status st = CheckRowRange(q, first_row, out.size()); !st.ok())
      return st;
    if (out.empty()) return absl::OkStatus();
    const uint8_t* blocks = v.Bytes(*q.Part(v, 0)).data();
    const uint8_t* scales = v.Bytes(*q.Part(v, 1)).data();
    const uint64_t in = q.shape[1], outs = q.shape[2];
    const uint64_t end_row = first_row + out.size() / outs;
    const float* e2m1 = E2m1Values();
    // Output row R = e * in + i holds input element i of every output
    // feature o: code i of block row (e, o), in the 32-element block i / 32.
    // Per block, the rows of the range that it covers: one scale and 16
    // bytes read, up to 32 outputs written a row apart.
    float vals[32];
    for (uint64_t r = first_row; r < end_row;) {
      const uint64_t e = r / in, i0 = r % in;
      const uint64_t g = i0 / 32;
      const uint64_t i1 = std::min<uint64_t>(32 * g + 32, i0 + (end_row - r));
      float* row0 = out.data() + (r - first_row) * outs;
      for (uint64_t o = 0; o < outs; ++o) {
        const uint64_t eo = e * outs + o;
        const uint8_t* b = blocks + eo * (in / 2) + 16 * g;
        for (uint64_t i = i0; i < i1; ++i) {
          const unsigned j = static_cast<unsigned>(i - 32 * g);
          vals[i - i0] = e2m1[(b[j / 2] >> (4 * (j % 2))) & 0xF];
        }
        ScaleByE8m0(vals, i1 - i0, scales[eo * (in / 32) + g]);
        for (uint64_t i = i0; i < i1; ++i)
          row0[(i - i0) * outs + o] = vals[i - i0];
      }
      r += i1 - i0;
    }
    return absl::OkStatus();
  }
  // A range of whole 32-row groups reads each block once.
  uint64_t DequantizeRowGrain() const override { return 32; }
};

}  // namespace

const Scheme* GptOssScheme() {
  static const GptOss* s = new GptOss();
  return s;
}

}  // namespace mxpack::internal
