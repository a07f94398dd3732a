// Shapes and types through a DRP-AI pre/post-processing definition: each operation's input checks, limitations
// (§5.3.2 / §5.4.2) and output (applyOperation), run through every entry from its src, with the full format's
// declarations (Appendix A) and the declared dest checked against what the operations produce.
#include "prepost/internal.hpp"
#include "support/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace npuc::prepost {

using namespace detail;

namespace {

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

/// One operation applied to its input `in` (H, W, C: its height, width and channels): a member per operation
/// checks the input and the operation's limitations and gives the output.
struct Apply {
  Stage stage;
  const Operation& op;
  OpKind k;
  const TensorInfo& in;
  int64_t H, W, C;

  void limit(bool ok, const std::string& rule, const std::string& got) const {
    if (!ok) limitation(stage, k, rule, got);
  }
  std::string shapeGot() const {
    return fmt::format("shape_in {} {}: height {}, width {}, ch {}", shapeStr(in.shape), toString(in.order), H, W, C);
  }

  TensorInfo transpose() const;
  TensorInfo convYuv2Rgb() const;
  TensorInfo convX2Gray() const;
  TensorInfo crop() const;
  TensorInfo resizeHwc() const;
  TensorInfo castAnyToFp16() const;
  TensorInfo normalize() const;
  TensorInfo memcopy() const;
  TensorInfo softmax() const;
  TensorInfo castFp16Fp32() const;
  TensorInfo argMinMax() const;
};

TensorInfo Apply::transpose() const {
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

TensorInfo Apply::convYuv2Rgb() const {
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

TensorInfo Apply::convX2Gray() const {
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

TensorInfo Apply::crop() const {
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

TensorInfo Apply::resizeHwc() const {
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

TensorInfo Apply::castAnyToFp16() const {
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

TensorInfo Apply::normalize() const {
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

TensorInfo Apply::memcopy() const {
  requireType(stage, k, in, {ElemType::kF16});
  return in;
}

TensorInfo Apply::softmax() const {
  const auto& p = std::get<SoftmaxParams>(op.params);
  requireType(stage, k, in, {ElemType::kF16});
  requireOrder(stage, k, in, {Order::kC});
  limit(C >= 1 && C <= 16384, "shape_in: 1 <= ch <= 16384", shapeGot());
  TensorInfo o = in;
  o.type = p.dout_format;
  return o;
}

TensorInfo Apply::castFp16Fp32() const {
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

TensorInfo Apply::argMinMax() const {
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
}  // namespace

TensorInfo applyOperation(Stage stage, const Operation& op, const TensorInfo& in) {
  const OpKind k = op.kind;
  if (in.shape.size() != orderRank(in.order))
    throwError(ErrorCode::kInvalidArgument, fmt::format("{}: input shape {} does not fit order {}", toString(k),
                                                        shapeStr(in.shape), toString(in.order)));
  const int64_t H = in.height(), W = in.width(), C = in.channels();
  const Apply a{stage, op, k, in, H, W, C};
  switch (k) {
    case OpKind::kTranspose: return a.transpose();
    case OpKind::kConvYuv2Rgb: return a.convYuv2Rgb();
    case OpKind::kConvX2Gray: return a.convX2Gray();
    case OpKind::kCrop: return a.crop();
    case OpKind::kResizeHwc: return a.resizeHwc();
    case OpKind::kCastAnyToFp16: return a.castAnyToFp16();
    case OpKind::kNormalize: return a.normalize();
    case OpKind::kMemcopy: return a.memcopy();
    case OpKind::kSoftmax: return a.softmax();
    case OpKind::kCastFp16Fp32: return a.castFp16Fp32();
    case OpKind::kArgMinMax: return a.argMinMax();
  }
  bad("unknown operation");
}

namespace {

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

void detail::propagate(ParsedDefinition& def, const std::map<std::string, TensorInfo>& sources) {
  PrePost& pp = def.pp;
  std::vector<ParsedProcess>& pre = def.pre;
  std::vector<ParsedProcess>& post = def.post;
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
}

}  // namespace npuc::prepost
