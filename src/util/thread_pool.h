// Internal: a small fixed-size thread pool whose only operation is a blocking
// ParallelFor over an index range (the caller's thread takes part).
//
// Items are handed out dynamically, so which thread runs an item varies from
// run to run; callers get deterministic results by writing each item's output
// to its own disjoint place and combining per-item results in index order.
#ifndef MXPACK_SRC_UTIL_THREAD_POOL_H_
#define MXPACK_SRC_UTIL_THREAD_POOL_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "src/util/fp_env.h"

namespace mxpack::internal {

class ThreadPool {
 public:
  // `threads` in total, including the caller of ParallelFor; 0 means
  // std::thread::hardware_concurrency().
  explicit ThreadPool(size_t threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    for (size_t i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size() + 1; }

  // Runs fn(i) for every i in [0, n) and returns when all calls have
  // returned. fn must not throw. Not reentrant (one ParallelFor at a time).
  void ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
    if (n == 0) return;
    if (workers_.empty() || n == 1) {
      for (size_t i = 0; i < n; ++i) fn(i);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_ = n;
      next_.store(0);
      busy_ = workers_.size();
      ++generation_;
    }
    wake_.notify_all();
    RunItems(fn, n);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return busy_ == 0; });
    fn_ = nullptr;
  }

 private:
  void RunItems(const std::function<void(size_t)>& fn, size_t n) {
    for (size_t i = next_.fetch_add(1); i < n; i = next_.fetch_add(1)) fn(i);
  }

  void WorkerLoop() {
    // The library's threads compute in its environment (src/util/fp_env.h),
    // not in whatever the thread that created the pool had set.
    ScopedDefaultFpEnv::SetForThread();
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(size_t)>* fn;
      size_t n;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        fn = fn_;
        n = n_;
      }
      RunItems(*fn, n);
      {
        std::lock_guard<std::mutex> lock(mu_);
        --busy_;
      }
      done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t n_ = 0;
  size_t busy_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::atomic<size_t> next_{0};
};

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_UTIL_THREAD_POOL_H_
