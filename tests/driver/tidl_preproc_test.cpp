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

TEST(TidlPreprocess, EveryPreProcTypeMatchesOpenCv) {
  for (int t : {0, 1, 2, 3, 4, 5, 6, 256}) {
    SCOPED_TRACE(t);
    const fs::path picture = t == 4 ? kData / "tidl" / "picture_24x24.png" : kData / "images" / "gradient_64x48.png";
    const Tensor got = tidlPreprocessPicture(picture, t, 3, 24, 24, {10, 20, 30}, {0.5, 0.25, 0.125});
    const Tensor want = readNpyFile(kData / "tidl" / ("preproc_" + std::to_string(t) + ".npy"));
    ASSERT_EQ(got.shape(), want.shape());
    ASSERT_EQ(got.dtype(), DType::kF32);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < got.numel(); ++i) mismatches += std::memcmp(got.data<float>() + i, want.data<float>() + i, sizeof(float)) != 0;
    EXPECT_EQ(mismatches, 0);
  }
  // A 1-channel input takes the picture in grey: preProcType 0 on it gives values of a grey picture.
  const Tensor grey = tidlPreprocessPicture(kData / "images" / "gradient_64x48.png", 0, 1, 8, 8);
  EXPECT_EQ(grey.shape(), (Shape{1, 1, 8, 8}));
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
  EXPECT_NE(message([&] { tidlPreprocessPicture(png, 4, 3, 24, 24); }).find("preProcType 4 does no pre-processing: the 64x48 picture must be the input's 24x24"),
            std::string::npos);
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
