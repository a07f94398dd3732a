// Depthwise convolution plane kernel f32_dwconv2d__avx2 (compiled with -mavx2 -mfma): vectorised across output
// width, R output rows x V vectors of 8 outputs per pass (R*V <= 8 independent fma chains), any kernel size,
// stride and dilation (the driver hands over a padded, phase-split input plane, so every tap is a plain load).
#include "kernels/x86/act_avx2.hpp"
#include "kernels/x86/kernel_table.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

namespace {

struct Pass {
  const float* x;    // input base of output (oh0, v0*8)
  float* y;          // output of (oh0, v0*8)
  int64_t x_row;     // input floats between consecutive output rows
  int64_t y_row;     // output floats between consecutive output rows
  int64_t tail;      // lanes valid in the pass's last vector (1..8)
};

template <int R, int V>
void dwPass(const DwPlaneArgs& p, const Pass& s, const Act8& f, __m256i tail_mask) {
  __m256 acc[R][V];
  const __m256 bias = _mm256_set1_ps(p.bias);
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < V; ++v) acc[r][v] = bias;
  }
  for (int64_t t = 0; t < p.taps; ++t) {
    const __m256 w = _mm256_broadcast_ss(p.w + t);
    const float* x = s.x + p.tap_off[t];
    for (int r = 0; r < R; ++r) {
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + r * s.x_row + v * 8), acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float* y = s.y + r * s.y_row;
    for (int v = 0; v < V; ++v) {
      const __m256 o = f.apply(acc[r][v]);
      if (v == V - 1 && s.tail != 8) {
        _mm256_maskstore_ps(y + v * 8, tail_mask, o);
      } else {
        _mm256_storeu_ps(y + v * 8, o);
      }
    }
  }
}

using PassFn = void (*)(const DwPlaneArgs&, const Pass&, const Act8&, __m256i);

template <int R>
PassFn passFor(int v) {
  if constexpr (R == 1) {
    switch (v) {
      case 1: return dwPass<1, 1>;
      case 2: return dwPass<1, 2>;
      case 3: return dwPass<1, 3>;
      case 4: return dwPass<1, 4>;
      case 5: return dwPass<1, 5>;
      case 6: return dwPass<1, 6>;
      case 7: return dwPass<1, 7>;
      default: return dwPass<1, 8>;
    }
  } else if constexpr (R == 2) {
    switch (v) {
      case 1: return dwPass<2, 1>;
      case 2: return dwPass<2, 2>;
      case 3: return dwPass<2, 3>;
      default: return dwPass<2, 4>;
    }
  } else if constexpr (R <= 4) {
    return v == 1 ? dwPass<R, 1> : dwPass<R, 2>;
  } else {
    return dwPass<R, 1>;
  }
}

PassFn choosePass(int r, int v) {
  switch (r) {
    case 1: return passFor<1>(v);
    case 2: return passFor<2>(v);
    case 3: return passFor<3>(v);
    case 4: return passFor<4>(v);
    case 5: return passFor<5>(v);
    case 6: return passFor<6>(v);
    case 7: return passFor<7>(v);
    default: return passFor<8>(v);
  }
}

}  // namespace

void f32_dwconv2d__avx2(const DwPlaneArgs& p) {
  if (p.out_h <= 0 || p.out_w <= 0) return;
  const Act8 f(*p.act);
  const int64_t nvec = (p.out_w + 7) / 8;
  const int64_t pieces = (nvec + 7) / 8;
  const int64_t vstep = (nvec + pieces - 1) / pieces;  // vectors per pass (1..8)
  const int64_t rstep = 8 / vstep;                     // rows per pass
  const int64_t last_lanes = p.out_w - (nvec - 1) * 8;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i tail_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(last_lanes)), lane);
  Pass s;
  s.x_row = p.sh * p.row_stride;
  s.y_row = p.out_w;
  for (int64_t oh = 0; oh < p.out_h; oh += rstep) {
    const int r = static_cast<int>(p.out_h - oh < rstep ? p.out_h - oh : rstep);
    for (int64_t v0 = 0; v0 < nvec; v0 += vstep) {
      const int v = static_cast<int>(nvec - v0 < vstep ? nvec - v0 : vstep);
      s.x = p.xq + oh * s.x_row + v0 * 8;
      s.y = p.y + oh * p.out_w + v0 * 8;
      s.tail = v0 + v == nvec ? last_lanes : 8;
      choosePass(r, v)(p, s, f, tail_mask);
    }
  }
}

}  // namespace npuc::kernels::detail
