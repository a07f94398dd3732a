// Kernels of reductions: ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceMax, ReduceMin, ReduceMean,
// ReduceProd, ReduceSum, ReduceSumSquare, and ArgMax / ArgMin.
//
// Numerics (the specification of these ops in npuc):
//  - every output element reduces its input elements one at a time in ascending input index order, on one
//    thread, so results never depend on the thread count;
//  - floating-point sums and products accumulate in double (float16/bfloat16 inputs are widened to float32
//    first) and are rounded to the output type once; ReduceLogSumExp subtracts the maximum before exponentiating;
//  - integer sums, products and sums of squares wrap modulo 2^64 and then convert to the output type (no UB);
//    integer ReduceMean divides the wrapped sum by the count (truncating); L2/LogSum/LogSumExp of integers are
//    computed in double and converted (truncating, saturating);
//  - an empty reduction gives the identity: 0 (Sum, SumSquare, L1, L2), 1 (Prod), -inf (Max, LogSum,
//    LogSumExp; lowest() for integers), +inf (Min; max() for integers), NaN (Mean of floats; 0 for integers);
//  - Max/Min propagate NaN; ArgMax/ArgMin treat NaN as the extreme value (the first one wins, the last one with
//    select_last_index).
// With noop_with_empty_axes and no axes, each element is reduced on its own (ReduceSumSquare squares, …).
#include "engine/elementwise_util.hpp"
#include "kernels/layer_templates.hpp"
#include "kernels/layers.hpp"
#include "kernels/typed.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::engine {

namespace {

using Red = kernels::ReduceOp;  // one list of reductions (kernels/elementwise_ops.def)

Red redOf(const KernelCall& c) {
  Red r = kernels::reduceOpFromName(c.node.op.c_str());
  if (r == Red::kCount) c.unsupported("no reduction kernel for {}", c.node.op);
  return r;
}

void reduceKernel(KernelCall& call) {
  computeHalfAsFloat(call, [](KernelCall& c) {
    const Tensor& x = c.input(0);
    Red red = redOf(c);
    int64_t rank = x.rank();
    std::vector<int64_t> axes;
    if (!ops::reduceAxesFromInput(c.node, c.opset)) axes = c.node.attrInts("axes");
    else if (c.has(1)) axes = c.input(1).toInt64();
    std::vector<bool> reduced;
    int64_t bad = 0;
    if (!ops::reducedDims(c.node, axes, rank, reduced, bad)) c.error("axis {} is out of range for rank {}", bad, rank);
    Tensor& y = c.alloc(0);
    if (x.dtype() == DType::kF32) {  // float32 (and float16, widened): the layer kernel packages run too
      kernels::reduce(static_cast<kernels::ReduceOp>(red), x.shape(), reduced, x.data<float>(), y.data<float>(), c.pool);
      return;
    }
    kernels::reduceTyped(static_cast<kernels::ReduceOp>(red), x.dtype(), x.shape(), reduced, x.raw(), y.raw());
  });
}

void argKernel(KernelCall& call) {
  const Tensor& x = call.input(0);
  bool is_max = call.node.op == "ArgMax";
  bool last = call.node.attrInt("select_last_index", 0) != 0;
  int64_t rank = x.rank();
  int64_t axis = call.node.attrInt("axis", 0);
  if (!ops::normalizeAxis(axis, rank)) call.error("axis {} is out of range for rank {}", call.node.attrInt("axis", 0), rank);
  int64_t n = x.dim(static_cast<int>(axis));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<int>(d));
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(static_cast<int>(d));
  Tensor& y = call.alloc(0);
  if (outer * inner == 0) return;
  if (n == 0) call.error("{} over an empty axis {}", call.node.op, axis);
  kernels::argReduce(is_max, last, x.dtype(), outer, n, inner, x.raw(), y.data<int64_t>());
}

// MeanVarianceNormalization (kernels::meanVarianceNormalization, in double), each element rounded once to its type.
void mvnKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  for (int64_t a : c.node.attrInts("axes", {0, 2, 3})) {
    ops::normalizeAxis(a, x.rank());
    reduced[static_cast<size_t>(a)] = true;
  }
  const std::vector<double> v = x.toDouble();
  std::vector<double> y(v.size());
  kernels::meanVarianceNormalization(x.shape(), reduced, v.data(), y.data());
  Tensor& out = c.alloc(0);
  kernels::castValues(DType::kF64, y.data(), out.dtype(), out.raw(), x.numel());
}

}  // namespace

void registerReduceKernels(KernelRegistry& r) {
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMin",
                         "ReduceMean", "ReduceProd", "ReduceSum", "ReduceSumSquare"})
    r.addFn(op, reduceKernel);
  r.addFn("ArgMax", argKernel);
  r.addFn("ArgMin", argKernel);
  r.addFn("MeanVarianceNormalization", mvnKernel);
}

}  // namespace npuc::engine
