// Lowering of the reductions (mirrors engine/ops_reduce.cpp): Reduce* (the reduce layer), ArgMax / ArgMin (the
// arg_reduce layer) and LayerNormalization.
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

/// Reduce*: the axes (an attribute, or from opset 18 — 13 for ReduceSum — a constant input) become one flag per
/// dim of x; keepdims only shapes the output.
void Lowerer::reduce(const ir::Node& n, uint32_t code) {
  const Shape& x = shapeOf(n, 0);
  if (x.size() > package::kMaxRank) unsupported(n, "rank {} above {}", x.size(), package::kMaxRank);
  const int64_t rank = static_cast<int64_t>(x.size());
  // float32 / float16 (the float layer), or typed values — integers, float64 — as they are (kernels::reduceTyped);
  // not int8 codes of a quantized tensor (isTypedValue is false for those)
  const ir::Value& xv = g_.value(n.inputs[0]);
  const DType xt = xv.type.dtype;
  const bool float_x = xt == DType::kF32 || xt == DType::kF16;
  if (!float_x && (!isTypedValue(xv) || xt == DType::kBool || xt == DType::kBF16 || !kernels::typedKernelType(xt)))
    unsupported(n, "op {} on {} values has no package form (typed values: docs/package-format.md)", n.op, dtypeName(xt));
  std::vector<int64_t> axes;
  if (!ops::reduceAxesFromInput(n, g_.opset)) {
    axes = n.attrInts("axes");
  } else if (n.hasInput(1)) {
    const ir::Value& a = g_.value(n.inputs[1]);
    if (!a.isConstant()) {  // read by the layer at run time; y's dims (declared or inferred) fix what they may reduce
      if (shapeOf(n, 1).size() != 1) unsupported(n, "the axes must be 1-D");
      std::vector<uint32_t> p(1 + x.size(), 0u);  // the op (bit 16: noop_with_empty_axes); the dim flags all 0
      p[0] = code | (n.attrInt("noop_with_empty_axes", 0) != 0 ? 1u << 16 : 0u);
      emit(n, LayerKind::kReduce, {in(n, 0), intIn(n, 1)}, outVal(n, n.outputs[0]), p);
      return;
    }
    axes = a.constant->toInt64();
  }
  std::vector<bool> flags;
  int64_t bad = 0;
  if (!ops::reducedDims(n, axes, rank, flags, bad)) unsupported(n, "axis {} is out of range for rank {}", bad, rank);
  std::vector<uint32_t> p{code};
  for (bool f : flags) p.push_back(f ? 1u : 0u);
  emit(n, LayerKind::kReduce, {in(n, 0)}, outVal(n, n.outputs[0]), p);
}

