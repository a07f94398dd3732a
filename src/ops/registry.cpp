// Op registry, InferContext and graph-wide shape inference.
#include "ops/registry.hpp"

#include "ops/shape_util.hpp"
#include "kernels/layers.hpp"

#include <limits>

namespace npuc::ops {

InferContext::InferContext(const ir::Node& node, int opset, std::vector<ir::Type> in_types,
                           std::vector<const Tensor*> in_values)
    : node_(node), opset_(opset), in_(std::move(in_types)), vals_(std::move(in_values)) {
  out_.resize(node.outputs.size());
}

int InferContext::numInputs() const { return node_.numInputs(); }

bool InferContext::hasInput(int i) const { return node_.hasInput(i); }

DType InferContext::inputDType(int i) const {
  if (!hasInput(i)) error("input {} is required", i);
  DType t = in_[static_cast<size_t>(i)].dtype;
  if (t == DType::kUndefined) throw UnknownInput{};
  return t;
}

const Shape& InferContext::inputShape(int i) const {
  if (!hasInput(i)) error("input {} is required", i);
  const ir::Type& t = in_[static_cast<size_t>(i)];
  if (!t.isStatic()) throw UnknownInput{};
  return t.shape;
}

const Tensor& InferContext::inputValue(int i) const {
  if (!hasInput(i)) error("input {} is required", i);
  const Tensor* v = vals_[static_cast<size_t>(i)];
  if (!v) throw UnknownInput{};
  return *v;
}

void InferContext::setOutput(int i, DType dtype, Shape shape) {
  if (i < 0 || static_cast<size_t>(i) >= out_.size()) return;  // optional output not requested
  for (int64_t d : shape)
    if (d < 0) error("computed a negative dimension for output {} ({})", i, shapeStr(shape));
  out_[static_cast<size_t>(i)] = ir::makeType(dtype, std::move(shape));
}

ir::Type InferContext::knownType(int i) const {
  if (i < 0 || static_cast<size_t>(i) >= in_.size() || !hasInput(i)) return {};
  return in_[static_cast<size_t>(i)];
}

const Tensor* InferContext::knownValue(int i) const {
  if (i < 0 || static_cast<size_t>(i) >= vals_.size() || !hasInput(i)) return nullptr;
  return vals_[static_cast<size_t>(i)];
}

void InferContext::setOutputType(int i, ir::Type t) {
  if (i < 0 || static_cast<size_t>(i) >= out_.size()) return;
  if (t.rank_known && t.isStatic()) return setOutput(i, t.dtype, t.shape);
  out_[static_cast<size_t>(i)] = std::move(t);
}

OpSchema makeSchema(const char* name, int min_in, int max_in, const char* doc, InferFn infer, int max_out) {
  OpSchema s;
  s.name = name;
  s.min_inputs = min_in;
  s.max_inputs = max_in;
  s.max_outputs = max_out;
  s.infer = std::move(infer);
  s.doc = doc;
  return s;
}

namespace {
const ir::Attr& declaredDefault(const ir::Node& n, const std::string& name) {
  const OpSchema* s = registry().find(n.domain, n.op);
  if (!s) fail(ErrorCode::kInternal, "no schema for {} (attribute '{}')", n.op, name);
  auto it = s->defaults.find(name);
  // npuc's fused ops (ai.npuc) extend the ONNX op of the same name: its defaults are theirs.
  if (it == s->defaults.end() && !n.domain.empty())
    if (const OpSchema* onnx = registry().find("", n.op)) {
      s = onnx;
      it = s->defaults.find(name);
    }
  if (it == s->defaults.end()) fail(ErrorCode::kInternal, "the schema of {} declares no default for attribute '{}'", n.op, name);
  return it->second;
}
}  // namespace

float attrFloat(const ir::Node& n, const std::string& name) {
  if (n.hasAttr(name)) return n.attrFloat(name, 0.0f);
  const ir::Attr& d = declaredDefault(n, name);
  if (const float* f = d.get<float>()) return *f;
  fail(ErrorCode::kInternal, "the default of {}'s attribute '{}' is not a float", n.op, name);
}

int64_t attrInt(const ir::Node& n, const std::string& name) {
  if (n.hasAttr(name)) return n.attrInt(name, 0);
  const ir::Attr& d = declaredDefault(n, name);
  if (const int64_t* i = d.get<int64_t>()) return *i;
  fail(ErrorCode::kInternal, "the default of {}'s attribute '{}' is not an integer", n.op, name);
}

bool reduceAxesFromInput(const ir::Node& n, int opset) { return n.op == "ReduceSum" ? opset >= 13 : opset >= 18; }

bool reducedDims(const ir::Node& n, const std::vector<int64_t>& axes, int64_t rank, std::vector<bool>& reduced,
                 int64_t& bad_axis) {
  return kernels::reducedDims(axes, rank, n.attrInt("noop_with_empty_axes", 0) != 0, reduced, bad_axis);
}

void Registry::add(OpSchema s) {
  auto key = std::make_pair(s.domain, s.name);
  ops_[key] = std::move(s);
}

const OpSchema* Registry::find(std::string_view domain, std::string_view name) const {
  std::string d(domain);
  if (d == "ai.onnx") d.clear();
  auto it = ops_.find(std::make_pair(d, std::string(name)));
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<const OpSchema*> Registry::all() const {
  std::vector<const OpSchema*> r;
  for (auto& [k, s] : ops_) r.push_back(&s);
  return r;
}

namespace registry_detail {
const OpSchema* onnxSchema(const Registry& r, const char* op) {
  const OpSchema* s = r.find("", op);
  if (!s) fail(ErrorCode::kInternal, "no ai.onnx schema for {}", op);
  return s;
}
}  // namespace registry_detail

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    registerElementwiseOps(reg);
    registerTensorOps(reg);
    registerNnOps(reg);
    registerReduceOps(reg);
    registerIndexingOps(reg);
    registerLossOps(reg);
    registerRecurrentOps(reg);
    registerDetectionOps(reg);
    registerSignalOps(reg);
    registerControlFlowOps(reg);
    registerQuantOps(reg);
    registerQuantNpucOps(reg);
    registerNpucOps(reg);
    return reg;
  }();
  return r;
}

