// Dynamic tensors in the lowering (docs/package-format.md, "Dynamic tensors"): the graph typed at capacities
// (withCapacities, for lower and packageGaps alike, so check and translate agree) and the dynamic form of a layer
// reading such tensors (Lowerer::makeDynamic: an extent after each input and output, package::kFlagDynamic).
#include "codegen/lowerer.hpp"

#include "kernels/layers.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

#include <algorithm>
#include <optional>
#include <set>

namespace npuc::codegen::detail {

namespace {

/// The dynamic tensor whose whole shape value v is (the output of a Shape of it, no start / end), else nullptr.
const ir::Value* shapeOfBounded(const ir::Graph& g, ir::ValueId v) {
  if (v == ir::kNoValue || g.value(v).producer == ir::kNoNode) return nullptr;
  const ir::Node& p = g.node(g.value(v).producer);
  if (!p.domain.empty() || p.op != "Shape" || p.hasAttr("start") || p.hasAttr("end") || !g.value(p.inputs[0]).bounded) return nullptr;
  return &g.value(p.inputs[0]);
}

}  // namespace

namespace {

/// Whether n decides a tensor's dims from the data: NonZero of a static input (not a constant: folded), or a
/// NonMaxSuppression whose count the model does not declare.
bool decides(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain.empty() || !n.hasInput(0) || !g.value(n.inputs[0]).type.isStatic()) return false;
  if (n.op == "NonZero") return !g.value(n.inputs[0]).isConstant();
  return n.op == "NonMaxSuppression" && !g.value(n.outputs[0]).type.isStatic() && g.value(n.inputs[1]).type.isStatic();
}

/// NonMaxSuppression's capacity: every box of every class of every batch (a constant max_output_boxes_per_class: that
/// many per class), as the nms layer's shape function gives it.
Shape nmsCapacity(const ir::Graph& g, const ir::Node& n) {
  const Shape &boxes = g.value(n.inputs[0]).type.shape, &scores = g.value(n.inputs[1]).type.shape;
  if (boxes.size() != 3 || scores.size() != 3) return {};
  int64_t per = boxes[1];
  if (n.hasInput(2))
    if (const ir::Value& m = g.value(n.inputs[2]); m.isConstant() && m.constant->numel() == 1)
      per = std::clamp<int64_t>(m.constant->toInt64()[0], 0, per);
  return {boxes[0] * scores[1] * per, 3};
}

void typeAtCapacities(ir::Graph& c);

/// A Slice of a dynamic tensor (constant starts / ends / axes / steps): per dim the largest count over the dim's
/// run sizes 0 … its capacity (a count need not grow with the dim: starts -3, ends 5 gives 0 at 100, 2 at 6).
Shape sliceCapacity(const ir::Node& n, const Shape& x, const std::vector<const Tensor*>& values) {
  const std::vector<int64_t> starts = values[1]->toInt64(), ends = values[2]->toInt64();
  std::vector<int64_t> axes = n.hasInput(3) ? values[3]->toInt64() : std::vector<int64_t>{};
  const std::vector<int64_t> steps = n.hasInput(4) ? values[4]->toInt64() : std::vector<int64_t>{};
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  Shape y = kernels::resolveSlice(x, starts, ends, axes, steps).count;  // (fails as the engine's Slice: caught below)
  const auto r = static_cast<int64_t>(x.size());
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
    for (int64_t len = 0; len < x[static_cast<size_t>(a)]; ++len)
      y[static_cast<size_t>(a)] = std::max(y[static_cast<size_t>(a)], kernels::resolveSlice({len}, {starts[k]}, {ends[k]}, {0},
                                                                                                 steps.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{steps[k]}).count[0]);
  }
  return y;
}

