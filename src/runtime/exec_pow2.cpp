// The int8-pow2 forms (TIDL's dynamic quantization, docs/numerics.md; runtime_impl.hpp): a layer whose last input is
// its table (conv, conv_transpose, gemm, binary add / max / mul / prelu, concat, resize, softmax, average and global
// average pooling, quantize, dequantize) runs here instead of its kind's float form, as do max and global max pooling over
// codes; the slots' q's and range histories are the package's state from frame to frame.
#include "runtime/runtime_impl.hpp"

namespace npuc {

void Runtime::Impl::resetPow2() {
  if (!pkg.pow2) return;
  p2_slots.assign(pkg.pow2->slots, {});
  for (const Step& s : steps)
    if (s.p2 && s.p2->out.slot >= 0) p2_slots[static_cast<size_t>(s.p2->out.slot)] = kernels::pow2::makeSlot(s.p2->out, pkg.pow2->options);
}


bool Runtime::Impl::preparePow2(Step& s) {
  const package::Descriptor& d = *s.d;
  const package::Pow2Form form = package::pow2Form(pkg.numerics, d);
  if (form == package::Pow2Form::kCodes) {
    s.p2_codes = true;
    return false;  // the pool's geometry is prepared as for the float form
  }
  if (form == package::Pow2Form::kNone) return false;
  const package::TensorRef& tab = d.in(d.n_in - 1);
  kernels::pow2::Table t;
  std::string why = kernels::pow2::decodeTable(reinterpret_cast<const int32_t*>(s.in.back()), tab.dims[0], &t);
  if (!why.empty()) fault(fmt::format("seq {}: int8-pow2 table: {}", d.seq, why));
  s.p2 = t;
  if (d.kind == LayerKind::kConv) windowShape(s, s.cs);
  if (d.kind == LayerKind::kConvTranspose) windowShape(s, s.ts);
  if (d.kind == LayerKind::kAvgPool) s.ps = package::poolShapeOf(*s.d, s.p);
  if (d.kind == LayerKind::kGemm) {  // y [M, N] = x [M, K] w [N, K]^T: a 1x1 convolution over a batch of M
    const Shape &x = s.shapes[0], &w = s.shapes[1];
    s.cs.batch = x[0];
    s.cs.in_channels = x[1];
    s.cs.out_channels = w[0];
    s.cs.groups = 1;
    s.cs.in_spatial = s.cs.out_spatial = s.cs.kernel = s.cs.stride = s.cs.dilation = {1, 1};
    s.cs.pad_begin = {0, 0};
  }
  if ((d.kind == LayerKind::kConv || d.kind == LayerKind::kGemm) && !opts.exact)
    s.p2_w = kernels::pow2::packWeights(s.cs, reinterpret_cast<const int16_t*>(s.in[1]));
  return true;
}

namespace {

namespace pw = kernels::pow2;

/// A layer in its int8-pow2 form as it runs: its table, the slot of its output codes (none for a dequantize), the
/// package's options; one member per form.
struct Pow2Run {
  Runtime::Impl& im;
  Runtime::Impl::Step& s;
  const pw::Table& t;
  const pw::Options& o;
  pw::Slot* out;
  int64_t n;  // output elements

  /// Input i: codes at the q of its slot now.
  pw::Codes codes(int i) const {
    return pw::Codes{s.in[static_cast<size_t>(i)], s.d->in(i).type == ElemType::kI8,
                     im.p2_slots[static_cast<size_t>(t.in_slots[static_cast<size_t>(i)])].q};
  }

