// What the package writer (package.cpp) and reader (read.cpp) share: the manifest's JSON, its canonical digest, the
// names of custom parameter types, and the error a malformed file raises. Internal to the package library.
#pragma once

#include "support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace npuc::package {

using json = nlohmann::ordered_json;

/// The manifest's names of custom parameter types, by npuc_param_type code - 1.
inline constexpr const char* kCustomParamTypes[] = {"bool", "int", "float", "string", "ints", "floats", "tensor"};

/// kInvalidInput naming the file (or the file and field) at fault.
template <typename... Args>
[[noreturn]] void bad(const std::string& where, fmt::format_string<Args...> f, Args&&... a) {
  fail(ErrorCode::kInvalidInput, "{}: {}", where, fmt::format(f, std::forward<Args>(a)...));
}

/// Parses a manifest. Nesting deeper than kMaxJsonDepth is refused by a linear scan before any JSON value is built,
/// so no recursive copy or destruction of a hostile document can exhaust the stack.
json parseManifest(const std::vector<uint8_t>& b, const std::string& mfile);
/// JSON text as the package writes it (indent -1: compact); invalid UTF-8 replaced.
std::string dumpJson(const json& j, int indent);
struct ShapeRanges;
/// The manifest's "shape_ranges" (shape_ranges.cpp) and back; the reader's structural checks are checkShapeRanges's.
json shapeRangesManifest(const ShapeRanges& r);
ShapeRanges shapeRangesFromManifest(const json& j, const std::string& file);
/// A small JSON file of the package's own kinds (gears.json, models.json): read within `max_bytes`, parsed, and checked
/// to be an object with "format": `format` and "version": 1 — else kInvalidInput naming the file and the field.
json readFormatFile(const std::string& file, uint64_t max_bytes, const char* what, const char* format);
/// SHA-256 of the manifest's canonical form (content_hash removed, compact, keys in file order).
std::string manifestDigest(const json& j);

}  // namespace npuc::package
