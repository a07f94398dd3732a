// Address intervals [lo, hi) mapped to the value last assigned to them: each assign replaces the parts of earlier
// intervals it covers, so a lookup sees, for every byte, its latest value. Used to track the last writer and
// reader of device memory (the validator's hazard check, the translator's waits) in O(n log n).
#pragma once

#include <cstdint>
#include <iterator>
#include <map>

namespace npuc::package {

template <typename V>
class IntervalMap {
 public:
  /// [lo, hi) now maps to v (an empty range changes nothing).
  void assign(uint64_t lo, uint64_t hi, const V& v) {
    if (lo >= hi) return;
    split(lo);
    split(hi);
    m_.erase(m_.lower_bound(lo), m_.lower_bound(hi));
    m_.emplace(lo, Entry{hi, v});
  }
  /// Calls fn(lo, hi, value) for every stored interval that overlaps [lo, hi), in address order.
  template <typename Fn>
  void forEachOverlap(uint64_t lo, uint64_t hi, Fn&& fn) const {
    if (lo >= hi) return;
    auto it = m_.upper_bound(lo);
    if (it != m_.begin()) --it;
    for (; it != m_.end() && it->first < hi; ++it)
      if (it->second.hi > lo) fn(it->first, it->second.hi, it->second.v);
  }

 private:
  struct Entry {
    uint64_t hi;
    V v;
  };
  /// Cuts the interval that straddles `at` in two.
  void split(uint64_t at) {
    auto it = m_.upper_bound(at);
    if (it == m_.begin()) return;
    --it;
    if (it->first < at && it->second.hi > at) {
      Entry right = it->second;
      it->second.hi = at;
      m_.emplace(at, right);
    }
  }
  std::map<uint64_t, Entry> m_;  // start -> (end, value); disjoint
};

}  // namespace npuc::package
