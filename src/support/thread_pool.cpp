#include "support/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>

namespace npuc {

namespace {
thread_local bool tl_in_pool = false;
}

ThreadPool::ThreadPool(int threads) {
  threads = std::max(1, threads);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
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
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    runChunks();
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (--active_ == 0) done_cv_.notify_all();
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
  {
    std::lock_guard<std::mutex> lk(mu_);
    fn_ = &fn;
    n_ = n;
    grain_ = grain;
    next_.store(0);
    active_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  cv_.notify_all();
  tl_in_pool = true;
  runChunks();
  tl_in_pool = false;
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return active_ == 0; });
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
