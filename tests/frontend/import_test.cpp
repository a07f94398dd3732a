// Tests of the ONNX frontend: bad input gives one clear error (file, node, reason), external data, input
// shape overrides, and import -> export -> import with identical outputs.
#include "npuc/model.hpp"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <random>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

const std::string kDigits = std::string(NPUC_SOURCE_DIR) + "/models/digits/digits_cnn.onnx";

std::string readAll(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void addTensorInput(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, bool output = false) {
  auto* vi = output ? g->add_output() : g->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

/// x[1,2] -> op -> y, with an optional initializer.
onnx::ModelProto tinyModel(const std::string& op, int opset, std::vector<int64_t> xdims = {1, 2}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  addTensorInput(g, "x", xdims);
  auto* n = g->add_node();
  n->set_name("the_node");
  n->set_op_type(op);
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

/// Loads bytes and returns the error (fails the test when loading succeeds).
Error loadError(const std::string& bytes) {
  try {
    Model::fromOnnxBytes(bytes, "bad.onnx");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the model loaded";
  return Error(ErrorCode::kInternal, "");
}

bool contains(const Error& e, const std::string& s) { return std::string(e.what()).find(s) != std::string::npos; }

}  // namespace

// Names are text in manifests and reports: one that is not valid UTF-8 would be altered there (two output names made
// one, a package its own reader refuses, written with exit status 0). Refused at import, naming the bytes; an output
// listed twice likewise (issue 46).
TEST(Import, NamesAreValidUtf8AndOutputsListedOnce) {
  for (const std::string& bad : {std::string("y\xff"), std::string("y\xc0\xaf"), std::string("y\xed\xa0\x80"), std::string("y\xe2\x82")}) {
    onnx::ModelProto m = tinyModel("Relu", 13);
    m.mutable_graph()->mutable_node(0)->set_output(0, bad);
    m.mutable_graph()->mutable_output(0)->set_name(bad);
    const Error e = loadError(m.SerializeAsString());
    EXPECT_TRUE(contains(e, "tensor name 'y\\x")) << e.what();
    EXPECT_TRUE(contains(e, "is not valid UTF-8 (byte 1 of the name)")) << e.what();
  }
  onnx::ModelProto ok = tinyModel("Relu", 13);
  ok.mutable_graph()->mutable_node(0)->set_name("r\xc3\xa9lu \xe2\x82\xac \xf0\x9f\x98\x80");  // (é, €, an emoji: valid)
  EXPECT_NO_THROW(Model::fromOnnxBytes(ok.SerializeAsString(), "ok.onnx"));
  ok.mutable_graph()->mutable_node(0)->set_name("relu\x80");
  EXPECT_TRUE(contains(loadError(ok.SerializeAsString()), "node name 'relu\\x80' is not valid UTF-8"));
  onnx::ModelProto twice = tinyModel("Relu", 13);
  *twice.mutable_graph()->add_output() = twice.graph().output(0);
  EXPECT_TRUE(contains(loadError(twice.SerializeAsString()), "graph output 'y' is listed twice"));
}

TEST(Import, TruncatedFile) {
  std::string b = readAll(kDigits);
  Error e = loadError(b.substr(0, b.size() / 3));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(contains(e, "bad.onnx")) << e.what();
}

TEST(Import, CorruptBytes) {
  std::mt19937 rng(1);
  std::string b(4096, '\0');
  for (auto& c : b) c = static_cast<char>(rng());
  Error e = loadError(b);
  EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(contains(e, "bad.onnx"));
}

TEST(Import, UnsupportedOpset) {
  Error e = loadError(tinyModel("Relu", 18).SerializeAsString());
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(contains(e, "opset 18")) << e.what();
}

TEST(Import, UnknownOpNamesTheNode) {
  Error e = loadError(tinyModel("FrobnicateAll", 13).SerializeAsString());
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(contains(e, "node 'the_node' (FrobnicateAll)")) << e.what();
  EXPECT_TRUE(contains(e, "bad.onnx")) << e.what();
}

// QLinearConv / QLinearMatMul are expanded on import (frontend/onnx/qlinear.cpp; their arithmetic is checked by the
// ONNX test data in the conformance allowlist and by tests/python/test_qoperator.py): a malformed one is an error
// naming the node and the rule.
TEST(Import, MalformedQLinearNodesAreNamed) {
  auto conv = tinyModel("QLinearConv", 13);
  for (int i = 0; i < 6; ++i) conv.mutable_graph()->mutable_node(0)->add_input("x");  // 7 inputs
  Error e = loadError(conv.SerializeAsString());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(contains(e, "'the_node'") && contains(e, "QLinearConv takes 8 or 9 inputs and 1 output, not 7 and 1")) << e.what();
  auto mm = tinyModel("QLinearMatMul", 13);
  for (int i = 0; i < 7; ++i) mm.mutable_graph()->mutable_node(0)->add_input(i == 2 ? "" : "x");  // b omitted
  e = loadError(mm.SerializeAsString());
  EXPECT_TRUE(contains(e, "'the_node'") && contains(e, "input 3 (b) of QLinearMatMul is required")) << e.what();
  auto attr = tinyModel("QLinearMatMul", 13);
  for (int i = 0; i < 7; ++i) attr.mutable_graph()->mutable_node(0)->add_input("x");
  auto* a = attr.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("transA");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  e = loadError(attr.SerializeAsString());
  EXPECT_TRUE(contains(e, "QLinearMatMul has no attribute 'transA'")) << e.what();
}

TEST(Import, MissingInitializerNamesTheNodeAndInput) {
  auto m = tinyModel("Add", 13);
  m.mutable_graph()->mutable_node(0)->add_input("B_missing");
  Error e = loadError(m.SerializeAsString());
  EXPECT_TRUE(e.code() == ErrorCode::kInvalidInput) << e.what();
  EXPECT_TRUE(contains(e, "B_missing")) << e.what();
}

TEST(Import, InconsistentShapes) {
  auto m = tinyModel("Add", 13, {2, 3});
  auto* g = m.mutable_graph();
  addTensorInput(g, "b", {4, 5});
  g->mutable_node(0)->add_input("b");
  Error e = loadError(m.SerializeAsString());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(contains(e, "bad.onnx")) << e.what();
}

TEST(Import, InputShapeOverrideAndDefaultBatch) {
  Model m = Model::load(kDigits);
  EXPECT_EQ(m.inputs()[0].shape, (Shape{1, 1, 8, 8}));  // dynamic batch -> 1
  LoadOptions lo;
  lo.input_shapes["input"] = {5, 1, 8, 8};
  Model m5 = Model::load(kDigits, lo);
  EXPECT_EQ(m5.outputs()[0].shape, (Shape{5, 10}));
  lo.input_shapes = {{"nope", {1}}};
  EXPECT_THROW(Model::load(kDigits, lo), Error);
}

TEST(Import, ExportImportGivesIdenticalOutputs) {
  LoadOptions lo;
  lo.input_shapes["input"] = {4, 1, 8, 8};
  Model m = Model::load(kDigits, lo);
  Tensor x = readNpyFile(std::string(NPUC_SOURCE_DIR) + "/models/digits/test_x.npy");
  Tensor batch(DType::kF32, {4, 1, 8, 8});
  std::memcpy(batch.raw(), x.raw(), batch.nbytes());
  auto a = Session(m).run({{"input", batch}});
  std::string bytes = m.toOnnxBytes();
  EXPECT_NO_THROW(checkOnnx(bytes, "exported"));
  Model back = Model::fromOnnxBytes(bytes, "exported", lo);
  auto b = Session(back).run({{"input", batch}});
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(a[0].sameBits(b[0]));
  // And without folding/optimisation: the raw import exports and loads back too.
  LoadOptions raw = lo;
  raw.resolve = false;
  Model r = Model::load(kDigits, raw);
  std::string rb = r.toOnnxBytes();
  EXPECT_NO_THROW(checkOnnx(rb, "exported raw"));
  EXPECT_TRUE(Session(Model::fromOnnxBytes(rb, "raw", lo)).run({{"input", batch}})[0].sameBits(a[0]));
}

TEST(Import, ExternalDataWeights) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(readAll(kDigits)));
  fs::path dir = fs::temp_directory_path() / ("npuc_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream data(dir / "weights.bin", std::ios::binary);
  int64_t offset = 0;
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (!t.has_raw_data()) continue;
    data.write(t.raw_data().data(), static_cast<std::streamsize>(t.raw_data().size()));
    auto add = [&](const char* k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", "weights.bin");
    add("offset", std::to_string(offset));
    add("length", std::to_string(t.raw_data().size()));
    offset += static_cast<int64_t>(t.raw_data().size());
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
  }
  data.close();
  std::ofstream(dir / "model.onnx", std::ios::binary) << m.SerializeAsString();
  Tensor x(DType::kF32, {1, 1, 8, 8});
  for (int i = 0; i < 64; ++i) x.data<float>()[i] = static_cast<float>(i % 7) / 7.0f;
  auto want = Session(Model::load(kDigits)).run({{"input", x}});
  auto got = Session(Model::load(dir / "model.onnx")).run({{"input", x}});
  EXPECT_TRUE(want[0].sameBits(got[0]));
  // A truncated data file is a clear error, not a crash.
  fs::resize_file(dir / "weights.bin", static_cast<uintmax_t>(offset / 2));
  try {
    Model::load(dir / "model.onnx");
    FAIL() << "truncated external data accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("external data"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// The bad-input campaign (issue 22): each of these was accepted before.
TEST(Import, ExternalDataDoesNotFollowLinksOutOfTheModelsFolder) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(readAll(kDigits)));
  fs::path dir = fs::temp_directory_path() / ("npuc_ext_link_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  // A 4x4 float initializer read from "w.bin" inside the folder, which is a link to a file outside it.
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("leak");
  t->set_data_type(onnx::TensorProto::UINT8);
  t->add_dims(16);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = t->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  std::ofstream(dir / "model.onnx", std::ios::binary) << m.SerializeAsString();
  fs::path outside = fs::temp_directory_path() / ("npuc_ext_secret_" + std::to_string(::getpid()));
  std::ofstream(outside) << "0123456789abcdef";
  fs::create_symlink(outside, dir / "w.bin");
  try {
    Model::load(dir / "model.onnx");
    ADD_FAILURE() << "followed a link out of the model's folder";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kInvalidInput);
    EXPECT_TRUE(contains(err, "outside the model's folder")) << err.what();
  }
  // A link that stays inside the folder is fine.
  fs::rename(outside, dir / "sub" / "real.bin");
  fs::remove(dir / "w.bin");
  fs::create_symlink(dir / "sub" / "real.bin", dir / "w.bin");
  EXPECT_NO_THROW(Model::load(dir / "model.onnx"));
  fs::remove_all(dir);
}

TEST(Import, HeaderFieldsAreChecked) {
  {
    auto m = tinyModel("Relu", 13);
    m.mutable_opset_import(0)->set_version(-1);  // was taken as opset 17
    Error e = loadError(m.SerializeAsString());
    EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
    EXPECT_TRUE(contains(e, "ai.onnx version -1 is not an opset version")) << e.what();
  }
  {
    auto m = tinyModel("Relu", 13);
    m.set_ir_version(99);
    Error e = loadError(m.SerializeAsString());
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_TRUE(contains(e, "ir_version 99 is newer than npuc reads")) << e.what();
    m.clear_ir_version();
    EXPECT_TRUE(contains(loadError(m.SerializeAsString()), "ir_version 0 is not a valid")) << e.what();
  }
  {
    auto m = tinyModel("Relu", 13);
    auto* os = m.add_opset_import();
    os->set_domain("ai.onnx");
    os->set_version(12);
    EXPECT_TRUE(contains(loadError(m.SerializeAsString()), "names the ai.onnx domain twice"));
  }
  {
    auto m = tinyModel("Add", 13);
    m.mutable_graph()->mutable_node(0)->add_input("b");
    for (float v : {1.0f, 2.0f}) {  // last one won
      auto* t = m.mutable_graph()->add_initializer();
      t->set_name("b");
      t->set_data_type(onnx::TensorProto::FLOAT);
      t->add_float_data(v);
    }
    Error e = loadError(m.SerializeAsString());
    EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
    EXPECT_TRUE(contains(e, "two initializers are named 'b'")) << e.what();
  }
}

TEST(Engine, OutputsAreBitIdenticalAtEveryThreadCount) {
  std::vector<std::string> models = {kDigits};
  for (const char* p : {"swish", "mish", "hardswish_op13", "relu6", "gap_avgpool", "flatten_view", "pad_maxpool"})
    models.push_back(std::string(NPUC_SOURCE_DIR) + "/tests/data/patterns/" + p + ".onnx");
  for (auto& path : models) {
    for (bool optimized : {false, true}) {
      Model m = Model::load(path);
      if (optimized) m = m.optimized();
      std::map<std::string, Tensor> in;
      for (auto& i : m.inputs()) {
        Tensor t(i.dtype, i.shape);
        for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = static_cast<float>((k * 7919) % 257) / 64.0f - 2.0f;
        in[i.name] = t;
      }
      auto ref = Session(m, 1).run(in);
      for (int threads : {2, 3}) {
        auto got = Session(m, threads).run(in);
        for (size_t o = 0; o < ref.size(); ++o) EXPECT_TRUE(ref[o].sameBits(got[o])) << path << " threads " << threads;
      }
    }
  }
}
