// A TensorFlow op npuc lacks, taken by a custom-op plugin (docs/custom-ops.md, the RKNN guide's `framework:
// tensorflow` flow): a node whose op type is the name of exactly one registered custom op becomes a node of that op.
// Its tensors are passed as TensorFlow holds them (NHWC feature maps: the plugin computes TensorFlow's op), its inputs
// in the node's order (the op's tensor inputs, then the constant inputs its parameters read with `input: N`), and
// its attributes under their own names (bool as 0/1, int, float, string, list of int / float), of which the op's
// definition reads the parameters it declares.
#include "frontend/tf/importer.hpp"

#include "ops/registry.hpp"
#include "plugin/plugin.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

namespace npuc::tf_io {

const plugin::CustomOp* customOpNamed(const std::string& op) {
  const plugin::CustomOp* found = nullptr;
  for (const plugin::CustomOp* c : plugin::registered()) {
    if (c->name() != op) continue;
    if (found)
      fail(ErrorCode::kInvalidInput, "op '{}': two registered custom ops have this name ({} and {}); a TensorFlow node "
                                     "names no domain, so register only one", op, found->label(), c->label());
    found = c;
  }
  return found;
}

void Importer::customOp(const tf::NodeDef& n, const plugin::CustomOp& op) {
  std::vector<ir::ValueId> ins;
  for (int i = 0; i < numInputs(n); ++i) ins.push_back(asTf(in(n, i)));
  std::map<std::string, ir::Attr> attrs;
  for (const auto& [name, a] : n.attr()) {
    switch (a.value_case()) {
      case tf::AttrValue::kB: attrs[name] = ir::Attr(int64_t{a.b()}); break;
      case tf::AttrValue::kI: attrs[name] = ir::Attr(int64_t{a.i()}); break;
      case tf::AttrValue::kF: attrs[name] = ir::Attr(a.f()); break;
      case tf::AttrValue::kS: attrs[name] = ir::Attr(std::string(a.s())); break;
      case tf::AttrValue::kList:
        if (a.list().f_size()) attrs[name] = ir::Attr(std::vector<float>(a.list().f().begin(), a.list().f().end()));
        else if (a.list().i_size()) attrs[name] = ir::Attr(std::vector<int64_t>(a.list().i().begin(), a.list().i().end()));
        break;
      default: break;  // types, shapes, tensors: TensorFlow's bookkeeping (T, dtype), not parameters
    }
  }
  std::vector<ir::ValueId> outs;
  for (int k = 0; k < op.numOutputs(); ++k)
    outs.push_back(g_->addValue(g_->uniqueValueName(tensorName(n.name(), k))).id);
  ir::Node& node = g_->addNode(n.op(), n.name(), std::move(ins), outs);
  node.domain = op.domain();  // (set before its types are inferred: the op is found by domain and name)
  node.attrs = std::move(attrs);
  ops::inferNodeTypes(*g_, node.id);
  for (int k = 0; k < op.numOutputs(); ++k) setOut(k, outs[static_cast<size_t>(k)], false, g_->value(outs[static_cast<size_t>(k)]).type.dtype);
}

}  // namespace npuc::tf_io
