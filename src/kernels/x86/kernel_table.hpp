// Internal interface between the blocked drivers (compiled for baseline x86-64) and the ISA-specific
// microkernels (each compiled in its own translation unit with its own target flags).
//
// Microkernel translation units compiled with -mavx2 -mfma include only this header and <immintrin.h>, and keep
// every helper in an anonymous namespace, so no inline function compiled for AVX2 can be merged by the linker
// into code that runs on a baseline CPU.
#pragma once

#include "kernels/activation.hpp"

#include <cstdint>

namespace npuc::kernels::detail {

/// Register tile of the GEMM microkernels: kMR rows of A (packed panels) by kNR columns of B (packed panels).
inline constexpr int64_t kMR = 6;
inline constexpr int64_t kNR = 16;

enum class TileInit : int {
  kZero,     // acc = +0
  kRowBias,  // acc[i][j] = bias[i]   (bias points at kMR values)
  kColBias,  // acc[i][j] = bias[j]   (bias points at kNR values)
  kLoadC,    // acc = C (continuing an earlier k-block)
};

/// A column of `panels` kMR x kNR tiles sharing one packed B panel; tile i uses a + i*a_stride, writes
/// c + i*kMR*ldc and (kRowBias) reads bias + i*kMR. Each tile: C = epilogue(init + sum_k a[k] * b[k]) with one
/// fma per k, k ascending.
struct MicroArgs {
  const float* a = nullptr;  // packed A: kc steps of kMR floats
  const float* b = nullptr;  // packed B: kc steps of kNR floats (64-byte aligned)
  float* c = nullptr;        // full kMR x kNR tiles, row stride ldc
  int64_t kc = 0;
  int64_t ldc = 0;
  int64_t panels = 1;
  int64_t a_stride = 0;
  const float* bias = nullptr;
  TileInit init = TileInit::kZero;
  const Activation* act = nullptr;  // null: store the raw accumulator (more k-blocks follow)
  // Only for the narrow-column kernels (gemm_cols): columns 0..nr-1 of the packed B panel at b (step kNR).
  // mr_last: the valid rows of the last of the `panels` A panels (the others are full); gemm_cols, and
  // gemm / gemm_x2 of tables with rows_tail, honour it.
  int64_t nr = 0;
  int64_t mr_last = kMR;
  // A hint for kernels that can take two A panels at a time (taller tiles): worth it for narrow products.
  bool tall = false;
  // Direct B (gemm and gemm_x2 only): row k of this call's B is the kNR (gemm_x2: 2*kNR) consecutive floats at
  // b + b_off[k], any alignment, instead of a packed panel — the shifted rows of a padded input (x86/conv.cpp,
  // the direct convolution). Null: packed panels.
  const int64_t* b_off = nullptr;
  // Direct B only: also prefetch (into L1) the two cache lines b_prefetch floats past each B row's start — the
  // rows of a later tile, read from memory that may be cold. 0: none.
  int64_t b_prefetch = 0;
  // Direct B of float16 values (AVX-512 gemm / gemm_x2 only): row k at bh + b_off[k] instead of b.
  const uint16_t* bh = nullptr;
  // float16 C (gemm / gemm_x2 of tables with half_c, with act set: the last k-block): the results are rounded
  // to float16 with floatToHalf's bits and stored at ch (row stride ldch) instead of c. Null: c.
  uint16_t* ch = nullptr;
  int64_t ldch = 0;
};
using GemmMicroKernel = void (*)(const MicroArgs&);

/// Narrow column tails: the largest nr gemm_cols accepts. It vectorises across the kMR rows of an A panel
/// instead of across columns, so a tail of nr columns costs nr vector fmas per k rather than kMR.
inline constexpr int64_t kColsMax = 4;

/// One depthwise channel plane over a zero-padded, phase-split copy of the input plane:
/// padded row r, horizontal phase p (column j*sw + p of the padded row) is xq[r*row_stride + p*wq + j].
/// Output (oh, ow) reads tap t at xq[oh*sh*row_stride + ow + tap_off[t]]. Rows have slack so a kernel may
/// compute up to 7 columns past the last output (it must not store them).
struct DwPlaneArgs {
  const float* xq = nullptr;
  int64_t row_stride = 0;
  const int64_t* tap_off = nullptr;
  const float* w = nullptr;  // taps in row-major order
  int64_t taps = 0;
  int64_t out_h = 0, out_w = 0, sh = 1;
  float bias = 0.0f;
  const Activation* act = nullptr;
  float* y = nullptr;  // out_h x out_w, dense
};
using DwPlaneKernel = void (*)(const DwPlaneArgs&);

/// Channel-blocked depthwise (x86/dwconv_block_avx2.cpp). A block holds 8 channels interleaved: padded row r,
/// column c, lane l (channel c0 + l) at xt[(r * wp + c) * 8 + l], 32-byte aligned.
/// Pack: copies the `channels` (1..8) input planes x + l * x_plane (in_h x in_w) into rows ph.., columns pw.. of
/// xt; the margins are left as they are (the driver zeroes them). With xh set, the planes are float16 (at xh + l *
/// x_plane, x unused), widened exactly as they are read.
struct DwPackArgs {
  const float* x = nullptr;
  const float* xb = nullptr;  // instead of x: the eight channels channel-blocked, pixel (h, w) at xb[(h * in_w + w) * 8]
  const uint16_t* xh = nullptr;
  int64_t x_plane = 0, in_h = 0, in_w = 0;
  int channels = 8;
  float* xt = nullptr;
  int64_t wp = 0, ph = 0, pw = 0;
};
using DwPackKernel = void (*)(const DwPackArgs&);
/// Block: output (oh, ow) of lane l = act(bias[l] + sum over taps t = (ki, kj) in row-major order of w[t*8 + l] *
/// xt at padded row oh*sh + ki*dh, column ow*sw + kj*dw), stored at y[l * y_plane + oh * out_w + ow] for
/// l < channels. Reads columns up to (roundup(out_w, 8) - 1) * sw + (kw - 1) * dw of each row. With yh set, the
/// outputs are rounded to float16 (floatToHalf) and stored at the same offsets from yh instead (y unused).
/// With yb set, the outputs stay channel-blocked instead (Layout::kBlocked8): all 8 lanes of output (oh, ow) at
/// yb[(oh * out_w + ow) * 8 ..] (channels must be 8; y and yh unused).
struct DwBlockArgs {
  const float* xt = nullptr;
  int64_t wp = 0;
  const float* w = nullptr;     // taps x 8
  const float* bias = nullptr;  // 8
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, out_h = 0, out_w = 0;
  const Activation* act = nullptr;
  float* y = nullptr;
  uint16_t* yh = nullptr;
  float* yb = nullptr;
  int64_t y_plane = 0;
  int channels = 8;
};
using DwBlockKernel = void (*)(const DwBlockArgs&);

/// Depthwise over channel planes read where they lie (AVX-512, x86/dwconv_avx512.cpp): dilation 1, kh and kw at
/// most kDwInPlaceMaxK, and either stride 1 with out_w == in_w or stride 2 (both directions). For plane p < planes,
/// output (oh, ow) = act(bias[p] + sum over taps (ki, kj) in row-major order of w[p * kh * kw + ki * kw + kj] * the
/// input at x + p * x_plane, row oh * stride + ki - ph, column ow * stride + kj - pw (+0 outside the input)), stored
/// at y[p * y_plane + oh * out_w + ow]. `masks`, stride 1: for output vector v (outputs 16v .. 16v + 15 of the flat
/// plane), one mask per tap (row-major), bit l set when output 16v + l exists and the tap's input is inside the
/// plane. Stride 2: for the j-th 16 outputs of a row and each pair of taps q (columns 2q, 2q + 1),
/// two masks: bit l set when input column 32j - pw + 2q + l (first), + 16 + l (second) is inside the row. With xh
/// (yh) set, the input (output) is float16 there instead: widened exactly, rounded with floatToHalf's bits.
struct DwInPlaceArgs {
  const float* x = nullptr;
  const uint16_t* xh = nullptr;
  int64_t planes = 1, x_plane = 0, y_plane = 0;
  int64_t in_h = 0, in_w = 0;
  int64_t kh = 1, kw = 1, ph = 0, pw = 0;
  int64_t stride = 1;  // 1 or 2
  const float* w = nullptr;
  const float* bias = nullptr;
  const Activation* act = nullptr;
  int64_t out_h = 0, out_w = 0;
  float* y = nullptr;
  uint16_t* yh = nullptr;
  const uint16_t* masks = nullptr;
};
using DwInPlaceKernel = void (*)(const DwInPlaceArgs&);
inline constexpr int64_t kDwInPlaceMaxK = 15;

/// Plain geometry of a transposed convolution, padded to 3 spatial dims, with per-dim tap lists: the taps that
/// hit an input element for output coordinate o along dim d are entries [tap_begin[d][o], tap_begin[d][o+1]) of
/// tap_k[d] (kernel index, ascending) and tap_in[d] (the input index it reads).
struct DeconvGeom {
  int64_t batch = 1, in_channels = 0, out_channels = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  const int64_t* tap_begin[3] = {nullptr, nullptr, nullptr};
  const int64_t* tap_k[3] = {nullptr, nullptr, nullptr};
  const int64_t* tap_in[3] = {nullptr, nullptr, nullptr};
};
/// Computes output planes [nm_begin, nm_end) of (n * out_channels + m), gather form.
using DeconvKernel = void (*)(const DeconvGeom& g, const float* x, const float* w, const float* bias, float* y,
                              int64_t nm_begin, int64_t nm_end);

/// Matrix-vector product over packed A (the N == 1 case): for panels [0, panels) of a packed A (each K * kMR
/// floats), out[p*kMR + i] = init[p*kMR + i] (or +0 when init is null) + sum_k a[p][k][i] * x[k], one fma per k,
/// k ascending. No activation.
using GemvPackedKernel = void (*)(const float* a, int64_t panels, int64_t K, const float* x, const float* init,
                                  float* out);

/// Row-vector times matrix (the M == 1 case): out[n] = (init ? init[n] : init0) + sum_k x[k] * B[k*ldb + n] for
/// n in [0, N), one fma per k, k ascending. No activation.
using GemvRowKernel = void (*)(const float* x, const float* B, int64_t ldb, int64_t K, int64_t N,
                               const float* init, float init0, float* out);

/// One plane of a 2-D pooling over a padded, phase-split copy of the input plane (x86/pool.cpp): padded row r,
/// column c is at xp[r * row_stride + (c % sw) * phase_stride + c / sw], so output (oh, ow) combines, over the
/// taps (kh, kw) in row-major order, the element of padded row oh*sh + kh*dh, column ow*sw + kw*dw — at
/// xp[(oh*sh + kh*dh) * row_stride + ((kw*dw) % sw) * phase_stride + ow + (kw*dw) / sw] — max:
/// `v > acc ? v : acc` from -inf; sum: acc + v from +0; stored at y[oh * out_w + ow]. A kernel may read each phase
/// up to index roundup(out_w, 8) - 1 + ((kw - 1) * dw) / sw. The kernel first copies the input plane x (in_h x in_w,
/// dense) into rows pt.. and columns pl.. of xp; the margins hold the neutral value already. (Kernels that read x in
/// place, KernelTable::pool_in_place, compute the same outputs without xp.)
struct PoolPlaneArgs {
  const float* x = nullptr;
  int64_t in_h = 0, in_w = 0, pt = 0, pl = 0;
  float* xp = nullptr;
  int64_t row_stride = 0, phase_stride = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t out_h = 0, out_w = 0;
  bool is_max = true;
  float* y = nullptr;
};
using PoolPlaneKernel = void (*)(const PoolPlaneArgs&);

/// A 2-D pooling over channel-blocked tensors (Layout::kBlocked8), Pool2dShape's geometry: x and y hold blocks of 8
/// channels (block b's position p at b * plane * 8 + p * 8); a PoolBlockedKernel computes block rows [r0, r1)
/// (r = block * out_h + output row) with maxPool2d's / avgPool2d's bits in each lane (pool_blocked_impl.inc).
struct PoolBlockedArgs {
  const float* x = nullptr;
  float* y = nullptr;
  int64_t ih = 1, iw = 1, oh = 1, ow = 1, kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool max = true, count_include_pad = false;
  float pad_value = 0.0f;  // max: the padding's taps when above -inf
};
using PoolBlockedKernel = void (*)(const PoolBlockedArgs&, int64_t r0, int64_t r1);
/// Global max / average pooling of blocks [b0, b1) of a channel-blocked x (size positions each) into y (8 values per
/// block, planes order): each lane reduced in index order as globalMaxPool / globalAvgPool reduce each plane.
using GlobalPoolBlockedKernel = void (*)(bool max, int64_t size, const float* x, float* y, int64_t b0, int64_t b1);

/// Direct convolution vectorised across output channels (AVX-512, x86/conv_oc_avx512.cpp) over one (image, group)'s
/// zero-padded input xq (channel c, padded row r, column q at xq[c * pp + r * wq + q]) for a block of `channels`
/// (1..32) output channels: output (o, oh, ow) for oh in [oh0, oh1), ow < out_w is
/// act(bias[o] + sum over k ascending of w[k * 32 + o] * xq[oh * sh * wq + ow * sw + off[k]]), one fma per k
/// (+0 without bias), stored at y[o * y_plane + oh * out_w + ow] (float16 at yh instead, with floatToHalf's bits).
/// With off[k] = c * pp + ki * dh * wq + kj * dw for k = (c, ki, kj) in row-major order, that is conv_ref's sum.
/// w: K steps of 32 floats (zeros past `channels`); bias: 32 floats or null. sw: 1 or 2 (the AVX2 form: any, so
/// a channel-blocked input is xq with sw = 8, wq = 8 * in_w and off[k] = (k / 8) * 8 * in_h * in_w + k % 8).
struct ConvOcArgs {
  const float* xq = nullptr;
  int64_t wq = 0;
  const int64_t* off = nullptr;
  int64_t K = 0;
  const float* w = nullptr;
  const float* bias = nullptr;
  const Activation* act = nullptr;
  int64_t sh = 1, sw = 1;
  int64_t oh0 = 0, oh1 = 0, out_w = 0;
  float* y = nullptr;
  uint16_t* yh = nullptr;
  int64_t y_plane = 0;
  int channels = 32;
  // The AVX2 form only: the output channel-blocked instead (Layout::kBlocked8): channel o of position q = oh * out_w
  // + ow at yb[((o / 8) * y_plane + q) * 8 + o % 8], every lane of each 8 (channels a multiple of 8; y, yh unused).
  float* yb = nullptr;
};
using ConvOcKernel = void (*)(const ConvOcArgs&);

/// Packs B[k0:k0+kc, n0:n0+nc] of a pointwise product whose input is channel-blocked (Layout::kBlocked8: B[k][n] at
/// x[(k / 8) * 8 * hw + n * 8 + k % 8], x the image's input) into kNR-column panels: panel j, step kl at
/// dst[(j * kc + kl) * kNR], zeros past nc — the layout of the planes' packer.
struct PackBlockedArgs {
  const float* x = nullptr;
  int64_t hw = 0, k0 = 0, kc = 0, n0 = 0, nc = 0;
  float* dst = nullptr;
};
using PackBlockedKernel = void (*)(const PackBlockedArgs&);
/// The output channels ConvOcArgs::w holds per tap (AVX-512: one tile of 32; AVX2: two of 16, one after the other, one
/// of 24 for a block of 17-24 channels, or all 32 in the K-blocked tiles of a deep block of 25-32).
inline constexpr int64_t kOcBlock = 32;
/// The AVX2 form's K-blocked tiles take a block of 25-32 channels deeper than kOcAvx2BlockedDepth (shallower ones
/// lose more to the partial sums' round trips than the blocking saves: the 7x7 stem, Tiny-YOLOv2's 16 -> 32 @208)
/// with output rows of at most kOcAvx2MaxRow positions (a band's partial sums wait in a buffer of 32 channels per
/// position between chunks of taps).
inline constexpr int64_t kOcAvx2BlockedDepth = 256;
inline constexpr int64_t kOcAvx2MaxRow = 256;

/// A table names its kernels by field (designated initializers); fields it leaves out are null / false.
struct KernelTable {
  const char* name = nullptr;
  GemmMicroKernel gemm = nullptr;     // kMR x kNR tiles
  GemmMicroKernel gemm_x2 = nullptr;  // kMR x 2*kNR tiles over two adjacent packed B panels (b, b + kc*kNR;
                                      // kColBias: 2*kNR values); null when the table has none
  GemmMicroKernel gemm_n8 = nullptr;  // kMR x 8 tiles: the first 8 columns of each packed B panel (kColBias: 8 values)
  DwPlaneKernel dwconv = nullptr;  // depthwise over padded planes: tables without the channel-blocked pair
  DwPackKernel dwconv_pack8 = nullptr;  // channel-blocked depthwise; both null when the table has none
  DwBlockKernel dwconv_block8 = nullptr;
  DwInPlaceKernel dwconv_in_place = nullptr;  // null when the table has none
  DeconvKernel deconv = nullptr;
  ConvOcKernel conv_oc = nullptr;  // null when the table has none
  bool conv_oc_all = false;  // conv_oc takes every convolution it can; false: those Conv::Impl::oc_avx2 marks
  // conv_oc's form for any ConvOcArgs::sw (the AVX2 one): a pointwise convolution reading a channel-blocked input
  // (Layout::kBlocked8: sw = 8, wq = 8 * in_w, off[k] = (k / 8) * 8 * HW + k % 8); null: such inputs are reordered
  ConvOcKernel conv_oc_blocked = nullptr;
  // B of a pointwise product packed from a channel-blocked input (the AVX2 form; null: such inputs are reordered)
  PackBlockedKernel pack_b_blocked8 = nullptr;
  GemmMicroKernel gemm_cols = nullptr;  // 1..kColsMax columns (args.nr) of `panels` A panels, rows of the last: mr_last
  GemvPackedKernel gemv_packed = nullptr;
  GemvRowKernel gemv_row = nullptr;
  PoolPlaneKernel pool_plane = nullptr;
  bool (*pool_in_place)(const PoolPlaneArgs&) = nullptr;  // whether pool_plane reads x in place (xp unused); null: never
  PoolBlockedKernel pool_blocked8 = nullptr;               // every table has one (the portable: scalar)
  GlobalPoolBlockedKernel global_pool_blocked8 = nullptr;
  bool rows_tail = false;  // gemm / gemm_x2 honour MicroArgs::mr_last (a partial last A panel): no runTile for it
  bool half_b = false;     // gemm / gemm_x2 read direct B of float16 values (MicroArgs::bh)
  bool half_c = false;     // gemm / gemm_x2 store float16 results (MicroArgs::ch)
};

/// The table dispatch chose: the widest ISA the CPU has (AVX-512F+VL+BW, AVX2/FMA, portable), capped by
/// forceKernelIsa / forcePortableKernels.
const KernelTable& activeKernels();
/// Whether the active table is an AVX one (those need F16C too), so the F16C conversions may run: a cheap check for
/// row-sized conversions inside kernels.
bool activeF16c();
/// Whether the active table is the AVX-512 one: kernels outside the table (recurrent's products, Sigmoid / Tanh over
/// arrays) take their AVX-512 forms only then, so forceKernelIsa tests every form they have.
bool activeAvx512();
/// Whether the active table is the AVX2 / FMA one or wider (the recurrent products' AVX2 form).
bool activeAvx2();

/// F16C conversions (x86/convert_f16c.cpp): what f32ToF16 / f16ToF32 dispatch to (x86/convert.cpp).
void f16ToF32__f16c(const uint16_t* x, float* y, int64_t n);
void f32ToF16__f16c(const float* x, uint16_t* y, int64_t n, const Activation& act);

void f32_gemm__avx512_6x16(const MicroArgs& p);
void f32_gemm__avx512_6x32(const MicroArgs& p);

void f32_gemv_packed__avx2(const float* a, int64_t panels, int64_t K, const float* x, const float* init, float* out);
void f32_gemv_packed__scalar(const float* a, int64_t panels, int64_t K, const float* x, const float* init,
                             float* out);
void f32_gemv_row__avx2(const float* x, const float* B, int64_t ldb, int64_t K, int64_t N, const float* init,
                        float init0, float* out);
void f32_gemv_row__scalar(const float* x, const float* B, int64_t ldb, int64_t K, int64_t N, const float* init,
                          float init0, float* out);
void f32_gemm_cols__avx2(const MicroArgs& p);
void f32_gemm_cols__scalar(const MicroArgs& p);
void f32_gemm__avx2_6x16(const MicroArgs& p);
void f32_gemm__scalar_6x16(const MicroArgs& p);
void f32_gemm__avx2_6x8(const MicroArgs& p);
void f32_gemm__scalar_6x8(const MicroArgs& p);
void f32_dwconv2d__scalar(const DwPlaneArgs& p);
void f32_dwconv_pack8__avx2(const DwPackArgs& p);
void f32_dwconv_block8__avx2(const DwBlockArgs& p);
void f32_dwconv_in_place__avx512(const DwInPlaceArgs& p);
void f32_conv_oc__avx512(const ConvOcArgs& p);
void f32_conv_oc__avx2(const ConvOcArgs& p);
void f32_pack_b_blocked8__avx2(const PackBlockedArgs& p);
void poolCopyPlane(const PoolPlaneArgs& p);  // the copy step, portable (x86/pool.cpp)
void f32_pool_plane__avx2(const PoolPlaneArgs& p);  // max pools in place (f32_pool_in_place__avx2); others: a copy
bool f32_pool_in_place__avx2(const PoolPlaneArgs& p);
void f32_max_pool_in_place__avx2(const PoolPlaneArgs& p);  // x86/pool_max_avx2.cpp: f32_pool_in_place__avx2 holds
void f32_pool_plane__avx512(const PoolPlaneArgs& p);  // max pools in place (f32_pool_in_place__avx512); others: AVX2
bool f32_pool_in_place__avx512(const PoolPlaneArgs& p);
void f32_pool_plane__scalar(const PoolPlaneArgs& p);
void f32_pool_blocked8__avx2(const PoolBlockedArgs& a, int64_t r0, int64_t r1);
void f32_pool_blocked8__scalar(const PoolBlockedArgs& a, int64_t r0, int64_t r1);
void f32_global_pool_blocked8__avx2(bool max, int64_t size, const float* x, float* y, int64_t b0, int64_t b1);
void f32_global_pool_blocked8__scalar(bool max, int64_t size, const float* x, float* y, int64_t b0, int64_t b1);
void f32_deconv__avx2(const DeconvGeom& g, const float* x, const float* w, const float* bias, float* y,
                      int64_t nm_begin, int64_t nm_end);
void f32_deconv__scalar(const DeconvGeom& g, const float* x, const float* w, const float* bias, float* y,
                        int64_t nm_begin, int64_t nm_end);

}  // namespace npuc::kernels::detail
