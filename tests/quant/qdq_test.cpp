// int8-affine as QDQ (quant/qdq.hpp, Model::quantizedQdq): the affine parameters, ONNX's QuantizeLinear /
// DequantizeLinear semantics in the engine (numpy's formulas written out), and the digits model quantized:
// accuracy against its float self and its labels, the saved ONNX read back, bad calibration data.
#include "quant/qdq.hpp"
#include "engine/engine.hpp"
#include "package/package.hpp"
#include "passes/pass.hpp"
#include "ops/registry.hpp"

#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"
#include "support/npy.hpp"

#include "frontend/onnx/onnx_io.hpp"
#include "random_tensor.hpp"
#include "scratch_dir.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <set>
#include <tuple>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>

#include <unistd.h>

namespace npuc {
const ir::Graph& graphOf(const Model& m);  // src/driver/model.cpp
ir::Graph& mutableGraphOf(Model& m);
}

namespace npuc::quant {
namespace {

const std::string kDigits = std::string(NPUC_SOURCE_DIR) + "/models/digits/";

/// Translation options for an int8 package of `onnx` under a temporary folder of this process (`folder` + pid).
TranslateOptions int8Options(const std::string& prefix, const std::filesystem::path& onnx, const std::string& target,
                             const std::string& folder) {
  TranslateOptions o;
  o.prefix = prefix;
  o.onnx = onnx;
  o.target = target;
  o.out_root = std::filesystem::temp_directory_path() / (folder + std::to_string(::getpid()));
  return o;
}

/// Calibration for the Fashion-MNIST models on 16 seeded uniform images (the package tests check the arithmetic,
/// not the accuracy), on 2 threads.
QuantizeOptions fashionCalibration(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Tensor c(DType::kF32, Shape{16, 1, 28, 28});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = u(rng);
  QuantizeOptions q;
  q.calibration["input"] = {c};
  q.threads = 2;
  return q;
}

TEST(Qdq, AffineParametersHoldZeroAndTheRange) {
  float s;
  int zp;
  affineInt8(0.0, 1.0, &s, &zp);  // a Relu output: 0 is the lowest code
  EXPECT_FLOAT_EQ(s, 1.0f / 255.0f);
  EXPECT_EQ(zp, -128);
  // The codes -128 and 127 reach lo and hi to within half a step (the zero point is rounded, 0 stays exact).
  for (auto [lo, hi] : {std::pair{-1.0, 1.0}, std::pair{-3.0, 1.0}, std::pair{-0.01, 7.0}, std::pair{-5.0, 0.2}}) {
    affineInt8(lo, hi, &s, &zp);
    EXPECT_FLOAT_EQ(s, static_cast<float>((hi - lo) / 255.0));
    EXPECT_EQ(zp, std::lround(-128.0 - lo / s));
    EXPECT_LE((-128 - zp) * double(s), lo + s / 2.0) << lo << " " << hi;
    EXPECT_GE((127 - zp) * double(s), hi - s / 2.0) << lo << " " << hi;
  }
  affineInt8(2.0, 5.0, &s, &zp);  // widened to hold 0
  EXPECT_FLOAT_EQ(s, 5.0f / 255.0f);
  affineInt8(0.0, 0.0, &s, &zp);  // all zero: any scale, zero exact
  EXPECT_GT(s, 0.0f);
  EXPECT_GE(zp, -128);
  EXPECT_LE(zp, 127);
}

struct Digits {
  Model model;
  Tensor x, y;
  Digits() : model(Model::load(kDigits + "digits_cnn.onnx")) {
    x = readNpyFile(kDigits + "test_x.npy");
    y = readNpyFile(kDigits + "test_y.npy");
  }
  /// The first n test images as one stacked calibration tensor.
  QuantizeOptions calib(int64_t n) const {
    QuantizeOptions o;
    Tensor c(DType::kF32, Shape{n, 1, 8, 8});
    std::memcpy(c.raw(), x.raw(), c.nbytes());
    o.calibration["input"] = {c};
    o.threads = 2;
    return o;
  }
  /// The package in `dir` gives `model`'s outputs on the engine, bit for bit, on the first 40 test images, in exact and
  /// fast mode at 1, 2 and 3 threads.
  void expectPackageEquals(const std::filesystem::path& dir, const Model& model) const {
    Session s(model, 1);
    for (bool exact : {true, false})
      for (int threads : {1, 2, 3}) {
        Runtime rt(dir, RuntimeOptions{threads, exact});
        for (int64_t i = 0; i < 40; ++i) {
          Tensor xi(DType::kF32, Shape{1, 1, 8, 8});
          std::memcpy(xi.raw(), static_cast<const float*>(x.raw()) + i * 64, 64 * sizeof(float));
          rt.setInput("input", xi);
          rt.run();
          Tensor want = s.run({{"input", xi}})[0];
          EXPECT_TRUE(rt.outputFloat(rt.outputs()[0].name).sameBits(want)) << "sample " << i << (exact ? " exact" : " fast") << ", " << threads << " threads";
        }
      }
  }
  /// top-1 over the whole test set, one image at a time.
  double accuracy(const Model& m, std::vector<std::vector<float>>* logits = nullptr) const {
    Session s(m, 1);
    int64_t n = x.dim(0), correct = 0;
    auto labels = y.toInt64();
    for (int64_t i = 0; i < n; ++i) {
      Tensor xi(DType::kF32, Shape{1, 1, 8, 8});
      std::memcpy(xi.raw(), static_cast<const float*>(x.raw()) + i * 64, 64 * sizeof(float));
      Tensor out = s.run({{"input", xi}})[0];
      const float* r = out.data<float>();
      correct += std::max_element(r, r + out.numel()) - r == labels[static_cast<size_t>(i)];
      if (logits) logits->emplace_back(r, r + out.numel());
    }
    return 100.0 * static_cast<double>(correct) / static_cast<double>(n);
  }
};

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

TEST(Qdq, DigitsModelKeepsItsAccuracyAndItsOutputs) {
  Digits d;
  QuantizeReport rep;
  Model q = d.model.quantizedQdq(d.calib(100), &rep);
  EXPECT_EQ(rep.samples, 100u);
  int qn = 0, dqn = 0;
  for (auto& n : q.nodes()) qn += n.op == "QuantizeLinear", dqn += n.op == "DequantizeLinear";
  int acts = 0, weights = 0;
  for (auto& t : rep.tensors) acts += t.kind == "activation", weights += t.kind == "weight";
  EXPECT_EQ(qn, acts);
  EXPECT_GE(dqn, acts + weights);
  EXPECT_EQ(weights, 4);  // three convolutions and the classifier
  for (auto& t : rep.tensors) {
    if (t.kind != "activation") continue;
    EXPECT_EQ(t.saturated, 0.0) << t.name;  // minmax clips nothing
    EXPECT_GT(t.snr_db, 15.0) << t.name;    // int8 storage: ~20-50 dB per tensor, the input's grid nearly exact
  }
  std::vector<std::vector<float>> fl, ql;
  double fa = d.accuracy(d.model, &fl), qa = d.accuracy(q, &ql);
  EXPECT_GE(qa, fa - 0.5) << "float " << fa << "%, int8 " << qa << "%";
  double worst = 1;
  for (size_t i = 0; i < fl.size(); ++i) worst = std::min(worst, cosine(fl[i], ql[i]));
  EXPECT_GT(worst, 0.99);
  // Not the float model: the int8 storage changes the logits.
  bool differs = false;
  for (size_t i = 0; i < fl.size() && !differs; ++i) differs = fl[i] != ql[i];
  EXPECT_TRUE(differs);
}

TEST(Qdq, TheSavedModelIsStandardOnnxAndRunsTheSame) {
  Digits d;
  Model q = d.model.quantizedQdq(d.calib(50));
  auto path = std::filesystem::temp_directory_path() / ("npuc_qdq_" + std::to_string(::getpid()) + ".onnx");
  q.saveOnnx(path);
  Model back = Model::load(path);
  std::filesystem::remove(path);
  std::vector<std::vector<float>> a, b;
  d.accuracy(q, &a);
  d.accuracy(back, &b);
  EXPECT_EQ(a, b);  // bit for bit: the same int8 constants and scales
}

TEST(Qdq, PerTensorWeightsAreCoarser) {
  Digits d;
  QuantizeOptions o = d.calib(100);
  QuantizeReport pc, pt;
  d.model.quantizedQdq(o, &pc);
  o.per_channel = false;
  d.model.quantizedQdq(o, &pt);
  for (auto& t : pt.tensors)
    if (t.kind == "weight") {
      EXPECT_EQ(t.channels, 1) << t.name;
    }
  for (auto& t : pc.tensors)
    if (t.kind == "weight") {
      EXPECT_GT(t.channels, 1) << t.name;
    }
}

// A layer whose input range is tiny (GoogLeNet's classifier under torchvision's seeded init reads activations of
// 1e-12) cannot hold its bias in int32 at x_scale * w_scale: the bias stays float32 (named in the warnings) instead
// of saturating, and the layer's output keeps it. (Saturated, the bias was destroyed: output cosine 0.)
TEST(Qdq, ABiasThatWouldSaturateInt32StaysFloat) {
  ir::Graph g;
  g.opset = 13;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 4})).id;
  g.inputs().push_back(x);
  ir::ValueId t = g.addValue("tiny").id;
  g.addNode("Mul", "shrink", {x, g.addConstant("k", Tensor::fromVector<float>({1}, {1e-12f})).id}, {t});
  ir::ValueId y = g.addValue("y").id;
  g.addNode("Gemm", "fc", {t, g.addConstant("w", Tensor::fromVector<float>({3, 4}, {1, -2, 3, 1, 0.5f, 1, -1, 2, 1, 1, 1, 1})).id,
                          g.addConstant("b", Tensor::fromVector<float>({3}, {0.5f, -0.25f, 0.125f})).id},
            {y}).attrs["transB"] = int64_t{1};
  g.outputs().push_back(y);
  ops::inferShapes(g);
  std::vector<std::map<std::string, Tensor>> samples;
  for (int i = 0; i < 8; ++i) samples.push_back({{"x", Tensor::fromVector<float>({1, 4}, {0.1f * i, -0.2f, 0.3f, 1.0f - 0.1f * i})}});
  const Tensor want = engine::Engine(g).run(samples[3])[0];
  QdqReport rep = quantizeToQdq(g, collectStats(g, samples, 1));
  bool named = false;
  for (const auto& w : rep.warnings) named |= w.find("bias 'b'") != std::string::npos && w.find("kept in float32") != std::string::npos;
  EXPECT_TRUE(named);
  const Tensor got = engine::Engine(g).run(samples[3])[0];
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(got.data<float>()[c], want.data<float>()[c], 0.01) << c;  // (the bias: 0.5, -0.25, 0.125)
}

