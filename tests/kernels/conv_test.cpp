// Tests of conv_ref / conv_transpose_ref against hand and double-precision computations, and of Conv (im2col
// GEMM, depthwise, 3-D reference path) and conv_transpose against the references bit for bit.
#include "kernels/conv.hpp"

#include "support/error.hpp"
#include "support/fp16.hpp"
#include "test_util.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace npuc::kernels {
namespace {

using test::firstBitMismatch;
using test::randomFloats;
using test::randomInt;

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  return (in + pb + pe - d * (k - 1) - 1) / s + 1;
}

ConvShape shape2d(int64_t n, int64_t c, int64_t m, int64_t groups, int64_t h, int64_t w, int64_t kh, int64_t kw,
                  int64_t s, int64_t d, int64_t p) {
  ConvShape sh;
  sh.batch = n, sh.in_channels = c, sh.out_channels = m, sh.groups = groups;
  sh.in_spatial = {h, w}, sh.kernel = {kh, kw}, sh.stride = {s, s}, sh.dilation = {d, d}, sh.pad_begin = {p, p};
  sh.out_spatial = {outSize(h, kh, s, d, p, p), outSize(w, kw, s, d, p, p)};
  return sh;
}

// Per axis (rows, columns): stride, dilation, padding at the start and at the end.
ConvShape shapeAxes(int64_t n, int64_t c, int64_t m, int64_t groups, std::array<int64_t, 2> in, std::array<int64_t, 2> k,
                    std::array<int64_t, 2> s, std::array<int64_t, 2> d, std::array<int64_t, 2> pb,
                    std::array<int64_t, 2> pe) {
  ConvShape sh;
  sh.batch = n, sh.in_channels = c, sh.out_channels = m, sh.groups = groups;
  sh.in_spatial = {in[0], in[1]}, sh.kernel = {k[0], k[1]}, sh.stride = {s[0], s[1]}, sh.dilation = {d[0], d[1]};
  sh.pad_begin = {pb[0], pb[1]};
  sh.out_spatial = {outSize(in[0], k[0], s[0], d[0], pb[0], pe[0]), outSize(in[1], k[1], s[1], d[1], pb[1], pe[1])};
  return sh;
}

int64_t numel(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

TEST(ConvRef, HandComputed) {
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, w{1, 1, 1, 1};
  std::vector<float> y(4);
  conv_ref(shape2d(1, 1, 1, 1, 3, 3, 2, 2, 1, 1, 0), x.data(), w.data(), nullptr, {}, y.data());
  EXPECT_EQ(y, (std::vector<float>{12, 16, 24, 28}));
  conv_ref(shape2d(1, 1, 1, 1, 3, 3, 2, 2, 2, 1, 1), x.data(), w.data(), nullptr, {}, y.data());
  EXPECT_EQ(y, (std::vector<float>{1, 5, 11, 28}));
  const float bias = -20;
  conv_ref(shape2d(1, 1, 1, 1, 3, 3, 2, 2, 2, 1, 1), x.data(), w.data(), &bias, {ActKind::kRelu, 0, 0}, y.data());
  EXPECT_EQ(y, (std::vector<float>{0, 0, 0, 8}));
  // Dilation 2 on a 3x3 input: one output, the four corners.
  std::vector<float> y1(1);
  conv_ref(shape2d(1, 1, 1, 1, 3, 3, 2, 2, 1, 2, 0), x.data(), w.data(), nullptr, {}, y1.data());
  EXPECT_EQ(y1[0], 1 + 3 + 7 + 9);
}

// Naive double-precision 2-D convolution.
std::vector<double> convDouble(const ConvShape& s, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& bias) {
  const int64_t H = s.in_spatial[0], W = s.in_spatial[1], OH = s.out_spatial[0], OW = s.out_spatial[1];
  const int64_t KH = s.kernel[0], KW = s.kernel[1];
  const int64_t cg = s.in_channels / s.groups, mg = s.out_channels / s.groups;
  std::vector<double> y(static_cast<size_t>(s.batch * s.out_channels * OH * OW));
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t m = 0; m < s.out_channels; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias[m];
          for (int64_t cl = 0; cl < cg; ++cl)
            for (int64_t ki = 0; ki < KH; ++ki)
              for (int64_t kj = 0; kj < KW; ++kj) {
                const int64_t ih = oh * s.stride[0] - s.pad_begin[0] + ki * s.dilation[0];
                const int64_t iw = ow * s.stride[1] - s.pad_begin[1] + kj * s.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t c = (m / mg) * cg + cl;
                acc += static_cast<double>(w[((m * cg + cl) * KH + ki) * KW + kj]) * x[((n * s.in_channels + c) * H + ih) * W + iw];
              }
          y[((n * s.out_channels + m) * OH + oh) * OW + ow] = acc;
        }
  return y;
}

TEST(ConvRef, MatchesDoublePrecision) {
  std::mt19937 rng(3);
  const ConvShape shapes[] = {shape2d(2, 4, 6, 2, 7, 9, 3, 3, 2, 1, 1), shape2d(1, 3, 3, 3, 8, 5, 3, 2, 1, 2, 2),
                              shape2d(1, 5, 4, 1, 6, 6, 1, 1, 1, 1, 0)};
  for (const ConvShape& s : shapes) {
    const auto x = randomFloats(rng, static_cast<size_t>(s.batch * s.in_channels * numel(s.in_spatial)));
    const auto w = randomFloats(rng, static_cast<size_t>(s.out_channels * s.in_channels / s.groups * numel(s.kernel)));
    const auto bias = randomFloats(rng, static_cast<size_t>(s.out_channels));
    std::vector<float> y(static_cast<size_t>(s.batch * s.out_channels * numel(s.out_spatial)));
    conv_ref(s, x.data(), w.data(), bias.data(), {}, y.data());
    const auto yd = convDouble(s, x, w, bias);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], yd[i], 1e-5) << i;
  }
}

TEST(ConvTransposeRef, HandComputed) {
  ConvTransposeShape s;
  s.in_channels = 1, s.out_channels = 1;
  s.in_spatial = {2}, s.out_spatial = {5}, s.kernel = {3}, s.stride = {2}, s.dilation = {1}, s.pad_begin = {0};
  const std::vector<float> x{1, 2}, w{1, 10, 100};
  std::vector<float> y(5);
  conv_transpose_ref(s, x.data(), w.data(), nullptr, y.data());
  EXPECT_EQ(y, (std::vector<float>{1, 10, 102, 20, 200}));
  // pad 1 crops one element at the front (and the output is shorter at the back).
  s.pad_begin = {1};
  s.out_spatial = {3};
  const float bias = 0.5f;
  conv_transpose_ref(s, x.data(), w.data(), &bias, y.data());
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 3), (std::vector<float>{10.5f, 102.5f, 20.5f}));
}

ConvTransposeShape randomTransposeShape(std::mt19937& rng, int rank) {
  ConvTransposeShape s;
  s.batch = randomInt(rng, 1, 2);
  s.groups = randomInt(rng, 1, 2);
  s.in_channels = s.groups * randomInt(rng, 1, 3);
  s.out_channels = s.groups * randomInt(rng, 1, 3);
  for (int i = 0; i < rank; ++i) {
    const int64_t in = randomInt(rng, 1, 6), k = randomInt(rng, 1, 3), st = randomInt(rng, 1, 3), d = randomInt(rng, 1, 2);
    const int64_t pb = randomInt(rng, 0, 1), pe = randomInt(rng, 0, 1), extra = randomInt(rng, 0, st - 1);
    s.in_spatial.push_back(in), s.kernel.push_back(k), s.stride.push_back(st), s.dilation.push_back(d);
    s.pad_begin.push_back(pb);
    s.out_spatial.push_back(std::max<int64_t>(1, st * (in - 1) + extra + (k - 1) * d + 1 - pb - pe));
  }
  return s;
}

