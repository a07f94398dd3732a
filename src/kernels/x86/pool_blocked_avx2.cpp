// Pools over channel-blocked tensors, compiled with -mavx2 -mfma -mf16c: 8-lane vectors (pool_blocked_impl.inc; the
// windows inside the input four outputs at a time).
#include "kernels/x86/kernel_table.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

namespace {

// kP outputs at a time (independent chains of max / add, one vector of 8 channels each): max(v, acc) is
// `v > acc ? v : acc` lane by lane (maxps returns its second operand when either is NaN), the sum in tap order.
template <bool kMax, int kP>
void interiorTile(const PoolBlockedArgs& a, const float* x, float* y) {
  __m256 acc[kP];
  for (int i = 0; i < kP; ++i) acc[i] = kMax ? _mm256_set1_ps(-__builtin_inff()) : _mm256_setzero_ps();
  const int64_t step = a.sw * 8;
  for (int64_t kh = 0; kh < a.kh; ++kh)
    for (int64_t kw = 0; kw < a.kw; ++kw) {
      const float* v = x + (kh * a.dh * a.iw + kw * a.dw) * 8;
      for (int i = 0; i < kP; ++i) {
        const __m256 t = _mm256_loadu_ps(v + i * step);
        acc[i] = kMax ? _mm256_max_ps(t, acc[i]) : _mm256_add_ps(acc[i], t);
      }
    }
  const __m256 n = _mm256_set1_ps(static_cast<float>(a.kh * a.kw));
  for (int i = 0; i < kP; ++i) _mm256_storeu_ps(y + i * 8, kMax ? acc[i] : _mm256_div_ps(acc[i], n));
}

template <bool kMax>
void interior(const PoolBlockedArgs& a, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) interiorTile<kMax, 4>(a, x + i * a.sw * 8, y + i * 8);
  for (; i < n; ++i) interiorTile<kMax, 1>(a, x + i * a.sw * 8, y + i * 8);
}

void poolInterior(const PoolBlockedArgs& a, const float* x, float* y, int64_t n) {
  if (a.max) interior<true>(a, x, y, n);
  else interior<false>(a, x, y, n);
}

#include "kernels/x86/pool_blocked_impl.inc"
}  // namespace

void f32_pool_blocked8__avx2(const PoolBlockedArgs& a, int64_t r0, int64_t r1) { poolBlockedRows(a, r0, r1); }

void f32_global_pool_blocked8__avx2(bool max, int64_t size, const float* x, float* y, int64_t b0, int64_t b1) {
  globalPoolBlocked(max, size, x, y, b0, b1);
}

}  // namespace npuc::kernels::detail
