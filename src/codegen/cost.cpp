// Cost model. Per layer on engine E of the target (clock f MHz, so f cycles per µs):
//   t = overhead + max(compute, bytes / (bytes_per_cycle·f))
//   compute = MACs / (rate·f) + taps · cycles_per_tap / f for a layer with MACs on an engine with a MAC rate (a MAC
//             engine, or a vector engine that multiplies: TIDL's DSP), the rate the engine's for the layer's class
//             (narrow groups, pointwise, other); ops · cycles / f for an op the engine emulates; else
//             elements / (elems_per_cycle·f)
// elements = input + output elements; bytes = activations read and written plus weights, at the target's
// element size (fp32 4, fp16 2, int8 1). A zero bytes_per_cycle leaves the memory term out. Folded ops cost 0.
// If / Loop / Scan add their bodies' layers, times the steps (bodySteps); DFT / STFT count the element operations of
// their transform (signalWork).
#include "codegen/cost.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"
#include "target/check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace npuc::codegen {

namespace {
int64_t factInt(const target::Facts& f, const char* k) {
  auto it = f.find(k);
  return it != f.end() && it->second.isInt() ? it->second.asInt() : 0;
}
}  // namespace

namespace {
/// What the time of a layer depends on.
struct Work {
  std::string op;  // the layer's (first) ONNX op
  int64_t macs = 0, taps = 0, elems = 0, in_elems = 0, out_elems = 0, bytes = 0;
  bool sparse = false;  // a convolution on the sparse kernel: its MACs scale with the weights' density
  double density = 1;
  double width = 1;  // a layer kept wider than the target's numerics: its element size / the target's
  bool convert_in = true, convert_out = true;  // (such a layer: LayerEstimate's)
};
Work workOf(const LayerEstimate& l) {
  return Work{l.op, l.macs, l.taps, l.elems, l.in_elems, l.out_elems, l.bytes, l.conv_kernel == "sparse", l.weight_density, l.width,
              l.convert_in, l.convert_out};
}
/// The MAC rate of a layer on an engine: narrow groups (MACs per output tap = input channels per group), pointwise
/// layers (taps = output elements: one kernel tap) or the engine's own rate.
double macRate(const target::Engine& en, const Work& w) {
  if (en.narrow_group_channels > 0 && w.taps > 0 && w.macs <= en.narrow_group_channels * w.taps) return en.narrow_macs_per_cycle;
  if (en.pointwise_macs_per_cycle > 0 && w.taps > 0 && w.taps == w.out_elems) return en.pointwise_macs_per_cycle;
  return en.macs_per_cycle;
}

double layerTime(const target::Engine& en, const Work& w) {
  const auto emulated = en.emulated_ops.find(w.op);
  const double f = en.clock_mhz;
  double compute = 0;
  if (emulated != en.emulated_ops.end()) compute = static_cast<double>(w.macs > 0 ? w.macs : w.in_elems) * emulated->second / f;
  else if (w.macs > 0 && en.macs_per_cycle > 0) {
    // The sparse kernel skips zero weights: a fixed part of the MAC time, the rest in proportion to the nonzero ones.
    const double sparse = w.sparse && en.sparse_kernel ? en.sparse_fixed_fraction + (1 - en.sparse_fixed_fraction) * w.density : 1.0;
    compute = static_cast<double>(w.macs) / (macRate(en, w) * f) * sparse + static_cast<double>(w.taps) * en.cycles_per_tap / f;
  }
  else if (en.elems_per_cycle > 0) compute = static_cast<double>(w.elems) / (en.elems_per_cycle * f);
  // A wider layer (kept in float in an int8 package): its MAC and element rates divided by the width ratio (as many
  // lanes of the wider type as fit where the narrow ones did: an npuc assumption) and its bytes multiplied by it.
  // Emulated ops are float code already. Its conversions (the int8 input to the wide type, the wide output back to
  // int8) are counted in it as element work at the engine's element rate, reading the narrow and writing the wide
  // element and back (another npuc assumption: as if fused into the layer's loads and stores).
  if (emulated == en.emulated_ops.end()) compute *= w.width;
  double memory = en.bytes_per_cycle > 0 ? static_cast<double>(w.bytes) * w.width / (en.bytes_per_cycle * f) : 0.0;
  if (w.width != 1) {
    const double converted = static_cast<double>((w.convert_in ? w.in_elems : 0) + (w.convert_out ? w.out_elems : 0));
    if (en.elems_per_cycle > 0) compute += converted / (en.elems_per_cycle * f);
    if (en.bytes_per_cycle > 0) memory += converted * (1 + w.width) / (en.bytes_per_cycle * f);
  }
  return en.overhead_us + std::max(compute, memory);
}

/// The engine that runs a layer the target lists as folded when it does run (a Transpose kept as a layer): the first
/// vector engine, else the first engine; empty for a target without engines.
std::string dataMovementEngine(const target::Target& t) {
  for (auto& [name, en] : t.engines)
    if (en.kind == "vector") return name;
  return t.engines.empty() ? std::string() : t.engines.begin()->first;
}

}  // namespace

