// dce: dead-code elimination (unused nodes and constants).
#include "ir/rewriter.hpp"
#include "passes/passes.hpp"

#include <set>

namespace npuc::passes {

bool DeadCodeEliminationPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  std::set<ir::ValueId> live(g.outputs().begin(), g.outputs().end());
  // Walk backwards: a node is live when one of its outputs is live.
  std::vector<ir::NodeId> order = g.order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::Node& n = g.node(*it);
    bool used = false;
    for (ir::ValueId o : n.outputs) used |= o != ir::kNoValue && live.count(o);
    if (!used) {
      std::vector<ir::ValueId> outs = n.outputs;
      g.removeNode(*it);
      for (ir::ValueId o : outs)
        if (o != ir::kNoValue) g.removeValue(o);
      changed = true;
      continue;
    }
    for (ir::ValueId in : n.inputs)
      if (in != ir::kNoValue) live.insert(in);
  }
  std::set<ir::ValueId> keep(g.inputs().begin(), g.inputs().end());
  for (ir::ValueId v : g.valueIds()) {
    const ir::Value& val = g.value(v);
    if (live.count(v) || keep.count(v)) continue;
    if (val.isConstant() || val.producer == ir::kNoNode) {
      g.removeValue(v);
      changed = true;
    }
  }
  return changed;
}

}  // namespace npuc::passes
