// IR-free float kernels of the non-MAC layers: pooling, normalisation, softmax, element-wise unary and binary
// math with broadcasting, and data movement (concat, transpose, pad, slice).
//
// These are shared by the reference engine (src/engine/, which maps ONNX nodes onto them) and the device
// runtime (src/runtime/, which maps package descriptors onto them), so a package computes exactly what the
// engine computes. Every function is the numerics specification of its layer: a parallel call (pool non-null)
// gives every output element to one thread and computes it in the same order as the serial call, so results
// are bit-identical for every thread count.
//
// Shapes are plain int64 vectors, row-major (C order), rank <= kMaxRank unless a function says otherwise.
#pragma once

#include "kernels/activation.hpp"
#include "kernels/convert.hpp"
#include "npuc/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels {

inline constexpr int kMaxRank = 8;

// ---------------------------------------------------------------------------------------------------------
// Pooling over NC[H]W planes (1-D pooling: ih = oh = kh = sh = dh = 1, pt = pb = 0).
struct Pool2dShape {
  int64_t planes = 1;  // N * C
  int64_t ih = 1, iw = 1, oh = 1, ow = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;  // pads: top, left, bottom, right
  bool count_include_pad = false;           // AveragePool divisor counts taps in the padding (not beyond it)
  /// maxPool2d: taps in the padding (not beyond it) count as this value (a constant Pad folded into the pool);
  /// -inf (or NaN) = ONNX MaxPool, padding ignored. avgPool2d ignores it.
  float pad_value = -std::numeric_limits<float>::infinity();
};
/// y = max over the window's taps inside the input, and pad_value for its taps in the padding, in row-major tap
/// order with `>` (NaN never wins; of equal values, the first): exactly MaxPool over the input padded with
/// pad_value. -inf when no tap counts.
void maxPool2d(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool);
/// y = (sum of the window's taps inside the input, in row-major tap order) / count (0 when count is 0).
void avgPool2d(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool);
/// Fast variants (x86/pool.cpp): the same bits as maxPool2d / avgPool2d, rows a vector at a time over the plane in
/// place (most max pools) or over a padded copy of it.
void maxPool2dFast(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool);
void avgPool2dFast(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool);
/// The same over float16 and/or float32 storage (fp16 packages): each plane is widened and rounded where it is
/// pooled (f16ToF32 / f32ToF16's bits, no activation), not in whole-tensor passes.
void maxPool2dFast(const Pool2dShape& s, const void* x, Storage xs, void* y, Storage ys, ThreadPool* pool);
void avgPool2dFast(const Pool2dShape& s, const void* x, Storage xs, void* y, Storage ys, ThreadPool* pool);
/// y[p] = max / mean of plane p (sum in index order, then one division).
/// Pooling over 1 to 3 spatial dims, tap by tap (3-D windows; MaxPool's Indices output): y per plane as maxPool2d /
/// avgPool2d define it for any rank (taps in row-major order; max: `>`, the first counted tap always taken, padding
/// taps as pad_value when above -inf; average: the taps inside, the divisor counting padding taps when
/// count_include_pad). indices (max only, may be null): each output's input offset, ONNX MaxPool's Indices
/// (plane · in_plane + offset in the plane; 0 for a window that counts no tap).
struct PoolNdShape {
  int64_t planes = 1;
  std::vector<int64_t> in, out, kernel, stride, dilation, pad_begin, pad_end;  // per spatial dim (1 to 3)
  bool max = true, count_include_pad = false;
  float pad_value = -std::numeric_limits<float>::infinity();
};
void poolNd(const PoolNdShape& s, const float* x, float* y, int64_t* indices, ThreadPool* pool);

void globalMaxPool(int64_t planes, int64_t size, const float* x, float* y, ThreadPool* pool);
void globalAvgPool(int64_t planes, int64_t size, const float* x, float* y, ThreadPool* pool);

