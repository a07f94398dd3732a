// The recurrent products of a batch-1 recurrent layer on AVX2 / FMA (recurrentFast, x86/recurrent.cpp): out = R · h
// with R stored as panels of `width` rows transposed ([k][width]: 64 as packed for this kernel, 128 as packed for the
// AVX-512 one), 64 outputs per sweep over k in eight 8-lane accumulators (sixteen registers hold eight sums, the
// broadcast and the loads).
// One fma per k per output, k ascending from +0: the reference's dot (recurrent.hpp), vectorised across outputs only.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace npuc::kernels::detail {

void rnnGemvAvx2(const float* panels, int64_t width, int64_t K, int64_t N, const float* x, float* out) {
  for (int64_t n0 = 0; n0 < N; n0 += 64) {
    const float* b = panels + (n0 / width) * K * width + n0 % width;
    __m256 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const __m256 xk = _mm256_set1_ps(x[k]);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(xk, _mm256_loadu_ps(b + k * width + 8 * j), acc[j]);
    }
    const int64_t width = std::min<int64_t>(64, N - n0);
    alignas(32) float tail[8];
    for (int j = 0; j < 8 && 8 * j < width; ++j) {
      const int64_t left = width - 8 * j;
      if (left >= 8) {
        _mm256_storeu_ps(out + n0 + 8 * j, acc[j]);
      } else {
        _mm256_store_ps(tail, acc[j]);
        std::copy_n(tail, left, out + n0 + 8 * j);
      }
    }
  }
}

}  // namespace npuc::kernels::detail