const OpSchema& schemaFor(const ir::Node& n) {
  const OpSchema* s = findSchema(n.domain, n.op);
  if (!s)
    fail(ErrorCode::kUnsupported, "{}: unknown op '{}{}' (npuc does not implement it)", n.label(),
         n.domain.empty() ? "" : n.domain + ".", n.op);
  int ni = n.numInputs();
  if (ni < s->min_inputs || (s->max_inputs >= 0 && ni > s->max_inputs))
    fail(ErrorCode::kInvalidInput, "{}: has {} inputs, {} takes {} to {}", n.label(), ni, n.op, s->min_inputs,
         s->max_inputs < 0 ? std::string("any number") : std::to_string(s->max_inputs));
  int no = static_cast<int>(n.outputs.size());
  if (no < s->min_outputs || no > s->max_outputs)
    fail(ErrorCode::kInvalidInput, "{}: has {} outputs, {} produces {} to {}", n.label(), no, n.op,
         s->min_outputs, s->max_outputs);
  return *s;
}

std::optional<std::vector<ir::Type>> inferNode(const ir::Node& n, int opset, std::vector<ir::Type> in_types,
                                               std::vector<const Tensor*> in_values) {
  const OpSchema& s = schemaFor(n);
  InferContext ctx(n, opset, std::move(in_types), std::move(in_values));
  try {
    s.infer(ctx);
  } catch (const UnknownInput&) {
    return std::nullopt;
  }
  return ctx.outputs();
}

std::optional<std::vector<ir::Type>> inferNode(const ir::Graph& g, const ir::Node& n) {
  std::vector<ir::Type> types;
  std::vector<const Tensor*> vals;
  for (ir::ValueId v : n.inputs) {
    if (v == ir::kNoValue) {
      types.emplace_back();
      vals.push_back(nullptr);
      continue;
    }
    const ir::Value& val = g.value(v);
    types.push_back(val.type);
    vals.push_back(val.constant ? &*val.constant : nullptr);
  }
  return inferNode(n, g.opset, std::move(types), std::move(vals));
}

