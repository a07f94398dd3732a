// Bias correction: storing a layer's weights in a narrower type (float16 for an fp16 target) moves the mean of each
// of its output channels by  sum over (c, k) of (stored(W) - W)[o, c, k] * mean(x_c) , because the layer's input x is
// far from zero-mean after a ReLU. The translator measures mean(x_c) on calibration samples with the reference
// engine and subtracts that shift from the layer's float32 bias, so the stored layer has the float layer's output
// mean again (docs/calibration.md). What remains of the rounding is zero-mean.
#pragma once

#include "ir/graph.hpp"
#include "npuc/tensor.hpp"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::quant {

/// Per-channel means of the activation operand (input 0) of every layer correctBias can correct, keyed by the name
/// of the layer's first output (value names are unique and survive the translator's later graph edits).
struct InputMeans {
  size_t samples = 0;
  std::map<std::string, std::vector<double>> by_output;
};

/// True for the layers bias correction applies to: Conv (1-D / 2-D, any group) with float32 constant weights and a
/// float32 constant bias or none; Gemm (transA 0, alpha 1) with a float32 constant matrix B and a C of shape [N] or
/// [1, N] or none (beta 1). Others (ConvTranspose, MatMul, Gemm with any other C) are left as they are.
bool correctable(const ir::Graph& g, const ir::Node& n);

/// Runs `g` on the reference engine over `samples` (each a complete set of graph inputs, by name) and averages the
/// activation operand of every correctable layer per channel (axis 1), over the samples, the batch and the
/// positions. Errors name the sample ("calibration sample 3: ...").
/// Runs g on the reference engine (activations not fused: every op's own output, as in the float model) over
/// `samples` and calls fn(value, tensor) for each of `values` as it is computed, graph inputs included. Errors name
/// the sample ("calibration sample 3: ...").
void observeValues(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples, int threads,
                   const std::set<ir::ValueId>& values, const std::function<void(ir::ValueId, const Tensor&)>& fn);

InputMeans measureInputMeans(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples, int threads);

/// How a float32 weight is stored: the value the device computes with.
using WeightRounding = std::function<float(float)>;
/// The same for storage that depends on the weight's output channel (int8 per-channel scales) or on the weight itself
/// (AdaRound's codes): (w, channel, index) -> the stored value; the channel is the layer's output channel (Conv: axis 0
/// of W; Gemm: its output column), the index the weight's in W's elements.
using ChannelRounding = std::function<float(float, int64_t, int64_t)>;
/// Round to nearest even float16 (the fp16 numerics' weight storage), returned widened.
float roundToHalf(float w);

struct BiasCorrection {
  int layers = 0;        // layers whose bias changed
  int added_biases = 0;  // of those, layers that had no bias (one was added)
};

/// Subtracts, per output channel, the mean shift that `round` causes on each correctable layer measured in `means`
/// (layers not in it are left alone). The layer gets a new bias constant (a bias other layers share stays as it is;
/// one nobody reads any more is removed). Sums in double; the new bias is rounded to float32 once.
BiasCorrection correctBias(ir::Graph& g, const InputMeans& means, const WeightRounding& round);

/// One layer's correction (what correctBias does per layer): `mean` the per-channel means of its input (the
/// InputMeans entry of its output). Returns whether its bias changed (it gets a new bias constant; the old one stays
/// for correctBias's callers to drop). The layer must be correctable().
bool correctLayerBias(ir::Graph& g, ir::NodeId id, const std::vector<double>& mean, const ChannelRounding& round, bool* added_bias = nullptr);

}  // namespace npuc::quant
