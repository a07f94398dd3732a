// ONNX model -> ir::Graph: parsing, opset and op checks, external data, shape inference, conversion.
#include "frontend/onnx/onnx_io.hpp"
#include "frontend/onnx/proto_convert.hpp"
#include "frontend/onnx/legacy.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"
#include "support/file.hpp"
#include "support/log.hpp"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <set>

namespace npuc::onnx_io {

namespace {

std::string nodeLabel(const onnx::NodeProto& n, int index) {
  std::string name = n.name().empty() ? "#" + std::to_string(index) : n.name();
  return "node '" + name + "' (" + (n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".") +
         n.op_type() + ")";
}

void fixInputShapes(onnx::GraphProto& g, const ImportOptions& opts, const std::set<std::string>& inits) {
  std::set<std::string> seen;
  for (auto& in : *g.mutable_input()) {
    if (inits.count(in.name())) continue;
    seen.insert(in.name());
    if (!in.type().has_tensor_type())
      fail(ErrorCode::kUnsupported, "input '{}' is not a tensor (sequences and maps are not supported)", in.name());
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    auto it = opts.input_shapes.find(in.name());
    if (it != opts.input_shapes.end()) {
      shape->clear_dim();
      for (int64_t d : it->second) shape->add_dim()->set_dim_value(d);
      continue;
    }
    if (!in.type().tensor_type().has_shape()) {
      if (opts.require_static_inputs)
        fail(ErrorCode::kInvalidInput, "input '{}' has no shape; give one with --input-shape {}=…", in.name(), in.name());
      continue;
    }
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto* d = shape->mutable_dim(i);
      if (d->has_dim_value() && d->dim_value() >= 0) continue;
      if (i == 0) {
        d->set_dim_value(opts.default_batch);
      } else if (opts.require_static_inputs) {
        fail(ErrorCode::kInvalidInput, "input '{}' has a dynamic dimension {} ('{}'); fix it with --input-shape {}=…",
             in.name(), i, d->dim_param(), in.name());
      }
    }
  }
  for (auto& [name, s] : opts.input_shapes)
    if (!seen.count(name))
      fail(ErrorCode::kInvalidArgument, "--input-shape names '{}', which is not an input of the model", name);
}

}  // namespace

