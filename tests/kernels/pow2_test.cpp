// The int8-pow2 reference (kernels/pow2.hpp) against oracles written another way: requantization checked by the
// inequality that defines a floor, convolution sums by the float reference convolution (exact on small integers),
// the range history by the guide's formula computed by hand.
#include "kernels/pow2.hpp"
#include "support/thread_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

namespace npuc::kernels::pow2 {
namespace {

/// The k with k <= acc * 2^a / S + R / 100 < k + 1, found by checking the inequality in exact integers.
int64_t floorOracle(int64_t acc, int a, int64_t S, int R) {
  __int128 v = acc, d = S;  // value = v / d
  if (a >= 0) v <<= a;
  else d <<= -a;
  // k <= v/d + R/100  <=>  100 k d <= 100 v + R d
  __int128 k = v / d - 2;
  while (100 * (k + 1) * d <= 100 * v + R * d) ++k;
  return static_cast<int64_t>(k);
}

TEST(Pow2, RequantIsTheFloorOfTheScaledValuePlusRoundAdd) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> accd(-(int64_t{1} << 30), int64_t{1} << 30);
  for (int R : {0, 25, 50, 99, 100})
    for (int a : {-20, -9, -3, -1, 0, 1, 2, 5})
      for (int64_t S : {1, 3, 49})
        for (int i = 0; i < 300; ++i) {
          int64_t acc = i < 40 ? i - 20 : accd(rng) >> (i % 24);
          for (bool sg : {true, false}) {
            const int64_t k = floorOracle(acc, a, S, R);
            const int64_t want = std::clamp<int64_t>(k, codeMin(sg), codeMax(sg));
            ASSERT_EQ(requant(acc, a, S, R, sg), want) << "acc " << acc << " a " << a << " S " << S << " R " << R;
          }
        }
  // The exact ties: R = 50 rounds half up, R = 0 floors, R = 100 adds one.
  EXPECT_EQ(requant(3, -1, 1, 50, true), 2);   // 1.5 -> 2
  EXPECT_EQ(requant(-3, -1, 1, 50, true), -1); // -1.5 -> -1
  EXPECT_EQ(requant(3, -1, 1, 0, true), 1);
  EXPECT_EQ(requant(4, -1, 1, 100, true), 3);
  EXPECT_EQ(requant(1000, 0, 1, 50, true), 127);
  EXPECT_EQ(requant(-5, 0, 1, 50, false), 0);
}

TEST(Pow2, BiasIsBroughtToTheAccumulatorScale) {
  EXPECT_EQ(biasAt(5, 3, 6, 50), 40);       // 5 * 2^3
  EXPECT_EQ(biasAt(5, 3, 2, 50), 3);        // 2.5 -> 3 (R = 50)
  EXPECT_EQ(biasAt(5, 3, 2, 0), 2);         // floor
  EXPECT_EQ(biasAt(-5, 3, 2, 50), -2);      // -2.5 + 0.5 -> -2
}

TEST(Pow2, QIsTheLargestThatKeepsTheRangeInCodes) {
  EXPECT_EQ(qForRange(-1.0, 1.0, true, 0), 6);    // 1 * 64 = 64 <= 127, 128 > 127
  EXPECT_EQ(qForRange(0.0, 1.0, false, 0), 7);    // 128 <= 255
  EXPECT_EQ(qForRange(0.0, 2.0, false, 0), 6);
  EXPECT_EQ(qForRange(-3.0, 0.5, false, 0), 8);   // unsigned: only the positive end counts (0.5 * 256 > 255)
  EXPECT_EQ(qForRange(0.0, 1.0, false, 100), 6);  // a 100 % margin doubles the range
  EXPECT_EQ(qForRange(0, 0, true, 0), kMaxQ);
  EXPECT_EQ(qForRange(-1e30, 1e30, true, 0), kMinQ);
  for (int q = -10; q <= 10; ++q) {  // a range exactly at the limit keeps its q
    const double m = std::ldexp(127.0, -q);
    EXPECT_EQ(qForRange(-m, m, true, 0), q);
    EXPECT_EQ(qForRange(-std::nextafter(m, 1e9), m, true, 0), q - 1);
  }
}

TEST(Pow2, TheRangeHistoryFollowsTheGuidesWeights) {
  Options o;
  o.history1 = 20;
  o.history2 = 5;
  o.boot_frames = 2;
  OutSpec spec;
  spec.slot = 0;
  spec.is_signed = true;
  spec.init_lo = -4;
  spec.init_hi = 4;
  Slot s = makeSlot(spec, o);
  EXPECT_EQ(s.q, 4);  // 4 * 16 = 64, 4 * 32 = 128 > 127
  double lo = -4, hi = 4;
  const double frames[][2] = {{-1, 1}, {-2, 0.5}, {-10, 3}, {-1, 1}};
  for (int n = 0; n < 4; ++n) {
    const double w = n < 2 ? 20 : 5;
    lo = (w * lo + (100 - w) * frames[n][0]) / 100;
    hi = (w * hi + (100 - w) * frames[n][1]) / 100;
    EXPECT_EQ(updateSlot(s, frames[n][0], frames[n][1], o), qForRange(lo, hi, true, 0)) << "frame " << n;
    EXPECT_EQ(s.lo, lo);
    EXPECT_EQ(s.hi, hi);
  }
  // History weights 0: each frame by its own range (the guide's setting for the import's results).
  o.history1 = o.history2 = 0;
  Slot z = makeSlot(spec, o);
  EXPECT_EQ(updateSlot(z, -0.3, 0.2, o), qForRange(-0.3, 0.2, true, 0));
  // Frozen: the calibrated q forever.
  o.dynamic = false;
  Slot f = makeSlot(spec, o);
  EXPECT_EQ(updateSlot(f, -100, 100, o), 4);
  // A fixed q (inQuantFactor) never moves, dynamic or not.
  o.dynamic = true;
  spec.fixed_q = 3;
  Slot x = makeSlot(spec, o);
  EXPECT_EQ(updateSlot(x, -100, 100, o), 3);
}

TEST(Pow2, ConvolutionSumsAreTheFloatConvolutionsOnTheCodes) {
  std::mt19937 rng(3);
  struct Case {
    int64_t N, C, M, G, H, W, k, st, dil, pad;
  };
  const Case cases[] = {{1, 3, 4, 1, 7, 6, 3, 1, 1, 1}, {2, 4, 4, 4, 5, 5, 3, 2, 1, 1}, {1, 6, 4, 2, 6, 7, 2, 1, 2, 0},
                        {1, 5, 3, 1, 4, 4, 1, 1, 1, 0}, {1, 2, 2, 1, 9, 3, 5, 2, 1, 2}};
  for (const Case& c : cases)
    for (bool sg : {true, false}) {
      ConvShape s;
      s.batch = c.N;
      s.in_channels = c.C;
      s.out_channels = c.M;
      s.groups = c.G;
      s.in_spatial = {c.H, c.W};
      s.kernel = {c.k, c.k};
      s.stride = {c.st, c.st};
      s.dilation = {c.dil, c.dil};
      s.pad_begin = {c.pad, c.pad};
      for (int d = 0; d < 2; ++d)
        s.out_spatial.push_back((s.in_spatial[d] + 2 * c.pad - c.dil * (c.k - 1) - 1) / c.st + 1);
      const int64_t nx = c.N * c.C * c.H * c.W, nw = c.M * (c.C / c.G) * c.k * c.k;
      const int64_t ny = c.N * c.M * s.out_spatial[0] * s.out_spatial[1];
      std::vector<uint8_t> x(static_cast<size_t>(nx));
      std::vector<int16_t> w(static_cast<size_t>(nw));
      std::vector<int32_t> b(static_cast<size_t>(c.M));
      std::vector<float> xf(x.size()), wf(w.size()), bf(b.size());
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<uint8_t>(rng());
        xf[i] = static_cast<float>(codeAt(x.data(), static_cast<int64_t>(i), sg));
      }
      for (size_t i = 0; i < w.size(); ++i) wf[i] = w[i] = static_cast<int16_t>(static_cast<int>(rng() % 1023) - 511);
      for (size_t i = 0; i < b.size(); ++i) bf[i] = static_cast<float>(b[i] = static_cast<int32_t>(rng() % 2001) - 1000);
      std::vector<float> ref(static_cast<size_t>(ny));
      // Bias at qb = qacc: added as it is.
      conv_ref(s, xf.data(), wf.data(), bf.data(), Activation{}, ref.data());
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<int64_t> acc(static_cast<size_t>(ny));
        convAcc(s, Codes{x.data(), sg, 5}, w.data(), 3, b.data(), 8, 50, acc.data(), &pool);
        for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(static_cast<double>(acc[i]), static_cast<double>(ref[i])) << i;
      }
    }
}

