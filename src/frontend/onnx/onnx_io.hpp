// ONNX <-> IR. The protobuf types stay inside this folder; callers see only ir::Graph and Tensor.
#pragma once

#include "ir/graph.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace npuc::onnx_io {

struct ImportOptions {
  /// Fixes input shapes by name (`--input-shape name=1,3,224,224`); replaces the declared shape.
  std::map<std::string, Shape> input_shapes;
  /// The option that gave an entry of input_shapes, for messages (default "--input-shape").
  std::map<std::string, std::string> input_shape_origin;
  /// Value for a dynamic first (batch) dimension when no shape is given.
  int64_t default_batch = 1;
  /// Fail on dynamic dims other than the batch (true for the CLI; conformance passes shapes for every input).
  bool require_static_inputs = true;
};

/// Loads a model file (external-data weights resolved relative to its folder), runs ONNX shape inference,
/// validates it and converts it to the IR. Every error names the file and, where there is one, the node.
/// An import refused because the model holds ops npuc does not implement (kUnsupported): every such node, by its
/// position in the model's node list, so that reports can name each (node_idx, name, op_type).
class UnknownOpsError : public Error {
 public:
  struct Node {
    int index = 0;
    std::string name, op;  // op with its domain ("com.acme.Foo") outside ai.onnx
  };
  UnknownOpsError(std::string message, std::vector<Node> nodes) : Error(ErrorCode::kUnsupported, std::move(message)), nodes_(std::move(nodes)) {}
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  std::vector<Node> nodes_;
};

std::unique_ptr<ir::Graph> importFile(const std::filesystem::path& path, const ImportOptions& opts = {});
/// Same, from bytes; `name` is used in messages, `base_dir` to resolve external data.
std::unique_ptr<ir::Graph> importBytes(const void* data, size_t size, const std::string& name,
                                       const std::filesystem::path& base_dir, const ImportOptions& opts = {});

/// Serialised ONNX model (opset of the graph; constants as initializers; known shapes as value_info).
std::string exportBytes(const ir::Graph& g);
void exportFile(const ir::Graph& g, const std::filesystem::path& path);

/// Runs the ONNX checker (full check, with shape inference) on serialised model bytes; throws on failure.
void checkModelBytes(const std::string& bytes, const std::string& name);

/// Reads a serialised TensorProto (the ONNX test-data .pb files); returns the tensor and its name.
std::pair<std::string, Tensor> readTensorProtoFile(const std::filesystem::path& path);

/// Lowest and highest ai.onnx opset npuc imports. Opsets below 7 are canonicalised on import (legacy
/// broadcast attributes become numpy broadcasting), see legacy.cpp.
inline constexpr int kMinOpset = 1;
inline constexpr int kMaxOpset = 17;

}  // namespace npuc::onnx_io
