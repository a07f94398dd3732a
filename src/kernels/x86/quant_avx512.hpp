// AVX-512 forms of the int8-affine requantization primitives (kernels/quant.hpp), bit for bit. Include only from
// files compiled with AVX-512F/BW/VL (*_avx512.cpp, *_vnni.cpp).
#pragma once

#include "kernels/quant.hpp"

// GCC 12's AVX-512 integer intrinsics start from _mm512_undefined_epi32() (a self-initialised variable), which
// -Wmaybe-uninitialized reports at every use when inlined (GCC bug 105593, fixed in GCC 13): off for
// the files that include this one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace npuc::kernels::detail {

/// multiplyByMultiplier(x, {m, -right}) on 16 lanes, for a multiplier without left shift (0 <= right <= 31, m >= 0):
/// the rounding doubling high multiply on even and odd lanes as 64-bit products (the low 32 bits of (p + 2^30) >> 31
/// are the same for a logical and an arithmetic shift, and the result fits int32 since m < 2^31), then the rounding
/// right shift: x >> right plus one where the remainder exceeds half (half away from zero).
inline __m512i multiplyByMultiplierAvx512(__m512i x, int32_t m, int right) {
  const __m512i mv = _mm512_set1_epi32(m), round = _mm512_set1_epi64(int64_t{1} << 30);
  const __m512i even = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, mv), round), 31);
  const __m512i odd = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), mv), round), 31);
  __m512i q = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  const int32_t mask = static_cast<int32_t>((int64_t{1} << right) - 1);
  const __m512i rem = _mm512_and_si512(q, _mm512_set1_epi32(mask));
  const __m512i threshold = _mm512_add_epi32(_mm512_set1_epi32(mask >> 1), _mm512_srli_epi32(q, 31));
  const __mmask16 up = _mm512_cmpgt_epi32_mask(rem, threshold);
  q = _mm512_sra_epi32(q, _mm_cvtsi32_si128(right));
  return _mm512_mask_add_epi32(q, up, q, _mm512_set1_epi32(1));
}

/// clamp(zp + x, lo, hi) narrowed to 16 int8.
inline __m128i offsetClampToI8Avx512(__m512i x, int32_t zp, int32_t lo, int32_t hi) {
  x = _mm512_add_epi32(x, _mm512_set1_epi32(zp));
  x = _mm512_min_epi32(_mm512_max_epi32(x, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi));
  return _mm512_cvtepi32_epi8(x);
}

}  // namespace npuc::kernels::detail
