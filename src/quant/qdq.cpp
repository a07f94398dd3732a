// int8-affine quantization as QuantizeLinear / DequantizeLinear pairs (see qdq.hpp and docs/numerics.md).
#include "quant/qdq.hpp"

#include "quant/bias_correction.hpp"

#include "ir/rewriter.hpp"
#include "kernels/quant.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <stdexcept>

namespace npuc::quant {

void affineInt8(double lo, double hi, float* scale, int* zero_point) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  double s = (hi - lo) / 255.0;
  if (!(s > 0) || !std::isfinite(s)) s = 1.0;  // an all-zero tensor: any scale represents it
  float sf = static_cast<float>(s);
  long zp = std::lround(-128.0 - lo / static_cast<double>(sf));
  *scale = sf;
  *zero_point = static_cast<int>(std::clamp(zp, -128L, 127L));
}

void symmetricInt8(double lo, double hi, float* scale, int* zero_point) {
  double s = std::max(-std::min(lo, 0.0), std::max(hi, 0.0)) / 127.0;
  if (!(s > 0) || !std::isfinite(s)) s = 1.0;  // an all-zero tensor: any scale represents it
  *scale = static_cast<float>(s);
  *zero_point = 0;
}

void radixInt8(double lo, double hi, float* scale, int* zero_point, int* radix) {
  const double m = std::max(-std::min(lo, 0.0), std::max(hi, 0.0));
  int r = 0;
  if (m > 0 && std::isfinite(m)) {
    r = static_cast<int>(std::floor(std::log2(127.0 / m)));
    while (std::ldexp(m, r) > 127.0) --r;  // (log2's rounding)
    r = std::clamp(r, -31, 31);
  }
  *scale = std::ldexp(1.0f, -r);
  *zero_point = 0;
  if (radix) *radix = r;
}

