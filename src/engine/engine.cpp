// Engine: node preparation, execution in order, input validation, tensor lifetime.
#include "engine/engine.hpp"

#include "ops/registry.hpp"

#include <chrono>
#include <limits>
#include <optional>
#include <set>

namespace npuc::engine {

const Tensor& KernelCall::input(int i) const {
  if (!has(i)) error("input {} is required", i);
  return in[static_cast<size_t>(i)];
}

Tensor& KernelCall::alloc(int i) {
  auto& t = out_types[static_cast<size_t>(i)];
  out[static_cast<size_t>(i)] = Tensor::uninitialized(t.dtype, t.shape);
  return out[static_cast<size_t>(i)];
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
    registerPrePostKernels(reg);
    return reg;
  }();
  return r;
}

namespace {

std::unique_ptr<Kernel> makeKernel(const ir::Graph& g, const ir::Node& n) {
  ops::schemaFor(n);  // unknown op / arity errors first
  const KernelFactory* f = kernelRegistry().find(n.domain, n.op);
  if (!f) fail(ErrorCode::kUnsupported, "{}: the reference engine has no kernel for {}", n.label(), n.op);
  return withContext(n.label(), [&] { return (*f)(n, g); });
}

void runNode(const ir::Node& n, int opset, Kernel& k, std::vector<Tensor> in, std::vector<Tensor>& out,
             ThreadPool* pool) {
  std::vector<ir::Type> types;
  std::vector<const Tensor*> vals;
  for (auto& t : in) {
    types.push_back(t.defined() ? ir::makeType(t.dtype(), t.shape()) : ir::Type{});
    vals.push_back(t.defined() ? &t : nullptr);
  }
  auto out_types = ops::inferNode(n, opset, types, vals);
  if (!out_types) fail(ErrorCode::kInternal, "{}: output types unknown although every input is known", n.label());
  KernelCall call{n, opset, std::move(in), std::move(*out_types), {}, pool};
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
  for (ir::NodeId id : order) kernels_.push_back(makeKernel(g_, g_.node(id)));
  if (opts_.fuse_activations) fuseActivations();
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
/// The activation a node computes, when it is one a kernel epilogue can apply (Relu, LeakyRelu, Clip with
/// constant bounds on float32). Conv and the float arithmetic ops (Add, Sub, Mul, Div) take it.
std::optional<kernels::Activation> activationOf(const ir::Graph& g, const ir::Node& n) {
  kernels::Activation a;
  if (n.op == "Relu") {
    a.kind = kernels::ActKind::kRelu;
  } else if (n.op == "LeakyRelu") {
    a.kind = kernels::ActKind::kLeakyRelu;
    a.a = n.attrFloat("alpha", 0.01f);
  } else if (n.op == "Clip") {
    a.kind = kernels::ActKind::kClip;
    a.a = -std::numeric_limits<float>::infinity();
    a.b = std::numeric_limits<float>::infinity();
    if (g.opset < 11) {
      a.a = n.attrFloat("min", -std::numeric_limits<float>::max());
      a.b = n.attrFloat("max", std::numeric_limits<float>::max());
    } else {
      for (int i = 1; i <= 2; ++i) {
        if (!n.hasInput(i)) continue;
        const ir::Value& v = g.value(n.inputs[static_cast<size_t>(i)]);
        if (!v.constant || v.constant->dtype() != DType::kF32 || v.constant->numel() != 1) return std::nullopt;
        (i == 1 ? a.a : a.b) = v.constant->data<float>()[0];
      }
    }
  } else {
    return std::nullopt;
  }
  return a;
}
}  // namespace

void Engine::fuseActivations() {
  const auto& order = g_.order();
  auto uses = g_.uses();
  std::map<ir::NodeId, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  std::set<ir::ValueId> outputs(g_.outputs().begin(), g_.outputs().end());
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node& n = g_.node(order[i]);
    bool arith = n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div";
    if ((n.op != "Conv" && !arith) || !n.domain.empty() || n.outputs.size() != 1) continue;
    ir::ValueId y = n.outputs[0];
    if (outputs.count(y) || g_.value(y).type.dtype != DType::kF32) continue;
    auto it = uses.find(y);
    if (it == uses.end() || it->second.size() != 1 || it->second[0].second != 0) continue;
    const ir::Node& act_node = g_.node(it->second[0].first);
    auto act = activationOf(g_, act_node);
    if (!act || !kernels_[i]->fuseActivation(*act)) continue;
    kernels_[pos[act_node.id]] = std::make_unique<FnKernel>([](KernelCall& c) { c.alias(0, c.input(0)); });
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
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node& n = g_.node(order[i]);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> in;
    in.reserve(n.inputs.size());
    for (ir::ValueId v : n.inputs) in.push_back(v == ir::kNoValue ? Tensor() : vals[static_cast<size_t>(v)]);
    std::vector<Tensor> out;
    runNode(n, g_.opset, *kernels_[i], std::move(in), out, pool_);
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
