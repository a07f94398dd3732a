// The AVX2 int8 convolution (-mavx2; chosen at run time by kernels/x86/qconv.cpp, which owns the plan's arrays and
// runs these pieces on the thread pool). Products of int16 pairs with vpmaddwd, exact int32 sums, the reference's
// requantization: qconv_ref's bits whatever the blocking. No standard-library template is used here (see
// qconv_avx2.hpp).
#include "kernels/x86/qconv_avx2.hpp"
#include "kernels/x86/quant_x86.hpp"
#include "kernels/x86/requant_avx2.hpp"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace npuc::kernels {

using detail::kQConvAvx2Rows;
using detail::kQConvAvx2Tile;
using detail::QConvAvx2Plan;

namespace {

inline int64_t lmin(int64_t a, int64_t b) { return a < b ? a : b; }

using namespace avx2;

/// One channel's requantization of 16 sums at a time (r0: the first 8, r1: the next 8), set up once per channel.
struct ChannelRq {
  bool scalar;  // a left shift: the scalar form
  Lanes l;
  __m256i zp;
  __m128i lo, hi;
  int32_t m, shift, zy, lo32, hi32;
  ChannelRq(const QConvAvx2Plan& p, int64_t c)
      : scalar(p.shift[c] > 0), l(lanesOf(p.mul[c], p.right[c])), zp(_mm256_set1_epi32(p.zy)),
        lo(_mm_set1_epi8(static_cast<char>(p.lo))), hi(_mm_set1_epi8(static_cast<char>(p.hi))), m(p.mul[c]),
        shift(p.shift[c]), zy(p.zy), lo32(p.lo), hi32(p.hi) {}
  __m128i operator()(__m256i r0, __m256i r1) const {
    if (!scalar) return narrow16(requant8(r0, l, zp), requant8(r1, l, zp), lo, hi);
    alignas(32) int32_t acc[16];
    alignas(16) int8_t v[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(acc), r0);
    _mm256_store_si256(reinterpret_cast<__m256i*>(acc + 8), r1);
    for (int i = 0; i < 16; ++i) v[i] = requantScalar(acc[i], m, shift, zy, lo32, hi32);
    return _mm_load_si128(reinterpret_cast<const __m128i*>(v));
  }
};

/// The outputs among 16 codes v computed at flat positions [q, q + 16) into channel plane ym (OH x OW). Each row's
/// run is one 16-byte store from the staged codes, its overrun landing on positions the caller writes after it;
/// a store that would pass `lim` (the end of what the caller owns of the plane) writes its bytes one by one.
inline void storeFlat(const QConvAvx2Plan& p, __m128i v, int64_t q, int8_t* ym, int64_t lim) {
  const int64_t n = lmin(16, p.flat - q);
  if (p.wpp == p.OW && q + 16 <= lim) return _mm_storeu_si128(reinterpret_cast<__m128i*>(ym + q), v);
  alignas(16) int8_t b[32] = {};
  _mm_store_si128(reinterpret_cast<__m128i*>(b), v);
  int64_t oy = q / p.wpp, ox = q % p.wpp, i = 0;
  while (i < n) {
    const int64_t run = ox < p.OW ? lmin(n - i, p.OW - ox) : lmin(n - i, p.wpp - ox);
    if (ox < p.OW) {
      const int64_t at = oy * p.OW + ox;
      if (at + 16 <= lim)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(ym + at), _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
      else
        for (int64_t j = 0; j < run; ++j) ym[at + j] = b[i + j];
    }
    i += run, ox += run;
    if (ox == p.wpp) ox = 0, ++oy;
  }
}

/// The output index of flat position q's first output at or after it (lim for a tile ending at q).
inline int64_t outputIndexAt(const QConvAvx2Plan& p, int64_t q) {
  if (q >= p.flat) return p.OH * p.OW;
  return q / p.wpp * p.OW + lmin(q % p.wpp, p.OW);
}

/// Zeros over row[q0, q1): one vector store for a short span (up to 15 elements past q1 are written too: the caller
/// writes them afterwards, or they lie in the channel's pad), a memset for a long one.
inline void zeroSpan(int16_t* row, int64_t q0, int64_t q1) {
  if (q1 <= q0) return;
  if (q1 - q0 <= 16) return _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + q0), _mm256_setzero_si256());
  std::memset(row + q0, 0, static_cast<size_t>(q1 - q0) * sizeof(int16_t));
}

