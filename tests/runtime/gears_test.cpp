// Packages with gears (issue 25 item 11; Ascend ATC's --dynamic_batch_size / --dynamic_image_size): one package per
// batch size or image size under gears.json, the runtime switching between them per inference.
//   - batch gears: each gear computes the engine's outputs for its batch (generic: the same bits), and every sample
//     of the batch-4 gear is what the batch-1 gear gives for it alone;
//   - the seed's AIPP rules: with batch gears the block is for the largest batch; with image-size gears it may not
//     crop or pad;
//   - a size the package lacks, and malformed gears.json files, are refused naming the gears / file and field.
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "kernels/aipp.hpp"
#include "support/fp16.hpp"

#include "scratch_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <random>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

const std::string kDigits = std::string(NPUC_SOURCE_DIR) + "/models/digits/digits_cnn.onnx";

Tensor samples(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(DType::kF32, {n, 1, 8, 8});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng() % 17) / 16.0f;
  return t;
}

Tensor rows(const Tensor& t, int64_t from, int64_t count) {
  Shape s = t.shape();
  int64_t per = t.numel() / s[0];
  s[0] = count;
  Tensor r(t.dtype(), s);
  std::memcpy(r.raw(), static_cast<const char*>(t.raw()) + from * per * dtypeSize(t.dtype()), static_cast<size_t>(count * per) * dtypeSize(t.dtype()));
  return r;
}

fs::path batchGears(const std::string& name, const std::string& aipp = "") {
  TranslateOptions o;
  o.prefix = name;
  o.onnx = kDigits;
  o.target = "generic";
  o.out_root = npuc::test::scratchDir("gears_" + name);
  o.input_shapes["input"] = {-1, 1, 8, 8};
  o.dynamic_batch_sizes = {1, 2, 4};
  if (!aipp.empty()) {
    o.aipp = npuc::test::scratchPath(name + ".cfg");
    std::ofstream(o.aipp) << aipp;
  }
  TranslateResult r = translate(o);
  EXPECT_TRUE(r.ok);
  return r.dir;
}

}  // namespace