// Per-layer overrides: a layer kept in float32 keeps float weights and computes in float between its conversion
// layers (not an integer layer; the others still are), a forced range replaces the calibrated one (widened to hold 0),
// and names the model lacks are errors naming them.
TEST(Qdq, OverridesKeepALayerFloatAndForceARange) {
  Digits d;
  QuantizeOptions q = d.calib(60);
  q.integer_layers = true;
  q.keep_float = {"/features/features.3/Conv"};
  q.ranges["/features/features.2/Relu_output_0"] = {0.5, 4.0};
  QuantizeReport rep;
  Model m = d.model.quantizedQdq(q, &rep);
  const ir::Graph& g = graphOf(m);
  EXPECT_EQ(rep.integer_layers, 4) << [&] {  // the other two convolutions, the global average pooling, the classifier Gemm
    std::string ops;
    for (ir::NodeId id : g.order()) ops += g.node(id).op + " " + g.node(id).name + "\n";
    return ops;
  }();
  bool kept_float = false;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (n.name != "/features/features.3/Conv") continue;
    kept_float = n.op == "Conv";
    const ir::Value& w = g.value(n.inputs[1]);  // float weights (a constant, not a DequantizeLinear of int8 codes)
    EXPECT_TRUE(w.isConstant() && w.constant->dtype() == DType::kF32) << w.name;
  }
  EXPECT_TRUE(kept_float);
  bool forced = false;
  for (const auto& t : rep.tensors)
    if (t.name == "/features/features.2/Relu_output_0") {
      forced = true;
      EXPECT_DOUBLE_EQ(t.lo, 0.0);  // (widened to hold 0)
      EXPECT_DOUBLE_EQ(t.hi, 4.0);
      EXPECT_NEAR(t.scale, 4.0 / 255.0, 1e-7);
    }
  EXPECT_TRUE(forced);
  EXPECT_GT(d.accuracy(m), 0.97);
  QuantizeOptions bad = d.calib(10);
  bad.keep_float = {"no_such_node"};
  try {
    (void)d.model.quantizedQdq(bad);
    ADD_FAILURE() << "an unknown node name was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no_such_node': the model has no node of that name"), std::string::npos) << e.what();
  }
  bad.keep_float = {"/features/features.2/Relu"};  // (no weights: nothing to keep)
  try {
    (void)d.model.quantizedQdq(bad);
    ADD_FAILURE() << "--keep-float of a Relu was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no weights to keep in float"), std::string::npos) << e.what();
  }
  bad.keep_float.clear();
  bad.ranges["nope"] = {0, 1};
  EXPECT_THROW((void)d.model.quantizedQdq(bad), Error);
}

// Layers kept in float in a row exchange float values: the Relu output between two kept convolutions has no
// QuantizeLinear / DequantizeLinear (nor a line in the table); what a kept layer reads from or gives to an int8 layer
// still does.
TEST(Qdq, ConsecutiveKeptLayersExchangeFloatValues) {
  Digits d;
  auto quantized = [&](std::vector<std::string> keep) {
    QuantizeOptions q = d.calib(60);  // (as QDQ pairs: integer_layers fuses them into integer layers)
    q.keep_float = std::move(keep);
    QuantizeReport rep;
    Model m = d.model.quantizedQdq(q, &rep);
    std::set<std::string> tables, quantized_values;
    for (const auto& t : rep.tensors)
      if (t.kind == "activation") tables.insert(t.name);
    const ir::Graph& g = graphOf(m);
    for (ir::NodeId id : g.order())
      if (g.node(id).op == "QuantizeLinear") quantized_values.insert(g.value(g.node(id).inputs[0]).name);
    tables.erase("logits");  // (the graph output: its QuantizeLinear reads it renamed)
    quantized_values.erase("logits_replaced");
    EXPECT_EQ(tables, quantized_values);
    EXPECT_GT(d.accuracy(m), 0.97);
    return tables;
  };
  const std::string between = "/features/features.5/Relu_output_0", before = "/features/features.2/Relu_output_0",
                    after = "/features/features.7/Relu_output_0";
  const std::set<std::string> one = quantized({"/features/features.3/Conv"});
  EXPECT_TRUE(one.count(before) && one.count(between) && one.count(after));  // (its int8 reader, features.6)
  const std::set<std::string> two = quantized({"/features/features.3/Conv", "/features/features.6/Conv"});
  EXPECT_TRUE(two.count(before) && two.count(after));  // (an int8 writer; an int8 reader, the MaxPool)
  EXPECT_FALSE(two.count(between));
  EXPECT_EQ(two.size() + 1, one.size());
}

/// Four seeded samples of input x [1, 2, 4, 4] in [-1, 1).
std::vector<std::map<std::string, Tensor>> smallSamples() {
  std::vector<std::map<std::string, Tensor>> samples;
  for (uint32_t i = 0; i < 4; ++i) samples.push_back({{"x", test::uniform({1, 2, 4, 4}, -1.0f, 1.0f, 10 + i)}});
  return samples;
}

/// q quantized to QDQ on `stats` with `keep` kept in float: the names of the values a QuantizeLinear reads.
std::set<std::string> quantizedValueNames(ir::Graph& q, const std::map<std::string, TensorStats>& stats, std::set<std::string> keep) {
  QdqOptions o;
  o.keep_float = std::move(keep);
  quantizeToQdq(q, stats, o);
  std::set<std::string> names;
  for (ir::NodeId id : q.order())
    if (q.node(id).op == "QuantizeLinear") names.insert(q.value(q.node(id).inputs[0]).name);
  return names;
}

// A layer kept in float takes the element-wise activation that alone reads it along (a LeakyRelu computes on its
// float output instead of as an int8 table between a quantize and a dequantize), and a kept layer writing a graph
// output gives it in float (it used to be quantized there: a detector whose head the user kept in float still lost
// its boxes' precision). x -> conv1 -> LeakyRelu -> conv2 -> y.
TEST(Qdq, AKeptLayerTakesItsActivationAlongAndGivesItsOutputInFloat) {
  auto make = [](ir::Graph& g, bool a_out = false) {
    g.opset = 13;
    ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 2, 4, 4})).id;
    g.inputs().push_back(x);
    ir::ValueId a = g.addValue("a").id, h = g.addValue("h").id, y = g.addValue("y").id;
    g.addNode("Conv", "conv1", {x, g.addConstant("w1", test::uniform({4, 2, 1, 1}, -1.0f, 1.0f, 1)).id}, {a});
    g.addNode("LeakyRelu", "act", {a}, {h}).attrs["alpha"] = 0.1f;
    g.addNode("Conv", "conv2", {h, g.addConstant("w2", test::uniform({3, 4, 1, 1}, -1.0f, 1.0f, 2)).id}, {y});
    g.outputs().push_back(y);
    if (a_out) g.outputs().push_back(a);  // (conv1's output a model output too, read by the LeakyRelu as well)
    ops::inferShapes(g);
  };
  ir::Graph g;
  make(g);
  const std::vector<std::map<std::string, Tensor>> samples = smallSamples();
  const auto stats = collectStats(g, samples, 1);
  auto quantizedValues = [&](std::set<std::string> keep) {
    ir::Graph q;
    make(q);
    return quantizedValueNames(q, stats, std::move(keep));
  };
  // (a graph output's QuantizeLinear reads it renamed: y_replaced)
  EXPECT_EQ(quantizedValues({}), (std::set<std::string>{"x", "a", "h", "y_replaced"}));
  EXPECT_EQ(quantizedValues({"conv1"}), (std::set<std::string>{"x", "h", "y_replaced"}));  // the LeakyRelu in float
  EXPECT_EQ(quantizedValues({"conv2"}), (std::set<std::string>{"x", "a", "h"}));  // y in float
  EXPECT_EQ(quantizedValues({"conv1", "conv2"}), (std::set<std::string>{"x"}));
  {  // Kept conv1 whose output is a model output that an int8 layer (the LeakyRelu, not taken along: its input leaves the
     // model) also reads: the model output stays conv1's float value, the reader reads the dequantized copy.
    ir::Graph q;
    make(q, true);
    QdqOptions o;
    o.keep_float = {"conv1"};
    quantizeToQdq(q, collectStats(q, samples, 1), o);
    const ir::Value& out = q.value(q.outputs()[1]);
    EXPECT_EQ(out.name, "a");
    EXPECT_EQ(q.node(out.producer).name, "conv1");  // (not a DequantizeLinear)
  }
  // Kept at float16, the activation is computed at float16 too: no cast between the layer and its activation.
  const std::filesystem::path dir = test::scratchDir("qdq_taken_along");
  onnx_io::exportFile(g, dir / "m.onnx");
  TranslateOptions o;
  o.prefix = "m";
  o.onnx = dir / "m.onnx";
  o.target = "generic-int8";
  o.out_root = dir;
  for (const auto& smp : samples) o.calibration["x"].push_back(smp.at("x"));
  o.keep_float16 = {"conv1"};
  const TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  std::vector<std::string> kinds;
  const Runtime rt(r.dir);
  for (const RuntimeLayer& l : rt.layers()) kinds.push_back(l.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"quantize", "dequantize", "cast", "conv", "unary", "cast", "quantize", "conv",
                                             "dequantize"}));
}

// A head kept in float reaches the model's outputs in float through its data movement and Concat: x -> conv1 ->
// Reshape -> y1, and conv2, conv3 -> Concat -> y2. With conv3 int8, the Concat (an int8 input) and conv2's output
// are quantized as before.
TEST(Qdq, KeptLayersReachTheOutputThroughDataMovementInFloat) {
  auto make = [](ir::Graph& g) {
    g.opset = 13;
    ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 2, 4, 4})).id;
    g.inputs().push_back(x);
    ir::ValueId c1 = g.addValue("c1").id, c2 = g.addValue("c2").id, c3 = g.addValue("c3").id, y1 = g.addValue("y1").id,
                y2 = g.addValue("y2").id;
    for (auto [name, out, seed] : {std::tuple{"conv1", c1, 1u}, {"conv2", c2, 2u}, {"conv3", c3, 3u}})
      g.addNode("Conv", name, {x, g.addConstant(std::string("w") + name, test::uniform({3, 2, 1, 1}, -1.0f, 1.0f, seed)).id}, {out});
    g.addNode("Reshape", "reshape", {c1, g.addConstant("shape", Tensor::fromVector<int64_t>({2}, {1, 48})).id}, {y1});
    g.addNode("Concat", "cat", {c2, c3}, {y2}).attrs["axis"] = int64_t{1};
    g.outputs() = {y1, y2};
    ops::inferShapes(g);
  };
  ir::Graph g;
  make(g);
  const auto stats = collectStats(g, smallSamples(), 1);
  auto run = [&](std::set<std::string> keep, ir::Graph& q) {
    make(q);
    return quantizedValueNames(q, stats, std::move(keep));
  };
  ir::Graph all, two;
  EXPECT_EQ(run({"conv1", "conv2", "conv3"}, all), (std::set<std::string>{"x"}));
  EXPECT_EQ(all.node(all.value(all.outputs()[0]).producer).op, "Reshape");
  EXPECT_EQ(all.node(all.value(all.outputs()[1]).producer).op, "Concat");
  EXPECT_EQ(run({"conv1", "conv2"}, two), (std::set<std::string>{"x", "c2", "c3", "y2_replaced"}));
  EXPECT_EQ(two.node(two.value(two.outputs()[0]).producer).op, "Reshape");
}

