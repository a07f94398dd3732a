// Conv (prepared convolution) and conv_transpose drivers: shape checks, path selection (output-channel vectors on
// AVX-512, direct GEMM, im2col GEMM, depthwise, reference), weight packing at construction, implicit-im2col B
// packing straight from the input, the zero-padded input of the direct paths, and the thread split (the depthwise
// paths: conv_depthwise.cpp). Microkernels come from the dispatch table.
//
// The direct path (2-D, stride 1, not 1x1): the input of each group is copied once into zero-padded planes (padded
// row r, column c of channel ch at ch*pp + r*wq + c). Output (oh, ow) is then "virtual column" n = oh * wq + ow of
// a GEMM whose B row k = (ch, ki, kj) is the plane shifted by a constant: B[k][n] = xq[off[k] + n]. The
// microkernels read those rows directly (MicroArgs::b_off), so nothing is packed; columns with ow >= OW are
// computed into a scratch C and dropped when the tile is copied out. The fma sequence of every output is the
// reference one (k ascending, padding taps multiply +0), so the bits are those of conv_ref.
#include "kernels/conv.hpp"

#include "kernels/x86/conv_impl.hpp"
#include "kernels/x86/gemm_driver.hpp"
#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace npuc::kernels {

namespace detail {

Geom2 toGeom2(const ConvShape& s) {
  Geom2 g;
  const size_t r = s.in_spatial.size();
  const size_t off = r - 1;
  g.W = s.in_spatial[off], g.OW = s.out_spatial[off], g.KW = s.kernel[off];
  g.sw = s.stride[off], g.dw = s.dilation[off], g.pw = s.pad_begin[off];
  if (r == 2) {
    g.H = s.in_spatial[0], g.OH = s.out_spatial[0], g.KH = s.kernel[0];
    g.sh = s.stride[0], g.dh = s.dilation[0], g.ph = s.pad_begin[0];
  }
  return g;
}

// Narrowest output rows the stride-2 in-place depthwise takes (see Conv::Conv).
constexpr int64_t kDwS2MinWidth = 12;

// Whether a depthwise geometry has the in-place form (tables with dwconv_in_place): stride 1 over a flat plane
// (output rows as wide as the input's), or stride 2 row by row when output rows fill most of a 16-lane vector
// (npuc_kernels_bench, 1 thread, against channel-blocked: 14 outputs per row 0.65x, 28 0.75x, 56 0.8x; 7 1.25x —
// the bound 12 lies between the measured 7 and 14).
bool dwInPlace(const Geom2& g) {
  const bool small_window = g.dh == 1 && g.dw == 1 && g.KH <= detail::kDwInPlaceMaxK && g.KW <= detail::kDwInPlaceMaxK;
  return small_window && ((g.sh == 1 && g.sw == 1 && g.OW == g.W) || (g.sh == 2 && g.sw == 2 && g.OW >= kDwS2MinWidth));
}

}  // namespace detail

namespace {

using detail::ceilDiv;
using detail::dwInPlace;
using detail::toGeom2;
using detail::ConvPath;
using detail::dwS1Masks;
using detail::dwS2Masks;
using detail::fillSegment;
using detail::Geom2;
using detail::kMR;
using detail::kNR;
using detail::kOcBlock;
using detail::roundUp;

template <class Shape>
void checkShape(const Shape& s, const char* what) {
  const size_t r = s.in_spatial.size();
  if (r < 1 || r > 3 || s.out_spatial.size() != r || s.kernel.size() != r || s.stride.size() != r ||
      s.dilation.size() != r || s.pad_begin.size() != r) {
    fail(ErrorCode::kInvalidArgument, "{}: spatial rank must be 1..3 and the same in every field", what);
  }
  if (s.batch < 0 || s.in_channels < 0 || s.out_channels < 0 || s.groups < 1 || s.in_channels % s.groups != 0 ||
      s.out_channels % s.groups != 0) {
    fail(ErrorCode::kInvalidArgument, "{}: bad channels {}->{} with {} groups", what, s.in_channels, s.out_channels,
         s.groups);
  }
  for (size_t i = 0; i < r; ++i) {
    if (s.in_spatial[i] < 0 || s.out_spatial[i] < 0 || s.kernel[i] < 1 || s.stride[i] < 1 || s.dilation[i] < 1 ||
        s.pad_begin[i] < 0) {
      fail(ErrorCode::kInvalidArgument, "{}: bad geometry along spatial dim {}", what, i);
    }
  }
}

// Writes one packed-B row (depth index kl of a kc-deep block) from `row` (nc values) into the kNR-wide panels.
inline void scatterRow(const float* row, int64_t nc, int64_t kl, int64_t kc, float* dst) {
  const int64_t full = nc / kNR;
  for (int64_t jp = 0; jp < full; ++jp) std::memcpy(dst + (jp * kc + kl) * kNR, row + jp * kNR, kNR * sizeof(float));
  const int64_t rem = nc - full * kNR;
  if (rem > 0) {
    float* d = dst + (full * kc + kl) * kNR;
    std::memcpy(d, row + full * kNR, static_cast<size_t>(rem) * sizeof(float));
    for (int64_t j = rem; j < kNR; ++j) d[j] = 0.0f;
  }
}

// Implicit im2col: B[k, n] with k = (c, ki, kj) and n = (oh, ow), read straight from one group's input.
struct Im2colPacker {
  const Geom2* g;
  const float* xg;  // first input channel of the group
  bool pointwise;   // 1x1, stride 1, no padding: B rows are input channel rows
  const uint16_t* xgh = nullptr;  // pointwise only: the group's input in float16 instead of xg (widened here)
  // Pointwise only, one group: the image's input channel-blocked (Layout::kBlocked8) instead of xg, packed by this.
  const float* xgb = nullptr;
  detail::PackBlockedKernel pack_blocked = nullptr;

