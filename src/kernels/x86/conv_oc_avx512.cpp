// AVX-512 direct convolution vectorised across output channels (compiled with -mavx512f -mavx512vl -mavx512bw):
// f32_conv_oc__avx512. A register tile holds up to 14 output pixels of one output row by 32 output channels
// (28 zmm accumulators); per tap it loads 32 packed weights and broadcasts one input value per pixel, so nothing is
// packed per call and no lane computes a pixel that is not there (the pixel-vectorised direct path computes the
// padding columns of each row; im2col packs every input element once per tap). The tile is transposed in registers
// (16 x 16 blocks) and stored as rows of the NCHW output. One fma per tap per output, taps in the reference order:
// the bits of conv_ref.
#include "kernels/x86/act_avx512.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/lanes_avx512.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

namespace {

constexpr int kMaxPixels = 14;

// Full-mask forms of the shuffles (GCC 12's unmasked ones pass an undefined merge source: lanes_avx512.hpp).
inline __m512 unpackLo(__m512 a, __m512 b) { return _mm512_maskz_unpacklo_ps(0xFFFF, a, b); }
inline __m512 unpackHi(__m512 a, __m512 b) { return _mm512_maskz_unpackhi_ps(0xFFFF, a, b); }
inline __m512 unpackLo64(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, _mm512_castps_pd(a), _mm512_castps_pd(b)));
}
inline __m512 unpackHi64(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, _mm512_castps_pd(a), _mm512_castps_pd(b)));
}
template <int kImm>
inline __m512 lanes128(__m512 a, __m512 b) {
  return _mm512_maskz_shuffle_f32x4(0xFFFF, a, b, kImm);
}

// Transposes the 16 x 16 block rows r[0..15] (row i: 16 floats) into columns: on return r[j] holds element j of
// every input row, row i in lane i.
inline void transpose16(__m512 r[16]) {
  __m512 a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = unpackLo(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = unpackHi(r[2 * i], r[2 * i + 1]);
  }
  // Rows 4g..4g+3: b[4g + j] holds, in 128-bit lane L, element 4L + j of the four rows.
  for (int g = 0; g < 4; ++g) {
    b[4 * g] = unpackLo64(a[4 * g], a[4 * g + 2]);
    b[4 * g + 1] = unpackHi64(a[4 * g], a[4 * g + 2]);
    b[4 * g + 2] = unpackLo64(a[4 * g + 1], a[4 * g + 3]);
    b[4 * g + 3] = unpackHi64(a[4 * g + 1], a[4 * g + 3]);
  }
  // Lanes 0 and 2 (0x88) or 1 and 3 (0xDD) of each operand, twice: element j, 8 + j (even), 4 + j, 12 + j (odd).
  for (int j = 0; j < 4; ++j) {
    const __m512 even0 = lanes128<0x88>(b[j], b[4 + j]), even1 = lanes128<0x88>(b[8 + j], b[12 + j]);
    const __m512 odd0 = lanes128<0xDD>(b[j], b[4 + j]), odd1 = lanes128<0xDD>(b[8 + j], b[12 + j]);
    r[j] = lanes128<0x88>(even0, even1);
    r[8 + j] = lanes128<0xDD>(even0, even1);
    r[4 + j] = lanes128<0x88>(odd0, odd1);
    r[12 + j] = lanes128<0xDD>(odd0, odd1);
  }
}

