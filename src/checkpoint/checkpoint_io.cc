// Checkpoint input discovery, shard index parsing, staged output and the
// output shard writer thread.
#include "src/checkpoint/checkpoint_io.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace mxpack::internal {

namespace fs = std::filesystem;
using Json = nlohmann::json;

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return absl::NotFoundError(
        absl::StrFormat("%s: cannot open for reading: %s", path, std::strerror(errno)));
  }
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) {
    return absl::DataLossError(absl::StrFormat("%s: write error", path));
  }
  return absl::OkStatus();
}

absl::Status CopyRelativeFile(const std::string& from_dir, const std::string& to_dir,
                              const std::string& rel) {
  std::error_code ec;
  const fs::path dst = fs::path(to_dir) / rel;
  fs::create_directories(dst.parent_path(), ec);
  if (!ec) fs::copy_file(fs::path(from_dir) / rel, dst, ec);
  if (ec) {
    return absl::DataLossError(
        absl::StrFormat("%s: cannot copy to %s: %s", rel, to_dir, ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>> ParseShardIndex(
    const std::string& text) {
  auto bad = [](const std::string& m) {
    return absl::InvalidArgumentError(absl::StrCat(kIndexFile, ": ", m));
  };
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return bad(absl::StrCat("not valid JSON: ", e.what()));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
    return bad("expected an object with a \"weight_map\" object");
  }
  if (j.contains("metadata") && !j["metadata"].is_object() && !j["metadata"].is_null()) {
    return bad("\"metadata\" must be an object");
  }
  std::map<std::string, std::string> map;
  for (const auto& [tensor, shard] : j["weight_map"].items()) {
    if (!shard.is_string()) {
      return bad(absl::StrFormat("weight_map[\"%s\"] must be a string", tensor));
    }
    const std::string s = shard.get<std::string>();
    if (s.empty() || absl::StrContains(s, "/") || s == "." || s == "..") {
      return bad(absl::StrFormat(
          "weight_map[\"%s\"] = \"%s\": expected a file name in the directory", tensor,
          s));
    }
    map.emplace(tensor, s);
  }
  if (map.empty()) return bad("weight_map is empty");
  return map;
}

absl::StatusOr<std::string> RewriteConfigJson(const std::string& text,
                                              const Json* quantization_config,
                                              const std::string& where) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": not valid JSON: ", e.what()));
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a JSON object"));
  }
  if (quantization_config == nullptr) {
    j.erase("quantization_config");
  } else {
    j["quantization_config"] = *quantization_config;
  }
  return j.dump(2) + "\n";
}

absl::StatusOr<CheckpointSource> OpenCheckpointSource(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    return absl::NotFoundError(absl::StrFormat("%s: cannot open for reading: %s", path,
                                               ec ? ec.message() : "no such file"));
  }
  CheckpointSource src;
  if (!fs::is_directory(st)) {
    src.shards.push_back(path);
    return src;
  }
  src.dir = path;
  std::set<std::string> shard_set;
  const fs::path index = fs::path(path) / kIndexFile;
  if (fs::exists(index)) {
    absl::StatusOr<std::string> text = ReadTextFile(index.string());
    if (!text.ok()) return text.status();
    absl::StatusOr<std::map<std::string, std::string>> map = ParseShardIndex(*text);
    if (!map.ok()) {
      return absl::Status(map.status().code(),
                          absl::StrCat(path, "/", map.status().message()));
    }
    src.weight_map = *std::move(map);
    for (const auto& [t, s] : src.weight_map) shard_set.insert(s);
    src.shards.assign(shard_set.begin(), shard_set.end());
  } else if (fs::exists(fs::path(path) / kSingleFile)) {
    src.shards.push_back(kSingleFile);
    shard_set.insert(kSingleFile);
  } else {
    return absl::NotFoundError(absl::StrFormat(
        "%s: a model directory needs %s or %s", path, kSingleFile, kIndexFile));
  }
  for (const std::string& s : src.shards) {
    if (!fs::is_regular_file(fs::path(path) / s)) {
      return absl::NotFoundError(
          absl::StrFormat("%s: shard '%s' listed in %s is missing", path, s, kIndexFile));
    }
  }
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), path).string();
    if (shard_set.count(rel) || rel == kIndexFile) continue;
    src.other_files.push_back(rel);
  }
  if (ec) {
    return absl::InternalError(absl::StrFormat("%s: cannot list: %s", path, ec.message()));
  }
  std::sort(src.other_files.begin(), src.other_files.end());
  return src;
}

