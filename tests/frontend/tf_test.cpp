// Tests of the TensorFlow frontend: every graph of tests/data/tf against its oracle (OpenCV's dnn module, or numpy
// written from TensorFlow's semantics where OpenCV does not run it: the outputs stored by tests/data/tf/generate.py),
// the layout (a MobileNet-shaped graph keeps only its boundary transposes), and bad input (one clear error naming
// the file, the node and the rule; never a crash).
#include "npuc/model.hpp"

#include "frontend/onnx/onnx_io.hpp"
#include "frontend/tf/tf_io.hpp"
#include "ir/graph.hpp"
#include "frontend/frontend_test_util.hpp"
#include "scratch_dir.hpp"
#include "tf_graph.pb.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

using namespace npuc;
namespace fs = std::filesystem;

#define EXPECT_HAS(err, text) EXPECT_NE(std::string((err).what()).find(text), std::string::npos) << (err).what()

namespace {

const fs::path kData = fs::path(NPUC_SOURCE_DIR) / "tests/data/tf";

using test::readAll;

/// A stored graph loaded as the CLI loads it (resolved; optimized or not).
Model load(const fs::path& pb, bool optimize = true, const LoadOptions& base = {}) {
  LoadOptions o = base;
  o.optimize = optimize;
  return Model::load(pb, o);
}

/// The largest |a - b| / max(|b|, 1), and the largest |a - b|, over two tensors of one shape (as float).
std::pair<double, double> errors(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shapeStr(a.shape()), shapeStr(b.shape()));
  if (a.shape() != b.shape()) return {INFINITY, INFINITY};
  std::vector<double> x = a.toDouble(), y = b.toDouble();
  double rel = 0, abs = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    abs = std::max(abs, std::abs(x[i] - y[i]));
    rel = std::max(rel, std::abs(x[i] - y[i]) / std::max(1.0, std::abs(y[i])));
  }
  return {rel, abs};
}

using Case = test::OracleCase;  // (stored inputs and the oracle's outputs, by tensor name)

Case readCase(const std::string& name) { return test::readOracleCase(kData / name); }

const std::vector<std::string> kGraphs = {"conv", "conv_dilated", "depthwise", "pooling", "batch_norm", "eltwise",
                                          "math", "shapes_cv", "shapes", "matmul", "resize", "deconv",
                                          "strided_slice", "nchw", "mobilenet", "fused", "misc"};

class TfOracle : public ::testing::TestWithParam<std::string> {};

// npuc's outputs equal the oracle's within 1e-5 relative, as imported and optimized as translate runs it.
TEST_P(TfOracle, MatchesOracle) {
  Case c = readCase(GetParam());
  ASSERT_FALSE(c.expected.empty());
  for (bool optimize : {false, true}) {
    Model m = load(kData / c.name / "model.pb", optimize);
    std::vector<Tensor> outs = Session(m).run(c.inputs);
    ASSERT_EQ(outs.size(), m.outputs().size());
    size_t seen = 0;
    for (size_t i = 0; i < outs.size(); ++i) {
      auto it = c.expected.find(m.outputs()[i].name);
      if (it == c.expected.end()) continue;
      ++seen;
      auto [rel, abs] = errors(outs[i], it->second);
      EXPECT_LE(rel, 1e-5) << c.name << ": output '" << it->first << "'" << (optimize ? " (optimized)" : "");
      if (!optimize)
        std::printf("[tf] %-14s %-14s max abs error %.3g, max relative error %.3g\n", c.name.c_str(), it->first.c_str(), abs, rel);
    }
    EXPECT_EQ(seen, c.expected.size()) << c.name << ": an oracle output is not among the graph's outputs";
  }
}

INSTANTIATE_TEST_SUITE_P(Graphs, TfOracle, ::testing::ValuesIn(kGraphs));

// The graph's interface keeps the model's own NHWC shapes; an unknown batch is default_batch or --input-shape.
TEST(Tf, InterfaceShapesAreTheModels) {
  Model m = load(kData / "mobilenet/model.pb");
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "input");
  EXPECT_EQ(m.inputs()[0].shape, (Shape{1, 32, 32, 3}));
  ASSERT_EQ(m.outputs().size(), 1u);
  EXPECT_EQ(m.outputs()[0].name, "prob");
  EXPECT_EQ(m.outputs()[0].shape, (Shape{1, 10}));
  LoadOptions lo;
  lo.default_batch = 3;
  EXPECT_EQ(load(kData / "mobilenet/model.pb", true, lo).outputs()[0].shape, (Shape{3, 10}));
  LoadOptions shp;
  shp.input_shapes["input"] = {2, 32, 32, 3};
  EXPECT_EQ(load(kData / "mobilenet/model.pb", true, shp).outputs()[0].shape, (Shape{2, 10}));
  Model conv = load(kData / "conv/model.pb");
  EXPECT_EQ(conv.outputs()[0].shape, (Shape{1, 5, 5, 5}));  // NHWC, as TensorFlow gives it
}

