// Operators on shapes and axes: concatenation, reshaping, padding, reductions, slicing, splitting, transposing and
// gathering. Those whose axes can be mapped (concatenation, padding, mean, slice, split) read a channels-first
// operand as it is, their axes mapped; the others (reshape, squeeze, strided slice, gather) need the framework's
// element order. TRANSPOSE folds the conversion into its own permutation.
#include "frontend/tflite/importer.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <numeric>

namespace npuc::tflite_io {

namespace {

/// A framework axis (NHWC) of a rank-4 tensor as its channels-first axis.
int64_t cfAxis(int64_t a) { return kToChannelsLast[static_cast<size_t>(a)]; }

int64_t normAxis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) fail(ErrorCode::kInvalidInput, "{} {} is out of range for {} axes", what, axis, rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

void Importer::concatenation() {
  expectInputs(1, INT32_MAX);
  expectOutputs(1);
  const auto* o = options<fb::ConcatenationOptions>();
  bool any_cf = false, all4 = true;
  for (size_t i = 0; i < op_.inputs.size(); ++i) {
    const int32_t t = input(static_cast<int>(i));
    any_cf = any_cf || activationCf(t);
    if ((isConstant(t) ? declaredShape(t) : shapeOf(get(t, isChannelsFirst(t)))).size() != 4) all4 = false;
  }
  const bool cf = any_cf && all4;
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < op_.inputs.size(); ++i) ins.push_back(get(input(static_cast<int>(i)), cf));
  const int64_t rank = static_cast<int64_t>(shapeOf(ins[0]).size());
  int64_t axis = normAxis(o ? o->axis() : 0, rank, "axis");
  if (cf) axis = cfAxis(axis);
  ir::ValueId y = apply("Concat", ins, {{"axis", axis}});
  bindOutput(0, activation(y, o ? o->fused_activation_function() : fb::ActivationFunctionType_NONE), cf);
}

void Importer::reshapeOp() {
  expectInputs(1, 2);
  expectOutputs(1);
  std::vector<int64_t> want;
  if (hasInput(1) && (!isConstant(input(1)) || product(declaredShape(input(1))) > 0)) {
    want = constInput(1, "shape");
  } else if (const auto* o = options<fb::ReshapeOptions>(); o && o->new_shape()) {
    want.assign(o->new_shape()->begin(), o->new_shape()->end());
  } else {
    want = declaredShape(output(0));
  }
  ir::ValueId x = get(input(0), false);
  const int64_t total = product(shapeOf(x));
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == -1 && infer < 0) {
      infer = static_cast<int64_t>(i);
    } else if (want[i] <= 0 || want[i] > kMaxDim) {
      fail(ErrorCode::kInvalidInput, "new shape {}: dimension {} is not a size (one -1 may be inferred)", shapeStr(want), want[i]);
    } else {
      known *= want[i];
      if (known > kMaxElements) fail(ErrorCode::kInvalidInput, "new shape {} is too large", shapeStr(want));
    }
  }
  if (infer >= 0) {
    if (total % known != 0) fail(ErrorCode::kInvalidInput, "no size for the -1 in {} makes {} elements", shapeStr(want), total);
    want[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    fail(ErrorCode::kInvalidInput, "new shape {} holds {} elements; the input has {}", shapeStr(want), known, total);
  }
  bindOutput(0, apply("Reshape", {x, ints(fmt::format("op{}/shape", op_.index), want)}), false);
}

void Importer::squeeze() {
  expectInputs(1, 1);
  expectOutputs(1);
  const auto* o = options<fb::SqueezeOptions>();
  ir::ValueId x = get(input(0), false);
  const Shape xs = shapeOf(x);
  const int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<bool> drop(xs.size(), false);
  if (o && o->squeeze_dims() && o->squeeze_dims()->size() > 0) {
    for (int32_t d : *o->squeeze_dims()) {
      const int64_t a = normAxis(d, rank, "squeeze_dims entry");
      if (xs[static_cast<size_t>(a)] != 1) fail(ErrorCode::kInvalidInput, "axis {} has size {}; only size-1 axes are squeezed", a, xs[static_cast<size_t>(a)]);
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t i = 0; i < xs.size(); ++i) drop[i] = xs[i] == 1;
  }
  Shape out;
  for (size_t i = 0; i < xs.size(); ++i)
    if (!drop[i]) out.push_back(xs[i]);
  bindOutput(0, apply("Reshape", {x, ints(fmt::format("op{}/shape", op_.index), out)}), false);
}

