// Kernels of data-movement and shape ops: Reshape/Flatten/Squeeze/Unsqueeze (aliases of their input),
// Transpose, Concat, Split, Slice, Gather, GatherElements, Expand, Tile, Pad, Shape, Size, Constant,
// ConstantOfShape, Range, DepthToSpace, SpaceToDepth, TopK, Resize/Upsample and NonZero.
//
// Pure data movement copies raw elements, so it works for every fixed-size element type (float16 included).
// TopK and Resize look at values: float16/bfloat16 are widened to float32 for them (Resize rounds back once
// per output). Resize computes every output in double (taps and weights per axis, separable), following the
// ONNX reference formulas. Every data-dependent failure is reported through call.error / call.unsupported.
#include "engine/elementwise_util.hpp"
#include "kernels/layer_templates.hpp"
#include "kernels/indexing.hpp"
#include "kernels/layers.hpp"
#include "kernels/typed.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace npuc::engine {

namespace {

size_t elemSize(const KernelCall& c, const Tensor& t) {
  size_t es = dtypeSize(t.dtype());
  if (es == 0) c.unsupported("element type {} is not supported", dtypeName(t.dtype()));
  return es;
}

std::vector<int64_t> stridesOf(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

int64_t normAxis(const KernelCall& c, int64_t axis, int64_t rank) {
  int64_t a = axis;
  if (!ops::normalizeAxis(a, rank)) c.error("axis {} is out of range for rank {}", axis, rank);
  return a;
}

const uint8_t* bytesOf(const Tensor& t) { return static_cast<const uint8_t*>(t.raw()); }
uint8_t* bytesOf(Tensor& t) { return static_cast<uint8_t*>(t.raw()); }

/// Calls fn(offset_a, offset_b) for every index of `dims` in row-major order; the offsets advance by the
/// per-dim strides sa / sb (which may be zero or negative). Nothing is called when a dim is 0.
template <typename F>
void forEachIndex2(const Shape& dims, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, F&& fn) {
  for (int64_t d : dims)
    if (d <= 0) return;
  size_t r = dims.size();
  std::vector<int64_t> idx(r, 0);
  int64_t a = 0, b = 0;
  for (;;) {
    fn(a, b);
    size_t d = r;
    for (;;) {
      if (d == 0) return;
      --d;
      a += sa[d];
      b += sb[d];
      if (++idx[d] < dims[d]) break;
      a -= sa[d] * dims[d];
      b -= sb[d] * dims[d];
      idx[d] = 0;
    }
  }
}

template <typename E>
void stridedCopyT(const E* src, int64_t base, const std::vector<int64_t>& sst, E* dst, const Shape& shape) {
  if (shape.empty()) {
    dst[0] = src[base];
    return;
  }
  Shape outer(shape.begin(), shape.end() - 1);
  std::vector<int64_t> souter(sst.begin(), sst.end() - 1);
  std::vector<int64_t> douter = stridesOf(shape);
  douter.pop_back();
  int64_t n = shape.back();
  int64_t s = sst.back();
  forEachIndex2(outer, souter, douter, [&](int64_t so, int64_t doff) {
    const E* sp = src + base + so;
    E* dp = dst + doff;
    if (s == 1) std::memcpy(dp, sp, static_cast<size_t>(n) * sizeof(E));
    else for (int64_t i = 0; i < n; ++i) dp[i] = sp[i * s];
  });
}

/// dst (contiguous, of `shape`) [i] = src[base + sum_d idx_d * sst_d], elements of `es` bytes.
void stridedCopy(const uint8_t* src, int64_t base, const std::vector<int64_t>& sst, uint8_t* dst, const Shape& shape,
                 size_t es) {
  if (shapeNumel(shape) == 0) return;
  switch (es) {
    case 1: stridedCopyT(src, base, sst, dst, shape); return;
    case 2: stridedCopyT(reinterpret_cast<const uint16_t*>(src), base, sst, reinterpret_cast<uint16_t*>(dst), shape); return;
    case 4: stridedCopyT(reinterpret_cast<const uint32_t*>(src), base, sst, reinterpret_cast<uint32_t*>(dst), shape); return;
    case 8: stridedCopyT(reinterpret_cast<const uint64_t*>(src), base, sst, reinterpret_cast<uint64_t*>(dst), shape); return;
    default: break;
  }
  std::vector<int64_t> dst_st = stridesOf(shape);
  forEachIndex2(shape, sst, dst_st, [&](int64_t so, int64_t doff) {
    std::memcpy(dst + static_cast<size_t>(doff) * es, src + static_cast<size_t>(base + so) * es, es);
  });
}

// ---------------------------------------------------------------------------------------------------------
// Transpose

template <typename E>
void transposeTiled(const E* src, E* dst, const Shape& dims, const std::vector<int64_t>& sst, size_t j) {
  // dims/sst: collapsed output dims and their input strides; sst[j] == 1, the last output dim is strided.
  size_t r = dims.size();
  std::vector<int64_t> dst_st = stridesOf(dims);
  Shape outer;
  std::vector<int64_t> so, dso;
  for (size_t d = 0; d + 1 < r; ++d) {
    if (d == j) continue;
    outer.push_back(dims[d]);
    so.push_back(sst[d]);
    dso.push_back(dst_st[d]);
  }
  int64_t nj = dims[j], nl = dims[r - 1], sl = sst[r - 1], dj = dst_st[j];
  constexpr int64_t kTile = 16;
  forEachIndex2(outer, so, dso, [&](int64_t ib, int64_t ob) {
    for (int64_t jb = 0; jb < nj; jb += kTile) {
      int64_t je = std::min(nj, jb + kTile);
      for (int64_t lb = 0; lb < nl; lb += kTile) {
        int64_t le = std::min(nl, lb + kTile);
        for (int64_t jj = jb; jj < je; ++jj) {
          const E* sp = src + ib + jj;
          E* dp = dst + ob + jj * dj;
          for (int64_t ll = lb; ll < le; ++ll) dp[ll] = sp[ll * sl];
        }
      }
    }
  });
}

void transposeKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  size_t es = elemSize(c, x);
  int64_t rank = x.rank();
  std::vector<int64_t> perm = c.node.attrInts("perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank) c.error("perm has {} entries for rank {}", perm.size(), rank);
  Tensor& y = c.alloc(0);
  if (y.numel() == 0) return;
  std::vector<int64_t> ist = stridesOf(x.shape());
  // Collapse: drop size-1 dims, merge output-adjacent dims that are also adjacent in the input.
  Shape dims;
  std::vector<int64_t> sst;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t p = normAxis(c, perm[static_cast<size_t>(d)], rank);
    int64_t n = x.dim(static_cast<int>(p));
    int64_t s = ist[static_cast<size_t>(p)];
    if (n == 1) continue;
    if (!dims.empty() && sst.back() == s * n) {
      dims.back() *= n;
      sst.back() = s;
    } else {
      dims.push_back(n);
      sst.push_back(s);
    }
  }
  if (dims.empty() || sst.back() == 1) {
    stridedCopy(bytesOf(x), 0, sst, bytesOf(y), dims, es);
    return;
  }
  size_t j = 0;
  while (j < sst.size() && sst[j] != 1) ++j;
  if (j == sst.size() || es > 8 || (es & (es - 1))) {
    stridedCopy(bytesOf(x), 0, sst, bytesOf(y), dims, es);
    return;
  }
  switch (es) {
    case 1: transposeTiled(bytesOf(x), bytesOf(y), dims, sst, j); break;
    case 2: transposeTiled(static_cast<const uint16_t*>(x.raw()), static_cast<uint16_t*>(y.raw()), dims, sst, j); break;
    case 4: transposeTiled(static_cast<const uint32_t*>(x.raw()), static_cast<uint32_t*>(y.raw()), dims, sst, j); break;
    default: transposeTiled(static_cast<const uint64_t*>(x.raw()), static_cast<uint64_t*>(y.raw()), dims, sst, j); break;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Concat / Split / Slice / Gather / GatherElements / Expand / Tile

void concatKernel(KernelCall& c) {
  Tensor& y = c.alloc(0);
  size_t es = elemSize(c, y);
  int64_t rank = y.rank();
  int64_t axis = normAxis(c, c.node.attrInt("axis", 0), rank);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y.dim(static_cast<int>(d));
  for (int64_t d = axis + 1; d < rank; ++d) inner *= y.dim(static_cast<int>(d));
  int64_t ya = y.dim(static_cast<int>(axis));
  uint8_t* dst = bytesOf(y);
  int64_t at = 0;
  for (int i = 0; i < static_cast<int>(c.in.size()); ++i) {
    const Tensor& x = c.input(i);
    if (x.dtype() != y.dtype() || x.rank() != rank) c.error("input {} does not match input 0", i);
    int64_t xa = x.dim(static_cast<int>(axis));
    size_t chunk = static_cast<size_t>(xa * inner) * es;
    if (chunk > 0)
      for (int64_t o = 0; o < outer; ++o) {
        uint8_t* to = dst + static_cast<size_t>((o * ya + at) * inner) * es;
        const uint8_t* from = bytesOf(x) + o * chunk;
        if (to != from) std::memcpy(to, from, chunk);  // equal: the producer wrote in place (Engine::planConcats)
      }
    at += xa;
  }
}

void splitKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  size_t es = elemSize(c, x);
  int64_t rank = x.rank();
  int64_t axis = normAxis(c, ops::attrInt(c.node, "axis"), rank);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<int>(d));
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(static_cast<int>(d));
  int64_t xa = x.dim(static_cast<int>(axis));
  int64_t at = 0;
  for (int i = 0; i < c.numOutputs(); ++i) {
    int64_t part = c.out_types[static_cast<size_t>(i)].shape[static_cast<size_t>(axis)];
    bool wanted = static_cast<size_t>(i) < c.node.outputs.size() && c.node.outputs[static_cast<size_t>(i)] != ir::kNoValue;
    if (at + part > xa) c.error("split sizes exceed axis {} of size {}", axis, xa);
    if (wanted) {
      Tensor& y = c.alloc(i);
      size_t chunk = static_cast<size_t>(part * inner) * es;
      if (chunk > 0)
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(bytesOf(y) + o * chunk, bytesOf(x) + static_cast<size_t>((o * xa + at) * inner) * es, chunk);
    }
    at += part;
  }
}

void sliceKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  size_t es = elemSize(c, x);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.node.attrInts("starts");
    ends = c.node.attrInts("ends");
    axes = c.node.attrInts("axes");
  } else {
    starts = c.input(1).toInt64();
    ends = c.input(2).toInt64();
    if (c.has(3)) axes = c.input(3).toInt64();
    if (c.has(4)) steps = c.input(4).toInt64();
  }
  const kernels::SliceGeometry g = kernels::resolveSlice(x.shape(), starts, ends, axes, steps);
  Tensor& y = c.alloc(0);
  std::vector<int64_t> ist = stridesOf(x.shape());
  std::vector<int64_t> sst = ist;
  int64_t base = 0;
  for (size_t a = 0; a < ist.size(); ++a) {
    if (y.dim(static_cast<int>(a)) == 0) continue;
    base += g.begin[a] * ist[a];
    sst[a] = g.step[a] * ist[a];
  }
  stridedCopy(bytesOf(x), base, sst, bytesOf(y), y.shape(), es);
}

void gatherKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  size_t es = elemSize(c, x);
  int64_t rank = x.rank();
  int64_t axis = normAxis(c, ops::attrInt(c.node, "axis"), rank);
  std::vector<int64_t> idx = c.input(1).toInt64();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<int>(d));
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(static_cast<int>(d));
  int64_t xa = x.dim(static_cast<int>(axis));
  for (int64_t v : idx)
    if (v < -xa || v >= xa) c.error("index {} is out of range for axis {} of size {}", v, axis, xa);
  Tensor& y = c.alloc(0);
  // The package's gather layer runs this same kernel.
  kernels::gather(outer, xa, inner, idx, es, x.raw(), y.raw(), c.pool);
}

void gatherElementsKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  const Tensor& ind = c.input(1);
  const int64_t axis = normAxis(c, c.node.attrInt("axis", 0), x.rank());
  const std::vector<int64_t> idx = ind.toInt64();
  Tensor& y = c.alloc(0);
  // The package's gather_elements layer runs this same kernel.
  kernels::gatherElements(x.shape(), ind.shape(), axis, elemSize(c, x), x.raw(), idx.data(), y.raw());
}

// Expand and Tile: the package's tile layer runs this same kernel (Expand with x viewed at the output's rank).
void expandKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  size_t es = elemSize(c, x);
  Tensor& y = c.alloc(0);
  Shape xs = x.shape();
  if (xs.size() > y.shape().size()) c.error("cannot expand {} to {}", shapeStr(x.shape()), shapeStr(y.shape()));
  xs.insert(xs.begin(), y.shape().size() - xs.size(), 1);
  for (size_t d = 0; d < xs.size(); ++d)
    if (xs[d] != 1 && xs[d] != y.shape()[d]) c.error("cannot expand {} to {}", shapeStr(x.shape()), shapeStr(y.shape()));
  kernels::tile(xs, y.shape(), es, x.raw(), y.raw(), c.pool);
}
void tileKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  size_t es = elemSize(c, x);
  Tensor& y = c.alloc(0);
  for (int d = 0; d < x.rank(); ++d)
    if (x.dim(d) ? y.dim(d) % x.dim(d) != 0 : y.dim(d) != 0)
      c.error("output dim {} is not a multiple of input dim {}", y.dim(d), x.dim(d));
  kernels::tile(x.shape(), y.shape(), es, x.raw(), y.raw(), c.pool);
}