// The int8-pow2 deconvolution scatters each code through its window; the float reference gathers (kernels/conv.hpp):
// on small integers both are exact, so the sums must be equal — groups, strides, dilations, pads and output padding.
TEST(Pow2, TransposedConvolutionSumsAreTheFloatReferencesOnTheCodes) {
  std::mt19937 rng(4);
  struct Case {
    int64_t N, C, M, G, H, W, k, st, dil, pad, extra;  // extra: output padding (rows and columns past the last window)
  };
  const Case cases[] = {{1, 4, 4, 4, 5, 4, 4, 2, 1, 1, 0}, {2, 3, 4, 1, 4, 5, 3, 1, 1, 1, 0}, {1, 4, 6, 2, 3, 3, 3, 2, 2, 0, 1},
                        {1, 2, 2, 2, 6, 2, 2, 3, 1, 0, 2}, {1, 1, 3, 1, 1, 1, 5, 2, 1, 2, 0}};
  for (const Case& c : cases)
    for (bool sg : {true, false}) {
      ConvTransposeShape s;
      s.batch = c.N;
      s.in_channels = c.C;
      s.out_channels = c.M;
      s.groups = c.G;
      s.in_spatial = {c.H, c.W};
      s.kernel = {c.k, c.k};
      s.stride = {c.st, c.st};
      s.dilation = {c.dil, c.dil};
      s.pad_begin = {c.pad, c.pad};
      for (int d = 0; d < 2; ++d) s.out_spatial.push_back((s.in_spatial[d] - 1) * c.st + c.dil * (c.k - 1) + 1 - 2 * c.pad + c.extra);
      const int64_t nx = c.N * c.C * c.H * c.W, nw = c.C * (c.M / c.G) * c.k * c.k;
      const int64_t ny = c.N * c.M * s.out_spatial[0] * s.out_spatial[1];
      std::vector<uint8_t> x(static_cast<size_t>(nx));
      std::vector<int16_t> w(static_cast<size_t>(nw));
      std::vector<int32_t> b(static_cast<size_t>(c.M));
      std::vector<float> xf(x.size()), wf(w.size()), bf(b.size()), ref(static_cast<size_t>(ny));
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<uint8_t>(rng());
        xf[i] = static_cast<float>(codeAt(x.data(), static_cast<int64_t>(i), sg));
      }
      for (size_t i = 0; i < w.size(); ++i) wf[i] = w[i] = static_cast<int16_t>(static_cast<int>(rng() % 1023) - 511);
      for (size_t i = 0; i < b.size(); ++i) bf[i] = static_cast<float>(b[i] = static_cast<int32_t>(rng() % 2001) - 1000);
      conv_transpose_ref(s, xf.data(), wf.data(), bf.data(), ref.data());
      std::vector<int64_t> acc(static_cast<size_t>(ny), -7);
      convTransposeAcc(s, Codes{x.data(), sg, 5}, w.data(), 3, b.data(), 8, 50, acc.data());  // (bias at qb = qacc)
      for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(static_cast<double>(acc[i]), static_cast<double>(ref[i])) << i;
    }
}