namespace {

Tensor scalarF32(float v) {
  Tensor t(DType::kF32, Shape{});
  t.data<float>()[0] = v;
  return t;
}

Tensor vectorF32(const std::vector<float>& v) {
  Tensor t(DType::kF32, Shape{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

/// The int8 scales of weights w, per channel along `axis` (per tensor: one): max |w| / 127 (1 for an all-zero
/// channel); `range` gets max |w| of every output channel.
std::vector<float> weightScales(const Tensor& w, int64_t axis, bool per_channel, std::vector<float>* range_out = nullptr) {
  const int64_t channels = w.dim(static_cast<int>(axis));  // the output channels, whatever the quantization
  const int64_t C = per_channel ? channels : 1;
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < w.rank(); ++d) inner *= w.dim(d);
  std::vector<float> range(static_cast<size_t>(channels), 0.0f);  // max |w| per output channel
  const float* src = w.data<float>();
  for (int64_t k = 0; k < w.numel(); ++k)
    if (std::isfinite(src[k])) {
      float& r = range[static_cast<size_t>((k / inner) % channels)];
      r = std::max(r, std::fabs(src[k]));
    }
  std::vector<float> amax(static_cast<size_t>(C), 0.0f);
  for (size_t c = 0; c < range.size(); ++c) amax[C == 1 ? 0 : c] = std::max(amax[C == 1 ? 0 : c], range[c]);
  std::vector<float> scale(amax.size());
  for (size_t c = 0; c < amax.size(); ++c) scale[c] = amax[c] > 0 ? amax[c] / 127.0f : 1.0f;
  if (range_out) *range_out = std::move(range);
  return scale;
}

/// A weight as its int8 code stands for it: clamp(round_half_even(w / scale), -127, 127) * scale (NaN: 0).
float int8WeightValue(float w, float scale) {
  const float v = std::nearbyint(w / scale);
  return (std::isnan(v) ? 0.0f : std::clamp(v, -127.0f, 127.0f)) * scale;
}

/// Quantizes constant weights per channel along `axis` (symmetric int8) and puts a DequantizeLinear in front of
/// input `i` of node `n`; returns the per-channel scales (empty when the input is not a float32 constant).
std::vector<float> quantizeWeights(ir::Rewriter& rw, ir::NodeId id, int i, int64_t axis, bool per_channel, QdqReport& rep) {
  ir::Graph& g = rw.graph();
  const Tensor* wp = ir::constantInput(g, g.node(id), i, DType::kF32);
  if (!wp || wp->numel() == 0 || axis >= wp->rank()) return {};
  const Tensor w = *wp;
  std::vector<float> range;
  const std::vector<float> scale = weightScales(w, axis, per_channel, &range);
  const int64_t C = static_cast<int64_t>(scale.size());
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < w.rank(); ++d) inner *= w.dim(d);
  auto chan = [&](int64_t k) { return C == 1 ? 0 : static_cast<size_t>((k / inner) % C); };
  const float* src = w.data<float>();
  std::vector<float> amax(scale.size(), 0.0f);
  for (size_t c = 0; c < range.size(); ++c) amax[C == 1 ? 0 : c] = std::max(amax[C == 1 ? 0 : c], range[c]);
  int zero_channels = 0;
  for (float a : amax) zero_channels += a == 0;
  Tensor q(DType::kI8, w.shape());
  for (int64_t k = 0; k < w.numel(); ++k) {
    float v = std::nearbyint(src[k] / scale[chan(k)]);  // what QuantizeLinear would give: half to even (int8WeightValue)
    q.data<int8_t>()[k] = static_cast<int8_t>(std::isnan(v) ? 0.0f : std::clamp(v, -127.0f, 127.0f));
  }
  const std::string name = g.value(g.node(id).inputs[static_cast<size_t>(i)]).name;
  ir::ValueId qv = g.addConstant(g.uniqueValueName(name + "_quantized"), std::move(q)).id;
  ir::ValueId sv = g.addConstant(g.uniqueValueName(name + "_scale"), C == 1 ? scalarF32(scale[0]) : vectorF32(scale)).id;
  Tensor zp(DType::kI8, C == 1 ? Shape{} : Shape{C});
  std::fill(zp.data<int8_t>(), zp.data<int8_t>() + zp.numel(), int8_t{0});
  ir::ValueId zv = g.addConstant(g.uniqueValueName(name + "_zero_point"), std::move(zp)).id;
  ir::ValueId out = g.addValue(g.uniqueValueName(name + "_dequantized"), ir::makeType(DType::kF32, w.shape())).id;
  ir::Node& dq = rw.addNode("DequantizeLinear", g.uniqueValueName(name + "_DequantizeLinear"), {qv, sv, zv}, {out});
  if (C > 1) dq.attrs["axis"] = ir::Attr(axis);
  g.node(id).inputs[static_cast<size_t>(i)] = out;
  QdqTensor t;
  t.name = name;
  t.kind = "weight";
  float m = *std::max_element(amax.begin(), amax.end());
  t.lo = -m;
  t.hi = m;
  t.scale = *std::max_element(scale.begin(), scale.end());
  t.channels = C;
  if (zero_channels) t.warning = fmt::format("{} of {} channels are all zero", zero_channels, C);
  // A channel whose range is far above its neighbours' (the median channel's): harmless per channel, but it would
  // take most of a per-tensor scale's resolution from the others, and often marks a badly trained or folded layer.
  std::vector<float> nonzero;
  for (float r : range)
    if (r > 0) nonzero.push_back(r);
  if (nonzero.size() >= 4) {
    std::nth_element(nonzero.begin(), nonzero.begin() + static_cast<std::ptrdiff_t>(nonzero.size() / 2), nonzero.end());
    const float median = nonzero[nonzero.size() / 2];
    const size_t widest = static_cast<size_t>(std::max_element(range.begin(), range.end()) - range.begin());
    if (range[widest] > 10.0f * median) {
      const std::string w_note = fmt::format(
          "channel {}'s range {:.4g} is {:.0f}x the median channel's {:.4g} ({})", widest, range[widest], range[widest] / median,
          median, C > 1 ? "quantized per channel, the others keep their resolution" : "per tensor, it costs the other channels resolution");
      t.warning += (t.warning.empty() ? "" : "; ") + w_note;
      rep.warnings.push_back(fmt::format("weight '{}': {}", name, w_note));
    }
  }
  rep.tensors.push_back(t);
  return scale;
}

/// The bias (input i, float32 [C]) as int32 at scale x_scale * w_scale[c], behind a DequantizeLinear.
void quantizeBias(ir::Rewriter& rw, ir::NodeId id, int i, float x_scale, const std::vector<float>& w_scale, QdqReport& rep) {
  ir::Graph& g = rw.graph();
  const Tensor* bp = ir::constantInput(g, g.node(id), i, DType::kF32);
  if (!bp || bp->rank() != 1 || (w_scale.size() != 1 && bp->numel() != static_cast<int64_t>(w_scale.size()))) return;
  const Tensor b = *bp;
  const int64_t C = b.numel();
  std::vector<float> scale(static_cast<size_t>(C));
  Tensor q(DType::kI32, b.shape());
  int saturated = 0;
  for (int64_t c = 0; c < C; ++c) {
    scale[static_cast<size_t>(c)] = x_scale * w_scale[w_scale.size() == 1 ? 0 : static_cast<size_t>(c)];
    double v = std::nearbyint(static_cast<double>(b.data<float>()[c]) / scale[static_cast<size_t>(c)]);
    if (std::isnan(v)) v = 0;
    if (v > 2147483647.0 || v < -2147483647.0) ++saturated;
    q.data<int32_t>()[c] = static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
  }
  const std::string name = g.value(g.node(id).inputs[static_cast<size_t>(i)]).name;
  if (saturated) {
    // Saturated, the bias would be destroyed (a layer whose input range is tiny: x_scale * w_scale far below the
    // bias values): it stays float32, and so does its layer (an integer layer needs an int32 bias).
    QdqTensor t;
    t.name = name;
    t.kind = "bias";
    t.scale = *std::max_element(scale.begin(), scale.end());
    t.channels = C;
    t.warning = fmt::format("kept in float32: {} of {} values would saturate int32 at scale {:.3g} (the layer's input "
                            "range is narrow); the layer stays float", saturated, C, t.scale);
    rep.warnings.push_back(fmt::format("bias '{}': {}", name, t.warning));
    rep.tensors.push_back(t);
    return;
  }
  ir::ValueId qv = g.addConstant(g.uniqueValueName(name + "_quantized"), std::move(q)).id;
  ir::ValueId sv = g.addConstant(g.uniqueValueName(name + "_scale"), vectorF32(scale)).id;
  Tensor zp(DType::kI32, Shape{C});
  std::fill(zp.data<int32_t>(), zp.data<int32_t>() + C, 0);
  ir::ValueId zv = g.addConstant(g.uniqueValueName(name + "_zero_point"), std::move(zp)).id;
  ir::ValueId out = g.addValue(g.uniqueValueName(name + "_dequantized"), ir::makeType(DType::kF32, b.shape())).id;
  ir::Node& dq = rw.addNode("DequantizeLinear", g.uniqueValueName(name + "_DequantizeLinear"), {qv, sv, zv}, {out});
  dq.attrs["axis"] = ir::Attr(int64_t{0});
  g.node(id).inputs[static_cast<size_t>(i)] = out;
  QdqTensor t;
  t.name = name;
  t.kind = "bias";
  t.scale = *std::max_element(scale.begin(), scale.end());
  t.channels = C;
  rep.tensors.push_back(t);
}

/// Whether a device fuses the one reader of `v` into v's producer (its output is then never stored).
bool fusedActivationFollows(const ir::Graph& g, const ir::UseMap& uses, ir::ValueId v) {
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end()) return false;
  auto it = uses.find(v);
  if (it == uses.end() || it->second.size() != 1) return false;
  const ir::Node& r = g.node(it->second[0].first);
  const ir::Node& p = g.node(g.value(v).producer);
  // (a BatchNormalization no Conv absorbed: translate makes it a depthwise 1x1 convolution, its activation fused)
  bool layer = p.op == "Conv" || p.op == "Gemm" || p.op == "MatMul" || p.op == "Add" || p.op == "ConvTranspose" ||
               p.op == "BatchNormalization";
  return layer && r.domain.empty() && (r.op == "Relu" || r.op == "Clip");
}

/// Ops that only move or select int8 values (their output's codes are input codes): with the input's scale and
/// zero point on the output they run on int8 data as they are.
bool movesValues(const ir::Node& n) {
  static const std::set<std::string> ops = {"MaxPool", "Reshape",   "Flatten", "Transpose", "Squeeze",
                                            "Unsqueeze", "Identity", "Slice",   "Gather"};
  return n.domain.empty() && ops.count(n.op) && !n.inputs.empty() && n.outputs.size() >= 1;
}

/// Ranges shared so that data movement stays in int8 (as TensorRT and ONNX Runtime's quantizers do):
/// - a Concat whose inputs are stored activations read by it alone gives them its own range (the union of theirs),
///   so the concatenation is a copy of int8 codes;
/// - an op that moves values (MaxPool, Reshape, Flatten, …) gives its output its input's range, in graph order, so
///   chains of them share one.
void shareRanges(const ir::Graph& g, const ir::UseMap& uses, std::map<ir::ValueId, Range>& ranges) {
  std::set<ir::ValueId> from_concat;
  const std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (n.op != "Concat" || !n.domain.empty() || n.outputs.size() != 1 || !ranges.count(n.outputs[0])) continue;
    bool ok = true;
    for (ir::ValueId v : n.inputs) {
      auto u = uses.find(v);
      ok &= ranges.count(v) && !outputs.count(v) && u != uses.end() && u->second.size() == 1;
    }
    if (!ok) continue;
    for (ir::ValueId v : n.inputs) {
      ranges[v] = ranges.at(n.outputs[0]);
      from_concat.insert(v);
    }
  }
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (!movesValues(n) || !ranges.count(n.inputs[0]) || !ranges.count(n.outputs[0]) || from_concat.count(n.outputs[0])) continue;
    ranges[n.outputs[0]] = ranges.at(n.inputs[0]);
  }
}

}  // namespace

