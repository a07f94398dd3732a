// The TensorFlow importer: its state while it maps a frozen graph (each TensorFlow tensor's IR value and layout, the
// values known at import time, the graph being built) and the helpers every op's mapping uses.
//
// Layout: TensorFlow's activations are channel-last (NHWC); the IR and every npuc kernel are channels-first. A
// rank-4 tensor may be held either way (channel_last::Builder, shared with the TensorFlow Lite importer): ops that care (convolutions, pooling, batch norm, resizing) take
// and give the channels-first form, ops that do not (element-wise ops, Concat, Pad, Mean, Softmax, slices) work on
// whichever form their input has with their axes mapped, and ops whose meaning is tied to the element order
// (Reshape, MatMul, Transpose, Pack, shrinking slices) take the TensorFlow form. A conversion is made once per tensor
// and form (the Builder's cached Transpose), so a channel-last network keeps one Transpose at its input and one at
// each rank-4 output. Values computed from constants and shapes only (Shape, StridedSlice of a
// shape, Pack, …) are evaluated here, so Reshape targets, paddings and axes are known when they are read.
// Internal to src/frontend/tf: import.cpp reads the file and walks the graph, ops_*.cpp map each op type.
#pragma once

#include "tf_graph.pb.h"

#include "frontend/channel_last/channel_last.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "frontend/tf/tf_io.hpp"
#include "ir/graph.hpp"
#include "plugin/plugin.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace npuc::tf_io {

/// Sizes beyond these are no real network's and would overflow products of dims.
constexpr int64_t kMaxDim = int64_t{1} << 31;
using channel_last::kMaxElements;
/// The saturated product of dims, and host tensors permuted (channel_last.hpp).
using channel_last::permuted;
using channel_last::product;
/// Values computed at import (shape arithmetic, constants filled from a short list) stay below this many elements.
constexpr int64_t kMaxHostElements = int64_t{1} << 24;

/// The axis of the channels-first form that holds TensorFlow's axis a of a rank-4 tensor, and the reverse.
constexpr std::array<int64_t, 4> kTfToCf = {0, 2, 3, 1};
constexpr std::array<int64_t, 4> kCfToTf = {0, 3, 1, 2};



/// A TensorFlow tensor (one output of a node) as the importer holds it.
struct Val {
  DType dtype = DType::kF32;   // TensorFlow's element type (integers of any width held as int64 when known here)
  Shape shape;                 // TensorFlow's shape, in the model's layout
  std::optional<Tensor> host;  // the value, when known at import time (TensorFlow layout; integers as int64)
  std::string key;             // else: its name in the channel_last::Builder, which holds its IR value and form
  ir::ValueId tf_const = ir::kNoValue, cf_const = ir::kNoValue;  // a host value's constants, made once
};

/// A slice along every input axis (TensorFlow's StridedSlice canonicalised), and the shape it finally takes.
struct SliceSpec {
  std::vector<int64_t> begin, end, step, count;  // per input axis; end as ONNX's Slice reads it
  Shape out;                                     // after shrinking and new axes
  bool reshapes = false;                         // axes are shrunk or added
};

/// The custom op registered under this name without a domain (a TensorFlow node names none), or nullptr.
const plugin::CustomOp* customOpNamed(const std::string& op);

class Importer {
 public:
  Importer(const tf::GraphDef& g, std::string file, const onnx_io::ImportOptions& opts) : gd_(g), file_(std::move(file)), opts_(opts) {}
  std::unique_ptr<ir::Graph> run();

  using Fn = void (Importer::*)(const tf::NodeDef&);
  static const std::map<std::string, Fn>& table();

 private:
  // --- the graph walk (import.cpp) ---
  void indexNodes();
  std::vector<int> outputNodes() const;
  std::vector<int> executionOrder(const std::vector<int>& outputs);
  void convert(const tf::NodeDef& n);
  void finishOutputs(const std::vector<int>& outputs);

