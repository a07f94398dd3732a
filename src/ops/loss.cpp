// Schemas of the loss ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss): inference-time evaluation of a
// model's loss, as exported training graphs carry it.
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

namespace npuc::ops {

namespace {

/// Inputs (scores [N, C, d1, …], target [N, d1, …] of integers, optional weight [C]); output 0 the loss (the
/// target's shape for reduction "none", else a scalar), output 1 (SoftmaxCrossEntropyLoss) the log-probabilities.
void lossShape(InferContext& c) {
  const Shape& x = c.inputShape(0);
  if (!isFloat(c.inputDType(0))) c.unsupported("input 0 is {}; a loss is computed on floating-point scores", dtypeName(c.inputDType(0)));
  if (x.size() < 2) c.error("scores must be [N, C, d1, …], got {}", shapeStr(x));
  if (!isInteger(c.inputDType(1))) c.error("target must be an integer tensor, got {}", dtypeName(c.inputDType(1)));
  Shape target{x[0]};
  target.insert(target.end(), x.begin() + 2, x.end());
  if (c.inputShape(1) != target) c.error("target must be {} for scores {}, got {}", shapeStr(target), shapeStr(x), shapeStr(c.inputShape(1)));
  if (c.hasInput(2) && c.inputShape(2) != Shape{x[1]}) c.error("weight must be [{}], got {}", x[1], shapeStr(c.inputShape(2)));
  const std::string red = c.node().attrString("reduction", "mean");
  if (red != "none" && red != "sum" && red != "mean") c.error("reduction '{}' is not one of none, sum, mean", red);
  c.setOutput(0, c.inputDType(0), red == "none" ? target : Shape{});
  c.setOutput(1, c.inputDType(0), x);
}

}  // namespace

void registerLossOps(Registry& r) {
  r.add(makeSchema("NegativeLogLikelihoodLoss", 2, 3,
                   "−input[n, target, d…] · weight[target], reduced none / sum / mean (ignore_index)", lossShape));
  r.add(makeSchema("SoftmaxCrossEntropyLoss", 2, 3,
                   "NegativeLogLikelihoodLoss of LogSoftmax along dim 1 (optional log_prob output)", lossShape, 2));
}

}  // namespace npuc::ops
