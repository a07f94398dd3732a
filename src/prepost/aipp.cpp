// AIPP configuration parser, static parameter blocks, graph insertion and the YAML form of dynamic blocks
// (prepost/aipp.hpp, docs/aipp.md).
#include "prepost/aipp.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"
#include "support/file.hpp"
#include "support/yaml.hpp"
#include "support/fp16.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

namespace npuc::prepost {

namespace {

struct Token {
  std::string text;
  int line = 0;
};

std::vector<Token> tokenize(const std::string& text) {
  std::vector<Token> out;
  int line = 1;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '\n') {
      ++line, ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '{' || c == '}' || c == ':') {
      out.push_back({std::string(1, c), line});
      ++i;
    } else {
      size_t j = i;
      while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j])) && text[j] != '{' && text[j] != '}' &&
             text[j] != ':' && text[j] != '#')
        ++j;
      std::string w = text.substr(i, j - i);
      if (w.size() >= 2 && (w.front() == '"' || w.front() == '\'') && w.back() == w.front()) w = w.substr(1, w.size() - 2);
      out.push_back({w, line});
      i = j;
    }
  }
  return out;
}

class Parser {
 public:
  Parser(const std::string& text, std::string source) : toks_(tokenize(text)), source_(std::move(source)) {}

  AippConfig run() {
    AippConfig cfg;
    cfg.source = source_;
    while (pos_ < toks_.size()) {
      const Token& t = toks_[pos_++];
      if (t.text != "aipp_op") err(t.line, "expected 'aipp_op', found '{}'", t.text);
      AippOp op;
      op.line = t.line;
      expect("{", t.line);
      for (;;) {
        if (pos_ >= toks_.size()) err(op.line, "the aipp_op block opened here is not closed with '}}'");
        const Token& k = toks_[pos_++];
        if (k.text == "}") break;
        if (k.text == "{" || k.text == ":") err(k.line, "expected a key, found '{}'", k.text);
        expect(":", k.line);
        if (pos_ >= toks_.size() || toks_[pos_].text == "}" || toks_[pos_].text == "{" || toks_[pos_].text == ":")
          err(k.line, "key '{}' has no value", k.text);
        const Token& v = toks_[pos_++];
        if (!op.keys.insert(k.text).second) err(k.line, "key '{}' is set twice in this aipp_op", k.text);
        set(op, k.text, v);
      }
      finish(op, static_cast<int>(cfg.ops.size()));
      cfg.ops.push_back(std::move(op));
    }
    if (cfg.ops.empty()) fail(ErrorCode::kInvalidInput, "{}: no aipp_op block (an AIPP configuration holds one per model input)", source_);
    for (size_t i = 0; i < cfg.ops.size(); ++i) {
      if (cfg.ops[i].dynamic != cfg.ops[0].dynamic)
        err(cfg.ops[i].line, "aipp_op #{} is {} but aipp_op #0 is {}: static and dynamic AIPP cannot be combined in one "
            "model", i, cfg.ops[i].dynamic ? "dynamic" : "static", cfg.ops[0].dynamic ? "dynamic" : "static");
      for (size_t j = 0; j < i; ++j)
        if (cfg.ops[j].related_input_rank == cfg.ops[i].related_input_rank)
          err(cfg.ops[i].line, "related_input_rank {} is already configured by the aipp_op at line {} (one block per model input)",
              cfg.ops[i].related_input_rank, cfg.ops[j].line);
    }
    return cfg;
  }

 private:
  template <typename... Args>
  [[noreturn]] void err(int line, fmt::format_string<Args...> f, Args&&... a) const {
    fail(ErrorCode::kInvalidInput, "{}:{}: {}", source_, line, fmt::format(f, std::forward<Args>(a)...));
  }
  void expect(const char* what, int line) {
    if (pos_ >= toks_.size() || toks_[pos_].text != what)
      err(pos_ < toks_.size() ? toks_[pos_].line : line, "expected '{}'{}", what,
          pos_ < toks_.size() ? fmt::format(", found '{}'", toks_[pos_].text) : std::string(" before the end of the file"));
    ++pos_;
  }

