// The reader's checks of the indexing layer kinds (validate.hpp): gather_elements, scatter_elements, gather_nd,
// scatter_nd, top_k, one_hot (kernels/indexing.hpp states what each computes), and of the kinds that sample at
// computed positions: grid_sample, roi_align (kernels/sampling.hpp).
#include "package/validate.hpp"

#include "kernels/indexing.hpp"
#include "kernels/typed.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>

namespace npuc::package {

namespace {

struct IndexingChecks : LayerCheck {
  void indices(const TensorRef& r) const {
    if (r.type != ElemType::kI64 && r.type != ElemType::kI32) bad("{}: indices are {}, this kind needs int32 or int64", what, elemName(r.type));
  }
  void sameType(const TensorRef& a, const TensorRef& b, const char* an, const char* bn) const {
    if (a.type != b.type) bad("{}: {} is {}, {} is {}", what, an, elemName(a.type), bn, elemName(b.type));
  }
  /// A scatter's reduction word and the element type it computes in.
  void reduction(uint32_t r) const {
    if (r >= static_cast<uint32_t>(kernels::ScatterReduction::kCount)) bad("{}: unknown reduction {}", what, r);
    if (r != 0 && (x.type == ElemType::kBool || !(kernels::typedKernelType(x.type) || x.type == ElemType::kF16)))
      bad("{}: reduction '{}' on {}", what, kernels::scatterReductionName(static_cast<kernels::ScatterReduction>(r)), elemName(x.type));
  }
  /// Indices of x's rank whose dims are at most x's, but along `axis` (GatherElements / ScatterElements).
  void elementIndices(const TensorRef& idx) const {
    indices(idx);
    if (w[0] >= x.rank) bad("{}: axis {} out of range for rank {}", what, w[0], x.rank);
    if (idx.rank != x.rank) bad("{}: indices {} for data {} (ranks differ)", what, dimsStr(idx), dimsStr(x));
    for (uint32_t i = 0; i < x.rank; ++i)
      if (i != w[0] && idx.dims[i] > x.dims[i]) bad("{}: indices {} exceed data {} off the axis", what, dimsStr(idx), dimsStr(x));
    if (x.dims[w[0]] == 0 && idx.numel() > 0) bad("{}: indexes an empty axis {}", what, w[0]);
  }
  /// Index tuples over x's dims from `b` on (GatherND / ScatterND); the tuple length k.
  uint32_t tupleIndices(const TensorRef& idx, uint32_t b) const {
    indices(idx);
    if (idx.rank < 1 || b >= idx.rank) bad("{}: indices {} with batch_dims {}", what, dimsStr(idx), b);
    const uint32_t k = idx.dims[idx.rank - 1u];
    if (k < 1 || b + k > x.rank) bad("{}: index tuples of {} for data {} (batch_dims {})", what, k, dimsStr(x), b);
    for (uint32_t i = 0; i < b; ++i)
      if (idx.dims[i] != x.dims[i]) bad("{}: batch dim {} of indices {} is not data {}'s", what, i, dimsStr(idx), dimsStr(x));
    return k;
  }
  /// indices' dims but the last, then x's from `from` on: a gathered tensor's dims / a scatter's updates' dims.
  std::vector<int64_t> sliced(const TensorRef& idx, uint32_t from) const {
    std::vector<int64_t> want(idx.dims.begin(), idx.dims.begin() + idx.rank - 1);
    for (uint32_t i = from; i < x.rank; ++i) want.push_back(x.dims[i]);
    return want;
  }

  void gatherElements() const {
    const TensorRef& idx = d.in(1);
    sameType(x, y, "x", "y");
    elementIndices(idx);
    if (dimsOf(y) != dimsOf(idx)) bad("{}: y {} is not the indices' shape {}", what, dimsStr(y), dimsStr(idx));
  }

  void scatterElements() const {
    const TensorRef &idx = d.in(1), &u = d.in(2);
    sameType(x, y, "x", "y");
    sameType(x, u, "x", "updates");
    elementIndices(idx);
    reduction(w[1]);
    if (dimsOf(y) != dimsOf(x) || dimsOf(u) != dimsOf(idx))
      bad("{}: data {}, indices {}, updates {} -> {}", what, dimsStr(x), dimsStr(idx), dimsStr(u), dimsStr(y));
  }

