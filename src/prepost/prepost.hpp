// DRP-AI pre/post-processing definitions (DRP-AI Translator manual §5, legacy full format Appendix A): the
// typed model, the parser, the validator and the shape/type propagation through the operation lists.
//
// A definition names the tensors at the four boundaries (input_to_pre → preprocess → input_to_body → model →
// output_from_body → postprocess → output_from_post) and, for each preprocess/postprocess entry, a list of
// operations. parsePrePost() checks everything the manual states (keys, values, names, operation order, the
// type/order matching of §5.3.1/§5.4.1, each operation's limitations) and fills in every operation's input
// and output tensor (shape, order, image format, element type), so that lowering can insert graph nodes
// without re-deriving anything. Errors are npuc::Error(kInvalidInput) naming the file, the key path and the
// rule; where the manual prints a message (§9: [Error Y01..Y03], KeyError, [Error(DRP Converter-007)]) the
// message starts with the manual's text. docs/prepost.md lists the conventions and rules.
#pragma once

#include "kernels/prepost.hpp"
#include "npuc/dtype.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace npuc::prepost {

/// Dimension order of a tensor ("order" key; dorder_in/dorder_out in the full format).
enum class Order { kHWC, kCHW, kC };
/// Element type ("type" key; the manual also calls it the data "format"). kUint16 is only produced by
/// argminmax (DOUT_TYPE 1).
/// Element types of pre/post-processing tensors: npuc's one DType, of which the definitions use uint8, uint16,
/// float16 and float32 (toString gives the YAML spelling: "uint8", "uint16", "fp16", "fp32").
using ElemType = DType;
/// Image format ("format" key of input_to_pre / input_to_body). kNone on the post side, which has no format.
enum class ImageFormat { kNone, kRGB, kBGR, kYUY2, kGray };
enum class Stage { kPre, kPost };

std::string_view toString(Order o);
std::string_view toString(ElemType t);
std::string_view toString(ImageFormat f);
std::string_view toString(Stage s);

/// A tensor as it flows through the operations.
struct TensorInfo {
  std::vector<int64_t> shape;  // in `order`: HWC = [H, W, C], CHW = [C, H, W], C = [C]
  Order order = Order::kHWC;
  ImageFormat format = ImageFormat::kNone;
  ElemType type = ElemType::kU8;

  int64_t height() const;  // 1 for order C
  int64_t width() const;   // 1 for order C
  int64_t channels() const;
  int64_t elements() const;
  bool operator==(const TensorInfo&) const = default;
};
/// "[480,640,2] HWC YUY2 uint8"
std::string describe(const TensorInfo& t);

/// One piece of output_from_body's shape_post: the body output split along its channel axis.
struct ShapePost {
  std::string name;
  std::vector<int64_t> shape;
  bool operator==(const ShapePost&) const = default;
};

/// An element of input_to_pre, input_to_body, output_from_body or output_from_post.
struct TensorDecl {
  std::string name;
  std::vector<int64_t> shape;
  Order order = Order::kHWC;
  ImageFormat format = ImageFormat::kNone;  // input_to_pre / input_to_body only
  ElemType type = ElemType::kF16;
  std::vector<ShapePost> shape_post;  // output_from_body only; empty = passed whole
  TensorInfo info() const { return {shape, order, format, type}; }
  bool operator==(const TensorDecl&) const = default;
};

// ---- Operations (§5.3.1 / §5.4.1) and their parameters (§5.3.2 / §5.4.2) ----

enum class OpKind {
  // preprocessing, in the order §5.3.1 requires
  kTranspose,      // pre: CHW→HWC uint8; post: HWC→CHW fp16
  kConvYuv2Rgb,
  kConvX2Gray,
  kCrop,
  kResizeHwc,
  kCastAnyToFp16,
  kNormalize,
  kMemcopy,  // pre and post
  // postprocessing only (order of §5.4.1: transpose, softmax, cast_fp16_fp32, argminmax, memcopy)
  kSoftmax,
  kCastFp16Fp32,
  kArgMinMax,
};
std::string_view toString(OpKind k);  // the YAML op name

