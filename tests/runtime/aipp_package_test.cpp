// Ascend-style AIPP (issue 5, docs/aipp.md), in packages and on the reference engine:
//   - acceptance: one dynamic package and three (here four) parameter blocks at run time — crop + resize; padding;
//     CSC off; rotation with NV21 — give the same output bits as the equivalent static configurations, for
//     generic (fp32) and drpai (fp16), in fast mode at 1 and 2 threads and in --exact mode;
//   - generic packages have the reference engine's bits on the same graph (model.withAipp), drpai is close;
//   - invalid blocks are refused with the rule they break (setDynamicAipp, and again at run time);
//   - the block layout is the seed's (offsets, sizes), the YAML form reads back to the same bytes;
//   - the stage against an independent per-pixel implementation written from the formulas of docs/aipp.md.
#include "kernels/aipp.hpp"
#include "kernels/prepost.hpp"
#include "npuc/error.hpp"
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "prepost/aipp.hpp"
#include "support/fp16.hpp"
#include "support/thread_pool.hpp"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <fstream>
#include <random>
#include <tuple>

using namespace npuc;
namespace fs = std::filesystem;
using kernels::AippBatchParams;
using kernels::AippParams;

namespace {

const std::string kModel = std::string(NPUC_SOURCE_DIR) + "/tests/data/aipp/aipp_net.onnx";
constexpr int64_t kMaxSrc = 64 * 48 * 3 / 2;  // the dynamic configuration's max_src_image_size

using npuc::test::scratchPath;

fs::path writeText(const std::string& name, const std::string& text) {
  fs::path p = scratchPath(name);
  std::ofstream(p) << text;
  return p;
}

const char* kJpegMatrix = R"(
  csc_switch: true
  matrix_r0c0: 256
  matrix_r0c1: 0
  matrix_r0c2: 359
  matrix_r1c0: 256
  matrix_r1c1: -88
  matrix_r1c2: -183
  matrix_r2c0: 256
  matrix_r2c1: 454
  matrix_r2c2: 0
  input_bias_0: 0
  input_bias_1: 128
  input_bias_2: 128
)";

void setJpeg(AippParams& p) {
  p.csc = 1;
  p.matrix = {{{256, 0, 359}, {256, -88, -183}, {256, 454, 0}}};
  p.input_bias = {0, 128, 128};
  p.output_bias = {16, 128, 128};  // the template's default, unused by YUV -> RGB
}

/// A static configuration and the dynamic block that should do the same.
struct Case {
  const char* name;
  std::string config;  // static aipp_op for input 0
  AippParams block;
  int64_t src_bytes;
};

std::vector<Case> cases() {
  std::vector<Case> v;
  {  // crop + resize, CSC on, ImageNet-style min / var_reci
    Case c{"crop_resize", std::string(R"(aipp_op {
  aipp_mode: static
  related_input_rank: 0
  input_format: YUV420SP_U8
  src_image_size_w: 64
  src_image_size_h: 48
  crop: true
  load_start_pos_w: 8
  load_start_pos_h: 4
  crop_size_w: 40
  crop_size_h: 40
  resize: true
  resize_output_w: 32
  resize_output_h: 32
)") + kJpegMatrix + R"(
  min_chn_0: 123.675
  min_chn_1: 116.28
  min_chn_2: 103.53
  var_reci_chn_0: 0.0171247538316637
  var_reci_chn_1: 0.0175070028011204
  var_reci_chn_2: 0.0174291938997821
})", {}, 64 * 48 * 3 / 2};
    AippParams& p = c.block;
    p.src_w = 64, p.src_h = 48;
    setJpeg(p);
    AippBatchParams b;
    b.crop = 1, b.crop_x = 8, b.crop_y = 4, b.crop_w = 40, b.crop_h = 40;
    b.scf = 1, b.scf_in_w = 40, b.scf_in_h = 40, b.scf_out_w = 32, b.scf_out_h = 32;
    const float mins[3] = {123.675f, 116.28f, 103.53f}, vars[3] = {0.0171247538316637f, 0.0175070028011204f, 0.0174291938997821f};
    for (size_t i = 0; i < 4; ++i) {
      b.min[i] = floatToHalf(i < 3 ? mins[i] : 0.f);
      b.var_reci[i] = floatToHalf(i < 3 ? vars[i] : 1.f);
    }
    p.batch = {b};
    v.push_back(c);
  }
  {  // padding around a smaller source, CSC on, mean and var_reci
    Case c{"padding", std::string(R"(aipp_op {
  aipp_mode: static
  input_format: YUV420SP_U8
  src_image_size_w: 28
  src_image_size_h: 24
  padding: true
  top_padding_size: 4
  bottom_padding_size: 4
  left_padding_size: 2
  right_padding_size: 2
)") + kJpegMatrix + R"(
  mean_chn_0: 100
  mean_chn_1: 110
  mean_chn_2: 120
  var_reci_chn_0: 0.02
  var_reci_chn_1: 0.02
  var_reci_chn_2: 0.02
})", {}, 28 * 24 * 3 / 2};
    AippParams& p = c.block;
    p.src_w = 28, p.src_h = 24;
    setJpeg(p);
    AippBatchParams b;
    b.padding = 1, b.pad_top = 4, b.pad_bottom = 4, b.pad_left = 2, b.pad_right = 2;
    b.mean = {100, 110, 120, 0};
    b.var_reci = {floatToHalf(0.02f), floatToHalf(0.02f), floatToHalf(0.02f), floatToHalf(1.f)};
    p.batch = {b};
    v.push_back(c);
  }
  {  // CSC off: the Y, U, V planes themselves, normalized
    Case c{"csc_off", R"(aipp_op {
  aipp_mode: static
  input_format: YUV420SP_U8
  src_image_size_w: 32
  src_image_size_h: 32
  csc_switch: false
  mean_chn_0: 16
  mean_chn_1: 128
  mean_chn_2: 128
  var_reci_chn_0: 0.004464
  var_reci_chn_1: 0.004464
  var_reci_chn_2: 0.004464
})", {}, 32 * 32 * 3 / 2};
    AippParams& p = c.block;
    p.src_w = 32, p.src_h = 32;
    AippBatchParams b;
    b.mean = {16, 128, 128, 0};
    b.var_reci = {floatToHalf(0.004464f), floatToHalf(0.004464f), floatToHalf(0.004464f), floatToHalf(1.f)};
    p.batch = {b};
    v.push_back(c);
  }
  {  // NV21 (rbuv swap), rotated 90 degrees, 32x32 window of a 40x32 source
    Case c{"rotate_nv21", std::string(R"(aipp_op {
  aipp_mode: static
  input_format: YUV420SP_U8
  src_image_size_w: 40
  src_image_size_h: 32
  crop: true
  load_start_pos_w: 6
  load_start_pos_h: 0
  rotation: 90
  rbuv_swap_switch: true
)") + kJpegMatrix + R"(
  var_reci_chn_0: 0.0039215
  var_reci_chn_1: 0.0039215
  var_reci_chn_2: 0.0039215
})", {}, 40 * 32 * 3 / 2};
    AippParams& p = c.block;
    p.src_w = 40, p.src_h = 32;
    p.rbuv_swap = 1;
    setJpeg(p);
    AippBatchParams b;
    b.crop = 1, b.crop_x = 6, b.crop_y = 0, b.crop_w = 32, b.crop_h = 32;
    b.rotate = 1;
    b.var_reci = {floatToHalf(0.0039215f), floatToHalf(0.0039215f), floatToHalf(0.0039215f), floatToHalf(1.f)};
    p.batch = {b};
    v.push_back(c);
  }
  return v;
}

const char* kDynamic = R"(aipp_op
{
aipp_mode: dynamic
related_input_rank: 0 # the first input
max_src_image_size: 4608
}
)";

std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() & 0xFF);
  return v;
}

