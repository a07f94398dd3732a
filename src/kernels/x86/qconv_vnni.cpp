// The fast int8 convolution's AVX-512 VNNI path (-mavx512vnni; chosen at run time by kernels/x86/qconv.cpp).
//
// vpdpbusd multiplies 4 unsigned bytes by 4 signed bytes and adds the four products to an int32 lane. The
// activations become unsigned by an offset of 128 (xu = x + 128, the padding xu = zx + 128), so
//   sum_k (x_k - zx) * w_k = sum_k xu_k * w_k - (zx + 128) * sum_k w_k
// over every tap of the window (a padded tap has xu = zx + 128 and so adds nothing to the left side). The last
// term is a per-channel constant, folded into the bias once when the weights are packed (QConvVnniPlan). The
// product runs over an im2col of quads, B [K4][P16][4] (four consecutive taps of one output pixel in one int32),
// vectorised across output pixels: each zmm holds 16 pixels of one output channel, each vpdpbusd four taps of
// them, the weights broadcast four at a time. A microkernel keeps up to 6 channels x 64 pixels of int32 sums in
// registers and requantizes them there (multiplyByMultiplier's bits, see kernels/quant.hpp).
//
// Every step is exact integer arithmetic. vpdpbusd's int32 sums wrap modulo 2^32 like every add here, and the
// validated bound |bias| + K * 255 * 128 + 128 < 2^31 keeps the final sum in range, so the result equals the
// reference's whatever the order of the taps, the blocking or the split among threads.
#include "kernels/x86/qconv_vnni.hpp"
#include "kernels/x86/quant_avx512.hpp"
#include "kernels/x86/quads_avx512.hpp"
#include "kernels/ref/parallel_units.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace npuc::kernels::detail {

namespace {

constexpr int kMaxRows = kQConvVnniMaxRows;  // output channels per microkernel call
constexpr int kMaxVecs = 4;  // 16-pixel vectors per microkernel call

/// y rows [ROWS][pixels p0 .. p0 + n) of one group: acc = bias + A4 · B4 over K4 quads, requantized.
/// a: ROWS weight rows (K4 int32 each, consecutive), b: B4 at pixel p0 (quad row stride `bstride` int32s).
template <int ROWS, int VECS>
void microkernel(const int32_t* a, int64_t K4, const int32_t* b, int64_t bstride, const int32_t* bias,
                 const ChannelRequant* rq, const QOutput& out, int8_t* y, int64_t ystride, int64_t n) {
  // Every loop has constant bounds and is unrolled, so the ROWS x VECS sums live in registers (an early exit or a
  // variable index would make the compiler keep the array in memory and spill it on every step).
  __m512i acc[ROWS][VECS];
#pragma GCC unroll 8
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < VECS; ++v) acc[r][v] = _mm512_setzero_si512();  // (the bias is added after the loop)
  const int32_t* a_rows[ROWS];
#pragma GCC unroll 8
  for (int r = 0; r < ROWS; ++r) a_rows[r] = a + r * K4;
  for (int64_t k = 0; k < K4; ++k) {
    __m512i bv[VECS];
#pragma GCC unroll 4
    for (int v = 0; v < VECS; ++v) bv[v] = _mm512_loadu_si512(b + k * bstride + v * 16);
#pragma GCC unroll 8
    for (int r = 0; r < ROWS; ++r) {
      const __m512i av = _mm512_set1_epi32(a_rows[r][k]);
#pragma GCC unroll 4
      for (int v = 0; v < VECS; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], bv[v], av);
    }
  }
  const int32_t zp = out.zero_point, lo = out.lo, hi = out.hi;
#pragma GCC unroll 8
  for (int r = 0; r < ROWS; ++r) {
    const __m512i bias_r = _mm512_set1_epi32(bias[r]);
    if (VECS == 4 && n == 64 && rq[r].mul.shift <= 0) {  // a whole row of 64: narrowed four vectors at a time
      __m512i q[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) q[v] = multiplyByMultiplierAvx512(_mm512_add_epi32(acc[r][v % VECS], bias_r), rq[r].once);
      _mm512_storeu_si512(y + r * ystride, offsetClampToI8x4Avx512(q[0], q[1], q[2], q[3], zp, lo, hi));
      continue;
    }
#pragma GCC unroll 4
    for (int v = 0; v < VECS; ++v) {
      const int64_t left = n - v * 16;
      if (left > 0)
        requantizeStore(_mm512_add_epi32(acc[r][v], bias_r), rq[r].mul, rq[r].once, zp, lo, hi, y + r * ystride + v * 16,
                        static_cast<int>(std::min<int64_t>(left, 16)));
    }
  }
}

