#include "kernels/convert.hpp"

#include "support/fp16.hpp"

namespace npuc::kernels {

void f16ToF32_ref(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = halfToFloat(x[i]);
}

void f32ToF16_ref(const float* x, uint16_t* y, int64_t n, const Activation& act) {
  if (act.kind == ActKind::kNone)
    for (int64_t i = 0; i < n; ++i) y[i] = floatToHalf(x[i]);
  else
    for (int64_t i = 0; i < n; ++i) y[i] = floatToHalf(applyActivation(x[i], act));
}

}  // namespace npuc::kernels
