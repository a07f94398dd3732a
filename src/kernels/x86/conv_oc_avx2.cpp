// AVX2/FMA direct convolution vectorised across output channels (compiled with -mavx2 -mfma -mf16c):
// f32_conv_oc__avx2, the AVX2 form of f32_conv_oc__avx512 on the same ConvOcArgs (weights in steps of 32 channels).
// A register tile holds up to 6 consecutive output positions of the (dense) output plane — a tile may run on into
// the next output row — by 16 output channels (12 ymm accumulators, two weight vectors, one broadcast): per tap it
// loads 16 weights and broadcasts one input value per position from that position's own base in the padded input,
// so nothing is packed per call, no lane computes a position that is not there, and rows of 7 or 14 positions leave
// no narrow column tail (the im2col path runs a 49-column product as three 16-column panels and a one-column tail).
// The two halves of a 32-channel block run one after the other over the same tile (its input taps still in L1).
// The tile is transposed in registers (8 x 8 blocks) and stored as runs of the NCHW output. One fma per tap per
// output, taps in the reference order: the bits of conv_ref; float16 outputs rounded as stored, with floatToHalf's bits.
// A weight vector feeds 6 fmas here (14 on AVX-512), so the AVX2 table gives this kernel only the convolutions where
// it beats the GEMM paths (Conv::Impl::oc_avx2: shallow ones, and im2col's up to a depth of 1152).
#include "kernels/x86/act_avx2.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/lanes_avx2.hpp"
#include "kernels/x86/store_avx2.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

namespace {

constexpr int kMaxPixels = 6;

// kP positions (flat index q of the output plane onwards; xs[i]: position i's base in the padded input) by the 16
// channels c0.. of the block (c0 = 0 or 16; `channels` of the block valid in all).
template <int kP>
void tile(const ConvOcArgs& p, const float* const* xs, int64_t q, int c0) {
  // Named accumulators and pointers (an array indexed after the loop would be kept in memory by the compiler, and
  // stored to on every tap); those of positions past kP are never used and not computed.
  const __m256 b0 = p.bias != nullptr ? _mm256_loadu_ps(p.bias + c0) : _mm256_setzero_ps();
  const __m256 b1 = p.bias != nullptr ? _mm256_loadu_ps(p.bias + c0 + 8) : _mm256_setzero_ps();
  __m256 a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1, a40 = b0, a41 = b1,
         a50 = b0, a51 = b1;
  const float* x0 = xs[0];
  const float* x1 = kP > 1 ? xs[1] : x0;
  const float* x2 = kP > 2 ? xs[2] : x0;
  const float* x3 = kP > 3 ? xs[3] : x0;
  const float* x4 = kP > 4 ? xs[4] : x0;
  const float* x5 = kP > 5 ? xs[5] : x0;
  const float* w = p.w + c0;
  const int64_t* off = p.off;
  const int64_t K = p.K;
  for (int64_t k = 0; k < K; ++k, w += kOcBlock) {
    const int64_t o = off[k];
    const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8);
#define NPUC_OC_STEP(i)                                      \
  if constexpr (kP > i) {                                    \
    const __m256 xv = _mm256_broadcast_ss(x##i + o);         \
    a##i##0 = _mm256_fmadd_ps(w0, xv, a##i##0);              \
    a##i##1 = _mm256_fmadd_ps(w1, xv, a##i##1);              \
  }
    NPUC_OC_STEP(0) NPUC_OC_STEP(1) NPUC_OC_STEP(2) NPUC_OC_STEP(3) NPUC_OC_STEP(4) NPUC_OC_STEP(5)
#undef NPUC_OC_STEP
  }
  __m256 acc[kMaxPixels][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}, {a40, a41}, {a50, a51}};
  if (p.act != nullptr && p.act->kind != ActKind::kNone) {
    const Act8 f(*p.act);
    for (int i = 0; i < kP; ++i) acc[i][0] = f.apply(acc[i][0]), acc[i][1] = f.apply(acc[i][1]);
  }
  for (int v = 0; v < 2; ++v) {
    const int c = c0 + 8 * v;
    if (c >= p.channels) break;
    __m256 r[8];
    for (int i = 0; i < 8; ++i) r[i] = i < kP ? acc[i][v] : _mm256_setzero_ps();
    transpose8(r);
    const int n = p.channels - c < 8 ? p.channels - c : 8;
    if (p.yh != nullptr) {
      for (int j = 0; j < n; ++j) storeFirstHalves(p.yh + (c + j) * p.y_plane + q, toHalf8(r[j]), kP);
    } else {
      for (int j = 0; j < n; ++j) storeFirst(p.y + (c + j) * p.y_plane + q, r[j], kP);
    }
  }
}

void tileOf(int pixels, const ConvOcArgs& p, const float* const* xs, int64_t q, int c0) {
  switch (pixels) {
    case 1: return tile<1>(p, xs, q, c0);
    case 2: return tile<2>(p, xs, q, c0);
    case 3: return tile<3>(p, xs, q, c0);
    case 4: return tile<4>(p, xs, q, c0);
    case 5: return tile<5>(p, xs, q, c0);
    default: return tile<6>(p, xs, q, c0);
  }
}

}  // namespace

void f32_conv_oc__avx2(const ConvOcArgs& p) {
  if (p.out_w <= 0 || p.channels <= 0 || p.oh1 <= p.oh0) return;
  // The task's positions in equal tiles of at most kMaxPixels (49 -> 6 x 4 + 5 x 5): the fewest tiles, none narrow.
  const int64_t q0 = p.oh0 * p.out_w, positions = (p.oh1 - p.oh0) * p.out_w;
  const int64_t tiles = (positions + kMaxPixels - 1) / kMaxPixels;
  const int64_t base = positions / tiles, wider = positions % tiles;
  int64_t q = q0, oh = p.oh0, ow = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    const int n = static_cast<int>(base + (t < wider ? 1 : 0));
    const float* xs[kMaxPixels];
    for (int i = 0; i < n; ++i) {
      xs[i] = p.xq + oh * p.sh * p.wq + ow * p.sw;
      if (++ow == p.out_w) ow = 0, ++oh;
    }
    tileOf(n, p, xs, q, 0);
    if (p.channels > 16) tileOf(n, p, xs, q, 16);
    q += n;
  }
}

}  // namespace npuc::kernels::detail
