// inline-if: an If whose condition is a constant becomes the nodes of the branch it takes. The branch's values get
// names unique in the graph, its nodes the If's name as a prefix, its captures are the If's trailing inputs, and the
// If's outputs are replaced by the branch's (the model's output names kept). The common exported case: a traced shape
// check; after it the model translates as if the If had never been there.
#include "ir/rewriter.hpp"
#include "passes/passes.hpp"
#include "support/error.hpp"

#include <map>

namespace npuc::passes {

namespace {

void inlineBranch(ir::Rewriter& rw, ir::NodeId if_id, const std::string& attr) {
  ir::Graph& g = rw.graph();
  const ir::Node if_node = g.node(if_id);  // a copy: nodes are added below
  const ir::Graph& body = *if_node.attrGraph(attr);
  std::map<ir::ValueId, ir::ValueId> map;
  auto caps = ir::captureInputs(if_node, attr);
  const size_t first = body.inputs().size() - static_cast<size_t>(body.num_captures);
  if (first != 0) fail(ErrorCode::kInternal, "{}: attribute '{}' takes formal inputs", if_node.label(), attr);
  for (size_t j = 0; j < caps.size(); ++j) map[body.inputs()[first + j]] = if_node.inputs[static_cast<size_t>(caps[j])];
  auto mapped = [&](ir::ValueId v) -> ir::ValueId {
    if (v == ir::kNoValue) return v;
    if (auto it = map.find(v); it != map.end()) return it->second;
    const ir::Value& bv = body.value(v);
    ir::ValueId nv = bv.isConstant() ? g.addConstant(g.uniqueValueName(bv.name), *bv.constant).id
                                     : g.addValue(g.uniqueValueName(bv.name), bv.type).id;
    map[v] = nv;
    return nv;
  };
  for (ir::NodeId id : body.order()) {
    const ir::Node& bn = body.node(id);
    std::vector<ir::ValueId> ins, outs;
    for (ir::ValueId v : bn.inputs) ins.push_back(mapped(v));
    for (ir::ValueId v : bn.outputs) outs.push_back(mapped(v));
    ir::Node& nn = rw.addNode(bn.op, if_node.name + "/" + bn.name, std::move(ins), std::move(outs), bn.domain);
    nn.attrs = bn.attrs;
    nn.merged_ops = bn.merged_ops;
    nn.merged_nodes = bn.merged_nodes;
  }
  std::vector<ir::ValueId> results;
  for (ir::ValueId o : body.outputs()) results.push_back(mapped(o));
  if (results.size() != if_node.outputs.size())
    fail(ErrorCode::kInvalidInput, "{}: attribute '{}' has {} outputs, the node {}", if_node.label(), attr, results.size(),
         if_node.outputs.size());
  for (size_t i = 0; i < results.size(); ++i)
    if (if_node.outputs[i] != ir::kNoValue) rw.replaceAllUses(if_node.outputs[i], results[i]);
  rw.eraseNode(if_id);
}

}  // namespace

bool InlineIfPass::run(ir::Graph& g, PassContext&) {
  ir::Rewriter rw(g);
  std::vector<ir::NodeId> order = g.order();
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    if (n.op != "If" || !n.domain.empty() || !n.hasInput(0)) continue;
    const ir::Value& cond = g.value(n.inputs[0]);
    if (!cond.isConstant() || cond.constant->dtype() != DType::kBool || cond.constant->numel() != 1) continue;
    std::string attr = cond.constant->data<bool>()[0] ? "then_branch" : "else_branch";
    if (!n.attrGraph(attr)) continue;  // the verifier / shape function names what is missing
    inlineBranch(rw, id, attr);
  }
  if (rw.changed()) rw.finish();
  return rw.changed();
}

}  // namespace npuc::passes
