// AVX-512 plane kernel of the fast pooling (x86/pool.cpp) for the 3-column stride-2 max pools of CNNs (3x3
// stride 2; column dilation 1): it reads the input plane in place — no padded, phase-split copy — and splits each
// 32 input columns into their even and odd columns with two vpermt2ps (npuc_kernels_bench maxpool/*: 0.19 ->
// 0.09 ms on SqueezeNet's first pool). Other pools go to the AVX2 kernel (2x2 stride 2 on a 416x416 plane was
// 10% slower this way: that one is bound by reading the input).
//
// Same bits as the reference: the reference folds the window's taps in row-major order with
// `acc = v > acc ? v : acc` from -inf, which keeps the first tap holding the largest value and ignores NaNs. So
// folding each window row from -inf and then folding those row results (in row order) gives the same bits, and
// padding taps (-inf, or rows and columns outside the input) change nothing. _mm512_max_ps(v, acc) is exactly
// `v > acc ? v : acc` (it returns its second operand when either is NaN or both are zero). Masked loads fill the
// columns outside the input with -inf without touching memory there; masked stores write only the row's outputs.
// Compiled with -mavx512f -mavx512vl; called only when the CPU has them.
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/lanes_avx512.hpp"

#include <immintrin.h>

#include <cstdint>
#include <limits>

namespace npuc::kernels::detail {

namespace {

// The full-mask forms of vmaxps and valignd (see lanes_avx512.hpp).
inline __m512 vmax(__m512 v, __m512 acc) { return _mm512_mask_max_ps(acc, 0xFFFF, v, acc); }
/// Lanes 1..15 of lo, then lane 0 of hi.
inline __m512 shiftIn(__m512 lo, __m512 hi) {
  const __m512i l = _mm512_castps_si512(lo);
  return _mm512_castsi512_ps(_mm512_mask_alignr_epi32(l, 0xFFFF, _mm512_castps_si512(hi), l, 1));
}

/// out[oh * out_w + ow] over the window rows oh * sh - pt + kh * dh and columns 2 * ow - pl + {0, 1, 2}.
/// When two output rows share a window row (sh = 2, kh = 3, dh = 1: 3x3 stride 2), they go in pairs and the
/// shared row is folded once.
void maxStride2x3(const PoolPlaneArgs& a) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t W = a.in_w, H = a.in_h;
  const bool pairs = a.sh == 2 && a.kh == 3 && a.dh == 1;
  for (int64_t oh = 0; oh < a.out_h;) {
    const bool pair = pairs && oh + 1 < a.out_h;
    float* out = a.y + oh * a.out_w;
    for (int64_t ow0 = 0; ow0 < a.out_w; ow0 += 16) {
      const int64_t c0 = 2 * ow0 - a.pl;
      const __mmask16 m_lo = inside(c0, W), m_hi = inside(c0 + 16, W);
      const bool last_in = c0 + 32 >= 0 && c0 + 32 < W;
      // Input row ih folded over the block's windows (-inf outside the input: such taps change nothing).
      auto row_max = [&](int64_t ih) {
        if (ih < 0 || ih >= H) return ninf;
        const float* row = a.x + ih * W + c0;  // may point before the row: only in-row lanes are read
        const __m512 lo = _mm512_mask_loadu_ps(ninf, m_lo, row), hi = _mm512_mask_loadu_ps(ninf, m_hi, row + 16);
        const __m512 e = _mm512_permutex2var_ps(lo, even, hi);  // columns c0, c0 + 2, ..., c0 + 30
        const __m512 o = _mm512_permutex2var_ps(lo, odd, hi);   // columns c0 + 1, ..., c0 + 31
        const __m512 next = last_in ? _mm512_set1_ps(row[32]) : ninf;  // column c0 + 32 in lane 0
        return vmax(shiftIn(e, next), vmax(o, vmax(e, ninf)));         // shiftIn: columns c0 + 2, ..., c0 + 32
      };
      const __mmask16 m_out = firstLanes(a.out_w - ow0);
      const int64_t ih0 = oh * a.sh - a.pt;
      if (pair) {
        const __m512 h0 = row_max(ih0), h1 = row_max(ih0 + 1), h2 = row_max(ih0 + 2);
        const __m512 h3 = row_max(ih0 + 3), h4 = row_max(ih0 + 4);
        _mm512_mask_storeu_ps(out + ow0, m_out, vmax(h2, vmax(h1, vmax(h0, ninf))));
        _mm512_mask_storeu_ps(out + a.out_w + ow0, m_out, vmax(h4, vmax(h3, vmax(h2, ninf))));
        continue;
      }
      __m512 acc = ninf;
      for (int64_t kh = 0; kh < a.kh; ++kh) acc = vmax(row_max(ih0 + kh * a.dh), acc);
      _mm512_mask_storeu_ps(out + ow0, m_out, acc);
    }
    oh += pair ? 2 : 1;
  }
}

}  // namespace

bool f32_pool_in_place__avx512(const PoolPlaneArgs& a) { return a.is_max && a.sw == 2 && a.dw == 1 && a.kw == 3; }

void f32_pool_plane__avx512(const PoolPlaneArgs& a) {
  if (f32_pool_in_place__avx512(a)) return maxStride2x3(a);
  f32_pool_plane__avx2(a);
}

}  // namespace npuc::kernels::detail
