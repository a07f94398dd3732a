// The int8 requantization on AVX2 (multiplyByMultiplier's bits, 8 lanes at a time), shared by the AVX2 kernel files
// (qconv_avx2.cpp, qmul_avx2.cpp). Include only from files compiled with -mavx2: every function is static (internal to
// each file), so no copy built for AVX2 can be the one the linker keeps for baseline code.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace npuc::kernels::avx2 {

/// requantizeValue(acc, {m, shift}, zp, lo, hi) written out (multiplyByMultiplier: the left shift saturating, the
/// rounding doubling high multiply, the rounding right shift, half away from zero).
static inline int8_t requantScalar(int32_t acc, int32_t m, int32_t shift, int32_t zp, int32_t lo, int32_t hi) {
  const int left = shift > 0 ? shift : 0, right = shift < 0 ? -shift : 0;
  int64_t wide = static_cast<int64_t>(acc) * (int64_t{1} << left);
  wide = wide < INT32_MIN ? INT32_MIN : wide > INT32_MAX ? INT32_MAX : wide;
  const int32_t s = static_cast<int32_t>(wide);
  int32_t x = s == INT32_MIN && m == INT32_MIN
                  ? INT32_MAX
                  : static_cast<int32_t>((static_cast<int64_t>(s) * m + (int64_t{1} << 30)) >> 31);
  if (right > 0) {
    const int32_t mask = static_cast<int32_t>((int64_t{1} << right) - 1);
    const int32_t rem = x & mask, threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    x = (x >> right) + (rem > threshold ? 1 : 0);
  }
  const int64_t y = int64_t{zp} + x;
  return static_cast<int8_t>(y < lo ? lo : y > hi ? hi : y);
}

/// The vector requantization's constants, per lane (a multiplier without left shift).
struct Lanes {
  __m256i m, right, mask, half;
};
static inline Lanes lanesOf(int32_t m, int32_t right) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << right) - 1);
  return {_mm256_set1_epi32(m), _mm256_set1_epi32(right), _mm256_set1_epi32(mask), _mm256_set1_epi32(mask >> 1)};
}
static inline Lanes lanesAt(const int32_t* m, const int32_t* right) {
  const __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(right));
  const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(1), r), _mm256_set1_epi32(1));
  return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(m)), r, mask, _mm256_srli_epi32(mask, 1)};
}

/// zp + multiplyByMultiplier of 8 sums (no left shift): the rounding doubling high multiply on even and odd lanes as
/// 64-bit products (bits 31-62 of p + 2^30: the even lanes' shifted down to their low half, the odd lanes' up to their
/// high half; a logical shift keeps those bits, and the result fits int32), then the rounding right shift with its
/// threshold (half away from zero; a shift of 0 leaves it), plus zp. Not clamped: narrow16 saturates to int8.
static inline __m256i requant8(__m256i a, const Lanes& l, __m256i zp) {
  const __m256i round = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(a, l.m), round), 31);
  const __m256i odd = _mm256_slli_epi64(
      _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(l.m, 32)), round), 1);
  __m256i q = _mm256_blend_epi32(even, odd, 0xAA);
  const __m256i rem = _mm256_and_si256(q, l.mask);
  const __m256i threshold = _mm256_add_epi32(l.half, _mm256_srli_epi32(q, 31));
  q = _mm256_sub_epi32(_mm256_srav_epi32(q, l.right), _mm256_cmpgt_epi32(rem, threshold));
  return _mm256_add_epi32(q, zp);
}

/// Two vectors of 8 sums as 16 codes in order, saturated to int8 (the packs) then clamped to [lo, hi] (within it).
static inline __m128i narrow16(__m256i r0, __m256i r1, __m128i lo, __m128i hi) {
  const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(r0, r1), _mm256_setzero_si256());
  // dwords: 0 = r0[0..3], 1 = r1[0..3], 4 = r0[4..7], 5 = r1[4..7]
  const __m128i v = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0)));
  return _mm_min_epi8(_mm_max_epi8(v, lo), hi);
}

}  // namespace npuc::kernels::avx2
