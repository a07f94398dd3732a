// Work splitting shared by the IR-free layer kernels (layers_ref.cpp, prepost_ref.cpp): cheap element-wise work
// stays on one thread below a threshold; every unit goes to exactly one chunk, so results do not depend on the
// thread count.
#pragma once

#include "support/thread_pool.hpp"

#include <algorithm>
#include <cstdint>

namespace npuc::kernels::detail {

/// Elementary steps (roughly: one output element of a cheap op) below which a call stays on one thread.
inline constexpr int64_t kMinParallelWork = 16384;

/// Calls fn(begin, end) over [0, units): serially without a pool or when the work is small, else in chunks of
/// at least enough units to amount to kMinParallelWork steps (`work_per_unit` steps each).
template <class F>
void parallelUnits(ThreadPool* pool, int64_t units, int64_t work_per_unit, F&& fn) {
  if (units <= 0) return;
  const int64_t wpu = std::max<int64_t>(1, work_per_unit);
  const int64_t min_units = std::max<int64_t>(1, kMinParallelWork / wpu);
  if (pool == nullptr || pool->size() <= 1 || units <= min_units) {
    fn(int64_t{0}, units);
    return;
  }
  const int64_t grain = std::max<int64_t>(min_units, units / (4 * static_cast<int64_t>(pool->size())) + 1);
  pool->parallelFor(units, [&](int64_t b, int64_t e) { fn(b, e); }, grain);
}

}  // namespace npuc::kernels::detail
