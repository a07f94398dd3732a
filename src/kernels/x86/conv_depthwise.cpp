// The depthwise paths of the x86 convolution (conv_impl.hpp): channel blocks of 8 for the AVX tables, planes in
// place for the kernels that read the input as it is, and padded phase-split planes for the portable one; the
// masks the in-place kernels read. Each output's taps are summed in the reference order (conv_ref's bits).
#include "kernels/x86/conv_impl.hpp"

#include "support/thread_pool.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace npuc::kernels {

namespace detail {

std::vector<uint16_t> dwS2Masks(int64_t in_w, int64_t out_w, int64_t kw, int64_t pw) {
  const int64_t nv = ceilDiv(out_w, 16), pairs = kw / 2 + 1;
  std::vector<uint16_t> m(static_cast<size_t>(nv * pairs * 2), 0);
  for (int64_t j = 0; j < nv; ++j)
    for (int64_t q = 0; q < pairs; ++q)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t l = 0; l < 16; ++l) {
          const int64_t iw = 32 * j - pw + 2 * q + 16 * h + l;
          if (iw >= 0 && iw < in_w) m[static_cast<size_t>((j * pairs + q) * 2 + h)] |= static_cast<uint16_t>(1u << l);
        }
  return m;
}

std::vector<uint16_t> dwS1Masks(const Geom2& g) {
  const int64_t n = g.OH * g.OW, taps = g.KH * g.KW;
  std::vector<uint16_t> m(static_cast<size_t>(ceilDiv(n, 16) * taps), 0);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t oh = p / g.OW, ow = p % g.OW;
    uint16_t* mv = m.data() + (p / 16) * taps;
    const auto bit = static_cast<uint16_t>(1u << (p % 16));
    for (int64_t ki = 0; ki < g.KH; ++ki)
      for (int64_t kj = 0; kj < g.KW; ++kj) {
        const int64_t ih = oh + ki - g.ph, iw = ow + kj - g.pw;
        if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) mv[ki * g.KW + kj] |= bit;
      }
  }
  return m;
}

}  // namespace detail

namespace {

using detail::ceilDiv;
using detail::fillSegment;

// Fills the sw phase rows of one padded depthwise input row: dst[p*wq + j] = input column j*sw + p - pw, or +0
// outside the input. The interior runs with a compile-time stride so the compiler can vectorise it.
template <int64_t kStride>
void fillPhasesFixed(const float* xr, int64_t W, int64_t pw, int64_t wq, float* dst) {
  // Interior: every phase of column j inside the input: j*kStride - pw >= 0 and j*kStride + kStride-1 - pw < W.
  const int64_t lo = std::min(wq, ceilDiv(pw, kStride));
  const int64_t hi = std::clamp<int64_t>(W + pw - kStride >= 0 ? (W + pw - kStride) / kStride + 1 : 0, lo, wq);
  auto edge = [&](int64_t j) {
    for (int64_t p = 0; p < kStride; ++p) {
      const int64_t iw = j * kStride + p - pw;
      dst[p * wq + j] = iw >= 0 && iw < W ? xr[iw] : 0.0f;
    }
  };
  for (int64_t j = 0; j < lo; ++j) edge(j);
  if constexpr (kStride == 1) {
    if (hi > lo) std::memcpy(dst + lo, xr + (lo - pw), static_cast<size_t>(hi - lo) * sizeof(float));
  } else if constexpr (kStride == 2) {
    // Both phases in one pass over the row (de-interleave).
    float* d0 = dst + lo;
    float* d1 = dst + wq + lo;
    const float* sp = xr + (lo * 2 - pw);
    for (int64_t j = 0; j < hi - lo; ++j) {
      d0[j] = sp[2 * j];
      d1[j] = sp[2 * j + 1];
    }
  } else if (hi > lo) {
    for (int64_t p = 0; p < kStride; ++p) {
      float* d = dst + p * wq + lo;
      const float* sp = xr + (lo * kStride + p - pw);
      for (int64_t j = 0; j < hi - lo; ++j) d[j] = sp[j * kStride];
    }
  }
  for (int64_t j = hi; j < wq; ++j) edge(j);
}

void fillPhases(const float* xr, int64_t W, int64_t pw, int64_t sw, int64_t wq, float* dst) {
  switch (sw) {
    case 1: fillPhasesFixed<1>(xr, W, pw, wq, dst); return;
    case 2: fillPhasesFixed<2>(xr, W, pw, wq, dst); return;
    default:
      for (int64_t ph = 0; ph < sw; ++ph) fillSegment(xr, W, ph - pw, sw, wq, dst + ph * wq);
  }
}

}  // namespace

