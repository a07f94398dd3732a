// int8-pow2's finish over int32 accumulators on AVX-512 (kernels/pow2.hpp: fast::finishI32Avx512): planFinish's
// formulas, the range and the hoisted right shift vectorised. The same codes and q as finish.
#include "kernels/pow2.hpp"

// (GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized / -Wuninitialized: GCC bug 105593, see quant_avx512.hpp)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <limits>

namespace npuc::kernels::pow2::fast {

int finishI32Avx512(const int32_t* acc, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt,
                    uint8_t* y) {
  __m512i vmn = _mm512_set1_epi32(std::numeric_limits<int32_t>::max()), vmx = _mm512_set1_epi32(std::numeric_limits<int32_t>::min());
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i v = _mm512_loadu_si512(acc + i);
    vmn = _mm512_min_epi32(vmn, v);
    vmx = _mm512_max_epi32(vmx, v);
  }
  int64_t mn = _mm512_reduce_min_epi32(vmn), mx = _mm512_reduce_max_epi32(vmx);
  for (; i < n; ++i) {
    mn = std::min<int64_t>(mn, acc[i]);
    mx = std::max<int64_t>(mx, acc[i]);
  }
  const FinishPlan p = planFinish(mn, mx, n, qacc, S, o, slot, opt);
  i = 0;
  if (p.hoisted) {
    const __m512i alo = _mm512_set1_epi64(p.alo), ahi = _mm512_set1_epi64(p.ahi), add = _mm512_set1_epi64(p.add);
    const __m512i cmin = _mm512_set1_epi64(p.cmin), cmax = _mm512_set1_epi64(p.cmax);
    const __m128i sh = _mm_cvtsi32_si128(p.sh);
    for (; i + 8 <= n; i += 8) {
      __m512i v = _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i)));
      v = _mm512_sra_epi64(_mm512_add_epi64(_mm512_min_epi64(_mm512_max_epi64(v, alo), ahi), add), sh);
      v = _mm512_min_epi64(_mm512_max_epi64(v, cmin), cmax);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm512_cvtepi64_epi8(v));
    }
  }
  for (; i < n; ++i) y[i] = p.code(acc[i]);
  return p.qy;
}

}  // namespace npuc::kernels::pow2::fast
