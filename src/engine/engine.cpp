// Engine: node preparation, execution in order, input validation, tensor lifetime.
#include "engine/engine.hpp"

#include "engine/conv_geometry.hpp"
#include "kernels/conv.hpp"

#include "ops/registry.hpp"

#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <utility>

namespace npuc::engine {

const Tensor& KernelCall::input(int i) const {
  if (!has(i)) error("input {} is required", i);
  return in[static_cast<size_t>(i)];
}

Tensor& KernelCall::alloc(int i) {
  auto& t = out_types[static_cast<size_t>(i)];
  const size_t u = static_cast<size_t>(i);
  if (u < placed.size() && placed[u].defined() && placed[u].dtype() == t.dtype && placed[u].shape() == t.shape) {
    out[u] = placed[u];
  } else {
    out[u] = Tensor::uninitialized(t.dtype, t.shape);
  }
  return out[u];
}

Tensor& KernelCall::allocZeroed(int i) {
  auto& t = out_types[static_cast<size_t>(i)];
  out[static_cast<size_t>(i)] = Tensor(t.dtype, t.shape);
  return out[static_cast<size_t>(i)];
}

void KernelCall::alias(int i, const Tensor& t) {
  out[static_cast<size_t>(i)] = t.reshaped(out_types[static_cast<size_t>(i)].shape);
}

void KernelRegistry::add(const std::string& op, KernelFactory f, const std::string& domain) {
  k_[{domain, op}] = std::move(f);
}

void KernelRegistry::addFn(const std::string& op, std::function<void(KernelCall&)> fn, const std::string& domain) {
  add(op, [fn](const ir::Node&, const ir::Graph&) { return std::make_unique<FnKernel>(fn); }, domain);
}

const KernelFactory* KernelRegistry::find(const std::string& domain, const std::string& op) const {
  auto it = k_.find({domain == "ai.onnx" ? "" : domain, op});
  return it == k_.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::ops() const {
  std::vector<std::string> r;
  for (auto& [k, f] : k_) r.push_back(k.first.empty() ? k.second : k.first + "." + k.second);
  return r;
}

const KernelRegistry& kernelRegistry() {
  static const KernelRegistry r = [] {
    KernelRegistry reg;
    registerElementwiseKernels(reg);
    registerTensorKernels(reg);
    registerNnKernels(reg);
    registerReduceKernels(reg);
    registerIndexingKernels(reg);
    registerLossKernels(reg);
    registerRecurrentKernels(reg);
    registerDetectionKernels(reg);
    registerSignalKernels(reg);
    registerControlFlowKernels(reg);
    registerQuantKernels(reg);
    registerPrePostKernels(reg);
    return reg;
  }();
  return r;
}

namespace {

std::unique_ptr<Kernel> makeKernel(const ir::Graph& g, const ir::Node& n) {
  ops::schemaFor(n);  // unknown op / arity errors first
  const KernelFactory* f = kernelRegistry().find(n.domain, n.op);
  if (!f)
    if (auto k = makeCustomKernel(n, g)) return k;
  if (!f) fail(ErrorCode::kUnsupported, "{}: the reference engine has no kernel for {}", n.label(), n.op);
  return withContext(n.label(), [&] { return (*f)(n, g); });
}

void runNode(const ir::Node& n, int opset, Kernel& k, std::vector<Tensor> in, std::vector<Tensor>& out,
             ThreadPool* pool, std::vector<Tensor> placed = {}, Tensor residual = {}, bool blocked_in = false,
             bool blocked_out = false) {
  std::vector<ir::Type> types;
  std::vector<const Tensor*> vals;
  for (auto& t : in) {
    types.push_back(t.defined() ? ir::makeType(t.dtype(), t.shape()) : ir::Type{});
    vals.push_back(t.defined() ? &t : nullptr);
  }
  auto out_types = ops::inferNode(n, opset, types, vals);
  if (!out_types) fail(ErrorCode::kInternal, "{}: output types unknown although every input is known", n.label());
  KernelCall call{n,     opset,           std::move(in),         std::move(*out_types), {}, pool, std::move(placed),
                  std::move(residual), blocked_in, blocked_out};
  call.out.resize(call.out_types.size());
  k.run(call);
  for (size_t i = 0; i < call.out.size(); ++i) {
    if (n.outputs.size() > i && n.outputs[i] != ir::kNoValue && !call.out[i].defined())
      fail(ErrorCode::kInternal, "{}: kernel did not produce output {}", n.label(), i);
  }
  out = std::move(call.out);
}

}  // namespace

Engine::Engine(const ir::Graph& graph, EngineOptions opts)
    : g_(graph), opts_(opts), pool_(&ThreadPool::shared(opts.threads)) {
  const auto& order = g_.order();
  kernels_.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    kernels_.push_back(makeKernel(g_, g_.node(order[i])));
    pos_[order[i]] = i;
  }
  if (opts_.fuse_residual_adds) fuseResidualAdds();
  if (opts_.fuse_activations) fuseActivations();
  if (opts_.block_channels) blockChannels();
  place_.assign(order.size(), {});
  if (opts_.place_concat_inputs) planConcats();
  // Lifetime: a non-constant, non-output value is released after the last node that reads it.
  std::map<ir::ValueId, size_t> last;
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node& n = g_.node(order[i]);
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue) last[v] = i;
    for (ir::ValueId v : n.outputs)
      if (v != ir::kNoValue && !last.count(v)) last[v] = i;  // unused outputs die right away
  }
  for (ir::ValueId v : g_.valueIds()) {
    num_values_ = static_cast<size_t>(v) + 1;
    if (g_.value(v).isConstant()) constants_.push_back(v);
  }
  std::set<ir::ValueId> keep(g_.outputs().begin(), g_.outputs().end());
  release_after_.resize(order.size());
  for (auto& [v, i] : last)
    if (!keep.count(v) && !g_.value(v).isConstant()) release_after_[i].push_back(v);
}

