// AVX2/FMA GEMM microkernels (compiled with -mavx2 -mfma): f32_gemm__avx2_6x16 (12 accumulators) and
// f32_gemm__avx2_6x8 (narrow column tails); one fma per k per output, k ascending; fused bias init and
// activation epilogue.
#include "kernels/x86/act_avx2.hpp"
#include "kernels/x86/kernel_table.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

namespace {

template <bool kDirect>
inline void tile6x16(const MicroArgs& p, const float* a, float* c, const float* row_bias) {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  const int64_t ldc = p.ldc;
  switch (p.init) {
    case TileInit::kZero:
      c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
      break;
    case TileInit::kRowBias:
      c00 = c01 = _mm256_broadcast_ss(row_bias + 0);
      c10 = c11 = _mm256_broadcast_ss(row_bias + 1);
      c20 = c21 = _mm256_broadcast_ss(row_bias + 2);
      c30 = c31 = _mm256_broadcast_ss(row_bias + 3);
      c40 = c41 = _mm256_broadcast_ss(row_bias + 4);
      c50 = c51 = _mm256_broadcast_ss(row_bias + 5);
      break;
    case TileInit::kColBias:
      c00 = c10 = c20 = c30 = c40 = c50 = _mm256_loadu_ps(p.bias);
      c01 = c11 = c21 = c31 = c41 = c51 = _mm256_loadu_ps(p.bias + 8);
      break;
    default:
      c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
      c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
      c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
      c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
      c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
      c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
      break;
  }
  const float* b = p.b;
  const int64_t* b_off = p.b_off;
  // The next panel's weights, one panel ahead (48 bytes of them every other k: every line once): in a network a
  // layer's packed weights come from L3 or memory, and the hardware prefetcher restarts at each panel, which
  // begins a stride of the whole depth away (MobileNetV2 / ResNet-50 / MobileNetV1 on one AVX2 thread 3-9 % faster;
  // warm kernel benchmarks unchanged). Past the last panel it touches lines nobody reads: a prefetch never faults.
  const float* next_a = a + p.a_stride;
  for (int64_t k = 0; k < p.kc; ++k) {
    if ((k & 1) == 0) _mm_prefetch(reinterpret_cast<const char*>(next_a + k * kMR), _MM_HINT_T0);
    const float* br = kDirect ? p.b + b_off[k] : b;  // direct B: shifted rows, any alignment
    const __m256 b0 = kDirect ? _mm256_loadu_ps(br) : _mm256_load_ps(br);
    const __m256 b1 = kDirect ? _mm256_loadu_ps(br + 8) : _mm256_load_ps(br + 8);
    __m256 av = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
    a += kMR;
    b += kNR;
  }
  if (p.act != nullptr && p.act->kind != ActKind::kNone) {
    const Act8 f(*p.act);
    c00 = f.apply(c00), c01 = f.apply(c01), c10 = f.apply(c10), c11 = f.apply(c11);
    c20 = f.apply(c20), c21 = f.apply(c21), c30 = f.apply(c30), c31 = f.apply(c31);
    c40 = f.apply(c40), c41 = f.apply(c41), c50 = f.apply(c50), c51 = f.apply(c51);
  }
  _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
  _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
  _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
  _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
  _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
  _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

inline void tile6x8(const MicroArgs& p, const float* a, float* c, const float* row_bias) {
  __m256 c0, c1, c2, c3, c4, c5;
  const int64_t ldc = p.ldc;
  switch (p.init) {
    case TileInit::kZero: c0 = c1 = c2 = c3 = c4 = c5 = _mm256_setzero_ps(); break;
    case TileInit::kRowBias:
      c0 = _mm256_broadcast_ss(row_bias + 0), c1 = _mm256_broadcast_ss(row_bias + 1);
      c2 = _mm256_broadcast_ss(row_bias + 2), c3 = _mm256_broadcast_ss(row_bias + 3);
      c4 = _mm256_broadcast_ss(row_bias + 4), c5 = _mm256_broadcast_ss(row_bias + 5);
      break;
    case TileInit::kColBias: c0 = c1 = c2 = c3 = c4 = c5 = _mm256_loadu_ps(p.bias); break;
    default:
      c0 = _mm256_loadu_ps(c + 0 * ldc), c1 = _mm256_loadu_ps(c + 1 * ldc), c2 = _mm256_loadu_ps(c + 2 * ldc);
      c3 = _mm256_loadu_ps(c + 3 * ldc), c4 = _mm256_loadu_ps(c + 4 * ldc), c5 = _mm256_loadu_ps(c + 5 * ldc);
      break;
  }
  const float* b = p.b;
  for (int64_t k = 0; k < p.kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b);
    c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 0), b0, c0);
    c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 1), b0, c1);
    c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 2), b0, c2);
    c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 3), b0, c3);
    c4 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 4), b0, c4);
    c5 = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 5), b0, c5);
    a += kMR;
    b += kNR;
  }
  if (p.act != nullptr && p.act->kind != ActKind::kNone) {
    const Act8 f(*p.act);
    c0 = f.apply(c0), c1 = f.apply(c1), c2 = f.apply(c2), c3 = f.apply(c3), c4 = f.apply(c4), c5 = f.apply(c5);
  }
  _mm256_storeu_ps(c + 0 * ldc, c0), _mm256_storeu_ps(c + 1 * ldc, c1), _mm256_storeu_ps(c + 2 * ldc, c2);
  _mm256_storeu_ps(c + 3 * ldc, c3), _mm256_storeu_ps(c + 4 * ldc, c4), _mm256_storeu_ps(c + 5 * ldc, c5);
}

}  // namespace

void f32_gemm__avx2_6x8(const MicroArgs& p) {
  const float* a = p.a;
  float* c = p.c;
  const float* bias = p.bias;
  const bool row_bias = p.init == TileInit::kRowBias;
  for (int64_t i = 0; i < p.panels; ++i) {
    tile6x8(p, a, c, bias);
    a += p.a_stride;
    c += kMR * p.ldc;
    if (row_bias) bias += kMR;
  }
}

void f32_gemm__avx2_6x16(const MicroArgs& p) {
  const float* a = p.a;
  float* c = p.c;
  const float* bias = p.bias;
  const bool row_bias = p.init == TileInit::kRowBias;
  const bool direct = p.b_off != nullptr;
  for (int64_t i = 0; i < p.panels; ++i) {
    if (direct) tile6x16<true>(p, a, c, bias);
    else tile6x16<false>(p, a, c, bias);
    a += p.a_stride;
    c += kMR * p.ldc;
    if (row_bias) bias += kMR;
  }
}

}  // namespace npuc::kernels::detail