/// One engine: its cores run whole frames side by side. Two: a pipeline of two layers groups; the cut is the one (in
/// program order) whose slowest stage — a group's time over its cores, the second plus the hand-over — is shortest
/// (the first such cut: the estimate is deterministic).
void throughput(Estimate& e, const target::Target& t) {
  e.multi_core.clear();
  std::vector<std::string> names;
  for (auto& [name, en] : t.engines) names.push_back(name);
  auto index = [&](const std::string& n) { return static_cast<size_t>(std::find(names.begin(), names.end(), n) - names.begin()); };
  std::vector<const LayerEstimate*> run;  // the layers that take time, in order
  for (const LayerEstimate& l : e.layers)
    if (!l.single_core_us.empty()) run.push_back(&l);
  for (const target::CoreSet& cs : t.core_sets) {
    Estimate::CoreSetEstimate r;
    r.name = cs.name;
    auto usable = [&](size_t k) { return !std::isnan(e.single_core_us[k].second); };
    if (cs.cores.size() == 1) {
      const size_t k = index(cs.cores[0].first);
      r.period_us = e.single_core_us[k].second / cs.cores[0].second;
      r.roi_per_s = usable(k) && r.period_us > 0 ? 1e6 / r.period_us : std::nan("");
    } else {
      const size_t a = index(cs.cores[0].first), b = index(cs.cores[1].first);
      const double na = cs.cores[0].second, nb = cs.cores[1].second;
      std::vector<double> suffix(run.size() + 1, 0.0);
      for (size_t i = run.size(); i-- > 0;) suffix[i] = suffix[i + 1] + run[i]->single_core_us[b];
      double prefix = 0, best = std::numeric_limits<double>::infinity();
      for (size_t s = 0; s <= run.size(); ++s) {
        if (s > 0) prefix += run[s - 1]->single_core_us[a];
        const bool both = s > 0 && s < run.size();
        const double period = std::max(prefix / na, suffix[s] / nb + (both ? t.group_switch_us : 0.0));
        if (period < best) {
          best = period;
          r.first_group_layers = static_cast<int>(s);
        }
      }
      r.period_us = best;
      // An engine the chosen cut leaves idle need not be able to run the model.
      const bool uses_a = r.first_group_layers > 0, uses_b = r.first_group_layers < static_cast<int>(run.size());
      r.roi_per_s = (!uses_a || usable(a)) && (!uses_b || usable(b)) && best > 0 ? 1e6 / best : std::nan("");
    }
    e.multi_core.push_back(r);
  }
}

