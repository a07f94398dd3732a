// Shared CLI helpers.
#include "cli_common.hpp"

#include "npuc/io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>

namespace npuc::cli {

namespace {
std::pair<std::string, std::string> splitEq(const std::string& e, const char* what) {
  auto p = e.rfind('=');
  if (p == std::string::npos || p == 0 || p + 1 == e.size())
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{} '{}' must look like name=value", what, e));
  return {e.substr(0, p), e.substr(p + 1)};
}
}  // namespace

std::map<std::string, std::vector<uint8_t>> parseAippParams(const std::vector<std::string>& entries) {
  std::map<std::string, std::vector<uint8_t>> r;
  for (auto& e : entries) {
    auto [name, file] = splitEq(e, "--aipp");
    r[name] = loadAippParams(file);
  }
  return r;
}

Tensor realValues(const RuntimeLayer& l, const Tensor& y, double scale) {
  if (!(scale > 0) || (y.dtype() != DType::kI8 && y.dtype() != DType::kU8)) return y;
  Tensor real(DType::kF32, y.shape());
  const bool u8 = y.dtype() == DType::kU8;  // (int8-pow2 codes after a Relu are unsigned)
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int code = u8 ? y.data<uint8_t>()[i] : y.data<int8_t>()[i];
    real.data<float>()[i] = static_cast<float>((code - l.zero_point) * scale);
  }
  return real;
}

std::map<std::string, std::pair<double, double>> parseRanges(const std::vector<std::string>& entries) {
  std::map<std::string, std::pair<double, double>> r;
  for (auto& e : entries) {
    auto [name, span] = splitEq(e, "--range");
    const size_t comma = span.find(',');
    auto number = [&](const std::string& t) {
      char* end = nullptr;
      const double v = std::strtod(t.c_str(), &end);
      if (t.empty() || *end != '\0' || !std::isfinite(v))
        throw Error(ErrorCode::kInvalidArgument, fmt::format("--range '{}': '{}' is not a finite number (TENSOR=LO,HI)", e, t));
      return v;
    };
    if (comma == std::string::npos)
      throw Error(ErrorCode::kInvalidArgument, fmt::format("--range '{}': expected TENSOR=LO,HI", e));
    const double lo = number(span.substr(0, comma)), hi = number(span.substr(comma + 1));
    if (lo > hi) throw Error(ErrorCode::kInvalidArgument, fmt::format("--range '{}': LO {} is above HI {}", e, lo, hi));
    if (r.count(name)) throw Error(ErrorCode::kInvalidArgument, fmt::format("--range: tensor '{}' is given twice", name));
    r[name] = {lo, hi};
  }
  return r;
}

std::map<std::string, Shape> parseShapes(const std::vector<std::string>& entries) {
  std::map<std::string, Shape> r;
  for (auto& e : entries) {
    auto [name, dims] = splitEq(e, "--input-shape");
    Shape s;
    size_t i = 0;
    while (i <= dims.size()) {
      size_t j = dims.find_first_of(",x", i);
      if (j == std::string::npos) j = dims.size();
      std::string d = dims.substr(i, j - i);
      char* end = nullptr;
      long long v = std::strtoll(d.c_str(), &end, 10);
      if (d.empty() || *end != '\0' || v <= 0)
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("--input-shape '{}': '{}' is not a positive dimension", e, d));
      s.push_back(v);
      i = j + 1;
    }
    r[name] = s;
  }
  return r;
}

std::map<std::string, Tensor> parseInputs(const std::vector<std::string>& entries) {
  std::map<std::string, Tensor> r;
  for (auto& e : entries) {
    auto [name, file] = splitEq(e, "--input");
    r[name] = readNpyFile(file);
  }
  return r;
}