int productBiasesAsGemms(ir::Graph& g, const std::set<std::string>& keep, std::map<std::string, std::string>* stands_for) {
  ir::Rewriter rw(g);
  const ir::UseMap uses = g.uses();
  const std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
  int n_rewritten = 0;
  const std::vector<ir::NodeId> order = g.order();  // (a copy: the rewrite removes and adds nodes)
  for (ir::NodeId id : order) {
    if (!g.hasNode(id)) continue;
    const ir::Node& mm = g.node(id);
    if (mm.op != "MatMul" || !mm.domain.empty() || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
    const ir::Value &x = g.value(mm.inputs[0]), &w = g.value(mm.inputs[1]), &y = g.value(mm.outputs[0]);
    if (x.isConstant() || !w.isConstant() || w.constant->dtype() != DType::kF32 || w.constant->rank() != 2) continue;
    if (!x.type.isStatic() || x.type.dtype != DType::kF32 || x.type.shape.size() < 2 || outputs.count(y.id)) continue;
    auto u = uses.find(y.id);
    if (u == uses.end() || u->second.size() != 1) continue;
    const ir::Node& add = g.node(u->second[0].first);
    if (add.op != "Add" || !add.domain.empty() || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    if (keep.count(mm.name) || keep.count(add.name) || keep.count(y.name) || keep.count(g.value(add.outputs[0]).name)) continue;
    const ir::Value& b = g.value(add.inputs[add.inputs[0] == y.id ? 1 : 0]);
    const int64_t K = w.constant->dim(0), N = w.constant->dim(1);
    // The bias: a float constant of N values along the last axis only ([N], [1, N], [1, 1, N], …, of rank <= y's).
    if (!b.isConstant() || b.constant->dtype() != DType::kF32 || b.constant->numel() != N || b.constant->rank() < 1 ||
        b.constant->rank() > static_cast<int64_t>(y.type.shape.size()) || b.constant->shape().back() != N)
      continue;
    const Shape out_shape = g.value(add.outputs[0]).type.shape;  // (a copy: the value may be removed below)
    if (out_shape != y.type.shape) continue;
    const Shape xs = x.type.shape;
    const int64_t R = shapeNumel(xs) / K;
    const std::string name = mm.name;
    const ir::ValueId xid = x.id, wid = w.id, out = add.outputs[0];
    Tensor bias = b.constant->reshaped({N});
    const ir::ValueId bid = g.addConstant(g.uniqueValueName(b.name + "/gemm_bias"), std::move(bias)).id;
    const ir::ValueId product = y.id;
    rw.eraseNode(add.id);
    rw.eraseNode(id);
    g.removeValue(product);  // (the MatMul's output: nothing produces or reads it now)
    // (a plain ONNX Gemm, no npuc attribute: --save-qdq-onnx writes this graph as standard ONNX)
    if (xs.size() == 2) {
      rw.addNode("Gemm", name, {xid, wid, bid}, {out});
    } else {
      const ir::ValueId rows_shape = g.addConstant(g.uniqueValueName(name + "/rows_shape"), Tensor::fromVector<int64_t>({2}, {R, K})).id;
      const ir::ValueId out_shape_c = g.addConstant(g.uniqueValueName(name + "/out_shape"),
                                                    Tensor::fromVector<int64_t>({static_cast<int64_t>(out_shape.size())}, out_shape)).id;
      const ir::ValueId rows = g.addValue(g.uniqueValueName(g.value(xid).name + "/rows"), ir::Type{DType::kF32, {R, K}, true}).id;
      const ir::ValueId prod = g.addValue(g.uniqueValueName(name + "/gemm"), ir::Type{DType::kF32, {R, N}, true}).id;
      rw.addNode("Reshape", name + "/to_rows", {xid, rows_shape}, {rows});
      rw.addNode("Gemm", name, {rows, wid, bid}, {prod});
      // A Relu / Clip that is the sum's only reader moves before the Reshape (they commute), so it stays the product's
      // activation (no int8 rounding between them, as after a Conv).
      ir::ValueId last = prod, final_out = out;
      if (auto ru = uses.find(out); ru != uses.end() && ru->second.size() == 1 && !outputs.count(out)) {
        const ir::Node& act = g.node(ru->second[0].first);
        const bool clip_ok = act.op == "Clip" && std::all_of(act.inputs.begin() + 1, act.inputs.end(), [&](ir::ValueId v) {
                               return v == ir::kNoValue || g.value(v).isConstant();
                             });
        if (act.domain.empty() && act.outputs.size() == 1 && act.inputs[0] == out && (act.op == "Relu" || clip_ok) && !keep.count(act.name) &&
            !keep.count(g.value(act.outputs[0]).name)) {
          const ir::ValueId acted = g.addValue(g.uniqueValueName(name + "/gemm_" + act.op), ir::Type{DType::kF32, {R, N}, true}).id;
          std::vector<ir::ValueId> ins = act.inputs;
          ins[0] = prod;
          const std::string act_name = act.name, act_op = act.op;
          const auto act_attrs = act.attrs;
          final_out = act.outputs[0];
          rw.eraseNode(act.id);
          rw.addNode(act_op, act_name, ins, {acted}).attrs = act_attrs;
          g.removeValue(out);  // (the Add's output: the activation now reads the product)
          last = acted;
        }
      }
      rw.addNode("Reshape", name + "/from_rows", {last, out_shape_c}, {final_out});
      if (stands_for) (*stands_for)[g.value(last).name] = g.value(final_out).name;  // (the same values, as rows)
    }
    ++n_rewritten;
  }
  rw.finish();
  return n_rewritten;
}

QdqReport quantizeToQdq(ir::Graph& g, const std::map<std::string, TensorStats>& stats, const QdqOptions& o) {
  QdqReport rep;
  ir::Rewriter rw(g);
  const bool per_axis = g.opset >= 13;
  if (o.per_channel && !per_axis)
    rep.warnings.push_back(fmt::format("opset {} has no per-axis DequantizeLinear (13 on): weights are quantized per tensor", g.opset));
  const bool per_channel = o.per_channel && per_axis;

  // Per-layer overrides: every name must be the graph's.
  std::set<ir::NodeId> kept;
  for (const std::string& name : o.keep_float) {
    bool found = false;
    for (ir::NodeId id : g.order()) {
      const ir::Node& n = g.node(id);
      if (n.name != name) continue;
      found = true;
      if (!(n.op == "Conv" || n.op == "Gemm" || n.op == "MatMul"))
        fail(ErrorCode::kInvalidArgument, "--keep-float '{}': a {} has no weights to keep in float (layers with weights: "
             "Conv, Gemm, MatMul)", name, n.op);
      kept.insert(id);
    }
    if (!found) fail(ErrorCode::kInvalidArgument, "--keep-float '{}': the model has no node of that name", name);
  }
  for (const auto& [name, r] : o.ranges) {
    if (!g.findValue(name)) fail(ErrorCode::kInvalidArgument, "--range '{}': the model has no tensor of that name", name);
    if (!(r.first <= r.second) || !std::isfinite(r.first) || !std::isfinite(r.second))
      fail(ErrorCode::kInvalidArgument, "--range '{}': [{}, {}] is not a finite range", name, r.first, r.second);
  }

  // The layers' output names as the bias correction's means know them (a graph output is renamed below).
  std::map<ir::NodeId, std::string> first_output;
  if (o.bias_means)
    for (ir::NodeId id : g.order())
      if (!g.node(id).outputs.empty() && g.node(id).outputs[0] != ir::kNoValue) first_output[id] = g.value(g.node(id).outputs[0]).name;
  // Activations first: each stored float tensor becomes Q -> DQ, its readers reading the dequantized copy.
  std::map<ir::ValueId, float> act_scale;  // original value -> its scale
  std::vector<ir::ValueId> acts;
  for (ir::ValueId v : g.inputs())
    if (g.value(v).type.dtype == DType::kF32) acts.push_back(v);
  const ir::UseMap uses = g.uses();
  for (ir::NodeId id : g.order())
    for (ir::ValueId v : g.node(id).outputs)
      if (v != ir::kNoValue && g.value(v).type.dtype == DType::kF32 && !fusedActivationFollows(g, uses, v)) acts.push_back(v);
  std::map<ir::ValueId, Range> ranges;
  for (ir::ValueId v : acts) {
    const std::string& name = g.value(v).name;
    auto st = stats.find(name);
    if (st == stats.end()) fail(ErrorCode::kInternal, "no calibration statistics for tensor '{}'", name);
    ranges[v] = rangeOf(st->second, o.method, o.percentile);
  }
  shareRanges(g, uses, ranges);
  for (ir::ValueId v : acts)  // forced ranges win over calibration and sharing
    if (auto f = o.ranges.find(g.value(v).name); f != o.ranges.end())
      ranges[v] = Range{std::min(f->second.first, 0.0), std::max(f->second.second, 0.0), ""};  // (holding 0)
  for (ir::ValueId v : acts) {
    const std::string name = g.value(v).name;
    const Range& r = ranges.at(v);
    float scale;
    int zp;
    switch (o.scheme) {
      case ActivationScheme::kAffine: affineInt8(r.lo, r.hi, &scale, &zp); break;
      case ActivationScheme::kRadix: radixInt8(r.lo, r.hi, &scale, &zp, nullptr); break;
      case ActivationScheme::kSymmetric: symmetricInt8(r.lo, r.hi, &scale, &zp); break;
    }
    ir::Type ft = g.value(v).type;
    ir::ValueId dq_out = g.addValue(g.uniqueValueName(name + "_dequantized"), ft).id;
    // The readers read the dequantized copy (the Q node, added below, keeps reading v). A graph output passes
    // its name on to the copy (the model's interface stays), v being renamed.
    if (std::count(g.outputs().begin(), g.outputs().end(), v)) {
      rw.replaceAllUses(v, dq_out);
    } else if (auto it = uses.find(v); it != uses.end()) {
      for (auto [reader, k] : it->second) g.node(reader).inputs[static_cast<size_t>(k)] = dq_out;
    }
    const std::string vname = g.value(v).name;
    Tensor zpt(DType::kI8, Shape{});
    zpt.data<int8_t>()[0] = static_cast<int8_t>(zp);
    ir::ValueId sv = g.addConstant(g.uniqueValueName(vname + "_scale"), scalarF32(scale)).id;
    ir::ValueId zv = g.addConstant(g.uniqueValueName(vname + "_zero_point"), std::move(zpt)).id;
    ir::ValueId q = g.addValue(g.uniqueValueName(vname + "_quantized"), ir::makeType(DType::kI8, ft.shape)).id;
    g.value(q).quant = ir::Quantization{scale, zp, name};  // (the model's name: a graph output's v is renamed above)
    rw.addNode("QuantizeLinear", g.uniqueValueName(vname + "_QuantizeLinear"), {v, sv, zv}, {q});
    rw.addNode("DequantizeLinear", g.uniqueValueName(vname + "_DequantizeLinear"), {q, sv, zv}, {dq_out});
    act_scale[dq_out] = scale;
    QdqTensor t;
    t.name = name;
    t.kind = "activation";
    t.lo = r.lo;
    t.hi = r.hi;
    t.scale = scale;
    t.zero_point = zp;
    t.dequantized = dq_out;
    t.warning = r.warning;
    if (o.ranges.count(name)) t.warning = "range forced by --range";
    if (!r.warning.empty()) rep.warnings.push_back(fmt::format("tensor '{}': {}", name, r.warning));
    rep.tensors.push_back(t);
  }

  // Weights and biases of the MAC layers.
  std::vector<ir::NodeId> layers;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    // ai.npuc: the optimizer's Conv / Gemm with a fused activation (their inputs are ONNX's).
    if ((n.domain.empty() || n.domain == "ai.npuc") && (n.op == "Conv" || n.op == "Gemm" || n.op == "MatMul") && !kept.count(id))
      layers.push_back(id);
  }
  for (ir::NodeId id : layers) {
    const ir::Node& n = g.node(id);
    int64_t axis = 0;
    if (n.op == "Gemm") axis = ops::attrInt(n, "transB") ? 0 : 1;
    if (n.op == "MatMul") {
      const Tensor* b = ir::constantInput(g, n, 1, DType::kF32);
      if (!b || b->rank() != 2) continue;
      axis = 1;
    }
    // Bias correction (docs/calibration.md): the mean shift the int8 weights cause on each output channel, measured
    // with the float model's input means, is taken out of the float bias before it is quantized.
    if (o.bias_means && correctable(g, n)) {
      auto m = o.bias_means->by_output.find(first_output[id]);
      const Tensor* w = ir::constantInput(g, n, 1, DType::kF32);
      if (m != o.bias_means->by_output.end() && w && w->numel() > 0 && axis < w->rank()) {
        const std::vector<float> sc = weightScales(*w, axis, per_channel);
        const ChannelRounding round = [&](float v, int64_t ch) { return int8WeightValue(v, sc[sc.size() == 1 ? 0 : static_cast<size_t>(ch)]); };
        if (correctLayerBias(g, id, m->second, round)) ++rep.bias_corrected;
      }
    }
    std::vector<float> ws = quantizeWeights(rw, id, 1, axis, per_channel, rep);
    if (ws.empty() || n.op == "MatMul" || !g.node(id).hasInput(2) || !per_axis) continue;
    auto xs = act_scale.find(g.node(id).inputs[0]);
    if (xs == act_scale.end()) continue;  // an unquantized operand: the bias stays float
    if (n.op == "Gemm" && (ops::attrFloat(n, "alpha") != 1.0f || ops::attrFloat(n, "beta") != 1.0f || ops::attrInt(n, "transA")))
      continue;
    quantizeBias(rw, id, 2, xs->second, ws, rep);
  }
  rw.finish();
  return rep;
}

namespace {

/// A per-tensor (or per-axis) DequantizeLinear / QuantizeLinear node's constant operands.
struct QParams {
  const ir::Node* node = nullptr;
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  const Tensor* data = nullptr;  // input 0 when it is a constant (weights, bias)
};

std::optional<QParams> qparams(const ir::Graph& g, ir::ValueId v, const char* op) {
  if (v == ir::kNoValue || g.value(v).producer == ir::kNoNode) return std::nullopt;
  const ir::Node& n = g.node(g.value(v).producer);
  if (n.op != op || !n.domain.empty() || !n.hasInput(1)) return std::nullopt;
  // (no zero point: 0, ONNX's default; the integer type is then the default's too, which the callers check)
  const ir::Value& s = g.value(n.inputs[1]);
  const ir::Value* z = n.hasInput(2) ? &g.value(n.inputs[2]) : nullptr;
  if (!s.isConstant() || (z && !z->isConstant()) || s.constant->dtype() != DType::kF32) return std::nullopt;
  QParams q;
  q.node = &n;
  for (double d : s.constant->toDouble()) q.scale.push_back(static_cast<float>(d));
  q.zero_point = z ? z->constant->toInt64() : std::vector<int64_t>(q.scale.size(), 0);
  const ir::Value& x = g.value(n.inputs[0]);
  if (x.isConstant()) q.data = &*x.constant;
  return q;
}

/// How a layer's output y reaches int8: an optional fused activation (the layer's own `act`, or a Relu / Clip node
/// that is y's only reader, as in a QDQ model as exported) then a per-tensor int8 QuantizeLinear that is the only
/// reader; the activation becomes the clamp [lo, hi] in y's integer domain.
struct QuantizedOutput {
  const ir::Node* act_node = nullptr;  // the Relu / Clip node fused, if any
  const ir::Node* q = nullptr;         // the QuantizeLinear
  float scale = 0;
  int64_t zero_point = 0, lo = -128, hi = 127;
};

std::optional<QuantizedOutput> quantizedOutput(const ir::Graph& g, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs,
                                               ir::ValueId y, std::string act, float act_lo, float act_hi) {
  auto u = uses.find(y);
  if (outputs.count(y) || u == uses.end() || u->second.size() != 1) return std::nullopt;
  QuantizedOutput o;
  if (const ir::Node& r = g.node(u->second[0].first); act.empty() && r.domain.empty() && (r.op == "Relu" || r.op == "Clip") &&
                                                      r.outputs.size() == 1 && !outputs.count(r.outputs[0])) {
    auto ru = uses.find(r.outputs[0]);
    if (ru == uses.end() || ru->second.size() != 1) return std::nullopt;
    if (r.op == "Clip") {
      auto b = ops::clipBounds(g, r);
      if (!b) return std::nullopt;
      act_lo = b->first;
      act_hi = b->second;
    }
    act = r.op;
    o.act_node = &r;
    u = ru;
  }
  const ir::Node& qn = g.node(u->second[0].first);
  if (qn.op != "QuantizeLinear" || !qn.domain.empty() || qn.outputs.size() != 1) return std::nullopt;
  auto q = qparams(g, qn.outputs[0], "QuantizeLinear");
  if (!q || q->scale.size() != 1 || g.value(qn.outputs[0]).type.dtype != DType::kI8) return std::nullopt;
  o.q = &qn;
  o.scale = q->scale[0];
  if (!(o.scale > 0) || !std::isfinite(o.scale)) return std::nullopt;
  o.zero_point = q->zero_point[0];
  if (act == "Relu") {
    o.lo = o.zero_point;
  } else if (act == "Clip") {
    // (a missing bound is ±FLT_MAX: clamped before rounding)
    o.lo = std::max<int64_t>(-128, o.zero_point + std::lround(std::clamp(act_lo / o.scale, -512.0f, 512.0f)));
    o.hi = std::min<int64_t>(127, o.zero_point + std::lround(std::clamp(act_hi / o.scale, -512.0f, 512.0f)));
    if (o.lo > o.hi) return std::nullopt;
  } else if (!act.empty()) {
    return std::nullopt;
  }
  return o;
}

/// An int8 activation read through a per-tensor DequantizeLinear: its scale, zero point and the int8 value.
std::optional<QParams> int8Activation(const ir::Graph& g, ir::ValueId v) {
  auto x = qparams(g, v, "DequantizeLinear");
  if (!x || x->data || x->scale.size() != 1 || g.value(x->node->inputs[0]).type.dtype != DType::kI8) return std::nullopt;
  if (!(x->scale[0] > 0) || !std::isfinite(x->scale[0])) return std::nullopt;
  return x;
}

/// Replaces a fused run — the layer `id`, the activation node `qo` found after it, its QuantizeLinear — by one node
/// `op` (named as the layer) that writes `out`: by default the QuantizeLinear's int8 output (the caller otherwise
/// connects `out` to it).
void replaceRun(ir::Graph& g, ir::Rewriter& rw, ir::NodeId id, const QuantizedOutput& qo, const std::string& op,
                const std::string& domain, const std::vector<ir::ValueId>& ins, std::map<std::string, ir::Attr> attrs,
                ir::ValueId out = ir::kNoValue) {
  const std::string name = g.node(id).name;
  if (out == ir::kNoValue) out = qo.q->outputs[0];
  const ir::NodeId act = qo.act_node ? qo.act_node->id : ir::kNoNode;
  g.removeNode(qo.q->id);
  if (act != ir::kNoNode) rw.eraseNode(act);
  rw.eraseNode(id);
  rw.addNode(op, name, ins, {out}, domain).attrs = std::move(attrs);
}

/// Calls fuse(rw, uses, outputs, node) for each node of `g` in order (skipping nodes an earlier call removed) and
/// applies the rewrites; returns how many calls fused (returned true). The fusers below are its bodies.
template <class F>
int fuseEach(ir::Graph& g, F&& fuse) {
  ir::Rewriter rw(g);
  const ir::UseMap uses = g.uses();
  const std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
  int fused = 0;
  const std::vector<ir::NodeId> order = g.order();  // (a copy: fusing removes and adds nodes)
  for (ir::NodeId id : order) {
    if (!g.hasNode(id)) continue;
    fused += fuse(rw, uses, outputs, id) ? 1 : 0;
  }
  rw.finish();
  return fused;
}

}  // namespace

void annotateQuantized(ir::Graph& g) {
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (n.op != "QuantizeLinear" || !n.domain.empty() || n.outputs.size() != 1 || g.value(n.outputs[0]).quant) continue;
    auto q = qparams(g, n.outputs[0], "QuantizeLinear");
    if (!q || q->scale.size() != 1 || g.value(n.outputs[0]).type.dtype != DType::kI8) continue;
    g.value(n.outputs[0]).quant = ir::Quantization{q->scale[0], static_cast<int32_t>(q->zero_point[0]), g.value(n.inputs[0]).name};
  }
}

