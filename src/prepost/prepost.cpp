// DRP-AI pre/post-processing definitions: parsing (§5, Appendix A), validation (§5.3/§5.4 rules, §9 messages)
// and shape/type propagation. Section numbers refer to the DRP-AI Translator manual; docs/prepost.md has the
// conventions this file implements.
#include "prepost/prepost.hpp"

#include "support/error.hpp"
#include "support/file.hpp"
#include "support/yaml.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <charconv>
#include <map>
#include <set>
#include <tuple>

namespace npuc::prepost {

// ---------------------------------------------------------------------------------------------------------------
// Names

std::string_view toString(Order o) {
  switch (o) {
    case Order::kHWC: return "HWC";
    case Order::kCHW: return "CHW";
    case Order::kC: return "C";
  }
  return "?";
}

std::string_view toString(ElemType t) {
  switch (t) {
    case DType::kU8: return "uint8";
    case DType::kU16: return "uint16";
    case DType::kF16: return "fp16";
    case DType::kF32: return "fp32";
    default: return dtypeName(t);
  }
}

std::string_view toString(ImageFormat f) {
  switch (f) {
    case ImageFormat::kNone: return "(none)";
    case ImageFormat::kRGB: return "RGB";
    case ImageFormat::kBGR: return "BGR";
    case ImageFormat::kYUY2: return "YUY2";
    case ImageFormat::kGray: return "GRAY";
  }
  return "?";
}

std::string_view toString(Stage s) { return s == Stage::kPre ? "preprocessing" : "postprocessing"; }

std::string_view toString(OpKind k) {
  switch (k) {
    case OpKind::kTranspose: return "transpose";
    case OpKind::kConvYuv2Rgb: return "conv_yuv2rgb";
    case OpKind::kConvX2Gray: return "conv_x2gray";
    case OpKind::kCrop: return "crop";
    case OpKind::kResizeHwc: return "resize_hwc";
    case OpKind::kCastAnyToFp16: return "cast_any_to_fp16";
    case OpKind::kNormalize: return "normalize";
    case OpKind::kMemcopy: return "memcopy";
    case OpKind::kSoftmax: return "softmax";
    case OpKind::kCastFp16Fp32: return "cast_fp16_fp32";
    case OpKind::kArgMinMax: return "argminmax";
  }
  return "?";
}

std::string_view toString(YuvFormat f) {
  switch (f) {
    case YuvFormat::kYUYV: return "Y0UY1V";
    case YuvFormat::kYVYU: return "Y0VY1U";
    case YuvFormat::kUYVY: return "UY0VY1";
    case YuvFormat::kVUYY: return "VUY1Y0";
    case YuvFormat::kYUYV420: return "Y0UY1V";
    case YuvFormat::kUYVY420: return "UY0VY1";
    case YuvFormat::kYV12: return "YV12";
    case YuvFormat::kIYUV: return "IYUV";
    case YuvFormat::kNV12: return "NV12";
    case YuvFormat::kNV21: return "NV21";
    case YuvFormat::kIMC1: return "IMC1";
    case YuvFormat::kIMC2: return "IMC2";
    case YuvFormat::kIMC3: return "IMC3";
    case YuvFormat::kIMC4: return "IMC4";
  }
  return "?";
}

ImageFormat requiredInputFormat(YuvFormat f) {
  return f == YuvFormat::kIMC1 || f == YuvFormat::kIMC3 ? ImageFormat::kRGB : ImageFormat::kYUY2;
}

int64_t TensorInfo::height() const {
  if (order == Order::kC || shape.size() != 3) return 1;
  return order == Order::kHWC ? shape[0] : shape[1];
}
int64_t TensorInfo::width() const {
  if (order == Order::kC || shape.size() != 3) return 1;
  return order == Order::kHWC ? shape[1] : shape[2];
}
int64_t TensorInfo::channels() const {
  if (shape.empty()) return 0;
  return order == Order::kHWC ? shape.back() : shape.front();
}
int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

std::string shapeStr(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

}  // namespace

std::string describe(const TensorInfo& t) {
  std::string s = fmt::format("{} {}", shapeStr(t.shape), toString(t.order));
  if (t.format != ImageFormat::kNone) s += fmt::format(" {}", toString(t.format));
  return s + fmt::format(" {}", toString(t.type));
}

namespace {

const TensorDecl* findDecl(const std::vector<TensorDecl>& v, const std::string& name) {
  for (auto& d : v)
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace

const TensorDecl* PrePost::findInputToPre(const std::string& n) const { return findDecl(input_to_pre, n); }
const TensorDecl* PrePost::findInputToBody(const std::string& n) const { return findDecl(input_to_body, n); }
const TensorDecl* PrePost::findOutputFromBody(const std::string& n) const { return findDecl(output_from_body, n); }
const TensorDecl* PrePost::findOutputFromPost(const std::string& n) const { return findDecl(output_from_post, n); }

namespace {

[[noreturn]] void bad(const std::string& msg) { throwError(ErrorCode::kInvalidInput, msg); }

size_t orderRank(Order o) { return o == Order::kC ? 1 : 3; }

// The operation lists of §5.3.1 and §5.4.1, in their required order.
const std::vector<OpKind>& stageOps(Stage s) {
  static const std::vector<OpKind> pre = {OpKind::kTranspose,    OpKind::kConvYuv2Rgb,   OpKind::kConvX2Gray,
                                          OpKind::kCrop,         OpKind::kResizeHwc,     OpKind::kCastAnyToFp16,
                                          OpKind::kNormalize,    OpKind::kMemcopy};
  static const std::vector<OpKind> post = {OpKind::kTranspose, OpKind::kSoftmax, OpKind::kCastFp16Fp32,
                                           OpKind::kArgMinMax, OpKind::kMemcopy};
  return s == Stage::kPre ? pre : post;
}

std::string stageOpList(Stage s) {
  std::vector<std::string_view> n;
  for (OpKind k : stageOps(s)) n.push_back(toString(k));
  return fmt::format("{}", fmt::join(n, ", "));
}

std::string_view section(Stage s) { return s == Stage::kPre ? "§5.3" : "§5.4"; }

// ---------------------------------------------------------------------------------------------------------------
// YAML access. Values are copied out of the document (never references into temporaries).

std::string nodeKind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Map: return "a mapping";
    default: return "undefined";
  }
}

/// A mapping's entries by key, checking that keys are scalars, unique and among `allowed`.
/// `legacy` names keys that belong to the other format (for a hint).
std::map<std::string, YAML::Node> mapEntries(const YAML::Node& m, const std::string& what,
                                             const std::vector<std::string>& allowed,
                                             const std::vector<std::string>& legacy = {}, bool full_format = false) {
  std::map<std::string, YAML::Node> out;
  if (m.IsNull()) return out;
  if (!m.IsMap()) bad(fmt::format("{} must be a mapping, got {}", what, nodeKind(m)));
  for (auto it = m.begin(); it != m.end(); ++it) {
    YAML::Node k = it->first;
    YAML::Node v = it->second;
    if (!k.IsScalar()) bad(fmt::format("{}: keys must be plain names", what));
    std::string key = k.Scalar();
    if (out.count(key)) bad(fmt::format("{}: key '{}' is given twice", what, key));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      if (std::find(legacy.begin(), legacy.end(), key) != legacy.end()) {
        if (full_format)
          bad(fmt::format("{}: key '{}' is not part of the full format (Appendix A); allowed keys: {}", what, key,
                          fmt::join(allowed, ", ")));
        bad(fmt::format("{}: key '{}' belongs to the legacy full format of Appendix A (-PrePostFULL); the current "
                        "format (§5.2) allows: {}",
                        what, key, fmt::join(allowed, ", ")));
      }
      bad(fmt::format("{}: unknown key '{}' (allowed: {})", what, key, fmt::join(allowed, ", ")));
    }
    out.emplace(key, v);
  }
  return out;
}

std::string scalarString(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) bad(fmt::format("{} must be a string, got {}", what, nodeKind(n)));
  return n.Scalar();
}

int64_t scalarInt(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) bad(fmt::format("{} must be an integer, got {}", what, nodeKind(n)));
  std::string s = n.Scalar();
  if (s == "true" || s == "True") return 1;
  if (s == "false" || s == "False") return 0;
  std::string_view v = s;
  if (!v.empty() && v[0] == '+') v.remove_prefix(1);
  int64_t r = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), r);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    bad(fmt::format("{} must be an integer, got '{}'", what, s));
  return r;
}

double scalarDouble(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) bad(fmt::format("{} must be a number, got {}", what, nodeKind(n)));
  std::string s = n.Scalar();
  std::string_view v = s;
  if (!v.empty() && v[0] == '+') v.remove_prefix(1);
  double r = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), r);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    bad(fmt::format("{} must be a number, got '{}'", what, s));
  return r;
}

