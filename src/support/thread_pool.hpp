// A small fixed-size thread pool for data-parallel kernels.
//
// parallelFor splits [0, n) into chunks handed out dynamically; the calling thread works too. Kernels must
// give every output element to exactly one chunk and never split a floating-point reduction across chunks,
// so results are identical for every thread count and every schedule.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace npuc {

class ThreadPool {
 public:
  /// threads: total workers including the caller (>= 1).
  explicit ThreadPool(int threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Calls fn(begin, end) over disjoint ranges covering [0, n), each at most `grain` long (0 = n / size()).
  /// Nested calls from inside fn run serially on the calling thread.
  void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 0);

  /// Shared pool with the given thread count (created on first use per count).
  static ThreadPool& shared(int threads);

 private:
  void workerLoop();
  void runChunks();

  std::vector<std::thread> workers_;
  // Workers and the caller spin briefly (a few tens of microseconds) on generation_ / active_ before blocking
  // on the condition variables, so back-to-back parallelFor calls do not pay a futex wake-up each.
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> active_{0};
  // Current job.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, grain_ = 1;
  std::atomic<int64_t> next_{0};
  std::mutex job_mu_;  // serialises concurrent parallelFor calls from different threads
};

}  // namespace npuc