 public:
  // --- values (values.cpp) ---
  static std::string tensorName(const std::string& node, int k) { return k == 0 ? node : node + ":" + std::to_string(k); }
  int numInputs(const tf::NodeDef& n) const { return static_cast<int>(ins_.at(cur_).size()); }
  Val& in(const tf::NodeDef& n, int i);
  void expectInputs(const tf::NodeDef& n, int lo, int hi) const;
  ir::ValueId asTf(Val& x);
  ir::ValueId asCf(Val& x);
  ir::ValueId asLayout(Val& x, bool cf) { return cf ? asCf(x) : asTf(x); }
  /// Whether the IR holds x (rank 4) channels-first, and the value it holds (x as it is, either form).
  bool isCf(const Val& x) const { return !x.host && cl_->form(x.key) == channel_last::Form::kChannelsFirst; }
  ir::ValueId held(Val& x) { return isCf(x) ? cl_->channelsFirst(x.key) : asTf(x); }
  /// An operand broadcast against a channels-first rank-4 tensor: TensorFlow aligns trailing axes, so a lower-rank
  /// operand is taken as rank 4 (leading 1s) and permuted.
  ir::ValueId alignCf(Val& x);
  /// A value of IR shape `from` permuted by `perm`: a Transpose, or a Reshape where only axes of size 1 move.
  ir::ValueId permute(ir::ValueId v, const Shape& from, const std::vector<int64_t>& perm, const std::string& what);
  /// x (TensorFlow's form) transposed by perm: a constant when x is known here (weights), else a Transpose.
  ir::ValueId transposed(Val& x, const std::vector<int64_t>& perm, const std::string& what);
  /// Output k of the current node: the IR value v, channels-first or not.
  void setOut(int k, ir::ValueId v, bool cf, DType dtype = DType::kF32);
  /// Output k of the current node known here.
  void setHost(int k, Tensor t, DType dtype);
  /// Output 0 of the current node is input i (Identity, a Cast to its own type): one value under two names.
  void alias(const tf::NodeDef& n, int i);
  /// An output whose IR axes hold TensorFlow axes `tf_axes` (in IR order) of the result: channels-first when they
  /// are (0, 3, 1, 2) of a rank-4 result, TensorFlow's order when increasing, else transposed to it.
  void setOutAxes(int k, ir::ValueId v, const std::vector<int64_t>& tf_axes, DType dtype = DType::kF32);

  // --- nodes ---
  ir::Node& node(const std::string& op, std::vector<ir::ValueId> ins, std::vector<ir::ValueId> outs,
                 std::map<std::string, ir::Attr> attrs = {}, const std::string& suffix = "");
  /// A node of one output, a new value named after the current node (and `suffix`).
  ir::ValueId emit(const std::string& op, std::vector<ir::ValueId> ins, std::map<std::string, ir::Attr> attrs = {},
                   const std::string& suffix = "");
  ir::ValueId constant(const std::string& what, Tensor t);
  ir::ValueId ints(const std::string& what, const std::vector<int64_t>& v);
  const Shape& irShape(ir::ValueId v) const;

  // --- attributes ---
  const tf::AttrValue* attr(const tf::NodeDef& n, const std::string& name) const;
  int64_t attrInt(const tf::NodeDef& n, const std::string& name, std::optional<int64_t> def = std::nullopt) const;
  float attrFloat(const tf::NodeDef& n, const std::string& name, std::optional<float> def = std::nullopt) const;
  bool attrBool(const tf::NodeDef& n, const std::string& name, std::optional<bool> def = std::nullopt) const;
  std::string attrStr(const tf::NodeDef& n, const std::string& name, std::optional<std::string> def = std::nullopt) const;
  std::vector<std::string> attrStrs(const tf::NodeDef& n, const std::string& name) const;
  std::vector<int64_t> attrInts(const tf::NodeDef& n, const std::string& name, std::optional<std::vector<int64_t>> def = std::nullopt) const;
  tf::DataType attrType(const tf::NodeDef& n, const std::string& name, std::optional<tf::DataType> def = std::nullopt) const;
  /// data_format: true for NHWC (the default), false for NCHW; anything else is refused.
  bool channelLast(const tf::NodeDef& n) const;
  /// Input i's value, which must be known at import time (`what` names it in the message).
  const Tensor& hostInput(const tf::NodeDef& n, int i, const char* what);
  std::vector<int64_t> hostInts(const tf::NodeDef& n, int i, const char* what);
  /// A TensorProto as a tensor (floats as float32, integers as int64); `field` names it in messages.
  static Tensor decodeTensor(const tf::TensorProto& p, DType* dtype, const std::string& field);
  static Shape shapeOf(const tf::TensorShapeProto& s, bool* unknown_rank);
  static int64_t axisOf(int64_t a, size_t rank, const char* field);

