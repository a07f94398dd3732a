// Vector form of applyActivation() for AVX-512 translation units only (everything in an anonymous namespace, so
// nothing compiled with -mavx512f can be shared with baseline code).
#pragma once

#include "kernels/activation.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {
namespace {

// Same bits as applyActivation(): compare-and-blend, so NaN and -0.0 pass through exactly as in the scalar code.
struct Act16 {
  ActKind kind;
  __m512 a, b, zero;
  explicit Act16(const Activation& act)
      : kind(act.kind), a(_mm512_set1_ps(act.a)), b(_mm512_set1_ps(act.b)), zero(_mm512_setzero_ps()) {}
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
    }
    return v;
  }
};

}  // namespace
}  // namespace npuc::kernels::detail
