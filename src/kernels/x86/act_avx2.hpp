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
  explicit Act8(const Activation& act)
      : kind(act.kind), a(_mm256_set1_ps(act.a)), b(_mm256_set1_ps(act.b)), zero(_mm256_setzero_ps()) {}
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
    }
    return v;
  }
};

}  // namespace
}  // namespace npuc::kernels::detail