/// An upper bound of every element of integer value v, where the small computations on shape values give one
/// (torchvision's k = ReduceMin(Concat(300, n)) ≤ 300): a constant's largest element; through views and integer
/// Casts; Min and ReduceMin: the smallest bound of their operands (ReduceMin of a Concat: of its parts); Max and
/// Concat: the largest; Shape of a typed value, Gather from it: its largest dim. nullopt where none is known.
std::optional<int64_t> upperBound(const ir::Graph& g, ir::ValueId v, int depth = 0) {
  if (v == ir::kNoValue || depth > 16) return std::nullopt;
  const ir::Value& val = g.value(v);
  if (val.isConstant()) {
    if (!isInteger(val.constant->dtype()) || val.constant->numel() == 0) return std::nullopt;
    const std::vector<int64_t> e = val.constant->toInt64();
    return *std::max_element(e.begin(), e.end());
  }
  if (val.producer == ir::kNoNode) return std::nullopt;
  const ir::Node& n = g.node(val.producer);
  if (!n.domain.empty()) return std::nullopt;
  const auto each = [&](bool smallest, const std::vector<ir::ValueId>& ins) -> std::optional<int64_t> {
    std::optional<int64_t> b;
    for (ir::ValueId i : ins) {
      const std::optional<int64_t> u = upperBound(g, i, depth + 1);
      if (!u && !smallest) return std::nullopt;  // (a largest needs every bound; a smallest any one)
      if (u) b = !b ? *u : smallest ? std::min(*b, *u) : std::max(*b, *u);
    }
    return b;
  };
  if (n.op == "Reshape" || n.op == "Unsqueeze" || n.op == "Squeeze" || n.op == "Flatten" || n.op == "Identity" ||
      (n.op == "Cast" && isInteger(val.type.dtype)))
    return upperBound(g, n.inputs[0], depth + 1);
  if (n.op == "Min") return each(true, n.inputs);
  if (n.op == "Max" || n.op == "Concat") return each(false, n.inputs);
  if (n.op == "ReduceMin") {
    const ir::Value& x = g.value(n.inputs[0]);
    const bool all = !n.hasAttr("axes") && (n.inputs.size() < 2 || n.inputs[1] == ir::kNoValue);
    if (all && x.producer != ir::kNoNode && g.node(x.producer).domain.empty() && g.node(x.producer).op == "Concat")
      return each(true, g.node(x.producer).inputs);  // (the least of all: at most any part's bound)
    return upperBound(g, n.inputs[0], depth + 1);
  }
  if (n.op == "Shape" && g.value(n.inputs[0]).type.isStatic()) {
    const Shape& s = g.value(n.inputs[0]).type.shape;
    return s.empty() ? std::nullopt : std::optional<int64_t>(*std::max_element(s.begin(), s.end()));
  }
  if (n.op == "Gather") return upperBound(g, n.inputs[0], depth + 1);
  return std::nullopt;
}

/// An If reading dynamic tensors: each branch typed at capacities (a copy: bodies are shared), and each output at
/// the larger of its branches' capacities, bounded where a branch's result is (or the two differ).
void ifAtCapacities(ir::Graph& c, ir::Node& n) {
  std::vector<const ir::Graph*> branches;
  for (const char* attr : {"then_branch", "else_branch"}) {
    const ir::Graph* b = n.attrGraph(attr);
    if (!b) return;
    std::unique_ptr<ir::Graph> body = b->clone();
    const std::vector<int> caps = ir::captureInputs(n, attr);
    const int nf = ir::numFormalInputs(*body);
    for (size_t j = 0; j < caps.size(); ++j) {
      const ir::Value& outer = c.value(n.inputs[static_cast<size_t>(caps[j])]);
      ir::Value& inner = body->value(body->inputs()[static_cast<size_t>(nf) + j]);
      if (!outer.type.isStatic()) continue;
      inner.type = outer.type;
      inner.bounded = outer.bounded;
    }
    typeAtCapacities(*body);
    n.attrs[attr] = ir::GraphPtr(std::move(body));
    branches.push_back(n.attrGraph(attr));
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (k >= branches[0]->outputs().size() || k >= branches[1]->outputs().size()) return;  // (refused when lowered)
    const ir::Value &t = branches[0]->value(branches[0]->outputs()[k]), &e = branches[1]->value(branches[1]->outputs()[k]);
    const ir::Type &tt = t.isConstant() ? ir::makeType(t.constant->dtype(), t.constant->shape()) : t.type;
    const ir::Type &et = e.isConstant() ? ir::makeType(e.constant->dtype(), e.constant->shape()) : e.type;
    if (!tt.isStatic() || !et.isStatic() || tt.dtype != et.dtype || tt.shape.size() != et.shape.size()) continue;
    Shape cap = tt.shape;
    for (size_t d = 0; d < cap.size(); ++d) cap[d] = std::max(cap[d], et.shape[d]);
    ir::Value& y = c.value(n.outputs[k]);
    y.type = ir::makeType(tt.dtype, cap);
    y.bounded = t.bounded || e.bounded || tt.shape != et.shape;
  }
}

