// Vector form of applyActivation() for AVX-512 translation units only (everything in an anonymous namespace, so
// nothing compiled with -mavx512f can be shared with baseline code).
#pragma once

#include "kernels/activation.hpp"

// (GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized: GCC bug 105593, see quant_avx512.hpp)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace npuc::kernels::detail {
namespace {

// Same bits as applyActivation(): compare-and-blend, so NaN and -0.0 pass through exactly as in the scalar code.
struct Act16 {
  ActKind kind;
  __m512 a, b, zero;
  __m512d ad, bd;  // a and b in double (kHardSigmoid, kHardSigmoidMul)
  explicit Act16(const Activation& act)
      : kind(act.kind), a(_mm512_set1_ps(act.a)), b(_mm512_set1_ps(act.b)), zero(_mm512_setzero_ps()),
        ad(_mm512_set1_pd(act.a)), bd(_mm512_set1_pd(act.b)) {}
  __m512 apply(__m512 v) const {
    switch (kind) {
      case ActKind::kNone: return v;
      case ActKind::kRelu: return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, zero);
      case ActKind::kClip: {
        const __m512 hi = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, b, _CMP_GT_OQ), v, b);
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, a, _CMP_LT_OQ), hi, a);
      }
      case ActKind::kLeakyRelu:
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, _mm512_mul_ps(v, a));
      case ActKind::kHardSwish: {  // (in double, eight lanes at a time, as the scalar definition)
        const __m512d lo = hardSwish8(_mm512_castps512_ps256(v));
        const __m512d hi = hardSwish8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo))),
                                                   _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
      }
      case ActKind::kHardSigmoid: return hardSigmoid16(v);
      case ActKind::kHardSigmoidMul: return _mm512_mul_ps(v, hardSigmoid16(v));
    }
    return v;
  }
  // x * clamp(x * (1/6) + 1/2, 0, 1) in double (not yet rounded to float).
  static __m512d hardSwish8(__m256 f) {
    const __m512d x = _mm512_cvtps_pd(f);
    __m512d t = _mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.0 / 6.0)), _mm512_set1_pd(0.5));
    t = _mm512_mask_mov_pd(t, _mm512_cmp_pd_mask(t, _mm512_setzero_pd(), _CMP_LT_OQ), _mm512_setzero_pd());
    t = _mm512_mask_mov_pd(t, _mm512_cmp_pd_mask(t, _mm512_set1_pd(1.0), _CMP_GT_OQ), _mm512_set1_pd(1.0));
    return _mm512_mul_pd(x, t);
  }
  // hardSigmoid(): a * x + b in double (the product exact, so one fused step rounds as the scalar code's two), the
  // lower clamp in double (max with the value second keeps NaN and -0.0 as the scalar comparison does; a negative
  // sum too small for a float must give +0, not the -0 its rounding would), then to float and the upper clamp there
  // (rounding is monotonic and 1 is a float, so clamping after it gives the same bits).
  __m512 hardSigmoid16(__m512 v) const {
    const __m256 lo = hardSigmoid8(_mm512_castps512_ps256(v), ad, bd);
    const __m256 hi = hardSigmoid8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)), ad, bd);
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
  }
  // Eight lanes at a time (also the unary op's vector form).
  static __m256 hardSigmoid8(__m256 f, __m512d a, __m512d b) {
    const __m512d t = _mm512_max_pd(_mm512_setzero_pd(), _mm512_fmadd_pd(a, _mm512_cvtps_pd(f), b));
    return _mm256_min_ps(_mm256_set1_ps(1.0f), _mm512_cvtpd_ps(t));
  }
};

}  // namespace
}  // namespace npuc::kernels::detail
