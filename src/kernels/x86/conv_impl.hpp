// What the x86 convolution's files share (conv.cpp: construction, the GEMM, direct and output-channel paths, the
// run; conv_depthwise.cpp: the depthwise paths): Conv's implementation and the geometry helpers both use. For
// src/kernels/x86/ only.
#pragma once

#include "kernels/conv.hpp"
#include "kernels/x86/gemm_driver.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace npuc::kernels {

namespace detail {

// 2-D geometry (1-D convs use H = 1).
struct Geom2 {
  int64_t H = 1, W = 1, OH = 1, OW = 1, KH = 1, KW = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
};

enum class ConvPath { kDirect, kGemm, kDepthwise, kRef };

// Copies B-row values for output positions [0, seg) of one output row into d, zero where the tap is padding.
inline void fillSegment(const float* xr, int64_t W, int64_t iw0, int64_t sw, int64_t seg, float* d) {
  int64_t jlo = iw0 >= 0 ? 0 : ceilDiv(-iw0, sw);
  int64_t jhi = iw0 >= W ? 0 : ceilDiv(W - iw0, sw);
  jlo = std::min(jlo, seg);
  jhi = std::clamp(jhi, jlo, seg);
  for (int64_t j = 0; j < jlo; ++j) d[j] = 0.0f;
  if (sw == 1) {
    if (jhi > jlo) std::memcpy(d + jlo, xr + iw0 + jlo, static_cast<size_t>(jhi - jlo) * sizeof(float));
  } else if (sw == 2) {
    const float* src = xr + iw0;  // constant stride: the compiler vectorises the gather
    for (int64_t j = jlo; j < jhi; ++j) d[j] = src[2 * j];
  } else {
    const float* src = xr + iw0;
    for (int64_t j = jlo; j < jhi; ++j) d[j] = src[j * sw];
  }
  for (int64_t j = jhi; j < seg; ++j) d[j] = 0.0f;
}

// The stride-2 masks of DwInPlaceArgs: [ceil(out_w / 16)][kw / 2 + 1][2], bit l of (j, q, h) set when input
// column 32j - pw + 2q + 16h + l is inside the row.
std::vector<uint16_t> dwS2Masks(int64_t in_w, int64_t out_w, int64_t kw, int64_t pw);

// The stride-1 masks of DwInPlaceArgs (a flat plane, output rows as wide as the input's): [ceil(OH * OW / 16)][taps],
// bit l of (v, t) set when output 16v + l exists and tap t's input is inside the plane.
std::vector<uint16_t> dwS1Masks(const Geom2& g);

// A 1-D or 2-D ConvShape as a Geom2 (1-D: H = 1).
Geom2 toGeom2(const ConvShape& s);
// A 1x1 window, stride 1, no padding, the output the input's size (a product over the input's rows as they lie).
inline bool isPointwise(const Geom2& g) {
  return g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.OH == g.H && g.OW == g.W;
}
// A 1x1 convolution with a stride above 1 and no padding that an output reads (none at the start; at the end only
// where the output size says no window reaches it) — ResNet's downsamples: output (oh, ow) reads input position
// (oh * sh, ow * sw) alone.
inline bool isStridedPointwise(const Geom2& g) {
  return g.KH == 1 && g.KW == 1 && (g.sh > 1 || g.sw > 1) && g.ph == 0 && g.pw == 0 && g.OH == (g.H - 1) / g.sh + 1 &&
         g.OW == (g.W - 1) / g.sw + 1;
}
// Whether a depthwise geometry has the in-place form (tables with dwconv_in_place; conv.cpp says which).
bool dwInPlace(const Geom2& g);
// Whether a convolution of one group's mg output channels and depth K takes the output-channel path (ConvOcArgs) on
// tables with conv_oc (conv.cpp says why), and whether the AVX2 form takes it too (Conv::Impl::oc_avx2; `im2col`:
// the other paths would run it through im2col, not the direct GEMM).
bool ocEligible(const Geom2& g, int64_t mg, int64_t K);
bool ocAvx2Takes(const Geom2& g, int64_t mg, int64_t K, bool im2col);
// A KxK convolution of one group too shallow for ocEligible that still writes channel-blocked outputs on the
// output-channel kernel (its stores are whole 8-channel vectors there, not the planes' transposed runs).
bool ocForBlocksOnly(const Geom2& g, int64_t mg, int64_t K);

// y[i] = post(y[i] + r[i]): a residual Add and the activation after it, with the float32 rounding of the separate
// ops. One loop per activation kind, so that each vectorises.
void addResidual(float* y, const float* r, int64_t n, const Activation& post);

}  // namespace detail

