// fold-reshapes: a Reshape of a Reshape (or of a Flatten, Squeeze, Unsqueeze) reads the first one's input with its
// own static output shape (the first stays while it has other readers, dce removes it otherwise), and a Reshape to
// its input's own shape is removed, except between a graph input or constant and a graph output. A channel-last
// import writes a Reshape where a layout change moves only axes of size 1 (a TFLite MEAN's [N, C, 1, 1] back to
// [N, 1, 1, C]), which the model's own flatten then follows: one Reshape is left, which targets take as a Flatten.
// In the optimize and translate pipelines, not resolve: an imported model keeps every intermediate value.
#include "ir/rewriter.hpp"
#include "passes/match.hpp"
#include "passes/passes.hpp"

namespace npuc::passes {

namespace {

/// The static output shape of a Reshape, as its shape input (empty when unknown or holding a 0, which Reshape reads
/// as "copy that dim").
std::vector<int64_t> staticDims(const ir::Graph& g, ir::ValueId v) {
  const ir::Type& t = g.value(v).type;
  if (!t.rank_known) return {};
  for (int64_t d : t.shape)
    if (d <= 0) return {};
  return t.shape;  // (a scalar's is empty: not folded)
}

bool isReshapeLike(const ir::Node* n) {
  return n && n->domain.empty() && n->outputs.size() == 1 && !n->inputs.empty() &&
         (n->op == "Reshape" || n->op == "Flatten" || n->op == "Squeeze" || n->op == "Unsqueeze");
}

/// A Reshape of a reshape: reads the first one's input with its own static output shape; a Reshape to its input's
/// shape: its readers read that input. True when the graph changed.
bool foldReshape(ir::Graph& g, ir::Rewriter& rw, ir::NodeId id) {
  ir::Node& n = g.node(id);
  if (n.op != "Reshape" || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  const std::vector<int64_t> out = staticDims(g, n.outputs[0]);
  if (out.empty()) return false;
  bool changed = false;
  const ir::Node* first = producer(g, n.inputs[0]);
  if (isReshapeLike(first) && g.value(first->inputs[0]).type.rank_known) {
    n.inputs[0] = first->inputs[0];
    n.inputs[1] = g.addConstant(g.uniqueValueName(n.name + "_shape"), Tensor::fromVector<int64_t>(
                                    {static_cast<int64_t>(out.size())}, out)).id;
    n.attrs.erase("allowzero");
    changed = true;
  }
  const ir::ValueId x = n.inputs[0], y = n.outputs[0];
  const ir::Type& in = g.value(x).type;
  if (in.rank_known && in.shape == out && !(graphBoundary(g, x) && graphBoundary(g, y))) {
    rw.replaceAllUses(y, x);
    rw.eraseNode(id);
  }
  return changed;
}

}  // namespace

bool FoldReshapesPass::run(ir::Graph& g, PassContext&) {
  ir::Rewriter rw(g);
  bool changed = false;
  for (ir::NodeId id : std::vector<ir::NodeId>(g.order()))
    if (g.hasNode(id) && foldReshape(g, rw, id)) changed = true;
  rw.finish();
  return changed || rw.changed();
}

}  // namespace npuc::passes
