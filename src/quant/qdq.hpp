// int8-affine quantization of a float graph as ONNX QuantizeLinear / DequantizeLinear pairs ("QDQ", issue 24,
// docs/numerics.md): the standard form in which ONNX Runtime, TensorRT and the vendors' importers exchange
// quantized models. The graph keeps its float ops; each tensor an int8 device would hold in memory passes through
// int8 and back, so the reference engine computes what int8 storage costs, and `--save-qdq-onnx` writes a model any
// ONNX runtime runs on its own int8 path.
//
//   weights      per output channel, symmetric int8 (zero point 0), scale = max|W[c]| / 127 (Conv, Gemm, and
//                MatMul with a constant 2-D right operand); per tensor when the opset has no per-axis
//                DequantizeLinear (< 13)
//   biases       int32 at scale s_x * s_w[c] (exact zero point 0), as the integer kernels add them
//   activations  per tensor, affine int8: [lo, hi] from the calibration statistics and range method (holding 0),
//                scale = (hi - lo) / 255, zero point = round(-128 - lo / scale); every graph input and every node
//                output a device stores, except a layer output read only by the Relu / Clip a device fuses into it
//
// What this form does not model: the integer requantization's own rounding (multiplier + shift) — the integer
// kernels (src/kernels/quant.hpp) and int8 packages are the next step; the QDQ model's accuracy is the standard
// estimate of theirs.
#pragma once

#include "ir/graph.hpp"
#include "quant/range.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::quant {

struct InputMeans;  // bias_correction.hpp

/// How activations are quantized: affine (scale and zero point spanning [lo, hi]), symmetric (zero point 0, scale
/// max(|lo|, |hi|) / 127) or Kneron's radix form (zero point 0, scale 2^-radix with the largest radix that keeps
/// max(|lo|, |hi|) within 127).
enum class ActivationScheme { kAffine, kRadix, kSymmetric };

struct QdqOptions {
  RangeMethod method = RangeMethod::kMinMax;
  ActivationScheme scheme = ActivationScheme::kAffine;
  double percentile = 99.99;
  bool per_channel = true;  // weights per output channel (else one scale per weight tensor)
  /// Per-layer overrides. keep_float: layers (by node name) kept in float32 — their weights and bias stay float, so
  /// they compute in float between the conversion layers (DequantizeLinear before, QuantizeLinear after) instead of
  /// becoming integer layers. ranges: tensors (by name) quantized over this [lo, hi] instead of their calibrated range
  /// (widened to hold 0). A name the graph lacks is an error naming it.
  std::set<std::string> keep_float;
  std::map<std::string, std::pair<double, double>> ranges;
  /// Bias correction: the float model's per-channel input means of its layers (measureInputMeans on this graph,
  /// before quantization); each Conv / Gemm they cover gets its bias corrected for its int8 weights. Null: none.
  const InputMeans* bias_means = nullptr;
  /// AdaRound (adaround.hpp): codes of weights by value name, in the tensor's element order, each within the int8
  /// range at the scales this quantizer gives them (weightScales); `notes` said in their table rows. Null: every
  /// weight rounded to nearest.
  const std::map<std::string, std::vector<int32_t>>* weight_codes = nullptr;
  const std::map<std::string, std::string>* weight_notes = nullptr;
};

/// The int8 scales of weights w, per channel along `axis` (per tensor: one): max |w| / 127 (1 for an all-zero
/// channel); `range` gets max |w| of every output channel.
std::vector<float> weightScales(const Tensor& w, int64_t axis, bool per_channel, std::vector<float>* range_out = nullptr);

/// One quantized tensor of the report: an activation (lo, hi, scale, zero point) or a weight (scale range over its
/// channels, zero point 0).
struct QdqTensor {
  std::string name, kind;  // kind: "activation", "weight", "bias"
  double lo = 0, hi = 0;   // the float range quantized (weights: -max|W|, max|W| over all channels)
  double scale = 0;        // activations: the scale; weights / biases: the largest channel scale
  int zero_point = 0;
  int64_t channels = 1;
  std::string warning;     // a degenerate range, values clipped, …
  std::string note;        // weights: AdaRound's effect (QdqOptions::weight_codes)
  ir::ValueId dequantized = ir::kNoValue;  // activations: the DequantizeLinear output the readers now read
};

