// Bias correction of float16 weight rounding (src/quant, docs/calibration.md): the measured input means, the
// property it exists for (each corrected layer, with its weights stored in float16, has the float layer's output
// mean on the calibration data), which layers it leaves alone, and the translator's --calib path (only biases
// change, the same package for any thread count, bad calibration data refused).
#include "npuc/model.hpp"
#include "engine/engine.hpp"
#include "ops/registry.hpp"
#include "quant/bias_correction.hpp"
#include "quant/qdq.hpp"
#include "quant/range.hpp"

#include "random_tensor.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <tuple>
#include <sstream>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

using test::uniform;

/// Values constant over the positions of each (batch, channel) plane: every window of an unpadded convolution then
/// sees the channel means, and the output mean relation the correction relies on holds exactly. (Zero padding makes
/// border windows see less: there the correction is the interior's.)
Tensor planes(Shape s, float lo, float hi, uint32_t seed) {
  Tensor t = uniform(s, lo, hi, seed);
  int64_t inner = 1;
  for (size_t i = 2; i < s.size(); ++i) inner *= s[i];
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[(i / inner) * inner];
  return t;
}

struct LayerCase {
  std::string name;
  std::string op;             // Conv or Gemm
  Shape x, w;                 // activation operand (per sample) and weights
  Shape bias;                 // {} = none
  std::map<std::string, ir::Attr> attrs;
  bool relu_first = true;     // the layer reads a node output (else the graph input itself)
  bool per_plane = false;     // inputs constant over each plane (windows larger than 1x1)
};

/// x -> [Relu] -> layer -> y, weights with float16 rounding errors of both signs, inputs of large positive mean.
ir::Graph layerGraph(const LayerCase& c, uint32_t seed) {
  ir::Graph g;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, c.x)).id;
  g.inputs().push_back(x);
  ir::ValueId a = x;
  if (c.relu_first) {
    a = g.addValue("xr").id;
    g.addNode("Relu", "relu", {x}, {a});
  }
  std::vector<ir::ValueId> ins = {a, g.addConstant("w", uniform(c.w, -0.7f, 0.7f, seed)).id};
  if (!c.bias.empty()) ins.push_back(g.addConstant("b", uniform(c.bias, -1.0f, 1.0f, seed + 1)).id);
  ir::ValueId y = g.addValue("y").id;
  g.addNode(c.op, "layer", ins, {y}).attrs = c.attrs;
  g.outputs().push_back(y);
  ops::inferShapes(g);
  return g;
}

/// Per output channel (axis 1) mean of the graph's output over the samples.
std::vector<double> outputMeans(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples) {
  engine::Engine e(g);
  std::vector<double> sum;
  double count = 0;
  for (auto& s : samples) {
    Tensor y = e.run(s)[0];
    int64_t outer = y.dim(0), C = y.dim(1), inner = y.numel() / (outer * C);
    sum.resize(static_cast<size_t>(C), 0.0);
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t i = 0; i < inner; ++i) sum[static_cast<size_t>(ch)] += y.data<float>()[(b * C + ch) * inner + i];
    count += static_cast<double>(outer * inner);
  }
  for (auto& v : sum) v /= count;
  return sum;
}

/// The graph as the package computes it: the layer's weights rounded to float16.
void roundWeights(ir::Graph& g) {
  ir::Value& w = g.value(*g.findValue("w"));
  Tensor r = w.constant->clone();
  for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = quant::roundToHalf(r.data<float>()[i]);
  w.constant = r;
}

void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.name; }

class Corrects : public ::testing::TestWithParam<LayerCase> {};