namespace {
/// DFT / STFT: the element operations of their direct transform — each output bin sums its whole frame (length
/// samples, a real and an imaginary product each, twice for a complex input) —, not the elements they read and write
/// (`elems`, kept when the shapes are not known).
int64_t signalWork(const ir::Graph& g, const ir::Node& n, int64_t elems) {
  if (!n.domain.empty() || (n.op != "DFT" && n.op != "STFT") || n.outputs.empty() || n.outputs[0] == ir::kNoValue) return elems;
  const ir::Type &x = g.value(n.inputs[0]).type, &y = g.value(n.outputs[0]).type;
  if (!x.isStatic() || !y.isStatic() || x.shape.size() < 2) return elems;
  auto constant = [&](int i) -> int64_t {
    const Tensor* t = n.hasInput(i) && g.value(n.inputs[static_cast<size_t>(i)]).isConstant() ? &*g.value(n.inputs[static_cast<size_t>(i)]).constant : nullptr;
    return t && t->numel() == 1 ? t->toInt64()[0] : -1;
  };
  int64_t length = -1;
  if (n.op == "STFT") {
    length = n.hasInput(2) && g.value(n.inputs[2]).type.isStatic() ? shapeNumel(g.value(n.inputs[2]).type.shape) : constant(3);
  } else {
    int64_t axis = n.attrInt("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
    length = constant(1) > 0 ? constant(1) : axis >= 0 && axis < static_cast<int64_t>(x.shape.size()) ? x.shape[static_cast<size_t>(axis)] : -1;
  }
  if (length < 1) return elems;
  return std::max(elems, shapeNumel(y.shape) / 2 * length * 2 * x.shape.back());
}

/// How many times a control node runs a body: a Loop its trip count (a constant M, else the steps of its scan outputs;
/// 1 when neither is known at translate time: a loop on the data), a Scan the length of its scanned inputs, an If once.
int64_t bodySteps(const ir::Graph& g, const ir::Node& n) {
  const int own = ir::numOwnInputs(n);
  if (n.op == "Loop") {
    if (const Tensor* m = n.hasInput(0) ? ir::constantInput(g, n, 0, DType::kI64) : nullptr; m && m->numel() == 1)
      return std::max<int64_t>(0, m->data<int64_t>()[0]);
    for (size_t k = static_cast<size_t>(std::max(0, own - 2)); k < n.outputs.size(); ++k)
      if (n.outputs[k] != ir::kNoValue && g.value(n.outputs[k]).type.isStatic() && !g.value(n.outputs[k]).type.shape.empty())
        return g.value(n.outputs[k]).type.shape[0];
    return 1;
  }
  if (n.op == "Scan") {
    const int state = own - static_cast<int>(n.attrInt("num_scan_inputs", 0));
    if (state < 0 || state >= own || !g.value(n.inputs[static_cast<size_t>(state)]).type.isStatic()) return 1;
    const Shape& s = g.value(n.inputs[static_cast<size_t>(state)]).type.shape;
    int64_t axis = n.attrInts("scan_input_axes").empty() ? 0 : n.attrInts("scan_input_axes")[0];
    if (axis < 0) axis += static_cast<int64_t>(s.size());
    return axis >= 0 && axis < static_cast<int64_t>(s.size()) ? s[static_cast<size_t>(axis)] : 1;
  }
  return 1;
}
}  // namespace

Estimate estimate(const ir::Graph& g, const target::Target& t) {
  Estimate e;
  std::vector<double> single(t.engines.size(), 0.0);
  const int64_t esize = numericsTraits(t.numerics).activation_bytes;
  std::map<std::string, double> per_engine;
  const bool sparse_target = std::any_of(t.engines.begin(), t.engines.end(), [](const auto& en) { return en.second.sparse_kernel; });
  int ith = 0;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    LayerEstimate l;
    l.ith = ith++;
    l.name = n.name;
    l.opexp = ir::opexp(n);
    // The window geometry needs the node's facts (window ops only: a chain of 200k element-wise layers builds no
    // fact maps); channel / width / height come from the shapes in each value's layout (ir::chwDims).
    target::Facts f;
    if (target::hasWindowFacts(n.op)) {
      try {
        f = target::nodeFacts(g, n);
      } catch (const Error&) {
      }
    }
    const ir::ValueId x = n.hasInput(0) ? n.inputs[0] : ir::kNoValue;
    ir::ValueId y = ir::kNoValue;  // the first output the node has (an LSTM may omit Y and compute Y_h)
    for (auto o = n.outputs.begin(); o != n.outputs.end() && y == ir::kNoValue; ++o) y = *o;
    auto known = [&](ir::ValueId v) { return v != ir::kNoValue && g.value(v).type.isStatic(); };
    l.ker_w = factInt(f, "kernel_w");
    l.ker_h = factInt(f, "kernel_h");
    l.stride = factInt(f, "stride_w");
    l.dilation = factInt(f, "dilation_w");
    l.pad_l = factInt(f, "pad_l");
    l.pad_r = factInt(f, "pad_r");
    l.pad_t = factInt(f, "pad_t");
    l.pad_b = factInt(f, "pad_b");
    // The reported channel / width / height follow the value's layout (pre/post values are HWC, CHW or flat).
    auto chw = [&](ir::ValueId v) { return known(v) ? ir::chwDims(g.value(v).type.shape, g.value(v).layout) : ir::ChwDims{0, 0, 0}; };
    const ir::ChwDims ic = chw(x), oc = chw(y);
    l.in_c = ic.c;
    l.in_w = ic.w;
    l.in_h = ic.h;
    l.out_c = oc.c;
    l.out_w = oc.w;
    l.out_h = oc.h;
    l.macs = ops::nodeMacs(g, n);
    const int64_t in_elems = known(x) ? shapeNumel(g.value(x).type.shape) : 0;
    const int64_t out_elems = known(y) ? shapeNumel(g.value(y).type.shape) : 0;
    const int64_t elems = in_elems + out_elems;
    if (l.macs > 0) l.taps = out_elems * std::max<int64_t>(1, l.ker_w) * std::max<int64_t>(1, l.ker_h);
    int64_t weights = 0;
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue && g.value(v).isConstant()) weights += g.value(v).constant->numel();
    l.bytes = (elems + weights) * esize;
    const target::OpSupport* s = t.supportOf(n);
    // An op the target folds (engine "folded") that is still a node here runs as a layer unless the lowering makes it
    // an alias or fuses it (the caller drops those: dropLayers): a Transpose the optimizer could not remove moves its
    // data on the target's data-movement engine and has its time there.
    const std::string engine = !s ? "" : s->engine == "folded" ? dataMovementEngine(t) : s->engine;
    l.engine = s ? engine : "unsupported";
    l.op = n.op;
    l.elems = signalWork(g, n, elems);  // (the bytes above stay what the layer reads and writes)
    l.in_elems = in_elems;
    l.out_elems = out_elems;
    if (sparse_target && n.op == "Conv" && l.macs > 0) {  // (a fused activation puts a Conv in npuc's domain)
      const int64_t sh = factInt(f, "stride_h"), dh = factInt(f, "dilation_h");
      l.dense_ok = ((l.ker_w == 1 && l.ker_h == 1) || (l.ker_w == 3 && l.ker_h == 3)) && l.stride <= 1 && sh <= 1 && l.dilation <= 1 && dh <= 1;
      l.conv_kernel = l.dense_ok && denseByDefault(l.out_w, l.out_h) ? "dense" : "sparse";
      if (n.hasInput(1) && g.value(n.inputs[1]).isConstant()) {
        const Tensor& wt = *g.value(n.inputs[1]).constant;
        if (wt.dtype() == DType::kF32 && wt.numel() > 0) {
          int64_t nonzero = 0;
          for (int64_t i = 0; i < wt.numel(); ++i) nonzero += wt.data<float>()[i] != 0.0f;
          l.weight_density = static_cast<double>(nonzero) / static_cast<double>(wt.numel());
        }
      }
    }
    const Work w = workOf(l);
    if (s && !engine.empty()) {
      l.time_us = layerTime(t.engines.at(engine), w);
      per_engine[engine] += l.time_us;
      e.total_us += l.time_us;
      size_t k = 0;
      for (auto& [name, en] : t.engines) {
        l.single_core_us.push_back(layerTime(en, w));
        single[k++] += l.single_core_us.back();
      }
    }
    if (n.domain.empty() && (n.op == "If" || n.op == "Loop" || n.op == "Scan")) {
      // Its bodies' layers (an If: its dearer branch), `steps` times, on the control layer and in the totals.
      const Estimate* body = nullptr;
      std::vector<Estimate> bodies;
      for (auto& [attr, sub] : ir::subgraphs(n)) bodies.push_back(estimate(*sub, t));
      for (const Estimate& b : bodies)
        if (!body || b.total_us > body->total_us) body = &b;
      const double steps = static_cast<double>(bodySteps(g, n));
      if (body) {
        l.time_us += steps * body->total_us;
        e.total_us += steps * body->total_us;
        for (auto& [eng, us] : body->per_engine_us) per_engine[eng] += steps * us;
        for (size_t k = 0; k < body->single_core_us.size() && k < single.size(); ++k) {
          single[k] += steps * body->single_core_us[k].second;
          if (k < l.single_core_us.size()) l.single_core_us[k] += steps * body->single_core_us[k].second;
        }
        for (const LayerEstimate& bl : body->layers) l.macs += static_cast<int64_t>(steps) * bl.macs;
      }
    }
    e.layers.push_back(std::move(l));
  }
  e.per_engine_us.assign(per_engine.begin(), per_engine.end());
  // An engine without a MAC rate cannot run the model's MAC layers alone (DRP-AI's DRP): no single-core figure for it.
  const bool has_macs = std::any_of(e.layers.begin(), e.layers.end(), [](const LayerEstimate& l) { return l.macs > 0; });
  size_t k = 0;
  for (auto& [name, en] : t.engines) {
    if (!has_macs || en.macs_per_cycle > 0) e.single_core_us.emplace_back(name, single[k]);
    else e.single_core_us.emplace_back(name, std::nan(""));
    ++k;
  }
  throughput(e, t);
  return e;
}

