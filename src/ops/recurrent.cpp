// Schemas of the recurrent ops: RNN, GRU, LSTM (ONNX opsets 7 and 14: `layout` from 14). Inputs X, W, R, then the
// optional B, sequence_lens, initial_h (and LSTM's initial_c, P); outputs Y, Y_h (and LSTM's Y_c), each optional.
#include "ops/recurrent.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace npuc::ops {

namespace {

using kernels::RnnActivation;
using kernels::RnnCell;

RnnActivation activation(const ir::Node& n, const std::string& name, const std::vector<float>& alphas,
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
  fail(ErrorCode::kUnsupported, "{}: activation '{}' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
       "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus", n.label(), name);
}

struct Cell {
  const char* op;
  int gates, max_inputs, outputs;
  const char* doc;
};

void inferRecurrent(InferContext& c, const Cell& cell, bool int8 = false) {
  for (int i : {0, 1, 2})
    if (int8 ? c.inputDType(i) != DType::kI8 : !isFloat(c.inputDType(i)))
      c.unsupported("input {} is {}; only {} is supported", i, dtypeName(c.inputDType(i)), int8 ? "int8" : "floating-point");
  const Shape& x = c.inputShape(0);
  const Shape& w = c.inputShape(1);
  const Shape& r = c.inputShape(2);
  const std::string direction = c.node().attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.error("direction '{}' is not forward, reverse or bidirectional", direction);
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = c.node().attrInt("layout", 0);
  if (layout != 0 && layout != 1) c.error("layout {} is not 0 or 1", layout);
  if (x.size() != 3) c.error("X must be 3-D ([seq, batch, input] or with layout 1 [batch, seq, input]), got {}", shapeStr(x));
  const int64_t seq = layout ? x[1] : x[0], batch = layout ? x[0] : x[1], input = x[2];
  const int64_t hidden = c.node().attrInt("hidden_size", r.size() == 3 ? r[2] : 0);
  if (hidden <= 0) c.error("hidden_size must be positive, got {}", hidden);
  const int64_t G = cell.gates;
  if (w != Shape{dirs, G * hidden, input})
    c.error("W must be [{}, {}, {}] (directions, {}·hidden_size, input), got {}", dirs, G * hidden, input, G, shapeStr(w));
  if (r != Shape{dirs, G * hidden, hidden})
    c.error("R must be [{}, {}, {}], got {}", dirs, G * hidden, hidden, shapeStr(r));
  if (c.hasInput(3) && c.inputShape(3) != Shape{dirs, 2 * G * hidden})
    c.error("B must be [{}, {}], got {}", dirs, 2 * G * hidden, shapeStr(c.inputShape(3)));
  if (c.hasInput(4)) {
    if (c.inputDType(4) != DType::kI32) c.error("sequence_lens must be int32, got {}", dtypeName(c.inputDType(4)));
    if (c.inputShape(4) != Shape{batch}) c.error("sequence_lens must be [{}], got {}", batch, shapeStr(c.inputShape(4)));
  }
  const Shape state = layout ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  for (int i : {5, 6})
    if (i < cell.max_inputs && c.hasInput(i) && c.inputShape(i) != state)
      c.error("input {} ({}) must be {}, got {}", i, i == 5 ? "initial_h" : "initial_c", shapeStr(state),
              shapeStr(c.inputShape(i)));
  if (cell.max_inputs > 7 && c.hasInput(7) && c.inputShape(7) != Shape{dirs, 3 * hidden})
    c.error("P must be [{}, {}], got {}", dirs, 3 * hidden, shapeStr(c.inputShape(7)));
  if (int8 && (c.inputDType(8) != DType::kF32 || c.inputShape(8) != Shape{2, dirs * G * hidden}))
    c.error("scales must be float32 [2, {}] (W's rows, then R's), got {} {}", dirs * G * hidden, dtypeName(c.inputDType(8)),
            shapeStr(c.inputShape(8)));
  const DType t = int8 ? DType::kF32 : c.inputDType(0);
  c.setOutput(0, t, layout ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden});
  for (int o = 1; o < cell.outputs; ++o) c.setOutput(o, t, state);
}

}  // namespace

RnnCell rnnCell(const ir::Node& n) {
  const std::string op = n.op == "QRecurrent" ? n.attrString("cell", "LSTM") : n.op;
  return op == "RNN" ? RnnCell::kRnn : op == "GRU" ? RnnCell::kGru : RnnCell::kLstm;
}