using Micro = void (*)(const int32_t*, int64_t, const int32_t*, int64_t, const int32_t*, const ChannelRequant*,
                       const QOutput&, int8_t*, int64_t, int64_t);

template <int ROWS>
constexpr Micro pick(int vecs) {
  return vecs == 1 ? microkernel<ROWS, 1> : vecs == 2 ? microkernel<ROWS, 2> : vecs == 3 ? microkernel<ROWS, 3> : microkernel<ROWS, 4>;
}
Micro pickMicro(int rows, int vecs) {
  switch (rows) {
    case 1: return pick<1>(vecs);
    case 2: return pick<2>(vecs);
    case 3: return pick<3>(vecs);
    case 4: return pick<4>(vecs);
    case 5: return pick<5>(vecs);
    default: return pick<6>(vecs);
  }
}

bool byGroup(const ConvShape& s) { return qconvVnniByGroup(s); }

/// The depthwise form's geometry, the same for every channel of a layer. Each window row is read as quads of 4
/// consecutive columns; a "quad plane" holds, per padded input row r and per quad q of the window row, the quads
/// of every output column (int32 lanes, 64-byte rows), built once per channel, so the KH window rows that share an
/// input row share its cutting, and the product is one aligned load and one vpdpbusd per window quad.
///   Wide rows (OW > 8): B = ceil(OW / 16) vectors per output row, row r at r B 64 bytes.
///   Narrow rows (OW <= 8): a vector holds two output rows (lanes 0-7 row oy, 8-15 row oy + 1), so a stored row
///   holds input rows r (lanes 0-7) and r + SH (lanes 8-15), at pos(r) = (r % SH) * ceil(HP / SH) + r / SH.
struct DwGeometry {
  int64_t H, W, OH, OW, KH, SH, SW, PT, PL, HP, QW;
  bool narrow;
  int64_t blocks, per_res, rows;  // B; ceil(HP / SH); stored rows per quad plane
  int64_t rowBytes() const { return blocks * 64; }
  int64_t pos(int64_t r) const { return narrow ? (r % SH) * per_res + r / SH : r; }
};

DwGeometry dwGeometry(const ConvShape& s, int64_t hp, int64_t qw) {
  DwGeometry g{};
  g.H = s.in_spatial[0], g.W = s.in_spatial[1], g.OH = s.out_spatial[0], g.OW = s.out_spatial[1];
  g.KH = s.kernel[0], g.SH = s.stride[0], g.SW = s.stride[1], g.PT = s.pad_begin[0], g.PL = s.pad_begin[1];
  g.HP = hp, g.QW = qw;
  g.narrow = g.OW <= 8;
  g.blocks = g.narrow ? 1 : (g.OW + 15) / 16;
  g.per_res = (g.HP + g.SH - 1) / g.SH;
  g.rows = g.narrow ? g.SH * g.per_res : g.HP;
  return g;
}

/// Builds one channel's quad planes (64-byte aligned) from its input plane xc: the bytes x + 128 (XOR 0x80), the
/// padding zx + 128. Block b's quads (16 outputs, window quad q) come from one masked 64-byte load of the input row
/// at column 16 b SW - PL + 4 q (the mask keeps the bytes inside the row; the others take the padding), cut by
/// vpermd (each 128-bit lane gets the bytes of its 4 outputs: 4 L .. 4 L + 15 at stride 1, 8 L .. 8 L + 15 at
/// stride 2) and vpshufb (the 4 overlapping quads). Every store is a whole aligned 64-byte row the product loads
/// as it is (a load that spans two stores still in flight would wait for them to retire).
void buildDwQuads(const DwGeometry& g, const int8_t* xc, uint8_t pad, const uint64_t* masks, const __m512i perm,
                  const __m512i shuf, uint8_t* quads) {
  const __m512i padx = _mm512_set1_epi8(static_cast<char>(pad ^ 0x80)), flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i padv = _mm512_set1_epi8(static_cast<char>(pad));
  auto cut = [&](int64_t r, int64_t q, int64_t b) {
    const int64_t ih = r - g.PT;
    if (ih < 0 || ih >= g.H) return padv;
    // (masked-off bytes are not read; the address is formed in integers: it may lie before the plane's start)
    const int64_t at = ih * g.W + 16 * b * g.SW - g.PL + 4 * q;
    const void* src = reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(xc) + static_cast<uintptr_t>(at));
    const __m512i v = _mm512_xor_si512(_mm512_mask_loadu_epi8(padx, static_cast<__mmask64>(masks[q * g.blocks + b]), src), flip);
    return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(perm, v), shuf);
  };
  const int64_t rb = g.rowBytes();
  for (int64_t q = 0; q < g.QW; ++q) {
    uint8_t* const plane = quads + q * g.rows * rb;
    if (!g.narrow) {
      for (int64_t r = 0; r < g.HP; ++r)
        for (int64_t b = 0; b < g.blocks; ++b) _mm512_store_si512(plane + r * rb + b * 64, cut(r, q, b));
      continue;
    }
    for (int64_t k = 0; k < g.SH && k < g.HP; ++k) {  // residue classes: rows k, k + SH, ...
      __m512i prev = cut(k, q, 0);
      uint8_t* dst = plane + g.pos(k) * 64;
      for (int64_t r = k; r < g.HP; r += g.SH, dst += 64) {
        const __m512i next = r + g.SH < g.HP ? cut(r + g.SH, q, 0) : prev;  // (past the last row: lanes never stored)
        _mm512_store_si512(dst, _mm512_inserti64x4(prev, _mm512_castsi512_si256(next), 1));
        prev = next;
      }
    }
  }
}

