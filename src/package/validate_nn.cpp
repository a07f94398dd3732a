// The reader's checks of the neural-network layer kinds (validate.hpp): convolutions, products, pooling,
// normalisations, softmax. Each kind's int8-affine form is checked beside its float form; the int8-pow2 forms' tables
// are validate_pow2.cpp's, their geometry the float form's.
#include "package/validate.hpp"

#include "kernels/detection.hpp"

#include "kernels/gemm.hpp"
#include "kernels/layers.hpp"
#include "kernels/pow2.hpp"
#include "kernels/quant.hpp"
#include "kernels/recurrent.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace npuc::package {

namespace {

/// The checks of this family, members of a LayerCheck: they read the descriptor (d, x, y, w, what) by name.
struct NnChecks : LayerCheck {
  void conv() const {
    const TensorRef& wt = d.in(1);
    rankIs(x, 4, "x"); rankIs(wt, 4, "w"); rankIs(y, 4, "y");
    // The int8 form (int8-affine packages): int8 x, w, y, int32 bias and requantization table (docs/numerics.md).
    const bool int8 = !pow2 && d.kind == LayerKind::kConv && x.type == ElemType::kI8;
    if (pow2) {
      // the int8-pow2 form: types and table checked by checkPow2Form (validate_pow2.cpp)
    } else if (int8) {
      if (!numericsTraits(p.numerics).affine_codes) bad("{}: int8 convolutions belong to int8-affine packages", what);
      if (d.n_in != 4) bad("{}: the int8 form takes 4 inputs (x, w, bias, requantization), got {}", what, d.n_in);
      typeIs(wt, ElemType::kI8, "w");
      typeIs(y, ElemType::kI8, "y");
    } else {
      if (d.n_in > 3) bad("{}: {} inputs (the float form takes 2 or 3)", what, d.n_in);
      isFloat(x, "x"); isFloat(wt, "w"); isFloat(y, "y");
    }
    if (int8 || pow2) weightRef(wt, what + ": weights");  // (float weights may be computed: read when the layer runs)
    int64_t g = si(0);
    int64_t C = x.dims[1], M = y.dims[1];
    if (C < 1 || M < 1 || g < 1 || g > std::min(C, M) || C % g || M % g)
      bad("{}: group {} does not divide channels {} -> {}", what, g, C, M);
    if (x.dims[0] != y.dims[0]) bad("{}: batch {} -> {}", what, x.dims[0], y.dims[0]);
    bool tr = d.kind == LayerKind::kConvTranspose;
    int64_t w0 = tr ? C : M, w1 = tr ? M / g : C / g;
    if (wt.dims[0] != w0 || wt.dims[1] != w1 || wt.dims[2] != si(1) || wt.dims[3] != si(2))
      bad("{}: weights {} do not match {}x{}x{}x{}", what, dimsStr(wt), w0, w1, si(1), si(2));
    if (tr) {
      // out = (in - 1)*s + (k - 1)*d + 1 - pad_begin - pad_end, pad_end >= -(output padding < max(s, d)).
      auto twindow = [&](int64_t in, int64_t out, int64_t k, int64_t st, int64_t dl, int64_t pb, const char* axis) {
        if (k < 1 || st < 1 || dl < 1 || pb < 0 || k > 1024 || st > 1024 || dl > 1024 || pb > 1024)
          bad("{}: {} window k={} s={} d={} pad={} out of range", what, axis, k, st, dl, pb);
        int64_t pe = (in - 1) * st + (k - 1) * dl + 1 - pb - out;
        if (out < 1 || pe < -(std::max(st, dl) - 1) || pe > (k - 1) * dl)
          bad("{}: {} output size {} does not follow from input {} with k={} s={} d={} pad={}", what, axis, out, in, k, st, dl, pb);
      };
      twindow(x.dims[2], y.dims[2], si(1), si(3), si(5), si(7), "H");
      twindow(x.dims[3], y.dims[3], si(2), si(4), si(6), si(8), "W");
    } else {
      window(x.dims[2], y.dims[2], si(1), si(3), si(5), si(7), "H");
      window(x.dims[3], y.dims[3], si(2), si(4), si(6), si(8), "W");
    }
    if (pow2) return;
    if (!int8) {
      bias(2, static_cast<uint32_t>(M));
      return;
    }
    const TensorRef &b = d.in(2), &tab = d.in(3);
    if (b.type != ElemType::kI32 || b.rank != 1 || b.dims[0] != M) bad("{}: bias must be int32 [{}], got {} {}", what, M, elemName(b.type), dimsStr(b));
    weightRef(b, what + ": bias");
    const std::vector<int32_t> t = int8Table(tab, 4 + 2 * M, 4, what);
    int64_t max_bias = 0;
    for (int64_t m = 0; m < M; ++m) {
      const int32_t mult = t[static_cast<size_t>(4 + 2 * m)], shift = t[static_cast<size_t>(5 + 2 * m)];
      if (!(mult == 0 || mult >= (1 << 30))) bad("{}: multiplier {} of channel {} is not 0 or in [2^30, 2^31)", what, mult, m);
      if (shift < -31 || shift > 30) bad("{}: shift {} of channel {} is outside [-31, 30]", what, shift, m);
      max_bias = std::max<int64_t>(max_bias, std::llabs(static_cast<int64_t>(weightWord(b, m))));
    }
    if (d.act != Act::kNone || d.act_a || d.act_b) bad("{}: the int8 form has no activation (its clamp is in the table)", what);
    const int64_t taps = int64_t(wt.dims[1]) * wt.dims[2] * wt.dims[3];
    if (max_bias + taps * 255 * 128 + 128 > INT32_MAX)  // (+ 128: the output zero point added to it)
      bad("{}: bias up to {} plus {} taps per output could overflow the int32 accumulator", what, max_bias, taps);
  }

