// Pre/post-processing inside packages (issue 5): the five definitions of the DRP-AI manual §5.5 and two made to
// cover the remaining operations, each with a model built for it (tests/data/prepost/examples/), translated for
// generic (fp32 body) and drpai (fp16 body):
//   - generic: every output has the reference engine's bits on the same combined graph (pre/post operations run
//     the same kernels on the same types; the body is float32 on both sides);
//   - drpai: close to the engine (the body in float16);
//   - fast and --exact modes give the same bits at 1 and 2 threads, layer by layer.
// Plus camera frames made from pictures (Runtime::imageInput).
#include "kernels/prepost.hpp"
#include "npuc/error.hpp"
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "support/fp16.hpp"

#include "package_checks.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = NPUC_SOURCE_DIR;
const std::string kExamples = kSrc + "/tests/data/prepost/examples/";

using npuc::test::cosine;
using npuc::test::expectLayersAgree;
using npuc::test::scratchDir;

fs::path writeText(const std::string& name, const std::string& text) {
  fs::path p = npuc::test::scratchPath(name);
  std::ofstream(p) << text;
  return p;
}

// Operations the §5.5 examples leave out: conv_yuv2rgb to BGR from UYVY, crop, nearest resize, normalize with the
// R/B swap; post transpose then argmax over channels to uint16.
const std::string kArgmaxDef = R"(
input_to_pre:
  - {name: cam, format: YUY2, order: HWC, shape: [120, 160, 2], type: uint8}
input_to_body:
  - {name: input, format: RGB, order: HWC, shape: [96, 96, 3], type: fp16}
output_from_body:
  - {name: output, shape: [96, 96, 3], order: HWC, type: fp16}
output_from_post:
  - {name: classes, shape: [1, 96, 96], order: CHW, type: uint16}
preprocess:
  - src: [cam]
    dest: [input]
    operations:
      - {op: conv_yuv2rgb, param: {DIN_YUV_FORMAT: 2, DOUT_RGB_FORMAT: 1}}
      - {op: crop, param: {CROP_POS_X: 10, CROP_POS_Y: 4, shape_out: [110, 140], DATA_TYPE: 0, DATA_FORMAT: 0}}
      - {op: resize_hwc, param: {RESIZE_ALG: 0, DATA_TYPE: 0, shape_out: [96, 96]}}
      - {op: cast_any_to_fp16, param: {DIN_FORMAT: 0}}
      - {op: normalize, param: {DOUT_RGB_ORDER: 1, cof_add: [-120.0, -110.5, -100.0], cof_mul: [0.0171, 0.0175, 0.0174]}}
postprocess:
  - src: [output]
    dest: [classes]
    operations:
      - {op: transpose, param: {WORD_SIZE: 1, IS_CHW2HWC: 0}}
      - {op: argminmax, param: {DIN_FORMAT: 1, DOUT_TYPE: 1, AXIS: 0, ARG_MODE: 0}}
)";

// conv_x2gray for the digits model (8x8 gray), softmax to float16 then cast to float32, memcopy.
const std::string kGrayDef = R"(
input_to_pre:
  - {name: cam, format: YUY2, order: HWC, shape: [8, 8, 2], type: uint8}
input_to_body:
  - {name: input, format: GRAY, order: HWC, shape: [8, 8, 1], type: fp16}
output_from_body:
  - {name: logits, shape: [10], order: C, type: fp16}
output_from_post:
  - {name: probs, shape: [10], order: C, type: fp32}
preprocess:
  - src: [cam]
    dest: [input]
    operations:
      - {op: conv_x2gray, param: {DIN_FORMAT: 0}}
      - {op: cast_any_to_fp16, param: {DIN_FORMAT: 0}}
      - {op: normalize, param: {DOUT_RGB_ORDER: 0, cof_add: [-16.0], cof_mul: [0.0625]}}
      - {op: memcopy}
postprocess:
  - src: [logits]
    dest: [probs]
    operations:
      - {op: softmax, param: {DOUT_FORMAT: 0}}
      - {op: cast_fp16_fp32, param: {CAST_MODE: 0}}
)";

