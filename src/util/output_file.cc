// Output files and directories that are created or replaced only as regular
// files / directories, through a temporary name renamed into place, and
// cleaned up on errors and interruption (rules in output_file.h).
#include "src/util/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mxpack {
namespace {

// ---------------------------------------------------------------------------
// Interruption cleanup. Temporary paths live in fixed slots so that the
// signal handler only reads plain memory and calls async-signal-safe
// functions (unlink, open, getdents64, unlinkat, close, sigaction, raise).

constexpr int kSlots = 64;
enum SlotState : int { kFree = 0, kClaimed = 1, kActive = 2 };

struct Slot {
  std::atomic<int> state;
  bool is_dir;
  char path[PATH_MAX];
};

Slot g_slots[kSlots];
// Interruptions so far. An OutputFile or StagedDirectory notes the count
// when it is created and refuses to commit once it has changed: a thread
// other than the interrupted one (a writer thread) could otherwise rename a
// file into a staging directory the handler is removing, or a process that
// goes on after the signal (Python) commit a directory the handler emptied.
std::atomic<unsigned> g_interrupts{0};
static_assert(std::atomic<unsigned>::is_always_lock_free,
              "the signal handler needs a lock-free counter");
constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[kSignals.size()];

// Removes NAME (relative to DIRFD) and, when it is a directory, everything
// below it, with raw system calls only (usable in a signal handler). True
// when NAME is gone.
bool RemoveTreeAt(int dirfd, const char* name, int depth) {
  if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR && errno != EPERM) return false;
  if (depth > 32) return false;
  const int fd =
      openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      // struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, name.
      unsigned short reclen;
      std::memcpy(&reclen, buf + off + 16, sizeof(reclen));
      const char* entry = buf + off + 19;
      if (!(entry[0] == '.' &&
            (entry[1] == '\0' || (entry[1] == '.' && entry[2] == '\0')))) {
        RemoveTreeAt(fd, entry, depth + 1);
      }
      off += reclen;
    }
  }
  close(fd);
  return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT;
}

void RemoveTree(const char* path) { RemoveTreeAt(AT_FDCWD, path, 0); }

void OnSignal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  g_interrupts.fetch_add(1, std::memory_order_seq_cst);
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) != kActive) continue;
    if (s.is_dir) {
      // Another thread may still add a file between the listing and the
      // rmdir (it fails its commit afterwards): list again until the
      // directory is gone.
      for (int tries = 0; tries < 16 && !RemoveTreeAt(AT_FDCWD, s.path, 0); ++tries) {
      }
    } else {
      unlink(s.path);
    }
  }
  for (size_t i = 0; i < kSignals.size(); ++i) {
    if (kSignals[i] != sig) continue;
    const struct sigaction& prev = g_previous[i];
    if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
      prev.sa_sigaction(sig, info, context);
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
      prev.sa_handler(sig);
    } else {
      // Default action: terminate with this signal, as without the handler.
      struct sigaction dfl;
      std::memset(&dfl, 0, sizeof(dfl));
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(sig, &dfl, nullptr);
      raise(sig);  // Delivered when this handler returns (sig is blocked).
    }
  }
  errno = saved_errno;
}

// Installs the handler once per signal; ignored signals stay ignored, and an
// existing handler is called after the cleanup.
void InstallHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction prev;
      if (sigaction(kSignals[i], nullptr, &prev) != 0) continue;
      if (prev.sa_handler == SIG_IGN && (prev.sa_flags & SA_SIGINFO) == 0)
        continue;
      g_previous[i] = prev;
      struct sigaction sa;
      std::memset(&sa, 0, sizeof(sa));
      sa.sa_sigaction = &OnSignal;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigfillset(&sa.sa_mask);
      sigaction(kSignals[i], &sa, nullptr);
    }
  });
}

// Claims a slot for PATH (-1 when all are taken: the path is then still
// removed on errors, only not on interruption).
int Register(const std::string& path, bool is_dir) {
  InstallHandlers();
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kClaimed)) continue;
    g_slots[i].is_dir = is_dir;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(kActive, std::memory_order_release);
    return i;
  }
  return -1;
}

void Unregister(int& slot) {
  if (slot < 0) return;
  g_slots[slot].state.store(kFree, std::memory_order_release);
  slot = -1;
}

