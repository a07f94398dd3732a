// Lowering to descriptors (lower.hpp). Docs: docs/package-format.md (what each descriptor kind means) and
// docs/memory-planning.md (where activations go).
#include "codegen/lower.hpp"

#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"
#include "package/interval_map.hpp"
#include "plan/memory.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

namespace npuc::codegen {

namespace {

using package::Act;
using package::ElemType;
using package::Engine;
using package::LayerKind;

struct LVal {
  std::string name;
  Shape shape;
  ElemType type = ElemType::kF32;
  int weight_blob = -1;  // >= 0: a constant in the weight space
  int writer = -1;       // descriptor producing it (-1: graph input or weight)
  int last_reader = -1;
  char space = 'd';      // 'i' data_in, 'd' data, 'o' data_out, 'w' weight
  uint64_t offset = 0;
  int alias = -1;        // >= 0: the same bytes as that value, another shape (a Reshape, Identity, same-type Cast)
};

struct LDesc {
  LayerKind kind = LayerKind::kCopy;
  Engine engine = Engine::kMac;
  Act act = Act::kNone;
  float act_a = 0, act_b = 0;
  std::vector<uint32_t> params;
  std::vector<int> ins;
  std::vector<Shape> views;  // per input then the output: the dims recorded in the reference (same numel)
  int out = -1;
  std::string name, opexp;
  std::vector<std::string> onnx_nodes;
};

struct Blob {
  std::string name;
  uint64_t offset = 0, size = 0;  // in the weight image
};

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint32_t u32(int64_t v) { return static_cast<uint32_t>(static_cast<int32_t>(v)); }

class Lowerer {
 public:
  Lowerer(const ir::Graph& g, const target::Target& t, ir::Graph* consume) : g_(g), t_(t), consume_(consume) {
    ft_ = numericsFloatType(t.numerics);
    if (!numericsHasPackages(t.numerics))
      fail(ErrorCode::kUnsupported,
           "target '{}' declares {} numerics; packages in {} need quantization, which npuc does not implement yet "
           "(fp32 and fp16 targets emit packages)",
           t.name, numericsName(t.numerics), numericsName(t.numerics));
  }

  void run() {
    // Reserve the weight image once (an upper bound: untouched capacity costs no memory), so it never
    // reallocates while holding a copy of the model's weights.
    uint64_t upper = 0;
    for (ir::ValueId v : g_.valueIds())
      if (g_.value(v).isConstant()) upper += static_cast<uint64_t>(g_.value(v).constant->numel()) * 4 + 64;
    weights_.reserve(upper);
    uses_ = g_.uses();
    for (ir::ValueId v : g_.outputs()) is_output_[v] = true;
    for (ir::NodeId id : g_.order()) {
      if (skip_.count(id)) continue;
      lowerNode(g_.node(id));
      if (consume_) release(g_.node(id));
    }
    for (ir::ValueId v : g_.outputs()) directOutput(v);
    for (ir::ValueId v : g_.outputs()) halfOutput(v);
  }

  /// A float16 model output of a float32 package is rounded to float16 as it is stored (a cast layer after the
  /// layer computing it in float32), so the package's outputs have the model's types.
  void halfOutput(ir::ValueId v) {
    const ir::Value& val = g_.value(v);
    auto it = of_.find(v);
    if (ft_ != ElemType::kF32 || val.exact_type || val.type.dtype != DType::kF16 || it == of_.end()) return;
    LVal& computed = vals_[static_cast<size_t>(it->second)];
    if (computed.type != ElemType::kF32 || computed.space != 'o') return;
    computed.space = 'd';
    computed.name += "/float32";
    LVal o;
    o.name = val.name;
    o.shape = computed.shape;
    o.type = ElemType::kF16;
    o.space = 'o';
    vals_.push_back(o);
    const int out = static_cast<int>(vals_.size()) - 1;
    LDesc d;
    d.kind = LayerKind::kCast;
    d.engine = package::layerEngine(LayerKind::kCast);
    d.ins = {it->second};
    d.out = out;
    d.name = val.name + "/to_float16";
    d.opexp = "Cast";
    descs_.push_back(std::move(d));
    it->second = out;
  }

  /// Why model output v cannot be a package output when no node computes it (a constant after folding: a Shape, a
  /// Size; or a model input passed through), or "" when it can: copied by a copy layer from the weights or the input.
  static std::string directOutputGap(const ir::Graph& g, ir::ValueId v) {
    const ir::Value& val = g.value(v);
    if (val.producer != ir::kNoNode) return "";
    const DType t = val.isConstant() ? val.constant->dtype() : val.type.dtype;
    if (isFloat(t) || (val.isConstant() && package::isPackageType(t))) return "";
    return fmt::format("model output '{}' is {} {} that no layer computes; packages copy float tensors and constants "
                       "of {} only", val.name, val.isConstant() ? "a constant" : "the model input", dtypeName(t),
                       "float32, float16, (u)int8, (u)int16, int32 and int64");
  }

  void directOutput(ir::ValueId v) {
    const ir::Value& val = g_.value(v);
    if (val.producer != ir::kNoNode) return;  // computed by a layer
    if (std::string why = directOutputGap(g_, v); !why.empty()) fail(ErrorCode::kUnsupported, "{}", why);
    int src;
    if (val.isConstant()) {
      const Tensor& c = *val.constant;
      if (isFloat(c.dtype())) {
        src = weightVal(val.name + "/value", c.shape(), floatBytes(c, false), ft_);
      } else {
        std::vector<uint8_t> bytes(c.nbytes());
        if (!bytes.empty()) std::memcpy(bytes.data(), c.raw(), bytes.size());
        src = weightVal(val.name + "/value", c.shape(), std::move(bytes), c.dtype());
      }
    } else {
      auto it = of_.find(v);
      src = it != of_.end() ? it->second : -1;
      if (src < 0) {  // an input nothing else reads
        LVal l;
        l.name = val.name;
        l.shape = val.type.shape;
        l.type = ft_;
        l.space = 'i';
        vals_.push_back(l);
        src = of_[v] = static_cast<int>(vals_.size()) - 1;
      }
    }
    LVal o;
    o.name = val.name;
    o.shape = vals_[static_cast<size_t>(src)].shape;
    o.type = vals_[static_cast<size_t>(src)].type;
    o.space = 'o';
    vals_.push_back(o);
    const int out = static_cast<int>(vals_.size()) - 1;
    LDesc d;
    d.kind = LayerKind::kCopy;
    d.engine = package::layerEngine(LayerKind::kCopy);
    d.ins = {src};
    d.out = out;
    d.name = val.name + "/copy";
    d.opexp = val.isConstant() ? "Constant" : "Identity";
    descs_.push_back(std::move(d));
    of_[v] = out;
  }

  /// Drops the data of constants whose every consumer has been lowered.
  void release(const ir::Node& n) {
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue || !g_.value(v).isConstant()) continue;
      auto& users = uses_[v];
      if (++released_uses_[v] >= static_cast<int>(users.size())) *consume_->value(v).constant = Tensor();
    }
  }
  std::map<ir::ValueId, int> released_uses_;

  const ir::Graph& g_;
  const target::Target& t_;
  ir::Graph* consume_;  // non-null: release constants once copied
  ElemType ft_ = ElemType::kF32;
  std::vector<LVal> vals_;
  std::vector<LDesc> descs_;
  std::vector<Blob> blobs_;
  std::vector<uint8_t> weights_;  // the weight space image, 64-byte aligned entries
  std::map<ir::ValueId, int> of_;
  std::map<ir::ValueId, bool> is_output_;
  std::map<ir::ValueId, std::vector<std::pair<ir::NodeId, int>>> uses_;
  std::map<ir::NodeId, bool> skip_;
  std::map<ir::ValueId, std::pair<int, const ir::Node*>> fused_cast_;  // cast output -> (uint8 source, the Cast)
  std::vector<Fusion> fusions_;
  std::vector<std::string> aliased_;  // nodes that became aliases (no descriptor)

 private:
  template <typename... Args>
  [[noreturn]] void unsupported(const ir::Node& n, fmt::format_string<Args...> f, Args&&... a) const {
    fail(ErrorCode::kUnsupported, "{}: {}", n.label(), fmt::format(f, std::forward<Args>(a)...));
  }

  /// The element type a value is stored in: pre/post values exactly as typed, other float values in the target's
  /// float numerics.
  ElemType storageType(const ir::Node& n, const ir::Value& v) const {
    if (v.exact_type) {
      const DType t = v.type.dtype;
      if (t != DType::kU8 && t != DType::kU16 && t != DType::kF16 && t != DType::kF32)
        unsupported(n, "pre/post value '{}' is {}; packages hold uint8, uint16, float16 or float32", v.name, dtypeName(t));
      return t;
    }
    if (!isFloat(v.type.dtype) || v.type.dtype == DType::kF64)
      unsupported(n, "value '{}' is {}; packages hold float activations (and typed pre/post-processing values) only", v.name,
                  dtypeName(v.type.dtype));
    return ft_;
  }

  // --- values ------------------------------------------------------------------------------------------

  int addBlob(const std::string& name, const std::vector<uint8_t>& bytes) {
    uint64_t off = alignUp(weights_.size(), 64);
    weights_.resize(off + bytes.size());
    std::copy(bytes.begin(), bytes.end(), weights_.begin() + static_cast<std::ptrdiff_t>(off));
    blobs_.push_back({name, off, bytes.size()});
    return static_cast<int>(blobs_.size()) - 1;
  }

