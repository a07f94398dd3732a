// Custom ops (plugins, docs/custom-ops.md) as the rest of the compiler sees them: the schema of a registered op
// (its shape function is the plugin's infer callback) and a node's parameters read from its attributes and constant
// inputs as the op's definition says.
#pragma once

#include "ir/graph.hpp"
#include "plugin/plugin.hpp"

#include <functional>
#include <vector>

namespace npuc::ops {

/// The registered custom op a node is an instance of, or nullptr (npuc's own ops are never custom).
const plugin::CustomOp* customOpOf(const ir::Node& n);
/// The parameters of a custom node in the definition's order: each from the attribute of its name or from the
/// constant input its definition names (`constant(i)` gives input i's value, or nullptr when it is not a constant).
/// Errors (kInvalidInput) name the node, the op and the parameter.
std::vector<plugin::Param> customParams(const ir::Node& n, const plugin::CustomOp& op,
                                        const std::function<const Tensor*(int)>& constant);
/// The outputs a package's custom layer for node n writes: the op's outputs 0 … the last the node uses (1 + its
/// index; the op's later ones the runtime computes into scratch); 0 when the node leaves one of them unnamed (a
/// package has no value to put there) or uses none.
int customPackageOutputs(const ir::Node& n);
/// The graph's constant input i of n, or nullptr.
const Tensor* constantInput(const ir::Graph& g, const ir::Node& n, int i);

}  // namespace npuc::ops
