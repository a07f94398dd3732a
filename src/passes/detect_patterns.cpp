// detect-patterns: named ops from the ONNX op sequences exporters emit for them.
//   Swish      x * Sigmoid(x)                                  -> ai.npuc.Swish(x)
//   Mish       x * Tanh(Softplus(x))                            -> ai.npuc.Mish(x)
//   HardSwish  x * HardSigmoid(x; 1/6, 1/2)                     -> HardSwish(x) (ai.npuc below opset 14)
//              x * (Clip(x + 3, 0, 6) / 6), (x * Clip(x + 3, 0, 6)) / 6 — "/ 6" also as * (1/6) or as the
//              BatchNormalization fold-batchnorm makes of it at load
//   GlobalAveragePool  ReduceMean over the spatial axes (keepdims), AveragePool whose window is the whole plane
//   Flatten    Reshape of an N-D tensor to [N, rest]
//   SpaceToDepth  Reshape-Transpose(0,3,5,1,2,4)-Reshape
//   upsample   Reshape-Expand-Reshape -> Resize (nearest, asymmetric, floor)
//   Focus      Concat on channels of the four stride-2 sub-images -> ai.npuc.Focus (SpaceToDepth in its order)
//   (and Pads that pad nothing are removed)
// Each rewrite only fires when the intermediate values have no other use.
#include "engine/engine.hpp"
#include "ir/rewriter.hpp"
#include "passes/match.hpp"
#include "passes/passes.hpp"
#include "support/log.hpp"
#include "ops/registry.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace npuc::passes {

namespace {

bool near(std::optional<double> v, double want) { return v && std::fabs(*v - want) < 1e-6; }

/// If `mul` is x * f(x) for a unary chain, returns x and the chain's nodes.
struct Match {
  ir::ValueId x = ir::kNoValue;
  std::vector<ir::NodeId> nodes;
};

// x * Sigmoid(x) (either operand order)
std::optional<Match> swish(const ir::Graph& g, const Uses& u, const ir::Node& mul) {
  for (int s = 0; s < 2; ++s) {
    const ir::Node* sig = producer(g, mul.inputs[static_cast<size_t>(s)], "Sigmoid");
    if (sig && sig->inputs[0] == mul.inputs[static_cast<size_t>(1 - s)] && singleUse(g, u, sig->outputs[0]))
      return Match{sig->inputs[0], {sig->id, mul.id}};
  }
  return std::nullopt;
}

std::optional<Match> mish(const ir::Graph& g, const Uses& u, const ir::Node& mul) {
  for (int s = 0; s < 2; ++s) {
    const ir::Node* th = producer(g, mul.inputs[static_cast<size_t>(s)], "Tanh");
    if (!th || !singleUse(g, u, th->outputs[0])) continue;
    const ir::Node* sp = producer(g, th->inputs[0], "Softplus");
    if (sp && sp->inputs[0] == mul.inputs[static_cast<size_t>(1 - s)] && singleUse(g, u, sp->outputs[0]))
      return Match{sp->inputs[0], {sp->id, th->id, mul.id}};
  }
  return std::nullopt;
}

// Relu6(x + 3) -> x, where Relu6 is Clip(v, 0, 6) or Clip(Relu(v), lo <= 0, 6) (torch's F.relu6 export)
std::optional<Match> relu6OfXPlus3(const ir::Graph& g, const Uses& u, ir::ValueId v) {
  const ir::Node* clip = producer(g, v, "Clip");
  if (!clip || !singleUse(g, u, v)) return std::nullopt;
  auto b = ops::clipBounds(g, *clip);
  if (!b || b->second != 6.0f || b->first > 0.0f) return std::nullopt;
  std::vector<ir::NodeId> nodes{clip->id};
  ir::ValueId in = clip->inputs[0];
  if (const ir::Node* relu = producer(g, in, "Relu")) {
    if (!singleUse(g, u, in)) return std::nullopt;
    nodes.insert(nodes.begin(), relu->id);
    in = relu->inputs[0];
  } else if (b->first != 0.0f) {
    return std::nullopt;
  }
  const ir::Node* add = producer(g, in, "Add");
  if (!add || !singleUse(g, u, add->outputs[0])) return std::nullopt;
  nodes.insert(nodes.begin(), add->id);
  for (int s = 0; s < 2; ++s)
    if (near(constScalar(g, add->inputs[static_cast<size_t>(s)]), 3.0)) return Match{add->inputs[static_cast<size_t>(1 - s)], nodes};
  return std::nullopt;
}

/// If `n` computes v / 6 — Div by 6, Mul by 1/6, or the BatchNormalization fold-batchnorm makes of such a Div at
/// load ("equivalent to BatchNormalization": every channel scaled by 1/6, no offset) — returns v.
std::optional<ir::ValueId> dividedBySix(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "Div" && near(constScalar(g, n.inputs[1]), 6.0)) return n.inputs[0];
  if (n.op == "Mul")
    for (int s = 0; s < 2; ++s)
      if (near(constScalar(g, n.inputs[static_cast<size_t>(1 - s)]), 1.0 / 6)) return n.inputs[static_cast<size_t>(s)];
  if (n.op == "BatchNormalization" && n.numInputs() == 5 && n.outputs.size() == 1) {
    const Tensor* p[4];
    for (int i = 0; i < 4; ++i)
      if (!(p[i] = ir::constantInput(g, n, i + 1, DType::kF32))) return std::nullopt;
    const int64_t c = p[0]->numel();
    for (int i = 1; i < 4; ++i)
      if (p[i]->numel() != c) return std::nullopt;
    const double eps = ops::attrFloat(n, "epsilon");
    for (int64_t k = 0; k < c; ++k) {
      const double a = p[0]->data<float>()[k] / std::sqrt(static_cast<double>(p[3]->data<float>()[k]) + eps);
      const double b = p[1]->data<float>()[k] - p[2]->data<float>()[k] * a;
      if (std::fabs(a - 1.0 / 6) > 1e-6 || std::fabs(b) > 1e-6) return std::nullopt;
    }
    return n.inputs[0];
  }
  return std::nullopt;
}