Engine::~Engine() = default;

namespace {
/// The activation a node computes, when it is one a kernel epilogue can apply (Relu, LeakyRelu, HardSwish,
/// HardSigmoid, Clip with constant bounds on float32). Conv and the float arithmetic ops (Add, Sub, Mul, Div) take it.
std::optional<kernels::Activation> activationOf(const ir::Graph& g, const ir::Node& n) {
  kernels::Activation a;
  if (n.op == "Relu") {
    a.kind = kernels::ActKind::kRelu;
  } else if (n.op == "LeakyRelu") {
    a.kind = kernels::ActKind::kLeakyRelu;
    a.a = ops::attrFloat(n, "alpha");
  } else if (n.op == "HardSwish" && n.domain.empty()) {
    a.kind = kernels::ActKind::kHardSwish;
  } else if (n.op == "HardSigmoid" && n.domain.empty()) {
    a = {kernels::ActKind::kHardSigmoid, ops::attrFloat(n, "alpha"), ops::attrFloat(n, "beta")};
  } else if (n.op == "Clip") {
    auto b = ops::clipBounds(g, n);
    if (!b) return std::nullopt;
    a.kind = kernels::ActKind::kClip;
    a.a = b->first;
    a.b = b->second;
  } else {
    return std::nullopt;
  }
  return a;
}
}  // namespace

namespace {
/// Who reads each value: the (node, input index) pairs of a graph, and its outputs, which are read from outside.
struct Readers {
  ir::UseMap uses;
  std::set<ir::ValueId> outputs;
  explicit Readers(const ir::Graph& g) : uses(g.uses()), outputs(g.outputs().begin(), g.outputs().end()) {}
  /// The one use of v (node, input index) when v has exactly one reader and is not a graph output; else null.
  const std::pair<ir::NodeId, int>* only(ir::ValueId v) const {
    auto it = uses.find(v);
    return outputs.count(v) || it == uses.end() || it->second.size() != 1 ? nullptr : &it->second[0];
  }
};
}  // namespace

void Engine::makeAlias(size_t pos, int k) {
  auto alias = std::make_unique<FnKernel>([k](KernelCall& c) { c.alias(0, c.input(k)); });
  unfused_[pos] = std::exchange(kernels_[pos], std::move(alias));
  fused_[pos] = k;
}

