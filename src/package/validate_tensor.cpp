// The reader's checks of the data-movement layer kinds (validate.hpp): copy, concat, transpose, pad, slice, gather,
// tile, and resize (its float interpolation moves data of one tensor into another shape).
#include "package/validate.hpp"

#include "kernels/layers.hpp"
#include "kernels/typed.hpp"

#include <cmath>

namespace npuc::package {

namespace {

/// The checks of this family, members of a LayerCheck: they read the descriptor (d, x, y, w, what) by name.
struct TensorChecks : LayerCheck {
  void copy() const {
    if (x.type != y.type || x.bytes != y.bytes) bad("{}: copy of {} {} into {} {}", what, elemName(x.type), dimsStr(x), elemName(y.type), dimsStr(y));
  }

  /// reshape (a view of a dynamic tensor): the words applied to x's dims (its capacity) give y's.
  void reshape() const {
    if (x.type != y.type || x.bytes != y.bytes) bad("{}: reshape of {} {} into {} {}", what, elemName(x.type), dimsStr(x), elemName(y.type), dimsStr(y));
    std::vector<int64_t> xd(x.dims.begin(), x.dims.begin() + x.rank), yd;
    for (int i = 0; i < kMaxRank; ++i)
      if (i >= y.rank && w[static_cast<size_t>(i)] != 0) bad("{}: word {} past y's rank {} is not 0", what, i, y.rank);
    if (!kernels::reshapeDims(xd, std::vector<uint32_t>(w.begin(), w.begin() + y.rank), yd) ||
        !std::equal(yd.begin(), yd.end(), y.dims.begin()))
      bad("{}: the words do not turn {} into {}", what, dimsStr(x), dimsStr(y));
  }

  void concat() const {
    uint32_t axis = w[0];
    if (axis >= y.rank) bad("{}: axis {} out of range for rank {}", what, axis, y.rank);
    uint64_t sum = 0;
    for (int i = 0; i < d.n_in; ++i) {
      const TensorRef& r = d.in(i);
      if (r.type != y.type || r.rank != y.rank) bad("{}: input {} is {} {}, output {} {}", what, i, elemName(r.type), dimsStr(r), elemName(y.type), dimsStr(y));
      for (int k = 0; k < r.rank; ++k)
        if (static_cast<uint32_t>(k) != axis && r.dims[static_cast<size_t>(k)] != y.dims[static_cast<size_t>(k)])
          bad("{}: input {} {} does not match output {} off the axis", what, i, dimsStr(r), dimsStr(y));
      sum += r.dims[axis];
    }
    if (sum != y.dims[axis]) bad("{}: inputs sum to {} along axis {}, output has {}", what, sum, axis, y.dims[axis]);
  }

  void transpose() const {
    if (x.type != y.type || x.rank != y.rank) bad("{}: {} -> {}", what, dimsStr(x), dimsStr(y));
    std::vector<bool> used(x.rank, false);
    for (int i = 0; i < x.rank; ++i) {
      uint32_t pi = w[static_cast<size_t>(i)];
      if (pi >= x.rank || used[pi]) bad("{}: perm is not a permutation of 0..{}", what, x.rank - 1);
      used[pi] = true;
      if (y.dims[static_cast<size_t>(i)] != x.dims[pi]) bad("{}: {} permuted is not {}", what, dimsStr(x), dimsStr(y));
    }
  }

  void pad() const {
    if (x.type == ElemType::kI8 || x.type == ElemType::kU8) {  // int8 / uint8 codes, padded with code 0 (0 at any scale)
      typeIs(y, x.type, "y");
      if (w[static_cast<size_t>(2 * x.rank)] != 0) bad("{}: a pad of codes pads with 0 (value f32 bits 0), got bits {:#x}", what,
                                                       w[static_cast<size_t>(2 * x.rank)]);
    } else {
      isFloat(x, "x"); isFloat(y, "y");  // the pad value is a float of the package's type
    }
    if (x.rank != y.rank) bad("{}: {} -> {}", what, dimsStr(x), dimsStr(y));
    for (int i = 0; i < x.rank; ++i) {
      int64_t b = si(static_cast<size_t>(i)), e = si(static_cast<size_t>(x.rank + i));
      if (b < 0 || e < 0 || x.dims[static_cast<size_t>(i)] + b + e != y.dims[static_cast<size_t>(i)])
        bad("{}: pads do not turn {} into {}", what, dimsStr(x), dimsStr(y));
    }
  }

