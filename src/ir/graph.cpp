// Graph storage, node/value bookkeeping, topological sort, attribute access and the text dump.
#include "ir/graph.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <queue>
#include <set>
#include <sstream>

namespace npuc::ir {

ChwDims chwDims(const Shape& s, Layout l) {
  ChwDims d;
  const size_t r = s.size();
  auto at = [&](size_t i) { return i < r ? s[i] : int64_t{1}; };
  switch (l) {
    case Layout::kModel:
      d.c = r >= 2 ? s[1] : at(0);
      if (r >= 3) d.w = s[r - 1];
      if (r >= 4) d.h = s[r - 2];
      break;
    case Layout::kNhwc:
      if (r == 4) d = {s[3], s[1], s[2]};
      else d.c = shapeNumel(s);
      break;
    case Layout::kHwc:
      if (r == 3) d = {s[2], s[0], s[1]};
      else d.c = shapeNumel(s);
      break;
    case Layout::kChw:
      if (r == 3) d = {s[0], s[1], s[2]};
      else d.c = shapeNumel(s);
      break;
    case Layout::kFlat: d.c = shapeNumel(s); break;
  }
  return d;
}


std::string Type::str() const {
  std::string s(dtypeName(dtype));
  s += rank_known ? "[" + shapeStr(shape) + "]" : "[?]";
  return s;
}

const char* attrKindName(Attr::Kind k) {
  switch (k) {
    case Attr::Kind::kInt: return "int";
    case Attr::Kind::kFloat: return "float";
    case Attr::Kind::kString: return "string";
    case Attr::Kind::kTensor: return "tensor";
    case Attr::Kind::kInts: return "ints";
    case Attr::Kind::kFloats: return "floats";
    case Attr::Kind::kStrings: return "strings";
    case Attr::Kind::kGraph: return "graph";
  }
  return "?";
}

namespace {
[[noreturn]] void attrTypeError(const Node& n, const std::string& a, const char* want, const Attr& got) {
  fail(ErrorCode::kInvalidInput, "{}: attribute '{}' must be {}, got {}", n.label(), a, want,
       attrKindName(got.kind()));
}
}  // namespace

int64_t Node::attrInt(const std::string& n, int64_t def) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return def;
  if (auto v = it->second.get<int64_t>()) return *v;
  attrTypeError(*this, n, "an int", it->second);
}

float Node::attrFloat(const std::string& n, float def) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return def;
  if (auto v = it->second.get<float>()) return *v;
  if (auto v = it->second.get<int64_t>()) return static_cast<float>(*v);
  attrTypeError(*this, n, "a float", it->second);
}

std::string Node::attrString(const std::string& n, const std::string& def) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return def;
  if (auto v = it->second.get<std::string>()) return *v;
  attrTypeError(*this, n, "a string", it->second);
}

std::vector<int64_t> Node::attrInts(const std::string& n, std::vector<int64_t> def) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return def;
  if (auto v = it->second.get<std::vector<int64_t>>()) return *v;
  if (auto v = it->second.get<int64_t>()) return {*v};
  attrTypeError(*this, n, "a list of ints", it->second);
}

std::vector<float> Node::attrFloats(const std::string& n, std::vector<float> def) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return def;
  if (auto v = it->second.get<std::vector<float>>()) return *v;
  if (auto v = it->second.get<float>()) return {*v};
  attrTypeError(*this, n, "a list of floats", it->second);
}

const Tensor* Node::attrTensor(const std::string& n) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return nullptr;
  if (auto v = it->second.get<Tensor>()) return v;
  attrTypeError(*this, n, "a tensor", it->second);
}

const Graph* Node::attrGraph(const std::string& n) const {
  auto it = attrs.find(n);
  if (it == attrs.end()) return nullptr;
  if (auto v = it->second.get<GraphPtr>(); v && *v) return v->get();
  attrTypeError(*this, n, "a graph", it->second);
}

std::vector<std::pair<std::string, GraphPtr>> subgraphs(const Node& n) {
  std::vector<std::pair<std::string, GraphPtr>> r;
  for (auto& [k, a] : n.attrs)
    if (auto g = a.get<GraphPtr>(); g && *g) r.emplace_back(k, *g);
  return r;
}