  void operator()(int64_t k0, int64_t kc, int64_t n0, int64_t nc, float* dst) const {
    const int64_t hw = g->H * g->W;
    const int64_t kk = g->KH * g->KW;
    if (pointwise) {
      if (xgb != nullptr) {
        pack_blocked(detail::PackBlockedArgs{.x = xgb, .hw = hw, .k0 = k0, .kc = kc, .n0 = n0, .nc = nc, .dst = dst});
        return;
      }
      if (xgh != nullptr) {
        float* row = detail::threadScratch(static_cast<size_t>(nc), 1);
        for (int64_t kl = 0; kl < kc; ++kl) {
          f16ToF32(xgh + (k0 + kl) * hw + n0, row, nc, nullptr);
          scatterRow(row, nc, kl, kc, dst);
        }
        return;
      }
      for (int64_t kl = 0; kl < kc; ++kl) scatterRow(xg + (k0 + kl) * hw + n0, nc, kl, kc, dst);
      return;
    }
    float* row = detail::threadScratch(static_cast<size_t>(nc), 1);
    for (int64_t kl = 0; kl < kc; ++kl) {
      const int64_t k = k0 + kl;
      const int64_t c = k / kk, r = k % kk;
      const int64_t ki = r / g->KW, kj = r % g->KW;
      const float* xc = xg + c * hw;
      int64_t n = n0, oh = n0 / g->OW, ow = n0 % g->OW;
      float* d = row;
      while (n < n0 + nc) {
        const int64_t seg = std::min(g->OW - ow, n0 + nc - n);
        const int64_t ih = oh * g->sh - g->ph + ki * g->dh;
        if (ih < 0 || ih >= g->H) {
          std::memset(d, 0, static_cast<size_t>(seg) * sizeof(float));
        } else {
          fillSegment(xc + ih * g->W, g->W, ow * g->sw - g->pw + kj * g->dw, g->sw, seg, d);
        }
        d += seg;
        n += seg;
        ++oh;
        ow = 0;
      }
      scatterRow(row, nc, kl, kc, dst);
    }
  }
};

// Pointwise convolutions with at most this many output channels (per group), over more than kStreamDepth input
// channels, read B in place instead of packing it: with so few rows to share it, packing B costs a large part of
// the product (npuc_kernels_bench, warm / cold input: SqueezeNet's 128 -> 16 squeeze at 55x55 0.19 -> 0.14 /
// 0.33 -> 0.29 ms, ResNet-50's 256 -> 64 at 56x56 1.09 -> 0.97 / 1.38 -> 1.22 ms).
constexpr int64_t kPointwiseDirectRows = 64;
// How many tiles ahead pointwiseDirect prefetches its B rows (K rows read at once: too many streams for the
// hardware prefetcher on a cold input).
constexpr int64_t kPrefetchTiles = 2;

// C[m0:m1, n0:n1] of a pointwise product with B read in place: row k of B at packer.xg + off[k] (off[k] = k * HW),
// or, float16, at packer.xgh + off[k].
// Whole 2 * kNR-column tiles go through the wide kernel (direct B, every row panel in one call, the last one
// partial); the columns past the last whole tile through gemmBlock. The k-blocks, hence every output's sum, are
// gemmBlock's: the same bits.
void pointwiseDirect(const float* packed_a, int64_t M, int64_t K, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                     const int64_t* off, const Im2colPacker& packer, const detail::GemmOut& out,
                     const detail::KernelTable& kt, const GemmBlocking& blk) {
  const int64_t n_tiles = n0 + (n1 - n0) / (2 * kNR) * (2 * kNR);
  int64_t nkb = 0, kc_max = 0;
  detail::kBlocks(K, blk, nkb, kc_max);
  for (int64_t kb = 0; kb < nkb && n_tiles > n0; ++kb) {
    const int64_t k0 = kb * kc_max;
    detail::MicroArgs args;
    args.kc = std::min(kc_max, K - k0);
    args.tall = true;
    args.b_off = off + k0;
    args.a_stride = K * kMR;
    args.ldc = out.ldc;
    args.act = kb == nkb - 1 ? &out.act : nullptr;
    args.init = kb > 0                ? detail::TileInit::kLoadC
                : out.bias != nullptr ? detail::TileInit::kRowBias
                                      : detail::TileInit::kZero;
    for (int64_t ic = m0; ic < m1; ic += blk.mc) {
      const int64_t ic_end = std::min(m1, ic + blk.mc);
      args.panels = ceilDiv(ic_end - ic, kMR);
      args.mr_last = ic_end - ic - (args.panels - 1) * kMR;
      args.a = packed_a + (ic / kMR) * K * kMR + k0 * kMR;
      args.bias = out.bias != nullptr ? out.bias + ic : nullptr;
      for (int64_t j = n0; j < n_tiles; j += 2 * kNR) {
        if (packer.xgh != nullptr) args.bh = packer.xgh + j;
        else args.b = packer.xg + j;
        args.b_prefetch = j + kPrefetchTiles * 2 * kNR < n1 ? kPrefetchTiles * 2 * kNR : 0;
        args.c = out.at(ic, j);
        if (out.h != nullptr && kb == nkb - 1) args.ch = out.h + ic * out.ldh + j, args.ldch = out.ldh;
        kt.gemm_x2(args);
      }
    }
  }
  if (n_tiles < n1) detail::gemmBlock(packed_a, M, K, m0, m1, n_tiles, n1, packer, out, kt, blk);
}

// A float16 input widened whole into the calling thread's scratch (slot 4), for paths that read float32 only.
const float* widened(const uint16_t* xh, int64_t n, ThreadPool* pool) {
  float* xw = detail::threadScratch(static_cast<size_t>(std::max<int64_t>(n, 1)), 4);
  f16ToF32(xh, xw, n, pool);
  return xw;
}

// The deepest convolution with fewer than 32 output channels per group the AVX2 form of conv_oc takes from im2col
// (Conv::Impl::oc_avx2; with 32 or more it takes any depth).
constexpr int64_t kOcAvx2Depth = 1152;

bool ocOff() {  // NPUC_CONV_OC=0: the output-channel path off, to compare
  static const bool off = [] {
    const char* e = std::getenv("NPUC_CONV_OC");
    return e != nullptr && std::strcmp(e, "0") == 0;
  }();
  return off;
}
}  // namespace

