// How the neural-network layer kinds run (runtime_impl.hpp): convolutions, products, pooling, normalisations,
// softmax, each in its float form (--exact: the reference kernels; fast: the packed SIMD ones, the same bits) and, where
// it has one, its int8-affine form (exact integer sums in both modes).
#include "runtime/runtime_impl.hpp"

#include "kernels/detection.hpp"
#include "kernels/recurrent.hpp"

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;

/// Whether reference r lies in the weight space (a package constant: it never changes between runs).
bool isWeight(Runtime::Impl& im, const package::TensorRef& r) {
  const Space& w = im.space("weight");
  return r.addr >= w.addr && r.addr - w.addr < w.size;
}

void prepareConv(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  Runtime::Impl::windowShape(s, s.cs);
  if (d.in(0).type == ElemType::kI8) {  // the int8 form: the requantization table (validated) read once
    const int32_t* t = reinterpret_cast<const int32_t*>(s.in[3]);
    kernels::QOutput q;
    q.zero_point = t[1];
    q.lo = t[2];
    q.hi = t[3];
    for (int64_t m = 0; m < s.cs.out_channels; ++m) q.multiplier.push_back({t[4 + 2 * m], t[5 + 2 * m]});
    // (weights and bias are package constants: they outlive the step) --exact runs the portable path: plain
    // C++ loops without intrinsics over the same integers (qconv_ref's bytes, tested on every path); fast
    // mode the widest path the CPU has.
    s.qconv = std::make_unique<kernels::QConv>(s.cs, reinterpret_cast<const int8_t*>(s.in[1]),
                                               reinterpret_cast<const int32_t*>(s.in[2]), t[0], std::move(q),
                                               im.opts.exact ? kernels::QConvPath::kBaseline : kernels::bestQConvPath());
    return;
  }
  if (d.n_in > 2) s.bias = reinterpret_cast<const float*>(s.in[2]);
  if (!isWeight(im, d.in(1))) return;  // weights the model computes: read (and packed, in fast mode) on every run
  s.w = Runtime::Impl::weightsF32(s, 1);
  if (!im.opts.exact) s.conv = std::make_unique<kernels::Conv>(s.cs, s.w, s.bias, s.act);
}

void runConv(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  if (s.qconv)  // --exact: the portable path; fast: the widest path (both qconv_ref's bytes, exact integer sums)
    return s.qconv->run(reinterpret_cast<const int8_t*>(s.in[0]), reinterpret_cast<int8_t*>(s.out), im.pool.get());
  if (s.conv) {
    // The fast kernels read and write float16 storage themselves (no whole-tensor conversion passes).
    s.conv->run(s.in[0], im.storageOf(d.in(0)), s.out, im.storageOf(d.out(0)), im.pool.get());
    return;
  }
  const float* w = s.w ? s.w : im.inF(s, 1);
  if (!s.w && !im.opts.exact) {  // computed weights, fast mode: packed for this run
    kernels::Conv(s.cs, w, s.bias, s.act).run(s.in[0], im.storageOf(d.in(0)), s.out, im.storageOf(d.out(0)), im.pool.get());
    return;
  }
  kernels::conv_exact(s.cs, im.inF(s, 0), w, s.bias, s.act, im.outF(s), im.pool.get());
  im.store(s);
}

void prepareConvTranspose(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  Runtime::Impl::windowShape(s, s.ts);
  if (isWeight(im, d.in(1))) s.w = Runtime::Impl::weightsF32(s, 1);  // (else the model computes them: read per run)
  if (d.n_in > 2) s.bias = reinterpret_cast<const float*>(s.in[2]);
  s.post_act = true;
}

void runConvTranspose(Runtime::Impl& im, Step& s) {
  const float* x = im.inF(s, 0);
  const float* w = s.w ? s.w : im.inF(s, 1);
  float* y = im.outF(s);
  if (im.opts.exact) kernels::conv_transpose_ref(s.ts, x, w, s.bias, y);
  else kernels::conv_transpose(s.ts, x, w, s.bias, y, im.pool.get());
  im.store(s);
}

void prepareGemm(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  s.w = Runtime::Impl::weightsF32(s, 1);
  if (d.n_in > 2) s.bias = reinterpret_cast<const float*>(s.in[2]);
  if (!im.opts.exact) s.packed_w = std::make_unique<kernels::PackedA>(s.shapes[1][0], s.shapes[1][1], s.w, s.shapes[1][1], false);
}

