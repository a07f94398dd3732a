// Rewriter operations on ir::Graph.
#include "ir/rewriter.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <set>

namespace npuc::ir {

void Rewriter::replaceAllUses(ValueId from, ValueId to) {
  if (from == to) return;
  for (NodeId id : g_.order()) {
    Node& n = g_.node(id);
    for (auto& in : n.inputs)
      if (in == from) in = to;
  }
  bool is_output = false;
  for (auto& o : g_.outputs())
    if (o == from) {
      o = to;
      is_output = true;
    }
  if (is_output) {
    // Keep the model interface. `to` takes the output's name, `from` gets a fresh one, unless `to` is itself part
    // of the interface (a graph input or another output) or a constant: then an Identity carries the old name.
    std::string fname = g_.value(from).name;
    bool to_fixed = g_.value(to).isConstant() ||
                    std::count(g_.inputs().begin(), g_.inputs().end(), to) ||
                    std::count(g_.outputs().begin(), g_.outputs().end(), to) > 1;
    g_.renameValue(from, g_.uniqueValueName(fname + "_replaced"));
    if (to_fixed) {
      Value& out = g_.addValue(fname, g_.value(to).type);
      ValueId out_id = out.id;
      g_.addNode("Identity", fname + "_identity", {to}, {out_id});
      for (auto& o : g_.outputs())
        if (o == to) {
          o = out_id;
          break;
        }
      g_.topoSort();
    } else {
      g_.renameValue(to, fname);
    }
  }
  changed_ = true;
}

void Rewriter::eraseNode(NodeId id) {
  g_.removeNode(id);
  changed_ = true;
}

void Rewriter::makeConstant(ValueId v, Tensor t) {
  Value& val = g_.value(v);
  NodeId p = val.producer;
  val.producer = kNoNode;
  val.type = makeType(t.dtype(), t.shape());
  val.constant = std::move(t);
  if (p != kNoNode && g_.hasNode(p)) {
    Node& n = g_.node(p);
    for (auto& o : n.outputs)
      if (o == v) o = kNoValue;
    bool any = std::any_of(n.outputs.begin(), n.outputs.end(), [](ValueId o) { return o != kNoValue; });
    if (!any) g_.removeNode(p);
  }
  changed_ = true;
}

Node& Rewriter::addNode(std::string op, std::string name, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                        std::string domain) {
  changed_ = true;
  return g_.addNode(std::move(op), std::move(name), std::move(inputs), std::move(outputs), std::move(domain));
}

void Rewriter::finish() { g_.topoSort(); }

std::optional<NodeId> soleReader(const Graph& g, const UseMap& uses, ValueId v) {
  auto it = uses.find(v);
  if (it == uses.end() || it->second.size() != 1) return std::nullopt;
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end()) return std::nullopt;
  return it->second[0].first;
}

void removeUnread(Graph& g, const std::set<ValueId>& values) {
  if (values.empty()) return;
  const UseMap uses = g.uses();
  for (ValueId v : values) {
    const bool output = std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
    auto u = uses.find(v);
    if ((u == uses.end() || u->second.empty()) && !output) g.removeValue(v);
  }
}

}  // namespace npuc::ir
