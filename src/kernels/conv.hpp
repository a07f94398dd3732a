// Convolution and transposed convolution over NC[D]HW float tensors, 1 to 3 spatial dims.
//
// Numerics specification of Conv (the reference computes exactly this; fast variants reproduce the bits):
//   y[n, m, o...] = applyActivation(acc)
//   acc = bias ? bias[m] : +0.0f
//   for c in the group's input channels (ascending), for each kernel tap t in row-major order:
//       x_t = the input element under tap t, or +0.0f where the tap falls in the padding
//       acc = fmaf(w[m, c, t], x_t, acc)
// Padded taps are part of the sum (as fma with +0.0f), so a fast kernel that materialises the padding as
// zeros (im2col) computes the same bits as one that does not.
//
// ConvTranspose (gather form): for each output o, acc = bias or +0; for c (ascending) in the group, for each
// tap t in row-major order whose input position i = (o + pad_begin - t*dilation) / stride is integral and
// inside the input: acc = fmaf(x[n, c, i], w[c, m, t], acc).
#pragma once

#include "kernels/activation.hpp"
#include "kernels/convert.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels {

struct ConvShape {
  int64_t batch = 1;
  int64_t in_channels = 0;   // C
  int64_t out_channels = 0;  // M
  int64_t groups = 1;
  std::vector<int64_t> in_spatial;   // [D,] H, W
  std::vector<int64_t> out_spatial;  // same rank
  std::vector<int64_t> kernel;       // same rank
  std::vector<int64_t> stride;       // same rank
  std::vector<int64_t> dilation;     // same rank
  std::vector<int64_t> pad_begin;    // same rank (pad_end is implied by out_spatial)
};

/// Reference convolution: x [N, C, in...], w [M, C/groups, k...], bias [M] or null, y [N, M, out...].
void conv_ref(const ConvShape& s, const float* x, const float* w, const float* bias, const Activation& act,
              float* y);

/// conv_ref's bits, one output row at a time (1-D and 2-D): the simulator's --exact mode. conv_rows_ref is plain
/// baseline code; conv_exact picks the same source compiled with hardware FMA when the CPU has it, and with a pool
/// of several threads splits the output channels (per image and group) among them — each output still computed by
/// the same scalar loops, so the bits are the same for every thread count.
void conv_rows_ref(const ConvShape& s, const float* x, const float* w, const float* bias, const Activation& act,
                   float* y);
void conv_exact(const ConvShape& s, const float* x, const float* w, const float* bias, const Activation& act, float* y,
                ThreadPool* pool = nullptr);

/// How a float32 activation tensor of a 2-D convolution lies in memory. kPlanes: NCHW. kBlocked8 (channels a
/// multiple of 8): per image, per block of 8 channels, per position (row-major), the block's 8 values side by side —
/// element (n, c, h, w) at ((n * C / 8 + c / 8) * H * W + h * W + w) * 8 + c % 8. A depthwise layer computes eight
/// channels per vector, so it can hand its output on blocked instead of transposing it back into planes, and a
/// pointwise layer vectorised across output channels reads eight input channels of a position from one cache line
/// (NCHW: eight planes, one line each). Layouts move values only: every output is the same sum in the same order.
enum class Layout { kPlanes, kBlocked8 };
struct Layouts {
  Layout x = Layout::kPlanes;
  Layout y = Layout::kPlanes;
};

/// A convolution prepared once (weights packed for the fastest variant of this CPU), run many times.
class Conv {
 public:
  /// `expected`: the layouts run() will be given (a pointwise convolution packs its weights for a blocked input as
  /// well then); other layouts still work.
  Conv(const ConvShape& s, const float* w, const float* bias, const Activation& act, Layouts expected = {});
  ~Conv();
  Conv(const Conv&) = delete;
  Conv& operator=(const Conv&) = delete;
  /// x and y in the layouts `l` (float32; kBlocked8 needs a 2-D convolution and channels that are a multiple of 8;
  /// runAdd's residual is in y's layout). Any convolution takes any layouts: those without a blocked form of their
  /// path reorder (a pass over the tensor); blockedForms says which have one.
  void run(const float* x, float* y, ThreadPool* pool, Layouts l = {}) const;
  /// The same over float16 and/or float32 tensors (fp16 packages): the bits of f32ToF16_ref(run(f16ToF32_ref(x)))
  /// for a float16 x and y (activation before the rounding). The fast paths convert as they read and write
  /// (depthwise, direct, 1x1; a float16 output of every GEMM path is rounded tile by tile); the others widen the
  /// whole input first.
  void run(const void* x, Storage xs, void* y, Storage ys, ThreadPool* pool) const;
  /// A residual Add fused in (float32): y = post(conv(x) + r), r of y's shape. Each task adds r to the outputs it has
  /// just computed, while they are in its cache; the bits are those of run() followed by the separate Add and
  /// activation (where both addends are NaN, which of the two NaNs the sum keeps is unspecified, as for the Add).
  /// The Conv must have been made without an activation of its own.
  void runAdd(const float* x, const float* r, const Activation& post, float* y, ThreadPool* pool,
              Layouts l = {}) const;
  /// "im2col_gemm_avx2", "depthwise_blocked_avx2", "ref", … for logs and benchmarks.
  const char* variant() const;
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Which channel-blocked tensors (Layout::kBlocked8) a convolution of this shape reads (`in`) and writes (`out`)
/// with a blocked form of its own on this CPU, with no reorder: a 2-D depthwise layer on the channel-blocked
/// depthwise kernel, and one-group convolutions on the output-channel kernel — pointwise ones, and KxK ones that
/// path takes (padded as blocks) — channels a multiple of 8, on the AVX2 table. Both false elsewhere, and with
/// NPUC_BLOCKED=0. The engine's chains ask it (Engine::blockChannels).
struct BlockedForms {
  bool in = false, out = false;
  bool out_needs_in = false;  // writes blocks well only from blocks (a pointwise layer: from planes it reads K planes)
};
BlockedForms blockedForms(const ConvShape& s);
/// Whether this CPU's table has the channel-blocked forms at all (the ones blockedForms names, and the pools of
/// kernels/layers.hpp that chains pass through); false with NPUC_BLOCKED=0.
bool blockedLayouts();

struct ConvTransposeShape {
  int64_t batch = 1;
  int64_t in_channels = 0;   // C
  int64_t out_channels = 0;  // M (total, = groups * w.shape[1])
  int64_t groups = 1;
  std::vector<int64_t> in_spatial;
  std::vector<int64_t> out_spatial;
  std::vector<int64_t> kernel;
  std::vector<int64_t> stride;
  std::vector<int64_t> dilation;
  std::vector<int64_t> pad_begin;
};

/// x [N, C, in...], w [C, M/groups, k...], bias [M] or null, y [N, M, out...].
void conv_transpose_ref(const ConvTransposeShape& s, const float* x, const float* w, const float* bias, float* y);
/// Same bits as conv_transpose_ref, parallel over (n, m).
void conv_transpose(const ConvTransposeShape& s, const float* x, const float* w, const float* bias, float* y,
                    ThreadPool* pool);

}  // namespace npuc::kernels