/// Types c's nodes in order: the deciding nodes' outputs and what the nodes reading dynamic tensors compute from them
/// at their capacities (bounded); the nodes after them whose types the original inference could not know (Shape's
/// values: data, static shapes) get them now, as static values.
void typeAtCapacities(ir::Graph& c) {
  for (ir::NodeId id : c.order()) {
    ir::Node& n = c.node(id);
    if (decides(c, n)) {
      const Shape& xs = c.value(n.inputs[0]).type.shape;
      ir::Value& y = c.value(n.outputs[0]);
      y.type = n.op == "NonZero" ? ir::makeType(DType::kI64, {static_cast<int64_t>(xs.size()), shapeNumel(xs)})
                                 : ir::makeType(DType::kI64, nmsCapacity(c, n));
      y.bounded = y.type.shape.size() > 0;
      continue;
    }
    const bool reads = std::any_of(n.inputs.begin(), n.inputs.end(), [&](ir::ValueId v) { return v != ir::kNoValue && c.value(v).bounded; });
    const bool known = std::all_of(n.outputs.begin(), n.outputs.end(), [&](ir::ValueId v) { return v == ir::kNoValue || c.value(v).type.isStatic(); });
    if (reads ? !readsDynamic(n) && !(n.domain.empty() && n.op == "Shape") : known) continue;
    if (reads && n.domain.empty() && n.op == "If") {
      ifAtCapacities(c, n);
      continue;
    }
    std::vector<ir::Type> types;
    std::vector<const Tensor*> values;
    for (ir::ValueId v : n.inputs) {
      types.push_back(v == ir::kNoValue ? ir::Type{} : c.value(v).type);
      values.push_back(v != ir::kNoValue && c.value(v).isConstant() ? &*c.value(v).constant : nullptr);
    }
    std::optional<std::vector<ir::Type>> out;
    if (const ir::Value* of = n.domain.empty() && n.op == "ConstantOfShape" ? shapeOfBounded(c, n.inputs[0]) : nullptr) {
      const Tensor* v = n.attrTensor("value");  // (the shape of a dynamic tensor: that tensor's dims, their capacity)
      c.value(n.outputs[0]).type = ir::makeType(v ? v->dtype() : DType::kF32, of->type.shape);
      c.value(n.outputs[0]).bounded = true;
      continue;
    }
    if (reads && n.op == "TopK" && n.hasInput(1) && !values[1] && types[0].isStatic()) {
      // (k the model computes: at most the axis, and at most what bounds k's value)
      Shape y = types[0].shape;
      int64_t axis = n.attrInt("axis", -1);
      axis = axis < 0 ? axis + static_cast<int64_t>(y.size()) : axis;
      if (axis >= 0 && axis < static_cast<int64_t>(y.size()))
        if (const std::optional<int64_t> k = upperBound(c, n.inputs[1]); k && *k >= 0)
          y[static_cast<size_t>(axis)] = std::min(y[static_cast<size_t>(axis)], *k);
      out = std::vector<ir::Type>{ir::makeType(types[0].dtype, y), ir::makeType(DType::kI64, y)};
    } else if (reads && n.op == "Slice" && c.opset >= 10 && types[0].isStatic() && values.size() >= 3 && values[1] && values[2] &&
               (!n.hasInput(3) || values[3]) && (!n.hasInput(4) || values[4])) {
      try {
        out = std::vector<ir::Type>{ir::makeType(types[0].dtype, sliceCapacity(n, types[0].shape, values))};
      } catch (const Error&) {
        continue;  // (the lowering names the node)
      }
    } else if (reads && n.op == "NonMaxSuppression") {
      out = std::vector<ir::Type>{ir::makeType(DType::kI64, nmsCapacity(c, n))};
    } else {
      try {
        out = ops::inferNode(n, c.opset, types, values);
      } catch (const Error&) {
        continue;  // (the lowering names the node)
      }
    }
    const bool bounded = reads && readsDynamic(n);
    for (size_t k = 0; out && k < n.outputs.size() && k < out->size(); ++k)
      if (n.outputs[k] != ir::kNoValue && (*out)[k].isStatic()) {
        c.value(n.outputs[k]).type = (*out)[k];
        c.value(n.outputs[k]).bounded = bounded;
      }
  }
}

}  // namespace

/// Dynamic tensors: a copy of g in which NonZero's and NonMaxSuppression's outputs, and what the ops reading such
/// tensors compute from them, are typed at their capacities and marked `bounded`; nullptr when g has no such node.
std::unique_ptr<ir::Graph> withCapacities(const ir::Graph& g) {
  const std::vector<ir::NodeId> order = g.order();
  if (std::none_of(order.begin(), order.end(), [&](ir::NodeId id) { return decides(g, g.node(id)); })) return nullptr;
  std::unique_ptr<ir::Graph> c = g.clone();
  typeAtCapacities(*c);
  return c;
}