std::optional<Match> hardSwish(const ir::Graph& g, const Uses& u, const ir::Node& n) {
  if (n.op == "Mul" && n.domain.empty()) {
    for (int s = 0; s < 2; ++s) {
      ir::ValueId other = n.inputs[static_cast<size_t>(1 - s)];
      // x * HardSigmoid(x; 1/6, 1/2)
      if (const ir::Node* hs = producer(g, n.inputs[static_cast<size_t>(s)], "HardSigmoid")) {
        if (hs->inputs[0] == other && singleUse(g, u, hs->outputs[0]) && std::fabs(ops::attrFloat(*hs, "alpha") - 1.0f / 6) < 1e-6 &&
            std::fabs(ops::attrFloat(*hs, "beta") - 0.5f) < 1e-6)
          return Match{other, {hs->id, n.id}};
      }
      // x * (Clip(x + 3, 0, 6) / 6): the manual's Add, Clip, Div, Mul
      if (const ir::Node* div = producer(g, n.inputs[static_cast<size_t>(s)])) {
        const std::optional<ir::ValueId> v = dividedBySix(g, *div);
        if (!v || !singleUse(g, u, div->outputs[0])) continue;
        auto r = relu6OfXPlus3(g, u, *v);
        if (r && r->x == other) {
          r->nodes.push_back(div->id);
          r->nodes.push_back(n.id);
          return r;
        }
      }
    }
  }
  if (const std::optional<ir::ValueId> v = dividedBySix(g, n)) {
    // (x * Clip(x + 3, 0, 6)) / 6
    const ir::Node* mul = producer(g, *v, "Mul");
    if (!mul || !singleUse(g, u, mul->outputs[0])) return std::nullopt;
    for (int s = 0; s < 2; ++s) {
      auto r = relu6OfXPlus3(g, u, mul->inputs[static_cast<size_t>(s)]);
      if (r && r->x == mul->inputs[static_cast<size_t>(1 - s)]) {
        r->nodes.push_back(mul->id);
        r->nodes.push_back(n.id);
        return r;
      }
    }
  }
  return std::nullopt;
}

bool isGlobalAverage(const ir::Graph& g, const ir::Node& n) {
  const ir::Type& x = g.value(n.inputs[0]).type;
  if (!x.isStatic() || x.shape.size() != 4) return false;
  if (n.op == "ReduceMean") {
    auto axes = n.attrInts("axes");
    if (g.opset >= 18) return false;
    for (auto& a : axes)
      if (a < 0) a += 4;
    std::sort(axes.begin(), axes.end());
    return n.attrInt("keepdims", 1) == 1 && axes == std::vector<int64_t>{2, 3};
  }
  if (n.op == "AveragePool") {
    auto k = n.attrInts("kernel_shape");
    auto pads = n.attrInts("pads", {0, 0, 0, 0});
    bool no_pads = std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
    return k == std::vector<int64_t>{x.shape[2], x.shape[3]} && no_pads && n.attrString("auto_pad", "NOTSET") == "NOTSET" &&
           n.attrInt("ceil_mode", 0) == 0;
  }
  return false;
}

