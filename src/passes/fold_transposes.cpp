// fold-transposes: a Transpose of a Transpose reads the first one's input with the two perms composed (the first
// stays while it has other readers, dce removes it otherwise), and a Transpose whose perm leaves every axis in place
// is removed. Channel-last imports (TensorFlow, TFLite) and exporters that convert layouts per layer leave such
// pairs; after this pass only the Transposes that move data remain.
#include "ir/rewriter.hpp"
#include "passes/match.hpp"
#include "passes/passes.hpp"

#include <numeric>

namespace npuc::passes {

namespace {

/// The node's perm (the reversed axes when the attribute is absent); empty when the input's rank is unknown.
std::vector<int64_t> permOf(const ir::Graph& g, const ir::Node& n) {
  if (n.hasAttr("perm")) return n.attrInts("perm");
  const ir::Type& t = g.value(n.inputs[0]).type;
  if (!t.rank_known) return {};
  std::vector<int64_t> p(t.shape.size());
  std::iota(p.rbegin(), p.rend(), 0);
  return p;
}

bool isIdentity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace

bool FoldTransposesPass::run(ir::Graph& g, PassContext&) {
  ir::Rewriter rw(g);
  bool changed = false;
  for (ir::NodeId id : std::vector<ir::NodeId>(g.order())) {
    if (!g.hasNode(id)) continue;
    ir::Node& n = g.node(id);
    if (n.op != "Transpose" || !n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1) continue;
    std::vector<int64_t> outer = permOf(g, n);
    if (outer.empty()) continue;
    const ir::Node* first = producer(g, n.inputs[0], "Transpose");
    if (first && first->domain.empty() && first->outputs.size() == 1) {
      std::vector<int64_t> inner = permOf(g, *first);
      if (inner.size() != outer.size()) continue;
      std::vector<int64_t> composed(outer.size());
      for (size_t i = 0; i < outer.size(); ++i) composed[i] = inner[static_cast<size_t>(outer[i])];
      n.inputs[0] = first->inputs[0];
      n.attrs["perm"] = ir::Attr(composed);
      outer = composed;
      changed = true;
    }
    if (!isIdentity(outer)) continue;
    // An identity: its readers read its input. Kept when both sides are graph boundaries (an input or constant
    // passed straight to an output keeps a node between them, so names and interfaces stay as declared).
    const ir::ValueId x = n.inputs[0], y = n.outputs[0];
    if (graphBoundary(g, x) && graphBoundary(g, y)) continue;
    rw.replaceAllUses(y, x);
    rw.eraseNode(id);
  }
  rw.finish();
  return changed || rw.changed();
}

}  // namespace npuc::passes
