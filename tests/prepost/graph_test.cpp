// Pre/post-processing inserted into a model graph runs on the reference engine and computes exactly the
// composition of the operations' kernels and the body: uint8 gray frame -> cast -> normalize -> digits CNN ->
// softmax (fp32 out).
#include "kernels/prepost.hpp"
#include "npuc/model.hpp"
#include "support/fp16.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

using namespace npuc;

namespace {

const std::string kSrc = NPUC_SOURCE_DIR;

TEST(PrePostGraph, DigitsPipelineEqualsItsParts) {
  Model body = Model::load(kSrc + "/models/digits/digits_cnn.onnx");
  Model full = body.withPrePost(kSrc + "/tests/data/prepost/digits_prepost.yaml", {});
  ASSERT_EQ(full.inputs().size(), 1u);
  EXPECT_EQ(full.inputs()[0].name, "pre_in");
  EXPECT_EQ(full.inputs()[0].dtype, DType::kU8);
  EXPECT_EQ(full.inputs()[0].shape, (Shape{8, 8, 1}));
  ASSERT_EQ(full.outputs().size(), 1u);
  EXPECT_EQ(full.outputs()[0].name, "post_out");
  EXPECT_EQ(full.outputs()[0].dtype, DType::kF32);
  Session s_full(full), s_body(body);
  std::mt19937 rng(3);
  for (int it = 0; it < 20; ++it) {
    Tensor frame(DType::kU8, {8, 8, 1});
    for (int64_t i = 0; i < frame.numel(); ++i) static_cast<uint8_t*>(frame.raw())[i] = static_cast<uint8_t>(rng() % 17);
    // The parts: cast and normalize ((x + 0) * 0.0625 in float32, one rounding to fp16), HWC -> NCHW, the body in
    // float32, the logits rounded to fp16, softmax over them in float32.
    std::vector<uint16_t> h(64), n(64);
    kernels::castAnyToFp16(64, static_cast<const uint8_t*>(frame.raw()), h.data(), nullptr);
    float add = 0.0f, mul = 0.0625f;
    kernels::normalize(64, 1, false, &add, &mul, h.data(), n.data(), nullptr);
    Tensor x(DType::kF32, {1, 1, 8, 8});
    for (int i = 0; i < 64; ++i) x.data<float>()[i] = halfToFloat(n[static_cast<size_t>(i)]);
    Tensor logits = s_body.run({x})[0];
    std::vector<uint16_t> l16(10);
    for (int i = 0; i < 10; ++i) l16[static_cast<size_t>(i)] = floatToHalf(logits.data<float>()[i]);
    std::vector<float> want(10);
    kernels::softmaxFp16(10, l16.data(), want.data(), nullptr);
    Tensor got = s_full.run({frame})[0];
    ASSERT_EQ(got.numel(), 10);
    EXPECT_EQ(std::memcmp(got.raw(), want.data(), 40), 0) << "sample " << it;
  }
}

TEST(PrePostGraph, CombinedModelPassesTheDrpaiCheckAndExportsToOnnx) {
  Model full = Model::load(kSrc + "/models/digits/digits_cnn.onnx")
                   .withPrePost(kSrc + "/tests/data/prepost/digits_prepost.yaml", {});
  EXPECT_TRUE(full.check("drpai").empty());
  // The combined optimized model exports (ai.npuc domain declared) and reloads with the same outputs.
  Model opt = full.optimized();
  Model back = Model::fromOnnxBytes(opt.toOnnxBytes(), "combined.onnx");
  Tensor frame(DType::kU8, {8, 8, 1});
  for (int64_t i = 0; i < frame.numel(); ++i) static_cast<uint8_t*>(frame.raw())[i] = static_cast<uint8_t>(i % 17);
  EXPECT_TRUE(Session(opt).run({frame})[0].sameBits(Session(back).run({frame})[0]));
}

TEST(PrePostGraph, DefinitionErrorsComeBeforeInsertion) {
  Model body = Model::load(kSrc + "/models/digits/digits_cnn.onnx");
  std::string bad = std::string(NPUC_BINARY_DIR) + "/prepost_bad_size.yaml";
  {
    std::ifstream in(kSrc + "/tests/data/prepost/digits_prepost.yaml");
    std::string s((std::istreambuf_iterator<char>(in)), {});
    for (size_t p; (p = s.find("[8, 8, 1]")) != std::string::npos;) s.replace(p, 9, "[9, 8, 1]");
    std::ofstream(bad) << s;
  }
  EXPECT_THROW(body.withPrePost(bad, {}), Error);
  Model::PrePostOptions skip;
  skip.not_check_size = true;  // the sizes then disagree inside the graph: still an error, never a crash
  EXPECT_THROW(body.withPrePost(bad, skip), Error);
}

}  // namespace
