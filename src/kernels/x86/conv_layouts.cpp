// Channel-blocked tensors (Layout::kBlocked8) in and out of the x86 convolution (conv_impl.hpp): pointwise
// convolutions reading blocks with the output-channel kernel or the GEMM, KxK ones on the output-channel kernel over a
// padded blocked copy, depthwise ones reading and writing them (conv_depthwise.cpp), the reorders of every other
// path, and which shapes have a blocked form on this CPU (blockedForms).
#include "kernels/x86/conv_impl.hpp"

#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace npuc::kernels {

namespace {

// Layout::kBlocked8 <-> planes (the fallback of paths without a blocked form): n images of c channels (a multiple of
// 8) of hw positions.
void toBlocked8(const float* x, float* y, int64_t n, int64_t c, int64_t hw) {
  for (int64_t b = 0; b < n * c; b += 8)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t l = 0; l < 8; ++l) y[(b * hw + p * 8) + l] = x[(b + l) * hw + p];
}
void fromBlocked8(const float* x, float* y, int64_t n, int64_t c, int64_t hw) {
  for (int64_t b = 0; b < n * c; b += 8)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t l = 0; l < 8; ++l) y[(b + l) * hw + p] = x[(b * hw + p * 8) + l];
}

// The most output channels of a pointwise convolution that reads a channel-blocked input or writes one on the
// output-channel kernel; those with more read it through the GEMM, packing B from the blocks, and write planes.
// Measured in MobileNetV2 (engine, 1 thread, per-layer profile against planes, 2026-12-05): on the output-channel
// kernel the projections with at most 64 gained (144 -> 24 @56 0.437 -> 0.366 ms, 192 -> 32 @28 0.196 -> 0.151,
// 384 -> 64 @14 0.167 -> 0.145), those with more lost (384 -> 96 @14 0.200 -> 0.215, 960 -> 320 @7 0.433 -> 0.553)
// and so did the expansions writing blocks (16 -> 96 @112 0.82 -> 0.98, 24 -> 144 @56 0.36 -> 0.44, 160 -> 960 @7
// 0.19 -> 0.27), more than the depthwise layers after them gained.
constexpr int64_t kBlockedMaxOut = 64;
// Whether a pointwise convolution of c input and m output channels reads blocks on the output-channel kernel (and
// writes them): at most kBlockedMaxOut outputs, and no more than its inputs. A shallow product on that kernel writes
// more than it computes: SqueezeNet's 16 -> 64 expansion at 55x55 0.123 -> 0.194 ms in the network (the GEMM,
// packing B from the blocks, keeps it).
bool ocReadsBlocks(int64_t c, int64_t m) { return m <= kBlockedMaxOut && m <= c; }
// Whether a pointwise convolution of c input and m output channels over `positions` output positions writes blocks
// from blocks (on the output-channel kernel): those ocReadsBlocks takes, and since 2026-12-05 (twenty-third session,
// with Concats passing blocks: Engine::blockChannels) wider ones too over maps of at least kBlockedMinPositions —
// unless the product is shallow (depth c at most kStreamDepth, where the GEMM writes C in long streams) and its output
// over kShallowMaxOut floats. Per-layer minima of three alternating `npuc bench -t 1 --profile` runs, Zen 5 AVX2, the
// networks' nodes: SqueezeNet1.1 8.56 -> 8.33 ms (its Fire modules' expansions write blocks, so their Concats and the
// squeezes after them pass blocks: squeezes 0.23 -> 0.14, 0.18 -> 0.13 ms), GoogLeNet 35.24 -> 34.83 (its inception
// modules at 28x28), MobileNetV1, MobileNetV2 and ResNet-50 within the noise. Left out, as they lost: 14x14 and 7x7
// maps (MobileNetV1's 512 -> 512 @14 1.12 -> 1.17 ms, MobileNetV2's 160 -> 960 @7 0.18 -> 0.23: the kernel's
// six-position tiles) and MobileNetV2's first expansion, 16 -> 96 at 112x112 (0.67 -> 0.71 ms; a 4.8 MB output of a
// shallow product, which the GEMM writes in long streams). MobileNetV1's 32 -> 64 at 112x112 writing blocks too: it
// 0.80 -> 0.78 ms, the depthwise layer after it 0.20 -> 0.21 (not taken).
constexpr int64_t kBlockedMinPositions = 729;
constexpr int64_t kShallowMaxOut = int64_t{1} << 18;
bool pointwiseWritesBlocks(int64_t c, int64_t m, int64_t positions) {
  if (ocReadsBlocks(c, m)) return true;
  return positions >= kBlockedMinPositions && (c > detail::kStreamDepth || m * positions <= kShallowMaxOut);
}