namespace {

/// What an integer product (ai.npuc QConv) needs of a Conv / Gemm `c` of a QDQ graph: an int8 input, int8 weights
/// per output channel (or per tensor) with zero point 0 whose output channels lie along `axis` of a rank-`rank`
/// weight tensor, an optional int32 bias at x_scale * w_scale[m], an int32 accumulation that cannot overflow, an
/// int8 output (+ a Relu / Clip) and the requantization multipliers; nullopt where any of it does not hold.
struct IntegerProduct {
  QParams x, w;
  std::optional<QParams> b;
  QuantizedOutput qo;
  int64_t M = 0, K = 0;
  std::vector<int64_t> mult, shift;
};

std::optional<IntegerProduct> integerProduct(const ir::Graph& g, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs,
                                             const ir::Node& c, int64_t axis, int64_t rank) {
  IntegerProduct p;
  auto x = int8Activation(g, c.inputs[0]);
  auto w = qparams(g, c.inputs[1], "DequantizeLinear");
  if (!x) return std::nullopt;
  if (!w || !w->data || w->data->dtype() != DType::kI8 || w->data->rank() != rank) return std::nullopt;
  if (std::any_of(w->zero_point.begin(), w->zero_point.end(), [](int64_t z) { return z != 0; })) return std::nullopt;
  const int64_t M = w->data->dim(axis), K = w->data->numel() / std::max<int64_t>(M, 1);
  if (w->scale.size() != 1 && static_cast<int64_t>(w->scale.size()) != M) return std::nullopt;
  // The weights' scales must be per output channel, finite and positive.
  if (w->scale.size() > 1) {  // (the axis as written: negative ones count from the end)
    int64_t waxis = w->node->attrInt("axis", 1);
    if (!ops::normalizeAxis(waxis, rank) || waxis != axis) return std::nullopt;
  }
  if (std::any_of(w->scale.begin(), w->scale.end(), [](float v) { return !(v > 0) || !std::isfinite(v); })) return std::nullopt;
  if (c.hasInput(2)) {
    p.b = qparams(g, c.inputs[2], "DequantizeLinear");
    if (!p.b || !p.b->data || p.b->data->dtype() != DType::kI32 || p.b->data->numel() != M) return std::nullopt;
    bool exact_scale = true;  // the bias must be at x_scale * w_scale[m] (quantizeToQdq writes it so)
    for (int64_t m = 0; m < M; ++m) {
      double want = double(x->scale[0]) * w->scale[w->scale.size() == 1 ? 0 : static_cast<size_t>(m)];
      double got = p.b->scale[p.b->scale.size() == 1 ? 0 : static_cast<size_t>(m)];
      exact_scale &= std::fabs(got - want) <= 1e-6 * want;
    }
    if (!exact_scale || std::any_of(p.b->zero_point.begin(), p.b->zero_point.end(), [](int64_t z) { return z != 0; }))
      return std::nullopt;
  }
  // int32 accumulation: |bias| + K * 255 * 128 + 128 (the zero point added after requantization) must stay below
  // 2^31 (docs/numerics.md).
  int64_t max_bias = 0;
  if (p.b)
    for (int64_t m = 0; m < M; ++m) max_bias = std::max<int64_t>(max_bias, std::llabs(static_cast<int64_t>(p.b->data->data<int32_t>()[m])));
  if (max_bias + K * 255 * 128 + 128 > INT32_MAX) return std::nullopt;
  auto qo = quantizedOutput(g, uses, outputs, c.outputs[0], c.attrString("activation", ""),
                            c.attrFloat("activation_alpha", 0.0f), c.attrFloat("activation_beta", 6.0f));
  if (!qo) return std::nullopt;
  for (size_t m = 0; m < w->scale.size(); ++m) {
    try {
      kernels::Multiplier mm = kernels::quantizeMultiplier(double(x->scale[0]) * w->scale[m] / qo->scale);
      p.mult.push_back(mm.m);
      p.shift.push_back(mm.shift);
    } catch (const std::invalid_argument&) {
      return std::nullopt;
    }
  }
  p.x = *x;
  p.w = *w;
  p.qo = *qo;
  p.M = M;
  p.K = K;
  return p;
}

/// An integer layer's attribute "fused" (opexp: the ONNX ops it stands for): those in `attrs` already (e.g. MatMul +
/// Add), else `op`; then the activation node fused with it, if any.
ir::Attr fusedOps(const std::map<std::string, ir::Attr>& attrs, const std::string& op, const QuantizedOutput& qo) {
  auto it = attrs.find("fused");
  const std::vector<std::string>* had = it != attrs.end() ? it->second.get<std::vector<std::string>>() : nullptr;
  std::vector<std::string> fused = had ? *had : std::vector<std::string>{op};
  if (qo.act_node) fused.push_back(qo.act_node->op);
  return ir::Attr(fused);
}

/// The attributes an integer layer of two int8 operands (QAdd, QMatMul) shares: the zero points, the output clamp, and
/// the ONNX ops it stands for (fusedOps of n).
std::map<std::string, ir::Attr> twoOperandAttrs(int32_t za, int32_t zb, int32_t zy, int32_t lo, int32_t hi, const ir::Node& n,
                                                const QuantizedOutput& qo) {
  std::map<std::string, ir::Attr> attrs;
  attrs["a_zero_point"] = ir::Attr(int64_t{za});
  attrs["b_zero_point"] = ir::Attr(int64_t{zb});
  attrs["y_zero_point"] = ir::Attr(int64_t{zy});
  attrs["y_min"] = ir::Attr(int64_t{lo});
  attrs["y_max"] = ir::Attr(int64_t{hi});
  attrs["fused"] = fusedOps(n.attrs, n.op, qo);
  return attrs;
}

/// A QConv's attributes besides its geometry: zero points, clamp, multipliers, and the ONNX ops it stands for.
void productAttrs(const IntegerProduct& p, const std::string& op, std::map<std::string, ir::Attr>& attrs) {
  attrs["x_zero_point"] = ir::Attr(p.x.zero_point[0]);
  attrs["y_zero_point"] = ir::Attr(p.qo.zero_point);
  attrs["y_min"] = ir::Attr(p.qo.lo);
  attrs["y_max"] = ir::Attr(p.qo.hi);
  attrs["multipliers"] = ir::Attr(p.mult);
  attrs["shifts"] = ir::Attr(p.shift);
  attrs["fused"] = fusedOps(attrs, op, p.qo);
}

}  // namespace

