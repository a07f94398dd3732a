// int8-affine QDQ runs fused into the integer layers a device runs (QConv, QGemm, QAdd, QMatMul, integer pooling and
// data movement on int8 codes; see qdq.hpp and docs/numerics.md), and the annotation of a QDQ model quantized
// elsewhere. Quantizing a float graph to QDQ is qdq.cpp.
#include "quant/qdq.hpp"

#include "engine/engine.hpp"
#include "ir/rewriter.hpp"
#include "kernels/quant.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <stdexcept>

namespace npuc::quant {

namespace {

/// A per-tensor (or per-axis) DequantizeLinear / QuantizeLinear node's constant operands.
struct QParams {
  const ir::Node* node = nullptr;
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  const Tensor* data = nullptr;  // input 0 when it is a constant (weights, bias)
};

std::optional<QParams> qparams(const ir::Graph& g, ir::ValueId v, const char* op) {
  if (v == ir::kNoValue || g.value(v).producer == ir::kNoNode) return std::nullopt;
  const ir::Node& n = g.node(g.value(v).producer);
  if (n.op != op || !n.domain.empty() || !n.hasInput(1)) return std::nullopt;
  // (no zero point: 0, ONNX's default; the integer type is then the default's too, which the callers check)
  const ir::Value& s = g.value(n.inputs[1]);
  const ir::Value* z = n.hasInput(2) ? &g.value(n.inputs[2]) : nullptr;
  if (!s.isConstant() || (z && !z->isConstant()) || s.constant->dtype() != DType::kF32) return std::nullopt;
  QParams q;
  q.node = &n;
  for (double d : s.constant->toDouble()) q.scale.push_back(static_cast<float>(d));
  q.zero_point = z ? z->constant->toInt64() : std::vector<int64_t>(q.scale.size(), 0);
  const ir::Value& x = g.value(n.inputs[0]);
  if (x.isConstant()) q.data = &*x.constant;
  return q;
}

/// How a layer's output y reaches int8: an optional fused activation (the layer's own `act`, or a Relu / Clip node
/// that is y's only reader, as in a QDQ model as exported) then a per-tensor int8 QuantizeLinear that is the only
/// reader; the activation becomes the clamp [lo, hi] in y's integer domain.
struct QuantizedOutput {
  const ir::Node* act_node = nullptr;  // the Relu / Clip node fused, if any
  const ir::Node* q = nullptr;         // the QuantizeLinear
  float scale = 0;
  int64_t zero_point = 0, lo = -128, hi = 127;
};

std::optional<QuantizedOutput> quantizedOutput(const ir::Graph& g, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs,
                                               ir::ValueId y, std::string act, float act_lo, float act_hi) {
  auto u = uses.find(y);
  if (outputs.count(y) || u == uses.end() || u->second.size() != 1) return std::nullopt;
  QuantizedOutput o;
  if (const ir::Node& r = g.node(u->second[0].first); act.empty() && r.domain.empty() && (r.op == "Relu" || r.op == "Clip") &&
                                                      r.outputs.size() == 1 && !outputs.count(r.outputs[0])) {
    auto ru = uses.find(r.outputs[0]);
    if (ru == uses.end() || ru->second.size() != 1) return std::nullopt;
    if (r.op == "Clip") {
      auto b = ops::clipBounds(g, r);
      if (!b) return std::nullopt;
      act_lo = b->first;
      act_hi = b->second;
    }
    act = r.op;
    o.act_node = &r;
    u = ru;
  }
  const ir::Node& qn = g.node(u->second[0].first);
  if (qn.op != "QuantizeLinear" || !qn.domain.empty() || qn.outputs.size() != 1) return std::nullopt;
  auto q = qparams(g, qn.outputs[0], "QuantizeLinear");
  if (!q || q->scale.size() != 1 || g.value(qn.outputs[0]).type.dtype != DType::kI8) return std::nullopt;
  o.q = &qn;
  o.scale = q->scale[0];
  if (!(o.scale > 0) || !std::isfinite(o.scale)) return std::nullopt;
  o.zero_point = q->zero_point[0];
  if (act == "Relu") {
    o.lo = o.zero_point;
  } else if (act == "Clip") {
    // (a missing bound is ±FLT_MAX: clamped before rounding)
    o.lo = std::max<int64_t>(-128, o.zero_point + std::lround(std::clamp(act_lo / o.scale, -512.0f, 512.0f)));
    o.hi = std::min<int64_t>(127, o.zero_point + std::lround(std::clamp(act_hi / o.scale, -512.0f, 512.0f)));
    if (o.lo > o.hi) return std::nullopt;
  } else if (!act.empty()) {
    return std::nullopt;
  }
  return o;
}

/// An int8 activation read through a per-tensor DequantizeLinear: its scale, zero point and the int8 value.
std::optional<QParams> int8Activation(const ir::Graph& g, ir::ValueId v) {
  auto x = qparams(g, v, "DequantizeLinear");
  if (!x || x->data || x->scale.size() != 1 || g.value(x->node->inputs[0]).type.dtype != DType::kI8) return std::nullopt;
  if (!(x->scale[0] > 0) || !std::isfinite(x->scale[0])) return std::nullopt;
  return x;
}

/// Replaces a fused run — the layer `id`, the activation node `qo` found after it, its QuantizeLinear — by one node
/// `op` (named as the layer) that writes `out`: by default the QuantizeLinear's int8 output (the caller otherwise
/// connects `out` to it).
void replaceRun(ir::Graph& g, ir::Rewriter& rw, ir::NodeId id, const QuantizedOutput& qo, const std::string& op,
                const std::string& domain, const std::vector<ir::ValueId>& ins, std::map<std::string, ir::Attr> attrs,
                ir::ValueId out = ir::kNoValue) {
  const std::string name = g.node(id).name;
  if (out == ir::kNoValue) out = qo.q->outputs[0];
  const ir::NodeId act = qo.act_node ? qo.act_node->id : ir::kNoNode;
  g.removeNode(qo.q->id);
  if (act != ir::kNoNode) rw.eraseNode(act);
  rw.eraseNode(id);
  rw.addNode(op, name, ins, {out}, domain).attrs = std::move(attrs);
}

/// Calls fuse(rw, uses, outputs, node) for each node of `g` in order (skipping nodes an earlier call removed) and
/// applies the rewrites; returns how many calls fused (returned true). The fusers below are its bodies.
template <class F>
int fuseEach(ir::Graph& g, F&& fuse) {
  ir::Rewriter rw(g);
  const ir::UseMap uses = g.uses();
  const std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
  int fused = 0;
  const std::vector<ir::NodeId> order = g.order();  // (a copy: fusing removes and adds nodes)
  for (ir::NodeId id : order) {
    if (!g.hasNode(id)) continue;
    fused += fuse(rw, uses, outputs, id) ? 1 : 0;
  }
  rw.finish();
  return fused;
}

}  // namespace

void annotateQuantized(ir::Graph& g) {
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (n.op != "QuantizeLinear" || !n.domain.empty() || n.outputs.size() != 1 || g.value(n.outputs[0]).quant) continue;
    auto q = qparams(g, n.outputs[0], "QuantizeLinear");
    if (!q || q->scale.size() != 1 || g.value(n.outputs[0]).type.dtype != DType::kI8) continue;
    g.value(n.outputs[0]).quant = ir::Quantization{q->scale[0], static_cast<int32_t>(q->zero_point[0]), g.value(n.inputs[0]).name};
  }
}

