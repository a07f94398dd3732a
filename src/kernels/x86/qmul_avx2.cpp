// One plane of the int8-affine product on AVX2 (kernels/quant.hpp, qmul; chosen at run time by kernels/x86/qmul.cpp
// where the CPU has AVX2 but not AVX-512BW): 16 codes widened to int32, (a - za) * g exact (|.| <= 255 * 255), then
// multiplyByMultiplier on 8 lanes (requant_avx2.hpp: its bits), offset, saturating narrow and clamp.
#include "kernels/x86/quant_x86.hpp"
#include "kernels/x86/requant_avx2.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

using namespace avx2;

void qmulPlaneAvx2(int64_t n, const int8_t* a, int32_t g, const QMulParams& params, int8_t* y) {
  const QMulParams p = params;  // (a local copy: stores through y could alias the parameters)
  const Lanes l = lanesOf(p.mul.m, -p.mul.shift);
  const __m256i za = _mm256_set1_epi32(p.za), gv = _mm256_set1_epi32(g), zy = _mm256_set1_epi32(p.zy);
  const __m128i lo = _mm_set1_epi8(static_cast<char>(p.lo)), hi = _mm_set1_epi8(static_cast<char>(p.hi));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    const __m256i x0 = _mm256_mullo_epi32(_mm256_sub_epi32(_mm256_cvtepi8_epi32(v), za), gv);
    const __m256i x1 = _mm256_mullo_epi32(_mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)), za), gv);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), narrow16(requant8(x0, l, zy), requant8(x1, l, zy), lo, hi));
  }
  for (; i < n; ++i) y[i] = requantScalar((int32_t{a[i]} - p.za) * g, p.mul.m, p.mul.shift, p.zy, p.lo, p.hi);
}

}  // namespace npuc::kernels::detail
