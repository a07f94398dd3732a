// QLinearConv / QLinearMatMul on import: see qlinear.hpp.
#include "frontend/onnx/qlinear.hpp"

#include "support/error.hpp"

#include <vector>

namespace npuc::onnx_io {

bool isExpandedOnImport(const std::string& domain, const std::string& op) {
  return (domain.empty() || domain == "ai.onnx") && (op == "QLinearConv" || op == "QLinearMatMul");
}

namespace {

/// The rank-1 length of a scale given as an initializer or a declared input (-1: unknown or not rank 1).
int64_t vectorLength(const ir::Graph& g, ir::ValueId v) {
  const ir::Type& t = g.value(v).type;
  return t.rank_known && t.shape.size() == 1 && t.shape[0] > 0 ? t.shape[0] : -1;
}

/// x_scale * w_scale as a new float32 constant (w_scale's shape: a scalar, [1] or [M]; x_scale one value), float
/// products as ONNX's Mul; kNoValue where either is not a float32 constant of that form.
ir::ValueId biasScale(ir::Graph& g, ir::ValueId xs, ir::ValueId ws, const std::string& name) {
  const ir::Value &x = g.value(xs), &w = g.value(ws);
  if (!x.isConstant() || !w.isConstant() || x.constant->dtype() != DType::kF32 || w.constant->dtype() != DType::kF32 ||
      x.constant->numel() != 1 || w.constant->rank() > 1)
    return ir::kNoValue;
  const float sx = x.constant->data<float>()[0];
  std::vector<float> s(static_cast<size_t>(w.constant->numel()));
  for (size_t i = 0; i < s.size(); ++i) s[i] = sx * w.constant->data<float>()[i];
  return g.addConstant(g.uniqueValueName(name), Tensor::fromVector<float>(w.constant->shape(), s)).id;
}

}  // namespace

int expandQLinearOps(ir::Graph& g) {
  int expanded = 0;
  const std::vector<ir::NodeId> order = g.order();
  for (ir::NodeId id : order) {
    if (!isExpandedOnImport(g.node(id).domain, g.node(id).op)) continue;
    const ir::Node n = g.node(id);  // (a copy: the node is removed below)
    const bool conv = n.op == "QLinearConv";
    const size_t min_in = 8, max_in = conv ? 9 : 8;
    if (n.inputs.size() < min_in || n.inputs.size() > max_in || n.outputs.size() != 1)
      fail(ErrorCode::kInvalidInput, "{}: {} takes {} inputs and 1 output, not {} and {}", n.label(), n.op,
           conv ? "8 or 9" : "8", n.inputs.size(), n.outputs.size());
    for (size_t i = 0; i < min_in; ++i)  // (the scales and zero points too: the output's type is its zero point's)
      if (n.inputs[i] == ir::kNoValue) {
        static const char* const kConv[] = {"x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point"};
        static const char* const kMatMul[] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"};
        fail(ErrorCode::kInvalidInput, "{}: input {} ({}) of {} is required", n.label(), i, conv ? kConv[i] : kMatMul[i], n.op);
      }
    auto value = [&](const std::string& suffix) { return g.addValue(g.uniqueValueName(n.name + suffix)).id; };
    // QLinearConv's x and y per tensor (the spec's scalars: a vector where the shape is known is refused); w per
    // output channel (axis 0) where its scale is a vector. QLinearMatMul's a and y per tensor or per row (axis -2),
    // b per column (axis -1). From opset 13 (the first whose DequantizeLinear / QuantizeLinear have `axis`) the axes
    // are set whether or not the scales' shapes are known yet (a per-tensor scale ignores its axis); before it only
    // where a scale is known to be a vector (the exported model then needs opset 13 for that node).
    if (conv)
      for (int i : {1, 6})
        if (vectorLength(g, n.inputs[static_cast<size_t>(i)]) > 1)
          fail(ErrorCode::kInvalidInput, "{}: {} must be a scalar (QLinearConv quantizes {} per tensor), not {} values",
               n.label(), i == 1 ? "x_scale" : "y_scale", i == 1 ? "x" : "y", vectorLength(g, n.inputs[static_cast<size_t>(i)]));
    const ir::ValueId xf = value("_x_dequantized"), wf = value(conv ? "_w_dequantized" : "_b_dequantized");
    ir::Node& dx = g.addNode("DequantizeLinear", n.name + "_DequantizeLinear_x", {n.inputs[0], n.inputs[1], n.inputs[2]}, {xf});
    auto setAxis = [&](ir::Node& q, ir::ValueId scale, int64_t axis) {
      if (g.opset >= 13 || vectorLength(g, scale) > 1) q.attrs["axis"] = ir::Attr(axis);
    };
    if (!conv) setAxis(dx, n.inputs[1], -2);
    ir::Node& dw = g.addNode("DequantizeLinear", n.name + (conv ? "_DequantizeLinear_w" : "_DequantizeLinear_b"),
                             {n.inputs[3], n.inputs[4], n.inputs[5]}, {wf});
    setAxis(dw, n.inputs[4], conv ? 0 : -1);
    std::vector<ir::ValueId> ins = {xf, wf};
    if (conv && n.inputs.size() == 9 && n.inputs[8] != ir::kNoValue) {
      // The bias: int32 at x_scale * w_scale, zero point 0 (QLinearConv's definition); the product a constant where
      // both scales are (the integer passes read it before constants are folded), else a Mul.
      const ir::ValueId bf = value("_bias_dequantized");
      ir::ValueId bs = biasScale(g, n.inputs[1], n.inputs[4], n.name + "_bias_scale");
      if (bs == ir::kNoValue) {
        bs = value("_bias_scale");
        g.addNode("Mul", n.name + "_bias_scale", {n.inputs[1], n.inputs[4]}, {bs});
      }
      ir::Node& db = g.addNode("DequantizeLinear", n.name + "_DequantizeLinear_bias", {n.inputs[8], bs}, {bf});
      db.attrs["axis"] = ir::Attr(int64_t{0});
      ins.push_back(bf);
    }
    const ir::ValueId yf = value("_y_float");
    ir::Node& layer = g.addNode(conv ? "Conv" : "MatMul", n.name, std::move(ins), {yf});
    if (conv) layer.attrs = n.attrs;
    else if (!n.attrs.empty())
      fail(ErrorCode::kInvalidInput, "{}: QLinearMatMul has no attribute '{}'", n.label(), n.attrs.begin()->first);
    g.removeNode(id);
    ir::Node& qy = g.addNode("QuantizeLinear", n.name + "_QuantizeLinear", {yf, n.inputs[6], n.inputs[7]}, {n.outputs[0]});
    if (!conv) setAxis(qy, n.inputs[6], -2);
    ++expanded;
  }
  if (expanded > 0) g.topoSort();
  return expanded;
}

}  // namespace npuc::onnx_io
