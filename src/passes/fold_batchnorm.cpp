// fold-batchnorm: Conv (constant weights) followed by an inference BatchNormalization with constant parameters
// becomes one Conv with scaled weights and a shifted bias:
//   a[m] = scale[m] / sqrt(var[m] + eps);  W'[m] = W[m] * a[m];  b'[m] = (b[m] - mean[m]) * a[m] + beta[m]
// computed in double and rounded once to float32. (batchnorm-to-conv, here too: a BatchNormalization no Conv absorbed
// becomes a depthwise 1x1 Conv with that a and b — the integer numerics' channel affine; not a default pass.)
// The same pass folds chains of Mul / Div / Add / Sub by per-channel constants (an "equivalent BatchNorm",
// e.g. a frozen BatchNorm written as (x - mean) / std * gamma + beta) after a Conv: the chain is an affine map
// y = a[m]·conv + d[m], composed in double, and becomes W' = W·a, b' = b·a + d.
#include "ir/rewriter.hpp"
#include "passes/passes.hpp"
#include "ops/registry.hpp"

#include <algorithm>
#include <cmath>

namespace npuc::passes {

namespace {
const Tensor* constF32(const ir::Graph& g, const ir::Node& n, int i) { return ir::constantInput(g, n, i, DType::kF32); }
/// The per-channel factor of an inference BatchNormalization: scale / sqrt(var + eps), in double.
double bnFactor(const ir::Node& bn, const Tensor& scale, const Tensor& var, int64_t c) {
  double eps = ops::attrFloat(bn, "epsilon");
  return static_cast<double>(scale.data<float>()[c]) / std::sqrt(static_cast<double>(var.data<float>()[c]) + eps);
}

/// Gives `node` new constant weights (input 1) and bias (input 2), named after it.
void setWeightsAndBias(ir::Graph& g, ir::NodeId node, Tensor w, Tensor b, const std::string& suffix) {
  std::string name = g.node(node).name;
  ir::ValueId wv = g.addConstant(g.uniqueValueName(name + "_w_" + suffix), std::move(w)).id;
  ir::ValueId bv = g.addConstant(g.uniqueValueName(name + "_b_" + suffix), std::move(b)).id;
  ir::Node& n = g.node(node);
  n.inputs.resize(3);
  n.inputs[1] = wv;
  n.inputs[2] = bv;
}

}  // namespace

namespace {

/// Per-channel values of a constant that broadcasts along channel axis 1 of a rank-4 output with M channels
/// ([M,1,1], [1,M,1,1], [1], scalar); empty when it does not.
std::vector<double> perChannel(const ir::Graph& g, ir::ValueId v, int64_t M) {
  if (!g.value(v).isConstant()) return {};
  const Tensor& t = *g.value(v).constant;
  if (t.dtype() != DType::kF32) return {};
  Shape s = t.shape();
  while (!s.empty() && s.front() == 1 && s.size() > 3) s.erase(s.begin());
  std::vector<double> vals = t.toDouble();
  if (t.numel() == 1) return std::vector<double>(static_cast<size_t>(M), vals[0]);
  if (s == Shape{M, 1, 1}) return vals;
  return {};
}

/// y = a·x + d followed by `op` (Mul, Div, Add or Sub) with the per-channel constant k: a and d updated in place.
void composeStep(const std::string& op, const std::vector<double>& k, std::vector<double>& a, std::vector<double>& d) {
  for (size_t m = 0; m < k.size(); ++m) {
    if (op == "Mul") a[m] *= k[m], d[m] *= k[m];
    else if (op == "Div") a[m] /= k[m], d[m] /= k[m];
    else if (op == "Add") d[m] += k[m];
    else d[m] -= k[m];
  }
}

/// Folds Conv -> (Mul|Div|Add|Sub by per-channel constants)+ into the Conv. Returns true when it folded.
bool foldAffineChain(ir::Graph& g, ir::NodeId conv_id) {
  ir::Node& conv = g.node(conv_id);
  const Tensor* w = constF32(g, conv, 1);
  const Tensor* b = constF32(g, conv, 2);
  if (!w || (conv.hasInput(2) && !b) || w->rank() != 4 || !g.value(conv.outputs[0]).type.isStatic()) return false;
  int64_t M = w->dim(0);
  std::vector<double> a(static_cast<size_t>(M), 1.0), d(static_cast<size_t>(M), 0.0);
  for (int64_t m = 0; m < M; ++m) d[static_cast<size_t>(m)] = b ? b->data<float>()[m] : 0.0;
  ir::ValueId cur = conv.outputs[0];
  std::vector<ir::NodeId> chain;
  for (;;) {
    auto uses = g.uses();
    auto it = uses.find(cur);
    if (it == uses.end() || it->second.size() != 1) break;
    if (std::find(g.outputs().begin(), g.outputs().end(), cur) != g.outputs().end()) break;
    const ir::Node& n = g.node(it->second[0].first);
    int pos = it->second[0].second;
    bool arith = n.domain.empty() && (n.op == "Mul" || n.op == "Div" || n.op == "Add" || n.op == "Sub");
    if (!arith || ((n.op == "Div" || n.op == "Sub") && pos != 0)) break;
    auto k = perChannel(g, n.inputs[static_cast<size_t>(1 - pos)], M);
    if (k.empty() || g.value(n.outputs[0]).type.shape != g.value(cur).type.shape) break;
    composeStep(n.op, k, a, d);
    chain.push_back(n.id);
    cur = n.outputs[0];
  }
  if (chain.empty()) return false;
  Tensor nw(DType::kF32, w->shape()), nb(DType::kF32, {M});
  int64_t per = w->numel() / M;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t i = 0; i < per; ++i)
      nw.data<float>()[m * per + i] = static_cast<float>(w->data<float>()[m * per + i] * a[static_cast<size_t>(m)]);
    nb.data<float>()[m] = static_cast<float>(d[static_cast<size_t>(m)]);
  }
  setWeightsAndBias(g, conv_id, nw, nb, "affine");
  ir::Rewriter rw(g);
  ir::ValueId y = g.node(conv_id).outputs[0];
  for (ir::NodeId id : chain) {
    g.node(conv_id).merged_ops.push_back(g.node(id).op);
    g.node(conv_id).merged_nodes.push_back(g.node(id).name);
  }
  for (ir::NodeId id : chain) rw.eraseNode(id);
  rw.replaceAllUses(cur, y);
  return true;
}

