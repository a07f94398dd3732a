// How the reducing layer kinds run (runtime_impl.hpp): reduce, layer_norm, arg_reduce, cum_sum.
#include "runtime/runtime_impl.hpp"

#include "kernels/indexing.hpp"
#include "kernels/loss.hpp"
#include "kernels/signal.hpp"
#include "kernels/typed.hpp"

#include <cstring>
#include <vector>

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;

void runLayerNorm(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const Shape& x = s.shapes[0];
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < x.size(); ++i) (i < s.p[0] ? outer : inner) *= x[i];
  // Mean and InvStdDev (outputs 1, 2): float32 written in place, float16 rounded once from float32.
  std::vector<float> wide[2];
  float* stat[2] = {nullptr, nullptr};
  for (int k = 1; k < d.n_out; ++k) {
    const package::TensorRef& r = d.out(k);
    float*& p = stat[k - 1];
    if (r.type == ElemType::kF32) p = reinterpret_cast<float*>(im.at(r.addr, r.bytes, "layer_norm's statistics"));
    else p = (wide[k - 1].resize(r.numel()), wide[k - 1].data());
  }
  kernels::layerNorm(outer, inner, package::paramFloat(s.p[1]), im.inF(s, 0), reinterpret_cast<const float*>(s.in[1]),
                     d.n_in > 2 ? reinterpret_cast<const float*>(s.in[2]) : nullptr, im.outF(s), stat[0], stat[1],
                     im.pool.get());
  im.store(s);
  for (int k = 1; k < d.n_out; ++k)
    if (const package::TensorRef& r = d.out(k); r.type != ElemType::kF32)
      kernels::f32ToF16_ref(stat[k - 1], reinterpret_cast<uint16_t*>(im.at(r.addr, r.bytes, "layer_norm's statistics")),
                            static_cast<int64_t>(r.numel()), kernels::Activation{});
}

void runReduce(Runtime::Impl& im, Step& s) {
  const Shape &x = s.shapes[0], &y = s.shapes.back();
  std::vector<bool> reduced(x.size());
  uint32_t op = s.p[0];
  if (s.d->n_in == 2) {  // the axes the model computes: the dims they reduce must give the package's y
    op &= 0xFFFFu;
    const std::vector<int64_t> axes = intValues(s.d->in(1), s.in[1]);
    int64_t bad = 0;
    if (!kernels::reducedDims(axes, static_cast<int64_t>(x.size()), (s.p[0] >> 16) != 0, reduced, bad))
      fail(ErrorCode::kInvalidInput, "reduce layer: axis {} is out of range for rank {}", bad, x.size());
    // (keepdims is y's rank: with keepdims 0 and nothing reduced, y is x either way)
    if (kernels::reducedShape(x, reduced, y.size() == x.size()) != y)
      fail(ErrorCode::kInvalidInput, "reduce layer: axes [{}] at run time reduce {} to {}; this package was translated for {} "
           "(translate again for other axes)", fmt::join(axes, ", "), shapeStr(x),
           shapeStr(kernels::reducedShape(x, reduced, y.size() == x.size())), shapeStr(y));
  } else {
    for (size_t i = 0; i < x.size(); ++i) reduced[i] = s.p[1 + i] != 0;
  }
  const ElemType t = s.d->in(0).type;
  if (t != ElemType::kF32 && t != ElemType::kF16) {  // typed values: integers, float64
    kernels::reduceTyped(static_cast<kernels::ReduceOp>(op), t, x, reduced, s.in[0], s.out);
    return;
  }
  kernels::reduce(static_cast<kernels::ReduceOp>(op), x, reduced, im.inF(s, 0), im.outF(s), im.pool.get());
  im.store(s);
}

using kernels::around;

void runArgReduce(Runtime::Impl& im, Step& s) {
  const kernels::AxisView v = around(s.shapes[0], s.p[1]);
  if (s.d->out(0).type != ElemType::kU8) {
    kernels::argReduce(s.p[0] == 0, s.p[2] != 0, s.d->in(0).type, v.outer, v.dim, v.inner, s.in[0], reinterpret_cast<int64_t*>(s.out));
    return;
  }
  std::vector<int64_t> idx(static_cast<size_t>(v.outer * v.inner));  // (indices below 256: the reader checked the axis)
  kernels::argReduce(s.p[0] == 0, s.p[2] != 0, s.d->in(0).type, v.outer, v.dim, v.inner, s.in[0], idx.data());
  for (size_t i = 0; i < idx.size(); ++i) s.out[i] = static_cast<uint8_t>(idx[i]);
}

