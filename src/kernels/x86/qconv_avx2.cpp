// The fast int8 convolution's AVX2 part (-mavx2; chosen at run time by kernels/x86/qconv.cpp): the int16 product C[m][p] += sum_k A[m][k] * B[k][p] with vpmaddwd, vectorised across outputs p (each lane an
// output column, each vpmaddwd two consecutive k of it). Every product and sum is exact int32 arithmetic, so the
// result is the reference's whatever the blocking.
#include <immintrin.h>

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

}  // namespace npuc::kernels
