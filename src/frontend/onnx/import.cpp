// ONNX model -> ir::Graph: parsing, opset and op checks, external data, shape inference, conversion.
#include "frontend/onnx/onnx_io.hpp"
#include "frontend/onnx/proto_convert.hpp"
#include "frontend/onnx/legacy.hpp"
#include "frontend/onnx/qlinear.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"
#include "support/utf8.hpp"
#include "support/file.hpp"
#include "support/log.hpp"

#include <google/protobuf/arena.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <cstdio>
#include <set>
#include <unordered_map>

#include <sys/wait.h>
#include <unistd.h>

namespace npuc::onnx_io {

namespace {

/// Initializers up to this size keep their protobuf data for ONNX shape inference (shape operands); larger ones
/// (weights) are released after conversion and passed to the inference as typed inputs.
constexpr size_t kSmallTensorBytes = 4096;

std::string nodeLabel(const onnx::NodeProto& n, int index) {
  std::string name = n.name().empty() ? "#" + std::to_string(index) : n.name();
  return "node '" + name + "' (" + (n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".") +
         n.op_type() + ")";
}

/// Applies --input-shape and the default batch to the graph's inputs; true when a given shape differs from the one
/// the model declares (then the model's other declared dims describe other shapes).
bool fixInputShapes(onnx::GraphProto& g, const ImportOptions& opts, const std::set<std::string>& inits) {
  std::set<std::string> seen;
  bool changed = false;
  for (auto& in : *g.mutable_input()) {
    if (inits.count(in.name())) continue;
    seen.insert(in.name());
    if (!in.type().has_tensor_type())
      fail(ErrorCode::kUnsupported, "input '{}' is not a tensor (sequences and maps are not supported)", in.name());
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    auto it = opts.input_shapes.find(in.name());
    if (it != opts.input_shapes.end()) {
      bool same = in.type().tensor_type().has_shape() && shape->dim_size() == static_cast<int>(it->second.size());
      for (int i = 0; same && i < shape->dim_size(); ++i)
        same = shape->dim(i).has_dim_value() && shape->dim(i).dim_value() == it->second[static_cast<size_t>(i)];
      changed |= !same;
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
    if (!seen.count(name)) {
      auto origin = opts.input_shape_origin.find(name);
      std::string inputs;
      for (const std::string& in : seen) inputs += (inputs.empty() ? "" : ", ") + in;
      fail(ErrorCode::kInvalidArgument, "{} names '{}', which is not an input of the model (its inputs: {})",
           origin == opts.input_shape_origin.end() ? "--input-shape" : origin->second, name, inputs.empty() ? "none" : inputs);
    }
  return changed;
}

/// libonnx shape inference (strict, then lenient) in a child process, started before npuc converts the model and
/// collected after: the two run side by side. libonnx trusts its input and can crash on malformed models; in a
/// child, a crash becomes a clear error. The child works on its own (copy-on-write) image of the model, where large
/// initializers become typed graph inputs first (their values never matter for shapes).
class OnnxInference {
 public:
  explicit OnnxInference(const onnx::ModelProto& m) {
    int fds[2];
    if (::pipe(fds) != 0) fail(ErrorCode::kIo, "cannot create a pipe for ONNX shape inference");
    std::fflush(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      fail(ErrorCode::kIo, "cannot fork for ONNX shape inference");
    }
    if (pid_ == 0) {
      ::close(fds[0]);
      child(const_cast<onnx::ModelProto&>(m), fds[1]);  // the child's own image: the parent's model is untouched
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  OnnxInference(const OnnxInference&) = delete;
  OnnxInference& operator=(const OnnxInference&) = delete;
  ~OnnxInference() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::close(fd_);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }

  /// Waits for the child: the inferred value_info serialised as a GraphProto, or an error naming the problem.
  std::string result() {
    std::string in;
    char buf[65536];
    for (;;) {
      ssize_t r = ::read(fd_, buf, sizeof buf);
      if (r > 0) in.append(buf, static_cast<size_t>(r));
      else if (r == 0 || errno != EINTR) break;
    }
    ::close(fd_);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    if (!WIFEXITED(status) || in.empty())
      fail(ErrorCode::kInvalidInput, "malformed model: ONNX shape inference crashed on it (signal {})",
           WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (in[0] == 'E') fail(ErrorCode::kInvalidInput, "inconsistent shapes (ONNX shape inference): {}", in.substr(1));
    return in.substr(1);
  }

 private:
  [[noreturn]] static void child(onnx::ModelProto& m, int fd) {
    std::string out;
    try {
      auto* gp = m.mutable_graph();
      google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
      for (auto& t : *gp->mutable_initializer()) {
        int64_t elems = 1;
        for (int64_t d : t.dims()) elems = d > 0 && elems < (int64_t{1} << 40) ? elems * d : (d == 0 ? 0 : elems);
        bool small = elems * 8 <= static_cast<int64_t>(kSmallTensorBytes);
        if (small && t.data_location() != onnx::TensorProto::EXTERNAL) {
          *kept.Add() = t;
          continue;
        }
        auto* vi = gp->add_input();
        vi->set_name(t.name());
        auto* tt = vi->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(t.data_type());
        for (int64_t d : t.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
      }
      gp->mutable_initializer()->Swap(&kept);
      try {
        // In place (the child's image is its own): where strict inference stops at an error, the lenient pass
        // starts from what it had inferred, which agrees with what the lenient pass infers again.
        onnx::ShapeInferenceOptions strict{true, 1, true};
        onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), strict);
      } catch (const std::exception&) {
        onnx::ShapeInferenceOptions lenient{false, 0, true};
        onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), lenient);
      }
      // Moved, not copied; nothing is destroyed (the child ends with _exit, and destroying a large model's
      // protobuf costs as much as inferring its shapes).
      auto* shapes = new onnx::GraphProto;
      shapes->mutable_value_info()->Swap(m.mutable_graph()->mutable_value_info());
      out = "O" + shapes->SerializeAsString();
    } catch (const std::exception& e) {
      out = std::string("E") + e.what();
    }
    size_t off = 0;
    while (off < out.size()) {
      ssize_t w = ::write(fd, out.data() + off, out.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    ::_exit(0);
  }

  pid_t pid_ = -1;
  int fd_ = -1;
};

/// ONNX shape inference as a cross-check, run once npuc's own shape functions have accepted every node: every
/// static shape it infers must agree with npuc's — except where ONNX's own inference is known to break the operator's
/// definition: Debian 12's ONNX (1.12) gives an STFT without an `onesided` attribute every bin, though the attribute's
/// default is 1 (half of them), so the outputs of such a node, and every value computed from them, are not compared.
void crossCheckWithOnnx(OnnxInference& onnx_shapes, const ir::Graph& g) {
  for (ir::NodeId id : g.order())
    for (ir::ValueId v : g.node(id).outputs)
      if (v != ir::kNoValue && !g.value(v).type.isStatic()) return;  // data-dependent shapes: nothing to check
  // On an arena: one value_info per tensor of the model, freed at once rather than message by message.
  std::set<ir::ValueId> wrong_in_onnx;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    bool wrong = n.op == "STFT" && n.domain.empty() && !n.hasAttr("onesided");
    for (ir::ValueId v : n.inputs) wrong = wrong || wrong_in_onnx.count(v);
    if (wrong) wrong_in_onnx.insert(n.outputs.begin(), n.outputs.end());
  }
  google::protobuf::Arena arena;
  auto* shapes = google::protobuf::Arena::CreateMessage<onnx::GraphProto>(&arena);
  if (!shapes->ParseFromString(onnx_shapes.result()))
    fail(ErrorCode::kInternal, "could not read the result of ONNX shape inference");
  for (auto& vi : shapes->value_info()) {
    auto id = g.findValue(vi.name());
    if (!id) continue;
    if (wrong_in_onnx.count(*id)) continue;
    ir::Type t = typeFromProto(vi.type(), "value '" + vi.name() + "'", true);
    const ir::Type& mine = g.value(*id).type;
    if (t.isStatic() && mine.isStatic() && t.shape != mine.shape)
      fail(ErrorCode::kInvalidInput, "inconsistent shapes: ONNX shape inference gives '{}' the shape {}, npuc gives {}",
           vi.name(), shapeStr(t.shape), shapeStr(mine.shape));
  }
}

/// The model's header: its IR version, the ai.onnx opset it imports (returned), no model-local functions.
/// Every tensor and node name valid UTF-8: names go into manifests and reports as text, where invalid bytes would be
/// replaced (two names made one, a package its own reader refuses).
void checkNames(const ir::Graph& g) {
  auto check = [](const std::string& name, const char* what) {
    if (size_t at = invalidUtf8At(name); at != std::string_view::npos)
      fail(ErrorCode::kInvalidInput, "{} name '{}' is not valid UTF-8 (byte {} of the name): names are text in the package and "
           "its reports", what, escapedName(name), at);
  };
  for (ir::ValueId v : g.valueIds()) check(g.value(v).name, "tensor");
  for (ir::NodeId n : g.order()) {
    check(g.node(n).name, "node");
    for (auto& [attr, sub] : ir::subgraphs(g.node(n))) checkNames(*sub);
  }
}

int checkModelHeader(const onnx::ModelProto& m) {
  if (!m.has_graph()) fail(ErrorCode::kInvalidInput, "not a valid ONNX model (no graph)");
  if (!m.has_ir_version() || m.ir_version() < 1)
    fail(ErrorCode::kInvalidInput, "ir_version {} is not a valid ONNX IR version", m.ir_version());
  if (m.ir_version() > onnx::Version::IR_VERSION)
    fail(ErrorCode::kUnsupported, "ir_version {} is newer than npuc reads (at most {}, ONNX {})", m.ir_version(),
         static_cast<int>(onnx::Version::IR_VERSION), onnx::LAST_RELEASE_VERSION);
  int opset = -1;
  bool declared = false;
  for (auto& os : m.opset_import()) {
    if (!os.domain().empty() && os.domain() != "ai.onnx") continue;
    if (declared) fail(ErrorCode::kInvalidInput, "opset_import names the ai.onnx domain twice");
    declared = true;
    if (os.version() < 1 || os.version() > 1000)
      fail(ErrorCode::kInvalidInput, "opset_import: ai.onnx version {} is not an opset version", os.version());
    opset = static_cast<int>(os.version());
  }
  if (!declared) {
    if (m.opset_import_size() == 0) fail(ErrorCode::kInvalidInput, "the model declares no opset_import");
    opset = kMaxOpset;  // only other domains imported; their ops are checked below
  }
  if (opset < kMinOpset || opset > kMaxOpset)
    fail(ErrorCode::kUnsupported, "ai.onnx opset {} is not supported (npuc imports opsets {} to {})", opset,
         kMinOpset, kMaxOpset);
  if (m.functions_size() > 0) fail(ErrorCode::kUnsupported, "model-local functions are not supported");
  return opset;
}

/// Refuses unknown ops before anything else, so the user hears about them by name rather than through shape inference:
/// every one of them (the reports list each node), the message naming the first.
void rejectUnknownOps(const onnx::GraphProto& gp) {
  std::vector<UnknownOpsError::Node> unknown;
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& n = gp.node(i);
    if (!ops::findSchema(n.domain(), n.op_type()) && !isExpandedOnImport(n.domain(), n.op_type()))
      unknown.push_back({i, n.name().empty() ? "#" + std::to_string(i) : n.name(),
                         (n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".") + n.op_type()});
  }
  if (!unknown.empty()) {
    std::string message = fmt::format("{}: unknown op '{}' (npuc does not implement it; an op of your own can be added as a "
                                      "plugin: docs/custom-ops.md, --custom-op LIB.so){}", nodeLabel(gp.node(unknown[0].index), unknown[0].index),
                                      unknown[0].op, unknown.size() > 1 ? fmt::format("; {} more node(s) of unknown ops", unknown.size() - 1) : "");
    throw UnknownOpsError(std::move(message), std::move(unknown));  // (the message first: it reads unknown)
  }
}

}  // namespace

/// Converts a parsed model; releases each large initializer's protobuf data once it is in the IR, so the weights
/// are held once at a time.
std::unique_ptr<ir::Graph> importProto(onnx::ModelProto& m, const std::string& name, const std::filesystem::path& base_dir,
                                       const ImportOptions& opts) {
  return withContext(name, [&]() -> std::unique_ptr<ir::Graph> {
    const int opset = checkModelHeader(m);
    onnx::GraphProto& gp = *m.mutable_graph();

    rejectUnknownOps(gp);

    std::set<std::string> inits;
    for (auto& t : gp.initializer())
      if (!inits.insert(t.name()).second)
        fail(ErrorCode::kInvalidInput, "two initializers are named '{}' (a name has one value)", t.name());
    if (gp.sparse_initializer_size() > 0) fail(ErrorCode::kUnsupported, "sparse initializers are not supported");
    // Forget declared intermediate/output dims when inputs were given other shapes: they describe other shapes.
    if (fixInputShapes(gp, opts, inits)) {
      gp.clear_value_info();
      for (auto& o : *gp.mutable_output()) {
        if (!o.type().has_tensor_type() || !o.type().tensor_type().has_shape()) continue;
        // Keep the rank, forget the dims.
        for (auto& d : *o.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) d.Clear();
      }
    }

    onnx::GraphProto& graph = gp;
    // ONNX's own shape inference starts now in a child process and is checked against npuc's at the end.
    OnnxInference onnx_shapes(m);
    auto g = std::make_unique<ir::Graph>();
    g->opset = opset;
    g->name = graph.name();
    g->producer = m.producer_name();
    g->source = name;

    std::unordered_map<std::string, const onnx::TypeProto*> types;  // into the model, which outlives it
    for (auto* list : {&graph.input(), &graph.output(), &graph.value_info()})
      for (auto& vi : *list) types[vi.name()] = &vi.type();

    std::unordered_map<std::string, ir::ValueId> byName;
    for (auto& t : *graph.mutable_initializer()) {
      if (t.name().empty()) fail(ErrorCode::kInvalidInput, "an initializer has no name");
      Tensor tensor = withContext("initializer '" + t.name() + "'", [&] { return tensorFromProto(t, base_dir); });
      if (tensor.nbytes() > kSmallTensorBytes) {  // the IR holds it now; the shape cross-check needs only dims
        t.clear_raw_data();
        t.clear_float_data();
        t.clear_double_data();
        t.clear_int32_data();
        t.clear_int64_data();
        t.clear_uint64_data();
      }
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
        ir::Type t = it != types.end() ? typeFromProto(*it->second, "value '" + o + "'", true) : ir::Type{};
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
      convertAttributes(n, label, node, [&](const std::string& outer, const std::string& reader) {
        auto it = byName.find(outer);
        if (it == byName.end())
          fail(ErrorCode::kInvalidInput, "{} reads '{}', which is not defined in its subgraph or any enclosing graph", reader, outer);
        return it->second;
      }, opset, 0, base_dir);
    }
    for (auto& o : graph.output()) {
      auto it = byName.find(o.name());
      if (it == byName.end()) fail(ErrorCode::kInvalidInput, "graph output '{}' is never produced", o.name());
      if (std::count(g->outputs().begin(), g->outputs().end(), it->second))
        fail(ErrorCode::kInvalidInput, "graph output '{}' is listed twice (an output has one name)", o.name());
      g->outputs().push_back(it->second);
    }
    g->topoSort();
    ir::verify(*g, ErrorCode::kInvalidInput);
    checkNames(*g);
    expandQLinearOps(*g);
    // npuc's own shape functions validate every node first (they check ranks, channels, attributes); legacy
    // forms are canonicalised node by node as their input types become known.
    try {
      std::vector<ir::NodeId> order = g->order();
      for (ir::NodeId id : order) {
        if (opset < 7) canonicalizeLegacyNode(*g, id);
        ops::inferNodeTypes(*g, id);
      }
      g->topoSort();
    } catch (Error& e) {
      if (e.code() == ErrorCode::kInvalidInput) e.addContext("inconsistent shapes");
      throw;
    }
    crossCheckWithOnnx(onnx_shapes, *g);
    return g;
  });
}

std::unique_ptr<ir::Graph> importBytes(const void* data, size_t size, const std::string& name,
                                       const std::filesystem::path& base_dir, const ImportOptions& opts) {
  onnx::ModelProto m;
  if (size > static_cast<size_t>(INT32_MAX) || !m.ParseFromArray(data, static_cast<int>(size)))
    fail(ErrorCode::kInvalidInput, "{}: not a valid ONNX model (protobuf parsing failed: truncated or corrupt file)", name);
  return importProto(m, name, base_dir, opts);
}

std::unique_ptr<ir::Graph> importFile(const std::filesystem::path& path, const ImportOptions& opts) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) readFileBytes(path);  // the same "not found" / "is a directory" errors
  // Parse straight from the file: the bytes are never held in memory next to the parsed model.
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail(ErrorCode::kIo, "{}: cannot open: {}", path.string(), std::strerror(errno));
  onnx::ModelProto m;
  bool ok = m.ParseFromFileDescriptor(fd);
  ::close(fd);
  if (!ok) fail(ErrorCode::kInvalidInput, "{}: not a valid ONNX model (protobuf parsing failed: truncated or corrupt file)", path.string());
  return importProto(m, path.string(), path.parent_path(), opts);
}

}  // namespace npuc::onnx_io
