// The package reader: manifest.json, the binary streams and every file checked against the manifest's sizes and
// hashes, then validatePackage (validate.cpp). Every file is untrusted input.
#include "package/manifest.hpp"
#include "package/package.hpp"

#include "support/error.hpp"
#include "support/file.hpp"
#include "support/sha256.hpp"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

namespace npuc::package {

namespace fs = std::filesystem;

namespace {

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
      if (q[10] > static_cast<uint8_t>(RefLayout::kChannelLast))
        bad(file, "descriptor {}: reference {}: unknown layout code {} (0 row-major, 1 channel-last)", i, r, q[10]);
      t.layout = static_cast<RefLayout>(q[10]);
      if (q[11]) bad(file, "descriptor {}: reference {}: reserved byte 11 must be 0", i, r);
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

/// Typed access to untrusted JSON with errors naming the field.
struct Field {
  const json& j;
  std::string path;
  const std::string& file;

  Field at(const std::string& key) const {
    if (!j.is_object()) bad(file, "field '{}' must be an object", path);
    auto it = j.find(key);
    if (it == j.end()) bad(file, "missing field '{}{}'", path.empty() ? "" : path + ".", key);
    return {*it, path.empty() ? key : path + "." + key, file};
  }
  Field at(size_t i) const { return {j.at(i), fmt::format("{}[{}]", path, i), file}; }
  size_t size() const {
    if (!j.is_array()) bad(file, "field '{}' must be an array", path);
    return j.size();
  }
  std::string str() const {
    if (!j.is_string()) bad(file, "field '{}' must be a string", path);
    return j.get<std::string>();
  }
  uint64_t u(uint64_t max = std::numeric_limits<uint32_t>::max()) const {
    if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
      bad(file, "field '{}' must be a non-negative integer", path);
    uint64_t v = j.get<uint64_t>();
    if (v > max) bad(file, "field '{}' = {} is out of range (at most {})", path, v, max);
    return v;
  }
};

double floatFromJson(const Field& f) {
  if (f.j.is_number()) return f.j.get<double>();
  if (f.j.is_string()) {
    const std::string v = f.j.get<std::string>();
    if (v == "inf") return std::numeric_limits<double>::infinity();
    if (v == "-inf") return -std::numeric_limits<double>::infinity();
    if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  bad(f.file, "field '{}' must be a number (or \"inf\", \"-inf\", \"nan\")", f.path);
}

int64_t intFromJson(const Field& f) {
  if (!f.j.is_number_integer()) bad(f.file, "field '{}' must be an integer", f.path);
  return f.j.get<int64_t>();
}

CustomLayer customFromJson(const Field& f) {
  CustomLayer c;
  c.op = f.at("op").str();
  c.domain = f.at("domain").str();
  c.library = f.at("library").str();
  c.sha256 = f.at("sha256").str();
  if (c.op.empty() || c.library.empty()) bad(f.file, "field '{}': op and library must not be empty", f.path);
  if (c.sha256.size() != 64 || c.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
    bad(f.file, "field '{}.sha256' must be 64 lowercase hex digits", f.path);
  c.abi_version = static_cast<uint32_t>(f.at("abi_version").u());
  Field ps = f.at("params");
  if (ps.size() > 256) bad(f.file, "field '{}' lists {} parameters (at most 256)", ps.path, ps.size());
  for (size_t k = 0; k < ps.size(); ++k) {
    Field q = ps.at(k);
    CustomParam p;
    p.name = q.at("name").str();
    const std::string tn = q.at("type").str();
    for (int32_t t = 1; t <= 7; ++t)
      if (tn == kCustomParamTypes[t - 1]) p.type = t;
    if (p.type < 1) bad(f.file, "field '{}.type': '{}' is not bool, int, float, string, ints, floats or tensor", q.path, tn);
    if (!q.at("present").j.is_boolean()) bad(f.file, "field '{}.present' must be true or false", q.path);
    p.present = q.at("present").j.get<bool>();
    if (p.present) {
      switch (p.type) {
        case 1:
          p.i = intFromJson(q.at("value"));
          if (p.i != 0 && p.i != 1) bad(f.file, "field '{}.value' of a bool parameter must be 0 or 1", q.path);
          break;
        case 2: p.i = intFromJson(q.at("value")); break;
        case 3: p.f = floatFromJson(q.at("value")); break;
        case 4: p.s = q.at("value").str(); break;
        case 5: {
          Field v = q.at("value");
          for (size_t e = 0; e < v.size(); ++e) p.ints.push_back(intFromJson(v.at(e)));
          break;
        }
        case 6: {
          Field v = q.at("value");
          for (size_t e = 0; e < v.size(); ++e) p.floats.push_back(floatFromJson(v.at(e)));
          break;
        }
        default: p.input = static_cast<int32_t>(q.at("input").u(kMaxRefs));
      }
    }
    c.params.push_back(std::move(p));
  }
  return c;
}

ElemType elemFromName(const std::string& s, const std::string& file, const std::string& field) {
  for (uint8_t c = 0; c < 17; ++c)
    if (elemTypeValid(c) && s == elemName(dtypeFromOnnxCode(c))) return dtypeFromOnnxCode(c);
  bad(file, "field '{}': unknown dtype '{}'", field, s);
}

TensorRef refFromJson(const Field& f) {
  TensorRef r;
  r.type = elemFromName(f.at("dtype").str(), f.file, f.path + ".dtype");
  Field shape = f.at("shape");
  if (shape.size() > kMaxRank) bad(f.file, "field '{}.shape' has rank {} (at most {})", f.path, shape.size(), kMaxRank);
  r.rank = static_cast<uint8_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) r.dims[i] = static_cast<uint32_t>(shape.at(i).u());
  r.addr = static_cast<uint32_t>(f.at("addr").u());
  r.bytes = static_cast<uint32_t>(f.at("bytes").u());
  return r;
}

/// The manifest's identity and numerics: format, version, producer, prefix, target, numerics and its pow2 options.
void header(const Field& root, Package& p, const std::string& mfile) {
  if (root.at("format").str() != "npuc-package") bad(mfile, "field 'format' must be \"npuc-package\"");
  p.version = static_cast<uint32_t>(root.at("version").u());
  if (p.version != kFormatVersion)
    bad(mfile, "unknown format version {} (this npuc reads version {}{})", p.version, kFormatVersion,
        p.version < kFormatVersion ? "; the package was written by an older npuc: translate the model again" : "");
  p.producer = root.at("producer").str();
  p.prefix = root.at("prefix").str();
  p.target = root.at("target").str();
  std::string numerics = root.at("numerics").str();
  auto num = numericsFromName(numerics);
  if (!num || !numericsTraits(*num).packages)
    bad(mfile, "field 'numerics' = '{}': this npuc reads the packages of {}", numerics, familiesWithPackages());
  p.numerics = *num;
  if (!numericsTraits(p.numerics).pow2_codes && root.j.contains("pow2"))
    bad(mfile, "field 'pow2' belongs to int8-pow2 packages (numerics is '{}')", numerics);
  if (numericsTraits(p.numerics).pow2_codes) {  // (validatePackage checks the values)
    Field q = root.at("pow2");
    kernels::pow2::Options o;
    o.round_add = static_cast<int>(q.at("quant_round_add").u(100));
    if (!q.at("dynamic").j.is_boolean()) bad(mfile, "field 'pow2.dynamic' must be true or false");
    o.dynamic = q.at("dynamic").j.get<bool>();
    o.history1 = static_cast<int>(q.at("quant_history_param1").u(100));
    o.history2 = static_cast<int>(q.at("quant_history_param2").u(100));
    o.margin = static_cast<int>(q.at("quant_margin").u(1000));
    o.boot_frames = static_cast<int>(q.at("boot_frames").u(1000000));
    p.pow2 = Pow2Info{o, static_cast<uint32_t>(q.at("slots").u(1u << 20))};
  }
  if (root.j.contains("shape_ranges")) p.ranges = shapeRangesFromManifest(root.j["shape_ranges"], mfile);  // (validatePackage checks it)
}

/// The address map and the package's inputs and outputs.
void tensors(const Field& root, Package& p, const std::string& mfile) {
  Field am = root.at("address_map");
  for (size_t i = 0; i < am.size(); ++i) {
    Field s = am.at(i);
    SubSpace ss{s.at("name").str(), s.at("addr").u(), s.at("size").u(), {}};
    Field els = s.at("elements");
    for (size_t k = 0; k < els.size(); ++k) {
      Field e = els.at(k);
      ss.elements.push_back({e.at("name").str(), e.at("addr").u(), e.at("size").u()});
    }
    p.address_map.push_back(std::move(ss));
  }
  for (const char* io : {"inputs", "outputs"}) {
    Field list = root.at(io);
    for (size_t i = 0; i < list.size(); ++i) {
      IoTensor t{list.at(i).at("name").str(), refFromJson(list.at(i)), {}};
      if (io[0] == 'i' && list.at(i).j.contains("image")) {
        Field im = list.at(i).at("image");
        t.image.format = im.at("format").str();
        t.image.height = static_cast<uint32_t>(im.at("height").u());
        t.image.width = static_cast<uint32_t>(im.at("width").u());
        std::string order = im.at("order").str();
        if (order != "HWC" && order != "CHW") bad(mfile, "field '{}.order' must be \"HWC\" or \"CHW\"", im.path);
        t.image.chw = order == "CHW";
      }
      if (io[0] == 'o' && list.at(i).j.contains("extent")) t.extent = refFromJson(list.at(i).at("extent"));
      (io[0] == 'i' ? p.inputs : p.outputs).push_back(std::move(t));
    }
  }
}

/// One entry of the manifest's "layers" (its "kind" is checked against its descriptor by layerRecords).
LayerInfo layerFromJson(const Field& l, const std::string& mfile) {
  LayerInfo li;
  li.seq = static_cast<uint32_t>(l.at("seq").u());
  std::string eng = l.at("engine").str();
  if (eng != "mac" && eng != "vector") bad(mfile, "field '{}.engine' must be \"mac\" or \"vector\"", l.path);
  li.engine = eng == "mac" ? Engine::kMac : Engine::kVector;
  li.index = static_cast<uint32_t>(l.at("index").u());
  li.name = l.at("name").str();
  li.opexp = l.at("opexp").str();
  Field nodes = l.at("onnx_nodes");
  for (size_t k = 0; k < nodes.size(); ++k) li.onnx_nodes.push_back(nodes.at(k).str());
  li.output = l.at("output").str();
  if (l.j.contains("outputs")) {  // (a custom layer with several outputs: every output's name, "output" first)
    Field outs = l.at("outputs");
    if (!outs.j.is_array() || outs.size() < 2 || outs.size() > size_t(kMaxRefs) - 1)
      bad(mfile, "field '{}.outputs' must list 2 to {} output names (absent for a layer of one output)", l.path, kMaxRefs - 1);
    if (outs.at(0).str() != li.output)
      bad(mfile, "field '{}.outputs': its first name '{}' must be the layer's output '{}'", l.path, outs.at(0).str(), li.output);
    for (size_t k = 1; k < outs.size(); ++k) li.extra_outputs.push_back(outs.at(k).str());
  }
  if (l.j.contains("quantization")) {  // (int8 layers of int8-affine packages)
    Field q = l.at("quantization");
    if (!q.at("scale").j.is_number() || !(q.at("scale").j.get<double>() > 0) || !std::isfinite(q.at("scale").j.get<double>()))
      bad(mfile, "field '{}.scale' must be a finite positive number", q.path);
    li.scale = q.at("scale").j.get<double>();
    if (!q.at("zero_point").j.is_number_integer() || q.at("zero_point").j.get<int64_t>() < -128 || q.at("zero_point").j.get<int64_t>() > 127)
      bad(mfile, "field '{}.zero_point' must be an integer in [-128, 127]", q.path);
    li.zero_point = static_cast<int32_t>(q.at("zero_point").j.get<int64_t>());
    li.float_value = q.at("of").str();
  }
  if (l.j.contains("codes_of")) {  // (int8-pow2 codes: checked by layerRecords)
    if (l.j.contains("quantization")) bad(mfile, "field '{}': a layer has 'quantization' or 'codes_of', not both", l.path);
    li.float_value = l.at("codes_of").str();
    if (li.float_value.empty()) bad(mfile, "field '{}.codes_of' must name a tensor", l.path);
  }
  if (l.j.contains("custom")) li.custom = customFromJson(l.at("custom"));
  if (l.j.contains("group")) {
    const uint64_t g = l.at("group").u();
    if (g < 1 || g > kMaxGroups) bad(mfile, "field '{}.group' must be an integer in [1, {}]", l.path, kMaxGroups);
    li.group = static_cast<uint32_t>(g);
  }
  return li;
}

/// What the manifest says of each layer, against its validated descriptor: its kind, and the codes it writes.
void layerRecords(const Package& p, const std::vector<std::string>& kinds, const std::string& mfile) {
  for (size_t i = 0; i < kinds.size(); ++i) {
    const LayerInfo& l = p.layers[i];
    const Descriptor& d = (l.engine == Engine::kMac ? p.mac : p.vec)[l.index];
    if (kinds[i] != layerKindName(d.kind))
      bad(mfile, "field 'layers[{}].kind' = '{}', but its descriptor is a '{}' layer", i, kinds[i], layerKindName(d.kind));
    if (l.scale == 0 && !l.float_value.empty() &&
        (!numericsTraits(p.numerics).pow2_codes || (d.out(0).type != ElemType::kI8 && d.out(0).type != ElemType::kU8)))
      bad(mfile, "field 'layers[{}].codes_of': only int8-pow2 layers writing codes name what they stand for this way", i);
    if (l.scale > 0 && d.out(0).type != ElemType::kI8)
      bad(mfile, "field 'layers[{}].quantization': the layer writes {}, not int8 codes", i, elemName(d.out(0).type));
    int e = 0;
    const NumericsTraits& nt = numericsTraits(p.numerics);
    if (l.scale > 0 && nt.radix_codes && (l.zero_point != 0 || std::frexp(l.scale, &e) != 0.5))
      bad(mfile, "field 'layers[{}].quantization': an int8-radix package's codes are symmetric at a power-of-two scale, got "
          "scale {} and zero point {}", i, l.scale, l.zero_point);
    if (l.scale > 0 && nt.symmetric_codes && l.zero_point != 0)
      bad(mfile, "field 'layers[{}].quantization': an {} package's codes are symmetric, got zero point {}", i,
          numericsName(p.numerics), l.zero_point);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Reader.

Package readPackage(const fs::path& dir) {
  const std::string mfile = (dir / "manifest.json").string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(ErrorCode::kIo, "{}: not a package directory", dir.string());
  if (!fs::exists(mfile, ec)) fail(ErrorCode::kIo, "{}: no manifest.json (not an npuc package)", dir.string());
  return readPackage([&](const std::string& name, uint64_t max_bytes) -> std::optional<std::vector<uint8_t>> {
    fs::path path = dir / name;
    std::error_code e;
    if (!fs::exists(path, e)) return std::nullopt;
    // Refused from its size before it is read: a file larger than the manifest declares (or than any manifest).
    if (name == "manifest.json") return readFileBytes(path, max_bytes, "a package manifest");
    uintmax_t size = fs::file_size(path, e);
    if (!e && size > max_bytes)
      bad(path.string(), "size {} bytes, the manifest declares {} (truncated or replaced file; nothing was read)", size, max_bytes);
    return readFileBytes(path);
  }, dir.string());
}

Package readPackage(const FileSource& source, const std::string& where) {
  const fs::path dir(where);
  const std::string mfile = (dir / "manifest.json").string();
  auto manifest = source("manifest.json", kMaxManifestBytes);
  if (!manifest) fail(ErrorCode::kIo, "{}: no manifest.json (not an npuc package)", where);
  json j = parseManifest(*manifest, mfile);
  Field root{j, "", mfile};
  Package p;
  try {
    header(root, p, mfile);
    tensors(root, p, mfile);
    // Files: sizes and hashes first, then decode.
    std::map<std::string, std::vector<uint8_t>> data;
    std::vector<std::pair<std::string, std::string>> hashes;
    Field files = root.at("files");
    for (size_t i = 0; i < files.size(); ++i) {
      Field f = files.at(i);
      std::string name = f.at("name").str();
      if (std::string why = whyNotPlainName(name); !why.empty()) bad(mfile, "field 'files[{}].name' = '{}' {}", i, name, why);
      if (name == "manifest.json" || data.count(name)) bad(mfile, "field 'files[{}].name': '{}' is listed twice", i, name);
      // No package file can exceed the 32-bit address space (plus headers).
      uint64_t size = f.at("size").u((uint64_t(1) << 32) + 4096);
      std::string want = f.at("sha256").str();
      fs::path path = dir / name;
      auto file_bytes = source(name, size);
      if (!file_bytes) fail(ErrorCode::kIo, "{}: missing (listed in manifest.json)", path.string());
      std::vector<uint8_t> bytes = std::move(*file_bytes);
      if (bytes.size() != size)
        bad(path.string(), "size {} bytes, the manifest declares {} (truncated or replaced file)", bytes.size(), size);
      std::string got = sha256Hex(bytes.data(), bytes.size());
      if (got != want) bad(path.string(), "SHA-256 {} does not match the manifest's {} (corrupted file)", got, want);
      hashes.emplace_back(name, got);
      data[name] = std::move(bytes);
    }
    p.content_hash = root.at("content_hash").str();
    if (p.content_hash != contentHash(hashes, manifestDigest(j)))
      bad(mfile, "field 'content_hash' does not match the files and the manifest (a file or a manifest field was changed)");
    auto byName = [&](const std::string& name) -> std::pair<std::string, std::vector<uint8_t>*> {
      auto it = data.find(name);
      if (it == data.end()) bad(mfile, "'{}' is not listed in 'files'", name);
      return {(dir / name).string(), &it->second};
    };
    auto file = [&](const std::string& key) { return byName(root.at(key).str()); };
    Field streams = root.at("streams");
    for (Engine e : {Engine::kMac, Engine::kVector}) {
      Field s = streams.at(engineName(e));
      auto [path, bytes] = byName(s.at("file").str());
      auto ds = decodeDescriptors(*bytes, e, path);
      if (ds.size() != s.at("count").u()) bad(mfile, "field 'streams.{}.count' does not match {}", engineName(e), path);
      (e == Engine::kMac ? p.mac : p.vec) = std::move(ds);
    }
    p.weights = std::move(*file("weights_file").second);
    p.params = std::move(*file("params_file").second);
    {
      auto [path, bytes] = file("config_file");
      p.libraries = decodeLibraries(*bytes, path);
    }
    Field layers = root.at("layers");
    std::vector<std::string> kinds;
    for (size_t i = 0; i < layers.size(); ++i) {
      Field l = layers.at(i);
      p.layers.push_back(layerFromJson(l, mfile));
      // The kind is stated for readers of the manifest; it must be the descriptor's (checked once decoded).
      kinds.push_back(l.at("kind").str());
    }
    validatePackage(p, where);
    layerRecords(p, kinds, mfile);
  } catch (const json::exception& e) {
    bad(mfile, "malformed manifest: {}", e.what());
  }
  return p;
}

}  // namespace npuc::package
