// The element-type dispatch of the typed reference kernels (ref/typed_ref.cpp, ref/indexing_ref.cpp): a C++ type
// per DType, and float16 / bfloat16 widened to float32 and rounded back.
#pragma once

#include "npuc/dtype.hpp"
#include "support/fp16.hpp"

#include <cstdint>
#include <type_traits>
#include <vector>

namespace npuc::kernels::detail {

/// Calls f.template operator()<T>() for the C++ type of t (bool as uint8_t: the caller normalises its bytes);
/// false for types without one (float16, bfloat16, strings).
template <typename F>
bool dispatch(DType t, F&& f) {
  switch (t) {
    case DType::kF32: f.template operator()<float>(); return true;
    case DType::kF64: f.template operator()<double>(); return true;
    case DType::kI8: f.template operator()<int8_t>(); return true;
    case DType::kU8: case DType::kBool: f.template operator()<uint8_t>(); return true;
    case DType::kI16: f.template operator()<int16_t>(); return true;
    case DType::kU16: f.template operator()<uint16_t>(); return true;
    case DType::kI32: f.template operator()<int32_t>(); return true;
    case DType::kU32: f.template operator()<uint32_t>(); return true;
    case DType::kI64: f.template operator()<int64_t>(); return true;
    case DType::kU64: f.template operator()<uint64_t>(); return true;
    default: return false;
  }
}

inline bool isHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }

/// float32 copies of float16 / bfloat16 values (exact).
inline std::vector<float> widen(DType t, const void* x, int64_t n) {
  std::vector<float> f(static_cast<size_t>(n));
  const auto* h = static_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < n; ++i) f[static_cast<size_t>(i)] = t == DType::kF16 ? halfToFloat(h[i]) : bf16ToFloat(h[i]);
  return f;
}
inline void narrow(DType t, const float* f, void* y, int64_t n) {
  auto* h = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) h[i] = t == DType::kF16 ? floatToHalf(f[i]) : floatToBf16(f[i]);
}
/// Wrapping integer arithmetic (no signed-overflow UB): computed in the unsigned type of T.
template <typename T, typename F>
T wrap(T x, T z, F&& f) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<std::conditional_t<sizeof(T) < sizeof(unsigned), unsigned, T>>;
    return static_cast<T>(f(static_cast<U>(static_cast<std::make_signed_t<T>>(x)), static_cast<U>(static_cast<std::make_signed_t<T>>(z))));
  } else {
    return static_cast<T>(f(x, z));
  }
}

}  // namespace npuc::kernels::detail
