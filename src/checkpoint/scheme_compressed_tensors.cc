// The compressed-tensors export scheme (vLLM's and transformers' loader of
// llm-compressor checkpoints): nvfp4-pack-quantized, mxfp4-pack-quantized and
// mxfp8-quantized weights with compressed-tensors' own arithmetic, and their
// recognition and dequantization. Sources of every rule: docs/checkpoints.md.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/scalar.h"
#include "src/checkpoint/scheme.h"

namespace mxpack::internal {
using scalar::DecodeToF32;
using scalar::EncodeF32;
using scalar::F32Bits;
namespace {

constexpr EncodePolicy kRnSat = {Rounding::kRN, Saturation::kSatFinite, false,
                                 OverflowTie::kEven};

// Row chunks of about 1 MiB of input for the thread pool.
size_t ChunkRows(size_t cols) {
  return std::max<size_t>(1, (size_t{1} << 18) / std::max<size_t>(cols, 1));
}

// The global scale of an NVFP4 tensor (group) whose largest |x| is `amax`:
// generate_gparam: 448 * 6 / max(amax, finfo(w).tiny) in the weight dtype w
// (llm-compressor's observer keeps its statistics in w), then f32; Inf or NaN
// becomes 1.0. torch evaluates `scalar / tensor` as reciprocal(tensor) *
// scalar, two roundings to w: (1 / amax) * 2688.
float CtGlobalScale(Format w, float amax) {
  const float tiny = w == Format::kF16 ? 6.103515625e-05f
                                       : std::numeric_limits<float>::min();
  const float gs =
      RoundToDtype(w, RoundToDtype(w, 1.0f / std::max(amax, tiny)) * 2688.0f);
  return std::isfinite(gs) ? gs : 1.0f;
}

// One row of NVFP4: calculate_qparams (amax / 6 in w, times the global scale
// in f32, clamp to +-448, cast to float8_e4m3fn, 0 -> eps 0.125) and
// _quantize (x / (scale / global_scale) in f32, clamp, cast_to_fp4).
void CtNvfp4Row(Format w, const uint8_t* in, size_t row, size_t cols, float gs,
                uint8_t* packed, uint8_t* scales) {
  const size_t base = row * cols;
  for (size_t g = 0; g < cols / 16; ++g) {
    float amax = 0;
    for (size_t k = 0; k < 16; ++k) {
      amax = std::max(amax, std::fabs(LoadAsF32(w, in, base + g * 16 + k)));
    }
    const float s = gs * RoundToDtype(w, amax / 6.0f);
    uint8_t code =
        static_cast<uint8_t>(EncodeF32(std::min(s, 448.0f), Format::kE4M3, kRnSat));
    float d = DecodeToF32(Format::kE4M3, code);
    if (d == 0.0f) {
      d = 0.125f;
      code = 0x20;  // 0.125 = 2^-3: exponent field 4, mantissa 0
    }
    scales[g] = code;
    const float eff = d / gs;
    for (size_t k = 0; k < 16; k += 2) {
      const size_t i = base + g * 16 + k;
      const float q0 = std::clamp(LoadAsF32(w, in, i) / eff, -6.0f, 6.0f);
      const float q1 = std::clamp(LoadAsF32(w, in, i + 1) / eff, -6.0f, 6.0f);
      packed[(g * 16 + k) / 2] =
          static_cast<uint8_t>(E2m1Nibble(q0) | (E2m1Nibble(q1) << 4));
    }
  }
}

// MX scale (generate_mx_scales + calculate_qparams + compress_mx_scale):
// round_to_power_2 adds a quarter of the binade to amax's bit pattern in w and
// keeps sign and exponent (amax rounds up to the next power of two when its
// significand is >= 1.75), then code = 127 + floor(log2(p)) - offset (offset
// floor(log2(max)): 2 for e2m1, 8 for e4m3), clamped to [0, 255]. The scale
// value is w(2^(code - 127)); a zero (f16 underflow) becomes eps = 1, code 127.
std::pair<uint8_t, float> CtMxScale(Format w, float amax, int offset) {
  uint32_t bits, add, mask;
  int mant, bias;
  if (w == Format::kF32) {
    bits = F32Bits(amax), mant = 23, bias = 127, mask = 0x1FFu << 23;
  } else if (w == Format::kBF16) {
    bits = F32Bits(amax) >> 16, mant = 7, bias = 127, mask = 0x1FFu << 7;
  } else {
    bits = EncodeF32(amax, Format::kF16, kRnSat), mant = 10, bias = 15,
    mask = 0x3Fu << 10;
  }
  add = 1u << (mant - 2);
  const uint32_t p = (bits + add) & mask;
  const uint32_t field = p >> mant;
  const uint32_t inf_field = w == Format::kF16 ? 0x1F : 0xFF;
  int code;
  if (p == 0) {
    code = 0;  // log2(0) = -inf, clamped
  } else if (field >= inf_field) {
    code = 255;
  } else {
    code = std::clamp(127 + static_cast<int>(field) - bias - offset, 0, 255);
  }
  const float value = RoundToDtype(w, std::ldexp(1.0f, code - 127));
  if (value == 0.0f) return {127, 1.0f};
  return {static_cast<uint8_t>(code), value};
}

// One row of MXFP4 / MXFP8: x / scale in w (exact: a power of two), clamp,
// cast_to_fp4 or .to(float8_e4m3fn).
void CtMxRow(Format w, bool fp8, const uint8_t* in, size_t row, size_t cols,
             uint8_t* elements, uint8_t* scales) {
  const size_t base = row * cols;
  const int offset = fp8 ? 8 : 2;
  const float min_normal = w == Format::kF16 ? 6.103515625e-05f
                                             : std::numeric_limits<float>::min();
  for (size_t g = 0; g < cols / 32; ++g) {
    float amax = 0;
    for (size_t k = 0; k < 32; ++k) {
      amax = std::max(amax, std::fabs(LoadAsF32(w, in, base + g * 32 + k)));
    }
    const auto [code, scale] = CtMxScale(w, amax, offset);
    scales[g] = code;
    for (size_t k = 0; k < 32; ++k) {
      const size_t i = base + g * 32 + k;
      // x / scale is exact in f32 (a power of two) and already has w's
      // precision unless it falls below w's smallest normal.
      float q = static_cast<float>(static_cast<double>(LoadAsF32(w, in, i)) / scale);
      if (w != Format::kF32 && std::fabs(q) < min_normal) q = RoundToDtype(w, q);
      if (fp8) {
        elements[g * 32 + k] =
            static_cast<uint8_t>(EncodeF32(q, Format::kE4M3, kRnSat));
      } else {
        const uint8_t c = E2m1Nibble(std::clamp(q, -6.0f, 6.0f));
        uint8_t& b = elements[(g * 32 + k) / 2];
        b = (k % 2 == 0) ? c : static_cast<uint8_t>(b | (c << 4));
      }
    }
  }
}

const char* FormatString(MxFormat f) {
  switch (f) {
    case MxFormat::kNvfp4:
      return "nvfp4-pack-quantized";
    case MxFormat::kMxfp4:
      return "mxfp4-pack-quantized";
    default:
      return "mxfp8-quantized";
  }
}

// Output names: a tensor "P.weight" becomes "P.weight_packed" etc. (the
// module's parameters); any other name N becomes "N_packed", "N_scale", ...
std::string OutName(const std::string& name, absl::string_view suffix) {
  return absl::StrCat(name, "_", suffix);
}

class CompressedTensors final : public Scheme {
 public:
  absl::string_view name() const override { return "compressed-tensors"; }
  std::vector<MxFormat> formats() const override {
    return {MxFormat::kNvfp4, MxFormat::kMxfp4, MxFormat::kMxfp8E4m3};
  }
  MxFormat default_format() const override { return MxFormat::kNvfp4; }