// ---------------------------------------------------------------------------
// Paths.

std::string ErrnoText(int err) { return std::strerror(err); }

std::string Dirname(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string Basename(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string StripTrailingSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

bool IsStdio(const std::string& p) { return p.empty() || p == "-"; }

std::string RandomSuffix() {
  static constexpr char kChars[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
           static_cast<uint64_t>(getpid());
  }());
  std::string s(6, 'x');
  for (char& c : s) c = kChars[rng() % (sizeof(kChars) - 1)];
  return s;
}

const char* KindName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

// Where an output path really leads: symbolic links resolved.
struct Destination {
  std::string path;  // resolved (equal to the given path unless a link)
  bool exists = false;
  struct stat st {};
};

absl::StatusOr<Destination> Resolve(const std::string& given, bool want_dir) {
  Destination d;
  d.path = StripTrailingSlashes(given);
  struct stat lst;
  if (lstat(d.path.c_str(), &lst) != 0) {
    if (errno != ENOENT) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: cannot examine output path: %s", given, ErrnoText(errno)));
    }
    const std::string parent = Dirname(d.path);
    struct stat pst;
    if (stat(parent.c_str(), &pst) != 0 || !S_ISDIR(pst.st_mode)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: cannot open for writing: directory %s does not exist", given,
          parent));
    }
    if (access(parent.c_str(), W_OK | X_OK) != 0) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "%s: cannot open for writing: directory %s is not writable: %s",
          given, parent, ErrnoText(errno)));
    }
    return d;
  }
  std::string what;  // "a symbolic link to T, which is" for messages
  if (S_ISLNK(lst.st_mode)) {
    char buf[PATH_MAX];
    if (realpath(d.path.c_str(), buf) == nullptr) {
      if (errno == ENOENT) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: is a symbolic link whose target does not exist; expected a "
            "link to an existing %s",
            given, want_dir ? "directory" : "regular file"));
      }
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: cannot resolve symbolic link: %s", given, ErrnoText(errno)));
    }
    d.path = buf;
    what = absl::StrCat("a symbolic link to ", d.path, ", which is ");
    if (stat(d.path.c_str(), &lst) != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: cannot examine link target %s: %s", given,
                          d.path, ErrnoText(errno)));
    }
  }
  d.exists = true;
  d.st = lst;
  if (want_dir && S_ISDIR(lst.st_mode) && what.empty()) {
    // Staging happens next to the directory, so name it absolutely ("." and
    // "dir/.." have no usable parent in their spelling).
    char buf[PATH_MAX];
    if (realpath(d.path.c_str(), buf) != nullptr) d.path = buf;
  }
  const bool ok = want_dir ? S_ISDIR(lst.st_mode) : S_ISREG(lst.st_mode);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: is %s%s; expected %s", given, what, KindName(lst.st_mode),
        want_dir ? "a new name or a directory"
                 : "a new file name or an existing regular file"));
  }
  return d;
}

// stat of an input ("-": stdin when it is a regular file); false when there
// is nothing to compare with.
bool StatInput(const std::string& in, struct stat* st) {
  if (in.empty()) return false;
  if (in == "-") return fstat(STDIN_FILENO, st) == 0 && S_ISREG(st->st_mode);
  return stat(in.c_str(), st) == 0;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::string InputName(const std::string& in) {
  return IsStdio(in) ? "stdin" : in;
}

// An identity for comparing outputs with each other: device and inode when
// the destination exists, else its parent's real path and its name.
std::string Identity(const Destination& d) {
  if (d.exists) return absl::StrCat("i", d.st.st_dev, ":", d.st.st_ino);
  char buf[PATH_MAX];
  const std::string parent = Dirname(d.path);
  const std::string real = realpath(parent.c_str(), buf) ? buf : parent;
  return absl::StrCat("p", real, "/", Basename(d.path));
}

// Writes all of DATA to FD, retrying short writes and EINTR.
bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Writes all of DATA at OFFSET of FD, retrying short writes and EINTR.
bool WriteAllAt(int fd, const uint8_t* data, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

void SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);  // Best effort: some file systems refuse fsync on directories.
  close(fd);
}

