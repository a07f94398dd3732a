// Tests of the resolve pipeline: constant folding of shape computations, dead-code elimination, and that the
// resolved graph computes the same outputs as the raw import.
#include "ir/graph.hpp"
#include "npuc/model.hpp"
#include "passes/pass.hpp"
#include "engine/engine.hpp"
#include "ops/registry.hpp"
#include "target/check.hpp"
#include "target/target.hpp"

#include <gtest/gtest.h>

#include <functional>

using namespace npuc;
using namespace npuc::ir;

TEST(Passes, FoldsShapeChainsIntoAStaticReshape) {
  Graph g;
  g.opset = 13;
  ValueId x = g.addValue("x", makeType(DType::kF32, {2, 3, 4})).id;
  g.inputs().push_back(x);
  ValueId s = g.addValue("s").id, c0 = g.addConstant("idx", Tensor::scalar<int64_t>(0)).id, b = g.addValue("b").id;
  ValueId ax = g.addConstant("ax", Tensor::fromVector<int64_t>({1}, {0})).id, bu = g.addValue("bu").id;
  ValueId m1 = g.addConstant("m1", Tensor::fromVector<int64_t>({1}, {-1})).id, shp = g.addValue("shp").id;
  ValueId y = g.addValue("y").id;
  g.addNode("Shape", "shape", {x}, {s});
  g.addNode("Gather", "gather", {s, c0}, {b});
  g.addNode("Unsqueeze", "unsq", {b, ax}, {bu});
  g.addNode("Concat", "concat", {bu, m1}, {shp}).attrs["axis"] = Attr(int64_t{0});
  g.addNode("Reshape", "reshape", {x, shp}, {y});
  g.outputs().push_back(y);
  ops::inferShapes(g);
  Tensor in(DType::kF32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) in.data<float>()[i] = static_cast<float>(i);
  auto before = engine::Engine(g).run({in});

  passes::PassContext ctx;
  ctx.verify_each = true;
  passes::PassManager(passes::resolvePipeline()).runToFixpoint(g, ctx);
  ASSERT_EQ(g.numNodes(), 1);
  EXPECT_EQ(g.node(g.order()[0]).op, "Reshape");
  EXPECT_EQ(g.value(g.outputs()[0]).type.shape, (Shape{2, 12}));
  auto after = engine::Engine(g).run({in});
  EXPECT_TRUE(before[0].sameBits(after[0]));
}

// Swin-T's exports chain dozens of shape computations (Shape -> Gather -> Concat -> Reshape -> Shape -> …): each
// link's shape is static only once the link before it has folded. Folding re-infers types as it sweeps, so the
// whole chain folds in one round (it took one round per link, and 16 were not enough: issue 22).
TEST(Passes, ALongShapeChainFoldsInOneSweep) {
  Graph g;
  g.opset = 13;
  ValueId x = g.addValue("x", makeType(DType::kF32, {2, 3, 4})).id;
  g.inputs().push_back(x);
  ValueId cur = x;
  for (int i = 0; i < 40; ++i) {
    ValueId s = g.addValue(fmt::format("s{}", i)).id, r = g.addValue(fmt::format("r{}", i)).id;
    g.addNode("Shape", fmt::format("shape{}", i), {cur}, {s});
    g.addNode("Reshape", fmt::format("reshape{}", i), {cur, s}, {r});
    cur = r;
  }
  g.outputs().push_back(cur);
  passes::PassContext ctx;
  int rounds = passes::PassManager(passes::resolvePipeline()).runToFixpoint(g, ctx);
  EXPECT_LE(rounds, 3);
  EXPECT_EQ(g.numNodes(), 40);  // the Reshapes stay, every Shape folded
  EXPECT_EQ(g.value(g.outputs()[0]).type.shape, (Shape{2, 3, 4}));
}

