// Tests of the Caffe frontend: every layer type it imports against OpenCV's dnn module (the outputs stored by
// tests/data/caffe/generate.py), the same network through ONNX, and bad input (one clear error naming the file, the
// layer and the rule; never a crash).
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"

#include "frontend/caffe/caffe_io.hpp"
#include "frontend/frontend_test_util.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
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

const fs::path kData = fs::path(NPUC_SOURCE_DIR) / "tests/data/caffe";

using test::readAll;
using test::writeAll;

using test::relError;

using Case = test::OracleCase;  // (stored inputs and the oracle's outputs, by tensor name)

Case readCase(const std::string& name) { return test::readOracleCase(kData / name); }

/// Every value of a run by name (the graph's outputs and the node outputs the callback sees).
std::map<std::string, Tensor> runAll(const Model& m, const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> values;
  Session s(m);
  std::vector<Tensor> outs = s.run(inputs, [&](const std::string& v, const Tensor& t) {
    Tensor copy(t.dtype(), t.shape());
    std::copy_n(static_cast<const uint8_t*>(t.raw()), t.nbytes(), static_cast<uint8_t*>(copy.raw()));
    values[v] = copy;
  });
  for (size_t i = 0; i < outs.size(); ++i) values[m.outputs()[i].name] = outs[i];
  return values;
}

class CaffeOracle : public ::testing::TestWithParam<std::string> {};

