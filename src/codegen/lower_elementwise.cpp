// Lowering of the element-wise ops (mirrors engine/ops_elementwise.cpp): every op of the unary and binary tables
// (kernels/elementwise_ops.def) by name, n-ary Sum / Mean / Max / Min, Clip, Cast, Identity and Dropout; on typed
// values (bool, integers) and for comparisons and logic, the typed_binary / typed_unary layers.
#include "codegen/lowerer.hpp"

#include "kernels/typed.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace npuc::codegen::detail {

/// Sum / Mean / Max / Min of any number of inputs, as the engine computes them: a chain of binary layers
/// (((a op b) op c) …, each broadcasting), then for Mean one division by the count. One input is a copy.
void Lowerer::variadic(const ir::Node& n, uint32_t code) {
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
    if (typed_ && !last) vals_[static_cast<size_t>(next)].type = vals_[static_cast<size_t>(acc)].type;
    if (typed_) {  // integer Sum / Max / Min: the same chain of typed layers
      if (n.op == "Mean") unsupported(n, "Mean of {} values has no package form (floating point only)", package::elemName(vals_[static_cast<size_t>(acc)].type));
      const auto op = kernels::typedBinaryOpFromName(n.op == "Sum" ? "Add" : n.op);
      emit(n, LayerKind::kTypedBinary, {acc, in(n, i)}, next, {static_cast<uint32_t>(op)}).name = fmt::format("{}/{}", n.name, i);
    } else {
      emit(n, LayerKind::kBinary, {acc, in(n, i)}, next, {code}).name = fmt::format("{}/{}", n.name, i);
    }
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

void Lowerer::cast(const ir::Node& n) {
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

void Lowerer::castTo(const ir::Node& n, int x, ElemType t) {
  const ElemType from = vals_[static_cast<size_t>(x)].type;
  if (!package::isPackageType(from) || !package::isPackageType(t))
    unsupported(n, "a cast from {} to {} has no package form", package::elemName(from), package::elemName(t));
  emit(n, LayerKind::kCast, {x}, outVal(n, n.outputs[0]));
}

/// On typed values, or a comparison / logic op (bool result): a typed_binary layer (kernels/typed.hpp).
void Lowerer::typedBinaryNode(const ir::Node& n) {
  if (n.numInputs() != 2) return variadic(n, 0);
  const auto op = kernels::typedBinaryOpForOnnx(n.op, n.attrInt("fmod", 0), n.attrString("direction", "") == "LEFT");
  if (op == kernels::TypedBinaryOp::kCount) unsupported(n, "op {} has no typed package form", n.op);
  if (shapeOf(n, 0).size() > package::kMaxRank || g_.value(n.outputs[0]).type.shape.size() > package::kMaxRank)
    unsupported(n, "rank above {}", package::kMaxRank);
  const int a = typedIn(n, 0), b = typedIn(n, 1);  // (a comparison of float values writes bool)
  const ElemType ta = vals_[static_cast<size_t>(a)].type, tb = vals_[static_cast<size_t>(b)].type;
  if (ta != tb) unsupported(n, "operands of two types ({}, {}) have no package form", package::elemName(ta), package::elemName(tb));
  const std::string why = kernels::typedBinaryRule(op, ta);
  if (!why.empty()) unsupported(n, "{}", why);
  emit(n, LayerKind::kTypedBinary, {a, b}, outVal(n, n.outputs[0]), {static_cast<uint32_t>(op)});
}

/// Not, IsNaN, IsInf, and Abs / Neg / Sign / Relu / Ceil / Floor of typed values: a typed_unary layer.
void Lowerer::typedUnaryNode(const ir::Node& n) {
  const auto op = kernels::typedUnaryOpFromName(n.op);
  if (op == kernels::TypedUnaryOp::kCount) unsupported(n, "op {} has no typed package form", n.op);
  const int x = in(n, 0);
  const std::string why = kernels::typedUnaryRule(op, vals_[static_cast<size_t>(x)].type);
  if (!why.empty()) unsupported(n, "{}", why);
  const uint32_t flags = (n.attrInt("detect_negative", 1) ? 1u : 0u) | (n.attrInt("detect_positive", 1) ? 2u : 0u);
  emit(n, LayerKind::kTypedUnary, {x}, outVal(n, n.outputs[0]), {static_cast<uint32_t>(op), flags});
}

void Lowerer::unaryOp(const ir::Node& n, const std::string& op, float alpha, float beta) {
  const auto& names = package::unaryOpNames();
  auto it = std::find(names.begin(), names.end(), op);
  if (it == names.end()) unsupported(n, "unary op {} has no package form", op);
  emit(n, LayerKind::kUnary, {in(n, 0)}, outVal(n, n.outputs[0]),
       {static_cast<uint32_t>(it - names.begin()), package::floatParam(alpha), package::floatParam(beta)});
}

/// A binary op of the table (two inputs; more or fewer are the variadic chain), with a following Relu, LeakyRelu or
/// Clip applied by the layer itself.
void Lowerer::binaryNode(const ir::Node& n) {
  if (typed_) return typedBinaryNode(n);
  const uint32_t code = binaryCode(n.op.c_str());
  if (n.numInputs() != 2) return variadic(n, code);
  if (shapeOf(n, 0).size() > package::kMaxRank || g_.value(n.outputs[0]).type.shape.size() > package::kMaxRank)
    unsupported(n, "rank above {}", package::kMaxRank);
  int a = in(n, 0), c = in(n, 1);
  ir::ValueId outv = n.outputs[0];
  const ir::Node* act = fusableActivation(outv);
  if (!act) {
    emit(n, LayerKind::kBinary, {a, c}, outVal(n, outv), {code});
    return;
  }
  LDesc& d = emit(n, LayerKind::kBinary, {a, c}, outVal(*act, act->outputs[0]), {code});
  of_[outv] = d.out;
  if (act->op == "Relu") d.act = Act::kRelu;
  else if (act->op == "LeakyRelu") d.act = Act::kLeakyRelu, d.act_a = ops::attrFloat(*act, "alpha");
  else clipBounds(*act, d.act_a, d.act_b), d.act = Act::kClip;
  d.opexp += "+" + act->op;
  d.onnx_nodes.push_back(act->name);
  skip_[act->id] = true;
}

void Lowerer::sumMean(const ir::Node& n) {
  if (typed_) return typedBinaryNode(n);
  variadic(n, binaryCode("Add"));
}

/// Clip: constant bounds of a float x are a unary Clip (fusable into the layer before); computed bounds or an integer
/// x a clip layer reading the bounds as tensors.
void Lowerer::clipNode(const ir::Node& n) {
  if (typed_ || (n.hasInput(1) && !constIn(n, 1)) || (n.hasInput(2) && !constIn(n, 2))) {
    if (g_.opset < 11) unsupported(n, "Clip on {} values before opset 11 has no package form", dtypeName(g_.value(n.inputs[0]).type.dtype));
    std::vector<int> ins{in(n, 0)};
    uint32_t flags = 0;
    for (int i = 1; i <= 2; ++i)
      if (n.hasInput(i)) {
        if (shapeNumel(shapeOf(n, i)) != 1) unsupported(n, "a bound of {} elements (Clip takes one)", shapeNumel(shapeOf(n, i)));
        ins.push_back(in(n, i));
        flags |= 1u << (i - 1);
      }
    emit(n, LayerKind::kClip, ins, outVal(n, n.outputs[0]), {flags});
    return;
  }
  float lo, hi;
  clipBounds(n, lo, hi);
  unaryOp(n, n.op, lo, hi);
}

/// An op of the unary table: alpha and beta from the attributes the table names.
void Lowerer::unaryNode(const ir::Node& n) {
  if (typed_) return typedUnaryNode(n);
  const std::vector<std::string>& names = package::unaryOpNames();
  const size_t code = static_cast<size_t>(std::find(names.begin(), names.end(), n.op) - names.begin());
  const auto& [a, b] = package::unaryOpAttrs()[code];
  unaryOp(n, n.op, a.empty() ? 0.0f : ops::attrFloat(n, a), b.empty() ? 0.0f : ops::attrFloat(n, b));
}

/// ai.npuc Swish / Mish / HardSwish: the optimizer's fused activation patterns.
void Lowerer::npucUnary(const ir::Node& n) { unaryOp(n, n.op, 0, 0); }

/// Identity and inference-mode Dropout: the same bytes (an alias, or a copy into a model output).
void Lowerer::copyNode(const ir::Node& n) {
  if (n.op == "Dropout" && n.hasInput(2)) {  // training mode: an identity only when the ratio is 0
    const ir::Value& mode = g_.value(n.inputs[2]);
    const ir::Value* ratio = n.hasInput(1) ? &g_.value(n.inputs[1]) : nullptr;
    if (!mode.isConstant() || (ratio && !ratio->isConstant()))
      unsupported(n, "Dropout's training_mode and ratio must be constants to have a package form");
    double r = ratio ? ratio->constant->toDouble().at(0) : 0.5;
    if (mode.constant->toDouble().at(0) != 0 && r != 0)
      unsupported(n, "training_mode=true with ratio {} (random dropout) has no package form", r);
  }
  if (n.op == "Dropout" && n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue &&
      (uses_.count(n.outputs[1]) || is_output_.count(n.outputs[1]))) {  // the mask of an identity: all true
    Tensor ones(DType::kBool, g_.value(n.outputs[1]).type.shape);
    std::fill_n(static_cast<uint8_t*>(ones.raw()), ones.numel(), uint8_t{1});
    constantOutput(n, n.outputs[1], ones);
  }
  copyLike(n);
}

/// EyeLike: a constant of its input's shape (ones on the k-th diagonal), whatever the input's values.
void Lowerer::eyeLike(const ir::Node& n) {
  const ir::Value& y = g_.value(n.outputs[0]);
  if (y.type.shape.size() != 2) unsupported(n, "EyeLike of rank {} (2)", y.type.shape.size());
  const bool packageFloat = y.type.dtype == DType::kF32 || y.type.dtype == DType::kF16;  // (float64 is a typed value)
  Tensor eye(packageFloat ? DType::kF32 : y.type.dtype, y.type.shape);
  const int64_t rows = y.type.shape[0], cols = y.type.shape[1], k = n.attrInt("k", 0);
  const size_t es = dtypeSize(eye.dtype());
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols) {
      uint8_t* e = static_cast<uint8_t*>(eye.raw()) + static_cast<size_t>(i * cols + i + k) * es;
      if (eye.dtype() == DType::kF32) *reinterpret_cast<float*>(e) = 1.0f;
      else if (eye.dtype() == DType::kF64) *reinterpret_cast<double*>(e) = 1.0;
      else e[0] = 1;  // 1 in every integer type and bool (little-endian)
    }
  constantOutput(n, n.outputs[0], eye);
}

/// Where: the condition a constant (uint8 weights, 0 / 1), or a bool value (a model input or computed).
void Lowerer::whereNode(const ir::Node& n) {
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  if (ys.size() > package::kMaxRank) unsupported(n, "rank {} above {}", ys.size(), package::kMaxRank);
  const ir::Value& cv = g_.value(n.inputs[0]);
  int cond;
  if (cv.isConstant()) {
    std::vector<double> v = cv.constant->toDouble();
    std::vector<uint8_t> bytes(v.size());
    for (size_t i = 0; i < v.size(); ++i) bytes[i] = v[i] != 0 ? 1 : 0;
    cond = weightVal(cv.name, cv.type.shape, std::move(bytes), ElemType::kU8);
  } else {
    cond = in(n, 0);
    const ElemType ct = vals_[static_cast<size_t>(cond)].type;
    if (ct != ElemType::kBool && ct != ElemType::kU8) unsupported(n, "a {} condition has no package form", package::elemName(ct));
  }
  emit(n, LayerKind::kWhere, {cond, in(n, 1), in(n, 2)}, outVal(n, n.outputs[0]));
}

void registerElementwiseLowerings(LowerTable& t) {
  takeTypedValues(t, {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Max", "Min", "Sum", "BitShift", "Equal", "Greater",
                      "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor", "Not", "Abs", "Neg", "Sign",
                      "Relu", "Ceil", "Floor", "IsNaN", "IsInf", "Cast", "CastLike", "Where", "Identity", "Clip",
                      "Dropout", "EyeLike"});
  t[{"", "Where"}] = &Lowerer::whereNode;
  for (const std::string& op : package::binaryOpNames()) t[{"", op}] = &Lowerer::binaryNode;
  for (const std::string& op : package::unaryOpNames())
    if (op != "Identity" && op != "Swish" && op != "Clip") t[{"", op}] = &Lowerer::unaryNode;
  for (const char* op : {"Swish", "Mish", "HardSwish"}) t[{"ai.npuc", op}] = &Lowerer::npucUnary;
  t[{"", "Sum"}] = &Lowerer::sumMean;
  t[{"", "Mean"}] = &Lowerer::sumMean;
  t[{"", "Clip"}] = &Lowerer::clipNode;
  t[{"", "EyeLike"}] = &Lowerer::eyeLike;
  t[{"", "Cast"}] = &Lowerer::cast;
  t[{"", "CastLike"}] = &Lowerer::cast;
  for (const char* op : {"Mod", "BitShift", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor"})
    t[{"", op}] = &Lowerer::typedBinaryNode;
  for (const char* op : {"Not", "IsNaN", "IsInf"}) t[{"", op}] = &Lowerer::typedUnaryNode;
  t[{"", "Identity"}] = &Lowerer::copyNode;
  t[{"", "Dropout"}] = &Lowerer::copyNode;
}

}  // namespace npuc::codegen::detail
