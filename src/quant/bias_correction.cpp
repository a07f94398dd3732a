// Bias correction of weight storage rounding (see bias_correction.hpp and docs/calibration.md).
#include "quant/bias_correction.hpp"

#include "engine/engine.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"
#include "ir/rewriter.hpp"
#include "ops/registry.hpp"

#include <algorithm>
#include <set>

namespace npuc::quant {

namespace {

const Tensor* constF32(const ir::Graph& g, const ir::Node& n, int i) { return ir::constantInput(g, n, i, DType::kF32); }

/// Channels of the activation operand the layer reduces over: Conv C (= C/group * group), Gemm K.
int64_t inputChannels(const ir::Node& n, const Tensor& w) {
  if (n.op == "Conv") return w.dim(1) * n.attrInt("group", 1);
  return ops::attrInt(n, "transB") ? w.dim(1) : w.dim(0);
}

/// Per output channel: sum over the reduction of (round(W) - W) * mean of the input channel it multiplies.
std::vector<double> meanShift(const ir::Node& n, const Tensor& w, const std::vector<double>& mu, const ChannelRounding& round) {
  const float* wp = w.data<float>();
  auto delta = [&](int64_t i, int64_t channel) { return static_cast<double>(round(wp[i], channel, i)) - static_cast<double>(wp[i]); };
  std::vector<double> shift;
  if (n.op == "Conv") {
    int64_t O = w.dim(0), Cg = w.dim(1), per_group = O / n.attrInt("group", 1);
    int64_t taps = w.numel() / (O * Cg);
    shift.assign(static_cast<size_t>(O), 0.0);
    for (int64_t o = 0; o < O; ++o) {
      int64_t c0 = (o / per_group) * Cg;
      double s = 0;
      for (int64_t c = 0; c < Cg; ++c) {
        double d = 0;
        for (int64_t k = 0; k < taps; ++k) d += delta((o * Cg + c) * taps + k, o);
        s += d * mu[static_cast<size_t>(c0 + c)];
      }
      shift[static_cast<size_t>(o)] = s;
    }
    return shift;
  }
  bool transB = ops::attrInt(n, "transB") != 0;
  int64_t K = transB ? w.dim(1) : w.dim(0), N = transB ? w.dim(0) : w.dim(1);
  shift.assign(static_cast<size_t>(N), 0.0);
  for (int64_t j = 0; j < N; ++j) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k) s += delta(transB ? j * K + k : k * N + j, j) * mu[static_cast<size_t>(k)];
    shift[static_cast<size_t>(j)] = s;
  }
  return shift;
}

}  // namespace

bool correctable(const ir::Graph& g, const ir::Node& n) {
  // ai.npuc: the optimizer's Conv / Gemm with a fused activation (or a folded Pad); the bias comes before either.
  if (!(n.domain.empty() || n.domain == "ai.npuc") || n.outputs.empty()) return false;
  const Tensor* w = constF32(g, n, 1);
  if (!w) return false;
  const ir::Type& x = g.value(n.inputs[0]).type;
  if (x.dtype != DType::kF32 || !x.rank_known || x.shape.size() < 2) return false;
  if (n.op == "Conv") {
    int64_t group = n.attrInt("group", 1);
    if (w->rank() < 3 || w->rank() > 4 || group < 1 || w->dim(0) % group != 0 || w->numel() == 0) return false;
    if (n.hasInput(2)) {
      const Tensor* b = constF32(g, n, 2);
      return b && b->numel() == w->dim(0);
    }
    return true;
  }
  if (n.op == "Gemm") {
    if (w->rank() != 2 || x.shape.size() != 2 || ops::attrInt(n, "transA") != 0 || ops::attrFloat(n, "alpha") != 1.0f ||
        ops::attrFloat(n, "beta") != 1.0f || w->numel() == 0)
      return false;
    int64_t N = ops::attrInt(n, "transB") ? w->dim(0) : w->dim(1);
    if (n.hasInput(2)) {
      const Tensor* c = constF32(g, n, 2);
      return c && (c->shape() == Shape{N} || c->shape() == Shape{1, N});
    }
    return true;
  }
  return false;
}

void observeValues(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples, int threads,
                   const std::set<ir::ValueId>& values, const std::function<void(ir::ValueId, const Tensor&)>& fn) {
  engine::EngineOptions eo;
  eo.threads = std::max(1, threads);
  eo.fuse_activations = false;  // every op's own output, as in the float model
  engine::Engine e(g, eo);
  for (size_t i = 0; i < samples.size(); ++i) {
    withContext(fmt::format("calibration sample {}", i + 1), [&] {
      e.run(samples[i], [&](const ir::Node& n, const std::vector<Tensor>& outs) {
        for (size_t k = 0; k < outs.size() && k < n.outputs.size(); ++k)
          if (values.count(n.outputs[k])) fn(n.outputs[k], outs[k]);
      });
      for (ir::ValueId in : g.inputs())
        if (values.count(in)) fn(in, samples[i].at(g.value(in).name));
    });
  }
}

