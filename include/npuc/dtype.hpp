// Element types shared by the IR, kernels, packages and the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace npuc {

enum class DType : uint8_t {
  kUndefined = 0,
  kF32,
  kF16,
  kBF16,
  kF64,
  kI8,
  kU8,
  kI16,
  kU16,
  kI32,
  kU32,
  kI64,
  kU64,
  kBool,
  kString,  // only for rejecting string models with a clear error; no kernel handles it
};

size_t dtypeSize(DType t);
std::string_view dtypeName(DType t);  // "float32", "int64", …
bool isFloat(DType t);
bool isInteger(DType t);
bool isSigned(DType t);
/// ONNX TensorProto element-type codes (1 float, 2 uint8, …, 10 float16, 16 bfloat16): the encoding of element
/// types in models and in npuc packages. kUndefined / -1 for codes and types without a counterpart.
DType dtypeFromOnnxCode(int64_t code);
int64_t onnxCodeOf(DType t);

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kI16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kU64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

}  // namespace npuc
