// The time estimate: per layer of the optimized graph, the engine it runs on and its estimated time from the
// target's cost model (docs/cost-model.md).
#pragma once

#include "ir/graph.hpp"
#include "target/target.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::codegen {

struct LayerEstimate {
  int ith = 0;
  std::string name;
  std::string opexp;   // the ONNX ops this layer computes, "Conv+BatchNormalization+Relu"
  std::string engine;  // engine name ("unsupported": the target has no line for the op); a folded op that still runs
                       // as a layer is on the target's data-movement engine
  // kernel: w, h, stride, dilation, pads (l, r, t, b); 0 when not a window op
  int64_t ker_w = 0, ker_h = 0, stride = 0, dilation = 0, pad_l = 0, pad_r = 0, pad_t = 0, pad_b = 0;
  int64_t in_c = 0, in_w = 0, in_h = 0, out_c = 0, out_w = 0, out_h = 0;
  int64_t macs = 0;
  int64_t bytes = 0;  // activations read and written plus weights, at the target's numerics
  int64_t taps = 0;   // MAC layers: output elements x kernel taps (1 for inner products)
  double time_us = 0;
  std::vector<double> single_core_us;  // the layer's time on each engine (the target's engines in name order)
  /// Convolutions on a target whose engines have a sparse kernel (TIDL's conv2dKernelType): "sparse" or "dense";
  /// "" elsewhere. weight_density: the fraction of the layer's constant weights that are not zero (the sparse
  /// kernel skips the rest).
  std::string conv_kernel;
  double weight_density = 1;
  /// Whether TIDL's dense kernel takes the convolution: 1x1 or 3x3, stride 1, dilation 1 (the others are sparse).
  bool dense_ok = false;
  // What the time depends on besides the above (chooseConvKernels re-times a layer from them).
  std::string op;
  int64_t elems = 0, in_elems = 0, out_elems = 0;
  /// A layer the package runs wider than the target's numerics (kept in float in an int8 package: widenLayers): its
  /// type ("float32"), and its element size over the target's (compute and bytes scale by it). "" and 1 otherwise.
  std::string precision;
  double width = 1;
  /// Whether such a layer converts its input from / its output to the target's numerics (false where the layer
  /// before / every layer after runs at the same width: they exchange wide values).
  bool convert_in = true, convert_out = true;
};

struct Estimate {
  std::vector<LayerEstimate> layers;
  double total_us = 0;
  std::vector<std::pair<std::string, double>> per_engine_us;  // sorted by engine name
  /// Single core: the model's time were every layer (folded ones aside) on one engine — the figure a vendor's
  /// single-core table gives (TIDL's "EVE" and "DSP" columns). By engine name, sorted; NaN for an engine without a
  /// MAC rate when the model has MAC layers (it cannot run them alone).
  std::vector<std::pair<std::string, double>> single_core_us;
  /// Throughput per core set of the target (Target::core_sets): frames per second, and for two layers groups the
  /// cut the estimate chose — the first `first_group_layers` layers that take time (in program order; folded layers
  /// aside) on the first engine.
  struct CoreSetEstimate {
    std::string name;
    double roi_per_s = 0;                // NaN: an engine of the set cannot run its layers
    int first_group_layers = -1;         // two groups only
    double period_us = 0;                // the pipeline's slowest stage per frame
  };
  std::vector<CoreSetEstimate> multi_core;
  /// The package's own layers groups (placeOnGroups): per group its engine and time, and the pipeline they make — the
  /// slowest group's time per frame (plus group_switch_us with more than one group). Empty without groups.
  struct GroupEstimate {
    int group = 0;
    std::string engine;
    double us = 0;
  };
  std::vector<GroupEstimate> groups;
  double groups_period_us = 0;
};

/// Estimates every node of an optimized graph on a target (nodes the target does not list count 0 µs). A layer's
/// time on an engine (clock f MHz): overhead + max(compute, memory), compute = MACs / (rate · f) + taps ·
/// cycles_per_tap / f for a layer with MACs on an engine with a MAC rate (the rate of the layer's class: narrow groups,
/// pointwise, other), ops · cycles / f for an op the engine emulates, else elements / (elems_per_cycle · f);
/// memory = bytes / (bytes_per_cycle · f); then the
/// throughput of each of the target's core sets (docs/cost-model.md).
Estimate estimate(const ir::Graph& g, const target::Target& t);

/// TIDL's automatic choice (the import tool's default): the dense kernel for a convolution whose output plane is
/// smaller than 64 x 64 (width x height < 4096) and that the dense kernel takes (LayerEstimate::dense_ok), the sparse
/// kernel for the others.
inline bool denseByDefault(int64_t out_w, int64_t out_h) { return out_w * out_h < 64 * 64; }

/// Sets the kernel of convolution layers (the rest keep estimate()'s automatic choice) and re-times them on every
/// engine, with the totals: `all` (-1: none; 0 sparse, 1 dense) every convolution; `by_index` one value per name of
/// `index_names` (the package's layers: TIDL's conv2dKernelType without its input and output layers; the values of
/// layers that are no convolution ignored); `by_name` layers by name. Errors (kInvalidArgument) name the layer and
/// the rule: an unknown or non-convolution layer by name, a list of the wrong length, a value not 0 or 1, the dense
/// kernel for a convolution it does not take (not 1x1 / 3x3, stride 1, dilation 1), a target without a sparse kernel.
/// Call before throughput().
void chooseConvKernels(Estimate& e, const target::Target& t, int all, const std::vector<int>& by_index,
                       const std::vector<std::string>& index_names, const std::map<std::string, int>& by_name);

/// Layers the package runs wider than the target's numerics (`wide`: layer name -> its type, e.g. the layers an int8
/// package keeps in float32): re-timed on every engine with their MAC and element rates divided, and their bytes
/// multiplied, by the ratio of the element sizes (docs/cost-model.md). Names without a layer are ignored (the
/// quantizer has refused unknown ones). With the graph `g` the estimate was made of, a layer reading a layer of its
/// width, or read only by such layers (or the model's caller), is not charged that conversion. Call before
/// throughput().
void widenLayers(Estimate& e, const target::Target& t, const std::map<std::string, DType>& wide, const ir::Graph* g = nullptr);

/// Removes the layers named in `names` (nodes lowering turned into no descriptor: aliases, fused casts) and their
/// time; the rest are renumbered. The throughput is left as it was: call throughput() again.
void dropLayers(Estimate& e, const std::set<std::string>& names);

/// A package's layers groups (`group_of`: layer name -> group 1..; layers not named keep their place) on the target's
/// group_engines: each layer moved to its group's engine and re-timed there, the totals with it, and e.groups /
/// groups_period_us set. Without group_engines the layers stay where they are and only the groups' times are given.
void placeOnGroups(Estimate& e, const target::Target& t, const std::map<std::string, int>& group_of);

/// (Re)computes e.multi_core from the layers' single-core times, for each of the target's core sets.
void throughput(Estimate& e, const target::Target& t);

}  // namespace npuc::codegen