std::vector<int64_t> constInts(const ir::Graph& g, const ir::Node& n, int i) {
  if (!n.hasInput(i) || !g.value(n.inputs[static_cast<size_t>(i)]).isConstant()) return {};
  return g.value(n.inputs[static_cast<size_t>(i)]).constant->toInt64();
}

const Shape* staticShape(const ir::Graph& g, ir::ValueId v) {
  const ir::Type& t = g.value(v).type;
  return t.isStatic() ? &t.shape : nullptr;
}

/// The ops of a matched pattern's nodes, in order (a replacing node's merged_ops).
std::vector<std::string> opsOf(const ir::Graph& g, const std::vector<ir::NodeId>& nodes) {
  std::vector<std::string> ops;
  for (ir::NodeId id : nodes) ops.push_back(g.node(id).op);
  return ops;
}

// Reshape [N,C,H,W] -> [N,C,H/b,b,W/b,b], Transpose [0,3,5,1,2,4], Reshape -> [N,C*b*b,H/b,W/b]: SpaceToDepth(b).
std::optional<std::pair<Match, int64_t>> spaceToDepth(const ir::Graph& g, const Uses& u, const ir::Node& r2) {
  if (r2.op != "Reshape") return std::nullopt;
  const ir::Node* tr = producer(g, r2.inputs[0], "Transpose");
  if (!tr || !singleUse(g, u, tr->outputs[0]) || tr->attrInts("perm") != std::vector<int64_t>{0, 3, 5, 1, 2, 4}) return std::nullopt;
  const ir::Node* r1 = producer(g, tr->inputs[0], "Reshape");
  if (!r1 || !singleUse(g, u, r1->outputs[0])) return std::nullopt;
  const Shape* x = staticShape(g, r1->inputs[0]);
  const Shape* mid = staticShape(g, r1->outputs[0]);
  const Shape* y = staticShape(g, r2.outputs[0]);
  if (!x || !mid || !y || x->size() != 4 || mid->size() != 6) return std::nullopt;
  int64_t b = (*mid)[3];
  Shape want_mid{(*x)[0], (*x)[1], (*x)[2] / b, b, (*x)[3] / b, b};
  Shape want_y{(*x)[0], (*x)[1] * b * b, (*x)[2] / b, (*x)[3] / b};
  if (b < 2 || (*x)[2] % b || (*x)[3] % b || *mid != want_mid || *y != want_y) return std::nullopt;
  return std::make_pair(Match{r1->inputs[0], {r1->id, tr->id, r2.id}}, b);
}

