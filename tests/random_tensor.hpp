// Seeded random tensors for tests.
#pragma once

#include "npuc/tensor.hpp"

#include <random>

namespace npuc::test {

/// A float32 tensor of `s` with values drawn uniformly from [lo, hi) by std::mt19937 seeded with `seed`.
inline Tensor uniform(Shape s, float lo, float hi, uint32_t seed) {
  Tensor t(DType::kF32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

}  // namespace npuc::test
