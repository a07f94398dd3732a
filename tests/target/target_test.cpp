// Tests of targets: the constraint expression language, target loading (inheritance, errors that name the file
// and field), and one test graph per rule family of drpai and tidl producing exactly the expected report row.
#include "ops/registry.hpp"
#include "target/check.hpp"
#include "target/expr.hpp"
#include "target/target.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace npuc;
using namespace npuc::target;

TEST(Expr, PrecedenceListsAndMembership) {
  Facts f{{"k", Value(int64_t{3})}, {"s", Value(int64_t{2})}, {"kind", Value(std::string("same"))}};
  EXPECT_TRUE(Expr::parse("k == 3 and s in [1, 2]").eval(f).truthy());
  EXPECT_FALSE(Expr::parse("not (k == 3) or s > 2").eval(f).truthy());
  EXPECT_TRUE(Expr::parse("[k, s, kind] in [[3, 2, 'same'], [1, 1, 'none']]").eval(f).truthy());
  EXPECT_TRUE(Expr::parse("k not in [1, 5]").eval(f).truthy());
  EXPECT_EQ(Expr::parse("(k - 1) / 2 + k * s % 4").eval(f).asInt(), 1 + 2);
  EXPECT_EQ(Expr::parse("-k").eval(f).asInt(), -3);
  EXPECT_EQ(renderTemplate("{k}x{k} {missing}", f), "3x3 {missing}");
}

