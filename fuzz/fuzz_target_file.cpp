// libFuzzer target: target files and constraint expressions. Byte 0 picks the mode: even — the rest is a target
// YAML file (written to a temporary file and loaded; when it loads, a small graph of a Conv and a Relu is checked
// against it, so every rule is evaluated); odd — the rest is one expression, parsed and evaluated over a set of
// facts. Every outcome must be a result or an npuc::Error: never a crash, a stack overflow, a leak or UB.
#include "ops/registry.hpp"
#include "support/error.hpp"
#include "target/check.hpp"
#include "target/expr.hpp"
#include "target/target.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

npuc::ir::Graph sampleGraph() {
  using namespace npuc;
  ir::Graph g;
  g.opset = 13;
  ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 8, 6, 6})).id;
  g.inputs().push_back(x);
  ir::ValueId w = g.addConstant("w", Tensor(DType::kF32, {4, 8, 3, 3})).id;
  ir::ValueId c = g.addValue("c").id, y = g.addValue("y").id;
  g.addNode("Conv", "conv", {x, w}, {c}).attrs["pads"] = ir::Attr(std::vector<int64_t>{1, 1, 1, 1});
  g.addNode("Relu", "relu", {c}, {y});
  g.outputs().push_back(y);
  ops::inferShapes(g);
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (data[0] & 1) {
      npuc::target::Facts f{{"k", npuc::target::Value(int64_t{3})},
                            {"s", npuc::target::Value(std::string("same"))},
                            {"l", npuc::target::Value(std::vector<npuc::target::Value>{int64_t{1}, int64_t{2}})}};
      (void)npuc::target::Expr::parse(text).eval(f);
      return 0;
    }
    static const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("npuc-fuzz-target-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
    npuc::target::Target t = npuc::target::loadTarget(file.string());
    static const npuc::ir::Graph g = sampleGraph();
    (void)npuc::target::checkGraph(g, t);
    (void)npuc::target::supportedOpsMarkdown(t);
  } catch (const npuc::Error&) {
  }
  return 0;
}
