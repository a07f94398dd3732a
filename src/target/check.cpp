// Node facts, rule evaluation and the supported-ops page.
#include "target/check.hpp"

#include "ops/custom.hpp"

#include "ir/rewriter.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::target {

namespace {

bool isWindowOp(const std::string& op) { return hasWindowFacts(op); }

void shapeFacts(Facts& f, const Shape& s, const char* p) {
  std::string pre(p);
  const ShapeDims d = shapeDims(s);
  f[pre + "_rank"] = Value(d.rank);
  f[pre + "_elems"] = Value(d.elems);
  std::vector<Value> dims;
  for (int64_t x : s) dims.emplace_back(x);
  f[pre + "_shape"] = Value(std::move(dims));
  if (s.size() >= 2) f[pre + "_c"] = Value(d.c);
  if (s.size() >= 3) f[pre + "_w"] = Value(d.w);
  f[pre + "_h"] = Value(d.h);
}

void applyLookups(const OpSupport& s, Facts& f) {
  for (const Lookup& l : s.lookups) {
    std::vector<Value> key;
    bool have = true;
    for (auto& k : l.key) {
      auto it = f.find(k);
      if (it == f.end()) have = false;
      else key.push_back(it->second);
    }
    const std::vector<Value>* vals = l.defaults.empty() ? nullptr : &l.defaults;
    if (have)
      for (auto& [rk, rv] : l.rows)
        if (rk == Value(key)) vals = &rv;
    if (vals)
      for (size_t i = 0; i < l.values.size(); ++i) f[l.values[i]] = (*vals)[i];
  }
}

}  // namespace

Facts activationFacts(const ir::Graph& g, const ir::Node& n, const std::string& act) {
  Facts f;
  f["op"] = Value(act);
  f["n_inputs"] = Value(int64_t{1});
  f["n_outputs"] = Value(int64_t{1});
  f["const_inputs"] = Value(int64_t{0});
  f["merged_ops"] = Value(std::vector<Value>{});
  f["at_model_input"] = Value(int64_t{0});
  f["at_model_output"] = Value(int64_t{0});
  f["before_fc"] = Value(int64_t{0});
  if (!n.outputs.empty() && n.outputs[0] != ir::kNoValue && g.value(n.outputs[0]).type.isStatic()) {
    const Shape& s = g.value(n.outputs[0]).type.shape;
    shapeFacts(f, s, "in");
    shapeFacts(f, s, "out");
    f["batch"] = Value(s.empty() ? int64_t{1} : s[0]);
    f["rank"] = Value(static_cast<int64_t>(s.size()));
  }
  const float alpha = n.attrFloat("activation_alpha", 0), beta = n.attrFloat("activation_beta", 0);
  if (act == "Clip") {  // (fuse-activations writes Clip's bounds as alpha and beta)
    f["min"] = Value(floatFact(alpha));
    f["max"] = Value(floatFact(beta));
  } else if (act == "LeakyRelu" || act == "HardSigmoid" || act == "Elu" || act == "Selu") {
    f["alpha"] = Value(floatFact(alpha));
    if (act != "LeakyRelu") f["beta"] = Value(floatFact(beta));
  }
  return f;
}

std::string floatFact(float x) {
  if (std::isinf(x) || std::fabs(x) >= std::numeric_limits<float>::max()) return x > 0 ? "inf" : "-inf";
  return fmt::format("{}", x);
}

bool hasWindowFacts(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" || op == "LpPool";
}

ShapeDims shapeDims(const Shape& s) {
  ShapeDims d;
  d.rank = static_cast<int64_t>(s.size());
  d.elems = shapeNumel(s);
  const ir::ChwDims chw = ir::chwDims(s, ir::Layout::kModel);  // (the facts publish c from rank 2 on, w from rank 3)
  d.c = chw.c;
  d.w = chw.w;
  d.h = chw.h;
  return d;
}