// npuc's outputs equal OpenCV's within 1e-5 relative, as imported (every blob visible) and optimized as translate
// runs it (BatchNorm folded: the graph outputs).
TEST_P(CaffeOracle, MatchesOpenCv) {
  Case c = readCase(GetParam());
  ASSERT_FALSE(c.expected.empty());
  fs::path dir = kData / c.name;
  LoadOptions plain;
  plain.optimize = false;
  // (ssd: resolve folds the prior boxes and their Concat into one constant, which no node writes; unresolved, the
  // engine runs that Concat and the blob is seen)
  plain.resolve = c.name != "ssd";
  Model m = Model::loadCaffe(dir / "model.prototxt", dir / "model.caffemodel", plain);
  std::map<std::string, Tensor> values = runAll(m, c.inputs);
  for (auto& [blob, want] : c.expected) {
    ASSERT_TRUE(values.count(blob)) << c.name << ": no value '" << blob << "'";
    double err = relError(values.at(blob), want);
    EXPECT_LE(err, 1e-5) << c.name << ": blob '" << blob << "'";
    std::printf("[caffe] %-15s %-12s max relative error %.3g\n", c.name.c_str(), blob.c_str(), err);
  }
  Model opt = Model::loadCaffe(dir / "model.prototxt", dir / "model.caffemodel");
  Session s(opt);
  std::vector<Tensor> outs = s.run(c.inputs);
  for (size_t i = 0; i < outs.size(); ++i) {
    auto it = c.expected.find(opt.outputs()[i].name);
    if (it != c.expected.end()) {
      EXPECT_LE(relError(outs[i], it->second), 1e-5) << c.name << ": optimized, " << it->first;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, CaffeOracle,
                         ::testing::Values("conv", "pooling", "inner_product", "activations", "eltwise_concat",
                                           "batch_norm", "shapes", "argmax", "small_net", "lrn_k",
                                           "lrn_within", "inner_product_t", "crop", "scale_bottom",
                                           "bias", "ssd", "jacintonet11", "jdetnet"));

// SSD in packages: the priors a float32 weight, DetectionOutput a detection_output layer. The generic package's
// detections equal the engine's bit for bit (and so OpenCV's, MatchesOpenCv above), exact and fast, 1 and 2 threads;
// it translates for tidl too.
TEST(Caffe, SsdTranslatesAndThePackageIsTheEngine) {
  Case c = readCase("ssd");
  const fs::path dir = kData / "ssd";
  Model m = Model::loadCaffe(dir / "model.prototxt", dir / "model.caffemodel");
  const std::vector<Tensor> want = Session(m).run(c.inputs);
  ASSERT_EQ(want.size(), 1u);
  TranslateOptions o;
  o.prefix = "ssd";
  o.onnx = dir / "model.prototxt";
  o.caffe_model = dir / "model.caffemodel";
  o.target = "generic";
  o.out_root = test::scratchDir("ssd_pkg");
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok) << (r.errors.empty() ? "" : r.errors[0].rule + ": " + r.errors[0].actual);
  for (bool exact : {true, false})
    for (int threads : {1, 2}) {
      Runtime rt(r.dir, {threads, exact});
      std::vector<Tensor> got = rt.run({c.inputs.at("data")});
      ASSERT_EQ(got.size(), 1u);
      EXPECT_TRUE(got[0].sameBits(want[0])) << "exact " << exact << ", " << threads << " thread(s)";
    }
  // TIDL (int8-pow2): the class softmax over [N, priors, classes] is the guide's SSD exception, DetectionOutput runs
  // on the DSP.
  o.target = "tidl";
  o.prefix = "ssd_tidl";
  o.calibration["data"] = {c.inputs.at("data")};
  TranslateResult t = translate(o);
  EXPECT_TRUE(t.ok) << (t.errors.empty() ? "" : t.errors[0].rule + ": " + t.errors[0].actual);
  // int8-affine: the heads in integers, DetectionOutput in float on dequantized inputs, its records not quantized
  // (labels stay whole numbers); the best detection is the float model's.
  o.target = "generic-int8";
  o.prefix = "ssd_int8";
  TranslateResult q = translate(o);
  ASSERT_TRUE(q.ok) << (q.errors.empty() ? "" : q.errors[0].rule + ": " + q.errors[0].actual);
  std::vector<Tensor> got = Runtime(q.dir).run({c.inputs.at("data")});
  const float* a = got[0].data<float>();
  const float* b = want[0].data<float>();
  EXPECT_EQ(a[1], b[1]);                 // the label
  EXPECT_NEAR(a[2], b[2], 0.02);         // the score
  for (int k = 3; k < 7; ++k) EXPECT_NEAR(a[k], b[k], 0.05) << "box coordinate " << k - 3;
  for (int64_t i = 0; i < got[0].numel() / 7; ++i) EXPECT_EQ(a[i * 7 + 1], std::round(a[i * 7 + 1])) << "row " << i;
}

/// Detection records [image, label, score, x0, y0, x1, y1] of a DetectionOutput, up to the first row of zeros.
std::vector<std::array<float, 7>> detections(const Tensor& t) {
  std::vector<std::array<float, 7>> rows;
  const float* d = t.data<float>();
  for (int64_t i = 0; i < t.numel() / 7; ++i) {
    std::array<float, 7> r;
    std::copy_n(d + i * 7, 7, r.begin());
    if (r[1] == 0 && r[2] == 0) break;
    rows.push_back(r);
  }
  return rows;
}

/// Of `got`'s detections, how many have a detection of `want` with the same label and IoU >= 0.5.
int matched(const std::vector<std::array<float, 7>>& got, const std::vector<std::array<float, 7>>& want) {
  auto iou = [](const std::array<float, 7>& a, const std::array<float, 7>& b) {
    const float w = std::min(a[5], b[5]) - std::max(a[3], b[3]), h = std::min(a[6], b[6]) - std::max(a[4], b[4]);
    const float inter = w > 0 && h > 0 ? w * h : 0;
    const float u = (a[5] - a[3]) * (a[6] - a[4]) + (b[5] - b[3]) * (b[6] - b[4]) - inter;
    return u > 0 ? inter / u : 0;
  };
  int n = 0;
  for (const auto& g : got)
    n += std::any_of(want.begin(), want.end(), [&](const auto& w) { return w[1] == g[1] && iou(g, w) >= 0.5f; });
  return n;
}

// A JDetNet-shaped SSD (JacintoNet11 backbone, five heads, ceil-rounded pools) in packages. The generic package's
// detections equal OpenCV's: the same records in the same order, boxes and scores within 1e-4 (and the engine's bit
// for bit, exact and fast). The tidl (int8-pow2) and generic-int8 packages translate with the picture as calibration
// and detect: their records are well formed, and how many agree with the float detections is printed (a
// random-weight detector: scores near the threshold move in and out with 8-bit rounding, so no bound is claimed).
TEST(Caffe, JDetNetDetectsAsOpenCvInEveryPackage) {
  Case c = readCase("jdetnet");
  const fs::path dir = kData / "jdetnet";
  Model m = Model::loadCaffe(dir / "model.prototxt", dir / "model.caffemodel");
  const std::vector<Tensor> engine = Session(m).run(c.inputs);
  const auto want = detections(c.expected.at("detection_out"));
  ASSERT_GE(want.size(), 10u);
  TranslateOptions o;
  o.onnx = dir / "model.prototxt";
  o.caffe_model = dir / "model.caffemodel";
  o.out_root = test::scratchDir("jdetnet_pkg");
  auto detectionsOf = [&](const fs::path& pkg, bool exact, int threads) {
    std::vector<Tensor> outs = Runtime(pkg, {threads, exact}).run({c.inputs.at("data")});
    EXPECT_EQ(outs.size(), 1u);  // detection_out, the one blob no layer reads
    return outs.at(0);
  };
  o.target = "generic";
  o.prefix = "jdet";
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok) << (r.errors.empty() ? "" : r.errors[0].rule + ": " + r.errors[0].actual);
  ASSERT_EQ(engine.size(), 1u);
  for (bool exact : {true, false})
    for (int threads : {1, 2}) EXPECT_TRUE(detectionsOf(r.dir, exact, threads).sameBits(engine[0]));
  const auto got = detections(engine[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i][1], want[i][1]) << "record " << i << ": label";
    for (int k = 2; k < 7; ++k) EXPECT_NEAR(got[i][k], want[i][k], 1e-4) << "record " << i << ", value " << k;
  }
  o.calibration["data"] = {c.inputs.at("data")};
  for (const char* target : {"tidl", "generic-int8"}) {
    o.target = target;
    o.prefix = std::string("jdet_") + target;
    TranslateResult q = translate(o);
    ASSERT_TRUE(q.ok) << target << ": " << (q.errors.empty() ? "" : q.errors[0].rule + ": " + q.errors[0].actual);
    const auto d = detections(detectionsOf(q.dir, false, 1));
    for (size_t i = 0; i < d.size(); ++i) {
      EXPECT_EQ(d[i][1], std::round(d[i][1])) << target << " record " << i;
      EXPECT_GE(d[i][2], 0.5f) << target << " record " << i << ": below the confidence threshold";
      if (i) {
        EXPECT_LE(d[i][2], d[i - 1][2]) << target << ": records out of score order";
      }
    }
    std::printf("[caffe] jdetnet %-12s %zu detections, %d of them match a float detection (label, IoU >= 0.5); "
                "float: %zu\n", target, d.size(), matched(d, want), want.size());
  }
}