  /// Float data of a constant, converted to the package's float type (or float32 when `f32`).
  std::vector<uint8_t> floatBytes(const Tensor& t, bool f32, const std::vector<float>* values = nullptr) {
    std::vector<float> tmp;
    const float* src;
    size_t n;
    if (values) {
      src = values->data();
      n = values->size();
    } else if (t.dtype() == DType::kF32) {
      src = t.data<float>();
      n = static_cast<size_t>(t.numel());
    } else {
      for (double d : t.toDouble()) tmp.push_back(static_cast<float>(d));
      src = tmp.data();
      n = tmp.size();
    }
    std::vector<uint8_t> out;
    if (f32 || ft_ == ElemType::kF32) {
      out.resize(n * 4);
      std::memcpy(out.data(), src, n * 4);
    } else {
      out.resize(n * 2);
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = floatToHalf(src[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
    }
    return out;
  }

  int weightVal(const std::string& name, Shape shape, std::vector<uint8_t> bytes, ElemType type) {
    LVal v;
    v.name = name;
    v.shape = std::move(shape);
    v.type = type;
    v.space = 'w';
    v.weight_blob = addBlob(name, bytes);
    vals_.push_back(std::move(v));
    return static_cast<int>(vals_.size()) - 1;
  }

  /// The LVal of a node input: an activation already produced, a graph input, or a constant (to the weights).
  int in(const ir::Node& n, int i) {
    if (!n.hasInput(i)) unsupported(n, "input {} is missing", i);
    ir::ValueId v = n.inputs[static_cast<size_t>(i)];
    auto it = of_.find(v);
    if (it != of_.end()) return it->second;
    const ir::Value& val = g_.value(v);
    ElemType type = storageType(n, val);
    if (val.isConstant()) {
      int id = weightVal(val.name, val.type.shape, floatBytes(*val.constant, false), ft_);
      of_[v] = id;
      return id;
    }
    if (val.producer != ir::kNoNode) unsupported(n, "input '{}' has not been computed yet (internal ordering error)", val.name);
    LVal l;
    l.name = val.name;
    l.shape = val.type.shape;
    l.type = type;
    l.space = 'i';
    vals_.push_back(l);
    of_[v] = static_cast<int>(vals_.size()) - 1;
    return of_[v];
  }

  /// The graph output that `v` only feeds through a same-shape, same-type copy (an Identity naming a post-processing
  /// dest, a no-op Reshape): the producer then writes the output itself and the copy takes no layer.
  const ir::Node* copyToOutput(const ir::Node& n, ir::ValueId v) const {
    if (is_output_.count(v)) return nullptr;
    auto it = uses_.find(v);
    if (it == uses_.end() || it->second.size() != 1) return nullptr;
    const ir::Node& c = g_.node(it->second[0].first);
    if (!c.domain.empty() || c.outputs.size() != 1 || !is_output_.count(c.outputs[0])) return nullptr;
    if (c.op != "Identity" && c.op != "Reshape" && c.op != "Flatten" && c.op != "Squeeze" && c.op != "Unsqueeze") return nullptr;
    const ir::Value &a = g_.value(v), &b = g_.value(c.outputs[0]);
    if (a.type.shape != b.type.shape || storageType(n, a) != storageType(c, b)) return nullptr;
    return &c;
  }

  int outVal(const ir::Node& n, ir::ValueId v) {
    if (const ir::Node* c = copyToOutput(n, v)) {
      int id = outVal(*c, c->outputs[0]);
      of_[v] = id;
      skip_[c->id] = true;
      aliased_.push_back(c->name);
      return id;
    }
    const ir::Value& val = g_.value(v);
    LVal l;
    l.name = val.name;
    l.shape = val.type.shape;
    l.type = storageType(n, val);
    l.space = is_output_.count(v) ? 'o' : 'd';
    vals_.push_back(l);
    of_[v] = static_cast<int>(vals_.size()) - 1;
    return of_[v];
  }

  const Shape& shapeOf(const ir::Node& n, int i) const { return g_.value(n.inputs[static_cast<size_t>(i)]).type.shape; }
  const Tensor* constIn(const ir::Node& n, int i) const {
    if (!n.hasInput(i)) return nullptr;
    const ir::Value& v = g_.value(n.inputs[static_cast<size_t>(i)]);
    return v.isConstant() ? &*v.constant : nullptr;
  }


  /// Pooling runs where the target's table puts the op (an engine of kind "mac" or "vector"); everything else
  /// on its kind's engine.
  Engine engineFor(const ir::Node& n, LayerKind k) const {
    Engine def = package::layerEngine(k);
    if (package::layerAllowedOn(k, Engine::kMac) && package::layerAllowedOn(k, Engine::kVector)) {
      const target::OpSupport* s = t_.findOp(n.op);
      if (s) {
        auto it = t_.engines.find(s->engine);
        if (it != t_.engines.end()) return it->second.kind == "mac" ? Engine::kMac : Engine::kVector;
      }
    }
    return def;
  }

  LDesc& emit(const ir::Node& n, LayerKind k, std::vector<int> ins, int out, std::vector<uint32_t> params = {}) {
    LDesc d;
    d.kind = k;
    d.engine = engineFor(n, k);
    d.ins = std::move(ins);
    d.out = out;
    d.params = std::move(params);
    d.name = n.name;
    d.opexp = ir::opexp(n);
    d.onnx_nodes = ir::sourceNodes(n);
    descs_.push_back(std::move(d));
    return descs_.back();
  }

  /// The single consumer of v when it is an activation the descriptor can apply itself.
  const ir::Node* fusableActivation(ir::ValueId v) const {
    if (is_output_.count(v)) return nullptr;
    auto it = uses_.find(v);
    if (it == uses_.end() || it->second.size() != 1) return nullptr;
    const ir::Node& c = g_.node(it->second[0].first);
    if (c.domain != "" || (c.op != "Relu" && c.op != "LeakyRelu" && c.op != "Clip")) return nullptr;
    if (c.op == "Clip" && (c.numInputs() > 1 && (!constIn(c, 1) || (c.numInputs() > 2 && !constIn(c, 2))))) return nullptr;
    return &c;
  }

  static float scalarOf(const Tensor* t, float def) {
    if (!t || t->numel() != 1) return def;
    return static_cast<float>(t->toDouble()[0]);
  }

  /// Clip's bounds as the engine reads them (ops::clipBounds); the caller has checked that they are constants.
  void clipBounds(const ir::Node& c, float& lo, float& hi) const {
    auto b = ops::clipBounds(g_, c);
    if (!b) unsupported(c, "Clip bounds must be constants");
    lo = b->first;
    hi = b->second;
  }



  /// Activation from an ai.npuc node's attributes; false when it is not one the descriptor applies.
  bool actFromAttrs(const ir::Node& n, LDesc& d) const {
    std::string a = n.attrString("activation", "");
    if (a.empty()) return true;
    if (a == "Relu") d.act = Act::kRelu;
    else if (a == "LeakyRelu") d.act = Act::kLeakyRelu, d.act_a = n.attrFloat("activation_alpha", 0.0f);  // omitted when 0
    else if (a == "Clip") d.act = Act::kClip, d.act_a = n.attrFloat("activation_alpha", 0), d.act_b = n.attrFloat("activation_beta", 0);
    else return false;
    return true;
  }

  /// Emits the unary descriptor of a fused activation the MAC epilogue does not have (Sigmoid, HardSwish, …).
  void trailingActivation(const ir::Node& n, int from, int out) {
    std::string a = n.attrString("activation", "");
    const auto& names = package::unaryOpNames();
    auto it = std::find(names.begin(), names.end(), a);
    if (it == names.end()) unsupported(n, "fused activation '{}' has no package form", a);
    float alpha = n.attrFloat("activation_alpha", 0), beta = n.attrFloat("activation_beta", 0);
    LDesc& u = emit(n, LayerKind::kUnary, {from}, out,
                    {static_cast<uint32_t>(it - names.begin()), package::floatParam(alpha), package::floatParam(beta)});
    u.name = n.name + "/" + a;
  }

  int tempVal(const std::string& name, const Shape& s) {
    LVal l;
    l.name = name;
    l.shape = s;
    l.type = ft_;
    vals_.push_back(l);
    return static_cast<int>(vals_.size()) - 1;
  }

  // --- nodes --------------------------------------------------------------------------------------------

  void lowerNode(const ir::Node& n) {
    const std::string& op = n.op;
    bool npuc = n.domain == "ai.npuc";
    if (!npuc && n.domain != "") unsupported(n, "domain '{}' has no package form", n.domain);
    if ((op == "Conv" || op == "ConvTranspose") && (npuc || n.domain.empty())) return conv(n);
    if (op == "Gemm" || op == "MatMul") return gemm(n);
    if (npuc && (op == "Swish" || op == "Mish" || op == "HardSwish")) return unaryOp(n, op, 0, 0);
    if (npuc && op == "Focus") return focus(n);
    if (npuc && op == "MaxPool") return pool(n);
    if (npuc) return prePost(n);
    if (op == "MaxPool" || op == "AveragePool") return pool(n);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      int x = in(n, 0);
      emit(n, op == "GlobalAveragePool" ? LayerKind::kGlobalAvgPool : LayerKind::kGlobalMaxPool, {x}, outVal(n, n.outputs[0]));
      return;
    }
    const std::vector<std::string>& binary_names = package::binaryOpNames();
    if (auto b = std::find(binary_names.begin(), binary_names.end(), op); b != binary_names.end()) {
      if (n.numInputs() != 2) return variadic(n, static_cast<uint32_t>(b - binary_names.begin()));
      if (shapeOf(n, 0).size() > package::kMaxRank || g_.value(n.outputs[0]).type.shape.size() > package::kMaxRank)
        unsupported(n, "rank above {}", package::kMaxRank);
      int a = in(n, 0), c = in(n, 1);
      ir::ValueId outv = n.outputs[0];
      const ir::Node* act = fusableActivation(outv);
      LDesc* d;
      if (act) {
        d = &emit(n, LayerKind::kBinary, {a, c}, outVal(*act, act->outputs[0]), {static_cast<uint32_t>(b - binary_names.begin())});
        of_[outv] = d->out;
        if (act->op == "Relu") d->act = Act::kRelu;
        else if (act->op == "LeakyRelu") d->act = Act::kLeakyRelu, d->act_a = ops::attrFloat(*act, "alpha");
        else clipBounds(*act, d->act_a, d->act_b), d->act = Act::kClip;
        d->opexp += "+" + act->op;
        d->onnx_nodes.push_back(act->name);
        skip_[act->id] = true;
      } else {
        emit(n, LayerKind::kBinary, {a, c}, outVal(n, outv), {static_cast<uint32_t>(b - binary_names.begin())});
      }
      return;
    }
    if (op == "Sum" || op == "Mean") return variadic(n, binaryCode("Add"));
    if (op == "Clip") {
      if ((n.hasInput(1) && !constIn(n, 1)) || (n.hasInput(2) && !constIn(n, 2))) unsupported(n, "Clip bounds must be constants");
      float lo, hi;
      clipBounds(n, lo, hi);
      return unaryOp(n, op, lo, hi);
    }
    // The element-wise ops of the unary table (elementwise_ops.def), alpha and beta from the attributes it names.
    const std::vector<std::string>& unary_names = package::unaryOpNames();
    if (auto u = std::find(unary_names.begin(), unary_names.end(), op);
        u != unary_names.end() && op != "Identity" && op != "Swish") {
      const auto& [a, b] = package::unaryOpAttrs()[static_cast<size_t>(u - unary_names.begin())];
      return unaryOp(n, op, a.empty() ? 0.0f : ops::attrFloat(n, a), b.empty() ? 0.0f : ops::attrFloat(n, b));
    }
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity" || op == "Dropout") {
      if (op == "Dropout" && n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue && uses_.count(n.outputs[1]))
        unsupported(n, "the Dropout mask output has no package form");
      if (op == "Dropout" && n.hasInput(2)) {  // training mode: an identity only when the ratio is 0
        const ir::Value& mode = g_.value(n.inputs[2]);
        const ir::Value* ratio = n.hasInput(1) ? &g_.value(n.inputs[1]) : nullptr;
        if (!mode.isConstant() || (ratio && !ratio->isConstant()))
          unsupported(n, "Dropout's training_mode and ratio must be constants to have a package form");
        double r = ratio ? ratio->constant->toDouble().at(0) : 0.5;
        if (mode.constant->toDouble().at(0) != 0 && r != 0)
          unsupported(n, "training_mode=true with ratio {} (random dropout) has no package form", r);
      }
      return copyLike(n);
    }
    if (op == "Cast") return cast(n);
    if (op == "Concat") return concat(n);
    if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") return softmax(n);
    if (op == "Transpose") {
      const Shape& s = shapeOf(n, 0);
      std::vector<int64_t> perm = n.attrInts("perm");
      if (perm.empty())
        for (size_t i = 0; i < s.size(); ++i) perm.push_back(static_cast<int64_t>(s.size() - 1 - i));
      if (s.size() > package::kMaxRank) unsupported(n, "rank {} above {}", s.size(), package::kMaxRank);
      // A permutation that only moves size-1 dims keeps the bytes in order: a reshape.
      std::vector<int64_t> moved;
      for (int64_t a : perm)
        if (s[static_cast<size_t>(a)] != 1) moved.push_back(a);
      if (std::is_sorted(moved.begin(), moved.end())) return copyLike(n);
      std::vector<uint32_t> p;
      for (auto v : perm) p.push_back(static_cast<uint32_t>(v));
      emit(n, LayerKind::kTranspose, {in(n, 0)}, outVal(n, n.outputs[0]), p);
      return;
    }
    if (op == "SpaceToDepth" || op == "DepthToSpace") return depthSpace(n);
    if (op == "Pad") return pad(n);
    if (op == "Slice") return slice(n);
    if (op == "BatchNormalization") return batchNorm(n);
    if (op == "LRN") {
      int64_t size = n.attrInt("size", 1);
      emit(n, LayerKind::kLrn, {in(n, 0)}, outVal(n, n.outputs[0]),
           {static_cast<uint32_t>(size), package::floatParam(ops::attrFloat(n, "alpha")),
            package::floatParam(ops::attrFloat(n, "beta")), package::floatParam(ops::attrFloat(n, "bias"))});
      return;
    }
    if (auto red = package::reduceOpCode(op)) return reduce(n, *red);
    if (op == "LayerNormalization") return layerNorm(n);
    if (op == "Resize" || op == "Upsample") return resize(n);
    if (op == "Gather") return gather(n);
    if (op == "Split") return split(n);
    if (op == "Expand" || op == "Tile") {
      const Shape& ys = g_.value(n.outputs[0]).type.shape;
      Shape xs = shapeOf(n, 0);
      if (ys.size() > package::kMaxRank) unsupported(n, "rank {} above {}", ys.size(), package::kMaxRank);
      if (xs.size() > ys.size()) unsupported(n, "{} does not expand to {}", shapeStr(xs), shapeStr(ys));
      xs.insert(xs.begin(), ys.size() - xs.size(), 1);  // Expand broadcasts from the right
      if (xs == ys) return copyLike(n);
      LDesc& d = emit(n, LayerKind::kTile, {in(n, 0)}, outVal(n, n.outputs[0]));
      d.views = {xs, ys};
      return;
    }
    if (op == "InstanceNormalization") {
      const Shape& xs = shapeOf(n, 0);
      if (xs.size() < 2 || xs.size() > package::kMaxRank) unsupported(n, "rank {} (2 to {})", xs.size(), package::kMaxRank);
      std::vector<int> ins = {in(n, 0)};
      for (int i = 1; i <= 2; ++i) {
        if (const Tensor* c = constIn(n, i)) {
          ins.push_back(weightVal(g_.value(n.inputs[static_cast<size_t>(i)]).name, {xs[1]}, floatBytes(*c, true), ElemType::kF32));
        } else {
          ins.push_back(in(n, i));
        }
      }
      emit(n, LayerKind::kInstanceNorm, ins, outVal(n, n.outputs[0]), {package::floatParam(ops::attrFloat(n, "epsilon"))});
      return;
    }
    unsupported(n, "op {} has no package form yet (docs/package-format.md lists the layer kinds)", op);
  }