// A Clip whose bound the model computes (here: a model input) is no activation fused into the Conv before it: the
// Conv's output is quantized (it was not, so the Conv ran in float32 in an int8 package, timed as int8).
TEST(Qdq, AClipOfComputedBoundsIsNoFusedActivation) {
  ir::Graph g;
  g.opset = 13;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 2, 4, 4})).id;
  ir::ValueId lo = g.addValue("lo", ir::makeType(DType::kF32, {})).id;
  g.inputs() = {x, lo};
  ir::ValueId c = g.addValue("c").id, y = g.addValue("y").id;
  g.addNode("Conv", "conv", {x, g.addConstant("w", test::uniform({3, 2, 1, 1}, -1.0f, 1.0f, 1)).id}, {c});
  g.addNode("Clip", "clip", {c, lo, g.addConstant("hi", Tensor::scalar(6.0f)).id}, {y});
  g.outputs().push_back(y);
  ops::inferShapes(g);
  std::vector<std::map<std::string, Tensor>> samples;
  for (uint32_t i = 0; i < 4; ++i) samples.push_back({{"x", test::uniform({1, 2, 4, 4}, -1.0f, 1.0f, 10 + i)}, {"lo", Tensor::scalar(-0.5f)}});
  quantizeToQdq(g, collectStats(g, samples, 1));
  std::set<std::string> names;
  for (ir::NodeId id : g.order())
    if (g.node(id).op == "QuantizeLinear") names.insert(g.value(g.node(id).inputs[0]).name);
  EXPECT_TRUE(names.count("c")) << fmt::format("{}", fmt::join(names, ", "));
}

// The per-channel weight diagnostic: a channel whose range is far above the median channel's is named, with its
// numbers; ordinary spreads are not.
TEST(Qdq, AChannelWithAnOutlyingWeightRangeIsNamed) {
  for (float wide : {1.0f, 50.0f}) {
    ir::Graph g;
    g.opset = 13;
    ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 2, 3, 3})).id;
    g.inputs().push_back(x);
    std::vector<float> w = {0.5f, -0.4f, 0.3f, 0.6f, -0.2f, 0.45f, 0.35f, -0.5f, 0.4f, 0.3f, -0.6f, 0.2f};
    w[6] *= wide, w[7] *= wide;  // channel 3
    ir::ValueId y = g.addValue("y").id;
    g.addNode("Conv", "conv", {x, g.addConstant("w", Tensor::fromVector<float>({6, 2, 1, 1}, w)).id}, {y});
    g.outputs().push_back(y);
    ops::inferShapes(g);
    std::vector<std::map<std::string, Tensor>> samples;
    for (int i = 0; i < 4; ++i) {
      Tensor t(DType::kF32, Shape{1, 2, 3, 3});
      for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = 0.1f * static_cast<float>((k + i) % 7) - 0.3f;
      samples.push_back({{"x", t}});
    }
    QdqReport rep = quantizeToQdq(g, collectStats(g, samples, 1));
    bool named = false;
    for (const auto& m : rep.warnings) named |= m.find("weight 'w': channel 3's range 25 is 42x the median channel's 0.6") != std::string::npos;
    EXPECT_EQ(named, wide > 1.0f) << (rep.warnings.empty() ? "" : rep.warnings[0]);
  }
}