TEST(Expr, ErrorsNameTheProblem) {
  try {
    Expr::parse("k == = 3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("column"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Expr::parse("[1, 2"), Error);
  EXPECT_THROW(Expr::parse("'open"), Error);
  try {
    Expr::parse("nope > 1").eval({});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown fact 'nope'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Expr::parse("1 / 0").eval({}), Error);
  EXPECT_THROW(Expr::parse("'a' < 1").eval({}), Error);
}

namespace {
std::filesystem::path writeTemp(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / ("npuc_target_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}
}  // namespace

TEST(Target, BuiltInTargetsLoad) {
  auto names = listTargets();
  for (const char* n : {"generic", "drpai", "tidl"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    Target t = loadTarget(n);
    EXPECT_EQ(t.name, n);
    EXPECT_FALSE(t.engines.empty());
  }
  EXPECT_EQ(loadTarget("drpai").numerics, "fp16");
  EXPECT_EQ(loadTarget("tidl").engines.at("eve").macs_per_cycle, 16);
  EXPECT_THROW(loadTarget("no_such_target"), Error);
}

TEST(Target, InheritanceOverridesEntryByEntry) {
  auto child = writeTemp("child.yaml",
                         "inherits: generic\nname: child\nnumerics: fp16\nops:\n  Conv:\n    engine: mac\n    rules:\n"
                         "      - {id: c.k, text: only 1x1, require: 'kernel_h == 1'}\n");
  Target t = loadTarget(child.string());
  EXPECT_EQ(t.name, "child");
  EXPECT_EQ(t.numerics, "fp16");
  EXPECT_EQ(t.inherits, std::vector<std::string>{"generic"});
  EXPECT_EQ(t.findOp("Conv")->rules.size(), 1u);
  EXPECT_EQ(t.findOp("Relu")->engine, "vector");  // generic's default engine still applies
}

TEST(Target, BadFilesNameFileAndField) {
  auto expect = [](const std::string& text, const std::string& what) {
    auto p = writeTemp("bad.yaml", text);
    try {
      loadTarget(p.string());
      ADD_FAILURE() << "loaded: " << text;
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("bad.yaml"), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  };
  expect("name: x\nnumerics: fp64\n", "numerics");
  expect("name: x\nspeed: 3\n", "unknown field 'speed'");
  expect("name: x\nengines: {m: {kind: mac, clock_mhz: 0}}\n", "clock_mhz");
  expect("name: x\nengines: {m: {kind: mac, clock_mhz: 1}}\nops: {Conv: {engine: nope}}\n", "engine 'nope'");
  expect("name: x\nengines: {m: {kind: mac, clock_mhz: 1}}\nops: {Conv: {engine: m, rules: [{id: r1, text: t, require: 'k =='}]}}\n",
         "rule 'r1'");
  expect("name: x\nops: [1, 2\n", "invalid YAML");
}

// ---------------------------------------------------------------------------------------------------------
// One test graph per rule family.

namespace {

struct ConvSpec {
  Shape x{1, 16, 8, 8};
  int64_t out_c = 16, k = 3, stride = 1, dilation = 1, group = 1;
  std::vector<int64_t> pads{1, 1, 1, 1};
  std::string op = "Conv";
};

ir::Graph windowGraph(const ConvSpec& s) {
  ir::Graph g;
  g.opset = 13;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, s.x)).id;
  g.inputs().push_back(x);
  ir::ValueId y = g.addValue("y").id;
  std::vector<ir::ValueId> ins{x};
  if (s.op == "Conv") {
    Tensor w(DType::kF32, {s.out_c, s.x[1] / s.group, s.k, s.k});
    ins.push_back(g.addConstant("w", w).id);
  }
  ir::Node& n = g.addNode(s.op, "the_" + s.op, ins, {y});
  if (s.op != "Conv") n.attrs["kernel_shape"] = ir::Attr(std::vector<int64_t>{s.k, s.k});
  n.attrs["strides"] = ir::Attr(std::vector<int64_t>{s.stride, s.stride});
  n.attrs["pads"] = ir::Attr(s.pads);
  if (s.op == "Conv") {
    n.attrs["dilations"] = ir::Attr(std::vector<int64_t>{s.dilation, s.dilation});
    n.attrs["group"] = ir::Attr(s.group);
  }
  g.outputs().push_back(y);
  ops::inferShapes(g);
  return g;
}

std::vector<Violation> check(const ir::Graph& g, const std::string& t) { return checkGraph(g, loadTarget(t)); }

void expectOneRow(const std::vector<Violation>& rows, const std::string& id, const std::string& rule,
                  const std::string& actual) {
  ASSERT_EQ(rows.size(), 1u) << (rows.empty() ? "no rows" : rows[0].rule_id + " / " + rows.back().rule_id);
  EXPECT_EQ(rows[0].rule_id, id);
  EXPECT_EQ(rows[0].rule, rule);
  EXPECT_EQ(rows[0].actual, actual);
  EXPECT_EQ(rows[0].index, 0);
}

}  // namespace

TEST(DrpaiRules, SupportedConvHasNoRows) {
  ConvSpec s;
  s.x = {1, 16, 16, 16};
  EXPECT_TRUE(check(windowGraph(s), "drpai").empty());
}

TEST(DrpaiRules, MinimumPlaneSize) {
  ConvSpec s;
  s.x = {1, 16, 4, 4};
  expectOneRow(check(windowGraph(s), "drpai"), "drpai.conv.min_plane",
               "Conv minimum plane size violation: 3x3 st=1 pad=(1,1,1,1) needs width ≥ 6, height ≥ 3 (§4.1.3)",
               "width 4, height 4");
}

TEST(DrpaiRules, ConvKernel) {
  ConvSpec s;
  s.x = {1, 16, 32, 32};
  s.k = 4;
  s.pads = {0, 0, 0, 0};
  auto rows = check(windowGraph(s), "drpai");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].rule_id, "drpai.conv.kernel");
  EXPECT_EQ(rows[0].actual, "kernel 4x4");
}

TEST(DrpaiRules, ConvStrideAndPads) {
  ConvSpec s;
  s.x = {1, 16, 32, 32};
  s.stride = 3;
  s.pads = {0, 0, 0, 0};
  expectOneRow(check(windowGraph(s), "drpai"), "drpai.conv.stride", "Conv strides must be [1, 1] or [2, 2] (D:L445)",
               "strides [3, 3]");
  ConvSpec p;
  p.x = {1, 16, 32, 32};
  p.pads = {1, 0, 1, 0};
  auto rows = check(windowGraph(p), "drpai");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].rule_id, "drpai.conv.pads");
  EXPECT_EQ(rows[0].actual, "pads (t, l, b, r) = (1, 0, 1, 0), kernel 3x3, stride 1");
  EXPECT_FALSE(rows[0].fix.empty());
}

TEST(DrpaiRules, DepthwiseAndGroups) {
  ConvSpec d;
  d.x = {1, 16, 32, 32};
  d.group = 16;
  d.k = 9;
  d.pads = {4, 4, 4, 4};
  expectOneRow(check(windowGraph(d), "drpai"), "drpai.conv.depthwise",
               "Depthwise Conv supports 3x3, 5x5 and 7x7 kernels with stride 1 or 2 (D:L700-721)",
               "kernel 9x9, strides [1, 1]");
  ConvSpec g;
  g.x = {1, 16, 32, 32};
  g.group = 4;
  expectOneRow(check(windowGraph(g), "drpai"), "drpai.conv.group",
               "Conv group must be 1, or equal the input and output channels (depthwise) (D:L463-467)",
               "group 4, 16 -> 16 channels");
}

TEST(DrpaiRules, DilatedConv) {
  ConvSpec s;
  s.x = {1, 16, 32, 32};
  s.dilation = 2;
  s.pads = {1, 1, 1, 1};
  auto rows = check(windowGraph(s), "drpai");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rule_id, "drpai.conv.dilated");
  s.pads = {2, 2, 2, 2};
  EXPECT_TRUE(check(windowGraph(s), "drpai").empty());
}

