// The fast int8-pow2 convolution sums (kernels/pow2.hpp: convAccFast): convAcc's integers, plane by plane.
#include "kernels/pow2.hpp"

#include "kernels/ref/parallel_units.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace npuc::kernels::pow2 {

void convAccFast(const ConvShape& s, Codes x, const int16_t* w, int qw, const int32_t* bias, int qb, int round_add,
                 int64_t* acc, ThreadPool* pool) {
  if (s.in_spatial.size() != 2) return convAcc(s, x, w, qw, bias, qb, round_add, acc, pool);
  const int64_t N = s.batch, C = s.in_channels, M = s.out_channels, G = s.groups, Cg = C / G, Mg = M / G;
  const int64_t H = s.in_spatial[0], W = s.in_spatial[1], OH = s.out_spatial[0], OW = s.out_spatial[1];
  const int64_t KH = s.kernel[0], KW = s.kernel[1], SH = s.stride[0], SW = s.stride[1], DH = s.dilation[0], DW = s.dilation[1];
  const int64_t PT = s.pad_begin[0], PL = s.pad_begin[1];
  const int64_t K = Cg * KH * KW;
  int64_t wmax = 0;
  for (int64_t i = 0; i < M * K; ++i) wmax = std::max<int64_t>(wmax, std::abs(static_cast<int64_t>(w[i])));
  if (static_cast<double>(K) * 255.0 * static_cast<double>(wmax) >= 0x1p31)  // int32 sums could overflow
    return convAcc(s, x, w, qw, bias, qb, round_add, acc, pool);
  const int qacc = x.q + qw;
  // Per image and group, an im2col of the codes (int16, zeros in the padding): K rows of P = OH * OW outputs, or
  // (small P: inner products) P rows of K taps.
  const int64_t P = OH * OW;
  const bool rows = P >= 16;
  detail::parallelUnits(pool, N * G, Mg * P * K, [&](int64_t u0, int64_t u1) {
    std::vector<int16_t> col(static_cast<size_t>(K * P));
    std::vector<int32_t> sum(static_cast<size_t>(P));
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / G, g = u % G;
      for (int64_t c = 0; c < Cg; ++c) {
        const uint8_t* xc = x.p + (n * C + g * Cg + c) * H * W;
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            const int64_t k = (c * KH + ky) * KW + kx;
            for (int64_t oy = 0; oy < OH; ++oy) {
              const int64_t iy = oy * SH - PT + ky * DH;
              for (int64_t ox = 0; ox < OW; ++ox) {
                const int64_t ix = ox * SW - PL + kx * DW;
                const int16_t v = iy >= 0 && iy < H && ix >= 0 && ix < W ? static_cast<int16_t>(codeAt(xc, iy * W + ix, x.is_signed)) : 0;
                col[static_cast<size_t>(rows ? k * P + oy * OW + ox : (oy * OW + ox) * K + k)] = v;
              }
            }
          }
      }
      for (int64_t mi = 0; mi < Mg; ++mi) {
        const int64_t m = g * Mg + mi;
        const int16_t* wm = w + m * K;
        if (rows) {
          std::fill(sum.begin(), sum.end(), 0);
          for (int64_t k = 0; k < K; ++k) {
            const int32_t wv = wm[k];
            if (wv == 0) continue;
            const int16_t* r = col.data() + k * P;
            int32_t* out = sum.data();
            for (int64_t p = 0; p < P; ++p) out[p] += wv * r[p];
          }
        } else {
          for (int64_t p = 0; p < P; ++p) {
            const int16_t* r = col.data() + p * K;
            int32_t a = 0;
            for (int64_t k = 0; k < K; ++k) a += static_cast<int32_t>(wm[k]) * r[k];
            sum[static_cast<size_t>(p)] = a;
          }
        }
        const int64_t b0 = bias ? biasAt(bias[m], qb, qacc, round_add) : 0;
        int64_t* am = acc + (n * M + m) * P;
        for (int64_t i = 0; i < P; ++i) am[i] = b0 + sum[static_cast<size_t>(i)];
      }
    }
  });
}

}  // namespace npuc::kernels::pow2