int numCaptureInputs(const Node& n) {
  int k = 0;
  for (auto& [name, g] : subgraphs(n)) k += g->num_captures;
  return k;
}

int numOwnInputs(const Node& n) { return static_cast<int>(n.inputs.size()) - numCaptureInputs(n); }

std::vector<int> captureInputs(const Node& n, const std::string& attr) {
  int at = numOwnInputs(n);
  for (auto& [name, g] : subgraphs(n)) {
    if (name == attr) {
      std::vector<int> r;
      for (int i = 0; i < g->num_captures; ++i) r.push_back(at + i);
      return r;
    }
    at += g->num_captures;
  }
  return {};
}

std::string Node::label() const {
  return "node '" + name + "' (" + (domain.empty() ? "" : domain + ".") + op + ")";
}

int Node::numInputs() const {
  int n = static_cast<int>(inputs.size());
  while (n > 0 && inputs[static_cast<size_t>(n - 1)] == kNoValue) --n;
  return n;
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->values_.reserve(values_.size());
  for (auto& v : values_) g->values_.push_back(v ? std::make_unique<Value>(*v) : nullptr);
  g->nodes_.reserve(nodes_.size());
  for (auto& n : nodes_) g->nodes_.push_back(n ? std::make_unique<Node>(*n) : nullptr);
  g->order_ = order_;
  g->inputs_ = inputs_;
  g->outputs_ = outputs_;
  g->value_names_ = value_names_;
  g->num_captures = num_captures;
  g->specialized_for = specialized_for;
  g->opset = opset;
  g->name = name;
  g->producer = producer;
  g->source = source;
  return g;
}

Value& Graph::addValue(std::string name, Type type) {
  auto v = std::make_unique<Value>();
  v->id = static_cast<ValueId>(values_.size());
  if (name.empty() || value_names_.count(name)) name = uniqueValueName(name.empty() ? "v" : name);
  v->name = std::move(name);
  v->type = std::move(type);
  value_names_[v->name] = v->id;
  values_.push_back(std::move(v));
  return *values_.back();
}

Value& Graph::addConstant(std::string name, Tensor t) {
  Value& v = addValue(std::move(name), makeType(t.dtype(), t.shape()));
  v.constant = std::move(t);
  return v;
}

Value& Graph::value(ValueId id) {
  if (!hasValue(id)) fail(ErrorCode::kInternal, "no value with id {}", id);
  return *values_[static_cast<size_t>(id)];
}
const Value& Graph::value(ValueId id) const {
  if (!hasValue(id)) fail(ErrorCode::kInternal, "no value with id {}", id);
  return *values_[static_cast<size_t>(id)];
}
bool Graph::hasValue(ValueId id) const {
  return id >= 0 && static_cast<size_t>(id) < values_.size() && values_[static_cast<size_t>(id)];
}

std::vector<ValueId> Graph::valueIds() const {
  std::vector<ValueId> r;
  for (auto& v : values_)
    if (v) r.push_back(v->id);
  return r;
}

std::string Graph::uniqueValueName(const std::string& base) {
  if (!value_names_.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "_" + std::to_string(i);
    if (!value_names_.count(n)) return n;
  }
}

int Graph::uniquifyNodeNames() {
  std::set<std::string> taken;
  std::vector<Node*> later;  // (a name may be taken by a node further on: those come second)
  for (NodeId id : order()) {
    Node& n = node(id);
    if (!n.name.empty() && taken.insert(n.name).second) continue;
    later.push_back(&n);
  }
  for (Node* n : later) {
    const std::string base = n->name.empty() ? n->op : n->name;
    std::string name = base;
    for (int k = 2; !taken.insert(name).second; ++k) name = base + "/" + std::to_string(k);
    n->name = name;
  }
  return static_cast<int>(later.size());
}

Node& Graph::addNode(std::string op, std::string name, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                     std::string domain) {
  auto n = std::make_unique<Node>();
  n->id = static_cast<NodeId>(nodes_.size());
  n->op = std::move(op);
  n->name = std::move(name);
  n->domain = std::move(domain);
  n->inputs = std::move(inputs);
  n->outputs = std::move(outputs);
  for (size_t i = 0; i < n->outputs.size(); ++i) {
    if (n->outputs[i] == kNoValue) continue;
    Value& v = value(n->outputs[i]);
    v.producer = n->id;
    v.producer_output = static_cast<int>(i);
  }
  order_.push_back(n->id);
  nodes_.push_back(std::move(n));
  return *nodes_.back();
}

