// The int8-affine product of two activations on AVX-512 VNNI (kernels::qmatmul; docs/numerics.md). Per frame, each
// batch's b is packed into quads (interleave4, as the convolutions' im2col): per quad of 4 rows of the depth, one
// int32 lane per column holding its 4 bytes (signed); each row of a is offset to unsigned (a + 128) and its quads
// broadcast, so one vpdpbusd adds 4 products to 16 outputs. With S = sum (a + 128) b,
//   sum (a - za)(b - zb) = S - (128 + za) * colsum(b)[n] - zb * sum_k (a[m, k] - za),
// the two corrections a constant per column (per frame) and per row. Every step is exact modulo 2^32 and the final
// sum lies in int32 (qmatmulParams bounds K), so the sums are the reference's; the requantization is the
// convolutions' (RequantOnce; the scalar primitive for a factor above 1).
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/quads_avx512.hpp"
#include "kernels/x86/quant_avx512.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace npuc::kernels::detail {

namespace {

constexpr int kRows = 4;  // rows of a per tile
constexpr int kVecs = 4;  // blocks of 16 columns per tile

struct TileArgs {
  const int32_t* aq;    // kRows rows of K4 quads (a + 128)
  const int32_t* rowc;  // per row: zb * sum (a - za)
  const int32_t* w;     // the packed b from the tile's first column: quad row k at w + k * wrow
  int64_t wrow;         // int32 per quad row of the packed b
  const int32_t* colc;  // per column from the tile's first: (128 + za) * colsum(b)
  int64_t K4, n;        // quads; the tile's columns (<= 16 V)
  int8_t* y;
  int64_t ldy;
};

template <int R, int V>
void tile(const TileArgs& t, const QMatMulParams& p, const RequantOnceVec& rv) {
  const int64_t K4 = t.K4, wrow = t.wrow;  // (locals: the stores below could alias the arguments)
  const int32_t* const aq = t.aq;
  const int32_t* w = t.w;
  __m512i acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_si512();
  for (int64_t k = 0; k < K4; ++k, w += wrow) {
    __m512i bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_si512(w + 16 * v);
    for (int r = 0; r < R; ++r) {
      const __m512i av = _mm512_set1_epi32(aq[r * K4 + k]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, bv[v]);
    }
  }
  const QMatMulParams q = p;
  const int64_t ncols = t.n, ldy = t.ldy;
  int8_t* const y0 = t.y;
  __m512i colc[V];
  for (int v = 0; v < V; ++v) colc[v] = _mm512_loadu_si512(t.colc + 16 * v);
  for (int r = 0; r < R; ++r) {
    const __m512i rc = _mm512_set1_epi32(t.rowc[r]);
    for (int v = 0; v < V; ++v) {
      const int n = static_cast<int>(std::min<int64_t>(16, ncols - 16 * v));
      const __m512i s = _mm512_sub_epi32(_mm512_sub_epi32(acc[r][v], colc[v]), rc);
      int8_t* const y = y0 + r * ldy + 16 * v;
      if (q.mul.shift > 0) {
        requantizeStoreScalar(s, q.mul, q.zy, q.lo, q.hi, y, n);
      } else {
        _mm_mask_storeu_epi8(y, static_cast<__mmask16>((1u << n) - 1u),
                             offsetClampToI8Avx512(multiplyByMultiplierAvx512(s, rv), q.zy, q.lo, q.hi));
      }
    }
  }
}

using Tile = void (*)(const TileArgs&, const QMatMulParams&, const RequantOnceVec&);
template <int R>
constexpr Tile tileOf(int v) {
  return v == 1 ? &tile<R, 1> : v == 2 ? &tile<R, 2> : v == 3 ? &tile<R, 3> : &tile<R, 4>;
}
Tile pickTile(int rows, int vecs) {
  switch (rows) {
    case 1: return tileOf<1>(vecs);
    case 2: return tileOf<2>(vecs);
    case 3: return tileOf<3>(vecs);
    default: return tileOf<4>(vecs);
  }
}

}  // namespace

