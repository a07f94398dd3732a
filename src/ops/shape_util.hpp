// Shape arithmetic shared by op schemas and kernels: broadcasting, axis normalisation, pooling/conv output
// sizes. Header-only, depends on support only, so the engine's kernels can use the same definitions.
#pragma once

#include "support/error.hpp"
#include "support/tensor.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace npuc::ops {

/// numpy broadcasting of two shapes; returns false when incompatible.
inline bool broadcastShapes(const Shape& a, const Shape& b, Shape& out) {
  size_t r = std::max(a.size(), b.size());
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else return false;
  }
  return true;
}

/// Maps a possibly negative axis into [0, rank); false when out of range.
inline bool normalizeAxis(int64_t& axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  return true;
}

/// Output size of a sliding window along one dim (floor or ceil mode), ONNX conventions.
inline int64_t windowOutput(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pb, int64_t pe, bool ceil_mode) {
  int64_t eff = (k - 1) * dil + 1;
  int64_t span = in + pb + pe - eff;
  if (span < 0) return 0;
  int64_t o = ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
  // ceil mode: the last window must start inside the input or the left padding
  if (ceil_mode && (o - 1) * stride >= in + pb) --o;
  return o;
}

/// Resolves auto_pad SAME_UPPER / SAME_LOWER / VALID / NOTSET into explicit pads for one dim.
inline void autoPad(const std::string& mode, int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t& pb,
                    int64_t& pe) {
  if (mode == "VALID") {
    pb = pe = 0;
  } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    int64_t out = (in + stride - 1) / stride;
    int64_t eff = (k - 1) * dil + 1;
    int64_t total = std::max<int64_t>(0, (out - 1) * stride + eff - in);
    pb = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
    pe = total - pb;
  }
}

}  // namespace npuc::ops
