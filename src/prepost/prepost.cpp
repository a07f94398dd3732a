// DRP-AI pre/post-processing definitions: the names of their values and the entry points, which read as the steps
// of parse.cpp (YAML to the typed definition, §5 and Appendix A), validate.cpp (names, §9 messages) and shapes.cpp
// (each operation's rules and output, §5.3/§5.4). Section numbers refer to the DRP-AI Translator manual;
// docs/prepost.md has the conventions these files implement.
#include "prepost/prepost.hpp"

#include "prepost/internal.hpp"
#include "support/error.hpp"
#include "support/file.hpp"
#include "support/yaml.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace npuc::prepost {

using namespace detail;

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

namespace detail {

void bad(const std::string& msg) { throwError(ErrorCode::kInvalidInput, msg); }

std::string shapeStr(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

size_t orderRank(Order o) { return o == Order::kC ? 1 : 3; }

std::string_view section(Stage s) { return s == Stage::kPre ? "§5.3" : "§5.4"; }

const TensorDecl* findDecl(const std::vector<TensorDecl>& v, const std::string& name) {
  for (auto& d : v)
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace detail

std::string describe(const TensorInfo& t) {
  std::string s = fmt::format("{} {}", shapeStr(t.shape), toString(t.order));
  if (t.format != ImageFormat::kNone) s += fmt::format(" {}", toString(t.format));
  return s + fmt::format(" {}", toString(t.type));
}

const TensorDecl* PrePost::findInputToPre(const std::string& n) const { return findDecl(input_to_pre, n); }
const TensorDecl* PrePost::findInputToBody(const std::string& n) const { return findDecl(input_to_body, n); }
const TensorDecl* PrePost::findOutputFromBody(const std::string& n) const { return findDecl(output_from_body, n); }
const TensorDecl* PrePost::findOutputFromPost(const std::string& n) const { return findDecl(output_from_post, n); }

PrePost parsePrePost(const std::string& yaml_text, const std::string& source_name, const ParseOptions& options) {
  return withContext(source_name, [&] { return readingYaml([&] {
    ParsedDefinition d = parseDefinition(yaml_text, source_name, options.full_format);
    checkModelNames(d.pp, options);
    checkPreNames(d.pp, d.pre, options);
    std::map<std::string, TensorInfo> sources = postSources(d.pp);
    checkPostNames(d.pp, d.post, options, sources);
    propagate(d, sources);
    return std::move(d.pp);
  }); });
}

PrePost loadPrePost(const std::filesystem::path& path, const ParseOptions& options) {
  return parsePrePost(readFileText(path, kMaxConfigBytes, "a pre/post-processing definition"), path.string(), options);
}

}  // namespace npuc::prepost