int Lowerer::extentOf(int v, bool bounded, const Shape* view) {
  if (auto e = extent_of_.find(v); e != extent_of_.end()) return e->second;
  const LVal& l = vals_[static_cast<size_t>(v)];
  const Shape& shape = view ? *view : l.shape;  // (a reference recording other dims: those)
  const auto rank = static_cast<int64_t>(shape.size());
  if (bounded && l.space == 'i') return extent_of_[v] = newVal(l.name + "/extent", {rank}, ElemType::kI64, 'i');
  if (auto w = dims_of_.find(v); w != dims_of_.end() && !view) return w->second;
  Tensor dims(DType::kI64, {rank});
  std::copy(shape.begin(), shape.end(), dims.data<int64_t>());
  const int w = rawWeightVal(l.name + (view ? "/view_dims" : "/dims"), dims);
  if (!view) dims_of_[v] = w;
  return w;
}

void Lowerer::makeDynamic(const ir::Node& n, size_t first) {
  for (size_t i = first; i < descs_.size(); ++i)
    if (!package::layerTakesDynamic(descs_[i].kind))
      unsupported(n, "it reads a tensor whose shape the data decide, which a {} layer does not take yet (docs/package-format.md, "
                  "\"Dynamic tensors\": the kinds that do)", package::layerKindName(descs_[i].kind));
  if (descs_.size() == first) unsupported(n, "it reads a tensor whose shape the data decide and lowers to no layer (a view)");
  std::set<int> bounded;  // (the node's inputs that are dynamic tensors, and the chain's partial results)
  for (ir::ValueId v : n.inputs)
    if (v != ir::kNoValue && g_.value(v).bounded)
      if (auto it = of_.find(v); it != of_.end()) bounded.insert(it->second);
  for (size_t k = first; k < descs_.size(); ++k) bounded.insert(descs_[k].out);
  // Every layer of the node (a chain of partial concats: each part's output and extent feed the next)
  for (size_t k = first; k < descs_.size(); ++k) {
    std::vector<int> ins = descs_[k].ins, outs{descs_[k].out};
    outs.insert(outs.end(), descs_[k].more_outs.begin(), descs_[k].more_outs.end());
    if (2 * (ins.size() + outs.size()) > static_cast<size_t>(package::kMaxRefs)) unsupported(n, "too many references for a dynamic layer");
    const std::vector<Shape> views = descs_[k].views;  // (per input then the output, when the layer records other dims)
    // (an extent gives a value's own dims: a dynamic tensor read or written through other dims would be misread)
    for (size_t i = 0; i < views.size(); ++i) {
      const int v = i < ins.size() ? ins[i] : outs[0];
      if ((i >= ins.size() || bounded.count(v)) && views[i] != vals_[static_cast<size_t>(v)].shape)
        unsupported(n, "its layer views a dynamic tensor as [{}] (its dims: [{}])", fmt::join(views[i], ", "),
                    fmt::join(vals_[static_cast<size_t>(v)].shape, ", "));
    }
    for (size_t i = 0, m = ins.size(); i < m; ++i)
      ins.push_back(extentOf(ins[i], bounded.count(ins[i]) > 0, views.empty() ? nullptr : &views[i]));
    std::vector<int> more(outs.begin() + 1, outs.end());
    for (int v : outs) {
      const LVal& l = vals_[static_cast<size_t>(v)];
      const size_t rank = views.empty() ? l.shape.size() : views.back().size();
      const int e = newVal(l.name + "/extent", {static_cast<int64_t>(rank)}, ElemType::kI64, l.space == 'o' ? 'o' : 'd');
      extent_of_[v] = e;
      more.push_back(e);
    }
    LDesc& d = descs_[k];
    if (!views.empty()) {  // (views: per input, then the output: the extents' own dims between)
      std::vector<Shape> v(views.begin(), views.begin() + static_cast<std::ptrdiff_t>(d.ins.size()));
      for (size_t i = d.ins.size(); i < ins.size(); ++i) v.push_back(vals_[static_cast<size_t>(ins[i])].shape);
      v.push_back(views.back());
      d.views = std::move(v);
    }
    d.ins = std::move(ins);
    d.more_outs = std::move(more);
    d.dynamic = true;
  }
}

/// Shape of a dynamic tensor: a copy of its extent (start / end: a part of it).
void shapeOfDynamic(Lowerer& L, const ir::Node& n) {
  const ir::Value& x = L.g_.value(n.inputs[0]);
  if (!x.bounded) L.unsupported(n, "the shape of a tensor of static shape is a constant (folded before lowering)");
  const auto rank = static_cast<int64_t>(x.type.shape.size());
  int64_t start = n.attrInt("start", 0), end = n.attrInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  if (start != 0 || end != rank) L.unsupported(n, "Shape of a part of a dynamic tensor's dims (start {}, end {})", start, end);
  const int xv = L.in(n, 0);
  L.emit(n, LayerKind::kCopy, {L.extentOf(xv, true)}, L.outVal(n, n.outputs[0]));
}

}  // namespace npuc::codegen::detail