  std::string Unsupported(const WeightShape& s, MxFormat f) const override {
    const size_t block = f == MxFormat::kNvfp4 ? 16 : 32;
    if (s.cols % block != 0) {
      return absl::StrFormat("input dimension %d is not a multiple of %d", s.cols,
                             block);
    }
    return "";
  }

  std::vector<PlannedOutput> Outputs(const StTensorInfo& t, const WeightShape& s,
                                     MxFormat f,
                                     const CheckpointOptions&) const override {
    std::vector<uint64_t> lead;
    if (s.stacked) lead.push_back(s.experts);
    auto shape = [&](uint64_t a, uint64_t b) {
      std::vector<uint64_t> v = lead;
      v.push_back(a);
      v.push_back(b);
      return v;
    };
    const uint64_t n = uint64_t{s.experts} * s.rows;
    std::vector<PlannedOutput> o;
    if (f == MxFormat::kMxfp8E4m3) {
      o.push_back({t.name, StDtype::kF8E4M3, shape(s.rows, s.cols), n * s.cols});
      o.push_back({OutName(t.name, "scale"), StDtype::kU8, shape(s.rows, s.cols / 32),
                   n * (s.cols / 32)});
      return o;
    }
    o.push_back({OutName(t.name, "packed"), StDtype::kU8, shape(s.rows, s.cols / 2),
                 n * (s.cols / 2)});
    if (f == MxFormat::kNvfp4) {
      o.push_back({OutName(t.name, "scale"), StDtype::kF8E4M3,
                   shape(s.rows, s.cols / 16), n * (s.cols / 16)});
      std::vector<uint64_t> gshape = lead;
      gshape.push_back(1);
      o.push_back({OutName(t.name, "global_scale"), StDtype::kF32, gshape,
                   4 * uint64_t{s.experts}});
    } else {
      o.push_back({OutName(t.name, "scale"), StDtype::kU8, shape(s.rows, s.cols / 32),
                   n * (s.cols / 32)});
    }
    return o;
  }

