// Lowering of the reductions (mirrors engine/ops_reduce.cpp): Reduce* (the reduce layer) and
// LayerNormalization.
#include "codegen/lowerer.hpp"

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

/// LayerNormalization: scale and bias (constants, numpy-broadcast to the normalised dims) expanded to float32
/// [inner] in the weight space, as the reference engine expands them.
void Lowerer::layerNorm(const ir::Node& n) {
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

void Lowerer::reduceNode(const ir::Node& n) { reduce(n, *package::reduceOpCode(n.op)); }

void registerReduceLowerings(LowerTable& t) {
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMin",
                         "ReduceMean", "ReduceProd", "ReduceSum", "ReduceSumSquare"})
    if (package::reduceOpCode(op)) t[{"", op}] = &Lowerer::reduceNode;
  t[{"", "LayerNormalization"}] = &Lowerer::layerNorm;
}

}  // namespace npuc::codegen::detail