// MAC counts of nodes whose values were never typed (a graph the optimizer could not fully resolve) are 0, not a
// read of an empty shape (Swin-T's MatMuls crashed `npuc inspect`: issue 22).
TEST(Passes, MacCountOfAnUntypedNodeIsZero) {
  Graph g;
  g.opset = 13;
  ValueId a = g.addValue("a").id, b = g.addValue("b").id, y = g.addValue("y").id;
  g.inputs() = {a, b};
  g.addNode("MatMul", "mm", {a, b}, {y});
  Node& c = g.addNode("Conv", "conv", {a, b}, {g.addValue("z").id});
  g.outputs().push_back(y);
  EXPECT_EQ(ops::nodeMacs(g, g.node(g.order()[0])), 0);
  EXPECT_EQ(ops::nodeMacs(g, c), 0);
}

TEST(Passes, DeadCodeIsRemoved) {
  Graph g;
  ValueId x = g.addValue("x", makeType(DType::kF32, {2})).id;
  g.inputs().push_back(x);
  ValueId y = g.addValue("y").id, dead = g.addValue("dead").id;
  g.addNode("Relu", "live", {x}, {y});
  g.addNode("Neg", "unused", {x}, {dead});
  g.addConstant("unused_const", Tensor::scalar<float>(1.0f));
  g.outputs().push_back(y);
  passes::PassContext ctx;
  EXPECT_TRUE(passes::createPass("dce")->run(g, ctx));
  EXPECT_EQ(g.numNodes(), 1);
  EXPECT_FALSE(g.findValue("unused_const").has_value());
  EXPECT_THROW(passes::createPass("no-such-pass"), Error);
}

// canonicalize-pool: a pool of a 1x1 window, stride 1, no padding is its input (torchvision's VGG exports its
// AdaptiveAvgPool2d((7, 7)) on a 7x7 map as one: DRP-AI refused it); a 1x1 pool of stride 2 stays.
TEST(Passes, AOneByOnePoolOfStrideOneIsItsInput) {
  Graph g;
  g.opset = 13;
  ValueId x = g.addValue("x", makeType(DType::kF32, {1, 2, 3, 3})).id;
  g.inputs().push_back(x);
  ValueId r = g.addValue("r").id, p = g.addValue("p").id, q = g.addValue("q").id, y = g.addValue("y").id;
  g.addNode("Relu", "relu", {x}, {r});
  g.addNode("AveragePool", "same", {r}, {p}).attrs["kernel_shape"] = Attr(std::vector<int64_t>{1, 1});
  Node& s2 = g.addNode("MaxPool", "stride2", {p}, {q});
  s2.attrs["kernel_shape"] = Attr(std::vector<int64_t>{1, 1});
  s2.attrs["strides"] = Attr(std::vector<int64_t>{2, 2});
  g.addNode("Neg", "neg", {q}, {y});
  g.outputs().push_back(y);
  ops::inferShapes(g);
  Tensor in = Tensor::fromVector<float>({1, 2, 3, 3}, std::vector<float>{1, -2, 3, 4, 5, -6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, -9});
  auto want = engine::Engine(g).run({in});
  passes::PassContext ctx;
  passes::PassManager({"canonicalize-pool", "dce"}).runToFixpoint(g, ctx);
  int pools = 0;
  for (NodeId id : g.order()) pools += g.node(id).op == "AveragePool" || g.node(id).op == "MaxPool";
  EXPECT_EQ(pools, 1);  // the stride-2 one
  EXPECT_TRUE(engine::Engine(g).run({in})[0].sameBits(want[0]));
}

