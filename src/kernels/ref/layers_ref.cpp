// Reference kernels of the non-MAC layers (kernels/layers.hpp): pooling, normalisation, softmax, element-wise
// unary and binary math, reductions, quantization (data movement: ref/movement_ref.cpp; resize: ref/resize_ref.cpp).
// Each output element is computed by one thread in a fixed order, so the results are bit-identical for every thread
// count; the formulas are those the reference engine has always used (its ONNX conformance suite checks them).
#include "kernels/expf.hpp"
#include "kernels/layer_templates.hpp"
#include "kernels/layers.hpp"
#include "kernels/ref/odometer.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/ref/pool_geom.hpp"
#include "kernels/ref/typed_dispatch.hpp"
#include "kernels/typed.hpp"
#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

namespace npuc::kernels {

namespace {

using detail::checkPool;
using detail::checkRank;
using detail::numel;
using detail::Odometer;
using detail::offsetsOf;
using detail::paddedTaps;
using detail::parallelUnits;
using detail::tapRange;

// ---------------------------------------------------------------------------------------------------------
// Pooling.

/// One output row (plane-local row oh) of a 2-D pooling. For each valid tap (kh, kw) in row-major order, the tap
/// is combined into every output of the row it reaches: each output sees its valid taps in row-major order, as
/// tap-by-tap per output, and the inner loop runs along the output row.
template <bool kMax>
void poolRow(const Pool2dShape& s, const float* xp, float* out, int64_t oh) {
  const int64_t H = s.ih, W = s.iw, OW = s.ow;
  const int64_t ih0 = oh * s.sh - s.pt;
  int64_t khl, khh;
  tapRange(ih0, s.kh, s.dh, H, khl, khh);
  const float init = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
  for (int64_t ow = 0; ow < OW; ++ow) out[ow] = init;
  const int64_t sw = s.sw;
  for (int64_t kh = khl; kh < khh; ++kh) {
    const float* row = xp + (ih0 + kh * s.dh) * W;
    for (int64_t kw = 0; kw < s.kw; ++kw) {
      // outputs whose tap kw lands inside the row: 0 <= ow*sw - pl + kw*dw < W
      const int64_t shift = kw * s.dw - s.pl;
      const int64_t lo = shift >= 0 ? 0 : (-shift + sw - 1) / sw;
      int64_t hi = W - 1 - shift < 0 ? 0 : (W - 1 - shift) / sw + 1;
      hi = std::min(hi, OW);
      if (lo >= hi) continue;
      const float* src = row + shift;
      if constexpr (kMax) {
        if (sw == 1)
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] = src[ow] > out[ow] ? src[ow] : out[ow];
        else
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] = src[ow * sw] > out[ow] ? src[ow * sw] : out[ow];
      } else {
        if (sw == 1)
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] += src[ow];
        else
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] += src[ow * sw];
      }
    }
  }
  if constexpr (kMax) {
    // A pad value that can win (not -inf, not NaN): the outputs whose window reaches into the padding are
    // recomputed tap by tap in row-major order with the padded taps as pad_value, as MaxPool over the padded
    // input computes them (the order decides between -0 and +0).
    if (s.pad_value > -std::numeric_limits<float>::infinity()) {
      const int64_t rows_in = khh - khl, rows_pad = paddedTaps(ih0, s.kh, s.dh, H, s.pt, s.pb);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t iw0 = ow * sw - s.pl;
        int64_t kwl, kwh;
        tapRange(iw0, s.kw, s.dw, W, kwl, kwh);
        if (rows_pad * paddedTaps(iw0, s.kw, s.dw, W, s.pl, s.pr) == rows_in * (kwh - kwl)) continue;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t kh = 0; kh < s.kh; ++kh) {
          const int64_t ih = ih0 + kh * s.dh;
          if (ih < -s.pt || ih >= H + s.pb) continue;
          for (int64_t kw = 0; kw < s.kw; ++kw) {
            const int64_t iw = iw0 + kw * s.dw;
            if (iw < -s.pl || iw >= W + s.pr) continue;
            const float v = ih >= 0 && ih < H && iw >= 0 && iw < W ? xp[ih * W + iw] : s.pad_value;
            m = v > m ? v : m;
          }
        }
        out[ow] = m;
      }
    }
  } else {
    const bool inc = s.count_include_pad;
    const int64_t rows_counted = inc ? paddedTaps(ih0, s.kh, s.dh, H, s.pt, s.pb) : khh - khl;
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t iw0 = ow * sw - s.pl;
      int64_t kwl, kwh;
      tapRange(iw0, s.kw, s.dw, W, kwl, kwh);
      const int64_t n = rows_counted * (inc ? paddedTaps(iw0, s.kw, s.dw, W, s.pl, s.pr) : kwh - kwl);
      out[ow] = n ? out[ow] / static_cast<float>(n) : 0.0f;
    }
  }
}

