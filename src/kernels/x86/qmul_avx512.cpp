// One plane of the int8-affine product on AVX-512 (kernels/quant.hpp, qmul): 16 codes widened to int32, (a - za) * g
// exact, then the one-rounding form of multiplyByMultiplier (quant_avx512.hpp: its bits), offset, clamp and narrow.
#include "kernels/x86/quant_avx512.hpp"

namespace npuc::kernels::detail {

void qmulPlaneAvx512(int64_t n, const int8_t* a, int32_t g, const QMulParams& p, int8_t* y) {
  const RequantOnceVec c(requantOnce(p.mul.m, -p.mul.shift));
  const __m512i za = _mm512_set1_epi32(p.za), gv = _mm512_set1_epi32(g);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_mullo_epi32(_mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i))), za), gv);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), offsetClampToI8Avx512(multiplyByMultiplierAvx512(x, c), p.zy, p.lo, p.hi));
  }
  for (; i < n; ++i) y[i] = requantizeValue((int32_t{a[i]} - p.za) * g, p.mul, p.zy, p.lo, p.hi);
}

}  // namespace npuc::kernels::detail
