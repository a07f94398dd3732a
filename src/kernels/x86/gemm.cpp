// sgemm / sgemm_packed / PackedA: the blocked GEMM driver (packing, task split, tile loops), compiled for
// baseline x86-64; the register-tile microkernel comes from the dispatch table (AVX2/FMA or portable).
#include "kernels/x86/gemm_driver.hpp"

#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

namespace npuc::kernels {

namespace detail {

namespace {

constexpr int64_t kDefaultKC = 256;
constexpr int64_t kDefaultMC = 384;
constexpr int64_t kDefaultNC = 256;

std::atomic<int64_t> g_kc{kDefaultKC}, g_mc{kDefaultMC}, g_nc{kDefaultNC};

}  // namespace

AlignedFloats::~AlignedFloats() { std::free(p_); }

float* AlignedFloats::ensure(size_t n) {
  if (n <= n_ && p_ != nullptr) return p_;
  std::free(p_);
  const size_t bytes = std::max<size_t>(64, (n * sizeof(float) + 63) / 64 * 64);
  p_ = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (p_ == nullptr) throw std::bad_alloc();
  n_ = bytes / sizeof(float);
  return p_;
}

float* threadScratch(size_t floats, int slot) {
  thread_local AlignedFloats scratch[6];
  return scratch[slot].ensure(floats);
}

void runTasks(ThreadPool* pool, int64_t tasks, const std::function<void(int64_t, int64_t)>& body,
              int64_t chunks_per_thread) {
  if (pool != nullptr && pool->size() > 1 && tasks > 1) {
    const int64_t grain =
        chunks_per_thread > 0 ? std::max<int64_t>(1, tasks / (chunks_per_thread * pool->size())) : 1;
    pool->parallelFor(tasks, body, grain);
  } else if (tasks > 0) {
    body(0, tasks);
  }
}

GemmBlocking effectiveBlocking() {
  GemmBlocking b;
  b.kc = std::max<int64_t>(1, g_kc.load(std::memory_order_relaxed));
  b.mc = roundUp(std::max<int64_t>(1, g_mc.load(std::memory_order_relaxed)), kMR);
  b.nc = roundUp(std::max<int64_t>(1, g_nc.load(std::memory_order_relaxed)), kNR);
  return b;
}

void packA(int64_t M, int64_t K, const float* A, int64_t lda, bool transA, float* dst) {
  const int64_t panels = ceilDiv(M, kMR);
  for (int64_t p = 0; p < panels; ++p) {
    float* d = dst + p * K * kMR;
    for (int64_t i = 0; i < kMR; ++i) {
      const int64_t m = p * kMR + i;
      if (m >= M) {
        for (int64_t k = 0; k < K; ++k) d[k * kMR + i] = 0.0f;
      } else if (transA) {
        for (int64_t k = 0; k < K; ++k) d[k * kMR + i] = A[k * lda + m];
      } else if (p * kMR + kMR > M) {
        const float* src = A + m * lda;
        for (int64_t k = 0; k < K; ++k) d[k * kMR + i] = src[k];
      }
    }
    if (!transA && p * kMR + kMR <= M) {
      // Full panel of rows: six read streams, one sequential write stream.
      const float* r0 = A + p * kMR * lda;
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t i = 0; i < kMR; ++i) d[k * kMR + i] = r0[i * lda + k];
      }
    }
  }
}

void packBMatrix(const float* B, int64_t ldb, bool transB, int64_t k0, int64_t kc, int64_t n0, int64_t nc,
                 float* dst) {
  const int64_t npanels = ceilDiv(nc, kNR);
  if (!transB) {
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = B + (k0 + k) * ldb + n0;
      for (int64_t jp = 0; jp < npanels; ++jp) {
        float* d = dst + jp * kc * kNR + k * kNR;
        const int64_t cols = std::min<int64_t>(kNR, nc - jp * kNR);
        std::memcpy(d, src + jp * kNR, static_cast<size_t>(cols) * sizeof(float));
        for (int64_t j = cols; j < kNR; ++j) d[j] = 0.0f;
      }
    }
    return;
  }
  for (int64_t jp = 0; jp < npanels; ++jp) {
    float* d = dst + jp * kc * kNR;
    const int64_t cols = std::min<int64_t>(kNR, nc - jp * kNR);
    for (int64_t j = 0; j < kNR; ++j) {
      if (j >= cols) {
        for (int64_t k = 0; k < kc; ++k) d[k * kNR + j] = 0.0f;
        continue;
      }
      const float* src = B + (n0 + jp * kNR + j) * ldb + k0;
      for (int64_t k = 0; k < kc; ++k) d[k * kNR + j] = src[k];
    }
  }
}

