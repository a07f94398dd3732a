// Elementwise operators, activations, softmax, quantization and arg-max. Elementwise ones keep their input's form:
// a binary operator reads channels-first when one of its operands was written so and every computed operand is 4-D
// (a constant operand is padded to 4-D and permuted at import: it broadcasts as it did).
#include "frontend/tflite/importer.hpp"

#include "support/error.hpp"

#include <algorithm>

namespace npuc::tflite_io {

void Importer::binary() {
  expectInputs(2, 2);
  expectOutputs(1);
  static const std::map<int32_t, const char*> kOps = {
      {fb::BuiltinOperator_ADD, "Add"},         {fb::BuiltinOperator_SUB, "Sub"},
      {fb::BuiltinOperator_MUL, "Mul"},         {fb::BuiltinOperator_DIV, "Div"},
      {fb::BuiltinOperator_MAXIMUM, "Max"},     {fb::BuiltinOperator_MINIMUM, "Min"},
      {fb::BuiltinOperator_PRELU, "PRelu"}};
  fb::ActivationFunctionType act = fb::ActivationFunctionType_NONE;
  switch (op_.code) {
    case fb::BuiltinOperator_ADD: if (auto* o = options<fb::AddOptions>()) act = o->fused_activation_function(); break;
    case fb::BuiltinOperator_SUB: if (auto* o = options<fb::SubOptions>()) act = o->fused_activation_function(); break;
    case fb::BuiltinOperator_MUL: if (auto* o = options<fb::MulOptions>()) act = o->fused_activation_function(); break;
    case fb::BuiltinOperator_DIV: if (auto* o = options<fb::DivOptions>()) act = o->fused_activation_function(); break;
    default: break;
  }
  const int32_t a = input(0), b = input(1);
  bool any_cf = false, all4 = true;
  for (int32_t t : {a, b}) {
    if (isConstant(t)) {
      if (declaredShape(t).size() > 4) all4 = false;
      continue;
    }
    any_cf = any_cf || activationCf(t);
    if (shapeOf(get(t, isChannelsFirst(t))).size() != 4) all4 = false;
  }
  const bool cf = any_cf && all4;
  std::vector<ir::ValueId> ins;
  for (int32_t t : {a, b})
    ins.push_back(isConstant(t) ? (cf ? constantValue(t, kToChannelsFirst, 4) : constantValue(t)) : get(t, cf));
  ir::ValueId y = apply(kOps.at(op_.code), ins);
  bindOutput(0, activation(y, act), cf);
}

void Importer::unary() {
  expectInputs(1, 1);
  expectOutputs(1);
  const int32_t t = input(0);
  const bool cf = activationCf(t);
  ir::ValueId x = get(t, cf), y = ir::kNoValue;
  switch (op_.code) {
    case fb::BuiltinOperator_RELU: y = apply("Relu", {x}); break;
    case fb::BuiltinOperator_RELU6: y = activation(x, fb::ActivationFunctionType_RELU6); break;
    case fb::BuiltinOperator_RELU_N1_TO_1: y = activation(x, fb::ActivationFunctionType_RELU_N1_TO_1); break;
    case fb::BuiltinOperator_LEAKY_RELU: {
      const auto* o = options<fb::LeakyReluOptions>();
      y = apply("LeakyRelu", {x}, {{"alpha", o ? o->alpha() : 0.0f}});
      break;
    }
    case fb::BuiltinOperator_LOGISTIC: y = apply("Sigmoid", {x}); break;
    case fb::BuiltinOperator_TANH: y = apply("Tanh", {x}); break;
    case fb::BuiltinOperator_HARD_SWISH: y = apply("HardSwish", {x}); break;
    case fb::BuiltinOperator_EXP: y = apply("Exp", {x}); break;
    case fb::BuiltinOperator_SQRT: y = apply("Sqrt", {x}); break;
    case fb::BuiltinOperator_RSQRT: y = apply("Reciprocal", {apply("Sqrt", {x}, {}, "/sqrt")}); break;
    default: fail(ErrorCode::kInternal, "no unary mapping");
  }
  bindOutput(0, y, cf);
}

void Importer::softmax() {
  expectInputs(1, 1);
  expectOutputs(1);
  const auto* o = options<fb::SoftmaxOptions>();
  const float beta = o ? o->beta() : 1.0f;
  const int32_t t = input(0);
  const bool cf = activationCf(t);
  ir::ValueId x = get(t, cf);
  const int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  if (rank < 1) fail(ErrorCode::kInvalidInput, "a scalar input; SOFTMAX takes the last axis");
  // TFLite's softmax: exp(beta * x) normalised along the last axis (channels: axis 1 channels-first).
  if (beta != 1.0f) x = apply("Mul", {x, scalarF("beta", beta)}, {}, "/beta");
  bindOutput(0, apply("Softmax", {x}, {{"axis", cf ? int64_t{1} : rank - 1}}), cf);
}

void Importer::quantizeOps() {
  expectInputs(1, 1);
  expectOutputs(1);
  const int32_t t = input(0);
  // A quantized tensor's IR value is already its real value (DequantizeLinear after its codes); a float16 or int8
  // constant is dequantized as a constant. QUANTIZE's output parameters are applied by bindOutput.
  const bool cf = activationCf(t);
  ir::ValueId x = isConstant(t) ? constantValue(t) : get(t, cf);
  if (op_.code == fb::BuiltinOperator_DEQUANTIZE && quantOf(output(0)))
    fail(ErrorCode::kInvalidInput, "DEQUANTIZE writes a quantized tensor");
  if (op_.code == fb::BuiltinOperator_QUANTIZE && !quantOf(output(0)))
    fail(ErrorCode::kInvalidInput, "QUANTIZE writes {}, which has no quantization parameters", tensorLabel(output(0)));
  if (g_->value(x).type.dtype != DType::kF32)
    fail(ErrorCode::kUnsupported, "{} of {}: npuc reads float16, int8, uint8 and int32 ones", op_.name,
         dtypeName(g_->value(x).type.dtype));
  if (op_.code == fb::BuiltinOperator_DEQUANTIZE && isConstant(t)) dequantized_[output(0)] = t;
  if (op_.code == fb::BuiltinOperator_DEQUANTIZE && dequantized_.count(t)) dequantized_[output(0)] = dequantized_.at(t);
  bindOutput(0, apply("Identity", {x}), cf && !isConstant(t));
}

void Importer::densify() {
  // A sparse constant made dense: its dense values are a constant (weights read through it take it as theirs).
  expectInputs(1, 1);
  expectOutputs(1);
  const int32_t t = input(0);
  if (!isConstant(t) || !tensor(t).sparsity())
    fail(ErrorCode::kInvalidInput, "DENSIFY reads {}, which is not a sparse constant", tensorLabel(t));
  dequantized_[output(0)] = t;
  bindOutput(0, apply("Identity", {constantValue(t)}), false);
}

void Importer::argMax() {
  expectInputs(2, 2);
  expectOutputs(1);
  const std::vector<int64_t> axis = constInput(1, "axis");
  const int32_t t = input(0);
  const bool cf = activationCf(t);
  const int64_t rank = static_cast<int64_t>(shapeOf(get(t, cf)).size());
  if (axis.size() != 1 || axis[0] < -rank || axis[0] >= rank)
    fail(ErrorCode::kInvalidInput, "axis {} for an input of {} axes", shapeStr(axis), rank);
  const DType out = dtypeOf(output(0));
  if (out != DType::kI32 && out != DType::kI64)
    fail(ErrorCode::kInvalidInput, "the output is {}; ARG_MAX writes int32 or int64", dtypeName(out));
  const int64_t a = axis[0] < 0 ? axis[0] + rank : axis[0];
  // Over the channels of a feature map held channels-first (a segmentation net's class map): axis 1 there, and what is
  // left, [N, H, W], is the framework's order too — no layout change around it (TIDL's ArgMax is across channels).
  const bool channels = cf && rank == 4 && a == 3;
  ir::ValueId y = apply("ArgMax", {get(t, channels)}, {{"axis", channels ? int64_t{1} : a}, {"keepdims", int64_t{0}}});
  if (out == DType::kI32) y = apply("Cast", {y}, {{"to", int64_t{6}}}, "/int32");  // 6: INT32
  bindOutput(0, y, false);
}

}  // namespace npuc::tflite_io
