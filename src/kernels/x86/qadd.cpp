// The int8-affine addition, fast (kernels/quant.hpp): the AVX-512 loop where the CPU has AVX-512BW, the AVX2 one where
// it has AVX2, else the reference; either way in chunks on the pool's threads (element-wise: the split cannot change
// a bit).
#include "kernels/quant.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/quant_x86.hpp"

namespace npuc::kernels {

void qadd(int64_t n, const int8_t* a, const int8_t* b, const QAddParams& p, int8_t* y, ThreadPool* pool) {
  const bool avx512 = detail::cpuHasAvx512bw();
  const bool avx2 = detail::cpuHasAvx2();
  const bool vec = (avx512 || avx2) && p.ma >= 0 && p.ma < 32768 && p.mb >= 0 && p.mb < 32768 && p.shift >= 1 && p.shift <= 30;
  detail::parallelUnits(pool, (n + 4095) / 4096, 4096, [&](int64_t c0, int64_t c1) {
    const int64_t i0 = c0 * 4096, i1 = std::min(n, c1 * 4096);
    if (vec && avx512) detail::qaddAvx512(i1 - i0, a + i0, b + i0, p, y + i0);
    else if (vec) detail::qaddAvx2(i1 - i0, a + i0, b + i0, p, y + i0);
    else qadd_ref(i1 - i0, a + i0, b + i0, p, y + i0);
  });
}

}  // namespace npuc::kernels