namespace {
/// Records a partly known inferred type `t` on `v`: the dims either knows; a conflict with the declaration is an error.
bool mergePartial(const ir::Node& n, ir::Value& v, const ir::Type& t) {
  ir::Type m = v.type;
  bool clash = m.dtype != DType::kUndefined && m.dtype != t.dtype;
  if (m.dtype == DType::kUndefined) m.dtype = t.dtype;
  if (t.rank_known && m.rank_known) {
    clash |= m.shape.size() != t.shape.size();
    for (size_t d = 0; !clash && d < m.shape.size(); ++d) {
      clash |= m.shape[d] >= 0 && t.shape[d] >= 0 && m.shape[d] != t.shape[d];
      if (m.shape[d] < 0) m.shape[d] = t.shape[d];
    }
  } else if (t.rank_known) {
    m.rank_known = true;
    m.shape = t.shape;
  }
  if (clash)
    fail(ErrorCode::kInvalidInput, "{}: output '{}' is declared {} but its inputs give {}", n.label(), v.name, v.type.str(), t.str());
  if (m == v.type) return false;
  v.type = m;
  return true;
}
}  // namespace

bool inferNodeTypes(ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  auto r = inferNode(g, n);
  if (!r) return false;
  bool changed = false;
  for (size_t i = 0; i < n.outputs.size() && i < r->size(); ++i) {
    if (n.outputs[i] == ir::kNoValue || (*r)[i].dtype == DType::kUndefined) continue;
    ir::Value& v = g.value(n.outputs[i]);
    const ir::Type& t = (*r)[i];
    if (!t.isStatic()) {  // known in part (control flow): it must agree with the declaration, which may know more
      if (mergePartial(n, v, t)) changed = true;
      continue;
    }
    if (v.type.isStatic() && v.type.shape != t.shape)
      fail(ErrorCode::kInvalidInput, "{}: output '{}' is declared {} but its inputs give {}", n.label(), v.name,
           v.type.str(), t.str());
    if (!(v.type == t)) {
      v.type = t;
      changed = true;
    }
  }
  return changed;
}

bool inferShapes(ir::Graph& g) {
  bool changed = false;
  for (ir::NodeId id : g.order()) changed |= inferNodeTypes(g, id);
  return changed;
}

int64_t nodeMacs(const ir::Graph& g, const ir::Node& n) {
  const OpSchema* s = findSchema(n.domain, n.op);
  if (!s || !s->macs) return 0;
  // Every value present must have a static type (one whose type was never inferred has an empty shape the MAC
  // functions would index); absent optional ones (an omitted bias) are not read.
  std::vector<ir::Type> in, out;
  for (auto [ids, types] : {std::pair{&n.inputs, &in}, {&n.outputs, &out}})
    for (ir::ValueId v : *ids) {
      if (v != ir::kNoValue && !g.value(v).type.isStatic()) return 0;
      types->push_back(v == ir::kNoValue ? ir::Type{} : g.value(v).type);
    }
  return s->macs(n, in, out);
}

std::optional<std::pair<float, float>> clipBounds(const ir::Graph& g, const ir::Node& clip) {
  const float big = std::numeric_limits<float>::max();
  if (g.opset < 11) return std::make_pair(clip.attrFloat("min", -big), clip.attrFloat("max", big));
  float b[2] = {-big, big};
  for (int i = 1; i <= 2; ++i) {
    if (!clip.hasInput(i)) continue;
    const ir::Value& v = g.value(clip.inputs[static_cast<size_t>(i)]);
    if (!v.isConstant() || v.constant->numel() != 1 || !(isFloat(v.constant->dtype()) || isInteger(v.constant->dtype())))
      return std::nullopt;
    b[i - 1] = static_cast<float>(v.constant->toDouble()[0]);
  }
  return std::make_pair(b[0], b[1]);
}

}  // namespace npuc::ops