// An in-model normalisation ((x - mean) / std, no Conv before it: issue 25 item 5) becomes one per-channel affine
// BatchNormalization, which drpai supports (the manual's Sub / Div "equivalent to BatchNormalization"); the result
// is the chain's up to float rounding (the affine map is composed in double and rounded once). A lone Mul by a
// constant stays a Mul; a chain stops at a value with a second reader.
namespace {
Graph normGraph(bool second_reader, bool lone_mul) {
  Graph g;
  g.opset = 13;
  ValueId x = g.addValue("x", makeType(DType::kF32, {1, 3, 5, 7})).id;
  g.inputs().push_back(x);
  auto c = [&](const char* n, std::vector<float> v) { return g.addConstant(n, Tensor::fromVector<float>({1, 3, 1, 1}, v)).id; };
  ValueId s = g.addValue("s").id, y = g.addValue("y").id;
  if (lone_mul) {
    g.addNode("Mul", "mul", {x, c("k", {2.f, 3.f, 4.f})}, {y});
  } else {
    g.addNode("Sub", "sub", {x, c("mean", {0.485f, 0.456f, 0.406f})}, {s});
    g.addNode("Div", "div", {s, c("std", {0.229f, 0.224f, 0.225f})}, {y});
  }
  g.outputs().push_back(y);
  if (second_reader) g.outputs().push_back(s);
  ops::inferShapes(g);
  return g;
}
}  // namespace

TEST(Passes, AnInModelNormalisationBecomesOneBatchNormalization) {
  Graph g = normGraph(false, false);
  Tensor in(DType::kF32, {1, 3, 5, 7});
  for (int i = 0; i < 105; ++i) in.data<float>()[i] = static_cast<float>(i % 17) / 16.0f;
  auto before = engine::Engine(g).run({in});
  passes::PassContext ctx;
  ctx.verify_each = true;
  passes::PassManager(passes::translatePipeline()).runToFixpoint(g, ctx);
  ASSERT_EQ(g.numNodes(), 1);
  const Node& bn = g.node(g.order()[0]);
  EXPECT_EQ(bn.op, "BatchNormalization");
  EXPECT_EQ(bn.merged_ops, (std::vector<std::string>{"Sub", "Div"}));
  EXPECT_EQ(g.value(g.outputs()[0]).name, "y");
  auto after = engine::Engine(g).run({in});
  auto a = before[0].toDouble(), b = after[0].toDouble();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6 * std::max(1.0, std::abs(a[i]))) << i;
  // drpai accepts it (Sub and Div alone are not drpai ops).
  EXPECT_TRUE(target::checkGraph(g, target::loadTarget("drpai")).empty());
}

// A chain after a node with an optional input left out (here Clip without min: kNoValue among its inputs, as in
// torchvision's swin_t) is looked at without reading that input (it threw "no value with id -1").
TEST(Passes, AChainAfterANodeWithAnOmittedInputIsConverted) {
  Graph g;
  g.opset = 13;
  ValueId x = g.addValue("x", makeType(DType::kF32, {1, 3, 2, 2})).id;
  g.inputs().push_back(x);
  ValueId c = g.addValue("c").id, s = g.addValue("s").id, y = g.addValue("y").id;
  g.addNode("Clip", "clip", {x, ir::kNoValue, g.addConstant("hi", Tensor::fromVector<float>({}, {6.f})).id}, {c});
  g.addNode("Sub", "sub", {c, g.addConstant("mean", Tensor::fromVector<float>({1, 3, 1, 1}, {1.f, 2.f, 3.f})).id}, {s});
  g.addNode("Div", "div", {s, g.addConstant("std", Tensor::fromVector<float>({1, 3, 1, 1}, {2.f, 4.f, 8.f})).id}, {y});
  g.outputs().push_back(y);
  ops::inferShapes(g);
  passes::PassContext ctx;
  passes::PassManager(passes::translatePipeline()).runToFixpoint(g, ctx);
  std::vector<std::string> ops;
  for (NodeId id : g.order()) ops.push_back(g.node(id).op);
  EXPECT_EQ(ops, (std::vector<std::string>{"Clip", "BatchNormalization"}));
}

