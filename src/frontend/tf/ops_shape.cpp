// Ops that move data: Concat, Pack, Reshape, Squeeze, ExpandDims, Shape, Slice, StridedSlice, Pad, Transpose.
// Values known at import time are computed here (shape arithmetic of a frozen graph folds to constants); Concat, Pad
// and rank-keeping slices of a channels-first tensor are done on it with their axes mapped, the others on the
// TensorFlow form.
#include "frontend/tf/importer.hpp"

#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace npuc::tf_io {

namespace {

/// Host tensors joined along `axis` (byte copies: any element type, all the same).
Tensor hostConcat(const std::vector<const Tensor*>& ts, size_t axis) {
  Shape out = ts[0]->shape();
  out[axis] = 0;
  for (const Tensor* t : ts) {
    if (t->dtype() != ts[0]->dtype()) fail(ErrorCode::kInvalidInput, "inputs of different types");
    out[axis] += t->shape()[axis];
  }
  if (product(out) > kMaxHostElements)
    fail(ErrorCode::kUnsupported, "a joined value of shape {} at import: more than {} elements", shapeStr(out), kMaxHostElements);
  Tensor r(ts[0]->dtype(), out);
  int64_t outer = 1;
  for (size_t i = 0; i < axis; ++i) outer *= out[i];
  if (outer == 0 || r.numel() == 0) return r;
  auto* dst = static_cast<uint8_t*>(r.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor* t : ts) {
      const size_t chunk = t->numel() == 0 ? 0 : t->nbytes() / static_cast<size_t>(outer);
      std::memcpy(dst, static_cast<const uint8_t*>(t->raw()) + static_cast<size_t>(o) * chunk, chunk);
      dst += chunk;
    }
  return r;
}

/// The rank-equal shapes of inputs joined along `axis`: equal elsewhere.
void checkJoin(const std::vector<Shape>& shapes, size_t axis) {
  for (const Shape& s : shapes) {
    if (s.size() != shapes[0].size()) fail(ErrorCode::kInvalidInput, "inputs of shapes {} and {}: ranks differ", shapeStr(shapes[0]), shapeStr(s));
    for (size_t i = 0; i < s.size(); ++i)
      if (i != axis && s[i] != shapes[0][i])
        fail(ErrorCode::kInvalidInput, "inputs of shapes {} and {} differ on axis {}, which is not the one joined", shapeStr(shapes[0]), shapeStr(s), i);
  }
}

Shape removeAxes(const Shape& s, const std::vector<int64_t>& axes) {
  Shape r;
  for (size_t i = 0; i < s.size(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) == axes.end()) r.push_back(s[i]);
  return r;
}

}  // namespace

void Importer::concat(const tf::NodeDef& n) {
  expectInputs(n, 2, INT32_MAX);
  const int count = numInputs(n) - 1;
  std::vector<int64_t> a = hostInts(n, count, "axis");
  if (a.size() != 1) fail(ErrorCode::kInvalidInput, "input {} (axis) holds {} values; it is one axis", count, a.size());
  std::vector<Val*> xs;
  std::vector<Shape> shapes;
  bool all_host = true, any_cf = false;
  for (int i = 0; i < count; ++i) {
    xs.push_back(&in(n, i));
    shapes.push_back(xs.back()->shape);
    all_host &= xs.back()->host.has_value();
    any_cf |= isCf(*xs.back());
  }
  const size_t rank = shapes[0].size();
  const int64_t axis = axisOf(a[0], rank, "axis");
  checkJoin(shapes, static_cast<size_t>(axis));
  if (all_host) {
    std::vector<const Tensor*> ts;
    for (Val* x : xs) ts.push_back(&*x->host);
    return setHost(0, hostConcat(ts, static_cast<size_t>(axis)), xs[0]->dtype);
  }
  const bool cf = rank == 4 && any_cf;
  std::vector<ir::ValueId> ins;
  for (Val* x : xs) ins.push_back(asLayout(*x, cf));
  setOut(0, emit("Concat", ins, {{"axis", cf ? kTfToCf[static_cast<size_t>(axis)] : axis}}), cf, xs[0]->dtype);
}

