// Memory planners.
#include "plan/memory.hpp"

#include "ir/graph.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace npuc::plan {

namespace {
uint64_t alignUp(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }

uint64_t lowerBound(const std::vector<Buffer>& b, uint64_t align) {
  int steps = 0;
  for (auto& x : b) steps = std::max(steps, x.last + 1);
  std::vector<uint64_t> live(static_cast<size_t>(steps) + 1, 0);
  for (auto& x : b)
    for (int t = x.first; t <= x.last; ++t) live[static_cast<size_t>(t)] += alignUp(x.size, align);
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}
}  // namespace

MemoryPlan planSequential(const std::vector<Buffer>& buffers, uint64_t align) {
  MemoryPlan p;
  uint64_t off = 0;
  for (auto& b : buffers) {
    p.offsets.push_back(off);
    off += alignUp(b.size, align);
  }
  p.total = off;
  p.lower_bound = lowerBound(buffers, align);
  return p;
}

MemoryPlan planReuse(const std::vector<Buffer>& buffers, uint64_t align) {
  MemoryPlan p;
  p.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by earlier start, then index (deterministic).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].first < buffers[b].first;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Buffer& b = buffers[i];
    uint64_t size = alignUp(b.size, align);
    // Intervals taken by placed buffers alive at the same time, sorted by offset.
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (size_t j : placed) {
      const Buffer& o = buffers[j];
      if (o.last < b.first || b.last < o.first) continue;
      taken.push_back({p.offsets[j], p.offsets[j] + alignUp(o.size, align)});
    }
    std::sort(taken.begin(), taken.end());
    uint64_t off = 0;
    for (auto& [s, e] : taken) {
      if (off + size <= s) break;
      off = std::max(off, e);
    }
    p.offsets[i] = off;
    p.total = std::max(p.total, off + size);
    placed.push_back(i);
  }
  p.lower_bound = lowerBound(buffers, align);
  return p;
}

std::vector<Buffer> activationBuffers(const ir::Graph& g, uint64_t elem_size) {
  std::map<ir::ValueId, size_t> index;
  std::vector<Buffer> out;
  auto add = [&](ir::ValueId v, int step) {
    const ir::Value& val = g.value(v);
    if (val.isConstant() || index.count(v) || !val.type.isStatic()) return;
    uint64_t es = elem_size ? elem_size : dtypeSize(val.type.dtype);
    index[v] = out.size();
    out.push_back({val.name, static_cast<uint64_t>(shapeNumel(val.type.shape)) * es, step, step});
  };
  for (ir::ValueId v : g.inputs()) add(v, 0);
  int step = 0;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue && index.count(v)) out[index[v]].last = std::max(out[index[v]].last, step);
    for (ir::ValueId v : n.outputs)
      if (v != ir::kNoValue) add(v, step);
    ++step;
  }
  for (ir::ValueId v : g.outputs())
    if (index.count(v)) out[index[v]].last = step;  // outputs live to the end
  return out;
}

}  // namespace npuc::plan
