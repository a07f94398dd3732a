// A keyword spotter whose log-mel front end is inside the model (tests/data/audio/generate.py: STFT, power, mel filter
// bank, log, then a CNN): the engine against PyTorch's logits; the generic package (stft, reduce, matmul layers before
// the convolutions) computes the engine's bits in --exact and fast mode; the int8-affine package translates and runs
// with the same bits in both modes.
#include "codegen/cost.hpp"
#include "driver/translation.hpp"
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"

#include "scratch_dir.hpp"
#include "target/target.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

using namespace npuc;
namespace fs = std::filesystem;

namespace {
const fs::path kAudio = fs::path(NPUC_SOURCE_DIR) / "tests/data/audio";
}

TEST(AudioModels, LogMelKeywordSpotterEqualsPyTorchAndItsPackages) {
  Model m = Model::load(kAudio / "kws.onnx");
  const Tensor audio = readNpyFile(kAudio / "kws.in.npy"), want = readNpyFile(kAudio / "kws.out0.npy");
  const std::vector<Tensor> got = Session(m).run({audio});
  ASSERT_EQ(got[0].shape(), want.shape());
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.data<float>()[i], g = got[0].data<float>()[i];
    worst = std::max(worst, std::fabs(g - w) / std::max(1.0, std::fabs(w)));
  }
  EXPECT_LT(worst, 1e-5);
  TranslateOptions o;
  o.prefix = "kws";
  o.onnx = kAudio / "kws.onnx";
  o.target = "generic";
  o.out_root = test::scratchDir("audio_kws");
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok) << (r.errors.empty() ? "" : r.errors[0].rule + ": " + r.errors[0].actual);
  for (RuntimeOptions opts : {RuntimeOptions{1, true}, RuntimeOptions{2, false}})
    EXPECT_TRUE(Runtime(r.dir, opts).run({audio})[0].sameBits(got[0])) << (opts.exact ? "exact" : "fast");
  o.target = "generic-int8";
  o.prefix = "kws_int8";
  o.calibration["audio"] = {audio};
  TranslateResult q = translate(o);
  ASSERT_TRUE(q.ok) << (q.errors.empty() ? "" : q.errors[0].rule + ": " + q.errors[0].actual);
  const Tensor exact = Runtime(q.dir, RuntimeOptions{1, true}).run({audio})[0];
  EXPECT_TRUE(Runtime(q.dir, RuntimeOptions{2, false}).run({audio})[0].sameBits(exact));
}

// The time estimate counts an STFT's transform: every output bin sums its whole frame (61 frames × 129 bins × 256
// samples × a real and an imaginary product), on generic's vector engine at 16 elements per cycle and 1000 MHz, plus
// its 1 µs overhead — not the elements it reads and writes.
TEST(AudioModels, TheEstimateCountsTheStftTransform) {
  const Model m = Model::load(fs::path(NPUC_SOURCE_DIR) / "tests/data/audio/kws.onnx").optimized();
  const target::Target t = target::loadTarget("generic");
  const codegen::Estimate e = codegen::estimate(graphOf(m), t);
  const auto stft = std::find_if(e.layers.begin(), e.layers.end(), [](const codegen::LayerEstimate& l) { return l.op == "STFT"; });
  ASSERT_NE(stft, e.layers.end());
  const target::Engine& vec = t.engines.at(stft->engine);
  EXPECT_NEAR(stft->time_us, vec.overhead_us + 61.0 * 129 * 256 * 2 / (vec.elems_per_cycle * vec.clock_mhz), 1e-6);
}