/// 16 input columns of a row, stride 1 (src[0..15]) or 2 (the even bytes of src[0..31]), minus zx.
inline __m256i columns16(const int8_t* src, int64_t SW, __m256i zxv) {
  if (SW == 1)
    return _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))), zxv);
  const __m256i even = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1, 0, 2, 4, 6, 8, 10,
                                        12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i b = _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)), even);
  return _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(_mm256_permute4x64_epi64(b, 0x08))), zxv);
}

/// Channel c's phase planes (phases x hpp x wpp) from its input plane xc, row after row (each row's stores may run
/// into the next one's, which is written after it).
void channelPlanes(const QConvAvx2Plan& p, const int8_t* xc, int16_t* dst) {
  const int64_t SW = p.SW, wpp = p.wpp, W = p.W;
  const int16_t zx = static_cast<int16_t>(p.zx);
  const __m256i zxv = _mm256_set1_epi16(zx);
  const int8_t* plane_end = xc + p.H * W;  // (the channel's input plane)
  for (int64_t ph = 0; ph < p.SH; ++ph)
    for (int64_t pw = 0; pw < SW; ++pw) {
      int16_t* pl = dst + (ph * SW + pw) * p.plane;
      // phase column q is padded column q * SW + pw, input column q * SW + pw - PL: inside for q in [qa, qb)
      const int64_t first = p.PL - pw, end = p.PL + W - pw;
      int64_t qa = first <= 0 ? 0 : (first + SW - 1) / SW, qb = end <= 0 ? 0 : (end + SW - 1) / SW;
      qb = lmin(qb, wpp), qa = lmin(qa, qb);
      for (int64_t r = 0; r < p.hpp; ++r) {
        int16_t* row = pl + r * wpp;
        const int64_t ih = r * p.SH + ph - p.PT;
        if (ih < 0 || ih >= p.H) {
          zeroSpan(row, 0, wpp);
          continue;
        }
        const int8_t* src = xc + ih * W + pw - p.PL;  // input column q * SW + pw - PL at src[q * SW]
        zeroSpan(row, 0, qa);
        // 16 columns at a time while the input bytes read lie inside the row (input columns [0, W)); the last 16
        // columns again as one vector (overlapping: the same values) where that holds for them, else one by one
        int64_t q = qa;
        const int64_t span = SW == 1 ? 15 : 31;  // input bytes a vector reads past its first
        auto inside = [&](int64_t c) { return c * SW + pw - p.PL + span < W; };
        if (SW <= 2) {
          for (; q + 16 <= qb && inside(q); q += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + q), columns16(src + q * SW, SW, zxv));
          if (q < qb && qb - 16 >= qa && inside(qb - 16)) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + qb - 16), columns16(src + (qb - 16) * SW, SW, zxv));
            q = qb;
          }
          // Rows too narrow for a whole vector inside them (14 and 7 columns: MobileNetV2's and ResNet's small
          // maps): one vector that reads on into the next input row, where that stays inside the channel's plane;
          // its lanes past qb are zeroed below (or lie in the next row, written after this one, or the channel's
          // slack).
          for (; q < qb && src + q * SW + span < plane_end; q += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + q), columns16(src + q * SW, SW, zxv));
          q = lmin(q, qb);
        }
        for (; q < qb; ++q) row[q] = static_cast<int16_t>(src[q * SW] - zx);
        zeroSpan(row, qb, wpp);
      }
    }
}

/// The im2col of one tile: flat positions [q0, q0 + kQConvAvx2Tile) of a group's planes g as bp
/// [tile / 16][k2][16][2] (each tap pair's two values of a position side by side).
void im2colTile(const QConvAvx2Plan& p, const int16_t* g, int64_t q0, int16_t* bp) {
  for (int64_t j = 0; j < kQConvAvx2Tile / 16; ++j) {
    int16_t* dst = bp + j * p.k2 * 32;
    const int16_t* base = g + q0 + j * 16;
    for (int64_t t = 0; t < p.k2; ++t) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + p.tap_off[2 * t]));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + p.tap_off[2 * t + 1]));
      // the unpacks pair positions 0-3 and 8-11 (lo), 4-7 and 12-15 (hi); the lane permutes put them in order
      const __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + t * 32), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + t * 32 + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
}

