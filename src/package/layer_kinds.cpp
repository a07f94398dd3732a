// The layer kinds of layer_kinds.def (package.hpp): their table, the lookups by kind, and the reference page of
// kinds and operation codes (docs/package-format.md).
#include "package/package.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace npuc::package {

const std::vector<LayerKindInfo>& layerKinds() {
  static const std::vector<LayerKindInfo> k = {
#define NPUC_LAYER_KIND(E, code, name, engine, in_min, in_max, words, per_rank, cls, in_doc, param_doc) \
  {LayerKind::E, name, EngineClass::engine, in_min, in_max, words, per_rank, KindClass::cls, in_doc, param_doc},
#include "package/layer_kinds.def"
#undef NPUC_LAYER_KIND
  };
  return k;
}

const LayerKindInfo* layerKindInfo(LayerKind k) {
  static const std::vector<const LayerKindInfo*> by_code = [] {
    std::vector<const LayerKindInfo*> v;
    for (const LayerKindInfo& i : layerKinds()) {
      size_t c = static_cast<size_t>(i.kind);
      if (v.size() <= c) v.resize(c + 1, nullptr);
      v[c] = &i;
    }
    return v;
  }();
  size_t c = static_cast<size_t>(k);
  return c < by_code.size() ? by_code[c] : nullptr;
}

const char* layerKindName(LayerKind k) {
  const LayerKindInfo* i = layerKindInfo(k);
  return i ? i->name : nullptr;
}

Engine layerEngine(LayerKind k) {
  const LayerKindInfo* i = layerKindInfo(k);
  return i && i->engine == EngineClass::Vector ? Engine::kVector : Engine::kMac;
}

bool layerAllowedOn(LayerKind k, Engine e) {
  const LayerKindInfo* i = layerKindInfo(k);
  if (!i) return false;
  return i->engine == EngineClass::Either || (i->engine == EngineClass::Mac) == (e == Engine::kMac);
}

namespace {
/// The doc column of a unary op's parameters: "alpha, beta" as the ONNX attributes they come from, or "—".
std::string unaryParamsDoc(const char* alpha, const char* beta) {
  if (!*alpha) return "—";
  return *beta ? fmt::format("{}, {}", alpha, beta) : std::string(alpha);
}
}  // namespace

std::string layerKindsMarkdown() {
  std::string md = "| code | kind | engine | inputs | parameter words |\n|---|---|---|---|---|\n";
  for (const LayerKindInfo& k : layerKinds()) {
    const char* engine = k.engine == EngineClass::Mac ? "MAC" : k.engine == EngineClass::Vector ? "vector" : "MAC or vector";
    md += fmt::format("| {} | `{}` | {} | {} | {} |\n", static_cast<int>(k.kind), k.name, engine, k.inputs_doc, k.params_doc);
  }
  md += "\nOperations of `unary` layers (word 0), with what `alpha` and `beta` (words 1 and 2) are:\n\n| code | op | alpha, beta |\n|---|---|---|\n";
  int code = 0;
#define NPUC_UNARY_OP(E, name, alpha, beta) \
  md += fmt::format("| {} | {} | {} |\n", code++, name, unaryParamsDoc(alpha, beta));
#include "kernels/elementwise_ops.def"
#undef NPUC_UNARY_OP
  md += "\nOperations of `binary` layers (word 0):\n\n| code | op |\n|---|---|\n";
  code = 0;
#define NPUC_BINARY_OP(E, name) md += fmt::format("| {} | {} |\n", code++, name);
#include "kernels/elementwise_ops.def"
#undef NPUC_BINARY_OP
  md += "\nOperations of `reduce` layers (word 0):\n\n| code | op |\n|---|---|\n";
  code = 0;
#define NPUC_REDUCE_OP(E, name) md += fmt::format("| {} | {} |\n", code++, name);
#include "kernels/elementwise_ops.def"
#undef NPUC_REDUCE_OP
  return md;
}

}  // namespace npuc::package
