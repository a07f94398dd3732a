// AVX2 plane kernels of the fast pooling (x86/pool.cpp) for max pools, reading the input plane in place — no
// padded, phase-split copy (the AVX-512 kernels of pool_avx512.cpp in 8-lane form):
// - 2 or 3 columns at stride 2 (3x3 / 2x2 stride 2): 16 input columns split into even and odd ones with one
//   vshufps each, left in its lane order ([0 2 8 10 | 4 6 12 14]) through the window's taps and rows (max is lane
//   by lane) and put in column order once, before the store; the third column's taps (columns 2, 4, ..., 16) are
//   the even columns of the 16 from column 2. Two output rows sharing a window row (3x3 stride 2) go in pairs and
//   the shared row is folded once.
// - stride-1 columns (GoogLeNet's 3x3 stride 1 pad 1 branch pools, tiny-YOLOv2's last 2x2 one): 8 outputs of a
//   row per vector, one load per tap, four output rows at a time where their windows lie inside the input.
// The copy, and rows of 14 or 28 in vectors of 8 over a padded plane, were most of the portable plane kernel's
// time (npuc_kernels_bench maxpool/*; figures in docs/kernels.md).
//
// Same bits as the reference: it folds the window's taps in row-major order with `acc = v > acc ? v : acc` from
// -inf, which keeps the first tap holding the largest value and ignores NaNs; so folding each window row from -inf
// and then those row results in row order gives the same bits, and taps outside the input (-inf) change nothing.
// _mm256_max_ps(v, acc) is exactly `v > acc ? v : acc` (its second operand when either is NaN or both are zero).
// Vectors whose taps all lie inside the row use plain loads; the others vmaskmovps (no access to masked-off
// lanes) with -inf blended into the lanes outside the row. Partial vectors are stored in 16-, 8- and 4-byte pieces
// (storeFirst: no vmaskmovps store).
// Compiled with -mavx2 -mfma; called only when the CPU has them.
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/store_avx2.hpp"

#include <immintrin.h>

#include <cstdint>
#include <limits>

namespace npuc::kernels::detail {

namespace {

/// All-ones in lane j when 0 <= c + j < w.
inline __m256i insideRow(int64_t c, int64_t w) {
  const __m256i col = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(c)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_and_si256(_mm256_cmpgt_epi32(col, _mm256_set1_epi32(-1)),
                          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(w)), col));
}

/// 8 floats at p; lanes off m: -inf, and not read (p may point outside the row there). kEdge false: all inside.
template <bool kEdge>
inline __m256 load8(const float* p, __m256i m) {
  if constexpr (!kEdge) return _mm256_loadu_ps(p);
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  return _mm256_blendv_ps(ninf, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}

inline __m256 vmax(__m256 v, __m256 acc) { return _mm256_max_ps(v, acc); }

/// Lane order of the stride-2 split ([0 2 8 10 | 4 6 12 14] of 16 columns) back to column order.
inline __m256 inColumnOrder(__m256 v) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
}

/// Output rows oh (and oh + 1 when `pair`) over the 8 columns from ow0 at stride 2 (first input column
/// c0 = 2 * ow0 - pl). Pairs: two output rows whose windows share a row (3x3 stride 2), the shared row folded once.
template <int KW, bool kEdge>
void stride2Block(const PoolPlaneArgs& a, int64_t oh, bool pair, int64_t ow0) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t W = a.in_w, H = a.in_h, c0 = 2 * ow0 - a.pl;
  const __m256i m_lo = insideRow(c0, W), m_hi = insideRow(c0 + 8, W);  // unused (and dropped) when !kEdge
  const __m256i m_lo2 = insideRow(c0 + 2, W), m_hi2 = insideRow(c0 + 10, W);
  const int64_t lanes = a.out_w - ow0 < 8 ? a.out_w - ow0 : 8;
  // Input row ih folded over the block's windows, in the split's lane order (-inf outside the input).
  auto row_max = [&](int64_t ih) {
    if (ih < 0 || ih >= H) return ninf;
    const float* row = a.x + ih * W + c0;  // may point before the row: then only in-row lanes are read
    const __m256 lo = load8<kEdge>(row, m_lo), hi = load8<kEdge>(row + 8, m_hi);
    const __m256 e = _mm256_shuffle_ps(lo, hi, 0x88), o = _mm256_shuffle_ps(lo, hi, 0xDD);
    if constexpr (KW == 2) return vmax(o, vmax(e, ninf));
    const __m256 lo2 = load8<kEdge>(row + 2, m_lo2), hi2 = load8<kEdge>(row + 10, m_hi2);
    return vmax(_mm256_shuffle_ps(lo2, hi2, 0x88), vmax(o, vmax(e, ninf)));
  };
  float* out = a.y + oh * a.out_w + ow0;
  const int64_t ih0 = oh * a.sh - a.pt;
  if (pair) {
    const __m256 h0 = row_max(ih0), h1 = row_max(ih0 + 1), h2 = row_max(ih0 + 2);
    const __m256 h3 = row_max(ih0 + 3), h4 = row_max(ih0 + 4);
    storeFirst(out, inColumnOrder(vmax(h2, vmax(h1, vmax(h0, ninf)))), lanes);
    storeFirst(out + a.out_w, inColumnOrder(vmax(h4, vmax(h3, vmax(h2, ninf)))), lanes);
    return;
  }
  __m256 acc = ninf;
  for (int64_t kh = 0; kh < a.kh; ++kh) acc = vmax(row_max(ih0 + kh * a.dh), acc);
  storeFirst(out, inColumnOrder(acc), lanes);
}

