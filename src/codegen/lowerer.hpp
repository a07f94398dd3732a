// The lowering's builder (private to src/codegen/): the values, weights and descriptors a model becomes, and the
// per-op-family lowerings that fill them. lower.cpp drives it (node order, outputs, placement, the package);
// lower_<family>.cpp hold the ops of one family each, mirroring engine/ops_<family>.cpp, and register them by
// (domain, op) in a table (register*Lowerings). docs/adding-an-op.md says where a new op goes.
#pragma once

#include "codegen/lower.hpp"

#include "ops/custom.hpp"
#include "ops/registry.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace npuc::codegen::detail {


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
  int alias = -1;        // >= 0: the same bytes as that value, another shape (a Reshape, Identity, same-type Cast),
                        // or a slab of it (a Concat's input written in place: alias_offset bytes in)
  uint64_t alias_offset = 0;
  bool channel_last = false;  // its layers see `shape` [N, C, S…]; memory holds [N, S…, C] (package::RefLayout)
  std::optional<ir::Quantization> quant;  // int8 codes of a float tensor (int8-affine; int8-pow2 with scale 0: per frame)
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
  std::vector<int> more_outs;  // a custom layer of several outputs: outputs 1, 2, … (lower_custom.cpp)
  bool dynamic = false;        // package::kFlagDynamic: ins and outputs end with their extents (Lowerer::makeDynamic)
  std::string name, opexp;
  std::vector<std::string> onnx_nodes;
  std::optional<package::CustomLayer> custom;  // custom layers (lower_custom.cpp)
  // A control layer (if, loop, scan; lower_control.cpp): how many descriptors after it are its regions, the values it
  // writes through its moves besides its outputs (placed with the others), and its parameter words that hold a value's
  // address (word index, value), written once the values are placed (lower.cpp).
  int region = 0;
  std::vector<int> owned;
  std::vector<std::pair<size_t, int>> addr_words;
};

/// The ops whose layers take dynamic tensors (package::layerTakesDynamic: transpose, gather_nd, gather, top_k, concat,
/// the element-wise kinds; and tile, for ConstantOfShape writing one). Lowering checks each layer's kind.
inline bool readsDynamic(const ir::Node& n) {
  static const std::set<std::string> ops = {
      "Transpose", "GatherND", "Gather", "TopK", "Concat",  // indexing and movement
      "Cast", "Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal", "Floor",
      "Ceil", "Round", "Sigmoid", "Tanh", "Relu", "Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual", "Not",
      "And", "Or", "Xor",  // element-wise: unary, binary, cast, typed_unary, typed_binary layers
      "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Slice", "Split",  // views (reshape layers) and slices
      "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceMean", "NonMaxSuppression", "If"};
  return n.domain.empty() && ops.count(n.op) > 0;
}

/// Dynamic tensors (lower_dynamic.cpp): a copy of g in which NonZero's output, and what the ops reading such tensors
/// compute from it, are typed at their capacities and marked `bounded`; nullptr when g has no NonZero of a static input.
std::unique_ptr<ir::Graph> withCapacities(const ir::Graph& g);

/// A value's bytes in the package (its shape at its element type).
inline uint64_t bytesOf(const LVal& v) {
  uint64_t n = 1;
  for (auto d : v.shape) n *= static_cast<uint64_t>(d);
  return n * package::elemSize(v.type);
}

struct Blob {
  std::string name;
  uint64_t offset = 0, size = 0;  // in the weight image
};

inline uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

inline uint32_t u32(int64_t v) { return static_cast<uint32_t>(static_cast<int32_t>(v)); }