TEST(Gears, EachBatchGearComputesItsBatch) {
  fs::path dir = batchGears("batch");
  EXPECT_TRUE(fs::exists(dir / "gears.json"));
  Runtime rt(dir, {2, false});
  ASSERT_EQ(rt.gears().size(), 3u);
  EXPECT_EQ(rt.gearKind(), "batch");
  EXPECT_EQ(rt.gearInput(), "input");
  EXPECT_EQ(rt.inputs()[0].shape, (Shape{1, 1, 8, 8}));  // starts on the first gear
  Tensor x = samples(4, 7);
  std::vector<Tensor> alone;
  for (int64_t i = 0; i < 4; ++i) alone.push_back(rt.run({rows(x, i, 1)})[0]);
  for (int64_t b : {2, 4}) {
    SCOPED_TRACE(b);
    rt.setDynamicBatchSize(b);
    ASSERT_EQ(rt.inputs()[0].shape, (Shape{b, 1, 8, 8}));
    Tensor y = rt.run({rows(x, 0, b)})[0];
    ASSERT_EQ(y.shape(), (Shape{b, 10}));
    // The engine on the model with this batch: the same bits (generic, float32).
    LoadOptions lo;
    lo.input_shapes["input"] = {b, 1, 8, 8};
    Tensor want = Session(Model::load(kDigits, lo).optimized()).run({rows(x, 0, b)})[0];
    EXPECT_TRUE(y.sameBits(want));
    for (int64_t i = 0; i < b; ++i) EXPECT_TRUE(rows(y, i, 1).sameBits(alone[static_cast<size_t>(i)])) << "sample " << i;
  }
  try {
    rt.setDynamicBatchSize(3);
    FAIL() << "batch 3 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no gear of batch size 3 (the package's gears: 1, 2, 4)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rt.setDynamicHWSize(8, 8), Error);  // batch gears, not image-size ones
}

// The Ascend seed's multi-input model (A:L3, 5): batch gears size every input with an open batch alike; each gear
// computes the engine's bits for that batch.
TEST(Gears, BatchGearsSizeEveryOpenInput) {
  const std::string net = std::string(NPUC_SOURCE_DIR) + "/tests/data/aipp/aipp_net.onnx";
  TranslateOptions o;
  o.prefix = "two";
  o.onnx = net;
  o.target = "generic";
  o.out_root = npuc::test::scratchDir("gears_two");
  o.input_shapes["image"] = {-1, 3, 32, 32};
  o.input_shapes["mask"] = {-1, 1, 32, 32};
  o.dynamic_batch_sizes = {1, 2};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  EXPECT_EQ(rt.gearInput(), "image");  // (gears.json names the first; the others follow it)
  rt.setDynamicBatchSize(2);
  std::vector<Tensor> in;
  uint32_t seed = 3;
  for (const RuntimeTensor& t : rt.inputs()) {
    ASSERT_EQ(t.shape[0], 2) << t.name;
    std::mt19937 rng(seed++);
    Tensor x(DType::kF32, t.shape);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(rng() % 255) / 255.0f;
    in.push_back(x);
  }
  LoadOptions lo;
  lo.input_shapes = {{"image", {2, 3, 32, 32}}, {"mask", {2, 1, 32, 32}}};
  const std::vector<Tensor> want = Session(Model::load(net, lo).optimized()).run(in), got = rt.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(got[k].sameBits(want[k])) << "output " << k;
}

TEST(Gears, WithDynamicAippTheBlockIsForTheLargestBatch) {
  fs::path dir = batchGears("aipp", "aipp_op {\n  aipp_mode: dynamic\n  related_input_rank: 0\n  max_src_image_size: 64\n}\n");
  Runtime rt(dir);
  kernels::AippParams p;
  p.input_format = 4;  // YUV400_U8: the digits' one channel
  p.src_w = 8, p.src_h = 8;
  kernels::AippBatchParams b;
  b.var_reci = {floatToHalf(1.0f / 16), 0, 0, 0};
  p.batch = {b, b};
  try {
    rt.setDynamicAipp("input", kernels::encodeAipp(p));
    FAIL() << "a block for 2 images accepted with gears up to 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aipp.dynamic_batch"), std::string::npos) << e.what();
  }
  p.batch.assign(4, b);
  rt.setDynamicAipp("input", kernels::encodeAipp(p));
  // Every gear took its first records: gear 4's first image is gear 1's image.
  std::vector<uint8_t> frames(4 * 64);
  for (size_t i = 0; i < frames.size(); ++i) frames[i] = static_cast<uint8_t>(i * 37 % 17);
  auto frame = [&](int64_t n) {
    Tensor t(DType::kU8, {n, 64});
    std::memcpy(t.raw(), frames.data(), static_cast<size_t>(n * 64));
    return t;
  };
  rt.setInput("input", frame(1));
  rt.run();
  Tensor one = rt.output("logits");
  rt.setDynamicBatchSize(4);
  rt.setInput("input", frame(4));
  rt.run();
  EXPECT_TRUE(rows(rt.output("logits"), 0, 1).sameBits(one));
}

