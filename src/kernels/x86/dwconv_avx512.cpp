// AVX-512 depthwise convolution, stride 1 with output rows as wide as the input's, or stride 2 (x86/conv_depthwise.cpp,
// runDepthwiseInPlace): it reads each channel plane where it lies — no padded copy, no channel interleaving, no
// transposes. The plane is flat, so tap (ki, kj) of 16 consecutive outputs is 16 consecutive inputs (offset
// (ki - ph) * W + kj - pw); vectors may span rows, so narrow planes (7x7, 14x14) keep their lanes busy. The driver's
// per-tap masks (one per 16 outputs) make the masked loads give +0 at every tap outside the input without touching
// memory there, so each output is still bias, then one fma per tap in row-major order (padding taps included) — the
// reference's operations in its order, the same bits. npuc_kernels_bench, 1 thread, against the channel-blocked
// AVX2 kernel: MobileNetV2's 144 channels at 56x56 0.77x, 576 at 14x14 0.73x, 960 at 7x7 0.72x.
//
// Four vectors of a plane go at once (four independent fma chains: the fma latency would stall a single one).
// Stride 2 goes row by row: 16 outputs of a row read 32 consecutive inputs per tap pair, split into even and odd
// lanes with vpermt2ps; column masks (the same for every row) give +0 outside the row, rows outside the plane read
// a zero row; four output rows at once, row groups outer so the plane is read top to bottom once. Against the
// channel-blocked kernel (1 thread): MobileNetV2's 96 channels at 112x112 0.8x, 144 at 56x56 0.75x, 192 at 28x28
// 0.65x; 576 at 14x14 (7 outputs per row, half the lanes idle) 1.25x, so narrow rows stay channel-blocked.
// float16 tensors (fp16 packages) are read and written here too: masked 16-bit loads widened exactly (vcvtph2ps),
// results rounded as they are stored.
// Compiled with -mavx512f -mavx512vl -mavx512bw; called only when the CPU has them.
#include "kernels/x86/act_avx512.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/lanes_avx512.hpp"

#include <immintrin.h>

#include <cstdint>

namespace npuc::kernels::detail {

namespace {

constexpr int kU = 4;  // vectors in flight

// Calls f.operator()<U>(i) for i = 0, kU, 2kU, ... with U = kU, and once more with U = the 1..kU-1 items left.
template <class F>
inline void inGroups(int64_t n, const F& f) {
  int64_t i = 0;
  for (; i + kU <= n; i += kU) f.template operator()<kU>(i);
  switch (n - i) {
    case 3: f.template operator()<3>(i); break;
    case 2: f.template operator()<2>(i); break;
    case 1: f.template operator()<1>(i); break;
    default: break;
  }
}

// The 16 values at p of lanes k, widened (float16: exactly), +0 in the other lanes; memory outside k untouched.
inline __m512 loadLanes(__mmask16 k, const float* p) { return _mm512_maskz_loadu_ps(k, p); }
inline __m512 loadLanes(__mmask16 k, const uint16_t* p) {
  return widenHalf(_mm256_maskz_loadu_epi16(k, p));
}

// Stores lanes k of v at p; float16: rounded with floatToHalf's bits (storeHalf16).
inline void storeLanes(float* p, __mmask16 k, __m512 v) { _mm512_mask_storeu_ps(p, k, v); }
inline void storeLanes(uint16_t* p, __mmask16 k, __m512 v) { storeHalf16(p, v, k); }

// U consecutive vectors of one plane's flat output: `in` is tap (0, 0) of the first, m its masks.
template <int kK, int U, class In, class Out>
inline void flatVectors(const In* in, int64_t W, int64_t kh, int64_t kw, const uint16_t* m, const float* wt,
                        float bias, const Act16& f, Out* out, int64_t left) {
  if constexpr (kK > 0) kh = kK, kw = kK;
  const int64_t taps = kh * kw;
  // Opaque to the optimiser: else GCC keeps one induction pointer per tap and vector, and spills them.
  asm("" : "+r"(in), "+r"(m));
  __m512 acc[U];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) acc[u] = _mm512_set1_ps(bias);
#pragma GCC unroll 16
  for (int64_t ki = 0; ki < kh; ++ki) {
    const In* row = in + ki * W;
#pragma GCC unroll 16
    for (int64_t kj = 0; kj < kw; ++kj) {
      const int64_t t = ki * kw + kj;
      const __m512 w = _mm512_set1_ps(wt[t]);
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) acc[u] = _mm512_fmadd_ps(w, loadLanes(m[u * taps + t], row + u * 16 + kj), acc[u]);
    }
  }
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) storeLanes(out + u * 16, firstLanes(left - u * 16), f.apply(acc[u]));
}

