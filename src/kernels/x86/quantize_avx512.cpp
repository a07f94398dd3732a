// ONNX QuantizeLinear / DequantizeLinear per tensor, AVX-512 (chosen at run time by kernels/x86/quantize.cpp): the
// reference's float operations lane by lane — an IEEE division, round to nearest even (roundscale, as nearbyint in
// the default mode), NaN to 0, the zero point added in float, the clamp — so the bytes are the reference's.
#include "kernels/x86/quant_avx512.hpp"
#include "kernels/x86/quant_x86.hpp"

#include <algorithm>

namespace npuc::kernels::detail {

void quantizeLinearAvx512(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y) {
  const __m512 s = _mm512_set1_ps(scale), zp = _mm512_set1_ps(static_cast<float>(zero_point));
  const __m512 lo = _mm512_set1_ps(-128.0f), hi = _mm512_set1_ps(127.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (n - i)) - 1u);
    __m512 q = _mm512_roundscale_ps(_mm512_div_ps(_mm512_maskz_loadu_ps(k, x + i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    q = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(q, q, _CMP_ORD_Q), q);  // NaN -> 0
    q = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(q, zp), lo), hi);
    _mm_mask_storeu_epi8(y + i, k, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(q)));
  }
}

void dequantizeLinearAvx512(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i zp = _mm512_set1_epi32(zero_point);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512i q = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, x + i)), zp);
    _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(_mm512_cvtepi32_ps(q), s));
  }
}

}  // namespace npuc::kernels::detail
