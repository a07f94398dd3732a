// Control flow (If, Loop, Scan): subgraphs with explicit captures in the IR (verifier, dump, DCE, export and import
// back), their shape functions and the reference engine, the If whose condition folds inlined by the resolve
// pipeline, and models PyTorch exports (tests/data/control_flow/generate.py) against PyTorch's own outputs.
#include "codegen/cost.hpp"
#include "driver/translation.hpp"
#include "engine/engine.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "ir/graph.hpp"
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "ops/registry.hpp"
#include "passes/pass.hpp"
#include "scratch_dir.hpp"
#include "target/target.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(NPUC_SOURCE_DIR) / "tests/data/control_flow";

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// A branch computing `op`(c) of one float capture c (the enclosing graph's value).
ir::GraphPtr branch(const std::string& op, DType capture_type = DType::kF32) {
  auto b = std::make_unique<ir::Graph>();
  b->opset = 14;
  ir::ValueId c = b->addValue("c", ir::Type{capture_type, {}, false}).id;
  b->inputs().push_back(c);
  b->num_captures = 1;
  ir::ValueId y = b->addValue("y").id;
  b->addNode(op, op, {c}, {y});
  b->outputs().push_back(y);
  return ir::GraphPtr(std::move(b));
}

/// x -> Neg -> t; If(cond) { then: Relu(t) } else { Sigmoid(t) } -> out. The branches capture t.
std::unique_ptr<ir::Graph> ifGraph() {
  auto g = std::make_unique<ir::Graph>();
  g->opset = 14;
  ir::ValueId x = g->addValue("x", ir::makeType(DType::kF32, {4})).id;
  ir::ValueId cond = g->addValue("cond", ir::makeType(DType::kBool, {})).id;
  g->inputs() = {x, cond};
  ir::ValueId t = g->addValue("t").id, out = g->addValue("out").id;
  g->addNode("Neg", "neg", {x}, {t});
  ir::Node& n = g->addNode("If", "if", {cond, t, t}, {out});  // else_branch's capture, then then_branch's
  n.attrs["then_branch"] = ir::Attr(branch("Relu"));
  n.attrs["else_branch"] = ir::Attr(branch("Sigmoid"));
  g->outputs().push_back(out);
  ops::inferShapes(*g);
  return g;
}

Tensor vec(std::vector<float> v) { return Tensor::fromVector<float>({static_cast<int64_t>(v.size())}, v); }

}  // namespace

TEST(ControlFlowIr, IfRunsTheBranchTheConditionTakesWithItsCaptures) {
  auto g = ifGraph();
  ir::verify(*g);
  EXPECT_EQ(g->value(g->outputs()[0]).type.str(), "float32[4]");  // both branches agree
  engine::Engine e(*g);
  Tensor x = vec({-1, 2, -3, 0.5f});
  auto yes = e.run(std::vector<Tensor>{x, Tensor::scalar<bool>(true)});
  auto no = e.run(std::vector<Tensor>{x, Tensor::scalar<bool>(false)});
  for (int i = 0; i < 4; ++i) {
    float t = -x.data<float>()[i];
    EXPECT_EQ(yes[0].data<float>()[i], std::max(t, 0.0f));
    EXPECT_NEAR(no[0].data<float>()[i], 1.0f / (1.0f + std::exp(-t)), 1e-6f);
  }
  std::string d = ir::dump(*g);
  EXPECT_NE(d.find("then_branch:"), std::string::npos) << d;
  EXPECT_NE(d.find("capture %c"), std::string::npos) << d;
}

