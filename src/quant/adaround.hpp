// AdaRound (Nagel et al. 2020, "Up or Down? Adaptive Rounding for Post-Training Quantization"): each weight of a
// layer is rounded down or up from floor(w / step) — not to the nearest code — so that the layer's output on the
// calibration data moves least. For a linear layer y = W x, the output error of row r is Δ_r x (Δ_r the row's
// rounding error); its mean square over the calibration patches is Δ_r H Δ_r^T with H = E[x x^T], the second moment
// of the layer's input patches. The choice is relaxed to a soft rounding h(V) in [0, 1] (a rectified sigmoid),
// optimized with Adam on that error plus a regularizer that drives every h to 0 or 1 (docs/calibration.md,
// "AdaRound"). The result is never worse than rounding to nearest on that error: when it would be, the nearest codes
// are kept.
#pragma once

#include "ir/graph.hpp"
#include "npuc/tensor.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace npuc {
class ThreadPool;
}

namespace npuc::quant {

/// The second moments of a layer's input patches: per group a K x K matrix E[x x^T] (row-major), K the weights each
/// output channel multiplies (Conv: its group's channels x the kernel taps, in the weights' order; Gemm: its inputs).
struct InputGram {
  int64_t groups = 1, K = 0;
  std::vector<double> H;  // groups * K * K
  int64_t patches = 0;    // patches averaged (per group)
};
struct InputGrams {
  size_t samples = 0;
  std::map<std::string, InputGram> by_output;  // by the layer's first output name (as InputMeans)
};

/// Layers whose inputs' Gram matrices are not gathered: more weights per output channel than this (a K x K matrix
/// per layer, and K^2 work per patch and per optimization step).
inline constexpr int64_t kAdaRoundMaxK = 2304;

/// Runs g on the reference engine over `samples` and gathers the Gram matrix of the input patches of every layer bias
/// correction applies to (correctable(), bias_correction.hpp) with K <= kAdaRoundMaxK and a 1-D / 2-D window, on at
/// most `max_positions` evenly spaced output positions per sample and batch item.
InputGrams measureInputGrams(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples, int threads,
                             int64_t max_positions = 256);

struct AdaRoundOptions {
  int iterations = 1000;
  /// The regularizer's weight, against the reconstruction term in units of one code step (Δ H Δ^T / mean diag H).
  /// 0.1: where the layers' own error stopped falling on the digits model at 4-bit weights (0.001 … 0.5 tried; chosen on
  /// that label-free error, not on accuracy; docs/calibration.md).
  double lambda = 0.1;
  double beta_start = 20, beta_end = 2;  // the regularizer's exponent, annealed linearly after the warm-up
  double warmup = 0.2;   // the first fraction of the iterations without the regularizer
  double learning_rate = 0.01;
};

/// The codes of one layer's weights: `rows` output channels of K weights each (row-major), row r in group
/// r / (rows / gram.groups), step[r] its code step (the weight scale), codes in [-lim, lim].
struct LayerRounding {
  std::vector<int32_t> codes;        // row-major, as the weights
  double error_nearest = 0, error = 0;  // Σ_r step_r^2 Δ_r H Δ_r^T: rounded to nearest, and as chosen
  int64_t changed = 0;               // codes that differ from the nearest ones
};
LayerRounding adaRound(const float* w, int64_t rows, int64_t K, const std::vector<double>& step, double lim, const InputGram& gram,
                       const AdaRoundOptions& o, ThreadPool* pool);

/// A quantizer's weight steps for a layer: per output channel (one value: the whole layer), and the largest code.
struct WeightSteps {
  std::vector<double> step;
  double lim = 127;
};
/// The steps the quantizer will use for node n's weights w (nullopt: the layer is not quantized).
using StepsOf = std::function<std::optional<WeightSteps>(const ir::Node& n, const Tensor& w)>;

/// AdaRound codes of every layer of `grams`, by weight value name, in the weight tensor's element order; `report`
/// gets one line per layer (the error against rounding to nearest). A weight several layers read is rounded once for
/// all of them (their Gram matrices averaged by patch count: the error summed over their patches).
struct AdaRoundResult {
  std::map<std::string, std::vector<int32_t>> codes;
  std::map<std::string, std::string> notes;  // by weight value name: "AdaRound: error −63 % (…), 412 codes changed"
};
AdaRoundResult adaRoundLayers(const ir::Graph& g, const InputGrams& grams, const StepsOf& steps, const AdaRoundOptions& o, int threads);

}  // namespace npuc::quant