TEST(Gears, ImageSizeGearsAndTheSeedsNoCropRule) {
  TranslateOptions o;
  o.prefix = "size";
  o.onnx = kDigits;
  o.target = "generic";
  o.out_root = npuc::test::scratchDir("gears_size");
  o.input_shapes["input"] = {1, 1, -1, -1};
  o.dynamic_image_sizes = {{8, 8}, {16, 12}};
  o.aipp = npuc::test::scratchPath("size.cfg");
  std::ofstream(o.aipp) << "aipp_op {\n  aipp_mode: dynamic\n  related_input_rank: 0\n  max_src_image_size: 192\n}\n";
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  ASSERT_EQ(rt.gears().size(), 2u);
  EXPECT_EQ(rt.gears()[1].height, 16);
  EXPECT_EQ(rt.gears()[1].width, 12);
  rt.setDynamicHWSize(16, 12);
  kernels::AippParams p;
  p.input_format = 4;
  p.src_w = 12, p.src_h = 16;
  kernels::AippBatchParams b;
  b.var_reci = {floatToHalf(1.0f / 16), 0, 0, 0};
  p.batch = {b};
  rt.setDynamicAipp("input", kernels::encodeAipp(p));  // the gear's own size: accepted
  p.batch[0].crop = 1, p.batch[0].crop_w = 12, p.batch[0].crop_h = 16;
  try {
    rt.setDynamicAipp("input", kernels::encodeAipp(p));
    FAIL() << "a cropping block accepted with image-size gears";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aipp.dynamic_image_size"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rt.setDynamicHWSize(12, 16), Error);
  EXPECT_THROW(rt.setDynamicBatchSize(1), Error);
}

// Issue 47: the seed's rule that the dynamic block's width and height are the largest gear's (rule
// aipp.dynamic_image_size): checked at translate (the frame must hold the largest gear's picture; a largest gear
// must exist; a static stage must fit every gear) and by setDynamicAipp (srcImageSize = the largest gear's).
TEST(Gears, ImageSizeGearsTakeTheLargestGearsSize) {
  auto translateGears = [](const std::string& name, std::vector<std::pair<int64_t, int64_t>> gears, const std::string& cfg) {
    TranslateOptions o;
    o.prefix = name;
    o.onnx = kDigits;
    o.target = "generic";
    o.out_root = npuc::test::scratchDir("gears_" + name);
    o.input_shapes["input"] = {1, 1, -1, -1};
    o.dynamic_image_sizes = std::move(gears);
    o.aipp = npuc::test::scratchPath(name + ".cfg");
    std::ofstream(o.aipp) << cfg;
    return translate(o);
  };
  auto errorOf = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string dyn = "aipp_op {\n  aipp_mode: dynamic\n  max_src_image_size: 192\n}\n";
  TranslateResult r = translateGears("largest", {{8, 8}, {16, 12}}, dyn);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);  // on gear 8x8
  kernels::AippParams p;
  p.input_format = 4;
  p.src_w = 8, p.src_h = 8;
  kernels::AippBatchParams b;
  b.var_reci = {floatToHalf(1.0f / 16), 0, 0, 0};
  p.batch = {b};
  std::string e = errorOf([&] { rt.setDynamicAipp("input", kernels::encodeAipp(p)); });
  EXPECT_NE(e.find("aipp.dynamic_image_size"), std::string::npos) << e;
  EXPECT_NE(e.find("the largest gear's, 12x16, got 8x8"), std::string::npos) << e;
  // The largest gear's picture, scaled (scf) to this gear: accepted, and it runs.
  p.src_w = 12, p.src_h = 16;
  p.batch[0].scf = 1, p.batch[0].scf_in_w = 12, p.batch[0].scf_in_h = 16, p.batch[0].scf_out_w = 8, p.batch[0].scf_out_h = 8;
  rt.setDynamicAipp("input", kernels::encodeAipp(p));
  Tensor frame(DType::kU8, {1, 192});
  for (int64_t i = 0; i < 192; ++i) frame.data<uint8_t>()[i] = static_cast<uint8_t>(i * 5 % 17);
  rt.setInput("input", frame);
  EXPECT_NO_THROW(rt.run());
  // Translate: a frame too small for the largest gear's picture, no largest gear, a static stage of one size.
  e = errorOf([&] { translateGears("small", {{8, 8}, {16, 12}}, "aipp_op {\n  aipp_mode: dynamic\n  max_src_image_size: 100\n}\n"); });
  EXPECT_NE(e.find("aipp.dynamic_image_size"), std::string::npos) << e;
  EXPECT_NE(e.find("gear size_16x12 (16x12, H x W), whose smallest picture (YUV400_U8) is 192 bytes; max_src_image_size is 100"),
            std::string::npos) << e;
  e = errorOf([&] { translateGears("nolargest", {{8, 16}, {16, 8}}, dyn); });
  EXPECT_NE(e.find("no gear is at least as high and as wide as every other (gears H x W: 8x16, 16x8)"), std::string::npos) << e;
  e = errorOf([&] {
    translateGears("static", {{8, 8}, {16, 12}},
                   "aipp_op {\n  aipp_mode: static\n  input_format: YUV400_U8\n  src_image_size_w: 8\n  src_image_size_h: 8\n}\n");
  });
  EXPECT_NE(e.find("aipp.dynamic_image_size: the static stage delivers 8x8 (H x W) whatever the gear, gear size_16x12 is 16x12"),
            std::string::npos) << e;
  EXPECT_FALSE(fs::exists(npuc::test::scratchPath("gears_static") / "static"));
}