const std::set<std::string>& derivedFactNames() {
  static const std::set<std::string> k = {
      "op", "n_inputs", "n_outputs", "batch", "rank", "axes", "axis", "mode", "coordinate_transformation_mode", "nearest_mode",
      "exclude_outside", "in_rank", "in_elems", "in_shape", "in_c", "in_w", "in_h", "out_rank", "out_elems",
      "out_shape", "out_c", "out_w", "out_h", "kernel_h", "kernel_w", "stride_h", "stride_w", "dilation_h",
      "dilation_w", "pad_t", "pad_l", "pad_b", "pad_r", "pad_kind", "group", "ceil_mode", "count_include_pad",
      "depthwise", "m", "k", "n", "b_constant", "w_constant", "min", "max", "const_inputs", "broadcast", "merged_ops", "perm",
      "at_model_input", "at_model_output", "before_fc", "before_window", "pads_spatial", "input_op", "output_op", "out_flat",
      "reaches_detection", "engine"};
  return k;
}

namespace {

bool isBroadcastingOp(const std::string& op) {
  static const std::set<std::string> k = {"Add", "Sub", "Mul", "Div", "Sum", "Mean", "Max", "Min", "Pow", "Mod", "PRelu",
                                          "And", "Or", "Xor", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Where"};
  return k.count(op) != 0;
}

std::string broadcastKind(const ir::Graph& g, const ir::Node& n) {
  if (n.outputs.empty() || n.outputs[0] == ir::kNoValue || !g.value(n.outputs[0]).type.isStatic()) return "";
  const Shape& out = g.value(n.outputs[0]).type.shape;
  const size_t r = out.size();
  std::string kind = "none";
  int others = 0;
  for (ir::ValueId v : n.inputs) {
    if (v == ir::kNoValue) continue;
    const ir::Type& t = g.value(v).type;
    if (!t.isStatic()) return "";
    const Shape& s = t.shape;
    if (s == out) continue;
    std::string k = "other";
    if (shapeNumel(s) == 1) {
      k = "scalar";
    } else if (r >= 2 && s.size() <= r) {
      bool channel = true;
      for (size_t i = 0; i < s.size(); ++i) {
        const size_t j = i + r - s.size();  // the output axis this dim broadcasts against (right-aligned)
        channel &= s[i] == 1 || (j == 1 && s[i] == out[1]);
      }
      if (channel) k = "channel";
    }
    kind = ++others > 1 ? "other" : k;
  }
  return kind;
}

}  // namespace

BoundaryFacts boundaryFacts(const ir::Graph& g) {
  static const std::set<std::string> moves = {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Cast"};
  auto exact = [&](ir::ValueId v) { return v != ir::kNoValue && g.value(v).exact_type; };
  auto transparent = [&](const ir::Node& n) {
    if (n.domain.empty() && moves.count(n.op)) return true;
    return std::any_of(n.inputs.begin(), n.inputs.end(), exact) || std::any_of(n.outputs.begin(), n.outputs.end(), exact);
  };
  BoundaryFacts b;
  std::set<ir::ValueId> from_input;  // values computed from the model's inputs and constants by transparent nodes only
  for (ir::ValueId v : g.inputs()) from_input.insert(v);
  auto reached = [&](ir::ValueId v) { return v == ir::kNoValue || from_input.count(v) || g.value(v).isConstant(); };
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (!n.inputs.empty() && reached(n.inputs[0])) b.at_input.insert(id);
    if (transparent(n) && std::all_of(n.inputs.begin(), n.inputs.end(), reached))
      for (ir::ValueId o : n.outputs)
        if (o != ir::kNoValue) from_input.insert(o);
  }
  // Values that reach only model outputs, through transparent nodes (in reverse order: readers first).
  const ir::UseMap uses = g.uses();
  std::set<ir::ValueId> to_output;
  const std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
  auto reaches = [&](ir::ValueId v) {
    if (v == ir::kNoValue) return false;
    auto it = uses.find(v);
    if (it == uses.end() || it->second.empty()) return outputs.count(v) != 0;
    for (auto& [reader, slot] : it->second) {
      const ir::Node& r = g.node(reader);
      if (!transparent(r)) return false;
      bool any = false;
      for (ir::ValueId o : r.outputs) {
        if (o == ir::kNoValue || (!uses.count(o) && !outputs.count(o))) continue;  // (an output nothing reads)
        if (!to_output.count(o)) return false;
        any = true;
      }
      if (!any) return false;
    }
    return true;
  };
  const std::vector<ir::NodeId>& order = g.order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::Node& n = g.node(*it);
    for (ir::ValueId o : n.outputs)
      if (reaches(o)) to_output.insert(o);
    if (!n.outputs.empty() && n.outputs[0] != ir::kNoValue && to_output.count(n.outputs[0])) b.at_output.insert(*it);
  }
  return b;
}

