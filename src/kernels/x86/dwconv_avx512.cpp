// AVX-512 depthwise convolution, stride 1 with output rows as wide as the input's (x86/conv.cpp,
// runDepthwiseInPlace): it reads each channel plane where it lies — no padded copy, no channel interleaving, no
// transposes. The plane is flat, so tap (ki, kj) of 16 consecutive outputs is 16 consecutive inputs (offset
// (ki - ph) * W + kj - pw); vectors may span rows, so narrow planes (7x7, 14x14) keep their lanes busy. The driver's
// per-tap masks (one per 16 outputs) make the masked loads give +0 at every tap outside the input without touching
// memory there, so each output is still bias, then one fma per tap in row-major order (padding taps included) — the
// reference's operations in its order, the same bits. npuc_kernels_bench, 1 thread, against the channel-blocked
// AVX2 kernel: MobileNetV2's 144 channels at 56x56 0.77x, 576 at 14x14 0.73x, 960 at 7x7 0.72x.
//
// Four vectors of a plane go at once (four independent fma chains: the fma latency would stall a single one).
// Stride 2 stays on the channel-blocked kernel: an in-place version splitting each row's 32 columns into even and
// odd with vpermt2ps ran at the blocked kernel's speed on 112x112 planes and 1.7x slower on 14x14 ones.
// float16 tensors (fp16 packages) are read and written here too: masked 16-bit loads widened exactly (vcvtph2ps),
// results rounded as they are stored.
// Compiled with -mavx512f -mavx512vl -mavx512bw; called only when the CPU has them.
#include "kernels/x86/act_avx512.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/lanes_avx512.hpp"
#include "support/fp16.hpp"

#include <immintrin.h>

#include <cstdint>

namespace npuc::kernels::detail {

namespace {

constexpr int kU = 4;  // vectors in flight

// The 16 values at p of lanes k, widened (float16: exactly), +0 in the other lanes; memory outside k untouched.
inline __m512 loadLanes(__mmask16 k, const float* p) { return _mm512_maskz_loadu_ps(k, p); }
inline __m512 loadLanes(__mmask16 k, const uint16_t* p) {
  return widenHalf(_mm256_maskz_loadu_epi16(k, p));
}

// Stores lanes k of v at p; float16: rounded with floatToHalf's bits (vcvtps2ph rounds to nearest even as it does;
// a vector holding an Inf or NaN goes through floatToHalf, whose NaN payloads the hardware does not keep).
inline void storeLanes(float* p, __mmask16 k, __m512 v) { _mm512_mask_storeu_ps(p, k, v); }
inline void storeLanes(uint16_t* p, __mmask16 k, __m512 v) {
  const __m512 inf = _mm512_castsi512_ps(_mm512_set1_epi32(0x7f800000));
  const __m512 mag = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
  if (_mm512_cmp_ps_mask(mag, inf, _CMP_NLT_UQ) != 0) {
    alignas(64) float f[16];
    _mm512_store_ps(f, v);
    for (int l = 0; l < 16; ++l)
      if (k >> l & 1) p[l] = floatToHalf(f[l]);
    return;
  }
  _mm256_mask_storeu_epi16(p, k, roundHalf(v));
}

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
    int64_t v = 0;
    for (; v + kU <= nvec; v += kU) vectors.template operator()<kU>(v);
    switch (nvec - v) {
      case 3: vectors.template operator()<3>(v); break;
      case 2: vectors.template operator()<2>(v); break;
      case 1: vectors.template operator()<1>(v); break;
      default: break;
    }
  }
}

template <class In, class Out>
void planes(const DwInPlaceArgs& a, const In* x, Out* y) {
  if (a.kh == 3 && a.kw == 3) planes<3>(a, x, y);
  else planes<0>(a, x, y);
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
