// Reference AIPP stage (kernels/aipp.hpp): the parameter block's byte layout, its rules and the per-image pipeline.
// Integer stages (byte order, crop, CSC, resize, rotation) are exact; DTC is a fixed sequence of float32 operations
// per element, so the results are bit-identical for every thread count.
#include "kernels/aipp.hpp"

#include "kernels/prepost.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace npuc::kernels {

namespace {

// Little-endian field access, independent of the host's byte order.
template <class T> T getLE(const uint8_t* p) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i) u = static_cast<U>(u | (static_cast<U>(p[i]) << (8 * i)));
  return static_cast<T>(u);
}
template <class T> void putLE(uint8_t* p, T v) {
  using U = std::make_unsigned_t<T>;
  U u = static_cast<U>(v);
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(u >> (8 * i));
}

// Offsets in kAippDynamicPara (the seed's struct, natural alignment).
constexpr size_t kOffFormat = 0, kOffCsc = 1, kOffRbuv = 2, kOffAx = 3, kOffBatchNum = 4, kOffSrcW = 8, kOffSrcH = 12,
                 kOffMatrix = 16, kOffOutBias = 40, kOffInBias = 43;
// Offsets in kAippDynamicBatchPara: the four switches, then from kOffCropX twelve int32 fields in struct order
// (cropStartPosW/H, cropSizeW/H, scfInputSizeW/H, scfOutputSizeW/H, paddingSizeTop/Bottom/Left/Right), then the
// four-channel arrays.
constexpr size_t kOffCrop = 0, kOffScf = 1, kOffPad = 2, kOffRot = 3, kOffCropX = 8, kOffMean = 56, kOffMin = 64, kOffVar = 72;

size_t batchOffset(size_t i) { return i == 0 ? kAippBatchOffset : kAippParaSize + (i - 1) * kAippBatchParaSize; }

using detail::parallelUnits;

inline uint8_t sat8(int v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

/// Sizes of one image through the stages.
struct Geometry {
  int64_t cx = 0, cy = 0, cw = 0, ch = 0;  // crop window (the whole source when crop is off)
  int64_t rw = 0, rh = 0;                  // after scf
  int64_t ow = 0, oh = 0;                  // after rotation
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;  // padding (0 when off)
};

Geometry geometry(const AippParams& p, const AippBatchParams& b) {
  Geometry g;
  if (b.crop) g = {b.crop_x, b.crop_y, b.crop_w, b.crop_h};
  else g = {0, 0, p.src_w, p.src_h};
  g.rw = b.scf ? b.scf_out_w : g.cw;
  g.rh = b.scf ? b.scf_out_h : g.ch;
  bool quarter = b.rotate == 1 || b.rotate == 3;
  g.ow = quarter ? g.rh : g.rw;
  g.oh = quarter ? g.rw : g.rh;
  if (b.padding) {
    g.pt = b.pad_top;
    g.pb = b.pad_bottom;
    g.pl = b.pad_left;
    g.pr = b.pad_right;
  }
  return g;
}

bool finiteHalf(uint16_t h) { return (h & 0x7C00u) != 0x7C00u; }

}  // namespace

std::pair<int64_t, int64_t> aippOutputSize(const AippParams& p, size_t i) {
  const Geometry g = geometry(p, p.batch.at(i));
  return {g.pt + g.oh + g.pb, g.pl + g.ow + g.pr};
}

bool isAippFormat(int code) { return code >= 1 && code <= 4; }

const char* aippFormatName(AippFormat f) {
  switch (f) {
    case AippFormat::kYUV420SP_U8: return "YUV420SP_U8";
    case AippFormat::kXRGB8888_U8: return "XRGB8888_U8";
    case AippFormat::kRGB888_U8: return "RGB888_U8";
    case AippFormat::kYUV400_U8: return "YUV400_U8";
  }
  return nullptr;
}

