// Helpers for element-wise kernels: dtype dispatch, numpy broadcasting iteration, casts.
#pragma once

#include "engine/kernel.hpp"
#include "kernels/typed.hpp"
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

// numpy broadcasting iteration and element conversion: one definition, the typed kernels' (kernels/typed.hpp).
using kernels::convertValue;
using kernels::forEachBroadcast;

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
