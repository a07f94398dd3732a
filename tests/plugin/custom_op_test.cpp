// Custom-op plugins (docs/custom-ops.md): registration, the engine, translation and the simulator with a correct
// plugin, and a clear error naming the plugin and the op for each way a plugin can be wrong (tests/plugin/
// test_plugin.cpp, built once per fault).
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "package/package.hpp"
#include "support/fp16.hpp"
#include "scratch_dir.hpp"

#include <npuc/openvx_compat.h>  // (also compiled as C++ here)

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <dlfcn.h>
#include <elf.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <variant>

namespace npuc {
namespace {

namespace fs = std::filesystem;

fs::path pluginPath(const std::string& fault) { return fs::path(NPUC_TEST_PLUGIN_DIR) / ("libnpuc_test_plugin_" + fault + ".so"); }

/// x [1, 3, 4, 5] -> Relu -> <domain>.ScaleBias(scale, bias [3]) -> y; `edit` changes the model before it is written.
std::string model(const std::string& domain, const std::string& op = "ScaleBias",
                  const std::function<void(onnx::ModelProto&)>& edit = {}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  if (!domain.empty()) {
    auto* os = m.add_opset_import();
    os->set_domain(domain);
    os->set_version(1);
  }
  auto* g = m.mutable_graph();
  g->set_name("custom");
  auto io = [&](onnx::ValueInfoProto* v, const char* name) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1, 3, 4, 5}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  io(g->add_input(), "x");
  io(g->add_output(), "y");
  auto* b = g->add_initializer();
  b->set_name("bias");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(3);
  for (float v : {0.5f, -1.25f, 3.0f}) b->add_float_data(v);
  auto* r = g->add_node();
  r->set_name("relu");
  r->set_op_type("Relu");
  r->add_input("x");
  r->add_output("r");
  auto* n = g->add_node();
  n->set_name("scale_bias");
  n->set_op_type(op);
  n->set_domain(domain);
  n->add_input("r");
  n->add_input("bias");
  n->add_output("y");
  auto* a = n->add_attribute();
  a->set_name("scale");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(1.75f);
  if (edit) edit(m);
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

Tensor input() {
  Tensor x(DType::kF32, {1, 3, 4, 5});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  return x;
}

/// What the op computes, written here independently of the plugin.
Tensor expected(const Tensor& x) {
  Tensor y(DType::kF32, x.shape());
  const float bias[3] = {0.5f, -1.25f, 3.0f};
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = std::max(x.data<float>()[i], 0.0f) * 1.75f + bias[(i / 20) % 3];
  return y;
}

/// The same in a float16 package: the input stored as float16, the op's float32 result rounded to float16 (the
/// bias, a tensor parameter, kept as the model's float32), read back widened.
Tensor expectedF16(const Tensor& x) {
  Tensor y(DType::kF32, x.shape());
  const float bias[3] = {0.5f, -1.25f, 3.0f};
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float r = std::max(halfToFloat(floatToHalf(x.data<float>()[i])), 0.0f);
    y.data<float>()[i] = halfToFloat(floatToHalf(r * 1.75f + bias[(i / 20) % 3]));
  }
  return y;
}

/// The model of `domain` written to dir/custom.onnx and translated for generic into dir/p.
bool translateGeneric(const fs::path& dir, const std::string& domain, const std::function<void(onnx::ModelProto&)>& edit = {}) {
  std::ofstream(dir / "custom.onnx", std::ios::binary) << model(domain, "ScaleBias", edit);
  TranslateOptions o;
  o.prefix = "p";
  o.onnx = dir / "custom.onnx";
  o.target = "generic";
  o.out_root = dir;
  return translate(o).ok;
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string readAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(CustomOp, RunsOnTheEngineWithTheBitsOfItsDefinition) {
  auto ops = registerCustomOp(pluginPath("good"));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "ScaleBias");
  EXPECT_EQ(ops[0].domain, "test.good");
  EXPECT_EQ(registerCustomOp(pluginPath("good")).size(), 1u);  // again: nothing changes
  Model m = Model::fromOnnxBytes(model("test.good"), "custom.onnx");
  Session s(m);
  const Tensor x = input();
  EXPECT_TRUE(s.run({x})[0].sameBits(expected(x)));
  EXPECT_TRUE(m.check("generic").empty());
  EXPECT_TRUE(m.check("drpai").empty());
}

TEST(CustomOp, TranslatesToACustomLayerTheSimulatorRunsAndTheSamePackageTwice) {
  registerCustomOp(pluginPath("good"));
  const fs::path dir = test::scratchDir("custom_op_translate");
  const fs::path onnx = dir / "custom.onnx";
  std::ofstream(onnx, std::ios::binary) << model("test.good");
  const Tensor x = input();
  for (const std::string target : {"generic", "drpai"}) {
    for (const std::string root : {"a", "b"}) {
      TranslateOptions o;
      o.prefix = "p";
      o.onnx = onnx;
      o.target = target;
      o.out_root = dir / target / root;
      TranslateResult r = translate(o);
      ASSERT_TRUE(r.ok) << target;
      const std::string manifest = readAll(r.dir / "manifest.json");
      EXPECT_NE(manifest.find("\"library\": \"libnpuc_test_plugin_good.so\""), std::string::npos);
      EXPECT_NE(manifest.find("\"kind\": \"custom\""), std::string::npos);
      const package::Package p = package::readPackage(r.dir);
      bool found = false;
      for (const package::LayerInfo& l : p.layers)
        if (l.custom) {
          found = true;
          EXPECT_EQ(l.custom->op, "ScaleBias");
          EXPECT_EQ(l.custom->domain, "test.good");
          EXPECT_EQ(l.custom->params.size(), 2u);
          EXPECT_EQ(l.custom->params[0].f, 1.75);
          EXPECT_EQ(l.custom->params[1].input, 1);  // the bias: the descriptor's input 1, in the weights
        }
      EXPECT_TRUE(found);
      for (bool exact : {false, true}) {
        Runtime rt(r.dir, RuntimeOptions{2, exact, false});
        Tensor y = rt.run({x})[0];
        if (target == "generic") EXPECT_TRUE(y.sameBits(expected(x))) << "exact " << exact;
        else EXPECT_TRUE(y.sameBits(expectedF16(x))) << "exact " << exact;
      }
    }
    // Same inputs and options: the same bytes, file by file.
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(dir / target / "a" / "p")) {
      if (e.path().extension() == ".xlsx") continue;  // (the summary workbook is not part of the package)
      EXPECT_EQ(readAll(e.path()), readAll(dir / target / "b" / "p" / e.path().filename())) << e.path();
      ++files;
    }
    EXPECT_GT(files, 10u);
  }
}