std::vector<int64_t> intList(const YAML::Node& n, const std::string& what) {
  if (!n.IsSequence()) bad(fmt::format("{} must be a list of integers, got {}", what, nodeKind(n)));
  std::vector<int64_t> r;
  for (size_t i = 0; i < n.size(); ++i) {
    YAML::Node e = n[i];
    r.push_back(scalarInt(e, fmt::format("{}[{}]", what, i)));
  }
  return r;
}

std::vector<std::string> strList(const YAML::Node& n, const std::string& what) {
  if (!n.IsSequence()) bad(fmt::format("{} must be a list of strings, got {}", what, nodeKind(n)));
  std::vector<std::string> r;
  for (size_t i = 0; i < n.size(); ++i) {
    YAML::Node e = n[i];
    r.push_back(scalarString(e, fmt::format("{}[{}]", what, i)));
  }
  return r;
}

template <typename E>
E enumValue(const std::string& s, const std::vector<std::pair<std::string, E>>& table, const std::string& what) {
  for (auto& [name, v] : table)
    if (s == name) return v;
  std::vector<std::string> names;
  for (auto& [name, v] : table) names.push_back(name);
  bad(fmt::format("{}: '{}' is not allowed here (selectable values: {})", what, s, fmt::join(names, " | ")));
}

const std::vector<std::pair<std::string, Order>> kAllOrders = {{"HWC", Order::kHWC}, {"CHW", Order::kCHW}, {"C", Order::kC}};
const std::vector<std::pair<std::string, ElemType>> kAllTypes = {
    {"uint8", ElemType::kU8}, {"uint16", ElemType::kU16}, {"fp16", ElemType::kF16}, {"fp32", ElemType::kF32}};

template <typename E>
std::vector<std::pair<std::string, E>> subset(const std::vector<std::pair<std::string, E>>& all, std::vector<E> keep) {
  std::vector<std::pair<std::string, E>> r;
  for (E k : keep)
    for (auto& p : all)
      if (p.second == k) r.push_back(p);
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// Boundary tensors (§5.2)

struct DeclSpec {
  const char* key;
  std::vector<Order> orders;
  std::vector<ImageFormat> formats;  // empty: no format key
  std::vector<ElemType> types;
  bool shape_post;
};

const DeclSpec kInputToPre{"input_to_pre",
                           {Order::kHWC, Order::kCHW},
                           {ImageFormat::kRGB, ImageFormat::kBGR, ImageFormat::kYUY2, ImageFormat::kGray},
                           {ElemType::kU8, ElemType::kF16, ElemType::kF32},
                           false};
const DeclSpec kInputToBody{
    "input_to_body", {Order::kHWC}, {ImageFormat::kRGB, ImageFormat::kBGR, ImageFormat::kGray}, {ElemType::kF16}, false};
const DeclSpec kOutputFromBody{"output_from_body", {Order::kHWC, Order::kC}, {}, {ElemType::kF16}, true};
// uint16 is accepted too although §5.2 lists fp16 | fp32 | uint8: argminmax with DOUT_TYPE 1 produces it.
const DeclSpec kOutputFromPost{"output_from_post",
                               {Order::kHWC, Order::kCHW, Order::kC},
                               {},
                               {ElemType::kF16, ElemType::kF32, ElemType::kU8, ElemType::kU16},
                               false};

const std::vector<std::pair<std::string, ImageFormat>> kAllFormats = {
    {"RGB", ImageFormat::kRGB}, {"BGR", ImageFormat::kBGR}, {"YUY2", ImageFormat::kYUY2}, {"GRAY", ImageFormat::kGray}};

void checkShape(const std::vector<int64_t>& shape, Order order, const std::string& what) {
  if (shape.size() != orderRank(order))
    bad(fmt::format("{}: shape {} has {} dimension(s) but order {} needs {}", what, shapeStr(shape), shape.size(),
                    toString(order), orderRank(order)));
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 1) bad(fmt::format("{}: shape {} has a dimension < 1", what, shapeStr(shape)));
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 48))
      bad(fmt::format("{}: shape {} is too large", what, shapeStr(shape)));
  }
}

TensorDecl parseDecl(const YAML::Node& n, const DeclSpec& spec, const std::string& path) {
  std::vector<std::string> allowed = {"name", "shape", "order", "type"};
  if (!spec.formats.empty()) allowed.push_back("format");
  if (spec.shape_post) allowed.push_back("shape_post");
  auto e = mapEntries(n, path, allowed);
  for (auto& k : allowed)
    if (k != "shape_post" && !e.count(k))
      bad(fmt::format("{}: key '{}' is required (§5.2 {})", path, k, spec.key));
  TensorDecl d;
  d.name = scalarString(e["name"], path + ".name");
  if (d.name.empty()) bad(fmt::format("{}.name must not be empty", path));
  d.order = enumValue(scalarString(e["order"], path + ".order"), subset(kAllOrders, spec.orders), path + ".order");
  d.type = enumValue(scalarString(e["type"], path + ".type"), subset(kAllTypes, spec.types), path + ".type");
  if (!spec.formats.empty())
    d.format = enumValue(scalarString(e["format"], path + ".format"), subset(kAllFormats, spec.formats), path + ".format");
  d.shape = intList(e["shape"], path + ".shape");
  checkShape(d.shape, d.order, path + ".shape");
  if (d.format == ImageFormat::kYUY2 && d.info().channels() != 2)
    bad(fmt::format("{}.shape: {} has {} channels; in case of YUY2, only 2 channels can be specified (§5.2)", path,
                    shapeStr(d.shape), d.info().channels()));
  if (e.count("shape_post")) {
    std::string sp = path + ".shape_post";
    YAML::Node list = e["shape_post"];
    if (!list.IsSequence() || list.size() == 0)
      bad(fmt::format("{} must be a non-empty list of {{name, shape}} (§5.2)", sp));
    int64_t total_c = 0;
    std::set<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string ip = fmt::format("{}[{}]", sp, i);
      YAML::Node item = list[i];
      auto pe = mapEntries(item, ip, {"name", "shape"});
      if (!pe.count("name") || !pe.count("shape")) bad(fmt::format("{}: keys 'name' and 'shape' are required", ip));
      ShapePost p;
      p.name = scalarString(pe["name"], ip + ".name");
      if (p.name.empty()) bad(fmt::format("{}.name must not be empty", ip));
      if (!names.insert(p.name).second) bad(fmt::format("{}: name '{}' is used twice", ip, p.name));
      p.shape = intList(pe["shape"], ip + ".shape");
      checkShape(p.shape, d.order, ip + ".shape");
      TensorInfo pi{p.shape, d.order, ImageFormat::kNone, d.type};
      if (pi.height() != d.info().height() || pi.width() != d.info().width())
        bad(fmt::format("{}.shape: {} must equal the output's shape {} in every dimension but the channel (shape_post "
                        "splits one output along C)",
                        ip, shapeStr(p.shape), shapeStr(d.shape)));
      total_c += pi.channels();
      d.shape_post.push_back(p);
    }
    if (total_c != d.info().channels())
      bad(fmt::format("{}: the pieces' channels add up to {}, but output '{}' has {} (shape {})", sp, total_c, d.name,
                      d.info().channels(), shapeStr(d.shape)));
  }
  return d;
}

