// to-standard-onnx: npuc's own forms written back as standard ONNX where ONNX has the ops, for a model saved to be
// read by other tools (-SaveOptOnnx, --save-onnx): a Conv / ConvTranspose / Gemm / MatMul with a fused activation
// becomes the plain op and the activation after it; Swish, Mish and HardSwish (below opset 14) their ONNX ops
// (Sigmoid + Mul, Softplus + Tanh + Mul, HardSigmoid + Mul); Focus its four Slices and Concat; a MaxPool padded with
// its own value a Pad and a MaxPool. Ops with no ONNX form (pre/post-processing, integer layers) stay in ai.npuc.
#include "ops/registry.hpp"
#include "passes/passes.hpp"

#include <cmath>

namespace npuc::passes {

namespace {

struct Builder {
  ir::Graph& g;
  std::string base;  // names of the new values and nodes

  ir::ValueId value(const std::string& tag, const ir::Type& t) { return g.addValue(g.uniqueValueName(base + "/" + tag), t).id; }
  ir::ValueId constant(const std::string& tag, Tensor t) { return g.addConstant(g.uniqueValueName(base + "/" + tag), std::move(t)).id; }
  ir::Node& node(const std::string& op, const std::string& tag, std::vector<ir::ValueId> in, std::vector<ir::ValueId> out) {
    return g.addNode(op, base + "/" + tag, std::move(in), std::move(out));
  }
};

Tensor ints(const std::vector<int64_t>& v) {
  Tensor t(DType::kI64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

/// y = act(x) as ONNX nodes (x's type for the intermediates); false for an activation npuc cannot write so.
bool emitActivation(Builder& b, const std::string& act, float alpha, float beta, ir::ValueId x, ir::ValueId y) {
  ir::Graph& g = b.g;
  const ir::Type t = g.value(x).type;
  if (act == "Relu" || act == "Sigmoid" || act == "Tanh") {
    b.node(act, act, {x}, {y});
  } else if (act == "LeakyRelu") {
    b.node(act, act, {x}, {y}).attrs["alpha"] = ir::Attr(alpha);
  } else if (act == "HardSigmoid") {
    ir::Node& n = b.node(act, act, {x}, {y});
    n.attrs["alpha"] = ir::Attr(alpha);
    n.attrs["beta"] = ir::Attr(beta);
  } else if (act == "Clip") {
    if (g.opset >= 11) {
      b.node("Clip", "Clip", {x, b.constant("min", Tensor::scalar<float>(alpha)), b.constant("max", Tensor::scalar<float>(beta))}, {y});
    } else {
      ir::Node& n = b.node("Clip", "Clip", {x}, {y});
      n.attrs["min"] = ir::Attr(alpha);
      n.attrs["max"] = ir::Attr(beta);
    }
  } else if (act == "HardSwish") {
    if (g.opset >= 14) {
      b.node("HardSwish", "HardSwish", {x}, {y});
    } else {  // x * HardSigmoid(x; 1/6, 1/2)
      ir::ValueId h = b.value("hard_sigmoid", t);
      ir::Node& n = b.node("HardSigmoid", "HardSigmoid", {x}, {h});
      n.attrs["alpha"] = ir::Attr(1.0f / 6);
      n.attrs["beta"] = ir::Attr(0.5f);
      b.node("Mul", "Mul", {x, h}, {y});
    }
  } else if (act == "Swish") {  // x * Sigmoid(x)
    ir::ValueId s = b.value("sigmoid", t);
    b.node("Sigmoid", "Sigmoid", {x}, {s});
    b.node("Mul", "Mul", {x, s}, {y});
  } else if (act == "Mish") {  // x * Tanh(Softplus(x))
    ir::ValueId sp = b.value("softplus", t), th = b.value("tanh", t);
    b.node("Softplus", "Softplus", {x}, {sp});
    b.node("Tanh", "Tanh", {sp}, {th});
    b.node("Mul", "Mul", {x, th}, {y});
  } else {
    return false;
  }
  return true;
}

bool rewrite(ir::Graph& g, ir::NodeId id) {
  ir::Node& n = g.node(id);
  if (n.domain != "ai.npuc" || n.outputs.size() != 1) return false;
  Builder b{g, n.name};
  const ir::ValueId y = n.outputs[0];
  const bool mac = n.op == "Conv" || n.op == "ConvTranspose" || n.op == "Gemm" || n.op == "MatMul";
  if (mac) {
    const std::string act = n.attrString("activation", "");
    const float alpha = n.attrFloat("activation_alpha", 0), beta = n.attrFloat("activation_beta", 0);
    std::map<std::string, ir::Attr> attrs = n.attrs;
    for (const char* a : {"activation", "activation_alpha", "activation_beta", "fused", "activation_source", "activation_ops"}) attrs.erase(a);
    if (!ops::findSchema("", n.op)) return false;
    std::vector<ir::ValueId> in = n.inputs;
    const std::string op = n.op, name = n.name;
    if (act.empty()) {
      n.domain.clear();
      n.attrs = attrs;
      return true;
    }
    ir::Value& out = g.value(y);
    const ir::ValueId pre = b.value("pre_activation", out.type);
    g.removeNode(id);
    g.addNode(op, name, in, {pre}).attrs = attrs;
    if (!emitActivation(b, act, alpha, beta, pre, y)) fail(ErrorCode::kInternal, "{}: activation '{}' has no ONNX form", name, act);
    return true;
  }
  if (n.op == "Swish" || n.op == "Mish" || n.op == "HardSwish") {
    const std::string op = n.op;
    const ir::ValueId x = n.inputs[0];
    g.removeNode(id);
    return emitActivation(b, op, 0, 0, x, y);
  }
  if (n.op == "Focus") {  // four Slices (starts h, w; step 2 on H and W) and a Concat on channels, in 'offsets' order
    const std::vector<int64_t> off = n.attrInts("offsets");
    const ir::ValueId x = n.inputs[0];
    const ir::Type xt = g.value(x).type;
    if (off.size() != 8 || !xt.isStatic()) return false;
    g.removeNode(id);
    ir::Type part = xt;
    part.shape[2] /= 2;
    part.shape[3] /= 2;
    const ir::ValueId ends = b.constant("ends", ints({xt.shape[2], xt.shape[3]})), axes = b.constant("axes", ints({2, 3})),
                      steps = b.constant("steps", ints({2, 2}));
    std::vector<ir::ValueId> parts;
    for (size_t i = 0; i < 4; ++i) {
      parts.push_back(b.value("part", part));
      b.node("Slice", "Slice", {x, b.constant("starts", ints({off[2 * i], off[2 * i + 1]})), ends, axes, steps}, {parts.back()});
    }
    b.node("Concat", "Concat", parts, {y}).attrs["axis"] = ir::Attr(int64_t{1});
    return true;
  }
  if (n.op == "MaxPool" && n.hasAttr("pad_value")) {  // Pad with the value, then MaxPool without pads
    const ir::ValueId x = n.inputs[0];
    const ir::Type xt = g.value(x).type;
    std::vector<int64_t> pads = n.attrInts("pads");
    const size_t sp = xt.shape.size() - 2;
    if (!xt.isStatic() || pads.size() != 2 * sp) return false;
    const float value = n.attrFloat("pad_value", 0);
    std::map<std::string, ir::Attr> attrs = n.attrs;
    for (const char* a : {"pad_value", "fused", "pads"}) attrs.erase(a);
    const std::string name = n.name;
    g.removeNode(id);
    std::vector<int64_t> full(2 * (sp + 2), 0);  // ONNX Pad: begins of every axis, then ends
    ir::Type padded = xt;
    for (size_t i = 0; i < sp; ++i) {
      full[2 + i] = pads[i];
      full[sp + 4 + i] = pads[sp + i];
      padded.shape[2 + i] += pads[i] + pads[sp + i];
    }
    const ir::ValueId p = b.value("padded", padded);
    if (g.opset >= 11) {
      b.node("Pad", "Pad", {x, b.constant("pads", ints(full)), b.constant("value", Tensor::scalar<float>(value))}, {p});
    } else {
      ir::Node& pn = b.node("Pad", "Pad", {x}, {p});
      pn.attrs["pads"] = ir::Attr(full);
      pn.attrs["value"] = ir::Attr(value);
    }
    g.addNode("MaxPool", name, {p}, {y}).attrs = attrs;
    return true;
  }
  return false;
}

}  // namespace

bool ToStandardOnnxPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  const std::vector<ir::NodeId> order = g.order();
  for (ir::NodeId id : order)
    if (g.hasNode(id)) changed |= rewrite(g, id);
  if (changed) g.topoSort();
  return changed;
}

}  // namespace npuc::passes
