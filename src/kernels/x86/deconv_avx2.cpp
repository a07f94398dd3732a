// Transposed convolution f32_deconv__avx2 (compiled with -mavx2 -mfma): the gather-form loops of
// deconv_impl.inc with the fma as one instruction.
#include "kernels/x86/kernel_table.hpp"

namespace npuc::kernels::detail {

namespace {
#include "kernels/x86/deconv_impl.inc"
}  // namespace

void f32_deconv__avx2(const DeconvGeom& g, const float* x, const float* w, const float* bias, float* y,
                      int64_t nm_begin, int64_t nm_end) {
  deconvPlanes(g, x, w, bias, y, nm_begin, nm_end);
}

}  // namespace npuc::kernels::detail
