// Portable depthwise convolution plane kernel f32_dwconv2d__scalar: same contract as the AVX2 kernel, one output
// at a time with std::fma (exact).
#include "kernels/x86/kernel_table.hpp"

#include <cmath>

namespace npuc::kernels::detail {

void f32_dwconv2d__scalar(const DwPlaneArgs& p) {
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const float* xr = p.xq + oh * p.sh * p.row_stride;
    float* yr = p.y + oh * p.out_w;
    for (int64_t ow = 0; ow < p.out_w; ++ow) {
      float acc = p.bias;
      for (int64_t t = 0; t < p.taps; ++t) acc = std::fma(p.w[t], xr[ow + p.tap_off[t]], acc);
      yr[ow] = applyActivation(acc, *p.act);
    }
  }
}

}  // namespace npuc::kernels::detail
