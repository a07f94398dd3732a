// Channel-blocked depthwise convolution (compiled with -mavx2 -mfma): eight channels side by side, vectorised across
// channels — every lane does useful work whatever the plane's width, and every tap is one aligned vector load.
//
// f32_dwconv_pack8__avx2 transposes eight channel planes into a zero-padded interleaved block (8x8 register
// transposes); f32_dwconv_block8__avx2 computes eight output pixels of a row at a time (eight fma chains), applies
// the activation and transposes them back into the eight output planes. Per output: bias, then the taps in
// row-major order, one fma each, +0 from the padding — the reference's operations in its order.
//
// float16 tensors (fp16 packages; compiled with -mf16c too): the pack widens the planes as it reads them (vcvtph2ps
// is exact; it quiets a signalling NaN, which the first fma would do anyway, so the results' bits are those of
// halfToFloat's), and the block rounds its results to float16 as it stores them (vcvtps2ph, round to nearest even;
// eight values holding an Inf or NaN go through floatToHalf, whose NaN payloads the hardware does not keep).
#include "kernels/x86/act_avx2.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/store_avx2.hpp"
#include "support/fp16.hpp"

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

inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline float load1(const float* p) { return *p; }
inline float load1(const uint16_t* p) { return halfToFloat(*p); }

// v rounded to float16 with floatToHalf's bits.
inline __m128i toHalf8(__m256 v) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
  if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, absmask), inf, _CMP_NLT_UQ))) {  // Inf or NaN
    alignas(32) float f[8];
    alignas(16) uint16_t h[8];
    _mm256_store_ps(f, v);
    for (int k = 0; k < 8; ++k) h[k] = floatToHalf(f[k]);
    return _mm_load_si128(reinterpret_cast<const __m128i*>(h));
  }
  return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// Stores the first n (1..8) pixels of each channel's vector.
inline void storePixels(const DwBlockArgs& p, int64_t at, const __m256 v[8], int64_t n) {
  if (p.yh != nullptr) {
    for (int c = 0; c < p.channels; ++c) {
      const __m128i h = toHalf8(v[c]);
      uint16_t* y = p.yh + c * p.y_plane + at;
      if (n == 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y), h);
      } else {
        alignas(16) uint16_t t[8];
        _mm_store_si128(reinterpret_cast<__m128i*>(t), h);
        for (int64_t j = 0; j < n; ++j) y[j] = t[j];
      }
    }
    return;
  }
  float* y = p.y + at;
  if (n == 8) {
    for (int c = 0; c < p.channels; ++c) _mm256_storeu_ps(y + c * p.y_plane, v[c]);
  } else {
    for (int c = 0; c < p.channels; ++c) storeFirst(y + c * p.y_plane, v[c], n);
  }
}

// Eight output pixels (ow0 .. ow0+7 of row oh; the first n stored) of the block's channels.
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
  storePixels(p, oh * p.out_w + ow0, acc, n);
}

template <class T>
void pack8(const DwPackArgs& p, const T* x) {
  // Missing channels (channels < 8) read channel 0 again: their lanes are computed and never stored.
  const T* planes[8];
  for (int c = 0; c < 8; ++c) planes[c] = x + (c < p.channels ? c : 0) * p.x_plane;
  const int64_t plane = p.in_h * p.in_w;
  for (int64_t h = 0; h < p.in_h; ++h) {
    float* dst = p.xt + ((h + p.ph) * p.wp + p.pw) * 8;
    const int64_t off = h * p.in_w;
    int64_t w = 0;
    for (; w + 8 <= p.in_w; w += 8) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) r[c] = load8(planes[c] + off + w);
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
      for (int c = 0; c < 8; ++c) r[c] = load8(planes[c] + start);
      transpose8(r);
      for (int64_t j = 0; w + j < p.in_w; ++j) _mm256_store_ps(dst + (w + j) * 8, r[shift + j]);
    } else {
      for (; w < p.in_w; ++w) {
        for (int c = 0; c < 8; ++c) dst[w * 8 + c] = load1(planes[c] + off + w);
      }
    }
  }
}

}  // namespace

void f32_dwconv_pack8__avx2(const DwPackArgs& p) {
  if (p.xh != nullptr) pack8(p, p.xh);
  else pack8(p, p.x);
}

void f32_dwconv_block8__avx2(const DwBlockArgs& p) {
  const Act8 f(*p.act);
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    int64_t ow = 0;
    for (; ow + 8 <= p.out_w; ow += 8) pixels8(p, f, oh, ow, 8);
    if (ow < p.out_w) pixels8(p, f, oh, ow, p.out_w - ow);
  }
}

}  // namespace npuc::kernels::detail
