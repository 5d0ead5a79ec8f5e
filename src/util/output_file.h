// Internal: writing user-named output files and directories so that nothing
// the user already has is lost: outputs are created or replaced only as
// regular files (or directories), always through a temporary name next to the
// destination that is renamed into place, and never when they are the same
// file as an input.
//
// Rules (docs/cli.md, "Output files"):
//  - An output may be a new name or an existing regular file. A directory, a
//    character or block device, a FIFO or a socket is refused, before any
//    work, with an error naming the path and what it is.
//  - An output that is the same file as an input (same st_dev and st_ino,
//    so other spellings such as `../dir/./x` and hard links are caught) is
//    refused before any work.
//  - A symbolic link is written through: the link is resolved (realpath), the
//    same checks apply to its target, and the target is replaced in the
//    target's directory. The link itself stays a link. A link whose target
//    does not exist is refused.
//  - Data goes to `.NAME.mxpack-tmp.XXXXXX` in the destination's directory
//    (created with O_CREAT | O_EXCL, mode 0666 & ~umask, or the mode of the
//    file it replaces), is fsync'd and renamed over the destination. The
//    temporary file is removed on every error path and, through a SIGINT /
//    SIGTERM / SIGHUP handler, when the process is interrupted; a file or
//    staging directory created before such a signal is never committed
//    after it (its Commit fails), whichever thread commits it.
//  - Replacing a file gives it a new inode: other hard links to the old file
//    keep the old contents.
//  - "-" names stdin / stdout and is never replaced; an empty path is an
//    output or input that is not used.
#ifndef MXPACK_SRC_UTIL_OUTPUT_FILE_H_
#define MXPACK_SRC_UTIL_OUTPUT_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace mxpack {

// Checks every output file path in `outputs` against the rules above and
// against every path in `inputs` (inputs that do not exist are skipped; "-"
// means stdin, compared through fstat(0); empty paths are skipped). Two outputs
// naming the same file are refused too. Returns InvalidArgument naming the path
// on the first violation. Call before reading inputs or doing any work.
absl::Status CheckOutputFiles(const std::vector<std::string>& outputs,
                              const std::vector<std::string>& inputs);

// Same as CheckOutputFiles for output directories (see StagedDirectory): an
// existing non-directory, or a directory that is or contains an input, is
// refused; a non-empty directory is refused unless `overwrite`.
absl::Status CheckOutputDirectory(const std::string& dir,
                                  const std::vector<std::string>& inputs,
                                  bool overwrite);

// One output file being written: Create opens the temporary file, Write
// appends, Commit fsyncs and renames it over the destination. Destroying an
// uncommitted OutputFile removes the temporary file.
class OutputFile {
 public:
  // Resolves `path` (symbolic links: to their target), checks the
  // destination's type and creates the temporary file. `path` must not be
  // "-" (callers write stdout themselves).
  static absl::StatusOr<std::unique_ptr<OutputFile>> Create(
      const std::string& path);

  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  absl::Status Write(absl::string_view data);
  absl::Status Write(absl::Span<const uint8_t> data) {
    return Write(absl::string_view(reinterpret_cast<const char*>(data.data()),
                                   data.size()));
  }
  // Writes `data` at byte `offset` of the file (pwrite), which may lie past
  // the current end (the gap reads as zeros until written). Write and
  // WriteAt may be mixed; every byte of the file must be written before
  // Commit for the result to be complete. Not for concurrent use.
  absl::Status WriteAt(uint64_t offset, absl::Span<const uint8_t> data);
  // Lets WriteAt send the whole kDirectAlign-byte blocks of a write whose
  // bytes sit in memory at the same position modulo kDirectAlign as in the
  // file straight to the device (a second descriptor opened with O_DIRECT,
  // Linux), bypassing the page cache: no copy, no page cache pages to
  // allocate. The partial blocks at either end, and every write where the
  // positions differ, still go through the page cache. Where O_DIRECT is
  // unavailable or refused, everything does. Commit's fsync covers both.
  // False when direct writes are not available.
  bool EnableDirectWrites();
  static constexpr uint64_t kDirectAlign = 4096;
  // Asks the kernel to start writing [offset, offset + size) to the device
  // now (Linux sync_file_range, SYNC_FILE_RANGE_WRITE; a no-op elsewhere),
  // so that Commit's fsync waits only for what is still in flight. A hint:
  // it reports nothing; errors surface at Commit.
  void StartWriteback(uint64_t offset, uint64_t size);
  // fsync, close, rename over the destination, fsync of its directory. After
  // an error the temporary file is gone and the destination untouched.
  absl::Status Commit();

  // The path as the user gave it.
  const std::string& path() const { return path_; }

 private:
  OutputFile() = default;
  void Abandon();
  // Closes the O_DIRECT descriptor, if open: later writes go through fd_.
  void CloseDirect();
  // Runs `write` on the open file descriptor (false: failed, errno set);
  // a failure abandons the file (the temporary is removed) and is reported
  // with the path.
  absl::Status Guarded(absl::FunctionRef<bool(int fd)> write);

  std::string path_;         // as given
  std::string destination_;  // resolved: what the rename replaces
  std::string temp_;
  int fd_ = -1;
  int direct_fd_ = -1;  // the same file opened with O_DIRECT, or -1
  int slot_ = -1;  // in the interruption cleanup registry
  bool failed_ = false;
  unsigned interrupts_ = 0;  // signals seen before Create: Commit refuses after another
};

// Writes `data` to `path` through an OutputFile (create, write, commit).
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view data);

// An output directory built under `DEST.mxpack-tmp.XXXXXX` next to DEST and
// renamed into place by Commit. Destroying an uncommitted StagedDirectory
// removes the staging directory and everything in it (also on SIGINT /
// SIGTERM / SIGHUP). DEST may be a new name or an empty directory; a
// non-empty directory is replaced only when `overwrite` is given (Commit then
// exchanges the two atomically and removes the old contents). A symbolic link
// is resolved and its target replaced; the link stays.
class StagedDirectory {
 public:
  static absl::StatusOr<std::unique_ptr<StagedDirectory>> Create(
      const std::string& dest, bool overwrite);
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  // Where to write the directory's contents.
  const std::string& staging_path() const { return staging_; }
  absl::Status Commit();

 private:
  StagedDirectory() = default;

  std::string dest_;         // as given
  std::string destination_;  // resolved
  std::string staging_;
  bool overwrite_ = false;
  int slot_ = -1;
  unsigned interrupts_ = 0;  // signals seen before Create: Commit refuses after another
};

}  // namespace mxpack

#endif  // MXPACK_SRC_UTIL_OUTPUT_FILE_H_