kernels::RnnShape rnnShape(const ir::Node& n, const Shape& x, int64_t hidden) {
  kernels::RnnShape s;
  s.cell = rnnCell(n);
  const std::string direction = n.attrString("direction", "forward");
  s.dirs = direction == "bidirectional" ? 2 : 1;
  s.reverse = direction == "reverse";
  s.batch_major = n.attrInt("layout", 0) == 1;
  s.seq = s.batch_major ? x[1] : x[0];
  s.batch = s.batch_major ? x[0] : x[1];
  s.input = x[2];
  s.hidden = hidden;
  s.clip = n.hasAttr("clip") ? n.attrFloat("clip", 0.0f) : 0.0f;
  if (n.hasAttr("clip") && !(s.clip > 0.0f)) fail(ErrorCode::kInvalidInput, "{}: clip must be positive, got {}", n.label(), s.clip);
  s.linear_before_reset = n.attrInt("linear_before_reset", 0) != 0;
  s.input_forget = n.attrInt("input_forget", 0) != 0;
  const int per_dir = kernels::rnnActivations(s.cell);
  std::vector<std::string> names;
  if (auto it = n.attrs.find("activations"); it != n.attrs.end()) {
    if (const auto* v = it->second.get<std::vector<std::string>>()) names = *v;
    else fail(ErrorCode::kInvalidInput, "{}: activations must be a list of strings", n.label());
  }
  if (names.empty()) {
    static const char* kDefaults[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    for (int d = 0; d < s.dirs; ++d)
      for (int i = 0; i < per_dir; ++i) names.emplace_back(kDefaults[per_dir - 1][i]);
  }
  if (names.size() != static_cast<size_t>(s.dirs * per_dir))
    fail(ErrorCode::kInvalidInput, "{}: {} activations given; {} direction(s) of {} take {}", n.label(), names.size(), s.dirs,
         n.op, s.dirs * per_dir);
  const std::vector<float> alphas = n.attrFloats("activation_alpha"), betas = n.attrFloats("activation_beta");
  size_t ai = 0, bi = 0;
  for (const std::string& name : names) s.acts.push_back(activation(n, name, alphas, betas, ai, bi));
  return s;
}

namespace {
const Cell kCells[] = {
    {"RNN", 1, 6, 2, "simple recurrent layer: H = f(x·Wᵀ + h·Rᵀ + Wb + Rb)"},
    {"GRU", 3, 6, 2, "gated recurrent unit (z, r, h gates; linear_before_reset)"},
    {"LSTM", 4, 8, 3, "long short-term memory (i, o, f, c gates; peepholes, input_forget)"},
};
}  // namespace

void registerRecurrentOps(Registry& r) {
  for (const Cell& cell : kCells) {
    OpSchema s = makeSchema(cell.op, 3, cell.max_inputs, cell.doc, [&cell](InferContext& c) { inferRecurrent(c, cell); },
                            cell.outputs);
    s.min_outputs = 0;
    s.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>&) {
      // Per step, batch entry and direction: G·hidden · (input + hidden) products.
      const Shape& x = in[0].shape;
      const Shape& w = in[1].shape;
      const Shape& r = in[2].shape;
      return x[0] * x[1] * w[0] * w[1] * (w[2] + r[2]);
    };
    r.add(std::move(s.withDefault("direction", std::string("forward")).withDefault("layout", int64_t{0})
                         .withDefault("linear_before_reset", int64_t{0}).withDefault("input_forget", int64_t{0})));
  }
  // The int8-affine LSTM / GRU (docs/numerics.md "Recurrent layers in int8"): what DequantizeLinear -> LSTM / GRU of a
  // QDQ model becomes (quant::fuseIntegerRecurrents). x int8 codes (x_scale, x_zero_point), W and R int8 per row,
  // scales [2, rows] float32 (W's, then R's) as input 8; the gates' products integer (kernels::RnnTensors::xq).
  OpSchema q = makeSchema("QRecurrent", 9, 9,
                          "int8-affine LSTM / GRU (attribute cell): x int8 at x_scale / x_zero_point, W and R int8 per row at "
                          "input 8's scales, the state in int8 at 1/127 for the products; float32 outputs",
                          [](InferContext& c) {
                            const std::string cell = c.node().attrString("cell", "");
                            if (cell != "LSTM" && cell != "GRU") c.error("cell '{}' is not LSTM or GRU", cell);
                            if (c.node().attrInt("x_zero_point", 0) < -128 || c.node().attrInt("x_zero_point", 0) > 127)
                              c.error("x_zero_point {} is outside int8", c.node().attrInt("x_zero_point", 0));
                            if (!(c.node().attrFloat("x_scale", 0.0f) > 0.0f)) c.error("x_scale must be positive");
                            inferRecurrent(c, cell == "GRU" ? kCells[1] : kCells[2], true);
                          },
                          3);
  q.domain = "ai.npuc";
  q.min_outputs = 0;
  q.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>&) {
    return in[0].shape[0] * in[0].shape[1] * in[1].shape[0] * in[1].shape[1] * (in[1].shape[2] + in[2].shape[2]);
  };
  r.add(std::move(q));
}

}  // namespace npuc::ops
