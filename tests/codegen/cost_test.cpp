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

TEST(CostModel, SingleCoreTotalsFollowTheFormulaOnEachEngine) {
  const fs::path dir = test::scratchDir("cost_tidl");
  TranslateOptions o;
  o.prefix = "digits";
  o.onnx = fs::path(NPUC_SOURCE_DIR) / "models" / "digits" / "digits_cnn.onnx";
  o.target = "tidl";
  o.out_root = dir;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.single_core_us.size(), 2u);
  EXPECT_EQ(r.single_core_us[0].first, "dsp");
  EXPECT_EQ(r.single_core_us[1].first, "eve");
  // targets/tidl.yaml: eve 650 MHz, 9.53 MAC/cycle + 0.53 cycles per output tap, inner products / global pooling /
  // softmax emulated at 35.3 cycles per MAC (or input element), 8 elements/cycle otherwise, 20 us per layer; dsp 750
  // MHz, 1.194 MAC/cycle, 8 elements/cycle, 10 us per layer.
  std::vector<double> dsp_t, eve_t;
  int mac_layers = 0;
  for (const auto& c : csvRows(dir / "digits" / "digits_summary.csv")) {
    if (c.size() < 20 || c[0] == "ith" || c[0] == "total" || c[3] == "folded") continue;
    const std::string op = c[2].substr(0, c[2].find('+'));
    const double macs = std::stod(c[18]);
    const double in = std::stod(c[12]) * std::stod(c[13]) * std::stod(c[14]), out = std::stod(c[15]) * std::stod(c[16]) * std::stod(c[17]);
    const double taps = out * std::max(1.0, c[4].empty() ? 1.0 : std::stod(c[4])) * std::max(1.0, c[5].empty() ? 1.0 : std::stod(c[5]));
    mac_layers += macs > 0;
    dsp_t.push_back(10 + (macs > 0 ? macs / (1.194 * 750) : (in + out) / (8.0 * 750)));
    const bool emulated = op == "Gemm" || op == "GlobalAveragePool" || op == "Softmax";
    eve_t.push_back(20 + (emulated ? (macs > 0 ? macs : in) * 35.3 / 650
                          : macs > 0 ? macs / (9.53 * 650) + taps * 0.53 / 650 : (in + out) / (8.0 * 650)));
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
  ASSERT_EQ(r.multi_core_roi_s.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.multi_core_roi_s[i].first, want[i].first);
    EXPECT_NEAR(r.multi_core_roi_s[i].second, want[i].second, 1e-6 * want[i].second) << want[i].first;
  }
  EXPECT_GT(r.multi_core_roi_s[2].second, r.multi_core_roi_s[1].second);  // the DSP takes the emulated inner product
  std::ifstream md(dir / "digits" / "digits_summary.md");
  std::string text((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(text.find("Single core (every layer on one engine"), std::string::npos);
  EXPECT_NE(text.find("| 2xEVE+1xDSP |"), std::string::npos);
}

}  // namespace
}  // namespace npuc