struct QdqReport {
  std::vector<QdqTensor> tensors;
  std::vector<std::string> warnings;
  int bias_corrected = 0;  // layers whose bias the bias correction changed
};

/// Rewrites `g` in place. `stats` are the calibration statistics of g's float tensors by name (collectStats on this
/// same graph); a float tensor without statistics is an error naming it.
QdqReport quantizeToQdq(ir::Graph& g, const std::map<std::string, TensorStats>& stats, const QdqOptions& o = {});

/// Ops that only move or select int8 values (their output's codes are input codes; Resize when nearest and not
/// tf_crop_and_resize): with the input's scale and zero point on the output they run on int8 data as they are.
bool movesValues(const ir::Node& n);
/// A Resize / Upsample that selects values: mode nearest, not tf_crop_and_resize (which extrapolates a float value).
bool isNearestResize(const ir::Node& n);

/// Records on each per-tensor int8 QuantizeLinear output what it stands for (ir::Value::quant: scale, zero point, the
/// float tensor) where it is not recorded yet (a model quantized elsewhere); quantizeToQdq records its own.
void annotateQuantized(ir::Graph& g);

/// Replaces each DequantizeLinear -> Conv (2-D, + a fused Relu / Clip) -> QuantizeLinear run of a QDQ graph (as
/// quantizeToQdq writes it) by one ai.npuc QConv: int8 input, the int8 weights and int32 bias, the requantization
/// multipliers of x_scale * w_scale[m] / y_scale (docs/numerics.md) — the integer layer a device runs. Convs that do
/// not fit (another activation, a float operand, an accumulation that could overflow int32) stay in float between
/// their DequantizeLinear and QuantizeLinear. Returns how many it replaced; unused Q / DQ nodes are left for DCE.
int fuseIntegerConvs(ir::Graph& g);

/// The same for DequantizeLinear -> Gemm (2-D int8 input, constant int8 B with or without transB, alpha = beta = 1,
/// no transA; + a Relu / Clip) or MatMul (2-D operands, B constant) -> QuantizeLinear: a QConv 1x1 over the input reshaped to [N, K, 1, 1], its output
/// reshaped back (Reshape on int8 codes). Returns how many it replaced.
int fuseIntegerGemms(ir::Graph& g);

/// Replaces each DequantizeLinear (a), DequantizeLinear (b) -> Add (+ a Relu / Clip) -> QuantizeLinear run, a and b
/// int8 tensors of the output's shape, by one ai.npuc QAdd (kernels::qadd_ref: the integer addition of
/// docs/numerics.md). Adds with broadcasting stay in float. Returns how many it replaced.
int fuseIntegerAdds(ir::Graph& g);

/// Before calibration: each MatMul of a float activation [..., K] by a constant [K, N] whose only reader is an Add of a
/// constant per-column vector (N values along the last axis: a torch Linear layer as exported) becomes one Gemm with
/// that bias (over the rows [R, K], Reshapes around it for rank > 2), so the bias is quantized into the product's
/// int32 accumulator as a device adds it, instead of a float Add between two int8 roundings. `keep` holds names to
/// leave alone: layers kept in float (the MatMul) and tensors with a forced range (its product, the Add's output or
/// the activation's: an activation whose output is named stays after the Reshape). `stands_for` (if given) receives,
/// for each row-shaped tensor made, the model's tensor it holds the values of (what its int8 codes stand for in reports
/// and `npuc compare`). Returns how many it rewrote.
int productBiasesAsGemms(ir::Graph& g, const std::set<std::string>& keep, std::map<std::string, std::string>* stands_for = nullptr);

/// Replaces each DequantizeLinear -> Mul / Div by a constant scalar above 0 -> QuantizeLinear run over an int8 tensor
/// (attention's query scaling by 1 / sqrt(d)) by one ai.npuc QAdd of the tensor with itself, the second multiplier 0:
/// y = clamp(zy + round((x - zx) * ma / 2^shift), lo, hi) with ma / 2^shift = sx * c / sy to 15 bits (the addition's
/// numerics, docs/numerics.md). Returns how many it replaced.
int fuseIntegerScales(ir::Graph& g);

