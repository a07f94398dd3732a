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
#include "kernels/x86/act_avx2.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/store_avx2.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

namespace {

constexpr int kMaxPixels = 6;

// Transposes the 8 x 8 block r[0..7] (row i: 8 floats): on return r[j] holds element j of every input row, row i in
// lane i.
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Lanes 0..n-1 of v rounded to float16 with floatToHalf's bits at p (n <= 8). F16C's rounding is the same for finite
// values; a vector holding Inf or NaN goes through the scalar specification (f32ToF16__f16c: F16C quiets a
// signalling NaN, the specification keeps its payload).
inline void storeHalves(uint16_t* p, __m256 v, int n) {
  const __m256 absv = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  const __m256 inf = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
  if (_mm256_movemask_ps(_mm256_cmp_ps(absv, inf, _CMP_NLT_UQ)) & ((1 << n) - 1)) {
    alignas(32) float t[8];
    _mm256_store_ps(t, v);
    f32ToF16__f16c(t, p, n, Activation{});
    return;
  }
  __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (n >= 4) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), h);
    h = _mm_srli_si128(h, 8);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    const int32_t two = _mm_cvtsi128_si32(h);
    __builtin_memcpy(p, &two, sizeof two);
    h = _mm_srli_si128(h, 4);
    p += 2;
    n -= 2;
  }
  if (n >= 1) *p = static_cast<uint16_t>(_mm_extract_epi16(h, 0));
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
    transpose8(r);
    const int n = p.channels - c < 8 ? p.channels - c : 8;
    if (p.yh != nullptr) {
      for (int j = 0; j < n; ++j) storeHalves(p.yh + (c + j) * p.y_plane + q, r[j], kP);
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