  // --- the ops (ops_nn.cpp, ops_math.cpp, ops_shape.cpp) ---
  void placeholder(const tf::NodeDef& n);
  void constOp(const tf::NodeDef& n);
  void identity(const tf::NodeDef& n);
  void conv2d(const tf::NodeDef& n);
  /// The Conv of a Conv2D / DepthwiseConv2dNative (or its grappler-fused form), channels-first when NHWC.
  ir::ValueId convolution(const tf::NodeDef& n, bool depthwise);
  /// The Gemm of a MatMul (or _FusedMatMul): inputs 0 and 1.
  ir::ValueId matrixProduct(const tf::NodeDef& n);
  /// An activation op (Relu, Relu6, LeakyRelu with alpha, Elu, Sigmoid, Tanh, Sqrt, Rsqrt) of x, in x's layout.
  ir::ValueId activation(const std::string& op, ir::ValueId x, float alpha, const std::string& suffix);
  /// Grappler's fused ops (ops_fused.cpp): _FusedConv2D, FusedDepthwiseConv2dNative, _FusedMatMul — the product,
  /// then attr fused_ops applied in order on inputs from 2 on (BiasAdd, FusedBatchNorm, Add, an activation).
  void fusedConv2d(const tf::NodeDef& n);
  void fusedMatMul(const tf::NodeDef& n);
  ir::ValueId applyFusedOps(const tf::NodeDef& n, ir::ValueId y, bool cf);
  void addN(const tf::NodeDef& n);
  void prelu(const tf::NodeDef& n);
  void split(const tf::NodeDef& n);
  void depthToSpace(const tf::NodeDef& n);  // and SpaceToDepth
  /// A node of a registered custom op (ops_custom.cpp): TensorFlow-form tensors, the node's attributes.
  void customOp(const tf::NodeDef& n, const plugin::CustomOp& op);
  void conv2dBackpropInput(const tf::NodeDef& n);
  void biasAdd(const tf::NodeDef& n);
  void fusedBatchNorm(const tf::NodeDef& n);
  void pool(const tf::NodeDef& n);
  void resize(const tf::NodeDef& n);
  void unary(const tf::NodeDef& n);
  void binary(const tf::NodeDef& n);
  void matmul(const tf::NodeDef& n);
  void softmax(const tf::NodeDef& n);
  void reduce(const tf::NodeDef& n);
  void argmax(const tf::NodeDef& n);
  void cast(const tf::NodeDef& n);
  void concat(const tf::NodeDef& n);
  void pack(const tf::NodeDef& n);
  void reshape(const tf::NodeDef& n);
  void squeeze(const tf::NodeDef& n);
  void expandDims(const tf::NodeDef& n);
  void shape(const tf::NodeDef& n);
  void slice(const tf::NodeDef& n);
  void stridedSlice(const tf::NodeDef& n);
  void pad(const tf::NodeDef& n);
  void transpose(const tf::NodeDef& n);

 private:
  /// Applies a canonical slice to x (host values sliced here), as the current node's output k.
  void applySlice(Val& x, const SliceSpec& s, int k = 0);
  /// Window geometry of Conv2D / pooling along one spatial axis: TensorFlow's SAME, VALID or EXPLICIT padding.
  std::pair<int64_t, int64_t> padding(const tf::NodeDef& n, const std::string& mode, int64_t in, int64_t k, int64_t s,
                                      int64_t d, size_t axis, const std::vector<int64_t>& explicit_pads) const;

  const tf::GraphDef& gd_;
  std::string file_;
  const onnx_io::ImportOptions& opts_;
  std::unique_ptr<ir::Graph> g_;
  std::unique_ptr<channel_last::Builder> cl_;                  // the IR value and form of each TensorFlow tensor
  std::map<std::string, int> by_name_;                         // node name -> index in gd_
  std::vector<std::vector<std::pair<int, int>>> ins_;          // per node: its data inputs (node index, output)
  std::map<std::pair<int, int>, std::shared_ptr<Val>> vals_;  // (node index, output) -> value (shared by aliases)
  std::map<std::pair<int, int>, int> readers_;                 // (node index, output) -> how many inputs read it
  std::set<std::string> fixed_;                                // inputs whose shape opts.input_shapes replaced
  int cur_ = -1;                                               // index of the node being mapped
};

}  // namespace npuc::tf_io