// ---------------------------------------------------------------------------------------------------------
// Pad

void padKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  size_t es = elemSize(c, x);
  int64_t rank = x.rank();
  std::string mode = c.node.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") c.unsupported("unknown pad mode '{}'", mode);
  std::vector<int64_t> pads_in = c.opset < 11 ? c.node.attrInts("pads") : c.input(1).toInt64();
  std::vector<int64_t> axes;
  if (c.has(3)) axes = c.input(3).toInt64();
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  if (pads_in.size() != 2 * axes.size()) c.error("pads has {} entries, expected {}", pads_in.size(), 2 * axes.size());
  std::vector<int64_t> pb(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) pb[static_cast<size_t>(normAxis(c, axes[i], rank))] = pads_in[i];
  // constant value, converted to the data type
  Tensor cv;
  if (c.opset < 11) cv = castTensor(Tensor::scalar<float>(c.node.attrFloat("value", 0.0f)), x.dtype(), c);
  else if (c.has(2) && c.input(2).numel() > 0) cv = castTensor(c.input(2), x.dtype(), c);
  else cv = Tensor(x.dtype(), {});
  const uint8_t* fill = bytesOf(cv);
  Tensor& y = c.alloc(0);
  if (y.numel() == 0) return;
  // per dim: output coordinate -> input coordinate, -1 for the constant
  std::vector<std::vector<int64_t>> maps(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = x.dim(static_cast<int>(d)), on = y.dim(static_cast<int>(d));
    auto& m = maps[static_cast<size_t>(d)];
    m.resize(static_cast<size_t>(on));
    for (int64_t o = 0; o < on; ++o) {
      int64_t i = o - pb[static_cast<size_t>(d)];
      if (i < 0 || i >= n) {
        if (mode == "constant") i = -1;
        else if (n == 0) c.error("cannot pad an empty axis {} in mode '{}'", d, mode);
        else if (mode == "edge") i = std::clamp<int64_t>(i, 0, n - 1);
        else if (mode == "wrap") i = ((i % n) + n) % n;
        else if (n == 1) i = 0;
        else {
          int64_t period = 2 * (n - 1);
          i = ((i % period) + period) % period;
          if (i >= n) i = period - i;
        }
      }
      m[static_cast<size_t>(o)] = i;
    }
  }
  const uint8_t* src = bytesOf(x);
  uint8_t* dst = bytesOf(y);
  if (rank == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  std::vector<int64_t> ist = stridesOf(x.shape());
  const Shape& os = y.shape();
  size_t r = static_cast<size_t>(rank);
  std::vector<int64_t> idx(r, 0);
  int64_t inner = os[r - 1];
  const auto& ml = maps[r - 1];
  for (int64_t row = 0; row * inner < y.numel(); ++row) {
    bool valid = true;
    int64_t base = 0;
    for (size_t d = 0; d + 1 < r; ++d) {
      int64_t i = maps[d][static_cast<size_t>(idx[d])];
      if (i < 0) valid = false;
      base += i * ist[d];
    }
    uint8_t* dp = dst + static_cast<size_t>(row * inner) * es;
    for (int64_t o = 0; o < inner; ++o) {
      int64_t i = ml[static_cast<size_t>(o)];
      std::memcpy(dp + static_cast<size_t>(o) * es, valid && i >= 0 ? src + static_cast<size_t>(base + i) * es : fill, es);
    }
    for (size_t d = r - 1; d-- > 0;) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Shape / Size / Constant / ConstantOfShape / Range / NonZero

void shapeKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  int64_t rank = x.rank();
  int64_t start = c.node.attrInt("start", 0), end = c.node.attrInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  Tensor& y = c.alloc(0);
  for (int64_t i = start; i < end; ++i) y.data<int64_t>()[i - start] = x.dim(static_cast<int>(i));
}

void constantKernel(KernelCall& c) {
  const ir::Node& n = c.node;
  if (const Tensor* t = n.attrTensor("value")) c.out[0] = *t;
  else if (n.hasAttr("value_float")) c.out[0] = Tensor::scalar<float>(n.attrFloat("value_float", 0.0f));
  else if (n.hasAttr("value_int")) c.out[0] = Tensor::scalar<int64_t>(n.attrInt("value_int", 0));
  else if (n.hasAttr("value_floats")) {
    auto v = n.attrFloats("value_floats");
    c.out[0] = Tensor::fromVector<float>({static_cast<int64_t>(v.size())}, v);
  } else if (n.hasAttr("value_ints")) {
    auto v = n.attrInts("value_ints");
    c.out[0] = Tensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
  } else {
    c.unsupported("only value, value_float(s) and value_int(s) constants are supported");
  }
}

void constantOfShapeKernel(KernelCall& c) {
  Tensor& y = c.allocZeroed(0);
  const Tensor* v = c.node.attrTensor("value");
  if (!v) return;  // float32 zeros
  if (v->numel() != 1) c.error("'value' must hold exactly one element, it has {}", v->numel());
  if (v->dtype() != y.dtype()) c.error("'value' type {} differs from the output type", dtypeName(v->dtype()));
  size_t es = elemSize(c, y);
  uint8_t* dst = bytesOf(y);
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(dst + static_cast<size_t>(i) * es, bytesOf(*v), es);
}

// Range: the kernel the package's range layer runs.
void rangeKernel(KernelCall& c) {
  Tensor& y = c.alloc(0);
  for (int i = 0; i < 3; ++i)
    if (c.input(i).numel() != 1) c.error("start, limit and delta must be scalars");
  kernels::range(y.dtype(), y.numel(), c.input(0).raw(), c.input(2).raw(), y.raw());
}

void nonZeroKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.alloc(0);
  const int64_t nz = y.rank() == 2 ? y.dim(1) : 0;
  if (kernels::nonZero(x.dtype(), x.shape(), x.raw(), y.data<int64_t>(), nz) != nz) c.error("internal: the non-zeros changed");
}

