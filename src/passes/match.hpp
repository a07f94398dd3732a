// Small helpers for pattern-matching passes: producers, single uses, constant scalars.
#pragma once

#include "ir/graph.hpp"

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace npuc::passes {

using Uses = ir::UseMap;

/// The node producing `v` when it is an ONNX op named `op` (any op when empty), else null.
const ir::Node* producer(const ir::Graph& g, ir::ValueId v, const char* op = nullptr);
/// True when `v` is read by exactly one node input and is not a graph output.
bool singleUse(const ir::Graph& g, const Uses& uses, ir::ValueId v);
/// True when `v` is a graph input, a graph output or a constant (an identity node between two such keeps the
/// interface's names).
bool graphBoundary(const ir::Graph& g, ir::ValueId v);
/// The value of a one-element constant, as double.
std::optional<double> constScalar(const ir::Graph& g, ir::ValueId v);

/// Replaces the nodes `dead` (their outputs must be unused outside them) by one new node computing `out`.
ir::Node& replaceWith(ir::Graph& g, const std::vector<ir::NodeId>& dead, const std::string& op, const std::string& domain,
                      const std::string& name, std::vector<ir::ValueId> inputs, ir::ValueId out);

}  // namespace npuc::passes