namespace {

// For one product (outer == 1) on several threads: the split into m x n chunks with the shortest estimated
// schedule. Task cost ~ tile-padded columns x (tile-padded rows + B packing, in row equivalents; shared by the
// m-chunks when they use a prepacked B, else paid by each); tasks go in index order to whichever thread is free
// first, as in ThreadPool::parallelFor with grain 1. Ties prefer fewer tasks, but at least two per thread.
// A task that packs its own B (a pointwise product) also pays for reading its rows of A, kARowCols columns' worth
// per row: without it, a deep product of few columns split into many narrow column tasks, each reading the whole of
// A again (ResNet-50's 1024 -> 256 at 14x14, A 1 MiB: five tasks of 48 columns; now row halves by column halves;
// its 128 -> 512 at 28x28: nine of 96 columns, now 2 x 4). `npuc bench -t 2 --profile`, 2026-12-05, Zen 5 AVX2:
// ResNet-50's five 1024 -> 256 layers 0.82-0.84 -> 0.70-0.71 ms each, its 128 -> 512 ones 0.98-0.99 -> 0.93, its nodes
// 57.6 -> 55.3 ms; GoogLeNet, MobileNetV2 and SqueezeNet within the noise. A larger charge (4) also split products
// of 96 rows into 48-row halves, each packing all of B: MobileNetV2's 576 -> 96 at 14x14 0.18 -> 0.21 ms alone.
GemmSplit balancedSplit(int64_t M, int64_t N, int threads, const GemmBlocking& blk, BPacking packing) {
  constexpr double kPackRows = 12.0;
  constexpr double kARowCols = 2.0;
  const double a_row = packing == BPacking::kPerTask ? kARowCols : 0.0;
  const int64_t base_n = ceilDiv(N, blk.nc);
  GemmSplit best;
  double best_score = 0.0;
  std::vector<double> busy(static_cast<size_t>(threads));
  int64_t last_nchunk = -1;
  // A shallow pointwise product (blockingForDepth: two row panels sweep a long column block, so C is written in
  // long streams) splits along M only, when M allows two chunks: split along N, each task wrote its rows in short
  // pieces again (npuc_kernels_bench, 2 threads: conv/mbv2_1x1_32-192_28 0.105-0.129 -> 0.065 ms, _16-96_112 0.35 ->
  // 0.32, squeezenet_1x1_16-64_55 0.093 -> 0.087; MobileNetV2 and MobileNetV3-small 2-3 % faster). im2col products
  // keep both (their B is packed once for M splits: SqueezeNet's 3x3/2 stem 0.38 -> 0.55 ms with M splits only).
  // (blk.mc == 2 * kMR: blockingForDepth's mark of a shallow product; with more threads, more M chunks.)
  const bool shallow = packing == BPacking::kPerTask && blk.mc == 2 * kMR && M >= 2 * 4 * kMR;
  const int64_t max_mt = shallow ? std::max<int64_t>(4, 2 * threads) : 4;
  for (int64_t nt = base_n; nt <= (shallow ? base_n : base_n + 4 * threads); ++nt) {
    const int64_t nchunk = roundUp(ceilDiv(N, nt), kNR);
    if (nchunk == last_nchunk) continue;
    if (nt > base_n && nchunk < 2 * kNR) break;
    last_nchunk = nchunk;
    const int64_t ntasks = ceilDiv(N, nchunk);
    int64_t last_mchunk = -1;
    for (int64_t mt = 1; mt <= max_mt; ++mt) {
      const int64_t mchunk = roundUp(ceilDiv(M, mt), kMR);
      if (mchunk == last_mchunk) continue;
      if (mt > 1 && mchunk < 4 * kMR) break;
      last_mchunk = mchunk;
      const int64_t mtasks = ceilDiv(M, mchunk);
      std::fill(busy.begin(), busy.end(), 0.0);
      const double pack = packing == BPacking::kShared ? kPackRows / static_cast<double>(mtasks) : kPackRows;
      for (int64_t t = 0; t < mtasks * ntasks; ++t) {
        const int64_t m0 = (t / ntasks) * mchunk, n0 = (t % ntasks) * nchunk;
        const double rows = static_cast<double>(roundUp(std::min(M - m0, mchunk), kMR));
        const double cols = static_cast<double>(roundUp(std::min(N - n0, nchunk), 8));
        *std::min_element(busy.begin(), busy.end()) += cols * (rows + pack) + a_row * rows;
      }
      // Fewer than two tasks per thread leaves nothing to rebalance when a thread starts late.
      const int64_t tasks = mtasks * ntasks;
      const double score = *std::max_element(busy.begin(), busy.end()) *
                           (1.0 + 0.002 * static_cast<double>(tasks) + (tasks < 2 * threads ? 0.05 : 0.0));
      if (best.n_chunk == 0 || score < best_score) {
        best_score = score;
        best.n_chunk = nchunk, best.n_tasks = ntasks, best.m_chunk = mchunk, best.m_tasks = mtasks;
      }
    }
  }
  return best;
}

}  // namespace

