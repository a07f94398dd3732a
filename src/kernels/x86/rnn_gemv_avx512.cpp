// The recurrent products of a batch-1 recurrent layer on AVX-512 (recurrentFast, x86/recurrent.cpp): out = R · h with
// R stored as panels of 128 rows transposed ([k][128]), 128 outputs per sweep over k in eight 16-lane accumulators.
// One fma per k per output, k ascending from +0: the reference's dot (recurrent.hpp), vectorised across outputs only.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace npuc::kernels::detail {

void rnnGemvAvx512(const float* panels, int64_t K, int64_t N, const float* x, float* out) {
  for (int64_t n0 = 0; n0 < N; n0 += 128) {
    const float* b = panels + (n0 / 128) * K * 128;
    __m512 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const __m512 xk = _mm512_set1_ps(x[k]);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) acc[j] = _mm512_fmadd_ps(xk, _mm512_loadu_ps(b + k * 128 + 16 * j), acc[j]);
    }
    const int64_t width = std::min<int64_t>(128, N - n0);
    for (int j = 0; j < 8 && 16 * j < width; ++j) {
      const int64_t left = width - 16 * j;
      const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
      _mm512_mask_storeu_ps(out + n0 + 16 * j, m, acc[j]);
    }
  }
}

}  // namespace npuc::kernels::detail