// The int8-pow2 resize: integer tap weights at 2^-10 per axis. Where the float weights are multiples of 2^-10 (a 2x
// half_pixel bilinear: 1/4, 3/4) the sums are the float resize's exactly; elsewhere (3x asymmetric, cubic) within
// the weights' rounding (half a step per axis and tap).
TEST(Pow2, ResizeSumsAreTheFloatResizeWithIntegerWeights) {
  std::mt19937 rng(21);
  const std::vector<int64_t> xs = {1, 3, 5, 4};
  std::vector<uint8_t> x(60);
  std::vector<float> xf(60);
  for (size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(static_cast<int8_t>(x[i] = static_cast<uint8_t>(rng())));
  struct Case {
    ResizeInterp interp;
    ResizeCoord coord;
    double sh, sw;
    bool exact;
  };
  for (const Case& c : {Case{ResizeInterp::kLinear, ResizeCoord::kHalfPixel, 2, 2, true},
                        Case{ResizeInterp::kLinear, ResizeCoord::kAsymmetric, 3, 1.5, false},
                        Case{ResizeInterp::kCubic, ResizeCoord::kHalfPixel, 2, 2, false},
                        Case{ResizeInterp::kLinear, ResizeCoord::kAlignCorners, 0.6, 0.5, false}}) {
    ResizeSpec s;
    s.interp = c.interp;
    s.coord = c.coord;
    s.scale = {1, 1, c.sh, c.sw};
    s.roi_start = {0, 0, 0, 0};
    s.roi_end = {1, 1, 1, 1};
    const std::vector<int64_t> ys = {1, 3, static_cast<int64_t>(std::floor(5 * c.sh)), static_cast<int64_t>(std::floor(4 * c.sw))};
    std::vector<float> ref(static_cast<size_t>(ys[2] * ys[3] * 3));
    resize(s, xs, ys, xf.data(), ref.data(), nullptr);
    std::vector<int64_t> acc(ref.size());
    resizeAcc(resizeTaps(s, xs, ys), xs, ys, Codes{x.data(), true, 0}, acc.data());
    for (size_t i = 0; i < acc.size(); ++i) {
      const double got = std::ldexp(static_cast<double>(acc[i]), -4 * kResizeF);
      if (c.exact) ASSERT_EQ(got, static_cast<double>(ref[i])) << i;
      else ASSERT_NEAR(got, ref[i], 16 * 128 * std::ldexp(1.0, -kResizeF)) << i;  // (16 taps of 128 at most)
    }
  }
}

/// A random 2-D convolution for the fast paths' tests (groups, depthwise, kernels up to 5, strides up to 3, dilations,
/// pads), channels scaled by `wide` (1: a few; larger: several blocks of the VNNI form's 4 channels x 64 outputs, and
/// its shared-im2col split); nullopt where the draw leaves no output.
std::optional<ConvShape> randomConv(std::mt19937& rng, int iter, int64_t wide) {
  auto r = [&](int lo, int hi) { return static_cast<int64_t>(lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1))); };
  ConvShape s;
  s.batch = r(1, 2);
  s.groups = iter % 4 == 0 ? r(2, 3) : 1;
  const bool dw = iter % 5 == 0;
  s.in_channels = s.groups * (dw ? 1 : r(1, 4) * wide);
  if (dw) s.groups = s.in_channels = r(2, 6) * wide;
  s.out_channels = s.groups * (dw ? 1 : r(1, 3) * wide);
  const int64_t k = r(1, 5), st = r(1, 3), dil = r(1, 2), pad = r(0, 2);
  s.in_spatial = {r(k * dil, 12 + 2 * wide), r(k * dil, 13 + 3 * wide)};
  s.kernel = {k, iter % 3 ? k : r(1, 3)};
  s.stride = {st, iter % 2 ? st : r(1, 2)};
  s.dilation = {dil, dil};
  s.pad_begin = {pad, r(0, 2)};
  for (int d = 0; d < 2; ++d)
    s.out_spatial.push_back((s.in_spatial[d] + s.pad_begin[d] + r(0, 1) - s.dilation[d] * (s.kernel[d] - 1) - 1) / s.stride[d] + 1);
  if (s.out_spatial[0] < 1 || s.out_spatial[1] < 1) return std::nullopt;
  return s;
}

