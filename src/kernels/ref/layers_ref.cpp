// Reference kernels of the non-MAC layers (kernels/layers.hpp): pooling, normalisation, softmax, element-wise
// unary and binary math, data movement. Each output element is computed by one thread in a fixed order, so the
// results are bit-identical for every thread count; the formulas are those the reference engine has always
// used (its ONNX conformance suite checks them).
#include "kernels/expf.hpp"
#include "kernels/layer_templates.hpp"
#include "kernels/layers.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/ref/pool_geom.hpp"
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
using detail::paddedTaps;
using detail::parallelUnits;
using detail::tapRange;

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

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

inline double sigmoidD(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
inline double softplusD(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }

/// The specification of every unary op. Ops computed in double round once to float at the end.
template <UnaryOp Op>
inline float unaryT(float x, float alpha, float beta) {
  const double xd = static_cast<double>(x);
  if constexpr (Op == UnaryOp::kRelu) return x < 0.0f ? 0.0f : x;
  else if constexpr (Op == UnaryOp::kLeakyRelu) return x < 0 ? static_cast<float>(static_cast<double>(alpha) * xd) : x;
  else if constexpr (Op == UnaryOp::kClip) return x < alpha ? alpha : (x > beta ? beta : x);
  else if constexpr (Op == UnaryOp::kSigmoid) return static_cast<float>(sigmoidD(xd));
  else if constexpr (Op == UnaryOp::kTanh) return static_cast<float>(std::tanh(xd));
  else if constexpr (Op == UnaryOp::kHardSigmoid)
    return static_cast<float>(std::clamp(static_cast<double>(alpha) * xd + static_cast<double>(beta), 0.0, 1.0));
  else if constexpr (Op == UnaryOp::kHardSwish) return static_cast<float>(xd * std::clamp(xd / 6.0 + 0.5, 0.0, 1.0));
  // Swish and Mish are the fused forms of the ONNX op chains x * Sigmoid(x) and x * Tanh(Softplus(x)): each
  // op of the chain rounds to float.
  else if constexpr (Op == UnaryOp::kSwish) return x * static_cast<float>(sigmoidD(xd));
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

// ---------------------------------------------------------------------------------------------------------
// Data movement helpers.

/// Copies `n` elements of `es` bytes from src (element stride `ss`, in elements) to contiguous dst.
void gatherRun(const uint8_t* src, int64_t ss, uint8_t* dst, int64_t n, size_t es) {
  if (ss == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  const int64_t step = ss * static_cast<int64_t>(es);
  auto typed = [&]<class T>() {
    T* d = reinterpret_cast<T*>(dst);
    for (int64_t i = 0; i < n; ++i) std::memcpy(d + i, src + i * step, sizeof(T));
  };
  switch (es) {
    case 1: typed.template operator()<uint8_t>(); break;
    case 2: typed.template operator()<uint16_t>(); break;
    case 4: typed.template operator()<uint32_t>(); break;
    case 8: typed.template operator()<uint64_t>(); break;
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * static_cast<int64_t>(es), src + i * step, es);
  }
}

/// Writes `n` copies of the `es`-byte value to dst.
void fillRun(uint8_t* dst, int64_t n, const uint8_t* value, size_t es) {
  if (n <= 0) return;
  bool uniform = true;
  for (size_t i = 1; i < es; ++i) uniform = uniform && value[i] == value[0];
  const size_t total = static_cast<size_t>(n) * es;
  if (uniform) {
    std::memset(dst, value[0], total);
    return;
  }
  std::memcpy(dst, value, es);
  for (size_t done = es; done < total;) {
    const size_t c = std::min(done, total - done);
    std::memcpy(dst + done, dst, c);
    done += c;
  }
}

/// Multi-index odometer over the leading `rank` dims of `dims`.
struct Odometer {
  std::array<int64_t, kMaxRank> idx{};
  /// Sets the index to the row-major position `pos` of dims[0..rank).
  void seek(const int64_t* dims, int rank, int64_t pos) {
    for (int d = rank - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = pos % dims[d];
      pos /= dims[d];
    }
  }
  /// Advances by one; adds strides[d] to `off` for the dims that move (each stride array per operand).
  template <size_t K>
  void next(const int64_t* dims, int rank, const std::array<const int64_t*, K>& strides, std::array<int64_t, K>& off) {
    for (int d = rank - 1; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      ++idx[u];
      for (size_t k = 0; k < K; ++k) off[k] += strides[k][d];
      if (idx[u] < dims[d]) return;
      for (size_t k = 0; k < K; ++k) off[k] -= strides[k][d] * dims[d];
      idx[u] = 0;
    }
  }
};

template <size_t K>
std::array<int64_t, K> offsetsOf(const Odometer& od, int rank, const std::array<const int64_t*, K>& strides) {
  std::array<int64_t, K> off{};
  for (int d = 0; d < rank; ++d)
    for (size_t k = 0; k < K; ++k) off[k] += od.idx[static_cast<size_t>(d)] * strides[k][d];
  return off;
}

void checkRank(size_t r, const char* what) {
  if (r > static_cast<size_t>(kMaxRank)) fail(ErrorCode::kInvalidArgument, "{}: rank {} exceeds {}", what, r, kMaxRank);
}

/// Tiled transpose for element types of 1, 2, 4 or 8 bytes: the collapsed output dims `dims` (contiguous output)
/// read from source strides `sst`; dim j has source stride 1 and the last dim does not.
template <class T>
void transposeTiled(const T* x, T* y, const std::vector<int64_t>& dims, const std::vector<int64_t>& sst, size_t j,
                    ThreadPool* pool) {
  constexpr int64_t kTile = 16;
  const int q = static_cast<int>(dims.size());
  const size_t last = dims.size() - 1;
  std::vector<int64_t> ost(dims.size(), 1);
  for (int d = q - 2; d >= 0; --d) ost[static_cast<size_t>(d)] = ost[static_cast<size_t>(d) + 1] * dims[static_cast<size_t>(d) + 1];
  // Outer dims: all but j and last.
  std::vector<int64_t> odims, ost_o, sst_o;
  for (size_t d = 0; d < last; ++d)
    if (d != j) {
      odims.push_back(dims[d]);
      ost_o.push_back(ost[d]);
      sst_o.push_back(sst[d]);
    }
  const int oq = static_cast<int>(odims.size());
  int64_t outer = 1;
  for (int64_t d : odims) outer *= d;
  const int64_t J = dims[j], L = dims[last], jo = ost[j], ls = sst[last];
  const int64_t jtiles = (J + kTile - 1) / kTile;
  const std::array<const int64_t*, 2> st{ost_o.data(), sst_o.data()};
  parallelUnits(pool, outer * jtiles, kTile * L, [&](int64_t b, int64_t e) {
    Odometer od;
    od.seek(odims.data(), oq, b / jtiles);
    std::array<int64_t, 2> off = offsetsOf<2>(od, oq, st);
    int64_t cur = b / jtiles;
    for (int64_t u = b; u < e; ++u) {
      const int64_t o = u / jtiles, jt = u % jtiles;
      while (cur < o) {
        od.next<2>(odims.data(), oq, st, off);
        ++cur;
      }
      const int64_t j0 = jt * kTile, j1 = std::min(J, j0 + kTile);
      for (int64_t l0 = 0; l0 < L; l0 += kTile) {
        const int64_t l1 = std::min(L, l0 + kTile);
        if (j1 - j0 == kTile && l1 - l0 == kTile) {  // full tile: constant trip counts
          for (int64_t jj = 0; jj < kTile; ++jj) {
            T* dst = y + off[0] + (j0 + jj) * jo + l0;
            const T* src = x + off[1] + j0 + jj + l0 * ls;
            for (int64_t ll = 0; ll < kTile; ++ll) dst[ll] = src[ll * ls];
          }
          continue;
        }
        for (int64_t jj = j0; jj < j1; ++jj) {
          T* dst = y + off[0] + jj * jo;
          const T* src = x + off[1] + jj;
          for (int64_t ll = l0; ll < l1; ++ll) dst[ll] = src[ll * ls];
        }
      }
    }
  });
}

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
// Resize.

bool resizeCoordFromName(const std::string& name, ResizeCoord* c) {
  static const std::pair<const char*, ResizeCoord> k[] = {
      {"half_pixel", ResizeCoord::kHalfPixel},        {"asymmetric", ResizeCoord::kAsymmetric},
      {"pytorch_half_pixel", ResizeCoord::kPytorchHalfPixel}, {"align_corners", ResizeCoord::kAlignCorners},
      {"tf_half_pixel_for_nn", ResizeCoord::kTfHalfPixelForNn}, {"half_pixel_symmetric", ResizeCoord::kHalfPixelSymmetric},
      {"tf_crop_and_resize", ResizeCoord::kTfCropAndResize}};
  for (auto& [n, v] : k)
    if (name == n) return *c = v, true;
  return false;
}

bool resizeNearestFromName(const std::string& name, ResizeNearest* n) {
  static const std::pair<const char*, ResizeNearest> k[] = {{"round_prefer_floor", ResizeNearest::kRoundPreferFloor},
                                                            {"round_prefer_ceil", ResizeNearest::kRoundPreferCeil},
                                                            {"floor", ResizeNearest::kFloor},
                                                            {"ceil", ResizeNearest::kCeil}};
  for (auto& [m, v] : k)
    if (name == m) return *n = v, true;
  return false;
}

namespace {

int64_t nearestIndex(const ResizeSpec& p, double x, bool downsampling) {
  if (p.legacy) return static_cast<int64_t>(downsampling ? std::ceil(x) : std::floor(x));
  double fl = std::floor(x);
  if (x == fl) return static_cast<int64_t>(fl);
  double frac = x - fl;
  switch (p.nearest) {
    case ResizeNearest::kFloor: return static_cast<int64_t>(fl);
    case ResizeNearest::kCeil: return static_cast<int64_t>(fl) + 1;
    case ResizeNearest::kRoundPreferFloor: return static_cast<int64_t>(fl) + (frac > 0.5 ? 1 : 0);
    case ResizeNearest::kRoundPreferCeil: return static_cast<int64_t>(fl) + (frac >= 0.5 ? 1 : 0);
  }
  return static_cast<int64_t>(fl);
}

void cubicCoeffs(double r, double a, double* w) {
  double t0 = r + 1, t1 = r, t2 = 1 - r, t3 = 2 - r;
  w[0] = ((a * t0 - 5 * a) * t0 + 8 * a) * t0 - 4 * a;
  w[1] = ((a + 2) * t1 - (a + 3)) * t1 * t1 + 1;
  w[2] = ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1;
  w[3] = ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a;
}

ResizeTaps axisTaps(const ResizeSpec& p, int64_t in, int64_t out, double scale, double roi_s, double roi_e) {
  ResizeTaps t;
  t.k = p.interp == ResizeInterp::kNearest ? 1 : p.interp == ResizeInterp::kLinear ? 2 : 4;
  size_t k = static_cast<size_t>(t.k);
  t.idx.assign(static_cast<size_t>(out) * k, 0);
  t.w.assign(static_cast<size_t>(out) * k, 0.0);
  t.outside.assign(static_cast<size_t>(out), 0);
  if (out == 0) return t;
  if (in == 0) fail(ErrorCode::kInvalidArgument, "cannot resize an empty axis to size {}", out);
  double in_f = static_cast<double>(in);
  double out_f = scale * in_f;  // the ONNX reference's "output width" (not rounded)
  for (int64_t o = 0; o < out; ++o) {
    double xo = static_cast<double>(o), x = 0;
    if (p.legacy || p.coord == ResizeCoord::kAsymmetric) x = xo / scale;
    else if (p.coord == ResizeCoord::kHalfPixel) x = (xo + 0.5) / scale - 0.5;
    else if (p.coord == ResizeCoord::kPytorchHalfPixel) x = out_f > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
    else if (p.coord == ResizeCoord::kAlignCorners) x = out_f == 1 ? 0.0 : xo * (in_f - 1) / (out_f - 1);
    else if (p.coord == ResizeCoord::kTfHalfPixelForNn) x = (xo + 0.5) / scale;
    else if (p.coord == ResizeCoord::kHalfPixelSymmetric) {
      double adj = static_cast<double>(out) / out_f;
      x = in_f / 2 * (1 - adj) + (xo + 0.5) / scale - 0.5;
    } else {  // tf_crop_and_resize
      x = out_f > 1 ? roi_s * (in_f - 1) + xo * (roi_e - roi_s) * (in_f - 1) / (out_f - 1) : 0.5 * (roi_s + roi_e) * (in_f - 1);
      if (x < 0 || x > in_f - 1) {
        t.outside[static_cast<size_t>(o)] = 1;
        continue;
      }
    }
    if (!std::isfinite(x)) fail(ErrorCode::kInvalidArgument, "non-finite source coordinate (scale {})", scale);
    int64_t* ti = &t.idx[static_cast<size_t>(o) * k];
    double* tw = &t.w[static_cast<size_t>(o) * k];
    auto clampIdx = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    if (p.interp == ResizeInterp::kNearest) {
      x = std::clamp(x, -1.0, in_f);  // keeps the integer conversion defined; the index is clamped below
      ti[0] = clampIdx(nearestIndex(p, x, scale < 1.0));
      tw[0] = 1.0;
    } else if (p.interp == ResizeInterp::kLinear) {
      x = std::clamp(x, 0.0, in_f - 1);
      double fl = std::floor(x);
      double r = x - fl;
      int64_t i0 = static_cast<int64_t>(fl);
      ti[0] = clampIdx(i0);
      ti[1] = clampIdx(i0 + 1);
      tw[0] = 1 - r;
      tw[1] = r;
    } else {
      x = std::clamp(x, -4.0, in_f + 3.0);  // beyond this every tap reads the edge anyway
      double fl = std::floor(x);
      double r = x - fl;
      int64_t i0 = static_cast<int64_t>(fl);
      cubicCoeffs(r, p.cubic_a, tw);
      double sum = 0;
      for (size_t j = 0; j < 4; ++j) {
        int64_t i = i0 - 1 + static_cast<int64_t>(j);
        if (p.exclude_outside && (i < 0 || i >= in)) tw[j] = 0;
        sum += tw[j];
        ti[j] = clampIdx(i);
      }
      if (p.exclude_outside && sum != 0)
        for (size_t j = 0; j < 4; ++j) tw[j] /= sum;
    }
  }
  // An axis on which every output reads exactly one input with weight 1 needs one tap.
  if (t.k > 1) {
    bool single = true;
    std::vector<int64_t> one(static_cast<size_t>(out), 0);
    for (int64_t o = 0; o < out && single; ++o) {
      if (t.outside[static_cast<size_t>(o)]) continue;
      int nonzero = 0;
      for (size_t j = 0; j < k; ++j) {
        double w = t.w[static_cast<size_t>(o) * k + j];
        if (w != 0) {
          ++nonzero;
          single &= w == 1.0;
          one[static_cast<size_t>(o)] = t.idx[static_cast<size_t>(o) * k + j];
        }
      }
      single &= nonzero == 1;
    }
    if (single) {
      t.k = 1;
      t.idx = one;
      t.w.assign(static_cast<size_t>(out), 1.0);
    }
  }
  return t;
}

}  // namespace

std::vector<ResizeTaps> resizeTaps(const ResizeSpec& s, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape) {
  const size_t r = x_shape.size();
  if (y_shape.size() != r || s.scale.size() != r || s.roi_start.size() != r || s.roi_end.size() != r)
    fail(ErrorCode::kInvalidArgument, "resize: rank {} -> {} with {} scales", r, y_shape.size(), s.scale.size());
  std::vector<ResizeTaps> taps;
  for (size_t a = 0; a < r; ++a) {
    int64_t in = x_shape[a], out = y_shape[a];
    if (in < 0 || out < 0) fail(ErrorCode::kInvalidArgument, "resize: negative dimension");
    if (in == out && s.scale[a] == 1.0 && s.coord != ResizeCoord::kTfCropAndResize) {
      ResizeTaps t;  // identity axis
      t.idx.resize(static_cast<size_t>(out));
      std::iota(t.idx.begin(), t.idx.end(), int64_t{0});
      t.w.assign(static_cast<size_t>(out), 1.0);
      t.outside.assign(static_cast<size_t>(out), 0);
      taps.push_back(std::move(t));
    } else {
      taps.push_back(axisTaps(s, in, out, s.scale[a], s.roi_start[a], s.roi_end[a]));
    }
  }
  return taps;
}

void resize(const ResizeSpec& s, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape, const float* x,
            float* y, ThreadPool* pool) {
  const std::vector<ResizeTaps> taps = resizeTaps(s, x_shape, y_shape);
  int64_t total = 1;
  for (int64_t d : y_shape) total *= d;
  if (total == 0) return;
  int64_t work = 1;
  for (const ResizeTaps& t : taps) work *= t.k;
  parallelUnits(pool, total, work, [&](int64_t b, int64_t e) {
    resizeRange<float>(taps, x_shape, y_shape, x, y, static_cast<float>(s.extrapolation),
                       [](double acc) { return static_cast<float>(acc); }, b, e);
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
// Data movement.

void concat(int axis, const std::vector<std::vector<int64_t>>& in_shapes, const std::vector<const void*>& inputs,
            size_t elem_size, void* y, ThreadPool* pool) {
  if (in_shapes.empty() || in_shapes.size() != inputs.size())
    fail(ErrorCode::kInvalidArgument, "concat: {} shapes for {} inputs", in_shapes.size(), inputs.size());
  const std::vector<int64_t>& s0 = in_shapes[0];
  const int rank = static_cast<int>(s0.size());
  if (axis < 0 || axis >= rank) fail(ErrorCode::kInvalidArgument, "concat: axis {} out of range for rank {}", axis, rank);
  const size_t ua = static_cast<size_t>(axis);
  int64_t outer = 1, inner = 1, ya = 0;
  for (size_t d = 0; d < ua; ++d) outer *= s0[d];
  for (size_t d = ua + 1; d < s0.size(); ++d) inner *= s0[d];
  const size_t k = in_shapes.size();
  std::vector<int64_t> at(k);
  for (size_t i = 0; i < k; ++i) {
    const auto& s = in_shapes[i];
    bool ok = s.size() == s0.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = d == ua || s[d] == s0[d];
    if (!ok) fail(ErrorCode::kInvalidArgument, "concat: input {} does not match input 0 off axis {}", i, axis);
    at[i] = ya;
    ya += s[ua];
  }
  if (outer == 0 || inner == 0 || ya == 0) return;
  const int64_t es = static_cast<int64_t>(elem_size);
  uint8_t* dst = static_cast<uint8_t*>(y);
  const int64_t units = outer * static_cast<int64_t>(k);
  // A unit is one input's slab within one outer index.
  parallelUnits(pool, units, ya * inner * es / static_cast<int64_t>(k) / 8 + 1, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t o = u / static_cast<int64_t>(k);
      const size_t i = static_cast<size_t>(u % static_cast<int64_t>(k));
      const int64_t chunk = in_shapes[i][ua] * inner * es;
      if (chunk == 0) continue;
      std::memcpy(dst + (o * ya + at[i]) * inner * es, static_cast<const uint8_t*>(inputs[i]) + o * chunk,
                  static_cast<size_t>(chunk));
    }
  });
}

void transpose(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& perm, size_t elem_size,
               const void* x, void* y, ThreadPool* pool) {
  const size_t r = x_shape.size();
  checkRank(r, "transpose");
  if (perm.size() != r) fail(ErrorCode::kInvalidArgument, "transpose: perm has {} entries for rank {}", perm.size(), r);
  std::array<bool, kMaxRank> seen{};
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)])
      fail(ErrorCode::kInvalidArgument, "transpose: perm is not a permutation of 0..{}", r - 1);
    seen[static_cast<size_t>(p)] = true;
  }
  const int64_t total = numel(x_shape);
  if (total <= 0) return;
  std::vector<int64_t> ist(r, 1);
  for (size_t d = r; d-- > 1;) ist[d - 1] = ist[d] * x_shape[d];
  // Collapse: drop size-1 dims, merge output-adjacent dims that are also adjacent in the input.
  std::vector<int64_t> dims, sst;
  for (size_t d = 0; d < r; ++d) {
    const size_t p = static_cast<size_t>(perm[d]);
    const int64_t n = x_shape[p], s = ist[p];
    if (n == 1) continue;
    if (!dims.empty() && sst.back() == s * n) {
      dims.back() *= n;
      sst.back() = s;
    } else {
      dims.push_back(n);
      sst.push_back(s);
    }
  }
  const uint8_t* src = static_cast<const uint8_t*>(x);
  uint8_t* dst = static_cast<uint8_t*>(y);
  const int64_t es = static_cast<int64_t>(elem_size);
  if (dims.size() <= 1) {  // the identity permutation up to size-1 dims
    std::memcpy(dst, src, static_cast<size_t>(total * es));
    return;
  }
  const size_t last = dims.size() - 1;
  if (sst[last] != 1 && (es == 1 || es == 2 || es == 4 || es == 8)) {
    size_t j = 0;
    while (j < last && sst[j] != 1) ++j;
    if (j < last) {
      switch (es) {
        case 1: transposeTiled(src, dst, dims, sst, j, pool); break;
        case 2:
          transposeTiled(static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), dims, sst, j, pool);
          break;
        case 4:
          transposeTiled(static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), dims, sst, j, pool);
          break;
        default:
          transposeTiled(static_cast<const uint64_t*>(x), static_cast<uint64_t*>(y), dims, sst, j, pool);
          break;
      }
      return;
    }
  }
  // Rows along the last output dim: memcpy when the source row is contiguous, else a strided gather.
  const int oq = static_cast<int>(last);
  const int64_t L = dims[last], ls = sst[last];
  const int64_t rows = total / L;
  const std::array<const int64_t*, 1> st{sst.data()};
  parallelUnits(pool, rows, L * es / 4 + 1, [&](int64_t b, int64_t e) {
    Odometer od;
    od.seek(dims.data(), oq, b);
    std::array<int64_t, 1> off = offsetsOf<1>(od, oq, st);
    for (int64_t row = b; row < e; ++row) {
      gatherRun(src + off[0] * es, ls, dst + row * L * es, L, elem_size);
      od.next<1>(dims.data(), oq, st, off);
    }
  });
}

