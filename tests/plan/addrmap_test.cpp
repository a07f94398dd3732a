// Address map: the DRP-AI manual's §6.5 examples 1 and 2 reproduced exactly, the §6 rules, the §9 overflow.
#include "plan/addrmap.hpp"
#include "support/error.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace npuc;
using namespace npuc::plan;

namespace {

// The sizes behind the manual's examples (a ResNet-50-like model, 640x480 YUY2 in, 1000 fp32 out).
const std::map<std::string, uint64_t> kNeeded = {
    {"data_in", 0x96000}, {"data", 0x206b400}, {"data_out", 4000},      {"work", 0x310000},     {"weight", 0x30cfc40},
    {"drp_config", 0x12fa00}, {"drp_param", 0x150}, {"desc_aimac", 0x40530}, {"desc_drp", 0x1f0}};

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> r;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) r.push_back(l);
  return r;
}

std::vector<std::string> elementLines(const std::string& yaml) {
  std::vector<std::string> r;
  for (auto& l : lines(yaml))
    if (l.rfind("    - {", 0) == 0) r.push_back(l);
  return r;
}

const char* kExample1 = R"(
- 
  name: "all" # Sub-Space name. Name is arbitrary
  # Specify only the starting address
  addr: 0x40_000_000
  # The address and size of each Element-Space are automatically calculated
  lst_elemsp:
    - { name: "data_in" }
    - { name: "data" }
    - { name: "data_out" }
    - { name: "work" }
    - { name: "weight" }
    - { name: "drp_config" }
    - { name: "drp_param" }
    - { name: "desc_aimac" }
    - { name: "desc_drp" }
)";

const char* kExample2 = R"(
- name: "desc"
  addr: 0x10_000_000
  lst_elemsp:
    - { name: "drp_config" }
    - { name: "drp_param" }
    - { name: "desc_aimac" }
    - { name: "desc_drp" }
- name: "param"
  addr: 0x30_000_000
  lst_elemsp:
    - { name: "weight" }
- name: "data"
  addr: 0x70_000_000
  lst_elemsp:
    - { name: "data_in" }
    - { name: "data" }
    - { name: "data_out" }
    - { name: "work" }
)";

AddressMap layout(const char* yaml) {
  auto rules = AddrMapRules::drpai();
  return layoutAddrMap(parseAddrMapDef(yaml, "addrmap_in.yaml", rules), kNeeded, rules, "./output/foo/foo_addrmap_intm.yaml");
}

