// Lowering of the tensor ops (mirrors engine/ops_tensor.cpp): reshapes (aliases), Concat, Transpose, Split,
// Slice, Pad, Gather, Expand / Tile, DepthToSpace / SpaceToDepth / Focus, Resize / Upsample.
#include "codegen/lowerer.hpp"

#include "kernels/layers.hpp"

#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace npuc::codegen::detail {

/// The reshape layer's words for view n of a dynamic tensor (kernels::reshapeDims): which of y's dims are x's, which
/// constants, which the rest — as the op says, not as the capacities happen to be.
std::vector<uint32_t> Lowerer::viewWords(const ir::Node& n) {
  const Shape& x = shapeOf(n, 0);
  const Shape& y = g_.value(n.outputs[0]).type.shape;
  const auto r = static_cast<int64_t>(x.size()), yr = static_cast<int64_t>(y.size());
  if (yr > package::kMaxRank) unsupported(n, "rank {} above {}", yr, package::kMaxRank);
  const auto fromX = [](int64_t j) { return kernels::kReshapeFromX | static_cast<uint32_t>(j); };
  const auto axesOf = [&](int64_t rank) {  // (Squeeze / Unsqueeze: an attribute before opset 13, then a constant input)
    std::vector<int64_t> a;
    if (g_.opset < 13) a = n.attrInts("axes");
    else if (n.hasInput(1)) {
      const Tensor* t = constIn(n, 1);
      if (!t) unsupported(n, "axes the model computes, on a tensor whose shape the data decide");
      a = t->toInt64();
    }
    for (int64_t& v : a) v = v < 0 ? v + rank : v;
    return std::set<int64_t>(a.begin(), a.end());
  };
  std::vector<uint32_t> w;
  if (n.op == "Unsqueeze") {
    const std::set<int64_t> axes = axesOf(yr);
    for (int64_t i = 0, j = 0; i < yr; ++i) w.push_back(axes.count(i) ? 1u : fromX(j++));
  } else if (n.op == "Squeeze") {
    std::set<int64_t> axes = axesOf(r);
    if (axes.empty()) unsupported(n, "Squeeze without axes of a tensor whose shape the data decide (which dims are 1 is data)");
    for (int64_t j = 0; j < r; ++j)
      if (!axes.count(j)) w.push_back(fromX(j));
  } else if (n.op == "Flatten") {
    int64_t a = n.attrInt("axis", 1);
    a = a < 0 ? a + r : a;
    // (each side one of x's dims, 1, or the rest: the rest at most once, so a side of several dims needs the other
    // side to be one dim or none)
    const uint32_t before = a == 0 ? 1u : a == 1 ? fromX(0) : kernels::kReshapeRest;
    const uint32_t after = a == r ? 1u : a == r - 1 ? fromX(r - 1) : kernels::kReshapeRest;
    if (before == kernels::kReshapeRest && after == kernels::kReshapeRest)
      unsupported(n, "Flatten at axis {} of a rank-{} tensor whose shape the data decide", a, r);
    w = {before, after};
  } else {  // Reshape of a constant shape (ONNX: 0 keeps x's dim unless allowzero, -1 the rest)
    const Tensor* t = n.hasInput(1) ? constIn(n, 1) : nullptr;
    if (!t) unsupported(n, "a shape the model computes, for a tensor whose shape the data decide");
    const bool allowzero = n.attrInt("allowzero", 0) != 0;
    for (int64_t v : t->toInt64()) {
      if (v == -1) w.push_back(kernels::kReshapeRest);
      else if (v == 0 && !allowzero) w.push_back(fromX(static_cast<int64_t>(w.size())));
      else if (v < 0 || v >= int64_t{kernels::kReshapeFromX}) unsupported(n, "shape value {}", v);
      else w.push_back(static_cast<uint32_t>(v));
    }
  }
  std::vector<int64_t> at_capacity;
  if (static_cast<int64_t>(w.size()) != yr || !kernels::reshapeDims(x, w, at_capacity) || at_capacity != y)
    unsupported(n, "its view of a tensor whose shape the data decide gives [{}] at capacity [{}], not [{}]",
                fmt::join(at_capacity, ", "), fmt::join(x, ", "), fmt::join(y, ", "));
  return w;
}

