// Softmax over the last axis on AVX-512 (kernels::softmaxFast): per row the reference's max (16 lanes, then across
// them), expF32 of x - max eight lanes at a time (its double operations, lane by lane: the same bits), the sum in
// index order (eight rows' sums interleaved, each its own chain), then the division. The reference's bits.
#include "kernels/expf.hpp"
#include "kernels/layers.hpp"
#include "kernels/ref/parallel_units.hpp"

// (GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized: GCC bug 105593, see quant_avx512.hpp)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <limits>

namespace npuc::kernels::detail {

namespace {

/// expF32 of 8 floats.
inline __m256 exp8(__m256 xf) {
  using namespace expf_detail;
  const __m512d t = _mm512_cvtps_pd(xf);
  const __mmask8 nan = _mm512_cmp_pd_mask(t, t, _CMP_UNORD_Q);
  const __mmask8 low = _mm512_cmp_pd_mask(t, _mm512_set1_pd(kLow), _CMP_LT_OQ);
  const __mmask8 high = _mm512_cmp_pd_mask(t, _mm512_set1_pd(kHigh), _CMP_GT_OQ);
  const __m512d tc = _mm512_mask_mov_pd(t, static_cast<__mmask8>(nan | low | high), _mm512_setzero_pd());  // (those lanes are replaced)
  const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(tc, _mm512_set1_pd(kInvLn2)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512d r = _mm512_sub_pd(_mm512_sub_pd(tc, _mm512_mul_pd(k, _mm512_set1_pd(kLn2Hi))), _mm512_mul_pd(k, _mm512_set1_pd(kLn2Lo)));
  __m512d p = _mm512_set1_pd(kCoef[0]);
  for (int i = 1; i < 13; ++i) p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(kCoef[i]));
  __m256 f = _mm512_cvtpd_ps(_mm512_scalef_pd(p, k));  // (p 2^k exact; one rounding to float, as the scalar cast)
  f = _mm256_mask_mov_ps(f, low, _mm256_setzero_ps());
  f = _mm256_mask_mov_ps(f, high, _mm256_set1_ps(std::numeric_limits<float>::infinity()));
  return _mm256_mask_mov_ps(f, nan, xf);
}

inline __m512 exp16(__m512 x) {
  const __m256 lo = exp8(_mm512_castps512_ps256(x));
  const __m256 hi = exp8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}

inline __mmask16 tailMask(int64_t n) { return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u); }

}  // namespace

void expF32Avx512(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m, exp16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void softmaxRowsAvx512(int64_t outer, int64_t len, const float* x, float* y, ThreadPool* pool) {
  constexpr int64_t kRows = 8;
  parallelUnits(pool, (outer + kRows - 1) / kRows, kRows * len * 8, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t r0 = g * kRows, rows = std::min(kRows, outer - r0);
      float sum[kRows] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + (r0 + r) * len;
        float* yr = y + (r0 + r) * len;
        // The largest non-NaN value (-inf if none), lane-wise then across the lanes: the reference's m (max is exact;
        // where it differs in the sign of a zero, x - m and so exp(x - m) do not: e^(±0) = 1, x ∓ 0 = x otherwise).
        __m512 lanes = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
        for (int64_t i = 0; i < len; i += 16) {
          const __m512 v = _mm512_maskz_loadu_ps(tailMask(len - i), xr + i);  // (lanes past the row: masked off)
          lanes = _mm512_mask_mov_ps(lanes, _mm512_mask_cmp_ps_mask(tailMask(len - i), v, lanes, _CMP_GT_OQ), v);
        }
        alignas(64) float l[16];
        _mm512_store_ps(l, lanes);
        float m = -std::numeric_limits<float>::infinity();
        for (float v : l)
          if (v > m) m = v;
        const __m512 mv = _mm512_set1_ps(m);
        for (int64_t i = 0; i < len; i += 16) {
          const __mmask16 k = tailMask(len - i);
          _mm512_mask_storeu_ps(yr + i, k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, xr + i), mv)));
        }
      }
      // Each row's sum in index order, the rows' chains interleaved.
      float* const yg = y + r0 * len;
      if (rows == kRows) {
        for (int64_t i = 0; i < len; ++i)
          for (int64_t r = 0; r < kRows; ++r) sum[r] += yg[r * len + i];
      } else {
        for (int64_t i = 0; i < len; ++i)
          for (int64_t r = 0; r < rows; ++r) sum[r] += yg[r * len + i];
      }
      for (int64_t r = 0; r < rows; ++r) {
        float* yr = yg + r * len;
        const __m512 s = _mm512_set1_ps(sum[r]);
        for (int64_t i = 0; i < len; i += 16) {
          const __mmask16 k = tailMask(len - i);
          _mm512_mask_storeu_ps(yr + i, k, _mm512_div_ps(_mm512_maskz_loadu_ps(k, yr + i), s));
        }
      }
    }
  });
}

}  // namespace npuc::kernels::detail
