// The int8 look-up table, fast (kernels/quant.hpp): the AVX-512 VBMI loop where the CPU has it, the AVX2 one where it
// has AVX2, else the reference;
// either way in chunks on the pool's threads (element-wise: the split cannot change a byte).
#include "kernels/quant.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/quant_x86.hpp"

#include <algorithm>

namespace npuc::kernels {

namespace detail {
bool cpuHasAvx512vbmi() {
  static const bool has = cpuHasAvx512bw() && __builtin_cpu_supports("avx512vbmi");
  return has;
}
}  // namespace detail

void qlookup(int64_t n, const int8_t* x, const int8_t* table, int8_t* y, ThreadPool* pool) {
  const bool vbmi = detail::cpuHasAvx512vbmi();
  const bool avx2 = detail::cpuHasAvx2();
  detail::parallelUnits(pool, (n + 16383) / 16384, 16384, [&](int64_t c0, int64_t c1) {
    const int64_t i0 = c0 * 16384, i1 = std::min(n, c1 * 16384);
    if (vbmi) detail::qlookupVbmi(i1 - i0, x + i0, table, y + i0);
    else if (avx2) detail::qlookupAvx2(i1 - i0, x + i0, table, y + i0);
    else qlookup_ref(i1 - i0, x + i0, table, y + i0);
  });
}

}  // namespace npuc::kernels