TEST(Passes, ALoneMulAndAChainWithASecondReaderStayAsTheyAre) {
  for (bool lone : {true, false}) {
    Graph g = normGraph(!lone, lone);
    passes::PassContext ctx;
    passes::PassManager(passes::translatePipeline()).runToFixpoint(g, ctx);
    std::vector<std::string> ops;
    for (NodeId id : g.order()) ops.push_back(g.node(id).op);
    // lone Mul: unchanged; Sub (two readers) then Div: the Div alone becomes the affine layer, the Sub stays.
    std::vector<std::string> want = lone ? std::vector<std::string>{"Mul"} : std::vector<std::string>{"BatchNormalization", "BatchNormalization"};
    EXPECT_EQ(ops, want);
  }
}

// The integer numerics' form of a channel affine (batchnorm-to-conv, run by translate for integer targets): a
// BatchNormalization no Conv absorbed becomes a depthwise 1x1 Conv with weight scale / sqrt(var + eps) and bias
// beta - mean·a, which computes the same up to float rounding; the Relu after it then fuses into the Conv.
TEST(Passes, AnUnfoldedBatchNormBecomesADepthwiseOneByOneConv) {
  Graph g;
  g.opset = 13;
  ValueId x = g.addValue("x", makeType(DType::kF32, {1, 3, 4, 5})).id;
  g.inputs().push_back(x);
  auto c = [&](const char* n, std::vector<float> v) { return g.addConstant(n, Tensor::fromVector<float>({3}, v)).id; };
  ValueId b = g.addValue("b").id, y = g.addValue("y").id;
  Node& bn = g.addNode("BatchNormalization", "bn",
                       {x, c("scale", {1.5f, -0.5f, 2.f}), c("beta", {0.1f, 0.2f, -0.3f}), c("mean", {0.4f, -1.f, 0.f}),
                        c("var", {0.25f, 4.f, 1.f})},
                       {b});
  bn.attrs["epsilon"] = Attr(1e-3f);
  g.addNode("Relu", "relu", {b}, {y});
  g.outputs().push_back(y);
  ops::inferShapes(g);
  Tensor in(DType::kF32, {1, 3, 4, 5});
  for (int i = 0; i < 60; ++i) in.data<float>()[i] = static_cast<float>(i % 11) / 4.0f - 1.0f;
  auto before = engine::Engine(g).run({in});
  passes::PassContext ctx;
  ctx.verify_each = true;
  passes::PassManager({"batchnorm-to-conv", "fuse-activations", "dce"}).runToFixpoint(g, ctx);
  ASSERT_EQ(g.numNodes(), 1) << ir::dump(g);
  const Node& conv = g.node(g.order()[0]);
  EXPECT_EQ(conv.op, "Conv");
  EXPECT_EQ(conv.name, "bn");
  EXPECT_EQ(conv.attrString("activation", ""), "Relu");
  EXPECT_EQ(conv.attrInt("group", 1), 3);
  const Tensor& w = *g.value(conv.inputs[1]).constant;
  const Tensor& bias = *g.value(conv.inputs[2]).constant;
  EXPECT_EQ(w.shape(), (Shape{3, 1, 1, 1}));
  EXPECT_FLOAT_EQ(w.data<float>()[1], static_cast<float>(-0.5 / std::sqrt(4.0 + static_cast<double>(1e-3f))));
  EXPECT_FLOAT_EQ(bias.data<float>()[0], static_cast<float>(0.1f - 0.4f * (1.5 / std::sqrt(0.25 + static_cast<double>(1e-3f)))));
  auto after = engine::Engine(g).run({in});
  auto a = before[0].toDouble(), r = after[0].toDouble();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], r[i], 1e-6 * std::max(1.0, std::abs(a[i]))) << i;
  // Not in the default pipeline: translate runs it for integer targets only.
  Graph f;
  f.opset = 13;
  ValueId fx = f.addValue("x", makeType(DType::kF32, {1, 2, 3, 3})).id;
  f.inputs().push_back(fx);
  auto fc = [&](const char* n, float v) { return f.addConstant(n, Tensor::fromVector<float>({2}, {v, v})).id; };
  ValueId fy = f.addValue("y").id;
  f.addNode("BatchNormalization", "bn", {fx, fc("s", 2.f), fc("b", 0.f), fc("m", 0.f), fc("v", 1.f)}, {fy});
  f.outputs().push_back(fy);
  ops::inferShapes(f);
  passes::PassManager(passes::translatePipeline()).runToFixpoint(f, ctx);
  EXPECT_EQ(f.node(f.order()[0]).op, "BatchNormalization");
}