TEST(ConvTransposeRef, MatchesDoubleScatter) {
  std::mt19937 rng(5);
  for (int iter = 0; iter < 20; ++iter) {
    const ConvTransposeShape s = randomTransposeShape(rng, 2);
    const int64_t cg = s.in_channels / s.groups, mg = s.out_channels / s.groups;
    const int64_t H = s.in_spatial[0], W = s.in_spatial[1], OH = s.out_spatial[0], OW = s.out_spatial[1];
    const int64_t KH = s.kernel[0], KW = s.kernel[1];
    const auto x = randomFloats(rng, static_cast<size_t>(s.batch * s.in_channels * H * W));
    const auto w = randomFloats(rng, static_cast<size_t>(s.in_channels * mg * KH * KW));
    const auto bias = randomFloats(rng, static_cast<size_t>(s.out_channels));
    std::vector<float> y(static_cast<size_t>(s.batch * s.out_channels * OH * OW));
    conv_transpose_ref(s, x.data(), w.data(), bias.data(), y.data());
    // Scatter form in double: every input element spreads over the kernel taps.
    std::vector<double> yd(y.size());
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t m = 0; m < s.out_channels; ++m)
        for (int64_t i = 0; i < OH * OW; ++i) yd[(n * s.out_channels + m) * OH * OW + i] = bias[m];
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t c = 0; c < s.in_channels; ++c)
        for (int64_t ml = 0; ml < mg; ++ml)
          for (int64_t ih = 0; ih < H; ++ih)
            for (int64_t iw = 0; iw < W; ++iw)
              for (int64_t ki = 0; ki < KH; ++ki)
                for (int64_t kj = 0; kj < KW; ++kj) {
                  const int64_t oh = ih * s.stride[0] - s.pad_begin[0] + ki * s.dilation[0];
                  const int64_t ow = iw * s.stride[1] - s.pad_begin[1] + kj * s.dilation[1];
                  if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                  const int64_t m = (c / cg) * mg + ml;
                  yd[((n * s.out_channels + m) * OH + oh) * OW + ow] +=
                      static_cast<double>(x[((n * s.in_channels + c) * H + ih) * W + iw]) * w[((c * mg + ml) * KH + ki) * KW + kj];
                }
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], yd[i], 1e-5) << "iter " << iter << " at " << i;
  }
}

// float16 storage (fp16 packages): every mix of float16 and float32 input and output, under every configuration,
// against the reference on the widened input, rounded once.
void expectFloat16StorageMatches(const Conv& conv, const ConvShape& s, const std::vector<float>& x,
                                 const std::vector<float>& w, const float* b, const Activation& act,
                                 const test::VariantGuard& guard, const std::string& desc) {
  const int64_t nx = static_cast<int64_t>(x.size());
  const int64_t ny = s.batch * s.out_channels * numel(s.out_spatial);
  std::vector<uint16_t> xh(x.size());
  for (size_t i = 0; i < x.size(); ++i) xh[i] = floatToHalf(x[i]);
  std::vector<float> xw(x.size()), ref_w(static_cast<size_t>(ny)), ref_x(static_cast<size_t>(ny));
  f16ToF32_ref(xh.data(), xw.data(), nx);
  conv_ref(s, xw.data(), w.data(), b, act, ref_w.data());  // float16 input
  conv_ref(s, x.data(), w.data(), b, act, ref_x.data());   // float32 input
  std::vector<uint16_t> ref_wh(ref_w.size()), ref_xh(ref_x.size());
  f32ToF16_ref(ref_w.data(), ref_wh.data(), ny, {});
  f32ToF16_ref(ref_x.data(), ref_xh.data(), ny, {});
  for (const auto& cfg : test::sweepConfigs(guard.blocking)) {
    forceKernelIsa(cfg.isa);
    setGemmBlocking(cfg.blocking);
    ThreadPool* pool = test::poolFor(cfg.threads);
    for (const bool in16 : {true, false}) {
      const void* in = in16 ? static_cast<const void*>(xh.data()) : static_cast<const void*>(x.data());
      const Storage xs = in16 ? Storage::kF16 : Storage::kF32;
      std::vector<uint16_t> yh(static_cast<size_t>(ny), 0x5555);
      conv.run(in, xs, yh.data(), Storage::kF16, pool);
      const std::vector<uint16_t>& want = in16 ? ref_wh : ref_xh;
      const auto bad = std::mismatch(yh.begin(), yh.end(), want.begin());
      ASSERT_TRUE(bad.first == yh.end()) << desc << " " << cfg.name() << (in16 ? " f16->f16" : " f32->f16") << " at "
                                         << (bad.first - yh.begin()) << ": " << *bad.first << " vs " << *bad.second;
      if (in16) {
        std::vector<float> y(static_cast<size_t>(ny), 7.0f);
        conv.run(in, xs, y.data(), Storage::kF32, pool);
        const int64_t at = firstBitMismatch(ref_w, y);
        ASSERT_EQ(at, -1) << desc << " " << cfg.name() << " f16->f32 at " << at;
      }
    }
  }
}

// conv run on NCHW planes matches ref bit for bit on every ISA, thread count and blocking of the sweep.
void expectPlanesRunMatches(const Conv& conv, const std::vector<float>& x, const std::vector<float>& ref,
                            const test::VariantGuard& guard, const std::string& desc) {
  for (const auto& cfg : test::sweepConfigs(guard.blocking)) {
    forceKernelIsa(cfg.isa);
    setGemmBlocking(cfg.blocking);
    std::vector<float> y(ref.size(), 7.0f);
    conv.run(x.data(), y.data(), test::poolFor(cfg.threads));
    const int64_t bad = firstBitMismatch(ref, y);
    ASSERT_EQ(bad, -1) << desc << " " << cfg.name() << " at " << bad << ": " << y[bad] << " vs " << ref[bad];
  }
}

// Runs Conv under every configuration and compares bits with conv_ref.
// Conv::runAdd: a residual Add and then `post` fused in, on every path and configuration: the bits of the plain
// convolution (reference), the Add, then the activation. Two residual elements are NaN / -inf.
void expectResidualMatches(const ConvShape& s, const std::vector<float>& x, const std::vector<float>& w, const float* b,
                           const Activation& post, std::mt19937& rng, test::VariantGuard& guard,
                           const std::string& desc) {
  std::vector<float> plain(static_cast<size_t>(s.batch * s.out_channels * numel(s.out_spatial)));
  conv_ref(s, x.data(), w.data(), b, Activation{}, plain.data());
  auto r = randomFloats(rng, plain.size());
  r[r.size() / 3] = std::numeric_limits<float>::quiet_NaN();
  r[r.size() / 2] = -std::numeric_limits<float>::infinity();
  const Conv conv(s, w.data(), b, Activation{});
  std::vector<float> want(plain.size());
  for (size_t i = 0; i < plain.size(); ++i) want[i] = applyActivation(plain[i] + r[i], post);
  for (const auto& cfg : test::sweepConfigs(guard.blocking)) {
    forceKernelIsa(cfg.isa);
    setGemmBlocking(cfg.blocking);
    std::vector<float> y(plain.size(), 7.0f);
    conv.runAdd(x.data(), r.data(), post, y.data(), test::poolFor(cfg.threads));
    const int64_t bad = firstBitMismatch(want, y);
    ASSERT_EQ(bad, -1) << desc << " runAdd " << cfg.name() << " at " << bad << ": " << y[bad] << " vs " << want[bad];
  }
}

void expectConvMatches(const ConvShape& s, std::mt19937& rng, const Activation& act, bool with_bias,
                       const char* expect_variant = nullptr) {
  const auto x = randomFloats(rng, static_cast<size_t>(s.batch * s.in_channels * numel(s.in_spatial)));
  const auto w = randomFloats(rng, static_cast<size_t>(s.out_channels * (s.in_channels / s.groups) * numel(s.kernel)));
  const auto bias = randomFloats(rng, static_cast<size_t>(s.out_channels));
  const float* b = with_bias ? bias.data() : nullptr;
  std::vector<float> ref(static_cast<size_t>(s.batch * s.out_channels * numel(s.out_spatial)));
  conv_ref(s, x.data(), w.data(), b, act, ref.data());
  test::VariantGuard guard;
  const Conv conv(s, w.data(), b, act);
  std::string desc = "C=" + std::to_string(s.in_channels) + " M=" + std::to_string(s.out_channels) +
                     " g=" + std::to_string(s.groups) + " N=" + std::to_string(s.batch) + " in=";
  for (size_t i = 0; i < s.in_spatial.size(); ++i) {
    desc += std::to_string(s.in_spatial[i]) + (i + 1 < s.in_spatial.size() ? "x" : "");
  }
  desc += " k=" + std::to_string(s.kernel.back()) + " s=" + std::to_string(s.stride.back()) +
          " d=" + std::to_string(s.dilation.back()) + " p=" + std::to_string(s.pad_begin.back()) +
          " out=" + std::to_string(s.out_spatial.back()) + " variant=" + conv.variant();
  // The exact-mode row-order variants: same bits as the reference.
  for (int threads : {0, 1, 2, 3}) {  // 0: conv_rows_ref; else conv_exact on that many threads
    std::vector<float> y(ref.size(), 7.0f);
    if (threads == 0 && s.in_spatial.size() > 2) continue;
    if (threads == 0) conv_rows_ref(s, x.data(), w.data(), b, act, y.data());
    else conv_exact(s, x.data(), w.data(), b, act, y.data(), test::poolFor(threads));
    const int64_t bad = firstBitMismatch(ref, y);
    ASSERT_EQ(bad, -1) << (threads > 0 ? "conv_exact, threads " + std::to_string(threads) : "conv_rows_ref") << " at "
                       << bad;
  }
  forceKernelIsa("avx2");
  if (expect_variant != nullptr && std::string(sgemmVariant()) == "avx2_fma") {
    EXPECT_STREQ(conv.variant(), expect_variant) << desc;
  }
  expectPlanesRunMatches(conv, x, ref, guard, desc);
  expectFloat16StorageMatches(conv, s, x, w, b, act, guard, desc);
  expectResidualMatches(s, x, w, b, act, rng, guard, desc);
}

