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
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message([&] { tidlPreprocessPicture(png, 3, 3, 40, 40); }).find("preProcType 3 crops 40x40 from 32x32"), std::string::npos);
  EXPECT_NE(message([&] { tidlPreprocessPicture(png, 256, 3, 24, 24, {1, 2}, {1, 2, 3}); }).find("takes 3 inMean and inScale values"),
            std::string::npos);
  EXPECT_NE(message([&] { tidlPreprocessPicture(png, 7, 3, 24, 24); }).find("preProcType 7"), std::string::npos);
  EXPECT_NE(message([&] { tidlPreprocessPicture(png, 0, 4, 24, 24); }).find("1- or 3-channel"), std::string::npos);
  const fs::path not_picture = kData / "tidl" / "README.md";
  EXPECT_NE(message([&] { tidlPreprocessPicture(not_picture, 0, 3, 24, 24); }).find("README.md: not a picture npuc can decode"), std::string::npos);
}

}  // namespace
}  // namespace npuc