Facts nodeFacts(const ir::Graph& g, const ir::Node& n) {
  Facts f;
  // A custom op (plugin) gets the generic facts only: its name may be an ONNX op's, and its attributes (which could
  // be named like a fact) mean what the op says; `op` is its qualified name (domain.name).
  const plugin::CustomOp* custom_op = ops::customOpOf(n);
  const bool custom = custom_op != nullptr;
  const std::string kop = custom ? std::string() : n.op;
  f["op"] = Value(custom ? custom_op->qualifiedName() : n.op);
  f["n_inputs"] = Value(static_cast<int64_t>(n.numInputs()));
  f["n_outputs"] = Value(static_cast<int64_t>(std::count_if(n.outputs.begin(), n.outputs.end(), [](ir::ValueId v) { return v != ir::kNoValue; })));
  static const std::map<std::string, ir::Attr> kNoAttrs;
  for (auto& [k, a] : custom ? kNoAttrs : n.attrs) {
    if (auto v = a.get<int64_t>()) f[k] = Value(*v);
    else if (auto s = a.get<std::string>()) f[k] = Value(*s);
    else if (auto x = a.get<float>()) f[k] = Value(floatFact(*x));
    else if (auto l = a.get<std::vector<int64_t>>()) {
      std::vector<Value> vals;
      for (int64_t x : *l) vals.emplace_back(x);
      f[k] = Value(std::move(vals));
    }
  }
  // ONNX defaults of the string attributes rules test, so a rule sees what the op does, not what the file spelt.
  auto deflt = [&](const char* k, Value v) {
    if (!f.count(k)) f[k] = std::move(v);
  };
  if (kop == "Resize" || kop == "Upsample") {
    deflt("mode", Value(std::string("nearest")));
    deflt("coordinate_transformation_mode", Value(std::string(kop == "Upsample" ? "asymmetric" : "half_pixel")));
    deflt("nearest_mode", Value(std::string(kop == "Upsample" ? "floor" : "round_prefer_floor")));
    deflt("exclude_outside", Value(int64_t{0}));
  }
  if (kop == "Pad") {
    deflt("mode", Value(std::string("constant")));
    // pads_spatial: the pads (an attribute before opset 11, else a constant input) pad only the dims after N and C
    std::vector<int64_t> pads = n.attrInts("pads");
    if (g.opset >= 11) pads = n.hasInput(1) && g.value(n.inputs[1]).isConstant() ? g.value(n.inputs[1]).constant->toInt64() : std::vector<int64_t>{};
    const size_t r = pads.size() / 2;
    const bool axes_ok = g.opset < 11 || !n.hasInput(3);  // (axes given: the pads name other dims)
    f["pads_spatial"] = Value(int64_t{axes_ok && r >= 3 && !pads[0] && !pads[1] && !pads[r] && !pads[r + 1]});
  }
  if (kop == "Gemm") {
    deflt("alpha", Value(floatFact(1.0f)));
    deflt("beta", Value(floatFact(1.0f)));
    deflt("transA", Value(int64_t{0}));
    deflt("transB", Value(int64_t{0}));
  }
  if (kop == "Transpose" && !n.hasAttr("perm") && n.hasInput(0) && g.value(n.inputs[0]).type.rank_known) {
    std::vector<Value> perm;  // the default: the dims reversed
    for (size_t i = g.value(n.inputs[0]).type.shape.size(); i-- > 0;) perm.emplace_back(static_cast<int64_t>(i));
    f["perm"] = Value(std::move(perm));
  }
  {
    int64_t consts = 0;
    for (ir::ValueId v : n.inputs) consts += v != ir::kNoValue && g.value(v).isConstant();
    f["const_inputs"] = Value(consts);
    std::vector<Value> merged;
    for (const std::string& m : n.merged_ops) merged.emplace_back(m);
    f["merged_ops"] = Value(std::move(merged));
  }
  if (isBroadcastingOp(kop) && n.numInputs() >= 1)
    if (std::string b = broadcastKind(g, n); !b.empty()) f["broadcast"] = Value(b);
  if (kop == "Clip" && n.domain.empty()) {  // the bounds, attributes (opset < 11) or constant inputs; absent: ±inf
    if (auto b = ops::clipBounds(g, n)) {
      f["min"] = Value(floatFact(b->first));
      f["max"] = Value(floatFact(b->second));
    }
  }
  const ir::Type* in = n.hasInput(0) ? &g.value(n.inputs[0]).type : nullptr;
  const ir::Type* out = !n.outputs.empty() && n.outputs[0] != ir::kNoValue ? &g.value(n.outputs[0]).type : nullptr;
  if (in && in->isStatic()) {
    shapeFacts(f, in->shape, "in");
    f["batch"] = Value(in->shape.empty() ? int64_t{1} : in->shape[0]);
    f["rank"] = Value(static_cast<int64_t>(in->shape.size()));
  }
  if (out && out->isStatic()) shapeFacts(f, out->shape, "out");
  if (kop == "Slice" && g.opset < 10 && !n.hasAttr("axes")) {
    std::vector<Value> axes;
    for (size_t i = 0; i < n.attrInts("starts").size(); ++i) axes.emplace_back(static_cast<int64_t>(i));
    f["axes"] = Value(std::move(axes));
  }
  if (kop == "Slice" && g.opset >= 10) {  // axes is an input from opset 10 on (default: 0 .. len(starts)-1)
    std::vector<Value> axes;
    const ir::Value* ax = n.hasInput(3) ? &g.value(n.inputs[3]) : nullptr;
    const ir::Value* st = n.hasInput(1) ? &g.value(n.inputs[1]) : nullptr;
    int64_t r = in && in->rank_known ? static_cast<int64_t>(in->shape.size()) : 0;
    if (ax && ax->isConstant()) {
      for (int64_t a : ax->constant->toInt64()) axes.emplace_back(a < 0 && r ? a + r : a);
      f["axes"] = Value(std::move(axes));
    } else if (!ax && st && st->type.rank_known && st->type.shape.size() == 1 && st->type.shape[0] >= 0) {
      for (int64_t i = 0; i < st->type.shape[0]; ++i) axes.emplace_back(i);
      f["axes"] = Value(std::move(axes));
    }
  }
  if ((n.hasAttr("axis") && !custom) || kop == "Softmax" || kop == "LogSoftmax" || kop == "Concat" || kop == "Flatten" || kop == "Split" ||
      kop == "ArgMax" || kop == "ArgMin") {
    int64_t def = kop == "Softmax" || kop == "LogSoftmax" ? (g.opset < 13 ? 1 : -1) : (kop == "Flatten" ? 1 : 0);
    int64_t axis = n.attrInt("axis", def);
    if (in && in->rank_known) ops::normalizeAxis(axis, static_cast<int64_t>(in->shape.size()) + (kop == "Flatten"));
    f["axis"] = Value(axis);
  }
  if (isWindowOp(kop) && in && in->isStatic() && in->shape.size() >= 3) {
    std::vector<int64_t> sp(in->shape.begin() + 2, in->shape.end());
    std::vector<int64_t> kernel;
    if ((kop == "Conv" || kop == "ConvTranspose") && n.hasInput(1) && g.value(n.inputs[1]).type.isStatic()) {
      const Shape& w = g.value(n.inputs[1]).type.shape;
      kernel.assign(w.begin() + 2, w.end());
    }
    ops::Window w = kop == "ConvTranspose" ? ops::resolveTransposedWindow(n, sp, kernel)
                                            : ops::resolveWindow(n, sp, kernel, n.attrInt("ceil_mode", 0) != 0);
    size_t r = sp.size();
    auto hw = [&](const std::vector<int64_t>& v, bool h) { return r >= 2 ? v[h ? r - 2 : r - 1] : (h ? 1 : v[r - 1]); };
    f["kernel_h"] = Value(hw(w.kernel, true));
    f["kernel_w"] = Value(hw(w.kernel, false));
    f["stride_h"] = Value(hw(w.stride, true));
    f["stride_w"] = Value(hw(w.stride, false));
    f["dilation_h"] = Value(hw(w.dilation, true));
    f["dilation_w"] = Value(hw(w.dilation, false));
    f["pad_t"] = Value(r >= 2 ? w.pad_begin[r - 2] : int64_t{0});
    f["pad_l"] = Value(w.pad_begin[r - 1]);
    f["pad_b"] = Value(r >= 2 ? w.pad_end[r - 2] : int64_t{0});
    f["pad_r"] = Value(w.pad_end[r - 1]);
    int64_t kh = hw(w.kernel, true), kw = hw(w.kernel, false);
    int64_t pt = f["pad_t"].asInt(), pl = f["pad_l"].asInt(), pb = f["pad_b"].asInt(), pr = f["pad_r"].asInt();
    std::string kind = "other";
    if (pt == 0 && pl == 0 && pb == 0 && pr == 0) kind = "none";
    else if (kh == kw && pt == (kh - 1) / 2 && pl == pt && pb == pt && pr == pt) kind = "same";
    else if (kh == kw && pt == 0 && pl == 0 && pb == (kh - 1) / 2 && pr == pb) kind = "end";
    f["pad_kind"] = Value(kind);
    int64_t group = n.attrInt("group", 1);
    f["group"] = Value(group);
    f["ceil_mode"] = Value(n.attrInt("ceil_mode", 0));
    f["count_include_pad"] = Value(n.attrInt("count_include_pad", 0));
    int64_t in_c = in->shape[1];
    int64_t out_c = out && out->isStatic() && out->shape.size() >= 2 ? out->shape[1] : 0;
    f["depthwise"] = Value(int64_t{group > 1 && group == in_c && out_c == in_c});
  }
  if ((kop == "Gemm" || kop == "MatMul") && in && in->isStatic() && n.hasInput(1) && g.value(n.inputs[1]).type.isStatic()) {
    Shape a = in->shape, b = g.value(n.inputs[1]).type.shape;
    if (a.size() >= 2 && b.size() >= 2) {
      bool ta = n.attrInt("transA", 0), tb = n.attrInt("transB", 0);
      f["m"] = Value(ta ? a.back() : a[a.size() - 2]);
      f["k"] = Value(ta ? a[a.size() - 2] : a.back());
      f["n"] = Value(tb ? b[b.size() - 2] : b.back());
    }
    f["b_constant"] = Value(int64_t{g.value(n.inputs[1]).isConstant()});
  }
  if ((kop == "Conv" || kop == "ConvTranspose") && n.hasInput(1))  // weights (and bias) the model's own constants
    f["w_constant"] = Value(int64_t{g.value(n.inputs[1]).isConstant() && (!n.hasInput(2) || g.value(n.inputs[2]).isConstant())});
  return f;
}

