// Typed element-wise kernels: integer, bool and float operands with ONNX's semantics for each element type
// (comparisons and logic, integer arithmetic that wraps, Mod, bit operations, casts, ArgMax / ArgMin). Shared by
// the reference engine (its kernels of these ops call them) and the runtime (the `typed_binary`, `typed_unary`,
// `cast` and `arg_reduce` layer kinds), so a package computes exactly what the engine computes.
//
// Element types are DType; bool is one byte, read as true when non-zero (a package's bytes are untrusted) and
// written as 0 or 1. float16 operands are widened to float32 (exactly) and results rounded back once.
#pragma once

#include "npuc/dtype.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace npuc::kernels {

enum class TypedBinaryOp : uint8_t {
#define NPUC_TYPED_BINARY_OP(e, name, pred) e,
#include "kernels/elementwise_ops.def"
#undef NPUC_TYPED_BINARY_OP
  kCount
};
enum class TypedUnaryOp : uint8_t {
#define NPUC_TYPED_UNARY_OP(e, name, pred) e,
#include "kernels/elementwise_ops.def"
#undef NPUC_TYPED_UNARY_OP
  kCount
};

const char* typedBinaryOpName(TypedBinaryOp op);
const char* typedUnaryOpName(TypedUnaryOp op);
/// kCount when no op has this name.
TypedBinaryOp typedBinaryOpFromName(const std::string& name);
TypedUnaryOp typedUnaryOpFromName(const std::string& name);
/// The op of an ONNX node: Mod by its fmod attribute, BitShift by its direction (shift_left: "LEFT").
TypedBinaryOp typedBinaryOpForOnnx(const std::string& onnx_op, int64_t fmod, bool shift_left);
/// True when the op's result is bool (comparisons, logic, IsNaN, IsInf, Not).
bool typedBinaryIsPredicate(TypedBinaryOp op);
bool typedUnaryIsPredicate(TypedUnaryOp op);
/// Why `op` is not defined on operands of type t ("" when it is): e.g. "BitShiftLeft needs unsigned integers".
std::string typedBinaryRule(TypedBinaryOp op, DType t);
std::string typedUnaryRule(TypedUnaryOp op, DType t);
/// True for the element types these kernels take: float32, float16, float64, the integers and bool.
bool typedKernelType(DType t);

/// y = op(a, b), a and b of type t broadcast numpy-style to y's shape; y of type t, or bool for a predicate.
/// Integer division or Mod by zero gives 0 (undefined in ONNX; never traps); INT_MIN / -1 wraps.
void typedBinary(TypedBinaryOp op, DType t, const std::vector<int64_t>& a_shape, const void* a,
                 const std::vector<int64_t>& b_shape, const void* b, const std::vector<int64_t>& y_shape, void* y);
/// y = op(x) over n elements of type t (y bool for a predicate). `flags`: IsInf's detect bits.
void typedUnary(TypedUnaryOp op, DType t, int64_t n, const void* x, void* y, uint32_t flags = 3);
/// ONNX Cast of n elements: float to integer truncates toward zero and saturates (NaN gives 0), integer to
/// integer wraps modulo 2^bits, anything to bool is "!= 0", float16 / bfloat16 go through float32.
void castValues(DType from, const void* x, DType to, void* y, int64_t n);
/// ArgMax (max) / ArgMin over the middle dim of x viewed as [outer, axis, inner]: y[o, i] the index of the first
/// (or, select_last, the last) extreme; NaN is never selected unless every element is NaN (then index 0 / last).
void argReduce(bool max, bool select_last, DType t, int64_t outer, int64_t axis, int64_t inner, const void* x,
               int64_t* y);

/// ONNX Trilu over the last two dims of x ([..., rows, cols], elements of `elem` bytes): y keeps the elements with
/// j - i >= k (upper) or j - i <= k (lower) and zeroes the others.
void trilu(bool upper, int64_t k, int64_t mats, int64_t rows, int64_t cols, size_t elem, const void* x, void* y);
/// ONNX CumSum along the middle dim of x viewed as [outer, dim, inner]: running sums in index order (reverse: from
/// the end), each in the element type (integers wrap; float16 in float32, rounded once per element); exclusive:
/// each sum without its own element.
void cumSum(DType t, bool exclusive, bool reverse, int64_t outer, int64_t dim, int64_t inner, const void* x, void* y);

/// ONNX Clip (opset 11 on) of n elements of type t: y = x < lo ? lo : (x > hi ? hi : x), a missing bound (null) the
/// type's lowest / highest value; float16 / bfloat16 compared as float32. Not defined for bool.
void clip(DType t, int64_t n, const void* x, const void* lo, const void* hi, void* y);

/// ONNX Range's element count, max(ceil((limit − start) / delta), 0), from the three values as doubles; fails
/// (kInvalidInput) for delta 0, a count that is not a number, or one above 2^40.
int64_t rangeCount(double start, double limit, double delta);
/// ONNX Range: y[i] = start + i · delta for i < n, in type t (integers wrap; floats computed in double and rounded
/// once, float16 through float32). start and delta are one element of t each.
void range(DType t, int64_t n, const void* start, const void* delta, void* y);
/// The value of one element of type t as a double (the integers exactly up to 2^53; bool 0 / 1).
double elementAsDouble(DType t, const void* p);

/// Saturating, UB-free conversion between element types (float -> int truncates toward zero; NaN -> 0; integer
/// -> integer wraps modulo 2^n as numpy; anything -> bool is != 0).
template <typename To, typename From>
inline To convertValue(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);
  } else if constexpr (std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To(0);
    double d = std::trunc(static_cast<double>(v));
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

/// Iterates the output of an N-input broadcast in runs along the innermost dim:
/// fn(out_offset, std::array<int64_t,N> in_offsets, std::array<int64_t,N> in_inner_strides, run_length).
template <size_t N, typename F>
void forEachBroadcast(const std::vector<int64_t>& out, const std::array<const std::vector<int64_t>*, N>& ins, F&& fn) {
  const size_t r = out.size();
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total == 0) return;
  if (r == 0) {
    fn(int64_t{0}, std::array<int64_t, N>{}, std::array<int64_t, N>{}, int64_t{1});
    return;
  }
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) {
    const std::vector<int64_t>& s = *ins[k];
    strides[k].assign(r, 0);
    int64_t st = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t d = s.size() - 1 - i;
      const size_t od = r - 1 - i;
      strides[k][od] = s[d] == 1 ? 0 : st;
      st *= s[d];
    }
  }
  const int64_t inner = out[r - 1];
  std::array<int64_t, N> inner_st;
  for (size_t k = 0; k < N; ++k) inner_st[k] = strides[k][r - 1];
  std::vector<int64_t> idx(r, 0);
  std::array<int64_t, N> off{};
  for (int64_t o = 0; o < total; o += inner) {
    fn(o, off, inner_st, inner);
    for (size_t d = r - 1; d-- > 0;) {  // advance the odometer over dims [0, r-1)
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

}  // namespace npuc::kernels
