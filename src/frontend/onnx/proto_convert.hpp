// Conversions between ONNX protobuf messages and IR pieces (tensors, types, attributes). Internal to the
// ONNX frontend.
#pragma once

#include "ir/graph.hpp"

#include <onnx/onnx_pb.h>

#include <filesystem>

namespace npuc::onnx_io {

/// Decodes a TensorProto (raw or typed fields, external data relative to base_dir), validating sizes.
Tensor tensorFromProto(const onnx::TensorProto& t, const std::filesystem::path& base_dir);
void tensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto& out);
/// Type from a TypeProto; `allow_unknown` keeps missing/ symbolic dims as -1 instead of failing.
ir::Type typeFromProto(const onnx::TypeProto& t, const std::string& what, bool allow_unknown = false);
void typeToProto(const ir::Type& t, onnx::TypeProto& out);
ir::Attr attrFromProto(const onnx::AttributeProto& a, const std::filesystem::path& base_dir);
void attrToProto(const std::string& name, const ir::Attr& a, onnx::AttributeProto& out);

}  // namespace npuc::onnx_io
