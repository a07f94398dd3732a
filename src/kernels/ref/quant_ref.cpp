// The int8-affine reference (kernels/quant.hpp): plain loops and exact integer arithmetic, the specification.
#include "kernels/quant.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/ref/pool_geom.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace npuc::kernels {

namespace {
constexpr int64_t kQ31 = int64_t{1} << 31;

/// round half away from zero, as std::round, for a value known to fit int64.
int64_t roundAway(double v) { return static_cast<int64_t>(std::round(v)); }
}  // namespace

Multiplier quantizeMultiplier(double r) {
  if (!(r >= 0) || !std::isfinite(r)) throw std::invalid_argument("quantizeMultiplier: the factor must be finite and >= 0");
  if (r == 0) return {};
  int e = 0;
  const double q = std::frexp(r, &e);  // r = q * 2^e, q in [0.5, 1)
  int64_t m = roundAway(q * static_cast<double>(kQ31));
  if (m == kQ31) {
    m /= 2;
    ++e;
  }
  if (e < -31) return {};  // below 2^-32: every int32 accumulator requantizes to 0 (or -0 rounding): the factor 0
  if (e > 30) throw std::invalid_argument("quantizeMultiplier: a factor of 2^30 or more");
  return {static_cast<int32_t>(m), e};
}

double multiplierValue(Multiplier mul) { return std::ldexp(static_cast<double>(mul.m), mul.shift - 31); }

int8_t quantizeValue(float x, float scale, int32_t zero_point) {
  if (std::isnan(x)) return static_cast<int8_t>(std::clamp(zero_point, -128, 127));
  const double v = std::round(static_cast<double>(x) / static_cast<double>(scale)) + zero_point;
  return static_cast<int8_t>(std::clamp(v, -128.0, 127.0));
}

float dequantizeValue(int8_t q, float scale, int32_t zero_point) {
  return static_cast<float>(static_cast<int32_t>(q) - zero_point) * scale;
}

void qgemm_ref(int64_t M, int64_t N, int64_t K, const int8_t* a, int32_t za, const int8_t* w, const int32_t* bias,
               const QOutput& out, int8_t* y) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      // Summed in 64 bits, kept as int32 (modulo 2^32, as the device's int32 accumulator; the translator keeps
      // K * 255 * 127 below 2^31, so it is exact).
      int64_t acc = bias ? bias[n] : 0;
      for (int64_t k = 0; k < K; ++k)
        acc += (static_cast<int32_t>(a[m * K + k]) - za) * static_cast<int32_t>(w[n * K + k]);
      y[m * N + n] = requantizeValue(static_cast<int32_t>(acc), out.of(n), out.zero_point, out.lo, out.hi);
    }
}

void requantize_ref(int64_t outer, int64_t channels, int64_t inner, const int32_t* acc, const QOutput& out, int8_t* y) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * channels + c) * inner + i;
        y[at] = requantizeValue(acc[at], out.of(c), out.zero_point, out.lo, out.hi);
      }
}

QAddParams qaddParams(double sa, int32_t za, double sb, int32_t zb, double sy, int32_t zy, int32_t lo, int32_t hi) {
  for (double v : {sa, sb, sy})
    if (!(v > 0) || !std::isfinite(v)) throw std::invalid_argument("qaddParams: scales must be finite and positive");
  QAddParams p;
  p.za = za, p.zb = zb, p.zy = zy, p.lo = lo, p.hi = hi;
  const double ra = sa / sy, rb = sb / sy, rmax = std::max(ra, rb);
  // The largest shift with round(rmax * 2^shift) < 2^15.
  int e = 0;
  std::frexp(rmax, &e);  // rmax in [2^(e-1), 2^e): rmax * 2^(15 - e) in [2^14, 2^15)
  int shift = 15 - e;
  if (roundAway(std::ldexp(rmax, shift)) >= (int64_t{1} << 15)) --shift;
  if (shift < 1) throw std::invalid_argument("qaddParams: an operand scale 2^14 times the output's or more");
  shift = std::min(shift, 30);  // (operands 2^15 times finer than the output: their multipliers lose bits, not range)
  p.shift = shift;
  p.ma = static_cast<int32_t>(roundAway(std::ldexp(ra, shift)));
  p.mb = static_cast<int32_t>(roundAway(std::ldexp(rb, shift)));
  return p;
}

void qadd_ref(int64_t n, const int8_t* a, const int8_t* b, const QAddParams& p, int8_t* y) {
  const int32_t half = int32_t{1} << (p.shift - 1);
  for (int64_t i = 0; i < n; ++i) {
    // |acc| <= 2 * 255 * (2^15 - 1) < 2^24: exact
    const int32_t acc = (static_cast<int32_t>(a[i]) - p.za) * p.ma + (static_cast<int32_t>(b[i]) - p.zb) * p.mb;
    y[i] = static_cast<int8_t>(std::clamp(p.zy + ((acc + half) >> p.shift), p.lo, p.hi));
  }
}