  bool NeedsGroupAmax(MxFormat f) const override { return f == MxFormat::kNvfp4; }

  absl::Status Quantize(const SchemeJob& job, ThreadPool& pool,
                        absl::Span<const absl::Span<uint8_t>> outs,
                        std::map<std::string, std::string>&) const override {
    const WeightShape& s = job.shape;
    const size_t rows = s.experts * s.rows;
    const size_t step = ChunkRows(s.cols);
    const size_t chunks = (rows + step - 1) / step;
    const Format w = job.from;
    const uint8_t* in = job.bytes.data();
    if (job.format == MxFormat::kNvfp4) {
      std::vector<float> gs(s.experts);
      for (size_t e = 0; e < s.experts; ++e) gs[e] = CtGlobalScale(w, job.group_amax[e]);
      std::memcpy(outs[2].data(), gs.data(), 4 * gs.size());  // little-endian
      pool.ParallelFor(chunks, [&](size_t c) {
        for (size_t r = c * step; r < std::min(rows, (c + 1) * step); ++r) {
          CtNvfp4Row(w, in, r, s.cols, gs[r / s.rows], outs[0].data() + r * (s.cols / 2),
                     outs[1].data() + r * (s.cols / 16));
        }
      });
      return absl::OkStatus();
    }
    const bool fp8 = job.format == MxFormat::kMxfp8E4m3;
    const size_t el_row = fp8 ? s.cols : s.cols / 2;
    pool.ParallelFor(chunks, [&](size_t c) {
      for (size_t r = c * step; r < std::min(rows, (c + 1) * step); ++r) {
        CtMxRow(w, fp8, in, r, s.cols, outs[0].data() + r * el_row,
                outs[1].data() + r * (s.cols / 32));
      }
    });
    return absl::OkStatus();
  }

  Json QuantizationConfig(MxFormat f,
                          const std::vector<std::string>& ignored) const override {
    const bool nv = f == MxFormat::kNvfp4;
    const std::string scale_dtype = nv ? "torch.float8_e4m3fn" : "torch.uint8";
    Json weights = {{"num_bits", f == MxFormat::kMxfp8E4m3 ? 8 : 4},
                    {"type", "float"},
                    {"symmetric", true},
                    {"group_size", nv ? 16 : 32},
                    {"strategy", nv ? "tensor_group" : "group"},
                    {"block_structure", nullptr},
                    {"dynamic", false},
                    {"actorder", nullptr},
                    {"scale_dtype", scale_dtype},
                    {"zp_dtype", scale_dtype},
                    {"observer", "minmax"},
                    {"observer_kwargs", Json::object()}};
    Json group = {{"targets", {"Linear"}},
                  {"weights", weights},
                  {"input_activations", nullptr},
                  {"output_activations", nullptr},
                  {"format", FormatString(f)}};
    return {{"quant_method", "compressed-tensors"},
            {"format", FormatString(f)},
            {"quantization_status", "compressed"},
            {"config_groups", {{"group_0", group}}},
            {"ignore", ignored},
            {"kv_cache_scheme", nullptr},
            {"sparsity_config", Json::object()},
            {"producer", {{"name", "mxpack"}}}};
  }

