// Bias absorption (src/quant/bias_absorption.hpp, docs/calibration.md): which pairs it takes, that the model computes
// the same afterwards (on the calibration samples and on fresh ones of their kind), that the activation's range
// shrinks by each channel's floor, that a per-tensor int8 model of a channel with a large floor gains from it, and
// that translate / quantize say what moved.
#include "npuc/io.hpp"
#include "npuc/model.hpp"
#include "engine/engine.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "ops/registry.hpp"
#include "quant/bias_absorption.hpp"

#include "random_tensor.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

using test::uniform;

struct PairCase {
  std::string activation = "Relu";  // Relu / LeakyRelu as a node, "fused:Relu" as Conv1's attribute, "Clip" (Relu6), "" none
  float alpha = 0.1f;               // LeakyRelu's slope
  std::vector<int64_t> pads2 = {0, 0, 0, 0};
  int64_t k2 = 1, group2 = 1;
  std::string auto_pad2 = "NOTSET";
  bool bias2 = true;
  bool second_reader = false;  // the activation is also a graph output
  bool floors = true;          // Conv1's channels 0-3 have a large positive bias (else every channel's is below zero)
};

constexpr int64_t kC = 8;  // Conv1's output channels; channels 0-3 have a large positive bias, 4-7 one below zero
constexpr float kFloorBias = 40.0f;

/// x [N,3,10,10] -> Conv1 3x3 pad 1 (kC channels) -> activation -> Conv2 (k2 x k2, group2) -> y.
ir::Graph pairGraph(const PairCase& c) {
  ir::Graph g;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 3, 10, 10})).id;
  g.inputs().push_back(x);
  Tensor b1(DType::kF32, {kC});
  for (int64_t i = 0; i < kC; ++i) b1.data<float>()[i] = i < 4 && c.floors ? kFloorBias + 10.0f * static_cast<float>(i) : -0.05f;
  ir::ValueId a = g.addValue("a").id;
  ir::Node& c1 = g.addNode("Conv", "conv1", {x, g.addConstant("w1", uniform({kC, 3, 3, 3}, -0.2f, 0.2f, 1)).id, g.addConstant("b1", b1).id}, {a});
  c1.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  ir::ValueId h = a;
  if (c.activation.rfind("fused:", 0) == 0) {
    c1.attrs["activation"] = c.activation.substr(6);
    if (c.activation == "fused:LeakyRelu") c1.attrs["activation_alpha"] = c.alpha;
  } else if (c.activation == "Clip") {
    h = g.addValue("h").id;
    g.addNode("Clip", "act", {a, g.addConstant("lo", Tensor::scalar(0.0f)).id, g.addConstant("hi", Tensor::scalar(6.0f)).id}, {h});
  } else if (!c.activation.empty()) {
    h = g.addValue("h").id;
    ir::Node& act = g.addNode(c.activation, "act", {a}, {h});
    if (c.activation == "LeakyRelu") act.attrs["alpha"] = c.alpha;
  }
  std::vector<ir::ValueId> ins = {h, g.addConstant("w2", uniform({6, kC / c.group2, c.k2, c.k2}, -0.5f, 0.5f, 2)).id};
  if (c.bias2) ins.push_back(g.addConstant("b2", uniform({6}, -1.0f, 1.0f, 3)).id);
  ir::ValueId y = g.addValue("y").id;
  ir::Node& c2 = g.addNode("Conv", "conv2", ins, {y});
  c2.attrs["pads"] = c.pads2;
  c2.attrs["group"] = c.group2;
  if (c.auto_pad2 != "NOTSET") c2.attrs["auto_pad"] = c.auto_pad2;
  g.outputs().push_back(y);
  if (c.second_reader) g.outputs().push_back(h);
  ops::inferShapes(g);
  return g;
}

std::vector<std::map<std::string, Tensor>> samples(int n, uint32_t seed) {
  std::vector<std::map<std::string, Tensor>> s;
  for (int i = 0; i < n; ++i) s.push_back({{"x", uniform({1, 3, 10, 10}, 0.0f, 1.0f, seed + static_cast<uint32_t>(i))}});
  return s;
}

float maxAbs(const Tensor& a) {
  float m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.data<float>()[i]));
  return m;
}

float maxAbsDiff(const Tensor& a, const Tensor& b) {
  float d = 0;
  for (int64_t i = 0; i < a.numel(); ++i) d = std::max(d, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return d;
}

}  // namespace