Tensor u8Tensor(const std::vector<uint8_t>& v, Shape shape) {
  Tensor t(DType::kU8, std::move(shape));
  std::memcpy(t.raw(), v.data(), v.size());
  return t;
}

Tensor maskTensor() {
  Tensor t(DType::kF32, {1, 1, 32, 32});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(0.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

TranslateResult translateWith(const std::string& prefix, const fs::path& cfg, const std::string& target) {
  TranslateOptions o;
  o.prefix = prefix;
  o.onnx = kModel;
  o.target = target;
  o.out_root = scratchPath("out");
  o.aipp = cfg;
  TranslateResult r = translate(o);
  EXPECT_TRUE(r.ok) << prefix;
  return r;
}

std::vector<uint8_t> bytesOf(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw());
  return {p, p + t.nbytes()};
}

class AippPackage : public ::testing::TestWithParam<const char*> {};

TEST_P(AippPackage, DynamicBlocksGiveTheStaticConfigurationsBits) {
  const std::string target = GetParam();
  TranslateResult dyn = translateWith("dyn_" + target, writeText("dynamic.cfg", kDynamic), target);
  std::vector<uint8_t> frame = randomBytes(kMaxSrc, 11);  // bytes past each source image are ignored
  Tensor mask = maskTensor();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    TranslateResult st = translateWith(std::string("st_") + c.name + "_" + target, writeText(std::string(c.name) + ".cfg", c.config), target);
    Runtime srt(st.dir);
    srt.setInput("image", u8Tensor({frame.begin(), frame.begin() + c.src_bytes}, {1, c.src_bytes}));
    srt.setInput("mask", mask);
    srt.run();
    std::vector<uint8_t> want = bytesOf(srt.output("out"));
    for (auto [threads, exact] : {std::pair{1, false}, {2, false}, {1, true}}) {
      Runtime drt(dyn.dir, {threads, exact});
      drt.setInput("image", u8Tensor(frame, {1, kMaxSrc}));
      drt.setInput("mask", mask);
      drt.setDynamicAipp("image", kernels::encodeAipp(c.block));
      drt.run();
      EXPECT_EQ(bytesOf(drt.output("out")), want) << threads << " thread(s), exact " << exact;
    }
    if (target == "generic") {  // the engine on the same graph: the same bits
      Model m = Model::load(kModel).optimized().withAipp(writeText(std::string(c.name) + ".cfg", c.config));
      std::vector<Tensor> ref = Session(m).run(std::map<std::string, Tensor>{
          {"image", u8Tensor({frame.begin(), frame.begin() + c.src_bytes}, {1, c.src_bytes})}, {"mask", mask}});
      EXPECT_EQ(bytesOf(ref[0]), want);
    } else {  // fp16 body: close to the float engine
      Model m = Model::load(kModel).withAipp(writeText(std::string(c.name) + ".cfg", c.config));
      std::vector<Tensor> ref = Session(m).run(std::map<std::string, Tensor>{
          {"image", u8Tensor({frame.begin(), frame.begin() + c.src_bytes}, {1, c.src_bytes})}, {"mask", mask}});
      Tensor got = srt.outputFloat("out");
      double dot = 0, na = 0, nb = 0;
      for (int64_t i = 0; i < got.numel(); ++i) {
        double a = ref[0].data<float>()[i], b = got.data<float>()[i];
        dot += a * b, na += a * a, nb += b * b;
      }
      EXPECT_GE(dot / std::sqrt(na * nb), 0.9999);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, AippPackage, ::testing::Values("generic", "drpai"));

TEST(AippPackage, TheEngineRunsDynamicBlocksLikeThePackage) {
  TranslateResult dyn = translateWith("dyn_engine", writeText("dynamic.cfg", kDynamic), "generic");
  Model m = Model::load(kModel).optimized().withAipp(writeText("dynamic.cfg", kDynamic));
  std::vector<uint8_t> frame = randomBytes(kMaxSrc, 12);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::vector<uint8_t> block = kernels::encodeAipp(c.block);
    Runtime rt(dyn.dir);
    rt.setInput("image", u8Tensor(frame, {1, kMaxSrc}));
    rt.setInput("mask", maskTensor());
    rt.setDynamicAipp("image", block);
    rt.run();
    std::vector<Tensor> ref = Session(m).run(std::map<std::string, Tensor>{
        {"image", u8Tensor(frame, {1, kMaxSrc})}, {"image_aipp", u8Tensor(block, {static_cast<int64_t>(block.size())})}, {"mask", maskTensor()}});
    EXPECT_EQ(bytesOf(ref[0]), bytesOf(rt.output("out")));
  }
}

TEST(AippPackage, InvalidBlocksAreRefusedWithTheirRule) {
  TranslateResult dyn = translateWith("dyn_invalid", writeText("dynamic.cfg", kDynamic), "generic");
  const AippParams good = cases()[0].block;
  struct Bad {
    const char* rule;
    std::function<void(AippParams&)> edit;
  };
  std::vector<Bad> bad = {
      {"aipp.format", [](AippParams& p) { p.input_format = 7; }},
      {"aipp.switch", [](AippParams& p) { p.csc = 2; }},
      {"aipp.batch", [](AippParams& p) { p.batch.push_back(p.batch[0]); }},
      {"aipp.src_size", [](AippParams& p) { p.src_w = 96; }},     // 96x48 NV12 is more than max_src_image_size
      {"aipp.src_size", [](AippParams& p) { p.src_w = 63; }},     // odd YUV420SP width
      {"aipp.crop", [](AippParams& p) { p.batch[0].crop_x = 30; }},  // 30 + 40 > 64
      {"aipp.crop", [](AippParams& p) { p.batch[0].crop_y = 3; }},   // odd YUV420SP position
      {"aipp.scf", [](AippParams& p) { p.batch[0].scf_in_w = 38; }},  // not the cropped width
      {"aipp.scf", [](AippParams& p) {  // 40 -> 2: below 1/16
         p.batch[0].scf_out_w = 2;
       }},
      {"aipp.padding", [](AippParams& p) { p.batch[0].padding = 5; }},
      {"aipp.padding", [](AippParams& p) { p.batch[0].padding = 1, p.batch[0].pad_left = 40; }},
      {"aipp.rotate", [](AippParams& p) { p.batch[0].rotate = 4; }},
      {"aipp.csc", [](AippParams& p) { p.input_format = 4; }},
      {"aipp.ax_swap", [](AippParams& p) { p.ax_swap = 1; }},
      {"aipp.dtc", [](AippParams& p) { p.batch[0].var_reci[1] = 0x7E00; }},  // NaN
      {"aipp.output_size", [](AippParams& p) { p.batch[0].scf_out_h = 30; }},
      {"aipp.output_size", [](AippParams& p) { p.batch[0].padding = 1, p.batch[0].pad_top = 2; }},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.rule);
    AippParams p = good;
    b.edit(p);
    std::vector<uint8_t> block = kernels::encodeAipp(p);
    Runtime rt(dyn.dir);
    rt.setInput("image", u8Tensor(randomBytes(kMaxSrc, 3), {1, kMaxSrc}));
    rt.setInput("mask", maskTensor());
    if (block.size() == kernels::aippBlockSize(1)) {
      try {
        rt.setDynamicAipp("image", block);
        ADD_FAILURE() << "setDynamicAipp accepted the block";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(b.rule), std::string::npos) << e.what();
      }
      // Written behind the API's back (as setInput of the parameter input): the stage refuses it on the run.
      rt.setInput("image_aipp", u8Tensor(block, {static_cast<int64_t>(block.size())}));
      try {
        rt.run();
        ADD_FAILURE() << "the run accepted the block";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(b.rule), std::string::npos) << e.what();
      }
    } else {  // a block for another batch size does not even fit the input
      EXPECT_THROW(rt.setDynamicAipp("image", block), Error);
    }
  }
  Runtime rt(dyn.dir);
  EXPECT_THROW(rt.setDynamicAipp("mask", kernels::encodeAipp(good)), Error);      // no AIPP stage there
  EXPECT_THROW(rt.setDynamicAipp("nothing", kernels::encodeAipp(good)), Error);   // no such input
  EXPECT_NO_THROW(rt.setDynamicAipp("image_aipp", kernels::encodeAipp(good)));    // the parameter input by name
  // A run with no block set at all: the zeroed parameter input breaks the first rule.
  Runtime fresh(dyn.dir);
  fresh.setInput("image", u8Tensor(randomBytes(kMaxSrc, 3), {1, kMaxSrc}));
  fresh.setInput("mask", maskTensor());
  EXPECT_THROW(fresh.run(), Error);
}

