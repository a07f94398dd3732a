// A custom op's parameter value as npuc resolves it for one node (src/plugin) and as a package's manifest records it
// (src/package): one definition for both. Std-only, so the package format can hold it without the plugin loader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::plugin {

/// type is npuc_param_type's code (include/npuc/custom_op.h: 1 bool, 2 int, 3 float, 4 string, 5 ints, 6 floats,
/// 7 tensor); the value fields of that type are set when present (a tensor's value lives elsewhere: Param::tensor,
/// package::CustomParam::input).
struct ParamValue {
  std::string name;
  int32_t type = 0;
  bool present = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  bool operator==(const ParamValue&) const = default;
};

}  // namespace npuc::plugin
