// TensorFlow Lite -> IR: a .tflite file (a FlatBuffer of the format's schema, read with npuc's own tflite.fbs) becomes
// an ir::Graph of ai.onnx ops with TFLite's semantics (docs/frontends.md, "TensorFlow Lite"). Activations are kept
// channels-first inside the graph; its inputs and outputs keep the model's own (NHWC) shapes. Quantized tensors
// become QuantizeLinear / DequantizeLinear pairs with the model's own scales and zero points. The FlatBuffers types
// stay inside this folder.
#pragma once

#include "frontend/onnx/onnx_io.hpp"
#include "ir/graph.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace npuc::tflite_io {

/// Reads and verifies the file, then converts subgraph 0. opts.input_shapes replaces an input's shape by name (in
/// the model's own NHWC order). Every error names the file and, where there is one, the operator ("operator 3
/// (CONV_2D)") or the tensor, and the rule broken.
std::unique_ptr<ir::Graph> importFile(const std::filesystem::path& path, const onnx_io::ImportOptions& opts = {});
/// Same, from the bytes of a file; `name` is used in messages.
std::unique_ptr<ir::Graph> importBytes(const void* data, size_t size, const std::string& name,
                                       const onnx_io::ImportOptions& opts = {});

/// Whether the bytes look like a TFLite file: a FlatBuffer whose identifier (bytes 4..7) is "TFL3".
bool looksLikeTflite(const void* data, size_t size);

/// The builtin operators the importer maps, in the order of docs/frontends.md's table.
const std::vector<std::string>& supportedOps();

/// The operators subgraph 0 of a verified file uses, by name (a builtin's, or a CUSTOM operator's custom code), each
/// once, sorted: what a model needs, whether or not npuc imports it.
std::vector<std::string> operatorsUsed(const std::filesystem::path& path);

}  // namespace npuc::tflite_io