ConvShape randomConvShape(std::mt19937& rng, int rank, bool depthwise) {
  for (;;) {
    ConvShape s;
    s.batch = randomInt(rng, 1, 2);
    if (depthwise) {
      s.groups = randomInt(rng, 2, 9);
      s.in_channels = s.out_channels = s.groups;
    } else {
      s.groups = randomInt(rng, 0, 3) == 0 ? randomInt(rng, 2, 3) : 1;
      s.in_channels = s.groups * randomInt(rng, 1, 9);
      s.out_channels = s.groups * randomInt(rng, 1, 20);
    }
    bool ok = true;
    for (int i = 0; i < rank; ++i) {
      const int64_t in = randomInt(rng, 1, depthwise ? 40 : 19), k = randomInt(rng, 1, 5), st = randomInt(rng, 1, 3);
      const int64_t d = randomInt(rng, 0, 3) == 0 ? 2 : 1, pb = randomInt(rng, 0, 2), pe = randomInt(rng, 0, 2);
      const int64_t out = outSize(in, k, st, d, pb, pe);
      if (out < 1) ok = false;
      s.in_spatial.push_back(in), s.kernel.push_back(k), s.stride.push_back(st), s.dilation.push_back(d);
      s.pad_begin.push_back(pb), s.out_spatial.push_back(out);
    }
    if (ok) return s;
  }
}

TEST(Conv, Random2dBitExact) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 150; ++iter) {
    const ConvShape s = randomConvShape(rng, 2, false);
    expectConvMatches(s, rng, test::activationFor(iter), iter % 3 != 0);
  }
}

TEST(Conv, Random1dBitExact) {
  std::mt19937 rng(12);
  for (int iter = 0; iter < 40; ++iter) {
    const ConvShape s = randomConvShape(rng, 1, iter % 3 == 0);
    expectConvMatches(s, rng, test::activationFor(iter), iter % 2 == 0);
  }
}

// The exact-mode variants' contiguous-tile path (1x1, stride 1, no padding; also 3x3 on planes where every tap of a
// row tile is inside) with channel counts that leave partial blocks, groups, and a 1-D case.
TEST(Conv, ExactVariantsOnPointwiseAndInsideTiles) {
  std::mt19937 rng(14);
  for (int64_t m : {1, 3, 4, 5, 9, 17})
    for (int64_t hw : {1, 7, 23, 40}) {
      ConvShape s;
      s.in_channels = 6, s.out_channels = m * (m % 3 == 0 ? 3 : 1), s.groups = m % 3 == 0 ? 3 : 1;
      s.in_channels = s.groups * 5;
      s.in_spatial = {hw, hw}, s.out_spatial = {hw, hw}, s.kernel = {1, 1}, s.stride = {1, 1}, s.dilation = {1, 1};
      s.pad_begin = {0, 0};
      expectConvMatches(s, rng, test::activationFor(static_cast<int>(m + hw)), hw % 2 == 1);
      ConvShape t = s;  // 3x3 valid: rows inside for every tap
      if (hw >= 3) {
        t.kernel = {3, 3}, t.out_spatial = {hw - 2, hw - 2};
        expectConvMatches(t, rng, test::activationFor(static_cast<int>(m)), true);
      }
    }
  ConvShape one;
  one.in_channels = 4, one.out_channels = 6, one.in_spatial = {50}, one.out_spatial = {50}, one.kernel = {1};
  one.stride = {1}, one.dilation = {1}, one.pad_begin = {0};
  expectConvMatches(one, rng, test::activationFor(1), true);
}

TEST(Conv, DepthwiseRandomBitExact) {
  std::mt19937 rng(13);
  for (int iter = 0; iter < 120; ++iter) {
    const ConvShape s = randomConvShape(rng, 2, true);
    expectConvMatches(s, rng, test::activationFor(iter), iter % 3 != 0, "depthwise_blocked_avx2");
  }
}

// The AVX-512 in-place depthwise (stride 1, output rows as wide as the input's): planes of one to many 16-output
// vectors with partial last ones (blocks of 1, 2, 3 vectors), a 1x1 plane, batches, and the generic kernel (5x5,
// 3x1, 1x3 windows); stride 2 with output rows of 12 and more (narrower ones stay channel-blocked).
TEST(Conv, DepthwiseInPlaceBitExact) {
  std::mt19937 rng(18);
  const Activation relu6{ActKind::kClip, 0.0f, 6.0f};
  std::vector<ConvShape> shapes = {
      shape2d(1, 7, 7, 7, 7, 7, 3, 3, 1, 1, 1),      shape2d(2, 5, 5, 5, 14, 14, 3, 3, 1, 1, 1),
      shape2d(1, 6, 6, 6, 4, 5, 3, 3, 1, 1, 1),      shape2d(1, 3, 3, 3, 5, 8, 3, 3, 1, 1, 1),
      shape2d(1, 4, 4, 4, 1, 1, 3, 3, 1, 1, 1),      shape2d(1, 10, 10, 10, 17, 23, 5, 5, 1, 1, 2),
      shape2d(3, 9, 9, 9, 16, 16, 3, 3, 1, 1, 1),
      // Stride 2: odd and even planes, padding 0 and 1, 1..4 row groups with partial last ones, output rows of 12
      // to 40 (partial and several column blocks), a 5x5 window (three tap pairs), batch 2.
      shape2d(1, 5, 5, 5, 24, 24, 3, 3, 2, 1, 1),    shape2d(2, 3, 3, 3, 25, 27, 3, 3, 2, 1, 1),
      shape2d(1, 4, 4, 4, 29, 80, 3, 3, 2, 1, 0),    shape2d(1, 6, 6, 6, 35, 66, 5, 5, 2, 1, 2),
      shape2d(1, 2, 2, 2, 3, 64, 3, 3, 2, 1, 1)};
  for (const bool column : {false, true}) {  // 3x1 and 1x3 windows, padded only along the window
    ConvShape s = shape2d(1, 6, 6, 6, 12, 9, 1, 1, 1, 1, 0);
    s.kernel = column ? std::vector<int64_t>{3, 1} : std::vector<int64_t>{1, 3};
    s.pad_begin = column ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0, 1};
    shapes.push_back(s);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    expectConvMatches(shapes[i], rng, i % 2 ? relu6 : Activation{}, i % 3 != 0);
  }
  test::VariantGuard guard;
  forceKernelIsa("avx512");
  if (std::string(sgemmVariant()) != "avx512") GTEST_SKIP() << "no AVX-512 on this CPU";
  const std::vector<float> w(static_cast<size_t>(10 * 25), 0.5f);
  EXPECT_STREQ(Conv(shapes[0], w.data(), nullptr, {}).variant(), "depthwise_in_place_avx512");
  EXPECT_STREQ(Conv(shapes[5], w.data(), nullptr, {}).variant(), "depthwise_in_place_avx512");
  EXPECT_STREQ(Conv(shapes[7], w.data(), nullptr, {}).variant(), "depthwise_in_place_avx512");
  EXPECT_STREQ(Conv(shapes[10], w.data(), nullptr, {}).variant(), "depthwise_in_place_avx512");
  EXPECT_STREQ(Conv(shape2d(1, 8, 8, 8, 14, 14, 3, 3, 2, 1, 1), w.data(), nullptr, {}).variant(),
               "depthwise_blocked_avx2");  // stride 2, 7 outputs per row
  EXPECT_STREQ(Conv(shape2d(1, 8, 8, 8, 14, 14, 3, 3, 1, 1, 0), w.data(), nullptr, {}).variant(),
               "depthwise_blocked_avx2");  // output narrower than the input
}