  void slice() const {
    if (x.type != y.type || x.rank != y.rank) bad("{}: {} -> {}", what, dimsStr(x), dimsStr(y));
    if (d.n_in == 2) {  // a dynamic tensor's slice: starts, ends, steps per dim, resolved when the layer runs
      const TensorRef& b = d.in(1);
      if (b.type != ElemType::kI64 || b.rank != 2 || b.dims[0] != 4 || b.dims[1] != x.rank)
        bad("{}: bounds {} {}, not int64 [4, {}] (starts, ends, steps, the dims x must have)", what, elemName(b.type), dimsStr(b), x.rank);
      return;
    }
    if (d.n_in > 1) {  // starts, ends, axes, steps computed by the model: checked when the layer runs
      if (d.n_in != 5) bad("{}: {} inputs (x alone, or x, starts, ends, axes, steps)", what, d.n_in);
      for (int i = 1; i < 5; ++i) {
        const TensorRef& r = d.in(i);
        if ((r.type != ElemType::kI64 && r.type != ElemType::kI32) || r.rank != 1 || r.numel() != d.in(1).numel() || r.numel() > x.rank)
          bad("{}: input {} is {} {}: starts, ends, axes and steps are int32/int64 lists of one length, at most the rank", what, i, elemName(r.type), dimsStr(r));
      }
      return;
    }
    for (int i = 0; i < x.rank; ++i) {
      int64_t st = si(static_cast<size_t>(i)), step = si(static_cast<size_t>(x.rank + i));
      int64_t n = y.dims[static_cast<size_t>(i)], xn = x.dims[static_cast<size_t>(i)];
      if (step == 0 || (n > 0 && (st < 0 || st >= xn || st + (n - 1) * step < 0 || st + (n - 1) * step >= xn)))
        bad("{}: slice of axis {} reads outside {}", what, i, dimsStr(x));
    }
  }

  void resize() const {
    if (w[0] > 2 || w[1] > 6 || w[2] > 3 || w[3] > 1 || w[4] > 1)
      bad("{}: interp {} / coordinate mode {} / nearest mode {} / flags {} {} out of range", what, w[0], w[1], w[2], w[3], w[4]);
    if (pow2) {  // the int8-pow2 form (types and table: checkPow2Form) interpolates
      const auto interp = static_cast<kernels::ResizeInterp>(w[0]);
      if (interp == kernels::ResizeInterp::kNearest || static_cast<kernels::ResizeCoord>(w[1]) == kernels::ResizeCoord::kTfCropAndResize)
        bad("{}: the int8-pow2 resize interpolates (linear or cubic, not tf_crop_and_resize)", what);
      // (the integer weights' products must stay far inside int64: cubic weights grow with the coefficient)
      if (interp == kernels::ResizeInterp::kCubic && !(std::fabs(resizeSpecFromParams(w, x.rank).cubic_a) <= 1.0))
        bad("{}: the int8-pow2 cubic resize takes |cubic_coeff_a| <= 1", what);
    } else if (x.type == ft) {
      isFloat(y, "y");
    } else {  // a nearest resize moves elements of any type (int8-pow2 codes, integers): it selects, computes nothing
      const auto interp = static_cast<kernels::ResizeInterp>(w[0]);
      const auto coord = static_cast<kernels::ResizeCoord>(w[1]);
      if (interp != kernels::ResizeInterp::kNearest || coord == kernels::ResizeCoord::kTfCropAndResize || y.type != x.type ||
          !kernels::typedKernelType(x.type))
        bad("{}: resizes {} into {}: only a nearest resize (not tf_crop_and_resize) takes other values than {}, and keeps "
            "their type", what, elemName(x.type), elemName(y.type), elemName(ft));
    }
    if (x.rank != y.rank) bad("{}: {} -> {} changes the rank", what, dimsStr(x), dimsStr(y));
    kernels::ResizeSpec spec = resizeSpecFromParams(w, x.rank);
    for (int a = 0; a < x.rank; ++a) {
      double sc = spec.scale[static_cast<size_t>(a)];
      if (!(sc > 0) || !std::isfinite(sc) || !std::isfinite(spec.roi_start[static_cast<size_t>(a)]) ||
          !std::isfinite(spec.roi_end[static_cast<size_t>(a)]))
        bad("{}: scale {} / roi of dim {} is not finite and positive", what, sc, a);
      if (x.dims[static_cast<size_t>(a)] == 0 && y.dims[static_cast<size_t>(a)] != 0) bad("{}: resizes an empty dim {}", what, a);
    }
    if (!std::isfinite(spec.cubic_a) || !std::isfinite(spec.extrapolation)) bad("{}: cubic_coeff_a / extrapolation not finite", what);
    if (!pow2 && d.n_in == 2 && ((d.in(1).type != ElemType::kI64 && d.in(1).type != ft) || d.in(1).numel() != x.rank))
      bad("{}: sizes / scales are {} {}, not int64 / {} [{}]", what, elemName(d.in(1).type), dimsStr(d.in(1)), elemName(ft), x.rank);
  }