/// One channel of the depthwise form over its quad planes.
struct DwArgs {
  const uint8_t* quads;
  const int32_t* wq;  // kh x qw weight quads
  int32_t bias;
  ChannelRequant rq;
  int32_t zp, lo, hi;
  int8_t* y;  // the channel's output plane
};

/// KH, QW > 0: the window's height and quads per row fixed at compile time (loops unrolled); 0: g.KH, g.QW.
template <int KH, int QW>
void dwChannel(const DwGeometry& g, const DwArgs a) {
  const int64_t kh_n = KH > 0 ? KH : g.KH, qw_n = QW > 0 ? QW : g.QW;
  const int64_t rb = g.rowBytes(), plane = g.rows * rb;
  const __m512i bias = _mm512_set1_epi32(a.bias);
  const bool once = a.rq.mul.shift <= 0;
  const RequantOnceVec rv(a.rq.once);
  const __m512i zp = _mm512_set1_epi32(a.zp), lo = _mm512_set1_epi32(a.lo), hi = _mm512_set1_epi32(a.hi);
  __m512i w[8 * 4];  // (the window's quads broadcast once; KH x QW <= 32 when fixed)
  if (KH > 0)
    for (int64_t i = 0; i < kh_n * qw_n; ++i) w[i] = _mm512_set1_epi32(a.wq[i]);
  auto weight = [&](int64_t kh, int64_t q) { return KH > 0 ? w[kh * qw_n + q] : _mm512_set1_epi32(a.wq[kh * qw_n + q]); };
  auto finish = [&](__m512i acc, int8_t* y, int n, __m128i compact) {
    if (!once) {  // (a factor above 1: the scalar primitive, in the lanes' order)
      alignas(16) int8_t t[16];
      requantizeStoreScalar(acc, a.rq.mul, a.zp, a.lo, a.hi, t, 16);
      const __m128i q = _mm_shuffle_epi8(_mm_load_si128(reinterpret_cast<const __m128i*>(t)), compact);
      _mm_mask_storeu_epi8(y, static_cast<__mmask16>((1u << n) - 1u), q);
      return;
    }
    const __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(multiplyByMultiplierAvx512(acc, rv), zp), lo), hi);
    _mm_mask_storeu_epi8(y, static_cast<__mmask16>((1u << n) - 1u), _mm_shuffle_epi8(_mm512_cvtepi32_epi8(q), compact));
  };
  if (g.narrow) {
    // Two output rows per vector; the 2 x OW codes compacted into one store.
    alignas(16) int8_t idx[16];
    for (int i = 0; i < 16; ++i) idx[i] = static_cast<int8_t>(i < g.OW ? i : i < 2 * g.OW ? 8 + i - g.OW : -1);
    const __m128i compact = _mm_load_si128(reinterpret_cast<const __m128i*>(idx));
    // (pos(oy SH + kh) = pos(kh) + oy: window row kh's stored rows, without a division in the loop)
    int64_t at[16];
    for (int64_t kh = 0; kh < std::min<int64_t>(kh_n, 16); ++kh) at[kh] = g.pos(kh) * 64;
    for (int64_t oy = 0; oy < g.OH; oy += 2) {
      __m512i acc = bias;
#pragma GCC unroll 8
      for (int64_t kh = 0; kh < kh_n; ++kh) {
        const uint8_t* row = a.quads + oy * 64 + (kh < 16 ? at[kh] : g.pos(kh) * 64);
#pragma GCC unroll 4
        for (int64_t q = 0; q < qw_n; ++q) acc = _mm512_dpbusd_epi32(acc, _mm512_load_si512(row + q * plane), weight(kh, q));
      }
      finish(acc, a.y + oy * g.OW, static_cast<int>(std::min<int64_t>(2, g.OH - oy) * g.OW), compact);
    }
    return;
  }
  const __m128i identity = _mm_set_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  // The sums of block b (16 outputs) of the output row whose window starts at `rows`.
  auto blockSums = [&](const uint8_t* rows, int64_t b) {
    __m512i acc = bias;
#pragma GCC unroll 8
    for (int64_t kh = 0; kh < kh_n; ++kh)
#pragma GCC unroll 4
      for (int64_t q = 0; q < qw_n; ++q) acc = _mm512_dpbusd_epi32(acc, _mm512_load_si512(rows + kh * rb + q * plane + b * 64), weight(kh, q));
    return acc;
  };
  if (g.blocks == 1 || !once) {  // rows of 9 to 16 outputs (or a factor above 1): a block at a time
    for (int64_t oy = 0; oy < g.OH; ++oy) {
      const uint8_t* const rows = a.quads + oy * g.SH * rb;
      for (int64_t b = 0; b < g.blocks; ++b)
        finish(blockSums(rows, b), a.y + oy * g.OW + 16 * b, static_cast<int>(std::min<int64_t>(16, g.OW - 16 * b)), identity);
    }
    return;
  }
  // Wider rows: up to 64 outputs at a time, four blocks' sums requantized and narrowed together (offsetClampToI8x4Avx512's
  // saturating packs) into one store (MobileNetV2's 3x3 over 144 channels at 56x56: 0.259 -> 0.208 ms).
  for (int64_t oy = 0; oy < g.OH; ++oy) {
    int8_t* const yr = a.y + oy * g.OW;
    const uint8_t* const rows = a.quads + oy * g.SH * rb;
    for (int64_t b0 = 0; b0 < g.blocks; b0 += 4) {
      const int64_t nb = std::min<int64_t>(4, g.blocks - b0);
      const int64_t n = std::min<int64_t>(64, g.OW - 16 * b0);
      __m512i q[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) q[v] = v < nb ? multiplyByMultiplierAvx512(blockSums(rows, b0 + v), rv) : _mm512_setzero_si512();
      _mm512_mask_storeu_epi8(yr + 16 * b0, n == 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1,
                              offsetClampToI8x4Avx512(q[0], q[1], q[2], q[3], a.zp, a.lo, a.hi));
    }
  }
}

