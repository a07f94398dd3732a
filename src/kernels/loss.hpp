// ONNX's NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: IR-free, in double, as the ONNX reference computes
// them. The engine and the package's `loss` layer call this one kernel.
#pragma once

#include <cstdint>

namespace npuc::kernels {

enum class LossReduction : uint8_t { kNone, kSum, kMean };

struct LossShape {
  int64_t n = 0, c = 0, d = 1;  // scores [n, c, d] (d: the product of the dims after C), targets [n, d]
  bool softmax = false;         // SoftmaxCrossEntropyLoss: log-softmax along c first
  bool ignoring = false;        // ignore_index given: targets equal to it count neither in the sum nor in the mean
  int64_t ignore_index = 0;
  LossReduction reduction = LossReduction::kMean;
};

/// loss[n·d] (kNone) or loss[0]: −weight[t]·x[n, t, d] per target t (weight 1 without weights), summed, or summed and
/// divided by the sum of the counted targets' weights (kMean). With softmax, x is replaced by its log-softmax along c
/// (max subtracted, exp summed in index order) and that is written to log_prob when it is not null. Throws
/// kInvalidInput for a target outside [0, c) that is not ignore_index.
void loss(const LossShape& s, double* x, const int64_t* target, const double* weight, double* loss, double* log_prob);

}  // namespace npuc::kernels
