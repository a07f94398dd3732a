// A target: what an NPU supports and how fast it is, loaded from targets/<name>.yaml.
//
// Each supported op names its engine and a list of rules. A rule is a predicate over the node's facts
// (facts.hpp) plus the user-facing text that both the availability report and the generated supported-ops
// page show. A target may inherit another: its ops and engines replace the parent's entry by entry.
#pragma once

#include "ir/graph.hpp"
#include "support/numerics.hpp"
#include "target/expr.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace npuc::target {

struct Rule {
  std::string id;      // "drpai.conv.kernel"
  std::string text;    // the rule, for people: "Conv kernel_shape must be 1x1, 3x3, …"
  Expr when;           // the rule applies only when this holds (empty: always)
  Expr require;        // what must hold
  std::string actual;  // template of the actual values: "kernel {kernel_h}x{kernel_w}"
  std::string fix;     // suggested fix (template), may be empty
  /// The named relaxation that turns this rule off (`--relax NAME` of check and translate): what npuc runs beyond
  /// what the vendor documents. Empty: the rule always applies.
  std::string relaxation;
};

/// Derives facts from a table: when the key facts equal a row's key, the row's values become facts.
///   lookup: [{key: [kernel_h, stride_h, pad_kind], values: [min_w, min_h], default: [1, 1],
///             rows: [[[3, 1, 'same'], [6, 3]], …]}]
struct Lookup {
  std::vector<std::string> key;
  std::vector<std::string> values;
  std::vector<std::pair<Value, std::vector<Value>>> rows;
  std::vector<Value> defaults;  // empty: the value facts stay unset when no row matches
};

struct OpSupport {
  std::string op;
  std::vector<Lookup> lookups;
  std::string engine;  // engine name, or "folded" for ops the optimizer removes
  std::string note;
  std::vector<Rule> rules;
};

struct Engine {
  std::string name;
  std::string kind;  // "mac" or "vector"
  double clock_mhz = 0;
  double macs_per_cycle = 0;   // MAC engines
  double elems_per_cycle = 0;  // vector engines
  double bytes_per_cycle = 0;  // memory bandwidth; 0 = not modelled
  double overhead_us = 0;      // fixed cost per layer
  /// Cycles per output element and kernel tap of a MAC layer (the loop overhead around the channel sums), on top of
  /// its MACs / macs_per_cycle; 0 = not modelled.
  double cycles_per_tap = 0;
  /// MAC layers whose groups have at most narrow_group_channels input channels (depthwise layers, 3x3s behind a
  /// squeeze) run at narrow_macs_per_cycle instead of macs_per_cycle; 0 = no such class.
  int64_t narrow_group_channels = 0;
  double narrow_macs_per_cycle = 0;
  /// Pointwise MAC layers (one kernel tap: 1x1 convolutions, inner products) run at this rate; 0 = macs_per_cycle.
  double pointwise_macs_per_cycle = 0;
  /// A sparse convolution kernel (TIDL's conv2dKernelType 0: it skips zero weights): a convolution on it takes its
  /// MAC time x (sparse_fixed_fraction + (1 - sparse_fixed_fraction) x its weights' nonzero fraction).
  bool sparse_kernel = false;
  double sparse_fixed_fraction = 0;
  /// Ops this engine runs in software (TIDL's EVE emulates float on its ARP32: inner products, global pooling,
  /// softmax) and their cycles per operation (a MAC, or an input element): such a layer costs that, not its rate.
  /// The target file gives a map op: cycles, or a list of ops with one cycles_per_emulated_op.
  std::map<std::string, double> emulated_ops;
  std::string note;
};

/// A set of cores a target's throughput is estimated for (TIDL's multi-core table): cores per engine, e.g. 2 EVE +
/// 1 DSP. One engine: frames run in parallel on its cores (one layers group). Two: two layers groups pipelined, the
/// first engine's cores running the first layers of frames while the second engine's run the last layers of earlier
/// frames; the cut between the groups is chosen by the estimate (docs/cost-model.md).
struct CoreSet {
  std::string name;
  std::vector<std::pair<std::string, int>> cores;  // (engine, count), in pipeline order
};

/// How the target's memory is laid out (the `address_map` block of a target file; defaults: DRP-AI's §6 rules).
struct AddressRules {
  uint64_t base = 0x4000'0000;   // where the map starts when the user gives no definition (-addr)
  uint64_t subspace_align = 64;  // Sub-Space addresses
  uint64_t element_align = 64;   // Element-Space start addresses
  uint64_t size_align = 64;      // Element-Space sizes, unless size_align_of names the space
  std::map<std::string, uint64_t> size_align_of = {{"drp_param", 16}, {"desc_aimac", 16}, {"desc_drp", 16}};
};

struct Target {
  std::string name;
  std::string description;
  Numerics numerics = Numerics::kFp32;
  std::vector<std::string> inherits;  // chain, nearest first
  int address_bits = 32;
  AddressRules address_rules;
  std::map<std::string, Engine> engines;
  std::map<std::string, OpSupport> ops;
  std::vector<Rule> graph_rules;  // rules every node must meet (batch size, rank, …)
  /// The target's relaxations (name -> what it allows), each turning off the rules that name it; relaxed: those
  /// applied (relax()), whose rules are gone from graph_rules and ops.
  std::map<std::string, std::string> relaxations;
  std::vector<std::string> relaxed;
  std::string default_engine;     // when set, ops not listed under 'ops' are supported there without rules
  std::vector<CoreSet> core_sets;  // throughput estimates (empty: none)
  double group_switch_us = 0;      // per frame, handing it from one layers group to the next
  /// A channel-last model's boundary Transposes (Appendix B of the DRP-AI manual) are taken into the layers next to
  /// them as channel-last references (package::RefLayout) instead of running as layers.
  bool absorb_boundary_transposes = false;
  /// The memory each core gives a network's buffers (its layers' weights, the activations, the inputs and outputs, the
  /// parameters and descriptors), MiB; 0: not checked. TIDL: CMEM, ~64 MB per core (T:L62).
  double core_memory_mb = 0;
  /// The engine of each layers group (TIDL: "Layergroup 1 is dispatched to EVE, and layergroup 2 to DSP", T:L755):
  /// group k runs on group_engines[k - 1]. Empty: groups are pipeline stages only.
  std::vector<std::string> group_engines;
  std::filesystem::path file;

  const OpSupport* findOp(const std::string& op) const;
  /// What the target says about node n: a registered custom op (plugin) runs without rules on the engine its
  /// definition names (customOpEngine), nullptr when the target has none; npuc's own ops (ai.npuc) as the ONNX op
  /// they extend; any other op by its name (findOp).
  const OpSupport* supportOf(const ir::Node& n) const;
  /// The engine a custom op whose definition names `wanted` runs on here: the engine of that name, else the first
  /// engine of that kind ("mac" / "vector"); "" when there is none.
  std::string customOpEngine(const std::string& wanted) const;
};

/// Folders searched for targets: $NPUC_TARGETS_DIR (if set), then the built-in targets folder.
std::vector<std::filesystem::path> targetDirs();
/// Loads a target by name (searched in targetDirs()) or by path to a .yaml file. Errors name the file and field.
Target loadTarget(const std::string& name_or_path);
/// Turns off the rules of the named relaxations ("all": every one the target declares; an entry may list several,
/// "a,b"). A name the target does not declare is an error (kInvalidArgument) listing those it does.
void relax(Target& t, const std::vector<std::string>& names);
/// Names of the targets found in targetDirs(), sorted.
std::vector<std::string> listTargets();

}  // namespace npuc::target
