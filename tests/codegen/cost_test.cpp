// The cost model (docs/cost-model.md) through translate: every layer's time follows the formula from the target's
// engine data, and the single-core totals are the model with every layer on one engine — MAC layers timed by their
// MACs on an engine with a MAC rate, including a vector engine (TIDL's DSP) — and the throughput of the target's
// core sets follows from them.
#include "npuc/model.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace npuc {
namespace {

namespace fs = std::filesystem;

std::vector<std::vector<std::string>> csvRows(const fs::path& p) {
  std::ifstream f(p);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(f, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

// targets/tidl.yaml: eve 650 MHz, 11.16 MAC/cycle (2.74 for groups of at most `narrow` input channels: 48 there),
// inner products and softmax emulated at 26.4 cycles per MAC, global pooling at 151.8 per input element, 8
// elements/cycle otherwise, 20 us per layer; dsp 750 MHz, 1.327 MAC/cycle (1.047 on pointwise layers: one kernel
// tap), 8 elements/cycle, 10 us per layer. Translates the digits model for `target` and checks every layer's time,
// the single-core totals and the core sets' throughput against that formula; returns how many of the model's MAC
// layers fell in the narrow class on the EVE.
int checkTidlFormula(const std::string& target, int64_t narrow, const std::string& tag) {
  const fs::path dir = test::scratchDir("cost_tidl_" + tag);
  TranslateOptions o;
  o.prefix = "digits";
  o.onnx = fs::path(NPUC_SOURCE_DIR) / "models" / "digits" / "digits_cnn.onnx";
  o.target = target;
  o.out_root = dir;
  TranslateResult r = translate(o);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.single_core_us.size(), 2u);
  if (!r.ok || r.single_core_us.size() != 2) return -1;
  EXPECT_EQ(r.single_core_us[0].first, "dsp");
  EXPECT_EQ(r.single_core_us[1].first, "eve");
  std::vector<double> dsp_t, eve_t;
  int mac_layers = 0, narrow_layers = 0;
  for (const auto& c : csvRows(dir / "digits" / "digits_summary.csv")) {
    if (c.size() < 20 || c[0] == "ith" || c[0] == "total" || c[3] == "folded") continue;
    const std::string op = c[2].substr(0, c[2].find('+'));
    const double macs = std::stod(c[18]);
    const double in = std::stod(c[12]) * std::stod(c[13]) * std::stod(c[14]), out = std::stod(c[15]) * std::stod(c[16]) * std::stod(c[17]);
    const double window = std::max(1.0, c[4].empty() ? 1.0 : std::stod(c[4])) * std::max(1.0, c[5].empty() ? 1.0 : std::stod(c[5]));
    const double group_channels = macs / (out * window);  // (the input channels of a group: in_ch for these layers)
    EXPECT_EQ(group_channels, macs > 0 ? std::stod(c[12]) : 0.0) << c[1];
    mac_layers += macs > 0;
    const bool is_narrow = macs > 0 && group_channels <= static_cast<double>(narrow);
    dsp_t.push_back(10 + (macs > 0 ? macs / ((window == 1 ? 1.047 : 1.327) * 750) : (in + out) / (8.0 * 750)));
    const bool emulated = op == "Gemm" || op == "GlobalAveragePool" || op == "Softmax";
    narrow_layers += is_narrow && !emulated;
    eve_t.push_back(20 + (emulated ? (op == "GlobalAveragePool" ? in * 151.8 : macs * 26.4) / 650
                          : macs > 0 ? macs / ((is_narrow ? 2.74 : 11.16) * 650) : (in + out) / (8.0 * 650)));
  }
  double dsp = 0, eve = 0;
  for (double t : dsp_t) dsp += t;
  for (double t : eve_t) eve += t;
  EXPECT_GT(mac_layers, 1);
  EXPECT_NEAR(r.single_core_us[0].second, dsp, 1e-6 * dsp);
  EXPECT_NEAR(r.single_core_us[1].second, eve, 1e-6 * eve);
  // Throughput: one engine's cores side by side; EVE then DSP as two layers groups, pipelined at the best cut.
  auto pipeline = [&](double n_eve) {
    double best = 1e300;
    for (size_t s = 0; s <= eve_t.size(); ++s) {
      double a = 0, b = 0;
      for (size_t i = 0; i < eve_t.size(); ++i) (i < s ? a : b) += i < s ? eve_t[i] : dsp_t[i];
      best = std::min(best, std::max(a / n_eve, b + (s > 0 && s < eve_t.size() ? 100.0 : 0.0)));
    }
    return 1e6 / best;
  };
  const std::vector<std::pair<std::string, double>> want = {
      {"2xDSP", 2e6 / dsp}, {"2xEVE", 2e6 / eve}, {"2xEVE+1xDSP", pipeline(2)}, {"4xEVE", 4e6 / eve}, {"4xEVE+1xDSP", pipeline(4)}};
  EXPECT_EQ(r.multi_core_roi_s.size(), want.size());
  for (size_t i = 0; i < want.size() && i < r.multi_core_roi_s.size(); ++i) {
    EXPECT_EQ(r.multi_core_roi_s[i].first, want[i].first);
    EXPECT_NEAR(r.multi_core_roi_s[i].second, want[i].second, 1e-6 * want[i].second) << want[i].first;
  }
  if (r.multi_core_roi_s.size() > 2) {
    EXPECT_GT(r.multi_core_roi_s[2].second, r.multi_core_roi_s[1].second);  // the DSP takes the emulated layers
  }
  std::ifstream md(dir / "digits" / "digits_summary.md");
  std::string text((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(text.find("Single core (every layer on one engine"), std::string::npos);
  EXPECT_NE(text.find("| 2xEVE+1xDSP |"), std::string::npos);
  return narrow_layers;
}

TEST(CostModel, SingleCoreTotalsFollowTheFormulaOnEachEngine) {
  // The digits model's convolutions read 1, 16 and 32 channels: all narrow on the EVE.
  EXPECT_EQ(checkTidlFormula("tidl", 48, "as_shipped"), 3);
  // With the class boundary at 16 channels the 32-channel convolution runs at the EVE's wide rate.
  const fs::path dir = test::scratchDir("cost_tidl_target");
  std::ifstream in(fs::path(NPUC_SOURCE_DIR) / "targets" / "tidl.yaml");
  std::string yaml((std::istreambuf_iterator<char>(in)), {});
  const std::string from = "narrow_group_channels: 48";
  ASSERT_NE(yaml.find(from), std::string::npos);
  yaml.replace(yaml.find(from), from.size(), "narrow_group_channels: 16");
  std::ofstream(dir / "tidl16.yaml") << yaml;
  EXPECT_EQ(checkTidlFormula((dir / "tidl16.yaml").string(), 16, "narrow16"), 2);
}

}  // namespace
}  // namespace npuc