/// Row by row (large planes are read in order), column blocks inside.
template <int KW>
void maxStride2(const PoolPlaneArgs& a) {
  const int64_t span = KW == 3 ? 18 : 16;  // input columns a block reads from c0
  const bool pairs = a.sh == 2 && a.kh == 3 && a.dh == 1;
  for (int64_t oh = 0; oh < a.out_h;) {
    const bool pair = pairs && oh + 1 < a.out_h;
    for (int64_t ow0 = 0; ow0 < a.out_w; ow0 += 8) {
      const int64_t c0 = 2 * ow0 - a.pl;
      if (c0 >= 0 && c0 + span <= a.in_w) stride2Block<KW, false>(a, oh, pair, ow0);
      else stride2Block<KW, true>(a, oh, pair, ow0);
    }
    oh += pair ? 2 : 1;
  }
}

// The stride-1 kernel's bound on taps per window row.
constexpr int64_t kS1MaxKw = 8;

/// Stride-1 columns, the 8 outputs from ow0 of every output row: out[oh * out_w + ow] over the window rows
/// oh * sh - pt + kh * dh and columns ow - pl + kw * dw, taps folded in row-major order; rows outside the input
/// skipped. Four output rows at a time where their windows lie inside the input (four independent max chains), one
/// at a time at its edges. KW > 0 fixes the window's width.
template <int KW, bool kEdge>
void stride1Column(const PoolPlaneArgs& a, int64_t ow0) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t kw_n = KW > 0 ? KW : a.kw;
  __m256i m_in[kS1MaxKw] = {};  // lanes of tap kw inside the row (unused when !kEdge)
  if constexpr (kEdge)
    for (int64_t kw = 0; kw < kw_n; ++kw) m_in[kw] = insideRow(ow0 - a.pl + kw * a.dw, a.in_w);
  const int64_t lanes = a.out_w - ow0 < 8 ? a.out_w - ow0 : 8;
  const float* col = a.x + ow0 - a.pl;  // only in-row lanes are read
  float* out = a.y + ow0;
  const int64_t next_window = a.sh * a.in_w;  // from one output row's window to the next one's
  for (int64_t oh = 0; oh < a.out_h;) {
    const int64_t ih0 = oh * a.sh - a.pt;
    if (oh + 4 <= a.out_h && ih0 >= 0 && ih0 + 3 * a.sh + (a.kh - 1) * a.dh < a.in_h) {
      __m256 acc[4] = {ninf, ninf, ninf, ninf};
      for (int64_t kh = 0; kh < a.kh; ++kh) {
        const float* row = col + (ih0 + kh * a.dh) * a.in_w;
        for (int64_t kw = 0; kw < kw_n; ++kw)
          for (int r = 0; r < 4; ++r) acc[r] = vmax(load8<kEdge>(row + r * next_window + kw * a.dw, m_in[kw]), acc[r]);
      }
      for (int r = 0; r < 4; ++r) storeFirst(out + (oh + r) * a.out_w, acc[r], lanes);
      oh += 4;
      continue;
    }
    __m256 acc = ninf;
    for (int64_t kh = 0; kh < a.kh; ++kh) {
      const int64_t ih = ih0 + kh * a.dh;
      if (ih < 0 || ih >= a.in_h) continue;
      const float* row = col + ih * a.in_w;
      for (int64_t kw = 0; kw < kw_n; ++kw) acc = vmax(load8<kEdge>(row + kw * a.dw, m_in[kw]), acc);
    }
    storeFirst(out + oh * a.out_w, acc, lanes);
    ++oh;
  }
}

/// Column by column (the planes of stride-1 pools in networks are small: 28x28 and less in GoogLeNet, 13x13 in
/// tiny-YOLOv2; row by row was 1.5x slower on them).
template <int KW>
void maxStride1(const PoolPlaneArgs& a) {
  const int64_t span = 8 + ((KW > 0 ? KW : a.kw) - 1) * a.dw;  // input columns a block reads from ow0 - pl
  for (int64_t ow0 = 0; ow0 < a.out_w; ow0 += 8) {
    const int64_t c0 = ow0 - a.pl;
    if (c0 >= 0 && c0 + span <= a.in_w) stride1Column<KW, false>(a, ow0);
    else stride1Column<KW, true>(a, ow0);
  }
}

}  // namespace

bool f32_pool_in_place__avx2(const PoolPlaneArgs& a) {
  // Column indices (up to sw * out_w + (kw - 1) * dw + 18 from -pl) are formed in 32-bit lanes.
  if (!a.is_max || a.pl + a.in_w + a.sw * (a.out_w + 16) + (a.kw - 1) * a.dw > INT32_MAX) return false;
  if (a.sw == 2) return a.dw == 1 && (a.kw == 3 || a.kw == 2);
  return a.sw == 1 && a.kw <= kS1MaxKw;
}

void f32_max_pool_in_place__avx2(const PoolPlaneArgs& a) {
  if (a.sw == 2) return a.kw == 3 ? maxStride2<3>(a) : maxStride2<2>(a);
  if (a.kw == 3) return maxStride1<3>(a);
  if (a.kw == 2) return maxStride1<2>(a);
  maxStride1<0>(a);
}

}  // namespace npuc::kernels::detail
