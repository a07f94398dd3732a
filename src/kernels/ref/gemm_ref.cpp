// Reference single-precision GEMM: the executable form of the numerics specification in kernels/gemm.hpp.
// Deliberately plain loops; every fast variant is tested against these bits.
#include "kernels/gemm.hpp"

#include <cmath>

namespace npuc::kernels {

void sgemm_ref(const GemmArgs& g) {
  for (int64_t m = 0; m < g.M; ++m) {
    for (int64_t n = 0; n < g.N; ++n) {
      float acc = 0.0f;
      if (g.bias_kind == BiasKind::kPerRow && g.bias != nullptr) acc = g.bias[m];
      if (g.bias_kind == BiasKind::kPerCol && g.bias != nullptr) acc = g.bias[n];
      for (int64_t k = 0; k < g.K; ++k) {
        const float a = g.transA ? g.A[k * g.lda + m] : g.A[m * g.lda + k];
        const float b = g.transB ? g.B[n * g.ldb + k] : g.B[k * g.ldb + n];
        acc = std::fma(a, b, acc);
      }
      g.C[m * g.ldc + n] = applyActivation(acc, g.act);
    }
  }
}

}  // namespace npuc::kernels
