// A small single-shot detector exported with torchvision-style post-processing (tests/data/detect/generate.py: per
// class a threshold, NonZero, a TopK of k = min(20, kept), then batched NMS behind an If, the first 30 kept): the
// engine against PyTorch on an image with 8 detections, one with 30 (the cap) and one with none (every output empty).
// Packages cannot hold it yet (sizes the data decides: docs/roadmap.md, "bounded dynamic shapes"): translate refuses
// it, naming the nodes, and writes nothing.
#include "driver/translation.hpp"
#include "npuc/model.hpp"

#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

using namespace npuc;
namespace fs = std::filesystem;

namespace {
const fs::path kDetect = fs::path(NPUC_SOURCE_DIR) / "tests/data/detect";
}

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

TEST(DetectionModels, PackagesRefuseSizesTheDataDecides) {
  TranslateOptions o;
  o.prefix = "det";
  o.onnx = kDetect / "detector.onnx";
  o.target = "generic";
  o.out_root = test::scratchDir("detect_refused");
  const TranslateResult r = translate(o);
  EXPECT_FALSE(r.ok);
  // NonZero, and the Transpose and GatherND reading its output, have package forms (dynamic tensors,
  // package-format.md); the Shape, TopK and Gather after them do not yet.
  bool names_readers = false;
  for (const auto& e : r.errors) {
    EXPECT_TRUE(e.op != "NonZero" && e.op != "Transpose" && e.op != "GatherND") << e.node << ": " << e.actual;
    names_readers = names_readers || e.actual.find("dynamic shape") != std::string::npos;
  }
  EXPECT_TRUE(names_readers) << "the refusal names the nodes reading sizes the data decide";
  EXPECT_FALSE(fs::exists(o.out_root / "det" / "manifest.json"));
}
