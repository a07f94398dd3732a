// Tests of the layer kernels (kernels/layers.hpp) against naive implementations written here: pooling (pads,
// dilation, ceil-mode output sizes, count_include_pad), global pooling, channel affine, LRN, softmax, every unary
// op against its formula, binary ops with broadcasting and fused activations, concat, transpose, constant pad and
// strided slice; and the same bytes for every thread count.
#include "kernels/gemm.hpp"
#include "kernels/expf.hpp"
#include "kernels/layers.hpp"

#include "support/error.hpp"
#include "support/fp16.hpp"
#include "support/thread_pool.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <iterator>
#include <numeric>
#include <string>

namespace npuc::kernels {
namespace {

using test::firstBitMismatch;
using test::randomFloats;

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> stridesOf(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

/// Row-major multi-index of flat position `pos`.
std::vector<int64_t> unravel(int64_t pos, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = pos % s[d];
    pos /= s[d];
  }
  return idx;
}

std::vector<uint8_t> randomBytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Thread pools for the invariance checks: none (serial), 1, 2 and 3 threads.
struct Pools {
  ThreadPool p1{1}, p2{2}, p3{3};
  std::vector<ThreadPool*> all() { return {nullptr, &p1, &p2, &p3}; }
};
Pools& pools() {
  static Pools p;
  return p;
}

// ---------------------------------------------------------------------------------------------------------
// Pooling.

int64_t poolOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil_mode) {
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
  if (ceil_mode && (o - 1) * s >= in + pb) --o;  // the last window must start inside the input or the left pad
  return o;
}

Pool2dShape poolShape(int64_t planes, int64_t ih, int64_t iw, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                      int64_t dh, int64_t dw, int64_t pt, int64_t pl, int64_t pb, int64_t pr, bool ceil_mode,
                      bool include_pad) {
  Pool2dShape s;
  s.planes = planes, s.ih = ih, s.iw = iw, s.kh = kh, s.kw = kw, s.sh = sh, s.sw = sw, s.dh = dh, s.dw = dw;
  s.pt = pt, s.pl = pl, s.pb = pb, s.pr = pr, s.count_include_pad = include_pad;
  s.oh = poolOut(ih, kh, sh, dh, pt, pb, ceil_mode);
  s.ow = poolOut(iw, kw, sw, dw, pl, pr, ceil_mode);
  return s;
}

/// Tap by tap per output, in row-major tap order.
std::vector<float> naivePool(const Pool2dShape& s, const std::vector<float>& x, bool is_max) {
  std::vector<float> y(static_cast<size_t>(s.planes * s.oh * s.ow));
  for (int64_t p = 0; p < s.planes; ++p)
    for (int64_t oh = 0; oh < s.oh; ++oh)
      for (int64_t ow = 0; ow < s.ow; ++ow) {
        float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
        int64_t cnt = 0;
        for (int64_t kh = 0; kh < s.kh; ++kh)
          for (int64_t kw = 0; kw < s.kw; ++kw) {
            const int64_t ih = oh * s.sh - s.pt + kh * s.dh, iw = ow * s.sw - s.pl + kw * s.dw;
            const bool inside = ih >= 0 && ih < s.ih && iw >= 0 && iw < s.iw;
            const bool padded = ih >= -s.pt && ih < s.ih + s.pb && iw >= -s.pl && iw < s.iw + s.pr;
            if (inside) {
              const float v = x[static_cast<size_t>((p * s.ih + ih) * s.iw + iw)];
              if (is_max) acc = v > acc ? v : acc;
              else acc += v;
            } else if (is_max && padded) {
              acc = s.pad_value > acc ? s.pad_value : acc;  // -inf and NaN never win
            }
            cnt += s.count_include_pad ? padded : inside;
          }
        y[static_cast<size_t>((p * s.oh + oh) * s.ow + ow)] =
            is_max ? acc : (cnt ? acc / static_cast<float>(cnt) : 0.0f);
      }
  return y;
}

// Layout::kBlocked8 of an [N·C, P] tensor (C a multiple of 8): plane i's position q at ((i / 8) * P + q) * 8 + i % 8.
std::vector<float> blocked8(const std::vector<float>& x, int64_t planes, int64_t p) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < planes; ++i)
    for (int64_t q = 0; q < p; ++q) y[static_cast<size_t>(((i / 8) * p + q) * 8 + i % 8)] = x[static_cast<size_t>(i * p + q)];
  return y;
}

// special: about one input in three becomes NaN, +-0, +-inf or a repeated value (ties: the first tap wins); max
// pools only (sums of NaNs and infinities need not keep one NaN's bits).
void checkPool(const Pool2dShape& s, uint32_t seed, bool special = false);

// A pool's random input (with special values when asked: checkPool).
std::vector<float> poolInput(const Pool2dShape& s, uint32_t seed, bool special) {
  std::mt19937 rng(seed);
  std::vector<float> x = randomFloats(rng, static_cast<size_t>(s.planes * s.ih * s.iw), -4.0f, 4.0f);
  if (special) {
    const float inf = std::numeric_limits<float>::infinity();
    const float values[] = {std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f, inf, -inf, 1.0f, 1.0f};
    for (float& v : x)
      if (rng() % 3 == 0) v = values[rng() % 7];
  }
  return x;
}

// The channel-blocked pools (pool2dBlocked8, the engine's chains): s over 16 planes (two blocks) in that layout, the
// naive pool's bits in every lane, every kernel ISA and thread count.
void checkPoolBlocked(Pool2dShape s, uint32_t seed, bool special) {
  s.planes = 16;
  const std::vector<float> x = poolInput(s, seed, special);
  const std::vector<float> xb = blocked8(x, s.planes, s.ih * s.iw);
  for (bool is_max : {true, false}) {
    if (special && !is_max) continue;
    const std::vector<float> want = blocked8(naivePool(s, x, is_max), s.planes, s.oh * s.ow);
    for (ThreadPool* pool : pools().all())
      for (const char* isa : {"avx512", "avx2", "portable"}) {
        const char* prev = forceKernelIsa(isa);
        std::vector<float> y(want.size(), 321.0f);
        pool2dBlocked8(s, is_max, xb.data(), y.data(), pool);
        forceKernelIsa(prev);
        EXPECT_EQ(firstBitMismatch(y, want), -1)
            << (is_max ? "max" : "avg") << " blocked " << s.ih << "x" << s.iw << " k" << s.kh << "x" << s.kw << " s"
            << s.sh << "," << s.sw << " d" << s.dh << "," << s.dw << " pads " << s.pt << "," << s.pl << "," << s.pb
            << "," << s.pr << " include_pad=" << s.count_include_pad << " pad_value=" << s.pad_value << " " << isa
            << " threads=" << (pool ? pool->size() : 0);
      }
  }
}

void checkPool(const Pool2dShape& s, uint32_t seed, bool special) {
  checkPoolBlocked(s, seed + 7919, special);
  const std::vector<float> x = poolInput(s, seed, special);
  for (bool is_max : {true, false}) {
    if (special && !is_max) continue;
    const std::vector<float> want = naivePool(s, x, is_max);
    for (ThreadPool* pool : pools().all()) {
      std::vector<float> y(want.size(), 123.0f);
      if (is_max) maxPool2d(s, x.data(), y.data(), pool);
      else avgPool2d(s, x.data(), y.data(), pool);
      const std::string what = std::string(is_max ? "max" : "avg") + " " + std::to_string(s.ih) + "x" +
                               std::to_string(s.iw) + " k" + std::to_string(s.kh) + "x" + std::to_string(s.kw) + " s" +
                               std::to_string(s.sh) + "," + std::to_string(s.sw) + " d" + std::to_string(s.dh) + "," +
                               std::to_string(s.dw) + " pads " + std::to_string(s.pt) + "," + std::to_string(s.pl) + "," +
                               std::to_string(s.pb) + "," + std::to_string(s.pr) +
                               " include_pad=" + std::to_string(s.count_include_pad) +
                               " threads=" + std::to_string(pool ? pool->size() : 0);
      EXPECT_EQ(firstBitMismatch(y, want), -1) << what;
      // The fast variants (the engine's and the simulator's fast mode): the same bits, every kernel ISA.
      for (const char* isa : {"avx512", "avx2", "portable"}) {
        const char* prev = forceKernelIsa(isa);
        std::vector<float> f(want.size(), 321.0f);
        if (is_max) maxPool2dFast(s, x.data(), f.data(), pool);
        else avgPool2dFast(s, x.data(), f.data(), pool);
        forceKernelIsa(prev);
        EXPECT_EQ(firstBitMismatch(f, want), -1) << what << " fast " << isa;
      }
      // float16 storage (fp16 packages): the reference over the widened input, rounded once.
      std::vector<uint16_t> xh(x.size()), want16(want.size()), got16(want.size(), 0x5555);
      std::vector<float> xw(x.size()), ref(want.size());
      for (size_t i = 0; i < x.size(); ++i) xh[i] = floatToHalf(x[i]);
      f16ToF32_ref(xh.data(), xw.data(), static_cast<int64_t>(x.size()));
      if (is_max) maxPool2d(s, xw.data(), ref.data(), nullptr);
      else avgPool2d(s, xw.data(), ref.data(), nullptr);
      f32ToF16_ref(ref.data(), want16.data(), static_cast<int64_t>(ref.size()), {});
      if (is_max) maxPool2dFast(s, xh.data(), Storage::kF16, got16.data(), Storage::kF16, pool);
      else avgPool2dFast(s, xh.data(), Storage::kF16, got16.data(), Storage::kF16, pool);
      EXPECT_TRUE(got16 == want16) << what << " float16";
    }
  }
}