Node& Graph::node(NodeId id) {
  if (!hasNode(id)) fail(ErrorCode::kInternal, "no node with id {}", id);
  return *nodes_[static_cast<size_t>(id)];
}
const Node& Graph::node(NodeId id) const {
  if (!hasNode(id)) fail(ErrorCode::kInternal, "no node with id {}", id);
  return *nodes_[static_cast<size_t>(id)];
}
bool Graph::hasNode(NodeId id) const {
  return id >= 0 && static_cast<size_t>(id) < nodes_.size() && nodes_[static_cast<size_t>(id)];
}

void Graph::removeNode(NodeId id) {
  Node& n = node(id);
  for (ValueId o : n.outputs)
    if (hasValue(o) && value(o).producer == id) value(o).producer = kNoNode;
  order_.erase(std::remove(order_.begin(), order_.end(), id), order_.end());
  nodes_[static_cast<size_t>(id)].reset();
}

void Graph::removeValue(ValueId id) {
  Value& v = value(id);
  value_names_.erase(v.name);
  values_[static_cast<size_t>(id)].reset();
}

void Graph::renameValue(ValueId id, const std::string& name) {
  Value& v = value(id);
  if (v.name == name) return;
  if (value_names_.count(name)) fail(ErrorCode::kInternal, "value name '{}' is already taken", name);
  value_names_.erase(v.name);
  v.name = name;
  value_names_[name] = id;
}

std::optional<ValueId> Graph::findValue(const std::string& name) const {
  auto it = value_names_.find(name);
  if (it == value_names_.end()) return std::nullopt;
  return it->second;
}

UseMap Graph::uses() const {
  UseMap u;
  for (NodeId id : order_) {
    const Node& n = node(id);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue) u[n.inputs[i]].push_back({id, static_cast<int>(i)});
  }
  return u;
}

