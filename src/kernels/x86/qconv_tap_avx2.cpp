// The int8 convolution's portable tap loop compiled with AVX2 (-mavx2; chosen at run time by qconv.cpp): the same
// source as the baseline build (qconv_tap.inc), 16 output columns per step instead of 8.
#include "kernels/x86/quant_x86.hpp"

#include <immintrin.h>

#include <cstdint>

namespace npuc::kernels {

#define NPUC_QCONV_TAP_FLAT accumulateTapFlatAvx2
#include "kernels/x86/qconv_tap.inc"
#undef NPUC_QCONV_TAP_FLAT

}  // namespace npuc::kernels