std::vector<TensorDecl> parseDecls(const YAML::Node& n, const DeclSpec& spec) {
  std::string key = spec.key;
  if (!n.IsSequence() || n.size() == 0)
    bad(fmt::format("{} must be a non-empty sequence of mappings (§5.1: describe the value of each key with "
                    "sequence), got {}",
                    key, nodeKind(n)));
  std::vector<TensorDecl> r;
  for (size_t i = 0; i < n.size(); ++i) {
    YAML::Node item = n[i];
    TensorDecl d = parseDecl(item, spec, fmt::format("{}[{}]", key, i));
    if (findDecl(r, d.name)) bad(fmt::format("{}[{}]: name '{}' is used twice in {}", key, i, d.name, key));
    r.push_back(std::move(d));
  }
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// Operation parameters (§5.3.2 / §5.4.2)

class ParamReader {
 public:
  ParamReader(const YAML::Node& param, OpKind kind, Stage stage, std::string path)
      : kind_(kind), stage_(stage), path_(std::move(path)) {
    if (param.IsNull() || !param.IsDefined()) return;
    if (!param.IsMap()) bad(fmt::format("{} must be a mapping of parameter names to values, got {}", path_, nodeKind(param)));
    for (auto it = param.begin(); it != param.end(); ++it) {
      YAML::Node k = it->first;
      YAML::Node v = it->second;
      if (!k.IsScalar()) bad(fmt::format("{}: parameter names must be plain names", path_));
      if (values_.count(k.Scalar())) bad(fmt::format("{}: parameter '{}' is given twice", path_, k.Scalar()));
      values_.emplace(k.Scalar(), v);
    }
  }

  bool has(const std::string& k) const { return values_.count(k) != 0; }
  std::string where(const std::string& k) const { return path_ + "." + k; }

  /// The manual's KeyError (§9, shown there for normalize's cof_add / cof_mul).
  [[noreturn]] void keyError(const std::string& k) const {
    bad(fmt::format("{}: KeyError: '{}'\nMissing '{}' parameter in {} '{}'. Refer to the user's manual and add the "
                    "parameter. ({}.2 {})",
                    path_, k, k, toString(stage_), toString(kind_), section(stage_), toString(kind_)));
  }

  const YAML::Node& node(const std::string& k) {
    used_.insert(k);
    return values_.at(k);
  }

  /// An integer parameter from `allowed` (value → description); `def` = the documented default, or none.
  int64_t choice(const std::string& k, const std::vector<std::pair<int64_t, std::string>>& allowed,
                 std::optional<int64_t> def) {
    if (!has(k)) {
      if (!def) keyError(k);
      return *def;
    }
    int64_t v = scalarInt(node(k), where(k));
    for (auto& a : allowed)
      if (a.first == v) return v;
    std::vector<std::string> opts;
    for (auto& a : allowed) opts.push_back(fmt::format("{} (= {})", a.first, a.second));
    bad(fmt::format("{}: {} is not a valid {} for {} {} ({}.2 {}: {})", where(k), v, k, toString(stage_), toString(kind_),
                    section(stage_), toString(kind_), fmt::join(opts, " or ")));
  }

  int64_t integer(const std::string& k) {
    if (!has(k)) keyError(k);
    return scalarInt(node(k), where(k));
  }

  std::vector<int64_t> ints(const std::string& k) {
    if (!has(k)) keyError(k);
    return intList(node(k), where(k));
  }

  std::vector<double> floats(const std::string& k) {
    if (!has(k)) keyError(k);
    const YAML::Node& n = node(k);
    if (!n.IsSequence() || n.size() == 0) bad(fmt::format("{} must be a non-empty list of numbers", where(k)));
    std::vector<double> r;
    for (size_t i = 0; i < n.size(); ++i) {
      YAML::Node e = n[i];
      r.push_back(scalarDouble(e, fmt::format("{}[{}]", where(k), i)));
    }
    return r;
  }

  /// Rejects parameters the operation does not have.
  void finish(const std::vector<std::string>& known) const {
    for (auto& [k, v] : values_)
      if (!used_.count(k))
        bad(fmt::format("{}: unknown parameter '{}' for {} {} (parameters: {}; {}.2 {})", path_, k, toString(stage_),
                        toString(kind_), fmt::join(known, ", "), section(stage_), toString(kind_)));
  }

 private:
  OpKind kind_;
  Stage stage_;
  std::string path_;
  std::map<std::string, YAML::Node> values_;
  std::set<std::string> used_;
};

std::pair<int64_t, int64_t> hw(ParamReader& r, const std::string& k, const char* what) {
  std::vector<int64_t> v = r.ints(k);
  if (v.size() != 2) bad(fmt::format("{}: {} must be [{} height, {} width], got {}", r.where(k), k, what, what, shapeStr(v)));
  if (v[0] < 1 || v[1] < 1) bad(fmt::format("{}: sizes must be >= 1, got {}", r.where(k), shapeStr(v)));
  return {v[0], v[1]};
}

OpParams parseParams(OpKind kind, Stage stage, const YAML::Node& param, const std::string& path) {
  ParamReader r(param, kind, stage, path);
  switch (kind) {
    case OpKind::kTranspose: {
      TransposeParams p;
      // Each stage allows exactly one value (§5.3.2 / §5.4.2), used when the parameter is left out.
      if (stage == Stage::kPre) {
        p.word_size = r.choice("WORD_SIZE", {{0, "\"1Byte\""}}, 0);
        p.is_chw2hwc = r.choice("IS_CHW2HWC", {{1, "\"CHW to HWC\""}}, 1);
      } else {
        p.word_size = r.choice("WORD_SIZE", {{1, "\"2Byte\""}}, 1);
        p.is_chw2hwc = r.choice("IS_CHW2HWC", {{0, "\"HWC to CHW\""}}, 0);
      }
      r.finish({"WORD_SIZE", "IS_CHW2HWC"});
      return p;
    }
    case OpKind::kConvYuv2Rgb: {
      ConvYuv2RgbParams p;
      std::vector<std::pair<int64_t, std::string>> codes;
      for (int32_t c : {0, 1, 2, 3, 4096, 4097, 4098, 4099, 4100, 4101, 4102, 4103, 4104, 4105})
        codes.push_back({c, fmt::format("\"{}\"", toString(static_cast<YuvFormat>(c)))});
      p.din_yuv_format = static_cast<YuvFormat>(r.choice("DIN_YUV_FORMAT", codes, 0));
      p.dout_rgb_format = static_cast<RgbFormat>(r.choice("DOUT_RGB_FORMAT", {{0, "\"RGB\""}, {1, "\"BGR\""}}, 0));
      r.finish({"DIN_YUV_FORMAT", "DOUT_RGB_FORMAT"});
      return p;
    }
    case OpKind::kConvX2Gray: {
      // The parameter is DIN_FORMAT; the manual's own example spells it DIN_YUV_FORMAT, accepted as well.
      ConvX2GrayParams p;
      if (r.has("DIN_FORMAT") && r.has("DIN_YUV_FORMAT"))
        bad(fmt::format("{}: give DIN_FORMAT or DIN_YUV_FORMAT (the spelling of the manual's example), not both", path));
      std::string k = r.has("DIN_YUV_FORMAT") ? "DIN_YUV_FORMAT" : "DIN_FORMAT";
      p.din_format = static_cast<GrayInput>(r.choice(k,
                                                     {{0, "\"Y0UY1V\"(\"YUY2\")"},
                                                      {1, "\"Y0VY1U\""},
                                                      {2, "\"UY0VY1\""},
                                                      {3, "\"VUY1Y0\""},
                                                      {4096, "\"RGB24\""},
                                                      {4097, "\"BGR24\""}},
                                                     std::nullopt));
      r.finish({"DIN_FORMAT"});
      return p;
    }
    case OpKind::kCrop: {
      static const std::vector<std::string> all = {"CROP_POS_X", "CROP_POS_Y", "shape_out", "DATA_TYPE", "DATA_FORMAT"};
      std::vector<std::string> missing;
      for (auto& k : all)
        if (!r.has(k)) missing.push_back(k);
      if (!missing.empty())
        bad(fmt::format(
            "{}: [Error Y03] Error in prepost yaml file: Incomplete param(s) definition in crop preprocess operation.\n"
            "Please make sure the crop operation has all of the params listed below (case sensitive):\n{}\n\n"
            "Please add the param(s) below to crop preprocess operation in prepost file:\n{}\n"
            "Make sure that all of necessary params are defined when using crop in preprocessing operation. For more "
            "details about crop params definition, refer to 5-3-2 Preprocessing Parameters",
            path, fmt::join(all, "\n"), fmt::join(missing, "\n")));
      CropParams p;
      p.pos_x = r.integer("CROP_POS_X");
      p.pos_y = r.integer("CROP_POS_Y");
      if (p.pos_x < 0 || p.pos_y < 0)
        bad(fmt::format("{}: CROP_POS_X and CROP_POS_Y must be >= 0, got {} and {}", path, p.pos_x, p.pos_y));
      std::tie(p.out_height, p.out_width) = hw(r, "shape_out", "cropped");
      p.data_type = r.choice("DATA_TYPE", {{0, "1 byte (uint8)"}, {1, "2 bytes (uint16, fp16)"}}, std::nullopt);
      p.data_format = r.choice("DATA_FORMAT", {{0, "\"HWC\""}, {1, "CHW"}}, std::nullopt) ? Order::kCHW : Order::kHWC;
      r.finish(all);
      return p;
    }
    case OpKind::kResizeHwc: {
      ResizeHwcParams p;
      p.alg = static_cast<ResizeAlg>(r.choice("RESIZE_ALG", {{0, "\"Nearest\""}, {1, "\"Bilinear\""}}, 0));
      p.data_type = r.choice("DATA_TYPE", {{0, "\"uint8\""}, {1, "\"fp16\""}}, 0) ? ElemType::kF16 : ElemType::kU8;
      std::tie(p.out_height, p.out_width) = hw(r, "shape_out", "resized");
      r.finish({"RESIZE_ALG", "DATA_TYPE", "shape_out"});
      return p;
    }
    case OpKind::kCastAnyToFp16: {
      CastAnyToFp16Params p;
      int64_t v = r.choice("DIN_FORMAT", {{0, "\"uint8\""}, {1, "\"fp16\""}, {2, "\"fp32\""}}, 0);
      p.din_format = v == 0 ? ElemType::kU8 : v == 1 ? ElemType::kF16 : ElemType::kF32;
      r.finish({"DIN_FORMAT"});
      return p;
    }
    case OpKind::kNormalize: {
      NormalizeParams p;
      p.swap_rb = r.choice("DOUT_RGB_ORDER", {{0, "output RGB order = input RGB order"}, {1, "R and B swapped"}},
                           std::nullopt) == 1;
      p.cof_add = r.floats("cof_add");
      p.cof_mul = r.floats("cof_mul");
      r.finish({"DOUT_RGB_ORDER", "cof_add", "cof_mul"});
      return p;
    }
    case OpKind::kMemcopy: {
      MemcopyParams p;
      p.word_size = r.choice("WORD_SIZE", {{2, "number of bytes per word = 2; the value is fixed at 2"}}, 2);
      r.finish({"WORD_SIZE"});
      return p;
    }
    case OpKind::kSoftmax: {
      SoftmaxParams p;
      p.dout_format = r.choice("DOUT_FORMAT", {{0, "\"FP16\""}, {1, "\"FP32\""}}, 0) ? ElemType::kF32 : ElemType::kF16;
      r.finish({"DOUT_FORMAT"});
      return p;
    }
    case OpKind::kCastFp16Fp32: {
      CastFp16Fp32Params p;
      p.mode = static_cast<CastMode>(r.choice("CAST_MODE", {{0, "\"FP16 to FP32\""}, {1, "\"FP32 to FP16\""}}, 0));
      r.finish({"CAST_MODE"});
      return p;
    }
    case OpKind::kArgMinMax: {
      ArgMinMaxParams p;
      p.din_format = r.choice("DIN_FORMAT", {{0, "\"HWC\""}, {1, "\"CHW\""}}, std::nullopt) ? Order::kCHW : Order::kHWC;
      p.dout_type = r.choice("DOUT_TYPE", {{0, "\"uint8\""}, {1, "uint16"}}, std::nullopt) ? ElemType::kU16 : ElemType::kU8;
      p.axis = static_cast<ArgAxis>(r.choice("AXIS", {{0, "\"ch\""}, {1, "\"width\""}, {2, "\"height\""}}, std::nullopt));
      p.mode = static_cast<ArgMode>(r.choice("ARG_MODE", {{0, "\"ARGMAX\""}, {1, "\"ARGMIN\""}}, std::nullopt));
      r.finish({"DIN_FORMAT", "DOUT_TYPE", "AXIS", "ARG_MODE"});
      return p;
    }
  }
  bad("unknown operation");
}

// ---------------------------------------------------------------------------------------------------------------
// Operations: input checks, limitations, output (applyOperation)

std::string listTypes(const std::vector<ElemType>& v) {
  std::vector<std::string_view> n;
  for (ElemType t : v) n.push_back(toString(t));
  return fmt::format("{}", fmt::join(n, " or "));
}

void requireType(Stage s, OpKind k, const TensorInfo& in, const std::vector<ElemType>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), in.type) == allowed.end())
    bad(fmt::format("{} takes {} input but receives {} ({}.1: the format of the output data of the previous operation "
                    "and the format of the input data to the next operation must match)",
                    toString(k), listTypes(allowed), toString(in.type), section(s)));
}

