// The int8-pow2 convolution's inner loops compiled with AVX2 (-mavx2; chosen at run time by pow2_conv.cpp): the same
// source as the baseline build (pow2_tap.inc), 8 lanes of int32 products (vpmulld) instead of SSE2's emulation.
#include <cstdint>

namespace npuc::kernels::pow2 {

#define NPUC_POW2_TAP pow2TapAvx2
#define NPUC_POW2_DOT pow2DotAvx2
#include "kernels/x86/pow2_tap.inc"
#undef NPUC_POW2_TAP
#undef NPUC_POW2_DOT

}  // namespace npuc::kernels::pow2