using detail::ConvPath;
using detail::dwInPlace;
using detail::isPointwise;
using detail::toGeom2;

}  // namespace

// Whether the depthwise path has its channel-blocked form here (reading and writing blocks).
bool Conv::Impl::blockedDepthwise(const detail::KernelTable& kt) const {
  return path == ConvPath::kDepthwise && kt.dwconv_block8 != nullptr && !(dw_in_place && kt.dwconv_in_place != nullptr) &&
         s.out_channels % 8 == 0;
}

void Conv::Impl::runOcBlocked(const Io& io, ThreadPool* pool) const {
  // The tensor itself (one group): position (oh, ow) of input channel k at oh * sh * wq + ow * sw + off[k] (a strided
  // 1x1: its strides; sw scaled by 8 for blocks).
  const OcInput in{io.x,  s.in_channels * HW, io.xb ? 8 * g.W : g.W, g.sh, io.xb ? 8 * g.sw : g.sw,
                   io.xb ? bk_off.data() : bk_plane_off.data(), detail::activeKernels().conv_oc_blocked};
  runOcTasks(io, pool, in);
}

void Conv::Impl::runOcLayouts(const Io& io, ThreadPool* pool) const {
  // A KxK convolution on the output-channel kernel (conv_oc_blocked: any column stride, a channel-blocked output):
  // a channel-blocked input padded as blocks (its taps at ocb_off, positions 8 floats apart), or planes as runOc
  // pads them.
  const detail::ConvOcKernel kern = detail::activeKernels().conv_oc_blocked;
  if (io.xb) {
    const OcInput in{padInputBlocked(io, pool), oc_gs, 8 * oc_wq, g.sh, 8 * g.sw, ocb_off.data(), kern};
    return runOcTasks(io, pool, in);
  }
  runOcTasks(io, pool, OcInput{padInput(io, pool, oc_wq, oc_pp, oc_gs), oc_gs, oc_wq, g.sh, g.sw, oc_off.data(), kern});
}

void Conv::Impl::runLayouts(const Io& io, ThreadPool* pool) const {
  if (io.xh != nullptr || io.yh != nullptr || s.in_spatial.size() > 2)
    fail(ErrorCode::kInternal, "Conv: channel-blocked tensors are float32 with 1 or 2 spatial dims");
  if ((io.xb && s.in_channels % 8 != 0) || (io.yb && s.out_channels % 8 != 0))
    fail(ErrorCode::kInternal, "Conv: a channel-blocked tensor needs channels that are a multiple of 8 (here {} -> {})",
         s.in_channels, s.out_channels);
  const detail::KernelTable& kt = detail::activeKernels();
  // A pointwise convolution: blocks out, or few output channels from more input channels, on the output-channel
  // kernel; a blocked input into planes otherwise on the GEMM, its B packed from the blocks. A strided 1x1 (bk_off
  // set, `pointwise` not): on the output-channel kernel in every case.
  if (!bk_off.empty() && kt.conv_oc_blocked != nullptr &&
      (io.yb ? mg % 8 == 0 : !pointwise || ocReadsBlocks(cg, mg) || kt.pack_b_blocked8 == nullptr))
    return runOcBlocked(io, pool);
  if (pointwise && s.groups == 1 && io.xb && !io.yb && kt.pack_b_blocked8 != nullptr) {
    ensurePacked();
    return runGemm(io, pool);
  }
  if (blockedDepthwise(kt)) return runDepthwiseBlocked(io, pool);
  if (useOc(kt) && kt.conv_oc_blocked != nullptr && s.groups == 1 && (!io.xb || !ocb_off.empty()) &&
      (!io.yb || mg % 8 == 0))
    return runOcLayouts(io, pool);
  // Through planes.
  const int64_t out_n = s.batch * s.out_channels * N;
  Io p = io;
  p.xb = p.yb = false;
  std::vector<float> xs, ys, rs;
  if (io.xb) {
    xs.resize(static_cast<size_t>(s.batch * s.in_channels * HW));
    fromBlocked8(io.x, xs.data(), s.batch, s.in_channels, HW);
    p.x = xs.data();
  }
  if (io.yb) {
    ys.resize(static_cast<size_t>(out_n));
    p.y = ys.data();
    if (io.r != nullptr) {  // the residual is in y's layout
      rs.resize(static_cast<size_t>(out_n));
      fromBlocked8(io.r, rs.data(), s.batch, s.out_channels, N);
      p.r = rs.data();
    }
  }
  run(p, pool);
  if (io.yb) toBlocked8(ys.data(), io.y, s.batch, s.out_channels, N);
}

