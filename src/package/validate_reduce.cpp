// The reader's checks of the reducing layer kinds (validate.hpp): reduce, layer_norm.
#include "package/validate.hpp"

#include "kernels/layers.hpp"

#include <algorithm>
#include <cmath>

namespace npuc::package {

namespace {

/// The checks of this family, members of a LayerCheck: they read the descriptor (d, x, y, w, what) by name.
struct ReduceChecks : LayerCheck {
  void reduce() const {
    isFloat(x, "x"); isFloat(y, "y");
    if (w[0] >= static_cast<uint32_t>(kernels::ReduceOp::kCount)) bad("{}: unknown reduce op {}", what, w[0]);
    std::vector<uint32_t> kept_keep, kept;  // y's dims with keepdims, and without
    for (int i = 0; i < x.rank; ++i) {
      uint32_t flag = w[static_cast<size_t>(1 + i)];
      if (flag > 1) bad("{}: axis flag {} of dim {} is not 0 or 1", what, flag, i);
      kept_keep.push_back(flag ? 1u : x.dims[static_cast<size_t>(i)]);
      if (!flag) kept.push_back(x.dims[static_cast<size_t>(i)]);
    }
    std::vector<uint32_t> ydims(y.dims.begin(), y.dims.begin() + y.rank);
    if (ydims != kept_keep && ydims != kept) bad("{}: {} reduced is not {}", what, dimsStr(x), dimsStr(y));
  }

  void layerNorm() const {
    isFloat(x, "x"); isFloat(y, "y");
    if (dimsOf(x) != dimsOf(y)) bad("{}: {} -> {} changes the shape", what, dimsStr(x), dimsStr(y));
    if (w[0] >= std::max<uint32_t>(x.rank, 1)) bad("{}: axis {} out of range for rank {}", what, w[0], x.rank);
    if (!std::isfinite(paramFloat(w[1])) || paramFloat(w[1]) < 0) bad("{}: epsilon {} is not a finite non-negative number", what, paramFloat(w[1]));
    uint64_t inner = 1;
    for (uint32_t i = w[0]; i < x.rank; ++i) inner *= x.dims[i];
    for (int i = 1; i < d.n_in; ++i) {
      const TensorRef& r = d.in(i);
      if (r.type != ElemType::kF32 || r.rank != 1 || r.dims[0] != inner) bad("{}: scale/bias must be float32 [{}]", what, inner);
      weightRef(r, what + ": scale/bias");
    }
  }
};

}  // namespace

const KindCheck kind_checks::kReduce = [](const LayerCheck& c) { ReduceChecks{c}.reduce(); };
const KindCheck kind_checks::kLayerNorm = [](const LayerCheck& c) { ReduceChecks{c}.layerNorm(); };

}  // namespace npuc::package