namespace {

/// What an integer product (ai.npuc QConv) needs of a Conv / Gemm `c` of a QDQ graph: an int8 input, int8 weights
/// per output channel (or per tensor) with zero point 0 whose output channels lie along `axis` of a rank-`rank`
/// weight tensor, an optional int32 bias at x_scale * w_scale[m], an int32 accumulation that cannot overflow, an
/// int8 output (+ a Relu / Clip) and the requantization multipliers; nullopt where any of it does not hold.
struct IntegerProduct {
  QParams x, w;
  std::optional<QParams> b;
  QuantizedOutput qo;
  int64_t M = 0, K = 0;
  std::vector<int64_t> mult, shift;
};

std::optional<IntegerProduct> integerProduct(const ir::Graph& g, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs,
                                             const ir::Node& c, int64_t axis, int64_t rank) {
  IntegerProduct p;
  auto x = int8Activation(g, c.inputs[0]);
  auto w = qparams(g, c.inputs[1], "DequantizeLinear");
  if (!x) return std::nullopt;
  if (!w || !w->data || w->data->dtype() != DType::kI8 || w->data->rank() != rank) return std::nullopt;
  if (std::any_of(w->zero_point.begin(), w->zero_point.end(), [](int64_t z) { return z != 0; })) return std::nullopt;
  const int64_t M = w->data->dim(axis), K = w->data->numel() / std::max<int64_t>(M, 1);
  if (w->scale.size() != 1 && static_cast<int64_t>(w->scale.size()) != M) return std::nullopt;
  // The weights' scales must be per output channel, finite and positive.
  if (w->scale.size() > 1) {  // (the axis as written: negative ones count from the end)
    int64_t waxis = w->node->attrInt("axis", 1);
    if (!ops::normalizeAxis(waxis, rank) || waxis != axis) return std::nullopt;
  }
  if (std::any_of(w->scale.begin(), w->scale.end(), [](float v) { return !(v > 0) || !std::isfinite(v); })) return std::nullopt;
  if (c.hasInput(2)) {
    p.b = qparams(g, c.inputs[2], "DequantizeLinear");
    if (!p.b || !p.b->data || p.b->data->dtype() != DType::kI32 || p.b->data->numel() != M) return std::nullopt;
    bool exact_scale = true;  // the bias must be at x_scale * w_scale[m] (quantizeToQdq writes it so)
    for (int64_t m = 0; m < M; ++m) {
      double want = double(x->scale[0]) * w->scale[w->scale.size() == 1 ? 0 : static_cast<size_t>(m)];
      double got = p.b->scale[p.b->scale.size() == 1 ? 0 : static_cast<size_t>(m)];
      exact_scale &= std::fabs(got - want) <= 1e-6 * want;
    }
    if (!exact_scale || std::any_of(p.b->zero_point.begin(), p.b->zero_point.end(), [](int64_t z) { return z != 0; }))
      return std::nullopt;
  }
  // int32 accumulation: |bias| + K * 255 * 128 + 128 (the zero point added after requantization) must stay below
  // 2^31 (docs/numerics.md).
  int64_t max_bias = 0;
  if (p.b)
    for (int64_t m = 0; m < M; ++m) max_bias = std::max<int64_t>(max_bias, std::llabs(static_cast<int64_t>(p.b->data->data<int32_t>()[m])));
  if (max_bias + K * 255 * 128 + 128 > INT32_MAX) return std::nullopt;
  auto qo = quantizedOutput(g, uses, outputs, c.outputs[0], c.attrString("activation", ""),
                            c.attrFloat("activation_alpha", 0.0f), c.attrFloat("activation_beta", 6.0f));
  if (!qo) return std::nullopt;
  for (size_t m = 0; m < w->scale.size(); ++m) {
    try {
      kernels::Multiplier mm = kernels::quantizeMultiplier(double(x->scale[0]) * w->scale[m] / qo->scale);
      p.mult.push_back(mm.m);
      p.shift.push_back(mm.shift);
    } catch (const std::invalid_argument&) {
      return std::nullopt;
    }
  }
  p.x = *x;
  p.w = *w;
  p.qo = *qo;
  p.M = M;
  p.K = K;
  return p;
}

/// An integer layer's attribute "fused" (opexp: the ONNX ops it stands for): those in `attrs` already (e.g. MatMul +
/// Add), else `op`; then the activation node fused with it, if any.
ir::Attr fusedOps(const std::map<std::string, ir::Attr>& attrs, const std::string& op, const QuantizedOutput& qo) {
  auto it = attrs.find("fused");
  const std::vector<std::string>* had = it != attrs.end() ? it->second.get<std::vector<std::string>>() : nullptr;
  std::vector<std::string> fused = had ? *had : std::vector<std::string>{op};
  if (qo.act_node) fused.push_back(qo.act_node->op);
  return ir::Attr(fused);
}

/// The attributes an integer layer of two int8 operands (QAdd, QMatMul) shares: the zero points, the output clamp, and
/// the ONNX ops it stands for (fusedOps of n).
std::map<std::string, ir::Attr> twoOperandAttrs(int32_t za, int32_t zb, int32_t zy, int32_t lo, int32_t hi, const ir::Node& n,
                                                const QuantizedOutput& qo) {
  std::map<std::string, ir::Attr> attrs;
  attrs["a_zero_point"] = ir::Attr(int64_t{za});
  attrs["b_zero_point"] = ir::Attr(int64_t{zb});
  attrs["y_zero_point"] = ir::Attr(int64_t{zy});
  attrs["y_min"] = ir::Attr(int64_t{lo});
  attrs["y_max"] = ir::Attr(int64_t{hi});
  attrs["fused"] = fusedOps(n.attrs, n.op, qo);
  return attrs;
}

/// A QConv's attributes besides its geometry: zero points, clamp, multipliers, and the ONNX ops it stands for.
void productAttrs(const IntegerProduct& p, const std::string& op, std::map<std::string, ir::Attr>& attrs) {
  attrs["x_zero_point"] = ir::Attr(p.x.zero_point[0]);
  attrs["y_zero_point"] = ir::Attr(p.qo.zero_point);
  attrs["y_min"] = ir::Attr(p.qo.lo);
  attrs["y_max"] = ir::Attr(p.qo.hi);
  attrs["multipliers"] = ir::Attr(p.mult);
  attrs["shifts"] = ir::Attr(p.shift);
  attrs["fused"] = fusedOps(attrs, op, p.qo);
}

}  // namespace