// ---------------------------------------------------------------------------------------------------------
// DepthToSpace / SpaceToDepth (a reshape + transpose, done as one strided copy)

void depthSpaceKernel(KernelCall& c, bool to_depth) {
  const Tensor& x = c.input(0);
  size_t es = elemSize(c, x);
  if (x.rank() != 4) c.error("input must be 4-D NCHW, got {}", shapeStr(x.shape()));
  int64_t b = c.node.attrInt("blocksize", 0);
  if (b <= 0) c.error("blocksize must be positive, got {}", b);
  int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor& y = c.alloc(0);
  Shape dims;
  std::vector<int64_t> sst;
  if (to_depth) {
    // out[n, (bi*b + bj)*C + c, h', w'] = in[n, c, h'*b + bi, w'*b + bj]
    int64_t oh = h / b, ow = w / b;
    dims = {n, b, b, ch, oh, ow};
    sst = {ch * h * w, w, 1, h * w, b * w, b};
  } else {
    int64_t oc = ch / (b * b);
    std::string mode = c.node.attrString("mode", "DCR");
    dims = {n, oc, h, b, w, b};
    if (mode == "DCR") sst = {ch * h * w, h * w, w, b * oc * h * w, 1, oc * h * w};  // channel (bi*b + bj)*C' + c
    else if (mode == "CRD") sst = {ch * h * w, b * b * h * w, w, b * h * w, 1, h * w};  // channel c*b*b + bi*b + bj
    else c.unsupported("unknown DepthToSpace mode '{}'", mode);
  }
  stridedCopy(bytesOf(x), 0, sst, bytesOf(y), dims, es);
}

