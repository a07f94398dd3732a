// The int8 element-wise kernels on AVX2 (-mavx2; chosen at run time by kernels/x86/qadd.cpp and quantize.cpp where the
// CPU has AVX2 but not AVX-512BW): qadd_ref's and the reference QuantizeLinear / DequantizeLinear's bits, the forms of
// qadd_avx512.cpp and quantize_avx512.cpp at half the width; the last n % 8 (or 16) elements by the reference.
#include "kernels/layers.hpp"
#include "kernels/quant.hpp"
#include "kernels/x86/quant_x86.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

/// n elements of y = a + b (parameters validated: multipliers below 2^15, shift in [1, 30]). The operands minus their
/// zero points as int16 pairs (a - za, b - zb), one vpmaddwd with (ma, mb) per 8 exact int32 sums; the unpacks and
/// the packs work within 128-bit lanes alike, so the packs restore the elements' order.
void qaddAvx2(int64_t n, const int8_t* a, const int8_t* b, const QAddParams& params, int8_t* y) {
  const QAddParams p = params;  // (a local copy: stores through y could alias the parameters)
  const __m256i za = _mm256_set1_epi16(static_cast<int16_t>(p.za)), zb = _mm256_set1_epi16(static_cast<int16_t>(p.zb));
  const __m256i pair = _mm256_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(p.mb) << 16) | static_cast<uint32_t>(p.ma)));
  const __m256i half = _mm256_set1_epi32(int32_t{1} << (p.shift - 1)), zy = _mm256_set1_epi32(p.zy);
  const __m128i count = _mm_cvtsi32_si128(p.shift);
  const __m128i lo = _mm_set1_epi8(static_cast<char>(p.lo)), hi = _mm_set1_epi8(static_cast<char>(p.hi));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i av = _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i))), za);
    const __m256i bv = _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i))), zb);
    __m256i s0 = _mm256_madd_epi16(_mm256_unpacklo_epi16(av, bv), pair);
    __m256i s1 = _mm256_madd_epi16(_mm256_unpackhi_epi16(av, bv), pair);
    s0 = _mm256_add_epi32(_mm256_sra_epi32(_mm256_add_epi32(s0, half), count), zy);
    s1 = _mm256_add_epi32(_mm256_sra_epi32(_mm256_add_epi32(s1, half), count), zy);
    // Saturating packs to int16 then int8 are exact within [lo, hi] (a subset of int8), then the clamp.
    const __m256i w8 = _mm256_packs_epi16(_mm256_packs_epi32(s0, s1), _mm256_setzero_si256());
    const __m128i c = _mm256_castsi256_si128(_mm256_permute4x64_epi64(w8, 0x08));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm_min_epi8(_mm_max_epi8(c, lo), hi));
  }
  if (i < n) qadd_ref(n - i, a + i, b + i, p, y + i);
}

/// The reference's float operations lane by lane: an IEEE division, round to nearest even (as nearbyint in the
/// default mode), NaN to 0, the zero point added in float, the clamp.
void quantizeLinearAvx2(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y) {
  const __m256 s = _mm256_set1_ps(scale), zp = _mm256_set1_ps(static_cast<float>(zero_point));
  const __m256 lo = _mm256_set1_ps(-128.0f), hi = _mm256_set1_ps(127.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 q = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    q = _mm256_and_ps(q, _mm256_cmp_ps(q, q, _CMP_ORD_Q));  // NaN -> 0
    q = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(q, zp), lo), hi);
    const __m128i w = _mm256_castsi256_si128(_mm256_permute4x64_epi64(
        _mm256_packs_epi16(_mm256_packs_epi32(_mm256_cvtps_epi32(q), _mm256_setzero_si256()), _mm256_setzero_si256()), 0x08));
    // (lane 0 holds codes 0-3 in its first 4 bytes, lane 1 codes 4-7: after the permute, bytes 0-3 and 8-11)
    const __m128i codes = _mm_unpacklo_epi32(w, _mm_srli_si128(w, 8));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), codes);
  }
  if (i < n) quantizeLinear(x + i, n - i, scale, zero_point, y + i, nullptr);
}

void dequantizeLinearAvx2(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i zp = _mm256_set1_epi32(zero_point);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i q = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i))), zp);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(q), s));
  }
  if (i < n) dequantizeLinear(x + i, n - i, scale, zero_point, y + i, nullptr);
}

}  // namespace npuc::kernels::detail
