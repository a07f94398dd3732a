// A small single-shot detector exported with torchvision-style post-processing (tests/data/detect/generate.py: per
// class a threshold, NonZero, a TopK of k = min(20, kept), then batched NMS behind an If, the first 30 kept): the
// engine against PyTorch on an image with 8 detections, one with 30 (the cap) and one with none (every output empty).
// Packages hold it whole (dynamic tensors, docs/package-format.md).
#include "driver/translation.hpp"
#include "package/package.hpp"
#include "passes/pass.hpp"
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"

#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

using namespace npuc;
namespace fs = std::filesystem;

namespace {
const fs::path kDetect = fs::path(NPUC_SOURCE_DIR) / "tests/data/detect";

/// The model as an int8-affine translation quantizes it, to run on the engine: optimized, the activations split from
/// their convolutions again, quantized with integer layers on these calibration samples.
Model int8Reference(const fs::path& onnx, const std::map<std::string, std::vector<Tensor>>& calibration) {
  Model opt = Model::load(onnx).optimized();
  passes::PassContext ctx;
  for (const std::vector<std::string>& p : {std::vector<std::string>{"batchnorm-to-conv", "fuse-activations", "dce"},
                                            std::vector<std::string>{"split-activations", "dce"}})
    passes::PassManager(p).runToFixpoint(mutableGraphOf(opt), ctx);
  QuantizeOptions q;
  q.calibration = calibration;
  q.integer_layers = true;
  return opt.quantizedQdq(q);
}
}  // namespace

TEST(DetectionModels, TorchvisionStylePostProcessingEqualsPyTorch) {
  Model m = Model::load(kDetect / "detector.onnx");
  const char* names[] = {"boxes", "scores", "labels"};
  const int64_t counts[] = {8, 30, 0};
  for (int i = 0; i < 3; ++i) {
    const Tensor image = readNpyFile(kDetect / ("detector.in" + std::to_string(i) + ".npy"));
    const std::vector<Tensor> got = Session(m).run({image});
    ASSERT_EQ(got.size(), 3u);
    for (int k = 0; k < 3; ++k) {
      const Tensor want = readNpyFile(kDetect / ("detector.out" + std::to_string(i) + "_" + names[k] + ".npy"));
      ASSERT_EQ(got[static_cast<size_t>(k)].shape(), want.shape()) << "input " << i << " " << names[k];
      EXPECT_EQ(want.dim(0), counts[i]) << "input " << i;
      if (k == 2) {
        ASSERT_EQ(got[2].dtype(), DType::kI64);
        for (int64_t e = 0; e < want.numel(); ++e) EXPECT_EQ(got[2].data<int64_t>()[e], want.data<int64_t>()[e]) << i << " " << e;
        continue;
      }
      double worst = 0;
      for (int64_t e = 0; e < want.numel(); ++e) {
        const double w = want.data<float>()[e], g = got[static_cast<size_t>(k)].data<float>()[e];
        worst = std::max(worst, std::fabs(g - w) / std::max(1.0, std::fabs(w)));
      }
      EXPECT_LT(worst, 1e-5) << "input " << i << " " << names[k];
    }
  }
}

// The whole detector as a package (dynamic tensors: NonZero, TopK of a computed k, the If of batched_nms with its
// dynamic branch, NMS of dynamic boxes, views and slices of them; docs/package-format.md): check and translate agree,
// and each output equals the engine bit for bit — 8, 30 and 0 detections —, in exact mode on one thread and fast
// mode on two; so does the int8 package against the engine on the model quantized as translate quantizes it.
TEST(DetectionModels, PackagesEqualTheEngineEndToEnd) {
  const char* names[] = {"boxes", "scores", "labels"};
  Model m = Model::load(kDetect / "detector.onnx");
  for (const char* target : {"generic", "generic-int8"}) {
    TranslateOptions o;
    o.prefix = "det";
    o.onnx = kDetect / "detector.onnx";
    o.target = target;
    o.out_root = test::scratchDir(std::string("detect_") + target);
    if (std::string(target) == "generic-int8")
      for (int i = 0; i < 2; ++i) o.calibration["image"].push_back(readNpyFile(kDetect / ("detector.in" + std::to_string(i) + ".npy")));
    const TranslateResult r = translate(o);
    ASSERT_TRUE(r.ok) << target << ": " << (r.errors.empty() ? std::string() : r.errors[0].node + ": " + r.errors[0].actual);
    // (int8: the engine on the quantized model with its integer layers, as translate quantizes it)
    // TopK's k = min(20, n): its capacity is 20, not the 192 anchors (codegen's upper bound of k's value)
    const package::Package p = package::readPackage(r.dir);
    int topks = 0;
    for (const auto* list : {&p.mac, &p.vec})
      for (const package::Descriptor& d : *list)
        if (d.kind == package::LayerKind::kTopK) {
          EXPECT_EQ(d.out(0).dims[0], 20u) << target;
          ++topks;
        }
    EXPECT_EQ(topks, 3) << target;
    const Model ref = o.calibration.empty() ? m : int8Reference(o.onnx, o.calibration);
    for (int i = 0; i < 3; ++i) {
      const Tensor image = readNpyFile(kDetect / ("detector.in" + std::to_string(i) + ".npy"));
      const std::vector<Tensor> want = Session(ref).run({image});
      for (const RuntimeOptions& opts : {RuntimeOptions{1, true}, RuntimeOptions{2, false}}) {
        Runtime rt(r.dir, opts);
        rt.setInput("image", image);
        rt.run();
        for (int k = 0; k < 3; ++k) {
          const Tensor got = rt.output(names[k]);
          ASSERT_EQ(got.shape(), want[static_cast<size_t>(k)].shape()) << target << " input " << i << " " << names[k];
          EXPECT_TRUE(got.sameBits(want[static_cast<size_t>(k)])) << target << " input " << i << " " << names[k] << (opts.exact ? " exact" : " fast");
        }
      }
    }
  }
}

