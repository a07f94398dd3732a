// AVX2 plane kernel of the fast pooling (x86/pool.cpp) over the padded copy (max pools of up to 8 columns at
// stride 1, and of 2 or 3 at stride 2, read their input in place instead: x86/pool_max_avx2.cpp): 8 outputs of a
// row per vector (plain loads: the plane is split into column phases), four vectors (anywhere in the plane) in flight so the max / add chains overlap, taps
// combined in the reference's row-major order.
// _mm256_max_ps(v, acc) is exactly `v > acc ? v : acc` (it returns its second operand when either is NaN or both
// are zero); sums add one tap at a time. The last, partial vector of a row stores only its lanes (storeFirst).
// Compiled with -mavx2 -mfma; called only when the CPU has them.
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/store_avx2.hpp"

#include <immintrin.h>

#include <cstdint>
#include <limits>

namespace npuc::kernels::detail {

namespace {

/// One vector of outputs: the window's top-left tap and where the results go (lanes: 8, or fewer for the row's
/// last, partial vector).
struct Block {
  const float* base;
  float* out;
  int64_t lanes;
};

/// kN blocks at once; KH, KW > 0 fix the window at compile time (0: taken from `a`). col_off[kw]: where tap kw
/// of output 0 lies in the phase-split row.
template <bool kMax, int kN, int KH, int KW>
inline void blocks(const PoolPlaneArgs& a, const int64_t* col_off, const Block* blk) {
  const int64_t kh_n = KH > 0 ? KH : a.kh, kw_n = KW > 0 ? KW : a.kw;
  const int64_t row_step = a.dh * a.row_stride;
  __m256 acc[kN];
  for (int i = 0; i < kN; ++i) acc[i] = _mm256_set1_ps(kMax ? -std::numeric_limits<float>::infinity() : 0.0f);
  for (int64_t kh = 0; kh < kh_n; ++kh)
    for (int64_t kw = 0; kw < kw_n; ++kw) {
      const int64_t off = kh * row_step + col_off[kw];
      for (int i = 0; i < kN; ++i) {
        const __m256 v = _mm256_loadu_ps(blk[i].base + off);
        acc[i] = kMax ? _mm256_max_ps(v, acc[i]) : _mm256_add_ps(acc[i], v);
      }
    }
  for (int i = 0; i < kN; ++i) storeFirst(blk[i].out, acc[i], blk[i].lanes);
}

/// Walks the plane's output vectors row by row, four at a time (across rows when rows are short).
template <bool kMax, int KH, int KW>
void plane(const PoolPlaneArgs& a, const int64_t* col_off) {
  const int64_t nb = (a.out_w + 7) / 8;
  const int64_t last = a.out_w - (nb - 1) * 8;  // lanes of the row's last vector
  const int64_t row_step = a.sh * a.row_stride;
  Block q[4];
  int n = 0;
  for (int64_t oh = 0; oh < a.out_h; ++oh) {
    const float* row = a.xp + oh * row_step;
    float* out = a.y + oh * a.out_w;
    for (int64_t ob = 0; ob < nb; ++ob) {
      q[n++] = Block{row + ob * 8, out + ob * 8, ob == nb - 1 ? last : 8};
      if (n == 4) {
        blocks<kMax, 4, KH, KW>(a, col_off, q);
        n = 0;
      }
    }
  }
  for (int i = 0; i < n; ++i) blocks<kMax, 1, KH, KW>(a, col_off, q + i);
}

/// The phase-split copy for stride 2: 16 input columns -> 8 even and 8 odd ones per step.
void copyPlaneStride2(const PoolPlaneArgs& a) {
  for (int64_t h = 0; h < a.in_h; ++h) {
    float* row = a.xp + (a.pt + h) * a.row_stride;
    const float* src = a.x + h * a.in_w;
    // Column c = pl + w goes to phase c % 2, index c / 2: with pl even, w even -> phase 0; else swapped.
    float* ev = row + (a.pl % 2) * a.phase_stride + (a.pl + 1) / 2 - (a.pl % 2);  // w = 0, 2, 4, ...
    float* od = row + ((a.pl + 1) % 2) * a.phase_stride + (a.pl + 1) / 2;          // w = 1, 3, 5, ...
    int64_t w = 0, j = 0;
    for (; w + 16 <= a.in_w; w += 16, j += 8) {
      const __m256 lo = _mm256_loadu_ps(src + w), hi = _mm256_loadu_ps(src + w + 8);
      const __m256 e = _mm256_shuffle_ps(lo, hi, 0x88), o = _mm256_shuffle_ps(lo, hi, 0xDD);
      _mm256_storeu_ps(ev + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8)));
      _mm256_storeu_ps(od + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), 0xD8)));
    }
    for (int64_t i = w; i < a.in_w; i += 2) ev[i / 2] = src[i];
    for (int64_t i = w + 1; i < a.in_w; i += 2) od[i / 2] = src[i];
  }
}

template <bool kMax>
void planeFor(const PoolPlaneArgs& a) {
  if (a.kw > 16) return f32_pool_plane__scalar(a);  // wide windows: the portable kernel (it copies the plane too)
  if (a.sw == 2) copyPlaneStride2(a);
  else poolCopyPlane(a);
  int64_t col_off[16];
  for (int64_t kw = 0; kw < a.kw; ++kw) col_off[kw] = (kw * a.dw) % a.sw * a.phase_stride + (kw * a.dw) / a.sw;
  if (a.kh == 3 && a.kw == 3) return plane<kMax, 3, 3>(a, col_off);
  if (a.kh == 2 && a.kw == 2) return plane<kMax, 2, 2>(a, col_off);
  plane<kMax, 0, 0>(a, col_off);
}

}  // namespace

void f32_pool_plane__avx2(const PoolPlaneArgs& a) {
  if (f32_pool_in_place__avx2(a)) return f32_max_pool_in_place__avx2(a);  // x86/pool_max_avx2.cpp
  if (a.is_max) planeFor<true>(a);
  else planeFor<false>(a);
}

}  // namespace npuc::kernels::detail