/// Gemm (constant B, C absent or per output column, alpha = beta = 1, transA = 0) followed by BatchNormalization
/// over its N outputs: column n of op(B) is scaled by a[n], C becomes (C - mean)·a + beta.
bool foldIntoGemm(ir::Graph& g, ir::NodeId gemm_id, const ir::Node& bn) {
  const ir::Node& gm = g.node(gemm_id);
  const Tensor* w = constF32(g, gm, 1);
  const Tensor* c = constF32(g, gm, 2);
  if (!w || w->rank() != 2 || (gm.hasInput(2) && !c) || ops::attrInt(gm, "transA") || ops::attrFloat(gm, "alpha") != 1.0f ||
      ops::attrFloat(gm, "beta") != 1.0f)
    return false;
  bool tb = ops::attrInt(gm, "transB") != 0;
  int64_t N = tb ? w->dim(0) : w->dim(1), K = tb ? w->dim(1) : w->dim(0);
  if (c && c->numel() != N && c->numel() != 1) return false;
  const Tensor *scale = constF32(g, bn, 1), *beta = constF32(g, bn, 2), *mean = constF32(g, bn, 3), *var = constF32(g, bn, 4);
  if (!scale || !beta || !mean || !var || scale->numel() != N) return false;
  Tensor nw(DType::kF32, w->shape()), nc(DType::kF32, {N});
  for (int64_t n = 0; n < N; ++n) {
    double a = bnFactor(bn, *scale, *var, n);
    for (int64_t k = 0; k < K; ++k) {
      int64_t i = tb ? n * K + k : k * N + n;
      nw.data<float>()[i] = static_cast<float>(static_cast<double>(w->data<float>()[i]) * a);
    }
    double bias = c ? static_cast<double>(c->data<float>()[c->numel() == 1 ? 0 : n]) : 0.0;
    nc.data<float>()[n] = static_cast<float>((bias - mean->data<float>()[n]) * a + beta->data<float>()[n]);
  }
  setWeightsAndBias(g, gemm_id, nw, nc, "bn");
  return true;
}