TEST(Conv, NetworkLikeShapesBitExact) {
  std::mt19937 rng(14);
  const Activation relu{ActKind::kRelu, 0, 0}, relu6{ActKind::kClip, 0.0f, 6.0f};
  expectConvMatches(shape2d(1, 32, 24, 1, 13, 15, 3, 3, 1, 1, 1), rng, relu, true, "direct_gemm_avx2");
  // Rows < 14 and stride 2: im2col, or with a depth of at most 1152 (or 32 output channels and more) the AVX2
  // output-channel path.
  expectConvMatches(shape2d(1, 32, 40, 1, 13, 13, 3, 3, 1, 1, 1), rng, relu, true, "direct_oc_avx2");
  expectConvMatches(shape2d(1, 32, 40, 1, 28, 28, 3, 3, 2, 1, 1), rng, relu, true, "direct_oc_avx2");
  expectConvMatches(shape2d(1, 160, 24, 1, 13, 13, 3, 3, 1, 1, 1), rng, relu, true, "im2col_gemm_avx2");
  expectConvMatches(shape2d(1, 130, 24, 1, 28, 28, 3, 3, 2, 1, 1), rng, relu, true, "im2col_gemm_avx2");
  // The AVX2 output-channel path's K-blocked tiles (blocks of 25-32 channels deeper than 256): many chunks of
  // taps and bands of rows, a partial last chunk, rows wider than a band and up to the widest it takes (256), blocks
  // of 32 beside a narrower last one (4, 8, 16), stride 2 with a 5x5 window, dilation, groups, batch 2, no bias;
  // rows wider than 256 go to the direct GEMM.
  expectConvMatches(shape2d(1, 64, 64, 1, 20, 23, 3, 3, 1, 1, 1), rng, relu, true, "direct_oc_avx2");
  expectConvMatches(shape2d(2, 30, 100, 1, 5, 130, 3, 3, 1, 1, 1), rng, relu6, true, "direct_oc_avx2");
  expectConvMatches(shape2d(1, 160, 40, 1, 13, 13, 3, 3, 1, 1, 1), rng, relu, false, "direct_oc_avx2");
  expectConvMatches(shape2d(1, 16, 48, 1, 30, 31, 5, 5, 2, 1, 2), rng, {}, true, "direct_oc_avx2");
  expectConvMatches(shape2d(1, 40, 32, 1, 17, 16, 3, 3, 1, 2, 2), rng, relu, true, "direct_oc_avx2");
  expectConvMatches(shape2d(1, 80, 64, 2, 12, 12, 3, 3, 1, 1, 1), rng, relu6, true, "direct_oc_avx2");
  expectConvMatches(shape2d(1, 32, 32, 1, 3, 256, 3, 3, 1, 1, 1), rng, relu, true, "direct_oc_avx2");
  // Blocks of 25-31 channels (28; 32 + 28): their last 8-channel group partial.
  expectConvMatches(shape2d(1, 40, 28, 1, 14, 14, 3, 3, 2, 1, 1), rng, relu, true, "direct_oc_avx2");
  expectConvMatches(shape2d(1, 40, 60, 1, 9, 13, 3, 3, 1, 1, 1), rng, relu6, false, "direct_oc_avx2");
  expectConvMatches(shape2d(1, 32, 32, 1, 3, 257, 3, 3, 1, 1, 1), rng, relu, true, "direct_gemm_avx2");
  // The direct path: many k-blocks, groups, batch 2, dilation, 5x5 with padding 2, M not a multiple of the tile,
  // no bias, a 3x1 window.
  expectConvMatches(shape2d(1, 300, 13, 1, 16, 18, 3, 3, 1, 1, 1), rng, relu6, true, "direct_gemm_avx2");
  expectConvMatches(shape2d(2, 12, 10, 2, 9, 20, 3, 3, 1, 1, 1), rng, relu, true, "direct_gemm_avx2");
  expectConvMatches(shape2d(1, 8, 7, 1, 17, 22, 3, 3, 1, 2, 2), rng, {}, false, "direct_gemm_avx2");
  expectConvMatches(shape2d(1, 12, 19, 1, 14, 30, 5, 5, 1, 1, 2), rng, relu, true, "direct_gemm_avx2");
  expectConvMatches(shape2d(1, 4, 9, 1, 20, 16, 3, 1, 1, 1, 0), rng, relu, true, "direct_gemm_avx2");
  expectConvMatches(shape2d(2, 24, 70, 1, 9, 11, 1, 1, 1, 1, 0), rng, relu, true, "im2col_gemm_avx2");
  // One output position (an SE block's 1x1 layers on a pooled vector): the matrix-vector product over the packed
  // weights — split across threads (576 -> 144), batch 2 with rows past the last whole panel, groups, and no bias.
  const Activation gate{ActKind::kHardSigmoid, 1.0f / 6.0f, 0.5f};
  expectConvMatches(shape2d(1, 576, 144, 1, 1, 1, 1, 1, 1, 1, 0), rng, relu, true, "im2col_gemm_avx2");
  expectConvMatches(shape2d(2, 40, 13, 1, 1, 1, 1, 1, 1, 1, 0), rng, gate, true, "im2col_gemm_avx2");
  expectConvMatches(shape2d(2, 64, 48, 2, 1, 1, 1, 1, 1, 1, 0), rng, gate, true, "im2col_gemm_avx2");
  expectConvMatches(shape2d(2, 24, 20, 1, 1, 1, 1, 1, 1, 1, 0), rng, {}, false, "im2col_gemm_avx2");
  // Pointwise with few output channels (B read in place on AVX-512): several k-blocks, a partial last row panel
  // and a column remainder; groups and batch; a squeeze layer's shape.
  expectConvMatches(shape2d(1, 600, 20, 1, 9, 13, 1, 1, 1, 1, 0), rng, relu6, true, "im2col_gemm_avx2");
  expectConvMatches(shape2d(2, 64, 32, 2, 10, 10, 1, 1, 1, 1, 0), rng, relu, false, "im2col_gemm_avx2");
  expectConvMatches(shape2d(1, 128, 16, 1, 15, 15, 1, 1, 1, 1, 0), rng, relu, true, "im2col_gemm_avx2");
  // Pointwise with more output channels (each task packs its own B): split along M and N at 2 threads, several
  // k-blocks, a partial row panel.
  expectConvMatches(shape2d(1, 300, 160, 1, 7, 7, 1, 1, 1, 1, 0), rng, relu6, true, "im2col_gemm_avx2");
  expectConvMatches(shape2d(1, 100, 130, 1, 4, 5, 1, 1, 1, 1, 0), rng, relu, false, "im2col_gemm_avx2");
  expectConvMatches(shape2d(1, 64, 200, 1, 14, 14, 1, 1, 1, 1, 0), rng, {}, true, "im2col_gemm_avx2");
  // A deep one of few columns (balancedSplit charges each task its rows of A): row halves x column halves at 2
  // threads, three k-blocks, a partial row panel in the second row half.
  expectConvMatches(shape2d(1, 520, 160, 1, 10, 10, 1, 1, 1, 1, 0), rng, relu, true, "im2col_gemm_avx2");
  expectConvMatches(shape2d(1, 3, 16, 1, 30, 30, 7, 7, 2, 1, 3), rng, relu, false);
  expectConvMatches(shape2d(1, 16, 32, 1, 20, 20, 1, 1, 2, 1, 0), rng, {}, true);
  expectConvMatches(shape2d(1, 300, 13, 1, 7, 7, 3, 3, 1, 1, 1), rng, relu6, true);  // K = 2700: many k-blocks
  expectConvMatches(shape2d(1, 24, 24, 24, 28, 28, 3, 3, 1, 1, 1), rng, relu6, true, "depthwise_blocked_avx2");
  expectConvMatches(shape2d(1, 16, 16, 16, 57, 57, 3, 3, 2, 1, 1), rng, relu6, true, "depthwise_blocked_avx2");
  expectConvMatches(shape2d(1, 8, 8, 8, 20, 130, 5, 5, 2, 1, 2), rng, relu6, false, "depthwise_blocked_avx2");
  expectConvMatches(shape2d(1, 32, 32, 32, 112, 112, 3, 3, 2, 1, 1), rng, relu6, true, "depthwise_blocked_avx2");
  // Maps of 56x56 outputs and more run in bands of output rows on several threads (a shorter last band; the windows
  // reaching into the padding at the top and bottom bands; dilation 2 with a 5x5 window; batch 2).
  expectConvMatches(shape2d(1, 16, 16, 16, 57, 57, 3, 3, 1, 1, 1), rng, relu6, true, "depthwise_blocked_avx2");
  expectConvMatches(shape2d(2, 8, 8, 8, 60, 58, 5, 5, 1, 2, 4), rng, relu, false, "depthwise_blocked_avx2");
  // ... each axis its own kernel, stride, dilation and padding (5x3, strides 2 / 1, dilations 2 / 1, pads 2 / 1 at
  // the start, 1 / 1 at the end), and a partial last block of channels (20).
  expectConvMatches(shapeAxes(1, 20, 20, 20, {120, 64}, {5, 3}, {2, 1}, {2, 1}, {2, 1}, {1, 1}), rng, relu6, true,
                    "depthwise_blocked_avx2");
  expectConvMatches(shape2d(1, 20, 20, 20, 7, 7, 3, 3, 1, 1, 1), rng, relu6, true, "depthwise_blocked_avx2");
  expectConvMatches(shape2d(1, 6, 6, 6, 40, 67, 4, 4, 2, 1, 2), rng, relu, true, "depthwise_blocked_avx2");  // even kw
  expectConvMatches(shape2d(1, 6, 6, 6, 30, 50, 3, 3, 3, 1, 1), rng, relu, true, "depthwise_blocked_avx2");
  // Channel blocks of 8 with a partial last block; rows narrower than 8 (plane >= 8 and < 8); dilation.
  expectConvMatches(shape2d(2, 11, 11, 11, 5, 5, 3, 3, 1, 1, 1), rng, relu6, true, "depthwise_blocked_avx2");
  expectConvMatches(shape2d(1, 9, 9, 9, 2, 3, 3, 3, 1, 1, 1), rng, relu, true, "depthwise_blocked_avx2");
  expectConvMatches(shape2d(1, 17, 17, 17, 19, 21, 3, 3, 2, 2, 2), rng, relu, false, "depthwise_blocked_avx2");
  expectConvMatches(shape2d(2, 6, 12, 3, 10, 10, 3, 3, 1, 2, 2), rng, relu, true, "im2col_gemm_avx2");
}