void Importer::pack(const tf::NodeDef& n) {
  expectInputs(n, 1, INT32_MAX);
  const int count = numInputs(n);
  const Shape s0 = in(n, 0).shape;
  const int64_t axis = axisOf(attrInt(n, "axis", 0), s0.size() + 1, "attr 'axis'");
  Shape each = s0;
  each.insert(each.begin() + axis, 1);
  bool all_host = true;
  for (int i = 0; i < count; ++i) {
    if (in(n, i).shape != s0) fail(ErrorCode::kInvalidInput, "inputs of shapes {} and {}; Pack stacks tensors of one shape", shapeStr(s0), shapeStr(in(n, i).shape));
    all_host &= in(n, i).host.has_value();
  }
  if (all_host) {
    std::vector<Tensor> parts;
    for (int i = 0; i < count; ++i) parts.push_back(in(n, i).host->reshaped(each));
    std::vector<const Tensor*> ts;
    for (const Tensor& t : parts) ts.push_back(&t);
    return setHost(0, hostConcat(ts, static_cast<size_t>(axis)), in(n, 0).dtype);
  }
  std::vector<ir::ValueId> ins;
  for (int i = 0; i < count; ++i)
    ins.push_back(emit("Reshape", {asTf(in(n, i)), ints("shape", each)}, {}, "/" + std::to_string(i)));
  setOut(0, emit("Concat", ins, {{"axis", axis}}), false, in(n, 0).dtype);
}

void Importer::reshape(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  Val& x = in(n, 0);
  std::vector<int64_t> want = hostInts(n, 1, "shape");
  const int64_t total = product(x.shape);
  Shape out;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t d = want[i];
    if (d == -1) {
      if (infer >= 0) fail(ErrorCode::kInvalidInput, "input 1 (shape) has more than one -1");
      infer = static_cast<int>(i);
      d = 1;
    } else if (d < 0 || d > kMaxDim) {
      fail(ErrorCode::kInvalidInput, "input 1 (shape) value {} is not a size", d);
    }
    if (__builtin_mul_overflow(known, d, &known) || known > kMaxElements) fail(ErrorCode::kInvalidInput, "input 1 (shape) is too large");
    out.push_back(d);
  }
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      fail(ErrorCode::kInvalidInput, "no size for the -1 in shape [{}] makes the {} elements of {}", fmt::join(want, ", "), total, shapeStr(x.shape));
    out[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    fail(ErrorCode::kInvalidInput, "shape [{}] holds {} elements; the input {} has {}", fmt::join(want, ", "), known, shapeStr(x.shape), total);
  }
  if (x.host) return setHost(0, x.host->reshaped(out), x.dtype);
  // A channels-first value whose axes of size > 1 are in TensorFlow's order ([N, C, 1, 1] after a global Mean) holds
  // its elements in TensorFlow's order already: one Reshape, no conversion.
  bool in_order = isCf(x);
  if (isCf(x)) {
    std::vector<int64_t> big;
    for (size_t i = 0; i < 4; ++i)
      if (irShape(held(x))[i] != 1) big.push_back(kCfToTf[i]);
    in_order = std::is_sorted(big.begin(), big.end());
  }
  setOut(0, emit("Reshape", {in_order ? held(x) : asTf(x), ints("shape", out)}), false, x.dtype);
}

void Importer::squeeze(const tf::NodeDef& n) {
  expectInputs(n, 1, 1);
  Val& x = in(n, 0);
  std::vector<int64_t> axes = attrInts(n, "squeeze_dims", std::vector<int64_t>{});
  for (int64_t& a : axes) {
    a = axisOf(a, x.shape.size(), "squeeze_dims value");
    if (x.shape[static_cast<size_t>(a)] != 1) fail(ErrorCode::kInvalidInput, "squeeze_dims names axis {} of size {} (not 1)", a, x.shape[static_cast<size_t>(a)]);
  }
  if (axes.empty())
    for (size_t i = 0; i < x.shape.size(); ++i)
      if (x.shape[i] == 1) axes.push_back(static_cast<int64_t>(i));
  if (x.host) return setHost(0, x.host->reshaped(removeAxes(x.shape, axes)), x.dtype);
  if (!isCf(x)) return setOut(0, emit("Reshape", {asTf(x), ints("shape", removeAxes(x.shape, axes))}), false, x.dtype);
  std::vector<int64_t> ir_axes, kept;
  for (size_t i = 0; i < 4; ++i) {
    if (std::find(axes.begin(), axes.end(), kCfToTf[i]) != axes.end()) ir_axes.push_back(static_cast<int64_t>(i));
    else kept.push_back(kCfToTf[i]);
  }
  setOutAxes(0, emit("Reshape", {held(x), ints("shape", removeAxes(irShape(held(x)), ir_axes))}), kept, x.dtype);
}