void runGemm(Runtime::Impl& im, Step& s) {
  const Shape &xs = s.shapes[0], &ws = s.shapes[1];
  kernels::GemmArgs g;
  g.M = xs[0];
  g.K = xs[1];
  g.N = ws[0];
  g.A = im.inF(s, 0);
  g.lda = g.K;
  g.B = s.w;
  g.ldb = g.K;
  g.transB = true;
  g.C = im.outF(s);
  g.ldc = g.N;
  g.bias = s.bias;
  g.bias_kind = s.bias ? kernels::BiasKind::kPerCol : kernels::BiasKind::kNone;
  g.act = s.act;
  if (im.opts.exact) {
    kernels::sgemm_ref(g);
  } else {
    // y^T [N, M] = w [N, K] * x^T [K, M]: the same reduction over k per output, with w packed once.
    kernels::GemmArgs t;
    t.M = g.N;
    t.N = g.M;
    t.K = g.K;
    t.B = g.A;
    t.ldb = g.K;
    t.transB = true;
    t.bias = s.bias;
    t.bias_kind = s.bias ? kernels::BiasKind::kPerRow : kernels::BiasKind::kNone;
    t.act = s.act;
    if (g.M == 1) {
      t.C = g.C;
      t.ldc = 1;
      kernels::sgemm_packed(*s.packed_w, t, im.pool.get());
    } else {
      im.gemm_t.resize(static_cast<size_t>(g.M * g.N));
      t.C = im.gemm_t.data();
      t.ldc = g.M;
      kernels::sgemm_packed(*s.packed_w, t, im.pool.get());
      for (int64_t m = 0; m < g.M; ++m)
        for (int64_t n = 0; n < g.N; ++n) g.C[m * g.N + n] = im.gemm_t[static_cast<size_t>(n * g.M + m)];
    }
  }
  im.store(s);
}

void prepareMatMul(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const std::string what = fmt::format("descriptor seq {} ({})", d.seq, package::layerKindName(d.kind));
  std::string why;
  if (!kernels::matmulBatches(s.shapes[0], s.shapes[1], s.shapes.back(), &s.mm, &why)) im.fault(what + ": " + why);
  if (d.in(0).type == ElemType::kI8) {  // the int8 form: its requantization table (validated) read once
    s.int8 = true;
    const int32_t* t = reinterpret_cast<const int32_t*>(s.in[2]);
    s.qmm.za = t[0], s.qmm.zb = t[1], s.qmm.zy = t[2], s.qmm.lo = t[3], s.qmm.hi = t[4];
    s.qmm.mul = {t[5], t[6]};
  }
  // (no post_act: the activation is the product's epilogue)
}

void runMatMul(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  if (s.int8) {  // the int8 form: exact integer sums (fast: qmatmul_ref's bytes)
    const auto* a = reinterpret_cast<const int8_t*>(s.in[0]);
    const auto* b = reinterpret_cast<const int8_t*>(s.in[1]);
    auto* y = reinterpret_cast<int8_t*>(s.out);
    if (im.opts.exact) kernels::qmatmul_ref(s.mm, a, b, s.qmm, y);
    else kernels::qmatmul(s.mm, a, b, s.qmm, y, im.pool.get());
    return;  // (int8 codes written: no float epilogue)
  }
  const float* a = im.inF(s, 0);
  const float* b = im.inF(s, 1);
  const float* bias = d.n_in > 2 ? im.inF(s, 2) : nullptr;
  const auto bk = s.p[0] == 1 ? kernels::BiasKind::kPerCol : s.p[0] == 2 ? kernels::BiasKind::kPerRow : kernels::BiasKind::kNone;
  if (im.opts.exact) kernels::matmulBatched_ref(s.mm, a, b, im.outF(s), s.act, bias, bk);
  else kernels::matmulBatched(s.mm, a, b, im.outF(s), s.act, im.pool.get(), bias, bk);
  im.store(s);
}

void preparePool(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  s.ps = package::poolShapeOf(*s.d, s.p);
  if (d.kind == LayerKind::kAvgPool && d.in(0).type == ElemType::kI8 && !s.p2) {  // the int8 form: its table (validated)
    s.int8 = true;
    const int32_t* t = reinterpret_cast<const int32_t*>(s.in[1]);
    s.qavg.zx = t[0], s.qavg.zy = t[1], s.qavg.lo = t[2], s.qavg.hi = t[3];
    for (int64_t k = 0; k < s.ps.kh * s.ps.kw; ++k) s.qavg.mul.push_back({t[4 + 2 * k], t[5 + 2 * k]});
  }
  s.post_act = true;
}

