// Runtime::imageInput: a JPEG or PNG picture made into the camera frame an input holds (docs/simulator.md). For
// people without a camera: the conversion is a convenience, not part of the package's numerics.
#include "npuc/runtime.hpp"

#include "kernels/prepost.hpp"
#include "support/error.hpp"
#include "support/file.hpp"
#include "support/fp16.hpp"

#include <fmt/format.h>
#include <stb/stb_image.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace npuc {

namespace {

/// The picture as RGB HWC uint8, resized to h x w (bilinear, the resize_hwc kernel).
std::vector<uint8_t> loadRgb(const std::filesystem::path& file, int64_t h, int64_t w) {
  std::vector<uint8_t> bytes = readFileBytes(file);
  if (bytes.empty()) fail(ErrorCode::kInvalidInput, "{}: the file is empty", file.string());
  if (bytes.size() > (1u << 30)) fail(ErrorCode::kInvalidInput, "{}: pictures larger than 1 GiB are not read", file.string());
  int iw = 0, ih = 0, ch = 0;
  if (!stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &iw, &ih, &ch))
    fail(ErrorCode::kInvalidInput, "{}: not a JPEG or PNG picture npuc can read ({})", file.string(), stbi_failure_reason());
  if (int64_t(iw) * ih > (int64_t(1) << 28)) fail(ErrorCode::kInvalidInput, "{}: {}x{} pixels is too large", file.string(), iw, ih);
  std::unique_ptr<uint8_t, void (*)(void*)> px(stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &iw, &ih, &ch, 3),
                                               stbi_image_free);
  if (!px) fail(ErrorCode::kInvalidInput, "{}: cannot decode the picture ({})", file.string(), stbi_failure_reason());
  std::vector<uint8_t> out(static_cast<size_t>(h * w * 3));
  if (ih == h && iw == w) {
    std::memcpy(out.data(), px.get(), out.size());
  } else {
    kernels::ResizeGeometry g;
    g.in_height = ih;
    g.in_width = iw;
    g.channels = 3;
    g.out_height = h;
    g.out_width = w;
    kernels::resizeHwc(kernels::ResizeAlg::kBilinear, g, px.get(), out.data(), nullptr);
  }
  return out;
}

}  // namespace

Tensor Runtime::imageInput(const std::string& name, const std::filesystem::path& picture) const {
  auto it = std::find_if(inputs().begin(), inputs().end(), [&](const RuntimeTensor& r) { return r.name == name; });
  if (it == inputs().end()) fail(ErrorCode::kInvalidArgument, "the package has no input '{}'", name);
  const RuntimeImage& im = it->image;
  if (im.format.empty())
    fail(ErrorCode::kInvalidArgument, "input '{}' is not a camera frame (only inputs fed by pre-processing take pictures)", name);
  std::vector<uint8_t> rgb = loadRgb(picture, im.height, im.width);
  Tensor t(it->dtype, it->shape);
  int64_t n = im.height * im.width;
  kernels::YuvFormat yuv;
  if (kernels::yuvFormatFromName(im.format, &yuv)) {
    kernels::rgbToYuv(yuv, im.height, im.width, rgb.data(), static_cast<uint8_t*>(t.raw()));
    return t;
  }
  // RGB / BGR / GRAY, HWC or CHW, in the input's element type (0..255).
  int64_t C = im.format == "GRAY" ? 1 : 3;
  std::vector<float> v(static_cast<size_t>(n * C));
  for (int64_t p = 0; p < n; ++p) {
    const uint8_t* s = rgb.data() + p * 3;
    for (int64_t c = 0; c < C; ++c) {
      float x;
      if (C == 1) x = kernels::rgbToGrayPixel(s[0], s[1], s[2]);
      else x = s[im.format == "BGR" ? 2 - c : c];
      v[static_cast<size_t>(im.chw ? c * n + p : p * C + c)] = x;
    }
  }
  for (size_t i = 0; i < v.size(); ++i) {
    switch (it->dtype) {
      case DType::kU8: static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(v[i]); break;
      case DType::kF16: static_cast<uint16_t*>(t.raw())[i] = floatToHalf(v[i]); break;
      case DType::kF32: static_cast<float*>(t.raw())[i] = v[i]; break;
      default: fail(ErrorCode::kInvalidArgument, "input '{}' is {}: pictures fill uint8, float16 or float32 inputs", name, dtypeName(it->dtype));
    }
  }
  return t;
}

}  // namespace npuc
