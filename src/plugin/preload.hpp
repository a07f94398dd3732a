// What npuc checks of a custom-op plugin before it dlopens the library in its own process (docs/custom-ops.md,
// "Loading"): the file's ELF structure, then a trial load in a child process. registerLibrary (plugin.cpp) runs
// both first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace npuc::plugin::detail {

/// Refuses a file whose ELF header, program or section headers do not describe a shared library of this machine, or
/// reach outside the file (`shown`: the name errors give; `b`: the file's bytes).
void checkElf(const std::string& shown, const std::vector<uint8_t>& b);

/// Loads the library in a child process first; refuses it when that crashes, hangs or fails. A library (by its
/// SHA-256 `sha`) that loaded once is not tried again.
void trialLoad(const std::string& shown, const std::filesystem::path& path, const std::string& sha);

}  // namespace npuc::plugin::detail