// The paths vectorised across output channels (ConvOcArgs; AVX-512, and AVX2 for shallow convolutions): blocks of 16 and 32 channels and partial ones
// (16, 17, 33, 48, 100 per group), rows split into tiles of 1..14 pixels (widths 1, 5, 14, 15, 29, 30), stride 2
// and uneven strides, dilation, padding, groups, batch 2, with and without bias; then the shapes it leaves to the
// other paths (1x1, a depth of at most kStreamDepth, stride 3, fewer than 16 channels per group).
TEST(Conv, OutputChannelVectorsBitExact) {
  std::mt19937 rng(18);
  const Activation relu{ActKind::kRelu, 0, 0}, relu6{ActKind::kClip, 0.0f, 6.0f}, leaky{ActKind::kLeakyRelu, 0.1f, 0};
  const std::string isa = sgemmVariant();
  auto expectOc = [&](const ConvShape& s, const Activation& act, bool with_bias, bool oc) {
    const std::vector<float> w(static_cast<size_t>(s.out_channels * (s.in_channels / s.groups) * numel(s.kernel)));
    const std::string variant = Conv(s, w.data(), nullptr, act).variant();
    // The AVX2 form takes the shallow ones (all of these with it: depth <= 256) and the AVX-512 one all.
    if (isa == "avx512") {
      EXPECT_EQ(variant == "direct_oc_avx512", oc) << variant;
    }
    {
      test::VariantGuard guard;
      forceKernelIsa("avx2");
      if (std::string(sgemmVariant()) == "avx2_fma") {
        EXPECT_EQ(std::string(Conv(s, w.data(), nullptr, act).variant()) == "direct_oc_avx2", oc) << variant;
      }
    }
    expectConvMatches(s, rng, act, with_bias);
  };
  expectOc(shape2d(1, 6, 16, 1, 9, 14, 3, 3, 1, 1, 1), relu, true, true);
  expectOc(shape2d(1, 7, 17, 1, 6, 5, 3, 3, 1, 1, 1), relu6, false, true);
  expectOc(shape2d(2, 16, 33, 1, 7, 15, 3, 3, 1, 1, 1), leaky, true, true);
  expectOc(shape2d(1, 9, 48, 1, 3, 29, 3, 3, 1, 1, 0), {}, true, true);
  expectOc(shape2d(1, 8, 100, 1, 5, 30, 3, 3, 1, 2, 2), relu, true, true);
  expectOc(shape2d(1, 12, 32, 1, 1, 1, 3, 3, 1, 1, 1), relu, true, true);  // one pixel, all but one tap padding
  expectOc(shape2d(1, 6, 40, 1, 17, 31, 3, 3, 2, 1, 1), relu6, true, true);
  expectOc(shape2d(1, 3, 24, 1, 23, 29, 5, 5, 2, 1, 2), relu, false, true);  // K = 75
  expectOc(shape2d(2, 12, 64, 2, 10, 11, 3, 3, 1, 1, 1), relu, true, true);  // groups of 6 -> 32
  expectOc(shape2d(1, 24, 48, 3, 8, 9, 3, 3, 2, 2, 2), leaky, false, true);  // groups of 8 -> 16, dilation 2
  ConvShape uneven = shape2d(1, 8, 32, 1, 16, 15, 3, 3, 1, 1, 1);
  uneven.stride = {3, 2}, uneven.pad_begin = {0, 1};
  uneven.out_spatial = {outSize(16, 3, 3, 1, 0, 0), outSize(15, 3, 2, 1, 1, 1)};
  expectOc(uneven, relu, true, true);
  // Positions in tiles that run on into the next row (widths 7, 13) and a stem-like 7x7 / 2 over 3 channels.
  expectOc(shape2d(1, 20, 24, 1, 7, 7, 3, 3, 1, 1, 1), relu, true, true);
  expectOc(shape2d(1, 10, 40, 1, 26, 26, 3, 3, 2, 1, 1), relu6, true, true);
  expectOc(shape2d(1, 3, 64, 1, 40, 38, 7, 7, 2, 1, 3), relu, true, true);
  expectOc(shape2d(1, 64, 36, 1, 15, 15, 3, 3, 2, 1, 1), leaky, false, true);  // K = 576 (im2col otherwise)
  expectOc(shape2d(1, 64, 32, 1, 9, 9, 1, 1, 1, 1, 0), relu, true, false);  // 1x1
  expectOc(shape2d(1, 5, 32, 1, 12, 12, 3, 3, 1, 1, 1), relu, true, false);  // K = 45
  expectOc(shape2d(1, 8, 32, 1, 20, 20, 3, 3, 3, 1, 1), relu, true, false);  // stride 3
  expectOc(shape2d(1, 16, 12, 1, 9, 9, 3, 3, 1, 1, 1), relu, true, false);   // 12 channels
}

// The output-channel paths on special values: inputs drawn from signed zeros, ±1, large values (float16 overflow),
// ±inf and NaN, so tiles hold Inf / NaN next to finite sums; float32 and float16 outputs are the reference's bits
// (float16 through floatToHalf, whose NaN payloads F16C would not keep).
TEST(Conv, OutputChannelVectorsSpecialValues) {
  std::mt19937 rng(19);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float choices[] = {0.0f, -0.0f, 1.0f, -1.0f, 3.0e4f, -7.0e4f, 0.5f, inf, -inf, nan};
  for (const ConvShape& s : {shape2d(1, 6, 20, 1, 9, 13, 3, 3, 1, 1, 1), shape2d(1, 7, 36, 1, 11, 10, 3, 3, 2, 1, 1),
                             shape2d(1, 32, 40, 1, 9, 13, 3, 3, 1, 1, 1)}) {  // (the last: K-blocked on AVX2)
    std::vector<float> x(static_cast<size_t>(s.in_channels * numel(s.in_spatial)));
    std::vector<float> w(static_cast<size_t>(s.out_channels * s.in_channels * numel(s.kernel)));
    for (size_t i = 0; i < x.size(); ++i) x[i] = rng() % 40 == 0 ? choices[rng() % 10] : choices[rng() % 7];
    for (auto& v : w) v = rng() % 2 ? 0.25f : -0.5f;
    test::VariantGuard guard;
    const Conv conv(s, w.data(), nullptr, {});
    expectFloat16StorageMatches(conv, s, x, w, nullptr, {}, guard, std::string("special values, ") + conv.variant());
  }
}

