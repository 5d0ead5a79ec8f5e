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

// A directory output, written under a temporary name in the destination's
// directory and renamed to `final_path` by Commit(); destroyed uncommitted, it
// removes everything it wrote. `final_path` must be new or an empty
// directory. For a file output (directory == false) path() is `final_path`
// itself: WriteSafetensors stages the file (temporary name, rename, symbolic
// links written through).
class StagedOutput {
 public:
  static absl::StatusOr<StagedOutput> Create(const std::string& final_path,
                                             bool directory);
  StagedOutput(StagedOutput&& o) noexcept;
  StagedOutput& operator=(StagedOutput&&) = delete;
  ~StagedOutput();
  // Where to write: the staging directory, or the staging file.
  const std::string& path() const { return tmp_; }
  absl::Status Commit();

 private:
  StagedOutput(std::string final_path, std::string tmp, bool directory)
      : final_(std::move(final_path)), tmp_(std::move(tmp)), directory_(directory) {}
  std::string final_, tmp_;
  bool directory_ = false;
  bool done_ = false;
};

absl::StatusOr<std::string> ReadTextFile(const std::string& path);
absl::Status WriteTextFile(const std::string& path, const std::string& text);
// Copies `rel` from `from_dir` to `to_dir`, creating subdirectories.
absl::Status CopyRelativeFile(const std::string& from_dir, const std::string& to_dir,
                              const std::string& rel);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_CHECKPOINT_CHECKPOINT_IO_H_