TEST_P(Corrects, TheStoredLayerKeepsTheFloatOutputMean) {
  const LayerCase& c = GetParam();
  ir::Graph g = layerGraph(c, 7);
  std::vector<std::map<std::string, Tensor>> samples;
  for (uint32_t s = 0; s < 3; ++s)
    samples.push_back({{"x", c.per_plane ? planes(c.x, 2.0f, 9.0f, 100 + s) : uniform(c.x, 2.0f, 9.0f, 100 + s)}});
  quant::InputMeans means = quant::measureInputMeans(g, samples, 2);
  ASSERT_EQ(means.samples, 3u);
  ASSERT_EQ(means.by_output.count("y"), 1u);

  std::vector<double> want = outputMeans(g, samples);
  auto plain = g.clone();
  roundWeights(*plain);
  std::vector<double> uncorrected = outputMeans(*plain, samples);

  auto fixed = g.clone();
  quant::BiasCorrection bc = quant::correctBias(*fixed, means, quant::roundToHalf);
  EXPECT_EQ(bc.layers, 1);
  EXPECT_EQ(bc.added_biases, c.bias.empty() ? 1 : 0);
  ir::verify(*fixed);
  roundWeights(*fixed);
  std::vector<double> got = outputMeans(*fixed, samples);
  ASSERT_EQ(got.size(), want.size());
  double err_plain = 0, err_fixed = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err_plain = std::max(err_plain, std::fabs(uncorrected[i] - want[i]));
    err_fixed = std::max(err_fixed, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  // Left: float32 arithmetic of the layer and its new bias (a few ulps of the output).
  EXPECT_LT(err_fixed, 4e-6 * scale) << "uncorrected " << err_plain;
  EXPECT_GT(err_plain, 20 * err_fixed) << "the case does not exercise the correction";
}

TEST_P(Corrects, Int8WeightsKeepTheFloatOutputMean) {
  // int8-affine (quantizeToQdq with bias_means): the layer's per-channel int8 weights shift each output channel's
  // mean; the corrected bias takes the shift out (what remains: the output's own int8 rounding, zero-mean).
  const LayerCase& c = GetParam();
  ir::Graph g = layerGraph(c, 11);
  std::vector<std::map<std::string, Tensor>> samples;
  for (uint32_t s = 0; s < 4; ++s)
    samples.push_back({{"x", c.per_plane ? planes(c.x, 2.0f, 9.0f, 200 + s) : uniform(c.x, 2.0f, 9.0f, 200 + s)}});
  const std::vector<double> want = outputMeans(g, samples);
  const auto stats = quant::collectStats(g, samples, 2);
  const quant::InputMeans means = quant::measureInputMeans(g, samples, 2);
  auto quantized = [&](bool correct) {
    auto q = g.clone();
    quant::QdqOptions o;
    if (correct) o.bias_means = &means;
    quant::QdqReport r = quant::quantizeToQdq(*q, stats, o);
    EXPECT_EQ(r.bias_corrected, correct ? 1 : 0);
    ir::verify(*q);
    return outputMeans(*q, samples);
  };
  const std::vector<double> plain = quantized(false), fixed = quantized(true);
  double err_plain = 0, err_fixed = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err_plain += std::fabs(plain[i] - want[i]);
    err_fixed += std::fabs(fixed[i] - want[i]);
  }
  // The output's mean error: where the weights' shift dominates the noise of the quantized input and output (the
  // 1x1 and unpadded 3x3 convolutions, the inner products), the correction takes most of it away.
  static const std::set<std::string> measurable = {"conv1x1", "conv3x3_no_bias", "gemm_transB", "gemm_C_row", "gemm_no_C"};
  if (measurable.count(c.name)) {
    EXPECT_LT(err_fixed, 0.5 * err_plain) << "mean |error| per channel: corrected " << err_fixed / static_cast<double>(want.size())
                                          << ", uncorrected " << err_plain / static_cast<double>(want.size());
  }
  // Every case: the int32 bias is the float bias minus sum (Wq - W) * mean(x), Wq the int8 weights the quantized
  // graph holds (recomputed here from its DequantizeLinear constants), to within half a bias step.
  auto q = g.clone();
  quant::QdqOptions o;
  o.bias_means = &means;
  quant::quantizeToQdq(*q, stats, o);
  const ir::Node* layer = nullptr;
  for (ir::NodeId id : q->order())
    if (q->node(id).name == "layer") layer = &q->node(id);
  ASSERT_NE(layer, nullptr);
  auto dqConsts = [&](ir::ValueId v) {
    const ir::Node& dq = q->node(q->value(v).producer);
    EXPECT_EQ(dq.op, "DequantizeLinear");
    return std::make_pair(&*q->value(dq.inputs[0]).constant, &*q->value(dq.inputs[1]).constant);
  };
  auto [wcodes, wscale] = dqConsts(layer->inputs[1]);
  // The bias is int32 behind a DequantizeLinear, or (a [1, N] C, which has no per-axis int32 form) still float.
  const bool int_bias = q->value(layer->inputs[2]).producer != ir::kNoNode;
  const Tensor* bcodes = nullptr;
  const Tensor* bscale = nullptr;
  if (int_bias) std::tie(bcodes, bscale) = dqConsts(layer->inputs[2]);
  const Tensor& W = *g.value(*g.findValue("w")).constant;
  const std::vector<double>& mu = means.by_output.at("y");
  const bool conv = c.op == "Conv", transB = c.attrs.count("transB") != 0;
  const int64_t M = conv ? W.dim(0) : (transB ? W.dim(0) : W.dim(1));
  const int64_t per = W.numel() / M;  // weights per output channel
  const int64_t group = conv && c.attrs.count("group") ? *c.attrs.at("group").get<int64_t>() : 1;
  for (int64_t m = 0; m < M; ++m) {
    double shift = 0;
    for (int64_t k = 0; k < per; ++k) {
      int64_t idx, in_ch;
      if (conv) {
        const int64_t Cg = W.dim(1), taps = per / Cg;
        idx = m * per + k;
        in_ch = (m / (M / group)) * Cg + k / taps;
      } else {
        idx = transB ? m * per + k : k * M + m;
        in_ch = k;
      }
      const float s = wscale->numel() == 1 ? wscale->data<float>()[0] : wscale->data<float>()[m];
      const double wq = static_cast<double>(static_cast<float>(wcodes->data<int8_t>()[idx]) * s);
      shift += (wq - static_cast<double>(W.data<float>()[idx])) * mu[static_cast<size_t>(in_ch)];
    }
    const double b0 = c.bias.empty() ? 0.0 : static_cast<double>(g.value(*g.findValue("b")).constant->data<float>()[m]);
    const double step = int_bias ? bscale->data<float>()[m] : 0.0;
    const double got = int_bias ? static_cast<double>(bcodes->data<int32_t>()[m]) * step
                                : static_cast<double>(q->value(layer->inputs[2]).constant->data<float>()[m]);
    EXPECT_NEAR(got, b0 - shift, 0.5 * step + 1e-6 * std::fabs(b0 - shift) + 1e-7) << "channel " << m;
  }
}