/// Transposes in a graph: (count, of which rank-4 boundary ones).
int transposes(const ir::Graph& g) {
  int n = 0;
  for (ir::NodeId id : g.order()) n += g.node(id).op == "Transpose";
  return n;
}

// Channels-first inside: the MobileNet-shaped graph keeps its one input Transpose (its output is 2-D), every other
// layer channels-first, no Transpose pair around any layer.
TEST(Tf, MobileNetKeepsOnlyTheBoundaryTransposes) {
  auto g = tf_io::importFile(kData / "mobilenet/model.pb");
  EXPECT_EQ(transposes(*g), 1);  // the input's (weights are permuted at import)
  Model m = load(kData / "mobilenet/model.pb");
  std::unique_ptr<ir::Graph> opt = onnx_io::importBytes(m.toOnnxBytes().data(), m.toOnnxBytes().size(), "m.onnx", ".");
  int count = transposes(*opt);
  EXPECT_LE(count, 2);
  std::printf("[tf] mobilenet: %d Transpose(s) after optimization\n", count);
  int convs = 0;
  for (ir::NodeId id : opt->order()) convs += opt->node(id).op == "Conv";
  EXPECT_EQ(convs, 7);
}

// The same graph through npuc's ONNX export and the ONNX frontend gives the same outputs bit for bit.
TEST(Tf, SameOutputsAsOnnx) {
  for (const char* name : {"conv", "depthwise", "pooling", "batch_norm", "shapes_cv", "mobilenet"}) {
    Case c = readCase(name);
    Model tf = load(kData / name / "model.pb");
    Model onnx = Model::fromOnnxBytes(tf.toOnnxBytes(), std::string(name) + ".onnx");
    std::vector<Tensor> a = Session(tf).run(c.inputs), b = Session(onnx).run(c.inputs);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].nbytes(), b[i].nbytes());
      EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << name << " output " << i;
    }
  }
}

// docs/frontends.md's table of TensorFlow ops is the importer's list: one row per op it imports, no other.
TEST(Tf, DocumentedOpsAreTheImportersTable) {
  std::vector<std::string> imported = tf_io::supportedOps();
  std::sort(imported.begin(), imported.end());
  EXPECT_EQ(test::documentedOps("| TensorFlow op |"), imported);
}

// Every op the importer maps is in a stored test graph (compared with its oracle by MatchesOracle).
TEST(Tf, EveryImportedOpHasATestGraph) {
  std::set<std::string> used;
  for (const std::string& name : kGraphs) {
    npuc::tf::GraphDef g;
    ASSERT_TRUE(g.ParseFromString(readAll(kData / name / "model.pb"))) << name;
    for (const auto& n : g.node()) used.insert(n.op());
  }
  for (const std::string& op : tf_io::supportedOps()) EXPECT_TRUE(used.count(op)) << op << " is in no test graph";
}

// --- bad input ---

/// A graph written here: nodes added one by one.
struct GraphText {
  npuc::tf::GraphDef g;
  npuc::tf::NodeDef* node(const std::string& name, const std::string& op, std::vector<std::string> ins = {}) {
    npuc::tf::NodeDef* n = g.add_node();
    n->set_name(name);
    n->set_op(op);
    for (auto& i : ins) n->add_input(i);
    return n;
  }
  void placeholder(const std::string& name, const Shape& s) {
    auto* n = node(name, "Placeholder");
    (*n->mutable_attr())["dtype"].set_type(npuc::tf::DT_FLOAT);
    for (int64_t d : s) (*n->mutable_attr())["shape"].mutable_shape()->add_dim()->set_size(d);
  }
  void ints(const std::string& name, const std::vector<int64_t>& v) {
    auto& t = *(*node(name, "Const")->mutable_attr())["value"].mutable_tensor();
    t.set_dtype(npuc::tf::DT_INT64);
    t.mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t.add_int64_val(x);
  }
  std::string bytes() const { return g.SerializeAsString(); }
};

