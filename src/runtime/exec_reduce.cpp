// How the reducing layer kinds run (runtime_impl.hpp): reduce, layer_norm.
#include "runtime/runtime_impl.hpp"

#include <vector>

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;

void runLayerNorm(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const Shape& x = s.shapes[0];
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < x.size(); ++i) (i < s.p[0] ? outer : inner) *= x[i];
  kernels::layerNorm(outer, inner, package::paramFloat(s.p[1]), im.inF(s, 0), reinterpret_cast<const float*>(s.in[1]),
                     d.n_in > 2 ? reinterpret_cast<const float*>(s.in[2]) : nullptr, im.outF(s), nullptr, nullptr,
                     im.pool.get());
  im.store(s);
}

void runReduce(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];
  std::vector<bool> reduced(x.size());
  for (size_t i = 0; i < x.size(); ++i) reduced[i] = s.p[1 + i] != 0;
  kernels::reduce(static_cast<kernels::ReduceOp>(s.p[0]), x, reduced, im.inF(s, 0), im.outF(s), im.pool.get());
  im.store(s);
}

}  // namespace

const KindExec kind_exec::kReduce = {nullptr, &runReduce};
const KindExec kind_exec::kLayerNorm = {nullptr, &runLayerNorm};

}  // namespace npuc