bool aippFormatFromName(const std::string& name, AippFormat* f) {
  for (int c = 1; c <= 4; ++c)
    if (name == aippFormatName(static_cast<AippFormat>(c))) {
      *f = static_cast<AippFormat>(c);
      return true;
    }
  return false;
}

int64_t aippImageBytes(AippFormat f, int64_t width, int64_t height) {
  if (width < 1 || height < 1) return 0;
  switch (f) {
    case AippFormat::kYUV420SP_U8: return (width % 2 || height % 2) ? 0 : width * height * 3 / 2;
    case AippFormat::kXRGB8888_U8: return width * height * 4;
    case AippFormat::kRGB888_U8: return width * height * 3;
    case AippFormat::kYUV400_U8: return width * height;
  }
  return 0;
}

int aippChannels(AippFormat f) { return f == AippFormat::kYUV400_U8 ? 1 : 3; }

std::array<float, 4> aippPaddingValues(float all, const std::vector<float>& per_channel) {
  if (per_channel.empty()) return {all, all, all, all};
  if (per_channel.size() != 4) fail(ErrorCode::kInvalidArgument, "AIPP padding_values: 4 values (channels 0..3), got {}", per_channel.size());
  return {per_channel[0], per_channel[1], per_channel[2], per_channel[3]};
}

bool aippChannelsFit(AippFormat f, int64_t channels) {
  return channels == aippChannels(f) || (f == AippFormat::kXRGB8888_U8 && channels == 4);
}

std::vector<uint8_t> encodeAipp(const AippParams& p) {
  std::vector<uint8_t> b(aippBlockSize(static_cast<int64_t>(p.batch.size())), 0);
  b[kOffFormat] = p.input_format;
  putLE<int8_t>(&b[kOffCsc], p.csc);
  putLE<int8_t>(&b[kOffRbuv], p.rbuv_swap);
  putLE<int8_t>(&b[kOffAx], p.ax_swap);
  putLE<int8_t>(&b[kOffBatchNum], static_cast<int8_t>(p.batch.size()));
  putLE<int32_t>(&b[kOffSrcW], p.src_w);
  putLE<int32_t>(&b[kOffSrcH], p.src_h);
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 3; ++c) putLE<int16_t>(&b[kOffMatrix + 2 * (3 * r + c)], p.matrix[r][c]);
  for (size_t i = 0; i < 3; ++i) {
    b[kOffOutBias + i] = p.output_bias[i];
    b[kOffInBias + i] = p.input_bias[i];
  }
  for (size_t i = 0; i < p.batch.size(); ++i) {
    uint8_t* q = &b[batchOffset(i)];
    const AippBatchParams& r = p.batch[i];
    putLE<int8_t>(q + kOffCrop, r.crop);
    putLE<int8_t>(q + kOffScf, r.scf);
    putLE<int8_t>(q + kOffPad, r.padding);
    putLE<int8_t>(q + kOffRot, r.rotate);
    const int32_t v[12] = {r.crop_x, r.crop_y, r.crop_w, r.crop_h, r.scf_in_w, r.scf_in_h,
                           r.scf_out_w, r.scf_out_h, r.pad_top, r.pad_bottom, r.pad_left, r.pad_right};
    for (size_t k = 0; k < 12; ++k) putLE<int32_t>(q + kOffCropX + 4 * k, v[k]);
    for (size_t c = 0; c < 4; ++c) {
      putLE<int16_t>(q + kOffMean + 2 * c, r.mean[c]);
      putLE<uint16_t>(q + kOffMin + 2 * c, r.min[c]);
      putLE<uint16_t>(q + kOffVar + 2 * c, r.var_reci[c]);
    }
  }
  return b;
}

