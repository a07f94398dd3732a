// Calibration ranges (range.hpp).
#include "quant/range.hpp"

#include "engine/engine.hpp"
#include "support/error.hpp"
#include "support/sha256.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <deque>
#include <limits>
#include <mutex>

namespace npuc::quant {

bool rangeMethodFromName(const std::string& name, RangeMethod* m) {
  static const std::pair<const char*, RangeMethod> k[] = {{"minmax", RangeMethod::kMinMax},
                                                          {"percentile", RangeMethod::kPercentile},
                                                          {"entropy", RangeMethod::kEntropy},
                                                          {"mse", RangeMethod::kMse}};
  for (auto& [n, v] : k)
    if (name == n) return *m = v, true;
  return false;
}

const char* rangeMethodName(RangeMethod m) {
  switch (m) {
    case RangeMethod::kMinMax: return "minmax";
    case RangeMethod::kPercentile: return "percentile";
    case RangeMethod::kEntropy: return "entropy";
    case RangeMethod::kMse: return "mse";
  }
  return "?";
}

TensorStats::TensorStats(int bins)
    : min_(std::numeric_limits<double>::infinity()), max_(-std::numeric_limits<double>::infinity()) {
  if (bins < 8 || bins > (1 << 20)) fail(ErrorCode::kInvalidArgument, "calibration histogram: {} bins (8 to 2^20)", bins);
  hist_.assign(static_cast<size_t>(bins), 0);
}

void TensorStats::observeRange(const float* x, int64_t n) {
  if (hist_count_) fail(ErrorCode::kInternal, "calibration: a range observed after the histogram was begun");
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    if (!std::isfinite(v)) {
      ++non_finite_;
      continue;
    }
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
    negative_ += v < 0;
    ++count_;
  }
}

double TensorStats::absMax() const { return count_ ? std::max(std::fabs(min_), std::fabs(max_)) : 0.0; }

double TensorStats::binWidth() const { return absMax() / static_cast<double>(hist_.size()); }

void TensorStats::observeHistogram(const float* x, int64_t n) {
  const double w = binWidth();
  const int64_t last = static_cast<int64_t>(hist_.size()) - 1;
  for (int64_t i = 0; i < n; ++i) {
    const double a = std::fabs(static_cast<double>(x[i]));
    if (!std::isfinite(a)) continue;
    ++hist_count_;
    if (a == 0) {  // exact in every range: counted apart, so the zeros after a Relu do not drive the choice of T
      ++zeros_;
      continue;
    }
    const int64_t b = w > 0 ? std::min(static_cast<int64_t>(a / w), last) : 0;
    ++hist_[static_cast<size_t>(b)];
  }
}

int64_t TensorStats::countOutside(double lo, double hi) const {
  // A range of rangeOf is [max(min, -T), min(max, T)]: the values it clips are those with |x| > T = max(-lo, hi).
  const double t = std::max(-lo, hi), w = binWidth();
  int64_t n = 0;
  for (size_t b = 0; b < hist_.size(); ++b)
    if ((static_cast<double>(b) + 0.5) * w > t) n += hist_[b];
  return n;
}

void TensorStats::mergeRange(const TensorStats& o) {
  if (o.hist_.size() != hist_.size()) fail(ErrorCode::kInvalidArgument, "calibration statistics of {} and {} bins", hist_.size(), o.hist_.size());
  if (o.count_ > kMaxStatsCount - count_ || o.non_finite_ > kMaxStatsCount - non_finite_)
    fail(ErrorCode::kInvalidArgument, "calibration statistics: more than 2^50 values");
  if (hist_count_ || o.hist_count_) fail(ErrorCode::kInvalidArgument, "calibration statistics: ranges merged after a histogram");
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
  count_ += o.count_;
  non_finite_ += o.non_finite_;
  negative_ += o.negative_;
}

void TensorStats::mergeHistogram(const TensorStats& o) {
  if (o.hist_.size() != hist_.size() || o.absMax() != absMax() || o.count_ != count_)
    fail(ErrorCode::kInvalidArgument, "calibration statistics: histograms over other ranges or bins cannot be merged");
  if (o.hist_count_ > kMaxStatsCount - hist_count_) fail(ErrorCode::kInvalidArgument, "calibration statistics: more than 2^50 values");
  for (size_t b = 0; b < hist_.size(); ++b) hist_[b] += o.hist_[b];
  hist_count_ += o.hist_count_;
  zeros_ += o.zeros_;
}

