// The binary streams of a package (the descriptor streams of aimac_desc.bin / drp_desc.bin, the library table of
// drp_lib_info): decoding, which the reader (package.cpp) runs on untrusted files; encoding is public (package.hpp).
// For src/package/ only.
#pragma once

#include "package/package.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace npuc::package::detail {

/// An error in a package file: kInvalidInput, naming `where` (the file, then the field).
template <typename... Args>
[[noreturn]] void bad(const std::string& where, fmt::format_string<Args...> f, Args&&... a) {
  fail(ErrorCode::kInvalidInput, "{}: {}", where, fmt::format(f, std::forward<Args>(a)...));
}

std::vector<Descriptor> decodeDescriptors(const std::vector<uint8_t>& b, Engine want, const std::string& file);
std::vector<Library> decodeLibraries(const std::vector<uint8_t>& b, const std::string& file);

}  // namespace npuc::package::detail
