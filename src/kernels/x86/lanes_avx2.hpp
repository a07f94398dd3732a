// Lane shuffles and float16 conversions for AVX2 translation units only (anonymous namespace, as in act_avx2.hpp:
// nothing compiled with -mavx2 can be shared with baseline code). Compiled with -mf16c too.
#pragma once

#include "support/fp16.hpp"

#include <immintrin.h>

#include <cstdint>

namespace npuc::kernels::detail {
namespace {

/// Transposes the 8 x 8 block r[0..7] in place: r[i] lane j becomes r[j] lane i.
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/// v rounded to float16 with floatToHalf's bits: vcvtps2ph (round to nearest even) for finite values; eight values
/// holding an Inf or NaN go through floatToHalf, whose NaN payloads the hardware does not keep.
inline __m128i toHalf8(__m256 v) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
  if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, absmask), inf, _CMP_NLT_UQ))) {  // Inf or NaN
    alignas(32) float f[8];
    alignas(16) uint16_t h[8];
    _mm256_store_ps(f, v);
    for (int k = 0; k < 8; ++k) h[k] = floatToHalf(f[k]);
    return _mm_load_si128(reinterpret_cast<const __m128i*>(h));
  }
  return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/// Stores halves 0..n-1 of h at p (0 <= n <= 8) with plain 64/32/16-bit stores; memory past p[n-1] is not touched.
inline void storeFirstHalves(uint16_t* p, __m128i h, int64_t n) {
  if (n >= 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h);
    return;
  }
  if (n >= 4) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), h);
    h = _mm_srli_si128(h, 8);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    const int32_t two = _mm_cvtsi128_si32(h);
    __builtin_memcpy(p, &two, sizeof two);
    h = _mm_srli_si128(h, 4);
    p += 2;
    n -= 2;
  }
  if (n >= 1) *p = static_cast<uint16_t>(_mm_extract_epi16(h, 0));
}

}  // namespace
}  // namespace npuc::kernels::detail