void Importer::pad() {
  const bool v2 = op_.code == fb::BuiltinOperator_PADV2;
  expectInputs(2, v2 ? 3 : 2);
  expectOutputs(1);
  const int32_t t = input(0);
  const bool cf = activationCf(t);
  ir::ValueId x = get(t, cf);
  const size_t rank = shapeOf(x).size();
  const std::vector<int64_t> p = constInput(1, "paddings");
  if (p.size() != 2 * rank) fail(ErrorCode::kInvalidInput, "{} paddings for {} axes ([rank, 2] expected)", p.size(), rank);
  std::vector<int64_t> pads(2 * rank);
  for (size_t i = 0; i < rank; ++i) {
    const size_t fw = cf ? static_cast<size_t>(kToChannelsFirst[i]) : i;
    pads[i] = p[2 * fw];
    pads[rank + i] = p[2 * fw + 1];
    if (pads[i] < 0 || pads[rank + i] < 0 || pads[i] > kMaxDim || pads[rank + i] > kMaxDim)
      fail(ErrorCode::kInvalidInput, "padding {} / {} of axis {} is not a size", pads[i], pads[rank + i], fw);
  }
  float value = 0.0f;
  if (v2 && hasInput(2)) {
    const int32_t c = input(2);
    Tensor cv = constantData(c);
    if (cv.numel() != 1) fail(ErrorCode::kInvalidInput, "constant_values holds {} values; one is expected", cv.numel());
    value = static_cast<float>(cv.toDouble()[0]);
    if (auto q = quantOf(c))
      value = q->scale[0] * static_cast<float>(static_cast<int64_t>(value) - (q->from_uint8 ? 128 : 0) - q->zero_point[0]);
  }
  bindOutput(0, apply("Pad", {x, ints(fmt::format("op{}/pads", op_.index), pads), scalarF("value", value)},
                      {{"mode", std::string("constant")}}), cf);
}

void Importer::mean() {
  expectInputs(2, 2);
  expectOutputs(1);
  const auto* o = options<fb::ReducerOptions>();
  const bool keep = o && o->keep_dims();
  const int32_t t = input(0);
  bool cf = activationCf(t);
  const std::vector<int64_t> raw = constInput(1, "axis");
  const int64_t rank = static_cast<int64_t>(shapeOf(get(t, cf)).size());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : raw) reduced[static_cast<size_t>(normAxis(a, rank, "axis"))] = true;
  if (cf && !keep) {
    // The kept axes stay in channels-first order: that is the framework's order only when they do not move.
    int64_t last = -1;
    for (int64_t i = 0; i < 4; ++i) {
      const int64_t fw = kToChannelsFirst[static_cast<size_t>(i)];
      if (reduced[static_cast<size_t>(fw)]) continue;
      if (fw < last) cf = false;
      last = fw;
    }
  }
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < rank; ++a)
    if (reduced[static_cast<size_t>(a)]) axes.push_back(cf ? cfAxis(a) : a);
  std::sort(axes.begin(), axes.end());
  if (cf && axes == std::vector<int64_t>{2, 3}) {
    // The mean over height and width: a global average pool (what the package computes for it; the same bits).
    ir::ValueId y = apply("GlobalAveragePool", {get(t, true)});
    if (keep) return bindOutput(0, y, true);
    const Shape s = shapeOf(y);
    return bindOutput(0, reshape(y, {s[0], s[1]}), false);
  }
  ir::ValueId y = apply("ReduceMean", {get(t, cf)}, {{"axes", axes}, {"keepdims", int64_t{keep}}});
  bindOutput(0, y, cf && keep);
}

void Importer::slice() {
  expectInputs(3, 3);
  expectOutputs(1);
  const int32_t t = input(0);
  const bool cf = activationCf(t);
  ir::ValueId x = get(t, cf);
  const Shape xs = shapeOf(x);
  const std::vector<int64_t> begin = constInput(1, "begin"), size = constInput(2, "size");
  if (begin.size() != xs.size() || size.size() != xs.size())
    fail(ErrorCode::kInvalidInput, "begin {} and size {} for an input of {} axes", shapeStr(begin), shapeStr(size), xs.size());
  std::vector<int64_t> starts, ends, axes;
  for (size_t i = 0; i < xs.size(); ++i) {
    const size_t fw = cf ? static_cast<size_t>(kToChannelsFirst[i]) : i;
    const int64_t dim = xs[i], b = begin[fw], s = size[fw] == -1 ? dim - b : size[fw];
    if (b < 0 || b > dim || s < 0 || b + s > dim)
      fail(ErrorCode::kInvalidInput, "axis {}: begin {} and size {} leave the axis of size {}", fw, b, size[fw], dim);
    starts.push_back(b);
    ends.push_back(b + s);
    axes.push_back(static_cast<int64_t>(i));
  }
  const std::string p = fmt::format("op{}/", op_.index);
  bindOutput(0, apply("Slice", {x, ints(p + "starts", starts), ints(p + "ends", ends), ints(p + "axes", axes)}), cf);
}

void Importer::depthToSpace() {
  expectInputs(1, 1);
  expectOutputs(1);
  const bool d2s = op_.code == fb::BuiltinOperator_DEPTH_TO_SPACE;
  int64_t b = 0;
  if (d2s) {
    if (const auto* o = options<fb::DepthToSpaceOptions>()) b = o->block_size();
  } else if (const auto* o = options<fb::SpaceToDepthOptions>()) {
    b = o->block_size();
  }
  if (b < 2 || b > 64) fail(ErrorCode::kInvalidInput, "block_size is {}; it is 2 to 64", b);
  ir::ValueId x = get(input(0), true);
  const Shape xs = shapeOf(x);
  if (xs.size() != 4 || (d2s ? xs[1] % (b * b) != 0 : xs[2] % b != 0 || xs[3] % b != 0))
    fail(ErrorCode::kInvalidInput, "input {} does not divide into blocks of {}", shapeStr(permuted(xs, kToChannelsLast)), b);
  // TFLite's order within a block (row, column, channel) is ONNX's DCR.
  std::map<std::string, ir::Attr> attrs = {{"blocksize", b}};
  if (d2s) attrs["mode"] = std::string("DCR");
  bindOutput(0, apply(d2s ? "DepthToSpace" : "SpaceToDepth", {x}, attrs), true);
}

