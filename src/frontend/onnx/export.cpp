// ir::Graph -> ONNX model, the ONNX checker, and test-data TensorProto files.
#include "frontend/onnx/onnx_io.hpp"
#include "frontend/onnx/proto_convert.hpp"

#include "support/error.hpp"
#include "support/file.hpp"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace npuc::onnx_io {

namespace {

using NameOf = std::function<std::string(ir::ValueId)>;

/// The nodes of `g` in order, values named by `nameOf`, types of intermediate values as value_info; a subgraph
/// attribute written with its captures named as the node's trailing inputs (which are not written as inputs).
void nodesToProto(const ir::Graph& g, const NameOf& nameOf, std::set<std::string>& taken, std::set<std::string>& domains,
                  onnx::GraphProto& gp) {
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    auto* np = gp.add_node();
    np->set_name(n.name);
    np->set_op_type(n.op);
    if (!n.domain.empty()) {
      np->set_domain(n.domain);
      domains.insert(n.domain);
    }
    const int own = ir::numOwnInputs(n);
    for (int i = 0; i < own; ++i) {
      ir::ValueId v = n.inputs[static_cast<size_t>(i)];
      np->add_input(v == ir::kNoValue ? "" : nameOf(v));
    }
    for (ir::ValueId v : n.outputs) np->add_output(v == ir::kNoValue ? "" : nameOf(v));
    for (auto& [k, a] : n.attrs) {
      auto* ap = np->add_attribute();
      if (auto sg = a.get<ir::GraphPtr>(); sg && *sg) {
        std::vector<std::string> caps;
        for (int i : ir::captureInputs(n, k)) caps.push_back(nameOf(n.inputs[static_cast<size_t>(i)]));
        ap->set_name(k);
        ap->set_type(onnx::AttributeProto::GRAPH);
        subgraphToProto(**sg, caps, taken, *ap->mutable_g());
        for (auto& sub : ap->g().node())
          if (!sub.domain().empty()) domains.insert(sub.domain());
      } else {
        attrToProto(k, a, *ap);
      }
    }
    for (ir::ValueId v : n.outputs) {
      if (v == ir::kNoValue) continue;
      bool is_out = std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
      if (!is_out && g.value(v).type.dtype != DType::kUndefined) {
        auto* vi = gp.add_value_info();
        vi->set_name(nameOf(v));
        typeToProto(g.value(v).type, *vi->mutable_type());
      }
    }
  }
}

/// Constants read by the nodes or listed as outputs, as initializers.
void initializersToProto(const ir::Graph& g, const NameOf& nameOf, onnx::GraphProto& gp) {
  std::set<ir::ValueId> used;
  for (ir::NodeId id : g.order())
    for (ir::ValueId v : g.node(id).inputs)
      if (v != ir::kNoValue) used.insert(v);
  for (ir::ValueId o : g.outputs()) used.insert(o);
  for (ir::ValueId v : used) {
    const ir::Value& val = g.value(v);
    if (val.isConstant()) tensorToProto(*val.constant, nameOf(v), *gp.add_initializer());
  }
}

}  // namespace

void subgraphToProto(const ir::Graph& g, const std::vector<std::string>& capture_names, std::set<std::string>& taken,
                     onnx::GraphProto& out) {
  out.set_name(g.name.empty() ? "body" : g.name);
  std::map<ir::ValueId, std::string> names;
  const size_t first = g.inputs().size() - static_cast<size_t>(g.num_captures);
  for (size_t j = 0; j < capture_names.size() && first + j < g.inputs().size(); ++j) names[g.inputs()[first + j]] = capture_names[j];
  std::set<std::string> inner = taken;
  for (ir::ValueId v : g.valueIds()) {
    if (names.count(v)) continue;
    std::string name = g.value(v).name;
    for (int k = 1; inner.count(name); ++k) name = g.value(v).name + "_" + std::to_string(k);
    inner.insert(name);
    names[v] = name;
  }
  NameOf nameOf = [&](ir::ValueId v) { return names.at(v); };
  for (size_t i = 0; i < first; ++i) {
    auto* vi = out.add_input();
    vi->set_name(nameOf(g.inputs()[i]));
    if (g.value(g.inputs()[i]).type.dtype != DType::kUndefined) typeToProto(g.value(g.inputs()[i]).type, *vi->mutable_type());
  }
  initializersToProto(g, nameOf, out);
  std::set<std::string> domains;
  nodesToProto(g, nameOf, inner, domains, out);
  for (ir::ValueId o : g.outputs()) {
    auto* vi = out.add_output();
    vi->set_name(nameOf(o));
    if (g.value(o).type.dtype != DType::kUndefined) typeToProto(g.value(o).type, *vi->mutable_type());
  }
  taken = std::move(inner);  // the names of every scope written so far stay unique model-wide
}

std::string exportBytes(const ir::Graph& g) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("npuc");
  m.set_producer_version("0.1");
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(g.opset);
  std::set<std::string> domains;
  auto* gp = m.mutable_graph();
  gp->set_name(g.name.empty() ? "npuc" : g.name);
  NameOf nameOf = [&](ir::ValueId v) { return g.value(v).name; };
  for (ir::ValueId in : g.inputs()) {
    auto* vi = gp->add_input();
    vi->set_name(g.value(in).name);
    typeToProto(g.value(in).type, *vi->mutable_type());
  }
  initializersToProto(g, nameOf, *gp);
  std::set<std::string> taken;
  for (ir::ValueId v : g.valueIds()) taken.insert(g.value(v).name);
  nodesToProto(g, nameOf, taken, domains, *gp);
  for (ir::ValueId o : g.outputs()) {
    auto* vi = gp->add_output();
    vi->set_name(g.value(o).name);
    typeToProto(g.value(o).type, *vi->mutable_type());
  }
  for (auto& d : domains) {
    auto* o = m.add_opset_import();
    o->set_domain(d);
    o->set_version(1);
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes)) fail(ErrorCode::kInternal, "failed to serialise the ONNX model");
  return bytes;
}

void exportFile(const ir::Graph& g, const std::filesystem::path& path) { writeFileAtomic(path, exportBytes(g)); }

void checkModelBytes(const std::string& bytes, const std::string& name) {
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) fail(ErrorCode::kInvalidInput, "{}: not a valid ONNX model", name);
  try {
    onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    fail(ErrorCode::kInvalidInput, "{}: ONNX checker: {}", name, e.what());
  }
}

std::pair<std::string, Tensor> readTensorProtoFile(const std::filesystem::path& path) {
  auto bytes = readFileBytes(path);
  onnx::TensorProto t;
  if (!t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    fail(ErrorCode::kInvalidInput, "{}: not a valid TensorProto", path.string());
  return {t.name(), withContext(path.string(), [&] { return tensorFromProto(t, path.parent_path()); })};
}

}  // namespace npuc::onnx_io