// kK: the kernel's side when both are kK (the taps unrolled), 0 for any kh x kw.
template <int kK, class In, class Out>
void planes(const DwInPlaceArgs& a, const In* x, Out* y) {
  const int64_t kh = kK > 0 ? kK : a.kh, kw = kK > 0 ? kK : a.kw, taps = kh * kw;
  const int64_t n = a.out_h * a.out_w, W = a.in_w;
  const int64_t nvec = (n + 15) / 16;
  const Act16 f(*a.act);
  for (int64_t p = 0; p < a.planes; ++p) {
    const In* in = x + p * a.x_plane - a.ph * W - a.pw;  // tap (0, 0) of output 0; may point before the plane
    Out* out = y + p * a.y_plane;
    const float* wt = a.w + p * taps;
    const float bias = a.bias[p];
    auto vectors = [&]<int U>(int64_t v) {
      flatVectors<kK, U>(in + v * 16, W, kh, kw, a.masks + v * taps, wt, bias, f, out + v * 16, n - v * 16);
    };
    inGroups(nvec, vectors);
  }
}

// Zeros for the rows above and below the input (stride 2): read with the same column masks as a real row.
template <class In>
const In* zeroRow() {
  alignas(64) static const In zeros[64] = {};
  return zeros;
}

// Stride 2: output rows oh0 .. oh0 + U - 1, their j-th 16 outputs, at once (U independent fma chains; the same
// column masks m). Row ki of an output row reads input columns from 32j - pw on in pairs of vectors (first,
// first + 16), starting 2q further for taps 2q and 2q + 1: the even lanes of the pair are tap 2q's inputs, the odd
// ones tap 2q + 1's (vpermt2ps). Rows above and below the input read zeros.
template <int kK, int U, class In, class Out>
inline void s2Rows(const DwInPlaceArgs& a, const In* x, Out* y, int64_t oh0, int64_t j, const __mmask16* m,
                   const float* wt, float bias, const Act16& f) {
  const int64_t kh = kK > 0 ? kK : a.kh, kw = kK > 0 ? kK : a.kw;
  const int64_t W = a.in_w, col = 32 * j - a.pw;
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  __m512 acc[U];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) acc[u] = _mm512_set1_ps(bias);
#pragma GCC unroll 16
  for (int64_t ki = 0; ki < kh; ++ki) {
    const In* r[U];
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const int64_t ih = 2 * (oh0 + u) + ki - a.ph;
      r[u] = ih >= 0 && ih < a.in_h ? x + ih * W + col : zeroRow<In>();
    }
#pragma GCC unroll 8
    for (int64_t q = 0; 2 * q < kw; ++q) {
      const __m512 w0 = _mm512_set1_ps(wt[ki * kw + 2 * q]);
      __m512 lo[U], hi[U];
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) {
        lo[u] = loadLanes(m[2 * q], r[u] + 2 * q);
        hi[u] = loadLanes(m[2 * q + 1], r[u] + 2 * q + 16);
        acc[u] = _mm512_fmadd_ps(w0, _mm512_permutex2var_ps(lo[u], even, hi[u]), acc[u]);
      }
      if (2 * q + 1 < kw) {
        const __m512 w1 = _mm512_set1_ps(wt[ki * kw + 2 * q + 1]);
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) acc[u] = _mm512_fmadd_ps(w1, _mm512_permutex2var_ps(lo[u], odd, hi[u]), acc[u]);
      }
    }
  }
  const __mmask16 out = firstLanes(a.out_w - 16 * j);
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) storeLanes(y + (oh0 + u) * a.out_w + 16 * j, out, f.apply(acc[u]));
}

template <int kK, class In, class Out>
void planesS2(const DwInPlaceArgs& a, const In* x, Out* y) {
  const int64_t kw = kK > 0 ? kK : a.kw, taps = kK > 0 ? kK * kK : a.kh * a.kw, pairs = kw / 2 + 1;
  const int64_t nv = (a.out_w + 15) / 16, OH = a.out_h;
  const Act16 f(*a.act);
  for (int64_t p = 0; p < a.planes; ++p) {
    const In* xp = x + p * a.x_plane;
    Out* yp = y + p * a.y_plane;
    const float* wt = a.w + p * taps;
    const float bias = a.bias[p];
    // Row groups outer, column blocks inner: the plane is read from top to bottom once.
    auto rows = [&]<int U>(int64_t oh) {
      for (int64_t j = 0; j < nv; ++j) {
        __mmask16 m[2 * (kDwInPlaceMaxK / 2 + 1)];
        for (int64_t i = 0; i < 2 * pairs; ++i) m[i] = a.masks[j * pairs * 2 + i];
        s2Rows<kK, U>(a, xp, yp, oh, j, m, wt, bias, f);
      }
    };
    inGroups(OH, rows);
  }
}

template <class In, class Out>
void planes(const DwInPlaceArgs& a, const In* x, Out* y) {
  if (a.stride == 2) {
    if (a.kh == 3 && a.kw == 3) planesS2<3>(a, x, y);
    else planesS2<0>(a, x, y);
  } else if (a.kh == 3 && a.kw == 3) {
    planes<3>(a, x, y);
  } else {
    planes<0>(a, x, y);
  }
}

}  // namespace

void f32_dwconv_in_place__avx512(const DwInPlaceArgs& a) {
  if (a.xh != nullptr) {
    if (a.yh != nullptr) planes(a, a.xh, a.yh);
    else planes(a, a.xh, a.y);
  } else {
    if (a.yh != nullptr) planes(a, a.x, a.yh);
    else planes(a, a.x, a.y);
  }
}

}  // namespace npuc::kernels::detail
