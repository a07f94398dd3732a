// The fast int8-pow2 convolution sums (kernels/pow2.hpp: convAccFast): convAcc's integers, plane by plane.
#include "kernels/pow2.hpp"

#include "kernels/quant.hpp"
#include "kernels/ref/parallel_units.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace npuc::kernels::pow2 {

#define NPUC_POW2_TAP pow2TapBaseline
#define NPUC_POW2_DOT pow2DotBaseline
#include "kernels/x86/pow2_tap.inc"
#undef NPUC_POW2_TAP
#undef NPUC_POW2_DOT
void pow2TapAvx2(int32_t* acc, const int16_t* src, int64_t n, int32_t wv);  // pow2_tap_avx2.cpp
int32_t pow2DotAvx2(const int16_t* a, const int16_t* b, int64_t n);

bool cpuHasPow2Path(Pow2Path p) { return p == Pow2Path::kBaseline || __builtin_cpu_supports("avx2"); }
Pow2Path bestPow2Path() {
  static const Pow2Path best = cpuHasPow2Path(Pow2Path::kAvx2) ? Pow2Path::kAvx2 : Pow2Path::kBaseline;
  return best;
}

void convAccFast(const ConvShape& s, Codes x, const int16_t* w, int qw, const int32_t* bias, int qb, int round_add,
                 int64_t* acc, ThreadPool* pool, Pow2Path path) {
  const bool avx2 = path == Pow2Path::kAvx2 && cpuHasPow2Path(Pow2Path::kAvx2);
  const auto tap = avx2 ? pow2TapAvx2 : pow2TapBaseline;
  const auto dot = avx2 ? pow2DotAvx2 : pow2DotBaseline;
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
  // The im2col of image n, group g.
  auto im2col = [&](int64_t n, int64_t g, std::vector<int16_t>& col) {
    for (int64_t c = 0; c < Cg; ++c) {
      const uint8_t* xc = x.p + (n * C + g * Cg + c) * H * W;
      for (int64_t ky = 0; ky < KH; ++ky)
        for (int64_t kx = 0; kx < KW; ++kx) {
          const int64_t k = (c * KH + ky) * KW + kx;
          // The output columns whose tap lies inside the input: ox in [x0, x1).
          const int64_t off = kx * DW - PL;
          const int64_t x0 = std::min(OW, off >= 0 ? 0 : (-off + SW - 1) / SW);
          const int64_t x1 = std::max(x0, std::min(OW, W - off <= 0 ? 0 : (W - off + SW - 1) / SW));
          for (int64_t oy = 0; oy < OH; ++oy) {
            const int64_t iy = oy * SH - PT + ky * DH;
            const int64_t stride = rows ? 1 : K;
            int16_t* dst = col.data() + (rows ? k * P + oy * OW : oy * OW * K + k);
            if (iy < 0 || iy >= H) {
              for (int64_t ox = 0; ox < OW; ++ox) dst[ox * stride] = 0;
              continue;
            }
            for (int64_t ox = 0; ox < x0; ++ox) dst[ox * stride] = 0;
            const uint8_t* src = xc + iy * W + off;
            if (x.is_signed)
              for (int64_t ox = x0; ox < x1; ++ox) dst[ox * stride] = static_cast<int8_t>(src[ox * SW]);
            else
              for (int64_t ox = x0; ox < x1; ++ox) dst[ox * stride] = src[ox * SW];
            for (int64_t ox = x1; ox < OW; ++ox) dst[ox * stride] = 0;
          }
        }
    }
  };
  // The sums of output channels [m0, m1) of group g from its im2col.
  auto sums = [&](int64_t n, int64_t g, const std::vector<int16_t>& col, int64_t m0, int64_t m1, std::vector<int32_t>& sum) {
    for (int64_t mi = m0; mi < m1; ++mi) {
      const int64_t m = g * Mg + mi;
      const int16_t* wm = w + m * K;
      if (rows) {
        std::fill(sum.begin(), sum.end(), 0);
        for (int64_t k = 0; k < K; ++k)
          if (wm[k] != 0) tap(sum.data(), col.data() + k * P, P, wm[k]);
      } else {
        for (int64_t p = 0; p < P; ++p) sum[static_cast<size_t>(p)] = dot(wm, col.data() + p * K, K);
      }
      const int64_t b0 = bias ? biasAt(bias[m], qb, qacc, round_add) : 0;
      int64_t* am = acc + (n * M + m) * P;
      for (int64_t i = 0; i < P; ++i) am[i] = b0 + sum[static_cast<size_t>(i)];
    }
  };
  if (N * G >= 4 || Mg < 2) {  // many images or groups (depthwise): a unit each, its own im2col
    detail::parallelUnits(pool, N * G, Mg * P * K, [&](int64_t u0, int64_t u1) {
      std::vector<int16_t> col(static_cast<size_t>(K * P));
      std::vector<int32_t> sum(static_cast<size_t>(P));
      for (int64_t u = u0; u < u1; ++u) {
        im2col(u / G, u % G, col);
        sums(u / G, u % G, col, 0, Mg, sum);
      }
    });
    return;
  }
  std::vector<int16_t> col(static_cast<size_t>(K * P));  // one im2col, its output channels split among the threads
  for (int64_t u = 0; u < N * G; ++u) {
    im2col(u / G, u % G, col);
    detail::parallelUnits(pool, Mg, P * K, [&](int64_t m0, int64_t m1) {
      std::vector<int32_t> sum(static_cast<size_t>(P));
      sums(u / G, u % G, col, m0, m1, sum);
    });
  }
}

