// Schemas of reductions (ReduceX with axes/keepdims/noop_with_empty_axes) and ArgMax/ArgMin.
#include "ops/registry.hpp"

#include "kernels/layers.hpp"
#include "ops/shape_util.hpp"


namespace npuc::ops {

void registerReduceOps(Registry& r) {
  for (const char* name : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                           "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"}) {
    OpSchema s;
    s.name = name;
    s.min_inputs = 1;
    s.max_inputs = 2;
    s.doc = "reduce over 'axes' (keepdims)";
    s.infer = [](InferContext& c) {
      const int64_t rank = c.inputRank(0);
      std::vector<int64_t> axes;
      if (!reduceAxesFromInput(c.node(), c.opset())) axes = c.node().attrInts("axes");
      else if (c.hasInput(1)) axes = c.inputInts(1);
      std::vector<bool> reduced;
      int64_t bad = 0;
      if (!reducedDims(c.node(), axes, rank, reduced, bad)) c.error("axis {} is out of range for rank {}", bad, rank);
      const Shape& in = c.inputShape(0);
      c.setOutput(0, c.inputDType(0), kernels::reducedShape(in, reduced, c.node().attrInt("keepdims", 1) != 0));
    };
    r.add(s);
  }
  for (const char* name : {"ArgMax", "ArgMin"}) {
    OpSchema s;
    s.name = name;
    s.doc = "index of the max/min along 'axis' (keepdims, select_last_index)";
    s.infer = [](InferContext& c) {
      Shape in = c.inputShape(0);
      int64_t axis = c.node().attrInt("axis", 0);
      if (!normalizeAxis(axis, static_cast<int64_t>(in.size()))) c.error("axis {} is out of range", axis);
      if (c.node().attrInt("keepdims", 1)) in[static_cast<size_t>(axis)] = 1;
      else in.erase(in.begin() + axis);
      c.setOutput(0, DType::kI64, in);
    };
    r.add(s);
  }
  r.add(makeSchema("MeanVarianceNormalization", 1, 1, "(x − mean) / (std + 1e-9) over 'axes' (default 0, 2, 3)",
                   [](InferContext& c) {
    if (!isFloat(c.inputDType(0))) c.unsupported("input 0 is {}; only floating-point is supported", dtypeName(c.inputDType(0)));
    const int64_t rank = c.inputRank(0);
    for (int64_t a : c.node().attrInts("axes", {0, 2, 3}))
      if (!normalizeAxis(a, rank)) c.error("axis {} is out of range for rank {}", a, rank);
    c.setOutput(0, c.inputDType(0), c.inputShape(0));
  }));
}

}  // namespace npuc::ops
