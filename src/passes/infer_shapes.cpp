// infer-shapes: static shape and type propagation through the op registry.
#include "ops/registry.hpp"
#include "passes/passes.hpp"

namespace npuc::passes {

bool InferShapesPass::run(ir::Graph& g, PassContext&) { return ops::inferShapes(g); }

}  // namespace npuc::passes