// The JacintoNet11-shaped classifier in packages: generic gives the engine's bits (and so OpenCV's class
// probabilities, MatchesOpenCv), exact and fast; tidl (int8-pow2, the guide's 12-bit weights) and generic-int8,
// calibrated on the picture, give OpenCV's class.
TEST(Caffe, JacintoNet11TranslatesForEveryTarget) {
  Case c = readCase("jacintonet11");
  const fs::path dir = kData / "jacintonet11";
  const std::vector<Tensor> engine = Session(Model::loadCaffe(dir / "model.prototxt", dir / "model.caffemodel")).run(c.inputs);
  auto top1 = [](const Tensor& t) {
    const auto v = t.values<float>();
    return std::max_element(v.begin(), v.end()) - v.begin();
  };
  const auto want = top1(c.expected.at("prob"));
  TranslateOptions o;
  o.onnx = dir / "model.prototxt";
  o.caffe_model = dir / "model.caffemodel";
  o.out_root = test::scratchDir("j11_pkg");
  o.target = "generic";
  o.prefix = "j11";
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok) << (r.errors.empty() ? "" : r.errors[0].rule + ": " + r.errors[0].actual);
  for (bool exact : {true, false})
    EXPECT_TRUE(Runtime(r.dir, {2, exact}).run({c.inputs.at("data")})[0].sameBits(engine[0]));
  o.calibration["data"] = {c.inputs.at("data")};
  for (const char* target : {"tidl", "generic-int8"}) {
    o.target = target;
    o.prefix = std::string("j11_") + target;
    TranslateResult q = translate(o);
    ASSERT_TRUE(q.ok) << target << ": " << (q.errors.empty() ? "" : q.errors[0].rule + ": " + q.errors[0].actual);
    EXPECT_EQ(top1(Runtime(q.dir).run({c.inputs.at("data")})[0]), want) << target;
    // The inner product is a row of the time estimate: its helper Reshape is named "fc10/flatten", not after the
    // layer (one name for both dropped the Gemm with the Reshape's alias: the estimate left it out, exit 0).
    std::ifstream summary(q.dir / (o.prefix + "_summary.csv"));
    std::set<std::string> names;
    bool fc = false;
    for (std::string line; std::getline(summary, line);) {
      const std::string name = line.substr(line.find(',') + 1, line.find(',', line.find(',') + 1) - line.find(',') - 1);
      EXPECT_TRUE(name.empty() || names.insert(name).second) << "two rows named " << name;
      fc = fc || (name == "fc10" && line.find(",Gemm,") != std::string::npos);
    }
    EXPECT_TRUE(fc) << target << ": no row for the inner product fc10";
  }
  // TIDL's foldBnInConv2D = 0 (--keep-batchnorm): the batch norms stay layers of their own (integer depthwise 1x1
  // convolutions; Caffe's Scale after each one its own too), and the class is still the float one.
  o.target = "tidl";
  o.prefix = "j11_unfolded";
  o.fold_batchnorm = false;
  TranslateResult u = translate(o);
  ASSERT_TRUE(u.ok);
  auto convs = [](const fs::path& dir) {
    int n = 0;
    const Runtime rt(dir);  // (a named runtime: the range-for over a temporary's layers() read freed memory)
    for (const RuntimeLayer& l : rt.layers()) n += l.kind == "conv";
    return n;
  };
  EXPECT_EQ(convs(u.dir), 31);  // 10 convolutions, 10 batch norms, their 10 scales, the input's normalisation
  EXPECT_EQ(convs(u.dir.parent_path() / "j11_tidl"), 11);
  EXPECT_EQ(top1(Runtime(u.dir).run({c.inputs.at("data")})[0]), want);
}

