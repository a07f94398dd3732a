// specialize-bodies: each If / Loop / Scan body typed for what its node passes it, then resolved like a top-level
// graph. Formal inputs take the node's types (Loop: the iteration number int64, the condition bool, the carried
// values; Scan: the states and one step of each scanned input), captures the types of the values they stand for,
// and a capture of a constant becomes that constant inside the body; then shapes are inferred and constants folded in
// it (nested bodies too). The translator needs the static shapes (control layers, docs/package-format.md), and the
// engine runs the same body.
//
// A Loop or Scan body is specialized only when every carried value / state comes back with the type it entered with:
// otherwise its types (and what was folded from them) would hold for the first step only, and it stays as it was.
#include "ir/rewriter.hpp"
#include "ops/control_flow.hpp"
#include "ops/registry.hpp"
#include "passes/passes.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

namespace npuc::passes {

namespace {

/// The types node n passes to the formal inputs of body `attr`, or false when one is not static (or the node is
/// malformed: the shape function names that).
bool formalTypes(const ir::Graph& g, const ir::Node& n, const std::string& attr, const ir::Graph& body,
                 std::vector<ir::Type>& formal) {
  auto typeOf = [&](int i) { return n.hasInput(i) ? g.value(n.inputs[static_cast<size_t>(i)]).type : ir::Type{}; };
  const int own = ir::numOwnInputs(n);
  if (n.op == "Loop") {
    if (own < 2) return false;
    formal = {ir::makeType(DType::kI64, {}), ir::makeType(DType::kBool, {})};
    for (int i = 2; i < own; ++i) formal.push_back(typeOf(i));
  } else if (n.op == "Scan") {
    const int64_t num_scan = n.attrInt("num_scan_inputs", 0);
    const int state = own - static_cast<int>(num_scan);
    const int scans = static_cast<int>(n.outputs.size()) - state;
    if (num_scan < 1 || state < 0 || scans < 0 || g.opset < 9) return false;
    ops::ScanAttrs a;
    try {
      a = ops::scanAttrs(n, own, scans);
    } catch (const Error&) {
      return false;
    }
    for (int i = 0; i < state; ++i) formal.push_back(typeOf(i));
    for (int j = 0; j < num_scan; ++j) {
      ir::Type t = typeOf(state + j);
      int64_t axis = a.input_axes[static_cast<size_t>(j)];
      if (!t.isStatic()) return false;
      if (axis < 0) axis += static_cast<int64_t>(t.shape.size());
      if (axis < 0 || axis >= static_cast<int64_t>(t.shape.size())) return false;
      t.shape.erase(t.shape.begin() + axis);
      formal.push_back(t);
    }
  }
  if (ir::numFormalInputs(body) != static_cast<int>(formal.size())) return false;
  for (const ir::Type& t : formal)
    if (!t.isStatic() || t.dtype == DType::kUndefined) return false;
  return true;
}

/// Loop / Scan: each carried value (state) leaves the body with the type it entered with.
bool typesHoldEveryStep(const ir::Node& n, const ir::Graph& b, const std::vector<ir::Type>& formal) {
  int first_in = 0, first_out = 0, count = 0;
  if (n.op == "Loop") first_in = 2, first_out = 1, count = static_cast<int>(formal.size()) - 2;
  else if (n.op == "Scan") count = ir::numOwnInputs(n) - static_cast<int>(n.attrInt("num_scan_inputs", 0));
  if (static_cast<int>(b.outputs().size()) < first_out + count) return false;
  for (int j = 0; j < count; ++j)
    if (!(b.value(b.outputs()[static_cast<size_t>(first_out + j)]).type == formal[static_cast<size_t>(first_in + j)])) return false;
  return true;
}

}  // namespace

bool SpecializeBodiesPass::run(ir::Graph& g, PassContext& ctx) {
  bool changed = false;
  for (ir::NodeId id : g.order()) {
    ir::Node& n = g.node(id);
    if (!n.domain.empty() || (n.op != "If" && n.op != "Loop" && n.op != "Scan")) continue;
    for (auto& [attr, body] : ir::subgraphs(n)) {
      std::vector<ir::Type> formal;
      if (!body || !formalTypes(g, n, attr, *body, formal)) continue;
      const std::vector<int> caps = ir::captureInputs(n, attr);
      std::string sig = "typed:";  // (never the \"\" of a body as imported)
      for (const ir::Type& t : formal) sig += t.str() + ";";
      for (int c : caps) {
        const ir::Value& v = g.value(n.inputs[static_cast<size_t>(c)]);
        sig += "|" + v.type.str() + (v.isConstant() ? fmt::format("=#{}", v.id) : "");
      }
      if (body->specialized_for == sig) continue;
      std::unique_ptr<ir::Graph> b = body->clone();
      const size_t nf = formal.size();
      for (size_t i = 0; i < nf; ++i) b->value(b->inputs()[i]).type = formal[i];
      ir::Rewriter rw(*b);
      for (size_t j = 0; j < caps.size() && nf + j < b->inputs().size(); ++j) {
        const ir::Value& outer = g.value(n.inputs[static_cast<size_t>(caps[j])]);
        const ir::ValueId bv = b->inputs()[nf + j];
        b->value(bv).type = outer.type;
        if (outer.isConstant()) rw.replaceAllUses(bv, b->addConstant(b->uniqueValueName(outer.name), *outer.constant).id);
      }
      if (rw.changed()) rw.finish();
      withContext(n.label() + ": attribute '" + attr + "'", [&] {
        PassManager({"infer-shapes", "fold-constants", "inline-if", "specialize-bodies", "dce"}).runToFixpoint(*b, ctx);
      });
      if (!typesHoldEveryStep(n, *b, formal)) continue;
      b->specialized_for = sig;
      n.attrs[attr] = ir::Attr(ir::GraphPtr(std::move(b)));
      changed = true;
    }
  }
  return changed;
}

}  // namespace npuc::passes
