// Engine kernels of the recurrent ops (RNN, GRU, LSTM): the node's attributes and inputs become a kernels::RnnShape
// and RnnTensors, and the reference kernel (src/kernels/ref/recurrent_ref.cpp) runs them in float32 (float16 and
// bfloat16 inputs widened, outputs rounded back).
#include "engine/elementwise_util.hpp"
#include "engine/kernel.hpp"
#include "kernels/recurrent.hpp"

#include <algorithm>
#include <cctype>

namespace npuc::engine {

namespace {

using kernels::RnnActivation;
using kernels::RnnCell;

/// An ONNX activation name (case-insensitive, as ONNX Runtime reads them) with its alpha / beta: taken from
/// activation_alpha / activation_beta in order by the activations that have them, else the op's default.
RnnActivation activation(const KernelCall& c, std::string name, const std::vector<float>& alphas,
                         const std::vector<float>& betas, size_t& ai, size_t& bi) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  auto next = [](const std::vector<float>& v, size_t& i, float def) { return i < v.size() ? v[i++] : def; };
  RnnActivation a;
  struct Known {
    const char* name;
    kernels::UnaryOp op;
    bool alpha, beta;
    float da, db;
  };
  static const Known kKnown[] = {
      {"relu", kernels::UnaryOp::kRelu, false, false, 0, 0},
      {"tanh", kernels::UnaryOp::kTanh, false, false, 0, 0},
      {"sigmoid", kernels::UnaryOp::kSigmoid, false, false, 0, 0},
      {"leakyrelu", kernels::UnaryOp::kLeakyRelu, true, false, 0.01f, 0},
      {"thresholdedrelu", kernels::UnaryOp::kThresholdedRelu, true, false, 1.0f, 0},
      {"hardsigmoid", kernels::UnaryOp::kHardSigmoid, true, true, 0.2f, 0.5f},
      {"elu", kernels::UnaryOp::kElu, true, false, 1.0f, 0},
      {"softsign", kernels::UnaryOp::kSoftsign, false, false, 0, 0},
      {"softplus", kernels::UnaryOp::kSoftplus, false, false, 0, 0},
  };
  if (lower == "affine" || lower == "scaledtanh") {
    a.kind = lower == "affine" ? RnnActivation::Kind::kAffine : RnnActivation::Kind::kScaledTanh;
    a.alpha = next(alphas, ai, 1.0f);
    a.beta = next(betas, bi, lower == "affine" ? 0.0f : 1.0f);
    return a;
  }
  for (const Known& k : kKnown)
    if (lower == k.name) {
      a.op = k.op;
      a.alpha = k.alpha ? next(alphas, ai, k.da) : 0.0f;
      a.beta = k.beta ? next(betas, bi, k.db) : 0.0f;
      return a;
    }
  c.unsupported("activation '{}' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
                "HardSigmoid, Elu, Softsign, Softplus", name);
}

kernels::RnnShape shapeOf(const KernelCall& c, RnnCell cell, const Tensor& x) {
  kernels::RnnShape s;
  s.cell = cell;
  const std::string direction = c.node.attrString("direction", "forward");
  s.dirs = direction == "bidirectional" ? 2 : 1;
  s.reverse = direction == "reverse";
  s.batch_major = c.node.attrInt("layout", 0) == 1;
  s.seq = s.batch_major ? x.dim(1) : x.dim(0);
  s.batch = s.batch_major ? x.dim(0) : x.dim(1);
  s.input = x.dim(2);
  s.hidden = c.input(2).dim(2);
  s.clip = c.node.hasAttr("clip") ? c.node.attrFloat("clip", 0.0f) : 0.0f;
  if (c.node.hasAttr("clip") && !(s.clip > 0.0f)) c.error("clip must be positive, got {}", s.clip);
  s.linear_before_reset = c.node.attrInt("linear_before_reset", 0) != 0;
  s.input_forget = c.node.attrInt("input_forget", 0) != 0;
  const int per_dir = kernels::rnnActivations(cell);
  std::vector<std::string> names;
  if (auto it = c.node.attrs.find("activations"); it != c.node.attrs.end()) {
    if (const auto* v = it->second.get<std::vector<std::string>>()) names = *v;
    else c.error("activations must be a list of strings");
  }
  if (names.empty()) {
    static const char* kDefaults[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    for (int d = 0; d < s.dirs; ++d)
      for (int i = 0; i < per_dir; ++i) names.emplace_back(kDefaults[per_dir - 1][i]);
  }
  if (names.size() != static_cast<size_t>(s.dirs * per_dir))
    c.error("{} activations given; {} direction(s) of {} take {}", names.size(), s.dirs, c.node.op, s.dirs * per_dir);
  const std::vector<float> alphas = c.node.attrFloats("activation_alpha"), betas = c.node.attrFloats("activation_beta");
  size_t ai = 0, bi = 0;
  for (const std::string& n : names) s.acts.push_back(activation(c, n, alphas, betas, ai, bi));
  return s;
}

void recurrentKernel(KernelCall& c, RnnCell cell, const kernels::RnnPacked* packed) {
  auto f32 = [&](int i) { return c.input(i).dtype() == DType::kF32 ? c.input(i) : castTensor(c.input(i), DType::kF32, c); };
  const Tensor x = f32(0), w = f32(1), r = f32(2);
  const kernels::RnnShape s = shapeOf(c, cell, x);
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
      packed_ = kernels::packRecurrent(shapeOf(c, cell_, c.input(0)), c.input(1).data<float>(), c.input(2).data<float>());
    recurrentKernel(c, cell_, packed_.get());
  }

 private:
  RnnCell cell_;
  bool constant_;
  kernels::RnnPackedPtr packed_;
};

}  // namespace

void registerRecurrentKernels(KernelRegistry& r) {
  for (auto [op, cell] : {std::pair{"RNN", RnnCell::kRnn}, std::pair{"GRU", RnnCell::kGru}, std::pair{"LSTM", RnnCell::kLstm}})
    r.add(op, [cell](const ir::Node& n, const ir::Graph& g) -> std::unique_ptr<Kernel> {
      const bool constant = n.inputs.size() > 2 && n.inputs[1] != ir::kNoValue && n.inputs[2] != ir::kNoValue &&
                            g.value(n.inputs[1]).isConstant() && g.value(n.inputs[2]).isConstant();
      return std::make_unique<RecurrentKernel>(cell, constant);
    });
}

}  // namespace npuc::engine