  void gemm() const {
    const TensorRef& wt = d.in(1);
    if (d.n_in > 3) bad("{}: {} inputs (the float form takes 2 or 3)", what, d.n_in);
    rankIs(x, 2, "x"); rankIs(wt, 2, "w"); rankIs(y, 2, "y");
    isFloat(x, "x"); isFloat(wt, "w"); isFloat(y, "y");
    weightRef(wt, what + ": weights");
    if (wt.dims[1] != x.dims[1] || y.dims[0] != x.dims[0] || y.dims[1] != wt.dims[0])
      bad("{}: {} x {}^T -> {} is inconsistent", what, dimsStr(x), dimsStr(wt), dimsStr(y));
    bias(2, wt.dims[0]);
  }

  void pool() const {
    rankIs(x, 4, "x"); rankIs(y, 4, "y");
    if (pow2) {
      // int8-pow2 codes (int8 or uint8), the type kept: checkPow2Form
    } else if (d.kind == LayerKind::kMaxPool && x.type == ElemType::kI8) {  // int8 codes (int8-affine packages)
      if (!numericsTraits(p.numerics).affine_codes) bad("{}: int8 pooling belongs to int8-affine packages", what);
      typeIs(y, ElemType::kI8, "y");
      if (paramFloat(w[11]) != -std::numeric_limits<float>::infinity()) bad("{}: int8 max pooling ignores its padding (pad value must be -inf)", what);
      if (d.act != Act::kNone || d.act_a || d.act_b) bad("{}: int8 max pooling has no activation", what);
      if (d.n_in != 1) bad("{}: {} inputs (max pooling takes 1)", what, d.n_in);
    } else if (d.kind == LayerKind::kAvgPool && x.type == ElemType::kI8) {
      // The int8 form (int8-affine packages): x, y int8 and the table [zx, zy, lo, hi, (multiplier, shift) per divisor].
      if (!numericsTraits(p.numerics).affine_codes) bad("{}: int8 average pooling belongs to int8-affine packages", what);
      if (d.n_in != 2) bad("{}: the int8 form takes 2 inputs (x, requantization), got {}", what, d.n_in);
      typeIs(y, ElemType::kI8, "y");
      const int64_t taps = si(0) >= 1 && si(1) >= 1 ? int64_t{si(0)} * si(1) : 0;
      if (taps < 1 || taps > kernels::kMaxAvgPoolTaps) bad("{}: a window of {} taps (the int8 form holds 1 to {})", what, taps, kernels::kMaxAvgPoolTaps);
      const std::vector<int32_t> t = int8Table(d.in(1), 4 + 2 * taps, 4, what);
      for (int64_t k = 0; k < taps; ++k) {
        const int32_t mult = t[static_cast<size_t>(4 + 2 * k)], shift = t[static_cast<size_t>(5 + 2 * k)];
        if (!(mult == 0 || mult >= (1 << 30)) || shift < -31 || shift > 30)
          bad("{}: multiplier {} / shift {} of divisor {}: the multiplier must be 0 or in [2^30, 2^31), the shift in [-31, 30]", what,
              mult, shift, k + 1);
      }
      if (d.act != Act::kNone || d.act_a || d.act_b) bad("{}: the int8 form has no activation (its clamp is in the table)", what);
    } else {
      if (d.n_in != 1) bad("{}: {} inputs (the float form takes 1)", what, d.n_in);
      isFloat(x, "x"); isFloat(y, "y");
    }
    if (x.dims[0] != y.dims[0] || x.dims[1] != y.dims[1]) bad("{}: {} -> {} changes N or C", what, dimsStr(x), dimsStr(y));
    window(x.dims[2], y.dims[2], si(0), si(2), si(4), si(6), "H");
    window(x.dims[3], y.dims[3], si(1), si(3), si(5), si(7), "W");
    if (si(8) < 0 || si(8) > 1024 || si(9) < 0 || si(9) > 1024 || w[10] > 1) bad("{}: end pads / count_include_pad out of range", what);
    if (d.kind == LayerKind::kAvgPool && w[11] != 0) bad("{}: average pooling has no pad value (word 11 must be 0)", what);
    if (d.kind == LayerKind::kMaxPool && std::isnan(paramFloat(w[11]))) bad("{}: the pad value is NaN", what);
    if (pow2 && d.kind == LayerKind::kAvgPool && kernels::pow2::avgPoolDivisor(poolShapeOf(d, w)) == 0)
      bad("{}: the int8-pow2 form needs one divisor for every window; this geometry's differ", what);
  }