TEST(LayersPool, HandComputed) {
  // 3x3 input, 2x2 window, stride 2, pads 1 on every side: windows cover 1, 2+3, 4+7, 5+6+8+9.
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  Pool2dShape s = poolShape(1, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, false, false);
  ASSERT_EQ(s.oh, 2);
  ASSERT_EQ(s.ow, 2);
  std::vector<float> y(4);
  avgPool2d(s, x.data(), y.data(), nullptr);
  EXPECT_EQ(y, (std::vector<float>{1.0f, 2.5f, 5.5f, 7.0f}));
  s.count_include_pad = true;
  avgPool2d(s, x.data(), y.data(), nullptr);
  EXPECT_EQ(y, (std::vector<float>{0.25f, 1.25f, 2.75f, 7.0f}));
  maxPool2d(s, x.data(), y.data(), nullptr);
  EXPECT_EQ(y, (std::vector<float>{1, 3, 7, 9}));
}

TEST(LayersPool, MatchesNaive) {
  uint32_t seed = 1;
  for (bool ceil_mode : {false, true})
    for (bool inc : {false, true}) {
      checkPool(poolShape(3, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 8, 8, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 9, 10, 3, 2, 2, 3, 1, 1, 1, 0, 2, 1, ceil_mode, inc), seed++);  // asymmetric pads
      checkPool(poolShape(2, 11, 12, 3, 3, 2, 2, 2, 2, 2, 1, 1, 2, ceil_mode, inc), seed++);  // dilation
      checkPool(poolShape(1, 5, 6, 3, 3, 3, 3, 1, 1, 0, 0, 0, 0, ceil_mode, inc), seed++);  // ceil adds a window
      checkPool(poolShape(4, 1, 17, 1, 4, 1, 3, 1, 1, 0, 2, 0, 1, ceil_mode, inc), seed++);  // 1-D (H = 1)
      checkPool(poolShape(2, 6, 6, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, ceil_mode, inc), seed++);  // global-sized window
      checkPool(poolShape(1, 4, 4, 2, 2, 1, 1, 2, 2, 0, 0, 4, 4, ceil_mode, inc), seed++);  // windows past the input
      // Rows of several vectors (the fast variants' full vectors and tails): GoogLeNet's 3x3 stride 2 and 3x3
      // stride 1 pad 1, a wide stride 3, a 2x2 stride 2.
      checkPool(poolShape(3, 13, 57, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 9, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 7, 50, 3, 5, 3, 3, 1, 1, 1, 2, 1, 2, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 8, 34, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 9, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, ceil_mode, inc), seed++);  // odd left pad, stride 2
      checkPool(poolShape(1, 5, 40, 2, 3, 1, 2, 1, 2, 0, 3, 0, 1, ceil_mode, inc), seed++);  // dilated taps, stride 2
      // Three columns at stride 2, read in place: dilated rows at row stride 1; a row narrower than one block.
      checkPool(poolShape(2, 12, 41, 3, 3, 1, 2, 2, 1, 2, 1, 0, 2, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 7, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, ceil_mode, inc), seed++);
      // Two columns at stride 2, in place: a left pad with an odd row; row stride 1.
      checkPool(poolShape(2, 9, 37, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 8, 40, 2, 2, 1, 2, 1, 1, 0, 1, 0, 1, ceil_mode, inc), seed++);
      // Stride-1 columns, in place (four output rows at a time inside the input, one at a time at its edges):
      // tiny-YOLOv2's 2x2 with end pads, tall planes of several vectors, row stride 2 with dilated taps, the
      // widest window taken in place (8 columns) and one past it (the AVX2 kernel).
      checkPool(poolShape(3, 13, 13, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 23, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 19, 37, 3, 5, 2, 1, 2, 2, 1, 3, 2, 2, ceil_mode, inc), seed++);
      checkPool(poolShape(1, 12, 45, 2, 8, 1, 1, 1, 1, 0, 4, 1, 3, ceil_mode, inc), seed++);
      checkPool(poolShape(1, 6, 45, 2, 9, 1, 1, 1, 1, 0, 4, 0, 4, ceil_mode, inc), seed++);
      // Rows whose vectors reach past both ends (the AVX2 kernels' 8 lanes): GoogLeNet's 14x14 branch pools, rows
      // narrower than a vector at strides 1 and 2.
      checkPool(poolShape(2, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 7, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, ceil_mode, inc), seed++);
      checkPool(poolShape(2, 14, 14, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, ceil_mode, inc), seed++);
    }
}

TEST(LayersPool, SpecialValuesMatchNaive) {
  // NaNs, signed zeros, infinities and ties through every window kind of the fast kernels, above all the
  // stride-2 max pools that fold each window row first (AVX-512).
  uint32_t seed = 300;
  for (bool ceil_mode : {false, true}) {
    checkPool(poolShape(3, 13, 57, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, ceil_mode, false), seed++, true);
    checkPool(poolShape(2, 9, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, ceil_mode, false), seed++, true);
    checkPool(poolShape(2, 8, 34, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, ceil_mode, false), seed++, true);
    checkPool(poolShape(2, 12, 41, 3, 3, 1, 2, 2, 1, 2, 1, 0, 2, ceil_mode, false), seed++, true);
    checkPool(poolShape(2, 9, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, ceil_mode, false), seed++, true);
    checkPool(poolShape(2, 5, 70, 3, 3, 2, 2, 1, 1, 1, 2, 1, 2, ceil_mode, false), seed++, true);
    checkPool(poolShape(2, 9, 37, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, ceil_mode, false), seed++, true);
    checkPool(poolShape(2, 23, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, ceil_mode, false), seed++, true);
    checkPool(poolShape(3, 13, 13, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, ceil_mode, false), seed++, true);
  }
}

TEST(LayersPool, PadValueMatchesNaive) {
  uint32_t seed = 100;
  for (float pv : {0.0f, 0.5f, -3.0f, 10.0f, std::numeric_limits<float>::quiet_NaN()}) {
    Pool2dShape s = poolShape(3, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false);
    s.pad_value = pv;
    checkPool(s, seed++);
    checkPool(s, seed++, true);  // NaN, +-0, +-inf inputs beside the pad value (0 against -0: the order decides)
    s = poolShape(2, 11, 12, 3, 3, 2, 2, 2, 2, 2, 1, 1, 2, true, false);
    s.pad_value = pv;
    checkPool(s, seed++);
    s = poolShape(4, 1, 17, 1, 4, 1, 3, 1, 1, 0, 2, 0, 1, false, false);  // 1-D
    s.pad_value = pv;
    checkPool(s, seed++);
  }
}

// MaxPool with pad_value v over x is MaxPool without pads over x padded with v, bit for bit (signed zeros
// included: the first of equal taps in row-major order wins).
TEST(LayersPool, PadValueEqualsExplicitPad) {
  std::mt19937 rng(99);
  const int64_t planes = 3, H = 6, W = 7, pt = 1, pl = 2, pb = 2, pr = 1;
  std::vector<float> x(static_cast<size_t>(planes * H * W));
  const float choices[] = {0.0f, -0.0f, -1.0f, 1.0f, -0.5f};
  for (auto& v : x) v = choices[rng() % 5];
  const int64_t PH = H + pt + pb, PW = W + pl + pr;
  for (float pv : {0.0f, -0.0f, -1.0f, 0.25f}) {
    std::vector<float> xp(static_cast<size_t>(planes * PH * PW), pv);
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          xp[static_cast<size_t>((p * PH + h + pt) * PW + w + pl)] = x[static_cast<size_t>((p * H + h) * W + w)];
    for (int64_t k : {2, 3})
      for (int64_t st : {1, 2})
        for (int64_t d : {1, 2}) {
          Pool2dShape fused = poolShape(planes, H, W, k, k, st, st, d, d, pt, pl, pb, pr, false, false);
          fused.pad_value = pv;
          const Pool2dShape plain = poolShape(planes, PH, PW, k, k, st, st, d, d, 0, 0, 0, 0, false, false);
          ASSERT_EQ(fused.oh, plain.oh);
          ASSERT_EQ(fused.ow, plain.ow);
          std::vector<float> y1(static_cast<size_t>(planes * plain.oh * plain.ow)), y2(y1.size());
          maxPool2d(fused, x.data(), y1.data(), &pools().p3);
          maxPool2d(plain, xp.data(), y2.data(), nullptr);
          EXPECT_EQ(firstBitMismatch(y1, y2), -1) << "pad " << pv << " k " << k << " s " << st << " d " << d;
        }
  }
}