int fuseIntegerConvs(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& c = g.node(id);
    if (c.op != "Conv" || !(c.domain.empty() || c.domain == "ai.npuc") || c.outputs.size() != 1) return false;
    auto p = integerProduct(g, uses, outputs, c, 0, 4);
    if (!p) return false;
    std::vector<ir::ValueId> ins = {p->x.node->inputs[0], p->w.node->inputs[0]};
    if (p->b) ins.push_back(p->b->node->inputs[0]);
    std::map<std::string, ir::Attr> attrs;
    for (const char* a : {"group", "kernel_shape", "strides", "dilations", "pads", "auto_pad", "fused", "merged_nodes"})
      if (c.hasAttr(a)) attrs[a] = c.attrs.at(a);
    productAttrs(*p, "Conv", attrs);
    replaceRun(g, rw, id, p->qo, "QConv", "ai.npuc", ins, std::move(attrs));
    return true;
  });
}

int fuseIntegerGemms(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    const bool matmul = n.op == "MatMul";  // (a MatMul by a 2-D constant is a Gemm without transB and bias)
    if (!(n.op == "Gemm" || matmul) || !(n.domain.empty() || n.domain == "ai.npuc") || n.outputs.size() != 1) return false;
    if (matmul && n.inputs.size() != 2) return false;
    if (n.attrInt("transA", 0) != 0 || n.attrFloat("alpha", 1.0f) != 1.0f || n.attrFloat("beta", 1.0f) != 1.0f) return false;
    const bool transB = n.attrInt("transB", 0) != 0;
    auto p = integerProduct(g, uses, outputs, n, transB ? 0 : 1, 2);
    if (!p) return false;
    // The bias must add one value per output column: C of shape [M] or [1, M] (a C of [M, 1] adds one per row).
    if (p->b) {
      const Shape& cs = p->b->data->shape();
      if (!(cs.size() == 1 || (cs.size() == 2 && cs[0] == 1))) return false;
    }
    // x [N, K]; a MatMul's x may have leading dimensions ([..., R, K] by [K, M]: every row of every matrix is one
    // product row, N = their count), which its output [..., R, M] keeps.
    const ir::Type xt = g.value(p->x.node->inputs[0]).type;
    if (!xt.isStatic() || xt.shape.size() < 2 || (!matmul && xt.shape.size() != 2) || xt.shape.back() != p->K) return false;
    const int64_t M = p->M, K = p->K, N = shapeNumel(xt.shape) / std::max<int64_t>(K, 1);
    Shape y_shape = xt.shape;
    y_shape.back() = M;
    // (copies: adding values below may move the graph's values)
    const std::string x_name = g.value(p->x.node->inputs[0]).name, y_name = g.value(p->qo.q->outputs[0]).name;
    const std::optional<ir::Quantization> x_quant = g.value(p->x.node->inputs[0]).quant, y_quant = g.value(p->qo.q->outputs[0]).quant;
    // The product as a 1x1 convolution over [N, K, 1, 1]: the weights [M, K, 1, 1] (transposed from [K, M] without
    // transB), the int8 input and output reshaped around it (data movement on codes).
    Tensor w4(DType::kI8, {M, K, 1, 1});
    const int8_t* w = p->w.data->data<int8_t>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) w4.data<int8_t>()[m * K + k] = transB ? w[m * K + k] : w[k * M + m];
    const std::string name = n.name;
    const ir::ValueId wc = g.addConstant(g.uniqueValueName(g.value(p->w.node->inputs[0]).name + "/1x1"), std::move(w4)).id;
    const ir::ValueId s4c = g.addConstant(g.uniqueValueName(name + "/nchw_shape"), Tensor::fromVector<int64_t>({4}, {N, K, 1, 1})).id;
    const ir::ValueId s2c = g.addConstant(g.uniqueValueName(name + "/shape"),
                                          Tensor::fromVector<int64_t>({static_cast<int64_t>(y_shape.size())}, y_shape)).id;
    const ir::ValueId yq = p->qo.q->outputs[0];
    const ir::ValueId x4id = g.addValue(g.uniqueValueName(x_name + "/nchw"), ir::Type{DType::kI8, {N, K, 1, 1}, true}).id;
    g.value(x4id).quant = x_quant;
    const ir::ValueId y4id = g.addValue(g.uniqueValueName(y_name + "/nchw"), ir::Type{DType::kI8, {N, M, 1, 1}, true}).id;
    g.value(y4id).quant = y_quant;
    std::vector<ir::ValueId> ins = {x4id, wc};
    if (p->b) ins.push_back(p->b->node->inputs[0]);
    std::map<std::string, ir::Attr> attrs;
    for (const char* a : {"fused", "merged_nodes"})
      if (n.hasAttr(a)) attrs[a] = n.attrs.at(a);
    attrs["group"] = ir::Attr(int64_t{1});
    attrs["kernel_shape"] = ir::Attr(std::vector<int64_t>{1, 1});
    attrs["strides"] = ir::Attr(std::vector<int64_t>{1, 1});
    attrs["dilations"] = ir::Attr(std::vector<int64_t>{1, 1});
    attrs["pads"] = ir::Attr(std::vector<int64_t>{0, 0, 0, 0});
    productAttrs(*p, n.op, attrs);
    rw.addNode("Reshape", name + "/to_nchw", {p->x.node->inputs[0], s4c}, {x4id});
    replaceRun(g, rw, id, p->qo, "QConv", "ai.npuc", ins, std::move(attrs), y4id);
    rw.addNode("Reshape", name + "/from_nchw", {y4id, s2c}, {yq});
    return true;
  });
}

