// canonicalize-pool: ceil_mode = 1 pooling becomes ceil_mode = 0 with the same output, when exact:
//  - when floor and ceil give the same output size, ceil_mode is simply cleared;
//  - else the end pads grow until floor gives the ceil size. Exact for MaxPool (padding never wins a maximum)
//    and for AveragePool with count_include_pad = 0 (the divisor counts input taps only); AveragePool with
//    count_include_pad = 1 is left alone (the grown padding would enter the divisor).
// Targets that forbid ceil_mode (DRP-AI) then see plain pads, which their pad rules check.
// A pool of a 1x1 window, stride 1 and no padding is its input (the mean or maximum of one value: torchvision's
// AdaptiveAvgPool2d((7, 7)) on a 7x7 map, as VGG exports it): its readers read the input.
#include "ir/rewriter.hpp"
#include "ops/window.hpp"
#include "passes/match.hpp"
#include "passes/passes.hpp"

#include <algorithm>

namespace npuc::passes {

namespace {

/// A MaxPool / AveragePool that copies its input: window 1, stride 1, no padding, one output used.
bool isIdentityPool(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain.empty() || (n.op != "MaxPool" && n.op != "AveragePool") || n.inputs.empty()) return false;
  if (n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue) return false;  // MaxPool's indices
  const ir::Type& xt = g.value(n.inputs[0]).type;
  if (!xt.isStatic() || xt.shape.size() < 3 || g.value(n.outputs[0]).type.shape != xt.shape) return false;
  auto ones = [&](const char* a) {
    const std::vector<int64_t> v = n.attrInts(a, std::vector<int64_t>{});
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
  };
  const std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>{});
  return ones("kernel_shape") && ones("strides") && ones("dilations") &&
         std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
}

}  // namespace

bool CanonicalizePoolPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  ir::Rewriter rw(g);
  for (ir::NodeId id : std::vector<ir::NodeId>(g.order())) {
    ir::Node& n = g.node(id);
    if (isIdentityPool(g, n) && !(graphBoundary(g, n.inputs[0]) && graphBoundary(g, n.outputs[0]))) {
      rw.replaceAllUses(n.outputs[0], n.inputs[0]);
      rw.eraseNode(id);
      continue;
    }
    if (!n.domain.empty() || (n.op != "MaxPool" && n.op != "AveragePool") || n.attrInt("ceil_mode", 0) == 0) continue;
    if (n.attrString("auto_pad", "NOTSET") != "NOTSET") continue;
    if (n.op == "MaxPool" && n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue) continue;  // indices
    const ir::Type& xt = g.value(n.inputs[0]).type;
    if (!xt.isStatic() || xt.shape.size() < 3) continue;
    std::vector<int64_t> spatial(xt.shape.begin() + 2, xt.shape.end());
    ops::Window c = ops::resolveWindow(n, spatial, {}, true), f = ops::resolveWindow(n, spatial, {}, false);
    if (c.out != f.out) {
      if (n.op == "AveragePool" && n.attrInt("count_include_pad", 0) != 0) continue;
      std::vector<int64_t> pads = c.pad_begin;
      for (size_t i = 0; i < spatial.size(); ++i) {
        int64_t span = (c.out[i] - 1) * c.stride[i] + (c.kernel[i] - 1) * c.dilation[i] + 1;
        int64_t extra = span - (spatial[i] + c.pad_begin[i] + c.pad_end[i]);
        pads.push_back(c.pad_end[i] + std::max<int64_t>(extra, 0));
      }
      n.attrs["pads"] = ir::Attr(pads);
    }
    n.attrs["ceil_mode"] = ir::Attr(int64_t{0});
    changed = true;
  }
  rw.finish();
  return changed || rw.changed();
}

}  // namespace npuc::passes
