// Blocked GEMM driver shared by sgemm/sgemm_packed and the im2col convolution: packed-A layout, thread-private
// scratch, task splitting, and the k-block / m-block / register-tile loops around a microkernel.
//
// Bit-exactness: every output element is produced by exactly one task; k is blocked only by carrying the
// accumulator through C (TileInit::kLoadC), so the fma sequence per element is the reference one.
#pragma once

#include "kernels/gemm.hpp"
#include "kernels/x86/kernel_table.hpp"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels::detail {

/// 64-byte aligned float storage; grows on demand (contents are not preserved when it grows).
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(size_t n) { ensure(n); }
  ~AlignedFloats();
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data() { return p_; }
  const float* data() const { return p_; }
  size_t size() const { return n_; }
  /// Makes room for at least n floats.
  float* ensure(size_t n);

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

/// Scratch private to the calling thread; slot 0: packed B, slot 1: a conv row / padded plane, slot 2: packed
/// A (sgemm), slot 3: B packed for every task (PrepackedB, owned by the calling thread, read by the workers),
/// slot 4: a float16 input widened (conv paths that cannot read float16), slot 5: a task's float32 results before
/// they are rounded to a float16 output.
float* threadScratch(size_t floats, int slot);

/// Runs body(t0, t1) over [0, tasks) on the pool, or as one call inline without a pool (or one thread, or one
/// task). Chunks: one task each, or with chunks_per_thread > 0 about that many chunks per thread.
void runTasks(ThreadPool* pool, int64_t tasks, const std::function<void(int64_t, int64_t)>& body,
              int64_t chunks_per_thread = 0);

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// Current blocking with every field positive and rounded to the tile.
GemmBlocking effectiveBlocking();

/// Depth up to which a product counts as bound by writing C (see blockingForDepth).
inline constexpr int64_t kStreamDepth = 48;

/// The blocking for a product of depth K. A shallow product (a first convolution over 3 channels, a 1x1 one over
/// 16) does few multiply-adds per output, so writing C is its cost: one tile column down every row of the block
/// writes C in dozens of short streams at once, which the hardware prefetcher does not follow, and each line of
/// a cold output becomes a demand miss. Then two row panels at a time sweep a long column block instead, so C is
/// written in 2 * kMR long sequential streams (npuc_kernels_bench conv_cold/*: 1.3 -> 0.7 ms for the 16 -> 96
/// 1x1 conv at 112x112). The loop order changes, not any output's sum: the bits stay the same.
inline GemmBlocking blockingForDepth(int64_t K, GemmBlocking blk) {
  if (K <= kStreamDepth) {
    blk.mc = 2 * kMR;
    blk.nc = std::max<int64_t>(blk.nc, 2048);
  }
  return blk;
}

/// Packs rows [0, M) x depth [0, K) of A into kMR-row panels (zero rows past M): panel p, step k at
/// dst[p*K*kMR + k*kMR + i].
void packA(int64_t M, int64_t K, const float* A, int64_t lda, bool transA, float* dst);

/// Packs B[k0:k0+kc, n0:n0+nc] into kNR-column panels (zero columns past nc): panel j, step k at
/// dst[j*kc*kNR + k*kNR + col].
void packBMatrix(const float* B, int64_t ldb, bool transB, int64_t k0, int64_t kc, int64_t n0, int64_t nc,
                 float* dst);

/// Where a block writes: element (m, n) of the block (global coordinates) at c[(m - m0) * ldc + n - n0] (a whole
/// C: m0 = n0 = 0; a task's own staging buffer: its first row and column), optional bias, fused activation.
struct GemmOut {
  float* c = nullptr;
  int64_t ldc = 0;
  int64_t m0 = 0, n0 = 0;
  float* at(int64_t m, int64_t n) const { return c + (m - m0) * ldc + (n - n0); }
  const float* bias = nullptr;
  BiasKind bias_kind = BiasKind::kNone;
  Activation act;
  bool tall = false;  // MicroArgs::tall (see tallTiles)
  // float16 output written by the microkernels themselves (tables with half_c; only for blocks of one k-block
  // whose every column lies in a whole kNR panel, so no tail path stores float32): element (m, n) at
  // h[m * ldh + n] (global coordinates). Null: c.
  uint16_t* h = nullptr;
  int64_t ldh = 0;
};

/// Whether kernels should use their taller tiles: measured on Zen 4, 12x32 beats 6x32 when the product has few
/// columns (N = 49..169: deep im2col layers), and loses on wide ones (N = 3136, short depth).
inline bool tallTiles(int64_t N) { return N <= 512; }

