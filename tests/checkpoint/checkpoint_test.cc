// Whole checkpoints (QuantizeCheckpoint / DequantizeCheckpoint): the bytes of
// the compressed-tensors scheme against golden files written by
// compressed-tensors itself (golden/make_golden.py), model directories, shards
// in and out (a fused group spanning two shards), every safetensors dtype,
// 3-D expert tensors, the default selection, --dry-run and a failure midway.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mxpack/model.h"
#include "mxpack/safetensors.h"
#include "nlohmann/json.hpp"

#ifndef MXPACK_GOLDEN_DIR
#error "MXPACK_GOLDEN_DIR must name tests/checkpoint/golden"
#endif

namespace mxpack {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// A temporary directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "mxpack-ckpt-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

struct Loaded {
  std::unique_ptr<MappedFile> file;
  SafetensorsView view;
};

Loaded Load(const std::string& path) {
  Loaded l;
  absl::StatusOr<std::unique_ptr<MappedFile>> f = MappedFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return l;
  l.file = *std::move(f);
  absl::StatusOr<SafetensorsView> v = ParseSafetensors(l.file->bytes());
  EXPECT_TRUE(v.ok()) << path << ": " << v.status();
  if (v.ok()) l.view = *std::move(v);
  return l;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Every tensor of `want` is in `got` with the same dtype, shape and bytes.
void ExpectTensorsEqual(const SafetensorsView& want, const SafetensorsView& got,
                        const std::string& what) {
  for (const StTensorInfo& w : want.tensors) {
    const StTensorInfo* g = got.Find(w.name);
    ASSERT_NE(g, nullptr) << what << ": missing " << w.name;
    EXPECT_EQ(StDtypeName(g->dtype), StDtypeName(w.dtype)) << what << ": " << w.name;
    EXPECT_EQ(g->shape, w.shape) << what << ": " << w.name;
    const absl::Span<const uint8_t> a = want.Bytes(w), b = got.Bytes(*g);
    if (a != b) {
      size_t i = 0;
      while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
      ADD_FAILURE() << what << ": " << w.name << " differs at byte " << i << ": expected 0x"
                    << std::hex << int(a[i]) << ", got 0x" << int(b[i]);
    }
  }
}

const std::string kGolden = MXPACK_GOLDEN_DIR;

struct GoldenCase {
  const char* file;
  const char* scheme;
  MxFormat format;
  size_t kept;  // input tensors left unquantized
};

class GoldenTest : public testing::TestWithParam<GoldenCase> {};

// The compressed-tensors and modelopt schemes write exactly what
// compressed-tensors' compressors and ModelOpt's NVFP4QTensor / MXFP8QTensor write for the
// same weights (fused-group global scales, f16 / bf16 / f32 inputs, a zero
// block, -0, ties, a 3-D expert tensor), and dequantize-model gives exactly
// what their dequantizers give (bf16).
TEST_P(GoldenTest, BytesEqualCompressedTensors) {
  const GoldenCase c = GetParam();
  TempDir t;
  CheckpointOptions o;
  o.scheme = c.scheme;
  o.format = c.format;
  o.threads = 2;
  const Loaded want = Load(kGolden + "/" + c.file + ".safetensors");
  // The scalar reference of the block quantizers too.
  o.impl = Impl{Impl::kScalar};
  absl::StatusOr<CheckpointReport> r =
      QuantizeCheckpoint(kGolden + "/input.safetensors", t / "s.safetensors", o);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensorsEqual(want.view, Load(t / "s.safetensors").view,
                     std::string(c.file) + " (scalar)");
  o.impl = Impl{};
  r = QuantizeCheckpoint(kGolden + "/input.safetensors", t / "q.safetensors", o);
  ASSERT_TRUE(r.ok()) << r.status();
  const Loaded got = Load(t / "q.safetensors");
  ExpectTensorsEqual(want.view, got.view, c.file);
  // Left unquantized by default: router, norm, lm_head, byte for byte.
  const Loaded in = Load(kGolden + "/input.safetensors");
  for (const char* name : {"model.layers.1.mlp.gate.weight", "model.norm.weight",
                           "lm_head.weight"}) {
    ASSERT_NE(got.view.Find(name), nullptr) << name;
    EXPECT_TRUE(got.view.Bytes(*got.view.Find(name)) == in.view.Bytes(*in.view.Find(name)))
        << name;
  }
  EXPECT_EQ(got.view.tensors.size(), want.view.tensors.size() + c.kept);

  absl::StatusOr<CheckpointReport> d =
      DequantizeCheckpoint(t / "q.safetensors", t / "d.safetensors", {});
  ASSERT_TRUE(d.ok()) << d.status();
  const Loaded dwant = Load(kGolden + "/" + c.file + ".dequant.safetensors");
  const Loaded dgot = Load(t / "d.safetensors");
  ExpectTensorsEqual(dwant.view, dgot.view, std::string(c.file) + " dequantized");
}

INSTANTIATE_TEST_SUITE_P(Formats, GoldenTest,
                         testing::Values(
                             GoldenCase{"nvfp4", "compressed-tensors", MxFormat::kNvfp4, 3},
                             GoldenCase{"mxfp4", "compressed-tensors", MxFormat::kMxfp4, 3},
                             GoldenCase{"mxfp8", "compressed-tensors", MxFormat::kMxfp8E4m3, 3},
                             // ModelOpt keeps the 3-D expert tensor too.
                             GoldenCase{"modelopt_nvfp4", "modelopt", MxFormat::kNvfp4, 4},
                             GoldenCase{"modelopt_mxfp8", "modelopt", MxFormat::kMxfp8E4m3, 4}),
                         [](const testing::TestParamInfo<GoldenCase>& p) {
                           return std::string(p.param.file);
                         });

// A small Llama-like checkpoint as tensors (bf16 weights filled from `seed`).
struct Tensor {
  std::string name;
  StDtype dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;
};

Tensor Bf16(const std::string& name, std::vector<uint64_t> shape, uint32_t seed,
            float scale = 1.0f) {
  Tensor t{name, StDtype::kBF16, shape, {}};
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  t.bytes.resize(2 * n);
  uint32_t s = seed * 2654435761u + 1;
  for (uint64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float f = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * scale;
    uint32_t b;
    std::memcpy(&b, &f, 4);
    t.bytes[2 * i] = static_cast<uint8_t>(b >> 16);
    t.bytes[2 * i + 1] = static_cast<uint8_t>(b >> 24);
  }
  return t;
}

void WriteShard(const std::string& path, const std::vector<Tensor>& tensors) {
  std::vector<StTensorOut> out;
  for (const Tensor& t : tensors) out.push_back({t.name, t.dtype, t.shape, t.bytes});
  absl::Status s = WriteSafetensors(path, out, {{"format", "pt"}});
  ASSERT_TRUE(s.ok()) << s;
}

// Two shards; layer 0's q_proj sits in shard 1 and its k/v in shard 2, with
// the group's largest value in v_proj.
void MakeShardedModel(const std::string& dir) {
  fs::create_directories(dir + "/tokenizer");
  const uint64_t h = 64;
  std::vector<Tensor> s1 = {Bf16("model.embed_tokens.weight", {100, h}, 1),
                            Bf16("model.layers.0.input_layernorm.weight", {h}, 2),
                            Bf16("model.layers.0.self_attn.q_proj.weight", {h, h}, 3)};
  std::vector<Tensor> s2 = {Bf16("model.layers.0.self_attn.k_proj.weight", {32, h}, 4),
                            Bf16("model.layers.0.self_attn.v_proj.weight", {32, h}, 5, 8.0f),
                            Bf16("model.layers.0.self_attn.o_proj.weight", {h, h}, 6),
                            Bf16("model.layers.0.mlp.gate_proj.weight", {128, h}, 7),
                            Bf16("model.layers.0.mlp.up_proj.weight", {128, h}, 8),
                            Bf16("model.layers.0.mlp.down_proj.weight", {h, 128}, 9),
                            Bf16("model.norm.weight", {h}, 10),
                            Bf16("lm_head.weight", {100, h}, 11)};
  WriteShard(dir + "/model-00001-of-00002.safetensors", s1);
  WriteShard(dir + "/model-00002-of-00002.safetensors", s2);
  Json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", Json::object()}};
  for (const Tensor& t : s1) index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
  for (const Tensor& t : s2) index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
  WriteFile(dir + "/model.safetensors.index.json", index.dump(2));
  WriteFile(dir + "/config.json", R"({"model_type": "llama", "hidden_size": 64})");
  WriteFile(dir + "/generation_config.json", R"({"do_sample": false})");
  WriteFile(dir + "/tokenizer/tokenizer.json", "{}");
}

// Reads the output directory: tensor name -> (shard, bytes).
std::map<std::string, std::vector<uint8_t>> ReadDir(const std::string& dir,
                                                    std::map<std::string, std::string>* shard_of) {
  std::map<std::string, std::vector<uint8_t>> all;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    Loaded l = Load(e.path().string());
    for (const StTensorInfo& t : l.view.tensors) {
      const absl::Span<const uint8_t> b = l.view.Bytes(t);
      all[t.name] = std::vector<uint8_t>(b.begin(), b.end());
      if (shard_of) (*shard_of)[t.name] = e.path().filename().string();
    }
  }
  return all;
}

TEST(CheckpointTest, ShardedDirectoryInAndOutWithFusedGroupAcrossShards) {
  TempDir t;
  MakeShardedModel(t / "in");
  CheckpointOptions o;
  o.max_shard_bytes = 12000;  // several output shards
  absl::StatusOr<CheckpointReport> r = QuantizeCheckpoint(t / "in", t / "out", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->quantized_tensors, 7u);
  EXPECT_GT(r->output_shards.size(), 2u);
  EXPECT_FALSE(fs::exists(t / "out.mxpack-tmp"));

  // The index lists every output tensor in the shard that holds it.
  const Json index = Json::parse(ReadFile(t / "out/model.safetensors.index.json"));
  std::map<std::string, std::string> shard_of;
  const auto all = ReadDir(t / "out", &shard_of);
  uint64_t total = 0;
  for (const auto& [name, bytes] : all) total += bytes.size();
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), total);
  EXPECT_EQ(index["weight_map"].size(), all.size());
  for (const auto& [name, shard] : shard_of) EXPECT_EQ(index["weight_map"][name], shard) << name;

  // Fused q/k/v share one global scale although q is in the other shard;
  // gate/up share theirs; o_proj has its own.
  const std::string p = "model.layers.0.";
  const auto& q = all.at(p + "self_attn.q_proj.weight_global_scale");
  EXPECT_EQ(q, all.at(p + "self_attn.k_proj.weight_global_scale"));
  EXPECT_EQ(q, all.at(p + "self_attn.v_proj.weight_global_scale"));
  EXPECT_EQ(all.at(p + "mlp.gate_proj.weight_global_scale"),
            all.at(p + "mlp.up_proj.weight_global_scale"));
  EXPECT_NE(q, all.at(p + "self_attn.o_proj.weight_global_scale"));
  float gs;
  std::memcpy(&gs, q.data(), 4);
  EXPECT_LT(gs, 2688.0f / 3.9f);  // from v_proj's amax (about 4), not q's (0.5)

  // Unquantized tensors and the other files are kept; config.json gains the
  // quantization_config with lm_head in its ignore list.
  EXPECT_TRUE(all.count("model.embed_tokens.weight"));
  EXPECT_TRUE(all.count("lm_head.weight"));
  EXPECT_EQ(ReadFile(t / "out/generation_config.json"), R"({"do_sample": false})");
  EXPECT_EQ(ReadFile(t / "out/tokenizer/tokenizer.json"), "{}");
  const Json config = Json::parse(ReadFile(t / "out/config.json"));
  EXPECT_EQ(config["hidden_size"], 64);
  const Json& qc = config["quantization_config"];
  EXPECT_EQ(qc["quant_method"], "compressed-tensors");
  EXPECT_EQ(qc["format"], "nvfp4-pack-quantized");
  EXPECT_EQ(qc["quantization_status"], "compressed");
  EXPECT_EQ(qc["config_groups"]["group_0"]["weights"]["strategy"], "tensor_group");
  EXPECT_EQ(qc["config_groups"]["group_0"]["weights"]["group_size"], 16);
  EXPECT_EQ(qc["ignore"], Json::array({"lm_head"}));

  // The same run with one big shard gives the same tensors.
  TempDir t2;
  CheckpointOptions one;
  absl::StatusOr<CheckpointReport> r1 = QuantizeCheckpoint(t / "in", t2 / "out", one);
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->output_shards, std::vector<std::string>{"model.safetensors"});
  EXPECT_FALSE(fs::exists(t2 / "out/model.safetensors.index.json"));
  EXPECT_EQ(ReadDir(t2 / "out", nullptr), all);

  // dequantize-model turns the sharded output back into a plain checkpoint.
  absl::StatusOr<CheckpointReport> d = DequantizeCheckpoint(t / "out", t / "back", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->quantized_tensors, 7u);
  const auto back = ReadDir(t / "back", nullptr);
  EXPECT_EQ(back.size(), 11u);
  EXPECT_EQ(back.at(p + "mlp.down_proj.weight").size(), 64u * 128 * 2);
  EXPECT_FALSE(Json::parse(ReadFile(t / "back/config.json")).contains("quantization_config"));
  const Json bindex = Json::parse(ReadFile(t / "back/model.safetensors.index.json"));
  EXPECT_EQ(bindex["weight_map"].size(), 11u);

  // inspect lists both shards and the compressed-tensors tensors.
  absl::StatusOr<std::string> text = InspectCheckpointText(t / "out");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(text->find("model.layers.0.self_attn.k_proj.weight: compressed-tensors nvfp4 [32, 64]"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("config.json quantization_config"), std::string::npos);
}