AippParams decodeAipp(const uint8_t* data, size_t size) {
  if (size < kAippParaSize)
    fail(ErrorCode::kInvalidInput, "aipp.block.size: an AIPP parameter block is at least {} bytes (kAippDynamicPara), got {}",
         kAippParaSize, size);
  int batch = getLE<int8_t>(data + kOffBatchNum);
  if (batch < 1) fail(ErrorCode::kInvalidInput, "aipp.block.size: batchNum is {}, must be at least 1", batch);
  if (size != aippBlockSize(batch))
    fail(ErrorCode::kInvalidInput,
         "aipp.block.size: batchNum {} needs {} bytes (kAippDynamicPara + {} x kAippDynamicBatchPara), got {}", batch,
         aippBlockSize(batch), batch - 1, size);
  AippParams p;
  p.input_format = data[kOffFormat];
  p.csc = getLE<int8_t>(data + kOffCsc);
  p.rbuv_swap = getLE<int8_t>(data + kOffRbuv);
  p.ax_swap = getLE<int8_t>(data + kOffAx);
  p.src_w = getLE<int32_t>(data + kOffSrcW);
  p.src_h = getLE<int32_t>(data + kOffSrcH);
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 3; ++c) p.matrix[r][c] = getLE<int16_t>(data + kOffMatrix + 2 * (3 * r + c));
  for (size_t i = 0; i < 3; ++i) {
    p.output_bias[i] = data[kOffOutBias + i];
    p.input_bias[i] = data[kOffInBias + i];
  }
  p.batch.resize(static_cast<size_t>(batch));
  for (size_t i = 0; i < p.batch.size(); ++i) {
    const uint8_t* q = data + batchOffset(i);
    AippBatchParams& r = p.batch[i];
    r.crop = getLE<int8_t>(q + kOffCrop);
    r.scf = getLE<int8_t>(q + kOffScf);
    r.padding = getLE<int8_t>(q + kOffPad);
    r.rotate = getLE<int8_t>(q + kOffRot);
    int32_t* v[12] = {&r.crop_x, &r.crop_y, &r.crop_w, &r.crop_h, &r.scf_in_w, &r.scf_in_h,
                      &r.scf_out_w, &r.scf_out_h, &r.pad_top, &r.pad_bottom, &r.pad_left, &r.pad_right};
    for (size_t k = 0; k < 12; ++k) *v[k] = getLE<int32_t>(q + kOffCropX + 4 * k);
    for (size_t c = 0; c < 4; ++c) {
      r.mean[c] = getLE<int16_t>(q + kOffMean + 2 * c);
      r.min[c] = getLE<uint16_t>(q + kOffMin + 2 * c);
      r.var_reci[c] = getLE<uint16_t>(q + kOffVar + 2 * c);
    }
  }
  return p;
}

