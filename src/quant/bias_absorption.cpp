// Bias absorption: measured per channel on the calibration samples, moved from one convolution's bias into the next
// one's (bias_absorption.hpp says why it is exact where it applies).
#include "quant/bias_absorption.hpp"

#include "ir/rewriter.hpp"
#include "ops/registry.hpp"
#include "quant/bias_correction.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace npuc::quant {

namespace {

/// A Conv with float32 constant weights of rank 3 or 4 and a float32 constant bias or none.
bool plainConv(const ir::Graph& g, const ir::Node& n) {
  if (n.op != "Conv" || !(n.domain.empty() || n.domain == "ai.npuc") || n.outputs.size() != 1) return false;
  const Tensor* w = ir::constantInput(g, n, 1, DType::kF32);
  if (!w || (w->rank() != 3 && w->rank() != 4)) return false;
  return !n.hasInput(2) || ir::constantInput(g, n, 2, DType::kF32);
}

/// Relu, or LeakyRelu of slope >= 0 (alpha: its slope).
bool floorActivation(const std::string& op, float alpha) { return op == "Relu" || (op == "LeakyRelu" && alpha >= 0); }

bool unpadded(const ir::Node& n) {
  const std::string pad = n.attrString("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID") return false;
  const std::vector<int64_t> pads = n.attrInts("pads");
  return std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
}

/// Per-channel statistics of one activation over every sample, batch entry and position.
struct ChannelStats {
  std::vector<double> lo, hi, sum, sq;
  double count = 0;  // elements per channel
};

/// Gives `node` a new float32 bias constant holding `values`.
void setBias(ir::Graph& g, ir::NodeId node, const std::vector<double>& values, const std::string& suffix) {
  std::vector<float> b(values.size());
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(values[i]);
  const std::string name = g.uniqueValueName(g.node(node).name + suffix);
  ir::ValueId v = g.addConstant(name, Tensor::fromVector<float>(Shape{static_cast<int64_t>(b.size())}, b)).id;
  ir::Node& n = g.node(node);
  if (n.inputs.size() < 3) n.inputs.resize(3, ir::kNoValue);
  n.inputs[2] = v;
}

std::vector<double> biasOf(const ir::Graph& g, const ir::Node& n, int64_t channels) {
  std::vector<double> b(static_cast<size_t>(channels), 0.0);
  if (n.hasInput(2)) {
    const Tensor& t = *ir::constantInput(g, n, 2, DType::kF32);
    for (int64_t i = 0; i < channels && i < t.numel(); ++i) b[static_cast<size_t>(i)] = t.data<float>()[i];
  }
  return b;
}

}  // namespace

std::string AbsorbedPair::note() const {
  return fmt::format("bias absorption: {} of {} channels lowered by up to {:.4g} into {} (largest value {:.4g} -> {:.4g})", moved, channels,
                     largest, second, hi_before, hi_after);
}

std::vector<std::pair<ir::NodeId, ir::NodeId>> absorbablePairs(const ir::Graph& g) {
  std::vector<std::pair<ir::NodeId, ir::NodeId>> pairs;
  const auto uses = g.uses();
  for (ir::NodeId id : g.order()) {
    const ir::Node& c1 = g.node(id);
    if (!plainConv(g, c1)) continue;
    ir::ValueId v = c1.outputs[0];
    std::optional<ir::NodeId> next = ir::soleReader(g, uses, v);
    const std::string fused = c1.attrString("activation", "");
    if (!fused.empty()) {
      if (!floorActivation(fused, c1.attrFloat("activation_alpha", 0))) continue;
    } else {  // a Relu / LeakyRelu node alone reading it
      if (!next) continue;
      const ir::Node& a = g.node(*next);
      if (!a.domain.empty() || a.outputs.size() != 1 || !floorActivation(a.op, a.op == "LeakyRelu" ? ops::attrFloat(a, "alpha") : 0.0f))
        continue;
      v = a.outputs[0];
      next = ir::soleReader(g, uses, v);
    }
    if (!next) continue;
    const ir::Node& c2 = g.node(*next);
    if (!plainConv(g, c2) || c2.inputs[0] != v || !unpadded(c2)) continue;
    const Tensor& w1 = *ir::constantInput(g, c1, 1, DType::kF32);
    const Tensor& w2 = *ir::constantInput(g, c2, 1, DType::kF32);
    const int64_t G2 = ops::attrInt(c2, "group");
    if (w2.rank() != w1.rank() || G2 < 1 || w2.dim(1) * G2 != w1.dim(0) || w2.dim(0) % G2 != 0) continue;
    pairs.emplace_back(id, *next);
  }
  return pairs;
}

