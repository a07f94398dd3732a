// Caffe network + weights -> ir::Graph: the two files read and parsed (the text format's policy on unknown fields),
// then the Importer (importer.hpp) maps the network.
#include "frontend/caffe/caffe_io.hpp"
#include "frontend/caffe/importer.hpp"

#include "support/error.hpp"
#include "support/file.hpp"
#include "support/log.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fmt/format.h>

#include <climits>

namespace npuc::caffe_io {

namespace {

/// Collects TextFormat's diagnostics. Unknown fields of the net or of a layer are skipped: they configure training
/// (transform_param, loss_param, …) or layer types npuc refuses by type anyway. An unknown field inside one of the
/// parameter messages npuc reads is an error: it is a misspelling or a fork's extension that changes the layer.
class TextDiagnostics : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (error.empty()) error = fmt::format("line {}:{}: {}", line + 1, column + 1, message);
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    const bool outer = message.find("\"caffe.NetParameter\"") != std::string::npos ||
                       message.find("\"caffe.LayerParameter\"") != std::string::npos ||
                       message.find("\"caffe.V1LayerParameter\"") != std::string::npos ||
                       message.find("\"caffe.SaveOutputParameter\"") != std::string::npos;
    std::string where = fmt::format("line {}:{}: {}", line + 1, column + 1, message);
    if (outer) {
      skipped.push_back(std::move(where));
    } else if (error.empty()) {
      error = where + " (npuc reads this parameter message and does not know the field: it could change the layer's "
                      "meaning)";
    }
  }
  std::string error;
  std::vector<std::string> skipped;
};


caffe::NetParameter parseText(const std::string& text, const std::string& name) {
  caffe::NetParameter net;
  google::protobuf::TextFormat::Parser parser;
  TextDiagnostics diag;
  parser.RecordErrorsTo(&diag);
  parser.AllowUnknownField(true);
  bool ok = parser.ParseFromString(text, &net);
  if (!diag.error.empty() || !ok)
    fail(ErrorCode::kInvalidInput, "{}: not a valid Caffe network description: {}", name,
         diag.error.empty() ? "text format parsing failed" : diag.error);
  for (const std::string& s : diag.skipped) log::debug("caffe", "{}: skipped: {}", name, s);
  if (!diag.skipped.empty())
    log::info("caffe", "{}: {} field(s) npuc does not read were skipped (training settings or other layers' parameters)",
              name, diag.skipped.size());
  return net;
}

}  // namespace

const std::vector<std::string>& supportedLayers() {
  static const std::vector<std::string> kLayers = {
      "Input", "Convolution", "Deconvolution", "Pooling", "InnerProduct", "ReLU", "PReLU", "Sigmoid", "TanH",
      "Softmax", "Concat", "Eltwise", "BatchNorm", "Scale", "Dropout", "Flatten", "Reshape", "Split", "Slice", "LRN",
      "Permute", "ArgMax", "Bias", "Crop", "PriorBox", "DetectionOutput"};
  return kLayers;
}

std::unique_ptr<ir::Graph> importText(const std::string& prototxt, const std::string& prototxt_name, const void* weights,
                                      size_t weights_size, const std::string& weights_name,
                                      const onnx_io::ImportOptions& opts) {
  caffe::NetParameter net = parseText(prototxt, prototxt_name);
  caffe::NetParameter trained;
  if (weights_size > static_cast<size_t>(INT_MAX))
    fail(ErrorCode::kUnsupported, "{}: {} bytes, more than the 2 GiB a protobuf message can hold", weights_name, weights_size);
  if (!trained.ParseFromArray(weights, static_cast<int>(weights_size)))
    fail(ErrorCode::kInvalidInput, "{}: not a valid .caffemodel (protobuf parsing failed: truncated or corrupt file)", weights_name);
  return withContext(prototxt_name, [&] {
    auto g = Importer(net, trained, weights_name, opts).run();
    g->source = prototxt_name;
    return g;
  });
}

std::unique_ptr<ir::Graph> importFiles(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel,
                                       const onnx_io::ImportOptions& opts) {
  std::string text = readFileText(prototxt, kMaxPrototxtBytes, "a Caffe network description");
  std::vector<uint8_t> bytes = readFileBytes(caffemodel, INT_MAX, "a .caffemodel (protobuf's limit)");
  return importText(text, prototxt.string(), bytes.data(), bytes.size(), caffemodel.string(), opts);
}

}  // namespace npuc::caffe_io
