// AVX-512 forms of the int8-affine requantization primitives (kernels/quant.hpp), bit for bit. Include only from
// files compiled with AVX-512F/BW/VL (*_avx512.cpp, *_vnni.cpp).
#pragma once

#include "kernels/quant.hpp"
#include "kernels/x86/quant_x86.hpp"

// GCC 12's AVX-512 integer intrinsics start from _mm512_undefined_epi32() (a self-initialised variable), which
// -Wmaybe-uninitialized reports at every use when inlined (GCC bug 105593, fixed in GCC 13): off for
// the files that include this one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace npuc::kernels::detail {

/// RequantOnce's constants broadcast once (a loop over one channel's outputs keeps them in registers).
struct RequantOnceVec {
  __m512i m, pos, neg;
  __m128i count;
  explicit RequantOnceVec(const RequantOnce& c)
      : m(_mm512_set1_epi32(c.m)), pos(_mm512_set1_epi64(c.add_pos)), neg(_mm512_set1_epi64(c.add_neg)),
        count(_mm_cvtsi64_si128(c.shift)) {}
};
/// multiplyByMultiplier(x, {m, -r}) on 16 lanes, as one rounding (RequantOnce, kernels/x86/quant_x86.hpp): the even and
/// the odd lanes' 64-bit products (vpmuldq; the odd lanes brought down by vpshufd), the sign's constant chosen by a
/// compare into a mask, one arithmetic shift each, the odd results moved back up. Two multiplies and two shifts on
/// the shift/multiply port, the rest on the others.
inline __m512i multiplyByMultiplierAvx512(__m512i x, const RequantOnceVec& c) {
  const __m512i pe = _mm512_mul_epi32(x, c.m);
  const __m512i po = _mm512_mul_epi32(_mm512_shuffle_epi32(x, _MM_PERM_CDAB), c.m);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i re = _mm512_sra_epi64(_mm512_add_epi64(pe, _mm512_mask_blend_epi64(_mm512_cmplt_epi64_mask(pe, zero), c.pos, c.neg)), c.count);
  const __m512i ro = _mm512_sra_epi64(_mm512_add_epi64(po, _mm512_mask_blend_epi64(_mm512_cmplt_epi64_mask(po, zero), c.pos, c.neg)), c.count);
  return _mm512_mask_shuffle_epi32(re, 0xAAAA, ro, _MM_PERM_CDAB);
}
inline __m512i multiplyByMultiplierAvx512(__m512i x, const RequantOnce& c) {
  return multiplyByMultiplierAvx512(x, RequantOnceVec(c));
}

/// The scalar primitive for a factor above 1 (rare): out of line, so that its stack array does not cost the
/// microkernels' registers.
[[gnu::noinline]] inline void requantizeStoreScalar(__m512i acc, const Multiplier& mm, int32_t zp, int32_t lo, int32_t hi,
                                                   int8_t* y, int n) {
  alignas(64) int32_t a[16];
  _mm512_store_si512(a, acc);
  for (int i = 0; i < n; ++i) y[i] = requantizeValue(a[i], mm, zp, lo, hi);
}

/// clamp(zp + x, lo, hi) narrowed to 16 int8.
inline __m128i offsetClampToI8Avx512(__m512i x, int32_t zp, int32_t lo, int32_t hi) {
  x = _mm512_add_epi32(x, _mm512_set1_epi32(zp));
  x = _mm512_min_epi32(_mm512_max_epi32(x, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi));
  return _mm512_cvtepi32_epi8(x);
}

/// Requantizes 16 int32 sums of one channel (multiplier mm; `once`: its one-rounding constants, used where mm has
/// no left shift) and stores `n` <= 16 codes.
inline void requantizeStore(__m512i acc, const Multiplier& mm, const RequantOnce& once, int32_t zp, int32_t lo, int32_t hi,
                            int8_t* y, int n) {
  if (mm.shift > 0) return requantizeStoreScalar(acc, mm, zp, lo, hi, y, n);
  const __m128i q = offsetClampToI8Avx512(multiplyByMultiplierAvx512(acc, once), zp, lo, hi);
  _mm_mask_storeu_epi8(y, static_cast<__mmask16>((1u << n) - 1u), q);
}

/// Four vectors of one row (64 consecutive outputs) requantized the same way, narrowed together: clamp(zp + x, lo,
/// hi) as int8, by saturating packs (int32 -> int16, + zp saturating, -> int8: a value past the int8 range stays
/// past it, so the clamp to [lo, hi] within [-128, 127] on bytes gives the same code) and one dword permute to
/// undo the packs' lane interleave.
inline __m512i offsetClampToI8x4Avx512(__m512i a, __m512i b, __m512i c, __m512i d, int32_t zp, int32_t lo, int32_t hi) {
  const __m512i z = _mm512_set1_epi16(static_cast<int16_t>(zp));
  const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(a, b), z), cd = _mm512_adds_epi16(_mm512_packs_epi32(c, d), z);
  __m512i q = _mm512_packs_epi16(ab, cd);  // 128-bit lane L: a[4L..4L+3], b[..], c[..], d[..]
  q = _mm512_min_epi8(_mm512_max_epi8(q, _mm512_set1_epi8(static_cast<char>(lo))), _mm512_set1_epi8(static_cast<char>(hi)));
  return _mm512_permutexvar_epi32(_mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0), q);
}

}  // namespace npuc::kernels::detail
