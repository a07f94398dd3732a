// Partial vector stores for AVX2 translation units only (anonymous namespace, as in act_avx2.hpp).
//
// _mm256_maskstore_ps is microcoded on AMD Zen (tens of cycles per store, ~1/3 of a 14x14 depthwise layer's
// time in perf); these write the first n lanes with plain 128/64/32-bit stores instead.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace npuc::kernels::detail {
namespace {

/// Stores lanes 0..n-1 of v at p (0 <= n <= 8); memory past p[n-1] is not touched.
inline void storeFirst(float* p, __m256 v, int64_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  __m128 h = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(p, h);
    h = _mm256_extractf128_ps(v, 1);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), h);
    h = _mm_movehl_ps(h, h);
    p += 2;
    n -= 2;
  }
  if (n >= 1) _mm_store_ss(p, h);
}

}  // namespace
}  // namespace npuc::kernels::detail