TEST(AippPackage, SameConfigurationSameBytes) {
  fs::path cfg = writeText("crop_resize.cfg", cases()[0].config);
  TranslateResult a = translateWith("same_a", cfg, "drpai");
  std::string ha = a.content_hash;
  TranslateResult b = translateWith("same_a", cfg, "drpai");
  EXPECT_EQ(ha, b.content_hash);
}

// ---------------------------------------------------------------------------------------------------------
// The parameter block.

TEST(AippBlock, LayoutIsTheSeedsStructs) {
  AippParams p;
  p.input_format = 3;
  p.csc = 1, p.rbuv_swap = 1, p.ax_swap = 0;
  p.src_w = 0x01020304, p.src_h = 0x05060708;
  p.matrix = {{{1, 2, 3}, {4, 5, 6}, {7, 8, -9}}};
  p.output_bias = {10, 11, 12};
  p.input_bias = {13, 14, 15};
  AippBatchParams b;
  b.crop = 1, b.scf = 1, b.padding = 2, b.rotate = 3;
  b.crop_x = 100, b.crop_y = 101, b.crop_w = 102, b.crop_h = 103;
  b.scf_in_w = 104, b.scf_in_h = 105, b.scf_out_w = 106, b.scf_out_h = 107;
  b.pad_top = 108, b.pad_bottom = 109, b.pad_left = 110, b.pad_right = 111;
  b.mean = {-1, 2, 3, 4};
  b.min = {0x1111, 0x2222, 0x3333, 0x4444};
  b.var_reci = {0x5555, 0x6666, 0x7777, 0x0888};
  AippBatchParams b2 = b;
  b2.crop_x = 200;
  p.batch = {b, b2};
  std::vector<uint8_t> v = kernels::encodeAipp(p);
  ASSERT_EQ(v.size(), 160u + 96u);
  auto i32 = [&](size_t o) { return int32_t(v[o] | v[o + 1] << 8 | v[o + 2] << 16 | uint32_t(v[o + 3]) << 24); };
  auto i16 = [&](size_t o) { return int16_t(v[o] | v[o + 1] << 8); };
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], 1);
  EXPECT_EQ(v[2], 1);
  EXPECT_EQ(v[4], 2);  // batchNum
  EXPECT_EQ(i32(8), 0x01020304);
  EXPECT_EQ(i32(12), 0x05060708);
  EXPECT_EQ(i16(16), 1);   // cscMatrixR0C0
  EXPECT_EQ(i16(32), -9);  // cscMatrixR2C2
  EXPECT_EQ(v[40], 10);    // cscOutputBiasR0
  EXPECT_EQ(v[43], 13);    // cscInputBiasR0
  for (size_t o : {5u, 6u, 7u, 34u, 39u, 46u, 47u, 48u, 63u}) EXPECT_EQ(v[o], 0) << o;  // reserved
  // The first kAippDynamicBatchPara at 64, the second after the struct's 160 bytes.
  EXPECT_EQ(v[64], 1);
  EXPECT_EQ(v[66], 2);
  EXPECT_EQ(v[67], 3);
  EXPECT_EQ(i32(64 + 8), 100);   // cropStartPosW
  EXPECT_EQ(i32(64 + 36), 107);  // scfOutputSizeH
  EXPECT_EQ(i32(64 + 52), 111);  // paddingSizeRight
  EXPECT_EQ(i16(64 + 56), -1);   // dtcPixelMeanChn0
  EXPECT_EQ(uint16_t(i16(64 + 64)), 0x1111);  // dtcPixelMinChn0
  EXPECT_EQ(uint16_t(i16(64 + 78)), 0x0888);  // dtcPixelVarReciChn3
  EXPECT_EQ(i32(160 + 8), 200);
  EXPECT_EQ(kernels::decodeAipp(v.data(), v.size()), p);
  // The YAML form reads back to the same bytes.
  EXPECT_EQ(kernels::encodeAipp(prepost::aippParamsFromYaml(prepost::aippParamsToYaml(p), "t.yaml")), v);
  // Sizes that do not match batchNum.
  EXPECT_THROW(kernels::decodeAipp(v.data(), 160), Error);
  v[4] = 0;
  EXPECT_THROW(kernels::decodeAipp(v.data(), v.size()), Error);
}