void Engine::fuseActivations() {
  const auto& order = g_.order();
  const Readers readers(g_);
  // y = x * HardSigmoid(x) with x the output of node i: the HardSigmoid and the Mul, or null.
  auto sigmoidMul = [&](ir::ValueId x) -> std::optional<std::pair<const ir::Node*, const ir::Node*>> {
    auto it = readers.uses.find(x);
    if (readers.outputs.count(x) || it == readers.uses.end() || it->second.size() != 2) return std::nullopt;
    const ir::Node *h = nullptr, *m = nullptr;
    for (const auto& [node, idx] : it->second) {
      const ir::Node& r = g_.node(node);
      if (r.op == "HardSigmoid" && r.domain.empty() && idx == 0 && r.outputs.size() == 1) h = &r;
      else if (r.op == "Mul" && r.domain.empty() && r.inputs.size() == 2 && r.outputs.size() == 1) m = &r;
    }
    if (h == nullptr || m == nullptr) return std::nullopt;
    const auto* hu = readers.only(h->outputs[0]);
    const ir::Type& xt = g_.value(x).type;
    if (hu == nullptr || hu->first != m->id || m->inputs[static_cast<size_t>(1 - hu->second)] != x || !xt.isStatic() ||
        g_.value(h->outputs[0]).type != xt || g_.value(m->outputs[0]).type != xt)
      return std::nullopt;
    return std::make_pair(h, m);
  };
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node& n = g_.node(order[i]);
    bool arith = n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div";
    if ((n.op != "Conv" && !arith) || !n.domain.empty() || n.outputs.size() != 1) continue;
    ir::ValueId y = n.outputs[0];
    if (g_.value(y).type.dtype != DType::kF32 || fused_.count(i)) continue;
    if (auto hm = sigmoidMul(y)) {
      const auto [h, m] = *hm;
      const kernels::Activation act{kernels::ActKind::kHardSigmoidMul, ops::attrFloat(*h, "alpha"),
                                    ops::attrFloat(*h, "beta")};
      auto own = makeKernel(g_, n);  // (a Conv prepares its weights at its first run: none unless a callback watches)
      if (!kernels_[i]->fuseActivation(act)) continue;
      const size_t hp = pos_.at(h->id), mp = pos_.at(m->id);
      const int k = m->inputs[0] == y ? 0 : 1;
      unfused_[i] = std::move(own);
      makeAlias(hp, 0);
      makeAlias(mp, k);
      sigmoid_mul_[i] = mp;
      continue;
    }
    const auto* use = readers.only(y);
    if (use == nullptr || use->second != 0) continue;
    const ir::Node& act_node = g_.node(use->first);
    auto act = activationOf(g_, act_node);
    if (!act) continue;
    auto own = makeKernel(g_, n);
    if (!kernels_[i]->fuseActivation(*act)) continue;
    const size_t ap = pos_.at(act_node.id);
    unfused_[i] = std::move(own);
    makeAlias(ap, 0);
  }
}