/// Same bytes, another shape: an alias of the input (no descriptor), or a copy where the result is a graph output
/// (outputs live in data_out). A change of storage type is a cast.
void Lowerer::copyLike(const ir::Node& n) {
  int x = in(n, 0);
  ir::ValueId outv = n.outputs[0];
  const ir::Value& ov = g_.value(outv);
  ElemType t = storageType(n, ov);
  if (t != vals_[static_cast<size_t>(x)].type) return castTo(n, x, t);
  if (readsBounded(n)) {  // a view of a dynamic tensor: its own dims, a reshape layer writing them
    std::vector<uint32_t> words = viewWords(n);
    words.resize(package::kMaxRank, 0u);
    emit(n, LayerKind::kReshape, {x}, outVal(n, outv), words);
    return;
  }
  if (is_output_.count(outv)) {
    emit(n, LayerKind::kCopy, {x}, outVal(n, outv));
    return;
  }
  int root = vals_[static_cast<size_t>(x)].alias >= 0 ? vals_[static_cast<size_t>(x)].alias : x;
  LVal a = vals_[static_cast<size_t>(root)];
  a.name = ov.name;
  a.shape = ov.type.shape;
  a.alias = root;
  a.writer = a.last_reader = -1;
  vals_.push_back(std::move(a));
  of_[outv] = static_cast<int>(vals_.size()) - 1;
  aliased_.push_back(n.name);
}

