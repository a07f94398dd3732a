#include "support/log.hpp"

#include <cstdio>
#include <mutex>
#include <set>

namespace npuc::log {

namespace {
struct State {
  std::mutex mu;
  Sink sink;
  Level level = Level::kWarning;
  std::set<std::string, std::less<>> categories;
  bool all = false;
};
State& state() {
  static State s;
  return s;
}
const char* levelName(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarning: return "warning";
    case Level::kError: return "error";
  }
  return "";
}
}  // namespace

void setSink(Sink sink) {
  std::lock_guard<std::mutex> lk(state().mu);
  state().sink = std::move(sink);
}
void setLevel(Level level) { state().level = level; }
void enableCategory(std::string_view category) {
  std::lock_guard<std::mutex> lk(state().mu);
  if (category == "all") state().all = true;
  state().categories.emplace(category);
}
bool enabled(Level level, std::string_view category) {
  auto& s = state();
  if (level >= s.level) return true;
  if (level == Level::kDebug || level == Level::kInfo) {
    std::lock_guard<std::mutex> lk(s.mu);
    return s.all || s.categories.count(category) > 0;
  }
  return false;
}
void emit(Level level, std::string_view category, std::string_view message) {
  auto& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.sink) {
    s.sink(level, category, message);
  } else {
    std::fprintf(stderr, "npuc: %s: [%.*s] %.*s\n", levelName(level), static_cast<int>(category.size()),
                 category.data(), static_cast<int>(message.size()), message.data());
  }
}

}  // namespace npuc::log
