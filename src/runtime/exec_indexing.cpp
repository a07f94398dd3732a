// How the indexing layer kinds run (runtime_impl.hpp): gather_elements, scatter_elements, gather_nd, scatter_nd,
// top_k, one_hot (kernels/indexing.hpp), grid_sample and roi_align (kernels/sampling.hpp) — each one call of the
// kernel the engine runs.
#include "runtime/runtime_impl.hpp"

#include "kernels/detection.hpp"
#include "kernels/indexing.hpp"
#include "kernels/sampling.hpp"
#include "kernels/typed.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;
using kernels::ScatterReduction;

/// Input i's indices as int64 (validated: int32 or int64).
std::vector<int64_t> indicesOf(const Step& s, int i) { return intValues(s.d->in(i), s.in[static_cast<size_t>(i)]); }

void runGatherElements(Runtime::Impl&, Step& s) {
  const std::vector<int64_t> idx = indicesOf(s, 1);
  kernels::gatherElements(s.shapes[0], s.shapes[1], s.p[0], package::elemSize(s.d->in(0).type), s.in[0], idx.data(), s.out);
}

void runScatterElements(Runtime::Impl&, Step& s) {
  const std::vector<int64_t> idx = indicesOf(s, 1);
  kernels::scatterElements(static_cast<ScatterReduction>(s.p[1]), s.d->in(0).type, s.shapes[0], s.shapes[1], s.p[0],
                           s.in[0], idx.data(), s.in[2], s.out);
}

void runGatherNd(Runtime::Impl&, Step& s) {
  const std::vector<int64_t> idx = indicesOf(s, 1);
  kernels::gatherNd(s.shapes[0], s.shapes[1], s.p[0], package::elemSize(s.d->in(0).type), s.in[0], idx.data(), s.out);
}

void runScatterNd(Runtime::Impl&, Step& s) {
  const std::vector<int64_t> idx = indicesOf(s, 1);
  kernels::scatterNd(static_cast<ScatterReduction>(s.p[0]), s.d->in(0).type, s.shapes[0], s.shapes[1], s.in[0],
                     idx.data(), s.in[2], s.out);
}

void runTopK(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const Shape& x = s.shapes[0];
  const size_t axis = s.p[0];
  const int64_t k = s.shapes[static_cast<size_t>(d.n_in)][axis];
  if (d.n_in == 2) {  // k given at run time: the one the package's shapes were fixed for
    int64_t given = 0;
    std::memcpy(&given, s.in[1], sizeof given);
    if (given != k)
      fail(ErrorCode::kInvalidInput, "top_k layer: k is {} at run time; this package was translated for k = {} (translate "
           "again for another k)", given, k);
  }
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < x.size(); ++i)
    if (i != axis) (i < axis ? outer : inner) *= x[i];
  const package::TensorRef& ind = d.out(1);
  kernels::topK(d.in(0).type, s.p[1] != 0, outer, x[axis], inner, k, s.in[0], s.out,
                reinterpret_cast<int64_t*>(im.at(ind.addr, ind.bytes, "top_k's indices")));
}

void runOneHot(Runtime::Impl&, Step& s) {
  const package::Descriptor& d = *s.d;
  const Shape& y = s.shapes.back();
  const size_t axis = s.p[0];
  const int64_t depth = y[axis];
  if (d.n_in == 3) {  // the depth computed by the model: the one the package's shapes were fixed for
    const double given = kernels::elementAsDouble(d.in(2).type, s.in[2]);
    if (!(std::trunc(given) == static_cast<double>(depth)))  // (as the engine truncates it; NaN and inf differ)
      fail(ErrorCode::kInvalidInput, "one_hot layer: depth {} at run time; this package was translated for {} (translate again)", given, depth);
  }
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < y.size(); ++i)
    if (i != axis) (i < axis ? outer : inner) *= y[i];
  kernels::oneHot(d.in(0).type, s.in[0], outer, depth, inner, package::elemSize(d.out(0).type), s.in[1], s.out);
}

void runGridSample(Runtime::Impl& im, Step& s) {
  using GS = kernels::GridSampleParams;
  const Shape &x = s.shapes[0], &y = s.shapes.back();
  GS p;
  p.n = x[0], p.channels = x[1], p.in_h = x[2], p.in_w = x[3], p.out_h = y[2], p.out_w = y[3];
  p.mode = static_cast<GS::Mode>(s.p[0]);
  p.padding = static_cast<GS::Padding>(s.p[1]);
  p.align_corners = s.p[2] != 0;
  kernels::gridSample(p, im.inF(s, 0), im.inF(s, 1), im.outF(s));
  im.store(s);
}