int fuseIntegerConvs(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& c = g.node(id);
    if (c.op != "Conv" || !(c.domain.empty() || c.domain == "ai.npuc") || c.outputs.size() != 1) return false;
    auto p = integerProduct(g, uses, outputs, c, 0, 4);
    if (!p) return false;
    std::vector<ir::ValueId> ins = {p->x.node->inputs[0], p->w.node->inputs[0]};
    if (p->b) ins.push_back(p->b->node->inputs[0]);
    std::map<std::string, ir::Attr> attrs;
    for (const char* a : {"group", "kernel_shape", "strides", "dilations", "pads", "auto_pad", "fused", "merged_nodes"})
      if (c.hasAttr(a)) attrs[a] = c.attrs.at(a);
    productAttrs(*p, "Conv", attrs);
    replaceRun(g, rw, id, p->qo, "QConv", "ai.npuc", ins, std::move(attrs));
    return true;
  });
}

int fuseIntegerGemms(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    const bool matmul = n.op == "MatMul";  // (a MatMul by a 2-D constant is a Gemm without transB and bias)
    if (!(n.op == "Gemm" || matmul) || !(n.domain.empty() || n.domain == "ai.npuc") || n.outputs.size() != 1) return false;
    if (matmul && n.inputs.size() != 2) return false;
    if (n.attrInt("transA", 0) != 0 || n.attrFloat("alpha", 1.0f) != 1.0f || n.attrFloat("beta", 1.0f) != 1.0f) return false;
    const bool transB = n.attrInt("transB", 0) != 0;
    auto p = integerProduct(g, uses, outputs, n, transB ? 0 : 1, 2);
    if (!p) return false;
    // The bias must add one value per output column: C of shape [M] or [1, M] (a C of [M, 1] adds one per row).
    if (p->b) {
      const Shape& cs = p->b->data->shape();
      if (!(cs.size() == 1 || (cs.size() == 2 && cs[0] == 1))) return false;
    }
    // x [N, K]; a MatMul's x may have leading dimensions ([..., R, K] by [K, M]: every row of every matrix is one
    // product row, N = their count), which its output [..., R, M] keeps.
    const ir::Type xt = g.value(p->x.node->inputs[0]).type;
    if (!xt.isStatic() || xt.shape.size() < 2 || (!matmul && xt.shape.size() != 2) || xt.shape.back() != p->K) return false;
    const int64_t M = p->M, K = p->K, N = shapeNumel(xt.shape) / std::max<int64_t>(K, 1);
    Shape y_shape = xt.shape;
    y_shape.back() = M;
    // (copies: adding values below may move the graph's values)
    const std::string x_name = g.value(p->x.node->inputs[0]).name, y_name = g.value(p->qo.q->outputs[0]).name;
    const std::optional<ir::Quantization> x_quant = g.value(p->x.node->inputs[0]).quant, y_quant = g.value(p->qo.q->outputs[0]).quant;
    // The product as a 1x1 convolution over [N, K, 1, 1]: the weights [M, K, 1, 1] (transposed from [K, M] without
    // transB), the int8 input and output reshaped around it (data movement on codes).
    Tensor w4(DType::kI8, {M, K, 1, 1});
    const int8_t* w = p->w.data->data<int8_t>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) w4.data<int8_t>()[m * K + k] = transB ? w[m * K + k] : w[k * M + m];
    const std::string name = n.name;
    const ir::ValueId wc = g.addConstant(g.uniqueValueName(g.value(p->w.node->inputs[0]).name + "/1x1"), std::move(w4)).id;
    const ir::ValueId s4c = g.addConstant(g.uniqueValueName(name + "/nchw_shape"), Tensor::fromVector<int64_t>({4}, {N, K, 1, 1})).id;
    const ir::ValueId s2c = g.addConstant(g.uniqueValueName(name + "/shape"),
                                          Tensor::fromVector<int64_t>({static_cast<int64_t>(y_shape.size())}, y_shape)).id;
    const ir::ValueId yq = p->qo.q->outputs[0];
    const ir::ValueId x4id = g.addValue(g.uniqueValueName(x_name + "/nchw"), ir::Type{DType::kI8, {N, K, 1, 1}, true}).id;
    g.value(x4id).quant = x_quant;
    const ir::ValueId y4id = g.addValue(g.uniqueValueName(y_name + "/nchw"), ir::Type{DType::kI8, {N, M, 1, 1}, true}).id;
    g.value(y4id).quant = y_quant;
    std::vector<ir::ValueId> ins = {x4id, wc};
    if (p->b) ins.push_back(p->b->node->inputs[0]);
    std::map<std::string, ir::Attr> attrs;
    for (const char* a : {"fused", "merged_nodes"})
      if (n.hasAttr(a)) attrs[a] = n.attrs.at(a);
    attrs["group"] = ir::Attr(int64_t{1});
    attrs["kernel_shape"] = ir::Attr(std::vector<int64_t>{1, 1});
    attrs["strides"] = ir::Attr(std::vector<int64_t>{1, 1});
    attrs["dilations"] = ir::Attr(std::vector<int64_t>{1, 1});
    attrs["pads"] = ir::Attr(std::vector<int64_t>{0, 0, 0, 0});
    productAttrs(*p, n.op, attrs);
    rw.addNode("Reshape", name + "/to_nchw", {p->x.node->inputs[0], s4c}, {x4id});
    replaceRun(g, rw, id, p->qo, "QConv", "ai.npuc", ins, std::move(attrs), y4id);
    rw.addNode("Reshape", name + "/from_nchw", {y4id, s2c}, {yq});
    return true;
  });
}

