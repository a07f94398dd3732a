// Reference single-precision GEMM: the executable form of the numerics specification in kernels/gemm.hpp.
// Deliberately plain loops; every fast variant is tested against these bits.
#include "kernels/gemm.hpp"

#include "npuc/tensor.hpp"

#include <cmath>
#include <fmt/format.h>

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

bool matmulBatches(const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
                   const std::vector<int64_t>& y_shape, MatMulBatches* out, std::string* why) {
  const size_t ra = a_shape.size(), rb = b_shape.size(), ry = y_shape.size();
  if (ra < 2 || rb < 2 || ry != std::max(ra, rb)) {
    *why = fmt::format("{} x {} -> {}: both operands need rank >= 2 and the output the larger rank", shapeStr(a_shape),
                       shapeStr(b_shape), shapeStr(y_shape));
    return false;
  }
  MatMulBatches m;
  m.M = a_shape[ra - 2];
  m.K = a_shape[ra - 1];
  m.N = b_shape[rb - 1];
  if (b_shape[rb - 2] != m.K || y_shape[ry - 2] != m.M || y_shape[ry - 1] != m.N) {
    *why = fmt::format("{} x {} -> {}: the matrices do not multiply", shapeStr(a_shape), shapeStr(b_shape), shapeStr(y_shape));
    return false;
  }
  // Batch dims, right-aligned: each operand's dim is the output's or 1 (broadcast).
  const size_t nb = ry - 2;
  std::vector<int64_t> sa(nb, 0), sb(nb, 0);  // element strides per output batch dim (0: broadcast)
  int64_t st_a = m.M * m.K, st_b = m.K * m.N, batches = 1;
  for (size_t d = nb; d-- > 0;) {
    const int64_t yd = y_shape[d];
    batches *= yd;
    const std::vector<int64_t>* ops[2] = {&a_shape, &b_shape};
    int64_t* st[2] = {&st_a, &st_b};
    std::vector<int64_t>* strides[2] = {&sa, &sb};
    for (int o = 0; o < 2; ++o) {
      const std::vector<int64_t>& s = *ops[o];
      const size_t lead = ry - s.size();  // output dims the operand lacks
      if (d < lead) continue;
      const int64_t od = s[d - lead];
      if (od != yd && od != 1) {
        *why = fmt::format("{} x {} -> {}: batch dim {} does not broadcast", shapeStr(a_shape), shapeStr(b_shape), shapeStr(y_shape), d);
        return false;
      }
      (*strides[o])[d] = od == 1 ? 0 : *st[o];
      *st[o] *= od;
    }
  }
  m.a_off.reserve(static_cast<size_t>(batches));
  m.b_off.reserve(static_cast<size_t>(batches));
  std::vector<int64_t> idx(nb, 0);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < nb; ++d) oa += idx[d] * sa[d], ob += idx[d] * sb[d];
    m.a_off.push_back(oa);
    m.b_off.push_back(ob);
    for (size_t d = nb; d-- > 0;) {
      if (++idx[d] < y_shape[d]) break;
      idx[d] = 0;
    }
  }
  *out = std::move(m);
  return true;
}

GemmArgs matmulBatchArgs(const MatMulBatches& b, size_t i, const float* a, const float* bm, float* y,
                         const Activation& act, const float* bias, BiasKind bias_kind) {
  GemmArgs g;
  g.M = b.M, g.N = b.N, g.K = b.K;
  g.A = a + b.a_off[i], g.lda = b.K;
  g.B = bm + b.b_off[i], g.ldb = b.N;
  g.C = y + static_cast<int64_t>(i) * b.M * b.N, g.ldc = b.N;
  g.act = act;
  g.bias = bias;
  g.bias_kind = bias ? bias_kind : BiasKind::kNone;
  return g;
}

void matmulBatched_ref(const MatMulBatches& b, const float* a, const float* bm, float* y, const Activation& act,
                       const float* bias, BiasKind bias_kind) {
  for (size_t i = 0; i < b.a_off.size(); ++i) sgemm_ref(matmulBatchArgs(b, i, a, bm, y, act, bias, bias_kind));
}

}  // namespace npuc::kernels
