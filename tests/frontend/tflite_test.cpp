// Tests of the TensorFlow Lite frontend: every operator it imports against Arm NN's TfLiteParser (CpuRef) or numpy
// (the outputs stored by tests/data/tflite/generate.py), the layout rule (a MobileNet-shaped model keeps at most its
// two boundary transposes), and bad input (one clear error naming the file, the field and the rule; never a crash).
#include "npuc/model.hpp"

#include "frontend/tflite/tflite_io.hpp"
#include "frontend/frontend_test_util.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(NPUC_SOURCE_DIR) / "tests/data/tflite";

using test::readAll;

/// A TFLite model as a Model (its format detected by content).
Model loadTflite(const fs::path& path, const LoadOptions& opts = {}) { return Model::load(path, opts); }

using Case = test::OracleCase;  // (stored inputs and the oracle's outputs, by tensor name)

Case readCase(const std::string& name) { return test::readOracleCase(kData / name); }

/// The largest |a - b| / max(|b|, 1) (float), or |a - b| in codes (integers).
double error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shapeStr(a.shape()), shapeStr(b.shape()));
  EXPECT_EQ(dtypeName(a.dtype()), dtypeName(b.dtype()));
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return INFINITY;
  std::vector<double> x = a.toDouble(), y = b.toDouble();
  double worst = 0;
  const bool fl = a.dtype() == DType::kF32;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::abs(x[i] - y[i]) / (fl ? std::max(1.0, std::abs(y[i])) : 1.0));
  return worst;
}

/// uint8 codes as int8 ones and back (code - 128: a uint8 model's tensors become int8 in npuc, the zero point moved
/// with the codes).
Tensor shifted(const Tensor& t, DType to) {
  Tensor r(to, t.shape());
  const auto* in = static_cast<const uint8_t*>(t.raw());
  auto* out = static_cast<uint8_t*>(r.raw());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<uint8_t>(in[i] ^ 0x80);  // +-128 modulo 256
  return r;
}

class TfliteOracle : public ::testing::TestWithParam<std::string> {};

// npuc's outputs equal the oracle's within 1e-5 relative (float), as imported and optimized as translate runs it.
TEST_P(TfliteOracle, MatchesOracle) {
  Case c = readCase(GetParam());
  ASSERT_FALSE(c.expected.empty());
  const fs::path file = kData / c.name / "model.tflite";
  for (bool optimize : {false, true}) {
    LoadOptions lo;
    lo.optimize = optimize;
    Model m = loadTflite(file, lo);
    std::map<std::string, Tensor> feeds = c.inputs;
    for (const TensorInfo& in : m.inputs())
      if (feeds.count(in.name) && feeds.at(in.name).dtype() == DType::kU8 && in.dtype == DType::kI8)
        feeds[in.name] = shifted(feeds.at(in.name), DType::kI8);
    std::vector<Tensor> outs = Session(m).run(feeds);
    ASSERT_EQ(outs.size(), m.outputs().size());
    size_t matched = 0;
    for (size_t i = 0; i < outs.size(); ++i) {
      auto it = c.expected.find(m.outputs()[i].name);
      if (it == c.expected.end()) continue;
      ++matched;
      if (it->second.dtype() == DType::kU8 && outs[i].dtype() == DType::kI8) outs[i] = shifted(outs[i], DType::kU8);
      const double err = error(outs[i], it->second);
      const bool quantized = c.name.rfind("quant_", 0) == 0 && it->second.dtype() != DType::kF32;
      // Quantized: TFLite requantizes with a fixed-point multiplier, npuc's QuantizeLinear divides in float: a
      // result that falls within rounding of a half step may land one code apart.
      EXPECT_LE(err, quantized ? 1.0 : 1e-5) << c.name << ": " << it->first << (optimize ? " (optimized)" : "");
      if (optimize) continue;
      if (quantized) {
        std::vector<double> a = outs[i].toDouble(), b = it->second.toDouble();
        size_t exact = 0;
        for (size_t k = 0; k < a.size(); ++k) exact += a[k] == b[k];
        std::printf("[tflite] %-18s %-16s %zu of %zu codes exact, the others %s\n", c.name.c_str(), it->first.c_str(),
                    exact, a.size(), err <= 1 ? "one step apart" : "further");
      } else {
        std::printf("[tflite] %-18s %-16s max relative error %.3g\n", c.name.c_str(), it->first.c_str(), err);
      }
    }
    EXPECT_EQ(matched, c.expected.size()) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, TfliteOracle,
                         ::testing::Values("conv", "depthwise", "fully_connected", "pooling", "binary", "activations",
                                           "math", "concat_pad_mean", "shapes", "resize", "resize_numpy",
                                           "softmax_prelu", "transpose_conv", "transpose_conv_bias", "arg_max_gather", "class_map", "prelu_dequantize",
                                           "mobilenet", "shapes_numpy", "quant_io", "quant_int8", "quant_uint8", "sparse", "depth_space"));

// The graph keeps the model's own interface: names and NHWC shapes.
TEST(Tflite, InterfaceNamesAndShapes) {
  auto g = tflite_io::importFile(kData / "mobilenet/model.tflite");
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->value(g->inputs()[0]).name, "input");
  EXPECT_EQ(g->value(g->inputs()[0]).type.shape, (Shape{1, 16, 16, 3}));
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->value(g->outputs()[0]).name, "prob");
  EXPECT_EQ(g->value(g->outputs()[0]).type.shape, (Shape{1, 10}));
}

