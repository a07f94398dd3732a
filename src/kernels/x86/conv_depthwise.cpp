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
  // On several threads, over maps of kDwBandMinPositions outputs and more, a task is a band of output rows through
  // every channel block: each core reads the rows of its own part of the input and writes its own part of the
  // output — the positions the pointwise layers before and after (split along positions, ThreadPool's ranges in
  // order) write and read on that core — instead of whole planes of some channels, half of whose input the other
  // core wrote. Smaller maps keep tasks of whole planes: a band's extra rows (the windows' overlap) cost more there
  // (MobileNetV2's 576 @14 0.036 -> 0.055 ms with bands). 2 threads, per-layer minima of three alternating `npuc
  // bench -t 2 --profile` runs (2026-12-05, Zen 5 AVX2): MobileNetV2's 32 @112 0.184 -> 0.137 ms, 96 @112 / 2 0.278
  // -> 0.168, the network's nodes 5.45 -> 5.29; MobileNetV1's 32 @112 0.185 -> 0.134, 64 @112 / 2 0.183 -> 0.106, its
  // nodes 7.84 -> 7.73.
  constexpr int64_t kDwBandMinPositions = 56 * 56;
  const int threads = pool != nullptr ? pool->size() : 1;
  const bool banded = threads > 1 && g.OH * g.OW >= kDwBandMinPositions;
  const int64_t band_rows = banded ? ceilDiv(g.OH, std::min<int64_t>(g.OH, 2 * threads)) : g.OH;
  const int64_t bands = ceilDiv(g.OH, band_rows);
  // A band's padded rows: those its output rows' windows reach (whole planes: the padded plane).
  const int64_t band_hp = banded ? (band_rows - 1) * g.sh + (g.KH - 1) * g.dh + 1 : dw_bhp;
  const size_t block_floats = static_cast<size_t>(band_hp * dw_bwp * 8);
  // Output rows [r0, r1) of block b of image n through the padded band at xt; zero: whether to clear xt first (the
  // first block of a geometry: later ones overwrite only the input positions).
  auto run = [&](float* xt, int64_t n, int64_t b, int64_t r0, int64_t r1, bool zero) {
    // Input rows [i0, i1) fill the band's padded rows from i0 - first on (rows above and below the input: zeros).
    const int64_t first = r0 * g.sh - g.ph, last = (r1 - 1) * g.sh - g.ph + (g.KH - 1) * g.dh + 1;
    const int64_t i0 = std::clamp<int64_t>(first, 0, g.H), i1 = std::clamp<int64_t>(last, i0, g.H);
    if (zero) std::memset(xt, 0, block_floats * sizeof(float));
    const int64_t c0 = b * 8;
    const int ch = static_cast<int>(std::min<int64_t>(8, C - c0));
    detail::DwPackArgs pk;
    pk.x_plane = HW, pk.in_h = i1 - i0, pk.in_w = g.W, pk.xt = xt, pk.wp = dw_bwp, pk.ph = i0 - first, pk.pw = g.pw;
    if (io.xh != nullptr) pk.xh = io.xh + (n * C + c0) * HW + i0 * g.W;
    else if (io.xb) pk.xb = io.x + (n * C + c0) * HW + i0 * g.W * 8;  // block b of image n (C a multiple of 8)
    else pk.x = io.x + (n * C + c0) * HW + i0 * g.W;
    pk.channels = ch;
    kt.dwconv_pack8(pk);
    detail::DwBlockArgs a;
    a.xt = xt, a.wp = dw_bwp, a.kh = g.KH, a.kw = g.KW, a.sh = g.sh, a.sw = g.sw, a.dh = g.dh, a.dw = g.dw;
    a.out_h = r1 - r0, a.out_w = g.OW, a.act = &act, a.y_plane = N;
    a.w = dw_wblk.data() + b * taps * 8, a.bias = dw_bblk.data() + b * 8;
    const int64_t y0 = (n * C + c0) * N;
    if (io.yh != nullptr) a.yh = io.yh + y0 + r0 * g.OW;
    else if (io.yb) a.yb = io.y + y0 + r0 * g.OW * 8;  // block b of image n: the same offset (C a multiple of 8)
    else a.y = io.y + y0 + r0 * g.OW;
    a.channels = ch;
    kt.dwconv_block8(a);
    // The residual over these outputs: the block's rows in blocks, each channel's rows in planes.
    if (io.yb) finish(io, y0 + r0 * g.OW * 8, (r1 - r0) * g.OW * 8);
    else
      for (int l = 0; l < ch; ++l) finish(io, y0 + l * N + r0 * g.OW, (r1 - r0) * g.OW);
  };
  if (banded) {
    detail::runTasks(pool, s.batch * bands, [&](int64_t t0, int64_t t1) {
      float* xt = detail::threadScratch(block_floats, 1);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / bands, r0 = t % bands * band_rows, r1 = std::min(g.OH, r0 + band_rows);
        for (int64_t b = 0; b < blocks; ++b) run(xt, n, b, r0, r1, b == 0);
      }
    });
    return;
  }
  detail::runTasks(
      pool, s.batch * blocks,
      [&](int64_t t0, int64_t t1) {
        float* xt = detail::threadScratch(block_floats, 1);
        for (int64_t t = t0; t < t1; ++t) run(xt, t / blocks, t % blocks, 0, g.OH, t == t0);
      },
      4);
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
