// Helpers for element-wise kernels: dtype dispatch, numpy broadcasting iteration, casts.
#pragma once

#include "engine/kernel.hpp"
#include "support/fp16.hpp"

#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace npuc::engine {

/// Calls f.template operator()<T>() for the C++ type of `t`. F16/BF16 are not dispatched here.
template <typename F>
void dispatchNumeric(DType t, const KernelCall& call, F&& f) {
  switch (t) {
    case DType::kF32: f.template operator()<float>(); break;
    case DType::kF64: f.template operator()<double>(); break;
    case DType::kI8: f.template operator()<int8_t>(); break;
    case DType::kU8: f.template operator()<uint8_t>(); break;
    case DType::kI16: f.template operator()<int16_t>(); break;
    case DType::kU16: f.template operator()<uint16_t>(); break;
    case DType::kI32: f.template operator()<int32_t>(); break;
    case DType::kU32: f.template operator()<uint32_t>(); break;
    case DType::kI64: f.template operator()<int64_t>(); break;
    case DType::kU64: f.template operator()<uint64_t>(); break;
    case DType::kBool: f.template operator()<bool>(); break;
    default: call.unsupported("element type {} is not supported", dtypeName(t));
  }
}

/// Iterates the output of an N-input broadcast in runs along the innermost dim:
/// fn(out_offset, std::array<int64_t,N> in_offsets, std::array<int64_t,N> in_inner_strides, run_length).
template <size_t N, typename F>
void forEachBroadcast(const Shape& out, const std::array<const Shape*, N>& ins, F&& fn) {
  size_t r = out.size();
  int64_t total = shapeNumel(out);
  if (total == 0) return;
  if (r == 0) {
    fn(int64_t{0}, std::array<int64_t, N>{}, std::array<int64_t, N>{}, int64_t{1});
    return;
  }
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) {
    const Shape& s = *ins[k];
    strides[k].assign(r, 0);
    int64_t st = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      size_t d = s.size() - 1 - i;
      size_t od = r - 1 - i;
      strides[k][od] = s[d] == 1 ? 0 : st;
      st *= s[d];
    }
  }
  int64_t inner = out[r - 1];
  std::array<int64_t, N> inner_st;
  for (size_t k = 0; k < N; ++k) inner_st[k] = strides[k][r - 1];
  std::vector<int64_t> idx(r, 0);
  std::array<int64_t, N> off{};
  for (int64_t o = 0; o < total; o += inner) {
    fn(o, off, inner_st, inner);
    // advance the odometer over dims [0, r-1)
    for (size_t d = r - 1; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

/// Saturating, UB-free conversion between element types (float -> int truncates toward zero; NaN -> 0).
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
    return static_cast<To>(v);  // integer -> integer wraps modulo 2^n (as numpy)
  }
}

/// Converts a tensor to another element type (F16/BF16 included).
Tensor castTensor(const Tensor& t, DType to, const KernelCall& call);

/// Scalar activation by name (Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish, Swish, Mish): the kernel
/// library's kernels::unaryScalar of that op, with the same float32 arithmetic as the separate ONNX ops it replaces
/// (Swish = x * Sigmoid(x), Mish = x * Tanh(Softplus(x))). Throws kUnsupported for other names.
std::function<float(float)> activationFn(const std::string& name, float alpha, float beta);

inline bool isHalfType(DType t) { return t == DType::kF16 || t == DType::kBF16; }

/// Runs `body` with float16/bfloat16 inputs widened to float32 and rounds its float32 outputs back to the
/// original output types once (round to nearest even). Without half inputs, runs `body` on the call as is.
void computeHalfAsFloat(KernelCall& call, const std::function<void(KernelCall&)>& body);

}  // namespace npuc::engine
