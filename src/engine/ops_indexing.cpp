// Kernels of indexing, scatter and cumulative ops (GatherND, ScatterND, ScatterElements, OneHot, Compress,
// CumSum, Trilu) and LayerNormalization. Index data is validated (out-of-range -> error, never a crash);
// data movement copies raw elements, so every fixed-size element type works.
#include "engine/elementwise_util.hpp"
#include "kernels/indexing.hpp"
#include "kernels/typed.hpp"
#include "kernels/layers.hpp"
#include "ops/shape_util.hpp"
#include "ops/registry.hpp"

#include <cmath>
#include <cstring>

namespace npuc::engine {

namespace {

// GatherND, ScatterND and ScatterElements (Scatter, its opset-9 name): the kernels the package's gather_nd,
// scatter_nd and scatter_elements layers run.
void gatherNd(KernelCall& c) {
  const Tensor& d = c.input(0);
  const std::vector<int64_t> idx = c.input(1).toInt64();
  Tensor& y = c.alloc(0);
  kernels::gatherNd(d.shape(), c.input(1).shape(), c.node.attrInt("batch_dims", 0), dtypeSize(d.dtype()), d.raw(),
                    idx.data(), y.raw());
}

kernels::ScatterReduction reductionOf(const KernelCall& c) {
  const std::string mode = c.node.attrString("reduction", "none");
  const kernels::ScatterReduction r = kernels::scatterReductionFromName(mode);
  if (r == kernels::ScatterReduction::kCount) c.unsupported("reduction '{}'", mode);
  return r;
}

void scatterNd(KernelCall& c) {
  const Tensor& d = c.input(0);
  const std::vector<int64_t> idx = c.input(1).toInt64();
  Tensor& y = c.alloc(0);
  kernels::scatterNd(reductionOf(c), d.dtype(), d.shape(), c.input(1).shape(), d.raw(), idx.data(), c.input(2).raw(), y.raw());
}

void scatterElements(KernelCall& c) {
  const Tensor& d = c.input(0);
  const std::vector<int64_t> idx = c.input(1).toInt64();
  int64_t axis = c.node.attrInt("axis", 0);
  ops::normalizeAxis(axis, d.rank());
  Tensor& y = c.alloc(0);
  kernels::scatterElements(reductionOf(c), d.dtype(), d.shape(), c.input(1).shape(), axis, d.raw(), idx.data(),
                           c.input(2).raw(), y.raw());
}

// OneHot: the kernel the package's one_hot layer runs.
void oneHot(KernelCall& c) {
  const Tensor& ind = c.input(0);
  const int64_t depth = static_cast<int64_t>(c.input(1).toDouble().at(0));
  const Tensor& vals = c.input(2);
  int64_t axis = c.node.attrInt("axis", -1);
  ops::normalizeAxis(axis, ind.rank() + 1);
  Tensor& y = c.alloc(0);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < ind.rank(); ++i) (i < axis ? outer : inner) *= ind.dim(static_cast<int>(i));
  kernels::oneHot(ind.dtype(), ind.raw(), outer, depth, inner, dtypeSize(vals.dtype()), vals.raw(), y.raw());
}

/// x as [outer, dim, inner] around the node's 'axis' (normalised; the shape function checked it), or flattened when it
/// has none (Compress, Unique).
kernels::AxisView axisOrFlat(const KernelCall& c, const Tensor& x) {
  if (!c.node.hasAttr("axis")) return {1, x.numel(), 1};
  int64_t axis = c.node.attrInt("axis", 0);
  ops::normalizeAxis(axis, x.rank());
  return kernels::around(x.shape(), static_cast<size_t>(axis));
}

void compress(KernelCall& c) {
  const Tensor& x = c.input(0);
  std::vector<uint8_t> cond;
  for (double v : c.input(1).toDouble()) cond.push_back(v != 0);
  Tensor& y = c.alloc(0);
  const kernels::AxisView v = axisOrFlat(c, x);
  kernels::compress(dtypeSize(x.dtype()), v.outer, v.dim, v.inner, cond.data(), static_cast<int64_t>(cond.size()), x.raw(), y.raw());
}

// Unique: kernels::unique on x as [outer, n, inner]; the outputs the node names.
void unique(KernelCall& c) {
  const Tensor& x = c.input(0);
  const kernels::AxisView v = axisOrFlat(c, x);
  const int64_t outer = v.outer, n = v.dim, inner = v.inner;
  const kernels::UniqueSlices u = kernels::unique(x.dtype(), outer, n, inner, x.raw(), c.node.attrInt("sorted", 1) != 0);
  auto wanted = [&](int i) { return i < c.numOutputs() && static_cast<size_t>(i) < c.node.outputs.size() &&
                                    c.node.outputs[static_cast<size_t>(i)] != ir::kNoValue; };
  const size_t slice = static_cast<size_t>(inner) * dtypeSize(x.dtype());
  const int64_t kept = static_cast<int64_t>(u.first.size());
  Tensor& y = c.alloc(0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < kept; ++k)
      std::memcpy(static_cast<uint8_t*>(y.raw()) + static_cast<size_t>(o * kept + k) * slice,
                  static_cast<const uint8_t*>(x.raw()) + static_cast<size_t>(o * n + u.first[static_cast<size_t>(k)]) * slice, slice);
  const std::vector<int64_t>* lists[] = {&u.first, &u.inverse, &u.counts};
  for (int i = 1; i < 4; ++i)
    if (wanted(i)) {
      Tensor& t = c.alloc(i);
      std::memcpy(t.raw(), lists[i - 1]->data(), t.nbytes());
    }
}

void reverseSequence(KernelCall& c) {
  const Tensor& x = c.input(0);
  const std::vector<int64_t> lens = c.input(1).toInt64();
  const bool time_first = c.node.attrInt("time_axis", 0) == 0;
  const int64_t steps = x.dim(time_first ? 0 : 1);
  for (size_t b = 0; b < lens.size(); ++b)
    if (lens[b] < 0 || lens[b] > steps) c.error("sequence_lens[{}] = {} is outside [0, {}]", b, lens[b], steps);
  Tensor& y = c.alloc(0);
  const int64_t inner = x.dim(0) * x.dim(1) != 0 ? x.numel() / (x.dim(0) * x.dim(1)) : 0;
  kernels::reverseSequence(dtypeSize(x.dtype()), x.dim(0), x.dim(1), inner, time_first, lens.data(), x.raw(), y.raw());
}

void cumSum(KernelCall& c) {
  const Tensor& x = c.input(0);
  int64_t axis = c.input(1).toInt64().at(0);
  if (!ops::normalizeAxis(axis, x.rank())) c.error("axis {} out of range", c.input(1).toInt64().at(0));
  bool excl = c.node.attrInt("exclusive", 0) != 0, rev = c.node.attrInt("reverse", 0) != 0;
  Tensor& y = c.alloc(0);
  int64_t outer = 1, inner = 1, dim = x.dim(static_cast<int>(axis));
  for (int i = 0; i < x.rank(); ++i) {
    if (i < axis) outer *= x.dim(i);
    if (i > axis) inner *= x.dim(i);
  }
  if (x.dtype() == DType::kBool) c.unsupported("CumSum on bool is not supported");
  kernels::cumSum(x.dtype(), excl, rev, outer, dim, inner, x.raw(), y.raw());
}

void trilu(KernelCall& c) {
  const Tensor& x = c.input(0);
  int64_t k = c.has(1) ? c.input(1).toInt64().at(0) : 0;
  bool upper = c.node.attrInt("upper", 1) != 0;
  Tensor& y = c.alloc(0);
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  const int64_t mats = (rows * cols) != 0 ? x.numel() / (rows * cols) : 0;
  kernels::trilu(upper, k, mats, rows, cols, dtypeSize(x.dtype()), x.raw(), y.raw());
}

void layerNorm(KernelCall& call) {
  computeHalfAsFloat(call, [](KernelCall& c) {
    const Tensor& x = c.input(0);
    if (x.dtype() != DType::kF32) c.unsupported("LayerNormalization runs in float32 only");
    int64_t axis = c.node.attrInt("axis", -1);
    ops::normalizeAxis(axis, x.rank());
    double eps = ops::attrFloat(c.node, "epsilon");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < x.rank(); ++i) (i < axis ? outer : inner) *= x.dim(i);
    Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    auto expand = [&](const Tensor& t) {
      Tensor full(DType::kF32, norm_shape);
      Tensor tf = castTensor(t, DType::kF32, c);
      const float* p = tf.data<float>();
      float* f = full.data<float>();
      forEachBroadcast<1>(norm_shape, {&tf.shape()}, [&](int64_t o, std::array<int64_t, 1> off, std::array<int64_t, 1> st, int64_t n) {
        for (int64_t i = 0; i < n; ++i) f[o + i] = p[off[0] + i * st[0]];
      });
      return full;
    };
    Tensor scale = expand(c.input(1));
    Tensor bias = c.has(2) ? expand(c.input(2)) : Tensor(DType::kF32, norm_shape);
    Tensor& y = c.alloc(0);
    bool want_mean = c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoValue;
    bool want_inv = c.node.outputs.size() > 2 && c.node.outputs[2] != ir::kNoValue;
    float* pm = want_mean ? c.alloc(1).data<float>() : nullptr;
    float* pi = want_inv ? c.alloc(2).data<float>() : nullptr;
    // The layer kernel packages run too (a missing bias adds 0, as the zero tensor did).
    kernels::layerNorm(outer, inner, static_cast<float>(eps), x.data<float>(), scale.data<float>(),
                       c.has(2) ? bias.data<float>() : nullptr, y.data<float>(), pm, pi, c.pool);
  });
}

