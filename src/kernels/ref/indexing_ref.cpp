// Indexing kernels (kernels/indexing.hpp): the specification of GatherElements, ScatterElements, GatherND,
// ScatterND and TopK, shared by the engine and the runtime.
#include "kernels/indexing.hpp"
#include "kernels/typed.hpp"

#include "kernels/ref/typed_dispatch.hpp"
#include "support/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace npuc::kernels {

namespace {

using detail::dispatch;
using detail::isHalf;
using detail::narrow;
using detail::widen;
using detail::wrap;

constexpr const char* kReductionNames[] = {"none", "add", "mul", "max", "min"};

int64_t count(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t>& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

/// idx[pos] made non-negative for an axis of `len`, or a failure naming it.
int64_t checked(const char* op, const int64_t* idx, int64_t pos, int64_t len, int64_t axis) {
  const int64_t v = idx[pos];
  if (v < -len || v >= len)
    fail(ErrorCode::kInvalidInput, "{}: index {} (position {}) is out of range for axis {} of size {}", op, v, pos, axis, len);
  return v < 0 ? v + len : v;
}

/// The element offset in x of each position of the indices (GatherElements / ScatterElements), all checked first.
std::vector<int64_t> elementOffsets(const char* op, const std::vector<int64_t>& xs, const std::vector<int64_t>& is,
                                    int64_t axis, const int64_t* idx) {
  const size_t r = xs.size();
  if (is.size() != r || axis < 0 || axis >= static_cast<int64_t>(r))
    fail(ErrorCode::kInvalidInput, "{}: indices of rank {} for data of rank {} (axis {})", op, is.size(), r, axis);
  for (size_t d = 0; d < r; ++d)
    if (static_cast<int64_t>(d) != axis && is[d] > xs[d])
      fail(ErrorCode::kInvalidInput, "{}: the indices' dim {} ({}) exceeds the data's ({})", op, d, is[d], xs[d]);
  const std::vector<int64_t> xst = stridesOf(xs);
  const int64_t n = count(is);
  std::vector<int64_t> off(static_cast<size_t>(n));
  std::vector<int64_t> coord(r, 0);
  int64_t base = 0;  // the offset of coord with its axis coordinate 0
  for (int64_t p = 0; p < n; ++p) {
    off[static_cast<size_t>(p)] = base + checked(op, idx, p, xs[static_cast<size_t>(axis)], axis) * xst[static_cast<size_t>(axis)];
    for (size_t d = r; d-- > 0;) {  // next position (row-major over the indices' shape)
      if (++coord[d] < is[d]) {
        if (static_cast<int64_t>(d) != axis) base += xst[d];
        break;
      }
      if (static_cast<int64_t>(d) != axis) base -= (coord[d] - 1) * xst[d];
      coord[d] = 0;
    }
  }
  return off;
}

/// The element offset in x of each index tuple's slice (GatherND / ScatterND), all checked first; `slice` gets the
/// elements a tuple addresses.
std::vector<int64_t> tupleOffsets(const char* op, const std::vector<int64_t>& xs, const std::vector<int64_t>& is,
                                  int64_t b, const int64_t* idx, int64_t& slice) {
  if (is.empty() || b < 0 || b >= static_cast<int64_t>(is.size()) || b > static_cast<int64_t>(xs.size()))
    fail(ErrorCode::kInvalidInput, "{}: indices of rank {} with batch_dims {}", op, is.size(), b);
  const int64_t k = is.back();
  if (k < 1 || b + k > static_cast<int64_t>(xs.size()))
    fail(ErrorCode::kInvalidInput, "{}: index tuples of {} for data of rank {} (batch_dims {})", op, k, xs.size(), b);
  for (int64_t d = 0; d < b; ++d)
    if (is[static_cast<size_t>(d)] != xs[static_cast<size_t>(d)])
      fail(ErrorCode::kInvalidInput, "{}: batch dim {} of the indices ({}) is not the data's ({})", op, d, is[static_cast<size_t>(d)], xs[static_cast<size_t>(d)]);
  const std::vector<int64_t> xst = stridesOf(xs);
  slice = 1;
  for (size_t d = static_cast<size_t>(b + k); d < xs.size(); ++d) slice *= xs[d];
  const int64_t tuples = count(is) / k;
  int64_t batch = 1;
  for (int64_t d = 0; d < b; ++d) batch *= xs[static_cast<size_t>(d)];
  const int64_t per_batch = batch > 0 ? tuples / batch : 0;
  const int64_t batch_stride = b > 0 ? xst[static_cast<size_t>(b - 1)] : 0;
  std::vector<int64_t> off(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t o = b > 0 ? (t / per_batch) * batch_stride : 0;
    for (int64_t j = 0; j < k; ++j) {
      const size_t dim = static_cast<size_t>(b + j);
      o += checked(op, idx, t * k + j, xs[dim], static_cast<int64_t>(dim)) * xst[dim];
    }
    off[static_cast<size_t>(t)] = o;
  }
  return off;
}

/// y = x, then update u[j] into y[off[j / per] + j % per] for every j in order (per: elements an offset addresses).
void scatterAt(const char* op, ScatterReduction r, DType t, int64_t xn, const std::vector<int64_t>& off, int64_t per,
               const void* x, const void* u, void* y) {
  const size_t es = dtypeSize(t);
  if (es == 0 || r >= ScatterReduction::kCount) fail(ErrorCode::kUnsupported, "{}: element type {}", op, dtypeName(t));
  if (y != x) std::memmove(y, x, static_cast<size_t>(xn) * es);
  const int64_t un = static_cast<int64_t>(off.size()) * per;
  if (r == ScatterReduction::kNone) {  // the update's bytes (any type)
    for (size_t j = 0; j < off.size(); ++j)
      std::memcpy(static_cast<uint8_t*>(y) + static_cast<size_t>(off[j]) * es,
                  static_cast<const uint8_t*>(u) + j * static_cast<size_t>(per) * es, static_cast<size_t>(per) * es);
    return;
  }
  if (t == DType::kBool) fail(ErrorCode::kUnsupported, "{}: reduction '{}' on bool", op, scatterReductionName(r));
  if (isHalf(t)) {
    std::vector<float> fx = widen(t, y, xn), fu = widen(t, u, un);
    scatterAt(op, r, DType::kF32, xn, off, per, fx.data(), fu.data(), fx.data());
    return narrow(t, fx.data(), y, xn);
  }
  const bool ok = dispatch(t, [&]<typename T>() {
    T* yt = static_cast<T*>(y);
    const T* ut = static_cast<const T*>(u);
    for (size_t j = 0; j < off.size(); ++j)
      for (int64_t s = 0; s < per; ++s) {
        T& a = yt[off[j] + s];
        const T b = ut[static_cast<int64_t>(j) * per + s];
        switch (r) {
          case ScatterReduction::kAdd: a = wrap(a, b, [](auto p, auto q) { return p + q; }); break;
          case ScatterReduction::kMul: a = wrap(a, b, [](auto p, auto q) { return p * q; }); break;
          case ScatterReduction::kMax: a = a < b ? b : a; break;
          default: a = b < a ? b : a; break;
        }
      }
  });
  if (!ok) fail(ErrorCode::kUnsupported, "{}: element type {}", op, dtypeName(t));
}

}  // namespace

ScatterReduction scatterReductionFromName(const std::string& name) {
  for (size_t i = 0; i < std::size(kReductionNames); ++i)
    if (name == kReductionNames[i]) return static_cast<ScatterReduction>(i);
  return ScatterReduction::kCount;
}

const char* scatterReductionName(ScatterReduction r) {
  return r < ScatterReduction::kCount ? kReductionNames[static_cast<size_t>(r)] : "?";
}

void gatherElements(const std::vector<int64_t>& xs, const std::vector<int64_t>& is, int64_t axis, size_t es,
                    const void* x, const int64_t* idx, void* y) {
  const std::vector<int64_t> off = elementOffsets("GatherElements", xs, is, axis, idx);
  for (size_t p = 0; p < off.size(); ++p)
    std::memcpy(static_cast<uint8_t*>(y) + p * es, static_cast<const uint8_t*>(x) + static_cast<size_t>(off[p]) * es, es);
}

void scatterElements(ScatterReduction r, DType t, const std::vector<int64_t>& xs, const std::vector<int64_t>& is,
                     int64_t axis, const void* x, const int64_t* idx, const void* u, void* y) {
  scatterAt("ScatterElements", r, t, count(xs), elementOffsets("ScatterElements", xs, is, axis, idx), 1, x, u, y);
}

void gatherNd(const std::vector<int64_t>& xs, const std::vector<int64_t>& is, int64_t b, size_t es, const void* x,
              const int64_t* idx, void* y) {
  int64_t slice = 0;
  const std::vector<int64_t> off = tupleOffsets("GatherND", xs, is, b, idx, slice);
  const size_t bytes = static_cast<size_t>(slice) * es;
  for (size_t t = 0; t < off.size(); ++t)
    std::memcpy(static_cast<uint8_t*>(y) + t * bytes, static_cast<const uint8_t*>(x) + static_cast<size_t>(off[t]) * es, bytes);
}

void scatterNd(ScatterReduction r, DType t, const std::vector<int64_t>& xs, const std::vector<int64_t>& is,
               const void* x, const int64_t* idx, const void* u, void* y) {
  int64_t slice = 0;
  const std::vector<int64_t> off = tupleOffsets("ScatterND", xs, is, 0, idx, slice);
  scatterAt("ScatterND", r, t, count(xs), off, slice, x, u, y);
}

void topK(DType t, bool largest, int64_t outer, int64_t n, int64_t inner, int64_t k, const void* x, void* values,
          int64_t* indices) {
  if (k < 0 || k > n) fail(ErrorCode::kInvalidInput, "TopK: k = {} for an axis of size {}", k, n);
  const size_t es = dtypeSize(t);
  if (k == 0 || outer * inner == 0) return;
  std::vector<float> wide;
  DType kt = t;
  const void* keys = x;
  if (isHalf(t)) {  // compared as float32 (exact), moved as their own bytes
    wide = widen(t, x, outer * n * inner);
    keys = wide.data(), kt = DType::kF32;
  }
  const bool ok = dispatch(kt, [&]<typename T>() {
    const T* kp = static_cast<const T*>(keys);
    // A strict total order: NaN ranks above every number; ties go to the lower index.
    auto above = [](T a, T b) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a)) return !std::isnan(b);
        if (std::isnan(b)) return false;
      }
      return a > b;
    };
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * n * inner + in;
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          const T va = kp[base + a * inner], vb = kp[base + b * inner];
          const bool first = largest ? above(va, vb) : above(vb, va);
          const bool second = largest ? above(vb, va) : above(va, vb);
          return first || (!second && a < b);
        });
        const int64_t obase = o * k * inner + in;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t src = order[static_cast<size_t>(j)];
          indices[obase + j * inner] = src;
          std::memcpy(static_cast<uint8_t*>(values) + static_cast<size_t>(obase + j * inner) * es,
                      static_cast<const uint8_t*>(x) + static_cast<size_t>(base + src * inner) * es, es);
        }
      }
  });
  if (!ok) fail(ErrorCode::kUnsupported, "TopK: element type {}", dtypeName(t));
}