void padConstant(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& pads_begin,
                 const std::vector<int64_t>& pads_end, const void* value, size_t elem_size, const void* x, void* y,
                 ThreadPool* pool) {
  const size_t r = x_shape.size();
  checkRank(r, "padConstant");
  if (pads_begin.size() != r || pads_end.size() != r)
    fail(ErrorCode::kInvalidArgument, "padConstant: pads have {} and {} entries for rank {}", pads_begin.size(),
         pads_end.size(), r);
  for (size_t d = 0; d < r; ++d)
    if (pads_begin[d] < 0 || pads_end[d] < 0)
      fail(ErrorCode::kInvalidArgument, "padConstant: negative pad on axis {}", d);
  const uint8_t* src = static_cast<const uint8_t*>(x);
  uint8_t* dst = static_cast<uint8_t*>(y);
  const uint8_t* val = static_cast<const uint8_t*>(value);
  const int64_t es = static_cast<int64_t>(elem_size);
  if (r == 0) {
    std::memcpy(dst, src, elem_size);
    return;
  }
  std::vector<int64_t> ydims(r), xst(r, 1);
  for (size_t d = 0; d < r; ++d) ydims[d] = x_shape[d] + pads_begin[d] + pads_end[d];
  for (size_t d = r; d-- > 1;) xst[d - 1] = xst[d] * x_shape[d];
  const int64_t ytotal = numel(ydims);
  if (ytotal <= 0) return;
  const size_t last = r - 1;
  const int64_t L = ydims[last], XL = x_shape[last], pb = pads_begin[last];
  const int64_t rows = ytotal / L;
  const int oq = static_cast<int>(last);
  const bool x_empty = numel(x_shape) == 0;
  parallelUnits(pool, rows, L * es / 4 + 1, [&](int64_t b, int64_t e) {
    Odometer od;
    od.seek(ydims.data(), oq, b);
    for (int64_t row = b; row < e; ++row) {
      uint8_t* yr = dst + row * L * es;
      // The source row, unless this output row lies in the padding of an outer dim.
      bool inside = !x_empty;
      int64_t xoff = 0;
      for (int d = 0; d < oq && inside; ++d) {
        const size_t u = static_cast<size_t>(d);
        const int64_t i = od.idx[u] - pads_begin[u];
        inside = i >= 0 && i < x_shape[u];
        xoff += i * xst[u];
      }
      if (!inside) {
        fillRun(yr, L, val, elem_size);
      } else {
        fillRun(yr, pb, val, elem_size);
        std::memcpy(yr + pb * es, src + xoff * es, static_cast<size_t>(XL * es));
        fillRun(yr + (pb + XL) * es, L - pb - XL, val, elem_size);
      }
      for (int d = oq - 1; d >= 0; --d) {
        const size_t u = static_cast<size_t>(d);
        if (++od.idx[u] < ydims[u]) break;
        od.idx[u] = 0;
      }
    }
  });
}

