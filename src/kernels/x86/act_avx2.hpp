// Vector form of applyActivation() for AVX2 translation units only (everything in an anonymous namespace, so
// nothing compiled with -mavx2 can be shared with baseline code).
#pragma once

#include "kernels/activation.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {
namespace {

// Same bits as applyActivation(): compare-and-blend, so NaN and -0.0 pass through exactly as in the scalar code.
struct Act8 {
  ActKind kind;
  __m256 a, b, zero;
  __m256d ad, bd;  // a and b in double (kHardSigmoid, kHardSigmoidMul)
  explicit Act8(const Activation& act)
      : kind(act.kind), a(_mm256_set1_ps(act.a)), b(_mm256_set1_ps(act.b)), zero(_mm256_setzero_ps()),
        ad(_mm256_set1_pd(act.a)), bd(_mm256_set1_pd(act.b)) {}
  __m256 apply(__m256 v) const {
    switch (kind) {
      case ActKind::kNone: return v;
      case ActKind::kRelu: return _mm256_blendv_ps(v, zero, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
      case ActKind::kClip: {
        const __m256 hi = _mm256_blendv_ps(v, b, _mm256_cmp_ps(v, b, _CMP_GT_OQ));
        return _mm256_blendv_ps(hi, a, _mm256_cmp_ps(v, a, _CMP_LT_OQ));
      }
      case ActKind::kLeakyRelu:
        return _mm256_blendv_ps(v, _mm256_mul_ps(v, a), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
      case ActKind::kHardSwish:  // (in double, four lanes at a time, as the scalar definition)
        return _mm256_set_m128(hardSwish4(_mm256_extractf128_ps(v, 1)), hardSwish4(_mm256_castps256_ps128(v)));
      case ActKind::kHardSigmoid: return hardSigmoid8(v);
      case ActKind::kHardSigmoidMul: return _mm256_mul_ps(v, hardSigmoid8(v));
    }
    return v;
  }
  static __m128 hardSwish4(__m128 f) {
    const __m256d x = _mm256_cvtps_pd(f), zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
    __m256d t = _mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.0 / 6.0)), _mm256_set1_pd(0.5));
    t = _mm256_blendv_pd(t, zero, _mm256_cmp_pd(t, zero, _CMP_LT_OQ));
    t = _mm256_blendv_pd(t, one, _mm256_cmp_pd(t, one, _CMP_GT_OQ));
    return _mm256_cvtpd_ps(_mm256_mul_pd(x, t));
  }
  // hardSigmoid(): a * x + b in double (the product exact, so one fused step rounds as the scalar code's two), the
  // lower clamp in double (max with the value second keeps NaN and -0.0 as the scalar comparison does; a negative
  // sum too small for a float must give +0, not the -0 its rounding would), then to float and the upper clamp there
  // (rounding is monotonic and 1 is a float, so clamping after it gives the same bits).
  __m256 hardSigmoid8(__m256 v) const {
    return _mm256_set_m128(hardSigmoid4(_mm256_extractf128_ps(v, 1), ad, bd), hardSigmoid4(_mm256_castps256_ps128(v), ad, bd));
  }
  // The same four lanes at a time (also the unary op's vector form).
  static __m128 hardSigmoid4(__m128 f, __m256d a, __m256d b) {
    const __m256d t = _mm256_max_pd(_mm256_setzero_pd(), _mm256_fmadd_pd(a, _mm256_cvtps_pd(f), b));
    return _mm_min_ps(_mm_set1_ps(1.0f), _mm256_cvtpd_ps(t));
  }
};

}  // namespace
}  // namespace npuc::kernels::detail