  void gather() const {
    const TensorRef& idx = d.in(1);
    if (idx.type != ElemType::kI64 && idx.type != ElemType::kI32)
      bad("{}: indices are {}, this kind needs int32 or int64", what, elemName(idx.type));
    if (x.type != y.type) bad("{}: gathers {} into {}", what, elemName(x.type), elemName(y.type));
    if (w[0] >= x.rank) bad("{}: axis {} out of range for rank {}", what, w[0], x.rank);
    std::vector<uint32_t> want(x.dims.begin(), x.dims.begin() + w[0]);
    want.insert(want.end(), idx.dims.begin(), idx.dims.begin() + idx.rank);
    want.insert(want.end(), x.dims.begin() + w[0] + 1, x.dims.begin() + x.rank);
    if (std::vector<uint32_t>(y.dims.begin(), y.dims.begin() + y.rank) != want)
      bad("{}: {} gathered along axis {} by {} is not {}", what, dimsStr(x), w[0], dimsStr(idx), dimsStr(y));
    if (x.dims[w[0]] == 0 && idx.numel() > 0) bad("{}: gathers from an empty axis {}", what, w[0]);
  }

  void trilu() const {
    if (x.type != y.type || dimsOf(x) != dimsOf(y)) bad("{}: {} {} -> {} {}", what, elemName(x.type), dimsStr(x), elemName(y.type), dimsStr(y));
    if (x.rank < 2) bad("{}: Trilu needs rank 2 or more, got {}", what, dimsStr(x));
    if (w[0] > 1) bad("{}: upper flag {} is not 0 or 1", what, w[0]);
    if (d.n_in == 2 && (d.in(1).type != ElemType::kI64 || d.in(1).numel() != 1)) bad("{}: k is {} {}, not int64 [1]", what, elemName(d.in(1).type), dimsStr(d.in(1)));
  }

  void range() const {
    if (y.rank != 1 || y.type == ElemType::kBool || !(kernels::typedKernelType(y.type))) bad("{}: Range into {} {}", what, elemName(y.type), dimsStr(y));
    for (int i = 0; i < 3; ++i)
      if (d.in(i).type != y.type || d.in(i).numel() != 1)
        bad("{}: input {} is {} {}, not one {}", what, i, elemName(d.in(i).type), dimsStr(d.in(i)), elemName(y.type));
  }

  void tile() const {
    if (x.type != y.type || x.rank != y.rank) bad("{}: {} {} -> {} {}", what, elemName(x.type), dimsStr(x), elemName(y.type), dimsStr(y));
    for (int i = 0; i < x.rank; ++i) {
      const uint32_t xd = x.dims[static_cast<size_t>(i)], yd = y.dims[static_cast<size_t>(i)];
      if (xd ? yd % xd != 0 : yd != 0) bad("{}: {} does not tile {}", what, dimsStr(x), dimsStr(y));
    }
    if (d.n_in == 2) {  // ConstantOfShape's shape, computed by the model
      const TensorRef& s = d.in(1);
      if ((s.type != ElemType::kI64 && s.type != ElemType::kI32) || s.rank != 1 || s.dims[0] != y.rank)
        bad("{}: the shape is {} {}, not int32 / int64 [{}]", what, elemName(s.type), dimsStr(s), y.rank);
    }
  }
};

}  // namespace

const KindCheck kind_checks::kCopy = [](const LayerCheck& c) { TensorChecks{c}.copy(); };
const KindCheck kind_checks::kReshape = [](const LayerCheck& c) { TensorChecks{c}.reshape(); };
const KindCheck kind_checks::kConcat = [](const LayerCheck& c) { TensorChecks{c}.concat(); };
const KindCheck kind_checks::kTranspose = [](const LayerCheck& c) { TensorChecks{c}.transpose(); };
const KindCheck kind_checks::kPad = [](const LayerCheck& c) { TensorChecks{c}.pad(); };
const KindCheck kind_checks::kSlice = [](const LayerCheck& c) { TensorChecks{c}.slice(); };
const KindCheck kind_checks::kResize = [](const LayerCheck& c) { TensorChecks{c}.resize(); };
const KindCheck kind_checks::kGather = [](const LayerCheck& c) { TensorChecks{c}.gather(); };
const KindCheck kind_checks::kTile = [](const LayerCheck& c) { TensorChecks{c}.tile(); };
const KindCheck kind_checks::kTrilu = [](const LayerCheck& c) { TensorChecks{c}.trilu(); };
const KindCheck kind_checks::kRange = [](const LayerCheck& c) { TensorChecks{c}.range(); };

}  // namespace npuc::package