TEST(DrpaiRules, PoolingCases) {
  ConvSpec m;
  m.op = "MaxPool";
  m.x = {1, 8, 16, 16};
  m.k = 4;
  m.pads = {0, 0, 0, 0};
  auto rows = check(windowGraph(m), "drpai");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rule_id, "drpai.maxpool.case");
  EXPECT_EQ(rows[0].actual, "kernel 4x4, strides [1, 1], pads (0,0,0,0)");
  m.k = 3;
  m.pads = {1, 1, 1, 1};
  EXPECT_TRUE(check(windowGraph(m), "drpai").empty());
  ConvSpec a = m;
  a.op = "AveragePool";
  a.k = 5;
  a.pads = {2, 2, 2, 2};
  rows = check(windowGraph(a), "drpai");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rule_id, "drpai.avgpool.case");
}

TEST(DrpaiRules, BatchAndUnsupportedOp) {
  ConvSpec s;
  s.x = {2, 16, 16, 16};
  expectOneRow(check(windowGraph(s), "drpai"), "drpai.batch", "The DRP-AI Translator supports batch size 1 only (D:L4643)",
               "batch 2");
  ir::Graph g;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 4})).id;
  g.inputs().push_back(x);
  ir::ValueId y = g.addValue("y").id;
  g.addNode("Erf", "erf", {x}, {y});
  g.outputs().push_back(y);
  ops::inferShapes(g);
  expectOneRow(check(g, "drpai"), "drpai.op", "Operator Erf is not supported by target drpai", "Erf");
  EXPECT_TRUE(check(g, "generic").empty());
}

namespace {

ir::Graph resizeGraph(const std::map<std::string, std::string>& attrs, std::vector<float> scales = {1, 1, 2, 2},
                      Shape x_shape = {1, 16, 8, 8}) {
  ir::Graph g;
  g.opset = 13;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, x_shape)).id;
  g.inputs().push_back(x);
  ir::ValueId sc = g.addConstant("scales", Tensor::fromVector<float>({4}, scales)).id;
  ir::ValueId y = g.addValue("y").id;
  ir::Node& n = g.addNode("Resize", "the_Resize", {x, ir::kNoValue, sc}, {y});
  for (auto& [k, v] : attrs) n.attrs[k] = ir::Attr(v);
  g.outputs().push_back(y);
  ops::inferShapes(g);
  return g;
}

}  // namespace

