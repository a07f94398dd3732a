// Pools over channel-blocked tensors, baseline x86-64: the portable table (pool_blocked_impl.inc).
#include "kernels/x86/kernel_table.hpp"

namespace npuc::kernels::detail {

namespace {

void poolInterior(const PoolBlockedArgs& a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i, x += a.sw * 8, y += 8) {
    float acc[8];
    for (int l = 0; l < 8; ++l) acc[l] = a.max ? -__builtin_inff() : 0.0f;
    for (int64_t kh = 0; kh < a.kh; ++kh)
      for (int64_t kw = 0; kw < a.kw; ++kw) {
        const float* v = x + (kh * a.dh * a.iw + kw * a.dw) * 8;
        for (int l = 0; l < 8; ++l) acc[l] = a.max ? (v[l] > acc[l] ? v[l] : acc[l]) : acc[l] + v[l];
      }
    for (int l = 0; l < 8; ++l) y[l] = a.max ? acc[l] : acc[l] / static_cast<float>(a.kh * a.kw);
  }
}

#include "kernels/x86/pool_blocked_impl.inc"
}  // namespace

void f32_pool_blocked8__scalar(const PoolBlockedArgs& a, int64_t r0, int64_t r1) { poolBlockedRows(a, r0, r1); }

void f32_global_pool_blocked8__scalar(bool max, int64_t size, const float* x, float* y, int64_t b0, int64_t b1) {
  globalPoolBlocked(max, size, x, y, b0, b1);
}

}  // namespace npuc::kernels::detail