/// Random codes, weights of at most `wmax` in magnitude (a third of them 0) and biases for a convolution.
struct ConvData {
  std::vector<uint8_t> x;
  std::vector<int16_t> w;
  std::vector<int32_t> b;
  ConvData(const ConvShape& s, std::mt19937& rng, int wmax, int bmax) {
    x.resize(static_cast<size_t>(s.batch * s.in_channels * s.in_spatial[0] * s.in_spatial[1]));
    w.resize(static_cast<size_t>(s.out_channels * (s.in_channels / s.groups) * s.kernel[0] * s.kernel[1]));
    b.resize(static_cast<size_t>(s.out_channels));
    for (auto& v : x) v = static_cast<uint8_t>(rng());
    for (auto& v : w) v = static_cast<int16_t>(rng() % 3 == 0 ? 0 : static_cast<int>(rng() % (2 * wmax + 1)) - wmax);
    for (auto& v : b) v = static_cast<int32_t>(static_cast<int64_t>(rng() % (2 * static_cast<uint64_t>(bmax) + 1)) - bmax);
  }
};

int64_t outputsOf(const ConvShape& s) { return s.batch * s.out_channels * s.out_spatial[0] * s.out_spatial[1]; }

TEST(Pow2, FastSumsAreTheReferencesAtEveryThreadCount) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 60; ++iter) {
    const auto shape = randomConv(rng, iter, 1);
    if (!shape) continue;
    const ConvShape& s = *shape;
    const ConvData d(s, rng, iter % 7 == 0 ? 2047 : 127, 100000);
    const bool sg = iter % 2;
    std::vector<int64_t> ref(static_cast<size_t>(outputsOf(s))), fast(ref.size());
    convAcc(s, Codes{d.x.data(), sg, 3}, d.w.data(), 6, d.b.data(), 7, 50, ref.data(), nullptr);
    for (Pow2Path path : {Pow2Path::kBaseline, Pow2Path::kAvx2}) {
      if (!cpuHasPow2Path(path)) continue;  // (every path this CPU has)
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::fill(fast.begin(), fast.end(), -1);
        convAccFast(s, Codes{d.x.data(), sg, 3}, d.w.data(), 6, d.b.data(), 7, 50, fast.data(), &pool, path);
        ASSERT_EQ(fast, ref) << "case " << iter << " threads " << threads << " path " << static_cast<int>(path);
      }
    }
  }
}

// Fast mode's conv layer (convFinishFast: on AVX-512 VNNI, int32 sums over byte quads and finishI32Avx512) gives the
// reference's codes, q and slot history (convAcc, then finish) over a sequence of frames, at 1 to 3 threads: signed
// and unsigned codes, each activation, 8-bit weights (the VNNI form) and 12-bit ones (the fallback), small and
// large biases (a bias with no room in int32 falls back too), dynamic and frozen ranges.
TEST(Pow2, FastLayersAreTheReferencesCodesAndSlots) {
  std::mt19937 rng(23);
  int vnni_layers = 0;
  for (int iter = 0; iter < 48; ++iter) {
    const auto shape = randomConv(rng, iter, iter % 3 == 0 ? 1 : 8);
    if (!shape) continue;
    const ConvShape& s = *shape;
    const ConvData d(s, rng, iter % 11 == 0 ? 2047 : iter % 2 ? 127 : 128, iter % 13 == 0 ? 2000000000 : 100000);
    const PackedWeights packed = packWeights(s, d.w.data());
    vnni_layers += packed.vnni;
    Options opt;
    opt.dynamic = iter % 5 != 0;
    OutSpec spec;
    spec.slot = 0;
    spec.is_signed = iter % 4 < 2;
    spec.act = static_cast<Act>(iter % 3);
    spec.clip_lo = -0.5f, spec.clip_hi = 6.0f;
    spec.init_lo = -1.0f, spec.init_hi = 4.0f;
    const int64_t n = outputsOf(s);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      Slot ref_slot = makeSlot(spec, opt), fast_slot = ref_slot;
      std::vector<int64_t> acc(static_cast<size_t>(n)), acc64;
      std::vector<int32_t> acc32;
      std::vector<uint8_t> ref(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      for (int frame = 0; frame < 3; ++frame) {  // (the same input three frames running: the history moves the q)
        const Codes x{d.x.data(), iter % 2 == 0, 2 + frame};
        convAcc(s, x, d.w.data(), 6, d.b.data(), 9, 50, acc.data(), nullptr);
        const int ref_q = finish(acc.data(), n, x.q + 6, 1, spec, ref_slot, opt, ref.data());
        std::fill(got.begin(), got.end(), uint8_t{0x5a});
        const int q = convFinishFast(s, x, d.w.data(), packed, 6, d.b.data(), 9, spec, fast_slot, opt, got.data(), acc64, acc32, &pool);
        ASSERT_EQ(q, ref_q) << "case " << iter << " frame " << frame << " threads " << threads;
        ASSERT_EQ(got, ref) << "case " << iter << " frame " << frame << " threads " << threads;
        ASSERT_EQ(fast_slot.lo, ref_slot.lo);
        ASSERT_EQ(fast_slot.hi, ref_slot.hi);
      }
    }
  }
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")) {
    EXPECT_GT(vnni_layers, 20);  // (the VNNI form was tested, where the CPU has it)
  }
}