class Lowerer;
/// A lowering of one op: a member of Lowerer taking the node, or a function of its family's file taking the Lowerer
/// (the helpers a lowering uses — in, intIn, outVal, emit, shapeOf, constIn, unsupported — are public for it), so a
/// new op's lowering is one function and one registration line in that file.
using LowerFn = void (Lowerer::*)(const ir::Node&);
using LowerFreeFn = void (*)(Lowerer&, const ir::Node&);
struct Lowering {
  LowerFn member = nullptr;
  LowerFreeFn fn = nullptr;
  /// The op takes typed values (bool, the integers: docs/package-format.md); others refuse them before lowering.
  bool typed = false;
  Lowering& operator=(LowerFn m) { return member = m, *this; }
  Lowering& operator=(LowerFreeFn f) { return fn = f, *this; }
};
/// The lowerings by (domain, op name); "" is the ONNX domain.
using LowerTable = std::map<std::pair<std::string, std::string>, Lowering>;
/// Marks ONNX ops of the table as taking typed values (in any order with their registration).
inline void takeTypedValues(LowerTable& t, std::initializer_list<const char*> ops) {
  for (const char* op : ops) t[{"", op}].typed = true;
}
/// Shape of a dynamic tensor: a copy of its extent (lower_dynamic.cpp).
void shapeOfDynamic(Lowerer& L, const ir::Node& n);
void registerNnLowerings(LowerTable& t);
void registerElementwiseLowerings(LowerTable& t);
void registerTensorLowerings(LowerTable& t);
void registerReduceLowerings(LowerTable& t);
void registerPrepostLowerings(LowerTable& t);
void registerQuantLowerings(LowerTable& t);
void registerIndexingLowerings(LowerTable& t);
void registerControlLowerings(LowerTable& t);

class Lowerer {
 public:
  Lowerer(const ir::Graph& g, const target::Target& t, ir::Graph* consume) : g_(g), t_(t), consume_(consume) {
    ft_ = numericsTraits(t.numerics).float_type;
    if (!numericsTraits(t.numerics).packages)
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
    lowerNodes();
    for (ir::ValueId v : g_.outputs()) directOutput(v);
    for (ir::ValueId v : g_.outputs()) halfOutput(v);
    for (ir::ValueId v : g_.outputs()) singleOutput(v);
    for (const std::string& name : half_layers_)  // (a name the quantizer took but no node has: never silently float32)
      if (!half_lowered_.count(name))
        fail(ErrorCode::kInvalidArgument, "layer '{}' is to be kept in float16, but the optimized model has no such layer (the "
             "names are the summary's: PREFIX_summary.csv)", name);
  }

  /// Every node of the graph, in order.
  void lowerNodes() {
    uses_ = g_.uses();
    for (ir::ValueId v : g_.outputs()) is_output_[v] = true;
    for (ir::NodeId id : g_.order()) {
      if (skip_.count(id)) continue;
      lowerNode(g_.node(id));
      if (consume_) release(g_.node(id));
    }
  }

  /// Control flow (lower_control.cpp): body `attr` of n lowered right after the descriptors emitted so far, as a
  /// region: formal input i is the value formal[i], each capture the value n reads for it. Returns the value of each
  /// body output, each written by a layer of the region and no two alike (a copy layer where the body passes a value
  /// through or gives one twice), so a control layer's moves never read what another of its moves writes.
  std::vector<int> lowerBody(const ir::Node& n, const std::string& attr, const std::vector<int>& formal);
  /// (the body's side of lowerBody: its outputs' values, the region's layers from first_desc)
  std::vector<int> bodyResults(size_t first_desc);
  /// The space a graph output is stored in: 'o' (data_out) for the model, 'd' for a body's (lowerBody).
  char out_space_ = 'o';