// Depthwise kernels multiply padding in as +0 like the reference: a -0 bias stays -0 only where every product is
// -0, an infinite weight times a padding zero is NaN. Inputs and weights drawn from signed zeros, ±1, ±inf, NaN.
TEST(Conv, DepthwiseSpecialValues) {
  std::mt19937 rng(16);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float choices[] = {0.0f, -0.0f, 0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan};
  for (int64_t st : {1, 2}) {
    for (bool special_w : {false, true}) {
      const ConvShape s = shape2d(1, 5, 5, 5, 9, 21, 3, 3, st, 1, 1);
      std::vector<float> x(static_cast<size_t>(5 * 9 * 21)), w(5 * 9), b(5, -0.0f);
      for (auto& v : x) v = choices[rng() % (special_w ? 6 : 9)];
      for (auto& v : w) v = special_w ? choices[rng() % 9] : (rng() % 2 ? 0.5f : -0.5f);
      std::vector<float> want(static_cast<size_t>(5 * s.out_spatial[0] * s.out_spatial[1]));
      conv_ref(s, x.data(), w.data(), b.data(), {}, want.data());
      test::VariantGuard guard;
      const Conv conv(s, w.data(), b.data(), {});
      for (const char* isa : {"avx512", "avx2", "portable"}) {
        forceKernelIsa(isa);
        std::vector<float> got(want.size(), 7.0f);
        conv.run(x.data(), got.data(), nullptr);
        // A NaN result's sign and payload are not specified (docs/numerics.md): NaN where the reference has NaN.
        for (size_t i = 0; i < want.size(); ++i)
          if (std::isnan(want[i]) && std::isnan(got[i])) got[i] = want[i];
        EXPECT_EQ(firstBitMismatch(got, want), -1) << "stride " << st << " " << isa << " " << conv.variant();
      }
    }
  }
}

// Every epilogue activation on a sample of every binade (each 65537th float bit pattern: subnormals, NaNs), ±0, ±inf,
// the smallest subnormals and values around HardSigmoid's corners, through a pointwise layer that copies its input to
// 16 outputs and a depthwise one that copies 8 channels (weights 1, bias -0 so that -0 reaches the epilogue): every
// ISA's epilogue against the reference's.
TEST(Conv, EpilogueActivationsOnSpecialValues) {
  std::mt19937 rng(23);
  std::vector<float> xs;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 65537) {
    const auto u = static_cast<uint32_t>(b);
    float v;
    std::memcpy(&v, &u, 4);
    xs.push_back(v);
  }
  for (float v : randomFloats(rng, 4096, -4.0f, 4.0f)) xs.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {-3.0f, 3.0f, -2.5f, 2.5f, 0.0f, -0.0f, inf, -inf, 1e-45f, -1e-45f, -1e-40f, std::nanf("")}) xs.push_back(v);
  while (xs.size() % 8 != 0) xs.push_back(1.0f);
  const auto n = static_cast<int64_t>(xs.size());
  for (const ConvShape& s : {shape2d(1, 1, 16, 1, 1, n, 1, 1, 1, 1, 0), shape2d(1, 8, 8, 8, 1, n / 8, 1, 1, 1, 1, 0)}) {
    const std::vector<float> w(static_cast<size_t>(s.out_channels), 1.0f), b(w.size(), -0.0f);
    for (int a = 0; a < test::kNumActivations; ++a) {
      const Activation act = test::activationFor(a);
      std::vector<float> want(static_cast<size_t>(s.out_channels * numel(s.out_spatial)));
      conv_ref(s, xs.data(), w.data(), b.data(), act, want.data());
      test::VariantGuard guard;
      const Conv conv(s, w.data(), b.data(), act);
      for (const char* isa : {"avx512", "avx2", "portable"}) {
        forceKernelIsa(isa);
        std::vector<float> got(want.size(), 7.0f);
        conv.run(xs.data(), got.data(), nullptr);
        for (size_t i = 0; i < want.size(); ++i)  // (a NaN's sign and payload are not specified: docs/numerics.md)
          if (std::isnan(want[i]) && std::isnan(got[i])) got[i] = want[i];
        EXPECT_EQ(firstBitMismatch(got, want), -1) << "activation " << a << " " << isa << " " << conv.variant();
      }
    }
  }
}

// float16 storage with special values: signalling and quiet NaNs, infinities, the largest half, subnormals, and
// results that overflow float16 (rounded to ±inf) — through the depthwise, direct, 1x1, im2col and (AVX-512)
// output-channel-vector paths.
TEST(Conv, Float16StorageSpecialValues) {
  std::mt19937 rng(17);
  const uint16_t choices[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x0001, 0x83ff,
                              0x7c00, 0xfc00, 0x7e00, 0x7d01, 0x4800, 0x5a00, 0x3555, 0xc123};
  const ConvShape shapes[] = {shape2d(1, 9, 9, 9, 9, 21, 3, 3, 1, 1, 1), shape2d(1, 9, 9, 9, 9, 21, 3, 3, 2, 1, 1),
                              shape2d(1, 6, 10, 1, 15, 16, 3, 3, 1, 1, 1), shape2d(1, 6, 10, 1, 15, 16, 1, 1, 1, 1, 0),
                              shape2d(1, 6, 10, 1, 15, 16, 3, 3, 2, 1, 1), shape2d(1, 6, 20, 1, 9, 16, 3, 3, 1, 1, 1)};
  for (const ConvShape& s : shapes) {
    const int64_t nx = s.in_channels * numel(s.in_spatial), ny = s.out_channels * numel(s.out_spatial);
    std::vector<uint16_t> xh(static_cast<size_t>(nx));
    for (auto& v : xh) v = rng() % 4 == 0 ? choices[rng() % 16] : floatToHalf(static_cast<float>(rng() % 200) - 100.0f);
    std::vector<float> w(static_cast<size_t>(s.out_channels * (s.in_channels / s.groups) * numel(s.kernel)));
    for (auto& v : w) v = rng() % 2 ? 700.0f : -0.5f;  // 700 * 100 overflows float16
    std::vector<float> xw(xh.size()), ref(static_cast<size_t>(ny));
    f16ToF32_ref(xh.data(), xw.data(), nx);
    conv_ref(s, xw.data(), w.data(), nullptr, {}, ref.data());
    std::vector<uint16_t> want(ref.size());
    f32ToF16_ref(ref.data(), want.data(), ny, {});
    test::VariantGuard guard;
    const Conv conv(s, w.data(), nullptr, {});
    for (const char* isa : {"avx512", "avx2", "portable"}) {
      forceKernelIsa(isa);
      std::vector<uint16_t> got(want.size(), 0x5555);
      conv.run(xh.data(), Storage::kF16, got.data(), Storage::kF16, nullptr);
      size_t infs = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        infs += (want[i] & 0x7fff) == 0x7c00;
        // NaN results' sign and payload are not specified (docs/numerics.md): NaN where the reference has NaN.
        const bool nan_want = (want[i] & 0x7fff) > 0x7c00, nan_got = (got[i] & 0x7fff) > 0x7c00;
        ASSERT_TRUE(nan_want ? nan_got : got[i] == want[i])
            << conv.variant() << " " << isa << " at " << i << ": " << got[i] << " vs " << want[i];
      }
      EXPECT_GT(infs, 0u) << "the case should overflow float16 somewhere";
    }
  }
}

TEST(Conv, KernelLargerThanInputAndZeroDepth) {
  std::mt19937 rng(15);
  // Output positions whose every tap is padding.
  expectConvMatches(shape2d(1, 2, 5, 1, 2, 3, 5, 5, 1, 1, 3), rng, {ActKind::kLeakyRelu, 0.5f, 0}, true);
  // No input channels: K = 0, output is act(bias).
  ConvShape s = shape2d(1, 0, 7, 1, 4, 4, 3, 3, 1, 1, 1);
  expectConvMatches(s, rng, {ActKind::kRelu, 0, 0}, true);
}

TEST(Conv, ThreeDimensionalUsesReference) {
  std::mt19937 rng(16);
  ConvShape s;
  s.batch = 2, s.in_channels = 3, s.out_channels = 4, s.groups = 1;
  s.in_spatial = {4, 5, 6}, s.kernel = {2, 3, 3}, s.stride = {1, 2, 1}, s.dilation = {1, 1, 2};
  s.pad_begin = {1, 1, 0};
  s.out_spatial = {outSize(4, 2, 1, 1, 1, 0), outSize(5, 3, 2, 1, 1, 1), outSize(6, 3, 1, 2, 0, 1)};
  expectConvMatches(s, rng, {ActKind::kRelu, 0, 0}, true, "ref");
}

TEST(Conv, BadShapeThrows) {
  ConvShape s = shape2d(1, 4, 6, 4, 5, 5, 3, 3, 1, 1, 1);  // 6 output channels not divisible by 4 groups
  const std::vector<float> w(100, 0.0f);
  EXPECT_ANY_THROW(Conv(s, w.data(), nullptr, {}));
  s = shape2d(1, 4, 4, 1, 5, 5, 3, 3, 1, 1, 1);
  s.stride = {1};
  EXPECT_ANY_THROW(Conv(s, w.data(), nullptr, {}));
}

