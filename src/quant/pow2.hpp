// int8-pow2 (TIDL) quantization of an optimized float graph (docs/numerics.md, "int8-pow2"): the layers an integer
// device runs become ai.npuc P2 ops over 8-bit codes whose q lives in slots (kernels/pow2.hpp); the others stay
// float between P2Dequantize / P2Quantize conversions.
//
//   P2Quantize    float32 -> codes              (a graph input, or a float layer's output read by an integer layer)
//   P2Dequantize  codes -> float32              (read by a float layer or a graph output)
//   P2Conv        2-D Conv / Gemm (+ Relu / Clip): codes x, int16 weights (numParamBits), int32 bias -> codes
//   P2ConvTranspose  2-D ConvTranspose (+ Relu / Clip), TIDL's Deconvolution: the same, w [C, M/g, kh, kw]
//   P2Add         Add of two tensors of one shape (+ a Relu that alone reads it) -> codes
//   P2GlobalAvgPool
//   P2Concat      Concat of up to 6 inputs: each brought exactly to the finest q, one slot for the result
//   P2AvgPool     2-D AveragePool whose windows share one divisor: the exact window sums, divided in requantization
//   P2Resize      an interpolating Resize / Upsample (linear, cubic): integer tap weights at 2^-10, exact sums
//   P2Softmax     Softmax over one axis: uint8 probabilities at the fixed 2^-8, one byte per class
//   MaxPool, Flatten, Reshape, Squeeze, Unsqueeze, Identity on codes: the same ops, the input's slot
// Every P2 node carries attribute "table" (kernels::pow2::encodeTable): its input slots, its output slot with the
// signedness, activation and calibrated range, and for P2Conv the weights' and bias's q.
#pragma once

#include "ir/graph.hpp"
#include "kernels/pow2.hpp"
#include "quant/bias_correction.hpp"
#include "quant/range.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::quant {

struct Pow2Options {
  RangeMethod method = RangeMethod::kMinMax;
  double percentile = 99.99;
  int param_bits = 8;         // numParamBits: 4..12
  bool input_signed = true;   // inElementType: 0 unsigned, 1 signed (graph inputs)
  double in_quant_factor = -1;  // inQuantFactor: > 0 fixes the inputs' scale at 1 / inQuantFactor (a power of two)
  int margin = 0;             // quantMargin: the calibrated q's take it too
  std::set<std::string> keep_float;  // layers (node names) kept in float
  std::map<std::string, std::pair<double, double>> ranges;  // tensors quantized over a forced [lo, hi]
  /// Bias correction (docs/calibration.md): each integer Conv / Gemm's bias loses the mean shift its weights' rounding
  /// to codes at the layer's one shift causes, with these input means (measureInputMeans on the float graph).
  const InputMeans* bias_means = nullptr;
  /// AdaRound (adaround.hpp): weight codes by weight value name, in the tensor's element order, at the layer's one
  /// step 2^-qw (weightQ); their notes go to the layer's row. Null: rounded to nearest.
  const std::map<std::string, std::vector<int32_t>>* weight_codes = nullptr;
  const std::map<std::string, std::string>* weight_notes = nullptr;
};

/// The q of a layer's numParamBits-bit weights (codes at 2^-q) whose largest magnitude is wmax.
int weightQ(double wmax, int param_bits);

/// One slot: a tensor an integer layer writes.
struct Pow2Slot {
  std::string tensor;  // the float tensor it stands for
  bool is_signed = true;
  double lo = 0, hi = 0;  // calibrated range
  int q = 0;              // the q it starts at
  std::string warning;
};
struct Pow2Layer {
  std::string name, op;  // "conv", "deconv", "gemm", "add", "concat", "avg_pool", "global_avg_pool", "quantize"; "float" for a kept layer
  int qw = 0, qb = 0;
  std::string note;      // why a layer stays float
};
struct Pow2Report {
  std::vector<Pow2Slot> slots;
  std::vector<Pow2Layer> layers;
  std::vector<std::string> warnings;
  int integer_layers = 0, float_layers = 0;
  int bias_corrected = 0;  // integer layers whose bias the correction changed
};

/// Rewrites `g` (an optimized float graph: batch norms folded, activations fused) in place. `stats`: calibration
/// statistics of g's float tensors by name (collectStats on this graph).
Pow2Report quantizeToPow2(ir::Graph& g, const std::map<std::string, TensorStats>& stats, const Pow2Options& o);

}  // namespace npuc::quant
