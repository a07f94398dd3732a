// The int8-affine product of two tensors, fast (kernels/quant.hpp): plane by plane (one gate each), on AVX-512 (or
// AVX2) where the CPU has it and the multiplier has no left shift, else the reference; whole planes per chunk on the pool's
// threads (element-wise: the split cannot change a byte).
#include "kernels/quant.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/quant_x86.hpp"

namespace npuc::kernels {

void qmul(int64_t n, int64_t inner, const int8_t* a, const int8_t* b, const QMulParams& p, int8_t* y, ThreadPool* pool) {
  const int64_t planes = inner > 0 ? n / inner : 0;
  const bool avx2 = detail::cpuHasAvx2();
  const bool avx512 = detail::cpuHasAvx512bw(), vec = (avx512 || avx2) && p.mul.shift <= 0;
  detail::parallelUnits(pool, planes, inner, [&](int64_t p0, int64_t p1) {
    if (!vec) return qmul_ref((p1 - p0) * inner, inner, a + p0 * inner, b + p0, p, y + p0 * inner);
    for (int64_t pl = p0; pl < p1; ++pl)
      (avx512 ? detail::qmulPlaneAvx512 : detail::qmulPlaneAvx2)(inner, a + pl * inner, int32_t{b[pl]} - p.zb, p, y + pl * inner);
  });
}

}  // namespace npuc::kernels
