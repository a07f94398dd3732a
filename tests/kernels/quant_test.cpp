// The int8-affine reference (kernels/quant.hpp) against oracles written here in wider arithmetic: the rounding
// of every primitive (ties included), the multiplier's precision, and the quantized product against exact rational
// arithmetic.
#include "kernels/layers.hpp"
#include "kernels/quant.hpp"
#include "kernels/x86/quant_x86.hpp"
#include "support/thread_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

namespace npuc::kernels {
namespace {

constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax = std::numeric_limits<int32_t>::max();

/// floor((a b + 2^30) / 2^31) in long double (64-bit mantissa: a b and the sum are exact, the division by a power
/// of two too).
int32_t srdhmOracle(int32_t a, int32_t b) {
  const long double p = static_cast<long double>(a) * static_cast<long double>(b);
  return static_cast<int32_t>(std::floor((p + 1073741824.0L) / 2147483648.0L));
}

TEST(QuantPrimitives, RoundingDoublingHighMulIsHalfUpWithOneSaturation) {
  EXPECT_EQ(roundingDoublingHighMul(kMin, kMin), kMax);  // the one overflow
  EXPECT_EQ(roundingDoublingHighMul(1, 1 << 30), 1);     // +0.5 -> 1
  EXPECT_EQ(roundingDoublingHighMul(-1, 1 << 30), 0);    // -0.5 -> 0 (toward +inf)
  EXPECT_EQ(roundingDoublingHighMul(3, 1 << 30), 2);     // 1.5 -> 2
  EXPECT_EQ(roundingDoublingHighMul(-3, 1 << 30), -1);   // -1.5 -> -1
  EXPECT_EQ(roundingDoublingHighMul(kMax, kMax), kMax - 1);
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> any(kMin, kMax);
  for (int i = 0; i < 200000; ++i) {
    const int32_t a = any(rng), b = i % 7 ? any(rng) : (1 << 30) + static_cast<int32_t>(i % 5) - 2;
    if (a == kMin && b == kMin) continue;
    ASSERT_EQ(roundingDoublingHighMul(a, b), srdhmOracle(a, b)) << a << " * " << b;
  }
}

TEST(QuantPrimitives, RoundingShiftRightIsHalfAwayFromZero) {
  EXPECT_EQ(roundingShiftRight(5, 1), 3);    // 2.5 -> 3
  EXPECT_EQ(roundingShiftRight(-5, 1), -3);  // -2.5 -> -3 (a half-up shift would give -2)
  EXPECT_EQ(roundingShiftRight(-4, 1), -2);
  EXPECT_EQ(roundingShiftRight(7, 0), 7);
  EXPECT_EQ(roundingShiftRight(kMin, 31), -1);
  EXPECT_EQ(roundingShiftRight(kMax, 31), 1);
  std::mt19937 rng(2);
  std::uniform_int_distribution<int32_t> any(kMin, kMax);
  for (int i = 0; i < 200000; ++i) {
    const int e = i % 32;
    // Every third value a tie: an odd multiple of 2^(e - 1) (in 64 bits, then clamped into int32).
    const int64_t half = e ? int64_t{1} << (e - 1) : 0;
    const int64_t tie = (static_cast<int64_t>(any(rng)) >> e) * (int64_t{1} << e) + half;
    const int32_t x = i % 3 ? any(rng) : static_cast<int32_t>(std::clamp<int64_t>(tie, kMin, kMax));
    const double want = std::round(static_cast<double>(x) / std::ldexp(1.0, e));  // exact for int32, half away
    ASSERT_EQ(roundingShiftRight(x, e), static_cast<int32_t>(want)) << x << " >> " << e;
  }
}

TEST(QuantPrimitives, MultiplierHoldsTheFactorToQ31) {
  EXPECT_EQ(quantizeMultiplier(0).m, 0);
  EXPECT_EQ(quantizeMultiplier(0.5).m, 1 << 30);
  EXPECT_EQ(quantizeMultiplier(0.5).shift, 0);
  EXPECT_EQ(quantizeMultiplier(1.0).shift, 1);
  EXPECT_EQ(quantizeMultiplier(std::ldexp(1.0, -40)).m, 0);  // too small: the factor 0
  EXPECT_THROW(quantizeMultiplier(-1.0), std::invalid_argument);
  EXPECT_THROW(quantizeMultiplier(std::nan("")), std::invalid_argument);
  EXPECT_THROW(quantizeMultiplier(std::ldexp(1.0, 31)), std::invalid_argument);
  // Just below 1: q * 2^31 rounds to 2^31 and the multiplier moves to the next power of two.
  const Multiplier near1 = quantizeMultiplier(1.0 - std::ldexp(1.0, -40));
  EXPECT_EQ(near1.m, 1 << 30);
  EXPECT_EQ(near1.shift, 1);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> expo(-30.0, 20.0);
  for (int i = 0; i < 100000; ++i) {
    const double r = std::exp2(expo(rng));
    const Multiplier mul = quantizeMultiplier(r);
    ASSERT_GE(mul.m, 1 << 30);
    ASSERT_LE(std::fabs(multiplierValue(mul) - r), r * std::ldexp(1.0, -31)) << r;
  }
}

TEST(QuantPrimitives, MultiplyByMultiplierIsTheFactorRoundedTwice) {
  // x * 0.5: the high multiply rounds half up, the right shift half away from zero.
  const Multiplier half = quantizeMultiplier(0.5);
  EXPECT_EQ(multiplyByMultiplier(3, half), 2);
  EXPECT_EQ(multiplyByMultiplier(-3, half), -1);
  const Multiplier quarter = quantizeMultiplier(0.25);  // shift -1: SRDHM by 2^30, then a rounding shift by 1
  EXPECT_EQ(multiplyByMultiplier(6, quarter), 2);       // 1.5 -> 2
  EXPECT_EQ(multiplyByMultiplier(-6, quarter), -2);     // -1.5: SRDHM(-6, 2^30) = -3, -3 >> 1 rounds to -2
  EXPECT_EQ(multiplyByMultiplier(1000, quantizeMultiplier(3.0)), 3000);  // a left shift
  std::mt19937 rng(4);
  std::uniform_int_distribution<int32_t> acc(-(1 << 24), 1 << 24);
  std::uniform_real_distribution<double> expo(-20.0, 4.0);
  for (int i = 0; i < 200000; ++i) {
    const int32_t x = acc(rng);
    const Multiplier mul = quantizeMultiplier(std::exp2(expo(rng)));
    const double exact = static_cast<double>(x) * multiplierValue(mul);
    const int32_t got = multiplyByMultiplier(x, mul);
    ASSERT_LE(std::fabs(got - exact), 1.0) << x << " * " << multiplierValue(mul);  // two roundings: within 1
  }
}

// The vector requantization computes multiplyByMultiplier (no left shift) as one rounding of the 64-bit product
// (kernels/x86/quant_x86.hpp, RequantOnce): the same value for every x, every right shift, ties of either rounding.
TEST(QuantPrimitives, OneRoundingIsTheTwoRoundings) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int32_t> any(kMin + 1, kMax), mrand(1 << 30, kMax), small(-70000, 70000);
  for (int right = 0; right <= 31; ++right) {
    for (int32_t m : {0, 1, 1 << 30, (1 << 30) + 1, kMax, 1518500250}) {
      const detail::RequantOnce c = detail::requantOnce(m, right);
      for (int32_t x : {0, 1, -1, 2, -2, 3, -3, kMax, kMin + 1, 1 << 20, -(1 << 20), (1 << 20) + 1, -(1 << 20) - 1})
        ASSERT_EQ(detail::multiplyOnce(x, c), multiplyByMultiplier(x, {m, -right})) << x << " " << m << " " << right;
    }
    for (int i = 0; i < 20000; ++i) {
      const int32_t m = i % 3 == 0 ? 1 << 30 : mrand(rng);  // 2^30: every odd x is a tie of the high multiply
      const int32_t x = i % 2 ? any(rng) : small(rng);
      // x = (2k + 1) 2^r, k of either sign: with m = 2^30, q = floor((x + 1) / 2) = (2k + 1) 2^(r - 1), a tie of the
      // shift by r (half away from zero: k + 1 for k >= 0, k for k < 0)
      const int32_t tie = right >= 1 ? static_cast<int32_t>((2 * (i % 1000) + 1 - 1000) * (int64_t{1} << right)) : x;
      const detail::RequantOnce c = detail::requantOnce(m, right);
      ASSERT_EQ(detail::multiplyOnce(x, c), multiplyByMultiplier(x, {m, -right})) << x << " " << m << " " << right;
      if (right < 21) {  // (|x| < 1000 2^20 < 2^31)
        ASSERT_EQ(detail::multiplyOnce(tie, c), multiplyByMultiplier(tie, {m, -right})) << tie << " " << m << " " << right;
      }
    }
  }
}

TEST(QuantValues, QuantizeRoundsHalfAwayAndSaturates) {
  EXPECT_EQ(quantizeValue(0.5f, 1.0f, 0), 1);
  EXPECT_EQ(quantizeValue(-0.5f, 1.0f, 0), -1);
  EXPECT_EQ(quantizeValue(2.5f, 1.0f, 0), 3);
  EXPECT_EQ(quantizeValue(1.0f, 0.1f, -3), 7);
  EXPECT_EQ(quantizeValue(1e9f, 0.1f, 0), 127);
  EXPECT_EQ(quantizeValue(-1e9f, 0.1f, 10), -128);
  EXPECT_EQ(quantizeValue(std::numeric_limits<float>::infinity(), 0.1f, 0), 127);
  EXPECT_EQ(quantizeValue(std::nanf(""), 0.1f, 5), 5);
  EXPECT_EQ(dequantizeValue(7, 0.25f, -3), 2.5f);
  for (int q = -128; q <= 127; ++q)  // quantize(dequantize(q)) is q for every code
    ASSERT_EQ(quantizeValue(dequantizeValue(static_cast<int8_t>(q), 0.0371f, 17), 0.0371f, 17), q);
}

TEST(QuantGemm, MatchesExactArithmeticAndClamps) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> i8(-128, 127), w8(-127, 127), zp(-20, 20);
  for (int iter = 0; iter < 50; ++iter) {
    const int64_t M = 1 + iter % 4, N = 1 + iter % 7, K = 1 + (iter * 13) % 300;
    std::vector<int8_t> a(static_cast<size_t>(M * K)), w(static_cast<size_t>(N * K));
    for (auto& v : a) v = static_cast<int8_t>(i8(rng));
    for (auto& v : w) v = static_cast<int8_t>(w8(rng));
    std::vector<int32_t> bias(static_cast<size_t>(N));
    for (auto& b : bias) b = i8(rng) * 50;
    const int32_t za = zp(rng);
    QOutput out;
    out.zero_point = zp(rng);
    out.lo = iter % 3 == 0 ? out.zero_point : -128;  // a fused Relu in every third case
    for (int64_t n = 0; n < N; ++n) out.multiplier.push_back(quantizeMultiplier(std::exp2(-8.0 - 0.37 * static_cast<double>(n))));
    std::vector<int8_t> y(static_cast<size_t>(M * N));
    qgemm_ref(M, N, K, a.data(), za, w.data(), bias.data(), out, y.data());
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = bias[static_cast<size_t>(n)];
        for (int64_t k = 0; k < K; ++k) acc += (a[static_cast<size_t>(m * K + k)] - za) * w[static_cast<size_t>(n * K + k)];
        // The spec by its primitives, and close to the exact rational result.
        const int32_t want = std::clamp(out.zero_point + multiplyByMultiplier(static_cast<int32_t>(acc), out.multiplier[static_cast<size_t>(n)]),
                                        out.lo, out.hi);
        ASSERT_EQ(y[static_cast<size_t>(m * N + n)], want);
        const double real = out.zero_point + static_cast<double>(acc) * multiplierValue(out.multiplier[static_cast<size_t>(n)]);
        if (real > out.lo + 1 && real < out.hi - 1) {
          ASSERT_LE(std::fabs(want - real), 1.0);
        }
      }
    // requantize_ref is the same epilogue over a [1, N, M]-laid accumulator set.
  }
  // requantize_ref: per-channel multipliers along the middle axis.
  QOutput out;
  out.multiplier = {quantizeMultiplier(0.5), quantizeMultiplier(0.25)};
  const int32_t acc[] = {3, -3, 6, -6};  // [1, 2 channels, 2]
  int8_t y[4];
  requantize_ref(1, 2, 2, acc, out, y);
  EXPECT_EQ(y[0], 2);
  EXPECT_EQ(y[1], -1);
  EXPECT_EQ(y[2], 2);
  EXPECT_EQ(y[3], -2);
}