std::string checkAipp(const AippParams& p, const AippSetup& s) {
  if (!isAippFormat(p.input_format))
    return fmt::format("aipp.format: inputFormat {} is not one of 1 YUV420SP_U8, 2 XRGB8888_U8, 3 RGB888_U8, 4 YUV400_U8",
                       p.input_format);
  auto f = static_cast<AippFormat>(p.input_format);
  const char* fname = aippFormatName(f);
  for (auto [name, v] : {std::pair{"cscSwitch", p.csc}, {"rbuvSwapSwitch", p.rbuv_swap}, {"axSwapSwitch", p.ax_swap}})
    if (v != 0 && v != 1) return fmt::format("aipp.switch: {} is {}, must be 0 or 1", name, v);
  if (static_cast<int64_t>(p.batch.size()) != s.n)
    return fmt::format("aipp.batch: batchNum is {}, the model input has batch {} (one record per image)", p.batch.size(), s.n);
  if (p.src_w < 1 || p.src_h < 1 || p.src_w > 4096 || p.src_h > 4096)
    return fmt::format("aipp.src_size: source image {}x{} (W x H), each side must be in [1, 4096]", p.src_w, p.src_h);
  int64_t bytes = aippImageBytes(f, p.src_w, p.src_h);
  if (bytes == 0) return fmt::format("aipp.src_size: a {} source needs an even width and height, got {}x{}", fname, p.src_w, p.src_h);
  if (bytes > s.image_bytes)
    return fmt::format("aipp.src_size: a {}x{} {} image is {} bytes, more than the {} bytes per image of the frame "
                       "(max_src_image_size, or the smaller frame given)", p.src_w, p.src_h, fname, bytes, s.image_bytes);
  if (p.csc && f == AippFormat::kYUV400_U8) return "aipp.csc: cscSwitch must be 0 for YUV400_U8 (one channel, no color to convert)";
  if (p.ax_swap && f != AippFormat::kXRGB8888_U8)
    return fmt::format("aipp.ax_swap: axSwapSwitch applies to XRGB8888_U8 only, the format is {}", fname);
  if (!aippChannelsFit(f, s.channels))
    return fmt::format("aipp.channels: {} gives {} channel(s){}, the model input has {}", fname, aippChannels(f),
                       f == AippFormat::kXRGB8888_U8 ? " (or 4 with its X byte)" : "", s.channels);
  for (size_t i = 0; i < p.batch.size(); ++i) {
    const AippBatchParams& b = p.batch[i];
    std::string img = p.batch.size() > 1 ? fmt::format("image {}: ", i) : "";
    for (auto [name, v] : {std::pair{"cropSwitch", b.crop}, {"scfSwitch", b.scf}})
      if (v != 0 && v != 1) return fmt::format("aipp.switch: {}{} is {}, must be 0 or 1", img, name, v);
    if (b.padding < 0 || b.padding > 4)
      return fmt::format("aipp.padding: {}paddingSwitch is {}, must be 0 (off), 1 (padding value), 2 (edge copy), 3 (block copy) "
                         "or 4 (mirror copy)", img, b.padding);
    if (b.rotate < 0 || b.rotate > 3)
      return fmt::format("aipp.rotate: {}rotateSwitch is {}, must be 0..3 (0, 90, 180, 270 degrees clockwise)", img, b.rotate);
    if (b.crop) {
      if (b.crop_w < 1 || b.crop_h < 1 || b.crop_x < 0 || b.crop_y < 0 ||
          int64_t{b.crop_x} + b.crop_w > p.src_w || int64_t{b.crop_y} + b.crop_h > p.src_h)
        return fmt::format("aipp.crop: {}crop window {}x{} at ({}, {}) (W x H at (x, y)) is not inside the {}x{} source", img,
                           b.crop_w, b.crop_h, b.crop_x, b.crop_y, p.src_w, p.src_h);
      if (f == AippFormat::kYUV420SP_U8 && ((b.crop_x | b.crop_y | b.crop_w | b.crop_h) & 1))
        return fmt::format("aipp.crop: {}a YUV420SP_U8 crop needs even positions and sizes, got {}x{} at ({}, {})", img, b.crop_w,
                           b.crop_h, b.crop_x, b.crop_y);
    }
    Geometry g = geometry(p, b);
    if (b.scf) {
      if (b.scf_in_w != g.cw || b.scf_in_h != g.ch)
        return fmt::format("aipp.scf: {}scfInputSize {}x{} must equal the {} image, {}x{}", img, b.scf_in_w, b.scf_in_h,
                           b.crop ? "cropped" : "source", g.cw, g.ch);
      if (b.scf_out_w < 1 || b.scf_out_h < 1 || b.scf_out_w > 4096 || b.scf_out_h > 4096 ||
          int64_t{b.scf_out_w} * 16 < g.cw || int64_t{b.scf_out_h} * 16 < g.ch || b.scf_out_w > 16 * g.cw ||
          b.scf_out_h > 16 * g.ch)
        return fmt::format("aipp.scf: {}resizing {}x{} to {}x{}: the output sides must be in [1, 4096] and the scale in [1/16, 16]",
                           img, g.cw, g.ch, b.scf_out_w, b.scf_out_h);
    }
    if (b.padding) {
      for (auto [name, v] : {std::pair{"paddingSizeTop", b.pad_top}, {"paddingSizeBottom", b.pad_bottom},
                             {"paddingSizeLeft", b.pad_left}, {"paddingSizeRight", b.pad_right}})
        if (v < 0 || v > 32) return fmt::format("aipp.padding: {}{} is {}, must be in [0, 32]", img, name, v);
    }
    for (int c = 0; c < s.channels; ++c)
      if (!finiteHalf(b.min[static_cast<size_t>(c)]) || !finiteHalf(b.var_reci[static_cast<size_t>(c)]))
        return fmt::format("aipp.dtc: {}dtcPixelMinChn{} / dtcPixelVarReciChn{} must be finite float16 values (0x{:04x}, 0x{:04x})",
                           img, c, c, b.min[static_cast<size_t>(c)], b.var_reci[static_cast<size_t>(c)]);
    // Block and mirror copies take each padding from the image's own rows / columns next to it.
    if ((b.padding == 3 || b.padding == 4) && (std::max(g.pt, g.pb) > g.oh || std::max(g.pl, g.pr) > g.ow))
      return fmt::format("aipp.padding: {}paddingSwitch {} ({} copy) copies the padding from the image: each padding size must be "
                         "at most the image's side ({}x{}), got t{} b{} l{} r{}", img, b.padding, b.padding == 3 ? "block" : "mirror",
                         g.ow, g.oh, g.pt, g.pb, g.pl, g.pr);
    int64_t H = g.pt + g.oh + g.pb, W = g.pl + g.ow + g.pr;
    if (H != s.height || W != s.width)
      return fmt::format("aipp.output_size: {}the stages give {}x{} (W x H: {}{}{}{}), the model input is {}x{}", img, W, H,
                         b.crop ? fmt::format("crop {}x{}", g.cw, g.ch) : fmt::format("source {}x{}", g.cw, g.ch),
                         b.scf ? fmt::format(", scf {}x{}", g.rw, g.rh) : std::string(),
                         b.rotate ? fmt::format(", rotated {}", 90 * b.rotate) : std::string(),
                         b.padding ? fmt::format(", padding t{} b{} l{} r{}", g.pt, g.pb, g.pl, g.pr) : std::string(),
                         s.width, s.height);
  }
  return {};
}