void runPool(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  if (s.int8) {  // avg_pool's int8 form: exact integer sums, one kernel for both modes
    kernels::qavgPool2d(s.ps, reinterpret_cast<const int8_t*>(s.in[0]), s.qavg, reinterpret_cast<int8_t*>(s.out), im.pool.get());
    return;
  }
  if (d.in(0).type == ElemType::kI8) {  // int8 codes: max is exact, one kernel for both modes
    (im.opts.exact ? kernels::maxPool2dI8 : kernels::maxPool2dI8Fast)(s.ps, reinterpret_cast<const int8_t*>(s.in[0]), reinterpret_cast<int8_t*>(s.out), im.pool.get());
    return;
  }
  if (!im.opts.exact && (!s.post_act || s.act.kind == kernels::ActKind::kNone)) {
    // Planes widened and rounded where they are pooled (no whole-tensor conversion passes).
    if (d.kind == LayerKind::kMaxPool)
      kernels::maxPool2dFast(s.ps, s.in[0], im.storageOf(d.in(0)), s.out, im.storageOf(d.out(0)), im.pool.get());
    else
      kernels::avgPool2dFast(s.ps, s.in[0], im.storageOf(d.in(0)), s.out, im.storageOf(d.out(0)), im.pool.get());
    return;
  }
  if (d.kind == LayerKind::kMaxPool) {
    if (im.opts.exact) kernels::maxPool2d(s.ps, im.inF(s, 0), im.outF(s), im.pool.get());
    else kernels::maxPool2dFast(s.ps, im.inF(s, 0), im.outF(s), im.pool.get());
  } else {
    if (im.opts.exact) kernels::avgPool2d(s.ps, im.inF(s, 0), im.outF(s), im.pool.get());
    else kernels::avgPool2dFast(s.ps, im.inF(s, 0), im.outF(s), im.pool.get());
  }
  im.store(s);
}

void prepareGlobalAvgPool(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  if (d.in(0).type == ElemType::kI8 && !s.p2) {  // the int8 form: its table (validated) read once
    s.int8 = true;
    const int32_t* t = reinterpret_cast<const int32_t*>(s.in[1]);
    s.qgap.zx = t[0], s.qgap.zy = t[1], s.qgap.lo = t[2], s.qgap.hi = t[3];
    s.qgap.mul = {t[4], t[5]};
  }
  s.post_act = true;
}

void runGlobalPool(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const Shape& x = s.shapes[0];
  int64_t planes = x[0] * x[1], size = planes ? shapeNumel(x) / planes : 0;
  if (s.int8) {
    kernels::qglobalAvgPool(planes, size, reinterpret_cast<const int8_t*>(s.in[0]), s.qgap, reinterpret_cast<int8_t*>(s.out), im.pool.get());
    return;
  }
  (d.kind == LayerKind::kGlobalAvgPool ? kernels::globalAvgPool : kernels::globalMaxPool)(planes, size, im.inF(s, 0), im.outF(s), im.pool.get());
  im.store(s);
}

void runSoftmax(Runtime::Impl& im, Step& s) {
  const Shape& y = s.shapes.back();
  size_t axis = s.p[1];
  int64_t outer = 1, len = 1, inner = 1;
  for (size_t i = 0; i < y.size(); ++i) (i < axis ? outer : i == axis ? len : inner) *= y[i];
  (im.opts.exact ? kernels::softmax : kernels::softmaxFast)(static_cast<kernels::SoftmaxKind>(s.p[0]), outer, len, inner, im.inF(s, 0),
                                                         im.outF(s), im.pool.get());
  im.store(s);
}

void runChannelAffine(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];
  int64_t inner = 1;
  for (size_t i = 2; i < x.size(); ++i) inner *= x[i];
  kernels::channelAffine(x[0], x[1], inner, im.inF(s, 0), reinterpret_cast<const float*>(s.in[1]),
                         reinterpret_cast<const float*>(s.in[2]), im.outF(s), im.pool.get());
  im.store(s);
}