void requireOrder(Stage s, OpKind k, const TensorInfo& in, const std::vector<Order>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), in.order) == allowed.end()) {
    std::vector<std::string_view> n;
    for (Order o : allowed) n.push_back(toString(o));
    bad(fmt::format("{} takes {} input but receives {} data of shape {} ({}.1: the dimension order of the output data "
                    "of the previous operation and the dimension order of the input data to the next operation must "
                    "match)",
                    toString(k), fmt::join(n, " or "), toString(in.order), shapeStr(in.shape), section(s)));
  }
}

[[noreturn]] void limitation(Stage s, OpKind k, const std::string& rule, const std::string& got) {
  bad(fmt::format("{} limitation violated: {} ({}; {}.2 {})", toString(k), rule, got, section(s), toString(k)));
}

TensorInfo withShapeHWC(const TensorInfo& in, int64_t h, int64_t w, int64_t c) {
  TensorInfo o = in;
  o.order = Order::kHWC;
  o.shape = {h, w, c};
  return o;
}

}  // namespace

TensorInfo applyOperation(Stage stage, const Operation& op, const TensorInfo& in) {
  const OpKind k = op.kind;
  if (in.shape.size() != orderRank(in.order))
    throwError(ErrorCode::kInvalidArgument, fmt::format("{}: input shape {} does not fit order {}", toString(k),
                                                        shapeStr(in.shape), toString(in.order)));
  const int64_t H = in.height(), W = in.width(), C = in.channels();
  auto limit = [&](bool ok, const std::string& rule, const std::string& got) {
    if (!ok) limitation(stage, k, rule, got);
  };
  auto shapeGot = [&] {
    return fmt::format("shape_in {} {}: height {}, width {}, ch {}", shapeStr(in.shape), toString(in.order), H, W, C);
  };
  switch (k) {
    case OpKind::kTranspose: {
      if (stage == Stage::kPre) {
        requireType(stage, k, in, {ElemType::kU8});
        requireOrder(stage, k, in, {Order::kCHW});
      } else {
        requireType(stage, k, in, {ElemType::kF16});
        requireOrder(stage, k, in, {Order::kHWC});
      }
      limit(W <= 65535 && H <= 65535 && C <= 65535, "shape_in: width <= 65535, height <= 65535, ch <= 65535", shapeGot());
      TensorInfo o = in;
      o.order = stage == Stage::kPre ? Order::kHWC : Order::kCHW;
      o.shape = stage == Stage::kPre ? std::vector<int64_t>{H, W, C} : std::vector<int64_t>{C, H, W};
      return o;
    }
    case OpKind::kConvYuv2Rgb: {
      const auto& p = std::get<ConvYuv2RgbParams>(op.params);
      requireType(stage, k, in, {ElemType::kU8});
      requireOrder(stage, k, in, {Order::kHWC});
      ImageFormat need = requiredInputFormat(p.din_yuv_format);
      if (in.format != need)
        bad(fmt::format("conv_yuv2rgb: DIN_YUV_FORMAT {} (\"{}\") needs format {} in input_to_pre, but the input is {} "
                        "(§5.3.2 conv_yuv2rgb table)",
                        static_cast<int>(p.din_yuv_format), toString(p.din_yuv_format), toString(need), toString(in.format)));
      if (need == ImageFormat::kYUY2 && C != 2)
        bad(fmt::format("conv_yuv2rgb: YUY2 input must have 2 channels, got shape {} (§5.2)", shapeStr(in.shape)));
      limit(W % 2 == 0, "shape_in: width % 2 == 0", shapeGot());
      limit(W >= 4 && W <= 65535, "shape_in: 4 <= width <= 65535", shapeGot());
      limit(H >= 5 && H <= 65535, "shape_in: 5 <= height <= 65535", shapeGot());
      TensorInfo o = withShapeHWC(in, H, W, 3);
      o.format = p.dout_rgb_format == RgbFormat::kBGR ? ImageFormat::kBGR : ImageFormat::kRGB;
      return o;
    }
    case OpKind::kConvX2Gray: {
      const auto& p = std::get<ConvX2GrayParams>(op.params);
      requireType(stage, k, in, {ElemType::kU8});
      requireOrder(stage, k, in, {Order::kHWC});
      bool rgb = p.din_format == GrayInput::kRGB24 || p.din_format == GrayInput::kBGR24;
      ImageFormat need = p.din_format == GrayInput::kRGB24   ? ImageFormat::kRGB
                         : p.din_format == GrayInput::kBGR24 ? ImageFormat::kBGR
                                                             : ImageFormat::kYUY2;
      if (in.format != need)
        bad(fmt::format("conv_x2gray: DIN_FORMAT {} takes {} input, but the input is {} (§5.3.2 conv_x2gray)",
                        static_cast<int>(p.din_format), toString(need), toString(in.format)));
      if (!rgb && C != 2)
        bad(fmt::format("conv_x2gray: YUY2 input must have 2 channels, got shape {} (§5.2)", shapeStr(in.shape)));
      if (rgb && C != 3)
        bad(fmt::format("conv_x2gray: DIN_FORMAT {} (RGB24/BGR24) takes 3 channels, got shape {}",
                        static_cast<int>(p.din_format), shapeStr(in.shape)));
      limit(rgb || W % 2 == 0, "shape_in: width % 2 == 0 when DIN_FORMAT != 4096 or 4097", shapeGot());
      TensorInfo o = withShapeHWC(in, H, W, 1);
      o.format = ImageFormat::kGray;
      return o;
    }
    case OpKind::kCrop: {
      const auto& p = std::get<CropParams>(op.params);
      requireType(stage, k, in, {ElemType::kU8, ElemType::kF16});
      requireOrder(stage, k, in, {Order::kHWC, Order::kCHW});
      if ((p.data_type == 0) != (in.type == ElemType::kU8))
        bad(fmt::format("crop: DATA_TYPE {} ({}) does not match the input type {} (§5.3.2 crop: 0 = 1 byte (uint8), "
                        "1 = 2 bytes (uint16, fp16))",
                        p.data_type, p.data_type ? "2 bytes" : "1 byte", toString(in.type)));
      if (p.data_format != in.order)
        bad(fmt::format("crop: DATA_FORMAT {} (\"{}\") does not match the input order {} (§5.3.2 crop)",
                        p.data_format == Order::kCHW ? 1 : 0, toString(p.data_format), toString(in.order)));
      limit(p.pos_x <= W - 1, "CROP_POS_X <= width of shape_in - 1", fmt::format("CROP_POS_X {}, {}", p.pos_x, shapeGot()));
      limit(p.pos_y <= H - 1, "CROP_POS_Y <= height of shape_in - 1", fmt::format("CROP_POS_Y {}, {}", p.pos_y, shapeGot()));
      // The figure of §5.3.2 puts the cropped image inside the input; npuc requires it.
      limit(p.pos_x + p.out_width <= W && p.pos_y + p.out_height <= H,
            "the cropped image must lie inside the input: CROP_POS_X + cropped width <= width of shape_in and CROP_POS_Y "
            "+ cropped height <= height of shape_in",
            fmt::format("CROP_POS_X {}, CROP_POS_Y {}, shape_out [{}, {}], {}", p.pos_x, p.pos_y, p.out_height,
                        p.out_width, shapeGot()));
      // §5.3.1: the output order of crop is HWC, whatever DATA_FORMAT (ch == ch of shape_in).
      return withShapeHWC(in, p.out_height, p.out_width, C);
    }
    case OpKind::kResizeHwc: {
      const auto& p = std::get<ResizeHwcParams>(op.params);
      requireType(stage, k, in, {ElemType::kU8, ElemType::kF16});
      requireOrder(stage, k, in, {Order::kHWC});
      if (p.data_type != in.type)
        bad(fmt::format("resize_hwc: DATA_TYPE {} (\"{}\") does not match the input type {} (§5.3.2 resize_hwc)",
                        p.data_type == ElemType::kF16 ? 1 : 0, toString(p.data_type), toString(in.type)));
      limit(W > 2 && H > 2, "shape_in: (width > 2) && (height > 2)", shapeGot());
      limit(C <= 4096, "shape_in: ch <= 4096", shapeGot());
      limit(p.out_width > 2 && p.out_height > 2, "shape_out: (width > 2) && (height > 2)",
            fmt::format("shape_out [{}, {}]", p.out_height, p.out_width));
      return withShapeHWC(in, p.out_height, p.out_width, C);
    }
    case OpKind::kCastAnyToFp16: {
      const auto& p = std::get<CastAnyToFp16Params>(op.params);
      requireType(stage, k, in, {ElemType::kU8, ElemType::kF16, ElemType::kF32});
      requireOrder(stage, k, in, {Order::kHWC});
      if (p.din_format != in.type)
        bad(fmt::format("cast_any_to_fp16: DIN_FORMAT says {} but the input type is {} (§5.3.2 cast_any_to_fp16)",
                        toString(p.din_format), toString(in.type)));
      limit(W * C < 0xFFFFFFFFLL, "shape_in: (width * ch) < 32'hFFFF_FFFF", shapeGot());
      TensorInfo o = in;
      o.type = ElemType::kF16;
      return o;
    }
    case OpKind::kNormalize: {
      const auto& p = std::get<NormalizeParams>(op.params);
      requireType(stage, k, in, {ElemType::kF16});
      requireOrder(stage, k, in, {Order::kHWC});
      if (static_cast<int64_t>(p.cof_add.size()) != C || static_cast<int64_t>(p.cof_mul.size()) != C)
        bad(fmt::format("normalize: cof_add and cof_mul need one value per channel ({}), got {} and {}", C,
                        p.cof_add.size(), p.cof_mul.size()));
      // The result is float16: a coefficient beyond its range (or not finite) makes every output infinite.
      for (auto [name, v] : {std::pair{"cof_add", &p.cof_add}, {"cof_mul", &p.cof_mul}})
        for (size_t c = 0; c < v->size(); ++c)
          if (!std::isfinite((*v)[c]) || std::fabs((*v)[c]) > 65504.0f)
            bad(fmt::format("normalize: {}[{}] = {} is outside the float16 range (±65504) the normalized image is stored in", name,
                            c, (*v)[c]));
      TensorInfo o = in;
      if (p.swap_rb) {
        if (in.format != ImageFormat::kRGB && in.format != ImageFormat::kBGR)
          bad(fmt::format("normalize: DOUT_RGB_ORDER 1 swaps the R and B channels of RGB or BGR input, but the input "
                          "format is {} (§5.3.2 normalize)",
                          toString(in.format)));
        o.format = in.format == ImageFormat::kRGB ? ImageFormat::kBGR : ImageFormat::kRGB;
      }
      return o;
    }
    case OpKind::kMemcopy: {
      requireType(stage, k, in, {ElemType::kF16});
      return in;
    }
    case OpKind::kSoftmax: {
      const auto& p = std::get<SoftmaxParams>(op.params);
      requireType(stage, k, in, {ElemType::kF16});
      requireOrder(stage, k, in, {Order::kC});
      limit(C >= 1 && C <= 16384, "shape_in: 1 <= ch <= 16384", shapeGot());
      TensorInfo o = in;
      o.type = p.dout_format;
      return o;
    }
    case OpKind::kCastFp16Fp32: {
      const auto& p = std::get<CastFp16Fp32Params>(op.params);
      bool up = p.mode == CastMode::kFp16ToFp32;
      if (in.type != (up ? ElemType::kF16 : ElemType::kF32))
        bad(fmt::format("cast_fp16_fp32: CAST_MODE {} (\"{}\") takes {} input but receives {} (§5.4.1: the format of "
                        "the output data of the previous operation and the format of the input data to the next "
                        "operation must match)",
                        up ? 0 : 1, up ? "FP16 to FP32" : "FP32 to FP16", up ? "fp16" : "fp32", toString(in.type)));
      limit(in.elements() <= 0xFFFFFFFFLL, "shape_in: (width * height * ch) <= 32'hFFFF_FFFF", shapeGot());
      TensorInfo o = in;
      o.type = up ? ElemType::kF32 : ElemType::kF16;
      return o;
    }
    case OpKind::kArgMinMax: {
      const auto& p = std::get<ArgMinMaxParams>(op.params);
      requireType(stage, k, in, {ElemType::kF16});
      requireOrder(stage, k, in, {Order::kHWC, Order::kCHW});
      if (p.din_format != in.order)
        bad(fmt::format("argminmax: DIN_FORMAT {} (\"{}\") does not match the input order {} (§5.4.2 argminmax)",
                        p.din_format == Order::kCHW ? 1 : 0, toString(p.din_format), toString(in.order)));
      TensorInfo o = in;
      o.type = p.dout_type;
      size_t axis_index = 0;
      switch (p.axis) {
        case ArgAxis::kChannel:
          limit(C <= 256, "shape_in: AXIS == 0 && ch <= 256", shapeGot());
          axis_index = in.order == Order::kHWC ? 2 : 0;
          break;
        case ArgAxis::kWidth:
          limit(W <= 256, "shape_in: AXIS == 1 && width <= 256", shapeGot());
          axis_index = in.order == Order::kHWC ? 1 : 2;
          break;
        case ArgAxis::kHeight:
          limit(H <= 256, "shape_in: AXIS == 2 && height <= 256", shapeGot());
          axis_index = in.order == Order::kHWC ? 0 : 1;
          break;
      }
      o.shape[axis_index] = 1;  // the reduced axis is kept with size 1
      return o;
    }
  }
  bad("unknown operation");
}

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Processes (preprocess / postprocess entries), legacy declarations

