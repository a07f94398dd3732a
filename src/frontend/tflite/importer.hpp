// The TFLite importer: its state while it maps subgraph 0 (the IR value of each TFLite tensor, in the framework's
// axis order and / or channels-first), the graph being built, and the helpers every operator's mapping uses.
// Operators are read in the subgraph's order, which is TFLite's execution order: a tensor must be written by an
// earlier operator (or be an input or a constant) before it is read, which also rules out cycles. Shapes are inferred
// node by node as the graph grows and checked against the shapes the file declares.
// Internal to src/frontend/tflite: import.cpp reads the file, layout.cpp keeps the tensors' forms, ops_*.cpp map
// each builtin operator.
#pragma once

#include "tflite_generated.h"

#include "frontend/channel_last/channel_last.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "frontend/tflite/tflite_io.hpp"
#include "ir/graph.hpp"
#include "ops/registry.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace npuc::tflite_io {

namespace fb = npuc_tflite;

/// Sizes beyond these are no real model's and would overflow products of dims.
constexpr int64_t kMaxDim = int64_t{1} << 31;
using channel_last::kMaxElements;
/// NHWC -> NCHW and back (the permutations of a rank-4 activation).
inline const std::vector<int64_t> kToChannelsFirst = {0, 3, 1, 2};
inline const std::vector<int64_t> kToChannelsLast = {0, 2, 3, 1};

/// The saturated product of dims, shapes and host tensors permuted (channel_last.hpp).
using channel_last::permuted;
using channel_last::product;
/// The builtin operator's name ("CONV_2D"), or "BUILTIN_<code>" for a code the schema does not name.
std::string builtinName(int32_t code);

/// A tensor's quantization: real = scale * (q - zero_point), per tensor or per index of `axis`. A uint8 tensor's
/// codes become int8 ones (code - 128, zero point - 128: the same real values), as npuc's int8-affine path takes
/// int8 codes only; `from_uint8` says so.
struct QuantParams {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int32_t axis = 0;
  bool from_uint8 = false;
  bool perChannel() const { return scale.size() > 1; }
};

class Importer {
 public:
  Importer(const fb::Model& model, std::string file, const onnx_io::ImportOptions& opts)
      : model_(model), file_(std::move(file)), opts_(opts) {}
  std::unique_ptr<ir::Graph> run();

  // --- the file's tensors (import.cpp) ---
  const fb::Tensor& tensor(int32_t index) const;
  /// "tensor 7 ('conv1/weights')" for messages.
  std::string tensorLabel(int32_t index) const;
  Shape declaredShape(int32_t index) const;
  DType dtypeOf(int32_t index) const;
  /// Whether the tensor's buffer holds data (a constant).
  bool isConstant(int32_t index) const;
  /// The tensor's data, in its own element type and shape (float16 as kF16).
  Tensor constantData(int32_t index) const;
  /// A sparse constant's dense values (sparse.cpp): its sparsity parameters checked and applied.
  Tensor sparseData(int32_t index) const;
  /// The constant's values as integers (int32 / int64 tensors: shapes, axes, paddings).
  std::vector<int64_t> constantInts(int32_t index) const;
  /// Its quantization, when it is a quantized integer tensor (scales given); nullopt for a float tensor.
  std::optional<QuantParams> quantOf(int32_t index) const;

  // --- the operator being mapped ---
  struct Op {
    int index = 0;
    int32_t code = 0;
    std::string name;  // builtin name, or the custom code
    const fb::Operator* op = nullptr;
    std::vector<int32_t> inputs, outputs;  // -1: an optional input left out
  };
  const Op& op() const { return op_; }
  /// Input i's tensor index (fails when it is missing or left out).
  int32_t input(int i) const;
  bool hasInput(int i) const { return i < static_cast<int>(op_.inputs.size()) && op_.inputs[static_cast<size_t>(i)] >= 0; }
  int32_t output(int i) const;
  void expectInputs(int lo, int hi) const;
  void expectOutputs(int n) const;
  /// The operator's options table of type T (fails when the file gives options of another type); nullptr when the
  /// file gives none (every field then takes its default).
  template <typename T> const T* options() const {
    const void* o = op_.op->builtin_options();
    if (!o) return nullptr;
    const T* t = op_.op->template builtin_options_as<T>();
    if (!t)
      fail(ErrorCode::kInvalidInput, "builtin_options is a {} table; this operator takes {}",
           fb::EnumNameBuiltinOptions(op_.op->builtin_options_type()),
           fb::EnumNameBuiltinOptions(fb::BuiltinOptionsTraits<T>::enum_value));
    return t;
  }
  /// The constant tensor holding input i's weights: the input itself, or the constant a DEQUANTIZE read to write it
  /// (float16 or int8 weights); fails naming `what` when they are computed otherwise.
  int32_t weights(int i, const char* what) const;
  /// A constant input's integers (fails naming the input when it is computed).
  std::vector<int64_t> constInput(int i, const char* what) const;