TEST(Qdq, BadCalibrationDataGetsClearErrors) {
  Digits d;
  auto expectError = [&](QuantizeOptions o, const std::string& fragment) {
    try {
      d.model.quantizedQdq(o);
      FAIL() << "expected an error containing '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  QuantizeOptions o = d.calib(10);
  o.method = "median";
  expectError(o, "unknown range method 'median'");
  o = d.calib(10);
  o.calibration["input"] = {Tensor(DType::kF32, Shape{10, 1, 8, 7})};
  expectError(o, "does not stack samples");
  o = d.calib(10);
  o.calibration["other"] = o.calibration["input"];
  expectError(o, "no input of that name");
  o = d.calib(10);
  o.calibration.clear();
  expectError(o, "has none");
  o = d.calib(10);
  o.calibration["input"] = {Tensor(DType::kF64, Shape{10, 1, 8, 8})};
  expectError(o, "the input is float32");
}

TEST(Qdq, DiagnosticsGiveTheirNumbers) {
  Digits d;
  QuantizeOptions o = d.calib(4);
  o.method = "entropy";
  QuantizeReport rep;
  d.model.quantizedQdq(o, &rep);
  bool few = false;
  for (auto& w : rep.warnings) few |= w.find("4 calibration sample(s) are few for the entropy method") != std::string::npos;
  EXPECT_TRUE(few);
  o = d.calib(100);
  o.method = "percentile";
  o.percentile = 99.9999;  // 1 in a million: more than the values of the logits (100 x 10)
  d.model.quantizedQdq(o, &rep);
  bool pct = false, clipped = false;
  for (auto& w : rep.warnings) pct |= w.find("values are too few for the 99.9999th percentile") != std::string::npos;
  EXPECT_TRUE(pct);
  o.percentile = 90;  // clips a tenth of the largest magnitudes
  d.model.quantizedQdq(o, &rep);
  for (auto& t : rep.tensors) clipped |= t.kind == "activation" && t.saturated > 0.01;
  EXPECT_TRUE(clipped);
}

TEST(Qdq, NonFiniteSamplesAreNamedInTheWarnings) {
  Digits d;
  QuantizeOptions o = d.calib(10);
  Tensor& c = o.calibration["input"][0];
  c = c.clone();
  c.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  QuantizeReport rep;
  d.model.quantizedQdq(o, &rep);
  bool named = false;
  for (auto& w : rep.warnings) named |= w.find("'input'") != std::string::npos && w.find("NaN or infinite") != std::string::npos;
  EXPECT_TRUE(named);
}

// An int8-affine package (target generic-int8): integer convolutions (int8 operands, int32 accumulation, multiplier
// + shift requantization), int8 activations between layers, the other layers in float32 between dequantize and
// quantize layers. Its outputs equal the engine's on the same quantized model bit for bit, in the reference and the
// fast mode, at 1, 2 and 3 threads.
TEST(Int8AffinePackage, EqualsTheQdqModelOnTheEngine) {
  Digits d;
  TranslateOptions o = int8Options("digits8", kDigits + "digits_cnn.onnx", "generic-int8", "npuc_int8_");
  QuantizeOptions q = d.calib(100);
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.calibration_samples, 100u);
  q.integer_layers = true;  // what translate does: its convolutions are integer layers (ai.npuc QConv, qconv_ref)
  QuantizeReport rep;
  Model qdq = Model::load(o.onnx).optimized().quantizedQdq(q, &rep);
  EXPECT_EQ(rep.integer_layers, 5);  // the three convolutions, the global average pooling and the classifier Gemm (a 1x1 QConv)
  EXPECT_EQ(Runtime(r.dir, RuntimeOptions{1, true}).numerics(), "int8-affine");
  d.expectPackageEquals(r.dir, qdq);
  std::filesystem::remove_all(o.out_root);
}

/// A layer of package p by name: its descriptor (nullptr when none has that name).
const package::Descriptor* layerNamed(const package::Package& p, const std::string& name) {
  for (const package::LayerInfo& l : p.layers)
    if (l.name == name) return &(l.engine == package::Engine::kMac ? p.mac : p.vec)[l.index];
  return nullptr;
}

// Mixed precision (docs/numerics.md): a layer of an int8-affine package kept at float16 reads its input through a cast
// layer to float16, holds float16 weights and a float32 bias, writes float16 and is cast back to float32 before the
// quantize layer. The package equals the engine on the QDQ model with that layer's input, weights and output rounded
// to float16 (Cast pairs: what float16 storage does), bit for bit in exact and fast mode at 1, 2 and 3 threads.
/// A float16 layer of a mixed-precision package as the engine computes it: in `g` (a QDQ model keeping the layer
/// named `name` in float), that layer's input, weights and output rounded through float16.
void roundThroughFloat16(ir::Graph& g, const std::string& name) {
  auto round16 = [&](ir::ValueId v, const std::string& tag) {
    ir::Type t16 = g.value(v).type;
    t16.dtype = DType::kF16;
    const ir::Type t32 = g.value(v).type;
    const ir::ValueId h = g.addValue(g.uniqueValueName(tag + "_f16"), t16).id;
    const ir::ValueId f = g.addValue(g.uniqueValueName(tag + "_rounded"), t32).id;
    g.addNode("Cast", g.uniqueValueName(tag + "/to_f16"), {v}, {h}).attrs["to"] = int64_t{10};
    g.addNode("Cast", g.uniqueValueName(tag + "/to_f32"), {h}, {f}).attrs["to"] = int64_t{1};
    return f;
  };
  ir::NodeId id = ir::kNoNode;
  for (ir::NodeId n : g.order())
    if (g.node(n).name == name) id = n;
  ASSERT_NE(id, ir::kNoNode) << name;
  const ir::ValueId y = g.node(id).outputs[0];
  const ir::UseMap uses = g.uses();
  const ir::ValueId x16 = round16(g.node(id).inputs[0], "x");
  g.node(id).inputs[0] = x16;
  Tensor w = *g.value(g.node(id).inputs[1]).constant;
  Tensor w16(DType::kF32, w.shape());
  for (int64_t i = 0; i < w.numel(); ++i) w16.data<float>()[i] = halfToFloat(floatToHalf(w.data<float>()[i]));
  g.node(id).inputs[1] = g.addConstant(g.uniqueValueName("w_f16_values"), w16).id;
  const ir::ValueId y16 = round16(y, "y");
  for (auto [user, input] : uses.at(y)) g.node(user).inputs[static_cast<size_t>(input)] = y16;
  g.topoSort();
}

TEST(Int8MixedPrecision, Float16LayerEqualsTheEngineWithItsValuesRoundedToFloat16) {
  Digits d;
  const std::string kept = "/features/features.3/Conv";
  TranslateOptions o = int8Options("digits16", kDigits + "digits_cnn.onnx", "generic-int8", "npuc_int8_mixed_");
  QuantizeOptions q = d.calib(100);
  o.calibration = q.calibration;
  o.keep_float16 = {kept};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  const package::Package p = package::readPackage(r.dir);
  const package::Descriptor* conv = layerNamed(p, kept);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->kind, package::LayerKind::kConv);
  EXPECT_EQ(conv->in(0).type, package::ElemType::kF16);
  EXPECT_EQ(conv->in(1).type, package::ElemType::kF16);
  EXPECT_EQ(conv->in(2).type, package::ElemType::kF32);  // (the bias, as in fp16 packages)
  EXPECT_EQ(conv->out(0).type, package::ElemType::kF16);
  int casts = 0, half_layers = 0;
  for (const package::LayerInfo& l : p.layers) {
    const package::Descriptor& x = (l.engine == package::Engine::kMac ? p.mac : p.vec)[l.index];
    casts += x.kind == package::LayerKind::kCast;
    half_layers += x.kind != package::LayerKind::kCast && x.n_out > 0 && x.out(0).type == package::ElemType::kF16;
  }
  EXPECT_EQ(casts, 2);        // to float16 before it, back to float32 after it
  EXPECT_EQ(half_layers, 1);  // no other layer changed width
  // The oracle: the QDQ model (the layer kept in float), its input, weights and output rounded through float16.
  q.integer_layers = true;
  q.keep_float = {kept};
  Model oracle = Model::load(o.onnx).optimized().quantizedQdq(q);
  roundThroughFloat16(mutableGraphOf(oracle), kept);
  d.expectPackageEquals(r.dir, oracle);
  // The same package through a precision file; a layer kept at two widths is refused.
  std::ofstream(o.out_root / "p.yaml") << "layers:\n  \"" << kept << "\": float16\n";
  TranslateOptions f = o;
  f.out_root = o.out_root / "by_file";
  f.keep_float16.clear();
  f.precision = o.out_root / "p.yaml";
  EXPECT_EQ(translate(f).content_hash, r.content_hash);
  TranslateOptions both = o;
  both.prefix = "digits16b";
  both.keep_float = {kept};
  try {
    (void)translate(both);
    ADD_FAILURE() << "a layer kept in float32 and float16 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is kept both in float32 and in float16"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(o.out_root);
}

// Two layers kept in a row, at one width or at two: the value between them stays float (no quantize / dequantize
// layer; a cast where the widths differ), and the package equals the QDQ model keeping both (its float16 layer's
// values rounded through float16) on the engine, bit for bit.
TEST(Int8MixedPrecision, ConsecutiveKeptLayersAtTwoWidths) {
  Digits d;
  const std::string first = "/features/features.3/Conv", second = "/features/features.6/Conv";
  for (bool half_first : {false, true}) {
    TranslateOptions o = int8Options(half_first ? "digits_mixed" : "digits_f32s", kDigits + "digits_cnn.onnx", "generic-int8",
                                     "npuc_int8_consecutive_");
    QuantizeOptions q = d.calib(100);
    o.calibration = q.calibration;
    o.keep_float = {second};
    if (half_first) o.keep_float16 = {first};
    else o.keep_float.push_back(first);
    TranslateResult r = translate(o);
    ASSERT_TRUE(r.ok);
    const package::Package p = package::readPackage(r.dir);
    std::vector<std::string> kinds;
    for (const package::LayerInfo& l : p.layers) {
      const package::Descriptor& x = (l.engine == package::Engine::kMac ? p.mac : p.vec)[l.index];
      if (x.kind == package::LayerKind::kCast || x.kind == package::LayerKind::kConv ||
          x.kind == package::LayerKind::kQuantize || x.kind == package::LayerKind::kDequantize)
        kinds.push_back(x.kind == package::LayerKind::kCast ? "cast" : x.kind == package::LayerKind::kConv ? "conv"
                        : x.kind == package::LayerKind::kQuantize ? "q" : "dq");
    }
    const std::vector<std::string> want = half_first
        ? std::vector<std::string>{"q", "conv", "dq", "cast", "conv", "cast", "conv", "q", "conv", "dq"}
        : std::vector<std::string>{"q", "conv", "dq", "conv", "conv", "q", "conv", "dq"};  // (the classifier: a 1x1 conv)
    EXPECT_EQ(kinds, want) << half_first;
    q.integer_layers = true;
    q.keep_float = {first, second};
    Model oracle = Model::load(o.onnx).optimized().quantizedQdq(q);
    if (half_first) roundThroughFloat16(mutableGraphOf(oracle), first);
    d.expectPackageEquals(r.dir, oracle);
    std::filesystem::remove_all(o.out_root);
  }
}

/// The model at `onnx`, optimized and quantized with integer layers, calibrated on one tensor of `shape` (input
/// `input`) drawn from `u`: the QDQ model and its options (for translating the same package).
std::pair<Model, QuantizeOptions> integerQdq(const std::string& onnx, const std::string& input, const Shape& shape,
                                             std::mt19937& rng, std::uniform_real_distribution<float>& u, QuantizeReport* rep) {
  Tensor c(DType::kF32, shape);
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = u(rng);
  QuantizeOptions q;
  q.calibration[input] = {c};
  q.integer_layers = true;
  return {Model::load(onnx).optimized().quantizedQdq(q, rep), q};
}

/// The package in `dir` equals `model` on the engine, bit for bit, in exact and fast mode at 1, 2 and 3 threads, on
/// `samples` inputs of `shape` drawn from `draw` (input `input`).
template <class Draw>
void expectPackageEqualsEngine(const std::filesystem::path& dir, const Model& model, const Shape& shape, int samples, Draw draw,
                               const std::string& input = "input") {
  Session s(model, 1);
  for (bool exact : {true, false})
    for (int threads : {1, 2, 3}) {
      Runtime rt(dir, RuntimeOptions{threads, exact});
      for (int i = 0; i < samples; ++i) {
        Tensor xi(DType::kF32, shape);
        for (int64_t k = 0; k < xi.numel(); ++k) xi.data<float>()[k] = draw();
        rt.setInput(input, xi);
        rt.run();
        Tensor want = s.run({{input, xi}})[0];
        EXPECT_TRUE(rt.outputFloat(rt.outputs()[0].name).sameBits(want)) << "sample " << i << (exact ? " exact" : " fast") << ", " << threads << " threads";
      }
    }
}

/// The package in `dir` has a layer of `kind` in its int8 form (x and y int8, a table as its last input, `table`), and
/// the reader refuses the package once word `word` of that table is `bad`, with every one of `needles` in its message.
void expectInt8TableChecked(const std::filesystem::path& dir, package::LayerKind kind, int word, int32_t bad,
                            const std::vector<std::string>& needles, int table = 1) {
  package::Package p = package::readPackage(dir);
  const package::Descriptor* layer = nullptr;
  for (const package::Descriptor& d : p.vec) layer = d.kind == kind ? &d : layer;
  for (const package::Descriptor& d : p.mac) layer = d.kind == kind ? &d : layer;
  ASSERT_NE(layer, nullptr);
  ASSERT_EQ(layer->n_in, table + 1);
  EXPECT_EQ(layer->in(0).type, package::ElemType::kI8);
  EXPECT_EQ(layer->out(0).type, package::ElemType::kI8);
  uint64_t weight_base = 0;
  for (const package::SubSpace& sp : p.address_map)
    for (const package::Element& e : sp.elements)
      if (e.name == "weight") weight_base = e.addr;
  const uint64_t at = layer->in(table).addr - weight_base + 4 * static_cast<uint64_t>(word);
  ASSERT_LT(at + 4, p.weights.size());
  std::memcpy(p.weights.data() + at, &bad, 4);
  try {
    package::validatePackage(p, "pkg");
    ADD_FAILURE() << "a bad table word passed";
  } catch (const Error& e) {
    for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

// A residual network (the project's Fashion-MNIST ResNet): its Adds become integer additions too (ai.npuc QAdd, the
// binary layer's int8 form), and the package equals the engine on the same integer graph, bit for bit, exact and fast
// at 1 to 3 threads. (Calibration on seeded random images: the test is the arithmetic, not the accuracy.)
TEST(Int8AffinePackage, ResidualAddsAreIntegerAdditions) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/models/fashion/fashion_resnet.onnx";
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  QuantizeOptions q = fashionCalibration(rng);
  TranslateOptions o = int8Options("fres8", onnx, "generic-int8", "npuc_int8_add_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  q.integer_layers = true;
  QuantizeReport rep;
  Model qdq = Model::load(onnx).optimized().quantizedQdq(q, &rep);
  EXPECT_EQ(rep.integer_layers, 14);  // 9 convolutions, 3 residual additions, the global average pooling, the classifier Gemm
  expectPackageEqualsEngine(r.dir, qdq, Shape{1, 1, 28, 28}, 6, [&] { return u(rng); });
  // The global average pooling is the global_avg_pool layer's int8 form; the reader refuses its table with a
  // multiplier outside [2^30, 2^31) (reading or writing it), naming the layer and the rule.
  expectInt8TableChecked(r.dir, package::LayerKind::kGlobalAvgPool, 4, 12345, {"multiplier 12345"});  // (word 4: the multiplier)
  std::filesystem::remove_all(o.out_root);
}

// Windowed average pooling in integers (ai.npuc QAvgPool, the avg_pool layer's int8 form): a 2-D pool counting its
// padding (3x3, stride 2, pads 1) and a 1-D one after a max pool (tests/data/kinds) — each AveragePool becomes one
// integer layer, the package equals the engine on that graph bit for bit (exact and fast, 1 to 3 threads), and the
// reader refuses the layer's table with a bad multiplier, naming the divisor.
TEST(Int8AffinePackage, AveragePoolsAreIntegerMeans) {
  struct Case {
    const char* name;
    Shape shape;
  };
  for (const Case& k : {Case{"avgpool_include_pad", Shape{1, 3, 7, 8}}, Case{"pool_1d", Shape{1, 3, 11}}}) {
    SCOPED_TRACE(k.name);
    const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/kinds/" + k.name + ".onnx";
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-1.0f, 3.0f);
    Shape cs = k.shape;
    cs[0] = 10;
    QuantizeReport rep;
    auto [qdq, q] = integerQdq(onnx, "x", cs, rng, u, &rep);
    EXPECT_EQ(rep.integer_layers, 1);
    int qavg = 0, float_avg = 0;
    const ir::Graph& g = graphOf(qdq);
    for (ir::NodeId id : g.order()) {
      qavg += g.node(id).op == "QAvgPool";
      float_avg += g.node(id).op == "AveragePool";
    }
    EXPECT_EQ(qavg, 1);
    EXPECT_EQ(float_avg, 0);
    TranslateOptions o = int8Options(std::string(k.name) + "8", onnx, "generic-int8", "npuc_int8_avg_");
    o.calibration = q.calibration;
    TranslateResult r = translate(o);
    ASSERT_TRUE(r.ok);
    expectPackageEqualsEngine(r.dir, qdq, k.shape, 6, [&] { return u(rng); }, "x");
    expectInt8TableChecked(r.dir, package::LayerKind::kAvgPool, 6, 777, {"multiplier 777 / shift", "of divisor 2"});  // (word 6: divisor 2's multiplier)
    std::filesystem::remove_all(o.out_root);
  }
}

// A nearest Resize (tests/data/kinds/resize_nearest: the graph's only node) moves int8 codes: in the integer QDQ
// model it reads the quantized input and writes the codes the output's dequantize reads (no float Resize between a
// dequantize and a quantize), the package's resize layer reads and writes int8, and the package equals the engine
// on that graph bit for bit (exact and fast, 1 to 3 threads).
TEST(Int8AffinePackage, ANearestResizeMovesCodes) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/kinds/resize_nearest.onnx";
  std::mt19937 rng(10);
  std::uniform_real_distribution<float> u(-2.0f, 3.0f);
  QuantizeReport rep;
  auto [qdq, q] = integerQdq(onnx, "x", Shape{10, 2, 3, 4}, rng, u, &rep);
  const ir::Graph& g = graphOf(qdq);
  bool int8_resize = false;
  for (ir::NodeId id : g.order())
    if (g.node(id).op == "Resize") int8_resize = g.value(g.node(id).inputs[0]).type.dtype == DType::kI8;
  EXPECT_TRUE(int8_resize);
  TranslateOptions o = int8Options("resize8", onnx, "generic-int8", "npuc_int8_resize_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  const package::Package p = package::readPackage(r.dir);
  int resizes = 0;
  for (const package::Descriptor& d : p.vec)
    if (d.kind == package::LayerKind::kResize) {
      ++resizes;
      EXPECT_EQ(d.in(0).type, package::ElemType::kI8);
      EXPECT_EQ(d.out(0).type, package::ElemType::kI8);
    }
  EXPECT_EQ(resizes, 1);
  expectPackageEqualsEngine(r.dir, qdq, Shape{1, 2, 3, 4}, 6, [&] { return u(rng); }, "x");
  std::filesystem::remove_all(o.out_root);
}

// A BatchNormalization no Conv absorbs (tests/data/kinds/batchnorm_unfolded: the graph's only node) becomes an
// integer layer: translate rewrites it as a depthwise 1x1 Conv (pass batchnorm-to-conv), which the quantization makes
// one integer convolution with a weight scale per channel — the package's only compute layer is a conv, no float
// channel_affine is left, the package equals the engine on the same rewritten and quantized graph bit for bit, and
// its outputs stay within a few codes of the float batch norm.
TEST(Int8AffinePackage, AnUnfoldedBatchNormIsAnIntegerConvolution) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/kinds/batchnorm_unfolded.onnx";
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  Tensor c(DType::kF32, Shape{16, 4, 3, 3});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = u(rng);
  QuantizeOptions q;
  q.calibration["x"] = {c};
  q.integer_layers = true;
  Model opt = Model::load(onnx).optimized();
  {
    passes::PassContext ctx;
    passes::PassManager({"batchnorm-to-conv", "fuse-activations", "dce"}).runToFixpoint(mutableGraphOf(opt), ctx);
  }
  QuantizeReport rep;
  Model qdq = opt.quantizedQdq(q, &rep);
  EXPECT_EQ(rep.integer_layers, 1);
  TranslateOptions o = int8Options("bn8", onnx, "generic-int8", "npuc_int8_bn_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  const package::Package p = package::readPackage(r.dir);
  int convs = 0, affine = 0;
  for (const package::LayerInfo& l : p.layers) {
    const package::LayerKind kind = (l.engine == package::Engine::kMac ? p.mac : p.vec)[l.index].kind;
    convs += kind == package::LayerKind::kConv;
    affine += kind == package::LayerKind::kChannelAffine;
  }
  EXPECT_EQ(convs, 1);
  EXPECT_EQ(affine, 0);
  expectPackageEqualsEngine(r.dir, qdq, Shape{1, 4, 3, 3}, 4, [&] { return u(rng); }, "x");
  Session fs(Model::load(onnx), 1);
  Runtime rt(r.dir, RuntimeOptions{1, false});
  Tensor x(DType::kF32, Shape{1, 4, 3, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  rt.setInput("x", x);
  rt.run();
  const std::vector<double> got = rt.outputFloat(rt.outputs()[0].name).toDouble(), want = fs.run({{"x", x}})[0].toDouble();
  double lo = *std::min_element(want.begin(), want.end()), hi = *std::max_element(want.begin(), want.end());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 4 * (hi - lo) / 255) << i;
  // Kept in float by its name, with the standard QDQ model written too: the package's layer is a float convolution,
  // and the standard model's BatchNormalization (no weights to keep) is left out of the override, said so.
  TranslateOptions k = o;
  k.prefix = "bn8k";
  k.keep_float = {Model::load(onnx).nodes()[0].name};
  k.save_qdq_onnx = true;
  TranslateResult rk = translate(k);
  ASSERT_TRUE(rk.ok);
  EXPECT_TRUE(std::any_of(rk.warnings.begin(), rk.warnings.end(), [](const std::string& w) {
    return w.find("is not applied to bn8k_qdq.onnx") != std::string::npos && w.find("BatchNormalization") != std::string::npos;
  }));
  // A float target keeps its channel_affine layer (the rewrite is the integer numerics').
  TranslateOptions f = int8Options("bn32", onnx, "generic", "npuc_int8_bnf_");
  TranslateResult rf = translate(f);
  ASSERT_TRUE(rf.ok);
  const package::Package pf = package::readPackage(rf.dir);
  ASSERT_EQ(pf.layers.size(), 1u);
  EXPECT_EQ((pf.layers[0].engine == package::Engine::kMac ? pf.mac : pf.vec)[pf.layers[0].index].kind, package::LayerKind::kChannelAffine);
  std::filesystem::remove_all(o.out_root);
  std::filesystem::remove_all(f.out_root);
}

// Data movement on int8 codes: in a small GoogLeNet-style network (tests/data/quant/make_inception.py) the MaxPools,
// the inception Concat and the Flatten share their inputs' scales and run on int8 tensors (no QuantizeLinear but the
// input's and the output's), and the package equals the engine on that graph, bit for bit, exact and fast at 1 to 3
// threads.
TEST(Int8AffinePackage, PoolingAndConcatRunOnInt8Codes) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/quant/inception_mini.onnx";
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor c(DType::kF32, Shape{12, 3, 16, 16});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = u(rng);
  QuantizeOptions q;
  q.calibration["input"] = {c};
  q.threads = 2;
  q.integer_layers = true;
  QuantizeReport rep;
  Model qdq = Model::load(onnx).optimized().quantizedQdq(q, &rep);
  EXPECT_EQ(rep.integer_layers, 5);  // the four convolutions and the classifier Gemm
  int quantize = 0, int8_pools = 0, int8_concats = 0;
  const ir::Graph& g = graphOf(qdq);
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    quantize += n.op == "QuantizeLinear";
    const bool int8_in = g.value(n.inputs[0]).type.dtype == DType::kI8;
    int8_pools += n.op == "MaxPool" && int8_in;
    int8_concats += n.op == "Concat" && int8_in;
  }
  EXPECT_EQ(quantize, 1);  // the input's (the classifier Gemm writes its int8 output itself)
  EXPECT_EQ(int8_pools, 3);
  EXPECT_EQ(int8_concats, 1);
  TranslateOptions o = int8Options("incep8", onnx, "generic-int8", "npuc_int8_move_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  expectPackageEqualsEngine(r.dir, qdq, Shape{1, 3, 16, 16}, 5, [&] { return u(rng); });
  // The Concat is done in place (docs/memory-planning.md): its three branches write their codes end to end into
  // its result, which the MaxPool after it reads; no copy layer. With --concat-copies it is a layer again, and
  // both packages give the engine's bits.
  auto layer = [](const package::Package& p, const std::string& name) -> const package::Descriptor* {
    for (const package::LayerInfo& l : p.layers)
      if (l.name == name) return &(l.engine == package::Engine::kMac ? p.mac : p.vec)[l.index];
    return nullptr;
  };
  const package::Package in_place = package::readPackage(r.dir);
  const package::Descriptor *b1 = layer(in_place, "b1"), *b2 = layer(in_place, "b2"), *b3 = layer(in_place, "b3"),
                            *pool2 = layer(in_place, "pool2");
  ASSERT_TRUE(b1 && b2 && b3 && pool2);
  EXPECT_EQ(layer(in_place, "cat"), nullptr);
  EXPECT_EQ(b2->out(0).addr, b1->out(0).addr + b1->out(0).bytes);
  EXPECT_EQ(b3->out(0).addr, b2->out(0).addr + b2->out(0).bytes);
  EXPECT_EQ(pool2->in(0).addr, b1->out(0).addr);
  EXPECT_EQ(pool2->in(0).bytes, b1->out(0).bytes + b2->out(0).bytes + b3->out(0).bytes);
  // The runtime's layer list (npuc view's graph) has the MaxPool read the three branches.
  Runtime rt(r.dir, RuntimeOptions{1, false});
  for (const RuntimeLayer& l : rt.layers())
    if (l.name == "pool2") {
      EXPECT_EQ(l.inputs.size(), 3u) << l.inputs.front();
    }
  o.concat_copies = true;
  o.prefix = "incep8c";
  TranslateResult rc = translate(o);
  ASSERT_TRUE(rc.ok);
  const package::Package copies = package::readPackage(rc.dir);
  EXPECT_EQ(copies.layers.size(), in_place.layers.size() + 1);
  EXPECT_NE(layer(copies, "cat"), nullptr);
  expectPackageEqualsEngine(rc.dir, qdq, Shape{1, 3, 16, 16}, 3, [&] { return u(rng); });
  std::filesystem::remove_all(o.out_root);
}

// Look-up tables and products (docs/numerics.md): every element-wise activation of the network — HardSwish,
// LeakyRelu, Sigmoid, Tanh, HardSigmoid, Elu — between two int8 tensors becomes one ai.npuc QLookup (its 256 results)
// and the SE block's map times its gate one ai.npuc QMul, so the package
// holds no float layer between its input's quantize and its output's dequantize; the package equals the engine on the
// QDQ model bit for bit, exact and fast at 1 to 3 threads.
TEST(Int8AffinePackage, ElementWiseActivationsAreLookUpTables) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/quant/lookup_mini.onnx";
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor c(DType::kF32, Shape{12, 3, 8, 8});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = u(rng);
  QuantizeOptions q;
  q.calibration["input"] = {c};
  q.integer_layers = true;
  Model opt = Model::load(onnx).optimized();
  {  // (what translate runs for int8-affine after the optimizer: the activations split from their convolutions again,
     // each pipeline to its fixpoint — fusing and splitting in one would undo each other every round)
    passes::PassContext ctx;
    for (const std::vector<std::string>& p : {std::vector<std::string>{"batchnorm-to-conv", "fuse-activations", "dce"},
                                              std::vector<std::string>{"split-activations", "dce"}})
      EXPECT_LT(passes::PassManager(p).runToFixpoint(mutableGraphOf(opt), ctx), 16);
  }
  QuantizeReport rep;
  Model qdq = opt.quantizedQdq(q, &rep);
  int lookups = 0, products = 0, floats = 0;
  const ir::Graph& g = graphOf(qdq);
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    lookups += n.op == "QLookup";
    products += n.op == "QMul";
    floats += n.op == "HardSwish" || n.op == "LeakyRelu" || n.op == "Sigmoid" || n.op == "Tanh" || n.op == "HardSigmoid" || n.op == "Elu" ||
              n.op == "Mul";
  }
  EXPECT_EQ(lookups, 7);
  EXPECT_EQ(products, 1);  // the SE block's map times its gate
  EXPECT_EQ(floats, 0);
  EXPECT_EQ(rep.integer_layers, 8 + 7 + 2 + 1);  // the convolutions, the tables, the two global poolings, the product
  TranslateOptions o = int8Options("lut8", onnx, "generic-int8", "npuc_int8_lut_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  const package::Package p = package::readPackage(r.dir);
  int int8_unary = 0, int8_products = 0, converts = 0;
  const Model source = Model::load(onnx);
  std::set<std::string> source_nodes;
  for (ir::NodeId id : graphOf(source).order()) source_nodes.insert(graphOf(source).node(id).name);
  for (const package::LayerInfo& l : p.layers) {
    const package::Descriptor& d = (l.engine == package::Engine::kMac ? p.mac : p.vec)[l.index];
    int8_unary += d.kind == package::LayerKind::kUnary && d.in(0).type == package::ElemType::kI8;
    // The reports name each table after its activation's node in the model, and a convolution's ops no longer list it.
    if (d.kind == package::LayerKind::kUnary && d.in(0).type == package::ElemType::kI8) {
      EXPECT_TRUE(source_nodes.count(l.name)) << l.name << " (" << l.opexp << ")";
    }
    if (d.kind == package::LayerKind::kConv) {
      for (const char* act : {"HardSwish", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid"})
        EXPECT_EQ(l.opexp.find(act), std::string::npos) << l.name << ": " << l.opexp;
    }
    int8_products += d.kind == package::LayerKind::kBinary && d.in(0).type == package::ElemType::kI8;
    converts += d.kind == package::LayerKind::kQuantize || d.kind == package::LayerKind::kDequantize;
  }
  EXPECT_EQ(int8_unary, 7);
  EXPECT_EQ(int8_products, 1);
  EXPECT_EQ(converts, 2);  // the input's quantize, the output's dequantize
  expectPackageEqualsEngine(r.dir, qdq, Shape{1, 3, 8, 8}, 6, [&] { return u(rng); });
  std::filesystem::remove_all(o.out_root);
}

// --save-qdq-onnx: translate also writes the quantized model as standard ONNX (every op in the default domain,
// QuantizeLinear / DequantizeLinear pairs) — the file `npuc quantize` would write for the same samples and method:
// the same scales, so the same model bit for bit.
TEST(Int8AffinePackage, SavesTheQdqModelAsStandardOnnx) {
  Digits d;
  TranslateOptions o = int8Options("digitsq", kDigits + "digits_cnn.onnx", "generic-int8", "npuc_int8_save_");
  o.save_qdq_onnx = true;
  QuantizeOptions q = d.calib(60);
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(std::count(r.files.begin(), r.files.end(), "digitsq_qdq.onnx"));
  const auto file = r.dir / "digitsq_qdq.onnx";
  ASSERT_TRUE(std::filesystem::exists(file));
  Model saved = Model::load(file);
  int qs = 0;
  for (const NodeInfo& n : saved.nodes()) {
    EXPECT_EQ(n.op.find('.'), std::string::npos) << n.name << " is " << n.op;  // ("domain.Op" outside ai.onnx)
    qs += n.op == "QuantizeLinear";
  }
  EXPECT_GT(qs, 0);
  const auto again = o.out_root / "again.onnx";
  d.model.quantizedQdq(q).saveOnnx(again);
  Model want = Model::load(again);
  Session a(saved, 1), b(want, 1);
  for (int64_t i = 0; i < 20; ++i) {
    Tensor xi(DType::kF32, Shape{1, 1, 8, 8});
    std::memcpy(xi.raw(), static_cast<const float*>(d.x.raw()) + i * 64, 64 * sizeof(float));
    EXPECT_TRUE(a.run({{"input", xi}})[0].sameBits(b.run({{"input", xi}})[0])) << "sample " << i;
  }
  std::filesystem::remove_all(o.out_root);
}

// The package records what each int8 layer output stands for (scale, zero point, the float tensor): dequantized with
// it, every int8 layer of the digits package follows the float model's tensor (cosine above 0.99 on real images),
// and float layers carry no record.
TEST(Int8AffinePackage, LayersRecordTheScalesOfTheirCodes) {
  Digits d;
  TranslateOptions o = int8Options("digitsr", kDigits + "digits_cnn.onnx", "generic-int8", "npuc_int8_rec_");
  o.calibration = d.calib(100).calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir, RuntimeOptions{1, false});
  Session s(d.model, 1);
  int int8_layers = 0;
  for (int64_t i = 0; i < 5; ++i) {
    Tensor xi(DType::kF32, Shape{1, 1, 8, 8});
    std::memcpy(xi.raw(), static_cast<const float*>(d.x.raw()) + (100 + i) * 64, 64 * sizeof(float));
    std::map<std::string, Tensor> ref;
    s.run({{"input", xi}}, [&](const std::string& v, const Tensor& t) { ref[v] = t.clone(); });
    ref["input"] = xi;
    rt.setInput("input", xi);
    int8_layers = 0;
    rt.run([&](const RuntimeLayer& l, const Tensor& y) {
      if (y.dtype() != DType::kI8) {
        EXPECT_EQ(l.scale, 0.0) << l.name;
        return;
      }
      ++int8_layers;
      ASSERT_GT(l.scale, 0.0) << l.name;
      auto it = ref.find(l.float_value);
      ASSERT_NE(it, ref.end()) << l.name << " stands for '" << l.float_value << "', not a value of the model";
      double dot = 0, a2 = 0, b2 = 0;
      for (int64_t k = 0; k < y.numel(); ++k) {
        const double a = (y.data<int8_t>()[k] - l.zero_point) * l.scale, b = it->second.data<float>()[k];
        dot += a * b, a2 += a * a, b2 += b * b;
      }
      EXPECT_GT(dot / std::sqrt(a2 * b2 + 1e-30), 0.99) << l.name << ", sample " << i;
    });
  }
  EXPECT_GE(int8_layers, 4);  // the input's quantize and the three convolutions
  // The records are part of the manifest's layers, which stays exactly the dump of what it parses to.
  std::ifstream in(r.dir / "manifest.json", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);  // (keys in file order)
  EXPECT_EQ(text, j.dump(1) + "\n");
  int records = 0;
  for (const auto& l : j["layers"]) records += l.contains("quantization");
  EXPECT_EQ(records, int8_layers);
  std::filesystem::remove_all(o.out_root);
}

// Gemms and a MatMul by constant weights (tests/data/quant/mlp_mini.onnx: B [K, M] without transB and [M, K] with
// it, a fused Relu, a batch of two) become integer products: a QConv 1x1 over the int8 input reshaped to [N, K, 1, 1], reshaped back; no float
// Gemm is left, and the package equals the engine on that graph, bit for bit, exact and fast at 1 to 3 threads.
TEST(Int8AffinePackage, GemmsAreIntegerProducts) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/quant/mlp_mini.onnx";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor c(DType::kF32, Shape{16, 12});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = u(rng);
  QuantizeOptions q;
  q.calibration["input"] = {c};
  q.integer_layers = true;
  QuantizeReport rep;
  Model qdq = Model::load(onnx).optimized().quantizedQdq(q, &rep);
  EXPECT_EQ(rep.integer_layers, 3);
  int qconv = 0, gemm = 0, int8_reshapes = 0;
  const ir::Graph& g = graphOf(qdq);
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    qconv += n.op == "QConv";
    gemm += n.op == "Gemm" || n.op == "MatMul";
    int8_reshapes += n.op == "Reshape" && g.value(n.inputs[0]).type.dtype == DType::kI8;
  }
  EXPECT_EQ(qconv, 3);
  EXPECT_EQ(gemm, 0);
  EXPECT_EQ(int8_reshapes, 6);
  TranslateOptions o = int8Options("mlp8", onnx, "generic-int8", "npuc_int8_gemm_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  expectPackageEqualsEngine(r.dir, qdq, Shape{2, 12}, 20, [&] { return u(rng) * 1.2f; });
  std::filesystem::remove_all(o.out_root);
}

// MatMuls of 3-D activations by constant weights (tests/data/quant/matmul3d_mini.onnx: [2, 3, 12] by [12, 7], Relu,
// by [7, 5], as a transformer's linear layers) become integer products too: every row of every matrix one product
// row (a QConv 1x1 over [6, K, 1, 1]), reshaped back to [2, 3, M]; the package equals the engine bit for bit.
TEST(Int8AffinePackage, MatMulsOfBatchedRowsAreIntegerProducts) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/quant/matmul3d_mini.onnx";
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  QuantizeReport rep;
  auto [qdq, q] = integerQdq(onnx, "input", Shape{8, 3, 12}, rng, u, &rep);
  EXPECT_EQ(rep.integer_layers, 2);
  int qconv = 0, matmul = 0;
  const ir::Graph& g = graphOf(qdq);
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    qconv += n.op == "QConv";
    matmul += n.op == "MatMul" || n.op == "Gemm";
    if (n.op == "QConv") {
      EXPECT_EQ(g.value(n.inputs[0]).type.shape, (Shape{6, qconv == 1 ? 12 : 7, 1, 1}));
    }
  }
  EXPECT_EQ(qconv, 2);
  EXPECT_EQ(matmul, 0);
  EXPECT_EQ(g.value(g.outputs()[0]).type.shape, (Shape{2, 3, 5}));
  TranslateOptions o = int8Options("mm3d", onnx, "generic-int8", "npuc_int8_mm3d_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  expectPackageEqualsEngine(r.dir, qdq, Shape{2, 3, 12}, 20, [&] { return u(rng) * 1.2f; });
  std::filesystem::remove_all(o.out_root);
}

