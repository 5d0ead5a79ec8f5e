// Tests of src/util/output_file.h: which outputs are refused, writing
// through symbolic links, atomic replacement, cleanup on errors and on
// SIGINT / SIGTERM, and directory staging.
#include "src/util/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace mxpack {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void WriteRaw(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

bool IsSymlink(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// Names in DIR (recursively one level) that contain "mxpack-tmp" or
// "mxpack-old".
std::vector<std::string> Leftovers(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.find("mxpack-tmp") != std::string::npos ||
        name.find("mxpack-old") != std::string::npos) {
      out.push_back(name);
    }
  }
  closedir(d);
  return out;
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mxpack-output-file-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    in_ = dir_ + "/in.bin";
    WriteRaw(in_, "input bytes");
  }
  void TearDown() override {
    EXPECT_EQ(Leftovers(dir_).size(), 0u);
    EXPECT_EQ(ReadAll(in_), "input bytes");
    const std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string P(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_, in_;
};

TEST_F(OutputFileTest, NewAndExistingRegularFilesAreAccepted) {
  EXPECT_TRUE(CheckOutputFiles({P("new.bin")}, {in_}).ok());
  WriteRaw(P("old.bin"), "old");
  EXPECT_TRUE(CheckOutputFiles({P("old.bin"), "-", ""}, {in_, "-", ""}).ok());
  ASSERT_TRUE(WriteFileAtomically(P("old.bin"), "new contents").ok());
  EXPECT_EQ(ReadAll(P("old.bin")), "new contents");
  ASSERT_TRUE(WriteFileAtomically(P("new.bin"), "").ok());
  EXPECT_EQ(ReadAll(P("new.bin")), "");
}

TEST_F(OutputFileTest, SameFileAsInputIsRefused) {
  // Other spellings of the same path, a hard link and a symbolic link.
  const std::string sub = P("sub");
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  ASSERT_EQ(link(in_.c_str(), P("hard").c_str()), 0);
  ASSERT_EQ(symlink("in.bin", P("soft").c_str()), 0);
  for (const std::string& out :
       {in_, sub + "/../in.bin", dir_ + "/./in.bin", P("hard"), P("soft")}) {
    const absl::Status s = CheckOutputFiles({out}, {in_});
    ASSERT_FALSE(s.ok()) << out;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("same file as input"), absl::string_view::npos)
        << s.message();
    EXPECT_NE(s.message().find(out), absl::string_view::npos) << s.message();
  }
  // The input given through the link is the same file too.
  EXPECT_FALSE(CheckOutputFiles({in_}, {P("soft")}).ok());
  // Two outputs naming one file, existing or new.
  EXPECT_FALSE(CheckOutputFiles({P("hard"), in_}, {}).ok());
  EXPECT_FALSE(CheckOutputFiles({P("x"), sub + "/../x"}, {}).ok());
}

TEST_F(OutputFileTest, StdinRedirectedFromTheOutputIsRefused) {
  const int saved = dup(STDIN_FILENO);
  const int fd = open(in_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_GE(dup2(fd, STDIN_FILENO), 0);
  const absl::Status s = CheckOutputFiles({in_}, {"-"});
  dup2(saved, STDIN_FILENO);
  close(saved);
  close(fd);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("same file as input stdin"),
            absl::string_view::npos)
      << s.message();
}