  // --- the tensors' IR values and forms (layout.cpp) ---
  /// The IR value of tensor `t` in the framework's axis order (cf false) or channels-first (cf true, rank 4 only):
  /// the form it was written in, or one conversion (a Transpose, or a Reshape where only dims of size 1 move),
  /// made once and kept. A constant tensor becomes a constant (DequantizeLinear after it when quantized).
  ir::ValueId get(int32_t t, bool cf);
  /// Whether tensor t's value was written channels-first (false for constants and framework-order values).
  bool isChannelsFirst(int32_t t) const;
  /// Whether tensor t is an activation (not a constant) of rank 4 written channels-first.
  bool activationCf(int32_t t) const { return !isConstant(t) && isChannelsFirst(t); }
  /// A constant tensor as a float IR value, its elements permuted by `perm` after its shape is padded with leading
  /// 1s to `rank` (empty perm: as stored); a quantized constant stays integer behind a DequantizeLinear whose axis
  /// follows the permutation.
  ir::ValueId constantValue(int32_t t, const std::vector<int64_t>& perm = {}, size_t rank = 0);
  /// Binds output i of the operator to `v` (written channels-first when cf): checks its shape against the file's,
  /// and for a quantized tensor adds QuantizeLinear -> DequantizeLinear with the tensor's own parameters.
  void bindOutput(int i, ir::ValueId v, bool cf);
  /// An IR value internal to the operator's mapping.
  ir::ValueId temp(const std::string& what);
  ir::ValueId constant(const std::string& what, Tensor t);
  ir::ValueId ints(const std::string& what, const std::vector<int64_t>& v);
  ir::ValueId scalarF(const std::string& what, float v);
  /// Adds a node and infers its output types at once (later mappings read them).
  ir::Node& node(const std::string& op, std::vector<ir::ValueId> ins, std::vector<ir::ValueId> outs,
                 std::map<std::string, ir::Attr> attrs = {}, const std::string& suffix = "");
  /// A one-output node on a new value; returns the value.
  ir::ValueId apply(const std::string& op, std::vector<ir::ValueId> ins, std::map<std::string, ir::Attr> attrs = {},
                    const std::string& suffix = "");
  const Shape& shapeOf(ir::ValueId v) const;
  /// TFLite's fused activation after `v` (NONE: v itself).
  ir::ValueId activation(ir::ValueId v, fb::ActivationFunctionType act);
  /// Reshape of `v` to `to`.
  ir::ValueId reshape(ir::ValueId v, const Shape& to);

  // --- the operators (ops_nn.cpp, ops_math.cpp, ops_shape.cpp) ---
  void conv2d();
  void depthwiseConv2d();
  void transposeConv();
  /// MediaPipe's CUSTOM 'Convolution2DTransposeBias'.
  void transposeConvBias();
  void transposeConvolution(int32_t x, int w_input, int bias_input, const std::vector<int64_t>& out_shape,
                            fb::Padding pad, int64_t stride_h, int64_t stride_w, fb::ActivationFunctionType act);
  void fullyConnected();
  void pool2d();
  void resize();
  void binary();
  void unary();
  void softmax();
  void quantizeOps();
  void densify();
  void argMax();
  void concatenation();
  void reshapeOp();
  void squeeze();
  void pad();
  void mean();
  void slice();
  void stridedSlice();
  void split();
  void depthToSpace();  // and SPACE_TO_DEPTH
  void transpose();
  void gather();

 private:
  void inputs();
  void operators();
  void mapOperator(int index);
  void outputs();
  void checkShape(int32_t t, const Shape& fw_shape) const;
  /// The tensor's name in the Builder: its own, or with "#<index>" when it has none or another tensor has it.
  const std::string& key(int32_t t);
  bool bound(int32_t t) { return cl_->bound(key(t)); }
  /// The tensor's name (tensor<index> when it has none), and a value name made from it that no value has yet.
  std::string baseName(int32_t t) const;
  std::string valueName(int32_t t, const std::string& suffix);

  const fb::Model& model_;
  std::string file_;
  const onnx_io::ImportOptions& opts_;
  const fb::SubGraph* sg_ = nullptr;
  std::unique_ptr<ir::Graph> g_;
  /// Each tensor's IR value and form (channel_last::Builder, shared with the TensorFlow importer), by key().
  std::unique_ptr<channel_last::Builder> cl_;
  std::map<int32_t, std::string> keys_;
  std::set<std::string> used_keys_;
  std::map<int32_t, ir::ValueId> quantized_out_;
  std::map<int32_t, int32_t> dequantized_;  // DEQUANTIZE's output tensor -> its constant input  // tensor -> its QuantizeLinear output (the integer value)
  bool shapes_overridden_ = false;
  Op op_;
};

}  // namespace npuc::tflite_io
