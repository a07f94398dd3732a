// The reader's checks of the reducing layer kinds (validate.hpp): reduce, layer_norm.
#include "package/validate.hpp"

#include "kernels/layers.hpp"
#include "kernels/typed.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace npuc::package {

namespace {

/// The checks of this family, members of a LayerCheck: they read the descriptor (d, x, y, w, what) by name.
struct ReduceChecks : LayerCheck {
  void reduce() const {
    if (x.type == ElemType::kF32 || x.type == ElemType::kF16 || x.type == ElemType::kBool) {
      isFloat(x, "x"); isFloat(y, "y");
    } else {  // typed values (integers, float64: kernels::reduceTyped), y of x's type, no activation
      if (!kernels::typedKernelType(x.type) || y.type != x.type) bad("{}: reduces {} into {}", what, elemName(x.type), elemName(y.type));
      if (d.act != Act::kNone) bad("{}: a reduction of {} values has no activation", what, elemName(x.type));
    }
    const bool axes_in = d.n_in == 2;  // the axes the model computes: read at run time (the flags all 0)
    const uint32_t op = axes_in ? w[0] & 0xFFFFu : w[0];
    if (op >= static_cast<uint32_t>(kernels::ReduceOp::kCount) || (axes_in && (w[0] >> 16) > 1)) bad("{}: unknown reduce op {}", what, w[0]);
    if (axes_in) {
      const TensorRef& a = d.in(1);
      if ((a.type != ElemType::kI64 && a.type != ElemType::kI32) || a.rank != 1 || a.dims[0] > x.rank)
        bad("{}: the axes are {} {}, not int32 / int64 [at most {}]", what, elemName(a.type), dimsStr(a), x.rank);
      for (int i = 0; i < x.rank; ++i)
        if (w[static_cast<size_t>(1 + i)] != 0) bad("{}: axis flag {} of dim {} with the axes as an input (must be 0)", what, w[static_cast<size_t>(1 + i)], i);
      if (y.rank > x.rank) bad("{}: {} reduced is not {}", what, dimsStr(x), dimsStr(y));
      return;
    }
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

  void argReduce() const {
    if (!kernels::typedKernelType(x.type)) bad("{}: ArgMax / ArgMin of {}", what, elemName(x.type));
    if (y.type == ElemType::kU8) {  // (a class map of at most 255 classes, one byte an index: TIDL's)
      if (w[1] < x.rank && x.dims[w[1]] > 255) bad("{}: uint8 indices over an axis of {} (at most 255)", what, x.dims[w[1]]);
    } else {
      typeIs(y, ElemType::kI64, "y");
    }
    if (w[0] > 1 || w[2] > 1) bad("{}: mode {} / select_last {} are not 0 or 1", what, w[0], w[2]);
    if (w[1] >= static_cast<uint32_t>(std::max<uint8_t>(x.rank, 1))) bad("{}: axis {} out of range for rank {}", what, w[1], x.rank);
    if (x.rank > 0 && x.dims[w[1]] == 0) bad("{}: the axis is empty", what);
    std::vector<uint32_t> keep(x.dims.begin(), x.dims.begin() + x.rank), drop;
    if (x.rank > 0) keep[w[1]] = 1;
    for (int i = 0; i < x.rank; ++i)
      if (static_cast<uint32_t>(i) != w[1]) drop.push_back(x.dims[static_cast<size_t>(i)]);
    std::vector<uint32_t> ydims(y.dims.begin(), y.dims.begin() + y.rank);
    if (ydims != keep && ydims != drop) bad("{}: {} reduced along axis {} is not {}", what, dimsStr(x), w[1], dimsStr(y));
  }

  void cumSum() const {
    if (x.type != y.type || dimsOf(x) != dimsOf(y)) bad("{}: {} {} -> {} {}", what, elemName(x.type), dimsStr(x), elemName(y.type), dimsStr(y));
    if (x.type == ElemType::kBool || !kernels::typedKernelType(x.type)) bad("{}: CumSum of {}", what, elemName(x.type));
    if (w[0] >= static_cast<uint32_t>(std::max<uint8_t>(x.rank, 1))) bad("{}: axis {} out of range for rank {}", what, w[0], x.rank);
    if (w[1] > 1 || w[2] > 1) bad("{}: exclusive {} / reverse {} are not 0 or 1", what, w[1], w[2]);
    if (d.n_in == 2 && ((d.in(1).type != ElemType::kI64 && d.in(1).type != ElemType::kI32) || d.in(1).numel() != 1 || x.rank == 0))
      bad("{}: the axis is {} {}, not one int32 / int64 (of a tensor with dims)", what, elemName(d.in(1).type), dimsStr(d.in(1)));
  }

  void window() const {
    isFloat(y, "y");
    if (y.rank != 1 || w[0] > 2 || w[1] > 1) bad("{}: a window {} of kind {}, periodic {}", what, dimsStr(y), w[0], w[1]);
    if ((x.type != ElemType::kI64 && x.type != ElemType::kI32) || x.numel() != 1) bad("{}: size is {} {}, not one int32 / int64", what, elemName(x.type), dimsStr(x));
  }

  /// One int32 / int64 element: a size the layer reads when it runs.
  void sizeRef(const TensorRef& r, const char* name) const {
    if ((r.type != ElemType::kI64 && r.type != ElemType::kI32) || r.numel() != 1)
      bad("{}: {} is {} {}, not one int32 / int64", what, name, elemName(r.type), dimsStr(r));
  }

  void dft() const {
    isFloat(x, "x"); isFloat(y, "y");
    const uint32_t axis = w[0], length = w[1], inverse = w[2], onesided = w[3];
    if (x.rank < 2 || axis + 1 >= x.rank) bad("{}: axis {} of {} (not the last)", what, axis, dimsStr(x));
    const uint32_t c = x.dims[x.rank - 1u];
    if (c != 1 && c != 2) bad("{}: the last dim of {} is not 1 (real) or 2 (complex)", what, dimsStr(x));
    if (inverse > 1 || onesided > 1 || (onesided && (inverse || c != 1)))
      bad("{}: inverse {} / onesided {} of {} (onesided: a real forward DFT)", what, inverse, onesided, dimsStr(x));
    if (length < 1 || length > (1u << 24)) bad("{}: length {} is outside [1, 2^24]", what, length);
    if (d.n_in == 2) sizeRef(d.in(1), "dft_length");
    std::vector<int64_t> want = dimsOf(x);
    want[axis] = onesided ? length / 2 + 1 : length;
    want.back() = 2;
    if (dimsOf(y) != want) bad("{}: y is {}, the DFT of {} gives {}", what, dimsStr(y), dimsStr(x), fmt::join(want, "x"));
  }

  void stft() const {
    isFloat(x, "x"); isFloat(y, "y");
    const uint32_t step = w[0], length = w[1], onesided = w[2], flags = w[3];
    if (x.rank != 3 || (x.dims[2] != 1 && x.dims[2] != 2)) bad("{}: the signal is {}, not [batch, samples, 1 or 2]", what, dimsStr(x));
    if (onesided > 1 || flags > 7 || (onesided && x.dims[2] != 1)) bad("{}: onesided {} / flags {} of {}", what, onesided, flags, dimsStr(x));
    if (step < 1 || length < 1 || length > x.dims[1]) bad("{}: frame_step {} / frame_length {} for {} samples", what, step, length, x.dims[1]);
    const std::vector<int64_t> want = {x.dims[0], (x.dims[1] - length) / step + 1, onesided ? length / 2 + 1 : length, 2};
    if (dimsOf(y) != want) bad("{}: y is {}, the STFT of {} gives {}", what, dimsStr(y), dimsStr(x), fmt::join(want, "x"));
    if (d.n_in != 1 + std::popcount(flags)) bad("{}: {} inputs, the flags {} name {}", what, d.n_in, flags, 1 + std::popcount(flags));
    int i = 1;
    if (flags & 1u) sizeRef(d.in(i++), "frame_step");
    if (flags & 2u) {
      const TensorRef& win = d.in(i++);
      isFloat(win, "window");
      if (win.rank != 1 || win.dims[0] != length) bad("{}: the window is {}, not [{}]", what, dimsStr(win), length);
    }
    if (flags & 4u) sizeRef(d.in(i++), "frame_length");
  }

  void melWeightMatrix() const {
    for (int i = 0; i < 3; ++i) sizeRef(d.in(i), i == 0 ? "num_mel_bins" : i == 1 ? "dft_length" : "sample_rate");
    for (int i = 3; i < 5; ++i)
      if (isFloat(d.in(i), "an edge frequency"), d.in(i).numel() != 1) bad("{}: an edge frequency of {} elements", what, d.in(i).numel());
    isFloat(y, "y");
    if (y.rank != 2 || y.dims[0] < 1 || y.dims[1] < 1 || y.dims[1] > 65536 || y.dims[0] > (1u << 23) + 1)
      bad("{}: y is {}, not [dft_length / 2 + 1, num_mel_bins] with dft_length in [1, 2^24], num_mel_bins in [1, 65536]", what, dimsStr(y));
  }

  void mvn() const {
    floatSameShape();
    for (uint32_t i = 0; i < x.rank; ++i)
      if (w[i] > 1) bad("{}: the flag of dim {} is {}, not 0 or 1", what, i, w[i]);
  }

  void loss() const {
    const TensorRef& t = d.in(1);
    isFloat(x, "scores"); isFloat(y, "loss");
    if (t.type != ElemType::kI64 && t.type != ElemType::kI32) bad("{}: the targets are {}, not int32 / int64", what, elemName(t.type));
    std::vector<int64_t> want = dimsOf(x);
    if (want.size() >= 2) want.erase(want.begin() + 1);
    if (w[0] > 1 || w[1] > 2 || w[2] > 1 || x.rank < 2 || dimsOf(t) != want ||
        (w[1] == 0 ? dimsOf(y) != want : y.numel() != 1) || (d.n_in == 3 && (d.in(2).rank != 1 || d.in(2).dims[0] != x.dims[1])))
      bad("{}: softmax {}, reduction {}, ignore {}: scores {}, targets {} -> {}", what, w[0], w[1], w[2], dimsStr(x), dimsStr(t), dimsStr(y));
    if (d.n_in == 3) isFloat(d.in(2), "weight");
    if (d.n_out == 2) {
      isFloat(d.out(1), "log_prob");
      if (!w[0] || dimsOf(d.out(1)) != dimsOf(x)) bad("{}: log_prob {} of scores {} (SoftmaxCrossEntropyLoss only)", what, dimsStr(d.out(1)), dimsStr(x));
    }
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
      // weights (inside the weight image: checked with every reference) or an activation the model computes
    }
    for (int k = 1; k < d.n_out; ++k) {  // Mean, InvStdDev: x's dims, the normalised ones 1
      const TensorRef& s = d.out(k);
      isFloat(s, k == 1 ? "mean" : "inv_std_dev");
      bool ok = s.rank == x.rank;
      for (uint32_t i = 0; ok && i < x.rank; ++i) ok = s.dims[i] == (i < w[0] ? x.dims[i] : 1u);
      if (!ok) bad("{}: output {} is {}, the statistics of {} from axis {} are one per row", what, k, dimsStr(s), dimsStr(x), w[0]);
    }
  }
};

}  // namespace

const KindCheck kind_checks::kReduce = [](const LayerCheck& c) { ReduceChecks{c}.reduce(); };
const KindCheck kind_checks::kCumSum = [](const LayerCheck& c) { ReduceChecks{c}.cumSum(); };
const KindCheck kind_checks::kArgReduce = [](const LayerCheck& c) { ReduceChecks{c}.argReduce(); };
const KindCheck kind_checks::kWindow = [](const LayerCheck& c) { ReduceChecks{c}.window(); };
const KindCheck kind_checks::kDft = [](const LayerCheck& c) { ReduceChecks{c}.dft(); };
const KindCheck kind_checks::kStft = [](const LayerCheck& c) { ReduceChecks{c}.stft(); };
const KindCheck kind_checks::kMelWeightMatrix = [](const LayerCheck& c) { ReduceChecks{c}.melWeightMatrix(); };
const KindCheck kind_checks::kMvn = [](const LayerCheck& c) { ReduceChecks{c}.mvn(); };
const KindCheck kind_checks::kLoss = [](const LayerCheck& c) { ReduceChecks{c}.loss(); };
const KindCheck kind_checks::kLayerNorm = [](const LayerCheck& c) { ReduceChecks{c}.layerNorm(); };

}  // namespace npuc::package