// Channels-first inside: a MobileNet-shaped model has one Transpose, at its input (its output is 2-D), and no
// Transpose pair around any layer; every convolution reads a channels-first tensor.
TEST(Tflite, MobileNetKeepsOnlyTheBoundaryTransposes) {
  auto g = tflite_io::importFile(kData / "mobilenet/model.tflite");
  int transposes = 0;
  for (ir::NodeId id : g->order()) transposes += g->node(id).op == "Transpose";
  EXPECT_LE(transposes, 2);
  Model m = loadTflite(kData / "mobilenet/model.tflite");
  int opt = 0;
  for (const NodeInfo& n : m.nodes()) opt += n.op == "Transpose";
  EXPECT_LE(opt, 2);
  std::printf("[tflite] mobilenet: %d Transpose node(s) imported, %d after optimizing, %zu nodes\n", transposes, opt,
              m.nodes().size());
}

// A segmentation net's class map (ARG_MAX over the channels of a feature map held channels-first) is an ArgMax
// across channels with no layout change around it: the input's boundary Transpose is the only one, and TIDL takes it
// (its ArgMax is across channels only: before, a Transpose back to NHWC and an ArgMax over axis 3 were refused).
TEST(Tflite, AClassMapIsAnArgMaxAcrossChannels) {
  Model m = loadTflite(kData / "class_map/model.tflite");
  std::vector<std::string> ops;
  for (const NodeInfo& n : m.nodes()) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"Transpose", "Conv", "ArgMax"}));
  TranslateOptions o;
  o.onnx = kData / "class_map/model.tflite";
  o.out_root = test::scratchDir("tflite_class_map");
  o.target = "tidl";
  o.prefix = "cm";
  o.calibration["x"] = {test::readOracleCase(kData / "class_map").inputs.at("x")};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok) << (r.errors.empty() ? "" : r.errors[0].rule + ": " + r.errors[0].actual);
}

// The same network as ONNX (the imported model's export, read back by the ONNX frontend with ONNX's own shape
// inference as a cross-check) gives the same outputs bit for bit.
TEST(Tflite, SameOutputsAsOnnx) {
  for (const char* name : {"conv", "depthwise", "pooling", "binary", "shapes", "resize", "transpose_conv", "mobilenet",
                           "shapes_numpy", "quant_int8"}) {
    Case c = readCase(name);
    const fs::path file = kData / name / "model.tflite";
    Model tfl = Model::load(file);
    Model onnx = Model::fromOnnxBytes(tfl.toOnnxBytes(), std::string(name) + ".onnx");
    std::vector<Tensor> a = Session(tfl).run(c.inputs), b = Session(onnx).run(c.inputs);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].nbytes(), b[i].nbytes());
      EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << name << " output " << i;
    }
  }
}

// docs/frontends.md's table of TFLite operators is the importer's list: one row per operator, no other.
TEST(Tflite, DocumentedOpsAreTheImportersTable) {
  std::vector<std::string> imported = tflite_io::supportedOps();
  std::sort(imported.begin(), imported.end());
  EXPECT_EQ(test::documentedOps("| TFLite operator |"), imported);
}

// Every operator the importer maps is in a stored test model (compared with its oracle by MatchesOracle).
TEST(Tflite, EveryImportedOperatorHasATestModel) {
  std::set<std::string> used;
  for (const auto& e : fs::directory_iterator(kData))
    if (fs::exists(e.path() / "model.tflite"))
      for (const std::string& op : tflite_io::operatorsUsed(e.path() / "model.tflite")) used.insert(op);
  for (const std::string& op : tflite_io::supportedOps()) EXPECT_TRUE(used.count(op)) << op << " is in no test model";
}