TEST(ControlFlowIr, VerifierChecksCapturesAndNesting) {
  auto g = ifGraph();
  // A capture of another element type than the value it stands for.
  g->node(1).attrs["then_branch"] = ir::Attr(branch("Relu", DType::kI64));
  EXPECT_NE(errorOf([&] { ir::verify(*g); }).find("'c' is int64 inside and float32 outside"), std::string::npos)
      << errorOf([&] { ir::verify(*g); });
  // More captures than the node has inputs.
  g = ifGraph();
  g->node(1).inputs.resize(1);
  EXPECT_NE(errorOf([&] { ir::verify(*g); }).find("capture 2 outer values but the node has 1 inputs"), std::string::npos);
  // Nesting: If inside If inside … deeper than the limit.
  ir::GraphPtr inner = branch("Relu");
  for (int depth = 0; depth <= ir::kMaxSubgraphDepth; ++depth) {
    auto b = std::make_unique<ir::Graph>();
    ir::ValueId c = b->addValue("c").id, k = b->addConstant("k", Tensor::scalar<bool>(true)).id, y = b->addValue("y").id;
    b->inputs().push_back(c);
    b->num_captures = 1;
    ir::Node& n = b->addNode("If", "nested", {k, c, c}, {y});
    n.attrs["then_branch"] = ir::Attr(inner);
    n.attrs["else_branch"] = ir::Attr(inner);
    b->outputs().push_back(y);
    inner = ir::GraphPtr(std::move(b));
  }
  g = ifGraph();
  g->node(1).attrs["then_branch"] = ir::Attr(inner);
  EXPECT_NE(errorOf([&] { ir::verify(*g, ErrorCode::kInvalidInput); }).find("nest deeper than 16 levels"), std::string::npos);
}

TEST(ControlFlowIr, DceKeepsAValueOnlyASubgraphReads) {
  auto g = ifGraph();
  passes::PassContext ctx;
  passes::PassManager({"dce"}).runOnce(*g, ctx);
  ASSERT_TRUE(g->findValue("t"));
  EXPECT_EQ(g->numNodes(), 2);
  ir::verify(*g);
}

TEST(ControlFlowIr, ExportThenImportGivesTheSameResults) {
  auto g = ifGraph();
  g->renameValue(*g->findValue("t"), "renamed_t");  // the branches read it by position, not by name
  std::string bytes = onnx_io::exportBytes(*g);
  onnx_io::checkModelBytes(bytes, "if");
  auto back = onnx_io::importBytes(bytes.data(), bytes.size(), "if", ".");
  ASSERT_EQ(back->numNodes(), 2);
  const ir::Node& n = back->node(back->order()[1]);
  EXPECT_EQ(n.op, "If");
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(back->value(n.inputs[1]).name, "renamed_t");
  Tensor x = vec({-1, 2, -3, 0.5f});
  for (bool c : {true, false}) {
    auto a = engine::Engine(*g).run(std::vector<Tensor>{x, Tensor::scalar<bool>(c)});
    auto b = engine::Engine(*back).run(std::vector<Tensor>{x, Tensor::scalar<bool>(c)});
    EXPECT_TRUE(a[0].sameBits(b[0]));
  }
}

TEST(ControlFlowIr, ConstantConditionIsInlined) {
  auto g = ifGraph();
  ir::ValueId k = g->addConstant("k", Tensor::scalar<bool>(false)).id;
  g->node(1).inputs[0] = k;
  Tensor x = vec({-1, 2, -3, 0.5f});
  auto before = engine::Engine(*g).run(std::vector<Tensor>{x, Tensor::scalar<bool>(true)});
  passes::PassContext ctx;
  passes::PassManager(passes::resolvePipeline()).runToFixpoint(*g, ctx);
  ir::verify(*g);
  for (ir::NodeId id : g->order()) EXPECT_NE(g->node(id).op, "If");
  EXPECT_EQ(g->value(g->outputs()[0]).name, "out");
  auto after = engine::Engine(*g).run(std::vector<Tensor>{x, Tensor::scalar<bool>(true)});
  EXPECT_TRUE(before[0].sameBits(after[0]));
}

