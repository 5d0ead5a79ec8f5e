// Internal: checkpoint files on disk. The input (a .safetensors file or a
// Hugging Face model directory with its shard index), the staged output (a
// temporary sibling renamed into place when complete), a writer thread for
// output shards and small file helpers.
#ifndef MXPACK_SRC_CHECKPOINT_CHECKPOINT_IO_H_
#define MXPACK_SRC_CHECKPOINT_CHECKPOINT_IO_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
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

// Where each of `tensors` starts in the data section of the file that
// SafetensorsHeader / WriteSafetensors lay out for them (storage order:
// larger elements first); only the size of each tensor's data is read.
std::vector<uint64_t> SafetensorsDataOffsets(const std::vector<StTensorOut>& tensors);

// Writes safetensors files on a thread of its own, so that writing one
// tensor's bytes overlaps computing the next. A file is opened with its
// header (an OutputFile: a temporary name next to the destination), receives
// its tensors' bytes at their data offsets in any order and is committed
// (fsync, rename into place) after the writes queued before Commit. Work runs
// in the order it is queued. The first error stops all later work and
// removes every file not yet committed; destroying the writer before Finish
// abandons queued work the same way. So a file is either complete and in
// place, or absent.
class ShardWriter {
 public:
  ShardWriter();
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Queues the creation of `path` holding `header` (8-byte length + JSON);
  // returns the file's id for Write and Commit. Calls come from one thread.
  size_t Open(std::string path, std::string header);
  // Queues writing `data` at `data_offset` of the file's data section (after
  // its header). `keep` owns the bytes behind `data`; it is released once
  // they are written (or dropped after an error).
  void Write(size_t file, uint64_t data_offset, absl::Span<const uint8_t> data,
             std::shared_ptr<const void> keep);
  void Commit(size_t file);
  // Queues dropping `keep` on the writer thread, after the work queued
  // before it: releasing a large input mapping (munmap) then overlaps the
  // computation of later tensors instead of stalling it.
  void Release(std::shared_ptr<const void> keep);
  // The first error so far, without waiting.
  absl::Status status();
  // Waits until the work queued so far is done (or dropped after an
  // error); the first error, if any. More work may be queued afterwards.
  absl::Status Drain();
  // Waits until all queued work is done; the first error, if any.
  absl::Status Finish();

 private:
  struct Job {
    enum Kind { kOpen, kWrite, kCommit, kRelease } kind;
    size_t file = 0;
    std::string path;     // kOpen
    std::string header;   // kOpen
    uint64_t offset = 0;  // kWrite: in the data section
    absl::Span<const uint8_t> data;
    std::shared_ptr<const void> keep;
  };
  struct File {
    std::unique_ptr<OutputFile> out;
    uint64_t data_start = 0;  // the header's size
  };
  void Push(Job job);
  void Run();
  absl::Status Do(Job& job);

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;  // queue_ empty and no job running
  bool busy_ = false;             // a job is running (popped, not done)
  std::deque<Job> queue_;
  absl::Status status_;
  bool finishing_ = false;
  size_t files_opened_ = 0;
  std::vector<File> files_;  // by id; only the writer thread touches them
  std::thread thread_;
};

absl::StatusOr<std::string> ReadTextFile(const std::string& path);
absl::Status WriteTextFile(const std::string& path, const std::string& text);
// Copies `rel` from `from_dir` to `to_dir`, creating subdirectories.
absl::Status CopyRelativeFile(const std::string& from_dir, const std::string& to_dir,
                              const std::string& rel);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_CHECKPOINT_CHECKPOINT_IO_H_
