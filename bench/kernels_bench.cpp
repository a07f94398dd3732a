// npuc_kernels_bench: GFLOP/s of the fast float kernels (sgemm, sgemm_packed, Conv on resnet50 / mobilenet_v2
// shapes, MobileNetV2 blocks as chains of three layers, conv_transpose) at 1 and 2 threads, GMAC/s of their int8 forms and of attention's products of two
// activations (float and int8); pooling (GoogLeNet / SqueezeNet shapes) as GB/s read, reference and fast. Flops
// count 2 per multiply-add, padded taps included. peak/*: the CPU's own rates from register-only loops (twelve
// independent accumulators): AVX2 FMA (GFLOP/s) and AVX2 vpmaddwd + vpaddd, the int8 convolution's exact step there
// (GMAC/s, 16 products per instruction pair) — the ceilings the kernels' figures are read against.
// NPUC_KERNEL_ISA=avx512|avx2|portable caps the kernel ISA; NPUC_GEMM_KC/MC/NC set the cache blocking.
#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layers.hpp"
#include "kernels/quant.hpp"
#include "support/thread_pool.hpp"

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace npuc::kernels;

std::vector<float> randomVec(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

npuc::ThreadPool* poolFor(int threads) { return threads > 1 ? &npuc::ThreadPool::shared(threads) : nullptr; }

void setFlops(benchmark::State& state, double flops_per_iter, const char* variant) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iter * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(variant);
}

void benchGemm(benchmark::State& state, int64_t M, int64_t N, int64_t K, bool packed, bool transB) {
  const int threads = static_cast<int>(state.range(0));
  const auto A = randomVec(static_cast<size_t>(M * K), 1), B = randomVec(static_cast<size_t>(K * N), 2);
  const auto bias = randomVec(static_cast<size_t>(M), 3);
  std::vector<float> C(static_cast<size_t>(M * N));
  GemmArgs g;
  g.M = M, g.N = N, g.K = K;
  g.A = A.data(), g.lda = K;
  g.B = B.data(), g.ldb = transB ? K : N, g.transB = transB;
  g.C = C.data(), g.ldc = N;
  g.bias = bias.data(), g.bias_kind = BiasKind::kPerRow;
  g.act = {ActKind::kRelu, 0, 0};
  const PackedA pa(M, K, A.data(), K, false);
  npuc::ThreadPool* pool = poolFor(threads);
  for (auto _ : state) {
    if (packed) {
      sgemm_packed(pa, g, pool);
    } else {
      sgemm(g, pool);
    }
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  setFlops(state, 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K), sgemmVariant());
}

ConvShape convShape(int64_t C, int64_t M, int64_t groups, int64_t H, int64_t W, int64_t k, int64_t s, int64_t p) {
  ConvShape sh;
  sh.in_channels = C, sh.out_channels = M, sh.groups = groups;
  sh.in_spatial = {H, W}, sh.kernel = {k, k}, sh.stride = {s, s}, sh.dilation = {1, 1}, sh.pad_begin = {p, p};
  sh.out_spatial = {(H + 2 * p - k) / s + 1, (W + 2 * p - k) / s + 1};
  return sh;
}

// cold: before each timed run, 64 MiB are touched (one byte per cache line) outside the timing, so the run finds
// its input, output and weights in memory, not in cache -- as a layer in a network does after the layers before it.
void benchConv(benchmark::State& state, ConvShape s, bool cold = false, Layouts l = {}) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t hw = s.in_spatial[0] * s.in_spatial[1], ohw = s.out_spatial[0] * s.out_spatial[1];
  const int64_t taps = s.kernel[0] * s.kernel[1];
  const auto x = randomVec(static_cast<size_t>(s.in_channels * hw), 1);
  const auto w = randomVec(static_cast<size_t>(s.out_channels * (s.in_channels / s.groups) * taps), 2);
  const auto bias = randomVec(static_cast<size_t>(s.out_channels), 3);
  std::vector<float> y(static_cast<size_t>(s.out_channels * ohw));
  const Conv conv(s, w.data(), bias.data(), {ActKind::kRelu, 0, 0}, l);
  npuc::ThreadPool* pool = poolFor(threads);
  std::vector<char> evict(cold ? size_t{64} << 20 : 0);
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      // Read-modify-write, not memset: glibc's memset streams large sizes past the cache.
      for (size_t i = 0; i < evict.size(); i += 64) evict[i] = static_cast<char>(evict[i] + 1);
      benchmark::ClobberMemory();
      state.ResumeTiming();
    }
    conv.run(x.data(), y.data(), pool, l);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double macs = static_cast<double>(s.out_channels) * static_cast<double>(ohw) *
                      static_cast<double>(s.in_channels / s.groups) * static_cast<double>(taps);
  setFlops(state, 2.0 * macs, conv.variant());
}

