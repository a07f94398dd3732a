// Integer numerics: the scalar reference of the int8-affine profile (docs/numerics.md, "int8-affine"), the
// specification every fast int8 kernel must reproduce bit for bit.
//
//   real = (q - zero_point) * scale          activations: int8 per tensor, any zero point in [-128, 127]
//                                            weights: int8 in [-127, 127] per output channel, zero point 0
//   acc  = bias[c] + sum (x - zx) * w[c]     int32, exact (a padded tap contributes nothing: x = zx)
//   y    = clamp(zy + requantize(acc, M[c]), lo, hi)
//
// requantize multiplies by a real factor (in_scale * w_scale[c] / out_scale) held as a Q31 fixed-point multiplier
// and a power-of-two shift, rounded as gemmlowp / TFLite do by default ("double rounding"): a rounding doubling high
// multiply (half toward +inf) and a rounding right shift (half away from zero). Every integer step is exact, so the
// result does not depend on the order of the sum, the vector width or the thread count. All float math (the
// multipliers, quantized weights and biases) happens once, at translation, and lands in the package as integers.
#pragma once

#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layers.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels {

/// A real factor r as m * 2^(shift - 31), m in [2^30, 2^31) (or 0 for r = 0), shift in [-31, 30].
struct Multiplier {
  int32_t m = 0;
  int32_t shift = 0;
};

/// The multiplier of a real factor r >= 0 (the compile-time step): frexp(r) = q * 2^e with q in [0.5, 1),
/// m = round_half_away(q * 2^31) (m = 2^31 becomes 2^30 with e + 1), shift = e; factors below 2^-31 give 0;
/// factors of 2^30 or more are refused (std::invalid_argument: no layer needs one).
Multiplier quantizeMultiplier(double r);
/// m * 2^(shift - 31) as a double (exact): what the multiplier stands for.
double multiplierValue(Multiplier mul);

/// Rounding doubling high multiply: floor((a * b + 2^30) / 2^31) (half toward +inf), saturating the one overflow
/// a = b = INT32_MIN to INT32_MAX.
inline int32_t roundingDoublingHighMul(int32_t a, int32_t b) {
  if (a == std::numeric_limits<int32_t>::min() && b == std::numeric_limits<int32_t>::min())
    return std::numeric_limits<int32_t>::max();
  const int64_t p = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  // floor((p + 2^30) / 2^31): an arithmetic shift is floor division (C++20 defines >> of negatives so).
  return static_cast<int32_t>((p + (int64_t{1} << 30)) >> 31);
}
/// x / 2^e rounded to nearest, half away from zero (0 <= e <= 31).
inline int32_t roundingShiftRight(int32_t x, int e) {
  if (e <= 0) return x;
  const int32_t mask = static_cast<int32_t>((int64_t{1} << e) - 1);
  const int32_t rem = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> e) + (rem > threshold ? 1 : 0);
}
/// x * multiplier: (x * 2^max(shift, 0)) through roundingDoublingHighMul, then roundingShiftRight by
/// max(-shift, 0). The left shift saturates to int32 (it cannot overflow for the factors of real layers).
inline int32_t multiplyByMultiplier(int32_t x, Multiplier mul) {
  const int left = std::max(mul.shift, 0), right = std::max(-mul.shift, 0);
  const int64_t wide = static_cast<int64_t>(x) * (int64_t{1} << left);
  const int32_t shifted = static_cast<int32_t>(std::clamp<int64_t>(wide, std::numeric_limits<int32_t>::min(),
                                                                   std::numeric_limits<int32_t>::max()));
  return roundingShiftRight(roundingDoublingHighMul(shifted, mul.m), right);
}

/// y = clamp(zp + multiplyByMultiplier(acc, mul), lo, hi) as an int8 code, the sum taken in 64 bits (the validated
/// accumulator bound keeps it in int32 for multipliers below 1, which the vector forms rely on).
inline int8_t requantizeValue(int32_t acc, Multiplier mul, int32_t zp, int32_t lo, int32_t hi) {
  return static_cast<int8_t>(std::clamp<int64_t>(int64_t{zp} + multiplyByMultiplier(acc, mul), lo, hi));
}

/// float -> int8 of a tensor with (scale, zero_point): clamp(round_half_away(x / scale) + zp, -128, 127); NaN -> zp.
int8_t quantizeValue(float x, float scale, int32_t zero_point);
/// (q - zp) * scale, in float.
float dequantizeValue(int8_t q, float scale, int32_t zero_point);

/// The quantized product of one output row / channel set (a Conv or Gemm layer in int8-affine).
struct QOutput {
  int32_t zero_point = 0;             // zy
  int32_t lo = -128, hi = 127;        // the clamp (a fused Relu / Relu6 narrows it)
  std::vector<Multiplier> multiplier; // per output channel, or one for all
  const Multiplier& of(int64_t c) const { return multiplier.size() == 1 ? multiplier[0] : multiplier[static_cast<size_t>(c)]; }
};