/// The per-channel affine step of an arithmetic node on `x` (a rank-4 value with C channels): Mul / Add by a
/// per-channel constant on either side, Sub / Div with the constant second. False when `n` is not one.
bool affineStep(const ir::Graph& g, const ir::Node& n, ir::ValueId x, std::vector<double>& a, std::vector<double>& d) {
  if (!n.domain.empty() || n.numInputs() != 2 || (n.op != "Mul" && n.op != "Div" && n.op != "Add" && n.op != "Sub")) return false;
  int pos = n.inputs[0] == x ? 0 : (n.inputs[1] == x ? 1 : -1);
  if (pos < 0 || ((n.op == "Div" || n.op == "Sub") && pos != 0) || n.inputs[0] == n.inputs[1]) return false;
  const ir::Type& t = g.value(x).type;
  if (!t.isStatic() || t.shape.size() != 4 || t.dtype != DType::kF32 || g.value(n.outputs[0]).type.shape != t.shape) return false;
  auto k = perChannel(g, n.inputs[static_cast<size_t>(1 - pos)], t.shape[1]);
  if (k.empty()) return false;
  composeStep(n.op, k, a, d);
  return true;
}

/// A chain of per-channel Mul / Div / Add / Sub by constants that no Conv absorbs — an in-model normalisation such
/// as (x - mean) / std at the input, "equivalent to BatchNormalization" (DRP-AI manual, Sub / Div / Mul) — becomes
/// one BatchNormalization (scale a, bias d, mean 0, variance 1, epsilon 0: y = a·x + d, composed in double and
/// rounded once), a per-channel affine layer. Only chains with a Sub or Div or of two steps or more: a lone Mul or
/// Add by a constant stays what it is. Returns true when it rewrote one.
bool affineChainToBatchNorm(ir::Graph& g, ir::NodeId first, const ir::UseMap& uses) {
  const ir::Node& n0 = g.node(first);
  if (!n0.domain.empty() || n0.numInputs() != 2) return false;
  ir::ValueId x = ir::kNoValue;
  for (ir::ValueId in : n0.inputs)
    if (in != ir::kNoValue && !g.value(in).isConstant()) x = in;
  if (x == ir::kNoValue || !g.value(x).type.isStatic() || g.value(x).type.shape.size() != 4) return false;
  const int64_t C = g.value(x).type.shape[1];
  std::vector<double> a(static_cast<size_t>(C), 1.0), d(static_cast<size_t>(C), 0.0);
  if (!affineStep(g, n0, x, a, d)) return false;
  // A chain that starts after a producer whose own chain this is (its previous step) is not a start.
  if (ir::NodeId p = g.value(x).producer; p != ir::kNoNode) {
    std::vector<double> pa(static_cast<size_t>(C), 1.0), pd(static_cast<size_t>(C), 0.0);
    const ir::Node& pn = g.node(p);
    for (ir::ValueId in : pn.inputs)  // (an optional input left out is kNoValue)
      if (in != ir::kNoValue && !g.value(in).isConstant() && affineStep(g, pn, in, pa, pd) && uses.at(x).size() == 1 &&
          std::find(g.outputs().begin(), g.outputs().end(), x) == g.outputs().end())
        return false;  // (the chain before x goes on through it: this is not a start)
  }
  std::vector<ir::NodeId> chain{first};
  bool sub_or_div = n0.op == "Sub" || n0.op == "Div";
  ir::ValueId cur = n0.outputs[0];
  for (;;) {
    auto it = uses.find(cur);
    if (it == uses.end() || it->second.size() != 1) break;
    if (std::find(g.outputs().begin(), g.outputs().end(), cur) != g.outputs().end()) break;
    const ir::Node& n = g.node(it->second[0].first);
    if (!affineStep(g, n, cur, a, d)) break;
    sub_or_div = sub_or_div || n.op == "Sub" || n.op == "Div";
    chain.push_back(n.id);
    cur = n.outputs[0];
  }
  if (!sub_or_div && chain.size() < 2) return false;
  Tensor scale(DType::kF32, {C}), bias(DType::kF32, {C}), mean(DType::kF32, {C}), var(DType::kF32, {C});
  for (int64_t m = 0; m < C; ++m) {
    scale.data<float>()[m] = static_cast<float>(a[static_cast<size_t>(m)]);
    bias.data<float>()[m] = static_cast<float>(d[static_cast<size_t>(m)]);
    mean.data<float>()[m] = 0.0f;
    var.data<float>()[m] = 1.0f;
  }
  const std::string name = g.node(first).name;
  std::vector<std::string> ops, names;
  for (ir::NodeId id : chain) ops.push_back(g.node(id).op), names.push_back(g.node(id).name);
  ir::ValueId sv = g.addConstant(g.uniqueValueName(name + "_scale"), scale).id;
  ir::ValueId bv = g.addConstant(g.uniqueValueName(name + "_bias"), bias).id;
  ir::ValueId mv = g.addConstant(g.uniqueValueName(name + "_mean"), mean).id;
  ir::ValueId vv = g.addConstant(g.uniqueValueName(name + "_var"), var).id;
  ir::Rewriter rw(g);
  for (ir::NodeId id : chain) rw.eraseNode(id);
  // The BatchNormalization writes the chain's last value, so readers and graph outputs are unchanged.
  ir::Node& bn = rw.addNode("BatchNormalization", g.uniqueValueName(name + "/affine"), {x, sv, bv, mv, vv}, {cur});
  bn.attrs["epsilon"] = ir::Attr(0.0f);
  bn.merged_ops = ops;
  bn.merged_nodes = names;
  rw.finish();
  return true;
}

}  // namespace

