// Caffe -> IR: a network description (.prototxt) and its trained weights (.caffemodel) become an ir::Graph of
// ai.onnx ops with Caffe's semantics (docs/frontends.md, "Caffe"). The protobuf types stay inside this folder.
#pragma once

#include "frontend/onnx/onnx_io.hpp"
#include "ir/graph.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace npuc::caffe_io {

/// Reads both files and converts the network of its TEST phase. Input shapes come from the net (Input layers,
/// `input` + `input_shape` / `input_dim`); opts.input_shapes replaces them by name. Every error names the file and,
/// where there is one, the layer ("layer 'conv1' (Convolution)") and the rule broken.
std::unique_ptr<ir::Graph> importFiles(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel,
                                       const onnx_io::ImportOptions& opts = {});
/// Same, from the text of the description and the bytes of the weights; the names are used in messages.
std::unique_ptr<ir::Graph> importText(const std::string& prototxt, const std::string& prototxt_name,
                                      const void* weights, size_t weights_size, const std::string& weights_name,
                                      const onnx_io::ImportOptions& opts = {});

/// The layer types the importer maps, in the order of docs/frontends.md's table.
const std::vector<std::string>& supportedLayers();

}  // namespace npuc::caffe_io