// The quantized convolution against the float reference convolution run on the integers as floats (exact: every
// sum stays below 2^24): strides, dilation, pads (a padded tap is the zero point), groups, 1-D and 2-D.
TEST(QuantConv, MatchesTheFloatConvolutionOfTheIntegers) {
  std::mt19937 rng(6);
  std::uniform_int_distribution<int> i8(-128, 127), w8(-127, 127);
  struct Case { int64_t c, m, g; std::vector<int64_t> in, k, st, dil, pad, out; };
  for (const Case& k : {Case{4, 6, 1, {7, 9}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, {7, 5}},
                        Case{6, 6, 6, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {4, 4}},   // depthwise
                        Case{4, 4, 2, {10}, {3}, {1}, {2}, {2}, {10}},                  // 1-D, dilated, groups
                        Case{3, 5, 1, {5, 6}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {5, 6}}}) {
    ConvShape s;
    s.batch = 2, s.in_channels = k.c, s.out_channels = k.m, s.groups = k.g;
    s.in_spatial = k.in, s.out_spatial = k.out, s.kernel = k.k, s.stride = k.st, s.dilation = k.dil, s.pad_begin = k.pad;
    int64_t in_sz = 1, out_sz = 1, k_sz = 1;
    for (size_t i = 0; i < k.in.size(); ++i) in_sz *= k.in[i], out_sz *= k.out[i], k_sz *= k.k[i];
    std::vector<int8_t> x(static_cast<size_t>(2 * k.c * in_sz)), w(static_cast<size_t>(k.m * (k.c / k.g) * k_sz));
    for (auto& v : x) v = static_cast<int8_t>(i8(rng));
    for (auto& v : w) v = static_cast<int8_t>(w8(rng));
    std::vector<int32_t> bias(static_cast<size_t>(k.m));
    for (auto& b : bias) b = i8(rng) * 30;
    const int32_t zx = -7;
    QOutput out;
    out.zero_point = 3;
    for (int64_t m = 0; m < k.m; ++m) out.multiplier.push_back(quantizeMultiplier(std::exp2(-9.0 - 0.5 * static_cast<double>(m))));
    std::vector<int8_t> y(static_cast<size_t>(2 * k.m * out_sz));
    qconv_ref(s, x.data(), zx, w.data(), bias.data(), out, y.data());
    // The oracle: conv_ref on (x - zx) and w as floats, padding 0 — the same as x = zx in the integer domain.
    std::vector<float> xf(x.size()), wf(w.size()), bf(bias.size()), acc(y.size());
    for (size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(x[i] - zx);
    for (size_t i = 0; i < w.size(); ++i) wf[i] = static_cast<float>(w[i]);
    for (size_t i = 0; i < bias.size(); ++i) bf[i] = static_cast<float>(bias[i]);
    conv_ref(s, xf.data(), wf.data(), bf.data(), {}, acc.data());
    for (size_t i = 0; i < y.size(); ++i) {
      const int64_t m = static_cast<int64_t>(i) / out_sz % k.m;
      const int32_t want = std::clamp(out.zero_point + multiplyByMultiplier(static_cast<int32_t>(acc[i]), out.of(m)), -128, 127);
      ASSERT_EQ(y[i], want) << "element " << i;
    }
  }
}

// The portable path's tap loop, both builds (baseline SSE2 and AVX2, whichever the CPU runs), against plain sums:
// every column count around the vector widths, 1 to 4 taps, the extreme operands (|x - zx| <= 255, |w| <= 128).
TEST(QuantConv, TheTapLoopsAreExactSums) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> xs(-255, 255), ws(-128, 127);
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100}) {
    for (int taps = 1; taps <= 4; ++taps) {
      std::vector<std::vector<int16_t>> planes(4, std::vector<int16_t>(static_cast<size_t>(n)));
      for (auto& pl : planes)
        for (auto& v : pl) v = static_cast<int16_t>(n == 64 ? (rng() % 2 ? 255 : -255) : xs(rng));
      const int16_t* src[4] = {planes[0].data(), planes[1].data(), planes[2].data(), planes[3].data()};
      int32_t wv[4];
      for (int32_t& w : wv) w = n == 64 ? -128 : ws(rng);
      std::vector<int32_t> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        want[static_cast<size_t>(i)] = static_cast<int32_t>(i) * 1000;
        for (int t = 0; t < taps; ++t) want[static_cast<size_t>(i)] += src[t][i] * wv[t];
      }
      for (bool avx2 : {false, true}) {
        if (avx2 && !__builtin_cpu_supports("avx2")) continue;
        std::vector<int32_t> acc(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) acc[static_cast<size_t>(i)] = static_cast<int32_t>(i) * 1000;
        (avx2 ? accumulateTapFlatAvx2 : accumulateTapFlatBaseline)(acc.data(), src, wv, taps, n);
        ASSERT_EQ(acc, want) << (avx2 ? "avx2" : "baseline") << " n " << n << " taps " << taps;
      }
    }
  }
}