// shape_post: the detection head of example 2 split along its channels (boxes + scores), each piece post-processed
// on its own; and an fp16 frame (input_to_pre fp16) through an fp16 bilinear resize (normalize needs a uint8 cast
// before it, §5.3.2, so none here).
const std::string kShapePostDef = R"(
input_to_pre:
  - {name: img, format: RGB, order: HWC, shape: [300, 400, 3], type: fp16}
input_to_body:
  - {name: cnn_in, format: RGB, order: HWC, shape: [416, 416, 3], type: fp16}
output_from_body:
  - name: cnn_out
    shape: [13, 13, 125]
    order: HWC
    type: fp16
    shape_post:
      - {name: boxes, shape: [13, 13, 25]}
      - {name: scores, shape: [13, 13, 100]}
output_from_post:
  - {name: boxes_out, shape: [13, 13, 25], order: HWC, type: fp32}
  - {name: scores_out, shape: [100, 13, 13], order: CHW, type: fp16}
preprocess:
  - src: [img]
    dest: [cnn_in]
    operations:
      - {op: resize_hwc, param: {RESIZE_ALG: 1, DATA_TYPE: 1, shape_out: [416, 416]}}
      - {op: memcopy}
postprocess:
  - src: [boxes]
    dest: [boxes_out]
    operations:
      - {op: cast_fp16_fp32, param: {CAST_MODE: 0}}
  - src: [scores]
    dest: [scores_out]
    operations:
      - {op: transpose, param: {WORD_SIZE: 1, IS_CHW2HWC: 0}}
)";

struct Case {
  std::string name, onnx, def;  // def: a file, or (for the made-up ones) YAML text written to a file
};

fs::path definitionOf(const Case& c) {
  if (c.def.find('\n') == std::string::npos) return c.def;
  return writeText("defs/" + c.name + ".yaml", c.def);
}

const std::vector<Case> kCases = {
    {"example1", kExamples + "example1.onnx", kExamples + "example1.yaml"},
    {"example2", kExamples + "example2.onnx", kExamples + "example2.yaml"},
    {"example3", kExamples + "example3.onnx", kExamples + "example3.yaml"},
    {"example4", kExamples + "example4.onnx", kExamples + "example4.yaml"},
    {"example5", kExamples + "example5.onnx", kExamples + "example5.yaml"},
    {"argmax", kExamples + "example4.onnx", kArgmaxDef},
    {"gray", kSrc + "/models/digits/digits_cnn.onnx", kGrayDef},
    {"shape_post", kExamples + "example2.onnx", kShapePostDef},
};

/// A frame for every input: random bytes for uint8 frames, values in [0, 1) for float16 ones.
std::vector<Tensor> frames(const Runtime& rt, uint32_t seed) {
  std::vector<Tensor> res;
  std::mt19937 rng(seed);
  for (auto& in : rt.inputs()) {
    Tensor t(in.dtype, in.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (in.dtype == DType::kU8) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(rng() & 0xFF);
      else if (in.dtype == DType::kF16) static_cast<uint16_t*>(t.raw())[i] = floatToHalf(static_cast<float>(rng() % 1024) / 1024.0f);
      else ADD_FAILURE() << "unexpected input type " << dtypeName(in.dtype);
    }
    res.push_back(std::move(t));
  }
  return res;
}

std::vector<Tensor> runPackage(const fs::path& dir, RuntimeOptions opts, const std::vector<Tensor>& in, std::vector<Tensor>* layers) {
  Runtime rt(dir, opts);
  for (size_t i = 0; i < in.size(); ++i) rt.setInput(rt.inputs()[i].name, in[i]);
  rt.run([&](const RuntimeLayer&, const Tensor& y) { layers->push_back(y.clone()); });
  std::vector<Tensor> outs;
  for (auto& o : rt.outputs()) outs.push_back(rt.output(o.name));
  return outs;
}

TranslateResult translateWith(const Case& c, const std::string& target) {
  TranslateOptions o;
  o.prefix = c.name;
  o.onnx = c.onnx;
  o.target = target;
  o.out_root = scratchDir(target + "_pp_" + c.name);
  o.prepost = definitionOf(c);
  return translate(o);
}

class PrePostPackage : public ::testing::TestWithParam<Case> {};