template <bool kMax>
void pool2d(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool) {
  checkPool(s, kMax ? "maxPool2d" : "avgPool2d");
  const int64_t in_plane = s.ih * s.iw, out_plane = s.oh * s.ow;
  const int64_t rows = s.planes * s.oh;
  parallelUnits(pool, rows, s.ow * s.kh * s.kw, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t p = r / s.oh, oh = r % s.oh;
      poolRow<kMax>(s, x + p * in_plane, y + p * out_plane + oh * s.ow, oh);
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// Unary ops.

constexpr std::array<const char*, static_cast<size_t>(UnaryOp::kCount)> kUnaryNames = {
#define NPUC_UNARY_OP(E, name, alpha, beta) name,
#include "kernels/elementwise_ops.def"
#undef NPUC_UNARY_OP
};
constexpr std::array<UnaryAttrs, static_cast<size_t>(UnaryOp::kCount)> kUnaryAttrs = {{
#define NPUC_UNARY_OP(E, name, alpha, beta) {alpha, beta},
#include "kernels/elementwise_ops.def"
#undef NPUC_UNARY_OP
}};

constexpr std::array<const char*, static_cast<size_t>(BinaryOp::kCount)> kBinaryNames = {
#define NPUC_BINARY_OP(E, name) name,
#include "kernels/elementwise_ops.def"
#undef NPUC_BINARY_OP
};

inline double softplusD(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }

/// The specification of every unary op. Ops computed in double round once to float at the end.
template <UnaryOp Op>
inline float unaryT(float x, float alpha, float beta) {
  const double xd = static_cast<double>(x);
  if constexpr (Op == UnaryOp::kRelu) return x < 0.0f ? 0.0f : x;
  else if constexpr (Op == UnaryOp::kLeakyRelu) return x < 0 ? static_cast<float>(static_cast<double>(alpha) * xd) : x;
  else if constexpr (Op == UnaryOp::kClip) return x < alpha ? alpha : (x > beta ? beta : x);
  else if constexpr (Op == UnaryOp::kSigmoid) return sigmoidF32(x);
  else if constexpr (Op == UnaryOp::kTanh) return tanhF32(x);
  else if constexpr (Op == UnaryOp::kHardSigmoid)
    return hardSigmoid(x, alpha, beta);
  else if constexpr (Op == UnaryOp::kHardSwish) return static_cast<float>(xd * std::clamp(xd / 6.0 + 0.5, 0.0, 1.0));
  // Swish and Mish are the fused forms of the ONNX op chains x * Sigmoid(x) and x * Tanh(Softplus(x)): each
  // op of the chain rounds to float.
  else if constexpr (Op == UnaryOp::kSwish) return x * sigmoidF32(x);
  else if constexpr (Op == UnaryOp::kMish)
    return x * static_cast<float>(std::tanh(static_cast<double>(static_cast<float>(softplusD(xd)))));
  else if constexpr (Op == UnaryOp::kElu) {
    const double a = alpha;
    return static_cast<float>(xd < 0 ? a * (std::exp(xd) - 1.0) : xd);
  } else if constexpr (Op == UnaryOp::kSelu) {
    const double a = alpha, g = beta;
    return static_cast<float>(xd <= 0 ? g * (a * std::exp(xd) - a) : g * xd);
  } else if constexpr (Op == UnaryOp::kCelu) {
    const double a = alpha;
    return static_cast<float>(std::max(0.0, xd) + std::min(0.0, a * (std::exp(xd / a) - 1.0)));
  } else if constexpr (Op == UnaryOp::kSoftplus) return static_cast<float>(softplusD(xd));
  else if constexpr (Op == UnaryOp::kSoftsign) return static_cast<float>(xd / (1.0 + std::fabs(xd)));
  else if constexpr (Op == UnaryOp::kExp) return static_cast<float>(std::exp(xd));
  else if constexpr (Op == UnaryOp::kLog) return static_cast<float>(std::log(xd));
  else if constexpr (Op == UnaryOp::kSqrt) return static_cast<float>(std::sqrt(xd));
  else if constexpr (Op == UnaryOp::kReciprocal) return static_cast<float>(1.0 / xd);
  else if constexpr (Op == UnaryOp::kAbs) return x < 0.0f ? -x : x;
  else if constexpr (Op == UnaryOp::kNeg) return -x;
  else if constexpr (Op == UnaryOp::kErf) return static_cast<float>(std::erf(xd));
  else if constexpr (Op == UnaryOp::kFloor) return std::floor(x);
  else if constexpr (Op == UnaryOp::kCeil) return std::ceil(x);
  else if constexpr (Op == UnaryOp::kRound) return static_cast<float>(std::nearbyint(xd));
  else if constexpr (Op == UnaryOp::kSin) return static_cast<float>(std::sin(xd));
  else if constexpr (Op == UnaryOp::kCos) return static_cast<float>(std::cos(xd));
  else if constexpr (Op == UnaryOp::kTan) return static_cast<float>(std::tan(xd));
  else if constexpr (Op == UnaryOp::kAsin) return static_cast<float>(std::asin(xd));
  else if constexpr (Op == UnaryOp::kAcos) return static_cast<float>(std::acos(xd));
  else if constexpr (Op == UnaryOp::kAtan) return static_cast<float>(std::atan(xd));
  else if constexpr (Op == UnaryOp::kSinh) return static_cast<float>(std::sinh(xd));
  else if constexpr (Op == UnaryOp::kCosh) return static_cast<float>(std::cosh(xd));
  else if constexpr (Op == UnaryOp::kAsinh) return static_cast<float>(std::asinh(xd));
  else if constexpr (Op == UnaryOp::kAcosh) return static_cast<float>(std::acosh(xd));
  else if constexpr (Op == UnaryOp::kAtanh) return static_cast<float>(std::atanh(xd));
  else if constexpr (Op == UnaryOp::kSign) return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;  // ±0 and NaN stay
  else if constexpr (Op == UnaryOp::kThresholdedRelu) return x > alpha ? x : 0.0f;
  else if constexpr (Op == UnaryOp::kShrink) {  // alpha: bias, beta: lambd
    const double b = alpha, l = beta;
    return static_cast<float>(xd < -l ? xd + b : (xd > l ? xd - b : 0.0));
  } else return x;  // kIdentity
}

/// Ops cheap enough that a thread needs many elements to be worth waking.
constexpr bool cheapUnary(UnaryOp op) {
  return op == UnaryOp::kRelu || op == UnaryOp::kLeakyRelu || op == UnaryOp::kClip || op == UnaryOp::kAbs ||
         op == UnaryOp::kNeg || op == UnaryOp::kFloor || op == UnaryOp::kCeil || op == UnaryOp::kIdentity;
}

template <UnaryOp Op>
void unaryLoop(float alpha, float beta, int64_t n, const float* x, float* y, ThreadPool* pool) {
  parallelUnits(pool, n, cheapUnary(Op) ? 1 : 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = unaryT<Op>(x[i], alpha, beta);
  });
}

template <size_t... I>
constexpr auto makeUnaryTables(std::index_sequence<I...>) {
  using Scalar = float (*)(float, float, float);
  using Loop = void (*)(float, float, int64_t, const float*, float*, ThreadPool*);
  return std::make_pair(std::array<Scalar, sizeof...(I)>{&unaryT<static_cast<UnaryOp>(I)>...},
                        std::array<Loop, sizeof...(I)>{&unaryLoop<static_cast<UnaryOp>(I)>...});
}
constexpr auto kUnaryTables = makeUnaryTables(std::make_index_sequence<static_cast<size_t>(UnaryOp::kCount)>{});

// ---------------------------------------------------------------------------------------------------------
// Binary ops.

template <BinaryOp Op>
inline float binaryT(float a, float b) {
  if constexpr (Op == BinaryOp::kAdd) return a + b;
  else if constexpr (Op == BinaryOp::kSub) return a - b;
  else if constexpr (Op == BinaryOp::kMul) return a * b;
  else if constexpr (Op == BinaryOp::kDiv) return a / b;
  else if constexpr (Op == BinaryOp::kMax) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
    return a < b ? b : a;
  } else if constexpr (Op == BinaryOp::kMin) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
    return b < a ? b : a;
  } else if constexpr (Op == BinaryOp::kPow) {
    return static_cast<float>(std::pow(a, b));  // powf, as the engine's float32 Pow
  } else {
    static_assert(Op == BinaryOp::kPRelu);
    return a < 0.0f ? a * b : a;  // b: the slope
  }
}