// The fast int8 convolution gives qconv_ref's bytes on each of its paths: random 2-D shapes (strides, dilations, pads on either side,
// groups, depthwise, 1x1, a window that stops short of the input's end, tile and quad remainders), zero points, clamps,
// per-channel multipliers, at 1, 2 and 3 threads, each weight packing used for several runs; 1-D falls back to the reference.
TEST(QuantConv, FastIsTheReferenceBitForBitAtEveryThreadCount) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> i8(-128, 127), w8(-127, 127), small(1, 3), pad(0, 2), ch(1, 4);
  ThreadPool p2(2), p3(3);
  for (int trial = 0; trial < 84; ++trial) {
    ConvShape s;
    const bool oned = trial % 10 == 9 && trial < 60;
    if (trial >= 60) {  // large enough that 2 and 3 threads split the output channels (or the groups)
      const int64_t groups[] = {1, 4, 2, 40, 24, 16, 8, 1}, cin[] = {32, 32, 16, 40, 24, 16, 8, 8}, cout[] = {24, 24, 34, 40, 24, 16, 8, 8};
      const int64_t k = trial == 64 ? 5 : 3, w = trial == 66 ? 37 : 19;
      s.batch = 1, s.groups = groups[std::min(trial - 60, 7)], s.in_channels = cin[std::min(trial - 60, 7)],
          s.out_channels = cout[std::min(trial - 60, 7)];  // (68 on: overridden below)
      s.in_spatial = {20, w}, s.kernel = {k, k}, s.stride = {1, trial % 2 == 0 ? 1 : 2}, s.dilation = {1, 1};
      s.pad_begin = {k / 2, trial == 66 ? 0 : k / 2};  // (trial 66: no left padding, a window short of the right end)
      s.out_spatial = {20, trial == 66 ? 35 : trial % 2 == 0 ? w : (w - 1) / 2 + 1};
      if (trial == 67) {  // 1x1, stride 2, no padding: the im2col reads x itself, 16 outputs a row and one more
        s.in_channels = s.out_channels = s.groups = 8, s.groups = 1;
        s.in_spatial = {4, 33}, s.kernel = {1, 1}, s.stride = {2, 2}, s.pad_begin = {0, 0}, s.out_spatial = {2, 17};
      }
      if (trial >= 81) {  // depthwise, rows of 70, 75 and 40 outputs: four blocks narrowed together, then a last group of
                          // one; a group of three (83: with the extreme sums, the packs' saturation)
        const int64_t i = trial - 81, ch[] = {12, 8, 16}, in_w[] = {70, 150, 40}, st[] = {1, 2, 1}, out_w[] = {70, 75, 40};
        s.batch = 1, s.groups = s.in_channels = s.out_channels = ch[i];
        s.in_spatial = {5, in_w[i]}, s.kernel = {3, 3}, s.stride = {1, st[i]}, s.pad_begin = {1, 1};
        s.out_spatial = {5, out_w[i]};
      } else if (trial == 80) {  // two images, two groups of 24 channels (AMX tile blocks reach into the next group), 288 taps
        s.batch = 2, s.groups = 2, s.in_channels = 64, s.out_channels = 48;
        s.in_spatial = {9, 13}, s.kernel = {3, 3}, s.stride = {1, 1}, s.pad_begin = {1, 1}, s.out_spatial = {9, 13};
      } else if (trial >= 78) {  // 1x1, stride 1, no padding: the output rows end to end, cut 64 pixels at a time, and a tail
        s.batch = 1, s.groups = 1, s.in_channels = trial == 78 ? 20 : 13, s.out_channels = trial == 78 ? 24 : 10;
        s.in_spatial = trial == 78 ? std::vector<int64_t>{20, 37} : std::vector<int64_t>{40, 40};  // (79: tiled)
        s.kernel = {1, 1}, s.stride = {1, 1}, s.pad_begin = {0, 0}, s.out_spatial = s.in_spatial;
      } else if (trial >= 76) {  // maps of 1000+ pixels: with 2 or 3 threads each cuts and multiplies its own pixel tiles
        s.batch = 1, s.groups = 1, s.in_channels = 20, s.out_channels = trial == 76 ? 30 : 13;
        if (trial == 76) {
          s.in_spatial = {40, 40}, s.kernel = {3, 3}, s.stride = {1, 1}, s.pad_begin = {1, 1}, s.out_spatial = {40, 40};
        } else {  // 1x1, stride 2, no padding, rows of 35 outputs: tiles that cut rows
          s.in_spatial = {60, 70}, s.kernel = {1, 1}, s.stride = {2, 2}, s.pad_begin = {0, 0}, s.out_spatial = {30, 35};
        }
      } else if (trial >= 72) {  // one output pixel (a Gemm as a 1x1 convolution: vectorised across output channels on VNNI)
        const int64_t i = trial - 72, cin[] = {40, 9, 300, 16}, cout[] = {70, 20, 400, 64}, k = i == 1 ? 3 : 1;
        s.batch = i == 0 ? 2 : 1, s.groups = 1, s.in_channels = cin[i], s.out_channels = cout[i];
        s.in_spatial = {1, 1}, s.kernel = {k, k}, s.stride = {1, 1}, s.pad_begin = {k / 2, k / 2}, s.out_spatial = {1, 1};
      } else if (trial >= 68) {  // depthwise over small planes (rows of at most 8 outputs: two rows per vector on VNNI)
        const int64_t ch[] = {16, 24, 8, 8}, in[] = {7, 14, 8, 6}, kk[] = {3, 3, 5, 3}, st[] = {1, 2, 1, 2};
        const int64_t i = trial - 68, out_w = (in[i] + 2 * (kk[i] / 2) - kk[i]) / st[i] + 1;
        s.in_channels = s.out_channels = s.groups = ch[i];
        s.in_spatial = {in[i] - (i == 3 ? 1 : 0), in[i]}, s.kernel = {kk[i], kk[i]}, s.stride = {st[i], st[i]};
        s.pad_begin = {kk[i] / 2, kk[i] / 2};
        s.out_spatial = {(s.in_spatial[0] + 2 * (kk[i] / 2) - kk[i]) / st[i] + 1, out_w};
      }
    }
    const int64_t g = trial % 4 == 1 ? ch(rng) : 1, mg = trial % 4 == 1 ? 1 : ch(rng);
    int64_t cg = ch(rng);
    if (trial < 60) s.batch = 1 + trial % 2, s.groups = g, s.in_channels = g * cg, s.out_channels = g * mg;
    else cg = s.in_channels / s.groups;
    const size_t r = oned ? 1 : 2;
    for (size_t d = 0; d < r && trial < 60; ++d) {
      const int64_t k = trial % 7 == 0 ? 1 : small(rng), st = small(rng), dl = small(rng), pb = pad(rng), in = 4 + pad(rng) * 3;
      s.kernel.push_back(k), s.stride.push_back(st), s.dilation.push_back(dl), s.pad_begin.push_back(pb), s.in_spatial.push_back(in);
      const int64_t span = (k - 1) * dl + 1, pe = pad(rng);
      s.out_spatial.push_back(std::max<int64_t>(1, (in + pb + pe - span) / st + 1));
    }
    int64_t in_sz = 1, out_sz = 1, k_sz = 1;
    for (size_t d = 0; d < r; ++d) in_sz *= s.in_spatial[d], out_sz *= s.out_spatial[d], k_sz *= s.kernel[d];
    std::vector<int8_t> x(static_cast<size_t>(s.batch * s.in_channels * in_sz)), w(static_cast<size_t>(s.out_channels * cg * k_sz));
    for (auto& v : x) v = static_cast<int8_t>(i8(rng));
    for (auto& v : w) v = static_cast<int8_t>(trial % 5 == 0 && v % 3 == 0 ? 0 : w8(rng));
    std::vector<int32_t> bias(static_cast<size_t>(s.out_channels));
    for (auto& b : bias) b = i8(rng) * 50;
    QOutput out;
    out.zero_point = i8(rng) / 4;
    out.lo = trial % 3 == 0 ? out.zero_point : -128;  // a fused Relu now and then
    for (int64_t m = 0; m < (trial % 2 || trial >= 72 ? s.out_channels : 1); ++m)
      // factors below 1/2 (a right shift), in [1/2, 1) (shift 0) and above 1 (a left shift) now and then; from trial
      // 72 on, a mix per channel (one left shift, at channel 5 where trial 73 has it); trial 70 (depthwise, two rows
      // of 8 to a register) all above 1
      out.multiplier.push_back(quantizeMultiplier(trial >= 72 ? (m == 5 && trial != 74 ? 1.5 : m % 4 == 1 ? 0.5 + 0.03 * static_cast<double>(m) : std::exp2(-10.5 - 0.02 * static_cast<double>(m % 40)))
                                                  : trial % 7 == 2 ? 0.5 + 0.07 * static_cast<double>(m % 7)
                                                  : trial % 7 == 4 || trial == 70 ? 1.5 + static_cast<double>(m % 3)
                                                                   : std::exp2(-6.0 - 0.37 * static_cast<double>(m + trial % 5))));
    int32_t zx = i8(rng) / 2;
    if (trial % 8 == 3) {  // the extremes the int32 bound allows: (127 - -128) * -128 on every tap, the largest bias
      std::fill(x.begin(), x.end(), int8_t{127});
      std::fill(w.begin(), w.end(), int8_t{-128});
      zx = -128;
      const int64_t room = INT32_MAX - cg * k_sz * 255 * 128;
      for (auto& b : bias) b = static_cast<int32_t>(-std::max<int64_t>(0, room));
    }
    std::vector<int8_t> want(static_cast<size_t>(s.batch * s.out_channels * out_sz));
    qconv_ref(s, x.data(), zx, w.data(), trial % 6 == 0 ? nullptr : bias.data(), out, want.data());
    for (QConvPath path : {QConvPath::kBaseline, QConvPath::kAvx2, QConvPath::kVnni, QConvPath::kAmx}) {
      if (!cpuHasQConvPath(path)) continue;  // the paths this CPU has
      const QConv conv(s, w.data(), trial % 6 == 0 ? nullptr : bias.data(), zx, out, path);
      ASSERT_EQ(conv.path(), path);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
        std::vector<int8_t> got(want.size(), 99);
        conv.run(x.data(), got.data(), pool);
        ASSERT_EQ(got, want) << "trial " << trial << ", " << qconvPathName(path) << ", " << (pool ? pool->size() : 1) << " threads";
      }
    }
    std::vector<int8_t> got(want.size(), 99);  // and the dispatched entry point
    qconv(s, x.data(), zx, w.data(), trial % 6 == 0 ? nullptr : bias.data(), out, got.data(), &p2);
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

