// AVX2/FMA kernels vectorised across the rows of packed A panels or for single rows (compiled with -mavx2
// -mfma): f32_gemv_packed__avx2 (N == 1 over packed A, eight 6-row panels in flight, one 6-lane accumulator
// each), f32_gemm_cols__avx2 (GEMM column tails of 1..4 columns, the same scheme per column) and
// f32_gemv_row__avx2 (M == 1, 64 columns of B per sweep over k). One fma per k per output, k ascending;
// vectorised across outputs only.
#include "kernels/x86/act_avx2.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/store_avx2.hpp"

#include <immintrin.h>


namespace npuc::kernels::detail {

namespace {

inline __m256i mask6() { return _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0); }

// G panels starting at a (panel stride K*kMR).
template <int G>
inline void panelGroup(const float* a, int64_t K, const float* x, const float* init, float* out) {
  const __m256i m6 = mask6();
  __m256 acc[G];
  for (int g = 0; g < G; ++g) {
    acc[g] = init != nullptr ? _mm256_maskload_ps(init + g * kMR, m6) : _mm256_setzero_ps();
  }
  const int64_t stride = K * kMR;
  int64_t k = 0;
  // Whole-vector loads read two floats of the next step (ignored lanes); the last step loads exactly 6.
  for (; k + 1 < K; ++k) {
    const __m256 xk = _mm256_broadcast_ss(x + k);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(a + g * stride + k * kMR), xk, acc[g]);
  }
  if (k < K) {
    const __m256 xk = _mm256_broadcast_ss(x + k);
    for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(_mm256_maskload_ps(a + g * stride + k * kMR, m6), xk, acc[g]);
  }
  for (int g = 0; g < G; ++g) storeFirst(out + g * kMR, acc[g], kMR);
}

inline __m256i maskRows(int64_t mr) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(mr)), idx);
}

// G panels (the last with rows_last valid rows) by NR columns of a GEMM tile column; accumulators are 6-lane
// vectors down a panel's rows.
template <int NR, int G>
inline void colsGroup(const MicroArgs& p, const float* a, float* c, const float* row_bias, int64_t rows_last) {
  const __m256i m6 = mask6();
  __m256 acc[G][NR];
  alignas(32) float tmp[8];
  for (int g = 0; g < G; ++g) {
    const int64_t mr = g + 1 == G ? rows_last : kMR;
    for (int j = 0; j < NR; ++j) {
      switch (p.init) {
        case TileInit::kZero: acc[g][j] = _mm256_setzero_ps(); break;
        case TileInit::kRowBias: acc[g][j] = _mm256_maskload_ps(row_bias + g * kMR, maskRows(mr)); break;
        case TileInit::kColBias: acc[g][j] = _mm256_set1_ps(p.bias[j]); break;
        default:
          for (int i = 0; i < 8; ++i) tmp[i] = i < mr ? c[(g * kMR + i) * p.ldc + j] : 0.0f;
          acc[g][j] = _mm256_load_ps(tmp);
          break;
      }
    }
  }
  const float* b = p.b;
  int64_t k = 0;
  // Whole-vector loads of a panel step read two floats of the next step (ignored lanes); the last step loads
  // exactly 6 (it may end the packed matrix).
  for (; k + 1 < p.kc; ++k) {
    __m256 bv[NR];
    for (int j = 0; j < NR; ++j) bv[j] = _mm256_broadcast_ss(b + j);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      const __m256 av = _mm256_loadu_ps(a + g * p.a_stride + k * kMR);
      for (int j = 0; j < NR; ++j) acc[g][j] = _mm256_fmadd_ps(av, bv[j], acc[g][j]);
    }
    b += kNR;
  }
  if (k < p.kc) {
    for (int g = 0; g < G; ++g) {
      const __m256 av = _mm256_maskload_ps(a + g * p.a_stride + k * kMR, m6);
      for (int j = 0; j < NR; ++j) acc[g][j] = _mm256_fmadd_ps(av, _mm256_broadcast_ss(b + j), acc[g][j]);
    }
  }
  const bool act = p.act != nullptr && p.act->kind != ActKind::kNone;
  for (int g = 0; g < G; ++g) {
    const int64_t mr = g + 1 == G ? rows_last : kMR;
    for (int j = 0; j < NR; ++j) {
      _mm256_store_ps(tmp, act ? Act8(*p.act).apply(acc[g][j]) : acc[g][j]);
      for (int64_t i = 0; i < mr; ++i) c[(g * kMR + i) * p.ldc + j] = tmp[i];
    }
  }
}

template <int NR, int G>
void colsPanels(const MicroArgs& p) {
  const float* a = p.a;
  float* c = p.c;
  const float* rb = p.init == TileInit::kRowBias ? p.bias : nullptr;
  int64_t pi = 0;
  for (; pi + G <= p.panels; pi += G) {
    colsGroup<NR, G>(p, a, c, rb, pi + G == p.panels ? p.mr_last : kMR);
    a += G * p.a_stride;
    c += G * kMR * p.ldc;
    if (rb != nullptr) rb += G * kMR;
  }
  for (; pi < p.panels; ++pi) {
    colsGroup<NR, 1>(p, a, c, rb, pi + 1 == p.panels ? p.mr_last : kMR);
    a += p.a_stride;
    c += kMR * p.ldc;
    if (rb != nullptr) rb += kMR;
  }
}

}  // namespace

void f32_gemm_cols__avx2(const MicroArgs& p) {
  switch (p.nr) {
    case 1: colsPanels<1, 8>(p); return;
    case 2: colsPanels<2, 6>(p); return;
    case 3: colsPanels<3, 4>(p); return;
    default: colsPanels<4, 2>(p); return;
  }
}

void f32_gemv_packed__avx2(const float* a, int64_t panels, int64_t K, const float* x, const float* init,
                           float* out) {
  int64_t p = 0;
  for (; p + 8 <= panels; p += 8) {
    panelGroup<8>(a + p * K * kMR, K, x, init != nullptr ? init + p * kMR : nullptr, out + p * kMR);
  }
  for (; p < panels; ++p) {
    panelGroup<1>(a + p * K * kMR, K, x, init != nullptr ? init + p * kMR : nullptr, out + p * kMR);
  }
}

void f32_gemv_row__avx2(const float* x, const float* B, int64_t ldb, int64_t K, int64_t N, const float* init,
                        float init0, float* out) {
  int64_t n = 0;
  for (; n + 64 <= N; n += 64) {
    __m256 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = init != nullptr ? _mm256_loadu_ps(init + n + 8 * j) : _mm256_set1_ps(init0);
    const float* b = B + n;
    for (int64_t k = 0; k < K; ++k) {
      const __m256 xk = _mm256_broadcast_ss(x + k);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(xk, _mm256_loadu_ps(b + 8 * j), acc[j]);
      b += ldb;
    }
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + n + 8 * j, acc[j]);
  }
  for (; n + 8 <= N; n += 8) {
    __m256 acc = init != nullptr ? _mm256_loadu_ps(init + n) : _mm256_set1_ps(init0);
    const float* b = B + n;
    for (int64_t k = 0; k < K; ++k) {
      acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + k), _mm256_loadu_ps(b), acc);
      b += ldb;
    }
    _mm256_storeu_ps(out + n, acc);
  }
  for (; n < N; ++n) {
    float acc = init != nullptr ? init[n] : init0;
    for (int64_t k = 0; k < K; ++k) acc = __builtin_fmaf(x[k], B[k * ldb + n], acc);
    out[n] = acc;
  }
}

}  // namespace npuc::kernels::detail