void runCumSum(Runtime::Impl& im, Step& s) {
  size_t axis = s.p[0];
  if (s.d->n_in == 2) {  // the axis computed by the model (validated: int32 / int64 [1])
    int64_t a = 0;
    if (s.d->in(1).type == ElemType::kI64) std::memcpy(&a, s.in[1], sizeof a);
    else a = *reinterpret_cast<const int32_t*>(s.in[1]);
    const int64_t r = static_cast<int64_t>(s.shapes[0].size());
    if (a < -r || a >= r) fail(ErrorCode::kInvalidInput, "cum_sum layer: axis {} is out of range for rank {}", a, r);
    axis = static_cast<size_t>(a < 0 ? a + r : a);
  }
  const kernels::AxisView v = around(s.shapes[0], axis);
  kernels::cumSum(s.d->in(0).type, s.p[1] != 0, s.p[2] != 0, v.outer, v.dim, v.inner, s.in[0], s.out);
}

void runWindow(Runtime::Impl& im, Step& s) {
  const int64_t n = s.shapes.back()[0];
  int64_t size = 0;
  if (s.d->in(0).type == ElemType::kI64) std::memcpy(&size, s.in[0], sizeof size);
  else size = *reinterpret_cast<const int32_t*>(s.in[0]);
  if (size != n)
    fail(ErrorCode::kInvalidInput, "window layer: size {} at run time; this package was translated for {} (translate again)", size, n);
  kernels::window(static_cast<kernels::WindowKind>(s.p[0]), n, s.p[1] != 0, im.outF(s));
  im.store(s);
}

/// A size the layer reads when it runs (dft_length, frame_step, frame_length, the mel matrix's sizes).
int64_t sizeAt(const Step& s, int i) { return intValues(s.d->in(i), s.in[static_cast<size_t>(i)])[0]; }

void runDft(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];
  const Shape& y = s.shapes.back();
  const size_t axis = s.p[0];
  const bool inverse = s.p[2] != 0, onesided = s.p[3] != 0;
  int64_t length = s.p[1];
  if (s.d->n_in == 2) {
    length = sizeAt(s, 1);
    if (length < 1 || (onesided ? length / 2 + 1 : length) != y[axis])
      fail(ErrorCode::kInvalidInput, "dft layer: dft_length {} at run time; this package was translated for {} bins (translate again)",
           length, y[axis]);
  }
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < x.size() - 1; ++d)
    if (d != axis) (d < axis ? outer : inner) *= x[d];
  kernels::dft(im.inF(s, 0), outer, x[axis], inner, static_cast<int>(x.back()), length, inverse, onesided, im.outF(s));
  im.store(s);
}

void runStft(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];
  const Shape& y = s.shapes.back();
  const uint32_t flags = s.p[3];
  const bool onesided = s.p[2] != 0;
  int64_t step = s.p[0], length = s.p[1];
  int i = 1;
  if (flags & 1u) step = sizeAt(s, i++);
  const float* window = (flags & 2u) ? im.inF(s, i++) : nullptr;
  if (flags & 4u) {
    const int64_t fl = sizeAt(s, i++);
    if (window && fl != length)
      fail(ErrorCode::kInvalidInput, "stft layer: frame_length {} at run time differs from the window's length {}", fl, length);
    length = fl;
  }
  if (step < 1 || length < 1 || length > x[1] || (x[1] - length) / step + 1 != y[1] || (onesided ? length / 2 + 1 : length) != y[2])
    fail(ErrorCode::kInvalidInput, "stft layer: frame_step {} and frame_length {} at run time give other frames or bins than "
         "this package's {} (translate again)", step, length, shapeStr(y));
  kernels::stft(im.inF(s, 0), x[0], x[1], static_cast<int>(x[2]), step, window, length, onesided, im.outF(s));
  im.store(s);
}

void runMelWeightMatrix(Runtime::Impl& im, Step& s) {
  const Shape& y = s.shapes.back();
  const int64_t bins = sizeAt(s, 0), dft = sizeAt(s, 1), rate = sizeAt(s, 2);
  if (bins != y[1] || dft < 1 || dft > (int64_t{1} << 24) || dft / 2 + 1 != y[0] || rate < 1)
    fail(ErrorCode::kInvalidInput, "mel_weight_matrix layer: num_mel_bins {}, dft_length {}, sample_rate {} at run time; this "
         "package was translated for {} (translate again)", bins, dft, rate, shapeStr(y));
  kernels::melWeightMatrix(bins, dft, rate, im.inF(s, 3)[0], im.inF(s, 4)[0], im.outF(s));
  im.store(s);
}