// Depthwise layers (one input and one output channel per group: the AVX2 path's tap pairs over phase planes, the
// VNNI path's quad planes) over strides 1-3, dilations 1-2, kernels 1-7, asymmetric pads and maps narrower and wider
// than a vector, a channel multiplier of 2 (grouped, not depthwise), per-channel multipliers with a left shift among
// them: every path the CPU has gives the reference's bytes at 1-3 threads.
TEST(QuantConv, DepthwiseGeometriesAreTheReferenceBitForBit) {
  std::mt19937 rng(41);
  std::uniform_int_distribution<int> i8(-128, 127), w8(-127, 127);
  ThreadPool p2(2), p3(3);
  const int64_t kernels[] = {1, 3, 5, 7}, widths[] = {5, 16, 17, 33, 70};
  for (int trial = 0; trial < 48; ++trial) {
    ConvShape s;
    const int64_t C = 3 + trial % 5, mult = trial % 7 == 6 ? 2 : 1, k = kernels[trial % 4];
    const int64_t st = 1 + trial % 3, dl = 1 + (trial / 3) % 2, w = widths[trial % 5], h = 4 + trial % 9;
    s.batch = 1 + trial % 2, s.groups = C, s.in_channels = C, s.out_channels = C * mult;
    s.in_spatial = {h, w}, s.kernel = {k, k}, s.stride = {st, st}, s.dilation = {dl, dl};
    s.pad_begin = {(trial % 4 == 1 ? 0 : k / 2), k / 2 + (trial % 3 == 2 ? 1 : 0)};
    const int64_t span = (k - 1) * dl + 1, pe_h = k / 2, pe_w = trial % 2 ? 0 : k / 2;
    if (h + s.pad_begin[0] + pe_h < span || w + s.pad_begin[1] + pe_w < span) continue;
    s.out_spatial = {(h + s.pad_begin[0] + pe_h - span) / st + 1, (w + s.pad_begin[1] + pe_w - span) / st + 1};
    std::vector<int8_t> x(static_cast<size_t>(s.batch * C * h * w)), wt(static_cast<size_t>(C * mult * k * k));
    for (auto& v : x) v = static_cast<int8_t>(i8(rng));
    for (auto& v : wt) v = static_cast<int8_t>(w8(rng));
    std::vector<int32_t> bias(static_cast<size_t>(C * mult));
    for (auto& b : bias) b = i8(rng) * 30;
    QOutput out;
    out.zero_point = i8(rng) / 3;
    out.lo = trial % 5 == 0 ? out.zero_point : -128;
    for (int64_t m = 0; m < C * mult; ++m)
      out.multiplier.push_back(quantizeMultiplier(m == 1 && trial % 4 == 3 ? 1.5 : std::exp2(-7.0 - 0.21 * static_cast<double>(m))));
    const int32_t zx = i8(rng) / 2;
    std::vector<int8_t> want(static_cast<size_t>(s.batch * C * mult * s.out_spatial[0] * s.out_spatial[1]));
    qconv_ref(s, x.data(), zx, wt.data(), bias.data(), out, want.data());
    for (QConvPath path : {QConvPath::kBaseline, QConvPath::kAvx2, QConvPath::kVnni, QConvPath::kAmx}) {
      if (!cpuHasQConvPath(path)) continue;
      const QConv conv(s, wt.data(), bias.data(), zx, out, path);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
        std::vector<int8_t> got(want.size(), 99);
        conv.run(x.data(), got.data(), pool);
        ASSERT_EQ(got, want) << "trial " << trial << " (k " << k << ", stride " << st << ", dilation " << dl << ", " << h
                             << "x" << w << "), " << qconvPathName(path) << ", " << (pool ? pool->size() : 1) << " threads";
      }
    }
  }
}

// A Gemm or MatMul over rows (a batch of one-pixel images whose window is the whole unpadded input: [N, K, 1, 1], or
// a 3x3 kernel over 3x3 images) gives the reference's bytes on every path, 1-3 threads: row counts around the tile
// of 4, depths around multiples of 4 and 64, channel counts around multiples of 16 and 64, per-channel factors with a
// left shift among them, the extreme sums; one-pixel layers whose window is padded keep the im2col form.
TEST(QuantConv, BatchedOnePixelLayersAreTheReferenceBitForBit) {
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> i8(-128, 127), w8(-127, 127);
  ThreadPool p2(2), p3(3);
  const int64_t rows[] = {2, 3, 4, 5, 9, 16, 17}, depth[] = {1, 3, 4, 63, 64, 65, 130}, chans[] = {1, 15, 16, 17, 64, 65, 150};
  for (int trial = 0; trial < 40; ++trial) {
    ConvShape s;
    const int64_t k = trial % 5 == 3 ? 3 : 1;
    const bool padded = trial % 7 == 6;  // (a 3x3 window over a 1x1 image: the im2col form)
    s.batch = rows[trial % 7], s.groups = 1, s.in_channels = depth[(trial / 2) % 7], s.out_channels = chans[(trial * 3) % 7];
    s.in_spatial = padded ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{k, k};
    s.kernel = padded ? std::vector<int64_t>{3, 3} : std::vector<int64_t>{k, k};
    s.stride = {1, 1}, s.dilation = {1, 1}, s.out_spatial = {1, 1};
    s.pad_begin = padded ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{0, 0};
    const int64_t K = s.in_channels * s.kernel[0] * s.kernel[1];
    std::vector<int8_t> x(static_cast<size_t>(s.batch * s.in_channels * s.in_spatial[0] * s.in_spatial[1])), w(static_cast<size_t>(s.out_channels * K));
    std::vector<int32_t> bias(static_cast<size_t>(s.out_channels));
    int32_t zx = i8(rng) / 2;
    for (auto& v : x) v = static_cast<int8_t>(i8(rng));
    for (auto& v : w) v = static_cast<int8_t>(w8(rng));
    for (auto& b : bias) b = i8(rng) * 40;
    if (trial % 8 == 5) {  // the extremes: (127 - -128) * -128 on every tap, the largest bias
      std::fill(x.begin(), x.end(), int8_t{127});
      std::fill(w.begin(), w.end(), int8_t{-128});
      zx = -128;
      for (auto& b : bias) b = static_cast<int32_t>(-std::max<int64_t>(0, INT32_MAX - K * 255 * 128));
    }
    QOutput out;
    out.zero_point = i8(rng) / 3;
    out.lo = trial % 3 == 0 ? out.zero_point : -128;
    for (int64_t m = 0; m < s.out_channels; ++m)
      out.multiplier.push_back(quantizeMultiplier(m % 17 == 5 ? 1.5 : std::exp2(-8.0 - 0.13 * static_cast<double>(m % 23))));
    std::vector<int8_t> want(static_cast<size_t>(s.batch * s.out_channels));
    qconv_ref(s, x.data(), zx, w.data(), trial % 4 == 2 ? nullptr : bias.data(), out, want.data());
    for (QConvPath path : {QConvPath::kBaseline, QConvPath::kAvx2, QConvPath::kVnni, QConvPath::kAmx}) {
      if (!cpuHasQConvPath(path)) continue;
      const QConv conv(s, w.data(), trial % 4 == 2 ? nullptr : bias.data(), zx, out, path);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
        std::vector<int8_t> got(want.size(), 99);
        conv.run(x.data(), got.data(), pool);
        ASSERT_EQ(got, want) << "trial " << trial << " (" << s.batch << " x " << K << " -> " << s.out_channels << "), "
                             << qconvPathName(path) << ", " << (pool ? pool->size() : 1) << " threads";
      }
    }
  }
}