TEST(ConvTranspose, RandomBitExact) {
  std::mt19937 rng(17);
  test::VariantGuard guard;
  for (int iter = 0; iter < 60; ++iter) {
    const ConvTransposeShape s = randomTransposeShape(rng, 1 + iter % 3);
    const auto x = randomFloats(rng, static_cast<size_t>(s.batch * s.in_channels * numel(s.in_spatial)));
    const auto w = randomFloats(rng, static_cast<size_t>(s.in_channels * (s.out_channels / s.groups) * numel(s.kernel)));
    const auto bias = randomFloats(rng, static_cast<size_t>(s.out_channels));
    const float* b = iter % 2 ? bias.data() : nullptr;
    std::vector<float> ref(static_cast<size_t>(s.batch * s.out_channels * numel(s.out_spatial)));
    conv_transpose_ref(s, x.data(), w.data(), b, ref.data());
    for (const auto& cfg : test::sweepConfigs(guard.blocking)) {
      forceKernelIsa(cfg.isa);
      std::vector<float> y(ref.size(), 7.0f);
      conv_transpose(s, x.data(), w.data(), b, y.data(), test::poolFor(cfg.threads));
      ASSERT_EQ(firstBitMismatch(ref, y), -1) << "iter " << iter << " " << cfg.name();
    }
  }
}

// Layout::kBlocked8: element (n, c, p) of an [N, C, P] tensor at ((n * C / 8 + c / 8) * P + p) * 8 + c % 8.
std::vector<float> blocked8(const std::vector<float>& x, int64_t n, int64_t c, int64_t p) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n * c; ++i)
    for (int64_t q = 0; q < p; ++q) y[static_cast<size_t>(((i / 8) * p + q) * 8 + i % 8)] = x[static_cast<size_t>(i * p + q)];
  return y;
}

// Channel-blocked inputs and outputs (Conv::run with Layouts, the engine's channel-blocked chains): the reference's
// bits in the other layout, on the blocked paths (depthwise reading and writing blocks, pointwise reading them with
// the output-channel kernel or the GEMM packing B from them, KxK ones on the output-channel kernel over a padded
// blocked copy; weights packed for it or not) and through the planes where a path has no blocked form; runAdd with
// a blocked input, and with a blocked output adding a residual in the same layout; every ISA, thread count and
// blocking (the small blocking's depth of 12 splits an 8-channel block between two packed k-blocks).
TEST(Conv, ChannelBlockedLayoutsBitExact) {
  std::mt19937 rng(23);
  const Activation relu6{ActKind::kClip, 0.0f, 6.0f}, leaky{ActKind::kLeakyRelu, 0.1f, 0};
  int checked = 0;
  auto check = [&](const ConvShape& s, const Activation& act, Layouts l) {
    const int64_t ni = s.in_channels * numel(s.in_spatial), no = s.out_channels * numel(s.out_spatial);
    auto x = randomFloats(rng, static_cast<size_t>(s.batch * ni));
    x[x.size() / 2] = -0.0f;
    const auto w = randomFloats(rng, static_cast<size_t>(s.out_channels * (s.in_channels / s.groups) * numel(s.kernel)));
    const auto bias = randomFloats(rng, static_cast<size_t>(s.out_channels));
    std::vector<float> ref(static_cast<size_t>(s.batch * no)), plain(ref.size());
    conv_ref(s, x.data(), w.data(), bias.data(), act, ref.data());
    conv_ref(s, x.data(), w.data(), bias.data(), Activation{}, plain.data());
    const bool bx = l.x == Layout::kBlocked8, by = l.y == Layout::kBlocked8;
    const auto xin = bx ? blocked8(x, s.batch, s.in_channels, numel(s.in_spatial)) : x;
    const auto want = by ? blocked8(ref, s.batch, s.out_channels, numel(s.out_spatial)) : ref;
    auto r = randomFloats(rng, ref.size());
    std::vector<float> sum(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) sum[i] = applyActivation(plain[i] + r[i], act);
    // The residual in y's layout.
    const auto rin = by ? blocked8(r, s.batch, s.out_channels, numel(s.out_spatial)) : r;
    const auto want_add = by ? blocked8(sum, s.batch, s.out_channels, numel(s.out_spatial)) : sum;
    const std::string desc = "C=" + std::to_string(s.in_channels) + " M=" + std::to_string(s.out_channels) +
                             " g=" + std::to_string(s.groups) + " k=" + std::to_string(s.kernel[0]) +
                             " s=" + std::to_string(s.stride[0]) + " " + std::to_string(s.in_spatial[0]) + "x" +
                             std::to_string(s.in_spatial[1]) + (bx ? " x blocked" : "") + (by ? " y blocked" : "");
    test::VariantGuard guard;
    // Prepared for the layouts, run on planes (an engine run with a callback): the planes' paths, the same bits.
    expectPlanesRunMatches(Conv(s, w.data(), bias.data(), act, l), x, ref, guard, desc + " prepared blocked");
    for (const Layouts expected : {l, Layouts{}}) {  // weights packed for the layouts, or not
      const Conv conv(s, w.data(), bias.data(), act, expected);
      const Conv bare(s, w.data(), bias.data(), Activation{}, expected);
      for (const auto& cfg : test::sweepConfigs(guard.blocking)) {
        forceKernelIsa(cfg.isa);
        setGemmBlocking(cfg.blocking);
        std::vector<float> y(ref.size(), 7.0f);
        conv.run(xin.data(), y.data(), test::poolFor(cfg.threads), l);
        const int64_t bad = firstBitMismatch(want, y);
        ASSERT_EQ(bad, -1) << desc << " " << cfg.name() << " at " << bad << ": " << y[bad] << " vs " << want[bad];
        std::fill(y.begin(), y.end(), 7.0f);
        bare.runAdd(xin.data(), rin.data(), act, y.data(), test::poolFor(cfg.threads), l);
        const int64_t bad_add = firstBitMismatch(want_add, y);
        ASSERT_EQ(bad_add, -1) << desc << " runAdd " << cfg.name() << " at " << bad_add;
      }
    }
    ++checked;
  };
  const Layouts out{.y = Layout::kBlocked8}, in{.x = Layout::kBlocked8};
  const Layouts both{.x = Layout::kBlocked8, .y = Layout::kBlocked8};
  // Depthwise layers writing blocks: strides 1 and 2, 3x3 and 5x5, dilation, rows under and over 8 outputs.
  check(shape2d(1, 8, 8, 8, 9, 11, 3, 3, 1, 1, 1), relu6, out);
  check(shape2d(2, 24, 24, 24, 14, 14, 3, 3, 2, 1, 1), leaky, out);
  check(shape2d(1, 16, 16, 16, 7, 7, 5, 5, 1, 1, 2), {}, out);
  check(shape2d(1, 40, 40, 40, 13, 20, 3, 3, 1, 2, 2), relu6, out);
  // Pointwise layers reading blocks: 1-100 output channels (16-channel halves, the 24-channel tile, tails; more than
  // 64 on the GEMM, B packed from the blocks, position tails of 1-15), one pixel.
  for (const int64_t m : {1, 8, 16, 17, 24, 32, 40, 64, 100}) check(shape2d(1, 16, m, 1, 5, 13, 1, 1, 1, 1, 0), relu6, in);
  check(shape2d(2, 24, 72, 1, 7, 11, 1, 1, 1, 1, 0), leaky, in);
  check(shape2d(1, 40, 96, 1, 3, 5, 1, 1, 1, 1, 0), {}, in);
  check(shape2d(2, 48, 24, 1, 7, 7, 1, 1, 1, 1, 0), {}, in);
  check(shape2d(1, 8, 32, 1, 1, 1, 1, 1, 1, 1, 0), leaky, in);
  // KxK layers on the output-channel kernel reading blocks (a padded blocked copy), writing them, or both: strides
  // 1 and 2, 5x5, dilation, batch 2, 16-channel halves and 24- / 32-channel tiles, deeper than 256 with blocks of 32.
  check(shape2d(1, 8, 16, 1, 6, 7, 3, 3, 1, 1, 1), relu6, in);
  check(shape2d(1, 16, 32, 1, 9, 10, 3, 3, 1, 1, 1), relu6, both);
  check(shape2d(2, 24, 24, 1, 11, 9, 3, 3, 2, 1, 1), leaky, both);
  check(shape2d(1, 16, 40, 1, 13, 12, 5, 5, 2, 1, 2), {}, out);
  check(shape2d(1, 16, 16, 1, 10, 10, 3, 3, 1, 2, 2), relu6, both);
  check(shape2d(1, 40, 32, 1, 7, 9, 3, 3, 1, 1, 1), relu6, both);  // K = 360: the K-blocked tiles
  // Shallow KxK layers (stems, K <= 48) writing blocks on the output-channel kernel (planes go through the GEMM):
  // 3 -> 32 3x3/2, 3 -> 16 3x3, 1 -> 24 5x5 dilated, batch 2.
  check(shape2d(1, 3, 32, 1, 23, 25, 3, 3, 2, 1, 1), relu6, out);
  check(shape2d(2, 3, 16, 1, 13, 17, 3, 3, 1, 1, 1), leaky, out);
  check(shape2d(1, 1, 24, 1, 12, 11, 5, 5, 1, 2, 4), {}, out);
  // No blocked form: through the planes.
  check(shape2d(1, 16, 12, 1, 6, 7, 3, 3, 1, 1, 1), relu6, in);         // (12 output channels)
  // 1x1 layers of stride 2 or 3 on the output-channel kernel (positions read with the stride; odd maps): blocks in and
  // out, blocks in with planes out of more than 64 channels, planes in with blocks out.
  check(shape2d(1, 16, 16, 1, 6, 7, 1, 1, 2, 1, 0), relu6, both);
  check(shape2d(2, 24, 72, 1, 7, 9, 1, 1, 2, 1, 0), leaky, in);
  check(shape2d(1, 16, 40, 1, 11, 11, 1, 1, 3, 1, 0), relu6, out);
  check(shape2d(1, 32, 64, 1, 14, 13, 1, 1, 2, 1, 0), {}, both);
  // ... strides 2 / 1 and 1 / 3 (each axis its own), and padding at the end that no output reads (7 rows, stride 2).
  check(shapeAxes(1, 16, 24, 1, {9, 10}, {1, 1}, {2, 1}, {1, 1}, {0, 0}, {0, 0}), relu6, both);
  check(shapeAxes(2, 24, 72, 1, {8, 11}, {1, 1}, {1, 3}, {1, 1}, {0, 0}, {0, 0}), leaky, in);
  check(shapeAxes(1, 16, 16, 1, {7, 7}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {1, 1}), {}, both);
  // Depthwise layers reading blocks (their rows copied into the padded block), pointwise ones writing them.
  check(shape2d(1, 16, 16, 16, 8, 8, 3, 3, 1, 1, 1), relu6, both);
  check(shape2d(2, 24, 24, 24, 9, 9, 3, 3, 2, 1, 1), leaky, in);
  check(shape2d(1, 16, 24, 1, 5, 6, 1, 1, 1, 1, 0), relu6, both);
  check(shape2d(2, 8, 40, 1, 3, 7, 1, 1, 1, 1, 0), {}, out);
  // Depthwise layers of 56x56 outputs and more (bands of output rows on several threads): both, blocks in, out.
  check(shape2d(1, 16, 16, 16, 57, 56, 3, 3, 1, 1, 1), relu6, both);
  check(shape2d(2, 8, 8, 8, 113, 113, 3, 3, 2, 1, 1), leaky, in);
  check(shape2d(1, 24, 24, 24, 56, 60, 3, 3, 1, 1, 1), {}, out);
  // Deeper than 256 with blocks of 32 output channels (the AVX2 form's K-blocked tiles): reading blocks, and both.
  check(shape2d(1, 264, 40, 1, 5, 13, 1, 1, 1, 1, 0), relu6, in);
  check(shape2d(1, 272, 64, 1, 6, 7, 1, 1, 1, 1, 0), leaky, both);
  EXPECT_EQ(checked, 43);
}