void runRoiAlign(Runtime::Impl& im, Step& s) {
  const Shape &x = s.shapes[0], &y = s.shapes.back();
  const int64_t* batch = reinterpret_cast<const int64_t*>(s.in[2]);  // (each checked by the kernel)
  kernels::RoiAlignParams p;
  p.images = x[0], p.channels = x[1], p.height = x[2], p.width = x[3], p.rois = y[0], p.out_h = y[2], p.out_w = y[3];
  p.sampling_ratio = static_cast<int32_t>(s.p[0]);
  p.spatial_scale = package::paramFloat(s.p[1]);
  p.half_pixel = s.p[2] != 0;
  p.max_mode = s.p[3] != 0;
  kernels::roiAlign(p, im.inF(s, 0), im.inF(s, 1), batch, im.outF(s));
  im.store(s);
}

void runNms(Runtime::Impl& im, Step& s) {
  const Shape &boxes = s.shapes[0], &scores = s.shapes[1], &y = s.shapes.back();
  kernels::NmsParams p;
  p.batches = boxes[0], p.boxes = boxes[1], p.classes = scores[1];
  p.center_point_box = s.p[0] != 0;
  p.max_per_class = s.p[1];
  p.iou_threshold = package::paramFloat(s.p[2]);
  p.has_score_threshold = s.p[3] != 0;
  p.score_threshold = package::paramFloat(s.p[4]);
  // (an input computed on dynamic tensors may hold no value when it runs: the engine's error, never a read of none)
  for (int i = 2; i < s.d->n_in; ++i)
    if (s.d->in(i).numel() != 1)
      fail(ErrorCode::kInvalidInput, "nms layer (seq {}): input {} holds {} values at run time, not one", s.d->seq, i,
           s.d->in(i).numel());
  int i = 2;
  if (s.p[5] & 1u) p.max_per_class = intValues(s.d->in(i), s.in[static_cast<size_t>(i)])[0], ++i;
  if (s.p[5] & 2u) p.iou_threshold = im.inF(s, i++)[0];
  if (s.p[5] & 4u) p.score_threshold = im.inF(s, i++)[0];
  if (!(p.iou_threshold >= 0.0f && p.iou_threshold <= 1.0f))
    fail(ErrorCode::kInvalidInput, "nms layer: iou_threshold {} is outside [0, 1]", p.iou_threshold);
  const auto sel = kernels::nonMaxSuppression(p, im.inF(s, 0), im.inF(s, 1));
  if (s.dyn) im.setOutputDims(s, 0, {static_cast<int64_t>(sel.size()), 3});  // (a dynamic tensor: the selections only)
  if (static_cast<int64_t>(sel.size()) > y[0])
    fail(ErrorCode::kInvalidInput, "nms layer: {} boxes selected; the package holds {} rows (translate with "
         "a larger declared output)", sel.size(), y[0]);
  auto* out = reinterpret_cast<int64_t*>(s.out);
  std::fill_n(out, y[0] * 3, int64_t{-1});
  for (size_t r = 0; r < sel.size(); ++r) std::copy(sel[r].begin(), sel[r].end(), out + r * 3);
}

void runMaxUnpool(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];
  const std::vector<int64_t> from(s.p.begin(), s.p.begin() + static_cast<std::ptrdiff_t>(x.size()));
  if (!kernels::maxUnpool(im.inF(s, 0), reinterpret_cast<const int64_t*>(s.in[1]), shapeNumel(x), im.outF(s), s.shapes.back(), from))
    fail(ErrorCode::kInvalidInput, "max_unpool layer: an index is outside the pooled shape {} or the output {}",
         shapeStr(from), shapeStr(s.shapes.back()));
  im.store(s);
}

void runReverseSequence(Runtime::Impl&, Step& s) {
  const Shape& x = s.shapes[0];
  const bool time_first = s.p[0] == 0;
  const int64_t* lens = reinterpret_cast<const int64_t*>(s.in[1]);
  for (int64_t b = 0; b < x[time_first ? 1 : 0]; ++b)
    if (lens[b] < 0 || lens[b] > x[time_first ? 0 : 1])
      fail(ErrorCode::kInvalidInput, "reverse_sequence layer: sequence_lens[{}] = {} is outside [0, {}]", b, lens[b], x[time_first ? 0 : 1]);
  kernels::reverseSequence(package::elemSize(s.d->in(0).type), x[0], x[1], shapeNumel(x) / std::max<int64_t>(1, x[0] * x[1]),
                           time_first, lens, s.in[0], s.out);
}

