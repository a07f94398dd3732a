// Det (layers.hpp): LU factorisation with partial pivoting, in double.
#include "kernels/layers.hpp"

#include <cmath>
#include <utility>
#include <vector>

namespace npuc::kernels {

void determinants(int64_t mats, int64_t m, const double* x, double* y) {
  for (int64_t k = 0; k < mats; ++k) {
    std::vector<double> a(x + k * m * m, x + (k + 1) * m * m);
    double d = 1;
    for (int64_t col = 0; col < m && d != 0; ++col) {
      int64_t piv = col;
      for (int64_t r = col + 1; r < m; ++r)
        if (std::fabs(a[static_cast<size_t>(r * m + col)]) > std::fabs(a[static_cast<size_t>(piv * m + col)])) piv = r;
      if (piv != col) {
        for (int64_t j = 0; j < m; ++j) std::swap(a[static_cast<size_t>(col * m + j)], a[static_cast<size_t>(piv * m + j)]);
        d = -d;
      }
      const double p = a[static_cast<size_t>(col * m + col)];
      d *= p;
      if (p == 0) break;
      for (int64_t r = col + 1; r < m; ++r) {
        const double f = a[static_cast<size_t>(r * m + col)] / p;
        for (int64_t j = col; j < m; ++j) a[static_cast<size_t>(r * m + j)] -= f * a[static_cast<size_t>(col * m + j)];
      }
    }
    y[k] = d;
  }
}

}  // namespace npuc::kernels
