// MeanVarianceNormalization (layers.hpp): ONNX's function, in double.
#include "kernels/layers.hpp"

#include <algorithm>
#include <cmath>

namespace npuc::kernels {

void meanVarianceNormalization(const std::vector<int64_t>& shape, const std::vector<bool>& reduced, const double* x,
                               double* y) {
  const int rank = static_cast<int>(shape.size());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  // Each element's group: its index with the reduced dims dropped.
  std::vector<int64_t> gstride(static_cast<size_t>(rank), 0), idx(static_cast<size_t>(rank), 0), group(static_cast<size_t>(n));
  int64_t groups = 1;
  for (int d = rank - 1; d >= 0; --d)
    if (!reduced[static_cast<size_t>(d)]) {
      gstride[static_cast<size_t>(d)] = groups;
      groups *= shape[static_cast<size_t>(d)];
    }
  int64_t g = 0;
  for (int64_t e = 0; e < n; ++e) {
    group[static_cast<size_t>(e)] = g;
    for (int d = rank - 1; d >= 0; --d) {  // the odometer, keeping g in step
      g += gstride[static_cast<size_t>(d)];
      if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      g -= gstride[static_cast<size_t>(d)] * shape[static_cast<size_t>(d)];
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  std::vector<double> sum(static_cast<size_t>(groups), 0), sq(static_cast<size_t>(groups), 0);
  const double count = groups != 0 ? static_cast<double>(n) / static_cast<double>(groups) : 0;
  for (int64_t e = 0; e < n; ++e) {
    sum[static_cast<size_t>(group[static_cast<size_t>(e)])] += x[e];
    sq[static_cast<size_t>(group[static_cast<size_t>(e)])] += x[e] * x[e];
  }
  for (int64_t e = 0; e < n; ++e) {
    const size_t k = static_cast<size_t>(group[static_cast<size_t>(e)]);
    const double mean = sum[k] / count;
    const double var = std::max(0.0, sq[k] / count - mean * mean);  // (never below 0 by rounding)
    y[e] = (x[e] - mean) / (std::sqrt(var) + 1e-9);
  }
}

}  // namespace npuc::kernels
