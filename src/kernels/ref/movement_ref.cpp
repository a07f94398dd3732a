// Reference kernels of the data-movement layers (kernels/layers.hpp): concat, transpose, pad, slice, tile, where,
// gather. They copy elements without arithmetic, so every element type of the same size moves the same way and
// the fast variants need no other numerics.
#include "kernels/layers.hpp"
#include "kernels/ref/odometer.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <vector>

namespace npuc::kernels {

namespace {

using detail::checkRank;
using detail::numel;
using detail::Odometer;
using detail::offsetsOf;
using detail::parallelUnits;

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

bool reshapeDims(const std::vector<int64_t>& x, const std::vector<uint32_t>& words, std::vector<int64_t>& y) {
  y.assign(words.size(), 0);
  int64_t known = 1, rest = -1;
  for (size_t i = 0; i < words.size(); ++i) {
    const uint32_t w = words[i];
    if (w == kReshapeRest) {
      if (rest >= 0) return false;
      rest = static_cast<int64_t>(i);
      continue;
    }
    if (w & kReshapeFromX) {
      const uint32_t j = w & ~kReshapeFromX;
      if (j >= x.size()) return false;
      y[i] = x[j];
    } else {
      y[i] = static_cast<int64_t>(w);
    }
    if (y[i] != 0 && known > std::numeric_limits<int64_t>::max() / y[i]) return false;
    known *= y[i];
  }
  int64_t n = 1;
  for (int64_t d : x) n *= d;
  if (rest >= 0) {  // (the other dims' product 0: any rest would do — refused, as ONNX Runtime refuses it)
    if (known == 0 || n % known != 0) return false;
    y[static_cast<size_t>(rest)] = n / known;
    return true;
  }
  return known == n;
}

SliceGeometry resolveSlice(const std::vector<int64_t>& dims, const std::vector<int64_t>& starts,
                           const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(ErrorCode::kInvalidInput, "Slice: starts, ends, axes and steps must have the same length ({}, {}, {}, {})",
         starts.size(), ends.size(), axes.size(), steps.size());
  SliceGeometry g{std::vector<int64_t>(dims.size(), 0), std::vector<int64_t>(dims.size(), 1), dims};
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank) fail(ErrorCode::kInvalidInput, "Slice: axis {} is out of range for rank {}", a, rank);
    if (a < 0) a += rank;
    const size_t u = static_cast<size_t>(a);
    if (seen[u]) fail(ErrorCode::kInvalidInput, "Slice: axis {} is repeated", a);
    seen[u] = true;
    const int64_t dim = dims[u], st = steps[i];
    if (st == 0) fail(ErrorCode::kInvalidInput, "Slice: step 0 on axis {}", a);
    // Negative positions count from the end (no overflow for INT64_MIN), then clamp as ONNX does.
    auto from_end = [dim](int64_t v) { return v < 0 ? (v < -dim ? -1 : v + dim) : v; };
    int64_t b = from_end(starts[i]), e = from_end(ends[i]), n;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      n = e > b ? (e - b - 1) / st + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      n = b > e ? (st == std::numeric_limits<int64_t>::min() ? 1 : (b - e - 1) / (-st) + 1) : 0;
    }
    g.begin[u] = n > 0 ? b : 0, g.step[u] = st, g.count[u] = n;
  }
  return g;
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
