// Softmax, fast (kernels/layers.hpp): the AVX-512 rows (softmax_avx512.cpp) for a Softmax over the last axis where the
// CPU has AVX-512, else the reference. Both give softmax's bits. Likewise npuc's exponential, Sigmoid and Tanh over
// arrays (sigmoid_avx512.cpp; sigmoid_avx2.cpp with HardSwish and HardSigmoid on CPUs without AVX-512).
#include "kernels/expf.hpp"
#include "kernels/layers.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/quant_x86.hpp"

namespace npuc::kernels {

namespace detail {
void softmaxRowsAvx512(int64_t outer, int64_t len, const float* x, float* y, ThreadPool* pool);
void expF32Avx512(const float* x, float* y, int64_t n);
void sigmoidAvx512(const float* x, float* y, int64_t n);
void hardSwishAvx512(const float* x, float* y, int64_t n);
void hardSigmoidAvx512(float alpha, float beta, const float* x, float* y, int64_t n);
void tanhAvx512(const float* x, float* y, int64_t n);
void sigmoidAvx2(const float* x, float* y, int64_t n);
void tanhAvx2(const float* x, float* y, int64_t n);
void hardSwishAvx2(const float* x, float* y, int64_t n);
void hardSigmoidAvx2(float alpha, float beta, const float* x, float* y, int64_t n);
}  // namespace detail

void softmaxFast(SoftmaxKind kind, int64_t outer, int64_t len, int64_t inner, const float* x, float* y, ThreadPool* pool) {
  if (kind == SoftmaxKind::kSoftmax && inner == 1 && outer > 0 && len > 0 && detail::cpuHasAvx512bw())
    return detail::softmaxRowsAvx512(outer, len, x, y, pool);
  softmax(kind, outer, len, inner, x, y, pool);
}

void expF32Fast(const float* x, float* y, int64_t n) {
  if (detail::cpuHasAvx512bw()) return detail::expF32Avx512(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = expF32(x[i]);
}

void unaryFast(UnaryOp op, float alpha, float beta, int64_t n, const float* x, float* y, ThreadPool* pool) {
  const bool avx512 = detail::activeAvx512();
  if ((!avx512 && !detail::activeAvx2()) || (op != UnaryOp::kSigmoid && op != UnaryOp::kTanh && op != UnaryOp::kSwish &&
                                             op != UnaryOp::kHardSwish && op != UnaryOp::kHardSigmoid))
    return unary(op, alpha, beta, n, x, y, pool);
  detail::parallelUnits(pool, n, 16, [&](int64_t b, int64_t e) {
    if (op == UnaryOp::kTanh) return (avx512 ? detail::tanhAvx512 : detail::tanhAvx2)(x + b, y + b, e - b);
    if (op == UnaryOp::kHardSwish) return (avx512 ? detail::hardSwishAvx512 : detail::hardSwishAvx2)(x + b, y + b, e - b);
    if (op == UnaryOp::kHardSigmoid)
      return (avx512 ? detail::hardSigmoidAvx512 : detail::hardSigmoidAvx2)(alpha, beta, x + b, y + b, e - b);
    (avx512 ? detail::sigmoidAvx512 : detail::sigmoidAvx2)(x + b, y + b, e - b);
    if (op == UnaryOp::kSwish)
      for (int64_t i = b; i < e; ++i) y[i] = x[i] * y[i];  // (x · Sigmoid(x), as the reference)
  });
}

void sigmoidFast(const float* x, float* y, int64_t n) {
  if (detail::activeAvx512()) return detail::sigmoidAvx512(x, y, n);
  if (detail::activeAvx2()) return detail::sigmoidAvx2(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = sigmoidF32(x[i]);
}

void tanhFast(const float* x, float* y, int64_t n) {
  if (detail::activeAvx512()) return detail::tanhAvx512(x, y, n);
  if (detail::activeAvx2()) return detail::tanhAvx2(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = tanhF32(x[i]);
}

}  // namespace npuc::kernels