TEST(CheckpointTest, ModelOptDirectoryHasHfQuantConfig) {
  TempDir t;
  MakeShardedModel(t / "in");
  CheckpointOptions o;
  o.scheme = "modelopt";
  absl::StatusOr<CheckpointReport> r = QuantizeCheckpoint(t / "in", t / "out", o);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string text = ReadFile(t / "out/hf_quant_config.json");
  EXPECT_NE(text.find("\n    \"producer\": {"), std::string::npos) << text;  // indent 4
  const Json hq = Json::parse(text);
  EXPECT_EQ(hq["quantization"]["quant_algo"], "NVFP4");
  EXPECT_EQ(hq["quantization"]["group_size"], 16);
  EXPECT_TRUE(hq["quantization"]["kv_cache_quant_algo"].is_null());
  EXPECT_EQ(hq["quantization"]["exclude_modules"], Json::array({"lm_head"}));
  const Json qc = Json::parse(ReadFile(t / "out/config.json"))["quantization_config"];
  EXPECT_EQ(qc["quant_method"], "modelopt");
  EXPECT_EQ(qc["quant_algo"], "NVFP4");
  std::map<std::string, std::string> shard_of;
  const auto all = ReadDir(t / "out", &shard_of);
  const std::string p = "model.layers.0.self_attn.";
  EXPECT_EQ(all.at(p + "q_proj.weight").size(), 64u * 32);
  EXPECT_EQ(all.at(p + "q_proj.weight_scale_2"), all.at(p + "v_proj.weight_scale_2"));
  // dequantize-model drops hf_quant_config.json and the quantization_config.
  ASSERT_TRUE(DequantizeCheckpoint(t / "out", t / "back", {}).ok());
  EXPECT_FALSE(fs::exists(t / "back/hf_quant_config.json"));
  EXPECT_EQ(ReadDir(t / "back", nullptr).at(p + "q_proj.weight").size(), 64u * 64 * 2);
}