QMatMulParams qmatmulParams(double sa, int32_t za, double sb, int32_t zb, double sy, int32_t zy, int64_t K, int32_t lo,
                            int32_t hi) {
  for (double v : {sa, sb, sy})
    if (!(v > 0) || !std::isfinite(v)) throw std::invalid_argument("qmatmulParams: scales must be finite and positive");
  if (K < 1 || K > kMaxQMatMulDepth) throw std::invalid_argument("qmatmulParams: the depth K must be 1 to 33025 (int32 sums)");
  QMatMulParams p;
  p.za = za, p.zb = zb, p.zy = zy, p.lo = lo, p.hi = hi;
  p.mul = quantizeMultiplier(sa * sb / sy);
  return p;
}

void qmatmul_ref(const MatMulBatches& mb, const int8_t* a, const int8_t* b, const QMatMulParams& p, int8_t* y) {
  const int64_t M = mb.M, N = mb.N, K = mb.K;
  for (size_t i = 0; i < mb.a_off.size(); ++i) {
    const int8_t* A = a + mb.a_off[i];
    const int8_t* B = b + mb.b_off[i];
    int8_t* Y = y + static_cast<int64_t>(i) * M * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;  // (|acc| <= K * 255 * 255 < 2^31: qmatmulParams keeps K in range)
        for (int64_t k = 0; k < K; ++k)
          acc += (static_cast<int32_t>(A[m * K + k]) - p.za) * (static_cast<int32_t>(B[k * N + n]) - p.zb);
        Y[m * N + n] = requantizeValue(static_cast<int32_t>(acc), p.mul, p.zy, p.lo, p.hi);
      }
  }
}

QGlobalAvgPoolParams qglobalAvgPoolParams(double sx, int32_t zx, double sy, int32_t zy, int64_t n, int32_t lo, int32_t hi) {
  for (double v : {sx, sy})
    if (!(v > 0) || !std::isfinite(v)) throw std::invalid_argument("qglobalAvgPoolParams: scales must be finite and positive");
  if (n < 1 || n >= (int64_t{1} << 23)) throw std::invalid_argument("qglobalAvgPoolParams: a plane must hold 1 to 2^23 - 1 codes");
  QGlobalAvgPoolParams p;
  p.zx = zx, p.zy = zy, p.lo = lo, p.hi = hi;
  p.mul = quantizeMultiplier(sx / (sy * static_cast<double>(n)));
  return p;
}

void qglobalAvgPool(int64_t planes, int64_t n, const int8_t* x, const QGlobalAvgPoolParams& p, int8_t* y, ThreadPool* pool) {
  detail::parallelUnits(pool, planes, n, [&](int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {
      const int8_t* xp = x + pl * n;
      int32_t sum = 0;  // |sum| <= 128 n < 2^30
      for (int64_t i = 0; i < n; ++i) sum += xp[i];
      y[pl] = requantizeValue(sum - static_cast<int32_t>(n) * p.zx, p.mul, p.zy, p.lo, p.hi);
    }
  });
}

QMulParams qmulParams(double sa, int32_t za, double sb, int32_t zb, double sy, int32_t zy, int32_t lo, int32_t hi) {
  for (double v : {sa, sb, sy})
    if (!(v > 0) || !std::isfinite(v)) throw std::invalid_argument("qmulParams: scales must be finite and positive");
  QMulParams p;
  p.za = za, p.zb = zb, p.zy = zy, p.lo = lo, p.hi = hi;
  p.mul = quantizeMultiplier(sa * sb / sy);
  return p;
}

void qmul_ref(int64_t n, int64_t inner, const int8_t* a, const int8_t* b, const QMulParams& p, int8_t* y) {
  for (int64_t s = 0; s < n; s += inner) {  // (plane by plane: one gate each)
    const int32_t g = int32_t{b[s / inner]} - p.zb;
    const int64_t e = std::min(n, s + inner);
    for (int64_t i = s; i < e; ++i) y[i] = requantizeValue((int32_t{a[i]} - p.za) * g, p.mul, p.zy, p.lo, p.hi);
  }
}

void qlookup_ref(int64_t n, const int8_t* x, const int8_t* table, int8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[static_cast<uint8_t>(x[i] + 128)];
}

