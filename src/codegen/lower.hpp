// Lowering an optimized, checked graph to an object package: one descriptor per layer (MAC engine for
// convolution, fully-connected and pooling; vector engine for the rest), weights in the target's numerics,
// parameter blocks, activations placed by the memory planner, everything at absolute addresses of the address
// map. Activations that feed Relu/Clip/LeakyRelu alone get the activation fused into their descriptor.
#pragma once

#include "ir/graph.hpp"
#include "package/package.hpp"
#include "plan/addrmap.hpp"
#include "target/target.hpp"

#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace npuc::codegen {

struct LowerOptions {
  std::string prefix;
  bool reuse_memory = false;                 // place 'data' by liveness instead of one buffer per layer
  bool concat_in_place = true;              // a Concat's inputs written into their slabs of its result (no copy layer)
  std::optional<plan::AddrMapDef> addr_def;  // the user's definition; default map when absent
  std::string intm_yaml_name;                // named by the §9 overflow error
  std::map<std::string, package::ImageInfo> input_images;  // pre-processed inputs: the frame they hold
  kernels::pow2::Options pow2;               // int8-pow2 targets: the numerics' options (the manifest's "pow2")
  /// Mixed precision (int8 packages; docs/numerics.md "Mixed precision"): layers (node names) that run in float16 —
  /// their float activations and weights in float16, biases in float32 — with a cast layer from and back to the
  /// float32 of the int8 conversions around them. The quantizer has kept them in float (QuantizeOptions::keep_float).
  std::set<std::string> half_layers;
};

/// One entry of a PREFIX_tbl_addr_<space>.txt table.
struct Placement {
  std::string space, name;
  uint64_t addr = 0, size = 0;
};

/// A fusion lowering made (reported in PREFIX_prepost_opt.yaml for pre/post-processing).
struct Fusion {
  std::string layer, what;
  std::vector<std::string> absorbed;  // graph nodes that became part of `layer` (no descriptor of their own)
};

struct Lowered {
  package::Package pkg;
  std::vector<Fusion> fusions;
  std::vector<std::string> aliased;       // nodes lowered to aliases of their input (Reshape, Identity, same-type Cast),
                                          // and Concats done in place (their inputs are slabs of their result)
  plan::AddressMap map;
  std::vector<Placement> placements;      // every buffer, weight, parameter block and stream, by space
  uint64_t data_bytes = 0, data_lower_bound = 0;  // activations in 'data' and the peak of live bytes
  std::vector<ir::Layout> input_layouts, output_layouts;  // of pkg.inputs / pkg.outputs (the data list files)
  /// Per descriptor (by seq), per reference (inputs, then outputs): the graph value whose bytes it holds (kNoValue for a
  /// value the lowering made: a weight converted, a helper tensor), and whether it carries other dims than that value's
  /// own (a layer's view: NC1W, a product's rows). Shape ranges follow the values' dims (driver/translate_ranges.cpp).
  std::vector<std::vector<ir::ValueId>> ref_values;
  std::vector<std::vector<char>> ref_views;
};

/// Throws kUnsupported naming the node for ops that have no descriptor yet, and the §9 overflow error when the
/// package does not fit 32 bits.
Lowered lower(const ir::Graph& g, const target::Target& t, const LowerOptions& o);
/// Same, releasing each constant of `g` once its bytes are in the weight image (peak memory: the weights are
/// held once, not twice). `g` keeps its structure but loses its constant data: use it for nothing else after.
Lowered lowerConsuming(ir::Graph& g, const target::Target& t, const LowerOptions& o);

/// A node the lowering has no package form for, with the lowering's reason.
struct PackageGap {
  int index = 0;  // position in the graph's node order (the index of the availability report); -1: a model output
  std::string reason;
  std::string output;  // index -1: the model output no layer computes
};
/// Every node of `g` that has no package form for target `t` (none when the target's numerics have no packages
/// yet): each node is lowered alone, in a graph of its own with its input types and constants, as translate would
/// lower it (results cached per op, attributes, input types and constants). `check` reports these with the target's
/// rules, so whatever it passes, translate packages.
std::vector<PackageGap> packageGaps(const ir::Graph& g, const target::Target& t);

/// Reshape, Flatten, Squeeze, Unsqueeze, Identity: the same bytes under another shape, lowered as an alias of the
/// input (no descriptor) unless the result is a graph output.
bool isViewOp(const ir::Node& n);

/// (space, contents of PREFIX_tbl_addr_<space>.txt) for data, data_in, data_out, drp_config, weight, work and
/// merge (every space); then PREFIX_data_{in,out}_list.txt contents.
std::vector<std::pair<std::string, std::string>> tblAddrTexts(const Lowered& l);
std::string ioListText(const Lowered& l, bool inputs);

}  // namespace npuc::codegen
