// The package reader treats files as untrusted: every malformed variant of a valid package gives one clear
// error naming the file and the rule, never a crash.
#include "npuc/model.hpp"
#include "package/package.hpp"
#include "support/error.hpp"
#include "support/sha256.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <map>

#include <unistd.h>

using namespace npuc;
namespace fs = std::filesystem;
using Files = std::map<std::string, std::vector<uint8_t>>;
using json = nlohmann::ordered_json;

namespace {

const Files& validPackage() {
  static Files files = [] {
    // One folder per process: ctest runs the cases of this file in parallel processes.
    fs::path root = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("reader-" + std::to_string(::getpid()));
    fs::remove_all(root);
    TranslateOptions o;
    o.prefix = "digits";
    o.onnx = std::string(NPUC_SOURCE_DIR) + "/models/digits/digits_cnn.onnx";
    o.target = "generic";
    o.out_root = root;
    TranslateResult r = translate(o);
    Files f;
    for (auto& e : fs::directory_iterator(r.dir)) {
      std::ifstream in(e.path(), std::ios::binary);
      f[e.path().filename().string()] = std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
    }
    fs::remove_all(root);
    return f;
  }();
  return files;
}

package::Package read(const Files& f) {
  return package::readPackage([&](const std::string& n) -> std::optional<std::vector<uint8_t>> {
    auto it = f.find(n);
    if (it == f.end()) return std::nullopt;
    return it->second;
  }, "pkg");
}

json manifest(const Files& f) { return json::parse(f.at("manifest.json")); }
void setManifest(Files& f, const json& j) {
  std::string s = j.dump(1);
  f["manifest.json"] = std::vector<uint8_t>(s.begin(), s.end());
}

/// Recomputes sizes, hashes and the content hash so that a changed file reaches the deeper checks.
void rehash(Files& f) {
  json j = manifest(f);
  Sha256 all;
  for (auto& e : j["files"]) {
    const auto& b = f.at(e["name"].get<std::string>());
    std::string h = sha256Hex(b.data(), b.size());
    e["size"] = b.size();
    e["sha256"] = h;
    std::string name = e["name"];
    all.update(name.data(), name.size());
    all.update("\0", 1);
    all.update(h.data(), h.size());
    all.update("\n", 1);
  }
  j["content_hash"] = "sha256:" + all.hexDigest();
  setManifest(f, j);
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
  EXPECT_EQ(p.numerics, "fp32");
  EXPECT_EQ(p.mac.size() + p.vec.size(), p.layers.size());
  EXPECT_EQ(p.content_hash.substr(0, 7), "sha256:");
  // Encoding what was read gives the same bytes.
  EXPECT_EQ(package::encodeDescriptors(p.mac, package::Engine::kMac), validPackage().at("aimac_desc.bin"));
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
  j["version"] = 2;
  setManifest(g, j);
  expectError(g, "unknown format version 2");
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
  expectError(m, "not a plain file name");
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

}  // namespace
