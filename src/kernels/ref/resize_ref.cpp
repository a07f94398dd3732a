// Reference resizing (ONNX Resize, kernels/layers.hpp): the coordinate transforms and the nearest / linear / cubic
// taps of each output position along each axis, which the reference engine, the fast kernels and the package's
// resize layers all compute from.
#include "kernels/layer_templates.hpp"
#include "kernels/layers.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace npuc::kernels {

bool resizeCoordFromName(const std::string& name, ResizeCoord* c) {
  static const std::pair<const char*, ResizeCoord> k[] = {
      {"half_pixel", ResizeCoord::kHalfPixel},        {"asymmetric", ResizeCoord::kAsymmetric},
      {"pytorch_half_pixel", ResizeCoord::kPytorchHalfPixel}, {"align_corners", ResizeCoord::kAlignCorners},
      {"tf_half_pixel_for_nn", ResizeCoord::kTfHalfPixelForNn}, {"half_pixel_symmetric", ResizeCoord::kHalfPixelSymmetric},
      {"tf_crop_and_resize", ResizeCoord::kTfCropAndResize}};
  for (auto& [n, v] : k)
    if (name == n) return *c = v, true;
  return false;
}

bool resizeNearestFromName(const std::string& name, ResizeNearest* n) {
  static const std::pair<const char*, ResizeNearest> k[] = {{"round_prefer_floor", ResizeNearest::kRoundPreferFloor},
                                                            {"round_prefer_ceil", ResizeNearest::kRoundPreferCeil},
                                                            {"floor", ResizeNearest::kFloor},
                                                            {"ceil", ResizeNearest::kCeil}};
  for (auto& [m, v] : k)
    if (name == m) return *n = v, true;
  return false;
}

namespace {

using detail::parallelUnits;

int64_t nearestIndex(const ResizeSpec& p, double x, bool downsampling) {
  if (p.legacy) return static_cast<int64_t>(downsampling ? std::ceil(x) : std::floor(x));
  double fl = std::floor(x);
  if (x == fl) return static_cast<int64_t>(fl);
  double frac = x - fl;
  switch (p.nearest) {
    case ResizeNearest::kFloor: return static_cast<int64_t>(fl);
    case ResizeNearest::kCeil: return static_cast<int64_t>(fl) + 1;
    case ResizeNearest::kRoundPreferFloor: return static_cast<int64_t>(fl) + (frac > 0.5 ? 1 : 0);
    case ResizeNearest::kRoundPreferCeil: return static_cast<int64_t>(fl) + (frac >= 0.5 ? 1 : 0);
  }
  return static_cast<int64_t>(fl);
}

void cubicCoeffs(double r, double a, double* w) {
  double t0 = r + 1, t1 = r, t2 = 1 - r, t3 = 2 - r;
  w[0] = ((a * t0 - 5 * a) * t0 + 8 * a) * t0 - 4 * a;
  w[1] = ((a + 2) * t1 - (a + 3)) * t1 * t1 + 1;
  w[2] = ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1;
  w[3] = ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a;
}

ResizeTaps axisTaps(const ResizeSpec& p, int64_t in, int64_t out, double scale, double roi_s, double roi_e) {
  ResizeTaps t;
  t.k = p.interp == ResizeInterp::kNearest ? 1 : p.interp == ResizeInterp::kLinear ? 2 : 4;
  size_t k = static_cast<size_t>(t.k);
  t.idx.assign(static_cast<size_t>(out) * k, 0);
  t.w.assign(static_cast<size_t>(out) * k, 0.0);
  t.outside.assign(static_cast<size_t>(out), 0);
  if (out == 0) return t;
  if (in == 0) fail(ErrorCode::kInvalidArgument, "cannot resize an empty axis to size {}", out);
  double in_f = static_cast<double>(in);
  double out_f = scale * in_f;  // the ONNX reference's "output width" (not rounded)
  for (int64_t o = 0; o < out; ++o) {
    double xo = static_cast<double>(o), x = 0;
    if (p.legacy || p.coord == ResizeCoord::kAsymmetric) x = xo / scale;
    else if (p.coord == ResizeCoord::kHalfPixel) x = (xo + 0.5) / scale - 0.5;
    else if (p.coord == ResizeCoord::kPytorchHalfPixel) x = out_f > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
    else if (p.coord == ResizeCoord::kAlignCorners) x = out_f == 1 ? 0.0 : xo * (in_f - 1) / (out_f - 1);
    else if (p.coord == ResizeCoord::kTfHalfPixelForNn) x = (xo + 0.5) / scale;
    else if (p.coord == ResizeCoord::kHalfPixelSymmetric) {
      double adj = static_cast<double>(out) / out_f;
      x = in_f / 2 * (1 - adj) + (xo + 0.5) / scale - 0.5;
    } else {  // tf_crop_and_resize
      x = out_f > 1 ? roi_s * (in_f - 1) + xo * (roi_e - roi_s) * (in_f - 1) / (out_f - 1) : 0.5 * (roi_s + roi_e) * (in_f - 1);
      if (x < 0 || x > in_f - 1) {
        t.outside[static_cast<size_t>(o)] = 1;
        continue;
      }
    }
    if (!std::isfinite(x)) fail(ErrorCode::kInvalidArgument, "non-finite source coordinate (scale {})", scale);
    int64_t* ti = &t.idx[static_cast<size_t>(o) * k];
    double* tw = &t.w[static_cast<size_t>(o) * k];
    auto clampIdx = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    if (p.interp == ResizeInterp::kNearest) {
      x = std::clamp(x, -1.0, in_f);  // keeps the integer conversion defined; the index is clamped below
      ti[0] = clampIdx(nearestIndex(p, x, scale < 1.0));
      tw[0] = 1.0;
    } else if (p.interp == ResizeInterp::kLinear) {
      x = std::clamp(x, 0.0, in_f - 1);
      double fl = std::floor(x);
      double r = x - fl;
      int64_t i0 = static_cast<int64_t>(fl);
      ti[0] = clampIdx(i0);
      ti[1] = clampIdx(i0 + 1);
      tw[0] = 1 - r;
      tw[1] = r;
    } else {
      x = std::clamp(x, -4.0, in_f + 3.0);  // beyond this every tap reads the edge anyway
      double fl = std::floor(x);
      double r = x - fl;
      int64_t i0 = static_cast<int64_t>(fl);
      cubicCoeffs(r, p.cubic_a, tw);
      double sum = 0;
      for (size_t j = 0; j < 4; ++j) {
        int64_t i = i0 - 1 + static_cast<int64_t>(j);
        if (p.exclude_outside && (i < 0 || i >= in)) tw[j] = 0;
        sum += tw[j];
        ti[j] = clampIdx(i);
      }
      if (p.exclude_outside && sum != 0)
        for (size_t j = 0; j < 4; ++j) tw[j] /= sum;
    }
  }
  // An axis on which every output reads exactly one input with weight 1 needs one tap.
  if (t.k > 1) {
    bool single = true;
    std::vector<int64_t> one(static_cast<size_t>(out), 0);
    for (int64_t o = 0; o < out && single; ++o) {
      if (t.outside[static_cast<size_t>(o)]) continue;
      int nonzero = 0;
      for (size_t j = 0; j < k; ++j) {
        double w = t.w[static_cast<size_t>(o) * k + j];
        if (w != 0) {
          ++nonzero;
          single &= w == 1.0;
          one[static_cast<size_t>(o)] = t.idx[static_cast<size_t>(o) * k + j];
        }
      }
      single &= nonzero == 1;
    }
    if (single) {
      t.k = 1;
      t.idx = one;
      t.w.assign(static_cast<size_t>(out), 1.0);
    }
  }
  return t;
}

}  // namespace