void Conv::Impl::runDepthwiseBlocked(const Io& io, ThreadPool* pool) const {
  const detail::KernelTable& kt = detail::activeKernels();
  const int64_t C = s.in_channels;
  const int64_t blocks = ceilDiv(C, 8);
  const int64_t taps = static_cast<int64_t>(tap_off.size());
  const size_t block_floats = static_cast<size_t>(dw_bhp * dw_bwp * 8);
  auto body = [&](int64_t t0, int64_t t1) {
    float* xt = detail::threadScratch(block_floats, 1);
    // The first block of the chunk zeroes the padding; later blocks overwrite only the input positions.
    std::memset(xt, 0, block_floats * sizeof(float));
    detail::DwPackArgs pk;
    pk.x_plane = HW, pk.in_h = g.H, pk.in_w = g.W, pk.xt = xt, pk.wp = dw_bwp, pk.ph = g.ph, pk.pw = g.pw;
    detail::DwBlockArgs a;
    a.xt = xt, a.wp = dw_bwp, a.kh = g.KH, a.kw = g.KW, a.sh = g.sh, a.sw = g.sw, a.dh = g.dh, a.dw = g.dw;
    a.out_h = g.OH, a.out_w = g.OW, a.act = &act, a.y_plane = N;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / blocks, b = t % blocks, c0 = b * 8;
      const int ch = static_cast<int>(std::min<int64_t>(8, C - c0));
      if (io.xh != nullptr) pk.xh = io.xh + (n * C + c0) * HW;
      else if (io.xb) pk.xb = io.x + (n * C + c0) * HW;  // block b of image n (C a multiple of 8)
      else pk.x = io.x + (n * C + c0) * HW;
      pk.channels = ch;
      kt.dwconv_pack8(pk);
      a.w = dw_wblk.data() + b * taps * 8, a.bias = dw_bblk.data() + b * 8;
      if (io.yh != nullptr) a.yh = io.yh + (n * C + c0) * N;
      else if (io.yb) a.yb = io.y + (n * C + c0) * N;  // block b of image n: the same offset (C a multiple of 8)
      else a.y = io.y + (n * C + c0) * N;
      a.channels = ch;
      kt.dwconv_block8(a);
      finish(io, (n * C + c0) * N, ch * N);
    }
  };
  detail::runTasks(pool, s.batch * blocks, body, 4);
}

void Conv::Impl::runDepthwiseInPlace(const Io& io, ThreadPool* pool) const {
  const detail::DwInPlaceKernel kern = detail::activeKernels().dwconv_in_place;
  const int64_t C = s.in_channels;
  const int64_t taps = g.KH * g.KW;
  auto body = [&](int64_t p0, int64_t p1) {
    detail::DwInPlaceArgs a;
    a.in_h = g.H, a.in_w = g.W, a.kh = g.KH, a.kw = g.KW, a.ph = g.ph, a.pw = g.pw;
    a.act = &act, a.out_h = g.OH, a.out_w = g.OW, a.masks = dw_masks.data(), a.x_plane = HW, a.y_plane = N;
    a.stride = g.sh;
    for (int64_t pl = p0; pl < p1;) {
      // Planes pl .. pl + cnt - 1: one image's channels c .. c + cnt - 1.
      const int64_t c = pl % C, cnt = std::min(p1 - pl, C - c);
      if (io.xh != nullptr) a.xh = io.xh + pl * HW;
      else a.x = io.x + pl * HW;
      if (io.yh != nullptr) a.yh = io.yh + pl * N;
      else a.y = io.y + pl * N;
      a.planes = cnt, a.w = weights.data() + c * taps, a.bias = dw_bblk.data() + c;
      kern(a);
      finish(io, pl * N, cnt * N);
      pl += cnt;
    }
  };
  detail::runTasks(pool, s.batch * C, body, 8);
}

void Conv::Impl::runDepthwise(const Io& io, ThreadPool* pool) const {
  const detail::DwPlaneKernel kern = detail::activeKernels().dwconv;
  const int64_t C = s.in_channels;
  const int64_t sw = g.sw;
  const int64_t row_stride = sw * dw_wq;
  auto body = [&](int64_t p0, int64_t p1) {
    float* xq = detail::threadScratch(static_cast<size_t>(dw_hp * row_stride), 1);
    for (int64_t pl = p0; pl < p1; ++pl) {
      const int64_t c = pl % C;
      const float* xc = io.x + pl * HW;
      // Padded row r holds input row r - ph; phase p, column j holds input column j*sw + p - pw. The first plane
      // of the chunk writes the whole padded plane; the zeros stay where they are, so later planes only write the
      // input values (same geometry, same positions). Stride 1 only: the phase split's one-pass de-interleave
      // (fillPhases) is as fast as copying the values alone.
      const bool full = pl == p0;
      for (int64_t r = 0; r < dw_hp; ++r) {
        float* dr = xq + r * row_stride;
        const int64_t ih = r - g.ph;
        if (ih < 0 || ih >= g.H) {
          if (full) std::memset(dr, 0, static_cast<size_t>(row_stride) * sizeof(float));
          continue;
        }
        const float* xr = xc + ih * g.W;
        if (full || sw != 1) {
          fillPhases(xr, g.W, g.pw, sw, dw_wq, dr);
        } else {
          const int64_t hi = std::min(g.W, dw_wq - g.pw);  // input columns inside the padded row
          if (hi > 0) std::memcpy(dr + g.pw, xr, static_cast<size_t>(hi) * sizeof(float));
        }
      }
      detail::DwPlaneArgs a;
      a.xq = xq;
      a.row_stride = row_stride;
      a.tap_off = tap_off.data();
      a.w = weights.data() + c * static_cast<int64_t>(tap_off.size());
      a.taps = static_cast<int64_t>(tap_off.size());
      a.out_h = g.OH;
      a.out_w = g.OW;
      a.sh = g.sh;
      a.bias = bias.empty() ? 0.0f : bias[static_cast<size_t>(c)];
      a.act = &act;
      a.y = io.y + pl * N;
      kern(a);
      finish(io, pl * N, N);
    }
  };
  detail::runTasks(pool, s.batch * C, body, 8);
}

}  // namespace npuc::kernels