void expectError(const std::string& yaml, const std::string& what) {
  try {
    layout(yaml.c_str());
    ADD_FAILURE() << "accepted:\n" << yaml;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("addrmap_in.yaml"), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(AddrMap, HexFormat) {
  EXPECT_EQ(hexGrouped(0x40000000), "0x4000_0000");
  EXPECT_EQ(hexGrouped(0x96000), "0x9_6000");
  EXPECT_EQ(hexGrouped(0xfc0), "0xfc0");
  EXPECT_EQ(hexGrouped(0), "0x0");
  EXPECT_EQ(hexGrouped(0x30cfc40), "0x30c_fc40");
}

TEST(AddrMap, ManualExample1) {
  AddressMap m = layout(kExample1);
  EXPECT_EQ(elementLines(addrMapYaml(m)), (std::vector<std::string>{
      "    - { name: data_in,          addr: 0x4000_0000, size:    0x9_6000 } ",
      "    - { name: data,             addr: 0x4009_6000, size:  0x206_b400 } ",
      "    - { name: data_out,         addr: 0x4210_1400, size:       0xfc0 } ",
      "    - { name: work,             addr: 0x4210_23c0, size:   0x31_0000 } ",
      "    - { name: weight,           addr: 0x4241_23c0, size:  0x30c_fc40 } ",
      "    - { name: drp_config,       addr: 0x454e_2000, size:   0x12_fa00 } ",
      "    - { name: drp_param,        addr: 0x4561_1a00, size:       0x150 } ",
      "    - { name: desc_aimac,       addr: 0x4561_1b80, size:    0x4_0530 } ",
      "    - { name: desc_drp,         addr: 0x4565_20c0, size:       0x1f0 } "}));
  EXPECT_EQ(addrMapTxt(m),
            "data_in 40000000 96000\ndata 40096000 206b400\ndata_out 42101400 fc0\nwork 421023c0 310000\n"
            "weight 424123c0 30cfc40\ndrp_config 454e2000 12fa00\ndrp_param 45611a00 150\ndesc_aimac 45611b80 40530\n"
            "desc_drp 456520c0 1f0\n");
  auto l = lines(addrMapYaml(m));
  EXPECT_EQ(l[0], "- ");
  EXPECT_EQ(l[1], "  name: all ");
  EXPECT_EQ(l[2], "  addr: 0x4000_0000 ");
  // Sub-Space size: npuc writes the span of its elements (the manual's example numbers are not a span).
  EXPECT_EQ(l[3], "  size:  0x565_22b0 ");
}

TEST(AddrMap, ManualExample2) {
  AddressMap m = layout(kExample2);
  EXPECT_EQ(addrMapTxt(m),
            "drp_config 10000000 12fa00\ndrp_param 1012fa00 150\ndesc_aimac 1012fb80 40530\ndesc_drp 101700c0 1f0\n"
            "weight 30000000 30cfc40\ndata_in 70000000 96000\ndata 70096000 206b400\ndata_out 72101400 fc0\n"
            "work 721023c0 310000\n");
  EXPECT_EQ(elementLines(addrMapYaml(m))[4], "    - { name: weight,           addr: 0x3000_0000, size:  0x30c_fc40 } ");
}

TEST(AddrMap, UserSizes) {
  auto rules = AddrMapRules::drpai();
  std::string yaml = std::string(kExample1);
  yaml.replace(yaml.find("{ name: \"work\" }"), 16, "{ name: \"work\", size: 0x10 }");
  AddressMap small = layout(yaml.c_str());
  ASSERT_EQ(small.warnings.size(), 1u);
  EXPECT_NE(small.warnings[0].find("smaller than"), std::string::npos);
  EXPECT_EQ(small.find("work")->size, 0x310000u);
  yaml = std::string(kExample1);
  yaml.replace(yaml.find("{ name: \"work\" }"), 16, "{ name: \"work\", size: 0x400_000 }");
  EXPECT_EQ(layout(yaml.c_str()).find("work")->size, 0x400000u);
}

TEST(AddrMap, RulesOfSection6) {
  std::string e1 = kExample1;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = e1;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expectError(with("0x40_000_000", "0x40_000_010"), "64-byte boundary");
  // Issue 47.9: a given Element-Space address on its own §6.4 boundary: 16 bytes for drp_param, desc_aimac, desc_drp.
  const std::string p16 = with("{ name: \"drp_param\" }", "{ name: \"drp_param\", addr: 0x4561_1a10 }");
  EXPECT_EQ(layout(p16.c_str()).find("drp_param")->addr, 0x45611a10u);
  expectError(with("{ name: \"drp_param\" }", "{ name: \"drp_param\", addr: 0x4561_1a08 }"),
              "Element-Space 'drp_param' addr 0x4561_1a08 must be aligned on a 16-byte boundary (§6.4)");
  expectError(with("{ name: \"weight\" }", "{ name: \"weight\", addr: 0x4241_2410 }"), "must be aligned on a 64-byte boundary (§6.4)");
  expectError(with("{ name: \"weight\" }", "{ name: \"wieght\" }"), "unknown Element-Space 'wieght'");
  expectError(with("    - { name: \"desc_drp\" }\n", ""), "'desc_drp' is missing");
  expectError(with("{ name: \"data_in\" }", "{ name: \"data_in\", addr: 0x50_000_000 }"), "must match the Sub-Space addr");
  expectError(with("{ name: \"data\" }\n    - { name: \"data_out\" }", "{ name: \"data_out\" }\n    - { name: \"data\" }"),
              "the order must be");
  std::string ex2 = kExample2;
  std::string swapped = ex2;
  swapped.replace(swapped.find("0x70_000_000"), 12, "0x20_000_000");
  expectError(swapped, "order of their addresses");
  std::string split = ex2;
  split.replace(split.find("    - { name: \"desc_drp\" }\n"), 27, "");
  split.replace(split.find("    - { name: \"weight\" }"), 24, "    - { name: \"weight\" }\n    - { name: \"desc_drp\" }");
  expectError(split, "must be in the same Sub-Space");
  expectError("name: x\n", "list of Sub-Spaces");
  expectError("- {name: a, addr: 0xZZ, lst_elemsp: []}\n", "not an integer");
  expectError("- [unclosed\n", "invalid YAML");
}

TEST(AddrMap, AddressAreaOverflow) {
  std::string yaml = kExample1;
  yaml.replace(yaml.find("0x40_000_000"), 12, "0xFF_000_000");
  try {
    layout(yaml.c_str());
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("Address area overflow.\nPlease check ./output/foo/foo_addrmap_intm.yaml file. Ensure that all addr in "
                       "lst_elemsp are smaller than 0x0_FFFF_FFFF"),
              std::string::npos)
        << msg;
  }
}

TEST(AddrMap, DefaultMapHasEveryElementAligned) {
  auto rules = AddrMapRules::drpai();
  AddressMap m = layoutAddrMap(defaultAddrMapDef(), kNeeded, rules, "x");
  for (auto& n : elementSpaceNames()) {
    const Element* e = m.find(n);
    ASSERT_NE(e, nullptr) << n;
    EXPECT_EQ(e->addr % 64, 0u) << n;
    EXPECT_GE(e->size, kNeeded.at(n)) << n;
  }
}

// ---------------------------------------------------------------------------------------------------------
#include "plan/memory.hpp"

#include <random>

TEST(MemoryPlan, NoTwoLiveBuffersOverlapAndReuseBeatsSequential) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<plan::Buffer> b;
    int n = 5 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      int first = static_cast<int>(rng() % 40);
      b.push_back({"b" + std::to_string(i), 1 + rng() % 100000, first, first + static_cast<int>(rng() % 8)});
    }
    MemoryPlan seq = planSequential(b), re = planReuse(b);
    EXPECT_EQ(seq.lower_bound, re.lower_bound);
    EXPECT_LE(re.total, seq.total);
    EXPECT_GE(re.total, re.lower_bound);
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_EQ(re.offsets[i] % 64, 0u);
      for (size_t j = i + 1; j < b.size(); ++j) {
        bool live_together = !(b[i].last < b[j].first || b[j].last < b[i].first);
        bool overlap = re.offsets[i] < re.offsets[j] + b[j].size && re.offsets[j] < re.offsets[i] + b[i].size;
        EXPECT_FALSE(live_together && overlap) << "buffers " << i << " and " << j;
      }
    }
  }
}

TEST(MemoryPlan, ChainReusesTwoSlots) {
  std::vector<plan::Buffer> chain;
  for (int i = 0; i < 10; ++i) chain.push_back({"c", 1024, i, i + 1});
  MemoryPlan p = planReuse(chain);
  EXPECT_EQ(p.lower_bound, 2048u);
  EXPECT_EQ(p.total, 2048u);
  EXPECT_EQ(planSequential(chain).total, 10240u);
}
