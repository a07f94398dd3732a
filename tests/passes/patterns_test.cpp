// The translator's optimizer on graphs exported from PyTorch (tests/data/patterns/, made by
// make_pattern_models.py): each pattern is detected, activations fuse into the convolution, BatchNorm folds,
// and the outputs stay the same.
#include "engine/engine.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "ir/graph.hpp"
#include "npuc/model.hpp"
#include "passes/pass.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace npuc;

namespace {

const std::string kDir = std::string(NPUC_SOURCE_DIR) + "/tests/data/patterns/";

std::unique_ptr<ir::Graph> load(const std::string& name) {
  auto g = onnx_io::importFile(kDir + name + ".onnx");
  passes::PassContext ctx;
  ctx.verify_each = true;
  passes::PassManager(passes::resolvePipeline()).runToFixpoint(*g, ctx);
  return g;
}

void run(ir::Graph& g, const std::vector<std::string>& pipeline) {
  passes::PassContext ctx;
  ctx.verify_each = true;
  passes::PassManager(pipeline).runToFixpoint(g, ctx);
}

const ir::Node* findOp(const ir::Graph& g, const std::string& domain, const std::string& op) {
  for (ir::NodeId id : g.order())
    if (g.node(id).op == op && g.node(id).domain == domain) return &g.node(id);
  return nullptr;
}

Tensor randomInput() {
  Tensor x(DType::kF32, {1, 4, 8, 8});
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
  return x;
}

void expectSameOutputs(const ir::Graph& a, const ir::Graph& b) {
  Tensor x = randomInput();
  Tensor ya = engine::Engine(a).run({x})[0], yb = engine::Engine(b).run({x})[0];
  ASSERT_EQ(ya.shape(), yb.shape());
  for (int64_t i = 0; i < ya.numel(); ++i) {
    float p = ya.data<float>()[i], q = yb.data<float>()[i];
    ASSERT_LE(std::fabs(p - q), 1e-5f + 1e-4f * std::fabs(p)) << "element " << i;
  }
}

struct Case {
  const char* model;
  const char* detected_domain;  // pattern op after detect-patterns ("" = ai.onnx)
  const char* detected_op;      // nullptr: nothing to detect (plain activation)
  const char* activation;       // fused activation after the whole pipeline, nullptr when none
};

}  // namespace

class Patterns : public ::testing::TestWithParam<Case> {};

TEST_P(Patterns, DetectedFusedAndUnchanged) {
  const Case& c = GetParam();
  auto original = load(c.model);
  auto g = original->clone();
  if (c.detected_op) {
    run(*g, {"fold-constants", "detect-patterns", "dce"});
    EXPECT_NE(findOp(*g, c.detected_domain, c.detected_op), nullptr) << c.model << "\n" << ir::dump(*g);
    expectSameOutputs(*original, *g);
  }
  if (c.detected_op && c.activation) {
    // The translate pipeline alone, as translate runs it, finds the pattern too (HardSwish's "/ 6" was once taken
    // for a per-channel affine step first and the pattern lost).
    auto t = original->clone();
    run(*t, passes::translatePipeline());
    const ir::Node* conv = findOp(*t, "ai.npuc", "Conv");
    ASSERT_NE(conv, nullptr) << ir::dump(*t);
    EXPECT_EQ(conv->attrString("activation", ""), c.activation) << c.model;
    EXPECT_EQ(t->numNodes(), 1) << ir::dump(*t);
  }
  run(*g, passes::translatePipeline());
  EXPECT_EQ(findOp(*g, "", "BatchNormalization"), nullptr) << ir::dump(*g);
  if (c.activation) {
    const ir::Node* conv = findOp(*g, "ai.npuc", "Conv");
    ASSERT_NE(conv, nullptr) << ir::dump(*g);
    EXPECT_EQ(conv->attrString("activation", ""), c.activation);
    EXPECT_EQ(g->numNodes(), 1) << ir::dump(*g);
  }
  expectSameOutputs(*original, *g);
  // The optimized graph exports to valid ONNX that loads back with the same outputs.
  std::string bytes = onnx_io::exportBytes(*g);
  EXPECT_NO_THROW(onnx_io::checkModelBytes(bytes, c.model));
  auto back = onnx_io::importBytes(bytes.data(), bytes.size(), c.model, ".");
  expectSameOutputs(*g, *back);
}