// Attention's products of two activations (tests/data/quant/attention_mini.onnx: Q·Kᵀ and P·V over 2 heads, after
// the projections, with Softmax between) become integer products (QMatMul) next to the projections' QConvs: no float
// MatMul is left; the package equals the engine bit for bit (exact and fast, 1-3 threads); the reader checks the
// int8 matmul's table; and the integer model stays within int8's error of the float one.
TEST(Int8AffinePackage, AttentionProductsOfTwoActivationsAreIntegerProducts) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/quant/attention_mini.onnx";
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  QuantizeReport rep;
  auto [qdq, q] = integerQdq(onnx, "input", Shape{16, 6, 16}, rng, u, &rep);
  EXPECT_EQ(rep.integer_layers, 6);  // the 4 projections, the 2 products of activations
  int qmatmul = 0, qconv = 0, float_products = 0;
  const ir::Graph& g = graphOf(qdq);
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    qmatmul += n.op == "QMatMul";
    qconv += n.op == "QConv";
    float_products += n.op == "MatMul" || n.op == "Gemm";
    if (n.op == "QMatMul") {
      EXPECT_EQ(g.value(n.inputs[0]).type.shape, (Shape{2, 2, 6, qmatmul == 1 ? 8 : 6}));
      EXPECT_EQ(g.value(n.inputs[1]).type.shape, (Shape{2, 2, qmatmul == 1 ? 8 : 6, qmatmul == 1 ? 6 : 8}));
    }
  }
  EXPECT_EQ(qmatmul, 2);
  EXPECT_EQ(qconv, 4);
  EXPECT_EQ(float_products, 0);
  TranslateOptions o = int8Options("att", onnx, "generic-int8", "npuc_int8_att_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  expectPackageEqualsEngine(r.dir, qdq, Shape{2, 6, 16}, 10, [&] { return u(rng); });
  expectInt8TableChecked(r.dir, package::LayerKind::kMatMul, 5, 777, {"multiplier 777 / shift"}, 2);
  std::filesystem::remove_all(o.out_root);
  // Against float: the integer model's error is the QDQ model's (every tensor rounded to int8, the products in float)
  // plus the products' one requantization rounding each — its SNR within 1 dB of the QDQ model's.
  Model fp = Model::load(onnx).optimized();
  QuantizeOptions fq = q;
  fq.integer_layers = false;
  Model fake = fp.quantizedQdq(fq);
  Session sf(fp, 1), sq(qdq, 1), sk(fake, 1);
  double err = 0, err_fake = 0, ref = 0;
  for (int i = 0; i < 32; ++i) {
    Tensor x(DType::kF32, Shape{2, 6, 16});
    for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = u(rng);
    const Tensor want = sf.run({{"input", x}})[0], got = sq.run({{"input", x}})[0], fk = sk.run({{"input", x}})[0];
    for (int64_t k = 0; k < want.numel(); ++k) {
      err += std::pow(got.data<float>()[k] - want.data<float>()[k], 2);
      err_fake += std::pow(fk.data<float>()[k] - want.data<float>()[k], 2);
      ref += std::pow(want.data<float>()[k], 2);
    }
  }
  const double snr_db = 10 * std::log10(ref / err), snr_fake = 10 * std::log10(ref / err_fake);
  std::printf("attention_mini vs float: int8-affine integer layers SNR %.2f dB, QDQ (float products) %.2f dB\n", snr_db, snr_fake);
  EXPECT_GT(snr_db, snr_fake - 1.0);
}

