// Fast variants of maxPool2d / avgPool2d (kernels/layers.hpp): the same bits as the reference (ref/layers_ref.cpp).
//
// Max pools that a table's in-place kernel takes (KernelTable::pool_in_place: AVX2 and AVX-512, stride 1 up to 8
// columns, 2 or 3 columns at stride 2) read each plane where it lies. Otherwise each plane is copied into a scratch plane padded on every side (and past the last window) with a neutral value
// — -inf for max, +0 for sums — and split into sw column phases (column c of a row goes to phase c % sw at
// c / sw), so every output reads all kh x kw taps at fixed offsets, consecutive outputs at consecutive addresses,
// and a plane kernel
// (kernels/x86/kernel_table.hpp: PoolPlaneKernel) computes several outputs a vector at a time without bounds
// checks. Neutral taps change nothing: `v > m ? v : m` keeps m when v = -inf (for every m, NaN included), and
// x + (+0) = x for every x but -0, which a sum that starts at +0 never is; each output still sees its taps in
// row-major order. The margins are written once per scratch buffer; each plane only overwrites the interior.
// MaxPool with a folded pad value (pad_value > -inf) runs the reference.
#include "kernels/layers.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/ref/pool_geom.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace npuc::kernels {

namespace detail {

/// Copies the input plane into the phase-split padded plane (rows pt.., columns pl..).
void poolCopyPlane(const PoolPlaneArgs& p) {
  const int64_t sw = p.sw;
  for (int64_t h = 0; h < p.in_h; ++h) {
    float* row = p.xp + (p.pt + h) * p.row_stride;
    const float* src = p.x + h * p.in_w;
    if (sw == 1) {
      std::memcpy(row + p.pl, src, static_cast<size_t>(p.in_w) * sizeof(float));
      continue;
    }
    for (int64_t w = 0; w < p.in_w; ++w) {
      const int64_t c = p.pl + w;
      row[(c % sw) * p.phase_stride + c / sw] = src[w];
    }
  }
}

void f32_pool_plane__scalar(const PoolPlaneArgs& p) {
  poolCopyPlane(p);
  for (int64_t oh = 0; oh < p.out_h; ++oh)
    for (int64_t ow = 0; ow < p.out_w; ++ow) {
      float acc = p.is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
      for (int64_t kh = 0; kh < p.kh; ++kh)
        for (int64_t kw = 0; kw < p.kw; ++kw) {
          const int64_t c = kw * p.dw;
          const float v = p.xp[(oh * p.sh + kh * p.dh) * p.row_stride + (c % p.sw) * p.phase_stride + ow + c / p.sw];
          acc = p.is_max ? (v > acc ? v : acc) : acc + v;
        }
      p.y[oh * p.out_w + ow] = acc;
    }
}

}  // namespace detail

