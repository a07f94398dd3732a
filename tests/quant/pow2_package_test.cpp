// int8-pow2 packages (docs/numerics.md): what the translator writes, what the reader refuses, and the simulator's
// fast and exact modes over a sequence of frames. The numbers themselves are checked against an independent oracle
// in tests/python/test_pow2.py.
#include "npuc/model.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "ops/registry.hpp"
#include "npuc/runtime.hpp"
#include "package/package.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"

#include "random_tensor.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <cstring>
#include <functional>
#include <unistd.h>

namespace npuc {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using Files = std::map<std::string, std::vector<uint8_t>>;

const std::string kSrc = NPUC_SOURCE_DIR;

TranslateOptions pow2Options(const std::string& prefix, const std::string& onnx, const std::string& folder) {
  TranslateOptions o;
  o.prefix = prefix;
  o.onnx = onnx;
  o.target = "tidl";
  o.out_root = fs::temp_directory_path() / (folder + std::to_string(::getpid()));
  return o;
}

Files readFiles(const fs::path& dir) {
  Files f;
  for (auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    f[e.path().filename().string()] = std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
  }
  return f;
}

package::Package readFrom(const Files& f) {
  return package::readPackage([&](const std::string& n, uint64_t) -> std::optional<std::vector<uint8_t>> {
    auto it = f.find(n);
    if (it == f.end()) return std::nullopt;
    return it->second;
  }, "pkg");
}

void reseal(Files& f) {
  const auto& m = f.at("manifest.json");
  std::string s = package::resealManifest(std::string(m.begin(), m.end()), f);
  f["manifest.json"] = std::vector<uint8_t>(s.begin(), s.end());
}

void expectRefused(const Files& f, const std::string& fragment) {
  try {
    readFrom(f);
    ADD_FAILURE() << "accepted; expected an error with: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Int8Pow2Package, TheReaderChecksOptionsTablesAndSlots) {
  TranslateOptions o = pow2Options("dg", kSrc + "/models/digits/digits_cnn.onnx", "npuc_pow2_read_");
  o.calibration["input"] = {readNpy(kSrc + "/models/digits/test_x.npy")};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  const Files good = readFiles(r.dir);
  ASSERT_TRUE(good.count("manifest.json") && good.count("dg_pow2_table.csv"));
  package::Package p = readFrom(good);
  ASSERT_EQ(p.numerics, Numerics::kInt8Pow2);
  ASSERT_TRUE(p.pow2);
  EXPECT_EQ(p.pow2->slots, 6u);  // the input, three convolutions, the average, the logits
  EXPECT_EQ(p.pow2->options, kernels::pow2::Options{});

  // The translation is deterministic: the same files again.
  TranslateResult r2 = translate(o);
  const Files again = readFiles(r2.dir);
  ASSERT_EQ(again.size(), good.size());
  for (auto& [name, bytes] : good)
    EXPECT_EQ(std::string(bytes.begin(), bytes.end()), std::string(again.at(name).begin(), again.at(name).end())) << name;

  auto withManifest = [&](const std::function<void(json&)>& edit) {
    Files f = good;
    json j = json::parse(f.at("manifest.json"));
    edit(j);
    std::string s = j.dump(1);
    f["manifest.json"] = std::vector<uint8_t>(s.begin(), s.end());
    reseal(f);
    return f;
  };
  expectRefused(withManifest([](json& j) { j["pow2"]["quant_round_add"] = 101; }), "quant_round_add");
  expectRefused(withManifest([](json& j) { j["pow2"]["quant_history_param2"] = 150; }), "quant_history_param2");
  expectRefused(withManifest([](json& j) { j["pow2"]["dynamic"] = 1; }), "pow2.dynamic");
  expectRefused(withManifest([](json& j) { j.erase("pow2"); }), "pow2");
  expectRefused(withManifest([](json& j) { j["pow2"]["slots"] = 3; }), "slot");
  expectRefused(withManifest([](json& j) { j["numerics"] = "int8-affine"; }), "pow2");

  // A table's words, changed in the weight file.
  const package::Descriptor* conv = nullptr;
  for (const package::Descriptor& d : p.mac)
    if (d.kind == package::LayerKind::kConv && !conv) conv = &d;
  ASSERT_NE(conv, nullptr);
  const uint64_t weight_base = p.element("weight")->addr;
  const uint64_t table_at = conv->in(3).addr - weight_base;
  auto withWord = [&](int k, int32_t v) {
    Files f = good;
    std::memcpy(f.at("dg_weight.dat").data() + table_at + 4 * k, &v, 4);
    reseal(f);
    return f;
  };
  expectRefused(withWord(1, 40), "input slot 40 is not below");        // its input's slot
  expectRefused(withWord(2, 0), "written by two layers");              // its output slot: the input's
  expectRefused(withWord(3, 1), "y is uint8, the table says int8");    // signedness
  expectRefused(withWord(4, 7), "unknown activation code 7");
  expectRefused(withWord(10, 99), "outside [-24, 24]");                // qw
  expectRefused(withWord(0, 3), "words");                              // the input count
  fs::remove_all(o.out_root);
}

/// n fashion-sized pictures [n, 1, 28, 28], each value gain * U(0, 1) drawn from rng in order.
Tensor uniformPictures(std::mt19937& rng, int64_t n, float gain = 1.0f) {
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Tensor x(DType::kF32, Shape{n, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = gain * u(rng);
  return x;
}

/// The package's first output over `frames` run as one sequence (the dynamic quantization's state carried from frame
/// to frame), each frame's bytes.
std::vector<std::string> frameSequence(const fs::path& dir, const std::vector<Tensor>& frames, int threads, bool exact) {
  Runtime rt(dir, RuntimeOptions{threads, exact});
  std::vector<std::string> out;
  for (const Tensor& x : frames) {
    Tensor y = rt.run({x}).at(0);
    out.emplace_back(static_cast<const char*>(y.raw()), y.nbytes());
  }
  return out;
}

TEST(Int8Pow2Package, FastIsExactOverAFrameSequenceAtEveryThreadCount) {
  // fashion_resnet: convolutions, residual adds with their Relu, global average pooling, an inner product; dynamic
  // quantization over 10 frames (the scales move from frame to frame), fast == --exact at 1, 2 and 3 threads.
  TranslateOptions o = pow2Options("fr", kSrc + "/models/fashion/fashion_resnet.onnx", "npuc_pow2_seq_");
  std::mt19937 rng(3);
  o.calibration["input"] = {uniformPictures(rng, 16)};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  std::vector<Tensor> frames;
  for (int f = 0; f < 10; ++f) frames.push_back(uniformPictures(rng, 1, 0.3f + 0.35f * static_cast<float>(f)));
  auto sequence = [&](int threads, bool exact) { return frameSequence(r.dir, frames, threads, exact); };
  {  // A malformed add (its op word out of range) is refused by the reader, not read out of bounds.
    Files f = readFiles(r.dir);
    package::Package pk = readFrom(f);
    const package::Descriptor* add = nullptr;
    for (const package::Descriptor& d : pk.vec)
      if (d.kind == package::LayerKind::kBinary && !add) add = &d;
    ASSERT_NE(add, nullptr);
    const uint32_t bad_op = 0xFFFFFFFFu;
    std::memcpy(f.at("drp_param.bin").data() + (add->param_addr - pk.element("drp_param")->addr), &bad_op, 4);
    reseal(f);
    expectRefused(f, "the int8-pow2 form is an addition, a maximum, a product or a PRelu");
    const auto& names = package::binaryOpNames();  // Sub: a known op without an int8-pow2 form
    const uint32_t sub_op = static_cast<uint32_t>(std::find(names.begin(), names.end(), "Sub") - names.begin());
    ASSERT_LT(sub_op, names.size());
    std::memcpy(f.at("drp_param.bin").data() + (add->param_addr - pk.element("drp_param")->addr), &sub_op, 4);
    reseal(f);
    expectRefused(f, "the int8-pow2 form is an addition, a maximum, a product or a PRelu");
  }
  {  // Runtime::outputScale: each layer's codes at this frame's q. The output (a dequantize of the last codes) is those
     // codes times their scale; the scales move with the frames; a max pooling keeps its input's.
    Runtime rt(r.dir);
    std::set<std::map<int, double>> per_frame;
    for (const Tensor& x : frames) {
      std::map<int, double> scale;
      Tensor codes;
      rt.setInput(rt.inputs()[0].name, x);
      rt.run([&](const RuntimeLayer& l, const Tensor& y) {
        scale[l.seq] = rt.outputScale(l.seq);
        if (l.kind == "max_pool") {
          EXPECT_EQ(scale[l.seq], scale[l.seq - 1]) << l.name;
        }
        if (l.kind != "dequantize") {
          EXPECT_GT(scale[l.seq], 0.0) << l.name;
          codes = y.clone();
        } else {
          EXPECT_EQ(scale[l.seq], 0.0) << l.name;  // (float out)
        }
      });
      const int last = static_cast<int>(rt.layers().size()) - 2;  // (the codes the final dequantize reads)
      ASSERT_EQ(rt.layers().back().kind, "dequantize");
      const Tensor y = rt.outputFloat(rt.outputs()[0].name);
      ASSERT_EQ(y.numel(), codes.numel());
      for (int64_t i = 0; i < y.numel(); ++i)
        ASSERT_EQ(y.data<float>()[i], static_cast<float>(codes.data<int8_t>()[i] * scale[last])) << i;
      per_frame.insert(scale);
    }
    EXPECT_GT(per_frame.size(), 1u);  // (q's moved with the frames' ranges)
    EXPECT_THROW(rt.outputScale(static_cast<int>(rt.layers().size())), Error);
  }
  const auto ref = sequence(1, true);
  std::set<std::string> distinct(ref.begin(), ref.end());
  EXPECT_EQ(distinct.size(), ref.size());
  for (int threads : {1, 2, 3}) {
    EXPECT_EQ(sequence(threads, false), ref) << "fast, " << threads << " threads";
    EXPECT_EQ(sequence(threads, true), ref) << "exact, " << threads << " threads";
  }
  fs::remove_all(o.out_root);
}

// TIDL's 8-bit layers (tests/data/quant/pow2_forms.onnx): Slice, Split, a channel shuffle, a nearest Resize and a
// global max pooling move codes, Max, Mul and PRelu are integer layers, ArgMax reads the codes — the package is wholly integer between the
// input's quantize and the outputs' dequantizes, and over a frame sequence fast == --exact at 1, 2 and 3 threads,
// every output. (The
// numbers themselves: tests/python/test_pow2.py's oracle.)
TEST(Int8Pow2Package, TidlEightBitLayersAreIntegerAndFastIsExact) {
  TranslateOptions o = pow2Options("pf", kSrc + "/tests/data/quant/pow2_forms.onnx", "npuc_pow2_forms_");
  o.relax = {"reshape-transpose"};  // (the channel shuffle: beyond the guide's Reshape / Transpose, npuc moves its codes)
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  auto frame = [&](float gain) {
    Tensor x(DType::kF32, {1, 3, 12, 12});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = gain * nd(rng);
    return x;
  };
  Tensor calib(DType::kF32, {8, 3, 12, 12});
  for (int64_t i = 0; i < calib.numel(); ++i) calib.data<float>()[i] = nd(rng);
  o.calibration["x"] = {calib};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime probe(r.dir);
  std::map<std::string, int> kinds;
  for (const RuntimeLayer& l : probe.layers()) ++kinds[l.kind];
  EXPECT_EQ(kinds["quantize"], 1);
  EXPECT_EQ(kinds["dequantize"], 5);  // (the logits, the peaks, the probabilities, the two upsampled maps; not ArgMax's)
  EXPECT_EQ(kinds["softmax"], 1);
  EXPECT_EQ(kinds["conv_transpose"], 1);
  EXPECT_EQ(kinds["global_max_pool"], 1);
  EXPECT_EQ(kinds["resize"], 2);  // (nearest, moving codes; bilinear, integer weights)
  {  // A resize of codes that would interpolate (its mode word made linear) is refused by the reader.
    const Files f = readFiles(r.dir);
    const package::Package pk = readFrom(f);
    auto layer = [&](package::LayerKind kind, int n_in) {  // (the first descriptor of that kind and input count)
      for (const auto* list : {&pk.vec, &pk.mac})
        for (const package::Descriptor& d : *list)
          if (d.kind == kind && (n_in < 0 || d.n_in == n_in)) return &d;
      return static_cast<const package::Descriptor*>(nullptr);
    };
    auto withWord = [&](const package::Descriptor* d, const char* file, uint64_t at, auto value) {
      Files g = f;
      const uint64_t base = std::string(file) == "drp_param.bin" ? pk.element("drp_param")->addr : pk.element("weight")->addr;
      std::memcpy(g.at(file).data() + (at - base), &value, sizeof value);
      reseal(g);
      return g;
    };
    const package::Descriptor* rs = layer(package::LayerKind::kResize, 1);  // the nearest one: no table
    const package::Descriptor* sm = layer(package::LayerKind::kSoftmax, -1);
    const package::Descriptor* bi = layer(package::LayerKind::kResize, 2);  // the bilinear one: its table
    ASSERT_TRUE(rs && sm && bi);
    expectRefused(withWord(rs, "drp_param.bin", rs->param_addr, uint32_t{1}),
                  "only a nearest resize (not tf_crop_and_resize) takes other values than float32");
    // The softmax's bytes: a LogSoftmax kind word, or a q other than 8 in its table (words: n_in, its slot, then the
    // output's slot, signed, act, clip x2, init x2, fixed q), is refused.
    expectRefused(withWord(sm, "drp_param.bin", sm->param_addr, uint32_t{1}), "the int8-pow2 softmax is kind 0 over an axis of x, got kind 1");
    expectRefused(withWord(sm, "pf_weight.dat", sm->in(1).addr + 4 * 9, int32_t{7}), "writes unsigned codes at the fixed q 8, got unsigned q 7");
    // The bilinear resize's interpolation word made nearest: its table says it computes, so it must interpolate.
    expectRefused(withWord(bi, "drp_param.bin", bi->param_addr, uint32_t{0}), "the int8-pow2 resize interpolates");
  }
  EXPECT_EQ(kinds["binary"], 3);      // Max, Mul, PRelu
  EXPECT_EQ(kinds["arg_reduce"], 1);
  std::vector<Tensor> frames;
  for (int f = 0; f < 6; ++f) frames.push_back(frame(0.4f + 0.4f * static_cast<float>(f)));
  auto sequence = [&](int threads, bool exact) {
    Runtime rt(r.dir, RuntimeOptions{threads, exact});
    std::vector<std::string> out;
    for (const Tensor& x : frames)
      for (const Tensor& y : rt.run({x})) out.emplace_back(static_cast<const char*>(y.raw()), y.nbytes());
    return out;
  };
  const auto ref = sequence(1, true);
  ASSERT_EQ(ref.size(), 6 * frames.size());
  for (int threads : {1, 2, 3}) {
    EXPECT_EQ(sequence(threads, false), ref) << "fast, " << threads << " threads";
    EXPECT_EQ(sequence(threads, true), ref) << "exact, " << threads << " threads";
  }
  fs::remove_all(o.out_root);
}

// fashion_dense (a DenseNet-style model): its batch norms that no convolution absorbs run as integer depthwise 1x1
// convolutions with their ReLU (TIDL's BatchNorm layer), between integer concatenations and average pools — the
// package is wholly integer, and over a frame sequence fast == --exact at 1, 2 and 3 threads.
TEST(Int8Pow2Package, ADenseNetsBatchNormsAreIntegerLayers) {
  TranslateOptions o = pow2Options("fd", kSrc + "/models/fashion/fashion_dense.onnx", "npuc_pow2_dense_");
  std::mt19937 rng(8);
  o.calibration["input"] = {uniformPictures(rng, 8)};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime probe(r.dir);
  int dw = 0, conversions = 0;
  for (const RuntimeLayer& l : probe.layers()) {
    EXPECT_NE(l.kind, "channel_affine") << l.name;
    conversions += l.kind == "quantize" || l.kind == "dequantize";
    dw += l.kind == "conv" && l.name.find("BatchNormalization") != std::string::npos;
  }
  EXPECT_EQ(conversions, 2);  // the input's quantize and the output's dequantize: no float layer between
  EXPECT_EQ(dw, 15);          // (the stem's batch norm folds into its convolution)
  std::vector<Tensor> frames;
  for (int f = 0; f < 5; ++f) frames.push_back(uniformPictures(rng, 1, 0.4f + 0.3f * static_cast<float>(f)));
  auto sequence = [&](int threads, bool exact) { return frameSequence(r.dir, frames, threads, exact); };
  const auto ref = sequence(1, true);
  for (int threads : {1, 2, 3}) {
    EXPECT_EQ(sequence(threads, false), ref) << "fast, " << threads << " threads";
    if (threads > 1) {
      EXPECT_EQ(sequence(threads, true), ref) << "exact, " << threads << " threads";
    }
  }
  fs::remove_all(o.out_root);
}

/// The package at `dir` on input t: its output follows the float model's at `onnx` (cosine >= 0.999), and fast ==
/// --exact at 1 and 2 threads.
void expectFollowsFloatAndFastIsExact(const fs::path& dir, const fs::path& onnx, const Tensor& t) {
  const Tensor want = Session(Model::load(onnx)).run({t})[0];
  const Tensor got = Runtime(dir).run({t})[0];
  ASSERT_EQ(got.shape(), want.shape());
  double dot = 0, gg = 0, ww = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double p = got.data<float>()[i], q = want.data<float>()[i];
    dot += p * q, gg += p * p, ww += q * q;
  }
  EXPECT_GE(dot / std::sqrt(gg * ww), 0.999);
  for (int threads : {1, 2})
    for (bool exact : {false, true})
      EXPECT_TRUE(Runtime(dir, RuntimeOptions{threads, exact}).run({t})[0].sameBits(got)) << threads << " " << exact;
}

// A local response normalisation (Caffe's LRN, which the guide merges into the layer before without an integer form,
// T:L239) translates for tidl as a float32 layer between a dequantize and a quantize: the integer convolutions around
// it stay integer, the output follows the float model, fast == --exact at 1 and 2 threads.
TEST(Int8Pow2Package, TidlRunsALocalResponseNormInFloatBetweenIntegerLayers) {
  const fs::path dir = test::scratchDir("pow2_lrn");
  ir::Graph g;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 3, 12, 12})).id;
  g.inputs().push_back(x);
  ir::ValueId a = g.addValue("a").id, h = g.addValue("h").id, n = g.addValue("n").id, y = g.addValue("y").id;
  ir::Node& c1 = g.addNode("Conv", "conv1", {x, g.addConstant("w1", test::uniform({8, 3, 3, 3}, -0.5f, 0.5f, 1)).id}, {a});
  c1.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  g.addNode("Relu", "relu1", {a}, {h});
  ir::Node& lrn = g.addNode("LRN", "norm1", {h}, {n});
  lrn.attrs["size"] = int64_t{5};
  lrn.attrs["alpha"] = 0.05f;  // (large enough that the normalisation moves the values: 1 + 0.01 * sum of squares)
  lrn.attrs["beta"] = 0.75f;
  lrn.attrs["bias"] = 1.0f;
  ir::Node& c2 = g.addNode("Conv", "conv2", {n, g.addConstant("w2", test::uniform({4, 8, 3, 3}, -0.5f, 0.5f, 2)).id}, {y});
  c2.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  g.outputs().push_back(y);
  ops::inferShapes(g);
  onnx_io::exportFile(g, dir / "lrn.onnx");
  TranslateOptions o = pow2Options("lrn", (dir / "lrn.onnx").string(), "npuc_pow2_lrn_");
  o.out_root = dir;
  o.calibration["x"] = {test::uniform({8, 3, 12, 12}, 0.0f, 4.0f, 3)};
  const TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok) << (r.errors.empty() ? "" : r.errors[0].rule + ": " + r.errors[0].actual);
  Runtime probe(r.dir);
  std::vector<std::string> kinds;
  for (const RuntimeLayer& l : probe.layers()) kinds.push_back(l.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"quantize", "conv", "dequantize", "lrn", "quantize", "conv", "dequantize"}));
  const Tensor t = test::uniform({1, 3, 12, 12}, 0.0f, 4.0f, 4);
  expectFollowsFloatAndFastIsExact(r.dir, dir / "lrn.onnx", t);
}