namespace {
/// Replaces the run of layer `id` (ending in `qo`) by an ai.npuc QAdd of a's and b's int8 values, at the scales sa and
/// sb (their zero points theirs), b's multiplier 0 where `no_b`; false (nothing changed) where qaddParams cannot hold
/// the ratios.
bool replaceByQAdd(ir::Graph& g, ir::Rewriter& rw, ir::NodeId id, const QuantizedOutput& qo, const QParams& a, double sa,
                   const QParams& b, double sb, bool no_b) {
  kernels::QAddParams p;
  try {
    p = kernels::qaddParams(sa, static_cast<int32_t>(a.zero_point[0]), sb, static_cast<int32_t>(b.zero_point[0]), qo.scale,
                            static_cast<int32_t>(qo.zero_point), static_cast<int32_t>(qo.lo), static_cast<int32_t>(qo.hi));
  } catch (const std::invalid_argument&) {
    return false;
  }
  if (no_b) p.mb = 0;
  std::map<std::string, ir::Attr> attrs = twoOperandAttrs(p.za, p.zb, p.zy, p.lo, p.hi, g.node(id), qo);
  attrs["multipliers"] = ir::Attr(std::vector<int64_t>{p.ma, p.mb});
  attrs["shift"] = ir::Attr(int64_t{p.shift});
  replaceRun(g, rw, id, qo, "QAdd", "ai.npuc", {a.node->inputs[0], b.node->inputs[0]}, std::move(attrs));
  return true;
}
}  // namespace