void Graph::topoSort() {
  // Kahn's algorithm with ties broken by the current position (so a sorted order stays as it is), on vectors
  // indexed by position: O(n log n) for the ready queue, linear otherwise.
  const size_t n = order_.size();
  std::vector<int64_t> pos_of(nodes_.size(), -1);  // node id -> position in order_ (-1: not in it)
  for (size_t i = 0; i < n; ++i) pos_of[static_cast<size_t>(order_[i])] = static_cast<int64_t>(i);
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<uint32_t>> succ(n);  // by position
  std::vector<int64_t> preds;
  for (size_t i = 0; i < n; ++i) {
    preds.clear();
    for (ValueId in : node(order_[i]).inputs) {
      if (in == kNoValue || !hasValue(in)) continue;
      NodeId p = value(in).producer;
      if (p == kNoNode || !hasNode(p)) continue;
      int64_t pp = pos_of[static_cast<size_t>(p)];
      if (pp >= 0) preds.push_back(pp);
    }
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (int64_t pp : preds) {
      ++indeg[i];
      succ[static_cast<size_t>(pp)].push_back(static_cast<uint32_t>(i));
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(i);
  std::vector<NodeId> out;
  out.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    out.push_back(order_[i]);
    for (uint32_t s : succ[i])
      if (--indeg[s] == 0) ready.push(s);
  }
  if (out.size() != n) {
    // Report the first node (by id, as before) that is still waiting on a predecessor.
    NodeId first = kNoNode;
    for (size_t i = 0; i < n; ++i)
      if (indeg[i] > 0 && (first == kNoNode || order_[i] < first)) first = order_[i];
    fail(ErrorCode::kInvalidInput, "{}: the graph has a cycle through this node", node(first).label());
  }
  order_ = std::move(out);
}

namespace {

void verifyAt(const Graph& g, ErrorCode code, int depth);

/// A node's subgraphs: nesting bounded, each one valid, its captures the node's trailing inputs, of the same element
/// types as the values they stand for.
void verifySubgraphs(const Graph& g, const Node& n, ErrorCode code, int depth) {
  auto subs = subgraphs(n);
  if (subs.empty()) return;
  if (depth >= kMaxSubgraphDepth)
    fail(code, "{}: subgraphs nest deeper than {} levels", n.label(), kMaxSubgraphDepth);
  int total = 0;
  for (auto& [name, body] : subs) {
    if (body->num_captures < 0 || body->num_captures > static_cast<int>(body->inputs().size()))
      fail(code, "{}: attribute '{}': {} captures but {} inputs", n.label(), name, body->num_captures, body->inputs().size());
    total += body->num_captures;
    const Graph& sub = *body;  // (clang 14 captures no structured binding in a lambda)
    withContext(n.label() + ": attribute '" + name + "'", [&] { verifyAt(sub, code, depth + 1); });
  }
  if (total > static_cast<int>(n.inputs.size()))
    fail(code, "{}: its subgraphs capture {} outer values but the node has {} inputs", n.label(), total, n.inputs.size());
  for (auto& [name, body] : subs) {
    auto at = captureInputs(n, name);
    const size_t first = body->inputs().size() - static_cast<size_t>(body->num_captures);
    for (size_t i = 0; i < at.size(); ++i) {
      ValueId outer = n.inputs[static_cast<size_t>(at[i])];
      if (outer == kNoValue) fail(code, "{}: attribute '{}': capture {} is not bound to a value", n.label(), name, i);
      const Value& inner = body->value(body->inputs()[first + i]);
      DType od = g.value(outer).type.dtype, id = inner.type.dtype;
      if (od != DType::kUndefined && id != DType::kUndefined && od != id)
        fail(code, "{}: attribute '{}': '{}' is {} inside and {} outside", n.label(), name, inner.name, dtypeName(id),
             dtypeName(od));
    }
  }
}

}  // namespace

void verify(const Graph& g, ErrorCode code) { verifyAt(g, code, 0); }

namespace {
void verifyAt(const Graph& g, ErrorCode code, int depth) {
  std::set<ValueId> defined;
  for (ValueId in : g.inputs()) {
    if (!g.hasValue(in)) fail(code, "graph input id {} does not exist", in);
    defined.insert(in);
  }
  for (ValueId id : g.valueIds())
    if (g.value(id).isConstant()) defined.insert(id);
  std::set<ValueId> produced;
  for (NodeId nid : g.order()) {
    const Node& n = g.node(nid);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ValueId in = n.inputs[i];
      if (in == kNoValue) continue;
      if (!g.hasValue(in)) fail(code, "{}: input {} refers to a removed value", n.label(), i);
      if (!defined.count(in))
        fail(code, "{}: input {} '{}' is not a graph input, an initializer, or the output of an earlier node",
             n.label(), i, g.value(in).name);
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ValueId o = n.outputs[i];
      if (o == kNoValue) continue;
      if (!g.hasValue(o)) fail(code, "{}: output {} refers to a removed value", n.label(), i);
      const Value& v = g.value(o);
      if (produced.count(o) || v.isConstant() || std::count(g.inputs().begin(), g.inputs().end(), o))
        fail(code, "{}: output '{}' is already defined elsewhere", n.label(), v.name);
      if (v.producer != nid || v.producer_output != static_cast<int>(i))
        fail(code, "{}: output '{}' has inconsistent producer bookkeeping", n.label(), v.name);
      produced.insert(o);
      defined.insert(o);
    }
    verifySubgraphs(g, n, code, depth);
  }
  for (ValueId o : g.outputs()) {
    if (!g.hasValue(o)) fail(code, "graph output id {} does not exist", o);
    if (!defined.count(o)) fail(code, "graph output '{}' is never produced", g.value(o).name);
  }
}
}  // namespace

namespace {
void dumpAt(const Graph& g, std::ostringstream& os, const std::string& indent);
}

std::string dump(const Graph& g) {
  std::ostringstream os;
  dumpAt(g, os, "");
  return os.str();
}