/// The microkernel: 6 channels (ap [k2][6]) x 16 positions (bp [k2][16][2]) summed over k2 pairs onto their biases,
/// into acc [6][16]. Twelve accumulators, two loads and six broadcasts per pair.
void micro6x16(const int32_t* ap, const int16_t* bp, int64_t k2, const int32_t* bias6, int32_t* acc) {
  __m256i c00 = _mm256_set1_epi32(bias6[0]), c01 = c00, c10 = _mm256_set1_epi32(bias6[1]), c11 = c10;
  __m256i c20 = _mm256_set1_epi32(bias6[2]), c21 = c20, c30 = _mm256_set1_epi32(bias6[3]), c31 = c30;
  __m256i c40 = _mm256_set1_epi32(bias6[4]), c41 = c40, c50 = _mm256_set1_epi32(bias6[5]), c51 = c50;
  for (int64_t t = 0; t < k2; ++t) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + t * 32));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + t * 32 + 16));
    const int32_t* a = ap + t * 6;
    __m256i w = _mm256_set1_epi32(a[0]);
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(b0, w)), c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(b1, w));
    w = _mm256_set1_epi32(a[1]);
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(b0, w)), c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(b1, w));
    w = _mm256_set1_epi32(a[2]);
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(b0, w)), c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(b1, w));
    w = _mm256_set1_epi32(a[3]);
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(b0, w)), c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(b1, w));
    w = _mm256_set1_epi32(a[4]);
    c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(b0, w)), c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(b1, w));
    w = _mm256_set1_epi32(a[5]);
    c50 = _mm256_add_epi32(c50, _mm256_madd_epi16(b0, w)), c51 = _mm256_add_epi32(c51, _mm256_madd_epi16(b1, w));
  }
  __m256i* o = reinterpret_cast<__m256i*>(acc);
  _mm256_store_si256(o + 0, c00), _mm256_store_si256(o + 1, c01), _mm256_store_si256(o + 2, c10);
  _mm256_store_si256(o + 3, c11), _mm256_store_si256(o + 4, c20), _mm256_store_si256(o + 5, c21);
  _mm256_store_si256(o + 6, c30), _mm256_store_si256(o + 7, c31), _mm256_store_si256(o + 8, c40);
  _mm256_store_si256(o + 9, c41), _mm256_store_si256(o + 10, c50), _mm256_store_si256(o + 11, c51);
}

}  // namespace

void requantizeRowAvx2(const int32_t* acc, int64_t n, int32_t m, int right, int32_t zp, int32_t lo, int32_t hi,
                       int8_t* y) {
  const Lanes l = lanesOf(m, right);
  const __m256i zpv = _mm256_set1_epi32(zp);
  const __m128i lov = _mm_set1_epi8(static_cast<char>(lo)), hiv = _mm_set1_epi8(static_cast<char>(hi));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i r0 = requant8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i)), l, zpv);
    const __m256i r1 = requant8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i + 8)), l, zpv);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), narrow16(r0, r1, lov, hiv));
  }
  for (; i < n; ++i) y[i] = requantScalar(acc[i], m, -right, zp, lo, hi);
}

namespace detail {

void qconvAvx2Planes(const QConvAvx2Plan& p, const int8_t* xn, int64_t c0, int64_t c1, int16_t* planes) {
  for (int64_t c = c0; c < c1; ++c) channelPlanes(p, xn + c * p.H * p.W, planes + c * p.cstride);
}

void qconvAvx2Units(const QConvAvx2Plan& p, const int16_t* planes, int64_t tiles, int64_t chunks, int64_t u0, int64_t u1,
                    int16_t* bp, int8_t* yn) {
  const int64_t cg = p.C / p.G, mg = p.M / p.G, per_chunk = (p.panels + chunks - 1) / chunks;
  alignas(32) int32_t acc[kQConvAvx2Rows * 16];
  int64_t built = -1;  // the group and tile whose im2col bp holds
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t grp = u / (tiles * chunks), tile = u / chunks % tiles, chunk = u % chunks;
    if (grp * tiles + tile != built) {
      im2colTile(p, planes + grp * cg * p.cstride, tile * kQConvAvx2Tile, bp);
      built = grp * tiles + tile;
    }
    for (int64_t panel = chunk * per_chunk; panel < lmin(p.panels, (chunk + 1) * per_chunk); ++panel) {
      const int32_t* ap = p.a + (grp * p.panels + panel) * p.k2 * kQConvAvx2Rows;
      const int64_t lim = outputIndexAt(p, (tile + 1) * kQConvAvx2Tile);  // (other tiles may be other threads')
      const int64_t m0 = grp * mg + panel * kQConvAvx2Rows, rows = lmin(kQConvAvx2Rows, mg - panel * kQConvAvx2Rows);
      int32_t bias6[kQConvAvx2Rows] = {};
      for (int64_t r = 0; r < rows; ++r) bias6[r] = p.bias[m0 + r];
      const ChannelRq rq[kQConvAvx2Rows] = {{p, m0}, {p, m0 + lmin(1, rows - 1)}, {p, m0 + lmin(2, rows - 1)},
                                            {p, m0 + lmin(3, rows - 1)}, {p, m0 + lmin(4, rows - 1)},
                                            {p, m0 + lmin(5, rows - 1)}};
      for (int64_t j = 0; j < kQConvAvx2Tile / 16; ++j) {
        const int64_t q = tile * kQConvAvx2Tile + j * 16;
        if (q >= p.flat) break;
        micro6x16(ap, bp + j * p.k2 * 32, p.k2, bias6, acc);
        for (int64_t r = 0; r < rows; ++r) {
          const __m256i* row = reinterpret_cast<const __m256i*>(acc + r * 16);
          storeFlat(p, rq[r](_mm256_load_si256(row), _mm256_load_si256(row + 1)), q, yn + (m0 + r) * p.OH * p.OW, lim);
        }
      }
    }
  }
}