INSTANTIATE_TEST_SUITE_P(
    PyTorch, Patterns,
    ::testing::Values(Case{"relu", "", nullptr, "Relu"}, Case{"relu6", "", nullptr, "Clip"},
                      Case{"leakyrelu", "", nullptr, "LeakyRelu"}, Case{"sigmoid", "", nullptr, "Sigmoid"},
                      Case{"swish", "ai.npuc", "Swish", "Swish"}, Case{"mish", "ai.npuc", "Mish", "Mish"},
                      Case{"hardswish_op13", "ai.npuc", "HardSwish", "HardSwish"},
                      Case{"hardswish_op14", "", "HardSwish", "HardSwish"},
                      Case{"hardswish_add_clip_div_mul", "ai.npuc", "HardSwish", "HardSwish"},
                      Case{"hardswish_add_clip_mul_div", "ai.npuc", "HardSwish", "HardSwish"},
                      Case{"gap_reducemean", "", "GlobalAveragePool", nullptr},
                      Case{"gap_avgpool", "", "GlobalAveragePool", nullptr},
                      Case{"flatten_view", "", "Flatten", nullptr},
                      Case{"space_to_depth", "", "SpaceToDepth", nullptr},
                      Case{"darknet_reorg", "", "SpaceToDepth", nullptr}, Case{"bn_equivalent_chain", "", nullptr, "Relu"},
                      Case{"upsample_expand", "", "Resize", nullptr}, Case{"focus", "ai.npuc", "Focus", nullptr},
                      Case{"focus_two_axis", "ai.npuc", "Focus", nullptr}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.model); });

// Issue 47.8: through translate's own flow — Model::load (whose optimize pipeline makes a lone Div by a constant
// an "equivalent BatchNormalization") then Model::optimized — the manual's HardSwish (Add, Clip, Div, Mul, and the
// forms exporters write) is one layer: the Conv with HardSwish fused (it stayed four layers), and Focus written
// with four two-axis Slices is one Focus like the eight one-axis ones. The outputs stay the model's.
TEST(Patterns, ManualPatternsBecomeOneLayerThroughTheTranslateFlow) {
  for (const char* name : {"hardswish_add_clip_div_mul", "hardswish_add_clip_mul_div", "hardswish_manual", "hardswish_manual_swapped",
                           "hardswish_manual_mul", "hardswish_manual_op10", "focus", "focus_two_axis"}) {
    SCOPED_TRACE(name);
    const Model m = Model::load(kDir + name + ".onnx");
    const Model opt = m.optimized();
    std::vector<std::string> ops;
    for (const NodeInfo& n : opt.nodes()) ops.push_back(n.op);
    const bool focus = std::string(name).rfind("focus", 0) == 0;
    ASSERT_EQ(ops.size(), focus ? 2u : 1u) << opt.dump();
    if (focus) {
      EXPECT_EQ(ops[1], "ai.npuc.Focus") << opt.dump();
    } else {
      EXPECT_EQ(ops[0], "ai.npuc.Conv") << opt.dump();
      EXPECT_NE(opt.dump().find("activation=\"HardSwish\""), std::string::npos) << opt.dump();
    }
    const Tensor x = randomInput();
    LoadOptions plain;
    plain.optimize = false;
    const Tensor want = Session(Model::load(kDir + name + ".onnx", plain)).run({x})[0];
    const Tensor got = Session(opt).run({x})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_LE(std::fabs(got.data<float>()[i] - want.data<float>()[i]), 1e-5f + 1e-4f * std::fabs(want.data<float>()[i])) << i;
  }
}

