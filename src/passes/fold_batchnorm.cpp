// fold-batchnorm: Conv (constant weights) followed by an inference BatchNormalization with constant parameters
// becomes one Conv with scaled weights and a shifted bias:
//   a[m] = scale[m] / sqrt(var[m] + eps);  W'[m] = W[m] * a[m];  b'[m] = (b[m] - mean[m]) * a[m] + beta[m]
// computed in double and rounded once to float32.
#include "ir/rewriter.hpp"
#include "passes/passes.hpp"

#include <algorithm>
#include <cmath>

namespace npuc::passes {

namespace {
const Tensor* constF32(const ir::Graph& g, const ir::Node& n, int i) {
  if (!n.hasInput(i)) return nullptr;
  const ir::Value& v = g.value(n.inputs[static_cast<size_t>(i)]);
  return v.constant && v.constant->dtype() == DType::kF32 ? &*v.constant : nullptr;
}
}  // namespace

bool FoldBatchNormPass::run(ir::Graph& g, PassContext&) {
  ir::Rewriter rw(g);
  auto uses = g.uses();
  std::vector<ir::NodeId> order = g.order();
  for (ir::NodeId id : order) {
    if (!g.hasNode(id)) continue;
    const ir::Node& bn = g.node(id);
    if (bn.op != "BatchNormalization" || !bn.domain.empty() || bn.numInputs() != 5) continue;
    if (bn.outputs.size() > 1) {
      bool extra = false;
      for (size_t i = 1; i < bn.outputs.size(); ++i) extra |= bn.outputs[i] != ir::kNoValue && uses.count(bn.outputs[i]);
      if (extra) continue;
    }
    ir::ValueId x = bn.inputs[0];
    ir::NodeId pid = g.value(x).producer;
    if (pid == ir::kNoNode) continue;
    const ir::Node& conv = g.node(pid);
    if (conv.op != "Conv" || !conv.domain.empty() || uses[x].size() != 1) continue;
    if (std::find(g.outputs().begin(), g.outputs().end(), x) != g.outputs().end()) continue;
    const Tensor* w = constF32(g, conv, 1);
    const Tensor* b = constF32(g, conv, 2);
    const Tensor *scale = constF32(g, bn, 1), *beta = constF32(g, bn, 2), *mean = constF32(g, bn, 3), *var = constF32(g, bn, 4);
    if (!w || (conv.hasInput(2) && !b) || !scale || !beta || !mean || !var) continue;
    int64_t M = w->dim(0);
    if (scale->numel() != M || beta->numel() != M || mean->numel() != M || var->numel() != M) continue;
    double eps = bn.attrFloat("epsilon", 1e-5f);
    Tensor nw(DType::kF32, w->shape()), nb(DType::kF32, {M});
    int64_t per = w->numel() / std::max<int64_t>(1, M);
    for (int64_t m = 0; m < M; ++m) {
      double a = static_cast<double>(scale->data<float>()[m]) / std::sqrt(static_cast<double>(var->data<float>()[m]) + eps);
      for (int64_t k = 0; k < per; ++k)
        nw.data<float>()[m * per + k] = static_cast<float>(static_cast<double>(w->data<float>()[m * per + k]) * a);
      double bias = b ? static_cast<double>(b->data<float>()[m]) : 0.0;
      nb.data<float>()[m] = static_cast<float>((bias - mean->data<float>()[m]) * a + beta->data<float>()[m]);
    }
    ir::ValueId wv = g.addConstant(g.uniqueValueName(conv.name + "_w_bn"), nw).id;
    ir::ValueId bv = g.addConstant(g.uniqueValueName(conv.name + "_b_bn"), nb).id;
    ir::Node& c = g.node(pid);
    c.inputs.resize(3);
    c.inputs[1] = wv;
    c.inputs[2] = bv;
    ir::ValueId y = bn.outputs[0];
    rw.eraseNode(id);
    rw.replaceAllUses(y, x);
  }
  if (rw.changed()) rw.finish();
  return rw.changed();
}

}  // namespace npuc::passes
