// The reference engine's kernel for custom ops (plugins, docs/custom-ops.md): the plugin's compute on the node's
// tensor inputs, its parameters read once from the run's constant inputs and attributes.
#include "engine/elementwise_util.hpp"
#include "engine/kernel.hpp"

#include "ops/custom.hpp"

#include <algorithm>
#include <memory>

namespace npuc::engine {

namespace {

class CustomKernel : public Kernel {
 public:
  /// The parameters come from the graph's constants (an attribute or a constant input, never a run's value).
  CustomKernel(const plugin::CustomOp& op, const ir::Node& n, const ir::Graph& g)
      : op_(op), inst_(op, n.name, ops::customParams(n, op, [&](int i) { return ops::constantInput(g, n, i); })) {}
  void run(KernelCall& call) override {
    std::vector<Tensor> in;
    for (int i = 0; i < op_.numInputs(); ++i) {
      const Tensor& t = call.input(i);
      const DType want = op_.passType(i, t.dtype());
      if (want == DType::kUndefined)
        call.unsupported("{}: input {} is {}, which the op does not take", op_.label(), i, dtypeName(t.dtype()));
      in.push_back(castTensor(t, want, call));  // (float32 <-> float16 only: passType's rule)
    }
    std::vector<Tensor> out;
    for (int k = 0; k < call.numOutputs(); ++k) out.push_back(call.alloc(k));
    inst_.compute(in, out, false, call.pool ? call.pool->size() : 1);
  }

 private:
  const plugin::CustomOp& op_;
  plugin::Instance inst_;
};

}  // namespace

std::unique_ptr<Kernel> makeCustomKernel(const ir::Node& n, const ir::Graph& g) {
  const plugin::CustomOp* op = ops::customOpOf(n);
  return op ? std::make_unique<CustomKernel>(*op, n, g) : nullptr;
}

}  // namespace npuc::engine
