// Conversions between ONNX protobuf messages and IR pieces (tensors, types, attributes). Internal to the
// ONNX frontend.
#pragma once

#include "ir/graph.hpp"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace npuc::onnx_io {

/// Decodes a TensorProto (raw or typed fields, external data relative to base_dir), validating sizes.
Tensor tensorFromProto(const onnx::TensorProto& t, const std::filesystem::path& base_dir);
void tensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto& out);
/// Type from a TypeProto; `allow_unknown` keeps missing/ symbolic dims as -1 instead of failing.
ir::Type typeFromProto(const onnx::TypeProto& t, const std::string& what, bool allow_unknown = false);
void typeToProto(const ir::Type& t, onnx::TypeProto& out);
ir::Attr attrFromProto(const onnx::AttributeProto& a, const std::filesystem::path& base_dir);
void attrToProto(const std::string& name, const ir::Attr& a, onnx::AttributeProto& out);

/// A name of the enclosing scope -> its value (the subgraph import creates a capture for a name it does not define).
/// `reader` says who reads it, relative to that scope ("node 'if' (If): attribute 'then_branch': node 'add' (Add)"),
/// for the error when no scope defines the name.
using ScopeResolver = std::function<ir::ValueId(const std::string& name, const std::string& reader)>;

/// Converts the attributes of ONNX node `n` onto `node` (subgraph.cpp). A GRAPH attribute becomes a subgraph (nested at
/// most ir::kMaxSubgraphDepth deep: `depth` is the node's graph's) whose outer names are resolved by `resolve` and
/// appended to node.inputs as its captures, in attribute-name order; GRAPHS attributes are refused.
void convertAttributes(const onnx::NodeProto& n, const std::string& label, ir::Node& node, const ScopeResolver& resolve,
                       int opset, int depth, const std::filesystem::path& base_dir);

/// Writes subgraph `g` as a GraphProto (export.cpp): its captures named `capture_names` (the outer values' names), its
/// other values renamed where a name is in `taken` (the enclosing scopes' names: ONNX names are unique model-wide).
void subgraphToProto(const ir::Graph& g, const std::vector<std::string>& capture_names, std::set<std::string>& taken,
                     onnx::GraphProto& out);

}  // namespace npuc::onnx_io
