// Tests of sgemm_ref against hand/double computations, and of every fast GEMM variant against sgemm_ref bit for
// bit (threads, blockings, transposes, bias kinds, activations, tails).
#include "kernels/gemm.hpp"

#include "test_util.hpp"

#include <cmath>
#include <limits>

namespace npuc::kernels {
namespace {

using test::firstBitMismatch;
using test::randomFloats;
using test::randomInt;

GemmArgs makeArgs(int64_t M, int64_t N, int64_t K, const std::vector<float>& A, bool transA, const std::vector<float>& B,
                  bool transB, std::vector<float>& C) {
  GemmArgs g;
  g.M = M, g.N = N, g.K = K;
  g.A = A.data(), g.lda = transA ? M : K, g.transA = transA;
  g.B = B.data(), g.ldb = transB ? K : N, g.transB = transB;
  g.C = C.data(), g.ldc = N;
  return g;
}

TEST(GemmRef, MatchesDoublePrecision) {
  std::mt19937 rng(1);
  const int64_t M = 5, N = 7, K = 33;
  const auto A = randomFloats(rng, M * K), B = randomFloats(rng, K * N), bias = randomFloats(rng, M);
  std::vector<float> C(M * N);
  GemmArgs g = makeArgs(M, N, K, A, false, B, false, C);
  g.bias = bias.data();
  g.bias_kind = BiasKind::kPerRow;
  sgemm_ref(g);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = bias[m];
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(A[m * K + k]) * B[k * N + n];
      EXPECT_NEAR(C[m * N + n], acc, 1e-5) << m << "," << n;
    }
  }
}

TEST(GemmRef, HandComputedWithTransposesBiasAndActivation) {
  // A = [[1,2],[3,4]], B = [[5,6,7],[8,9,10]]: A*B = [[21,24,27],[47,54,61]].
  const std::vector<float> A{1, 2, 3, 4}, At{1, 3, 2, 4};
  const std::vector<float> B{5, 6, 7, 8, 9, 10}, Bt{5, 8, 6, 9, 7, 10};
  const std::vector<float> row_bias{-30, 0.5f}, col_bias{-22, -24, 100};
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      std::vector<float> C(6);
      GemmArgs g = makeArgs(2, 3, 2, ta ? At : A, ta, tb ? Bt : B, tb, C);
      sgemm_ref(g);
      EXPECT_EQ(C, (std::vector<float>{21, 24, 27, 47, 54, 61}));
      g.bias = row_bias.data();
      g.bias_kind = BiasKind::kPerRow;
      g.act = {ActKind::kRelu, 0, 0};
      sgemm_ref(g);
      EXPECT_EQ(C, (std::vector<float>{0, 0, 0, 47.5f, 54.5f, 61.5f}));
      g.bias = col_bias.data();
      g.bias_kind = BiasKind::kPerCol;
      g.act = {ActKind::kLeakyRelu, 0.5f, 0};
      sgemm_ref(g);
      EXPECT_EQ(C, (std::vector<float>{-0.5f, 0, 127, 25, 30, 161}));
      g.act = {ActKind::kClip, 0.0f, 26.0f};
      sgemm_ref(g);
      EXPECT_EQ(C, (std::vector<float>{0, 0, 26, 25, 26, 26}));
    }
  }
}

TEST(GemmRef, UsesFusedMultiplyAdd) {
  // (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 exactly with one rounding; a separate multiply would round it to 2^-11.
  const float a = 1.0f + std::ldexp(1.0f, -12);
  const std::vector<float> A{a}, B{a}, bias{-1.0f};
  std::vector<float> C(1);
  GemmArgs g = makeArgs(1, 1, 1, A, false, B, false, C);
  g.bias = bias.data();
  g.bias_kind = BiasKind::kPerRow;
  sgemm_ref(g);
  EXPECT_EQ(C[0], std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));
}

// Runs sgemm and sgemm_packed under every configuration and compares bits with sgemm_ref.
void expectAllVariantsMatch(const GemmArgs& base, const std::string& what) {
  std::vector<float> ref(static_cast<size_t>(base.M * base.ldc), 7.0f);
  GemmArgs g = base;
  g.C = ref.data();
  sgemm_ref(g);
  test::VariantGuard guard;
  const GemmBlocking defaults = guard.blocking;
  for (const auto& cfg : test::sweepConfigs(defaults)) {
    forceKernelIsa(cfg.isa);
    setGemmBlocking(cfg.blocking);
    ThreadPool* pool = test::poolFor(cfg.threads);
    std::vector<float> out(ref.size(), 7.0f);
    g.C = out.data();
    sgemm(g, pool);
    int64_t bad = firstBitMismatch(ref, out);
    ASSERT_EQ(bad, -1) << "sgemm " << what << " " << cfg.name() << " at " << bad << ": " << out[bad] << " vs "
                       << ref[bad];
    const PackedA pa(g.M, g.K, g.A, g.lda, g.transA);
    std::fill(out.begin(), out.end(), 7.0f);
    sgemm_packed(pa, g, pool);
    bad = firstBitMismatch(ref, out);
    ASSERT_EQ(bad, -1) << "sgemm_packed " << what << " " << cfg.name() << " at " << bad;
  }
}

