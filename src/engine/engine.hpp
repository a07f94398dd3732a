// The reference engine: an interpreter of the IR in float32 (and the integer/bool types ops need), the float
// oracle of npuc. It runs nodes in order through the kernel registry, computing each node's output types with
// the op's shape function, and releases intermediate tensors after their last use.
#pragma once

#include "engine/kernel.hpp"

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace npuc::engine {

struct EngineOptions {
  int threads = 1;
  bool profile = false;  // record the wall time of every node (see Engine::profile())
  /// Run an activation that is the only consumer of a Conv's or float arithmetic op's output in its epilogue, and
  /// x * HardSigmoid(x) (HardSwish as opset 13 exports it) too (same bits). Runs with a callback run them apart, so
  /// that the callback sees each op's own output.
  bool fuse_activations = true;
  /// Let the producers of a Concat's inputs write into the Concat's output (Engine::planConcats; same values, the
  /// copies saved).
  bool place_concat_inputs = true;
  /// Run an Add that is the only reader of a Conv's output, and an activation that is the only reader of the Add's,
  /// inside the Conv (Engine::fuseResidualAdds; same bits, one pass over the output saved). Runs with a callback
  /// run the three ops apart, so that the callback sees each op's own output.
  bool fuse_residual_adds = true;
  /// Let Convs and pools hand their values on channel-blocked where the producer and every reader have a blocked form
  /// on this CPU (Engine::blockChannels, kernels::blockedForms; same bits, transposes and planes' packing saved).
  /// Runs with a callback use planes throughout.
  bool block_channels = true;
};

struct NodeTime {
  ir::NodeId node;
  double ms;
};

/// Called after each node with its outputs (for traces and comparisons).
using NodeCallback = std::function<void(const ir::Node&, const std::vector<Tensor>& outputs)>;

class Engine {
 public:
  /// Prepares every node (kernels created, constant weights packed). `graph` must outlive the engine.
  Engine(const ir::Graph& graph, EngineOptions opts = {});
  ~Engine();

  /// Runs with inputs by name; returns the graph outputs in order. Checks dtypes and shapes of the inputs
  /// against the graph's declared static input types.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, const NodeCallback& cb = {});
  /// Inputs in graph-input order.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const NodeCallback& cb = {});

  const ir::Graph& graph() const { return g_; }
  /// Per-node wall times of the last run (empty unless EngineOptions::profile).
  const std::vector<NodeTime>& profile() const { return profile_; }
  /// How many residual Adds run inside their Conv (EngineOptions::fuse_residual_adds).
  size_t fusedResidualAdds() const { return residual_.size(); }
  /// How many x * HardSigmoid(x) pairs run in their producer's epilogue (EngineOptions::fuse_activations).
  size_t fusedSigmoidMuls() const { return sigmoid_mul_.size(); }
  /// How many Convs, pools and Concats write their value channel-blocked (EngineOptions::block_channels).
  size_t blockedValues() const { return blocked_out_.size(); }

 private:
  /// An activation that is the only reader of a Conv's or float arithmetic op's output runs in its epilogue (the
  /// activation an alias); so does x * HardSigmoid(x) (HardSwish as opset 13 exports it: x read by a HardSigmoid and
  /// a Mul of x and the HardSigmoid's output, which the Mul alone reads; both ops aliases). Their own kernels and an
  /// unfused one of the producer are kept in unfused_ for runs with a callback.
  void fuseActivations();
  /// The node at `pos` becomes an alias of its input k (fused into its producer): its own kernel moves to unfused_,
  /// fused_ records k.
  void makeAlias(size_t pos, int k);
  /// Add(Conv(...), R) [-> Relu / LeakyRelu / Clip], R of the Add's own type and ready before the Conv runs, the
  /// Conv's output read by the Add alone: the Conv's kernel adds R and applies the activation to each part of its
  /// output as it finishes it; the Add and the activation become aliases (their own kernels kept in unfused_).
  void fuseResidualAdds();
  /// Concat along an axis with only 1s before it: its inputs are slabs of its output, so an input that only the
  /// Concat reads is written there by its producer (KernelCall::placed) and the Concat copies nothing for it.
  void planConcats();
  /// Chains of Convs passing channel-blocked values (kernels::Layout::kBlocked8): a Conv's value (its output through
  /// the activation and residual Add fused into it) is written blocked when the Conv has a blocked output form
  /// (kernels::blockedForms), it is no graph output, and every reader is a Conv reading it as its input with a
  /// blocked input form, or a Conv adding it as its fused residual — whose own value is then blocked with it or
  /// neither is (the kernel adds the two element by element). Everything else reads and writes planes.
  void blockChannels();

  const ir::Graph& g_;
  EngineOptions opts_;
  ThreadPool* pool_;
  std::vector<std::unique_ptr<Kernel>> kernels_;  // by position in g_.order()
  std::map<ir::NodeId, size_t> pos_;              // node -> its position
  std::vector<std::vector<ir::ValueId>> release_after_;  // values whose last use is node i
  std::vector<NodeTime> profile_;
  size_t num_values_ = 0;                 // value ids are below this
  std::vector<ir::ValueId> constants_;    // preloaded into every run
  std::map<size_t, int> fused_;  // positions of ops fused into their producer (now aliases) -> the input passed on
  std::map<size_t, ir::ValueId> residual_;  // Conv position -> the residual its kernel adds (fuseResidualAdds)
  std::set<size_t> blocked_in_, blocked_out_;  // positions of nodes reading / writing channel-blocked (blockChannels)
  std::map<size_t, std::unique_ptr<Kernel>> unfused_;  // the kernels to run with a callback (fused ops apart)
  std::map<size_t, size_t> sigmoid_mul_;  // a producer with x * HardSigmoid(x) fused -> the Mul's position
  static constexpr size_t kNotPlaced = std::numeric_limits<size_t>::max();
  struct Placement {
    size_t concat = kNotPlaced;  // position of the Concat whose output holds this output
    size_t offset = 0;           // bytes into it
  };
  std::vector<std::vector<Placement>> place_;  // by position, per output
};

/// Evaluates one node on concrete inputs (used by constant folding).
std::vector<Tensor> evalNode(const ir::Graph& g, const ir::Node& n, const std::vector<Tensor>& inputs);

}  // namespace npuc::engine