int fuseIntegerAdds(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if (n.op != "Add" || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    auto a = int8Activation(g, n.inputs[0]);
    auto b = int8Activation(g, n.inputs[1]);
    if (!a || !b) return false;
    const ir::Type &at = g.value(a->node->inputs[0]).type, &bt = g.value(b->node->inputs[0]).type;
    if (at.shape != bt.shape || at.shape != g.value(n.outputs[0]).type.shape) return false;  // (no broadcasting)
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    return qo && replaceByQAdd(g, rw, id, *qo, *a, a->scale[0], *b, b->scale[0], false);
  });
}

int fuseIntegerScales(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if ((n.op != "Mul" && n.op != "Div") || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    // x * c, c * x or x / c: an int8 activation and a constant scalar factor above 0.
    const int xi = n.op == "Mul" && g.value(n.inputs[0]).isConstant() ? 1 : 0;
    auto x = int8Activation(g, n.inputs[static_cast<size_t>(xi)]);
    const ir::Value& cv = g.value(n.inputs[static_cast<size_t>(1 - xi)]);
    if (!x || !cv.isConstant() || cv.constant->numel() != 1 || cv.constant->dtype() != DType::kF32) return false;
    const double c0 = cv.constant->toDouble()[0], c = n.op == "Div" ? 1.0 / c0 : c0;
    if (!(c > 0) || !std::isfinite(c)) return false;
    if (g.value(n.outputs[0]).type.shape != g.value(x->node->inputs[0]).type.shape) return false;  // (no broadcasting)
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    // (y = x * c as the addition x + x at scale sx * c, the second operand's multiplier 0: (x - zx) * ma, one
    // rounding shift)
    return qo && replaceByQAdd(g, rw, id, *qo, *x, x->scale[0] * c, *x, x->scale[0] * c, true);
  });
}

int fuseIntegerMatMuls(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if (n.op != "MatMul" || !(n.domain.empty() || n.domain == "ai.npuc") || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    auto a = int8Activation(g, n.inputs[0]);
    auto b = int8Activation(g, n.inputs[1]);
    if (!a || !b) return false;
    const ir::Type &at = g.value(a->node->inputs[0]).type, &bt = g.value(b->node->inputs[0]).type;
    if (!at.isStatic() || !bt.isStatic() || at.shape.size() < 2 || bt.shape.size() < 2) return false;  // (1-D operands stay float)
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], n.attrString("activation", ""), n.attrFloat("activation_alpha", 0.0f),
                              n.attrFloat("activation_beta", 6.0f));
    if (!qo) return false;
    kernels::QMatMulParams p;
    try {
      p = kernels::qmatmulParams(a->scale[0], static_cast<int32_t>(a->zero_point[0]), b->scale[0], static_cast<int32_t>(b->zero_point[0]),
                                 qo->scale, static_cast<int32_t>(qo->zero_point), at.shape.back(), static_cast<int32_t>(qo->lo),
                                 static_cast<int32_t>(qo->hi));
    } catch (const std::invalid_argument&) {
      return false;  // (a depth past int32 sums, or a factor of 2^30 or more: float between its Q / DQ layers)
    }
    std::map<std::string, ir::Attr> attrs = twoOperandAttrs(p.za, p.zb, p.zy, p.lo, p.hi, n, *qo);
    attrs["multiplier"] = ir::Attr(int64_t{p.mul.m});
    attrs["shift"] = ir::Attr(int64_t{p.mul.shift});
    replaceRun(g, rw, id, *qo, "QMatMul", "ai.npuc", {a->node->inputs[0], b->node->inputs[0]}, std::move(attrs));
    return true;
  });
}