  void globalPool() const {
    if (d.kind == LayerKind::kGlobalAvgPool && x.type == ElemType::kI8 && !pow2) {
      // The int8 form (int8-affine packages): x, y int8 and the table [zx, zy, lo, hi, multiplier, shift].
      if (!numericsTraits(p.numerics).affine_codes) bad("{}: int8 global average pooling belongs to int8-affine packages", what);
      if (d.n_in != 2) bad("{}: the int8 form takes 2 inputs (x, requantization), got {}", what, d.n_in);
      typeIs(y, ElemType::kI8, "y");
      const std::vector<int32_t> t = int8Table(d.in(1), 6, 4, what);
      if (!(t[4] == 0 || t[4] >= (1 << 30)) || t[5] < -31 || t[5] > 30)
        bad("{}: multiplier {} / shift {}: the multiplier must be 0 or in [2^30, 2^31), the shift in [-31, 30]", what, t[4], t[5]);
      uint64_t n = 1;
      for (int i = 2; i < x.rank; ++i) n *= x.dims[static_cast<size_t>(i)];
      if (n >= (uint64_t{1} << 23)) bad("{}: {} values per plane (the int8 form sums at most 2^23 - 1)", what, n);
      if (d.act != Act::kNone || d.act_a || d.act_b) bad("{}: the int8 form has no activation (its clamp is in the table)", what);
    } else if (!pow2) {  // (the int8-pow2 form's types and table: checkPow2Form)
      if (d.n_in != 1) bad("{}: {} inputs (the float form takes 1)", what, d.n_in);
      isFloat(x, "x"); isFloat(y, "y");
    }
    if (x.rank < 3 || y.rank != x.rank || y.dims[0] != x.dims[0] || y.dims[1] != x.dims[1])
      bad("{}: {} -> {} is not a global pooling", what, dimsStr(x), dimsStr(y));
    for (int i = 2; i < y.rank; ++i)
      if (y.dims[static_cast<size_t>(i)] != 1) bad("{}: output {} must be 1 on spatial dims", what, dimsStr(y));
  }

