#include "support/thread_pool.hpp"

#include "support/error.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <system_error>

namespace npuc {

namespace {

thread_local bool tl_in_pool = false;

// How long an idle worker (or a caller waiting for workers) polls before blocking. Long enough to bridge the gap
// between two layers' parallel loops (a serial op, the engine's bookkeeping): waking a blocked worker costs tens
// of microseconds per loop, which measured as 5-20% of MobileNetV2 / SqueezeNet at 2 threads with 40 us.
constexpr auto kSpinTime = std::chrono::microseconds(500);

std::atomic<int> g_fail_start_after{-1};  // detail::failThreadStartAfter

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

// NPUC_POOL_AFFINITY=0: chunks from one shared counter, first come first served (the schedule before threads kept
// to their own ranges; for measuring the difference).
bool affinityFromEnvironment() {
  const char* e = std::getenv("NPUC_POOL_AFFINITY");
  return !(e != nullptr && e[0] == '0' && e[1] == 0);
}

}  // namespace

struct ThreadPool::Core {
  std::vector<std::thread> workers;
  // Workers and the caller spin briefly (a few tens of microseconds) on generation / active before blocking
  // on the condition variables, so back-to-back parallelFor calls do not pay a futex wake-up each.
  std::mutex mu;
  std::condition_variable cv;
  std::condition_variable done_cv;
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stop{false};
  std::atomic<int> active{0};
  // Current job.
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0, grain = 1;
  // The job's chunks (grain elements each) in one contiguous range per thread, the caller's first: a thread runs
  // its own range, then takes what is left of the others'. Chunk k of a job goes to the same thread in every job
  // of the same size, so a layer split like the one before it reads what its own core wrote.
  struct alignas(64) Range {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::unique_ptr<Range[]> ranges;  // one per thread (the caller is 0, worker k is k + 1)
  int ranges_size = 0;
  bool affinity = affinityFromEnvironment();
  std::atomic<int64_t> next{0};  // (affinity off: one shared counter)
  std::mutex job_mu;  // serialises concurrent parallelFor calls from different threads (and starting workers)

  /// The job's `chunks` chunks split into one contiguous range per thread (sizes differing by at most one).
  void setRanges(int64_t chunks) {
    const int t = static_cast<int>(workers.size()) + 1;
    if (ranges_size != t) {
      ranges = std::make_unique<Range[]>(static_cast<size_t>(t));
      ranges_size = t;
    }
    const int64_t each = chunks / t, extra = chunks % t;
    int64_t begin = 0;
    for (int i = 0; i < t; ++i) {
      const int64_t end = begin + each + (i < extra ? 1 : 0);
      ranges[i].next.store(begin, std::memory_order_relaxed);
      ranges[i].end = end;
      begin = end;
    }
  }

  void runChunks(int self) {
    if (!affinity) {
      for (;;) {
        int64_t b = next.fetch_add(grain);
        if (b >= n) break;
        (*fn)(b, std::min(n, b + grain));
      }
      return;
    }
    for (int k = 0; k < ranges_size; ++k) {
      Range& r = ranges[(self + k) % ranges_size];
      for (;;) {
        const int64_t chunk = r.next.fetch_add(1, std::memory_order_relaxed);
        if (chunk >= r.end) break;
        const int64_t b = chunk * grain;
        (*fn)(b, std::min(n, b + grain));
      }
    }
  }

  /// seen: the generation when the worker was started (job_mu held, no job running); a job is a later one.
  void workerLoop(int self, uint64_t seen) {
    tl_in_pool = true;
    for (;;) {
      auto ready = [&] { return stop.load(std::memory_order_acquire) || generation.load(std::memory_order_acquire) != seen; };
      if (!spinUntil(ready)) {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, ready);
      }
      if (stop.load(std::memory_order_acquire)) return;
      seen = generation.load(std::memory_order_acquire);
      runChunks(self);
      if (active.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // The caller may be blocked on done_cv: take mu so the notify cannot fall between its check and wait.
        { std::lock_guard<std::mutex> lk(mu); }
        done_cv.notify_all();
      }
    }
  }

  /// Tells the workers to stop and joins them (those of this process: a forked child's copy is abandoned instead).
  void stopAndJoin() {
    {
      std::lock_guard<std::mutex> lk(mu);
      stop.store(true);
    }
    cv.notify_all();
    for (auto& t : workers) t.join();
    workers.clear();
    stop.store(false);
  }

