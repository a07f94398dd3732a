// fuse-activations: an activation that is the only consumer of a Conv, ConvTranspose, Gemm or MatMul becomes
// part of it: the node turns into its ai.npuc twin with attributes activation, activation_alpha/beta and fused
// (the ONNX ops it stands for). Relu6 is Clip(0, 6).
#include "passes/match.hpp"
#include "passes/passes.hpp"
#include "ops/registry.hpp"

#include <set>

namespace npuc::passes {

namespace {

struct Act {
  std::string name;
  float alpha = 0, beta = 0;
};

std::optional<Act> activationOf(const ir::Graph& g, const ir::Node& n) {
  static const std::set<std::string> plain = {"Relu", "Sigmoid", "Tanh"};
  if (n.domain.empty()) {
    if (plain.count(n.op)) return Act{n.op};
    if (n.op == "LeakyRelu") return Act{"LeakyRelu", ops::attrFloat(n, "alpha")};
    if (n.op == "HardSigmoid") return Act{"HardSigmoid", ops::attrFloat(n, "alpha"), ops::attrFloat(n, "beta")};
    if (n.op == "HardSwish") return Act{"HardSwish"};
    if (n.op == "Clip") {
      auto b = ops::clipBounds(g, n);
      if (b) return Act{"Clip", b->first, b->second};
    }
    return std::nullopt;
  }
  if (n.domain == "ai.npuc" && (n.op == "Swish" || n.op == "Mish" || n.op == "HardSwish")) return Act{n.op};
  return std::nullopt;
}

}  // namespace

bool FuseActivationsPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  Uses uses = g.uses();
  std::vector<ir::NodeId> order = g.order();
  for (ir::NodeId id : order) {
    if (!g.hasNode(id)) continue;
    ir::Node& n = g.node(id);
    bool mac = n.op == "Conv" || n.op == "ConvTranspose" || n.op == "Gemm" || n.op == "MatMul";
    if (!mac || !(n.domain.empty() || n.domain == "ai.npuc") || n.hasAttr("activation") || n.outputs.size() != 1) continue;
    ir::ValueId y = n.outputs[0];
    if (!singleUse(g, uses, y) || g.value(y).type.dtype != DType::kF32) continue;
    ir::NodeId aid = uses[y][0].first;
    const ir::Node& an = g.node(aid);
    auto act = activationOf(g, an);
    if (!act || an.inputs[0] != y) continue;
    std::vector<std::string> fused = n.attrs.count("fused") ? *n.attrs.at("fused").get<std::vector<std::string>>()
                                                            : std::vector<std::string>{n.op};
    const size_t ops_before = fused.size();
    if (an.attrs.count("fused")) {
      for (auto& f : *an.attrs.at("fused").get<std::vector<std::string>>()) fused.push_back(f);
    } else {
      fused.push_back(an.op);
    }
    // What the activation brought, so that split-activations can give it back: its ops (the last of "fused") and its
    // node's name then the nodes merged into it (the last of merged_nodes).
    std::vector<std::string> source = {an.name};
    source.insert(source.end(), an.merged_nodes.begin(), an.merged_nodes.end());
    n.merged_nodes.insert(n.merged_nodes.end(), source.begin(), source.end());
    n.attrs["activation_source"] = ir::Attr(source);
    n.attrs["activation_ops"] = ir::Attr(static_cast<int64_t>(fused.size() - ops_before));
    ir::ValueId out = an.outputs[0];
    g.removeNode(aid);
    // The node now produces the activation's output value (its own is dropped).
    n.outputs[0] = out;
    g.value(out).producer = id;
    g.value(out).producer_output = 0;
    g.removeValue(y);
    n.domain = "ai.npuc";
    n.attrs["activation"] = ir::Attr(act->name);
    if (act->alpha != 0 || act->name == "Clip") n.attrs["activation_alpha"] = ir::Attr(act->alpha);
    if (act->beta != 0 || act->name == "Clip") n.attrs["activation_beta"] = ir::Attr(act->beta);
    n.attrs["fused"] = ir::Attr(fused);
    changed = true;
    uses = g.uses();
  }
  if (changed) g.topoSort();
  return changed;
}