  void matMul() const {
    const TensorRef& b = d.in(1);
    kernels::MatMulBatches mb;
    std::string why;
    auto dims = [](const TensorRef& r) { return std::vector<int64_t>(r.dims.begin(), r.dims.begin() + r.rank); };
    if (x.type == ElemType::kI8) {
      // The int8 form (int8-affine packages): a, b, y int8 and the table [za, zb, zy, lo, hi, multiplier, shift].
      if (!numericsTraits(p.numerics).affine_codes) bad("{}: int8 products belong to int8-affine packages", what);
      if (d.n_in != 3 || w[0] != 0) bad("{}: the int8 form takes 3 inputs (a, b, requantization) and no bias, got {} inputs, bias kind {}", what, d.n_in, w[0]);
      typeIs(b, ElemType::kI8, "b");
      typeIs(y, ElemType::kI8, "y");
      if (!kernels::matmulBatches(dims(x), dims(b), dims(y), &mb, &why)) bad("{}: {}", what, why);
      if (mb.K < 1 || mb.K > kernels::kMaxQMatMulDepth) bad("{}: depth {} (the int8 form sums 1 to {} products)", what, mb.K, kernels::kMaxQMatMulDepth);
      const std::vector<int32_t> t = int8Table(d.in(2), 7, 5, what);
      if (!(t[5] == 0 || t[5] >= (1 << 30)) || t[6] < -31 || t[6] > 30)
        bad("{}: multiplier {} / shift {}: the multiplier must be 0 or in [2^30, 2^31), the shift in [-31, 30]", what, t[5], t[6]);
      if (d.act != Act::kNone || d.act_a || d.act_b) bad("{}: the int8 form has no activation (its clamp is in the table)", what);
      return;
    }
    isFloat(x, "a"); isFloat(b, "b"); isFloat(y, "y");
    if (!kernels::matmulBatches(dims(x), dims(b), dims(y), &mb, &why)) bad("{}: {}", what, why);
    if (w[0] > 2 || (w[0] != 0) != (d.n_in == 3)) bad("{}: bias kind {} with {} inputs", what, w[0], d.n_in);
    if (d.n_in == 3) {
      const TensorRef& bias = d.in(2);
      const int64_t want = w[0] == 1 ? mb.N : mb.M;
      if ((bias.type != ElemType::kF32 && bias.type != ft) || bias.rank != 1 || bias.dims[0] != want)
        bad("{}: bias must be float [{}], got {} {}", what, want, elemName(bias.type), dimsStr(bias));
    }
  }

  void softmax() const {
    if (d.n_in != 1) bad("{}: {} inputs (the float form takes 1)", what, d.n_in);
    floatSameShape();
    if (w[0] > 2 || w[1] >= std::max<uint32_t>(1, y.rank))
      bad("{}: softmax kind {} / axis {} out of range", what, w[0], w[1]);
  }

  void lrn() const {
    floatSameShape();
    if (x.rank < 2 || w[0] < 1 || w[0] > 1024) bad("{}: LRN size {} / rank out of range", what, w[0]);
  }

  void channelAffine() const {
    isFloat(x, "x"); isFloat(y, "y");
    if (x.rank < 2 || dimsOf(x) != dimsOf(y)) bad("{}: {} -> {}", what, dimsStr(x), dimsStr(y));
    for (int i = 1; i <= 2; ++i) {
      const TensorRef& r = d.in(i);
      if (r.type != ElemType::kF32 || r.rank != 1 || r.dims[0] != x.dims[1]) bad("{}: scale/shift must be float32 [{}]", what, x.dims[1]);
      weightRef(r, what + ": scale/shift");
    }
  }

