// One network in four formats (tests/data/same_net: ONNX, Caffe, TensorFlow, TFLite, the same seeded weights, written
// by tests/data/same_net/generate.py): each format's import equals its own oracle (numpy, OpenCV, Arm NN), and the
// packages translated from the four give identical outputs, bit for bit, for every target — float32, float16,
// int8-affine, int8-pow2 and int8-radix — in both simulator modes.
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"

#include "frontend/frontend_test_util.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(NPUC_SOURCE_DIR) / "tests/data/same_net";

struct Format {
  const char* name;
  fs::path model;
  fs::path weights;  // Caffe's .caffemodel
};

std::vector<Format> formats() {
  return {{"onnx", kData / "onnx/model.onnx", {}},
          {"caffe", kData / "caffe/model.prototxt", kData / "caffe/model.caffemodel"},
          {"tf", kData / "tf/model.pb", {}},
          {"tflite", kData / "tflite/model.tflite", {}}};
}

/// The format's stored input (NCHW for ONNX and Caffe, NHWC for TensorFlow and TFLite: the same values).
Tensor inputOf(const Format& f) { return test::readOracleCase(kData / f.name).inputs.begin()->second; }

TEST(SameNet, EachFormatEqualsItsOracle) {
  for (const Format& f : formats()) {
    test::OracleCase c = test::readOracleCase(kData / f.name);
    LoadOptions lo;
    lo.caffe_model = f.weights;
    Model m = Model::load(f.model, lo);
    std::vector<Tensor> got = Session(m).run(c.inputs);
    ASSERT_EQ(got.size(), 1u) << f.name;
    const double err = test::relError(got[0], c.expected.begin()->second);
    EXPECT_LE(err, 1e-5) << f.name;
    std::printf("[same_net] %-6s engine vs its oracle: max relative error %.3g\n", f.name, err);
  }
}

class SameNetPackages : public ::testing::TestWithParam<std::string> {};

TEST_P(SameNetPackages, AreIdenticalAcrossFormats) {
  const std::string target = GetParam();
  const bool int8 = target != "generic" && target != "drpai";
  std::vector<Tensor> reference;  // the ONNX package's output, exact and fast
  for (const Format& f : formats()) {
    TranslateOptions o;
    o.prefix = std::string("sn_") + f.name;
    o.onnx = f.model;
    o.caffe_model = f.weights;
    o.target = target;
    o.out_root = test::scratchDir("same_net_" + target);
    const Tensor x = inputOf(f);
    if (int8) o.calibration[f.name == std::string("caffe") ? "data" : "input"] = {x};
    TranslateResult r = translate(o);
    ASSERT_TRUE(r.ok) << f.name << " for " << target << ": "
                      << (r.errors.empty() ? "" : r.errors[0].rule + ": " + r.errors[0].actual);
    for (bool exact : {true, false}) {
      std::vector<Tensor> got = Runtime(r.dir, {1, exact}).run({x});
      ASSERT_EQ(got.size(), 1u);
      if (f.name == std::string("onnx")) {
        reference.push_back(got[0]);
        continue;
      }
      EXPECT_TRUE(got[0].sameBits(reference[exact ? 0 : 1]))
          << f.name << " vs onnx for " << target << (exact ? " (--exact)" : " (fast)");
    }
  }
  if (target == "generic") {  // and the float package is the engine's output
    std::vector<Tensor> engine = Session(Model::load(kData / "onnx/model.onnx")).run({{"input", inputOf(formats()[0])}});
    EXPECT_TRUE(reference[0].sameBits(engine[0]));
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, SameNetPackages,
                         ::testing::Values("generic", "drpai", "generic-int8", "tidl", "kneron"));

}  // namespace
