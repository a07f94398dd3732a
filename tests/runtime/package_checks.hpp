// Checks shared by the package tests.
#pragma once

#include "npuc/tensor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace npuc::test {

/// Cosine similarity of two tensors' values (1 when both are all zero).
inline double cosine(const Tensor& a, const Tensor& b) {
  auto x = a.toDouble(), y = b.toDouble();
  double xy = 0, xx = 0, yy = 0;
  for (size_t i = 0; i < x.size(); ++i) xy += x[i] * y[i], xx += x[i] * x[i], yy += y[i] * y[i];
  return xx == 0 && yy == 0 ? 1.0 : xy / std::sqrt(xx * yy);
}

/// Every layer's output bytes of the fast runs at 1 and 2 threads equal the exact run's (layers as recorded by
/// the per-layer callback, in order).
inline void expectLayersAgree(const std::vector<Tensor>& exact, const std::vector<Tensor>& fast1,
                              const std::vector<Tensor>& fast2) {
  for (size_t i = 0; i < exact.size(); ++i) {
    EXPECT_TRUE(fast1[i].sameBits(exact[i])) << "layer " << i << " at 1 thread";
    EXPECT_TRUE(fast2[i].sameBits(exact[i])) << "layer " << i << " at 2 threads";
  }
}

}  // namespace npuc::test
