// Loading YAML text with one clear error for every way it can be malformed (header-only: the folders that read
// YAML link yaml-cpp themselves).
#pragma once

#include "support/error.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>

#include <string>

namespace npuc {

/// The largest configuration file npuc reads (target, address map, pre/post, AIPP): refused before reading.
inline constexpr uint64_t kMaxConfigBytes = 16u << 20;

/// Parses YAML text. Throws npuc::Error (kInvalidInput) "invalid YAML: <reason> at line L, column C"; nesting
/// beyond yaml-cpp's limit is named as such instead of yaml-cpp's "bad file".
inline YAML::Node loadYaml(const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    fail(ErrorCode::kInvalidInput, "invalid YAML: nested too deeply at line {}, column {} (the YAML reader's recursion "
         "limit, {}, was reached; a configuration file nests a few levels)", e.mark.line + 1, e.mark.column + 1, e.depth());
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) fail(ErrorCode::kInvalidInput, "invalid YAML: {}", e.msg);
    fail(ErrorCode::kInvalidInput, "invalid YAML: {} at line {}, column {}", e.msg, e.mark.line + 1, e.mark.column + 1);
  }
}

/// Runs fn, which reads YAML nodes: a node of an unexpected kind (a list where a map belongs, a map where a
/// scalar does) makes yaml-cpp throw; that becomes npuc::Error (kInvalidInput) naming the line and column.
template <typename Fn>
decltype(auto) readingYaml(Fn&& fn) {
  try {
    return fn();
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) fail(ErrorCode::kInvalidInput, "unexpected YAML structure: {}", e.msg);
    fail(ErrorCode::kInvalidInput, "unexpected YAML structure at line {}, column {}: {}", e.mark.line + 1, e.mark.column + 1, e.msg);
  }
}

}  // namespace npuc