  bool boolean(const std::string& key, const Token& v) const {
    if (v.text == "true" || v.text == "1") return true;
    if (v.text == "false" || v.text == "0") return false;
    err(v.line, "key '{}': '{}' is not a boolean (true or false)", key, v.text);
  }
  int64_t integer(const std::string& key, const Token& v, int64_t lo, int64_t hi) const {
    int64_t x = 0;
    const char* b = v.text.data();
    const char* e = b + v.text.size();
    if (b != e && *b == '+') ++b;
    auto r = std::from_chars(b, e, x);
    if (r.ec != std::errc() || r.ptr != e) err(v.line, "key '{}': '{}' is not an integer", key, v.text);
    if (x < lo || x > hi) err(v.line, "key '{}': {} is outside [{}, {}]", key, x, lo, hi);
    return x;
  }
  float real(const std::string& key, const Token& v) const {
    char* end = nullptr;
    double d = std::strtod(v.text.c_str(), &end);
    if (v.text.empty() || end != v.text.c_str() + v.text.size() || !std::isfinite(d) || std::fabs(d) > 65504.0)
      err(v.line, "key '{}': '{}' is not a finite number within the float16 range", key, v.text);
    return static_cast<float>(d);
  }

  /// Sets one key; the table below is the list of keys docs/aipp.md documents.
  void set(AippOp& op, const std::string& key, const Token& v) {
    auto i16 = [&] { return static_cast<int16_t>(integer(key, v, -32768, 32767)); };
    auto u8 = [&] { return static_cast<uint8_t>(integer(key, v, 0, 255)); };
    auto size = [&] { return integer(key, v, 0, 4096); };
    auto pad = [&] { return integer(key, v, 0, 32); };
    static const char* const kChn[] = {"0", "1", "2", "3"};
    if (key == "aipp_mode") {
      if (v.text != "static" && v.text != "dynamic") err(v.line, "aipp_mode must be static or dynamic, not '{}'", v.text);
      op.dynamic = v.text == "dynamic";
    } else if (key == "related_input_rank") {
      op.related_input_rank = static_cast<int>(integer(key, v, 0, 1023));
    } else if (key == "max_src_image_size") {
      op.max_src_image_size = integer(key, v, 1, int64_t{4096} * 4096 * 4);
    } else if (key == "support_rotation") {
      op.support_rotation = boolean(key, v);
    } else if (key == "input_format") {
      if (!kernels::aippFormatFromName(v.text, &op.input_format))
        err(v.line, "input_format '{}' is not supported (YUV420SP_U8, XRGB8888_U8, RGB888_U8 or YUV400_U8)", v.text);
    } else if (key == "src_image_size_w") {
      op.src_w = size();
    } else if (key == "src_image_size_h") {
      op.src_h = size();
    } else if (key == "crop") {
      op.crop = boolean(key, v);
    } else if (key == "load_start_pos_w") {
      op.load_x = integer(key, v, 0, 4095);
    } else if (key == "load_start_pos_h") {
      op.load_y = integer(key, v, 0, 4095);
    } else if (key == "crop_size_w") {
      op.crop_w = size();
    } else if (key == "crop_size_h") {
      op.crop_h = size();
    } else if (key == "resize") {
      op.resize = boolean(key, v);
    } else if (key == "resize_output_w") {
      op.resize_w = size();
    } else if (key == "resize_output_h") {
      op.resize_h = size();
    } else if (key == "padding") {
      op.padding = boolean(key, v);
    } else if (key == "left_padding_size") {
      op.pad_left = pad();
    } else if (key == "right_padding_size") {
      op.pad_right = pad();
    } else if (key == "top_padding_size") {
      op.pad_top = pad();
    } else if (key == "bottom_padding_size") {
      op.pad_bottom = pad();
    } else if (key == "padding_value") {  // (every channel; padding_value_chn_K, in either order, sets channel K)
      const float f = real(key, v);
      for (size_t c = 0; c < 4; ++c)
        if (!op.keys.count(std::string("padding_value_chn_") + kChn[c])) op.padding_value[c] = f;
    } else if (key == "rotation") {
      int64_t d = integer(key, v, 0, 270);
      if (d % 90) err(v.line, "rotation must be 0, 90, 180 or 270 (degrees clockwise), not {}", d);
      op.rotation = static_cast<int>(d);
    } else if (key == "csc_switch") {
      op.csc = boolean(key, v);
    } else if (key == "rbuv_swap_switch") {
      op.rbuv_swap = boolean(key, v);
    } else if (key == "ax_swap_switch") {
      op.ax_swap = boolean(key, v);
    } else if (key == "single_line_mode") {
      if (boolean(key, v)) err(v.line, "single_line_mode: true is not supported by npuc (the image is processed whole)");
    } else if (key.size() == 11 && key.rfind("matrix_r", 0) == 0 && key[9] == 'c' && key[8] >= '0' && key[8] <= '2' &&
               key[10] >= '0' && key[10] <= '2') {
      op.matrix[static_cast<size_t>(key[8] - '0')][static_cast<size_t>(key[10] - '0')] = i16();
    } else if (key.size() == 13 && (key.rfind("output_bias_", 0) == 0) && key[12] >= '0' && key[12] <= '2') {
      op.output_bias[static_cast<size_t>(key[12] - '0')] = u8();
    } else if (key.size() == 12 && (key.rfind("input_bias_", 0) == 0) && key[11] >= '0' && key[11] <= '2') {
      op.input_bias[static_cast<size_t>(key[11] - '0')] = u8();
    } else {
      for (size_t c = 0; c < 4; ++c) {
        if (key == std::string("mean_chn_") + kChn[c]) return void(op.mean[c] = i16());
        if (key == std::string("min_chn_") + kChn[c]) return void(op.min[c] = real(key, v));
        if (key == std::string("var_reci_chn_") + kChn[c]) return void(op.var_reci[c] = real(key, v));
        if (key == std::string("padding_value_chn_") + kChn[c]) return void(op.padding_value[c] = real(key, v));
      }
      err(v.line, "unknown key '{}' (docs/aipp.md lists the keys npuc reads)", key);
    }
  }

