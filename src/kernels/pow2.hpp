// int8-pow2: TIDL's fixed-point numerics (docs/numerics.md, "int8-pow2"; the TIDL guide, seed 001, §3.15.1.4.7 and
// §3.15.1.4.9). The scalar reference below is the specification; the runtime's layers run exactly these functions.
//
//   real = code * 2^-q          activations: 8-bit codes, signed (int8) or unsigned (uint8), per tensor, q an integer
//                               in [kMinQ, kMaxQ] chosen per frame (dynamic) or once (frozen calibrated ranges)
//   weights                     numParamBits-bit signed codes (4..12, held in int16) per layer at 2^-qw
//   bias                        int32 at 2^-qb (brought to the accumulator's 2^-(qx + qw) with requant's rounding)
//   acc = bias + sum x * w      exact integer sum (int64: the device's 40-bit accumulator cannot overflow — the
//                               translator bounds |acc| below 2^39)
//   y   = sat(floor(acc * 2^(qy - qacc) / S + quantRoundAdd / 100))     S = 1 except averages (S = the count)
//
// Dynamic quantization (TIDL's quantHistoryParam1 / quantHistoryParam2 / quantMargin): each tensor a layer writes
// has a slot holding its range history. For frame n the layer computes its accumulators, takes the real range
// [lo, hi] of this frame's outputs (after the fused activation) and sets
//   range_n = (w * range_{n-1} + (100 - w) * [lo, hi]) / 100,  w = quantHistoryParam1 for the first boot_frames
//   frames, quantHistoryParam2 after; range_{-1} = the calibrated range;
// then qy = the largest q with max(|range_n|) * (1 + quantMargin / 100) * 2^q <= 127 (signed) or 255 (unsigned).
// With both weights 0 each frame is quantized by its own range (the guide's "same result as the import").
// Frozen (stateless): qy comes from the calibrated range (with the margin) and never changes.
#pragma once

#include "kernels/conv.hpp"
#include "kernels/layers.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels::pow2 {

inline constexpr int kMinQ = -24, kMaxQ = 24;  // every q (activation, weight, bias) lies here
inline constexpr int32_t kNoFixedQ = -1000;    // OutSpec::fixed_q: the slot's q follows its range

/// The package-wide options (TIDL's import configuration keys).
struct Options {
  int round_add = 50;      // quantRoundAdd: quantRoundAdd / 100 is added before flooring (0..100)
  bool dynamic = true;     // false: the calibrated ranges, frozen (stateless)
  int history1 = 20;       // quantHistoryParam1: the history's weight in % during the first boot_frames frames
  int history2 = 5;        // quantHistoryParam2: after them
  int margin = 0;          // quantMargin: % added to the range's magnitude
  int boot_frames = 4;     // "initial few frames" (the guide gives no number: npuc's documented choice)
  bool operator==(const Options&) const = default;
};
/// "" when the options are in their ranges, else what is wrong (names the TIDL key).
std::string checkOptions(const Options& o);

/// The activation of a layer, applied to its accumulators.
enum class Act : int32_t { kNone = 0, kRelu = 1, kClip = 2 };

/// What a layer writes: its slot and how the slot starts (the words of OutSpec in a layer's table).
struct OutSpec {
  int32_t slot = -1;  // -1: the layer writes float (dequantize), no slot
  bool is_signed = true;
  Act act = Act::kNone;
  float clip_lo = 0, clip_hi = 0;      // Act::kClip bounds, real
  float init_lo = 0, init_hi = 0;      // the calibrated range
  int32_t fixed_q = kNoFixedQ;         // a q that never changes (a graph input with inQuantFactor)
};
/// The table of a layer (the int32 words the package stores as the layer's last input, the IR as attribute
/// "table"): [n_in, in_slots…, out (8 words: slot, signed, act, clip_lo, clip_hi, init_lo, init_hi, fixed_q), qw, qb].
struct Table {
  std::vector<int32_t> in_slots;
  OutSpec out;
  int32_t qw = 0, qb = 0;  // weights' and bias's q (conv / gemm), 0 elsewhere
};
std::vector<int32_t> encodeTable(const Table& t);
/// Decodes and checks ranges (q's, act code, finite clip / init floats, init_lo <= init_hi). "" or the problem.
std::string decodeTable(const int32_t* w, size_t n, Table* t);