void runInstanceNorm(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];
  int64_t inner = 1;
  for (size_t i = 2; i < x.size(); ++i) inner *= x[i];
  kernels::instanceNorm(x[0], x[1], inner, package::paramFloat(s.p[0]), im.inF(s, 0), im.inF(s, 1), im.inF(s, 2), im.outF(s),
                        im.pool.get());
  im.store(s);
}

void runDetectionOutput(Runtime::Impl& im, Step& s) {
  const kernels::SsdParams p = package::ssdFromParams(s.p.data(), s.shapes[0][0], s.shapes[2][2] / 4);
  kernels::ssdDetectionOutputRows(p, im.inF(s, 0), im.inF(s, 1), im.inF(s, 2), im.outF(s));
  im.store(s);
}

void runLrn(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];
  int64_t inner = 1;
  for (size_t i = 2; i < x.size(); ++i) inner *= x[i];
  kernels::lrn(x[0], x[1], inner, s.p[0], package::paramFloat(s.p[1]), package::paramFloat(s.p[2]),
               package::paramFloat(s.p[3]), im.inF(s, 0), im.outF(s), im.pool.get());
  im.store(s);
}

void runDet(Runtime::Impl& im, Runtime::Impl::Step& s) {
  const Shape& x = s.shapes[0];
  const int64_t m = x.back(), mats = m != 0 ? shapeNumel(x) / (m * m) : 0;
  const float* xf = im.inF(s, 0);
  const std::vector<double> v(xf, xf + shapeNumel(x));
  std::vector<double> det(static_cast<size_t>(mats));
  kernels::determinants(mats, m, v.data(), det.data());
  float* y = im.outF(s);
  for (int64_t k = 0; k < mats; ++k) y[k] = static_cast<float>(det[static_cast<size_t>(k)]);
  im.store(s);
}

void runPoolNd(Runtime::Impl& im, Runtime::Impl::Step& s) {
  const package::Descriptor& d = *s.d;
  const Shape &x = s.shapes[0], &y = s.shapes[static_cast<size_t>(d.n_in)];
  const size_t r = x.size();
  kernels::PoolNdShape p;
  p.planes = x[0] * x[1];
  for (size_t i = 2; i < r; ++i) {
    auto word = [&](size_t field) { return static_cast<int64_t>(static_cast<int32_t>(s.p[3 + field * r + i])); };
    p.in.push_back(x[i]), p.out.push_back(y[i]);
    p.kernel.push_back(word(0)), p.stride.push_back(word(1)), p.dilation.push_back(word(2));
    p.pad_begin.push_back(word(3)), p.pad_end.push_back(word(4));
  }
  p.max = s.p[0] != 0, p.count_include_pad = s.p[1] != 0, p.pad_value = package::paramFloat(s.p[2]);
  int64_t* indices = d.n_out == 2 ? reinterpret_cast<int64_t*>(im.at(d.out(1).addr, d.out(1).bytes, "pool_nd's indices")) : nullptr;
  kernels::poolNd(p, im.inF(s, 0), im.outF(s), indices, im.pool.get());
  im.store(s);
}

void prepareRecurrent(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];
  s.rnn = package::rnnFromParams(s.p.data());
  s.rnn.seq = s.rnn.batch_major ? x[1] : x[0];
  s.rnn.batch = s.rnn.batch_major ? x[0] : x[1];
  s.rnn.input = x[2];
  if (s.p[7] & package::kRnnInInt8) return;  // (the int8 form: its weights read in place, as they are)
  if (!isWeight(im, s.d->in(1))) return;  // computed weights (a concat layer's result): read on every run
  s.w = Runtime::Impl::weightsF32(s, 1);
  if (!im.opts.exact) {
    const int64_t gh = kernels::rnnGates(s.rnn.cell) * s.rnn.hidden;
    s.rnn_packed = kernels::packRecurrent(s.rnn, s.w, s.w + s.rnn.dirs * gh * s.rnn.input);
  }
}