std::map<std::string, ir::Attr> attrs(std::initializer_list<std::pair<const std::string, ir::Attr>> a) { return a; }

INSTANTIATE_TEST_SUITE_P(
    Layers, Corrects,
    ::testing::Values(
        LayerCase{"conv1x1", "Conv", {2, 5, 6, 6}, {4, 5, 1, 1}, {4}, {}, true, false},
        LayerCase{"conv3x3_no_bias", "Conv", {1, 3, 7, 5}, {6, 3, 3, 3}, {}, {}, true, true},
        LayerCase{"conv3x3_stride2_groups", "Conv", {2, 4, 9, 9}, {6, 2, 3, 3}, {6}, attrs({{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}}}), true, true},
        LayerCase{"depthwise_dilated", "Conv", {1, 4, 8, 8}, {4, 1, 3, 3}, {4}, attrs({{"group", int64_t{4}}, {"dilations", std::vector<int64_t>{2, 2}}}), true, true},
        LayerCase{"conv1d", "Conv", {2, 3, 10}, {5, 3, 3}, {5}, {}, true, true},
        LayerCase{"gemm_transB", "Gemm", {3, 24}, {7, 24}, {7}, attrs({{"transB", int64_t{1}}}), false, false},
        LayerCase{"gemm_C_row", "Gemm", {2, 16}, {16, 5}, {1, 5}, {}, true, false},
        LayerCase{"gemm_no_C", "Gemm", {4, 12}, {12, 3}, {}, {}, false, false}),
    [](const auto& info) { return info.param.name; });

