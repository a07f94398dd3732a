// Window geometry shared by the reference pooling kernels (ref/layers_ref.cpp) and their fast variants
// (x86/pool.cpp): which taps of a window land inside the input, and how many inside the padded extent.
#pragma once

#include "kernels/layers.hpp"
#include "support/error.hpp"

#include <cstdint>

namespace npuc::kernels::detail {

/// Taps [lo, hi) of a window starting at `origin` (k taps, dilation d) that land inside [0, n).
inline void tapRange(int64_t origin, int64_t k, int64_t d, int64_t n, int64_t& lo, int64_t& hi) {
  lo = origin >= 0 ? 0 : (-origin + d - 1) / d;
  if (origin >= n) hi = 0;
  else hi = origin + (k - 1) * d < n ? k : (n - 1 - origin) / d + 1;
  if (hi < lo) hi = lo;
}

/// Taps of the window that land inside the padded extent [-pb, n + pe).
inline int64_t paddedTaps(int64_t origin, int64_t k, int64_t d, int64_t n, int64_t pb, int64_t pe) {
  int64_t cnt = 0;
  for (int64_t t = 0; t < k; ++t) {
    int64_t p = origin + t * d;
    cnt += p >= -pb && p < n + pe;
  }
  return cnt;
}

inline void checkPool(const Pool2dShape& s, const char* what) {
  if (s.planes < 0 || s.ih < 0 || s.iw < 0 || s.oh < 0 || s.ow < 0 || s.kh < 1 || s.kw < 1 || s.sh < 1 ||
      s.sw < 1 || s.dh < 1 || s.dw < 1 || s.pt < 0 || s.pl < 0 || s.pb < 0 || s.pr < 0)
    fail(ErrorCode::kInvalidArgument, "{}: invalid geometry", what);
}

}  // namespace npuc::kernels::detail
