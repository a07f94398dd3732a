// Pass API and pass manager.
//
// A Pass reports whether it changed the graph. The manager runs a pipeline (an ordered list of pass names),
// optionally to a fixpoint with an iteration cap, verifies the graph after every pass in debug builds (or when
// asked), and adds "pass <name>" to any error that escapes.
#pragma once

#include "ir/graph.hpp"

#include <memory>
#include <string>
#include <vector>

namespace npuc::passes {

struct PassContext {
  bool verify_each = false;  // always on in debug builds
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const char* name() const = 0;
  /// Returns true when the graph changed.
  virtual bool run(ir::Graph& g, PassContext& ctx) = 0;
};

/// Creates a pass by name; throws kInvalidArgument for unknown names.
std::unique_ptr<Pass> createPass(const std::string& name);
/// Every registered pass name, in registration order.
std::vector<std::string> passNames();

class PassManager {
 public:
  explicit PassManager(std::vector<std::string> pipeline);
  /// Runs the pipeline once; returns whether anything changed.
  bool runOnce(ir::Graph& g, PassContext& ctx);
  /// Repeats the pipeline until nothing changes (at most `max_iterations` rounds, with a warning when that is not
  /// enough). Returns the rounds run (the last one changed nothing, unless the limit was reached).
  int runToFixpoint(ir::Graph& g, PassContext& ctx, int max_iterations = 16);

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

/// Pipelines, as data.
/// "resolve": makes shapes static and folds constants (the import pipeline).
std::vector<std::string> resolvePipeline();
/// "optimize": exact-in-real-arithmetic simplifications the reference engine benefits from (BatchNorm folding).
std::vector<std::string> optimizePipeline();
/// "translate": the translator's graph optimizer (BatchNorm folding, pattern detection, activation fusion).
std::vector<std::string> translatePipeline();
/// "equalize" (--equalize MODE, docs/calibration.md): cross-layer equalization for int8 weights, "relu" through
/// Relu / LeakyRelu only, "relu6" with Relu6 made Relu first. Another MODE is an error (kInvalidArgument) naming it.
std::vector<std::string> equalizePipeline(const std::string& mode);

}  // namespace npuc::passes