namespace {

/// Stage A for one row of the crop window (source row sy): the pixels' channels in order after the swaps, through
/// CSC, HWC uint8 — kC of them: with 4 (XRGB8888_U8 only), the frame's X byte follows, untouched. Specialised per
/// format, CSC switch and channel count so that the per-pixel loop has no branches.
template <AippFormat F, bool kCsc, int kC = 3>
void channelsRow(const AippParams& p, const Geometry& g, const uint8_t* src, int64_t sy, uint8_t* out) {
  const int64_t W = p.src_w, H = p.src_h;
  const int swap = p.rbuv_swap ? 1 : 0;
  const int m00 = p.matrix[0][0], m01 = p.matrix[0][1], m02 = p.matrix[0][2];
  const int m10 = p.matrix[1][0], m11 = p.matrix[1][1], m12 = p.matrix[1][2];
  const int m20 = p.matrix[2][0], m21 = p.matrix[2][1], m22 = p.matrix[2][2];
  const int ib0 = p.input_bias[0], ib1 = p.input_bias[1], ib2 = p.input_bias[2];
  const int ob0 = p.output_bias[0], ob1 = p.output_bias[1], ob2 = p.output_bias[2];
  const uint8_t* row = src + sy * W;
  for (int64_t x = 0; x < g.cw; ++x) {
    const int64_t sx = g.cx + x;
    int a, b, c;
    if constexpr (F == AippFormat::kYUV400_U8) {
      out[x] = row[sx];
      continue;
    } else if constexpr (F == AippFormat::kYUV420SP_U8) {
      const uint8_t* uv = src + W * H + (sy / 2) * W + (sx / 2) * 2;
      a = row[sx];
      b = uv[swap];       // U (V with rbuv_swap: NV21)
      c = uv[1 - swap];
    } else {
      constexpr int bpp = F == AippFormat::kRGB888_U8 ? 3 : 4;
      const uint8_t* px = src + (sy * W + sx) * bpp + (bpp == 4 && !p.ax_swap ? 1 : 0);
      a = px[2 * swap];   // R (B with rbuv_swap)
      b = px[1];
      c = px[2 - 2 * swap];
      if constexpr (kC == 4) out[x * 4 + 3] = p.ax_swap ? px[3] : px[-1];  // X: last in RGBX (ax_swap), first in XRGB
    }
    uint8_t* o = out + x * kC;
    if constexpr (!kCsc) {
      o[0] = static_cast<uint8_t>(a), o[1] = static_cast<uint8_t>(b), o[2] = static_cast<uint8_t>(c);
    } else if constexpr (F == AippFormat::kYUV420SP_U8) {  // YUV -> RGB: the input biases come off first.
      const int y = a - ib0, u = b - ib1, v = c - ib2;
      o[0] = sat8((m00 * y + m01 * u + m02 * v) >> 8);
      o[1] = sat8((m10 * y + m11 * u + m12 * v) >> 8);
      o[2] = sat8((m20 * y + m21 * u + m22 * v) >> 8);
    } else {  // RGB -> YUV: the output bias goes on last.
      o[0] = sat8(((m00 * a + m01 * b + m02 * c) >> 8) + ob0);
      o[1] = sat8(((m10 * a + m11 * b + m12 * c) >> 8) + ob1);
      o[2] = sat8(((m20 * a + m21 * b + m22 * c) >> 8) + ob2);
    }
  }
}

/// Stage A: the crop window of the source, its channels in order after the swaps, through CSC (HWC uint8, C channels:
/// aippChannelsFit).
void sourceToChannels(const AippParams& p, const Geometry& g, const uint8_t* src, uint8_t* dst, int64_t C, ThreadPool* pool) {
  const auto f = static_cast<AippFormat>(p.input_format);
  auto run = [&](auto row) {
    parallelUnits(pool, g.ch, g.cw * 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) row(p, g, src, g.cy + r, dst + r * g.cw * C);
    });
  };
  switch (f) {
    case AippFormat::kYUV420SP_U8:
      return p.csc ? run(channelsRow<AippFormat::kYUV420SP_U8, true>) : run(channelsRow<AippFormat::kYUV420SP_U8, false>);
    case AippFormat::kXRGB8888_U8:
      if (C == 4)
        return p.csc ? run(channelsRow<AippFormat::kXRGB8888_U8, true, 4>) : run(channelsRow<AippFormat::kXRGB8888_U8, false, 4>);
      return p.csc ? run(channelsRow<AippFormat::kXRGB8888_U8, true>) : run(channelsRow<AippFormat::kXRGB8888_U8, false>);
    case AippFormat::kRGB888_U8:
      return p.csc ? run(channelsRow<AippFormat::kRGB888_U8, true>) : run(channelsRow<AippFormat::kRGB888_U8, false>);
    case AippFormat::kYUV400_U8: return run(channelsRow<AippFormat::kYUV400_U8, false>);
  }
}

