// Engine kernels of the recurrent ops (RNN, GRU, LSTM): the node's attributes become a kernels::RnnShape
// (ops::rnnShape, which the lowering reads too) and its inputs RnnTensors; the kernel library runs them in float32
// (float16 and bfloat16 inputs widened, outputs rounded back).
#include "engine/elementwise_util.hpp"
#include "engine/kernel.hpp"
#include "kernels/recurrent.hpp"
#include "ops/recurrent.hpp"

namespace npuc::engine {

namespace {

using kernels::RnnCell;

void recurrentKernel(KernelCall& c, RnnCell cell, const kernels::RnnPacked* packed) {
  auto f32 = [&](int i) { return c.input(i).dtype() == DType::kF32 ? c.input(i) : castTensor(c.input(i), DType::kF32, c); };
  const Tensor x = f32(0), w = f32(1), r = f32(2);
  const kernels::RnnShape s = ops::rnnShape(c.node, x.shape(), c.input(2).dim(2));
  const bool lstm = cell == RnnCell::kLstm;
  Tensor b, h0, c0, p;
  kernels::RnnTensors t;
  t.x = x.data<float>();
  t.w = w.data<float>();
  t.r = r.data<float>();
  if (c.has(3)) b = f32(3), t.b = b.data<float>();
  if (c.has(4)) t.seq_lens = c.input(4).data<int32_t>();
  if (c.has(5)) h0 = f32(5), t.h0 = h0.data<float>();
  if (lstm && c.has(6)) c0 = f32(6), t.c0 = c0.data<float>();
  if (lstm && c.has(7)) p = f32(7), t.p = p.data<float>();
  // Every output computed in float32 (an omitted one too: it costs a copy of the state), then given the node's type.
  std::vector<Tensor> outs;
  for (int o = 0; o < c.numOutputs(); ++o) outs.emplace_back(DType::kF32, c.out_types[static_cast<size_t>(o)].shape);
  t.y = outs.empty() ? nullptr : outs[0].data<float>();
  t.y_h = outs.size() > 1 ? outs[1].data<float>() : nullptr;
  t.y_c = lstm && outs.size() > 2 ? outs[2].data<float>() : nullptr;
  kernels::recurrentFast(s, t, c.pool, packed);
  const DType out_type = c.input(0).dtype();
  for (size_t o = 0; o < outs.size(); ++o) c.out[o] = out_type == DType::kF32 ? outs[o] : castTensor(outs[o], out_type, c);
}

/// W and R packed on the first run when they are the node's constants (float32), then reused.
class RecurrentKernel : public Kernel {
 public:
  RecurrentKernel(RnnCell cell, bool constant_weights) : cell_(cell), constant_(constant_weights) {}
  void run(KernelCall& c) override {
    if (constant_ && !packed_ && c.input(1).dtype() == DType::kF32 && c.input(2).dtype() == DType::kF32)
      packed_ = kernels::packRecurrent(ops::rnnShape(c.node, c.input(0).shape(), c.input(2).dim(2)), c.input(1).data<float>(), c.input(2).data<float>());
    recurrentKernel(c, cell_, packed_.get());
  }

 private:
  RnnCell cell_;
  bool constant_;
  kernels::RnnPackedPtr packed_;
};

/// ai.npuc QRecurrent: the int8 form (kernels::RnnTensors::xq), float32 outputs.
void qrecurrent(KernelCall& c) {
  const kernels::RnnShape s = ops::rnnShape(c.node, c.input(0).shape(), c.input(2).dim(2));
  const bool lstm = s.cell == RnnCell::kLstm;
  auto f32 = [&](int i) { return c.input(i).dtype() == DType::kF32 ? c.input(i) : castTensor(c.input(i), DType::kF32, c); };
  Tensor b, h0, c0, p;
  kernels::RnnTensors t;
  t.xq = c.input(0).data<int8_t>();
  t.zx = static_cast<int32_t>(c.node.attrInt("x_zero_point", 0));
  t.sx = c.node.attrFloat("x_scale", 1.0f);
  t.wq = c.input(1).data<int8_t>();
  t.rq = c.input(2).data<int8_t>();
  const Tensor& scales = c.input(8);
  t.w_scale = scales.data<float>();
  t.r_scale = t.w_scale + scales.dim(1);
  if (c.has(3)) b = f32(3), t.b = b.data<float>();
  if (c.has(4)) t.seq_lens = c.input(4).data<int32_t>();
  if (c.has(5)) h0 = f32(5), t.h0 = h0.data<float>();
  if (lstm && c.has(6)) c0 = f32(6), t.c0 = c0.data<float>();
  if (lstm && c.has(7)) p = f32(7), t.p = p.data<float>();
  for (int o = 0; o < c.numOutputs(); ++o) c.out[static_cast<size_t>(o)] = Tensor(DType::kF32, c.out_types[static_cast<size_t>(o)].shape);
  t.y = c.numOutputs() > 0 ? c.out[0].data<float>() : nullptr;
  t.y_h = c.numOutputs() > 1 ? c.out[1].data<float>() : nullptr;
  t.y_c = lstm && c.numOutputs() > 2 ? c.out[2].data<float>() : nullptr;
  kernels::recurrentFast(s, t, c.pool);
}

}  // namespace

void registerRecurrentKernels(KernelRegistry& r) {
  r.addFn("QRecurrent", qrecurrent, "ai.npuc");
  for (const auto& op_cell : {std::pair{"RNN", RnnCell::kRnn}, std::pair{"GRU", RnnCell::kGru}, std::pair{"LSTM", RnnCell::kLstm}})
    r.add(op_cell.first, [cell = op_cell.second](const ir::Node& n, const ir::Graph& g) -> std::unique_ptr<Kernel> {
      const bool constant = n.inputs.size() > 2 && n.inputs[1] != ir::kNoValue && n.inputs[2] != ir::kNoValue &&
                            g.value(n.inputs[1]).isConstant() && g.value(n.inputs[2]).isConstant();
      return std::make_unique<RecurrentKernel>(cell, constant);
    });
}

}  // namespace npuc::engine