// The net's outputs are the blobs no later layer reads, named as in the prototxt; the training net's layers and the
// in-place chain leave one output per blob.
TEST(Caffe, InterfaceNamesAndShapes) {
  Model m = Model::loadCaffe(kData / "small_net/model.prototxt", kData / "small_net/model.caffemodel");
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "data");
  EXPECT_EQ(m.inputs()[0].shape, (Shape{1, 1, 12, 12}));
  ASSERT_EQ(m.outputs().size(), 1u);
  EXPECT_EQ(m.outputs()[0].name, "prob");
  EXPECT_EQ(m.outputs()[0].shape, (Shape{1, 3}));
  LoadOptions lo;
  lo.input_shapes["data"] = {2, 1, 12, 12};
  Model b = Model::loadCaffe(kData / "small_net/model.prototxt", kData / "small_net/model.caffemodel", lo);
  EXPECT_EQ(b.outputs()[0].shape, (Shape{2, 3}));
}

// An in-place layer on a network input: the input keeps its name (it is fed by it); the blob's last value is an
// output named after the layer that wrote it.
TEST(Caffe, InPlaceOnAnInput) {
  fs::path d = test::scratchDir("m");
  writeAll(d / "net.prototxt",
           "input: \"data\"\ninput_shape { dim: 1 dim: 2 }\n"
           "layer { name: \"relu\" type: \"ReLU\" bottom: \"data\" top: \"data\" }\n"
           "layer { name: \"tanh\" type: \"TanH\" bottom: \"data\" top: \"data\" }\n");
  writeAll(d / "net.caffemodel", "");
  Model m = Model::loadCaffe(d / "net.prototxt", d / "net.caffemodel");
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "data");
  ASSERT_EQ(m.outputs().size(), 1u);
  EXPECT_EQ(m.outputs()[0].name, "data/tanh");
  std::vector<Tensor> y = Session(m).run({{"data", Tensor::fromVector<float>({1, 2}, {-1.0f, 0.5f})}});
  EXPECT_EQ(y[0].values<float>()[0], 0.0f);
  EXPECT_FLOAT_EQ(y[0].values<float>()[1], std::tanh(0.5f));
}