/// y[i] = act(a[i * sa] op b[i * sb]) for i < n; the unit and zero strides get their own loops.
template <BinaryOp Op>
void binaryRun(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n, const Activation& act) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = binaryT<Op>(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const float bv = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = binaryT<Op>(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = a[0];
    for (int64_t i = 0; i < n; ++i) y[i] = binaryT<Op>(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = binaryT<Op>(a[i * sa], b[i * sb]);
  }
  switch (act.kind) {
    case ActKind::kNone: break;
    case ActKind::kRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] < 0.0f ? 0.0f : y[i];
      break;
    default:
      for (int64_t i = 0; i < n; ++i) y[i] = applyActivation(y[i], act);
      break;
  }
}

using BinaryRunFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, const Activation&);
template <size_t... I>
constexpr auto makeBinaryTables(std::index_sequence<I...>) {
  using Scalar = float (*)(float, float);
  return std::make_pair(std::array<Scalar, sizeof...(I)>{&binaryT<static_cast<BinaryOp>(I)>...},
                        std::array<BinaryRunFn, sizeof...(I)>{&binaryRun<static_cast<BinaryOp>(I)>...});
}
constexpr auto kBinaryTables = makeBinaryTables(std::make_index_sequence<static_cast<size_t>(BinaryOp::kCount)>{});

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Pooling.

