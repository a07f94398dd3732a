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
/// Whether a custom node's outputs fit a package's custom layer: output 0 is used and no other is.
bool customOutputsFitAPackage(const ir::Node& n);
/// The graph's constant input i of n, or nullptr.
const Tensor* constantInput(const ir::Graph& g, const ir::Node& n, int i);

}  // namespace npuc::ops
