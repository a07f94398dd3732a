// The state of one translate() run, shared by its stages (driver/translate_stages.cpp) and by the numerics strategy
// of the target's family (driver/numerics/): what each stage reads and what it leaves for the next. docs/architecture.md,
// "One translate, stage by stage", walks a run through it.
#pragma once

#include "npuc/model.hpp"

#include "codegen/cost.hpp"
#include "codegen/lower.hpp"
#include "prepost/prepost.hpp"
#include "support/file.hpp"
#include "target/target.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>

namespace npuc {

namespace numerics {
class Strategy;
}

// Defined in model.cpp: the graph behind a Model, for the stages.
const ir::Graph& graphOf(const Model& m);
ir::Graph& mutableGraphOf(Model& m);

/// LoadOptions that read the model files TranslateOptions names (the model, and a Caffe network's weights); the
/// caller sets what is done to the model.
inline LoadOptions modelFiles(const TranslateOptions& o) {
  LoadOptions lo;
  lo.caffe_model = o.caffe_model;
  lo.format = o.model_format;
  return lo;
}

/// Every layer an int8 package keeps in float, at any width (--keep-float, --keep-float16): what the quantizer leaves
/// in float.
inline std::vector<std::string> keptInFloat(const TranslateOptions& o) {
  std::vector<std::string> all = o.keep_float;
  all.insert(all.end(), o.keep_float16.begin(), o.keep_float16.end());
  return all;
}

struct Translation {
  explicit Translation(const TranslateOptions& opts);
  ~Translation();

  const TranslateOptions& o;
  TranslateResult res;
  target::Target t;
  std::unique_ptr<numerics::Strategy> numerics;  // the target's family: its calibration, rewrites and files
  std::optional<OutputDir> out;                  // the staging folder, published at the end (or with an error report)

  // The model, as the stages leave it: imported, prepared for the numerics, optimized, quantized or calibrated, with its
  // pre/post-processing or AIPP stage, checked (the check's rows are res.errors).
  std::optional<Model> model;
  std::optional<prepost::PrePost> prepost_def;  // -prepost's definition, for the manifest's frames and _prepost_opt.yaml

  // Estimate, lowering and package (when the model is supported).
  std::optional<codegen::Estimate> estimate;
  std::optional<codegen::Lowered> lowered;
  std::future<void> summary;  // the summary files, written on a second thread while the package is written

  // A package serving the sizes of ranged input dimensions (translate_ranges.cpp): the dims the range leaves open, and the
  // graph as it was lowered (with its constants), whose shape inference gives the package's table.
  std::vector<package::RangeSymbol> range_symbols;
  std::unique_ptr<ir::Graph> range_graph;

  /// The staging folder and the path prefix of its files (<staging>/PREFIX).
  const std::filesystem::path& dir() const { return out->path(); }
  std::filesystem::path base() const { return out->path() / o.prefix; }
  /// Lists a file written into the staging folder (by its name) among the result's files.
  void listFile(const std::filesystem::path& f) { res.files.push_back(f.filename().string()); }
  /// Writes `text` to <staging>/PREFIX<suffix> and lists it.
  void put(const std::string& suffix, const std::string& text);
  void warn(std::string w) { res.warnings.push_back(std::move(w)); }
  /// Whether the model passed the check: the package and the estimate are made only then.
  bool supported() const { return res.errors.empty(); }

  /// The error report for a model that could not be imported or lowered: one row with the message (or one per unknown
  /// op), published in the output folder before the error goes up. Never throws (the original error is the one to report).
  void reportFailure(const Error& e, const char* stage, const char* verb);
};

/// One named step of translate(): its work, and when it applies (default: always). The runner (translate.cpp) reports
/// each stage's time through the progress callback.
struct Stage {
  const char* name;
  void (*run)(Translation&);
  bool (*applies)(const Translation&) = nullptr;
};

}  // namespace npuc