std::map<std::string, std::vector<Tensor>> parseTensorLists(const std::vector<std::string>& entries, const char* what,
                                                            const PictureReader& pictures) {
  std::map<std::string, std::vector<Tensor>> r;
  for (auto& e : entries) {
    auto [name, file] = splitEq(e, what);
    if (!std::filesystem::is_directory(file)) {
      r[name].push_back(readNpyFile(file));
      continue;
    }
    // A folder of .npy shards (each stacks samples along its first axis) or of pictures, in name order.
    SampleFolder folder;
    try {
      folder = sampleFolder(file);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("{} {}={}: {}", what, name, file, e.what()));
    }
    if (!folder.pictures.empty()) {
      if (!pictures)
        throw Error(ErrorCode::kInvalidArgument, fmt::format("{} {}={}: a folder of pictures needs the model's input shapes: "
                                                             "translate and quantize read one", what, name, file));
      try {
        r[name].push_back(pictures(name, folder.pictures));
      } catch (const Error& e) {
        throw Error(e.code(), fmt::format("{} {}={}: {}", what, name, file, e.what()));
      }
      continue;
    }
    for (const auto& f : folder.shards) r[name].push_back(readNpyFile(f));
  }
  return r;
}

PictureReader pictureReader(const std::string& model, const std::map<std::string, Shape>& shapes, const std::string& mean,
                            const std::string& scale, bool bgr, const std::string& caffe_model) {
  PictureSamples o;
  o.bgr = bgr;
  auto numbers = [](const std::string& text, const char* option) {
    std::vector<double> v;
    for (size_t at = 0; at <= text.size();) {
      const size_t comma = std::min(text.find(',', at), text.size());
      const std::string x = text.substr(at, comma - at);
      at = comma + 1;
      char* end = nullptr;
      const double d = std::strtod(x.c_str(), &end);
      if (x.empty() || *end || !std::isfinite(d))
        throw Error(ErrorCode::kInvalidArgument, fmt::format("{} '{}': numbers separated by commas", option, text));
      v.push_back(d);
    }
    return v;
  };
  if (!mean.empty()) o.mean = numbers(mean, "--calib-mean");
  if (!scale.empty()) o.scale = numbers(scale, "--calib-scale");
  auto inputs = std::make_shared<std::map<std::string, Shape>>();
  return [=](const std::string& input, const std::vector<std::filesystem::path>& files) {
    if (inputs->empty()) {
      LoadOptions lo;
      lo.input_shapes = shapes;
      lo.caffe_model = caffe_model;
      for (const auto& in : Model::load(model, lo).inputs()) (*inputs)[in.name] = in.shape;
    }
    auto it = inputs->find(input);
    if (it == inputs->end()) throw Error(ErrorCode::kInvalidArgument, fmt::format("the model has no input '{}'", input));
    return picturesAsSamples(files, it->second, o);
  };
}

Model loadForInputs(const std::string& model, const std::map<std::string, Tensor>& inputs,
                    const std::vector<std::string>& shape_entries, const std::string& caffe_model) {
  LoadOptions lo;
  lo.caffe_model = caffe_model;
  lo.input_shapes = parseShapes(shape_entries);
  for (auto& [n, t] : inputs)
    if (!lo.input_shapes.count(n)) {
      lo.input_shapes[n] = t.shape();
      lo.input_shape_origin[n] = "--input";
    }
  return Model::load(model, lo);
}

void fillRandomInputs(const Model& m, std::map<std::string, Tensor>& given, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  for (auto& in : m.inputs()) {
    if (given.count(in.name)) continue;
    Shape s = in.shape;
    for (auto& d : s)
      if (d < 0) d = 1;
    Tensor t(in.dtype, s);
    if (in.dtype == DType::kF32)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
    given[in.name] = t;
  }
}

std::string safeFileName(const std::string& name) {
  std::string r;
  for (char c : name) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return r.empty() ? "output" : r;
}