bool fast::cpuHasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}

PackedWeights packWeights(const ConvShape& s, const int16_t* w) {
  PackedWeights p;
  static const bool cpu = fast::cpuHasAvx512() && __builtin_cpu_supports("avx512vnni");
  if (!cpu || s.in_spatial.size() != 2) return p;
  const int64_t M = s.out_channels, K = s.in_channels / s.groups * s.kernel[0] * s.kernel[1], K4 = (K + 3) / 4;
  // (|sum| <= K4 * 4 * 255 * 128 with the bytes offset by 128, and the correction 128 * sum |w| alike)
  if (K4 * 4 * 255 * 128 >= (int64_t{1} << 31)) return p;
  p.bias_room = (int64_t{1} << 31) - K4 * 4 * 255 * 128;
  for (int64_t i = 0; i < M * K; ++i)
    if (w[i] < -128 || w[i] > 127) return p;
  p.a4.assign(static_cast<size_t>(M * K4), 0);
  p.wsum.assign(static_cast<size_t>(M), 0);
  for (int64_t m = 0; m < M; ++m) {
    auto* a = reinterpret_cast<int8_t*>(p.a4.data() + m * K4);
    for (int64_t k = 0; k < K; ++k) {
      a[k] = static_cast<int8_t>(w[m * K + k]);
      p.wsum[static_cast<size_t>(m)] += w[m * K + k];
    }
  }
  p.vnni = true;
  return p;
}

int convFinishFast(const ConvShape& s, Codes x, const int16_t* w, const PackedWeights& packed, int qw, const int32_t* bias,
                   int qb, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y, std::vector<int64_t>& acc64,
                   std::vector<int32_t>& acc32, ThreadPool* pool) {
  const int qacc = x.q + qw;
  int64_t n = s.batch * s.out_channels;
  for (int64_t d : s.out_spatial) n *= d;
  if (packed.vnni) {
    // Each bias in accumulator units, with room for the largest sum in int32.
    std::vector<int32_t> b0(static_cast<size_t>(s.out_channels), 0);
    bool fits = true;
    for (int64_t m = 0; m < s.out_channels && bias != nullptr && fits; ++m) {
      const int64_t v = biasAt(bias[m], qb, qacc, opt.round_add);
      fits = v > -packed.bias_room && v < packed.bias_room;
      b0[static_cast<size_t>(m)] = static_cast<int32_t>(fits ? v : 0);
    }
    if (fits) {
      if (acc32.size() < static_cast<size_t>(n)) acc32.resize(static_cast<size_t>(n));  // (grows only: no refill per layer)
      fast::convSumsVnni(s, x, packed, b0.data(), acc32.data(), pool);
      return fast::finishI32Avx512(acc32.data(), n, qacc, 1, o, slot, opt, y);
    }
  }
  if (acc64.size() < static_cast<size_t>(n)) acc64.resize(static_cast<size_t>(n));
  convAccFast(s, x, w, qw, bias, qb, opt.round_add, acc64.data(), pool);
  return finish(acc64.data(), n, qacc, 1, o, slot, opt, y);
}

