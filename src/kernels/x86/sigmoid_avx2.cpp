// npuc's Sigmoid and Tanh (kernels/expf.hpp: sigmoidF32, tanhF32), HardSwish and HardSigmoid (the unary ops' reference,
// layers_ref.cpp: in double, one rounding) on AVX2, four lanes of double at a time: the scalar
// definitions' operations lane by lane (expm1D's reduction, Horner polynomial — multiply then add, never fused — and
// scaling by 2^k built in the exponent bits; the division; the clamps; one rounding to float), the out-of-range and NaN
// lanes replaced as the scalar code returns them. The same bits (LayersUnary.FastSigmoidAndTanhAreTheirBits).
#include "kernels/expf.hpp"
#include "kernels/x86/act_avx2.hpp"

#include <immintrin.h>

#include <cstdint>

namespace npuc::kernels::detail {

namespace {

using namespace expf_detail;

/// expm1D of four doubles (|t| <= 220 here: 2^k a normal double).
inline __m256d expm1d4(__m256d t) {
  const __m256d k = _mm256_round_pd(_mm256_mul_pd(t, _mm256_set1_pd(kInvLn2)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256d r = _mm256_sub_pd(_mm256_sub_pd(t, _mm256_mul_pd(k, _mm256_set1_pd(kLn2Hi))), _mm256_mul_pd(k, _mm256_set1_pd(kLn2Lo)));
  __m256d p = _mm256_set1_pd(kExpm1Coef[0]);
  for (int i = 1; i < 13; ++i) p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(kExpm1Coef[i]));
  const __m256d q = _mm256_mul_pd(p, r), one = _mm256_set1_pd(1.0);
  // 2^k, exact: k (an integer below 2^51) read from the low bits of k + 1.5 · 2^52, put in the exponent field
  const __m256d magic = _mm256_set1_pd(6755399441055744.0);
  const __m256i ki = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(k, magic)), _mm256_castpd_si256(magic));
  const __m256d s = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(ki, _mm256_set1_epi64x(1023)), 52));
  return _mm256_add_pd(_mm256_sub_pd(s, one), _mm256_mul_pd(s, q));
}

/// f applied to the two halves of x (four floats widened to double each).
template <typename F>
inline __m256 halves(__m256 x, F f) {
  return _mm256_set_m128(_mm256_cvtpd_ps(f(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)))),
                         _mm256_cvtpd_ps(f(_mm256_cvtps_pd(_mm256_castps256_ps128(x)))));
}

inline __m256 sigmoid8(__m256 xf) {
  const __m256 nan = _mm256_cmp_ps(xf, xf, _CMP_UNORD_Q);
  const __m256 high = _mm256_cmp_ps(xf, _mm256_set1_ps(kSigmoidHigh), _CMP_GT_OQ);
  const __m256 low = _mm256_cmp_ps(xf, _mm256_set1_ps(kSigmoidLow), _CMP_LT_OQ);
  const __m256 in = _mm256_andnot_ps(_mm256_or_ps(nan, _mm256_or_ps(high, low)), xf);  // (the others: 0, harmless)
  __m256 f = halves(in, [](__m256d t) {
    return _mm256_div_pd(_mm256_set1_pd(1.0), _mm256_add_pd(_mm256_set1_pd(2.0), expm1d4(_mm256_sub_pd(_mm256_setzero_pd(), t))));
  });
  f = _mm256_blendv_ps(f, _mm256_set1_ps(1.0f), high);
  f = _mm256_blendv_ps(f, _mm256_setzero_ps(), low);
  return _mm256_blendv_ps(f, xf, nan);
}

inline __m256 tanh8(__m256 xf) {
  const __m256 keep = _mm256_or_ps(_mm256_cmp_ps(xf, xf, _CMP_UNORD_Q), _mm256_cmp_ps(xf, _mm256_setzero_ps(), _CMP_EQ_OQ));
  const __m256 high = _mm256_cmp_ps(xf, _mm256_set1_ps(kTanhHigh), _CMP_GT_OQ);
  const __m256 low = _mm256_cmp_ps(xf, _mm256_set1_ps(-kTanhHigh), _CMP_LT_OQ);
  const __m256 in = _mm256_andnot_ps(_mm256_or_ps(keep, _mm256_or_ps(high, low)), xf);
  __m256 f = halves(in, [](__m256d t) {
    const __m256d e = expm1d4(_mm256_mul_pd(_mm256_set1_pd(2.0), t));
    return _mm256_div_pd(e, _mm256_add_pd(e, _mm256_set1_pd(2.0)));
  });
  f = _mm256_blendv_ps(f, _mm256_set1_ps(1.0f), high);
  f = _mm256_blendv_ps(f, _mm256_set1_ps(-1.0f), low);
  return _mm256_blendv_ps(f, xf, keep);
}

template <typename F>
void apply(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, f(_mm_loadu_ps(x + i)));
  if (i == n) return;
  float in[4] = {0, 0, 0, 0}, out[4];
  for (int64_t j = i; j < n; ++j) in[j - i] = x[j];
  _mm_storeu_ps(out, f(_mm_loadu_ps(in)));
  for (int64_t j = i; j < n; ++j) y[j] = out[j - i];
}

}  // namespace

// HardSwish: x · clamp(x / 6 + 0.5, 0, 1) in double, x / 6 as x · (1 / 6) (the same float for every x: the
// convolution epilogue's form, Act8::hardSwish4).
void hardSwishAvx2(const float* x, float* y, int64_t n) { apply(x, y, n, [](__m128 f) { return Act8::hardSwish4(f); }); }

// HardSigmoid: Act8::hardSigmoid4, the convolution epilogue's form (the bits of hardSigmoid(), NaN and -0 kept).
void hardSigmoidAvx2(float alpha, float beta, const float* x, float* y, int64_t n) {
  const __m256d a = _mm256_set1_pd(alpha), b = _mm256_set1_pd(beta);
  apply(x, y, n, [&](__m128 f) { return Act8::hardSigmoid4(f, a, b); });
}

void sigmoidAvx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, sigmoid8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = sigmoidF32(x[i]);
}

void tanhAvx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, tanh8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = tanhF32(x[i]);
}

}  // namespace npuc::kernels::detail