TensorStats TensorStats::histogramStart() const {
  TensorStats t = *this;
  std::fill(t.hist_.begin(), t.hist_.end(), 0);
  t.hist_count_ = t.zeros_ = 0;
  return t;
}

namespace {
void putBytes(std::vector<uint8_t>& out, const void* b, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  if (n) std::memcpy(out.data() + at, b, n);
}
template <typename T>
void put(std::vector<uint8_t>& out, T v) { putBytes(out, &v, sizeof v); }
template <typename T>
T take(const uint8_t*& p, const uint8_t* end, const char* field) {
  if (static_cast<size_t>(end - p) < sizeof(T)) fail(ErrorCode::kInvalidInput, "truncated at {}", field);
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}
}  // namespace

void TensorStats::write(std::vector<uint8_t>& out) const {
  put<uint32_t>(out, static_cast<uint32_t>(hist_.size()));
  for (double d : {min_, max_}) put(out, d);
  for (int64_t c : {count_, non_finite_, hist_count_, zeros_, negative_}) put(out, c);
  for (int64_t c : hist_) put(out, c);
}

TensorStats TensorStats::read(const uint8_t*& p, const uint8_t* end) {
  const uint32_t bins = take<uint32_t>(p, end, "bins");
  if (bins < 8 || bins > (1u << 20)) fail(ErrorCode::kInvalidInput, "field 'bins': {} (8 to 2^20)", bins);
  TensorStats t(static_cast<int>(bins));
  t.min_ = take<double>(p, end, "min");
  t.max_ = take<double>(p, end, "max");
  int64_t* counts[] = {&t.count_, &t.non_finite_, &t.hist_count_, &t.zeros_, &t.negative_};
  const char* names[] = {"count", "non_finite", "hist_count", "zeros", "negatives"};
  for (size_t i = 0; i < 5; ++i)
    if ((*counts[i] = take<int64_t>(p, end, names[i])) < 0 || *counts[i] > kMaxStatsCount)
      fail(ErrorCode::kInvalidInput, "field '{}': {} is outside 0 .. 2^50", names[i], *counts[i]);
  int64_t sum = t.zeros_;
  for (int64_t& c : t.hist_) {
    if ((c = take<int64_t>(p, end, "histogram")) < 0 || c > kMaxStatsCount - sum)
      fail(ErrorCode::kInvalidInput, "field 'histogram': a count below 0 or a sum above 2^50");
    sum += c;
  }
  const bool empty = t.count_ == 0 && std::isinf(t.min_) && std::isinf(t.max_);
  if (!empty && !(std::isfinite(t.min_) && std::isfinite(t.max_) && t.min_ <= t.max_))
    fail(ErrorCode::kInvalidInput, "field 'min' / 'max': {} > {} or not finite", t.min_, t.max_);
  if (sum != t.hist_count_ || t.negative_ > t.count_) fail(ErrorCode::kInvalidInput, "field 'hist_count': the counts disagree");
  return t;
}

namespace {

double percentileThreshold(const std::vector<int64_t>& h, int64_t zeros, double w, double p) {
  int64_t total = zeros;
  for (int64_t c : h) total += c;
  if (total == 0) return 0;
  const double target = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(total);
  int64_t cum = zeros;
  if (static_cast<double>(cum) >= target) return w;  // (the smallest threshold the histogram resolves)
  for (size_t i = 0; i < h.size(); ++i) {
    cum += h[i];
    if (static_cast<double>(cum) >= target) return static_cast<double>(i + 1) * w;
  }
  return static_cast<double>(h.size()) * w;
}

/// KL(P || Q) for the first i bins: P with the tail folded into bin i - 1, Q the first i bins merged into `levels`
/// bins and spread back over each merged bin's non-empty source bins.
double klDivergence(const std::vector<int64_t>& h, size_t i, int levels) {
  std::vector<double> p(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(i)), q(i, 0.0);
  for (size_t k = i; k < h.size(); ++k) p[i - 1] += static_cast<double>(h[k]);
  const size_t per = i / static_cast<size_t>(levels);
  for (int j = 0; j < levels; ++j) {
    const size_t start = static_cast<size_t>(j) * per, stop = j == levels - 1 ? i : start + per;
    double sum = 0;
    int64_t nonzero = 0;
    for (size_t k = start; k < stop; ++k) sum += static_cast<double>(h[k]), nonzero += h[k] != 0;
    for (size_t k = start; k < stop; ++k) q[k] = h[k] != 0 ? sum / static_cast<double>(nonzero) : 0.0;
  }
  double sp = 0, sq = 0;
  for (size_t k = 0; k < i; ++k) sp += p[k], sq += q[k];
  if (sp == 0 || sq == 0) return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (size_t k = 0; k < i; ++k) {
    if (p[k] == 0) continue;
    const double pk = p[k] / sp, qk = std::max(q[k] / sq, 1e-12);  // a folded tail over an empty bin costs much
    kl += pk * std::log(pk / qk);
  }
  return kl;
}

}  // namespace

