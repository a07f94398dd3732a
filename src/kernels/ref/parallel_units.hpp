// Work splitting shared by the IR-free layer kernels (layers_ref.cpp, prepost_ref.cpp): cheap element-wise work
// stays on one thread below a threshold; every unit goes to exactly one chunk, so results do not depend on the
// thread count.
#pragma once

#include "support/thread_pool.hpp"

#include <cstdint>
#include <type_traits>

namespace npuc::kernels::detail {

/// Elementary steps (roughly: one output element of a cheap op) below which a call stays on one thread.
inline constexpr int64_t kMinParallelWork = 16384;

/// A callable void(int64_t, int64_t) by reference, for parallelForUnits. Plain data and a function template per
/// callable type: the lambdas of a function have that function's file as their only home, so nothing here is an
/// inline function shared between files — in particular none that a file built for AVX-512 could supply to the
/// whole program (scripts/check_isa_symbols.sh), as std::function's members would.
struct UnitsFn {
  void* obj;
  void (*call)(void*, int64_t, int64_t);
};
template <class F>
void callUnits(void* obj, int64_t b, int64_t e) {
  (*static_cast<F*>(obj))(b, e);
}
/// pool->parallelFor over [0, units) in chunks of at least `grain` (parallel_units.cpp, built for the baseline
/// instruction set).
void parallelForUnits(ThreadPool* pool, int64_t units, int64_t grain, UnitsFn fn);

/// Calls fn(begin, end) over [0, units): serially without a pool or when the work is small, else in chunks of
/// at least enough units to amount to kMinParallelWork steps (`work_per_unit` steps each).
template <class F>
void parallelUnits(ThreadPool* pool, int64_t units, int64_t work_per_unit, F&& fn) {
  if (units <= 0) return;
  const int64_t wpu = work_per_unit > 1 ? work_per_unit : 1;  // (no std::max: see UnitsFn)
  const int64_t min_units = kMinParallelWork / wpu > 1 ? kMinParallelWork / wpu : 1;
  if (pool == nullptr || pool->size() <= 1 || units <= min_units) {
    fn(int64_t{0}, units);
    return;
  }
  const int64_t even = units / (4 * static_cast<int64_t>(pool->size())) + 1;
  using Fn = std::remove_reference_t<F>;
  parallelForUnits(pool, units, min_units > even ? min_units : even,
                   UnitsFn{const_cast<void*>(static_cast<const void*>(&fn)), &callUnits<Fn>});
}

}  // namespace npuc::kernels::detail