/// Gather: a gather layer (the engine's kernel); constant indices are checked against the axis here.
void Lowerer::gather(const ir::Node& n) {
  const Shape& xs = shapeOf(n, 0);
  const ir::Value& iv = g_.value(n.inputs[1]);
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = ops::attrInt(n, "axis");
  if (axis < -rank || axis >= rank) unsupported(n, "axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  if (xs.size() > package::kMaxRank || ys.size() > package::kMaxRank || iv.type.shape.size() > package::kMaxRank)
    unsupported(n, "rank above {}", package::kMaxRank);
  if (iv.isConstant()) {
    const int64_t len = xs[static_cast<size_t>(axis)];
    for (int64_t i : iv.constant->toInt64())
      if (i < -len || i >= len) unsupported(n, "index {} is out of range for axis {} of size {}", i, axis, len);
  }
  const int x = in(n, 0), idx = intIn(n, 1);
  emit(n, LayerKind::kGather, {x, idx}, outVal(n, n.outputs[0]), {u32(axis)});
}

int Lowerer::intIn(const ir::Node& n, int i) {
  const ir::Value& iv = g_.value(n.inputs[static_cast<size_t>(i)]);
  const DType t = iv.isConstant() ? iv.constant->dtype() : iv.type.dtype;
  if (t != DType::kI64 && t != DType::kI32)
    unsupported(n, "indices '{}' are {}; index layers take int32 / int64", iv.name, dtypeName(t));
  return typedIn(n, i);
}

/// Concat. A descriptor references at most 7 inputs; more become a chain: each concat appends up to 6 inputs to the
/// previous partial result (concatenation only copies, so the bytes are the same).
void Lowerer::concat(const ir::Node& n) {
  // (a part takes up to 7 inputs; 3 when it reads dynamic tensors: each input and the output then have an extent)
  const int k = n.numInputs(), per = readsBounded(n) ? package::kMaxRefs / 2 - 1 : package::kMaxRefs - 1;
  int64_t axis = n.attrInt("axis", 0);
  const Shape& s0 = shapeOf(n, 0);
  int64_t r = static_cast<int64_t>(s0.size());
  if (axis < 0) axis += r;
  std::vector<int> ins;
  for (int i = 0; i < k; ++i) ins.push_back(in(n, i));
  const int y = outVal(n, n.outputs[0]);
  const std::vector<uint32_t> p{static_cast<uint32_t>(axis)};
  int done = std::min(k, per), part = 0;
  std::vector<int> group(ins.begin(), ins.begin() + done);
  Shape acc = s0;
  acc[static_cast<size_t>(axis)] = 0;
  for (int i = 0; i < done; ++i) acc[static_cast<size_t>(axis)] += shapeOf(n, i)[static_cast<size_t>(axis)];
  while (done < k) {
    int t = tempVal(fmt::format("{}/part{}", g_.value(n.outputs[0]).name, ++part), acc);
    vals_[static_cast<size_t>(t)].type = vals_[static_cast<size_t>(y)].type;
    emit(n, LayerKind::kConcat, group, t, p).name = fmt::format("{}/part{}", n.name, part);
    group = {t};
    for (int end = std::min(k, done + per - 1); done < end; ++done) {
      group.push_back(ins[static_cast<size_t>(done)]);
      acc[static_cast<size_t>(axis)] += shapeOf(n, done)[static_cast<size_t>(axis)];
    }
  }
  emit(n, LayerKind::kConcat, group, y, p);
}

void Lowerer::depthSpace(const ir::Node& n) {
  const Shape& s = shapeOf(n, 0);
  int64_t b = n.attrInt("blocksize", 0);
  if (s.size() != 4 || b < 1) unsupported(n, "needs a 4-D input and a blocksize");
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  Shape view;
  std::vector<uint32_t> perm;
  if (n.op == "SpaceToDepth") {
    view = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
  } else if (n.attrString("mode", "DCR") == "DCR") {
    view = {N, b, b, C / (b * b), H, W};
    perm = {0, 3, 4, 1, 5, 2};
  } else {
    view = {N, C / (b * b), b, b, H, W};
    perm = {0, 1, 4, 2, 5, 3};
  }
  Shape out_view;
  for (uint32_t p : perm) out_view.push_back(view[p]);
  LDesc& d = emit(n, LayerKind::kTranspose, {in(n, 0)}, outVal(n, n.outputs[0]), perm);
  d.views = {view, out_view};
}

void Lowerer::focus(const ir::Node& n) {
  const Shape& s = shapeOf(n, 0);
  std::vector<int64_t> off = n.attrInts("offsets");
  // x viewed [N, C, H/2, dy, W/2, dx]; output blocks in the order of 'offsets' (pairs dy, dx).
  std::vector<uint32_t> perm;
  if (off == std::vector<int64_t>{0, 0, 1, 0, 0, 1, 1, 1}) perm = {0, 5, 3, 1, 2, 4};       // block = dx*2 + dy
  else if (off == std::vector<int64_t>{0, 0, 0, 1, 1, 0, 1, 1}) perm = {0, 3, 5, 1, 2, 4};  // block = dy*2 + dx
  else unsupported(n, "Focus with this sub-image order has no package form");
  Shape view = {s[0], s[1], s[2] / 2, 2, s[3] / 2, 2};
  Shape out_view;
  for (uint32_t p : perm) out_view.push_back(view[p]);
  LDesc& d = emit(n, LayerKind::kTranspose, {in(n, 0)}, outVal(n, n.outputs[0]), perm);
  d.views = {view, out_view};
}

void Lowerer::pad(const ir::Node& n) {
  std::string mode = n.attrString("mode", "constant");
  if (mode != "constant") unsupported(n, "Pad mode '{}' has no package form (constant)", mode);
  const Shape& s = shapeOf(n, 0);
  std::vector<int64_t> pads;
  float value = 0;
  if (g_.opset < 11) {
    pads = n.attrInts("pads");
    value = n.attrFloat("value", 0.0f);
  } else {
    const Tensor* p = constIn(n, 1);
    if (!p) unsupported(n, "pads must be a constant");
    pads = p->toInt64();
    if (n.hasInput(2)) {
      const Tensor* v = constIn(n, 2);
      if (!v) unsupported(n, "the pad value must be a constant");
      value = scalarOf(v, 0);
    }
    if (n.hasInput(3)) unsupported(n, "Pad with 'axes' has no package form");
  }
  size_t r = s.size();
  if (pads.size() != 2 * r) unsupported(n, "pads has {} values for rank {}", pads.size(), r);
  std::vector<uint32_t> p;
  for (auto v : pads) {
    if (v < 0) unsupported(n, "negative pads (cropping) have no package form");
    p.push_back(u32(v));
  }
  p.push_back(package::floatParam(value));
  emit(n, LayerKind::kPad, {in(n, 0)}, outVal(n, n.outputs[0]), p);
}

/// Split: each output a slice of the input along the axis, at the sum of the previous outputs' sizes (the sizes
/// are the outputs' own dims, as shape inference fixed them from `split` / num_outputs).
void Lowerer::split(const ir::Node& n) {
  const Shape& s = shapeOf(n, 0);
  const size_t r = s.size();
  if (r > package::kMaxRank) unsupported(n, "rank {} above {}", r, package::kMaxRank);
  int64_t axis = ops::attrInt(n, "axis");
  if (axis < -static_cast<int64_t>(r) || axis >= static_cast<int64_t>(r)) unsupported(n, "axis {} out of range", axis);
  if (axis < 0) axis += static_cast<int64_t>(r);
  int x = in(n, 0);
  int64_t offset = 0;
  const bool dynamic = readsBounded(n);  // (a dynamic tensor's parts: slices of the sizes translated for, the axis's
                                         // dim required to be the one they sum to)
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    ir::ValueId v = n.outputs[k];
    if (v == ir::kNoValue) unsupported(n, "output {} is missing", k);
    const Shape& ys = g_.value(v).type.shape;
    std::vector<uint32_t> p;
    for (size_t i = 0; i < r; ++i) p.push_back(u32(static_cast<int64_t>(i) == axis && ys[i] ? offset : 0));
    for (size_t i = 0; i < r; ++i) p.push_back(1u);
    offset += ys[static_cast<size_t>(axis)];
    if (!uses_.count(v) && !is_output_.count(v)) continue;  // nothing reads it
    if (dynamic) {
      std::vector<std::array<int64_t, 4>> dims(r, {0, std::numeric_limits<int64_t>::max(), 1, -1});
      dims[static_cast<size_t>(axis)] = {offset - ys[static_cast<size_t>(axis)], offset, 1, s[static_cast<size_t>(axis)]};
      dynamicSlice(n, v, dims, fmt::format("{}/{}", n.name, k));
      continue;
    }
    emit(n, LayerKind::kSlice, {x}, outVal(n, v), p).name = fmt::format("{}/{}", n.name, k);
  }
}

