// Schemas of indexing, scatter and cumulative ops (GatherND, ScatterND, ScatterElements, OneHot, Compress,
// CumSum, Trilu) and LayerNormalization.
#include "kernels/indexing.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

namespace npuc::ops {

namespace {
void needInt(InferContext& c, int i) {
  if (!isInteger(c.inputDType(i))) c.error("input {} must be an integer tensor, got {}", i, dtypeName(c.inputDType(i)));
}
}  // namespace

void registerIndexingOps(Registry& r) {
  r.add(makeSchema("GatherND", 2, 2, "gather slices by index tuples (batch_dims)", [](InferContext& c) {
    needInt(c, 1);
    const Shape& d = c.inputShape(0);
    const Shape& idx = c.inputShape(1);
    int64_t b = c.node().attrInt("batch_dims", 0);
    if (idx.empty()) c.error("indices must have rank >= 1");
    int64_t k = idx.back();
    if (b < 0 || b >= static_cast<int64_t>(std::min(d.size(), idx.size())) || k < 1 || b + k > static_cast<int64_t>(d.size()))
      c.error("indices {} with batch_dims {} do not fit data {}", shapeStr(idx), b, shapeStr(d));
    for (int64_t i = 0; i < b; ++i)
      if (d[static_cast<size_t>(i)] != idx[static_cast<size_t>(i)]) c.error("batch dims of data and indices differ");
    Shape out(idx.begin(), idx.end() - 1);
    out.insert(out.end(), d.begin() + b + k, d.end());
    c.setOutput(0, c.inputDType(0), out);
  }));
  r.add(makeSchema("ScatterND", 3, 3, "write updates at index tuples (reduction none/add/mul/max/min)", [](InferContext& c) {
    needInt(c, 1);
    const Shape& d = c.inputShape(0);
    const Shape& idx = c.inputShape(1);
    const Shape& u = c.inputShape(2);
    if (idx.empty() || idx.back() < 1 || idx.back() > static_cast<int64_t>(d.size())) c.error("bad indices shape {}", shapeStr(idx));
    Shape want(idx.begin(), idx.end() - 1);
    want.insert(want.end(), d.begin() + idx.back(), d.end());
    if (u != want) c.error("updates must have shape {}, got {}", shapeStr(want), shapeStr(u));
    c.setOutput(0, c.inputDType(0), d);
  }));
  auto scatterElements = [](InferContext& c) {
    needInt(c, 1);
    const Shape& d = c.inputShape(0);
    if (c.inputShape(1) != c.inputShape(2)) c.error("indices and updates must have the same shape");
    if (c.inputShape(1).size() != d.size()) c.error("indices must have the rank of data");
    int64_t axis = c.node().attrInt("axis", 0);
    if (!normalizeAxis(axis, static_cast<int64_t>(d.size()))) c.error("axis out of range");
    c.setOutput(0, c.inputDType(0), d);
  };
  r.add(makeSchema("ScatterElements", 3, 3, "write updates element by element along 'axis'", scatterElements));
  r.add(makeSchema("Scatter", 3, 3, "deprecated name of ScatterElements (opsets 9-10)", scatterElements));
  r.add(makeSchema("EyeLike", 1, 1, "ones on diagonal k of a 2-D shape, zeros elsewhere ('dtype')", [](InferContext& c) {
    if (c.inputRank(0) != 2) c.error("input must be 2-D");
    DType t = c.node().hasAttr("dtype") ? dtypeFromOnnxCode(c.node().attrInt("dtype", 1)) : c.inputDType(0);
    if (t == DType::kUndefined || t == DType::kString) c.unsupported("dtype {} is not supported", c.node().attrInt("dtype", 1));
    c.setOutput(0, t, c.inputShape(0));
  }));
  r.add(makeSchema("OneHot", 3, 3, "one-hot encoding along 'axis' with [off, on] values", [](InferContext& c) {
    Shape s = c.inputShape(0);
    if (c.inputShape(2) != Shape{2}) c.error("values must have 2 elements [off, on]");
    int64_t axis = c.node().attrInt("axis", -1);
    int64_t rank = static_cast<int64_t>(s.size()) + 1;
    if (!normalizeAxis(axis, rank)) c.error("axis {} out of range", axis);
    if (!c.knownValue(1)) {  // a computed depth: that dim open (a declaration may fix it)
      s.insert(s.begin() + axis, -1);
      c.setOutputType(0, ir::makeType(c.inputDType(2), s));
      return;
    }
    auto depth = c.inputValue(1).toDouble();
    if (depth.size() != 1 || depth[0] < 1) c.error("depth must be a positive scalar");
    s.insert(s.begin() + axis, static_cast<int64_t>(depth[0]));
    c.setOutput(0, c.inputDType(2), s);
  }));
  r.add(makeSchema("Compress", 2, 2, "select slices where condition is true (data-dependent shape)", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    const Tensor& cond = c.inputValue(1);
    if (cond.rank() != 1) c.error("condition must be 1-D");
    int64_t kept = 0;
    auto cv = cond.toDouble();
    bool has_axis = c.node().hasAttr("axis");
    int64_t axis = c.node().attrInt("axis", 0);
    int64_t limit = has_axis ? (normalizeAxis(axis, static_cast<int64_t>(in.size())) ? in[static_cast<size_t>(axis)] : -1)
                             : shapeNumel(in);
    if (limit < 0) c.error("axis {} out of range", c.node().attrInt("axis", 0));
    for (int64_t i = 0; i < std::min<int64_t>(limit, static_cast<int64_t>(cv.size())); ++i) kept += cv[static_cast<size_t>(i)] != 0;
    Shape out = has_axis ? in : Shape{kept};
    if (has_axis) out[static_cast<size_t>(axis)] = kept;
    c.setOutput(0, c.inputDType(0), out);
  }));
  r.add(makeSchema("Unique", 1, 1, "distinct elements, or slices along 'axis' (sorted or in order of appearance), "
                   "with first indices, inverse indices and counts (data-dependent shape)", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    const Tensor& x = c.inputValue(0);
    int64_t axis = c.node().attrInt("axis", 0);
    const bool has_axis = c.node().hasAttr("axis");
    if (has_axis && !normalizeAxis(axis, static_cast<int64_t>(in.size()))) c.error("axis {} is out of range for rank {}", axis, in.size());
    const kernels::AxisView v = has_axis ? kernels::around(in, static_cast<size_t>(axis)) : kernels::AxisView{1, shapeNumel(in), 1};
    const int64_t n = v.dim;
    const int64_t u = static_cast<int64_t>(kernels::unique(x.dtype(), v.outer, n, v.inner, x.raw(), c.node().attrInt("sorted", 1) != 0).first.size());
    Shape y = has_axis ? in : Shape{u};
    if (has_axis) y[static_cast<size_t>(axis)] = u;
    c.setOutput(0, c.inputDType(0), y);
    c.setOutput(1, DType::kI64, {u});
    c.setOutput(2, DType::kI64, {n});
    c.setOutput(3, DType::kI64, {u});
  }, 4));
  r.add(makeSchema("ReverseSequence", 2, 2, "reverse the first sequence_lens[b] time steps of each batch b", [](InferContext& c) {
    const Shape& x = c.inputShape(0);
    const int64_t b = c.node().attrInt("batch_axis", 1), t = c.node().attrInt("time_axis", 0);
    if (x.size() < 2) c.error("input must be at least 2-D, got {}", shapeStr(x));
    if (!((b == 0 && t == 1) || (b == 1 && t == 0))) c.error("batch_axis {} and time_axis {} must be 0 and 1", b, t);
    needInt(c, 1);
    if (c.inputShape(1) != Shape{x[static_cast<size_t>(b)]})
      c.error("sequence_lens must be [{}], got {}", x[static_cast<size_t>(b)], shapeStr(c.inputShape(1)));
    c.setOutput(0, c.inputDType(0), x);
  }));
  r.add(makeSchema("CumSum", 2, 2, "cumulative sum along an axis (exclusive, reverse)", [](InferContext& c) {
    needInt(c, 1);
    c.setOutput(0, c.inputDType(0), c.inputShape(0));
  }));
  r.add(makeSchema("Trilu", 1, 2, "upper or lower triangle of the last two dims (diagonal offset k)", [](InferContext& c) {
    if (c.inputRank(0) < 2) c.error("input must be at least 2-D");
    c.setOutput(0, c.inputDType(0), c.inputShape(0));
  }));
  r.add(makeSchema("LayerNormalization", 2, 3, "normalise over the dims from 'axis' on, then scale and shift",
               [](InferContext& c) {
                 const Shape& x = c.inputShape(0);
                 int64_t axis = attrInt(c.node(), "axis");
                 if (!normalizeAxis(axis, static_cast<int64_t>(x.size()))) c.error("axis out of range");
                 Shape stats(x.begin(), x.begin() + axis);
                 stats.resize(x.size(), 1);
                 c.setOutput(0, c.inputDType(0), x);
                 c.setOutput(1, DType::kF32, stats);
                 c.setOutput(2, DType::kF32, stats);
               },
               3).withDefault("epsilon", 1e-5f).withDefault("axis", int64_t{-1}));
}

}  // namespace npuc::ops
