// npuc::translate: the stages of a translation, in order, over one Translation (driver/translation.hpp), run by one
// runner that times them, reports their progress and publishes the error report of the stages that have one. The
// stages are in translate_stages.cpp, the numerics families' work in numerics/, gears and shape ranges in
// translate_gears.cpp (each gear is one run of these stages), the summary and other reports in translate_reports.cpp.
#include "npuc/model.hpp"

#include "driver/numerics/strategy.hpp"
#include "driver/translate_reports.hpp"
#include "driver/translate_stages.hpp"
#include "quant/range.hpp"
#include "support/error.hpp"
#include "support/file.hpp"
#include "support/yaml.hpp"

#include <algorithm>
#include <chrono>

namespace npuc {

namespace {

/// A stage, and the error report it publishes when it fails with one of `report_codes` (bits of ErrorCode): the
/// model could not be imported / lowered, said in PREFIX_error_report.* as one row (exit status 2 all the same).
struct Step {
  Stage stage;
  const char* report_as = nullptr;  // the report row's rule: <target>.<report_as>
  const char* verb = nullptr;       // "the model must <verb>"
  unsigned report_codes = 0;
};

constexpr unsigned bit(ErrorCode c) { return 1u << static_cast<unsigned>(c); }

// import → prepare numerics → optimize → calibrate / quantize → AIPP or pre/post → check → estimate → quantize for the
// package → lower (memory plan, address map) → plan → write the package → reports → publish.
const Step kSteps[] = {
    {{"options", stages::options}},
    {{"import", stages::import}, "import", "import", bit(ErrorCode::kInvalidInput) | bit(ErrorCode::kUnsupported)},
    {{"numerics", stages::prepareNumerics}},
    {{"optimize", stages::optimize}},
    {{"calibrate", stages::calibrate}},
    {{"aipp", stages::aipp, stages::givesAipp}},
    {{"prepost", stages::prePost, stages::givesPrePost}},
    {{"check", stages::check}},
    {{"save-opt", stages::saveOptOnnx, stages::savesOptOnnx}},
    {{"report", stages::errorReport, stages::unsupported}},
    {{"estimate", stages::estimate, stages::supported}},
    {{"quantize", stages::quantize, stages::writesPackage}},
    {{"lower", stages::lower, stages::writesPackage}, "lowering", "lower", bit(ErrorCode::kUnsupported)},
    {{"plan", stages::plan, stages::writesPackage}},
    {{"ranges", stages::shapeRanges, stages::servesRanges}, "ranges", "serve its shape ranges", bit(ErrorCode::kUnsupported)},
    {{"package", stages::writePackage, stages::writesPackage}},
    {{"plan", stages::planWithoutPackage, stages::estimatesOnly}},
    {{"summary", stages::reports, stages::supported}},
    {{"write", stages::publish}},
};

/// Runs every stage that applies, in order; `progress(stage, seconds)` after each.
void runStages(Translation& tr, const std::function<void(const std::string&, double)>& progress) {
  for (const Step& s : kSteps) {
    if (s.stage.applies && !s.stage.applies(tr)) continue;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      s.stage.run(tr);
    } catch (const Error& e) {
      if (s.report_codes & bit(e.code())) tr.reportFailure(e, s.report_as, s.verb);
      throw;
    }
    if (progress) progress(s.stage.name, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

}  // namespace

namespace {
/// A precision file (docs/tune.md): `layers:` a map layer name -> float32 | float16 (the widths an int8 package keeps
/// a layer in besides its own), and optionally `equalize: relu|relu6`, `bias_correction`, `adaround` and `absorb_bias` (true|false). Errors name the file, the field and
/// the rule.
struct Precision {
  std::vector<std::string> float_layers, half_layers;
  std::string equalize;
  bool bias_correction = false, adaround = false, absorb_bias = false;
};
Precision readPrecisionFile(const std::filesystem::path& file) {
  const std::string text = readFileText(file, kMaxConfigBytes);
  return withContext(file.string(), [&] {
    return readingYaml([&] {
      Precision p;
      YAML::Node root = loadYaml(text);
      if (!root.IsMap() || !root["layers"])
        fail(ErrorCode::kInvalidInput, "a precision file is a YAML map with 'layers': layer name -> float32 or float16 (docs/tune.md)");
      for (auto it = root.begin(); it != root.end(); ++it)
        if (const std::string k = it->first.as<std::string>(); k != "layers" && k != "equalize" && k != "bias_correction" && k != "adaround" &&
            k != "absorb_bias")
          fail(ErrorCode::kInvalidInput, "field '{}': unknown (a precision file has 'layers', 'equalize', 'bias_correction', "
               "'adaround' and 'absorb_bias')", k);
      const YAML::Node l = root["layers"];
      if (!l.IsMap()) fail(ErrorCode::kInvalidInput, "field 'layers': a map layer name -> float32 or float16");
      for (auto it = l.begin(); it != l.end(); ++it) {
        const std::string name = it->first.as<std::string>(), width = it->second.IsScalar() ? it->second.as<std::string>() : "";
        if (width != "float32" && width != "float16")
          fail(ErrorCode::kInvalidInput, "field 'layers.{}': '{}' is not a width npuc runs a layer of an int8 package in (float32, "
               "float16)", name, width);
        (width == "float32" ? p.float_layers : p.half_layers).push_back(name);
      }
      if (root["equalize"]) {
        p.equalize = root["equalize"].IsScalar() ? root["equalize"].as<std::string>() : "";
        if (p.equalize != "relu" && p.equalize != "relu6")
          fail(ErrorCode::kInvalidInput, "field 'equalize': '{}' is not relu or relu6 (translate --equalize)", p.equalize);
      }
      for (auto [field, flag] : {std::pair{"bias_correction", &p.bias_correction}, std::pair{"adaround", &p.adaround},
                                std::pair{"absorb_bias", &p.absorb_bias}})
        if (root[field]) {
          const std::string b = root[field].IsScalar() ? root[field].as<std::string>() : "";
          if (b != "true" && b != "false") fail(ErrorCode::kInvalidInput, "field '{}': '{}' is not true or false", field, b);
          *flag = b == "true";
        }
      return p;
    });
  });
}
}  // namespace

TranslateResult translate(const TranslateOptions& o, const std::function<void(const std::string&, double)>& progress) {
  if (!o.precision.empty()) {  // its layers join --keep-float / --keep-float16
    TranslateOptions merged = o;
    const Precision p = readPrecisionFile(o.precision);
    for (auto [layers, into] : {std::pair{&p.float_layers, &merged.keep_float}, std::pair{&p.half_layers, &merged.keep_float16}})
      for (const std::string& name : *layers)
        if (std::find(into->begin(), into->end(), name) == into->end()) into->push_back(name);
    if (!p.equalize.empty() && !o.equalize.empty() && p.equalize != o.equalize)
      fail(ErrorCode::kInvalidArgument, "--equalize {} and {}'s equalize: {} disagree", o.equalize, o.precision.string(), p.equalize);
    if (!p.equalize.empty()) merged.equalize = p.equalize;
    merged.bias_correction = merged.bias_correction || p.bias_correction;
    merged.adaround = merged.adaround || p.adaround;
    merged.absorb_bias = merged.absorb_bias || p.absorb_bias;
    merged.precision.clear();
    return translate(merged, progress);
  }
  if (!o.calibration_stats.empty()) {  // statistics measured in shards: in scope for this translation's calibration
    TranslateOptions rest = o;
    rest.calibration_stats.clear();
    quant::StatsSource src;
    const std::map<std::string, quant::TensorStats> stats = quant::readStats(o.calibration_stats, "the calibration statistics", &src.key);
    src.provided = &stats;
    quant::ScopedStatsSource scope(src);
    return translate(rest, progress);
  }
  for (const std::string& name : o.keep_float16)
    if (std::find(o.keep_float.begin(), o.keep_float.end(), name) != o.keep_float.end())
      fail(ErrorCode::kInvalidArgument, "layer '{}' is kept both in float32 and in float16 (--keep-float, --keep-float16, a precision file): "
           "choose one width", name);
  if (!o.input_shape_ranges.empty()) {  // resolved to static shapes, or a package serving the sizes left open
    if (!o.dynamic_batch_sizes.empty() || !o.dynamic_image_sizes.empty())
      fail(ErrorCode::kInvalidArgument, "--input_shape ranges and gears (--dynamic_batch_size / --dynamic_image_size) cannot be combined");
    TranslateOptions fixed = o;
    std::vector<package::RangeSymbol> symbols;
    fixed.input_shapes = shapesFromRanges(o, &symbols);
    fixed.input_shape_ranges.clear();
    return symbols.empty() ? translate(fixed, progress) : translateRanges(fixed, symbols, progress);
  }
  // Gears: one ordinary translation per gear, into one output folder.
  if (!o.dynamic_batch_sizes.empty() || !o.dynamic_image_sizes.empty()) return translateGears(o, progress);
  return translateStages(o, {}, progress);
}

TranslateResult translateStages(const TranslateOptions& o, const std::vector<package::RangeSymbol>& symbols,
                                const std::function<void(const std::string&, double)>& progress) {
  // Memory released by the stages goes back to the system (peak RSS matters for big models).
  struct CacheOff {
    size_t old = Buffer::setCacheLimit(0);
    ~CacheOff() { Buffer::setCacheLimit(old); }
  } cache_off;
  Translation tr(o);
  tr.range_symbols = symbols;
  runStages(tr, progress);
  return std::move(tr.res);
}

}  // namespace npuc