/// y[m, n] = clamp(zy + multiplyByMultiplier(bias[n] + sum_k (a[m, k] - za) * w[n, k], M[n]), lo, hi):
/// a [M, K] int8 with zero point za, w [N, K] int8 (zero point 0), bias [N] int32 or null.
void qgemm_ref(int64_t M, int64_t N, int64_t K, const int8_t* a, int32_t za, const int8_t* w, const int32_t* bias,
               const QOutput& out, int8_t* y);

/// The int8-affine convolution (1 to 3 spatial dims, groups, strides, dilations, pads): x int8 [N, C, in…] with
/// zero point zx, w int8 [M, C/groups, k…] (zero point 0), bias int32 [M] or null;
/// acc = bias[m] + sum over the taps inside the input of (x - zx) * w (a tap in the padding adds nothing, as if
/// x = zx: the zero point is the padded value), y = clamp(zy + multiplyByMultiplier(acc, M[m]), lo, hi).
void qconv_ref(const ConvShape& s, const int8_t* x, int32_t zx, const int8_t* w, const int32_t* bias,
               const QOutput& out, int8_t* y);

/// The fast int8 convolution's instruction-set paths (each gives qconv_ref's bits).
enum class QConvPath {
  kBaseline,  // per-tap loops over flat int16 (phase) planes: portable C++ the compiler vectorises (baseline / AVX2
              // builds); the simulator's --exact mode
  kAvx2,      // vpmaddwd over an im2col of int16 pairs
  kVnni,      // AVX-512 VNNI vpdpbusd over an im2col of unsigned quads, weights packed once
  kAmx,       // kVnni with its products on AMX tiles (TDPBSUD) where the CPU and the OS allow them
};
/// The widest path this CPU has; whether it has `path`; its name ("baseline", "avx2", "avx512_vnni", "avx512_amx").
QConvPath bestQConvPath();
bool cpuHasQConvPath(QConvPath path);
const char* qconvPathName(QConvPath path);

