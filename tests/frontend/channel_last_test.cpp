// The channel-last builder (src/frontend/channel_last) and the fold-transposes pass: a channel-last chain held
// channels-first between its boundary Transposes, computing what the framework's layout computes (numpy-free: the
// same graph written with a Transpose pair around every layer is the oracle).
#include "engine/engine.hpp"
#include "frontend/channel_last/channel_last.hpp"
#include "ir/graph.hpp"
#include "ops/registry.hpp"
#include "npuc/model.hpp"
#include "passes/pass.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

using namespace npuc;
using namespace npuc::channel_last;

namespace {

Tensor randomTensor(const Shape& s, uint32_t seed) {
  Tensor t(DType::kF32, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

int countOps(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (ir::NodeId id : g.order()) n += g.node(id).op == op;
  return n;
}

void resolve(ir::Graph& g) {
  passes::PassContext ctx;
  ctx.verify_each = true;
  passes::PassManager(passes::resolvePipeline()).runToFixpoint(g, ctx);
}

void foldReshapes(ir::Graph& g) {
  resolve(g);
  passes::PassContext ctx;
  ctx.verify_each = true;
  passes::PassManager({"fold-reshapes", "dce"}).runToFixpoint(g, ctx);
}

}  // namespace

TEST(ChannelLast, PermsAndAxes) {
  EXPECT_EQ(toChannelsFirst(4), (std::vector<int64_t>{0, 3, 1, 2}));
  EXPECT_EQ(toFramework(4), (std::vector<int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(toChannelsFirst(3), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(channelsFirstAxis(3, 4), 1);
  EXPECT_EQ(channelsFirstAxis(-1, 4), 1);
  EXPECT_EQ(channelsFirstAxis(1, 4), 2);
  EXPECT_EQ(channelsFirstAxis(0, 4), 0);
  EXPECT_THROW(channelsFirstAxis(4, 4), Error);
  EXPECT_EQ(channelsFirstShape({1, 8, 6, 3}), (Shape{1, 3, 8, 6}));
  EXPECT_EQ(frameworkShape({1, 3, 8, 6}), (Shape{1, 8, 6, 3}));
}

// NHWC input -> conv -> add a per-channel constant -> relu -> conv -> mean over H, W -> output [N, C]: between the
// input's Transpose and the Reshape after the mean, everything is channels-first; the only Transposes left after
// resolve are the input's and none at the output (the mean's result is 2-D).
TEST(ChannelLast, AConvChainKeepsOneBoundaryTranspose) {
  ir::Graph g;
  g.opset = 13;
  Builder b(g);
  b.input("image", {1, 8, 6, 3}, DType::kF32);
  auto conv = [&](const std::string& in, const std::string& out, int64_t cin, int64_t cout, uint32_t seed) {
    ir::ValueId y = b.value(out);
    b.node("Conv", out, {b.channelsFirst(in), b.constant(out + "/w", randomTensor({cout, cin, 3, 3}, seed))}, {y},
           {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    b.bind(out, y, Form::kChannelsFirst);
  };
  conv("image", "c1", 3, 4, 1);
  b.bind("bias", b.constant("bias", randomTensor({4}, 2)), Form::kFramework);  // a TF bias: [C], NHWC-broadcast
  Builder::Operands ops = b.elementwise({"c1", "bias"});
  EXPECT_EQ(ops.form, Form::kChannelsFirst);
  ir::ValueId a = b.value("add");
  b.node("Add", "add", ops.values, {a});
  b.bind("add", a, ops.form);
  ir::ValueId r = b.value("relu");
  b.node("Relu", "relu", {b.channelsFirst("add")}, {r});
  b.bind("relu", r, Form::kChannelsFirst);
  conv("relu", "c2", 4, 5, 3);
  EXPECT_EQ(b.shape("c2"), (Shape{1, 8, 6, 5}));
  // Mean over the framework's axes 1, 2 (H, W), keepdims 0: the IR's axes 2, 3 of the channels-first tensor.
  ir::ValueId m = b.value("mean");
  b.node("ReduceMean", "mean", {b.channelsFirst("c2")}, {m},
         {{"axes", std::vector<int64_t>{channelsFirstAxis(1, 4), channelsFirstAxis(2, 4)}}, {"keepdims", int64_t{0}}});
  b.bind("mean", m, Form::kFramework);  // [N, C] is the same in both forms
  b.output("mean");
  // A second output straight from the channels-first conv: a Transpose back to NHWC named as the tensor.
  b.output("c2");
  g.topoSort();
  ir::verify(g);
  EXPECT_EQ(g.value(g.outputs()[1]).name, "c2");
  EXPECT_EQ(g.value(g.outputs()[1]).type.shape, (Shape{1, 8, 6, 5}));

  // The oracle: the same layers, each wrapped in its own NHWC <-> NCHW pair (what a per-layer import writes).
  ir::Graph o;
  o.opset = 13;
  {
    auto val = [&](const std::string& n) { return o.addValue(n).id; };
    auto tr = [&](ir::ValueId in, std::vector<int64_t> perm, const std::string& n) {
      ir::ValueId y = val(n);
      o.addNode("Transpose", n, {in}, {y}).attrs["perm"] = ir::Attr(perm);
      return y;
    };
    ir::ValueId x = o.addValue("image", ir::makeType(DType::kF32, {1, 8, 6, 3})).id;
    o.inputs().push_back(x);
    auto convO = [&](ir::ValueId in, int64_t cin, int64_t cout, uint32_t seed, const std::string& n) {
      ir::ValueId y = val(n);
      o.addNode("Conv", n, {tr(in, {0, 3, 1, 2}, n + "/in"), o.addConstant(n + "/w", randomTensor({cout, cin, 3, 3}, seed)).id},
                {y}).attrs["pads"] = ir::Attr(std::vector<int64_t>{1, 1, 1, 1});
      return tr(y, {0, 2, 3, 1}, n + "/out");
    };
    ir::ValueId c1 = convO(x, 3, 4, 1, "c1");
    ir::ValueId add = val("add"), relu = val("relu"), mean = val("mean");
    o.addNode("Add", "add", {c1, o.addConstant("bias", randomTensor({4}, 2)).id}, {add});
    o.addNode("Relu", "relu", {add}, {relu});
    ir::ValueId c2 = convO(relu, 4, 5, 3, "c2");
    ir::Node& mn = o.addNode("ReduceMean", "mean", {c2}, {mean});
    mn.attrs["axes"] = ir::Attr(std::vector<int64_t>{1, 2});
    mn.attrs["keepdims"] = ir::Attr(int64_t{0});
    o.outputs() = {mean, c2};
    ops::inferShapes(o);
  }
  Tensor in = randomTensor({1, 8, 6, 3}, 7);
  auto want = engine::Engine(o).run({in});
  resolve(g);
  EXPECT_EQ(countOps(g, "Transpose"), 2);  // the input's, and the second output's
  auto got = engine::Engine(g).run({in});
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    for (int64_t k = 0; k < got[i].numel(); ++k) EXPECT_FLOAT_EQ(got[i].data<float>()[k], want[i].data<float>()[k]);
  }
  // fold-transposes cancels only adjacent pairs: the per-layer form keeps its four (an Add and a Relu between
  // them), which is why the importers hold tensors channels-first instead of converting around every layer.
  resolve(o);
  EXPECT_EQ(countOps(o, "Transpose"), 4);
  auto again = engine::Engine(o).run({in});
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(again[i].sameBits(want[i]));
}

// fold-transposes keeps an identity Transpose between a graph input and a graph output (the interface's names), and
// removes one between layers.
TEST(ChannelLast, IdentityTransposesGoExceptAtTheInterface) {
  ir::Graph g;
  g.opset = 13;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 2, 3})).id, y = g.addValue("y").id;
  g.inputs().push_back(x);
  g.addNode("Transpose", "t", {x}, {y}).attrs["perm"] = ir::Attr(std::vector<int64_t>{0, 1, 2});
  g.outputs().push_back(y);
  ops::inferShapes(g);
  resolve(g);
  EXPECT_EQ(countOps(g, "Transpose"), 1);

  ir::Graph h;
  h.opset = 13;
  x = h.addValue("x", ir::makeType(DType::kF32, {1, 2, 3})).id;
  ir::ValueId a = h.addValue("a").id, b = h.addValue("b").id, c = h.addValue("c").id;
  h.inputs().push_back(x);
  h.addNode("Relu", "r", {x}, {a});
  h.addNode("Transpose", "t", {a}, {b}).attrs["perm"] = ir::Attr(std::vector<int64_t>{0, 2, 1});
  h.addNode("Transpose", "u", {b}, {c}).attrs["perm"] = ir::Attr(std::vector<int64_t>{0, 2, 1});
  h.outputs().push_back(c);
  ops::inferShapes(h);
  resolve(h);
  EXPECT_EQ(countOps(h, "Transpose"), 0);
  EXPECT_EQ(h.value(h.outputs()[0]).name, "c");
}

// fold-reshapes: a Reshape of a reshape reads the first one's input (a TFLite MEAN's layout change moving only
// 1-dims, then the model's own flatten: one Reshape, which DRP-AI takes as a Flatten); a Reshape to its input's shape
// goes, except between a graph input and a graph output. The values stay the same.
TEST(ChannelLast, ReshapeChainsBecomeOneReshape) {
  ir::Graph g;
  g.opset = 13;
  auto val = [&](const std::string& n) { return g.addValue(n).id; };
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 6, 1, 1})).id;
  g.inputs().push_back(x);
  ir::ValueId r = val("r"), a = val("a"), b = val("b"), c = val("c"), d = val("d");
  g.addNode("Relu", "relu", {x}, {r});
  g.addNode("Reshape", "a", {r, g.addConstant("sa", Tensor::fromVector<int64_t>({4}, {1, 1, 1, 6})).id}, {a});
  g.addNode("Squeeze", "b", {a, g.addConstant("sb", Tensor::fromVector<int64_t>({1}, {1})).id}, {b});
  g.addNode("Reshape", "c", {b, g.addConstant("sc", Tensor::fromVector<int64_t>({2}, {1, -1})).id}, {c});
  g.addNode("Reshape", "d", {c, g.addConstant("sd", Tensor::fromVector<int64_t>({2}, {1, 6})).id}, {d});
  g.outputs().push_back(d);
  ops::inferShapes(g);
  Tensor in = randomTensor({1, 6, 1, 1}, 3);
  auto want = engine::Engine(g).run({in});
  foldReshapes(g);
  EXPECT_EQ(countOps(g, "Reshape"), 1);
  EXPECT_EQ(countOps(g, "Squeeze"), 0);
  EXPECT_EQ(g.value(g.outputs()[0]).name, "d");
  auto got = engine::Engine(g).run({in});
  EXPECT_TRUE(got[0].sameBits(want[0]));

