// Fast variants of the pre/post-processing kernels (kernels/prepost.hpp, "fast variants"): the same arithmetic as
// the reference (ref/prepost_ref.cpp), arranged for speed — per-row locals instead of reloads through the layout
// (uint8_t stores alias everything), the chroma terms computed once per pixel pair, normalize's products in float32
// then one F16C conversion per block (kernels/convert.hpp, bit-identical to floatToHalf). Tests compare every byte
// with the reference for every format and thread count.
#include "kernels/convert.hpp"
#include "kernels/prepost.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/ref/yuv_layout.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>
#include <type_traits>
#include <cstring>
#include <vector>

namespace npuc::kernels {

namespace {

using detail::kCUB;
using detail::kCUG;
using detail::kCVG;
using detail::kCVR;
using detail::kCY;
using detail::kShift;

inline uint8_t sat8(int v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

/// c(y) = max(0, y - 16) * kCY, the luma term of yuvPixelToRgb.
struct LumaTable {
  int v[256];
  LumaTable() {
    for (int y = 0; y < 256; ++y) v[y] = std::max(0, y - 16) * kCY;
  }
};
const LumaTable kLuma;

}  // namespace

namespace detail {
int64_t yuvRowAvx2(const uint8_t* src, int64_t size, int64_t yrow_off, int64_t crow_off, const YuvLayoutDesc& d, int64_t pairs,
                   bool bgr, uint8_t* out);
}

void yuvToRgbFast(YuvFormat f, bool bgr, int64_t height, int64_t width, const uint8_t* src, uint8_t* dst, ThreadPool* pool) {
  const detail::YuvLayoutDesc d = detail::yuvLayout(f, height, width);
  const int64_t W = width, y_row = d.y_row, y_pair = d.y_pair, y0 = d.y0, y1 = d.y1, c_row = d.c_row, c_pair = d.c_pair,
                uo = d.u, vo = d.v;
  const bool c420 = d.chroma420;
  const int ri = bgr ? 2 : 0, bi = bgr ? 0 : 2;
  static const bool avx2 = __builtin_cpu_supports("avx2");
  detail::parallelUnits(pool, height, W * 8, [&](int64_t rb, int64_t re) {
    const int h = 1 << (kShift - 1);
    for (int64_t r = rb; r < re; ++r) {
      const uint8_t* yrow = src + r * y_row;
      const uint8_t* crow = src + (c420 ? r / 2 : r) * c_row;
      uint8_t* out = dst + r * W * 3;
      int64_t k = avx2 ? detail::yuvRowAvx2(src, d.size, r * y_row, (c420 ? r / 2 : r) * c_row, d, W / 2, bgr, out) : 0;
      for (; k < W / 2; ++k) {
        const int uu = int{crow[k * c_pair + uo]} - 128, vv = int{crow[k * c_pair + vo]} - 128;
        // The same sums as yuvPixelToRgb: c + h + kCVR*vv, c + h + kCVG*vv + kCUG*uu, c + h + kCUB*uu (integers).
        const int rt = h + kCVR * vv, gt = h + kCVG * vv + kCUG * uu, bt = h + kCUB * uu;
        const int c0 = kLuma.v[yrow[k * y_pair + y0]], c1 = kLuma.v[yrow[k * y_pair + y1]];
        uint8_t* o = out + k * 6;
        o[ri] = sat8((c0 + rt) >> kShift);
        o[1] = sat8((c0 + gt) >> kShift);
        o[bi] = sat8((c0 + bt) >> kShift);
        o[3 + ri] = sat8((c1 + rt) >> kShift);
        o[4] = sat8((c1 + gt) >> kShift);
        o[3 + bi] = sat8((c1 + bt) >> kShift);
      }
    }
  });
}

namespace {

template <typename In>
void normalizeFastImpl(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul, const In* src,
                       uint16_t* dst_fp16, ThreadPool* pool) {
  if (pixels < 0 || channels < 1) fail(ErrorCode::kInvalidArgument, "normalize: {} pixels of {} channels", pixels, channels);
  if (swap_rb && channels != 3)
    fail(ErrorCode::kInvalidArgument, "normalize: DOUT_RGB_ORDER 1 needs 3 channels (RGB or BGR), not {}", channels);
  const int64_t C = channels;
  // Blocks of kPix pixels: the float32 results of a block, then one conversion to fp16.
  constexpr int64_t kPix = 256;
  detail::parallelUnits(pool, (pixels + kPix - 1) / kPix, kPix * C * 4, [&](int64_t bb, int64_t be) {
    std::vector<float> add(static_cast<size_t>(kPix * C)), mul(add.size()), tmp(add.size());
    for (int64_t p = 0; p < kPix; ++p)
      for (int64_t c = 0; c < C; ++c) add[static_cast<size_t>(p * C + c)] = cof_add[c], mul[static_cast<size_t>(p * C + c)] = cof_mul[c];
    for (int64_t b = bb; b < be; ++b) {
      const int64_t p0 = b * kPix, n = std::min(kPix, pixels - p0) * C;
      const In* in = src + p0 * C;
      float* t = tmp.data();
      const float *a = add.data(), *m = mul.data();
      if (swap_rb) {
        for (int64_t i = 0; i < n; i += 3)
          for (int64_t c = 0; c < 3; ++c) {
            float x;
            if constexpr (std::is_same_v<In, uint8_t>) x = static_cast<float>(in[i + 2 - c]);
            else x = halfToFloat(in[i + 2 - c]);
            t[i + c] = (x + a[i + c]) * m[i + c];
          }
      } else if constexpr (std::is_same_v<In, uint8_t>) {
        for (int64_t i = 0; i < n; ++i) t[i] = (static_cast<float>(in[i]) + a[i]) * m[i];
      } else {
        f16ToF32_ref(in, t, n);
        for (int64_t i = 0; i < n; ++i) t[i] = (t[i] + a[i]) * m[i];
      }
      f32ToF16(t, dst_fp16 + p0 * C, n, Activation{}, nullptr);
    }
  });
}

}  // namespace

void normalizeFast(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul, const uint16_t* src_fp16,
                   uint16_t* dst_fp16, ThreadPool* pool) {
  normalizeFastImpl(pixels, channels, swap_rb, cof_add, cof_mul, src_fp16, dst_fp16, pool);
}

void normalizeFast(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul, const uint8_t* src,
                   uint16_t* dst_fp16, ThreadPool* pool) {
  normalizeFastImpl(pixels, channels, swap_rb, cof_add, cof_mul, src, dst_fp16, pool);
}

}  // namespace npuc::kernels
