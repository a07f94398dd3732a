// UTF-8 checks of names: a tensor or node name reaches JSON manifests, CSV and HTML reports, and file names; one that
// is not valid UTF-8 would be altered on the way (two names made one), so it is refused where it is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace npuc {

/// The offset of the first byte of `s` that does not belong to a well-formed UTF-8 sequence (overlong forms,
/// surrogates and code points above U+10FFFF are not well-formed), or std::string_view::npos when `s` is valid.
inline size_t invalidUtf8At(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    uint32_t cp, min;
    if ((b & 0xE0) == 0xC0) n = 2, cp = b & 0x1F, min = 0x80;
    else if ((b & 0xF0) == 0xE0) n = 3, cp = b & 0x0F, min = 0x800;
    else if ((b & 0xF8) == 0xF0) n = 4, cp = b & 0x07, min = 0x10000;
    else return i;
    if (i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n;
  }
  return std::string_view::npos;
}

/// `s` printable in a message whatever its bytes: control characters and bytes of invalid UTF-8 as \xHH.
inline std::string escapedName(std::string_view s) {
  std::string r;
  size_t i = 0;
  while (i < s.size()) {
    const size_t bad = invalidUtf8At(s.substr(i));
    const size_t good = bad == std::string_view::npos ? s.size() - i : bad;
    for (char c : s.substr(i, good)) {
      if (static_cast<uint8_t>(c) < 0x20 || c == 0x7f) r += fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
      else r += c;
    }
    i += good;
    if (i < s.size()) r += fmt::format("\\x{:02x}", static_cast<uint8_t>(s[i++]));
  }
  return r;
}

}  // namespace npuc
