// A scratch folder of the running test's own, under the build tree. ctest runs the tests of one executable as
// separate processes in parallel (gtest_discover_tests), so two tests that wrote the same folder name would race:
// one removing or rewriting files the other is reading.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace npuc::test {

/// NPUC_BINARY_DIR/test_packages/<Suite.Test>/<name>, its parent folder created. Parameterized names
/// ("Defs/Suite", "case/0") keep their parts, with '/' turned into '_'.
inline std::filesystem::path scratchPath(const std::string& name) {
  const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = t ? std::string(t->test_suite_name()) + "." + t->name() : "no_test";
  std::replace(test.begin(), test.end(), '/', '_');
  std::filesystem::path p = std::filesystem::path(NPUC_BINARY_DIR) / "test_packages" / test / name;
  std::filesystem::create_directories(p.parent_path());
  return p;
}

/// scratchPath(name) as an empty folder.
inline std::filesystem::path scratchDir(const std::string& name) {
  std::filesystem::path d = scratchPath(name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace npuc::test