void Engine::fuseResidualAdds() {
  const auto& order = g_.order();
  const Readers readers(g_);
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  for (size_t j = 0; j < order.size(); ++j) {
    const ir::Node& add = g_.node(order[j]);
    if (add.op != "Add" || !add.domain.empty() || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    const ir::Type& zt = g_.value(add.outputs[0]).type;
    if (!zt.isStatic() || zt.dtype != DType::kF32) continue;
    // The operand a Conv computes, when the other one is ready before that Conv runs (of two Convs, the later).
    size_t conv_pos = kNone;
    int yi = -1;
    for (int k = 0; k < 2 && conv_pos == kNone; ++k) {
      const ir::ValueId y = add.inputs[static_cast<size_t>(k)], r = add.inputs[static_cast<size_t>(1 - k)];
      const ir::Value& yv = g_.value(y);
      const ir::Value& rv = g_.value(r);
      const auto* use = readers.only(y);
      if (y == r || yv.producer == ir::kNoNode || yv.type != zt || rv.type != zt || !use || use->first != add.id)
        continue;
      const ir::Node& conv = g_.node(yv.producer);
      if (conv.op != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1) continue;
      const size_t p = pos_.at(conv.id);
      if (rv.producer != ir::kNoNode && pos_.at(rv.producer) >= p) continue;
      conv_pos = p, yi = k;
    }
    if (conv_pos == kNone) continue;
    kernels::Activation post;
    size_t act_pos = kNone;
    if (const auto* use = readers.only(add.outputs[0]); use != nullptr && use->second == 0) {
      if (auto a = activationOf(g_, g_.node(use->first))) post = *a, act_pos = pos_.at(use->first);
    }
    if (!kernels_[conv_pos]->fuseResidualAdd(post)) continue;
    residual_[conv_pos] = add.inputs[static_cast<size_t>(1 - yi)];
    makeAlias(j, yi);
    if (act_pos != kNone) makeAlias(act_pos, 0);
  }
}

namespace {

// A float32 value of static rank-4 shape, or null.
const Shape* staticF32x4(const ir::Graph& g, ir::ValueId v) {
  if (v == ir::kNoValue) return nullptr;
  const ir::Type& t = g.value(v).type;
  return t.isStatic() && t.dtype == DType::kF32 && t.shape.size() == 4 ? &t.shape : nullptr;
}

// The nodes that may take channel-blocked values (Engine::blockChannels), by position: each Conv's blocked forms
// (kernels::blockedForms); 2-D pools of float32 without indices take blocks in and out — both or neither (`passes`:
// a pool never reorders) —, global pools in; Concats along the channels of values whose every input has a multiple
// of 8 channels (`concats`): per image, each input is one slab of C_i x H x W floats at channel offset C_0 + ... +
// C_{i-1} of the output in either layout (a block never straddles two inputs), so the Concat's copies and
// Engine::planConcats' placements are the same bytes for blocks — its inputs and its output go together.
struct BlockableNodes {
  std::map<size_t, kernels::BlockedForms> forms;
  std::set<size_t> passes, concats;
};

BlockableNodes blockableNodes(const ir::Graph& g) {
  const auto& order = g.order();
  auto f32x4 = [&](ir::ValueId v) { return staticF32x4(g, v); };
  BlockableNodes b;
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node& n = g.node(order[i]);
    if (!n.domain.empty() && !(n.op == "MaxPool" && n.domain == "ai.npuc")) continue;
    if (n.op == "Concat" && n.outputs.size() == 1 && !n.inputs.empty() && f32x4(n.outputs[0]) != nullptr) {
      const int64_t axis = n.attrInt("axis", 0);
      bool fine = axis == 1 || axis == -3;
      for (ir::ValueId v : n.inputs) {
        const Shape* x = f32x4(v);
        fine = fine && x != nullptr && (*x)[1] % 8 == 0;
      }
      if (fine) b.forms[i] = {true, true}, b.concats.insert(i);
      continue;
    }
    const bool window = n.op == "MaxPool" || n.op == "AveragePool";
    const bool global = n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool";
    if (window || global) {
      const Shape* x = n.inputs.empty() ? nullptr : f32x4(n.inputs[0]);
      const bool indices = n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue;
      if (x != nullptr && (*x)[1] % 8 == 0 && !indices && f32x4(n.outputs[0]) != nullptr) {
        b.forms[i] = {true, window};
        if (window) b.passes.insert(i);
      }
      continue;
    }
    if (n.op != "Conv" || n.outputs.size() != 1 || n.inputs.size() < 2) continue;
    const Shape *x = f32x4(n.inputs[0]), *w = f32x4(n.inputs[1]), *y = f32x4(n.outputs[0]);
    if (x == nullptr || w == nullptr || y == nullptr) continue;
    try {
      b.forms[i] = kernels::blockedForms(convShapeOf(n, *x, *w));
    } catch (const Error&) {
      continue;  // bad attributes: the node's own run reports them
    }
  }
  return b;
}

}  // namespace