// Every output code of a requantization, ties of both roundings among them, on every path: a 1x1 convolution of one
// input channel with weight 1, so acc = bias[m] + x - zx sweeps 256 consecutive values per output channel, through
// multipliers of 1/2^k (each odd sum a tie) and others, plain and depthwise (each channel its own plane), with rows
// of 64 outputs (the packed narrowing) and a tail.
TEST(QuantConv, RequantizationTiesAreTheReferencesOnEveryPath) {
  ThreadPool p2(2);
  for (int64_t width : {256, 250}) {
    for (bool depthwise : {false, true}) {
      const int64_t M = 40;
      ConvShape s;
      s.batch = 1, s.in_channels = depthwise ? M : 1, s.out_channels = M, s.groups = depthwise ? M : 1;
      s.in_spatial = {1, width}, s.out_spatial = {1, width}, s.kernel = {1, 1}, s.stride = {1, 1}, s.dilation = {1, 1};
      s.pad_begin = {0, 0};
      std::vector<int8_t> x(static_cast<size_t>(s.in_channels * width)), w(static_cast<size_t>(M), 1);
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int8_t>(static_cast<int64_t>(i % static_cast<size_t>(width)) - 128);
      std::vector<int32_t> bias(static_cast<size_t>(M));
      QOutput out;
      out.zero_point = 3;
      for (int64_t m = 0; m < M; ++m) {
        // factors 2^-1 .. 2^-9 (ties of the high multiply and of the shift), and 2^-k times 1.37, 0.77
        const double f = std::exp2(-1.0 - static_cast<double>(m % 9)) * (m < 9 ? 1.0 : m < 18 ? 1.37 : m < 27 ? 0.77 : 1.0);
        out.multiplier.push_back(m < 36 ? quantizeMultiplier(f) : quantizeMultiplier(0.5 + 0.1 * static_cast<double>(m - 36)));
        bias[static_cast<size_t>(m)] = static_cast<int32_t>((m % 5 - 2) * 300);  // sums of both signs, [-600, 855]
      }
      std::vector<int8_t> want(static_cast<size_t>(M * width));
      qconv_ref(s, x.data(), -128, w.data(), bias.data(), out, want.data());
      for (QConvPath path : {QConvPath::kBaseline, QConvPath::kAvx2, QConvPath::kVnni, QConvPath::kAmx}) {
        if (!cpuHasQConvPath(path)) continue;
        const QConv conv(s, w.data(), bias.data(), -128, out, path);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2}) {
          std::vector<int8_t> got(want.size(), 99);
          conv.run(x.data(), got.data(), pool);
          ASSERT_EQ(got, want) << qconvPathName(path) << (depthwise ? " depthwise" : "") << " width " << width;
        }
      }
    }
  }
}

// The int8 addition's parameters hold each scale ratio to 15 significant bits, and qadd_ref is the real sum rounded
// half up to y's grid (checked in exact rational arithmetic on every (a, b) pair), then clamped; operand scales 2^14
// times the output's are refused.
TEST(QuantAdd, IsTheRealSumRoundedOnceAndClamped) {
  const double cases[][3] = {{0.02, 0.03, 0.04}, {0.5, 0.001, 0.1}, {1.0, 1.0, 1.0}, {0.01, 0.01, 0.5}, {3e-5, 2e-5, 1e-6}, {1.0, 1.0, 1e-4}};
  for (const auto& c : cases) {
    const QAddParams p = qaddParams(c[0], -7, c[1], 12, c[2], 3, -100, 127);
    const int32_t big = std::max(p.ma, p.mb);
    EXPECT_GE(big, 1 << 14) << c[0];
    EXPECT_LT(big, 1 << 15) << c[0];
    EXPECT_NEAR(std::ldexp(p.ma, -p.shift), c[0] / c[2], std::ldexp(0.5, -p.shift) * 1.0000001);
    EXPECT_NEAR(std::ldexp(p.mb, -p.shift), c[1] / c[2], std::ldexp(0.5, -p.shift) * 1.0000001);
    std::vector<int8_t> a(65536), b(65536), y(65536);
    for (int i = 0; i < 65536; ++i) a[i] = static_cast<int8_t>(i & 255), b[i] = static_cast<int8_t>(i >> 8);
    qadd_ref(65536, a.data(), b.data(), p, y.data());
    for (int i = 0; i < 65536; ++i) {
      const int64_t acc = int64_t(a[i] + 7) * p.ma + int64_t(b[i] - 12) * p.mb;  // exact; then floor((acc + half) / 2^s)
      const int64_t q = static_cast<int64_t>(std::floor((static_cast<long double>(acc) + std::ldexp(1.0L, p.shift - 1)) / std::ldexp(1.0L, p.shift)));
      ASSERT_EQ(y[i], std::clamp<int64_t>(3 + q, -100, 127)) << i;
      // and within 0.5 + 255 * 2^-14 * max ratio of the real sum (the multipliers' own rounding)
      const double real = 3 + (c[0] * (a[i] + 7) + c[1] * (b[i] - 12)) / c[2];
      if (real > -100 && real < 127) {
        ASSERT_LE(std::fabs(y[i] - real), 0.5 + 255.0 * 2 * std::ldexp(0.5, -p.shift) + 1e-9) << i;
      }
    }
  }
  EXPECT_THROW(qaddParams(1.0, 0, 1.0, 0, 1.0 / 16384, 0), std::invalid_argument);
  EXPECT_THROW(qaddParams(0.0, 0, 1.0, 0, 1.0, 0), std::invalid_argument);
  EXPECT_THROW(qaddParams(1.0, 0, NAN, 0, 1.0, 0), std::invalid_argument);
}

