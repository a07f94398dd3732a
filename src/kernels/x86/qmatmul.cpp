// The int8-affine product of two activations, fast (kernels/quant.hpp): the VNNI form (qmatmul_vnni.cpp) where the CPU
// has it, else a portable loop over int16 operands (zero points taken out once, b transposed per frame so every
// output is one contiguous dot product, which the compiler vectorises: pmaddwd / vpmaddwd). Integer sums are exact,
// so both give qmatmul_ref's bytes for any order and any split of the rows among the pool's threads.
#include "kernels/quant.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/quant_x86.hpp"
#include "support/error.hpp"

#include <map>
#include <vector>

namespace npuc::kernels {

namespace {

detail::BSlots bSlots(const MatMulBatches& mb) {
  detail::BSlots bs;
  bs.slot.resize(mb.b_off.size());
  std::map<int64_t, int64_t> seen;
  for (size_t i = 0; i < mb.b_off.size(); ++i) {
    auto [it, fresh] = seen.try_emplace(mb.b_off[i], static_cast<int64_t>(bs.first.size()));
    if (fresh) bs.first.push_back(static_cast<int64_t>(i));
    bs.slot[i] = it->second;
  }
  return bs;
}

void qmatmulPortable(const MatMulBatches& mb, const int8_t* a, const int8_t* b, const QMatMulParams& p, int8_t* y, ThreadPool* pool) {
  const int64_t M = mb.M, N = mb.N, K = mb.K;
  const int64_t batches = static_cast<int64_t>(mb.a_off.size());
  // Per distinct b (broadcast batches share one): (b - zb) as [N, K]; slot[i] is batch i's.
  const detail::BSlots bs = bSlots(mb);
  const std::vector<int64_t>&slot = bs.slot, &first = bs.first;
  const int64_t slots = static_cast<int64_t>(first.size());
  std::vector<int16_t> bt(static_cast<size_t>(slots * N * K));
  detail::parallelUnits(pool, slots, N * K, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int8_t* B = b + mb.b_off[static_cast<size_t>(first[static_cast<size_t>(i)])];
      int16_t* T = bt.data() + i * N * K;
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) T[n * K + k] = static_cast<int16_t>(B[k * N + n] - p.zb);
    }
  });
  detail::parallelUnits(pool, batches * M, N * K, [&](int64_t u0, int64_t u1) {
    std::vector<int16_t> row(static_cast<size_t>(K));
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t i = u / M, m = u % M;
      const int8_t* A = a + mb.a_off[static_cast<size_t>(i)] + m * K;
      for (int64_t k = 0; k < K; ++k) row[static_cast<size_t>(k)] = static_cast<int16_t>(A[k] - p.za);
      const int16_t* T = bt.data() + slot[static_cast<size_t>(i)] * N * K;
      int8_t* Y = y + u * N;
      for (int64_t n = 0; n < N; ++n) {
        const int16_t* t = T + n * K;
        int32_t acc = 0;  // (|acc| <= K * 255 * 255 < 2^31 in any order)
        for (int64_t k = 0; k < K; ++k) acc += static_cast<int32_t>(row[static_cast<size_t>(k)]) * t[k];
        Y[n] = requantizeValue(acc, p.mul, p.zy, p.lo, p.hi);
      }
    }
  });
}

}  // namespace

void qmatmul(const MatMulBatches& mb, const int8_t* a, const int8_t* b, const QMatMulParams& p, int8_t* y, ThreadPool* pool,
             QConvPath path) {
  if (mb.a_off.empty() || mb.M <= 0 || mb.N <= 0) return;
  if (mb.K < 1 || mb.K > kMaxQMatMulDepth) fail(ErrorCode::kInvalidArgument, "qmatmul: depth {} outside [1, {}]", mb.K, kMaxQMatMulDepth);
  if ((path == QConvPath::kVnni || path == QConvPath::kAmx) && cpuHasQConvPath(QConvPath::kVnni))
    return detail::qmatmulVnni(mb, bSlots(mb), a, b, p, y, pool);
  qmatmulPortable(mb, a, b, p, y, pool);
}

}  // namespace npuc::kernels