/// qconv_ref's bits, fast, for one layer: the weights packed once at construction (w and bias must outlive the
/// object: the baseline and AVX2 paths read them on each run), then run() per input. 2-D convolutions take the
/// chosen path; others (1-D, 3-D, windows far wider than the input) run qconv_ref. Integer sums are exact, so any
/// order, any blocking and any split of the work among `pool`'s threads give the reference's bytes.
class QConv {
 public:
  QConv(const ConvShape& s, const int8_t* w, const int32_t* bias, int32_t zx, QOutput out,
        QConvPath path = bestQConvPath());
  ~QConv();
  QConv(const QConv&) = delete;
  QConv& operator=(const QConv&) = delete;
  void run(const int8_t* x, int8_t* y, ThreadPool* pool) const;
  QConvPath path() const { return path_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  QConvPath path_;
};

/// One call of QConv on the best path (packs the weights each call: layers that run more than once keep a QConv).
void qconv(const ConvShape& s, const int8_t* x, int32_t zx, const int8_t* w, const int32_t* bias, const QOutput& out,
           int8_t* y, ThreadPool* pool);

/// The int8-affine addition y = a + b of three tensors with their own (scale, zero point), in integers
/// (docs/numerics.md): one exact int32 sum of the operands scaled by 16-bit multipliers, one rounding shift,
///   acc = (a - za) * ma + (b - zb) * mb        ma, mb in [0, 2^15): round(sa / sy * 2^shift), round(sb / sy * 2^shift)
///   y   = clamp(zy + floor((acc + 2^(shift - 1)) / 2^shift), lo, hi)     (rounds half toward +inf)
/// shift in [1, 30] is the largest that keeps both multipliers below 2^15 (the larger in [2^14, 2^15)), so each
/// scale ratio carries 15 significant bits: |acc / 2^shift - the real sum| <= 255 * 2^-14 * max(sa, sb) / sy.
/// (a - za, b - zb) pairs times (ma, mb) is one vpmaddwd: the form vectorises as a dot product of int16 pairs.
struct QAddParams {
  int32_t za = 0, zb = 0, zy = 0, lo = -128, hi = 127;
  int32_t ma = 0, mb = 0, shift = 1;
};
/// The parameters of y = a + b for the scales and zero points given (the compile-time step; a fused Relu / Clip
/// narrows [lo, hi]). Throws std::invalid_argument for scales that are not finite and positive, or an operand scale
/// 2^14 times the output's or more (no shift of at least 1 fits).
QAddParams qaddParams(double sa, int32_t za, double sb, int32_t zb, double sy, int32_t zy, int32_t lo = -128, int32_t hi = 127);
/// n elements of y = a + b (same shape).
void qadd_ref(int64_t n, const int8_t* a, const int8_t* b, const QAddParams& p, int8_t* y);
/// qadd_ref's bits, fast (AVX-512 where the CPU has it, else the reference in chunks on `pool`'s threads).
void qadd(int64_t n, const int8_t* a, const int8_t* b, const QAddParams& p, int8_t* y, ThreadPool* pool);

/// The int8-affine product of two activations (attention's Q·Kᵀ and P·V; docs/numerics.md), per batch of `mb`
/// (MatMul's broadcasting): a [..., M, K] and b [..., K, N] int8 with their own zero points,
///   acc[m, n] = sum_k (a[m, k] - za) * (b[k, n] - zb)        int32, exact: K * 255 * 255 < 2^31 (K <= 33025)
///   y[m, n]   = clamp(zy + multiplyByMultiplier(acc, M), lo, hi),   M = quantizeMultiplier(sa * sb / sy)
/// — a convolution's requantization with one factor for the tensor and no bias.
struct QMatMulParams {
  int32_t za = 0, zb = 0, zy = 0, lo = -128, hi = 127;
  Multiplier mul;
};
inline constexpr int64_t kMaxQMatMulDepth = 33025;  // the largest K whose sums of 255 * 255 stay below 2^31
/// The parameters for a depth of K (the compile-time step; a fused Relu / Clip narrows [lo, hi]). Throws
/// std::invalid_argument for scales that are not finite and positive, K outside [1, kMaxQMatMulDepth], or a factor
/// of 2^30 or more.
QMatMulParams qmatmulParams(double sa, int32_t za, double sb, int32_t zb, double sy, int32_t zy, int64_t K, int32_t lo = -128,
                            int32_t hi = 127);
/// Every batch's product (y: batch i at i * M * N), the specification: per output one exact sum.
void qmatmul_ref(const MatMulBatches& mb, const int8_t* a, const int8_t* b, const QMatMulParams& p, int8_t* y);
/// qmatmul_ref's bits, fast: `path` kVnni / kAmx (where the CPU has VNNI) takes vpdpbusd over b packed per frame,
/// the others a portable loop over int16 operands; the rows of every batch split among `pool`'s threads (integer
/// sums are exact: no split can change a bit).
void qmatmul(const MatMulBatches& mb, const int8_t* a, const int8_t* b, const QMatMulParams& p, int8_t* y, ThreadPool* pool,
             QConvPath path = bestQConvPath());

/// kernels::quantizeLinear / dequantizeLinear's bits (layers.hpp: ONNX's per-tensor formulas), fast: AVX-512 where the
/// CPU has it (the same IEEE operations lane by lane), else those reference loops.
void quantizeLinearFast(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y, ThreadPool* pool);
void dequantizeLinearFast(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y, ThreadPool* pool);

/// MaxPool over int8 codes (a tensor whose input and output share scale and zero point): y = the largest of the
/// window's taps inside the input, -128 when none is (s.pad_value is ignored: padding never wins). Max is exact, so
/// any order and thread split gives these bytes.
void maxPool2dI8(const Pool2dShape& s, const int8_t* x, int8_t* y, ThreadPool* pool);
/// maxPool2dI8's bytes, AVX-512BW where the CPU has it (vpmaxsb over rows, then columns).
void maxPool2dI8Fast(const Pool2dShape& s, const int8_t* x, int8_t* y, ThreadPool* pool);

/// The int8-affine global average pooling (docs/numerics.md): per plane of n codes x (scale sx, zero point zx),
///   acc = sum x - n * zx                     (exact in int32: n < 2^23)
///   y   = clamp(zy + multiplyByMultiplier(acc, M), lo, hi),   M = quantizeMultiplier(sx / (sy * n))
/// — the mean's one rounding is the requantization's (as a convolution's: the factor carries 31 significant bits).
struct QGlobalAvgPoolParams {
  int32_t zx = 0, zy = 0, lo = -128, hi = 127;
  Multiplier mul;
};
/// The parameters for n codes per plane (the compile-time step; a fused Relu / Clip narrows [lo, hi]). Throws
/// std::invalid_argument for scales that are not finite and positive, n outside [1, 2^23), or a factor of 2^30 or more.
QGlobalAvgPoolParams qglobalAvgPoolParams(double sx, int32_t zx, double sy, int32_t zy, int64_t n, int32_t lo = -128,
                                          int32_t hi = 127);
/// `planes` planes of n codes each -> one code per plane. Integer sums are exact: the plane split among `pool`'s
/// threads cannot change a bit (the reference and the fast mode are this one loop, which the compiler vectorises).
void qglobalAvgPool(int64_t planes, int64_t n, const int8_t* x, const QGlobalAvgPoolParams& p, int8_t* y, ThreadPool* pool);

/// The int8-affine product of two tensors (docs/numerics.md, "Products of two int8 tensors"): b holds one code per
/// `inner` consecutive codes of a (inner 1: the same shape; a gate per channel of a feature map: its plane size),
///   y[i] = clamp(zy + multiplyByMultiplier((a[i] - za) * (b[i / inner] - zb), M), lo, hi),   M = sa * sb / sy
/// (the product is exact in int32; then multiplyByMultiplier's two roundings, as every requantization here: within
/// half a step of the real product, plus half of 2^shift for a negative shift, plus M's own 2^-30 relative error).
using QMulParams = QMatMulParams;  // (the same parameters: zero points, clamp, one multiplier)
/// The shapes qmul takes: b of a's rank, each dim a's or 1, and its 1s (where a's is not 1) only after the dims it
/// shares — a's leading dims then 1s (a gate per plane), or a's shape. The one rule of the op's schema, the quantizer
/// and the package reader.
template <typename A, typename B>
bool qmulShapes(const A& a, const B& b, size_t rank_a, size_t rank_b) {
  if (rank_a != rank_b) return false;
  bool ones = false;
  for (size_t k = 0; k < rank_a; ++k) {
    const auto ak = static_cast<int64_t>(a[k]), bk = static_cast<int64_t>(b[k]);
    if (bk != ak && bk != 1) return false;
    if (bk == 1 && ak != 1) ones = true;
    else if (ones && bk != 1) return false;
  }
  return true;
}
/// Throws std::invalid_argument for scales that are not finite and positive, or a factor of 2^30 or more.
QMulParams qmulParams(double sa, int32_t za, double sb, int32_t zb, double sy, int32_t zy, int32_t lo = -128, int32_t hi = 127);
void qmul_ref(int64_t n, int64_t inner, const int8_t* a, const int8_t* b, const QMulParams& p, int8_t* y);
/// The same bytes, in chunks on the pool's threads.
void qmul(int64_t n, int64_t inner, const int8_t* a, const int8_t* b, const QMulParams& p, int8_t* y, ThreadPool* pool);

/// An element-wise function of int8 codes as a table (docs/numerics.md, "Look-up tables"): y[i] = table[x[i] + 128],
/// the table holding the function's 256 results (the compile-time step computes them exactly as the float chain
/// dequantize -> function -> quantize does). qlookup: the AVX-512 VBMI form (two 128-byte permutes per 64 codes) where
/// the CPU has it, else the reference loop; the same bytes either way.
void qlookup_ref(int64_t n, const int8_t* x, const int8_t* table, int8_t* y);
void qlookup(int64_t n, const int8_t* x, const int8_t* table, int8_t* y, ThreadPool* pool);

/// The int8-affine windowed average pooling (docs/numerics.md): per output, over the window's taps inside the input
/// (k of them) with divisor n (k, or with count_include_pad the taps inside the padded input, as avgPool2d counts),
///   acc = sum x - k * zx                     (a padded tap is the real 0: the code zx, which adds nothing)
///   y   = clamp(zy + multiplyByMultiplier(acc, M[n]), lo, hi),   M[n] = quantizeMultiplier(sx / (sy * n))
/// — the mean's one rounding is the requantization's; zy (clamped) where n is 0. One factor per possible divisor.
struct QAvgPoolParams {
  int32_t zx = 0, zy = 0, lo = -128, hi = 127;
  std::vector<Multiplier> mul;  // mul[n - 1]: divisor n, 1 .. kh * kw
};
/// The parameters for windows of up to `taps` taps (kh * kw, 1 .. kMaxAvgPoolTaps): a factor for each divisor.
/// Throws std::invalid_argument for scales that are not finite and positive, or `taps` out of range.
inline constexpr int64_t kMaxAvgPoolTaps = 1024;
QAvgPoolParams qavgPoolParams(double sx, int32_t zx, double sy, int32_t zy, int64_t taps, int32_t lo = -128, int32_t hi = 127);
/// int8 codes x [planes, ih, iw] -> y [planes, oh, ow] (s: Pool2dShape, its pad_value unused). Integer sums are exact:
/// one kernel for the reference and the fast mode, the plane split among `pool`'s threads changes no bit.
void qavgPool2d(const Pool2dShape& s, const int8_t* x, const QAvgPoolParams& p, int8_t* y, ThreadPool* pool);

/// Requantizes int32 accumulators in place of a float epilogue: y[i] = clamp(zy + multiplyByMultiplier(acc[i],
/// M[channel of i]), lo, hi), acc laid out [outer, channels, inner].
void requantize_ref(int64_t outer, int64_t channels, int64_t inner, const int32_t* acc, const QOutput& out, int8_t* y);

}  // namespace npuc::kernels
