// Calibration ranges (quant/range.hpp): each method's threshold on distributions whose answer is known — uniform,
// Gaussian, Gaussian with a few far outliers — and the edge cases (all zero, NaN and infinities, no histogram).
#include "quant/range.hpp"

#include "npuc/model.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <filesystem>

#include <unistd.h>

namespace npuc {
const ir::Graph& graphOf(const Model& m);  // src/driver/model.cpp
}

namespace npuc::quant {
namespace {

TensorStats statsOf(const std::vector<float>& v, int bins = 2048) {
  TensorStats s(bins);
  s.observeRange(v.data(), static_cast<int64_t>(v.size()));
  s.observeHistogram(v.data(), static_cast<int64_t>(v.size()));
  return s;
}

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(CalibrationRange, MinMaxAndCounts) {
  const float inf = std::numeric_limits<float>::infinity();
  TensorStats s = statsOf({-3.0f, 1.0f, 2.0f, std::nanf(""), inf, -inf});
  EXPECT_EQ(s.min(), -3.0);
  EXPECT_EQ(s.max(), 2.0);
  EXPECT_EQ(s.count(), 3);
  EXPECT_EQ(s.nonFinite(), 3);
  EXPECT_EQ(s.threshold(RangeMethod::kMinMax), 3.0);
  int64_t total = 0;
  for (int64_t c : s.histogram()) total += c;
  EXPECT_EQ(total, 3);
  EXPECT_EQ(s.histogram().back(), 1);  // |-3| = absMax falls into the last bin
}

TEST(CalibrationRange, PercentileAndEntropyClipOutliersMinMaxDoesNot) {
  std::vector<float> v = gaussian(200000, 1);
  for (int i = 0; i < 5; ++i) v.push_back(60.0f);  // five far outliers
  TensorStats s = statsOf(v);
  EXPECT_EQ(s.threshold(RangeMethod::kMinMax), 60.0);
  const double p = s.threshold(RangeMethod::kPercentile, 99.99);
  EXPECT_GT(p, 3.3);  // the 99.99th percentile of |N(0, 1)| is 3.89
  EXPECT_LT(p, 4.5);
  const double e = s.threshold(RangeMethod::kEntropy);
  EXPECT_GT(e, 2.0);
  EXPECT_LT(e, 10.0);
  // MSE weighs squared error: clipping five values by ~56 each costs more than rounding 200k values on a coarse
  // grid, so it keeps them — the method for tensors without rare far outliers.
  EXPECT_GT(s.threshold(RangeMethod::kMse), 40.0);
  // On a plain Gaussian the squared-error optimum of 8-bit clipping lies near 4 sigma (rounding (T/127)^2/12 against
  // the tails' clipping error).
  TensorStats g = statsOf(gaussian(200000, 3));
  const double m = g.threshold(RangeMethod::kMse);
  EXPECT_GT(m, 3.2);
  EXPECT_LT(m, 5.0);
  EXPECT_LT(m, g.absMax());
}

TEST(CalibrationRange, UniformDataKeepsNearlyItsWholeRange) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(100000);
  for (float& x : v) x = d(rng);
  TensorStats s = statsOf(v);
  // Nothing to clip: every method keeps at least 90 % of the range (clipping a uniform tail only adds error).
  for (RangeMethod m : {RangeMethod::kMinMax, RangeMethod::kPercentile, RangeMethod::kEntropy, RangeMethod::kMse})
    EXPECT_GT(s.threshold(m), 0.9 * s.absMax()) << rangeMethodName(m);
}

TEST(CalibrationRange, EdgeCases) {
  TensorStats zero = statsOf(std::vector<float>(100, 0.0f));
  for (RangeMethod m : {RangeMethod::kMinMax, RangeMethod::kPercentile, RangeMethod::kEntropy, RangeMethod::kMse})
    EXPECT_EQ(zero.threshold(m), 0.0) << rangeMethodName(m);
  TensorStats only_range(2048);
  const float v[] = {1.0f, -2.0f};
  only_range.observeRange(v, 2);
  EXPECT_EQ(only_range.threshold(RangeMethod::kMinMax), 2.0);
  EXPECT_THROW(only_range.threshold(RangeMethod::kEntropy), Error);  // the histogram pass never ran
  only_range.observeHistogram(v, 2);
  EXPECT_THROW(only_range.observeRange(v, 2), Error);  // the range is fixed once the histogram has begun
  EXPECT_THROW(TensorStats(4), Error);
  RangeMethod m;
  for (const char* n : {"minmax", "percentile", "entropy", "mse"}) {
    ASSERT_TRUE(rangeMethodFromName(n, &m));
    EXPECT_STREQ(rangeMethodName(m), n);
  }
  EXPECT_FALSE(rangeMethodFromName("kl", &m));
}

// Statistics of every tensor of the digits model over 40 test images: the input's are the data's own, every
// Relu output is non-negative, counts add up over the samples, and each method's range holds 0 and stays inside
// [min, max].
TEST(CalibrationRange, CollectsEveryTensorOfAModel) {
  const std::string dir = std::string(NPUC_SOURCE_DIR) + "/models/digits/";
  Model m = Model::load(dir + "digits_cnn.onnx").optimized();
  const ir::Graph& g = graphOf(m);
  Tensor all = readNpy(dir + "test_x.npy");
  std::vector<std::map<std::string, Tensor>> samples;
  double lo = 1e9, hi = -1e9;
  for (int i = 0; i < 40; ++i) {
    Tensor t(DType::kF32, {1, 1, 8, 8});
    std::memcpy(t.raw(), static_cast<const float*>(all.raw()) + i * 64, 64 * sizeof(float));
    for (int k = 0; k < 64; ++k) lo = std::min<double>(lo, t.data<float>()[k]), hi = std::max<double>(hi, t.data<float>()[k]);
    samples.push_back({{m.inputs()[0].name, t}});
  }
  std::map<std::string, TensorStats> stats = collectStats(g, samples, 2);
  const TensorStats& in = stats.at(m.inputs()[0].name);
  EXPECT_EQ(in.min(), lo);
  EXPECT_EQ(in.max(), hi);
  EXPECT_EQ(in.count(), 40 * 64);
  int relus = 0;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    const TensorStats& s = stats.at(g.value(n.outputs[0]).name);
    EXPECT_EQ(s.count() % 40, 0) << n.name;
    if (n.op == "Relu" || n.attrString("activation", "") == "Relu") {
      ++relus;
      EXPECT_GE(s.min(), 0.0) << n.name;
    }
    for (RangeMethod meth : {RangeMethod::kMinMax, RangeMethod::kPercentile, RangeMethod::kEntropy, RangeMethod::kMse}) {
      Range r = rangeOf(s, meth);
      EXPECT_LE(r.lo, 0.0);
      EXPECT_GE(r.hi, 0.0);
      EXPECT_GE(r.lo, std::min(0.0, s.min()));
      EXPECT_LE(r.hi, std::max(0.0, s.max()));
    }
  }
  EXPECT_GT(relus, 0);
  EXPECT_THROW(collectStats(g, {}, 1), Error);  // an empty calibration set
  Range zero = rangeOf(statsOf(std::vector<float>(10, 2.5f)), RangeMethod::kMinMax);
  EXPECT_NE(zero.warning.find("zero-width"), std::string::npos) << zero.warning;
  EXPECT_EQ(zero.lo, 0.0);
  EXPECT_EQ(zero.hi, 2.5);
}

