// How the conversion layer kinds of int8-affine packages run (runtime_impl.hpp): quantize, dequantize (their
// int8-pow2 forms: exec_pow2.cpp).
#include "runtime/runtime_impl.hpp"

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;

void runQuantize(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  (im.opts.exact ? kernels::quantizeLinear : kernels::quantizeLinearFast)(reinterpret_cast<const float*>(s.in[0]), static_cast<int64_t>(d.in(0).numel()),
                          package::paramFloat(s.p[0]), static_cast<int32_t>(s.p[1]), reinterpret_cast<int8_t*>(s.out), im.pool.get());
}

void runDequantize(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  (im.opts.exact ? kernels::dequantizeLinear : kernels::dequantizeLinearFast)(reinterpret_cast<const int8_t*>(s.in[0]), static_cast<int64_t>(d.in(0).numel()),
                            package::paramFloat(s.p[0]), static_cast<int32_t>(s.p[1]), reinterpret_cast<float*>(s.out), im.pool.get());
}

}  // namespace

const KindExec kind_exec::kQuantize = {nullptr, &runQuantize};
const KindExec kind_exec::kDequantize = {nullptr, &runDequantize};

}  // namespace npuc