struct Conv::Impl {
  ConvShape s;
  Activation act;
  detail::ConvPath path = detail::ConvPath::kRef;
  detail::Geom2 g;
  bool pointwise = false;
  int64_t cg = 0, mg = 0, K = 0, N = 0, HW = 0;
  std::vector<float> bias;  // empty: none
  // kGemm / kDirect: packed A, one per group; with `oc`, left empty until a run on a table without conv_oc needs it
  // (ensurePacked).
  mutable std::vector<std::unique_ptr<PackedA>> packed;
  mutable std::once_flag packed_once;
  std::vector<float> weights;                    // kDepthwise: [M, taps]; kRef: the original weights
  std::vector<int64_t> tap_off;                  // kDepthwise
  int64_t dw_wq = 0, dw_hp = 0;                  // kDepthwise padded plane geometry
  std::vector<float> dw_wblk, dw_bblk;           // kDepthwise, channel-blocked: [C/8][taps][8], [C/8][8]
  int64_t dw_bwp = 0, dw_bhp = 0;                // kDepthwise, channel-blocked: padded block geometry
  bool dw_in_place = false;                      // kDepthwise: the geometry DwInPlaceArgs takes
  std::vector<uint16_t> dw_masks;                // kDepthwise in place: DwInPlaceArgs::masks
  // kDirect: padded planes of hq x wq (pp floats) per channel, gs floats per group's copy; nq = OH * wq virtual
  // columns, computed up to nr (a multiple of 2 * kNR); B row offsets.
  int64_t dq_wq = 0, dq_hq = 0, dq_pp = 0, dq_gs = 0, dq_nq = 0, dq_nr = 0;
  std::vector<int64_t> dq_off;
  std::vector<float> dq_bias;  // per group, padded to whole kMR-row panels (zeros)
  // kGemm, pointwise with few output channels over a deeper input (see kPointwiseDirectRows), on tables with the
  // wide, row-tail kernels: B row k is read in place at k * HW from the group's input (no packing); else empty.
  std::vector<int64_t> pw_off;
  // Output channels in vectors (tables with conv_oc; ConvOcArgs), beside kGemm / kDirect (the path on other tables):
  // padded planes of oc_hq x oc_wq (oc_pp floats) per channel, oc_gs floats per group's copy; tap offsets;
  // weights [group][block of kOcBlock channels][K][kOcBlock] and bias [group][block][kOcBlock], zeros past mg.
  bool oc = false;
  // Whether the AVX2 form takes it too: a shallow convolution (K <= kOcAvx2BlockedDepth, whose direct product is
  // bound by writing C: two 16-channel halves of 6 positions), one of depth K <= kOcAvx2Depth that the other paths
  // would run through im2col (stride 2, rows narrower than 14, the 7x7 stem), or one with at least 32 output
  // channels per group and output rows of at most kOcAvx2MaxRow (deeper: the K-blocked 3-position x 32-channel
  // tiles, whose chunk of weights stays in L1). Measured on Zen 5 (AVX2 only), npuc_kernels_bench conv/*: the 7x7/2
  // stem 3.3-4.1 -> 2.8 ms, 3x3/2 128 @56 3.2-3.3 -> 3.1, Tiny-YOLOv2's 16 -> 32 @208 6.7-6.9 -> 5.8 against the
  // GEMM (NPUC_CONV_OC=0); with the K-blocked tiles against the direct and im2col GEMMs (1 / 2 threads, ms): 3x3 64
  // @56 2.71 / 1.57 -> 2.53 / 1.31-1.46, 256 @14 2.88 / 1.51 -> 2.51-2.57 / 1.27-1.42, 512 @7 3.27 / 1.73 ->
  // 2.80-3.14 / 1.37-1.41, Tiny-YOLOv2's 512 -> 1024 @13 19.9 / 11.9 -> 18.8-19.4 / 9.5-9.9.
  bool oc_avx2 = false;
  // The output-channel path for blocked outputs only (detail::ocForBlocksOnly): planes go through the GEMM.
  bool oc_blocks_only = false;
  bool useOc(const detail::KernelTable& kt) const {
    return oc && kt.conv_oc != nullptr && (kt.conv_oc_all || oc_avx2);
  }
  int64_t oc_wq = 0, oc_pp = 0, oc_gs = 0, oc_blocks = 0;
  std::vector<int64_t> oc_off;
  // The same taps over a channel-blocked padded copy (padInputBlocked: block b's rows of 8-channel vectors, one
  // group), made when the input is expected channel-blocked: k = (c, ki, kj) -> (c / 8) * 8 * oc_pp +
  // (ki * dh * oc_wq + kj * dw) * 8 + c % 8; empty otherwise.
  std::vector<int64_t> ocb_off;
  // A pointwise or strided 1x1 convolution (one group) made to read or write channel-blocked tensors (Layouts
  // expected): oc_w / oc_bias packed as for `oc`, and the input's offsets for ConvOcArgs over the tensor itself:
  // blocked k -> (k / 8) * 8 * HW + k % 8 (sw = 8 * stride, wq = 8 * W), planes k -> k * HW (sw = stride, wq = W);
  // empty otherwise.
  std::vector<int64_t> bk_off, bk_plane_off;
  detail::AlignedFloats oc_w;  // 64-byte aligned: a weight vector never straddles two cache lines
  std::vector<float> oc_bias;
  // Where weight (m, k) of group grp lies in oc_w.
  size_t ocAt(int64_t grp, int64_t m, int64_t k) const {
    return static_cast<size_t>(((grp * oc_blocks + m / detail::kOcBlock) * K + k) * detail::kOcBlock + m % detail::kOcBlock);
  }