  std::vector<FoundQuantized> Find(const SafetensorsView& v) const override;
  absl::Status Dequantize(const SafetensorsView& v, const FoundQuantized& q,
                          absl::Span<float> out) const override;
};

bool Is(const StTensorInfo* t, StDtype d) { return t != nullptr && t->dtype == d; }

// Same rank and all dimensions but the last equal.
bool SameLeadingDims(const StTensorInfo& a, const StTensorInfo& b) {
  return a.shape.size() == b.shape.size() &&
         std::equal(a.shape.begin(), a.shape.end() - 1, b.shape.begin());
}

std::vector<FoundQuantized> CompressedTensors::Find(const SafetensorsView& v) const {
  std::vector<FoundQuantized> found;
  for (const StTensorInfo& t : v.tensors) {
    const size_t rank = t.shape.size();
    if (rank < 2 || rank > 3) continue;
    std::string base;
    FoundQuantized q;
    q.scheme = "compressed-tensors";
    if (absl::EndsWith(t.name, "_packed") && t.dtype == StDtype::kU8) {
      base = t.name.substr(0, t.name.size() - 7);
      const StTensorInfo* sc = v.Find(base + "_scale");
      const StTensorInfo* gs = v.Find(base + "_global_scale");
      if (sc == nullptr || !SameLeadingDims(*sc, t)) continue;
      q.shape = t.shape;
      q.shape.back() *= 2;
      const uint64_t cols = q.shape.back();
      if (Is(sc, StDtype::kF8E4M3) && Is(gs, StDtype::kF32) &&
          sc->shape.back() * 16 == cols) {
        q.format = "nvfp4";
        q.parts = {t.name, sc->name, gs->name};
      } else if (Is(sc, StDtype::kU8) && sc->shape.back() * 32 == cols) {
        q.format = "mxfp4";
        q.parts = {t.name, sc->name};
      } else {
        continue;
      }
    } else if (t.dtype == StDtype::kF8E4M3) {
      const StTensorInfo* sc = v.Find(t.name + "_scale");
      if (!Is(sc, StDtype::kU8) || !SameLeadingDims(*sc, t) ||
          sc->shape.back() * 32 != t.shape.back()) {
        continue;
      }
      base = t.name;
      q.format = "mxfp8";
      q.shape = t.shape;
      q.parts = {t.name, sc->name};
    } else {
      continue;
    }
    q.name = base;
    found.push_back(std::move(q));
  }
  return found;
}

absl::Status CompressedTensors::Dequantize(const SafetensorsView& v,
                                          const FoundQuantized& q,
                                          absl::Span<float> out) const {
  const StTensorInfo* el = v.Find(q.parts[0]);
  const StTensorInfo* sc = v.Find(q.parts[1]);
  const uint64_t cols = q.shape.back();
  uint64_t n = 1;
  for (uint64_t d : q.shape) n *= d;
  if (out.size() != n) return absl::InternalError("dequantize: output size");
  const uint64_t rows = n / cols;
  const uint64_t rows_per_expert = q.shape[q.shape.size() - 2];
  const uint8_t* e = v.Bytes(*el).data();
  const uint8_t* s = v.Bytes(*sc).data();
  if (q.format == "nvfp4") {
    const StTensorInfo* gt = v.Find(q.parts[2]);
    const uint64_t experts = gt->num_elements();
    if (experts == 0 || rows % experts != 0 ||
        (experts > 1 && experts * rows_per_expert != rows)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s': global scale has %d elements for %d rows", gt->name, experts,
          rows));
    }
    std::vector<float> gs(experts);
    std::memcpy(gs.data(), v.Bytes(*gt).data(), 4 * experts);
    // decompress: unpacked e2m1 * f32(float(scale) / global_scale), in f32.
    for (uint64_t r = 0; r < rows; ++r) {
      const float g = gs[experts == 1 ? 0 : r / rows_per_expert];
      for (uint64_t c = 0; c < cols; ++c) {
        const uint8_t b = e[(r * cols + c) / 2];
        const uint8_t code = (c % 2 == 0) ? (b & 0xF) : (b >> 4);
        const float d = DecodeToF32(Format::kE4M3, s[r * (cols / 16) + c / 16]);
        out[r * cols + c] = DecodeToF32(Format::kE2M1, code) * (d / g);
      }
    }
    return absl::OkStatus();
  }
  // MX: element * 2^(code - 127) (in bf16 by decompress_mx_scale; the product
  // is exact in f32 and rounds once to the output dtype).
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const int code = s[r * (cols / 32) + c / 32];
      float x;
      if (q.format == "mxfp8") {
        x = DecodeToF32(Format::kE4M3, e[r * cols + c]);
      } else {
        const uint8_t b = e[(r * cols + c) / 2];
        x = DecodeToF32(Format::kE2M1, (c % 2 == 0) ? (b & 0xF) : (b >> 4));
      }
      out[r * cols + c] =
          static_cast<float>(std::ldexp(static_cast<double>(x), code - 127));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const Scheme* CompressedTensorsScheme() {
  static const CompressedTensors* s = new CompressedTensors();
  return s;
}

}  // namespace mxpack::internal