// The statistics are kept for the process by what they depend on (npuc tune translates one model many times): the
// same graph and samples give the same statistics at once, whatever the threads; a changed weight, a changed sample
// or another graph is measured again, never served the old ones.
TEST(CalibrationRange, StatisticsAreReusedOnlyForTheSameGraphAndSamples) {
  const std::string dir = std::string(NPUC_SOURCE_DIR) + "/models/digits/";
  Model m = Model::load(dir + "digits_cnn.onnx").optimized();
  const ir::Graph& g = graphOf(m);
  Tensor all = readNpy(dir + "test_x.npy");
  std::vector<std::map<std::string, Tensor>> samples;
  for (int i = 0; i < 8; ++i) {
    Tensor t(DType::kF32, {1, 1, 8, 8});
    std::memcpy(t.raw(), static_cast<const float*>(all.raw()) + i * 64, 64 * sizeof(float));
    samples.push_back({{m.inputs()[0].name, t}});
  }
  const std::string out = g.value(g.outputs()[0]).name;
  const auto a = collectStats(g, samples, 1), b = collectStats(g, samples, 2);
  ASSERT_EQ(a.size(), b.size());
  for (auto& [name, s] : a) {
    EXPECT_EQ(s.min(), b.at(name).min()) << name;
    EXPECT_EQ(s.max(), b.at(name).max()) << name;
    EXPECT_EQ(s.histogram(), b.at(name).histogram()) << name;
  }
  // A weight scaled by 2: the output's range moves (the cached statistics would not).
  auto g2 = g.clone();
  for (ir::ValueId v : g2->valueIds()) {
    ir::Value& val = g2->value(v);
    if (!val.isConstant() || val.constant->rank() != 2) continue;  // the classifier's weights
    Tensor w = val.constant->clone();
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] *= 2;
    val.constant = std::move(w);
  }
  const auto c = collectStats(*g2, samples, 1);
  EXPECT_NE(c.at(out).max(), a.at(out).max());
  // One sample changed: the input's range follows it.
  auto other = samples;
  other[0].begin()->second = other[0].begin()->second.clone();
  other[0].begin()->second.data<float>()[0] = 100.0f;
  EXPECT_EQ(collectStats(g, other, 1).at(m.inputs()[0].name).max(), 100.0);
  EXPECT_EQ(collectStats(g, samples, 1).at(out).max(), a.at(out).max());
}