namespace {
void dumpAt(const Graph& g, std::ostringstream& os, const std::string& indent) {
  auto vname = [&](ValueId v) { return v == kNoValue ? std::string("_") : "%" + g.value(v).name; };
  os << indent << "graph " << g.name << " (opset " << g.opset << ")\n";
  const size_t first_capture = g.inputs().size() - static_cast<size_t>(std::max(0, g.num_captures));
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    ValueId in = g.inputs()[i];
    os << indent << (i < first_capture ? "  input " : "  capture ") << vname(in) << " : " << g.value(in).type.str() << "\n";
  }
  for (NodeId id : g.order()) {
    const Node& n = g.node(id);
    os << indent << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i)
      os << (i ? ", " : "") << vname(n.outputs[i])
         << (n.outputs[i] != kNoValue ? " : " + g.value(n.outputs[i]).type.str() : "");
    os << " = " << (n.domain.empty() ? "" : n.domain + ".") << n.op << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << vname(n.inputs[i]);
    os << ")";
    if (!n.attrs.empty()) {
      os << " {";
      bool first = true;
      for (auto& [k, a] : n.attrs) {
        os << (first ? "" : ", ") << k;
        first = false;
        if (auto v = a.get<int64_t>()) os << "=" << *v;
        else if (auto f = a.get<float>()) os << "=" << *f;
        else if (auto s = a.get<std::string>()) os << "=\"" << *s << "\"";
        else if (auto is = a.get<std::vector<int64_t>>()) {
          os << "=[";
          for (size_t i = 0; i < is->size(); ++i) os << (i ? "," : "") << (*is)[i];
          os << "]";
        } else if (auto sg = a.get<GraphPtr>(); sg && *sg) {
          os << "=<graph: " << (*sg)->numNodes() << " nodes>";
        }
      }
      os << "}";
    }
    os << "  # " << n.name << "\n";
    for (auto& [k, sg] : subgraphs(n)) {
      os << indent << "    " << k << ":\n";
      dumpAt(*sg, os, indent + "    ");
    }
  }
  for (ValueId o : g.outputs()) os << indent << "  output " << vname(o) << "\n";
}
}  // namespace

std::string opexp(const Node& n) {
  std::vector<std::string> ops;
  if (auto f = n.attrs.find("fused"); f != n.attrs.end() && f->second.get<std::vector<std::string>>())
    ops = *f->second.get<std::vector<std::string>>();
  if (ops.empty()) ops.push_back(n.op);
  ops.insert(ops.begin() + 1, n.merged_ops.begin(), n.merged_ops.end());
  std::string s;
  for (auto& o : ops) s += (s.empty() ? "" : "+") + o;
  return s;
}

std::vector<std::string> sourceNodes(const Node& n) {
  std::vector<std::string> r = {n.name};
  for (auto& m : n.merged_nodes)
    if (std::find(r.begin(), r.end(), m) == r.end()) r.push_back(m);
  return r;
}

bool isTransposeBy(const Node& n, const std::vector<int64_t>& perm) {
  if (n.op != "Transpose" || !n.domain.empty()) return false;
  auto it = n.attrs.find("perm");
  const auto* p = it == n.attrs.end() ? nullptr : it->second.get<std::vector<int64_t>>();
  return p && *p == perm;
}

bool onlyFeedsTransposeBy(const Graph& g, ValueId v, const std::vector<int64_t>& perm) {
  bool any = false;
  for (NodeId id : g.order()) {
    const Node& n = g.node(id);
    if (std::find(n.inputs.begin(), n.inputs.end(), v) == n.inputs.end()) continue;
    if (!isTransposeBy(n, perm)) return false;
    any = true;
  }
  return any;
}

void markChannelLastBoundaries(Graph& g) {
  auto rank4 = [&](ValueId v) { return g.value(v).type.rank_known && g.value(v).type.shape.size() == 4; };
  for (ValueId v : g.inputs())
    if (g.value(v).layout == Layout::kModel && rank4(v) && onlyFeedsTransposeBy(g, v, {0, 3, 1, 2})) g.value(v).layout = Layout::kNhwc;
  for (ValueId v : g.outputs()) {
    const NodeId p = g.value(v).producer;
    if (g.value(v).layout == Layout::kModel && rank4(v) && p != kNoNode && isTransposeBy(g.node(p), {0, 2, 3, 1}))
      g.value(v).layout = Layout::kNhwc;
  }
}

const Tensor* constantInput(const Graph& g, const Node& n, int i, DType dtype) {
  if (!n.hasInput(i)) return nullptr;
  const Value& v = g.value(n.inputs[static_cast<size_t>(i)]);
  return v.constant && v.constant->dtype() == dtype ? &*v.constant : nullptr;
}

}  // namespace npuc::ir