void slice(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
           const std::vector<int64_t>& y_shape, size_t elem_size, const void* x, void* y, ThreadPool* pool) {
  const size_t r = x_shape.size();
  checkRank(r, "slice");
  if (starts.size() != r || steps.size() != r || y_shape.size() != r)
    fail(ErrorCode::kInvalidArgument, "slice: starts/steps/output have {}/{}/{} entries for rank {}", starts.size(),
         steps.size(), y_shape.size(), r);
  const int64_t total = numel(y_shape);
  if (total <= 0) return;
  const int64_t es = static_cast<int64_t>(elem_size);
  const uint8_t* src = static_cast<const uint8_t*>(x);
  uint8_t* dst = static_cast<uint8_t*>(y);
  if (r == 0) {
    std::memcpy(dst, src, elem_size);
    return;
  }
  std::vector<int64_t> xst(r, 1), sst(r);
  for (size_t d = r; d-- > 1;) xst[d - 1] = xst[d] * x_shape[d];
  int64_t base = 0;
  for (size_t d = 0; d < r; ++d) {
    const int64_t last_i = starts[d] + (y_shape[d] - 1) * steps[d];
    if (steps[d] == 0 || starts[d] < 0 || starts[d] >= x_shape[d] || last_i < 0 || last_i >= x_shape[d])
      fail(ErrorCode::kInvalidArgument, "slice: axis {} reads outside [0, {})", d, x_shape[d]);
    base += starts[d] * xst[d];
    sst[d] = steps[d] * xst[d];
  }
  const size_t last = r - 1;
  const int64_t L = y_shape[last], ls = steps[last];
  const int64_t rows = total / L;
  const int oq = static_cast<int>(last);
  const std::array<const int64_t*, 1> st{sst.data()};
  parallelUnits(pool, rows, L * es / 4 + 1, [&](int64_t b, int64_t e) {
    Odometer od;
    od.seek(y_shape.data(), oq, b);
    std::array<int64_t, 1> off = offsetsOf<1>(od, oq, st);
    for (int64_t row = b; row < e; ++row) {
      gatherRun(src + (base + off[0]) * es, ls, dst + row * L * es, L, elem_size);
      od.next<1>(y_shape.data(), oq, st, off);
    }
  });
}

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