void Importer::expandDims(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  Val& x = in(n, 0);
  std::vector<int64_t> d = hostInts(n, 1, "dim");
  if (d.size() != 1) fail(ErrorCode::kInvalidInput, "input 1 (dim) holds {} values; it is one axis", d.size());
  const int64_t axis = axisOf(d[0], x.shape.size() + 1, "dim");
  Shape out = x.shape;
  out.insert(out.begin() + axis, 1);
  if (x.host) return setHost(0, x.host->reshaped(out), x.dtype);
  setOut(0, emit("Reshape", {asTf(x), ints("shape", out)}), false, x.dtype);
}

void Importer::shape(const tf::NodeDef& n) {
  expectInputs(n, 1, 1);
  tf::DataType t = attrType(n, "out_type", tf::DT_INT32);
  const Shape s = in(n, 0).shape;  // static: known here
  setHost(0, Tensor::fromVector<int64_t>({static_cast<int64_t>(s.size())}, s), t == tf::DT_INT64 ? DType::kI64 : DType::kI32);
}

void Importer::slice(const tf::NodeDef& n) {
  expectInputs(n, 3, 3);
  Val& x = in(n, 0);
  std::vector<int64_t> begin = hostInts(n, 1, "begin"), size = hostInts(n, 2, "size");
  const size_t r = x.shape.size();
  if (begin.size() != r || size.size() != r)
    fail(ErrorCode::kInvalidInput, "begin and size have {} and {} values for an input of {} axes", begin.size(), size.size(), r);
  SliceSpec s;
  for (size_t i = 0; i < r; ++i) {
    const int64_t d = x.shape[i], b = begin[i], c = size[i] == -1 ? d - b : size[i];
    if (b < 0 || c < 0 || b > d || c > d - b)
      fail(ErrorCode::kInvalidInput, "axis {}: begin {} and size {} do not fit its {} elements", i, b, size[i], d);
    s.begin.push_back(b);
    s.end.push_back(b + c);
    s.step.push_back(1);
    s.count.push_back(c);
    s.out.push_back(c);
  }
  applySlice(x, s);
}