// Whether a 2-D convolution takes the output-channel-vectorised path (ConvOcArgs) on tables that have it: KxK
// windows (not 1x1: the GEMM paths read B in place or pack it by rows, and were faster), column stride 1 or 2, at
// least 16 output channels per group, and depth above kStreamDepth (a shallow product is bound by writing its
// output, and 14-pixel rows into 32 planes at a time ran 1.6x slower than the GEMM's long streams on a cold
// output: SqueezeNet's first conv, K = 27; ocForBlocksOnly takes those for channel-blocked outputs).
bool detail::ocEligible(const Geom2& g, int64_t mg, int64_t K) {
  if (ocOff() || (g.sw != 1 && g.sw != 2)) return false;
  return g.KH * g.KW > 1 && K > detail::kStreamDepth && mg >= 16;
}

bool detail::ocForBlocksOnly(const Geom2& g, int64_t mg, int64_t K) {
  return !ocOff() && g.KH * g.KW > 1 && (g.sw == 1 || g.sw == 2) && K > 0 && K <= detail::kStreamDepth &&
         mg % 8 == 0 && mg >= 16;
}

bool detail::ocAvx2Takes(const Geom2& g, int64_t mg, int64_t K, bool im2col) {
  return K <= detail::kOcAvx2BlockedDepth || (im2col && K <= kOcAvx2Depth) ||
         (mg >= kOcBlock && g.OW <= detail::kOcAvx2MaxRow);
}

void detail::addResidual(float* y, const float* r, int64_t n, const Activation& post) {
  auto loop = [&](auto act) {
    for (int64_t i = 0; i < n; ++i) y[i] = act(y[i] + r[i]);
  };
  switch (post.kind) {
    case ActKind::kNone: loop([](float v) { return v; }); return;
    case ActKind::kRelu: loop([](float v) { return applyActivation(v, Activation{ActKind::kRelu}); }); return;
    default: loop([&post](float v) { return applyActivation(v, post); }); return;
  }
}

