// canonicalize-pool: ceil_mode = 1 pooling becomes ceil_mode = 0 with the same output, when exact:
//  - when floor and ceil give the same output size, ceil_mode is simply cleared;
//  - else the end pads grow until floor gives the ceil size. Exact for MaxPool (padding never wins a maximum)
//    and for AveragePool with count_include_pad = 0 (the divisor counts input taps only); AveragePool with
//    count_include_pad = 1 is left alone (the grown padding would enter the divisor).
// Targets that forbid ceil_mode (DRP-AI) then see plain pads, which their pad rules check.
#include "ops/window.hpp"
#include "passes/passes.hpp"

namespace npuc::passes {

bool CanonicalizePoolPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  for (ir::NodeId id : g.order()) {
    ir::Node& n = g.node(id);
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
  return changed;
}

}  // namespace npuc::passes
