#include "support/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>

namespace npuc {

namespace {

thread_local bool tl_in_pool = false;

// How long an idle worker (or a caller waiting for workers) polls before blocking. Long enough to bridge the gap
// between two layers' parallel loops (a serial op, the engine's bookkeeping): waking a blocked worker costs tens
// of microseconds per loop, which measured as 5-20% of MobileNetV2 / SqueezeNet at 2 threads with 40 us.
constexpr auto kSpinTime = std::chrono::microseconds(500);

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls done() for up to kSpinTime; returns whether it became true. Yields between bursts of polling, so a
// spinning thread that shares its core with the thread it waits for (more threads than free cores) hands the
// core over instead of burning its time slice.
template <class Done>
bool spinUntil(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (done()) return true;
      cpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::yield();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  threads = std::max(1, threads);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::runChunks() {
  for (;;) {
    int64_t b = next_.fetch_add(grain_);
    if (b >= n_) break;
    (*fn_)(b, std::min(n_, b + grain_));
  }
}

void ThreadPool::workerLoop() {
  tl_in_pool = true;
  uint64_t seen = 0;
  for (;;) {
    auto ready = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
    if (!spinUntil(ready)) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    runChunks();
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The caller may be blocked on done_cv_: take mu_ so the notify cannot fall between its check and wait.
      { std::lock_guard<std::mutex> lk(mu_); }
      done_cv_.notify_all();
    }
  }
}

void ThreadPool::parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  if (grain <= 0) grain = std::max<int64_t>(1, (n + size() - 1) / size());
  if (workers_.empty() || tl_in_pool || n <= grain) {
    for (int64_t b = 0; b < n; b += grain) fn(b, std::min(n, b + grain));
    return;
  }
  std::lock_guard<std::mutex> job(job_mu_);
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  next_.store(0, std::memory_order_relaxed);
  active_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    // The job fields are published by the release increment; mu_ orders it against blocked workers' checks.
    std::lock_guard<std::mutex> lk(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  tl_in_pool = true;
  runChunks();
  tl_in_pool = false;
  auto done = [&] { return active_.load(std::memory_order_acquire) == 0; };
  if (!spinUntil(done)) {
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, done);
  }
  fn_ = nullptr;
}

ThreadPool& ThreadPool::shared(int threads) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  std::lock_guard<std::mutex> lk(mu);
  auto& p = pools[std::max(1, threads)];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

}  // namespace npuc