/// A slice layer of a dynamic tensor writing output `v`: its bounds [4, rank] (per dim: start, end, step — ONNX's,
/// resolved against x's dims when the layer runs — and the dim x must have then, -1 for any).
void Lowerer::dynamicSlice(const ir::Node& n, ir::ValueId v, const std::vector<std::array<int64_t, 4>>& dims, const std::string& name) {
  const auto r = static_cast<int64_t>(dims.size());
  Tensor b(DType::kI64, {4, r});
  for (int64_t row = 0; row < 4; ++row)
    for (int64_t i = 0; i < r; ++i) b.data<int64_t>()[row * r + i] = dims[static_cast<size_t>(i)][static_cast<size_t>(row)];
  emit(n, LayerKind::kSlice, {in(n, 0), rawWeightVal(name + "/bounds", b)}, outVal(n, v), std::vector<uint32_t>(2 * static_cast<size_t>(r), 0u)).name = name;
}

/// Slice of a dynamic tensor: a slice layer reading its bounds (the dims no axis names: all of them).
void Lowerer::sliceDynamic(const ir::Node& n, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                           std::vector<int64_t> axes, const std::vector<int64_t>& steps) {
  const auto r = static_cast<int64_t>(shapeOf(n, 0).size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (ends.size() != starts.size() || axes.size() != starts.size() || (!steps.empty() && steps.size() != starts.size()))
    unsupported(n, "starts, ends, axes and steps of different lengths");
  std::vector<std::array<int64_t, 4>> dims(static_cast<size_t>(r), {0, std::numeric_limits<int64_t>::max(), 1, -1});
  std::set<int64_t> seen;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
    if (a < 0 || a >= r || !seen.insert(a).second) unsupported(n, "axis {} is out of range or repeated", axes[k]);
    const int64_t step = steps.empty() ? 1 : steps[k];
    if (step == 0) unsupported(n, "a step of 0");
    dims[static_cast<size_t>(a)] = {starts[k], ends[k], step, -1};
  }
  dynamicSlice(n, n.outputs[0], dims, n.name);
}