// The fast variants keep the reference's answer on NaN (never wins), infinities and signed zeros (the first of
// equal taps in row-major order wins), with -inf padding for max and +0 padding for sums.
TEST(LayersPool, FastSpecialValues) {
  std::mt19937 rng(5);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float choices[] = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan};
  for (int64_t st : {1, 2}) {
    const Pool2dShape s = poolShape(3, 11, 23, 3, 3, st, st, 1, 1, 1, 1, 1, 1, st == 2, false);
    std::vector<float> x(static_cast<size_t>(s.planes * s.ih * s.iw));
    for (auto& v : x) v = choices[rng() % 7];
    for (bool is_max : {true, false}) {
      std::vector<float> want(static_cast<size_t>(s.planes * s.oh * s.ow)), got(want.size());
      (is_max ? maxPool2d : avgPool2d)(s, x.data(), want.data(), nullptr);
      for (const char* isa : {"avx512", "avx2", "portable"}) {
        const char* prev = forceKernelIsa(isa);
        if (is_max) maxPool2dFast(s, x.data(), got.data(), &pools().p2);
        else avgPool2dFast(s, x.data(), got.data(), &pools().p2);
        forceKernelIsa(prev);
        // A NaN result's sign and payload are not specified (docs/numerics.md): NaN where the reference has NaN.
        for (size_t i = 0; i < want.size(); ++i)
          if (std::isnan(want[i]) && std::isnan(got[i])) got[i] = want[i];
        EXPECT_EQ(firstBitMismatch(got, want), -1) << (is_max ? "max" : "avg") << " stride " << st << " " << isa;
      }
    }
  }
}

TEST(LayersPool, GlobalMatchesNaive) {
  std::mt19937 rng(7);
  for (int64_t size : {1, 5, 49, 1000}) {
    const int64_t planes = 6;
    std::vector<float> x = randomFloats(rng, static_cast<size_t>(planes * size));
    std::vector<float> mx(static_cast<size_t>(planes)), av(mx.size());
    for (int64_t p = 0; p < planes; ++p) {
      float m = -std::numeric_limits<float>::infinity(), s = 0.0f;
      for (int64_t i = 0; i < size; ++i) {
        const float v = x[static_cast<size_t>(p * size + i)];
        m = v > m ? v : m;
        s += v;
      }
      mx[static_cast<size_t>(p)] = m;
      av[static_cast<size_t>(p)] = s / static_cast<float>(size);
    }
    for (ThreadPool* pool : pools().all()) {
      std::vector<float> y(mx.size());
      globalMaxPool(planes, size, x.data(), y.data(), pool);
      EXPECT_EQ(firstBitMismatch(y, mx), -1) << size;
      globalAvgPool(planes, size, x.data(), y.data(), pool);
      EXPECT_EQ(firstBitMismatch(y, av), -1) << size;
    }
    // Channel-blocked (globalPoolBlocked8): 16 planes, each lane reduced as its plane.
    std::vector<float> x16 = randomFloats(rng, static_cast<size_t>(16 * size));
    x16[3] = std::numeric_limits<float>::quiet_NaN(), x16[x16.size() - 1] = -0.0f;
    std::vector<float> mx16(16), av16(16);
    globalMaxPool(16, size, x16.data(), mx16.data(), nullptr);
    globalAvgPool(16, size, x16.data(), av16.data(), nullptr);
    const std::vector<float> xb = blocked8(x16, 16, size);
    for (ThreadPool* pool : pools().all())
      for (const char* isa : {"avx512", "avx2", "portable"}) {
        const char* prev = forceKernelIsa(isa);
        std::vector<float> y(16, 5.0f);
        globalPoolBlocked8(true, 16, size, xb.data(), y.data(), pool);
        EXPECT_EQ(firstBitMismatch(y, mx16), -1) << size << " blocked max " << isa;
        globalPoolBlocked8(false, 16, size, xb.data(), y.data(), pool);
        EXPECT_EQ(firstBitMismatch(y, av16), -1) << size << " blocked avg " << isa;
        forceKernelIsa(prev);
      }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Normalisation and softmax.

TEST(LayersNorm, ChannelAffine) {
  std::mt19937 rng(11);
  const int64_t n = 2, c = 5, inner = 37;
  std::vector<float> x = randomFloats(rng, static_cast<size_t>(n * c * inner), -3.0f, 3.0f);
  std::vector<float> a = randomFloats(rng, static_cast<size_t>(c)), b = randomFloats(rng, static_cast<size_t>(c));
  std::vector<float> want(x.size());
  for (int64_t i = 0; i < n * c * inner; ++i) {
    const size_t ch = static_cast<size_t>((i / inner) % c);
    const float prod = x[static_cast<size_t>(i)] * a[ch];  // rounded before the add (no fma)
    want[static_cast<size_t>(i)] = prod + b[ch];
  }
  std::vector<float> y(x.size());
  channelAffine(n, c, inner, x.data(), a.data(), b.data(), y.data(), nullptr);
  EXPECT_EQ(firstBitMismatch(y, want), -1);
}

TEST(LayersNorm, Lrn) {
  std::mt19937 rng(12);
  for (int64_t size : {1, 2, 3, 5}) {
    const int64_t n = 2, c = 7, inner = 6;
    const float alpha = 1e-2f, beta = 0.75f, bias = 1.5f;
    std::vector<float> x = randomFloats(rng, static_cast<size_t>(n * c * inner), -5.0f, 5.0f);
    std::vector<float> want(x.size());
    const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < inner; ++i) {
          double s = 0;
          for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min(c - 1, ch + hi); ++k) {
            const double v = x[static_cast<size_t>((b * c + k) * inner + i)];
            s += v * v;
          }
          const size_t o = static_cast<size_t>((b * c + ch) * inner + i);
          want[o] = static_cast<float>(x[o] / std::pow(static_cast<double>(bias) + static_cast<double>(alpha) /
                                                                                     static_cast<double>(size) * s,
                                                       static_cast<double>(beta)));
        }
    std::vector<float> y(x.size());
    lrn(n, c, inner, size, alpha, beta, bias, x.data(), y.data(), nullptr);
    EXPECT_EQ(firstBitMismatch(y, want), -1) << "size " << size;
  }
}

/// e^x correctly rounded to float, from long double's exp (64-bit significand: its own rounding cannot move a
/// float rounding but within ~2^-40 of a midpoint). Softmax's exp (expF32) is specified to be this.
float crExp(float x) { return static_cast<float>(std::exp(static_cast<long double>(x))); }

std::vector<float> naiveSoftmax(SoftmaxKind kind, int64_t outer, int64_t len, int64_t inner,
                                const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return static_cast<size_t>((o * len + i) * inner + j); };
      float m = -std::numeric_limits<float>::infinity();
      int64_t am = 0;
      for (int64_t i = 0; i < len; ++i)
        if (x[at(i)] > m) m = x[at(i)], am = i;
      float sum = 0.0f;
      for (int64_t i = 0; i < len; ++i) sum += kind == SoftmaxKind::kSoftmax ? crExp(x[at(i)] - m) : std::exp(x[at(i)] - m);
      for (int64_t i = 0; i < len; ++i) {
        if (kind == SoftmaxKind::kHardmax) y[at(i)] = i == am ? 1.0f : 0.0f;
        else if (kind == SoftmaxKind::kLogSoftmax) y[at(i)] = x[at(i)] - m - std::log(sum);
        else y[at(i)] = crExp(x[at(i)] - m) / sum;
      }
    }
  return y;
}

/// Every 4099th float bit pattern in [lo, hi] (and the NaNs among them when `nans`): a dense sample of every binade.
std::vector<float> sampledFloats(float lo, float hi, bool nans) {
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 4099) {
    float v;
    const uint32_t u = static_cast<uint32_t>(b);
    std::memcpy(&v, &u, 4);
    if ((nans && std::isnan(v)) || (v >= lo && v <= hi)) x.push_back(v);
  }
  return x;
}

// Softmax's exp (kernels/expf.hpp) is e^x correctly rounded to float over a dense sample of every float in
// [-160, 90] (each 4099th bit pattern, and the ends of the range: overflow to +inf past ln FLT_MAX, denormal results,
// 0 below), +-inf and NaN kept; and expF32Fast (AVX-512 where the CPU has it) gives its bits for each of them, at every
// offset of a vector.
TEST(LayersSoftmax, ExpIsCorrectlyRoundedAndTheFastFormIsItsBits) {
  std::vector<float> x = sampledFloats(-160.0f, 90.0f, false);
  for (float v : {88.72283f, 88.722839f, 88.72284f, 89.0f, 89.0001f, -87.33655f, -103.9f, -103.972f, -104.0f, -149.9f, -150.0f,
                  -150.01f, 0.0f, -0.0f, 1e-30f, -1e-30f, 1.0f})
    x.push_back(v);
  for (float v : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  int64_t wrong = 0;
  for (float v : x) {
    const float got = expF32(v);
    if (std::isnan(v)) {
      EXPECT_EQ(std::memcmp(&got, &v, 4), 0);
      continue;
    }
    const float want = v < -160.0f ? 0.0f : crExp(v);
    if (std::memcmp(&got, &want, 4) != 0 && ++wrong < 5) ADD_FAILURE() << "expF32(" << v << ") = " << got << ", e^x rounds to " << want;
  }
  EXPECT_EQ(wrong, 0) << "of " << x.size();
  if (!__builtin_cpu_supports("avx512bw")) GTEST_SKIP() << "no AVX-512 here: expF32Fast is the scalar loop";
  for (size_t off = 0; off < 16; ++off) {
    const std::vector<float> in(x.begin() + static_cast<std::ptrdiff_t>(off), x.end());
    std::vector<float> fast(in.size()), ref(in.size());
    expF32Fast(in.data(), fast.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); ++i) ref[i] = expF32(in[i]);
    ASSERT_EQ(firstBitMismatch(fast, ref), -1) << "offset " << off;
  }
}