  /// Mode-specific key rules of one block.
  void finish(const AippOp& op, int index) const {
    auto has = [&](const std::string& k) { return op.keys.count(k) != 0; };
    auto line = [&] { return op.line; };
    if (!has("aipp_mode")) err(line(), "aipp_op #{}: aipp_mode is required (static or dynamic)", index);
    static const std::set<std::string> kDynamicKeys = {"aipp_mode",        "related_input_rank",  "max_src_image_size",
                                                       "support_rotation", "padding_value",       "padding_value_chn_0",
                                                       "padding_value_chn_1", "padding_value_chn_2", "padding_value_chn_3"};
    if (op.dynamic) {
      for (const std::string& k : op.keys)
        if (!kDynamicKeys.count(k))
          err(line(), "aipp_op #{}: '{}' is a static-mode key; a dynamic aipp_op takes max_src_image_size, "
              "related_input_rank, support_rotation and padding_value(_chn_K), the rest comes with the parameter block at run time",
              index, k);
      if (!has("max_src_image_size")) err(line(), "aipp_op #{}: a dynamic aipp_op needs max_src_image_size (bytes of the largest source image)", index);
      return;
    }
    for (const char* k : {"max_src_image_size", "support_rotation"})
      if (has(k)) err(line(), "aipp_op #{}: '{}' is a dynamic-mode key (aipp_mode is static)", index, k);
    auto needs = [&](bool on, const char* sw, std::initializer_list<const char*> ks) {
      if (on) return;
      for (const char* k : ks)
        if (has(k)) err(line(), "aipp_op #{}: '{}' is set but {} is false", index, k, sw);
    };
    needs(op.crop, "crop", {"load_start_pos_w", "load_start_pos_h", "crop_size_w", "crop_size_h"});
    needs(op.resize, "resize", {"resize_output_w", "resize_output_h"});
    needs(op.padding, "padding", {"left_padding_size", "right_padding_size", "top_padding_size", "bottom_padding_size", "padding_value",
                                  "padding_value_chn_0", "padding_value_chn_1", "padding_value_chn_2", "padding_value_chn_3"});
    if (!op.csc)
      for (const std::string& k : op.keys)
        if (k.rfind("matrix_r", 0) == 0 || k.rfind("output_bias_", 0) == 0 || k.rfind("input_bias_", 0) == 0)
          err(line(), "aipp_op #{}: '{}' is set but csc_switch is false", index, k);
    if (op.csc && op.input_format == kernels::AippFormat::kYUV400_U8)
      err(line(), "aipp_op #{}: csc_switch must be false for YUV400_U8 (one channel, no color to convert)", index);
    if (op.ax_swap && op.input_format != kernels::AippFormat::kXRGB8888_U8)
      err(line(), "aipp_op #{}: ax_swap_switch applies to XRGB8888_U8 only", index);
    if (op.input_format == kernels::AippFormat::kYUV420SP_U8 && op.crop && ((op.load_x | op.load_y) & 1))
      err(line(), "aipp_op #{}: for YUV420SP_U8 load_start_pos_w and load_start_pos_h must be even ({}, {})", index, op.load_x, op.load_y);
  }

