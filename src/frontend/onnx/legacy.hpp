// Canonicalisation of models of ai.onnx opsets 1-6 into the forms the rest of npuc understands.
#pragma once

#include "ir/graph.hpp"

namespace npuc::onnx_io {

/// Rewrites legacy broadcasting (binary ops with broadcast=1 and 'axis'; Gemm 'broadcast'; PRelu per-channel
/// slopes) into numpy broadcasting by reshaping the broadcast operand, and drops attributes that no longer
/// mean anything (consumed_inputs, is_test).
/// Works node by node (call in topological order, after the node's inputs have types); may add Reshape nodes,
/// so re-sort the graph afterwards.
void canonicalizeLegacyNode(ir::Graph& g, ir::NodeId id);

}  // namespace npuc::onnx_io
