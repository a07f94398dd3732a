// Schemas of reductions (ReduceX with axes/keepdims/noop_with_empty_axes) and ArgMax/ArgMin.
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

#include <set>

namespace npuc::ops {

/// Normalised, sorted reduction axes of a Reduce* node; empty when all axes are reduced or (noop) none.
std::vector<int64_t> reduceAxes(InferContext& c, bool& noop) {
  int64_t rank = c.inputRank(0);
  std::vector<int64_t> axes;
  bool from_input = c.node().op == "ReduceSum" ? c.opset() >= 13 : c.opset() >= 18;
  if (from_input) {
    if (c.hasInput(1)) axes = c.inputInts(1);
  } else {
    axes = c.node().attrInts("axes");
  }
  noop = axes.empty() && c.node().attrInt("noop_with_empty_axes", 0) != 0;
  if (axes.empty() && !noop)
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  std::set<int64_t> s;
  for (int64_t a : axes) {
    if (!normalizeAxis(a, rank)) c.error("axis {} is out of range for rank {}", a, rank);
    s.insert(a);
  }
  return {s.begin(), s.end()};
}

void registerReduceOps(Registry& r) {
  for (const char* name : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                           "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"}) {
    OpSchema s;
    s.name = name;
    s.min_inputs = 1;
    s.max_inputs = 2;
    s.doc = "reduce over 'axes' (keepdims)";
    s.infer = [](InferContext& c) {
      bool noop = false;
      auto axes = reduceAxes(c, noop);
      const Shape& in = c.inputShape(0);
      bool keep = c.node().attrInt("keepdims", 1) != 0;
      Shape out;
      for (size_t i = 0; i < in.size(); ++i) {
        bool red = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
        if (!red) out.push_back(in[i]);
        else if (keep) out.push_back(1);
      }
      c.setOutput(0, c.inputDType(0), out);
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
}

}  // namespace npuc::ops
