// TIDL's pre-processing of encoded calibration pictures (tidl-import, rawSampleInData = 0): the TIDL user guide's
// table of preProcType 0..6 and 256 (§3.15.1.4.7, shared/seeds/001_*), with OpenCV's operations as the guide names
// them — imread's BGR order, resize with INTER_AREA (kernels::resizeAreaHwc), crops as cv::Rect — and, where the
// table is terse, as TI's own import tool reads it (its image reader: centred crops, the mean subtracted and clamped
// to the 8-bit input's [-128, 127], a 1-channel input's first plane).
#include "npuc/model.hpp"

#include "kernels/prepost.hpp"
#include "support/error.hpp"
#include "support/file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stb/stb_image.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <memory>

namespace npuc {

namespace {

/// An 8-bit HWC picture.
struct Picture {
  int64_t h = 0, w = 0, c = 0;
  std::vector<uint8_t> px;
};

/// B, G, R <-> R, G, B.
void swapRedBlue(Picture& p) {
  if (p.c == 3)
    for (size_t i = 0; i < p.px.size(); i += 3) std::swap(p.px[i], p.px[i + 2]);
}

/// Decoded as OpenCV's imread (IMREAD_COLOR) gives it: 3 channels in B, G, R order.
Picture decode(const std::filesystem::path& file);

/// B, G, R -> one channel, as OpenCV's cvtColor(BGR2GRAY): (B·1868 + G·9617 + R·4899 + 2^13) >> 14.
Picture luma(const Picture& p) {
  Picture o{p.h, p.w, 1, std::vector<uint8_t>(static_cast<size_t>(p.h * p.w))};
  for (size_t i = 0; i < o.px.size(); ++i)
    o.px[i] = static_cast<uint8_t>((p.px[3 * i] * 1868 + p.px[3 * i + 1] * 9617 + p.px[3 * i + 2] * 4899 + (1 << 13)) >> 14);
  return o;
}

Picture decode(const std::filesystem::path& file) {  // (declared above)
  std::vector<uint8_t> bytes = readFileBytes(file);
  if (bytes.empty()) fail(ErrorCode::kInvalidInput, "{}: the file is empty", file.string());
  if (bytes.size() > (1u << 30)) fail(ErrorCode::kInvalidInput, "{}: pictures larger than 1 GiB are not read", file.string());
  int iw = 0, ih = 0, ch = 0;
  if (!stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &iw, &ih, &ch))
    fail(ErrorCode::kInvalidInput, "{}: not a picture npuc can decode (JPEG, PNG, BMP, PGM/PPM, TGA: {})", file.string(),
         stbi_failure_reason());
  if (int64_t(iw) * ih > (int64_t(1) << 28)) fail(ErrorCode::kInvalidInput, "{}: {}x{} pixels is too large", file.string(), iw, ih);
  const int want = 3;
  std::unique_ptr<uint8_t, void (*)(void*)> px(stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &iw, &ih, &ch, want),
                                               stbi_image_free);
  if (!px) fail(ErrorCode::kInvalidInput, "{}: cannot decode the picture ({})", file.string(), stbi_failure_reason());
  Picture p{ih, iw, want, std::vector<uint8_t>(px.get(), px.get() + static_cast<size_t>(iw) * ih * want)};
  swapRedBlue(p);  // (stb gives R, G, B)
  return p;
}

Picture resizeArea(const Picture& p, int64_t h, int64_t w) {
  if (p.h == h && p.w == w) return p;
  Picture o{h, w, p.c, std::vector<uint8_t>(static_cast<size_t>(h * w * p.c))};
  kernels::ResizeGeometry g;
  g.in_height = p.h;
  g.in_width = p.w;
  g.channels = p.c;
  g.out_height = h;
  g.out_width = w;
  kernels::resizeAreaHwc(g, p.px.data(), o.px.data());
  return o;
}

/// cv::Rect(x, y, w, h) of the picture; a window outside it is an error naming the picture and the step.
Picture crop(const Picture& p, int64_t x, int64_t y, int64_t w, int64_t h, const std::filesystem::path& file, const char* step) {
  if (x < 0 || y < 0 || w <= 0 || h <= 0 || x + w > p.w || y + h > p.h)
    fail(ErrorCode::kInvalidInput, "{}: {}: the window ({}, {}, {}x{}) is not inside the {}x{} picture", file.string(), step, x, y, w, h,
         p.w, p.h);
  Picture o{h, w, p.c, std::vector<uint8_t>(static_cast<size_t>(h * w * p.c))};
  for (int64_t r = 0; r < h; ++r)
    std::memcpy(o.px.data() + r * w * p.c, p.px.data() + ((y + r) * p.w + x) * p.c, static_cast<size_t>(w * p.c));
  return o;
}

}  // namespace