/// Slice: constant starts / ends / axes / steps resolved here (kernels::resolveSlice, the engine's definition);
/// computed ones are the layer's inputs 1-4 (absent axes / steps as constants), resolved when it runs and checked
/// against the output's dims.
void Lowerer::slice(const ir::Node& n) {
  const Shape& s = shapeOf(n, 0);
  const size_t r = s.size();
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  std::vector<int64_t> starts, ends, axes, steps;
  bool computed = false;
  if (g_.opset < 10) {
    starts = n.attrInts("starts");
    ends = n.attrInts("ends");
    axes = n.attrInts("axes");
  } else {
    for (int i = 1; i < 5; ++i) computed |= n.hasInput(i) && !constIn(n, i);
    if (!computed) {
      starts = constIn(n, 1)->toInt64();
      ends = constIn(n, 2)->toInt64();
      if (n.hasInput(3)) axes = constIn(n, 3)->toInt64();
      if (n.hasInput(4)) steps = constIn(n, 4)->toInt64();
    }
  }
  if (readsBounded(n)) {  // a dynamic tensor's slice: the bounds of every dim, resolved when the layer runs
    if (computed || g_.opset < 10) unsupported(n, "bounds the model computes (or opset {}) on a tensor whose shape the data decide", g_.opset);
    return sliceDynamic(n, starts, ends, axes, steps);
  }
  if (computed) {
    const int64_t len = shapeNumel(shapeOf(n, 1));
    std::vector<int> ins{in(n, 0), intIn(n, 1), intIn(n, 2)};
    for (int i = 3; i < 5; ++i) {
      if (n.hasInput(i)) {
        ins.push_back(intIn(n, i));
        continue;
      }
      Tensor t(DType::kI64, {len});  // axes 0, 1, … / steps all 1
      for (int64_t k = 0; k < len; ++k) t.data<int64_t>()[k] = i == 3 ? k : 1;
      ins.push_back(rawWeightVal(fmt::format("{}/{}", n.name, i == 3 ? "axes" : "steps"), t));
    }
    std::vector<uint32_t> p(2 * r, 0);
    for (size_t i = 0; i < r; ++i) p[r + i] = 1;  // (resolved when the layer runs)
    emit(n, LayerKind::kSlice, ins, outVal(n, n.outputs[0]), p);
    return;
  }
  const kernels::SliceGeometry geo = kernels::resolveSlice(s, starts, ends, axes, steps);
  std::vector<uint32_t> p;
  for (size_t i = 0; i < r; ++i) p.push_back(u32(ys[i] ? geo.begin[i] : 0));
  for (size_t i = 0; i < r; ++i) p.push_back(u32(geo.step[i]));
  emit(n, LayerKind::kSlice, {in(n, 0)}, outVal(n, n.outputs[0]), p);
}

