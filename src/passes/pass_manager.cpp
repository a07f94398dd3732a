// Pass registry, pass manager and pipelines.
#include "passes/pass.hpp"

#include "passes/passes.hpp"
#include "support/error.hpp"
#include "support/log.hpp"

#include <functional>

namespace npuc::passes {

namespace {
struct Entry {
  const char* name;
  std::function<std::unique_ptr<Pass>()> make;
};
const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
#define NPUC_PASS(NAME, CLASS) {NAME, [] { return std::unique_ptr<Pass>(new CLASS()); }},
#include "passes/passes.def"
#undef NPUC_PASS
  };
  return e;
}
}  // namespace

std::unique_ptr<Pass> createPass(const std::string& name) {
  for (auto& e : entries())
    if (name == e.name) return e.make();
  fail(ErrorCode::kInvalidArgument, "unknown pass '{}'", name);
}

std::vector<std::string> passNames() {
  std::vector<std::string> r;
  for (auto& e : entries()) r.push_back(e.name);
  return r;
}

PassManager::PassManager(std::vector<std::string> pipeline) {
  for (auto& n : pipeline) passes_.push_back(createPass(n));
}

bool PassManager::runOnce(ir::Graph& g, PassContext& ctx) {
  bool any = false;
  for (auto& p : passes_) {
    bool changed = withContext(std::string("pass ") + p->name(), [&] { return p->run(g, ctx); });
    if (changed) log::debug("passes", "{} changed the graph ({} nodes)", p->name(), g.numNodes());
    any |= changed;
#ifndef NDEBUG
    const bool verify = true;
#else
    const bool verify = ctx.verify_each;
#endif
    if (verify) withContext(std::string("verifier after pass ") + p->name(), [&] { ir::verify(g); });
  }
  return any;
}

int PassManager::runToFixpoint(ir::Graph& g, PassContext& ctx, int max_iterations) {
  for (int i = 0; i < max_iterations; ++i)
    if (!runOnce(g, ctx)) return i + 1;
  log::warn("passes", "the pass pipeline still changed the graph after {} rounds; stopping", max_iterations);
  return max_iterations;
}

std::vector<std::string> resolvePipeline() { return {"infer-shapes", "fold-constants", "inline-if", "fold-transposes", "dce"}; }
std::vector<std::string> optimizePipeline() { return {"fold-batchnorm", "fold-reshapes", "dce"}; }
std::vector<std::string> equalizePipeline(const std::string& mode) {
  if (mode == "relu") return {"equalize-cross-layer", "dce"};
  if (mode == "relu6") return {"relu6-to-relu", "equalize-cross-layer", "dce"};
  fail(ErrorCode::kInvalidArgument, "--equalize {}: relu (through Relu / LeakyRelu only) or relu6 (Relu6 made Relu first)", mode);
}

std::vector<std::string> translatePipeline() {
  return {"specialize-bodies", "fold-constants", "fold-batchnorm", "fold-reshapes", "detect-patterns", "canonicalize-pool", "fold-pad", "fuse-activations", "dce"};
}

}  // namespace npuc::passes