TEST_P(PrePostPackage, GenericHasTheEngineBitsDrpaiIsCloseModesAgree) {
  const Case& c = GetParam();
  for (const char* target : {"generic", "drpai"}) {
    SCOPED_TRACE(target);
    TranslateResult r = translateWith(c, target);
    ASSERT_TRUE(r.ok);
    EXPECT_TRUE(fs::exists(r.dir / (c.name + "_prepost_opt.yaml")));
    Runtime rt(r.dir);
    std::vector<Tensor> in = frames(rt, 5);
    // The engine on the same combined graph: the optimized body with the definition inserted (what translate
    // lowers), and the original body with it (the float reference of the drpai comparison).
    Model m = Model::load(c.onnx);
    Model::PrePostOptions po;
    std::map<std::string, Tensor> feed;
    for (size_t i = 0; i < in.size(); ++i) feed[rt.inputs()[i].name] = in[i];
    Model combined = (std::string(target) == "generic" ? m.optimized() : m).withPrePost(definitionOf(c), po);
    std::vector<Tensor> ref = Session(combined, 1).run(feed);
    std::vector<Tensor> l_exact, l_fast1, l_fast2;
    auto exact = runPackage(r.dir, {1, true}, in, &l_exact);
    auto fast1 = runPackage(r.dir, {1, false}, in, &l_fast1);
    auto fast2 = runPackage(r.dir, {2, false}, in, &l_fast2);
    ASSERT_EQ(exact.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      SCOPED_TRACE("output " + rt.outputs()[i].name);
      EXPECT_EQ(exact[i].dtype(), ref[i].dtype());
      EXPECT_EQ(exact[i].numel(), ref[i].numel());
      if (std::string(target) == "generic") {
        EXPECT_TRUE(exact[i].reshaped(ref[i].shape()).sameBits(ref[i])) << "differs from the engine";
      } else if (isFloat(ref[i].dtype())) {
        EXPECT_GE(cosine(exact[i], ref[i]), 0.9999);
      } else {  // class indices: almost all agree
        auto a = exact[i].toDouble(), b = ref[i].toDouble();
        size_t same = 0;
        for (size_t k = 0; k < a.size(); ++k) same += a[k] == b[k];
        EXPECT_GE(static_cast<double>(same), 0.98 * static_cast<double>(a.size()));
      }
      EXPECT_TRUE(fast1[i].sameBits(exact[i]));
      EXPECT_TRUE(fast2[i].sameBits(exact[i]));
    }
    ASSERT_EQ(l_exact.size(), l_fast2.size());
    expectLayersAgree(l_exact, l_fast1, l_fast2);
  }
}

INSTANTIATE_TEST_SUITE_P(Definitions, PrePostPackage, ::testing::ValuesIn(kCases), [](const auto& info) { return info.param.name; });

TEST(PrePostPackage, EveryPrePostKindIsCovered) {
  // The cases above between them lower to every pre/post layer kind.
  std::set<std::string> kinds;
  for (const Case& c : kCases) {
    TranslateResult r = translateWith(c, "drpai");
    ASSERT_TRUE(r.ok);
    Runtime rt(r.dir);  // named: a temporary would die before the loop reads its layers
    for (auto& l : rt.layers()) kinds.insert(l.kind);
  }
  for (const char* k : {"yuv_to_rgb", "to_gray", "crop", "resize_hwc", "normalize", "post_softmax", "argminmax", "cast", "transpose"})
    EXPECT_TRUE(kinds.count(k)) << k;
}

TEST(PrePostPackage, SameDefinitionSameBytes) {
  // Two translations of example 3 (three outputs): the same package, the same PREFIX_prepost_opt.yaml.
  auto bytes = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  Case c = kCases[2];
  TranslateResult a = translateWith(c, "drpai");
  c.name = "example3";  // same prefix, another folder
  TranslateOptions o;
  o.prefix = c.name;
  o.onnx = c.onnx;
  o.target = "drpai";
  o.out_root = scratchDir("drpai_pp_example3_again");
  o.prepost = definitionOf(c);
  TranslateResult b = translate(o);
  ASSERT_TRUE(a.ok && b.ok);
  EXPECT_EQ(a.content_hash, b.content_hash);
  ASSERT_EQ(a.files, b.files);
  for (auto& f : a.files) EXPECT_EQ(bytes(a.dir / f), bytes(b.dir / f)) << f;
}