/// Resize / Upsample: the engine's parameters (kernels::ResizeSpec) from the attributes and the constant roi, scales
/// or sizes, stored in the parameter block; the runtime computes the same taps.
void Lowerer::resize(const ir::Node& n) {
  bool sizes_in = false, scales_in = false;
  const kernels::ResizeSpec p = resizeSpec(n, n.op == "Upsample", &sizes_in, &scales_in);
  std::vector<int> ins{in(n, 0)};
  if (sizes_in) ins.push_back(intIn(n, 3));
  if (scales_in) ins.push_back(in(n, 2));
  emit(n, LayerKind::kResize, ins, outVal(n, n.outputs[0]), package::resizeParams(p));
}

kernels::ResizeSpec Lowerer::resizeSpec(const ir::Node& n, bool upsample, bool* sizes_computed, bool* scales_computed) {
  const Shape& x = shapeOf(n, 0);
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (x.size() > package::kMaxRank) unsupported(n, "rank {} above {}", x.size(), package::kMaxRank);
  kernels::ResizeSpec p;
  std::string mode = n.attrString("mode", "nearest");
  if (mode == "nearest") p.interp = kernels::ResizeInterp::kNearest;
  else if (mode == "linear" || (upsample && mode == "bilinear")) p.interp = kernels::ResizeInterp::kLinear;
  else if (mode == "cubic" && !upsample && g_.opset >= 11) p.interp = kernels::ResizeInterp::kCubic;
  else unsupported(n, "resize mode '{}' has no package form", mode);
  auto constant = [&](int i, const char* what) {
    const Tensor* t = constIn(n, i);
    if (!t) unsupported(n, "the {} must be a constant to have a package form", what);
    return t;
  };
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  bool sizes_in = false, scales_in = false;
  if (upsample || g_.opset < 11) {
    p.legacy = true;
    if (upsample && n.hasAttr("scales")) {
      for (float f : n.attrFloats("scales")) scales.push_back(f);
    } else {
      scales = constant(1, "scales")->toDouble();
    }
  } else {
    std::string cm = n.attrString("coordinate_transformation_mode", "half_pixel");
    std::string nm = n.attrString("nearest_mode", "round_prefer_floor");
    if (!kernels::resizeCoordFromName(cm, &p.coord)) unsupported(n, "coordinate_transformation_mode '{}' has no package form", cm);
    if (!kernels::resizeNearestFromName(nm, &p.nearest)) unsupported(n, "nearest_mode '{}' has no package form", nm);
    p.cubic_a = n.attrFloat("cubic_coeff_a", -0.75f);
    p.exclude_outside = n.attrInt("exclude_outside", 0) != 0;
    p.extrapolation = n.attrFloat("extrapolation_value", 0.0f);
    if (n.attrInt("antialias", 0) != 0) unsupported(n, "antialias has no package form");
    if (n.hasInput(3)) {
      if (const Tensor* t = constIn(n, 3)) {
        sizes = t->toInt64();
      } else {  // computed: the output's (declared) dims; the layer checks the values when it runs
        if (!n.attrInts("axes").empty() || n.attrString("keep_aspect_ratio_policy", "stretch") != "stretch")
          unsupported(n, "computed sizes with axes or a keep_aspect_ratio_policy have no package form");
        sizes = ys, sizes_in = true;
      }
    }
    if (sizes.empty() && n.hasInput(2)) {
      if (const Tensor* t = constIn(n, 2)) {
        scales = t->toDouble();
      } else {  // computed: read by the layer when it runs (they place the samples), checked against the output's dims
        if (!n.attrInts("axes").empty()) unsupported(n, "computed scales with axes have no package form");
        for (size_t a = 0; a < x.size(); ++a) scales.push_back(x[a] ? static_cast<double>(ys[a]) / static_cast<double>(x[a]) : 1.0);
        scales_in = true;
      }
    }
    if (n.hasInput(1)) roi = constant(1, "roi")->toDouble();
  }
  std::vector<int64_t> axes = n.attrInts("axes");
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) unsupported(n, "axis {} out of range", a);
    if (a < 0) a += rank;
  }
  if ((!sizes.empty() && sizes.size() != axes.size()) || (sizes.empty() && scales.size() != axes.size()) ||
      (!roi.empty() && roi.size() != 2 * axes.size()))
    unsupported(n, "scales / sizes / roi do not match the axes");
  p.scale.assign(x.size(), 1.0);
  p.roi_start.assign(x.size(), 0.0);
  p.roi_end.assign(x.size(), 1.0);
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = static_cast<size_t>(axes[i]);
    int64_t in = x[a];
    if (!sizes.empty()) p.scale[a] = in == 0 || sizes[i] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(in);
    else p.scale[a] = scales[i];
    if (!(p.scale[a] > 0) || !std::isfinite(p.scale[a])) unsupported(n, "scale {} has no package form", p.scale[a]);
    if (!roi.empty()) {
      p.roi_start[a] = roi[i];
      p.roi_end[a] = roi[i + axes.size()];
    }
  }
  if (ys.size() != x.size()) unsupported(n, "output rank differs from the input rank");
  *sizes_computed = sizes_in;
  *scales_computed = scales_in;
  return p;
}