// Issue 47.9: -SaveOptOnnx (Model::saveOnnx) writes standard ONNX ops where ONNX has them: the optimized models of the
// pattern set (fused activations, Swish, Mish, HardSwish below opset 14, Focus, a MaxPool padded with a value) save
// without an ai.npuc node, and the saved file computes what the model computes.
TEST(Patterns, SavedOptimizedModelsAreStandardOnnx) {
  const auto dir = test::scratchDir("std");
  for (const char* name : {"relu6", "leakyrelu", "sigmoid", "swish", "mish", "hardswish_op13", "hardswish_op14", "hardswish_manual",
                           "focus", "focus_two_axis", "pad_maxpool", "gemm_bn", "upsample_expand"}) {
    SCOPED_TRACE(name);
    const Model opt = Model::load(kDir + name + ".onnx").optimized();
    bool npuc_ops = false;
    for (const NodeInfo& n : opt.nodes()) npuc_ops |= n.op.rfind("ai.npuc.", 0) == 0;
    const auto file = dir / (std::string(name) + "_opt.onnx");
    opt.saveOnnx(file);
    auto saved = onnx_io::importFile(file);
    for (ir::NodeId id : saved->order()) {
      EXPECT_EQ(saved->node(id).domain, "") << saved->node(id).label();
    }
    LoadOptions plain;
    plain.optimize = false;
    const Model model = Model::load(kDir + name + ".onnx", plain);
    const Tensor x = randomInput();
    const Tensor want = Session(model).run({x})[0];
    const Tensor got = engine::Engine(*saved).run({x})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_LE(std::fabs(got.data<float>()[i] - want.data<float>()[i]), 1e-5f + 1e-4f * std::fabs(want.data<float>()[i])) << i;
    if (std::string(name) == "swish") {
      EXPECT_TRUE(npuc_ops) << "the optimized model itself keeps npuc's forms";
    }
  }
}

TEST(Patterns, DarknetReorgBecomesOneSpaceToDepth) {
  // Four Reshapes and three Transposes (pytorch-yolo2's ReorgLayer) move elements exactly as SpaceToDepth(2).
  auto original = load("darknet_reorg");
  int transposes = 0;
  for (ir::NodeId id : original->order()) transposes += original->node(id).op == "Transpose";
  EXPECT_EQ(transposes, 3);
  auto g = original->clone();
  run(*g, passes::translatePipeline());
  EXPECT_EQ(findOp(*g, "", "Transpose"), nullptr) << ir::dump(*g);
  EXPECT_EQ(findOp(*g, "", "Reshape"), nullptr) << ir::dump(*g);
  const ir::Node* s2d = findOp(*g, "", "SpaceToDepth");
  ASSERT_NE(s2d, nullptr) << ir::dump(*g);
  EXPECT_EQ(s2d->attrInt("blocksize", 0), 2);
  EXPECT_GE(ir::sourceNodes(*s2d).size(), 7u);  // provenance: every replaced node
  expectSameOutputs(*original, *g);
}

// DRP-AI's component case (D:L599-612): a reorg written as Reshape / Transpose needs ich % 4 == 0. Over 8 channels
// (space_to_depth) check passes; over 6 (s2d_c6) it names the rule; a SpaceToDepth op of 6 channels is not the
// component case.
TEST(Patterns, ReorgComponentsFollowDrpaiChannelRule) {
  EXPECT_TRUE(Model::load(kDir + "space_to_depth.onnx").check("drpai").empty());
  EXPECT_TRUE(Model::load(kDir + "darknet_reorg.onnx").check("drpai").empty());
  const auto rows = Model::load(kDir + "s2d_c6.onnx").check("drpai");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rule_id, "drpai.spacetodepth.components");
  EXPECT_EQ(rows[0].actual, "6 channels, 8x8");
  const std::string dump = Model::load(kDir + "s2d_c6.onnx").optimized().dump();  // (one SpaceToDepth)
  EXPECT_NE(dump.find("SpaceToDepth("), std::string::npos) << dump;
  EXPECT_EQ(dump.find("Transpose("), std::string::npos) << dump;
}

TEST(Patterns, BatchNormFoldsIntoGemm) {
  auto original = load("gemm_bn");
  auto g = original->clone();
  run(*g, passes::translatePipeline());
  EXPECT_EQ(findOp(*g, "", "BatchNormalization"), nullptr) << ir::dump(*g);
  const ir::Node* gemm = findOp(*g, "ai.npuc", "Gemm");
  ASSERT_NE(gemm, nullptr) << ir::dump(*g);
  EXPECT_EQ(gemm->attrString("activation", ""), "Relu");
  expectSameOutputs(*original, *g);
}