void qmatmulVnni(const MatMulBatches& mb, const BSlots& bs, const int8_t* a, const int8_t* b, const QMatMulParams& p, int8_t* y,
                 ThreadPool* pool) {
  const int64_t M = mb.M, N = mb.N, K = mb.K, K4 = (K + 3) / 4, NB = (N + 15) / 16;
  const int64_t batches = static_cast<int64_t>(mb.a_off.size());
  // Per distinct b (bs: a b that broadcast batches share is packed once): its quads as [K4][NB * 16] int32 (quad row
  // k4 holds rows 4 k4 .. 4 k4 + 3 of every column; zero past K and past N: they add nothing), then (128 + za) *
  // colsum(b) per column.
  const int64_t row = NB * 16, per_batch = K4 * row;
  const std::vector<int64_t>&slot = bs.slot, &first = bs.first;
  const int64_t slots = static_cast<int64_t>(first.size());
  // (the calling thread's scratch: the threads below read it; quant_x86.hpp, int8Scratch)
  int32_t* const packed = reinterpret_cast<int32_t*>(scratch(3, static_cast<size_t>(slots * per_batch) * 4));
  int32_t* const colc = reinterpret_cast<int32_t*>(scratch(4, static_cast<size_t>(slots * row) * 4));
  uint8_t* const zeros = scratch(5, static_cast<size_t>(N));
  std::memset(zeros, 0, static_cast<size_t>(N));
  parallelUnits(pool, slots, K * N, [&](int64_t i0, int64_t i1) {
    const __m512i ones = _mm512_set1_epi8(1), offset = _mm512_set1_epi32(128 + p.za);
    for (int64_t i = i0; i < i1; ++i) {
      const auto* B = reinterpret_cast<const uint8_t*>(b + mb.b_off[static_cast<size_t>(first[static_cast<size_t>(i)])]);
      int32_t* W = packed + i * per_batch;
      for (int64_t k4 = 0; k4 < K4; ++k4) {
        const uint8_t* r[4];
        for (int j = 0; j < 4; ++j) r[j] = 4 * k4 + j < K ? B + (4 * k4 + j) * N : zeros;
        interleave4(r[0], r[1], r[2], r[3], N, 1, _mm_setzero_si128(), reinterpret_cast<uint8_t*>(W + k4 * row));
      }
      for (int64_t nb = 0; nb < NB; ++nb) {  // sum b per column: each quad's 4 bytes times 1
        __m512i s = _mm512_setzero_si512();
        for (int64_t k4 = 0; k4 < K4; ++k4) s = _mm512_dpbusd_epi32(s, ones, _mm512_loadu_si512(W + k4 * row + nb * 16));
        _mm512_storeu_si512(colc + i * row + nb * 16, _mm512_mullo_epi32(s, offset));
      }
    }
  });
  const RequantOnceVec rv(requantOnce(p.mul.m, std::max(-p.mul.shift, 0)));
  const int64_t row_blocks = (M + kRows - 1) / kRows;
  parallelUnits(pool, batches * row_blocks, kRows * N * K, [&](int64_t u0, int64_t u1) {
    int32_t* const aq = reinterpret_cast<int32_t*>(scratch(2, static_cast<size_t>(kRows * K4) * 4));  // (this worker's)
    int32_t rowc[kRows];
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t i = u / row_blocks, m0 = u % row_blocks * kRows;
      const int rows = static_cast<int>(std::min<int64_t>(kRows, M - m0));
      for (int r = 0; r < rows; ++r) {
        // Row m0 + r as unsigned quads (a + 128: XOR 0x80; 0 past K), and sum (a - za) = sum (a + 128) - K (128 + za).
        const int8_t* A = a + mb.a_off[static_cast<size_t>(i)] + (m0 + r) * K;
        const uint64_t usum = unsignedQuadRow(A, K, K4, reinterpret_cast<uint8_t*>(aq + r * K4));
        const uint32_t sum = static_cast<uint32_t>(usum) - static_cast<uint32_t>(K) * static_cast<uint32_t>(128 + p.za);
        rowc[r] = static_cast<int32_t>(sum * static_cast<uint32_t>(p.zb));
      }
      for (int64_t nb = 0; nb < NB; nb += kVecs) {
        const int vecs = static_cast<int>(std::min<int64_t>(kVecs, NB - nb));
        const int64_t si = slot[static_cast<size_t>(i)];
        const TileArgs t{aq, rowc, packed + si * per_batch + nb * 16, row, colc + si * row + nb * 16,
                         K4, std::min<int64_t>(N - nb * 16, 16 * kVecs), y + (i * M + m0) * N + nb * 16, N};
        pickTile(rows, vecs)(t, p, rv);
      }
    }
  });
}

}  // namespace npuc::kernels::detail