TEST(Gemm, RandomShapesBitExact) {
  std::mt19937 rng(42);
  const int64_t sizes[] = {1, 2, 3, 5, 6, 7, 8, 12, 15, 16, 17, 23, 24, 31, 33, 40, 48, 64, 97};
  for (int iter = 0; iter < 200; ++iter) {
    const int64_t M = sizes[randomInt(rng, 0, 18)], N = sizes[randomInt(rng, 0, 18)];
    const int64_t K = iter % 10 == 0 ? 0 : sizes[randomInt(rng, 0, 18)] + randomInt(rng, 0, 3);
    const bool ta = randomInt(rng, 0, 1), tb = randomInt(rng, 0, 1);
    const auto A = randomFloats(rng, static_cast<size_t>(M * K) + 1), B = randomFloats(rng, static_cast<size_t>(K * N) + 1);
    const auto bias = randomFloats(rng, static_cast<size_t>(std::max(M, N)));
    std::vector<float> C;
    GemmArgs g = makeArgs(M, N, K, A, ta, B, tb, C);
    const int bk = iter % 3;
    g.bias_kind = bk == 0 ? BiasKind::kNone : bk == 1 ? BiasKind::kPerRow : BiasKind::kPerCol;
    g.bias = bk == 0 ? nullptr : bias.data();
    g.act = test::activationFor(iter / 3);
    expectAllVariantsMatch(g, "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                                  " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) + " bias=" +
                                  std::to_string(bk) + " act=" + std::to_string(iter % 4));
  }
}