namespace {

// xh / yh: float16 input / output instead of x / y (each plane widened into, or rounded from, a local plane).
void pool2dFast(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool, bool is_max,
                const uint16_t* xh = nullptr, uint16_t* yh = nullptr) {
  const int64_t W = s.iw, H = s.ih, OW = s.ow, OH = s.oh;
  // Padded plane: row r, column c hold input (r - pt, c - pl), at phase c % sw, index c / sw. Reads reach phase
  // index roundup(OW, 8) - 1 + ((kw - 1) * dw) / sw and row (OH - 1) * sh + (kh - 1) * dh.
  const int64_t sw = s.sw;
  const int64_t ow_round = (OW + 7) / 8 * 8;
  const int64_t PS = std::max((s.pl + W + sw - 1) / sw, ow_round + ((s.kw - 1) * s.dw) / sw);  // phase length
  const int64_t PW = PS * sw;  // row stride
  const int64_t PH = std::max(s.pt + H, OH > 0 ? (OH - 1) * s.sh + (s.kh - 1) * s.dh + 1 : 0);
  const float neutral = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
  const detail::KernelTable& kt = detail::activeKernels();
  const detail::PoolPlaneKernel kernel = kt.pool_plane;
  const int64_t in_plane = H * W, out_plane = OH * OW;
  // AvgPool: each output's divisor (the reference's tap count), the same for every plane.
  std::vector<float> divisor;
  if (!is_max) {
    divisor.resize(static_cast<size_t>(out_plane));
    const bool inc = s.count_include_pad;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t ih0 = oh * s.sh - s.pt;
      int64_t khl, khh;
      detail::tapRange(ih0, s.kh, s.dh, H, khl, khh);
      const int64_t rows_counted = inc ? detail::paddedTaps(ih0, s.kh, s.dh, H, s.pt, s.pb) : khh - khl;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t iw0 = ow * s.sw - s.pl;
        int64_t kwl, kwh;
        detail::tapRange(iw0, s.kw, s.dw, W, kwl, kwh);
        const int64_t n = rows_counted * (inc ? detail::paddedTaps(iw0, s.kw, s.dw, W, s.pl, s.pr) : kwh - kwl);
        divisor[static_cast<size_t>(oh * OW + ow)] = static_cast<float>(n);  // 0: the output is 0
      }
    }
  }
  auto divide = [&](float* plane) {  // as the reference: sum / count, or 0 when no tap counts
    for (int64_t i = 0; i < out_plane; ++i) {
      const float n = divisor[static_cast<size_t>(i)];
      plane[i] = n != 0.0f ? plane[i] / n : 0.0f;
    }
  };
  detail::parallelUnits(pool, s.planes, out_plane * s.kh * s.kw, [&](int64_t pb, int64_t pe) {
    detail::PoolPlaneArgs a;
    a.row_stride = PW, a.phase_stride = PS;
    a.kh = s.kh, a.kw = s.kw, a.sh = s.sh, a.sw = s.sw, a.dh = s.dh, a.dw = s.dw;
    a.out_h = OH, a.out_w = OW;
    a.is_max = is_max;
    a.in_h = H, a.in_w = W, a.pt = s.pt, a.pl = s.pl;
    const bool in_place = kt.pool_in_place != nullptr && kt.pool_in_place(a);
    std::vector<float> padded(in_place ? 0 : static_cast<size_t>(PH * PW), neutral);
    a.xp = in_place ? nullptr : padded.data();
    std::vector<float> xw(xh != nullptr ? static_cast<size_t>(in_plane) : 0);
    std::vector<float> yw(yh != nullptr ? static_cast<size_t>(out_plane) : 0);
    for (int64_t p = pb; p < pe; ++p) {
      if (xh != nullptr) f16ToF32(xh + p * in_plane, xw.data(), in_plane, nullptr);
      a.x = xh != nullptr ? xw.data() : x + p * in_plane;
      a.y = yh != nullptr ? yw.data() : y + p * out_plane;
      kernel(a);
      if (!is_max) divide(a.y);
      if (yh != nullptr) f32ToF16(a.y, yh + p * out_plane, out_plane, {}, nullptr);
    }
  });
}

// Both storages: float32 tensors go straight through, float16 ones are widened / rounded plane by plane.
void pool2dStorage(const Pool2dShape& s, const void* x, Storage xs, void* y, Storage ys, ThreadPool* pool,
                   bool is_max) {
  detail::checkPool(s, is_max ? "maxPool2d" : "avgPool2d");
  const bool x16 = xs == Storage::kF16, y16 = ys == Storage::kF16;
  const uint16_t* xh = x16 ? static_cast<const uint16_t*>(x) : nullptr;
  uint16_t* yh = y16 ? static_cast<uint16_t*>(y) : nullptr;
  const float* xf = x16 ? nullptr : static_cast<const float*>(x);
  float* yf = y16 ? nullptr : static_cast<float*>(y);
  if (is_max && s.pad_value > -std::numeric_limits<float>::infinity()) {
    // The reference (a folded pad value): whole-tensor conversions around it.
    std::vector<float> xw, yw;
    if (x16) {
      xw.resize(static_cast<size_t>(s.planes * s.ih * s.iw));
      f16ToF32(xh, xw.data(), static_cast<int64_t>(xw.size()), pool);
      xf = xw.data();
    }
    if (y16) {
      yw.resize(static_cast<size_t>(s.planes * s.oh * s.ow));
      yf = yw.data();
    }
    maxPool2d(s, xf, yf, pool);
    if (y16) f32ToF16(yf, yh, static_cast<int64_t>(yw.size()), {}, pool);
    return;
  }
  pool2dFast(s, xf, yf, pool, is_max, xh, yh);
}
}  // namespace

void maxPool2dFast(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool) {
  pool2dStorage(s, x, Storage::kF32, y, Storage::kF32, pool, true);
}

void avgPool2dFast(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool) {
  pool2dStorage(s, x, Storage::kF32, y, Storage::kF32, pool, false);
}

void maxPool2dFast(const Pool2dShape& s, const void* x, Storage xs, void* y, Storage ys, ThreadPool* pool) {
  pool2dStorage(s, x, xs, y, ys, pool, true);
}

void avgPool2dFast(const Pool2dShape& s, const void* x, Storage xs, void* y, Storage ys, ThreadPool* pool) {
  pool2dStorage(s, x, xs, y, ys, pool, false);
}

}  // namespace npuc::kernels