// ModelOpt MXFP8: hf_quant_config.json names MXFP8 with group size 32, the
// config.json quantization_config has no config_groups (ModelOpt's converter
// has none for MXFP8), the tensors are F8_E4M3 X.weight and U8 X.weight_scale,
// and dequantize-model reads them back.
TEST(CheckpointTest, ModelOptMxfp8Directory) {
  TempDir t;
  MakeShardedModel(t / "in");
  CheckpointOptions o;
  o.scheme = "modelopt";
  o.format = MxFormat::kMxfp8E4m3;
  absl::StatusOr<CheckpointReport> r = QuantizeCheckpoint(t / "in", t / "out", o);
  ASSERT_TRUE(r.ok()) << r.status();
  const Json hq = Json::parse(ReadFile(t / "out/hf_quant_config.json"));
  EXPECT_EQ(hq["quantization"]["quant_algo"], "MXFP8");
  EXPECT_EQ(hq["quantization"]["group_size"], 32);
  EXPECT_TRUE(hq["quantization"]["kv_cache_quant_algo"].is_null());
  const Json qc = Json::parse(ReadFile(t / "out/config.json"))["quantization_config"];
  EXPECT_EQ(qc["quant_method"], "modelopt");
  EXPECT_EQ(qc["quant_algo"], "MXFP8");
  EXPECT_FALSE(qc.contains("config_groups"));
  EXPECT_EQ(qc["ignore"], Json::array({"lm_head"}));
  const auto all = ReadDir(t / "out", nullptr);
  const std::string p = "model.layers.0.self_attn.";
  EXPECT_EQ(all.at(p + "q_proj.weight").size(), 64u * 64);
  EXPECT_EQ(all.at(p + "q_proj.weight_scale").size(), 64u * 2);
  EXPECT_EQ(all.count(p + "q_proj.weight_scale_2"), 0u);
  ASSERT_TRUE(DequantizeCheckpoint(t / "out", t / "back", {}).ok());
  EXPECT_FALSE(fs::exists(t / "back/hf_quant_config.json"));
  EXPECT_EQ(ReadDir(t / "back", nullptr).at(p + "q_proj.weight").size(), 64u * 64 * 2);
}