namespace {

/// Loop(M, cond, v) { body(i, c, v): v + 1, c, scan output i * v } with M and cond given as inputs.
std::unique_ptr<ir::Graph> loopGraph() {
  auto g = std::make_unique<ir::Graph>();
  g->opset = 14;
  ir::ValueId m = g->addValue("m", ir::makeType(DType::kI64, {})).id;
  ir::ValueId cond = g->addValue("cond", ir::makeType(DType::kBool, {})).id;
  ir::ValueId v0 = g->addValue("v0", ir::makeType(DType::kF32, {2})).id;
  g->inputs() = {m, cond, v0};
  auto b = std::make_unique<ir::Graph>();
  b->opset = 14;
  ir::ValueId i = b->addValue("i", ir::makeType(DType::kI64, {})).id, c = b->addValue("c", ir::makeType(DType::kBool, {})).id;
  ir::ValueId v = b->addValue("v", ir::makeType(DType::kF32, {2})).id, one = b->addConstant("one", Tensor::scalar<float>(1)).id;
  b->inputs() = {i, c, v};
  ir::ValueId v1 = b->addValue("v1").id, fi = b->addValue("fi").id, s = b->addValue("s").id, co = b->addValue("co").id;
  b->addNode("Add", "add", {v, one}, {v1});
  b->addNode("Cast", "cast", {i}, {fi}).attrs["to"] = ir::Attr(int64_t{1});
  b->addNode("Mul", "mul", {fi, v}, {s});
  b->addNode("Identity", "id", {c}, {co});
  b->outputs() = {co, v1, s};
  ir::ValueId vf = g->addValue("vf").id, scan = g->addValue("scan").id;
  g->addNode("Loop", "loop", {m, cond, v0}, {vf, scan}).attrs["body"] = ir::Attr(ir::GraphPtr(std::move(b)));
  g->outputs() = {vf, scan};
  ops::inferShapes(*g);
  return g;
}

}  // namespace

TEST(ControlFlowEngine, LoopCarriesValuesAndStacksScanOutputs) {
  auto g = loopGraph();
  ir::verify(*g);
  EXPECT_EQ(g->value(g->outputs()[0]).type.str(), "float32[2]");
  engine::Engine e(*g);
  auto out = e.run(std::vector<Tensor>{Tensor::scalar<int64_t>(3), Tensor::scalar<bool>(true), vec({1, -2})});
  EXPECT_EQ(out[0].data<float>()[0], 4.0f);
  EXPECT_EQ(out[0].data<float>()[1], 1.0f);
  ASSERT_EQ(out[1].shape(), (Shape{3, 2}));
  const float want[] = {0, 0, 2, -1, 6, 0};  // i * v before the step: v = (1,-2), (2,-1), (3,0)
  for (int k = 0; k < 6; ++k) EXPECT_EQ(out[1].data<float>()[k], want[k]) << k;
  auto none = e.run(std::vector<Tensor>{Tensor::scalar<int64_t>(0), Tensor::scalar<bool>(true), vec({1, -2})});
  EXPECT_EQ(none[1].shape(), (Shape{0, 2}));
  auto stopped = e.run(std::vector<Tensor>{Tensor::scalar<int64_t>(5), Tensor::scalar<bool>(false), vec({1, -2})});
  EXPECT_EQ(stopped[0].data<float>()[0], 1.0f);
  EXPECT_NE(errorOf([&] { e.run(std::vector<Tensor>{Tensor::scalar<int64_t>(-1), Tensor::scalar<bool>(true), vec({1, -2})}); })
                .find("the trip count M is negative (-1)"),
            std::string::npos);
}

