// Lowering of the indexing ops (mirrors engine/ops_indexing.cpp): GatherElements, ScatterElements / Scatter,
// GatherND, ScatterND, TopK and OneHot (kernels/indexing.hpp), and of the ops sampling at computed positions,
// GridSample and RoiAlign (kernels/sampling.hpp): each one layer of the kind that runs the engine's kernel.
#include "codegen/lowerer.hpp"

#include "kernels/indexing.hpp"
#include "kernels/sampling.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

namespace npuc::codegen::detail {

namespace {

/// A scatter's `reduction` attribute as its parameter word.
uint32_t reductionWord(const ir::Node& n) {
  const std::string mode = n.attrString("reduction", "none");
  const kernels::ScatterReduction r = kernels::scatterReductionFromName(mode);
  if (r == kernels::ScatterReduction::kCount)
    fail(ErrorCode::kUnsupported, "{}: reduction '{}' has no package form (none, add, mul, max, min)", n.label(), mode);
  return static_cast<uint32_t>(r);
}

}  // namespace

/// GatherElements / ScatterElements: one layer, the `axis` attribute normalized (x's rank 1 to the package's).
void Lowerer::gatherElements(const ir::Node& n) {
  const bool scatter = n.op != "GatherElements";
  const Shape& xs = shapeOf(n, 0);
  if (xs.size() > package::kMaxRank) unsupported(n, "rank {} above {}", xs.size(), package::kMaxRank);
  int64_t axis = n.attrInt("axis", 0);
  if (xs.empty() || !ops::normalizeAxis(axis, static_cast<int64_t>(xs.size())))
    unsupported(n, "axis {} is out of range for rank {}", n.attrInt("axis", 0), xs.size());
  std::vector<uint32_t> words{u32(axis)};
  if (scatter) words.push_back(reductionWord(n));
  std::vector<int> ins{in(n, 0), intIn(n, 1)};
  if (scatter) ins.push_back(in(n, 2));
  emit(n, scatter ? LayerKind::kScatterElements : LayerKind::kGatherElements, ins, outVal(n, n.outputs[0]), words);
}

void Lowerer::gatherNd(const ir::Node& n) {
  if (shapeOf(n, 0).size() > package::kMaxRank || shapeOf(n, 1).size() > package::kMaxRank)
    unsupported(n, "rank above {}", package::kMaxRank);
  const int x = in(n, 0), idx = intIn(n, 1);
  emit(n, LayerKind::kGatherNd, {x, idx}, outVal(n, n.outputs[0]), {u32(n.attrInt("batch_dims", 0))});
}

void Lowerer::scatterNd(const ir::Node& n) {
  if (shapeOf(n, 0).size() > package::kMaxRank || shapeOf(n, 1).size() > package::kMaxRank || shapeOf(n, 2).size() > package::kMaxRank)
    unsupported(n, "rank above {}", package::kMaxRank);
  const uint32_t r = reductionWord(n);
  const int x = in(n, 0), idx = intIn(n, 1), u = in(n, 2);
  emit(n, LayerKind::kScatterNd, {x, idx, u}, outVal(n, n.outputs[0]), {r});
}

/// TopK: k fixed by the output's shape; a k the model gives at run time is an input the layer checks against it.
void Lowerer::topK(const ir::Node& n) {
  const Shape& xs = shapeOf(n, 0);
  if (xs.empty() || xs.size() > package::kMaxRank) unsupported(n, "rank {} (1 to {})", xs.size(), package::kMaxRank);
  int64_t axis = n.attrInt("axis", -1);
  if (!ops::normalizeAxis(axis, static_cast<int64_t>(xs.size())))
    unsupported(n, "axis {} is out of range for rank {}", n.attrInt("axis", -1), xs.size());
  if (n.attrInt("sorted", 1) == 0) unsupported(n, "sorted = 0 (an unspecified order) has no package form; the layer sorts");
  const int64_t k = g_.value(n.outputs[0]).type.shape.at(static_cast<size_t>(axis));
  std::vector<int> ins{in(n, 0)};
  if (n.op == "TopK" && n.hasInput(1)) {
    if (const Tensor* kt = constIn(n, 1)) {
      if (kt->numel() != 1 || kt->toInt64()[0] != k) unsupported(n, "k {} does not match the output's {}", kt->numel() == 1 ? kt->toInt64()[0] : -1, k);
    } else {
      const ir::Value& kv = g_.value(n.inputs[1]);
      if (kv.type.dtype != DType::kI64 || shapeNumel(kv.type.shape) != 1) unsupported(n, "k must be int64 [1]");
      ins.push_back(intIn(n, 1));
    }
  }
  const int values = outVal(n, n.outputs[0]);
  if (n.outputs.size() < 2 || n.outputs[1] == ir::kNoValue) unsupported(n, "TopK without its indices output");
  const int indices = outVal(n, n.outputs[1]);
  LDesc& d = emit(n, LayerKind::kTopK, ins, values, {u32(axis), n.attrInt("largest", 1) ? 1u : 0u});
  d.more_outs = {indices};
}

/// NonZero: a nonzero layer writing a dynamic tensor — y at its capacity [rank(x), numel(x)] and the extent
/// [rank(x), n] (docs/package-format.md, "Dynamic tensors"), which transpose and gather_nd layers read.
void Lowerer::nonZero(const ir::Node& n) {
  const Shape& xs = shapeOf(n, 0);
  if (xs.empty() || xs.size() > package::kMaxRank) unsupported(n, "rank {} (1 to {})", xs.size(), package::kMaxRank);
  const ir::ValueId v = n.outputs[0];
  const int64_t capacity = shapeNumel(xs);
  const int x = typedIn(n, 0);
  if (vals_[static_cast<size_t>(x)].quant)
    unsupported(n, "its input holds int8 codes (a code of 0 is not a real 0 unless the zero point is 0); keep it float");
  const char space = is_output_.count(v) ? out_space_ : 'd';
  const int y = newVal(g_.value(v).name, {static_cast<int64_t>(xs.size()), capacity}, ElemType::kI64, space);
  of_[v] = y;
  const int e = newVal(g_.value(v).name + "/extent", {2}, ElemType::kI64, space);
  extent_of_[y] = e;
  LDesc& d = emit(n, LayerKind::kNonZero, {x}, y, {});
  d.more_outs = {e};
}

/// OneHot: a one_hot layer; a computed depth is read at run time and checked against the output's dim.
void Lowerer::oneHot(const ir::Node& n) {
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  if (ys.size() > package::kMaxRank) unsupported(n, "rank {} above {}", ys.size(), package::kMaxRank);
  int64_t axis = n.attrInt("axis", -1);
  if (!ops::normalizeAxis(axis, static_cast<int64_t>(ys.size()))) unsupported(n, "axis {} out of range", n.attrInt("axis", -1));
  std::vector<int> ins{typedIn(n, 0), in(n, 2)};  // indices and depth of any number type, as they are
  if (const Tensor* dt = constIn(n, 1)) {
    if (dt->numel() != 1 || static_cast<int64_t>(dt->toDouble()[0]) != ys[static_cast<size_t>(axis)]) unsupported(n, "depth does not match the output");
  } else {
    if (shapeNumel(shapeOf(n, 1)) != 1) unsupported(n, "depth must be one value");
    ins.push_back(typedIn(n, 1));
  }
  emit(n, LayerKind::kOneHot, ins, outVal(n, n.outputs[0]), {u32(axis)});
}

/// Compress: a compress layer; y's dim (declared, or known from a constant condition) is the count it keeps, which
/// the layer checks when it runs.
void Lowerer::compressNode(const ir::Node& n) {
  const Shape& xs = shapeOf(n, 0);
  int64_t axis = n.attrInt("axis", 0);
  if (n.hasAttr("axis") && !ops::normalizeAxis(axis, static_cast<int64_t>(xs.size()))) unsupported(n, "axis {} out of range", n.attrInt("axis", 0));
  if (g_.value(n.inputs[1]).type.dtype != DType::kBool) unsupported(n, "the condition must be bool");
  const int x = typedIn(n, 0), cond = typedIn(n, 1);
  emit(n, LayerKind::kCompress, {x, cond}, outVal(n, n.outputs[0]), {n.hasAttr("axis") ? u32(axis) : 0xFFFFFFFFu});
}

void Lowerer::gridSample(const ir::Node& n) {
  if (shapeOf(n, 0).size() != 4) unsupported(n, "a {}-D input (2-D sampling: [N, C, H, W])", shapeOf(n, 0).size());
  const std::string mode = n.attrString("mode", "bilinear"), pad = n.attrString("padding_mode", "zeros");
  kernels::GridSampleParams p;
  if (!kernels::gridSampleModes(mode, pad, p)) unsupported(n, "mode '{}' / padding_mode '{}'", mode, pad);
  emit(n, LayerKind::kGridSample, {in(n, 0), in(n, 1)}, outVal(n, n.outputs[0]),
       {static_cast<uint32_t>(p.mode), static_cast<uint32_t>(p.padding), n.attrInt("align_corners", 0) ? 1u : 0u});
}

void Lowerer::roiAlign(const ir::Node& n) {
  if (shapeOf(n, 0).size() != 4) unsupported(n, "a {}-D input ([N, C, H, W])", shapeOf(n, 0).size());
  if (g_.value(n.inputs[2]).type.dtype != DType::kI64) unsupported(n, "batch_indices must be int64");
  const int x = in(n, 0), rois = in(n, 1), batch = intIn(n, 2);
  emit(n, LayerKind::kRoiAlign, {x, rois, batch}, outVal(n, n.outputs[0]),
       {u32(n.attrInt("sampling_ratio", 0)), package::floatParam(n.attrFloat("spatial_scale", 1.0f)),
        n.attrString("coordinate_transformation_mode", "half_pixel") == "half_pixel" ? 1u : 0u,
        n.attrString("mode", "avg") == "max" ? 1u : 0u, 0u});
}

/// NonMaxSuppression: an nms layer writing y's declared rows (the selections, then rows of -1); the
/// optional inputs the model computes are read when it runs, constant ones are words.
void Lowerer::nms(const ir::Node& n) {
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  if (ys.size() != 2 || ys[1] != 3) unsupported(n, "output {} (the package needs its rows: declare the output's dims)", shapeStr(ys));
  std::vector<int> ins{in(n, 0), in(n, 1)};
  int64_t max_per_class = 0;
  float iou = 0.0f, score = 0.0f;
  uint32_t flags = 0;
  for (int i = 2; i < 5; ++i) {
    if (!n.hasInput(i)) continue;
    if (shapeNumel(shapeOf(n, i)) != 1) unsupported(n, "input {} must be one value", i);
    if (const Tensor* t = constIn(n, i)) {
      const double v = t->toDouble()[0];
      if (i == 2) max_per_class = t->toInt64()[0];
      else (i == 3 ? iou : score) = static_cast<float>(v);
      continue;
    }
    flags |= 1u << (i - 2);
    ins.push_back(i == 2 ? intIn(n, i) : in(n, i));
  }
  if (!(iou >= 0.0f && iou <= 1.0f)) unsupported(n, "iou_threshold {} is outside [0, 1]", iou);
  emit(n, LayerKind::kNonMaxSuppression, ins, outVal(n, n.outputs[0]),
       {n.attrInt("center_point_box", 0) ? 1u : 0u, u32(std::clamp<int64_t>(max_per_class, 0, INT32_MAX)),
        package::floatParam(iou), n.hasInput(4) ? 1u : 0u, package::floatParam(score), flags});
}

/// MaxUnpool: a max_unpool layer; its words are the shape MaxPool's indices count in (output_shape, a constant or
/// computed, fixes only y's dims).
void maxUnpool(Lowerer& L, const ir::Node& n) {
  const Shape& x = L.shapeOf(n, 0);
  const Shape& y = L.g_.value(n.outputs[0]).type.shape;
  std::vector<uint32_t> from;
  for (int64_t d : ops::maxUnpoolPooledShape(n, x, y)) from.push_back(u32(d));
  L.emit(n, LayerKind::kMaxUnpool, {L.in(n, 0), L.intIn(n, 1)}, L.outVal(n, n.outputs[0]), from);
}

/// ReverseSequence: a reverse_sequence layer moving x's elements as they are (any type).
void reverseSequence(Lowerer& L, const ir::Node& n) {
  if (L.g_.value(n.inputs[1]).type.dtype != DType::kI64) L.unsupported(n, "sequence_lens must be int64");
  L.emit(n, LayerKind::kReverseSequence, {L.typedIn(n, 0), L.intIn(n, 1)}, L.outVal(n, n.outputs[0]),
         {n.attrInt("time_axis", 0) == 0 ? 0u : 1u});
}

void registerIndexingLowerings(LowerTable& t) {
  takeTypedValues(t, {"OneHot", "RoiAlign", "NonMaxSuppression", "GatherElements", "ScatterElements", "Scatter",
                      "GatherND", "ScatterND", "TopK", "Compress", "MaxUnpool",
                      "ReverseSequence", "NonZero"});
  t[{"", "NonMaxSuppression"}] = &Lowerer::nms;
  t[{"", "MaxUnpool"}] = maxUnpool;
  t[{"", "ReverseSequence"}] = reverseSequence;
  t[{"", "GridSample"}] = &Lowerer::gridSample;
  t[{"", "RoiAlign"}] = &Lowerer::roiAlign;
  t[{"", "OneHot"}] = &Lowerer::oneHot;
  t[{"", "Compress"}] = &Lowerer::compressNode;
  t[{"", "GatherElements"}] = &Lowerer::gatherElements;
  t[{"", "ScatterElements"}] = &Lowerer::gatherElements;
  t[{"", "Scatter"}] = &Lowerer::gatherElements;
  t[{"", "GatherND"}] = &Lowerer::gatherNd;
  t[{"", "ScatterND"}] = &Lowerer::scatterNd;
  t[{"", "TopK"}] = &Lowerer::topK;
  t[{"", "NonZero"}] = &Lowerer::nonZero;
}

}  // namespace npuc::codegen::detail