Conv::Conv(const ConvShape& s, const float* w, const float* bias, const Activation& act, Layouts expected)
    : impl_(std::make_unique<Impl>()) {
  checkShape(s, "Conv");
  Impl& im = *impl_;
  im.s = s;
  im.act = act;
  im.cg = s.in_channels / s.groups;
  im.mg = s.out_channels / s.groups;
  int64_t taps = 1;
  for (int64_t k : s.kernel) taps *= k;
  im.K = im.cg * taps;
  if (bias != nullptr) im.bias.assign(bias, bias + s.out_channels);
  const size_t rank = s.in_spatial.size();
  if (rank == 3) {
    im.path = ConvPath::kRef;
    im.weights.assign(w, w + s.out_channels * im.K);
    return;
  }
  im.g = toGeom2(s);
  const Geom2& g = im.g;
  im.N = g.OH * g.OW;
  im.HW = g.H * g.W;
  if (s.groups > 1 && s.groups == s.in_channels && s.groups == s.out_channels) {
    im.path = ConvPath::kDepthwise;
    im.weights.assign(w, w + s.out_channels * taps);
    // Padded, phase-split plane: rows cover every tapped input row, columns every tapped column plus slack
    // for the kernel's whole-vector reads past the last output.
    im.dw_hp = (g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1;
    im.dw_wq = roundUp(std::max<int64_t>(g.OW, 1), 8) + (g.KW - 1) * g.dw / g.sw;
    for (int64_t ki = 0; ki < g.KH; ++ki) {
      for (int64_t kj = 0; kj < g.KW; ++kj) {
        const int64_t col = kj * g.dw;
        im.tap_off.push_back(ki * g.dh * g.sw * im.dw_wq + (col % g.sw) * im.dw_wq + col / g.sw);
      }
    }
    // Channel-blocked form: 8 channels interleaved, rows and columns covering every tap (and the output row's
    // last whole vector of 8 pixels) and every input element.
    const int64_t blocks = ceilDiv(s.out_channels, 8);
    im.dw_wblk.assign(static_cast<size_t>(blocks * taps * 8), 0.0f);
    im.dw_bblk.assign(static_cast<size_t>(blocks * 8), 0.0f);
    for (int64_t c = 0; c < s.out_channels; ++c) {
      for (int64_t t = 0; t < taps; ++t) im.dw_wblk[static_cast<size_t>(((c / 8) * taps + t) * 8 + c % 8)] = w[c * taps + t];
      if (bias != nullptr) im.dw_bblk[static_cast<size_t>(c)] = bias[c];
    }
    im.dw_bhp = std::max((g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1, g.ph + g.H);
    im.dw_bwp = std::max((roundUp(g.OW, 8) - 1) * g.sw + (g.KW - 1) * g.dw + 1, g.pw + g.W);
    // In place (tables with dwconv_in_place, dwInPlace): stride 1 with a mask per tap for every 16 outputs, stride 2
    // with column masks.
    im.dw_in_place = dwInPlace(g);
    const bool s2 = im.dw_in_place && g.sh == 2;
    if (s2) im.dw_masks = dwS2Masks(g.W, g.OW, g.KW, g.pw);
    else if (im.dw_in_place) im.dw_masks = dwS1Masks(g);
    return;
  }
  im.path = ConvPath::kGemm;
  im.pointwise = detail::isPointwise(g);
  im.oc = detail::ocEligible(g, im.mg, im.K) && im.N > 0 && im.K > 0;
  if (!im.oc && expected.y == Layout::kBlocked8 && s.groups == 1 && detail::ocForBlocksOnly(g, im.mg, im.K) && im.N > 0)
    im.oc = im.oc_blocks_only = true;
  for (int64_t grp = 0; grp < s.groups && !im.oc; ++grp) {
    im.packed.push_back(std::make_unique<PackedA>(im.mg, im.K, w + grp * im.mg * im.K, im.K, false));
  }
  if (im.pointwise && im.mg <= kPointwiseDirectRows && im.K > detail::kStreamDepth) {
    for (int64_t k = 0; k < im.K; ++k) im.pw_off.push_back(k * im.HW);
  }
  if (!im.pointwise && g.sh == 1 && g.sw == 1 && g.OW >= 14 && im.N > 0 && im.K > 0) {
    // Direct when the dropped columns (ow >= OW, and the rounding to whole 2 * kNR tiles) cost less than
    // packing: the im2col packer writes and re-reads every B element, ~20-25% of a 3x3 conv's time. Measured on
    // Zen 4 (npuc_kernels_bench conv/*): 5-25% faster for stride-1 3x3 convs with rows of 14 and more; slower
    // for stride 2 (shifted loads from four phase planes, tried, cost more than packing) and for 7x7 maps.
    im.dq_wq = std::max(g.OW + (g.KW - 1) * g.dw, g.pw + g.W);
    im.dq_hq = std::max(g.OH + (g.KH - 1) * g.dh, g.ph + g.H);
    im.dq_nq = g.OH * im.dq_wq;
    im.dq_nr = roundUp(im.dq_nq, 2 * kNR);
    if (static_cast<double>(im.dq_nr) <= 1.2 * static_cast<double>(roundUp(im.N, kNR))) {
      im.path = ConvPath::kDirect;
      im.dq_pp = im.dq_hq * im.dq_wq;
      // Reads reach cg * pp - 1 + (KW - 1) * dw + (nr - nq) past the group's start.
      im.dq_gs = roundUp(im.cg * im.dq_pp + (g.KW - 1) * g.dw + (im.dq_nr - im.dq_nq) + kNR, kNR);
      for (int64_t c = 0; c < im.cg; ++c)
        for (int64_t ki = 0; ki < g.KH; ++ki)
          for (int64_t kj = 0; kj < g.KW; ++kj) im.dq_off.push_back(c * im.dq_pp + ki * g.dh * im.dq_wq + kj * g.dw);
      const int64_t mgp = roundUp(im.mg, kMR);
      im.dq_bias.assign(static_cast<size_t>(s.groups * mgp), 0.0f);
      for (int64_t grp = 0; grp < s.groups; ++grp)
        for (int64_t m = 0; m < im.mg; ++m)
          im.dq_bias[static_cast<size_t>(grp * mgp + m)] = im.bias.empty() ? 0.0f : im.bias[static_cast<size_t>(grp * im.mg + m)];
    }
  }
  // The weights in blocks of kOcBlock output channels, K steps each (ConvOcArgs::w), and the bias likewise.
  auto packOc = [&] {
    im.oc_blocks = ceilDiv(im.mg, kOcBlock);
    const size_t oc_n = static_cast<size_t>(s.groups * im.oc_blocks * im.K * kOcBlock);
    std::fill_n(im.oc_w.ensure(oc_n), oc_n, 0.0f);
    im.oc_bias.assign(static_cast<size_t>(s.groups * im.oc_blocks * kOcBlock), 0.0f);
    for (int64_t grp = 0; grp < s.groups; ++grp)
      for (int64_t m = 0; m < im.mg; ++m) {
        for (int64_t k = 0; k < im.K; ++k) im.oc_w.data()[im.ocAt(grp, m, k)] = w[(grp * im.mg + m) * im.K + k];
        if (bias != nullptr) im.oc_bias[static_cast<size_t>(grp * im.oc_blocks * kOcBlock + m)] = bias[grp * im.mg + m];
      }
  };
  const bool blocked_in = expected.x == Layout::kBlocked8 && im.cg % 8 == 0;
  const bool blocked_out = expected.y == Layout::kBlocked8 && im.mg % 8 == 0;
  if ((im.pointwise || detail::isStridedPointwise(g)) && s.groups == 1 && im.N > 0 && (blocked_in || blocked_out)) {
    packOc();
    for (int64_t k = 0; k < im.K; ++k) {
      im.bk_off.push_back((k / 8) * 8 * im.HW + k % 8);
      im.bk_plane_off.push_back(k * im.HW);
    }
  }
  if (im.oc) {  // (never a pointwise convolution: ocEligible wants a KxK window, so oc_w is packed once)
    im.oc_avx2 = detail::ocAvx2Takes(g, im.mg, im.K, im.path == ConvPath::kGemm);
    im.oc_wq = std::max((g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1, g.pw + g.W);
    const int64_t hq = std::max((g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1, g.ph + g.H);
    im.oc_pp = hq * im.oc_wq;
    im.oc_gs = im.cg * im.oc_pp;  // every read lies inside the group's planes
    const bool blocked_x = expected.x == Layout::kBlocked8 && s.groups == 1 && im.cg % 8 == 0;
    for (int64_t c = 0; c < im.cg; ++c)
      for (int64_t ki = 0; ki < g.KH; ++ki)
        for (int64_t kj = 0; kj < g.KW; ++kj) {
          const int64_t tap = ki * g.dh * im.oc_wq + kj * g.dw;
          im.oc_off.push_back(c * im.oc_pp + tap);
          if (blocked_x) im.ocb_off.push_back((c / 8) * 8 * im.oc_pp + tap * 8 + c % 8);
        }
    packOc();
  }
}

Conv::~Conv() = default;

const char* Conv::variant() const {
  const detail::KernelTable& kt = detail::activeKernels();
  const bool avx512 = std::strcmp(kt.name, "avx512") == 0;
  const bool avx2 = std::strcmp(kt.name, "avx2_fma") == 0;
  if (impl_->useOc(kt) && !impl_->oc_blocks_only) return avx512 ? "direct_oc_avx512" : "direct_oc_avx2";
  switch (impl_->path) {
    case ConvPath::kDirect: return avx512 ? "direct_gemm_avx512" : avx2 ? "direct_gemm_avx2" : "direct_gemm_portable";
    case ConvPath::kGemm: return avx512 ? "im2col_gemm_avx512" : avx2 ? "im2col_gemm_avx2" : "im2col_gemm_portable";
    case ConvPath::kDepthwise:
      if (avx512 && impl_->dw_in_place) return "depthwise_in_place_avx512";
      return avx512 || avx2 ? "depthwise_blocked_avx2" : "depthwise_portable";
    case ConvPath::kRef: break;
  }
  return "ref";
}

void Conv::Impl::runGemm(Io io, ThreadPool* pool) const {
  if (io.xh != nullptr && !pointwise) {
    // im2col reads every input element once per tap: widen the input once instead.
    io.x = widened(io.xh, s.batch * s.in_channels * HW, pool);
    io.xh = nullptr;
  }
  const float* x = io.x;
  if (N == 1 && pointwise && io.xh == nullptr && io.yh == nullptr && !io.xb && !io.yb && io.r == nullptr) {
    // One output position per image (an SE block's 1x1 convolutions on a pooled vector): a matrix-vector product
    // over the packed weights (sgemm_packed's N == 1 form, the same sums) — no B packed, no column-tail tiles.
    for (int64_t o = 0; o < s.batch * s.groups; ++o) {
      const int64_t b = o / s.groups, grp = o % s.groups;
      GemmArgs ga;
      ga.M = mg, ga.N = 1, ga.K = K;
      ga.B = x + (b * s.in_channels + grp * cg) * HW, ga.ldb = 1;
      ga.C = io.y + (b * s.out_channels + grp * mg) * N, ga.ldc = 1;
      if (!bias.empty()) ga.bias = bias.data() + grp * mg, ga.bias_kind = BiasKind::kPerRow;
      ga.act = act;
      sgemm_packed(*packed[static_cast<size_t>(grp)], ga, pool);
    }
    return;
  }
  const detail::KernelTable& kt = detail::activeKernels();
  const GemmBlocking blk = detail::blockingForDepth(K, detail::effectiveBlocking());
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t outer = s.batch * s.groups;
  const bool pw_direct =
      !pw_off.empty() && !io.xb && kt.gemm_x2 != nullptr && kt.rows_tail && (io.xh == nullptr || kt.half_b);
  // A pointwise B is packed by copying rows: each task packs its own columns, into its own core's cache, rather
  // than waiting for one shared B packed by both cores (npuc_kernels_bench, 2 threads: MobileNetV2's 576 -> 96
  // at 14x14 0.16 -> 0.13 ms, 96 -> 576 0.14 -> 0.12 ms). An im2col B costs more to build: it is packed once.
  const detail::BPacking packing =
      pointwise && !pw_direct ? detail::BPacking::kPerTask : detail::BPacking::kShared;
  const detail::GemmSplit split = detail::planSplit(mg, N, outer, threads, blk, packing);
  const int64_t per_outer = split.m_tasks * split.n_tasks;
  detail::PrepackedB pre;
  if (split.m_tasks > 1 && outer == 1 && !pointwise) {
    // Tasks split along M would each build the same im2col B: pack it once, in parallel, before.
    pre.panels = ceilDiv(N, kNR);
    float* dst = detail::threadScratch(static_cast<size_t>(std::max<int64_t>(K, 1) * pre.panels * kNR), 3);
    detail::prepackB(Im2colPacker{&g, x, pointwise, io.xh}, K, N, blk, pool, dst);
    pre.data = dst;
  }
  int64_t nkb = 0, kc_max = 0;
  detail::kBlocks(K, blk, nkb, kc_max);
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / per_outer, r = t % per_outer;
      const int64_t b = o / s.groups, grp = o % s.groups;
      const int64_t mt = r / split.n_tasks, nt = r % split.n_tasks;
      const int64_t m0 = mt * split.m_chunk, n0 = nt * split.n_chunk;
      const int64_t m1 = std::min(mg, m0 + split.m_chunk), n1 = std::min(N, n0 + split.n_chunk);
      detail::GemmOut out;
      out.tall = detail::tallTiles(N);
      // float16 output: rounded by the microkernels as they store when one k-block makes each output final and
      // every column lies in a whole panel (no float32 tail paths: kt.rows_tail takes the row tail); else the
      // task's results go to its own float32 tile and are rounded into y once they are final.
      const bool half_out = io.yh != nullptr && kt.half_c && kt.rows_tail && nkb == 1 && (n1 - n0) % kNR == 0;
      if (half_out) {
        out.h = io.yh + (b * s.out_channels + grp * mg) * N;
        out.ldh = N;
      }
      if (io.yh != nullptr) {
        // float16 output: the task's results in its own float32 tile, rounded into y once they are final (with
        // half_out the tile is not written, but the drivers still form their float32 addresses in it).
        out.c = detail::threadScratch(static_cast<size_t>(std::max<int64_t>((m1 - m0) * (n1 - n0), 1)), 5);
        out.ldc = n1 - n0;
        out.m0 = m0;
        out.n0 = n0;
      } else {
        out.c = io.y + (b * s.out_channels + grp * mg) * N;
        out.ldc = N;
      }
      if (!bias.empty()) {
        out.bias = bias.data() + grp * mg;
        out.bias_kind = BiasKind::kPerRow;
      }
      out.act = act;
      const int64_t xoff = (b * s.in_channels + grp * cg) * HW;
      Im2colPacker packer{&g, io.xh != nullptr || io.xb ? nullptr : x + xoff, pointwise,
                          io.xh != nullptr ? io.xh + xoff : nullptr};
      if (io.xb) packer.xgb = x + xoff, packer.pack_blocked = kt.pack_b_blocked8;  // (pointwise, one group)
      const float* pa = packed[static_cast<size_t>(grp)]->impl().data.data();
      if (pw_direct) pointwiseDirect(pa, mg, K, m0, m1, n0, n1, pw_off.data(), packer, out, kt, blk);
      else detail::gemmBlock(pa, mg, K, m0, m1, n0, n1, packer, out, kt, blk, pre);
      for (int64_t m = m0; m < m1 && io.r != nullptr; ++m)
        finish(io, (b * s.out_channels + grp * mg + m) * N + n0, n1 - n0);
      if (io.yh != nullptr && !half_out) {
        for (int64_t m = m0; m < m1; ++m)
          f32ToF16(out.at(m, n0), io.yh + (b * s.out_channels + grp * mg + m) * N + n0, n1 - n0, Activation{}, nullptr);
      }
    }
  };
  detail::runTasks(pool, outer * per_outer, body);
}

// The packed A of the GEMM paths, from oc_w, on first use (runs on tables without conv_oc, e.g. forced to AVX2).
void Conv::Impl::ensurePacked() const {
  if (!oc) return;
  std::call_once(packed_once, [this] {
    std::vector<float> a(static_cast<size_t>(mg * K));
    for (int64_t grp = 0; grp < s.groups; ++grp) {
      for (int64_t m = 0; m < mg; ++m)
        for (int64_t k = 0; k < K; ++k) a[static_cast<size_t>(m * K + k)] = oc_w.data()[ocAt(grp, m, k)];
      packed.push_back(std::make_unique<PackedA>(mg, K, a.data(), K, false));
    }
  });
}

// The zero-padded copy of every (image, group) of the input, owned by the calling thread, filled in parallel:
// channel c's plane at c * pp (rows of wq floats, the input at row ph, column pw), the group's copy gs floats long.
float* Conv::Impl::padInput(const Io& io, ThreadPool* pool, int64_t wq, int64_t pp, int64_t gs) const {
  const int64_t outer = s.batch * s.groups;
  float* xq = detail::threadScratch(static_cast<size_t>(outer * gs), 3);
  auto fill = [&](int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {  // pl = (image, group) * cg + channel
      const int64_t o = pl / cg, c = pl % cg;
      float* dst = xq + o * gs + c * pp;
      std::memset(dst, 0, static_cast<size_t>(pp) * sizeof(float));
      if (c == cg - 1) std::memset(dst + pp, 0, static_cast<size_t>(gs - cg * pp) * sizeof(float));
      const int64_t b = o / s.groups, grp = o % s.groups;
      const int64_t plane = (b * s.in_channels + grp * cg + c) * HW;
      for (int64_t ih = 0; ih < g.H; ++ih) {
        float* d = dst + (ih + g.ph) * wq + g.pw;
        if (io.xh != nullptr) f16ToF32(io.xh + plane + ih * g.W, d, g.W, nullptr);
        else std::memcpy(d, io.x + plane + ih * g.W, static_cast<size_t>(g.W) * sizeof(float));
      }
    }
  };
  detail::runTasks(pool, outer * cg, fill, 4);
  return xq;
}

// The channel-blocked input (one group) as a channel-blocked padded copy for ocb_off: per image, block b's oc_hq
// rows of oc_wq 8-channel vectors at b * 8 * oc_pp, the input's rows copied in whole (W vectors each), zeros around.
float* Conv::Impl::padInputBlocked(const Io& io, ThreadPool* pool) const {
  const int64_t blocks = cg / 8, wq = oc_wq, pp = oc_pp;
  float* xq = detail::threadScratch(static_cast<size_t>(s.batch * oc_gs), 3);
  auto fill = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {  // t = image * blocks + block
      float* dst = xq + (t / blocks) * oc_gs + (t % blocks) * 8 * pp;
      const float* src = io.x + t * 8 * HW;
      std::memset(dst, 0, static_cast<size_t>(8 * pp) * sizeof(float));
      for (int64_t ih = 0; ih < g.H; ++ih)
        std::memcpy(dst + ((ih + g.ph) * wq + g.pw) * 8, src + ih * g.W * 8,
                    static_cast<size_t>(g.W * 8) * sizeof(float));
    }
  };
  detail::runTasks(pool, s.batch * blocks, fill, 4);
  return xq;
}

void Conv::Impl::runDirect(const Io& io, ThreadPool* pool) const {
  const detail::KernelTable& kt = detail::activeKernels();
  const GemmBlocking blk = detail::blockingForDepth(K, detail::effectiveBlocking());
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t outer = s.batch * s.groups;
  const int64_t wq = dq_wq, pp = dq_pp;
  // 1. The padded copy of every (image, group).
  const float* xq = padInput(io, pool, wq, pp, dq_gs);

  // 2. Tasks over (image, group) x M chunks x virtual-column chunks; each computes whole kMR x 2kNR tiles into
  // its scratch C (rows padded with the zero rows of the packed A, columns up to nr), then copies out.
  detail::GemmSplit split = detail::planSplit(mg, dq_nr, outer, threads, blk);
  split.n_chunk = roundUp(split.n_chunk, 2 * kNR);
  split.n_tasks = ceilDiv(dq_nr, split.n_chunk);
  const int64_t per_outer = split.m_tasks * split.n_tasks;
  const int64_t mgp = roundUp(mg, kMR);
  int64_t nkb = 0, kc_max = 0;
  detail::kBlocks(K, blk, nkb, kc_max);
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / per_outer, rr = t % per_outer;
      const int64_t b = o / s.groups, grp = o % s.groups;
      const int64_t m0 = (rr / split.n_tasks) * split.m_chunk, n0 = (rr % split.n_tasks) * split.n_chunk;
      const int64_t m1 = std::min(mg, m0 + split.m_chunk), n1 = std::min(dq_nr, n0 + split.n_chunk);
      const int64_t ncols = n1 - n0;
      float* ct = detail::threadScratch(static_cast<size_t>(roundUp(m1 - m0, kMR) * ncols), 0);
      const float* pa = packed[static_cast<size_t>(grp)]->impl().data.data();
      const float* xg = xq + o * dq_gs;
      detail::MicroArgs args;
      args.tall = true;  // 12-row tiles: each shifted (unaligned) B row serves twice the rows
      args.ldc = ncols;
      args.a_stride = K * kMR;
      for (int64_t kb = 0; kb < nkb; ++kb) {
        const int64_t k0 = kb * kc_max, kc = std::min(kc_max, K - k0);
        args.kc = kc;
        args.b_off = dq_off.data() + k0;
        args.act = kb == nkb - 1 ? &act : nullptr;
        args.init = kb > 0 ? detail::TileInit::kLoadC : bias.empty() ? detail::TileInit::kZero : detail::TileInit::kRowBias;
        for (int64_t ic = m0; ic < m1; ic += blk.mc) {
          const int64_t ic_end = std::min(m1, ic + blk.mc);
          args.panels = ceilDiv(ic_end - ic, kMR);
          args.mr_last = kMR;
          args.a = pa + (ic / kMR) * K * kMR + k0 * kMR;
          args.bias = dq_bias.data() + grp * mgp + ic;
          for (int64_t j = n0; j < n1;) {
            const bool wide = kt.gemm_x2 != nullptr && n1 - j >= 2 * kNR;
            args.b = xg + j;
            args.c = ct + (ic - m0) * ncols + (j - n0);
            (wide ? kt.gemm_x2 : kt.gemm)(args);
            j += wide ? 2 * kNR : kNR;
          }
        }
      }
      // Copy the real outputs (virtual columns n < nq with ow < OW) of rows [m0, m1).
      for (int64_t m = m0; m < m1; ++m) {
        const float* src = ct + (m - m0) * ncols;
        const int64_t dst = (b * s.out_channels + grp * mg + m) * N;  // the output plane's offset
        for (int64_t n = n0; n < std::min(n1, dq_nq);) {
          const int64_t oh = n / wq, ow = n % wq;
          const int64_t end = std::min(n1, oh * wq + wq);  // this output row's virtual columns in the chunk
          if (ow < g.OW) {
            const int64_t len = std::min(end, oh * wq + g.OW) - n;
            if (io.yh != nullptr) {
              f32ToF16(src + (n - n0), io.yh + dst + oh * g.OW + ow, len, Activation{}, nullptr);
            } else {
              std::memcpy(io.y + dst + oh * g.OW + ow, src + (n - n0), static_cast<size_t>(len) * sizeof(float));
              finish(io, dst + oh * g.OW + ow, len);
            }
          }
          n = end;
        }
      }
    }
  };
  detail::runTasks(pool, outer * per_outer, body);
}

