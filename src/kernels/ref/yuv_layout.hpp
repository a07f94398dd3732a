// Internal to the kernels: where each YUV format keeps its samples, and OpenCV's BT.601 fixed-point constants —
// shared by the reference conv_yuv2rgb (ref/prepost_ref.cpp) and its fast variant (x86/prepost_fast.cpp).
#pragma once

#include "kernels/prepost.hpp"
#include "support/error.hpp"

#include <cstdint>

namespace npuc::kernels::detail {

// ---------------------------------------------------------------------------------------------------------
// YUV layouts.

/// Where pixel (r, x) finds its samples: Y at y_row * r + y_pair * (x / 2) + (x odd ? y1 : y0); U and V at
/// c_row * cr + c_pair * (x / 2) + u / v, with cr = r (4:2:2) or r / 2 (4:2:0).
struct YuvLayoutDesc {
  int64_t y_row = 0, y_pair = 0, y0 = 0, y1 = 0;
  int64_t c_row = 0, c_pair = 0, u = 0, v = 0;
  bool chroma420 = false;
  int64_t size = 0;  // bytes read
};

inline YuvLayoutDesc yuvLayout(YuvFormat f, int64_t H, int64_t W) {
  if (!isYuvFormat(static_cast<int32_t>(f)))
    fail(ErrorCode::kInvalidArgument, "yuvToRgb: unknown DIN_YUV_FORMAT {}", static_cast<int32_t>(f));
  if (W <= 0 || W % 2 != 0 || H <= 0)
    fail(ErrorCode::kInvalidArgument, "yuvToRgb: size {}x{} (width must be even and positive, height positive)", H,
         W);
  const int64_t CH = (H + 1) / 2, plane = H * W;
  YuvLayoutDesc d;
  auto packed = [&](int64_t y0, int64_t u, int64_t y1, int64_t v, bool c420) {
    d.y_row = 2 * W, d.y_pair = 4, d.y0 = y0, d.y1 = y1;
    d.c_row = c420 ? 4 * W : 2 * W, d.c_pair = 4, d.u = u, d.v = v;
    d.chroma420 = c420;
    d.size = 2 * plane;
  };
  auto planar = [&](int64_t c_row, int64_t c_pair, int64_t u, int64_t v, int64_t size) {
    d.y_row = W, d.y_pair = 2, d.y0 = 0, d.y1 = 1;
    d.c_row = c_row, d.c_pair = c_pair, d.u = u, d.v = v;
    d.chroma420 = true;
    d.size = size;
  };
  switch (f) {
    case YuvFormat::kYUYV: packed(0, 1, 2, 3, false); break;
    case YuvFormat::kYVYU: packed(0, 3, 2, 1, false); break;
    case YuvFormat::kUYVY: packed(1, 0, 3, 2, false); break;
    case YuvFormat::kVUYY: packed(3, 1, 2, 0, false); break;
    case YuvFormat::kYUYV420: packed(0, 1, 2, 3, true); break;
    case YuvFormat::kUYVY420: packed(1, 0, 3, 2, true); break;
    case YuvFormat::kYV12: planar(W / 2, 1, plane + CH * (W / 2), plane, plane + 2 * CH * (W / 2)); break;
    case YuvFormat::kIYUV: planar(W / 2, 1, plane, plane + CH * (W / 2), plane + 2 * CH * (W / 2)); break;
    case YuvFormat::kNV12: planar(W, 2, plane, plane + 1, plane + CH * W); break;
    case YuvFormat::kNV21: planar(W, 2, plane + 1, plane, plane + CH * W); break;
    case YuvFormat::kIMC1: planar(W, 1, plane + CH * W, plane, plane + 2 * CH * W); break;
    case YuvFormat::kIMC3: planar(W, 1, plane, plane + CH * W, plane + 2 * CH * W); break;
    case YuvFormat::kIMC2: planar(W, 1, plane + W / 2, plane, plane + CH * W); break;
    case YuvFormat::kIMC4: planar(W, 1, plane, plane + W / 2, plane + CH * W); break;
  }
  return d;
}

// OpenCV's ITU-R BT.601 fixed point (imgproc color_yuv: ITUR_BT_601_*).
inline constexpr int kCY = 1220542, kCUB = 2116026, kCUG = -409993, kCVG = -852492, kCVR = 1673527, kShift = 20;

}  // namespace npuc::kernels::detail