void maxPool2d(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool) { pool2d<true>(s, x, y, pool); }

void avgPool2d(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool) { pool2d<false>(s, x, y, pool); }

// Global pooling: each plane reduced in index order, eight planes side by side so the eight dependency chains
// overlap (the sum of one plane is a serial chain of adds: alone it runs at the add latency).
template <class Step>
void globalReduce(int64_t planes, int64_t size, const float* x, float* y, float init, Step step, ThreadPool* pool) {
  parallelUnits(pool, planes, size, [&](int64_t b, int64_t e) {
    int64_t p = b;
    for (; p + 8 <= e; p += 8) {
      float acc[8];
      for (float& a : acc) a = init;
      const float* xp = x + p * size;
      for (int64_t i = 0; i < size; ++i) {
        for (int k = 0; k < 8; ++k) acc[k] = step(acc[k], xp[k * size + i]);
      }
      for (int k = 0; k < 8; ++k) y[p + k] = acc[k];
    }
    for (; p < e; ++p) {
      const float* xp = x + p * size;
      float a = init;
      for (int64_t i = 0; i < size; ++i) a = step(a, xp[i]);
      y[p] = a;
    }
  });
}

void globalMaxPool(int64_t planes, int64_t size, const float* x, float* y, ThreadPool* pool) {
  globalReduce(planes, size, x, y, -std::numeric_limits<float>::infinity(),
               [](float m, float v) { return v > m ? v : m; }, pool);
}

void globalAvgPool(int64_t planes, int64_t size, const float* x, float* y, ThreadPool* pool) {
  globalReduce(planes, size, x, y, 0.0f, [](float s, float v) { return s + v; }, pool);
  for (int64_t p = 0; p < planes; ++p) y[p] /= static_cast<float>(size);
}

// ---------------------------------------------------------------------------------------------------------
// Normalisation.

void channelAffine(int64_t n, int64_t c, int64_t inner, const float* x, const float* a, const float* b, float* y,
                   ThreadPool* pool) {
  if (inner <= 0 || c <= 0) return;
  // Units of element ranges, so one large plane still spreads over the threads.
  parallelUnits(pool, n * c * inner, 1, [&](int64_t s, int64_t e) {
    int64_t pl = s / inner, i = s % inner;
    for (int64_t pos = s; pos < e; ++pl, i = 0) {
      const int64_t end = std::min(e - pos + i, inner);
      const float av = a[pl % c], bv = b[pl % c];
      const float* xp = x + pl * inner;
      float* yp = y + pl * inner;
      for (int64_t k = i; k < end; ++k) yp[k] = xp[k] * av + bv;
      pos += end - i;
    }
  });
}

