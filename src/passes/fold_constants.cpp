// fold-constants: evaluates constant subgraphs once at compile time with the reference engine.
#include "engine/engine.hpp"
#include "ops/registry.hpp"
#include "ir/rewriter.hpp"
#include "passes/passes.hpp"

#include <algorithm>

namespace npuc::passes {

namespace {
// Folding these would only move a large tensor into the model file or is not meaningful.
/// A Loop folds only with a constant trip count of at most this many steps (a model's own loop may be as long as it
/// says when it runs, but loading it must not take that long).
constexpr int64_t kMaxFoldTrips = 4096;

bool foldable(const ir::Graph& g, const ir::Node& n) {
  if (n.op == "Loop") {
    const Tensor* m = n.hasInput(0) ? ir::constantInput(g, n, 0, DType::kI64) : nullptr;
    return m && m->numel() == 1 && m->data<int64_t>()[0] <= kMaxFoldTrips;
  }
  return n.op != "RandomNormal" && n.op != "RandomUniform" && n.op != "Multinomial";
}

constexpr size_t kMaxFoldBytes = size_t{64} << 20;
}  // namespace

bool FoldConstantsPass::run(ir::Graph& g, PassContext&) {
  ir::Rewriter rw(g);
  std::vector<ir::NodeId> order = g.order();
  for (ir::NodeId id : order) {
    if (!g.hasNode(id)) continue;
    // Types first: an input folded earlier in this sweep may make this node's shapes static (a Reshape whose shape
    // operand just became a constant, then the Shape that reads it), so a chain of shape computations folds in one
    // sweep instead of one link per round of the pipeline.
    ops::inferNodeTypes(g, id);
    const ir::Node& n = g.node(id);
    if (!foldable(g, n) || !n.domain.empty()) continue;
    // Shape and Size only need a static input shape.
    if ((n.op == "Shape" || n.op == "Size") && n.hasInput(0) && g.value(n.inputs[0]).type.isStatic()) {
      auto types = ops::inferNode(g, n);
      if (!types) continue;
      const Shape& s = g.value(n.inputs[0]).type.shape;
      Tensor t(DType::kI64, (*types)[0].shape);
      if (n.op == "Size") {
        t.data<int64_t>()[0] = shapeNumel(s);
      } else {
        int64_t rank = static_cast<int64_t>(s.size());
        int64_t start = n.attrInt("start", 0);
        if (start < 0) start += rank;
        start = std::clamp<int64_t>(start, 0, rank);
        for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = s[static_cast<size_t>(start + i)];
      }
      rw.makeConstant(n.outputs[0], std::move(t));
      continue;
    }
    bool all_const = true;
    std::vector<Tensor> ins;
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue) {
        ins.emplace_back();
        continue;
      }
      const ir::Value& val = g.value(v);
      if (!val.isConstant()) {
        all_const = false;
        break;
      }
      ins.push_back(*val.constant);
    }
    if (!all_const) continue;
    std::vector<Tensor> outs = engine::evalNode(g, n, ins);
    size_t bytes = 0;
    for (auto& t : outs) bytes += t.defined() ? t.nbytes() : 0;
    // (a DequantizeLinear of constant weights gives back the float weights the model was quantized from: a float
    // layer of an int8 package needs them whatever their size)
    if (bytes > kMaxFoldBytes && !(n.op == "DequantizeLinear" && n.domain.empty())) continue;
    std::vector<ir::ValueId> node_outs = n.outputs;
    for (size_t i = 0; i < node_outs.size() && i < outs.size(); ++i)
      if (node_outs[i] != ir::kNoValue) rw.makeConstant(node_outs[i], outs[i].clone());
  }
  if (rw.changed()) rw.finish();
  return rw.changed();
}

}  // namespace npuc::passes
