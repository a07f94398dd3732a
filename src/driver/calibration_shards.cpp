// Calibration statistics in shards (npuc/model.hpp: calibrationPass, mergeCalibrationStats; docs/calibration.md):
// a translation run up to its calibration measures one pass on one shard of the samples and stops there.
#include "npuc/model.hpp"

#include "quant/range.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <atomic>
#include <filesystem>

#include <unistd.h>

namespace npuc {

std::vector<uint8_t> calibrationPass(const TranslateOptions& o, int pass, const std::vector<uint8_t>& ranges) {
  if (pass != 1 && pass != 2) fail(ErrorCode::kInvalidArgument, "calibration pass {} (1: ranges, 2: histograms)", pass);
  if (o.calibration.empty()) fail(ErrorCode::kInvalidArgument, "calibration pass {}: no samples (TranslateOptions::calibration)", pass);
  if (o.absorb_bias)  // (each shard would measure its own floors: a different model per shard)
    fail(ErrorCode::kInvalidArgument, "--absorb-bias measures each channel's floor on the whole calibration set: its statistics "
         "cannot be gathered in shards (translate on all the samples instead)");
  quant::StatsSource src;
  src.mode = pass == 1 ? quant::StatsSource::Mode::kPass1 : quant::StatsSource::Mode::kPass2;
  std::map<std::string, quant::TensorStats> given, out;
  std::string key;
  if (pass == 2) {
    given = quant::readStats(ranges, "the ranges of pass 1", &src.key);
    src.ranges = &given;
  } else if (!ranges.empty()) {
    fail(ErrorCode::kInvalidArgument, "calibration pass 1 takes no ranges");
  }
  src.out = &out;
  src.out_key = &key;
  // (a translation of its own, into a scratch folder nothing is left in: it stops at its calibration)
  static std::atomic<int> serial{0};
  TranslateOptions t = o;
  t.out_root = std::filesystem::temp_directory_path() / fmt::format("npuc-calib-{}-{}", ::getpid(), serial++);
  t.save_qdq_onnx = t.save_opt_onnx = false;
  t.calibration_stats.clear();
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{t.out_root};
  try {
    quant::ScopedStatsSource scope(src);
    (void)translate(t);
  } catch (const quant::StatsCollected&) {
    return quant::writeStats(out, key);
  }
  fail(ErrorCode::kInvalidArgument, "target '{}' measures no calibration statistics (only int8 targets calibrate their activations)", o.target);
}

std::vector<uint8_t> mergeCalibrationStats(const std::vector<std::vector<uint8_t>>& parts, int pass) {
  if (pass != 1 && pass != 2) fail(ErrorCode::kInvalidArgument, "calibration pass {} (1: ranges, 2: histograms)", pass);
  if (parts.empty()) fail(ErrorCode::kInvalidArgument, "no calibration statistics to merge");
  std::string key;
  std::map<std::string, quant::TensorStats> merged = quant::readStats(parts[0], "calibration statistics part 1", &key);
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string what = fmt::format("calibration statistics part {}", i + 1);
    std::string k;
    const std::map<std::string, quant::TensorStats> p = quant::readStats(parts[i], what, &k);
    withContext(what, [&] {
      if (k != key) fail(ErrorCode::kInvalidArgument, "measured on another model or options than part 1");
      if (p.size() != merged.size()) fail(ErrorCode::kInvalidArgument, "{} tensors, part 1 has {}", p.size(), merged.size());
      for (auto& [name, s] : p) {
        auto m = merged.find(name);
        if (m == merged.end()) fail(ErrorCode::kInvalidArgument, "tensor '{}' is not in part 1", name);
        if (pass == 1) m->second.mergeRange(s);
        else m->second.mergeHistogram(s);
      }
    });
  }
  return quant::writeStats(merged, key);
}

}  // namespace npuc