bool BatchNormToConvPass::run(ir::Graph& g, PassContext&) {
  ir::Rewriter rw(g);
  const ir::UseMap uses = g.uses();
  for (ir::NodeId id : std::vector<ir::NodeId>(g.order())) {
    const ir::Node& bn = g.node(id);
    if (bn.op != "BatchNormalization" || !bn.domain.empty() || bn.numInputs() != 5) continue;
    bool extra = false;  // (training-mode outputs that something reads or the graph gives)
    for (size_t i = 1; i < bn.outputs.size(); ++i)
      extra |= bn.outputs[i] != ir::kNoValue &&
               (uses.count(bn.outputs[i]) || std::find(g.outputs().begin(), g.outputs().end(), bn.outputs[i]) != g.outputs().end());
    if (extra) continue;
    const ir::Type& xt = g.value(bn.inputs[0]).type;
    if (!xt.isStatic() || xt.shape.size() != 4 || xt.dtype != DType::kF32) continue;
    const int64_t C = xt.shape[1];
    const Tensor *scale = constF32(g, bn, 1), *beta = constF32(g, bn, 2), *mean = constF32(g, bn, 3), *var = constF32(g, bn, 4);
    if (!scale || !beta || !mean || !var || scale->numel() != C || beta->numel() != C || mean->numel() != C || var->numel() != C)
      continue;
    Tensor w(DType::kF32, {C, 1, 1, 1}), b(DType::kF32, {C});
    bool finite = true;
    for (int64_t c = 0; c < C; ++c) {
      const double a = bnFactor(bn, *scale, *var, c);
      w.data<float>()[c] = static_cast<float>(a);
      b.data<float>()[c] = static_cast<float>(static_cast<double>(beta->data<float>()[c]) - mean->data<float>()[c] * a);
      finite = finite && std::isfinite(w.data<float>()[c]) && std::isfinite(b.data<float>()[c]);
    }
    if (!finite) continue;
    const std::string name = bn.name;
    const ir::ValueId x = bn.inputs[0], y = bn.outputs[0];
    const ir::ValueId wv = g.addConstant(g.uniqueValueName(name + "_w_dw"), std::move(w)).id;
    const ir::ValueId bv = g.addConstant(g.uniqueValueName(name + "_b_dw"), std::move(b)).id;
    rw.eraseNode(id);
    // The Conv writes the BatchNormalization's output: readers and graph outputs are unchanged.
    ir::Node& conv = rw.addNode("Conv", name, {x, wv, bv}, {y});
    conv.attrs["group"] = ir::Attr(C);
    conv.attrs["kernel_shape"] = ir::Attr(std::vector<int64_t>{1, 1});
    conv.merged_ops = {"BatchNormalization"};
    conv.merged_nodes = {name};
  }
  if (rw.changed()) rw.finish();
  return rw.changed();
}