// ---------------------------------------------------------------------------------------------------------
// TopK

void topKKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  const int64_t rank = x.rank();
  const int64_t axis = normAxis(c, c.node.attrInt("axis", -1), rank);
  Tensor& vals = c.alloc(0);
  Tensor& inds = c.alloc(1);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<int>(d));
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(static_cast<int>(d));
  // The package's top_k layer runs this same kernel.
  kernels::topK(x.dtype(), c.node.attrInt("largest", 1) != 0, outer, x.dim(static_cast<int>(axis)), inner,
                vals.dim(static_cast<int>(axis)), x.raw(), vals.raw(), inds.data<int64_t>());
}

// ---------------------------------------------------------------------------------------------------------
// Resize / Upsample: the taps and, for float32 (and float16, widened), the sums are the layer kernel's
// (kernels::resizeTaps / kernels::resize), which packages run too.

void resizeKernel(KernelCall& call) {
  computeHalfAsFloat(call, [](KernelCall& c) {
    const Tensor& x = c.input(0);
    bool upsample = c.node.op == "Upsample";
    kernels::ResizeSpec p;
    std::string mode = c.node.attrString("mode", "nearest");
    if (mode == "nearest") p.interp = kernels::ResizeInterp::kNearest;
    else if (mode == "linear" || (upsample && mode == "bilinear")) p.interp = kernels::ResizeInterp::kLinear;
    else if (mode == "cubic" && !upsample && c.opset >= 11) p.interp = kernels::ResizeInterp::kCubic;
    else c.unsupported("unsupported resize mode '{}'", mode);
    int64_t rank = x.rank();
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    std::vector<double> roi;
    if (upsample || c.opset < 11) {
      p.legacy = true;
      if (upsample && c.node.hasAttr("scales")) {
        for (float f : c.node.attrFloats("scales")) scales.push_back(f);
      } else {
        scales = c.input(1).toDouble();
      }
    } else {
      std::string cm = c.node.attrString("coordinate_transformation_mode", "half_pixel");
      std::string nm = c.node.attrString("nearest_mode", "round_prefer_floor");
      if (!kernels::resizeCoordFromName(cm, &p.coord)) c.unsupported("unknown coordinate_transformation_mode '{}'", cm);
      if (!kernels::resizeNearestFromName(nm, &p.nearest)) c.unsupported("unknown nearest_mode '{}'", nm);
      p.cubic_a = c.node.attrFloat("cubic_coeff_a", -0.75f);
      p.exclude_outside = c.node.attrInt("exclude_outside", 0) != 0;
      p.extrapolation = c.node.attrFloat("extrapolation_value", 0.0f);
      if (c.node.attrInt("antialias", 0) != 0) c.unsupported("antialias is not supported");
      if (c.has(3)) sizes = c.input(3).toInt64();
      if (sizes.empty() && c.has(2)) scales = c.input(2).toDouble();
      if (c.has(1)) roi = c.input(1).toDouble();
    }
    std::vector<int64_t> axes = c.node.attrInts("axes");
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    for (int64_t& a : axes) a = normAxis(c, a, rank);
    if (!sizes.empty() && sizes.size() != axes.size()) c.error("sizes has {} entries for {} axes", sizes.size(), axes.size());
    if (sizes.empty() && scales.size() != axes.size()) c.error("scales has {} entries for {} axes", scales.size(), axes.size());
    if (!roi.empty() && roi.size() != 2 * axes.size()) c.error("roi has {} entries for {} axes", roi.size(), axes.size());
    Tensor& y = c.alloc(0);
    if (y.rank() != rank) c.error("output rank differs from the input rank");
    size_t r = static_cast<size_t>(rank);
    p.scale.assign(r, 1.0);
    p.roi_start.assign(r, 0.0);
    p.roi_end.assign(r, 1.0);
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = static_cast<size_t>(axes[i]);
      int64_t in = x.dim(static_cast<int>(a));
      if (!sizes.empty()) {
        if (sizes[i] < 0) c.error("sizes entry {} is negative", sizes[i]);
        p.scale[a] = in == 0 || sizes[i] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(in);
      } else {
        p.scale[a] = scales[i];
        if (!(p.scale[a] > 0) || !std::isfinite(p.scale[a])) c.error("scale {} must be positive and finite", p.scale[a]);
      }
      if (!roi.empty()) {
        p.roi_start[a] = roi[i];
        p.roi_end[a] = roi[i + axes.size()];
      }
    }
    if (y.numel() == 0) return;
    if (x.dtype() == DType::kF32) {
      kernels::resize(p, x.shape(), y.shape(), x.data<float>(), y.data<float>(), c.pool);
      return;
    }
    std::vector<kernels::ResizeTaps> taps = kernels::resizeTaps(p, x.shape(), y.shape());
    dispatchNumeric(x.dtype(), c, [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        c.unsupported("Resize is not defined for bool");
      } else {
        kernels::resizeRange<T>(taps, x.shape(), y.shape(), x.data<T>(), y.data<T>(), convertValue<T>(p.extrapolation),
                                [](double acc) {
                                  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(acc);
                                  else return convertValue<T>(std::nearbyint(acc));
                                },
                                0, y.numel());
      }
    });
  });
}

}  // namespace