namespace {
/// DequantizeLinear -> AveragePool (+ Relu / Clip) -> QuantizeLinear -> ai.npuc QAvgPool (the window attributes kept).
bool fuseIntegerAvgPool(ir::Graph& g, ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.outputs.size() != 1 || n.hasAttr("storage_order")) return false;
  auto x = int8Activation(g, n.inputs[0]);
  if (!x) return false;
  const ir::Type& xt = g.value(x->node->inputs[0]).type;
  const Shape& xs = xt.shape;
  if ((xs.size() != 3 && xs.size() != 4) || !xt.isStatic()) return false;
  int64_t taps = 1;
  try {
    const ops::Window w = ops::resolvePoolWindow(n, xs);
    for (int64_t k : w.kernel) taps *= k;
  } catch (const Error&) {
    return false;
  }
  auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
  if (!qo || taps > kernels::kMaxAvgPoolTaps) return false;
  kernels::QAvgPoolParams p;
  try {
    p = kernels::qavgPoolParams(x->scale[0], static_cast<int32_t>(x->zero_point[0]), qo->scale, static_cast<int32_t>(qo->zero_point),
                                taps, static_cast<int32_t>(qo->lo), static_cast<int32_t>(qo->hi));
  } catch (const std::invalid_argument&) {
    return false;
  }
  std::map<std::string, ir::Attr> attrs;
  for (const char* a : {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "count_include_pad", "dilations"})
    if (n.hasAttr(a)) attrs[a] = n.attrs.at(a);
  std::vector<int64_t> m, sh;
  for (const kernels::Multiplier& k : p.mul) m.push_back(k.m), sh.push_back(k.shift);
  attrs["x_zero_point"] = ir::Attr(int64_t{p.zx});
  attrs["y_zero_point"] = ir::Attr(int64_t{p.zy});
  attrs["y_min"] = ir::Attr(int64_t{p.lo});
  attrs["y_max"] = ir::Attr(int64_t{p.hi});
  attrs["multipliers"] = ir::Attr(m);
  attrs["shifts"] = ir::Attr(sh);
  attrs["fused"] = ir::Attr(qo->act_node ? std::vector<std::string>{n.op, qo->act_node->op} : std::vector<std::string>{n.op});
  replaceRun(g, rw, id, *qo, "QAvgPool", "ai.npuc", {x->node->inputs[0]}, std::move(attrs));
  return true;
}
}  // namespace

int fuseIntegerPools(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if ((n.op != "GlobalAveragePool" && n.op != "AveragePool") || !n.domain.empty() || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
    if (n.op == "AveragePool") return fuseIntegerAvgPool(g, rw, uses, outputs, id);
    auto x = int8Activation(g, n.inputs[0]);
    if (!x) return false;
    const ir::Type& xt = g.value(x->node->inputs[0]).type;
    const Shape& xs = xt.shape;
    if (xs.size() < 3 || !xt.isStatic()) return false;
    int64_t count = 1;
    for (size_t i = 2; i < xs.size(); ++i) count *= xs[i];
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    if (!qo) return false;
    kernels::QGlobalAvgPoolParams p;
    try {
      p = kernels::qglobalAvgPoolParams(x->scale[0], static_cast<int32_t>(x->zero_point[0]), qo->scale,
                                        static_cast<int32_t>(qo->zero_point), count, static_cast<int32_t>(qo->lo),
                                        static_cast<int32_t>(qo->hi));
    } catch (const std::invalid_argument&) {
      return false;
    }
    std::map<std::string, ir::Attr> attrs;
    attrs["x_zero_point"] = ir::Attr(int64_t{p.zx});
    attrs["y_zero_point"] = ir::Attr(int64_t{p.zy});
    attrs["y_min"] = ir::Attr(int64_t{p.lo});
    attrs["y_max"] = ir::Attr(int64_t{p.hi});
    attrs["multiplier"] = ir::Attr(int64_t{p.mul.m});
    attrs["shift"] = ir::Attr(int64_t{p.mul.shift});
    attrs["fused"] = ir::Attr(qo->act_node ? std::vector<std::string>{n.op, qo->act_node->op} : std::vector<std::string>{n.op});
    replaceRun(g, rw, id, *qo, "QGlobalAvgPool", "ai.npuc", {x->node->inputs[0]}, std::move(attrs));
    return true;
  });
}

namespace {
/// Symmetric int8 codes of a weight tensor [dirs, rows, k] per row (scale max |w| / 127, 1 for an all-zero row),
/// into `codes` (the tensor's shape), the scales appended to `scales`.
void int8Rows(const Tensor& w, Tensor& codes, std::vector<float>& scales) {
  const std::vector<double> v = w.toDouble();
  const int64_t k = w.shape().back(), rows = w.numel() / std::max<int64_t>(k, 1);
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0;
    for (int64_t i = 0; i < k; ++i) m = std::max(m, std::abs(v[static_cast<size_t>(r * k + i)]));
    const float sc = m > 0 ? static_cast<float>(m / 127.0) : 1.0f;
    scales.push_back(sc);
    for (int64_t i = 0; i < k; ++i)
      codes.data<int8_t>()[r * k + i] = static_cast<int8_t>(std::clamp<long>(std::lround(v[static_cast<size_t>(r * k + i)] / sc), -127, 127));
  }
}
}  // namespace