namespace {
/// A layer's times again (after its kernel or width changed), on every engine and in the totals.
void retime(Estimate& e, const target::Target& t, LayerEstimate& l) {
  if (l.single_core_us.empty()) return;  // (a layer that takes no time)
  const Work w = workOf(l);
  size_t k = 0;
  for (auto& [name, en] : t.engines) {
    const double now = layerTime(en, w);
    e.single_core_us[k].second += now - l.single_core_us[k];
    l.single_core_us[k++] = now;
  }
  const double now = layerTime(t.engines.at(l.engine), w);
  e.total_us += now - l.time_us;
  for (auto& [eng, us] : e.per_engine_us)
    if (eng == l.engine) us += now - l.time_us;
  l.time_us = now;
}
}  // namespace

void placeOnGroups(Estimate& e, const target::Target& t, const std::map<std::string, int>& group_of) {
  e.groups.clear();
  e.groups_period_us = 0;
  if (group_of.empty()) return;
  std::map<int, size_t> at;
  for (LayerEstimate& l : e.layers) {
    auto it = group_of.find(l.name);
    if (it == group_of.end() || l.single_core_us.empty()) continue;
    const int g = it->second;
    if (g >= 1 && static_cast<size_t>(g) <= t.group_engines.size() && t.group_engines[static_cast<size_t>(g - 1)] != l.engine) {
      // (moved: out of its engine's total, into the new one's, re-timed there)
      const std::string to = t.group_engines[static_cast<size_t>(g - 1)];
      for (auto& [eng, us] : e.per_engine_us)
        if (eng == l.engine) us -= l.time_us;
      e.total_us -= l.time_us;
      l.engine = to;
      l.time_us = layerTime(t.engines.at(to), workOf(l));
      e.total_us += l.time_us;
      bool found = false;
      for (auto& [eng, us] : e.per_engine_us)
        if (eng == to) us += l.time_us, found = true;
      if (!found) {
        e.per_engine_us.emplace_back(to, l.time_us);
        std::sort(e.per_engine_us.begin(), e.per_engine_us.end());
      }
    }
    if (!at.count(g)) {
      at[g] = e.groups.size();
      e.groups.push_back({g, l.engine, 0});
    }
    e.groups[at[g]].us += l.time_us;
  }
  std::sort(e.groups.begin(), e.groups.end(), [](const auto& a, const auto& b) { return a.group < b.group; });
  for (const auto& g : e.groups) e.groups_period_us = std::max(e.groups_period_us, g.us);
  if (e.groups.size() > 1) e.groups_period_us += t.group_switch_us;
}

