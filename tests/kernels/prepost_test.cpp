// Tests of the DRP-AI pre/post-processing kernels (kernels/prepost.hpp):
//  - against OpenCV / numpy golden data (tests/data/prepost_golden/, written by make_golden.py): every
//    DIN_YUV_FORMAT code, conv_x2gray, resize nearest / bilinear in uint8 and fp16, crop, normalize, argminmax;
//    exact equality everywhere;
//  - exhaustively: the YUV -> RGB and RGB -> gray formulas over all 2^24 input triples against the SHA-256 of
//    OpenCV's output;
//  - hand-built layouts for every YUV format (odd heights included), saturation, tie-breaking, NaN, casts over all
//    fp16 values, the errors;
//  - the same bytes without a pool and with pools of 1, 2 and 3 threads.
#include "kernels/prepost.hpp"

#include "support/error.hpp"
#include "support/fp16.hpp"
#include "support/npy.hpp"
#include "support/sha256.hpp"
#include "support/thread_pool.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace npuc::kernels {
namespace {

const std::filesystem::path kGolden = std::filesystem::path(NPUC_SOURCE_DIR) / "tests" / "data" / "prepost_golden";

/// A golden .npy file: its bytes and shape.
struct Golden {
  std::vector<uint8_t> bytes;
  Shape shape;
  template <class T>
  std::vector<T> as() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};

Golden golden(const std::string& name, DType expect) {
  Tensor t = readNpy(kGolden / (name + ".npy"));
  EXPECT_EQ(t.dtype(), expect) << name;
  Golden g;
  g.shape = t.shape();
  const auto* p = static_cast<const uint8_t*>(t.raw());
  g.bytes.assign(p, p + t.nbytes());
  return g;
}

std::string exhaustiveDigest(const std::string& key) {
  std::ifstream in(kGolden / "exhaustive.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string k, v;
    if (ss >> k >> v && k == key) return v;
  }
  ADD_FAILURE() << "no " << key << " in exhaustive.txt";
  return {};
}

std::string tag(int h, int w) { return std::to_string(h) + "x" + std::to_string(w); }

/// Index of the first differing element, or -1.
template <class T>
int64_t firstMismatch(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  return -1;
}

const std::map<YuvFormat, const char*> kYuvNames = {
    {YuvFormat::kYUYV, "yuyv"},    {YuvFormat::kYVYU, "yvyu"},       {YuvFormat::kUYVY, "uyvy"},
    {YuvFormat::kVUYY, "vuyy"},    {YuvFormat::kYUYV420, "yuyv420"}, {YuvFormat::kUYVY420, "uyvy420"},
    {YuvFormat::kYV12, "yv12"},    {YuvFormat::kIYUV, "iyuv"},       {YuvFormat::kNV12, "nv12"},
    {YuvFormat::kNV21, "nv21"},    {YuvFormat::kIMC1, "imc1"},       {YuvFormat::kIMC2, "imc2"},
    {YuvFormat::kIMC3, "imc3"},    {YuvFormat::kIMC4, "imc4"}};
const int kSizes[2][2] = {{12, 16}, {22, 38}};  // (H, W) of make_golden.py's SIZES

// ---------------------------------------------------------------------------------------------------------
// conv_yuv2rgb.

TEST(PrePostKernels, YuvToRgbMatchesOpenCvForEveryFormat) {
  EXPECT_EQ(kYuvNames.size(), 14u);
  for (const auto& [fmt, name] : kYuvNames) {
    for (const auto& hw : kSizes) {
      const int H = hw[0], W = hw[1];
      const std::string t = std::string("yuv_") + name + "_" + tag(H, W);
      SCOPED_TRACE(t);
      const Golden in = golden(t + "_in", DType::kU8);
      ASSERT_EQ(static_cast<int64_t>(in.bytes.size()), yuvBufferSize(fmt, H, W));
      for (bool bgr : {false, true}) {
        const Golden want = golden(t + (bgr ? "_bgr" : "_rgb"), DType::kU8);
        ASSERT_EQ(want.shape, (Shape{H, W, 3}));
        std::vector<uint8_t> got(static_cast<size_t>(H * W * 3));
        yuvToRgb(fmt, bgr, H, W, in.bytes.data(), got.data(), nullptr);
        EXPECT_EQ(firstMismatch(got, want.bytes), -1) << (bgr ? "BGR" : "RGB");
      }
    }
  }
}

TEST(PrePostKernels, YuvFormulaEqualsOpenCvOnAllTriples) {
  // Row U*256+V, pixel pair k = (Y 2k, Y 2k+1): make_golden.py's exhaustive_yuy2.
  std::vector<uint8_t> src(size_t{65536} * 256 * 2);
  for (size_t r = 0; r < 65536; ++r)
    for (size_t k = 0; k < 128; ++k) {
      uint8_t* q = src.data() + (r * 128 + k) * 4;
      q[0] = static_cast<uint8_t>(2 * k), q[1] = static_cast<uint8_t>(r >> 8);
      q[2] = static_cast<uint8_t>(2 * k + 1), q[3] = static_cast<uint8_t>(r & 255);
    }
  std::vector<uint8_t> rgb(size_t{65536} * 256 * 3);
  yuvToRgb(YuvFormat::kYUYV, false, 65536, 256, src.data(), rgb.data(), nullptr);
  EXPECT_EQ(sha256Hex(rgb.data(), rgb.size()), exhaustiveDigest("yuy2_to_rgb"));
}

TEST(PrePostKernels, YuvPixelHandValues) {
  EXPECT_EQ(yuvPixelToRgb(100, 90, 200), (Rgb8{213, 54, 21}));
  EXPECT_EQ(yuvPixelToRgb(16, 128, 128), (Rgb8{0, 0, 0}));       // video-range black
  EXPECT_EQ(yuvPixelToRgb(0, 128, 128), (Rgb8{0, 0, 0}));        // Y < 16 clamps to 16 (max(0, Y - 16))
  EXPECT_EQ(yuvPixelToRgb(235, 128, 128), (Rgb8{255, 255, 255})); // video-range white
  EXPECT_EQ(yuvPixelToRgb(255, 128, 128), (Rgb8{255, 255, 255})); // saturates high
  EXPECT_EQ(yuvPixelToRgb(128, 255, 128), (Rgb8{130, 81, 255}));  // B saturates high
  EXPECT_EQ(yuvPixelToRgb(16, 0, 128), (Rgb8{0, 50, 0}));         // B saturates low
}

/// Chroma planes of a test image: Y[H][W], U, V [rows][W/2] with rows = H (4:2:2) or ceil(H/2) (4:2:0).
struct Planes {
  int H = 0, W = 0;
  bool c420 = false;
  std::vector<uint8_t> y, u, v;
  uint8_t Y(int r, int x) const { return y[static_cast<size_t>(r * W + x)]; }
  uint8_t U(int cr, int k) const { return u[static_cast<size_t>(cr * (W / 2) + k)]; }
  uint8_t V(int cr, int k) const { return v[static_cast<size_t>(cr * (W / 2) + k)]; }
};

bool is420(YuvFormat f) { return static_cast<int32_t>(f) >= 4096; }

/// The buffer of `p` in format f, written from the layouts in prepost.hpp (independently of the kernel). Bytes the
/// format does not use (odd-row chroma of a packed 4:2:0 buffer, the unused half of IMC1/IMC3 chroma rows) hold junk.
std::vector<uint8_t> pack(YuvFormat f, const Planes& p, std::mt19937& rng) {
  const int H = p.H, W = p.W, CH = (H + 1) / 2, W2 = W / 2;
  std::vector<uint8_t> b(static_cast<size_t>(yuvBufferSize(f, H, W)));
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  auto at = [&](int64_t i) -> uint8_t& { return b.at(static_cast<size_t>(i)); };
  const int32_t code = static_cast<int32_t>(f);
  if (code <= 3 || code == 4096 || code == 4097) {
    // Offsets of Y0, U, Y1, V in a pair.
    int o[4] = {0, 1, 2, 3};
    if (f == YuvFormat::kYVYU) o[1] = 3, o[3] = 1;
    if (f == YuvFormat::kUYVY || f == YuvFormat::kUYVY420) o[0] = 1, o[1] = 0, o[2] = 3, o[3] = 2;
    if (f == YuvFormat::kVUYY) o[0] = 3, o[1] = 1, o[2] = 2, o[3] = 0;
    for (int r = 0; r < H; ++r)
      for (int k = 0; k < W2; ++k) {
        const int64_t q = (int64_t{r} * W2 + k) * 4;
        at(q + o[0]) = p.Y(r, 2 * k);
        at(q + o[2]) = p.Y(r, 2 * k + 1);
        if (code <= 3 || r % 2 == 0) {
          const int cr = code <= 3 ? r : r / 2;
          at(q + o[1]) = p.U(cr, k);
          at(q + o[3]) = p.V(cr, k);
        }
      }
    return b;
  }
  for (int r = 0; r < H; ++r)
    for (int x = 0; x < W; ++x) at(int64_t{r} * W + x) = p.Y(r, x);
  const int64_t c0 = int64_t{H} * W;
  for (int cr = 0; cr < CH; ++cr)
    for (int k = 0; k < W2; ++k) {
      const uint8_t u = p.U(cr, k), v = p.V(cr, k);
      switch (f) {
        case YuvFormat::kYV12: at(c0 + cr * W2 + k) = v, at(c0 + CH * W2 + cr * W2 + k) = u; break;
        case YuvFormat::kIYUV: at(c0 + cr * W2 + k) = u, at(c0 + CH * W2 + cr * W2 + k) = v; break;
        case YuvFormat::kNV12: at(c0 + cr * W + 2 * k) = u, at(c0 + cr * W + 2 * k + 1) = v; break;
        case YuvFormat::kNV21: at(c0 + cr * W + 2 * k) = v, at(c0 + cr * W + 2 * k + 1) = u; break;
        case YuvFormat::kIMC1: at(c0 + cr * W + k) = v, at(c0 + CH * W + cr * W + k) = u; break;
        case YuvFormat::kIMC3: at(c0 + cr * W + k) = u, at(c0 + CH * W + cr * W + k) = v; break;
        case YuvFormat::kIMC2: at(c0 + cr * W + k) = v, at(c0 + cr * W + W2 + k) = u; break;
        case YuvFormat::kIMC4: at(c0 + cr * W + k) = u, at(c0 + cr * W + W2 + k) = v; break;
        default: ADD_FAILURE();
      }
    }
  return b;
}

TEST(PrePostKernels, YuvLayoutsHandBuiltIncludingOddHeights) {
  std::mt19937 rng(11);
  for (const auto& [fmt, name] : kYuvNames) {
    for (auto [H, W] : {std::pair{5, 4}, std::pair{6, 4}, std::pair{7, 10}, std::pair{1, 2}, std::pair{12, 16}}) {
      SCOPED_TRACE(std::string(name) + " " + tag(H, W));
      Planes p;
      p.H = H, p.W = W, p.c420 = is420(fmt);
      const int rows = p.c420 ? (H + 1) / 2 : H;
      for (int i = 0; i < H * W; ++i) p.y.push_back(static_cast<uint8_t>(rng()));
      for (int i = 0; i < rows * W / 2; ++i) {
        p.u.push_back(static_cast<uint8_t>(rng()));
        p.v.push_back(static_cast<uint8_t>(rng()));
      }
      const std::vector<uint8_t> buf = pack(fmt, p, rng);
      std::vector<uint8_t> got(static_cast<size_t>(H * W * 3));
      yuvToRgb(fmt, false, H, W, buf.data(), got.data(), nullptr);
      for (int r = 0; r < H; ++r)
        for (int x = 0; x < W; ++x) {
          const int cr = p.c420 ? r / 2 : r;
          const Rgb8 want = yuvPixelToRgb(p.Y(r, x), p.U(cr, x / 2), p.V(cr, x / 2));
          const uint8_t* g = got.data() + (r * W + x) * 3;
          ASSERT_EQ((Rgb8{g[0], g[1], g[2]}), want) << "pixel " << r << "," << x;
        }
    }
  }
}

TEST(PrePostKernels, YuvOddHeightIsTheEvenImageCut) {
  // An 11-row I420 / NV12 image with the chroma planes of the 12-row golden image converts to its first 11 rows.
  for (YuvFormat f : {YuvFormat::kIYUV, YuvFormat::kNV12}) {
    const std::string t = std::string("yuv_") + kYuvNames.at(f) + "_12x16";
    const Golden in = golden(t + "_in", DType::kU8), want = golden(t + "_rgb", DType::kU8);
    std::vector<uint8_t> cut(in.bytes.begin(), in.bytes.begin() + 11 * 16);
    cut.insert(cut.end(), in.bytes.begin() + 12 * 16, in.bytes.end());
    ASSERT_EQ(static_cast<int64_t>(cut.size()), yuvBufferSize(f, 11, 16));
    std::vector<uint8_t> got(11 * 16 * 3);
    yuvToRgb(f, false, 11, 16, cut.data(), got.data(), nullptr);
    EXPECT_EQ(firstMismatch(got, std::vector<uint8_t>(want.bytes.begin(), want.bytes.begin() + 11 * 16 * 3)), -1);
  }
}

TEST(PrePostKernels, YuvErrors) {
  std::vector<uint8_t> buf(64), out(64);
  EXPECT_THROW(yuvToRgb(YuvFormat::kYUYV, false, 2, 3, buf.data(), out.data(), nullptr), Error);  // odd width
  EXPECT_THROW(yuvToRgb(YuvFormat::kNV12, false, 0, 4, buf.data(), out.data(), nullptr), Error);
  EXPECT_THROW(yuvToRgb(static_cast<YuvFormat>(4), false, 2, 2, buf.data(), out.data(), nullptr), Error);
  EXPECT_TRUE(isYuvFormat(4105));
  EXPECT_FALSE(isYuvFormat(4106));
  EXPECT_EQ(yuvBufferSize(YuvFormat::kIMC1, 5, 4), 5 * 4 + 2 * 3 * 4);
  EXPECT_EQ(yuvBufferSize(YuvFormat::kYV12, 480, 640), 480 * 640 * 3 / 2);
  EXPECT_EQ(yuvBufferSize(YuvFormat::kIMC3, 480, 640), 480 * 640 * 2);
}

// ---------------------------------------------------------------------------------------------------------
// conv_x2gray.

TEST(PrePostKernels, GrayMatchesOpenCv) {
  const std::pair<GrayFormat, const char*> yuv[] = {{GrayFormat::kYUYV, "yuyv"},
                                                    {GrayFormat::kYVYU, "yvyu"},
                                                    {GrayFormat::kUYVY, "uyvy"},
                                                    {GrayFormat::kVUYY, "vuyy"}};
  for (const auto& hw : kSizes) {
    const int H = hw[0], W = hw[1];
    std::vector<uint8_t> got(static_cast<size_t>(H * W));
    for (const auto& [f, name] : yuv) {
      const std::string t = std::string("gray_") + name + "_" + tag(H, W);
      SCOPED_TRACE(t);
      const Golden in = golden(t + "_in", DType::kU8), want = golden(t + "_out", DType::kU8);
      toGray(f, H, W, in.bytes.data(), got.data(), nullptr);
      EXPECT_EQ(firstMismatch(got, want.bytes), -1);
    }
    const Golden img = golden("gray_rgb24_" + tag(H, W) + "_in", DType::kU8);
    toGray(GrayFormat::kRGB24, H, W, img.bytes.data(), got.data(), nullptr);
    EXPECT_EQ(firstMismatch(got, golden("gray_rgb24_" + tag(H, W) + "_out", DType::kU8).bytes), -1);
    toGray(GrayFormat::kBGR24, H, W, img.bytes.data(), got.data(), nullptr);
    EXPECT_EQ(firstMismatch(got, golden("gray_bgr24_" + tag(H, W) + "_out", DType::kU8).bytes), -1);
  }
}

TEST(PrePostKernels, GrayFormulaEqualsOpenCvOnAllTriples) {
  std::vector<uint8_t> img((size_t{1} << 24) * 3);
  for (uint32_t i = 0; i < (1u << 24); ++i) {
    img[size_t{i} * 3] = static_cast<uint8_t>(i >> 16);
    img[size_t{i} * 3 + 1] = static_cast<uint8_t>(i >> 8);
    img[size_t{i} * 3 + 2] = static_cast<uint8_t>(i);
  }
  std::vector<uint8_t> g(size_t{1} << 24);
  toGray(GrayFormat::kRGB24, 4096, 4096, img.data(), g.data(), nullptr);
  EXPECT_EQ(sha256Hex(g.data(), g.size()), exhaustiveDigest("rgb_to_gray"));
}

TEST(PrePostKernels, GrayHandValuesAndErrors) {
  EXPECT_EQ(rgbToGrayPixel(255, 0, 0), 76);
  EXPECT_EQ(rgbToGrayPixel(0, 255, 0), 150);
  EXPECT_EQ(rgbToGrayPixel(0, 0, 255), 29);
  EXPECT_EQ(rgbToGrayPixel(255, 255, 255), 255);
  EXPECT_EQ(rgbToGrayPixel(0, 0, 0), 0);
  EXPECT_EQ(rgbToGrayPixel(128, 128, 128), 128);
  // VUY1Y0: bytes [V U Y1 Y0] -> gray is Y0, Y1.
  const uint8_t vuyy[4] = {10, 20, 30, 40};
  uint8_t g[2];
  toGray(GrayFormat::kVUYY, 1, 2, vuyy, g, nullptr);
  EXPECT_EQ(g[0], 40);
  EXPECT_EQ(g[1], 30);
  // RGB24 allows an odd width; packed YUV does not.
  const uint8_t rgb[9] = {255, 0, 0, 0, 255, 0, 0, 0, 255};
  uint8_t g3[3];
  toGray(GrayFormat::kBGR24, 1, 3, rgb, g3, nullptr);
  EXPECT_EQ(g3[0], 29);
  EXPECT_EQ(g3[2], 76);
  EXPECT_THROW(toGray(GrayFormat::kYUYV, 1, 3, rgb, g3, nullptr), Error);
  EXPECT_THROW(toGray(static_cast<GrayFormat>(4098), 1, 2, rgb, g3, nullptr), Error);
}

// ---------------------------------------------------------------------------------------------------------
// resize_hwc.

struct ResizeCase {
  int h, w, c;
  std::vector<std::pair<int, int>> outs;
};

TEST(PrePostKernels, ResizeUint8MatchesOpenCv) {
  const ResizeCase cases[] = {{12, 16, 3, {{24, 32}, {27, 37}, {6, 8}, {5, 11}, {12, 16}}},
                              {22, 38, 1, {{9, 51}, {11, 19}, {44, 76}, {3, 3}}},
                              {17, 13, 4, {{40, 7}, {8, 6}}}};
  for (const ResizeCase& rc : cases) {
    const std::string base = "resize_u8_" + tag(rc.h, rc.w) + "x" + std::to_string(rc.c);
    const Golden in = golden(base + "_in", DType::kU8);
    for (auto [oh, ow] : rc.outs)
      for (ResizeAlg alg : {ResizeAlg::kNearest, ResizeAlg::kBilinear}) {
        const std::string t = base + (alg == ResizeAlg::kNearest ? "_nearest_" : "_linear_") + tag(oh, ow);
        SCOPED_TRACE(t);
        const Golden want = golden(t, DType::kU8);
        std::vector<uint8_t> got(static_cast<size_t>(oh * ow * rc.c));
        resizeHwc(alg, {rc.h, rc.w, rc.c, oh, ow}, in.bytes.data(), got.data(), nullptr);
        EXPECT_EQ(firstMismatch(got, want.bytes), -1);
      }
  }
}

TEST(PrePostKernels, ResizeAreaUint8MatchesOpenCv) {
  // cv2.resize INTER_AREA: enlarging (its linear taps), whole-factor and fractional shrinking, mixed axes, the
  // same size, 1 / 3 / 4 channels; pictures to TIDL's 256x256 and 32x32.
  const ResizeCase cases[] = {{12, 16, 3, {{24, 32}, {27, 37}, {6, 8}, {5, 11}, {12, 16}}},
                              {22, 38, 1, {{9, 51}, {11, 19}, {44, 76}, {3, 3}}},
                              {17, 13, 4, {{40, 7}, {8, 6}}},
                              {60, 90, 3, {{20, 30}, {30, 30}, {17, 23}, {59, 89}, {256, 256}, {32, 32}}},
                              {150, 200, 3, {{32, 32}, {100, 100}, {64, 96}, {75, 100}}}};
  for (const ResizeCase& rc : cases) {
    const std::string base = "resize_u8_" + tag(rc.h, rc.w) + "x" + std::to_string(rc.c);
    const Golden in = golden(base + "_in", DType::kU8);
    for (auto [oh, ow] : rc.outs) {
      const std::string t = base + "_area_" + tag(oh, ow);
      SCOPED_TRACE(t);
      const Golden want = golden(t, DType::kU8);
      std::vector<uint8_t> got(static_cast<size_t>(oh * ow * rc.c));
      resizeAreaHwc({rc.h, rc.w, rc.c, oh, ow}, in.bytes.data(), got.data());
      EXPECT_EQ(firstMismatch(got, want.bytes), -1);
    }
  }
}

TEST(PrePostKernels, ResizeFp16MatchesOpenCvFloatRoundedOnce) {
  const ResizeCase cases[] = {{12, 16, 3, {{24, 32}, {27, 37}, {6, 8}, {5, 11}}}, {9, 10, 2, {{4, 21}}}};
  for (const ResizeCase& rc : cases) {
    const std::string base = "resize_f16_" + tag(rc.h, rc.w) + "x" + std::to_string(rc.c);
    const std::vector<uint16_t> in = golden(base + "_in", DType::kF16).as<uint16_t>();
    for (auto [oh, ow] : rc.outs)
      for (ResizeAlg alg : {ResizeAlg::kNearest, ResizeAlg::kBilinear}) {
        const std::string t = base + (alg == ResizeAlg::kNearest ? "_nearest_" : "_linear_") + tag(oh, ow);
        SCOPED_TRACE(t);
        const std::vector<uint16_t> want = golden(t, DType::kF16).as<uint16_t>();
        std::vector<uint16_t> got(static_cast<size_t>(oh * ow * rc.c));
        resizeHwc(alg, {rc.h, rc.w, rc.c, oh, ow}, in.data(), got.data(), nullptr);
        EXPECT_EQ(firstMismatch(got, want), -1);
      }
  }
}

TEST(PrePostKernels, ResizeKeepsConstantsAndExtremes) {
  // Every constant image stays constant (the weights sum to 2048 and the rounding cannot drift), 0 and 255
  // included; an image resized to its own size is copied.
  for (int v : {0, 1, 127, 254, 255})
    for (auto [oh, ow] : {std::pair{7, 9}, std::pair{3, 3}, std::pair{40, 33}}) {
      std::vector<uint8_t> in(13 * 11 * 3, static_cast<uint8_t>(v)), out(static_cast<size_t>(oh * ow * 3));
      resizeHwc(ResizeAlg::kBilinear, {13, 11, 3, oh, ow}, in.data(), out.data(), nullptr);
      for (uint8_t o : out) ASSERT_EQ(o, v);
    }
  std::mt19937 rng(3);
  std::vector<uint8_t> in(9 * 7 * 2), out(9 * 7 * 2);
  for (auto& x : in) x = static_cast<uint8_t>(rng());
  resizeHwc(ResizeAlg::kBilinear, {9, 7, 2, 9, 7}, in.data(), out.data(), nullptr);
  EXPECT_EQ(out, in);
  // 2x down is the rounded mean of each 2x2 block ((a+b+c+d+2)>>2, OpenCV's INTER_AREA).
  const uint8_t blk[4 * 4] = {0, 1, 10, 11, 2, 3, 12, 14, 255, 255, 0, 0, 255, 254, 1, 0};
  uint8_t o4[4];
  resizeHwc(ResizeAlg::kBilinear, {4, 4, 1, 2, 2}, blk, o4, nullptr);
  EXPECT_EQ(o4[0], (0 + 1 + 2 + 3 + 2) >> 2);
  EXPECT_EQ(o4[1], (10 + 11 + 12 + 14 + 2) >> 2);
  EXPECT_EQ(o4[2], (255 + 255 + 255 + 254 + 2) >> 2);
  EXPECT_EQ(o4[3], (0 + 0 + 1 + 0 + 2) >> 2);
  // Nearest is floor(d * in / out), not half-pixel: 4 -> 3 takes columns 0, 1, 2.
  const uint8_t row[4] = {10, 20, 30, 40};
  uint8_t o3[3];
  resizeHwc(ResizeAlg::kNearest, {1, 4, 1, 1, 3}, row, o3, nullptr);
  EXPECT_EQ(o3[0], 10);
  EXPECT_EQ(o3[1], 20);
  EXPECT_EQ(o3[2], 30);
  EXPECT_THROW(resizeHwc(ResizeAlg::kNearest, {-1, 4, 1, 1, 3}, row, o3, nullptr), Error);
}

// ---------------------------------------------------------------------------------------------------------
// crop.

TEST(PrePostKernels, CropMatchesNumpy) {
  const Golden in = golden("crop_u8_hwc_in", DType::kU8), want = golden("crop_u8_hwc_out", DType::kU8);
  std::vector<uint8_t> got(10 * 20 * 3);
  crop(ImageLayout::kHWC, {22, 38, 3, 5, 7, 10, 20}, 1, in.bytes.data(), got.data(), nullptr);
  EXPECT_EQ(got, want.bytes);
  const Golden inh = golden("crop_f16_chw_in", DType::kF16), wanth = golden("crop_f16_chw_out", DType::kF16);
  ASSERT_EQ(wanth.shape, (Shape{17, 8, 3}));
  std::vector<uint8_t> goth(17 * 8 * 3 * 2);
  crop(ImageLayout::kCHW, {22, 38, 3, 4, 30, 17, 8}, 2, inh.bytes.data(), goth.data(), nullptr);
  EXPECT_EQ(goth, wanth.bytes);
}

TEST(PrePostKernels, CropEdges) {
  std::vector<uint8_t> in(4 * 5 * 2);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> out(4 * 5 * 2);
  crop(ImageLayout::kHWC, {4, 5, 2, 0, 0, 4, 5}, 1, in.data(), out.data(), nullptr);  // the whole image
  EXPECT_EQ(out, in);
  uint8_t one[2];
  crop(ImageLayout::kHWC, {4, 5, 2, 3, 4, 1, 1}, 1, in.data(), one, nullptr);  // the last pixel
  EXPECT_EQ(one[0], 38);
  EXPECT_EQ(one[1], 39);
  crop(ImageLayout::kCHW, {4, 5, 2, 3, 4, 1, 1}, 1, in.data(), one, nullptr);  // CHW: plane c at c * 20
  EXPECT_EQ(one[0], 19);
  EXPECT_EQ(one[1], 39);
  EXPECT_THROW(crop(ImageLayout::kHWC, {4, 5, 2, 3, 4, 2, 1}, 1, in.data(), out.data(), nullptr), Error);
  EXPECT_THROW(crop(ImageLayout::kHWC, {4, 5, 2, 0, 1, 1, 5}, 1, in.data(), out.data(), nullptr), Error);
}

// ---------------------------------------------------------------------------------------------------------
// cast_any_to_fp16, cast_fp16_fp32, normalize, memcopy, softmax.

TEST(PrePostKernels, Casts) {
  std::vector<uint8_t> u8(256);
  for (int i = 0; i < 256; ++i) u8[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  std::vector<uint16_t> h(256);
  castAnyToFp16(256, u8.data(), h.data(), nullptr);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(halfToFloat(h[static_cast<size_t>(i)]), static_cast<float>(i));
  // Every fp16 value survives fp16 -> fp32 -> fp16 (NaNs stay NaN), and fp16 -> fp16 copies the bits.
  std::vector<uint16_t> all(65536), back(65536), copy(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> f(65536);
  castFp16ToFp32(65536, all.data(), f.data(), nullptr);
  castFp32ToFp16(65536, f.data(), back.data(), nullptr);
  castAnyToFp16(65536, all.data(), copy.data(), nullptr);
  EXPECT_EQ(copy, all);
  for (size_t i = 0; i < all.size(); ++i) {
    if (std::isnan(f[i])) EXPECT_TRUE(std::isnan(halfToFloat(back[i])));
    else EXPECT_EQ(back[i], all[i]) << i;
  }
  // fp32 -> fp16: round to nearest even, overflow to infinity.
  const float in[] = {1.0f, 0.1f, 65504.0f, 65519.0f, 65520.0f, -1e9f, 1e-8f, 1.0f + 1.0f / 2048.0f,
                      1.0f + 3.0f / 2048.0f, std::numeric_limits<float>::quiet_NaN()};
  const uint16_t want[] = {0x3C00, 0x2E66, 0x7BFF, 0x7BFF, 0x7C00, 0xFC00, 0x0000, 0x3C00, 0x3C02};
  uint16_t out[10], out2[10];
  castAnyToFp16(10, in, out, nullptr);
  castFp32ToFp16(10, in, out2, nullptr);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(out[i], want[i]) << i;
  EXPECT_TRUE(std::isnan(halfToFloat(out[9])));
  EXPECT_EQ(std::memcmp(out, out2, sizeof(out)), 0);
}

TEST(PrePostKernels, NormalizeMatchesNumpy) {
  const std::vector<uint16_t> in = golden("normalize_in", DType::kF16).as<uint16_t>();
  const float add[3] = {static_cast<float>(-123.675), static_cast<float>(-116.28), static_cast<float>(-103.53)};
  const float mul[3] = {static_cast<float>(0.01712475), static_cast<float>(0.017507), static_cast<float>(0.01742919)};
  std::vector<uint16_t> got(in.size());
  normalize(12 * 16, 3, false, add, mul, in.data(), got.data(), nullptr);
  EXPECT_EQ(firstMismatch(got, golden("normalize_keep_out", DType::kF16).as<uint16_t>()), -1);
  normalize(12 * 16, 3, true, add, mul, in.data(), got.data(), nullptr);
  EXPECT_EQ(firstMismatch(got, golden("normalize_swap_out", DType::kF16).as<uint16_t>()), -1);
}

TEST(PrePostKernels, NormalizeOrderAndSwap) {
  // (x + add) * mul, not x * mul + add; the swap reads channel 2 - c and uses coefficient c.
  const uint16_t px[3] = {floatToHalf(1.0f), floatToHalf(2.0f), floatToHalf(3.0f)};
  const float add[3] = {10.0f, 20.0f, 30.0f}, mul[3] = {2.0f, 3.0f, 4.0f};
  uint16_t o[3];
  normalize(1, 3, false, add, mul, px, o, nullptr);
  EXPECT_EQ(halfToFloat(o[0]), 22.0f);
  EXPECT_EQ(halfToFloat(o[1]), 66.0f);
  EXPECT_EQ(halfToFloat(o[2]), 132.0f);
  normalize(1, 3, true, add, mul, px, o, nullptr);
  EXPECT_EQ(halfToFloat(o[0]), 26.0f);   // (3 + 10) * 2
  EXPECT_EQ(halfToFloat(o[1]), 66.0f);   // (2 + 20) * 3
  EXPECT_EQ(halfToFloat(o[2]), 124.0f);  // (1 + 30) * 4
  // Large results overflow to infinity in fp16; one channel (gray) works without a swap.
  const float big_mul[1] = {1e6f}, zero[1] = {0.0f};
  normalize(1, 1, false, zero, big_mul, px, o, nullptr);
  EXPECT_EQ(o[0], 0x7C00);
  EXPECT_THROW(normalize(1, 1, true, zero, big_mul, px, o, nullptr), Error);
}

TEST(PrePostKernels, MemcopyAndSoftmax) {
  std::vector<uint16_t> a(1000), b(1000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint16_t>(i * 37);
  memcopy(1000, a.data(), b.data(), nullptr);
  EXPECT_EQ(a, b);
  std::vector<uint16_t> x(100);
  for (size_t i = 0; i < x.size(); ++i) x[i] = floatToHalf(static_cast<float>(i % 13) * 0.5f - 3.0f);
  std::vector<float> y(100);
  std::vector<uint16_t> yh(100);
  softmaxFp16(100, x.data(), y.data(), nullptr);
  softmaxFp16(100, x.data(), yh.data(), nullptr);
  double m = -1e30, s = 0;
  for (uint16_t v : x) m = std::max(m, static_cast<double>(halfToFloat(v)));
  for (uint16_t v : x) s += std::exp(halfToFloat(v) - m);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(halfToFloat(x[i]) - m) / s;
    EXPECT_NEAR(y[i], want, 1e-6 * want);
    EXPECT_EQ(yh[i], floatToHalf(y[i]));
  }
}

// ---------------------------------------------------------------------------------------------------------
// argminmax.

TEST(PrePostKernels, ArgMinMaxMatchesNumpy) {
  const int H = 7, W = 9, C = 5;
  for (ImageLayout layout : {ImageLayout::kHWC, ImageLayout::kCHW}) {
    const char* ln = layout == ImageLayout::kHWC ? "hwc" : "chw";
    const std::vector<uint16_t> in = golden(std::string("arg_") + ln + "_in", DType::kF16).as<uint16_t>();
    for (auto [axis, an] : {std::pair{ArgAxis::kChannel, "ch"}, std::pair{ArgAxis::kWidth, "width"},
                            std::pair{ArgAxis::kHeight, "height"}})
      for (auto [mode, mn] : {std::pair{ArgMode::kArgMax, "max"}, std::pair{ArgMode::kArgMin, "min"}}) {
        const std::string t = std::string("arg_") + ln + "_" + an + "_" + mn + "_out";
        SCOPED_TRACE(t);
        const Golden want = golden(t, DType::kU8);
        std::vector<uint8_t> got(want.bytes.size());
        std::vector<uint16_t> got16(want.bytes.size());
        argMinMax(layout, H, W, C, axis, mode, in.data(), got.data(), nullptr);
        argMinMax(layout, H, W, C, axis, mode, in.data(), got16.data(), nullptr);
        EXPECT_EQ(got, want.bytes);
        for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got16[i], want.bytes[i]);
      }
  }
}

TEST(PrePostKernels, ArgMinMaxTiesNanAndLimits) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  auto run = [](std::vector<float> v, ArgMode mode) {
    std::vector<uint16_t> h;
    for (float f : v) h.push_back(floatToHalf(f));
    uint8_t o = 0xFF;
    argMinMax(ImageLayout::kHWC, 1, 1, static_cast<int64_t>(v.size()), ArgAxis::kChannel, mode, h.data(), &o, nullptr);
    return int{o};
  };
  EXPECT_EQ(run({1, 3, 3, 2}, ArgMode::kArgMax), 1);   // first of the tied maxima
  EXPECT_EQ(run({2, 1, 3, 1}, ArgMode::kArgMin), 1);   // first of the tied minima
  EXPECT_EQ(run({-0.0f, 0.0f}, ArgMode::kArgMax), 0);  // -0 == +0
  EXPECT_EQ(run({0.0f, -0.0f}, ArgMode::kArgMin), 0);
  EXPECT_EQ(run({-inf, -inf}, ArgMode::kArgMax), 0);
  EXPECT_EQ(run({1, inf, 5}, ArgMode::kArgMax), 1);
  EXPECT_EQ(run({1, nan, 5, nan}, ArgMode::kArgMax), 1);  // the first NaN, as numpy
  EXPECT_EQ(run({1, nan, -5}, ArgMode::kArgMin), 1);
  EXPECT_EQ(run({nan, 7}, ArgMode::kArgMin), 0);
  // 256 values fit uint8 (indices 0..255), 257 need uint16.
  std::vector<uint16_t> h(257, floatToHalf(0.0f));
  h[255] = floatToHalf(1.0f);
  uint8_t o8 = 0;
  argMinMax(ImageLayout::kCHW, 1, 256, 1, ArgAxis::kWidth, ArgMode::kArgMax, h.data(), &o8, nullptr);
  EXPECT_EQ(o8, 255);
  h[256] = floatToHalf(2.0f);
  EXPECT_THROW(argMinMax(ImageLayout::kCHW, 1, 257, 1, ArgAxis::kWidth, ArgMode::kArgMax, h.data(), &o8, nullptr),
               Error);
  uint16_t o16 = 0;
  argMinMax(ImageLayout::kCHW, 1, 257, 1, ArgAxis::kWidth, ArgMode::kArgMax, h.data(), &o16, nullptr);
  EXPECT_EQ(o16, 256);
}

// ---------------------------------------------------------------------------------------------------------
// Thread-count invariance: no pool and pools of 1, 2, 3 threads give the same bytes (images large enough to be
// split).

TEST(PrePostKernels, SameBytesForEveryThreadCount) {
  std::mt19937 rng(5);
  const int H = 240, W = 320;
  std::vector<uint8_t> img(size_t{H} * W * 3);
  for (auto& x : img) x = static_cast<uint8_t>(rng());
  std::vector<uint16_t> hf(size_t{H} * W * 3);
  for (auto& x : hf) x = floatToHalf(std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng));
  const float add[3] = {-1.0f, 2.0f, 0.5f}, mul[3] = {0.25f, 3.0f, -1.0f};