  void gatherNd() const {
    const TensorRef& idx = d.in(1);
    sameType(x, y, "x", "y");
    const uint32_t k = tupleIndices(idx, w[0]);
    if (dimsOf(y) != sliced(idx, w[0] + k)) bad("{}: {} gathered by {} (batch_dims {}) is not {}", what, dimsStr(x), dimsStr(idx), w[0], dimsStr(y));
  }

  void scatterNd() const {
    const TensorRef &idx = d.in(1), &u = d.in(2);
    sameType(x, y, "x", "y");
    sameType(x, u, "x", "updates");
    reduction(w[0]);
    const uint32_t k = tupleIndices(idx, 0);
    if (dimsOf(y) != dimsOf(x) || dimsOf(u) != sliced(idx, k))
      bad("{}: data {}, indices {}, updates {} -> {}", what, dimsStr(x), dimsStr(idx), dimsStr(u), dimsStr(y));
  }

  void oneHot() const {
    const TensorRef& v = d.in(1);
    if (x.type == ElemType::kBool || !(kernels::typedKernelType(x.type) || x.type == ElemType::kF16)) bad("{}: indices of {}", what, elemName(x.type));
    if (v.type != y.type || v.numel() != 2) bad("{}: values are {} {}, not 2 of {}", what, elemName(v.type), dimsStr(v), elemName(y.type));
    if (w[0] >= y.rank || y.rank != x.rank + 1) bad("{}: axis {} for indices {} and y {}", what, w[0], dimsStr(x), dimsStr(y));
    std::vector<int64_t> want = dimsOf(x);
    want.insert(want.begin() + w[0], y.dims[w[0]]);
    if (dimsOf(y) != want) bad("{}: one-hot of {} along axis {} is not {}", what, dimsStr(x), w[0], dimsStr(y));
    if (d.n_in == 3 && (d.in(2).numel() != 1 || d.in(2).type == ElemType::kBool || !(kernels::typedKernelType(d.in(2).type) || d.in(2).type == ElemType::kF16)))
      bad("{}: depth is {} {}, not one number", what, elemName(d.in(2).type), dimsStr(d.in(2)));
  }

  void gridSample() const {
    const TensorRef& g = d.in(1);
    isFloat(x, "x"); isFloat(g, "grid"); isFloat(y, "y");
    if (x.rank != 4 || g.rank != 4 || y.rank != 4 || g.dims[0] != x.dims[0] || g.dims[3] != 2 || y.dims[0] != x.dims[0] ||
        y.dims[1] != x.dims[1] || y.dims[2] != g.dims[1] || y.dims[3] != g.dims[2])
      bad("{}: x {} sampled at grid {} is not {}", what, dimsStr(x), dimsStr(g), dimsStr(y));
    if (w[0] > 2 || w[1] > 2 || w[2] > 1) bad("{}: mode {} / padding {} / align_corners {} out of range", what, w[0], w[1], w[2]);
  }

  void roiAlign() const {
    const TensorRef &r = d.in(1), &b = d.in(2);
    isFloat(x, "x"); isFloat(r, "rois"); isFloat(y, "y");
    typeIs(b, ElemType::kI64, "batch_indices");
    if (x.rank != 4 || r.rank != 2 || r.dims[1] != 4 || b.rank != 1 || b.dims[0] != r.dims[0] || y.rank != 4 ||
        y.dims[0] != r.dims[0] || y.dims[1] != x.dims[1] || y.dims[2] < 1 || y.dims[3] < 1)
      bad("{}: x {}, rois {}, batch_indices {} -> {}", what, dimsStr(x), dimsStr(r), dimsStr(b), dimsStr(y));
    const float scale = paramFloat(w[1]);
    if (!std::isfinite(scale) || w[2] > 1 || w[3] > 1 || w[4] != 0 || static_cast<int32_t>(w[0]) < 0)
      bad("{}: sampling_ratio {}, spatial_scale {}, flags {} {} {}", what, static_cast<int32_t>(w[0]), scale, w[2], w[3], w[4]);
  }