// The same network as ONNX (npuc's export of the imported Caffe model, loaded back through the ONNX frontend) gives
// the same outputs bit for bit. (Not the pooling model: its ave_hw rounds up along H, and along W the rule that
// drops a window starting in the right padding applies — which ONNX 1.12's shape inference, the cross-check of the
// ONNX import, does not know.)
TEST(Caffe, SameOutputsAsOnnx) {
  for (const char* name : {"conv", "inner_product", "activations", "eltwise_concat", "batch_norm", "shapes", "small_net"}) {
    Case c = readCase(name);
    fs::path dir = kData / name;
    Model caffe = Model::loadCaffe(dir / "model.prototxt", dir / "model.caffemodel");
    Model onnx = Model::fromOnnxBytes(caffe.toOnnxBytes(), std::string(name) + ".onnx");
    std::vector<Tensor> a = Session(caffe).run(c.inputs), b = Session(onnx).run(c.inputs);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].nbytes(), b[i].nbytes());
      EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << name << " output " << i;
    }
  }
}

// docs/frontends.md's table of Caffe layers is the importer's list: one row per layer type it imports, no other.
TEST(Caffe, DocumentedLayersAreTheImportersTable) {
  std::vector<std::string> imported = caffe_io::supportedLayers();
  std::sort(imported.begin(), imported.end());
  EXPECT_EQ(test::documentedOps("| Caffe layer |"), imported);
}

// Every layer type the importer maps is in a stored test model (compared with OpenCV or numpy by MatchesOpenCv).
TEST(Caffe, EveryImportedLayerHasATestModel) {
  std::string all;
  for (const auto& e : fs::directory_iterator(kData))
    if (fs::exists(e.path() / "model.prototxt")) all += readAll(e.path() / "model.prototxt");
  for (const std::string& type : caffe_io::supportedLayers())
    EXPECT_NE(all.find("type: \"" + type + "\""), std::string::npos) << type << " is in no test model";
}

// --- bad input ---

