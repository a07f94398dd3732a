// AdaRound (src/quant/adaround.hpp, docs/calibration.md): the Gram matrices of a layer's input patches against
// patches cut by hand, the rounding against an exhaustive search on small rows (never worse than rounding to
// nearest, mostly optimal), the same codes for any thread count, and translate --adaround on int8-pow2 4-bit weights
// and int8-affine packages (the package equal to the engine on the model quantized with the same codes).
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "ops/registry.hpp"
#include "quant/adaround.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"
#include "support/thread_pool.hpp"

#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>

namespace npuc {
const ir::Graph& graphOf(const Model& m);  // src/driver/model.cpp
}

using namespace npuc;
namespace fs = std::filesystem;

namespace {

/// Δ H Δ^T of one row of codes against values x (in steps).
double rowError(const std::vector<int32_t>& codes, const std::vector<double>& x, const std::vector<double>& H, int64_t K) {
  double s = 0;
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < K; ++j)
      s += (codes[static_cast<size_t>(i)] - x[static_cast<size_t>(i)]) * H[static_cast<size_t>(i * K + j)] *
           (codes[static_cast<size_t>(j)] - x[static_cast<size_t>(j)]);
  return s;
}

/// A Gram matrix of `n` patches of K values drawn from [0, 1) (a ReLU's output: far from zero-mean).
quant::InputGram randomGram(int64_t K, int n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  quant::InputGram g;
  g.K = K;
  g.H.assign(static_cast<size_t>(K * K), 0.0);
  std::vector<double> p(static_cast<size_t>(K));
  for (int t = 0; t < n; ++t) {
    for (double& v : p) v = u(rng);
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < K; ++j) g.H[static_cast<size_t>(i * K + j)] += p[static_cast<size_t>(i)] * p[static_cast<size_t>(j)] / n;
  }
  g.patches = n;
  return g;
}

}  // namespace

TEST(AdaRound, NeverWorseThanNearestAndMostlyTheBestRounding) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t K = 6, rows = 4;
  const double step = 0.3, lim = 7;
  int optimal = 0, total = 0, better = 0;
  for (int trial = 0; trial < 30; ++trial) {
    const quant::InputGram g = randomGram(K, 24, rng);
    std::vector<float> w(static_cast<size_t>(rows * K));
    for (float& v : w) v = u(rng);
    const quant::LayerRounding r = quant::adaRound(w.data(), rows, K, {step}, lim, g, {}, nullptr);
    EXPECT_LE(r.error, r.error_nearest * (1 + 1e-12));
    for (int64_t row = 0; row < rows; ++row) {
      std::vector<double> x(static_cast<size_t>(K));
      std::vector<int32_t> got(static_cast<size_t>(K)), near(static_cast<size_t>(K)), best;
      for (int64_t k = 0; k < K; ++k) {
        x[static_cast<size_t>(k)] = w[static_cast<size_t>(row * K + k)] / step;
        got[static_cast<size_t>(k)] = r.codes[static_cast<size_t>(row * K + k)];
        near[static_cast<size_t>(k)] = static_cast<int32_t>(std::nearbyint(x[static_cast<size_t>(k)]));
        EXPECT_TRUE(got[static_cast<size_t>(k)] == std::floor(x[static_cast<size_t>(k)]) ||
                    got[static_cast<size_t>(k)] == std::floor(x[static_cast<size_t>(k)]) + 1) << "a code is floor or floor + 1";
      }
      double best_err = INFINITY;
      for (int mask = 0; mask < (1 << K); ++mask) {  // every up / down choice
        std::vector<int32_t> c(static_cast<size_t>(K));
        for (int64_t k = 0; k < K; ++k) c[static_cast<size_t>(k)] = static_cast<int32_t>(std::floor(x[static_cast<size_t>(k)])) + ((mask >> k) & 1);
        const double e = rowError(c, x, g.H, K);
        if (e < best_err) best_err = e, best = c;
      }
      const double e_got = rowError(got, x, g.H, K), e_near = rowError(near, x, g.H, K);
      EXPECT_LE(e_got, e_near * (1 + 1e-12));
      optimal += e_got <= best_err * (1 + 1e-9);
      better += e_got < e_near * (1 - 1e-9);
      ++total;
    }
  }
  // Nearest is the best choice in few rows of this coarse a step; AdaRound finds the best in most.
  EXPECT_GE(better, total / 2) << better << " of " << total;
  EXPECT_GE(optimal, total * 7 / 10) << optimal << " of " << total;
}

