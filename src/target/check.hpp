// Availability check: every node of a graph against a target's rules, and the supported-ops page.
#pragma once

#include "ir/graph.hpp"
#include "target/expr.hpp"
#include "target/target.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::target {

/// Facts the rules can read about a node: op, shapes (rank, batch, in_c/in_h/in_w, out_c/out_h/out_w),
/// window geometry (kernel_h/w, stride_h/w, dilation_h/w, pad_t/l/b/r in ONNX order, pad_kind, group,
/// depthwise), matrix sizes (m, n, k), a normalised axis, and the node's int and string attributes.
/// docs/targets.md lists them all.
Facts nodeFacts(const ir::Graph& g, const ir::Node& n);
/// The dims nodeFacts reads from a static shape (facts <p>_rank, _elems, _c, _w, _h): c = dim 1 (rank >= 2), w = the
/// last dim (rank >= 3), h = the one before it (rank >= 4, else 1); 0 where a fact is absent.
struct ShapeDims {
  int64_t rank = 0, elems = 0, c = 0, w = 0, h = 0;
};
ShapeDims shapeDims(const Shape& s);
/// A float attribute as a fact: its shortest decimal form ("1", "0.5", "6"), "inf" / "-inf" beyond float's range
/// (rules compare it as a string: `alpha == '1'`).
std::string floatFact(float x);
/// Whether nodeFacts derives window geometry (kernel, stride, pads) for this op.
bool hasWindowFacts(const std::string& op);
/// Every fact nodeFacts derives (for some node), the node's own attributes aside: the vocabulary a target's rules
/// are checked against when the target is loaded.
const std::set<std::string>& derivedFactNames();

/// Where nodes sit relative to the model's boundary (facts at_model_input / at_model_output): at_input holds the
/// nodes whose input 0 comes from the model's inputs (or constants) through transparent nodes only, at_output those
/// whose output 0 reaches only model outputs through them. Transparent: data movement (Transpose, Reshape, Flatten,
/// Squeeze, Unsqueeze, Identity, Cast) and pre/post-processing nodes (those reading or writing a value stored exactly
/// as typed).
struct BoundaryFacts {
  std::set<ir::NodeId> at_input, at_output;
};
BoundaryFacts boundaryFacts(const ir::Graph& g);
/// The facts of an activation fused into a MAC node n (ai.npuc Conv / Gemm / MatMul, attribute `activation` = act):
/// those the activation's own node had — op, its input and output shape (n's output), Clip's min and max, alpha.
Facts activationFacts(const ir::Graph& g, const ir::Node& n, const std::string& act);

struct Violation {
  int index = 0;  // position in the (optimized) graph's node order
  std::string node, op, rule_id, rule, actual, fix;
};

/// Every rule every node breaks (an unsupported op is one row). Empty when the graph is supported. `engines`: node
/// name -> the engine the user placed it on (layers groups, Target::group_engines); the fact `engine` is that, or the
/// engine the op's table names.
std::vector<Violation> checkGraph(const ir::Graph& g, const Target& t, const std::map<std::string, std::string>& engines = {});

/// The supported-operator page of a target, in Markdown (docs/supported-ops-<name>.md is generated from it).
std::string supportedOpsMarkdown(const Target& t);

}  // namespace npuc::target