  /// Sum / Mean / Max / Min of any number of inputs, as the engine computes them: a chain of binary layers
  /// (((a op b) op c) …, each broadcasting), then for Mean one division by the count. One input is a copy.
  void variadic(const ir::Node& n, uint32_t code) {
    const int k = n.numInputs();
    if (k < 1) unsupported(n, "{} without inputs", n.op);
    const Shape& ys = g_.value(n.outputs[0]).type.shape;
    if (ys.size() > package::kMaxRank) unsupported(n, "rank above {}", package::kMaxRank);
    if (k == 1) return copyLike(n);
    int acc = in(n, 0);
    Shape acc_shape = shapeOf(n, 0);
    for (int i = 1; i < k; ++i) {
      Shape s;
      if (!ops::broadcastShapes(acc_shape, shapeOf(n, i), s)) unsupported(n, "inputs do not broadcast");
      const bool last = i == k - 1 && n.op != "Mean";
      int next = last ? outVal(n, n.outputs[0]) : tempVal(fmt::format("{}/partial{}", n.name, i), s);
      emit(n, LayerKind::kBinary, {acc, in(n, i)}, next, {code}).name = fmt::format("{}/{}", n.name, i);
      acc = next;
      acc_shape = s;
    }
    if (n.op == "Mean") {
      Tensor count(DType::kF32, {});
      count.data<float>()[0] = static_cast<float>(k);
      int c = weightVal(n.name + "/count", {}, floatBytes(count, false), ft_);
      emit(n, LayerKind::kBinary, {acc, c}, outVal(n, n.outputs[0]), {binaryCode("Div")})
          .name = n.name + "/divide";
    }
  }
  /// The package code of a binary op (elementwise_ops.def).
  static uint32_t binaryCode(const char* name) {
    const std::vector<std::string>& names = package::binaryOpNames();
    return static_cast<uint32_t>(std::find(names.begin(), names.end(), name) - names.begin());
  }

  /// Reduce*: the axes (an attribute, or from opset 18 — 13 for ReduceSum — a constant input) become one flag per
  /// dim of x; keepdims only shapes the output.
  void reduce(const ir::Node& n, uint32_t code) {
    const Shape& x = shapeOf(n, 0);
    if (x.size() > package::kMaxRank) unsupported(n, "rank {} above {}", x.size(), package::kMaxRank);
    const int64_t rank = static_cast<int64_t>(x.size());
    std::vector<int64_t> axes;
    if (!ops::reduceAxesFromInput(n, g_.opset)) {
      axes = n.attrInts("axes");
    } else if (n.hasInput(1)) {
      const ir::Value& a = g_.value(n.inputs[1]);
      if (!a.isConstant()) unsupported(n, "the axes must be a constant to have a package form");
      axes = a.constant->toInt64();
    }
    std::vector<bool> flags;
    int64_t bad = 0;
    if (!ops::reducedDims(n, axes, rank, flags, bad)) unsupported(n, "axis {} is out of range for rank {}", bad, rank);
    std::vector<uint32_t> p{code};
    for (bool f : flags) p.push_back(f ? 1u : 0u);
    emit(n, LayerKind::kReduce, {in(n, 0)}, outVal(n, n.outputs[0]), p);
  }

  /// Same bytes, another shape: an alias of the input (no descriptor), or a copy where the result is a graph output
  /// (outputs live in data_out). A change of storage type is a cast.
  void copyLike(const ir::Node& n) {
    int x = in(n, 0);
    ir::ValueId outv = n.outputs[0];
    const ir::Value& ov = g_.value(outv);
    ElemType t = storageType(n, ov);
    if (t != vals_[static_cast<size_t>(x)].type) return castTo(n, x, t);
    if (is_output_.count(outv)) {
      emit(n, LayerKind::kCopy, {x}, outVal(n, outv));
      return;
    }
    int root = vals_[static_cast<size_t>(x)].alias >= 0 ? vals_[static_cast<size_t>(x)].alias : x;
    LVal a = vals_[static_cast<size_t>(root)];
    a.name = ov.name;
    a.shape = ov.type.shape;
    a.alias = root;
    a.writer = a.last_reader = -1;
    vals_.push_back(std::move(a));
    of_[outv] = static_cast<int>(vals_.size()) - 1;
    aliased_.push_back(n.name);
  }

  void cast(const ir::Node& n) {
    int x = in(n, 0);
    const ir::Value& yv = g_.value(n.outputs[0]);
    ElemType t = storageType(n, yv);
    // A Cast to float16 inside a float32 package rounds: to float16 and back, or for a model output, to the model's
    // float16 output itself. (In a float16 package every value is already rounded so.)
    if (!yv.exact_type && ft_ == ElemType::kF32 && (yv.type.dtype == DType::kF16 || yv.type.dtype == DType::kBF16)) {
      if (yv.type.dtype == DType::kBF16) unsupported(n, "a cast to bfloat16 has no package form");
      if (is_output_.count(n.outputs[0])) {
        int out = outVal(n, n.outputs[0]);
        vals_[static_cast<size_t>(out)].type = ElemType::kF16;
        emit(n, LayerKind::kCast, {x}, out);
        return;
      }
      int half = tempVal(n.name + "/float16", yv.type.shape);
      vals_[static_cast<size_t>(half)].type = ElemType::kF16;
      emit(n, LayerKind::kCast, {x}, half).name = n.name + "/to_float16";
      emit(n, LayerKind::kCast, {half}, outVal(n, n.outputs[0]));
      return;
    }
    if (t == vals_[static_cast<size_t>(x)].type) return copyLike(n);
    // cast_any_to_fp16 of a uint8 image feeding normalize alone: normalize reads the uint8 image itself (the same
    // bits: the cast is exact).
    if (vals_[static_cast<size_t>(x)].type == ElemType::kU8 && t == ElemType::kF16 && !is_output_.count(n.outputs[0])) {
      auto it = uses_.find(n.outputs[0]);
      if (it != uses_.end() && it->second.size() == 1) {
        const ir::Node& c = g_.node(it->second[0].first);
        if (c.domain == "ai.npuc" && c.op == "Normalize") {
          fused_cast_[n.outputs[0]] = {x, &n};
          return;
        }
      }
    }
    castTo(n, x, t);
  }

  void castTo(const ir::Node& n, int x, ElemType t) {
    ElemType from = vals_[static_cast<size_t>(x)].type;
    bool ok = (from == ElemType::kU8 || from == ElemType::kF16 || from == ElemType::kF32) && (t == ElemType::kF16 || t == ElemType::kF32);
    if (!ok) unsupported(n, "a cast from {} to {} has no package form (uint8, float16 or float32 to float16 or float32)",
                         package::elemName(from), package::elemName(t));
    emit(n, LayerKind::kCast, {x}, outVal(n, n.outputs[0]));
  }

  static uint32_t attrU32(const ir::Node& n, const char* name) { return u32(n.attrInt(name, 0)); }

