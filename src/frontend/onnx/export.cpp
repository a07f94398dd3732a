// ir::Graph -> ONNX model, the ONNX checker, and test-data TensorProto files.
#include "frontend/onnx/onnx_io.hpp"
#include "frontend/onnx/proto_convert.hpp"

#include "support/error.hpp"
#include "support/file.hpp"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <set>

namespace npuc::onnx_io {

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
  for (ir::ValueId in : g.inputs()) {
    auto* vi = gp->add_input();
    vi->set_name(g.value(in).name);
    typeToProto(g.value(in).type, *vi->mutable_type());
  }
  std::set<ir::ValueId> used;
  for (ir::NodeId id : g.order())
    for (ir::ValueId v : g.node(id).inputs)
      if (v != ir::kNoValue) used.insert(v);
  for (ir::ValueId o : g.outputs()) used.insert(o);
  std::set<ir::ValueId> interface(g.inputs().begin(), g.inputs().end());
  for (ir::ValueId v : used) {
    const ir::Value& val = g.value(v);
    if (val.isConstant()) tensorToProto(*val.constant, val.name, *gp->add_initializer());
  }
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    auto* np = gp->add_node();
    np->set_name(n.name);
    np->set_op_type(n.op);
    if (!n.domain.empty()) {
      np->set_domain(n.domain);
      domains.insert(n.domain);
    }
    for (ir::ValueId v : n.inputs) np->add_input(v == ir::kNoValue ? "" : g.value(v).name);
    for (ir::ValueId v : n.outputs) np->add_output(v == ir::kNoValue ? "" : g.value(v).name);
    for (auto& [k, a] : n.attrs) attrToProto(k, a, *np->add_attribute());
    for (ir::ValueId v : n.outputs) {
      if (v == ir::kNoValue) continue;
      bool is_out = std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
      if (!is_out && g.value(v).type.dtype != DType::kUndefined) {
        auto* vi = gp->add_value_info();
        vi->set_name(g.value(v).name);
        typeToProto(g.value(v).type, *vi->mutable_type());
      }
    }
  }
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