void Importer::stridedSlice(const tf::NodeDef& n) {
  expectInputs(n, 4, 4);
  Val& x = in(n, 0);
  std::vector<int64_t> begin = hostInts(n, 1, "begin"), end = hostInts(n, 2, "end"), strides = hostInts(n, 3, "strides");
  const size_t spec = begin.size();
  if (end.size() != spec || strides.size() != spec || spec > 64)
    fail(ErrorCode::kInvalidInput, "begin, end and strides have {}, {} and {} values (one per sliced axis, at most 64)", spec, end.size(), strides.size());
  const uint64_t bm = static_cast<uint64_t>(attrInt(n, "begin_mask", 0)), em = static_cast<uint64_t>(attrInt(n, "end_mask", 0)),
                 el = static_cast<uint64_t>(attrInt(n, "ellipsis_mask", 0)), nm = static_cast<uint64_t>(attrInt(n, "new_axis_mask", 0)),
                 sm = static_cast<uint64_t>(attrInt(n, "shrink_axis_mask", 0));
  if (__builtin_popcountll(el) > 1) fail(ErrorCode::kInvalidInput, "attr 'ellipsis_mask' has more than one bit set");
  const size_t rank = x.shape.size();
  // The axes of the input an ellipsis covers: those no other (non new-axis) entry consumes.
  size_t consumed = 0;
  for (size_t i = 0; i < spec; ++i)
    if (!(el >> i & 1) && !(nm >> i & 1)) ++consumed;
  if (consumed > rank) fail(ErrorCode::kInvalidInput, "{} sliced axes for an input of {} axes", consumed, rank);
  SliceSpec s;
  size_t axis = 0;
  auto full = [&](size_t a) {
    s.begin.push_back(0);
    s.end.push_back(x.shape[a]);
    s.step.push_back(1);
    s.count.push_back(x.shape[a]);
    s.out.push_back(x.shape[a]);
  };
  const bool has_ellipsis = el != 0;
  for (size_t i = 0; i < spec; ++i) {
    if (el >> i & 1) {
      for (size_t k = 0; k < rank - consumed; ++k) full(axis++);
      continue;
    }
    if (nm >> i & 1) {
      s.out.push_back(1);
      s.reshapes = true;
      continue;
    }
    const int64_t d = x.shape[axis];
    if (strides[i] == 0) fail(ErrorCode::kInvalidInput, "strides[{}] is 0", i);
    // A stride beyond the axis takes at most one element: the same as a stride of the axis' size (no overflow).
    const int64_t lim = std::max<int64_t>(d, 1), st = std::clamp<int64_t>(strides[i], -lim, lim);
    if (sm >> i & 1) {  // one element, the axis removed
      int64_t b = begin[i] < 0 ? begin[i] + d : begin[i];
      if (b < 0 || b >= d) fail(ErrorCode::kInvalidInput, "begin[{}] = {} is outside axis {} of size {} (shrink_axis_mask)", i, begin[i], axis, d);
      s.begin.push_back(b);
      s.end.push_back(b + 1);
      s.step.push_back(1);
      s.count.push_back(1);
      s.reshapes = true;
      ++axis;
      continue;
    }
    auto clampIdx = [&](int64_t v, bool masked, bool is_begin) {
      if (masked) return st > 0 ? (is_begin ? 0 : d) : (is_begin ? d - 1 : -1);
      if (v < 0) v += d;
      return st > 0 ? std::clamp<int64_t>(v, 0, d) : std::clamp<int64_t>(v, -1, d - 1);
    };
    const int64_t b = clampIdx(begin[i], bm >> i & 1, true), e = clampIdx(end[i], em >> i & 1, false);
    const int64_t c = st > 0 ? (e > b ? 1 + (e - b - 1) / st : 0) : (b > e ? 1 + (b - e - 1) / -st : 0);
    s.begin.push_back(b);
    s.end.push_back(st < 0 && e < 0 ? -d - 1 : e);  // ONNX reads a negative end from the back: -d-1 is "before 0"
    s.step.push_back(st);
    s.count.push_back(c);
    s.out.push_back(c);
    ++axis;
  }
  if (!has_ellipsis)
    while (axis < rank) full(axis++);
  applySlice(x, s);
}

void Importer::applySlice(Val& x, const SliceSpec& s, int k) {
  const std::string tag = k ? fmt::format("/{}", k) : "";  // output k's nodes
  const size_t r = x.shape.size();
  if (x.host) {
    const Tensor& t = *x.host;
    Shape cs(s.count.begin(), s.count.end());
    Tensor out(t.dtype(), cs);
    const size_t es = dtypeSize(t.dtype());
    std::vector<int64_t> stride(r, 1), idx(r, 0);
    for (size_t i = r; i-- > 1;) stride[i - 1] = stride[i] * x.shape[i];
    for (int64_t o = 0; o < out.numel(); ++o) {
      int64_t off = 0;
      for (size_t i = 0; i < r; ++i) off += (s.begin[i] + idx[i] * s.step[i]) * stride[i];
      std::memcpy(static_cast<uint8_t*>(out.raw()) + static_cast<size_t>(o) * es,
                  static_cast<const uint8_t*>(t.raw()) + static_cast<size_t>(off) * es, es);
      for (size_t i = r; i-- > 0;) {
        if (++idx[i] < cs[i]) break;
        idx[i] = 0;
      }
    }
    return setHost(k, out.reshaped(s.out), x.dtype);
  }
  const bool cf = isCf(x) && !s.reshapes;
  ir::ValueId v = cf ? held(x) : asTf(x);
  std::vector<int64_t> starts, ends, axes, steps;
  for (size_t i = 0; i < r; ++i) {
    if (s.begin[i] == 0 && s.step[i] == 1 && s.count[i] == x.shape[i]) continue;  // the whole axis
    starts.push_back(s.begin[i]);
    ends.push_back(s.end[i]);
    steps.push_back(s.step[i]);
    axes.push_back(cf ? kTfToCf[i] : static_cast<int64_t>(i));
  }
  if (!axes.empty())
    v = emit("Slice", {v, ints("starts", starts), ints("ends", ends), ints("axes", axes), ints("steps", steps)}, {},
             tag + (s.reshapes ? "/slice" : ""));
  if (s.reshapes) v = emit("Reshape", {v, ints("shape", s.out)}, {}, tag);
  else if (axes.empty()) v = emit("Identity", {v}, {}, tag);
  setOut(k, v, cf, x.dtype);
}

