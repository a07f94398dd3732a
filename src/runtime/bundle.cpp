// Model bundles (package/bundle.hpp; docs/package-format.md, "Model bundles"): their ids, a model's package folder,
// and writing one from packages.
#include "npuc/runtime.hpp"

#include "package/bundle.hpp"
#include "package/gears.hpp"
#include "package/package.hpp"
#include "support/error.hpp"
#include "support/file.hpp"

#include <fmt/format.h>

#include <set>

namespace npuc {

namespace fs = std::filesystem;

std::vector<int64_t> bundleModelIds(const fs::path& dir) {
  std::vector<int64_t> ids;
  if (!package::hasModels(dir)) return ids;
  for (const package::BundleModel& m : package::readModels(dir)) ids.push_back(m.id);
  return ids;
}

fs::path bundleModel(const fs::path& dir, int64_t id) {
  if (!package::hasModels(dir)) fail(ErrorCode::kInvalidArgument, "{} is no bundle of models (it has no {})", dir.string(), package::kModelsFile);
  const std::vector<package::BundleModel> models = package::readModels(dir);
  std::string ids;
  for (const package::BundleModel& m : models) {
    if (m.id == id) return dir / m.dir;
    ids += (ids.empty() ? "" : ", ") + std::to_string(m.id);
  }
  fail(ErrorCode::kInvalidArgument, "{} holds no model of id {} (its models: {})", dir.string(), id, ids);
}

fs::path writeBundle(const fs::path& root, const std::string& name, const std::vector<std::pair<int64_t, fs::path>>& models) {
  if (models.empty() || models.size() > package::kMaxBundleModels)
    fail(ErrorCode::kInvalidArgument, "a bundle holds 1 to {} models, got {}", package::kMaxBundleModels, models.size());
  std::vector<package::BundleModel> list;
  std::set<int64_t> ids;
  for (const auto& [id, src] : models) {
    if (id < 0 || id > INT32_MAX) fail(ErrorCode::kInvalidArgument, "model id {} is outside 0 .. 2^31 - 1", id);
    if (!ids.insert(id).second) fail(ErrorCode::kInvalidArgument, "model id {} is given twice", id);
    if (package::hasModels(src)) fail(ErrorCode::kInvalidArgument, "{} is a bundle itself: a bundle holds packages", src.string());
    // Each model read and checked as the runtime will read it (a package with gears: each gear).
    if (package::hasGears(src)) {
      for (const package::Gear& g : package::readGears(src).gears) package::readPackage(src / g.dir);
    } else {
      package::readPackage(src);
    }
    list.push_back({id, fmt::format("model_{}", id)});
  }
  OutputDir out(root, name, "bundle name");
  for (size_t i = 0; i < models.size(); ++i) {
    const fs::path src = models[i].second, dst = out.path() / list[i].dir;
    fs::create_directories(dst);
    for (auto it = fs::recursive_directory_iterator(src); it != fs::recursive_directory_iterator(); ++it) {
      const fs::path rel = fs::relative(it->path(), src);
      if (rel.filename().string().front() == '.') {  // (npuc's own markers and temporary folders)
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_directory()) fs::create_directories(dst / rel);
      else if (it->is_regular_file()) fs::copy_file(it->path(), dst / rel);
    }
  }
  writeFileAtomic(out.path() / package::kModelsFile, package::modelsJson(list));
  out.commit();
  return out.finalPath();
}

}  // namespace npuc