  /// The pre/post-processing nodes of a -prepost definition (prepost/graph.hpp) on the vector engine.
  void prePost(const ir::Node& n) {
    const std::string& op = n.op;
    if (op == "YuvToRgb") {
      emit(n, LayerKind::kYuvToRgb, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "format"), attrU32(n, "bgr")});
    } else if (op == "ToGray") {
      emit(n, LayerKind::kToGray, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "format")});
    } else if (op == "CropImage") {
      emit(n, LayerKind::kCrop, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "layout"), attrU32(n, "pos_y"), attrU32(n, "pos_x")});
    } else if (op == "ResizeHwc") {
      emit(n, LayerKind::kResizeHwc, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "alg")});
    } else if (op == "Normalize") {
      std::vector<float> add = n.attrFloats("add"), mul = n.attrFloats("mul");
      const Shape& xs = shapeOf(n, 0);
      size_t C = xs.empty() ? 0 : static_cast<size_t>(xs.back());
      if (add.size() != C || mul.size() != C) unsupported(n, "needs {} coefficients per list, has {} and {}", C, add.size(), mul.size());
      std::vector<uint32_t> p = {attrU32(n, "swap_rb")};
      for (float f : add) p.push_back(package::floatParam(f));
      for (float f : mul) p.push_back(package::floatParam(f));
      const ir::Node* fused = nullptr;
      int x;
      if (auto it = fused_cast_.find(n.inputs[0]); it != fused_cast_.end()) {
        x = it->second.first;
        fused = it->second.second;
      } else {
        x = in(n, 0);
      }
      LDesc& d = emit(n, LayerKind::kNormalize, {x}, outVal(n, n.outputs[0]), p);
      if (fused) {
        d.opexp = "Cast+" + d.opexp;
        d.onnx_nodes.insert(d.onnx_nodes.begin(), fused->name);
        fusions_.push_back({n.name,
                            "cast_any_to_fp16 fused into normalize: normalize reads the uint8 image (the same bits; one pass "
                            "instead of two)",
                            {fused->name}});
      }
    } else if (op == "Aipp") {
      // params: dynamic, padding_value (f32 bits), then a static block's bytes as little-endian words.
      bool dynamic = n.attrInt("dynamic", 0) != 0;
      std::vector<uint32_t> p = {dynamic ? 1u : 0u, package::floatParam(n.attrFloat("padding_value", 0.f))};
      std::vector<int> ins = {in(n, 0)};
      if (dynamic) {
        ins.push_back(in(n, 1));
      } else {
        std::vector<int64_t> bytes = n.attrInts("params");
        if (bytes.empty() || bytes.size() % 4) unsupported(n, "a static AIPP block of {} bytes (a multiple of 4 expected)", bytes.size());
        for (size_t i = 0; i < bytes.size(); i += 4) {
          uint32_t w = 0;
          for (size_t k = 0; k < 4; ++k) w |= static_cast<uint32_t>(bytes[i + k] & 0xFF) << (8 * k);
          p.push_back(w);
        }
      }
      emit(n, LayerKind::kAipp, ins, outVal(n, n.outputs[0]), p);
    } else if (op == "PostSoftmax") {
      emit(n, LayerKind::kPostSoftmax, {in(n, 0)}, outVal(n, n.outputs[0]));
    } else if (op == "ArgMinMax") {
      emit(n, LayerKind::kArgMinMax, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "layout"), attrU32(n, "axis"), attrU32(n, "mode")});
    } else {
      unsupported(n, "has no package form yet");
    }
  }

  void unaryOp(const ir::Node& n, const std::string& op, float alpha, float beta) {
    const auto& names = package::unaryOpNames();
    auto it = std::find(names.begin(), names.end(), op);
    if (it == names.end()) unsupported(n, "unary op {} has no package form", op);
    emit(n, LayerKind::kUnary, {in(n, 0)}, outVal(n, n.outputs[0]),
         {static_cast<uint32_t>(it - names.begin()), package::floatParam(alpha), package::floatParam(beta)});
  }

  /// Window value i (0 = H, 1 = W) of a 1-D or 2-D window; a 1-D window has H = one_d.
  static int64_t hw(const std::vector<int64_t>& v, int i, int64_t one_d, bool one) {
    return one ? (i == 0 ? one_d : v[0]) : v[static_cast<size_t>(i)];
  }

  /// NC(W) -> NC1W views for 1-D windows.
  static Shape as4d(Shape s) {
    if (s.size() == 3) s.insert(s.begin() + 2, 1);
    return s;
  }

  void conv(const ir::Node& n) {
    bool tr = n.op == "ConvTranspose";
    const Shape& xs = shapeOf(n, 0);
    if (xs.size() != 4 && xs.size() != 3) unsupported(n, "{}-D convolution has no package form (1-D and 2-D)", xs.size() - 2);
    const Tensor* w = constIn(n, 1);
    if (!w) unsupported(n, "weights must be constants");
    if (n.hasInput(2) && !constIn(n, 2)) unsupported(n, "bias must be a constant");
    Shape wshape = as4d(w->shape());
    std::vector<int64_t> ks(w->shape().begin() + 2, w->shape().end());
    std::vector<int64_t> spatial(xs.begin() + 2, xs.end());
    ops::Window win = tr ? ops::resolveTransposedWindow(n, spatial, ks) : ops::resolveWindow(n, spatial, ks, false);
    auto at = [one = xs.size() == 3](const std::vector<int64_t>& v, int i, int64_t one_d) { return hw(v, i, one_d, one); };
    int64_t g = n.attrInt("group", 1);
    std::vector<uint32_t> p = {u32(g), u32(at(win.kernel, 0, 1)), u32(at(win.kernel, 1, 1)), u32(at(win.stride, 0, 1)),
                               u32(at(win.stride, 1, 1)), u32(at(win.dilation, 0, 1)), u32(at(win.dilation, 1, 1)),
                               u32(at(win.pad_begin, 0, 0)), u32(at(win.pad_begin, 1, 0))};
    int x = in(n, 0);
    int wv = weightVal(g_.value(n.inputs[1]).name, wshape, floatBytes(*w, false), ft_);
    std::vector<int> ins = {x, wv};
    if (const Tensor* b = constIn(n, 2)) ins.push_back(weightVal(g_.value(n.inputs[2]).name, b->shape(), floatBytes(*b, true), ElemType::kF32));
    ir::ValueId outv = n.outputs[0];
    LDesc probe;
    bool epilogue = actFromAttrs(n, probe);
    int out = epilogue ? outVal(n, outv) : tempVal(n.name + "/pre_act", g_.value(outv).type.shape);
    LDesc& d = emit(n, tr ? LayerKind::kConvTranspose : LayerKind::kConv, ins, out, p);
    d.act = probe.act;
    d.act_a = probe.act_a;
    d.act_b = probe.act_b;
    d.views = {as4d(xs), wshape};
    if (ins.size() == 3) d.views.push_back(vals_[static_cast<size_t>(ins[2])].shape);
    d.views.push_back(as4d(g_.value(outv).type.shape));
    if (!epilogue) trailingActivation(n, out, outVal(n, outv));
  }

  void gemm(const ir::Node& n) {
    bool mm = n.op == "MatMul";
    const Shape& as = shapeOf(n, 0);
    const Tensor* w = constIn(n, 1);
    // Anything but (a batch of) matrices times one constant matrix is the matmul kind (attention's products).
    if (mm && (!w || w->rank() != 2 || as.size() < 2)) return matmul(n);
    if (!mm && (!w || w->rank() != 2 || ops::attrInt(n, "transA") || ops::attrFloat(n, "alpha") != 1.0f ||
                (n.hasInput(2) && ops::attrFloat(n, "beta") != 1.0f)))
      return gemmGeneral(n);
    if (!w || w->rank() != 2) unsupported(n, "the second operand must be a constant matrix");
    // A MatMul of a batch of matrices ([..., M, K]) by one constant matrix is one tall product [(... * M), K]: every
    // output element is the same dot product over K, so the bits are the engine's (its paths agree bit for bit).
    const bool tall = mm && as.size() > 2;
    if (as.size() != 2 && !tall) unsupported(n, "the first operand must be a matrix (got rank {})", as.size());
    if (!mm && (ops::attrInt(n, "transA") || ops::attrFloat(n, "alpha") != 1.0f || (n.hasInput(2) && ops::attrFloat(n, "beta") != 1.0f)))
      unsupported(n, "Gemm with transA, alpha != 1 or beta != 1 has no package form");
    bool transB = !mm && ops::attrInt(n, "transB");
    int64_t K = as.back(), N = transB ? w->dim(0) : w->dim(1);
    int64_t rows = 1;  // M of the (tall) product
    for (size_t i = 0; i + 1 < as.size(); ++i) rows *= as[i];
    if ((transB ? w->dim(1) : w->dim(0)) != K) unsupported(n, "operand shapes {} and {} do not multiply", shapeStr(as), shapeStr(w->shape()));
    std::vector<float> wt(static_cast<size_t>(N * K));
    std::vector<double> wd;
    const float* wf = nullptr;
    if (w->dtype() == DType::kF32) wf = w->data<float>();
    else wd = w->toDouble();
    auto wat = [&](int64_t i) { return wf ? wf[i] : static_cast<float>(wd[static_cast<size_t>(i)]); };
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t k = 0; k < K; ++k) wt[static_cast<size_t>(nn * K + k)] = transB ? wat(nn * K + k) : wat(k * N + nn);
    int x = in(n, 0);
    int wv = weightVal(g_.value(n.inputs[1]).name, {N, K}, floatBytes(*w, false, &wt), ft_);
    std::vector<int> ins = {x, wv};
    int c_add = -1;  // a C the engine adds after the product (not an [N] bias): a separate Add
    if (!mm && n.hasInput(2)) {
      const Tensor* c = constIn(n, 2);
      if (!c) unsupported(n, "C must be a constant");
      std::vector<double> cv = c->toDouble();
      // Exactly where the engine starts its accumulators at C: C of shape [N] or [1, N] (per column), or [M, 1]
      // with M = 1 (one value for the row); any other C is added after the product.
      const Shape& csh = c->shape();
      int64_t M = as[0];
      bool col = csh == Shape{N} || csh == Shape{1, N};
      bool row = !col && csh == Shape{M, 1};
      if (row && M != 1) unsupported(n, "C of shape [M, 1] with M > 1 has no package form");
      if (col || row) {
        std::vector<float> bias(static_cast<size_t>(N));
        for (int64_t i = 0; i < N; ++i) bias[static_cast<size_t>(i)] = static_cast<float>(cv[static_cast<size_t>(col ? i : 0)]);
        ins.push_back(weightVal(g_.value(n.inputs[2]).name, {N}, floatBytes(*c, true, &bias), ElemType::kF32));
      } else {
        c_add = in(n, 2);
      }
    }
    ir::ValueId outv = n.outputs[0];
    LDesc probe;
    bool epilogue = actFromAttrs(n, probe);
    const Shape& ys = g_.value(outv).type.shape;
    if (c_add >= 0) {  // y = act(A*B + C): the product, then a broadcasting Add carrying the activation
      int prod = tempVal(n.name + "/product", ys);
      emit(n, LayerKind::kGemm, ins, prod);
      int sum = epilogue ? outVal(n, outv) : tempVal(n.name + "/pre_act", ys);
      LDesc& a = emit(n, LayerKind::kBinary, {prod, c_add}, sum, {0});
      a.name = n.name + "/add_C";
      a.act = probe.act, a.act_a = probe.act_a, a.act_b = probe.act_b;
      if (!epilogue) trailingActivation(n, sum, outVal(n, outv));
      return;
    }
    int out = epilogue ? outVal(n, outv) : tempVal(n.name + "/pre_act", ys);
    LDesc& d = emit(n, LayerKind::kGemm, ins, out);
    if (tall) d.views = {{rows, K}, {N, K}, {rows, N}};
    d.act = probe.act;
    d.act_a = probe.act_a;
    d.act_b = probe.act_b;
    if (!epilogue) trailingActivation(n, out, outVal(n, outv));
  }

  /// Gemm beyond "x times constant weights plus bias": transA, alpha, beta, or B an activation. As the engine
  /// computes it: the product (a matmul layer; transposed operands through transpose layers, a constant B transposed
  /// here), then y * alpha (a binary layer), then + beta * C (C scaled here when constant, by a binary layer when
  /// not), the fused activation on the last layer.
  void gemmGeneral(const ir::Node& n) {
    const Shape &as = shapeOf(n, 0), &bs = shapeOf(n, 1);
    if (as.size() != 2 || bs.size() != 2) unsupported(n, "Gemm operands must be matrices");
    const bool ta = ops::attrInt(n, "transA"), tb = ops::attrInt(n, "transB");
    const float alpha = ops::attrFloat(n, "alpha"), beta = ops::attrFloat(n, "beta");
    const int64_t M = ta ? as[1] : as[0], K = ta ? as[0] : as[1], N = tb ? bs[0] : bs[1];
    auto transposed = [&](int v, const Shape& s, const char* what) {
      int t = tempVal(fmt::format("{}/{}", n.name, what), {s[1], s[0]});
      emit(n, LayerKind::kTranspose, {v}, t, {1u, 0u}).name = fmt::format("{}/{}", n.name, what);
      return t;
    };
    int a = in(n, 0);
    if (ta) a = transposed(a, as, "transA");
    int b;
    if (const Tensor* w = constIn(n, 1); w && tb) {  // a constant B^T: transposed once, here
      std::vector<double> wd = w->toDouble();
      std::vector<float> bt(static_cast<size_t>(K * N));
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) bt[static_cast<size_t>(k * N + j)] = static_cast<float>(wd[static_cast<size_t>(j * K + k)]);
      b = weightVal(g_.value(n.inputs[1]).name + "/transposed", {K, N}, floatBytes(*w, false, &bt), ft_);
    } else {
      b = in(n, 1);
      if (tb) b = transposed(b, bs, "transB");
    }
    const ir::ValueId outv = n.outputs[0];
    const Shape& ys = g_.value(outv).type.shape;
    LDesc probe;
    const bool epilogue = actFromAttrs(n, probe);
    const bool scale = alpha != 1.0f;
    const ir::Value* cv = n.hasInput(2) && beta != 0.0f ? &g_.value(n.inputs[2]) : nullptr;
    // As the engine: "+ C" with C per column ([N], [1, N]) or per row ([M, 1]) starts the sums (a bias).
    uint32_t bias_kind = 0;
    int bias = -1;
    if (cv && alpha == 1.0f && beta == 1.0f) {
      const Shape& cs = cv->type.shape;
      bias_kind = (cs == Shape{N} || cs == Shape{1, N}) && N > 0 ? 1 : cs == Shape{M, 1} && M > 0 ? 2 : 0;
      if (bias_kind) {
        const int64_t len = bias_kind == 1 ? N : M;
        if (cv->isConstant()) {
          bias = weightVal(cv->name, {len}, floatBytes(*cv->constant, true), ElemType::kF32);
        } else {
          bias = in(n, 2);
        }
        cv = nullptr;
      }
    }
    // The layers in order; the last one writes the output and carries the activation.
    int steps = 1 + (scale ? 1 : 0) + (cv ? 1 : 0) + (cv && !cv->isConstant() && beta != 1.0f ? 1 : 0);
    auto next = [&](const char* what) {
      return --steps == 0 && epilogue ? outVal(n, outv) : tempVal(fmt::format("{}/{}", n.name, what), ys);
    };
    auto finish = [&](LDesc& d) {
      if (steps) return;
      d.act = probe.act, d.act_a = probe.act_a, d.act_b = probe.act_b;
      if (!epilogue) trailingActivation(n, d.out, outVal(n, outv));
    };
    int y = next("product");
    std::vector<int> ins = {a, b};
    if (bias >= 0) ins.push_back(bias);
    LDesc& p = emit(n, LayerKind::kMatMul, ins, y, {bias_kind});
    p.views = {{M, K}, {K, N}};
    if (bias >= 0) p.views.push_back({bias_kind == 1 ? N : M});
    p.views.push_back({M, N});
    finish(p);
    if (scale) {
      Tensor t(DType::kF32, {});
      t.data<float>()[0] = alpha;
      int av = weightVal(n.name + "/alpha", {}, floatBytes(t, false), ft_);
      int ya = next("alpha");
      LDesc& d = emit(n, LayerKind::kBinary, {y, av}, ya, {binaryCode("Mul")});
      d.name = n.name + "/alpha";
      y = ya;
      finish(d);
    }
    if (cv) {
      int c;
      if (cv->isConstant()) {  // beta * C, each element one float multiply as in the engine
        std::vector<double> cd = cv->constant->toDouble();
        std::vector<float> sc(cd.size());
        for (size_t i = 0; i < cd.size(); ++i) sc[i] = beta == 1.0f ? static_cast<float>(cd[i]) : beta * static_cast<float>(cd[i]);
        c = weightVal(cv->name + "/scaled", cv->type.shape, floatBytes(*cv->constant, false, &sc), ft_);
      } else {
        c = in(n, 2);
        if (beta != 1.0f) {
          Tensor t(DType::kF32, {});
          t.data<float>()[0] = beta;
          int bv = weightVal(n.name + "/beta", {}, floatBytes(t, false), ft_);
          int cb = tempVal(n.name + "/beta_C", cv->type.shape);
          --steps;
          emit(n, LayerKind::kBinary, {c, bv}, cb, {binaryCode("Mul")}).name = n.name + "/beta";
          c = cb;
        }
      }
      int yc = next("add_C");
      LDesc& d = emit(n, LayerKind::kBinary, {y, c}, yc, {binaryCode("Add")});
      d.name = n.name + "/add_C";
      finish(d);
    }
  }

  /// MatMul of two operands that are not (a batch of matrices) x (one constant matrix): one product per batch, the
  /// batch dims broadcast. A 1-D operand is viewed as a matrix ([1, K] or [K, 1]), as ONNX defines.
  void matmul(const ir::Node& n) {
    Shape sa = shapeOf(n, 0), sb = shapeOf(n, 1);
    if (sa.empty() || sb.empty()) unsupported(n, "MatMul of a scalar");
    if (sa.size() == 1) sa.insert(sa.begin(), 1);
    if (sb.size() == 1) sb.push_back(1);
    Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), yv;
    if (!ops::broadcastShapes(ba, bb, yv)) unsupported(n, "batch dims {} and {} do not broadcast", shapeStr(ba), shapeStr(bb));
    yv.push_back(sa[sa.size() - 2]);
    yv.push_back(sb.back());
    // The references carry every operand at the output's rank (leading 1s): the kernel broadcasts by dims.
    while (sa.size() < yv.size()) sa.insert(sa.begin(), 1);
    while (sb.size() < yv.size()) sb.insert(sb.begin(), 1);
    if (yv.size() > package::kMaxRank) unsupported(n, "rank {} above {}", yv.size(), package::kMaxRank);
    int a = in(n, 0), b = in(n, 1);
    ir::ValueId outv = n.outputs[0];
    LDesc probe;
    bool epilogue = actFromAttrs(n, probe);
    const Shape& ys = g_.value(outv).type.shape;
    int out = epilogue ? outVal(n, outv) : tempVal(n.name + "/pre_act", ys);
    LDesc& d = emit(n, LayerKind::kMatMul, {a, b}, out, {0u});
    d.views = {sa, sb, yv};
    d.act = probe.act;
    d.act_a = probe.act_a;
    d.act_b = probe.act_b;
    if (!epilogue) trailingActivation(n, out, outVal(n, outv));
  }

  /// Gather: the indices are a constant (to the weights, as int64) or a model input of int32 / int64; indices
  /// computed by the model are not (packages carry float activations).
  void gather(const ir::Node& n) {
    const Shape& xs = shapeOf(n, 0);
    const ir::Value& iv = g_.value(n.inputs[1]);
    const Shape& ys = g_.value(n.outputs[0]).type.shape;
    const int64_t rank = static_cast<int64_t>(xs.size());
    int64_t axis = ops::attrInt(n, "axis");
    if (axis < -rank || axis >= rank) unsupported(n, "axis {} is out of range for rank {}", axis, rank);
    if (axis < 0) axis += rank;
    if (xs.size() > package::kMaxRank || ys.size() > package::kMaxRank || iv.type.shape.size() > package::kMaxRank)
      unsupported(n, "rank above {}", package::kMaxRank);
    int x = in(n, 0);
    int idx;
    if (iv.isConstant()) {
      std::vector<int64_t> v = iv.constant->toInt64();
      const int64_t len = xs[static_cast<size_t>(axis)];
      for (int64_t i : v)
        if (i < -len || i >= len) unsupported(n, "index {} is out of range for axis {} of size {}", i, axis, len);
      std::vector<uint8_t> bytes(v.size() * sizeof(int64_t));
      if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
      idx = weightVal(iv.name, iv.type.shape, std::move(bytes), ElemType::kI64);
    } else if (auto it = of_.find(n.inputs[1]); it != of_.end()) {
      idx = it->second;
    } else if (iv.producer == ir::kNoNode && (iv.type.dtype == DType::kI64 || iv.type.dtype == DType::kI32)) {
      LVal l;
      l.name = iv.name;
      l.shape = iv.type.shape;
      l.type = iv.type.dtype;
      l.space = 'i';
      vals_.push_back(l);
      idx = of_[n.inputs[1]] = static_cast<int>(vals_.size()) - 1;
    } else {
      unsupported(n, "indices computed by the model have no package form (a constant or a model input of int32/int64)");
    }
    if (vals_[static_cast<size_t>(idx)].type != DType::kI64 && vals_[static_cast<size_t>(idx)].type != DType::kI32)
      unsupported(n, "indices '{}' are {}, not int32/int64", iv.name, dtypeName(vals_[static_cast<size_t>(idx)].type));
    emit(n, LayerKind::kGather, {x, idx}, outVal(n, n.outputs[0]), {u32(axis)});
  }

  void pool(const ir::Node& n) {
    const Shape& xs = shapeOf(n, 0);
    if (xs.size() != 4 && xs.size() != 3) unsupported(n, "{}-D pooling has no package form (1-D and 2-D)", xs.size() - 2);
    if (n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue) unsupported(n, "the MaxPool indices output has no package form");
    std::vector<int64_t> spatial(xs.begin() + 2, xs.end());
    ops::Window w = ops::resolveWindow(n, spatial, {}, n.attrInt("ceil_mode", 0) != 0);
    auto at = [one = xs.size() == 3](const std::vector<int64_t>& v, int i, int64_t one_d) { return hw(v, i, one_d, one); };
    std::vector<uint32_t> p = {u32(at(w.kernel, 0, 1)),    u32(at(w.kernel, 1, 1)),    u32(at(w.stride, 0, 1)),
                               u32(at(w.stride, 1, 1)),    u32(at(w.dilation, 0, 1)),  u32(at(w.dilation, 1, 1)),
                               u32(at(w.pad_begin, 0, 0)), u32(at(w.pad_begin, 1, 0)), u32(at(w.pad_end, 0, 0)),
                               u32(at(w.pad_end, 1, 0)),   u32(n.attrInt("count_include_pad", 0) != 0),
                               n.op == "MaxPool" ? package::floatParam(n.attrFloat("pad_value", -INFINITY)) : 0u};
    LDesc& d = emit(n, n.op == "MaxPool" ? LayerKind::kMaxPool : LayerKind::kAvgPool, {in(n, 0)}, outVal(n, n.outputs[0]), p);
    d.views = {as4d(xs), as4d(g_.value(n.outputs[0]).type.shape)};
  }

  /// Concat. A descriptor references at most 7 inputs; more become a chain: each concat appends up to 6 inputs to the
  /// previous partial result (concatenation only copies, so the bytes are the same).
  void concat(const ir::Node& n) {
    const int k = n.numInputs(), per = package::kMaxRefs - 1;
    int64_t axis = n.attrInt("axis", 0);
    const Shape& s0 = shapeOf(n, 0);
    int64_t r = static_cast<int64_t>(s0.size());
    if (axis < 0) axis += r;
    std::vector<int> ins;
    for (int i = 0; i < k; ++i) ins.push_back(in(n, i));
    const int y = outVal(n, n.outputs[0]);
    const std::vector<uint32_t> p{static_cast<uint32_t>(axis)};
    int done = std::min(k, per), part = 0;
    std::vector<int> group(ins.begin(), ins.begin() + done);
    Shape acc = s0;
    acc[static_cast<size_t>(axis)] = 0;
    for (int i = 0; i < done; ++i) acc[static_cast<size_t>(axis)] += shapeOf(n, i)[static_cast<size_t>(axis)];
    while (done < k) {
      int t = tempVal(fmt::format("{}/part{}", g_.value(n.outputs[0]).name, ++part), acc);
      vals_[static_cast<size_t>(t)].type = vals_[static_cast<size_t>(y)].type;
      emit(n, LayerKind::kConcat, group, t, p).name = fmt::format("{}/part{}", n.name, part);
      group = {t};
      for (int end = std::min(k, done + per - 1); done < end; ++done) {
        group.push_back(ins[static_cast<size_t>(done)]);
        acc[static_cast<size_t>(axis)] += shapeOf(n, done)[static_cast<size_t>(axis)];
      }
    }
    emit(n, LayerKind::kConcat, group, y, p);
  }

  void softmax(const ir::Node& n) {
    const Shape& s = shapeOf(n, 0);
    int64_t r = static_cast<int64_t>(s.size());
    if (r == 0) unsupported(n, "softmax of a scalar has no package form");
    int64_t axis = n.attrInt("axis", g_.opset < 13 ? 1 : -1);
    if (axis < 0) axis += r;
    uint32_t kind = n.op == "Softmax" ? 0 : n.op == "LogSoftmax" ? 1 : 2;
    Shape view = s;
    if (g_.opset < 13) {  // coerced to 2-D: [prod(dims < axis), prod(dims >= axis)], softmax on axis 1
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= s[static_cast<size_t>(i)];
      view = {outer, inner};
      axis = 1;
    }
    LDesc& d = emit(n, LayerKind::kSoftmax, {in(n, 0)}, outVal(n, n.outputs[0]), {kind, static_cast<uint32_t>(axis)});
    d.views = {view, view};
  }

  void depthSpace(const ir::Node& n) {
    const Shape& s = shapeOf(n, 0);
    int64_t b = n.attrInt("blocksize", 0);
    if (s.size() != 4 || b < 1) unsupported(n, "needs a 4-D input and a blocksize");
    int64_t N = s[0], C = s[1], H = s[2], W = s[3];
    Shape view;
    std::vector<uint32_t> perm;
    if (n.op == "SpaceToDepth") {
      view = {N, C, H / b, b, W / b, b};
      perm = {0, 3, 5, 1, 2, 4};
    } else if (n.attrString("mode", "DCR") == "DCR") {
      view = {N, b, b, C / (b * b), H, W};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      view = {N, C / (b * b), b, b, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    }
    Shape out_view;
    for (uint32_t p : perm) out_view.push_back(view[p]);
    LDesc& d = emit(n, LayerKind::kTranspose, {in(n, 0)}, outVal(n, n.outputs[0]), perm);
    d.views = {view, out_view};
  }

  void focus(const ir::Node& n) {
    const Shape& s = shapeOf(n, 0);
    std::vector<int64_t> off = n.attrInts("offsets");
    // x viewed [N, C, H/2, dy, W/2, dx]; output blocks in the order of 'offsets' (pairs dy, dx).
    std::vector<uint32_t> perm;
    if (off == std::vector<int64_t>{0, 0, 1, 0, 0, 1, 1, 1}) perm = {0, 5, 3, 1, 2, 4};       // block = dx*2 + dy
    else if (off == std::vector<int64_t>{0, 0, 0, 1, 1, 0, 1, 1}) perm = {0, 3, 5, 1, 2, 4};  // block = dy*2 + dx
    else unsupported(n, "Focus with this sub-image order has no package form");
    Shape view = {s[0], s[1], s[2] / 2, 2, s[3] / 2, 2};
    Shape out_view;
    for (uint32_t p : perm) out_view.push_back(view[p]);
    LDesc& d = emit(n, LayerKind::kTranspose, {in(n, 0)}, outVal(n, n.outputs[0]), perm);
    d.views = {view, out_view};
  }

  void pad(const ir::Node& n) {
    std::string mode = n.attrString("mode", "constant");
    if (mode != "constant") unsupported(n, "Pad mode '{}' has no package form (constant)", mode);
    const Shape& s = shapeOf(n, 0);
    std::vector<int64_t> pads;
    float value = 0;
    if (g_.opset < 11) {
      pads = n.attrInts("pads");
      value = n.attrFloat("value", 0.0f);
    } else {
      const Tensor* p = constIn(n, 1);
      if (!p) unsupported(n, "pads must be a constant");
      pads = p->toInt64();
      if (n.hasInput(2)) {
        const Tensor* v = constIn(n, 2);
        if (!v) unsupported(n, "the pad value must be a constant");
        value = scalarOf(v, 0);
      }
      if (n.hasInput(3)) unsupported(n, "Pad with 'axes' has no package form");
    }
    size_t r = s.size();
    if (pads.size() != 2 * r) unsupported(n, "pads has {} values for rank {}", pads.size(), r);
    std::vector<uint32_t> p;
    for (auto v : pads) {
      if (v < 0) unsupported(n, "negative pads (cropping) have no package form");
      p.push_back(u32(v));
    }
    p.push_back(package::floatParam(value));
    emit(n, LayerKind::kPad, {in(n, 0)}, outVal(n, n.outputs[0]), p);
  }

  /// Split: each output a slice of the input along the axis, at the sum of the previous outputs' sizes (the sizes
  /// are the outputs' own dims, as shape inference fixed them from `split` / num_outputs).
  void split(const ir::Node& n) {
    const Shape& s = shapeOf(n, 0);
    const size_t r = s.size();
    if (r > package::kMaxRank) unsupported(n, "rank {} above {}", r, package::kMaxRank);
    int64_t axis = ops::attrInt(n, "axis");
    if (axis < -static_cast<int64_t>(r) || axis >= static_cast<int64_t>(r)) unsupported(n, "axis {} out of range", axis);
    if (axis < 0) axis += static_cast<int64_t>(r);
    int x = in(n, 0);
    int64_t offset = 0;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      ir::ValueId v = n.outputs[k];
      if (v == ir::kNoValue) unsupported(n, "output {} is missing", k);
      const Shape& ys = g_.value(v).type.shape;
      std::vector<uint32_t> p;
      for (size_t i = 0; i < r; ++i) p.push_back(u32(static_cast<int64_t>(i) == axis && ys[i] ? offset : 0));
      for (size_t i = 0; i < r; ++i) p.push_back(1u);
      offset += ys[static_cast<size_t>(axis)];
      if (!uses_.count(v) && !is_output_.count(v)) continue;  // nothing reads it
      emit(n, LayerKind::kSlice, {x}, outVal(n, v), p).name = fmt::format("{}/{}", n.name, k);
    }
  }

  void slice(const ir::Node& n) {
    const Shape& s = shapeOf(n, 0);
    size_t r = s.size();
    std::vector<int64_t> starts, ends, axes, steps;
    if (g_.opset < 10) {
      starts = n.attrInts("starts");
      ends = n.attrInts("ends");
      axes = n.attrInts("axes");
    } else {
      for (int i = 1; i < 5; ++i)
        if (n.hasInput(i) && !constIn(n, i)) unsupported(n, "starts/ends/axes/steps must be constants");
      if (!constIn(n, 1) || !constIn(n, 2)) unsupported(n, "starts and ends must be constants");
      starts = constIn(n, 1)->toInt64();
      ends = constIn(n, 2)->toInt64();
      if (n.hasInput(3)) axes = constIn(n, 3)->toInt64();
      if (n.hasInput(4)) steps = constIn(n, 4)->toInt64();
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    std::vector<int64_t> st(r, 0), sp(r, 1);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(r) : axes[i];
      int64_t dim = s[static_cast<size_t>(a)], step = steps[i], b = starts[i];
      if (b < 0) b += dim;
      b = step > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, dim - 1);
      st[static_cast<size_t>(a)] = b;
      sp[static_cast<size_t>(a)] = step;
    }
    const Shape& ys = g_.value(n.outputs[0]).type.shape;
    std::vector<uint32_t> p;
    for (size_t i = 0; i < r; ++i) p.push_back(u32(ys[i] ? st[i] : 0));
    for (size_t i = 0; i < r; ++i) p.push_back(u32(sp[i]));
    emit(n, LayerKind::kSlice, {in(n, 0)}, outVal(n, n.outputs[0]), p);
  }

  /// Resize / Upsample: the engine's parameters (kernels::ResizeSpec) from the attributes and the constant roi, scales
  /// or sizes, stored in the parameter block; the runtime computes the same taps.
  void resize(const ir::Node& n) {
    const Shape& x = shapeOf(n, 0);
    const Shape& ys = g_.value(n.outputs[0]).type.shape;
    const int64_t rank = static_cast<int64_t>(x.size());
    if (x.size() > package::kMaxRank) unsupported(n, "rank {} above {}", x.size(), package::kMaxRank);
    bool upsample = n.op == "Upsample";
    kernels::ResizeSpec p;
    std::string mode = n.attrString("mode", "nearest");
    if (mode == "nearest") p.interp = kernels::ResizeInterp::kNearest;
    else if (mode == "linear" || (upsample && mode == "bilinear")) p.interp = kernels::ResizeInterp::kLinear;
    else if (mode == "cubic" && !upsample && g_.opset >= 11) p.interp = kernels::ResizeInterp::kCubic;
    else unsupported(n, "resize mode '{}' has no package form", mode);
    auto constant = [&](int i, const char* what) {
      const Tensor* t = constIn(n, i);
      if (!t) unsupported(n, "the {} must be a constant to have a package form", what);
      return t;
    };
    std::vector<double> scales, roi;
    std::vector<int64_t> sizes;
    if (upsample || g_.opset < 11) {
      p.legacy = true;
      if (upsample && n.hasAttr("scales")) {
        for (float f : n.attrFloats("scales")) scales.push_back(f);
      } else {
        scales = constant(1, "scales")->toDouble();
      }
    } else {
      std::string cm = n.attrString("coordinate_transformation_mode", "half_pixel");
      std::string nm = n.attrString("nearest_mode", "round_prefer_floor");
      if (!kernels::resizeCoordFromName(cm, &p.coord)) unsupported(n, "coordinate_transformation_mode '{}' has no package form", cm);
      if (!kernels::resizeNearestFromName(nm, &p.nearest)) unsupported(n, "nearest_mode '{}' has no package form", nm);
      p.cubic_a = n.attrFloat("cubic_coeff_a", -0.75f);
      p.exclude_outside = n.attrInt("exclude_outside", 0) != 0;
      p.extrapolation = n.attrFloat("extrapolation_value", 0.0f);
      if (n.attrInt("antialias", 0) != 0) unsupported(n, "antialias has no package form");
      if (n.hasInput(3)) sizes = constant(3, "sizes")->toInt64();
      if (sizes.empty() && n.hasInput(2)) scales = constant(2, "scales")->toDouble();
      if (n.hasInput(1)) roi = constant(1, "roi")->toDouble();
    }
    std::vector<int64_t> axes = n.attrInts("axes");
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    for (int64_t& a : axes) {
      if (a < -rank || a >= rank) unsupported(n, "axis {} out of range", a);
      if (a < 0) a += rank;
    }
    if ((!sizes.empty() && sizes.size() != axes.size()) || (sizes.empty() && scales.size() != axes.size()) ||
        (!roi.empty() && roi.size() != 2 * axes.size()))
      unsupported(n, "scales / sizes / roi do not match the axes");
    p.scale.assign(x.size(), 1.0);
    p.roi_start.assign(x.size(), 0.0);
    p.roi_end.assign(x.size(), 1.0);
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = static_cast<size_t>(axes[i]);
      int64_t in = x[a];
      if (!sizes.empty()) p.scale[a] = in == 0 || sizes[i] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(in);
      else p.scale[a] = scales[i];
      if (!(p.scale[a] > 0) || !std::isfinite(p.scale[a])) unsupported(n, "scale {} has no package form", p.scale[a]);
      if (!roi.empty()) {
        p.roi_start[a] = roi[i];
        p.roi_end[a] = roi[i + axes.size()];
      }
    }
    if (ys.size() != x.size()) unsupported(n, "output rank differs from the input rank");
    emit(n, LayerKind::kResize, {in(n, 0)}, outVal(n, n.outputs[0]), package::resizeParams(p));
  }

  /// LayerNormalization: scale and bias (constants, numpy-broadcast to the normalised dims) expanded to float32
  /// [inner] in the weight space, as the reference engine expands them.
  void layerNorm(const ir::Node& n) {
    const Shape& x = shapeOf(n, 0);
    const int64_t rank = static_cast<int64_t>(x.size());
    int64_t axis = ops::attrInt(n, "axis");
    if (axis < -rank || axis >= rank) unsupported(n, "axis {} out of range for rank {}", axis, rank);
    if (axis < 0) axis += rank;
    for (size_t k = 1; k < n.outputs.size(); ++k)
      if (n.outputs[k] != ir::kNoValue && uses_.count(n.outputs[k])) unsupported(n, "the Mean / InvStdDev outputs have no package form");
    const Shape norm(x.begin() + axis, x.end());
    int64_t inner = 1;
    for (int64_t d : norm) inner *= d;
    auto expand = [&](int i, const char* what) {
      const Tensor* t = constIn(n, i);
      if (!t) unsupported(n, "the {} must be a constant to have a package form", what);
      std::vector<double> v = t->toDouble();
      const Shape& ts = t->shape();
      if (ts.size() > norm.size()) unsupported(n, "the {} {} does not broadcast to {}", what, shapeStr(ts), shapeStr(norm));
      std::vector<float> out(static_cast<size_t>(inner));
      for (int64_t e = 0; e < inner; ++e) {  // the element of t each normalised position reads (right-aligned)
        int64_t rest = e, src = 0, stride = 1;
        for (size_t d = norm.size(), td = ts.size(); d-- > 0;) {
          int64_t coord = rest % norm[d];
          rest /= norm[d];
          if (td == 0) continue;
          --td;
          if (ts[td] != 1 && ts[td] != norm[d]) unsupported(n, "the {} {} does not broadcast to {}", what, shapeStr(ts), shapeStr(norm));
          src += (ts[td] == 1 ? 0 : coord) * stride;
          stride *= ts[td];
        }
        out[static_cast<size_t>(e)] = static_cast<float>(v[static_cast<size_t>(src)]);
      }
      return weightVal(n.name + "/" + what, {inner}, floatBytes(Tensor(), true, &out), ElemType::kF32);
    };
    std::vector<int> ins{in(n, 0), expand(1, "scale")};
    if (n.hasInput(2)) ins.push_back(expand(2, "bias"));
    emit(n, LayerKind::kLayerNorm, ins, outVal(n, n.outputs[0]),
         {static_cast<uint32_t>(axis), package::floatParam(ops::attrFloat(n, "epsilon"))});
  }

  void batchNorm(const ir::Node& n) {
    for (int i = 1; i < 5; ++i)
      if (!constIn(n, i)) unsupported(n, "scale, bias, mean and variance must be constants");
    if (n.outputs.size() > 1) unsupported(n, "training-mode outputs have no package form");
    std::vector<double> sc = constIn(n, 1)->toDouble(), bi = constIn(n, 2)->toDouble(), me = constIn(n, 3)->toDouble(),
                        va = constIn(n, 4)->toDouble();
    double eps = ops::attrFloat(n, "epsilon");
    std::vector<float> a(sc.size()), b(sc.size());
    for (size_t c = 0; c < sc.size(); ++c) {  // as the reference engine computes them
      double k = sc[c] / std::sqrt(va[c] + eps);
      a[c] = static_cast<float>(k);
      b[c] = static_cast<float>(bi[c] - me[c] * k);
    }
    int64_t C = static_cast<int64_t>(a.size());
    int x = in(n, 0);
    int av = weightVal(n.name + "/scale", {C}, floatBytes(Tensor(), true, &a), ElemType::kF32);
    int bv = weightVal(n.name + "/shift", {C}, floatBytes(Tensor(), true, &b), ElemType::kF32);
    emit(n, LayerKind::kChannelAffine, {x, av, bv}, outVal(n, n.outputs[0]));
  }
};