/// The depthwise form (plan.depthwise): per channel, its quad planes (DwGeometry, buildDwQuads), then per output
/// row, 16 output columns (or two rows of at most 8) at a time, one vpdpbusd per window quad with its 4 weights.
/// Exact integer sums: qconv_ref's bytes.
void qdwconvVnni(const QConvVnniPlan& plan, const int8_t* x, int8_t* y, ThreadPool* pool) {
  const ConvShape& s = plan.shape;
  const DwGeometry g = dwGeometry(s, plan.hp, plan.qw);
  const int64_t C = s.in_channels;
  const uint8_t pad = static_cast<uint8_t>(plan.zx + 128);
  // Stride 1: lane L holds bytes 4L .. 4L + 15 (dwords L .. L + 3), its outputs' quads start at bytes 0..3;
  // stride 2: bytes 8L .. 8L + 15 (dwords 2L .. 2L + 3), quads at 0, 2, 4, 6.
  const __m512i perm = g.SW == 1 ? _mm512_set_epi32(6, 5, 4, 3, 5, 4, 3, 2, 4, 3, 2, 1, 3, 2, 1, 0)
                                 : _mm512_set_epi32(9, 8, 7, 6, 7, 6, 5, 4, 5, 4, 3, 2, 3, 2, 1, 0);
  const __m512i shuf = g.SW == 1 ? _mm512_broadcast_i32x4(_mm_set_epi8(6, 5, 4, 3, 5, 4, 3, 2, 4, 3, 2, 1, 3, 2, 1, 0))
                                 : _mm512_broadcast_i32x4(_mm_set_epi8(9, 8, 7, 6, 7, 6, 5, 4, 5, 4, 3, 2, 3, 2, 1, 0));
  const uint64_t* masks = plan.dw_masks.data();
  const size_t bytes = static_cast<size_t>(g.QW * g.rows * g.rowBytes()) + 64;  // (+ the alignment below)
  for (int64_t nb = 0; nb < s.batch; ++nb) {
    const int8_t* xn = x + nb * C * g.H * g.W;
    int8_t* yn = y + nb * C * g.OH * g.OW;
    parallelUnits(pool, C, g.OH * g.OW * g.KH * g.QW, [&](int64_t c0, int64_t c1) {
      uint8_t* const raw = scratch(0, bytes);
      uint8_t* const quads = raw + (64 - reinterpret_cast<uintptr_t>(raw) % 64) % 64;
      for (int64_t c = c0; c < c1; ++c) {
        buildDwQuads(g, xn + c * g.H * g.W, pad, masks, perm, shuf, quads);
        const DwArgs a{quads, plan.a4.data() + c * g.KH * g.QW, plan.bias[static_cast<size_t>(c)],
                       plan.rq[static_cast<size_t>(c)], plan.out.zero_point, plan.out.lo, plan.out.hi, yn + c * g.OH * g.OW};
        if (g.KH == 3 && g.QW == 1) dwChannel<3, 1>(g, a);
        else if (g.KH == 5 && g.QW == 2) dwChannel<5, 2>(g, a);
        else dwChannel<0, 0>(g, a);
      }
    });
  }
}

}  // namespace

