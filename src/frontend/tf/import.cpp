// A frozen GraphDef -> ir::Graph: the file read and parsed, its nodes indexed and their inputs resolved ("node",
// "node:k", control inputs "^node" ignored), the nodes its outputs depend on put in execution order (cycles refused),
// then each node mapped by the Importer (importer.hpp) in that order.
#include "frontend/tf/importer.hpp"
#include "frontend/tf/tf_io.hpp"

#include "ops/registry.hpp"
#include "plugin/plugin.hpp"
#include "support/error.hpp"
#include "support/file.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace npuc::tf_io {

const std::map<std::string, Importer::Fn>& Importer::table() {
  static const std::map<std::string, Fn> kTable = {
      {"Placeholder", &Importer::placeholder},
      {"Const", &Importer::constOp},
      {"Identity", &Importer::identity},
      {"StopGradient", &Importer::identity},
      {"NoOp", nullptr},
      {"Conv2D", &Importer::conv2d},
      {"DepthwiseConv2dNative", &Importer::conv2d},
      {"Conv2DBackpropInput", &Importer::conv2dBackpropInput},
      {"BiasAdd", &Importer::biasAdd},
      {"FusedBatchNorm", &Importer::fusedBatchNorm},
      {"FusedBatchNormV3", &Importer::fusedBatchNorm},
      {"MaxPool", &Importer::pool},
      {"AvgPool", &Importer::pool},
      {"ResizeBilinear", &Importer::resize},
      {"ResizeNearestNeighbor", &Importer::resize},
      {"Relu", &Importer::unary},
      {"Relu6", &Importer::unary},
      {"LeakyRelu", &Importer::unary},
      {"Sigmoid", &Importer::unary},
      {"Tanh", &Importer::unary},
      {"Rsqrt", &Importer::unary},
      {"Sqrt", &Importer::unary},
      {"Add", &Importer::binary},
      {"AddV2", &Importer::binary},
      {"Sub", &Importer::binary},
      {"Mul", &Importer::binary},
      {"RealDiv", &Importer::binary},
      {"Maximum", &Importer::binary},
      {"Minimum", &Importer::binary},
      {"MatMul", &Importer::matmul},
      {"Softmax", &Importer::softmax},
      {"Mean", &Importer::reduce},
      {"Prod", &Importer::reduce},
      {"ArgMax", &Importer::argmax},
      {"Cast", &Importer::cast},
      {"ConcatV2", &Importer::concat},
      {"Pack", &Importer::pack},
      {"Reshape", &Importer::reshape},
      {"Squeeze", &Importer::squeeze},
      {"ExpandDims", &Importer::expandDims},
      {"Shape", &Importer::shape},
      {"Slice", &Importer::slice},
      {"StridedSlice", &Importer::stridedSlice},
      {"Pad", &Importer::pad},
      {"PadV2", &Importer::pad},
      {"MirrorPad", &Importer::pad},
      {"Transpose", &Importer::transpose},
      {"_FusedConv2D", &Importer::fusedConv2d},
      {"FusedDepthwiseConv2dNative", &Importer::fusedConv2d},
      {"_FusedMatMul", &Importer::fusedMatMul},
      {"AddN", &Importer::addN},
      {"Prelu", &Importer::prelu},
      {"Split", &Importer::split},
      {"SplitV", &Importer::split},
      {"Elu", &Importer::unary},
      {"Abs", &Importer::unary},
      {"Exp", &Importer::unary},
      {"Log", &Importer::unary},
      {"Neg", &Importer::unary},
      {"Floor", &Importer::unary},
      {"Square", &Importer::unary},
      {"Max", &Importer::reduce},
      {"Min", &Importer::reduce},
      {"Sum", &Importer::reduce},
      {"DepthToSpace", &Importer::depthToSpace},
      {"SpaceToDepth", &Importer::depthToSpace},
  };
  return kTable;
}

const std::vector<std::string>& supportedOps() {
  static const std::vector<std::string> kOps = {
      "Placeholder", "Const", "Identity", "StopGradient", "NoOp", "Conv2D", "DepthwiseConv2dNative",
      "Conv2DBackpropInput", "BiasAdd", "FusedBatchNorm", "FusedBatchNormV3", "MaxPool", "AvgPool",
      "ResizeBilinear", "ResizeNearestNeighbor", "Relu", "Relu6", "LeakyRelu", "Sigmoid", "Tanh", "Rsqrt", "Sqrt",
      "Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "MatMul", "Softmax", "Mean", "Prod", "ArgMax",
      "Cast", "ConcatV2", "Pack", "Reshape", "Squeeze", "ExpandDims", "Shape", "Slice", "StridedSlice", "Pad",
      "PadV2", "MirrorPad", "Transpose", "_FusedConv2D", "FusedDepthwiseConv2dNative", "_FusedMatMul", "AddN",
      "Prelu", "Split", "SplitV", "Elu", "Abs", "Exp", "Log", "Neg", "Floor", "Square", "Max", "Min", "Sum",
      "DepthToSpace", "SpaceToDepth"};
  return kOps;
}