TEST_F(OutputFileTest, NonRegularOutputsAreRefused) {
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  ASSERT_EQ(mkfifo(P("fifo").c_str(), 0644), 0);
  const int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = P("sock");
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  std::strcpy(addr.sun_path, sock_path.c_str());
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(symlink("d", P("link-to-dir").c_str()), 0);
  ASSERT_EQ(symlink("missing", P("dangling").c_str()), 0);
  const struct {
    std::string path, what;
  } cases[] = {
      {P("d"), "is a directory"},
      {P("fifo"), "is a FIFO"},
      {sock_path, "is a socket"},
      {"/dev/null", "is a character device"},
      {P("link-to-dir"), "which is a directory"},
      {P("dangling"), "target does not exist"},
      {P("no-such-dir/x"), "does not exist"},
  };
  for (const auto& c : cases) {
    for (int create = 0; create < 2; ++create) {
      absl::Status s = create ? WriteFileAtomically(c.path, "x")
                              : CheckOutputFiles({c.path}, {in_});
      ASSERT_FALSE(s.ok()) << c.path;
      EXPECT_NE(s.message().find(c.path), absl::string_view::npos)
          << s.message();
      EXPECT_NE(s.message().find(c.what), absl::string_view::npos)
          << s.message();
    }
  }
  close(sock);
  struct stat st;
  ASSERT_EQ(lstat(P("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(lstat(P("dangling").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(OutputFileTest, SymbolicLinkIsWrittenThrough) {
  WriteRaw(P("target"), "old");
  ASSERT_EQ(chmod(P("target").c_str(), 0640), 0);
  ASSERT_EQ(symlink("target", P("link").c_str()), 0);
  ASSERT_TRUE(CheckOutputFiles({P("link")}, {in_}).ok());
  ASSERT_TRUE(WriteFileAtomically(P("link"), "new").ok());
  EXPECT_TRUE(IsSymlink(P("link")));
  EXPECT_EQ(ReadAll(P("link")), "new");
  EXPECT_EQ(ReadAll(P("target")), "new");
  struct stat st;
  ASSERT_EQ(stat(P("target").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);  // The replaced file's mode is kept.
}

TEST_F(OutputFileTest, UncommittedFileLeavesNothing) {
  WriteRaw(P("out"), "old");
  {
    absl::StatusOr<std::unique_ptr<OutputFile>> f =
        OutputFile::Create(P("out"));
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Write("partial").ok());
    EXPECT_EQ(Leftovers(dir_).size(), 1u);
  }
  EXPECT_EQ(ReadAll(P("out")), "old");
  {
    absl::StatusOr<std::unique_ptr<OutputFile>> f =
        OutputFile::Create(P("new"));
    ASSERT_TRUE(f.ok()) << f.status();
  }
  EXPECT_NE(access(P("new").c_str(), F_OK), 0);
}

// Direct writes: pieces written in any order, each at its file offset's
// position modulo the block in memory (whole blocks go to the device) or not
// (everything through the page cache), give exactly the bytes of one plain
// write; the partial blocks at both ends, the header and the file's last
// partial block included. Whether or not the file system takes O_DIRECT.
TEST_F(OutputFileTest, DirectWritesGiveTheSameBytes) {
  constexpr uint64_t kB = OutputFile::kDirectAlign;
  const uint64_t size = 7 * kB + 1234;
  std::string want(size, '\0');
  for (uint64_t i = 0; i < size; ++i) want[i] = static_cast<char>(i * 131 + (i >> 9));
  // [begin, end) of each piece, written in this order.
  const std::vector<std::pair<uint64_t, uint64_t>> pieces = {
      {3 * kB + 100, 6 * kB + 7},  // partial block, whole blocks, partial block
      {0, 17},                     // a header-like start
      {6 * kB + 7, size},          // whole blocks, then the file's partial end
      {17, kB},                    // ends on a block boundary
      {kB, 2 * kB},                // exactly one block
      {2 * kB, 3 * kB + 100},      // one block, then part of the next
  };
  for (const bool direct : {true, false}) {
    for (const bool aligned : {true, false}) {
      absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create(P("out"));
      ASSERT_TRUE(f.ok()) << f.status();
      if (direct) (void)(*f)->EnableDirectWrites();
      std::vector<uint8_t> mem(size + 2 * kB);
      for (const auto& [b, e] : pieces) {
        // The piece's bytes at b's position modulo the block (plus one
        // byte when not `aligned`).
        const uintptr_t base = reinterpret_cast<uintptr_t>(mem.data());
        uint8_t* at = mem.data() + (b - base) % kB + (aligned ? 0 : 1);
        std::memcpy(at, want.data() + b, e - b);
        ASSERT_TRUE((*f)->WriteAt(b, absl::MakeConstSpan(at, e - b)).ok());
      }
      ASSERT_TRUE((*f)->Commit().ok());
      EXPECT_EQ(ReadAll(P("out")), want) << direct << aligned;
    }
  }
  // An uncommitted file with direct writes leaves nothing.
  {
    absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create(P("new"));
    ASSERT_TRUE(f.ok()) << f.status();
    (void)(*f)->EnableDirectWrites();
    std::vector<uint8_t> mem(4 * kB);
    uint8_t* at = mem.data() + (kB - reinterpret_cast<uintptr_t>(mem.data()) % kB) % kB;
    ASSERT_TRUE((*f)->WriteAt(0, absl::MakeConstSpan(at, 2 * kB)).ok());
  }
  EXPECT_NE(access(P("new").c_str(), F_OK), 0);
}

// Runs BODY in a child that kills itself with SIG while a temporary file
// or staging directory exists; the child must die of SIG.
template <class Body>
void ExpectKilledBy(int sig, Body body) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    body();
    _exit(0);  // Not reached when the signal kills the child.
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
  EXPECT_EQ(WTERMSIG(status), sig);
}

TEST_F(OutputFileTest, InterruptedWriteLeavesNothing) {
  WriteRaw(P("out"), "old");
  for (int sig : {SIGTERM, SIGINT}) {
    ExpectKilledBy(sig, [&] {
      absl::StatusOr<std::unique_ptr<OutputFile>> f =
          OutputFile::Create(P("out"));
      if (!f.ok() || !(*f)->Write(std::string(1 << 20, 'x')).ok()) _exit(3);
      if (Leftovers(dir_).size() != 1) _exit(4);
      kill(getpid(), sig);
      pause();
    });
    EXPECT_EQ(ReadAll(P("out")), "old");
    EXPECT_TRUE(Leftovers(dir_).empty());
  }
}

TEST_F(OutputFileTest, StagedDirectory) {
  const std::string out = P("outdir");
  {
    // Committed into a new name.
    absl::StatusOr<std::unique_ptr<StagedDirectory>> d =
        StagedDirectory::Create(out, /*overwrite=*/false);
    ASSERT_TRUE(d.ok()) << d.status();
    WriteRaw((*d)->staging_path() + "/a", "A");
    ASSERT_TRUE((*d)->Commit().ok());
    EXPECT_EQ(ReadAll(out + "/a"), "A");
  }
  // A non-empty directory needs overwrite.
  absl::StatusOr<std::unique_ptr<StagedDirectory>> refused =
      StagedDirectory::Create(out, /*overwrite=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("non-empty directory"),
            absl::string_view::npos);
  {
    absl::StatusOr<std::unique_ptr<StagedDirectory>> d =
        StagedDirectory::Create(out, /*overwrite=*/true);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(mkdir(((*d)->staging_path() + "/sub").c_str(), 0755), 0);
    WriteRaw((*d)->staging_path() + "/sub/b", "B");
    ASSERT_TRUE((*d)->Commit().ok());
    EXPECT_EQ(ReadAll(out + "/sub/b"), "B");
    EXPECT_NE(access((out + "/a").c_str(), F_OK), 0);
  }
  {
    // An empty directory is replaced; an abandoned one leaves nothing.
    ASSERT_EQ(mkdir(P("empty").c_str(), 0755), 0);
    absl::StatusOr<std::unique_ptr<StagedDirectory>> d =
        StagedDirectory::Create(P("empty"), /*overwrite=*/false);
    ASSERT_TRUE(d.ok()) << d.status();
    WriteRaw((*d)->staging_path() + "/c", "C");
    ASSERT_TRUE((*d)->Commit().ok());
    EXPECT_EQ(ReadAll(P("empty/c")), "C");
    absl::StatusOr<std::unique_ptr<StagedDirectory>> e =
        StagedDirectory::Create(P("abandoned"), /*overwrite=*/false);
    ASSERT_TRUE(e.ok());
    WriteRaw((*e)->staging_path() + "/d", "D");
  }
  EXPECT_NE(access(P("abandoned").c_str(), F_OK), 0);
  // A file is not a directory; a directory holding an input is refused.
  EXPECT_FALSE(StagedDirectory::Create(in_, true).ok());
  EXPECT_FALSE(CheckOutputDirectory(dir_, {in_}, /*overwrite=*/true).ok());
  // Interrupted: the staging tree is removed, the old directory kept.
  ExpectKilledBy(SIGTERM, [&] {
    absl::StatusOr<std::unique_ptr<StagedDirectory>> d =
        StagedDirectory::Create(out, /*overwrite=*/true);
    if (!d.ok()) _exit(3);
    mkdir(((*d)->staging_path() + "/deep").c_str(), 0755);
    mkdir(((*d)->staging_path() + "/deep/er").c_str(), 0755);
    WriteRaw((*d)->staging_path() + "/deep/er/x", "X");
    raise(SIGTERM);
    pause();
  });
  EXPECT_EQ(ReadAll(out + "/sub/b"), "B");
}

// The child of SignalThatReturnsCancelsCommitsCreatedBeforeIt, in a fresh
// process (so that the returning handler below is installed before
// mxpack's, which chains to it, as in a Python interpreter): exit status 0
// when every check holds, else the number of the failed check.
int InterruptedCommitsChild(const std::string& dir) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = [](int) {};  // returns, like CPython's handler
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGINT, &sa, nullptr) != 0) return 1;
  absl::StatusOr<std::unique_ptr<StagedDirectory>> d =
      StagedDirectory::Create(dir + "/outdir", /*overwrite=*/false);
  if (!d.ok()) return 2;
  absl::StatusOr<std::unique_ptr<OutputFile>> in_dir =
      OutputFile::Create((*d)->staging_path() + "/shard");
  absl::StatusOr<std::unique_ptr<OutputFile>> plain = OutputFile::Create(dir + "/plain");
  if (!in_dir.ok() || !plain.ok()) return 3;
  if (!(*in_dir)->Write("shard bytes").ok() || !(*plain)->Write("plain").ok()) return 4;
  raise(SIGINT);  // the handler removes the temporaries and returns
  // Created before the signal: no commit succeeds (another thread could
  // otherwise rename a file into the removed directory's place).
  const absl::Status a = (*in_dir)->Commit();
  const absl::Status b = (*plain)->Commit();
  const absl::Status c = (*d)->Commit();
  if (!absl::IsCancelled(a) || !absl::IsCancelled(b) || !absl::IsCancelled(c)) return 5;
  if (b.message().find("interrupted") == absl::string_view::npos) return 6;
  if (access((dir + "/outdir").c_str(), F_OK) == 0) return 7;
  if (access((dir + "/plain").c_str(), F_OK) == 0) return 8;
  // Created after it: the process goes on and can write again.
  if (!WriteFileAtomically(dir + "/later", "later").ok()) return 9;
  if (ReadAll(dir + "/later") != "later") return 10;
  unlink((dir + "/later").c_str());
  return 0;
}

TEST_F(OutputFileTest, SignalThatReturnsCancelsCommitsCreatedBeforeIt) {
  if (const char* child = std::getenv("MXPACK_INTERRUPT_CHILD_DIR")) {
    const int failed = InterruptedCommitsChild(child);
    unlink(in_.c_str());  // this process's own fixture directory
    rmdir(dir_.c_str());
    _exit(failed);
  }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("MXPACK_INTERRUPT_CHILD_DIR", dir_.c_str(), 1);
    const char* argv[] = {"/proc/self/exe",
                          "--gtest_filter=OutputFileTest."
                          "SignalThatReturnsCancelsCommitsCreatedBeforeIt",
                          nullptr};
    execv(argv[0], const_cast<char* const*>(argv));
    _exit(100);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed check (see InterruptedCommitsChild)";
  EXPECT_NE(access(P("outdir").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace mxpack
