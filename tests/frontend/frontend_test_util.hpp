// What the frontend tests (Caffe, TensorFlow, TFLite) share: the stored oracle cases (a folder of input_<name>.npy and
// output_<name>.npy), the relative error, file I/O, and docs/frontends.md's operator tables.
#pragma once

#include "npuc/model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace npuc::test {

inline std::string readAll(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline void writeAll(const std::filesystem::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

/// A stored oracle case: the inputs and the oracle's outputs, by tensor name.
struct OracleCase {
  std::string name;
  std::map<std::string, Tensor> inputs;
  std::map<std::string, Tensor> expected;
};

inline OracleCase readOracleCase(const std::filesystem::path& dir) {
  OracleCase c{dir.filename().string(), {}, {}};
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (e.path().extension() != ".npy") continue;  // (a picture's raw frame beside it: tidl-import's form)
    if (f.rfind("input_", 0) == 0) c.inputs[f.substr(6, f.size() - 10)] = readNpyFile(e.path());
    if (f.rfind("output_", 0) == 0) c.expected[f.substr(7, f.size() - 11)] = readNpyFile(e.path());
  }
  return c;
}

/// The largest |a - b| / max(|b|, 1) over two float32 tensors of one shape (infinity when the shapes differ).
inline double relError(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shapeStr(a.shape()), shapeStr(b.shape()));
  if (a.shape() != b.shape()) return INFINITY;
  double worst = 0;
  auto x = a.values<float>(), y = b.values<float>();
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::abs(double(x[i]) - double(y[i])) / std::max(1.0, std::abs(double(y[i]))));
  return worst;
}

/// The first column of docs/frontends.md's table whose header row starts with `header` ("| Caffe layer |"), a cell
/// naming several ops ("Sigmoid, TanH") split into each; sorted.
inline std::vector<std::string> documentedOps(const std::string& header) {
  std::istringstream doc(readAll(std::filesystem::path(NPUC_SOURCE_DIR) / "docs/frontends.md"));
  std::vector<std::string> documented;
  bool in_table = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind(header, 0) == 0) in_table = true;
    else if (in_table && line.rfind("|---", 0) == 0) continue;
    else if (in_table && line.rfind("| ", 0) == 0) {
      const std::string r = line.substr(2, line.find(" |", 2) - 2);
      for (size_t at = 0; at < r.size();) {
        const size_t comma = r.find(", ", at);
        documented.push_back(r.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        at = comma == std::string::npos ? r.size() : comma + 2;
      }
    } else if (in_table) break;
  }
  std::sort(documented.begin(), documented.end());
  return documented;
}

/// `bytes` damaged at random, as the fuzz targets' seeds are: cut short, 1-4 bytes changed (none of the first `keep`),
/// or a run of up to 40 bytes repeated elsewhere.
inline std::string damaged(const std::string& bytes, std::mt19937& rng, size_t keep = 0) {
  std::string b = bytes;
  if (b.size() <= keep) return b;
  switch (rng() % 3) {
    case 0: b.resize(rng() % (b.size() + 1)); break;
    case 1:
      for (int k = 0; k < 1 + int(rng() % 4); ++k) b[keep + rng() % (b.size() - keep)] = char(rng());
      break;
    default: {
      const size_t at = rng() % b.size();
      b.insert(at, b.substr(rng() % b.size(), 1 + rng() % 40));
      break;
    }
  }
  return b;
}

}  // namespace npuc::test