  std::vector<Token> toks_;
  std::string source_;
  size_t pos_ = 0;
};

}  // namespace

AippConfig parseAipp(const std::string& text, const std::string& source) { return Parser(text, source).run(); }

AippConfig loadAipp(const std::filesystem::path& file) {
  std::vector<uint8_t> bytes = readFileBytes(file, kMaxConfigBytes, "an AIPP configuration");
  return parseAipp(std::string(bytes.begin(), bytes.end()), file.string());
}

std::optional<std::pair<int64_t, int64_t>> staticAippOutputSize(const AippOp& op) {
  if (op.dynamic) return std::nullopt;
  int64_t w = op.resize ? op.resize_w : op.crop ? op.crop_w : op.src_w;
  int64_t h = op.resize ? op.resize_h : op.crop ? op.crop_h : op.src_h;
  if (w <= 0 || h <= 0) return std::nullopt;
  if (op.rotation == 90 || op.rotation == 270) std::swap(w, h);
  if (op.padding) w += op.pad_left + op.pad_right, h += op.pad_top + op.pad_bottom;
  return std::make_pair(h, w);
}

kernels::AippParams staticAippParams(const AippOp& op, const std::vector<int64_t>& model_input, const std::string& what) {
  auto bad = [&](const std::string& why) { fail(ErrorCode::kInvalidInput, "{}: {}", what, why); };
  if (model_input.size() != 4) bad(fmt::format("AIPP feeds an [N, C, H, W] input, this one has rank {}", model_input.size()));
  const int64_t N = model_input[0], H = model_input[2], W = model_input[3];
  int64_t pl = op.padding ? op.pad_left : 0, pr = op.padding ? op.pad_right : 0;
  int64_t pt = op.padding ? op.pad_top : 0, pb = op.padding ? op.pad_bottom : 0;
  // The image between the paddings, before rotation: what the earlier stages must deliver.
  int64_t fw = W - pl - pr, fh = H - pt - pb;
  if (fw < 1 || fh < 1) bad(fmt::format("the padding ({} + {} columns, {} + {} rows) leaves no image in the {}x{} model input", pl, pr, pt, pb, W, H));
  if (op.rotation == 90 || op.rotation == 270) std::swap(fw, fh);
  auto pick = [&](int64_t given, int64_t fit, const char* key, bool fit_ok) {
    if (given) return given;
    if (!fit_ok) bad(fmt::format("{} must be set (it cannot be derived from the model input when {})", key,
                                 op.resize ? "resize is on" : "crop is on"));
    return fit;
  };
  kernels::AippBatchParams b;
  b.rotate = static_cast<int8_t>(op.rotation / 90);
  if (op.resize) {
    b.scf = 1;
    b.scf_out_w = static_cast<int32_t>(pick(op.resize_w, fw, "resize_output_w", true));
    b.scf_out_h = static_cast<int32_t>(pick(op.resize_h, fh, "resize_output_h", true));
  }
  int64_t cw = fw, ch = fh;
  if (op.crop) {
    b.crop = 1;
    b.crop_x = static_cast<int32_t>(op.load_x);
    b.crop_y = static_cast<int32_t>(op.load_y);
    cw = pick(op.crop_w, fw, "crop_size_w", !op.resize);
    ch = pick(op.crop_h, fh, "crop_size_h", !op.resize);
    b.crop_w = static_cast<int32_t>(cw);
    b.crop_h = static_cast<int32_t>(ch);
  }
  kernels::AippParams p;
  p.input_format = static_cast<uint8_t>(op.input_format);
  p.csc = op.csc;
  p.rbuv_swap = op.rbuv_swap;
  p.ax_swap = op.ax_swap;
  p.src_w = static_cast<int32_t>(pick(op.src_w, cw, "src_image_size_w", !op.crop && !op.resize));
  p.src_h = static_cast<int32_t>(pick(op.src_h, ch, "src_image_size_h", !op.crop && !op.resize));
  p.matrix = op.matrix;
  p.output_bias = op.output_bias;
  p.input_bias = op.input_bias;
  if (op.resize) {
    b.scf_in_w = b.crop ? b.crop_w : p.src_w;
    b.scf_in_h = b.crop ? b.crop_h : p.src_h;
  }
  if (op.padding) {
    b.padding = 1;
    b.pad_left = static_cast<int32_t>(pl);
    b.pad_right = static_cast<int32_t>(pr);
    b.pad_top = static_cast<int32_t>(pt);
    b.pad_bottom = static_cast<int32_t>(pb);
  }
  for (size_t c = 0; c < 4; ++c) {
    b.mean[c] = op.mean[c];
    b.min[c] = floatToHalf(op.min[c]);
    b.var_reci[c] = floatToHalf(op.var_reci[c]);
  }
  p.batch.assign(static_cast<size_t>(std::max<int64_t>(N, 1)), b);
  kernels::AippSetup s;
  s.n = N;
  s.channels = model_input[1];
  s.height = H;
  s.width = W;
  s.image_bytes = kernels::aippImageBytes(op.input_format, p.src_w, p.src_h);
  s.padding_value = op.padding_value;
  if (std::string why = kernels::checkAipp(p, s); !why.empty()) bad(why);
  return p;
}

