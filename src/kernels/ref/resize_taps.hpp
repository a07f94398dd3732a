// The taps of the bilinear resize (resize_hwc, kernels/prepost.hpp), shared by the reference kernel
// (ref/prepost_ref.cpp) and its fast variant (x86/prepost_fast.cpp) so both read the same weights.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace npuc::kernels::detail {

struct Tap {
  int64_t i0 = 0, i1 = 0;  // source indices (clamped)
  float w0 = 1.0f, w1 = 0.0f;
  int32_t q0 = 2048, q1 = 0;  // rne(w * 2048)
};

/// OpenCV's INTER_LINEAR taps along one axis (resize.cpp): clamp_weights for x, not for y. `area`: the taps
/// INTER_AREA takes where it enlarges (the same fixed point, another coordinate: s = floor(d * in / out), f the
/// fractional part of (d + 1) - (s + 1) * out / in when that is positive, else 0).
inline std::vector<Tap> linearTaps(int64_t in, int64_t out, bool clamp_weights, bool area = false) {
  std::vector<Tap> taps(static_cast<size_t>(out));
  const double inv_scale = static_cast<double>(out) / static_cast<double>(in), scale = 1.0 / inv_scale;
  for (int64_t d = 0; d < out; ++d) {
    float f;
    int64_t s;
    if (!area) {
      f = static_cast<float>((static_cast<double>(d) + 0.5) * scale - 0.5);
      s = static_cast<int64_t>(std::floor(f));
      f -= static_cast<float>(s);
    } else {
      s = static_cast<int64_t>(std::floor(static_cast<double>(d) * scale));
      f = static_cast<float>(static_cast<double>(d + 1) - static_cast<double>(s + 1) * inv_scale);
      f = f <= 0.0f ? 0.0f : f - std::floor(f);
    }
    if (clamp_weights) {
      if (s < 0) s = 0, f = 0.0f;
      if (s >= in - 1) s = in - 1, f = 0.0f;
    }
    Tap& t = taps[static_cast<size_t>(d)];
    t.i0 = std::clamp<int64_t>(s, 0, in - 1);
    t.i1 = std::clamp<int64_t>(s + 1, 0, in - 1);
    t.w0 = 1.0f - f;
    t.w1 = f;
    t.q0 = static_cast<int32_t>(std::nearbyint(t.w0 * 2048.0f));
    t.q1 = static_cast<int32_t>(std::nearbyint(t.w1 * 2048.0f));
  }
  return taps;
}

}  // namespace npuc::kernels::detail
