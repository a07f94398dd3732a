// The package reader treats files as untrusted: every malformed variant of a valid package gives one clear
// error naming the file and the rule, never a crash.
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "kernels/layers.hpp"
#include "package/package.hpp"
#include "support/error.hpp"
#include "support/sha256.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

using namespace npuc;
namespace fs = std::filesystem;
using Files = std::map<std::string, std::vector<uint8_t>>;
using json = nlohmann::ordered_json;

namespace {

/// The generic package of a model (relative to the source tree), its files by name.
Files packageOf(const std::string& prefix, const std::string& model,
                const std::map<std::string, std::vector<std::pair<int64_t, int64_t>>>& ranges = {}) {
  // One folder per process: ctest runs the cases of this file in parallel processes.
  fs::path root = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("reader-" + std::to_string(::getpid()));
  fs::remove_all(root);
  TranslateOptions o;
  o.prefix = prefix;
  o.onnx = std::string(NPUC_SOURCE_DIR) + "/" + model;
  o.target = "generic";
  o.out_root = root;
  o.input_shape_ranges = ranges;
  TranslateResult r = translate(o);
  Files f;
  for (auto& e : fs::directory_iterator(r.dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    f[e.path().filename().string()] = std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }
  fs::remove_all(root);
  return f;
}

const Files& validPackage() {
  static Files files = packageOf("digits", "models/digits/digits_cnn.onnx");
  return files;
}

package::Package read(const Files& f) {
  return package::readPackage([&](const std::string& n, uint64_t) -> std::optional<std::vector<uint8_t>> {
    auto it = f.find(n);
    if (it == f.end()) return std::nullopt;
    return it->second;
  }, "pkg");
}

json manifest(const Files& f) { return json::parse(f.at("manifest.json")); }
/// Replaces the manifest; `seal` recomputes its content hash (when it can), so that the change reaches the checks
/// behind the hash.
void setManifest(Files& f, const json& j, bool seal = true) {
  std::string s = j.dump(1);
  f["manifest.json"] = std::vector<uint8_t>(s.begin(), s.end());
  if (!seal) return;
  try {
    s = package::resealManifest(s, f);
    f["manifest.json"] = std::vector<uint8_t>(s.begin(), s.end());
  } catch (const Error&) {
  }
}

/// Recomputes sizes, hashes and the content hash so that a changed file reaches the deeper checks.
void rehash(Files& f) {
  const auto& m = f.at("manifest.json");
  std::string s = package::resealManifest(std::string(m.begin(), m.end()), f);
  f["manifest.json"] = std::vector<uint8_t>(s.begin(), s.end());
}

void expectError(const Files& f, const std::string& fragment) {
  try {
    read(f);
    FAIL() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

void put32(std::vector<uint8_t>& b, size_t off, uint32_t v) { std::memcpy(b.data() + off, &v, 4); }
uint32_t get32(const std::vector<uint8_t>& b, size_t off) {
  uint32_t v;
  std::memcpy(&v, b.data() + off, 4);
  return v;
}
constexpr size_t kRec = package::kDescHeaderSize;  // first record

TEST(PackageReader, ValidPackageReads) {
  package::Package p = read(validPackage());
  EXPECT_EQ(p.numerics, Numerics::kFp32);
  EXPECT_EQ(p.mac.size() + p.vec.size(), p.layers.size());
  EXPECT_EQ(p.content_hash.substr(0, 7), "sha256:");
  // Encoding what was read gives the same bytes.
  EXPECT_EQ(package::encodeDescriptors(p.mac, package::Engine::kMac), validPackage().at("aimac_desc.bin"));
}

// A package serving shape ranges (package/shape_ranges.hpp): its table is untrusted input like the rest.
TEST(PackageReader, ShapeRangesTableIsChecked) {
  const Files good = packageOf("ranges", "tests/data/ranges/ranges_net.onnx", {{"x", {{1, 1}, {3, 3}, {24, 40}, {20, 36}}}});
  ASSERT_TRUE(read(good).ranges.has_value());
  ASSERT_EQ(manifest(good)["shape_ranges"]["functions"][0]["values"].size(), 17u);
  auto broken = [&](const std::function<void(json&)>& change, const std::string& says) {
    Files f = good;
    json m = manifest(f);
    change(m["shape_ranges"]);
    setManifest(f, m);
    expectError(f, says);
  };
  broken([](json& r) { r["functions"][0]["values"][16] = 41; }, "shape_ranges: dims[0]: size 41 outside 1..40 (the package's own dimension)");
  broken([](json& r) { r["functions"][0]["values"].erase(0); }, "functions[0]: 16 values for the 17 sizes of 24~40");
  broken([](json& r) { r["dims"][0][0] = 9999; }, "dims[0]: no descriptor of seq 9999");
  broken([](json& r) { r["dims"][0][3] = 99; }, "dims[0]: function 99");
  broken([](json& r) { r["dims"][1] = r["dims"][0]; }, "dims[1]: listed twice");
  broken([](json& r) { r["dims"][0] = json::array({0, 0, 2}); }, "'shape_ranges.dims[0]' must be [seq, reference, dimension, function]");
  broken([](json& r) { r["symbols"][0]["value"] = "nope"; }, "'nope' is neither a package input nor a dynamic AIPP layer's output");
  broken([](json& r) { r["symbols"][0]["hi"] = 10; }, "symbols[0]: range 24~10");
  broken([](json& r) { r["symbols"][1] = r["symbols"][0]; }, "symbols[1]: x[2] is ranged twice");
  broken([](json& r) { r["io"][0][0] = "middle"; }, "must be [\"input\" or \"output\", index, dimension, function]");
  broken([](json& r) { r["functions"] = 5; }, "field 'shape_ranges.functions' must be a list");
  broken([](json& r) { r["symbols"][0]["also"] = json::array({json::array({"x", 3})}); }, "symbols[1]: x[3] is ranged twice");
  broken([](json& r) { r["symbols"][0]["also"] = json::array({json::array({"nope", 2})}); }, "'nope' is neither a package input");
  broken([](json& r) { r["symbols"][0]["also"] = json::array({"x"}); }, "'shape_ranges.symbols[0].also[0]' must be [tensor, dimension]");
}

TEST(PackageReader, TruncatedFile) {
  Files f = validPackage();
  f["aimac_desc.bin"].resize(100);
  expectError(f, "truncated or replaced");
  rehash(f);
  expectError(f, "does not match");
}

TEST(PackageReader, CorruptedBytes) {
  Files f = validPackage();
  f["digits_weight.dat"][10] ^= 1;
  expectError(f, "SHA-256");
}

TEST(PackageReader, BadMagic) {
  Files f = validPackage();
  f["drp_desc.bin"][0] = 'X';
  rehash(f);
  expectError(f, "bad magic");
}

TEST(PackageReader, UnknownVersion) {
  Files f = validPackage();
  put32(f["aimac_desc.bin"], 8, 7);
  rehash(f);
  expectError(f, "unknown format version 7");
  Files g = validPackage();
  json j = manifest(g);
  j["version"] = 3;
  setManifest(g, j);
  expectError(g, "unknown format version 3");
  j["version"] = 1;  // packages of format 1 (before the manifest was hashed) are not read: translate again
  setManifest(g, j);
  expectError(g, "written by an older npuc: translate the model again");
}

TEST(PackageReader, DescriptorAddressingOutsideTheMap) {
  Files f = validPackage();
  // Output reference of the first MAC descriptor (after its n_in inputs) moved to address 0x10.
  auto& b = f["aimac_desc.bin"];
  uint8_t n_in = b[kRec + 13];
  put32(b, kRec + 64 + n_in * package::kTensorRefSize, 0x10);
  rehash(f);
  expectError(f, "outside every element space");
}

TEST(PackageReader, MoreOutputsThanTheKindWrites) {
  Files f = validPackage();
  auto& b = f["aimac_desc.bin"];  // the first MAC descriptor (a conv: one output) given a second, its first's copy
  const size_t n_in = b[kRec + 13], out = kRec + 64 + n_in * package::kTensorRefSize;
  std::copy_n(b.begin() + static_cast<std::ptrdiff_t>(out), package::kTensorRefSize, b.begin() + static_cast<std::ptrdiff_t>(out + package::kTensorRefSize));
  b[kRec + 14] = 2;
  rehash(f);
  expectError(f, "this kind writes 1..1 outputs");
}

TEST(PackageReader, WriteIntoTheWeightSpace) {
  Files f = validPackage();
  auto& b = f["aimac_desc.bin"];
  uint32_t w_addr = get32(b, kRec + 64 + package::kTensorRefSize);  // input 1 = weights
  uint8_t n_in = b[kRec + 13];
  put32(b, kRec + 64 + n_in * package::kTensorRefSize, w_addr);
  rehash(f);
  expectError(f, "which it may not write");
}

TEST(PackageReader, OverlappingSpaces) {
  Files f = validPackage();
  json j = manifest(f);
  auto& els = j["address_map"][0]["elements"];
  els[1]["addr"] = els[0]["addr"].get<uint64_t>();  // data on top of data_in
  setManifest(f, j);
  expectError(f, "overlap");
}

TEST(PackageReader, WeightSectionShorterThanDeclared) {
  Files f = validPackage();
  f["digits_weight.dat"].resize(f["digits_weight.dat"].size() / 2);
  expectError(f, "truncated or replaced");
  rehash(f);
  expectError(f, "beyond");
}

TEST(PackageReader, ManifestProblems) {
  Files f = validPackage();
  f["manifest.json"] = {'{', '"'};
  expectError(f, "not valid JSON");
  Files g = validPackage();
  json j = manifest(g);
  j.erase("numerics");
  setManifest(g, j);
  expectError(g, "missing field 'numerics'");
  Files h = validPackage();
  json k = manifest(h);
  k["inputs"][0]["shape"] = "1x1x8x8";
  setManifest(h, k);
  expectError(h, "must be an array");
  Files m = validPackage();
  json n = manifest(m);
  n["files"][0]["name"] = "../etc/passwd";
  setManifest(m, n);
  expectError(m, "'../etc/passwd' contains a path separator");
  Files missing = validPackage();
  missing.erase("drp_param.bin");
  expectError(missing, "missing");
}

TEST(PackageReader, BadDescriptorFields) {
  auto mutate = [](size_t off, uint32_t v, const char* fragment, bool word16 = false) {
    Files f = validPackage();
    auto& b = f["aimac_desc.bin"];
    if (word16) {
      uint16_t h = static_cast<uint16_t>(v);
      std::memcpy(b.data() + off, &h, 2);
    } else {
      put32(b, off, v);
    }
    rehash(f);
    expectError(f, fragment);
  };
  mutate(kRec + 8, 99, "unknown layer kind 99", true);     // kind
  mutate(kRec + 28, 8, "parameter block of 8 bytes");     // param_size
  mutate(kRec + 0, 5, "is not after the previous");       // seq
  mutate(kRec + 0, 500, "out of range or repeated");      // seq
  mutate(kRec + 64 + 4, 12, "the reference says 12");     // bytes of input 0
  mutate(kRec + 64 + 12, 9, "the reference says 256");   // dims[0] of x no longer matches its bytes
  Files f = validPackage();
  put32(f["drp_param.bin"], 4, 5);  // the first conv's kh parameter no longer matches its weights
  rehash(f);
  expectError(f, "do not match");
}

TEST(PackageReader, DynamicLayersAreChecked) {
  // nonzero -> transpose -> gather_nd (tests/data/dynamic): the transpose and the gather_nd carry the dynamic flag
  const Files valid = packageOf("nzg", "tests/data/dynamic/nonzero_gather.onnx");
  const package::Package p = read(valid);
  ASSERT_EQ(p.outputs.size(), 2u);
  EXPECT_TRUE(p.outputs[0].extent && p.outputs[1].extent);
  size_t nonzero = SIZE_MAX, transpose = SIZE_MAX;
  for (size_t i = 0; i < p.vec.size(); ++i) {
    if (p.vec[i].kind == package::LayerKind::kNonZero) nonzero = i;
    if (p.vec[i].kind == package::LayerKind::kTranspose) transpose = i;
  }
  ASSERT_NE(nonzero, SIZE_MAX);
  ASSERT_NE(transpose, SIZE_MAX);
  EXPECT_EQ(p.vec[transpose].flags & package::kFlagDynamic, package::kFlagDynamic);
  EXPECT_EQ(p.vec[transpose].n_in, 2);  // x and its extent
  auto flags = [&](size_t i, uint8_t v, const char* fragment) {
    Files f = valid;
    f["drp_desc.bin"][kRec + i * package::kDescriptorSize + 15] = v;
    rehash(f);
    expectError(f, fragment);
  };
  flags(nonzero, package::kFlagDynamic, "does not compute on dynamic tensors");
  flags(transpose, 0, "no layer writes it with its extent");  // (its output is a dynamic package output)
  // an extent of the wrong rank: the transpose's input extent int64 [2] said to be [3] (and 24 bytes)
  Files f = valid;
  const size_t ext = kRec + transpose * package::kDescriptorSize + 64 + package::kTensorRefSize;
  put32(f["drp_desc.bin"], ext + 12, 3);
  put32(f["drp_desc.bin"], ext + 4, 24);
  rehash(f);
  expectError(f, "not int64 [2]");
  // shape ranges over a package with dynamic layers (their static operands' dims are weights a specialization would
  // leave stale): refused, whatever the table says
  Files ranged = valid;
  json m = manifest(ranged);
  m["shape_ranges"] = {{"symbols", json::array({{{"value", "x"}, {"dim", 2}, {"lo", 2}, {"hi", 5}}})},
                       {"functions", json::array({{{"symbol", 0}, {"values", json::array({2, 3, 4, 5})}}})},
                       {"dims", json::array()}, {"io", json::array({json::array({"input", 0, 2, 0})})}};
  setManifest(ranged, m);
  expectError(ranged, "computes on dynamic tensors; one package does not serve both");
}

TEST(PackageReader, ReviewRules) {
  // A reference not aligned to its elements.
  {
    Files f = validPackage();
    auto& b = f["aimac_desc.bin"];
    put32(b, kRec + 64, get32(b, kRec + 64) + 2);
    rehash(f);
    expectError(f, "not aligned");
  }
  // An output overlapping its own input (second MAC descriptor: both in 'data').
  {
    Files f = validPackage();
    auto& b = f["aimac_desc.bin"];
    size_t r1 = kRec + package::kDescriptorSize;
    uint8_t n_in = b[r1 + 13];
    put32(b, r1 + 64 + n_in * package::kTensorRefSize, get32(b, r1 + 64));
    rehash(f);
    expectError(f, "overlaps input 0");
  }
  // An activation on a data-movement layer (the digits model has none: the vector engine's global pooling, its
  // kind changed to copy).
  {
    Files f = validPackage();
    package::Package p = read(f);
    size_t gap = SIZE_MAX;
    for (size_t i = 0; i < p.vec.size(); ++i)
      if (p.vec[i].kind == package::LayerKind::kGlobalAvgPool) gap = i;
    ASSERT_NE(gap, SIZE_MAX);
    auto& b = f["drp_desc.bin"];
    size_t r = kRec + gap * package::kDescriptorSize;
    uint16_t copy = static_cast<uint16_t>(package::LayerKind::kCopy);
    std::memcpy(b.data() + r + 8, &copy, 2);  // kind (the activation is checked before the shapes)
    b[r + 12] = 1;
    rehash(f);
    expectError(f, "data-movement layers have no activation");
  }
  // Reserved bytes.
  {
    Files f = validPackage();
    f["aimac_desc.bin"][kRec + 40] = 7;
    rehash(f);
    expectError(f, "reserved bytes 32..63 must be 0");
  }
  // Two tensors of the interface with one name.
  {
    Files f = validPackage();
    json j = manifest(f);
    j["outputs"][0]["name"] = j["inputs"][0]["name"];
    setManifest(f, j);
    expectError(f, "used by two inputs/outputs");
  }
}

// The findings of the bad-input campaign (issue 22): each of these was accepted before.
TEST(PackageReader, TheManifestIsCoveredByTheContentHash) {
  // Only outputs[0].addr moved into the data region: simulate used to run it and answer differently.
  {
    Files f = validPackage();
    json j = manifest(f);
    j["outputs"][0]["addr"] = j["address_map"][0]["elements"][1]["addr"];
    setManifest(f, j, /*seal=*/false);
    expectError(f, "'content_hash' does not match the files and the manifest");
  }
  // No outputs at all: refused by the hash, and by the validator when re-sealed.
  {
    Files f = validPackage();
    json j = manifest(f);
    j["outputs"] = json::array();
    setManifest(f, j, false);
    expectError(f, "does not match the files and the manifest");
    setManifest(f, j, true);
    expectError(f, "the package has no outputs");
  }
  // A sealed output whose last bytes no descriptor writes (its 40 bytes moved up by 8 in the 64-byte data_out).
  {
    Files f = validPackage();
    json j = manifest(f);
    ASSERT_EQ(j["outputs"][0]["bytes"].get<uint64_t>(), 40u);
    j["outputs"][0]["addr"] = j["outputs"][0]["addr"].get<uint64_t>() + 8;
    setManifest(f, j);
    expectError(f, "written by no descriptor");
  }
}

TEST(PackageReader, ValidatesEveryManifestFieldTheRuntimeReads) {
  auto changed = [](const std::function<void(json&)>& edit) {
    Files f = validPackage();
    json j = manifest(f);
    edit(j);
    setManifest(f, j);
    return f;
  };
  expectError(changed([](json& j) { j["target"] = "../../etc"; }), "target '../../etc' contains a path separator");
  expectError(changed([](json& j) { j["prefix"] = ".."; }), "prefix '..' is not a name");
  expectError(changed([](json& j) { j["layers"][0]["kind"] = "softmax"; }), "field 'layers[0].kind' = 'softmax', but its descriptor is a 'conv' layer");
  expectError(changed([](json& j) { j["layers"][0].erase("kind"); }), "missing field 'layers[0].kind'");
  expectError(changed([](json& j) { j["layers"][1]["output"] = ""; }), "manifest layer 1: empty name or output");
  expectError(changed([](json& j) { j["files"].push_back(j["files"][0]); }), "is listed twice");
}

TEST(PackageReader, UnusedReferenceSlotsMustBeZero) {
  Files f = validPackage();
  package::Package p = read(f);
  size_t used = size_t(p.mac[0].n_in) + p.mac[0].n_out;
  ASSERT_LT(used, size_t(package::kMaxRefs));
  // The element type byte of the first unused slot (address and size stay 0, which the old check looked at).
  f["aimac_desc.bin"][kRec + 64 + used * package::kTensorRefSize + 8] = 1;
  rehash(f);
  expectError(f, "unused reference " + std::to_string(used) + " (it has " + std::to_string(p.mac[0].n_in) + " inputs");
}

TEST(PackageReader, DeeplyNestedManifestIsRefusedWithoutRecursion) {
  Files f = validPackage();
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  f["manifest.json"] = std::vector<uint8_t>(deep.begin(), deep.end());
  expectError(f, "nesting deeper than 16 levels at byte 16");
  // Nesting inside a string is text, not nesting.
  json j = manifest(validPackage());
  j["producer"] = std::string(1000, '[');
  Files g = validPackage();
  setManifest(g, j);
  EXPECT_NO_THROW(read(g));
}

TEST(PackageReader, AnOversizedFileIsRefusedBeforeItIsRead) {
  // A 3 GiB sparse weight file in a package folder: refused from its size, in no time and without the memory.
  fs::path dir = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("oversized-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (auto& [name, bytes] : validPackage()) {
    std::ofstream out(dir / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  fs::resize_file(dir / "digits_weight.dat", uint64_t(3) << 30);
  auto t0 = std::chrono::steady_clock::now();
  try {
    package::readPackage(dir);
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size 3221225472 bytes, the manifest declares"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was read"), std::string::npos) << e.what();
  }
  // Generous: reading 3 GiB takes seconds; a refusal from the size takes microseconds.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  fs::remove_all(dir);
}

// docs/package-format.md shows the layer kinds and the element-wise op codes as layer_kinds.def and
// elementwise_ops.def define them (NPUC_UPDATE_DOCS=1 rewrites the section from the tables).
TEST(LayerKinds, TheDocumentedTableIsTheDefinition) {
  const fs::path doc = fs::path(NPUC_SOURCE_DIR) / "docs" / "package-format.md";
  std::ifstream in(doc);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::string begin = "<!-- layer kinds: generated from src/package/layer_kinds.def and src/kernels/elementwise_ops.def -->\n";
  const std::string end = "<!-- end of the generated layer kinds -->";
  size_t b = text.find(begin), e = text.find(end);
  ASSERT_NE(b, std::string::npos) << doc << " lacks the marker " << begin;
  ASSERT_NE(e, std::string::npos) << doc << " lacks the marker " << end;
  std::string want = package::layerKindsMarkdown();
  if (std::getenv("NPUC_UPDATE_DOCS")) {
    text = text.substr(0, b + begin.size()) + want + text.substr(e);
    std::ofstream(doc, std::ios::binary | std::ios::trunc) << text;
    return;
  }
  EXPECT_EQ(text.substr(b + begin.size(), e - b - begin.size()), want) << "run the test with NPUC_UPDATE_DOCS=1";
}

TEST(LayerKinds, EveryKindHasOneRowAndTheRowsAreConsistent) {
  std::set<std::string> names;
  for (const package::LayerKindInfo& k : package::layerKinds()) {
    EXPECT_EQ(package::layerKindInfo(k.kind), &k);
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_LE(k.min_inputs, k.max_inputs) << k.name;
    EXPECT_GE(k.min_inputs, 1) << k.name;
    EXPECT_LT(k.max_inputs, package::kMaxRefs) << k.name;  // one reference stays for the output
    EXPECT_TRUE(package::layerAllowedOn(k.kind, package::layerEngine(k.kind))) << k.name;
  }
  EXPECT_EQ(package::layerKindInfo(static_cast<package::LayerKind>(99)), nullptr);
  EXPECT_EQ(package::unaryOpNames().size(), static_cast<size_t>(kernels::UnaryOp::kCount));
  for (size_t i = 0; i < package::unaryOpNames().size(); ++i)  // the wire code is the kernel's op
    EXPECT_EQ(kernels::unaryOpFromName(package::unaryOpNames()[i].c_str()), static_cast<kernels::UnaryOp>(i));
}

TEST(PackageReader, CrossEngineReadWithoutWait) {
  Files f = validPackage();
  package::Package p = read(f);
  // The vector engine's global pooling feeds the MAC gemm (through the Flatten, an alias): the gemm must wait.
  auto& b = f["aimac_desc.bin"];
  bool cleared = false;
  for (size_t i = 0; i < p.mac.size(); ++i)
    if (p.mac[i].wait != package::kNoWait) {
      put32(b, kRec + i * package::kDescriptorSize + 4, package::kNoWait);
      cleared = true;
    }
  ASSERT_TRUE(cleared) << "the sample package should have a cross-engine wait";
  rehash(f);
  expectError(f, "without waiting");
}

// Control layers (docs/package-format.md): a Loop whose body holds an If. Their regions must nest inside the
// program and each other, the header must count its moves, every move must read and write where it may, and a loop
// that runs another number of steps than its scan output holds stops the run.
TEST(PackageReader, ControlLayers) {
  static const Files nested = packageOf("nested", "tests/data/control_flow/nested.onnx");
  const package::Package p = read(nested);
  const package::Descriptor *loop = nullptr, *branch = nullptr;
  for (const auto& d : p.vec) {
    if (d.kind == package::LayerKind::kLoop) loop = &d;
    if (d.kind == package::LayerKind::kIf) branch = &d;
  }
  ASSERT_TRUE(loop && branch);
  const uint64_t params = p.element("drp_param")->addr;
  // Word k of a control layer's parameter block set to v, the package resealed: the error holds `fragment`.
  auto word = [&](const package::Descriptor& d, size_t k, uint32_t v, const char* fragment) {
    Files f = nested;
    put32(f["drp_param.bin"], d.param_addr - params + 4 * k, v);
    rehash(f);
    expectError(f, fragment);
  };
  const uint32_t n = static_cast<uint32_t>(p.layers.size());
  word(*loop, 0, n, "run past the end of the program");
  const uint32_t then_len = package::paramWords(p, *branch)[0];  // the loop's region made to end inside the If's
  word(*loop, 0, branch->seq - loop->seq + then_len, "past the end of the region it lies in");
  word(*branch, 2, 7, "the header says 7 moves");
  word(*loop, 1, 2, "flags trip count 2");
  word(*loop, package::kLoopWordIteration, 0, "the iteration number at 0x0");
  const size_t move = package::controlHeaderWords(package::LayerKind::kLoop);  // the loop's first move
  word(*loop, move + 0, 5, "phase 5");
  word(*loop, move + 4, p.element("weight")->addr, "which it may not write");
  const size_t second = move + package::kMoveWords;  // (the carried value after each step: data to data)
  word(*loop, second + 4, package::controlMove(package::LayerKind::kLoop, package::paramWords(p, *loop), 1).src, "overlap");
  word(*loop, move + 6, 1u << 30, "is not inside the element spaces");
  word(*loop, move + 9, 4, "a move before the first step has steps 0");
  // The trip count (a weight) made 2: the package reads, and its run stops at the end of the loop.
  Files f = nested;
  auto& w = f["nested_weight.dat"];
  const uint64_t m_at = loop->in(0).addr - p.element("weight")->addr;
  ASSERT_EQ(w[m_at], 3);
  w[m_at] = 2;
  rehash(f);
  const fs::path dir = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("loop2-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (auto& [name, bytes] : f) std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                                                     static_cast<std::streamsize>(bytes.size()));
  Runtime rt(dir);
  std::vector<Tensor> in = {Tensor::fromVector<float>({3, 4}, std::vector<float>(12, 1.0f)), Tensor::scalar<float>(2.0f)};
  try {
    rt.run(in);
    ADD_FAILURE() << "a loop of 2 steps filled a scan output of 3";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ran 2 steps; its scan output holds 3"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace

TEST(PackageWriter, TheManifestIsWhatItsDumpWouldBe) {
  // Dumped once, content_hash spliced in and the digest taken over a compacted copy: the file must be exactly the
  // dump of what it parses to, whatever the names hold (quotes, backslashes, control characters, UTF-8, spaces).
  package::Package p = read(validPackage());
  p.layers[0].name = "a \"quoted\" \\ name\n with\ttabs, \x01 and caf\xc3\xa9 : { [ ,";
  p.layers[0].onnx_nodes.clear();
  p.layers[1].opexp = "  spaced  out  ";
  fs::path dir = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("writer-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  package::writePackage(p, dir);
  std::ifstream in(dir / "manifest.json", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  json j = json::parse(text);
  EXPECT_EQ(text, j.dump(1) + "\n");
  EXPECT_EQ(j["layers"][0]["name"], p.layers[0].name);
  EXPECT_EQ(package::readPackage(dir).content_hash, p.content_hash);
  fs::remove_all(dir);
}