double TensorStats::threshold(RangeMethod m, double percentile, int levels) const {
  const double w = binWidth();
  if (absMax() == 0) return 0;
  if (levels < 2) fail(ErrorCode::kInvalidArgument, "calibration: {} quantization levels", levels);
  if (m != RangeMethod::kMinMax && hist_count_ == 0)
    fail(ErrorCode::kInternal, "calibration: the {} method needs the histogram pass", rangeMethodName(m));
  const size_t nb = hist_.size();
  switch (m) {
    case RangeMethod::kMinMax: return absMax();
    case RangeMethod::kPercentile: return percentileThreshold(hist_, zeros_, w, percentile);
    case RangeMethod::kEntropy: {
      if (nb <= static_cast<size_t>(levels)) return absMax();
      size_t best = nb;
      double best_kl = std::numeric_limits<double>::infinity();
      for (size_t i = static_cast<size_t>(levels); i <= nb; ++i) {
        const double kl = klDivergence(hist_, i, levels);
        if (kl < best_kl) best_kl = kl, best = i;  // the first minimum: the smallest threshold of equal loss
      }
      return static_cast<double>(best) * w;
    }
    case RangeMethod::kMse: {
      const double steps = static_cast<double>(levels - 1);  // positive int8 codes: 127
      size_t best = nb;
      double best_err = std::numeric_limits<double>::infinity();
      for (size_t i = 1; i <= nb; ++i) {
        const double t = static_cast<double>(i) * w, step = t / steps;
        double err = 0;
        for (size_t k = 0; k < nb; ++k) {
          if (!hist_[k]) continue;
          const double c = (static_cast<double>(k) + 0.5) * w;
          const double e = c <= t ? step * step / 12.0 : (c - t) * (c - t);
          err += static_cast<double>(hist_[k]) * e;
        }
        if (err < best_err) best_err = err, best = i;
      }
      return static_cast<double>(best) * w;
    }
  }
  return absMax();
}

namespace {

/// What the statistics depend on, as a SHA-256: the graph (every node's op, name, inputs, outputs and attributes, every
/// constant's bytes, the inputs' types), the samples' bytes and the bins. Empty (not cached) for a graph with
/// subgraphs (control flow: not fingerprinted).
std::string statsKey(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>* samples, int bins) {
  Sha256 h;
  auto str = [&](const std::string& x) {
    const uint64_t n = x.size();
    h.update(&n, sizeof n);
    h.update(x.data(), x.size());
  };
  auto num = [&](auto v) { h.update(&v, sizeof v); };
  auto tensor = [&](const Tensor& t) {
    num(static_cast<int>(t.dtype()));
    num(static_cast<uint64_t>(t.rank()));
    for (int64_t d : t.shape()) num(d);
    if (t.nbytes()) h.update(t.raw(), t.nbytes());
  };
  num(bins);
  for (ir::ValueId v : g.inputs()) str(g.value(v).name + ":" + g.value(v).type.str());
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    str(n.domain + "." + n.op + "|" + n.name);
    for (ir::ValueId v : n.inputs) str(v == ir::kNoValue ? "_" : g.value(v).name);
    str("->");
    for (ir::ValueId v : n.outputs) str(v == ir::kNoValue ? "_" : g.value(v).name);
    for (auto& [k, a] : n.attrs) {
      str(k);
      num(static_cast<int>(a.kind()));
      if (auto x = a.get<int64_t>()) num(*x);
      else if (auto f = a.get<float>()) num(*f);
      else if (auto t = a.get<std::string>()) str(*t);
      else if (auto is = a.get<std::vector<int64_t>>()) { num(is->size()); for (int64_t i : *is) num(i); }
      else if (auto fs = a.get<std::vector<float>>()) { num(fs->size()); for (float f : *fs) num(f); }
      else if (auto ss = a.get<std::vector<std::string>>()) { num(ss->size()); for (auto& x : *ss) str(x); }
      else if (auto tt = a.get<Tensor>()) tensor(*tt);
      else return std::string();  // a subgraph
    }
  }
  for (ir::ValueId v : g.valueIds())
    if (g.value(v).isConstant()) {
      str(g.value(v).name);
      tensor(*g.value(v).constant);
    }
  if (samples) {
    num(samples->size());
    for (auto& sample : *samples)
      for (auto& [name, t] : sample) {
        str(name);
        tensor(t);
      }
  }
  return h.hexDigest();
}