// A MobileNetV2 block as the engine runs it: expansion 1x1 (ReLU6), depthwise 3x3 (ReLU6), projection 1x1, each
// layer reading the one before's output, every layer on the same threads. Against the same layers alone (conv/):
// at 2 threads each layer then reads lines the other core wrote (kernels.md "2-thread partitioning").
void benchChain(benchmark::State& state, int64_t c, int64_t e, int64_t h) {
  const int threads = static_cast<int>(state.range(0));
  auto shape = [h](int64_t in, int64_t out, int64_t k, int64_t groups) {
    ConvShape s;
    s.in_channels = in, s.out_channels = out, s.groups = groups;
    s.in_spatial = s.out_spatial = {h, h}, s.kernel = {k, k}, s.stride = {1, 1}, s.dilation = {1, 1};
    s.pad_begin = {k / 2, k / 2};
    return s;
  };
  const ConvShape sh[3] = {shape(c, e, 1, 1), shape(e, e, 3, e), shape(e, c, 1, 1)};
  const Activation relu6{ActKind::kClip, 0.0f, 6.0f};
  std::vector<std::unique_ptr<Conv>> convs;
  double macs = 0.0;
  for (int i = 0; i < 3; ++i) {
    const int64_t k = (sh[i].in_channels / sh[i].groups) * sh[i].kernel[0] * sh[i].kernel[1];
    const auto w = randomVec(static_cast<size_t>(sh[i].out_channels * k), 10 + i);
    const auto b = randomVec(static_cast<size_t>(sh[i].out_channels), 20 + i);
    convs.push_back(std::make_unique<Conv>(sh[i], w.data(), b.data(), i < 2 ? relu6 : Activation{}));
    macs += static_cast<double>(sh[i].out_channels * h * h * k);
  }
  const auto x = randomVec(static_cast<size_t>(c * h * h), 1);
  std::vector<float> a(static_cast<size_t>(e * h * h)), d(a.size()), y(x.size());
  npuc::ThreadPool* pool = poolFor(threads);
  for (auto _ : state) {
    convs[0]->run(x.data(), a.data(), pool);
    convs[1]->run(a.data(), d.data(), pool);
    convs[2]->run(d.data(), y.data(), pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  setFlops(state, 2.0 * macs, "expand + depthwise + project");
}

// The int8-affine convolution (kernels::QConv, weights packed once) on the best path of this CPU: GMAC/s.
void benchQConv(benchmark::State& state, ConvShape s) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t hw = s.in_spatial[0] * s.in_spatial[1], ohw = s.out_spatial[0] * s.out_spatial[1];
  const int64_t taps = s.kernel[0] * s.kernel[1], K = (s.in_channels / s.groups) * taps;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> i8(-128, 127), w8(-127, 127);
  std::vector<int8_t> x(static_cast<size_t>(s.in_channels * hw)), w(static_cast<size_t>(s.out_channels * K));
  for (auto& v : x) v = static_cast<int8_t>(i8(rng));
  for (auto& v : w) v = static_cast<int8_t>(w8(rng));
  std::vector<int32_t> bias(static_cast<size_t>(s.out_channels), 1000);
  std::vector<int8_t> y(static_cast<size_t>(s.out_channels * ohw));
  QOutput out;
  out.zero_point = -128, out.lo = -128;
  for (int64_t m = 0; m < s.out_channels; ++m) out.multiplier.push_back(quantizeMultiplier(0.001 + 1e-5 * static_cast<double>(m)));
  const QConv conv(s, w.data(), bias.data(), 3, out);
  npuc::ThreadPool* pool = poolFor(threads);
  for (auto _ : state) {
    conv.run(x.data(), y.data(), pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double macs = static_cast<double>(s.out_channels) * static_cast<double>(ohw) * static_cast<double>(K);
  state.counters["GMAC/s"] = benchmark::Counter(macs * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(qconvPathName(conv.path()));
}

// Attention's product of two activations, batches x [M, K] x [K, N] (ViT-B/16: 12 heads of 197 tokens, 64 wide):
// float (kernels::matmulBatched) and int8-affine (kernels::qmatmul, b packed per call as each frame does); GMAC/s.
void benchMatMul(benchmark::State& state, int64_t batches, int64_t M, int64_t K, int64_t N, bool int8) {
  const int threads = static_cast<int>(state.range(0));
  MatMulBatches mb;
  std::string why;
  if (!matmulBatches({batches, M, K}, {batches, K, N}, {batches, M, N}, &mb, &why)) {
    state.SkipWithError(why.c_str());
    return;
  }
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> i8(-128, 127);
  const size_t na = static_cast<size_t>(batches * M * K), nb = static_cast<size_t>(batches * K * N), ny = static_cast<size_t>(batches * M * N);
  std::vector<int8_t> a8(na), b8(nb), y8(ny);
  std::vector<float> af(na), bf(nb), yf(ny);
  for (size_t i = 0; i < na; ++i) a8[i] = static_cast<int8_t>(i8(rng)), af[i] = a8[i] * 0.01f;
  for (size_t i = 0; i < nb; ++i) b8[i] = static_cast<int8_t>(i8(rng)), bf[i] = b8[i] * 0.01f;
  const QMatMulParams p = qmatmulParams(0.01, 3, 0.01, -5, 0.05, 0, K);
  npuc::ThreadPool* pool = poolFor(threads);
  for (auto _ : state) {
    if (int8) qmatmul(mb, a8.data(), b8.data(), p, y8.data(), pool);
    else matmulBatched(mb, af.data(), bf.data(), yf.data(), Activation{}, pool);
    benchmark::DoNotOptimize(y8.data());
    benchmark::DoNotOptimize(yf.data());
    benchmark::ClobberMemory();
  }
  const double macs = static_cast<double>(batches * M * N) * static_cast<double>(K);
  state.counters["GMAC/s"] = benchmark::Counter(macs * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(int8 ? qconvPathName(bestQConvPath()) : sgemmVariant());
}

void benchConvTranspose(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ConvTransposeShape s;
  s.in_channels = 64, s.out_channels = 32;
  s.in_spatial = {28, 28}, s.out_spatial = {56, 56}, s.kernel = {4, 4}, s.stride = {2, 2}, s.dilation = {1, 1};
  s.pad_begin = {1, 1};
  const auto x = randomVec(64 * 28 * 28, 1), w = randomVec(64 * 32 * 16, 2);
  std::vector<float> y(32 * 56 * 56);
  npuc::ThreadPool* pool = poolFor(threads);
  for (auto _ : state) {
    conv_transpose(s, x.data(), w.data(), nullptr, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  // Useful multiply-adds: every input element times every tap.
  setFlops(state, 2.0 * 64 * 28 * 28 * 32 * 16, sgemmVariant());
}

// All convolutions of a network, run back to back (each layer has its own input and output buffers).
struct NetConv {
  ConvShape s;
  std::vector<float> x, y;
  std::unique_ptr<Conv> conv;
};

std::vector<ConvShape> resnet50Convs() {
  std::vector<ConvShape> v{convShape(3, 64, 1, 224, 224, 7, 2, 3)};
  int64_t in = 64, hw = 56;
  const int64_t blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = 64 << stage, out = width * 4;
    for (int64_t b = 0; b < blocks[stage]; ++b) {
      const int64_t s = (b == 0 && stage > 0) ? 2 : 1;
      const int64_t ohw = hw / s;
      v.push_back(convShape(in, width, 1, hw, hw, 1, 1, 0));
      v.push_back(convShape(width, width, 1, hw, hw, 3, s, 1));
      v.push_back(convShape(width, out, 1, ohw, ohw, 1, 1, 0));
      if (b == 0) v.push_back(convShape(in, out, 1, hw, hw, 1, s, 0));
      in = out;
      hw = ohw;
    }
  }
  return v;
}

std::vector<ConvShape> mobilenetV2Convs() {
  std::vector<ConvShape> v{convShape(3, 32, 1, 224, 224, 3, 2, 1)};
  struct B {
    int64_t t, c, n, s;
  };
  int64_t in = 32, hw = 112;
  for (const B& b : {B{1, 16, 1, 1}, B{6, 24, 2, 2}, B{6, 32, 3, 2}, B{6, 64, 4, 2}, B{6, 96, 3, 1}, B{6, 160, 3, 2},
                     B{6, 320, 1, 1}}) {
    for (int64_t i = 0; i < b.n; ++i) {
      const int64_t s = i == 0 ? b.s : 1, hidden = in * b.t;
      if (b.t != 1) v.push_back(convShape(in, hidden, 1, hw, hw, 1, 1, 0));
      v.push_back(convShape(hidden, hidden, hidden, hw, hw, 3, s, 1));
      hw = (hw + 2 - 3) / s + 1;
      v.push_back(convShape(hidden, b.c, 1, hw, hw, 1, 1, 0));
      in = b.c;
    }
  }
  v.push_back(convShape(320, 1280, 1, 7, 7, 1, 1, 0));
  return v;
}

void benchNet(benchmark::State& state, const std::vector<ConvShape>& shapes, bool depthwise_only) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<NetConv> layers;
  double macs = 0;
  unsigned seed = 1;
  for (const ConvShape& s : shapes) {
    const bool dw = s.groups > 1;
    if (depthwise_only && !dw) continue;
    NetConv l;
    l.s = s;
    const int64_t hw = s.in_spatial[0] * s.in_spatial[1], ohw = s.out_spatial[0] * s.out_spatial[1];
    const int64_t taps = s.kernel[0] * s.kernel[1];
    l.x = randomVec(static_cast<size_t>(s.in_channels * hw), seed++);
    l.y.resize(static_cast<size_t>(s.out_channels * ohw));
    const auto w = randomVec(static_cast<size_t>(s.out_channels * (s.in_channels / s.groups) * taps), seed++);
    const auto bias = randomVec(static_cast<size_t>(s.out_channels), seed++);
    l.conv = std::make_unique<Conv>(s, w.data(), bias.data(), Activation{ActKind::kRelu, 0, 0});
    macs += static_cast<double>(s.out_channels * ohw * (s.in_channels / s.groups) * taps);
    layers.push_back(std::move(l));
  }
  npuc::ThreadPool* pool = poolFor(threads);
  for (auto _ : state) {
    for (auto& l : layers) l.conv->run(l.x.data(), l.y.data(), pool);
    benchmark::ClobberMemory();
  }
  setFlops(state, 2.0 * macs, sgemmVariant());
}

/// MaxPool / AveragePool, reference or fast; GB/s counts the input plane bytes read once.
void benchPool(benchmark::State& state, Pool2dShape s, bool is_max, bool fast) {
  const int threads = static_cast<int>(state.range(0));
  const std::vector<float> x = randomVec(static_cast<size_t>(s.planes * s.ih * s.iw), 7);
  std::vector<float> y(static_cast<size_t>(s.planes * s.oh * s.ow));
  npuc::ThreadPool* pool = poolFor(threads);
  using PoolFn = void (*)(const Pool2dShape&, const float*, float*, npuc::ThreadPool*);
  const PoolFn fn = is_max ? (fast ? static_cast<PoolFn>(maxPool2dFast) : maxPool2d)
                           : (fast ? static_cast<PoolFn>(avgPool2dFast) : avgPool2d);
  for (auto _ : state) {
    fn(s, x.data(), y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(x.size() * sizeof(float)) *
                                                  static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
  state.SetLabel(fast ? "fast" : "ref");
}

// MaxPool over int8 codes (int8 packages' pools): the fast form (maxPool2dI8Fast) or the reference.
void benchPoolI8(benchmark::State& state, Pool2dShape s, bool fast) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<int8_t> x(static_cast<size_t>(s.planes * s.ih * s.iw)), y(static_cast<size_t>(s.planes * s.oh * s.ow));
  std::mt19937 rng(7);
  for (auto& v : x) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  npuc::ThreadPool* pool = poolFor(threads);
  for (auto _ : state) {
    if (fast) maxPool2dI8Fast(s, x.data(), y.data(), pool);
    else maxPool2dI8(s, x.data(), y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(x.size()) * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
  state.SetLabel(fast ? "fast" : "ref");
}

// Register-only loops: twelve independent accumulators (more than the latency times the issue rate), operands that the
// compiler cannot fold (an asm barrier changes one each iteration).
__attribute__((target("avx2,fma"))) double peakFmaAvx2(int64_t n) {
  __m256 acc[12], b = _mm256_set1_ps(1.0f - 1e-7f), c = _mm256_set1_ps(1e-7f);
  for (int j = 0; j < 12; ++j) acc[j] = _mm256_set1_ps(static_cast<float>(j));
  for (int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_fmadd_ps(acc[j], b, c);
    __asm__ volatile("" : "+x"(b));
  }
  float sum = 0.0f;
  for (int j = 0; j < 12; ++j) sum += _mm256_cvtss_f32(acc[j]);
  return sum;
}
__attribute__((target("avx2"))) int64_t peakMaddAvx2(int64_t n) {
  __m256i acc[12], b[12], w = _mm256_set1_epi32(0x00030002);
  for (int j = 0; j < 12; ++j) acc[j] = _mm256_setzero_si256(), b[j] = _mm256_set1_epi32(j + 1);
  for (int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(b[j], w));
    __asm__ volatile("" : "+x"(w));
  }
  int64_t sum = 0;
  for (int j = 0; j < 12; ++j) sum += _mm256_extract_epi32(acc[j], 0);
  return sum;
}

void benchPeak(benchmark::State& state, bool madd) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    state.SkipWithError("the CPU has no AVX2 / FMA");
    return;
  }
  const int64_t n = 1 << 20;
  for (auto _ : state) benchmark::DoNotOptimize(madd ? static_cast<double>(peakMaddAvx2(n)) : peakFmaAvx2(n));
  const double per_iter = static_cast<double>(n) * 12 * 16;  // per instruction: 8 lanes x 2 flops, or 8 lanes x 2 products
  state.counters[madd ? "GMAC/s" : "GFLOP/s"] =
      benchmark::Counter(per_iter * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void registerAll() {
  auto reg = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
  };
  struct G {
    int64_t M, N, K;
  };
  for (const G& g : {G{256, 3136, 576}, G{64, 3136, 576}, G{512, 196, 2304}, G{2048, 49, 512}, G{1000, 1, 1280},
                    G{1000, 1, 2048}}) {
    const std::string dims = std::to_string(g.M) + "x" + std::to_string(g.N) + "x" + std::to_string(g.K);
    reg("sgemm/" + dims, [g](benchmark::State& st) { benchGemm(st, g.M, g.N, g.K, false, false); });
    reg("sgemm_packed/" + dims, [g](benchmark::State& st) { benchGemm(st, g.M, g.N, g.K, true, false); });
  }
  reg("sgemm_transB/1x1000x2048", [](benchmark::State& st) { benchGemm(st, 1, 1000, 2048, false, true); });
  struct C {
    const char* name;
    ConvShape s;
  };
  const C convs[] = {
      {"conv/resnet50_3x3_64-64_56", convShape(64, 64, 1, 56, 56, 3, 1, 1)},
      {"conv/resnet50_1x1_64-256_56", convShape(64, 256, 1, 56, 56, 1, 1, 0)},
      {"conv/resnet50_1x1_256-64_56", convShape(256, 64, 1, 56, 56, 1, 1, 0)},
      {"conv/resnet50_3x3s2_128-128_56", convShape(128, 128, 1, 56, 56, 3, 2, 1)},
      {"conv/resnet50_3x3_256-256_14", convShape(256, 256, 1, 14, 14, 3, 1, 1)},
      {"conv/resnet50_3x3_512-512_7", convShape(512, 512, 1, 7, 7, 3, 1, 1)},
      {"conv/resnet50_3x3s2_512-512_14", convShape(512, 512, 1, 14, 14, 3, 2, 1)},
      {"conv/resnet50_1x1_512-2048_7", convShape(512, 2048, 1, 7, 7, 1, 1, 0)},
      {"conv/resnet50_7x7s2_3-64_224", convShape(3, 64, 1, 224, 224, 7, 2, 3)},
      {"conv/mbv2_dw3x3_144_56", convShape(144, 144, 144, 56, 56, 3, 1, 1)},
      {"conv/mbv2_dw3x3s2_96_112", convShape(96, 96, 96, 112, 112, 3, 2, 1)},
      {"conv/mbv2_dw3x3_960_7", convShape(960, 960, 960, 7, 7, 3, 1, 1)},
      {"conv/mbv2_dw3x3_576_14", convShape(576, 576, 576, 14, 14, 3, 1, 1)},
      {"conv/mbv2_dw3x3s2_144_56", convShape(144, 144, 144, 56, 56, 3, 2, 1)},
      {"conv/mbv2_dw3x3s2_192_28", convShape(192, 192, 192, 28, 28, 3, 2, 1)},
      {"conv/mbv2_dw3x3s2_576_14", convShape(576, 576, 576, 14, 14, 3, 2, 1)},
      {"conv/mbv2_1x1_144-24_56", convShape(144, 24, 1, 56, 56, 1, 1, 0)},
      {"conv/mbv2_1x1_96-24_56", convShape(96, 24, 1, 56, 56, 1, 1, 0)},
      {"conv/mbv2_1x1_192-32_28", convShape(192, 32, 1, 28, 28, 1, 1, 0)},
      {"conv/mbv2_1x1_384-64_14", convShape(384, 64, 1, 14, 14, 1, 1, 0)},
      {"conv/mbv2_1x1_960-320_7", convShape(960, 320, 1, 7, 7, 1, 1, 0)},
      {"conv/mbv2_1x1_576-96_14", convShape(576, 96, 1, 14, 14, 1, 1, 0)},
      {"conv/mbv2_1x1_96-576_14", convShape(96, 576, 1, 14, 14, 1, 1, 0)},
      {"conv/mbv2_1x1_32-192_28", convShape(32, 192, 1, 28, 28, 1, 1, 0)},
      {"conv/mbv2_1x1_16-96_112", convShape(16, 96, 1, 112, 112, 1, 1, 0)},
      {"conv/mbv2_1x1_32-16_112", convShape(32, 16, 1, 112, 112, 1, 1, 0)},
      {"conv/squeezenet_1x1_512-1000_13", convShape(512, 1000, 1, 13, 13, 1, 1, 0)},
      {"conv/squeezenet_1x1_256-32_27", convShape(256, 32, 1, 27, 27, 1, 1, 0)},
      {"conv/tinyyolo_3x3_512-1024_13", convShape(512, 1024, 1, 13, 13, 3, 1, 1)},
      {"conv/tinyyolo_3x3_16-32_208", convShape(16, 32, 1, 208, 208, 3, 1, 1)},
      {"conv/tinyyolo_3x3_3-16_416", convShape(3, 16, 1, 416, 416, 3, 1, 1)},
      {"conv/googlenet_3x3_64-192_56", convShape(64, 192, 1, 56, 56, 3, 1, 1)},
      {"conv/googlenet_3x3_128-192_28", convShape(128, 192, 1, 28, 28, 3, 1, 1)},
      {"conv/googlenet_1x1_64-64_56", convShape(64, 64, 1, 56, 56, 1, 1, 0)},
      {"conv/googlenet_1x1_256-32_28", convShape(256, 32, 1, 28, 28, 1, 1, 0)},
      {"conv/squeezenet_3x3_64-256_13", convShape(64, 256, 1, 13, 13, 3, 1, 1)},
      {"conv/squeezenet_3x3_16-64_55", convShape(16, 64, 1, 55, 55, 3, 1, 1)},
      {"conv/squeezenet_1x1_128-16_55", convShape(128, 16, 1, 55, 55, 1, 1, 0)},
      {"conv/squeezenet_1x1_16-64_55", convShape(16, 64, 1, 55, 55, 1, 1, 0)},
      {"conv/squeezenet_1x1_512-64_13", convShape(512, 64, 1, 13, 13, 1, 1, 0)},
      {"conv/squeezenet_3x3s2_3-64_224", convShape(3, 64, 1, 224, 224, 3, 2, 0)},
      {"conv/mbv2_3x3s2_3-32_224", convShape(3, 32, 1, 224, 224, 3, 2, 1)},
  };
  for (const C& c : convs) {
    const ConvShape s = c.s;
    reg(c.name, [s](benchmark::State& st) { benchConv(st, s); });
  }
  for (const C& c : convs) {  // the same layers in int8-affine
    const ConvShape s = c.s;
    reg(std::string("qconv/") + (c.name + 5), [s](benchmark::State& st) { benchQConv(st, s); });
  }
  // Layers whose activations are megabytes, from cold memory (see benchConv).
  for (const char* name : {"conv/squeezenet_3x3s2_3-64_224", "conv/mbv2_3x3s2_3-32_224", "conv/resnet50_7x7s2_3-64_224",
                           "conv/tinyyolo_3x3_3-16_416", "conv/mbv2_1x1_16-96_112", "conv/mbv2_1x1_144-24_56",
                           "conv/mbv2_1x1_32-16_112", "conv/mbv2_1x1_960-320_7",
                           "conv/resnet50_1x1_64-256_56", "conv/resnet50_1x1_256-64_56",
                           "conv/squeezenet_3x3_16-64_55", "conv/squeezenet_1x1_128-16_55",
                           "conv/googlenet_1x1_64-64_56", "conv/resnet50_3x3_64-64_56", "conv/resnet50_3x3_256-256_14",
                           "conv/resnet50_3x3_512-512_7"}) {
    for (const C& c : convs) {
      if (std::string(c.name) != name) continue;
      const ConvShape s = c.s;
      reg(std::string("conv_cold/") + (c.name + 5), [s](benchmark::State& st) { benchConv(st, s, true); });
    }
  }
  // Channel-blocked input and output where the layer has those forms (Layout::kBlocked8; what the engine's chains
  // give it, Engine::blockChannels): against the same rows of conv/. Registered where this CPU has the forms.
  for (const C& c : convs) {
    const ConvShape s = c.s;
    const BlockedForms f = blockedForms(s);
    if (!f.in && !f.out) continue;
    const Layouts l{.x = f.in ? Layout::kBlocked8 : Layout::kPlanes, .y = f.out ? Layout::kBlocked8 : Layout::kPlanes};
    reg(std::string("conv_blocked/") + (c.name + 5), [s, l](benchmark::State& st) { benchConv(st, s, false, l); });
  }
  for (bool int8 : {false, true}) {
    const std::string kind = int8 ? "qmatmul/" : "matmul/";
    reg(kind + "vit_scores_12x197x64x197", [int8](benchmark::State& st) { benchMatMul(st, 12, 197, 64, 197, int8); });
    reg(kind + "vit_context_12x197x197x64", [int8](benchmark::State& st) { benchMatMul(st, 12, 197, 197, 64, int8); });
  }
  reg("chain/mbv2_64-384-64_14", [](benchmark::State& st) { benchChain(st, 64, 384, 14); });
  reg("chain/mbv2_32-192-32_28", [](benchmark::State& st) { benchChain(st, 32, 192, 28); });
  reg("chain/mbv2_24-144-24_56", [](benchmark::State& st) { benchChain(st, 24, 144, 56); });
  reg("conv_transpose/4x4s2_64-32_28", benchConvTranspose);
  struct P {
    const char* name;
    int64_t planes, ih, iw, oh, ow, k, stride, pad, pad_end;
  };
  // pad: the top and left pads; pad_end: the bottom and right ones.
  for (const P& p : {P{"googlenet_maxpool1_3x3s2_64x112", 64, 112, 112, 56, 56, 3, 2, 0, 0},
                     P{"googlenet_branch4_3x3s1p1_192x28", 192, 28, 28, 28, 28, 3, 1, 1, 1},
                     P{"googlenet_branch4_3x3s1p1_512x14", 512, 14, 14, 14, 14, 3, 1, 1, 1},
                     P{"googlenet_maxpool4_2x2s2_832x14", 832, 14, 14, 7, 7, 2, 2, 0, 0},
                     P{"squeezenet_3x3s2_64x111", 64, 111, 111, 55, 55, 3, 2, 0, 0},
                     P{"tinyyolo_2x2s2_16x416", 16, 416, 416, 208, 208, 2, 2, 0, 0},
                     P{"tinyyolo_2x2s1_512x13", 512, 13, 13, 13, 13, 2, 1, 0, 1},
                     P{"resnet50_3x3s2p1_64x112", 64, 112, 112, 56, 56, 3, 2, 1, 1},
                     P{"googlenet_branch4_3x3s1p1_832x7", 832, 7, 7, 7, 7, 3, 1, 1, 1}}) {
    Pool2dShape s;
    s.planes = p.planes, s.ih = p.ih, s.iw = p.iw, s.oh = p.oh, s.ow = p.ow, s.kh = s.kw = p.k;
    s.sh = s.sw = p.stride, s.pt = s.pl = p.pad, s.pb = s.pr = p.pad_end;
    for (bool fast : {false, true})
      reg(std::string("maxpool/") + p.name + (fast ? "/fast" : "/ref"),
          [s, fast](benchmark::State& st) { benchPool(st, s, true, fast); });
    for (bool fast : {false, true})  // the same windows over int8 codes
      reg(std::string("qmaxpool/") + p.name + (fast ? "/fast" : "/ref"),
          [s, fast](benchmark::State& st) { benchPoolI8(st, s, fast); });
  }
  benchmark::RegisterBenchmark("peak/fma_avx2", [](benchmark::State& st) { benchPeak(st, false); })->UseRealTime();
  benchmark::RegisterBenchmark("peak/vpmaddwd_avx2", [](benchmark::State& st) { benchPeak(st, true); })->UseRealTime();
  reg("net/resnet50_all_convs", [](benchmark::State& st) { benchNet(st, resnet50Convs(), false); });
  reg("net/mobilenet_v2_all_convs", [](benchmark::State& st) { benchNet(st, mobilenetV2Convs(), false); });
  reg("net/mobilenet_v2_depthwise_convs", [](benchmark::State& st) { benchNet(st, mobilenetV2Convs(), true); });
}

}  // namespace

int main(int argc, char** argv) {
  // NPUC_KERNEL_ISA=avx512|avx2|portable caps the kernel ISA (to compare variants on one machine).
  if (const char* isa = std::getenv("NPUC_KERNEL_ISA")) forceKernelIsa(isa);
  // NPUC_GEMM_KC / _MC / _NC override the cache blocking (tuning experiments).
  GemmBlocking blk;
  if (const char* v = std::getenv("NPUC_GEMM_KC")) blk.kc = std::atoll(v);
  if (const char* v = std::getenv("NPUC_GEMM_MC")) blk.mc = std::atoll(v);
  if (const char* v = std::getenv("NPUC_GEMM_NC")) blk.nc = std::atoll(v);
  setGemmBlocking(blk);
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