TEST(CheckpointTest, DefaultSelectionReasonsAndDryRun) {
  TempDir t;
  MakeShardedModel(t / "in");
  CheckpointOptions o;
  o.dry_run = true;
  o.ignore = "o_proj";
  absl::StatusOr<CheckpointReport> r = QuantizeCheckpoint(t / "in", t / "out", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(fs::exists(t / "out"));
  std::map<std::string, const PlannedTensor*> by;
  for (const PlannedTensor& p : r->tensors) by[p.name] = &p;
  EXPECT_EQ(by.at("model.embed_tokens.weight")->reason, "embedding");
  EXPECT_EQ(by.at("lm_head.weight")->reason, "lm_head (output projection)");
  EXPECT_EQ(by.at("model.norm.weight")->reason, "1-D (not a matrix)");
  EXPECT_EQ(by.at("model.layers.0.self_attn.o_proj.weight")->reason,
            "matches --ignore 'o_proj'");
  const PlannedTensor& q = *by.at("model.layers.0.self_attn.q_proj.weight");
  EXPECT_TRUE(q.quantized);
  EXPECT_EQ(q.group, "model.layers.0.self_attn.{q,k,v}_proj");
  ASSERT_EQ(q.outputs.size(), 3u);
  EXPECT_EQ(q.outputs[0].name, "model.layers.0.self_attn.q_proj.weight_packed");
  EXPECT_EQ(q.outputs[0].shape, (std::vector<uint64_t>{64, 32}));
  EXPECT_EQ(q.outputs[1].bytes, 64u * 4);
  const std::string text = CheckpointReportText(*r);
  EXPECT_NE(text.find("quantize-model --dry-run: scheme compressed-tensors, format nvfp4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("-> model.layers.0.self_attn.q_proj.weight_scale F8_E4M3 [64, 4], 256 bytes"),
            std::string::npos)
      << text;

  // --include forces a tensor in; --ignore wins over it; nothing selected is
  // an error.
  o.include = "embed_tokens|o_proj";
  r = QuantizeCheckpoint(t / "in", t / "out", o);
  ASSERT_TRUE(r.ok());
  for (const PlannedTensor& p : r->tensors) {
    if (p.name == "model.embed_tokens.weight") {
      EXPECT_TRUE(p.quantized);
    }
    if (p.name == "model.layers.0.self_attn.o_proj.weight") {
      EXPECT_FALSE(p.quantized);
    }
  }
  o.include = "";
  o.ignore = ".";
  r = QuantizeCheckpoint(t / "in", t / "out", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no tensor selected"), std::string::npos);
}

TEST(CheckpointTest, FailureMidwayLeavesNoOutput) {
  TempDir t;
  MakeShardedModel(t / "in");
  CheckpointOptions o;
  o.max_shard_bytes = 12000;
  int written = 0;
  o.before_write = [&](const std::string& shard) {
    return ++written == 2 ? absl::DataLossError("disk full (injected) at " + shard)
                          : absl::OkStatus();
  };
  absl::StatusOr<CheckpointReport> r = QuantizeCheckpoint(t / "in", t / "out", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("disk full (injected)"), std::string::npos);
  EXPECT_EQ(written, 2);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(t.path())) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"in"});

  // An existing output directory is replaced only when it is empty.
  fs::create_directory(t / "out");
  WriteFile(t / "out/keep.txt", "mine");
  o.before_write = nullptr;
  r = QuantizeCheckpoint(t / "in", t / "out", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is a non-empty directory"),
            std::string::npos)
      << r.status();
  EXPECT_EQ(ReadFile(t / "out/keep.txt"), "mine");
  fs::remove(t / "out/keep.txt");
  r = QuantizeCheckpoint(t / "in", t / "out", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(fs::exists(t / "out/model.safetensors.index.json"));
}

// dequantize-model streams its shards through the writer thread; a tensor
// that fails in a later shard (compressed-tensors: a global scale of two
// elements for one matrix; mxpack records: an NVFP4 scale byte with its sign
// bit set) fails the run, naming the shard and the tensor, after the first
// shard was written, and leaves no output.
TEST(CheckpointTest, DequantizeFailureMidwayLeavesNoOutput) {
  for (const char* scheme : {"compressed-tensors", "mxpack"}) {
    SCOPED_TRACE(scheme);
    const bool records = std::string(scheme) == "mxpack";
    TempDir t;
    MakeShardedModel(t / "in");
    CheckpointOptions o;
    o.scheme = scheme;
    o.format = MxFormat::kNvfp4;
    o.max_shard_bytes = 12000;
    absl::StatusOr<CheckpointReport> q =
        QuantizeCheckpoint(t / "in", t / "out", o);
    ASSERT_TRUE(q.ok()) << q.status();
    ASSERT_GT(q->output_shards.size(), 2u);
    // The last shard holding a tensor to break (not the first shard).
    const char* suffix = records ? ".scales" : ".weight_global_scale";
    std::string shard, broken;
    std::vector<StTensorOut> tensors;
    std::vector<uint8_t> bad;
    std::unique_ptr<Loaded> l;
    for (size_t k = q->output_shards.size() - 1; k > 0 && broken.empty(); --k) {
      shard = q->output_shards[k];
      l = std::make_unique<Loaded>(Load(t / ("out/" + shard)));
      tensors.clear();
      for (const StTensorInfo& ti : l->view.tensors) {
        tensors.push_back({ti.name, ti.dtype, ti.shape, l->view.Bytes(ti)});
        if (!broken.empty() || !absl::EndsWith(ti.name, suffix)) continue;
        broken = ti.name.substr(0, ti.name.size() - std::strlen(suffix));
        if (records) {
          bad.assign(tensors.back().data.begin(), tensors.back().data.end());
          bad[0] = 0xCF;
        } else {
          bad.assign(8, 0);
          tensors.back().shape = {2};
        }
        tensors.back().data = bad;
      }
    }
    ASSERT_FALSE(broken.empty());
    const std::string path = t / ("out/" + shard);
    ASSERT_TRUE(
        WriteSafetensors(path + ".new", tensors, l->view.metadata).ok());
    l.reset();
    fs::rename(path + ".new", path);
    DequantizeModelOptions d;
    d.threads = 2;
    absl::StatusOr<CheckpointReport> r =
        DequantizeCheckpoint(t / "out", t / "back", d);
    ASSERT_FALSE(r.ok());
    const std::string msg(r.status().message());
    EXPECT_NE(msg.find(records ? "the sign bit must be 0"
                               : "global scale has 2 elements"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(shard + ": tensor '" + broken), std::string::npos)
        << msg;
    std::set<std::string> left;
    for (const auto& e : fs::directory_iterator(t.path())) {
      left.insert(e.path().filename().string());
    }
    EXPECT_EQ(left, (std::set<std::string>{"in", "out"}));
  }
}

// DequantizeCheckpoint's progress: one call per output tensor, counts that
// only grow, and at the end every tensor and every input byte, for both
// kinds of shards (mxpack records, compressed-tensors).
TEST(CheckpointTest, DequantizeReportsProgressPerTensor) {
  for (const char* scheme : {"compressed-tensors", "mxpack"}) {
    SCOPED_TRACE(scheme);
    TempDir t;
    MakeShardedModel(t / "in");
    CheckpointOptions o;
    o.scheme = scheme;
    o.max_shard_bytes = 12000;
    ASSERT_TRUE(QuantizeCheckpoint(t / "in", t / "out", o).ok());
    uint64_t in_files = 0;
    for (const auto& e : fs::directory_iterator(t / "out")) {
      if (e.path().extension() == ".safetensors")
        in_files += fs::file_size(e.path());
    }
    std::vector<ModelProgress> calls;
    DequantizeModelOptions d;
    d.progress = [&](const ModelProgress& p) { calls.push_back(p); };
    absl::StatusOr<CheckpointReport> r =
        DequantizeCheckpoint(t / "out", t / "back", d);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(calls.size(), r->tensors.size());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].tensors_done, i + 1);
      EXPECT_LE(calls[i].tensors_done, calls[i].tensors_total);
      EXPECT_EQ(calls[i].bytes_total, in_files);
      if (i > 0) {
        EXPECT_GT(calls[i].bytes_done, calls[i - 1].bytes_done);
      }
    }
    EXPECT_EQ(calls.back().tensors_total, r->tensors.size());
    EXPECT_EQ(calls.back().bytes_done, in_files);
  }
}

