// dce: dead-code elimination (unused nodes and constants).
#include "ir/rewriter.hpp"
#include "passes/passes.hpp"

#include <algorithm>
#include <vector>

namespace npuc::passes {

bool DeadCodeEliminationPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  // Flags indexed by value id (ids are dense: 0 .. the highest id ever given).
  ir::ValueId top = 0;
  for (ir::ValueId v : g.valueIds()) top = std::max(top, v);
  std::vector<char> live(static_cast<size_t>(top) + 1, 0);
  for (ir::ValueId v : g.outputs()) live[static_cast<size_t>(v)] = 1;
  // Walk backwards: a node is live when one of its outputs is live.
  std::vector<ir::NodeId> order = g.order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::Node& n = g.node(*it);
    bool used = false;
    for (ir::ValueId o : n.outputs) used |= o != ir::kNoValue && live[static_cast<size_t>(o)];
    if (!used) {
      std::vector<ir::ValueId> outs = n.outputs;
      g.removeNode(*it);
      for (ir::ValueId o : outs)
        if (o != ir::kNoValue) g.removeValue(o);
      changed = true;
      continue;
    }
    for (ir::ValueId in : n.inputs)
      if (in != ir::kNoValue) live[static_cast<size_t>(in)] = 1;
  }
  for (ir::ValueId v : g.inputs()) live[static_cast<size_t>(v)] = 1;
  for (ir::ValueId v : g.valueIds()) {
    const ir::Value& val = g.value(v);
    if (live[static_cast<size_t>(v)]) continue;
    if (val.isConstant() || val.producer == ir::kNoNode) {
      g.removeValue(v);
      changed = true;
    }
  }
  return changed;
}

}  // namespace npuc::passes
