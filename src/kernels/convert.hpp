// float16 <-> float32 conversion of whole buffers (the fp16 numerics of packages: every layer widens its float16
// inputs and rounds its float32 results once). The specification is support/fp16.hpp's halfToFloat /
// floatToHalf (IEEE round to nearest even, NaN payloads as the scalar code keeps them); the F16C variant is
// used where the CPU has it and gives the same bits (lanes holding Inf/NaN take the scalar path).
#pragma once

#include "kernels/activation.hpp"

#include <cstdint>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels {

/// How a tensor a kernel reads or writes is stored: float32, or float16 (fp16 packages: widened exactly as it is
/// read; results rounded once, to nearest even, as they are written — f32ToF16_ref's bits).
enum class Storage : uint8_t { kF32, kF16 };

void f16ToF32_ref(const uint16_t* x, float* y, int64_t n);
/// y = floatToHalf(applyActivation(x, act)).
void f32ToF16_ref(const float* x, uint16_t* y, int64_t n, const Activation& act);

/// Fastest variant; `pool` may be null. Same bits as the _ref functions for every thread count.
void f16ToF32(const uint16_t* x, float* y, int64_t n, ThreadPool* pool);
void f32ToF16(const float* x, uint16_t* y, int64_t n, const Activation& act, ThreadPool* pool);

}  // namespace npuc::kernels