void widenLayers(Estimate& e, const target::Target& t, const std::map<std::string, DType>& wide, const ir::Graph* g) {
  if (wide.empty()) return;
  const double esize = static_cast<double>(numericsTraits(t.numerics).activation_bytes);
  std::map<std::string, ir::NodeId> node_of;
  ir::UseMap uses;
  if (g) {
    for (ir::NodeId id : g->order()) node_of.emplace(g->node(id).name, id);
    uses = g->uses();
  }
  // Whether node `id` runs at `type` too (a wide neighbour: no conversion between them).
  auto sameWidth = [&](ir::NodeId id, DType type) {
    auto it = wide.find(g->node(id).name);
    return it != wide.end() && it->second == type;
  };
  for (LayerEstimate& l : e.layers) {
    auto it = wide.find(l.name);
    if (it == wide.end()) continue;
    l.precision = std::string(dtypeName(it->second));
    l.width = static_cast<double>(dtypeSize(it->second)) / esize;
    if (auto n = node_of.find(l.name); n != node_of.end()) {
      const ir::Node& node = g->node(n->second);
      if (!node.inputs.empty() && node.inputs[0] != ir::kNoValue) {
        const ir::NodeId p = g->value(node.inputs[0]).producer;
        l.convert_in = !(p != ir::kNoNode && sameWidth(p, it->second));
      }
      if (node.outputs.size() == 1 && node.outputs[0] != ir::kNoValue) {
        auto r = uses.find(node.outputs[0]);
        const bool output = std::count(g->outputs().begin(), g->outputs().end(), node.outputs[0]) > 0;
        const bool readers = r != uses.end() && !r->second.empty();
        bool all_wide = readers || (output && it->second == DType::kF32);  // (a float16 model output is cast to float32)
        if (readers)
          for (auto [reader, k] : r->second) all_wide = all_wide && sameWidth(reader, it->second);
        l.convert_out = !all_wide;
      }
    }
    retime(e, t, l);
  }
}

