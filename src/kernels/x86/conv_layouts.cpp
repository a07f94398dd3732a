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

using detail::ConvPath;
using detail::dwInPlace;
using detail::isPointwise;
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

// Whether the depthwise path has its channel-blocked form here (reading and writing blocks).
bool Conv::Impl::blockedDepthwise(const detail::KernelTable& kt) const {
  return path == ConvPath::kDepthwise && kt.dwconv_block8 != nullptr && !(dw_in_place && kt.dwconv_in_place != nullptr) &&
         s.out_channels % 8 == 0;
}

void Conv::Impl::runOcBlocked(const Io& io, ThreadPool* pool) const {
  // The tensor itself (one group): position (oh, ow) of input channel k at oh * wq + ow * sw + off[k].
  const OcInput in{io.x,  s.in_channels * HW, io.xb ? 8 * g.W : g.W, 1, io.xb ? 8 : 1,
                   io.xb ? bk_off.data() : bk_plane_off.data(), detail::activeKernels().conv_oc_blocked};
  runOcTasks(io, pool, in);
}

void Conv::Impl::runLayouts(const Io& io, ThreadPool* pool) const {
  if (io.xh != nullptr || io.yh != nullptr || s.in_spatial.size() > 2)
    fail(ErrorCode::kInternal, "Conv: channel-blocked tensors are float32 with 1 or 2 spatial dims");
  if ((io.xb && s.in_channels % 8 != 0) || (io.yb && s.out_channels % 8 != 0))
    fail(ErrorCode::kInternal, "Conv: a channel-blocked tensor needs channels that are a multiple of 8 (here {} -> {})",
         s.in_channels, s.out_channels);
  const detail::KernelTable& kt = detail::activeKernels();
  if (!bk_off.empty() && kt.conv_oc_blocked != nullptr && (!io.yb || (mg % 8 == 0 && io.r == nullptr)))
    return runOcBlocked(io, pool);
  if (blockedDepthwise(kt)) return runDepthwiseBlocked(io, pool);
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

namespace {

// A depthwise convolution with the channel-blocked form on this table (channels a multiple of 8).
bool isBlockedDepthwise(const ConvShape& s, const detail::KernelTable& kt) {
  const int64_t c = s.out_channels;
  if (s.in_spatial.size() != 2 || c == 0 || c % 8 != 0 || s.groups != c || s.in_channels != c) return false;
  return !(kt.dwconv_in_place != nullptr && dwInPlace(toGeom2(s)));
}

}  // namespace

bool blockedPairPays(const ConvShape& producer, const ConvShape& consumer) {
  static const bool off = [] {  // NPUC_BLOCKED=0: planes everywhere, to compare
    const char* e = std::getenv("NPUC_BLOCKED");
    return e != nullptr && std::strcmp(e, "0") == 0;
  }();
  const detail::KernelTable& kt = detail::activeKernels();
  // The AVX-512 table (conv_oc_all) is not measured: its depthwise layers mostly read in place, and a blocked
  // pointwise consumer would leave its 512-bit output-channel kernel for the AVX2 one.
  if (off || kt.dwconv_block8 == nullptr || kt.conv_oc_blocked == nullptr || kt.conv_oc_all) return false;
  if (producer.batch != consumer.batch || producer.out_channels != consumer.in_channels ||
      producer.out_spatial != consumer.in_spatial)
    return false;
  // Depthwise -> pointwise. Pointwise layers with more output channels stay on the GEMM: in MobileNetV2 (engine,
  // 1 thread, per-layer profile against planes) 384 -> 96 @14 0.200 -> 0.215 ms, 576 -> 96 @14 0.305 -> 0.325,
  // 960 -> 320 @7 0.433 -> 0.553, where those with at most 64 gained (144 -> 24 @56 0.437 -> 0.366, 192 -> 32 @28
  // 0.196 -> 0.151, 384 -> 64 @14 0.167 -> 0.145).
  const bool pointwise = consumer.in_spatial.size() == 2 && consumer.groups == 1 && isPointwise(toGeom2(consumer));
  if (isBlockedDepthwise(producer, kt) && pointwise) return consumer.out_channels <= kBlockedMaxOut;
  // Pointwise -> depthwise (the depthwise layer would copy its input's rows into its padded block instead of
  // transposing eight planes; the pointwise one would write blocks with the output-channel kernel, Conv::run takes
  // both): slower. MobileNetV2's expansions ran 8-40 % slower on the output-channel kernel than on the GEMM (16 -> 96
  // @112 0.82 -> 0.98 ms, 24 -> 144 @56 0.36 -> 0.44, 160 -> 960 @7 0.19 -> 0.27; 2026-12-05, engine profile, 1 thread),
  // more than the depthwise layers gained.
  return false;
}

}  // namespace npuc::kernels
