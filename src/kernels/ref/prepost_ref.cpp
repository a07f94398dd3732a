// Reference kernels of the DRP-AI pre/post-processing operations (kernels/prepost.hpp). Every output element is
// computed by one thread with integer arithmetic or a fixed sequence of float32 operations, so the results are
// bit-identical for every thread count. docs/prepost-kernels.md gives the formulas and the OpenCV agreement.
#include "kernels/prepost.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/ref/resize_taps.hpp"
#include "kernels/ref/yuv_layout.hpp"

#include "kernels/layers.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace npuc::kernels {

namespace {

using detail::parallelUnits;
using detail::YuvLayoutDesc;
using detail::yuvLayout;
using detail::kCY;
using detail::kCUB;
using detail::kCUG;
using detail::kCVG;
using detail::kCVR;
using detail::kShift;

void checkNonNegative(const char* what, std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (d < 0) fail(ErrorCode::kInvalidArgument, "{}: negative size {}", what, d);
}

inline uint8_t sat8(int v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// conv_yuv2rgb.

bool isYuvFormat(int32_t code) { return (code >= 0 && code <= 3) || (code >= 4096 && code <= 4105); }

int64_t yuvBufferSize(YuvFormat f, int64_t height, int64_t width) { return yuvLayout(f, height, width).size; }

Rgb8 yuvPixelToRgb(uint8_t y, uint8_t u, uint8_t v) {
  const int c = std::max(0, int{y} - 16) * kCY, uu = int{u} - 128, vv = int{v} - 128, h = 1 << (kShift - 1);
  return {sat8((c + h + kCVR * vv) >> kShift), sat8((c + h + kCVG * vv + kCUG * uu) >> kShift),
          sat8((c + h + kCUB * uu) >> kShift)};
}

const char* yuvFormatName(YuvFormat f) {
  switch (f) {
    case YuvFormat::kYUYV: return "YUYV";
    case YuvFormat::kYVYU: return "YVYU";
    case YuvFormat::kUYVY: return "UYVY";
    case YuvFormat::kVUYY: return "VUYY";
    case YuvFormat::kYUYV420: return "YUYV420";
    case YuvFormat::kUYVY420: return "UYVY420";
    case YuvFormat::kYV12: return "YV12";
    case YuvFormat::kIYUV: return "IYUV";
    case YuvFormat::kNV12: return "NV12";
    case YuvFormat::kNV21: return "NV21";
    case YuvFormat::kIMC1: return "IMC1";
    case YuvFormat::kIMC2: return "IMC2";
    case YuvFormat::kIMC3: return "IMC3";
    case YuvFormat::kIMC4: return "IMC4";
  }
  return nullptr;
}

bool yuvFormatFromName(const std::string& name, YuvFormat* f) {
  for (int32_t c : {0, 1, 2, 3, 4096, 4097, 4098, 4099, 4100, 4101, 4102, 4103, 4104, 4105})
    if (name == yuvFormatName(static_cast<YuvFormat>(c))) {
      *f = static_cast<YuvFormat>(c);
      return true;
    }
  return false;
}

void rgbToYuv(YuvFormat f, int64_t height, int64_t width, const uint8_t* rgb, uint8_t* dst) {
  const YuvLayoutDesc d = yuvLayout(f, height, width);
  std::memset(dst, 0, static_cast<size_t>(d.size));
  auto px = [&](int64_t r, int64_t c) { return rgb + (r * width + c) * 3; };
  auto lumaOf = [](const uint8_t* p) { return 16.0 + 0.256788 * p[0] + 0.504129 * p[1] + 0.097906 * p[2]; };
  auto sat = [](double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); };
  for (int64_t r = 0; r < height; ++r) {
    uint8_t* yrow = dst + r * d.y_row;
    for (int64_t k = 0; k < width / 2; ++k) {
      yrow[k * d.y_pair + d.y0] = sat(lumaOf(px(r, 2 * k)));
      yrow[k * d.y_pair + d.y1] = sat(lumaOf(px(r, 2 * k + 1)));
    }
    // Chroma: the mean of the pixels a sample covers (2 per row; 2 rows for 4:2:0, the second row when there is one).
    if (d.chroma420 && r % 2) continue;
    int64_t rows = d.chroma420 && r + 1 < height ? 2 : 1;
    uint8_t* crow = dst + (d.chroma420 ? r / 2 : r) * d.c_row;
    for (int64_t k = 0; k < width / 2; ++k) {
      double R = 0, G = 0, B = 0;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          const uint8_t* p = px(r + i, 2 * k + j);
          R += p[0], G += p[1], B += p[2];
        }
      double n = static_cast<double>(2 * rows);
      R /= n, G /= n, B /= n;
      crow[k * d.c_pair + d.u] = sat(128.0 - 0.148223 * R - 0.290993 * G + 0.439216 * B);
      crow[k * d.c_pair + d.v] = sat(128.0 + 0.439216 * R - 0.367788 * G - 0.071427 * B);
    }
  }
}