absl::StatusOr<OpenShard> Open(const CheckpointSource& src, const std::string& shard) {
  const std::string path = src.ShardPath(shard);
  absl::StatusOr<std::unique_ptr<MappedFile>> f = MappedFile::Open(path);
  if (!f.ok()) return f.status();
  OpenShard s;
  s.file = std::shared_ptr<MappedFile>(std::move(*f));
  absl::StatusOr<SafetensorsView> v = ParseSafetensors(s.file->bytes());
  if (!v.ok()) {
    return absl::Status(v.status().code(), absl::StrCat(path, ": ", v.status().message()));
  }
  s.view = *std::move(v);
  return s;
}

absl::StatusOr<StagedOutput> StagedOutput::Create(const std::string& final_path,
                                                  bool directory) {
  StagedOutput out;
  if (!directory) {
    out.file_ = final_path;
    return out;
  }
  absl::StatusOr<std::unique_ptr<StagedDirectory>> d =
      StagedDirectory::Create(final_path, /*overwrite=*/false);
  if (!d.ok()) return d.status();
  out.dir_ = *std::move(d);
  return out;
}

ShardWriter::ShardWriter() : thread_([this] { Run(); }) {}

ShardWriter::~ShardWriter() {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = absl::CancelledError("shard writer abandoned");
    dropped.swap(queue_);
    finishing_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Uncommitted files are removed by their OutputFile destructors.
  files_.clear();
}

size_t ShardWriter::Open(std::string path, std::string header) {
  Job job;
  job.kind = Job::kOpen;
  job.file = files_opened_++;
  job.path = std::move(path);
  job.header = std::move(header);
  const size_t id = job.file;
  Push(std::move(job));
  return id;
}

void ShardWriter::Write(size_t file, uint64_t data_offset,
                        absl::Span<const uint8_t> data,
                        std::shared_ptr<const void> keep) {
  Job job;
  job.kind = Job::kWrite;
  job.file = file;
  job.offset = data_offset;
  job.data = data;
  job.keep = std::move(keep);
  Push(std::move(job));
}

void ShardWriter::Commit(size_t file) {
  Job job;
  job.kind = Job::kCommit;
  job.file = file;
  Push(std::move(job));
}

void ShardWriter::Release(std::shared_ptr<const void> keep) {
  Job job;
  job.kind = Job::kRelease;
  job.keep = std::move(keep);
  Push(std::move(job));
}

void ShardWriter::Push(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // After an error nothing more is written: drop the job (and what it
    // keeps alive) at once.
    if (!status_.ok()) return;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
}

absl::Status ShardWriter::status() {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

absl::Status ShardWriter::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  return status_;
}

absl::Status ShardWriter::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  files_.clear();  // removes the files of a failed run
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void ShardWriter::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return finishing_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    absl::Status s;
    try {
      s = Do(job);
    } catch (const std::exception& e) {
      // Reported like a failed write instead of ending the process.
      s = absl::ResourceExhaustedError(
          absl::StrCat("writing the output: ", e.what()));
    }
    job = Job();  // releases what the job kept alive
    std::deque<Job> dropped;
    if (!s.ok()) {
      // Remove every uncommitted file now, and drop the queued work.
      files_.clear();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!s.ok()) {
        if (status_.ok()) status_ = s;
        dropped.swap(queue_);
      }
      busy_ = false;
    }
    dropped.clear();  // releases the dropped jobs' buffers outside the lock
    idle_.notify_all();
  }
}

absl::Status ShardWriter::Do(Job& job) {
  switch (job.kind) {
    case Job::kOpen: {
      absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create(job.path);
      if (!f.ok()) return f.status();
      if (absl::Status s = (*f)->Write(job.header); !s.ok()) return s;
      // Tensor bytes placed at their file position modulo the block size
      // then bypass the page cache (OutputFile::EnableDirectWrites).
      (void)(*f)->EnableDirectWrites();
      if (files_.size() <= job.file) files_.resize(job.file + 1);
      files_[job.file].out = *std::move(f);
      files_[job.file].data_start = job.header.size();
      return absl::OkStatus();
    }
    case Job::kWrite: {
      File& f = files_[job.file];
      const uint64_t at = f.data_start + job.offset;
      if (absl::Status s = f.out->WriteAt(at, job.data); !s.ok()) return s;
      // The device writes while later tensors are computed, instead of all
      // at the commit's fsync.
      f.out->StartWriteback(at, job.data.size());
      return absl::OkStatus();
    }
    case Job::kCommit: {
      absl::Status s = files_[job.file].out->Commit();
      files_[job.file].out.reset();
      return s;
    }
    case Job::kRelease:
      return absl::OkStatus();  // Run drops job.keep
  }
  return absl::InternalError("shard writer: unknown job");
}

}  // namespace mxpack::internal