class CaffeBadInput : public ::testing::Test {
 protected:
  /// Loads `prototxt` with the weights of `weights_of` (a test model's), or `weights` when given; returns the error.
  Error loadError(const std::string& prototxt, const std::string& weights_of = "conv", const std::string* weights = nullptr) {
    fs::path d = test::scratchDir("m");
    writeAll(d / "net.prototxt", prototxt);
    writeAll(d / "net.caffemodel", weights ? *weights : readAll(kData / weights_of / "model.caffemodel"));
    try {
      Model::loadCaffe(d / "net.prototxt", d / "net.caffemodel");
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "the model loaded";
    return Error(ErrorCode::kInternal, "");
  }
  static std::string conv(const std::string& params = "num_output: 4 kernel_size: 3 pad: 1 stride: 2",
                          const std::string& extra = "") {
    return "layer { name: \"data\" type: \"Input\" top: \"data\" input_param { shape { dim: 1 dim: 3 dim: 9 dim: 9 } } }\n"
           "layer { name: \"conv1\" type: \"Convolution\" bottom: \"data\" top: \"conv1\" convolution_param { " +
           params + " } " + extra + " }\n";
  }
};

#define EXPECT_HAS(err, text) EXPECT_NE(std::string((err).what()).find(text), std::string::npos) << (err).what()

TEST_F(CaffeBadInput, GarbagePrototxt) {
  Error e = loadError("layer { name: \"x\" type: ");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
  EXPECT_HAS(e, "net.prototxt");
  EXPECT_HAS(e, "line 1:");
  Error bin = loadError(readAll(kData / "conv/model.caffemodel"));
  EXPECT_EQ(bin.code(), ErrorCode::kInvalidInput);
  EXPECT_HAS(bin, "not a valid Caffe network description");
}

TEST_F(CaffeBadInput, GarbageAndTruncatedWeights) {
  std::string junk = "this is not a caffemodel at all \xff\xff\xff\xff";
  Error e = loadError(conv(), "", &junk);
  EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
  EXPECT_HAS(e, "net.caffemodel");
  // Cut anywhere, a file is either refused as corrupt or lacks the layer's blobs: an error naming it every time.
  std::string full = readAll(kData / "conv/model.caffemodel");
  for (size_t cut : {size_t{0}, size_t{3}, full.size() / 3, full.size() / 2, full.size() - 1}) {
    std::string part = full.substr(0, cut);
    Error t = loadError(conv(), "", &part);
    EXPECT_EQ(t.code(), ErrorCode::kInvalidInput) << cut;
    EXPECT_HAS(t, "net.caffemodel");
  }
}

TEST_F(CaffeBadInput, MissingAndWrongSizedBlobs) {
  Error missing = loadError(conv(), "pooling");  // a caffemodel with no layer 'conv1'
  EXPECT_HAS(missing, "layer 'conv1' (Convolution)");
  EXPECT_HAS(missing, "blob 0 (weights) is missing");
  Error size = loadError(conv("num_output: 5 kernel_size: 3 pad: 1 stride: 2"));
  EXPECT_HAS(size, "layer 'conv1' (Convolution)");
  EXPECT_HAS(size, "blob 0 (weights) holds 108 values");
  EXPECT_HAS(size, "5x3x3x3");
}

TEST_F(CaffeBadInput, UnknownLayerTypeAndFields) {
  Error type = loadError(conv() + "layer { name: \"p\" type: \"PriorBoxy\" bottom: \"conv1\" top: \"p\" }\n");
  EXPECT_EQ(type.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(type, "layer 'p' (PriorBoxy)");
  EXPECT_HAS(type, "not one npuc imports");
  Error field = loadError(conv("num_output: 4 kernel_size: 3 pad: 1 stride: 2 padding_mode: 2"));
  EXPECT_EQ(field.code(), ErrorCode::kInvalidInput);
  EXPECT_HAS(field, "padding_mode");
  EXPECT_HAS(field, "caffe.ConvolutionParameter");
  // A field of the layer npuc does not read (training settings) is skipped.
  fs::path d = test::scratchDir("ok");
  writeAll(d / "net.prototxt", conv("num_output: 4 kernel_size: 3 pad: 1 stride: 2",
                                    "param { lr_mult: 1 } transform_param { scale: 0.5 } some_fork_param { x: 1 }"));
  EXPECT_NO_THROW(Model::loadCaffe(d / "net.prototxt", kData / "conv/model.caffemodel"));
}

TEST_F(CaffeBadInput, UndefinedBottomsAndOrder) {
  Error e = loadError(conv() + "layer { name: \"r\" type: \"ReLU\" bottom: \"nope\" top: \"r\" }\n");
  EXPECT_HAS(e, "layer 'r' (ReLU)");
  EXPECT_HAS(e, "bottom 'nope' is not written by any earlier layer");
  // A cycle can only be written as a bottom read before it is written: the same rule.
  Error cyc = loadError("layer { name: \"data\" type: \"Input\" top: \"data\" input_param { shape { dim: 1 dim: 3 } } }\n"
                        "layer { name: \"a\" type: \"TanH\" bottom: \"b\" top: \"a\" }\n"
                        "layer { name: \"b\" type: \"TanH\" bottom: \"a\" top: \"b\" }\n");
  EXPECT_HAS(cyc, "layer 'a' (TanH)");
  EXPECT_HAS(cyc, "bottom 'b'");
  Error dup = loadError(conv() + "layer { name: \"conv1\" type: \"ReLU\" bottom: \"conv1\" top: \"conv1\" }\n");
  EXPECT_HAS(dup, "a second layer of this name");
}

TEST_F(CaffeBadInput, LayerRules) {
  Error group = loadError(conv("num_output: 4 kernel_size: 3 group: 2"));
  EXPECT_HAS(group, "group 2 must divide the input channels (3)");
  Error slice = loadError(conv() + "layer { name: \"s\" type: \"Slice\" bottom: \"conv1\" top: \"a\" top: \"b\" "
                                   "slice_param { slice_point: 3 slice_point: 1 } }\n");
  EXPECT_HAS(slice, "layer 's' (Slice)");
  EXPECT_HAS(slice, "2 slice_point values for 2 tops");
  Error v1 = loadError("layers { name: \"x\" type: CONVOLUTION bottom: \"data\" top: \"x\" }\n");
  EXPECT_EQ(v1.code(), ErrorCode::kUnsupported);
  EXPECT_HAS(v1, "V1 'layers'");
  Error noinput = loadError("layer { name: \"t\" type: \"TanH\" bottom: \"x\" top: \"t\" }\n");
  EXPECT_HAS(noinput, "bottom 'x'");
  // SSD's layers: a PriorBox's sizes and variances, a DetectionOutput's class count and operands.
  auto prior = [&](const std::string& params) {
    return conv() + "layer { name: \"pb\" type: \"PriorBox\" bottom: \"conv1\" bottom: \"data\" top: \"pb\" "
                    "prior_box_param { " + params + " } }\n";
  };
  EXPECT_HAS(loadError(prior("max_size: 4")), "needs at least one min_size");
  EXPECT_HAS(loadError(prior("min_size: 4 max_size: 3")), "max_size 3 must be larger than its min_size 4");
  EXPECT_HAS(loadError(prior("min_size: 4 variance: 0.1 variance: 0.2")), "2 variance values");
  EXPECT_HAS(loadError(prior("min_size: 4 aspect_ratio: -2")), "aspect_ratio -2 must be positive");
  Error det = loadError(prior("min_size: 4") +
                        "layer { name: \"det\" type: \"DetectionOutput\" bottom: \"data\" bottom: \"conv1\" "
                        "bottom: \"pb\" top: \"det\" detection_output_param { num_classes: 2 } }\n");
  EXPECT_HAS(det, "layer 'det'");
  EXPECT_HAS(det, "location predictions hold 243 values an image; 25 priors");
}

// Randomly damaged descriptions and weights (bytes changed, cut, repeated): every outcome is a graph or an
// npuc::Error — the fuzz target's property (fuzz/fuzz_caffe_loader.cpp), checked here on every build.
TEST(CaffeBadInputRandom, DamagedFilesGiveErrorsNotCrashes) {
  std::mt19937 rng(50);
  int loaded = 0, refused = 0;
  for (const char* name : {"conv", "pooling", "eltwise_concat", "batch_norm", "shapes", "small_net"}) {
    const std::string text = readAll(kData / name / "model.prototxt"), weights = readAll(kData / name / "model.caffemodel");
    for (int i = 0; i < 150; ++i) {
      std::string t = text, w = weights;
      std::string& victim = i % 2 ? t : w;
      switch (rng() % 4) {
        case 0: victim.resize(rng() % (victim.size() + 1)); break;
        case 1:
          for (int k = 0; k < 1 + int(rng() % 4); ++k) victim[rng() % victim.size()] = char(rng());
          break;
        case 2: {
          size_t at = rng() % victim.size();
          victim.insert(at, victim.substr(rng() % victim.size(), 1 + rng() % 40));
          break;
        }
        default: victim[rng() % victim.size()] = "0123456789-{}:\" \n"[rng() % 17]; break;
      }
      try {
        auto g = caffe_io::importText(t, "x.prototxt", w.data(), w.size(), "x.caffemodel");
        ++loaded;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  std::printf("[caffe] damaged files: %d loaded, %d refused with an error\n", loaded, refused);
  EXPECT_GT(refused, 0);
}

}  // namespace