void runMvn(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];
  std::vector<bool> reduced;
  for (size_t i = 0; i < x.size(); ++i) reduced.push_back(s.p[i] != 0);
  const float* xf = im.inF(s, 0);
  std::vector<double> v(xf, xf + shapeNumel(x)), y(v.size());
  kernels::meanVarianceNormalization(x, reduced, v.data(), y.data());
  float* out = im.outF(s);
  for (size_t i = 0; i < y.size(); ++i) out[i] = static_cast<float>(y[i]);
  im.store(s);
}

void runLoss(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const Shape& x = s.shapes[0];
  kernels::LossShape ls;
  ls.n = x[0], ls.c = x[1], ls.d = ls.n * ls.c != 0 ? shapeNumel(x) / (ls.n * ls.c) : 0;
  ls.softmax = s.p[0] != 0;
  ls.reduction = static_cast<kernels::LossReduction>(s.p[1]);
  ls.ignoring = s.p[2] != 0;
  ls.ignore_index = static_cast<int64_t>((static_cast<uint64_t>(s.p[4]) << 32) | s.p[3]);
  const float* xf = im.inF(s, 0);
  std::vector<double> v(xf, xf + shapeNumel(x)), weight, l(static_cast<size_t>(d.out(0).numel())), lp;
  if (d.n_in == 3) {
    const float* wf = im.inF(s, 2);
    weight.assign(wf, wf + ls.c);
  }
  if (d.n_out == 2) lp.resize(v.size());
  const std::vector<int64_t> target = intValues(d.in(1), s.in[1]);
  kernels::loss(ls, v.data(), target.data(), weight.empty() ? nullptr : weight.data(), l.data(), lp.empty() ? nullptr : lp.data());
  float* y = im.outF(s);
  for (size_t i = 0; i < l.size(); ++i) y[i] = static_cast<float>(l[i]);
  im.store(s);
  if (d.n_out == 2) {  // log_prob: float32 written in place, float16 rounded once from float32
    const package::TensorRef& r = d.out(1);
    const std::vector<float> f(lp.begin(), lp.end());  // (each rounded once to float)
    uint8_t* at = im.at(r.addr, r.bytes, "loss's log_prob");
    if (r.type == ElemType::kF32) std::memcpy(at, f.data(), f.size() * sizeof(float));
    else kernels::f32ToF16_ref(f.data(), reinterpret_cast<uint16_t*>(at), static_cast<int64_t>(f.size()), kernels::Activation{});
  }
}

}  // namespace

const KindExec kind_exec::kLoss = {nullptr, &runLoss};
const KindExec kind_exec::kMvn = {nullptr, &runMvn};
const KindExec kind_exec::kDft = {nullptr, &runDft};
const KindExec kind_exec::kStft = {nullptr, &runStft};
const KindExec kind_exec::kMelWeightMatrix = {nullptr, &runMelWeightMatrix};
const KindExec kind_exec::kWindow = {nullptr, &runWindow};
const KindExec kind_exec::kCumSum = {nullptr, &runCumSum};
const KindExec kind_exec::kArgReduce = {nullptr, &runArgReduce};
const KindExec kind_exec::kReduce = {nullptr, &runReduce, [](const Step& s, std::vector<Shape>& y) {
  // x's dims with the reduced ones 1 (keepdims: y's rank is x's) or gone
  const Shape& x = s.shapes[0];
  std::vector<bool> reduced(x.size());
  if (s.d->n_in == 2) {
    int64_t bad = 0;
    if (!kernels::reducedDims(intValues(s.d->in(1), s.in[1]), static_cast<int64_t>(x.size()), (s.p[0] >> 16) != 0, reduced, bad))
      fail(ErrorCode::kInvalidInput, "reduce layer: axis {} is out of range for rank {}", bad, x.size());
  } else {
    for (size_t i = 0; i < x.size(); ++i) reduced[i] = s.p[1 + i] != 0;
  }
  y[0] = kernels::reducedShape(x, reduced, s.d->out(0).rank == x.size());
}};
const KindExec kind_exec::kLayerNorm = {nullptr, &runLayerNorm};

}  // namespace npuc