// After a Relu half the values are exactly 0. Zeros are exact in every range, so they must not pull the entropy
// threshold down: with them in the histogram's first bin the KL search picked 1/12 of the range on the
// Fashion-MNIST ResNet's Relu outputs (accuracy 91.9% -> 51%).
TEST(CalibrationRange, ExactZerosDoNotDriveTheThreshold) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> relu(200000);
  for (size_t i = 0; i < relu.size(); ++i) relu[i] = i % 2 ? u(rng) : 0.0f;
  TensorStats s = statsOf(relu);
  EXPECT_EQ(s.zeros(), 100000);
  EXPECT_GT(s.threshold(RangeMethod::kEntropy), 0.8);  // a uniform body: little to clip
  EXPECT_GT(s.threshold(RangeMethod::kMse), 0.8);
  // The percentile counts the zeros: the 40th percentile of |x| is 0 (the smallest resolvable threshold).
  EXPECT_LT(s.threshold(RangeMethod::kPercentile, 40.0), 0.001);
  EXPECT_NEAR(s.threshold(RangeMethod::kPercentile, 75.0), 0.5, 0.01);
}

// Statistics in shards (docs/calibration.md): pass 1 of three shards merged, pass 2 of each begun from those ranges
// and merged, are the statistics of one local pass — the same package bytes — for every int8 family; given with
// other samples in `calibration`, the statistics are what the package follows (they are used, not measured again);
// bad parts are refused naming the part and the rule, and no scratch folder is left. (generic-int8, tidl and kneron
// calibrate the same optimized digits graph: their statistics are interchangeable, and merge.)
TEST(CalibrationShards, MergedShardsAreOneLocalPass) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("npuc_calib_shards_" + std::to_string(::getpid()));
  const Tensor x = readNpyFile(std::string(NPUC_SOURCE_DIR) + "/models/digits/test_x.npy");
  auto rows = [&](int64_t from, int64_t to) {
    Tensor t(DType::kF32, Shape{to - from, 1, 8, 8});
    std::memcpy(t.raw(), x.data<float>() + from * 64, static_cast<size_t>(t.numel()) * sizeof(float));
    return t;
  };
  auto options = [&](const std::string& target, const Tensor& samples, const std::string& prefix) {
    TranslateOptions o;
    o.prefix = prefix;
    o.onnx = std::string(NPUC_SOURCE_DIR) + "/models/digits/digits_cnn.onnx";
    o.target = target;
    o.out_root = dir;
    o.calibration["input"] = {samples};
    o.threads = 2;
    return o;
  };
  auto sharded = [&](const std::string& target, int64_t n) {
    std::vector<std::vector<uint8_t>> p1, p2;
    const int64_t cuts[] = {0, n / 3, 2 * n / 3, n};
    for (int k = 0; k < 3; ++k) p1.push_back(calibrationPass(options(target, rows(cuts[k], cuts[k + 1]), "s"), 1));
    const std::vector<uint8_t> ranges = mergeCalibrationStats(p1, 1);
    for (int k = 0; k < 3; ++k) p2.push_back(calibrationPass(options(target, rows(cuts[k], cuts[k + 1]), "s"), 2, ranges));
    return mergeCalibrationStats(p2, 2);
  };
  for (const char* target : {"generic-int8", "tidl", "kneron"}) {
    const TranslateResult local = translate(options(target, rows(0, 300), "local"));
    TranslateOptions given = options(target, rows(0, 300), "local");
    given.out_root = dir / "given";
    given.calibration_stats = sharded(target, 300);
    EXPECT_EQ(translate(given).content_hash, local.content_hash) << target;
    // Statistics of the first 6 samples with all 300 in `calibration`: the package of the first 6.
    TranslateOptions half = options(target, rows(0, 6), "local");
    half.out_root = dir / "half";
    TranslateOptions mixed = options(target, rows(0, 300), "local");
    mixed.out_root = dir / "mixed";
    mixed.calibration_stats = sharded(target, 6);
    const std::string want = translate(half).content_hash;
    EXPECT_EQ(translate(mixed).content_hash, want) << target;
    EXPECT_NE(want, local.content_hash) << target;
  }
  auto refused = [&](auto&& f, const std::string& fragment) {
    try {
      f();
      ADD_FAILURE() << "accepted; expected: " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  const std::vector<uint8_t> a = calibrationPass(options("generic-int8", rows(0, 20), "s"), 1);
  TranslateOptions equalized = options("generic-int8", rows(0, 20), "s");
  equalized.equalize = "relu";  // (other weights: another graph)
  const std::vector<uint8_t> b = calibrationPass(equalized, 1);
  refused([&] { mergeCalibrationStats({a, b}, 1); }, "calibration statistics part 2: measured on another model or options");
  refused([&] { mergeCalibrationStats({a, {1, 2, 3}}, 1); }, "part 2: not npuc calibration statistics");
  refused([&] { mergeCalibrationStats({std::vector<uint8_t>(a.begin(), a.end() - 5)}, 1); }, "truncated");
  {  // a count beyond 2^50 (fuzz_calib_stats found the sum of such counts overflowing): refused
    std::string key;
    const auto parsed = readStats(a, "a", &key);
    std::vector<uint8_t> big = a;
    const size_t at = 8 + 4 + 4 + key.size() + 8 + 4 + parsed.begin()->first.size() + 4 + 16;  // the first tensor's count
    const int64_t huge = int64_t{1} << 62;
    std::memcpy(big.data() + at, &huge, sizeof huge);
    refused([&] { mergeCalibrationStats({big}, 1); }, "field 'count': 4611686018427387904 is outside 0 .. 2^50");
  }
  refused([&] { calibrationPass(options("generic-int8", rows(0, 20), "s"), 2); }, "the ranges of pass 1");
  refused([&] { calibrationPass(equalized, 2, a); }, "of another model or options");
  refused([&] { calibrationPass(options("generic-int8", rows(0, 20), "s"), 1, a); }, "pass 1 takes no ranges");
  refused([&] { calibrationPass(options("drpai", rows(0, 20), "s"), 1); }, "measures no calibration statistics");
  TranslateOptions bad = options("generic-int8", rows(0, 20), "bad");
  bad.calibration_stats = {'N', 'P', 'U', 'C'};
  refused([&] { translate(bad); }, "the calibration statistics: not npuc calibration statistics");
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    EXPECT_EQ(e.path().filename().string().rfind("npuc-calib-" + std::to_string(::getpid()) + "-", 0), std::string::npos) << e.path();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace npuc::quant