// Scan before opset 9: batched, sequence_lens per item (zeros past a shorter one), a reversed scanned input. Body: the
// state plus the step, the new state also a scan output.
TEST(ControlFlowEngine, Scan8RunsEachBatchItemToItsLength) {
  auto body = std::make_unique<ir::Graph>();
  body->opset = 8;
  ir::ValueId s_in = body->addValue("s_in", ir::makeType(DType::kF32, {2})).id, x = body->addValue("x_t", ir::makeType(DType::kF32, {2})).id;
  body->inputs() = {s_in, x};
  ir::ValueId s_out = body->addValue("s_out").id, scan = body->addValue("scan").id;
  body->addNode("Add", "add", {s_in, x}, {s_out});
  body->addNode("Identity", "id", {s_out}, {scan});
  body->outputs() = {s_out, scan};
  ir::Graph g;
  g.opset = 8;
  ir::ValueId lens = g.addValue("lens", ir::makeType(DType::kI64, {2})).id, s0 = g.addValue("s0", ir::makeType(DType::kF32, {2, 2})).id;
  ir::ValueId xs = g.addValue("xs", ir::makeType(DType::kF32, {2, 3, 2})).id;
  g.inputs() = {lens, s0, xs};
  ir::ValueId s = g.addValue("s").id, ys = g.addValue("ys").id;
  ir::Node& n = g.addNode("Scan", "scan8", {lens, s0, xs}, {s, ys});
  n.attrs["body"] = ir::Attr(ir::GraphPtr(std::move(body)));
  n.attrs["num_scan_inputs"] = ir::Attr(int64_t{1});
  n.attrs["directions"] = ir::Attr(std::vector<int64_t>{1});
  g.outputs() = {s, ys};
  ops::inferShapes(g);
  EXPECT_EQ(g.value(ys).type.shape, (Shape{2, 3, 2}));
  std::vector<float> xv = {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60};
  auto out = engine::Engine(g).run(std::vector<Tensor>{Tensor::fromVector<int64_t>({2}, {3, 2}), Tensor::fromVector<float>({2, 2}, {0, 0, 1, 1}),
                                                        Tensor::fromVector<float>({2, 3, 2}, xv)});
  // Item 0, reversed over 3 steps: 5 6, 8 10, 9 12. Item 1, reversed over its 2 steps (30 40, then 10 20) from 1 1.
  EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 4), (std::vector<float>{9, 12, 41, 61}));
  EXPECT_EQ(std::vector<float>(out[1].data<float>(), out[1].data<float>() + 12),
            (std::vector<float>{5, 6, 8, 10, 9, 12, 31, 41, 41, 61, 0, 0}));
  EXPECT_NE(errorOf([&] {
              engine::Engine(g).run(std::vector<Tensor>{Tensor::fromVector<int64_t>({2}, {4, 2}), Tensor::fromVector<float>({2, 2}, {0, 0, 1, 1}),
                                                        Tensor::fromVector<float>({2, 3, 2}, xv)});
            }).find("sequence_lens[0] = 4 is outside [0, 3]"),
            std::string::npos);
}

namespace {

/// The cosine of two tensors' values (1 when both are all zeros: nothing to compare).
double cosine(const Tensor& a, const Tensor& b) {
  const auto x = a.toDouble(), y = b.toDouble();
  double dot = 0, nx = 0, ny = 0;
  for (size_t i = 0; i < x.size(); ++i) dot += x[i] * y[i], nx += x[i] * x[i], ny += y[i] * y[i];
  return nx > 0 && ny > 0 ? dot / std::sqrt(nx * ny) : (nx == ny ? 1.0 : 0.0);
}

/// Options translating tests/data/control_flow/NAME.onnx for generic into a scratch folder of its own.
TranslateOptions optionsFor(const std::string& name, const std::string& scratch) {
  TranslateOptions o;
  o.prefix = name;
  o.onnx = kDir / (name + ".onnx");
  o.target = "generic";
  o.out_root = test::scratchDir(scratch);
  return o;
}

std::vector<Tensor> inputsOf(const std::string& name) {
  std::vector<Tensor> in;
  for (int k = 0; fs::exists(kDir / fmt::format("{}.in{}.npy", name, k)); ++k)
    in.push_back(readNpyFile(kDir / fmt::format("{}.in{}.npy", name, k)));
  return in;
}

void expectNear(const std::vector<Tensor>& got, const std::string& name) {
  for (size_t k = 0; k < got.size(); ++k) {
    Tensor want = readNpyFile(kDir / fmt::format("{}.out{}.npy", name, k));
    ASSERT_EQ(got[k].shape(), want.shape()) << name << " output " << k;
    ASSERT_EQ(got[k].dtype(), want.dtype()) << name << " output " << k;
    auto g = got[k].toDouble(), w = want.toDouble();
    double worst = 0;
    for (size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::fabs(g[i] - w[i]) / std::max(1.0, std::fabs(w[i])));
    EXPECT_LT(worst, 1e-5) << name << " output " << k;
  }
}

}  // namespace

class ControlFlowModels : public ::testing::TestWithParam<std::string> {};

TEST_P(ControlFlowModels, EqualPyTorchAndRoundTrip) {
  const std::string name = GetParam();
  Model m = Model::load(kDir / (name + ".onnx"));
  const auto in = inputsOf(name);
  expectNear(Session(m).run(in), name);
  // inspect --save-onnx's path: the model written back as ONNX, checked, imported again: the same outputs.
  auto g = onnx_io::importFile(kDir / (name + ".onnx"));
  std::string bytes = onnx_io::exportBytes(*g);
  onnx_io::checkModelBytes(bytes, name);
  auto back = onnx_io::importBytes(bytes.data(), bytes.size(), name, kDir);
  expectNear(engine::Engine(*back).run(in), name);
}

