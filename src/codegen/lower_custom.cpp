// Lowering of custom ops (plugins, docs/custom-ops.md): one `custom` layer reading the op's tensor inputs and, after
// them, its tensor parameters (copied to the weight space as the model holds them); the other parameters, the op and
// the plugin (file name, SHA-256, ABI version) go to the manifest's layer record.
#include "codegen/lowerer.hpp"

#include <cstring>

namespace npuc::codegen::detail {

namespace {
/// Whether s is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), which the
/// manifest (JSON text) records unchanged.
bool validUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const int n = (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (n < 0 || i + static_cast<size_t>(n) >= s.size()) return false;  // (the sequence's last byte is i + n)
    uint32_t cp = c & (0x3Fu >> n);
    for (int k = 1; k <= n; ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((b >> 6) != 0x2) return false;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<size_t>(n) + 1;
  }
  return true;
}
}  // namespace

void Lowerer::customNode(const ir::Node& n, const plugin::CustomOp& op) {
  const int n_out = ops::customPackageOutputs(n);
  if (n_out < 1)
    unsupported(n, "{}: a custom layer of a package writes the op's outputs up to the last the node uses; the node leaves "
                "one before it unnamed", op.label());
  std::vector<int> ins;
  for (int i = 0; i < op.numInputs(); ++i) {
    ins.push_back(in(n, i));
    const ElemType t = vals_[static_cast<size_t>(ins.back())].type;
    if (op.passType(i, t) == DType::kUndefined)
      unsupported(n, "{}: input {} is stored as {}, which the op does not take", op.label(), i, dtypeName(t));
  }
  package::CustomLayer rec;
  rec.op = op.name();
  rec.domain = op.domain();
  rec.library = op.library().file_name;
  rec.sha256 = op.library().sha256;
  rec.abi_version = op.library().abi_version;
  for (plugin::Param& p : ops::customParams(n, op, [&](int i) { return constIn(n, i); })) {
    if (p.type == NPUC_PARAM_STRING && !validUtf8(p.s))
      unsupported(n, "{}: string parameter '{}' is not UTF-8 text, which a manifest cannot record", op.label(), p.name);
    package::CustomParam q;
    static_cast<plugin::ParamValue&>(q) = p;
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
  if (ins.empty() || ins.size() + static_cast<size_t>(n_out) > package::kMaxRefs)
    unsupported(n, "{}: {} tensor inputs (parameters included) and {} outputs; a custom layer takes 1 to {} inputs and "
                "{} tensors in all", op.label(), ins.size(), n_out, package::kMaxRefs - 1, package::kMaxRefs);
  std::vector<int> outs;
  for (int k = 0; k < n_out; ++k) outs.push_back(outVal(n, n.outputs[static_cast<size_t>(k)]));
  LDesc& d = emit(n, LayerKind::kCustom, ins, outs[0]);
  d.more_outs.assign(outs.begin() + 1, outs.end());
  d.opexp = op.qualifiedName();
  d.custom = std::move(rec);
}

}  // namespace npuc::codegen::detail