/// A slot: one tensor's q and range history.
struct Slot {
  bool is_signed = true;
  int32_t fixed_q = kNoFixedQ;
  double init_lo = 0, init_hi = 0;
  double lo = 0, hi = 0;  // the history (range_{n-1})
  int64_t frames = 0;
  int q = 0;
};
/// The largest q in [kMinQ, kMaxQ] with m * 2^q <= limit (kMaxQ for m = 0; kMinQ when even that is too large).
int qForMagnitude(double m, double limit);
/// The largest q in [kMinQ, kMaxQ] with max(|lo|, |hi|) * (1 + margin / 100) * 2^q <= 127 (signed) / 255
/// (unsigned) — kMaxQ for an all-zero range; a range beyond 255 * 2^24 gets kMinQ (its codes saturate).
int qForRange(double lo, double hi, bool is_signed, int margin);
/// The slot as it starts (before frame 0, and after Runtime::resetState): history = the calibrated range.
Slot makeSlot(const OutSpec& o, const Options& opt);
/// This frame's q of a slot whose outputs span [lo, hi] (real): updates the history when dynamic.
int updateSlot(Slot& s, double lo, double hi, const Options& opt);

/// floor(acc * 2^a / S + R / 100), exact (a in [-100, 100], S >= 1), saturated to the code range.
int32_t requant(int64_t acc, int a, int64_t S, int round_add, bool is_signed);
/// The code range: [-128, 127] or [0, 255].
inline int32_t codeMin(bool is_signed) { return is_signed ? -128 : 0; }
inline int32_t codeMax(bool is_signed) { return is_signed ? 127 : 255; }
inline int32_t codeAt(const uint8_t* p, int64_t i, bool is_signed) {
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(p[i])) : static_cast<int32_t>(p[i]);
}

/// A tensor of codes: bytes read as int8 or uint8, real = code * 2^-q.
struct Codes {
  const uint8_t* p = nullptr;
  bool is_signed = true;
  int q = 0;
};

/// The bias in accumulator units (2^-qacc): bias * 2^(qacc - qb), a right shift rounded as requant.
int64_t biasAt(int32_t bias, int qb, int qacc, int round_add);

/// Convolution accumulators: acc[n, m, o…] = biasAt(bias[m]) + sum over the taps inside the input of x * w
/// (padding contributes nothing: the code 0 is the real 0). x [N, C, …] codes, w [M, C/g, k…] int16 codes, bias
/// [M] int32 or null. Exact; `pool` splits output channels (any split gives the same integers).
void convAcc(const ConvShape& s, Codes x, const int16_t* w, int qw, const int32_t* bias, int qb, int round_add,
             int64_t* acc, ThreadPool* pool);

/// Transposed convolution accumulators (TIDL's Deconvolution; 2-D): acc[n, m, o] = biasAt(bias[m]) + the sum of
/// x[n, c, i] * w[c, m - g M/G, t] over the input positions i and taps t with o = i * stride - pad_begin + t * dilation
/// (ConvTranspose, kernels/conv.hpp's geometry), c in m's group. x [N, C, H, W] codes, w [C, M/G, kh, kw] int16 codes,
/// bias [M] int32 or null. Exact: any order of the sums gives the same integers (one loop for both modes).
void convTransposeAcc(const ConvTransposeShape& s, Codes x, const int16_t* w, int qw, const int32_t* bias, int qb,
                      int round_add, int64_t* acc);

/// The instruction-set paths of convAccFast (each gives convAcc's integers).
enum class Pow2Path { kBaseline, kAvx2 };
Pow2Path bestPow2Path();
bool cpuHasPow2Path(Pow2Path p);
/// convAcc's integers, fast (x86/pow2_conv.cpp): 2-D only; per image and group an im2col of the codes (int16, zeros
/// in the padding), each output plane summed in int32 one weight times a row of the im2col at a time (vectorised
/// across outputs; zero weights skipped), or as inner products for small planes, when K * 255 * max|w| stays below
/// 2^31 (the bias is added in int64 afterwards); convAcc otherwise. Exact integer sums: the same numbers for any
/// order, vector width or thread split.
void convAccFast(const ConvShape& s, Codes x, const int16_t* w, int qw, const int32_t* bias, int qb, int round_add,
                 int64_t* acc, ThreadPool* pool, Pow2Path path = bestPow2Path());

/// A conv / gemm layer's weights packed once for convFinishFast's VNNI form: `vnni` where the CPU has AVX-512 VNNI and
/// the layer allows it (2-D, every weight in int8, K * 255 * 128 below 2^31); then the weights as int8 quads A4
/// [M][K4] (zeros past K) and each output channel's weight sum.
struct PackedWeights {
  bool vnni = false;
  std::vector<int32_t> a4, wsum;
  int64_t bias_room = 0;  // a bias (in accumulator units) below this in magnitude leaves room for every sum in int32
};
PackedWeights packWeights(const ConvShape& s, const int16_t* w);

