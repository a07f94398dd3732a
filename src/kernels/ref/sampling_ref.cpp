// RoiAlign, GridSample and MaxUnpool (sampling.hpp).
#include "kernels/sampling.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cmath>

namespace npuc::kernels {

// --- RoiAlign ---

namespace {

struct Corners {
  int64_t y0 = 0, x0 = 0, y1 = 0, x1 = 0;
  float w[4] = {0, 0, 0, 0};  // (y0, x0), (y0, x1), (y1, x0), (y1, x1)
};

/// The bilinear taps of (y, x), ONNX Runtime's rule: outside [-1, size] contributes nothing; otherwise clamped to the
/// map, the last row / column its own neighbour.
Corners bilinearTaps(float y, float x, int64_t h, int64_t w) {
  Corners c;
  if (y < -1.0f || y > static_cast<float>(h) || x < -1.0f || x > static_cast<float>(w)) return c;
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  c.y0 = static_cast<int64_t>(y);
  c.x0 = static_cast<int64_t>(x);
  if (c.y0 >= h - 1) c.y1 = c.y0 = h - 1, y = static_cast<float>(c.y0);
  else c.y1 = c.y0 + 1;
  if (c.x0 >= w - 1) c.x1 = c.x0 = w - 1, x = static_cast<float>(c.x0);
  else c.x1 = c.x0 + 1;
  const float ly = y - static_cast<float>(c.y0), lx = x - static_cast<float>(c.x0), hy = 1.0f - ly, hx = 1.0f - lx;
  c.w[0] = hy * hx, c.w[1] = hy * lx, c.w[2] = ly * hx, c.w[3] = ly * lx;
  return c;
}

}  // namespace

bool gridSampleModes(const std::string& mode, const std::string& padding, GridSampleParams& p) {
  using GS = GridSampleParams;
  if (mode == "nearest") p.mode = GS::Mode::kNearest;
  else if (mode == "bicubic" || mode == "cubic") p.mode = GS::Mode::kBicubic;
  else if (mode == "bilinear" || mode == "linear") p.mode = GS::Mode::kBilinear;
  else return false;
  if (padding == "zeros") p.padding = GS::Padding::kZeros;
  else if (padding == "border") p.padding = GS::Padding::kBorder;
  else if (padding == "reflection") p.padding = GS::Padding::kReflection;
  else return false;
  return true;
}

void roiAlign(const RoiAlignParams& p, const float* x, const float* rois, const int64_t* batch, float* y) {
  for (int64_t r = 0; r < p.rois; ++r)
    if (batch[r] < 0 || batch[r] >= p.images)
      fail(ErrorCode::kInvalidInput, "RoiAlign: batch_indices[{}] = {} is outside [0, {})", r, batch[r], p.images);
  const float offset = p.half_pixel ? 0.5f : 0.0f;
  for (int64_t r = 0; r < p.rois; ++r) {
    const float* roi = rois + r * 4;
    const float sw = roi[0] * p.spatial_scale - offset, sh = roi[1] * p.spatial_scale - offset;
    float rw = roi[2] * p.spatial_scale - offset - sw, rh = roi[3] * p.spatial_scale - offset - sh;
    if (!p.half_pixel) rw = std::max(rw, 1.0f), rh = std::max(rh, 1.0f);
    const float bh = rh / static_cast<float>(p.out_h), bw = rw / static_cast<float>(p.out_w);
    const int64_t gh = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(rh / static_cast<float>(p.out_h)));
    const int64_t gw = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(rw / static_cast<float>(p.out_w)));
    const float count = static_cast<float>(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < p.channels; ++c) {
      const float* plane = x + (batch[r] * p.channels + c) * p.height * p.width;
      float* out = y + (r * p.channels + c) * p.out_h * p.out_w;
      for (int64_t ph = 0; ph < p.out_h; ++ph)
        for (int64_t pw = 0; pw < p.out_w; ++pw) {
          float acc = 0.0f;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy) {
            const float yy = sh + static_cast<float>(ph) * bh + (static_cast<float>(iy) + 0.5f) * bh / static_cast<float>(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              const float xx = sw + static_cast<float>(pw) * bw + (static_cast<float>(ix) + 0.5f) * bw / static_cast<float>(gw);
              const Corners t = bilinearTaps(yy, xx, p.height, p.width);
              const float v[4] = {plane[t.y0 * p.width + t.x0], plane[t.y0 * p.width + t.x1], plane[t.y1 * p.width + t.x0],
                                  plane[t.y1 * p.width + t.x1]};
              if (p.max_mode) {
                const float m = std::max(std::max(t.w[0] * v[0], t.w[1] * v[1]), std::max(t.w[2] * v[2], t.w[3] * v[3]));
                acc = first ? m : std::max(acc, m);
                first = false;
              } else {
                acc += t.w[0] * v[0] + t.w[1] * v[1] + t.w[2] * v[2] + t.w[3] * v[3];
              }
            }
          }
          out[ph * p.out_w + pw] = p.max_mode ? acc : acc / count;
        }
    }
  }
}

// --- GridSample ---

