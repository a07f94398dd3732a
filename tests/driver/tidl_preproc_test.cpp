// TIDL's pre-processing of encoded calibration pictures (npuc::tidlPreprocessPicture): every preProcType of the
// guide's table against OpenCV (tests/data/tidl/make_preproc_golden.py: cv2.imread, cv2.resize INTER_AREA, crops
// as cv::Rect), bit for bit; and the errors of pictures that do not fit the rule.
#include "npuc/model.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

namespace npuc {
namespace {

namespace fs = std::filesystem;
const fs::path kData = fs::path(NPUC_SOURCE_DIR) / "tests" / "data";

/// Bits that differ between a result and a golden file of tests/data/tidl.
int64_t mismatches(const Tensor& got, const std::string& golden) {
  const Tensor want = readNpyFile(kData / "tidl" / (golden + ".npy"));
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.dtype(), DType::kF32);
  if (got.shape() != want.shape() || got.dtype() != DType::kF32) return -1;
  int64_t n = 0;
  for (int64_t i = 0; i < got.numel(); ++i) n += std::memcmp(got.data<float>() + i, want.data<float>() + i, sizeof(float)) != 0;
  return n;
}

/// The message of the Error f throws ("(no error)" when it throws none).
template <class F>
std::string message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::string("(no error)");
}

TEST(TidlPreprocess, EveryPreProcTypeMatchesOpenCv) {
  const fs::path gradient = kData / "images" / "gradient_64x48.png";
  for (int t : {0, 1, 2, 3, 4, 5, 6, 256}) {
    SCOPED_TRACE(t);
    EXPECT_EQ(mismatches(tidlPreprocessPicture(gradient, t, 3, 24, 24, {10, 20, 30}, {0.5, 0.25, 0.125}), "preproc_" + std::to_string(t)), 0);
  }
  // 4 on a picture of the input's size; 7/8 of an odd picture centred, and the means clamped to TIDL's 8 bits.
  EXPECT_EQ(mismatches(tidlPreprocessPicture(kData / "tidl" / "picture_24x24.png", 4, 3, 24, 24), "preproc_4_same"), 0);
  for (int t : {1, 2, 5}) {
    SCOPED_TRACE(t);
    EXPECT_EQ(mismatches(tidlPreprocessPicture(kData / "tidl" / "picture_50x37.png", t, 3, 24, 24), "preproc_" + std::to_string(t) + "_odd"), 0);
  }
  // A 1-channel input takes the first plane (R, after preProcType 2's swap).
  EXPECT_EQ(mismatches(tidlPreprocessPicture(gradient, 2, 1, 24, 24), "preproc_2_grey"), 0);
}

TEST(TidlPreprocess, PicturesThatBreakTheRuleAreErrorsNamingThem) {
  const fs::path png = kData / "images" / "gradient_64x48.png";
  EXPECT_NE(message([&] { tidlPreprocessPicture(png, 3, 3, 40, 40); }).find("preProcType 3 crops 40x40 from 32x32"), std::string::npos);
  EXPECT_NE(message([&] { tidlPreprocessPicture(png, 256, 3, 24, 24, {1, 2}, {1, 2, 3}); }).find("takes 3 inMean and inScale values"),
            std::string::npos);
  EXPECT_NE(message([&] { tidlPreprocessPicture(png, 7, 3, 24, 24); }).find("preProcType 7"), std::string::npos);
  EXPECT_NE(message([&] { tidlPreprocessPicture(png, 0, 4, 24, 24); }).find("1- or 3-channel"), std::string::npos);
  const fs::path not_picture = kData / "tidl" / "README.md";
  EXPECT_NE(message([&] { tidlPreprocessPicture(not_picture, 0, 3, 24, 24); }).find("README.md: not a picture npuc can decode"), std::string::npos);
}

// Pictures as calibration samples of any target (npuc::picturesAsSamples, translate --calib NAME=DIR): B, G, R with
// TIDL's inMean / inScale arithmetic is OpenCV's golden of preProcType 256 bit for bit; R, G, B, channel last and the
// 1-channel luma (OpenCV's BGR2GRAY fixed point) are the same pixels rearranged; pictures stack on the first axis.
TEST(PictureSamples, OpenCvsResizeAndTheChannelOrders) {
  const fs::path png = kData / "images" / "gradient_64x48.png";
  PictureSamples bgr;
  bgr.bgr = true;
  bgr.mean = {10, 20, 30};
  bgr.scale = {0.5, 0.25, 0.125};
  EXPECT_EQ(mismatches(picturesAsSamples({png}, {1, 3, 24, 24}, bgr), "preproc_256"), 0);
  PictureSamples raw;  // the bytes: (v - 0) * 1
  raw.scale = {1.0};
  raw.bgr = true;
  const Tensor b = picturesAsSamples({png, png}, {1, 3, 24, 24}, raw);
  ASSERT_EQ(b.shape(), (Shape{2, 3, 24, 24}));
  raw.bgr = false;
  const Tensor rgb_last = picturesAsSamples({png}, {1, 24, 24, 3}, raw), grey = picturesAsSamples({png}, {1, 1, 24, 24}, raw);
  ASSERT_EQ(rgb_last.shape(), (Shape{1, 24, 24, 3}));
  const float* p = b.data<float>();
  for (int64_t i = 0; i < 24 * 24; ++i) {
    const int bb = static_cast<int>(p[i]), gg = static_cast<int>(p[576 + i]), rr = static_cast<int>(p[1152 + i]);
    EXPECT_EQ(p[3 * 576 + i], p[i]);  // (the second picture)
    EXPECT_EQ(rgb_last.data<float>()[3 * i], rr);
    EXPECT_EQ(rgb_last.data<float>()[3 * i + 1], gg);
    EXPECT_EQ(rgb_last.data<float>()[3 * i + 2], bb);
    EXPECT_EQ(grey.data<float>()[i], (bb * 1868 + gg * 9617 + rr * 4899 + (1 << 13)) >> 14);
  }
  EXPECT_NE(message([&] { picturesAsSamples({png}, {1, 4, 24, 24}, raw); }).find("1 or 3 channels"), std::string::npos);
  EXPECT_NE(message([&] { picturesAsSamples({png}, {1, 3, 24}, raw); }).find("[1, C, H, W]"), std::string::npos);
  PictureSamples two;
  two.mean = {1, 2};
  EXPECT_NE(message([&] { picturesAsSamples({png}, {1, 3, 24, 24}, two); }).find("2 mean values for an input of 3 channels"), std::string::npos);
  EXPECT_NE(message([&] { picturesAsSamples({kData / "tidl" / "README.md"}, {1, 3, 24, 24}, raw); }).find("README.md: not a picture"),
            std::string::npos);
}

}  // namespace
}  // namespace npuc