namespace {

std::string label(const tf::NodeDef& n, int index) {
  return fmt::format("node '{}' ({})", n.name().empty() ? "#" + std::to_string(index) : n.name(), n.op());
}

/// "name", "name:k" -> (name, k); false for a malformed output index.
bool splitInput(const std::string& s, std::string* name, int* k) {
  *name = s;
  *k = 0;
  size_t colon = s.rfind(':');
  if (colon == std::string::npos) return true;
  std::string idx = s.substr(colon + 1);
  if (idx.empty() || idx.size() > 6 || !std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  *name = s.substr(0, colon);
  *k = std::stoi(idx);
  return true;
}

bool producesNothing(const std::string& op) { return op == "NoOp" || op == "Const" || op == "Placeholder"; }

}  // namespace

void Importer::indexNodes() {
  const int count = gd_.node_size();
  ins_.assign(static_cast<size_t>(count), {});
  for (int i = 0; i < count; ++i) {
    const tf::NodeDef& n = gd_.node(i);
    if (n.name().empty()) fail(ErrorCode::kInvalidInput, "{}: the node has no name (inputs name nodes)", label(n, i));
    if (!by_name_.emplace(n.name(), i).second)
      fail(ErrorCode::kInvalidInput, "{}: a second node of this name (NodeDef.name must be unique)", label(n, i));
  }
  for (int i = 0; i < count; ++i) {
    const tf::NodeDef& n = gd_.node(i);
    bool control_seen = false;
    for (int j = 0; j < n.input_size(); ++j) {
      const std::string& s = n.input(j);
      if (!s.empty() && s[0] == '^') {  // a control dependency: ordering only, nothing flows
        control_seen = true;
        continue;
      }
      if (control_seen)
        fail(ErrorCode::kInvalidInput, "{}: input {} '{}' follows a control input (data inputs come first)", label(n, i), j, s);
      std::string name;
      int k = 0;
      if (!splitInput(s, &name, &k))
        fail(ErrorCode::kInvalidInput, "{}: input {} '{}' is not 'node' or 'node:output'", label(n, i), j, s);
      auto it = by_name_.find(name);
      if (it == by_name_.end())
        fail(ErrorCode::kInvalidInput, "{}: input {} '{}' names no node of the graph", label(n, i), j, s);
      ins_[static_cast<size_t>(i)].emplace_back(it->second, k);
      ++readers_[{it->second, k}];
    }
  }
}

/// The nodes no node reads (their outputs are the graph's), in file order; constants, placeholders and NoOps left
/// alone are not outputs.
std::vector<int> Importer::outputNodes() const {
  std::vector<bool> read(static_cast<size_t>(gd_.node_size()), false);
  for (const auto& ins : ins_)
    for (auto [node, k] : ins) read[static_cast<size_t>(node)] = true;
  std::vector<int> outs;
  for (int i = 0; i < gd_.node_size(); ++i)
    if (!read[static_cast<size_t>(i)] && !producesNothing(gd_.node(i).op())) outs.push_back(i);
  return outs;
}

/// Post-order of the data inputs from the outputs (iterative: graphs may be deep); a cycle is refused.
std::vector<int> Importer::executionOrder(const std::vector<int>& outputs) {
  enum : uint8_t { kNew, kOpen, kDone };
  std::vector<uint8_t> state(static_cast<size_t>(gd_.node_size()), kNew);
  std::vector<int> order;
  for (int root : outputs) {
    if (state[static_cast<size_t>(root)] != kNew) continue;
    std::vector<std::pair<int, size_t>> stack = {{root, 0}};
    state[static_cast<size_t>(root)] = kOpen;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const auto& ins = ins_[static_cast<size_t>(node)];
      if (next < ins.size()) {
        int m = ins[next++].first;
        if (state[static_cast<size_t>(m)] == kOpen)
          fail(ErrorCode::kInvalidInput, "{}: its input '{}' depends on the node itself (a cycle; a frozen graph has "
                                         "none)", label(gd_.node(node), node), gd_.node(m).name());
        if (state[static_cast<size_t>(m)] == kNew) {
          state[static_cast<size_t>(m)] = kOpen;
          stack.emplace_back(m, 0);
        }
        continue;
      }
      state[static_cast<size_t>(node)] = kDone;
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

void Importer::convert(const tf::NodeDef& n) {
  auto it = table().find(n.op());
  if (it == table().end()) {
    if (const plugin::CustomOp* op = customOpNamed(n.op())) return customOp(n, *op);
    std::string known;
    for (const std::string& t : supportedOps()) known += (known.empty() ? "" : ", ") + t;
    fail(ErrorCode::kUnsupported, "op '{}' is not one npuc imports (it imports: {}; an op of your own can be added as a "
                                  "plugin whose definition names it: docs/custom-ops.md, --custom-op LIB.so)", n.op(), known);
  }
  if (it->second) (this->*(it->second))(n);
}

void Importer::finishOutputs(const std::vector<int>& outputs) {
  for (int o : outputs) {
    for (int k = 0;; ++k) {
      auto it = vals_.find({o, k});
      if (it == vals_.end()) break;
      cur_ = o;
      Val& x = *it->second;
      const std::string name = tensorName(gd_.node(o).name(), k);
      ir::ValueId v = asTf(x);
      const bool taken = std::find(g_->outputs().begin(), g_->outputs().end(), v) != g_->outputs().end();
      if (x.host || taken || g_->value(v).producer == ir::kNoNode) {  // a constant, an input or another output's value
        ir::ValueId y = g_->addValue(g_->uniqueValueName(name + "/out")).id;
        node("Identity", {v}, {y}, {}, "/out");
        v = y;
      }
      if (g_->value(v).name != name) {
        if (auto clash = g_->findValue(name)) g_->renameValue(*clash, g_->uniqueValueName(name + "/channels_first"));
        g_->renameValue(v, name);
      }
      g_->outputs().push_back(v);
    }
  }
}

std::unique_ptr<ir::Graph> Importer::run() {
  g_ = std::make_unique<ir::Graph>();
  g_->opset = 13;
  g_->producer = "tensorflow";
  cl_ = std::make_unique<channel_last::Builder>(*g_);
  indexNodes();
  std::vector<int> outputs = outputNodes();
  if (outputs.empty()) fail(ErrorCode::kInvalidInput, "the graph has no output (every node's output is read by another)");
  for (int i : executionOrder(outputs)) {
    cur_ = i;
    const tf::NodeDef& n = gd_.node(i);
    withContext(label(n, i), [&] { convert(n); });
  }
  finishOutputs(outputs);
  for (auto& [name, s] : opts_.input_shapes)
    if (!fixed_.count(name)) {
      auto origin = opts_.input_shape_origin.find(name);
      std::string inputs;
      for (ir::ValueId v : g_->inputs()) inputs += (inputs.empty() ? "" : ", ") + g_->value(v).name;
      fail(ErrorCode::kInvalidArgument, "{} names '{}', which is not an input of the graph (its inputs: {})",
           origin == opts_.input_shape_origin.end() ? "--input-shape" : origin->second, name,
           inputs.empty() ? "none" : inputs);
    }
  if (g_->inputs().empty()) fail(ErrorCode::kInvalidInput, "the graph's outputs depend on no Placeholder (no input)");
  g_->topoSort();
  ir::verify(*g_, ErrorCode::kInvalidInput);
  return std::move(g_);
}

namespace {

std::unique_ptr<ir::Graph> importGraph(const tf::GraphDef& gd, const std::string& name, const onnx_io::ImportOptions& opts) {
  if (gd.node_size() == 0) fail(ErrorCode::kInvalidInput, "{}: not a TensorFlow GraphDef with nodes (GraphDef.node is empty)", name);
  return withContext(name, [&] {
    auto g = Importer(gd, name, opts).run();
    g->source = name;
    return g;
  });
}

/// The first diagnostic of TextFormat, with its line and column.
class TextErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first.empty()) first = fmt::format("line {}:{}: {}", line + 1, column + 1, message);
  }
  std::string first;
};

}  // namespace

