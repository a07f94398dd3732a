// The binary streams of a package (package.hpp, docs/package-format.md): descriptor streams and the library table,
// written by the writer and read back, every count and offset checked, by the reader.
#include "package/binary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace npuc::package {

namespace {

void put16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void putF32(std::vector<uint8_t>& b, float f) {
  uint32_t v;
  std::memcpy(&v, &f, 4);
  put32(b, v);
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t get32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
float getF32(const uint8_t* p) {
  uint32_t v = get32(p);
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}

}  // namespace

std::vector<uint8_t> encodeDescriptors(const std::vector<Descriptor>& ds, Engine e) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), kDescMagic, 8);
  b.reserve(kDescHeaderSize + ds.size() * kDescriptorSize);
  put32(b, kFormatVersion);
  put32(b, static_cast<uint32_t>(e));
  put32(b, static_cast<uint32_t>(ds.size()));
  put32(b, static_cast<uint32_t>(kDescriptorSize));
  b.resize(kDescHeaderSize, 0);
  for (const Descriptor& d : ds) {
    size_t start = b.size();
    put32(b, d.seq);
    put32(b, d.wait);
    put16(b, static_cast<uint16_t>(d.kind));
    put16(b, d.lib);
    b.push_back(static_cast<uint8_t>(d.act));
    b.push_back(d.n_in);
    b.push_back(d.n_out);
    b.push_back(d.flags);
    putF32(b, d.act_a);
    putF32(b, d.act_b);
    put32(b, d.param_addr);
    put32(b, d.param_size);
    b.resize(start + 64, 0);
    for (size_t k = 0; k < kMaxRefs; ++k) {
      if (k >= size_t(d.n_in) + d.n_out) {  // unused slots are all zero bytes
        b.resize(b.size() + kTensorRefSize, 0);
        continue;
      }
      const TensorRef& r = d.refs[k];
      put32(b, r.addr);
      put32(b, r.bytes);
      b.push_back(static_cast<uint8_t>(onnxCodeOf(r.type)));
      b.push_back(r.rank);
      put16(b, 0);
      for (uint32_t dim : r.dims) put32(b, dim);
    }
  }
  return b;
}

std::vector<uint8_t> encodeLibraries(const std::vector<Library>& libs) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), kCfgMagic, 8);
  put32(b, kFormatVersion);
  put32(b, static_cast<uint32_t>(libs.size()));
  b.resize(32, 0);
  for (const Library& l : libs) {
    size_t start = b.size();
    put16(b, l.id);
    put16(b, l.version);
    put32(b, 0);
    b.resize(start + kLibraryRecordSize, 0);
    std::memcpy(b.data() + start + 8, l.name.data(), std::min<size_t>(l.name.size(), 23));
  }
  return b;
}

namespace detail {

std::vector<Descriptor> decodeDescriptors(const std::vector<uint8_t>& b, Engine want, const std::string& file) {
  if (b.size() < kDescHeaderSize) bad(file, "truncated: {} bytes, the header alone is {}", b.size(), kDescHeaderSize);
  if (std::memcmp(b.data(), kDescMagic, 8) != 0) bad(file, "bad magic (not an npuc descriptor stream)");
  uint32_t version = get32(b.data() + 8), engine = get32(b.data() + 12), count = get32(b.data() + 16),
           rec = get32(b.data() + 20);
  if (version != kFormatVersion) bad(file, "unknown format version {} (this npuc reads version {})", version, kFormatVersion);
  if (engine != static_cast<uint32_t>(want)) bad(file, "engine field is {}, expected {} ({})", engine, static_cast<int>(want), engineName(want));
  if (rec != kDescriptorSize) bad(file, "record size {} (version {} descriptors are {} bytes)", rec, version, kDescriptorSize);
  uint64_t need = kDescHeaderSize + uint64_t(count) * kDescriptorSize;
  if (b.size() != need) bad(file, "size {} bytes does not match {} descriptors ({} bytes expected)", b.size(), count, need);
  std::vector<Descriptor> ds(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* p = b.data() + kDescHeaderSize + size_t(i) * kDescriptorSize;
    Descriptor& d = ds[i];
    d.seq = get32(p);
    d.wait = get32(p + 4);
    d.kind = static_cast<LayerKind>(get16(p + 8));
    d.lib = get16(p + 10);
    d.act = static_cast<Act>(p[12]);
    d.n_in = p[13];
    d.n_out = p[14];
    d.flags = p[15];
    d.act_a = getF32(p + 16);
    d.act_b = getF32(p + 20);
    d.param_addr = get32(p + 24);
    d.param_size = get32(p + 28);
    for (size_t k = 32; k < 64; ++k)
      if (p[k]) bad(file, "descriptor {}: reserved bytes 32..63 must be 0", i);
    for (size_t r = 0; r < kMaxRefs; ++r) {
      const uint8_t* q = p + 64 + r * kTensorRefSize;
      if (r >= size_t(d.n_in) + d.n_out) {
        if (std::any_of(q, q + kTensorRefSize, [](uint8_t c) { return c != 0; }))
          bad(file, "descriptor {}: unused reference {} (it has {} inputs and {} outputs) must be all zero bytes", i, r, d.n_in, d.n_out);
        continue;
      }
      TensorRef& t = d.refs[r];
      t.addr = get32(q);
      t.bytes = get32(q + 4);
      if (!elemTypeValid(q[8])) bad(file, "descriptor {}: reference {}: unknown element type code {}", i, r, q[8]);
      t.type = dtypeFromOnnxCode(q[8]);
      t.rank = q[9];
      if (q[10] || q[11]) bad(file, "descriptor {}: reference {}: reserved bytes must be 0", i, r);
      for (size_t k = 0; k < kMaxRank; ++k) t.dims[k] = get32(q + 12 + 4 * k);
    }
  }
  return ds;
}

std::vector<Library> decodeLibraries(const std::vector<uint8_t>& b, const std::string& file) {
  if (b.size() < 32) bad(file, "truncated: {} bytes, the header alone is 32", b.size());
  if (std::memcmp(b.data(), kCfgMagic, 8) != 0) bad(file, "bad magic (not an npuc library table)");
  uint32_t version = get32(b.data() + 8), count = get32(b.data() + 12);
  if (version != kFormatVersion) bad(file, "unknown format version {} (this npuc reads version {})", version, kFormatVersion);
  if (b.size() != 32 + uint64_t(count) * kLibraryRecordSize)
    bad(file, "size {} bytes does not match {} library records", b.size(), count);
  std::vector<Library> libs(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* p = b.data() + 32 + size_t(i) * kLibraryRecordSize;
    libs[i].id = get16(p);
    libs[i].version = get16(p + 2);
    const char* name = reinterpret_cast<const char*>(p + 8);
    libs[i].name.assign(name, strnlen(name, 24));
    if (libs[i].name.size() == 24) bad(file, "library record {}: name is not NUL-terminated", i);
  }
  return libs;
}

}  // namespace detail

}  // namespace npuc::package
