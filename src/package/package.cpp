// The package format (package.hpp, docs/package-format.md): the layer kinds' table, the binary encodings and the
// writer. The reader is read.cpp; the checks of what it reads, validate.cpp.
#include "package/package.hpp"

#include "package/manifest.hpp"

#include "support/error.hpp"
#include "support/file.hpp"
#include "support/sha256.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

namespace npuc::package {

namespace fs = std::filesystem;

bool isPackageType(ElemType t) {
  switch (t) {
    case DType::kF32: case DType::kF16: case DType::kU8: case DType::kI8: case DType::kU16: case DType::kI16:
    case DType::kI32: case DType::kI64: case DType::kU32: case DType::kU64: case DType::kBool: case DType::kF64: return true;
    default: return false;
  }
}

size_t elemSize(ElemType t) { return isPackageType(t) ? dtypeSize(t) : 0; }

std::string_view elemName(ElemType t) { return dtypeName(t); }

bool elemTypeValid(uint8_t code) { return isPackageType(dtypeFromOnnxCode(code)); }

const char* engineName(Engine e) { return e == Engine::kMac ? "mac" : "vector"; }

const std::vector<LayerKindInfo>& layerKinds() {
  static const std::vector<LayerKindInfo> k = {
#define NPUC_LAYER_KIND(E, code, name, engine, in_min, in_max, out_max, words, per_rank, cls, in_doc, param_doc) \
  {LayerKind::E, name, EngineClass::engine, in_min, in_max, out_max, words, per_rank, KindClass::cls, in_doc, param_doc},
#include "package/layer_kinds.def"
#undef NPUC_LAYER_KIND
  };
  return k;
}

const LayerKindInfo* layerKindInfo(LayerKind k) {
  static const std::vector<const LayerKindInfo*> by_code = [] {
    std::vector<const LayerKindInfo*> v;
    for (const LayerKindInfo& i : layerKinds()) {
      size_t c = static_cast<size_t>(i.kind);
      if (v.size() <= c) v.resize(c + 1, nullptr);
      v[c] = &i;
    }
    return v;
  }();
  size_t c = static_cast<size_t>(k);
  return c < by_code.size() ? by_code[c] : nullptr;
}

const char* layerKindName(LayerKind k) {
  const LayerKindInfo* i = layerKindInfo(k);
  return i ? i->name : nullptr;
}

Engine layerEngine(LayerKind k) {
  const LayerKindInfo* i = layerKindInfo(k);
  return i && i->engine == EngineClass::Vector ? Engine::kVector : Engine::kMac;
}

bool layerAllowedOn(LayerKind k, Engine e) {
  const LayerKindInfo* i = layerKindInfo(k);
  if (!i) return false;
  return i->engine == EngineClass::Either || (i->engine == EngineClass::Mac) == (e == Engine::kMac);
}

namespace {
/// The doc column of a unary op's parameters: "alpha, beta" as the ONNX attributes they come from, or "—".
std::string unaryParamsDoc(const char* alpha, const char* beta) {
  if (!*alpha) return "—";
  return *beta ? fmt::format("{}, {}", alpha, beta) : std::string(alpha);
}
}  // namespace

Pow2Form pow2Form(Numerics numerics, const Descriptor& d) {
  if (!numericsTraits(numerics).pow2_codes) return Pow2Form::kNone;
  if (d.kind == LayerKind::kQuantize || d.kind == LayerKind::kDequantize) return Pow2Form::kTable;
  const ElemType x = d.in(0).type;
  if (x != ElemType::kI8 && x != ElemType::kU8) return Pow2Form::kNone;
  switch (d.kind) {
    case LayerKind::kMaxPool:
    case LayerKind::kGlobalMaxPool: return Pow2Form::kCodes;
    case LayerKind::kConv:
    case LayerKind::kConvTranspose:
    case LayerKind::kGemm:
    case LayerKind::kResize:  // (an interpolating one; a nearest resize of codes moves them, without a table)
    case LayerKind::kConcat:  // (with its table last: a concat of codes without one moves them, as max pooling does)
      return d.n_in >= 2 && d.in(d.n_in - 1).type == ElemType::kI32 ? Pow2Form::kTable : Pow2Form::kNone;
    case LayerKind::kBinary:
    case LayerKind::kAvgPool:
    case LayerKind::kSoftmax:
    case LayerKind::kGlobalAvgPool: return Pow2Form::kTable;
    default: return Pow2Form::kNone;
  }
}

std::string layerKindsMarkdown() {
  std::string md = "| code | kind | engine | outputs | inputs | parameter words |\n|---|---|---|---|---|---|\n";
  for (const LayerKindInfo& k : layerKinds()) {
    const char* engine = k.engine == EngineClass::Mac ? "MAC" : k.engine == EngineClass::Vector ? "vector" : "MAC or vector";
    const std::string outs = k.max_outputs == 1 ? "1" : fmt::format("1–{}", k.max_outputs);
    md += fmt::format("| {} | `{}` | {} | {} | {} | {} |\n", static_cast<int>(k.kind), k.name, engine, outs, k.inputs_doc, k.params_doc);
  }
  md += "\nOperations of `unary` layers (word 0), with what `alpha` and `beta` (words 1 and 2) are:\n\n| code | op | alpha, beta |\n|---|---|---|\n";
  int code = 0;
#define NPUC_UNARY_OP(E, name, alpha, beta) \
  md += fmt::format("| {} | {} | {} |\n", code++, name, unaryParamsDoc(alpha, beta));
#include "kernels/elementwise_ops.def"
#undef NPUC_UNARY_OP
  md += "\nOperations of `binary` layers (word 0):\n\n| code | op |\n|---|---|\n";
  code = 0;
#define NPUC_BINARY_OP(E, name) md += fmt::format("| {} | {} |\n", code++, name);
#include "kernels/elementwise_ops.def"
#undef NPUC_BINARY_OP
  md += "\nOperations of `reduce` layers (word 0):\n\n| code | op |\n|---|---|\n";
  code = 0;
#define NPUC_REDUCE_OP(E, name) md += fmt::format("| {} | {} |\n", code++, name);
#include "kernels/elementwise_ops.def"
#undef NPUC_REDUCE_OP
  md += "\nOperations of `typed_binary` layers (word 0); a predicate writes bool:\n\n| code | op | result |\n|---|---|---|\n";
  code = 0;
#define NPUC_TYPED_BINARY_OP(E, name, pred) md += fmt::format("| {} | {} | {} |\n", code++, name, pred ? "bool" : "the operands' type");
#include "kernels/elementwise_ops.def"
#undef NPUC_TYPED_BINARY_OP
  md += "\nOperations of `typed_unary` layers (word 0):\n\n| code | op | result |\n|---|---|---|\n";
  code = 0;
#define NPUC_TYPED_UNARY_OP(E, name, pred) md += fmt::format("| {} | {} | {} |\n", code++, name, pred ? "bool" : "x's type");
#include "kernels/elementwise_ops.def"
#undef NPUC_TYPED_UNARY_OP
  return md;
}

uint64_t TensorRef::numel() const {
  uint64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

std::vector<int64_t> channelLastToLayer(size_t rank) {
  std::vector<int64_t> p{0, static_cast<int64_t>(rank) - 1};
  for (size_t i = 1; i + 1 < rank; ++i) p.push_back(static_cast<int64_t>(i));
  return p;
}

std::vector<int64_t> layerToChannelLast(size_t rank) {
  std::vector<int64_t> p{0};
  for (size_t i = 2; i < rank; ++i) p.push_back(static_cast<int64_t>(i));
  p.push_back(1);
  return p;
}

bool layerTakesDynamic(LayerKind k) {
  switch (k) {
    case LayerKind::kTranspose: case LayerKind::kGatherNd: case LayerKind::kGather: case LayerKind::kTopK:
    case LayerKind::kConcat: case LayerKind::kTile: case LayerKind::kUnary: case LayerKind::kBinary:
    case LayerKind::kCast: case LayerKind::kTypedUnary: case LayerKind::kTypedBinary: case LayerKind::kReshape:
    case LayerKind::kSlice: case LayerKind::kReduce: case LayerKind::kNonMaxSuppression:
      return true;
    default:
      return false;
  }
}

Descriptor dataView(const Descriptor& d) {
  if (!(d.flags & kFlagDynamic)) return d;
  Descriptor v = d;
  v.flags = static_cast<uint8_t>(d.flags & ~kFlagDynamic);
  v.n_in = static_cast<uint8_t>(d.n_in / 2);
  v.n_out = static_cast<uint8_t>(d.n_out / 2);
  v.refs = {};
  for (int i = 0; i < v.n_in; ++i) v.refs[static_cast<size_t>(i)] = d.in(i);
  for (int j = 0; j < v.n_out; ++j) v.refs[static_cast<size_t>(v.n_in + j)] = d.out(j);
  return v;
}

std::vector<int64_t> storedDims(const TensorRef& r) {
  std::vector<int64_t> d(r.dims.begin(), r.dims.begin() + r.rank);
  if (r.layout != RefLayout::kChannelLast || d.size() < 3) return d;
  std::vector<int64_t> s;
  for (int64_t a : layerToChannelLast(d.size())) s.push_back(d[static_cast<size_t>(a)]);
  return s;
}

const Element* Package::element(const std::string& name) const {
  for (auto& s : address_map)
    for (auto& e : s.elements)
      if (e.name == name) return &e;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------------------
// Binary encoding.

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
      b.push_back(static_cast<uint8_t>(r.layout));
      b.push_back(0);
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

std::string contentHash(const std::vector<std::pair<std::string, std::string>>& files, const std::string& manifest_sha256) {
  Sha256 h;
  auto line = [&](const std::string& name, const std::string& hash) {
    h.update(name.data(), name.size());
    h.update("\0", 1);
    h.update(hash.data(), hash.size());
    h.update("\n", 1);
  };
  for (auto& [name, hash] : files) line(name, hash);
  line("manifest.json", manifest_sha256);
  return "sha256:" + h.hexDigest();
}

namespace {

// --- manifest ------------------------------------------------------------------------------------------------

json refJson(const std::string& name, const TensorRef& r) {
  json j;
  j["name"] = name;
  j["dtype"] = elemName(r.type);
  j["shape"] = json::array();
  for (int i = 0; i < r.rank; ++i) j["shape"].push_back(r.dims[static_cast<size_t>(i)]);
  j["addr"] = r.addr;
  j["bytes"] = r.bytes;
  return j;
}

/// Where a linear scan of JSON text stands: inside a string (quotes and escapes tracked) or not.
struct JsonScan {
  bool in_str = false, esc = false;
  /// Takes the next character; true when it is structure (outside every string, and not the quote opening one).
  bool structural(char c) {
    if (in_str) {
      if (esc) esc = false;
      else if (c == '\\') esc = true;
      else if (c == '"') in_str = false;
      return false;
    }
    if (c == '"') in_str = true;
    return !in_str;
  }
};

/// The compact form of a dump: whitespace outside strings removed (a dump's strings hold no raw control
/// characters, and its only other whitespace is indentation and the space after ':'), which is what dump(-1) writes.
std::string compactJson(const std::string& dumped) {
  std::string out;
  out.reserve(dumped.size());
  JsonScan scan;
  for (char c : dumped) {
    if (scan.structural(c) && (c == ' ' || c == '\n')) continue;
    out += c;
  }
  return out;
}

}  // namespace

json parseManifest(const std::vector<uint8_t>& b, const std::string& mfile) {
  int depth = 0;
  JsonScan scan;
  for (size_t i = 0; i < b.size(); ++i) {
    const char c = static_cast<char>(b[i]);
    if (!scan.structural(c)) continue;
    if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        bad(mfile, "nesting deeper than {} levels at byte {} (a manifest needs 4; this is not an npuc manifest)", kMaxJsonDepth, i);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  try {
    return json::parse(b.begin(), b.end());
  } catch (const json::exception& e) {
    bad(mfile, "not valid JSON: {}", e.what());
  }
}

std::string dumpJson(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

std::string manifestDigest(const json& j) {
  if (j.is_object() && j.contains("content_hash")) {
    json without = j;
    without.erase("content_hash");
    return manifestDigest(without);
  }
  std::string s = dumpJson(j, -1);
  return sha256Hex(s.data(), s.size());
}

namespace {

std::string libInfoText(const Package& p) {
  std::map<uint16_t, std::pair<int, int>> calls;  // lib -> (calls, with interrupt)
  for (auto& d : p.vec) {
    auto& c = calls[d.lib];
    ++c.first;
    c.second += (d.flags & kFlagInterrupt) != 0;
  }
  int mac_calls = static_cast<int>(p.mac.size()), mac_int = 0;
  for (auto& d : p.mac) mac_int += (d.flags & kFlagInterrupt) != 0;
  std::string s = "# npuc vector-engine libraries: id, name, calls, calls ending with an interrupt\n";
  for (auto& l : p.libraries) {
    auto it = calls.find(l.id);
    s += fmt::format("{:3d} {:<20s} {:6d} {:6d}\n", l.id, l.name, it == calls.end() ? 0 : it->second.first,
                     it == calls.end() ? 0 : it->second.second);
  }
  s += fmt::format("# MAC engine: {} descriptors, {} ending with an interrupt\n", mac_calls, mac_int);
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Writer.

namespace {

/// A float parameter as JSON: a number, or "inf" / "-inf" / "nan" (JSON has no such numbers).
json floatJson(double v) {
  if (std::isfinite(v)) return json(v);
  return json(std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

/// The manifest's `custom` record of a custom layer.
json customJson(const CustomLayer& c) {
  json j = json::object();
  j["op"] = c.op;
  j["domain"] = c.domain;
  j["library"] = c.library;
  j["sha256"] = c.sha256;
  j["abi_version"] = c.abi_version;
  json ps = json::array();
  for (const CustomParam& p : c.params) {
    json q = json::object();
    q["name"] = p.name;
    q["type"] = p.type >= 1 && p.type <= 7 ? kCustomParamTypes[p.type - 1] : "?";
    q["present"] = p.present;
    if (p.present) switch (p.type) {
        case 1: case 2: q["value"] = p.i; break;
        case 3: q["value"] = floatJson(p.f); break;
        case 4: q["value"] = p.s; break;
        case 5: q["value"] = p.ints; break;
        case 6: {
          json a = json::array();
          for (double v : p.floats) a.push_back(floatJson(v));
          q["value"] = a;
          break;
        }
        case 7: q["input"] = p.input; break;
        default: break;
      }
    ps.push_back(q);
  }
  j["params"] = ps;
  return j;
}

/// The manifest's "layers" list as dump(1) writes it at depth 1, without building one JSON object per layer:
/// strings go through the JSON library's own escaping (a test compares the file with a fresh dump of what it
/// parses to).
std::string layersJsonText(const Package& p) {
  std::string s = "[\n";
  auto str = [&](const std::string& v) { s += dumpJson(json(v), -1); };
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const LayerInfo& l = p.layers[i];
    const Descriptor& d = (l.engine == Engine::kMac ? p.mac : p.vec)[l.index];
    fmt::format_to(std::back_inserter(s), "  {{\n   \"seq\": {},\n   \"engine\": \"{}\",\n   \"index\": {},\n   \"kind\": ",
                   l.seq, engineName(l.engine), l.index);
    str(layerKindName(d.kind));
    s += ",\n   \"name\": ";
    str(l.name);
    s += ",\n   \"opexp\": ";
    str(l.opexp);
    s += ",\n   \"onnx_nodes\": ";
    if (l.onnx_nodes.empty()) {
      s += "[]";
    } else {
      s += "[\n";
      for (size_t k = 0; k < l.onnx_nodes.size(); ++k) {
        s += "    ";
        str(l.onnx_nodes[k]);
        s += k + 1 < l.onnx_nodes.size() ? ",\n" : "\n";
      }
      s += "   ]";
    }
    s += ",\n   \"output\": ";
    str(l.output);
    if (!l.extra_outputs.empty()) {
      s += ",\n   \"outputs\": [";
      str(l.output);
      for (const std::string& o : l.extra_outputs) {
        s += ", ";
        str(o);
      }
      s += "]";
    }
    if (l.scale > 0) {
      s += ",\n   \"quantization\": {\n    \"scale\": ";
      s += dumpJson(json(l.scale), -1);
      fmt::format_to(std::back_inserter(s), ",\n    \"zero_point\": {},\n    \"of\": ", l.zero_point);
      str(l.float_value);
      s += "\n   }";
    } else if (!l.float_value.empty()) {  // (int8-pow2 codes: their scale is the runtime's, per frame)
      s += ",\n   \"codes_of\": ";
      str(l.float_value);
    }
    if (l.group > 0) fmt::format_to(std::back_inserter(s), ",\n   \"group\": {}", l.group);
    if (l.custom) {
      std::string c = dumpJson(customJson(*l.custom), 1);
      for (size_t k = c.find('\n'); k != std::string::npos; k = c.find('\n', k + 1)) c.insert(k + 1, "   ");
      s += ",\n   \"custom\": " + c;
    }
    s += i + 1 < p.layers.size() ? "\n  },\n" : "\n  }\n";
  }
  s += " ]";
  return s;
}

}  // namespace

std::vector<std::string> writePackage(Package& p, const fs::path& dir) {
  validatePackage(p, "package being written");
  // (name, bytes): views of the package's own buffers where it has them, so the weights are never copied.
  std::vector<uint8_t> mac = encodeDescriptors(p.mac, Engine::kMac), vec = encodeDescriptors(p.vec, Engine::kVector),
                       cfg = encodeLibraries(p.libraries);
  std::string info = libInfoText(p);
  struct View {
    std::string name;
    const void* data;
    size_t size;
  };
  std::vector<View> files = {{"aimac_desc.bin", mac.data(), mac.size()},
                             {"drp_desc.bin", vec.data(), vec.size()},
                             {"drp_param.bin", p.params.data(), p.params.size()},
                             {p.prefix + "_weight.dat", p.weights.data(), p.weights.size()},
                             {p.prefix + "_drpcfg.mem", cfg.data(), cfg.size()},
                             {"drp_lib_info.txt", info.data(), info.size()}};

  json m;
  m["format"] = "npuc-package";
  m["version"] = p.version;
  m["producer"] = p.producer;
  m["prefix"] = p.prefix;
  m["target"] = p.target;
  m["numerics"] = std::string(numericsName(p.numerics));
  if (p.pow2) {
    const kernels::pow2::Options& o = p.pow2->options;
    m["pow2"] = {{"quant_round_add", o.round_add}, {"dynamic", o.dynamic}, {"quant_history_param1", o.history1},
                 {"quant_history_param2", o.history2}, {"quant_margin", o.margin}, {"boot_frames", o.boot_frames},
                 {"slots", p.pow2->slots}};
  }
  if (p.ranges) m["shape_ranges"] = shapeRangesManifest(*p.ranges);
  json am = json::array();
  for (auto& s : p.address_map) {
    json js{{"name", s.name}, {"addr", s.addr}, {"size", s.size}, {"elements", json::array()}};
    for (auto& e : s.elements) js["elements"].push_back({{"name", e.name}, {"addr", e.addr}, {"size", e.size}});
    am.push_back(js);
  }
  m["address_map"] = am;
  m["inputs"] = json::array();
  for (auto& t : p.inputs) {
    json j = refJson(t.name, t.ref);
    if (!t.image.format.empty())
      j["image"] = {{"format", t.image.format}, {"height", t.image.height}, {"width", t.image.width}, {"order", t.image.chw ? "CHW" : "HWC"}};
    m["inputs"].push_back(j);
  }
  m["outputs"] = json::array();
  for (auto& t : p.outputs) {
    json j = refJson(t.name, t.ref);
    if (t.extent) {  // (a dynamic output: its shape above is the capacity)
      json e = refJson(t.name + "/extent", *t.extent);
      e.erase("name");
      j["extent"] = e;
    }
    m["outputs"].push_back(j);
  }
  m["streams"] = {{"mac", {{"file", "aimac_desc.bin"}, {"count", p.mac.size()}}},
                  {"vector", {{"file", "drp_desc.bin"}, {"count", p.vec.size()}}}};
  m["weights_file"] = p.prefix + "_weight.dat";
  m["params_file"] = "drp_param.bin";
  m["config_file"] = p.prefix + "_drpcfg.mem";
  m["layers"] = json::array();  // a placeholder: the list is written as text below (200k layers for the largest models)
  std::vector<std::pair<std::string, std::string>> hashes;
  m["files"] = json::array();
  for (auto& f : files) {
    std::string h = sha256Hex(f.data, f.size);
    hashes.emplace_back(f.name, h);
    m["files"].push_back({{"name", f.name}, {"size", f.size}, {"sha256", h}});
  }
  // Dumped once: the digest is taken over the compact form of this text, and content_hash, the last key, is
  // spliced in as the indented dump would write it (a test compares the file with a fresh dump of what it parses to).
  std::string text = dumpJson(m, 1);
  if (!p.layers.empty()) {
    // Top-level keys are the only lines that start with one space and a quote (a dump's strings hold no newline).
    const std::string key = "\n \"layers\": []";
    size_t at = text.find(key);
    if (at == std::string::npos) fail(ErrorCode::kInternal, "the manifest's dump has no layers placeholder");
    text.replace(at + key.size() - 2, 2, layersJsonText(p));
  }
  std::string compact = compactJson(text);
  p.content_hash = contentHash(hashes, sha256Hex(compact.data(), compact.size()));
  if (text.size() < 2 || text.compare(text.size() - 2, 2, "\n}") != 0)
    fail(ErrorCode::kInternal, "the manifest's dump does not end its object as expected");
  text.insert(text.size() - 2, ",\n \"content_hash\": \"" + p.content_hash + "\"");
  text += "\n";

  std::vector<std::string> names;
  for (auto& f : files) {
    writeFileAtomic(dir / f.name, f.data, f.size);
    names.push_back(f.name);
  }
  writeFileAtomic(dir / "manifest.json", text);
  names.push_back("manifest.json");
  return names;
}

std::string resealManifest(const std::string& text, const std::map<std::string, std::vector<uint8_t>>& files) {
  json j = parseManifest(std::vector<uint8_t>(text.begin(), text.end()), "manifest.json");
  if (!j.is_object() || !j.contains("files") || !j["files"].is_array()) bad("manifest.json", "no 'files' list");
  std::vector<std::pair<std::string, std::string>> hashes;
  for (auto& e : j["files"]) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) bad("manifest.json", "a 'files' entry has no name");
    std::string name = e["name"].get<std::string>();
    auto it = files.find(name);
    if (it == files.end()) bad("manifest.json", "lists '{}', which is not among the files", name);
    std::string h = sha256Hex(it->second.data(), it->second.size());
    e["size"] = it->second.size();
    e["sha256"] = h;
    hashes.emplace_back(name, h);
  }
  j["content_hash"] = contentHash(hashes, manifestDigest(j));
  return dumpJson(j, 1) + "\n";
}

std::vector<uint32_t> ssdParams(const kernels::SsdParams& p) {
  std::vector<uint32_t> w(kSsdWords);
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  w[0] = static_cast<uint32_t>(p.classes);
  w[1] = p.share_location ? 1u : 0u;
  w[2] = static_cast<uint32_t>(static_cast<int32_t>(p.background));
  w[3] = static_cast<uint32_t>(p.code);
  w[4] = p.variance_in_target ? 1u : 0u;
  w[5] = bits(p.confidence_threshold);
  w[6] = bits(p.nms_threshold);
  w[7] = bits(p.eta);
  w[8] = static_cast<uint32_t>(static_cast<int32_t>(p.top_k));
  w[9] = static_cast<uint32_t>(static_cast<int32_t>(p.keep_top_k));
  return w;
}

kernels::SsdParams ssdFromParams(const uint32_t* w, int64_t images, int64_t priors) {
  auto f = [](uint32_t u) {
    float v;
    std::memcpy(&v, &u, 4);
    return v;
  };
  kernels::SsdParams p;
  p.images = images, p.priors = priors;
  p.classes = w[0];
  p.share_location = w[1] != 0;
  p.background = static_cast<int32_t>(w[2]);
  p.code = static_cast<kernels::SsdParams::Code>(w[3]);
  p.variance_in_target = w[4] != 0;
  p.confidence_threshold = f(w[5]);
  p.nms_threshold = f(w[6]);
  p.eta = f(w[7]);
  p.top_k = static_cast<int32_t>(w[8]);
  p.keep_top_k = static_cast<int32_t>(w[9]);
  return p;
}

std::vector<uint32_t> rnnParams(const kernels::RnnShape& s, uint32_t inputs, uint32_t outputs) {
  std::vector<uint32_t> w(kRnnWords);
  w[0] = static_cast<uint32_t>(s.cell);
  w[1] = static_cast<uint32_t>(s.dirs);
  w[2] = s.reverse ? 1u : 0u;
  w[3] = s.batch_major ? 1u : 0u;
  w[4] = floatParam(s.clip);
  w[5] = s.linear_before_reset ? 1u : 0u;
  w[6] = s.input_forget ? 1u : 0u;
  w[7] = inputs;
  w[8] = outputs;
  w[9] = static_cast<uint32_t>(s.hidden);
  for (size_t a = 0; a < s.acts.size() && a < static_cast<size_t>(kRnnMaxActivations); ++a) {
    uint32_t* q = &w[10 + 4 * a];
    q[0] = static_cast<uint32_t>(s.acts[a].kind);
    q[1] = static_cast<uint32_t>(s.acts[a].op);
    q[2] = floatParam(s.acts[a].alpha);
    q[3] = floatParam(s.acts[a].beta);
  }
  return w;
}

kernels::RnnShape rnnFromParams(const uint32_t* w) {
  kernels::RnnShape s;
  s.cell = static_cast<kernels::RnnCell>(w[0]);
  s.dirs = static_cast<int>(w[1]);
  s.reverse = w[2] != 0;
  s.batch_major = w[3] != 0;
  s.clip = paramFloat(w[4]);
  s.linear_before_reset = w[5] != 0;
  s.input_forget = w[6] != 0;
  s.hidden = w[9];
  const int n = s.dirs * kernels::rnnActivations(s.cell);
  for (int a = 0; a < n && a < kRnnMaxActivations; ++a) {
    const uint32_t* q = &w[10 + 4 * a];
    kernels::RnnActivation act;
    act.kind = static_cast<kernels::RnnActivation::Kind>(q[0]);
    act.op = static_cast<kernels::UnaryOp>(q[1]);
    act.alpha = paramFloat(q[2]);
    act.beta = paramFloat(q[3]);
    s.acts.push_back(act);
  }
  return s;
}

}  // namespace npuc::package