package::TensorRef makeRef(uint64_t addr, ElemType t, const Shape& s, const std::string& what) {
  if (s.size() > package::kMaxRank)
    fail(ErrorCode::kUnsupported, "value '{}' has rank {}; packages hold tensors of rank {} at most", what, s.size(), package::kMaxRank);
  uint64_t total = package::elemSize(t);
  for (int64_t d : s) {
    if (d < 0 || static_cast<uint64_t>(d) > 0xFFFF'FFFFu) fail(ErrorCode::kUnsupported, "value '{}': dim {} does not fit a package", what, d);
    total *= static_cast<uint64_t>(std::max<int64_t>(d, 1));
    if (total > 0xFFFF'FFFFu) fail(ErrorCode::kUnsupported, "value '{}' ({}) is larger than 4 GiB: no package form", what, shapeStr(s));
  }
  package::TensorRef r;
  r.addr = static_cast<uint32_t>(addr);
  r.type = t;
  r.rank = static_cast<uint8_t>(s.size());
  uint64_t n = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    r.dims[i] = static_cast<uint32_t>(s[i]);
    n *= static_cast<uint64_t>(s[i]);
  }
  r.bytes = static_cast<uint32_t>(n * package::elemSize(t));
  return r;
}

const char* spaceName(char s) {
  switch (s) {
    case 'i': return "data_in";
    case 'o': return "data_out";
    case 'w': return "weight";
    default: return "data";
  }
}

}  // namespace