TEST(AippBlock, YamlFormWithOneRecordAndErrors) {
  AippParams p = prepost::aippParamsFromYaml("inputFormat: RGB888_U8\nsrcImageSizeW: 32\nsrcImageSizeH: 32\n"
                                             "cropSwitch: 0\ndtcPixelMinChn0: 0.5\n", "p.yaml");
  EXPECT_EQ(p.input_format, 3);
  ASSERT_EQ(p.batch.size(), 1u);
  EXPECT_EQ(p.batch[0].min[0], floatToHalf(0.5f));
  EXPECT_EQ(p.batch[0].var_reci[2], 0x3C00);  // 1.0 unless given
  for (const char* bad : {"srcImageSizeW: 1.5\n", "cropSwitch: 300\n", "nosuchField: 1\n", "inputFormat: NV12\n",
                          "dtcPixelVarReciChn0: 1e9\n", "batch: []\n", "batch:\n  - {cropSwitch: 1}\ncropSwitch: 1\n",
                          "batchNum: 2\nbatch:\n  - {cropSwitch: 1}\n", "[1, 2]\n",
                          // a key that is not a scalar: yaml-cpp threw past npuc's errors (found by fuzz_aipp)
                          "? )!n !n :: \n", "[a]: 1\n"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(prepost::aippParamsFromYaml(bad, "p.yaml"), Error);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The configuration parser.

TEST(AippConfig, ParsesTheSeedsDynamicExample) {
  prepost::AippConfig c = prepost::parseAipp(R"(aipp_op
{
aipp_mode: dynamic
related_input_rank: 0 # 标识对第1个输入进行AIPP处理
max_src_image_size: 752640 # 输入图像最大的size,参数必填
}
aipp_op
{
aipp_mode: dynamic
related_input_rank: 1 # 标识对第2个输入进行AIPP处理
max_src_image_size: 752640 # 输入图像最大的size,参数必填
}
)", "seed.cfg");
  ASSERT_EQ(c.ops.size(), 2u);
  EXPECT_TRUE(c.dynamic());
  EXPECT_EQ(c.ops[1].related_input_rank, 1);
  EXPECT_EQ(c.ops[1].max_src_image_size, 752640);
  EXPECT_EQ(c.ops[1].line, 7);
}

TEST(AippConfig, InvalidConfigurationsNameLineKeyAndRule) {
  struct Bad {
    const char* text;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {"", "no aipp_op block"},
      {"aipp_opp {\n}", "expected 'aipp_op'"},
      {"aipp_op {\naipp_mode: static\n", "not closed"},
      {"aipp_op {\naipp_mode static\n}", "expected ':'"},
      {"aipp_op {\naipp_mode:\n}", "has no value"},
      {"aipp_op {\naipp_mode: static\naipp_mode: static\n}", ":3: key 'aipp_mode' is set twice"},
      {"aipp_op {\ninput_format: RGB888_U8\n}", "aipp_mode is required"},
      {"aipp_op {\naipp_mode: sometimes\n}", "static or dynamic"},
      {"aipp_op {\naipp_mode: static\ninput_format: NV12\n}", "input_format 'NV12' is not supported"},
      {"aipp_op {\naipp_mode: static\ncrop: yes\n}", "not a boolean"},
      {"aipp_op {\naipp_mode: static\nsrc_image_size_w: 5000\n}", "outside [0, 4096]"},
      {"aipp_op {\naipp_mode: static\nsrc_image_size_w: 12x\n}", "not an integer"},
      {"aipp_op {\naipp_mode: static\nvar_reci_chn_0: nan\n}", "not a finite number"},
      {"aipp_op {\naipp_mode: static\nmatrix_r0c0: 40000\n}", "outside [-32768, 32767]"},
      {"aipp_op {\naipp_mode: static\nrotation: 45\n}", "rotation must be 0, 90, 180 or 270"},
      {"aipp_op {\naipp_mode: static\nsingle_line_mode: true\n}", "not supported"},
      {"aipp_op {\naipp_mode: static\nfoo: 1\n}", "unknown key 'foo'"},
      {"aipp_op {\naipp_mode: static\ncrop_size_w: 8\n}", "'crop_size_w' is set but crop is false"},
      {"aipp_op {\naipp_mode: static\nresize_output_w: 8\n}", "but resize is false"},
      {"aipp_op {\naipp_mode: static\nleft_padding_size: 8\n}", "but padding is false"},
      {"aipp_op {\naipp_mode: static\npadding: true\nleft_padding_size: 33\n}", "outside [0, 32]"},
      {"aipp_op {\naipp_mode: static\nmatrix_r1c1: 8\n}", "but csc_switch is false"},
      {"aipp_op {\naipp_mode: static\ninput_format: YUV400_U8\ncsc_switch: true\n}", "csc_switch must be false for YUV400_U8"},
      {"aipp_op {\naipp_mode: static\nax_swap_switch: true\n}", "ax_swap_switch applies to XRGB8888_U8 only"},
      {"aipp_op {\naipp_mode: static\ncrop: true\nload_start_pos_w: 3\n}", "must be even"},
      {"aipp_op {\naipp_mode: static\nmax_src_image_size: 100\n}", "dynamic-mode key"},
      {"aipp_op {\naipp_mode: dynamic\n}", "needs max_src_image_size"},
      {"aipp_op {\naipp_mode: dynamic\nmax_src_image_size: 10\ncrop: true\n}", "static-mode key"},
      {"aipp_op {\naipp_mode: dynamic\nmax_src_image_size: 10\n}\naipp_op {\naipp_mode: static\nrelated_input_rank: 1\n}",
       "cannot be combined"},
      {"aipp_op {\naipp_mode: static\n}\naipp_op {\naipp_mode: static\n}", "related_input_rank 0 is already configured"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.text);
    try {
      prepost::parseAipp(b.text, "bad.cfg");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.cfg"), std::string::npos) << e.what();
    }
  }
}

TEST(AippConfig, StaticBlocksAreCheckedAgainstTheModel) {
  struct Bad {
    const char* text;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {"aipp_op {\naipp_mode: static\nrelated_input_rank: 2\n}", "the model has 2 input(s)"},
      {"aipp_op {\naipp_mode: static\nsrc_image_size_w: 30\n}", "aipp.output_size"},
      {"aipp_op {\naipp_mode: static\ninput_format: YUV400_U8\n}", "aipp.channels"},
      {"aipp_op {\naipp_mode: static\nrelated_input_rank: 1\n}", "aipp.channels"},
      {"aipp_op {\naipp_mode: static\nsrc_image_size_w: 64\nsrc_image_size_h: 64\ncrop: true\nload_start_pos_w: 40\n}", "aipp.crop"},
      {"aipp_op {\naipp_mode: static\nresize: true\n}", "src_image_size_w must be set"},
      {"aipp_op {\naipp_mode: static\npadding: true\nleft_padding_size: 20\nright_padding_size: 20\n}", "leaves no image"},
  };
  Model m = Model::load(kModel);
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.text);
    try {
      m.withAipp(writeText("bad_static.cfg", b.text));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
  }
  // Sizes derived from the model where the configuration leaves them 0: a plain RGB888 32x32 input.
  Model ok = m.withAipp(writeText("derived.cfg", "aipp_op {\naipp_mode: static\ninput_format: RGB888_U8\n}\n"
                                                 "aipp_op {\naipp_mode: static\nrelated_input_rank: 1\ninput_format: YUV400_U8\n}"));
  auto ins = ok.inputs();
  ASSERT_EQ(ins.size(), 2u);
  EXPECT_EQ(ins[0].name, "image");
  EXPECT_EQ(ins[0].shape, (Shape{1, 32 * 32 * 3}));
  EXPECT_EQ(ins[1].shape, (Shape{1, 32 * 32}));
}

// ---------------------------------------------------------------------------------------------------------
// The stage against an independent per-pixel implementation (docs/aipp.md's formulas, written out directly).

struct Oracle {
  const AippParams& p;
  const kernels::AippSetup& s;
  const uint8_t* src;

  /// The channels of source pixel (x, y) after the swaps and CSC; a fourth, XRGB8888's X byte (0 for the others).
  std::array<int, 4> pixel(int64_t x, int64_t y) const {
    int64_t W = p.src_w, H = p.src_h;
    int a = 0, b = 0, c = 0, xb = 0;
    switch (p.input_format) {
      case 1: {
        int u = src[W * H + (y / 2) * W + (x / 2) * 2], v = src[W * H + (y / 2) * W + (x / 2) * 2 + 1];
        if (p.rbuv_swap) std::swap(u, v);
        a = src[y * W + x], b = u, c = v;
        break;
      }
      case 2: {
        const uint8_t* q = src + (y * W + x) * 4;
        if (p.ax_swap) a = q[0], b = q[1], c = q[2], xb = q[3];  // RGBX
        else a = q[1], b = q[2], c = q[3], xb = q[0];             // XRGB
        if (p.rbuv_swap) std::swap(a, c);
        break;
      }
      case 3: {
        const uint8_t* q = src + (y * W + x) * 3;
        a = q[0], b = q[1], c = q[2];
        if (p.rbuv_swap) std::swap(a, c);
        break;
      }
      default: return {src[y * W + x], 0, 0, 0};
    }
    if (!p.csc) return {a, b, c, xb};
    std::array<int, 4> out{0, 0, 0, xb};
    for (size_t r = 0; r < 3; ++r) {
      const auto& m = p.matrix[r];
      long sum;
      if (p.input_format == 1) {
        sum = long(m[0]) * (a - p.input_bias[0]) + long(m[1]) * (b - p.input_bias[1]) + long(m[2]) * (c - p.input_bias[2]);
        out[r] = std::clamp<long>(static_cast<long>(std::floor(sum / 256.0)), 0, 255);
      } else {
        sum = long(m[0]) * a + long(m[1]) * b + long(m[2]) * c;
        out[r] = std::clamp<long>(static_cast<long>(std::floor(sum / 256.0)) + p.output_bias[r], 0, 255);
      }
    }
    return out;
  }

  /// Output (c, y, x) of image 0 (no scf: the oracle covers crop, swaps, CSC, rotation, DTC and padding).
  float at(int64_t ch, int64_t y, int64_t x) const {
    const AippBatchParams& b = p.batch[0];
    int64_t cw = b.crop ? b.crop_w : p.src_w, chh = b.crop ? b.crop_h : p.src_h;
    int64_t ow = (b.rotate % 2) ? chh : cw, oh = (b.rotate % 2) ? cw : chh;
    int64_t iy = y - (b.padding ? b.pad_top : 0), ix = x - (b.padding ? b.pad_left : 0);
    if (b.padding == 2) iy = std::clamp<int64_t>(iy, 0, oh - 1), ix = std::clamp<int64_t>(ix, 0, ow - 1);
    if (b.padding == 3 || b.padding == 4) {
      // The padded side as a sequence of source indices, as numpy would concatenate it: block copy
      // img[:p0] + img + img[n-p1:], mirror copy (np.pad mode 'symmetric') flip(img[:p0]) + img + flip(img[n-p1:]).
      auto side = [&](int64_t n, int64_t p0, int64_t p1) {
        std::vector<int64_t> v;
        for (int64_t k = 0; k < p0; ++k) v.push_back(b.padding == 3 ? k : p0 - 1 - k);
        for (int64_t k = 0; k < n; ++k) v.push_back(k);
        for (int64_t k = 0; k < p1; ++k) v.push_back(b.padding == 3 ? n - p1 + k : n - 1 - k);
        return v;
      };
      iy = side(oh, b.pad_top, b.pad_bottom)[static_cast<size_t>(y)];
      ix = side(ow, b.pad_left, b.pad_right)[static_cast<size_t>(x)];
    }
    if (iy < 0 || iy >= oh || ix < 0 || ix >= ow) return s.padding_value[static_cast<size_t>(ch)];
    // Undo the rotation: (ix, iy) in the rotated image -> (u, v) in the cropped one.
    int64_t u = ix, v = iy;
    if (b.rotate == 1) u = iy, v = chh - 1 - ix;
    if (b.rotate == 2) u = cw - 1 - ix, v = chh - 1 - iy;
    if (b.rotate == 3) u = cw - 1 - iy, v = ix;
    int val = pixel((b.crop ? b.crop_x : 0) + u, (b.crop ? b.crop_y : 0) + v)[static_cast<size_t>(ch)];
    float t = static_cast<float>(val - b.mean[static_cast<size_t>(ch)]);
    t = t - halfToFloat(b.min[static_cast<size_t>(ch)]);
    return t * halfToFloat(b.var_reci[static_cast<size_t>(ch)]);
  }
};

TEST(AippKernel, MatchesAnIndependentImplementation) {
  struct K {
    const char* name;
    uint8_t format;
    int rbuv, ax, csc, rotate, padding, channels = 0;  // 0: the format's own (4: XRGB8888 with its X byte)
  };
  const std::vector<K> ks = {{"nv12_csc", 1, 0, 0, 1, 0, 0},    {"nv21_rot90", 1, 1, 0, 1, 1, 1}, {"nv12_raw_rot180", 1, 0, 0, 0, 2, 2},
                             {"xrgb_rot270", 2, 0, 0, 0, 3, 1}, {"rgbx_to_yuv", 2, 1, 1, 1, 0, 2}, {"rgb_csc_pad", 3, 0, 0, 1, 1, 2},
                             {"bgr_raw", 3, 1, 0, 0, 0, 0},     {"gray", 4, 0, 0, 0, 3, 1},
                             {"rgb_block_copy", 3, 0, 0, 0, 0, 3}, {"nv12_block_copy_rot90", 1, 0, 0, 1, 1, 3},
                             {"xrgb_mirror", 2, 0, 0, 0, 0, 4},    {"gray_mirror_rot270", 4, 0, 0, 0, 3, 4},
                             {"xrgb4_csc_pad", 2, 0, 0, 1, 1, 1, 4}, {"rgbx4_swap_mirror", 2, 1, 1, 0, 2, 4, 4},
                             {"xrgb4_raw_pad", 2, 0, 0, 0, 0, 1, 4}};
  for (const K& k : ks) {
    SCOPED_TRACE(k.name);
    AippParams p;
    p.input_format = k.format;
    p.rbuv_swap = static_cast<int8_t>(k.rbuv);
    p.ax_swap = static_cast<int8_t>(k.ax);
    p.csc = static_cast<int8_t>(k.csc);
    p.src_w = 30, p.src_h = 22;
    p.matrix = k.format == 1 ? std::array<std::array<int16_t, 3>, 3>{{{298, 516, 0}, {298, -100, -208}, {298, 0, 409}}}
                             : std::array<std::array<int16_t, 3>, 3>{{{66, 129, 25}, {-38, -74, 112}, {112, -94, -18}}};
    p.input_bias = {16, 128, 128};
    p.output_bias = {16, 128, 128};
    AippBatchParams b;
    b.crop = 1, b.crop_x = 4, b.crop_y = 2, b.crop_w = 20, b.crop_h = 14;
    b.rotate = static_cast<int8_t>(k.rotate);
    b.padding = static_cast<int8_t>(k.padding);
    if (b.padding) b.pad_top = 1, b.pad_bottom = 3, b.pad_left = 2, b.pad_right = 0;
    b.mean = {10, -20, 30, 7};
    b.min = {floatToHalf(0.5f), floatToHalf(-1.25f), floatToHalf(3.f), floatToHalf(2.5f)};
    b.var_reci = {floatToHalf(0.0171f), floatToHalf(0.5f), floatToHalf(-0.02f), floatToHalf(0.25f)};
    p.batch = {b, b};
    p.batch[1].crop_x = 6;  // the second image differs
    kernels::AippSetup s;
    s.n = 2;
    s.channels = k.channels ? k.channels : k.format == 4 ? 1 : 3;
    bool quarter = k.rotate % 2;
    s.height = (quarter ? 20 : 14) + (b.padding ? 4 : 0);
    s.width = (quarter ? 14 : 20) + (b.padding ? 2 : 0);
    s.image_bytes = kernels::aippImageBytes(static_cast<kernels::AippFormat>(k.format), 30, 22) + 5;
    s.padding_value = {-7.5f, 3.25f, 0.f, 11.f};  // (sfr_filling_hblank_ch0..: one per channel)
    ASSERT_EQ(kernels::checkAipp(p, s), "");
    std::vector<uint8_t> frame = randomBytes(static_cast<size_t>(2 * s.image_bytes), 99);
    std::vector<float> out(static_cast<size_t>(2 * s.channels * s.height * s.width)), out2(out.size());
    std::vector<uint16_t> half(out.size());
    kernels::aipp(p, s, frame.data(), out.data(), nullptr);
    ThreadPool pool(2);
    kernels::aipp(p, s, frame.data(), out2.data(), &pool);
    kernels::aipp(p, s, frame.data(), half.data(), &pool);
    EXPECT_EQ(0, std::memcmp(out.data(), out2.data(), out.size() * 4));
    for (int64_t n = 0; n < 2; ++n) {
      AippParams one = p;
      one.batch = {p.batch[static_cast<size_t>(n)]};
      Oracle o{one, s, frame.data() + n * s.image_bytes};
      for (int64_t c = 0; c < s.channels; ++c)
        for (int64_t y = 0; y < s.height; ++y)
          for (int64_t x = 0; x < s.width; ++x) {
            size_t i = static_cast<size_t>(((n * s.channels + c) * s.height + y) * s.width + x);
            float want = o.at(c, y, x);
            ASSERT_EQ(out[i], want) << "n " << n << " c " << c << " y " << y << " x " << x;
            ASSERT_EQ(half[i], floatToHalf(want));
          }
    }
  }
}

TEST(AippKernel, ScfIsTheBilinearResizeOfTheCroppedImage) {
  // RGB888 without CSC, DTC identity: the output is resizeHwc (OpenCV INTER_LINEAR, checked against cv2 in the
  // pre/post kernel tests) of the crop window, as planes.
  AippParams p;
  p.input_format = 3;
  p.src_w = 50, p.src_h = 40;
  AippBatchParams b;
  b.crop = 1, b.crop_x = 5, b.crop_y = 3, b.crop_w = 37, b.crop_h = 29;
  b.scf = 1, b.scf_in_w = 37, b.scf_in_h = 29, b.scf_out_w = 64, b.scf_out_h = 16;
  b.var_reci = {0x3C00, 0x3C00, 0x3C00, 0x3C00};
  p.batch = {b};
  kernels::AippSetup s{1, 3, 16, 64, 50 * 40 * 3, 0.f};
  std::vector<uint8_t> frame = randomBytes(50 * 40 * 3, 5), window(37 * 29 * 3), resized(64 * 16 * 3);
  for (int y = 0; y < 29; ++y) std::memcpy(&window[size_t(y) * 37 * 3], &frame[(size_t(y + 3) * 50 + 5) * 3], 37 * 3);
  kernels::ResizeGeometry g{29, 37, 3, 16, 64};
  kernels::resizeHwc(kernels::ResizeAlg::kBilinear, g, window.data(), resized.data(), nullptr);
  std::vector<float> out(3 * 16 * 64);
  kernels::aipp(p, s, frame.data(), out.data(), nullptr);
  for (size_t c = 0; c < 3; ++c)
    for (size_t i = 0; i < 16 * 64; ++i) ASSERT_EQ(out[c * 16 * 64 + i], float(resized[i * 3 + c]));
}

}  // namespace

// Block and mirror copies read the padding from the image next to it: a padding wider than the image is refused.
TEST(AippKernel, CopiedPaddingWiderThanTheImageIsRefused) {
  AippParams p;
  p.input_format = 3;
  p.src_w = 6, p.src_h = 4;
  AippBatchParams b;
  b.padding = 4, b.pad_top = 5, b.pad_bottom = 0;  // 5 rows mirrored from a 4-row image
  b.var_reci = {0x3C00, 0x3C00, 0x3C00, 0x3C00};
  p.batch = {b};
  kernels::AippSetup s;
  s.channels = 3, s.height = 9, s.width = 6, s.image_bytes = 6 * 4 * 3;
  EXPECT_NE(kernels::checkAipp(p, s).find("aipp.padding: paddingSwitch 4 (mirror copy)"), std::string::npos) << kernels::checkAipp(p, s);
  p.batch[0].pad_top = 4, s.height = 8;
  EXPECT_EQ(kernels::checkAipp(p, s), "");
}

// ---------------------------------------------------------------------------------------------------------
// Issue 47: dynamic AIPP by field, frames smaller than max_src_image_size, shape ranges.

namespace {

/// A block as the named form gives it: kernels::aippFields' (name, text) pairs, head fields at the top level,
/// each record's in the `batch` list.
DynamicAippParams byFields(const AippParams& p) {
  std::vector<std::pair<std::string, std::string>> top;
  std::vector<std::vector<std::pair<std::string, std::string>>> batch(p.batch.size());
  for (const kernels::AippFieldValue& f : kernels::aippFields(p))
    (f.image < 0 ? top : batch[static_cast<size_t>(f.image)]).emplace_back(f.name, f.text);
  return DynamicAippParams::fromFields(top, batch);
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(AippFields, FieldSetBlocksAreTheRawAndYamlBlocksAndRunTheSame) {
  TranslateResult dyn = translateWith("dyn_fields", writeText("dynamic.cfg", kDynamic), "generic");
  std::vector<uint8_t> frame = randomBytes(kMaxSrc, 21);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<uint8_t> raw = kernels::encodeAipp(c.block);
    const DynamicAippParams named = byFields(c.block);
    EXPECT_EQ(named.encode(), raw);
    EXPECT_EQ(kernels::encodeAipp(prepost::aippParamsFromYaml(prepost::aippParamsToYaml(c.block), "p.yaml")), raw);
    EXPECT_EQ(DynamicAippParams::decode(raw), named);
    auto outputOf = [&](const std::function<void(Runtime&)>& set) {
      Runtime rt(dyn.dir);
      rt.setInput("image", u8Tensor(frame, {1, kMaxSrc}));
      rt.setInput("mask", maskTensor());
      set(rt);
      rt.run();
      return bytesOf(rt.output("out"));
    };
    EXPECT_EQ(outputOf([&](Runtime& rt) { rt.setDynamicAipp("image", named); }),
              outputOf([&](Runtime& rt) { rt.setDynamicAipp("image", raw); }));
  }
  // The struct filled by hand: the crop + resize case's block, byte for byte.
  DynamicAippParams p;
  p.input_format = 1;
  p.csc_switch = 1;
  p.src_image_size_w = 64, p.src_image_size_h = 48;
  p.csc_matrix = {{{256, 0, 359}, {256, -88, -183}, {256, 454, 0}}};
  p.csc_input_bias = {0, 128, 128};
  p.csc_output_bias = {16, 128, 128};
  DynamicAippImage& i = p.batch[0];
  i.crop_switch = 1, i.crop_start_pos_w = 8, i.crop_start_pos_h = 4, i.crop_size_w = 40, i.crop_size_h = 40;
  i.scf_switch = 1, i.scf_input_size_w = 40, i.scf_input_size_h = 40, i.scf_output_size_w = 32, i.scf_output_size_h = 32;
  i.dtc_pixel_min_chn = {123.675f, 116.28f, 103.53f, 0.f};
  i.dtc_pixel_var_reci_chn = {0.0171247538316637f, 0.0175070028011204f, 0.0174291938997821f, 1.f};
  EXPECT_EQ(p.encode(), kernels::encodeAipp(cases()[0].block));
  // The same checks as the raw block: a broken field is refused with its rule.
  Runtime rt(dyn.dir);
  p.batch[0].crop_start_pos_w = 30;
  EXPECT_NE(errorOf([&] { rt.setDynamicAipp("image", p); }).find("aipp.crop"), std::string::npos);
  p.batch.clear();
  EXPECT_NE(errorOf([&] { rt.setDynamicAipp("image", p); }).find("aipp.block.size"), std::string::npos);
}

TEST(AippFields, UnknownMissingMisplacedAndOutOfRangeFieldsNameTheField) {
  using Fields = std::vector<std::pair<std::string, std::string>>;
  const Fields base = {{"inputFormat", "RGB888_U8"}, {"srcImageSizeW", "32"}, {"srcImageSizeH", "32"}};
  auto with = [&](Fields extra) {
    Fields f = base;
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  };
  DynamicAippParams ok = DynamicAippParams::fromFields(with({{"cropSwitch", "0"}, {"dtcPixelMinChn0", "0.5"}}));
  EXPECT_EQ(ok.input_format, 3);
  ASSERT_EQ(ok.batch.size(), 1u);
  EXPECT_EQ(ok.batch[0].dtc_pixel_min_chn[0], 0.5f);
  EXPECT_EQ(ok.batch[0].dtc_pixel_var_reci_chn[2], 1.0f);  // 1.0 unless given
  struct Bad {
    Fields top;
    std::vector<Fields> batch;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {with({{"nosuchField", "1"}}), {}, "nosuchField: unknown field"},
      {{{"inputFormat", "1"}, {"srcImageSizeW", "32"}}, {}, "srcImageSizeH: missing"},
      {{{"srcImageSizeW", "32"}, {"srcImageSizeH", "32"}}, {}, "inputFormat: missing"},
      {with({{"cropSwitch", "1"}, {"cropSizeW", "8"}}), {}, "cropSizeH: missing (cropSwitch is 1)"},
      {with({{"scfSwitch", "1"}}), {}, "scfInputSizeW: missing (scfSwitch is 1)"},
      {with({{"cscSwitch", "1"}}), {}, "cscMatrixR0C0: missing (cscSwitch is 1)"},
      {with({{"cropSwitch", "300"}}), {}, "cropSwitch: 300 does not fit the field ([-128, 127])"},
      {with({{"srcImageSizeW", "1.5"}}), {}, "srcImageSizeW: is given twice"},
      {{{"inputFormat", "1"}, {"srcImageSizeW", "1.5"}, {"srcImageSizeH", "2"}}, {}, "srcImageSizeW: '1.5' is not an integer"},
      {{{"inputFormat", "NV12"}, {"srcImageSizeW", "2"}, {"srcImageSizeH", "2"}}, {}, "inputFormat: unknown format 'NV12'"},
      {with({{"dtcPixelVarReciChn0", "1e9"}}), {}, "dtcPixelVarReciChn0: 1e9 is not a finite number within the float16 range"},
      {with({{"cropSwitch", "0"}}), {{{"scfSwitch", "0"}}}, "cropSwitch: is a batch-record field; with a `batch` list"},
      {base, {{{"srcImageSizeW", "4"}}}, "batch[0].srcImageSizeW: is a kAippDynamicPara field"},
      {base, {{}, {{"cropSwitch", "1"}}}, "batch[1].cropSizeW: missing"},
      {with({{"batchNum", "2"}}), {{}}, "batchNum: is 2 but 1 record(s) are given"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.message);
    std::string e = errorOf([&] { (void)DynamicAippParams::fromFields(b.top, b.batch); });
    EXPECT_NE(e.find(b.message), std::string::npos) << e;
  }
  // The YAML form reads through the same table: the same names and messages, the file in front.
  std::string e = errorOf([] { (void)prepost::aippParamsFromYaml("inputFormat: 3\nsrcImageSizeW: 8\nsrcImageSizeH: 8\ncropSwitch: 1\n", "p.yaml"); });
  EXPECT_NE(e.find("p.yaml"), std::string::npos) << e;
  EXPECT_NE(e.find("cropSizeW: missing (cropSwitch is 1)"), std::string::npos) << e;
  // A struct filled by hand is held to the same float16 range as the fields (it was stored as infinity, exit 0).
  DynamicAippParams hand = ok;
  hand.batch[0].dtc_pixel_var_reci_chn[1] = 1e9f;
  e = errorOf([&] { (void)hand.encode(); });
  EXPECT_NE(e.find("batch[0].dtcPixelVarReciChn1: 1000000000 is not a finite number within the float16 range"), std::string::npos) << e;
}

TEST(AippPackage, FramesSmallerThanMaxSrcImageSizeGiveTheMaxSizeFramesBits) {
  TranslateResult dyn = translateWith("dyn_small", writeText("dynamic.cfg", kDynamic), "generic");
  const std::vector<uint8_t> frame = randomBytes(kMaxSrc, 31);
  int smaller = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const int64_t need = kernels::aippImageBytes(static_cast<kernels::AippFormat>(c.block.input_format), c.block.src_w, c.block.src_h);
    if (need == kMaxSrc) continue;  // (crop + resize: its picture is the maximum)
    ++smaller;
    auto outputOf = [&](int64_t bytes, int threads) {
      Runtime rt(dyn.dir, {threads, false});
      rt.setDynamicAipp("image", kernels::encodeAipp(c.block));
      rt.setInput("image", u8Tensor({frame.begin(), frame.begin() + bytes}, {1, bytes}));
      rt.setInput("mask", maskTensor());
      rt.run();
      return bytesOf(rt.output("out"));
    };
    const std::vector<uint8_t> want = outputOf(kMaxSrc, 1);
    EXPECT_EQ(outputOf(need, 1), want);  // exactly the picture
    EXPECT_EQ(outputOf(need, 2), want);
    EXPECT_EQ(outputOf((need + kMaxSrc) / 2, 1), want);  // more than the picture, less than the maximum
    // Smaller than the block's picture: refused, naming both sizes.
    Runtime rt(dyn.dir);
    rt.setDynamicAipp("image", kernels::encodeAipp(c.block));
    std::string e = errorOf([&] { rt.setInput("image", u8Tensor(std::vector<uint8_t>(frame.begin(), frame.begin() + need - 2), {1, need - 2})); });
    EXPECT_NE(e.find("aipp.src_size"), std::string::npos) << e;
    EXPECT_NE(e.find(std::to_string(need - 2) + " bytes"), std::string::npos) << e;
    EXPECT_NE(e.find(std::to_string(need) + " bytes"), std::string::npos) << e;
    // Larger than max_src_image_size: not a frame of this input.
    EXPECT_THROW(rt.setInput("image", u8Tensor(randomBytes(kMaxSrc + 2, 1), {1, kMaxSrc + 2})), Error);
  }
  EXPECT_EQ(smaller, 3);
  // A small frame, then a block whose picture is larger: the block is accepted (the frame may be replaced), the run
  // refuses it (aipp.src_size, naming the frame's bytes).
  Runtime rt(dyn.dir);
  rt.setInput("image", u8Tensor(std::vector<uint8_t>(100), {1, 100}));
  rt.setInput("mask", maskTensor());
  rt.setDynamicAipp("image", kernels::encodeAipp(cases()[0].block));
  std::string e = errorOf([&] { rt.run(); });
  EXPECT_NE(e.find("aipp.src_size"), std::string::npos) << e;
  EXPECT_NE(e.find("100 bytes per image"), std::string::npos) << e;
  rt.setInput("image", u8Tensor(frame, {1, kMaxSrc}));  // the full-size frame again: runs
  EXPECT_NO_THROW(rt.run());
}

// paddingSwitch 1 writes "padding config value, sfr_filling_hblank_ch0 ~ ch2" (A:L31): one value per channel
// (padding_value_chn_K; padding_value sets them all), and an XRGB8888_U8 frame feeds a 4-channel model input its X
// byte as channel 3, through the DTC of channel 3 (dtcPixelMeanChn3, MinChn3, VarReciChn3: A:L52, 56, 60). The model
// (made here): y = 1.5 x. The oracle: the formulas of docs/aipp.md written out per pixel.
TEST(AippPackage, PerChannelPaddingValuesAndTheFourthChannel) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("four");
  auto io = [](onnx::ValueInfoProto* v, const char* name) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1, 4, 8, 10}) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  io(g->add_input(), "image");
  io(g->add_output(), "out");
  onnx::TensorProto* k = g->add_initializer();
  k->set_name("k");
  k->set_data_type(onnx::TensorProto::FLOAT);
  k->add_float_data(1.5f);
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Mul");
  n->set_name("scale");
  n->add_input("image"), n->add_input("k"), n->add_output("out");
  const fs::path onnx = scratchPath("four_channels.onnx");
  {
    std::ofstream f(onnx, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&f));
  }
  const std::string cfg = R"(aipp_op {
  aipp_mode: static
  input_format: XRGB8888_U8
  src_image_size_w: 8
  src_image_size_h: 6
  padding: true
  top_padding_size: 1
  bottom_padding_size: 1
  left_padding_size: 2
  right_padding_size: 0
  padding_value: 9
  padding_value_chn_0: -1.25
  padding_value_chn_2: 3.5
  padding_value_chn_3: 4
  mean_chn_0: 10
  mean_chn_3: 100
  min_chn_1: 0.5
  min_chn_3: 1.5
  var_reci_chn_2: 0.25
  var_reci_chn_3: 0.125
})";
  const float pad[4] = {-1.25f, 9.f, 3.5f, 4.f};
  const int mean[4] = {10, 0, 0, 100};
  const float mn[4] = {0.f, 0.5f, 0.f, 1.5f}, var[4] = {1.f, 1.f, 0.25f, 0.125f};
  const std::vector<uint8_t> frame = randomBytes(8 * 6 * 4, 41);
  TranslateOptions o;
  o.prefix = "four";
  o.onnx = onnx;
  o.target = "generic";
  o.out_root = scratchPath("out");
  o.aipp = writeText("four.cfg", cfg);
  const TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  for (auto [threads, exact] : {std::pair{1, false}, {2, false}, {1, true}}) {
    Runtime rt(r.dir, {threads, exact});
    rt.setInput("image", u8Tensor(frame, {1, 8 * 6 * 4}));
    rt.run();
    const Tensor y = rt.output("out");
    ASSERT_EQ(y.shape(), (Shape{1, 4, 8, 10}));
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t yy = 0; yy < 8; ++yy)
        for (int64_t x = 0; x < 10; ++x) {
          const int64_t iy = yy - 1, ix = x - 2;
          float want = pad[c];
          if (iy >= 0 && iy < 6 && ix >= 0 && ix < 8) {
            const uint8_t* px = &frame[static_cast<size_t>((iy * 8 + ix) * 4)];  // X, R, G, B
            const int v = c == 3 ? px[0] : px[1 + c];
            want = (static_cast<float>(v - mean[c]) - mn[c]) * var[c];
          }
          ASSERT_EQ(y.data<float>()[(c * 8 + yy) * 10 + x], want * 1.5f) << "c " << c << " y " << yy << " x " << x;
        }
  }
  // Only XRGB8888_U8 has a fourth byte to give: RGB888_U8 into the 4-channel input is refused naming the rule.
  std::string rgb = cfg;
  rgb.replace(rgb.find("XRGB8888_U8"), 11, "RGB888_U8");
  o.prefix = "four_rgb";
  o.aipp = writeText("four_rgb.cfg", rgb);
  const std::string e = errorOf([&] { translate(o); });
  EXPECT_NE(e.find("aipp.channels"), std::string::npos) << e;
  // The keys: a channel past 3 is unknown; padding values without padding are refused.
  for (const auto& [from, to, says] : {std::tuple{"padding_value_chn_3: 4", "padding_value_chn_4: 4", "unknown key 'padding_value_chn_4'"},
                                      {"padding: true", "padding: false", "is set but padding is false"}}) {
    std::string bad = cfg;
    bad.replace(bad.find(from), std::string(from).size(), to);
    o.prefix = "four_bad";
    o.aipp = writeText("four_bad.cfg", bad);
    const std::string why = errorOf([&] { translate(o); });
    EXPECT_NE(why.find(says), std::string::npos) << why;
  }
}