TEST(AdaRound, TheSameCodesForAnyThreadCountAndCodesInRange) {
  std::mt19937 rng(11);
  std::normal_distribution<float> n(0, 1);
  const int64_t K = 72, rows = 48;
  quant::InputGram g = randomGram(K, 200, rng);
  std::vector<float> w(static_cast<size_t>(rows * K));
  for (float& v : w) v = n(rng);
  std::vector<double> steps(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) steps[static_cast<size_t>(r)] = 0.4 + 0.01 * static_cast<double>(r);
  const quant::LayerRounding one = quant::adaRound(w.data(), rows, K, steps, 7, g, {}, nullptr);
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    const quant::LayerRounding more = quant::adaRound(w.data(), rows, K, steps, 7, g, {}, &pool);
    EXPECT_EQ(more.codes, one.codes) << threads << " threads";
    EXPECT_EQ(more.error, one.error);
  }
  for (int32_t c : one.codes) EXPECT_TRUE(c >= -7 && c <= 7) << c;
  EXPECT_LT(one.error, 0.8 * one.error_nearest);
  EXPECT_GT(one.changed, 0);
}

// A weight two convolutions read gets one rounding for both: the rows' error summed over both layers' patches — the
// Gram matrices averaged by their patch counts, written out here — and the note says so.
TEST(AdaRound, AWeightTwoLayersReadIsRoundedForBoth) {
  ir::Graph g;
  g.opset = 13;
  const int64_t C = 3, M = 4, K = C * 3 * 3;
  const ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, C, 6, 6})).id;
  g.inputs().push_back(x);
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0, 1);
  Tensor wt(DType::kF32, Shape{M, C, 3, 3});
  for (int64_t i = 0; i < wt.numel(); ++i) wt.data<float>()[i] = n(rng);
  const ir::ValueId w = g.addConstant("w_shared", wt).id, y1 = g.addValue("y1").id, y2 = g.addValue("y2").id;
  g.addNode("Conv", "c1", {x, w}, {y1}).attrs["pads"] = ir::Attr(std::vector<int64_t>{1, 1, 1, 1});
  g.addNode("Conv", "c2", {x, w}, {y2}).attrs["strides"] = ir::Attr(std::vector<int64_t>{2, 2});
  g.outputs() = {y1, y2};
  ops::inferShapes(g);
  quant::InputGrams grams;
  grams.by_output["y1"] = randomGram(K, 300, rng);
  grams.by_output["y2"] = randomGram(K, 100, rng);
  for (double& h : grams.by_output["y2"].H) h *= 3.0;  // (another input scale)
  std::vector<double> steps(static_cast<size_t>(M), 0.35);
  const quant::StepsOf stepsOf = [&](const ir::Node&, const Tensor&) { return std::optional<quant::WeightSteps>({steps, 7}); };
  const quant::AdaRoundResult r = quant::adaRoundLayers(g, grams, stepsOf, {}, 1);
  ASSERT_EQ(r.codes.size(), 1u);
  quant::InputGram joint = grams.by_output["y1"];
  for (size_t i = 0; i < joint.H.size(); ++i) joint.H[i] = (joint.H[i] * 300 + grams.by_output["y2"].H[i] * 100) / 400;
  joint.patches = 400;
  const quant::LayerRounding want = quant::adaRound(wt.data<float>(), M, K, steps, 7, joint, {}, nullptr);
  EXPECT_EQ(r.codes.at("w_shared"), want.codes);
  EXPECT_NE(r.notes.at("w_shared").find("one rounding for the 2 layers reading it"), std::string::npos) << r.notes.at("w_shared");
  // (each layer alone would round it otherwise: the first layer's codes differ from the joint ones here)
  EXPECT_NE(quant::adaRound(wt.data<float>(), M, K, steps, 7, grams.by_output["y1"], {}, nullptr).codes, want.codes);
}