namespace {
Lowered lowerImpl(const ir::Graph& g, const target::Target& t, const LowerOptions& o, ir::Graph* consume);
}

Lowered lower(const ir::Graph& g, const target::Target& t, const LowerOptions& o) { return lowerImpl(g, t, o, nullptr); }
Lowered lowerConsuming(ir::Graph& g, const target::Target& t, const LowerOptions& o) { return lowerImpl(g, t, o, &g); }

namespace {
Lowered lowerImpl(const ir::Graph& g, const target::Target& t, const LowerOptions& o, ir::Graph* consume) {
  Lowerer L(g, t, consume);
  L.run();
  auto& vals = L.vals_;
  auto& descs = L.descs_;
  if (descs.empty()) fail(ErrorCode::kUnsupported, "the optimized model has no layers to put into a package");
  for (ir::ValueId v : g.outputs()) {
    auto it = L.of_.find(v);
    if (it == L.of_.end() || vals[static_cast<size_t>(it->second)].space != 'o')
      fail(ErrorCode::kUnsupported, "graph output '{}' is not computed by a layer (a constant or a graph input); no package form",
           g.value(v).name);
  }
  for (size_t i = 0; i < descs.size(); ++i) {
    for (int v : descs[i].ins) vals[static_cast<size_t>(v)].last_reader = static_cast<int>(i);
    vals[static_cast<size_t>(descs[i].out)].writer = static_cast<int>(i);
  }
  for (auto& v : vals)
    for (auto& d : v.shape)
      if (d < 0) fail(ErrorCode::kUnsupported, "value '{}' has a dynamic shape; packages need static shapes (--input-shape)", v.name);
  // Place activations.
  Lowered res;
  auto bytesOf = [&](const LVal& v) {
    uint64_t n = 1;
    for (auto d : v.shape) n *= static_cast<uint64_t>(d);
    return n * package::elemSize(v.type);
  };
  // An alias keeps its root alive as long as it is read.
  for (auto& v : vals)
    if (v.alias >= 0) {
      LVal& r = vals[static_cast<size_t>(v.alias)];
      r.last_reader = std::max(r.last_reader, v.last_reader);
    }
  uint64_t in_bytes = 0, out_bytes = 0;
  for (ir::ValueId v : g.inputs())
    if (auto it = L.of_.find(v); it != L.of_.end()) {
      LVal& l = vals[static_cast<size_t>(it->second)];
      l.offset = in_bytes;
      in_bytes = alignUp(in_bytes + bytesOf(l), 64);
    }
  for (ir::ValueId v : g.outputs()) {
    LVal& l = vals[static_cast<size_t>(L.of_.at(v))];
    l.offset = out_bytes;
    out_bytes = alignUp(out_bytes + bytesOf(l), 64);
  }
  std::vector<plan::Buffer> bufs;
  std::vector<int> buf_val;
  for (size_t i = 0; i < descs.size(); ++i) {
    LVal& l = vals[static_cast<size_t>(descs[i].out)];
    if (l.space != 'd') continue;
    bufs.push_back({l.name, bytesOf(l), static_cast<int>(i), std::max(static_cast<int>(i), l.last_reader)});
    buf_val.push_back(descs[i].out);
  }
  plan::MemoryPlan mp = o.reuse_memory ? plan::planReuse(bufs) : plan::planSequential(bufs);
  for (size_t i = 0; i < bufs.size(); ++i) vals[static_cast<size_t>(buf_val[i])].offset = mp.offsets[i];
  for (auto& v : vals)
    if (v.alias >= 0 && v.space != 'w') v.offset = vals[static_cast<size_t>(v.alias)].offset;
  res.data_bytes = mp.total;
  res.data_lower_bound = mp.lower_bound;
  // Weights.
  uint64_t wbytes = L.weights_.size();
  for (auto& v : vals)
    if (v.space == 'w') v.offset = L.blobs_[static_cast<size_t>(v.weight_blob)].offset;
  res.fusions = L.fusions_;
  res.aliased = L.aliased_;
  // Parameters.
  std::vector<uint64_t> param_off;
  uint64_t pbytes = 0;
  for (auto& d : descs) {
    param_off.push_back(pbytes);
    pbytes += d.params.size() * 4;
  }
  // Engines and libraries.
  size_t nmac = 0, nvec = 0;
  std::vector<package::Library> libs;
  std::map<LayerKind, uint16_t> lib_of;
  for (auto& d : descs) {
    if (d.engine == Engine::kMac) ++nmac;
    else {
      ++nvec;
      lib_of[d.kind] = 0;
    }
  }
  uint16_t next_lib = 1;
  for (auto& [k, id] : lib_of) {
    id = next_lib++;
    libs.push_back({id, 1, std::string("npuc_") + package::layerKindName(k)});
  }
  // Address map.
  std::map<std::string, uint64_t> needed = {
      {"data_in", in_bytes},
      {"data", mp.total},
      {"data_out", out_bytes},
      {"work", 0},
      {"weight", wbytes},
      {"drp_config", 32 + libs.size() * package::kLibraryRecordSize},
      {"drp_param", pbytes},
      {"desc_aimac", package::kDescHeaderSize + nmac * package::kDescriptorSize},
      {"desc_drp", package::kDescHeaderSize + nvec * package::kDescriptorSize}};
  plan::AddrMapRules rules = plan::AddrMapRules::forTarget(t);
  plan::AddrMapDef def = o.addr_def ? *o.addr_def : plan::defaultAddrMapDef(rules.base);
  res.map = plan::layoutAddrMap(def, needed, rules, o.intm_yaml_name);
  auto base = [&](const char* space) { return res.map.find(space)->addr; };

  package::Package& p = res.pkg;
  p.prefix = o.prefix;
  p.target = t.name;
  p.numerics = t.numerics;
  for (auto& s : res.map.subspaces) {
    package::SubSpace ss{s.name, s.addr, s.size, {}};
    for (auto& e : s.elements) ss.elements.push_back({e.name, e.addr, e.size});
    p.address_map.push_back(std::move(ss));
  }
  auto refOf = [&](int vi, const Shape* view) {
    const LVal& v = vals[static_cast<size_t>(vi)];
    return makeRef(base(spaceName(v.space)) + v.offset, v.type, view ? *view : v.shape, v.name);
  };
  for (ir::ValueId v : g.inputs())
    if (auto it = L.of_.find(v); it != L.of_.end()) {
      auto im = o.input_images.find(g.value(v).name);
      p.inputs.push_back({g.value(v).name, refOf(it->second, nullptr), im == o.input_images.end() ? package::ImageInfo{} : im->second});
    }
  for (ir::ValueId v : g.outputs()) p.outputs.push_back({g.value(v).name, refOf(L.of_.at(v), nullptr), {}});
  p.weights = std::move(L.weights_);
  p.params.reserve(pbytes);
  for (auto& d : descs)
    for (uint32_t w : d.params)
      for (int k = 0; k < 4; ++k) p.params.push_back(static_cast<uint8_t>(w >> (8 * k)));
  p.libraries = libs;
  // Descriptors with waits: a descriptor waits for the latest earlier descriptor of the other engine whose
  // output it reads (RAW), whose input it overwrites (WAR) or whose output it overwrites (WAW) — unless an
  // earlier wait of its engine already covers it.
  std::vector<package::Descriptor> all(descs.size());
  for (size_t i = 0; i < descs.size(); ++i) {
    LDesc& ld = descs[i];
    package::Descriptor& d = all[i];
    d.seq = static_cast<uint32_t>(i);
    d.kind = ld.kind;
    d.act = ld.act;
    d.act_a = ld.act_a;
    d.act_b = ld.act_b;
    d.n_in = static_cast<uint8_t>(ld.ins.size());
    d.n_out = 1;
    if (!ld.params.empty()) {
      d.param_addr = static_cast<uint32_t>(base("drp_param") + param_off[i]);
      d.param_size = static_cast<uint32_t>(ld.params.size() * 4);
    }
    for (size_t k = 0; k < ld.ins.size(); ++k)
      d.refs[k] = refOf(ld.ins[k], ld.views.empty() ? nullptr : &ld.views[k]);
    d.refs[ld.ins.size()] = refOf(ld.out, ld.views.empty() ? nullptr : &ld.views.back());
    if (ld.engine == Engine::kVector) d.lib = lib_of.at(ld.kind);
  }
  // Per engine, the last descriptor that wrote / read each byte (interval maps: O(n log n) over the program).
  package::IntervalMap<int64_t> last_write[2], last_read[2];
  auto span = [](const package::TensorRef& r) { return std::pair<uint64_t, uint64_t>{r.addr, uint64_t(r.addr) + r.bytes}; };
  int64_t covered[2] = {-1, -1};
  for (size_t i = 0; i < all.size(); ++i) {
    package::Descriptor& d = all[i];
    int e = static_cast<int>(descs[i].engine), other = 1 - e;
    int64_t need = -1;
    auto latest = [&](const package::IntervalMap<int64_t>& m, const package::TensorRef& r) {
      auto [lo, hi] = span(r);
      m.forEachOverlap(lo, hi, [&](uint64_t, uint64_t, int64_t seq) { need = std::max(need, seq); });
    };
    latest(last_write[other], d.out(0));  // WAW
    latest(last_read[other], d.out(0));   // WAR
    for (int k = 0; k < d.n_in; ++k) latest(last_write[other], d.in(k));  // RAW
    for (int k = 0; k < d.n_in; ++k) {
      auto [lo, hi] = span(d.in(k));
      last_read[e].assign(lo, hi, static_cast<int64_t>(i));
    }
    auto [olo, ohi] = span(d.out(0));
    last_write[e].assign(olo, ohi, static_cast<int64_t>(i));
    if (need > covered[e]) {
      d.wait = static_cast<uint32_t>(need);
      covered[e] = need;
      all[static_cast<size_t>(need)].flags |= package::kFlagInterrupt;
    }
  }
  all.back().flags |= package::kFlagInterrupt;
  for (size_t i = 0; i < all.size(); ++i) {
    bool mac = descs[i].engine == Engine::kMac;
    auto& stream = mac ? p.mac : p.vec;
    package::LayerInfo li;
    li.seq = static_cast<uint32_t>(i);
    li.engine = mac ? Engine::kMac : Engine::kVector;
    li.index = static_cast<uint32_t>(stream.size());
    li.name = descs[i].name;
    li.opexp = descs[i].opexp;
    li.onnx_nodes = descs[i].onnx_nodes;
    li.output = vals[static_cast<size_t>(descs[i].out)].name;
    stream.push_back(all[i]);
    p.layers.push_back(std::move(li));
  }
  // Placements for the tbl_addr files.
  for (auto& v : vals) {
    if (v.space == 'w' || v.alias >= 0) continue;
    if (v.space == 'd' && v.writer < 0) continue;
    res.placements.push_back({spaceName(v.space), v.name, base(spaceName(v.space)) + v.offset, bytesOf(v)});
  }
  for (auto& b : L.blobs_) res.placements.push_back({"weight", b.name, base("weight") + b.offset, b.size});
  for (size_t i = 0; i < descs.size(); ++i)
    if (!descs[i].params.empty())
      res.placements.push_back({"drp_param", descs[i].name, base("drp_param") + param_off[i], descs[i].params.size() * 4});
  res.placements.push_back({"drp_config", "library table", base("drp_config"), needed["drp_config"]});
  res.placements.push_back({"desc_aimac", "aimac_desc.bin", base("desc_aimac"), needed["desc_aimac"]});
  res.placements.push_back({"desc_drp", "drp_desc.bin", base("desc_drp"), needed["desc_drp"]});
  std::stable_sort(res.placements.begin(), res.placements.end(), [](const Placement& a, const Placement& b) { return a.addr < b.addr; });
  return res;
}
}  // namespace

