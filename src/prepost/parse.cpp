// Reading a DRP-AI pre/post-processing definition (§5.2, the legacy full format of Appendix A) into its typed form:
// the YAML access with the manual's messages, the boundary tensors, each operation's parameters (§5.3.2 / §5.4.2)
// and the entries with their operation order (§5.3.1 / §5.4.1). Names and shapes are checked afterwards
// (validate.cpp, shapes.cpp).
#include "prepost/internal.hpp"
#include "support/error.hpp"
#include "support/yaml.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <tuple>

namespace npuc::prepost {

using namespace detail;

namespace {

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
// Processes (preprocess / postprocess entries), legacy declarations

const std::vector<std::string> kLegacyKeys = {"shape_in", "shape_out", "dtype_in", "dtype_out", "dorder_in", "dorder_out"};

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
}  // namespace

ParsedDefinition detail::parseDefinition(const std::string& yaml_text, const std::string& source_name, bool full_format) {
  YAML::Node root = loadYaml(yaml_text);
  static const std::vector<std::string> top = {"input_to_pre", "input_to_body", "output_from_body",
                                               "output_from_post", "preprocess", "postprocess"};
  if (!root.IsMap())
    bad(fmt::format("the top layer must be a mapping with the keys {} (§5.1)", fmt::join(top, ", ")));
  auto e = mapEntries(root, "top layer", top);
  for (auto& k : top)
    if (!e.count(k)) bad(fmt::format("key '{}' is missing; the top layer must have {} (§5.1, each key is a must)", k,
                                     fmt::join(top, ", ")));
  ParsedDefinition d;
  PrePost& pp = d.pp;
  pp.source = source_name;
  pp.input_to_pre = parseDecls(e["input_to_pre"], kInputToPre);
  pp.input_to_body = parseDecls(e["input_to_body"], kInputToBody);
  pp.output_from_body = parseDecls(e["output_from_body"], kOutputFromBody);
  pp.output_from_post = parseDecls(e["output_from_post"], kOutputFromPost);
  d.pre = parseProcesses(e["preprocess"], Stage::kPre, full_format);
  d.post = parseProcesses(e["postprocess"], Stage::kPost, full_format);
  return d;
}

}  // namespace npuc::prepost