void oneHot(DType it, const void* indices, int64_t outer, int64_t depth, int64_t inner, size_t es, const void* values,
            void* yv) {
  const int64_t n = outer * inner;
  std::vector<double> ind(static_cast<size_t>(n));
  if (isHalf(it)) {
    const std::vector<float> f = widen(it, indices, n);
    std::copy(f.begin(), f.end(), ind.begin());
  } else if (!dispatch(it, [&]<typename T>() {
               const T* p = static_cast<const T*>(indices);
               for (int64_t i = 0; i < n; ++i) ind[static_cast<size_t>(i)] = static_cast<double>(p[i]);
             })) {
    fail(ErrorCode::kUnsupported, "OneHot: indices of type {}", dtypeName(it));
  }
  const auto* v = static_cast<const uint8_t*>(values);
  auto* out = static_cast<uint8_t*>(yv);
  const double dd = static_cast<double>(depth);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t d = 0; d < depth; ++d)
      for (int64_t in = 0; in < inner; ++in) {
        const double x = ind[static_cast<size_t>(o * inner + in)];
        const int64_t hot = std::isfinite(x) && x >= -dd && x < dd ? static_cast<int64_t>(x < 0 ? x + dd : x) : -1;
        std::memcpy(out + static_cast<size_t>((o * depth + d) * inner + in) * es, v + (hot == d ? es : 0), es);
      }
}