// The fast softmax (the last axis: AVX-512 rows where the CPU has them) gives softmax's bits: rows of 1 to 300
// (tails of every length), row groups that do not fill its 8, rows with -inf entries, a row all -inf, one with a
// NaN (NaN outputs), one whose largest values are +0 and -0, large and tiny values, 1-3 threads; other axes and kinds
// take the reference.
TEST(LayersSoftmax, FastIsTheReferenceBitForBit) {
  if (!__builtin_cpu_supports("avx512bw")) GTEST_SKIP() << "no AVX-512 here: softmaxFast is the reference";
  std::mt19937 rng(31);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t outer = 1 + static_cast<int64_t>(rng() % 21), len = trial < 20 ? 1 + trial : 1 + static_cast<int64_t>(rng() % 300);
    const int64_t inner = trial % 9 == 8 ? 3 : 1;
    std::vector<float> x = randomFloats(rng, static_cast<size_t>(outer * len * inner), trial % 3 == 0 ? -90.0f : -8.0f, trial % 3 == 0 ? 90.0f : 8.0f);
    if (trial % 4 == 1) x[x.size() / 2] = -std::numeric_limits<float>::infinity();
    if (trial % 5 == 2 && outer > 1) std::fill(x.begin(), x.begin() + len * inner, -std::numeric_limits<float>::infinity());
    if (trial % 7 == 3) x.back() = std::numeric_limits<float>::quiet_NaN();
    if (trial % 6 == 5)  // a row whose largest values are zeros of both signs
      for (int64_t i = 0; i < len * inner; ++i) x[static_cast<size_t>(i)] = i % 3 == 0 ? -0.0f : i % 3 == 1 ? 0.0f : -1.5f;
    for (SoftmaxKind kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax}) {
      std::vector<float> want(x.size()), got(x.size());
      softmax(kind, outer, len, inner, x.data(), want.data(), nullptr);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p2, &pools().p3}) {
        std::fill(got.begin(), got.end(), 7.0f);
        softmaxFast(kind, outer, len, inner, x.data(), got.data(), pool);
        ASSERT_EQ(firstBitMismatch(got, want), -1) << "trial " << trial << ", " << outer << "x" << len << "x" << inner;
      }
    }
  }
}

TEST(LayersSoftmax, RowsMatchNaive) {
  std::mt19937 rng(13);
  struct Case { int64_t outer, len, inner; };
  for (Case cs : {Case{4, 10, 1}, Case{3, 7, 5}, Case{2, 9, 70}, Case{1, 1, 3}, Case{5, 130, 1}}) {
    std::vector<float> x = randomFloats(rng, static_cast<size_t>(cs.outer * cs.len * cs.inner), -8.0f, 8.0f);
    if (cs.len > 3) x[2 * static_cast<size_t>(cs.inner)] = x[0] = 20.0f;  // a tie: Hardmax takes the first
    for (SoftmaxKind kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax, SoftmaxKind::kHardmax}) {
      const std::vector<float> want = naiveSoftmax(kind, cs.outer, cs.len, cs.inner, x);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p3}) {
        std::vector<float> y(x.size());
        softmax(kind, cs.outer, cs.len, cs.inner, x.data(), y.data(), pool);
        EXPECT_EQ(firstBitMismatch(y, want), -1)
            << "kind " << static_cast<int>(kind) << " " << cs.outer << "x" << cs.len << "x" << cs.inner;
      }
    }
    // Softmax rows sum to one.
    std::vector<float> y(x.size());
    softmax(SoftmaxKind::kSoftmax, cs.outer, cs.len, cs.inner, x.data(), y.data(), nullptr);
    for (int64_t o = 0; o < cs.outer; ++o)
      for (int64_t j = 0; j < cs.inner; ++j) {
        double s = 0;
        for (int64_t i = 0; i < cs.len; ++i) s += y[static_cast<size_t>((o * cs.len + i) * cs.inner + j)];
        EXPECT_NEAR(s, 1.0, 1e-5);
      }
  }
  // In place.
  std::vector<float> x = randomFloats(rng, 60), y(60);
  softmax(SoftmaxKind::kSoftmax, 3, 4, 5, x.data(), y.data(), nullptr);
  softmax(SoftmaxKind::kSoftmax, 3, 4, 5, x.data(), x.data(), nullptr);
  EXPECT_EQ(firstBitMismatch(x, y), -1);
}

// ---------------------------------------------------------------------------------------------------------
// Unary ops.

double sigmoidLibm(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }

/// npuc's e^t − 1 (kernels/expf.hpp's expm1D) written out again: the reduction by ln 2 in two parts, the Taylor
/// polynomial of e^r − 1 to degree 13, then 2^k·(1 + q) − 1 as (2^k − 1) + 2^k·q.
double expm1Ref(double t) {
  const double k = std::nearbyint(t * 0x1.71547652b82fep+0);
  const double r = (t - k * 0x1.62e42fefa3800p-1) - k * 0x1.ef35793c76730p-45;
  double p = 1.0 / 6227020800.0;  // 1/13!
  for (int n = 12; n >= 1; --n) {
    double f = 1;
    for (int i = 2; i <= n; ++i) f *= i;
    p = p * r + 1.0 / f;
  }
  const double s = std::ldexp(1.0, static_cast<int>(k));
  return (s - 1.0) + s * (p * r);
}
float sigmoidRef(float x) {
  if (std::isnan(x)) return x;
  return x > 40 ? 1.0f : x < -110 ? 0.0f : static_cast<float>(1.0 / (2.0 + expm1Ref(-static_cast<double>(x))));
}
float tanhRef(float x) {
  if (std::isnan(x) || x == 0) return x;
  if (std::fabs(x) > 10) return std::copysign(1.0f, x);
  const double e = expm1Ref(2.0 * x);
  return static_cast<float>(e / (e + 2.0));
}
double softplusRef(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }

/// The formula of each op, written out (alpha / beta: the ONNX attributes).
float unaryFormula(UnaryOp op, float x, float alpha, float beta) {
  const double d = x, a = alpha, b = beta;
  switch (op) {
    case UnaryOp::kRelu: return x < 0.0f ? 0.0f : x;
    case UnaryOp::kLeakyRelu: return x < 0.0f ? static_cast<float>(a * d) : x;
    case UnaryOp::kClip: return x < alpha ? alpha : (x > beta ? beta : x);
    case UnaryOp::kSigmoid: return sigmoidRef(x);
    case UnaryOp::kTanh: return tanhRef(x);
    case UnaryOp::kHardSigmoid: return static_cast<float>(std::clamp(a * d + b, 0.0, 1.0));
    case UnaryOp::kHardSwish: return static_cast<float>(d * std::clamp(d / 6.0 + 0.5, 0.0, 1.0));
    case UnaryOp::kSwish: {
      const float sg = sigmoidRef(x);  // Sigmoid, then Mul, each in float
      return x * sg;
    }
    case UnaryOp::kMish: {
      const float sp = static_cast<float>(softplusRef(d));  // Softplus, Tanh, Mul, each rounded to float
      const float th = static_cast<float>(std::tanh(static_cast<double>(sp)));
      return x * th;
    }
    case UnaryOp::kElu: return static_cast<float>(d < 0 ? a * (std::exp(d) - 1.0) : d);
    case UnaryOp::kSelu: return static_cast<float>(d <= 0 ? b * (a * std::exp(d) - a) : b * d);
    case UnaryOp::kCelu: return static_cast<float>(std::max(0.0, d) + std::min(0.0, a * (std::exp(d / a) - 1.0)));
    case UnaryOp::kSoftplus: return static_cast<float>(softplusRef(d));
    case UnaryOp::kSoftsign: return static_cast<float>(d / (1.0 + std::fabs(d)));
    case UnaryOp::kExp: return static_cast<float>(std::exp(d));
    case UnaryOp::kLog: return static_cast<float>(std::log(d));
    case UnaryOp::kSqrt: return static_cast<float>(std::sqrt(d));
    case UnaryOp::kReciprocal: return static_cast<float>(1.0 / d);
    case UnaryOp::kAbs: return x < 0.0f ? -x : x;
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kErf: return static_cast<float>(std::erf(d));
    case UnaryOp::kFloor: return std::floor(x);
    case UnaryOp::kCeil: return std::ceil(x);
    case UnaryOp::kRound: return static_cast<float>(std::nearbyint(d));
    case UnaryOp::kIdentity: return x;
    case UnaryOp::kSin: return static_cast<float>(std::sin(d));
    case UnaryOp::kCos: return static_cast<float>(std::cos(d));
    case UnaryOp::kTan: return static_cast<float>(std::tan(d));
    case UnaryOp::kAsin: return static_cast<float>(std::asin(d));
    case UnaryOp::kAcos: return static_cast<float>(std::acos(d));
    case UnaryOp::kAtan: return static_cast<float>(std::atan(d));
    case UnaryOp::kSinh: return static_cast<float>(std::sinh(d));
    case UnaryOp::kCosh: return static_cast<float>(std::cosh(d));
    case UnaryOp::kAsinh: return static_cast<float>(std::asinh(d));
    case UnaryOp::kAcosh: return static_cast<float>(std::acosh(d));
    case UnaryOp::kAtanh: return static_cast<float>(std::atanh(d));
    case UnaryOp::kSign: return std::isnan(x) ? x : x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    case UnaryOp::kThresholdedRelu: return x > alpha ? x : 0.0f;
    case UnaryOp::kShrink: return static_cast<float>(d < -b ? d + a : (d > b ? d - a : 0.0));
    case UnaryOp::kCount: break;
  }
  return std::numeric_limits<float>::quiet_NaN();
}