const std::vector<std::string> kLegacyKeys = {"shape_in", "shape_out", "dtype_in", "dtype_out", "dorder_in", "dorder_out"};

/// The per-entry / per-operation declarations of the full format (Appendix A), each a list of one.
struct LegacyIo {
  std::vector<int64_t> shape_in, shape_out;
  ElemType dtype_in{}, dtype_out{};
  Order dorder_in{}, dorder_out{};
};

struct ParsedProcess {
  Process p;
  std::string path;
  std::vector<std::string> op_paths;
  std::optional<LegacyIo> io;
  std::vector<LegacyIo> op_io;
};

LegacyIo parseLegacyIo(std::map<std::string, YAML::Node>& e, const std::string& path,
                       const std::vector<ElemType>& in_types, const std::vector<ElemType>& out_types,
                       const std::vector<Order>& in_orders, const std::vector<Order>& out_orders) {
  for (auto& k : kLegacyKeys)
    if (!e.count(k)) bad(fmt::format("{}: key '{}' is required in the full format (Appendix A.2)", path, k));
  auto one = [&](const std::string& k) {
    YAML::Node n = e[k];
    if (!n.IsSequence() || n.size() != 1)
      bad(fmt::format("{}.{} must be a list of one element (Appendix A.2: one input, one output)", path, k));
    YAML::Node v = n[0];
    return v;
  };
  LegacyIo io;
  io.shape_in = intList(one("shape_in"), path + ".shape_in[0]");
  io.shape_out = intList(one("shape_out"), path + ".shape_out[0]");
  io.dtype_in =
      enumValue(scalarString(one("dtype_in"), path + ".dtype_in[0]"), subset(kAllTypes, in_types), path + ".dtype_in[0]");
  io.dtype_out =
      enumValue(scalarString(one("dtype_out"), path + ".dtype_out[0]"), subset(kAllTypes, out_types), path + ".dtype_out[0]");
  io.dorder_in =
      enumValue(scalarString(one("dorder_in"), path + ".dorder_in[0]"), subset(kAllOrders, in_orders), path + ".dorder_in[0]");
  io.dorder_out = enumValue(scalarString(one("dorder_out"), path + ".dorder_out[0]"), subset(kAllOrders, out_orders),
                            path + ".dorder_out[0]");
  return io;
}

