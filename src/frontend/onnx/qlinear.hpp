// ONNX's operator-form quantized layers, expanded on import into the QDQ form the rest of npuc reads.
#pragma once

#include "ir/graph.hpp"

#include <string>

namespace npuc::onnx_io {

/// Whether the import expands `op` (of the ai.onnx domain) by expandQLinearOps: QLinearConv, QLinearMatMul.
bool isExpandedOnImport(const std::string& domain, const std::string& op);

/// Rewrites every QLinearConv and QLinearMatMul (ONNX Runtime's "QOperator" quantized format) into what they are
/// defined to compute, in the QDQ form (docs/quantization.md, "Models quantized elsewhere"): a DequantizeLinear on
/// each integer input (the bias at x_scale * w_scale, zero point 0), the float Conv / MatMul, a QuantizeLinear with
/// the output's scale and zero point. The integer passes then fuse the run back into one integer layer with the
/// model's own scales, as they do for a QDQ model. Call before type inference; returns how many nodes it expanded.
int expandQLinearOps(ir::Graph& g);

}  // namespace npuc::onnx_io