// The models of tests/data/dynamic (NonZero and the layers reading its dynamic tensors, scalar operands included):
// each package equals the engine bit for bit, in exact mode on one thread and fast mode on two (also what the
// sanitizer preset runs: the Python tests, which check them against numpy, do not run there).
TEST(DetectionModels, DynamicTensorPackagesEqualTheEngine) {
  const fs::path dir = fs::path(NPUC_SOURCE_DIR) / "tests/data/dynamic";
  for (const char* name : {"nonzero_gather", "sorted_boxes", "concat_chain", "elementwise", "views_and_slices"}) {
    TranslateOptions o;
    o.prefix = name;
    o.onnx = dir / (std::string(name) + ".onnx");
    o.target = "generic";
    o.out_root = test::scratchDir(std::string("dynamic_") + name);
    const TranslateResult r = translate(o);
    ASSERT_TRUE(r.ok) << name;
    Model m = Model::load(o.onnx);
    std::map<std::string, Tensor> ins;
    for (const auto& t : m.inputs()) {
      Tensor x(DType::kF32, t.shape);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = i % 3 == 0 ? 0.0f : static_cast<float>((i * 37) % 100) / 100.0f;
      ins.emplace(t.name, x);
    }
    const std::vector<Tensor> want = Session(m).run(ins);
    for (const RuntimeOptions& opts : {RuntimeOptions{1, true}, RuntimeOptions{2, false}}) {
      Runtime rt(r.dir, opts);
      for (const auto& [n, x] : ins) rt.setInput(n, x);
      rt.run();
      for (size_t k = 0; k < want.size(); ++k) {
        const Tensor got = rt.output(m.outputs()[k].name);
        EXPECT_TRUE(got.sameBits(want[k])) << name << " output " << m.outputs()[k].name << (opts.exact ? " exact" : " fast");
      }
    }
  }
}

// torchvision's SSDlite320-MobileNetV3 with its post-processing, as `make zoo` exports it (tools/survey_torchvision.py
// into NPUC_ZOO_DIR; skipped without it: the export takes torch and a minute): its generic-int8 package equals the
// engine on the model quantized as translate quantizes it, bit for bit, exact on one thread and fast on two (the
// float package's check is the zoo's own).
TEST(DetectionModels, Ssdlite320Int8PackageEqualsTheEngine) {
  const char* zoo = std::getenv("NPUC_ZOO_DIR");
  const fs::path onnx = fs::path(zoo ? zoo : "") / "ssdlite320_mobilenet_v3_large.onnx";
  if (!zoo || !fs::exists(onnx)) GTEST_SKIP() << "NPUC_ZOO_DIR does not hold make zoo's SSDlite320 export";
  const Tensor x = readNpyFile(fs::path(zoo) / "ssdlite320_mobilenet_v3_large_in.npy");
  TranslateOptions o;
  o.prefix = "ssd8";
  o.onnx = onnx;
  o.target = "generic-int8";
  o.out_root = test::scratchDir("ssdlite_int8");
  o.calibration["input"] = {x};
  const TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  const std::vector<Tensor> want = Session(int8Reference(onnx, o.calibration)).run({x});
  for (const RuntimeOptions& opts : {RuntimeOptions{1, true}, RuntimeOptions{2, false}}) {
    Runtime rt(r.dir, opts);
    rt.setInput("input", x);
    rt.run();
    const char* names[] = {"boxes", "scores", "labels"};
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(rt.output(names[k]).sameBits(want[static_cast<size_t>(k)])) << names[k] << (opts.exact ? " exact" : " fast");
  }
}