/// A conv / gemm layer in fast mode: convAccFast's accumulators finished as `finish` does (the same codes, q and
/// slot). In the VNNI form (packed.vnni, and every bias in accumulator units leaves room for the largest sum in
/// int32): vpdpbusd over byte quads, the sums and their range in int32 (finishI32Avx512); else convAccFast and
/// finish. `acc64` / `acc32` are scratch. Returns qy.
int convFinishFast(const ConvShape& s, Codes x, const int16_t* w, const PackedWeights& packed, int qw, const int32_t* bias,
                   int qb, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y, std::vector<int64_t>& acc64,
                   std::vector<int32_t>& acc32, ThreadPool* pool);

/// quantize, dequantize, add and maxPool in fast mode: their fast:: forms where the CPU has AVX-512 (max pooling on
/// the int8-affine kernel, unsigned codes through XOR 0x80), else the references. The same bytes, q and slots.
int quantizeFast(const float* x, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y);
void dequantizeFast(Codes x, int64_t n, float* y);
int addFast(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
            std::vector<int64_t>& scratch);
void maxPoolFast(const Pool2dShape& s, const uint8_t* x, bool is_signed, uint8_t* y, ThreadPool* pool);

namespace fast {
/// sums[n, m, p] = b0[m] + the sum of x * w over the taps inside the input, int32 (x86/pow2_conv_vnni.cpp; the CPU
/// must have AVX-512 VNNI, the weights packed with packed.vnni).
void convSumsVnni(const ConvShape& s, Codes x, const PackedWeights& packed, const int32_t* b0, int32_t* sums,
                  ThreadPool* pool);
/// finish over int32 accumulators on AVX-512 (F, BW): the range by vector minima and maxima, the hoisted shift eight
/// lanes at a time in int64. finish's numbers.
int finishI32Avx512(const int32_t* acc, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt,
                    uint8_t* y);
/// quantize and dequantize on AVX-512 (F, BW, VL): the same operations lane by lane (the range of the finite values;
/// x · 2^qy in double, + quantRoundAdd / 100, floor, clamp, NaN -> 0; code · 2^-q in float), so the same bytes.
int quantizeAvx512(const float* x, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y);
void dequantizeAvx512(Codes x, int64_t n, float* y);
/// add on AVX-512 where both shifts keep the sums in int32 (Q - q <= 22): the operands aligned in int32 lanes, their
/// range, then the sums again into codes (finishI32Avx512's formulas); add itself otherwise. add's codes, q and slot.
int addAvx512(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
              std::vector<int64_t>& scratch);
/// Whether the CPU has what the *Avx512 functions above need.
bool cpuHasAvx512();
}  // namespace fast

/// Finishes a layer from its accumulators at 2^-qacc / S: applies the activation, takes this frame's range,
/// updates the slot (-> qy) and writes y = requant(acc, qy - qacc, S). Returns qy. (int32 accumulators: the same
/// numbers for the same values.)
int finish(const int64_t* acc, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt,
           uint8_t* y);
int finish(const int32_t* acc, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt,
           uint8_t* y);

/// finish once the accumulators' range [mn, mx] (before the activation; n of them) is known: the activation's bounds,
/// the slot updated (-> qy), and each code's formula — requant(clamp(acc, lo, hi), qy - qacc, S), or where S = 1 the
/// shift hoisted: clamp(((clamp(acc, alo, ahi) << lsh) + add) >> sh, cmin, cmax) (one of lsh, sh is 0), the same
/// numbers.
struct FinishPlan {
  int qy = 0, a = 0;
  int64_t S = 1;
  int round_add = 50;
  bool is_signed = true;
  int64_t lo = 0, hi = 0, cmin = 0, cmax = 0;
  bool hoisted = false;
  int sh = 0, lsh = 0;
  int64_t add = 0, alo = 0, ahi = 0;
  /// The code of one accumulator (out of line: the AVX-512 files call it for their tails and must not hold a copy
  /// built for their instruction set that a baseline caller could be linked to).
  uint8_t code(int64_t acc) const;
};
FinishPlan planFinish(int64_t mn, int64_t mx, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt);

/// Addition of two code tensors of one shape: acc = a * 2^(Q - qa) + b * 2^(Q - qb), Q = max(qa, qb); finished at
/// 2^-Q. Returns qy.
int add(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y, std::vector<int64_t>& scratch);

/// Element-wise maximum of two code tensors of one shape: acc = max(a * 2^(Q - qa), b * 2^(Q - qb)), Q = max(qa, qb)
/// (exact: both brought to the finer q); finished at 2^-Q. Returns qy.
int maximum(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y, std::vector<int64_t>& scratch);
/// Element-wise product of two code tensors of one shape: acc = a * b (exact) at 2^-(qa + qb); finished there.
/// Returns qy.
int multiply(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y, std::vector<int64_t>& scratch);