void Conv::Impl::runOc(const Io& io, ThreadPool* pool) const {
  const detail::KernelTable& kt = detail::activeKernels();
  runOcTasks(io, pool, OcInput{padInput(io, pool, oc_wq, oc_pp, oc_gs), oc_gs, oc_wq, g.sh, g.sw, oc_off.data(), kt.conv_oc});
}

void Conv::Impl::runOcTasks(const Io& io, ThreadPool* pool, const OcInput& in) const {
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t outer = s.batch * s.groups;
  // Tasks: (image, group) x channel block x chunks of output rows, about eight per thread, so a thread that starts
  // late still gets its share; a task's rows share its block's weights.
  const int64_t rows = std::clamp<int64_t>(outer * oc_blocks * g.OH / (8 * threads), 1, g.OH);  // per task
  const int64_t row_tasks = ceilDiv(g.OH, rows);
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / (oc_blocks * row_tasks), blk = t / row_tasks % oc_blocks, r = t % row_tasks;
      const int64_t b = o / s.groups, grp = o % s.groups;
      detail::ConvOcArgs a;
      a.xq = in.x + o * in.gs;
      a.wq = in.wq;
      a.off = in.off;
      a.K = K;
      a.w = oc_w.data() + (grp * oc_blocks + blk) * K * kOcBlock;
      a.bias = bias.empty() ? nullptr : oc_bias.data() + (grp * oc_blocks + blk) * kOcBlock;
      a.act = &act;
      a.sh = in.sh;
      a.sw = in.sw;
      a.oh0 = r * rows;
      a.oh1 = std::min(g.OH, a.oh0 + rows);
      a.out_w = g.OW;
      const int64_t y0 = (b * s.out_channels + grp * mg + blk * kOcBlock) * N;
      if (io.yh != nullptr) a.yh = io.yh + y0;
      else if (io.yb) a.yb = io.y + y0;  // the block's 8-channel groups from its first on (mg a multiple of 8)
      else a.y = io.y + y0;
      a.y_plane = N;
      a.channels = static_cast<int>(std::min(kOcBlock, mg - blk * kOcBlock));
      in.kernel(a);
      // The residual over each finished run: a channel's rows in planes, an 8-channel group's rows in blocks.
      const int lanes = io.yb ? 8 : 1;
      for (int c = 0; c < a.channels && io.r != nullptr; c += lanes)
        finish(io, y0 + c * N + a.oh0 * g.OW * lanes, (a.oh1 - a.oh0) * g.OW * lanes);
    }
  };
  detail::runTasks(pool, outer * oc_blocks * row_tasks, body);
}

