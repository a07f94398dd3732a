// The cost model (docs/cost-model.md) through translate: every layer's time follows the formula from the target's
// engine data, and the single-core totals are the model with every layer on one engine — MAC layers timed by their
// MACs on an engine with a MAC rate, including a vector engine (TIDL's DSP) — and the throughput of the target's
// core sets follows from them.
#include "npuc/io.hpp"
#include "npuc/model.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
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

/// Writes `m` to `onnx` and returns a translation of it for tidl into `dir` / PREFIX, with `set` changing the options.
std::function<TranslateResult(const std::string&, const std::function<void(TranslateOptions&)>&)> tidlTranslator(
    const onnx::ModelProto& m, const fs::path& onnx, const fs::path& dir) {
  std::ofstream out(onnx, std::ios::binary);
  EXPECT_TRUE(m.SerializeToOstream(&out));
  return [onnx, dir](const std::string& prefix, const std::function<void(TranslateOptions&)>& set) {
    TranslateOptions o;
    o.prefix = prefix;
    o.onnx = onnx;
    o.target = "tidl";
    o.out_root = dir;
    set(o);
    return translate(o);
  };
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
  auto pipeline = [&](double n_eve, double n_dsp = 1) {
    double best = 1e300;
    for (size_t s = 0; s <= eve_t.size(); ++s) {
      double a = 0, b = 0;
      for (size_t i = 0; i < eve_t.size(); ++i) (i < s ? a : b) += i < s ? eve_t[i] : dsp_t[i];
      best = std::min(best, std::max(a / n_eve, b / n_dsp + (s > 0 && s < eve_t.size() ? 100.0 : 0.0)));
    }
    return 1e6 / best;
  };
  // (then the guide's devices with all their cores: AM5749 2 EVEs and 2 DSPs, AM5746 / AM572x 2 DSPs, AM571x 1 DSP)
  const std::vector<std::pair<std::string, double>> want = {
      {"2xDSP", 2e6 / dsp},      {"2xEVE", 2e6 / eve},          {"2xEVE+1xDSP", pipeline(2)},         {"4xEVE", 4e6 / eve},
      {"4xEVE+1xDSP", pipeline(4)}, {"1xEVE+1xDSP", pipeline(1)}, {"AM5749", pipeline(2, 2)}, {"AM5746/AM572x", 2e6 / dsp}, {"AM571x/AM5706/AM5708", 1e6 / dsp}};
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

// TIDL's conv2dKernelType in the estimate: the digits model with 3 of every 4 convolution weights zeroed. By default
// (its maps are 8x8, below 64x64) every convolution is on the dense kernel and costs what the dense model costs; on
// the sparse kernel (all, by name) a convolution takes its MAC time x
// (f + (1 - f) x density) with the engine's fixed fraction f (tidl.yaml: EVE 0.191, DSP 0.060). Bad choices are errors
// naming the layer and the rule.
TEST(CostModel, TheSparseKernelSkipsZeroWeights) {
  const fs::path dir = test::scratchDir("cost_sparse");
  onnx::ModelProto m;
  {
    std::ifstream in(fs::path(NPUC_SOURCE_DIR) / "models" / "digits" / "digits_cnn.onnx", std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&in));
  }
  int zeroed = 0;
  for (auto& init : *m.mutable_graph()->mutable_initializer()) {
    if (init.dims_size() != 4 || init.data_type() != onnx::TensorProto::FLOAT) continue;
    ASSERT_FALSE(init.raw_data().empty());
    std::string raw = init.raw_data();
    for (size_t i = 0; i < raw.size() / 4; ++i)
      if (i % 4 != 0) std::memset(raw.data() + 4 * i, 0, 4);
    init.set_raw_data(raw);
    ++zeroed;
  }
  ASSERT_EQ(zeroed, 3);
  const auto run = tidlTranslator(m, dir / "sparse_digits.onnx", dir);
  // Conv layers' times (on the EVE, where tidl puts them) by name.
  auto convTimes = [&](const std::string& prefix) {
    std::map<std::string, std::pair<double, double>> t;  // name -> (MACs, time)
    for (const auto& c : csvRows(dir / prefix / (prefix + "_summary.csv")))
      if (c.size() >= 20 && c[0] != "ith" && c[2].rfind("Conv", 0) == 0) t[c[1]] = {std::stod(c[18]), std::stod(c[19])};
    return t;
  };
  const TranslateResult dense = run("dflt", [](TranslateOptions&) {});
  ASSERT_TRUE(dense.ok);
  const auto td = convTimes("dflt");
  ASSERT_EQ(td.size(), 3u);
  for (auto& [name, mt] : td) EXPECT_NEAR(mt.second, 20 + mt.first / (2.74 * 650), 5.1e-4) << name;  // (narrow, dense; the CSV to 3 decimals)
  const TranslateResult all = run("all", [](TranslateOptions& o) { o.conv_kernel_all = 0; });
  ASSERT_TRUE(all.ok);
  const auto ts = convTimes("all");
  // The first layer's weights: [16, 1, 3, 3] (144, of which 36 kept); the others a multiple of 4 too: density 1/4.
  for (auto& [name, mt] : ts) EXPECT_NEAR(mt.second, 20 + mt.first / (2.74 * 650) * (0.191 + 0.809 * 0.25), 5.1e-4) << name;
  EXPECT_LT(all.single_core_us[0].second, dense.single_core_us[0].second);  // the DSP's too
  EXPECT_LT(all.single_core_us[1].second, dense.single_core_us[1].second);
  std::ifstream md(dir / "all" / "all_summary.md");
  const std::string text((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(text.find("Convolution kernels (TIDL's conv2dKernelType; docs/cost-model.md): 3 sparse, 0 dense"), std::string::npos) << text;
  EXPECT_NE(text.find("sparse (weights 25 % nonzero)"), std::string::npos);
  // One layer by name.
  const std::string first = td.begin()->first;
  const TranslateResult one = run("one", [&](TranslateOptions& o) { o.conv_kernels[first] = 0; });
  ASSERT_TRUE(one.ok);
  for (auto& [name, mt] : convTimes("one")) EXPECT_EQ(mt.second, name == first ? ts.at(name).second : td.at(name).second) << name;
  // By index (tidl-import's conv2dKernelType): the list counts the package's layers, and tidl writes none without
  // calibration samples: refused, saying why (tests/e2e/cli_test.sh runs a list through a calibrated tidl-import).
  const size_t layers = csvRows(dir / "one" / "one_summary.csv").size() - 2;  // (header and total)
  auto error = [&](auto&& set) {
    try {
      run("bad", set);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error([&](TranslateOptions& o) { o.conv_kernel_list.assign(layers, 0); }).find("a list by layer counts the package's layers"),
            std::string::npos);
  EXPECT_NE(error([&](TranslateOptions& o) { o.conv_kernels[first] = 2; }).find("2 is not 0 (sparse) or 1 (dense)"), std::string::npos);
  EXPECT_NE(error([&](TranslateOptions& o) { o.conv_kernels["nope"] = 0; }).find("no layer 'nope'"), std::string::npos);
  EXPECT_NE(error([&](TranslateOptions& o) { o.conv_kernels["/classifier/Gemm"] = 1; }).find("is no convolution"), std::string::npos);
  EXPECT_NE(error([&](TranslateOptions& o) {
              o.target = "drpai";
              o.conv_kernel_all = 0;
            }).find("has no sparse kernel"),
            std::string::npos);
}

// TIDL's CMEM (T:L62: "~64MB per core ... must fit"): a package whose core needs more than the target's core_memory_mb
// is refused, naming the layer that brings it past the budget; tidl's 64 MB holds the digits model.
TEST(CostModel, APackageThatDoesNotFitItsCoresMemoryIsRefusedNamingTheLayer) {
  const fs::path dir = test::scratchDir("cost_cmem");
  Tensor x = readNpyFile(fs::path(NPUC_SOURCE_DIR) / "models" / "digits" / "test_x.npy");
  Tensor calib(DType::kF32, {16, 1, 8, 8});
  std::memcpy(calib.raw(), x.raw(), calib.nbytes());
  auto run = [&](const std::string& prefix, const std::string& target) {
    TranslateOptions o;
    o.prefix = prefix;
    o.onnx = fs::path(NPUC_SOURCE_DIR) / "models" / "digits" / "digits_cnn.onnx";
    o.target = target;
    o.out_root = dir;
    o.input_shapes["input"] = {1, 1, 8, 8};
    o.calibration["input"] = {calib};
    return translate(o);
  };
  EXPECT_TRUE(run("fits", "tidl").ok);
  const fs::path small = dir / "tidl-small.yaml";
  std::ofstream(small) << "name: tidl-small\ninherits: tidl\ncore_memory_mb: 0.02\n";  // 20 KiB
  std::string e = "no error";
  try {
    run("too_big", small.string());
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("layer '"), std::string::npos) << e;
  EXPECT_NE(e.find("more than the 0.02 MB target 'tidl-small' gives a core"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(dir / "too_big" / "manifest.json"));
}

// TIDL's layers groups place layers: "Layergroup 1 is dispatched to EVE, and layergroup 2 to DSP" (T:L755). A package
// whose last three layers are group 2 (--layer-group, as layersGroupId) has them timed on the DSP in the summary and
// the total, and its own pipeline's throughput: the slowest group's time per frame plus the hand-over (100 us).
TEST(CostModel, UserLayersGroupsPlaceLayersOnTheirGroupsEngines) {
  const fs::path dir = test::scratchDir("cost_groups");
  Tensor x = readNpyFile(fs::path(NPUC_SOURCE_DIR) / "models" / "digits" / "test_x.npy");
  Tensor calib(DType::kF32, {16, 1, 8, 8});
  std::memcpy(calib.raw(), x.raw(), calib.nbytes());
  auto run = [&](const std::string& prefix, std::map<std::string, int> groups) {
    TranslateOptions o;
    o.prefix = prefix;
    o.onnx = fs::path(NPUC_SOURCE_DIR) / "models" / "digits" / "digits_cnn.onnx";
    o.target = "tidl";
    o.out_root = dir;
    o.input_shapes["input"] = {1, 1, 8, 8};
    o.calibration["input"] = {calib};
    o.layer_groups = std::move(groups);
    return translate(o);
  };
  auto rows = [&](const std::string& prefix) {
    std::map<std::string, std::pair<std::string, double>> r;  // name -> (engine, time)
    for (const auto& c : csvRows(dir / prefix / (prefix + "_summary.csv")))
      if (c.size() >= 20 && c[0] != "ith" && c[0] != "total") r[c[1]] = {c[3], std::stod(c[19])};
    return r;
  };
  const TranslateResult plain = run("plain", {});
  ASSERT_TRUE(plain.ok);
  const auto before = rows("plain");
  ASSERT_EQ(before.at("/features/features.9/GlobalAveragePool").first, "eve");
  const TranslateResult grouped = run("grouped", {{"/features/features.8/MaxPool", 2}});
  ASSERT_TRUE(grouped.ok);
  const auto after = rows("grouped");
  double g1 = 0, g2 = 0, total = 0;
  for (const auto& [name, et] : after) {
    const bool second = name == "/features/features.8/MaxPool" || name == "/features/features.9/GlobalAveragePool" || name == "/classifier/Gemm";
    EXPECT_EQ(et.first, second ? "dsp" : "eve") << name;
    if (!second) {  // (the first group's layers keep their times)
      EXPECT_EQ(et.second, before.at(name).second) << name;
    }
    (second ? g2 : g1) += et.second;
    total += et.second;
  }
  EXPECT_LT(after.at("/features/features.9/GlobalAveragePool").second, before.at("/features/features.9/GlobalAveragePool").second);
  EXPECT_NEAR(grouped.estimated_us, total, 0.01);
  ASSERT_FALSE(grouped.multi_core_roi_s.empty());
  EXPECT_EQ(grouped.multi_core_roi_s.back().first, "layers groups");
  EXPECT_NEAR(grouped.multi_core_roi_s.back().second, 1e6 / (std::max(g1, g2) + 100.0), 0.01 * 1e6 / (std::max(g1, g2) + 100.0));
}

// TIDL's dense kernel takes 1x1 and 3x3 convolutions of stride 1 and dilation 1: on a small plane (below 64x64, where
// the import tool picks dense) a 5x5 convolution and a stride-2 3x3 one stay sparse, a 3x3 stride-1 one is dense;
// asking for the dense kernel where it cannot run is an error naming the layer and the rule.
TEST(CostModel, TheDenseKernelTakesOnlyOneByOneAndThreeByThreeStrideOne) {
  const fs::path dir = test::scratchDir("cost_dense_rule");
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("convs");
  auto io = [](onnx::ValueInfoProto* v, const char* name, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  io(g->add_input(), "x", {1, 4, 32, 32});
  io(g->add_output(), "y", {1, 4, 16, 16});
  auto conv = [&](const char* name, const char* in, const char* out, int64_t k, int64_t stride) {
    onnx::TensorProto* w = g->add_initializer();
    w->set_name(std::string(name) + "_w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {int64_t{4}, int64_t{4}, k, k}) w->add_dims(d);
    for (int64_t i = 0; i < 16 * k * k; ++i) w->add_float_data(0.01f * static_cast<float>(i % 7));
    onnx::NodeProto* n = g->add_node();
    n->set_op_type("Conv");
    n->set_name(name);
    n->add_input(in), n->add_input(w->name()), n->add_output(out);
    auto ints = [&](const char* a, std::vector<int64_t> v) {
      auto* at = n->add_attribute();
      at->set_name(a);
      at->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : v) at->add_ints(x);
    };
    ints("kernel_shape", {k, k});
    ints("strides", {stride, stride});
    ints("pads", {k / 2, k / 2, k / 2, k / 2});
  };
  conv("five", "x", "a", 5, 1);
  conv("three_s2", "a", "b", 3, 2);
  conv("three", "b", "y", 3, 1);
  const auto run = tidlTranslator(m, dir / "convs.onnx", dir);
  ASSERT_TRUE(run("auto", [](TranslateOptions&) {}).ok);
  std::ifstream md(dir / "auto" / "auto_summary.md");
  const std::string text((std::istreambuf_iterator<char>(md)), {});
  for (const char* want : {"five sparse", "three_s2 sparse", "three dense"}) EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  for (const char* layer : {"five", "three_s2"}) {
    std::string e = "no error";
    try {
      run("forced", [&](TranslateOptions& o) { o.conv_kernels[layer] = 1; });
    } catch (const Error& err) {
      e = err.what();
    }
    EXPECT_NE(e.find(std::string("layer '") + layer + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("TIDL's dense kernel takes 1x1 and 3x3 convolutions of stride 1 and dilation 1 only"), std::string::npos) << e;
  }
  EXPECT_TRUE(run("three_dense", [](TranslateOptions& o) { o.conv_kernels["three"] = 1; }).ok);
}

}  // namespace
}  // namespace npuc

namespace npuc {
namespace {

std::string readText(const std::filesystem::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// Issue 47.2 and 47.3: a channel-last export ([1, 12, 16, 3] in, Transpose(0, 3, 1, 2), Conv + Relu,
// Transpose(0, 2, 3, 1), [1, 12, 16, 5] out) translated for drpai without -prepost. The data lists give the tensors'
// channel / width / height as they hold them (NHWC; they said Channel 12, Width 3, Height 16), and the two Transposes,
// which run as layers, have their time in the estimate on the DRP (they said "folded, 0.000"), the total their sum.
TEST(CostModel, ChannelLastBoundariesAreListedAsTheyAreAndTheirTransposesTakeTime) {
  const fs::path dir = test::scratchDir("cost_nhwc");
  TranslateOptions o;
  o.prefix = "nh";
  o.onnx = fs::path(NPUC_SOURCE_DIR) / "tests" / "data" / "prepost" / "bodies" / "nhwc_model.onnx";
  o.target = "drpai";
  o.out_root = dir;
  // drpai takes the boundary Transposes into the Conv (Appendix B): the Conv is the one row, and the whole time.
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  std::vector<std::string> rows;
  for (const auto& c : csvRows(dir / "nh" / "nh_summary.csv"))
    if (c.size() >= 20 && c[0] != "ith") rows.push_back(c[1] + ":" + c[19]);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].substr(0, 5), "conv:");
  EXPECT_EQ(rows[1], ":" + rows[0].substr(5));  // the total row
  // A target that runs them as layers (boundary_transposes: layer) lists and times them.
  const fs::path layer = dir / "drpai-layer.yaml";
  std::ofstream(layer) << "name: drpai-layer\ninherits: drpai\nboundary_transposes: layer\n";
  o.target = layer.string();
  fs::remove_all(dir / "nh");
  r = translate(o);
  ASSERT_TRUE(r.ok);
  auto squeeze = [](std::string s) {
    std::erase_if(s, [](char c) { return c == ' ' || c == '\n'; });
    return s;
  };
  EXPECT_NE(squeeze(readText(dir / "nh" / "nh_data_in_list.txt")).find("Input_node_name:inputAddress:"), std::string::npos);
  EXPECT_NE(squeeze(readText(dir / "nh" / "nh_data_in_list.txt")).find("Channel:3Width:16Height:12"), std::string::npos)
      << readText(dir / "nh" / "nh_data_in_list.txt");
  EXPECT_NE(squeeze(readText(dir / "nh" / "nh_data_out_list.txt")).find("Channel:5Width:16Height:12"), std::string::npos)
      << readText(dir / "nh" / "nh_data_out_list.txt");
  int transposes = 0;
  double sum = 0, total = -1;
  for (const auto& c : csvRows(dir / "nh" / "nh_summary.csv")) {
    if (c.size() < 20 || c[0] == "ith") continue;
    if (c[0] == "total") {
      total = std::stod(c[19]);
      continue;
    }
    sum += std::stod(c[19]);
    EXPECT_NE(c[3], "folded") << c[1];
    if (c[2] != "Transpose") continue;
    ++transposes;
    EXPECT_EQ(c[3], "vector") << c[1];
    EXPECT_GT(std::stod(c[19]), 0.0) << c[1];
    // in / out as the values hold them: the first reads [1, 12, 16, 3] NHWC and writes NCHW, the second the reverse.
    EXPECT_EQ(c[12] + "," + c[13] + "," + c[14], transposes == 1 ? "3,16,12" : "5,16,12") << c[1];
    EXPECT_EQ(c[15] + "," + c[16] + "," + c[17], transposes == 1 ? "3,16,12" : "5,16,12") << c[1];
  }
  EXPECT_EQ(transposes, 2);
  EXPECT_NEAR(total, sum, 0.01);
}

// Mixed precision in the estimate: a layer an int8 package keeps in float32 (--keep-float, or a precision file) is
// timed with its MAC rate divided by the width ratio (float32 over int8: 4); the other layers keep their times and the
// total moves by the difference. A precision file that is not one is refused naming the file, the field and the rule.
TEST(CostModel, LayersKeptInFloatAreTimedAtTheirWidth) {
  const fs::path dir = test::scratchDir("cost_wide");
  const std::string kept = "/features/features.3/Conv";
  auto run = [&](const std::string& prefix, auto&& set) {
    TranslateOptions o;
    o.prefix = prefix;
    o.onnx = fs::path(NPUC_SOURCE_DIR) / "models" / "digits" / "digits_cnn.onnx";
    o.target = "tidl";
    o.out_root = dir;
    set(o);
    return translate(o);
  };
  auto times = [&](const std::string& prefix) {
    std::map<std::string, std::pair<double, double>> t;  // name -> (MACs, time)
    for (const auto& c : csvRows(dir / prefix / (prefix + "_summary.csv")))
      if (c.size() >= 20 && c[0] != "ith" && c[0] != "total") t[c[1]] = {std::stod(c[18]), std::stod(c[19])};
    return t;
  };
  const TranslateResult plain = run("plain", [](TranslateOptions&) {});
  const TranslateResult wide = run("wide", [&](TranslateOptions& o) { o.keep_float = {kept}; });
  ASSERT_TRUE(plain.ok && wide.ok);
  const auto tp = times("plain"), tw = times("wide");
  ASSERT_EQ(tp.size(), tw.size());
  ASSERT_TRUE(tw.count(kept));
  for (auto& [name, mt] : tw) {
    if (name != kept) {
      EXPECT_EQ(mt.second, tp.at(name).second) << name;
      continue;
    }
    // EVE: 20 us + MACs / (2.74 MAC/cycle x 650 MHz) at int8 (narrow: 16 input channels), 4x the MAC time in float32,
    // plus the conversions of its input (16x8x8) and output (32x8x8) at 8 elements per cycle.
    EXPECT_NEAR(tp.at(name).second, 20 + mt.first / (2.74 * 650), 5.1e-4);
    EXPECT_NEAR(mt.second, 20 + 4 * mt.first / (2.74 * 650) + (16 + 32) * 8 * 8 / (8.0 * 650), 5.1e-4);
  }
  EXPECT_NEAR(wide.estimated_us - plain.estimated_us, tw.at(kept).second - tp.at(kept).second, 1e-2);
  std::ifstream md(dir / "wide" / "wide_summary.md");
  std::string text((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(text.find("| eve (float32) |"), std::string::npos);
  EXPECT_NE(text.find("Layers kept wider than int8"), std::string::npos);
  // float16: half the width, the same conversions.
  const TranslateResult half = run("half", [&](TranslateOptions& o) { o.keep_float16 = {kept}; });
  ASSERT_TRUE(half.ok);
  const auto th = times("half");
  EXPECT_NEAR(th.at(kept).second, 20 + 2 * th.at(kept).first / (2.74 * 650) + (16 + 32) * 8 * 8 / (8.0 * 650), 5.1e-4);
  std::ifstream hmd(dir / "half" / "half_summary.md");
  EXPECT_NE(std::string((std::istreambuf_iterator<char>(hmd)), {}).find("| eve (float16) |"), std::string::npos);
  // The same through a precision file.
  std::ofstream(dir / "p.yaml") << "layers:\n  \"" << kept << "\": float32\n";
  const TranslateResult file = run("file", [&](TranslateOptions& o) { o.precision = dir / "p.yaml"; });
  EXPECT_DOUBLE_EQ(file.estimated_us, wide.estimated_us);
  // Two kept layers in a row exchange float32 values: no conversion between them is charged — the first converts only
  // its input (16x8x8), the second only its output: its 32x8x8 input's conversion less than when kept alone.
  const std::string next = "/features/features.6/Conv";
  const TranslateResult two = run("two", [&](TranslateOptions& o) { o.keep_float = {kept, next}; });
  const TranslateResult alone = run("alone", [&](TranslateOptions& o) { o.keep_float = {next}; });
  ASSERT_TRUE(two.ok && alone.ok);
  const auto t2 = times("two");
  EXPECT_NEAR(t2.at(kept).second, 20 + 4 * t2.at(kept).first / (2.74 * 650) + 16 * 8 * 8 / (8.0 * 650), 5.1e-4);
  EXPECT_NEAR(times("alone").at(next).second - t2.at(next).second, 32 * 8 * 8 / (8.0 * 650), 5.1e-4);
  auto refused = [&](const std::string& yaml, const std::string& want) {
    std::ofstream(dir / "bad.yaml") << yaml;
    try {
      run("bad", [&](TranslateOptions& o) { o.precision = dir / "bad.yaml"; });
      ADD_FAILURE() << "accepted: " << yaml;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.yaml"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir / "bad"));
  };
  refused("layers:\n  a: int16\n", "field 'layers.a': 'int16' is not a width");
  refused("layers: [a, b]\n", "field 'layers': a map");
  refused("keep: {a: float32}\n", "a YAML map with 'layers'");
  refused("layers: {}\nextra: 1\n", "field 'extra': unknown");
  refused("layers: {}\nequalize: yes\n", "field 'equalize': 'yes' is not relu or relu6");
  refused("layers: {}\nbias_correction: 2\n", "field 'bias_correction': '2' is not true or false");
  refused("layers: {}\nadaround: maybe\n", "field 'adaround': 'maybe' is not true or false");
  refused("layers: {}\nabsorb_bias: often\n", "field 'absorb_bias': 'often' is not true or false");
  refused("layers: {a: float32\n", "invalid YAML");
}

}  // namespace
}  // namespace npuc
