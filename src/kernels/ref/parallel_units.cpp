// parallelForUnits (kernels/ref/parallel_units.hpp): the one place parallelUnits' work meets std::function, in a file
// built for the baseline instruction set.
#include "kernels/ref/parallel_units.hpp"

namespace npuc::kernels::detail {

void parallelForUnits(ThreadPool* pool, int64_t units, int64_t grain, UnitsFn fn) {
  pool->parallelFor(units, [fn](int64_t b, int64_t e) { fn.call(fn.obj, b, e); }, grain);
}

}  // namespace npuc::kernels::detail