void Conv::Impl::run(const Io& io, ThreadPool* pool) const {
  if (s.batch == 0 || s.out_channels == 0) return;
  if (io.xb || io.yb) return runLayouts(io, pool);
  const detail::KernelTable& kt = detail::activeKernels();
  const bool in_place_dw = path == ConvPath::kDepthwise && dw_in_place && kt.dwconv_in_place != nullptr;
  const bool blocked_dw = path == ConvPath::kDepthwise && kt.dwconv_block8 != nullptr;
  const bool reads_f16 = path == ConvPath::kGemm || path == ConvPath::kDirect || blocked_dw || in_place_dw;
  if ((io.xh != nullptr || io.yh != nullptr) && !reads_f16) {
    // Paths without float16 reads and writes: widen the whole input, round the whole output.
    int64_t in = s.batch * s.in_channels, out = s.batch * s.out_channels;
    for (size_t d = 0; d < s.in_spatial.size(); ++d) in *= s.in_spatial[d], out *= s.out_spatial[d];
    Io f32{.x = io.x, .y = io.y};
    if (io.xh != nullptr) f32.x = widened(io.xh, in, pool);
    if (io.yh != nullptr) f32.y = detail::threadScratch(static_cast<size_t>(std::max<int64_t>(out, 1)), 5);
    run(f32, pool);
    if (io.yh != nullptr) f32ToF16(f32.y, io.yh, out, Activation{}, pool);
    return;
  }
  switch (path) {
    case ConvPath::kRef: {
      conv_ref(s, io.x, weights.data(), bias.empty() ? nullptr : bias.data(), act, io.y);
      int64_t out = s.batch * s.out_channels;
      for (int64_t d : s.out_spatial) out *= d;
      finish(io, 0, out);
      return;
    }
    case ConvPath::kDepthwise:
      if (N == 0) return;
      if (in_place_dw) runDepthwiseInPlace(io, pool);
      else if (blocked_dw) runDepthwiseBlocked(io, pool);
      else runDepthwise(io, pool);
      return;
    case ConvPath::kGemm:
    case ConvPath::kDirect:
      if (N == 0) return;
      if (useOc(kt) && !oc_blocks_only) {
        runOc(io, pool);
        return;
      }
      ensurePacked();
      if (path == ConvPath::kDirect) runDirect(io, pool);
      else runGemm(io, pool);
      return;
  }
}