void lrn(int64_t n, int64_t c, int64_t inner, int64_t size, float alpha, float beta, float bias, const float* x,
         float* y, ThreadPool* pool) {
  if (size < 1) fail(ErrorCode::kInvalidArgument, "lrn: size {} < 1", size);
  const double al = alpha, be = beta, bi = bias;
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  parallelUnits(pool, n * c, inner * size * 4, [&](int64_t s, int64_t e) {
    std::vector<double> acc(static_cast<size_t>(inner));
    for (int64_t pl = s; pl < e; ++pl) {
      const int64_t b = pl / c, ch = pl % c;
      std::fill(acc.begin(), acc.end(), 0.0);
      // Each output's sum runs over the channels k in ascending order.
      for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min(c - 1, ch + hi); ++k) {
        const float* xk = x + (b * c + k) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const double v = xk[i];
          acc[static_cast<size_t>(i)] += v * v;
        }
      }
      const float* xp = x + pl * inner;
      float* yp = y + pl * inner;
      for (int64_t i = 0; i < inner; ++i)
        yp[i] = static_cast<float>(xp[i] / std::pow(bi + al / static_cast<double>(size) * acc[static_cast<size_t>(i)], be));
    }
  });
}

void softmax(SoftmaxKind kind, int64_t outer, int64_t len, int64_t inner, const float* x, float* y, ThreadPool* pool) {
  if (outer <= 0 || len <= 0 || inner <= 0) return;
  // Work units: (outer row, block of up to kBlock inner columns). Every column keeps its own max / sum, each
  // accumulated over the axis in index order, so blocking changes nothing numerically.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallelUnits(pool, outer * blocks, std::min(inner, kBlock) * len * 8, [&](int64_t ub, int64_t ue) {
    std::array<float, kBlock> m, sum;
    std::array<int64_t, kBlock> am;
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t o = u / blocks, j0 = (u % blocks) * kBlock, w = std::min(kBlock, inner - j0);
      const float* xb = x + o * len * inner + j0;
      float* yb = y + o * len * inner + j0;
      for (int64_t j = 0; j < w; ++j) {
        m[static_cast<size_t>(j)] = -std::numeric_limits<float>::infinity();
        am[static_cast<size_t>(j)] = 0;
        sum[static_cast<size_t>(j)] = 0.0f;
      }
      for (int64_t i = 0; i < len; ++i) {
        const float* xr = xb + i * inner;
        for (int64_t j = 0; j < w; ++j) {
          const size_t uj = static_cast<size_t>(j);
          if (xr[j] > m[uj]) {
            m[uj] = xr[j];
            am[uj] = i;
          }
        }
      }
      if (kind == SoftmaxKind::kHardmax) {
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < w; ++j) yb[i * inner + j] = i == am[static_cast<size_t>(j)] ? 1.0f : 0.0f;
      } else if (kind == SoftmaxKind::kLogSoftmax) {
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < w; ++j) sum[static_cast<size_t>(j)] += std::exp(xb[i * inner + j] - m[static_cast<size_t>(j)]);
        for (int64_t j = 0; j < w; ++j) sum[static_cast<size_t>(j)] = std::log(sum[static_cast<size_t>(j)]);
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < w; ++j) {
            const size_t uj = static_cast<size_t>(j);
            yb[i * inner + j] = xb[i * inner + j] - m[uj] - sum[uj];
          }
      } else {
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < w; ++j) {
            const size_t uj = static_cast<size_t>(j);
            const float ex = expF32(xb[i * inner + j] - m[uj]);
            yb[i * inner + j] = ex;
            sum[uj] += ex;
          }
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < w; ++j) yb[i * inner + j] = yb[i * inner + j] / sum[static_cast<size_t>(j)];
      }
    }
  });
}

MeanVariance meanVariance(const float* x, int64_t n) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  return {mean, var / static_cast<double>(n)};
}

void layerNorm(int64_t outer, int64_t inner, float epsilon, const float* x, const float* scale, const float* bias,
               float* y, float* mean_out, float* inv_out, ThreadPool* pool) {
  if (outer < 0 || inner < 0) fail(ErrorCode::kInvalidArgument, "layerNorm: negative size {}x{}", outer, inner);
  const double eps = epsilon;
  parallelUnits(pool, outer, std::max<int64_t>(inner, 1) * 3, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const float* xr = x + o * inner;
      const auto [mean, var] = meanVariance(xr, inner);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < inner; ++i)
        y[o * inner + i] = static_cast<float>((xr[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.0f));
      if (mean_out) mean_out[o] = static_cast<float>(mean);
      if (inv_out) inv_out[o] = static_cast<float>(inv);
    }
  });
}

