#include "package/bundle.hpp"
#include "package/manifest.hpp"

#include "support/error.hpp"
#include "support/file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>

namespace npuc::package {

namespace fs = std::filesystem;

std::string modelsJson(const std::vector<BundleModel>& models) {
  json j;
  j["format"] = "npuc-models";
  j["version"] = 1;
  j["models"] = json::array();
  for (const BundleModel& m : models) j["models"].push_back({{"id", m.id}, {"dir", m.dir}});
  return j.dump(2) + "\n";
}

bool hasModels(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kModelsFile, ec);
}

std::vector<BundleModel> readModels(const fs::path& dir) {
  const std::string file = (dir / kModelsFile).string();
  auto bad = [&](const std::string& field, const std::string& rule) {
    fail(ErrorCode::kInvalidInput, "{}: {}: {}", file, field, rule);
  };
  const json j = readFormatFile(file, 1 << 20, "a models list", "npuc-models");
  if (!j.contains("models") || !j["models"].is_array() || j["models"].empty() || j["models"].size() > kMaxBundleModels)
    bad("models", fmt::format("must be a list of 1 to {} models", kMaxBundleModels));
  std::vector<BundleModel> models;
  std::set<int64_t> ids;
  std::set<std::string> dirs;
  for (size_t i = 0; i < j["models"].size(); ++i) {
    const json& e = j["models"][i];
    const std::string where = fmt::format("models[{}]", i);
    if (!e.is_object()) bad(where, "must be an object");
    if (!e.contains("id") || !e["id"].is_number_integer() || e["id"].get<int64_t>() < 0 || e["id"].get<int64_t>() > INT32_MAX)
      bad(where + ".id", "must be an integer from 0 to 2^31 - 1");
    if (!e.contains("dir") || !e["dir"].is_string()) bad(where + ".dir", "must be a folder name");
    BundleModel m{e["id"].get<int64_t>(), e["dir"].get<std::string>()};
    if (std::string why = whyNotPlainName(m.dir); !why.empty()) bad(where + ".dir", why);
    if (!ids.insert(m.id).second) bad(where + ".id", fmt::format("id {} is listed twice", m.id));
    if (!dirs.insert(m.dir).second) bad(where + ".dir", fmt::format("'{}' is listed twice", m.dir));
    models.push_back(m);
  }
  return models;
}

}  // namespace npuc::package
