// Schemas of data-movement ops: Reshape, Flatten, Squeeze/Unsqueeze, Transpose, Concat, Split, Slice, Gather,
// Expand, Tile, Pad, Shape, Size, Constant, ConstantOfShape, Range, DepthToSpace/SpaceToDepth, TopK, Resize,
// Upsample.
#include "kernels/layers.hpp"
#include "kernels/typed.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

namespace npuc::ops {

namespace {

int64_t axisOf(InferContext& c, int64_t axis, int64_t rank) {
  if (!normalizeAxis(axis, rank)) c.error("axis {} is out of range for rank {}", axis, rank);
  return axis;
}

/// Axes from the attribute (older opsets) or input `idx` (newer); empty when absent.
std::vector<int64_t> axesFrom(InferContext& c, int idx) {
  if (c.node().hasAttr("axes")) return c.node().attrInts("axes");
  if (c.hasInput(idx)) return c.inputInts(idx);
  return {};
}

}  // namespace

Shape registry_detail::concatShape(InferContext& c) {
  Shape out = c.inputShape(0);
  int64_t axis = axisOf(c, c.node().attrInt("axis", 0), static_cast<int64_t>(out.size()));
  out[static_cast<size_t>(axis)] = 0;
  for (int i = 0; i < c.numInputs(); ++i) {
    const Shape& s = c.inputShape(i);
    if (s.size() != out.size()) c.error("input {} has rank {}, input 0 has rank {}", i, s.size(), out.size());
    for (size_t d = 0; d < s.size(); ++d) {
      if (static_cast<int64_t>(d) == axis) continue;
      if (s[d] != out[d]) c.error("input {} has shape {}, which differs from input 0 outside axis {}", i, shapeStr(s), axis);
    }
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  return out;
}

Shape reshapeTarget(InferContext& c, const Shape& in, std::vector<int64_t> spec, bool allowzero) {
  int64_t known = 1, infer_at = -1;
  Shape out(spec.size());
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) c.error("shape entry {} is 0 (copy) but the input has rank {}", i, in.size());
      d = in[i];
    }
    if (d == -1) {
      if (infer_at >= 0) c.error("shape {} has more than one -1", fmt::join(spec, ","));
      infer_at = static_cast<int64_t>(i);
      out[i] = 1;
      continue;
    }
    if (d < -1) c.error("shape entry {} is {}", i, d);
    out[i] = d;
    known *= d;
  }
  int64_t n = shapeNumel(in);
  if (infer_at >= 0) {
    if (known == 0 || n % known) c.error("cannot reshape {} into {}", shapeStr(in), fmt::join(spec, ","));
    out[static_cast<size_t>(infer_at)] = n / known;
  } else if (known != n) {
    c.error("cannot reshape {} ({} elements) into {} ({} elements)", shapeStr(in), n, shapeStr(out), known);
  }
  return out;
}