  ir::Graph h;  // an input reshaped to its own shape and returned: the interface keeps its node
  h.opset = 13;
  x = h.addValue("x", ir::makeType(DType::kF32, {2, 3})).id;
  ir::ValueId y = h.addValue("y").id;
  h.inputs().push_back(x);
  h.addNode("Reshape", "same", {x, h.addConstant("s", Tensor::fromVector<int64_t>({2}, {2, 3})).id}, {y});
  h.outputs().push_back(y);
  ops::inferShapes(h);
  foldReshapes(h);
  EXPECT_EQ(countOps(h, "Reshape"), 1);
}

// A model file's framework, by content where it tells (docs/frontends.md, "Which importer reads a file").
TEST(ModelFormatDetection, ByContentThenExtension) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "npuc_format_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::filesystem::path p = dir / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  };
  EXPECT_EQ(detectModelFormat(write("a.bin", std::string("\x1c\0\0\0TFL3", 8) + "rest")), ModelFormat::kTfLite);
  EXPECT_EQ(detectModelFormat(write("b.tflite", "xx")), ModelFormat::kTfLite);
  EXPECT_EQ(detectModelFormat(write("c.pb", "\x08\x07")), ModelFormat::kTensorFlow);
  EXPECT_EQ(detectModelFormat(write("d.model", "\x0a\x05nodes")), ModelFormat::kTensorFlow);
  EXPECT_EQ(detectModelFormat(write("e.onnx", "\x0a\x05nodes")), ModelFormat::kOnnx);
  EXPECT_EQ(detectModelFormat(write("f.model", "\x08\x07")), ModelFormat::kOnnx);
  EXPECT_EQ(detectModelFormat(write("g.prototxt", "name: 'x'")), ModelFormat::kCaffe);
  EXPECT_THROW(detectModelFormat(dir / "missing.onnx"), Error);
  std::filesystem::remove_all(dir);
}
