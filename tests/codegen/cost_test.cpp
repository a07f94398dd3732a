// The cost model (docs/cost-model.md) through translate: every layer's time follows the formula from the target's
// engine data, and the single-core totals are the model with every layer on one engine — MAC layers timed by their
// MACs on an engine with a MAC rate, including a vector engine (TIDL's DSP).
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
  // targets/tidl.yaml: eve 650 MHz, 6.19 MAC/cycle, 20 us; dsp 750 MHz, 1.24 MAC/cycle, 8 elements/cycle, 10 us.
  double dsp = 0, eve = 0;
  int mac_layers = 0;
  for (const auto& c : csvRows(dir / "digits" / "digits_summary.csv")) {
    if (c.size() < 20 || c[0] == "ith" || c[0] == "total" || c[3] == "folded") continue;
    const double macs = std::stod(c[18]);
    const double elems = std::stod(c[12]) * std::stod(c[13]) * std::stod(c[14]) + std::stod(c[15]) * std::stod(c[16]) * std::stod(c[17]);
    mac_layers += macs > 0;
    dsp += 10 + (macs > 0 ? macs / (1.24 * 750) : elems / (8.0 * 750));
    eve += 20 + (macs > 0 ? macs / (6.19 * 650) : 0.0);  // the EVE has no element rate: overhead only
  }
  EXPECT_GT(mac_layers, 1);
  EXPECT_NEAR(r.single_core_us[0].second, dsp, 1e-6 * dsp);
  EXPECT_NEAR(r.single_core_us[1].second, eve, 1e-6 * eve);
  std::ifstream md(dir / "digits" / "digits_summary.md");
  std::string text((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(text.find("Single core (every layer on one engine"), std::string::npos);
}

}  // namespace
}  // namespace npuc