TEST(BiasCorrection, MeansAreTheChannelAveragesOfEachLayersInput) {
  // Two layers: one reading the graph input, one a Relu's output; two samples of batch 2.
  ir::Graph g;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {2, 3, 4, 5})).id;
  g.inputs().push_back(x);
  ir::ValueId r = g.addValue("r").id, y1 = g.addValue("y1").id, y2 = g.addValue("y2").id;
  g.addNode("Conv", "c1", {x, g.addConstant("w1", uniform({2, 3, 1, 1}, -1, 1, 1)).id}, {y1});
  g.addNode("Relu", "relu", {x}, {r});
  g.addNode("Conv", "c2", {r, g.addConstant("w2", uniform({2, 3, 1, 1}, -1, 1, 2)).id}, {y2});
  g.outputs() = {y1, y2};
  ops::inferShapes(g);
  std::vector<std::map<std::string, Tensor>> samples = {{{"x", uniform({2, 3, 4, 5}, -1, 3, 5)}}, {{"x", uniform({2, 3, 4, 5}, -2, 1, 6)}}};
  quant::InputMeans m = quant::measureInputMeans(g, samples, 1);
  for (int c = 0; c < 3; ++c) {
    double s = 0, sr = 0;
    for (auto& smp : samples) {
      const float* p = smp.at("x").data<float>();
      for (int b = 0; b < 2; ++b)
        for (int i = 0; i < 20; ++i) {
          float v = p[(b * 3 + c) * 20 + i];
          s += v;
          sr += std::max(v, 0.0f);
        }
    }
    EXPECT_NEAR(m.by_output.at("y1")[static_cast<size_t>(c)], s / 80, 1e-12);
    EXPECT_NEAR(m.by_output.at("y2")[static_cast<size_t>(c)], sr / 80, 1e-12);
  }
  // Same means on more threads (the engine's bits do not depend on them).
  EXPECT_EQ(quant::measureInputMeans(g, samples, 3).by_output, m.by_output);
  // A sample that does not fit the graph: the error names it.
  samples.push_back({{"x", uniform({1, 3, 4, 5}, 0, 1, 7)}});
  try {
    quant::measureInputMeans(g, samples, 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("calibration sample 3"), std::string::npos) << e.what();
  }
}

TEST(BiasCorrection, SharedBiasesStayAndUnreadOnesGo) {
  // Two Convs read one bias constant (torch de-duplicates equal initializers): correcting one leaves the other's.
  ir::Graph g;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 3, 4, 4})).id;
  g.inputs().push_back(x);
  ir::ValueId b = g.addConstant("b", uniform({2}, -1, 1, 3)).id;
  ir::ValueId y1 = g.addValue("y1").id, y2 = g.addValue("y2").id;
  g.addNode("Conv", "c1", {x, g.addConstant("w1", uniform({2, 3, 1, 1}, -1, 1, 1)).id, b}, {y1});
  g.addNode("Conv", "c2", {x, g.addConstant("w2", uniform({2, 3, 1, 1}, -1, 1, 2)).id, b}, {y2});
  g.outputs() = {y1, y2};
  ops::inferShapes(g);
  quant::InputMeans m = quant::measureInputMeans(g, {{{"x", uniform({1, 3, 4, 4}, 3, 5, 4)}}}, 1);
  Tensor before = g.value(b).constant->clone();

  auto one = g.clone();
  quant::InputMeans only1 = m;
  only1.by_output.erase("y2");
  EXPECT_EQ(quant::correctBias(*one, only1, quant::roundToHalf).layers, 1);
  ir::verify(*one);
  const ir::Node& c1 = one->node(one->value(*one->findValue("y1")).producer);
  const ir::Node& c2 = one->node(one->value(*one->findValue("y2")).producer);
  EXPECT_NE(c1.inputs[2], b);
  EXPECT_EQ(c2.inputs[2], b);
  EXPECT_TRUE(one->value(b).constant->sameBits(before));

  auto both = g.clone();
  EXPECT_EQ(quant::correctBias(*both, m, quant::roundToHalf).layers, 2);
  ir::verify(*both);
  EXPECT_FALSE(both->hasValue(b));
}