// An op with two outputs in a model that uses the first: the engine and the package compute the second into scratch
// memory (the plugin writes both), and the package's layer holds the first.
TEST(CustomOp, AnOutputTheNodeDoesNotUseStillGetsItsBuffer) {
  registerCustomOp(pluginPath("twoout"));
  const fs::path dir = test::scratchDir("custom_op_twoout");
  const Tensor x = input();
  ASSERT_TRUE(translateGeneric(dir, "test.twoout"));
  EXPECT_TRUE(Session(Model::load(dir / "custom.onnx")).run({x})[0].sameBits(expected(x)));
  Runtime rt(dir / "p");
  EXPECT_TRUE(rt.run({x})[0].sameBits(expected(x)));
}

/// The multiout op's node writing y, sq and csum: graph outputs y, z = sq + y (an Add reads a later output) and
/// csum ([1, 3]); `leave` > 0 is its parameter (csum's last elements left unwritten).
std::function<void(onnx::ModelProto&)> threeOutputs(int64_t leave = 0) {
  return [leave](onnx::ModelProto& m) {
    auto* g = m.mutable_graph();
    auto* n = g->mutable_node(1);
    n->add_output("sq");
    n->add_output("csum");
    if (leave) {
      auto* a = n->add_attribute();
      a->set_name("leave");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(leave);
    }
    auto* add = g->add_node();
    add->set_name("add");
    add->set_op_type("Add");
    add->add_input("sq");
    add->add_input("y");
    add->add_output("z");
    for (auto [name, dims] : {std::pair<const char*, std::vector<int64_t>>{"z", {1, 3, 4, 5}}, {"csum", {1, 3}}}) {
      auto* v = g->add_output();
      v->set_name(name);
      auto* tt = v->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnx::TensorProto::FLOAT);
      for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
  };
}