INSTANTIATE_TEST_SUITE_P(Torch, ControlFlowModels, ::testing::Values("if_data", "if_data_else", "loop_data", "if_const", "nested", "scan_axes"));

// Malformed subgraphs are refused at import with the node, the attribute and the rule.
TEST(ControlFlowModels, MalformedSubgraphsAreClearErrors) {
  auto err = [](const char* name) { return errorOf([&] { Model::load(kDir / (std::string(name) + ".onnx")); }); };
  std::string e = err("bad_undefined");
  EXPECT_NE(e.find("attribute 'else_branch'"), std::string::npos) << e;
  EXPECT_NE(e.find("attribute 'else_branch': node '#0' (Identity) reads 'nowhere', which is not defined in its subgraph "
                   "or any enclosing graph"),
            std::string::npos)
      << e;
  e = err("bad_deep");
  EXPECT_NE(e.find("subgraphs nest deeper than 16 levels"), std::string::npos) << e;
  EXPECT_NE(e.find("node 'deep' (If)"), std::string::npos) << e;
  e = err("bad_graphs");
  EXPECT_NE(e.find("attribute 'extra': lists of subgraphs (GRAPHS) are not supported"), std::string::npos) << e;
}

// Control layers (docs/package-format.md): If, Loop and Scan with computed conditions and trip counts, nested, with
// captures, scan axes and directions, translate for generic; the package equals the engine bit for bit in --exact at
// one thread and in fast mode at two, and PyTorch / numpy within 1e-5.
class ControlFlowPackages : public ::testing::TestWithParam<std::string> {};

TEST_P(ControlFlowPackages, TranslatesAndThePackageEqualsTheEngine) {
  const std::string name = GetParam();
  Model m = Model::load(kDir / (name + ".onnx"));
  EXPECT_TRUE(m.check("generic").empty()) << name;
  TranslateOptions o = optionsFor(name, "control_flow_packages");
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok) << name;
  const auto in = inputsOf(name);
  const std::vector<Tensor> ref = Session(m, 1).run(in);
  for (auto [threads, exact] : {std::pair{1, true}, std::pair{2, false}}) {
    RuntimeOptions ro;
    ro.threads = threads;
    ro.exact = exact;
    Runtime rt(r.dir, ro);
    for (int frame = 0; frame < 2; ++frame) {  // (a second run starts from the same state: the moves set every input)
      rt.run(in);  // (then each output in its own type: run's results are float32)
      for (size_t k = 0; k < ref.size(); ++k)
        EXPECT_TRUE(rt.output(m.outputs()[k].name).sameBits(ref[k])) << name << " output " << k << " threads " << threads;
    }
  }
  expectNear(ref, name);
  // float16 numerics (generic's rules): the same control layers over float16 values; exact and fast agree bit for bit
  // and each float output follows the engine (its float16 rounding).
  const fs::path f16 = o.out_root / "generic_fp16.yaml";
  std::ofstream(f16) << "name: generic_fp16\ninherits: generic\nnumerics: fp16\n";
  o.target = f16.string();
  o.prefix = name + "_fp16";
  TranslateResult h = translate(o);
  ASSERT_TRUE(h.ok) << name;
  Runtime exact(h.dir, RuntimeOptions{1, true}), fast(h.dir, RuntimeOptions{2, false});
  const std::vector<Tensor> a = exact.run(in), b = fast.run(in);
  for (size_t k = 0; k < ref.size(); ++k) {
    EXPECT_TRUE(a[k].sameBits(b[k])) << name << " fp16 output " << k;
    EXPECT_GT(cosine(a[k], ref[k]), 0.9999) << name << " fp16 output " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, ControlFlowPackages, ::testing::Values("if_data", "if_data_else", "loop_data", "nested", "scan_axes"));