// The int8 windowed average pooling is the real mean requantized, with the float kernel's divisor: for random
// windows (1-4 taps a side, strides 1-3, dilations 1-2, pads, count_include_pad on and off, 1-D and 2-D), scales and
// zero points, each code is within half a step (+ the requantization's second rounding, and the multiplier's 2^-30
// relative error) of zy + sx * avg(x - zx) / sy before the clamp, avg being avgPool2d's (a padded tap is the real 0);
// the same bytes on 1 and 3 threads; parameters it cannot hold are refused.
TEST(QuantAvgPool, IsTheRealMeanRoundedOnceAndClamped) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> i8(-128, 127), k4(1, 4), s3(1, 3), d2(1, 2), hw(1, 12), coin(0, 1);
  std::uniform_real_distribution<double> scale(-6.0, 1.0);
  ThreadPool p3(3);
  int checked = 0, padded_divisors = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Pool2dShape s;
    s.planes = 1 + trial % 5;
    const bool one_d = trial % 4 == 3;
    s.kh = one_d ? 1 : k4(rng), s.kw = k4(rng), s.sh = one_d ? 1 : s3(rng), s.sw = s3(rng);
    s.dh = one_d ? 1 : d2(rng), s.dw = d2(rng);
    s.ih = one_d ? 1 : hw(rng), s.iw = hw(rng);
    auto pad = [&](int64_t k) { return std::uniform_int_distribution<int64_t>(0, k - 1)(rng); };
    s.pt = one_d ? 0 : pad(s.kh), s.pb = one_d ? 0 : pad(s.kh), s.pl = pad(s.kw), s.pr = pad(s.kw);
    s.count_include_pad = coin(rng) == 1;
    const int64_t eh = (s.kh - 1) * s.dh + 1, ew = (s.kw - 1) * s.dw + 1;
    if (s.ih + s.pt + s.pb < eh || s.iw + s.pl + s.pr < ew) continue;
    s.oh = (s.ih + s.pt + s.pb - eh) / s.sh + 1, s.ow = (s.iw + s.pl + s.pr - ew) / s.sw + 1;
    const double sx = std::pow(10.0, scale(rng)), sy = sx * std::pow(10.0, scale(rng) / 3);
    const int32_t zx = i8(rng), zy = trial % 3 == 0 ? 0 : i8(rng), lo = trial % 4 == 0 ? zy : -128;
    const QAvgPoolParams p = qavgPoolParams(sx, zx, sy, zy, s.kh * s.kw, lo, 127);
    const int64_t in = s.planes * s.ih * s.iw, out = s.planes * s.oh * s.ow;
    std::vector<int8_t> x(static_cast<size_t>(in)), y1(static_cast<size_t>(out)), y3(static_cast<size_t>(out));
    for (auto& v : x) v = static_cast<int8_t>(trial % 5 == 0 ? 127 : i8(rng));
    qavgPool2d(s, x.data(), p, y1.data(), nullptr);
    qavgPool2d(s, x.data(), p, y3.data(), &p3);
    ASSERT_EQ(y1, y3) << trial;
    // The float kernel on the real values (x - zx): its sums of small integers are exact, its divisor the spec's.
    std::vector<float> xf(x.size()), avg(static_cast<size_t>(out));
    for (size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(x[i] - zx);
    avgPool2d(s, xf.data(), avg.data(), nullptr);
    // The divisor (docs/numerics.md): taps inside the input, or with count_include_pad inside the padded extent.
    auto taps = [](int64_t o, int64_t k, int64_t d, int64_t lo, int64_t hi) {
      int64_t c = 0;
      for (int64_t j = 0; j < k; ++j) c += o + j * d >= lo && o + j * d < hi;
      return c;
    };
    for (int64_t i = 0; i < out; ++i) {
      const int64_t oy = i / s.ow % s.oh, ox = i % s.ow, y0 = oy * s.sh - s.pt, x0 = ox * s.sw - s.pl;
      const int64_t n = s.count_include_pad ? taps(y0, s.kh, s.dh, -s.pt, s.ih + s.pb) * taps(x0, s.kw, s.dw, -s.pl, s.iw + s.pr)
                                            : taps(y0, s.kh, s.dh, 0, s.ih) * taps(x0, s.kw, s.dw, 0, s.iw);
      padded_divisors += s.count_include_pad && n > taps(y0, s.kh, s.dh, 0, s.ih) * taps(x0, s.kw, s.dw, 0, s.iw);
      const double real = zy + sx * static_cast<double>(avg[static_cast<size_t>(i)]) / sy;
      const int32_t got = y1[static_cast<size_t>(i)];
      // (multiplyByMultiplier rounds the product to an integer, then shifts right by `right` with rounding: the
      // second rounding adds at most half a step of the first, 2^-(right + 1))
      const int right = n > 0 ? std::max(0, -p.mul[static_cast<size_t>(n - 1)].shift) : 0;
      const double tol = 0.5 + (right > 0 ? std::ldexp(0.5, -right) : 0.0) + std::fabs(real - zy) * 2e-6 + 1e-9;
      if (real >= lo - 0.5 && real <= 127.5) {
        ASSERT_LE(std::fabs(got - real), tol) << trial << " " << i << " real " << real << " divisor " << n;
      } else {
        ASSERT_EQ(got, real < lo ? lo : 127) << trial << " " << i;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 5000);
  EXPECT_GT(padded_divisors, 100);  // windows whose divisor counted padding were among them
  EXPECT_THROW(qavgPoolParams(1.0, 0, 1.0, 0, 0), std::invalid_argument);
  EXPECT_THROW(qavgPoolParams(1.0, 0, 1.0, 0, kMaxAvgPoolTaps + 1), std::invalid_argument);
  EXPECT_THROW(qavgPoolParams(0.0, 0, 1.0, 0, 4), std::invalid_argument);
}

// The int8 global average pooling is the real mean rounded once: for random planes of 1 to 400 codes and random
// scales and zero points, each code is within 0.5 (+ the multiplier's 2^-30 relative error) of
// zy + sx * (mean x - zx) / sy before the clamp, ties rounding as multiplyByMultiplier does; the same bytes on 1 and
// 3 threads; parameters it cannot hold are refused.
TEST(QuantGlobalAvgPool, IsTheRealMeanRoundedOnceAndClamped) {
  std::mt19937 rng(8);
  std::uniform_int_distribution<int> i8(-128, 127), len(1, 400);
  std::uniform_real_distribution<double> scale(-6.0, 1.0);
  ThreadPool p3(3);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t n = trial == 0 ? 1 : len(rng), planes = 1 + trial % 7;
    const double sx = std::pow(10.0, scale(rng)), sy = sx * std::pow(10.0, scale(rng) / 3);
    const int32_t zx = i8(rng), zy = trial % 3 == 0 ? 0 : i8(rng), lo = trial % 4 == 0 ? zy : -128;
    const QGlobalAvgPoolParams p = qglobalAvgPoolParams(sx, zx, sy, zy, n, lo, 127);
    std::vector<int8_t> x(static_cast<size_t>(planes * n)), y1(static_cast<size_t>(planes)), y3(static_cast<size_t>(planes));
    for (auto& v : x) v = static_cast<int8_t>(trial % 5 == 0 ? 127 : i8(rng));  // (some all at one extreme)
    qglobalAvgPool(planes, n, x.data(), p, y1.data(), nullptr);
    qglobalAvgPool(planes, n, x.data(), p, y3.data(), &p3);
    ASSERT_EQ(y1, y3) << trial;
    for (int64_t pl = 0; pl < planes; ++pl) {
      int64_t sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += x[static_cast<size_t>(pl * n + i)];
      const double real = zy + sx * (static_cast<double>(sum) / n - zx) / sy;
      const int32_t got = y1[static_cast<size_t>(pl)];
      if (real >= lo - 0.5 && real <= 127.5) {
        ASSERT_LE(std::fabs(got - real), 0.5 + std::fabs(real - zy) * 1e-9 + 1e-9) << trial << " " << pl << " real " << real;
      } else {
        ASSERT_EQ(got, real < lo ? lo : 127) << trial << " " << pl;
      }
    }
  }
  EXPECT_THROW(qglobalAvgPoolParams(1.0, 0, 1.0, 0, 0), std::invalid_argument);
  EXPECT_THROW(qglobalAvgPoolParams(1.0, 0, 1.0, 0, int64_t{1} << 23), std::invalid_argument);
  EXPECT_THROW(qglobalAvgPoolParams(0.0, 0, 1.0, 0, 4), std::invalid_argument);
  EXPECT_THROW(qglobalAvgPoolParams(1.0, 0, INFINITY, 0, 4), std::invalid_argument);
}

// The int8 product of two tensors is the real product requantized and clamped: on every (a, b) pair of codes, within
// half a step (plus the requantization's second rounding and the multiplier's 2^-30 relative error) of
// zy + sa * sb / sy * (a - za) * (b - zb); b broadcast per
// plane (inner > 1) reads b[i / inner]; the chunked form gives the reference's bytes at 1 to 3 threads.
TEST(QuantMul, IsTheRealProductRequantizedAndClamped) {
  const double cases[][3] = {{0.02, 1.0 / 255, 0.01}, {0.5, 0.004, 0.3}, {1.0, 1.0, 1.0}, {0.01, 0.02, 0.5}};
  for (const auto& c : cases) {
    const QMulParams p = qmulParams(c[0], -7, c[1], -128, c[2], 3, -100, 127);
    std::vector<int8_t> a(65536), b(65536), y(65536);
    for (int i = 0; i < 65536; ++i) a[i] = static_cast<int8_t>(i & 255), b[i] = static_cast<int8_t>(i >> 8);
    qmul_ref(65536, 1, a.data(), b.data(), p, y.data());
    for (int i = 0; i < 65536; ++i) {
      const double real = 3 + c[0] * c[1] / c[2] * (a[i] + 7) * (b[i] + 128);
      const double tol = 0.5 + std::ldexp(0.5, std::min(p.mul.shift, 0)) + std::fabs(real - 3) * std::ldexp(1.0, -30) + 1e-9;
      if (real > -100 && real < 127) ASSERT_LE(std::fabs(y[i] - real), tol) << i;
      else ASSERT_EQ(y[i], real <= -100 ? -100 : 127) << i;
    }
    // the fast form on the same pairs, b as one gate per plane of 256 (every code of a against every code of b)
    std::vector<int8_t> gates(256), got(65536);
    for (int g = 0; g < 256; ++g) gates[static_cast<size_t>(g)] = static_cast<int8_t>(g);
    qmul(65536, 256, a.data(), gates.data(), p, got.data(), nullptr);
    ASSERT_EQ(got, y) << "factor " << c[0] * c[1] / c[2];
  }
  std::mt19937 rng(8);
  std::uniform_int_distribution<int> i8(-128, 127);
  const QMulParams p = qmulParams(0.03, 5, 0.004, -128, 0.02, -1);
  const int64_t planes = 37, inner = 49;
  std::vector<int8_t> a(planes * inner), b(planes), want(a.size());
  for (int8_t& v : a) v = static_cast<int8_t>(i8(rng));
  for (int8_t& v : b) v = static_cast<int8_t>(i8(rng));
  qmul_ref(planes * inner, inner, a.data(), b.data(), p, want.data());
  for (int64_t i = 0; i < planes * inner; ++i)
    ASSERT_EQ(want[static_cast<size_t>(i)], requantizeValue((a[static_cast<size_t>(i)] - 5) * (b[static_cast<size_t>(i / inner)] + 128), p.mul, -1, -128, 127));
  ThreadPool p2(2), p3(3);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
    std::vector<int8_t> got(a.size());
    qmul(planes * inner, inner, a.data(), b.data(), p, got.data(), pool);
    ASSERT_EQ(got, want);
  }
  EXPECT_THROW(qmulParams(0.0, 0, 1.0, 0, 1.0, 0), std::invalid_argument);
  EXPECT_THROW(qmulParams(1e6, 0, 1e6, 0, 1e-6, 0), std::invalid_argument);
}

// The int8 look-up table: the reference is table[x + 128] for every code; the fast form (AVX-512 VBMI or AVX2 where
// the CPU has it: the path this machine takes is said) gives its bytes for every length up to 200 (the vector tail) and for
// large tensors on 1 to 3 threads.
TEST(QuantLookup, FastIsTheReferenceBitForBit) {
  std::mt19937 rng(6);
  std::uniform_int_distribution<int> i8(-128, 127);
  int8_t table[256];
  for (int8_t& t : table) t = static_cast<int8_t>(i8(rng));
  std::vector<int8_t> all(256), ref(256);
  for (int c = 0; c < 256; ++c) all[static_cast<size_t>(c)] = static_cast<int8_t>(c - 128);
  qlookup_ref(256, all.data(), table, ref.data());
  for (int c = 0; c < 256; ++c) ASSERT_EQ(ref[static_cast<size_t>(c)], table[c]) << c;
  std::printf("qlookup: %s path\n", detail::cpuHasAvx512vbmi() ? "AVX-512 VBMI" : __builtin_cpu_supports("avx2") ? "AVX2" : "reference");
  ThreadPool p2(2), p3(3);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{127}, int64_t{200}, int64_t{100003}}) {
    std::vector<int8_t> x(static_cast<size_t>(n)), want(x.size());
    for (int8_t& v : x) v = static_cast<int8_t>(i8(rng));
    qlookup_ref(n, x.data(), table, want.data());
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
      std::vector<int8_t> got(x.size(), 7);
      qlookup(n, x.data(), table, got.data(), pool);
      ASSERT_EQ(got, want) << n;
    }
  }
}