void Engine::blockChannels() {
  if (!kernels::blockedLayouts()) return;
  const auto& order = g_.order();
  const Readers readers(g_);
  auto f32x4 = [&](ir::ValueId v) { return staticF32x4(g_, v); };
  BlockableNodes nodes = blockableNodes(g_);
  auto& forms = nodes.forms;
  const std::set<size_t>& passes = nodes.passes;
  const std::set<size_t>& concats = nodes.concats;
  if (forms.empty()) return;
  // The input an alias made by a fusion passes on (an activation fused into its producer: 0; a residual Add fused
  // into its Conv: the Conv's side; x * HardSigmoid(x)'s Mul: x), or -1.
  auto aliased = [&](size_t p) -> int {
    auto f = fused_.find(p);
    return f == fused_.end() ? -1 : f->second;
  };
  // Each node's value as its readers see it: its output through the aliases its fusions left.
  std::map<size_t, ir::ValueId> final_of;
  std::map<ir::ValueId, size_t> producer_of;  // final value -> its node (a Conv or pool)
  for (const auto& [i, f] : forms) {
    ir::ValueId y = g_.node(order[i]).outputs[0];
    if (auto sm = sigmoid_mul_.find(i); sm != sigmoid_mul_.end()) y = g_.node(order[sm->second]).outputs[0];
    for (const auto* use = readers.only(y); use != nullptr; use = readers.only(y)) {
      const size_t p = pos_.at(use->first);
      if (aliased(p) != use->second) break;
      y = g_.node(use->first).outputs[0];
    }
    final_of[i] = y;
    producer_of[y] = i;
  }
  // A node's value may be blocked when the node writes blocks, it is not a graph output, and every reader is a
  // Conv or pool reading it as its input 0 with a blocked form, or a Conv adding it as its residual — whose own value
  // must then be blocked too (the kernel adds the two element by element) — values that go together, as a pool's
  // input and output do (union-find).
  std::map<ir::ValueId, ir::ValueId> parent;
  std::function<ir::ValueId(ir::ValueId)> root = [&](ir::ValueId v) -> ir::ValueId {
    auto it = parent.find(v);
    if (it == parent.end() || it->second == v) return v;
    return it->second = root(it->second);
  };
  std::map<ir::ValueId, bool> ok;
  for (const auto& [i, y] : final_of) ok[y] = true;
  for (const auto& [c, r] : residual_) {
    if (!final_of.count(c)) {  // a Conv without forms adds its residual as planes
      if (ok.count(r)) ok[r] = false;
      continue;
    }
    if (producer_of.count(r)) parent[root(final_of[c])] = root(r);
    else ok[final_of[c]] = false;  // a residual that is no Conv's value stays planes, and so does the sum
  }
  for (size_t i : passes) {  // a pool's output goes as its input does
    const ir::ValueId in = g_.node(order[i]).inputs[0];
    if (producer_of.count(in)) parent[root(final_of[i])] = root(in);
    else ok[final_of[i]] = false;
  }
  for (size_t i : concats) {  // a Concat's output goes as all its inputs do
    for (ir::ValueId in : g_.node(order[i]).inputs) {
      if (producer_of.count(in)) parent[root(final_of[i])] = root(in);
      else ok[final_of[i]] = false;
    }
  }
  std::map<ir::ValueId, std::vector<size_t>> consumers;  // the nodes reading a value as input 0
  for (const auto& [i, y] : final_of) {
    bool fine = forms[i].out && !readers.outputs.count(y) && f32x4(y) != nullptr;
    auto it = readers.uses.find(y);
    if (it == readers.uses.end() || it->second.empty()) fine = false;
    for (size_t u = 0; fine && u < it->second.size(); ++u) {
      const auto& [node, idx] = it->second[u];
      const size_t p = pos_.at(node);
      if (forms.count(p) && (idx == 0 || concats.count(p))) {
        fine = forms[p].in;
        consumers[y].push_back(p);
      } else {
        // The residual side of an Add fused into a Conv (linked above).
        const int k = aliased(p);
        fine = g_.node(node).op == "Add" && k >= 0 && k != idx;  // (fused_ holds no other Add)
      }
    }
    ok[y] = ok[y] && fine;
  }
  // The groups whose every value may be blocked; then, until nothing changes, a value whose producer writes blocks
  // only from blocks (BlockedForms::out_needs_in) and reads planes leaves its group (which then stays planes).
  std::map<ir::ValueId, bool> group_ok;
  auto blocked = [&](ir::ValueId v) { return ok.count(v) && ok[v] && group_ok[root(v)]; };
  for (bool changed = true; changed;) {
    group_ok.clear();
    for (const auto& [y, fine] : ok) {
      auto [it, fresh] = group_ok.emplace(root(y), fine);
      if (!fresh) it->second = it->second && fine;
    }
    changed = false;
    for (const auto& [y, fine] : ok) {
      const size_t i = producer_of.at(y);
      if (blocked(y) && forms[i].out_needs_in && !blocked(g_.node(order[i]).inputs[0])) ok[y] = false, changed = true;
    }
  }
  for (const auto& [y, fine] : ok) {
    if (!blocked(y)) continue;
    const size_t i = producer_of.at(y);
    if (!concats.count(i) && !kernels_[i]->blockOutput())
      fail(ErrorCode::kInternal, "{}: a kernel refused a channel-blocked output", g_.node(order[i]).label());
    blocked_out_.insert(i);
    for (size_t j : consumers[y]) {
      if (!concats.count(j) && !kernels_[j]->blockInput())
        fail(ErrorCode::kInternal, "{}: a kernel refused a channel-blocked input", g_.node(order[j]).label());
      blocked_in_.insert(j);
    }
  }
}