void insertAipp(ir::Graph& g, const AippConfig& cfg) {
  std::vector<ir::ValueId> inputs = g.inputs();
  std::vector<ir::ValueId> new_inputs;
  std::map<ir::ValueId, std::vector<ir::ValueId>> replace;  // model input -> frame (+ parameter input)
  for (size_t k = 0; k < cfg.ops.size(); ++k) {
    const AippOp& op = cfg.ops[k];
    std::string what = fmt::format("{}:{}: aipp_op #{}", cfg.source, op.line, k);
    if (op.related_input_rank >= static_cast<int>(inputs.size()))
      fail(ErrorCode::kInvalidInput, "{}: related_input_rank {} but the model has {} input(s)", what, op.related_input_rank, inputs.size());
    ir::ValueId body = inputs[static_cast<size_t>(op.related_input_rank)];
    const std::string name = g.value(body).name;
    const ir::Type t = g.value(body).type;
    what += fmt::format(" (model input '{}')", name);
    if (t.dtype != DType::kF32) fail(ErrorCode::kInvalidInput, "{}: AIPP feeds float32 inputs, this one is {}", what, dtypeName(t.dtype));
    if (t.shape.size() != 4) fail(ErrorCode::kInvalidInput, "{}: AIPP feeds [N, C, H, W] inputs, this one is {}", what, shapeStr(t.shape));
    const int64_t N = t.shape[0], C = t.shape[1];
    if (C != 1 && C != 3 && C != 4)
      fail(ErrorCode::kInvalidInput, "{}: AIPP gives 3 channels (1 for YUV400_U8, 4 for XRGB8888_U8 with its X byte), the input has {}", what, C);
    std::map<std::string, ir::Attr> attrs = {{"n", ir::Attr(N)},
                                             {"channels", ir::Attr(C)},
                                             {"height", ir::Attr(t.shape[2])},
                                             {"width", ir::Attr(t.shape[3])},
                                             {"padding_values", ir::Attr(std::vector<float>(op.padding_value.begin(), op.padding_value.end()))},
                                             {"dynamic", ir::Attr(int64_t{op.dynamic})}};
    int64_t image_bytes;
    if (op.dynamic) {
      image_bytes = op.max_src_image_size;
    } else {
      kernels::AippParams p = staticAippParams(op, t.shape, what);
      image_bytes = kernels::aippImageBytes(static_cast<kernels::AippFormat>(p.input_format), p.src_w, p.src_h);
      std::vector<uint8_t> block = kernels::encodeAipp(p);
      attrs["params"] = ir::Attr(std::vector<int64_t>(block.begin(), block.end()));
    }
    g.renameValue(body, g.uniqueValueName(name + "/aipp"));
    ir::Value& frame = g.addValue(name, ir::makeType(DType::kU8, {N, image_bytes}));
    frame.exact_type = true;
    std::vector<ir::ValueId> ins = {frame.id};
    if (op.dynamic) {
      ir::Value& pv = g.addValue(g.uniqueValueName(name + "_aipp"), ir::makeType(DType::kU8, {static_cast<int64_t>(kernels::aippBlockSize(N))}));
      pv.exact_type = true;
      ins.push_back(pv.id);
    }
    g.addNode("Aipp", name + "/Aipp", ins, {body}, "ai.npuc").attrs = std::move(attrs);
    replace[body] = ins;
  }
  for (ir::ValueId v : inputs) {
    auto it = replace.find(v);
    if (it == replace.end()) new_inputs.push_back(v);
    else new_inputs.insert(new_inputs.end(), it->second.begin(), it->second.end());
  }
  g.inputs() = new_inputs;
  g.topoSort();
  ops::inferShapes(g);
}