void yuvToRgb(YuvFormat f, bool bgr, int64_t height, int64_t width, const uint8_t* src, uint8_t* dst,
              ThreadPool* pool) {
  const YuvLayoutDesc d = yuvLayout(f, height, width);
  const int64_t W = width;
  parallelUnits(pool, height, W * 8, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const uint8_t* yrow = src + r * d.y_row;
      const uint8_t* crow = src + (d.chroma420 ? r / 2 : r) * d.c_row;
      uint8_t* out = dst + r * W * 3;
      for (int64_t k = 0; k < W / 2; ++k) {
        const uint8_t u = crow[k * d.c_pair + d.u], v = crow[k * d.c_pair + d.v];
        for (int64_t i = 0; i < 2; ++i) {
          const uint8_t y = yrow[k * d.y_pair + (i ? d.y1 : d.y0)];
          const Rgb8 p = yuvPixelToRgb(y, u, v);
          uint8_t* o = out + (2 * k + i) * 3;
          o[0] = bgr ? p.b : p.r;
          o[1] = p.g;
          o[2] = bgr ? p.r : p.b;
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// conv_x2gray.

bool isGrayFormat(int32_t code) { return (code >= 0 && code <= 3) || code == 4096 || code == 4097; }

uint8_t rgbToGrayPixel(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((9798 * int{r} + 19235 * int{g} + 3735 * int{b} + (1 << 14)) >> 15);
}

void toGray(GrayFormat f, int64_t height, int64_t width, const uint8_t* src, uint8_t* dst, ThreadPool* pool) {
  if (!isGrayFormat(static_cast<int32_t>(f)))
    fail(ErrorCode::kInvalidArgument, "toGray: unknown DIN_FORMAT {}", static_cast<int32_t>(f));
  checkNonNegative("toGray", {height, width});
  const int64_t W = width;
  if (f == GrayFormat::kRGB24 || f == GrayFormat::kBGR24) {
    const bool bgr = f == GrayFormat::kBGR24;
    parallelUnits(pool, height, W * 4, [&](int64_t rb, int64_t re) {
      for (int64_t i = rb * W; i < re * W; ++i) {
        const uint8_t* p = src + i * 3;
        dst[i] = bgr ? rgbToGrayPixel(p[2], p[1], p[0]) : rgbToGrayPixel(p[0], p[1], p[2]);
      }
    });
    return;
  }
  if (W % 2 != 0) fail(ErrorCode::kInvalidArgument, "toGray: a packed YUV image needs an even width, not {}", W);
  if (W == 0 || height == 0) return;
  const YuvLayoutDesc d = yuvLayout(static_cast<YuvFormat>(static_cast<int32_t>(f)), height, W);
  parallelUnits(pool, height, W, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const uint8_t* yrow = src + r * d.y_row;
      for (int64_t x = 0; x < W; ++x) dst[r * W + x] = yrow[(x / 2) * d.y_pair + (x % 2 ? d.y1 : d.y0)];
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// crop.

void crop(ImageLayout in_layout, const CropGeometry& g, size_t elem_size, const void* src, void* dst,
          ThreadPool* pool) {
  checkNonNegative("crop", {g.height, g.width, g.channels, g.pos_y, g.pos_x, g.out_height, g.out_width});
  if (g.pos_y + g.out_height > g.height || g.pos_x + g.out_width > g.width)
    fail(ErrorCode::kInvalidArgument, "crop: window {}x{} at (y {}, x {}) leaves the {}x{} input", g.out_height,
         g.out_width, g.pos_y, g.pos_x, g.height, g.width);
  const auto* s = static_cast<const uint8_t*>(src);
  auto* o = static_cast<uint8_t*>(dst);
  const int64_t C = g.channels, OW = g.out_width, es = static_cast<int64_t>(elem_size);
  parallelUnits(pool, g.out_height, OW * C, [&](int64_t yb, int64_t ye) {
    for (int64_t y = yb; y < ye; ++y) {
      uint8_t* orow = o + y * OW * C * es;
      if (in_layout == ImageLayout::kHWC) {
        std::memcpy(orow, s + ((g.pos_y + y) * g.width + g.pos_x) * C * es, static_cast<size_t>(OW * C * es));
      } else {
        for (int64_t c = 0; c < C; ++c) {
          const uint8_t* irow = s + ((c * g.height + g.pos_y + y) * g.width + g.pos_x) * es;
          for (int64_t x = 0; x < OW; ++x)
            std::memcpy(orow + (x * C + c) * es, irow + x * es, static_cast<size_t>(es));
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// resize_hwc.

namespace {

using detail::linearTaps;
using detail::Tap;

/// OpenCV's INTER_NEAREST source index: min(floor(d * (1 / (out / in))), in - 1), in double.
std::vector<int64_t> nearestIndex(int64_t in, int64_t out) {
  std::vector<int64_t> idx(static_cast<size_t>(out));
  const double ifx = 1.0 / (static_cast<double>(out) / static_cast<double>(in));
  for (int64_t d = 0; d < out; ++d)
    idx[static_cast<size_t>(d)] = std::min(static_cast<int64_t>(std::floor(static_cast<double>(d) * ifx)), in - 1);
  return idx;
}

void checkResize(const ResizeGeometry& g) {
  checkNonNegative("resizeHwc", {g.in_height, g.in_width, g.channels, g.out_height, g.out_width});
  if ((g.in_height == 0 || g.in_width == 0) && g.out_height > 0 && g.out_width > 0)
    fail(ErrorCode::kInvalidArgument, "resizeHwc: empty {}x{} input", g.in_height, g.in_width);
}

template <class T>
void resizeNearest(const ResizeGeometry& g, const T* src, T* dst, ThreadPool* pool) {
  const std::vector<int64_t> xs = nearestIndex(g.in_width, g.out_width), ys = nearestIndex(g.in_height, g.out_height);
  const int64_t C = g.channels, OW = g.out_width;
  parallelUnits(pool, g.out_height, OW * C, [&](int64_t yb, int64_t ye) {
    for (int64_t y = yb; y < ye; ++y) {
      const T* irow = src + ys[static_cast<size_t>(y)] * g.in_width * C;
      T* orow = dst + y * OW * C;
      for (int64_t x = 0; x < OW; ++x)
        std::memcpy(orow + x * C, irow + xs[static_cast<size_t>(x)] * C, static_cast<size_t>(C) * sizeof(T));
    }
  });
}

/// INTER_LINEAR's 8-bit fixed point on the given taps (resizeHwc kBilinear; INTER_AREA's enlarging, resizeAreaHwc).
void linearFixedPoint(const ResizeGeometry& g, const std::vector<Tap>& tx, const std::vector<Tap>& ty, const uint8_t* src, uint8_t* dst,
                      ThreadPool* pool) {
  const int64_t C = g.channels, OW = g.out_width, IW = g.in_width;
  parallelUnits(pool, g.out_height, OW * C * 6, [&](int64_t yb, int64_t ye) {
    std::vector<int32_t> t0(static_cast<size_t>(OW * C)), t1(static_cast<size_t>(OW * C));
    auto rowPass = [&](int64_t sy, std::vector<int32_t>& t) {
      const uint8_t* irow = src + sy * IW * C;
      for (int64_t x = 0; x < OW; ++x) {
        const Tap& a = tx[static_cast<size_t>(x)];
        for (int64_t c = 0; c < C; ++c)
          t[static_cast<size_t>(x * C + c)] = a.q0 * irow[a.i0 * C + c] + a.q1 * irow[a.i1 * C + c];
      }
    };
    for (int64_t y = yb; y < ye; ++y) {
      const Tap& b = ty[static_cast<size_t>(y)];
      rowPass(b.i0, t0);
      rowPass(b.i1, t1);
      uint8_t* orow = dst + y * OW * C;
      for (int64_t i = 0; i < OW * C; ++i) {
        const size_t k = static_cast<size_t>(i);
        const int32_t v = ((b.q0 * (t0[k] >> 4)) >> 16) + ((b.q1 * (t1[k] >> 4)) >> 16);
        orow[i] = sat8((v + 2) >> 2);
      }
    }
  });
}

}  // namespace

void resizeHwc(ResizeAlg alg, const ResizeGeometry& g, const uint8_t* src, uint8_t* dst, ThreadPool* pool) {
  checkResize(g);
  if (g.out_height == 0 || g.out_width == 0 || g.channels == 0) return;
  if (alg == ResizeAlg::kNearest) return resizeNearest(g, src, dst, pool);
  linearFixedPoint(g, linearTaps(g.in_width, g.out_width, true), linearTaps(g.in_height, g.out_height, false), src, dst, pool);
}

namespace {

/// OpenCV's area table along one axis (computeResizeAreaTab): (output index, source index, weight) in order.
struct AreaTap {
  int64_t d, s;
  float alpha;
};
std::vector<AreaTap> areaTaps(int64_t in, int64_t out) {
  std::vector<AreaTap> tab;
  const double scale = 1.0 / (static_cast<double>(out) / static_cast<double>(in));
  for (int64_t d = 0; d < out; ++d) {
    const double fs1 = static_cast<double>(d) * scale, fs2 = fs1 + scale;
    const double cell = std::min(scale, static_cast<double>(in) - fs1);
    int64_t s1 = static_cast<int64_t>(std::ceil(fs1)), s2 = static_cast<int64_t>(std::floor(fs2));
    s2 = std::min(s2, in - 1);
    s1 = std::min(s1, s2);
    if (static_cast<double>(s1) - fs1 > 1e-3) tab.push_back({d, s1 - 1, static_cast<float>((static_cast<double>(s1) - fs1) / cell)});
    for (int64_t x = s1; x < s2; ++x) tab.push_back({d, x, static_cast<float>(1.0 / cell)});
    if (fs2 - static_cast<double>(s2) > 1e-3)
      tab.push_back({d, s2, static_cast<float>(std::min(std::min(fs2 - static_cast<double>(s2), 1.0), cell) / cell)});
  }
  return tab;
}

uint8_t roundSat8(float v) { return sat8(static_cast<int>(std::nearbyint(v))); }  // (cvRound: to nearest even)

}  // namespace

void resizeAreaHwc(const ResizeGeometry& g, const uint8_t* src, uint8_t* dst) {
  checkResize(g);
  const int64_t C = g.channels, IW = g.in_width, IH = g.in_height, OW = g.out_width, OH = g.out_height;
  if (OH == 0 || OW == 0 || C == 0) return;
  if (IH == 0 || IW == 0) fail(ErrorCode::kInvalidArgument, "resize: an empty picture cannot be resized to {}x{}", OW, OH);
  const double sx = 1.0 / (static_cast<double>(OW) / static_cast<double>(IW)), sy = 1.0 / (static_cast<double>(OH) / static_cast<double>(IH));
  if (sx < 1 || sy < 1)  // enlarging: the linear fixed point on INTER_AREA's taps
    return linearFixedPoint(g, linearTaps(IW, OW, true, true), linearTaps(IH, OH, false, true), src, dst, nullptr);
  const int64_t kx = static_cast<int64_t>(std::lround(sx)), ky = static_cast<int64_t>(std::lround(sy));
  if (std::abs(sx - static_cast<double>(kx)) < std::numeric_limits<double>::epsilon() &&
      std::abs(sy - static_cast<double>(ky)) < std::numeric_limits<double>::epsilon()) {  // whole factors: block means
    // (OpenCV's vector path for 2x2 blocks of 1, 3 or 4 channels rounds half up; its scalar code, to nearest even)
    const bool half_up = kx == 2 && ky == 2 && (C == 1 || C == 3 || C == 4);
    const float scale = 1.0f / static_cast<float>(kx * ky);
    for (int64_t y = 0; y < OH; ++y)
      for (int64_t x = 0; x < OW; ++x)
        for (int64_t c = 0; c < C; ++c) {
          int64_t sum = 0;
          for (int64_t j = 0; j < ky; ++j)
            for (int64_t i = 0; i < kx; ++i) sum += src[((y * ky + j) * IW + x * kx + i) * C + c];
          dst[(y * OW + x) * C + c] = half_up ? static_cast<uint8_t>((sum + 2) >> 2) : roundSat8(static_cast<float>(sum) * scale);
        }
    return;
  }
  const std::vector<AreaTap> xt = areaTaps(IW, OW), yt = areaTaps(IH, OH);
  std::vector<float> buf(static_cast<size_t>(OW * C)), sum(static_cast<size_t>(OW * C), 0.0f);
  int64_t prev = yt.empty() ? 0 : yt[0].d;
  auto put = [&](int64_t y) {
    for (int64_t i = 0; i < OW * C; ++i) dst[y * OW * C + i] = roundSat8(sum[static_cast<size_t>(i)]);
  };
  for (const AreaTap& r : yt) {
    const uint8_t* S = src + r.s * IW * C;
    std::fill(buf.begin(), buf.end(), 0.0f);
    for (const AreaTap& t : xt)
      for (int64_t c = 0; c < C; ++c) {
        float& b = buf[static_cast<size_t>(t.d * C + c)];
        const float p = static_cast<float>(S[t.s * C + c]) * t.alpha;
        b = b + p;
      }
    if (r.d != prev) {
      put(prev);
      for (size_t i = 0; i < buf.size(); ++i) sum[i] = r.alpha * buf[i];
      prev = r.d;
    } else {
      for (size_t i = 0; i < buf.size(); ++i) {
        const float p = r.alpha * buf[i];
        sum[i] = sum[i] + p;
      }
    }
  }
  put(prev);
}

void resizeHwc(ResizeAlg alg, const ResizeGeometry& g, const uint16_t* src_fp16, uint16_t* dst_fp16,
               ThreadPool* pool) {
  checkResize(g);
  if (g.out_height == 0 || g.out_width == 0 || g.channels == 0) return;
  if (alg == ResizeAlg::kNearest) return resizeNearest(g, src_fp16, dst_fp16, pool);
  const std::vector<Tap> tx = linearTaps(g.in_width, g.out_width, true);
  const std::vector<Tap> ty = linearTaps(g.in_height, g.out_height, false);
  const int64_t C = g.channels, OW = g.out_width, IW = g.in_width;
  parallelUnits(pool, g.out_height, OW * C * 8, [&](int64_t yb, int64_t ye) {
    std::vector<float> t0(static_cast<size_t>(OW * C)), t1(static_cast<size_t>(OW * C));
    auto rowPass = [&](int64_t sy, std::vector<float>& t) {
      const uint16_t* irow = src_fp16 + sy * IW * C;
      for (int64_t x = 0; x < OW; ++x) {
        const Tap& a = tx[static_cast<size_t>(x)];
        for (int64_t c = 0; c < C; ++c) {
          const float p0 = halfToFloat(irow[a.i0 * C + c]) * a.w0;
          const float p1 = halfToFloat(irow[a.i1 * C + c]) * a.w1;
          t[static_cast<size_t>(x * C + c)] = p0 + p1;
        }
      }
    };
    for (int64_t y = yb; y < ye; ++y) {
      const Tap& b = ty[static_cast<size_t>(y)];
      rowPass(b.i0, t0);
      rowPass(b.i1, t1);
      uint16_t* orow = dst_fp16 + y * OW * C;
      for (int64_t i = 0; i < OW * C; ++i) {
        const float p0 = t0[static_cast<size_t>(i)] * b.w0;
        const float p1 = t1[static_cast<size_t>(i)] * b.w1;
        orow[i] = floatToHalf(p0 + p1);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// Casts.

namespace {
template <class In, class Out, class F>
void elementwise(const char* what, int64_t n, const In* src, Out* dst, ThreadPool* pool, F&& f) {
  checkNonNegative(what, {n});
  parallelUnits(pool, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = f(src[i]);
  });
}
}  // namespace

void castAnyToFp16(int64_t n, const uint8_t* src, uint16_t* dst_fp16, ThreadPool* pool) {
  elementwise("castAnyToFp16", n, src, dst_fp16, pool, [](uint8_t v) { return floatToHalf(static_cast<float>(v)); });
}

void castAnyToFp16(int64_t n, const uint16_t* src_fp16, uint16_t* dst_fp16, ThreadPool* pool) {
  memcopy(n, src_fp16, dst_fp16, pool);
}

void castAnyToFp16(int64_t n, const float* src, uint16_t* dst_fp16, ThreadPool* pool) {
  elementwise("castAnyToFp16", n, src, dst_fp16, pool, [](float v) { return floatToHalf(v); });
}

void castU8ToFp32(int64_t n, const uint8_t* src, float* dst, ThreadPool* pool) {
  elementwise("castU8ToFp32", n, src, dst, pool, [](uint8_t v) { return static_cast<float>(v); });
}

void castFp16ToFp32(int64_t n, const uint16_t* src_fp16, float* dst, ThreadPool* pool) {
  elementwise("castFp16ToFp32", n, src_fp16, dst, pool, [](uint16_t v) { return halfToFloat(v); });
}

void castFp32ToFp16(int64_t n, const float* src, uint16_t* dst_fp16, ThreadPool* pool) {
  elementwise("castFp32ToFp16", n, src, dst_fp16, pool, [](float v) { return floatToHalf(v); });
}

// ---------------------------------------------------------------------------------------------------------
// normalize, memcopy, softmax.

namespace {
template <typename In>
void normalizeImpl(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul, const In* src,
                   uint16_t* dst_fp16, ThreadPool* pool) {
  checkNonNegative("normalize", {pixels, channels});
  if (swap_rb && channels != 3)
    fail(ErrorCode::kInvalidArgument, "normalize: DOUT_RGB_ORDER 1 needs 3 channels (RGB or BGR), not {}", channels);
  const int64_t C = channels;
  parallelUnits(pool, pixels, C * 2, [&](int64_t pb, int64_t pe) {
    for (int64_t p = pb; p < pe; ++p) {
      const In* in = src + p * C;
      uint16_t* out = dst_fp16 + p * C;
      for (int64_t c = 0; c < C; ++c) {
        const In v = in[swap_rb ? 2 - c : c];
        float x;
        if constexpr (std::is_same_v<In, uint8_t>) x = static_cast<float>(v);  // = halfToFloat(the exact fp16 cast)
        else x = halfToFloat(v);
        const float sum = x + cof_add[c];
        const float prod = sum * cof_mul[c];
        out[c] = floatToHalf(prod);
      }
    }
  });
}
}  // namespace

void normalize(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul,
               const uint16_t* src_fp16, uint16_t* dst_fp16, ThreadPool* pool) {
  normalizeImpl(pixels, channels, swap_rb, cof_add, cof_mul, src_fp16, dst_fp16, pool);
}

void normalize(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul,
               const uint8_t* src, uint16_t* dst_fp16, ThreadPool* pool) {
  normalizeImpl(pixels, channels, swap_rb, cof_add, cof_mul, src, dst_fp16, pool);
}

void memcopy(int64_t words, const uint16_t* src, uint16_t* dst, ThreadPool* pool) {
  checkNonNegative("memcopy", {words});
  parallelUnits(pool, words, 1, [&](int64_t b, int64_t e) {
    std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(uint16_t));
  });
}

void softmaxFp16(int64_t n, const uint16_t* src_fp16, float* dst, ThreadPool* pool) {
  checkNonNegative("softmaxFp16", {n});
  if (n == 0) return;
  std::vector<float> x(static_cast<size_t>(n));
  castFp16ToFp32(n, src_fp16, x.data(), pool);
  softmax(SoftmaxKind::kSoftmax, 1, n, 1, x.data(), dst, pool);
}

void softmaxFp16(int64_t n, const uint16_t* src_fp16, uint16_t* dst_fp16, ThreadPool* pool) {
  checkNonNegative("softmaxFp16", {n});
  if (n == 0) return;
  std::vector<float> y(static_cast<size_t>(n));
  softmaxFp16(n, src_fp16, y.data(), pool);
  castFp32ToFp16(n, y.data(), dst_fp16, pool);
}

// ---------------------------------------------------------------------------------------------------------
// argminmax.

namespace {

template <class Out>
void argMinMaxImpl(ImageLayout layout, int64_t H, int64_t W, int64_t C, ArgAxis axis, ArgMode mode,
                   const uint16_t* src, Out* dst, ThreadPool* pool) {
  checkNonNegative("argMinMax", {H, W, C});
  // The buffer as [outer, len, inner] with the reduced axis in the middle.
  const int64_t dims[3] = {layout == ImageLayout::kHWC ? H : C, layout == ImageLayout::kHWC ? W : H,
                           layout == ImageLayout::kHWC ? C : W};
  int a = 0;
  if (layout == ImageLayout::kHWC) a = axis == ArgAxis::kHeight ? 0 : axis == ArgAxis::kWidth ? 1 : 2;
  else a = axis == ArgAxis::kChannel ? 0 : axis == ArgAxis::kHeight ? 1 : 2;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= dims[i];
  for (int i = a + 1; i < 3; ++i) inner *= dims[i];
  const int64_t len = dims[a];
  if (len - 1 > static_cast<int64_t>(std::numeric_limits<Out>::max()))
    fail(ErrorCode::kInvalidArgument, "argMinMax: an axis of {} does not fit the {}-bit output", len,
         8 * sizeof(Out));
  if (len == 0) return;
  const bool is_max = mode == ArgMode::kArgMax;
  parallelUnits(pool, outer * inner, len, [&](int64_t ub, int64_t ue) {
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t o = u / inner, i = u % inner;
      const uint16_t* line = src + o * len * inner + i;
      int64_t best = 0;
      float bv = halfToFloat(line[0]);
      if (!std::isnan(bv)) {
        for (int64_t k = 1; k < len; ++k) {
          const float v = halfToFloat(line[k * inner]);
          if (std::isnan(v)) {
            best = k;
            break;
          }
          if (is_max ? v > bv : v < bv) bv = v, best = k;
        }
      }
      dst[u] = static_cast<Out>(best);
    }
  });
}

}  // namespace

void argMinMax(ImageLayout layout, int64_t height, int64_t width, int64_t channels, ArgAxis axis, ArgMode mode,
               const uint16_t* src_fp16, uint8_t* dst, ThreadPool* pool) {
  argMinMaxImpl(layout, height, width, channels, axis, mode, src_fp16, dst, pool);
}

void argMinMax(ImageLayout layout, int64_t height, int64_t width, int64_t channels, ArgAxis axis, ArgMode mode,
               const uint16_t* src_fp16, uint16_t* dst, ThreadPool* pool) {
  argMinMaxImpl(layout, height, width, channels, axis, mode, src_fp16, dst, pool);
}

}  // namespace npuc::kernels