// The Gram matrix of a strided, padded, grouped convolution's input against patches cut by hand.
TEST(AdaRound, TheGramMatrixIsThatOfTheConvolutionsPatches) {
  for (int64_t group : {1, 2}) {
    ir::Graph g;
    g.opset = 13;
    const int64_t C = 4, H = 5, W = 6, M = 4, Cg = C / group;
    const ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, C, H, W})).id;
    g.inputs().push_back(x);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    Tensor wt(DType::kF32, Shape{M, Cg, 3, 2});
    for (int64_t i = 0; i < wt.numel(); ++i) wt.data<float>()[i] = u(rng);
    const ir::ValueId y = g.addValue("y").id;
    ir::Node& conv = g.addNode("Conv", "conv", {x, g.addConstant("w", wt).id}, {y});
    conv.attrs["group"] = ir::Attr(group);
    conv.attrs["strides"] = ir::Attr(std::vector<int64_t>{2, 1});
    conv.attrs["pads"] = ir::Attr(std::vector<int64_t>{1, 0, 1, 1});
    g.outputs().push_back(y);
    ops::inferShapes(g);
    std::vector<std::map<std::string, Tensor>> samples;
    for (int s = 0; s < 2; ++s) {
      Tensor t(DType::kF32, Shape{1, C, H, W});
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
      samples.push_back({{"x", t}});
    }
    const quant::InputGrams grams = quant::measureInputGrams(g, samples, 1);
    ASSERT_TRUE(grams.by_output.count("y"));
    const quant::InputGram& got = grams.by_output.at("y");
    ASSERT_EQ(got.groups, group);
    const int64_t K = Cg * 3 * 2, OH = (H + 2 - 3) / 2 + 1, OW = (W + 1 - 2) + 1;
    ASSERT_EQ(got.K, K);
    EXPECT_EQ(got.patches, 2 * OH * OW);
    std::vector<double> want(static_cast<size_t>(group * K * K), 0.0);
    for (auto& s : samples) {
      const float* p = s.at("x").data<float>();
      for (int64_t gi = 0; gi < group; ++gi)
        for (int64_t oy = 0; oy < OH; ++oy)
          for (int64_t ox = 0; ox < OW; ++ox) {
            std::vector<double> v;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t ky = 0; ky < 3; ++ky)
                for (int64_t kx = 0; kx < 2; ++kx) {
                  const int64_t iy = oy * 2 - 1 + ky, ix = ox + kx;
                  v.push_back(iy >= 0 && iy < H && ix < W ? p[((gi * Cg + c) * H + iy) * W + ix] : 0.0);
                }
            for (int64_t i = 0; i < K; ++i)
              for (int64_t j = 0; j < K; ++j) want[static_cast<size_t>((gi * K + i) * K + j)] += v[static_cast<size_t>(i)] * v[static_cast<size_t>(j)];
          }
    }
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.H[i], want[i] / static_cast<double>(2 * OH * OW), 1e-5) << i;
  }
}

namespace {

const fs::path kDigits = fs::path(NPUC_SOURCE_DIR) / "models" / "digits";

/// top-1 of the package in `dir` on the digits test set.
double accuracy(const fs::path& dir) {
  const Tensor x = readNpyFile(kDigits / "test_x.npy"), y = readNpyFile(kDigits / "test_y.npy");
  Runtime rt(dir, RuntimeOptions{1, false});
  const auto labels = y.toInt64();
  int64_t correct = 0;
  for (int64_t i = 0; i < x.dim(0); ++i) {
    Tensor xi(DType::kF32, Shape{1, 1, 8, 8});
    std::memcpy(xi.raw(), x.data<float>() + i * 64, 64 * sizeof(float));
    rt.setInput("input", xi);
    rt.run();
    const std::vector<double> out = rt.outputFloat(rt.outputs()[0].name).toDouble();
    correct += std::max_element(out.begin(), out.end()) - out.begin() == labels[static_cast<size_t>(i)];
  }
  return 100.0 * static_cast<double>(correct) / static_cast<double>(x.dim(0));
}

TranslateOptions digitsOptions(const std::string& prefix, const std::string& target, const fs::path& out) {
  TranslateOptions o;
  o.prefix = prefix;
  o.onnx = kDigits / "digits_cnn.onnx";
  o.target = target;
  o.out_root = out;
  o.calibration["input"] = {readNpyFile(kDigits / "test_x.npy")};
  o.threads = 2;
  return o;
}

}  // namespace