/// PRelu of codes with slopes as codes at 2^-qs (one slope, or one per channel: `channels` of them, each for `inner`
/// consecutive elements, repeating over `outer`): acc = x * 2^qs where x >= 0, x * slope[c] below (exact), at
/// 2^-(qx + qs); finished there. Returns qy.
int prelu(Codes x, const int16_t* slope, int64_t outer, int64_t channels, int64_t inner, int qs, const OutSpec& o, Slot& slot,
          const Options& opt, uint8_t* y, std::vector<int64_t>& scratch);

/// Concatenation of code tensors of any q's and signedness along an axis: each input's codes brought exactly to the
/// finest q, acc = code * 2^(Q - q_k) with Q = max q_k, in the concatenated order, finished at 2^-Q (one slot for the
/// whole result). chunks[k]: input k's elements per outer index (its extent along the axis times the inner size);
/// outer: the product of the extents before the axis. Returns qy.
int concat(const std::vector<Codes>& ins, const std::vector<int64_t>& chunks, int64_t outer, const OutSpec& o, Slot& slot,
           const Options& opt, uint8_t* y, std::vector<int64_t>& scratch);
/// concat's codes, q and slot, fast: the aligned codes in int32 (every Q - q_k <= 23) finished by finishI32Avx512
/// where the CPU has AVX-512; concat otherwise.
int concatFast(const std::vector<Codes>& ins, const std::vector<int64_t>& chunks, int64_t outer, const OutSpec& o,
               Slot& slot, const Options& opt, uint8_t* y, std::vector<int64_t>& scratch, std::vector<int32_t>& scratch32);

/// Global average pooling: acc = the sum of each plane (size S), finished at 2^-qx / S. Returns qy.
int globalAvgPool(Codes x, int64_t planes, int64_t size, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
                  std::vector<int64_t>& scratch);

/// The divisor every window of an average pooling shares — its taps inside the input, or with count_include_pad inside
/// the padded input (AveragePool's rule) — or 0 when the windows' divisors differ (count_include_pad 0 with padding,
/// ceil_mode's partial windows): the int8-pow2 form needs one.
int64_t avgPoolDivisor(const Pool2dShape& s);
/// Windowed average pooling with one divisor S = avgPoolDivisor(s) > 0: acc = the sum of the window's codes inside the
/// input (a tap in the padding adds nothing: its real value is 0), finished at 2^-qx / S. Returns qy.
int avgPool(const Pool2dShape& s, Codes x, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
            std::vector<int64_t>& scratch);

/// Max pooling on codes (of one q: the output keeps the input's slot): the largest code among the window's taps
/// inside the input (padding never wins; a window wholly in the padding gives the smallest code).
void maxPool(const Pool2dShape& s, const uint8_t* x, bool is_signed, uint8_t* y, ThreadPool* pool);
/// Global max pooling on codes (of one q: the output keeps the input's slot): the largest code of each plane of `size`.
void globalMaxPool(const uint8_t* x, bool is_signed, int64_t planes, int64_t size, uint8_t* y, ThreadPool* pool);

/// An interpolating resize of codes (linear or cubic; kernels::resizeTaps' coordinates and weights): each axis's tap
/// weights rounded to integers at 2^-kResizeF, acc = the sum over the output's tap combinations of the product of
/// their weights times the code (exact), at 2^-(qx + kResizeF * rank). One loop for both modes.
inline constexpr int kResizeF = 10;
void resizeAcc(const std::vector<ResizeTaps>& taps, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape,
               Codes x, int64_t* acc);

/// Softmax of codes as one byte per class (TIDL's classification output): unsigned codes at the fixed 2^-kSoftmaxQ.
/// For each of outer x inner rows of `len` codes (stride inner) with m the row's largest code:
///   e_i = E[m - x_i],  E[d] = round(2^16 exp(-d 2^-q)) for d in [0, 255] (int64, E[0] = 2^16),  s = sum e_i,
///   y_i = sat(floor(e_i 2^8 / s + quantRoundAdd / 100))      (requant(e_i, 8, s): exact integer division)
/// A class with all the mass saturates at 255 (255/256). Integer and exact: one loop for both modes.
inline constexpr int kSoftmaxQ = 8;
void softmax(Codes x, int64_t outer, int64_t len, int64_t inner, int round_add, uint8_t* y);

/// float -> codes: this frame's range of the finite values sets qy (updateSlot), y = sat(floor(x * 2^qy + R / 100))
/// evaluated in double as written (NaN -> 0). Returns qy.
int quantize(const float* x, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y);
/// codes -> float: y = code * 2^-q (exact).
void dequantize(Codes x, int64_t n, float* y);

}  // namespace npuc::kernels::pow2
