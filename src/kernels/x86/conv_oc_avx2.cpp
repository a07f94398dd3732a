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
// A block of 25-32 channels deeper than kOcAvx2BlockedDepth runs as tiles of 3 positions by 32 channels with the
// taps in chunks (blocked32, below). The AVX2 table gives this kernel the convolutions where it beats the GEMM paths
// (Conv::Impl::oc_avx2: shallow ones, im2col's up to a depth of 1152, and those with 32 output channels or more).
#include "kernels/x86/act_avx2.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/lanes_avx2.hpp"
#include "kernels/x86/store_avx2.hpp"

#include <immintrin.h>

#include <algorithm>

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

// A block of 25-32 channels: tiles of 3 positions by all 32 channels (4 weight vectors and 3 broadcasts per tap), the
// taps in chunks of about 72 so that a chunk's weights (9 KiB), the input rows it reads and the band's partial sums
// stay in L1 together (the whole depth at once streamed the block's weights from L2 for every tile: ResNet's 3x3
// layers at ~78 % of the FMA peak). Output rows go in bands of about 96 positions; the band's sums wait in `acc`
// (position-major, 32 floats each) between chunks, stored and reloaded as float32, so every output is still its bias
// then one fma per tap in the reference order: the same bits.
constexpr int64_t kChunkTaps = 72;
constexpr int64_t kBandPositions = 96;

template <int kP>
void tile32(const ConvOcArgs& p, const float* const* xs, float* acc, int64_t k0, int64_t kc) {
  __m256 a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23;
  if (k0 == 0) {
    const __m256 z = _mm256_setzero_ps();
    const __m256 b0 = p.bias != nullptr ? _mm256_loadu_ps(p.bias) : z;
    const __m256 b1 = p.bias != nullptr ? _mm256_loadu_ps(p.bias + 8) : z;
    const __m256 b2 = p.bias != nullptr ? _mm256_loadu_ps(p.bias + 16) : z;
    const __m256 b3 = p.bias != nullptr ? _mm256_loadu_ps(p.bias + 24) : z;
    a00 = a10 = a20 = b0, a01 = a11 = a21 = b1, a02 = a12 = a22 = b2, a03 = a13 = a23 = b3;
  } else {
#define NPUC_OC_LOAD(i)                                                                                 \
  if constexpr (kP > i) {                                                                              \
    a##i##0 = _mm256_loadu_ps(acc + i * 32), a##i##1 = _mm256_loadu_ps(acc + i * 32 + 8);              \
    a##i##2 = _mm256_loadu_ps(acc + i * 32 + 16), a##i##3 = _mm256_loadu_ps(acc + i * 32 + 24);        \
  }
    NPUC_OC_LOAD(0) NPUC_OC_LOAD(1) NPUC_OC_LOAD(2)
#undef NPUC_OC_LOAD
  }
  const float* x0 = xs[0];
  const float* x1 = kP > 1 ? xs[1] : x0;
  const float* x2 = kP > 2 ? xs[2] : x0;
  const float* w = p.w + k0 * kOcBlock;
  const int64_t* off = p.off + k0;
  for (int64_t k = 0; k < kc; ++k, w += kOcBlock) {
    const int64_t o = off[k];
    const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8), w2 = _mm256_loadu_ps(w + 16),
                 w3 = _mm256_loadu_ps(w + 24);
#define NPUC_OC_STEP(i)                                      \
  if constexpr (kP > i) {                                    \
    const __m256 xv = _mm256_broadcast_ss(x##i + o);         \
    a##i##0 = _mm256_fmadd_ps(w0, xv, a##i##0);              \
    a##i##1 = _mm256_fmadd_ps(w1, xv, a##i##1);              \
    a##i##2 = _mm256_fmadd_ps(w2, xv, a##i##2);              \
    a##i##3 = _mm256_fmadd_ps(w3, xv, a##i##3);              \
  }
    NPUC_OC_STEP(0) NPUC_OC_STEP(1) NPUC_OC_STEP(2)
#undef NPUC_OC_STEP
  }
#define NPUC_OC_SAVE(i)                                                                                  \
  if constexpr (kP > i) {                                                                               \
    _mm256_storeu_ps(acc + i * 32, a##i##0), _mm256_storeu_ps(acc + i * 32 + 8, a##i##1);               \
    _mm256_storeu_ps(acc + i * 32 + 16, a##i##2), _mm256_storeu_ps(acc + i * 32 + 24, a##i##3);         \
  }
  NPUC_OC_SAVE(0) NPUC_OC_SAVE(1) NPUC_OC_SAVE(2)
#undef NPUC_OC_SAVE
}

void tile32Of(int pixels, const ConvOcArgs& p, const float* const* xs, float* acc, int64_t k0, int64_t kc) {
  switch (pixels) {
    case 1: return tile32<1>(p, xs, acc, k0, kc);
    case 2: return tile32<2>(p, xs, acc, k0, kc);
    default: return tile32<3>(p, xs, acc, k0, kc);
  }
}

// The band's finished sums (n positions from q on, acc position-major): the activation, then 8 positions by 8
// channels at a time through store8.
void storeBand(const ConvOcArgs& p, const float* acc, int64_t n, int64_t q) {
  const bool act = p.act != nullptr && p.act->kind != ActKind::kNone;
  const Act8 f(act ? *p.act : Activation{});
  for (int64_t i0 = 0; i0 < n; i0 += 8) {
    const int np = static_cast<int>(n - i0 < 8 ? n - i0 : 8);
    for (int c = 0; c < p.channels; c += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) {
        r[i] = i < np ? _mm256_loadu_ps(acc + (i0 + i) * 32 + c) : _mm256_setzero_ps();
        if (act) r[i] = f.apply(r[i]);
      }
      store8(p, r, np, c, q + i0);
    }
  }
}

void blocked32(const ConvOcArgs& p) {
  alignas(64) float acc[kOcAvx2MaxRow * 32];
  const int64_t band_rows = std::max<int64_t>(1, kBandPositions / p.out_w);
  for (int64_t r0 = p.oh0; r0 < p.oh1; r0 += band_rows) {
    ConvOcArgs b = p;
    b.oh0 = r0, b.oh1 = std::min(p.oh1, r0 + band_rows);
    const int64_t n = (b.oh1 - b.oh0) * p.out_w;
    for (int64_t k0 = 0; k0 < p.K; k0 += kChunkTaps) {
      const int64_t kc = std::min(kChunkTaps, p.K - k0);
      int64_t i = 0;
      forTiles(b, 3, [&](int np, const float* const* xs, int64_t) {
        tile32Of(np, b, xs, acc + i * 32, k0, kc);
        i += np;
      });
    }
    storeBand(p, acc, n, b.oh0 * p.out_w);
  }
}

}  // namespace

void f32_conv_oc__avx2(const ConvOcArgs& p) {
  if (p.out_w <= 0 || p.channels <= 0 || p.oh1 <= p.oh0) return;
  if (p.channels > 24 && p.K > kOcAvx2BlockedDepth && p.out_w <= kOcAvx2MaxRow) return blocked32(p);
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