// 4-bit weights (TIDL's numParamBits 4) lose most of the digits model's accuracy rounded to nearest; AdaRound gives
// most of it back, and says so per layer in PREFIX_pow2_table.csv.
TEST(AdaRound, GivesBackTheAccuracyOf4BitWeights) {
  const fs::path dir = test::scratchDir("adaround_pow2");
  TranslateOptions o = digitsOptions("near", "tidl", dir);
  o.pow2.num_param_bits = 4;
  ASSERT_TRUE(translate(o).ok);
  TranslateOptions a = o;
  a.prefix = "ada";
  a.adaround = true;
  ASSERT_TRUE(translate(a).ok);
  const double near = accuracy(dir / "near"), ada = accuracy(dir / "ada");
  EXPECT_LT(near, 60.0);
  EXPECT_GT(ada, 95.0) << "nearest " << near;
  std::ifstream table(dir / "ada" / "ada_pow2_table.csv");
  const std::string text((std::istreambuf_iterator<char>(table)), {});
  EXPECT_NE(text.find("AdaRound: output error"), std::string::npos);
  // With bias correction of what the chosen codes leave: the bias follows AdaRound's codes, not the nearest ones.
  a.prefix = "both";
  a.bias_correction = true;
  ASSERT_TRUE(translate(a).ok);
  TranslateOptions b = o;
  b.prefix = "bc";
  b.bias_correction = true;
  ASSERT_TRUE(translate(b).ok);
  const double both = accuracy(dir / "both"), bc = accuracy(dir / "bc");
  EXPECT_GT(both, 95.0) << "bias correction alone " << bc;
}

// int8-affine: the package holds the AdaRound codes the quantizer chose (the QDQ model quantized with the same
// options on the engine, bit for bit), at least one weight differs from rounding to nearest, and the table says so.
TEST(AdaRound, Int8AffinePackagesHoldTheCodesTheQuantizerChose) {
  const fs::path dir = test::scratchDir("adaround_affine");
  TranslateOptions o = digitsOptions("ada8", "generic-int8", dir);
  o.adaround = true;
  ASSERT_TRUE(translate(o).ok);
  QuantizeOptions q;
  q.calibration = o.calibration;
  q.threads = 2;
  q.integer_layers = true;
  q.adaround = true;
  QuantizeReport rep;
  const Model qdq = Model::load(o.onnx).optimized().quantizedQdq(q, &rep);
  int noted = 0;
  for (const QuantizedTensor& t : rep.tensors) noted += t.kind == "weight" && t.note.find("AdaRound") != std::string::npos;
  EXPECT_GE(noted, 3);
  const Tensor x = readNpyFile(kDigits / "test_x.npy");
  Session s(qdq, 1);
  for (bool exact : {true, false}) {
    Runtime rt(dir / "ada8", RuntimeOptions{2, exact});
    for (int64_t i = 0; i < 20; ++i) {
      Tensor xi(DType::kF32, Shape{1, 1, 8, 8});
      std::memcpy(xi.raw(), x.data<float>() + i * 64, 64 * sizeof(float));
      rt.setInput("input", xi);
      rt.run();
      EXPECT_TRUE(rt.outputFloat(rt.outputs()[0].name).sameBits(s.run({{"input", xi}})[0])) << i << (exact ? " exact" : " fast");
    }
  }
  EXPECT_GT(accuracy(dir / "ada8"), 97.0);
}
