// The output shard writer thread (src/checkpoint/checkpoint_io.h) and the
// buffer recycler it drains (src/util/huge_buffer.h): out-of-order writes at
// data offsets, commit, and that an error or an abandoned writer leaves no
// file behind.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/checkpoint/checkpoint_io.h"
#include "src/util/huge_buffer.h"

namespace mxpack::internal {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "mxpack-writer-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }
  std::vector<std::string> Names() const {
    std::vector<std::string> n;
    for (const auto& e : fs::directory_iterator(path_)) {
      n.push_back(e.path().filename().string());
    }
    std::sort(n.begin(), n.end());
    return n;
  }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(ShardWriterTest, DrainWaitsForQueuedWorkAndMoreMayFollow) {
  TempDir t;
  auto big = std::make_shared<std::string>(size_t{8} << 20, 'x');
  ShardWriter w;
  const size_t f0 = w.Open(t / "first.safetensors", "H");
  for (uint64_t i = 0; i < 4; ++i) w.Write(f0, i * big->size(), Bytes(*big), big);
  w.Commit(f0);
  std::weak_ptr<std::string> released = big;
  big.reset();
  ASSERT_TRUE(w.Drain().ok());
  // Done, not only taken off the queue: committed, and the bytes let go.
  EXPECT_TRUE(released.expired());
  EXPECT_EQ(fs::file_size(t / "first.safetensors"), 1 + (uint64_t{32} << 20));
  const size_t f1 = w.Open(t / "second.safetensors", "HH");
  w.Commit(f1);
  ASSERT_TRUE(w.Finish().ok());
  EXPECT_EQ(ReadFile(t / "second.safetensors"), "HH");
}

TEST(ShardWriterTest, WritesAtDataOffsetsInAnyOrderAndCommits) {
  TempDir t;
  auto a = std::make_shared<std::string>("AAAA");
  auto b = std::make_shared<std::string>("BB");
  ShardWriter w;
  const size_t f0 = w.Open(t / "x.safetensors", "HDR:");
  const size_t f1 = w.Open(t / "y.safetensors", "H");
  w.Write(f0, 4, Bytes(*b), b);  // the second tensor before the first
  w.Write(f1, 0, Bytes(*b), b);
  w.Write(f0, 0, Bytes(*a), a);
  std::weak_ptr<std::string> released = a;
  a.reset();
  w.Commit(f0);
  w.Commit(f1);
  ASSERT_TRUE(w.Finish().ok());
  EXPECT_TRUE(released.expired());  // the writer let go of the bytes
  EXPECT_EQ(ReadFile(t / "x.safetensors"), "HDR:AAAABB");
  EXPECT_EQ(ReadFile(t / "y.safetensors"), "HBB");
  EXPECT_EQ(t.Names(), (std::vector<std::string>{"x.safetensors", "y.safetensors"}));
}

TEST(ShardWriterTest, AnErrorStopsLaterWorkAndRemovesUncommittedFiles) {
  TempDir t;
  auto a = std::make_shared<std::string>("AAAA");
  ShardWriter w;
  const size_t f0 = w.Open(t / "done.safetensors", "H");
  w.Write(f0, 0, Bytes(*a), a);
  w.Commit(f0);
  const size_t f1 = w.Open(t / "open.safetensors", "H");
  w.Write(f1, 0, Bytes(*a), a);
  const size_t f2 = w.Open(t / "missing/dir.safetensors", "H");  // fails
  w.Write(f2, 0, Bytes(*a), a);
  w.Commit(f2);
  w.Commit(f1);
  const absl::Status s = w.Finish();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing/dir.safetensors"), std::string::npos) << s;
  EXPECT_EQ(a.use_count(), 1);
  // Committed before the error: kept; open at the error: removed with its
  // temporary file.
  EXPECT_EQ(t.Names(), std::vector<std::string>{"done.safetensors"});
  // Work queued after the error is dropped.
  w.Write(f1, 0, Bytes(*a), a);
  EXPECT_EQ(a.use_count(), 1);
}

TEST(ShardWriterTest, AbandonedWriterLeavesNoFile) {
  TempDir t;
  auto big = std::make_shared<std::string>(size_t{1} << 20, 'x');
  {
    ShardWriter w;
    const size_t f = w.Open(t / "x.safetensors", "H");
    for (uint64_t i = 0; i < 64; ++i) w.Write(f, i << 20, Bytes(*big), big);
    // No Commit, no Finish: destroyed mid-work.
  }
  EXPECT_TRUE(t.Names().empty());
  EXPECT_EQ(big.use_count(), 1);
}

TEST(BufferRecyclerTest, ReusesBuffersAndThrottlesLeases) {
  BufferRecycler r(2);
  std::shared_ptr<uint8_t> a = r.Acquire(100);
  uint8_t* const first = a.get();
  a.reset();
  std::shared_ptr<uint8_t> b = r.Acquire(50);  // fits the returned buffer
  EXPECT_EQ(b.get(), first);
  std::shared_ptr<uint8_t> c = r.Acquire(10);
  // A third lease waits until one of the two is returned.
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    std::shared_ptr<uint8_t> d = r.Acquire(200);
    d.get()[199] = 1;  // at least the size asked for
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());
  c.reset();
  waiter.join();
  EXPECT_TRUE(got.load());
}

}  // namespace
}  // namespace mxpack::internal