void Importer::split() {
  const bool v = op_.code == fb::BuiltinOperator_SPLIT_V;
  expectInputs(v ? 3 : 2, v ? 3 : 2);
  const int32_t t = input(v ? 0 : 1);
  const std::vector<int64_t> axis_v = constInput(v ? 2 : 0, "axis");
  const bool cf = activationCf(t);
  ir::ValueId x = get(t, cf);
  const Shape xs = shapeOf(x);
  if (axis_v.size() != 1) fail(ErrorCode::kInvalidInput, "axis holds {} values; one is expected", axis_v.size());
  int64_t axis = normAxis(axis_v[0], static_cast<int64_t>(xs.size()), "axis");
  if (cf) axis = cfAxis(axis);
  const int64_t dim = xs[static_cast<size_t>(axis)];
  const int n = static_cast<int>(op_.outputs.size());
  std::vector<int64_t> sizes;
  if (v) {
    sizes = constInput(1, "size_splits");
    int64_t known = 0, infer = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1 && infer < 0) infer = static_cast<int64_t>(i);
      else if (sizes[i] < 0 || sizes[i] > dim) fail(ErrorCode::kInvalidInput, "size_splits {} does not split an axis of {}", shapeStr(sizes), dim);
      else known += sizes[i];
    }
    if (infer >= 0 && known <= dim) sizes[static_cast<size_t>(infer)] = dim - known;
    if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != dim)
      fail(ErrorCode::kInvalidInput, "size_splits {} does not add up to the axis' {}", shapeStr(sizes), dim);
  } else {
    const auto* o = options<fb::SplitOptions>();
    const int64_t parts = o ? o->num_splits() : n;
    if (parts <= 0 || parts > dim || dim % parts != 0) fail(ErrorCode::kInvalidInput, "num_splits {} does not divide the axis of {}", parts, dim);
    sizes.assign(static_cast<size_t>(parts), dim / parts);
  }
  if (static_cast<int>(sizes.size()) != n)
    fail(ErrorCode::kInvalidInput, "{} parts but {} outputs", sizes.size(), n);
  std::vector<ir::ValueId> outs;
  for (int i = 0; i < n; ++i) outs.push_back(temp("part"));
  node("Split", {x, ints(fmt::format("op{}/split", op_.index), sizes)}, outs, {{"axis", axis}});
  for (int i = 0; i < n; ++i) bindOutput(i, outs[static_cast<size_t>(i)], cf);
}

void Importer::transpose() {
  expectInputs(2, 2);
  expectOutputs(1);
  const int32_t t = input(0);
  const bool cf = activationCf(t);
  ir::ValueId x = get(t, cf);
  const size_t rank = shapeOf(x).size();
  std::vector<int64_t> perm = constInput(1, "perm");
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank) fail(ErrorCode::kInvalidInput, "perm {} for {} axes", shapeStr(perm), rank);
  for (int64_t& p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)])
      fail(ErrorCode::kInvalidInput, "perm {} is not a permutation of {} axes", shapeStr(constInput(1, "perm")), rank);
    seen[static_cast<size_t>(p)] = true;
    if (cf) p = cfAxis(p);  // the framework's axis p is this axis of the channels-first value
  }
  bindOutput(0, apply("Transpose", {x}, {{"perm", perm}}), false);
}

void Importer::gather() {
  expectInputs(2, 2);
  expectOutputs(1);
  const auto* o = options<fb::GatherOptions>();
  if (o && o->batch_dims() != 0) fail(ErrorCode::kUnsupported, "batch_dims {} is not imported (0 is)", o->batch_dims());
  ir::ValueId x = get(input(0), false);
  const Shape xs = shapeOf(x);
  const int64_t axis = normAxis(o ? o->axis() : 0, static_cast<int64_t>(xs.size()), "axis");
  const int32_t it = input(1);
  if (!isConstant(it)) fail(ErrorCode::kUnsupported, "the indices (input 1) are computed; npuc imports constant ones");
  std::vector<int64_t> idx = constantInts(it);
  for (int64_t i : idx)
    if (i < 0 || i >= xs[static_cast<size_t>(axis)])
      fail(ErrorCode::kInvalidInput, "index {} is out of range for axis {} of size {}", i, axis, xs[static_cast<size_t>(axis)]);
  ir::ValueId ind = constant(fmt::format("op{}/indices", op_.index), Tensor::fromVector<int64_t>(declaredShape(it), idx));
  bindOutput(0, apply("Gather", {x, ind}, {{"axis", axis}}), false);
}

}  // namespace npuc::tflite_io
