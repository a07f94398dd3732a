// Layers groups (TIDL's layersGroupId; docs/package-format.md, "Layers groups"): what translate records, what it and
// the package reader refuse, and the pipeline of simulated cores (npuc::Pipeline) giving Runtime::run's bits frame
// by frame — int8-pow2's dynamic quantization included, whose scales travel with the frames.
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "package/package.hpp"
#include "support/error.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <unistd.h>

namespace npuc {
namespace {

namespace fs = std::filesystem;
using Files = std::map<std::string, std::vector<uint8_t>>;
const std::string kResnet = std::string(NPUC_SOURCE_DIR) + "/models/fashion/fashion_resnet.onnx";

TranslateOptions options(const std::string& target, const std::string& folder) {
  TranslateOptions o;
  o.prefix = "fr";
  o.onnx = kResnet;
  o.target = target;
  o.out_root = fs::temp_directory_path() / (folder + std::to_string(::getpid()));
  return o;
}

std::vector<Tensor> frames(int n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<Tensor> out;
  for (int f = 0; f < n; ++f) {
    Tensor x(DType::kF32, Shape{1, 1, 28, 28});
    const float gain = 0.3f + 0.35f * static_cast<float>(f);  // (ranges that move: int8-pow2's scales follow them)
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = gain * u(rng);
    out.push_back(x);
  }
  return out;
}

/// The package's outputs over `xs`, frame after frame on one Runtime, then through a Pipeline: the same bytes.
void expectPipelineIsSequential(const fs::path& dir, const std::vector<Tensor>& xs, size_t stages) {
  Runtime rt(dir);
  Pipeline pl(dir);
  ASSERT_EQ(pl.groups().size(), stages);
  std::vector<std::vector<Tensor>> in;
  for (const Tensor& x : xs) in.push_back({x});
  for (int round = 0; round < 2; ++round) {  // (twice: the second run goes on from the first's state, as rt does)
    const auto got = pl.run(in);
    ASSERT_EQ(got.size(), xs.size());
    for (size_t f = 0; f < xs.size(); ++f) {
      const Tensor want = rt.run({xs[f]}).at(0);
      EXPECT_TRUE(got[f].at(0).sameBits(want)) << "round " << round << ", frame " << f;
    }
  }
  ASSERT_EQ(pl.stageMs().size(), stages);
  for (size_t k = 1; k < stages; ++k) EXPECT_GT(pl.handoffBytes()[k], 0u) << k;
  pl.resetState();
  rt.resetState();
  const auto again = pl.run({{xs[0]}});
  EXPECT_TRUE(again.at(0).at(0).sameBits(rt.run({xs[0]}).at(0)));
}

TEST(LayerGroups, APipelineOfInt8Pow2GroupsIsTheRuntimeFrameByFrame) {
  TranslateOptions o = options("tidl", "npuc_groups_pow2_");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Tensor calib(DType::kF32, Shape{16, 1, 28, 28});
  for (int64_t i = 0; i < calib.numel(); ++i) calib.data<float>()[i] = u(rng);
  o.calibration["input"] = {calib};
  o.auto_layer_groups = true;  // the estimate's cut for 2xEVE+1xDSP / 4xEVE+1xDSP
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  int first = 0, second = 0;
  for (const RuntimeLayer& l : rt.layers()) (l.group == 1 ? first : second) += 1;
  EXPECT_GT(first, 0);
  EXPECT_GT(second, 0);
  expectPipelineIsSequential(r.dir, frames(10, rng), 2);
  TranslateResult again = translate(o);  // the same placement, the same package
  EXPECT_EQ(again.content_hash, r.content_hash);
  fs::remove_all(o.out_root);
}

TEST(LayerGroups, ThreeGroupsByNameOnAFloatPackage) {
  TranslateOptions o = options("generic", "npuc_groups_fp32_");
  {
    TranslateResult plain = translate(o);
    ASSERT_TRUE(plain.ok);
    Runtime rt(plain.dir);
    ASSERT_GE(rt.layers().size(), 6u);
    for (const RuntimeLayer& l : rt.layers()) EXPECT_EQ(l.group, 0);
    o.layer_groups[rt.layers()[3].name] = 2;  // layers 3 .. 4 in group 2, 5 on in group 3
    o.layer_groups[rt.layers()[5].name] = 3;
  }
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Runtime rt(r.dir);
  for (size_t i = 0; i < rt.layers().size(); ++i) EXPECT_EQ(rt.layers()[i].group, i < 3 ? 1 : i < 5 ? 2 : 3) << i;
  std::mt19937 rng(8);
  expectPipelineIsSequential(r.dir, frames(5, rng), 3);

  // The reader: groups on some layers only, out of order, out of range.
  Files f;
  for (auto& e : fs::directory_iterator(r.dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    f[e.path().filename().string()] = std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
  }
  auto refused = [&](const std::function<void(nlohmann::ordered_json&)>& edit, const std::string& fragment) {
    Files g = f;
    auto m = nlohmann::ordered_json::parse(g.at("manifest.json"));
    edit(m);
    std::string s = package::resealManifest(m.dump(1), g);
    g["manifest.json"] = std::vector<uint8_t>(s.begin(), s.end());
    try {
      package::readPackage([&](const std::string& n, uint64_t) -> std::optional<std::vector<uint8_t>> {
        auto it = g.find(n);
        if (it == g.end()) return std::nullopt;
        return it->second;
      }, "pkg");
      ADD_FAILURE() << "accepted; expected: " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  refused([](auto& m) { m["layers"][4]["group"] = 1; }, "group 1 after group 2");
  refused([](auto& m) { m["layers"][2].erase("group"); }, "given to every layer or none");
  refused([](auto& m) { m["layers"][0]["group"] = 17; }, "must be an integer in [1, 16]");
  fs::remove_all(o.out_root);
}

TEST(LayerGroups, TranslateRefusesGroupsThatAreNoPipeline) {
  TranslateOptions base = options("generic", "npuc_groups_bad_");
  size_t n = 0;  // the package's layers
  {
    TranslateResult plain = translate(base);
    ASSERT_TRUE(plain.ok);
    n = Runtime(plain.dir).layers().size();
    fs::remove_all(base.out_root);
  }
  struct Case {
    std::function<void(TranslateOptions&)> set;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {[](TranslateOptions& o) { o.layer_groups["no_such_layer"] = 2; }, "the package has no layer 'no_such_layer'"},
      {[](TranslateOptions& o) { o.layer_group_list = {1, 2}; }, "2 groups listed for the package's"},
      {[n](TranslateOptions& o) { o.layer_group_list.assign(n, 2); o.layer_group_list[3] = 1; }, "in group 1 after layer"},
      {[n](TranslateOptions& o) { o.layer_group_list.assign(n, 0); }, "outside [1, 16]"},
      {[](TranslateOptions& o) { o.auto_layer_groups = true; }, "has no core set of two engines"},
      {[](TranslateOptions& o) { o.auto_layer_groups = true; o.layer_group_list = {1}; }, "not several"},
  };
  for (const Case& c : cases) {
    TranslateOptions o = base;
    c.set(o);
    try {
      translate(o);
      ADD_FAILURE() << "accepted; expected: " << c.fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.fragment), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(o.out_root / o.prefix / "manifest.json")) << c.fragment;  // nothing half-written
  }
  fs::remove_all(base.out_root);
}

}  // namespace
}  // namespace npuc