TEST(Gears, TranslateRefusesGearsWithoutAnOpenDimension) {
  TranslateOptions o;
  o.prefix = "closed";
  o.onnx = kDigits;
  o.out_root = npuc::test::scratchDir("gears_closed");
  o.dynamic_batch_sizes = {1, 2};
  try {
    translate(o);
    FAIL() << "gears on a static input accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no input has an open dimension"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(o.out_root / "closed"));
  o.input_shapes["input"] = {-1, 1, 8, 8};
  o.dynamic_batch_sizes = {2, 2};
  EXPECT_THROW(translate(o), Error);  // a repeated size
  o.dynamic_batch_sizes = {1};
  o.dynamic_image_sizes = {{8, 8}};
  EXPECT_THROW(translate(o), Error);  // both kinds
}

TEST(Gears, MalformedGearsFilesNameFileAndField) {
  fs::path dir = batchGears("bad");
  const std::string good = [&] {
    std::ifstream in(dir / "gears.json");
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }();
  struct Bad {
    std::string from, to, message;
  };
  const std::vector<Bad> bad = {
      {"\"npuc-gears\"", "\"other\"", "format: must be \"npuc-gears\""},
      {"\"version\": 1", "\"version\": 2", "version: must be 1"},
      {"\"kind\": \"batch\"", "\"kind\": \"shape\"", "kind: must be"},
      {"\"dir\": \"batch_2\"", "\"dir\": \"../x\"", "gears[1].dir"},
      {"\"dir\": \"batch_2\"", "\"dir\": \"batch_1\"", "listed twice"},
      {"\"batch\": 2", "\"batch\": 0", "gears[1].batch: must be an integer"},
      {"\"batch\": 2", "\"batch\": 3", "does not hold input 'input'"},
      {"{", "[", "gears.json"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.message);
    std::string text = good;
    text.replace(text.find(b.from), b.from.size(), b.to);
    std::ofstream(dir / "gears.json") << text;
    try {
      Runtime rt(dir);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
  }
}

// Shape ranges (Ascend ATC's --input_shape LO~HI; package/shape_ranges.hpp): one package, translated at the ranges'
// largest sizes, serves every size inside them — the runtime specializes it to the sizes an input gives.
namespace {

const std::string kRanges = std::string(NPUC_SOURCE_DIR) + "/tests/data/ranges/";

Tensor picture(int64_t h, int64_t w, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(DType::kF32, {1, 3, h, w});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng() % 1001) / 500.0f - 1.0f;
  return t;
}

TranslateOptions rangeOptions(const std::string& name, const std::string& model, const std::string& target) {
  TranslateOptions o;
  o.prefix = name;
  o.onnx = kRanges + model;
  o.target = target;
  o.out_root = npuc::test::scratchDir("ranges_" + name);
  o.input_shape_ranges["x"] = {{1, 1}, {3, 3}, {24, 40}, {20, 36}};
  return o;
}

}  // namespace