/// Replaces each DequantizeLinear (a), DequantizeLinear (b) -> MatMul (+ a Relu / Clip) -> QuantizeLinear run, a and b
/// int8 activations of static shape and rank >= 2 (neither a constant: those are fuseIntegerGemms'), by one ai.npuc
/// QMatMul (kernels::qmatmul_ref: the integer product of docs/numerics.md). Returns how many it replaced.
int fuseIntegerMatMuls(ir::Graph& g);

/// Replaces each DequantizeLinear -> GlobalAveragePool (+ a Relu / Clip) -> QuantizeLinear run over an int8 tensor of
/// static shape by one ai.npuc QGlobalAvgPool (kernels::qglobalAvgPool: the integer mean of docs/numerics.md), and each
/// such run through a 1-D or 2-D AveragePool of at most 1024 taps by one ai.npuc QAvgPool (kernels::qavgPool2d).
/// Returns how many it replaced.
int fuseIntegerPools(ir::Graph& g);
/// The element-wise activation nodes (LeakyRelu, HardSwish, Sigmoid, …) that the layers named in `kept` take along
/// into float (quantizeToQdq: each that alone reads a kept layer's output), by name: the estimate and the lowering
/// give them their layer's width. Names the graph lacks are skipped (quantizeToQdq reports them).
std::set<std::string> activationsTakenAlong(const ir::Graph& g, const std::set<std::string>& kept);

/// Each DequantizeLinear -> element-wise op of one input (Sigmoid, HardSwish, LeakyRelu, Tanh, …: the unary ops of
/// elementwise_ops.def but Relu, Clip and Identity) (+ Relu / Clip) -> per-tensor int8 QuantizeLinear into one ai.npuc
/// QLookup: the run's 256 results over every int8 code, computed by the reference engine on the run itself (the same
/// bits as the QDQ model). Returns how many.
int fuseIntegerLookups(ir::Graph& g);
/// Each DequantizeLinear a, DequantizeLinear b -> Mul (+ Relu / Clip) -> per-tensor int8 QuantizeLinear, b of a's
/// shape or one value per plane of a's trailing dimensions (an SE block's gate), into one ai.npuc QMul (the product
/// exact in int32, one requantization: kernels::qmul). Returns how many.
int fuseIntegerMuls(ir::Graph& g);

/// Lets data movement run on int8 codes: each DequantizeLinear -> MaxPool / Concat / Reshape / Flatten / Transpose /
/// Squeeze / Unsqueeze / Identity / Slice / Gather -> QuantizeLinear run whose inputs and output share one scale and zero point (as
/// quantizeToQdq assigns them) becomes the same op on the int8 tensors. Returns how many it rewrote.
int fuseIntegerDataMovement(ir::Graph& g);
/// Each DequantizeLinear -> LSTM / GRU (constant float W and R, the activations ONNX defaults to, no constant initial
/// state outside [-1, 1]) into one ai.npuc QRecurrent: W and R int8 per row, the gates' products integer sums
/// (kernels::RnnTensors::xq; docs/numerics.md "Recurrent layers in int8"), float outputs. Returns how many.
int fuseIntegerRecurrents(ir::Graph& g);

/// The affine int8 parameters of a range [lo, hi] holding 0: scale (> 0) and zero point in [-128, 127].
void affineInt8(double lo, double hi, float* scale, int* zero_point);
/// Symmetric int8 codes for [lo, hi]: zero point 0, scale max(|lo|, |hi|) / 127 (1 for an empty range).
void symmetricInt8(double lo, double hi, float* scale, int* zero_point);
/// The radix form of [lo, hi]: zero point 0, scale 2^-radix with the largest radix (in [-31, 31]) for which
/// max(|lo|, |hi|) * 2^radix <= 127 (an all-zero range: radix 0).
void radixInt8(double lo, double hi, float* scale, int* zero_point, int* radix);

}  // namespace npuc::quant
