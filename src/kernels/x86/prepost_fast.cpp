// Fast variants of the pre/post-processing kernels (kernels/prepost.hpp, "fast variants"): the same arithmetic as
// the reference (ref/prepost_ref.cpp), arranged for speed — per-row locals instead of reloads through the layout
// (uint8_t stores alias everything), the chroma terms computed once per pixel pair, normalize's products in float32
// then one F16C conversion per block (kernels/convert.hpp, bit-identical to floatToHalf). Tests compare every byte
// with the reference for every format and thread count.
#include "kernels/convert.hpp"
#include "kernels/prepost.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/ref/resize_taps.hpp"
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
void resizeColumnAvx2(const int32_t* t0, const int32_t* t1, int32_t q0, int32_t q1, int64_t n, uint8_t* out);
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

namespace {

/// One source row through the horizontal taps (the reference's row pass), specialised per channel count.
template <int C>
void resizeRowPass(const uint8_t* irow, const std::vector<int32_t>& o0, const std::vector<int32_t>& o1, const std::vector<int32_t>& q0,
                   const std::vector<int32_t>& q1, int64_t OW, int32_t* t) {
  for (int64_t x = 0; x < OW; ++x) {
    const size_t k = static_cast<size_t>(x);
    const uint8_t* a = irow + o0[k];
    const uint8_t* b = irow + o1[k];
    for (int c = 0; c < C; ++c) t[x * C + c] = q0[k] * a[c] + q1[k] * b[c];
  }
}

}  // namespace

void resizeHwcFast(ResizeAlg alg, const ResizeGeometry& g, const uint8_t* src, uint8_t* dst, ThreadPool* pool) {
  const int64_t C = g.channels, OW = g.out_width, OH = g.out_height, IW = g.in_width, IH = g.in_height;
  // Other cases (and invalid geometry, which the reference reports) take the reference.
  if (alg != ResizeAlg::kBilinear || (C != 1 && C != 3) || OW < 1 || OH < 1 || IW < 1 || IH < 1)
    return resizeHwc(alg, g, src, dst, pool);
  const std::vector<detail::Tap> tx = detail::linearTaps(IW, OW, true), ty = detail::linearTaps(IH, OH, false);
  std::vector<int32_t> o0(static_cast<size_t>(OW)), o1(o0.size()), q0(o0.size()), q1(o0.size());
  for (size_t x = 0; x < o0.size(); ++x) {
    o0[x] = static_cast<int32_t>(tx[x].i0 * C), o1[x] = static_cast<int32_t>(tx[x].i1 * C);
    q0[x] = tx[x].q0, q1[x] = tx[x].q1;
  }
  static const bool avx2 = __builtin_cpu_supports("avx2");
  const int64_t n = OW * C;
  detail::parallelUnits(pool, OH, n * 6, [&](int64_t yb, int64_t ye) {
    // Two row buffers tagged with the source row they hold: a row shared by consecutive output rows is computed once.
    std::vector<int32_t> buf[2] = {std::vector<int32_t>(static_cast<size_t>(n)), std::vector<int32_t>(static_cast<size_t>(n))};
    int64_t tag[2] = {-1, -1};
    auto row = [&](int64_t sy, int avoid) -> const int32_t* {
      for (int i = 0; i < 2; ++i)
        if (tag[i] == sy) return buf[i].data();
      int i = avoid == 0 ? 1 : 0;
      const uint8_t* irow = src + sy * IW * C;
      if (C == 3) resizeRowPass<3>(irow, o0, o1, q0, q1, OW, buf[i].data());
      else resizeRowPass<1>(irow, o0, o1, q0, q1, OW, buf[i].data());
      tag[i] = sy;
      return buf[i].data();
    };
    for (int64_t y = yb; y < ye; ++y) {
      const detail::Tap& b = ty[static_cast<size_t>(y)];
      const int32_t* t0 = row(b.i0, -1);
      const int32_t* t1 = row(b.i1, t0 == buf[0].data() ? 0 : 1);
      uint8_t* orow = dst + y * n;
      int64_t i = 0;
      if (avx2) {
        i = n / 8 * 8;
        detail::resizeColumnAvx2(t0, t1, b.q0, b.q1, i, orow);
      }
      for (; i < n; ++i) {
        const int32_t v = ((b.q0 * (t0[i] >> 4)) >> 16) + ((b.q1 * (t1[i] >> 4)) >> 16);
        orow[i] = sat8((v + 2) >> 2);
      }
    }
  });
}

}  // namespace npuc::kernels