// Any chain of Reshape/Transpose from an NCHW tensor to [N, C*b*b, H/b, W/b] that moves elements exactly as
// SpaceToDepth(b) does — Darknet's reorg (Reshape-Transpose x3-Reshape), other exporters' variants. Decided by
// running the chain on an index tensor (every element's position) with the reference engine and comparing
// with SpaceToDepth's index map, so any equivalent spelling is found and nothing else is.
std::optional<std::pair<Match, int64_t>> permutationSpaceToDepth(const ir::Graph& g, const Uses& u, const ir::Node& last) {
  if (last.op != "Reshape" || !last.domain.empty()) return std::nullopt;
  std::vector<const ir::Node*> chain = {&last};
  bool transpose = false;
  for (const ir::Node* cur = &last; chain.size() < 10;) {
    const ir::Node* p = producer(g, cur->inputs[0]);
    if (!p || !p->domain.empty() || (p->op != "Reshape" && p->op != "Transpose") || !singleUse(g, u, p->outputs[0])) break;
    transpose |= p->op == "Transpose";
    chain.push_back(p);
    cur = p;
  }
  if (chain.size() < 3 || !transpose) return std::nullopt;
  std::reverse(chain.begin(), chain.end());
  ir::ValueId root = chain.front()->inputs[0];
  const Shape* x = staticShape(g, root);
  const Shape* y = staticShape(g, last.outputs[0]);
  if (!x || !y || x->size() != 4 || y->size() != 4 || (*x)[1] == 0 || shapeNumel(*x) > (int64_t{1} << 24)) return std::nullopt;
  const Shape& X = *x;
  int64_t b = (*y)[2] ? X[2] / (*y)[2] : 0;
  if (b < 2 || X[2] % b || X[3] % b || *y != Shape{X[0], X[1] * b * b, X[2] / b, X[3] / b}) return std::nullopt;
  for (const ir::Node* n : chain)
    if (n->op == "Reshape" && (!n->hasInput(1) || !g.value(n->inputs[1]).isConstant())) return std::nullopt;
  Tensor t(DType::kF32, X);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  try {
    for (const ir::Node* n : chain) {
      std::vector<Tensor> ins = {t};
      if (n->op == "Reshape") ins.push_back(*g.value(n->inputs[1]).constant);
      t = engine::evalNode(g, *n, ins)[0];
    }
  } catch (const Error&) {
    return std::nullopt;
  }
  if (t.shape() != *y) return std::nullopt;
  const float* got = t.data<float>();
  const int64_t C = X[1], H = X[2], W = X[3], oh = H / b, ow = W / b;
  for (int64_t n = 0, o = 0; n < X[0]; ++n)
    for (int64_t oc = 0; oc < C * b * b; ++oc)
      for (int64_t h = 0; h < oh; ++h)
        for (int64_t w = 0; w < ow; ++w, ++o) {
          int64_t blk = oc / C, c = oc % C, by = blk / b, bx = blk % b;
          if (got[o] != static_cast<float>(((n * C + c) * H + h * b + by) * W + w * b + bx)) return std::nullopt;
        }
  std::vector<ir::NodeId> ids;
  for (const ir::Node* n : chain) ids.push_back(n->id);
  return std::make_pair(Match{root, ids}, b);
}

// Reshape [N,C,H,W] -> [N,C,H,1,W,1], Expand -> [N,C,H,s,W,s], Reshape -> [N,C,H*s,W*s]: nearest upsample by s.
std::optional<std::pair<Match, int64_t>> upsampleExpand(const ir::Graph& g, const Uses& u, const ir::Node& r2) {
  if (r2.op != "Reshape") return std::nullopt;
  const ir::Node* ex = producer(g, r2.inputs[0], "Expand");
  if (!ex || !singleUse(g, u, ex->outputs[0])) return std::nullopt;
  const ir::Node* r1 = producer(g, ex->inputs[0], "Reshape");
  if (!r1 || !singleUse(g, u, r1->outputs[0])) return std::nullopt;
  const Shape* x = staticShape(g, r1->inputs[0]);
  const Shape* mid = staticShape(g, r1->outputs[0]);
  const Shape* big = staticShape(g, ex->outputs[0]);
  const Shape* y = staticShape(g, r2.outputs[0]);
  if (!x || !mid || !big || !y || x->size() != 4) return std::nullopt;
  const Shape& X = *x;
  if (*mid != Shape{X[0], X[1], X[2], 1, X[3], 1} || big->size() != 6) return std::nullopt;
  int64_t s = (*big)[3];
  if (s < 2 || *big != Shape{X[0], X[1], X[2], s, X[3], s} || *y != Shape{X[0], X[1], X[2] * s, X[3] * s}) return std::nullopt;
  return std::make_pair(Match{r1->inputs[0], {r1->id, ex->id, r2.id}}, s);
}