TEST(Patterns, Relu6ToRelu) {
  auto g = load("relu6");
  run(*g, passes::translatePipeline());
  run(*g, {"relu6-to-relu"});
  const ir::Node* conv = findOp(*g, "ai.npuc", "Conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->attrString("activation", ""), "Relu");
}

TEST(Patterns, ZeroPadFoldsIntoConvAndIntoMaxPoolWithPadValue) {
  auto conv = load("pad_conv");
  auto g = conv->clone();
  run(*g, passes::translatePipeline());
  EXPECT_EQ(findOp(*g, "", "Pad"), nullptr) << ir::dump(*g);
  ASSERT_NE(findOp(*g, "", "Conv"), nullptr);
  EXPECT_EQ(findOp(*g, "", "Conv")->attrInts("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  expectSameOutputs(*conv, *g);
  auto pool = load("pad_maxpool");
  auto p = pool->clone();
  run(*p, passes::translatePipeline());
  // A zero Pad is not MaxPool padding (which never wins a maximum): it becomes ai.npuc.MaxPool, whose padded taps
  // count as pad_value = 0.
  EXPECT_EQ(findOp(*p, "", "Pad"), nullptr) << ir::dump(*p);
  EXPECT_EQ(findOp(*p, "", "MaxPool"), nullptr) << ir::dump(*p);
  const ir::Node* mp = findOp(*p, "ai.npuc", "MaxPool");
  ASSERT_NE(mp, nullptr) << ir::dump(*p);
  EXPECT_EQ(mp->attrFloat("pad_value", -1.0f), 0.0f);
  expectSameOutputs(*pool, *p);
}

// Cross-layer equalization (equalize-cross-layer) on the trained digits model, whose convolutions meet through fused
// Relus: the model computes the same, and each channel between the last two convolutions has the same largest
// |weight| on both sides (the pair equalized last in a sweep). A Relu6 between them is not homogeneous: left alone.
TEST(Patterns, CrossLayerEqualizationKeepsTheFunctionAndEqualizesTheRanges) {
  auto original = onnx_io::importFile(std::string(NPUC_SOURCE_DIR) + "/models/digits/digits_cnn.onnx");
  run(*original, passes::translatePipeline());
  auto g = original->clone();
  run(*g, {"equalize-cross-layer", "dce"});
  std::vector<const ir::Node*> convs;
  for (ir::NodeId id : g->order())
    if (g->node(id).op == "Conv") convs.push_back(&g->node(id));
  ASSERT_EQ(convs.size(), 3u) << ir::dump(*g);
  const Tensor& w1 = *ir::constantInput(*g, *convs[1], 1, DType::kF32);
  const Tensor& w2 = *ir::constantInput(*g, *convs[2], 1, DType::kF32);
  const int64_t C = w1.dim(0), row = w1.numel() / C, M = w2.dim(0), taps = w2.dim(2) * w2.dim(3);
  ASSERT_EQ(w2.dim(1), C);
  for (int64_t c = 0; c < C; ++c) {
    float r1 = 0, r2 = 0;
    for (int64_t k = 0; k < row; ++k) r1 = std::max(r1, std::fabs(w1.data<float>()[c * row + k]));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t t = 0; t < taps; ++t) r2 = std::max(r2, std::fabs(w2.data<float>()[(m * C + c) * taps + t]));
    EXPECT_NEAR(r1 / r2, 1.0f, 1e-5f) << "channel " << c;
  }
  Tensor x(DType::kF32, {1, 1, 8, 8});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(0.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
  Tensor ya = engine::Engine(*original).run({x})[0], yb = engine::Engine(*g).run({x})[0];
  for (int64_t i = 0; i < ya.numel(); ++i)
    EXPECT_NEAR(ya.data<float>()[i], yb.data<float>()[i], 1e-4f + 1e-4f * std::fabs(ya.data<float>()[i])) << i;
  // Relu6 is not homogeneous: the same model with Relu6 activations is not changed.
  auto clipped = original->clone();
  for (ir::NodeId id : clipped->order()) {
    ir::Node& n = clipped->node(id);
    if (n.attrString("activation", "") != "Relu") continue;
    n.attrs["activation"] = ir::Attr(std::string("Clip"));
    n.attrs["activation_alpha"] = ir::Attr(0.0f);
    n.attrs["activation_beta"] = ir::Attr(6.0f);
  }
  passes::PassContext ctx;
  EXPECT_FALSE(passes::PassManager({"equalize-cross-layer"}).runOnce(*clipped, ctx));
  EXPECT_TRUE(passes::PassManager({"relu6-to-relu", "equalize-cross-layer"}).runOnce(*clipped, ctx));
}