absl::StatusOr<bool> IsEmptyDirectory(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: cannot open directory: %s", path, ErrnoText(errno)));
  }
  alignas(8) char buf[4096];
  bool empty = true;
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n <= 0) break;
    for (long off = 0; off < n && empty;) {
      unsigned short reclen;
      std::memcpy(&reclen, buf + off + 16, sizeof(reclen));
      const char* e = buf + off + 19;
      if (!(e[0] == '.' && (e[1] == '\0' || (e[1] == '.' && e[2] == '\0'))))
        empty = false;
      off += reclen;
    }
    if (!empty) break;
  }
  close(fd);
  return empty;
}

}  // namespace

// ---------------------------------------------------------------------------

absl::Status CheckOutputFiles(const std::vector<std::string>& outputs,
                              const std::vector<std::string>& inputs) {
  std::vector<std::pair<std::string, std::string>> seen;  // identity, path
  for (const std::string& out : outputs) {
    if (IsStdio(out)) continue;
    absl::StatusOr<Destination> d = Resolve(out, /*want_dir=*/false);
    if (!d.ok()) return d.status();
    if (d->exists) {
      for (const std::string& in : inputs) {
        struct stat ist;
        if (StatInput(in, &ist) && SameFile(ist, d->st)) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: is the same file as input %s; expected an output that is "
              "not an input",
              out, InputName(in)));
        }
      }
    }
    const std::string id = Identity(*d);
    for (const auto& [other_id, other] : seen) {
      if (other_id == id) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: is the same file as output %s; expected distinct outputs", out,
            other));
      }
    }
    seen.emplace_back(id, out);
  }
  return absl::OkStatus();
}

absl::Status CheckOutputDirectory(const std::string& dir,
                                  const std::vector<std::string>& inputs,
                                  bool overwrite) {
  absl::StatusOr<Destination> d = Resolve(dir, /*want_dir=*/true);
  if (!d.ok()) return d.status();
  if (!d->exists) return absl::OkStatus();
  char buf[PATH_MAX];
  const std::string real = realpath(d->path.c_str(), buf) ? buf : d->path;
  for (const std::string& in : inputs) {
    struct stat ist;
    if (!StatInput(in, &ist)) continue;
    char ibuf[PATH_MAX];
    const bool inside = !IsStdio(in) && realpath(in.c_str(), ibuf) != nullptr &&
                        (real == "/" || absl::StartsWith(ibuf, real + "/"));
    if (SameFile(ist, d->st) || inside) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: is or contains input %s; expected an output directory apart "
          "from the inputs",
          dir, InputName(in)));
    }
  }
  absl::StatusOr<bool> empty = IsEmptyDirectory(d->path);
  if (!empty.ok()) return empty.status();
  if (!*empty && !overwrite) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: is a non-empty directory; expected a new name or an empty "
        "directory (or an explicit overwrite)",
        dir));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<OutputFile>> OutputFile::Create(
    const std::string& path) {
  if (IsStdio(path)) {
    return absl::InvalidArgumentError(
        "OutputFile: \"-\" (stdout) is not a file");
  }
  absl::StatusOr<Destination> d = Resolve(path, /*want_dir=*/false);
  if (!d.ok()) return d.status();
  std::unique_ptr<OutputFile> f(new OutputFile());
  f->interrupts_ = g_interrupts.load();
  f->path_ = path;
  f->destination_ = d->path;
  const std::string dir = Dirname(d->path);
  // Keep the temporary name within NAME_MAX (255).
  const std::string base = Basename(d->path).substr(0, 200);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = absl::StrCat(dir == "/" ? "" : dir, "/.", base,
                                    ".mxpack-tmp.", RandomSuffix());
    f->slot_ = Register(temp, /*is_dir=*/false);
    const int fd =
        open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      f->fd_ = fd;
      f->temp_ = std::move(temp);
      break;
    }
    const int err = errno;
    Unregister(f->slot_);
    if (err != EEXIST) {
      return absl::PermissionDeniedError(
          absl::StrFormat("%s: cannot create a temporary file in %s: %s", path,
                          dir, ErrnoText(err)));
    }
  }
  if (f->fd_ < 0) {
    return absl::InternalError(
        absl::StrFormat("%s: no free temporary file name in %s", path, dir));
  }
  if (d->exists) {
    // The replacement keeps the permissions (and, for root, the owner) of
    // the file it replaces.
    fchmod(f->fd_, d->st.st_mode & 07777);
    if (geteuid() == 0) (void)!fchown(f->fd_, d->st.st_uid, d->st.st_gid);
  }
  return f;
}