/// transpose(WORD_SIZE, IS_CHW2HWC): pre 0 / 1 (1 byte, CHW→HWC), post 1 / 0 (2 bytes, HWC→CHW).
struct TransposeParams {
  int64_t word_size = 0;
  int64_t is_chw2hwc = 1;
  bool operator==(const TransposeParams&) const = default;
};

/// DIN_YUV_FORMAT codes of conv_yuv2rgb (§5.3.2 table): the kernels' enum, whose values are those codes.
using YuvFormat = kernels::YuvFormat;
/// The name the manual's table prints for a code ("Y0UY1V", "NV12", …).
std::string_view toString(YuvFormat f);
/// The input_to_pre format the table of §5.3.2 requires for a DIN_YUV_FORMAT code (YUY2, or RGB for IMC1/IMC3).
ImageFormat requiredInputFormat(YuvFormat f);

enum class RgbFormat { kRGB = 0, kBGR = 1 };
struct ConvYuv2RgbParams {
  YuvFormat din_yuv_format = YuvFormat::kYUYV;  // default 0
  RgbFormat dout_rgb_format = RgbFormat::kRGB;    // default 0
  bool operator==(const ConvYuv2RgbParams&) const = default;
};

/// DIN_FORMAT codes of conv_x2gray.
enum class GrayInput : int32_t { kY0UY1V = 0, kY0VY1U = 1, kUY0VY1 = 2, kVUY1Y0 = 3, kRGB24 = 4096, kBGR24 = 4097 };
struct ConvX2GrayParams {
  GrayInput din_format = GrayInput::kY0UY1V;  // no default in the manual: required
  bool operator==(const ConvX2GrayParams&) const = default;
};

/// crop(CROP_POS_X, CROP_POS_Y, shape_out, DATA_TYPE, DATA_FORMAT); all five required ([Error Y03]).
struct CropParams {
  int64_t pos_x = 0, pos_y = 0;
  int64_t out_height = 0, out_width = 0;  // shape_out: [cropped height, cropped width]
  int64_t data_type = 0;                  // 0 = 1 byte (uint8), 1 = 2 bytes (uint16, fp16)
  Order data_format = Order::kHWC;        // DATA_FORMAT 0 = HWC, 1 = CHW
  bool operator==(const CropParams&) const = default;
};

enum class ResizeAlg { kNearest = 0, kBilinear = 1 };
struct ResizeHwcParams {
  ResizeAlg alg = ResizeAlg::kNearest;  // RESIZE_ALG, default 0
  ElemType data_type = ElemType::kU8;  // DATA_TYPE 0 = uint8 (default), 1 = fp16
  int64_t out_height = 0, out_width = 0;  // shape_out (required)
  bool operator==(const ResizeHwcParams&) const = default;
};

struct CastAnyToFp16Params {
  ElemType din_format = ElemType::kU8;  // DIN_FORMAT 0 = uint8 (default), 1 = fp16, 2 = fp32
  bool operator==(const CastAnyToFp16Params&) const = default;
};

/// Dout = (Din + cof_add) * cof_mul, per channel; DOUT_RGB_ORDER 1 swaps R and B (coefficients in the
/// order after the swap).
struct NormalizeParams {
  bool swap_rb = false;  // DOUT_RGB_ORDER (required)
  std::vector<double> cof_add, cof_mul;
  bool operator==(const NormalizeParams&) const = default;
};

struct MemcopyParams {
  int64_t word_size = 2;  // fixed at 2
  bool operator==(const MemcopyParams&) const = default;
};

struct SoftmaxParams {
  ElemType dout_format = ElemType::kF16;  // DOUT_FORMAT 0 = FP16 (default), 1 = FP32
  bool operator==(const SoftmaxParams&) const = default;
};

enum class CastMode { kFp16ToFp32 = 0, kFp32ToFp16 = 1 };
struct CastFp16Fp32Params {
  CastMode mode = CastMode::kFp16ToFp32;  // CAST_MODE, default 0
  bool operator==(const CastFp16Fp32Params&) const = default;
};