void registerTensorOps(Registry& r) {
  r.add(makeSchema("Reshape", 2, 2, "change shape (0 copies a dim, -1 infers one)", [](InferContext& c) {
    c.setOutput(0, c.inputDType(0),
                reshapeTarget(c, c.inputShape(0), c.inputInts(1), c.node().attrInt("allowzero", 0) != 0));
  }));
  r.add(makeSchema("Flatten", 1, 1, "reshape to 2-D at 'axis'", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    int64_t rank = static_cast<int64_t>(in.size());
    int64_t axis = c.node().attrInt("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) c.error("axis {} is out of range for rank {}", c.node().attrInt("axis", 1), rank);
    int64_t a = 1, b = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? a : b) *= in[static_cast<size_t>(i)];
    c.setOutput(0, c.inputDType(0), {a, b});
  }));
  r.add(makeSchema("Squeeze", 1, 2, "remove size-1 dims", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    auto axes = axesFrom(c, 1);
    int64_t rank = static_cast<int64_t>(in.size());
    std::vector<bool> drop(in.size(), false);
    if (axes.empty()) {
      for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
    } else {
      for (int64_t a : axes) {
        a = axisOf(c, a, rank);
        if (in[static_cast<size_t>(a)] != 1) c.error("cannot squeeze axis {} of size {}", a, in[static_cast<size_t>(a)]);
        drop[static_cast<size_t>(a)] = true;
      }
    }
    Shape out;
    for (size_t i = 0; i < in.size(); ++i)
      if (!drop[i]) out.push_back(in[i]);
    c.setOutput(0, c.inputDType(0), out);
  }));
  r.add(makeSchema("Unsqueeze", 1, 2, "insert size-1 dims", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    auto axes = axesFrom(c, 1);
    int64_t rank = static_cast<int64_t>(in.size() + axes.size());
    std::vector<bool> ins(static_cast<size_t>(rank), false);
    for (int64_t a : axes) {
      a = axisOf(c, a, rank);
      if (ins[static_cast<size_t>(a)]) c.error("axis {} is repeated", a);
      ins[static_cast<size_t>(a)] = true;
    }
    Shape out;
    size_t j = 0;
    for (int64_t i = 0; i < rank; ++i) out.push_back(ins[static_cast<size_t>(i)] ? 1 : in[j++]);
    c.setOutput(0, c.inputDType(0), out);
  }));
  r.add(makeSchema("Transpose", 1, 1, "permute dims ('perm', default reverse)", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    auto perm = c.node().attrInts("perm");
    if (perm.empty())
      for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) perm.push_back(i);
    if (perm.size() != in.size()) c.error("perm has {} entries for an input of rank {}", perm.size(), in.size());
    Shape out;
    std::vector<bool> seen(in.size(), false);
    for (int64_t p : perm) {
      p = axisOf(c, p, static_cast<int64_t>(in.size()));
      if (seen[static_cast<size_t>(p)]) c.error("perm repeats axis {}", p);
      seen[static_cast<size_t>(p)] = true;
      out.push_back(in[static_cast<size_t>(p)]);
    }
    c.setOutput(0, c.inputDType(0), out);
  }));
  r.add(makeSchema("Concat", 1, -1, "join along 'axis'", [](InferContext& c) {
    for (int i = 0; i < c.numInputs(); ++i)
      if (c.inputDType(i) != c.inputDType(0)) c.error("input {} is {}, input 0 is {}", i, dtypeName(c.inputDType(i)), dtypeName(c.inputDType(0)));
    c.setOutput(0, c.inputDType(0), registry_detail::concatShape(c));
  }));
  {
    OpSchema s = makeSchema("Split", 1, 2, "split along 'axis' into parts ('split' sizes or equal)", [](InferContext& c) {
      const Shape& in = c.inputShape(0);
      int64_t axis = axisOf(c, attrInt(c.node(), "axis"), static_cast<int64_t>(in.size()));
      std::vector<int64_t> split = c.node().attrInts("split");
      if (split.empty() && c.hasInput(1)) split = c.inputInts(1);
      int64_t n = static_cast<int64_t>(c.outputs().size());
      int64_t dim = in[static_cast<size_t>(axis)];
      if (split.empty()) {
        int64_t parts = c.node().attrInt("num_outputs", n);
        int64_t each = (dim + parts - 1) / parts;
        for (int64_t i = 0; i < parts; ++i) split.push_back(std::min(each, dim - i * each));
      }
      int64_t total = 0;
      for (int64_t v : split) total += v;
      if (total != dim || static_cast<int64_t>(split.size()) != n)
        c.error("split sizes {} do not cover axis {} of size {} with {} outputs", fmt::join(split, ","), axis, dim, n);
      for (int64_t i = 0; i < n; ++i) {
        Shape o = in;
        o[static_cast<size_t>(axis)] = split[static_cast<size_t>(i)];
        c.setOutput(static_cast<int>(i), c.inputDType(0), o);
      }
    }, 64);
    s.withDefault("axis", int64_t{0});
    r.add(s);
  }
  r.add(makeSchema("Slice", 1, 5, "strided slice (starts, ends, axes, steps)", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    std::vector<int64_t> starts, ends, axes, steps;
    if (c.opset() < 10) {
      starts = c.node().attrInts("starts");
      ends = c.node().attrInts("ends");
      axes = c.node().attrInts("axes");
    } else {
      starts = c.inputInts(1);
      ends = c.inputInts(2);
      if (c.hasInput(3)) axes = c.inputInts(3);
      if (c.hasInput(4)) steps = c.inputInts(4);
    }
    try {
      c.setOutput(0, c.inputDType(0), kernels::resolveSlice(in, starts, ends, axes, steps).count);
    } catch (const Error& e) {
      c.error("{}", e.what());
    }
  }));
  r.add(makeSchema("Gather", 2, 2, "take entries along 'axis' by index", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    const Shape& idx = c.inputShape(1);
    int64_t axis = axisOf(c, attrInt(c.node(), "axis"), static_cast<int64_t>(in.size()));
    if (!isInteger(c.inputDType(1))) c.error("indices must be integers, got {}", dtypeName(c.inputDType(1)));
    Shape out(in.begin(), in.begin() + axis);
    out.insert(out.end(), idx.begin(), idx.end());
    out.insert(out.end(), in.begin() + axis + 1, in.end());
    c.setOutput(0, c.inputDType(0), out);
  }).withDefault("axis", int64_t{0}));
  r.add(makeSchema("GatherElements", 2, 2, "take entries along 'axis' element by element", [](InferContext& c) {
    axisOf(c, c.node().attrInt("axis", 0), c.inputRank(0));
    c.setOutput(0, c.inputDType(0), c.inputShape(1));
  }));
  r.add(makeSchema("Expand", 2, 2, "broadcast to a shape", [](InferContext& c) {
    auto target = c.inputInts(1);
    Shape out;
    if (!broadcastShapes(c.inputShape(0), Shape(target.begin(), target.end()), out))
      c.error("cannot expand {} to {}", shapeStr(c.inputShape(0)), fmt::join(target, "x"));
    c.setOutput(0, c.inputDType(0), out);
  }));
  r.add(makeSchema("Tile", 2, 2, "repeat along every dim", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    auto rep = c.inputInts(1);
    if (rep.size() != in.size()) c.error("repeats has {} entries for rank {}", rep.size(), in.size());
    Shape out = in;
    for (size_t i = 0; i < in.size(); ++i) {
      if (rep[i] < 0) c.error("negative repeat {}", rep[i]);
      out[i] *= rep[i];
    }
    c.setOutput(0, c.inputDType(0), out);
  }));
  r.add(makeSchema("Pad", 1, 4, "pad with constant, reflect, or edge values", [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    int64_t rank = static_cast<int64_t>(in.size());
    std::vector<int64_t> pads = c.opset() < 11 ? c.node().attrInts("pads") : c.inputInts(1);
    std::vector<int64_t> axes;
    if (c.hasInput(3)) axes = c.inputInts(3);
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    if (pads.size() != 2 * axes.size()) c.error("pads has {} entries, expected {}", pads.size(), 2 * axes.size());
    Shape out = in;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axisOf(c, axes[i], rank);
      out[static_cast<size_t>(a)] += pads[i] + pads[i + axes.size()];
      if (out[static_cast<size_t>(a)] < 0) c.error("pads make axis {} negative", a);
    }
    c.setOutput(0, c.inputDType(0), out);
  }));
  r.add(makeSchema("Shape", 1, 1, "the input's shape as int64", [](InferContext& c) {
    int64_t rank = c.inputRank(0);
    int64_t start = c.node().attrInt("start", 0), end = c.node().attrInt("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    c.setOutput(0, DType::kI64, {std::max<int64_t>(0, end - start)});
  }));
  r.add(makeSchema("Size", 1, 1, "the input's element count as int64", [](InferContext& c) {
    c.inputShape(0);
    c.setOutput(0, DType::kI64, {});
  }));
  r.add(makeSchema("Constant", 0, 0, "a constant tensor", [](InferContext& c) {
    const ir::Node& n = c.node();
    if (auto t = n.attrTensor("value")) c.setOutput(0, t->dtype(), t->shape());
    else if (n.hasAttr("value_float")) c.setOutput(0, DType::kF32, {});
    else if (n.hasAttr("value_int")) c.setOutput(0, DType::kI64, {});
    else if (n.hasAttr("value_floats")) c.setOutput(0, DType::kF32, {static_cast<int64_t>(n.attrFloats("value_floats").size())});
    else if (n.hasAttr("value_ints")) c.setOutput(0, DType::kI64, {static_cast<int64_t>(n.attrInts("value_ints").size())});
    else c.unsupported("only value, value_float(s) and value_int(s) constants are supported");
  }));
  r.add(makeSchema("ConstantOfShape", 1, 1, "a tensor of the given shape filled with 'value'", [](InferContext& c) {
    auto dims = c.inputInts(0);
    const Tensor* v = c.node().attrTensor("value");
    c.setOutput(0, v ? v->dtype() : DType::kF32, Shape(dims.begin(), dims.end()));
  }));
  r.add(makeSchema("Range", 3, 3, "start, start+delta, … below limit", [](InferContext& c) {
    if (!c.knownValue(0) || !c.knownValue(1) || !c.knownValue(2)) {  // computed: one dim, open (a declaration may fix it)
      c.setOutputType(0, ir::makeType(c.inputDType(0), {-1}));
      return;
    }
    auto s = c.inputValue(0).toDouble(), l = c.inputValue(1).toDouble(), d = c.inputValue(2).toDouble();
    if (s.size() != 1 || l.size() != 1 || d.size() != 1) c.error("start, limit and delta must be scalars");
    try {
      c.setOutput(0, c.inputDType(0), {kernels::rangeCount(s[0], l[0], d[0])});
    } catch (const Error& e) {
      c.error("{}", e.what());
    }
  }));
  auto d2s = [](bool to_depth) {
    return [to_depth](InferContext& c) {
      const Shape& in = c.inputShape(0);
      if (in.size() != 4) c.error("input must be 4-D NCHW, got {}", shapeStr(in));
      int64_t b = c.node().attrInt("blocksize", 0);
      if (b <= 0) c.error("blocksize must be positive, got {}", b);
      if (to_depth) {
        if (in[2] % b || in[3] % b) c.error("height and width ({}x{}) must be multiples of blocksize {}", in[2], in[3], b);
        c.setOutput(0, c.inputDType(0), {in[0], in[1] * b * b, in[2] / b, in[3] / b});
      } else {
        if (in[1] % (b * b)) c.error("channels ({}) must be a multiple of blocksize^2 ({})", in[1], b * b);
        c.setOutput(0, c.inputDType(0), {in[0], in[1] / (b * b), in[2] * b, in[3] * b});
      }
    };
  };
  r.add(makeSchema("SpaceToDepth", 1, 1, "move spatial blocks into channels", d2s(true)));
  r.add(makeSchema("DepthToSpace", 1, 1, "move channels into spatial blocks (DCR or CRD)", d2s(false)));
  {
    OpSchema s = makeSchema("TopK", 1, 2, "k largest (or smallest) along 'axis', values and int64 indices", [](InferContext& c) {
      Shape out = c.inputShape(0);
      int64_t axis = axisOf(c, c.node().attrInt("axis", -1), static_cast<int64_t>(out.size()));
      if (c.opset() >= 10 && !c.knownValue(1)) {  // k computed: its dim open (the declared output may fix it)
        out[static_cast<size_t>(axis)] = -1;
        c.setOutputType(0, ir::makeType(c.inputDType(0), out));
        c.setOutputType(1, ir::makeType(DType::kI64, out));
        return;
      }
      int64_t k = c.opset() < 10 ? c.node().attrInt("k", 0) : c.inputInts(1).at(0);
      if (k < 0 || k > out[static_cast<size_t>(axis)]) c.error("k = {} but axis {} has size {}", k, axis, out[static_cast<size_t>(axis)]);
      out[static_cast<size_t>(axis)] = k;
      c.setOutput(0, c.inputDType(0), out);
      c.setOutput(1, DType::kI64, out);
    }, 2);
    s.min_outputs = 2;
    r.add(s);
  }
  auto resizeInfer = [](InferContext& c) {
    const Shape& in = c.inputShape(0);
    Shape out = in;
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    if (c.node().op == "Upsample") {
      if (c.node().hasAttr("scales")) {
        for (float f : c.node().attrFloats("scales")) scales.push_back(f);
      } else {
        scales = c.inputValue(1).toDouble();
      }
    } else if (c.opset() < 11) {
      scales = c.inputValue(1).toDouble();
    } else {
      if (c.hasInput(3)) sizes = c.inputInts(3);
      if (sizes.empty() && c.hasInput(2)) scales = c.inputValue(2).toDouble();
    }
    std::vector<int64_t> axes = c.node().attrInts("axes");
    if (axes.empty())
      for (size_t i = 0; i < in.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (!sizes.empty()) {
      if (sizes.size() != axes.size()) c.error("sizes has {} entries for {} axes", sizes.size(), axes.size());
      std::string policy = c.node().attrString("keep_aspect_ratio_policy", "stretch");
      for (size_t i = 0; i < axes.size(); ++i) out[static_cast<size_t>(axisOf(c, axes[i], static_cast<int64_t>(in.size())))] = sizes[i];
      if (policy != "stretch") c.unsupported("keep_aspect_ratio_policy '{}' is not supported", policy);
    } else {
      if (scales.size() != axes.size()) c.error("scales has {} entries for {} axes", scales.size(), axes.size());
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = static_cast<size_t>(axisOf(c, axes[i], static_cast<int64_t>(in.size())));
        if (scales[i] <= 0) c.error("scale {} must be positive", scales[i]);
        out[a] = static_cast<int64_t>(std::floor(static_cast<double>(in[a]) * scales[i]));
      }
    }
    c.setOutput(0, c.inputDType(0), out);
  };
  r.add(makeSchema("Resize", 1, 4, "nearest / linear / cubic resize", resizeInfer));
  r.add(makeSchema("Upsample", 1, 2, "nearest / linear upsampling (deprecated form of Resize)", resizeInfer));
  {
    OpSchema s = makeSchema("NonZero", 1, 1, "indices of non-zero elements (data-dependent shape)", [](InferContext& c) {
      const Tensor& v = c.inputValue(0);
      int64_t nz = 0;
      for (double d : v.toDouble()) nz += d != 0;
      c.setOutput(0, DType::kI64, {static_cast<int64_t>(v.rank()), nz});
    });
    r.add(s);
  }
}

}  // namespace npuc::ops