namespace {
/// Replaces the run of layer `id` (ending in `qo`) by an ai.npuc QAdd of a's and b's int8 values, at the scales sa and
/// sb (their zero points theirs), b's multiplier 0 where `no_b`; false (nothing changed) where qaddParams cannot hold
/// the ratios.
bool replaceByQAdd(ir::Graph& g, ir::Rewriter& rw, ir::NodeId id, const QuantizedOutput& qo, const QParams& a, double sa,
                   const QParams& b, double sb, bool no_b) {
  kernels::QAddParams p;
  try {
    p = kernels::qaddParams(sa, static_cast<int32_t>(a.zero_point[0]), sb, static_cast<int32_t>(b.zero_point[0]), qo.scale,
                            static_cast<int32_t>(qo.zero_point), static_cast<int32_t>(qo.lo), static_cast<int32_t>(qo.hi));
  } catch (const std::invalid_argument&) {
    return false;
  }
  if (no_b) p.mb = 0;
  std::map<std::string, ir::Attr> attrs = twoOperandAttrs(p.za, p.zb, p.zy, p.lo, p.hi, g.node(id), qo);
  attrs["multipliers"] = ir::Attr(std::vector<int64_t>{p.ma, p.mb});
  attrs["shift"] = ir::Attr(int64_t{p.shift});
  replaceRun(g, rw, id, qo, "QAdd", "ai.npuc", {a.node->inputs[0], b.node->inputs[0]}, std::move(attrs));
  return true;
}
}  // namespace