namespace {

using GS = GridSampleParams;

float unnormalize(float g, int64_t size, bool align) {
  const float s = static_cast<float>(size);
  return align ? (g + 1.0f) / 2.0f * (s - 1.0f) : ((g + 1.0f) * s - 1.0f) / 2.0f;
}

float reflect(float v, float twice_low, float twice_high) {
  if (twice_low == twice_high) return 0.0f;
  const float lo = twice_low / 2.0f, span = (twice_high - twice_low) / 2.0f;
  v = std::fabs(v - lo);
  const float extra = std::fmod(v, span);
  const int64_t flips = static_cast<int64_t>(std::floor(v / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

/// A coordinate under the padding mode (border: clamped; reflection: reflected, then clamped; zeros: as it is).
float padded(const GS& p, float v, int64_t size) {
  const float hi = static_cast<float>(size - 1);
  if (p.padding == GS::Padding::kBorder) return std::clamp(v, 0.0f, hi);
  if (p.padding == GS::Padding::kReflection) {
    v = p.align_corners ? reflect(v, 0.0f, 2.0f * hi) : reflect(v, -1.0f, 2.0f * static_cast<float>(size) - 1.0f);
    return std::clamp(v, 0.0f, hi);
  }
  return v;
}

float at(const float* plane, const GS& p, int64_t yi, int64_t xi) {
  return yi < 0 || yi >= p.in_h || xi < 0 || xi >= p.in_w ? 0.0f : plane[yi * p.in_w + xi];
}

float cubic(float v0, float v1, float v2, float v3, float t) {
  constexpr float A = -0.75f;
  const float x0 = t + 1.0f, x3 = 2.0f - t, u = 1.0f - t;
  const float w0 = ((A * x0 - 5.0f * A) * x0 + 8.0f * A) * x0 - 4.0f * A;
  const float w1 = ((A + 2.0f) * t - (A + 3.0f)) * t * t + 1.0f;
  const float w2 = ((A + 2.0f) * u - (A + 3.0f)) * u * u + 1.0f;
  const float w3 = ((A * x3 - 5.0f * A) * x3 + 8.0f * A) * x3 - 4.0f * A;
  return v0 * w0 + v1 * w1 + v2 * w2 + v3 * w3;
}

float sample(const float* plane, const GS& p, float gx, float gy) {
  float x = unnormalize(gx, p.in_w, p.align_corners), y = unnormalize(gy, p.in_h, p.align_corners);
  if (p.mode == GS::Mode::kBicubic) {  // taps padded one by one (PyTorch's rule)
    const float fx = std::floor(x), fy = std::floor(y);
    auto tap = [&](float yy, float xx) {
      return at(plane, p, static_cast<int64_t>(std::floor(padded(p, yy, p.in_h))), static_cast<int64_t>(std::floor(padded(p, xx, p.in_w))));
    };
    float rows[4];
    for (int i = 0; i < 4; ++i) {
      const float yy = fy - 1.0f + static_cast<float>(i);
      rows[i] = cubic(tap(yy, fx - 1.0f), tap(yy, fx), tap(yy, fx + 1.0f), tap(yy, fx + 2.0f), x - fx);
    }
    return cubic(rows[0], rows[1], rows[2], rows[3], y - fy);
  }
  x = padded(p, x, p.in_w);
  y = padded(p, y, p.in_h);
  if (p.mode == GS::Mode::kNearest)
    return at(plane, p, static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
  const float fx = std::floor(x), fy = std::floor(y);
  const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
  const float lx = x - fx, ly = y - fy;
  return at(plane, p, y0, x0) * (1.0f - ly) * (1.0f - lx) + at(plane, p, y0, x0 + 1) * (1.0f - ly) * lx +
         at(plane, p, y0 + 1, x0) * ly * (1.0f - lx) + at(plane, p, y0 + 1, x0 + 1) * ly * lx;
}

}  // namespace

void gridSample(const GridSampleParams& p, const float* x, const float* grid, float* y) {
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.channels; ++c) {
      const float* plane = x + (n * p.channels + c) * p.in_h * p.in_w;
      float* out = y + (n * p.channels + c) * p.out_h * p.out_w;
      for (int64_t i = 0; i < p.out_h * p.out_w; ++i) {
        const float* g = grid + (n * p.out_h * p.out_w + i) * 2;
        out[i] = sample(plane, p, g[0], g[1]);
      }
    }
}

// --- MaxUnpool ---

bool maxUnpool(const float* x, const int64_t* index, int64_t n, float* y, const std::vector<int64_t>& out,
               const std::vector<int64_t>& pooled_from) {
  int64_t out_numel = 1, from_numel = 1;
  for (int64_t d : out) out_numel *= d;
  for (int64_t d : pooled_from) from_numel *= d;
  std::fill_n(y, out_numel, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    if (index[i] < 0 || index[i] >= from_numel) return false;
    int64_t rem = index[i], at = 0, stride = 1;
    for (size_t d = pooled_from.size(); d-- > 0;) {
      const int64_t coord = rem % pooled_from[d];
      rem /= pooled_from[d];
      if (coord >= out[d]) return false;
      at += coord * stride;
      stride *= out[d];
    }
    y[at] = x[i];
  }
  return true;
}

}  // namespace npuc::kernels
