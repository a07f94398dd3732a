// int8-affine (docs/numerics.md): the strategy of int8_affine.hpp.
#include "driver/numerics/int8_affine.hpp"

#include "driver/translation.hpp"
#include "ir/graph.hpp"
#include "passes/pass.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace npuc {

int integerLayers(ir::Graph& g);  // model.cpp

namespace numerics {

void Int8Affine::prepareImported(Translation& tr, Model& m) {
  for (const NodeInfo& n : m.nodes()) prequantized_ |= n.op == "QuantizeLinear";
  if (prequantized_) {
    if (!tr.o.calibration.empty())
      tr.warn("the model is already quantized (QuantizeLinear / DequantizeLinear): its own scales are used, the "
              "calibration samples are not");
    checkQuantized(graphOf(m), tr.o.onnx.string());
    if (tr.o.save_qdq_onnx) m.saveOnnx(tr.dir() / (tr.o.prefix + "_qdq.onnx"));  // (the model as given: already QDQ)
    withContext(tr.o.onnx.string(), [&] { integerLayers(mutableGraphOf(m)); });
    tr.res.quantized = true;
  }
  withContext(tr.o.onnx.string(), [&] {  // what the import skipped (resolveAtImport)
    passes::PassContext ctx;
    passes::PassManager(passes::resolvePipeline()).runToFixpoint(mutableGraphOf(m), ctx);
    ir::markChannelLastBoundaries(mutableGraphOf(m));
  });
}

std::vector<std::vector<std::string>> Int8Affine::afterOptimize(const Translation&, const Model& body) const {
  // A BatchNormalization no Conv absorbed runs as a depthwise 1x1 convolution (per-channel weight scales, opset 13
  // on, hold each factor to its rounding), the activation after it fused (docs/numerics.md).
  // Then activations an integer layer cannot apply (all but Relu and Clip) split from their layers again: look-up
  // tables between int8 tensors (docs/numerics.md). (Two pipelines: in one, fusing and splitting would undo each other
  // round after round.)
  if (prequantized_) return {};
  if (graphOf(body).opset < 13) return {{"split-activations", "dce"}};
  return {{"batchnorm-to-conv", "fuse-activations", "dce"}, {"split-activations", "dce"}};
}

void Int8Affine::calibrate(Translation& tr, Model& body) {
  if (prequantized_) {
    if (tr.o.absorb_bias) tr.warn("--absorb-bias is ignored: the model holds its own quantization (QuantizeLinear / DequantizeLinear)");
    return;
  }
  const TranslateOptions& o = tr.o;
  // Quantized as QDQ on the optimized model (its fused layers' outputs are what the device stores), then the
  // weights' DequantizeLinear folded into float32 constants: the package holds int8 activations between
  // quantize / dequantize layers (docs/numerics.md).
  if (o.calibration.empty())
    fail(ErrorCode::kInvalidArgument, "target '{}' has {} numerics: translate needs calibration samples "
         "(--calib NAME=FILE.npy, docs/calibration.md)", tr.t.name, numericsName(tr.t.numerics));
  QuantizeOptions qo;
  qo.calibration = o.calibration;
  qo.method = o.calib_method;
  qo.scheme = scheme();
  qo.threads = o.threads;
  qo.keep_float = keptInFloat(o);
  qo.ranges = o.ranges;
  qo.bias_correction = o.bias_correction;
  qo.adaround = o.adaround;
  qo.absorb_bias = o.absorb_bias;
  if (o.save_qdq_onnx) saveStandardQdq(tr, qo);
  qo.integer_layers = true;
  QuantizeReport qr;
  body = body.quantizedQdq(qo, &qr);
  // The quantization table beside the package: csv, xlsx and html (docs/calibration.md).
  for (const char* ext : {".csv", ".xlsx", ".html"}) {
    writeQuantizeTable(qr, tr.dir() / (o.prefix + "_quant_table" + ext));
    tr.listFile(o.prefix + "_quant_table" + ext);
  }
  tr.res.calibration_samples = qr.samples;
  tr.res.bias_corrected_layers = qr.bias_corrected;
  tr.res.bias_absorbed_layers = qr.bias_absorbed;
  tr.res.quantized = true;
  tr.res.warnings.insert(tr.res.warnings.end(), qr.warnings.begin(), qr.warnings.end());
  withContext(o.onnx.string(), [&] {
    passes::PassContext ctx;
    passes::PassManager({"fold-constants", "dce"}).runToFixpoint(mutableGraphOf(body), ctx);
  });
}

/// --save-qdq-onnx: the model as `npuc quantize` loads it (standard ONNX ops, batch norms folded) quantized on the
/// same samples with the same method; the tensors the package stores get the same scales (the same statistics),
/// while ops the optimizer fuses (Conv + activation, HardSwish, …) keep standard ONNX form.
void Int8Affine::saveStandardQdq(Translation& tr, const QuantizeOptions& qo) const {
  const TranslateOptions& o = tr.o;
  LoadOptions lo = modelFiles(o);  // the load pipeline: shapes resolved, batch norms folded, ONNX ops only
  lo.input_shapes = o.input_shapes;
  Model standard = Model::load(o.onnx, lo);
  QuantizeOptions so = qo;
  so.qdq_onnx = tr.dir() / (o.prefix + "_qdq.onnx");
  // Override names are the optimized model's: those the standard model lacks (nodes and tensors the optimizer
  // made) are left out of the QDQ file, and said so.
  std::map<std::string, std::string> nodes;  // name -> op
  for (const NodeInfo& n : standard.nodes()) nodes[n.name] = n.op;
  so.keep_float.clear();
  for (const std::string& k : qo.keep_float) {
    auto n = nodes.find(k);
    if (n != nodes.end() && (n->second == "Conv" || n->second == "Gemm" || n->second == "MatMul")) so.keep_float.push_back(k);
    else if (n != nodes.end())  // (a batch norm the package runs as a depthwise convolution: float there already)
      tr.warn(fmt::format("--keep-float '{}' is not applied to {}_qdq.onnx (the standard model's node is a {}, which has no "
                          "weights to keep in float)", k, o.prefix, n->second));
    else tr.warn(fmt::format("--keep-float '{}' is not applied to {}_qdq.onnx (the standard model has no such node)", k, o.prefix));
  }
  for (auto it = so.ranges.begin(); it != so.ranges.end();)
    if (!graphOf(standard).findValue(it->first)) {
      tr.warn(fmt::format("--range '{}' is not applied to {}_qdq.onnx (the standard model has no such tensor)", it->first, o.prefix));
      it = so.ranges.erase(it);
    } else {
      ++it;
    }
  withContext(o.onnx.string(), [&] { standard.quantizedQdq(so); });
}

bool Int8Affine::zeroPointIsZero(const ir::Graph& g, const ir::Node& quantize) {
  if (!quantize.hasInput(2)) return true;
  const ir::Value& zp = g.value(quantize.inputs[2]);
  if (!zp.isConstant()) return false;
  const std::vector<double> z = zp.constant->toDouble();
  return std::all_of(z.begin(), z.end(), [](double v) { return v == 0; });
}

std::unique_ptr<Strategy> makeInt8Affine() { return std::make_unique<Int8Affine>(); }

}  // namespace numerics
}  // namespace npuc