/// The same pools over channel-blocked tensors (Layout::kBlocked8 of kernels/conv.hpp: per image, per block of 8
/// channels, per position, the block's 8 values; s.planes = N · C with C a multiple of 8), for the engine's
/// channel-blocked chains: maxPool2d's / avgPool2d's bits in that layout (x86/pool_blocked.cpp; a vector of 8
/// channels per output position).
void pool2dBlocked8(const Pool2dShape& s, bool max, const float* x, float* y, ThreadPool* pool);
/// globalMaxPool / globalAvgPool of a channel-blocked x (planes = N · C, C a multiple of 8) into y [N · C] (whose
/// layout is the same in planes and blocks: one position).
void globalPoolBlocked8(bool max, int64_t planes, int64_t size, const float* x, float* y, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// Normalisation.
/// y[n, c, i] = x[n, c, i] * a[c] + b[c] (one multiply, one add, each rounded: not fused).
void channelAffine(int64_t n, int64_t c, int64_t inner, const float* x, const float* a, const float* b, float* y,
                   ThreadPool* pool);
/// ONNX LRN across channels (sums in double, one rounding per output).
void lrn(int64_t n, int64_t c, int64_t inner, int64_t size, float alpha, float beta, float bias, const float* x,
         float* y, ThreadPool* pool);

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };
/// Over `len` elements at stride `inner`, for every (outer, inner) row: max, sum of exp(x - max) in order, then
/// exp(x - max) / sum (or x - max - log(sum); or one-hot of the first maximum). Softmax's exp is expF32
/// (kernels/expf.hpp: correctly rounded but for e^x within ~1e-16 of a midpoint), LogSoftmax's std::exp.
void softmax(SoftmaxKind kind, int64_t outer, int64_t len, int64_t inner, const float* x, float* y, ThreadPool* pool);
/// softmax's bits, fast: Softmax over the last axis (inner = 1) with AVX-512 where the CPU has it (expF32's double
/// operations on 8 lanes, each row's sum still taken in index order: 8 rows' sums interleaved); otherwise softmax.
void softmaxFast(SoftmaxKind kind, int64_t outer, int64_t len, int64_t inner, const float* x, float* y, ThreadPool* pool);
/// y[i] = expF32(x[i]), AVX-512 where the CPU has it (the same bits).
void expF32Fast(const float* x, float* y, int64_t n);
/// npuc's Sigmoid / Tanh of n floats (y may be x): unaryScalar's bits, with AVX-512 where the CPU has it.
void sigmoidFast(const float* x, float* y, int64_t n);
void tanhFast(const float* x, float* y, int64_t n);

