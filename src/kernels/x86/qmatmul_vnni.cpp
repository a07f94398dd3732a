// The int8-affine product of two activations on AVX-512 VNNI (kernels::qmatmul; docs/numerics.md). Per frame, each
// batch's b is packed as the convolutions' weights are once per layer: per block of 16 columns, per quad of 4 rows
// of the depth, one int32 lane per column holding its 4 bytes (signed); each row of a is offset to unsigned
// (a + 128) and its quads broadcast, so one vpdpbusd adds 4 products to 16 outputs. With S = sum (a + 128) b,
//   sum (a - za)(b - zb) = S - (128 + za) * colsum(b)[n] - zb * sum_k (a[m, k] - za),
// the two corrections a constant per column (per frame) and per row. Every step is exact modulo 2^32 and the final
// sum lies in int32 (qmatmulParams bounds K), so the sums are the reference's; the requantization is the
// convolutions' (RequantOnce; the scalar primitive for a factor above 1).
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/quant_avx512.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace npuc::kernels::detail {

namespace {

constexpr int kRows = 4;  // rows of a per tile
constexpr int kVecs = 4;  // blocks of 16 columns per tile

struct TileArgs {
  const int32_t* aq;    // kRows rows of K4 quads (a + 128)
  const int32_t* rowc;  // per row: zb * sum (a - za)
  const int32_t* w;     // the packed b from the tile's first block: [block][K4][16]
  const int32_t* colc;  // per column from the tile's first: (128 + za) * colsum(b)
  int64_t K4, n;        // quads; the tile's columns (<= 16 V)
  int8_t* y;
  int64_t ldy;
};

template <int R, int V>
void tile(const TileArgs& t, const QMatMulParams& p, const RequantOnceVec& rv) {
  __m512i acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_si512();
  for (int64_t k = 0; k < t.K4; ++k) {
    __m512i bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_si512(t.w + (v * t.K4 + k) * 16);
    for (int r = 0; r < R; ++r) {
      const __m512i av = _mm512_set1_epi32(t.aq[r * t.K4 + k]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, bv[v]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m512i rc = _mm512_set1_epi32(t.rowc[r]);
    for (int v = 0; v < V; ++v) {
      const int n = static_cast<int>(std::min<int64_t>(16, t.n - 16 * v));
      const __m512i s = _mm512_sub_epi32(_mm512_sub_epi32(acc[r][v], _mm512_loadu_si512(t.colc + 16 * v)), rc);
      int8_t* const y = t.y + r * t.ldy + 16 * v;
      if (p.mul.shift > 0) {
        requantizeStoreScalar(s, p.mul, p.zy, p.lo, p.hi, y, n);
      } else {
        _mm_mask_storeu_epi8(y, static_cast<__mmask16>((1u << n) - 1u),
                             offsetClampToI8Avx512(multiplyByMultiplierAvx512(s, rv), p.zy, p.lo, p.hi));
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

void qmatmulVnni(const MatMulBatches& mb, const int8_t* a, const int8_t* b, const QMatMulParams& p, int8_t* y, ThreadPool* pool) {
  const int64_t M = mb.M, N = mb.N, K = mb.K, K4 = (K + 3) / 4, NB = (N + 15) / 16;
  const int64_t batches = static_cast<int64_t>(mb.a_off.size());
  const int64_t per_batch = NB * K4 * 16;
  std::vector<int32_t> packed(static_cast<size_t>(batches * per_batch));  // (zero: past K and past N add nothing)
  std::vector<int32_t> colc(static_cast<size_t>(batches * NB * 16));
  parallelUnits(pool, batches, K * N, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int8_t* B = b + mb.b_off[static_cast<size_t>(i)];
      auto* bytes = reinterpret_cast<int8_t*>(packed.data() + i * per_batch);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) bytes[((n / 16 * K4 + k / 4) * 16 + n % 16) * 4 + k % 4] = B[k * N + n];
      for (int64_t n = 0; n < N; ++n) {
        uint32_t s = 0;
        for (int64_t k = 0; k < K; ++k) s += static_cast<uint32_t>(static_cast<int32_t>(B[k * N + n]));
        colc[static_cast<size_t>(i * NB * 16 + n)] = static_cast<int32_t>(s * static_cast<uint32_t>(128 + p.za));
      }
    }
  });
  const RequantOnceVec rv(requantOnce(p.mul.m, std::max(-p.mul.shift, 0)));
  const int64_t row_blocks = (M + kRows - 1) / kRows;
  parallelUnits(pool, batches * row_blocks, kRows * N * K, [&](int64_t u0, int64_t u1) {
    std::vector<int32_t> aq(static_cast<size_t>(kRows * K4));
    int32_t rowc[kRows];
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t i = u / row_blocks, m0 = u % row_blocks * kRows;
      const int rows = static_cast<int>(std::min<int64_t>(kRows, M - m0));
      auto* q = reinterpret_cast<uint8_t*>(aq.data());
      std::memset(q, 0, aq.size() * 4);
      for (int r = 0; r < rows; ++r) {
        const int8_t* A = a + mb.a_off[static_cast<size_t>(i)] + (m0 + r) * K;
        uint32_t s = 0;
        for (int64_t k = 0; k < K; ++k) {
          q[r * K4 * 4 + k] = static_cast<uint8_t>(A[k] ^ 0x80);
          s += static_cast<uint32_t>(static_cast<int32_t>(A[k]) - p.za);
        }
        rowc[r] = static_cast<int32_t>(s * static_cast<uint32_t>(p.zb));
      }
      for (int64_t nb = 0; nb < NB; nb += kVecs) {
        const int vecs = static_cast<int>(std::min<int64_t>(kVecs, NB - nb));
        const TileArgs t{aq.data(), rowc, packed.data() + i * per_batch + nb * K4 * 16, colc.data() + i * NB * 16 + nb * 16,
                         K4, std::min<int64_t>(N - nb * 16, 16 * kVecs), y + (i * M + m0) * N + nb * 16, N};
        pickTile(rows, vecs)(t, p, rv);
      }
    }
  });
}

}  // namespace npuc::kernels::detail