BiasAbsorption absorbHighBiases(ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples, int threads,
                                const std::set<std::string>& fixed) {
  BiasAbsorption r;
  r.samples = samples.size();
  auto pairs = absorbablePairs(g);
  std::erase_if(pairs, [&](const std::pair<ir::NodeId, ir::NodeId>& p) {
    return fixed.count(g.value(g.node(p.second).inputs[0]).name) || fixed.count(g.value(g.node(p.first).outputs[0]).name);
  });
  if (pairs.empty() || samples.empty()) return r;
  // The activation each pair's Conv2 reads, measured once: absorption keeps every value after it on the samples.
  std::map<ir::ValueId, ChannelStats> stats;
  for (auto& [c1, c2] : pairs) stats[g.node(c2).inputs[0]];
  std::set<ir::ValueId> values;
  for (auto& [v, s] : stats) values.insert(v);
  observeValues(g, samples, threads, values, [&](ir::ValueId v, const Tensor& t) {
    if (t.dtype() != DType::kF32 || t.rank() < 2) fail(ErrorCode::kInternal, "value '{}' is not a float32 tensor of rank 2 or more", g.value(v).name);
    const int64_t outer = t.dim(0), C = t.dim(1), inner = t.numel() / std::max<int64_t>(1, outer * C);
    ChannelStats& s = stats.at(v);
    if (s.lo.empty()) {
      s.lo.assign(static_cast<size_t>(C), std::numeric_limits<double>::infinity());
      s.hi.assign(static_cast<size_t>(C), -std::numeric_limits<double>::infinity());
      s.sum.assign(static_cast<size_t>(C), 0.0);
      s.sq.assign(static_cast<size_t>(C), 0.0);
    }
    const float* p = t.data<float>();
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t c = 0; c < C; ++c) {
        const float* q = p + (b * C + c) * inner;
        double lo = s.lo[static_cast<size_t>(c)], hi = s.hi[static_cast<size_t>(c)], sum = 0, sq = 0;
        for (int64_t i = 0; i < inner; ++i) {
          const double x = q[i];
          lo = std::min(lo, x);
          hi = std::max(hi, x);
          sum += x;
          sq += x * x;
        }
        s.lo[static_cast<size_t>(c)] = lo;
        s.hi[static_cast<size_t>(c)] = hi;
        s.sum[static_cast<size_t>(c)] += sum;
        s.sq[static_cast<size_t>(c)] += sq;
      }
    s.count += static_cast<double>(outer * inner);
  });
  std::set<ir::ValueId> replaced;
  for (auto& [first, second] : pairs) {
    const ir::ValueId v = g.node(second).inputs[0];
    const ChannelStats& s = stats.at(v);
    const Tensor& w2 = *ir::constantInput(g, g.node(second), 1, DType::kF32);
    const int64_t C = static_cast<int64_t>(s.lo.size());
    if (C != w2.dim(1) * ops::attrInt(g.node(second), "group") || s.count <= 0) continue;
    // c per channel: the floor the samples say it never goes below, less three standard deviations of margin.
    std::vector<double> floor(static_cast<size_t>(C), 0.0);
    AbsorbedPair p{g.node(first).name, g.node(second).name, g.value(v).name, C, 0, 0, 0, 0};
    p.hi_before = p.hi_after = -std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < floor.size(); ++c) {
      if (s.lo[c] > 0 && std::isfinite(s.hi[c])) {
        const double mean = s.sum[c] / s.count;
        const double sd = std::sqrt(std::max(0.0, s.sq[c] / s.count - mean * mean));
        floor[c] = std::max(0.0, std::min(s.lo[c], mean - 3 * sd));
      }
      p.hi_before = std::max(p.hi_before, s.hi[c]);
      p.hi_after = std::max(p.hi_after, s.hi[c] - floor[c]);
      if (floor[c] > 0) {
        ++p.moved;
        p.largest = std::max(p.largest, floor[c]);
      }
    }
    if (p.moved == 0) continue;
    // Conv1's channel c loses floor[c]; Conv2's output m gains the sum of its weights reading c times floor[c].
    const ir::Node& c1 = g.node(first);
    std::vector<double> b1 = biasOf(g, c1, C);
    for (size_t c = 0; c < b1.size(); ++c) b1[c] -= floor[c];
    const ir::Node& c2 = g.node(second);
    const int64_t G2 = ops::attrInt(c2, "group"), M2 = w2.dim(0), per_group = w2.dim(1), taps = w2.numel() / (M2 * per_group);
    std::vector<double> b2 = biasOf(g, c2, M2);
    const float* w = w2.data<float>();
    for (int64_t m = 0; m < M2; ++m) {
      const int64_t grp = m / (M2 / G2);
      double add = 0;
      for (int64_t j = 0; j < per_group; ++j) {
        const double f = floor[static_cast<size_t>(grp * per_group + j)];
        if (f == 0) continue;
        double wsum = 0;
        for (int64_t t = 0; t < taps; ++t) wsum += w[(m * per_group + j) * taps + t];
        add += wsum * f;
      }
      b2[static_cast<size_t>(m)] += add;
    }
    for (ir::NodeId n : {first, second})
      if (g.node(n).hasInput(2)) replaced.insert(g.node(n).inputs[2]);
    setBias(g, first, b1, "_b_absorbed");
    setBias(g, second, b2, "_b_absorbed");
    r.pairs.push_back(std::move(p));
  }
  ir::removeUnread(g, replaced);  // (old biases nobody reads any more; a shared one stays)
  return r;
}

}  // namespace npuc::quant