TEST(PrePostPackage, FramesAndResultsKeepTheirTypes) {
  TranslateResult r = translateWith(kCases[0], "drpai");
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  ASSERT_EQ(rt.inputs().size(), 1u);
  EXPECT_EQ(rt.inputs()[0].dtype, DType::kU8);
  EXPECT_EQ(rt.inputs()[0].shape, (Shape{480, 640, 2}));
  EXPECT_EQ(rt.inputs()[0].image.format, "YUYV");
  EXPECT_EQ(rt.inputs()[0].image.height, 480);
  EXPECT_EQ(rt.inputs()[0].image.width, 640);
  EXPECT_EQ(rt.outputs()[0].dtype, DType::kF32);  // softmax DOUT_FORMAT 1
  // cast_any_to_fp16 is fused into normalize: no cast layer between resize and normalize.
  std::vector<std::string> kinds;
  for (auto& l : rt.layers()) kinds.push_back(l.kind);
  auto norm = std::find(kinds.begin(), kinds.end(), "normalize");
  ASSERT_NE(norm, kinds.end());
  EXPECT_EQ(*(norm - 1), "resize_hwc");
  // A float32 tensor is no frame: the message names what the input takes.
  try {
    rt.setInput("pre_in", Tensor(DType::kF32, {480, 640, 2}));
    ADD_FAILURE() << "accepted float32 for a uint8 frame";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("give uint8)"), std::string::npos) << e.what();
  }
}

// ---- pictures in ----

const std::string kPng = kSrc + "/tests/data/images/gradient_64x48.png";
const std::string kJpg = kSrc + "/tests/data/images/gradient_64x48.jpg";

uint8_t gradient(int64_t y, int64_t x, int c) {
  int64_t v = c == 0 ? 4 * x : c == 1 ? 5 * y : 255 - 2 * x - 2 * y;
  return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
}

fs::path frameModel(const std::string& name, const std::string& pre_in_format, const std::string& shape, const std::string& first_op) {
  // The digits body behind a frame of the given format; only the input matters here.
  std::string def = "input_to_pre:\n  - {name: cam, format: " + pre_in_format + ", order: HWC, shape: " + shape + ", type: uint8}\n" +
                    R"(input_to_body:
  - {name: input, format: GRAY, order: HWC, shape: [8, 8, 1], type: fp16}
output_from_body:
  - {name: logits, shape: [10], order: C, type: fp16}
output_from_post:
  - {name: logits_out, shape: [10], order: C, type: fp16}
preprocess:
  - src: [cam]
    dest: [input]
    operations:
)" + first_op + R"(      - {op: resize_hwc, param: {RESIZE_ALG: 1, DATA_TYPE: 0, shape_out: [8, 8]}}
      - {op: cast_any_to_fp16, param: {DIN_FORMAT: 0}}
      - {op: normalize, param: {DOUT_RGB_ORDER: 0, cof_add: [0.0], cof_mul: [0.0625]}}
postprocess:
  - src: [logits]
    dest: [logits_out]
    operations:
      - {op: memcopy}
)";
  TranslateOptions o;
  o.prefix = name;
  o.onnx = kSrc + "/models/digits/digits_cnn.onnx";
  o.target = "drpai";
  o.out_root = scratchDir("frames_" + name);
  o.prepost = writeText("defs/frame_" + name + ".yaml", def);
  return translate(o).dir;
}