// A write that fails on the writer thread (here: the staging directory
// removed under it) fails the run, naming a file, and leaves no output.
TEST(CheckpointTest, WriterFailureLeavesNoOutput) {
  TempDir t;
  MakeShardedModel(t / "in");
  for (const char* scheme : {"compressed-tensors", "mxpack"}) {
    CheckpointOptions o;
    o.scheme = scheme;
    o.max_shard_bytes = 12000;
    int written = 0;
    o.before_write = [&](const std::string&) {
      if (++written == 2) {
        for (const auto& e : fs::directory_iterator(t.path())) {
          if (absl::StartsWith(e.path().filename().string(), "out.mxpack-tmp.")) {
            // The writer thread may add a file while the tree is removed:
            // remove until it is gone.
            std::error_code ec;
            for (int i = 0; i < 100 && fs::exists(e.path(), ec); ++i) {
              fs::remove_all(e.path(), ec);
            }
          }
        }
      }
      return absl::OkStatus();
    };
    absl::StatusOr<CheckpointReport> r = QuantizeCheckpoint(t / "in", t / "out", o);
    ASSERT_FALSE(r.ok()) << scheme;
    EXPECT_NE(r.status().message().find(".safetensors"), std::string::npos)
        << r.status();
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(t.path())) {
      left.push_back(e.path().filename().string());
    }
    EXPECT_EQ(left, std::vector<std::string>{"in"}) << scheme;
  }
}