// ---------------------------------------------------------------------------------------------------------
// The YAML form of a parameter block: the named fields of kernels::aippParamsFromFields (one table of the seed's
// names for YAML, Runtime's fields and the C API).

static kernels::AippParams aippParamsFromYamlNodes(const std::string& text, const std::string& source) {
  YAML::Node root = withContext(source, [&] { return loadYaml(text); });
  if (!root.IsMap()) fail(ErrorCode::kInvalidInput, "{}: an AIPP parameter block is a YAML mapping of the seed's field names", source);
  auto scalar = [&](const YAML::Node& v, const std::string& where) {
    if (!v.IsScalar()) fail(ErrorCode::kInvalidInput, "{}: {}: must be a single value", source, where);
    return v.Scalar();
  };
  std::vector<kernels::AippFieldValue> fields;
  size_t batch_list = 0;
  for (auto it = root.begin(); it != root.end(); ++it) {
    std::string key = it->first.as<std::string>();
    if (key != "batch") {
      fields.push_back({key, -1, scalar(it->second, key)});
      continue;
    }
    const YAML::Node list = it->second;  // (a copy: a reference would outlive yaml-cpp's iterator proxy)
    if (!list.IsSequence() || list.size() == 0)
      fail(ErrorCode::kInvalidInput, "{}: batch: must be a non-empty list of kAippDynamicBatchPara records", source);
    batch_list = list.size();
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].IsMap()) fail(ErrorCode::kInvalidInput, "{}: batch[{}]: must be a mapping", source, i);
      for (auto r = list[i].begin(); r != list[i].end(); ++r) {
        std::string name = r->first.as<std::string>();
        fields.push_back({name, static_cast<int>(i), scalar(r->second, fmt::format("batch[{}].{}", i, name))});
      }
    }
  }
  return withContext(source, [&] { return kernels::aippParamsFromFields(fields, batch_list); });
}

kernels::AippParams aippParamsFromYaml(const std::string& text, const std::string& source) {
  try {
    return aippParamsFromYamlNodes(text, source);
  } catch (const YAML::Exception& e) {  // a node of an unexpected kind
    fail(ErrorCode::kInvalidInput, "{}: unexpected YAML structure at line {}, column {}: {}", source, e.mark.line + 1,
         e.mark.column + 1, e.msg);
  }
}

std::string aippParamsToYaml(const kernels::AippParams& p) {
  std::string s;
  bool batch = false;
  int image = -1;
  for (const kernels::AippFieldValue& f : kernels::aippFields(p)) {
    if (f.image < 0) {
      s += fmt::format("{}: {}\n", f.name, f.text);
      continue;
    }
    if (!batch) s += "batch:\n", batch = true;
    s += fmt::format("{}{}: {}\n", f.image != image ? "  - " : "    ", f.name, f.text);
    image = f.image;
  }
  return s;
}

}  // namespace npuc::prepost