TEST(ImageInput, PngBecomesTheDeclaredRgbFrameExactly) {
  // An RGB frame of the picture's own size: the decoded pixels themselves.
  fs::path dir = frameModel("rgb", "RGB", "[48, 64, 3]", "      - {op: conv_x2gray, param: {DIN_FORMAT: 4096}}\n");
  Runtime rt(dir);
  EXPECT_EQ(rt.inputs()[0].image.format, "RGB");
  Tensor t = rt.imageInput("cam", kPng);
  ASSERT_EQ(t.shape(), (Shape{48, 64, 3}));
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  int bad = 0;
  for (int64_t y = 0; y < 48; ++y)
    for (int64_t x = 0; x < 64; ++x)
      for (int c = 0; c < 3; ++c) bad += p[(y * 64 + x) * 3 + c] != gradient(y, x, c);
  EXPECT_EQ(bad, 0);
  rt.setInput("cam", t);
  rt.run();
  // The JPEG of the same picture decodes close to it (lossy).
  Tensor j = rt.imageInput("cam", kJpg);
  const uint8_t* q = static_cast<const uint8_t*>(j.raw());
  double err = 0;
  for (int64_t i = 0; i < j.numel(); ++i) err += std::abs(int(q[i]) - int(p[i]));
  EXPECT_LT(err / static_cast<double>(j.numel()), 3.0);
}

TEST(ImageInput, YuvFramesDecodeBackToThePicture) {
  // The picture resized to 32x40 (bilinear), encoded as YUYV, decoded by the package's own conv_yuv2rgb kernel:
  // close to the resized picture (limited-range BT.601 rounding and 4:2:2 chroma).
  fs::path dir = frameModel("yuyv", "YUY2", "[32, 40, 2]", "      - {op: conv_x2gray, param: {DIN_FORMAT: 0}}\n");
  Runtime rt(dir);
  EXPECT_EQ(rt.inputs()[0].image.format, "YUYV");
  Tensor t = rt.imageInput("cam", kPng);
  ASSERT_EQ(t.shape(), (Shape{32, 40, 2}));
  std::vector<uint8_t> rgb(32 * 40 * 3), want(32 * 40 * 3), src(48 * 64 * 3);
  kernels::yuvToRgb(kernels::YuvFormat::kYUYV, false, 32, 40, static_cast<const uint8_t*>(t.raw()), rgb.data(), nullptr);
  for (int64_t y = 0; y < 48; ++y)
    for (int64_t x = 0; x < 64; ++x)
      for (int c = 0; c < 3; ++c) src[static_cast<size_t>((y * 64 + x) * 3 + c)] = gradient(y, x, c);
  kernels::ResizeGeometry g{48, 64, 3, 32, 40};
  kernels::resizeHwc(kernels::ResizeAlg::kBilinear, g, src.data(), want.data(), nullptr);
  double err = 0;
  int worst = 0;
  for (size_t i = 0; i < rgb.size(); ++i) {
    int d = std::abs(int(rgb[i]) - int(want[i]));
    err += d;
    worst = std::max(worst, d);
  }
  EXPECT_LT(err / static_cast<double>(rgb.size()), 3.0);
  EXPECT_LE(worst, 12);
  rt.setInput("cam", t);
  rt.run();
}

TEST(ImageInput, BadPicturesAndNonImageInputsAreRefused) {
  fs::path dir = frameModel("bad", "YUY2", "[32, 40, 2]", "      - {op: conv_x2gray, param: {DIN_FORMAT: 0}}\n");
  Runtime rt(dir);
  fs::path junk = writeText("not_a_picture.png", "this is not a png");
  try {
    (void)rt.imageInput("cam", junk);
    ADD_FAILURE() << "accepted a text file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("not_a_picture.png"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)rt.imageInput("cam", kSrc + "/tests/data/images/missing.png"), Error);
  EXPECT_THROW((void)rt.imageInput("nope", kPng), Error);
  // A package without pre-processing has no frame inputs.
  TranslateOptions o;
  o.prefix = "plain";
  o.onnx = kSrc + "/models/digits/digits_cnn.onnx";
  o.target = "generic";
  o.out_root = scratchDir("frames_plain");
  Runtime plain(translate(o).dir);
  EXPECT_TRUE(plain.inputs()[0].image.format.empty());
  EXPECT_THROW((void)plain.imageInput(plain.inputs()[0].name, kPng), Error);
}

}  // namespace

