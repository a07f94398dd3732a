// ONNX subgraphs (If's branches, Loop's and Scan's bodies) -> ir::Graph attributes with explicit captures: every name
// a subgraph reads and does not define is resolved in the enclosing scope at import, becomes one of the subgraph's
// capture inputs, and the enclosing node reads the outer value as a trailing input (ir::Graph::num_captures).
#include "frontend/onnx/proto_convert.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"

#include <unordered_map>

namespace npuc::onnx_io {

namespace {

std::string subLabel(const onnx::NodeProto& n, int index) {
  std::string name = n.name().empty() ? "#" + std::to_string(index) : n.name();
  return "node '" + name + "' (" + (n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".") + n.op_type() + ")";
}

struct ImportedSubgraph {
  ir::GraphPtr graph;
  std::vector<std::pair<std::string, std::string>> captures;  // (outer name, its first reader), in the inputs' order
};

ImportedSubgraph subgraphFromProto(const onnx::GraphProto& gp, int opset, int depth, const std::filesystem::path& base_dir) {
  if (gp.sparse_initializer_size() > 0) fail(ErrorCode::kUnsupported, "sparse initializers are not supported");
  auto g = std::make_unique<ir::Graph>();
  g->opset = opset;
  g->name = gp.name();
  std::unordered_map<std::string, const onnx::TypeProto*> types;
  for (auto* list : {&gp.input(), &gp.output(), &gp.value_info()})
    for (auto& vi : *list) types[vi.name()] = &vi.type();
  std::unordered_map<std::string, ir::ValueId> byName;
  auto define = [&](const std::string& name, const char* what) {
    if (name.empty()) fail(ErrorCode::kInvalidInput, "{} has no name", what);
    if (byName.count(name)) fail(ErrorCode::kInvalidInput, "'{}' is defined twice in the subgraph", name);
  };
  for (auto& t : gp.initializer()) {
    define(t.name(), "an initializer");
    Tensor tensor = withContext("initializer '" + t.name() + "'", [&] { return tensorFromProto(t, base_dir); });
    byName[t.name()] = g->addConstant(t.name(), std::move(tensor)).id;
  }
  for (auto& in : gp.input()) {
    define(in.name(), "an input");
    ir::Value& v = g->addValue(in.name(), typeFromProto(in.type(), "input '" + in.name() + "'", true));
    g->inputs().push_back(v.id);
    byName[in.name()] = v.id;
  }
  std::vector<std::vector<ir::ValueId>> outs(static_cast<size_t>(gp.node_size()));
  for (int i = 0; i < gp.node_size(); ++i)
    for (auto& o : gp.node(i).output()) {
      if (o.empty()) {
        outs[static_cast<size_t>(i)].push_back(ir::kNoValue);
        continue;
      }
      withContext(subLabel(gp.node(i), i), [&] { define(o, "an output"); });
      auto it = types.find(o);
      byName[o] = g->addValue(o, it != types.end() ? typeFromProto(*it->second, "value '" + o + "'", true) : ir::Type{}).id;
      outs[static_cast<size_t>(i)].push_back(byName[o]);
    }
  ImportedSubgraph r;
  std::vector<ir::ValueId> capture_values;
  ScopeResolver resolve = [&](const std::string& name, const std::string& reader) -> ir::ValueId {
    if (auto it = byName.find(name); it != byName.end()) return it->second;
    auto it = types.find(name);
    ir::ValueId v = g->addValue(name, it != types.end() ? typeFromProto(*it->second, "value '" + name + "'", true) : ir::Type{}).id;
    byName[name] = v;
    r.captures.emplace_back(name, reader);
    capture_values.push_back(v);
    return v;
  };
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& n = gp.node(i);
    std::string label = subLabel(n, i);
    if (!ops::findSchema(n.domain(), n.op_type()))
      fail(ErrorCode::kUnsupported, "{}: unknown op '{}' inside a subgraph (npuc does not implement it)", label, n.op_type());
    std::vector<ir::ValueId> ins;
    for (auto& in : n.input()) ins.push_back(in.empty() ? ir::kNoValue : resolve(in, label));
    ir::Node& node = g->addNode(n.op_type(), n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name(),
                                std::move(ins), outs[static_cast<size_t>(i)], n.domain() == "ai.onnx" ? "" : n.domain());
    convertAttributes(n, label, node, resolve, opset, depth, base_dir);
  }
  for (auto& o : gp.output()) g->outputs().push_back(resolve(o.name(), "its output list"));
  for (ir::ValueId v : capture_values) g->inputs().push_back(v);
  g->num_captures = static_cast<int>(capture_values.size());
  g->topoSort();
  r.graph = ir::GraphPtr(std::move(g));
  return r;
}

}  // namespace

void convertAttributes(const onnx::NodeProto& n, const std::string& label, ir::Node& node, const ScopeResolver& resolve,
                       int opset, int depth, const std::filesystem::path& base_dir) {
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> captures;  // by attribute, in name order like node.attrs
  withContext(label, [&] {
    for (auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPHS)
        fail(ErrorCode::kUnsupported, "attribute '{}': lists of subgraphs (GRAPHS) are not supported", a.name());
      if (a.type() != onnx::AttributeProto::GRAPH) {
        node.attrs[a.name()] = attrFromProto(a, base_dir);
        continue;
      }
      if (!a.ref_attr_name().empty()) fail(ErrorCode::kUnsupported, "attribute '{}': attribute references are not supported", a.name());
      if (opset < 7) fail(ErrorCode::kUnsupported, "attribute '{}': subgraphs in models of opset below 7 are not supported", a.name());
      if (depth + 1 > ir::kMaxSubgraphDepth)
        fail(ErrorCode::kInvalidInput, "attribute '{}': subgraphs nest deeper than {} levels", a.name(), ir::kMaxSubgraphDepth);
      auto sub = withContext("attribute '" + a.name() + "'", [&] { return subgraphFromProto(a.g(), opset, depth + 1, base_dir); });
      node.attrs[a.name()] = ir::Attr(sub.graph);
      captures[a.name()] = std::move(sub.captures);
    }
  });
  for (auto& [attr, names] : captures)
    for (auto& [name, reader] : names) node.inputs.push_back(resolve(name, label + ": attribute '" + attr + "': " + reader));
}

}  // namespace npuc::onnx_io