// generic-int8 of the Loop holding an If, calibrated on one sample of each input — k a scalar (one sample of a scalar
// input is the scalar itself): exact and fast agree, the outputs follow the float model.
TEST(ControlFlowModels, NestedTranslatesForGenericInt8WithAScalarInput) {
  Model m = Model::load(kDir / "nested.onnx");
  TranslateOptions o = optionsFor("nested", "control_flow_nested_int8");
  o.target = "generic-int8";
  const auto in = inputsOf("nested");
  ASSERT_EQ(in[1].rank(), 0);
  o.calibration = {{"x", {in[0]}}, {"k", {in[1]}}};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  const std::vector<Tensor> a = Runtime(r.dir).run(in), b = Runtime(r.dir, RuntimeOptions{1, true}).run(in), f = Session(m, 1).run(in);
  for (size_t k = 0; k < f.size(); ++k) {
    EXPECT_TRUE(a[k].sameBits(b[k])) << "output " << k;
    EXPECT_GT(cosine(a[k], f[k]), 0.999) << "output " << k;
  }
}

// The time estimate gives a control layer its body's layers once per step: Scan's 5 steps, the Loop's 3 (its If's
// dearer branch inside).
TEST(ControlFlowModels, TheEstimateCountsTheBodyOncePerStep) {
  const target::Target t = target::loadTarget("generic");
  for (auto [name, steps] : {std::pair{"scan_axes", 5}, std::pair{"nested", 3}}) {
    Model m = Model::load(kDir / (std::string(name) + ".onnx")).optimized();
    const ir::Graph& g = graphOf(m);
    const codegen::Estimate e = codegen::estimate(g, t);
    ASSERT_EQ(e.layers.size(), 1u) << name;  // (the control layer: its body is not a row of its own)
    const ir::Node& n = g.node(g.order()[0]);
    const codegen::Estimate body = codegen::estimate(*n.attrGraph("body"), t);
    ASSERT_GT(body.total_us, 0) << name;
    EXPECT_NEAR(e.total_us, e.layers[0].time_us, 1e-9);
    EXPECT_GT(e.layers[0].time_us, steps * body.total_us) << name;
    EXPECT_LT(e.layers[0].time_us, steps * body.total_us + 2.0) << name;  // (plus one vector layer's overhead)
  }
}

// The If's package takes either branch at run time: one package, both inputs.
TEST(ControlFlowModels, OneIfPackageTakesEitherBranch) {
  TranslateOptions o = optionsFor("if_data", "control_flow_if_both");
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  const auto then_in = inputsOf("if_data"), else_in = inputsOf("if_data_else");
  Model m = Model::load(kDir / "if_data.onnx");
  for (const auto* in : {&then_in, &else_in, &then_in}) EXPECT_TRUE(rt.run(*in)[0].sameBits(Session(m, 1).run(*in)[0]));
}

// generic-int8: the convolution before the If in int8, the branches in float between dequantize and quantize layers;
// fast and --exact give the same bits, and the output follows the float model.
TEST(ControlFlowModels, IfTranslatesForGenericInt8) {
  Model m = Model::load(kDir / "if_data.onnx");
  TranslateOptions o = optionsFor("if_data", "control_flow_int8");
  o.target = "generic-int8";
  const auto in = inputsOf("if_data"), other = inputsOf("if_data_else");
  o.calibration[m.inputs()[0].name] = {in[0], other[0]};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  for (const auto* x : {&in, &other}) {
    RuntimeOptions exact;
    exact.exact = true;
    const Tensor a = Runtime(r.dir).run(*x)[0], b = Runtime(r.dir, exact).run(*x)[0];
    EXPECT_TRUE(a.sameBits(b));
    EXPECT_GT(cosine(a, Session(m, 1).run(*x)[0]), 0.99);
  }
}

TEST(ControlFlowModels, ConstantConditionTranslatesAndThePackageEqualsTheEngine) {
  Model m = Model::load(kDir / "if_const.onnx");
  EXPECT_EQ(m.dump().find("If("), std::string::npos) << m.dump();  // inlined at import
  EXPECT_TRUE(m.check("generic").empty());
  TranslateOptions o = optionsFor("if_const", "control_flow_if_const");
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  const auto in = inputsOf("if_const");
  std::vector<Tensor> ref = Session(m, 1).run(in);
  EXPECT_TRUE(Runtime(r.dir).run(in)[0].sameBits(ref[0]));
  expectNear(ref, "if_const");
}