std::vector<std::string> safeFileNames(const std::vector<std::string>& names, const std::vector<std::string>& suffixes) {
  std::vector<std::string> out(names.size());
  std::set<std::string> taken;  // every file name a chosen base makes
  auto free = [&](const std::string& base) {
    for (const std::string& x : suffixes)
      if (taken.count(base + x)) return false;
    return true;
  };
  auto take = [&](size_t i, const std::string& base) {
    out[i] = base;
    for (const std::string& x : suffixes) taken.insert(base + x);
  };
  for (int pass = 0; pass < 2; ++pass)  // names that need no change first: they keep their names
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string base = safeFileName(names[i]);
      if ((base == names[i]) != (pass == 0)) continue;
      std::string pick = base;
      for (int k = 2; !free(pick); ++k) pick = base + "_" + std::to_string(k);
      take(i, pick);
    }
  return out;
}

std::string drpaiManualMessage(const std::string& target, const CheckRow& r) {
  if (target.rfind("drpai", 0) != 0) return "";
  if (r.rule_id == target + ".op" || r.rule_id == "drpai.op")
    return fmt::format(" [Error(DRP Converter-003)] Not support layer: '{}'\nTool does not support onnx operator '{}'.\n", r.op, r.op);
  if (r.rule_id == "drpai.conv.min_plane") {
    // rule: "... violation: KxK st=S pad=(t,l,b,r) needs width ≥ W, height ≥ H (§4.1.3)", actual: "width w, height h"
    static const std::regex rule(R"((\d+)x(\d+) st=(\d+) pad=\((\d+),(\d+),(\d+),(\d+)\) needs width ≥ (\d+), height ≥ (\d+))");
    static const std::regex actual(R"(width (\d+), height (\d+))");
    std::smatch m, a;
    if (!std::regex_search(r.rule, m, rule) || !std::regex_search(r.actual, a, actual)) return "";
    return fmt::format("ONNX: Conv Minimum plane size violation\n{}x{} st={} pad=({}, {}, {}, {}))\nHW requirement of minimum 2D plane "
                       "size: (width {}, height {}\nActual input : (width {}, height {})\n",
                       m.str(1), m.str(2), m.str(3), m.str(5), m.str(7), m.str(4), m.str(6), m.str(8), m.str(9), a.str(1), a.str(2));
  }
  return "";
}

std::string drpaiManualMessage(const std::string& target, const std::string& error) {
  if (target.rfind("drpai", 0) != 0) return "";
  static const std::regex unknown(R"(node '([^']*)' \(([^)]*)\): unknown op)");
  std::smatch m;
  if (!std::regex_search(error, m, unknown)) return "";
  return fmt::format("ONNX: Not Support Layer Error: Not Support\nName: {}\nOp : {}\n", m.str(1), m.str(2));
}

std::string humanCount(int64_t n) {
  if (n >= 1000000000) return fmt::format("{:.2f} G", static_cast<double>(n) / 1e9);
  if (n >= 1000000) return fmt::format("{:.2f} M", static_cast<double>(n) / 1e6);
  if (n >= 1000) return fmt::format("{:.2f} K", static_cast<double>(n) / 1e3);
  return std::to_string(n);
}