std::unique_ptr<ir::Graph> importBytes(const void* data, size_t size, const std::string& name,
                                       const onnx_io::ImportOptions& opts) {
  if (size > static_cast<size_t>(INT_MAX))
    fail(ErrorCode::kUnsupported, "{}: {} bytes, more than the 2 GiB a protobuf message can hold", name, size);
  tf::GraphDef gd;
  if (!gd.ParseFromArray(data, static_cast<int>(size)))
    fail(ErrorCode::kInvalidInput, "{}: not a valid TensorFlow GraphDef (protobuf parsing failed: truncated or corrupt "
                                   "file, or not a frozen graph)", name);
  return importGraph(gd, name, opts);
}

std::unique_ptr<ir::Graph> importText(const std::string& text, const std::string& name, const onnx_io::ImportOptions& opts) {
  tf::GraphDef gd;
  google::protobuf::TextFormat::Parser parser;
  TextErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &gd))
    fail(ErrorCode::kInvalidInput, "{}: not a valid TensorFlow GraphDef in text form: {}", name,
         errors.first.empty() ? "text format parsing failed" : errors.first);
  return importGraph(gd, name, opts);
}

std::unique_ptr<ir::Graph> importFile(const std::filesystem::path& path, const onnx_io::ImportOptions& opts) {
  std::string ext = path.extension().string();
  if (ext == ".pbtxt")  // the text form (as_text=True)
    return importText(readFileText(path, INT_MAX, "a TensorFlow GraphDef in text form"), path.string(), opts);
  std::vector<uint8_t> bytes = readFileBytes(path, INT_MAX, "a TensorFlow GraphDef (protobuf's limit)");
  return importBytes(bytes.data(), bytes.size(), path.string(), opts);
}

}  // namespace npuc::tf_io