void Conv::run(const void* x, Storage xs, void* y, Storage ys, ThreadPool* pool) const {
  Impl::Io io;
  if (xs == Storage::kF16) io.xh = static_cast<const uint16_t*>(x);
  else io.x = static_cast<const float*>(x);
  if (ys == Storage::kF16) io.yh = static_cast<uint16_t*>(y);
  else io.y = static_cast<float*>(y);
  impl_->run(io, pool);
}

void conv_transpose(const ConvTransposeShape& s, const float* x, const float* w, const float* bias, float* y,
                    ThreadPool* pool) {
  checkShape(s, "conv_transpose");
  detail::DeconvGeom g;
  g.batch = s.batch;
  g.in_channels = s.in_channels;
  g.out_channels = s.out_channels;
  g.groups = s.groups;
  int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  const size_t r = s.in_spatial.size();
  for (size_t i = 0; i < r; ++i) {
    const size_t d = 3 - r + i;
    g.in[d] = s.in_spatial[i];
    g.out[d] = s.out_spatial[i];
    g.k[d] = s.kernel[i];
    stride[d] = s.stride[i];
    dil[d] = s.dilation[i];
    pad[d] = s.pad_begin[i];
  }
  // Per-dim lists of the taps that land on an input element: o + pad - t*dil = i*stride, 0 <= i < in.
  std::vector<int64_t> tap_begin[3], tap_k[3], tap_in[3];
  for (int d = 0; d < 3; ++d) {
    for (int64_t o = 0; o < g.out[d]; ++o) {
      tap_begin[d].push_back(static_cast<int64_t>(tap_k[d].size()));
      for (int64_t t = 0; t < g.k[d]; ++t) {
        const int64_t num = o + pad[d] - t * dil[d];
        if (num < 0 || num % stride[d] != 0 || num / stride[d] >= g.in[d]) continue;
        tap_k[d].push_back(t);
        tap_in[d].push_back(num / stride[d]);
      }
    }
    tap_begin[d].push_back(static_cast<int64_t>(tap_k[d].size()));
    tap_k[d].push_back(0);  // keep data() non-null
    tap_in[d].push_back(0);
    g.tap_begin[d] = tap_begin[d].data();
    g.tap_k[d] = tap_k[d].data();
    g.tap_in[d] = tap_in[d].data();
  }
  const detail::DeconvKernel kern = detail::activeKernels().deconv;
  const int64_t planes = s.batch * s.out_channels;
  auto body = [&](int64_t p0, int64_t p1) { kern(g, x, w, bias, y, p0, p1); };
  detail::runTasks(pool, planes, body, 4);
}

}  // namespace npuc::kernels