enum class ArgAxis { kChannel = 0, kWidth = 1, kHeight = 2 };
enum class ArgMode { kArgMax = 0, kArgMin = 1 };
/// argminmax(DIN_FORMAT, DOUT_TYPE, AXIS, ARG_MODE); all four required (no defaults in the manual).
struct ArgMinMaxParams {
  Order din_format = Order::kHWC;     // 0 = HWC, 1 = CHW
  ElemType dout_type = ElemType::kU8;  // 0 = uint8, 1 = uint16
  ArgAxis axis = ArgAxis::kChannel;
  ArgMode mode = ArgMode::kArgMax;
  bool operator==(const ArgMinMaxParams&) const = default;
};

using OpParams = std::variant<TransposeParams, ConvYuv2RgbParams, ConvX2GrayParams, CropParams, ResizeHwcParams,
                              CastAnyToFp16Params, NormalizeParams, MemcopyParams, SoftmaxParams, CastFp16Fp32Params,
                              ArgMinMaxParams>;

struct Operation {
  OpKind kind = OpKind::kMemcopy;
  OpParams params = MemcopyParams{};
  TensorInfo in, out;  // filled by the propagation
  bool operator==(const Operation&) const = default;
};

/// One element of preprocess / postprocess: src → operations → dest (every operation is 1-in 1-out, so
/// src and dest hold one name each).
struct Process {
  std::string src, dest;
  std::vector<Operation> operations;
  bool operator==(const Process&) const = default;
};

struct PrePost {
  std::string source;  // file name, for messages (not part of equality)
  std::vector<TensorDecl> input_to_pre, input_to_body, output_from_body, output_from_post;
  /// In file order. A postprocess src may be another postprocess entry's dest (a chain); pre entries read
  /// input_to_pre only.
  std::vector<Process> preprocess, postprocess;

  const TensorDecl* findInputToPre(const std::string& name) const;
  const TensorDecl* findInputToBody(const std::string& name) const;
  const TensorDecl* findOutputFromBody(const std::string& name) const;
  const TensorDecl* findOutputFromPost(const std::string& name) const;
  bool operator==(const PrePost& o) const {
    return input_to_pre == o.input_to_pre && input_to_body == o.input_to_body && output_from_body == o.output_from_body &&
           output_from_post == o.output_from_post && preprocess == o.preprocess && postprocess == o.postprocess;
  }
};

struct ParseOptions {
  /// -PrePostFULL: the legacy full format of Appendix A (shape_in/dtype_in/dorder_in/… on every entry and
  /// operation, checked against the propagation).
  bool full_format = false;
  /// -CheckPrePost: with a model given, a name mismatch between input_to_body/output_from_body and the model is
  /// reported as [Error Y01] (listing the model's names); off, as [Error(DRP Converter-007)]. All other checks
  /// run either way.
  bool check_prepost = true;
  /// The model's input / output node names; empty = not known (the name checks then use the YAML alone).
  std::vector<std::string> model_inputs, model_outputs;
};

PrePost parsePrePost(const std::string& yaml_text, const std::string& source_name, const ParseOptions& options = {});
PrePost loadPrePost(const std::filesystem::path& path, const ParseOptions& options = {});
/// The definition in the current format with every parameter written out (defaults filled in); parsePrePost reads
/// it back to the same PrePost.
std::string toYaml(const PrePost& pp);

/// The output of one operation on `in`, after checking the operation's input type/order (§5.3.1 / §5.4.1)
/// and its limitations (§5.3.2 / §5.4.2). Throws npuc::Error naming the rule. Used by the parser; exposed for
/// lowering and tests.
TensorInfo applyOperation(Stage stage, const Operation& op, const TensorInfo& in);

/// A model input/output as the ONNX file has it (NCHW; a dimension <= 0 is unknown).
struct ModelTensorShape {
  std::string name;
  std::vector<int64_t> dims;
};
/// The "size of ONNX vs. YAML" check: each input_to_body / output_from_body shape against the model's, with
/// the model's NCHW mapped to the YAML's HWC (Appendix B: N must be 1 and is dropped; a channel-last NHWC
/// model — Appendix B's transposes removed — is accepted too). `skip` is -NotCheckSizeONNXvsYAML.
void checkSizeOnnxVsYaml(const PrePost& pp, const std::vector<ModelTensorShape>& model_inputs,
                         const std::vector<ModelTensorShape>& model_outputs, bool skip = false);

}  // namespace npuc::prepost