  auto runAll = [&](ThreadPool* pool) {
    std::vector<uint8_t> out;
    auto append = [&](const void* p, size_t n) {
      out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    };
    for (const auto& [fmt, name] : kYuvNames) {
      std::vector<uint8_t> rgb(size_t{H} * W * 3);
      yuvToRgb(fmt, true, H, W, img.data(), rgb.data(), pool);  // img is >= every format's buffer size
      append(rgb.data(), rgb.size());
    }
    std::vector<uint8_t> g(size_t{H} * W);
    toGray(GrayFormat::kRGB24, H, W, img.data(), g.data(), pool);
    append(g.data(), g.size());
    toGray(GrayFormat::kUYVY, H, W, img.data(), g.data(), pool);
    append(g.data(), g.size());
    std::vector<uint8_t> c(size_t{100} * 200 * 3);
    crop(ImageLayout::kCHW, {H, W, 3, 17, 33, 100, 200}, 1, img.data(), c.data(), pool);
    append(c.data(), c.size());
    for (ResizeAlg alg : {ResizeAlg::kNearest, ResizeAlg::kBilinear}) {
      std::vector<uint8_t> r(size_t{300} * 224 * 3);
      resizeHwc(alg, {H, W, 3, 300, 224}, img.data(), r.data(), pool);
      append(r.data(), r.size());
      std::vector<uint16_t> rh(size_t{100} * 111 * 3);
      resizeHwc(alg, {H, W, 3, 100, 111}, hf.data(), rh.data(), pool);
      append(rh.data(), rh.size() * 2);
    }
    std::vector<uint16_t> n(hf.size());
    normalize(H * W, 3, true, add, mul, hf.data(), n.data(), pool);
    append(n.data(), n.size() * 2);
    castAnyToFp16(static_cast<int64_t>(img.size()), img.data(), n.data(), pool);
    append(n.data(), n.size() * 2);
    std::vector<float> f(hf.size());
    castFp16ToFp32(static_cast<int64_t>(hf.size()), hf.data(), f.data(), pool);
    castFp32ToFp16(static_cast<int64_t>(f.size()), f.data(), n.data(), pool);
    append(n.data(), n.size() * 2);
    memcopy(static_cast<int64_t>(hf.size()), hf.data(), n.data(), pool);
    append(n.data(), n.size() * 2);
    softmaxFp16(static_cast<int64_t>(hf.size()), hf.data(), f.data(), pool);
    append(f.data(), f.size() * 4);
    for (ArgAxis axis : {ArgAxis::kChannel, ArgAxis::kWidth, ArgAxis::kHeight}) {
      std::vector<uint16_t> a(size_t{H} * W * 3);
      argMinMax(ImageLayout::kHWC, H, W, 3, axis, ArgMode::kArgMin, hf.data(), a.data(), pool);
      append(a.data(), a.size() * 2);
    }
    return out;
  };
  const std::vector<uint8_t> serial = runAll(nullptr);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(firstMismatch(runAll(&pool), serial), -1) << threads << " threads";
  }
}

