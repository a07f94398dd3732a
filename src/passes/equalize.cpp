// equalize-cross-layer: cross-layer equalization (Nagel et al., "Data-Free Quantization", 2019) for per-tensor int8
// weights. Two convolutions in a row, Conv1 -> [positively homogeneous activation] -> Conv2, compute the same when
// Conv1's output channel c is divided by s_c (its weights and bias) and Conv2's weights reading channel c are
// multiplied by s_c: act(x / s) = act(x) / s for s > 0 (no activation, Relu, LeakyRelu). With r1_c the largest
// |weight| of Conv1's channel c and r2_c the largest |weight| of Conv2 reading it, s_c = sqrt(r1_c / r2_c) gives
// both the range sqrt(r1_c r2_c): the channels' ranges are equal, so one scale per tensor wastes fewer codes.
// Chains (Conv1 -> Conv2 -> Conv3, MobileNet's expand / depthwise / project) are swept a fixed number of times, in
// the graph's order (the result is the same bits every run). Scales are computed in double, the weights rounded once
// per sweep to float32. Relu6 (Clip(0, 6)) is not homogeneous: run relu6-to-relu first to equalize across it (the
// paper's choice; it changes what the model computes where an activation exceeds 6). Not in a default pipeline.
#include "ir/rewriter.hpp"
#include "ops/registry.hpp"
#include "passes/passes.hpp"

#include <cmath>

namespace npuc::passes {

namespace {

constexpr int kSweeps = 8;

/// Whether a node is a plain (constant-weight, float32) 2-D Conv whose activation, if fused, is homogeneous.
bool equalizableConv(const ir::Graph& g, const ir::Node& n) {
  if (n.op != "Conv" || !(n.domain.empty() || n.domain == "ai.npuc")) return false;
  const std::string act = n.attrString("activation", "");
  if (!act.empty() && act != "Relu" && act != "LeakyRelu") return false;
  const Tensor* w = ir::constantInput(g, n, 1, DType::kF32);
  if (!w || w->rank() != 4) return false;
  return !n.hasInput(2) || ir::constantInput(g, n, 2, DType::kF32);
}

bool homogeneous(const ir::Node& n) {
  return n.domain.empty() && (n.op == "Relu" || n.op == "LeakyRelu") && n.outputs.size() == 1;
}

struct Pair {
  ir::NodeId first, second;
};

/// Conv1 -> [Relu | LeakyRelu] -> Conv2 with nothing else reading the values in between.
std::vector<Pair> findPairs(const ir::Graph& g) {
  std::vector<Pair> pairs;
  const auto uses = g.uses();
  for (ir::NodeId id : g.order()) {
    const ir::Node& c1 = g.node(id);
    if (!equalizableConv(g, c1) || c1.outputs.size() != 1) continue;
    ir::ValueId v = c1.outputs[0];
    std::optional<ir::NodeId> next = ir::soleReader(g, uses, v);
    if (next && homogeneous(g.node(*next))) {
      v = g.node(*next).outputs[0];
      next = ir::soleReader(g, uses, v);
    }
    if (!next) continue;
    const ir::Node& c2 = g.node(*next);
    if (!equalizableConv(g, c2) || c2.inputs[0] != v) continue;  // (read as its data, not as its weights)
    pairs.push_back({id, *next});
  }
  return pairs;
}

/// Replaces input `i` of `node` by a new constant named after the node.
void setConstant(ir::Graph& g, ir::NodeId node, int i, Tensor t) {
  const std::string name = g.uniqueValueName(g.node(node).name + (i == 1 ? "_w_cle" : "_b_cle"));
  ir::ValueId v = g.addConstant(name, std::move(t)).id;
  g.node(node).inputs[static_cast<size_t>(i)] = v;
}

/// One equalization of a pair; false when no channel changed.
bool equalize(ir::Graph& g, const Pair& p) {
  const ir::Node& c1 = g.node(p.first);
  const ir::Node& c2 = g.node(p.second);
  const Tensor& w1 = *ir::constantInput(g, c1, 1, DType::kF32);
  const Tensor& w2 = *ir::constantInput(g, c2, 1, DType::kF32);
  const int64_t C = w1.dim(0);  // Conv1's output channels = Conv2's input channels
  const int64_t G2 = ops::attrInt(c2, "group");
  const int64_t M2 = w2.dim(0), per_group = w2.dim(1), taps2 = w2.dim(2) * w2.dim(3);
  if (G2 < 1 || per_group * G2 != C || M2 % G2 != 0) return false;
  const int64_t row1 = w1.numel() / C, outs_per_group = M2 / G2;
  std::vector<double> r1(static_cast<size_t>(C), 0.0), r2(static_cast<size_t>(C), 0.0);
  const float* a = w1.data<float>();
  const float* b = w2.data<float>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < row1; ++k) r1[static_cast<size_t>(c)] = std::max(r1[static_cast<size_t>(c)], std::fabs(static_cast<double>(a[c * row1 + k])));
  // Conv2's weights reading input channel c: output channels of c's group, at c's index within the group.
  for (int64_t c = 0; c < C; ++c) {
    const int64_t grp = c / per_group, j = c % per_group;
    for (int64_t m = grp * outs_per_group; m < (grp + 1) * outs_per_group; ++m)
      for (int64_t t = 0; t < taps2; ++t)
        r2[static_cast<size_t>(c)] = std::max(r2[static_cast<size_t>(c)], std::fabs(static_cast<double>(b[(m * per_group + j) * taps2 + t])));
  }
  std::vector<double> s(static_cast<size_t>(C), 1.0);
  bool changed = false;
  for (size_t c = 0; c < s.size(); ++c) {
    if (r1[c] > 0 && r2[c] > 0 && std::isfinite(r1[c]) && std::isfinite(r2[c])) s[c] = std::sqrt(r1[c] / r2[c]);
    if (std::fabs(std::log(s[c])) > 1e-6) changed = true;
    else s[c] = 1.0;
  }
  if (!changed) return false;
  Tensor nw1 = w1.clone(), nw2 = w2.clone();
  float* x = nw1.data<float>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < row1; ++k) x[c * row1 + k] = static_cast<float>(static_cast<double>(x[c * row1 + k]) / s[static_cast<size_t>(c)]);
  float* y = nw2.data<float>();
  for (int64_t m = 0; m < M2; ++m)
    for (int64_t j = 0; j < per_group; ++j) {
      const double f = s[static_cast<size_t>((m / outs_per_group) * per_group + j)];
      for (int64_t t = 0; t < taps2; ++t) y[(m * per_group + j) * taps2 + t] = static_cast<float>(static_cast<double>(y[(m * per_group + j) * taps2 + t]) * f);
    }
  if (c1.hasInput(2)) {
    Tensor nb = ir::constantInput(g, c1, 2, DType::kF32)->clone();
    float* z = nb.data<float>();
    for (int64_t c = 0; c < C && c < nb.numel(); ++c) z[c] = static_cast<float>(static_cast<double>(z[c]) / s[static_cast<size_t>(c)]);
    setConstant(g, p.first, 2, std::move(nb));
  }
  setConstant(g, p.first, 1, std::move(nw1));
  setConstant(g, p.second, 1, std::move(nw2));
  return true;
}

}  // namespace

bool EqualizeCrossLayerPass::run(ir::Graph& g, PassContext&) {
  const std::vector<Pair> pairs = findPairs(g);
  bool changed = false;
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    bool any = false;
    for (const Pair& p : pairs) any = equalize(g, p) || any;
    changed = changed || any;
    if (!any) break;
  }
  return changed;
}

}  // namespace npuc::passes