void Engine::planConcats() {
  const auto& order = g_.order();
  const Readers readers(g_);
  // A value that only this node reads, computed by a node of the graph (not an input or constant; not an output).
  auto onlyFor = [&](ir::ValueId v, ir::NodeId reader) {
    if (v == ir::kNoValue || g_.value(v).isConstant() || g_.value(v).producer == ir::kNoNode) return false;
    const auto* use = readers.only(v);
    return use != nullptr && use->first == reader;
  };
  for (size_t ci = 0; ci < order.size(); ++ci) {
    const ir::Node& n = g_.node(order[ci]);
    if (n.op != "Concat" || !n.domain.empty() || n.outputs.size() != 1 || n.inputs.empty()) continue;
    const ir::Type& yt = g_.value(n.outputs[0]).type;
    if (!yt.isStatic() || yt.dtype == DType::kUndefined || yt.shape.empty()) continue;
    int64_t axis = n.attrInt("axis", 0);
    const int64_t rank = static_cast<int64_t>(yt.shape.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= yt.shape[static_cast<size_t>(d)];
    if (outer != 1) continue;  // each input must be one contiguous slab of the output
    std::set<ir::ValueId> seen;
    size_t offset = 0;
    for (ir::ValueId v : n.inputs) {
      const ir::Type& vt = g_.value(v).type;
      const bool typed = vt.isStatic() && vt.dtype == yt.dtype && vt.shape.size() == yt.shape.size();
      const size_t bytes = typed ? static_cast<size_t>(shapeNumel(vt.shape)) * dtypeSize(vt.dtype) : 0;
      if (typed && seen.insert(v).second && onlyFor(v, n.id)) {
        // Through the aliases fusions left (an activation fused into its producer, a residual Add fused into its Conv)
        // to the output a kernel writes, while each value on the way has that alias as its only reader.
        ir::ValueId root = v;
        for (auto f = fused_.find(pos_.at(g_.value(v).producer)); f != fused_.end();) {
          const ir::Node& a = g_.node(order[f->first]);
          const ir::ValueId in = a.inputs[static_cast<size_t>(f->second)];
          if (!onlyFor(in, a.id)) {
            root = ir::kNoValue;
            break;
          }
          root = in;
          f = fused_.find(pos_.at(g_.value(in).producer));
        }
        if (root != ir::kNoValue && g_.value(root).type.shape == vt.shape && g_.value(root).type.dtype == vt.dtype) {
          auto& slots = place_[pos_.at(g_.value(root).producer)];
          slots.resize(std::max(slots.size(), static_cast<size_t>(g_.value(root).producer_output) + 1));
          slots[static_cast<size_t>(g_.value(root).producer_output)] = Placement{ci, offset};
        }
      }
      if (!typed) break;  // offsets of later inputs unknown
      offset += bytes;
    }
  }
}

std::vector<Tensor> Engine::run(const std::map<std::string, Tensor>& inputs, const NodeCallback& cb) {
  std::vector<Tensor> ordered;
  for (ir::ValueId in : g_.inputs()) {
    auto it = inputs.find(g_.value(in).name);
    if (it == inputs.end()) fail(ErrorCode::kInvalidArgument, "no tensor given for input '{}'", g_.value(in).name);
    ordered.push_back(it->second);
  }
  for (auto& [name, t] : inputs) {
    bool found = false;
    for (ir::ValueId in : g_.inputs()) found |= g_.value(in).name == name;
    if (!found) fail(ErrorCode::kInvalidArgument, "the model has no input named '{}'", name);
  }
  return run(ordered, cb);
}

std::vector<Tensor> Engine::run(const std::vector<Tensor>& inputs, const NodeCallback& cb) {
  if (inputs.size() != g_.inputs().size())
    fail(ErrorCode::kInvalidArgument, "the model has {} inputs, {} given", g_.inputs().size(), inputs.size());
  std::vector<Tensor> vals(num_values_);
  for (ir::ValueId v : constants_) vals[static_cast<size_t>(v)] = *g_.value(v).constant;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = g_.value(g_.inputs()[i]);
    const Tensor& t = inputs[i];
    if (v.type.dtype != DType::kUndefined && t.dtype() != v.type.dtype)
      fail(ErrorCode::kInvalidArgument, "input '{}' must be {}, got {}", v.name, dtypeName(v.type.dtype), dtypeName(t.dtype()));
    if (v.type.isStatic() && t.shape() != v.type.shape)
      fail(ErrorCode::kInvalidArgument, "input '{}' must have shape {}, got {}", v.name, shapeStr(v.type.shape), shapeStr(t.shape()));
    vals[static_cast<size_t>(v.id)] = t;
  }
  const auto& order = g_.order();
  profile_.clear();
  std::map<size_t, Tensor> concat_out;  // by the Concat's position
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node& n = g_.node(order[i]);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> in;
    in.reserve(n.inputs.size());
    for (ir::ValueId v : n.inputs) in.push_back(v == ir::kNoValue ? Tensor() : vals[static_cast<size_t>(v)]);
    std::vector<Tensor> out;
    // Outputs placed inside a later Concat's output (allocated by its first producer), and that output itself.
    std::vector<Tensor> placed;
    auto concatOut = [&](size_t ci) -> Tensor& {
      Tensor& t = concat_out[ci];
      if (!t.defined()) {
        const ir::Type& yt = g_.value(g_.node(order[ci]).outputs[0]).type;
        t = Tensor::uninitialized(yt.dtype, yt.shape);
      }
      return t;
    };
    for (size_t j = 0; j < place_[i].size(); ++j) {
      const Placement& pl = place_[i][j];
      if (pl.concat == kNotPlaced) continue;
      const ir::Type& t = g_.value(n.outputs[j]).type;
      placed.resize(j + 1);
      placed[j] = Tensor(t.dtype, t.shape, concatOut(pl.concat).buffer(), pl.offset);
    }
    if (auto it = concat_out.find(i); it != concat_out.end()) {
      placed = {it->second};
      concat_out.erase(it);
    }
    // With a callback watching, the residual Adds fused into Convs run apart (each op's own output seen).
    Tensor residual;
    auto res = cb ? residual_.end() : residual_.find(i);
    if (res != residual_.end()) residual = vals[static_cast<size_t>(res->second)];
    auto own = cb ? unfused_.find(i) : unfused_.end();
    runNode(n, g_.opset, own != unfused_.end() ? *own->second : *kernels_[i], std::move(in), out, pool_,
            std::move(placed), std::move(residual), !cb && blocked_in_.count(i) > 0, !cb && blocked_out_.count(i) > 0);
    if (opts_.profile)
      profile_.push_back({n.id, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()});
    for (size_t j = 0; j < n.outputs.size() && j < out.size(); ++j)
      if (n.outputs[j] != ir::kNoValue) vals[static_cast<size_t>(n.outputs[j])] = std::move(out[j]);
    if (cb) {
      std::vector<Tensor> outs;
      for (ir::ValueId v : n.outputs) outs.push_back(v == ir::kNoValue ? Tensor() : vals[static_cast<size_t>(v)]);
      cb(n, outs);
    }
    for (ir::ValueId v : release_after_[i]) vals[static_cast<size_t>(v)] = Tensor();
  }
  std::vector<Tensor> result;
  for (ir::ValueId o : g_.outputs()) result.push_back(vals[static_cast<size_t>(o)]);
  return result;
}

std::vector<Tensor> evalNode(const ir::Graph& g, const ir::Node& n, const std::vector<Tensor>& inputs) {
  auto k = makeKernel(g, n);
  std::vector<Tensor> out;
  runNode(n, g.opset, *k, inputs, out, &ThreadPool::shared(1));
  return out;
}

}  // namespace npuc::engine
