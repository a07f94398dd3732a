// The int8 kernels' per-instruction-set entry points (internal to kernels/x86): declared once here, defined in the
// files compiled for their instruction set (*_avx2.cpp, *_avx512.cpp), called by the dispatchers (qconv.cpp,
// qadd.cpp, quantize.cpp) after a CPU check.
#pragma once

#include "kernels/layers.hpp"
#include "kernels/quant.hpp"

#include <cstdint>
#include <vector>

namespace npuc::kernels {

// AVX2 (qconv_avx2.cpp, qconv_tap_avx2.cpp): a row's requantization, the portable tap loop (the AVX2 convolution:
// qconv_avx2.hpp).
void requantizeRowAvx2(const int32_t* acc, int64_t n, int32_t m, int right, int32_t zp, int32_t lo, int32_t hi, int8_t* y);
void accumulateTapFlatAvx2(int32_t* acc, const int16_t* const* src, const int32_t* wv, int taps, int64_t n);
// The baseline build of the same tap loop (qconv.cpp; SSE2).
void accumulateTapFlatBaseline(int32_t* acc, const int16_t* const* src, const int32_t* wv, int taps, int64_t n);

namespace detail {

/// A grow-only scratch buffer of the calling thread, reused from run to run (qconv.cpp), for the instruction-set files,
/// which keep no container of their own: slot 0 the VNNI (or AVX2) convolution's offset, quad or phase planes, 1 its
/// im2col (the AVX2 depthwise form's channel planes), 2 a row
/// tile's packed activations (qconv_vnni.cpp, qmatmul_vnni.cpp), 3-5 the VNNI product's packed operands and zeros
/// (qmatmul_vnni.cpp), 6 the int8-pow2 product's corrections (pow2_conv_vnni.cpp), 7 the int8 max pool's rows
/// (pool_i8_avx512.cpp), 8 a recurrent product's widened vector (rnn_qdot_avx512.cpp). A buffer is the caller's until
/// its next call for that slot; other threads may read it meanwhile.
inline constexpr int kInt8ScratchSlots = 9;
uint8_t* int8Scratch(int slot, size_t bytes);

/// multiplyByMultiplier(x, {m, -r}) for a multiplier without left shift (0 <= r <= 31, m >= 0) as one rounding of
/// the exact 64-bit product. With h = 2^(r-1) for r >= 1 (0 for r = 0), the two roundings
///   q = floor((x m + 2^30) / 2^31)                        (roundingDoublingHighMul)
///   y = floor((q + h - [q < 0 and r >= 1]) / 2^r)         (roundingShiftRight: half away from zero)
/// nest into y = floor((x m + 2^30 + (h - c) 2^31) / 2^(31 + r)) (floor(floor(a / b) / d) = floor(a / (b d)) for
/// integers; an integer times 2^31 passes through the inner floor), where c = [x < 0 and r >= 1]: for m > 0,
/// x < 0 gives q <= 0, and where q = 0 the -1 changes nothing (0 <= h - 1 < 2^r). The sum stays below 2^63
/// (|x m| <= 2^62, 2^30 + h 2^31 <= 2^61 + 2^30).
struct RequantOnce {
  int64_t add_pos = 0, add_neg = 0;  // 2^30 + h 2^31, and that minus 2^31 where r >= 1
  int64_t shift = 31;                // 31 + r
  int32_t m = 0;
};
inline RequantOnce requantOnce(int32_t m, int right) {
  RequantOnce c;
  const int64_t h = right >= 1 ? int64_t{1} << (right - 1) : 0;
  c.add_pos = (int64_t{1} << 30) + h * (int64_t{1} << 31);
  c.add_neg = c.add_pos - (right >= 1 ? int64_t{1} << 31 : 0);
  c.shift = 31 + right;
  c.m = m;
  return c;
}
/// The same in scalar form (the identity the vector forms rely on; tested against multiplyByMultiplier).
inline int32_t multiplyOnce(int32_t x, const RequantOnce& c) {
  const int64_t p = static_cast<int64_t>(x) * c.m;
  return static_cast<int32_t>((p + (p < 0 ? c.add_neg : c.add_pos)) >> c.shift);
}

/// Whether the CPU has AVX-512F, BW and VL; whether it has AVX2 (each checked once; quantize.cpp).
bool cpuHasAvx512bw();
bool cpuHasAvx2();
/// One plane of the int8 product, its gate g = b - zb: requantizeValue((a - za) * g) on AVX-512 (qmul_avx512.cpp;
/// multipliers without a left shift).
void qmulPlaneAvx512(int64_t n, const int8_t* a, int32_t g, const QMulParams& p, int8_t* y);
/// AVX-512 VBMI (byte permutes): qlookup_vbmi.cpp.
bool cpuHasAvx512vbmi();
void qlookupVbmi(int64_t n, const int8_t* x, const int8_t* table, int8_t* y);
// AVX2 (quantize_avx2.cpp): the same element-wise kernels where the CPU has AVX2 but not AVX-512BW.
void qaddAvx2(int64_t n, const int8_t* a, const int8_t* b, const QAddParams& p, int8_t* y);
void quantizeLinearAvx2(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y);
void dequantizeLinearAvx2(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y);
/// (qmul_avx2.cpp, qlookup_avx2.cpp) one plane of the product (a multiplier without left shift), the table.
void qmulPlaneAvx2(int64_t n, const int8_t* a, int32_t g, const QMulParams& p, int8_t* y);
void qlookupAvx2(int64_t n, const int8_t* x, const int8_t* table, int8_t* y);
/// The flat form of the AVX2 int8 max pool (stride 1, input and output rows narrower than 32 bytes): every output
/// of a plane at once over a copy padded with -128 (row stride pw, ph rows), flat output q = oh * pw + ow at
/// q + kh * dh * pw + kw * dw, nv vectors of 32; `size`: the padded plane with room for the last vector's taps.
struct MaxPoolI8Flat {
  int64_t pw = 0, ph = 0, nv = 0, size = 0;
};
/// (quantize.cpp) Whether maxPool2dI8Avx2 pools `s` flat, and then its geometry.
bool maxPoolI8Flat(const Pool2dShape& s, MaxPoolI8Flat& f);
/// (pool_i8_avx2.cpp) maxPool2dI8 of planes [p0, p1). Rows first, then columns: buf holds s.oh rows of `width` bytes,
/// all -128 (width: the padded row, pl + iw or the windows' span, whichever is more, + 128). Flat (flat != null):
/// buf holds flat->size bytes, all -128, then flat->nv * 32 more.
void maxPool2dI8Avx2(const Pool2dShape& s, const int8_t* x, int8_t* y, int64_t p0, int64_t p1, int64_t width, int8_t* buf,
                     const MaxPoolI8Flat* flat);
// AVX-512 (qadd_avx512.cpp, quantize_avx512.cpp, pool_i8_avx512.cpp).
void qaddAvx512(int64_t n, const int8_t* a, const int8_t* b, const QAddParams& p, int8_t* y);
void quantizeLinearAvx512(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y);
void dequantizeLinearAvx512(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y);
void maxPool2dI8Avx512(const Pool2dShape& s, const int8_t* x, int8_t* y, ThreadPool* pool);
/// The distinct right operands of a product's batches (broadcasting repeats one): slot[i] is batch i's, first[s] the
/// first batch of slot s (qmatmul.cpp: computed in the baseline build, so no std::map is instantiated for AVX-512).
struct BSlots {
  std::vector<int64_t> slot, first;
};
// AVX-512 VNNI (qmatmul_vnni.cpp): kernels::qmatmul on the CPUs that have it.
void qmatmulVnni(const MatMulBatches& mb, const BSlots& bs, const int8_t* a, const int8_t* b, const QMatMulParams& p, int8_t* y,
                 ThreadPool* pool);

}  // namespace detail
}  // namespace npuc::kernels
