// Channel-blocked tensors (Layout::kBlocked8) in and out of the x86 convolution (conv_impl.hpp): the pointwise
// convolution reading blocks with the output-channel kernel, the depthwise one writing them (conv_depthwise.cpp), the
// reorders of every other path, and when a depthwise -> pointwise pair pays on this CPU (blockedPairPays).
#include "kernels/x86/conv_impl.hpp"

#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace npuc::kernels {

namespace {

using detail::ceilDiv;
using detail::ConvPath;
using detail::dwInPlace;
using detail::kOcBlock;
using detail::toGeom2;

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

}  // namespace

bool Conv::Impl::blockedOut(const detail::KernelTable& kt) const {
  return path == ConvPath::kDepthwise && kt.dwconv_block8 != nullptr && !(dw_in_place && kt.dwconv_in_place != nullptr) &&
         s.out_channels % 8 == 0;
}

void Conv::Impl::runOcBlocked(const Io& io, ThreadPool* pool) const {
  const detail::KernelTable& kt = detail::activeKernels();
  const int threads = pool != nullptr ? pool->size() : 1;
  // Tasks as runOc's: image x channel block x chunks of output rows, about eight per thread.
  const int64_t rows = std::clamp<int64_t>(s.batch * oc_blocks * g.OH / (8 * threads), 1, g.OH);
  const int64_t row_tasks = ceilDiv(g.OH, rows);
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (oc_blocks * row_tasks), blk = t / row_tasks % oc_blocks, r = t % row_tasks;
      detail::ConvOcArgs a;
      a.xq = io.x + b * s.in_channels * HW;  // position (oh, ow) of channel k at oh * 8W + ow * 8 + bk_off[k]
      a.wq = 8 * g.W;
      a.off = bk_off.data();
      a.K = K;
      a.w = oc_w.data() + blk * K * kOcBlock;
      a.bias = bias.empty() ? nullptr : oc_bias.data() + blk * kOcBlock;
      a.act = &act;
      a.sh = 1;
      a.sw = 8;
      a.oh0 = r * rows;
      a.oh1 = std::min(g.OH, a.oh0 + rows);
      a.out_w = g.OW;
      const int64_t y0 = (b * s.out_channels + blk * kOcBlock) * N;
      a.y = io.y + y0;
      a.y_plane = N;
      a.channels = static_cast<int>(std::min(kOcBlock, mg - blk * kOcBlock));
      kt.conv_oc_blocked(a);
      for (int c = 0; c < a.channels && io.r != nullptr; ++c)
        finish(io, y0 + c * N + a.oh0 * g.OW, (a.oh1 - a.oh0) * g.OW);
    }
  };
  detail::runTasks(pool, s.batch * oc_blocks * row_tasks, body);
}

void Conv::Impl::runLayouts(const Io& io, ThreadPool* pool) const {
  if (io.xh != nullptr || io.yh != nullptr || s.in_spatial.size() > 2)
    fail(ErrorCode::kInternal, "Conv: channel-blocked tensors are float32 with 1 or 2 spatial dims");
  if ((io.xb && s.in_channels % 8 != 0) || (io.yb && s.out_channels % 8 != 0))
    fail(ErrorCode::kInternal, "Conv: a channel-blocked tensor needs channels that are a multiple of 8 (here {} -> {})",
         s.in_channels, s.out_channels);
  const detail::KernelTable& kt = detail::activeKernels();
  if (io.xb && !io.yb && !bk_off.empty() && kt.conv_oc_blocked != nullptr) return runOcBlocked(io, pool);
  if (io.yb && !io.xb && io.r == nullptr && blockedOut(kt)) return runDepthwiseBlocked(io, pool);
  // Through planes.
  const int64_t out_n = s.batch * s.out_channels * N;
  Io p = io;
  p.xb = p.yb = false;
  std::vector<float> xs, ys;
  if (io.xb) {
    xs.resize(static_cast<size_t>(s.batch * s.in_channels * HW));
    fromBlocked8(io.x, xs.data(), s.batch, s.in_channels, HW);
    p.x = xs.data();
  }
  if (io.yb) {
    ys.resize(static_cast<size_t>(out_n));
    p.y = ys.data();
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
  if (l.y != Layout::kPlanes) fail(ErrorCode::kInternal, "Conv::runAdd: the output must be planes");
  impl_->run(Impl::Io{.x = x, .y = y, .r = r, .post = post, .xb = l.x == Layout::kBlocked8}, pool);
}

// The most output channels of a pointwise convolution reading a channel-blocked input (blockedPairPays).
constexpr int64_t kBlockedMaxOut = 64;

bool blockedPairPays(const ConvShape& dw, const ConvShape& pw) {
  static const bool off = [] {  // NPUC_BLOCKED=0: planes everywhere, to compare
    const char* e = std::getenv("NPUC_BLOCKED");
    return e != nullptr && std::strcmp(e, "0") == 0;
  }();
  const detail::KernelTable& kt = detail::activeKernels();
  if (off || kt.dwconv_block8 == nullptr || kt.conv_oc_blocked == nullptr) return false;
  if (dw.in_spatial.size() != 2 || pw.in_spatial.size() != 2 || dw.batch != pw.batch) return false;
  const int64_t c = dw.out_channels;
  if (c == 0 || c % 8 != 0 || dw.groups != c || dw.in_channels != c || pw.groups != 1 || pw.in_channels != c) return false;
  for (size_t d = 0; d < 2; ++d) {
    if (pw.kernel[d] != 1 || pw.stride[d] != 1 || pw.pad_begin[d] != 0 || pw.in_spatial[d] != dw.out_spatial[d] ||
        pw.out_spatial[d] != pw.in_spatial[d])
      return false;
  }
  // Pointwise layers with more output channels stay on the GEMM: in MobileNetV2 (engine, 1 thread, per-layer profile
  // against planes) 384 -> 96 @14 0.200 -> 0.215 ms, 576 -> 96 @14 0.305 -> 0.325, 960 -> 320 @7 0.433 -> 0.553,
  // where those with at most 64 gained (144 -> 24 @56 0.437 -> 0.366, 192 -> 32 @28 0.196 -> 0.151, 384 -> 64 @14
  // 0.167 -> 0.145).
  if (pw.out_channels > kBlockedMaxOut) return false;
  return !(kt.dwconv_in_place != nullptr && dwInPlace(toGeom2(dw)));
}

}  // namespace npuc::kernels
