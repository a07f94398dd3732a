// AVX-512 plane kernels of the fast pooling (x86/pool.cpp) for max pools, reading the input plane in place — no
// padded, phase-split copy:
// - 2 or 3 columns at stride 2 (3x3 / 2x2 stride 2): each 32 input columns split into their even and odd columns
//   with two vpermt2ps (npuc_kernels_bench maxpool/*: 0.19 -> 0.09 ms on SqueezeNet's first pool);
// - stride-1 columns (GoogLeNet's 3x3 stride 1 pad 1 branch pools, tiny-YOLOv2's last 2x2 one): 16 outputs of a
//   row per vector, one masked load per tap, four output rows at a time (npuc_kernels_bench, 1 thread:
//   maxpool/googlenet_branch4_3x3s1p1_192x28 0.13 -> 0.07 ms, _512x14 0.13 -> 0.05; the AVX2 kernel spent most of
//   its time on the copy, on rows of 28 in vectors of 8 and on one max chain per vector).
// Other pools go to the AVX2 kernel.
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

/// out[oh * out_w + ow] over the window rows oh * sh - pt + kh * dh and columns 2 * ow - pl + {0, .., KW - 1}
/// (KW = 2 or 3). When two output rows share a window row (sh = 2, kh = 3, dh = 1: 3x3 stride 2), they go in pairs
/// and the shared row is folded once.
template <int KW>
void maxStride2(const PoolPlaneArgs& a) {
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
      const bool last_in = KW == 3 && c0 + 32 >= 0 && c0 + 32 < W;
      // Input row ih folded over the block's windows (-inf outside the input: such taps change nothing).
      auto row_max = [&](int64_t ih) {
        if (ih < 0 || ih >= H) return ninf;
        const float* row = a.x + ih * W + c0;  // may point before the row: only in-row lanes are read
        const __m512 lo = _mm512_mask_loadu_ps(ninf, m_lo, row), hi = _mm512_mask_loadu_ps(ninf, m_hi, row + 16);
        const __m512 e = _mm512_permutex2var_ps(lo, even, hi);  // columns c0, c0 + 2, ..., c0 + 30
        const __m512 o = _mm512_permutex2var_ps(lo, odd, hi);   // columns c0 + 1, ..., c0 + 31
        if constexpr (KW == 2) return vmax(o, vmax(e, ninf));
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

// The stride-1 kernel's bound on taps per window row.
constexpr int64_t kS1MaxKw = 8;

/// Stride-1 columns: out[oh * out_w + ow] over the window rows oh * sh - pt + kh * dh and columns ow - pl + kw * dw
/// (kw <= kS1MaxKw), taps folded in row-major order; rows outside the input skipped (-inf taps change nothing).
/// Column strips of 16 outputs, four output rows at a time where their windows lie inside the input (four
/// independent max chains). KW > 0 fixes the window's width at compile time.
template <int KW>
void maxStride1(const PoolPlaneArgs& a) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t kw_n = KW > 0 ? KW : a.kw;
  const int64_t nv = (a.out_w + 15) / 16;
  const int64_t next_window = a.sh * a.in_w;  // from one output row's window to the next one's
  for (int64_t v = 0; v < nv; ++v) {
    __mmask16 m_in[kS1MaxKw];  // lanes of tap kw inside the row
    for (int64_t kw = 0; kw < kw_n; ++kw) m_in[kw] = inside(16 * v - a.pl + kw * a.dw, a.in_w);
    const __mmask16 m_out = firstLanes(a.out_w - 16 * v);
    const float* col = a.x + 16 * v - a.pl;  // only in-row lanes are read
    float* out = a.y + 16 * v;
    for (int64_t oh = 0; oh < a.out_h;) {
      const int64_t ih0 = oh * a.sh - a.pt;
      if (oh + 4 <= a.out_h && ih0 >= 0 && ih0 + 3 * a.sh + (a.kh - 1) * a.dh < a.in_h) {
        __m512 acc[4] = {ninf, ninf, ninf, ninf};
        for (int64_t kh = 0; kh < a.kh; ++kh) {
          const float* row = col + (ih0 + kh * a.dh) * a.in_w;
          for (int64_t kw = 0; kw < kw_n; ++kw)
            for (int r = 0; r < 4; ++r)
              acc[r] = vmax(_mm512_mask_loadu_ps(ninf, m_in[kw], row + r * next_window + kw * a.dw), acc[r]);
        }
        for (int r = 0; r < 4; ++r) _mm512_mask_storeu_ps(out + (oh + r) * a.out_w, m_out, acc[r]);
        oh += 4;
        continue;
      }
      __m512 acc = ninf;
      for (int64_t kh = 0; kh < a.kh; ++kh) {
        const int64_t ih = ih0 + kh * a.dh;
        if (ih < 0 || ih >= a.in_h) continue;
        const float* row = col + ih * a.in_w;
        for (int64_t kw = 0; kw < kw_n; ++kw) acc = vmax(_mm512_mask_loadu_ps(ninf, m_in[kw], row + kw * a.dw), acc);
      }
      _mm512_mask_storeu_ps(out + oh * a.out_w, m_out, acc);
      ++oh;
    }
  }
}

}  // namespace

bool f32_pool_in_place__avx512(const PoolPlaneArgs& a) {
  if (!a.is_max) return false;
  if (a.sw == 2) return a.dw == 1 && (a.kw == 3 || a.kw == 2);
  return a.sw == 1 && a.kw <= kS1MaxKw;
}

void f32_pool_plane__avx512(const PoolPlaneArgs& a) {
  if (!f32_pool_in_place__avx512(a)) return f32_pool_plane__avx2(a);
  if (a.sw == 2) return a.kw == 3 ? maxStride2<3>(a) : maxStride2<2>(a);
  if (a.kw == 3) return maxStride1<3>(a);
  if (a.kw == 2) return maxStride1<2>(a);
  maxStride1<0>(a);
}

}  // namespace npuc::kernels::detail