std::vector<Violation> checkGraph(const ir::Graph& g, const Target& t, const std::map<std::string, std::string>& engines) {
  std::vector<Violation> rows;
  const BoundaryFacts bounds = boundaryFacts(g);
  const ir::UseMap uses = g.uses();
  // Whether every reader of a node's first output is a fully-connected layer (Gemm, MatMul), and there is one.
  auto beforeFc = [&](const ir::Node& n) {
    if (n.outputs.empty() || n.outputs[0] == ir::kNoValue || !uses.count(n.outputs[0])) return false;
    const auto& readers = uses.at(n.outputs[0]);
    return !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](const auto& r) {
      const ir::Node& m = g.node(r.first);
      // (the ai.npuc twins are the same layers with an activation fused)
      return (m.domain.empty() || m.domain == "ai.npuc") && (m.op == "Gemm" || m.op == "MatMul") && r.second == 0;
    });
  };
  // Whether every reader of a node's first output reads it as the data of a Conv, MaxPool or AveragePool.
  auto beforeWindow = [&](const ir::Node& n) {
    if (n.outputs.empty() || n.outputs[0] == ir::kNoValue || !uses.count(n.outputs[0])) return false;
    const auto& readers = uses.at(n.outputs[0]);
    return !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](const auto& r) {
      const ir::Node& m = g.node(r.first);
      return (m.domain.empty() || m.domain == "ai.npuc") && (m.op == "Conv" || m.op == "MaxPool" || m.op == "AveragePool") && r.second == 0;
    });
  };
  // The nodes whose outputs reach a detector's box selection (SSD's DetectionOutput, NonMaxSuppression): its heads.
  std::set<ir::NodeId> detection_heads;
  {
    std::vector<ir::NodeId> work;
    for (ir::NodeId id : g.order())
      if (g.node(id).op == "DetectionOutput" || g.node(id).op == "NonMaxSuppression") work.push_back(id);
    while (!work.empty()) {
      const ir::Node& m = g.node(work.back());
      work.pop_back();
      for (ir::ValueId v : m.inputs)
        if (v != ir::kNoValue && g.value(v).producer != ir::kNoNode && detection_heads.insert(g.value(v).producer).second)
          work.push_back(g.value(v).producer);
    }
  }
  int index = 0;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    std::string op = n.domain.empty() ? n.op : n.domain + "." + n.op;
    // npuc's own ops (the optimizer's fused forms) are checked as the ONNX op they extend.
    const OpSupport* s = t.supportOf(n);
    auto row = [&](const std::string& rid, const std::string& rule, const std::string& actual, const std::string& fix) {
      rows.push_back({index, n.name, op, rid, rule, actual, fix});
    };
    if (const plugin::CustomOp* c = ops::customOpOf(n)) {
      if (!s) {
        std::string names;
        for (auto& [name, e] : t.engines) names += (names.empty() ? "" : ", ") + name + " (" + e.kind + ")";
        row(t.name + ".custom.engine",
            fmt::format("Custom op {} runs on the engine its definition names; target {} has engines {}", op, t.name, names),
            fmt::format("engine '{}' ({})", c->engine(), c->library().file_name),
            "name one of the target's engines (or 'vector' / 'mac') as the op's engine in its definition");
        ++index;
        continue;
      }
      int tensors = c->numInputs();
      for (uint32_t k = 0; k < c->desc().num_params; ++k)
        tensors += c->desc().params[k].type == NPUC_PARAM_TENSOR && n.hasInput(c->desc().params[k].input);
      int outs = 0;
      for (ir::ValueId v : n.outputs) outs += v != ir::kNoValue;
      const int writes = ops::customPackageOutputs(n);
      if (writes < 1 || tensors < 1 || tensors + writes > 8)
        row(t.name + ".custom.layer", "A custom layer of a package writes the op's outputs up to the last the node uses "
            "(none left unnamed before it) and reads 1 to 7 tensor inputs (tensor parameters included), 8 tensors at most",
            fmt::format("{} outputs used, {} written, {} tensor inputs", outs, writes, tensors),
            writes < 1 ? "name every output of the op up to the last one used" : tensors < 1 ? "give the op a tensor input"
                       : "give the op fewer tensor inputs or outputs, or split it into ops of fewer");
    }
    if (!s) {
      row(t.name + ".op", fmt::format("Operator {} is not supported by target {}", op, t.name), op, "");
      ++index;
      continue;
    }
    Facts f;
    try {
      f = nodeFacts(g, n);
    } catch (const Error& e) {
      row(t.name + ".facts", "The node's attributes must be valid", e.message(), "");
      ++index;
      continue;
    }
    f["at_model_input"] = Value(int64_t{bounds.at_input.count(id) != 0});
    f["at_model_output"] = Value(int64_t{bounds.at_output.count(id) != 0});
    f["before_fc"] = Value(int64_t{beforeFc(n)});
    f["before_window"] = Value(int64_t{beforeWindow(n)});
    // (the op writing the node's first input: "" for a graph input or a constant)
    const ir::NodeId producer = n.inputs.empty() || n.inputs[0] == ir::kNoValue ? ir::kNoNode : g.value(n.inputs[0]).producer;
    f["input_op"] = Value(producer == ir::kNoNode ? std::string() : g.node(producer).op);
    // (the op alone reading the node's first output: "" for none, several, or a graph output)
    const std::optional<ir::NodeId> reader =
        n.outputs.empty() || n.outputs[0] == ir::kNoValue ? std::nullopt : ir::soleReader(g, uses, n.outputs[0]);
    f["output_op"] = Value(reader ? g.node(*reader).op : std::string());
    // (the output flattens the input: [N, the rest] with the input's N)
    const ir::Type* fin = n.inputs.empty() || n.inputs[0] == ir::kNoValue ? nullptr : &g.value(n.inputs[0]).type;
    const ir::Type* fout = n.outputs.empty() || n.outputs[0] == ir::kNoValue ? nullptr : &g.value(n.outputs[0]).type;
    f["out_flat"] = Value(int64_t{fin && fout && fin->isStatic() && fout->isStatic() && !fin->shape.empty() &&
                                  fout->shape.size() == 2 && fout->shape[0] == fin->shape[0]});
    f["reaches_detection"] = Value(int64_t{detection_heads.count(id) != 0});
    const auto placed = engines.find(n.name);
    f["engine"] = Value(placed != engines.end() ? placed->second : s->engine);
    applyLookups(*s, f);
    auto check = [&](const std::vector<Rule>& rules, const Facts& facts, const std::string& note) {
      for (const Rule& r : rules) {
        try {
          if (!r.when.empty() && !r.when.eval(facts).truthy()) continue;
          if (r.require.eval(facts).truthy()) continue;
          row(r.id, renderTemplate(r.text, facts), renderTemplate(r.actual, facts) + note, renderTemplate(r.fix, facts));
        } catch (const Error& e) {
          // A fact the rule needs is missing (e.g. a shape that is not static): the rule cannot be shown to hold.
          row(r.id, renderTemplate(r.text, facts), "cannot be checked: " + e.message() + note, "give static input shapes (--input-shape)");
        }
      }
    };
    check(t.graph_rules, f, "");
    check(s->rules, f, "");
    // A fused activation (ai.npuc Conv / Gemm / MatMul with `activation`) is checked by the rules of the op it came
    // from, over its own facts: the layer's output is its input and output.
    if (n.domain == "ai.npuc" && n.hasAttr("activation")) {
      const std::string act = n.attrString("activation", "");
      if (const OpSupport* as = t.findOp(act)) {
        Facts af = activationFacts(g, n, act);
        af["at_model_output"] = f["at_model_output"];
        applyLookups(*as, af);
        check(as->rules, af, fmt::format(" ({} fused into {})", act, n.op));
      } else {
        row(t.name + ".op", fmt::format("Activation {} (fused into {}) is not supported by target {}", act, n.op, t.name), act, "");
      }
    }
    ++index;
  }
  return rows;
}