// A transformer encoder layer as torch exports it (tests/data/quant/encoder_layer.onnx: each Linear a MatMul + Add of
// its bias; the feed-forward's first followed by Relu): every Linear becomes one integer product with its bias in the
// int32 accumulator (quant::productBiasesAsGemms before calibration; the Relu moved before the Reshape back stays
// the product's clamp), attention's two products QMatMuls, the query's Div by sqrt(8) an integer rescaling (QAdd of
// the tensor with itself); no float product, Add, Mul or Div is left; the package
// equals the engine bit for bit (exact and fast, 1-3 threads); against float the integer model is within 1 dB of the
// QDQ model's SNR (its products in float) and better than without the rewrite (the bias then added in float between
// two int8 roundings).
TEST(Int8AffinePackage, TorchLinearBiasesGoIntoTheIntegerProducts) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/quant/encoder_layer.onnx";
  std::mt19937 rng(21);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Model fp = Model::load(onnx).optimized();
  {  // the rewrite itself: the three Linears (the in-projection, linear1 with its Relu, linear2); the attention's
     // output projection is a Gemm already
    Model copy = Model::load(onnx).optimized();
    EXPECT_EQ(quant::productBiasesAsGemms(mutableGraphOf(copy), {}), 3);
    Model kept = Model::load(onnx).optimized();
    EXPECT_EQ(quant::productBiasesAsGemms(mutableGraphOf(kept), {"/linear1/Add", "/linear2/MatMul_output_0"}), 1);
  }
  Tensor c(DType::kF32, Shape{32, 16, 64});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = nd(rng);
  QuantizeOptions q;
  q.calibration["input"] = {c};
  q.integer_layers = true;
  QuantizeReport rep;
  Model qdq = fp.quantizedQdq(q, &rep);
  EXPECT_EQ(rep.integer_layers, 9);  // 4 products by weights, 2 of two activations, 2 residual additions, the scaling
  int qconv = 0, qmatmul = 0, float_products = 0, bias_adds = 0, scales = 0, float_elementwise = 0;
  const ir::Graph& g = graphOf(qdq);
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    qconv += n.op == "QConv";
    qmatmul += n.op == "QMatMul";
    float_products += n.op == "MatMul" || n.op == "Gemm";
    if (n.op == "Add")
      for (ir::ValueId v : n.inputs) bias_adds += g.value(v).isConstant();
    float_elementwise += n.op == "Add" || n.op == "Mul" || n.op == "Div";
    if (n.op == "QAdd" && n.inputs[0] == n.inputs[1]) {  // the query's scaling by 1 / sqrt(8): x + x, the second weight 0
      ++scales;
      EXPECT_EQ(n.attrInts("multipliers")[1], 0);
    }
    if (n.op == "QConv" && n.name == "/linear1/MatMul") {
      EXPECT_EQ(n.attrInt("y_min", -128), n.attrInt("y_zero_point", 0));  // the Relu: its clamp
      EXPECT_TRUE(n.hasInput(2));                                           // the bias, int32
    }
  }
  EXPECT_EQ(qconv, 4);
  EXPECT_EQ(qmatmul, 2);
  EXPECT_EQ(float_products, 0);
  EXPECT_EQ(bias_adds, 0);
  EXPECT_EQ(scales, 1);
  EXPECT_EQ(float_elementwise, 0);
  for (const std::string& w : rep.warnings) ADD_FAILURE() << "warning: " << w;
  TranslateOptions o = int8Options("enc", onnx, "generic-int8", "npuc_int8_enc_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  expectPackageEqualsEngine(r.dir, qdq, Shape{1, 16, 64}, 4, [&] { return nd(rng); });
  {  // a rewritten Linear's codes stand for the model's tensor (its rows): what npuc compare matches
    Runtime rt(r.dir, RuntimeOptions{1, false});
    std::map<std::string, std::string> of;
    for (const RuntimeLayer& l : rt.layers()) of[l.name] = l.float_value;
    EXPECT_EQ(of["/self_attn/MatMul"], "/self_attn/Add_output_0");
    EXPECT_EQ(of["/linear1/MatMul"], "/Relu_output_0");
    EXPECT_EQ(of["/linear2/MatMul"], "/linear2/Add_output_0");
  }
  std::filesystem::remove_all(o.out_root);
  // Against float: the QDQ model of the same calibration (products in float), and the integer model without the
  // rewrite (the Linears' outputs rounded to int8 before their bias Add): a range forced on each product's output
  // keeps its Linear as it is — the range minmax calibration gives it (its min and max over the samples).
  QuantizeOptions fq = q;
  fq.integer_layers = false;
  Model fake = fp.quantizedQdq(fq);
  QuantizeOptions nq = q;
  Session sf(fp, 1);
  const std::set<std::string> products = {"/self_attn/MatMul_output_0", "/linear1/MatMul_output_0", "/linear2/MatMul_output_0"};
  for (int64_t i = 0; i < 32; ++i) {
    Tensor x(DType::kF32, Shape{1, 16, 64});
    std::copy(c.data<float>() + i * x.numel(), c.data<float>() + (i + 1) * x.numel(), x.data<float>());
    sf.run({{"input", x}}, [&](const std::string& v, const Tensor& t) {
      if (!products.count(v)) return;
      auto [lo, hi] = std::minmax_element(t.data<float>(), t.data<float>() + t.numel());
      auto it = nq.ranges.try_emplace(v, *lo, *hi).first;
      it->second = {std::min<double>(it->second.first, *lo), std::max<double>(it->second.second, *hi)};
    });
  }
  ASSERT_EQ(nq.ranges.size(), 3u);
  Model no_rewrite = fp.quantizedQdq(nq);
  Session sq(qdq, 1), sk(fake, 1), sn(no_rewrite, 1);
  double sig = 0, err = 0, err_fake = 0, err_no = 0;
  for (int i = 0; i < 16; ++i) {
    Tensor x(DType::kF32, Shape{1, 16, 64});
    for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = nd(rng);
    const Tensor want = sf.run({{"input", x}})[0], got = sq.run({{"input", x}})[0];
    const Tensor fk = sk.run({{"input", x}})[0], nr = sn.run({{"input", x}})[0];
    for (int64_t k = 0; k < want.numel(); ++k) {
      const double f = want.data<float>()[k];
      sig += f * f;
      err += std::pow(got.data<float>()[k] - f, 2);
      err_fake += std::pow(fk.data<float>()[k] - f, 2);
      err_no += std::pow(nr.data<float>()[k] - f, 2);
    }
  }
  const double snr = 10 * std::log10(sig / err), snr_fake = 10 * std::log10(sig / err_fake), snr_no = 10 * std::log10(sig / err_no);
  std::printf("encoder_layer vs float: integer %.2f dB, QDQ (float products) %.2f dB, without the bias rewrite %.2f dB\n", snr,
              snr_fake, snr_no);
  EXPECT_GT(snr, snr_fake - 1.0);
  EXPECT_GT(snr, snr_no);
}