const std::vector<ElemType> kAnyType = {ElemType::kU8, ElemType::kU16, ElemType::kF16, ElemType::kF32};
const std::vector<Order> kAnyOrder = {Order::kHWC, Order::kCHW, Order::kC};

void checkLegacy(const std::string& path, const char* side, const std::vector<int64_t>& shape, ElemType type, Order order,
                 const TensorInfo& actual, const std::string& by) {
  const char* s = side;
  if (shape != actual.shape)
    bad(fmt::format("{}.shape_{}: declares {} but {} gives {} (Appendix A: the full format's shapes must agree with the "
                    "operations)",
                    path, s, shapeStr(shape), by, shapeStr(actual.shape)));
  if (type != actual.type)
    bad(fmt::format("{}.dtype_{}: declares {} but {} gives {}", path, s, toString(type), by, toString(actual.type)));
  if (order != actual.order)
    bad(fmt::format("{}.dorder_{}: declares {} but {} gives {}", path, s, toString(order), by, toString(actual.order)));
}

ParsedProcess parseProcess(const YAML::Node& n, Stage stage, const std::string& path, bool full) {
  std::vector<std::string> allowed = {"src", "dest", "operations"};
  if (full) allowed.insert(allowed.end(), kLegacyKeys.begin(), kLegacyKeys.end());
  auto e = mapEntries(n, path, allowed, full ? std::vector<std::string>{} : kLegacyKeys, full);
  for (const char* k : {"src", "dest", "operations"})
    if (!e.count(k))
      bad(fmt::format("{}: key '{}' is required (§5.2 {})", path, k, stage == Stage::kPre ? "preprocess" : "postprocess"));
  ParsedProcess pp;
  pp.path = path;
  auto single = [&](const char* k) {
    std::vector<std::string> v = strList(e[k], path + "." + k);
    if (v.size() != 1)
      bad(fmt::format("{}.{}: must list exactly one name (every {} operation has one input and one output data, {}.1), "
                      "got {}",
                      path, k, stage == Stage::kPre ? "preprocessing" : "postprocessing", section(stage), v.size()));
    return v[0];
  };
  pp.p.src = single("src");
  pp.p.dest = single("dest");
  if (full) {
    if (stage == Stage::kPre)
      pp.io = parseLegacyIo(e, path, {ElemType::kU8, ElemType::kF16, ElemType::kF32}, {ElemType::kF16},
                            {Order::kHWC, Order::kCHW}, {Order::kHWC});
    else
      pp.io = parseLegacyIo(e, path, {ElemType::kF16}, {ElemType::kF16, ElemType::kF32}, {Order::kC, Order::kHWC},
                            {Order::kC, Order::kHWC, Order::kCHW});
  }
  YAML::Node ops = e["operations"];
  if (!ops.IsSequence() || ops.size() == 0)
    bad(fmt::format("{}.operations must be a non-empty list (specify memcopy if no {} is required, {}.1)", path,
                    toString(stage), section(stage)));
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string op_path = fmt::format("{}.operations[{}]", path, i);
    YAML::Node on = ops[i];
    std::vector<std::string> op_allowed = {"op", "param"};
    if (full) op_allowed.insert(op_allowed.end(), kLegacyKeys.begin(), kLegacyKeys.end());
    auto oe = mapEntries(on, op_path, op_allowed, full ? std::vector<std::string>{} : kLegacyKeys, full);
    if (!oe.count("op")) bad(fmt::format("{}: key 'op' (the operation name) is required", op_path));
    std::string name = scalarString(oe["op"], op_path + ".op");
    std::optional<OpKind> kind;
    for (OpKind k : stageOps(stage))
      if (toString(k) == name) kind = k;
    if (!kind) {
      const std::vector<OpKind>& other = stageOps(stage == Stage::kPre ? Stage::kPost : Stage::kPre);
      bool in_other = std::any_of(other.begin(), other.end(), [&](OpKind k) { return toString(k) == name; });
      bad(fmt::format("{}.op: '{}' is {} ({} operations: {}; {}.1)", op_path, name,
                      in_other ? fmt::format("a {} operation, not a {} one",
                                             toString(stage == Stage::kPre ? Stage::kPost : Stage::kPre), toString(stage))
                               : std::string("not a known operation"),
                      toString(stage), stageOpList(stage), section(stage)));
    }
    op_path += fmt::format(" ({})", name);
    Operation op;
    op.kind = *kind;
    YAML::Node param = oe.count("param") ? oe["param"] : YAML::Node();
    op.params = parseParams(*kind, stage, param, op_path + ".param");
    if (full) pp.op_io.push_back(parseLegacyIo(oe, op_path, kAnyType, kAnyType, kAnyOrder, kAnyOrder));
    pp.p.operations.push_back(std::move(op));
    pp.op_paths.push_back(op_path);
  }
  // The order of §5.3.1 / §5.4.1, each operation at most once.
  const std::vector<OpKind>& order = stageOps(stage);
  auto rank = [&](OpKind k) { return std::find(order.begin(), order.end(), k) - order.begin(); };
  const auto& opsv = pp.p.operations;
  for (size_t i = 1; i < opsv.size(); ++i) {
    if (rank(opsv[i].kind) > rank(opsv[i - 1].kind)) continue;
    auto same = [&](const Operation& o) { return o.kind == opsv[i].kind; };
    if (std::any_of(opsv.begin(), opsv.begin() + static_cast<long>(i), same))
      bad(fmt::format("{}: '{}' is given twice; each {} operation is either on (written once) or off ({}.1)", pp.op_paths[i],
                      toString(opsv[i].kind), toString(stage), section(stage)));
    bad(fmt::format("{}: '{}' cannot come after '{}': {} definitions must be specified in the order of the table in "
                    "{}.1 ({})",
                    pp.op_paths[i], toString(opsv[i].kind), toString(opsv[i - 1].kind), toString(stage), section(stage),
                    stageOpList(stage)));
  }
  if (stage == Stage::kPre) {
    auto has = [&](OpKind k) { return std::any_of(opsv.begin(), opsv.end(), [&](const Operation& o) { return o.kind == k; }); };
    if (has(OpKind::kTranspose) && (has(OpKind::kConvYuv2Rgb) || has(OpKind::kConvX2Gray)))
      bad(fmt::format("{}.operations: Can't specify both transpose and conv_yuv2rgb/conv_x2gray (§5.3.1)", path));
    for (size_t i = 0; i < opsv.size(); ++i) {
      if (opsv[i].kind != OpKind::kNormalize) continue;
      bool cast_u8 = std::any_of(opsv.begin(), opsv.begin() + static_cast<long>(i), [](const Operation& o) {
        return o.kind == OpKind::kCastAnyToFp16 && std::get<CastAnyToFp16Params>(o.params).din_format == ElemType::kU8;
      });
      if (!cast_u8)
        bad(fmt::format("{}: \"cast_any_to_fp16\" is required before \"normalize\" operation. The input data format to "
                        "\"cast_any_to_fp16\" must be uint8 only (§5.3.2 normalize)",
                        pp.op_paths[i]));
    }
  }
  return pp;
}

std::vector<ParsedProcess> parseProcesses(const YAML::Node& n, Stage stage, bool full) {
  const char* key = stage == Stage::kPre ? "preprocess" : "postprocess";
  if (!n.IsSequence() || n.size() == 0)
    bad(fmt::format("{} must be a non-empty sequence of mappings (§5.2), got {}", key, nodeKind(n)));
  if (full && stage == Stage::kPre && n.size() != 1)
    bad(fmt::format("preprocess: the full format allows one preprocess entry only (Appendix A.2: the sequence length is "
                    "limited to 1), got {}",
                    n.size()));
  std::vector<ParsedProcess> r;
  for (size_t i = 0; i < n.size(); ++i) {
    YAML::Node item = n[i];
    r.push_back(parseProcess(item, stage, fmt::format("{}[{}]", key, i), full));
  }
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// Names (§9: [Error Y01], [Error Y02], [Error(DRP Converter-007)])

std::vector<std::string> names(const std::vector<TensorDecl>& v) {
  std::vector<std::string> r;
  for (auto& d : v) r.push_back(d.name);
  return r;
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::string lines(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, "\n")); }

[[noreturn]] void converter007(const std::string& name, const char* key, const char* side) {
  bad(fmt::format("[Error(DRP Converter-007)] Node {} is not found.\nMake sure that the node names defined in prepost.yaml "
                  "file match the input/output nodes in ONNX file. ({} name '{}' is not an {} of the model)",
                  name, key, name, side));
}