// kP pixels (columns ow.. of output row oh, input stride kS) by 16 * kV output channels.
template <int kP, int kS, int kV>
void tile(const ConvOcArgs& p, int64_t oh, int64_t ow) {
  __m512 acc[kP][kV];
  for (int v = 0; v < kV; ++v) {
    const __m512 b0 = p.bias != nullptr ? _mm512_loadu_ps(p.bias + 16 * v) : _mm512_setzero_ps();
    for (int i = 0; i < kP; ++i) acc[i][v] = b0;
  }
  const float* xb = p.xq + oh * p.sh * p.wq + ow * kS;
  const float* w = p.w;
  for (int64_t k = 0; k < p.K; ++k, w += kOcBlock) {
    const float* xr = xb + p.off[k];
    const __m512 w0 = _mm512_loadu_ps(w);
    const __m512 w1 = kV == 2 ? _mm512_loadu_ps(w + 16) : w0;
#pragma GCC unroll 14
    for (int i = 0; i < kP; ++i) {
      const __m512 xv = _mm512_set1_ps(xr[i * kS]);
      acc[i][0] = _mm512_fmadd_ps(w0, xv, acc[i][0]);
      if constexpr (kV == 2) acc[i][1] = _mm512_fmadd_ps(w1, xv, acc[i][1]);
    }
  }
  if (p.act != nullptr && p.act->kind != ActKind::kNone) {
    const Act16 f(*p.act);
    for (int i = 0; i < kP; ++i)
      for (int v = 0; v < kV; ++v) acc[i][v] = f.apply(acc[i][v]);
  }
  const __mmask16 lanes = firstLanes(kP);
  const int64_t at = oh * p.out_w + ow;
  for (int v = 0; v < kV; ++v) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) r[i] = i < kP ? acc[i][v] : _mm512_setzero_ps();
    transpose16(r);
    const int n = p.channels - 16 * v < 16 ? p.channels - 16 * v : 16;
    if (p.yh != nullptr) {
      uint16_t* yh = p.yh + 16 * v * p.y_plane + at;
      for (int j = 0; j < n; ++j) storeHalf16(yh + j * p.y_plane, r[j], lanes);
    } else {
      float* y = p.y + 16 * v * p.y_plane + at;
      for (int j = 0; j < n; ++j) _mm512_mask_storeu_ps(y + j * p.y_plane, lanes, r[j]);
    }
  }
}

template <int kS, int kV>
void tileOf(int pixels, const ConvOcArgs& p, int64_t oh, int64_t ow) {
  switch (pixels) {
    case 1: return tile<1, kS, kV>(p, oh, ow);
    case 2: return tile<2, kS, kV>(p, oh, ow);
    case 3: return tile<3, kS, kV>(p, oh, ow);
    case 4: return tile<4, kS, kV>(p, oh, ow);
    case 5: return tile<5, kS, kV>(p, oh, ow);
    case 6: return tile<6, kS, kV>(p, oh, ow);
    case 7: return tile<7, kS, kV>(p, oh, ow);
    case 8: return tile<8, kS, kV>(p, oh, ow);
    case 9: return tile<9, kS, kV>(p, oh, ow);
    case 10: return tile<10, kS, kV>(p, oh, ow);
    case 11: return tile<11, kS, kV>(p, oh, ow);
    case 12: return tile<12, kS, kV>(p, oh, ow);
    case 13: return tile<13, kS, kV>(p, oh, ow);
    default: return tile<14, kS, kV>(p, oh, ow);
  }
}

template <int kS, int kV>
void rows(const ConvOcArgs& p) {
  // Each row in equal tiles of at most kMaxPixels (55 -> 14, 14, 14, 13): the fewest tiles, none narrow.
  const int64_t tiles = (p.out_w + kMaxPixels - 1) / kMaxPixels;
  const int64_t base = p.out_w / tiles, wider = p.out_w % tiles;
  for (int64_t oh = p.oh0; oh < p.oh1; ++oh) {
    int64_t ow = 0;
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t n = base + (t < wider ? 1 : 0);
      tileOf<kS, kV>(static_cast<int>(n), p, oh, ow);
      ow += n;
    }
  }
}

}  // namespace

void f32_conv_oc__avx512(const ConvOcArgs& p) {
  if (p.out_w <= 0 || p.channels <= 0) return;
  const bool two = p.channels > 16;
  if (p.sw == 1) two ? rows<1, 2>(p) : rows<1, 1>(p);
  else two ? rows<2, 2>(p) : rows<2, 1>(p);
}

}  // namespace npuc::kernels::detail