int fuseIntegerAdds(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if (n.op != "Add" || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    auto a = int8Activation(g, n.inputs[0]);
    auto b = int8Activation(g, n.inputs[1]);
    if (!a || !b) return false;
    const ir::Type &at = g.value(a->node->inputs[0]).type, &bt = g.value(b->node->inputs[0]).type;
    if (at.shape != bt.shape || at.shape != g.value(n.outputs[0]).type.shape) return false;  // (no broadcasting)
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    return qo && replaceByQAdd(g, rw, id, *qo, *a, a->scale[0], *b, b->scale[0], false);
  });
}

int fuseIntegerScales(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if ((n.op != "Mul" && n.op != "Div") || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    // x * c, c * x or x / c: an int8 activation and a constant scalar factor above 0.
    const int xi = n.op == "Mul" && g.value(n.inputs[0]).isConstant() ? 1 : 0;
    auto x = int8Activation(g, n.inputs[static_cast<size_t>(xi)]);
    const ir::Value& cv = g.value(n.inputs[static_cast<size_t>(1 - xi)]);
    if (!x || !cv.isConstant() || cv.constant->numel() != 1 || cv.constant->dtype() != DType::kF32) return false;
    const double c0 = cv.constant->toDouble()[0], c = n.op == "Div" ? 1.0 / c0 : c0;
    if (!(c > 0) || !std::isfinite(c)) return false;
    if (g.value(n.outputs[0]).type.shape != g.value(x->node->inputs[0]).type.shape) return false;  // (no broadcasting)
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    // (y = x * c as the addition x + x at scale sx * c, the second operand's multiplier 0: (x - zx) * ma, one
    // rounding shift)
    return qo && replaceByQAdd(g, rw, id, *qo, *x, x->scale[0] * c, *x, x->scale[0] * c, true);
  });
}