// TIDL's Pad layer (TIDL_PadLayer, T:L151, T:L170): a zero Pad that no convolution or pooling takes in moves the codes
// (code 0 is 0 at every scale), and a zero Pad folded into a MaxPool of unsigned codes is an integer max pool (a padding
// of 0 never wins over values of 0 and more) — the package wholly integer; over signed codes the padding could win, so
// that max pool stays float. The reader refuses a pad of codes with another value than 0.
TEST(Int8Pow2Package, TidlPadsCodesWithZeros) {
  const fs::path dir = test::scratchDir("pow2_pad");
  auto graph = [](bool relu) {
    ir::Graph g;
    ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 3, 16, 16})).id;
    g.inputs().push_back(x);
    ir::ValueId pads = g.addConstant("pads", Tensor::fromVector<int64_t>({8}, {0, 0, 1, 1, 0, 0, 1, 1})).id;
    ir::ValueId zero = g.addConstant("zero", Tensor::scalar(0.0f)).id;
    ir::ValueId a1 = g.addValue("a1").id, a2 = g.addValue("a2").id, c1 = a1, c2 = a2, p1 = g.addValue("p1").id,
                cat = g.addValue("cat").id, catp = g.addValue("catp").id, y = g.addValue("y").id;
    g.addNode("Conv", "conv1", {x, g.addConstant("w1", test::uniform({8, 3, 3, 3}, -0.5f, 0.5f, 1)).id}, {a1});
    ir::Node& conv2 = g.addNode("Conv", "conv2", {x, g.addConstant("w2", test::uniform({8, 3, 3, 3}, -0.5f, 0.5f, 2)).id}, {a2});
    conv2.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    if (relu) {
      c1 = g.addValue("c1").id, c2 = g.addValue("c2").id;
      g.addNode("Relu", "relu1", {a1}, {c1});
      g.addNode("Relu", "relu2", {a2}, {c2});
    }
    g.addNode("Pad", "pad_mid", {c1, pads, zero}, {p1});  // 14x14 -> 16x16, before a Concat: no layer takes it in
    g.addNode("Concat", "cat", {p1, c2}, {cat}).attrs["axis"] = int64_t{1};
    g.addNode("Pad", "pad_pool", {cat, pads, zero}, {catp});  // folded into the MaxPool as its pad_value
    ir::Node& pool = g.addNode("MaxPool", "pool", {catp}, {y});
    pool.attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
    pool.attrs["strides"] = std::vector<int64_t>{2, 2};
    g.outputs().push_back(y);
    ops::inferShapes(g);
    return g;
  };
  const Tensor t = test::uniform({1, 3, 16, 16}, -1.0f, 1.0f, 4);
  for (bool relu : {true, false}) {
    SCOPED_TRACE(relu ? "unsigned" : "signed");
    const fs::path onnx = dir / (relu ? "relu.onnx" : "plain.onnx");
    onnx_io::exportFile(graph(relu), onnx);
    TranslateOptions o = pow2Options(relu ? "pr" : "pp", onnx.string(), "npuc_pow2_pad_");
    o.out_root = dir;
    o.calibration["x"] = {test::uniform({8, 3, 16, 16}, -1.0f, 1.0f, 3)};
    const TranslateResult r = translate(o);
    ASSERT_TRUE(r.ok) << (r.errors.empty() ? "" : r.errors[0].rule + ": " + r.errors[0].actual);
    Runtime probe(r.dir);
    std::vector<std::string> kinds;
    for (const RuntimeLayer& l : probe.layers()) kinds.push_back(l.kind);
    const std::vector<std::string> want_kinds =
        relu ? std::vector<std::string>{"quantize", "conv", "conv", "pad", "concat", "max_pool", "dequantize"}
             : std::vector<std::string>{"quantize", "conv", "conv", "pad", "concat", "dequantize", "max_pool"};
    EXPECT_EQ(kinds, want_kinds);
    expectFollowsFloatAndFastIsExact(r.dir, onnx, t);
    if (!relu) continue;
    Files f = readFiles(r.dir);
    const package::Package pk = readFrom(f);
    for (const package::Descriptor& d : pk.vec)
      if (d.kind == package::LayerKind::kPad) {
        const float half = 0.5f;  // (the value word: 2 x rank words after the parameter block's start)
        std::memcpy(f.at("drp_param.bin").data() + (d.param_addr - pk.element("drp_param")->addr) + 4 * 8, &half, 4);
      }
    reseal(f);
    expectRefused(f, "a pad of codes pads with 0");
  }
}

}  // namespace
}  // namespace npuc