  void det() const {
    isFloat(x, "x"); isFloat(y, "y");
    std::vector<int64_t> batch = dimsOf(x);
    if (x.rank < 2 || x.dims[x.rank - 1u] != x.dims[x.rank - 2u] || (batch.resize(x.rank - 2u), dimsOf(y) != batch))
      bad("{}: x {} -> y {} (x [*, M, M], y [*])", what, dimsStr(x), dimsStr(y));
  }

  void instanceNorm() const {
    isFloat(x, "x"); isFloat(y, "y");
    if (x.rank < 2 || dimsOf(x) != dimsOf(y)) bad("{}: {} -> {}", what, dimsStr(x), dimsStr(y));
    if (!std::isfinite(paramFloat(w[0])) || paramFloat(w[0]) < 0) bad("{}: epsilon {} is not a finite non-negative number", what, paramFloat(w[0]));
    for (int i = 1; i <= 2; ++i) {
      const TensorRef& r = d.in(i);
      if ((r.type != ElemType::kF32 && r.type != ft) || r.rank != 1 || r.dims[0] != x.dims[1])
        bad("{}: scale/bias must be float [{}], got {} {}", what, x.dims[1], elemName(r.type), dimsStr(r));
    }
  }

  /// Caffe SSD's DetectionOutput: the parameter words in range, the tensors' sizes those words and the priors imply.
  void detectionOutput() const {
    const TensorRef &loc = d.in(0), &conf = d.in(1), &prior = d.in(2);
    isFloat(loc, "loc"); isFloat(conf, "conf"); isFloat(y, "y");
    if (prior.type != ElemType::kF32 || prior.rank != 3 || prior.dims[0] != 1 || prior.dims[1] != 2 || prior.dims[2] % 4)
      bad("{}: priors must be float32 [1, 2, 4·priors], got {} {}", what, elemName(prior.type), dimsStr(prior));
    if (loc.rank < 1 || conf.rank < 1 || loc.dims[0] != conf.dims[0])
      bad("{}: loc {} and conf {} must hold the same images", what, dimsStr(loc), dimsStr(conf));
    const int64_t images = loc.dims[0], priors = prior.dims[2] / 4;
    const kernels::SsdParams p = ssdFromParams(w.data(), images, priors);
    if (p.classes < 1 || p.classes > 65536) bad("{}: {} classes", what, p.classes);
    if (w[1] > 1 || w[4] > 1) bad("{}: share_location / variance_encoded_in_target must be 0 or 1", what);
    if (w[3] < 1 || w[3] > 3) bad("{}: code_type {} is not 1, 2 or 3", what, w[3]);
    if (!(p.nms_threshold >= 0.0f && p.nms_threshold <= 1.0f) || !(p.eta > 0.0f && p.eta <= 1.0f) || std::isnan(p.confidence_threshold))
      bad("{}: nms_threshold {}, eta {} or confidence_threshold {} out of range", what, p.nms_threshold, p.eta, p.confidence_threshold);
    const uint64_t per_loc = static_cast<uint64_t>(priors) * 4 * (p.share_location ? 1 : static_cast<uint64_t>(p.classes));
    if (loc.numel() != static_cast<uint64_t>(images) * per_loc || conf.numel() != static_cast<uint64_t>(images * priors * p.classes))
      bad("{}: loc {} / conf {} do not hold {} priors of {} classes an image", what, dimsStr(loc), dimsStr(conf), priors, p.classes);
    const uint32_t rows = static_cast<uint32_t>(kernels::ssdOutputRows(p));
    if (y.rank != 4 || y.dims[0] != 1 || y.dims[1] != 1 || y.dims[2] != rows || y.dims[3] != 7)
      bad("{}: y must be [1, 1, {}, 7], got {}", what, rows, dimsStr(y));
  }
};

/// pool_nd: 1 to 3 spatial dims; each window consistent with its dims; Indices only for max pooling.
void checkPoolNd(const LayerCheck& c) {
  const TensorRef &x = c.x, &y = c.y;
  c.isFloat(x, "x");
  c.isFloat(y, "y");
  const uint32_t r = x.rank;
  if (r < 3 || r > 5 || y.rank != r || y.dims[0] != x.dims[0] || y.dims[1] != x.dims[1])
    c.bad("{}: {} pooled into {}", c.what, dimsStr(x), dimsStr(y));
  if (c.w[0] > 1 || c.w[1] > 1) c.bad("{}: max {} / count_include_pad {} are not 0 or 1", c.what, c.w[0], c.w[1]);
  auto word = [&](uint32_t field, uint32_t dim) { return static_cast<int64_t>(static_cast<int32_t>(c.w[3 + field * r + dim])); };
  static const char* kAxes[] = {"", "", "first spatial", "second spatial", "third spatial"};
  for (uint32_t i = 0; i < r; ++i) {
    if (i < 2) {
      for (uint32_t f = 0; f < 5; ++f)
        if (word(f, i) != 0) c.bad("{}: the window words of dim {} (N or C) must be 0", c.what, i);
      continue;
    }
    c.window(x.dims[i], y.dims[i], word(0, i), word(1, i), word(2, i), word(3, i), kAxes[i]);
    if (word(4, i) < 0 || word(4, i) > 1024) c.bad("{}: pad end {} of dim {} out of range", c.what, word(4, i), i);
  }
  if (c.d.n_out == 2) {
    if (c.w[0] != 1) c.bad("{}: indices of an average pooling", c.what);
    c.typeIs(c.d.out(1), ElemType::kI64, "indices");
    if (dimsOf(c.d.out(1)) != dimsOf(y)) c.bad("{}: indices {} for values {}", c.what, dimsStr(c.d.out(1)), dimsStr(y));
  }
}

/// recurrent: the words in range (rnnFromParams reads them as they are), the inputs and outputs the present-flags
/// name, each of the size x, the layout, hidden and the directions give.
void checkRecurrent(const LayerCheck& c) {
  const std::vector<uint32_t>& w = c.w;
  if (w[0] > 2 || w[1] < 1 || w[1] > 2 || w[2] > 1 || (w[1] == 2 && w[2]) || w[3] > 1 || w[5] > 1 || w[6] > 1)
    c.bad("{}: cell {}, directions {}, reverse {}, layout {}, linear_before_reset {} or input_forget {} out of range",
          c.what, w[0], w[1], w[2], w[3], w[5], w[6]);
  const auto cell = static_cast<kernels::RnnCell>(w[0]);
  const bool lstm = cell == kernels::RnnCell::kLstm;
  const float clip = paramFloat(w[4]);
  if (!(clip >= 0.0f) || !std::isfinite(clip)) c.bad("{}: clip {} is not a finite non-negative number", c.what, clip);
  const bool q8 = (w[7] & kRnnInInt8) != 0;
  if (w[7] > 63 || (!lstm && (w[7] & (kRnnInP | kRnnInC0))) || (q8 && cell == kernels::RnnCell::kRnn))
    c.bad("{}: inputs-present word {} names inputs a {} layer lacks", c.what, w[7], w[0]);
  if (w[8] < 1 || w[8] > 7 || (!lstm && (w[8] & kRnnOutYc))) c.bad("{}: outputs-present word {} out of range", c.what, w[8]);
  const int acts = static_cast<int>(w[1]) * kernels::rnnActivations(cell);
  for (int a = 0; a < kRnnMaxActivations; ++a) {
    const uint32_t* q = &w[10 + 4 * static_cast<size_t>(a)];
    if (a >= acts) {
      if (q[0] || q[1] || q[2] || q[3]) c.bad("{}: activation {} is set; the layer has {}", c.what, a, acts);
      continue;
    }
    if (q[0] > 2 || q[1] >= static_cast<uint32_t>(kernels::UnaryOp::kCount) || !std::isfinite(paramFloat(q[2])) ||
        !std::isfinite(paramFloat(q[3])))
      c.bad("{}: activation {} (kind {}, op {}, alpha {}, beta {}) out of range", c.what, a, q[0], q[1], paramFloat(q[2]), paramFloat(q[3]));
  }
  const int n_in = (q8 ? 3 : 2) + std::popcount(w[7] & (kRnnInSeqLens | kRnnInH0 | kRnnInC0)), n_out = std::popcount(w[8]);
  if (c.d.n_in != n_in || c.d.n_out != n_out)
    c.bad("{}: {} inputs and {} outputs; the present-flags name {} and {}", c.what, c.d.n_in, c.d.n_out, n_in, n_out);
  const TensorRef &x = c.x, &wt = c.d.in(1);
  if (q8) c.typeIs(x, ElemType::kI8, "x");
  else c.isFloat(x, "x");
  c.rankIs(x, 3, "x");
  const bool bm = w[3] != 0;
  const uint64_t seq = bm ? x.dims[1] : x.dims[0], batch = bm ? x.dims[0] : x.dims[1], input = x.dims[2], hidden = w[9];
  const uint64_t dirs = w[1], gates = static_cast<uint64_t>(kernels::rnnGates(cell));
  if (hidden < 1 || hidden > wt.numel()) c.bad("{}: hidden {} for weights of {} values", c.what, hidden, wt.numel());
  // [W | R | B | P] per the flags (hidden and input at most the weights' element count, < 2^32; the products checked).
  const uint64_t gh = gates * hidden;
  uint64_t wi = 0, rh = 0, want = 0;
  const bool fits = input <= wt.numel() && !__builtin_mul_overflow(gh, input, &wi) && !__builtin_mul_overflow(gh, hidden, &rh) &&
                    wi <= wt.numel() && rh <= wt.numel() &&  // (so the sum below cannot wrap)
                    !__builtin_mul_overflow(dirs, wi + rh + ((w[7] & kRnnInB) ? 2 * gh : 0) + ((w[7] & kRnnInP) ? 3 * hidden : 0), &want);
  if (!q8 && (!fits || wt.rank != 1 || wt.dims[0] != want || (wt.type != ElemType::kF32 && wt.type != c.ft)))
    c.bad("{}: weights must be float [{}] (W, R{}{} of {} direction(s), {} gates, hidden {}, input {}), got {} {}", c.what,
          want, (w[7] & kRnnInB) ? ", B" : "", (w[7] & kRnnInP) ? ", P" : "", dirs, gates, hidden, input, elemName(wt.type), dimsStr(wt));
  if (q8) {  // int8 [W | R], then float32 [B | P | W's scales | R's scales | sx | zx] in the weight space
    const TensorRef& wf = c.d.in(2);
    const uint64_t tail = dirs * (((w[7] & kRnnInB) ? 2 * gh : 0) + ((w[7] & kRnnInP) ? 3 * hidden : 0) + 2 * gh) + 2;
    if (!fits || input > (1u << 16) || hidden > (1u << 16) || wt.type != ElemType::kI8 || wt.rank != 1 || wt.dims[0] != dirs * (wi + rh))
      c.bad("{}: int8 weights must be int8 [{}] (W, R; input and hidden at most 65536), got {} {}", c.what, dirs * (wi + rh),
            elemName(wt.type), dimsStr(wt));
    if (wf.type != ElemType::kF32 || wf.rank != 1 || wf.dims[0] != tail)
      c.bad("{}: the int8 form's float part must be float32 [{}], got {} {}", c.what, tail, elemName(wf.type), dimsStr(wf));
    c.weightRef(wf, "the int8 recurrent layer's scales");
    auto f = [&](uint64_t i) { return paramFloat(static_cast<uint32_t>(c.weightWord(wf, static_cast<int64_t>(i)))); };
    for (uint64_t i = tail - 2 * dirs * gh - 2; i < tail - 2; ++i)
      if (!(f(i) > 0.0f) || !std::isfinite(f(i))) c.bad("{}: row scale {} is {} (positive and finite)", c.what, i, f(i));
    const float sx = f(tail - 2), zx = f(tail - 1);
    if (!(sx > 0.0f) || !std::isfinite(sx) || !(zx >= -128.0f && zx <= 127.0f) || zx != std::nearbyint(zx))
      c.bad("{}: x scale {} / zero point {} (a positive scale, an int8 zero point)", c.what, sx, zx);
  }
  const std::vector<int64_t> state = bm ? std::vector<int64_t>{static_cast<int64_t>(batch), static_cast<int64_t>(dirs), static_cast<int64_t>(hidden)}
                                        : std::vector<int64_t>{static_cast<int64_t>(dirs), static_cast<int64_t>(batch), static_cast<int64_t>(hidden)};
  int k = q8 ? 3 : 2;
  if (w[7] & kRnnInSeqLens) {
    const TensorRef& sl = c.d.in(k++);
    c.typeIs(sl, ElemType::kI32, "sequence_lens");
    if (sl.rank != 1 || sl.dims[0] != batch) c.bad("{}: sequence_lens must be [{}], got {}", c.what, batch, dimsStr(sl));
  }
  for (uint32_t flag : {kRnnInH0, kRnnInC0})
    if (w[7] & flag) {
      const TensorRef& st = c.d.in(k++);
      c.isFloat(st, "initial state");
      if (dimsOf(st) != state) c.bad("{}: initial state {} is not {}", c.what, dimsStr(st), fmt::join(state, "x"));
    }
  int o = 0;
  for (uint32_t flag : {kRnnOutY, kRnnOutYh, kRnnOutYc})
    if (w[8] & flag) {
      const TensorRef& out = c.d.out(o++);
      c.isFloat(out, "output");
      const std::vector<int64_t> want_dims =
          flag != kRnnOutY ? state
          : bm ? std::vector<int64_t>{static_cast<int64_t>(batch), static_cast<int64_t>(seq), static_cast<int64_t>(dirs), static_cast<int64_t>(hidden)}
               : std::vector<int64_t>{static_cast<int64_t>(seq), static_cast<int64_t>(dirs), static_cast<int64_t>(batch), static_cast<int64_t>(hidden)};
      if (dimsOf(out) != want_dims) c.bad("{}: output {} is {}, not {}", c.what, o - 1, dimsStr(out), fmt::join(want_dims, "x"));
    }
}

}  // namespace