// int8-pow2's per-channel scale (scale-to-conv): a lone Mul or Add by one constant per channel, or one value, becomes
// a depthwise 1x1 Conv computing the same bits (one product, or one sum, per value: fmaf(k, x, +0) is x·k rounded
// once); a constant of the tensor's whole shape, an operand that is not 4-D, or a Mul of two activations stays.
TEST(Passes, ALoneScaleByAConstantBecomesADepthwiseOneByOneConv) {
  for (const char* op : {"Mul", "Add"})
    for (int form = 0; form < 5; ++form) {
      Graph g;
      g.opset = 13;
      ValueId x = g.addValue("x", makeType(DType::kF32, {1, 3, 4, 5})).id;
      g.inputs().push_back(x);
      const Shape ks = form == 0 ? Shape{1, 3, 1, 1} : form == 1 ? Shape{3, 1, 1} : form == 2 ? Shape{} : Shape{1, 3, 4, 5};
      Tensor k(DType::kF32, ks);
      for (int64_t i = 0; i < k.numel(); ++i) k.data<float>()[i] = 0.37f * static_cast<float>(i + 1) - 0.6f;
      ValueId kv = g.addConstant("k", std::move(k)).id, y = g.addValue("y").id;
      ValueId other = form == 4 ? x : kv;  // form 4: two activations (x · x)
      if (form == 1) g.addNode(op, "scale", {other, x}, {y});  // (the constant first)
      else g.addNode(op, "scale", {x, other}, {y});
      g.outputs().push_back(y);
      ops::inferShapes(g);
      Tensor in(DType::kF32, {1, 3, 4, 5});
      for (int i = 0; i < 60; ++i) in.data<float>()[i] = static_cast<float>(i % 13) / 3.0f - 2.1f;
      Tensor before = engine::Engine(g).run({in})[0];
      passes::PassContext ctx;
      ctx.verify_each = true;
      passes::PassManager({"scale-to-conv", "dce"}).runToFixpoint(g, ctx);
      const Node& n = g.node(g.order()[0]);
      const bool lone = form <= 2;
      EXPECT_EQ(n.op, lone ? "Conv" : op) << op << " form " << form;
      if (lone) {
        EXPECT_EQ(n.name, "scale");
        EXPECT_EQ(n.attrInt("group", 1), 3);
        EXPECT_EQ(g.value(n.inputs[1]).constant->shape(), (Shape{3, 1, 1, 1}));
      }
      EXPECT_TRUE(engine::Engine(g).run({in})[0].sameBits(before)) << op << " form " << form;
    }
  // Not in the default pipeline: the float targets keep the Mul.
  Graph f;
  f.opset = 13;
  ValueId fx = f.addValue("x", makeType(DType::kF32, {1, 2, 3, 3})).id;
  f.inputs().push_back(fx);
  ValueId fk = f.addConstant("k", Tensor::fromVector<float>({1, 2, 1, 1}, {2.f, 3.f})).id, fy = f.addValue("y").id;
  f.addNode("Mul", "m", {fx, fk}, {fy});
  f.outputs().push_back(fy);
  ops::inferShapes(f);
  passes::PassContext ctx;
  passes::PassManager(passes::translatePipeline()).runToFixpoint(f, ctx);
  EXPECT_EQ(f.node(f.order()[0]).op, "Mul");
}

