// How the element-wise layer kinds run (runtime_impl.hpp): unary and binary ops (the code is the kernel's op:
// elementwise_ops.def), the int8-affine addition, where, the typed unary and binary ops (kernels/typed.hpp).
#include "runtime/runtime_impl.hpp"

#include "kernels/typed.hpp"

#include <vector>

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;

void prepareBinary(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  if (d.in(0).type == ElemType::kI8) {  // the int8 form: its requantization table (validated) read once
    s.int8 = true;
    const int32_t* t = reinterpret_cast<const int32_t*>(s.in[2]);
    if (static_cast<kernels::BinaryOp>(s.p[0]) == kernels::BinaryOp::kMul) {  // the int8 product (validated)
      s.int8_product = true;
      s.qmul.za = t[0], s.qmul.zb = t[1], s.qmul.zy = t[2], s.qmul.lo = t[3], s.qmul.hi = t[4];
      s.qmul.mul = {t[5], t[6]};
      return;
    }
    s.qadd.za = t[0], s.qadd.zb = t[1], s.qadd.zy = t[2], s.qadd.lo = t[3], s.qadd.hi = t[4];
    s.qadd.ma = t[5], s.qadd.mb = t[6], s.qadd.shift = t[7];
  }
}

void runBinary(Runtime::Impl& im, Step& s) {
  if (s.int8) {
    const auto* a = reinterpret_cast<const int8_t*>(s.in[0]);
    const auto* b = reinterpret_cast<const int8_t*>(s.in[1]);
    auto* y = reinterpret_cast<int8_t*>(s.out);
    const int64_t n = shapeNumel(s.shapes[0]);
    if (s.int8_product) {
      const int64_t nb = shapeNumel(s.shapes[1]), inner = nb > 0 ? n / nb : 1;
      if (im.opts.exact) kernels::qmul_ref(n, inner, a, b, s.qmul, y);
      else kernels::qmul(n, inner, a, b, s.qmul, y, im.pool.get());
      return;
    }
    if (im.opts.exact) kernels::qadd_ref(n, a, b, s.qadd, y);
    else kernels::qadd(n, a, b, s.qadd, y, im.pool.get());
    return;
  }
  auto op = static_cast<kernels::BinaryOp>(s.p[0]);  // the code is the op (elementwise_ops.def); validated
  if (!im.opts.exact && s.shapes[0] == s.shapes[2] && s.shapes[1] == s.shapes[2] && im.elementwiseF16(s, 2)) {
    // float16 operands of one shape: widened, added and rounded in cache-sized chunks (one pass over memory).
    im.chunked(s, 2, [&](const float* const* x, float* y, int64_t n) {
      const std::vector<int64_t> shape{n};
      kernels::binary(op, s.act, shape, x[0], shape, x[1], shape, y, nullptr);
    });
    return;
  }
  const float* a = im.inF(s, 0);
  const float* b = im.inF(s, 1);
  kernels::binary(op, s.act, s.shapes[0], a, s.shapes[1], b, s.shapes[2], im.outF(s), im.pool.get());
  im.store(s);
}

void runUnary(Runtime::Impl& im, Step& s) {
  if (s.d->in(0).type == ElemType::kI8)  // the int8 form: the op's results over every code (validated: a [256] table)
    return kernels::qlookup(shapeNumel(s.shapes[0]), reinterpret_cast<const int8_t*>(s.in[0]), reinterpret_cast<const int8_t*>(s.in[1]),
                            reinterpret_cast<int8_t*>(s.out), im.pool.get());
  auto op = static_cast<kernels::UnaryOp>(s.p[0]);  // the code is the op (elementwise_ops.def); validated
  (im.opts.exact ? kernels::unary : kernels::unaryFast)(op, package::paramFloat(s.p[1]), package::paramFloat(s.p[2]),
                                                         shapeNumel(s.shapes[0]), im.inF(s, 0), im.outF(s), im.pool.get());
  im.store(s);
}

void runWhere(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const size_t es = package::elemSize(d.out(0).type);
  kernels::where(s.shapes[0], s.in[0], s.shapes[1], s.in[1], s.shapes[2], s.in[2], s.shapes.back(), es, s.out,
                 im.pool.get());
}

void runTypedBinary(Runtime::Impl& im, Step& s) {
  kernels::typedBinary(static_cast<kernels::TypedBinaryOp>(s.p[0]), s.d->in(0).type, s.shapes[0], s.in[0], s.shapes[1],
                       s.in[1], s.shapes[2], s.out);
}

void runTypedUnary(Runtime::Impl& im, Step& s) {
  kernels::typedUnary(static_cast<kernels::TypedUnaryOp>(s.p[0]), s.d->in(0).type, shapeNumel(s.shapes[0]), s.in[0],
                      s.out, s.p[1]);
}

void runClip(Runtime::Impl&, Runtime::Impl::Step& s) {
  const package::Descriptor& d = *s.d;
  const void* b[2] = {nullptr, nullptr};
  for (int k = 0, i = 1; k < 2; ++k)
    if (s.p[0] & (1u << k)) b[k] = s.in[static_cast<size_t>(i++)];
  kernels::clip(d.in(0).type, static_cast<int64_t>(d.in(0).numel()), s.in[0], b[0], b[1], s.out);
}



/// Dynamic element-wise layers: y has x's dims (one input), or the operands' numpy broadcast (two).
void sameDims(const Step& s, std::vector<Shape>& y) { y[0] = s.shapes[0]; }
void broadcastDims(const Step& s, std::vector<Shape>& y) {
  const Shape &a = s.shapes[0], &b = s.shapes[1];
  y[0].assign(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < y[0].size(); ++i) {
    const int64_t da = i < y[0].size() - a.size() ? 1 : a[i - (y[0].size() - a.size())];
    const int64_t db = i < y[0].size() - b.size() ? 1 : b[i - (y[0].size() - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(ErrorCode::kInvalidInput, "{} layer: operands [{}] and [{}] do not broadcast", package::layerKindName(s.d->kind),
           fmt::join(a, ", "), fmt::join(b, ", "));
    y[0][i] = da == 1 ? db : da;
  }
}

}  // namespace

const KindExec kind_exec::kTypedBinary = {nullptr, &runTypedBinary, &broadcastDims};
const KindExec kind_exec::kTypedUnary = {nullptr, &runTypedUnary, &sameDims};
const KindExec kind_exec::kBinary = {&prepareBinary, &runBinary, &broadcastDims};
const KindExec kind_exec::kUnary = {nullptr, &runUnary, &sameDims};
const KindExec kind_exec::kWhere = {nullptr, &runWhere};

const KindExec kind_exec::kClip = {nullptr, &runClip};

}  // namespace npuc