TEST(PrePostKernels, FastVariantsGiveTheReferenceBits) {
  // yuvToRgbFast / normalizeFast (the simulator's fast mode) against the reference, every YUV format, both output
  // orders, odd heights, uint8 and fp16 normalize with and without the R/B swap and with odd pixel counts (partial
  // blocks), NaN and infinity among the fp16 inputs; 1 and 2 threads.
  std::mt19937 rng(11);
  ThreadPool two(2);
  for (auto [H, W] : {std::pair{37, 50}, std::pair{240, 320}}) {
    std::vector<uint8_t> img(size_t(H) * W * 3);
    for (auto& x : img) x = static_cast<uint8_t>(rng());
    for (const auto& [fmt, name] : kYuvNames)
      for (bool bgr : {false, true}) {
        std::vector<uint8_t> ref(size_t(H) * W * 3), fast(ref.size()), fast2(ref.size());
        yuvToRgb(fmt, bgr, H, W, img.data(), ref.data(), nullptr);
        yuvToRgbFast(fmt, bgr, H, W, img.data(), fast.data(), nullptr);
        yuvToRgbFast(fmt, bgr, H, W, img.data(), fast2.data(), &two);
        EXPECT_EQ(ref, fast) << name << " bgr " << bgr << " " << H << "x" << W;
        EXPECT_EQ(ref, fast2) << name << " 2 threads";
      }
  }
  for (int64_t C : {1, 3, 4}) {
    const int64_t P = 1000 + 7;  // not a multiple of the 256-pixel block
    std::vector<uint8_t> u8(size_t(P * C));
    for (auto& x : u8) x = static_cast<uint8_t>(rng());
    std::vector<uint16_t> hf(u8.size());
    for (auto& x : hf) x = floatToHalf(std::uniform_real_distribution<float>(-300.0f, 300.0f)(rng));
    hf[3] = 0x7E01;  // NaN with a payload
    hf[5] = 0x7C00;  // +inf
    hf[8] = 0xFBFF;  // -65504
    std::vector<float> add(static_cast<size_t>(C)), mul(add.size());
    for (int64_t c = 0; c < C; ++c) add[size_t(c)] = -100.0f + 37.3f * float(c), mul[size_t(c)] = 0.0173f * float(c + 1);
    mul[0] = 300.0f;  // overflows fp16 for large inputs
    for (bool swap : {false, true}) {
      if (swap && C != 3) continue;
      std::vector<uint16_t> ref(u8.size()), fast(u8.size()), fast2(u8.size());
      normalize(P, C, swap, add.data(), mul.data(), u8.data(), ref.data(), nullptr);
      normalizeFast(P, C, swap, add.data(), mul.data(), u8.data(), fast.data(), nullptr);
      normalizeFast(P, C, swap, add.data(), mul.data(), u8.data(), fast2.data(), &two);
      EXPECT_EQ(ref, fast) << "uint8 C=" << C << " swap " << swap;
      EXPECT_EQ(ref, fast2) << "uint8 2 threads";
      normalize(P, C, swap, add.data(), mul.data(), hf.data(), ref.data(), nullptr);
      normalizeFast(P, C, swap, add.data(), mul.data(), hf.data(), fast.data(), nullptr);
      normalizeFast(P, C, swap, add.data(), mul.data(), hf.data(), fast2.data(), &two);
      EXPECT_EQ(ref, fast) << "fp16 C=" << C << " swap " << swap;
      EXPECT_EQ(ref, fast2) << "fp16 2 threads";
    }
  }
  // resizeHwcFast: bilinear down and up, odd sizes, 1 / 3 channels (specialised) and 4 (the reference path), the
  // extreme pixels 0 / 255, 1 and 2 threads; nearest goes to the reference.
  struct R {
    int64_t ih, iw, c, oh, ow;
  };
  for (const R& r : {R{480, 640, 3, 224, 224}, R{37, 51, 3, 100, 13}, R{5, 7, 1, 64, 33}, R{64, 64, 1, 32, 32},
                     R{9, 9, 4, 20, 5}, R{1, 1, 3, 3, 9}, R{30, 2, 3, 1, 1}}) {
    std::vector<uint8_t> in(static_cast<size_t>(r.ih * r.iw * r.c));
    for (auto& x : in) x = static_cast<uint8_t>(rng() % 3 == 0 ? 255 * (rng() & 1) : rng());
    ResizeGeometry g{r.ih, r.iw, r.c, r.oh, r.ow};
    for (ResizeAlg alg : {ResizeAlg::kBilinear, ResizeAlg::kNearest}) {
      std::vector<uint8_t> ref(static_cast<size_t>(r.oh * r.ow * r.c)), fast(ref.size()), fast2(ref.size());
      resizeHwc(alg, g, in.data(), ref.data(), nullptr);
      resizeHwcFast(alg, g, in.data(), fast.data(), nullptr);
      resizeHwcFast(alg, g, in.data(), fast2.data(), &two);
      EXPECT_EQ(ref, fast) << r.ih << "x" << r.iw << "x" << r.c << " -> " << r.oh << "x" << r.ow << " alg " << int(alg);
      EXPECT_EQ(ref, fast2) << "2 threads";
    }
  }
}

}  // namespace
}  // namespace npuc::kernels