void qdwconvAvx2(const QConvAvx2Plan& p, const int8_t* xn, int64_t c0, int64_t c1, int16_t* scratch, int8_t* yn) {
  // Output row by row, 16 columns at a time (the last ones of a row overlapping the next row's, written after them);
  // the plan's fields in locals (the int8 stores may alias anything, so the compiler would reload them).
  const int64_t OH = p.OH, OW = p.OW, wpp = p.wpp, k2 = p.k2, HW = p.H * p.W, n_out = p.OH * p.OW;
  const int64_t* off = p.tap_off;
  for (int64_t c = c0; c < c1; ++c) {
    channelPlanes(p, xn + c * HW, scratch);
    const int32_t* wc = p.a + c * k2;
    const __m256i bias = _mm256_set1_epi32(p.bias[c]);
    const ChannelRq rq(p, c);
    int8_t* yc = yn + c * n_out;
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ox += 16) {
        __m256i lo = bias, hi = bias;  // columns 0-3 and 8-11, 4-7 and 12-15
        const int16_t* base = scratch + oy * wpp + ox;
        for (int64_t t = 0; t < k2; ++t) {
          const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + off[2 * t]));
          const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + off[2 * t + 1]));
          const __m256i w = _mm256_set1_epi32(wc[t]);
          lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), w));
          hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), w));
        }
        const __m128i v = rq(_mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31));
        const int64_t at = oy * OW + ox;
        if (at + 16 <= n_out) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(yc + at), v);
        } else {
          alignas(16) int8_t b[16];
          _mm_store_si128(reinterpret_cast<__m128i*>(b), v);
          for (int64_t i = 0; i < n_out - at; ++i) yc[at + i] = b[i];
        }
      }
  }
}

void qgemvAvx2(const QConvAvx2Plan& p, const int32_t* xk, int64_t b0, int64_t b1, int8_t* yn) {
  const __m256i zp = _mm256_set1_epi32(p.zy), lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  alignas(32) int32_t acc[8];
  for (int64_t b = b0; b < b1; ++b) {
    const int8_t* wb = p.w8 + b * p.k2 * 16;  // (int8 pairs, widened here: half the bytes of int16 ones to read)
    auto w16 = [&](int64_t t) { return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb + t * 16))); };
    __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.bias + b * 8));
    __m256i s1 = _mm256_setzero_si256(), s2 = s1, s3 = s1;
    int64_t t = 0;
    for (; t + 4 <= p.k2; t += 4) {
      s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(w16(t), _mm256_set1_epi32(xk[t])));
      s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(w16(t + 1), _mm256_set1_epi32(xk[t + 1])));
      s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(w16(t + 2), _mm256_set1_epi32(xk[t + 2])));
      s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(w16(t + 3), _mm256_set1_epi32(xk[t + 3])));
    }
    for (; t < p.k2; ++t) s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(w16(t), _mm256_set1_epi32(xk[t])));
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3));
    const int64_t n = lmin(8, p.M - b * 8);
    bool scalar = false;
    for (int64_t i = 0; i < n; ++i) scalar = scalar || p.shift[b * 8 + i] > 0;
    if (scalar) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(acc), s);
      for (int64_t i = 0; i < n; ++i)
        yn[b * 8 + i] = requantScalar(acc[i], p.mul[b * 8 + i], p.shift[b * 8 + i], p.zy, p.lo, p.hi);
      continue;
    }
    const __m256i r = requant8(s, lanesAt(p.mul + b * 8, p.right + b * 8), zp);
    _mm256_store_si256(reinterpret_cast<__m256i*>(acc), _mm256_min_epi32(_mm256_max_epi32(r, lo), hi));
    for (int64_t i = 0; i < n; ++i) yn[b * 8 + i] = static_cast<int8_t>(acc[i]);
  }
}

}  // namespace detail

}  // namespace npuc::kernels
