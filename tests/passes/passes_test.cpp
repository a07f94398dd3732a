// Tests of the resolve pipeline: constant folding of shape computations, dead-code elimination, and that the
// resolved graph computes the same outputs as the raw import.
#include "ir/graph.hpp"
#include "npuc/model.hpp"
#include "passes/pass.hpp"
#include "engine/engine.hpp"
#include "ops/registry.hpp"

#include <gtest/gtest.h>

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
