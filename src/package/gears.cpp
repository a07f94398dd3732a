#include "package/gears.hpp"
#include "package/manifest.hpp"

#include "support/error.hpp"
#include "support/file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>

namespace npuc::package {

namespace fs = std::filesystem;

namespace {
constexpr uint64_t kMaxGearsBytes = 1 << 20;
constexpr int64_t kMaxGearSide = 1 << 20;
constexpr size_t kMaxGears = 100;  // as translate allows
}  // namespace

std::string gearsJson(const Gears& g) {
  json j;
  j["format"] = "npuc-gears";
  j["version"] = 1;
  j["kind"] = g.kind;
  j["input"] = g.input;
  j["gears"] = json::array();
  for (const Gear& x : g.gears) {
    json e;
    e["dir"] = x.dir;
    if (g.kind == "batch") e["batch"] = x.batch;
    else e["height"] = x.height, e["width"] = x.width;
    j["gears"].push_back(e);
  }
  return j.dump(2) + "\n";
}

bool hasGears(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kGearsFile, ec);
}

json readFormatFile(const std::string& file, uint64_t max_bytes, const char* what, const char* format) {
  const std::string text = readFileText(file, max_bytes, what);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidInput, "{}: not valid JSON ({})", file, e.what());
  }
  if (!j.is_object()) fail(ErrorCode::kInvalidInput, "{}: (top level): must be an object", file);
  if (j.value("format", json()) != format) fail(ErrorCode::kInvalidInput, "{}: format: must be \"{}\"", file, format);
  if (j.value("version", json()) != 1) fail(ErrorCode::kInvalidInput, "{}: version: must be 1 (this npuc reads version 1)", file);
  return j;
}

Gears readGears(const fs::path& dir) {
  const std::string file = (dir / kGearsFile).string();
  auto bad = [&](const std::string& field, const std::string& rule) {
    fail(ErrorCode::kInvalidInput, "{}: {}: {}", file, field, rule);
  };
  const json j = readFormatFile(file, kMaxGearsBytes, "a gears list", "npuc-gears");
  Gears g;
  if (!j.contains("kind") || !j["kind"].is_string() || (j["kind"] != "batch" && j["kind"] != "image_size"))
    bad("kind", "must be \"batch\" or \"image_size\"");
  g.kind = j["kind"].get<std::string>();
  if (!j.contains("input") || !j["input"].is_string() || j["input"].get<std::string>().empty()) bad("input", "must name the model input");
  g.input = j["input"].get<std::string>();
  if (!j.contains("gears") || !j["gears"].is_array() || j["gears"].empty()) bad("gears", "must be a non-empty list");
  if (j["gears"].size() > kMaxGears) bad("gears", fmt::format("{} gears, at most {}", j["gears"].size(), kMaxGears));
  std::set<std::string> dirs;
  std::set<std::pair<int64_t, int64_t>> sizes;
  auto positive = [&](const json& e, const char* key, const std::string& where) {
    if (!e.contains(key) || !e[key].is_number_integer() || e[key].get<int64_t>() < 1 || e[key].get<int64_t>() > kMaxGearSide)
      bad(where + "." + key, fmt::format("must be an integer from 1 to {}", kMaxGearSide));
    return e[key].get<int64_t>();
  };
  for (size_t i = 0; i < j["gears"].size(); ++i) {
    const json& e = j["gears"][i];
    const std::string where = fmt::format("gears[{}]", i);
    if (!e.is_object()) bad(where, "must be an object");
    Gear x;
    if (!e.contains("dir") || !e["dir"].is_string()) bad(where + ".dir", "must be a folder name");
    x.dir = e["dir"].get<std::string>();
    if (std::string why = whyNotPlainName(x.dir); !why.empty()) bad(where + ".dir", why);
    if (!dirs.insert(x.dir).second) bad(where + ".dir", fmt::format("'{}' is listed twice", x.dir));
    if (g.kind == "batch") x.batch = positive(e, "batch", where);
    else x.height = positive(e, "height", where), x.width = positive(e, "width", where);
    if (!sizes.insert({x.batch ? x.batch : x.height, x.width}).second) bad(where, "the same size as an earlier gear");
    g.gears.push_back(x);
  }
  return g;
}

int largestGear(const std::vector<std::pair<int64_t, int64_t>>& hw) {
  int largest = -1;
  for (size_t i = 0; i < hw.size(); ++i) {
    bool covers = true;
    for (const auto& h : hw) covers = covers && hw[i].first >= h.first && hw[i].second >= h.second;
    if (covers) largest = static_cast<int>(i);
  }
  return largest;
}

}  // namespace npuc::package