void instanceNorm(int64_t n, int64_t c, int64_t inner, float epsilon, const float* x, const float* scale,
                  const float* bias, float* y, ThreadPool* pool) {
  if (n < 0 || c < 0 || inner < 0) fail(ErrorCode::kInvalidArgument, "instanceNorm: negative size {}x{}x{}", n, c, inner);
  const double eps = epsilon;
  parallelUnits(pool, n * c, std::max<int64_t>(inner, 1) * 3, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const int64_t ch = pl % c;
      const float* xp = x + pl * inner;
      const auto [mean, var] = meanVariance(xp, inner);
      const double k = static_cast<double>(scale[ch]) / std::sqrt(var + eps);
      const double bc = bias[ch];
      for (int64_t i = 0; i < inner; ++i) y[pl * inner + i] = static_cast<float>((xp[i] - mean) * k + bc);
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// Reductions.

namespace {

constexpr std::array<const char*, static_cast<size_t>(ReduceOp::kCount)> kReduceNames = {
#define NPUC_REDUCE_OP(E, name) name,
#include "kernels/elementwise_ops.def"
#undef NPUC_REDUCE_OP
};

}  // namespace

const char* reduceOpName(ReduceOp op) {
  const size_t i = static_cast<size_t>(op);
  return i < kReduceNames.size() ? kReduceNames[i] : "?";
}

ReduceOp reduceOpFromName(const char* name) {
  if (name == nullptr) return ReduceOp::kCount;
  for (size_t i = 0; i < kReduceNames.size(); ++i)
    if (std::strcmp(name, kReduceNames[i]) == 0) return static_cast<ReduceOp>(i);
  return ReduceOp::kCount;
}

bool reducedDims(const std::vector<int64_t>& axes, int64_t rank, bool noop_with_empty_axes, std::vector<bool>& reduced,
                 int64_t& bad_axis) {
  reduced.assign(static_cast<size_t>(rank), axes.empty() && !noop_with_empty_axes);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      bad_axis = a;
      return false;
    }
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  return true;
}

std::vector<int64_t> reducedShape(const std::vector<int64_t>& x_shape, const std::vector<bool>& reduced, bool keepdims) {
  std::vector<int64_t> y;
  for (size_t i = 0; i < x_shape.size(); ++i)
    if (!reduced[i]) y.push_back(x_shape[i]);
    else if (keepdims) y.push_back(1);
  return y;
}

void reduce(ReduceOp op, const std::vector<int64_t>& x_shape, const std::vector<bool>& reduced, const float* x, float* y,
            ThreadPool* pool) {
  if (static_cast<size_t>(op) >= kReduceNames.size()) fail(ErrorCode::kInvalidArgument, "reduce: unknown op {}", static_cast<int>(op));
  if (reduced.size() != x_shape.size()) fail(ErrorCode::kInvalidArgument, "reduce: {} axis flags for rank {}", reduced.size(), x_shape.size());
  for (int64_t d : x_shape)
    if (d < 0) fail(ErrorCode::kInvalidArgument, "reduce: negative dimension {}", d);
  const ReduceGeometry geo = reduceGeometry(x_shape, reduced);
  int64_t nout = 1;
  for (int64_t d : geo.kept_dims) nout *= d;
  parallelUnits(pool, nout, std::max<int64_t>(static_cast<int64_t>(geo.offsets.size()), 1), [&](int64_t b, int64_t e) {
    forEachReduceOutput(geo, b, e, [&](int64_t o, int64_t base) { y[o] = reduceFloating<float>(op, x, base, geo.offsets); });
  });
}

namespace {

/// One output of an integer reduction over p[base + off], off in `roff` (ascending).
template <typename T>
T reduceInteger(ReduceOp r, const T* p, int64_t base, const std::vector<int64_t>& roff) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (r) {
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      T acc = r == ReduceOp::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
      for (int64_t o : roff) {
        const T v = p[base + o];
        if (r == ReduceOp::kMax ? v > acc : v < acc) acc = v;
      }
      return acc;
    }
    case ReduceOp::kL2:
    case ReduceOp::kLogSum:
    case ReduceOp::kLogSumExp: {
      double m = -kInf;
      for (int64_t o : roff) m = std::max(m, static_cast<double>(p[base + o]));
      double acc = 0;
      for (int64_t o : roff) {
        const double v = static_cast<double>(p[base + o]);
        acc += r == ReduceOp::kL2 ? v * v : r == ReduceOp::kLogSum ? v : std::exp(v - m);
      }
      const double res = r == ReduceOp::kL2 ? std::sqrt(acc) : r == ReduceOp::kLogSum ? std::log(acc) : (roff.empty() ? -kInf : m + std::log(acc));
      return convertValue<T>(res);
    }
    default: break;
  }
  // wrapping integer arithmetic in uint64 (two's complement), converted back modulo 2^n
  uint64_t acc = r == ReduceOp::kProd ? 1 : 0;
  for (int64_t o : roff) {
    const T v = p[base + o];
    const auto u = static_cast<uint64_t>(v);  // sign-extends signed values modulo 2^64
    if (r == ReduceOp::kProd) acc *= u;
    else if (r == ReduceOp::kSumSquare) acc += u * u;
    else if (r == ReduceOp::kL1) {
      if constexpr (std::is_signed_v<T>) acc += v < 0 ? uint64_t{0} - u : u;
      else acc += u;
    } else acc += u;
  }
  if (r == ReduceOp::kMean) {
    if (roff.empty()) return T(0);
    if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<int64_t>(acc) / static_cast<int64_t>(roff.size()));
    else return static_cast<T>(acc / static_cast<uint64_t>(roff.size()));
  }
  return static_cast<T>(acc);
}

}  // namespace

