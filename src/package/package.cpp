// Package writer and reader (format: package.hpp and docs/package-format.md).
#include "package/package.hpp"

#include "package/binary.hpp"

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
using json = nlohmann::ordered_json;

namespace {
/// The manifest's names of custom parameter types, by npuc_param_type code - 1.
const char* const kCustomParamTypes[] = {"bool", "int", "float", "string", "ints", "floats", "tensor"};

}  // namespace

bool isPackageType(ElemType t) {
  switch (t) {
    case DType::kF32: case DType::kF16: case DType::kU8: case DType::kI8: case DType::kU16: case DType::kI16:
    case DType::kI32: case DType::kI64: return true;
    default: return false;
  }
}

size_t elemSize(ElemType t) { return isPackageType(t) ? dtypeSize(t) : 0; }

std::string_view elemName(ElemType t) { return dtypeName(t); }

bool elemTypeValid(uint8_t code) { return isPackageType(dtypeFromOnnxCode(code)); }

const char* engineName(Engine e) { return e == Engine::kMac ? "mac" : "vector"; }

Pow2Form pow2Form(Numerics numerics, const Descriptor& d) {
  if (numerics != Numerics::kInt8Pow2) return Pow2Form::kNone;
  if (d.kind == LayerKind::kQuantize || d.kind == LayerKind::kDequantize) return Pow2Form::kTable;
  const ElemType x = d.in(0).type;
  if (x != ElemType::kI8 && x != ElemType::kU8) return Pow2Form::kNone;
  switch (d.kind) {
    case LayerKind::kMaxPool: return Pow2Form::kCodes;
    case LayerKind::kConv:
    case LayerKind::kGemm:
    case LayerKind::kConcat:  // (with its table last: a concat of codes without one moves them, as max pooling does)
      return d.n_in >= 2 && d.in(d.n_in - 1).type == ElemType::kI32 ? Pow2Form::kTable : Pow2Form::kNone;
    case LayerKind::kBinary:
    case LayerKind::kAvgPool:
    case LayerKind::kGlobalAvgPool: return Pow2Form::kTable;
    default: return Pow2Form::kNone;
  }
}

uint64_t TensorRef::numel() const {
  uint64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

const Element* Package::element(const std::string& name) const {
  for (auto& s : address_map)
    for (auto& e : s.elements)
      if (e.name == name) return &e;
  return nullptr;
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

using detail::bad;
using detail::decodeDescriptors;
using detail::decodeLibraries;

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

/// Parses a manifest. Nesting deeper than kMaxJsonDepth is refused by a linear scan before any JSON value is built,
/// so no recursive copy or destruction of a hostile document can exhaust the stack.
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

/// SHA-256 of the manifest's canonical form (content_hash removed, compact, keys in file order).
std::string manifestDigest(const json& j) {
  if (j.is_object() && j.contains("content_hash")) {
    json without = j;
    without.erase("content_hash");
    return manifestDigest(without);
  }
  std::string s = dumpJson(j, -1);
  return sha256Hex(s.data(), s.size());
}

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
  for (auto& t : p.outputs) m["outputs"].push_back(refJson(t.name, t.ref));
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

// ---------------------------------------------------------------------------------------------------------
// Reader.

namespace {

/// One record of the manifest's 'layers' (all but its kind, which is checked against the decoded descriptor).
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
  if (l.j.contains("codes_of")) {  // (int8-pow2 codes: checked below)
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

}  // namespace

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
    if (!num || !numericsHasPackages(*num))
      bad(mfile, "field 'numerics' = '{}': this npuc reads fp32 and fp16 packages", numerics);
    p.numerics = *num;
    if (p.numerics != Numerics::kInt8Pow2 && root.j.contains("pow2"))
      bad(mfile, "field 'pow2' belongs to int8-pow2 packages (numerics is '{}')", numerics);
    if (p.numerics == Numerics::kInt8Pow2) {  // (validatePackage checks the values)
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
        (io[0] == 'i' ? p.inputs : p.outputs).push_back(std::move(t));
      }
    }
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
      LayerInfo li = layerFromJson(l, mfile);
      // The kind is stated for readers of the manifest; it must be the descriptor's (checked once decoded).
      kinds.push_back(l.at("kind").str());
      p.layers.push_back(std::move(li));
    }
    validatePackage(p, where);
    for (size_t i = 0; i < kinds.size(); ++i) {
      const LayerInfo& l = p.layers[i];
      const Descriptor& d = (l.engine == Engine::kMac ? p.mac : p.vec)[l.index];
      if (kinds[i] != layerKindName(d.kind))
        bad(mfile, "field 'layers[{}].kind' = '{}', but its descriptor is a '{}' layer", i, kinds[i], layerKindName(d.kind));
      if (l.scale == 0 && !l.float_value.empty() &&
          (p.numerics != Numerics::kInt8Pow2 || (d.out(0).type != ElemType::kI8 && d.out(0).type != ElemType::kU8)))
        bad(mfile, "field 'layers[{}].codes_of': only int8-pow2 layers writing codes name what they stand for this way", i);
      if (l.scale > 0 && d.out(0).type != ElemType::kI8)
        bad(mfile, "field 'layers[{}].quantization': the layer writes {}, not int8 codes", i, elemName(d.out(0).type));
      int e = 0;
      if (l.scale > 0 && p.numerics == Numerics::kInt8Radix && (l.zero_point != 0 || std::frexp(l.scale, &e) != 0.5))
        bad(mfile, "field 'layers[{}].quantization': an int8-radix package's codes are symmetric at a power-of-two scale, got "
            "scale {} and zero point {}", i, l.scale, l.zero_point);
    }
  } catch (const json::exception& e) {
    bad(mfile, "malformed manifest: {}", e.what());
  }
  return p;
}

}  // namespace npuc::package
