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
#include "src/checkpoint/stack_blocks.h"

namespace mxpack::internal {
using scalar::DecodeToF32;
namespace {

// Row chunks of about 1 MiB of input for the thread pool.
size_t ChunkRows(size_t cols) {
  return std::max<size_t>(1, (size_t{1} << 18) / std::max<size_t>(cols, 1));
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
  bool WritesEveryByte() const override { return true; }

  absl::Status Quantize(const SchemeJob& job, ThreadPool& pool,
                        absl::Span<const absl::Span<uint8_t>> outs,
                        std::map<std::string, std::string>&) const override {
    const WeightShape& s = job.shape;
    const size_t rows = s.experts * s.rows;
    const size_t step = ChunkRows(s.cols);
    const size_t chunks = (rows + step - 1) / step;
    StackBlocksArgs a;
    a.from = job.from;
    a.arith = job.format == MxFormat::kNvfp4   ? StackArith::kCtNvfp4
              : job.format == MxFormat::kMxfp4 ? StackArith::kCtMxfp4
                                               : StackArith::kCtMxfp8;
    const size_t block = StackBlockSize(a.arith);
    const size_t in_row = s.cols * (job.from == Format::kF32 ? 4 : 2);
    const size_t el_row = StackFp8(a.arith) ? s.cols : s.cols / 2;
    const size_t sc_row = s.cols / block;
    std::vector<float> gs(s.experts, 1.0f);
    if (a.arith == StackArith::kCtNvfp4) {
      for (size_t e = 0; e < s.experts; ++e) {
        gs[e] = CtGlobalScale(job.from, job.group_amax[e]);
      }
      std::memcpy(outs[2].data(), gs.data(), 4 * gs.size());  // little-endian
    }
    pool.ParallelFor(chunks, [&](size_t c) {
      // Whole rows of one expert at a time (one global scale).
      for (size_t r = c * step; r < std::min(rows, (c + 1) * step);) {
        const size_t e = r / s.rows;
        const size_t end = std::min({rows, (c + 1) * step, (e + 1) * s.rows});
        StackBlocksArgs ae = a;
        ae.tensor_scale = gs[e];
        QuantizeStackBlocks(ae, job.bytes.data() + r * in_row, (end - r) * sc_row,
                            outs[0].data() + r * el_row, outs[1].data() + r * sc_row,
                            job.options != nullptr ? job.options->impl : Impl{});
        r = end;
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
                          uint64_t first_row,
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
        q.part_info = {&t, sc, gs};
      } else if (Is(sc, StDtype::kU8) && sc->shape.back() * 32 == cols) {
        q.format = "mxfp4";
        q.parts = {t.name, sc->name};
        q.part_info = {&t, sc};
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
      q.part_info = {&t, sc};
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
                                           uint64_t first_row,
                                           absl::Span<float> out) const {
  if (absl::Status st = CheckRowRange(q, first_row, out.size()); !st.ok())
    return st;
  if (out.empty()) return absl::OkStatus();
  const StTensorInfo* el = q.Part(v, 0);
  const StTensorInfo* sc = q.Part(v, 1);
  const uint64_t cols = q.shape.back();
  const uint64_t rows = FoundRows(q);
  const uint64_t end_row = first_row + out.size() / cols;
  const uint64_t rows_per_expert = q.shape[q.shape.size() - 2];
  const uint8_t* e = v.Bytes(*el).data();
  const uint8_t* s = v.Bytes(*sc).data();
  const float* e2m1 = E2m1Values();
  if (q.format == "nvfp4") {
    const StTensorInfo* gt = q.Part(v, 2);
    const uint64_t experts = gt->num_elements();
    if (experts == 0 || rows % experts != 0 ||
        (experts > 1 && experts * rows_per_expert != rows)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s': global scale has %d elements for %d rows", gt->name, experts,
          rows));
    }
    const uint8_t* gs = v.Bytes(*gt).data();
    // decompress: unpacked e2m1 * f32(float(scale) / global_scale), in f32,
    // one block of 16 (8 bytes, low nibble first) per scale.
    const float* e4m3 = E4m3Values();
    for (uint64_t r = first_row; r < end_row; ++r) {
      float g;
      std::memcpy(&g, gs + 4 * (experts == 1 ? 0 : r / rows_per_expert), 4);
      for (uint64_t k = 0; k < cols / 16; ++k) {
        const float d = e4m3[s[r * (cols / 16) + k]] / g;
        const uint8_t* b = e + (r * cols + 16 * k) / 2;
        float* o = out.data() + (r - first_row) * cols + 16 * k;
        for (size_t j = 0; j < 8; ++j) {
          o[2 * j] = e2m1[b[j] & 0xF] * d;
          o[2 * j + 1] = e2m1[b[j] >> 4] * d;
        }
      }
    }
    return absl::OkStatus();
  }
  // MX: element * 2^(code - 127) (in bf16 by decompress_mx_scale; the product
  // is exact in f32 and rounds once to the output dtype), one block of 32
  // per scale.
  const float* e4m3 = E4m3Values();
  const bool fp8 = q.format == "mxfp8";
  for (uint64_t r = first_row; r < end_row; ++r) {
    for (uint64_t k = 0; k < cols / 32; ++k) {
      float* o = out.data() + (r - first_row) * cols + 32 * k;
      if (fp8) {
        const uint8_t* b = e + r * cols + 32 * k;
        for (size_t j = 0; j < 32; ++j) o[j] = e4m3[b[j]];
      } else {
        const uint8_t* b = e + (r * cols + 32 * k) / 2;
        for (size_t j = 0; j < 16; ++j) {
          o[2 * j] = e2m1[b[j] & 0xF];
          o[2 * j + 1] = e2m1[b[j] >> 4];
        }
      }
      ScaleByE8m0(o, 32, s[r * (cols / 32) + k]);
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