void runCompress(Runtime::Impl&, Step& s) {
  const package::Descriptor& d = *s.d;
  const Shape &x = s.shapes[0], &y = s.shapes.back();
  const bool flat = s.p[0] == 0xFFFFFFFFu;
  const kernels::AxisView v = flat ? kernels::AxisView{1, shapeNumel(x), 1} : kernels::around(x, s.p[0]);
  const int64_t outer = v.outer, dim = v.dim, inner = v.inner, kept = flat ? y[0] : y[s.p[0]];
  const auto* cond = s.in[1];
  const int64_t len = static_cast<int64_t>(d.in(1).numel()), got = kernels::compressKept(cond, len, dim);
  if (got != kept)
    fail(ErrorCode::kInvalidInput, "compress layer: the condition keeps {} slices at run time; this package was translated for {} "
         "(translate again for another count)", got, kept);
  kernels::compress(package::elemSize(d.in(0).type), outer, dim, inner, cond, len, s.in[0], s.out);
}

/// nonzero: the indices row-major at [rank, n] from y's first element, and the extent [rank, n] (a dynamic tensor).
void runNonZero(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const Shape& x = s.shapes[0];
  const package::TensorRef& e = d.out(1);
  const int64_t n = kernels::nonZero(d.in(0).type, x, s.in[0], reinterpret_cast<int64_t*>(s.out), shapeNumel(x));
  const int64_t extent[2] = {static_cast<int64_t>(x.size()), n};
  std::memcpy(im.at(e.addr, e.bytes, "nonzero's extent"), extent, sizeof extent);
}

}  // namespace

const KindExec kind_exec::kCompress = {nullptr, &runCompress};
const KindExec kind_exec::kGridSample = {nullptr, &runGridSample};
const KindExec kind_exec::kRoiAlign = {nullptr, &runRoiAlign};
const KindExec kind_exec::kNonMaxSuppression = {nullptr, &runNms, [](const Step& s, std::vector<Shape>& y) {
  // at most every box of every class of every batch (a constant max_output_boxes_per_class: that many per class); the
  // run sets the count it selects
  const Shape &boxes = s.shapes[0], &scores = s.shapes[1];
  if (boxes[2] != 4 || scores[0] != boxes[0] || scores[2] != boxes[1])
    fail(ErrorCode::kInvalidInput, "nms layer (seq {}): boxes [{}] and scores [{}] at run time (ONNX: [B, N, 4] and [B, C, N])",
         s.d->seq, fmt::join(boxes, ", "), fmt::join(scores, ", "));
  const int64_t per = (s.p[5] & 1u) ? boxes[1] : std::min<int64_t>(boxes[1], s.p[1]);
  y[0] = {boxes[0] * scores[1] * per, 3};
}};
const KindExec kind_exec::kMaxUnpool = {nullptr, &runMaxUnpool};
const KindExec kind_exec::kReverseSequence = {nullptr, &runReverseSequence};
const KindExec kind_exec::kOneHot = {nullptr, &runOneHot};
const KindExec kind_exec::kGatherElements = {nullptr, &runGatherElements};
const KindExec kind_exec::kScatterElements = {nullptr, &runScatterElements};
const KindExec kind_exec::kGatherNd = {nullptr, &runGatherNd, [](const Step& s, std::vector<Shape>& y) {
  // ONNX: indices' dims but the last, then data's dims after batch_dims + the index length
  const Shape &x = s.shapes[0], &idx = s.shapes[1];
  const size_t b = s.p[0], last = idx.empty() ? 0 : static_cast<size_t>(idx.back());
  if (idx.empty() || b + last > x.size())
    fail(ErrorCode::kInvalidInput, "gather_nd layer: indices [{}] for data [{}] (batch_dims {})", fmt::join(idx, ", "), fmt::join(x, ", "), b);
  y[0].assign(idx.begin(), idx.end() - 1);
  y[0].insert(y[0].end(), x.begin() + static_cast<std::ptrdiff_t>(b + last), x.end());
}};
const KindExec kind_exec::kScatterNd = {nullptr, &runScatterNd};
const KindExec kind_exec::kTopK = {nullptr, &runTopK, [](const Step& s, std::vector<Shape>& y) {
  // x's dims with the axis's k: the value the model computes, or the one the package was translated for
  const Shape& x = s.shapes[0];
  const size_t axis = s.p[0];
  int64_t k = s.dyn->capacity[static_cast<size_t>(s.d->n_in)][axis];
  if (s.d->n_in == 2) std::memcpy(&k, s.in[1], sizeof k);
  if (k < 0 || k > x[axis]) fail(ErrorCode::kInvalidInput, "top_k layer: k = {} for an axis of {}", k, x[axis]);
  y[0] = x, y[0][axis] = k;
  y[1] = y[0];
}};
const KindExec kind_exec::kNonZero = {nullptr, &runNonZero};

}  // namespace npuc