// A Gemm whose bias adds one value per row (tests/data/quant/gemm_row_bias.onnx: C [M, 1] with N = M) is no
// per-channel product: it stays a float Gemm between its Q / DQ layers, and the quantized model stays within int8's
// error of the float one (a per-channel bias would put C's values in the wrong places).
TEST(Int8AffinePackage, AGemmBiasPerRowIsNoIntegerProduct) {
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/quant/gemm_row_bias.onnx";
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor c(DType::kF32, Shape{12, 4});
  for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = u(rng);
  QuantizeOptions q;
  q.calibration["input"] = {c};
  q.integer_layers = true;
  QuantizeReport rep;
  Model fp = Model::load(onnx).optimized();
  Model qdq = fp.quantizedQdq(q, &rep);
  EXPECT_EQ(rep.integer_layers, 0);
  int gemm = 0;
  for (ir::NodeId id : graphOf(qdq).order()) gemm += graphOf(qdq).node(id).op == "Gemm";
  EXPECT_EQ(gemm, 1);
  {  // the same Gemm quantized elsewhere, its C [3, 1] an int32 at x_scale * w_scale: still no integer product
    LoadOptions lo;
    lo.resolve = false;  // (as translate loads a QDQ model)
    Model m = Model::load(std::string(NPUC_SOURCE_DIR) + "/tests/data/quant/gemm_row_bias_qdq.onnx", lo);
    quant::annotateQuantized(mutableGraphOf(m));
    EXPECT_EQ(quant::fuseIntegerGemms(mutableGraphOf(m)), 0);
  }
  Session sf(fp, 1), sq(qdq, 1);
  for (int i = 0; i < 5; ++i) {
    Tensor x(DType::kF32, Shape{3, 4});
    for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = u(rng);
    const Tensor want = sf.run({{"input", x}})[0], got = sq.run({{"input", x}})[0];
    for (int64_t k = 0; k < want.numel(); ++k) EXPECT_NEAR(got.data<float>()[k], want.data<float>()[k], 0.05) << i << " " << k;
  }
}

