// The int8-affine addition, AVX-512 (-mavx512f -mavx512bw -mavx512vl; chosen at run time by kernels/x86/qadd.cpp):
// qadd_ref's bits 32 elements at a time. The operands minus their zero points are interleaved as int16 pairs
// (a - za, b - zb) and one vpmaddwd with the pair (ma, mb) gives each exact int32 sum; the unpack and the pack work
// within 128-bit lanes alike, so the pack restores the elements' order.
#include "kernels/x86/quant_avx512.hpp"
#include "kernels/x86/quant_x86.hpp"

#include <algorithm>

namespace npuc::kernels::detail {

/// n elements of y = a + b (parameters validated: multipliers below 2^15, shift in [1, 30]).
void qaddAvx512(int64_t n, const int8_t* a, const int8_t* b, const QAddParams& params, int8_t* y) {
  const QAddParams p = params;  // (a local copy: stores through y could alias the parameters)
  const __m512i za = _mm512_set1_epi16(static_cast<int16_t>(p.za)), zb = _mm512_set1_epi16(static_cast<int16_t>(p.zb));
  const __m512i pair = _mm512_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(p.mb) << 16) | static_cast<uint32_t>(p.ma)));
  const __m512i half = _mm512_set1_epi32(int32_t{1} << (p.shift - 1)), zy = _mm512_set1_epi32(p.zy);
  const __m128i count = _mm_cvtsi32_si128(p.shift);
  const __m512i lo = _mm512_set1_epi8(static_cast<char>(p.lo)), hi = _mm512_set1_epi8(static_cast<char>(p.hi));
  for (int64_t i = 0; i < n; i += 32) {
    const __mmask32 k = n - i >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << (n - i)) - 1u);
    const __m512i av = _mm512_sub_epi16(_mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(k, a + i)), za);
    const __m512i bv = _mm512_sub_epi16(_mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(k, b + i)), zb);
    __m512i s0 = _mm512_madd_epi16(_mm512_unpacklo_epi16(av, bv), pair);
    __m512i s1 = _mm512_madd_epi16(_mm512_unpackhi_epi16(av, bv), pair);
    s0 = _mm512_add_epi32(_mm512_sra_epi32(_mm512_add_epi32(s0, half), count), zy);
    s1 = _mm512_add_epi32(_mm512_sra_epi32(_mm512_add_epi32(s1, half), count), zy);
    // Saturating packs to int16 then int8 are exact within [lo, hi] (a subset of int8), then the clamp.
    const __m512i w16 = _mm512_packs_epi32(s0, s1);
    const __m256i b8 = _mm512_cvtsepi16_epi8(w16);
    const __m256i c = _mm256_min_epi8(_mm256_max_epi8(b8, _mm512_castsi512_si256(lo)), _mm512_castsi512_si256(hi));
    _mm256_mask_storeu_epi8(y + i, k, c);
  }
}

}  // namespace npuc::kernels::detail