TEST(DrpaiRules, ResizeFamily) {
  EXPECT_TRUE(check(resizeGraph({{"mode", "nearest"}, {"nearest_mode", "floor"}}), "drpai").empty());
  EXPECT_TRUE(check(resizeGraph({{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}}), "drpai").empty());
  expectOneRow(check(resizeGraph({{"mode", "cubic"}}), "drpai"), "drpai.resize.mode",
               "Resize supports mode nearest or linear (D:L635)", "mode cubic");
  // ONNX's default nearest_mode (round_prefer_floor) is not what DRP-AI computes.
  expectOneRow(check(resizeGraph({}), "drpai"), "drpai.resize.nearest_mode", "Resize in nearest mode needs nearest_mode floor (D:L637)",
               "nearest_mode round_prefer_floor");
  expectOneRow(check(resizeGraph({{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}}), "drpai"),
               "drpai.resize.ctm",
               "Resize coordinate_transformation_mode must be half_pixel, pytorch_half_pixel, align_corners or asymmetric (D:L628-631)",
               "coordinate_transformation_mode tf_crop_and_resize");
  expectOneRow(check(resizeGraph({{"mode", "linear"}}, {1, 2, 2, 2}), "drpai"), "drpai.resize.channels",
               "Resize scales only H and W: scales [1, 1, y, x] / sizes [1, ich, H, W] (D:L624-626)", "rank 4, channels 16 -> 32");
  expectOneRow(check(resizeGraph({{"mode", "linear"}}, {1, 1, 2, 2}, {1, 4, 8, 2100}), "drpai"), "drpai.resize.size",
               "Resize needs input and output width and height ≤ 4096 (D:L621-622)", "2100x8 -> 4200x16");
}

TEST(DrpaiRules, PadThatCannotFold) {
  // A reflect Pad cannot become a convolution's padding: the report names the fusion rule.
  ir::Graph g;
  g.opset = 13;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 16, 8, 8})).id;
  g.inputs().push_back(x);
  ir::ValueId pads = g.addConstant("pads", Tensor::fromVector<int64_t>({8}, {0, 0, 1, 1, 0, 0, 1, 1})).id;
  ir::ValueId y = g.addValue("y").id;
  g.addNode("Pad", "the_Pad", {x, pads}, {y}).attrs["mode"] = ir::Attr(std::string("reflect"));
  g.outputs().push_back(y);
  ops::inferShapes(g);
  expectOneRow(check(g, "drpai"), "drpai.pad.fuse",
               "Pad is supported only where it fuses into the following Conv, MaxPool or AveragePool (constant mode, H/W "
               "pads, the result within that op's pad rules) (D:L580-589)",
               "a reflect Pad the optimizer could not fold into its consumer");
  EXPECT_TRUE(check(g, "generic").empty());
}

TEST(TidlRules, ConvFamily) {
  ConvSpec s;
  s.x = {1, 16, 32, 32};
  s.k = 9;
  s.pads = {4, 4, 4, 4};
  expectOneRow(check(windowGraph(s), "tidl"), "tidl.conv.kernel", "Conv kernel size up to 7x7 (T:L249)", "kernel 9x9");
  ConvSpec c;
  c.x = {1, 16, 8, 8};
  c.out_c = 2048;
  expectOneRow(check(windowGraph(c), "tidl"), "tidl.conv.channels",
               "Conv supports at most 1024 input and 1024 output channels (T:L253)", "16 -> 2048 channels");
  ConvSpec d;
  d.x = {1, 16, 32, 32};
  d.dilation = 3;
  d.pads = {3, 3, 3, 3};
  expectOneRow(check(windowGraph(d), "tidl"), "tidl.conv.dilation", "Conv dilation must be 1, 2 or 4 (T:L250)",
               "dilations [3, 3]");
}

TEST(TidlRules, InnerProductAndPooling) {
  ir::Graph g;
  g.opset = 13;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 100})).id;
  g.inputs().push_back(x);
  ir::ValueId w = g.addConstant("w", Tensor(DType::kF32, {100, 10})).id;
  ir::ValueId y = g.addValue("y").id;
  g.addNode("Gemm", "fc", {x, w}, {y});
  g.outputs().push_back(y);
  ops::inferShapes(g);
  expectOneRow(check(g, "tidl"), "tidl.fc.align8", "Inner product input size has to be a multiple of 8 (T:L265)",
               "input size 100");
  ConvSpec p;
  p.op = "MaxPool";
  p.x = {1, 8, 16, 16};
  p.k = 3;
  p.stride = 3;
  p.pads = {0, 0, 0, 0};
  expectOneRow(check(windowGraph(p), "tidl"), "tidl.pool.stride", "Pooling supports strides 1, 2 and 4 (T:L267)",
               "strides [3, 3]");
}
