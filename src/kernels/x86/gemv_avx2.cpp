// AVX2/FMA matrix-vector kernels (compiled with -mavx2 -mfma): f32_gemv_packed__avx2 (N == 1 over packed A,
// eight 6-row panels in flight, one 6-lane accumulator each) and f32_gemv_row__avx2 (M == 1, 64 columns of B
// per sweep over k). One fma per k per output, k ascending; vectorised across outputs only.
#include "kernels/x86/kernel_table.hpp"

#include <immintrin.h>


namespace npuc::kernels::detail {

namespace {

inline __m256i mask6() { return _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0); }

// G panels starting at a (panel stride K*kMR).
template <int G>
inline void panelGroup(const float* a, int64_t K, const float* x, const float* init, float* out) {
  const __m256i m6 = mask6();
  __m256 acc[G];
  for (int g = 0; g < G; ++g) {
    acc[g] = init != nullptr ? _mm256_maskload_ps(init + g * kMR, m6) : _mm256_setzero_ps();
  }
  const int64_t stride = K * kMR;
  int64_t k = 0;
  // Whole-vector loads read two floats of the next step (ignored lanes); the last step loads exactly 6.
  for (; k + 1 < K; ++k) {
    const __m256 xk = _mm256_broadcast_ss(x + k);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(a + g * stride + k * kMR), xk, acc[g]);
  }
  if (k < K) {
    const __m256 xk = _mm256_broadcast_ss(x + k);
    for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(_mm256_maskload_ps(a + g * stride + k * kMR, m6), xk, acc[g]);
  }
  for (int g = 0; g < G; ++g) _mm256_maskstore_ps(out + g * kMR, m6, acc[g]);
}

}  // namespace

void f32_gemv_packed__avx2(const float* a, int64_t panels, int64_t K, const float* x, const float* init,
                           float* out) {
  int64_t p = 0;
  for (; p + 8 <= panels; p += 8) {
    panelGroup<8>(a + p * K * kMR, K, x, init != nullptr ? init + p * kMR : nullptr, out + p * kMR);
  }
  for (; p < panels; ++p) {
    panelGroup<1>(a + p * K * kMR, K, x, init != nullptr ? init + p * kMR : nullptr, out + p * kMR);
  }
}

void f32_gemv_row__avx2(const float* x, const float* B, int64_t ldb, int64_t K, int64_t N, const float* init,
                        float init0, float* out) {
  int64_t n = 0;
  for (; n + 64 <= N; n += 64) {
    __m256 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = init != nullptr ? _mm256_loadu_ps(init + n + 8 * j) : _mm256_set1_ps(init0);
    const float* b = B + n;
    for (int64_t k = 0; k < K; ++k) {
      const __m256 xk = _mm256_broadcast_ss(x + k);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(xk, _mm256_loadu_ps(b + 8 * j), acc[j]);
      b += ldb;
    }
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + n + 8 * j, acc[j]);
  }
  for (; n + 8 <= N; n += 8) {
    __m256 acc = init != nullptr ? _mm256_loadu_ps(init + n) : _mm256_set1_ps(init0);
    const float* b = B + n;
    for (int64_t k = 0; k < K; ++k) {
      acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + k), _mm256_loadu_ps(b), acc);
      b += ldb;
    }
    _mm256_storeu_ps(out + n, acc);
  }
  for (; n < N; ++n) {
    float acc = init != nullptr ? init[n] : init0;
    for (int64_t k = 0; k < K; ++k) acc = __builtin_fmaf(x[k], B[k * ldb + n], acc);
    out[n] = acc;
  }
}

}  // namespace npuc::kernels::detail