/// Output split into tasks: m_tasks x n_tasks chunks (per outer item: batch, group).
struct GemmSplit {
  int64_t m_chunk = 0, m_tasks = 1, n_chunk = 0, n_tasks = 1;
};
/// How the tasks of one product get their packed B.
enum class BPacking {
  kShared,   // packed once before the tasks when the split has several M chunks (PrepackedB)
  kPerTask,  // every task packs the columns it needs (the M chunks of a column each pack them again)
};
GemmSplit planSplit(int64_t M, int64_t N, int64_t outer, int threads, const GemmBlocking& blk,
                    BPacking packing = BPacking::kShared);

/// One edge register tile at (m, n) with mr <= kMR valid rows and nr <= kNR valid columns (args.a, b, kc, init,
/// act set), computed through a local buffer.
void runTile(const KernelTable& kt, const MicroArgs& args, int64_t m, int64_t n, int64_t mr, int64_t nr,
             const GemmOut& out);

/// B packed once for every task (when the output is split along M only, so tasks would otherwise each pack
/// the same B): the k-blocks of gemmBlock back to back, block k0 at data + k0 * panels * kNR, its panel j at
/// + j * kc * kNR. Null data: each task packs its own blocks.
struct PrepackedB {
  const float* data = nullptr;
  int64_t panels = 0;  // ceil(N / kNR) over the whole of B
};

/// The k-blocking gemmBlock uses for depth K: nkb blocks of kc_max (the last may be shorter).
inline void kBlocks(int64_t K, const GemmBlocking& blk, int64_t& nkb, int64_t& kc_max) {
  nkb = K == 0 ? 1 : ceilDiv(K, blk.kc);
  kc_max = K == 0 ? 0 : ceilDiv(K, nkb);
}

