// libFuzzer target: calibration statistics as bytes (quant::readStats: what TranslateOptions::calibration_stats and
// mergeCalibrationStats read, docs/calibration.md "Statistics in shards"). Whatever is accepted must write back to
// bytes that read back to the same bytes, merge with itself, and give every range method a threshold; every outcome
// is a result or an npuc::Error: never a crash, a leak or UB.
#include "quant/range.hpp"
#include "support/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace npuc::quant;
  const std::vector<uint8_t> bytes(data, data + size);
  try {
    std::string key, again_key;
    std::map<std::string, TensorStats> stats = readStats(bytes, "fuzz", &key);
    const std::vector<uint8_t> written = writeStats(stats, key);
    if (writeStats(readStats(written, "fuzz (written)", &again_key), again_key) != written) std::abort();
    for (auto& [name, s] : stats) {
      for (RangeMethod m : {RangeMethod::kMinMax, RangeMethod::kPercentile, RangeMethod::kEntropy, RangeMethod::kMse})
        (void)rangeOf(s, m);
      (void)s.countOutside(-1, 1);
      TensorStats h = s.histogramStart();
      try {
        h.mergeHistogram(s.histogramStart());
        TensorStats r = s;
        r.mergeRange(s);
      } catch (const npuc::Error&) {
      }
    }
  } catch (const npuc::Error&) {
  }
  return 0;
}
