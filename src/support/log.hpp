// One logger for the libraries, with categories that the CLI maps to --verbose-<category>.
// Libraries never print directly; the sink is replaceable (the CLI prints to stderr).
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>

namespace npuc::log {

enum class Level { kDebug, kInfo, kWarning, kError };

using Sink = std::function<void(Level, std::string_view category, std::string_view message)>;

void setSink(Sink sink);
void setLevel(Level level);
/// Enables debug messages of one category ("graph", "passes", "import", "engine", …) or "all".
void enableCategory(std::string_view category);
bool enabled(Level level, std::string_view category);
void emit(Level level, std::string_view category, std::string_view message);

template <typename... Args>
void warn(std::string_view cat, fmt::format_string<Args...> f, Args&&... a) {
  if (enabled(Level::kWarning, cat)) emit(Level::kWarning, cat, fmt::format(f, std::forward<Args>(a)...));
}
template <typename... Args>
void info(std::string_view cat, fmt::format_string<Args...> f, Args&&... a) {
  if (enabled(Level::kInfo, cat)) emit(Level::kInfo, cat, fmt::format(f, std::forward<Args>(a)...));
}
template <typename... Args>
void debug(std::string_view cat, fmt::format_string<Args...> f, Args&&... a) {
  if (enabled(Level::kDebug, cat)) emit(Level::kDebug, cat, fmt::format(f, std::forward<Args>(a)...));
}

}  // namespace npuc::log
