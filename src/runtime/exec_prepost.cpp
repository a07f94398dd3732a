// How the pre/post-processing layer kinds run (runtime_impl.hpp): the kernels of kernels/prepost.hpp and
// kernels/aipp.hpp on the element types the references carry (validated).
#include "runtime/runtime_impl.hpp"

#include "kernels/typed.hpp"

#include "kernels/aipp.hpp"

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;

const uint8_t* u8in(const Step& s) { return reinterpret_cast<const uint8_t*>(s.in[0]); }
const uint16_t* h16in(const Step& s) { return reinterpret_cast<const uint16_t*>(s.in[0]); }

void runCast(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const package::TensorRef &x = d.in(0), &y = d.out(0);
  const int64_t n = static_cast<int64_t>(x.numel());
  bool to16 = y.type == ElemType::kF16;
  const bool prepost_pair = (x.type == ElemType::kU8 || x.type == ElemType::kF16 || x.type == ElemType::kF32) &&
                            (y.type == ElemType::kF16 || y.type == ElemType::kF32);
  if (!prepost_pair) {  // ONNX Cast between any two package types (typed values)
    kernels::castValues(x.type, s.in[0], y.type, s.out, n);
    return;
  }
  if (x.type == ElemType::kU8) {
    if (to16) kernels::castAnyToFp16(n, u8in(s), reinterpret_cast<uint16_t*>(s.out), im.pool.get());
    else kernels::castU8ToFp32(n, u8in(s), reinterpret_cast<float*>(s.out), im.pool.get());
  } else if (x.type == ElemType::kF16) {  // (fast: the F16C conversions, floatToHalf's / halfToFloat's bits)
    if (im.opts.exact) kernels::castFp16ToFp32(n, h16in(s), reinterpret_cast<float*>(s.out), im.pool.get());
    else kernels::f16ToF32(h16in(s), reinterpret_cast<float*>(s.out), n, im.pool.get());
  } else {
    if (im.opts.exact)
      kernels::castFp32ToFp16(n, reinterpret_cast<const float*>(s.in[0]), reinterpret_cast<uint16_t*>(s.out), im.pool.get());
    else kernels::f32ToF16(reinterpret_cast<const float*>(s.in[0]), reinterpret_cast<uint16_t*>(s.out), n, {}, im.pool.get());
  }
}

void runYuvToRgb(Runtime::Impl& im, Step& s) {
  const Shape& ys = s.shapes.back();
  (im.opts.exact ? kernels::yuvToRgb : kernels::yuvToRgbFast)(static_cast<kernels::YuvFormat>(static_cast<int32_t>(s.p[0])),
                                                           s.p[1] != 0, ys[0], ys[1], u8in(s), s.out, im.pool.get());
}

void runToGray(Runtime::Impl& im, Step& s) {
  const Shape& ys = s.shapes.back();
  kernels::toGray(static_cast<kernels::GrayFormat>(static_cast<int32_t>(s.p[0])), ys[0], ys[1], u8in(s), s.out, im.pool.get());
}

void runCrop(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const package::TensorRef& x = d.in(0);
  const Shape &xs = s.shapes[0], &ys = s.shapes.back();
  bool chw = s.p[0] == 1;
  kernels::CropGeometry g;
  g.height = chw ? xs[1] : xs[0];
  g.width = chw ? xs[2] : xs[1];
  g.channels = chw ? xs[0] : xs[2];
  g.pos_y = s.p[1];
  g.pos_x = s.p[2];
  g.out_height = ys[0];
  g.out_width = ys[1];
  kernels::crop(chw ? kernels::ImageLayout::kCHW : kernels::ImageLayout::kHWC, g, package::elemSize(x.type), s.in[0], s.out, im.pool.get());
}

void runResizeHwc(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const package::TensorRef& x = d.in(0);
  const Shape &xs = s.shapes[0], &ys = s.shapes.back();
  kernels::ResizeGeometry g;
  g.in_height = xs[0];
  g.in_width = xs[1];
  g.channels = xs[2];
  g.out_height = ys[0];
  g.out_width = ys[1];
  auto alg = s.p[0] == 1 ? kernels::ResizeAlg::kBilinear : kernels::ResizeAlg::kNearest;
  if (x.type == ElemType::kU8 && im.opts.exact) kernels::resizeHwc(alg, g, u8in(s), s.out, im.pool.get());
  else if (x.type == ElemType::kU8) kernels::resizeHwcFast(alg, g, u8in(s), s.out, im.pool.get());
  else kernels::resizeHwc(alg, g, h16in(s), reinterpret_cast<uint16_t*>(s.out), im.pool.get());
}

