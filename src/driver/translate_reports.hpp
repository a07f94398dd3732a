// The reports translate() writes beside the package (translate_reports.cpp).
#pragma once

#include "npuc/model.hpp"

#include "codegen/cost.hpp"
#include "codegen/lower.hpp"
#include "package/package.hpp"
#include "prepost/prepost.hpp"
#include "target/target.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace npuc {

/// The package's layers groups from the options (TranslateOptions::layer_groups / layer_group_list /
/// auto_layer_groups); errors name the layer and the rule.
void assignLayerGroups(const TranslateOptions& o, const codegen::Estimate& e, package::Package& p);

/// PREFIX_summary.{csv,md,xlsx}: the time estimate per layer, per engine, single and multi core.
void writeSummary(const codegen::Estimate& e, const target::Target& t, const std::filesystem::path& base);

/// The frame each pre-processed input holds, from its declaration and its first operation.
std::map<std::string, package::ImageInfo> inputImages(const prepost::PrePost& pp);

/// PREFIX_prepost_opt.yaml: the definition as translated, headed by what the translator changed.
std::string prepostOptYaml(const TranslateOptions& o, const prepost::PrePost& pp, const codegen::Lowered& low);

/// translate() of a model with gears, and the shapes --input_shape ranges resolve to, the dims they leave open in
/// `symbols` (at their largest size in the shapes; translate_gears.cpp).
TranslateResult translateGears(const TranslateOptions& o, const std::function<void(const std::string&, double)>& progress);
std::map<std::string, Shape> shapesFromRanges(const TranslateOptions& o, std::vector<package::RangeSymbol>* symbols);
/// The stages of one translation (translate.cpp); `symbols`: the ranged dims a package serves (none: an ordinary one).
TranslateResult translateStages(const TranslateOptions& o, const std::vector<package::RangeSymbol>& symbols,
                                const std::function<void(const std::string&, double)>& progress);
/// translate() of a package serving every size of `symbols` (translate_ranges.cpp): `o` at the largest sizes.
TranslateResult translateRanges(const TranslateOptions& o, const std::vector<package::RangeSymbol>& symbols,
                                const std::function<void(const std::string&, double)>& progress);

}  // namespace npuc