OutputFile::~OutputFile() { Abandon(); }

void OutputFile::Abandon() {
  CloseDirect();
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  if (!temp_.empty()) {
    unlink(temp_.c_str());
    temp_.clear();
  }
  Unregister(slot_);
}

absl::Status OutputFile::Guarded(absl::FunctionRef<bool(int fd)> write) {
  if (fd_ < 0 || failed_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: not open for writing", path_));
  }
  if (!write(fd_)) {
    const int err = errno;
    failed_ = true;
    Abandon();
    return absl::DataLossError(
        absl::StrFormat("%s: write error: %s", path_, ErrnoText(err)));
  }
  return absl::OkStatus();
}

absl::Status OutputFile::Write(absl::string_view data) {
  return Guarded([&](int fd) { return WriteAll(fd, data.data(), data.size()); });
}

void OutputFile::CloseDirect() {
  if (direct_fd_ >= 0) {
    close(direct_fd_);
    direct_fd_ = -1;
  }
}

bool OutputFile::EnableDirectWrites() {
#if defined(__linux__) && defined(O_DIRECT)
  if (direct_fd_ < 0 && fd_ >= 0 && !failed_ && !temp_.empty()) {
    direct_fd_ = open(temp_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  }
  return direct_fd_ >= 0;
#else
  return false;
#endif
}

absl::Status OutputFile::WriteAt(uint64_t offset, absl::Span<const uint8_t> data) {
  return Guarded([&](int fd) {
    const uint8_t* p = data.data();
    const uint64_t end = offset + data.size();
    const uint64_t a = (offset + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
    const uint64_t b = end / kDirectAlign * kDirectAlign;
    if (direct_fd_ < 0 || b <= a ||
        (reinterpret_cast<uintptr_t>(p) - offset) % kDirectAlign != 0) {
      return WriteAllAt(fd, p, data.size(), offset);
    }
    // Whole blocks straight to the device; a refusal (EINVAL: alignment or
    // a file system without direct I/O) ends direct writes for this file
    // and the rest goes through the page cache. The file's bytes are the
    // same either way.
    uint64_t at = a;
    while (at < b) {
      const ssize_t n =
          pwrite(direct_fd_, p + (at - offset), b - at, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EINVAL) return false;
      if (n <= 0 || static_cast<uint64_t>(n) % kDirectAlign != 0) {
        if (n > 0) at += static_cast<uint64_t>(n);
        CloseDirect();
        break;
      }
      at += static_cast<uint64_t>(n);
    }
    return WriteAllAt(fd, p, a - offset, offset) &&
           WriteAllAt(fd, p + (at - offset), end - at, at);
  });
}

void OutputFile::StartWriteback(uint64_t offset, uint64_t size) {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
  if (fd_ >= 0 && !failed_ && size > 0) {
    (void)sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(size),
                          SYNC_FILE_RANGE_WRITE);
  }
#else
  (void)offset;
  (void)size;
#endif
}

absl::Status OutputFile::Commit() {
  if (fd_ < 0 || failed_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: not open for writing", path_));
  }
  auto fail = [&](absl::string_view what, int err) {
    Abandon();
    return absl::DataLossError(
        absl::StrFormat("%s: %s: %s", path_, what, ErrnoText(err)));
  };
  CloseDirect();
  if (fsync(fd_) != 0) return fail("write error (fsync)", errno);
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) return fail("write error (close)", errno);
  // The destination may have changed since Create: never rename over
  // anything but a regular file.
  struct stat st;
  if (lstat(destination_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    Abandon();
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: became %s while writing; expected a regular file",
                        path_, KindName(st.st_mode)));
  }
  if (g_interrupts.load() != interrupts_) {
    Abandon();
    return absl::CancelledError(
        absl::StrFormat("%s: interrupted by a signal; not written", path_));
  }
  if (rename(temp_.c_str(), destination_.c_str()) != 0) {
    return fail(absl::StrCat("cannot rename ", temp_, " into place"), errno);
  }
  temp_.clear();
  Unregister(slot_);
  SyncDirectory(Dirname(destination_));
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view data) {
  absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create(path);
  if (!f.ok()) return f.status();
  if (absl::Status s = (*f)->Write(data); !s.ok()) return s;
  return (*f)->Commit();
}

// ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<StagedDirectory>> StagedDirectory::Create(
    const std::string& dest, bool overwrite) {
  if (absl::Status s = CheckOutputDirectory(dest, {}, overwrite); !s.ok())
    return s;
  absl::StatusOr<Destination> d = Resolve(dest, /*want_dir=*/true);
  if (!d.ok()) return d.status();
  std::unique_ptr<StagedDirectory> sd(new StagedDirectory());
  sd->interrupts_ = g_interrupts.load();
  sd->dest_ = dest;
  sd->destination_ = d->path;
  sd->overwrite_ = overwrite;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string staging = absl::StrCat(d->path, ".mxpack-tmp.", RandomSuffix());
    sd->slot_ = Register(staging, /*is_dir=*/true);
    if (mkdir(staging.c_str(), 0777) == 0) {
      sd->staging_ = std::move(staging);
      return sd;
    }
    const int err = errno;
    Unregister(sd->slot_);
    if (err != EEXIST) {
      return absl::PermissionDeniedError(
          absl::StrFormat("%s: cannot create staging directory %s: %s", dest,
                          staging, ErrnoText(err)));
    }
  }
  return absl::InternalError(
      absl::StrFormat("%s: no free staging directory name", dest));
}

StagedDirectory::~StagedDirectory() {
  if (!staging_.empty()) RemoveTree(staging_.c_str());
  Unregister(slot_);
}

absl::Status StagedDirectory::Commit() {
  if (staging_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: already committed", dest_));
  }
  auto fail = [&](absl::Status s) {
    RemoveTree(staging_.c_str());
    staging_.clear();
    Unregister(slot_);
    return s;
  };
  if (g_interrupts.load() != interrupts_) {
    return fail(absl::CancelledError(
        absl::StrFormat("%s: interrupted by a signal; not written", dest_)));
  }
  struct stat st;
  if (lstat(destination_.c_str(), &st) != 0) {
    if (rename(staging_.c_str(), destination_.c_str()) != 0) {
      return fail(absl::DataLossError(
          absl::StrFormat("%s: cannot rename %s into place: %s", dest_,
                          staging_, ErrnoText(errno))));
    }
  } else {
    if (!S_ISDIR(st.st_mode)) {
      return fail(absl::InvalidArgumentError(
          absl::StrFormat("%s: became %s while writing; expected a directory",
                          dest_, KindName(st.st_mode))));
    }
    absl::StatusOr<bool> empty = IsEmptyDirectory(destination_);
    if (!empty.ok()) return fail(empty.status());
    if (!*empty && !overwrite_) {
      return fail(absl::InvalidArgumentError(absl::StrFormat(
          "%s: is a non-empty directory; expected a new name or an empty "
          "directory (or an explicit overwrite)",
          dest_)));
    }
    if (*empty) {
      // rename(2) replaces an empty directory atomically.
      if (rename(staging_.c_str(), destination_.c_str()) != 0) {
        return fail(absl::DataLossError(
            absl::StrFormat("%s: cannot rename %s into place: %s", dest_,
                            staging_, ErrnoText(errno))));
      }
    } else {
      // Exchange the two directories atomically; the staging name then holds
      // the old contents, which are removed below.
      if (renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, destination_.c_str(),
                    RENAME_EXCHANGE) != 0) {
        // File systems without RENAME_EXCHANGE: move the old directory aside.
        const std::string old =
            absl::StrCat(destination_, ".mxpack-old.", RandomSuffix());
        if (rename(destination_.c_str(), old.c_str()) != 0) {
          return fail(absl::DataLossError(
              absl::StrFormat("%s: cannot move the old directory aside: %s",
                              dest_, ErrnoText(errno))));
        }
        if (rename(staging_.c_str(), destination_.c_str()) != 0) {
          const int err = errno;
          rename(old.c_str(), destination_.c_str());
          return fail(absl::DataLossError(
              absl::StrFormat("%s: cannot rename %s into place: %s", dest_,
                              staging_, ErrnoText(err))));
        }
        RemoveTree(old.c_str());
      } else {
        RemoveTree(staging_.c_str());
      }
    }
  }
  staging_.clear();
  Unregister(slot_);
  SyncDirectory(Dirname(destination_));
  return absl::OkStatus();
}

}  // namespace mxpack
