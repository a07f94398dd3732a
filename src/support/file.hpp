// File helpers: whole-file reads with clear errors, and atomic writes (temp file + rename) so that a failed
// run never leaves a half-written output behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace npuc {

std::vector<uint8_t> readFileBytes(const std::filesystem::path& path);
std::string readFileText(const std::filesystem::path& path);

/// Writes to "<path>.tmp-<pid>" then renames over `path`.
void writeFileAtomic(const std::filesystem::path& path, const void* data, size_t size);
inline void writeFileAtomic(const std::filesystem::path& path, const std::string& s) {
  writeFileAtomic(path, s.data(), s.size());
}

}  // namespace npuc
