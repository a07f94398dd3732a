// The op registry: one OpSchema per operator (arity, shape/type inference, MAC count, one-line doc).
//
// Shape functions are written as if every input were known. When an input's shape or a constant operand is
// not known (static inference before the model is fully resolved), the accessor throws UnknownInput, which
// inferNode() catches and reports as "outputs unknown". At run time the engine calls the same functions with
// every input present, so one shape function serves static planning and execution.
#pragma once

#include "ir/graph.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace npuc::kernels {
struct NmsParams;  // kernels/detection.hpp
struct SsdParams;
}

namespace npuc::ops {

/// Thrown by InferContext accessors when something the shape function needs is not known yet.
struct UnknownInput {};

class InferContext {
 public:
  InferContext(const ir::Node& node, int opset, std::vector<ir::Type> in_types, std::vector<const Tensor*> in_values);

  const ir::Node& node() const { return node_; }
  int opset() const { return opset_; }
  /// Number of inputs present (trailing omitted optional inputs excluded).
  int numInputs() const;
  bool hasInput(int i) const;
  DType inputDType(int i) const;
  /// Fully static shape of input i, else throws UnknownInput.
  const Shape& inputShape(int i) const;
  int inputRank(int i) const { return static_cast<int>(inputShape(i).size()); }
  /// Value of input i when it is a constant (or, at run time, always); else throws UnknownInput.
  const Tensor& inputValue(int i) const;
  /// Value of an integer input as int64s (shape operands, axes, …).
  std::vector<int64_t> inputInts(int i) const { return inputValue(i).toInt64(); }
  /// What is known of input i, never throwing: its type as far as known (Type{} when absent), its value or nullptr.
  /// For shape functions that use what is known and leave the rest open (If, Loop, Scan).
  ir::Type knownType(int i) const;
  const Tensor* knownValue(int i) const;

  void setOutput(int i, DType dtype, Shape shape);
  /// An output known only in part (control flow: a Loop's carried value whose shape changes between iterations):
  /// dims may be -1, the rank unknown. At run time the kernel gives the actual tensor.
  void setOutputType(int i, ir::Type t);
  const std::vector<ir::Type>& outputs() const { return out_; }

  /// Throws kInvalidInput with the node's label in front.
  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> f, Args&&... a) const {
    fail(ErrorCode::kInvalidInput, "{}: {}", node_.label(), fmt::format(f, std::forward<Args>(a)...));
  }
  template <typename... Args>
  [[noreturn]] void unsupported(fmt::format_string<Args...> f, Args&&... a) const {
    fail(ErrorCode::kUnsupported, "{}: {}", node_.label(), fmt::format(f, std::forward<Args>(a)...));
  }

 private:
  const ir::Node& node_;
  int opset_;
  std::vector<ir::Type> in_;
  std::vector<const Tensor*> vals_;
  std::vector<ir::Type> out_;
};

using InferFn = std::function<void(InferContext&)>;
using MacsFn = std::function<int64_t(const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out)>;

struct OpSchema {
  std::string name;
  std::string domain;  // "" = ai.onnx, "ai.npuc" = npuc fused ops
  int min_inputs = 1;
  int max_inputs = 1;  // -1: variadic
  int min_outputs = 1;
  int max_outputs = 1;
  InferFn infer;
  MacsFn macs;  // null: not a MAC op
  std::string doc;
  /// Attributes with a default value (ONNX's): declared once here, read with ops::attrFloat / attrInt.
  std::map<std::string, ir::Attr> defaults;
  OpSchema& withDefault(const std::string& attr, ir::Attr value) {
    defaults[attr] = std::move(value);
    return *this;
  }
};

/// An ai.onnx schema: name, input count range (max -1 = variadic), doc, shape function, most outputs.
OpSchema makeSchema(const char* name, int min_in, int max_in, const char* doc, InferFn infer, int max_out = 1);

class Registry {
 public:
  void add(OpSchema s);
  const OpSchema* find(std::string_view domain, std::string_view name) const;
  std::vector<const OpSchema*> all() const;

 private:
  std::map<std::pair<std::string, std::string>, OpSchema, std::less<>> ops_;
};

