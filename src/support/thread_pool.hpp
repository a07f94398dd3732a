// A small fixed-size thread pool for data-parallel kernels.
//
// parallelFor splits [0, n) into chunks; the calling thread works too. Each thread has a contiguous range of the
// chunks (the caller the first, worker k the (k + 1)-th), runs it, then takes what the others have not started: the
// same chunk of a loop of the same size goes to the same thread whenever none is late, so a layer split like the one
// before it reads data its own core wrote (on a CPU whose cores are far apart, a line another core wrote costs
// hundreds of nanoseconds), and a late thread's work is still taken by the others. Kernels must
// give every output element to exactly one chunk and never split a floating-point reduction across chunks,
// so results are identical for every thread count and every schedule.
//
// Robustness (issue 46): a pool takes at most kMaxThreads threads (more is an error, as on the CLI); a worker the
// system cannot start is an error naming how many were asked for and how many started (those are joined first);
// and a pool survives fork(): a forked child has none of its parent's threads, so the child's copy of every pool
// starts workers of its own on its first parallelFor (pthread_atfork handlers; the parent waits for running
// parallelFor calls before forking, so the child never inherits a lock held by a thread it does not have).
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
  /// The most threads a pool takes (the CLI's --threads range; Python's and the C API's threads too).
  static constexpr int kMaxThreads = 256;

  /// threads: total workers including the caller (values below 1 mean 1; above kMaxThreads: kInvalidArgument).
  /// A worker thread the system cannot start: npuc::Error (kIo), after the workers already started are joined.
  explicit ThreadPool(int threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  /// Calls fn(begin, end) over disjoint ranges covering [0, n), each at most `grain` long (0 = n / size()).
  /// Nested calls from inside fn run serially on the calling thread.
  void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 0);

  /// Shared pool with the given thread count (created on first use per count).
  static ThreadPool& shared(int threads);

  struct Core;  // (the workers and their synchronisation: replaced in a forked child)

 private:
  friend struct ForkHandlers;
  int threads_ = 1;
  Core* core_ = nullptr;
};

namespace detail {
/// Tests: the next `n` worker threads start, the one after fails as std::thread does when the system has no more
/// (std::system_error, EAGAIN); then starting works again. n < 0: no failure (the default).
void failThreadStartAfter(int n);
}  // namespace detail

}  // namespace npuc