TEST(Gemm, LargerShapesWithStridesBitExact) {
  std::mt19937 rng(7);
  struct S {
    int64_t M, N, K;
  } shapes[] = {{64, 300, 600}, {130, 77, 257}, {1, 1000, 512}, {300, 1, 70}, {37, 513, 19}};
  for (const S& s : shapes) {
    // Leading dimensions larger than the logical sizes.
    const int64_t lda = s.K + 3, ldb = s.N + 5, ldc = s.N + 2;
    const auto A = randomFloats(rng, static_cast<size_t>(s.M * lda)), B = randomFloats(rng, static_cast<size_t>(s.K * ldb));
    const auto bias = randomFloats(rng, static_cast<size_t>(s.M));
    GemmArgs g;
    g.M = s.M, g.N = s.N, g.K = s.K;
    g.A = A.data(), g.lda = lda, g.B = B.data(), g.ldb = ldb, g.ldc = ldc;
    g.bias = bias.data(), g.bias_kind = BiasKind::kPerRow;
    g.act = {ActKind::kRelu, 0, 0};
    expectAllVariantsMatch(g, "M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K));
  }
}

TEST(Gemm, EveryColumnTailBitExact) {
  // N = 1..50 covers every column tail (narrow-column kernel alone and after 8 columns, 6x8, full panels,
  // panel pairs) with a row tail (M = 13) and several k-blocks under the tiny blocking.
  std::mt19937 rng(5);
  for (int64_t N = 1; N <= 50; ++N) {
    const int64_t M = 13, K = 11;
    const auto A = randomFloats(rng, static_cast<size_t>(M * K)), B = randomFloats(rng, static_cast<size_t>(K * N));
    const auto bias = randomFloats(rng, static_cast<size_t>(std::max(M, N)));
    std::vector<float> C;
    GemmArgs g = makeArgs(M, N, K, A, false, B, false, C);
    const int bk = static_cast<int>(N % 3);
    g.bias_kind = bk == 0 ? BiasKind::kNone : bk == 1 ? BiasKind::kPerRow : BiasKind::kPerCol;
    g.bias = bk == 0 ? nullptr : bias.data();
    g.act = test::activationFor(static_cast<int>(N));
    expectAllVariantsMatch(g, "M=13 N=" + std::to_string(N) + " K=11");
  }
}

TEST(Gemm, MatrixVectorShapesBitExact) {
  // N == 1 (packed-A GEMV; transA: row-vector kernel over A) and M == 1 (row-vector kernel over B), large
  // enough to run on several threads, every transpose, bias kind and a strided output.
  std::mt19937 rng(11);
  struct S {
    int64_t M, N, K;
  } shapes[] = {{1000, 1, 1280}, {1, 1000, 1280}, {203, 1, 700}, {1, 203, 700}, {1, 77, 3}, {50, 1, 2}};
  int iter = 0;
  for (const S& s : shapes) {
    for (int t = 0; t < 4; ++t, ++iter) {
      const bool ta = t & 1, tb = t & 2;
      const int64_t lda = (ta ? s.M : s.K) + 3, ldb = (tb ? s.K : s.N) + 2, ldc = s.N + (iter % 2);
      const auto A = randomFloats(rng, static_cast<size_t>((ta ? s.K : s.M) * lda));
      const auto B = randomFloats(rng, static_cast<size_t>((tb ? s.N : s.K) * ldb));
      const auto bias = randomFloats(rng, static_cast<size_t>(std::max(s.M, s.N)));
      GemmArgs g;
      g.M = s.M, g.N = s.N, g.K = s.K;
      g.A = A.data(), g.lda = lda, g.transA = ta;
      g.B = B.data(), g.ldb = ldb, g.transB = tb;
      g.ldc = ldc;
      const int bk = iter % 3;
      g.bias_kind = bk == 0 ? BiasKind::kNone : bk == 1 ? BiasKind::kPerRow : BiasKind::kPerCol;
      g.bias = bk == 0 ? nullptr : bias.data();
      g.act = test::activationFor(iter);
      expectAllVariantsMatch(g, "M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) + " K=" +
                                    std::to_string(s.K) + " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
    }
  }
}

TEST(Gemm, ActivationSpecialValuesBitExact) {
  // K = 0: the output is act(bias); special values check the vector epilogue against applyActivation.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> bias{-0.0f, 0.0f, nan, -nan, inf, -inf, -1.0f, 1.0f, -0.25f, 0.5f, 0.75f, -3.0f, 1e-40f, -1e-40f,
                          -1e-45f, 1e-45f, 3.0f, 2.5f, -2.5f};
  while (bias.size() < 37) bias.push_back(static_cast<float>(bias.size()) * -0.125f + 2.0f);
  const std::vector<float> A{1.0f}, B{1.0f};
  for (int a = 0; a < test::kNumActivations; ++a) {  // (every activation of test::activationFor)
    for (int bk = 1; bk <= 2; ++bk) {
      std::vector<float> C;
      const int64_t M = bk == 1 ? 37 : 3, N = bk == 1 ? 3 : 37;
      GemmArgs g = makeArgs(M, N, 0, A, false, B, false, C);
      g.bias = bias.data();
      g.bias_kind = bk == 1 ? BiasKind::kPerRow : BiasKind::kPerCol;
      g.act = test::activationFor(a);
      expectAllVariantsMatch(g, "act=" + std::to_string(a));
    }
  }
}

// Batched products with broadcast batch dims (the matmul layer kind, the engine's MatMul): the batch offsets are
// numpy's, and every variant and thread count gives sgemm_ref's bits.
TEST(MatMulBatched, BroadcastOffsetsAndEveryVariantBitExact) {
  MatMulBatches b;
  std::string why;
  ASSERT_TRUE(matmulBatches({2, 1, 3, 4}, {3, 4, 5}, {2, 3, 3, 5}, &b, &why)) << why;
  EXPECT_EQ(b.M, 3);
  EXPECT_EQ(b.N, 5);
  EXPECT_EQ(b.K, 4);
  // a's batch [i, 0] for every j; b's batch j for every i.
  EXPECT_EQ(b.a_off, (std::vector<int64_t>{0, 0, 0, 12, 12, 12}));
  EXPECT_EQ(b.b_off, (std::vector<int64_t>{0, 20, 40, 0, 20, 40}));
  EXPECT_FALSE(matmulBatches({2, 3, 4}, {3, 4, 5}, {3, 3, 5}, &b, &why));  // 2 vs 3 does not broadcast
  EXPECT_NE(why.find("does not broadcast"), std::string::npos) << why;
  EXPECT_FALSE(matmulBatches({3, 4}, {5, 6}, {3, 6}, &b, &why));  // K 4 vs 5
  EXPECT_FALSE(matmulBatches({4}, {4, 6}, {6}, &b, &why));        // rank 1: the caller views it as a matrix

  std::mt19937 rng(5);
  test::VariantGuard guard;
  for (int iter = 0; iter < 40; ++iter) {
    const int64_t M = randomInt(rng, 1, 40), N = randomInt(rng, 1, 40), K = randomInt(rng, iter % 8 ? 1 : 0, 50);
    std::vector<int64_t> ab, bb, yb;  // batch dims
    const int nb = static_cast<int>(randomInt(rng, 0, 3));
    for (int d = 0; d < nb; ++d) {
      const int64_t n = randomInt(rng, 1, 4);
      const int which = static_cast<int>(randomInt(rng, 0, 2));  // 0 both, 1 a broadcast, 2 b broadcast
      ab.push_back(which == 1 ? 1 : n), bb.push_back(which == 2 ? 1 : n), yb.push_back(n);
    }
    if (iter % 5 == 0 && !bb.empty()) bb.erase(bb.begin());  // b of a lower rank
    auto full = [](std::vector<int64_t> s, int64_t r, int64_t c) { s.push_back(r), s.push_back(c); return s; };
    const std::vector<int64_t> as = full(ab, M, K), bs = full(bb, K, N), ys = full(yb, M, N);
    MatMulBatches mb;
    ASSERT_TRUE(matmulBatches(as, bs, ys, &mb, &why)) << why;
    auto numel = [](const std::vector<int64_t>& s) { int64_t n = 1; for (auto d : s) n *= d; return n; };
    const auto A = randomFloats(rng, static_cast<size_t>(numel(as))), B = randomFloats(rng, static_cast<size_t>(numel(bs)));
    const Activation act = test::activationFor(iter);
    const BiasKind bk = iter % 3 == 0 ? BiasKind::kNone : iter % 3 == 1 ? BiasKind::kPerCol : BiasKind::kPerRow;
    const auto bias = randomFloats(rng, static_cast<size_t>(std::max(M, N)));
    const float* bp = bk == BiasKind::kNone ? nullptr : bias.data();
    std::vector<float> ref(static_cast<size_t>(numel(ys)), 7.0f);
    matmulBatched_ref(mb, A.data(), B.data(), ref.data(), act, bp, bk);
    // Batch 0 by hand: the plain product of the first matrices.
    std::vector<float> c0(static_cast<size_t>(M * N));
    GemmArgs g;
    g.M = M, g.N = N, g.K = K, g.A = A.data(), g.lda = K, g.B = B.data() + mb.b_off[0], g.ldb = N, g.C = c0.data(), g.ldc = N;
    g.act = act;
    g.bias = bp;
    g.bias_kind = bk;
    sgemm_ref(g);
    ASSERT_EQ(firstBitMismatch(c0, std::vector<float>(ref.begin(), ref.begin() + M * N)), -1);
    for (const auto& cfg : test::sweepConfigs(guard.blocking)) {
      forceKernelIsa(cfg.isa);
      setGemmBlocking(cfg.blocking);
      std::vector<float> out(ref.size(), 7.0f);
      matmulBatched(mb, A.data(), B.data(), out.data(), act, test::poolFor(cfg.threads), bp, bk);
      const int64_t bad = firstBitMismatch(ref, out);
      ASSERT_EQ(bad, -1) << "matmulBatched " << cfg.name() << " M=" << M << " N=" << N << " K=" << K << " at " << bad;
    }
  }
}

TEST(Gemm, PackedShapeMismatchThrows) {
  const std::vector<float> A(6, 1.0f), B(6, 1.0f);
  std::vector<float> C(4);
  const PackedA pa(2, 3, A.data(), 3, false);
  GemmArgs g = makeArgs(2, 2, 2, A, false, B, false, C);
  EXPECT_ANY_THROW(sgemm_packed(pa, g, nullptr));
  EXPECT_EQ(pa.rows(), 2);
  EXPECT_EQ(pa.depth(), 3);
}

TEST(Gemm, VariantName) {
  const std::string v = sgemmVariant();
  EXPECT_TRUE(v == "avx512" || v == "avx2_fma" || v == "portable") << v;
  const bool prev = forcePortableKernels(true);
  EXPECT_STREQ(sgemmVariant(), "portable");
  forcePortableKernels(prev);
  const char* prev_isa = forceKernelIsa("avx2");
  EXPECT_TRUE(std::string(sgemmVariant()) != "avx512");
  forceKernelIsa("portable");
  EXPECT_STREQ(sgemmVariant(), "portable");
  EXPECT_STREQ(forceKernelIsa(prev_isa), "portable");
}

}  // namespace
}  // namespace npuc::kernels