// Fast mode's quantize / dequantize layers (AVX-512, where the CPU has it) give the reference's codes, q and floats:
// ties of the rounding, NaN, the infinities, values far past the code range, both signednesses, several round_add.
TEST(Pow2, FastQuantizeAndDequantizeAreTheReferences) {
  if (!fast::cpuHasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (int iter = 0; iter < 40; ++iter) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 300);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) {
      const unsigned kind = rng() % 16;
      v = kind == 0   ? std::nanf("")
          : kind == 1 ? (rng() % 2 ? 1 : -1) * std::numeric_limits<float>::infinity()
          : kind == 2 ? std::ldexp(static_cast<float>(static_cast<int>(rng() % 64) - 32) + 0.5f, -3)  // ties at q 3
          : kind == 3 ? u(rng) * 1e6f
                      : u(rng);
    }
    Options opt;
    opt.round_add = iter % 3 == 0 ? 50 : iter % 3 == 1 ? 33 : 0;
    opt.dynamic = iter % 4 != 0;
    OutSpec spec;
    spec.slot = 0;
    spec.is_signed = iter % 2;
    spec.init_lo = -2, spec.init_hi = 2;
    Slot a = makeSlot(spec, opt), b = a;
    std::vector<uint8_t> ref(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    for (int frame = 0; frame < 2; ++frame) {
      ASSERT_EQ(fast::quantizeAvx512(x.data(), n, spec, b, opt, got.data()), quantize(x.data(), n, spec, a, opt, ref.data())) << iter;
      ASSERT_EQ(got, ref) << iter;
      ASSERT_EQ(a.lo, b.lo);
      ASSERT_EQ(a.hi, b.hi);
    }
    for (int q : {-24, -3, 0, 7, 24}) {
      std::vector<float> fr(static_cast<size_t>(n)), fg(static_cast<size_t>(n));
      dequantize(Codes{ref.data(), spec.is_signed, q}, n, fr.data());
      fast::dequantizeAvx512(Codes{ref.data(), spec.is_signed, q}, n, fg.data());
      ASSERT_EQ(0, std::memcmp(fr.data(), fg.data(), fr.size() * sizeof(float))) << iter << " q " << q;
    }
  }
}

// concat is what the float layer between conversions computes (dequantize each input, concatenate, quantize: exact in
// double where quantRoundAdd / 100 is, 0 and 50 here), and concatFast is concat: 2 to 4 inputs of either signedness at
// q's up to 30 apart (past 23 the fast form falls back), along each axis of a [2, 3, 5] tensor, over frames, dynamic
// and frozen.
TEST(Pow2, ConcatIsTheFloatIslandAndTheFastFormIsConcat) {
  std::mt19937 rng(37);
  for (int iter = 0; iter < 60; ++iter) {
    const int k_in = 2 + iter % 3;
    const int64_t axis = iter % 3, outer = axis == 0 ? 1 : axis == 1 ? 2 : 6, inner = axis == 0 ? 15 : axis == 1 ? 5 : 1;
    std::vector<std::vector<uint8_t>> data(static_cast<size_t>(k_in));
    std::vector<Codes> ins;
    std::vector<int64_t> chunks;
    const int q0 = static_cast<int>(rng() % 20) - 10;
    for (int k = 0; k < k_in; ++k) {
      const int64_t extent = 1 + static_cast<int64_t>(rng() % 3);  // (along the axis)
      data[static_cast<size_t>(k)].resize(static_cast<size_t>(outer * extent * inner));
      for (auto& v : data[static_cast<size_t>(k)]) v = static_cast<uint8_t>(rng());
      const int q = std::clamp(q0 + static_cast<int>(rng() % 31) * (k % 2 ? 1 : -1) / (iter % 4 ? 4 : 1), kMinQ, kMaxQ);
      ins.push_back(Codes{data[static_cast<size_t>(k)].data(), (iter + k) % 3 != 0, q});
      chunks.push_back(extent * inner);
    }
    int64_t n = 0;
    for (int64_t c : chunks) n += outer * c;
    Options opt;
    opt.dynamic = iter % 4 != 0;
    opt.round_add = iter % 2 ? 50 : 0;
    OutSpec spec;
    spec.slot = 0;
    spec.is_signed = iter % 5 != 0;
    spec.init_lo = -2, spec.init_hi = 2;
    Slot rs = makeSlot(spec, opt), fs = rs, is = rs;
    std::vector<int64_t> scratch, scratch64;
    std::vector<int32_t> scratch32;
    for (int frame = 0; frame < 3; ++frame) {
      std::vector<uint8_t> ref(static_cast<size_t>(n)), got(ref.size()), island(ref.size());
      const int qy = concat(ins, chunks, outer, spec, rs, opt, ref.data(), scratch);
      ASSERT_EQ(concatFast(ins, chunks, outer, spec, fs, opt, got.data(), scratch64, scratch32), qy) << iter;
      ASSERT_EQ(got, ref) << iter << " frame " << frame;
      // The float island: each input dequantized, the floats concatenated, quantized.
      std::vector<float> f;
      for (int64_t i = 0; i < outer; ++i)
        for (size_t k = 0; k < ins.size(); ++k) {
          std::vector<float> part(static_cast<size_t>(chunks[k]));
          dequantize(Codes{ins[k].p + i * chunks[k], ins[k].is_signed, ins[k].q}, chunks[k], part.data());
          f.insert(f.end(), part.begin(), part.end());
        }
      ASSERT_EQ(quantize(f.data(), n, spec, is, opt, island.data()), qy) << iter;
      ASSERT_EQ(island, ref) << iter << " frame " << frame;
      ASSERT_EQ(rs.lo, fs.lo);
      ASSERT_EQ(rs.hi, is.hi);
      for (auto& d : data)
        for (auto& v : d) v = static_cast<uint8_t>(v + rng() % 7);  // (the next frame's codes)
    }
  }
}