std::pair<float, float> unaryAttrs(UnaryOp op) {
  switch (op) {
    case UnaryOp::kLeakyRelu: return {0.01f, 0.0f};
    case UnaryOp::kClip: return {-0.5f, 2.0f};
    case UnaryOp::kHardSigmoid: return {0.2f, 0.5f};
    case UnaryOp::kElu: return {0.7f, 0.0f};
    case UnaryOp::kCelu: return {1.3f, 0.0f};
    case UnaryOp::kSelu: return {1.67326319217681884765625f, 1.05070102214813232421875f};
    case UnaryOp::kThresholdedRelu: return {1.0f, 0.0f};
    case UnaryOp::kShrink: return {0.25f, 1.5f};  // bias, lambd
    default: return {0.0f, 0.0f};
  }
}

TEST(LayersUnary, NamesRoundTrip) {
  const char* names[] = {"Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Swish", "Mish",
                         "Elu", "Selu", "Celu", "Softplus", "Softsign", "Exp", "Log", "Sqrt", "Reciprocal", "Abs",
                         "Neg", "Erf", "Floor", "Ceil", "Round", "Identity", "Sin", "Cos", "Tan", "Asin", "Acos",
                         "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Sign", "ThresholdedRelu", "Shrink"};
  ASSERT_EQ(std::size(names), static_cast<size_t>(UnaryOp::kCount));
  for (size_t i = 0; i < std::size(names); ++i) {
    EXPECT_EQ(unaryOpFromName(names[i]), static_cast<UnaryOp>(i)) << names[i];
    EXPECT_STREQ(unaryOpName(static_cast<UnaryOp>(i)), names[i]);
  }
  EXPECT_EQ(unaryOpFromName("Softmax"), UnaryOp::kCount);
  EXPECT_EQ(unaryOpFromName("relu"), UnaryOp::kCount);
}

// npuc's Sigmoid and Tanh (their own exponential, so vector forms can give their bits) against the C library's:
// within one float ulp everywhere, equal almost everywhere (every float in [-12, 12] at a step of 2^-12, and
// every power of two from 2^-149 to 2^6 with either sign).
TEST(LayersUnary, SigmoidAndTanhAreWithinAnUlpOfLibm) {
  std::vector<float> xs;
  for (int i = -12 * 4096; i <= 12 * 4096; ++i) xs.push_back(static_cast<float>(i) / 4096.0f);
  for (int e = -149; e <= 6; ++e) xs.push_back(std::ldexp(1.0f, e)), xs.push_back(-std::ldexp(1.0f, e));
  for (float v : {-120.0f, -109.0f, -100.0f, -88.0f, 39.5f, 45.0f, 9.9f, -9.9f}) xs.push_back(v);
  int64_t differ = 0;
  for (float x : xs) {
    const float libm[2] = {static_cast<float>(sigmoidLibm(x)), static_cast<float>(std::tanh(static_cast<double>(x)))};
    const float ours[2] = {unaryScalar(UnaryOp::kSigmoid, x, 0, 0), unaryScalar(UnaryOp::kTanh, x, 0, 0)};
    for (int k = 0; k < 2; ++k) {
      const float up = std::nextafter(libm[k], INFINITY), down = std::nextafter(libm[k], -INFINITY);
      EXPECT_TRUE(ours[k] == libm[k] || ours[k] == up || ours[k] == down) << (k ? "Tanh(" : "Sigmoid(") << x << ")";
      differ += !sameBits(ours[k], libm[k]);
    }
  }
  EXPECT_LT(differ, static_cast<int64_t>(xs.size()) / 1000) << differ << " of " << 2 * xs.size() << " differ by an ulp";
}

// sigmoidFast / tanhFast (AVX-512 or AVX2 where the CPU has them, each forced in turn) give unaryScalar's bits: every 4099th bit pattern of the
// floats in [-130, 130] (both clamps, denormals, ±0), ±inf and NaNs, at every offset of a vector (the tails).
TEST(LayersUnary, FastSigmoidAndTanhAreTheirBits) {
  std::vector<float> x = sampledFloats(-130.0f, 130.0f, true);
  for (float v : {0.0f, -0.0f, 40.0f, 40.000004f, -110.0f, -110.00001f, 10.0f, -10.0f, 10.000001f, 1e-45f, -1e-45f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
    x.push_back(v);
  for (const char* isa : {"portable", "avx2", "avx512"})  // (each form the CPU has: a wider one is capped to it)
    for (UnaryOp op : {UnaryOp::kSigmoid, UnaryOp::kTanh})
      for (size_t off = 0; off < 8; ++off) {
        const std::vector<float> in(x.begin() + static_cast<std::ptrdiff_t>(off), x.end());
        std::vector<float> fast(in.size()), ref(in.size());
        const char* prev = forceKernelIsa(isa);
        (op == UnaryOp::kSigmoid ? sigmoidFast : tanhFast)(in.data(), fast.data(), static_cast<int64_t>(in.size()));
        forceKernelIsa(prev);
        for (size_t i = 0; i < in.size(); ++i) ref[i] = unaryScalar(op, in[i], 0, 0);
        ASSERT_EQ(firstBitMismatch(fast, ref), -1) << unaryOpName(op) << " " << isa << " offset " << off;
      }
  // unaryFast (the engine's and the fast simulator's layer): unary's bits for these and Swish, on 1 and 3 threads.
  for (UnaryOp op : {UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kSwish, UnaryOp::kRelu})
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p3}) {
      std::vector<float> fast(x.size()), ref(x.size());
      unaryFast(op, 0, 0, static_cast<int64_t>(x.size()), x.data(), fast.data(), pool);
      unary(op, 0, 0, static_cast<int64_t>(x.size()), x.data(), ref.data(), nullptr);
      ASSERT_EQ(firstBitMismatch(fast, ref), -1) << unaryOpName(op);
    }
}

// unaryFast's HardSwish (x / 6 taken as x · (1 / 6), in double) gives unary's bits for every float of magnitude up to 8
// — all those bit patterns, both signs, in blocks of 2^20 (both clamps' edges, ±3, inside; beyond, the clamp is 0 or 1
// either way) — and on a sample of the rest with ±inf and NaNs (the proof that the reciprocal changes no result; a
// few seconds). HardSigmoid (ONNX's default alpha 0.2, beta 0.5, and MobileNetV3's 1/6, 1/2) on the sample.
TEST(LayersUnary, FastHardSwishAndHardSigmoidAreTheirBits) {
  constexpr int64_t kBlock = int64_t{1} << 20;
  std::vector<float> x(kBlock), fast(kBlock), ref(kBlock);
  std::vector<std::string> forms;  // the distinct tables this CPU has among AVX-512 and AVX2
  for (const char* isa : {"avx512", "avx2"}) {
    const char* prev = forceKernelIsa(isa);
    if (std::find(forms.begin(), forms.end(), sgemmVariant()) == forms.end()) forms.push_back(sgemmVariant());
    forceKernelIsa(prev);
  }
  for (const std::string& form : forms)
    for (const uint32_t sign : {0u, 0x80000000u})
      for (int64_t base = 0; base <= 0x41000000; base += kBlock) {  // (0x41000000: 8.0f)
        for (int64_t i = 0; i < kBlock; ++i) {
          const auto bits = static_cast<uint32_t>(base + i) | sign;
          std::memcpy(&x[static_cast<size_t>(i)], &bits, 4);
        }
        const char* prev = forceKernelIsa(form == "avx512" ? "avx512" : "avx2");
        unaryFast(UnaryOp::kHardSwish, 0, 0, kBlock, x.data(), fast.data(), &pools().p2);
        forceKernelIsa(prev);
        unary(UnaryOp::kHardSwish, 0, 0, kBlock, x.data(), ref.data(), &pools().p2);
        ASSERT_EQ(firstBitMismatch(fast, ref), -1) << "HardSwish " << form << ", block at 0x" << std::hex << (base | sign);
      }
  std::vector<float> sample = sampledFloats(-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(), true);
  for (float v : {-1e-45f, 1e-45f, -3e-45f, -0.0f}) sample.push_back(v);  // (HardSigmoid with beta 0: +0 from a tiny negative)
  struct Case {
    UnaryOp op;
    float alpha, beta;
  };
  for (const char* isa : {"avx512", "avx2"})  // (each form the CPU has: a wider one is capped to it)
    for (const Case& c : {Case{UnaryOp::kHardSwish, 0, 0}, Case{UnaryOp::kHardSigmoid, 0.2f, 0.5f},
                          Case{UnaryOp::kHardSigmoid, 1.0f / 6.0f, 0.5f}, Case{UnaryOp::kHardSigmoid, 0.2f, 0.0f},
                          Case{UnaryOp::kSwish, 0, 0}})
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p3})
        for (size_t off = 0; off < 4; ++off) {  // (tails of every length)
          const std::vector<float> in(sample.begin() + static_cast<std::ptrdiff_t>(off), sample.end());
          std::vector<float> f(in.size()), r(in.size());
          const char* prev = forceKernelIsa(isa);
          unaryFast(c.op, c.alpha, c.beta, static_cast<int64_t>(in.size()), in.data(), f.data(), pool);
          forceKernelIsa(prev);
          unary(c.op, c.alpha, c.beta, static_cast<int64_t>(in.size()), in.data(), r.data(), nullptr);
          ASSERT_EQ(firstBitMismatch(f, r), -1) << unaryOpName(c.op) << " alpha " << c.alpha << " " << isa;
        }
}