GemmSplit planSplit(int64_t M, int64_t N, int64_t outer, int threads, const GemmBlocking& blk, BPacking packing) {
  if (threads > 1 && outer == 1 && M > 0 && N > 0) return balancedSplit(M, N, threads, blk, packing);
  GemmSplit s;
  s.n_tasks = ceilDiv(N, blk.nc);
  s.m_tasks = 1;
  if (threads > 1) {
    // Enough tasks for dynamic balancing, preferring to split N (B is then packed once per column).
    const int64_t want = 3 * static_cast<int64_t>(threads);
    while (outer * s.n_tasks * s.m_tasks < want) {
      if (N / (s.n_tasks + 1) >= 3 * kNR) {
        ++s.n_tasks;
      } else if (M / (s.m_tasks + 1) >= 4 * kMR) {
        ++s.m_tasks;
      } else {
        break;
      }
    }
    // Round the task count to a multiple of the thread count when that costs little.
    const int64_t total = outer * s.n_tasks * s.m_tasks;
    if (total % threads != 0 && outer == 1 && s.m_tasks == 1) {
      const int64_t nt = roundUp(s.n_tasks, threads);
      if (N / nt >= 2 * kNR) s.n_tasks = nt;
    }
  }
  s.n_chunk = roundUp(ceilDiv(N, s.n_tasks), kNR);
  s.n_tasks = ceilDiv(N, s.n_chunk);
  s.m_chunk = roundUp(ceilDiv(M, s.m_tasks), kMR);
  s.m_tasks = ceilDiv(M, s.m_chunk);
  return s;
}

void runTile(const KernelTable& kt, const MicroArgs& args_in, int64_t m, int64_t n, int64_t mr, int64_t nr,
             const GemmOut& out) {
  MicroArgs args = args_in;
  args.panels = 1;
  args.mr_last = kMR;
  float* c = out.at(m, n);
  alignas(64) float tile[kMR * kNR];
  alignas(64) float bias[kNR];
  if (args.init == TileInit::kLoadC) {
    for (int64_t i = 0; i < kMR; ++i) {
      for (int64_t j = 0; j < kNR; ++j) tile[i * kNR + j] = (i < mr && j < nr) ? c[i * out.ldc + j] : 0.0f;
    }
  } else if (args.init == TileInit::kRowBias) {
    for (int64_t i = 0; i < kNR; ++i) bias[i] = i < mr ? out.bias[m + i] : 0.0f;
    args.bias = bias;
  } else if (args.init == TileInit::kColBias) {
    for (int64_t j = 0; j < kNR; ++j) bias[j] = j < nr ? out.bias[n + j] : 0.0f;
    args.bias = bias;
  }
  args.c = tile;
  args.ldc = kNR;
  (nr <= 8 ? kt.gemm_n8 : kt.gemm)(args);
  for (int64_t i = 0; i < mr; ++i) {
    std::memcpy(c + i * out.ldc, tile + i * kNR, static_cast<size_t>(nr) * sizeof(float));
  }
}

}  // namespace detail

