// Memory planners.
#include "plan/memory.hpp"

#include "ir/graph.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace npuc::plan {

namespace {

uint64_t lowerBound(const std::vector<Buffer>& b, uint64_t align) {
  int steps = 0;
  for (auto& x : b) steps = std::max(steps, x.last + 1);
  // Bytes alive at each step, as a difference array: O(buffers + steps) whatever the lifetimes.
  std::vector<int64_t> delta(static_cast<size_t>(steps) + 2, 0);
  for (auto& x : b) {
    delta[static_cast<size_t>(x.first)] += static_cast<int64_t>(alignUp(x.size, align));
    delta[static_cast<size_t>(x.last) + 1] -= static_cast<int64_t>(alignUp(x.size, align));
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) peak = std::max(peak, live += d);
  return static_cast<uint64_t>(peak);
}

/// The placed buffers whose lifetimes overlap a query, found in O((k + 1) log n) for k answers: buffers sorted by
/// first step, a max-segment tree over their last steps (-1 until placed); a query [first, last] visits only the
/// subtrees of buffers that start by `last` and whose latest end reaches `first`.
class LiveIndex {
 public:
  explicit LiveIndex(const std::vector<Buffer>& b) : b_(b), by_first_(b.size()), pos_(b.size()) {
    std::iota(by_first_.begin(), by_first_.end(), 0);
    std::stable_sort(by_first_.begin(), by_first_.end(), [&](size_t x, size_t y) { return b[x].first < b[y].first; });
    for (size_t k = 0; k < by_first_.size(); ++k) pos_[by_first_[k]] = k;
    while (n_ < b.size()) n_ *= 2;
    max_last_.assign(2 * n_, -1);
  }
  void place(size_t i) {
    size_t k = pos_[i] + n_;
    max_last_[k] = b_[i].last;
    for (k /= 2; k; k /= 2) max_last_[k] = std::max(max_last_[2 * k], max_last_[2 * k + 1]);
  }
  template <typename Fn>
  void overlapping(const Buffer& q, Fn&& fn) const {
    // Buffers with first <= q.last are the prefix [0, end) of by_first_.
    size_t end = static_cast<size_t>(std::upper_bound(by_first_.begin(), by_first_.end(), q.last,
                                                      [&](int v, size_t x) { return v < b_[x].first; }) - by_first_.begin());
    visit(1, 0, n_, end, q.first, fn);
  }

 private:
  template <typename Fn>
  void visit(size_t node, size_t lo, size_t hi, size_t end, int first, Fn& fn) const {
    if (lo >= end || max_last_[node] < first) return;
    if (hi - lo == 1) {
      fn(by_first_[lo]);
      return;
    }
    size_t mid = (lo + hi) / 2;
    visit(2 * node, lo, mid, end, first, fn);
    visit(2 * node + 1, mid, hi, end, first, fn);
  }
  const std::vector<Buffer>& b_;
  std::vector<size_t> by_first_, pos_;
  size_t n_ = 1;
  std::vector<int> max_last_;
};
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
  LiveIndex placed(buffers);
  std::vector<std::pair<uint64_t, uint64_t>> taken;
  for (size_t i : order) {
    const Buffer& b = buffers[i];
    uint64_t size = alignUp(b.size, align);
    // Intervals taken by placed buffers alive at the same time, sorted by offset.
    taken.clear();
    placed.overlapping(b, [&](size_t j) { taken.push_back({p.offsets[j], p.offsets[j] + alignUp(buffers[j].size, align)}); });
    std::sort(taken.begin(), taken.end());
    uint64_t off = 0;
    for (auto& [s, e] : taken) {
      if (off + size <= s) break;
      off = std::max(off, e);
    }
    p.offsets[i] = off;
    p.total = std::max(p.total, off + size);
    placed.place(i);
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
