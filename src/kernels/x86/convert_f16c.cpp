// F16C conversions (compiled with -mf16c -mavx2): 8 lanes at a time; a block holding Inf or NaN goes through the
// scalar specification (hardware quiets signalling NaNs, the specification keeps the payload as is).
#include "kernels/convert.hpp"
#include "kernels/x86/kernel_table.hpp"

#include "support/fp16.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

void f16ToF32__f16c(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  const __m128i expmask = _mm_set1_epi16(0x7c00);
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, expmask), expmask))) {
      for (int k = 0; k < 8; ++k) y[i + k] = halfToFloat(x[i + k]);
      continue;
    }
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) y[i] = halfToFloat(x[i]);
}

void f32ToF16__f16c(const float* x, uint16_t* y, int64_t n, const Activation& act) {
  int64_t i = 0;
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
  const __m256 zero = _mm256_setzero_ps(), lo = _mm256_set1_ps(act.a), hi = _mm256_set1_ps(act.b);
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    // Activation with the scalar definition's comparisons (NaN passes through Relu and LeakyRelu unchanged).
    switch (act.kind) {
      case ActKind::kNone: break;
      case ActKind::kRelu: v = _mm256_blendv_ps(v, zero, _mm256_cmp_ps(v, zero, _CMP_LT_OQ)); break;
      case ActKind::kClip:
        v = _mm256_blendv_ps(_mm256_blendv_ps(v, hi, _mm256_cmp_ps(v, hi, _CMP_GT_OQ)), lo, _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
        break;
      case ActKind::kLeakyRelu: v = _mm256_blendv_ps(v, _mm256_mul_ps(v, lo), _mm256_cmp_ps(v, zero, _CMP_LT_OQ)); break;
      case ActKind::kHardSwish:
      case ActKind::kHardSigmoid:
      case ActKind::kHardSigmoidMul: {  // (the scalar definition, lane by lane)
        alignas(32) float t[8];
        for (int k = 0; k < 8; ++k) t[k] = applyActivation(x[i + k], act);
        v = _mm256_load_ps(t);
        break;
      }
    }
    if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, absmask), inf, _CMP_NLT_UQ))) {  // Inf or NaN
      for (int k = 0; k < 8; ++k) y[i + k] = floatToHalf(applyActivation(x[i + k], act));
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) y[i] = floatToHalf(applyActivation(x[i], act));
}

}  // namespace npuc::kernels::detail