// Average pooling's int8-pow2 form: one divisor for every window (AveragePool's count rule) or none, and each code the
// requantization of the exact window sum (taps in the padding add nothing) by that divisor at the returned q.
TEST(Pow2, AvgPoolDividesEachWindowSumByTheCommonCount) {
  auto shape = [](int64_t in, int64_t k, int64_t st, int64_t pad, int64_t pad_end, bool inc) {
    Pool2dShape s;
    s.planes = 3, s.ih = s.iw = in, s.kh = s.kw = k, s.sh = s.sw = st, s.pt = s.pl = pad, s.pb = s.pr = pad_end;
    s.oh = s.ow = (in + pad + pad_end - k) / st + 1;
    s.count_include_pad = inc;
    return s;
  };
  EXPECT_EQ(avgPoolDivisor(shape(7, 3, 1, 1, 1, true)), 9);   // padding counted: every window 3 x 3
  EXPECT_EQ(avgPoolDivisor(shape(7, 3, 1, 1, 1, false)), 0);  // not counted: 4, 6 and 9 taps
  EXPECT_EQ(avgPoolDivisor(shape(8, 2, 2, 0, 0, false)), 4);  // no padding
  EXPECT_EQ(avgPoolDivisor(shape(7, 2, 2, 0, 1, true)), 4);   // the end padding counted: the last window too
  Pool2dShape ceil = shape(6, 3, 2, 0, 0, true);
  ceil.oh = ceil.ow = 3;  // (ceil_mode: the last window reaches past the input and its padding, 2 taps of 3 count)
  EXPECT_EQ(avgPoolDivisor(ceil), 0);
  std::mt19937 rng(41);
  for (int iter = 0; iter < 12; ++iter) {
    const Pool2dShape s = iter % 2 ? shape(9, 3, 1 + iter % 3, 1, 1, true) : shape(10, 2, 2, 0, 0, iter % 4 == 0);
    const int64_t S = avgPoolDivisor(s);
    ASSERT_GT(S, 0);
    std::vector<uint8_t> x(static_cast<size_t>(s.planes * s.ih * s.iw));
    for (auto& v : x) v = static_cast<uint8_t>(rng());
    const Codes c{x.data(), iter % 3 != 0, static_cast<int>(rng() % 9) - 4};
    Options opt;
    opt.round_add = iter % 3 == 0 ? 50 : iter % 3 == 1 ? 25 : 0;
    OutSpec spec;
    spec.slot = 0, spec.is_signed = c.is_signed, spec.init_lo = -1, spec.init_hi = 1;
    Slot slot = makeSlot(spec, opt);
    std::vector<uint8_t> y(static_cast<size_t>(s.planes * s.oh * s.ow));
    std::vector<int64_t> scratch;
    const int qy = avgPool(s, c, spec, slot, opt, y.data(), scratch);
    for (int64_t p = 0; p < s.planes; ++p)
      for (int64_t oy = 0; oy < s.oh; ++oy)
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          int64_t sum = 0;
          for (int64_t i = 0; i < s.kh; ++i)
            for (int64_t j = 0; j < s.kw; ++j) {
              const int64_t iy = oy * s.sh - s.pt + i, ix = ox * s.sw - s.pl + j;
              if (iy >= 0 && iy < s.ih && ix >= 0 && ix < s.iw) sum += codeAt(x.data(), (p * s.ih + iy) * s.iw + ix, c.is_signed);
            }
          const size_t at = static_cast<size_t>((p * s.oh + oy) * s.ow + ox);
          ASSERT_EQ(static_cast<int32_t>(y[at]) - (c.is_signed && y[at] > 127 ? 256 : 0), requant(sum, qy - c.q, S, opt.round_add, c.is_signed))
              << iter << " at " << at;
        }
  }
}

// Fast mode's addition (AVX-512, where the CPU has it) gives add's codes, q and slot: operands of either signedness
// at q's apart by 0 to 30 (past 22 the int32 lanes could overflow: add itself), each activation, over frames.
TEST(Pow2, FastAddIsTheReferences) {
  if (!fast::cpuHasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937 rng(31);
  for (int iter = 0; iter < 60; ++iter) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 400);
    std::vector<uint8_t> a(static_cast<size_t>(n)), b(a.size());
    for (auto& v : a) v = static_cast<uint8_t>(rng());
    for (auto& v : b) v = static_cast<uint8_t>(rng());
    const int qa = static_cast<int>(rng() % 20) - 10, qb = qa + static_cast<int>(rng() % 31) * (iter % 2 ? 1 : -1) / (iter % 3 ? 1 : 3);
    Options opt;
    opt.dynamic = iter % 4 != 0;
    OutSpec spec;
    spec.slot = 0;
    spec.is_signed = iter % 3 != 0;
    spec.act = static_cast<Act>(iter % 3);
    spec.clip_lo = -1.0f, spec.clip_hi = 3.0f;
    spec.init_lo = -2, spec.init_hi = 2;
    Slot rs = makeSlot(spec, opt), fs = rs;
    std::vector<int64_t> scratch, scratch64;
    std::vector<uint8_t> ref(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    for (int frame = 0; frame < 2; ++frame) {
      const Codes ca{a.data(), iter % 2 == 0, qa}, cb{b.data(), iter % 5 < 2, std::clamp(qb, kMinQ, kMaxQ)};
      const int q = add(ca, cb, n, spec, rs, opt, ref.data(), scratch);
      ASSERT_EQ(fast::addAvx512(ca, cb, n, spec, fs, opt, got.data(), scratch64), q) << iter;
      ASSERT_EQ(got, ref) << iter << " q " << qa << " " << qb;
      ASSERT_EQ(rs.lo, fs.lo);
      ASSERT_EQ(rs.hi, fs.hi);
    }
  }
}

