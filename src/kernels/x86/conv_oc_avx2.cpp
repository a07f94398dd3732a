// AVX2/FMA direct convolution vectorised across output channels (compiled with -mavx2 -mfma -mf16c):
// f32_conv_oc__avx2, the AVX2 form of f32_conv_oc__avx512 on the same ConvOcArgs (weights in steps of 32 channels).
// A register tile holds up to 6 consecutive output positions of the (dense) output plane — a tile may run on into
// the next output row — by 16 output channels (12 ymm accumulators, two weight vectors, one broadcast): per tap it
// loads 16 weights and broadcasts one input value per position from that position's own base in the padded input,
// so nothing is packed per call, no lane computes a position that is not there, and rows of 7 or 14 positions leave
// no narrow column tail (the im2col path runs a 49-column product as three 16-column panels and a one-column tail).
// The two halves of a 32-channel block run one after the other over the same tile (its input taps still in L1); a
// block of 17-24 channels runs as one, 4 positions by 24 channels (three weight vectors and four broadcasts per tap,
// not a second half with half its lanes idle: MobileNetV2's 144 -> 24 projection 0.35 -> 0.24 ms on a blocked input).
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
constexpr int kMaxPixels24 = 4;  // positions of a 24-channel tile (tile24)

// Stores channels c .. c + 7 (those below p.channels) of np positions from q on, r[i] position i's vector: into the
// NCHW planes (transposed), or as they are into a channel-blocked output.
inline void store8(const ConvOcArgs& p, __m256 r[8], int np, int c, int64_t q) {
  if (p.yb != nullptr) {
    float* d = p.yb + ((c / 8) * p.y_plane + q) * 8;
    for (int i = 0; i < np; ++i) _mm256_storeu_ps(d + i * 8, r[i]);
    return;
  }
  transpose8(r);
  const int n = p.channels - c < 8 ? p.channels - c : 8;
  if (p.yh != nullptr) {
    for (int j = 0; j < n; ++j) storeFirstHalves(p.yh + (c + j) * p.y_plane + q, toHalf8(r[j]), np);
  } else {
    for (int j = 0; j < n; ++j) storeFirst(p.y + (c + j) * p.y_plane + q, r[j], np);
  }
}

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
    store8(p, r, kP, c, q);
  }
}

// kP (<= 4) positions by 24 channels (a block of 17-24 channels: 4 x 3 accumulators, three weight vectors and four
// broadcasts per tap, where a 16-channel half and one of 8 would run the second with half its lanes idle).
template <int kP>
void tile24(const ConvOcArgs& p, const float* const* xs, int64_t q) {
  // Named accumulators and pointers, as in tile().
  const __m256 b0 = p.bias != nullptr ? _mm256_loadu_ps(p.bias) : _mm256_setzero_ps();
  const __m256 b1 = p.bias != nullptr ? _mm256_loadu_ps(p.bias + 8) : _mm256_setzero_ps();
  const __m256 b2 = p.bias != nullptr ? _mm256_loadu_ps(p.bias + 16) : _mm256_setzero_ps();
  __m256 a00 = b0, a01 = b1, a02 = b2, a10 = b0, a11 = b1, a12 = b2, a20 = b0, a21 = b1, a22 = b2, a30 = b0, a31 = b1,
         a32 = b2;
  const float* x0 = xs[0];
  const float* x1 = kP > 1 ? xs[1] : x0;
  const float* x2 = kP > 2 ? xs[2] : x0;
  const float* x3 = kP > 3 ? xs[3] : x0;
  const float* w = p.w;
  const int64_t* off = p.off;
  const int64_t K = p.K;
  for (int64_t k = 0; k < K; ++k, w += kOcBlock) {
    const int64_t o = off[k];
    const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8), w2 = _mm256_loadu_ps(w + 16);
#define NPUC_OC_STEP(i)                                      \
  if constexpr (kP > i) {                                    \
    const __m256 xv = _mm256_broadcast_ss(x##i + o);         \
    a##i##0 = _mm256_fmadd_ps(w0, xv, a##i##0);              \
    a##i##1 = _mm256_fmadd_ps(w1, xv, a##i##1);              \
    a##i##2 = _mm256_fmadd_ps(w2, xv, a##i##2);              \
  }
    NPUC_OC_STEP(0) NPUC_OC_STEP(1) NPUC_OC_STEP(2) NPUC_OC_STEP(3)
#undef NPUC_OC_STEP
  }
  __m256 acc[kMaxPixels24][3] = {{a00, a01, a02}, {a10, a11, a12}, {a20, a21, a22}, {a30, a31, a32}};
  if (p.act != nullptr && p.act->kind != ActKind::kNone) {
    const Act8 f(*p.act);
    for (int i = 0; i < kP; ++i)
      for (int v = 0; v < 3; ++v) acc[i][v] = f.apply(acc[i][v]);
  }
  for (int v = 0; v < 3; ++v) {
    const int c = 8 * v;
    if (c >= p.channels) break;
    __m256 r[8];
    for (int i = 0; i < 8; ++i) r[i] = i < kP ? acc[i][v] : _mm256_setzero_ps();
    store8(p, r, kP, c, q);
  }
}

void tile24Of(int pixels, const ConvOcArgs& p, const float* const* xs, int64_t q) {
  switch (pixels) {
    case 1: return tile24<1>(p, xs, q);
    case 2: return tile24<2>(p, xs, q);
    case 3: return tile24<3>(p, xs, q);
    default: return tile24<4>(p, xs, q);
  }
}

// Calls f(n, xs, q) for the task's positions in equal tiles of at most `most` (49 -> 6 x 4 + 5 x 5 for 6): the fewest
// tiles, none narrow; xs[i] is position i's base in the padded input.
template <class F>
void forTiles(const ConvOcArgs& p, int most, F f) {
  const int64_t q0 = p.oh0 * p.out_w, positions = (p.oh1 - p.oh0) * p.out_w;
  const int64_t tiles = (positions + most - 1) / most;
  const int64_t base = positions / tiles, wider = positions % tiles;
  int64_t q = q0, oh = p.oh0, ow = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    const int n = static_cast<int>(base + (t < wider ? 1 : 0));
    const float* xs[kMaxPixels];
    for (int i = 0; i < n; ++i) {
      xs[i] = p.xq + oh * p.sh * p.wq + ow * p.sw;
      if (++ow == p.out_w) ow = 0, ++oh;
    }
    f(n, xs, q);
    q += n;
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
  if (p.channels > 16 && p.channels <= 24) {
    forTiles(p, kMaxPixels24, [&](int n, const float* const* xs, int64_t q) { tile24Of(n, p, xs, q); });
    return;
  }
  // Halves of 16 channels over tiles of 6 positions, both halves over each tile while its input taps are in L1.
  forTiles(p, kMaxPixels, [&](int n, const float* const* xs, int64_t q) {
    tileOf(n, p, xs, q, 0);
    if (p.channels > 16) tileOf(n, p, xs, q, 16);
  });
}

}  // namespace npuc::kernels::detail