int fuseIntegerMatMuls(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if (n.op != "MatMul" || !(n.domain.empty() || n.domain == "ai.npuc") || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    auto a = int8Activation(g, n.inputs[0]);
    auto b = int8Activation(g, n.inputs[1]);
    if (!a || !b) return false;
    const ir::Type &at = g.value(a->node->inputs[0]).type, &bt = g.value(b->node->inputs[0]).type;
    if (!at.isStatic() || !bt.isStatic() || at.shape.size() < 2 || bt.shape.size() < 2) return false;  // (1-D operands stay float)
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], n.attrString("activation", ""), n.attrFloat("activation_alpha", 0.0f),
                              n.attrFloat("activation_beta", 6.0f));
    if (!qo) return false;
    kernels::QMatMulParams p;
    try {
      p = kernels::qmatmulParams(a->scale[0], static_cast<int32_t>(a->zero_point[0]), b->scale[0], static_cast<int32_t>(b->zero_point[0]),
                                 qo->scale, static_cast<int32_t>(qo->zero_point), at.shape.back(), static_cast<int32_t>(qo->lo),
                                 static_cast<int32_t>(qo->hi));
    } catch (const std::invalid_argument&) {
      return false;  // (a depth past int32 sums, or a factor of 2^30 or more: float between its Q / DQ layers)
    }
    std::map<std::string, ir::Attr> attrs = twoOperandAttrs(p.za, p.zb, p.zy, p.lo, p.hi, n, *qo);
    attrs["multiplier"] = ir::Attr(int64_t{p.mul.m});
    attrs["shift"] = ir::Attr(int64_t{p.mul.shift});
    replaceRun(g, rw, id, *qo, "QMatMul", "ai.npuc", {a->node->inputs[0], b->node->inputs[0]}, std::move(attrs));
    return true;
  });
}

namespace {
/// DequantizeLinear -> AveragePool (+ Relu / Clip) -> QuantizeLinear -> ai.npuc QAvgPool (the window attributes kept).
bool fuseIntegerAvgPool(ir::Graph& g, ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.outputs.size() != 1 || n.hasAttr("storage_order")) return false;
  auto x = int8Activation(g, n.inputs[0]);
  if (!x) return false;
  const ir::Type& xt = g.value(x->node->inputs[0]).type;
  const Shape& xs = xt.shape;
  if ((xs.size() != 3 && xs.size() != 4) || !xt.isStatic()) return false;
  int64_t taps = 1;
  try {
    const ops::Window w = ops::resolvePoolWindow(n, xs);
    for (int64_t k : w.kernel) taps *= k;
  } catch (const Error&) {
    return false;
  }
  auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
  if (!qo || taps > kernels::kMaxAvgPoolTaps) return false;
  kernels::QAvgPoolParams p;
  try {
    p = kernels::qavgPoolParams(x->scale[0], static_cast<int32_t>(x->zero_point[0]), qo->scale, static_cast<int32_t>(qo->zero_point),
                                taps, static_cast<int32_t>(qo->lo), static_cast<int32_t>(qo->hi));
  } catch (const std::invalid_argument&) {
    return false;
  }
  std::map<std::string, ir::Attr> attrs;
  for (const char* a : {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "count_include_pad", "dilations"})
    if (n.hasAttr(a)) attrs[a] = n.attrs.at(a);
  std::vector<int64_t> m, sh;
  for (const kernels::Multiplier& k : p.mul) m.push_back(k.m), sh.push_back(k.shift);
  attrs["x_zero_point"] = ir::Attr(int64_t{p.zx});
  attrs["y_zero_point"] = ir::Attr(int64_t{p.zy});
  attrs["y_min"] = ir::Attr(int64_t{p.lo});
  attrs["y_max"] = ir::Attr(int64_t{p.hi});
  attrs["multipliers"] = ir::Attr(m);
  attrs["shifts"] = ir::Attr(sh);
  attrs["fused"] = ir::Attr(qo->act_node ? std::vector<std::string>{n.op, qo->act_node->op} : std::vector<std::string>{n.op});
  replaceRun(g, rw, id, *qo, "QAvgPool", "ai.npuc", {x->node->inputs[0]}, std::move(attrs));
  return true;
}
}  // namespace

int fuseIntegerPools(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    if ((n.op != "GlobalAveragePool" && n.op != "AveragePool") || !n.domain.empty() || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
    if (n.op == "AveragePool") return fuseIntegerAvgPool(g, rw, uses, outputs, id);
    auto x = int8Activation(g, n.inputs[0]);
    if (!x) return false;
    const ir::Type& xt = g.value(x->node->inputs[0]).type;
    const Shape& xs = xt.shape;
    if (xs.size() < 3 || !xt.isStatic()) return false;
    int64_t count = 1;
    for (size_t i = 2; i < xs.size(); ++i) count *= xs[i];
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    if (!qo) return false;
    kernels::QGlobalAvgPoolParams p;
    try {
      p = kernels::qglobalAvgPoolParams(x->scale[0], static_cast<int32_t>(x->zero_point[0]), qo->scale,
                                        static_cast<int32_t>(qo->zero_point), count, static_cast<int32_t>(qo->lo),
                                        static_cast<int32_t>(qo->hi));
    } catch (const std::invalid_argument&) {
      return false;
    }
    std::map<std::string, ir::Attr> attrs;
    attrs["x_zero_point"] = ir::Attr(int64_t{p.zx});
    attrs["y_zero_point"] = ir::Attr(int64_t{p.zy});
    attrs["y_min"] = ir::Attr(int64_t{p.lo});
    attrs["y_max"] = ir::Attr(int64_t{p.hi});
    attrs["multiplier"] = ir::Attr(int64_t{p.mul.m});
    attrs["shift"] = ir::Attr(int64_t{p.mul.shift});
    attrs["fused"] = ir::Attr(qo->act_node ? std::vector<std::string>{n.op, qo->act_node->op} : std::vector<std::string>{n.op});
    replaceRun(g, rw, id, *qo, "QGlobalAvgPool", "ai.npuc", {x->node->inputs[0]}, std::move(attrs));
    return true;
  });
}

int fuseIntegerDataMovement(ir::Graph& g) {
  return fuseEach(g, [&](ir::Rewriter& rw, const ir::UseMap& uses, const std::set<ir::ValueId>& outputs, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    const bool concat = n.op == "Concat" && n.domain.empty();
    if (!concat && !movesValues(n)) return false;
    if (n.outputs.size() != 1 && !(n.op == "MaxPool" && n.outputs.size() == 2 && n.outputs[1] == ir::kNoValue)) return false;
    auto qo = quantizedOutput(g, uses, outputs, n.outputs[0], "", 0.0f, 0.0f);
    if (!qo || qo->act_node) return false;
    // The data inputs (all of a Concat's, the first of the others: Reshape's shape is a constant) must be int8
    // codes with the output's scale and zero point.
    const size_t data = concat ? n.inputs.size() : 1;
    std::vector<ir::ValueId> ins = n.inputs;
    bool ok = true;
    for (size_t i = 0; i < data && ok; ++i) {
      auto x = int8Activation(g, n.inputs[i]);
      ok = x && x->scale[0] == qo->scale && x->zero_point[0] == qo->zero_point;
      if (ok) ins[i] = x->node->inputs[0];
    }
    if (!ok) return false;
    if (n.op == "MaxPool" && n.attrFloat("pad_value", -INFINITY) != -INFINITY) return false;  // (a folded Pad's value is a float)
    const std::string op = n.op, domain = n.domain;
    replaceRun(g, rw, id, *qo, op, domain, ins, n.attrs);
    return true;
  });
}

}  // namespace npuc::quant