// Concat(axis 1) of four stride-2 sub-images of one NCHW tensor: offsets (h0, w0) per branch, in concat order.
std::optional<std::pair<Match, std::vector<int64_t>>> focusPattern(const ir::Graph& g, const Uses& u, const ir::Node& cat) {
  if (cat.op != "Concat" || cat.numInputs() != 4 || cat.attrInt("axis", 0) != 1) return std::nullopt;
  ir::ValueId root = ir::kNoValue;
  std::vector<int64_t> offsets;
  std::vector<ir::NodeId> nodes;
  for (int i = 0; i < 4; ++i) {
    int64_t h0 = -1, w0 = -1;
    ir::ValueId v = cat.inputs[static_cast<size_t>(i)];
    std::vector<ir::NodeId> chain;
    // One Slice per axis (the exporters' eight), or one over both axes (four): starts 0 or 1, step 2 on H and W.
    while (const ir::Node* sl = producer(g, v, "Slice")) {
      auto starts = constInts(g, *sl, 1), axes = constInts(g, *sl, 3), steps = constInts(g, *sl, 4);
      if (g.opset < 10 || starts.empty() || starts.size() > 2 || axes.size() != starts.size() || steps != std::vector<int64_t>(starts.size(), 2))
        return std::nullopt;
      for (size_t j = 0; j < axes.size(); ++j) {
        const int64_t axis = axes[j] < 0 ? axes[j] + 4 : axes[j];
        if ((axis != 2 && axis != 3) || (starts[j] != 0 && starts[j] != 1) || (axis == 2 ? h0 : w0) >= 0) return std::nullopt;
        (axis == 2 ? h0 : w0) = starts[j];
      }
      chain.push_back(sl->id);
      v = sl->inputs[0];
    }
    if (h0 < 0 || w0 < 0 || (root != ir::kNoValue && v != root)) return std::nullopt;
    root = v;
    offsets.push_back(h0);
    offsets.push_back(w0);
    for (ir::NodeId id : chain)
      if (std::find(nodes.begin(), nodes.end(), id) == nodes.end()) nodes.push_back(id);
  }
  const Shape* x = staticShape(g, root);
  if (!x || x->size() != 4 || (*x)[2] % 2 || (*x)[3] % 2) return std::nullopt;
  // The slices run to the end of each axis: the result is every pixel once, [N, 4C, H/2, W/2].
  const Shape* y = staticShape(g, cat.outputs[0]);
  if (!y || *y != Shape{(*x)[0], 4 * (*x)[1], (*x)[2] / 2, (*x)[3] / 2}) return std::nullopt;
  std::set<std::pair<int64_t, int64_t>> distinct;
  for (int i = 0; i < 4; ++i) distinct.insert({offsets[static_cast<size_t>(2 * i)], offsets[static_cast<size_t>(2 * i + 1)]});
  if (distinct.size() != 4) return std::nullopt;
  // Every slice result must be used only inside the pattern.
  for (ir::NodeId id : nodes) {
    const ir::Node& sl = g.node(id);
    auto it = u.find(sl.outputs[0]);
    if (it == u.end()) return std::nullopt;
    for (auto& [user, idx] : it->second)
      if (user != cat.id && std::find(nodes.begin(), nodes.end(), user) == nodes.end()) return std::nullopt;
  }
  nodes.push_back(cat.id);
  return std::make_pair(Match{root, nodes}, offsets);
}

bool isNoOpPad(const ir::Graph& g, const ir::Node& n) {
  std::vector<int64_t> pads;
  if (g.opset < 11) {
    pads = n.attrInts("pads");
  } else {
    if (!n.hasInput(1) || !g.value(n.inputs[1]).isConstant()) return false;
    pads = g.value(n.inputs[1]).constant->toInt64();
  }
  return !pads.empty() && std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
}

bool isFlatten(const ir::Graph& g, const ir::Node& n) {
  if (n.op != "Reshape") return false;
  const ir::Type& x = g.value(n.inputs[0]).type;
  const ir::Type& y = g.value(n.outputs[0]).type;
  if (!x.isStatic() || !y.isStatic() || x.shape.size() < 3 || y.shape.size() != 2) return false;
  return y.shape[0] == x.shape[0] && y.shape[1] == shapeNumel(x.shape) / std::max<int64_t>(1, x.shape[0]);
}

}  // namespace