  void nms() const {
    const TensorRef& scores = d.in(1);
    isFloat(x, "boxes"); isFloat(scores, "scores");
    typeIs(y, ElemType::kI64, "y");
    if (x.rank != 3 || x.dims[2] != 4 || scores.rank != 3 || scores.dims[0] != x.dims[0] || scores.dims[2] != x.dims[1] ||
        y.rank != 2 || y.dims[1] != 3)
      bad("{}: boxes {}, scores {} -> {} (boxes [B, N, 4], scores [B, C, N], y [rows, 3])", what, dimsStr(x), dimsStr(scores), dimsStr(y));
    const float iou = paramFloat(w[2]), score = paramFloat(w[4]);
    if (w[0] > 1 || w[1] > INT32_MAX || !(iou >= 0.0f && iou <= 1.0f) || w[3] > 1 || std::isnan(score) || w[5] > 7)
      bad("{}: center_point_box {}, max_output_boxes_per_class {}, iou_threshold {}, score_threshold {} {}, flags {}", what,
          w[0], w[1], iou, w[3], score, w[5]);
    if (d.n_in != 2 + std::popcount(w[5])) bad("{}: {} inputs, the flags {} name {}", what, d.n_in, w[5], 2 + std::popcount(w[5]));
    int i = 2;
    for (int bit = 0; bit < 3; ++bit) {
      if (!(w[5] & (1u << bit))) continue;
      const TensorRef& r = d.in(i++);
      if (bit != 0) isFloat(r, bit == 1 ? "iou_threshold" : "score_threshold");
      else if (r.type != ElemType::kI64 && r.type != ElemType::kI32) bad("{}: max_output_boxes_per_class is {}", what, elemName(r.type));
      if (r.numel() != 1) bad("{}: input {} holds {} values, not one", what, i - 1, r.numel());
    }
  }

  void maxUnpool() const {
    const TensorRef& idx = d.in(1);
    isFloat(x, "x"); isFloat(y, "y");
    typeIs(idx, ElemType::kI64, "indices");
    uint64_t pooled = 1;
    for (uint32_t i = 0; i < x.rank; ++i) pooled *= std::max<uint32_t>(w[i], 1);
    if (x.rank < 3 || dimsOf(idx) != dimsOf(x) || y.rank != x.rank || y.dims[0] != x.dims[0] || y.dims[1] != x.dims[1] ||
        w[0] != x.dims[0] || w[1] != x.dims[1] || pooled > (uint64_t{1} << 40))
      bad("{}: x {}, indices {}, pooled shape {} -> y {}", what, dimsStr(x), dimsStr(idx), fmt::join(w, "x"), dimsStr(y));
  }

  void reverseSequence() const {
    const TensorRef& lens = d.in(1);
    sameType(x, y, "x", "y");
    typeIs(lens, ElemType::kI64, "sequence_lens");
    if (w[0] > 1 || x.rank < 2 || dimsOf(x) != dimsOf(y) || lens.rank != 1 || lens.dims[0] != x.dims[w[0] == 0 ? 1 : 0])
      bad("{}: time_axis {}, x {}, sequence_lens {} -> y {}", what, w[0], dimsStr(x), dimsStr(lens), dimsStr(y));
  }

  void compress() const {
    const TensorRef& cond = d.in(1);
    sameType(x, y, "x", "y");
    typeIs(cond, ElemType::kBool, "condition");
    if (cond.rank != 1) bad("{}: the condition is {}, not 1-D", what, dimsStr(cond));
    const bool flat = w[0] == 0xFFFFFFFFu;
    if (!flat && w[0] >= x.rank) bad("{}: axis {} out of range for rank {}", what, w[0], x.rank);
    const uint64_t dim = flat ? x.numel() : x.dims[w[0]];
    std::vector<int64_t> want = flat ? std::vector<int64_t>{0} : dimsOf(x);
    const size_t at = flat ? 0 : w[0];
    const uint64_t kept = y.rank == want.size() ? y.dims[at] : 0;
    want[at] = static_cast<int64_t>(kept);
    if (dimsOf(y) != want || kept > std::min<uint64_t>(dim, cond.dims[0]))
      bad("{}: {} compressed along {} by a condition {} is not {}", what, dimsStr(x), flat ? std::string("its elements") : fmt::format("axis {}", w[0]), dimsStr(cond), dimsStr(y));
  }

