// The AVX-512 VNNI int8 convolution (kernels/x86/qconv_vnni.cpp): its packed weights and the entry point. Internal to
// the kernels library; callers use kernels::QConv (kernels/quant.hpp).
#pragma once

#include "kernels/quant.hpp"
#include "kernels/x86/quant_x86.hpp"

#include <cstdint>
#include <vector>

namespace npuc::kernels::detail {

/// One output channel's requantization: its multiplier, and its one-rounding constants (used where it has no left
/// shift).
struct ChannelRequant {
  Multiplier mul;
  RequantOnce once;
};

/// What the VNNI path packs once per layer: the weights as quads of consecutive taps (A4 [M][K4] int32, zeros past
/// K), the bias minus (zx + 128) * sum_k w (the unsigned-offset correction) and each channel's multiplier.
struct QConvVnniPlan {
  ConvShape shape;
  int32_t zx = 0;
  QOutput out;
  int64_t k4 = 0, hp = 0, wp = 0;  // quads per row; the padded plane's height and width
  // The im2col's source planes (not for the depthwise form): `direct` where every window lies inside the input (1x1
  // convolutions, unpadded ones: x itself, offset on the way), else offset planes with the padding filled in; their
  // row and plane strides; and per quad of taps q, tap_off[4 q + j] the offset of its row j's first element from its
  // group's first plane (taken once here: the divisions that find a tap's channel and position cost more than cutting
  // a tile of 128 pixels).
  bool direct = false;
  int64_t rs = 0, ps = 0;
  std::vector<int64_t> tap_off;
  std::vector<int32_t> a4, bias;
  std::vector<ChannelRequant> rq;
  // Depthwise (one input and one output channel per group, dilation 1, width stride 1 or 2): no im2col; each input
  // row is cut once into quads of consecutive columns (a per-channel quad plane) that every window row reading it
  // shares. a4 then holds per channel kh x qw quads (qw = ceil(kw / 4), zeros past kw); dw_masks, per window quad and
  // 16-output block, the bytes of its 64-byte load of an input row that lie inside the row.
  bool depthwise = false;
  int64_t qw = 0;
  std::vector<uint64_t> dw_masks;
  // One output pixel (P = 1, one group: a Gemm as a 1x1 convolution, a squeeze-and-excitation layer): vectorised
  // across output channels instead, the weights repacked as w16 [ceil(M / 16)][K4][16] int32 (zeros past M).
  bool gemv = false;
  std::vector<int32_t> w16;
  /// Per block of 16 output channels, their one-rounding constants laid out for the vector form: the multipliers by
  /// lane, the 64-bit constants of the even and of the odd lanes apart; `scalar` where a channel has a left shift.
  struct alignas(64) LaneRequant {
    int32_t m[16] = {};
    int64_t pos[2][8] = {}, neg[2][8] = {}, shift[2][8] = {};  // [even, odd lanes][qword lane]
    bool scalar = false;
  };
  std::vector<LaneRequant> lanes;
  // The AMX product (planned with amx: the path "avx512_amx"; not for depthwise, one-pixel or small-group layers,
  // which keep the forms above): the weights again as a16 [M + 32][K16] int32, K16 = K4 rounded up to 16 quads,
  // zeros past M and past K4 (a tile block reads up to 32 rows from any channel it starts at); a4 is then empty.
  bool amx = false;
  int64_t k16 = 0;
  std::vector<int32_t> a16;
};

inline constexpr int kQConvVnniMaxRows = 6;       // output channels per microkernel call
inline constexpr int64_t kQConvAmxMinQuads = 36;  // the shortest sums (quads of taps) the AMX product takes
/// Small groups (depthwise-like, but not the depthwise form): whole groups per thread, each with its own im2col.
/// (static: each file its own copy — this header is read by files built for AVX-512 and by baseline ones.)
static inline bool qconvVnniByGroup(const ConvShape& s) {
  return s.groups > 1 && s.out_channels / s.groups < 2 * kQConvVnniMaxRows;
}

/// (2-D convolutions; the CPU must have AVX-512F/BW/VL and VNNI, and for `amx` AMX-INT8: amxInt8Usable. Built for the
/// baseline instruction set: qconv_vnni_plan.cpp.)
QConvVnniPlan planQConvVnni(const ConvShape& s, const int8_t* w, const int32_t* bias, int32_t zx, const QOutput& out,
                            bool amx = false);
void qconvVnni(const QConvVnniPlan& plan, const int8_t* x, int8_t* y, ThreadPool* pool);

/// Whether the CPU has AMX-TILE and AMX-INT8 and the OS lets this process use the tiles (asked once; qconv_amx.cpp).
bool amxInt8Usable();
/// Channels [m0, m1) (global indices into the plan) over `n` pixels of an im2col B4 (b at the first pixel, quad rows
/// `bstride` int32 apart, K16 rows readable, rows past K4 any value: they meet zero weights), requantized into
/// y (channel m0's first pixel; channel rows `ystride` apart).
void qproductAmx(const QConvVnniPlan& plan, int64_t m0, int64_t m1, const int32_t* b, int64_t bstride, int64_t n,
                 int8_t* y, int64_t ystride);

}  // namespace npuc::kernels::detail
