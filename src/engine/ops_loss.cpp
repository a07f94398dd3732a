// Kernels of the loss ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss): kernels::loss in double, each output
// rounded once to its type; the package's loss layer calls the same kernel.
#include "engine/kernel.hpp"
#include "kernels/loss.hpp"
#include "kernels/typed.hpp"
#include "ops/registry.hpp"

namespace npuc::engine {

namespace {

void loss(KernelCall& c, bool softmax) {
  const Tensor& x = c.input(0);
  kernels::LossShape s;
  s.n = x.dim(0), s.c = x.dim(1), s.d = s.n * s.c != 0 ? x.numel() / (s.n * s.c) : 0;
  s.softmax = softmax;
  s.ignoring = c.node.hasAttr("ignore_index");
  s.ignore_index = c.node.attrInt("ignore_index", 0);
  const std::string red = c.node.attrString("reduction", "mean");
  s.reduction = red == "none" ? kernels::LossReduction::kNone : red == "sum" ? kernels::LossReduction::kSum : kernels::LossReduction::kMean;
  std::vector<double> v = x.toDouble(), l(static_cast<size_t>(s.reduction == kernels::LossReduction::kNone ? s.n * s.d : 1));
  const std::vector<int64_t> target = c.input(1).toInt64();
  const std::vector<double> weight = c.has(2) ? c.input(2).toDouble() : std::vector<double>{};
  const bool want_log_prob = softmax && c.numOutputs() > 1 && c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoValue;
  std::vector<double> lp(want_log_prob ? v.size() : 0);
  kernels::loss(s, v.data(), target.data(), weight.empty() ? nullptr : weight.data(), l.data(), want_log_prob ? lp.data() : nullptr);
  Tensor& y = c.alloc(0);
  kernels::castValues(DType::kF64, l.data(), y.dtype(), y.raw(), y.numel());
  if (want_log_prob) {
    Tensor& out = c.alloc(1);
    kernels::castValues(DType::kF64, lp.data(), out.dtype(), out.raw(), out.numel());
  }
}

}  // namespace

void registerLossKernels(KernelRegistry& r) {
  r.addFn("NegativeLogLikelihoodLoss", [](KernelCall& c) { loss(c, false); });
  r.addFn("SoftmaxCrossEntropyLoss", [](KernelCall& c) { loss(c, true); });
}

}  // namespace npuc::engine