void checkModelNames(const PrePost& pp, const ParseOptions& o) {
  std::vector<std::string> in = names(pp.input_to_body), out = names(pp.output_from_body);
  if (!o.model_inputs.empty()) {
    std::set<std::string> a(in.begin(), in.end()), b(o.model_inputs.begin(), o.model_inputs.end());
    if (o.check_prepost && a != b)
      withContext("input_to_body", [&] {
        bad(fmt::format("[Error Y01] Error in prepost yaml file: set input_to_body name as:\n{}\nMake sure that "
                        "input_to_body \"name\"(s) matches the input node name(s) in ONNX.",
                        lines(o.model_inputs)));
      });
    for (size_t i = 0; i < in.size(); ++i)
      if (!b.count(in[i]))
        withContext(fmt::format("input_to_body[{}].name", i), [&] { converter007(in[i], "input_to_body", "input"); });
  }
  if (!o.model_outputs.empty()) {
    std::set<std::string> a(out.begin(), out.end()), b(o.model_outputs.begin(), o.model_outputs.end());
    if (o.check_prepost && a != b)
      withContext("output_from_body", [&] {
        bad(fmt::format("[Error Y01] Error in prepost yaml file: set output_from_body name as:\n{}\nMake sure that "
                        "output_from_body \"name\"(s) matches the output node name(s) in ONNX.",
                        lines(o.model_outputs)));
      });
    for (size_t i = 0; i < out.size(); ++i)
      if (!b.count(out[i]))
        withContext(fmt::format("output_from_body[{}].name", i), [&] { converter007(out[i], "output_from_body", "output"); });
  }
}

void checkPreNames(const PrePost& pp, const std::vector<ParsedProcess>& procs, const ParseOptions& o) {
  std::vector<std::string> pre_in = names(pp.input_to_pre), body_in = names(pp.input_to_body);
  std::map<std::string, std::string> dest_by;
  for (auto& pr : procs) {
    if (!contains(pre_in, pr.p.src))
      withContext(pr.path + ".src", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: preprocess src =/= input_to_pre name\nMake sure the "
                        "preprocess \"src\" matches input_to_pre \"name\". (src '{}'; input_to_pre names: {})",
                        pr.p.src, fmt::join(pre_in, ", ")));
      });
    if (!contains(body_in, pr.p.dest))
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: preprocess dest =/= input_to_body name\nMake sure the "
                        "preprocess \"dest\" matches input_to_body \"name\". (dest '{}'; input_to_body names: {})",
                        pr.p.dest, fmt::join(body_in, ", ")));
      });
    dest_by.emplace(pr.p.dest, pr.path);
  }
  for (auto& n : pre_in)
    if (std::none_of(procs.begin(), procs.end(), [&](const ParsedProcess& pr) { return pr.p.src == n; }))
      withContext("input_to_pre", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: preprocess src =/= input_to_pre name\nMake sure the "
                        "preprocess \"src\" matches input_to_pre \"name\". (input_to_pre '{}' is not the src of any "
                        "preprocess entry)",
                        n));
      });
  // Without a model, the YAML's own input_to_body names stand for the ONNX inputs.
  const std::vector<std::string>& onnx_in = o.model_inputs.empty() ? body_in : o.model_inputs;
  std::vector<std::string> missing;
  for (auto& n : onnx_in)
    if (!dest_by.count(n)) missing.push_back(n);
  if (!missing.empty())
    withContext("preprocess", [&] {
      bad(fmt::format("[Error Y01] Error in prepost yaml file: set : preprocess dest must include all name(s) of onnx "
                      "input node(s) listed below:\n{}\nMake sure that all of ONNX input node(s) name are already defined "
                      "in preprocess \"dest\". (missing: {})",
                      lines(onnx_in), fmt::join(missing, ", ")));
    });
  for (auto& pr : procs)
    if (dest_by.at(pr.p.dest) != pr.path)
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("input_to_body '{}' is already the dest of {}; each input is produced by one preprocess entry",
                        pr.p.dest, dest_by.at(pr.p.dest)));
      });
}

/// Names a postprocess src may use: body outputs passed whole, and shape_post pieces → their tensors.
std::map<std::string, TensorInfo> postSources(const PrePost& pp) {
  std::map<std::string, TensorInfo> r;
  for (auto& d : pp.output_from_body) {
    if (d.shape_post.empty()) {
      r[d.name] = d.info();
      continue;
    }
    for (auto& p : d.shape_post) {
      if (r.count(p.name) || pp.findOutputFromBody(p.name))
        bad(fmt::format("output_from_body '{}': shape_post name '{}' is already used by another output or piece", d.name,
                        p.name));
      r[p.name] = TensorInfo{p.shape, d.order, ImageFormat::kNone, d.type};
    }
  }
  return r;
}