std::vector<ResizeTaps> resizeTaps(const ResizeSpec& s, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape) {
  const size_t r = x_shape.size();
  if (y_shape.size() != r || s.scale.size() != r || s.roi_start.size() != r || s.roi_end.size() != r)
    fail(ErrorCode::kInvalidArgument, "resize: rank {} -> {} with {} scales", r, y_shape.size(), s.scale.size());
  std::vector<ResizeTaps> taps;
  for (size_t a = 0; a < r; ++a) {
    int64_t in = x_shape[a], out = y_shape[a];
    if (in < 0 || out < 0) fail(ErrorCode::kInvalidArgument, "resize: negative dimension");
    if (in == out && s.scale[a] == 1.0 && s.coord != ResizeCoord::kTfCropAndResize) {
      ResizeTaps t;  // identity axis
      t.idx.resize(static_cast<size_t>(out));
      std::iota(t.idx.begin(), t.idx.end(), int64_t{0});
      t.w.assign(static_cast<size_t>(out), 1.0);
      t.outside.assign(static_cast<size_t>(out), 0);
      taps.push_back(std::move(t));
    } else {
      taps.push_back(axisTaps(s, in, out, s.scale[a], s.roi_start[a], s.roi_end[a]));
    }
  }
  return taps;
}

void resize(const ResizeSpec& s, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape, const float* x,
            float* y, ThreadPool* pool) {
  const std::vector<ResizeTaps> taps = resizeTaps(s, x_shape, y_shape);
  int64_t total = 1;
  for (int64_t d : y_shape) total *= d;
  if (total == 0) return;
  int64_t work = 1;
  for (const ResizeTaps& t : taps) work *= t.k;
  parallelUnits(pool, total, work, [&](int64_t b, int64_t e) {
    resizeRange<float>(taps, x_shape, y_shape, x, y, static_cast<float>(s.extrapolation),
                       [](double acc) { return static_cast<float>(acc); }, b, e);
  });
}

void resizeNearestElements(const ResizeSpec& s, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape,
                           const void* x, void* y, size_t elem, ThreadPool* pool) {
  if (s.interp != ResizeInterp::kNearest || s.coord == ResizeCoord::kTfCropAndResize)
    fail(ErrorCode::kInternal, "resizeNearestElements: a nearest resize without tf_crop_and_resize only");
  const std::vector<ResizeTaps> taps = resizeTaps(s, x_shape, y_shape);
  const size_t r = x_shape.size();
  int64_t total = 1;
  for (int64_t d : y_shape) total *= d;
  if (total == 0) return;
  std::vector<int64_t> ist(r, 1);
  for (size_t i = r; i-- > 1;) ist[i - 1] = ist[i] * x_shape[i];
  const auto* xb = static_cast<const uint8_t*>(x);
  auto* yb = static_cast<uint8_t*>(y);
  parallelUnits(pool, total, 1, [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(r, 0);
    for (int64_t rest = b, a = static_cast<int64_t>(r); a-- > 0;) {  // the first output's coordinates
      idx[static_cast<size_t>(a)] = rest % y_shape[static_cast<size_t>(a)];
      rest /= y_shape[static_cast<size_t>(a)];
    }
    for (int64_t o = b; o < e; ++o) {
      int64_t off = 0;
      for (size_t a = 0; a < r; ++a) off += taps[a].idx[static_cast<size_t>(idx[a])] * ist[a];  // (k = 1)
      std::memcpy(yb + static_cast<size_t>(o) * elem, xb + static_cast<size_t>(off) * elem, elem);
      for (size_t a = r; a-- > 0;) {
        if (++idx[a] < y_shape[a]) break;
        idx[a] = 0;
      }
    }
  });
}

}  // namespace npuc::kernels