// finish's codes are requant's of the activated accumulators for every shift, the hoisted right and left shifts
// included (qy fixed, qacc chosen so that qy - qacc runs from -70 to 45), every round_add, both signednesses, the fast
// form alike; accumulators from 0 to beyond 2^40.
TEST(Pow2, FinishIsRequantOfTheActivatedAccumulators) {
  std::mt19937_64 rng(37);
  for (int a = -70; a <= 45; ++a)
    for (int round_add : {0, 33, 50, 99, 100})
      for (int act = 0; act < 2; ++act) {
        OutSpec spec;
        spec.slot = 0;
        spec.is_signed = (a + round_add) % 2 != 0;
        spec.act = static_cast<Act>(act);
        spec.fixed_q = 3;  // qy = 3, so a = qy - qacc
        Options opt;
        opt.round_add = round_add;
        std::vector<int64_t> acc(97);
        for (size_t i = 0; i < acc.size(); ++i) {
          const int bits = static_cast<int>(rng() % 42);
          acc[i] = static_cast<int64_t>(rng() % (uint64_t{1} << bits)) * (rng() % 2 ? 1 : -1);
        }
        acc[0] = 0, acc[1] = 511, acc[2] = -512, acc[3] = 1;
        Slot slot = makeSlot(spec, opt);
        std::vector<uint8_t> y(acc.size());
        ASSERT_EQ(finish(acc.data(), static_cast<int64_t>(acc.size()), 3 - a, 1, spec, slot, opt, y.data()), 3);
        for (size_t i = 0; i < acc.size(); ++i) {
          const int64_t v = act == 1 ? std::max<int64_t>(acc[i], 0) : acc[i];
          ASSERT_EQ(y[i], static_cast<uint8_t>(requant(v, a, 1, round_add, spec.is_signed))) << "a " << a << " R " << round_add << " acc " << acc[i];
        }
        if (fast::cpuHasAvx512()) {  // the same on int32 accumulators through the vector form
          std::vector<int32_t> a32(acc.size());
          for (size_t i = 0; i < acc.size(); ++i) a32[i] = static_cast<int32_t>(std::clamp<int64_t>(acc[i], INT32_MIN, INT32_MAX));
          std::vector<int64_t> a64(a32.begin(), a32.end());
          std::vector<uint8_t> want(acc.size()), got(acc.size());
          Slot s1 = makeSlot(spec, opt), s2 = s1;
          finish(a64.data(), static_cast<int64_t>(a64.size()), 3 - a, 1, spec, s1, opt, want.data());
          fast::finishI32Avx512(a32.data(), static_cast<int64_t>(a32.size()), 3 - a, 1, spec, s2, opt, got.data());
          ASSERT_EQ(got, want) << "a " << a << " R " << round_add;
        }
      }
}

TEST(Pow2, FinishAppliesTheActivationThenTheFramesQ) {
  Options o;
  o.history1 = o.history2 = 0;  // this frame's own range
  OutSpec spec;
  spec.slot = 0;
  spec.is_signed = false;
  spec.act = Act::kRelu;
  spec.init_lo = 0;
  spec.init_hi = 1;
  Slot s = makeSlot(spec, o);
  // acc at 2^-4: reals -1, 0.5, 3.0, 2.0
  std::vector<int64_t> acc = {-16, 8, 48, 32};
  std::vector<uint8_t> y(4);
  const int qy = finish(acc.data(), 4, 4, 1, spec, s, o, y.data());
  EXPECT_EQ(qy, 6);  // 3 * 64 = 192 <= 255
  EXPECT_EQ(std::vector<int>(y.begin(), y.end()), (std::vector<int>{0, 32, 192, 128}));
  // A clip at [0, 2]: 3.0 becomes 2.0, the range [0, 2], q 6 (2 * 128 = 256 > 255 -> 6)
  spec.act = Act::kClip;
  spec.clip_lo = 0;
  spec.clip_hi = 2;
  Slot c = makeSlot(spec, o);
  EXPECT_EQ(finish(acc.data(), 4, 4, 1, spec, c, o, y.data()), 6);
  EXPECT_EQ(std::vector<int>(y.begin(), y.end()), (std::vector<int>{0, 32, 128, 128}));
}

TEST(Pow2, AClipNarrowerThanOneAccumulatorStepClampsToItsLowEnd) {
  // Clip(1, 6) on accumulators at 2^3 (qacc = -3): no accumulator value lies in [1/8, 6/8]; every output is the
  // first one above the low bound, 1 (= 8 in real units).
  Options o;
  o.history1 = o.history2 = 0;
  OutSpec spec;
  spec.slot = 0;
  spec.is_signed = false;
  spec.act = Act::kClip;
  spec.clip_lo = 1;
  spec.clip_hi = 6;
  Slot s = makeSlot(spec, o);
  std::vector<int64_t> acc = {-5, 0, 1, 7};
  std::vector<uint8_t> y(4);
  const int qy = finish(acc.data(), 4, -3, 1, spec, s, o, y.data());
  EXPECT_EQ(qy, 4);  // range [8, 8]: 8 * 16 = 128 <= 255, 8 * 32 > 255
  for (uint8_t v : y) EXPECT_EQ(v, 128);
}