void checkPostNames(const PrePost& pp, const std::vector<ParsedProcess>& procs, const ParseOptions& o,
                    const std::map<std::string, TensorInfo>& sources) {
  std::vector<std::string> post_out = names(pp.output_from_post);
  std::map<std::string, std::string> dest_by;
  for (auto& pr : procs) {
    if (sources.count(pr.p.dest) || pp.findOutputFromBody(pr.p.dest))
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("'{}' is an output_from_body (or shape_post) name; a postprocess dest needs a new name", pr.p.dest));
      });
    if (dest_by.count(pr.p.dest))
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("'{}' is already the dest of {}; each postprocess dest is produced once", pr.p.dest, dest_by[pr.p.dest]));
      });
    dest_by[pr.p.dest] = pr.path;
  }
  bool chained = std::any_of(procs.begin(), procs.end(), [&](const ParsedProcess& pr) { return !contains(post_out, pr.p.dest); });
  std::set<std::string> used_src;
  for (auto& pr : procs) {
    used_src.insert(pr.p.src);
    const TensorDecl* whole = pp.findOutputFromBody(pr.p.src);
    if (whole && !whole->shape_post.empty())
      withContext(pr.path + ".src", [&] {
        std::vector<std::string> pn;
        for (auto& p : whole->shape_post) pn.push_back(p.name);
        bad(fmt::format("output_from_body '{}' is split by shape_post; postprocess src must name its pieces ({}) (§5.2 "
                        "shape_post)",
                        pr.p.src, fmt::join(pn, ", ")));
      });
    if (sources.count(pr.p.src) || dest_by.count(pr.p.src)) continue;
    withContext(pr.path + ".src", [&] {
      if (chained)
        bad(fmt::format("[Error Y02] Error in prepost yaml file: postprocessing src =/= postprocessing dest or "
                        "output_from_body name\nMake sure the postprocess \"src\" matches other postprocess \"dest\" or "
                        "output_from_body \"name\". (src '{}')",
                        pr.p.src));
      std::vector<std::string> sn;
      for (auto& [n, t] : sources) sn.push_back(n);
      bad(fmt::format("[Error Y02] Error in prepost yaml file: postprocess src =/= output_from_body name\nMake sure the "
                      "postprocess \"src\" matches output_from_body \"name\". (src '{}'; output_from_body names{}: {})",
                      pr.p.src, sn.size() == pp.output_from_body.size() ? "" : " and shape_post pieces", fmt::join(sn, ", ")));
    });
  }
  for (auto& pr : procs)
    if (!contains(post_out, pr.p.dest) && !used_src.count(pr.p.dest))
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: postprocessing dest =/= output_from_post name\nMake sure "
                        "the postprocess \"dest\" matches output_from_post \"name\". (dest '{}'; output_from_post names: "
                        "{})",
                        pr.p.dest, fmt::join(post_out, ", ")));
      });
  for (auto& n : post_out)
    if (!dest_by.count(n))
      withContext("output_from_post", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: postprocessing dest =/= output_from_post name\nMake sure "
                        "the postprocess \"dest\" matches output_from_post \"name\". (output_from_post '{}' is not the "
                        "dest of any postprocess entry)",
                        n));
      });
  // Every model output (each shape_post piece for a split one) must be read by postprocessing.
  std::vector<std::string> onnx_out = o.model_outputs.empty() ? names(pp.output_from_body) : o.model_outputs, missing;
  for (auto& n : onnx_out) {
    const TensorDecl* d = pp.findOutputFromBody(n);
    if (d && !d->shape_post.empty()) {
      for (auto& p : d->shape_post)
        if (!used_src.count(p.name)) missing.push_back(p.name + " (shape_post piece of " + n + ")");
    } else if (!used_src.count(n)) {
      missing.push_back(n);
    }
  }
  if (!missing.empty())
    withContext("postprocess", [&] {
      bad(fmt::format("[Error Y01] Error in prepost yaml file: postprocess src must include all name(s) of onnx output "
                      "node(s) listed below:\n{}\nMake sure that all of ONNX output node(s) name are already defined in "
                      "postprocess \"src\". (missing: {})",
                      lines(onnx_out), fmt::join(missing, ", ")));
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Propagation

/// Runs the operations of one entry from `in`; returns the final tensor. Errors name the operation's key path
/// and the producer of its input.
TensorInfo runProcess(Stage stage, ParsedProcess& pr, const TensorInfo& in, const std::string& in_from) {
  TensorInfo cur = in;
  std::string from = in_from;
  if (pr.io) checkLegacy(pr.path, "in", pr.io->shape_in, pr.io->dtype_in, pr.io->dorder_in, in, in_from);
  for (size_t i = 0; i < pr.p.operations.size(); ++i) {
    Operation& op = pr.p.operations[i];
    op.in = cur;
    op.out = withContext(fmt::format("{} (input {} from {})", pr.op_paths[i], describe(cur), from),
                         [&] { return applyOperation(stage, op, cur); });
    if (!pr.op_io.empty()) {
      const LegacyIo& io = pr.op_io[i];
      checkLegacy(pr.op_paths[i], "in", io.shape_in, io.dtype_in, io.dorder_in, op.in, from);
      checkLegacy(pr.op_paths[i], "out", io.shape_out, io.dtype_out, io.dorder_out, op.out, std::string(toString(op.kind)));
    }
    cur = op.out;
    from = std::string(toString(op.kind));
  }
  if (pr.io) checkLegacy(pr.path, "out", pr.io->shape_out, pr.io->dtype_out, pr.io->dorder_out, cur, "the operations");
  return cur;
}

void checkReaches(const TensorInfo& got, const TensorDecl& want, const char* key, const ParsedProcess& pr) {
  auto mismatch = [&](const char* what, std::string_view g, std::string_view w) {
    bad(fmt::format("{}: the operations produce {} {} but {} '{}' declares {} {} (the last operation, {}, outputs {})",
                    pr.path, what, g, key, want.name, what, w, toString(pr.p.operations.back().kind), describe(got)));
  };
  if (got.shape != want.shape) mismatch("shape", shapeStr(got.shape), shapeStr(want.shape));
  if (got.order != want.order) mismatch("order", toString(got.order), toString(want.order));
  if (got.type != want.type) mismatch("type", toString(got.type), toString(want.type));
  if (want.format != ImageFormat::kNone && got.format != want.format)
    mismatch("format", toString(got.format), toString(want.format));
}

}  // namespace

PrePost parsePrePost(const std::string& yaml_text, const std::string& source_name, const ParseOptions& options) {
  return withContext(source_name, [&] { return readingYaml([&] {
    YAML::Node root = loadYaml(yaml_text);
    static const std::vector<std::string> top = {"input_to_pre", "input_to_body", "output_from_body",
                                                 "output_from_post", "preprocess", "postprocess"};
    if (!root.IsMap())
      bad(fmt::format("the top layer must be a mapping with the keys {} (§5.1)", fmt::join(top, ", ")));
    auto e = mapEntries(root, "top layer", top);
    for (auto& k : top)
      if (!e.count(k)) bad(fmt::format("key '{}' is missing; the top layer must have {} (§5.1, each key is a must)", k,
                                       fmt::join(top, ", ")));
    PrePost pp;
    pp.source = source_name;
    pp.input_to_pre = parseDecls(e["input_to_pre"], kInputToPre);
    pp.input_to_body = parseDecls(e["input_to_body"], kInputToBody);
    pp.output_from_body = parseDecls(e["output_from_body"], kOutputFromBody);
    pp.output_from_post = parseDecls(e["output_from_post"], kOutputFromPost);
    std::vector<ParsedProcess> pre = parseProcesses(e["preprocess"], Stage::kPre, options.full_format);
    std::vector<ParsedProcess> post = parseProcesses(e["postprocess"], Stage::kPost, options.full_format);

    checkModelNames(pp, options);
    checkPreNames(pp, pre, options);
    std::map<std::string, TensorInfo> sources = postSources(pp);
    checkPostNames(pp, post, options, sources);

    for (auto& pr : pre) {
      const TensorDecl& src = *pp.findInputToPre(pr.p.src);
      TensorInfo out = runProcess(Stage::kPre, pr, src.info(), "input_to_pre '" + src.name + "'");
      checkReaches(out, *pp.findInputToBody(pr.p.dest), "input_to_body", pr);
      pp.preprocess.push_back(pr.p);
    }
    // Postprocess entries may read another entry's dest: run them once their src is known.
    std::map<std::string, std::pair<TensorInfo, std::string>> known;
    for (auto& [n, t] : sources) known[n] = {t, "output_from_body '" + n + "'"};
    std::vector<bool> done(post.size(), false);
    for (size_t remaining = post.size(); remaining > 0;) {
      size_t before = remaining;
      for (size_t i = 0; i < post.size(); ++i) {
        if (done[i] || !known.count(post[i].p.src)) continue;
        auto [in, from] = known[post[i].p.src];
        TensorInfo out = runProcess(Stage::kPost, post[i], in, from);
        if (const TensorDecl* d = pp.findOutputFromPost(post[i].p.dest)) checkReaches(out, *d, "output_from_post", post[i]);
        known[post[i].p.dest] = {out, post[i].path + " (dest '" + post[i].p.dest + "')"};
        done[i] = true;
        --remaining;
      }
      if (remaining == before) {
        size_t i = static_cast<size_t>(std::find(done.begin(), done.end(), false) - done.begin());
        bad(fmt::format("{}: postprocess entries read each other's dest in a cycle (src '{}')", post[i].path, post[i].p.src));
      }
    }
    for (auto& pr : post) pp.postprocess.push_back(pr.p);
    return pp;
  }); });
}

PrePost loadPrePost(const std::filesystem::path& path, const ParseOptions& options) {
  return parsePrePost(readFileText(path, kMaxConfigBytes, "a pre/post-processing definition"), path.string(), options);
}

// ---------------------------------------------------------------------------------------------------------------
// Size of ONNX vs. YAML

namespace {

/// The model's dims as the YAML would write them for `order`: candidate shapes (NCHW → HWC, and NHWC as is).
std::vector<std::vector<int64_t>> yamlCandidates(std::vector<int64_t> dims, Order order) {
  if (dims.size() >= 2 && dims[0] <= 1) dims.erase(dims.begin());  // N (must be 1, or unknown)
  std::vector<std::vector<int64_t>> r;  // none: compare the element counts (always so for C, which is flat)
  if (order != Order::kC && dims.size() == 3) {
    if (order == Order::kHWC) {
      r.push_back({dims[1], dims[2], dims[0]});  // NCHW
      r.push_back(dims);                         // NHWC (Appendix B: channel-last model)
    } else {
      r.push_back(dims);
    }
  }
  return r;
}

bool dimsMatch(const std::vector<int64_t>& model, const std::vector<int64_t>& yaml) {
  if (model.size() != yaml.size()) return false;
  for (size_t i = 0; i < model.size(); ++i)
    if (model[i] > 0 && model[i] != yaml[i]) return false;
  return true;
}

void checkOneSize(const TensorDecl& d, const std::vector<ModelTensorShape>& model, const char* key, const char* side,
                  size_t index) {
  auto it = std::find_if(model.begin(), model.end(), [&](const ModelTensorShape& m) { return m.name == d.name; });
  std::string where = fmt::format("{}[{}] '{}'", key, index, d.name);
  if (it == model.end()) withContext(where, [&] { converter007(d.name, key, side); });
  const std::vector<int64_t>& dims = it->dims;
  auto cands = yamlCandidates(dims, d.order);
  bool ok = false;
  if (cands.empty()) {  // no dimension mapping for this rank: compare the element counts
    int64_t n = 1;
    bool known = true;
    for (int64_t x : dims) {
      if (x <= 0) known = false;
      n *= x;
    }
    ok = !known || n == d.info().elements();
  }
  for (auto& c : cands) ok = ok || dimsMatch(c, d.shape);
  if (!ok)
    withContext(where, [&] {
      bad(fmt::format("the size of ONNX vs. YAML does not match: the YAML shape is {} ({}), the ONNX {} has shape {}{} "
                      "(NCHW with N = 1 is written HWC in the YAML, Appendix B). Fix the YAML, or skip this check with "
                      "-NotCheckSizeONNXvsYAML",
                      shapeStr(d.shape), toString(d.order), side, shapeStr(dims),
                      cands.empty() ? "" : fmt::format(", i.e. {} in YAML order", shapeStr(cands.front()))));
    });
}

}  // namespace

void checkSizeOnnxVsYaml(const PrePost& pp, const std::vector<ModelTensorShape>& model_inputs,
                         const std::vector<ModelTensorShape>& model_outputs, bool skip) {
  if (skip) return;
  withContext(pp.source, [&] {
    for (size_t i = 0; i < pp.input_to_body.size(); ++i)
      checkOneSize(pp.input_to_body[i], model_inputs, "input_to_body", "input", i);
    for (size_t i = 0; i < pp.output_from_body.size(); ++i)
      checkOneSize(pp.output_from_body[i], model_outputs, "output_from_body", "output", i);
  });
}

}  // namespace npuc::prepost