// A custom op of several outputs is one package layer writing them all (issue 47.11): descriptor n_out 3, the
// manifest's "outputs", every output the engine's bits in fast and exact mode, the trace naming each output.
TEST(CustomOp, ALayerOfSeveralOutputsWritesEachWithTheEnginesBits) {
  registerCustomOp(pluginPath("multiout"));
  const fs::path dir = test::scratchDir("custom_op_multiout");
  ASSERT_TRUE(translateGeneric(dir, "test.multiout", threeOutputs()));
  const Tensor x = input();
  const std::vector<Tensor> ref = Session(Model::load(dir / "custom.onnx")).run({x});
  ASSERT_EQ(ref.size(), 3u);
  ASSERT_EQ(ref[2].shape(), (Shape{1, 3}));
  EXPECT_TRUE(ref[0].sameBits(expected(x)));
  const std::string manifest = readAll(dir / "p" / "manifest.json");
  EXPECT_NE(manifest.find("\"outputs\": [\"y\", \"sq\", \"csum\"]"), std::string::npos) << manifest;
  const package::Package p = package::readPackage(dir / "p");
  int custom = 0;
  for (const package::LayerInfo& l : p.layers)
    if (l.custom) {
      ++custom;
      const package::Descriptor& d = (l.engine == package::Engine::kMac ? p.mac : p.vec)[l.index];
      EXPECT_EQ(d.n_out, 3);
      EXPECT_EQ(d.n_in, 2);
      EXPECT_EQ(l.output, "y");
      EXPECT_EQ(l.extra_outputs, (std::vector<std::string>{"sq", "csum"}));
      EXPECT_EQ(d.out(2).rank, 2);
    }
  EXPECT_EQ(custom, 1);
  for (bool exact : {false, true}) {
    Runtime rt(dir / "p", RuntimeOptions{2, exact, false});
    std::vector<std::string> traced;
    const std::vector<Tensor> y = rt.run({x}, [&](const RuntimeLayer& l, const Tensor& t) {
      if (l.kind != "custom") return;
      traced.push_back(l.output.name + "#" + std::to_string(l.output_index) + ":" + std::to_string(t.numel()));
      EXPECT_EQ(l.more_outputs.size(), 2u);
    });
    ASSERT_EQ(y.size(), 3u);
    for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(y[k].sameBits(ref[k])) << "output " << k << " exact " << exact;
    EXPECT_EQ(traced, (std::vector<std::string>{"y#0:60", "sq#1:60", "csum#2:3"}));
  }
  // The same model and plugin: the same package bytes.
  const fs::path again = test::scratchDir("custom_op_multiout_again");
  ASSERT_TRUE(translateGeneric(again, "test.multiout", threeOutputs()));
  EXPECT_EQ(readAll(dir / "p" / "manifest.json"), readAll(again / "p" / "manifest.json"));
}

// The first-call check covers every output of the layer: one the plugin leaves partly unwritten is named.
TEST(CustomOp, APartlyWrittenLaterOutputIsRefusedByTheRuntime) {
  registerCustomOp(pluginPath("multiout"));
  const fs::path dir = test::scratchDir("custom_op_multiout_leave");
  ASSERT_TRUE(translateGeneric(dir, "test.multiout", threeOutputs(1)));  // (translation does not run the op)
  for (bool exact : {false, true}) {
    const std::string msg = errorOf([&] {
      Runtime rt(dir / "p", RuntimeOptions{1, exact, false});
      rt.run({input()});
    });
    EXPECT_NE(msg.find("compute_ref did not write output 2 ('csum') in full: 1 of its 3 elements were not written, the "
                       "first at element 2"), std::string::npos) << msg;
  }
}

// A package whose manifest names fewer outputs than its custom layer's descriptor writes is refused, by the writer
// and by the reader (the manifest edited and resealed).
TEST(CustomOp, AManifestNamingTooFewOutputsIsRefused) {
  registerCustomOp(pluginPath("multiout"));
  const fs::path dir = test::scratchDir("custom_op_multiout_names");
  ASSERT_TRUE(translateGeneric(dir, "test.multiout", threeOutputs()));
  package::Package p = package::readPackage(dir / "p");
  for (auto& l : p.layers)
    if (l.custom) l.extra_outputs.pop_back();
  fs::create_directories(dir / "q");
  std::string msg = errorOf([&] { package::writePackage(p, dir / "q"); });
  EXPECT_NE(msg.find("it names 2 outputs for a descriptor of 3"), std::string::npos) << msg;
  std::string m = readAll(dir / "p" / "manifest.json");
  const std::string names = "\"outputs\": [\"y\", \"sq\", \"csum\"]";
  ASSERT_NE(m.find(names), std::string::npos);
  m.replace(m.find(names), names.size(), "\"outputs\": [\"y\", \"sq\"]");
  std::map<std::string, std::vector<uint8_t>> files;
  for (const auto& e : fs::directory_iterator(dir / "p")) {
    const std::string b = readAll(e.path());
    files[e.path().filename().string()] = std::vector<uint8_t>(b.begin(), b.end());
  }
  std::ofstream(dir / "p" / "manifest.json", std::ios::binary | std::ios::trunc) << package::resealManifest(m, files);
  msg = errorOf([&] { Runtime rt(dir / "p"); });
  EXPECT_NE(msg.find("it names 2 outputs for a descriptor of 3"), std::string::npos) << msg;
}

// A parameter is read from the model's constants when the layer is made, never from a run's values.
TEST(CustomOp, AParameterFromAnInputThatIsNotAConstantIsRefused) {
  registerCustomOp(pluginPath("good"));
  onnx::ModelProto m;
  m.ParseFromString(model("test.good"));
  m.mutable_graph()->clear_initializer();
  auto* b = m.mutable_graph()->add_input();
  b->set_name("bias");
  b->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  b->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
  std::string bytes;
  m.SerializeToString(&bytes);
  const std::string msg = errorOf([&] {
    Session s(Model::fromOnnxBytes(bytes, "custom.onnx"));
    s.run(std::vector<Tensor>{input(), Tensor::fromVector<float>({3}, {1, 2, 3})});
  });
  EXPECT_NE(msg.find("parameter 'bias' (tensor): input 1 must be a constant of the model"), std::string::npos) << msg;
}

