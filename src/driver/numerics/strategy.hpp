// A numerics family on the compiler's side: how translate() prepares, calibrates and rewrites a model for the family,
// and what it writes beside the package. One class per family (fp32.cpp, fp16.cpp, int8_affine.cpp, int8_pow2.cpp,
// int8_checked.cpp), made per translation (it keeps its own state between the hooks). The stages of translate()
// (driver/translate_stages.cpp) call the hooks in the order below and never test the family themselves.
//
// What a package of the family holds (the layer forms the lowering may emit, the validator's and the runtime's rules)
// is the family's row of NumericsTraits (support/numerics.hpp): the runtime never depends on the compiler.
// docs/numerics.md, "Adding a numerics family", is the worked example.
#pragma once

#include "support/numerics.hpp"

#include "npuc/tensor.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace npuc {

namespace ir {
class Graph;
}

class Model;
struct Translation;
namespace codegen {
struct LowerOptions;
struct Lowered;
}  // namespace codegen

namespace numerics {

class Strategy {
 public:
  virtual ~Strategy() = default;
  Numerics id() const { return id_; }

  /// Before any work: the family's own options checked (bad values are errors naming the key); options that belong to
  /// another family, when given, said to be ignored (never silently dropped).
  virtual void checkOptions(Translation& tr);
  /// Whether the import resolves the model (shapes, constants folded): a QDQ model's weight DequantizeLinear nodes
  /// must stay for int8-affine, whose prepareImported resolves it after making its integer layers.
  virtual bool resolveAtImport() const { return true; }
  /// On the imported model, before the optimizer.
  virtual void prepareImported(Translation& tr, Model& m);
  /// Pass pipelines run after the optimizer for this family (e.g. layers without an integer form rewritten into ones
  /// with), each to its fixpoint, in order (two passes that undo each other belong to different pipelines).
  virtual std::vector<std::vector<std::string>> afterOptimize(const Translation&, const Model&) const { return {}; }
  /// On the optimized model, before pre/post-processing: calibration and quantization from --calib. By default the
  /// samples are checked and said to be unused, for the reason calibrationUnused() gives.
  virtual void calibrate(Translation& tr, Model& body);
  virtual std::string calibrationUnused() const { return "quantization is not implemented yet"; }
  /// Whether this translation writes an object package (otherwise: the check and the estimate only, and why).
  virtual bool writesPackage(const Translation&) const { return true; }
  virtual std::string whyNoPackage(const Translation&) const { return {}; }
  /// On the checked model, just before lowering: what the package stores differs from the model the check and the
  /// estimate saw (quantized to its codes, biases corrected for its rounding).
  virtual void beforeLowering(Translation&) {}
  /// The lowering's options of the family.
  virtual void lowerOptions(codegen::LowerOptions&) const {}
  /// The family's files beside the package (written with Translation::put).
  virtual void writeFiles(Translation&, const codegen::Lowered&) {}

 protected:
  explicit Strategy(Numerics id) : id_(id) {}

 private:
  Numerics id_;
};

/// The strategy of a family, new for one translation.
std::unique_ptr<Strategy> makeStrategy(Numerics n);

/// The number of threads of calibration runs (TranslateOptions::threads; 0: every core).
int calibrationThreads(int requested);

}  // namespace numerics

/// The calibration tensors of TranslateOptions (by input name; each stacks one or more samples along its first axis)
/// as samples of the model's inputs (views, nothing copied); errors name the input and the rule.
std::vector<std::map<std::string, Tensor>> calibrationSamples(const ir::Graph& g, const std::map<std::string, std::vector<Tensor>>& data);

}  // namespace npuc