// A model quantized elsewhere (here: by npuc quantize, saved as standard ONNX) translates for generic-int8 without
// calibration: its own scales, its convolutions and its global average pooling as integer layers; the package equals
// the engine on that model with the same integer layers, bit for bit.
TEST(Int8AffinePackage, AQdqModelKeepsItsOwnScales) {
  Digits d;
  const auto dir = std::filesystem::temp_directory_path() / ("npuc_qdq_in_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  d.model.quantizedQdq(d.calib(100)).saveOnnx(dir / "digits_qdq.onnx");
  TranslateOptions o;
  o.prefix = "qdq";
  o.onnx = dir / "digits_qdq.onnx";
  o.target = "generic-int8";
  o.out_root = dir;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.quantized);
  EXPECT_EQ(r.calibration_samples, 0u);
  LoadOptions lo;
  lo.resolve = false;  // as translate loads for int8-affine targets: the weights' DequantizeLinear not folded yet
  Model ref = Model::load(o.onnx, lo);
  EXPECT_EQ(quant::fuseIntegerConvs(mutableGraphOf(ref)), 3);
  EXPECT_EQ(quant::fuseIntegerPools(mutableGraphOf(ref)), 1);
  Model opt = ref.optimized();
  Session s(opt, 1);
  Runtime rt(r.dir, RuntimeOptions{2, false});
  for (int64_t i = 0; i < 20; ++i) {
    Tensor xi(DType::kF32, Shape{1, 1, 8, 8});
    std::memcpy(xi.raw(), static_cast<const float*>(d.x.raw()) + i * 64, 64 * sizeof(float));
    rt.setInput("input", xi);
    rt.run();
    EXPECT_TRUE(rt.outputFloat(rt.outputs()[0].name).sameBits(s.run({{"input", xi}})[0])) << "sample " << i;
  }
  std::filesystem::remove_all(dir);
}

TEST(Int8AffinePackage, NeedsCalibrationSamples) {
  TranslateOptions o = int8Options("digits8", kDigits + "digits_cnn.onnx", "generic-int8", "npuc_int8_nocalib_");
  try {
    translate(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs calibration samples (--calib"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(o.out_root);
}


// int8-radix (Kneron, target kneron): the radix of a range is the largest that keeps its magnitude within 127; every
// activation of the package is symmetric at a power-of-two scale (the validator's rule too), and the package equals
// the engine on the same radix-quantized model bit for bit, exact and fast at 1 to 3 threads.
TEST(Int8RadixPackage, PowerOfTwoScalesAndTheEnginesBits) {
  struct R {
    double lo, hi;
    int radix;
  };
  for (R r : {R{0, 1, 6}, R{-1, 1, 6}, R{0, 127, 0}, R{0, 127.5, -1}, R{-0.01, 3.9, 5}, R{0, 0, 0}, R{-200, 10, -1}, R{0, 1e-9, 31}}) {
    float scale;
    int zp, radix;
    quant::radixInt8(r.lo, r.hi, &scale, &zp, &radix);
    EXPECT_EQ(radix, r.radix) << r.lo << ".." << r.hi;
    EXPECT_EQ(zp, 0);
    EXPECT_EQ(scale, std::ldexp(1.0f, -radix));
    if (r.hi > 0) {
      EXPECT_LE(std::max(-r.lo, r.hi) * std::ldexp(1.0, radix), 127.0 + 1e-9);
    }
  }
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/models/fashion/fashion_resnet.onnx";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  QuantizeOptions q = fashionCalibration(rng);
  q.scheme = "radix";
  TranslateOptions o = int8Options("fresk", onnx, "kneron", "npuc_int8_radix_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  EXPECT_EQ(rt.numerics(), "int8-radix");
  int records = 0;
  for (const RuntimeLayer& l : rt.layers())
    if (l.scale > 0) {
      ++records;
      int e = 0;
      EXPECT_EQ(std::frexp(l.scale, &e), 0.5) << l.name << " scale " << l.scale;
      EXPECT_EQ(l.zero_point, 0) << l.name;
    }
  EXPECT_GT(records, 10);
  q.integer_layers = true;
  Model qdq = Model::load(onnx).optimized().quantizedQdq(q);
  expectPackageEqualsEngine(r.dir, qdq, Shape{1, 1, 28, 28}, 4, [&] { return u(rng); });
  std::filesystem::remove_all(o.out_root);
}

// int8-symmetric (target generic-int8-symmetric, the worked example of a numerics family in docs/numerics.md): every
// activation's zero point is 0 at scale max|x| / 127, the package equals the engine on the same symmetric-quantized
// model bit for bit, and a model quantized elsewhere with a zero point is refused, naming the tensor.
TEST(Int8SymmetricPackage, ZeroPointsAreZeroAndTheEnginesBits) {
  for (auto [lo, hi, want] : {std::tuple{0.0, 1.0, 1.0f / 127}, std::tuple{-2.54, 1.0, 0.02f}, std::tuple{0.0, 0.0, 1.0f}}) {
    float scale;
    int zp;
    quant::symmetricInt8(lo, hi, &scale, &zp);
    EXPECT_EQ(zp, 0);
    EXPECT_FLOAT_EQ(scale, want) << lo << ".." << hi;
  }
  const std::string onnx = std::string(NPUC_SOURCE_DIR) + "/models/fashion/fashion_resnet.onnx";
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  QuantizeOptions q = fashionCalibration(rng);
  q.scheme = "symmetric";
  TranslateOptions o = int8Options("fsym", onnx, "generic-int8-symmetric", "npuc_int8_symmetric_");
  o.calibration = q.calibration;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  EXPECT_EQ(rt.numerics(), "int8-symmetric");
  int records = 0, unlike_radix = 0;
  for (const RuntimeLayer& l : rt.layers())
    if (l.scale > 0) {
      ++records;
      int e = 0;
      unlike_radix += std::frexp(l.scale, &e) != 0.5;
      EXPECT_EQ(l.zero_point, 0) << l.name;
    }
  EXPECT_GT(records, 10);
  EXPECT_GT(unlike_radix, 0);  // (scales are not powers of two: not int8-radix)
  q.integer_layers = true;
  Model qdq = Model::load(onnx).optimized().quantizedQdq(q);
  expectPackageEqualsEngine(r.dir, qdq, Shape{1, 1, 28, 28}, 4, [&] { return u(rng); });

  // The reader refuses a code record with a zero point in an int8-symmetric package (NumericsTraits::symmetric_codes).
  {
    std::map<std::string, std::vector<uint8_t>> files;
    for (auto& e : std::filesystem::directory_iterator(r.dir)) {
      std::ifstream in(e.path(), std::ios::binary);
      files[e.path().filename().string()] = std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
    }
    const auto& mb = files.at("manifest.json");
    nlohmann::json m = nlohmann::json::parse(mb.begin(), mb.end());
    bool changed = false;
    for (auto& l : m["layers"])
      if (!changed && l.contains("quantization")) l["quantization"]["zero_point"] = 3, changed = true;
    ASSERT_TRUE(changed);
    std::ofstream(r.dir / "manifest.json", std::ios::binary | std::ios::trunc) << package::resealManifest(m.dump(1), files);
    try {
      Runtime bad(r.dir);
      ADD_FAILURE() << "a zero point in an int8-symmetric package was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("an int8-symmetric package's codes are symmetric, got zero point 3"), std::string::npos) << e.what();
    }
  }

  // A model quantized with zero points (the affine scheme) is not an int8-symmetric model.
  q.scheme = "affine";
  q.integer_layers = false;
  q.qdq_onnx = o.out_root / "affine_qdq.onnx";
  Model::load(onnx).quantizedQdq(q);
  TranslateOptions a = int8Options("fsym2", q.qdq_onnx, "generic-int8-symmetric", "npuc_int8_symmetric2_");
  try {
    translate(a);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("with a zero point other than 0, which int8-symmetric packages do not hold"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(o.out_root);
  std::filesystem::remove_all(a.out_root);
}

}  // namespace
}  // namespace npuc::quant
