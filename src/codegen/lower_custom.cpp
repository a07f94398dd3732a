// Lowering of custom ops (plugins, docs/custom-ops.md): one `custom` layer reading the op's tensor inputs and, after
// them, its tensor parameters (copied to the weight space as the model holds them); the other parameters, the op and
// the plugin (file name, SHA-256, ABI version) go to the manifest's layer record.
#include "codegen/lowerer.hpp"

#include <cstring>

namespace npuc::codegen::detail {

void Lowerer::customNode(const ir::Node& n, const plugin::CustomOp& op) {
  int used = 0;
  for (size_t k = 0; k < n.outputs.size(); ++k)
    if (n.outputs[k] != ir::kNoValue) ++used;
  if (used != 1 || n.outputs.empty() || n.outputs[0] == ir::kNoValue)
    unsupported(n, "{}: a custom layer of a package has one output (the node has {})", op.label(), used);
  std::vector<int> ins;
  for (int i = 0; i < op.numInputs(); ++i) {
    ins.push_back(in(n, i));
    const ElemType t = vals_[static_cast<size_t>(ins.back())].type;
    const std::vector<DType> ok = op.portTypes(false, i);
    const bool conv = isFloat(t) && (std::count(ok.begin(), ok.end(), DType::kF32) || std::count(ok.begin(), ok.end(), DType::kF16));
    if (!std::count(ok.begin(), ok.end(), t) && !conv)
      unsupported(n, "{}: input {} is stored as {}, which the op does not take", op.label(), i, dtypeName(t));
  }
  package::CustomLayer rec;
  rec.op = op.name();
  rec.domain = op.domain();
  rec.library = op.library().file_name;
  rec.sha256 = op.library().sha256;
  rec.abi_version = op.library().abi_version;
  for (plugin::Param& p : ops::customParams(n, op, [&](int i) { return constIn(n, i); })) {
    package::CustomParam q;
    q.name = p.name;
    q.type = p.type;
    q.present = p.present;
    q.i = p.i;
    q.f = p.f;
    q.s = p.s;
    q.ints = p.ints;
    q.floats = p.floats;
    if (p.type == NPUC_PARAM_TENSOR && p.present) {
      const Tensor& t = p.tensor;
      if (!package::isPackageType(t.dtype()))
        unsupported(n, "{}: tensor parameter '{}' is {}, which a package cannot hold", op.label(), p.name, dtypeName(t.dtype()));
      std::vector<uint8_t> bytes(t.nbytes());
      if (!bytes.empty()) std::memcpy(bytes.data(), t.raw(), bytes.size());
      q.input = static_cast<int32_t>(ins.size());
      ins.push_back(weightVal(n.name + "/" + p.name, t.shape(), std::move(bytes), t.dtype()));
    }
    rec.params.push_back(std::move(q));
  }
  if (ins.empty() || ins.size() > package::kMaxRefs - 1)
    unsupported(n, "{}: {} tensor inputs (parameters included); a custom layer takes 1 to {}", op.label(), ins.size(),
                package::kMaxRefs - 1);
  LDesc& d = emit(n, LayerKind::kCustom, ins, outVal(n, n.outputs[0]));
  d.opexp = op.qualifiedName();
  d.custom = std::move(rec);
}

}  // namespace npuc::codegen::detail
