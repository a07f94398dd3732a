// A TensorFlow op npuc lacks, taken by a custom-op plugin (docs/custom-ops.md, the RKNN guide's `framework:
// tensorflow` flow): a node whose op type is the name of a custom op registered without a domain becomes its node.
// Its feature maps (rank 4) are passed channels-first, NCHW, as the guide's kernels see them ("the order of
// arrangement (default is NCHW)"), and its rank-4 outputs are taken as NCHW; other tensors as TensorFlow holds them.
// Its inputs come in the node's order (the op's tensor inputs, then the constant inputs its parameters read with
// `input: N`), its attributes under their own names (bool as 0/1, int, float, string, list of int / float), of which
// the op's definition reads the parameters it declares.
#include "frontend/tf/importer.hpp"

#include "ops/registry.hpp"
#include "plugin/plugin.hpp"

namespace npuc::tf_io {

const plugin::CustomOp* customOpNamed(const std::string& op) {
  // A TensorFlow node names no domain: the op registered without one (a `framework: tensorflow` definition has none).
  // An op of a domain is an ONNX model's (its tensors channels-first): never handed TensorFlow's NHWC tensors.
  return plugin::find("", op);
}

void Importer::customOp(const tf::NodeDef& n, const plugin::CustomOp& op) {
  std::vector<ir::ValueId> ins;
  for (int i = 0; i < numInputs(n); ++i) {
    Val& x = in(n, i);
    ins.push_back(!x.host && x.shape.size() == 4 ? asCf(x) : asTf(x));
  }
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
  for (int k = 0; k < op.numOutputs(); ++k) {  // (setOut takes a rank-4 value as channels-first, others as they are)
    const ir::Value& v = g_->value(outs[static_cast<size_t>(k)]);
    setOut(k, v.id, true, v.type.dtype);
  }
}

}  // namespace npuc::tf_io