  void quantize() const {
    const auto* x = reinterpret_cast<const float*>(s.in[0]);
    if (!t.out.is_signed) {  // unsigned codes (inElementType 0): the negative inputs they clip to 0, for the trace
      int64_t neg = 0;
      for (int64_t i = 0; i < n; ++i) neg += x[i] < 0.0f;
      im.clipped[static_cast<size_t>(s.d->seq)] = neg;
    }
    im.opts.exact ? pw::quantize(x, n, t.out, *out, o, s.out) : pw::quantizeFast(x, n, t.out, *out, o, s.out);
  }
  void dequantize() const { (im.opts.exact ? pw::dequantize : pw::dequantizeFast)(codes(0), n, reinterpret_cast<float*>(s.out)); }
  /// binary: Add (fast: in int32 on AVX-512), Max, Mul or PRelu (one scalar loop each: integer and exact, both modes).
  void binary() const {
    const auto op = static_cast<kernels::BinaryOp>(s.p[0]);  // (validated: Add, Max, Mul or PRelu)
    if (op == kernels::BinaryOp::kPRelu) {  // slopes [1, C or 1, 1, ...] (validated)
      const Shape& x = s.shapes[0];
      const int64_t channels = shapeNumel(s.shapes[1]), outer = x[0];
      const int64_t inner = outer > 0 && channels > 0 ? n / (outer * channels) : 0;
      pw::prelu(codes(0), reinterpret_cast<const int16_t*>(s.in[1]), outer, channels, inner, t.qw, t.out, *out, o, s.out, im.p2_acc);
      return;
    }
    if (op == kernels::BinaryOp::kMax) return (void)pw::maximum(codes(0), codes(1), n, t.out, *out, o, s.out, im.p2_acc);
    if (op == kernels::BinaryOp::kMul) return (void)pw::multiply(codes(0), codes(1), n, t.out, *out, o, s.out, im.p2_acc);
    (im.opts.exact ? pw::add : pw::addFast)(codes(0), codes(1), n, t.out, *out, o, s.out, im.p2_acc);
  }
  void concat() const {
    const size_t axis = s.p[0], k_in = t.in_slots.size();
    const Shape& y = s.shapes.back();
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= y[i];
    for (size_t i = axis + 1; i < y.size(); ++i) inner *= y[i];
    std::vector<pw::Codes> ins;
    std::vector<int64_t> chunks;
    for (size_t k = 0; k < k_in; ++k) {
      ins.push_back(codes(static_cast<int>(k)));
      chunks.push_back(s.shapes[k][axis] * inner);
    }
    im.opts.exact ? pw::concat(ins, chunks, outer, t.out, *out, o, s.out, im.p2_acc)
                  : pw::concatFast(ins, chunks, outer, t.out, *out, o, s.out, im.p2_acc, im.p2_acc32);
  }
  /// conv_transpose: the exact scattered sums (one loop for both modes), finished at 2^-(qx + qw).
  void convTranspose() const {
    const pw::Codes x = codes(0);
    im.p2_acc.resize(static_cast<size_t>(n));
    pw::convTransposeAcc(s.ts, x, reinterpret_cast<const int16_t*>(s.in[1]), t.qw, reinterpret_cast<const int32_t*>(s.in[2]),
                         t.qb, o.round_add, im.p2_acc.data());
    pw::finish(im.p2_acc.data(), n, x.q + t.qw, 1, t.out, *out, o, s.out);
  }
  /// resize (linear / cubic): the taps of its words' specification, their integer weights' sums, finished.
  void resize() const {
    const Shape &x = s.shapes[0], &y = s.shapes.back();
    const auto taps = kernels::resizeTaps(package::resizeSpecFromParams(s.p, x.size()), x, y);
    im.p2_acc.resize(static_cast<size_t>(n));
    const pw::Codes cx = codes(0);
    pw::resizeAcc(taps, x, y, cx, im.p2_acc.data());
    pw::finish(im.p2_acc.data(), n, cx.q + pw::kResizeF * static_cast<int>(x.size()), 1, t.out, *out, o, s.out);
  }
  /// softmax into one byte per class (fixed q: the slot is not updated).
  void softmax() const {
    const Shape& y = s.shapes.back();
    const size_t axis = s.p[1];  // (validated: kind 0, an axis of y)
    int64_t outer = 1, len = 1, inner = 1;
    for (size_t i = 0; i < y.size(); ++i) (i < axis ? outer : i == axis ? len : inner) *= y[i];
    pw::softmax(codes(0), outer, len, inner, o.round_add, s.out);
  }
  void avgPool() const { pw::avgPool(s.ps, codes(0), t.out, *out, o, s.out, im.p2_acc); }
  void globalAvgPool() const {
    const Shape& x = s.shapes[0];
    const int64_t planes = x[0] * x[1], size = planes ? shapeNumel(x) / planes : 0;
    pw::globalAvgPool(codes(0), planes, size, t.out, *out, o, s.out, im.p2_acc);
  }
  /// conv and gemm (a 1x1 convolution: preparePow2 gave it its ConvShape).
  void conv() const {
    const pw::Codes x = codes(0);
    // --exact: the portable plane sums (one C++ source built for the baseline and for AVX2, as int8-affine's
    // QConvPath::kBaseline; convAcc's integers by test — convAcc itself, a loop per output and tap, takes half a
    // minute a ResNet-50 frame); fast: the same integers in int32 on AVX-512 VNNI where the layer allows it.
    const auto* w = reinterpret_cast<const int16_t*>(s.in[1]);
    const auto* b = reinterpret_cast<const int32_t*>(s.in[2]);
    if (!im.opts.exact) {
      pw::convFinishFast(s.cs, x, w, s.p2_w, t.qw, b, t.qb, t.out, *out, o, s.out, im.p2_acc, im.p2_acc32, im.pool.get());
      return;
    }
    im.p2_acc.resize(static_cast<size_t>(n));
    pw::convAccFast(s.cs, x, w, t.qw, b, t.qb, o.round_add, im.p2_acc.data(), im.pool.get(), pw::bestPow2Path());
    pw::finish(im.p2_acc.data(), n, x.q + t.qw, 1, t.out, *out, o, s.out);
  }
};

}  // namespace

void Runtime::Impl::execPow2(Step& s) {
  const package::Descriptor& d = *s.d;
  if (s.p2_codes && d.kind == LayerKind::kGlobalMaxPool) {  // the largest code of each plane: exact, both modes
    const Shape& x = s.shapes[0];
    const int64_t planes = x[0] * x[1], size = planes ? shapeNumel(x) / planes : 0;
    return pw::globalMaxPool(s.in[0], d.in(0).type == ElemType::kI8, planes, size, s.out, pool.get());
  }
  if (s.p2_codes)  // max over codes of one q: exact (fast mode: the int8 kernel)
    return (opts.exact ? pw::maxPool : pw::maxPoolFast)(s.ps, s.in[0], d.in(0).type == ElemType::kI8, s.out, pool.get());
  const pw::Table& t = *s.p2;
  const Pow2Run run{*this, s, t, pkg.pow2->options, t.out.slot >= 0 ? &p2_slots[static_cast<size_t>(t.out.slot)] : nullptr,
                    static_cast<int64_t>(d.out(0).numel())};
  switch (d.kind) {  // the forms with a table (package::pow2Form)
    case LayerKind::kQuantize: return run.quantize();
    case LayerKind::kDequantize: return run.dequantize();
    case LayerKind::kBinary: return run.binary();
    case LayerKind::kConcat: return run.concat();
    case LayerKind::kAvgPool: return run.avgPool();
    case LayerKind::kSoftmax: return run.softmax();
    case LayerKind::kConvTranspose: return run.convTranspose();
    case LayerKind::kResize: return run.resize();
    case LayerKind::kGlobalAvgPool: return run.globalAvgPool();
    default: return run.conv();  // conv, gemm
  }
}

}  // namespace npuc