/// The registry with every built-in op (built on first use).
const Registry& registry();
/// The schema of (domain, op): a built-in op, else a registered custom op (plugin, docs/custom-ops.md), else nullptr.
const OpSchema* findSchema(std::string_view domain, std::string_view name);
/// Schema for a node, or throws kUnsupported "unknown op".
const OpSchema& schemaFor(const ir::Node& n);
/// An attribute of a node, or the default its schema declares (kInternal when the schema declares none: every
/// attribute read through these has its default in one place).
float attrFloat(const ir::Node& n, const std::string& name);
int64_t attrInt(const ir::Node& n, const std::string& name);

/// Reduce* nodes: whether the axes are input 1 (from opset 18; ReduceSum from 13) rather than the 'axes' attribute.
bool reduceAxesFromInput(const ir::Node& n, int opset);
/// The dims a Reduce* node reduces, one flag per dim of its rank-`rank` input, from its axes (the attribute or input
/// 1, normalised): no axes reduce every dim, unless noop_with_empty_axes. False, with `bad_axis` the first axis out
/// of range, when there is one (the caller reports it). Shape inference, the engine and the lowering all use this.
bool reducedDims(const ir::Node& n, const std::vector<int64_t>& axes, int64_t rank, std::vector<bool>& reduced,
                 int64_t& bad_axis);

/// Clip's bounds (lower, upper) as every part of npuc reads them: the 'min' / 'max' attributes before opset 11, the
/// scalar constant inputs 1 and 2 from it (any numeric type, converted to float); an absent bound is float's
/// lowest / largest value (ONNX's default: infinities are clipped too). nullopt when a bound is not a constant.
std::optional<std::pair<float, float>> clipBounds(const ir::Graph& g, const ir::Node& clip);

/// Infers output types of `n` from its inputs' types and constant values. Returns std::nullopt when some input
/// is not known yet. Throws kInvalidInput when the inputs are inconsistent.
std::optional<std::vector<ir::Type>> inferNode(const ir::Graph& g, const ir::Node& n);
/// As above with explicit input types and values (the engine calls this with the run-time tensors).
std::optional<std::vector<ir::Type>> inferNode(const ir::Node& n, int opset, std::vector<ir::Type> in_types,
                                               std::vector<const Tensor*> in_values);

/// Infers one node and records its output types (checking them against declared static types).
/// Returns true when a type changed.
bool inferNodeTypes(ir::Graph& g, ir::NodeId id);
/// Runs inferNodeTypes over the graph in order. Returns true when a type changed.
bool inferShapes(ir::Graph& g);

/// Multiply-accumulate count of a node (0 for non-MAC ops or unknown shapes).
int64_t nodeMacs(const ir::Graph& g, const ir::Node& n);

// Registration, one function per op family (called once by registry()).
void registerElementwiseOps(Registry& r);
void registerTensorOps(Registry& r);
void registerNnOps(Registry& r);
void registerReduceOps(Registry& r);
void registerIndexingOps(Registry& r);
void registerLossOps(Registry& r);  // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void registerRecurrentOps(Registry& r);  // RNN, GRU, LSTM
void registerDetectionOps(Registry& r);  // NonMaxSuppression
void registerControlFlowOps(Registry& r);  // If, Loop, Scan (control_flow.cpp)
void registerSignalOps(Registry& r);  // DFT, STFT, the windows, MelWeightMatrix
/// NonMaxSuppression's parameters from its node and inputs (checked): the shape function's and the engine's.
kernels::NmsParams nmsParams(InferContext& c);
/// The shape MaxUnpool's indices count in (MaxPool's input): [N, C, unpooled spatial dims from kernel_shape, strides
/// and pads], or y's dims where the attributes do not give them. The engine's and the lowering's.
Shape maxUnpoolPooledShape(const ir::Node& n, const Shape& x, const Shape& y);
/// ai.npuc.DetectionOutput's (Caffe SSD) parameters from its node and inputs (checked).
kernels::SsdParams ssdParams(InferContext& c);
void registerQuantOps(Registry& r);
void registerQuantNpucOps(Registry& r);  // ai.npuc QConv
void registerNpucOps(Registry& r);  // after the ONNX families: it derives schemas from them

namespace registry_detail {
/// The ai.onnx schema of `op` registered so far in `r` (for deriving ai.npuc variants).
const OpSchema* onnxSchema(const Registry& r, const char* op);
/// Concat's output shape over the node's inputs along attribute `axis` (ranks equal, dims equal off the axis; errors
/// name the input), element types unchecked: ONNX Concat's and int8-pow2's P2Concat (inputs of either code type).
Shape concatShape(InferContext& c);
}  // namespace registry_detail

}  // namespace npuc::ops
