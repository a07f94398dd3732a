// Checks shared by the package tests.
#pragma once

#include "npuc/tensor.hpp"

#include <cmath>

namespace npuc::test {

/// Cosine similarity of two tensors' values (1 when both are all zero).
inline double cosine(const Tensor& a, const Tensor& b) {
  auto x = a.toDouble(), y = b.toDouble();
  double xy = 0, xx = 0, yy = 0;
  for (size_t i = 0; i < x.size(); ++i) xy += x[i] * y[i], xx += x[i] * x[i], yy += y[i] * y[i];
  return xx == 0 && yy == 0 ? 1.0 : xy / std::sqrt(xx * yy);
}

}  // namespace npuc::test