/// Stage C: rotation by 90 * rot degrees clockwise of an h x w x C image.
void rotate(int rot, int64_t h, int64_t w, int C, const uint8_t* src, uint8_t* dst, ThreadPool* pool) {
  const int64_t oh = (rot % 2) ? w : h, ow = (rot % 2) ? h : w;
  parallelUnits(pool, oh, ow * C, [&](int64_t y0, int64_t y1) {
    for (int64_t y = y0; y < y1; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        int64_t sy, sx;
        switch (rot) {
          case 1: sy = h - 1 - x, sx = y; break;
          case 2: sy = h - 1 - y, sx = w - 1 - x; break;
          default: sy = x, sx = w - 1 - y; break;
        }
        std::memcpy(dst + (y * ow + x) * C, src + (sy * w + sx) * C, static_cast<size_t>(C));
      }
  });
}

inline void storeOut(float v, float* d) { *d = v; }
inline void storeOut(float v, uint16_t* d) { *d = floatToHalf(v); }

/// The source row (column) a copying padding mode reads for position i of an image side of n (padding p_begin
/// before it, p_end after it, each at most n): 2 edge copy (the nearest edge: aaa|abc), 3 block copy (the p rows
/// next to the edge, in order: the first p_begin before the image, the last p_end after it: ab|abc), 4 mirror copy
/// (reflected about the edge, the edge repeated: ba|abc, OpenCV's BORDER_REFLECT). Inside the image: i.
int64_t paddedSource(int mode, int64_t i, int64_t n, int64_t p_begin, int64_t p_end) {
  if (i >= 0 && i < n) return i;
  if (mode == 2) return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == 3) return i < 0 ? i + p_begin : i - p_end;
  return i < 0 ? -1 - i : 2 * n - 1 - i;  // mode 4
}