int quantizeFast(const float* x, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y) {
  return fast::cpuHasAvx512() ? fast::quantizeAvx512(x, n, o, slot, opt, y) : quantize(x, n, o, slot, opt, y);
}

void dequantizeFast(Codes x, int64_t n, float* y) {
  if (fast::cpuHasAvx512()) return fast::dequantizeAvx512(x, n, y);
  dequantize(x, n, y);
}

int addFast(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
            std::vector<int64_t>& scratch) {
  return fast::cpuHasAvx512() ? fast::addAvx512(a, b, n, o, slot, opt, y, scratch) : add(a, b, n, o, slot, opt, y, scratch);
}

int concatFast(const std::vector<Codes>& ins, const std::vector<int64_t>& chunks, int64_t outer, const OutSpec& o,
               Slot& slot, const Options& opt, uint8_t* y, std::vector<int64_t>& scratch, std::vector<int32_t>& scratch32) {
  int Q = kMinQ, lowest = kMaxQ;
  int64_t per = 0;
  for (size_t k = 0; k < ins.size(); ++k) Q = std::max(Q, ins[k].q), lowest = std::min(lowest, ins[k].q), per += chunks[k];
  if (!fast::cpuHasAvx512() || Q - lowest > 23) return concat(ins, chunks, outer, o, slot, opt, y, scratch);
  // (|code| <= 255, shifted by at most 23: inside int32)
  const int64_t n = outer * per;
  if (scratch32.size() < static_cast<size_t>(n)) scratch32.resize(static_cast<size_t>(n));  // (grows only)
  int32_t* acc = scratch32.data();
  for (int64_t i = 0; i < outer; ++i)
    for (size_t k = 0; k < ins.size(); ++k) {
      const int sh = Q - ins[k].q;
      const int64_t c = chunks[k];
      if (ins[k].is_signed) {
        const auto* src = reinterpret_cast<const int8_t*>(ins[k].p) + i * c;
        for (int64_t j = 0; j < c; ++j) acc[j] = static_cast<int32_t>(src[j]) * (int32_t{1} << sh);
      } else {
        const uint8_t* src = ins[k].p + i * c;
        for (int64_t j = 0; j < c; ++j) acc[j] = static_cast<int32_t>(src[j]) << sh;
      }
      acc += c;
    }
  return fast::finishI32Avx512(scratch32.data(), n, Q, 1, o, slot, opt, y);
}

void maxPoolFast(const Pool2dShape& s, const uint8_t* x, bool is_signed, uint8_t* y, ThreadPool* pool) {
  const int8_t* xi = reinterpret_cast<const int8_t*>(x);
  if (!is_signed) {  // (max commutes with the order-preserving map u -> u ^ 0x80 onto int8; 0 when no tap is inside)
    thread_local std::vector<int8_t> flipped;
    const int64_t n = s.planes * s.ih * s.iw;
    if (flipped.size() < static_cast<size_t>(n)) flipped.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) flipped[static_cast<size_t>(i)] = static_cast<int8_t>(x[i] ^ 0x80);
    xi = flipped.data();
  }
  maxPool2dI8Fast(s, xi, reinterpret_cast<int8_t*>(y), pool);
  if (!is_signed)
    for (int64_t i = 0; i < s.planes * s.oh * s.ow; ++i) y[i] ^= 0x80;
}

}  // namespace npuc::kernels::pow2