std::map<std::string, TensorStats> collectStatsUncached(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples,
                                                        int threads, int bins, int first_pass = 0, int last_pass = 1,
                                                        const std::map<std::string, TensorStats>* ranges = nullptr);

thread_local const StatsSource* t_source = nullptr;

}  // namespace

std::string statsGraphKey(const ir::Graph& g, int bins) { return statsKey(g, nullptr, bins); }

ScopedStatsSource::ScopedStatsSource(const StatsSource& s) : prev_(t_source) { t_source = &s; }
ScopedStatsSource::~ScopedStatsSource() { t_source = prev_; }

std::vector<uint8_t> writeStats(const std::map<std::string, TensorStats>& stats, const std::string& key) {
  std::vector<uint8_t> out;
  putBytes(out, "NPUCSTAT", 8);
  put<uint32_t>(out, 1);
  put<uint32_t>(out, static_cast<uint32_t>(key.size()));
  putBytes(out, key.data(), key.size());
  put<uint64_t>(out, stats.size());
  for (auto& [name, s] : stats) {
    put<uint32_t>(out, static_cast<uint32_t>(name.size()));
    putBytes(out, name.data(), name.size());
    s.write(out);
  }
  return out;
}

std::map<std::string, TensorStats> readStats(const std::vector<uint8_t>& bytes, const std::string& what, std::string* key) {
  return withContext(what, [&] {
    const uint8_t* p = bytes.data();
    const uint8_t* end = p + bytes.size();
    if (bytes.size() < 8 || std::memcmp(p, "NPUCSTAT", 8) != 0) fail(ErrorCode::kInvalidInput, "not npuc calibration statistics");
    p += 8;
    if (const uint32_t v = take<uint32_t>(p, end, "version"); v != 1) fail(ErrorCode::kInvalidInput, "field 'version': {} (1)", v);
    auto text = [&](const char* field) {
      const uint32_t n = take<uint32_t>(p, end, field);
      if (n > 4096 || static_cast<size_t>(end - p) < n) fail(ErrorCode::kInvalidInput, "field '{}': {} bytes", field, n);
      std::string s(reinterpret_cast<const char*>(p), n);
      p += n;
      return s;
    };
    *key = text("key");
    const uint64_t count = take<uint64_t>(p, end, "count");
    if (count > static_cast<uint64_t>(end - p)) fail(ErrorCode::kInvalidInput, "field 'count': {} tensors", count);
    std::map<std::string, TensorStats> stats;
    for (uint64_t i = 0; i < count; ++i) {
      std::string name = text("name");
      TensorStats s = TensorStats::read(p, end);
      if (!stats.emplace(std::move(name), std::move(s)).second) fail(ErrorCode::kInvalidInput, "tensor {} appears twice", i);
    }
    if (p != end) fail(ErrorCode::kInvalidInput, "{} bytes after the last tensor", end - p);
    return stats;
  });
}