bool ScaleToConvPass::run(ir::Graph& g, PassContext&) {
  ir::Rewriter rw(g);
  for (ir::NodeId id : std::vector<ir::NodeId>(g.order())) {
    const ir::Node& n = g.node(id);
    if ((n.op != "Mul" && n.op != "Add") || !n.domain.empty() || n.numInputs() != 2 || n.outputs.size() != 1) continue;
    const int pos = g.value(n.inputs[0]).isConstant() ? 1 : 0;  // the activation's input
    const ir::ValueId x = n.inputs[static_cast<size_t>(pos)], y = n.outputs[0];
    const ir::Type& xt = g.value(x).type;
    if (g.value(x).isConstant() || !xt.isStatic() || xt.shape.size() != 4 || xt.dtype != DType::kF32 || g.value(y).type.shape != xt.shape)
      continue;
    const int64_t C = xt.shape[1];
    const std::vector<double> k = perChannel(g, n.inputs[static_cast<size_t>(1 - pos)], C);
    if (k.empty()) continue;
    Tensor w(DType::kF32, {C, 1, 1, 1}), b(DType::kF32, {C});
    for (int64_t c = 0; c < C; ++c) {  // (k holds the constant's float32 values: exact)
      w.data<float>()[c] = n.op == "Mul" ? static_cast<float>(k[static_cast<size_t>(c)]) : 1.0f;
      b.data<float>()[c] = n.op == "Mul" ? 0.0f : static_cast<float>(k[static_cast<size_t>(c)]);
    }
    const std::string name = n.name, op = n.op;
    const ir::ValueId wv = g.addConstant(g.uniqueValueName(name + "_w_dw"), std::move(w)).id;
    const ir::ValueId bv = g.addConstant(g.uniqueValueName(name + "_b_dw"), std::move(b)).id;
    rw.eraseNode(id);
    ir::Node& conv = rw.addNode("Conv", name, {x, wv, bv}, {y});  // (writes the Mul's output: its readers unchanged)
    conv.attrs["group"] = ir::Attr(C);
    conv.attrs["kernel_shape"] = ir::Attr(std::vector<int64_t>{1, 1});
    conv.merged_ops = {op};
    conv.merged_nodes = {name};
  }
  if (rw.changed()) rw.finish();
  return rw.changed();
}

namespace {
/// Every chain of per-channel affine steps no Conv absorbed becomes one BatchNormalization (affineChainToBatchNorm).
bool chainsToBatchNorms(ir::Graph& g) {
  bool chains = false;
  ir::UseMap uses = g.uses();
  for (ir::NodeId id : std::vector<ir::NodeId>(g.order()))
    if (g.hasNode(id) && affineChainToBatchNorm(g, id, uses)) {
      chains = true;
      uses = g.uses();
    }
  if (chains) g.topoSort();
  return chains;
}
}  // namespace

bool AffineChainsPass::run(ir::Graph& g, PassContext&) { return chainsToBatchNorms(g); }

bool FoldBatchNormPass::run(ir::Graph& g, PassContext&) {
  bool chains = false;
  for (ir::NodeId id : std::vector<ir::NodeId>(g.order()))
    if (g.hasNode(id) && g.node(id).op == "Conv" && g.node(id).domain.empty()) chains |= foldAffineChain(g, id);
  if (chains) g.topoSort();
  chains = chainsToBatchNorms(g) || chains;
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
    if (conv.op == "Gemm" && conv.domain.empty() && uses[x].size() == 1) {
      if (foldIntoGemm(g, pid, bn)) {
        g.node(pid).merged_ops.push_back(bn.op);
        g.node(pid).merged_nodes.push_back(bn.name);
        ir::ValueId y = bn.outputs[0];
        rw.eraseNode(id);
        rw.replaceAllUses(y, x);
      }
      continue;
    }
    if (conv.op != "Conv" || !conv.domain.empty() || uses[x].size() != 1) continue;
    if (std::find(g.outputs().begin(), g.outputs().end(), x) != g.outputs().end()) continue;
    const Tensor* w = constF32(g, conv, 1);
    const Tensor* b = constF32(g, conv, 2);
    const Tensor *scale = constF32(g, bn, 1), *beta = constF32(g, bn, 2), *mean = constF32(g, bn, 3), *var = constF32(g, bn, 4);
    if (!w || (conv.hasInput(2) && !b) || !scale || !beta || !mean || !var) continue;
    int64_t M = w->dim(0);
    if (scale->numel() != M || beta->numel() != M || mean->numel() != M || var->numel() != M) continue;
    Tensor nw(DType::kF32, w->shape()), nb(DType::kF32, {M});
    int64_t per = w->numel() / std::max<int64_t>(1, M);
    for (int64_t m = 0; m < M; ++m) {
      double a = bnFactor(bn, *scale, *var, m);
      for (int64_t k = 0; k < per; ++k)
        nw.data<float>()[m * per + k] = static_cast<float>(static_cast<double>(w->data<float>()[m * per + k]) * a);
      double bias = b ? static_cast<double>(b->data<float>()[m]) : 0.0;
      nb.data<float>()[m] = static_cast<float>((bias - mean->data<float>()[m]) * a + beta->data<float>()[m]);
    }
    ir::ValueId y = bn.outputs[0];
    setWeightsAndBias(g, pid, nw, nb, "bn");
    g.node(pid).merged_ops.push_back(bn.op);
    g.node(pid).merged_nodes.push_back(bn.name);
    rw.eraseNode(id);
    rw.replaceAllUses(y, x);
  }
  if (rw.changed()) rw.finish();
  return chains || rw.changed();
}

}  // namespace npuc::passes