void Lowerer::transposeNode(const ir::Node& n) {
  const Shape& s = shapeOf(n, 0);
  std::vector<int64_t> perm = n.attrInts("perm");
  if (perm.empty())
    for (size_t i = 0; i < s.size(); ++i) perm.push_back(static_cast<int64_t>(s.size() - 1 - i));
  if (s.size() > package::kMaxRank) unsupported(n, "rank {} above {}", s.size(), package::kMaxRank);
  // A permutation that only moves size-1 dims keeps the bytes in order: a reshape (not for a dynamic tensor: its
  // layer computes the extent it writes).
  std::vector<int64_t> moved;
  for (int64_t a : perm)
    if (s[static_cast<size_t>(a)] != 1) moved.push_back(a);
  if (std::is_sorted(moved.begin(), moved.end()) && !g_.value(n.inputs[0]).bounded) return copyLike(n);
  std::vector<uint32_t> p;
  for (auto v : perm) p.push_back(static_cast<uint32_t>(v));
  emit(n, LayerKind::kTranspose, {in(n, 0)}, outVal(n, n.outputs[0]), p);
}

/// Trilu: one trilu layer, k (a constant) saturated to int32.
void Lowerer::triluNode(const ir::Node& n) {
  if (shapeOf(n, 0).size() < 2 || shapeOf(n, 0).size() > package::kMaxRank) unsupported(n, "rank {} has no package form", shapeOf(n, 0).size());
  int64_t k = 0;
  std::vector<int> ins{in(n, 0)};
  if (n.hasInput(1)) {
    const Tensor* kt = constIn(n, 1);
    if (kt && kt->numel() == 1) {
      k = std::clamp<int64_t>(kt->toInt64()[0], -std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::max());
    } else {  // computed (or a model input): read by the layer at run time
      if (shapeNumel(shapeOf(n, 1)) != 1 || g_.value(n.inputs[1]).type.dtype != DType::kI64) unsupported(n, "k must be one int64");
      ins.push_back(intIn(n, 1));
    }
  }
  emit(n, LayerKind::kTrilu, ins, outVal(n, n.outputs[0]), {n.attrInt("upper", 1) ? 1u : 0u, u32(k)});
}

/// Range: a range layer; start, limit and delta read at run time (the count fixed by the output's shape).
void Lowerer::rangeNode(const ir::Node& n) {
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  if (ys.size() != 1) unsupported(n, "an output of rank {}", ys.size());
  std::vector<int> ins;
  for (int i = 0; i < 3; ++i) ins.push_back(in(n, i));
  emit(n, LayerKind::kRange, ins, outVal(n, n.outputs[0]));
}

