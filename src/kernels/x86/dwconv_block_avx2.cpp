// Channel-blocked depthwise convolution (compiled with -mavx2 -mfma): eight channels side by side, vectorised across
// channels — every lane does useful work whatever the plane's width, and every tap is one aligned vector load.
//
// f32_dwconv_pack8__avx2 transposes eight channel planes into a zero-padded interleaved block (8x8 register
// transposes); f32_dwconv_block8__avx2 computes eight output pixels of a row at a time (eight fma chains), applies
// the activation and transposes them back into the eight output planes. Per output: bias, then the taps in
// row-major order, one fma each, +0 from the padding — the reference's operations in its order.
#include "kernels/x86/act_avx2.hpp"
#include "kernels/x86/kernel_table.hpp"

#include <immintrin.h>

#include <algorithm>

namespace npuc::kernels::detail {

namespace {

// In place: r[i] lane j becomes r[j] lane i.
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Eight output pixels (ow0 .. ow0+7 of row oh; the first n stored) of the block's channels.
template <bool kFull>
void pixels8(const DwBlockArgs& p, const Act8& f, int64_t oh, int64_t ow0, int64_t n) {
  __m256 acc[8];
  const __m256 bias = _mm256_loadu_ps(p.bias);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) acc[j] = bias;
  const int64_t step = p.sw * 8;
  const float* wt = p.w;
  for (int64_t ki = 0; ki < p.kh; ++ki) {
    const float* row = p.xt + ((oh * p.sh + ki * p.dh) * p.wp + ow0 * p.sw) * 8;
    for (int64_t kj = 0; kj < p.kw; ++kj, wt += 8) {
      const __m256 w = _mm256_loadu_ps(wt);
      const float* x = row + kj * p.dw * 8;
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(w, _mm256_load_ps(x + j * step), acc[j]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) acc[j] = f.apply(acc[j]);
  transpose8(acc);  // acc[c]: channel c's eight pixels
  float* y = p.y + oh * p.out_w + ow0;
  if constexpr (kFull) {
    for (int c = 0; c < p.channels; ++c) _mm256_storeu_ps(y + c * p.y_plane, acc[c]);
  } else {
    const __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int c = 0; c < p.channels; ++c) _mm256_maskstore_ps(y + c * p.y_plane, mask, acc[c]);
  }
}

}  // namespace

void f32_dwconv_pack8__avx2(const DwPackArgs& p) {
  // Missing channels (channels < 8) read channel 0 again: their lanes are computed and never stored.
  const float* planes[8];
  for (int c = 0; c < 8; ++c) planes[c] = p.x + (c < p.channels ? c : 0) * p.x_plane;
  const int64_t plane = p.in_h * p.in_w;
  for (int64_t h = 0; h < p.in_h; ++h) {
    float* dst = p.xt + ((h + p.ph) * p.wp + p.pw) * 8;
    const int64_t off = h * p.in_w;
    int64_t w = 0;
    for (; w + 8 <= p.in_w; w += 8) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(planes[c] + off + w);
      transpose8(r);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) _mm256_store_ps(dst + (w + j) * 8, r[j]);
    }
    if (w == p.in_w) continue;
    if (plane >= 8) {
      // The last columns of the row: a whole vector ending inside the plane, transposed, and only the wanted
      // pixels stored (the vector may start in this row or the previous one).
      const int64_t start = std::min(off + w, plane - 8);
      const int64_t shift = off + w - start;
      __m256 r[8];
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(planes[c] + start);
      transpose8(r);
      for (int64_t j = 0; w + j < p.in_w; ++j) _mm256_store_ps(dst + (w + j) * 8, r[shift + j]);
    } else {
      for (; w < p.in_w; ++w) {
        for (int c = 0; c < 8; ++c) dst[w * 8 + c] = planes[c][off + w];
      }
    }
  }
}

void f32_dwconv_block8__avx2(const DwBlockArgs& p) {
  const Act8 f(*p.act);
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    int64_t ow = 0;
    for (; ow + 8 <= p.out_w; ow += 8) pixels8<true>(p, f, oh, ow, 8);
    if (ow < p.out_w) pixels8<false>(p, f, oh, ow, p.out_w - ow);
  }
}

}  // namespace npuc::kernels::detail
