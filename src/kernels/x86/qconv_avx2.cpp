// The fast int8 convolution's AVX2 part (-mavx2; chosen at run time by kernels/x86/qconv.cpp): the int16 product C[m][p] += sum_k A[m][k] * B[k][p] with vpmaddwd, vectorised across outputs p (each lane an
// output column, each vpmaddwd two consecutive k of it). Every product and sum is exact int32 arithmetic, so the
// result is the reference's whatever the blocking.
#include "kernels/x86/quant_x86.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace npuc::kernels {

/// C [M, P] (holding the bias) += A2 · B2 where A2 [M, K2] packs two int16 weights per int32 (k even in the low
/// half) and B2 [K2, P, 2] the matching pairs of each column.
void qgemmPairsAvx2(int64_t m0, int64_t m1, int64_t P, int64_t K2, const int32_t* A2, const int16_t* B2, int32_t* C) {
  int64_t m = m0;
  for (; m + 4 <= m1; m += 4) {
    const int32_t* a0 = A2 + m * K2;
    const int32_t *a1 = a0 + K2, *a2 = a1 + K2, *a3 = a2 + K2;
    int32_t *c0 = C + m * P, *c1 = c0 + P, *c2 = c1 + P, *c3 = c2 + P;
    int64_t p = 0;
    for (; p + 8 <= P; p += 8) {
      __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c0 + p));
      __m256i s1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c1 + p));
      __m256i s2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c2 + p));
      __m256i s3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c3 + p));
      for (int64_t k = 0; k < K2; ++k) {
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B2 + (k * P + p) * 2));
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(b, _mm256_set1_epi32(a0[k])));
        s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(b, _mm256_set1_epi32(a1[k])));
        s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(b, _mm256_set1_epi32(a2[k])));
        s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(b, _mm256_set1_epi32(a3[k])));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c0 + p), s0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c1 + p), s1);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c2 + p), s2);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c3 + p), s3);
    }
    for (; p < P; ++p)
      for (int64_t r = 0; r < 4; ++r) {
        const int32_t* a = A2 + (m + r) * K2;
        int32_t s = C[(m + r) * P + p];
        for (int64_t k = 0; k < K2; ++k) {
          const int16_t* b = B2 + (k * P + p) * 2;
          s += static_cast<int16_t>(a[k] & 0xffff) * b[0] + static_cast<int16_t>(a[k] >> 16) * b[1];
        }
        C[(m + r) * P + p] = s;
      }
  }
  for (; m < m1; ++m) {
    const int32_t* a = A2 + m * K2;
    int32_t* c = C + m * P;
    int64_t p = 0;
    for (; p + 8 <= P; p += 8) {
      __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + p));
      for (int64_t k = 0; k < K2; ++k)
        s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B2 + (k * P + p) * 2)),
                                                  _mm256_set1_epi32(a[k])));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + p), s);
    }
    for (; p < P; ++p) {
      int32_t s = c[p];
      for (int64_t k = 0; k < K2; ++k) {
        const int16_t* b = B2 + (k * P + p) * 2;
        s += static_cast<int16_t>(a[k] & 0xffff) * b[0] + static_cast<int16_t>(a[k] >> 16) * b[1];
      }
      c[p] = s;
    }
  }
}

/// y[i] = clamp(zp + multiplyByMultiplier(acc[i], {m, -right}), lo, hi) for a multiplier without left shift
/// (shift <= 0): the rounding doubling high multiply on even and odd lanes as 64-bit products (the low 32 bits of
/// (p + 2^30) >> 31 are the same for a logical and an arithmetic shift, and the result fits int32), then the rounding
/// right shift with its threshold (half away from zero) — multiplyByMultiplier's bits, 8 at a time.
void requantizeRowAvx2(const int32_t* acc, int64_t n, int32_t m, int right, int32_t zp, int32_t lo, int32_t hi,
                       int8_t* y) {
  const __m256i mv = _mm256_set1_epi32(m), round = _mm256_set1_epi64x(int64_t{1} << 30);
  const int32_t mask = static_cast<int32_t>((int64_t{1} << right) - 1);
  const __m256i maskv = _mm256_set1_epi32(mask), half = _mm256_set1_epi32(mask >> 1);
  const __m128i count = _mm_cvtsi32_si128(right);
  const __m256i zpv = _mm256_set1_epi32(zp), lov = _mm256_set1_epi32(lo), hiv = _mm256_set1_epi32(hi);
  int64_t i = 0;
  alignas(32) int32_t out[8];
  for (; i + 8 <= n; i += 8) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i));
    const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(a, mv), round), 31);
    const __m256i odd = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), mv), round), 31);
    __m256i q = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    if (right > 0) {
      const __m256i rem = _mm256_and_si256(q, maskv);
      const __m256i threshold = _mm256_add_epi32(half, _mm256_srli_epi32(q, 31));
      q = _mm256_sub_epi32(_mm256_sra_epi32(q, count), _mm256_cmpgt_epi32(rem, threshold));
    }
    q = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, zpv), lov), hiv);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), q);
    for (int k = 0; k < 8; ++k) y[i + k] = static_cast<int8_t>(out[k]);
  }
  for (; i < n; ++i) {
    int32_t x = static_cast<int32_t>((static_cast<int64_t>(acc[i]) * m + (int64_t{1} << 30)) >> 31);
    if (right > 0) {
      const int32_t rem = x & mask, threshold = (mask >> 1) + (x < 0 ? 1 : 0);
      x = (x >> right) + (rem > threshold ? 1 : 0);
    }
    y[i] = static_cast<int8_t>(std::min(std::max(x + zp, lo), hi));
  }
}

}  // namespace npuc::kernels