TEST(BiasAbsorption, TakesOnlyPairsWhereItIsExact) {
  auto count = [](const PairCase& c) { return quant::absorbablePairs(pairGraph(c)).size(); };
  EXPECT_EQ(count({}), 1u);
  EXPECT_EQ(count({.activation = "LeakyRelu"}), 1u);
  EXPECT_EQ(count({.activation = "LeakyRelu", .alpha = -0.5f}), 0u);  // a positive value may come from a negative input
  EXPECT_EQ(count({.activation = "fused:LeakyRelu", .alpha = -0.5f}), 0u);
  EXPECT_EQ(count({.k2 = 3, .auto_pad2 = "SAME_UPPER"}), 0u);
  EXPECT_EQ(count({.activation = "fused:Relu"}), 1u);
  EXPECT_EQ(count({.k2 = 3, .group2 = 2}), 1u);          // unpadded 3x3, grouped
  EXPECT_EQ(count({.activation = "Clip"}), 0u);          // Relu6: its clip would move
  EXPECT_EQ(count({.activation = ""}), 0u);              // no floor without an activation
  EXPECT_EQ(count({.activation = "fused:Sigmoid"}), 0u);
  EXPECT_EQ(count({.pads2 = {1, 1, 1, 1}, .k2 = 3}), 0u);  // a padded border would read 0 where the model read c
  EXPECT_EQ(count({.second_reader = true}), 0u);         // a graph output would see the lowered values
}

TEST(BiasAbsorption, KeepsWhatTheModelComputesAndLowersTheRange) {
  for (const PairCase& c : {PairCase{}, PairCase{.activation = "LeakyRelu"}, PairCase{.activation = "fused:Relu"},
                            PairCase{.k2 = 3, .group2 = 2, .bias2 = false}}) {
    SCOPED_TRACE(c.activation + " k2=" + std::to_string(c.k2) + (c.bias2 ? "" : " no bias"));
    const ir::Graph before = pairGraph(c);
    ir::Graph after = pairGraph(c);
    const auto calib = samples(6, 100);
    const quant::BiasAbsorption r = quant::absorbHighBiases(after, calib, 2);
    ASSERT_EQ(r.pairs.size(), 1u);
    const quant::AbsorbedPair& p = r.pairs[0];
    EXPECT_EQ(p.first, "conv1");
    EXPECT_EQ(p.second, "conv2");
    EXPECT_EQ(p.channels, kC);
    EXPECT_EQ(p.moved, 4);  // the four channels of large bias; the others reach zero
    EXPECT_GT(p.largest, kFloorBias + 25);
    EXPECT_LT(p.hi_after, p.hi_before - kFloorBias);
    EXPECT_NE(p.note().find("4 of 8 channels"), std::string::npos) << p.note();
    ASSERT_TRUE(after.node(after.order().back()).hasInput(2));  // (Conv2 got a bias where it had none)
    engine::Engine e0(before), e1(after);
    for (const auto& in : calib) {
      const Tensor y0 = e0.run(in)[0], y1 = e1.run(in)[0];
      EXPECT_LT(maxAbsDiff(y0, y1), 1e-5f * maxAbs(y0)) << maxAbs(y0);  // (float32 rounding of the moved sums)
    }
    // Fresh inputs: a value below a channel's floor (below the samples' minimum and three deviations under their
    // mean) is computed as the floor, the rule's approximation: still within a thousandth.
    for (const auto& in : samples(20, 900)) {
      const Tensor y0 = e0.run(in)[0], y1 = e1.run(in)[0];
      EXPECT_LT(maxAbsDiff(y0, y1), 1e-3f * maxAbs(y0)) << maxAbs(y0);
    }
    // Channels that reach zero keep their bias; those that gave their floor have it lowered by at most that floor.
    const Tensor& b1 = *after.value(after.node(after.order().front()).inputs[2]).constant;
    for (int64_t i = 4; i < kC; ++i) EXPECT_EQ(b1.data<float>()[i], -0.05f);
    for (int64_t i = 0; i < 4; ++i) EXPECT_LT(b1.data<float>()[i], 10.0f + 10.0f * static_cast<float>(i));
  }
}

TEST(BiasAbsorption, ATensorOfForcedRangeKeepsItsValues) {
  for (const char* name : {"h", "a"}) {  // the activation, or Conv1's output before it
    ir::Graph g = pairGraph({});
    EXPECT_TRUE(quant::absorbHighBiases(g, samples(4, 7), 1, {name}).pairs.empty()) << name;
  }
}

TEST(BiasAbsorption, NothingToMoveLeavesTheGraph) {
  ir::Graph g = pairGraph({.floors = false});
  const size_t values = g.valueIds().size();
  EXPECT_TRUE(quant::absorbHighBiases(g, samples(4, 7), 1).pairs.empty());
  EXPECT_EQ(g.valueIds().size(), values);
}

