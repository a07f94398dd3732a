// The AVX2 int8 convolution (kernels/x86/qconv_avx2.cpp): what it packs once per layer and its pieces. qconv.cpp
// builds the plan and runs the pieces on the thread pool (the std containers live there: this header's functions
// take raw pointers, so nothing of the standard library is instantiated with AVX2 code generation — a weak symbol
// compiled for AVX2 could be the one the linker keeps for the whole program). Internal to the kernels library;
// callers use kernels::QConv (kernels/quant.hpp).
//
// Every product is (x - zx) * w with |x - zx| <= 255 and |w| <= 128, exact in int16; vpmaddwd adds two of them into
// int32 exactly, and the sums are exact int32 (the validated accumulator bound): any blocking, order or thread split
// gives qconv_ref's accumulators, then the reference's requantization bit for bit.
#pragma once

#include "kernels/quant.hpp"

#include <cstdint>

namespace npuc::kernels::detail {

/// The layer's geometry and its packed arrays as plain values and pointers (qconv.cpp owns the arrays).
struct QConvAvx2Plan {
  /// kGemm: the product of packed weight panels with an im2col of int16 pairs, tile by tile of flat positions;
  /// kDepthwise (one input and one output channel per group): tap pairs straight over the channel's phase planes;
  /// kGemv (one output pixel, one group: a Gemm as a 1x1 convolution): vectorised across output channels.
  enum class Form { kGemm, kDepthwise, kGemv };
  Form form = Form::kGemm;
  int64_t C = 0, M = 0, G = 1, H = 0, W = 0, OH = 0, OW = 0, KH = 0, KW = 0, SH = 1, SW = 1, DH = 1, DW = 1, PT = 0,
          PL = 0;
  int32_t zx = 0, zy = 0, lo = -128, hi = 127;
  // The input as int16 phase planes (x - zx, 0 in the padding; one plane per stride phase, so every tap reads its
  // plane at stride 1): `phases` per channel, each hpp x wpp; outputs are computed at every flat position
  // q = oy * wpp + ox (q < flat = OH * wpp) and those with ox >= OW discarded. A channel's planes take cstride
  // elements (16 past its last plane: the row writes' vector overrun stays in the channel, so threads building
  // neighbouring channels never write the same element); reads run up to `slack` past the last channel
  // (whatever it holds: only discarded outputs read past a plane, and the pad tap of an odd k has weight 0).
  int64_t phases = 1, hpp = 0, wpp = 0, plane = 0, cstride = 0, flat = 0, slack = 0;
  int64_t k = 0, k2 = 0;            // taps per output channel (C / G x KH x KW) and their pairs (the last one padded)
  int64_t panels = 0;               // kGemm: panels of kQConvAvx2Rows output channels per group
  const int64_t* tap_off = nullptr; // [2 k2]: each tap's offset from its group's first phase plane (the pad tap: tap 0's)
  const int32_t* a = nullptr;       // weights as int16 pairs (the first tap in the low half): kGemm [G][panels][k2][6]
                                    // (zero rows past the group's channels), kDepthwise [C][k2]
  const int8_t* w8 = nullptr;       // kGemv: the weights as int8 pairs [ceil(M / 8)][k2][8][2] (zeros past M)
  const int32_t* bias = nullptr;    // [M rounded up to 8] (0 without a bias, and past M)
  const int32_t* mul = nullptr;     // [M rounded up to 8]: each channel's multiplier,
  const int32_t* right = nullptr;   // its right shift (0 for a left shift: the scalar form then),
  const int32_t* shift = nullptr;   // and the multiplier's own shift
};

inline constexpr int64_t kQConvAvx2Rows = 6;   // output channels per microkernel panel
inline constexpr int64_t kQConvAvx2Tile = 64;  // flat positions per im2col tile (a multiple of 16)

/// The phase planes of channels [c0, c1) of one image xn, into planes (channel c's at c * cstride).
void qconvAvx2Planes(const QConvAvx2Plan& p, const int8_t* xn, int64_t c0, int64_t c1, int16_t* planes);
/// kGemm, units [u0, u1) of one image: unit u = (group, tile, chunk of panels) as qconv.cpp numbers them —
/// (u / (tiles * chunks), u / chunks % tiles, u % chunks); bp: scratch of k2 * kQConvAvx2Tile * 2 int16.
void qconvAvx2Units(const QConvAvx2Plan& p, const int16_t* planes, int64_t tiles, int64_t chunks, int64_t u0, int64_t u1,
                    int16_t* bp, int8_t* yn);
/// kDepthwise, channels [c0, c1) of one image; scratch: cstride + slack int16 (any contents).
void qdwconvAvx2(const QConvAvx2Plan& p, const int8_t* xn, int64_t c0, int64_t c1, int16_t* scratch, int8_t* yn);
/// kGemv, blocks of 8 output channels [b0, b1) of one image whose window values, in int16 pairs, are xk [k2].
void qgemvAvx2(const QConvAvx2Plan& p, const int32_t* xk, int64_t b0, int64_t b1, int8_t* yn);

}  // namespace npuc::kernels::detail