InputMeans measureInputMeans(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples, int threads) {
  // The values to observe and the layers (by output name) that read each.
  std::map<ir::ValueId, std::vector<std::string>> readers;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (correctable(g, n) && !g.value(n.inputs[0]).isConstant())
      readers[n.inputs[0]].push_back(g.value(n.outputs[0]).name);
  }
  struct Acc {
    std::vector<double> sum;
    double count = 0;  // elements per channel so far
  };
  std::map<ir::ValueId, Acc> acc;
  auto observe = [&](ir::ValueId v, const Tensor& t) {
    auto it = readers.find(v);
    if (it == readers.end()) return;
    if (t.dtype() != DType::kF32 || t.rank() < 2) fail(ErrorCode::kInternal, "value '{}' is not a float32 tensor of rank 2 or more", g.value(v).name);
    int64_t outer = t.dim(0), C = t.dim(1), inner = t.numel() / std::max<int64_t>(1, outer * C);
    Acc& a = acc[v];
    a.sum.resize(static_cast<size_t>(C), 0.0);
    const float* p = t.data<float>();
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t c = 0; c < C; ++c) {
        double s = 0;
        const float* q = p + (b * C + c) * inner;
        for (int64_t i = 0; i < inner; ++i) s += q[i];
        a.sum[static_cast<size_t>(c)] += s;
      }
    a.count += static_cast<double>(outer * inner);
  };
  std::set<ir::ValueId> values;
  for (auto& [v, names] : readers) values.insert(v);
  observeValues(g, samples, threads, values, observe);
  InputMeans r;
  r.samples = samples.size();
  for (auto& [v, a] : acc) {
    std::vector<double> mean(a.sum.size());
    for (size_t c = 0; c < mean.size(); ++c) mean[c] = a.count > 0 ? a.sum[c] / a.count : 0.0;
    for (auto& name : readers[v]) r.by_output[name] = mean;
  }
  return r;
}

float roundToHalf(float w) { return halfToFloat(floatToHalf(w)); }

bool correctLayerBias(ir::Graph& g, ir::NodeId id, const std::vector<double>& mean, const ChannelRounding& round, bool* added_bias) {
  ir::Node& n = g.node(id);
  const Tensor& w = *g.value(n.inputs[1]).constant;
  if (static_cast<int64_t>(mean.size()) != inputChannels(n, w))
    fail(ErrorCode::kInternal, "{}: {} input channel means for {} channels", n.label(), mean.size(), inputChannels(n, w));
  std::vector<double> shift = meanShift(n, w, mean, round);
  if (std::all_of(shift.begin(), shift.end(), [](double s) { return s == 0.0; })) return false;
  Shape bshape{static_cast<int64_t>(shift.size())};
  std::vector<float> bias(shift.size(), 0.0f);
  std::string base = g.value(n.outputs[0]).name + "_bias";
  const bool had = n.hasInput(2);
  if (had) {
    const ir::Value& bv = g.value(n.inputs[2]);
    bshape = bv.constant->shape();
    const float* bp = bv.constant->data<float>();
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = bp[i];
    base = bv.name;
  }
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(static_cast<double>(bias[i]) - shift[i]);
  ir::ValueId nb = g.addConstant(g.uniqueValueName(base + "_corrected"), Tensor::fromVector<float>(bshape, bias)).id;
  ir::Node& m = g.node(id);  // (addConstant may not move nodes, but take the reference again)
  if (m.inputs.size() < 3) m.inputs.resize(3, ir::kNoValue);
  m.inputs[2] = nb;
  if (added_bias) *added_bias = !had;
  return true;
}

BiasCorrection correctBias(ir::Graph& g, const InputMeans& means, const WeightRounding& round) {
  BiasCorrection r;
  std::set<ir::ValueId> replaced;
  const ChannelRounding per_channel = [&](float w, int64_t, int64_t) { return round(w); };
  for (ir::NodeId id : g.order()) {  // adds constants only: the node order stays
    const ir::Node& n = g.node(id);
    if (!correctable(g, n)) continue;
    auto it = means.by_output.find(g.value(n.outputs[0]).name);
    if (it == means.by_output.end()) continue;
    const ir::ValueId old_bias = n.hasInput(2) ? n.inputs[2] : ir::kNoValue;
    bool added = false;
    if (!correctLayerBias(g, id, it->second, per_channel, &added)) continue;
    if (old_bias != ir::kNoValue) replaced.insert(old_bias);
    ++r.layers;
    if (added) ++r.added_biases;
  }
  ir::removeUnread(g, replaced);
  return r;
}

}  // namespace npuc::quant