const KindCheck kind_checks::kRecurrent = &checkRecurrent;
const KindCheck kind_checks::kDetectionOutput = [](const LayerCheck& c) { NnChecks{c}.detectionOutput(); };
const KindCheck kind_checks::kConv = [](const LayerCheck& c) { NnChecks{c}.conv(); };
const KindCheck kind_checks::kConvTranspose = [](const LayerCheck& c) { NnChecks{c}.conv(); };
const KindCheck kind_checks::kGemm = [](const LayerCheck& c) { NnChecks{c}.gemm(); };
const KindCheck kind_checks::kMaxPool = [](const LayerCheck& c) { NnChecks{c}.pool(); };
const KindCheck kind_checks::kAvgPool = [](const LayerCheck& c) { NnChecks{c}.pool(); };
const KindCheck kind_checks::kGlobalAvgPool = [](const LayerCheck& c) { NnChecks{c}.globalPool(); };
const KindCheck kind_checks::kGlobalMaxPool = [](const LayerCheck& c) { NnChecks{c}.globalPool(); };
const KindCheck kind_checks::kMatMul = [](const LayerCheck& c) { NnChecks{c}.matMul(); };
const KindCheck kind_checks::kSoftmax = [](const LayerCheck& c) { NnChecks{c}.softmax(); };
const KindCheck kind_checks::kLrn = [](const LayerCheck& c) { NnChecks{c}.lrn(); };
const KindCheck kind_checks::kChannelAffine = [](const LayerCheck& c) { NnChecks{c}.channelAffine(); };
const KindCheck kind_checks::kInstanceNorm = [](const LayerCheck& c) { NnChecks{c}.instanceNorm(); };
const KindCheck kind_checks::kDet = [](const LayerCheck& c) { NnChecks{c}.det(); };

const KindCheck kind_checks::kPoolNd = &checkPoolNd;

}  // namespace npuc::package