int64_t nonZero(DType t, const std::vector<int64_t>& shape, const void* x, int64_t* y, int64_t capacity) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::vector<float> wide;
  DType kt = t;
  if (isHalf(t)) {
    wide = widen(t, x, numel);
    x = wide.data(), kt = DType::kF32;
  }
  std::vector<int64_t> at;  // the non-zero elements' flat positions
  const bool ok = dispatch(kt, [&]<typename T>() {
    const T* p = static_cast<const T*>(x);
    for (int64_t i = 0; i < numel; ++i)
      if (!(p[i] == T(0))) at.push_back(i);
  });
  if (!ok) fail(ErrorCode::kInvalidArgument, "NonZero: elements of type {} have no kernel", dtypeName(t));
  const auto n = static_cast<int64_t>(at.size());
  const auto rank = static_cast<int64_t>(shape.size());
  if (n > capacity) fail(ErrorCode::kInvalidInput, "NonZero: {} non-zero elements, room for {}", n, capacity);
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = at[static_cast<size_t>(k)];
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t dim = shape[static_cast<size_t>(d)];
      y[d * n + k] = rem % dim;
      rem /= dim;
    }
  }
  return n;
}

int64_t compressKept(const uint8_t* cond, int64_t cond_len, int64_t dim) {
  int64_t kept = 0;
  for (int64_t i = 0; i < std::min(dim, cond_len); ++i) kept += cond[i] != 0;
  return kept;
}