std::unique_ptr<ir::Graph> importBytes(const void* data, size_t size, const std::string& name,
                                       const std::filesystem::path& base_dir, const ImportOptions& opts) {
  return withContext(name, [&]() -> std::unique_ptr<ir::Graph> {
    onnx::ModelProto m;
    if (size > static_cast<size_t>(INT32_MAX) || !m.ParseFromArray(data, static_cast<int>(size)))
      fail(ErrorCode::kInvalidInput, "not a valid ONNX model (protobuf parsing failed: truncated or corrupt file)");
    if (!m.has_graph()) fail(ErrorCode::kInvalidInput, "not a valid ONNX model (no graph)");
    int opset = -1;
    for (auto& os : m.opset_import()) {
      if (os.domain().empty() || os.domain() == "ai.onnx") opset = static_cast<int>(os.version());
    }
    if (opset < 0) {
      if (m.opset_import_size() == 0) fail(ErrorCode::kInvalidInput, "the model declares no opset_import");
      opset = kMaxOpset;  // only other domains imported; their ops are checked below
    }
    if (opset < kMinOpset || opset > kMaxOpset)
      fail(ErrorCode::kUnsupported, "ai.onnx opset {} is not supported (npuc imports opsets {} to {})", opset,
           kMinOpset, kMaxOpset);
    if (m.functions_size() > 0) fail(ErrorCode::kUnsupported, "model-local functions are not supported");
    onnx::GraphProto& gp = *m.mutable_graph();

    // Unknown ops first, so the user hears about them by name rather than through shape inference.
    for (int i = 0; i < gp.node_size(); ++i) {
      const auto& n = gp.node(i);
      if (!ops::registry().find(n.domain(), n.op_type()))
        fail(ErrorCode::kUnsupported, "{}: unknown op '{}' (npuc does not implement it)", nodeLabel(n, i), n.op_type());
    }

    std::set<std::string> inits;
    for (auto& t : gp.initializer()) inits.insert(t.name());
    if (gp.sparse_initializer_size() > 0) fail(ErrorCode::kUnsupported, "sparse initializers are not supported");
    fixInputShapes(gp, opts, inits);

    // Forget declared intermediate/output dims when inputs were overridden: they describe other shapes.
    if (!opts.input_shapes.empty()) {
      gp.clear_value_info();
      for (auto& o : *gp.mutable_output()) {
        if (!o.type().has_tensor_type() || !o.type().tensor_type().has_shape()) continue;
        // Keep the rank, forget the dims.
        for (auto& d : *o.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) d.Clear();
      }
    }

    // ONNX shape inference. Strict first; some valid old models break its type rules (e.g. int64 Constants
    // at opset < 9), so on failure it runs again leniently and npuc's own shape functions (which run on every
    // node below) are the judge of consistency.
    try {
      onnx::ShapeInferenceOptions strict{true, 1, true};
      onnx::ModelProto copy = m;
      onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), strict);
      m = std::move(copy);
    } catch (const std::exception& strict_error) {
      log::info("import", "{}: strict ONNX shape inference failed ({}); retrying leniently", name, strict_error.what());
      try {
        onnx::ShapeInferenceOptions lenient{false, 0, true};
        onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), lenient);
      } catch (const std::exception& e) {
        fail(ErrorCode::kInvalidInput, "inconsistent shapes (ONNX shape inference): {}", e.what());
      }
    }

    onnx::GraphProto& graph = *m.mutable_graph();  // `gp` may be stale after the inference swapped models
    auto g = std::make_unique<ir::Graph>();
    g->opset = opset;
    g->name = graph.name();
    g->producer = m.producer_name();
    g->source = name;

    std::map<std::string, onnx::TypeProto> types;
    for (auto* list : {&graph.input(), &graph.output(), &graph.value_info()})
      for (auto& vi : *list) types[vi.name()] = vi.type();

    std::map<std::string, ir::ValueId> byName;
    for (auto& t : graph.initializer()) {
      if (t.name().empty()) fail(ErrorCode::kInvalidInput, "an initializer has no name");
      Tensor tensor = withContext("initializer '" + t.name() + "'", [&] { return tensorFromProto(t, base_dir); });
      byName[t.name()] = g->addConstant(t.name(), std::move(tensor)).id;
    }
    for (auto& in : graph.input()) {
      if (inits.count(in.name())) continue;
      if (byName.count(in.name())) fail(ErrorCode::kInvalidInput, "input '{}' is declared twice", in.name());
      ir::Value& v = g->addValue(in.name(), typeFromProto(in.type(), "input '" + in.name() + "'"));
      g->inputs().push_back(v.id);
      byName[in.name()] = v.id;
    }
    // Create every node output first, so that node order in the file does not matter (we sort afterwards).
    std::vector<std::vector<ir::ValueId>> outs(static_cast<size_t>(graph.node_size()));
    for (int i = 0; i < graph.node_size(); ++i) {
      const auto& n = graph.node(i);
      for (auto& o : n.output()) {
        if (o.empty()) {
          outs[static_cast<size_t>(i)].push_back(ir::kNoValue);
          continue;
        }
        if (byName.count(o))
          fail(ErrorCode::kInvalidInput, "{}: output '{}' is already defined elsewhere", nodeLabel(n, i), o);
        auto it = types.find(o);
        ir::Type t = it != types.end() ? typeFromProto(it->second, "value '" + o + "'", true) : ir::Type{};
        byName[o] = g->addValue(o, t).id;
        outs[static_cast<size_t>(i)].push_back(byName[o]);
      }
    }
    for (int i = 0; i < graph.node_size(); ++i) {
      const auto& n = graph.node(i);
      std::string label = nodeLabel(n, i);
      std::vector<ir::ValueId> ins;
      for (auto& in : n.input()) {
        if (in.empty()) {
          ins.push_back(ir::kNoValue);
          continue;
        }
        auto it = byName.find(in);
        if (it == byName.end())
          fail(ErrorCode::kInvalidInput,
               "{}: input '{}' is not a graph input, an initializer, or the output of any node (missing initializer?)",
               label, in);
        ins.push_back(it->second);
      }
      std::string nname = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
      ir::Node& node = g->addNode(n.op_type(), nname, std::move(ins), outs[static_cast<size_t>(i)],
                                  n.domain() == "ai.onnx" ? "" : n.domain());
      withContext(label, [&] {
        for (auto& a : n.attribute()) node.attrs[a.name()] = attrFromProto(a, base_dir);
      });
    }
    for (auto& o : graph.output()) {
      auto it = byName.find(o.name());
      if (it == byName.end()) fail(ErrorCode::kInvalidInput, "graph output '{}' is never produced", o.name());
      g->outputs().push_back(it->second);
    }
    g->topoSort();
    ir::verify(*g, ErrorCode::kInvalidInput);
    if (opset < 7) canonicalizeLegacy(*g);
    try {
      ops::inferShapes(*g);
    } catch (Error& e) {
      if (e.code() == ErrorCode::kInvalidInput) e.addContext("inconsistent shapes");
      throw;
    }
    return g;
  });
}

std::unique_ptr<ir::Graph> importFile(const std::filesystem::path& path, const ImportOptions& opts) {
  auto bytes = readFileBytes(path);
  return importBytes(bytes.data(), bytes.size(), path.string(), path.parent_path(), opts);
}

}  // namespace npuc::onnx_io