void eyeLike(KernelCall& c) {
  Tensor& y = c.allocZeroed(0);
  int64_t k = c.node.attrInt("k", 0), rows = y.dim(0), cols = y.dim(1);
  Tensor one = castTensor(Tensor::scalar<float>(1.0f), y.dtype(), c);
  size_t es = dtypeSize(y.dtype());
  for (int64_t i = 0; i < rows; ++i) {
    int64_t j = i + k;
    if (j >= 0 && j < cols) std::memcpy(static_cast<uint8_t*>(y.raw()) + static_cast<size_t>(i * cols + j) * es, one.raw(), es);
  }
}

// ai.npuc.Focus: y[n, k*C + c, h, w] = x[n, c, 2h + h_k, 2w + w_k] for the k-th (h_k, w_k) of 'offsets'.
void focus(KernelCall& c) {
  const Tensor& x = c.input(0);
  auto off = c.node.attrInts("offsets");
  Tensor& y = c.alloc(0);
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), OH = H / 2, OW = W / 2;
  size_t es = dtypeSize(x.dtype());
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y.raw());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t h = 0; h < OH; ++h)
          for (int64_t w = 0; w < OW; ++w) {
            int64_t si = ((n * C + ch) * H + 2 * h + off[static_cast<size_t>(2 * k)]) * W + 2 * w + off[static_cast<size_t>(2 * k + 1)];
            int64_t di = ((n * 4 * C + k * C + ch) * OH + h) * OW + w;
            std::memcpy(dst + static_cast<size_t>(di) * es, src + static_cast<size_t>(si) * es, es);
          }
}

}  // namespace

void registerIndexingKernels(KernelRegistry& r) {
  r.addFn("GatherND", gatherNd);
  r.addFn("ScatterND", scatterNd);
  r.addFn("ScatterElements", scatterElements);
  r.addFn("Scatter", scatterElements);
  r.addFn("EyeLike", eyeLike);
  r.addFn("Focus", focus, "ai.npuc");
  r.addFn("OneHot", oneHot);
  r.addFn("Compress", compress);
  r.addFn("CumSum", cumSum);
  r.addFn("Unique", unique);
  r.addFn("ReverseSequence", reverseSequence);
  r.addFn("Trilu", trilu);
  r.addFn("LayerNormalization", layerNorm);
}

}  // namespace npuc::engine
