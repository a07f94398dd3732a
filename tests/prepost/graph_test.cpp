// Pre/post-processing inserted into a model graph runs on the reference engine and computes exactly the
// composition of the operations' kernels and the body: uint8 gray frame -> cast -> normalize -> digits CNN ->
// softmax (fp32 out).
#include "ir/graph.hpp"
#include "kernels/prepost.hpp"
#include "npuc/model.hpp"
#include "support/fp16.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <set>

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

// ---------------------------------------------------------------------------------------------------------------
// A channel-last (NHWC) model behind pre/post-processing (DRP-AI manual Appendix B; issue 25 item 1): the oracle
// is the plain model on the engine fed the normalized frame as its NHWC input, its NHWC output rounded to fp16 and
// transposed to CHW by hand — nothing of the bridge the definition inserts.

const std::string kNhwc = kSrc + "/tests/data/prepost/bodies/";

}  // namespace

namespace npuc {
ir::Graph& mutableGraphOf(Model& m);  // (src/driver/model.cpp)
}

namespace {

Tensor frameU8(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(DType::kU8, s);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(rng());
  return t;
}

/// The parts: cast + normalize as the kernels do it (HWC, fp16), the plain model on [1, H, W, C] in float32, the
/// output [1, H, W, K] rounded to fp16, then [K, H, W] as float32.
Tensor nhwcParts(Model& body, const Tensor& frame, const std::vector<float>& add, const std::vector<float>& mul) {
  const int64_t H = frame.shape()[0], W = frame.shape()[1], C = frame.shape()[2];
  const int64_t n = frame.numel();
  std::vector<uint16_t> h(static_cast<size_t>(n)), z(static_cast<size_t>(n));
  kernels::castAnyToFp16(n, static_cast<const uint8_t*>(frame.raw()), h.data(), nullptr);
  kernels::normalize(H * W, C, false, add.data(), mul.data(), h.data(), z.data(), nullptr);
  Tensor x(DType::kF32, {1, H, W, C});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = halfToFloat(z[static_cast<size_t>(i)]);
  Tensor y = Session(body).run({x})[0];
  const int64_t K = y.shape()[3];
  Tensor out(DType::kF32, {K, H, W});
  for (int64_t k = 0; k < K; ++k)
    for (int64_t i = 0; i < H * W; ++i)
      out.data<float>()[k * H * W + i] = halfToFloat(floatToHalf(y.data<float>()[i * K + k]));
  return out;
}

TEST(PrePostGraph, ChannelLastModelEqualsItsParts) {
  Model body = Model::load(kNhwc + "nhwc_model.onnx");
  Model full = body.withPrePost(kNhwc + "nhwc_prepost.yaml", {});
  ASSERT_EQ(full.outputs().size(), 1u);
  EXPECT_EQ(full.outputs()[0].shape, (Shape{5, 12, 16}));
  Session s(full);
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    Tensor frame = frameU8({12, 16, 3}, seed);
    Tensor want = nhwcParts(body, frame, {-123.7f, -116.3f, -103.5f}, {0.0171f, 0.0175f, 0.0174f});
    EXPECT_TRUE(s.run({frame})[0].sameBits(want)) << "seed " << seed;
  }
  auto bounds = full.prePostBoundaries();
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_TRUE(bounds[0].input && bounds[0].channel_last);
  EXPECT_TRUE(!bounds[1].input && bounds[1].channel_last);
}

// H = W = C: the shapes fit both readings; the boundary Transposes say channel-last.
TEST(PrePostGraph, SquareChannelLastModelIsReadByItsTransposes) {
  std::string def = R"(
input_to_pre:
  - {name: cam, format: RGB, order: HWC, shape: [4, 4, 4], type: uint8}
input_to_body:
  - {name: input, format: RGB, order: HWC, shape: [4, 4, 4], type: fp16}
output_from_body:
  - {name: feat, shape: [4, 4, 4], order: HWC, type: fp16}
output_from_post:
  - {name: feat_chw, shape: [4, 4, 4], order: CHW, type: fp32}
preprocess:
  - src: [cam]
    dest: [input]
    operations:
      - {op: cast_any_to_fp16, param: {DIN_FORMAT: 0}}
      - {op: normalize, param: {DOUT_RGB_ORDER: 0, cof_add: [-100, -100, -100, -100], cof_mul: [0.02, 0.02, 0.02, 0.02]}}
postprocess:
  - src: [feat]
    dest: [feat_chw]
    operations:
      - {op: transpose, param: {WORD_SIZE: 1, IS_CHW2HWC: 0}}
      - {op: cast_fp16_fp32, param: {CAST_MODE: 0}}
)";
  std::string path = std::string(NPUC_BINARY_DIR) + "/prepost_square.yaml";
  std::ofstream(path) << def;
  Model body = Model::load(kNhwc + "square_model.onnx");
  Model full = body.withPrePost(path, {});
  Tensor frame = frameU8({4, 4, 4}, 9);
  EXPECT_TRUE(Session(full).run({frame})[0].sameBits(nhwcParts(body, frame, {-100, -100, -100, -100}, {0.02f, 0.02f, 0.02f, 0.02f})));
}

// The boundary check sees a layout mistake that the reference and the package would share: the bridge of the
// original bug (an NHWC output transposed as if it were NCHW, then reshaped) injected into the combined graph.
TEST(PrePostGraph, BoundaryCheckCatchesAnInjectedLayoutMistake) {
  Model full = Model::load(kNhwc + "nhwc_model.onnx").withPrePost(kNhwc + "nhwc_prepost.yaml", {});
  auto bounds = full.prePostBoundaries();
  std::set<std::string> names;
  for (auto& b : bounds) names.insert({b.model_value, b.prepost_value});
  auto values = [&](Model& m) {
    Tensor frame = frameU8({12, 16, 3}, 4);
    std::map<std::string, Tensor> v{{"cam", frame}};
    Session(m).run({{"cam", frame}}, [&](const std::string& n, const Tensor& t) {
      if (names.count(n)) v[n] = t.clone();
    });
    return v;
  };
  auto good = checkPrePostBoundaries(bounds, values(full));
  ASSERT_EQ(good.size(), 2u);
  for (auto& c : good) {
    EXPECT_TRUE(c.checked && c.ok) << c.message;
    EXPECT_EQ(c.arrangement, "NHWC");
  }
  // Inject: feat -> Transpose(0, 2, 3, 1) -> the bridge's Reshape.
  ir::Graph& g = mutableGraphOf(full);
  ir::NodeId reshape = ir::kNoNode;
  for (ir::NodeId id : g.order())
    if (g.node(id).op == "Reshape" && g.value(g.node(id).outputs[0]).name.rfind("feat/post_shaped", 0) == 0) reshape = id;
  ASSERT_NE(reshape, ir::kNoNode);
  ir::ValueId feat = g.node(reshape).inputs[0];
  ir::Value& wrong = g.addValue("wrong_transpose", ir::makeType(DType::kF32, {1, 16, 5, 12}));
  ir::ValueId w = wrong.id;
  g.addNode("Transpose", "inject", {feat}, {w}).attrs["perm"] = ir::Attr(std::vector<int64_t>{0, 2, 3, 1});
  g.node(reshape).inputs[0] = w;
  g.topoSort();
  auto bad = checkPrePostBoundaries(bounds, values(full));
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_TRUE(bad[0].ok) << bad[0].message;
  EXPECT_TRUE(bad[1].checked && !bad[1].ok) << bad[1].message;
  EXPECT_NE(bad[1].message.find("LAYOUT MISTAKE"), std::string::npos) << bad[1].message;
}

}  // namespace