void compress(size_t es, int64_t outer, int64_t dim, int64_t inner, const uint8_t* cond, int64_t cond_len, const void* x,
              void* y) {
  const auto* src = static_cast<const uint8_t*>(x);
  auto* out = static_cast<uint8_t*>(y);
  const size_t slice = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < std::min(dim, cond_len); ++i)
      if (cond[i]) {
        std::memcpy(out, src + static_cast<size_t>(o * dim + i) * slice, slice);
        out += slice;
      }
}

namespace {
/// The total order Unique sorts by: numbers ascending, NaN after every number and equal to NaN.
int compareNumbers(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) == std::isnan(b) ? 0 : std::isnan(a) ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}
}  // namespace

UniqueSlices unique(DType t, int64_t outer, int64_t n, int64_t inner, const void* x, bool sorted) {
  const auto* src = static_cast<const uint8_t*>(x);
  const size_t es = dtypeSize(t);
  std::vector<std::vector<double>> slice(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        slice[static_cast<size_t>(k)].push_back(elementAsDouble(t, src + static_cast<size_t>((o * n + k) * inner + i) * es));
  auto cmp = [&](int64_t a, int64_t b) {
    const auto& sa = slice[static_cast<size_t>(a)];
    const auto& sb = slice[static_cast<size_t>(b)];
    for (size_t e = 0; e < sa.size(); ++e)
      if (int r = compareNumbers(sa[e], sb[e]); r != 0) return r;
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  // Runs of equal slices in sorted order: each run's first element is its smallest index (the sort is stable).
  std::vector<std::pair<int64_t, int64_t>> runs;  // (first index, count)
  std::vector<int64_t> run_of(static_cast<size_t>(n));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || cmp(order[i - 1], order[i]) != 0) runs.push_back({order[i], 0});
    ++runs.back().second;
    run_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(runs.size()) - 1;
  }
  std::vector<int64_t> pos(runs.size());  // each run's place in the output
  std::iota(pos.begin(), pos.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(runs.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) {
      return runs[static_cast<size_t>(a)].first < runs[static_cast<size_t>(b)].first;
    });
    for (size_t p = 0; p < by_first.size(); ++p) pos[static_cast<size_t>(by_first[p])] = static_cast<int64_t>(p);
  }
  UniqueSlices u;
  u.first.resize(runs.size());
  u.counts.resize(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    u.first[static_cast<size_t>(pos[r])] = runs[r].first;
    u.counts[static_cast<size_t>(pos[r])] = runs[r].second;
  }
  for (int64_t k = 0; k < n; ++k) u.inverse.push_back(pos[static_cast<size_t>(run_of[static_cast<size_t>(k)])]);
  return u;
}

void reverseSequence(size_t es, int64_t d0, int64_t d1, int64_t inner, bool time_first, const int64_t* lens,
                     const void* x, void* y) {
  const auto* src = static_cast<const uint8_t*>(x);
  auto* out = static_cast<uint8_t*>(y);
  const size_t row = static_cast<size_t>(inner) * es;
  for (int64_t i0 = 0; i0 < d0; ++i0)
    for (int64_t i1 = 0; i1 < d1; ++i1) {
      const int64_t t = time_first ? i0 : i1, len = lens[time_first ? i1 : i0];
      const int64_t from = t < len ? len - 1 - t : t;
      const int64_t j0 = time_first ? from : i0, j1 = time_first ? i1 : from;
      std::memcpy(out + static_cast<size_t>(i0 * d1 + i1) * row, src + static_cast<size_t>(j0 * d1 + j1) * row, row);
    }
}

}  // namespace npuc::kernels