  // The tensors of one run: x or xh (float16), y or yh (float16); with r (float32 y only), the residual that every
  // task adds to its outputs once they are final (finish).
  struct Io {
    const float* x = nullptr;
    const uint16_t* xh = nullptr;
    float* y = nullptr;
    uint16_t* yh = nullptr;
    const float* r = nullptr;
    Activation post{};
    bool xb = false, yb = false;  // x / y channel-blocked (Layout::kBlocked8; float32)
  };
  void run(const Io& io, ThreadPool* pool) const;
  // The residual epilogue over y[off, off + len) (nothing without io.r).
  static void finish(const Io& io, int64_t off, int64_t len) {
    if (io.r != nullptr) detail::addResidual(io.y + off, io.r + off, len, io.post);
  }
  void ensurePacked() const;
  float* padInput(const Io& io, ThreadPool* pool, int64_t wq, int64_t pp, int64_t gs) const;
  float* padInputBlocked(const Io& io, ThreadPool* pool) const;
  void runDirect(const Io& io, ThreadPool* pool) const;
  void runOc(const Io& io, ThreadPool* pool) const;
  void runOcBlocked(const Io& io, ThreadPool* pool) const;
  void runOcLayouts(const Io& io, ThreadPool* pool) const;
  // The output-channel kernel's input for runOcTasks: (image, group) o's tensor at x + o * gs, position (oh, ow) of
  // tap k at oh * sh * wq + ow * sw + off[k]; the kernel that reads it so.
  struct OcInput {
    const float* x;
    int64_t gs, wq, sh, sw;
    const int64_t* off;
    detail::ConvOcKernel kernel;
  };
  void runOcTasks(const Io& io, ThreadPool* pool, const OcInput& in) const;
  // The paths of a channel-blocked x or y without a blocked form: through planes, reordered (runLayouts).
  void runLayouts(const Io& io, ThreadPool* pool) const;
  bool blockedDepthwise(const detail::KernelTable& kt) const;
  void runGemm(Io io, ThreadPool* pool) const;
  void runDepthwise(const Io& io, ThreadPool* pool) const;
  void runDepthwiseBlocked(const Io& io, ThreadPool* pool) const;
  void runDepthwiseInPlace(const Io& io, ThreadPool* pool) const;
};

}  // namespace npuc::kernels