TEST(Pow2, AddAlignsTheOperandsExactly) {
  Options o;
  o.history1 = o.history2 = 0;
  OutSpec spec;
  spec.slot = 0;
  Slot s = makeSlot(spec, o);
  std::vector<uint8_t> a = {10, 250}, b = {3, 1}, y(2);  // a signed at q 2: 2.5, -1.5; b unsigned at q 0: 3, 1
  std::vector<int64_t> scratch;
  const int qy = add(Codes{a.data(), true, 2}, Codes{b.data(), false, 0}, 2, spec, s, o, y.data(), scratch);
  EXPECT_EQ(qy, 4);  // range [-0.5, 5.5]: 5.5 * 16 = 88, * 32 = 176 > 127
  EXPECT_EQ(static_cast<int8_t>(y[0]), 88);
  EXPECT_EQ(static_cast<int8_t>(y[1]), -8);
}

TEST(Pow2, QuantizeAndDequantizeRoundTrip) {
  Options o;
  o.history1 = o.history2 = 0;
  OutSpec spec;
  spec.slot = 0;
  spec.is_signed = true;
  Slot s = makeSlot(spec, o);
  std::vector<float> x = {0.25f, -1.0f, 0.126f, std::nanf(""), 1.9f};
  std::vector<uint8_t> y(x.size());
  const int q = quantize(x.data(), 5, spec, s, o, y.data());
  EXPECT_EQ(q, 6);  // 1.9 * 64 = 121.6
  EXPECT_EQ(static_cast<int8_t>(y[0]), 16);
  EXPECT_EQ(static_cast<int8_t>(y[1]), -64);
  EXPECT_EQ(static_cast<int8_t>(y[2]), 8);  // 8.064 + 0.5 -> 8
  EXPECT_EQ(static_cast<int8_t>(y[3]), 0);
  EXPECT_EQ(static_cast<int8_t>(y[4]), 122);  // 121.6 + 0.5 -> 122
  std::vector<float> back(5);
  dequantize(Codes{y.data(), true, q}, 5, back.data());
  EXPECT_EQ(back[0], 0.25f);
  EXPECT_EQ(back[4], 122.0f / 64);
}

TEST(Pow2, TablesRoundTripAndBadOnesAreNamed) {
  Table t;
  t.in_slots = {3, 1};
  t.out.slot = 4;
  t.out.is_signed = false;
  t.out.act = Act::kClip;
  t.out.clip_lo = 0;
  t.out.clip_hi = 6;
  t.out.init_lo = 0;
  t.out.init_hi = 5.5f;
  t.qw = 7;
  t.qb = 12;
  auto w = encodeTable(t);
  Table u;
  ASSERT_EQ(decodeTable(w.data(), w.size(), &u), "");
  EXPECT_EQ(u.in_slots, t.in_slots);
  EXPECT_EQ(u.out.clip_hi, 6.0f);
  EXPECT_EQ(u.qb, 12);
  auto bad = w;
  bad[0] = 5;
  EXPECT_NE(decodeTable(bad.data(), bad.size(), &u), "");
  bad = w;
  bad.back() = 99;
  EXPECT_NE(decodeTable(bad.data(), bad.size(), &u).find("outside"), std::string::npos);
}

// Softmax as one byte per class: each byte is the probability's floor(p * 256 + 1/2) computed from the exp table at
// 2^-16 (so within one code of the float softmax of the values the codes stand for), the row of the largest code
// saturating at 255; rows along a middle axis read with their stride; a row of equal codes shares the mass evenly.
TEST(Pow2, SoftmaxIsOneBytePerClassOfTheValuesProbabilities) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> code(-128, 127);
  const int64_t outer = 2, len = 7, inner = 3;
  std::vector<uint8_t> x(outer * len * inner), y(x.size());
  for (uint8_t& v : x) v = static_cast<uint8_t>(code(rng));
  for (int q : {-2, 0, 3, 5, 9}) {
    softmax(Codes{x.data(), true, q}, outer, len, inner, 50, y.data());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < inner; ++k) {
        double sum = 0;
        for (int64_t i = 0; i < len; ++i) sum += std::exp(std::ldexp(static_cast<int8_t>(x[(o * len + i) * inner + k]), -q));
        for (int64_t i = 0; i < len; ++i) {
          const int64_t at = (o * len + i) * inner + k;
          const double p = std::exp(std::ldexp(static_cast<int8_t>(x[at]), -q)) / sum;
          EXPECT_NEAR(y[at], std::min(255.0, std::floor(p * 256 + 0.5)), 1.0) << "q " << q << " at " << at;
        }
      }
  }
  std::vector<uint8_t> sure = {0, 127, 0}, even = {200, 200, 200, 200}, out(4);  // (unsigned: 200 is 200 / 2^q)
  softmax(Codes{sure.data(), true, 0}, 1, 3, 1, 50, out.data());
  EXPECT_EQ(out[1], 255);  // p = 1 - 2e-55: saturated
  EXPECT_EQ(out[0], 0);
  softmax(Codes{even.data(), false, 1}, 1, 4, 1, 50, out.data());
  EXPECT_EQ(out, (std::vector<uint8_t>{64, 64, 64, 64}));
  softmax(Codes{even.data(), false, 1}, 1, 4, 1, 0, out.data());  // quantRoundAdd 0: floor, 64 exactly still
  EXPECT_EQ(out, (std::vector<uint8_t>{64, 64, 64, 64}));
}

}  // namespace
}  // namespace npuc::kernels::pow2
