// The arithmetic of the reduce and resize layer kernels as templates over the element type: kernels::reduce and
// kernels::resize instantiate them for float (what packages run), the reference engine for the other element types
// of those ONNX ops (float64, integers) — one definition of the order and precision of every sum.
#pragma once

#include "kernels/layers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace npuc::kernels {

/// The geometry of a reduction over the dims of x whose flag is set: the kept dims and their strides in x, and the
/// offsets of one output's reduced elements, ascending (the order every sum runs in).
struct ReduceGeometry {
  std::vector<int64_t> kept_dims, kept_strides, offsets;
};
inline ReduceGeometry reduceGeometry(const std::vector<int64_t>& x_shape, const std::vector<bool>& reduced) {
  const size_t rank = x_shape.size();
  std::vector<int64_t> stride(rank, 1);
  for (size_t i = rank; i-- > 1;) stride[i - 1] = stride[i] * x_shape[i];
  ReduceGeometry g;
  std::vector<int64_t> red_dims, red_st;
  for (size_t d = 0; d < rank; ++d) {
    (reduced[d] ? red_dims : g.kept_dims).push_back(x_shape[d]);
    (reduced[d] ? red_st : g.kept_strides).push_back(stride[d]);
  }
  int64_t nred = 1;
  for (int64_t d : red_dims) nred *= d;
  g.offsets.reserve(static_cast<size_t>(nred));
  std::vector<int64_t> idx(red_dims.size(), 0);
  for (int64_t i = 0; i < nred; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < red_dims.size(); ++d) off += idx[d] * red_st[d];
    g.offsets.push_back(off);
    for (size_t d = red_dims.size(); d-- > 0;) {
      if (++idx[d] < red_dims[d]) break;
      idx[d] = 0;
    }
  }
  return g;
}

/// Calls f(o, base) for the outputs o in [b, e) of a reduction, in order; base is the offset in x of output o's
/// first reduced element (its kept coordinates times their strides).
template <typename F>
void forEachReduceOutput(const ReduceGeometry& g, int64_t b, int64_t e, F&& f) {
  if (b >= e) return;
  const std::vector<int64_t>&dims = g.kept_dims, &st = g.kept_strides;
  std::vector<int64_t> k(dims.size(), 0);
  int64_t rest = b;  // the first output's coordinates; then counted up
  for (size_t d = dims.size(); d-- > 0;) {
    k[d] = rest % dims[d];
    rest /= dims[d];
  }
  for (int64_t o = b; o < e; ++o) {
    int64_t base = 0;
    for (size_t d = 0; d < dims.size(); ++d) base += k[d] * st[d];
    f(o, base);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++k[d] < dims[d]) break;
      k[d] = 0;
    }
  }
}

/// One output element of a floating-point reduction: p[base + off] for off in roff (ascending), as
/// kernels::reduce specifies (T = float or double).
template <typename T>
T reduceFloating(ReduceOp r, const T* p, int64_t base, const std::vector<int64_t>& roff) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (r) {
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      T acc = r == ReduceOp::kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
      for (int64_t o : roff) {
        T v = p[base + o];
        if (std::isnan(v)) return v;
        if (r == ReduceOp::kMax ? v > acc : v < acc) acc = v;
      }
      return acc;
    }
    case ReduceOp::kLogSumExp: {
      double m = -kInf;
      for (int64_t o : roff) {
        double v = static_cast<double>(p[base + o]);
        if (std::isnan(v)) return static_cast<T>(v);
        m = std::max(m, v);
      }
      if (std::isinf(m)) return static_cast<T>(m);
      double sum = 0;
      for (int64_t o : roff) sum += std::exp(static_cast<double>(p[base + o]) - m);
      return static_cast<T>(m + std::log(sum));
    }
    case ReduceOp::kProd: {
      double acc = 1;
      for (int64_t o : roff) acc *= static_cast<double>(p[base + o]);
      return static_cast<T>(acc);
    }
    default: break;
  }
  double acc = 0;
  for (int64_t o : roff) {
    double v = static_cast<double>(p[base + o]);
    if (r == ReduceOp::kL1) acc += std::fabs(v);
    else if (r == ReduceOp::kL2 || r == ReduceOp::kSumSquare) acc += v * v;
    else acc += v;
  }
  if (r == ReduceOp::kL2) acc = std::sqrt(acc);
  else if (r == ReduceOp::kLogSum) acc = std::log(acc);
  else if (r == ReduceOp::kMean) acc /= static_cast<double>(roff.size());
  return static_cast<T>(acc);
}

/// Outputs [b, e) of a resize: each sums w(taps) * x over every combination of its axes' taps (first axis outermost,
/// weights multiplied in axis order, zero weights skipped) in double and stores store(sum); outside the roi, extrap.
template <typename T, typename Store>
void resizeRange(const std::vector<ResizeTaps>& taps, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape,
                 const T* x, T* y, T extrap, Store store, int64_t b, int64_t e) {
  const size_t r = x_shape.size();
  std::vector<int64_t> ist(r, 1);
  for (size_t i = r; i-- > 1;) ist[i - 1] = ist[i] * x_shape[i];
  std::vector<int64_t> idx(r, 0);
  for (int64_t rest = b, a = static_cast<int64_t>(r); a-- > 0;) {  // the first output's coordinates
    idx[static_cast<size_t>(a)] = rest % y_shape[static_cast<size_t>(a)];
    rest /= y_shape[static_cast<size_t>(a)];
  }
  std::vector<int> tap(r, 0);
  for (int64_t o = b; o < e; ++o) {
    bool outside = false;
    for (size_t a = 0; a < r; ++a) outside |= taps[a].outside[static_cast<size_t>(idx[a])] != 0;
    if (outside) {
      y[o] = extrap;
    } else {
      double acc = 0;
      std::fill(tap.begin(), tap.end(), 0);
      for (;;) {
        double w = 1;
        int64_t off = 0;
        for (size_t a = 0; a < r; ++a) {
          size_t j = static_cast<size_t>(idx[a]) * static_cast<size_t>(taps[a].k) + static_cast<size_t>(tap[a]);
          w *= taps[a].w[j];
          off += taps[a].idx[j] * ist[a];
        }
        if (w != 0) acc += w * static_cast<double>(x[off]);
        bool done = true;
        for (size_t a = r; a-- > 0;) {
          if (++tap[a] < taps[a].k) {
            done = false;
            break;
          }
          tap[a] = 0;
        }
        if (done) break;
      }
      y[o] = store(acc);
    }
    for (size_t a = r; a-- > 0;) {
      if (++idx[a] < y_shape[a]) break;
      idx[a] = 0;
    }
  }
}

}  // namespace npuc::kernels
