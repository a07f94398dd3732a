// Packages with gears (Ascend ATC's --dynamic_batch_size / --dynamic_image_size): one ordinary package per gear, each
// translated for one batch size or one input height x width, in sub-folders of output/PREFIX/, listed by
// output/PREFIX/gears.json. The runtime loads them all and runs the one the application selects per inference
// (docs/package-format.md, "Gears").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace npuc::package {

inline constexpr const char* kGearsFile = "gears.json";

struct Gear {
  std::string dir;     // sub-folder (a plain name) holding the gear's package
  int64_t batch = 0;   // kind "batch": the batch size of the dynamic input
  int64_t height = 0, width = 0;  // kind "image_size": its height and width
  bool operator==(const Gear&) const = default;
};

struct Gears {
  std::string kind;   // "batch" | "image_size"
  std::string input;  // the model input whose dimensions the gears set
  std::vector<Gear> gears;
  bool operator==(const Gears&) const = default;
};

/// The gears.json text (canonical: the same gears give the same bytes).
std::string gearsJson(const Gears& g);
/// Reads and checks `dir`/gears.json: format and version, kind, a plain, distinct folder name and positive, distinct
/// sizes per gear (at least one). Throws npuc::Error (kInvalidInput) naming the file, the field and the rule.
Gears readGears(const std::filesystem::path& dir);
/// Whether `dir` holds a gears.json.
bool hasGears(const std::filesystem::path& dir);
/// Of image-size gears given as (height, width), the index of one at least as high and as wide as every other (the
/// last such), or -1 when there is none: the seed's "largest gear" that a dynamic AIPP block's size must be.
int largestGear(const std::vector<std::pair<int64_t, int64_t>>& hw);

}  // namespace npuc::package