std::string humanBytes(int64_t n) {
  if (n >= (1 << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(n) / (1 << 20));
  if (n >= (1 << 10)) return fmt::format("{:.2f} KiB", static_cast<double>(n) / (1 << 10));
  return fmt::format("{} B", n);
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const RuntimeTensor& packageInput(const Runtime& rt, const std::string& name, const std::string& what) {
  std::string names;
  for (auto& r : rt.inputs()) {
    if (r.name == name) return r;
    names += (names.empty() ? "'" : ", '") + r.name + "'";
  }
  throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: the package has no input '{}' (its inputs: {})", what, name, names));
}

void writeText(const std::filesystem::path& p, const std::string& s) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  bool ok = f && std::fwrite(s.data(), 1, s.size(), f) == s.size();
  if (f) ok = std::fclose(f) == 0 && ok;  // (a full disk shows at the flush)
  if (!ok) {
    std::error_code ec;
    std::filesystem::remove(p, ec);
    throw Error(ErrorCode::kIo, fmt::format("{}: cannot write", p.string()));
  }
}

void warnClippedInputs(const Runtime& rt, const char* who) {
  for (const RuntimeLayer& l : rt.layers()) {
    const int64_t n = rt.clippedInputs(l.seq);
    if (n == 0) continue;
    const std::string in = l.inputs.empty() ? l.name : l.inputs[0];
    fmt::print(stderr, "{}: warning: {} value(s) of '{}' were negative; layer '{}' writes unsigned codes (inElementType 0 for "
                       "an input) and clipped them to 0\n", who, n, in, l.name);
  }
}

namespace {
constexpr const char* kPackageReferenceMagic = "npuc-package-reference 1";
}  // namespace

void writePackageReference(const std::filesystem::path& file, const std::filesystem::path& package_dir, const std::string& content_hash,
                           const std::map<std::string, std::string>& keys) {
  std::string text = fmt::format("{}\n# An npuc package stands where TIDL writes this file: the folder below, beside it (npuc "
                                 "tidl-import; docs/cli.md).\npackage = {}\ncontent_hash = {}\n",
                                 kPackageReferenceMagic, package_dir.filename().string(), content_hash);
  for (const auto& [k, v] : keys) text += fmt::format("{} = {}\n", k, v);
  writeText(file, text);
}

bool isPackageReference(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  std::string head(std::char_traits<char>::length(kPackageReferenceMagic), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in && head == kPackageReferenceMagic;
}

std::filesystem::path packageFolder(const std::filesystem::path& path, const char* what, std::map<std::string, std::string>* keys) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return path;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(ErrorCode::kIo, fmt::format("{}: \"{}\" is neither a package folder nor a package reference file", what, path.string()));
  const std::string text = readFileText(path, 4096, "a package reference");
  std::istringstream in(text);
  std::string l, name, hash;
  std::getline(in, l);
  if (l != kPackageReferenceMagic)
    throw Error(ErrorCode::kInvalidInput, fmt::format("{}: \"{}\" is not an npuc package reference (the file npuc tidl-import writes at "
                                                      "outputNetFile), nor a package folder", what, path.string()));
  while (std::getline(in, l)) {
    const size_t eq = l.find(" = ");
    if (l.empty() || l[0] == '#' || eq == std::string::npos) continue;
    const std::string k = l.substr(0, eq), v = l.substr(eq + 3);
    if (k == "package") name = v;
    else if (k == "content_hash") hash = v;
    else if (keys) (*keys)[k] = v;
  }
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw Error(ErrorCode::kInvalidInput, fmt::format("{}: \"{}\": the reference names no package folder beside it", what, path.string()));
  const std::filesystem::path dir = path.parent_path() / name;
  const std::string manifest = readFileText(dir / "manifest.json", 64u << 20, "a package manifest");
  if (hash.empty() || manifest.find("\"" + hash + "\"") == std::string::npos)
    throw Error(ErrorCode::kInvalidInput, fmt::format("{}: \"{}\" names the package {} of content hash {}, and {} holds another (translated "
                                                      "again since?)", what, path.string(), dir.string(), hash, dir.string()));
  return dir;
}

std::string htmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else if (c == '\'') o += "&#39;";
    else o += c;
  }
  return o;
}

namespace {
std::vector<std::string>& customOpLibraries() {
  static std::vector<std::string> libs;
  return libs;
}
}  // namespace

void addModelPositionals(Command* c, std::string& model, std::string& caffemodel) {
  c->option("model", model, "the model: ONNX, TensorFlow (.pb), TensorFlow Lite (.tflite), or a Caffe network "
                            "description (.prototxt) with its weights")->required();
  c->option("caffemodel", caffemodel, "Caffe: the trained weights (.caffemodel) of a .prototxt model");
}

void addCustomOpOption(Command* c) {
  c->option("--custom-op,--register-op", customOpLibraries(),
                "Register a custom-op plugin (a shared library built with `npuc custom-op build`; repeatable; "
                "docs/custom-ops.md)")
      ->noExtraArgs();
}

void registerCustomOps() {
  for (const std::string& lib : customOpLibraries()) registerCustomOp(lib);
}

}  // namespace npuc::cli