namespace {
Tensor preprocess(Picture p, const std::filesystem::path& picture, int pre_proc_type, int64_t channels, int64_t height,
                  int64_t width, const std::vector<double>& in_mean, const std::vector<double>& in_scale);
}  // namespace

Tensor tidlPreprocessPicture(const std::filesystem::path& picture, int pre_proc_type, int64_t channels, int64_t height, int64_t width,
                             const std::vector<double>& in_mean, const std::vector<double>& in_scale) {
  if (channels != 1 && channels != 3)
    fail(ErrorCode::kInvalidArgument, "{}: TIDL's pre-processing makes 1- or 3-channel pictures; the model's input has {} channels",
         picture.string(), channels);
  if (height < 1 || width < 1) fail(ErrorCode::kInvalidArgument, "{}: the input's height and width must be known", picture.string());
  return preprocess(decode(picture), picture, pre_proc_type, channels, height, width, in_mean, in_scale);
}

Tensor tidlPreprocessFrame(const uint8_t* bgr, int64_t frame_height, int64_t frame_width, const std::string& name, int pre_proc_type,
                           int64_t channels, int64_t height, int64_t width, const std::vector<double>& in_mean,
                           const std::vector<double>& in_scale) {
  if (channels != 1 && channels != 3)
    fail(ErrorCode::kInvalidArgument, "{}: TIDL's pre-processing makes 1- or 3-channel pictures; the model's input has {} channels",
         name, channels);
  if (height < 1 || width < 1) fail(ErrorCode::kInvalidArgument, "{}: the input's height and width must be known", name);
  if (frame_height < 1 || frame_width < 1 || frame_height * frame_width > (int64_t(1) << 28))
    fail(ErrorCode::kInvalidInput, "{}: a {}x{} frame", name, frame_width, frame_height);
  Picture p{frame_height, frame_width, 3, std::vector<uint8_t>(bgr, bgr + frame_height * frame_width * 3)};
  return preprocess(std::move(p), name, pre_proc_type, channels, height, width, in_mean, in_scale);
}

namespace {
Tensor preprocess(Picture p, const std::filesystem::path& picture, int pre_proc_type, int64_t channels, int64_t height,
                  int64_t width, const std::vector<double>& in_mean, const std::vector<double>& in_scale) {
  std::array<double, 3> sub{0, 0, 0}, mul{1, 1, 1}, div{1, 1, 1};
  bool clamp8 = false;  // the mean subtracted into TIDL's signed 8-bit input: [-128, 127]
  const int64_t H = height, W = width;
  switch (pre_proc_type) {
    case 0:  // Caffe-Jacinto: 256x256 INTER_AREA, then the centre H x W
    case 1:  // Caffe: the same, then (104, 117, 123) subtracted per plane (B, G, R)
      if (H > 256 || W > 256) fail(ErrorCode::kInvalidArgument, "{}: preProcType {} crops {}x{} from 256x256", picture.string(), pre_proc_type, W, H);
      p = crop(resizeArea(p, 256, 256), 128 - W / 2, 128 - H / 2, W, H, picture, "preProcType's crop");
      if (pre_proc_type == 1) sub = {104, 117, 123}, clamp8 = true;
      break;
    case 2: {  // TensorFlow: RGB, the centred 7/8 of the picture, INTER_AREA to H x W, - 128
      swapRedBlue(p);
      const int64_t cw = 7 * p.w / 8, chh = 7 * p.h / 8;  // (floor(0.875 * size), exact in float as TI computes it)
      p = resizeArea(crop(p, p.w / 2 - cw / 2, p.h / 2 - chh / 2, cw, chh, picture, "preProcType 2's crop"), H, W);
      sub = {128, 128, 128};
      clamp8 = true;
      break;
    }
    case 3:  // CIFAR 10: RGB, 32x32 INTER_AREA, then the centre H x W
      if (H > 32 || W > 32) fail(ErrorCode::kInvalidArgument, "{}: preProcType 3 crops {}x{} from 32x32", picture.string(), W, H);
      swapRedBlue(p);
      p = crop(resizeArea(p, 32, 32), 16 - W / 2, 16 - H / 2, W, H, picture, "preProcType 3's crop");
      break;
    case 4:  // JDetNet: no pre-processing beyond the picture brought to H x W (INTER_AREA), B, G, R
      p = resizeArea(p, H, W);
      break;
    case 5:  // RGB, the whole picture (the guide's ROI (0, 0, H, W)) to H x W, - 128
      swapRedBlue(p);
      p = resizeArea(p, H, W);
      sub = {128, 128, 128};
      clamp8 = true;
      break;
    case 6:  // ONNX: RGB, (v - mean) / std per plane (ImageNet's), resized to H x W where it differs (npuc's choice)
      swapRedBlue(p);
      p = resizeArea(p, H, W);
      sub = {123.68, 116.28, 103.53};
      div = {58.395, 57.12, 57.375};
      break;
    case 256:  // (v - inMean) * inScale per plane, in the decoded (B, G, R) order, resized where it differs
      if (in_mean.size() != static_cast<size_t>(channels) || in_scale.size() != static_cast<size_t>(channels))
        fail(ErrorCode::kInvalidArgument, "{}: preProcType 256 takes {} inMean and inScale values (one per channel)", picture.string(),
             channels);
      p = resizeArea(p, H, W);
      for (size_t c = 0; c < static_cast<size_t>(channels); ++c) sub[c] = in_mean[c], mul[c] = in_scale[c];
      break;
    default:
      fail(ErrorCode::kInvalidArgument, "preProcType {}: a configuration error in the guide's table (0..6 or 256)", pre_proc_type);
  }
  // A 1-channel input takes the first plane of the result (B, or R after the RGB swap), as TIDL's reader does.
  Tensor t(DType::kF32, {1, channels, H, W});
  float* o = t.data<float>();
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < H * W; ++i) {
      double v = static_cast<double>(p.px[static_cast<size_t>(i * p.c + c)]) - sub[static_cast<size_t>(c)];
      if (clamp8) v = std::clamp(v, -128.0, 127.0);
      o[c * H * W + i] = static_cast<float>(v * mul[static_cast<size_t>(c)] / div[static_cast<size_t>(c)]);
    }
  return t;
}
}  // namespace