std::map<std::string, TensorStats> collectStats(const ir::Graph& g,
                                                const std::vector<std::map<std::string, Tensor>>& samples, int threads,
                                                int bins) {
  if (samples.empty()) fail(ErrorCode::kInvalidArgument, "calibration: no samples");
  if (const StatsSource* src = t_source) {
    const std::string gkey = statsGraphKey(g, bins);
    if (src->mode == StatsSource::Mode::kProvided) {
      if (!gkey.empty() && gkey == src->key) return *src->provided;
    } else {  // one pass on these samples, for the caller that merges the shards
      const bool second = src->mode == StatsSource::Mode::kPass2;
      if (second && (!src->ranges || gkey != src->key))
        fail(ErrorCode::kInvalidArgument, "calibration statistics: the ranges of pass 1 are of another model or options");
      *src->out = collectStatsUncached(g, samples, threads, bins, second ? 1 : 0, second ? 1 : 0, src->ranges);
      *src->out_key = gkey;
      throw StatsCollected{};
    }
  }
  // The statistics do not depend on the threads: the last few are kept for this process, by what they depend on, so a
  // search that translates one model with the same samples many times (npuc tune) calibrates once.
  static std::mutex mu;
  static std::deque<std::pair<std::string, std::map<std::string, TensorStats>>> cache;
  constexpr size_t kCached = 4;
  const std::string key = statsKey(g, &samples, bins);
  if (!key.empty()) {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [k, stats] : cache)
      if (k == key) return stats;
  }
  auto stats = collectStatsUncached(g, samples, threads, bins);
  if (!key.empty()) {
    std::lock_guard<std::mutex> lock(mu);
    cache.emplace_back(key, stats);
    if (cache.size() > kCached) cache.pop_front();
  }
  return stats;
}

namespace {
std::map<std::string, TensorStats> collectStatsUncached(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples,
                                                        int threads, int bins, int first_pass, int last_pass,
                                                        const std::map<std::string, TensorStats>* ranges) {
  std::map<std::string, TensorStats> stats;
  if (ranges)  // pass 2 of a shard: begun from the merged ranges
    for (auto& [name, s] : *ranges) stats.emplace(name, s.histogramStart());
  engine::EngineOptions eo;
  eo.threads = std::max(1, threads);
  eo.fuse_activations = false;
  engine::Engine e(g, eo);
  for (int pass = first_pass; pass <= last_pass; ++pass) {
    auto observe = [&](ir::ValueId v, const Tensor& t) {
      if (t.dtype() != DType::kF32) return;  // shapes, indices, masks: not quantized
      const std::string& name = g.value(v).name;
      auto it = stats.find(name);
      if (it == stats.end() && pass == 1 && ranges) fail(ErrorCode::kInvalidArgument, "calibration statistics: the ranges of pass 1 lack tensor '{}'", name);
      if (it == stats.end()) it = stats.emplace(name, TensorStats(bins)).first;
      if (pass == 0) it->second.observeRange(t.data<float>(), t.numel());
      else it->second.observeHistogram(t.data<float>(), t.numel());
    };
    for (size_t i = 0; i < samples.size(); ++i) {
      withContext(fmt::format("calibration sample {}", i + 1), [&] {
        for (ir::ValueId in : g.inputs()) {
          auto it = samples[i].find(g.value(in).name);
          if (it == samples[i].end()) fail(ErrorCode::kInvalidArgument, "no tensor for input '{}'", g.value(in).name);
          observe(in, it->second);
        }
        e.run(samples[i], [&](const ir::Node& n, const std::vector<Tensor>& outs) {
          for (size_t k = 0; k < outs.size() && k < n.outputs.size(); ++k)
            if (n.outputs[k] != ir::kNoValue) observe(n.outputs[k], outs[k]);
        });
      });
    }
  }
  return stats;
}
}  // namespace

Range rangeOf(const TensorStats& s, RangeMethod m, double percentile) {
  Range r;
  if (s.count() == 0) {
    r.warning = "no finite values";
    return r;
  }
  const double t = s.threshold(m, percentile);
  r.lo = std::min(0.0, std::max(s.min(), -t));
  r.hi = std::max(0.0, std::min(s.max(), t));
  if (s.min() == s.max()) r.warning = fmt::format("every value is {} (a zero-width range)", s.min());
  if (s.nonFinite())
    r.warning += fmt::format("{}{} NaN or infinite values ignored", r.warning.empty() ? "" : "; ", s.nonFinite());
  return r;
}

}  // namespace npuc::quant