// The fast addition gives qadd_ref's bytes: every length up to 100 (the vector tail), large tensors on 1-3 threads,
// random parameters including the extreme shifts and multipliers.
TEST(QuantAdd, FastIsTheReferenceBitForBit) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> i8(-128, 127);
  ThreadPool p2(2), p3(3);
  for (int trial = 0; trial < 200; ++trial) {
    QAddParams p;
    p.za = i8(rng), p.zb = i8(rng), p.zy = i8(rng);
    p.lo = trial % 3 == 0 ? p.zy : -128, p.hi = trial % 5 == 0 ? std::min(127, p.zy + 60) : 127;
    if (p.lo > p.hi) std::swap(p.lo, p.hi);
    p.shift = 1 + trial % 30;
    p.ma = trial % 7 == 0 ? 32767 : static_cast<int32_t>(rng() % 32768);
    p.mb = trial % 11 == 0 ? 0 : static_cast<int32_t>(rng() % 32768);
    const int64_t n = trial < 100 ? trial : 70000 + trial;
    std::vector<int8_t> a(static_cast<size_t>(n)), b(a.size()), want(a.size()), got(a.size());
    for (auto& v : a) v = static_cast<int8_t>(i8(rng));
    for (auto& v : b) v = static_cast<int8_t>(i8(rng));
    qadd_ref(n, a.data(), b.data(), p, want.data());
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
      std::fill(got.begin(), got.end(), int8_t{99});
      qadd(n, a.data(), b.data(), p, got.data(), pool);
      ASSERT_EQ(got, want) << "trial " << trial << ", n " << n;
    }
    std::copy(a.begin(), a.end(), got.begin());  // in place (the planner may give y a's slot)
    qadd(n, got.data(), b.data(), p, got.data(), &p2);
    ASSERT_EQ(got, want) << "trial " << trial << " in place";
  }
}

// The fast QuantizeLinear / DequantizeLinear give the reference's bytes: ties (k + 1/2 steps, to even), NaN, ±inf,
// saturation, subnormals, every length up to 100 and large tensors on 1-3 threads.
TEST(QuantLinear, FastIsTheReferenceBitForBit) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-200.0f, 200.0f);
  std::uniform_int_distribution<int> i8(-128, 127);
  ThreadPool p2(2), p3(3);
  for (int trial = 0; trial < 120; ++trial) {
    const float scale = trial % 3 == 0 ? 0.5f : std::ldexp(1.0f + 0.37f * static_cast<float>(trial % 7), -(trial % 9));
    const int32_t zp = i8(rng);
    const int64_t n = trial < 100 ? trial : 50000 + trial;
    std::vector<float> x(static_cast<size_t>(n));
    for (size_t i = 0; i < x.size(); ++i) {
      switch (i % 9) {
        case 0: x[i] = (std::floor(u(rng)) + 0.5f) * scale; break;  // a tie
        case 1: x[i] = i % 2 ? NAN : -INFINITY; break;
        case 2: x[i] = i % 4 == 2 ? INFINITY : 1e-40f; break;
        default: x[i] = u(rng);
      }
    }
    std::vector<int8_t> want(x.size()), got(x.size());
    quantizeLinear(x.data(), n, scale, zp, want.data(), nullptr);
    std::vector<float> dwant(x.size()), dgot(x.size());
    dequantizeLinear(want.data(), n, scale, zp, dwant.data(), nullptr);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
      std::fill(got.begin(), got.end(), int8_t{99});
      quantizeLinearFast(x.data(), n, scale, zp, got.data(), pool);
      ASSERT_EQ(got, want) << "trial " << trial;
      std::fill(dgot.begin(), dgot.end(), 99.0f);
      dequantizeLinearFast(want.data(), n, scale, zp, dgot.data(), pool);
      ASSERT_TRUE(dgot.empty() || std::memcmp(dgot.data(), dwant.data(), dgot.size() * sizeof(float)) == 0) << "trial " << trial;
    }
  }
}

// MaxPool over int8 codes is the float MaxPool of the same values (an independent oracle: kernels::maxPool2d on the
// widened codes, padding ignored), and the fast form gives the same bytes: random windows (kernels 1-4, strides 1-3,
// dilations, pads on either side, widths past a vector), 1-3 threads.
TEST(QuantMaxPool, IsTheFloatMaxPoolOfTheCodesAndFastAgrees) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> i8(-128, 127), k(1, 4), st(1, 3), dl(1, 2), pad(0, 1);
  ThreadPool p2(2), p3(3);
  for (int trial = 0; trial < 150; ++trial) {
    Pool2dShape s;
    s.planes = 1 + trial % 5;
    s.ih = 1 + trial % 13, s.iw = trial < 100 ? 1 + trial % 37 : 60 + trial * 3;
    s.kh = k(rng), s.kw = k(rng), s.sh = st(rng), s.sw = trial % 3 == 0 ? 2 : st(rng), s.dh = dl(rng), s.dw = dl(rng);
    s.pt = std::min<int64_t>(pad(rng), s.kh - 1), s.pl = std::min<int64_t>(pad(rng), s.kw - 1);
    s.pb = std::min<int64_t>(pad(rng), s.kh - 1), s.pr = std::min<int64_t>(pad(rng), s.kw - 1);
    const int64_t sh = (s.kh - 1) * s.dh + 1, sw = (s.kw - 1) * s.dw + 1;
    if (s.ih + s.pt + s.pb < sh || s.iw + s.pl + s.pr < sw) continue;
    s.oh = (s.ih + s.pt + s.pb - sh) / s.sh + 1, s.ow = (s.iw + s.pl + s.pr - sw) / s.sw + 1;
    std::vector<int8_t> x(static_cast<size_t>(s.planes * s.ih * s.iw));
    for (auto& v : x) v = static_cast<int8_t>(i8(rng));
    std::vector<float> xf(x.begin(), x.end()), yf(static_cast<size_t>(s.planes * s.oh * s.ow));
    maxPool2d(s, xf.data(), yf.data(), nullptr);
    std::vector<int8_t> want(yf.size()), got(yf.size());
    maxPool2dI8(s, x.data(), want.data(), nullptr);
    for (size_t i = 0; i < yf.size(); ++i)  // (a window wholly in the padding: -inf in float, the lowest code in int8)
      ASSERT_EQ(static_cast<float>(want[i]), std::max(yf[i], -128.0f)) << "trial " << trial << " at " << i;
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
      std::fill(got.begin(), got.end(), int8_t{99});
      maxPool2dI8Fast(s, x.data(), got.data(), pool);
      ASSERT_EQ(got, want) << "trial " << trial;
    }
  }
}

// Stride-1 pools on planes narrower than 32 bytes (the AVX2 form pools each padded plane flat, 32 outputs at a
// time): every width 1..33, windows 1-3 (dilated too), pads 0-1, several planes and threads, against maxPool2dI8.
TEST(QuantMaxPool, NarrowStride1PlanesAgree) {
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> i8(-128, 127);
  ThreadPool p2(2), p3(3);
  for (int64_t w = 1; w <= 33; ++w)
    for (int64_t k = 1; k <= 3; ++k)
      for (int64_t d = 1; d <= 2; ++d) {
        Pool2dShape s;
        s.planes = 5, s.ih = 3 + w % 11, s.iw = w, s.kh = k, s.kw = 4 - k, s.sh = s.sw = 1, s.dh = d, s.dw = 3 - d;
        s.pt = std::min<int64_t>(w % 2, s.kh - 1), s.pl = std::min<int64_t>(1, s.kw - 1);
        s.pb = std::min<int64_t>(1, s.kh - 1), s.pr = std::min<int64_t>((w / 2) % 2, s.kw - 1);
        const int64_t eh = (s.kh - 1) * s.dh + 1, ew = (s.kw - 1) * s.dw + 1;
        if (s.ih + s.pt + s.pb < eh || s.iw + s.pl + s.pr < ew) continue;
        s.oh = s.ih + s.pt + s.pb - eh + 1, s.ow = s.iw + s.pl + s.pr - ew + 1;
        std::vector<int8_t> x(static_cast<size_t>(s.planes * s.ih * s.iw));
        for (auto& v : x) v = static_cast<int8_t>(i8(rng));
        std::vector<int8_t> want(static_cast<size_t>(s.planes * s.oh * s.ow)), got(want.size());
        maxPool2dI8(s, x.data(), want.data(), nullptr);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
          std::fill(got.begin(), got.end(), int8_t{99});
          maxPool2dI8Fast(s, x.data(), got.data(), pool);
          ASSERT_EQ(got, want) << "width " << w << " window " << s.kh << "x" << s.kw << " dilation " << s.dh << ","
                               << s.dw;
        }
      }
  // Pads that make output rows wider than the input's (31 + 2 + 2 - 2 = 33, 31 + 4 + 4 - 4 = 35 bytes): past what
  // the flat form copies out, so the rows go first.
  for (int64_t k : {3, 5}) {
    Pool2dShape s;
    s.planes = 3, s.ih = 9, s.iw = 31, s.kh = s.kw = k, s.sh = s.sw = 1, s.dh = s.dw = 1;
    s.pt = s.pl = s.pb = s.pr = k - 1;
    s.oh = s.ih + 2 * (k - 1) - k + 1, s.ow = s.iw + 2 * (k - 1) - k + 1;
    std::vector<int8_t> x(static_cast<size_t>(s.planes * s.ih * s.iw));
    for (auto& v : x) v = static_cast<int8_t>(i8(rng));
    std::vector<int8_t> want(static_cast<size_t>(s.planes * s.oh * s.ow)), got(want.size(), int8_t{99});
    maxPool2dI8(s, x.data(), want.data(), nullptr);
    maxPool2dI8Fast(s, x.data(), got.data(), &p2);
    ASSERT_EQ(got, want) << "window " << k << ", output rows of " << s.ow;
  }
}

