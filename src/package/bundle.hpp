// Model bundles (Kneron's multi-model NEF, where kneron_inference's model_id picks a model): a folder holding several
// packages, each under an id, listed by its models.json (docs/package-format.md, "Model bundles").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace npuc::package {

inline constexpr const char* kModelsFile = "models.json";
inline constexpr size_t kMaxBundleModels = 256;

struct BundleModel {
  int64_t id = 0;   // 0 .. 2^31 - 1
  std::string dir;  // sub-folder (a plain name) holding the model's package
  bool operator==(const BundleModel&) const = default;
};

/// The models.json text (canonical: the same models give the same bytes).
std::string modelsJson(const std::vector<BundleModel>& models);
/// Reads and checks `dir`/models.json: format and version, 1 to kMaxBundleModels models with distinct ids and distinct
/// plain folder names. Throws npuc::Error (kInvalidInput) naming the file, the field and the rule.
std::vector<BundleModel> readModels(const std::filesystem::path& dir);
/// Whether `dir` holds a models.json.
bool hasModels(const std::filesystem::path& dir);

}  // namespace npuc::package
