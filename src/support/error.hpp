// Error helpers for the libraries: fail() with fmt formatting, withContext() to add context while unwinding.
#pragma once

#include "npuc/error.hpp"

#include <fmt/format.h>

#include <string>

namespace npuc {

[[noreturn]] void throwError(ErrorCode code, std::string message);

template <typename... Args>
[[noreturn]] void fail(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  throwError(code, fmt::format(f, std::forward<Args>(args)...));
}

/// Runs fn(); if it throws npuc::Error, adds `ctx` to it and rethrows.
template <typename Fn>
decltype(auto) withContext(const std::string& ctx, Fn&& fn) {
  try {
    return fn();
  } catch (Error& e) {
    e.addContext(ctx);
    throw;
  }
}

}  // namespace npuc