TEST(CheckpointTest, EverySafetensorsDtypeIsCopied) {
  TempDir t;
  struct D {
    StDtype dtype;
    std::vector<uint64_t> shape;
  };
  const D dtypes[] = {{StDtype::kBool, {3}},     {StDtype::kU8, {3}},     {StDtype::kI8, {3}},
                      {StDtype::kU16, {3}},      {StDtype::kI16, {3}},    {StDtype::kF16, {3}},
                      {StDtype::kBF16, {3}},     {StDtype::kU32, {3}},    {StDtype::kI32, {3}},
                      {StDtype::kF32, {3}},      {StDtype::kU64, {3}},    {StDtype::kI64, {3}},
                      {StDtype::kF64, {3}},      {StDtype::kF8E4M3, {3}}, {StDtype::kF8E5M2, {3}},
                      {StDtype::kF8E8M0, {3}},   {StDtype::kF4, {2, 4}},  {StDtype::kF6E2M3, {4}},
                      {StDtype::kF6E3M2, {2, 4}}, {StDtype::kC64, {3}}};
  std::vector<Tensor> tensors = {Bf16("layer.weight", {16, 32}, 1)};
  for (const D& d : dtypes) {
    Tensor x{absl::StrCat("t_", StDtypeName(d.dtype)), d.dtype, d.shape, {}};
    uint64_t n = 1;
    for (uint64_t s : d.shape) n *= s;
    x.bytes.resize(*StDtypeBytes(d.dtype, n));
    for (size_t i = 0; i < x.bytes.size(); ++i) x.bytes[i] = static_cast<uint8_t>(i * 7 + 1);
    tensors.push_back(x);
  }
  WriteShard(t / "in.safetensors", tensors);
  absl::StatusOr<CheckpointReport> r =
      QuantizeCheckpoint(t / "in.safetensors", t / "out.safetensors", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->quantized_tensors, 1u);
  const Loaded in = Load(t / "in.safetensors");
  const Loaded out = Load(t / "out.safetensors");
  for (const Tensor& x : tensors) {
    if (x.name == "layer.weight") continue;
    const StTensorInfo* o = out.view.Find(x.name);
    ASSERT_NE(o, nullptr) << x.name;
    EXPECT_EQ(o->dtype, x.dtype) << x.name;
    EXPECT_EQ(o->shape, x.shape) << x.name;
    EXPECT_TRUE(out.view.Bytes(*o) == absl::MakeConstSpan(x.bytes)) << x.name;
  }
  // A sub-byte tensor that does not end on a byte boundary is malformed.
  EXPECT_FALSE(StDtypeBytes(StDtype::kF4, 3).has_value());
  EXPECT_EQ(*StDtypeBytes(StDtype::kF6E2M3, 4), 3u);
}