// The int8 product of two activations is the real product of the operands' values rounded once (+ the second
// rounding's share) and clamped: for broadcast batches, zero points at both ends of the range, a factor below and
// above 1, each code against (sa sb / sy) * the exact integer sum in long double; parameters it cannot hold refused.
TEST(QuantMatMul, IsTheRealProductRoundedOnceAndClamped) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> i8(-128, 127);
  const double cases[][3] = {{0.02, 0.03, 0.5}, {0.1, 0.004, 0.01}, {0.5, 0.5, 0.002}};  // (the last: a factor > 1)
  const int32_t zps[][3] = {{-128, 127, 0}, {127, -128, -20}, {3, -5, 100}};
  for (int c = 0; c < 3; ++c) {
    MatMulBatches mb;
    std::string why;
    ASSERT_TRUE(matmulBatches({2, 1, 5, 7}, {1, 3, 7, 9}, {2, 3, 5, 9}, &mb, &why)) << why;
    const QMatMulParams p = qmatmulParams(cases[c][0], zps[c][0], cases[c][1], zps[c][1], cases[c][2], zps[c][2], 7, -120, 126);
    std::vector<int8_t> a(2 * 5 * 7), b(3 * 7 * 9), y(2 * 3 * 5 * 9);
    for (auto& v : a) v = static_cast<int8_t>(i8(rng));
    for (auto& v : b) v = static_cast<int8_t>(i8(rng));
    qmatmul_ref(mb, a.data(), b.data(), p, y.data());
    const long double factor = static_cast<long double>(multiplierValue(p.mul));
    EXPECT_NEAR(static_cast<double>(factor), cases[c][0] * cases[c][1] / cases[c][2], 1e-9 * cases[c][0] * cases[c][1] / cases[c][2]);
    for (int i0 = 0; i0 < 2; ++i0)
      for (int i1 = 0; i1 < 3; ++i1)
        for (int m = 0; m < 5; ++m)
          for (int n = 0; n < 9; ++n) {
            int64_t acc = 0;
            for (int k = 0; k < 7; ++k) acc += int64_t(a[(i0 * 5 + m) * 7 + k] - p.za) * (b[(i1 * 7 + k) * 9 + n] - p.zb);
            const long double real = p.zy + factor * static_cast<long double>(acc);
            const int got = y[((i0 * 3 + i1) * 5 + m) * 9 + n];
            if (real <= p.lo - 0.5L) ASSERT_EQ(got, p.lo);
            else if (real >= p.hi + 0.5L) ASSERT_EQ(got, p.hi);
            else ASSERT_LE(std::fabs(static_cast<long double>(got) - real), 0.5L + 1e-6L) << c << " " << m << " " << n;
          }
  }
  EXPECT_THROW(qmatmulParams(1.0, 0, 1.0, 0, 1.0, 0, kMaxQMatMulDepth + 1), std::invalid_argument);
  EXPECT_THROW(qmatmulParams(1.0, 0, 1.0, 0, 1.0, 0, 0), std::invalid_argument);
  EXPECT_THROW(qmatmulParams(1.0, 0, 0.0, 0, 1.0, 0, 4), std::invalid_argument);
  EXPECT_THROW(qmatmulParams(1.0, 0, 1.0, 0, INFINITY, 0, 4), std::invalid_argument);
  EXPECT_THROW(qmatmulParams(1e6, 0, 1e6, 0, 1e-6, 0, 4), std::invalid_argument);  // a factor of 2^30 or more
}

// The fast product gives the reference's bytes on every path this CPU has, 1-3 threads: random shapes (K not a
// multiple of 4, N past 64, M not a multiple of the row tile, broadcast batches), zero points, clamps, factors below
// and above 1; and at the largest depth with every term at its extreme (-255 * -255), where the VNNI form's partial
// sums wrap and its corrections are near 2^31.
TEST(QuantMatMul, FastIsTheReferenceBitForBit) {
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> i8(-128, 127);
  ThreadPool p2(2), p3(3);
  auto check = [&](const std::vector<int64_t>& as, const std::vector<int64_t>& bs, const QMatMulParams& p, bool extreme, const std::string& what) {
    std::vector<int64_t> ys(std::max(as.size(), bs.size()));
    for (size_t d = 0; d + 2 < ys.size(); ++d) {
      const size_t la = ys.size() - as.size(), lb = ys.size() - bs.size();
      const int64_t da = d >= la ? as[d - la] : 1, db = d >= lb ? bs[d - lb] : 1;
      ys[d] = std::max(da, db);
    }
    ys[ys.size() - 2] = as[as.size() - 2];
    ys.back() = bs.back();
    MatMulBatches mb;
    std::string why;
    ASSERT_TRUE(matmulBatches(as, bs, ys, &mb, &why)) << why;
    int64_t na = 1, nb = 1, ny = 1;
    for (int64_t d : as) na *= d;
    for (int64_t d : bs) nb *= d;
    for (int64_t d : ys) ny *= d;
    std::vector<int8_t> a(static_cast<size_t>(na)), b(static_cast<size_t>(nb)), want(static_cast<size_t>(ny)), got(want.size());
    for (auto& v : a) v = extreme ? int8_t{-128} : static_cast<int8_t>(i8(rng));
    for (auto& v : b) v = extreme ? int8_t{-128} : static_cast<int8_t>(i8(rng));
    qmatmul_ref(mb, a.data(), b.data(), p, want.data());
    for (QConvPath path : {QConvPath::kBaseline, QConvPath::kAvx2, QConvPath::kVnni, QConvPath::kAmx}) {
      if (!cpuHasQConvPath(path)) continue;
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p2, &p3}) {
        std::fill(got.begin(), got.end(), int8_t{99});
        qmatmul(mb, a.data(), b.data(), p, got.data(), pool, path);
        ASSERT_EQ(got, want) << what << ", path " << qconvPathName(path) << ", threads " << (pool ? pool->size() : 1);
      }
    }
  };
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t depths[] = {3, 4, 63, 64, 65, 128};  // (the quad and the 64-byte chunk tails, first)
    const int64_t M = 1 + rng() % 19, K = trial < 12 ? depths[trial % 6] : 1 + rng() % 70, N = 1 + rng() % (trial % 4 == 0 ? 150 : 40);
    std::vector<int64_t> as = {M, K}, bs = {K, N};
    if (trial % 3 == 1) as.insert(as.begin(), {2, 3}), bs.insert(bs.begin(), 3);
    if (trial % 3 == 2) as.insert(as.begin(), {1, 2}), bs.insert(bs.begin(), {3, 1});
    if (trial % 5 == 4) as.insert(as.begin(), {2, 3}), bs = {K, N};  // (one b for all 6 batches)
    const double sy = trial % 5 == 0 ? 1e-4 : 0.05 + 0.01 * (trial % 7);  // (1e-4: a factor above 1)
    QMatMulParams p = qmatmulParams(0.01, i8(rng), 0.02, i8(rng), sy, i8(rng), K);
    if (trial % 4 == 1) p.lo = std::clamp(p.zy, -128, 127);
    if (trial % 6 == 2) p.hi = std::min(127, p.lo + 50);
    check(as, bs, p, false, "trial " + std::to_string(trial));
  }
  // |acc| = 33025 * 255 * 255 = 2147450625: the largest sum there is.
  for (int64_t N : {1, 17}) {
    const QMatMulParams p = qmatmulParams(1.0, 127, 1.0, 127, 1e8, -3, kMaxQMatMulDepth);
    check({2, kMaxQMatMulDepth}, {kMaxQMatMulDepth, N}, p, true, "largest depth, N " + std::to_string(N));
  }
}

}  // namespace
}  // namespace npuc::kernels