void registerTensorKernels(KernelRegistry& r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    r.addFn(op, [](KernelCall& c) { c.alias(0, c.input(0)); });
  r.addFn("Transpose", transposeKernel);
  r.addFn("Concat", concatKernel);
  r.addFn("Split", splitKernel);
  r.addFn("Slice", sliceKernel);
  r.addFn("Gather", gatherKernel);
  r.addFn("GatherElements", gatherElementsKernel);
  r.addFn("Expand", expandKernel);
  r.addFn("Tile", tileKernel);
  r.addFn("Pad", padKernel);
  r.addFn("Shape", shapeKernel);
  r.addFn("Size", [](KernelCall& c) { c.alloc(0).data<int64_t>()[0] = c.input(0).numel(); });
  r.addFn("Constant", constantKernel);
  r.addFn("ConstantOfShape", constantOfShapeKernel);
  r.addFn("Range", rangeKernel);
  r.addFn("NonZero", nonZeroKernel);
  r.addFn("DepthToSpace", [](KernelCall& c) { depthSpaceKernel(c, false); });
  r.addFn("SpaceToDepth", [](KernelCall& c) { depthSpaceKernel(c, true); });
  r.addFn("TopK", topKKernel);
  r.addFn("Resize", resizeKernel);
  r.addFn("Upsample", resizeKernel);
}

}  // namespace npuc::engine