int fuseIntegerRecurrents(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if (!n.domain.empty() || (n.op != "LSTM" && n.op != "GRU") || n.inputs.size() < 3) return false;
    const bool lstm = n.op == "LSTM";
    auto x = int8Activation(g, n.inputs[0]);
    if (!x || x->zero_point.size() != 1) return false;
    for (int i : {1, 2})
      if (!g.value(n.inputs[static_cast<size_t>(i)]).isConstant() || g.value(n.inputs[static_cast<size_t>(i)]).constant->dtype() != DType::kF32)
        return false;
    // The activations ONNX defaults to (the state within [-1, 1]: its int8 codes at 1/127), no alphas / betas.
    if (n.hasAttr("activation_alpha") || n.hasAttr("activation_beta")) return false;
    if (auto it = n.attrs.find("activations"); it != n.attrs.end()) {
      const auto* names = it->second.get<std::vector<std::string>>();
      if (!names) return false;
      for (size_t i = 0; i < names->size(); ++i) {
        std::string a = (*names)[i];
        std::transform(a.begin(), a.end(), a.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        const size_t per = lstm ? 3 : 2;
        if (a != (i % per == 0 ? "sigmoid" : "tanh")) return false;
      }
    }
    // The state's codes lie at 1/127: a constant initial state outside [-1, 1] keeps the float form (one the model
    // computes or takes as an input — a stream's last state — is taken as LSTM and GRU states lie inside).
    if (n.hasInput(5) && g.value(n.inputs[5]).isConstant())
      for (double v : g.value(n.inputs[5]).constant->toDouble())
        if (!(std::abs(v) <= 1.0)) return false;
    // Its package layer's references fit one descriptor (8: x, W, the float part, the optional inputs, the outputs).
    int refs = 3;
    for (int i : {4, 5, 6}) refs += (i < 6 || lstm) && n.hasInput(i);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      refs += n.outputs[o] != ir::kNoValue && (uses.count(n.outputs[o]) || outputs.count(n.outputs[o]));
    const Tensor& w = *g.value(n.inputs[1]).constant;
    const Tensor& r = *g.value(n.inputs[2]).constant;
    // Integer sums within int32: 255 · 127 per term.
    if (refs > 8 || w.shape().size() != 3 || r.shape().size() != 3 || std::max(w.shape()[2], r.shape()[2]) > (int64_t{1} << 16)) return false;
    Tensor wq(DType::kI8, w.shape()), rq(DType::kI8, r.shape());
    std::vector<float> scales;
    int8Rows(w, wq, scales);
    int8Rows(r, rq, scales);
    const int64_t rows = static_cast<int64_t>(scales.size()) / 2;
    std::vector<ir::ValueId> ins(9, ir::kNoValue);
    ins[0] = x->node->inputs[0];
    ins[1] = g.addConstant(g.uniqueValueName(n.name + "/W_int8"), std::move(wq)).id;
    ins[2] = g.addConstant(g.uniqueValueName(n.name + "/R_int8"), std::move(rq)).id;
    for (int i = 3; i < (lstm ? 8 : 6); ++i)
      if (n.hasInput(i)) ins[static_cast<size_t>(i)] = n.inputs[static_cast<size_t>(i)];
    ins[8] = g.addConstant(g.uniqueValueName(n.name + "/scales"), Tensor::fromVector<float>({2, rows}, scales)).id;
    std::map<std::string, ir::Attr> attrs = n.attrs;
    attrs["cell"] = ir::Attr(n.op);
    attrs["x_scale"] = ir::Attr(x->scale[0]);
    attrs["x_zero_point"] = ir::Attr(x->zero_point[0]);
    const std::string name = n.name;
    const std::vector<ir::ValueId> outs = n.outputs;
    rw.eraseNode(id);
    rw.addNode("QRecurrent", name, ins, outs, "ai.npuc").attrs = std::move(attrs);
    return true;
  });
}

int fuseIntegerDataMovement(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    const bool concat = n.op == "Concat" && n.domain.empty();
    if (!concat && !movesValues(n)) return false;
    if (n.outputs.size() != 1 && !(n.op == "MaxPool" && n.outputs.size() == 2 && n.outputs[1] == ir::kNoValue)) return false;
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    if (!qo || qo->act_node) return false;
    // The data inputs (all of a Concat's, the first of the others: Reshape's shape is a constant) must be int8
    // codes with the output's scale and zero point.
    const size_t data = concat ? n.inputs.size() : 1;
    std::vector<ir::ValueId> ins = n.inputs;
    bool ok = true;
    for (size_t i = 0; i < data && ok; ++i) {
      auto x = int8Activation(g, n.inputs[i]);
      ok = x && x->scale[0] == qo->scale && x->zero_point[0] == qo->zero_point;
      if (ok) ins[i] = x->node->inputs[0];
    }
    if (!ok) return false;
    if (n.op == "MaxPool" && n.attrFloat("pad_value", -INFINITY) != -INFINITY) return false;  // (a folded Pad's value is a float)
    const std::string op = n.op, domain = n.domain;
    replaceRun(g, rw, id, *qo, op, domain, ins, n.attrs);
    return true;
  });
}