void reduceTyped(ReduceOp op, DType t, const std::vector<int64_t>& x_shape, const std::vector<bool>& reduced,
                 const void* x, void* y) {
  if (static_cast<size_t>(op) >= kReduceNames.size()) fail(ErrorCode::kInvalidArgument, "reduce: unknown op {}", static_cast<int>(op));
  if (reduced.size() != x_shape.size()) fail(ErrorCode::kInvalidArgument, "reduce: {} axis flags for rank {}", reduced.size(), x_shape.size());
  if (t == DType::kBool) fail(ErrorCode::kInvalidArgument, "{} is not defined for bool", kReduceNames[static_cast<size_t>(op)]);
  const ReduceGeometry geo = reduceGeometry(x_shape, reduced);
  int64_t nout = 1;
  for (int64_t d : geo.kept_dims) nout *= d;
  const bool ok = detail::dispatch(t, [&]<typename T>() {
    const T* p = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    forEachReduceOutput(geo, 0, nout, [&](int64_t o, int64_t base) {
      if constexpr (std::is_floating_point_v<T>) out[o] = reduceFloating<T>(op, p, base, geo.offsets);
      else out[o] = reduceInteger<T>(op, p, base, geo.offsets);
    });
  });
  if (!ok) fail(ErrorCode::kInvalidArgument, "reduce: elements of type {} have no typed kernel", dtypeName(t));
}

// ---------------------------------------------------------------------------------------------------------
// Element-wise.

UnaryOp unaryOpFromName(const char* name) {
  if (name == nullptr) return UnaryOp::kCount;
  for (size_t i = 0; i < kUnaryNames.size(); ++i)
    if (std::strcmp(name, kUnaryNames[i]) == 0) return static_cast<UnaryOp>(i);
  return UnaryOp::kCount;
}

const char* unaryOpName(UnaryOp op) {
  const size_t i = static_cast<size_t>(op);
  return i < kUnaryNames.size() ? kUnaryNames[i] : "?";
}

UnaryAttrs unaryOpAttrs(UnaryOp op) {
  const size_t i = static_cast<size_t>(op);
  return i < kUnaryAttrs.size() ? kUnaryAttrs[i] : UnaryAttrs{"", ""};
}

float unaryScalar(UnaryOp op, float x, float alpha, float beta) {
  const size_t i = static_cast<size_t>(op);
  if (i >= kUnaryNames.size()) fail(ErrorCode::kInvalidArgument, "unary: unknown op {}", i);
  return kUnaryTables.first[i](x, alpha, beta);
}

void unary(UnaryOp op, float alpha, float beta, int64_t n, const float* x, float* y, ThreadPool* pool) {
  const size_t i = static_cast<size_t>(op);
  if (i >= kUnaryNames.size()) fail(ErrorCode::kInvalidArgument, "unary: unknown op {}", i);
  kUnaryTables.second[i](alpha, beta, n, x, y, pool);
}

BinaryOp binaryOpFromName(const char* name) {
  if (name == nullptr) return BinaryOp::kCount;
  for (size_t i = 0; i < kBinaryNames.size(); ++i)
    if (std::strcmp(name, kBinaryNames[i]) == 0) return static_cast<BinaryOp>(i);
  return BinaryOp::kCount;
}

const char* binaryOpName(BinaryOp op) {
  const size_t i = static_cast<size_t>(op);
  return i < kBinaryNames.size() ? kBinaryNames[i] : "?";
}