// The seed (A:L9): with an --input_shape range and AIPP, "AIPP's output width and height lie in the range" — one
// package serves them all: the dynamic block's picture size selects the package at that size (package/shape_ranges.hpp),
// whose outputs are the bytes of the ordinary package translated at that size with the same block.
TEST(AippPackage, ShapeRangesWithDynamicAipp) {
  const std::string model = std::string(NPUC_SOURCE_DIR) + "/tests/data/ranges/ranges_net.onnx";
  auto translateRange = [&](const std::string& prefix, std::pair<int64_t, int64_t> h, std::pair<int64_t, int64_t> w,
                            std::map<std::string, Shape> fixed = {}) {
    TranslateOptions o;
    o.prefix = prefix;
    o.onnx = model;
    o.target = "generic";
    o.out_root = scratchPath("out");
    o.aipp = writeText("dynamic.cfg", kDynamic);
    o.input_shape_ranges["x"] = {{1, 1}, {3, 3}, h, w};
    o.input_shapes = std::move(fixed);
    return translate(o);
  };
  const TranslateResult r = translateRange("range_dyn", {16, 48}, {16, 48});
  ASSERT_TRUE(r.ok);
  const std::vector<uint8_t> frame = randomBytes(kMaxSrc, 13);
  AippParams block = cases()[0].block;  // crop 40 x 40 of the 64 x 48 source, resized to 32 x 32
  // The ordinary packages at three sizes, translated first (a translation forks for ONNX's own shape check, which no
  // runtime's worker threads should be running beside: they are made after).
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{32, 32}, {24, 40}, {48, 16}};
  std::map<std::pair<int64_t, int64_t>, TranslateResult> ones;
  for (auto [h, w] : sizes) ones[{h, w}] = translateRange(fmt::format("range_one_{}x{}", h, w), {16, 48}, {16, 48}, {{"x", {1, 3, h, w}}});
  for (auto [threads, exact] : {std::pair{1, false}, {2, false}, {1, true}}) {
    Runtime rt(r.dir, {threads, exact});
    ASSERT_EQ(rt.shapeRanges().size(), 2u);
    EXPECT_EQ(rt.shapeRanges()[0].value, "x/aipp");  // the AIPP stage's picture
    rt.setInput("x", u8Tensor(frame, {1, kMaxSrc}));  // (set before the block: it goes along to the selected size)
    for (auto [h, w] : sizes) {
      SCOPED_TRACE(fmt::format("{}x{}, {} thread(s){}", h, w, threads, exact ? ", exact" : ""));
      block.batch[0].scf_out_h = static_cast<int32_t>(h), block.batch[0].scf_out_w = static_cast<int32_t>(w);
      rt.setDynamicAipp("x", kernels::encodeAipp(block));
      EXPECT_EQ(rt.outputs()[1].shape, (Shape{1, 16, h / 4, w / 4}));
      rt.run();
      const TranslateResult& one = ones.at({h, w});
      ASSERT_TRUE(one.ok);
      Runtime ort(one.dir);
      ort.setInput("x", u8Tensor(frame, {1, kMaxSrc}));
      ort.setDynamicAipp("x", kernels::encodeAipp(block));
      ort.run();
      EXPECT_EQ(bytesOf(rt.output("feat")), bytesOf(ort.output("feat")));
      EXPECT_EQ(bytesOf(rt.output("y")), bytesOf(ort.output("y")));
    }
    // A picture outside the range: refused with the seed's rule.
    block.batch[0].scf_out_h = 12, block.batch[0].scf_out_w = 32;
    const std::string e = errorOf([&] { rt.setDynamicAipp("x", kernels::encodeAipp(block)); });
    EXPECT_NE(e.find("aipp.output_size: the block's picture is 12x32 (H x W); its height must lie in the package's range 16~48"),
              std::string::npos) << e;
  }
  // A size fixed with --input-shape must lie in the range.
  const std::string e = errorOf([&] { translateRange("range_fixed", {16, 24}, {16, 48}, {{"x", {1, 3, 40, 40}}}); });
  EXPECT_NE(e.find("--input-shape gives height 40, outside the range 16~24"), std::string::npos) << e;
  // The seed's two-input model (an image through AIPP, a mask added to its features): ranged alike, their heights and
  // widths are tied (the model needs them equal); the block's picture size selects both, and the mask is set at it.
  auto twoInputs = [&](const std::string& prefix, bool ranged) {
    TranslateOptions o;
    o.prefix = prefix;
    o.onnx = kModel;
    o.target = "generic";
    o.out_root = scratchPath("out");
    o.aipp = writeText("dynamic.cfg", kDynamic);
    if (ranged) o.input_shape_ranges = {{"image", {{1, 1}, {3, 3}, {16, 48}, {16, 48}}}, {"mask", {{1, 1}, {1, 1}, {16, 48}, {16, 48}}}};
    else o.input_shapes = {{"image", {1, 3, 24, 40}}, {"mask", {1, 1, 24, 40}}};
    return translate(o);
  };
  const TranslateResult two = twoInputs("range_two", true), fixed = twoInputs("range_two_fixed", false);
  ASSERT_TRUE(two.ok);
  ASSERT_TRUE(fixed.ok);
  Runtime rt(two.dir), one(fixed.dir);
  ASSERT_EQ(rt.shapeRanges().size(), 2u);
  EXPECT_EQ(rt.shapeRanges()[0].also, (std::vector<std::pair<std::string, int64_t>>{{"mask", 2}}));
  block.batch[0].scf_out_h = 24, block.batch[0].scf_out_w = 40;
  Tensor mask(DType::kF32, {1, 1, 24, 40});
  for (int64_t i = 0; i < mask.numel(); ++i) mask.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  for (Runtime* r : {&rt, &one}) {
    r->setDynamicAipp("image", kernels::encodeAipp(block));
    r->setInput("image", u8Tensor(frame, {1, kMaxSrc}));
    r->setInput("mask", mask);
    r->run();
  }
  EXPECT_EQ(bytesOf(rt.output("out")), bytesOf(one.output("out")));
  EXPECT_EQ(rt.output("out").shape(), (Shape{1, 4, 12, 20}));
}