bool SplitActivationsPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  const std::vector<ir::NodeId> order = g.order();
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    const std::string act = n.attrString("activation", "");
    if (n.domain != "ai.npuc" || act.empty() || act == "Relu" || act == "Clip" || n.outputs.size() != 1) continue;
    const ir::ValueId y = n.outputs[0];
    const ir::ValueId pre = g.addValue(g.uniqueValueName(g.value(y).name + "_pre_" + act), g.value(y).type).id;
    ir::Node& c = g.node(id);
    const float alpha = c.attrFloat("activation_alpha", 0), beta = c.attrFloat("activation_beta", 0);
    // The activation's own ops and source nodes go back to its node (reports: the layer and the table name each).
    std::string name = c.name + "/" + act;
    std::vector<std::string> ops = {act}, merged;
    const auto* src = c.attrs.count("activation_source") ? c.attrs.at("activation_source").get<std::vector<std::string>>() : nullptr;
    const std::vector<std::string> source = src ? *src : std::vector<std::string>{};
    const size_t nops = static_cast<size_t>(c.attrInt("activation_ops", 0));
    auto* fused = c.attrs.count("fused") ? c.attrs.at("fused").get<std::vector<std::string>>() : nullptr;
    if (!source.empty() && c.merged_nodes.size() >= source.size() &&
        std::equal(source.begin(), source.end(), c.merged_nodes.end() - static_cast<std::ptrdiff_t>(source.size())) && fused &&
        nops >= 1 && fused->size() > nops) {
      name = source[0];
      merged.assign(source.begin() + 1, source.end());
      c.merged_nodes.resize(c.merged_nodes.size() - source.size());
      ops.assign(fused->end() - static_cast<std::ptrdiff_t>(nops), fused->end());
      std::vector<std::string> kept(fused->begin(), fused->end() - static_cast<std::ptrdiff_t>(nops));
      if (kept.size() > 1) c.attrs["fused"] = ir::Attr(kept);
      else c.attrs.erase("fused");
    }
    for (const char* a : {"activation", "activation_alpha", "activation_beta", "activation_source", "activation_ops"}) c.attrs.erase(a);
    c.outputs[0] = pre;
    g.value(pre).producer = id;
    g.value(pre).producer_output = 0;
    const bool npuc = act == "Swish" || act == "Mish" || (act == "HardSwish" && g.opset < 14);
    ir::Node& a = g.addNode(act, name, {pre}, {y}, npuc ? "ai.npuc" : "");
    a.merged_nodes = merged;
    if (ops.size() > 1) a.attrs["fused"] = ir::Attr(ops);
    if (act == "LeakyRelu") a.attrs["alpha"] = ir::Attr(alpha);
    if (act == "HardSigmoid") a.attrs["alpha"] = ir::Attr(alpha), a.attrs["beta"] = ir::Attr(beta);
    changed = true;
  }
  if (changed) g.topoSort();
  return changed;
}

bool Relu6ToReluPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  for (ir::NodeId id : g.order()) {
    ir::Node& n = g.node(id);
    if (n.op == "Clip" && n.domain.empty()) {
      auto b = ops::clipBounds(g, n);
      if (!b || b->first != 0.0f || b->second != 6.0f) continue;
      n.op = "Relu";
      n.inputs.resize(1);
      n.attrs.clear();
      changed = true;
    } else if (n.domain == "ai.npuc" && n.attrString("activation", "") == "Clip" && n.attrFloat("activation_alpha", 1) == 0.0f &&
               n.attrFloat("activation_beta", 0) == 6.0f) {
      n.attrs["activation"] = ir::Attr(std::string("Relu"));
      n.attrs.erase("activation_alpha");
      n.attrs.erase("activation_beta");
      changed = true;
    }
  }
  return changed;
}

}  // namespace npuc::passes