template <class Out>
void aippImpl(const AippParams& p, const AippSetup& s, const uint8_t* frame, Out* dst, ThreadPool* pool) {
  if (std::string why = checkAipp(p, s); !why.empty()) fail(ErrorCode::kInvalidArgument, "{}", why);
  const int C = static_cast<int>(s.channels);
  std::vector<uint8_t> a, r, o;
  for (int64_t n = 0; n < s.n; ++n) {
    const AippBatchParams& b = p.batch[static_cast<size_t>(n)];
    const Geometry g = geometry(p, b);
    a.resize(static_cast<size_t>(g.cw * g.ch * C));
    sourceToChannels(p, g, frame + n * s.image_bytes, a.data(), C, pool);
    const uint8_t* img = a.data();
    if (b.scf) {
      r.resize(static_cast<size_t>(g.rw * g.rh * C));
      ResizeGeometry rg{g.ch, g.cw, C, g.rh, g.rw};
      resizeHwc(ResizeAlg::kBilinear, rg, img, r.data(), pool);
      img = r.data();
    }
    if (b.rotate) {
      o.resize(static_cast<size_t>(g.ow * g.oh * C));
      rotate(b.rotate, g.rh, g.rw, C, img, o.data(), pool);
      img = o.data();
    }
    // Stage D: DTC and padding, into NCHW.
    float mn[4], var[4];
    for (size_t c = 0; c < 4; ++c) {
      mn[c] = halfToFloat(b.min[c]);
      var[c] = halfToFloat(b.var_reci[c]);
    }
    Out* out = dst + n * C * s.height * s.width;
    const int64_t H = s.height, W = s.width;
    parallelUnits(pool, C * H, W * 4, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t c = u / H, y = u % H;
        const auto cs = static_cast<size_t>(c);
        Out* row = out + u * W;
        int64_t iy = y - g.pt;
        bool pad_row = iy < 0 || iy >= g.oh;
        if (b.padding >= 2) iy = paddedSource(b.padding, iy, g.oh, g.pt, g.pb), pad_row = false;
        for (int64_t x = 0; x < W; ++x) {
          int64_t ix = x - g.pl;
          bool pad = pad_row || ix < 0 || ix >= g.ow;
          if (b.padding >= 2) ix = paddedSource(b.padding, ix, g.ow, g.pl, g.pr), pad = false;
          if (pad) {
            storeOut(s.padding_value[cs], row + x);
            continue;
          }
          float t = static_cast<float>(int{img[(iy * g.ow + ix) * C + c]} - int{b.mean[cs]});
          t = t - mn[cs];
          t = t * var[cs];
          storeOut(t, row + x);
        }
      }
    });
  }
}

}  // namespace

void aipp(const AippParams& p, const AippSetup& s, const uint8_t* frame, float* dst, ThreadPool* pool) {
  aippImpl(p, s, frame, dst, pool);
}
void aipp(const AippParams& p, const AippSetup& s, const uint8_t* frame, uint16_t* dst_fp16, ThreadPool* pool) {
  aippImpl(p, s, frame, dst_fp16, pool);
}

}  // namespace npuc::kernels