void chooseConvKernels(Estimate& e, const target::Target& t, int all, const std::vector<int>& by_index,
                       const std::vector<std::string>& index_names, const std::map<std::string, int>& by_name) {
  if (all < 0 && by_index.empty() && by_name.empty()) return;
  const bool sparse_target = std::any_of(t.engines.begin(), t.engines.end(), [](const auto& en) { return en.second.sparse_kernel; });
  if (!sparse_target)
    fail(ErrorCode::kInvalidArgument, "convolution kernels: target '{}' has no sparse kernel to choose (TIDL's conv2dKernelType: target tidl)", t.name);
  auto value = [](int v, const std::string& what) {
    if (v != 0 && v != 1) fail(ErrorCode::kInvalidArgument, "convolution kernels: {}: {} is not 0 (sparse) or 1 (dense)", what, v);
    return v == 0 ? "sparse" : "dense";
  };
  if (!by_index.empty() && by_index.size() != index_names.size())
    fail(ErrorCode::kInvalidArgument, "convolution kernels: {} values for {} layers (one per layer of the package, as layersGroupId: "
         "manifest.json's layers, the quantize / dequantize layers at the inputs and outputs included)", by_index.size(), index_names.size());
  std::map<std::string, const char*> listed;  // (by index, by name)
  for (size_t i = 0; i < by_index.size(); ++i) listed[index_names[i]] = value(by_index[i], fmt::format("layer {} ('{}')", i, index_names[i]));
  std::set<std::string> unknown;
  for (auto& [name, v] : by_name) unknown.insert(name);
  for (LayerEstimate& l : e.layers) {
    std::string kernel = l.conv_kernel;
    if (all >= 0 && !l.conv_kernel.empty()) kernel = value(all, "every convolution");
    if (auto it = listed.find(l.name); it != listed.end() && !l.conv_kernel.empty()) kernel = it->second;
    if (auto it = by_name.find(l.name); it != by_name.end()) {
      if (l.conv_kernel.empty()) fail(ErrorCode::kInvalidArgument, "convolution kernels: layer '{}' is no convolution ({})", l.name, l.opexp);
      kernel = value(it->second, "layer '" + l.name + "'");
      unknown.erase(l.name);
    }
    if (kernel == "dense" && !l.dense_ok)
      fail(ErrorCode::kInvalidArgument, "convolution kernels: layer '{}' ({}x{}, stride {}, dilation {}): TIDL's dense kernel takes 1x1 and 3x3 "
           "convolutions of stride 1 and dilation 1 only; give it 0 (sparse)", l.name, l.ker_w, l.ker_h, l.stride, std::max<int64_t>(1, l.dilation));
    if (kernel == l.conv_kernel) continue;
    l.conv_kernel = kernel;
    retime(e, t, l);
  }
  if (!unknown.empty()) fail(ErrorCode::kInvalidArgument, "convolution kernels: no layer '{}' (the names of PREFIX_summary.csv)", *unknown.begin());
}

void dropLayers(Estimate& e, const std::set<std::string>& names) {
  if (names.empty()) return;
  std::vector<LayerEstimate> kept;
  kept.reserve(e.layers.size());
  for (auto& l : e.layers) {
    if (!names.count(l.name)) {
      l.ith = static_cast<int>(kept.size());
      kept.push_back(std::move(l));
      continue;
    }
    for (size_t k = 0; k < l.single_core_us.size() && k < e.single_core_us.size(); ++k)
      e.single_core_us[k].second -= l.single_core_us[k];
    if (l.time_us == 0) continue;
    e.total_us -= l.time_us;
    for (auto& [eng, us] : e.per_engine_us)
      if (eng == l.engine) us -= l.time_us;
  }
  e.layers = std::move(kept);
}

}  // namespace npuc::codegen
