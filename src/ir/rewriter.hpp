// Rewriter: the one way passes edit a Graph. It keeps producer bookkeeping, graph outputs and names
// consistent, and records what it did so a pass can report whether it changed anything.
#pragma once

#include "ir/graph.hpp"

#include <optional>
#include <set>

namespace npuc::ir {

class Rewriter {
 public:
  explicit Rewriter(Graph& g) : g_(g) {}

  Graph& graph() { return g_; }
  bool changed() const { return changed_; }

  /// Every use of `from` (node inputs and graph outputs) now reads `to`. When `from` is a graph output, `to`
  /// takes over its name so the model interface does not change.
  void replaceAllUses(ValueId from, ValueId to);
  /// Removes a node; its outputs must be unused (or are removed with it when unused).
  void eraseNode(NodeId id);
  /// Turns a value produced by a node into a constant holding `t`, and removes the producing node when none
  /// of its other outputs is used.
  void makeConstant(ValueId v, Tensor t);
  /// Adds a node; call graph().topoSort() (or finish()) before anything iterates the order.
  Node& addNode(std::string op, std::string name, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                std::string domain = "");
  /// Re-sorts the order. (Values left without producer or reader stay until the dce pass or Graph::removeValue.)
  void finish();

 private:
  Graph& g_;
  bool changed_ = false;
};

/// The one node reading `v` (through exactly one input) when `v` is not a graph output; nullopt otherwise.
std::optional<NodeId> soleReader(const Graph& g, const UseMap& uses, ValueId v);
/// Removes each of `values` that no node reads and that is not a graph output (constants a rewrite replaced; one that
/// something still reads stays).
void removeUnread(Graph& g, const std::set<ValueId>& values);

}  // namespace npuc::ir