QAvgPoolParams qavgPoolParams(double sx, int32_t zx, double sy, int32_t zy, int64_t taps, int32_t lo, int32_t hi) {
  for (double v : {sx, sy})
    if (!(v > 0) || !std::isfinite(v)) throw std::invalid_argument("qavgPoolParams: scales must be finite and positive");
  if (taps < 1 || taps > kMaxAvgPoolTaps) throw std::invalid_argument("qavgPoolParams: a window must have 1 to 1024 taps");
  QAvgPoolParams p;
  p.zx = zx, p.zy = zy, p.lo = lo, p.hi = hi;
  for (int64_t n = 1; n <= taps; ++n) p.mul.push_back(quantizeMultiplier(sx / (sy * static_cast<double>(n))));
  return p;
}

void qavgPool2d(const Pool2dShape& s, const int8_t* x, const QAvgPoolParams& p, int8_t* y, ThreadPool* pool) {
  detail::checkPool(s, "qavgPool2d");
  if (static_cast<int64_t>(p.mul.size()) < s.kh * s.kw) fail(ErrorCode::kInvalidArgument, "qavgPool2d: {} factors for a window of {} taps", p.mul.size(), s.kh * s.kw);
  // Taps of a window starting at i0 (k taps, dilation d) inside [lo, hi).
  auto inside = [](int64_t i0, int64_t k, int64_t d, int64_t lo, int64_t hi) {
    int64_t c = 0;
    for (int64_t j = 0; j < k; ++j) c += i0 + j * d >= lo && i0 + j * d < hi;
    return c;
  };
  detail::parallelUnits(pool, s.planes, s.oh * s.ow * s.kh * s.kw, [&](int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {
      const int8_t* xp = x + pl * s.ih * s.iw;
      int8_t* yp = y + pl * s.oh * s.ow;
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        const int64_t iy0 = oy * s.sh - s.pt;
        const int64_t rows_in = inside(iy0, s.kh, s.dh, 0, s.ih);
        const int64_t rows_n = s.count_include_pad ? inside(iy0, s.kh, s.dh, -s.pt, s.ih + s.pb) : rows_in;
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          const int64_t ix0 = ox * s.sw - s.pl;
          const int64_t cols_in = inside(ix0, s.kw, s.dw, 0, s.iw);
          const int64_t n = rows_n * (s.count_include_pad ? inside(ix0, s.kw, s.dw, -s.pl, s.iw + s.pr) : cols_in);
          int32_t sum = 0;  // |sum| <= 128 * 1024 taps
          for (int64_t i = 0; i < s.kh; ++i) {
            const int64_t iy = iy0 + i * s.dh;
            if (iy < 0 || iy >= s.ih) continue;
            for (int64_t j = 0; j < s.kw; ++j) {
              const int64_t ix = ix0 + j * s.dw;
              if (ix >= 0 && ix < s.iw) sum += xp[iy * s.iw + ix];
            }
          }
          const int32_t acc = sum - static_cast<int32_t>(rows_in * cols_in) * p.zx;
          yp[oy * s.ow + ox] = n > 0 ? requantizeValue(acc, p.mul[static_cast<size_t>(n - 1)], p.zy, p.lo, p.hi)
                                     : static_cast<int8_t>(std::clamp(p.zy, p.lo, p.hi));
        }
      }
    }
  });
}

void maxPool2dI8(const Pool2dShape& s, const int8_t* x, int8_t* y, ThreadPool* pool) {
  detail::parallelUnits(pool, s.planes, s.oh * s.ow * s.kh * s.kw, [&](int64_t p0, int64_t p1) {
    std::vector<int8_t> row(static_cast<size_t>(std::max<int64_t>(s.iw, 1)));
    for (int64_t pl = p0; pl < p1; ++pl) {
      const int8_t* xp = x + pl * s.ih * s.iw;
      int8_t* yp = y + pl * s.oh * s.ow;
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        std::fill(row.begin(), row.end(), int8_t{-128});  // the window's rows, column by column
        for (int64_t i = 0; i < s.kh; ++i) {
          const int64_t iy = oy * s.sh - s.pt + i * s.dh;
          if (iy < 0 || iy >= s.ih) continue;
          const int8_t* r = xp + iy * s.iw;
          for (int64_t c = 0; c < s.iw; ++c) row[static_cast<size_t>(c)] = std::max(row[static_cast<size_t>(c)], r[c]);
        }
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          int8_t m = -128;
          for (int64_t j = 0; j < s.kw; ++j) {
            const int64_t ix = ox * s.sw - s.pl + j * s.dw;
            if (ix >= 0 && ix < s.iw) m = std::max(m, row[static_cast<size_t>(ix)]);
          }
          yp[oy * s.ow + ox] = m;
        }
      }
    }
  });
}

}  // namespace npuc::kernels