float binaryScalar(BinaryOp op, float a, float b) {
  const size_t i = static_cast<size_t>(op);
  if (i >= kBinaryNames.size()) fail(ErrorCode::kInvalidArgument, "binary: unknown op {}", i);
  return kBinaryTables.first[i](a, b);
}

void binary(BinaryOp op, const Activation& act, const std::vector<int64_t>& a_shape, const float* a,
            const std::vector<int64_t>& b_shape, const float* b, const std::vector<int64_t>& y_shape, float* y,
            ThreadPool* pool) {
  const size_t oi = static_cast<size_t>(op);
  if (oi >= kBinaryNames.size()) fail(ErrorCode::kInvalidArgument, "binary: unknown op {}", oi);
  const size_t r = y_shape.size();
  checkRank(r, "binary");
  if (a_shape.size() > r || b_shape.size() > r)
    fail(ErrorCode::kInvalidArgument, "binary: input ranks {} and {} exceed the output rank {}", a_shape.size(),
         b_shape.size(), r);
  const int64_t total = numel(y_shape);
  if (total <= 0) return;
  // Per output dim, the strides of a and b (0 where broadcast); then drop size-1 dims and merge neighbours
  // that both inputs walk contiguously (or both broadcast) into longer runs.
  std::array<int64_t, kMaxRank> sa{}, sb{};
  auto stridesOf = [&](const std::vector<int64_t>& s, std::array<int64_t, kMaxRank>& st, const char* which) {
    int64_t acc = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t d = s.size() - 1 - i, od = r - 1 - i;
      if (s[d] != y_shape[od] && s[d] != 1)
        fail(ErrorCode::kInvalidArgument, "binary: dim {} of {} is {}, output has {}", d, which, s[d], y_shape[od]);
      st[od] = s[d] == 1 ? 0 : acc;
      acc *= s[d];
    }
  };
  stridesOf(a_shape, sa, "a");
  stridesOf(b_shape, sb, "b");
  std::array<int64_t, kMaxRank> dims{}, ca{}, cb{};
  int q = 0;
  for (size_t d = 0; d < r; ++d) {
    if (y_shape[d] == 1) continue;
    if (q > 0 && ca[static_cast<size_t>(q) - 1] == sa[d] * y_shape[d] &&
        cb[static_cast<size_t>(q) - 1] == sb[d] * y_shape[d]) {
      dims[static_cast<size_t>(q) - 1] *= y_shape[d];
      ca[static_cast<size_t>(q) - 1] = sa[d];
      cb[static_cast<size_t>(q) - 1] = sb[d];
      continue;
    }
    dims[static_cast<size_t>(q)] = y_shape[d];
    ca[static_cast<size_t>(q)] = sa[d];
    cb[static_cast<size_t>(q)] = sb[d];
    ++q;
  }
  if (q == 0) {  // a single element
    dims[0] = 1;
    q = 1;
  }
  const int64_t inner = dims[static_cast<size_t>(q) - 1];
  const int64_t ia = ca[static_cast<size_t>(q) - 1], ib = cb[static_cast<size_t>(q) - 1];
  const BinaryRunFn run = kBinaryTables.second[oi];
  const int oq = q - 1;  // odometer over the outer dims
  const std::array<const int64_t*, 2> st{ca.data(), cb.data()};
  parallelUnits(pool, total, op == BinaryOp::kPow ? 8 : 1, [&](int64_t s, int64_t e) {
    Odometer od;
    od.seek(dims.data(), oq, s / inner);
    std::array<int64_t, 2> off = offsetsOf<2>(od, oq, st);
    int64_t i = s % inner;
    for (int64_t pos = s; pos < e;) {
      const int64_t len = std::min(inner - i, e - pos);
      run(a + off[0] + i * ia, ia, b + off[1] + i * ib, ib, y + pos, len, act);
      pos += len;
      i = 0;
      od.next<2>(dims.data(), oq, st, off);
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// Quantization (ONNX QuantizeLinear / DequantizeLinear, int8).

void quantizeLinear(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y, ThreadPool* pool) {
  const float zp = static_cast<float>(zero_point);
  parallelUnits(pool, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float q = std::nearbyint(x[i] / scale);  // the default rounding mode: half to even
      y[i] = static_cast<int8_t>(std::clamp((std::isnan(q) ? 0.0f : q) + zp, -128.0f, 127.0f));
    }
  });
}

void dequantizeLinear(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y, ThreadPool* pool) {
  parallelUnits(pool, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zero_point) * scale;
  });
}

}  // namespace npuc::kernels