/// ONNX InstanceNormalization over [n, c, inner]: per plane the mean and variance of meanVariance, then
/// y = (x - mean) * k + bias[c] with k = scale[c] / sqrt(variance + epsilon), in double, rounded once.
void instanceNorm(int64_t n, int64_t c, int64_t inner, float epsilon, const float* x, const float* scale,
                  const float* bias, float* y, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// Element-wise.
/// The operations of the element-wise kernels (elementwise_ops.def: the order is their code in a package).
enum class UnaryOp : uint8_t {
#define NPUC_UNARY_OP(E, name, alpha, beta) E,
#include "kernels/elementwise_ops.def"
#undef NPUC_UNARY_OP
  kCount
};
/// Name as in ONNX ("Relu", "HardSwish", …); UnaryOp::kCount when unknown.
UnaryOp unaryOpFromName(const char* name);
const char* unaryOpName(UnaryOp op);
/// The ONNX attributes alpha and beta come from ("" when the op has no such parameter), from elementwise_ops.def:
/// LeakyRelu alpha; Clip min, max (its inputs from opset 11); HardSigmoid alpha, beta; Elu/Celu alpha; Selu alpha,
/// gamma.
struct UnaryAttrs {
  const char* alpha;
  const char* beta;
};
UnaryAttrs unaryOpAttrs(UnaryOp op);
/// One element: the specification (float in, float out; alpha/beta from the attributes above).
float unaryScalar(UnaryOp op, float x, float alpha, float beta);
void unary(UnaryOp op, float alpha, float beta, int64_t n, const float* x, float* y, ThreadPool* pool);
/// unary's bits, with Sigmoid, Tanh and Swish vectorised where the CPU has AVX-512 (sigmoidFast / tanhFast).
void unaryFast(UnaryOp op, float alpha, float beta, int64_t n, const float* x, float* y, ThreadPool* pool);

enum class BinaryOp : uint8_t {
#define NPUC_BINARY_OP(E, name) E,
#include "kernels/elementwise_ops.def"
#undef NPUC_BINARY_OP
  kCount
};
BinaryOp binaryOpFromName(const char* name);
const char* binaryOpName(BinaryOp op);
float binaryScalar(BinaryOp op, float a, float b);
/// y = act(a op b) with numpy broadcasting: a_shape and b_shape are right-aligned against y_shape (rank <=
/// kMaxRank), every dim equal to y's or 1.
void binary(BinaryOp op, const Activation& act, const std::vector<int64_t>& a_shape, const float* a,
            const std::vector<int64_t>& b_shape, const float* b, const std::vector<int64_t>& y_shape, float* y,
            ThreadPool* pool);

/// The mean and the biased variance of x[0, n), each summed in double in ascending order (the variance of the
/// differences from the mean): the statistics of layerNorm and of the engine's InstanceNormalization.
struct MeanVariance {
  double mean, variance;
};
MeanVariance meanVariance(const float* x, int64_t n);

/// LayerNormalization of `outer` rows of `inner` values: y = (x - mean) * inv * scale + bias per row, with the mean
/// and the variance summed in double in ascending order, inv = 1 / sqrt(var + epsilon), everything after the
/// subtraction in double, rounded to float once; bias null adds 0. mean_out / inv_out (may be null) get each row's
/// mean and inv. Parallel calls split the rows only.
/// ONNX Det: y[k] = the determinant of the k-th m×m matrix of x (`mats` of them), by LU factorisation with partial
/// pivoting in double (numpy's method; the engine's and the det layer's).
void determinants(int64_t mats, int64_t m, const double* x, double* y);
/// ONNX MeanVarianceNormalization over x of dims `shape`, the dims flagged in `reduced` normalised together: mean and
/// E[x²] per group, std = sqrt(max(E[x²] − mean², 0)), y = (x − mean) / (std + 1e-9), in double (the engine's and the
/// mvn layer's).
void meanVarianceNormalization(const std::vector<int64_t>& shape, const std::vector<bool>& reduced, const double* x,
                               double* y);
void layerNorm(int64_t outer, int64_t inner, float epsilon, const float* x, const float* scale, const float* bias,
               float* y, float* mean_out, float* inv_out, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// Resize (ONNX Resize / Upsample): separable taps per axis, every output summed in double.
enum class ResizeInterp : uint8_t { kNearest, kLinear, kCubic };
enum class ResizeCoord : uint8_t {
  kHalfPixel, kAsymmetric, kPytorchHalfPixel, kAlignCorners, kTfHalfPixelForNn, kHalfPixelSymmetric, kTfCropAndResize
};
enum class ResizeNearest : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
/// The ONNX attribute spellings ("half_pixel", "round_prefer_floor", …): false for an unknown name.
bool resizeCoordFromName(const std::string& name, ResizeCoord* c);
bool resizeNearestFromName(const std::string& name, ResizeNearest* n);
struct ResizeSpec {
  ResizeInterp interp = ResizeInterp::kNearest;
  ResizeCoord coord = ResizeCoord::kHalfPixel;
  ResizeNearest nearest = ResizeNearest::kRoundPreferFloor;
  bool legacy = false;           // Upsample, Resize-10: asymmetric, nearest floors (ceils when downsampling)
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;    // tf_crop_and_resize outside the roi
  std::vector<double> scale, roi_start, roi_end;  // per axis of x (1, 0, 1 for an axis not resized)
};
/// The taps of one axis: for output coordinate o, `k` (input index, weight) pairs at [o*k, o*k+k); `outside[o]`
/// marks tf_crop_and_resize coordinates that take the extrapolation value.
struct ResizeTaps {
  int k = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<uint8_t> outside;
};
/// Every axis's taps (the specification of the coordinate transforms and the interpolation weights). Throws
/// npuc::Error (kInvalidArgument) for an empty input axis resized to a non-empty one or a non-finite coordinate.
std::vector<ResizeTaps> resizeTaps(const ResizeSpec& s, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape);
/// y = Resize(x): each output element sums w(taps) * x over every combination of its axes' taps (first axis
/// outermost, weights multiplied in axis order, zero weights skipped) in double, rounded to float once; outside the
/// roi, the extrapolation value. Parallel calls split the outputs only.
void resize(const ResizeSpec& s, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape, const float* x,
            float* y, ThreadPool* pool);
/// A nearest resize of elements of any type (`elem` bytes each: int8-pow2 codes, integers): each output is the
/// element its one tap selects (resizeTaps' indices), copied — what resize computes for floats (a weight of 1).
/// s.interp must be kNearest and s.coord not kTfCropAndResize (its extrapolation is a float value).
void resizeNearestElements(const ResizeSpec& s, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape,
                           const void* x, void* y, size_t elem, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// Reductions (ONNX Reduce*) over any set of axes.
enum class ReduceOp : uint8_t {
#define NPUC_REDUCE_OP(E, name) E,
#include "kernels/elementwise_ops.def"
#undef NPUC_REDUCE_OP
  kCount
};
/// "ReduceMean", … ("?" for an unknown op) and back (ReduceOp::kCount for an unknown name).
const char* reduceOpName(ReduceOp op);
ReduceOp reduceOpFromName(const char* name);
/// y[kept dims of x, in order] = op over the dims of x whose `reduced` flag is set. The specification: each output
/// element reduces its inputs one at a time in ascending input index order, in double (Max and Min compare in
/// float and propagate NaN; LogSumExp subtracts the maximum first; Mean divides by the count), rounded to float
/// once; an empty reduction gives the op's identity (0; 1 for Prod; -inf for Max, LogSum, LogSumExp; +inf for
/// Min; NaN for Mean). Parallel calls split the outputs only.
void reduce(ReduceOp op, const std::vector<int64_t>& x_shape, const std::vector<bool>& reduced, const float* x, float* y,
            ThreadPool* pool);
/// ONNX Reduce* of x (type t: an integer type or float64) over the dims `reduced` flags, y of t: float64 as the float
/// layer kernel computes (kernels::reduce's arithmetic in double); integers compare exactly (Min, Max), sum, multiply
/// and average in wrapping 64-bit arithmetic converted back modulo 2^n (Mean: the sum divided, truncating), and
/// convert L2 / LogSum / LogSumExp from double. Not defined for bool (kInvalidArgument).
void reduceTyped(ReduceOp op, DType t, const std::vector<int64_t>& x_shape, const std::vector<bool>& reduced,
                 const void* x, void* y);
/// The dims of a rank-`rank` tensor that ONNX Reduce* axes reduce (negative from the end): no axes reduce every dim,
/// unless noop_with_empty_axes. False, with `bad_axis` the first axis outside [-rank, rank), when there is one.
bool reducedDims(const std::vector<int64_t>& axes, int64_t rank, bool noop_with_empty_axes, std::vector<bool>& reduced,
                 int64_t& bad_axis);
/// The dims of y that reducing x's `reduced` dims gives (keepdims: each reduced dim 1; else dropped).
std::vector<int64_t> reducedShape(const std::vector<int64_t>& x_shape, const std::vector<bool>& reduced, bool keepdims);

// ---------------------------------------------------------------------------------------------------------
// Data movement (element size in bytes, so one kernel serves fp32, fp16 and integer tensors).
/// Concatenation along `axis`: inputs[i] has shape in_shapes[i]; they agree except on `axis`.
void concat(int axis, const std::vector<std::vector<int64_t>>& in_shapes, const std::vector<const void*>& inputs,
            size_t elem_size, void* y, ThreadPool* pool);
/// y = x transposed: y.shape[i] = x_shape[perm[i]].
void transpose(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& perm, size_t elem_size,
               const void* x, void* y, ThreadPool* pool);
/// Constant padding: y.shape[i] = x_shape[i] + pads_begin[i] + pads_end[i] (pads >= 0); `value` is elem_size
/// bytes.
void padConstant(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& pads_begin,
                 const std::vector<int64_t>& pads_end, const void* value, size_t elem_size, const void* x, void* y,
                 ThreadPool* pool);
/// ONNX Slice (opset 10 on) resolved over x's dims: per dim the first index read (clamped as ONNX clamps; 0 where
/// nothing is read), the step and the count; dims no axis names: 0, 1, the dim. axes empty: 0, 1, …; steps empty:
/// all 1. Fails (ErrorCode::kInvalidInput) for lists of different lengths, an axis out of range or repeated, a step
/// of 0. The one definition of the engine's Slice, its shape function and the slice layer's computed parameters.
struct SliceGeometry {
  std::vector<int64_t> begin, step, count;
};
SliceGeometry resolveSlice(const std::vector<int64_t>& dims, const std::vector<int64_t>& starts,
                           const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps);
/// The dims of a view of a tensor whose dims the data decide (the reshape layer kind): one word per dim of y —
/// kReshapeFromX | j: dim j of x; kReshapeRest (at most once): x's element count over the other dims of y (which
/// must divide it); else that constant. False for a word naming no dim of x, two "rest" words, a "rest" beside dims
/// whose product is 0 (any rest would do), or counts that do not divide / do not match x's element count.
inline constexpr uint32_t kReshapeFromX = 0x80000000u, kReshapeRest = 0xFFFFFFFFu;
bool reshapeDims(const std::vector<int64_t>& x, const std::vector<uint32_t>& words, std::vector<int64_t>& y);
/// Strided slice: y[i...] = x[starts + i * steps ...] (starts already clamped; steps may be negative).
void slice(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
           const std::vector<int64_t>& y_shape, size_t elem_size, const void* x, void* y, ThreadPool* pool);

/// ONNX QuantizeLinear per tensor into int8 (int8-affine packages): y = saturate(rint(x / scale) + zero_point) to
/// [-128, 127], the division in float32, rint half to even; NaN gives the zero point.
void quantizeLinear(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y, ThreadPool* pool);
/// ONNX DequantizeLinear per tensor from int8: y = float(q - zero_point) * scale in float32.
void dequantizeLinear(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y, ThreadPool* pool);

/// Repetition: y[i_0, …] = x[i_0 mod x_shape[0], …] for x and y of one rank, each of y's dims a multiple of x's
/// (ONNX Tile; Expand is the case of x's dims 1 or equal, with x viewed at y's rank).
void tile(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape, size_t elem_size, const void* x,
          void* y, ThreadPool* pool);

/// ONNX Where: y = cond ? a : b element by element (elem_size bytes each; cond one byte, non-zero = true), the three
/// inputs broadcast numpy-style to y_shape.
void where(const std::vector<int64_t>& cond_shape, const uint8_t* cond, const std::vector<int64_t>& a_shape,
           const void* a, const std::vector<int64_t>& b_shape, const void* b, const std::vector<int64_t>& y_shape,
           size_t elem_size, void* y, ThreadPool* pool);

/// ONNX Gather along one axis: y[o, j, i] = x[o, idx[j], i] for o < outer, j < idx.size(), i < inner (x is
/// [outer, axis_len, inner] in elements of elem_size bytes). Indices may be negative (counted from the end);
/// one outside [-axis_len, axis_len) is an error naming it, raised before anything is written.
void gather(int64_t outer, int64_t axis_len, int64_t inner, const std::vector<int64_t>& idx, size_t elem_size,
            const void* x, void* y, ThreadPool* pool);

}  // namespace npuc::kernels
