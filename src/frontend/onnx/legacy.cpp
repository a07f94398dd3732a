// Legacy (opset < 7) canonicalisation on import.
#include "frontend/onnx/legacy.hpp"

#include "support/error.hpp"

#include <set>

namespace npuc::onnx_io {

namespace {

/// Makes `v` broadcast numpy-style against a tensor of rank `rank` as if aligned at `axis`: appends
/// rank - axis - rank(v) trailing ones (by reshaping a constant, or inserting a Reshape node).
ir::ValueId alignAt(ir::Graph& g, ir::Node& n, ir::ValueId v, int64_t axis, int64_t rank) {
  const ir::Value& val = g.value(v);
  if (!val.type.rank_known)
    fail(ErrorCode::kUnsupported, "{}: legacy broadcasting needs the shape of '{}'", n.label(), val.name);
  Shape s = val.type.shape;
  int64_t ones = rank - axis - static_cast<int64_t>(s.size());
  if (ones < 0) fail(ErrorCode::kInvalidInput, "{}: legacy broadcast of '{}' at axis {} does not fit", n.label(), val.name, axis);
  if (ones == 0) return v;
  s.insert(s.end(), static_cast<size_t>(ones), 1);
  if (val.constant) {
    Tensor t = val.constant->reshaped(s);
    return g.addConstant(g.uniqueValueName(val.name + "_aligned"), t).id;
  }
  Tensor shape = Tensor::fromVector<int64_t>({static_cast<int64_t>(s.size())}, std::vector<int64_t>(s.begin(), s.end()));
  ir::ValueId sv = g.addConstant(g.uniqueValueName(val.name + "_aligned_shape"), shape).id;
  ir::ValueId out = g.addValue(g.uniqueValueName(val.name + "_aligned"), ir::makeType(val.type.dtype, s)).id;
  g.addNode("Reshape", n.name + "_legacy_broadcast", {v, sv}, {out});
  return out;
}

}  // namespace

void canonicalizeLegacyNode(ir::Graph& g, ir::NodeId id) {
  static const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor",
                                                "Equal", "Greater", "Less"};
  {
    ir::Node& n = g.node(id);
    n.attrs.erase("consumed_inputs");
    n.attrs.erase("is_test");
    if (kBinary.count(n.op) && n.attrInt("broadcast", 0) && n.hasInput(0) && n.hasInput(1)) {
      const ir::Value& a = g.value(n.inputs[0]);
      if (!a.type.rank_known) fail(ErrorCode::kUnsupported, "{}: legacy broadcasting needs the shape of input 0", n.label());
      int64_t rank = static_cast<int64_t>(a.type.shape.size());
      int64_t brank = g.value(n.inputs[1]).type.rank_known ? static_cast<int64_t>(g.value(n.inputs[1]).type.shape.size()) : 0;
      int64_t axis = n.attrInt("axis", rank - brank);
      if (axis < 0) axis += rank;
      ir::ValueId nb = alignAt(g, n, n.inputs[1], axis, rank);
      g.node(id).inputs[1] = nb;
    }
    ir::Node& m = g.node(id);
    if (kBinary.count(m.op) || m.op == "Gemm") {
      m.attrs.erase("broadcast");
      if (kBinary.count(m.op)) m.attrs.erase("axis");
    }
    if (m.op == "PRelu" && m.hasInput(1)) {
      const ir::Value& x = g.value(m.inputs[0]);
      const ir::Value& slope = g.value(m.inputs[1]);
      // Opset < 7: a 1-D slope of size C applies per channel (axis 1).
      if (x.type.rank_known && slope.type.rank_known && slope.type.shape.size() == 1 && x.type.shape.size() > 2 &&
          slope.type.shape[0] == x.type.shape[1] && slope.type.shape[0] != x.type.shape.back()) {
        ir::ValueId ns = alignAt(g, m, m.inputs[1], 1, static_cast<int64_t>(x.type.shape.size()));
        g.node(id).inputs[1] = ns;
      }
    }
  }
}

}  // namespace npuc::onnx_io
