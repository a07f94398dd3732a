// npuc's Sigmoid and Tanh (kernels/expf.hpp: sigmoidF32, tanhF32), HardSwish and HardSigmoid (the unary ops' reference,
// ref/layers_ref.cpp) on AVX-512, eight lanes of double at a time: the scalar definitions' operations lane by lane
// (expm1D's reduction, Horner polynomial and scaling; the division; the clamps; one rounding to float), the
// out-of-range and NaN lanes replaced as the scalar code returns them. The same bits.
#include "kernels/expf.hpp"
#include "kernels/x86/act_avx512.hpp"

// (GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized: GCC bug 105593, see quant_avx512.hpp)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

namespace npuc::kernels::detail {

namespace {

using namespace expf_detail;

/// expm1D of eight doubles.
inline __m512d expm1d8(__m512d t) {
  const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(t, _mm512_set1_pd(kInvLn2)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512d r = _mm512_sub_pd(_mm512_sub_pd(t, _mm512_mul_pd(k, _mm512_set1_pd(kLn2Hi))), _mm512_mul_pd(k, _mm512_set1_pd(kLn2Lo)));
  __m512d p = _mm512_set1_pd(kExpm1Coef[0]);
  for (int i = 1; i < 13; ++i) p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(kExpm1Coef[i]));
  const __m512d q = _mm512_mul_pd(p, r), one = _mm512_set1_pd(1.0);
  const __m512d s = _mm512_scalef_pd(one, k);  // 2^k, exact
  return _mm512_add_pd(_mm512_sub_pd(s, one), _mm512_mul_pd(s, q));
}

inline __m256 sigmoid8(__m256 xf) {
  const __mmask8 nan = _mm256_cmp_ps_mask(xf, xf, _CMP_UNORD_Q);
  const __mmask8 high = _mm256_cmp_ps_mask(xf, _mm256_set1_ps(kSigmoidHigh), _CMP_GT_OQ);
  const __mmask8 low = _mm256_cmp_ps_mask(xf, _mm256_set1_ps(kSigmoidLow), _CMP_LT_OQ);
  const __m512d t = _mm512_maskz_mov_pd(static_cast<__mmask8>(~(nan | high | low)), _mm512_cvtps_pd(xf));
  const __m512d d = _mm512_div_pd(_mm512_set1_pd(1.0), _mm512_add_pd(_mm512_set1_pd(2.0), expm1d8(_mm512_sub_pd(_mm512_setzero_pd(), t))));
  __m256 f = _mm512_cvtpd_ps(d);
  f = _mm256_mask_mov_ps(f, high, _mm256_set1_ps(1.0f));
  f = _mm256_mask_mov_ps(f, low, _mm256_setzero_ps());
  return _mm256_mask_mov_ps(f, nan, xf);
}

inline __m256 tanh8(__m256 xf) {
  const __mmask8 keep = _mm256_cmp_ps_mask(xf, xf, _CMP_UNORD_Q) | _mm256_cmp_ps_mask(xf, _mm256_setzero_ps(), _CMP_EQ_OQ);
  const __mmask8 high = _mm256_cmp_ps_mask(xf, _mm256_set1_ps(kTanhHigh), _CMP_GT_OQ);
  const __mmask8 low = _mm256_cmp_ps_mask(xf, _mm256_set1_ps(-kTanhHigh), _CMP_LT_OQ);
  const __m512d t = _mm512_maskz_mov_pd(static_cast<__mmask8>(~(keep | high | low)), _mm512_cvtps_pd(xf));
  const __m512d e = expm1d8(_mm512_mul_pd(_mm512_set1_pd(2.0), t));
  __m256 f = _mm512_cvtpd_ps(_mm512_div_pd(e, _mm512_add_pd(e, _mm512_set1_pd(2.0))));
  f = _mm256_mask_mov_ps(f, high, _mm256_set1_ps(1.0f));
  f = _mm256_mask_mov_ps(f, low, _mm256_set1_ps(-1.0f));
  return _mm256_mask_mov_ps(f, keep, xf);
}

/// HardSwish (unaryT): x · clamp(x / 6 + 0.5, 0, 1) in double, one rounding to float — the convolution epilogue's form
/// (Act16::hardSwish8: x / 6 taken as x · (1 / 6), the same float for every x;
/// LayersUnary.FastHardSwishAndHardSigmoidAreTheirBits).
inline __m256 hardSwish8(__m256 xf) { return _mm512_cvtpd_ps(Act16::hardSwish8(xf)); }

template <typename F>
void apply(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1u);
    _mm256_mask_storeu_ps(y + i, m, f(_mm256_maskz_loadu_ps(m, x + i)));
  }
}

}  // namespace

void sigmoidAvx512(const float* x, float* y, int64_t n) { apply(x, y, n, sigmoid8); }
void tanhAvx512(const float* x, float* y, int64_t n) { apply(x, y, n, tanh8); }
void hardSwishAvx512(const float* x, float* y, int64_t n) { apply(x, y, n, hardSwish8); }
// HardSigmoid (unaryT): Act16::hardSigmoid8, the convolution epilogue's form (the bits of hardSigmoid()).
void hardSigmoidAvx512(float alpha, float beta, const float* x, float* y, int64_t n) {
  const __m512d a = _mm512_set1_pd(alpha), b = _mm512_set1_pd(beta);
  apply(x, y, n, [&](__m256 xf) { return Act16::hardSigmoid8(xf, a, b); });
}

}  // namespace npuc::kernels::detail