int fuseIntegerMuls(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if (n.op != "Mul" || !n.domain.empty() || n.numInputs() != 2 || n.outputs.size() != 1) return false;
    auto x0 = int8Activation(g, n.inputs[0]), x1 = int8Activation(g, n.inputs[1]);
    if (!x0 || !x1) return false;
    const ir::Type &t0 = g.value(n.inputs[0]).type, &t1 = g.value(n.inputs[1]).type, &ty = g.value(n.outputs[0]).type;
    if (!t0.isStatic() || !t1.isStatic() || !ty.isStatic()) return false;
    // a: the operand of the output's shape; b: the same shape, or a's leading dimensions then 1s (a gate per plane).
    const bool swap = t0.shape != ty.shape;
    const QParams& a = swap ? *x1 : *x0;
    const QParams& b = swap ? *x0 : *x1;
    const Shape &as = swap ? t1.shape : t0.shape, &bs = swap ? t0.shape : t1.shape;
    if (as != ty.shape || !kernels::qmulShapes(as, bs, as.size(), bs.size())) return false;
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    if (!qo) return false;
    kernels::QMulParams p;
    try {
      p = kernels::qmulParams(a.scale[0], static_cast<int32_t>(a.zero_point[0]), b.scale[0], static_cast<int32_t>(b.zero_point[0]), qo->scale,
                              static_cast<int32_t>(qo->zero_point), static_cast<int32_t>(qo->lo), static_cast<int32_t>(qo->hi));
    } catch (const std::invalid_argument&) {
      return false;
    }
    std::map<std::string, ir::Attr> attrs = twoOperandAttrs(p.za, p.zb, p.zy, p.lo, p.hi, n, *qo);
    attrs["multiplier"] = ir::Attr(int64_t{p.mul.m});
    attrs["shift"] = ir::Attr(int64_t{p.mul.shift});
    replaceRun(g, rw, id, *qo, "QMul", "ai.npuc", {a.node->inputs[0], b.node->inputs[0]}, std::move(attrs));
    return true;
  });
}

int fuseIntegerLookups(ir::Graph& g) {
  static const std::set<std::string> unary = {
#define NPUC_UNARY_OP(E, name, alpha, beta) name,
#include "kernels/elementwise_ops.def"
#undef NPUC_UNARY_OP
  };
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if (!(n.domain.empty() || n.domain == "ai.npuc") || !unary.count(n.op) || n.op == "Relu" || n.op == "Clip" || n.op == "Identity" ||
        n.numInputs() != 1 || n.outputs.size() != 1)
      return false;
    auto x = int8Activation(g, n.inputs[0]);
    if (!x) return false;
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    if (!qo || g.value(qo->q->outputs[0]).type.dtype != DType::kI8) return false;
    // The table: the run itself (dequantize, the op, a fused Relu / Clip, quantize) on the reference engine over all
    // 256 codes — the same float operations, so the same codes, as the QDQ model computes.
    ir::Graph m;
    m.opset = g.opset;
    const ir::ValueId codes = m.addValue("codes", ir::makeType(DType::kI8, {256})).id;
    m.inputs().push_back(codes);
    auto copyNode = [&](const ir::Node& src, ir::ValueId in, const std::string& out) {
      std::vector<ir::ValueId> ins = {in};
      for (size_t k = 1; k < src.inputs.size(); ++k)
        ins.push_back(src.inputs[k] == ir::kNoValue ? ir::kNoValue
                                                    : m.addConstant(m.uniqueValueName(g.value(src.inputs[k]).name), *g.value(src.inputs[k]).constant).id);
      const ir::ValueId o = m.addValue(out).id;
      m.addNode(src.op, src.name, ins, {o}, src.domain).attrs = src.attrs;
      return o;
    };
    for (const ir::Node* c : {x->node, qo->act_node, qo->q})
      if (c)
        for (size_t k = 1; k < c->inputs.size(); ++k)
          if (c->inputs[k] != ir::kNoValue && !g.value(c->inputs[k]).isConstant()) return false;
    ir::ValueId v = copyNode(*x->node, codes, "x");
    v = copyNode(n, v, "f");
    if (qo->act_node) v = copyNode(*qo->act_node, v, "act");
    v = copyNode(*qo->q, v, "y");
    m.outputs().push_back(v);
    std::vector<int64_t> table(256);
    try {
      ops::inferShapes(m);
      engine::EngineOptions eo;
      eo.threads = 1;
      eo.fuse_activations = false;
      Tensor all(DType::kI8, Shape{256});
      for (int c = 0; c < 256; ++c) all.data<int8_t>()[c] = static_cast<int8_t>(c - 128);
      const Tensor y = engine::Engine(m, eo).run(std::vector<Tensor>{all})[0];
      if (y.dtype() != DType::kI8 || y.numel() != 256) return false;
      for (int c = 0; c < 256; ++c) table[static_cast<size_t>(c)] = y.data<int8_t>()[c];
    } catch (const Error&) {  // (an op the engine cannot run on a 1-D tensor: left as it is)
      return false;
    }
    std::map<std::string, ir::Attr> attrs;
    attrs["table"] = ir::Attr(table);
    attrs["fused"] = ir::Attr(qo->act_node ? std::vector<std::string>{n.op, qo->act_node->op} : std::vector<std::string>{n.op});
    replaceRun(g, rw, id, *qo, "QLookup", "ai.npuc", {x->node->inputs[0]}, std::move(attrs));
    return true;
  });
}

}  // namespace npuc::quant
