// Internal: checkpoint files on disk. The input (a .safetensors file or a
// Hugging Face model directory with its shard index), the staged output (a
// temporary sibling renamed into place when complete) and small file helpers.
#ifndef MXPACK_SRC_CHECKPOINT_CHECKPOINT_IO_H_
#define MXPACK_SRC_CHECKPOINT_CHECKPOINT_IO_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxpack/safetensors.h"
#include "nlohmann/json.hpp"
#include "src/util/output_file.h"

namespace mxpack::internal {

inline constexpr char kIndexFile[] = "model.safetensors.index.json";
inline constexpr char kSingleFile[] = "model.safetensors";

struct CheckpointSource {
  std::string dir;  // the input directory, or "" for a single file
  // Shard paths relative to dir (or the file's path when dir is empty), in
  // the order their tensors are processed.
  std::vector<std::string> shards;
  // tensor -> shard, from the index (empty without one).
  std::map<std::string, std::string> weight_map;
  // Every other file of the directory (relative paths, subdirectories too).
  std::vector<std::string> other_files;

  std::string ShardPath(const std::string& shard) const {
    return dir.empty() ? shard : dir + "/" + shard;
  }
};

absl::StatusOr<CheckpointSource> OpenCheckpointSource(const std::string& path);

// One shard of a source, mapped and parsed (errors name its path).
struct OpenShard {
  std::shared_ptr<MappedFile> file;
  SafetensorsView view;
};
absl::StatusOr<OpenShard> Open(const CheckpointSource& src, const std::string& shard);

// Parses model.safetensors.index.json text: {"metadata": {...},
// "weight_map": {tensor: shard}}; shard names must be relative file names.
absl::StatusOr<std::map<std::string, std::string>> ParseShardIndex(
    const std::string& text);

// The text of an output config.json: `text` (the input's config.json, named
// `where` in errors) must be a JSON object; its "quantization_config" is
// replaced by `quantization_config`, or removed when that is null. Every
// other key is kept.
absl::StatusOr<std::string> RewriteConfigJson(const std::string& text,
                                              const nlohmann::json* quantization_config,
                                              const std::string& where);

// Where an export writes: a directory output goes through a StagedDirectory
// (src/util/output_file.h: staged next to the destination, renamed into place
// by Commit, removed on errors and signals); a file output (directory ==
// false) is path() itself, which WriteSafetensors stages as one file.
class StagedOutput {
 public:
  static absl::StatusOr<StagedOutput> Create(const std::string& final_path,
                                             bool directory);
  // Where to write: the staging directory, or the output file.
  const std::string& path() const { return dir_ ? dir_->staging_path() : file_; }
  absl::Status Commit() { return dir_ ? dir_->Commit() : absl::OkStatus(); }

 private:
  std::string file_;
  std::unique_ptr<StagedDirectory> dir_;
};

absl::StatusOr<std::string> ReadTextFile(const std::string& path);
absl::Status WriteTextFile(const std::string& path, const std::string& text);
// Copies `rel` from `from_dir` to `to_dir`, creating subdirectories.
absl::Status CopyRelativeFile(const std::string& from_dir, const std::string& to_dir,
                              const std::string& rel);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_CHECKPOINT_CHECKPOINT_IO_H_
