// Single-precision matrix multiplication.
//
// Numerics specification (what the scalar reference computes, and what every fast variant must reproduce
// bit for bit, for every thread count):
//   acc = bias ? bias[m] (kPerRow) or bias[n] (kPerCol) : +0.0f
//   for k = 0 .. K-1 in order:  acc = fmaf(A[m,k], B[k,n], acc)      (one rounding per step)
//   C[m,n] = applyActivation(acc, act)
// Fast variants vectorise across outputs (m, n) and block over k only by carrying acc through C, never by
// summing partial sums; threads split the output, never k.
#pragma once

#include "kernels/activation.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels {

enum class BiasKind { kNone, kPerRow, kPerCol };

struct GemmArgs {
  int64_t M = 0, N = 0, K = 0;
  const float* A = nullptr;  // element (m,k) at A[m*lda + k], or A[k*lda + m] when transA
  int64_t lda = 0;
  bool transA = false;
  const float* B = nullptr;  // element (k,n) at B[k*ldb + n], or B[n*ldb + k] when transB
  int64_t ldb = 0;
  bool transB = false;
  float* C = nullptr;  // element (m,n) at C[m*ldc + n]
  int64_t ldc = 0;
  const float* bias = nullptr;
  BiasKind bias_kind = BiasKind::kNone;
  Activation act;
};

/// Reference (the specification). Single-threaded, portable.
void sgemm_ref(const GemmArgs& g);

/// Fastest variant for this CPU (AVX2/FMA when available, else a portable blocked kernel); identical bits to
/// sgemm_ref. `pool` may be null (one thread).
void sgemm(const GemmArgs& g, ThreadPool* pool);

/// A matrix packed once for repeated use as the left operand (constant weights).
class PackedA {
 public:
  PackedA(int64_t M, int64_t K, const float* A, int64_t lda, bool transA);
  ~PackedA();
  PackedA(const PackedA&) = delete;
  PackedA& operator=(const PackedA&) = delete;
  int64_t rows() const;
  int64_t depth() const;
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// As sgemm with g.A/lda/transA replaced by the packed matrix (g.M and g.K must match it).
void sgemm_packed(const PackedA& a, const GemmArgs& g, ThreadPool* pool);

/// The products of a MatMul with numpy-broadcast batch dims (ONNX MatMul of two rank >= 2 operands):
/// a [..., M, K] x b [..., K, N] -> y [..., M, N]. Output batch i multiplies a's batch a_off[i] by b's batch
/// b_off[i] (element offsets); y's batches follow one another.
struct MatMulBatches {
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> a_off, b_off;
};
/// The batches of a [..., M, K] x b [..., K, N] (both rank >= 2); false (and `why`) when the shapes do not
/// multiply or their batch dims do not broadcast to y's.
bool matmulBatches(const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
                   const std::vector<int64_t>& y_shape, MatMulBatches* out, std::string* why);
/// Every batch's product with the numerics above (then `act`): reference / fastest variant (the same bits; threads
/// split batches or, for few batches, each product's outputs).
/// `bias` (kPerCol: [N], kPerRow: [M]) starts every batch's sums, as in GemmArgs.
/// The GemmArgs of batch i (for the variants).
GemmArgs matmulBatchArgs(const MatMulBatches& b, size_t i, const float* a, const float* bm, float* y,
                         const Activation& act, const float* bias = nullptr, BiasKind bias_kind = BiasKind::kNone);
void matmulBatched_ref(const MatMulBatches& b, const float* a, const float* bm, float* y, const Activation& act,
                       const float* bias = nullptr, BiasKind bias_kind = BiasKind::kNone);
void matmulBatched(const MatMulBatches& b, const float* a, const float* bm, float* y, const Activation& act,
                   ThreadPool* pool, const float* bias = nullptr, BiasKind bias_kind = BiasKind::kNone);

/// Name of the variant sgemm() dispatches to ("avx512", "avx2_fma" or "portable"), for logs and benchmarks.
const char* sgemmVariant();

/// Forces the portable variant (for tests comparing variants); returns the previous setting. Off means "auto".
bool forcePortableKernels(bool on);

/// Caps the kernel ISA for tests and benchmarks: "avx512", "avx2", "portable", or "auto" / null (the widest the
/// CPU has). A cap above what the CPU supports selects the widest supported one. Returns the previous cap.
/// Affects every thread; not to be changed while kernels run.
const char* forceKernelIsa(const char* isa);

/// Cache blocking of the packed GEMM / im2col-conv path (a tuning knob; results are bit-identical for every
/// setting). kc: depth of one packed k-block; mc: rows of A swept per packed B block; nc: most columns of B one
/// task packs. Values are rounded to the register tile; zero or negative means "keep the current value".
struct GemmBlocking {
  int64_t kc = 0;
  int64_t mc = 0;
  int64_t nc = 0;
};
GemmBlocking gemmBlocking();
/// Returns the previous setting. Not thread-safe against kernels running concurrently.
GemmBlocking setGemmBlocking(const GemmBlocking& b);

}  // namespace npuc::kernels