// Issue 47 item 4, end to end through the optimizer: the Clip that fuse-activations folds into its Conv, and the
// Reshape-Expand-Reshape that detect-patterns turns into a Resize, are still checked by the manual's rules for them.
namespace {
Graph convThen(const std::function<ValueId(Graph&, ValueId)>& tail) {
  Graph g;
  g.opset = 13;
  ValueId x = g.addValue("x", makeType(DType::kF32, {1, 4, 8, 8})).id;
  g.inputs().push_back(x);
  ValueId c = g.addValue("c").id;
  Node& conv = g.addNode("Conv", "conv", {x, g.addConstant("w", Tensor(DType::kF32, {8, 4, 3, 3})).id}, {c});
  conv.attrs["pads"] = Attr(std::vector<int64_t>{1, 1, 1, 1});
  g.outputs().push_back(tail(g, c));
  ops::inferShapes(g);
  passes::PassContext ctx;
  passes::PassManager(passes::translatePipeline()).runToFixpoint(g, ctx);
  return g;
}
std::vector<std::string> ruleIds(const Graph& g, const std::vector<std::string>& relax = {}) {
  target::Target t = target::loadTarget("drpai");
  target::relax(t, relax);
  std::vector<std::string> ids;
  for (auto& v : target::checkGraph(g, t)) ids.push_back(v.rule_id);
  return ids;
}
}  // namespace

TEST(Passes, AFusedClipAndTheExpandUpsampleKeepTheirDrpaiRules) {
  auto clip = [](float lo, float hi) {
    return convThen([=](Graph& g, ValueId c) {
      ValueId y = g.addValue("y").id;
      g.addNode("Clip", "clip", {c, g.addConstant("lo", Tensor::fromVector<float>({}, {lo})).id,
                                 g.addConstant("hi", Tensor::fromVector<float>({}, {hi})).id}, {y});
      return y;
    });
  };
  Graph g = clip(0, 5);
  ASSERT_EQ(g.numNodes(), 1);
  EXPECT_EQ(g.node(g.order()[0]).attrString("activation", ""), "Clip");
  EXPECT_EQ(ruleIds(g), std::vector<std::string>{"drpai.clip.bounds"});
  EXPECT_EQ(ruleIds(clip(-1, 1)), std::vector<std::string>{"drpai.clip.bounds"});
  EXPECT_TRUE(ruleIds(clip(0, 6)).empty());
  EXPECT_TRUE(ruleIds(g, {"clip-bounds"}).empty());

  auto upsample = [](int64_t n) {
    return convThen([=](Graph& g, ValueId c) {
      ValueId r1 = g.addValue("r1").id, e = g.addValue("e").id, y = g.addValue("y").id;
      g.addNode("Reshape", "r1", {c, g.addConstant("s1", Tensor::fromVector<int64_t>({6}, {1, 8, 8, 1, 8, 1})).id}, {r1});
      g.addNode("Expand", "expand", {r1, g.addConstant("s2", Tensor::fromVector<int64_t>({6}, {1, 8, 8, n, 8, n})).id}, {e});
      g.addNode("Reshape", "r2", {e, g.addConstant("s3", Tensor::fromVector<int64_t>({4}, {1, 8, 8 * n, 8 * n})).id}, {y});
      return y;
    });
  };
  Graph five = upsample(5);
  std::vector<std::string> ops;
  for (NodeId id : five.order()) ops.push_back(five.node(id).op);
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "Resize"}));
  EXPECT_EQ(ruleIds(five), std::vector<std::string>{"drpai.resize.expand"});
  EXPECT_TRUE(ruleIds(upsample(2)).empty());
  EXPECT_TRUE(ruleIds(upsample(4)).empty());
  EXPECT_TRUE(ruleIds(five, {"upsample-factor"}).empty());
}