TEST(LayersUnary, EveryOpMatchesItsFormula) {
  std::mt19937 rng(21);
  std::vector<float> xs = randomFloats(rng, 300, -12.0f, 12.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 3.0f, -3.0f, 6.0f, 29.9f, 30.5f, 40.0f, -40.0f, 88.0f,
                  -100.0f, 1e-30f, -1e-30f, inf, -inf, std::numeric_limits<float>::quiet_NaN()})
    xs.push_back(v);
  for (int k = 0; k < static_cast<int>(UnaryOp::kCount); ++k) {
    const UnaryOp op = static_cast<UnaryOp>(k);
    const auto [alpha, beta] = unaryAttrs(op);
    std::vector<float> want(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      want[i] = unaryFormula(op, xs[i], alpha, beta);
      const float got = unaryScalar(op, xs[i], alpha, beta);
      EXPECT_TRUE(sameBits(got, want[i]) || (std::isnan(got) && std::isnan(want[i])))
          << unaryOpName(op) << "(" << xs[i] << ") = " << got << ", want " << want[i];
    }
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p3}) {
      std::vector<float> y(xs.size());
      unary(op, alpha, beta, static_cast<int64_t>(xs.size()), xs.data(), y.data(), pool);
      for (size_t i = 0; i < xs.size(); ++i)
        EXPECT_TRUE(sameBits(y[i], want[i]) || (std::isnan(y[i]) && std::isnan(want[i])))
            << unaryOpName(op) << " array, element " << i;
    }
  }
  // Spot checks of values that do not depend on the formulas above.
  EXPECT_EQ(unaryScalar(UnaryOp::kRound, 2.5f, 0, 0), 2.0f);
  EXPECT_EQ(unaryScalar(UnaryOp::kRound, -1.5f, 0, 0), -2.0f);
  EXPECT_EQ(unaryScalar(UnaryOp::kHardSwish, 3.0f, 0, 0), 3.0f);
  EXPECT_EQ(unaryScalar(UnaryOp::kClip, 5.0f, -1.0f, 1.0f), 1.0f);
  EXPECT_EQ(unaryScalar(UnaryOp::kRelu, -2.0f, 0, 0), 0.0f);
  EXPECT_FLOAT_EQ(unaryScalar(UnaryOp::kSigmoid, 0.0f, 0, 0), 0.5f);
}

// ---------------------------------------------------------------------------------------------------------
// Binary ops.

/// y = act(a op b) element by element with numpy broadcasting by explicit index arithmetic.
std::vector<float> naiveBinary(BinaryOp op, const Activation& act, const Shape& as, const std::vector<float>& a,
                               const Shape& bs, const std::vector<float>& b, const Shape& ys) {
  std::vector<float> y(static_cast<size_t>(numel(ys)));
  auto index = [&](const std::vector<int64_t>& yi, const Shape& s) {
    const std::vector<int64_t> st = stridesOf(s);
    int64_t off = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t yd = ys.size() - s.size() + i;
      off += (s[i] == 1 ? 0 : yi[yd]) * st[i];
    }
    return static_cast<size_t>(off);
  };
  for (int64_t p = 0; p < numel(ys); ++p) {
    const std::vector<int64_t> yi = unravel(p, ys);
    const float u = a[index(yi, as)], v = b[index(yi, bs)];
    float r = 0.0f;
    switch (op) {
      case BinaryOp::kAdd: r = u + v; break;
      case BinaryOp::kSub: r = u - v; break;
      case BinaryOp::kMul: r = u * v; break;
      case BinaryOp::kDiv: r = u / v; break;
      case BinaryOp::kMax: r = std::isnan(u) || std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : std::max(u, v); break;
      case BinaryOp::kMin: r = std::isnan(u) || std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : std::min(u, v); break;
      case BinaryOp::kPow: r = std::pow(u, v); break;
      case BinaryOp::kPRelu: r = u < 0.0f ? u * v : u; break;
      case BinaryOp::kCount: break;
    }
    y[static_cast<size_t>(p)] = applyActivation(r, act);
  }
  return y;
}

Shape broadcastShape(const Shape& a, const Shape& b) {
  Shape y(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t da = i < y.size() - a.size() ? 1 : a[i - (y.size() - a.size())];
    const int64_t db = i < y.size() - b.size() ? 1 : b[i - (y.size() - b.size())];
    y[i] = da == 1 ? db : da;
  }
  return y;
}

TEST(LayersBinary, NamesAndScalars) {
  const char* names[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu"};
  for (size_t i = 0; i < std::size(names); ++i) {
    EXPECT_EQ(binaryOpFromName(names[i]), static_cast<BinaryOp>(i));
    EXPECT_STREQ(binaryOpName(static_cast<BinaryOp>(i)), names[i]);
  }
  EXPECT_EQ(binaryOpFromName("Mod"), BinaryOp::kCount);
  EXPECT_EQ(binaryScalar(BinaryOp::kSub, 1.0f, 3.0f), -2.0f);
  EXPECT_EQ(binaryScalar(BinaryOp::kPow, 2.0f, 10.0f), 1024.0f);
  EXPECT_EQ(binaryScalar(BinaryOp::kMax, -1.0f, 2.0f), 2.0f);
  EXPECT_EQ(binaryScalar(BinaryOp::kPRelu, -2.0f, 0.25f), -0.5f);  // the slope scales negatives only
  EXPECT_EQ(binaryScalar(BinaryOp::kPRelu, 3.0f, 0.25f), 3.0f);
  EXPECT_TRUE(std::isnan(binaryScalar(BinaryOp::kMin, std::nanf(""), 2.0f)));
  EXPECT_TRUE(std::isnan(binaryScalar(BinaryOp::kMax, 2.0f, std::nanf(""))));
}

TEST(LayersBinary, BroadcastingMatchesNaive) {
  std::mt19937 rng(31);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1, 3, 4, 4}, {3, 1, 1}}, {{2, 1, 5}, {4, 1}},   {{2, 3}, {2, 3}},       {{}, {2, 3}},
      {{5, 1, 3}, {1, 4, 1}},    {{7}, {1}},            {{2, 3, 4, 5}, {1, 3, 1, 5}}, {{4, 1}, {2, 4, 6}},
      {{1}, {}},                 {{3, 1, 2, 1, 2}, {1, 2, 1, 3, 1}}, {{2, 0, 3}, {3}}};
  for (const auto& [as, bs] : cases) {
    const Shape ys = broadcastShape(as, bs);
    std::vector<float> a = randomFloats(rng, static_cast<size_t>(numel(as)), 0.25f, 2.0f);
    std::vector<float> b = randomFloats(rng, static_cast<size_t>(numel(bs)), -2.0f, 2.0f);
    if (!a.empty()) a[0] = std::nanf("");
    for (int k = 0; k < static_cast<int>(BinaryOp::kCount); ++k) {
      const BinaryOp op = static_cast<BinaryOp>(k);
      for (int ai = 0; ai < test::kNumActivations; ++ai) {
        const Activation act = test::activationFor(ai);
        for (bool swap : {false, true}) {
          const Shape& s1 = swap ? bs : as;
          const Shape& s2 = swap ? as : bs;
          const std::vector<float>& x1 = swap ? b : a;
          const std::vector<float>& x2 = swap ? a : b;
          const std::vector<float> want = naiveBinary(op, act, s1, x1, s2, x2, ys);
          std::vector<float> y(want.size(), 77.0f);
          binary(op, act, s1, x1.data(), s2, x2.data(), ys, y.data(), nullptr);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_TRUE(sameBits(y[i], want[i]) || (std::isnan(y[i]) && std::isnan(want[i])))
                << binaryOpName(op) << " act " << ai << " swap " << swap << " element " << i << ": " << y[i]
                << " vs " << want[i];
        }
      }
    }
  }
}

TEST(LayersBinary, RejectsBadShapes) {
  std::vector<float> a(6), b(4), y(6);
  EXPECT_ANY_THROW(binary(BinaryOp::kAdd, {}, {2, 3}, a.data(), {4}, b.data(), {2, 3}, y.data(), nullptr));
  EXPECT_ANY_THROW(binary(BinaryOp::kAdd, {}, {1, 2, 3}, a.data(), {3}, b.data(), {2, 3}, y.data(), nullptr));
}

// ---------------------------------------------------------------------------------------------------------
// Data movement.

std::vector<uint8_t> naiveTranspose(const Shape& xs, const std::vector<int64_t>& perm, size_t es,
                                    const std::vector<uint8_t>& x) {
  Shape ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) ys[i] = xs[static_cast<size_t>(perm[i])];
  const std::vector<int64_t> xst = stridesOf(xs);
  std::vector<uint8_t> y(x.size());
  for (int64_t p = 0; p < numel(ys); ++p) {
    const std::vector<int64_t> yi = unravel(p, ys);
    int64_t off = 0;
    for (size_t i = 0; i < ys.size(); ++i) off += yi[i] * xst[static_cast<size_t>(perm[i])];
    std::memcpy(&y[static_cast<size_t>(p) * es], &x[static_cast<size_t>(off) * es], es);
  }
  return y;
}