/// Expand and Tile: one repetition layer, x viewed at the output's rank (Expand broadcasts from the right).
void Lowerer::tileNode(const ir::Node& n) {
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  Shape xs = shapeOf(n, 0);
  if (ys.size() > package::kMaxRank) unsupported(n, "rank {} above {}", ys.size(), package::kMaxRank);
  if (xs.size() > ys.size()) unsupported(n, "{} does not expand to {}", shapeStr(xs), shapeStr(ys));
  xs.insert(xs.begin(), ys.size() - xs.size(), 1);
  if (xs == ys) return copyLike(n);
  LDesc& d = emit(n, LayerKind::kTile, {in(n, 0)}, outVal(n, n.outputs[0]));
  d.views = {xs, ys};
}

/// ConstantOfShape of a shape the model computes (a constant shape folds at import): the value, a weight viewed at
/// y's rank, tiled to y (declared by the model); the layer checks the shape when it runs.
void Lowerer::constantOfShape(const ir::Node& n) {
  const ir::Value& yv = g_.value(n.outputs[0]);
  const Shape& ys = yv.type.shape;
  if (ys.size() > package::kMaxRank) unsupported(n, "rank {} above {}", ys.size(), package::kMaxRank);
  Tensor v(DType::kF32, {1});
  v.data<float>()[0] = 0.0f;
  if (const Tensor* a = n.attrTensor("value")) {
    if (a->numel() != 1) unsupported(n, "'value' holds {} elements, not one", a->numel());
    v = a->reshaped({1});
  }
  const std::string name = n.name + "/value";
  const int value = isTypedValue(yv) ? rawWeightVal(name, v) : weightVal(name, {1}, floatBytes(v, false), ft_);
  LDesc& d = emit(n, LayerKind::kTile, {value, intIn(n, 0)}, outVal(n, n.outputs[0]));
  d.views = {Shape(ys.size(), 1), shapeOf(n, 0), ys};
}

void registerTensorLowerings(LowerTable& t) {
  takeTypedValues(t, {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Transpose", "Split", "Slice",
                      "Gather", "Expand", "Tile", "SpaceToDepth", "DepthToSpace", "Trilu", "Range", "Resize",
                      "ConstantOfShape", "Shape"});
  t[{"", "Shape"}] = shapeOfDynamic;
  t[{"", "ConstantOfShape"}] = &Lowerer::constantOfShape;
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) t[{"", op}] = &Lowerer::copyLike;
  t[{"", "Concat"}] = &Lowerer::concat;
  t[{"", "Transpose"}] = &Lowerer::transposeNode;
  t[{"", "Split"}] = &Lowerer::split;
  t[{"", "Slice"}] = &Lowerer::slice;
  t[{"", "Pad"}] = &Lowerer::pad;
  t[{"", "Gather"}] = &Lowerer::gather;
  t[{"", "Expand"}] = &Lowerer::tileNode;
  t[{"", "Tile"}] = &Lowerer::tileNode;
  t[{"", "Range"}] = &Lowerer::rangeNode;
  t[{"", "Trilu"}] = &Lowerer::triluNode;
  t[{"", "SpaceToDepth"}] = &Lowerer::depthSpace;
  t[{"", "DepthToSpace"}] = &Lowerer::depthSpace;
  t[{"ai.npuc", "Focus"}] = &Lowerer::focus;
  t[{"", "Resize"}] = &Lowerer::resize;
  t[{"", "Upsample"}] = &Lowerer::resize;
}

}  // namespace npuc::codegen::detail

namespace npuc::codegen {

bool isViewOp(const ir::Node& n) {
  return n.domain.empty() && (n.op == "Reshape" || n.op == "Flatten" || n.op == "Squeeze" || n.op == "Unsqueeze" || n.op == "Identity");
}

}  // namespace npuc::codegen