namespace {

/// Lanes m0 .. m0 + n of one block of the one-pixel forms: bias, then the one-rounding requantization with the block's
/// per-lane constants (plan.lanes), or the scalar primitive where a channel has a left shift; y: the pixel's outputs.
void finishLanes(const QConvVnniPlan& plan, __m512i acc, int64_t m0, int8_t* y) {
  const int64_t M = plan.shape.out_channels;
  const QOutput& out = plan.out;
  const int n = static_cast<int>(std::min<int64_t>(16, M - m0));
  const QConvVnniPlan::LaneRequant& c = plan.lanes[static_cast<size_t>(m0 / 16)];
  acc = _mm512_add_epi32(acc, _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << n) - 1u), plan.bias.data() + m0));
  if (c.scalar) {
    alignas(64) int32_t a[16];
    _mm512_store_si512(a, acc);
    for (int i = 0; i < n; ++i)
      y[m0 + i] = requantizeValue(a[i], plan.rq[static_cast<size_t>(m0 + i)].mul, out.zero_point, out.lo, out.hi);
    return;
  }
  const __m512i m = _mm512_load_si512(c.m), zero = _mm512_setzero_si512();
  const __m512i pe = _mm512_mul_epi32(acc, m);
  const __m512i po = _mm512_mul_epi32(_mm512_shuffle_epi32(acc, _MM_PERM_CDAB), _mm512_shuffle_epi32(m, _MM_PERM_CDAB));
  const __m512i re = _mm512_srav_epi64(
      _mm512_add_epi64(pe, _mm512_mask_blend_epi64(_mm512_cmplt_epi64_mask(pe, zero), _mm512_load_si512(c.pos[0]), _mm512_load_si512(c.neg[0]))),
      _mm512_load_si512(c.shift[0]));
  const __m512i ro = _mm512_srav_epi64(
      _mm512_add_epi64(po, _mm512_mask_blend_epi64(_mm512_cmplt_epi64_mask(po, zero), _mm512_load_si512(c.pos[1]), _mm512_load_si512(c.neg[1]))),
      _mm512_load_si512(c.shift[1]));
  const __m512i q = _mm512_mask_shuffle_epi32(re, 0xAAAA, ro, _MM_PERM_CDAB);
  _mm_mask_storeu_epi8(y + m0, static_cast<__mmask16>((1u << n) - 1u), offsetClampToI8Avx512(q, out.zero_point, out.lo, out.hi));
}

