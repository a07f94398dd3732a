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
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace npuc::kernels::pow2::fast {

namespace {

// (this file's own copies of pow2.hpp's inline code helpers: see FinishPlan::code)
int32_t codeIn(const uint8_t* p, int64_t i, bool is_signed) {
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(p[i])) : static_cast<int32_t>(p[i]);
}
double lowestCode(bool is_signed) { return is_signed ? -128.0 : 0.0; }
double highestCode(bool is_signed) { return is_signed ? 127.0 : 255.0; }

/// The range of n int32 accumulators given by value(i) (16 lanes from the vector form, one from the scalar one).
template <class Vec, class One>
std::pair<int64_t, int64_t> rangeOf(int64_t n, const Vec& vec, const One& one) {
  __m512i vmn = _mm512_set1_epi32(std::numeric_limits<int32_t>::max()), vmx = _mm512_set1_epi32(std::numeric_limits<int32_t>::min());
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i v = vec(i);
    vmn = _mm512_min_epi32(vmn, v);
    vmx = _mm512_max_epi32(vmx, v);
  }
  int64_t mn = _mm512_reduce_min_epi32(vmn), mx = _mm512_reduce_max_epi32(vmx);
  for (; i < n; ++i) {
    mn = std::min<int64_t>(mn, one(i));
    mx = std::max<int64_t>(mx, one(i));
  }
  return {mn, mx};
}

/// y[i] = p.code(value(i)): the hoisted shift 16 lanes at a time (two halves in int64) where p has it.
template <class Vec, class One>
void codesOf(const FinishPlan& p, int64_t n, const Vec& vec, const One& one, uint8_t* y) {
  int64_t i = 0;
  if (p.hoisted) {
    const __m512i alo = _mm512_set1_epi64(p.alo), ahi = _mm512_set1_epi64(p.ahi), add = _mm512_set1_epi64(p.add);
    const __m512i cmin = _mm512_set1_epi64(p.cmin), cmax = _mm512_set1_epi64(p.cmax);
    const __m128i sh = _mm_cvtsi32_si128(p.sh), lsh = _mm_cvtsi32_si128(p.lsh);
    auto half = [&](__m256i a) {
      __m512i v = _mm512_cvtepi32_epi64(a);
      v = _mm512_sra_epi64(_mm512_add_epi64(_mm512_sll_epi64(_mm512_min_epi64(_mm512_max_epi64(v, alo), ahi), lsh), add), sh);
      return _mm512_cvtepi64_epi8(_mm512_min_epi64(_mm512_max_epi64(v, cmin), cmax));
    };
    for (; i + 16 <= n; i += 16) {
      const __m512i v = vec(i);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                       _mm_unpacklo_epi64(half(_mm512_castsi512_si256(v)), half(_mm512_extracti64x4_epi64(v, 1))));
    }
  }
  for (; i < n; ++i) y[i] = p.code(one(i));
}

}  // namespace

int finishI32Avx512(const int32_t* acc, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt,
                    uint8_t* y) {
  auto vec = [&](int64_t i) { return _mm512_loadu_si512(acc + i); };
  auto one = [&](int64_t i) { return static_cast<int64_t>(acc[i]); };
  const auto [mn, mx] = rangeOf(n, vec, one);
  const FinishPlan p = planFinish(mn, mx, n, qacc, S, o, slot, opt);
  codesOf(p, n, vec, one, y);
  return p.qy;
}

int quantizeAvx512(const float* x, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y) {
  // The range of the finite values (x - x is 0 exactly for them, NaN for NaN and the infinities).
  const __m512 zero = _mm512_setzero_ps();
  __m512 vmn = _mm512_set1_ps(std::numeric_limits<float>::infinity()), vmx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __mmask16 finite = _mm512_cmp_ps_mask(_mm512_sub_ps(v, v), zero, _CMP_EQ_OQ);
    vmn = _mm512_mask_min_ps(vmn, finite, vmn, v);
    vmx = _mm512_mask_max_ps(vmx, finite, vmx, v);
  }
  double mn = _mm512_reduce_min_ps(vmn), mx = _mm512_reduce_max_ps(vmx);
  for (; i < n; ++i)
    if (std::isfinite(x[i])) {
      mn = std::min(mn, static_cast<double>(x[i]));
      mx = std::max(mx, static_cast<double>(x[i]));
    }
  if (mn > mx) mn = mx = 0;
  const int qy = updateSlot(slot, mn, mx, opt);
  const double r = opt.round_add / 100.0, p = std::ldexp(1.0, qy);  // (x · 2^qy: exact, as ldexp)
  const double lo = lowestCode(o.is_signed), hi = highestCode(o.is_signed);
  const __m512d vr = _mm512_set1_pd(r), vp = _mm512_set1_pd(p), vlo = _mm512_set1_pd(lo), vhi = _mm512_set1_pd(hi);
  for (i = 0; i + 8 <= n; i += 8) {
    const __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
    __m512d q = _mm512_roundscale_pd(_mm512_add_pd(_mm512_mul_pd(v, vp), vr), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    q = _mm512_max_pd(_mm512_min_pd(q, vhi), vlo);
    q = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), q, _mm512_setzero_pd());  // NaN -> 0
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm256_cvtepi32_epi8(_mm512_cvttpd_epi32(q)));
  }
  for (; i < n; ++i) {
    const double v = std::isnan(x[i]) ? 0.0 : std::clamp(std::floor(static_cast<double>(x[i]) * p + r), lo, hi);
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
  }
  return qy;
}

int addAvx512(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
              std::vector<int64_t>& scratch) {
  const int Q = std::max(a.q, b.q), sa = Q - a.q, sb = Q - b.q;
  if (sa > 22 || sb > 22) return add(a, b, n, o, slot, opt, y, scratch);  // (255 · 2^22 · 2 < 2^31)
  // The sums computed twice, for the range and for the codes: cheaper than writing them out and reading them back.
  const __m128i csa = _mm_cvtsi32_si128(sa), csb = _mm_cvtsi32_si128(sb);
  auto widen = [](const uint8_t* p, bool is_signed) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return is_signed ? _mm512_cvtepi8_epi32(c) : _mm512_cvtepu8_epi32(c);
  };
  auto vec = [&](int64_t i) {
    return _mm512_add_epi32(_mm512_sll_epi32(widen(a.p + i, a.is_signed), csa), _mm512_sll_epi32(widen(b.p + i, b.is_signed), csb));
  };
  auto one = [&](int64_t i) {  // (as add: the codes' values shifted left, exact in int32 here)
    return (static_cast<int64_t>(codeIn(a.p, i, a.is_signed)) << sa) + (static_cast<int64_t>(codeIn(b.p, i, b.is_signed)) << sb);
  };
  const auto [mn, mx] = rangeOf(n, vec, one);
  const FinishPlan p = planFinish(mn, mx, n, Q, 1, o, slot, opt);
  codesOf(p, n, vec, one, y);
  return p.qy;
}

void dequantizeAvx512(Codes x, int64_t n, float* y) {
  const float s = std::ldexp(1.0f, -x.q);  // (code · 2^-q: exact, as ldexp)
  const __m512 vs = _mm512_set1_ps(s);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.p + i));
    const __m512i w = x.is_signed ? _mm512_cvtepi8_epi32(c) : _mm512_cvtepu8_epi32(c);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_cvtepi32_ps(w), vs));
  }
  for (; i < n; ++i) y[i] = static_cast<float>(codeIn(x.p, i, x.is_signed)) * s;
}

}  // namespace npuc::kernels::pow2::fast
