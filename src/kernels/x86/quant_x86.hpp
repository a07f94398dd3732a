// The int8 kernels' per-instruction-set entry points (internal to kernels/x86): declared once here, defined in the
// files compiled for their instruction set (*_avx2.cpp, *_avx512.cpp), called by the dispatchers (qconv.cpp,
// qadd.cpp, quantize.cpp) after a CPU check.
#pragma once

#include "kernels/quant.hpp"

#include <cstdint>

namespace npuc::kernels {

// AVX2 (qconv_avx2.cpp, qconv_tap_avx2.cpp): the int16-pair product, its requantization, the portable tap loop.
void qgemmPairsAvx2(int64_t m0, int64_t m1, int64_t P, int64_t K2, const int32_t* A2, const int16_t* B2, int32_t* C);
void requantizeRowAvx2(const int32_t* acc, int64_t n, int32_t m, int right, int32_t zp, int32_t lo, int32_t hi, int8_t* y);
void accumulateTapFlatAvx2(int32_t* acc, const int16_t* src, int64_t n, int32_t wv);

namespace detail {

/// Whether the CPU has AVX-512F, BW and VL (checked once; quantize.cpp).
bool cpuHasAvx512bw();
// AVX-512 (qadd_avx512.cpp, quantize_avx512.cpp, pool_i8_avx512.cpp).
void qaddAvx512(int64_t n, const int8_t* a, const int8_t* b, const QAddParams& p, int8_t* y);
void quantizeLinearAvx512(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y);
void dequantizeLinearAvx512(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y);
void maxPool2dI8Avx512(const Pool2dShape& s, const int8_t* x, int8_t* y, ThreadPool* pool);

}  // namespace detail
}  // namespace npuc::kernels