void checkTranspose(const Shape& xs, const std::vector<int64_t>& perm, size_t es, std::mt19937& rng) {
  const std::vector<uint8_t> x = randomBytes(rng, static_cast<size_t>(numel(xs)) * es);
  const std::vector<uint8_t> want = naiveTranspose(xs, perm, es, x);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p3}) {
    std::vector<uint8_t> y(x.size(), 0xee);
    transpose(xs, perm, es, x.data(), y.data(), pool);
    std::string p;
    for (int64_t v : perm) p += std::to_string(v) + ",";
    ASSERT_EQ(y, want) << "perm " << p << " es " << es;
  }
}

TEST(LayersMove, Transpose4dEveryPermutation) {
  std::mt19937 rng(41);
  std::vector<int64_t> perm{0, 1, 2, 3};
  do {
    for (size_t es : {1, 2, 4, 8, 3}) checkTranspose({2, 3, 4, 5}, perm, es, rng);
    checkTranspose({1, 3, 1, 5}, perm, 4, rng);
  } while (std::next_permutation(perm.begin(), perm.end()));
  // NCHW <-> NHWC at a size with several tiles and ragged tile edges.
  checkTranspose({2, 40, 9, 35}, {0, 2, 3, 1}, 4, rng);
  checkTranspose({2, 9, 35, 40}, {0, 3, 1, 2}, 4, rng);
  checkTranspose({1, 70, 33}, {0, 2, 1}, 2, rng);
}

TEST(LayersMove, Transpose6d) {
  std::mt19937 rng(42);
  const Shape xs{2, 3, 1, 4, 2, 3};
  for (const std::vector<int64_t>& perm : std::vector<std::vector<int64_t>>{
           {5, 4, 3, 2, 1, 0}, {0, 2, 4, 1, 3, 5}, {0, 1, 3, 5, 2, 4}, {3, 0, 5, 1, 4, 2}, {0, 1, 2, 3, 4, 5}})
    for (size_t es : {1, 4, 6}) checkTranspose(xs, perm, es, rng);
}

TEST(LayersMove, Concat) {
  std::mt19937 rng(43);
  const Shape base{2, 3, 4, 5};
  for (int axis : {0, 1, 3}) {
    for (size_t es : {2, 4}) {
      std::vector<Shape> shapes;
      std::vector<std::vector<uint8_t>> data;
      for (int64_t extent : {1, 3, 0, 2}) {
        Shape s = base;
        s[static_cast<size_t>(axis)] = extent;
        shapes.push_back(s);
        data.push_back(randomBytes(rng, static_cast<size_t>(numel(s)) * es));
      }
      Shape ys = base;
      ys[static_cast<size_t>(axis)] = 6;
      // Naive: every output element from the input whose axis range holds it.
      std::vector<uint8_t> want(static_cast<size_t>(numel(ys)) * es);
      for (int64_t p = 0; p < numel(ys); ++p) {
        std::vector<int64_t> yi = unravel(p, ys);
        int64_t at = yi[static_cast<size_t>(axis)];
        size_t i = 0;
        while (at >= shapes[i][static_cast<size_t>(axis)]) at -= shapes[i++][static_cast<size_t>(axis)];
        yi[static_cast<size_t>(axis)] = at;
        const std::vector<int64_t> st = stridesOf(shapes[i]);
        int64_t off = 0;
        for (size_t d = 0; d < yi.size(); ++d) off += yi[d] * st[d];
        std::memcpy(&want[static_cast<size_t>(p) * es], &data[i][static_cast<size_t>(off) * es], es);
      }
      std::vector<const void*> ptrs;
      for (auto& d : data) ptrs.push_back(d.data());
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p2}) {
        std::vector<uint8_t> y(want.size(), 0xee);
        concat(axis, shapes, ptrs, es, y.data(), pool);
        EXPECT_EQ(y, want) << "axis " << axis << " es " << es;
      }
    }
  }
  std::vector<uint8_t> a(8), y(16);
  EXPECT_ANY_THROW(concat(1, {{2, 2}, {3, 2}}, {a.data(), a.data()}, 2, y.data(), nullptr));
}

TEST(LayersMove, PadConstant) {
  std::mt19937 rng(44);
  struct Case { Shape xs, pb, pe; };
  for (const Case& cs : {Case{{2, 3, 4}, {0, 1, 2}, {1, 0, 3}}, Case{{1, 2, 3, 3}, {0, 0, 1, 1}, {0, 0, 1, 1}},
                         Case{{5}, {3}, {0}}, Case{{2, 2}, {0, 0}, {0, 0}}, Case{{2, 0, 3}, {1, 1, 0}, {0, 1, 1}}}) {
    for (size_t es : {1, 4}) {
      const std::vector<uint8_t> x = randomBytes(rng, static_cast<size_t>(numel(cs.xs)) * es);
      for (float fv : {0.0f, 1.5f}) {
        uint8_t value[4];
        std::memcpy(value, &fv, 4);
        if (es == 1) value[0] = 0x5a;
        Shape ys(cs.xs.size());
        for (size_t d = 0; d < ys.size(); ++d) ys[d] = cs.xs[d] + cs.pb[d] + cs.pe[d];
        std::vector<uint8_t> want(static_cast<size_t>(numel(ys)) * es);
        const std::vector<int64_t> xst = stridesOf(cs.xs);
        for (int64_t p = 0; p < numel(ys); ++p) {
          const std::vector<int64_t> yi = unravel(p, ys);
          bool inside = true;
          int64_t off = 0;
          for (size_t d = 0; d < yi.size(); ++d) {
            const int64_t i = yi[d] - cs.pb[d];
            inside = inside && i >= 0 && i < cs.xs[d];
            off += i * xst[d];
          }
          std::memcpy(&want[static_cast<size_t>(p) * es], inside ? &x[static_cast<size_t>(off) * es] : value, es);
        }
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p3}) {
          std::vector<uint8_t> y(want.size(), 0xee);
          padConstant(cs.xs, cs.pb, cs.pe, value, es, x.data(), y.data(), pool);
          EXPECT_EQ(y, want) << "es " << es << " value " << fv;
        }
      }
    }
  }
}

TEST(LayersMove, SliceWithNegativeSteps) {
  std::mt19937 rng(45);
  struct Case { Shape xs, starts, steps, ys; };
  for (const Case& cs : {Case{{4, 5, 6}, {3, 0, 5}, {-1, 2, -2}, {4, 3, 3}},
                         Case{{4, 5, 6}, {1, 4, 0}, {2, -3, 1}, {2, 2, 6}},
                         Case{{10}, {9}, {-4}, {3}},
                         Case{{2, 3, 4, 5}, {1, 2, 3, 4}, {-1, -1, -1, -1}, {2, 3, 4, 5}},
                         Case{{3, 8}, {0, 7}, {1, -1}, {3, 8}},
                         Case{{3, 8}, {0, 2}, {1, 1}, {3, 0}}}) {
    for (size_t es : {1, 2, 4, 8, 5}) {
      const std::vector<uint8_t> x = randomBytes(rng, static_cast<size_t>(numel(cs.xs)) * es);
      std::vector<uint8_t> want(static_cast<size_t>(numel(cs.ys)) * es);
      const std::vector<int64_t> xst = stridesOf(cs.xs);
      for (int64_t p = 0; p < numel(cs.ys); ++p) {
        const std::vector<int64_t> yi = unravel(p, cs.ys);
        int64_t off = 0;
        for (size_t d = 0; d < yi.size(); ++d) off += (cs.starts[d] + yi[d] * cs.steps[d]) * xst[d];
        std::memcpy(&want[static_cast<size_t>(p) * es], &x[static_cast<size_t>(off) * es], es);
      }
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p2}) {
        std::vector<uint8_t> y(want.size(), 0xee);
        slice(cs.xs, cs.starts, cs.steps, cs.ys, es, x.data(), y.data(), pool);
        EXPECT_EQ(y, want) << "es " << es;
      }
    }
  }
  std::vector<uint8_t> x(40), y(40);
  EXPECT_ANY_THROW(slice({10}, {9}, {1}, {2}, 4, x.data(), y.data(), nullptr));  // reads past the end
}

TEST(LayersMove, TileAndExpandMatchNaive) {
  std::mt19937 rng(47);
  struct Case { Shape xs, ys; };
  for (const Case& cs : {Case{{2, 3}, {4, 9}}, Case{{1, 3, 1}, {2, 3, 5}}, Case{{2, 1, 2}, {2, 4, 6}}, Case{{3}, {3}},
                         Case{{1}, {7}}, Case{{2, 0}, {4, 0}}, Case{{}, {}}}) {
    for (size_t es : {1, 2, 4, 8}) {
      const std::vector<uint8_t> x = randomBytes(rng, static_cast<size_t>(numel(cs.xs)) * es);
      std::vector<uint8_t> want(static_cast<size_t>(numel(cs.ys)) * es);
      const std::vector<int64_t> xst = stridesOf(cs.xs);
      for (int64_t p = 0; p < numel(cs.ys); ++p) {
        const std::vector<int64_t> yi = unravel(p, cs.ys);
        int64_t off = 0;
        for (size_t d = 0; d < yi.size(); ++d) off += (yi[d] % cs.xs[d]) * xst[d];
        std::memcpy(&want[static_cast<size_t>(p) * es], &x[static_cast<size_t>(off) * es], es);
      }
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p2}) {
        std::vector<uint8_t> y(want.size(), 0xee);
        tile(cs.xs, cs.ys, es, x.data(), y.data(), pool);
        EXPECT_EQ(y, want) << "es " << es;
      }
    }
  }
  std::vector<uint8_t> x(24), y(48);
  EXPECT_ANY_THROW(tile({2, 3}, {2, 4}, 4, x.data(), y.data(), nullptr));  // 4 is not a multiple of 3
  EXPECT_ANY_THROW(tile({2, 3}, {6}, 4, x.data(), y.data(), nullptr));     // ranks differ
}

