// A custom-op definition (the RKNN guide's YAML, docs/custom-ops.md) read from text: what `npuc custom-op create`
// writes for it, without writing (createCustomOp in model.hpp writes the files).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace npuc {

/// The files createCustomOp would write (op.yml, the source, CMakeLists.txt, the harness: name and text, in that
/// order) for a definition given as YAML text (`name`: the file it stands for, in messages); nothing is written.
/// The same checks and errors as createCustomOp's.
std::vector<std::pair<std::string, std::string>> customOpSkeletonFiles(const std::string& yaml_text, const std::string& name);

}  // namespace npuc