std::vector<PackageGap> packageGaps(const ir::Graph& g, const target::Target& t) {
  std::vector<PackageGap> gaps;
  if (!numericsHasPackages(t.numerics)) return gaps;
  std::set<ir::ValueId> used;  // values something reads (or the model outputs)
  for (ir::NodeId id : g.order())
    for (ir::ValueId v : g.node(id).inputs) used.insert(v);
  used.insert(g.outputs().begin(), g.outputs().end());
  std::map<std::string, std::string> cache;  // signature -> reason ("" when the node lowers)
  int index = 0;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    // The signature: everything the lowering of a lone node can depend on.
    std::string sig = n.domain + "." + n.op + "|";
    for (auto& [k, a] : n.attrs) {
      sig += k + "=";
      if (auto v = a.get<int64_t>()) sig += std::to_string(*v);
      else if (auto f = a.get<float>()) sig += fmt::format("{}", *f);
      else if (auto str = a.get<std::string>()) sig += *str;
      else if (auto l = a.get<std::vector<int64_t>>()) sig += fmt::format("{}", fmt::join(*l, ","));
      else if (auto fl = a.get<std::vector<float>>()) sig += fmt::format("{}", fmt::join(*fl, ","));
      else sig += "?" + n.name;  // tensors and string lists: not shared
      sig += ";";
    }
    auto typeSig = [&](ir::ValueId v) {
      if (v == ir::kNoValue) return std::string("-");
      const ir::Value& val = g.value(v);
      std::string ts = val.type.str() + (val.exact_type ? "!" : "") + (used.count(v) ? "u" : "");
      if (val.isConstant()) {
        const Tensor& c = *val.constant;
        ts += c.numel() <= 64 ? fmt::format("={}", fmt::join(c.toDouble(), ",")) : "=const" + std::to_string(v);
      }
      return ts;
    };
    for (ir::ValueId v : n.inputs) sig += typeSig(v) + ",";
    sig += "->";
    for (ir::ValueId v : n.outputs) sig += typeSig(v) + ",";
    auto it = cache.find(sig);
    if (it == cache.end()) {
      ir::Graph one;
      one.opset = g.opset;
      std::map<ir::ValueId, ir::ValueId> copy;
      auto valueOf = [&](ir::ValueId v, bool output) -> ir::ValueId {
        if (v == ir::kNoValue) return ir::kNoValue;
        if (auto c = copy.find(v); c != copy.end()) return c->second;
        const ir::Value& src = g.value(v);
        ir::Value& dst = !output && src.isConstant() ? one.addConstant(src.name, *src.constant) : one.addValue(src.name, src.type);
        dst.exact_type = src.exact_type;
        if (!output && !src.isConstant()) one.inputs().push_back(dst.id);
        return copy[v] = dst.id;
      };
      std::vector<ir::ValueId> ins, outs;
      for (ir::ValueId v : n.inputs) ins.push_back(valueOf(v, false));
      for (ir::ValueId v : n.outputs) outs.push_back(valueOf(v, true));
      one.addNode(n.op, n.name, ins, outs, n.domain).attrs = n.attrs;
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (n.outputs[k] != ir::kNoValue && used.count(n.outputs[k])) one.outputs().push_back(outs[k]);
      std::string reason;
      try {
        if (!one.outputs().empty()) lower(one, t, LowerOptions{});
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kUnsupported) reason = e.message();
      }
      it = cache.emplace(sig, reason).first;
    }
    if (!it->second.empty()) {
      std::string reason = it->second, label = n.label() + ": ";
      if (reason.compare(0, label.size(), label) == 0) reason = reason.substr(label.size());
      gaps.push_back({index, reason, ""});
    }
    ++index;
  }
  for (ir::ValueId v : g.outputs())
    if (std::string why = Lowerer::directOutputGap(g, v); !why.empty()) gaps.push_back({-1, why, g.value(v).name});
  return gaps;
}