Error importError(const std::string& bytes, const std::string& name = "bad.pb") {
  try {
    tf_io::importBytes(bytes.data(), bytes.size(), name);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the graph loaded";
  return Error(ErrorCode::kInternal, "");
}

TEST(TfBadInput, GarbageAndTruncatedFiles) {
  Error e = importError("this is not a graph at all \xff\xff\xff\xff");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
  EXPECT_HAS(e, "bad.pb");
  EXPECT_HAS(e, "not a valid TensorFlow GraphDef");
  std::string full = readAll(kData / "mobilenet/model.pb");
  for (size_t cut : {size_t{0}, size_t{1}, full.size() / 3, full.size() / 2, full.size() - 1}) {
    try {
      tf_io::importBytes(full.data(), cut, "cut.pb");
      ADD_FAILURE() << "a graph cut at " << cut << " loaded";
    } catch (const Error& err) {
      EXPECT_HAS(err, "cut.pb");
    }
  }
}

TEST(TfBadInput, DanglingCyclicAndDuplicateNodes) {
  GraphText t;
  t.placeholder("x", {1, 4});
  t.node("r", "Relu", {"nope"});
  Error dangling = importError(t.bytes());
  EXPECT_HAS(dangling, "node 'r' (Relu)");
  EXPECT_HAS(dangling, "input 0 'nope' names no node");
  GraphText c;
  c.placeholder("x", {1, 4});
  c.node("a", "Relu", {"b"});
  c.node("b", "Relu", {"a"});
  c.node("out", "Relu", {"a"});
  Error cyc = importError(c.bytes());
  EXPECT_HAS(cyc, "a cycle");
  GraphText d;
  d.placeholder("x", {1, 4});
  d.node("x", "Relu", {"x"});
  EXPECT_HAS(importError(d.bytes()), "a second node of this name");
  GraphText k;
  k.placeholder("x", {1, 4});
  k.node("r", "Relu", {"x:3"});
  EXPECT_HAS(importError(k.bytes()), "reads output 3 of node 'x' (Placeholder), which it does not have");
  GraphText bad;
  bad.placeholder("x", {1, 4});
  bad.node("r", "Relu", {"x:abc"});
  EXPECT_HAS(importError(bad.bytes()), "is not 'node' or 'node:output'");
}

// The text form (.pbtxt) reads as the binary one; a text error names its line.
TEST(Tf, TextForm) {
  std::string bytes = readAll(kData / "mobilenet/model.pb");
  npuc::tf::GraphDef gd;
  ASSERT_TRUE(gd.ParseFromString(bytes));
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(gd, &text));
  fs::path d = test::scratchDir("pbtxt");
  std::ofstream(d / "m.pbtxt") << text;
  Model m = Model::load(d / "m.pbtxt");
  Case c = readCase("mobilenet");
  std::vector<Tensor> y = Session(m).run(c.inputs);
  EXPECT_LE(errors(y[0], c.expected.at("prob")).first, 1e-5);
  try {
    tf_io::importText("node { name: \"x\" op: ", "bad.pbtxt");
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_HAS(e, "bad.pbtxt: not a valid TensorFlow GraphDef in text form: line 1:");
  }
}

TEST(TfBadInput, ControlInputsAreIgnored) {
  GraphText t;
  t.placeholder("x", {1, 4});
  t.node("init", "NoOp");
  t.node("r", "Relu", {"x", "^init"});
  auto g = tf_io::importBytes(t.bytes().data(), t.bytes().size(), "ctrl.pb");
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->value(g->outputs()[0]).name, "r");
}

