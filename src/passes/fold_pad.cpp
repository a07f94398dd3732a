// fold-pad: a constant-mode Pad in front of a Conv or pooling becomes that op's own padding, when exact:
//  - Conv: pad value 0 (Conv pads with zeros);
//  - AveragePool without pads of its own: the padded zeros were averaged, so count_include_pad = 1;
//  - MaxPool: a pad value of -inf becomes plain pads (MaxPool ignores its padding); any other value v, on a
//    MaxPool without pads of its own, becomes ai.npuc.MaxPool with pads and pad_value = v (padded taps count as
//    v, exactly what the Pad produced) — the fused form DRP-AI documents for Pad + MaxPool.
// Only spatial pads fold (batch and channel pads must be 0), and only when the Pad has no other consumer.
#include "passes/match.hpp"
#include "passes/passes.hpp"

#include <algorithm>
#include <cmath>

namespace npuc::passes {

bool FoldPadPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  Uses uses = g.uses();
  std::vector<ir::NodeId> order = g.order();
  for (ir::NodeId id : order) {
    if (!g.hasNode(id)) continue;
    ir::Node& n = g.node(id);
    bool conv = n.op == "Conv", avg = n.op == "AveragePool", max = n.op == "MaxPool";
    if (!(conv || avg || max) || !n.domain.empty() || n.attrString("auto_pad", "NOTSET") != "NOTSET") continue;
    const ir::Node* pad = producer(g, n.inputs[0], "Pad");
    if (!pad || !singleUse(g, uses, n.inputs[0]) || pad->attrString("mode", "constant") != "constant") continue;
    std::vector<int64_t> pads;
    double value = 0;
    if (g.opset < 11) {
      pads = pad->attrInts("pads");
      value = pad->attrFloat("value", 0.0f);
    } else {
      if (!pad->hasInput(1) || !g.value(pad->inputs[1]).isConstant() || pad->hasInput(3)) continue;
      pads = g.value(pad->inputs[1]).constant->toInt64();
      if (pad->hasInput(2)) {
        auto v = constScalar(g, pad->inputs[2]);
        if (!v) continue;
        value = *v;
      }
    }
    size_t rank = pads.size() / 2;
    if (rank < 3 || pads[0] || pads[1] || pads[rank] || pads[rank + 1]) continue;
    bool exact = (conv && value == 0.0) || (max && std::isinf(value) && value < 0);
    std::vector<int64_t> own = n.attrInts("pads", std::vector<int64_t>(2 * (rank - 2), 0));
    bool own_zero = std::all_of(own.begin(), own.end(), [](int64_t p) { return p == 0; });
    if (avg) exact = value == 0.0 && own_zero;
    bool pad_value = false;
    if (max && !exact && own_zero && n.attrInt("ceil_mode", 0) == 0 && !std::isnan(value) &&
        (n.outputs.size() < 2 || n.outputs[1] == ir::kNoValue))
      exact = pad_value = true;
    if (!exact || own.size() != 2 * (rank - 2)) continue;
    for (size_t i = 0; i < rank - 2; ++i) {
      own[i] += pads[2 + i];
      own[i + rank - 2] += pads[rank + 2 + i];
    }
    ir::ValueId x = pad->inputs[0], padded = n.inputs[0];
    g.removeNode(pad->id);
    g.removeValue(padded);
    n.inputs[0] = x;
    n.attrs["pads"] = ir::Attr(own);
    if (avg) n.attrs["count_include_pad"] = ir::Attr(int64_t{1});
    if (pad_value) {
      n.domain = "ai.npuc";
      n.attrs["pad_value"] = ir::Attr(static_cast<float>(value));
      n.attrs["fused"] = ir::Attr(std::vector<std::string>{"Pad", "MaxPool"});
    }
    changed = true;
    uses = g.uses();
  }
  return changed;
}

}  // namespace npuc::passes