/// LayerNormalization: scale and bias (constants, numpy-broadcast to the normalised dims) expanded to float32
/// [inner] in the weight space, as the reference engine expands them.
void Lowerer::layerNorm(const ir::Node& n) {
  const Shape& x = shapeOf(n, 0);
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = ops::attrInt(n, "axis");
  if (axis < -rank || axis >= rank) unsupported(n, "axis {} out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  const Shape norm(x.begin() + axis, x.end());
  int64_t inner = 1;
  for (int64_t d : norm) inner *= d;
  bool computed = false;  // a scale or bias the model computes (or a model input): read as it is, viewed as [inner]
  auto expand = [&](int i, const char* what) {
    const Tensor* t = constIn(n, i);
    if (!t) {
      if (shapeOf(n, i) != norm || ft_ != ElemType::kF32)
        unsupported(n, "a computed {} has a package form in float32 packages, of the normalised shape {} (got {})", what,
                    shapeStr(norm), shapeStr(shapeOf(n, i)));
      computed = true;
      return in(n, i);
    }
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
  // Mean and InvStdDev (outputs 1 and 2, x's shape with the normalised dims 1) when the model reads them: written
  // by the same layer (an unread Mean before a read InvStdDev is a scratch value).
  auto wanted = [&](size_t k) {
    return k < n.outputs.size() && n.outputs[k] != ir::kNoValue && (uses_.count(n.outputs[k]) || is_output_.count(n.outputs[k]));
  };
  std::vector<int> stats;
  for (size_t k = 1; k <= 2; ++k)
    if (wanted(k) || (k == 1 && wanted(2))) {
      Shape ss = x;
      std::fill(ss.begin() + axis, ss.end(), 1);
      stats.push_back(wanted(k) ? outVal(n, n.outputs[k]) : tempVal(n.name + "/mean", ss));
      if (vals_[static_cast<size_t>(stats.back())].shape != ss || !isFloat(vals_[static_cast<size_t>(stats.back())].type))
        unsupported(n, "output {} is not a float tensor of shape {}", k, shapeStr(ss));
    }
  LDesc& d = emit(n, LayerKind::kLayerNorm, ins, outVal(n, n.outputs[0]),
                  {static_cast<uint32_t>(axis), package::floatParam(ops::attrFloat(n, "epsilon"))});
  d.more_outs = stats;
  if (computed) {
    d.views = {x, {inner}};
    if (ins.size() == 3) d.views.push_back({inner});
    d.views.push_back(g_.value(n.outputs[0]).type.shape);
  }
}

void Lowerer::reduceNode(const ir::Node& n) { reduce(n, *package::reduceOpCode(n.op)); }

/// ArgMax / ArgMin: an arg_reduce layer writing int64 indices (keepdims only shapes the output).
void Lowerer::argReduce(const ir::Node& n) {
  const Shape& x = shapeOf(n, 0);
  if (x.size() > package::kMaxRank) unsupported(n, "rank {} above {}", x.size(), package::kMaxRank);
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = n.attrInt("axis", 0);
  if (rank > 0 && !ops::normalizeAxis(axis, rank)) unsupported(n, "axis {} is out of range for rank {}", n.attrInt("axis", 0), rank);
  if (rank == 0) axis = 0;
  const int y = outVal(n, n.outputs[0]);
  // TIDL's class map (an int8-pow2 target; T:L28, T:L500-502): a model output of at most 255 classes nothing else
  // reads is written one byte per element — the same indices, in the guide's W x H bytes.
  if (numericsTraits(t_.numerics).pow2_codes && is_output_.count(n.outputs[0]) && rank > 0 && x[static_cast<size_t>(axis)] <= 255) {
    bool read = false;
    for (ir::NodeId id : g_.order())
      for (ir::ValueId v : g_.node(id).inputs) read = read || v == n.outputs[0];
    if (!read) vals_[static_cast<size_t>(y)].type = ElemType::kU8;
  }
  emit(n, LayerKind::kArgReduce, {typedIn(n, 0)}, y,
       {n.op == "ArgMax" ? 0u : 1u, static_cast<uint32_t>(axis), n.attrInt("select_last_index", 0) ? 1u : 0u});
}

/// CumSum: a cum_sum layer; the axis a constant.
void Lowerer::cumSumNode(const ir::Node& n) {
  const Shape& x = shapeOf(n, 0);
  if (x.size() > package::kMaxRank) unsupported(n, "rank {} above {}", x.size(), package::kMaxRank);
  const Tensor* at = constIn(n, 1);
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = 0;
  std::vector<int> ins{in(n, 0)};
  if (at && at->numel() == 1) {
    axis = at->toInt64()[0];
    if (rank == 0 || !ops::normalizeAxis(axis, rank)) unsupported(n, "axis {} is out of range for rank {}", at->toInt64()[0], rank);
  } else {  // computed (or a model input): read by the layer at run time, word 0 then 0
    if (rank == 0 || shapeNumel(shapeOf(n, 1)) != 1) unsupported(n, "the axis must be one int32 / int64 value");
    ins.push_back(intIn(n, 1));
  }
  emit(n, LayerKind::kCumSum, ins, outVal(n, n.outputs[0]),
       {static_cast<uint32_t>(axis), n.attrInt("exclusive", 0) ? 1u : 0u, n.attrInt("reverse", 0) ? 1u : 0u});
}

/// HannWindow / HammingWindow / BlackmanWindow of a computed size (a constant one folds): a window layer.
void Lowerer::windowNode(const ir::Node& n) {
  const ir::Value& y = g_.value(n.outputs[0]);
  if (y.type.dtype != DType::kF32 || y.type.shape.size() != 1) unsupported(n, "a window of {}", y.type.str());
  const uint32_t kind = n.op == "HannWindow" ? 0u : n.op == "HammingWindow" ? 1u : 2u;
  if (shapeNumel(shapeOf(n, 0)) != 1) unsupported(n, "size must be one value");
  const int size = intIn(n, 0);
  emit(n, LayerKind::kWindow, {size}, outVal(n, n.outputs[0]), {kind, n.attrInt("periodic", 1) ? 1u : 0u});
}

/// A size input (dft_length, frame_step, frame_length): its constant value, or `inferred` (a value that gives the
/// package's shapes) with the input added to `ins`: the layer reads it when it runs and checks that it gives y's dims.
int64_t Lowerer::sizeInput(const ir::Node& n, int i, int64_t inferred, std::vector<int>& ins) {
  if (shapeNumel(shapeOf(n, i)) != 1) unsupported(n, "input {} must be one value", i);
  if (const Tensor* t = constIn(n, i)) return t->toInt64()[0];
  ins.push_back(intIn(n, i));
  return inferred;
}

/// DFT (opset 17: axis an attribute): a dft layer; dft_length, when the model computes it, read when it runs.
void Lowerer::dftNode(const ir::Node& n) {
  const Shape& x = shapeOf(n, 0);
  const Shape& y = g_.value(n.outputs[0]).type.shape;
  int64_t axis = n.attrInt("axis", 1);
  if (x.size() < 2 || !ops::normalizeAxis(axis, static_cast<int64_t>(x.size())) || axis == static_cast<int64_t>(x.size()) - 1)
    unsupported(n, "axis {} of {}", n.attrInt("axis", 1), shapeStr(x));
  const bool onesided = n.attrInt("onesided", 0) != 0;
  const int64_t bins = y[static_cast<size_t>(axis)];
  std::vector<int> ins{in(n, 0)};
  const int64_t length = n.hasInput(1) ? sizeInput(n, 1, onesided ? 2 * (bins - 1) : bins, ins) : x[static_cast<size_t>(axis)];
  emit(n, LayerKind::kDft, ins, outVal(n, n.outputs[0]),
       {u32(axis), u32(length), n.attrInt("inverse", 0) ? 1u : 0u, onesided ? 1u : 0u});
}

/// STFT: a stft layer; frame_step and frame_length, when the model computes them, read when it runs.
void Lowerer::stftNode(const ir::Node& n) {
  const Shape& x = shapeOf(n, 0);
  const Shape& y = g_.value(n.outputs[0]).type.shape;
  if (x.size() != 3 || y.size() != 4) unsupported(n, "signal {} -> {}", shapeStr(x), shapeStr(y));
  const bool onesided = n.attrInt("onesided", 1) != 0;
  // Words that give y's dims: the window's length (else one giving y's bins), a step giving y's frames.
  const int64_t frames = y[1], bins = y[2];
  int64_t length = n.hasInput(2) ? shapeOf(n, 2).at(0) : onesided ? 2 * (bins - 1) : bins;
  if (n.hasInput(3))
    if (const Tensor* t = constIn(n, 3)) length = t->toInt64()[0];
  std::vector<int> ins{in(n, 0)}, step_in, len_in;
  const int64_t step = sizeInput(n, 1, frames > 1 ? std::max<int64_t>(1, (x[1] - length) / (frames - 1)) : 1, step_in);
  if (n.hasInput(3)) sizeInput(n, 3, length, len_in);
  const uint32_t flags = (step_in.empty() ? 0u : 1u) | (n.hasInput(2) ? 2u : 0u) | (len_in.empty() ? 0u : 4u);
  ins.insert(ins.end(), step_in.begin(), step_in.end());
  if (n.hasInput(2)) ins.push_back(in(n, 2));
  ins.insert(ins.end(), len_in.begin(), len_in.end());
  emit(n, LayerKind::kStft, ins, outVal(n, n.outputs[0]), {u32(step), u32(length), onesided ? 1u : 0u, flags});
}

/// MelWeightMatrix of computed sizes (a constant one folds at import): a mel_weight_matrix layer reading all five.
void Lowerer::melNode(const ir::Node& n) {
  if (g_.value(n.outputs[0]).type.dtype != DType::kF32) unsupported(n, "output type {}", dtypeName(g_.value(n.outputs[0]).type.dtype));
  std::vector<int> ins;
  for (int i = 0; i < 5; ++i) {
    if (shapeNumel(shapeOf(n, i)) != 1) unsupported(n, "input {} must be one value", i);
    ins.push_back(i < 3 ? intIn(n, i) : in(n, i));
  }
  emit(n, LayerKind::kMelWeightMatrix, ins, outVal(n, n.outputs[0]), {});
}

/// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss: a loss layer (and SoftmaxCrossEntropyLoss's log_prob when used).
void lossNode(Lowerer& L, const ir::Node& n) {
  const std::string red = n.attrString("reduction", "mean");
  const int64_t ignore = n.attrInt("ignore_index", 0);
  std::vector<int> ins{L.in(n, 0), L.intIn(n, 1)};
  if (n.hasInput(2)) ins.push_back(L.in(n, 2));
  LDesc& d = L.emit(n, LayerKind::kLoss, ins, L.outVal(n, n.outputs[0]),
                    {n.op == "SoftmaxCrossEntropyLoss" ? 1u : 0u, red == "none" ? 0u : red == "sum" ? 1u : 2u,
                     n.hasAttr("ignore_index") ? 1u : 0u, static_cast<uint32_t>(static_cast<uint64_t>(ignore)),
                     static_cast<uint32_t>(static_cast<uint64_t>(ignore) >> 32)});
  if (n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue && (L.uses_.count(n.outputs[1]) || L.is_output_.count(n.outputs[1])))
    d.more_outs = {L.outVal(n, n.outputs[1])};
}

/// MeanVarianceNormalization: an mvn layer, its axes as one flag per dim.
void mvnNode(Lowerer& L, const ir::Node& n) {
  const int64_t rank = static_cast<int64_t>(L.shapeOf(n, 0).size());
  std::vector<uint32_t> flags(static_cast<size_t>(rank), 0);
  for (int64_t a : n.attrInts("axes", {0, 2, 3})) {
    if (!ops::normalizeAxis(a, rank)) L.unsupported(n, "axis {} out of range for rank {}", a, rank);
    flags[static_cast<size_t>(a)] = 1;
  }
  L.emit(n, LayerKind::kMvn, {L.in(n, 0)}, L.outVal(n, n.outputs[0]), flags);
}

void registerReduceLowerings(LowerTable& t) {
  t[{"", "MeanVarianceNormalization"}] = mvnNode;
  t[{"", "NegativeLogLikelihoodLoss"}] = lossNode;
  t[{"", "SoftmaxCrossEntropyLoss"}] = lossNode;
  takeTypedValues(t, {"ArgMax", "ArgMin", "CumSum", "HannWindow", "HammingWindow", "BlackmanWindow", "DFT", "STFT",
                      "MelWeightMatrix", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                      "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
                      "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"});
  t[{"", "DFT"}] = &Lowerer::dftNode;
  t[{"", "STFT"}] = &Lowerer::stftNode;
  t[{"", "MelWeightMatrix"}] = &Lowerer::melNode;
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) t[{"", op}] = &Lowerer::windowNode;
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMin",
                         "ReduceMean", "ReduceProd", "ReduceSum", "ReduceSumSquare"})
    if (package::reduceOpCode(op)) t[{"", op}] = &Lowerer::reduceNode;
  t[{"", "LayerNormalization"}] = &Lowerer::layerNorm;
  t[{"", "ArgMax"}] = &Lowerer::argReduce;
  t[{"", "ArgMin"}] = &Lowerer::argReduce;
  t[{"", "CumSum"}] = &Lowerer::cumSumNode;
}

}  // namespace npuc::codegen::detail