TEST(CustomOp, APackageOfAnotherAbiVersionIsRefusedBeforeItRuns) {
  registerCustomOp(pluginPath("good"));
  const fs::path dir = test::scratchDir("custom_op_abi");
  ASSERT_TRUE(translateGeneric(dir, "test.good"));
  package::Package p = package::readPackage(dir / "p");
  for (auto& l : p.layers)
    if (l.custom) l.custom->abi_version = 2;
  fs::create_directories(dir / "q");
  package::writePackage(p, dir / "q");
  EXPECT_NE(errorOf([&] { Runtime rt(dir / "q"); }).find("translated with custom-op ABI version 2"), std::string::npos);
}

struct Fault {
  const char* lib;
  const char* when;    // "register", "load" (model import), "run"
  const char* expect;  // a part of the message
};

void PrintTo(const Fault& f, std::ostream* os) { *os << f.lib; }

class Faulty : public ::testing::TestWithParam<Fault> {};

TEST_P(Faulty, GivesAClearErrorNamingThePluginAndTheOp) {
  const Fault f = GetParam();
  const fs::path lib = pluginPath(f.lib);
  std::string msg = errorOf([&] { registerCustomOp(lib); });
  if (std::string(f.when) == "register") {
    EXPECT_NE(msg.find(lib.filename().string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(f.expect), std::string::npos) << msg;
    return;
  }
  ASSERT_EQ(msg, "(no error)");
  const std::string domain = std::string("test.") + f.lib;
  msg = errorOf([&] {
    Model m = Model::fromOnnxBytes(model(domain), "custom.onnx");
    Session s(m);
    s.run({input()});
  });
  EXPECT_NE(msg.find(lib.filename().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(domain + ".ScaleBias"), std::string::npos) << msg;
  EXPECT_NE(msg.find("scale_bias"), std::string::npos) << msg;  // the node
  EXPECT_NE(msg.find(f.expect), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Plugins, Faulty,
    ::testing::Values(Fault{"abi", "register", "built for custom-op ABI version 99"},
                      Fault{"nocallback", "register", "lacks the compute_ref callback"},
                      Fault{"noentry", "register", "does not export npuc_custom_op_library_get"},
                      Fault{"builtin", "register", "npuc implements Relu itself"},
                      Fault{"shape", "load", "rank 9"},
                      Fault{"inferfails", "load", "the size is not one this op supports"},
                      Fault{"throws", "run", "threw an exception: the op's kernel gave up"},
                      Fault{"oob", "run", "wrote outside output 0 (byte 240 of a 240-byte tensor"},
                      Fault{"fastdiffers", "run", "compute_fast differs from compute_ref at output 0 element 3"},
                      Fault{"half", "run", "compute_ref did not write output 0 ('y') in full: 30 of its 60 elements were "
                                           "not written, the first at element 30"},
                      Fault{"fasthalf", "run", "compute_fast did not write output 0 ('y') in full: 30 of its 60 elements "
                                               "were not written, the first at element 30"}),
    [](const ::testing::TestParamInfo<Fault>& i) { return std::string(i.param.lib); });

// The first-call check runs in the package runtime too (the same plugin::Instance), --exact or not.
TEST(CustomOp, APartlyWrittenOutputIsRefusedByTheRuntime) {
  registerCustomOp(pluginPath("half"));
  const fs::path dir = test::scratchDir("custom_op_half");
  ASSERT_TRUE(translateGeneric(dir, "test.half"));
  for (bool exact : {false, true}) {
    const std::string msg = errorOf([&] {
      Runtime rt(dir / "p", RuntimeOptions{1, exact, false});
      rt.run({input()});
    });
    EXPECT_NE(msg.find("custom op 'test.half.ScaleBias' (plugin libnpuc_test_plugin_half.so)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("compute_ref did not write output 0 ('y') in full: 30 of its 60 elements were not written, the "
                       "first at element 30"), std::string::npos) << msg;
  }
}

// An op whose output depends on its state (a count of the layer's calls): the first call's extra runs get states
// of their own, so they neither advance the layer's state nor see an advanced one (no false "differs").
TEST(CustomOp, AStatefulOpSeesOneCallPerRun) {
  registerCustomOp(pluginPath("stateful"));
  const fs::path dir = test::scratchDir("custom_op_stateful");
  const Tensor x = input();
  auto plus = [&](float k) {
    Tensor y = expected(x);
    for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] += k;
    return y;
  };
  Session s(Model::fromOnnxBytes(model("test.stateful"), "custom.onnx"));
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(s.run({x})[0].sameBits(plus(static_cast<float>(k)))) << "engine call " << k;
  ASSERT_TRUE(translateGeneric(dir, "test.stateful"));
  for (bool exact : {false, true}) {
    Runtime rt(dir / "p", RuntimeOptions{1, exact, false});
    for (int k = 0; k < 3; ++k)
      EXPECT_TRUE(rt.run({x})[0].sameBits(plus(static_cast<float>(k)))) << "runtime call " << k << " exact " << exact;
  }
}

/// The model of test.ranges with attributes added to its node (name = int, float or ints value).
using AttrValue = std::variant<int64_t, float, std::vector<int64_t>>;
std::string rangesModel(const std::vector<std::pair<std::string, AttrValue>>& attrs) {
  return model("test.ranges", "ScaleBias", [&](onnx::ModelProto& m) {
    onnx::NodeProto* n = m.mutable_graph()->mutable_node(1);
    for (const auto& [name, v] : attrs) {
      auto* a = n->add_attribute();
      a->set_name(name);
      if (auto* i = std::get_if<int64_t>(&v)) {
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(*i);
      } else if (auto* f = std::get_if<float>(&v)) {
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(*f);
      } else {
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t e : std::get<std::vector<int64_t>>(v)) a->add_ints(e);
      }
    }
  });
}

TEST(CustomOp, ParametersHoldValuesOfTheirDeclaredTypes) {
  registerCustomOp(pluginPath("ranges"));
  const Tensor x = input();
  // The bounds are accepted (and the op runs).
  for (const auto& attrs : std::vector<std::vector<std::pair<std::string, AttrValue>>>{
           {{"i8", int64_t{127}}, {"u8", int64_t{255}}, {"h", 65504.0f}, {"u16s", std::vector<int64_t>{0, 65535}}},
           {{"i8", int64_t{-128}}, {"u8", int64_t{0}}, {"h", -65504.0f}},
           {{"h", std::numeric_limits<float>::infinity()}},  // (float16 holds infinities and NaN)
           {{"h", std::numeric_limits<float>::quiet_NaN()}}}) {
    Session s(Model::fromOnnxBytes(rangesModel(attrs), "custom.onnx"));
    EXPECT_TRUE(s.run({x})[0].sameBits(expected(x))) << attrs[0].first;
  }
  // Beyond them: refused when the model loads, naming the op, the node, the parameter, the value and the range.
  struct Bad {
    std::vector<std::pair<std::string, AttrValue>> attrs;
    const char* expect;
  };
  for (const Bad& b : std::vector<Bad>{
           {{{"i8", int64_t{300}}}, "parameter 'i8' (VX_TYPE_INT8) is 300, which the type cannot hold (its range is -128 to 127)"},
           {{{"i8", int64_t{-129}}}, "parameter 'i8' (VX_TYPE_INT8) is -129"},
           {{{"u8", int64_t{-1}}}, "parameter 'u8' (VX_TYPE_UINT8) is -1, which the type cannot hold (its range is 0 to 255)"},
           {{{"u8", int64_t{256}}}, "parameter 'u8' (VX_TYPE_UINT8) is 256"},
           {{{"h", 1e5f}}, "parameter 'h' (VX_TYPE_FLOAT16) is 100000, which the type cannot hold (its range is -65504 "
                           "to 65504"},
           {{{"h", -65520.0f}}, "parameter 'h' (VX_TYPE_FLOAT16) is -65520"},
           {{{"u16s", std::vector<int64_t>{1, 65536}}}, "parameter 'u16s' (VX_TYPE_UINT16) item 1 is 65536"}}) {
    const std::string msg = errorOf([&] { Model::fromOnnxBytes(rangesModel(b.attrs), "custom.onnx"); });
    EXPECT_NE(msg.find("custom op 'test.ranges.ScaleBias' (plugin libnpuc_test_plugin_ranges.so), node 'scale_bias'"),
              std::string::npos) << msg;
    EXPECT_NE(msg.find(b.expect), std::string::npos) << msg;
  }
  // A parameter read from a constant input is checked the same way.
  auto withK = [&](int64_t k) {
    return model("test.ranges", "ScaleBias", [&](onnx::ModelProto& m) {
      auto* t = m.mutable_graph()->add_initializer();
      t->set_name("k");
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_int64_data(k);
      m.mutable_graph()->mutable_node(1)->add_input("k");
    });
  };
  EXPECT_TRUE(Session(Model::fromOnnxBytes(withK(-128), "custom.onnx")).run({x})[0].sameBits(expected(x)));
  const std::string msg = errorOf([&] { Model::fromOnnxBytes(withK(300), "custom.onnx"); });
  EXPECT_NE(msg.find("parameter 'k' (VX_TYPE_INT8) is 300"), std::string::npos) << msg;
}

// A package whose manifest records a value beyond a parameter's declared type is refused when it loads.
TEST(CustomOp, APackageParameterBeyondItsDeclaredTypeIsRefused) {
  registerCustomOp(pluginPath("ranges"));
  const fs::path dir = test::scratchDir("custom_op_ranges");
  ASSERT_TRUE(translateGeneric(dir, "test.ranges", [](onnx::ModelProto& m) {
    auto* a = m.mutable_graph()->mutable_node(1)->add_attribute();
    a->set_name("i8");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(100);
  }));
  EXPECT_TRUE(Runtime(dir / "p").run({input()})[0].sameBits(expected(input())));
  package::Package p = package::readPackage(dir / "p");
  bool edited = false;
  for (auto& l : p.layers)
    if (l.custom)
      for (auto& q : l.custom->params)
        if (q.name == "i8") q.i = 300, edited = true;
  ASSERT_TRUE(edited);
  fs::create_directories(dir / "q");
  package::writePackage(p, dir / "q");
  const std::string msg = errorOf([&] { Runtime rt(dir / "q"); });
  EXPECT_NE(msg.find("parameter 'i8' (VX_TYPE_INT8) is 300, which the type cannot hold (its range is -128 to 127)"),
            std::string::npos) << msg;
}

TEST(CustomOp, AFileThatIsNotAPluginIsNamed) {
  const fs::path dir = test::scratchDir("custom_op_files");
  std::ofstream(dir / "notes.so") << "not a library";
  std::string msg = errorOf([&] { registerCustomOp(dir / "notes.so"); });
  EXPECT_NE(msg.find("notes.so' is not a shared library"), std::string::npos) << msg;
  msg = errorOf([&] { registerCustomOp(dir / "missing.so"); });
  EXPECT_NE(msg.find("missing.so': no such file"), std::string::npos) << msg;
  // A shared library that is not a plugin (the C++ runtime itself has no entry point).
  msg = errorOf([&] { registerCustomOp(pluginPath("noentry")); });
  EXPECT_NE(msg.find("not an npuc plugin"), std::string::npos) << msg;
}

// ---- Libraries that would crash or block the loader (issue 46.3): refused before dlopen, or by a trial load in a
// child process; the test process survives each. ----

std::vector<char> bytesOf(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void writeBytes(const fs::path& p, const char* data, size_t n) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(data, static_cast<std::streamsize>(n));
}

/// Whether the process has `p` mapped (dlopen without loading).
bool isLoaded(const fs::path& p) {
  void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

/// Runs `f` in a forked child that dies of SIGALRM after `seconds` (a regression that hangs fails instead of hanging
/// the test run); true when it returned true.
bool inChildWithin(int seconds, const std::function<bool()>& f) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(static_cast<unsigned>(seconds));
    bool ok = false;
    try {
      ok = f();
    } catch (...) {
    }
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  EXPECT_TRUE(WIFEXITED(status)) << "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << " (SIGALRM = " << SIGALRM << ": it hung)";
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(CustomOp, ATruncatedLibraryIsRefusedBeforeDlopenAndTheProcessSurvives) {
  const fs::path dir = test::scratchDir("truncated");
  const std::vector<char> good = bytesOf(pluginPath("good"));
  ASSERT_GT(good.size(), 4096u);
  for (size_t cut : {size_t{10}, size_t{40}, size_t{100}, size_t{1000}, good.size() / 4, good.size() / 2, good.size() - 1}) {
    const fs::path p = dir / ("libcut" + std::to_string(cut) + ".so");
    writeBytes(p, good.data(), cut);
    const std::string msg = errorOf([&] { registerCustomOp(p); });
    EXPECT_NE(msg.find(p.filename().string()), std::string::npos) << cut << ": " << msg;
    EXPECT_NE(msg.find("truncated or corrupt"), std::string::npos) << cut << ": " << msg;
    EXPECT_FALSE(isLoaded(p)) << cut;
  }
}

TEST(CustomOp, ALibraryWhoseSectionTableLiesPastItsEndIsRefusedBeforeDlopen) {
  const fs::path dir = test::scratchDir("shoff");
  std::vector<char> b = bytesOf(pluginPath("good"));
  ASSERT_GE(b.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  eh.e_shoff = b.size() + 4096;
  std::memcpy(b.data(), &eh, sizeof eh);
  const fs::path p = dir / "libshoff.so";
  writeBytes(p, b.data(), b.size());
  const std::string msg = errorOf([&] { registerCustomOp(p); });
  EXPECT_NE(msg.find("libshoff.so"), std::string::npos) << msg;
  EXPECT_NE(msg.find("section header table"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lies past the end of the file"), std::string::npos) << msg;
  EXPECT_FALSE(isLoaded(p));
}

TEST(CustomOp, ALibraryWhoseLoadableSegmentLiesPastItsEndIsRefusedBeforeDlopen) {
  const fs::path dir = test::scratchDir("ptload");
  std::vector<char> b = bytesOf(pluginPath("good"));
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  uint64_t end = 0;  // the end of the last loadable segment's bytes in the file
  for (size_t k = 0; k < eh.e_phnum; ++k) {
    Elf64_Phdr ph;
    std::memcpy(&ph, b.data() + eh.e_phoff + k * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD) end = std::max<uint64_t>(end, ph.p_offset + ph.p_filesz);
  }
  ASSERT_GT(end, 1u);
  // Cut inside that segment, without section headers (legal: the loader does not need them), so only the segment
  // rule can see it.
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  std::memcpy(b.data(), &eh, sizeof eh);
  const fs::path p = dir / "libptload.so";
  writeBytes(p, b.data(), end - 1);
  const std::string msg = errorOf([&] { registerCustomOp(p); });
  EXPECT_NE(msg.find("libptload.so"), std::string::npos) << msg;
  EXPECT_NE(msg.find("loadable segment"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lies past the end of the file"), std::string::npos) << msg;
  EXPECT_FALSE(isLoaded(p));
}

TEST(CustomOp, ALibraryThatCrashesWhileLoadingIsRefusedAndTheProcessSurvives) {
  const fs::path p = pluginPath("crashload");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = errorOf([&] { registerCustomOp(p); });
  EXPECT_NE(msg.find("libnpuc_test_plugin_crashload.so"), std::string::npos) << msg;
  EXPECT_NE(msg.find("crashed while loading (signal 7, SIGBUS)"), std::string::npos) << msg;
  EXPECT_FALSE(isLoaded(p));
  // Asked again: refused again (only libraries that loaded are remembered), and the op is not registered.
  EXPECT_NE(errorOf([&] { registerCustomOp(p); }).find("crashed while loading"), std::string::npos);
  EXPECT_NE(errorOf([&] { Model::fromOnnxBytes(model("test.crashload"), "custom.onnx"); }).find("unknown op"),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST(CustomOp, AFifoIsRefusedAtOnce) {
  const fs::path dir = test::scratchDir("fifo");
  const fs::path p = dir / "libfifo.so";
  ASSERT_EQ(mkfifo(p.c_str(), 0600), 0);
  // In a child with a deadline: a reader that opened the FIFO would wait for a writer forever.
  EXPECT_TRUE(inChildWithin(10, [&] {
    const std::string msg = errorOf([&] { registerCustomOp(p); });
    const bool ok = msg.find("libfifo.so") != std::string::npos && msg.find("is not a regular file") != std::string::npos;
    if (!ok) std::fprintf(stderr, "message: %s\n", msg.c_str());
    return ok;
  }));
}

// An RKNN-style CPU kernel (the guide's §3.3: cpu_kernel_function over vx_reference parameters, vxQueryTensor /
// vxCopyTensorPatch, vxCopyScalar, vxQueryArray / vxMapArrayRange) in C through npuc/openvx_compat.h
// (tests/plugin/vx_plugin.c): y = Relu(x) * 1.75 + shift[c] + offset, on the engine and in a package (fast and exact),
// against the formula written here. A kernel whose patch leaves its tensor fails with its OpenVX status, named.
TEST(CustomOp, AnRknnStyleOpenVxKernelRunsThroughTheCompatibilityHeader) {
  const auto vx = [](const std::string& which) { return fs::path(NPUC_TEST_PLUGIN_DIR) / ("libnpuc_test_vx_" + which + ".so"); };
  auto edit = [](onnx::ModelProto& m) {
    for (auto& n : *m.mutable_graph()->mutable_node()) {
      if (n.name() != "scale_bias") continue;
      n.mutable_input()->RemoveLast();  // (no bias tensor: shift and offset are attributes)
      auto* a = n.add_attribute();
      a->set_name("shift");
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : {2, -3, 5}) a->add_ints(v);
      a = n.add_attribute();
      a->set_name("offset");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(7);
    }
  };
  const Tensor x = input();
  Tensor want(DType::kF32, x.shape());
  const int shift[3] = {2, -3, 5};
  for (int64_t i = 0; i < x.numel(); ++i)
    want.data<float>()[i] = std::max(x.data<float>()[i], 0.0f) * 1.75f + static_cast<float>(shift[(i / 20) % 3]) + 7.0f;
  registerCustomOp(vx("good"));
  Model m = Model::fromOnnxBytes(model("test.vx", "VxScaleShift", edit), "vx.onnx");
  EXPECT_TRUE(Session(m).run({x})[0].sameBits(want));
  const fs::path dir = test::scratchDir("custom_op_vx");
  std::ofstream(dir / "vx.onnx", std::ios::binary) << model("test.vx", "VxScaleShift", edit);
  TranslateOptions o;
  o.prefix = "p";
  o.onnx = dir / "vx.onnx";
  o.target = "generic";
  o.out_root = dir;
  ASSERT_TRUE(translate(o).ok);
  for (bool exact : {false, true}) EXPECT_TRUE(Runtime(dir / "p", {1, exact}).run({x})[0].sameBits(want)) << exact;
  // The faulty build (its domain test.vxbad).
  registerCustomOp(vx("bad_view"));
  const std::string e = errorOf([&] { Session(Model::fromOnnxBytes(model("test.vxbad", "VxScaleShift", edit), "vx.onnx")).run({x}); });
  EXPECT_NE(e.find("the OpenVX kernel returned status -13"), std::string::npos) << e;
  EXPECT_NE(e.find("VxScaleShift"), std::string::npos) << e;
}

// The compatibility header's objects as OpenVX defines them: dims innermost first, patches in byte strides per OpenVX
// dim, scalars in their type's size (and no other), arrays mapped in place; outputs writable, inputs not.
TEST(OpenVxCompat, TensorsScalarsAndArraysFollowOpenVx) {
  float data[2 * 3 * 4];
  for (int i = 0; i < 24; ++i) data[i] = static_cast<float>(i);
  npuc_tensor t{NPUC_ELEM_FLOAT32, 3, {2, 3, 4}, data, sizeof data};  // [2, 3, 4] row-major: OpenVX dims 4, 3, 2
  npuc_vx_object o{};
  o.kind = VX_TYPE_TENSOR;
  o.tensor = &t;
  vx_size dims[3], n = 0;
  ASSERT_EQ(vxQueryTensor(&o, VX_TENSOR_NUMBER_OF_DIMS, &n, sizeof n), VX_SUCCESS);
  ASSERT_EQ(vxQueryTensor(&o, VX_TENSOR_DIMS, dims, sizeof dims), VX_SUCCESS);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(std::vector<vx_size>(dims, dims + 3), (std::vector<vx_size>{4, 3, 2}));
  // The patch x in [1, 3), y in [0, 2), z = 1 into a 2 x 2 buffer with a row stride of 3 floats (a gap).
  float out[6] = {-1, -1, -1, -1, -1, -1};
  const vx_size start[3] = {1, 0, 1}, end[3] = {3, 2, 2}, stride[3] = {4, 12, 24};
  ASSERT_EQ(vxCopyTensorPatch(&o, 3, start, end, stride, out, VX_READ_ONLY, VX_MEMORY_TYPE_HOST), VX_SUCCESS);
  EXPECT_EQ(std::vector<float>(out, out + 6), (std::vector<float>{13, 14, -1, 17, 18, -1}));  // data[1][y][x]
  EXPECT_EQ(vxCopyTensorPatch(&o, 3, start, end, stride, out, VX_WRITE_ONLY, VX_MEMORY_TYPE_HOST), VX_ERROR_INVALID_PARAMETERS);
  o.writable = 1;
  out[0] = 100;
  ASSERT_EQ(vxCopyTensorPatch(&o, 3, start, end, stride, out, VX_WRITE_ONLY, VX_MEMORY_TYPE_HOST), VX_SUCCESS);
  EXPECT_EQ(data[13], 100.0f);
  const vx_size past[3] = {3, 2, 3};
  EXPECT_EQ(vxCopyTensorPatch(&o, 3, start, past, stride, out, VX_READ_ONLY, VX_MEMORY_TYPE_HOST), VX_ERROR_INVALID_DIMENSION);
  const vx_int16 v = -300;
  vx_scalar s = vxCreateScalar(vxGetContext(nullptr), VX_TYPE_INT16, &v);
  ASSERT_NE(s, nullptr);
  vx_int16 back = 0;
  vx_int32 wide = 0;
  EXPECT_EQ(vxCopyScalar(s, &back, VX_READ_ONLY, VX_MEMORY_TYPE_HOST), VX_SUCCESS);
  EXPECT_EQ(back, -300);
  EXPECT_EQ(vxCopyScalarWithSize(s, sizeof wide, &wide, VX_READ_ONLY, VX_MEMORY_TYPE_HOST), VX_ERROR_INVALID_PARAMETERS);
  EXPECT_EQ(vxReleaseScalar(&s), VX_SUCCESS);
  EXPECT_EQ(s, nullptr);
  vx_array a = vxCreateArray(vxGetContext(nullptr), VX_TYPE_INT32, 4);
  const int32_t items[3] = {7, 8, 9};
  ASSERT_EQ(vxAddArrayItems(a, 3, items, sizeof(int32_t)), VX_SUCCESS);
  vx_size count = 0, item_stride = 0;
  vx_map_id id;
  void* p = nullptr;
  EXPECT_EQ(vxQueryArray(a, VX_ARRAY_NUMITEMS, &count, sizeof count), VX_SUCCESS);
  EXPECT_EQ(count, 3u);
  ASSERT_EQ(vxMapArrayRange(a, 1, 3, &id, &item_stride, &p, VX_READ_ONLY, VX_MEMORY_TYPE_HOST, 0), VX_SUCCESS);
  EXPECT_EQ(item_stride, 4u);
  EXPECT_EQ(static_cast<int32_t*>(p)[0], 8);
  EXPECT_EQ(vxMapArrayRange(a, 2, 5, &id, &item_stride, &p, VX_READ_ONLY, VX_MEMORY_TYPE_HOST, 0), VX_ERROR_INVALID_PARAMETERS);
  EXPECT_EQ(vxReleaseArray(&a), VX_SUCCESS);
}

TEST(CustomOp, AnUnknownOpSaysHowToAddOne) {
  std::string msg = errorOf([&] { Model::fromOnnxBytes(model("test.unregistered"), "custom.onnx"); });
  EXPECT_NE(msg.find("unknown op 'test.unregistered.ScaleBias'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--custom-op"), std::string::npos) << msg;
}

}  // namespace
}  // namespace npuc
