// Packages run on the simulated device: generic (fp32) packages reproduce the reference engine's bits; fp16
// packages stay close to it; fast and --exact modes agree bit for bit at 1 and 2 threads, layer by layer; the
// same translation gives the same bytes; runtimes on different threads are independent.
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "package/package.hpp"
#include "plan/addrmap.hpp"
#include "support/fp16.hpp"

#include "package_checks.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = NPUC_SOURCE_DIR;

using npuc::test::cosine;
using npuc::test::expectLayersAgree;
using npuc::test::scratchDir;

TranslateResult translateTo(const fs::path& onnx, const std::string& target, const fs::path& root, const std::string& prefix,
                            bool reuse = false) {
  TranslateOptions o;
  o.prefix = prefix;
  o.onnx = onnx;
  o.target = target;
  o.out_root = root;
  o.reuse_memory = reuse;
  return translate(o);
}

Tensor randomInput(const Shape& s, uint32_t seed) {
  Tensor t(DType::kF32, s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

/// Runs a package in one mode, recording every layer's output bytes.
std::vector<Tensor> runRecording(const fs::path& dir, RuntimeOptions opts, const std::vector<Tensor>& in,
                                 std::vector<Tensor>* layers) {
  Runtime rt(dir, opts);
  return rt.run(in, [&](const RuntimeLayer&, const Tensor& y) {
    if (layers) layers->push_back(y.clone());
  });
}

struct Case {
  std::string model;  // path under the source tree
  bool drpai;         // also translated for drpai (fp16)
};

// The sample model and the optimizer's PyTorch pattern models: between them every layer kind the lowering emits
// for these nets (conv with each fused activation, gemm, pooling, global pooling, binary with a fused activation,
// unary ops, copy, concat via Focus/transposes, pad-valued MaxPool).
const std::vector<Case> kCases = {
    {"models/digits/digits_cnn.onnx", true},
    {"tests/data/patterns/relu.onnx", true},
    {"tests/data/patterns/relu6.onnx", true},
    {"tests/data/patterns/leakyrelu.onnx", true},
    {"tests/data/patterns/sigmoid.onnx", true},
    {"tests/data/patterns/swish.onnx", true},
    {"tests/data/patterns/mish.onnx", true},
    {"tests/data/patterns/hardswish_op14.onnx", true},
    {"tests/data/patterns/hardswish_add_clip_div_mul.onnx", true},
    {"tests/data/patterns/pad_conv.onnx", true},
    {"tests/data/patterns/pad_value_conv.onnx", true},
    {"tests/data/patterns/pad_maxpool.onnx", true},
    {"tests/data/patterns/gap_avgpool.onnx", true},
    {"tests/data/patterns/gap_reducemean.onnx", true},
    {"tests/data/patterns/flatten_view.onnx", true},
    {"tests/data/patterns/gemm_bn.onnx", true},
    {"tests/data/patterns/bn_equivalent_chain.onnx", true},
    {"tests/data/patterns/space_to_depth.onnx", true},
    {"tests/data/patterns/focus.onnx", true},
    {"tests/data/patterns/darknet_reorg.onnx", true},
    {"tests/data/kinds/residual_add_relu.onnx", true},  // float16 Add in several elementwise chunks
};

class PackageRun : public ::testing::TestWithParam<Case> {};

TEST_P(PackageRun, GenericMatchesEngineBitsAndModesAgree) {
  const Case& c = GetParam();
  fs::path onnx = kSrc + "/" + c.model;
  std::string prefix = fs::path(c.model).stem().string();
  fs::path root = scratchDir("generic_" + prefix);
  TranslateResult r = translateTo(onnx, "generic", root, prefix);
  ASSERT_TRUE(r.ok);
  Model m = Model::load(onnx);
  std::vector<Tensor> in;
  for (size_t i = 0; i < m.inputs().size(); ++i) in.push_back(randomInput(m.inputs()[i].shape, 7 + static_cast<uint32_t>(i)));
  // The package computes exactly what the engine computes on the optimized model; the optimized model is within
  // 1e-5 (relative to the output's magnitude) of the original one (fused patterns round once, not per op).
  std::vector<Tensor> ref = Session(m.optimized(), 1).run(in), orig = Session(m, 1).run(in);
  std::vector<Tensor> l_exact, l_fast1, l_fast2;
  auto exact = runRecording(r.dir, {1, true}, in, &l_exact);
  auto fast1 = runRecording(r.dir, {1, false}, in, &l_fast1);
  auto fast2 = runRecording(r.dir, {2, false}, in, &l_fast2);
  ASSERT_EQ(exact.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_TRUE(exact[i].reshaped(ref[i].shape()).sameBits(ref[i])) << "output " << i << " differs from the engine";
    auto a = exact[i].toDouble(), b = orig[i].toDouble();
    double mx = 0, err = 0;
    for (size_t k = 0; k < a.size(); ++k) mx = std::max(mx, std::fabs(b[k])), err = std::max(err, std::fabs(a[k] - b[k]));
    EXPECT_LE(err, 1e-5 * mx) << "output " << i << " vs the original model";
    EXPECT_TRUE(fast1[i].sameBits(exact[i]));
    EXPECT_TRUE(fast2[i].sameBits(exact[i]));
  }
  ASSERT_EQ(l_exact.size(), l_fast2.size());
  expectLayersAgree(l_exact, l_fast1, l_fast2);
}

// fp16 packages: for drpai, and for the kind models (several break drpai's rules on purpose) for a float16
// variant of generic, so that every layer kind has its float16 form tested.
TEST_P(PackageRun, Fp16CloseToEngineAndModesAgree) {
  const Case& c = GetParam();
  fs::path onnx = kSrc + "/" + c.model;
  std::string prefix = fs::path(c.model).stem().string();
  fs::path root = scratchDir("fp16_" + prefix);
  std::string target = "drpai";
  if (!c.drpai) {
    target = (root / "generic_fp16.yaml").string();
    std::ofstream(target) << "name: generic_fp16\ninherits: generic\nnumerics: fp16\n";
  }
  TranslateResult r = translateTo(onnx, target, root, prefix);
  ASSERT_TRUE(r.ok);
  Model m = Model::load(onnx);
  std::vector<Tensor> in;
  for (size_t i = 0; i < m.inputs().size(); ++i) in.push_back(randomInput(m.inputs()[i].shape, 11 + static_cast<uint32_t>(i)));
  std::vector<Tensor> ref = Session(m, 1).run(in);
  std::vector<Tensor> l_exact, l_fast1, l_fast2;
  auto exact = runRecording(r.dir, {1, true}, in, &l_exact);
  auto fast1 = runRecording(r.dir, {1, false}, in, &l_fast1);
  auto fast2 = runRecording(r.dir, {2, false}, in, &l_fast2);
  Runtime rt(r.dir);
  EXPECT_EQ(rt.numerics(), "fp16");
  EXPECT_EQ(rt.outputs()[0].dtype, DType::kF16);
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_GE(cosine(exact[i], ref[i]), 0.9999) << "output " << i;
    EXPECT_TRUE(fast1[i].sameBits(exact[i]));
    EXPECT_TRUE(fast2[i].sameBits(exact[i]));
  }
  // Float layers write float16; typed values (masks, indices, integers) keep their own types.
  for (const Tensor& l : l_exact) EXPECT_TRUE(l.dtype() == DType::kF16 || !isFloat(l.dtype())) << dtypeName(l.dtype());
  expectLayersAgree(l_exact, l_fast1, l_fast2);
}

// One model per descriptor kind / parameter case (tests/data/kinds/make_kind_models.py): generic packages only
// (several break drpai rules on purpose), all in the fixture's generic test.
std::vector<Case> withKindModels(std::vector<Case> cases) {
  for (const char* m : {"convtranspose", "gemm_vector_c", "gemm_scalar_c", "gemm_11_c", "matmul", "avgpool_include_pad",
                        "pool_1d", "globalmaxpool", "conv1d_leaky0", "lrn", "softmax_axis1", "logsoftmax", "hardmax",
                        "softmax_opset11", "batchnorm_unfolded", "slice_neg_steps", "pad_constant", "transpose",
                        "depthtospace_dcr", "depthtospace_crd", "concat_axis0", "binary_broadcast", "unary_params",
                        "reduce_spatial_mean", "reduce_chain_a", "reduce_chain_b", "concat_many", "layer_norm", "matmul_batched", "resize_nearest",
                        "resize_linear_sizes", "resize_cubic", "resize_crop", "resize_opset10", "matmul_activations",
                        "gather", "tile_expand", "instance_norm", "where", "einsum", "typed_compare_where", "typed_logic",
                        "typed_int", "typed_argmax", "typed_uint8_shift", "trilu_cumsum", "layer_norm_stats", "indexing", "clip_computed", "onehot_eye", "sampling", "recurrent", "conv_computed_weights", "pool3d", "max_unpool", "reverse_sequence", "loss", "mvn", "det"})
    cases.push_back({std::string("tests/data/kinds/") + m + ".onnx", false});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Models, PackageRun, ::testing::ValuesIn(withKindModels(kCases)), [](const auto& info) {
  std::string s = fs::path(info.param.model).stem().string();
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
});

// Gather by indices given at run time (a model input of int64 or int32): the package input keeps the integer type,
// the outputs equal the engine's in both modes, and an index out of range stops the run with a clear error.
TEST(Package, GatherByInputIndices) {
  for (const char* name : {"gather_input_indices", "gather_input_indices_i32"}) {
    fs::path onnx = kSrc + "/tests/data/kinds/" + name + ".onnx";
    TranslateResult r = translateTo(onnx, "generic", scratchDir(name), name);
    ASSERT_TRUE(r.ok) << name;
    const DType it = std::string(name).ends_with("i32") ? DType::kI32 : DType::kI64;
    Runtime rt(r.dir);
    ASSERT_EQ(rt.inputs().size(), 2u);
    EXPECT_EQ(rt.inputs()[1].dtype, it);
    Tensor idx(it, {2, 2});
    const int64_t v[4] = {3, -1, 0, 2};
    for (int k = 0; k < 4; ++k) {
      if (it == DType::kI64) idx.data<int64_t>()[k] = v[k];
      else idx.data<int32_t>()[k] = static_cast<int32_t>(v[k]);
    }
    std::vector<Tensor> in = {randomInput({4, 3}, 5), idx};
    std::vector<Tensor> ref = Session(Model::load(onnx), 1).run(in);
    for (RuntimeOptions o : {RuntimeOptions{1, true}, RuntimeOptions{2, false}})
      EXPECT_TRUE(Runtime(r.dir, o).run(in)[0].sameBits(ref[0])) << name;
    for (int64_t bad : {4, -5}) {
      if (it == DType::kI64) idx.data<int64_t>()[1] = bad;
      else idx.data<int32_t>()[1] = static_cast<int32_t>(bad);
      try {
        Runtime(r.dir).run({in[0], idx});
        ADD_FAILURE() << name << ": index " << bad << " accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
      }
    }
  }
}

// A parameter the model gives at run time that the package's shapes fix (TopK's k, from the declared outputs): the
// package equals the engine for that k, in both modes, and another k stops the run with a clear error.
TEST(Package, TopKWithKAsAnInputChecksK) {
  fs::path onnx = kSrc + "/tests/data/kinds/topk_input_k.onnx";
  TranslateResult r = translateTo(onnx, "generic", scratchDir("topk_input_k"), "topk_input_k");
  ASSERT_TRUE(r.ok);
  Tensor k(DType::kI64, {1});
  k.data<int64_t>()[0] = 2;
  std::vector<Tensor> in = {randomInput({3, 4}, 9), k};
  std::vector<Tensor> ref = Session(Model::load(onnx), 1).run(in);
  for (RuntimeOptions o : {RuntimeOptions{1, true}, RuntimeOptions{2, false}}) {
    Runtime rt(r.dir, o);
    rt.run(in);
    EXPECT_TRUE(rt.output("v").sameBits(ref[0]));
    EXPECT_TRUE(rt.output("i").sameBits(ref[1]));  // int64, as stored
  }
  k.data<int64_t>()[0] = 3;
  try {
    Runtime(r.dir).run({in[0], k});
    ADD_FAILURE() << "k = 3 accepted by a package translated for k = 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("translated for k = 2"), std::string::npos) << e.what();
  }
}

// A recurrent layer's parameter words are checked by the reader (a package that names another hidden size, an unknown
// activation or outputs it lacks is refused, not run out of bounds), and its sequence lengths when it runs.
TEST(Package, RecurrentLayerChecksItsWordsAndSequenceLengths) {
  const fs::path dir = scratchDir("recurrent_words");
  TranslateResult r = translateTo(kSrc + "/tests/data/kinds/recurrent.onnx", "generic", dir, "recurrent");
  ASSERT_TRUE(r.ok);
  const package::Package pk = package::readPackage(r.dir);
  const package::Descriptor* lstm = nullptr;
  for (const package::Descriptor& d : pk.mac)
    if (d.kind == package::LayerKind::kRecurrent && !lstm) lstm = &d;
  ASSERT_NE(lstm, nullptr);
  std::map<std::string, std::vector<uint8_t>> good;
  for (auto& e : fs::directory_iterator(r.dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    good[e.path().filename().string()] = std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
  }
  const size_t at = lstm->param_addr - pk.element("drp_param")->addr;
  auto refused = [&](size_t word, uint32_t value, const std::string& fragment) {
    auto f = good;
    std::memcpy(f.at("drp_param.bin").data() + at + 4 * word, &value, 4);
    const auto& m = f.at("manifest.json");
    const std::string sealed = package::resealManifest(std::string(m.begin(), m.end()), f);
    f["manifest.json"] = std::vector<uint8_t>(sealed.begin(), sealed.end());
    try {
      package::readPackage([&](const std::string& n, uint64_t) -> std::optional<std::vector<uint8_t>> {
        auto it = f.find(n);
        if (it == f.end()) return std::nullopt;
        return it->second;
      }, "pkg");
      ADD_FAILURE() << "word " << word << " = " << value << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  refused(9, 5, "weights must be float");                  // hidden 4 -> 5: the weights no longer hold W, R, B, P
  refused(11, 0xFFu, "activation 0");                      // the first activation's op out of range
  refused(8, 3, "the present-flags name");                 // Y and Y_h only: the layer writes three outputs
  refused(1, 1, "activation 3 is set; the layer has 3");   // one direction: the second direction's activations left
  refused(4, 0x7FC00000u, "clip nan");                     // a NaN clip
  // ONNX's peephole test: every input a model input (W, R, B, P concatenated by a layer), sequence_lens read at run time.
  const fs::path onnx = "/usr/share/libonnx-testdata/data/node/test_lstm_with_peepholes/model.onnx";
  if (!fs::exists(onnx)) GTEST_SKIP() << "libonnx-testdata not installed";
  TranslateResult p = translateTo(onnx, "generic", scratchDir("lstm_peepholes"), "lstm_peepholes");
  ASSERT_TRUE(p.ok);
  const Model m = Model::load(onnx);
  std::vector<Tensor> in;
  for (size_t i = 0; i < m.inputs().size(); ++i) in.push_back(randomInput(m.inputs()[i].shape, 20 + static_cast<uint32_t>(i)));
  Tensor lens(DType::kI32, {2});
  lens.data<int32_t>()[0] = 1, lens.data<int32_t>()[1] = 0;  // X is [1, 2, 4]: lengths 0..1
  in[4] = lens;
  const std::vector<Tensor> ref = Session(m, 1).run(in);
  for (RuntimeOptions o : {RuntimeOptions{1, true}, RuntimeOptions{2, false}}) {
    Runtime rt(p.dir, o);
    rt.run(in);
    EXPECT_TRUE(rt.output(m.outputs()[0].name).sameBits(ref[0]));
  }
  lens.data<int32_t>()[1] = 2;
  in[4] = lens;
  try {
    Runtime(p.dir).run(in);
    ADD_FAILURE() << "sequence length 2 of a 1-step sequence accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence_lens[1] = 2 is outside [0, 1]"), std::string::npos) << e.what();
  }
}

// DRP-AI's and TIDL's pooling is 2-D with one output: the generic target's 3-D pooling and MaxPool Indices (pool_nd)
// are reported with the manual's rule, not accepted because the 2-D rules see only height and width.
TEST(Translate, VendorPoolingIsTwoDimensional) {
  const Model m = Model::load(kSrc + "/tests/data/kinds/pool3d.onnx");
  for (const char* t : {"drpai", "tidl"}) {
    std::vector<CheckRow> rows = m.check(t);
    const std::string rule = std::string(t) + ".pool.2d";
    int hits = 0;
    for (const CheckRow& r : rows) hits += r.rule_id == rule;
    EXPECT_EQ(hits, 3) << t;  // the two 3-D pools and the MaxPool with Indices
  }
  EXPECT_TRUE(m.check("generic").empty());
}

// DRP-AI's AI-MAC and TIDL's EVE read convolution weights from the network's stored parameters: a Conv or
// ConvTranspose whose weights the model computes (which generic packages run) is reported with the manual's rule.
TEST(Translate, VendorConvolutionWeightsAreConstants) {
  const Model m = Model::load(kSrc + "/tests/data/kinds/conv_computed_weights.onnx");
  for (auto [t, rules] : {std::pair{"drpai", std::vector<std::string>{"drpai.conv.constant_weights"}},
                          std::pair{"tidl", std::vector<std::string>{"tidl.conv.constant_weights", "tidl.deconv.constant_weights"}}}) {
    std::vector<CheckRow> rows = m.check(t);
    for (const std::string& rule : rules)
      EXPECT_EQ(std::count_if(rows.begin(), rows.end(), [&](const CheckRow& r) { return r.rule_id == rule; }), 1) << t << " " << rule;
  }
  EXPECT_TRUE(m.check("generic").empty());
  const Model c = Model::load(kSrc + "/tests/data/kinds/convtranspose.onnx");  // constant weights: no such row
  for (const char* t : {"drpai", "tidl"})
    for (const CheckRow& r : c.check(t)) EXPECT_EQ(r.rule_id.find("constant_weights"), std::string::npos) << t;
}

// Range's start / limit / delta, Resize's scales, a reduction's axes, Compress's condition and ConstantOfShape's shape
// as model inputs or computed: read by the layers at run
// time; values that give
// the package's shapes compute what the engine computes (scales 2 and 1.5 place other samples than the sizes'
// ratios 2 and 4/3 would), others stop the run naming the package's dims.
// NonMaxSuppression's bounded output: the package's rows are the declared ones; the engine's selections come first,
// then rows of -1; a model whose selections outnumber its rows stops the run, naming both.
TEST(Package, NmsWritesItsSelectionsThenRowsOfMinusOne) {
  Tensor boxes = Tensor::fromVector<float>({1, 5, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 0, 5, 1, 6, 0, 9, 1, 10});
  Tensor scores = Tensor::fromVector<float>({1, 1, 5}, {0.9f, 0.8f, 0.7f, 0.05f, 0.6f});  // box 1 overlaps 0, 3 below 0.1
  fs::path onnx = kSrc + "/tests/data/kinds/nms_bounded.onnx";
  TranslateResult t = translateTo(onnx, "generic", scratchDir("nms_bounded"), "nms_bounded");
  ASSERT_TRUE(t.ok);
  const std::vector<Tensor> ref = Session(Model::load(onnx), 1).run(std::vector<Tensor>{boxes, scores});
  ASSERT_EQ(ref[0].shape(), (Shape{2, 3}));  // max_output_boxes_per_class 2: boxes 0 and 2
  for (RuntimeOptions o : {RuntimeOptions{1, true}, RuntimeOptions{2, false}}) {
    Runtime rt(t.dir, o);
    rt.run(std::vector<Tensor>{boxes, scores});
    const Tensor y = rt.output("y");
    ASSERT_EQ(y.shape(), (Shape{4, 3}));
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(y.data<int64_t>()[i], i < 6 ? ref[0].data<int64_t>()[i] : -1) << i;
  }
  TranslateResult one = translateTo(kSrc + "/tests/data/kinds/nms_one_row.onnx", "generic", scratchDir("nms_one_row"), "nms_one_row");
  ASSERT_TRUE(one.ok);
  try {
    Runtime(one.dir).run(std::vector<Tensor>{boxes, scores});
    ADD_FAILURE() << "2 selections written into 1 row";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 boxes selected; the package holds 1 rows"), std::string::npos) << e.what();
  }
}

TEST(Package, RangeAndResizeReadTheirParametersAtRunTime) {
  auto scalar = [](float v) { return Tensor::scalar<float>(v); };
  auto vec = [](std::vector<float> v) {
    Tensor t(DType::kF32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<float>());
    return t;
  };
  struct Run {
    const char* model;
    std::vector<Tensor> good, bad;
  };
  auto axis = [](int64_t a) {
    Tensor t(DType::kI64, {1});
    t.data<int64_t>()[0] = a;
    return t;
  };
  auto channels = [](int positive) {  // x [2, 5, 3]: channels < `positive` of the five (every other one) reach above 0
    Tensor t = randomInput({2, 5, 3}, 8);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int c = static_cast<int>(i / 3 % 5);
      p[i] = (c % 2 == 0 && c / 2 < positive) || (positive > 3 && c % 2 == 1) ? std::fabs(p[i]) + 0.1f : -std::fabs(p[i]) - 0.1f;
    }
    return t;
  };
  auto dims = [](std::vector<int64_t> v) {
    Tensor t(DType::kI64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
  };
  auto count = [](int64_t v) { return Tensor::scalar<int64_t>(v); };
  const Tensor signal = randomInput({1, 64, 1}, 9), win = randomInput({16}, 10), real = randomInput({2, 10, 1}, 11);
  // The signal kinds read their sizes when they run: a step or a length other than the one translated for that gives
  // the same frames or bins is computed with (STFT step 7 and DFT length 11, translated for 8 and 10); others refused.
  const Run runs[] = {{"compress_computed", {channels(3)}, {channels(4)}},
                      {"dft_length_input", {real, count(11)}, {real, count(12)}},
                      {"stft_input", {signal, count(7), win}, {signal, count(6), win}},
                      {"mel_input", {count(4), count(16), count(8000), scalar(100), scalar(3000)},
                       {count(5), count(16), count(8000), scalar(100), scalar(3000)}},
                      {"constant_of_shape_input", {dims({2, 3})}, {dims({3, 2})}},
                      {"range_input", {scalar(1), scalar(3), scalar(0.5f)}, {scalar(1), scalar(3), scalar(0.25f)}},
                      {"reduce_axes_input", {randomInput({2, 3, 4}, 6), axis(-2)}, {randomInput({2, 3, 4}, 6), axis(0)}},
                      {"resize_scales_input", {randomInput({1, 1, 2, 3}, 4), vec({1, 1, 2, 1.5f})},
                       {randomInput({1, 1, 2, 3}, 4), vec({1, 1, 2, 2})}}};
  for (const Run& r : runs) {
    fs::path onnx = kSrc + "/tests/data/kinds/" + r.model + ".onnx";
    TranslateResult t = translateTo(onnx, "generic", scratchDir(r.model), r.model);
    ASSERT_TRUE(t.ok) << r.model;
    std::vector<Tensor> ref = Session(Model::load(onnx), 1).run(r.good);
    for (RuntimeOptions o : {RuntimeOptions{1, true}, RuntimeOptions{2, false}})
      EXPECT_TRUE(Runtime(t.dir, o).run(r.good)[0].sameBits(ref[0])) << r.model;
    try {
      Runtime(t.dir).run(r.bad);
      ADD_FAILURE() << r.model << ": values giving another shape accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("translate"), std::string::npos) << e.what();
    }
  }
}

// The engine's Einsum against numpy's (float64, tests/data/kinds/einsum_out.npy): three two-operand forms, one with
// spaces in the equation and one whose letters need transposing; the package equals the engine bit for bit (the
// kind models above).
TEST(Engine, EinsumMatchesNumpy) {
  const std::string dir = kSrc + "/tests/data/kinds/";
  Tensor x = readNpyFile(dir + "einsum_in.npy"), want = readNpyFile(dir + "einsum_out.npy");
  std::vector<Tensor> got = Session(Model::load(dir + "einsum.onnx"), 2).run({x});
  ASSERT_EQ(got[0].shape(), want.shape());
  auto g = got[0].toDouble(), w = want.toDouble();
  double mx = 0, err = 0;
  for (size_t i = 0; i < w.size(); ++i) mx = std::max(mx, std::fabs(w[i])), err = std::max(err, std::fabs(g[i] - w[i]));
  EXPECT_LE(err, 1e-5 * mx);
}

std::string fileBytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(Package, SameInputsGiveByteIdenticalOutputFolders) {
  fs::path onnx = kSrc + "/models/digits/digits_cnn.onnx";
  fs::path a = scratchDir("det_a"), b = scratchDir("det_b");
  auto ra = translateTo(onnx, "generic", a, "digits");
  auto rb = translateTo(onnx, "generic", b, "digits");
  ASSERT_TRUE(ra.ok && rb.ok);
  EXPECT_EQ(ra.content_hash, rb.content_hash);
  ASSERT_EQ(ra.files, rb.files);
  int compared = 0;
  for (auto& f : fs::directory_iterator(ra.dir)) {
    std::string name = f.path().filename().string();
    EXPECT_EQ(fileBytes(f.path()), fileBytes(rb.dir / name)) << name;
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

TEST(Package, ReuseMemoryGivesTheSameOutputsInLessMemory) {
  fs::path onnx = kSrc + "/models/digits/digits_cnn.onnx";
  auto seq = translateTo(onnx, "generic", scratchDir("mem_seq"), "digits");
  auto reuse = translateTo(onnx, "generic", scratchDir("mem_reuse"), "digits", true);
  ASSERT_TRUE(seq.ok && reuse.ok);
  EXPECT_LT(reuse.activation_bytes, seq.activation_bytes);
  EXPECT_LE(reuse.activation_bytes, reuse.activation_lower_bound * 105 / 100);
  std::vector<Tensor> in = {randomInput({1, 1, 8, 8}, 3)};
  auto a = Runtime(seq.dir).run(in);
  auto b = Runtime(reuse.dir).run(in);
  EXPECT_TRUE(a[0].sameBits(b[0]));
}

TEST(Runtime, IndependentRuntimesOnDifferentThreads) {
  fs::path onnx = kSrc + "/models/digits/digits_cnn.onnx";
  auto g = translateTo(onnx, "generic", scratchDir("mt_generic"), "digits");
  auto h = translateTo(kSrc + "/tests/data/patterns/mish.onnx", "drpai", scratchDir("mt_drpai"), "mish");
  ASSERT_TRUE(g.ok && h.ok);
  Model mg = Model::load(onnx), mh = Model::load(kSrc + "/tests/data/patterns/mish.onnx");
  std::vector<Tensor> ig = {randomInput(mg.inputs()[0].shape, 1)}, ih = {randomInput(mh.inputs()[0].shape, 2)};
  Tensor want_g = Runtime(g.dir).run(ig)[0], want_h = Runtime(h.dir).run(ih)[0];
  std::atomic<int> bad{0};
  auto worker = [&](const fs::path& dir, const std::vector<Tensor>& in, const Tensor& want, int threads) {
    Runtime rt(dir, {threads, false});
    for (int i = 0; i < 20; ++i)
      if (!rt.run(in)[0].sameBits(want)) ++bad;
  };
  std::thread t1(worker, g.dir, ig, want_g, 2), t2(worker, h.dir, ih, want_h, 1), t3(worker, g.dir, ig, want_g, 1);
  t1.join();
  t2.join();
  t3.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Runtime, InputsAreCheckedAndConverted) {
  auto r = translateTo(kSrc + "/models/digits/digits_cnn.onnx", "generic", scratchDir("inputs"), "digits");
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  ASSERT_EQ(rt.inputs().size(), 1u);
  EXPECT_EQ(rt.inputs()[0].shape, (Shape{1, 1, 8, 8}));
  EXPECT_THROW(rt.setInput("nope", Tensor(DType::kF32, {1, 1, 8, 8})), Error);
  EXPECT_THROW(rt.setInput(rt.inputs()[0].name, Tensor(DType::kF32, {1, 1, 8, 9})), Error);
  EXPECT_THROW(rt.setInput(rt.inputs()[0].name, Tensor(DType::kF32, {1, 8, 8, 1})), Error);  // NHWC is not NCHW
  // The same 64 elements in another shape are refused too (they were taken as 1x1x8x8: issue 22).
  EXPECT_THROW(rt.setInput(rt.inputs()[0].name, Tensor(DType::kF32, {64})), Error);
  EXPECT_THROW(rt.setInput(rt.inputs()[0].name, Tensor(DType::kI32, {1, 1, 8, 8})), Error);
  // Other float types are widened exactly to the float32 input: float16 and bfloat16 give float32's bits.
  Tensor f(DType::kF32, {1, 1, 8, 8}), h(DType::kF16, {1, 1, 8, 8}), b(DType::kBF16, {1, 1, 8, 8});
  for (int i = 0; i < 64; ++i) {
    f.data<float>()[i] = 0.25f * static_cast<float>(i - 32);  // exact in float16 and bfloat16
    static_cast<uint16_t*>(h.raw())[i] = floatToHalf(f.data<float>()[i]);
    static_cast<uint16_t*>(b.raw())[i] = floatToBf16(f.data<float>()[i]);
  }
  rt.setInput(rt.inputs()[0].name, f);
  rt.run();
  Tensor want = rt.output(rt.outputs()[0].name);
  for (const Tensor* t : {&h, &b}) {
    rt.setInput(rt.inputs()[0].name, *t);
    rt.run();
    EXPECT_TRUE(rt.output(rt.outputs()[0].name).sameBits(want)) << dtypeName(t->dtype());
  }
  EXPECT_THROW(rt.output("nope"), Error);
  EXPECT_THROW(Runtime(r.dir, {0, false}), Error);
  EXPECT_EQ(rt.layers().size(), 6u);  // the Flatten before the classifier is an alias (no layer)
  EXPECT_EQ(rt.layers()[0].kind, "conv");
  // Provenance survives the optimizer: the folded BatchNormalization and the fused Relu are named.
  EXPECT_EQ(rt.layers()[0].opexp, "Conv+BatchNormalization+Relu");
  EXPECT_EQ(rt.layers()[0].onnx_nodes.size(), 3u);
}

TEST(Translate, NodesWithoutAPackageFormAreReportedLikeBrokenRules) {
  // DynamicQuantizeLinear has no descriptor yet: check reports it (rule generic.package) and translate writes the
  // same error report instead of stopping at the first such node with no report (check passed such models before).
  fs::path root = scratchDir("no_form");
  const std::string model = kSrc + "/tests/data/bad/no_package_form.onnx";
  TranslateResult r = translateTo(model, "generic", root, "up");
  EXPECT_FALSE(r.ok);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_EQ(r.errors[0].op, "DynamicQuantizeLinear");
  EXPECT_EQ(r.errors[0].rule_id, "generic.package");
  EXPECT_NE(r.errors[0].actual.find("no package form"), std::string::npos) << r.errors[0].actual;
  EXPECT_TRUE(fs::exists(root / "up" / "up_error_report.csv"));
  EXPECT_FALSE(fs::exists(root / "up" / "manifest.json"));
  std::vector<CheckRow> rows = Model::load(model).check("generic");
  ASSERT_EQ(rows.size(), r.errors.size());
  EXPECT_EQ(rows[0].rule_id, "generic.package");
}

}  // namespace

namespace {

TEST(Package, UserAddressMapIsUsedAndItsFilesParseBack) {
  // The manual's §6.5 example 2: descriptors, weights and data in three Sub-Spaces.
  fs::path root = scratchDir("addr_map");
  fs::path def = root / "addrmap_in_digits.yaml";
  std::ofstream(def) << R"(
- name: "desc"
  addr: 0x10_000_000
  lst_elemsp:
    - { name: "drp_config" }
    - { name: "drp_param" }
    - { name: "desc_aimac" }
    - { name: "desc_drp" }
- name: "param"
  addr: 0x30_000_000
  lst_elemsp:
    - { name: "weight" }
- name: "data"
  addr: 0x70_000_000
  lst_elemsp:
    - { name: "data_in" }
    - { name: "data" }
    - { name: "data_out" }
    - { name: "work" }
)";
  TranslateOptions o;
  o.prefix = "digits";
  o.onnx = kSrc + "/models/digits/digits_cnn.onnx";
  o.target = "drpai";
  o.out_root = root;
  o.addr_map = def;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  EXPECT_EQ(rt.inputs()[0].address, 0x7000'0000u);
  // PREFIX_addrmap_intm.yaml is itself a valid definition that reproduces the same layout.
  auto rules = plan::AddrMapRules::drpai();
  plan::AddrMapDef back = plan::loadAddrMapDef(r.dir / "digits_addrmap_intm.yaml", rules);
  plan::AddressMap again = plan::layoutAddrMap(back, {}, rules, "x");
  std::string txt = fileBytes(r.dir / "digits_addrmap_intm.txt");
  EXPECT_EQ(plan::addrMapTxt(again), txt);
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (auto& s : again.subspaces)
    for (auto& e : s.elements) {
      EXPECT_EQ(e.addr % 64, 0u) << e.name;
      spans.push_back({e.addr, e.addr + e.size});
    }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first);
  EXPECT_NE(txt.find("weight 30000000"), std::string::npos) << txt;
  EXPECT_NE(fileBytes(r.dir / "digits_data_in_list.txt").find("Address: 0x70000000"), std::string::npos);
  // Same outputs as with the default map.
  auto d = translateTo(kSrc + "/models/digits/digits_cnn.onnx", "drpai", scratchDir("addr_default"), "digits");
  std::vector<Tensor> in = {randomInput({1, 1, 8, 8}, 9)};
  EXPECT_TRUE(rt.run(in)[0].sameBits(Runtime(d.dir).run(in)[0]));
}

// The address-map rules are the target's (its address_map block), not DRP-AI's for every target.
TEST(Package, TheTargetFileSetsTheAddressMapRules) {
  fs::path root = scratchDir("rules");
  fs::path t = root / "wide.yaml";
  std::ofstream(t) << "name: wide\ninherits: generic\naddress_map: {base: 0x1000_0000, size_align: {default: 4096, weight: 256}}\n";
  TranslateResult r = translateTo(kSrc + "/models/digits/digits_cnn.onnx", t.string(), root, "digits");
  ASSERT_TRUE(r.ok);
  package::Package p = package::readPackage(r.dir);
  ASSERT_FALSE(p.address_map.empty());
  EXPECT_EQ(p.address_map[0].addr, 0x1000'0000u);
  // Named spaces keep the alignment given for them (weight here; drp_param and the descriptor streams by default).
  for (const package::Element& e : p.address_map[0].elements) {
    bool fine = e.name == "drp_param" || e.name == "desc_aimac" || e.name == "desc_drp";
    EXPECT_EQ(e.size % (e.name == "weight" ? 256 : fine ? 16 : 4096), 0u) << e.name << " " << e.size;
  }
  EXPECT_NE(p.element("weight")->size % 4096, 0u);  // the weight space keeps its own alignment
  std::ofstream(t) << "name: wide\ninherits: generic\naddress_map: {size_align: 48}\n";
  EXPECT_THROW(translateTo(kSrc + "/models/digits/digits_cnn.onnx", t.string(), root, "digits2"), Error);  // not a power of two
}

// Appendix B of the DRP-AI manual: a channel-last model's boundary Transposes take no layer where the target says so
// (boundary_transposes: absorb); the layers next to them read and write the channel-last bytes through channel-last
// references. Channel-last models from TensorFlow Lite, TensorFlow and ONNX, on a float32 target so that the oracle
// is the engine's bits on the optimized model (which keeps its Transposes): the package without those layers gives
// them, in both modes and at 1 and 2 threads, and its inputs and outputs keep the model's NHWC shapes. A value that
// another layer reads channels-first keeps its Transpose.
/// A float32 target that takes boundary Transposes into their layers (as drpai does), written into `root`.
fs::path absorbingTarget(const fs::path& root) {
  const fs::path t = root / "generic-absorb.yaml";
  std::ofstream(t) << "name: generic-absorb\ninherits: generic\nboundary_transposes: absorb\n";
  return t;
}

TEST(Package, ChannelLastBoundariesTakeNoLayer) {
  fs::path root = scratchDir("channel_last_bodies");
  const fs::path absorb = absorbingTarget(root);
  struct Model_ {
    std::string file;
    int transposes_left;  // in the absorbing package
  };
  for (const Model_& c : {Model_{"tests/data/tflite/conv/model.tflite", 0}, Model_{"tests/data/tflite/pooling/model.tflite", 0},
                          Model_{"tests/data/tflite/depthwise/model.tflite", 1}, Model_{"tests/data/tf/mobilenet/model.pb", 0},
                          Model_{"tests/data/prepost/bodies/nhwc_model.onnx", 0}}) {
    SCOPED_TRACE(c.file);
    const fs::path file = kSrc + "/" + c.file;
    const std::string prefix = fs::path(c.file).parent_path().filename().string();
    TranslateResult plain = translateTo(file, "generic", root, prefix + "_plain");
    TranslateResult cl = translateTo(file, absorb.string(), root, prefix + "_absorb");
    ASSERT_TRUE(plain.ok && cl.ok);
    auto transposes = [](const package::Package& p, int* channel_last_refs) {
      int n = 0;
      for (const auto* stream : {&p.mac, &p.vec})
        for (const package::Descriptor& d : *stream) {
          n += d.kind == package::LayerKind::kTranspose;
          for (int i = 0; i < d.n_in + d.n_out; ++i) *channel_last_refs += d.refs[static_cast<size_t>(i)].layout == package::RefLayout::kChannelLast;
        }
      return n;
    };
    int refs_plain = 0, refs_cl = 0;
    const package::Package pp = package::readPackage(plain.dir), pc = package::readPackage(cl.dir);
    const int before = transposes(pp, &refs_plain), after = transposes(pc, &refs_cl);
    EXPECT_EQ(refs_plain, 0);
    EXPECT_EQ(after, c.transposes_left);
    EXPECT_GT(before, after);
    EXPECT_GE(refs_cl, before - after);  // (each absorbed Transpose: at least one reference channel-last)
    EXPECT_EQ(pc.layers.size() + static_cast<size_t>(before - after), pp.layers.size());
    Model m = Model::load(file);
    ASSERT_EQ(pc.inputs.size(), m.inputs().size());
    std::vector<Tensor> in;
    for (size_t i = 0; i < m.inputs().size(); ++i) {
      EXPECT_EQ(package::storedDims(pc.inputs[i].ref), m.inputs()[i].shape);
      in.push_back(randomInput(m.inputs()[i].shape, 11 + static_cast<uint32_t>(i)));
    }
    const std::vector<Tensor> ref = Session(m.optimized(), 1).run(in);
    std::vector<Tensor> l_exact, l_fast1, l_fast2;
    const auto exact = runRecording(cl.dir, {1, true}, in, &l_exact);
    const auto fast1 = runRecording(cl.dir, {1, false}, in, &l_fast1);
    const auto fast2 = runRecording(cl.dir, {2, false}, in, &l_fast2);
    ASSERT_EQ(exact.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(exact[i].shape(), ref[i].shape()) << "output " << i;
      EXPECT_TRUE(exact[i].sameBits(ref[i])) << "output " << i << " differs from the engine";
      EXPECT_TRUE(fast1[i].sameBits(exact[i]) && fast2[i].sameBits(exact[i])) << "output " << i;
    }
    expectLayersAgree(l_exact, l_fast1, l_fast2);
  }
}

// Channel-last references are checked like the rest of a package: rank 3 or more, the output of a layer with one
// output, not on control or custom layers; an unknown layout code is refused by the reader.
TEST(Package, ChannelLastReferencesAreChecked) {
  fs::path root = scratchDir("channel_last_checks");
  TranslateResult r = translateTo(kSrc + "/tests/data/prepost/bodies/nhwc_model.onnx", absorbingTarget(root).string(), root, "nh");
  ASSERT_TRUE(r.ok);
  const package::Package p = package::readPackage(r.dir);
  ASSERT_EQ(p.mac.size() + p.vec.size(), 1u);  // the Conv alone, reading and writing channel-last
  const package::Descriptor& conv = p.mac.empty() ? p.vec[0] : p.mac[0];
  EXPECT_EQ(conv.in(0).layout, package::RefLayout::kChannelLast);
  EXPECT_EQ(conv.out(0).layout, package::RefLayout::kChannelLast);
  EXPECT_EQ(package::storedDims(conv.in(0)), (std::vector<int64_t>{1, 12, 16, 3}));
  auto refused = [&](auto&& change, const std::string& says) {
    package::Package q = p;
    change(q.mac.empty() ? q.vec[0] : q.mac[0]);
    try {
      package::validatePackage(q, "test");
      ADD_FAILURE() << "accepted: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused([](package::Descriptor& d) {  // a 2-D view of the 4-D input (same bytes)
    d.refs[0].rank = 2, d.refs[0].dims = {12 * 16, 3, 0, 0, 0, 0};
  }, "channel-last with rank 2");
  refused([](package::Descriptor& d) { d.kind = package::LayerKind::kCustom; }, "custom layers take row-major references only");
  // The reader: byte 10 of a reference is its layout, 0 or 1 (the stream edited, the manifest resealed).
  ASSERT_FALSE(p.mac.empty());
  std::map<std::string, std::vector<uint8_t>> files;
  for (const auto& e : fs::directory_iterator(r.dir)) {
    std::ifstream f(e.path(), std::ios::binary);
    files[e.path().filename().string()] = std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
  }
  std::vector<uint8_t>& mac = files.at("aimac_desc.bin");
  ASSERT_EQ(mac.at(package::kDescHeaderSize + 64 + 10), 1);
  mac[package::kDescHeaderSize + 64 + 10] = 2;
  std::ofstream(r.dir / "aimac_desc.bin", std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(mac.data()),
                                                                                   static_cast<std::streamsize>(mac.size()));
  const std::vector<uint8_t>& m = files.at("manifest.json");
  std::ofstream(r.dir / "manifest.json", std::ios::binary | std::ios::trunc)
      << package::resealManifest(std::string(m.begin(), m.end()), files);
  try {
    package::readPackage(r.dir);
    ADD_FAILURE() << "a layout code 2 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown layout code 2"), std::string::npos) << e.what();
  }
}

TEST(Package, AddressOverflowIsTheManualsError) {
  fs::path root = scratchDir("overflow");
  fs::path def = root / "addrmap_in.yaml";
  std::ofstream(def) << "- name: \"all\"\n  addr: 0xFFFF_F000\n  lst_elemsp:\n"
                        "    - { name: \"data_in\" }\n    - { name: \"data\" }\n    - { name: \"data_out\" }\n"
                        "    - { name: \"work\" }\n    - { name: \"weight\" }\n    - { name: \"drp_config\" }\n"
                        "    - { name: \"drp_param\" }\n    - { name: \"desc_aimac\" }\n    - { name: \"desc_drp\" }\n";
  TranslateOptions o;
  o.prefix = "digits";
  o.onnx = kSrc + "/models/digits/digits_cnn.onnx";
  o.target = "drpai";
  o.out_root = root;
  o.addr_map = def;
  try {
    translate(o);
    FAIL() << "expected the overflow error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Address area overflow"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find((root / "digits" / "digits_addrmap_intm.yaml").string()), std::string::npos) << e.what();
  }
  // The file the message names is written (it used to be named and never written: issue 22), with the address
  // that overflowed, and it is the only output: no package.
  ASSERT_TRUE(fs::exists(root / "digits" / "digits_addrmap_intm.yaml"));
  std::ifstream intm(root / "digits" / "digits_addrmap_intm.yaml");
  std::string text((std::istreambuf_iterator<char>(intm)), {});
  EXPECT_NE(text.find("0x1_0000_"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(root / "digits" / "manifest.json"));
}

}  // namespace