// Which layers have blocked forms on the AVX2 table (what the engine's chains plan with): depthwise both; pointwise
// (stride 1: at most 64 outputs and no more than its inputs, or maps of 27x27 and more; any stride above 1 without
// padding) reading blocks, writing them only from blocks; KxK on
// the output-channel path both (a 3-channel input: writing only); a stem too shallow for that path writing only; no
// form with 12 output channels; none on the portable table.
TEST(Conv, BlockedFormsOfEachLayerKind) {
  test::VariantGuard guard;
  forceKernelIsa("avx2");
  if (std::string(sgemmVariant()) != "avx2_fma") GTEST_SKIP() << "no AVX2 on this CPU";
  auto forms = [](const ConvShape& s) {
    const BlockedForms f = blockedForms(s);
    return std::string(f.in ? "in" : "-") + (f.out ? "out" : "-") + (f.out_needs_in ? "!" : "");
  };
  EXPECT_EQ(forms(shape2d(1, 32, 32, 32, 14, 14, 3, 3, 1, 1, 1)), "inout");   // depthwise
  EXPECT_EQ(forms(shape2d(1, 64, 32, 1, 14, 14, 1, 1, 1, 1, 0)), "inout!");  // projection
  EXPECT_EQ(forms(shape2d(1, 16, 96, 1, 14, 14, 1, 1, 1, 1, 0)), "in-!");    // expansion
  EXPECT_EQ(forms(shape2d(1, 64, 256, 1, 28, 28, 1, 1, 1, 1, 0)), "inout!");  // ... over 27x27 and more
  EXPECT_EQ(forms(shape2d(1, 16, 96, 1, 112, 112, 1, 1, 1, 1, 0)), "in-!");   // ... shallow, a large output
  EXPECT_EQ(forms(shape2d(1, 32, 32, 1, 14, 14, 3, 3, 1, 1, 1)), "inout");   // 3x3
  EXPECT_EQ(forms(shape2d(1, 3, 64, 1, 56, 56, 7, 7, 2, 1, 3)), "-out");     // ResNet's stem (K = 147)
  EXPECT_EQ(forms(shape2d(1, 3, 32, 1, 56, 56, 3, 3, 2, 1, 1)), "-out");     // a shallow stem (K = 27)
  EXPECT_EQ(forms(shape2d(1, 16, 12, 1, 6, 7, 3, 3, 1, 1, 1)), "--");
  EXPECT_EQ(forms(shape2d(1, 16, 16, 1, 6, 7, 1, 1, 2, 1, 0)), "inout!");    // 1x1 of stride 2
  EXPECT_EQ(forms(shape2d(1, 16, 16, 1, 6, 7, 1, 1, 2, 1, 1)), "--");        // ... with padding
  // ... with padding at the end only: a form where no output reads it (7 rows), none where one would (6 rows).
  EXPECT_EQ(forms(shapeAxes(1, 16, 16, 1, {7, 7}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {1, 1})), "inout!");
  EXPECT_EQ(forms(shapeAxes(1, 16, 16, 1, {6, 7}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {1, 1})), "--");
  forceKernelIsa("portable");
  EXPECT_EQ(forms(shape2d(1, 32, 32, 32, 14, 14, 3, 3, 1, 1, 1)), "--");
}

// A blocked layout the tensor cannot have (channels not a multiple of 8, three spatial dims) is an error naming the
// rule, never a read past the tensor.
TEST(Conv, ChannelBlockedLayoutsNeedWholeBlocks) {
  const Layouts in{.x = Layout::kBlocked8}, out{.y = Layout::kBlocked8};
  const ConvShape s = shape2d(1, 12, 16, 1, 4, 4, 1, 1, 1, 1, 0);  // 12 input channels
  const std::vector<float> w(16 * 12, 0.5f), x(12 * 16, 1.0f);
  std::vector<float> y(16 * 16);
  const Conv conv(s, w.data(), nullptr, {}, in);
  EXPECT_THROW(conv.run(x.data(), y.data(), nullptr, in), npuc::Error);
  EXPECT_NO_THROW(conv.run(x.data(), y.data(), nullptr, out));  // 16 output channels: whole blocks
  const ConvShape dw = shape2d(1, 12, 12, 12, 4, 4, 3, 3, 1, 1, 1);
  const std::vector<float> wd(12 * 9, 0.5f);
  std::vector<float> yd(12 * 16);
  EXPECT_THROW(Conv(dw, wd.data(), nullptr, {}, out).run(x.data(), yd.data(), nullptr, out), npuc::Error);
  ConvShape s3;
  s3.batch = 1, s3.in_channels = s3.out_channels = 8, s3.groups = 1;
  s3.in_spatial = s3.out_spatial = {2, 2, 2}, s3.kernel = s3.stride = s3.dilation = {1, 1, 1}, s3.pad_begin = {0, 0, 0};
  const std::vector<float> w3(64, 0.5f), x3(64, 1.0f);
  std::vector<float> y3(64);
  EXPECT_THROW(Conv(s3, w3.data(), nullptr, {}).run(x3.data(), y3.data(), nullptr, in), npuc::Error);
}

}  // namespace
}  // namespace npuc::kernels
