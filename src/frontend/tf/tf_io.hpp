// TensorFlow -> IR: a frozen GraphDef (.pb) becomes an ir::Graph of ai.onnx ops with TensorFlow's semantics
// (docs/frontends.md, "TensorFlow"). Activations are kept channels-first inside the graph; the graph's inputs and
// outputs keep the model's own (NHWC) shapes. The protobuf types stay inside this folder.
#pragma once

#include "frontend/onnx/onnx_io.hpp"
#include "ir/graph.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace npuc::tf_io {

/// Reads a frozen GraphDef and converts the part of it its outputs (the nodes no other node reads) depend on.
/// Placeholder shapes are the inputs' shapes: an unknown first dimension becomes opts.default_batch, and
/// opts.input_shapes replaces a shape by name. Every error names the file and, where there is one, the node
/// ("node 'conv1' (Conv2D)") and the field or rule broken.
std::unique_ptr<ir::Graph> importFile(const std::filesystem::path& path, const onnx_io::ImportOptions& opts = {});
/// (A `.pbtxt` file is read as the GraphDef's protobuf text form.)
/// Same, from the bytes of the file; `name` is used in messages.
std::unique_ptr<ir::Graph> importBytes(const void* data, size_t size, const std::string& name,
                                       const onnx_io::ImportOptions& opts = {});
/// Same, from the protobuf text form (`.pbtxt`).
std::unique_ptr<ir::Graph> importText(const std::string& text, const std::string& name,
                                      const onnx_io::ImportOptions& opts = {});

/// The op types the importer maps, in the order of docs/frontends.md's table.
const std::vector<std::string>& supportedOps();

}  // namespace npuc::tf_io