GemmBlocking gemmBlocking() { return detail::effectiveBlocking(); }

GemmBlocking setGemmBlocking(const GemmBlocking& b) {
  const GemmBlocking prev = detail::effectiveBlocking();
  if (b.kc > 0) detail::g_kc.store(b.kc);
  if (b.mc > 0) detail::g_mc.store(b.mc);
  if (b.nc > 0) detail::g_nc.store(b.nc);
  return prev;
}

PackedA::PackedA(int64_t M, int64_t K, const float* A, int64_t lda, bool transA) : impl_(std::make_unique<Impl>()) {
  if (M < 0 || K < 0) fail(ErrorCode::kInvalidArgument, "PackedA: negative size {}x{}", M, K);
  impl_->M = M;
  impl_->K = K;
  const int64_t floats = detail::ceilDiv(M, detail::kMR) * detail::kMR * K;
  impl_->data.ensure(static_cast<size_t>(std::max<int64_t>(floats, 1)));
  if (floats > 0) detail::packA(M, K, A, lda, transA, impl_->data.data());
}

PackedA::~PackedA() = default;
int64_t PackedA::rows() const { return impl_->M; }
int64_t PackedA::depth() const { return impl_->K; }

namespace {

// Multiply-adds below which the matrix-vector paths stay on the calling thread.
constexpr int64_t kGemvParallelMacs = int64_t{1} << 16;

// N == 1 over packed A: out[m] = act(init + sum_k A[m,k] * B[k,0]), panels of kMR rows split across threads.
void gemvPacked(const detail::KernelTable& kt, const float* pa, const GemmArgs& g, ThreadPool* pool) {
  const int64_t M = g.M, K = g.K;
  const int64_t panels = detail::ceilDiv(M, detail::kMR);
  const int64_t mp = panels * detail::kMR;
  const bool strided_x = !g.transB && g.ldb != 1 && K > 1;
  const bool has_init = g.bias != nullptr && g.bias_kind != BiasKind::kNone;
  float* scratch = detail::threadScratch(static_cast<size_t>((strided_x ? K : 0) + (has_init ? mp : 0) + mp), 0);
  float* out = scratch;
  float* init = has_init ? scratch + mp : nullptr;
  const float* x = g.B;  // element (k, 0): B[k*ldb] (or B[k] when transB)
  if (strided_x) {
    float* xs = scratch + mp + (has_init ? mp : 0);
    for (int64_t k = 0; k < K; ++k) xs[k] = g.B[k * g.ldb];
    x = xs;
  }
  if (has_init) {
    for (int64_t m = 0; m < mp; ++m) {
      init[m] = m >= M ? 0.0f : g.bias_kind == BiasKind::kPerRow ? g.bias[m] : g.bias[0];
    }
  }
  auto body = [&](int64_t p0, int64_t p1) {
    kt.gemv_packed(pa + p0 * K * detail::kMR, p1 - p0, K, x, init != nullptr ? init + p0 * detail::kMR : nullptr,
                   out + p0 * detail::kMR);
    const int64_t m1 = std::min(M, p1 * detail::kMR);
    for (int64_t m = p0 * detail::kMR; m < m1; ++m) g.C[m * g.ldc] = applyActivation(out[m], g.act);
  };
  const int threads = pool != nullptr ? pool->size() : 1;
  if (threads > 1 && M * K >= kGemvParallelMacs && panels > 8) {
    const int64_t grain = detail::roundUp(std::max<int64_t>(8, detail::ceilDiv(panels, 4 * threads)), 8);
    pool->parallelFor(panels, body, grain);
  } else {
    body(0, panels);
  }
}

// M == 1 with B not transposed: C[0,n] = act(init + sum_k x[k] * B[k,n]), x contiguous, columns split across
// threads in 64-wide chunks.
void gemvRow(const detail::KernelTable& kt, const float* x, const GemmArgs& g, ThreadPool* pool) {
  const int64_t N = g.N, K = g.K;
  const float* init = g.bias != nullptr && g.bias_kind == BiasKind::kPerCol ? g.bias : nullptr;
  const float init0 = g.bias != nullptr && g.bias_kind == BiasKind::kPerRow ? g.bias[0] : 0.0f;
  auto body = [&](int64_t n0, int64_t n1) {
    kt.gemv_row(x, g.B + n0, g.ldb, K, n1 - n0, init != nullptr ? init + n0 : nullptr, init0, g.C + n0);
    if (g.act.kind != ActKind::kNone) {
      for (int64_t n = n0; n < n1; ++n) g.C[n] = applyActivation(g.C[n], g.act);
    }
  };
  const int threads = pool != nullptr ? pool->size() : 1;
  if (threads > 1 && N * K >= kGemvParallelMacs && N > 64) {
    pool->parallelFor(N, body, detail::roundUp(std::max<int64_t>(64, detail::ceilDiv(N, 4 * threads)), 64));
  } else {
    body(0, N);
  }
}

// sgemm with A already packed (ceil(M/kMR) panels of K*kMR floats); g.A/lda/transA are ignored.
void gemmPackedA(const float* pa, const GemmArgs& g, ThreadPool* pool) {
  const detail::KernelTable& kt = detail::activeKernels();
  if (g.N == 1) {
    gemvPacked(kt, pa, g, pool);
    return;
  }
  if (g.M == 1 && !g.transB) {
    // Row 0 of packed A is every kMR-th float.
    float* x = detail::threadScratch(static_cast<size_t>(std::max<int64_t>(g.K, 1)), 1);
    for (int64_t k = 0; k < g.K; ++k) x[k] = pa[k * detail::kMR];
    gemvRow(kt, x, g, pool);
    return;
  }
  const GemmBlocking blk = detail::blockingForDepth(g.K, detail::effectiveBlocking());
  const int threads = pool != nullptr ? pool->size() : 1;
  const detail::GemmSplit split = detail::planSplit(g.M, g.N, 1, threads, blk);
  detail::GemmOut out;
  out.tall = detail::tallTiles(g.N);
  out.c = g.C;
  out.ldc = g.ldc;
  out.bias = g.bias_kind == BiasKind::kNone ? nullptr : g.bias;
  out.bias_kind = g.bias_kind;
  out.act = g.act;
  auto packB = [&g](int64_t k0, int64_t kc, int64_t n0, int64_t nc, float* dst) {
    detail::packBMatrix(g.B, g.ldb, g.transB, k0, kc, n0, nc, dst);
  };
  detail::PrepackedB pre;
  if (split.m_tasks > 1) {
    // Tasks split along M would each pack the same B: pack it once, in parallel, before.
    pre.panels = detail::ceilDiv(g.N, detail::kNR);
    float* dst = detail::threadScratch(static_cast<size_t>(std::max<int64_t>(g.K, 1) * pre.panels * detail::kNR), 3);
    detail::prepackB(packB, g.K, g.N, blk, pool, dst);
    pre.data = dst;
  }
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t mt = t / split.n_tasks, nt = t % split.n_tasks;
      const int64_t m0 = mt * split.m_chunk, n0 = nt * split.n_chunk;
      detail::gemmBlock(pa, g.M, g.K, m0, std::min(g.M, m0 + split.m_chunk), n0, std::min(g.N, n0 + split.n_chunk),
                        packB, out, kt, blk, pre);
    }
  };
  detail::runTasks(pool, split.m_tasks * split.n_tasks, body);
}

