// `mxpack example-model DIR`: writes the built-in deterministic Llama-like
// checkpoint as a Hugging Face model directory (config.json,
// generation_config.json, safetensors shards with their index), so every
// command of the documentation can run without downloading a model.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/model.h"
#include "mxpack/safetensors.h"
#include "nlohmann/json.hpp"
#include "src/util/output_file.h"
#include "tools/cli.h"

ABSL_FLAG(int32_t, layers, 4, "example-model: decoder layers (1..64)");
ABSL_FLAG(int32_t, shards, 2,
          "example-model: number of safetensors shards (1: a single "
          "model.safetensors, else model-0000i-of-0000N.safetensors + index)");

namespace mxpack::cli {
namespace {

// Hidden sizes of SyntheticModelConfig, spelled as a transformers
// LlamaConfig: 4 heads of 64 (hidden 256), 2 key/value heads (kv_hidden 128).
nlohmann::ordered_json LlamaConfigJson(const SyntheticModelConfig& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {"LlamaForCausalLM"};
  j["model_type"] = "llama";
  j["hidden_size"] = c.hidden;
  j["intermediate_size"] = c.ffn;
  j["num_hidden_layers"] = c.layers;
  j["num_attention_heads"] = c.hidden / 64;
  j["num_key_value_heads"] = c.kv_hidden / 64;
  j["head_dim"] = 64;
  j["vocab_size"] = c.vocab;
  j["max_position_embeddings"] = 2048;
  j["rms_norm_eps"] = 1e-5;
  j["rope_theta"] = 10000.0;
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = false;
  j["torch_dtype"] = "float32";
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  return j;
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  return WriteFileAtomically(path, text);
}

// Writes the model into `dir` (an empty staging directory).
absl::Status WriteModel(const std::string& dir, const SyntheticModelConfig& config,
                        int shards) {
  absl::StatusOr<std::vector<uint8_t>> ckpt = SyntheticCheckpoint(config);
  if (!ckpt.ok()) return ckpt.status();
  absl::StatusOr<SafetensorsView> view = ParseSafetensors(*ckpt);
  if (!view.ok()) return view.status();

  // Consecutive tensors, split into shards of about equal bytes.
  uint64_t total = 0;
  for (const StTensorInfo& t : view->tensors) total += t.num_bytes();
  std::vector<std::vector<StTensorOut>> parts(shards);
  uint64_t done = 0;
  for (const StTensorInfo& t : view->tensors) {
    const size_t s = std::min<size_t>(shards - 1, done * shards / total);
    parts[s].push_back({t.name, t.dtype, t.shape, view->Bytes(t)});
    done += t.num_bytes();
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (int s = 0; s < shards; ++s) {
    const std::string name =
        shards == 1 ? "model.safetensors"
                    : absl::StrFormat("model-%05d-of-%05d.safetensors", s + 1, shards);
    for (const StTensorOut& t : parts[s]) weight_map[t.name] = name;
    absl::Status st = WriteSafetensors(dir + "/" + name, parts[s], metadata);
    if (!st.ok()) return st;
  }
  if (shards > 1) {
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = weight_map;
    absl::Status st = WriteText(dir + "/model.safetensors.index.json", index.dump(2) + "\n");
    if (!st.ok()) return st;
  }
  absl::Status st = WriteText(dir + "/config.json", LlamaConfigJson(config).dump(2) + "\n");
  if (!st.ok()) return st;
  nlohmann::ordered_json gen = {{"bos_token_id", 1}, {"eos_token_id", 2}};
  return WriteText(dir + "/generation_config.json", gen.dump(2) + "\n");
}

int RunExampleModel(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return Fail("example-model",
                absl::InvalidArgumentError(absl::StrFormat(
                    "expected one argument, the output directory; got %d", args.size())));
  }
  const int layers = absl::GetFlag(FLAGS_layers);
  const int shards = absl::GetFlag(FLAGS_shards);
  if (layers < 1 || layers > 64) {
    return Fail("example-model", absl::InvalidArgumentError(absl::StrFormat(
                                     "--layers: expected 1..64, got %d", layers)));
  }
  if (shards < 1 || shards > 16) {
    return Fail("example-model", absl::InvalidArgumentError(absl::StrFormat(
                                     "--shards: expected 1..16, got %d", shards)));
  }
  const std::string& dest = args[0];
  // Staged next to the destination and renamed at the end, so a failure or
  // an interruption leaves no partial model directory.
  absl::Status st = CheckOutputDirectory(dest, {}, /*overwrite=*/false);
  absl::StatusOr<std::unique_ptr<StagedDirectory>> staged =
      st.ok() ? StagedDirectory::Create(dest, /*overwrite=*/false)
              : absl::StatusOr<std::unique_ptr<StagedDirectory>>(st);
  if (!staged.ok()) return Fail("example-model", staged.status());
  SyntheticModelConfig config;
  config.layers = static_cast<size_t>(layers);
  st = WriteModel((*staged)->staging_path(), config, shards);
  if (st.ok()) st = (*staged)->Commit();
  if (!st.ok()) return Fail("example-model", st);
  std::printf("wrote %s: Llama-like model, %d layers, %d shard(s)\n", dest.c_str(), layers,
              shards);
  return 0;
}

const bool kExampleModel = RegisterCommand(
    {"example-model", "write a small built-in Llama-like Hugging Face model directory",
     "example-model DIR [--layers=N] [--shards=N]\n\nWrites a deterministic Llama-like "
     "checkpoint (hidden 256, 4 heads, F32 and BF16\nlayers, outlier channels like "
     "trained weights) as a Hugging Face model\ndirectory: config.json, "
     "generation_config.json and safetensors shards with\nmodel.safetensors.index.json. "
     "DIR must not exist or be empty; it appears complete or not at all.",
     {"layers", "shards"},
     RunExampleModel});

}  // namespace
}  // namespace mxpack::cli