TEST(BiasCorrection, LeavesOtherLayersAlone) {
  // MatMul (no bias to correct), ConvTranspose, a Gemm whose C is a full matrix, a Conv with computed weights, and
  // weights float16 holds exactly (nothing to correct): no layer changes.
  ir::Graph g;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {2, 4})).id;
  ir::ValueId img = g.addValue("img", ir::makeType(DType::kF32, {1, 2, 3, 3})).id;
  ir::ValueId wi = g.addValue("wi", ir::makeType(DType::kF32, {2, 2, 1, 1})).id;
  g.inputs() = {x, img, wi};
  std::vector<ir::ValueId> ys;
  for (int i = 0; i < 5; ++i) ys.push_back(g.addValue("y" + std::to_string(i)).id);
  g.addNode("MatMul", "mm", {x, g.addConstant("bm", uniform({4, 3}, -1, 1, 1)).id}, {ys[0]});
  g.addNode("ConvTranspose", "ct", {img, g.addConstant("wt", uniform({2, 2, 3, 3}, -1, 1, 2)).id}, {ys[1]});
  g.addNode("Gemm", "gm", {x, g.addConstant("bg", uniform({4, 3}, -1, 1, 3)).id, g.addConstant("cg", uniform({2, 3}, -1, 1, 4)).id}, {ys[2]});
  g.addNode("Conv", "cw", {img, wi}, {ys[3]});
  g.addNode("Conv", "exact", {img, g.addConstant("we", Tensor::fromVector<float>({2, 2, 1, 1}, {0.5f, -1.25f, 2.0f, 0.0f})).id}, {ys[4]});
  g.outputs() = ys;
  ops::inferShapes(g);
  for (ir::NodeId id : g.order()) EXPECT_EQ(quant::correctable(g, g.node(id)), g.node(id).name == "exact") << g.node(id).name;
  quant::InputMeans m = quant::measureInputMeans(
      g, {{{"x", uniform({2, 4}, 1, 2, 5)}, {"img", uniform({1, 2, 3, 3}, 1, 2, 6)}, {"wi", uniform({2, 2, 1, 1}, 1, 2, 7)}}}, 1);
  EXPECT_EQ(m.by_output.size(), 1u);
  EXPECT_EQ(quant::correctBias(g, m, quant::roundToHalf).layers, 0);
}

// --- the translator's --calib ---

const std::string kDigits = std::string(NPUC_SOURCE_DIR) + "/models/digits/digits_cnn.onnx";

Tensor digitsSamples(int64_t n) {
  Tensor all = readNpyFile(std::string(NPUC_SOURCE_DIR) + "/models/digits/test_x.npy");
  Tensor t(DType::kF32, {n, 1, 8, 8});
  std::memcpy(t.raw(), all.raw(), t.nbytes());
  return t;
}

