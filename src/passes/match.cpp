// Pattern-matching helpers.
#include "passes/match.hpp"

#include <algorithm>
#include <limits>

namespace npuc::passes {

const ir::Node* producer(const ir::Graph& g, ir::ValueId v, const char* op) {
  if (v == ir::kNoValue || !g.hasValue(v)) return nullptr;
  ir::NodeId p = g.value(v).producer;
  if (p == ir::kNoNode || !g.hasNode(p)) return nullptr;
  const ir::Node& n = g.node(p);
  if (op && (n.op != op || !n.domain.empty())) return nullptr;
  return &n;
}

bool singleUse(const ir::Graph& g, const Uses& uses, ir::ValueId v) {
  auto it = uses.find(v);
  if (it == uses.end() || it->second.size() != 1) return false;
  return std::find(g.outputs().begin(), g.outputs().end(), v) == g.outputs().end();
}

std::optional<double> constScalar(const ir::Graph& g, ir::ValueId v) {
  if (v == ir::kNoValue || !g.value(v).isConstant()) return std::nullopt;
  const Tensor& t = *g.value(v).constant;
  if (t.numel() != 1 || !(isFloat(t.dtype()) || isInteger(t.dtype()))) return std::nullopt;
  return t.toDouble()[0];
}

ir::Node& replaceWith(ir::Graph& g, const std::vector<ir::NodeId>& dead, const std::string& op, const std::string& domain,
                      const std::string& name, std::vector<ir::ValueId> inputs, ir::ValueId out) {
  std::vector<std::string> sources;  // provenance: the replaced nodes (and what was merged into them)
  for (ir::NodeId id : dead)
    for (auto& s : ir::sourceNodes(g.node(id)))
      if (s != name) sources.push_back(s);
  for (ir::NodeId id : dead) {
    std::vector<ir::ValueId> outs = g.node(id).outputs;
    g.removeNode(id);
    for (ir::ValueId o : outs)
      if (o != ir::kNoValue && o != out) g.removeValue(o);
  }
  ir::Node& n = g.addNode(op, name, std::move(inputs), {out}, domain);
  n.merged_nodes = std::move(sources);
  return n;
}

bool graphBoundary(const ir::Graph& g, ir::ValueId v) {
  const auto& ins = g.inputs();
  const auto& outs = g.outputs();
  return std::find(ins.begin(), ins.end(), v) != ins.end() || std::find(outs.begin(), outs.end(), v) != outs.end() ||
         g.value(v).isConstant();
}

}  // namespace npuc::passes