TEST(ShapeRanges, OnePackageServesEverySizeOfTheRange) {
  const TranslateResult r = translate(rangeOptions("net", "ranges_net.onnx", "generic"));
  ASSERT_TRUE(r.ok);
  for (auto [threads, exact] : {std::pair{1, false}, {2, false}, {1, true}}) {
    Runtime rt(r.dir, {threads, exact});
    ASSERT_EQ(rt.shapeRanges().size(), 2u);
    EXPECT_EQ(rt.shapeRanges()[0].value, "x");
    EXPECT_EQ(rt.shapeRanges()[0].dim, 2);
    EXPECT_EQ(rt.shapeRanges()[1].lo, 20);
    EXPECT_EQ(rt.shapeRanges()[1].hi, 36);
    EXPECT_EQ(rt.inputs()[0].shape, (Shape{1, 3, 40, 36}));  // starts at the largest sizes
    // Sizes of every parity and both ends, more than the runtime keeps (its cache turns over).
    for (int64_t h : {24, 25, 31, 40, 33})
      for (int64_t w : {20, 36, 27, 21}) {
        SCOPED_TRACE(fmt::format("{}x{}, {} thread(s){}", h, w, threads, exact ? ", exact" : ""));
        const Tensor x = picture(h, w, static_cast<uint32_t>(h * 100 + w));
        const std::vector<Tensor> got = rt.run({x});
        LoadOptions lo;
        lo.input_shapes["x"] = {1, 3, h, w};
        const std::vector<Tensor> want = Session(Model::load(kRanges + "ranges_net.onnx", lo).optimized()).run({x});
        ASSERT_EQ(got.size(), 2u);
        EXPECT_EQ(rt.inputs()[0].shape, (Shape{1, 3, h, w}));
        EXPECT_EQ(rt.outputs()[1].shape, want[1].shape());
        EXPECT_TRUE(got[0].sameBits(want[0]));  // the engine's bits (generic, float32)
        EXPECT_TRUE(got[1].sameBits(want[1]));
      }
  }
  // setInputShape selects the sizes; shapes outside the ranges, or other than the input's elsewhere, are refused.
  Runtime rt(r.dir);
  rt.setInputShape("x", {1, 3, 30, 22});
  EXPECT_EQ(rt.inputs()[0].shape, (Shape{1, 3, 30, 22}));
  EXPECT_EQ(rt.outputs()[1].shape, (Shape{1, 16, 7, 5}));
  for (const Shape& bad : {Shape{1, 3, 41, 22}, Shape{1, 3, 23, 22}, Shape{1, 3, 30, 37}, Shape{1, 4, 30, 22}, Shape{1, 3, 30}}) {
    try {
      rt.setInput("x", Tensor(DType::kF32, bad));
      FAIL() << shapeStr(bad) << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("input 'x' takes shape [1,3,24~40,20~36]"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(rt.inputs()[0].shape, (Shape{1, 3, 30, 22}));  // (a refused shape leaves the selection as it was)
  // A float16 package: at each size, the bytes of the ordinary package translated at that size.
  const TranslateResult half = translate(rangeOptions("half", "ranges_net.onnx", "drpai"));
  ASSERT_TRUE(half.ok);
  Runtime hrt(half.dir);
  for (auto [h, w] : {std::pair<int64_t, int64_t>{24, 20}, {29, 33}, {40, 36}}) {
    SCOPED_TRACE(fmt::format("float16 {}x{}", h, w));
    TranslateOptions o = rangeOptions(fmt::format("half_{}x{}", h, w), "ranges_net.onnx", "drpai");
    o.input_shape_ranges.clear();
    o.input_shapes["x"] = {1, 3, h, w};
    const TranslateResult one = translate(o);
    ASSERT_TRUE(one.ok);
    Runtime ort(one.dir);
    const Tensor x = picture(h, w, 5);
    hrt.run({x});
    ort.run({x});
    for (const char* out : {"y", "feat"}) EXPECT_TRUE(hrt.output(out).sameBits(ort.output(out))) << out;
  }
}

TEST(ShapeRanges, WhatNoPackageServesIsRefusedNamingIt) {
  auto refused = [](TranslateOptions o) {
    try {
      translate(o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(translated)");
  };
  // A ceil-mode pooling takes ceil at odd sizes, which the pads fixed for the largest size do not: the tensor named.
  std::string e = refused(rangeOptions("ceil", "ranges_ceil.onnx", "generic"));
  EXPECT_NE(e.find("at x[2] = 25 tensor '/pool/MaxPool_output_0' is 1x8x7x9 in the model, 1x8x6x9 as optimized for the largest size"),
            std::string::npos) << e;
  e = refused(rangeOptions("same", "ranges_same.onnx", "generic"));
  EXPECT_NE(e.find("node 'same_conv' (Conv): auto_pad SAME_UPPER pads by the size"), std::string::npos) << e;
  e = refused(rangeOptions("flat", "ranges_flat.onnx", "generic"));  // (a feature map flattened: one size only)
  EXPECT_NE(e.find("'/fc/Gemm' (Gemm): inner dimensions differ"), std::string::npos) << e;
  e = refused(rangeOptions("int8", "ranges_net.onnx", "generic-int8"));
  EXPECT_NE(e.find("calibrated at one size; a package serving a range is float32 or float16"), std::string::npos) << e;
  TranslateOptions open = rangeOptions("open", "ranges_net.onnx", "generic");
  open.input_shape_ranges["x"][3] = {20, std::numeric_limits<int64_t>::max()};
  e = refused(open);
  EXPECT_NE(e.find("give an upper bound (LO~HI)"), std::string::npos) << e;
  // A size fixed inside the range makes an ordinary package.
  TranslateOptions fixed = rangeOptions("fixed", "ranges_net.onnx", "generic");
  fixed.input_shapes["x"] = {1, 3, 30, 30};
  const TranslateResult r = translate(fixed);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(Runtime(r.dir).shapeRanges().empty());
}

// Model bundles (Kneron's multi-model NEF; npuc bundle): models.json is untrusted input like a package.
TEST(Bundles, MalformedModelsFilesNameFileAndField) {
  const fs::path dir = npuc::test::scratchDir("bundle_bad");
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"[]", "(top level): must be an object"},
           {R"({"format": "npuc-gears", "version": 1, "models": []})", "format: must be \"npuc-models\""},
           {R"({"format": "npuc-models", "version": 2, "models": []})", "version: must be 1"},
           {R"({"format": "npuc-models", "version": 1, "models": []})", "models: must be a list of 1 to 256 models"},
           {R"({"format": "npuc-models", "version": 1, "models": [{"id": -1, "dir": "a"}]})", "models[0].id: must be an integer from 0"},
           {R"({"format": "npuc-models", "version": 1, "models": [{"id": 1, "dir": "../a"}]})", "models[0].dir:"},
           {R"({"format": "npuc-models", "version": 1, "models": [{"id": 1, "dir": "a"}, {"id": 1, "dir": "b"}]})", "models[1].id: id 1 is listed twice"},
           {R"({"format": "npuc-models", "version": 1, "models": [{"id": 1, "dir": "a"}, {"id": 2, "dir": "a"}]})", "models[1].dir: 'a' is listed twice"}}) {
    std::ofstream(dir / "models.json", std::ios::trunc) << text;
    try {
      bundleModelIds(dir);
      FAIL() << text << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("models.json: " + says), std::string::npos) << e.what();
    }
  }
  std::ofstream(dir / "models.json", std::ios::trunc) << R"({"format": "npuc-models", "version": 1, "models": [{"id": 9, "dir": "m"}]})";
  EXPECT_EQ(bundleModelIds(dir), (std::vector<int64_t>{9}));
  EXPECT_EQ(bundleModel(dir, 9), dir / "m");
  EXPECT_THROW(Runtime{dir}, Error);  // a bundle is no package: the error names its ids
}