  /// nonzero: y int64 [rank(x), numel(x)] (its capacity) and the extent int64 [2] its run writes.
  void nonZero() const {
    if (d.n_out != 2) bad("{}: writes the indices and their extent (2 outputs), not {}", what, d.n_out);
    const TensorRef& extent = d.out(1);
    if (!(kernels::typedKernelType(x.type) || x.type == ElemType::kF16)) bad("{}: NonZero of {}", what, elemName(x.type));
    typeIs(y, ElemType::kI64, "y");
    typeIs(extent, ElemType::kI64, "extent");
    if (x.rank < 1 || y.rank != 2 || y.dims[0] != x.rank || y.dims[1] != x.numel())
      bad("{}: the indices of the non-zeros of {} are held in [{}, {}], not {}", what, dimsStr(x), x.rank, x.numel(), dimsStr(y));
    if (extent.rank != 1 || extent.dims[0] != 2) bad("{}: the extent is {}, not [2]", what, dimsStr(extent));
  }

  void topK() const {
    const TensorRef& ind = d.out(1);
    sameType(x, y, "x", "values");
    typeIs(ind, ElemType::kI64, "indices");
    if (!(kernels::typedKernelType(x.type) || x.type == ElemType::kF16) || x.type == ElemType::kBool) bad("{}: TopK of {}", what, elemName(x.type));
    if (w[0] >= x.rank) bad("{}: axis {} out of range for rank {}", what, w[0], x.rank);
    if (w[1] > 1) bad("{}: largest flag {} is not 0 or 1", what, w[1]);
    if (d.n_out != 2) bad("{}: writes values and indices (2 outputs), not {}", what, d.n_out);
    bool ok = y.rank == x.rank && dimsOf(ind) == dimsOf(y) && y.dims[w[0]] <= x.dims[w[0]];
    for (uint32_t i = 0; ok && i < x.rank; ++i) ok = i == w[0] || y.dims[i] == x.dims[i];
    if (!ok) bad("{}: top k of {} along axis {} is not {} / {}", what, dimsStr(x), w[0], dimsStr(y), dimsStr(ind));
    if (d.n_in == 2 && (d.in(1).type != ElemType::kI64 || d.in(1).numel() != 1)) bad("{}: k is {} {}, not int64 [1]", what, elemName(d.in(1).type), dimsStr(d.in(1)));
  }
};

}  // namespace

const KindCheck kind_checks::kGatherElements = [](const LayerCheck& c) { IndexingChecks{c}.gatherElements(); };
const KindCheck kind_checks::kScatterElements = [](const LayerCheck& c) { IndexingChecks{c}.scatterElements(); };
const KindCheck kind_checks::kGatherNd = [](const LayerCheck& c) { IndexingChecks{c}.gatherNd(); };
const KindCheck kind_checks::kScatterNd = [](const LayerCheck& c) { IndexingChecks{c}.scatterNd(); };
const KindCheck kind_checks::kOneHot = [](const LayerCheck& c) { IndexingChecks{c}.oneHot(); };
const KindCheck kind_checks::kGridSample = [](const LayerCheck& c) { IndexingChecks{c}.gridSample(); };
const KindCheck kind_checks::kRoiAlign = [](const LayerCheck& c) { IndexingChecks{c}.roiAlign(); };
const KindCheck kind_checks::kNonMaxSuppression = [](const LayerCheck& c) { IndexingChecks{c}.nms(); };
const KindCheck kind_checks::kMaxUnpool = [](const LayerCheck& c) { IndexingChecks{c}.maxUnpool(); };
const KindCheck kind_checks::kReverseSequence = [](const LayerCheck& c) { IndexingChecks{c}.reverseSequence(); };
const KindCheck kind_checks::kCompress = [](const LayerCheck& c) { IndexingChecks{c}.compress(); };
const KindCheck kind_checks::kTopK = [](const LayerCheck& c) { IndexingChecks{c}.topK(); };
const KindCheck kind_checks::kNonZero = [](const LayerCheck& c) { IndexingChecks{c}.nonZero(); };

}  // namespace npuc::package