  /// Starts workers until the pool has `threads` in all (the caller counts); job_mu held. A worker the system cannot
  /// start: the ones started are stopped and joined, and the error says how many of how many.
  void start(int threads) {
    std::string why;
    try {
      while (static_cast<int>(workers.size()) + 1 < threads) {
        if (int k = g_fail_start_after.load(); k >= 0) {
          if (k == 0) {
            g_fail_start_after.store(-1);
            throw std::system_error(EAGAIN, std::generic_category(), "injected by detail::failThreadStartAfter");
          }
          g_fail_start_after.store(k - 1);
        }
        const int self = static_cast<int>(workers.size()) + 1;
        workers.emplace_back([this, self, g = generation.load()] { workerLoop(self, g); });
      }
      return;
    } catch (const std::system_error& e) {
      why = e.what();
    } catch (const std::bad_alloc&) {
      why = "out of memory";
    }
    const size_t started = workers.size();
    stopAndJoin();
    fail(ErrorCode::kIo, "cannot start the thread pool's worker threads: {} thread{} asked for (the caller and {} "
         "worker{}), the system started {} worker{} and refused the next ({}); ask for fewer threads",
         threads, threads == 1 ? "" : "s", threads - 1, threads == 2 ? "" : "s", started, started == 1 ? "" : "s", why);
  }
};

namespace {

/// Every pool of the process (for the fork handlers) and the shared pools. Never destroyed: pools may be destroyed
/// during static destruction, and a forked child's abandoned cores must stay reachable.
struct Registry {
  std::mutex mu;
  std::set<ThreadPool*> pools;
  std::vector<ThreadPool::Core*> abandoned;  // a forked child's copies of its parent's cores (their threads are gone)
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

struct ForkHandlers {
  // Before fork: no parallelFor runs and no worker holds a lock (the workers of a pool without a job wait on cv,
  // which holds no lock), so the child's copies of the locks are free.
  static void prepare() {
    Registry& r = registry();
    r.mu.lock();
    for (ThreadPool* p : r.pools) {
      p->core_->job_mu.lock();
      p->core_->mu.lock();
    }
  }
  static void parent() {
    Registry& r = registry();
    for (ThreadPool* p : r.pools) {
      p->core_->mu.unlock();
      p->core_->job_mu.unlock();
    }
    r.mu.unlock();
  }
  // The child has only the thread that forked: each pool's core (threads that do not exist here, condition
  // variables that count their waiters) is abandoned for a new one, whose workers start on the pool's first use.
  static void child() {
    Registry& r = registry();
    for (ThreadPool* p : r.pools) {
      r.abandoned.push_back(p->core_);
      p->core_ = new ThreadPool::Core;
    }
    r.mu.unlock();
  }
  static void install() {
    static const int once = ::pthread_atfork(&prepare, &parent, &child);
    (void)once;
  }
};

ThreadPool::ThreadPool(int threads) {
  if (threads > kMaxThreads)
    fail(ErrorCode::kInvalidArgument, "threads must be 1 to {} (got {})", kMaxThreads, threads);
  threads_ = std::max(1, threads);
  ForkHandlers::install();
  auto core = std::make_unique<Core>();
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lk(r.mu);
    core_ = core.release();
    r.pools.insert(this);
  }
  try {
    std::lock_guard<std::mutex> job(core_->job_mu);
    core_->start(threads_);
  } catch (...) {
    {
      std::lock_guard<std::mutex> lk(r.mu);
      r.pools.erase(this);
    }
    delete core_;
    throw;
  }
}

ThreadPool::~ThreadPool() {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lk(r.mu);
    r.pools.erase(this);
  }
  core_->stopAndJoin();
  delete core_;
}

void ThreadPool::parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  if (grain <= 0) grain = std::max<int64_t>(1, (n + size() - 1) / size());
  if (threads_ == 1 || tl_in_pool || n <= grain) {
    for (int64_t b = 0; b < n; b += grain) fn(b, std::min(n, b + grain));
    return;
  }
  Core& c = *core_;
  std::lock_guard<std::mutex> job(c.job_mu);
  if (static_cast<int>(c.workers.size()) + 1 < threads_) c.start(threads_);  // (a forked child's first use)
  c.fn = &fn;
  c.n = n;
  c.grain = grain;
  if (c.affinity) c.setRanges((n + grain - 1) / grain);
  else c.next.store(0, std::memory_order_relaxed);
  c.active.store(static_cast<int>(c.workers.size()), std::memory_order_relaxed);
  {
    // The job fields are published by the release increment; mu orders it against blocked workers' checks.
    std::lock_guard<std::mutex> lk(c.mu);
    c.generation.fetch_add(1, std::memory_order_release);
  }
  c.cv.notify_all();
  tl_in_pool = true;
  c.runChunks(0);
  tl_in_pool = false;
  auto done = [&] { return c.active.load(std::memory_order_acquire) == 0; };
  if (!spinUntil(done)) {
    std::unique_lock<std::mutex> lk(c.mu);
    c.done_cv.wait(lk, done);
  }
  c.fn = nullptr;
}

ThreadPool& ThreadPool::shared(int threads) {
  threads = std::max(1, threads);
  // Guarded by a mutex of its own, not the registry's: the fork handlers hold the registry's while they wait for
  // every pool's job lock, and a parallelFor body that asks for a shared pool holds a job lock while it waits here.
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  static std::mutex mu;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (auto it = pools.find(threads); it != pools.end()) return *it->second;
  }
  auto made = std::make_unique<ThreadPool>(threads);  // (outside the lock: the constructor may throw)
  std::lock_guard<std::mutex> lk(mu);
  auto& p = pools[threads];
  if (!p) p = std::move(made);  // (else another thread made one first: `made` is destroyed after the lock is released)
  return *p;
}

namespace detail {
void failThreadStartAfter(int n) { g_fail_start_after.store(n < 0 ? -1 : n); }
}  // namespace detail

}  // namespace npuc