TEST(CheckpointTest, ExpertTensorsAndSchemeErrors) {
  TempDir t;
  WriteShard(t / "moe.safetensors",
             {Bf16("model.layers.0.mlp.experts.gate_up_proj", {4, 64, 32}, 1),
              Bf16("model.layers.0.mlp.experts.down_proj", {4, 32, 32}, 2),
              Bf16("model.layers.0.mlp.router.weight", {4, 32}, 3),
              Bf16("model.layers.0.mlp.experts.gate_up_proj_bias", {4, 64}, 4)});
  CheckpointOptions o;
  o.format = MxFormat::kMxfp4;
  o.dry_run = true;
  absl::StatusOr<CheckpointReport> r =
      QuantizeCheckpoint(t / "moe.safetensors", t / "o", o);
  ASSERT_TRUE(r.ok()) << r.status();
  std::map<std::string, const PlannedTensor*> by;
  for (const PlannedTensor& p : r->tensors) by[p.name] = &p;
  const PlannedTensor& gu = *by.at("model.layers.0.mlp.experts.gate_up_proj");
  EXPECT_TRUE(gu.quantized);
  EXPECT_EQ(gu.reason, "fused expert weights (3-D)");
  EXPECT_EQ(gu.outputs[0].name, "model.layers.0.mlp.experts.gate_up_proj_packed");
  EXPECT_EQ(gu.outputs[0].shape, (std::vector<uint64_t>{4, 64, 16}));
  EXPECT_EQ(gu.outputs[1].shape, (std::vector<uint64_t>{4, 64, 1}));
  EXPECT_EQ(by.at("model.layers.0.mlp.router.weight")->reason, "MoE router / gate");
  EXPECT_EQ(by.at("model.layers.0.mlp.experts.gate_up_proj_bias")->reason, "bias");

  // NVFP4 of 3-D experts: one global scale per expert; dequantize restores
  // the 3-D shape.
  o.format = MxFormat::kNvfp4;
  o.dry_run = false;
  r = QuantizeCheckpoint(t / "moe.safetensors", t / "q.safetensors", o);
  ASSERT_TRUE(r.ok()) << r.status();
  Loaded q = Load(t / "q.safetensors");
  const StTensorInfo* gs = q.view.Find("model.layers.0.mlp.experts.down_proj_global_scale");
  ASSERT_NE(gs, nullptr);
  EXPECT_EQ(gs->shape, (std::vector<uint64_t>{4, 1}));
  ASSERT_TRUE(DequantizeCheckpoint(t / "q.safetensors", t / "d.safetensors", {}).ok());
  Loaded d = Load(t / "d.safetensors");
  ASSERT_NE(d.view.Find("model.layers.0.mlp.experts.down_proj"), nullptr);
  EXPECT_EQ(d.view.Find("model.layers.0.mlp.experts.down_proj")->shape,
            (std::vector<uint64_t>{4, 32, 32}));

  // The mxpack scheme keeps 3-D shapes through its records too.
  o.scheme = "mxpack";
  o.format = MxFormat::kMxfp6E2m3;
  ASSERT_TRUE(QuantizeCheckpoint(t / "moe.safetensors", t / "m.safetensors", o).ok());
  ASSERT_TRUE(DequantizeCheckpoint(t / "m.safetensors", t / "md.safetensors", {}).ok());
  Loaded md = Load(t / "md.safetensors");
  EXPECT_EQ(md.view.Find("model.layers.0.mlp.experts.gate_up_proj")->shape,
            (std::vector<uint64_t>{4, 64, 32}));
  EXPECT_EQ(md.view.Find("model.layers.0.mlp.experts.gate_up_proj")->dtype, StDtype::kBF16);

  // A format the scheme lacks names the schemes that have it.
  o.scheme = "compressed-tensors";
  r = QuantizeCheckpoint(t / "moe.safetensors", t / "x.safetensors", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "format: scheme 'compressed-tensors' has no mxfp6_e2m3; schemes with "
            "mxfp6_e2m3: mxpack");
  o.scheme = "tensorrt";
  r = QuantizeCheckpoint(t / "moe.safetensors", t / "x.safetensors", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown scheme 'tensorrt'"), std::string::npos);
  EXPECT_FALSE(fs::exists(t / "x.safetensors"));
}

TEST(CheckpointTest, GptOssExpertsBecomeBlocksAndScales) {
  TempDir t;
  // gpt-oss keeps experts as [E, in, out].
  Tensor gu = Bf16("model.layers.0.mlp.experts.gate_up_proj", {2, 64, 96}, 1);
  WriteShard(t / "in.safetensors",
             {gu, Bf16("model.layers.0.mlp.experts.gate_up_proj_bias", {2, 96}, 2),
              Bf16("model.layers.0.self_attn.q_proj.weight", {64, 64}, 3)});
  CheckpointOptions o;
  o.scheme = "gpt-oss";
  absl::StatusOr<CheckpointReport> r =
      QuantizeCheckpoint(t / "in.safetensors", t / "q.safetensors", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->quantized_tensors, 1u);
  Loaded q = Load(t / "q.safetensors");
  const StTensorInfo* blocks = q.view.Find("model.layers.0.mlp.experts.gate_up_proj_blocks");
  const StTensorInfo* scales = q.view.Find("model.layers.0.mlp.experts.gate_up_proj_scales");
  ASSERT_NE(blocks, nullptr);
  ASSERT_NE(scales, nullptr);
  EXPECT_EQ(blocks->shape, (std::vector<uint64_t>{2, 96, 2, 16}));
  EXPECT_EQ(scales->shape, (std::vector<uint64_t>{2, 96, 2}));
  EXPECT_NE(q.view.Find("model.layers.0.self_attn.q_proj.weight"), nullptr);
  // Block (expert 1, out 5, inputs 32..63): its amax sets the scale code
  // (rceil of amax / 6), and the dequantized tensor is [E, in, out] again.
  float amax = 0;
  for (size_t i = 32; i < 64; ++i) {
    const size_t k = (64 + i) * 96 + 5;
    uint32_t b = static_cast<uint32_t>(gu.bytes[2 * k] | (gu.bytes[2 * k + 1] << 8)) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    amax = std::max(amax, std::fabs(f));
  }
  const int code = q.view.Bytes(*scales)[(96 + 5) * 2 + 1];
  EXPECT_LE(amax / 6.0f, std::ldexp(1.0f, code - 127));
  EXPECT_GT(amax / 6.0f, std::ldexp(1.0f, code - 128));
  ASSERT_TRUE(DequantizeCheckpoint(t / "q.safetensors", t / "d.safetensors", {}).ok());
  Loaded d = Load(t / "d.safetensors");
  const StTensorInfo* back = d.view.Find("model.layers.0.mlp.experts.gate_up_proj");
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->shape, (std::vector<uint64_t>{2, 64, 96}));
}

TEST(CheckpointTest, IndexMustMatchTheShards) {
  TempDir t;
  MakeShardedModel(t / "in");
  Json index = Json::parse(ReadFile(t / "in/model.safetensors.index.json"));
  index["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";
  WriteFile(t / "in/model.safetensors.index.json", index.dump());
  absl::StatusOr<CheckpointReport> r = QuantizeCheckpoint(t / "in", t / "out", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "tensor 'model.norm.weight' is in shard 'model-00002-of-00002.safetensors' "
                "but the index lists 'model-00001-of-00002.safetensors'"),
            std::string::npos)
      << r.status();
  WriteFile(t / "in/model.safetensors.index.json", R"({"weight_map": {"a": "../x"}})");
  r = QuantizeCheckpoint(t / "in", t / "out", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expected a file name in the directory"),
            std::string::npos)
      << r.status();
  EXPECT_FALSE(fs::exists(t / "out"));
}

}  // namespace
}  // namespace mxpack
