// Channel-blocked depthwise convolution (compiled with -mavx2 -mfma): eight channels side by side, vectorised across
// channels — every lane does useful work whatever the plane's width, and every tap is one aligned vector load.
//
// f32_dwconv_pack8__avx2 transposes eight channel planes into a zero-padded interleaved block (8x8 register
// transposes); f32_dwconv_block8__avx2 computes eight output pixels of a row at a time (eight fma chains), applies
// the activation and transposes them back into the eight output planes (or stores them as they are: a
// channel-blocked output, DwBlockArgs::yb). Per output: bias, then the taps in
// row-major order, one fma each, +0 from the padding — the reference's operations in its order.
//
// float16 tensors (fp16 packages; compiled with -mf16c too): the pack widens the planes as it reads them (vcvtph2ps
// is exact; it quiets a signalling NaN, which the first fma would do anyway, so the results' bits are those of
// halfToFloat's), and the block rounds its results to float16 as it stores them (vcvtps2ph, round to nearest even;
// eight values holding an Inf or NaN go through floatToHalf, whose NaN payloads the hardware does not keep).
#include "kernels/x86/act_avx2.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/lanes_avx2.hpp"
#include "kernels/x86/store_avx2.hpp"
#include "support/fp16.hpp"

#include <immintrin.h>

#include <algorithm>

namespace npuc::kernels::detail {

namespace {

inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline float load1(const float* p) { return *p; }
inline float load1(const uint16_t* p) { return halfToFloat(*p); }

// Stores the first n (1..8) pixels of each channel's vector.
inline void storePixels(const DwBlockArgs& p, int64_t at, const __m256 v[8], int64_t n) {
  if (p.yh != nullptr) {
    for (int c = 0; c < p.channels; ++c) {
      storeFirstHalves(p.yh + c * p.y_plane + at, toHalf8(v[c]), n);
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

// Eight output pixels (ow0 .. ow0+7 of row oh; the first n stored) of the block's channels. KH, KW > 0: the window's
// size fixed at compile time (the tap loops unrolled); 0: p.kh, p.kw. SW > 0 (with KH, KW; column dilation 1): each
// input pixel of a window row loaded once and used for every output and tap that reads it (the row's weights in
// registers) — for each output still the taps in row-major order, one fma each.
template <int KH, int KW, int SW>
void pixels8(const DwBlockArgs& p, const Act8& f, int64_t oh, int64_t ow0, int64_t n) {
  __m256 acc[8];
  const __m256 bias = _mm256_loadu_ps(p.bias);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) acc[j] = bias;
  const float* wt = p.w;
  if constexpr (SW > 0) {
    for (int ki = 0; ki < KH; ++ki, wt += KW * 8) {
      const float* row = p.xt + ((oh * p.sh + ki * p.dh) * p.wp + ow0 * SW) * 8;
      __m256 w[KW];
#pragma GCC unroll 5
      for (int kj = 0; kj < KW; ++kj) w[kj] = _mm256_loadu_ps(wt + kj * 8);
#pragma GCC unroll 32
      for (int c = 0; c < 7 * SW + KW; ++c) {  // input pixel c of the row feeds output (c - kj) / SW through tap kj
        const __m256 v = _mm256_load_ps(row + c * 8);
#pragma GCC unroll 5
        for (int kj = 0; kj < KW; ++kj) {
          const int d = c - kj;
          if (d >= 0 && d % SW == 0 && d / SW < 8) acc[d / SW] = _mm256_fmadd_ps(w[kj], v, acc[d / SW]);
        }
      }
    }
  } else {
    const int64_t step = p.sw * 8;
    const int64_t kh = KH > 0 ? KH : p.kh, kw = KW > 0 ? KW : p.kw;
#pragma GCC unroll 5
    for (int64_t ki = 0; ki < kh; ++ki) {
      const float* row = p.xt + ((oh * p.sh + ki * p.dh) * p.wp + ow0 * p.sw) * 8;
#pragma GCC unroll 5
      for (int64_t kj = 0; kj < kw; ++kj, wt += 8) {
        const __m256 w = _mm256_loadu_ps(wt);
        const float* x = row + kj * p.dw * 8;
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(w, _mm256_load_ps(x + j * step), acc[j]);
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) acc[j] = f.apply(acc[j]);
  if (p.yb != nullptr) {
    // Channel-blocked output: each pixel's eight channels as they are.
    float* yb = p.yb + (oh * p.out_w + ow0) * 8;
    for (int64_t j = 0; j < n; ++j) _mm256_storeu_ps(yb + j * 8, acc[j]);
    return;
  }
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
  if (p.xb != nullptr) {
    // Channel-blocked already: each row's pixels copied as they are.
    for (int64_t h = 0; h < p.in_h; ++h) {
      float* dst = p.xt + ((h + p.ph) * p.wp + p.pw) * 8;
      const float* src = p.xb + h * p.in_w * 8;
      for (int64_t w = 0; w < p.in_w; ++w) _mm256_store_ps(dst + w * 8, _mm256_loadu_ps(src + w * 8));
    }
    return;
  }
  if (p.xh != nullptr) pack8(p, p.xh);
  else pack8(p, p.x);
}

namespace {
template <int KH, int KW, int SW>
void rows8(const DwBlockArgs& p) {
  const Act8 f(*p.act);
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    int64_t ow = 0;
    for (; ow + 8 <= p.out_w; ow += 8) pixels8<KH, KW, SW>(p, f, oh, ow, 8);
    if (ow < p.out_w) pixels8<KH, KW, SW>(p, f, oh, ow, p.out_w - ow);
  }
}

template <int K>
void rowsKxK(const DwBlockArgs& p) {
  if (p.dw == 1 && p.sw == 1) rows8<K, K, 1>(p);
  else if (p.dw == 1 && p.sw == 2) rows8<K, K, 2>(p);
  else rows8<K, K, 0>(p);
}
}  // namespace

void f32_dwconv_block8__avx2(const DwBlockArgs& p) {
  if (p.kh == 3 && p.kw == 3) rowsKxK<3>(p);
  else if (p.kh == 5 && p.kw == 5) rowsKxK<5>(p);
  else rows8<0, 0, 0>(p);
}

}  // namespace npuc::kernels::detail
