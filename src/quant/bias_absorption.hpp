// Bias absorption (Nagel et al., "Data-Free Quantization Through Weight Equalization and Bias Correction", 2019,
// "absorbing high biases"): Conv1 -> Relu -> Conv2 computes the same when a constant c >= 0 is taken out of Conv1's
// channel and put back through Conv2, as long as Conv1's pre-activation y stays at or above c:
//   Relu(y) = Relu(y - c) + c  for y >= c,   so  W2 Relu(y) + b2 = W2 Relu(y - c) + (b2 + W2 c).
// A channel whose values never reach zero (a large positive bias, often one that cross-layer equalization scaled up)
// then quantizes over [0, max - c] instead of [0, max], and the tensor's one int8 range shrinks where such a channel
// set it. The paper takes c = max(0, beta - 3 gamma) from the batch norm; npuc measures the channel on the
// calibration samples instead (the batch norms are folded by then): c = max(0, min(observed minimum, mean - 3 std))
// for a channel whose observed minimum is above zero, 0 for the others (docs/calibration.md). An input whose value
// falls below c outside the calibration samples is computed as c there (the rule's approximation, as the paper's).
#pragma once

#include "ir/graph.hpp"
#include "npuc/tensor.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::quant {

/// One pair whose activation lost some of its channels' floor.
struct AbsorbedPair {
  std::string first, second;  // the two layers (node names): Conv1 gave, Conv2 took
  std::string value;          // the activation between them (what the int8 range is measured on)
  int64_t channels = 0;       // the activation's channels
  int64_t moved = 0;          // channels with c > 0
  double largest = 0;         // the largest c
  double hi_before = 0, hi_after = 0;  // the activation's largest observed value before and after (on the samples)
  std::string note() const;   // said in the quantization table's row of `value`
};

struct BiasAbsorption {
  size_t samples = 0;
  std::vector<AbsorbedPair> pairs;  // in graph order, only pairs that changed
};

/// The pairs absorption applies to, in graph order: Conv1 (1-D / 2-D, float32 constant weights and bias or none)
/// with a fused Relu / LeakyRelu activation, or followed by a Relu / LeakyRelu node alone reading it, whose output
/// only Conv2 reads, as its data (not a graph output); Conv2 the same kind of Conv with no padding (a padded border
/// would read 0 where the original read c). Relu6 is not taken (its clip would move: --equalize relu6 makes it a
/// Relu first), nor a LeakyRelu of negative slope (a value above zero would not tell that its input was).
std::vector<std::pair<ir::NodeId, ir::NodeId>> absorbablePairs(const ir::Graph& g);

/// Measures every absorbable pair's activation per channel on `samples` (the float model on the reference engine),
/// then moves each channel's c out of Conv1's bias and into Conv2's (both get new constants; Conv2's bias added where
/// it had none). Sums in double, each bias rounded to float32 once. Errors name the sample. Pairs whose activation
/// (or Conv1's output before a separate activation) is named in `fixed` are left alone: a range forced on it (--range)
/// speaks of the model's values, not of lowered ones.
BiasAbsorption absorbHighBiases(ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples, int threads,
                                const std::set<std::string>& fixed = {});

}  // namespace npuc::quant