void Conv::run(const float* x, float* y, ThreadPool* pool, Layouts l) const {
  impl_->run(Impl::Io{.x = x, .y = y, .xb = l.x == Layout::kBlocked8, .yb = l.y == Layout::kBlocked8}, pool);
}

void Conv::runAdd(const float* x, const float* r, const Activation& post, float* y, ThreadPool* pool,
                  Layouts l) const {
  if (impl_->act.kind != ActKind::kNone)
    fail(ErrorCode::kInternal, "Conv::runAdd: the convolution has an activation of its own");
  const bool xb = l.x == Layout::kBlocked8, yb = l.y == Layout::kBlocked8;
  impl_->run(Impl::Io{.x = x, .y = y, .r = r, .post = post, .xb = xb, .yb = yb}, pool);
}

namespace {

// A depthwise convolution with the channel-blocked form on this table (channels a multiple of 8).
bool isBlockedDepthwise(const ConvShape& s, const detail::KernelTable& kt) {
  const int64_t c = s.out_channels;
  if (s.in_spatial.size() != 2 || c == 0 || c % 8 != 0 || s.groups != c || s.in_channels != c) return false;
  return !(kt.dwconv_in_place != nullptr && dwInPlace(toGeom2(s)));
}

// Whether this CPU's table has the channel-blocked forms the engine may chain (and NPUC_BLOCKED=0 is not set: planes
// everywhere, to compare). The AVX-512 table (conv_oc_all) is not measured: its depthwise layers mostly read in
// place, and a blocked convolution would leave its 512-bit output-channel kernel for the AVX2 one.
bool blockedTable(const detail::KernelTable& kt) {
  static const bool off = [] {
    const char* e = std::getenv("NPUC_BLOCKED");
    return e != nullptr && std::strcmp(e, "0") == 0;
  }();
  return !off && kt.dwconv_block8 != nullptr && kt.conv_oc_blocked != nullptr && !kt.conv_oc_all;
}

}  // namespace

bool blockedLayouts() { return blockedTable(detail::activeKernels()); }

BlockedForms blockedForms(const ConvShape& s) {
  const detail::KernelTable& kt = detail::activeKernels();
  if (!blockedTable(kt) || s.in_spatial.size() != 2 || s.batch < 1) return {};
  if (isBlockedDepthwise(s, kt)) return {true, true};
  if (s.groups != 1 || s.out_channels % 8 != 0) return {};
  const detail::Geom2 g = toGeom2(s);
  if (g.OH * g.OW == 0) return {};
  const int64_t K = s.in_channels * g.KH * g.KW;
  // A shallow KxK layer (a stem) writes blocks on the output-channel kernel (Conv::Impl::oc_blocks_only).
  if (detail::ocForBlocksOnly(g, s.out_channels, K)) return {false, true};
  // The paths Conv::Impl::runLayouts takes without a reorder: bk_off (pointwise), runOcLayouts (useOc; the im2col
  // case of oc_avx2 left out: whether a layer runs on im2col or the direct GEMM is the constructor's choice).
  // A pointwise layer writing blocks from planes broadcasts from K planes at once (K streams: ResNet-50's 256 -> 64
  // at 56x56 1.69 -> 1.9 ms in the network against the GEMM), so only from blocks.
  const bool in = s.in_channels % 8 == 0;
  if (detail::isPointwise(g)) return {in, in && pointwiseWritesBlocks(s.in_channels, s.out_channels, g.OH * g.OW), true};
  // A 1x1 of stride 2 or more (ResNet's downsamples) on the output-channel kernel, its positions read with the stride:
  // in either layout out, and blocks from blocks only, as the pointwise layers (2026-12-05, twenty-third session: the
  // downsamples were the last layers keeping each ResNet stage's residual chain in planes; per-layer minima of three
  // alternating `npuc bench -t 1 --profile` runs, the networks' nodes: ResNet-18 41.35 -> 40.67 ms, ResNet-50 93.99 ->
  // 92.80 — its layer1 chain blocked from the stem's max pool on: 1.25 -> 1.09 ms each 256 -> 64, 1.46 -> 1.33 each
  // 64 -> 256 — though its deeper downsamples themselves lost 5 % against the GEMM, 2.59 -> 2.72 ms for 256 -> 512).
  if (detail::isStridedPointwise(g)) return {in, in, true};
  if (detail::ocEligible(g, s.out_channels, K) && detail::ocAvx2Takes(g, s.out_channels, K, false)) return {in, true};
  return {};
}

}  // namespace npuc::kernels
