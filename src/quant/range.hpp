// Calibration ranges (issue 24, docs/calibration.md): the statistics of one tensor over the calibration samples
// and the clipping threshold each range method picks from them.
//
// Two passes, as TensorRT and TIDL calibrate: the first finds min and max, the second fills a histogram of |x| over
// [0, max(|min|, |max|)]. The methods then choose a symmetric threshold T (values beyond ±T saturate):
//   minmax      T = max |x|
//   percentile  T = the p-th percentile of |x| (p = 99.99 by default), at histogram-bin resolution
//   entropy     the T whose int8 quantization of the clipped histogram loses the least information (the KL
//               divergence of TensorRT's calibrator: reference = the histogram up to T with the tail folded into its
//               last bin, candidate = the same merged into `levels` bins and spread back; T from 'levels' bins up)
//   mse         the T minimising the expected squared error: rounding (step²/12 per value inside ±T) plus clipping
//               (the distance to T of every value beyond it), at bin-centre resolution
// An affine (asymmetric) range is [max(min, -T), min(max, T)].
#pragma once

#include "ir/graph.hpp"
#include "npuc/tensor.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace npuc::quant {

enum class RangeMethod { kMinMax, kPercentile, kEntropy, kMse };

/// The most values statistics count (read or merged: beyond it, an error; sums stay far inside int64).
inline constexpr int64_t kMaxStatsCount = int64_t{1} << 50;
/// "minmax", "percentile", "entropy", "mse"; false for another name.
bool rangeMethodFromName(const std::string& name, RangeMethod* m);
const char* rangeMethodName(RangeMethod m);

class TensorStats {
 public:
  explicit TensorStats(int bins = 2048);
  /// Pass 1: min, max and counts (NaN and infinities are counted apart and take no part in the range).
  void observeRange(const float* x, int64_t n);
  /// Pass 2 (after every observeRange): the histogram of |x| over [0, absMax()], exact zeros counted apart (every
  /// range holds 0 exactly: they take part in the percentile's count only).
  void observeHistogram(const float* x, int64_t n);

  double min() const { return min_; }
  double max() const { return max_; }
  double absMax() const;
  int64_t count() const { return count_; }          // finite values seen by pass 1
  int64_t nonFinite() const { return non_finite_; }  // NaN and ±inf seen by pass 1
  int64_t negatives() const { return negative_; }    // finite values below 0 seen by pass 1
  const std::vector<int64_t>& histogram() const { return hist_; }  // nonzero |x| only
  int64_t zeros() const { return zeros_; }
  double binWidth() const;
  /// The values a range of rangeOf ([max(min, -T), min(max, T)]) clips: those with |x| > T = max(-lo, hi), at
  /// histogram-bin resolution (a bin counts when its centre lies beyond T).
  int64_t countOutside(double lo, double hi) const;

  /// Statistics in shards (docs/calibration.md): pass 1 of several sample sets merged (min, max, counts), then pass 2
  /// of each begun from the merged ranges (histogramStart) and merged (bin counts) — the same statistics as one pass
  /// over all the samples. Merging statistics of other bins or (pass 2) other ranges is an error.
  void mergeRange(const TensorStats& o);
  void mergeHistogram(const TensorStats& o);
  TensorStats histogramStart() const;  // these ranges, an empty histogram
  /// The statistics as bytes and back (read: untrusted input, every field checked; errors name the field).
  void write(std::vector<uint8_t>& out) const;
  static TensorStats read(const uint8_t*& p, const uint8_t* end);

  /// The symmetric clipping threshold of a method (> 0; absMax() for minmax). `levels`: the quantized bins of the
  /// entropy method (128 for int8's magnitudes). An all-zero tensor gives 0.
  double threshold(RangeMethod m, double percentile = 99.99, int levels = 128) const;

 private:
  double min_, max_;
  int64_t count_ = 0, non_finite_ = 0, hist_count_ = 0, zeros_ = 0, negative_ = 0;  // zeros_: exact zeros, kept out of hist_
  std::vector<int64_t> hist_;
};

/// The statistics of every float tensor of `g` (its inputs and every node's outputs, by value name) over the
/// calibration samples (each a complete set of graph inputs by name), two passes of the reference engine (activations
/// unfused: every op's own output, as in the float model). Errors name the sample ("calibration sample 3: ...").
std::map<std::string, TensorStats> collectStats(const ir::Graph& g,
                                                const std::vector<std::map<std::string, Tensor>>& samples, int threads,
                                                int bins = 2048);

/// What statistics of g depend on besides the samples, as a SHA-256 hex string (the graph: ops, names, attributes,
/// constants, inputs' types; and the bins); empty for a graph with subgraphs.
std::string statsGraphKey(const ir::Graph& g, int bins = 2048);

/// Where collectStats takes its statistics from while one is in scope on this thread (translate's calibration run
/// in shards; docs/calibration.md "Statistics in shards"):
/// - kProvided: `provided` (the merged statistics of a graph whose statsGraphKey is `key`) for that graph; other
///   graphs are measured as usual;
/// - kPass1 / kPass2: the first collectStats measures only that pass on its samples (kPass2 begun from `ranges`,
///   merged pass-1 statistics of the same graph), puts them and the graph's key in `out` / `out_key`, and throws
///   StatsCollected (the run that asked stops there).
struct StatsSource {
  enum class Mode { kProvided, kPass1, kPass2 } mode = Mode::kProvided;
  std::string key;
  const std::map<std::string, TensorStats>* provided = nullptr;
  const std::map<std::string, TensorStats>* ranges = nullptr;
  std::map<std::string, TensorStats>* out = nullptr;
  std::string* out_key = nullptr;
};
struct StatsCollected {};
class ScopedStatsSource {
 public:
  explicit ScopedStatsSource(const StatsSource& s);
  ~ScopedStatsSource();
  ScopedStatsSource(const ScopedStatsSource&) = delete;
  ScopedStatsSource& operator=(const ScopedStatsSource&) = delete;

 private:
  const StatsSource* prev_;
};

/// Statistics and the key of their graph as bytes ("NPUCSTAT", version, key, count, then each tensor's name and
/// TensorStats::write) and back (untrusted: errors name `what` and the field).
std::vector<uint8_t> writeStats(const std::map<std::string, TensorStats>& stats, const std::string& key);
std::map<std::string, TensorStats> readStats(const std::vector<uint8_t>& bytes, const std::string& what, std::string* key);

/// An affine range [lo, hi] from statistics and a method: [max(min, -T), min(max, T)], widened to contain 0 (the
/// zero point must be exact). `warning` is set (else cleared) when the range is degenerate (all values equal, or
/// none finite) or values were NaN / infinite.
struct Range {
  double lo = 0, hi = 0;
  std::string warning;
};
Range rangeOf(const TensorStats& s, RangeMethod m, double percentile = 99.99);

}  // namespace npuc::quant