std::string tblAddrText(const Lowered& l, const std::string& space) {
  std::string s = fmt::format("# {} — {}: name, address, size (bytes, hex)\n", space == "merge" ? "all element spaces" : space,
                              "npuc address table");
  for (auto& p : l.placements)
    if (space == "merge" || p.space == space)
      s += fmt::format("{:<40s} {} {:#x}{}\n", p.name, plan::hexGrouped(p.addr), p.size, space == "merge" ? " " + p.space : "");
  return s;
}

std::string ioListText(const Lowered& l, bool inputs) {
  std::string s;
  for (auto& t : inputs ? l.pkg.inputs : l.pkg.outputs) {
    // NCHW: channel = dim 1, height = dim 2, width = dim 3 (missing dims are 1).
    auto dim = [&](int i) { return i < t.ref.rank ? t.ref.dims[static_cast<size_t>(i)] : 1u; };
    uint32_t c = t.ref.rank >= 2 ? dim(1) : dim(0), h = t.ref.rank >= 3 ? dim(2) : 1, w = t.ref.rank >= 4 ? dim(3) : 1;
    if (t.ref.rank == 2) c = dim(1);
    s += fmt::format("{}_node_name: {}\n         Address: {:#x}\n         Channel: {}\n         Width  : {}\n         Height : {}\n\n",
                     inputs ? "Input" : "Output", t.name, t.ref.addr, c, w, h);
  }
  return s;
}

}  // namespace npuc::codegen