TEST(LayersMove, WhereBroadcastsAllThreeInputs) {
  std::mt19937 rng(48);
  struct Case { Shape cs, as, bs, ys; };
  for (const Case& k : {Case{{2, 3}, {2, 3}, {2, 3}, {2, 3}}, Case{{3, 1}, {1, 4}, {4}, {3, 4}},
                        Case{{1}, {2, 1, 3}, {5, 1}, {2, 5, 3}}, Case{{}, {}, {}, {}}, Case{{2, 0}, {1}, {1}, {2, 0}}}) {
    const std::vector<uint8_t> c = randomBytes(rng, static_cast<size_t>(numel(k.cs)));
    for (size_t es : {1, 2, 4, 8}) {
      const std::vector<uint8_t> a = randomBytes(rng, static_cast<size_t>(numel(k.as)) * es);
      const std::vector<uint8_t> b = randomBytes(rng, static_cast<size_t>(numel(k.bs)) * es);
      std::vector<uint8_t> want(static_cast<size_t>(numel(k.ys)) * es);
      auto at = [&](const Shape& s, const std::vector<int64_t>& yi) {  // numpy broadcasting, right-aligned
        int64_t off = 0, st = 1;
        for (size_t i = 0; i < s.size(); ++i) {
          const size_t d = s.size() - 1 - i;
          off += (s[d] == 1 ? 0 : yi[yi.size() - 1 - i]) * st;
          st *= s[d];
        }
        return static_cast<size_t>(off);
      };
      for (int64_t p = 0; p < numel(k.ys); ++p) {
        const std::vector<int64_t> yi = unravel(p, k.ys);
        const bool t = c[at(k.cs, yi)] != 0;
        std::memcpy(&want[static_cast<size_t>(p) * es], t ? &a[at(k.as, yi) * es] : &b[at(k.bs, yi) * es], es);
      }
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p2}) {
        std::vector<uint8_t> y(want.size(), 0xee);
        where(k.cs, c.data(), k.as, a.data(), k.bs, b.data(), k.ys, es, y.data(), pool);
        EXPECT_EQ(y, want) << "es " << es;
      }
    }
  }
  std::vector<uint8_t> c(6), a(24), y(24);
  EXPECT_ANY_THROW(where({3}, c.data(), {2, 3}, a.data(), {2, 3}, a.data(), {2, 2}, 4, y.data(), nullptr));
}

TEST(LayersMove, GatherAlongEveryAxisWithNegativeIndices) {
  std::mt19937 rng(46);
  const Shape xs{3, 4, 5};
  const std::vector<int64_t> idx{-1, 0, 2, 2, -3};
  for (size_t axis = 0; axis < 3; ++axis) {
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < 3; ++d)
      if (d != axis) (d < axis ? outer : inner) *= xs[d];
    for (size_t es : {1, 2, 4, 8}) {
      const std::vector<uint8_t> x = randomBytes(rng, static_cast<size_t>(numel(xs)) * es);
      const int64_t len = xs[axis], ni = static_cast<int64_t>(idx.size());
      std::vector<uint8_t> want(static_cast<size_t>(outer * ni * inner) * es);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < ni; ++j)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t k = idx[static_cast<size_t>(j)] < 0 ? idx[static_cast<size_t>(j)] + len : idx[static_cast<size_t>(j)];
            std::memcpy(&want[static_cast<size_t>((o * ni + j) * inner + i) * es],
                        &x[static_cast<size_t>((o * len + k) * inner + i) * es], es);
          }
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools().p2}) {
        std::vector<uint8_t> y(want.size(), 0xee);
        gather(outer, len, inner, idx, es, x.data(), y.data(), pool);
        EXPECT_EQ(y, want) << "axis " << axis << " es " << es;
      }
    }
  }
  std::vector<uint8_t> x(60 * 4), y(60 * 4, 0xee);
  const std::vector<uint8_t> untouched = y;
  for (int64_t bad : {4, -5}) {
    try {
      gather(3, 4, 5, {0, bad}, 4, x.data(), y.data(), nullptr);
      ADD_FAILURE() << "index " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
    EXPECT_EQ(y, untouched);  // nothing written before the check
  }
}

// ---------------------------------------------------------------------------------------------------------
// Thread-count invariance: inputs large enough that every kernel splits its work, identical bytes for a serial
// call and pools of 1, 2 and 3 threads.

template <class T, class F>
void expectSameForAllPools(const char* what, size_t n, F&& run) {
  std::vector<T> ref(n);
  run(ref.data(), static_cast<ThreadPool*>(nullptr));
  for (ThreadPool* pool : pools().all()) {
    std::vector<T> y(n);
    run(y.data(), pool);
    EXPECT_EQ(std::memcmp(y.data(), ref.data(), n * sizeof(T)), 0)
        << what << " threads=" << (pool ? pool->size() : 0);
  }
}

TEST(LayersThreads, SameBitsForEveryThreadCount) {
  std::mt19937 rng(51);
  const std::vector<float> big = randomFloats(rng, 1 << 18, -6.0f, 6.0f);
  const float* x = big.data();

  const Pool2dShape ps = poolShape(16, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false);
  expectSameForAllPools<float>("maxPool2d", static_cast<size_t>(ps.planes * ps.oh * ps.ow),
                               [&](float* y, ThreadPool* p) { maxPool2d(ps, x, y, p); });
  expectSameForAllPools<float>("avgPool2d", static_cast<size_t>(ps.planes * ps.oh * ps.ow),
                               [&](float* y, ThreadPool* p) { avgPool2d(ps, x, y, p); });
  expectSameForAllPools<float>("globalAvgPool", 64, [&](float* y, ThreadPool* p) { globalAvgPool(64, 4096, x, y, p); });
  expectSameForAllPools<float>("globalMaxPool", 64, [&](float* y, ThreadPool* p) { globalMaxPool(64, 4096, x, y, p); });
  const std::vector<float> ca = randomFloats(rng, 64), cb = randomFloats(rng, 64);
  expectSameForAllPools<float>("channelAffine", 1 << 18, [&](float* y, ThreadPool* p) {
    channelAffine(4, 64, 1024, x, ca.data(), cb.data(), y, p);
  });
  expectSameForAllPools<float>("lrn", 1 << 18, [&](float* y, ThreadPool* p) {
    lrn(2, 32, 4096, 5, 1e-3f, 0.75f, 2.0f, x, y, p);
  });
  for (SoftmaxKind kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax, SoftmaxKind::kHardmax}) {
    expectSameForAllPools<float>("softmax rows", 1 << 18, [&](float* y, ThreadPool* p) {
      softmax(kind, 1024, 256, 1, x, y, p);
    });
    expectSameForAllPools<float>("softmax columns", 1 << 18, [&](float* y, ThreadPool* p) {
      softmax(kind, 4, 64, 1024, x, y, p);
    });
  }
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kSigmoid, UnaryOp::kMish, UnaryOp::kRound})
    expectSameForAllPools<float>(unaryOpName(op), 1 << 18, [&](float* y, ThreadPool* p) {
      unary(op, 0.1f, 0.9f, 1 << 18, x, y, p);
    });
  for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kDiv, BinaryOp::kPow}) {
    expectSameForAllPools<float>("binary broadcast", 1 << 18, [&](float* y, ThreadPool* p) {
      binary(op, {ActKind::kRelu, 0, 0}, {4, 64, 1024}, x, {64, 1}, x + 7, {4, 64, 1024}, y, p);
    });
    expectSameForAllPools<float>("binary same shape", 1 << 17, [&](float* y, ThreadPool* p) {
      binary(op, {ActKind::kClip, -1.0f, 1.0f}, {1 << 17}, x, {1 << 17}, x + (1 << 17), {1 << 17}, y, p);
    });
  }
  expectSameForAllPools<float>("transpose NCHW->NHWC", 1 << 18, [&](float* y, ThreadPool* p) {
    transpose({1, 64, 64, 64}, {0, 2, 3, 1}, 4, x, y, p);
  });
  expectSameForAllPools<float>("transpose rows", 1 << 18, [&](float* y, ThreadPool* p) {
    transpose({64, 64, 64}, {1, 0, 2}, 4, x, y, p);
  });
  expectSameForAllPools<float>("concat", 1 << 18, [&](float* y, ThreadPool* p) {
    concat(1, {{4, 32, 1024}, {4, 32, 1024}}, {x, x + (1 << 17)}, 4, y, p);
  });
  const float zero = 0.0f;
  expectSameForAllPools<float>("padConstant", 16 * 66 * 66, [&](float* y, ThreadPool* p) {
    padConstant({16, 64, 64}, {0, 1, 1}, {0, 1, 1}, &zero, 4, x, y, p);
  });
  expectSameForAllPools<float>("slice", 64 * 64 * 32, [&](float* y, ThreadPool* p) {
    slice({64, 64, 64}, {63, 0, 63}, {-1, 1, -2}, {64, 64, 32}, 4, x, y, p);
  });
}

}  // namespace
}  // namespace npuc::kernels