SampleFolder sampleFolder(const std::filesystem::path& dir) {
  static constexpr std::array<const char*, 7> kPictures{".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm", ".tga"};
  SampleFolder f;
  for (const auto& d : std::filesystem::directory_iterator(dir)) {
    if (!d.is_regular_file()) continue;
    std::string ext = d.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext == ".npy") f.shards.push_back(d.path());
    if (std::find(kPictures.begin(), kPictures.end(), ext) != kPictures.end()) f.pictures.push_back(d.path());
  }
  std::sort(f.shards.begin(), f.shards.end());
  std::sort(f.pictures.begin(), f.pictures.end());
  if (!f.shards.empty() && !f.pictures.empty())
    fail(ErrorCode::kInvalidArgument, "the folder holds both .npy shards ({}, …) and pictures ({}, …); give a folder of one kind",
         f.shards[0].filename().string(), f.pictures[0].filename().string());
  if (f.shards.empty() && f.pictures.empty())
    fail(ErrorCode::kInvalidInput, "the folder holds no .npy files or pictures (a folder of shards: NAME=DIR, each DIR/*.npy "
         "samples stacked along the first axis; or of pictures: {})", fmt::join(kPictures, ", "));
  return f;
}

Tensor picturesAsSamples(const std::vector<std::filesystem::path>& pictures, const Shape& input, const PictureSamples& o) {
  if (input.size() != 4 || input[0] != 1)
    fail(ErrorCode::kInvalidArgument, "pictures are samples of an input of shape [1, C, H, W] or [1, H, W, C], not {}", shapeStr(input));
  const bool last = !(input[1] == 1 || input[1] == 3) && (input[3] == 1 || input[3] == 3);
  const int64_t C = last ? input[3] : input[1], H = last ? input[1] : input[2], W = last ? input[2] : input[3];
  if ((C != 1 && C != 3) || H < 1 || W < 1)
    fail(ErrorCode::kInvalidArgument, "pictures are samples of an input of 1 or 3 channels and a known height and width, not {}", shapeStr(input));
  for (auto [v, what] : {std::pair{&o.mean, "mean"}, std::pair{&o.scale, "scale"}})
    if (v->size() != 1 && v->size() != static_cast<size_t>(C))
      fail(ErrorCode::kInvalidArgument, "{} {} values for an input of {} channels (one, or one per channel)", v->size(), what, C);
  if (pictures.empty()) fail(ErrorCode::kInvalidArgument, "no pictures");
  Tensor t(DType::kF32, {static_cast<int64_t>(pictures.size()), last ? H : C, last ? W : H, last ? C : W});
  float* out = t.data<float>();
  for (const std::filesystem::path& file : pictures) {
    Picture p = resizeArea(decode(file), H, W);  // (B, G, R)
    if (C == 1) p = luma(p);
    else if (!o.bgr) swapRedBlue(p);
    for (int64_t i = 0; i < H * W; ++i)
      for (int64_t c = 0; c < C; ++c) {
        const size_t k = static_cast<size_t>(c);
        const double v = (static_cast<double>(p.px[static_cast<size_t>(i * C + c)]) - o.mean[o.mean.size() == 1 ? 0 : k]) *
                         o.scale[o.scale.size() == 1 ? 0 : k];
        out[last ? i * C + c : c * H * W + i] = static_cast<float>(v);
      }
    out += C * H * W;
  }
  return t;
}

}  // namespace npuc