  /// A float16 model output of a float32 package is rounded to float16 as it is stored (a cast layer after the
  /// layer computing it in float32), so the package's outputs have the model's types.
  void halfOutput(ir::ValueId v) {
    const ir::Value& val = g_.value(v);
    auto it = of_.find(v);
    if (ft_ != ElemType::kF32 || val.exact_type || val.type.dtype != DType::kF16 || it == of_.end()) return;
    const LVal& computed = vals_[static_cast<size_t>(it->second)];
    if (computed.type != ElemType::kF32 || computed.space != 'o') return;
    castOutput(it->second, ElemType::kF16);
  }
  /// Output value `slot` (space 'o') stored as `to`: the computed value moves to 'd' (its name + "/" + its type) and a
  /// cast layer writes the output under the computed value's name.
  void castOutput(int& slot, ElemType to) {
    LVal& computed = vals_[static_cast<size_t>(slot)];
    const std::string name = computed.name;
    computed.space = 'd';
    computed.name += "/" + std::string(package::elemName(computed.type));
    const int out = newVal(name, computed.shape, to, 'o');
    emitFor(LayerKind::kCast, slot, out, name + "/to_" + std::string(package::elemName(to)), "Cast");
    slot = out;
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
        src = rawWeightVal(val.name + "/value", c);
      }
    } else {
      auto it = of_.find(v);
      src = it != of_.end() ? it->second : -1;
      if (src < 0) src = of_[v] = newVal(val.name, val.type.shape, ft_, 'i');  // an input nothing else reads
    }
    const int out = newVal(val.name, vals_[static_cast<size_t>(src)].shape, vals_[static_cast<size_t>(src)].type, 'o');
    emitFor(LayerKind::kCopy, src, out, val.name + "/copy", val.isConstant() ? "Constant" : "Identity");
    of_[v] = out;
  }

  /// Output v of n is the constant c, known at translate time though n's inputs are not (a Dropout's mask, an
  /// EyeLike): c in the weights (float32 in the package's float type, other types as they are), copied into place.
  void constantOutput(const ir::Node& n, ir::ValueId v, const Tensor& c) {
    const ir::Value& val = g_.value(v);
    const int src = c.dtype() == DType::kF32 ? weightVal(val.name + "/value", c.shape(), floatBytes(c, false), ft_)
                                       : rawWeightVal(val.name + "/value", c);
    LDesc& d = emitFor(LayerKind::kCopy, src, outVal(n, v), n.name, n.op);
    d.onnx_nodes = {n.name};
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
  int pow2_slots_ = 0;  // int8-pow2: one past the largest slot a layer writes
  std::vector<Blob> blobs_;
  std::vector<uint8_t> weights_;  // the weight space image, 64-byte aligned entries
  std::map<ir::ValueId, int> of_;
  std::map<int, int> extent_of_;  // a dynamic tensor's value -> its extent's (int64 [rank]: its dims at run time)
  std::map<int, int> dims_of_;    // a static value read by a dynamic layer -> the weight holding its dims
  /// The extent of value `v` for a dynamic layer: a dynamic tensor's own, or a weight holding a static value's dims
  /// (a package input that is `bounded` — check's lone-node graphs — gets an input of its own).
  int extentOf(int v, bool bounded, const Shape* view = nullptr);
  /// The one layer lowered for `n` (from descs_[first]) made dynamic (package::kFlagDynamic): an extent after each
  /// input and each output.
  void makeDynamic(const ir::Node& n, size_t first);
  /// Whether n reads a dynamic tensor (a value withCapacities marked bounded).
  bool readsBounded(const ir::Node& n) const {
    return std::any_of(n.inputs.begin(), n.inputs.end(), [&](ir::ValueId v) { return v != ir::kNoValue && g_.value(v).bounded; });
  }
  std::map<ir::ValueId, bool> is_output_;
  ir::UseMap uses_;
  std::map<ir::NodeId, bool> skip_;
  std::map<ir::ValueId, std::pair<int, const ir::Node*>> fused_cast_;  // cast output -> (uint8 source, the Cast)
  std::vector<Fusion> fusions_;
  std::vector<std::string> aliased_;  // nodes that became aliases (no descriptor)

 // The lowerings' toolkit (members and the families' functions use it).
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
    // int8-affine: the int8 side of QuantizeLinear / DequantizeLinear (docs/numerics.md) is stored as int8.
    if (v.type.dtype == DType::kI8 && numericsTraits(t_.numerics).affine_codes) return ElemType::kI8;
    // int8-pow2: codes, signed (int8) or unsigned (uint8).
    if ((v.type.dtype == DType::kI8 || v.type.dtype == DType::kU8) && numericsTraits(t_.numerics).pow2_codes) return v.type.dtype;
    if (isTypedValue(v) && package::isPackageType(v.type.dtype)) return v.type.dtype;  // bool and the integers
    if (!isFloat(v.type.dtype) || v.type.dtype == DType::kF64)
      unsupported(n, "value '{}' is {}; packages hold float32 / float16 activations, bool and the integer types",
                  v.name, dtypeName(v.type.dtype));
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
      if (n) std::memcpy(out.data(), src, n * 4);  // (an empty constant: an If's branch giving no value)
    } else {
      out.resize(n * 2);
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = floatToHalf(src[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
    }
    return out;
  }

  /// A constant in the weight space as it is: its own element type and bytes.
  int rawWeightVal(const std::string& name, const Tensor& c) {
    std::vector<uint8_t> bytes(c.nbytes());
    if (!bytes.empty()) std::memcpy(bytes.data(), c.raw(), bytes.size());
    return weightVal(name, c.shape(), std::move(bytes), c.dtype());
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

  /// The LVal of a node input: an activation already produced, a graph input, or a constant (to the weights); at the
  /// width of the layer reading it (mixed precision: atLayerWidth).
  int in(const ir::Node& n, int i) {
    if (!n.hasInput(i)) unsupported(n, "input {} is missing", i);
    ir::ValueId v = n.inputs[static_cast<size_t>(i)];
    const ir::Value& val = g_.value(v);
    if (half_node_ && val.isConstant() && isFloat(val.type.dtype) && !isTypedValue(val)) {  // its own float16 copy
      auto h = half_consts_.find(v);
      if (h != half_consts_.end()) return h->second;
      return half_consts_[v] = weightVal(val.name + "/float16", val.type.shape, floatBytes(*val.constant, false), ft_);
    }
    auto it = of_.find(v);
    if (it != of_.end()) return atLayerWidth(n, it->second);
    return atLayerWidth(n, inValue(n, v));
  }

  // --- mixed precision (an int8 package's layers kept at float16: LowerOptions::half_layers) ---------------------
  /// Node names lowered in float16 (their float operands, weights and results; biases stay float32 as in fp16
  /// packages); half_node_ while one is lowered (ft_ is then float16).
  std::set<std::string> half_layers_;
  Lowerer& keepAtFloat16(const std::set<std::string>& layers) {
    if (!layers.empty() && numericsTraits(t_.numerics).activation_bytes != 1)
      fail(ErrorCode::kInvalidArgument, "layers kept at float16 belong to int8 packages; target '{}' has {} numerics", t_.name,
           numericsName(t_.numerics));
    half_layers_ = layers;
    return *this;
  }
  bool half_node_ = false;
  std::set<std::string> half_lowered_;  // the half layers lowered so far
  std::map<ir::ValueId, int> half_consts_;  // float constants of float16 layers, in float16
  std::map<int, int> converted_;            // value -> its copy at the other float width (a cast layer wrote it)
  /// Value `id` as the layer being lowered reads it: a float16 layer reads float32 activations through a cast to
  /// float16, any other layer reads a float16 layer's result through a cast back to float32 (the int8 conversions,
  /// quantize and dequantize, are float32 layers). Each conversion is one cast layer, shared by every reader.
  int atLayerWidth(const ir::Node& n, int id) {
    const LVal& v = vals_[static_cast<size_t>(id)];
    if (half_layers_.empty() || v.space == 'w') return id;
    const bool to_half = half_node_ && v.type == ElemType::kF32;
    const bool to_single = !half_node_ && v.type == ElemType::kF16 && half_written_.count(id);
    if (!to_half && !to_single) return id;
    auto c = converted_.find(id);
    if (c != converted_.end()) return c->second;
    if (extent_of_.count(id)) unsupported(n, "a layer kept at another float width reading a tensor whose shape the data decide");
    const ElemType t = to_half ? ElemType::kF16 : ElemType::kF32;
    const std::string name = v.name + (to_half ? "/to_float16" : "/to_float32");
    const int out = newVal(name, v.shape, t, 'd');
    emitFor(LayerKind::kCast, id, out, name, "Cast").onnx_nodes = {n.name};
    return converted_[id] = out;
  }
  std::set<int> half_written_;  // values a float16 layer wrote
  /// A model output a float16 layer computed is stored in the model's float32 (a cast after it).
  void singleOutput(ir::ValueId v) {
    auto it = of_.find(v);
    if (it == of_.end() || !half_written_.count(it->second)) return;
    if (vals_[static_cast<size_t>(it->second)].space == 'o') castOutput(it->second, ElemType::kF32);
  }

  /// (in: the first reader of a value of no LVal yet — a constant or a graph input)
  int inValue(const ir::Node& n, ir::ValueId v) {
    const ir::Value& val = g_.value(v);
    if (val.isConstant() && typed_ && isTypedValue(val)) {  // an integer / bool / float64 operand, as it is
      const Tensor& c = *val.constant;
      if (!package::isPackageType(c.dtype())) unsupported(n, "constant '{}' is {}: no package form", val.name, dtypeName(c.dtype()));
      return of_[v] = rawWeightVal(val.name, c);
    }
    if (val.isConstant() && !typed_ && isTypedValue(val))  // an integer operand of a float layer
      unsupported(n, "op {} on {} values has no package form", n.op, dtypeName(val.type.dtype));
    ElemType type = storageType(n, val);
    if (val.isConstant()) {
      int id = weightVal(val.name, val.type.shape, floatBytes(*val.constant, false), ft_);
      of_[v] = id;
      return id;
    }
    if (val.producer != ir::kNoNode) unsupported(n, "input '{}' has not been computed yet (internal ordering error)", val.name);
    if (half_node_ && !val.exact_type && type == ElemType::kF16) type = ElemType::kF32;  // (a model input: the model's type)
    of_[v] = newVal(val.name, val.type.shape, type, 'i');
    return of_[v];
  }

  /// The graph output that `v` only feeds through a same-shape, same-type copy (an Identity naming a post-processing
  /// dest, a no-op Reshape): the producer then writes the output itself and the copy takes no layer.
  const ir::Node* copyToOutput(const ir::Node& n, ir::ValueId v) const {
    if (is_output_.count(v)) return nullptr;
    auto it = uses_.find(v);
    if (it == uses_.end() || it->second.size() != 1) return nullptr;
    const ir::Node& c = g_.node(it->second[0].first);
    if (!isViewOp(c) || c.outputs.size() != 1 || !is_output_.count(c.outputs[0])) return nullptr;
    const ir::Value &a = g_.value(v), &b = g_.value(c.outputs[0]);
    if (a.type.shape != b.type.shape || storageType(n, a) != storageType(c, b)) return nullptr;
    if (a.bounded) return nullptr;  // (a dynamic tensor's view: equal capacities, other run dims — its reshape layer)
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
    of_[v] = newVal(val.name, val.type.shape, storageType(n, val), is_output_.count(v) ? out_space_ : 'd');
    if (half_node_ && vals_[static_cast<size_t>(of_[v])].type == ElemType::kF16) half_written_.insert(of_[v]);
    if (val.quant && (val.type.dtype == DType::kI8 || val.type.dtype == DType::kU8)) vals_[static_cast<size_t>(of_[v])].quant = val.quant;
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
      const target::OpSupport* s = t_.supportOf(n);
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

  /// A new value of the package (space 'd' data, 'i' data_in, 'o' data_out); its index.
  int newVal(const std::string& name, const Shape& s, ElemType type, char space) {
    LVal l;
    l.name = name;
    l.shape = s;
    l.type = type;
    l.space = space;
    vals_.push_back(std::move(l));
    return static_cast<int>(vals_.size()) - 1;
  }
  int tempVal(const std::string& name, const Shape& s) { return newVal(name, s, ft_, 'd'); }
  /// A descriptor no node stands for (a model output's copy or rounding), on its kind's engine.
  LDesc& emitFor(LayerKind k, int in, int out, const std::string& name, const std::string& opexp) {
    LDesc d;
    d.kind = k;
    d.engine = package::layerEngine(k);
    d.ins = {in};
    d.out = out;
    d.name = name;
    d.opexp = opexp;
    descs_.push_back(std::move(d));
    return descs_.back();
  }


  // --- nodes --------------------------------------------------------------------------------------------

  /// One node's layers: the lowering its (domain, op) is registered with (lower_<family>.cpp), or an error.
  void lowerNode(const ir::Node& n);

  // --- the op families (lower_<family>.cpp, mirroring engine/ops_<family>.cpp) -------------------------
  // Each takes the node and emits its layers; registered by (domain, op) in its family's register*Lowerings.
  void globalPool(const ir::Node& n);
  void binaryNode(const ir::Node& n);
  void sumMean(const ir::Node& n);
  void clipNode(const ir::Node& n);
  void eyeLike(const ir::Node& n);
  void rangeNode(const ir::Node& n);  // lower_tensor.cpp
  void unaryNode(const ir::Node& n);
  void npucUnary(const ir::Node& n);
  void copyNode(const ir::Node& n);
  void transposeNode(const ir::Node& n);
  void lrn(const ir::Node& n);
  void reduceNode(const ir::Node& n);
  /// A registered custom op (plugin): one custom layer (lower_custom.cpp).
  void customNode(const ir::Node& n, const plugin::CustomOp& op);
  void tileNode(const ir::Node& n);
  void instanceNorm(const ir::Node& n);
  void detectionOutput(const ir::Node& n);
  void whereNode(const ir::Node& n);
  /// Typed values (bool, integers; docs/package-format.md): comparisons, logic, integer arithmetic, Mod, BitShift
  /// (typed_binary), Not / IsNaN / IsInf and the integer Abs, Neg, Sign, Relu, Ceil, Floor (typed_unary), ArgMax /
  /// ArgMin (arg_reduce, lower_reduce.cpp).
  void typedBinaryNode(const ir::Node& n);
  void typedUnaryNode(const ir::Node& n);
  void argReduce(const ir::Node& n);
  void cumSumNode(const ir::Node& n);  // lower_reduce.cpp
  void windowNode(const ir::Node& n);  // lower_reduce.cpp
  void dftNode(const ir::Node& n);  // lower_reduce.cpp (the signal kinds, beside window)
  int64_t sizeInput(const ir::Node& n, int i, int64_t inferred, std::vector<int>& ins);
  void stftNode(const ir::Node& n);  // lower_reduce.cpp
  void melNode(const ir::Node& n);  // lower_reduce.cpp
  void triluNode(const ir::Node& n);   // lower_tensor.cpp
  /// A value stored in its own type — bool, an integer type, float64 — (not a float32 / float16 activation, a pre/post
  /// value, or int8 codes).
  bool isTypedValue(const ir::Value& v) const {
    const DType t = v.type.dtype;
    if (v.exact_type || (isFloat(t) && t != DType::kF64)) return false;  // float64 runs in the typed layers, as it is
    if (t == DType::kI8 && numericsTraits(t_.numerics).affine_codes) return false;
    if ((t == DType::kI8 || t == DType::kU8) && numericsTraits(t_.numerics).pow2_codes) return false;
    return true;
  }
  /// True while lowering a node that reads or writes typed values: its non-float constants keep their type.
  bool typed_ = false;
  /// The integer layers of affine codes belong to the packages of families that hold them (NumericsTraits).
  void requireAffineCodes(const ir::Node& n, std::string_view form) const;
  void quantizeNode(const ir::Node& n);  // lower_quant.cpp
  void qconvNode(const ir::Node& n);
  void qaddNode(const ir::Node& n);
  void qmatmulNode(const ir::Node& n);
  void qglobalAvgPoolNode(const ir::Node& n);
  void qavgPoolNode(const ir::Node& n);
  void pow2Node(const ir::Node& n);  // lower_quant.cpp: the int8-pow2 ops (P2Quantize, P2Dequantize, P2Conv, P2Add, P2Concat, P2AvgPool, P2GlobalAvgPool)
  void einsum(const ir::Node& n);


  /// Sum / Mean / Max / Min of any number of inputs, as the engine computes them: a chain of binary layers
  /// (((a op b) op c) …, each broadcasting), then for Mean one division by the count. One input is a copy.
  void variadic(const ir::Node& n, uint32_t code);
  /// The package code of a binary op (elementwise_ops.def).
  static uint32_t binaryCode(const char* name) {
    const std::vector<std::string>& names = package::binaryOpNames();
    return static_cast<uint32_t>(std::find(names.begin(), names.end(), name) - names.begin());
  }

  /// Reduce*: the axes (an attribute, or from opset 18 — 13 for ReduceSum — a constant input) become one flag per
  /// dim of x; keepdims only shapes the output.
  void reduce(const ir::Node& n, uint32_t code);

  /// Same bytes, another shape: an alias of the input (no descriptor), or a copy where the result is a graph output
  /// (outputs live in data_out). A change of storage type is a cast.
  void copyLike(const ir::Node& n);

  void cast(const ir::Node& n);

  void castTo(const ir::Node& n, int x, ElemType t);

  static uint32_t attrU32(const ir::Node& n, const char* name) { return u32(n.attrInt(name, 0)); }

  /// The pre/post-processing nodes of a -prepost definition (prepost/graph.hpp) on the vector engine.
  void prePost(const ir::Node& n);

  void unaryOp(const ir::Node& n, const std::string& op, float alpha, float beta);

  /// Window value i (0 = H, 1 = W) of a 1-D or 2-D window; a 1-D window has H = one_d.
  static int64_t hw(const std::vector<int64_t>& v, int i, int64_t one_d, bool one);

  /// NC(W) -> NC1W views for 1-D windows.
  static Shape as4d(Shape s);

  void conv(const ir::Node& n);

  void gemm(const ir::Node& n);

  /// Gemm beyond "x times constant weights plus bias": transA, alpha, beta, or B an activation. As the engine
  /// computes it: the product (a matmul layer; transposed operands through transpose layers, a constant B transposed
  /// here), then y * alpha (a binary layer), then + beta * C (C scaled here when constant, by a binary layer when
  /// not), the fused activation on the last layer.
  void gemmGeneral(const ir::Node& n);

  /// MatMul of two operands that are not (a batch of matrices) x (one constant matrix): one product per batch, the
  /// batch dims broadcast. A 1-D operand is viewed as a matrix ([1, K] or [K, 1]), as ONNX defines.
  void matmul(const ir::Node& n);

  /// Gather: a gather layer; the indices as intIn takes them.
  void gather(const ir::Node& n);
  /// Input i of n in its own element type, whatever node it is read by: a constant to the weights as it is (an integer
  /// or bool constant is not a float weight), a model input, or a value the model computes.
  int typedIn(const ir::Node& n, int i) {
    const bool was = typed_;
    typed_ = true;
    const int v = in(n, i);
    typed_ = was;
    return v;
  }
  /// Input i of n as int32 / int64 values (indices, a k or an axis read at run time): typedIn, the type checked.
  int intIn(const ir::Node& n, int i);
  // lower_indexing.cpp: GatherElements, ScatterElements / Scatter, GatherND, ScatterND, TopK.
  void gatherElements(const ir::Node& n);  // and ScatterElements / Scatter
  void gatherNd(const ir::Node& n);
  void scatterNd(const ir::Node& n);
  void topK(const ir::Node& n);
  void oneHot(const ir::Node& n);
  void constantOfShape(const ir::Node& n);  // lower_tensor.cpp
  void compressNode(const ir::Node& n);
  void gridSample(const ir::Node& n);
  void roiAlign(const ir::Node& n);
  void nms(const ir::Node& n);  // lower_indexing.cpp
  std::vector<uint32_t> viewWords(const ir::Node& n);  // lower_tensor.cpp
  void dynamicSlice(const ir::Node& n, ir::ValueId v, const std::vector<std::array<int64_t, 4>>& dims, const std::string& name);  // lower_tensor.cpp
  void sliceDynamic(const ir::Node& n, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                    std::vector<int64_t> axes, const std::vector<int64_t>& steps);  // lower_tensor.cpp
  void nonZero(const ir::Node& n);  // lower_indexing.cpp: a dynamic tensor (its extent in extent_of_)

  void pool(const ir::Node& n);
  /// A max_pool / avg_pool layer of a pooling node's window (MaxPool / AveragePool attributes) over `inputs` (x, then the
  /// int8 form's table).
  LDesc& poolLayer(const ir::Node& n, std::vector<int> inputs);

  /// Concat. A descriptor references at most 7 inputs; more become a chain: each concat appends up to 6 inputs to the
  /// previous partial result (concatenation only copies, so the bytes are the same).
  void concat(const ir::Node& n);

  void softmax(const ir::Node& n);

  void depthSpace(const ir::Node& n);

  void focus(const ir::Node& n);

  void pad(const ir::Node& n);

  /// Split: each output a slice of the input along the axis, at the sum of the previous outputs' sizes (the sizes
  /// are the outputs' own dims, as shape inference fixed them from `split` / num_outputs).
  void split(const ir::Node& n);

  void slice(const ir::Node& n);

  /// Resize / Upsample: the engine's parameters (kernels::ResizeSpec) from the attributes and the constant roi, scales
  /// or sizes, stored in the parameter block; the runtime computes the same taps.
  void resize(const ir::Node& n);
  /// Resize's / Upsample's specification from the node (its attributes and constant inputs; `upsample`: Upsample's
  /// legacy meaning); whether the sizes or scales are computed by the model (then read by the layer when it runs).
  kernels::ResizeSpec resizeSpec(const ir::Node& n, bool upsample, bool* sizes_computed, bool* scales_computed);

  /// LayerNormalization: scale and bias (constants, numpy-broadcast to the normalised dims) expanded to float32
  /// [inner] in the weight space, as the reference engine expands them.
  void layerNorm(const ir::Node& n);

  void batchNorm(const ir::Node& n);
  void recurrent(const ir::Node& n);
  void qrecurrent(const ir::Node& n);
};

}  // namespace npuc::codegen::detail