bool DetectPatternsPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  Uses uses = g.uses();
  std::vector<ir::NodeId> order = g.order();
  for (ir::NodeId id : order) {
    if (!g.hasNode(id)) continue;
    const ir::Node& n = g.node(id);
    if (!n.domain.empty()) continue;
    std::optional<Match> m;
    std::string op, domain = "ai.npuc";
    if (n.op == "Mul" && (m = swish(g, uses, n))) op = "Swish";
    else if (n.op == "Mul" && (m = mish(g, uses, n))) op = "Mish";
    else if ((n.op == "Mul" || n.op == "Div" || n.op == "BatchNormalization") && (m = hardSwish(g, uses, n))) {
      op = "HardSwish";
      if (g.opset >= 14) domain.clear();
    }
    if (m) {
      ir::ValueId out = n.outputs[0];
      std::string name = n.name;
      std::vector<std::string> fused;
      for (ir::NodeId f : m->nodes) {  // (the model's ops: a batch norm fold-batchnorm made of a Div is that Div)
        const ir::Node& fn = g.node(f);
        if (fn.op == "BatchNormalization" && !fn.merged_ops.empty()) fused.insert(fused.end(), fn.merged_ops.begin(), fn.merged_ops.end());
        else fused.push_back(fn.op);
      }
      replaceWith(g, m->nodes, op, domain, name, {m->x}, out).attrs["fused"] = ir::Attr(fused);
      log::info("passes", "detect-patterns: {} at '{}'", op, name);
      changed = true;
      uses = g.uses();
      continue;
    }
    if (auto m2 = spaceToDepth(g, uses, n)) {
      ir::ValueId out = n.outputs[0];
      std::string name = n.name;
      std::vector<std::string> parts = opsOf(g, m2->first.nodes);
      ir::Node& r = replaceWith(g, m2->first.nodes, "SpaceToDepth", "", name, {m2->first.x}, out);
      r.attrs["blocksize"] = ir::Attr(m2->second);
      r.merged_ops = std::move(parts);  // (what it came from: DRP-AI's component case has rules of its own)
      changed = true;
      uses = g.uses();
      continue;
    }
    if (auto m2 = permutationSpaceToDepth(g, uses, n)) {
      ir::ValueId out = n.outputs[0];
      std::string name = n.name;
      std::vector<std::string> parts = opsOf(g, m2->first.nodes);
      ir::Node& r = replaceWith(g, m2->first.nodes, "SpaceToDepth", "", name, {m2->first.x}, out);
      r.attrs["blocksize"] = ir::Attr(m2->second);
      r.merged_ops = std::move(parts);
      log::info("passes", "detect-patterns: SpaceToDepth (reorg, {} Reshape/Transpose nodes) at '{}'", m2->first.nodes.size(), name);
      changed = true;
      uses = g.uses();
      continue;
    }
    if (auto m2 = upsampleExpand(g, uses, n)) {
      ir::ValueId out = n.outputs[0];
      std::string name = n.name;
      float sc = static_cast<float>(m2->second);
      ir::ValueId scales = g.addConstant(g.uniqueValueName(name + "_scales"), Tensor::fromVector<float>({4}, {1, 1, sc, sc})).id;
      ir::Node& r = replaceWith(g, m2->first.nodes, g.opset >= 10 ? "Resize" : "Upsample", "", name,
                                g.opset >= 11 ? std::vector<ir::ValueId>{m2->first.x, ir::kNoValue, scales}
                                              : std::vector<ir::ValueId>{m2->first.x, scales},
                                out);
      r.attrs["mode"] = ir::Attr(std::string("nearest"));
      r.merged_ops = {"Reshape", "Expand", "Reshape"};  // (what it came from: targets limit this upsample's factor)
      if (g.opset >= 11) {
        r.attrs["coordinate_transformation_mode"] = ir::Attr(std::string("asymmetric"));
        r.attrs["nearest_mode"] = ir::Attr(std::string("floor"));
      }
      changed = true;
      uses = g.uses();
      continue;
    }
    if (auto m2 = focusPattern(g, uses, n)) {
      ir::ValueId out = n.outputs[0];
      std::string name = n.name;
      bool s2d = m2->second == std::vector<int64_t>{0, 0, 0, 1, 1, 0, 1, 1};  // SpaceToDepth's channel order
      ir::Node& r = replaceWith(g, m2->first.nodes, s2d ? "SpaceToDepth" : "Focus", s2d ? "" : "ai.npuc", name, {m2->first.x}, out);
      if (s2d) r.attrs["blocksize"] = ir::Attr(int64_t{2});
      else r.attrs["offsets"] = ir::Attr(m2->second);
      changed = true;
      uses = g.uses();
      continue;
    }
    if (n.op == "Pad" && isNoOpPad(g, n)) {
      ir::ValueId x = n.inputs[0], out = n.outputs[0];
      ir::Rewriter rw(g);
      rw.replaceAllUses(out, x);
      g.removeNode(id);
      changed = true;
      uses = g.uses();
      continue;
    }
    if ((n.op == "ReduceMean" || n.op == "AveragePool") && isGlobalAverage(g, n)) {
      ir::ValueId x = n.inputs[0], out = n.outputs[0];
      std::string name = n.name;
      replaceWith(g, {id}, "GlobalAveragePool", "", name, {x}, out);
      changed = true;
      continue;
    }
    if (isFlatten(g, n)) {
      ir::ValueId x = n.inputs[0], out = n.outputs[0];
      std::string name = n.name;
      replaceWith(g, {id}, "Flatten", "", name, {x}, out).attrs["axis"] = ir::Attr(int64_t{1});
      changed = true;
    }
  }
  if (changed) g.topoSort();
  return changed;
}

}  // namespace npuc::passes