// Packs A into the calling thread's scratch (reused across calls, so no page faults; read-only for the tasks,
// workers use their own slots 0/1), or into a temporary when it is large, then runs the GEMM.
void packAndRun(const GemmArgs& g, ThreadPool* pool) {
  constexpr size_t kMaxRetainedFloats = size_t{4} << 20;  // 16 MiB
  const size_t floats = static_cast<size_t>(detail::roundUp(g.M, detail::kMR) * std::max<int64_t>(g.K, 1));
  detail::AlignedFloats temp;
  float* pa = floats <= kMaxRetainedFloats ? detail::threadScratch(floats, 2) : temp.ensure(floats);
  detail::packA(g.M, g.K, g.A, g.lda, g.transA, pa);
  gemmPackedA(pa, g, pool);
}

}  // namespace

void sgemm_packed(const PackedA& a, const GemmArgs& g, ThreadPool* pool) {
  if (a.rows() != g.M || a.depth() != g.K) {
    fail(ErrorCode::kInvalidArgument, "sgemm_packed: packed A is {}x{}, arguments say {}x{}", a.rows(), a.depth(),
         g.M, g.K);
  }
  if (g.M <= 0 || g.N <= 0) return;
  gemmPackedA(a.impl().data.data(), g, pool);
}

void sgemm(const GemmArgs& g, ThreadPool* pool) {
  if (g.M <= 0 || g.N <= 0) return;
  const detail::KernelTable& kt = detail::activeKernels();
  if (g.M == 1 && !g.transB && g.N > 1) {
    // Row vector times B: no packing. x = A[0, :], element k at A[k] (or A[k*lda] when transA).
    const float* x = g.A;
    if (g.transA && g.K > 1) {
      float* xs = detail::threadScratch(static_cast<size_t>(g.K), 1);
      for (int64_t k = 0; k < g.K; ++k) xs[k] = g.A[k * g.lda];
      x = xs;
    }
    gemvRow(kt, x, g, pool);
    return;
  }
  if (g.N == 1 && g.transA && g.M > 1) {
    // A^T rows are contiguous across m: C[m] = sum_k x[k] * A[k*lda + m], the row-vector kernel with B = A.
    const float* x = g.B;
    if (!g.transB && g.ldb != 1 && g.K > 1) {
      float* xs = detail::threadScratch(static_cast<size_t>(g.K), 1);
      for (int64_t k = 0; k < g.K; ++k) xs[k] = g.B[k * g.ldb];
      x = xs;
    }
    GemmArgs r;
    r.M = 1, r.N = g.M, r.K = g.K;
    r.B = g.A, r.ldb = g.lda;
    r.bias = g.bias;
    r.bias_kind = g.bias_kind == BiasKind::kPerRow ? BiasKind::kPerCol
                  : g.bias_kind == BiasKind::kPerCol ? BiasKind::kPerRow
                                                     : BiasKind::kNone;
    r.act = g.act;
    if (g.ldc == 1) {
      r.C = g.C;
      gemvRow(kt, x, r, pool);
    } else {
      float* tmp = detail::threadScratch(static_cast<size_t>(g.M), 0);
      r.C = tmp;
      gemvRow(kt, x, r, pool);
      for (int64_t m = 0; m < g.M; ++m) g.C[m * g.ldc] = tmp[m];
    }
    return;
  }
  packAndRun(g, pool);
}

void matmulBatched(const MatMulBatches& b, const float* a, const float* bm, float* y, const Activation& act,
                   ThreadPool* pool, const float* bias, BiasKind bias_kind) {
  const int64_t batches = static_cast<int64_t>(b.a_off.size());
  if (batches == 0 || b.M <= 0 || b.N <= 0) return;
  const int64_t threads = pool ? static_cast<int64_t>(pool->size()) : 1;
  if (threads > 1 && batches >= 2 * threads) {
    // Many small products (attention heads): a batch per task, each on one thread.
    pool->parallelFor(batches, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) sgemm(matmulBatchArgs(b, static_cast<size_t>(i), a, bm, y, act, bias, bias_kind), nullptr);
    }, 1);
    return;
  }
  for (int64_t i = 0; i < batches; ++i)
    sgemm(matmulBatchArgs(b, static_cast<size_t>(i), a, bm, y, act, bias, bias_kind), pool);
}

}  // namespace npuc::kernels
