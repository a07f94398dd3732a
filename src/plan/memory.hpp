// Memory planning: offsets for buffers with known lifetimes.
//   sequential — every buffer after the previous one, never reused (the DRP-AI 'data' semantics: each layer's
//                output stays where it is, which is what makes per-layer traces possible);
//   reuse      — greedy by size over liveness (largest first, lowest offset that does not overlap a buffer
//                alive at the same time), for --reuse-memory.
// The lower bound of any plan is the peak of the bytes alive at one time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::ir {
class Graph;
}

namespace npuc::plan {

/// v rounded up to a multiple of a (v itself when a is 0).
inline uint64_t alignUp(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }

struct Buffer {
  std::string name;
  uint64_t size = 0;
  int first = 0;  // step that writes it
  int last = 0;   // last step that reads it (>= first)
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // per buffer
  uint64_t total = 0;             // bytes used (end of the highest buffer)
  uint64_t lower_bound = 0;       // peak of simultaneously-live bytes (aligned sizes)
};

MemoryPlan planSequential(const std::vector<Buffer>& buffers, uint64_t align = 64);
MemoryPlan planReuse(const std::vector<Buffer>& buffers, uint64_t align = 64);

/// The activations of a graph as buffers (graph inputs and node outputs; constants excluded), with lifetimes in
/// node-order steps, at `elem_size` bytes per element (0: the value's own element size).
std::vector<Buffer> activationBuffers(const ir::Graph& g, uint64_t elem_size = 0);

}  // namespace npuc::plan