void tile(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape, size_t elem_size, const void* x,
          void* y, ThreadPool* pool) {
  const size_t r = y_shape.size();
  if (x_shape.size() != r) fail(ErrorCode::kInvalidArgument, "tile: ranks {} and {} differ", x_shape.size(), r);
  for (size_t d = 0; d < r; ++d)
    if (x_shape[d] < 0 || y_shape[d] < 0 || (x_shape[d] ? y_shape[d] % x_shape[d] != 0 : y_shape[d] != 0))
      fail(ErrorCode::kInvalidArgument, "tile: dim {} of {} is not a multiple of {}", d, y_shape[d], x_shape[d]);
  const int64_t total = numel(y_shape);
  if (total <= 0) return;
  const uint8_t* src = static_cast<const uint8_t*>(x);
  uint8_t* dst = static_cast<uint8_t*>(y);
  if (r == 0) {
    std::memcpy(dst, src, elem_size);
    return;
  }
  const std::vector<int64_t> xst = [&] {
    std::vector<int64_t> st(r, 1);
    for (size_t d = r; d-- > 1;) st[d - 1] = st[d] * x_shape[d];
    return st;
  }();
  const int64_t L = y_shape[r - 1], xl = x_shape[r - 1], rows = total / L;
  const size_t es = elem_size;
  parallelUnits(pool, rows, L, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t rem = row, off = 0;  // x's row: each of y's outer indices modulo x's dim
      for (size_t d = r - 1; d-- > 0;) {
        const int64_t i = rem % y_shape[d];
        rem /= y_shape[d];
        off += (i % x_shape[d]) * xst[d];
      }
      const uint8_t* xr = src + static_cast<size_t>(off) * es;
      uint8_t* yr = dst + static_cast<size_t>(row * L) * es;
      for (int64_t j = 0; j < L; j += xl) std::memcpy(yr + static_cast<size_t>(j) * es, xr, static_cast<size_t>(xl) * es);
    }
  });
}

