// Lane masks and float16 conversions for AVX-512 translation units only (anonymous namespace, as in
// act_avx512.hpp: nothing compiled with -mavx512f can be shared with baseline code).
//
// GCC 12's unmasked forms of some AVX-512 intrinsics (vcvtph2ps, vcvtps2ph, vmaxps, valignd) pass an undefined
// vector as the merge source, which -Wmaybe-uninitialized reports; the full-mask forms below are the same
// instructions.
#pragma once

#include "support/fp16.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace npuc::kernels::detail {
namespace {

/// Lanes l of a 16-lane vector starting at column c with 0 <= c + l < w.
inline __mmask16 inside(int64_t c, int64_t w) {
  const int64_t lo = std::clamp<int64_t>(-c, 0, 16), hi = std::clamp<int64_t>(w - c, 0, 16);
  if (hi <= lo) return 0;
  return static_cast<__mmask16>(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/// Lanes 0 .. n-1 (all 16 when n >= 16).
inline __mmask16 firstLanes(int64_t n) { return inside(0, n); }

/// 16 float16 values widened (exact).
inline __m512 widenHalf(__m256i h) { return _mm512_maskz_cvtph_ps(0xFFFF, h); }

/// 16 floats rounded to float16, to nearest even (NaN payloads as the hardware makes them).
inline __m256i roundHalf(__m512 v) {
  return _mm512_maskz_cvtps_ph(0xFFFF, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/// Stores lanes k of v at p rounded to float16 with floatToHalf's bits: vcvtps2ph rounds to nearest even as it
/// does; a vector holding an Inf or NaN goes through floatToHalf, whose NaN payloads the hardware does not keep.
inline void storeHalf16(uint16_t* p, __m512 v, __mmask16 k = 0xFFFF) {
  const __m512 inf = _mm512_castsi512_ps(_mm512_set1_epi32(0x7f800000));
  const __m512 mag = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
  if (_mm512_cmp_ps_mask(mag, inf, _CMP_NLT_UQ) != 0) {
    alignas(64) float f[16];
    _mm512_store_ps(f, v);
    for (int l = 0; l < 16; ++l)
      if (k >> l & 1) p[l] = floatToHalf(f[l]);
    return;
  }
  _mm256_mask_storeu_epi16(p, k, roundHalf(v));
}

}  // namespace
}  // namespace npuc::kernels::detail