/// recurrent: [W | R | B | P] split, the present inputs and outputs by the flags words; float16 outputs rounded once.
void runRecurrent(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const kernels::RnnShape& r = s.rnn;
  const uint32_t ins = s.p[7], outs = s.p[8];
  const int64_t gh = kernels::rnnGates(r.cell) * r.hidden;
  kernels::RnnTensors t;
  const float* w;
  if (ins & package::kRnnInInt8) {  // int8 x, int8 [W | R], float32 [B | P | scales | sx | zx] (validated)
    t.xq = reinterpret_cast<const int8_t*>(s.in[0]);
    t.wq = reinterpret_cast<const int8_t*>(s.in[1]);
    t.rq = t.wq + r.dirs * gh * r.input;
    w = reinterpret_cast<const float*>(s.in[2]);
  } else {
    t.x = im.inF(s, 0);
    w = s.w ? s.w : im.inF(s, 1);
    t.w = w;
    t.r = (w += r.dirs * gh * r.input);
    w += r.dirs * gh * r.hidden;
  }
  if (ins & package::kRnnInB) t.b = w, w += r.dirs * 2 * gh;
  if (ins & package::kRnnInP) t.p = w, w += r.dirs * 3 * r.hidden;
  if (ins & package::kRnnInInt8) {
    t.w_scale = w;
    t.r_scale = w + r.dirs * gh;
    t.sx = w[2 * r.dirs * gh];
    t.zx = static_cast<int32_t>(w[2 * r.dirs * gh + 1]);
  }
  int k = (ins & package::kRnnInInt8) ? 3 : 2;
  if (ins & package::kRnnInSeqLens) t.seq_lens = reinterpret_cast<const int32_t*>(s.in[static_cast<size_t>(k++)]);
  if (ins & package::kRnnInH0) t.h0 = im.inF(s, k++);
  if (ins & package::kRnnInC0) t.c0 = im.inF(s, k++);
  // Output 0 through outF / store (float16 rounded there); the others float32 in place, or widened and rounded once.
  std::vector<float> wide[2];
  float* more[2] = {nullptr, nullptr};
  for (int o = 1; o < d.n_out; ++o) {
    const package::TensorRef& ref = d.out(o);
    if (ref.type == ElemType::kF32) more[o - 1] = reinterpret_cast<float*>(im.at(ref.addr, ref.bytes, "a recurrent layer's state"));
    else more[o - 1] = (wide[o - 1].resize(ref.numel()), wide[o - 1].data());
  }
  float* first = im.outF(s);
  float** slots[3] = {&t.y, &t.y_h, &t.y_c};
  int o = 0;
  for (int i = 0; i < 3; ++i)
    if (outs & (1u << i)) *slots[i] = o == 0 ? first : more[o - 1], ++o;
  if (im.opts.exact) kernels::recurrent(r, t, im.pool.get());
  else kernels::recurrentFast(r, t, im.pool.get(), s.rnn_packed.get());
  im.store(s);
  for (int i = 1; i < d.n_out; ++i)
    if (const package::TensorRef& ref = d.out(i); ref.type != ElemType::kF32)
      kernels::f32ToF16_ref(more[i - 1], reinterpret_cast<uint16_t*>(im.at(ref.addr, ref.bytes, "a recurrent layer's state")),
                            static_cast<int64_t>(ref.numel()), kernels::Activation{});
}

}  // namespace

const KindExec kind_exec::kConv = {&prepareConv, &runConv};
const KindExec kind_exec::kConvTranspose = {&prepareConvTranspose, &runConvTranspose};
const KindExec kind_exec::kGemm = {&prepareGemm, &runGemm};
const KindExec kind_exec::kMatMul = {&prepareMatMul, &runMatMul};
const KindExec kind_exec::kMaxPool = {&preparePool, &runPool};
const KindExec kind_exec::kAvgPool = {&preparePool, &runPool};
const KindExec kind_exec::kGlobalAvgPool = {&prepareGlobalAvgPool, &runGlobalPool};
const KindExec kind_exec::kGlobalMaxPool = {nullptr, &runGlobalPool};
const KindExec kind_exec::kSoftmax = {nullptr, &runSoftmax};
const KindExec kind_exec::kLrn = {nullptr, &runLrn};
const KindExec kind_exec::kChannelAffine = {nullptr, &runChannelAffine};
const KindExec kind_exec::kInstanceNorm = {nullptr, &runInstanceNorm};
const KindExec kind_exec::kDetectionOutput = {nullptr, &runDetectionOutput};

const KindExec kind_exec::kPoolNd = {nullptr, &runPoolNd};
const KindExec kind_exec::kDet = {nullptr, &runDet};

const KindExec kind_exec::kRecurrent = {&prepareRecurrent, &runRecurrent};

}  // namespace npuc