void Importer::pad(const tf::NodeDef& n) {
  const bool v2 = n.op() == "PadV2", mirror = n.op() == "MirrorPad";
  expectInputs(n, v2 ? 3 : 2, v2 ? 3 : 2);
  Val& x = in(n, 0);
  std::vector<int64_t> p = hostInts(n, 1, "paddings");
  const size_t r = x.shape.size();
  if (p.size() != 2 * r) fail(ErrorCode::kInvalidInput, "input 1 (paddings) holds {} values; an input of {} axes needs [{}, 2]", p.size(), r, r);
  std::map<std::string, ir::Attr> attrs;
  std::vector<ir::ValueId> extra;
  if (mirror) {
    std::string mode = attrStr(n, "mode");
    if (mode != "REFLECT")
      fail(ErrorCode::kUnsupported, "attr 'mode' is '{}': npuc imports REFLECT (SYMMETRIC repeats the edge, which no "
                                    "ONNX Pad mode does)", mode);
    for (size_t i = 0; i < r; ++i)
      if (p[2 * i] >= x.shape[i] || p[2 * i + 1] >= x.shape[i])
        fail(ErrorCode::kInvalidInput, "REFLECT paddings {} and {} on axis {} must be smaller than its size {}", p[2 * i], p[2 * i + 1], i, x.shape[i]);
    attrs["mode"] = std::string("reflect");
  }
  for (int64_t v : p)
    if (v < 0 || v > kMaxDim) fail(ErrorCode::kInvalidInput, "input 1 (paddings) value {} is not a size", v);
  if (v2) {
    const Tensor& c = hostInput(n, 2, "constant_values");
    if (c.numel() != 1 || c.dtype() != DType::kF32) fail(ErrorCode::kInvalidInput, "input 2 (constant_values) must be one float");
    extra.push_back(constant("value", Tensor::scalar<float>(c.values<float>()[0])));
  }
  const bool cf = isCf(x);
  std::vector<int64_t> pads(2 * r);
  for (size_t i = 0; i < r; ++i) {
    const size_t a = cf ? static_cast<size_t>(kCfToTf[i]) : i;
    pads[i] = p[2 * a];
    pads[i + r] = p[2 * a + 1];
  }
  std::vector<ir::ValueId> ins = {cf ? held(x) : asTf(x), ints("pads", pads)};
  ins.insert(ins.end(), extra.begin(), extra.end());
  setOut(0, emit("Pad", ins, std::move(attrs)), cf);
}

void Importer::transpose(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  Val& x = in(n, 0);
  std::vector<int64_t> perm = hostInts(n, 1, "perm");
  const size_t r = x.shape.size();
  std::vector<bool> seen(r, false);
  if (perm.size() != r) fail(ErrorCode::kInvalidInput, "input 1 (perm) has {} values for an input of {} axes", perm.size(), r);
  for (int64_t& p : perm) {
    p = axisOf(p, r, "perm value");
    if (seen[static_cast<size_t>(p)]) fail(ErrorCode::kInvalidInput, "input 1 (perm) names axis {} twice", p);
    seen[static_cast<size_t>(p)] = true;
  }
  // Output axis i is TensorFlow axis perm[i]: on a channels-first value, the IR axis holding it.
  std::vector<int64_t> q = perm;
  if (isCf(x))
    for (int64_t& p : q) p = kTfToCf[static_cast<size_t>(p)];
  ir::ValueId v = isCf(x) ? held(x) : asTf(x);
  setOut(0, permute(v, irShape(v), q, ""), false, x.dtype);
}

}  // namespace npuc::tf_io