void where(const std::vector<int64_t>& cond_shape, const uint8_t* cond, const std::vector<int64_t>& a_shape,
           const void* a, const std::vector<int64_t>& b_shape, const void* b, const std::vector<int64_t>& y_shape,
           size_t elem_size, void* y, ThreadPool* pool) {
  const size_t r = y_shape.size();
  checkRank(r, "where");
  const std::vector<int64_t>* shapes[3] = {&cond_shape, &a_shape, &b_shape};
  std::array<std::array<int64_t, kMaxRank>, 3> st{};  // element strides per output dim (0: broadcast)
  for (int k = 0; k < 3; ++k) {
    const std::vector<int64_t>& s = *shapes[k];
    if (s.size() > r) fail(ErrorCode::kInvalidArgument, "where: input {} has rank {} above the output's {}", k, s.size(), r);
    int64_t acc = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t d = s.size() - 1 - i, od = r - 1 - i;
      if (s[d] != y_shape[od] && s[d] != 1)
        fail(ErrorCode::kInvalidArgument, "where: dim {} of input {} is {}, the output has {}", d, k, s[d], y_shape[od]);
      st[static_cast<size_t>(k)][od] = s[d] == 1 ? 0 : acc;
      acc *= s[d];
    }
  }
  const int64_t total = numel(y_shape);
  if (total <= 0) return;
  const int64_t L = r ? y_shape[r - 1] : 1, rows = total / L;
  const uint8_t* pa = static_cast<const uint8_t*>(a);
  const uint8_t* pb = static_cast<const uint8_t*>(b);
  uint8_t* py = static_cast<uint8_t*>(y);
  const size_t es = elem_size;
  parallelUnits(pool, rows, L, [&](int64_t b0, int64_t e0) {
    for (int64_t row = b0; row < e0; ++row) {
      std::array<int64_t, 3> off{};
      int64_t rem = row;
      for (size_t d = r > 0 ? r - 1 : 0; d-- > 0;) {
        const int64_t i = rem % y_shape[d];
        rem /= y_shape[d];
        for (size_t k = 0; k < 3; ++k) off[k] += i * st[k][d];
      }
      const int64_t sc = r ? st[0][r - 1] : 0, sa = r ? st[1][r - 1] : 0, sb = r ? st[2][r - 1] : 0;
      for (int64_t j = 0; j < L; ++j) {
        const bool take_a = cond[off[0] + j * sc] != 0;
        const uint8_t* src = take_a ? pa + static_cast<size_t>(off[1] + j * sa) * es : pb + static_cast<size_t>(off[2] + j * sb) * es;
        std::memcpy(py + static_cast<size_t>(row * L + j) * es, src, es);
      }
    }
  });
}

void gather(int64_t outer, int64_t axis_len, int64_t inner, const std::vector<int64_t>& idx, size_t elem_size,
            const void* x, void* y, ThreadPool* pool) {
  std::vector<int64_t> at(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) {
    const int64_t v = idx[j];
    if (v < -axis_len || v >= axis_len)
      fail(ErrorCode::kInvalidArgument, "gather: index {} (position {}) is out of range for an axis of size {}", v, j,
           axis_len);
    at[j] = v < 0 ? v + axis_len : v;
  }
  const size_t chunk = static_cast<size_t>(inner) * elem_size;
  const int64_t ni = static_cast<int64_t>(at.size());
  if (chunk == 0 || outer <= 0 || ni == 0) return;
  const uint8_t* src = static_cast<const uint8_t*>(x);
  uint8_t* dst = static_cast<uint8_t*>(y);
  detail::parallelUnits(pool, outer * ni, inner, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t o = u / ni, j = u % ni;
      std::memcpy(dst + static_cast<size_t>(u) * chunk, src + static_cast<size_t>(o * axis_len + at[static_cast<size_t>(j)]) * chunk,
                  chunk);
    }
  });
}

}  // namespace npuc::kernels