TranslateResult translateDigits(const std::string& target, const fs::path& root, const std::string& prefix,
                                std::map<std::string, std::vector<Tensor>> calib, int threads = 1) {
  TranslateOptions o;
  o.prefix = prefix;
  o.onnx = kDigits;
  o.target = target;
  o.out_root = root;
  o.save_opt_onnx = true;
  o.calibration = std::move(calib);
  o.threads = threads;
  return translate(o);
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(TranslateCalibration, ChangesTheBiasesOnlyAndGivesOnePackageForAnyThreadCount) {
  // One prefix in three roots (the prefix names the files, so it is part of the package's bytes).
  fs::path plain_dir = npuc::test::scratchDir("plain"), one_dir = npuc::test::scratchDir("one"), two_dir = npuc::test::scratchDir("two");
  TranslateResult plain = translateDigits("drpai", plain_dir, "d", {});
  Tensor cal = digitsSamples(48);
  // The samples in one tensor, or in two (a file per batch): the same samples, the same package.
  TranslateResult one = translateDigits("drpai", one_dir, "d", {{"input", {cal}}}, 1);
  Tensor a = digitsSamples(48);
  Tensor first(DType::kF32, {16, 1, 8, 8}, a.buffer(), 0), rest(DType::kF32, {32, 1, 8, 8}, a.buffer(), 16 * 64 * 4);
  TranslateResult two = translateDigits("drpai", two_dir, "d", {{"input", {first, rest}}}, 2);
  ASSERT_TRUE(plain.ok && one.ok && two.ok);
  EXPECT_EQ(one.calibration_samples, 48u);
  EXPECT_EQ(one.bias_corrected_layers, 4);  // three convolutions and the classifier
  EXPECT_EQ(plain.calibration_samples, 0u);
  EXPECT_NE(one.content_hash, plain.content_hash);
  EXPECT_EQ(one.content_hash, two.content_hash);
  // Only the weight file differs (the biases in it), and -SaveOptOnnx still writes the float model.
  for (const char* f : {"aimac_desc.bin", "drp_desc.bin", "drp_param.bin"})
    EXPECT_EQ(slurp(plain_dir / "d" / f), slurp(one_dir / "d" / f)) << f;
  std::string w0 = slurp(plain_dir / "d" / "d_weight.dat"), w1 = slurp(one_dir / "d" / "d_weight.dat");
  EXPECT_NE(w0, w1);
  EXPECT_EQ(w0.size(), w1.size());
  EXPECT_EQ(slurp(plain_dir / "d" / "d_opt.onnx"), slurp(one_dir / "d" / "d_opt.onnx"));
}

TEST(TranslateCalibration, Fp32TargetsSayTheyDoNotUseIt) {
  TranslateResult plain = translateDigits("generic", npuc::test::scratchDir("plain"), "d", {});
  TranslateResult cal = translateDigits("generic", npuc::test::scratchDir("cal"), "d", {{"input", {digitsSamples(8)}}});
  ASSERT_TRUE(plain.ok && cal.ok);
  EXPECT_EQ(cal.content_hash, plain.content_hash);
  EXPECT_EQ(cal.calibration_samples, 0u);
  ASSERT_FALSE(cal.warnings.empty());
  EXPECT_NE(cal.warnings[0].find("calibration data is not used"), std::string::npos) << cal.warnings[0];
}

TEST(TranslateCalibration, BadDataIsRefusedAndNothingIsWritten) {
  fs::path root = npuc::test::scratchDir("out");
  auto expectError = [&](std::map<std::string, std::vector<Tensor>> calib, const std::string& text) {
    try {
      translateDigits("drpai", root, "bad", std::move(calib));
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(root / "bad"));
  };
  expectError({{"image", {digitsSamples(2)}}}, "the model has no input of that name");
  expectError({{"input", {uniform({4, 1, 8, 7}, 0, 1, 1)}}}, "shape 4x1x8x7 does not stack samples of the input's shape 1x1x8x8");
  expectError({{"input", {Tensor(DType::kF64, {1, 1, 8, 8})}}}, "float64 values, the input is float32");
  expectError({{"input", {}}}, "input 'input' has none");
}

TEST(TranslateCalibration, EveryInputGivesTheSameNumberOfSamples) {
  // A model of two inputs (image 1x3x32x32, mask 1x1x32x32).
  TranslateOptions o;
  o.prefix = "an";
  o.onnx = std::string(NPUC_SOURCE_DIR) + "/tests/data/aipp/aipp_net.onnx";
  o.target = "drpai";
  o.out_root = npuc::test::scratchDir("out");
  o.calibration = {{"image", {uniform({3, 3, 32, 32}, 0, 1, 1)}}, {"mask", {uniform({2, 1, 32, 32}, 0, 1, 2)}}};
  try {
    translate(o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'mask' has 2 samples, input 'image' 3"), std::string::npos) << e.what();
  }
  o.calibration["mask"].push_back(uniform({1, 1, 32, 32}, 0, 1, 3));
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.calibration_samples, 3u);
  EXPECT_EQ(r.bias_corrected_layers, 3);
}

}  // namespace