void prepareNormalize(Runtime::Impl& im, Step& s) {
  for (size_t i = 1; i < s.p.size(); ++i) s.coef.push_back(package::paramFloat(s.p[i]));
}

void runNormalize(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const package::TensorRef& x = d.in(0);
  const Shape& xs = s.shapes[0];
  const int64_t n = static_cast<int64_t>(x.numel());
  int64_t C = xs.back();
  const float* add = s.coef.data();
  const float* mul = add + C;
  uint16_t* out = reinterpret_cast<uint16_t*>(s.out);
  bool swap = s.p[0] != 0;
  auto run = [&](auto* src) {
    if (im.opts.exact) kernels::normalize(n / C, C, swap, add, mul, src, out, im.pool.get());
    else kernels::normalizeFast(n / C, C, swap, add, mul, src, out, im.pool.get());
  };
  if (x.type == ElemType::kU8) run(u8in(s));
  else run(h16in(s));
}

void runPostSoftmax(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const package::TensorRef &x = d.in(0), &y = d.out(0);
  const int64_t n = static_cast<int64_t>(x.numel());
  if (y.type == ElemType::kF32) kernels::softmaxFp16(n, h16in(s), reinterpret_cast<float*>(s.out), im.pool.get());
  else kernels::softmaxFp16(n, h16in(s), reinterpret_cast<uint16_t*>(s.out), im.pool.get());
}

void runArgMinMax(Runtime::Impl& im, Step& s) {
  const package::TensorRef& y = s.d->out(0);
  const Shape& xs = s.shapes[0];
  bool chw = s.p[0] == 1;
  int64_t H = chw ? xs[1] : xs[0], W = chw ? xs[2] : xs[1], C = chw ? xs[0] : xs[2];
  auto layout = chw ? kernels::ImageLayout::kCHW : kernels::ImageLayout::kHWC;
  auto axis = static_cast<kernels::ArgAxis>(s.p[1]);
  auto mode = s.p[2] == 1 ? kernels::ArgMode::kArgMin : kernels::ArgMode::kArgMax;
  if (y.type == ElemType::kU8) kernels::argMinMax(layout, H, W, C, axis, mode, h16in(s), s.out, im.pool.get());
  else kernels::argMinMax(layout, H, W, C, axis, mode, h16in(s), reinterpret_cast<uint16_t*>(s.out), im.pool.get());
}

void runAipp(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const package::TensorRef& y = d.out(0);
  // A static stage's block is in its parameters, a dynamic stage's in its parameter input; the kernel checks
  // the block's rules on every inference (a static one was also checked when the package was read).
  const kernels::AippSetup st = Runtime::Impl::aippSetup(s);
  const uint8_t* block = d.n_in == 2 ? s.in[1] : reinterpret_cast<const uint8_t*>(s.p.data() + kernels::kAippHeaderWords);
  try {
    const kernels::AippParams ap = kernels::decodeAipp(block, kernels::aippBlockSize(st.n));
    if (y.type == ElemType::kF32) kernels::aipp(ap, st, u8in(s), reinterpret_cast<float*>(s.out), im.pool.get());
    else kernels::aipp(ap, st, u8in(s), reinterpret_cast<uint16_t*>(s.out), im.pool.get());
  } catch (const Error& e) {
    fail(ErrorCode::kInvalidInput, "layer '{}': AIPP parameter block refused: {}", im.pkg.layers[d.seq].name, e.what());
  }
}

}  // namespace

const KindExec kind_exec::kCast = {nullptr, &runCast, [](const Step& s, std::vector<Shape>& y) { y[0] = s.shapes[0]; }};
const KindExec kind_exec::kYuvToRgb = {nullptr, &runYuvToRgb};
const KindExec kind_exec::kToGray = {nullptr, &runToGray};
const KindExec kind_exec::kCrop = {nullptr, &runCrop};
const KindExec kind_exec::kResizeHwc = {nullptr, &runResizeHwc};
const KindExec kind_exec::kNormalize = {&prepareNormalize, &runNormalize};
const KindExec kind_exec::kPostSoftmax = {nullptr, &runPostSoftmax};
const KindExec kind_exec::kArgMinMax = {nullptr, &runArgMinMax};
const KindExec kind_exec::kAipp = {nullptr, &runAipp};

}  // namespace npuc