// Planar and 4:2:0 YUV in conv_yuv2rgb (issue 25 item 3): the manual's table has these frames declared YUY2
// [H, W, 2] (RGB [H, W, 3] for IMC1 / IMC3), more bytes than the frame's 1.5 a pixel; the frame fills the start of
// the buffer. Each format is translated (generic: exact) and simulated, and the RGB it gives is OpenCV's
// (tests/data/prepost_golden, cv2.cvtColor), also on the engine and with the package's fast path.
TEST(PrePostPackage, PlanarYuvFramesGiveOpenCvsRgb) {
  const fs::path golden = kSrc + "/tests/data/prepost_golden";
  struct F {
    int code;
    const char* name;
  };
  for (F f : {F{4096, "yuyv420"}, F{4097, "uyvy420"}, F{4098, "yv12"}, F{4099, "iyuv"}, F{4100, "nv12"}, F{4101, "nv21"},
              F{4102, "imc1"}, F{4103, "imc2"}, F{4104, "imc3"}, F{4105, "imc4"}}) {
    SCOPED_TRACE(f.name);
    const bool rgb_decl = f.code == 4102 || f.code == 4104;
    std::string def = fmt::format(R"(input_to_pre:
  - {{name: cam, format: {}, order: HWC, shape: [12, 16, {}], type: uint8}}
input_to_body:
  - {{name: input, format: RGB, order: HWC, shape: [12, 16, 3], type: fp16}}
output_from_body:
  - {{name: output, shape: [12, 16, 3], order: HWC, type: fp16}}
output_from_post:
  - {{name: rgb, shape: [12, 16, 3], order: HWC, type: fp32}}
preprocess:
  - src: [cam]
    dest: [input]
    operations:
      - {{op: conv_yuv2rgb, param: {{DIN_YUV_FORMAT: {}, DOUT_RGB_FORMAT: 0}}}}
      - {{op: cast_any_to_fp16, param: {{DIN_FORMAT: 0}}}}
      - {{op: normalize, param: {{DOUT_RGB_ORDER: 0, cof_add: [0, 0, 0], cof_mul: [1, 1, 1]}}}}
postprocess:
  - src: [output]
    dest: [rgb]
    operations:
      - {{op: cast_fp16_fp32, param: {{CAST_MODE: 0}}}}
)",
                                  rgb_decl ? "RGB" : "YUY2", rgb_decl ? 3 : 2, f.code);
    TranslateOptions o;
    o.prefix = std::string("yuv_") + f.name;
    o.onnx = kSrc + "/tests/data/prepost/bodies/rgb_12x16.onnx";
    o.target = "generic";
    o.out_root = scratchDir(o.prefix);
    o.prepost = writeText("defs/" + o.prefix + ".yaml", def);
    TranslateResult r = translate(o);
    ASSERT_TRUE(r.ok);
    Runtime rt(r.dir);
    ASSERT_EQ(rt.inputs()[0].shape, (Shape{12, 16, rgb_decl ? 3 : 2}));
    // The frame at the start of the buffer, the rest filled with a pattern that must not matter.
    Tensor frame = readNpyFile(golden / fmt::format("yuv_{}_12x16_in.npy", f.name));
    Tensor in(DType::kU8, rt.inputs()[0].shape);
    ASSERT_LE(frame.numel(), in.numel());
    for (int64_t i = 0; i < in.numel(); ++i) static_cast<uint8_t*>(in.raw())[i] = static_cast<uint8_t>(i * 7 + 3);
    std::memcpy(in.raw(), frame.raw(), static_cast<size_t>(frame.numel()));
    Tensor want = readNpyFile(golden / fmt::format("yuv_{}_12x16_rgb.npy", f.name));
    ASSERT_EQ(want.numel(), 12 * 16 * 3);
    std::vector<Tensor> l1, l2;
    Tensor exact = runPackage(r.dir, {1, true}, {in}, &l1)[0], fast = runPackage(r.dir, {2, false}, {in}, &l2)[0];
    auto w = want.toDouble(), e = exact.toDouble();
    ASSERT_EQ(e.size(), w.size());
    size_t differ = 0;
    for (size_t i = 0; i < w.size(); ++i) differ += e[i] != w[i];
    EXPECT_EQ(differ, 0u) << "of " << w.size() << " values differ from OpenCV";
    EXPECT_TRUE(fast.sameBits(exact));
    Model m = Model::load(o.onnx).withPrePost(o.prepost, {});
    EXPECT_TRUE(Session(m).run({{"cam", in}})[0].sameBits(exact));
  }
}
