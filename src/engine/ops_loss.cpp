// Kernels of the loss ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), in double, rounded once to the
// output's type: the ONNX reference's formulas, every target index checked.
#include "engine/kernel.hpp"
#include "kernels/typed.hpp"
#include "ops/registry.hpp"

#include <algorithm>
#include <cmath>

namespace npuc::engine {

namespace {

void loss(KernelCall& c, bool softmax) {
  const Tensor& x = c.input(0);
  const int64_t N = x.dim(0), C = x.dim(1), D = N * C != 0 ? x.numel() / (N * C) : 0;
  std::vector<double> v = x.toDouble();  // [N, C, D]; log-probabilities for SoftmaxCrossEntropyLoss
  auto at = [&](int64_t n, int64_t ch, int64_t d) -> double& { return v[static_cast<size_t>((n * C + ch) * D + d)]; };
  if (softmax) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) {
        double m = -INFINITY, s = 0;
        for (int64_t ch = 0; ch < C; ++ch) m = std::max(m, at(n, ch, d));
        for (int64_t ch = 0; ch < C; ++ch) s += std::exp(at(n, ch, d) - m);
        const double ls = std::log(s);
        for (int64_t ch = 0; ch < C; ++ch) at(n, ch, d) = at(n, ch, d) - m - ls;
      }
    if (c.numOutputs() > 1 && c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoValue) {
      Tensor& lp = c.alloc(1);
      kernels::castValues(DType::kF64, v.data(), lp.dtype(), lp.raw(), x.numel());
    }
  }
  const std::vector<int64_t> target = c.input(1).toInt64();
  const std::vector<double> weight = c.has(2) ? c.input(2).toDouble() : std::vector<double>{};
  const bool ignoring = c.node.hasAttr("ignore_index");
  const int64_t ignore = c.node.attrInt("ignore_index", 0);
  std::vector<double> l(static_cast<size_t>(N * D), 0.0);
  double loss_sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t t = target[static_cast<size_t>(n * D + d)];
      if (ignoring && t == ignore) continue;
      if (t < 0 || t >= C) c.error("target {} at [{}, {}] is outside the {} classes (and is not ignore_index)", t, n, d, C);
      const double w = weight.empty() ? 1.0 : weight[static_cast<size_t>(t)];
      l[static_cast<size_t>(n * D + d)] = -w * at(n, t, d);
      loss_sum += l[static_cast<size_t>(n * D + d)];
      weight_sum += w;
    }
  const std::string red = c.node.attrString("reduction", "mean");
  Tensor& y = c.alloc(0);
  if (red == "none") return kernels::castValues(DType::kF64, l.data(), y.dtype(), y.raw(), N * D);
  // "mean": the sum over the weights of the counted targets (their number without a weight input).
  const double r = red == "sum" ? loss_sum : loss_sum / weight_sum;
  kernels::castValues(DType::kF64, &r, y.dtype(), y.raw(), 1);
}

}  // namespace

void registerLossKernels(KernelRegistry& r) {
  r.addFn("NegativeLogLikelihoodLoss", [](KernelCall& c) { loss(c, false); });
  r.addFn("SoftmaxCrossEntropyLoss", [](KernelCall& c) { loss(c, true); });
}

}  // namespace npuc::engine
