// Whole-file reads with the limits and errors of npuc's own readers, for the tools built on npuc (the CLI, the Python
// module): only a regular file is read (a FIFO, a device or a folder is refused without blocking on it), a file over
// the limit is refused before anything is read, and every error names the file (npuc::Error).
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace npuc {

/// Reads a whole regular file. A file of more than `max_bytes` is refused before anything is read (kInvalidInput:
/// "<path>: <size> bytes, more than the <max_bytes> bytes <what_limits> allows").
std::vector<uint8_t> readFileBytes(const std::filesystem::path& path,
                                   uint64_t max_bytes = std::numeric_limits<uint64_t>::max(),
                                   const char* what_limits = "a file");
std::string readFileText(const std::filesystem::path& path, uint64_t max_bytes = std::numeric_limits<uint64_t>::max(),
                         const char* what_limits = "a file");

/// The first `bytes` bytes of a regular file, or all of it when it is shorter (the caller says what a short file
/// means): nothing past them is read, whatever the file's size.
std::vector<uint8_t> readFilePrefix(const std::filesystem::path& path, uint64_t bytes);

}  // namespace npuc