/// R pixels (rows of quads aq, K4 apart) x V blocks of 16 output channels from block `blk`: each weight load serves
/// the R pixels; y: the first pixel's outputs, the others M apart.
template <int R, int V>
void gemvRowsTile(const QConvVnniPlan& plan, const int32_t* aq, int64_t blk, int8_t* y) {
  const int64_t K4 = plan.k4, M = plan.shape.out_channels;
  const int32_t* const w = plan.w16.data() + blk * K4 * 16;
  __m512i acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_si512();
  for (int64_t k = 0; k < K4; ++k) {
    __m512i bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_si512(w + (v * K4 + k) * 16);
    for (int r = 0; r < R; ++r) {
      const __m512i av = _mm512_set1_epi32(aq[r * K4 + k]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, bv[v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) finishLanes(plan, acc[r][v], (blk + v) * 16, y + r * M);
}

using RowsTile = void (*)(const QConvVnniPlan&, const int32_t*, int64_t, int8_t*);
template <int R>
constexpr RowsTile rowsTileOf(int v) {
  return v == 1 ? &gemvRowsTile<R, 1> : v == 2 ? &gemvRowsTile<R, 2> : v == 3 ? &gemvRowsTile<R, 3> : &gemvRowsTile<R, 4>;
}
RowsTile pickRowsTile(int rows, int vecs) {
  switch (rows) {
    case 1: return rowsTileOf<1>(vecs);
    case 2: return rowsTileOf<2>(vecs);
    case 3: return rowsTileOf<3>(vecs);
    default: return rowsTileOf<4>(vecs);
  }
}

/// Whether a one-pixel layer's window is its whole unpadded input (a Gemm or MatMul as a 1x1 convolution over
/// [N, K, 1, 1]): then a pixel's im2col is its image's bytes in order.
bool windowIsTheInput(const ConvShape& s) {
  return s.in_spatial[0] == s.kernel[0] && s.in_spatial[1] == s.kernel[1] && s.pad_begin[0] == 0 && s.pad_begin[1] == 0 &&
         s.dilation[0] == 1 && s.dilation[1] == 1;
}

}  // namespace

/// The one-pixel form (plan.gemv): output channels 16 to a vector, four vectors at a time sharing each broadcast
/// input quad, the weights streamed once; each lane requantized with its own channel's constants.
void qgemvVnni(const QConvVnniPlan& plan, const int32_t* b4, int8_t* y, ThreadPool* pool) {
  const int64_t M = plan.shape.out_channels, K4 = plan.k4, blocks = (M + 15) / 16;
  parallelUnits(pool, blocks, K4 * 16, [&](int64_t b0, int64_t b1) {
    int64_t b = b0;
    for (; b + 4 <= b1; b += 4) {
      __m512i acc[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
      const int32_t* w = plan.w16.data() + b * K4 * 16;
      for (int64_t k = 0; k < K4; ++k) {
        const __m512i xq = _mm512_set1_epi32(b4[k * 16]);  // (B4 rows of 16 pixels: pixel 0)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) acc[v] = _mm512_dpbusd_epi32(acc[v], xq, _mm512_loadu_si512(w + (v * K4 + k) * 16));
      }
      for (int v = 0; v < 4; ++v) finishLanes(plan, acc[v], (b + v) * 16, y);
    }
    for (; b < b1; ++b) {
      __m512i acc = _mm512_setzero_si512();
      const int32_t* w = plan.w16.data() + b * K4 * 16;
      for (int64_t k = 0; k < K4; ++k) acc = _mm512_dpbusd_epi32(acc, _mm512_set1_epi32(b4[k * 16]), _mm512_loadu_si512(w + k * 16));
      finishLanes(plan, acc, b * 16, y);
    }
  });
}

/// A batch of one-pixel images whose window is the whole input (a Gemm or MatMul over rows, N > 1): 4 images at a time
/// share each weight load (gemvRowsTile), each image's quads its own bytes + 128 (XOR 0x80; zero past K, where the
/// weights are zero), read without an im2col.
void qgemvRowsVnni(const QConvVnniPlan& plan, const int8_t* x, int8_t* y, ThreadPool* pool) {
  constexpr int kRowsPerTile = 4, kVecsPerTile = 4;
  const ConvShape& s = plan.shape;
  const int64_t N = s.batch, M = s.out_channels, K = s.in_channels * s.kernel[0] * s.kernel[1], K4 = plan.k4;
  const int64_t blocks = (M + 15) / 16, groups = (blocks + kVecsPerTile - 1) / kVecsPerTile;
  const int64_t row_tiles = (N + kRowsPerTile - 1) / kRowsPerTile;
  parallelUnits(pool, row_tiles * groups, kRowsPerTile * kVecsPerTile * 16 * K, [&](int64_t u0, int64_t u1) {
    int32_t* const aq = reinterpret_cast<int32_t*>(scratch(2, static_cast<size_t>(kRowsPerTile * K4) * 4));  // (this worker's)
    int64_t built = -1;  // the row tile whose quads aq holds
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t rt = u / groups, blk = u % groups * kVecsPerTile;
      const int rows = static_cast<int>(std::min<int64_t>(kRowsPerTile, N - rt * kRowsPerTile));
      if (built != rt) {
        for (int r = 0; r < rows; ++r)
          unsignedQuadRow(x + (rt * kRowsPerTile + r) * K, K, K4, reinterpret_cast<uint8_t*>(aq + r * K4));
        built = rt;
      }
      const int vecs = static_cast<int>(std::min<int64_t>(kVecsPerTile, blocks - blk));
      pickRowsTile(rows, vecs)(plan, aq, blk, y + rt * kRowsPerTile * M);
    }
  });
}

void qconvVnni(const QConvVnniPlan& plan, const int8_t* x, int8_t* y, ThreadPool* pool) {
  if (plan.depthwise) return qdwconvVnni(plan, x, y, pool);
  if (plan.gemv && plan.shape.batch > 1 && windowIsTheInput(plan.shape)) return qgemvRowsVnni(plan, x, y, pool);
  const ConvShape& s = plan.shape;
  const int64_t C = s.in_channels, M = s.out_channels, G = s.groups, cg = C / G, mg = M / G;
  const int64_t H = s.in_spatial[0], W = s.in_spatial[1], OH = s.out_spatial[0], OW = s.out_spatial[1];
  const int64_t SH = s.stride[0], SW = s.stride[1], PT = s.pad_begin[0], PL = s.pad_begin[1];
  const int64_t HP = plan.hp, WP = plan.wp, K = cg * s.kernel[0] * s.kernel[1], K4 = plan.k4, P = OH * OW, P16 = (P + 15) / 16 * 16;
  const uint8_t pad = static_cast<uint8_t>(plan.zx + 128);
  // Without padding the im2col reads x itself and offsets it on the way (XOR 0x80 = + 128 for an int8); else it reads
  // offset planes with the padding filled in.
  const bool direct = plan.direct;
  const int64_t RS = plan.rs, PS = plan.ps;
  const __m128i flip = _mm_set1_epi8(direct ? static_cast<char>(0x80) : 0);
  uint8_t* const xp = direct ? nullptr : scratch(0, static_cast<size_t>(C * PS));
  const uint8_t* planes = xp;
  // The im2col of a group: B4 [K4][P16] quads. Where groups run in parallel, each chunk has its own.
  const bool by_group = byGroup(s);
  const int64_t KB = plan.amx ? plan.k16 : K4;  // quad rows of an im2col (AMX reads K16: rows past K4 meet zero weights)
  const size_t b_bytes = static_cast<size_t>(KB * P16 * 4);
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  // (tiles of 128 pixels, or of 64 where 128 would give the threads fewer than 4 each)
  int64_t tile = (P + 127) / 128 >= 4 * threads ? 128 : 64;
  // Several threads and enough pixel tiles for them: each task cuts the im2col of its own tiles of 64 or 128 pixels and
  // multiplies each at once (a thread reads only the B it wrote, not its neighbour's from another core: MobileNetV2's
  // 144 -> 24 at 56x56 0.113 -> 0.076 ms at 2 threads). One thread keeps the whole im2col first (alternating the two
  // loops tile by tile measured up to 1.6x slower there).
  bool tiled = !by_group && threads > 1 && (P + tile - 1) / tile >= 2 * threads;
  if (!tiled && !by_group && threads > 1 && !plan.gemv && !plan.amx && P16 / 16 >= threads) {
    // Small maps (13x13, 7x7): one tile per thread, whole 16-pixel vectors each. A shared im2col cut by all the
    // threads had each read the part its neighbour cut, from another core: on this project's 2-vCPU VM SqueezeNet's
    // 1x1 512 -> 64 at 13x13 ran 0.025 ms on one thread, 0.033 on two; MobileNetV2's 960 -> 320 at 7x7 gained nothing.
    tile = (P16 / 16 + threads - 1) / threads * 16;
    tiled = true;
  }
  const int64_t tiles = (P + tile - 1) / tile;
  uint8_t* const b_shared = by_group || tiled ? nullptr : scratch(1, b_bytes);

  // Quad rows [q0, q1) of a group's im2col for output pixels [pa, pb): pixel p of row q at b + (q * stride + p - pa) * 4,
  // the row's tail up to a multiple of 16 pixels zero (the microkernel's last vector reads it; its lanes are not stored).
  const bool contiguous = SH == 1 && SW == 1 && RS == OW;  // (1x1 convolutions: pixel p at plane offset p)
  auto buildB = [&](int64_t grp, uint8_t* b, int64_t q0, int64_t q1, int64_t pa, int64_t pb, int64_t stride) {
    const uint8_t* const group_planes = planes + grp * cg * PS;
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t* off = plan.tap_off.data() + 4 * q;
      const uint8_t* plane[4] = {group_planes + off[0], group_planes + off[1], group_planes + off[2], group_planes + off[3]};
      uint8_t* dst = b + q * stride * 4;
      for (int64_t p = pa; p < pb;) {  // row segments (one, where the output rows lie end to end in the planes)
        const int64_t oy = p / OW, ox = p % OW, n = contiguous ? pb - p : std::min(pb - p, OW - ox);
        const int64_t off = oy * SH * RS + ox * SW;
        interleave4(plane[0] + off, plane[1] + off, plane[2] + off, plane[3] + off, n, SW, flip, dst + (p - pa) * 4);
        p += n;
      }
      std::fill(dst + (pb - pa) * 4, dst + (pb - pa + 15) / 16 * 16 * 4, uint8_t{0});
    }
  };
  for (int64_t nb = 0; nb < s.batch; ++nb) {
    const int8_t* xn = x + nb * C * H * W;
    if (direct) planes = reinterpret_cast<const uint8_t*>(xn);
    // The offset plane of every channel: x + 128 inside the input, zx + 128 in the padding.
    if (!direct) parallelUnits(pool, C, HP * WP, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) offsetPlane(xp + c * PS, xn + c * H * W, H, W, HP, WP, PT, PL, pad, 0x80);
    });
    int8_t* yn = y + nb * M * P;
    // Rows [r0, r1) of a group's output at pixels [pa, pb) (pa a multiple of 16), over tiles of 64 pixels: a tile of B
    // stays in cache while the rows pass over it. b: B at pixel pa, its quad rows `stride` pixels apart.
    auto product = [&](int64_t grp, const uint8_t* b, int64_t stride, int64_t r0, int64_t r1, int64_t pa, int64_t pb) {
      const int32_t* b4 = reinterpret_cast<const int32_t*>(b);
      if (plan.amx) return qproductAmx(plan, grp * mg + r0, grp * mg + r1, b4, stride, pb - pa, yn + (grp * mg + r0) * P + pa, P);
      for (int64_t p0 = pa; p0 < pb; p0 += kMaxVecs * 16) {
        const int64_t n = std::min<int64_t>(kMaxVecs * 16, pb - p0);
        const int vecs = static_cast<int>((n + 15) / 16);
        for (int64_t r = r0; r < r1; r += kMaxRows) {
          const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, r1 - r));
          const int64_t m = grp * mg + r;
          pickMicro(rows, vecs)(plan.a4.data() + m * K4, K4, b4 + (p0 - pa), stride, plan.bias.data() + m, plan.rq.data() + m,
                                plan.out, yn + m * P + p0, P, n);
        }
      }
    };
    if (by_group) {  // small groups (depthwise and the like): whole groups per thread, each with its own im2col
      parallelUnits(pool, G, mg * K * P, [&](int64_t g0, int64_t g1) {
        uint8_t* const b = scratch(1, b_bytes);  // (this worker's own)
        for (int64_t grp = g0; grp < g1; ++grp) {
          buildB(grp, b, 0, K4, 0, P, P16);
          product(grp, b, P16, 0, mg, 0, P);
        }
      });
      continue;
    }
    for (int64_t grp = 0; grp < G; ++grp) {
      if (tiled) {  // (a one-pixel layer has one tile: never tiled)
        parallelUnits(pool, tiles, mg * K * tile, [&](int64_t t0, int64_t t1) {
          uint8_t* const b = scratch(1, static_cast<size_t>(KB * tile * 4));  // (this worker's own)
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t pa = t * tile, pb = std::min(P, pa + tile);
            buildB(grp, b, 0, K4, pa, pb, tile);
            product(grp, b, tile, 0, mg, pa, pb);
          }
        });
        continue;
      }
      // Few pixels (7x7 maps, one pixel) or an expanding layer on one thread: one im2col shared by the threads, which
      // then split the product (below).
      parallelUnits(pool, K4, 4 * P, [&](int64_t q0, int64_t q1) { buildB(grp, b_shared, q0, q1, 0, P, P16); });
      if (plan.gemv) {
        qgemvVnni(plan, reinterpret_cast<const int32_t*>(b_shared), yn, pool);
        continue;
      }
      // The product in units of (rows, 64 pixels), pixel-major (a thread's consecutive units share their B): a layer
      // of few channels (a MobileNetV2 projection to 24 or 32) still splits among the threads.
      const int64_t unit = plan.amx ? 32 : kMaxRows, rblocks = (mg + unit - 1) / unit;  // (AMX: 2 x 16-row tiles)
      const int64_t chunk = kMaxVecs * 16, pchunks = (P + chunk - 1) / chunk;
      parallelUnits(pool, rblocks * pchunks, unit * K * chunk, [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t rb = u % rblocks, pa = u / rblocks * chunk;
          product(grp, b_shared + pa * 4, P16, rb * unit, std::min(mg, (rb + 1) * unit), pa, std::min(P, pa + chunk));
        }
      });
    }
  }
}

}  // namespace npuc::kernels::detail
