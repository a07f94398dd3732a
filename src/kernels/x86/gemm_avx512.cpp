// AVX-512 GEMM microkernels (compiled with -mavx512f -mavx512vl -mfma): f32_gemm__avx512_6x32 (two adjacent
// 16-column B panels; two A panels at a time: 12x32, 24 zmm accumulators) and f32_gemm__avx512_6x16 (one B
// panel, 12x16); one fma per k per output; B from packed panels or, direct, from shifted rows (MicroArgs::b_off),
// k ascending; fused bias init and activation epilogue; float32 or (MicroArgs::ch) float16 results. The packed
// layouts are the AVX2 ones (6-row A panels, 16-column B panels), so every table shares the drivers and PackedA.
#include "kernels/x86/act_avx512.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/lanes_avx512.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

namespace {

// The 16 float16 values at h, widened.
inline __m512 widen16(const uint16_t* h) { return widenHalf(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h))); }

// kP A panels (kP * kMR rows: panel q at a + q * a_stride) by kCols = 16 (one zmm per row, B panel b0) or 32
// (two, B panels b0 and b1 = b0 + kc*kNR) columns; kDirect: B row k at p.b + p.b_off[k] (kCols floats), or with
// kHalf at p.bh + p.b_off[k] (kCols float16 values, widened exactly as they are loaded).
// Only the first `rows` rows of C are read (kLoadC), biased (kRowBias) and stored.
template <int kP, int kCols, bool kDirect, bool kHalf = false>
inline void tile(const MicroArgs& p, const float* a, float* c, uint16_t* ch, const float* row_bias,
                 int rows = kP * kMR) {
  constexpr int kV = kCols / 16;
  constexpr int kR = kP * kMR;
  __m512 acc[kR][kV];
  const int64_t ldc = p.ldc;
  switch (p.init) {
    case TileInit::kZero:
      for (int i = 0; i < kR; ++i)
        for (int v = 0; v < kV; ++v) acc[i][v] = _mm512_setzero_ps();
      break;
    case TileInit::kRowBias:
      for (int i = 0; i < kR; ++i)
        for (int v = 0; v < kV; ++v) acc[i][v] = _mm512_set1_ps(i < rows ? row_bias[i] : 0.0f);
      break;
    case TileInit::kColBias:
      for (int i = 0; i < kR; ++i)
        for (int v = 0; v < kV; ++v) acc[i][v] = _mm512_loadu_ps(p.bias + 16 * v);
      break;
    default:
      for (int i = 0; i < kR; ++i)
        for (int v = 0; v < kV; ++v) acc[i][v] = i < rows ? _mm512_loadu_ps(c + i * ldc + 16 * v) : _mm512_setzero_ps();
      break;
  }
  const float* b0 = p.b;  // packed panels (not kDirect: with kHalf, p.b is null)
  const float* b1 = kDirect ? nullptr : p.b + p.kc * kNR;
  const float* a1 = a + p.a_stride;
  const int64_t* b_off = p.b_off;
  for (int64_t k = 0; k < p.kc; ++k) {
    __m512 bv[kV];
    if constexpr (kHalf) {
      const uint16_t* br = p.bh + b_off[k];
      if (p.b_prefetch != 0) _mm_prefetch(reinterpret_cast<const char*>(br + p.b_prefetch), _MM_HINT_T0);
      bv[0] = widen16(br);
      if constexpr (kV == 2) bv[1] = widen16(br + 16);
    } else if constexpr (kDirect) {
      const float* br = p.b + b_off[k];
      if (p.b_prefetch != 0) {
        _mm_prefetch(reinterpret_cast<const char*>(br + p.b_prefetch), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(br + p.b_prefetch + 16), _MM_HINT_T0);
      }
      bv[0] = _mm512_loadu_ps(br);
      if constexpr (kV == 2) bv[1] = _mm512_loadu_ps(br + 16);
    } else {
      bv[0] = _mm512_load_ps(b0);
      if constexpr (kV == 2) bv[1] = _mm512_load_ps(b1);
    }
#pragma GCC unroll 12
    for (int i = 0; i < kR; ++i) {
      const __m512 av = _mm512_set1_ps(i < kMR ? a[i] : a1[i - kMR]);
#pragma GCC unroll 2
      for (int v = 0; v < kV; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
    }
    a += kMR;
    a1 += kMR;
    if constexpr (!kDirect) {
      b0 += kNR;
      b1 += kNR;
    }
  }
  if (p.act != nullptr && p.act->kind != ActKind::kNone) {
    const Act16 f(*p.act);
    for (int i = 0; i < kR; ++i)
      for (int v = 0; v < kV; ++v) acc[i][v] = f.apply(acc[i][v]);
  }
  if (p.ch != nullptr) {
    for (int i = 0; i < kR; ++i) {
      if (i >= rows) break;
      for (int v = 0; v < kV; ++v) storeHalf16(ch + i * p.ldch + 16 * v, acc[i][v]);
    }
    return;
  }
  for (int i = 0; i < kR; ++i) {
    if (i >= rows) break;
    for (int v = 0; v < kV; ++v) _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
  }
}

// With p.tall, pairs of A panels through the 12-row tile; the rest through the 6-row one; a last panel with
// p.mr_last < kMR rows stores only those.
template <int kCols, bool kDirect, bool kHalf = false>
inline void tiles(const MicroArgs& p) {
  const float* a = p.a;
  float* c = p.c;
  uint16_t* ch = p.ch;  // stepped only when set
  const float* bias = p.bias;
  const bool row_bias = p.init == TileInit::kRowBias;
  const int64_t full = p.mr_last < kMR ? p.panels - 1 : p.panels;
  int64_t i = 0;
  for (; p.tall && i + 2 <= full; i += 2) {
    tile<2, kCols, kDirect, kHalf>(p, a, c, ch, bias);
    a += 2 * p.a_stride;
    c += 2 * kMR * p.ldc;
    if (ch != nullptr) ch += 2 * kMR * p.ldch;
    if (row_bias) bias += 2 * kMR;
  }
  for (; i < full; ++i) {
    tile<1, kCols, kDirect, kHalf>(p, a, c, ch, bias);
    a += p.a_stride;
    c += kMR * p.ldc;
    if (ch != nullptr) ch += kMR * p.ldch;
    if (row_bias) bias += kMR;
  }
  if (full < p.panels) tile<1, kCols, kDirect, kHalf>(p, a, c, ch, bias, static_cast<int>(p.mr_last));
}

}  // namespace

void f32_gemm__avx512_6x16(const MicroArgs& p) {
  if (p.b_off != nullptr && p.bh != nullptr) tiles<16, true, true>(p);
  else if (p.b_off != nullptr) tiles<16, true>(p);
  else tiles<16, false>(p);
}
void f32_gemm__avx512_6x32(const MicroArgs& p) {
  if (p.b_off != nullptr && p.bh != nullptr) tiles<32, true, true>(p);
  else if (p.b_off != nullptr) tiles<32, true>(p);
  else tiles<32, false>(p);
}

}  // namespace npuc::kernels::detail