// --- bad input ---

Error importError(const std::string& bytes, const std::string& name = "bad.tflite") {
  try {
    tflite_io::importBytes(bytes.data(), bytes.size(), name);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the model loaded";
  return Error(ErrorCode::kInternal, "");
}

#define EXPECT_HAS(err, text) EXPECT_NE(std::string((err).what()).find(text), std::string::npos) << (err).what()

TEST(TfliteBadInput, GarbageTruncatedAndWrongIdentifier) {
  Error g = importError("this is not a model at all");
  EXPECT_EQ(g.code(), ErrorCode::kInvalidInput);
  EXPECT_HAS(g, "bad.tflite");
  EXPECT_HAS(g, "TFL3");
  std::string full = readAll(kData / "conv/model.tflite");
  std::string wrong = full;
  wrong.replace(4, 4, "TFL2");
  EXPECT_HAS(importError(wrong), "not a TensorFlow Lite model");
  for (size_t cut : {size_t{8}, size_t{40}, full.size() / 3, full.size() / 2, full.size() - 1}) {
    Error t = importError(full.substr(0, cut));
    EXPECT_EQ(t.code(), ErrorCode::kInvalidInput) << cut;
    EXPECT_HAS(t, "bad.tflite");
  }
}

TEST(TfliteBadInput, CraftedFiles) {
  struct Want {
    const char* file;
    ErrorCode code;
    std::vector<const char*> texts;
  };
  for (const Want& w : std::vector<Want>{
           {"tensor_index", ErrorCode::kInvalidInput, {"operator 0 (RELU)", "tensor index 99 is out of range"}},
           {"buffer_index", ErrorCode::kInvalidInput, {"buffer index 77 is out of range"}},
           {"opcode_index", ErrorCode::kInvalidInput, {"opcode_index 5 is out of range"}},
           {"cycle", ErrorCode::kInvalidInput, {"operator 0 (TANH)", "is read before any operator writes it"}},
           {"huge_shape", ErrorCode::kInvalidInput, {"is too large"}},
           {"buffer_size", ErrorCode::kInvalidInput, {"holds 12 bytes; shape 2x3 of float32 needs 24"}},
           {"unknown_op", ErrorCode::kUnsupported, {"operator 1 (LSTM)", "not an operator npuc imports", "CONV_2D"}},
           {"custom_op", ErrorCode::kUnsupported, {"operator 0 (CUSTOM 'MyOp')"}},
           {"shape_mismatch", ErrorCode::kInvalidInput, {"declares shape 1x4x4x2", "computes 1x5x5x2"}},
           {"sparse_segments", ErrorCode::kInvalidInput, {"tensor 1 ('w_sparse')", "sparsity", "array_segments has 2 values"}},
           {"sparse_index", ErrorCode::kInvalidInput, {"sparsity", "index 7 is outside 0..1"}},
           {"sparse_values", ErrorCode::kInvalidInput, {"sparsity", "holds 12 bytes; the parameters describe 2 values"}},
           {"sparse_huge", ErrorCode::kInvalidInput, {"sparsity", "the dense tensor 65536x65536 would exceed"}},
       }) {
    const fs::path p = kData / "bad" / (std::string(w.file) + ".tflite");
    ASSERT_TRUE(fs::exists(p)) << p;
    Error e = importError(readAll(p), p.filename().string());
    EXPECT_EQ(e.code(), w.code) << w.file << ": " << e.what();
    EXPECT_HAS(e, p.filename().string());
    for (const char* t : w.texts) EXPECT_HAS(e, t);
  }
}

// Randomly damaged files (bytes changed, cut, repeated): every outcome is a graph or an npuc::Error — the fuzz
// target's property (fuzz/fuzz_tflite_loader.cpp), checked here on every build.
TEST(TfliteBadInputRandom, DamagedFilesGiveErrorsNotCrashes) {
  std::mt19937 rng(50);
  int loaded = 0, refused = 0;
  for (const char* name : {"conv", "shapes", "mobilenet", "binary", "transpose_conv", "sparse"}) {
    const std::string bytes = readAll(kData / name / "model.tflite");
    for (int i = 0; i < 300; ++i) {
      const std::string b = test::damaged(bytes, rng, 8);  // (the identifier kept)
      try {
        auto g = tflite_io::importBytes(b.data(), b.size(), "x.tflite");
        ++loaded;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  std::printf("[tflite] damaged files: %d loaded, %d refused with an error\n", loaded, refused);
  EXPECT_GT(refused, 0);
}

}  // namespace