// Per tensor, a channel of floor ~40..70 sets the activation's one range; with it absorbed, the other channels keep
// their resolution: the int8 model's output is closer to float. Also: the quantization table says so, and the same
// options give the same model.
TEST(BiasAbsorption, PerTensorInt8GainsAndTheTableSaysSo) {
  const fs::path dir = test::scratchDir("bias_absorption");
  onnx_io::exportFile(pairGraph({}), dir / "pair.onnx");
  const Model m = Model::load(dir / "pair.onnx");
  QuantizeOptions q;
  for (auto& s : samples(16, 50)) q.calibration["x"].push_back(s.at("x"));
  q.per_channel = false;
  q.threads = 1;
  auto error = [&](const Model& qm) {
    Session f(m, 1), s(qm, 1);
    double num = 0, den = 0;
    for (const auto& in : samples(20, 900)) {
      const Tensor y0 = f.run(in)[0], y1 = s.run(in)[0];
      for (int64_t i = 0; i < y0.numel(); ++i) {
        const double d = static_cast<double>(y0.data<float>()[i]) - y1.data<float>()[i];
        num += d * d;
        den += static_cast<double>(y0.data<float>()[i]) * y0.data<float>()[i];
      }
    }
    return num / den;
  };
  QuantizeReport plain_rep, absorbed_rep;
  const double plain = error(m.quantizedQdq(q, &plain_rep));
  q.absorb_bias = true;
  const Model absorbed = m.quantizedQdq(q, &absorbed_rep);
  const double better = error(absorbed);
  EXPECT_EQ(plain_rep.bias_absorbed, 0);
  EXPECT_EQ(absorbed_rep.bias_absorbed, 1);
  EXPECT_LT(better, plain / 4) << "relative squared error " << plain << " -> " << better;
  int noted = 0;
  for (const QuantizedTensor& t : absorbed_rep.tensors) noted += t.kind == "activation" && t.note.find("bias absorption") != std::string::npos;
  EXPECT_EQ(noted, 1);
  absorbed.saveOnnx(dir / "a.onnx");
  m.quantizedQdq(q).saveOnnx(dir / "b.onnx");
  EXPECT_EQ(readFileBytes(dir / "a.onnx"), readFileBytes(dir / "b.onnx"));
}

// translate --absorb-bias on both int8 families: the layer moved is counted and said in the quantization table, the
// precision file's absorb_bias: true gives the same package, and a float target ignores it with a warning.
TEST(BiasAbsorption, TranslateAbsorbsForEveryInt8Family) {
  const fs::path dir = test::scratchDir("bias_absorption_translate");
  onnx_io::exportFile(pairGraph({}), dir / "pair.onnx");
  auto options = [&](const std::string& prefix, const std::string& target) {
    TranslateOptions o;
    o.prefix = prefix;
    o.onnx = dir / "pair.onnx";
    o.target = target;
    o.out_root = dir;
    for (auto& s : samples(8, 50)) o.calibration["x"].push_back(s.at("x"));
    o.absorb_bias = true;
    return o;
  };
  for (auto [target, table] : {std::pair{"generic-int8", "_quant_table.csv"}, std::pair{"tidl", "_pow2_table.csv"}}) {
    SCOPED_TRACE(target);
    const TranslateResult r = translate(options(std::string("a_") + target, target));
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.bias_absorbed_layers, 1);
    const std::string text = readFileText(dir / (std::string("a_") + target) / (std::string("a_") + target + table));
    EXPECT_NE(text.find("bias absorption: 4 of 8 channels"), std::string::npos) << text;
    std::ofstream(dir / "p.yaml") << "layers: {}\nabsorb_bias: true\n";
    TranslateOptions p = options(std::string("a_") + target, target);
    p.absorb_bias = false;
    p.precision = dir / "p.yaml";
    p.out_root = dir / "again";
    const TranslateResult again = translate(p);
    EXPECT_EQ(again.content_hash, r.content_hash);
    p.precision.clear();
    p.out_root = dir / "plain";
    const TranslateResult plain = translate(p);
    EXPECT_EQ(plain.bias_absorbed_layers, 0);
    EXPECT_NE(plain.content_hash, r.content_hash);
  }
  TranslateOptions uncalibrated = options("u", "tidl");  // (reports only: nothing to measure the floors on)
  uncalibrated.calibration.clear();
  const TranslateResult u = translate(uncalibrated);
  ASSERT_TRUE(u.ok);
  EXPECT_TRUE(std::any_of(u.warnings.begin(), u.warnings.end(), [](const std::string& w) { return w.find("--absorb-bias is ignored") == 0; }));
  const TranslateResult fp = translate(options("f", "generic"));
  ASSERT_TRUE(fp.ok);
  EXPECT_EQ(fp.bias_absorbed_layers, 0);
  ASSERT_FALSE(fp.warnings.empty());
  EXPECT_NE(fp.warnings[0].find("--absorb-bias is ignored"), std::string::npos) << fp.warnings[0];
}
