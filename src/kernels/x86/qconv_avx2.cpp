// The fast int8 convolution's hot loop compiled for AVX2 (-mavx2; chosen at run time by kernels/x86/qconv.cpp).
#include <cstdint>

namespace npuc::kernels {

#define NPUC_QCONV_TAP accumulateTapAvx2
#include "kernels/x86/qconv_tap.inc"
#undef NPUC_QCONV_TAP

}  // namespace npuc::kernels