/// Computes C[m0:m1, n0:n1] for packed A (M rows, depth K; m0 a multiple of kMR). packB(k0, kc, n0, nc, dst)
/// fills the packed B block for depth [k0, k0+kc), unless pre.data holds B already packed (n0 a multiple of
/// kNR).
template <class PackB>
void gemmBlock(const float* packed_a, int64_t M, int64_t K, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
               const PackB& packB, const GemmOut& out, const KernelTable& kt, const GemmBlocking& blk,
               const PrepackedB& pre = {}) {
  const int64_t nc = n1 - n0;
  if (nc <= 0 || m1 <= m0) return;
  const int64_t npanels = ceilDiv(nc, kNR);
  int64_t nkb = 0, kc_max = 0;
  kBlocks(K, blk, nkb, kc_max);
  float* own = pre.data != nullptr
                   ? nullptr
                   : threadScratch(static_cast<size_t>(std::max<int64_t>(kc_max, 1) * npanels * kNR), 0);
  for (int64_t kb = 0; kb < nkb; ++kb) {
    const int64_t k0 = kb * kc_max;
    const int64_t kc = std::min(kc_max, K - k0);
    const float* bbuf = own;
    if (pre.data != nullptr) {
      bbuf = pre.data + k0 * pre.panels * kNR + (n0 / kNR) * kc * kNR;
    } else if (kc > 0) {
      packB(k0, kc, n0, nc, own);
    }
    MicroArgs args;
    args.kc = kc;
    args.tall = out.tall;
    args.act = kb == nkb - 1 ? &out.act : nullptr;
    if (kb == 0) {
      args.init = out.bias == nullptr                       ? TileInit::kZero
                  : out.bias_kind == BiasKind::kPerRow ? TileInit::kRowBias
                  : out.bias_kind == BiasKind::kPerCol ? TileInit::kColBias
                                                       : TileInit::kZero;
    } else {
      args.init = TileInit::kLoadC;
    }
    for (int64_t ic = m0; ic < m1; ic += blk.mc) {
      const int64_t ic_end = std::min(m1, ic + blk.mc);
      const int64_t full_panels = (ic_end - ic) / kMR;
      args.a_stride = K * kMR;
      for (int64_t jp = 0; jp < npanels;) {
        const int64_t n = n0 + jp * kNR;
        const int64_t nr = std::min<int64_t>(kNR, n1 - n);
        // Two full B panels side by side go through the wide kernel when the table has one.
        const int64_t width = kt.gemm_x2 != nullptr && full_panels > 0 && n1 - n >= 2 * kNR ? 2 : 1;
        args.b = bbuf + jp * kc * kNR;
        args.a = packed_a + (ic / kMR) * K * kMR + k0 * kMR;
        const int64_t tail_rows = ic_end - ic - full_panels * kMR;
        // Column tails of at most kColsMax columns (alone, or after the first 8 columns of the panel) go
        // through the row-vectorised kernel, row tail included.
        const int64_t cols_from = width == 1 && kt.gemm_cols != nullptr
                                      ? (nr <= kColsMax ? 0 : nr > 8 && nr - 8 <= kColsMax ? 8 : -1)
                                      : -1;
        if (cols_from >= 0) {
          assert(out.h == nullptr && "float16 output through a float32 tail path");
          if (cols_from == 8 && full_panels > 0) {
            args.c = out.at(ic, n);
            args.ldc = out.ldc;
            args.panels = full_panels;
            args.bias = args.init == TileInit::kRowBias   ? out.bias + ic
                        : args.init == TileInit::kColBias ? out.bias + n
                                                          : nullptr;
            kt.gemm_n8(args);
          }
          if (cols_from == 8 && tail_rows > 0) {
            args.a = packed_a + (ic / kMR + full_panels) * K * kMR + k0 * kMR;
            runTile(kt, args, ic + full_panels * kMR, n, tail_rows, 8, out);
          }
          MicroArgs cargs = args;
          cargs.a = packed_a + (ic / kMR) * K * kMR + k0 * kMR;
          cargs.b = args.b + cols_from;
          cargs.c = out.at(ic, n + cols_from);
          cargs.ldc = out.ldc;
          cargs.panels = full_panels + (tail_rows > 0 ? 1 : 0);
          cargs.mr_last = tail_rows > 0 ? tail_rows : kMR;
          cargs.nr = nr - cols_from;
          cargs.bias = args.init == TileInit::kRowBias   ? out.bias + ic
                       : args.init == TileInit::kColBias ? out.bias + n + cols_from
                                                         : nullptr;
          kt.gemm_cols(cargs);
          jp += width;
          continue;
        }
        // Tables with rows_tail take the partial last A panel in the same call.
        const bool fused_tail = kt.rows_tail && tail_rows > 0 && (width == 2 || nr == kNR);
        if ((width == 2 || nr == kNR || nr == 8) && (full_panels > 0 || fused_tail)) {
          // The common case: a column of full tiles in one microkernel call.
          args.c = out.at(ic, n);
          args.ldc = out.ldc;
          if (out.h != nullptr && kb == nkb - 1) args.ch = out.h + ic * out.ldh + n, args.ldch = out.ldh;
          args.panels = full_panels + (fused_tail ? 1 : 0);
          args.mr_last = fused_tail ? tail_rows : kMR;
          args.bias = args.init == TileInit::kRowBias   ? out.bias + ic
                      : args.init == TileInit::kColBias ? out.bias + n
                                                        : nullptr;
          (width == 2 ? kt.gemm_x2 : nr == kNR ? kt.gemm : kt.gemm_n8)(args);
          args.mr_last = kMR;
        } else {
          assert(out.h == nullptr && "float16 output through a float32 tail path");
          for (int64_t i = 0; i < full_panels; ++i) {
            runTile(kt, args, ic + i * kMR, n, kMR, nr, out);
            args.a += K * kMR;
          }
        }
        if (tail_rows > 0 && !fused_tail) {
          assert(out.h == nullptr && "float16 output through a float32 tail path");
          for (int64_t w = 0; w < width; ++w) {
            const int64_t nw = n + w * kNR;
            args.b = bbuf + (jp + w) * kc * kNR;
            args.a = packed_a + (ic / kMR + full_panels) * K * kMR + k0 * kMR;
            runTile(kt, args, ic + full_panels * kMR, nw, tail_rows, std::min<int64_t>(kNR, n1 - nw), out);
          }
        }
        jp += width;
      }
    }
  }
}

/// Packs the whole of B (depth K, N columns) for PrepackedB into dst (K * ceil(N / kNR) * kNR floats),
/// k-blocks and column chunks spread over the pool.
template <class PackB>
void prepackB(const PackB& packB, int64_t K, int64_t N, const GemmBlocking& blk, ThreadPool* pool, float* dst) {
  int64_t nkb = 0, kc_max = 0;
  kBlocks(K, blk, nkb, kc_max);
  const int64_t panels = ceilDiv(N, kNR);
  const int64_t chunk = blk.nc;  // a multiple of kNR
  const int64_t nchunks = ceilDiv(N, chunk);
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t kb = t / nchunks, c = t % nchunks;
      const int64_t k0 = kb * kc_max, kc = std::min(kc_max, K - k0);
      const int64_t n0 = c * chunk, nc = std::min(chunk, N - n0);
      if (kc > 0) packB(k0, kc, n0, nc, dst + k0 * panels * kNR + (n0 / kNR) * kc * kNR);
    }
  };
  runTasks(pool, nkb * nchunks, body);
}

}  // namespace npuc::kernels::detail

namespace npuc::kernels {

struct PackedA::Impl {
  int64_t M = 0, K = 0;
  detail::AlignedFloats data;  // ceil(M / kMR) panels of K * kMR floats
};

}  // namespace npuc::kernels
