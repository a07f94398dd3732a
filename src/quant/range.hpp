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

/// An affine range [lo, hi] from statistics and a method: [max(min, -T), min(max, T)], widened to contain 0 (the
/// zero point must be exact). `warning` is set (else cleared) when the range is degenerate (all values equal, or
/// none finite) or values were NaN / infinite.
struct Range {
  double lo = 0, hi = 0;
  std::string warning;
};
Range rangeOf(const TensorStats& s, RangeMethod m, double percentile = 99.99);

}  // namespace npuc::quant
