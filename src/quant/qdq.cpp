// int8-affine quantization as QuantizeLinear / DequantizeLinear pairs (see qdq.hpp and docs/numerics.md); their
// fusion into integer layers is qdq_fuse.cpp.
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

namespace {
/// Radixes lie in [-31, 31] (radixInt8): a range beyond 127 * 2^31 saturates, one below 2^-32 becomes all zeros — said.
void radixRangeWarnings(const std::string& name, const Range& r, std::vector<std::string>& warnings) {
  const double m = std::max(-std::min(r.lo, 0.0), std::max(r.hi, 0.0));
  if (std::ldexp(m, -31) > 127.0)
    warnings.push_back(fmt::format("tensor '{}': its calibrated range reaches {:.4g}, beyond the {:.4g} that int8 holds at the "
                                   "coarsest radix -31: larger values saturate", name, m, std::ldexp(127.0, 31)));
  if (m > 0 && std::ldexp(m, 31) < 0.5)
    warnings.push_back(fmt::format("tensor '{}': its calibrated range peaks at {:.4g}, below half the finest step 2^-31 of the "
                                   "radix: every value becomes 0", name, m));
}
}  // namespace

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

}  // namespace

std::vector<float> weightScales(const Tensor& w, int64_t axis, bool per_channel, std::vector<float>* range_out) {
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

namespace {

/// A weight as its int8 code stands for it: clamp(round_half_even(w / scale), -127, 127) * scale (NaN: 0).
float int8WeightValue(float w, float scale) {
  const float v = std::nearbyint(w / scale);
  return (std::isnan(v) ? 0.0f : std::clamp(v, -127.0f, 127.0f)) * scale;
}

/// Quantizes constant weights per channel along `axis` (symmetric int8) and puts a DequantizeLinear in front of
/// input `i` of node `n`; returns the per-channel scales (empty when the input is not a float32 constant). The codes
/// are rounded to nearest, or those of `o.weight_codes` (AdaRound) for the weight.
std::vector<float> quantizeWeights(ir::Rewriter& rw, ir::NodeId id, int i, int64_t axis, bool per_channel, const QdqOptions& o, QdqReport& rep) {
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
  const std::string name = g.value(g.node(id).inputs[static_cast<size_t>(i)]).name;
  const std::vector<int32_t>* chosen = nullptr;
  if (o.weight_codes)
    if (auto c = o.weight_codes->find(name); c != o.weight_codes->end() && c->second.size() == static_cast<size_t>(w.numel())) chosen = &c->second;
  for (int64_t k = 0; k < w.numel(); ++k) {
    float v = std::nearbyint(src[k] / scale[chan(k)]);  // what QuantizeLinear would give: half to even (int8WeightValue)
    if (chosen) v = static_cast<float>((*chosen)[static_cast<size_t>(k)]);
    q.data<int8_t>()[k] = static_cast<int8_t>(std::isnan(v) ? 0.0f : std::clamp(v, -127.0f, 127.0f));
  }
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
  if (chosen && o.weight_notes)
    if (auto nt = o.weight_notes->find(name); nt != o.weight_notes->end()) t.note = nt->second;
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
  // (a Clip whose bounds the model computes is no fused activation: the layer's output is quantized before it)
  auto constantBounds = [&] {
    for (size_t k = 1; k < r.inputs.size(); ++k)
      if (r.inputs[k] != ir::kNoValue && !g.value(r.inputs[k]).constant) return false;
    return true;
  };
  return layer && r.domain.empty() && (r.op == "Relu" || (r.op == "Clip" && constantBounds()));
}

/// A layer kept in float takes along the element-wise activation node that alone reads it (a Conv's LeakyRelu,
/// HardSwish, Sigmoid, …: one layer as the model's author wrote it, as a fused Relu / Clip already is), so the
/// activation computes in float on the layer's float output instead of as an int8 look-up table between a quantize
/// and a dequantize; the conversion moves after it. So does data movement (Reshape, Transpose, Flatten, … —
/// movesValues) alone reading a kept node, and a Concat whose every input a kept node writes for it alone: a
/// detector's head kept in float reaches the model's output through its Reshape / Transpose / Concat in float.
void takeActivationsAlong(const ir::Graph& g, std::set<ir::NodeId>& kept) {
  static const std::set<std::string> activations = {"Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid",
                                                    "HardSwish", "Swish", "Mish", "Elu", "Selu", "Celu", "Softplus",
                                                    "Softsign", "ThresholdedRelu", "Gelu"};
  const ir::UseMap uses = g.uses();
  auto soleReader = [&](ir::ValueId v) { return ir::soleReader(g, uses, v); };
  auto takes = [&](const ir::Node& r, ir::ValueId v) {
    if (!(r.domain.empty() || r.domain == "ai.npuc") || r.outputs.size() != 1 || r.inputs.empty()) return false;
    if (r.op == "Concat")  // (every input a kept node's, read by this Concat alone)
      return std::all_of(r.inputs.begin(), r.inputs.end(), [&](ir::ValueId u) {
        return u != ir::kNoValue && g.value(u).producer != ir::kNoNode && kept.count(g.value(u).producer) && soleReader(u);
      });
    return r.inputs[0] == v && (activations.count(r.op) || movesValues(r));
  };
  std::vector<ir::NodeId> todo(kept.begin(), kept.end());
  std::set<ir::NodeId> moving;  // (data movement and Concats taken)
  while (!todo.empty()) {
    const ir::Node& n = g.node(todo.back());
    todo.pop_back();
    if (n.outputs.size() != 1 || n.outputs[0] == ir::kNoValue) continue;
    const std::optional<ir::NodeId> r = soleReader(n.outputs[0]);
    if (r && !kept.count(*r) && takes(g.node(*r), n.outputs[0])) {
      kept.insert(*r);
      todo.push_back(*r);
      if (!activations.count(g.node(*r).op)) moving.insert(*r);
    }
  }
  // Data movement in float pays only where its result stays float: a model output, or read by kept nodes alone
  // (a MaxPool before an int8 layer moves the same values as codes, for less) — the others go back, last first.
  for (bool changed = true; changed;) {
    changed = false;
    for (ir::NodeId m : std::vector<ir::NodeId>(moving.begin(), moving.end())) {
      const ir::ValueId y = g.node(m).outputs[0];
      auto it = uses.find(y);
      const bool output = std::count(g.outputs().begin(), g.outputs().end(), y) > 0;
      const bool readers_kept = it != uses.end() && !it->second.empty() &&
                                std::all_of(it->second.begin(), it->second.end(), [&](auto u) { return kept.count(u.first) > 0; });
      if (!output && !readers_kept) {
        kept.erase(m);
        moving.erase(m);
        changed = true;
      }
    }
  }
}

}  // namespace

std::set<std::string> activationsTakenAlong(const ir::Graph& g, const std::set<std::string>& kept) {
  std::set<ir::NodeId> layers;
  for (ir::NodeId id : g.order())
    if (kept.count(g.node(id).name)) layers.insert(id);
  std::set<ir::NodeId> all = layers;
  takeActivationsAlong(g, all);
  std::set<std::string> names;
  for (ir::NodeId id : all)
    if (!layers.count(id)) names.insert(g.node(id).name);
  return names;
}

namespace {

/// The nodes --keep-float / --keep-float16 name (layers with weights; a name the graph lacks is an error), with the
/// activations they take along.
std::set<ir::NodeId> keptLayers(const ir::Graph& g, const std::set<std::string>& names) {
  std::set<ir::NodeId> kept;
  for (const std::string& name : names) {
    bool found = false;
    for (ir::NodeId id : g.order()) {
      const ir::Node& n = g.node(id);
      if (n.name != name) continue;
      found = true;
      if (!(n.op == "Conv" || n.op == "Gemm" || n.op == "MatMul"))
        fail(ErrorCode::kInvalidArgument, "--keep-float / --keep-float16 '{}': a {} has no weights to keep in float (layers with weights: "
             "Conv, Gemm, MatMul)", name, n.op);
      kept.insert(id);
    }
    if (!found) fail(ErrorCode::kInvalidArgument, "--keep-float / --keep-float16 '{}': the model has no node of that name", name);
  }
  takeActivationsAlong(g, kept);
  return kept;
}

/// Whether a kept node writes v (`kept` holds, with the layers, the activations they take along: a fused Relu / Clip
/// node included).
bool writtenByKept(const ir::Graph& g, const std::set<ir::NodeId>& kept, ir::ValueId v) {
  return g.value(v).producer != ir::kNoNode && kept.count(g.value(v).producer) > 0;
}

/// Layers kept in float in a row exchange float values: a value that a kept layer writes (itself, or through its
/// fused activation) and only kept layers read — or only the model's caller, as a graph output — leaves `acts` (it
/// gets no QuantizeLinear / DequantizeLinear).
void dropValuesBetweenKeptLayers(const ir::Graph& g, const ir::UseMap& uses, const std::set<ir::NodeId>& kept,
                                 std::vector<ir::ValueId>& acts) {
  if (kept.empty()) return;
  // Read only by kept layers — or a graph output that nothing else reads but kept layers: a float layer's output
  // leaves the model as it computed it.
  auto keptReadsOnly = [&](ir::ValueId v) {
    auto it = uses.find(v);
    const bool output = std::count(g.outputs().begin(), g.outputs().end(), v) > 0;
    if (it == uses.end() || it->second.empty()) return output;
    for (auto [reader, k] : it->second)
      if (!kept.count(reader)) return false;
    return true;
  };
  std::erase_if(acts, [&](ir::ValueId v) { return writtenByKept(g, kept, v) && keptReadsOnly(v); });
}

}  // namespace

bool movesValues(const ir::Node& n) {
  static const std::set<std::string> ops = {"MaxPool", "Reshape",   "Flatten", "Transpose", "Squeeze",
                                            "Unsqueeze", "Identity", "Slice",   "Gather"};
  if (!n.domain.empty() || n.inputs.empty() || n.outputs.empty()) return false;
  if (n.op == "Resize") return isNearestResize(n);
  return ops.count(n.op) > 0;
}

bool isNearestResize(const ir::Node& n) {
  return (n.op == "Resize" || n.op == "Upsample") && n.attrString("mode", "nearest") == "nearest" &&
         n.attrString("coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize";
}

namespace {

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
  const std::set<ir::NodeId> kept = keptLayers(g, o.keep_float);
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
  // (float stays: SSD's DetectionOutput record of labels, scores and boxes — as an int64 ArgMax output —, and a tensor
  // whose shape the data decide, after a NonZero: a dynamic tensor, docs/package-format.md)
  auto recordsOutput = [&](const ir::Node& n) { return n.domain == "ai.npuc" && n.op == "DetectionOutput"; };
  for (ir::NodeId id : g.order())
    for (ir::ValueId v : g.node(id).outputs)
      if (v != ir::kNoValue && g.value(v).type.dtype == DType::kF32 && g.value(v).type.isStatic() &&
          !fusedActivationFollows(g, uses, v) && !recordsOutput(g.node(id)))
        acts.push_back(v);
  dropValuesBetweenKeptLayers(g, uses, kept, acts);
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
    // its name on to the copy (the model's interface stays), v being renamed — unless a kept layer writes it: then the
    // output stays the float value, only its int8 readers read the copy.
    const bool output = std::count(g.outputs().begin(), g.outputs().end(), v) > 0;
    if (output && !writtenByKept(g, kept, v)) {
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
    t.warning = o.ranges.count(name) ? std::string("range forced by --range") : r.warning;
    if (!r.warning.empty()) rep.warnings.push_back(fmt::format("tensor '{}': {}", name, r.warning));
    if (o.scheme == ActivationScheme::kRadix) radixRangeWarnings(name, r, rep.warnings);
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
        // (the codes the weights will take: AdaRound's where it chose them)
        const std::vector<int32_t>* codes = nullptr;
        if (o.weight_codes)
          if (auto c = o.weight_codes->find(g.value(n.inputs[1]).name); c != o.weight_codes->end() && c->second.size() == static_cast<size_t>(w->numel()))
            codes = &c->second;
        const ChannelRounding round = [&](float v, int64_t ch, int64_t i) {
          const float s = sc[sc.size() == 1 ? 0 : static_cast<size_t>(ch)];
          return codes ? static_cast<float>((*codes)[static_cast<size_t>(i)]) * s : int8WeightValue(v, s);
        };
        if (correctLayerBias(g, id, m->second, round)) ++rep.bias_corrected;
      }
    }
    std::vector<float> ws = quantizeWeights(rw, id, 1, axis, per_channel, o, rep);
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

}  // namespace npuc::quant
