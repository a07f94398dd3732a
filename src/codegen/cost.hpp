// The time estimate: per layer of the optimized graph, the engine it runs on and its estimated time from the
// target's cost model (docs/cost-model.md).
#pragma once

#include "ir/graph.hpp"
#include "target/target.hpp"

#include <set>
#include <string>
#include <vector>

namespace npuc::codegen {

struct LayerEstimate {
  int ith = 0;
  std::string name;
  std::string opexp;   // the ONNX ops this layer computes, "Conv+BatchNormalization+Relu"
  std::string engine;  // engine name, or "folded"
  // kernel: w, h, stride, dilation, pads (l, r, t, b); 0 when not a window op
  int64_t ker_w = 0, ker_h = 0, stride = 0, dilation = 0, pad_l = 0, pad_r = 0, pad_t = 0, pad_b = 0;
  int64_t in_c = 0, in_w = 0, in_h = 0, out_c = 0, out_w = 0, out_h = 0;
  int64_t macs = 0;
  int64_t bytes = 0;  // activations read and written plus weights, at the target's numerics
  double time_us = 0;
  std::vector<double> single_core_us;  // the layer's time on each engine (the target's engines in name order)
};

struct Estimate {
  std::vector<LayerEstimate> layers;
  double total_us = 0;
  std::vector<std::pair<std::string, double>> per_engine_us;  // sorted by engine name
  /// Single core: the model's time were every layer (folded ones aside) on one engine — the figure a vendor's
  /// single-core table gives (TIDL's "EVE" and "DSP" columns). By engine name, sorted; NaN for an engine without a
  /// MAC rate when the model has MAC layers (it cannot run them alone).
  std::vector<std::pair<std::string, double>> single_core_us;
};

/// Estimates every node of an optimized graph on a target (nodes the target does not list count 0 µs). A layer's
/// time on an engine (clock f MHz): overhead + max(compute, memory), compute = MACs / (macs_per_cycle · f) for a
/// layer with MACs on an engine with a MAC rate, else elements / (elems_per_cycle · f); memory = bytes /
/// (bytes_per_cycle · f) (docs/cost-model.md).
Estimate estimate(const ir::Graph& g, const target::Target& t);

/// Removes the layers named in `names` (nodes lowering turned into no descriptor: aliases, fused casts) and their
/// time; the rest are renumbered.
void dropLayers(Estimate& e, const std::set<std::string>& names);

}  // namespace npuc::codegen