std::string supportedOpsMarkdown(const Target& t) {
  std::string md = fmt::format("# Supported operators: `{}`\n\n", t.name);
  md += "<!-- Generated by `npuc targets --supported-ops " + t.name + "` from targets/" + t.name +
        ".yaml. Do not edit. -->\n\n";
  if (!t.description.empty()) md += t.description + "\n\n";
  md += fmt::format("Numerics: **{}**. Address space: {} bits.", numericsName(t.numerics), t.address_bits);
  if (!t.inherits.empty()) md += fmt::format(" Inherits: `{}`.", fmt::join(t.inherits, "` → `"));
  md += "\n\n## Engines\n\n| engine | kind | clock (MHz) | MACs/cycle | elements/cycle | overhead (µs) | note |\n|---|---|---|---|---|---|---|\n";
  for (auto& [name, e] : t.engines)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", name, e.kind, e.clock_mhz, e.macs_per_cycle,
                      e.elems_per_cycle, e.overhead_us, e.note);
  const bool relaxable = !t.relaxations.empty();
  auto relaxCell = [&](const Rule& r) { return !relaxable ? std::string() : r.relaxation.empty() ? " — |" : " `" + r.relaxation + "` |"; };
  if (relaxable) {
    md += "\n## Relaxations\n\nBy default `npuc check` and `npuc translate` apply every rule below: they answer what the vendor's "
          "tool would. npuc runs more than that in places; each such place is a named relaxation, whose rules "
          "`--relax NAME[,NAME...]` (or `--relax all`) turns off.\n\n| relaxation | what npuc then allows | rules |\n|---|---|---|\n";
    for (auto& [name, text] : t.relaxations) {
      std::string ids;
      auto add = [&, &relax = name](const std::vector<Rule>& rules) {  // (clang 14 captures no structured binding)
        for (auto& r : rules)
          if (r.relaxation == relax) ids += (ids.empty() ? "`" : ", `") + r.id + "`";
      };
      add(t.graph_rules);
      for (auto& [op, s] : t.ops) add(s.rules);
      md += fmt::format("| `{}` | {} | {} |\n", name, text, ids);
    }
  }
  if (!t.relaxed.empty()) md += fmt::format("\nRelaxed here (their rules are left out below): `{}`.\n", fmt::join(t.relaxed, "`, `"));
  if (!t.graph_rules.empty()) {
    md += relaxable ? "\n## Rules for every layer\n\n| rule | id | relaxation |\n|---|---|---|\n" : "\n## Rules for every layer\n\n| rule | id |\n|---|---|\n";
    for (auto& r : t.graph_rules) md += fmt::format("| {} | `{}` |{}\n", r.text, r.id, relaxCell(r));
  }
  md += t.default_engine.empty() ? "\n## Operators\n\nAn operator not listed here is not supported.\n"
                                  : "\n## Operators\n\nEvery operator npuc implements is supported; those listed here run on the named "
                                    "engine with the rules shown, all others on `" + t.default_engine + "` without restrictions.\n";
  for (auto& [op, s] : t.ops) {
    md += fmt::format("\n### {}\n\nEngine: **{}**.", op, s.engine);
    if (!s.note.empty()) md += " " + s.note;
    md += "\n";
    if (s.rules.empty()) {
      md += "\nNo restrictions.\n";
      continue;
    }
    md += relaxable ? "\n| rule | applies when | id | relaxation |\n|---|---|---|---|\n" : "\n| rule | applies when | id |\n|---|---|---|\n";
    for (auto& r : s.rules)
      md += fmt::format("| {} | {} | `{}` |{}\n", r.text, r.when.empty() ? "always" : "`" + r.when.text() + "`", r.id, relaxCell(r));
  }
  return md;
}

}  // namespace npuc::target