TEST(TfBadInput, UnknownOpsAndMissingAttrs) {
  GraphText t;
  t.placeholder("x", {1, 4});
  t.node("e", "Erf", {"x"});
  Error op = importError(t.bytes());
  EXPECT_EQ(op.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(op, "node 'e' (Erf)");
  EXPECT_HAS(op, "not one npuc imports (it imports: Placeholder");
  GraphText a;
  a.placeholder("x", {1, 6, 6, 2});
  a.node("pool", "MaxPool", {"x"});
  Error attr = importError(a.bytes());
  EXPECT_HAS(attr, "node 'pool' (MaxPool)");
  EXPECT_HAS(attr, "attr 'ksize' (list(int)) is missing");
  GraphText bn;
  bn.placeholder("x", {1, 2, 2, 1});
  for (const char* s : {"g", "b", "m", "v"}) {
    auto* n = bn.node(s, "Const");
    auto& v = (*n->mutable_attr())["value"];
    v.mutable_tensor()->set_dtype(npuc::tf::DT_FLOAT);
    v.mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(1);
    v.mutable_tensor()->add_float_val(1.0f);
  }
  bn.node("bn", "FusedBatchNorm", {"x", "g", "b", "m", "v"});
  Error train = importError(bn.bytes());
  EXPECT_EQ(train.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(train, "is_training");
  GraphText none;
  none.node("x", "Placeholder");
  none.node("r", "Relu", {"x"});
  EXPECT_HAS(importError(none.bytes()), "attr 'dtype' (type) is missing");
}

TEST(TfBadInput, HugeCountsAndSizes) {
  GraphText t;
  t.placeholder("x", {1, 1 << 20, 1 << 20, 1 << 20});
  t.node("r", "Relu", {"x"});
  EXPECT_HAS(importError(t.bytes()), "is too large");
  GraphText c;
  c.placeholder("x", {1, 4});
  auto* k = c.node("k", "Const");
  auto& v = (*k->mutable_attr())["value"];
  v.mutable_tensor()->set_dtype(npuc::tf::DT_FLOAT);
  v.mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(4);
  v.mutable_tensor()->set_tensor_content(std::string(12, '\0'));
  c.node("a", "Add", {"x", "k"});
  Error content = importError(c.bytes());
  EXPECT_HAS(content, "node 'k' (Const)");
  EXPECT_HAS(content, "tensor_content has 12 bytes");
  GraphText fill;  // one value filling 2^30 elements
  fill.placeholder("x", {1, 4});
  auto* f = fill.node("k", "Const");
  auto& fv = (*f->mutable_attr())["value"];
  fv.mutable_tensor()->set_dtype(npuc::tf::DT_FLOAT);
  fv.mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 30);
  fv.mutable_tensor()->add_float_val(1.0f);
  fill.node("a", "Add", {"x", "k"});
  EXPECT_HAS(importError(fill.bytes()), "elements npuc fills from a short list");
  GraphText u;
  u.placeholder("x", {1, -1, 4});
  u.node("r", "Relu", {"x"});
  EXPECT_HAS(importError(u.bytes()), "give it with --input-shape x=");
}

// Strides beyond an axis take one element, as TensorFlow does (no overflow in the arithmetic).
TEST(TfBadInput, ExtremeStridedSliceValues) {
  GraphText t;
  t.placeholder("x", {2, 5});
  t.ints("b", {0, INT64_MIN});
  t.ints("e", {2, INT64_MAX});
  t.ints("s", {1, INT64_MAX});
  t.node("ss", "StridedSlice", {"x", "b", "e", "s"});
  auto g = tf_io::importBytes(t.bytes().data(), t.bytes().size(), "ss.pb");
  EXPECT_EQ(g->value(g->outputs()[0]).type.shape, (Shape{2, 1}));
  GraphText n;
  n.placeholder("x", {2, 5});
  n.ints("b", {0, INT64_MAX});
  n.ints("e", {2, INT64_MIN});
  n.ints("s", {1, INT64_MIN});
  n.node("ss", "StridedSlice", {"x", "b", "e", "s"});
  auto h = tf_io::importBytes(n.bytes().data(), n.bytes().size(), "ss.pb");
  EXPECT_EQ(h->value(h->outputs()[0]).type.shape, (Shape{2, 1}));
}

// Randomly damaged graphs (bytes changed, cut, repeated): every outcome is a graph or an npuc::Error — the fuzz
// target's property (fuzz/fuzz_tf_loader.cpp), checked here on every build.
TEST(TfBadInputRandom, DamagedFilesGiveErrorsNotCrashes) {
  std::mt19937 rng(50);
  int loaded = 0, refused = 0;
  for (const std::string& name : kGraphs) {
    const std::string bytes = readAll(kData / name / "model.pb");
    for (int i = 0; i < 60; ++i) {
      const std::string b = test::damaged(bytes, rng);
      try {
        auto g = tf_io::importBytes(b.data(), b.size(), "x.pb");
        ++loaded;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  std::printf("[tf] damaged files: %d loaded, %d refused with an error\n", loaded, refused);
  EXPECT_GT(refused, 0);
}

}  // namespace
