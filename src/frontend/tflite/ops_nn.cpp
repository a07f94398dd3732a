// The layers with windows and weights: convolutions, fully connected, pooling, resizing. Each reads and writes its
// activation channels-first; weights are permuted to ONNX's order as constants (before any DequantizeLinear, whose
// axis follows them). SAME / VALID padding is TFLite's, written as explicit ONNX pads.
#include "frontend/tflite/importer.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cstring>

namespace npuc::tflite_io {

namespace {

struct Window {
  int64_t out = 0, before = 0, after = 0;
};

/// TFLite's padding along one axis: SAME gives ceil(in / stride) outputs with total padding
/// max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0), the odd one at the end; VALID none.
Window window(int64_t in, int64_t k, int64_t stride, int64_t dilation, fb::Padding padding, const char* axis) {
  constexpr int64_t kMaxStep = int64_t{1} << 20;  // strides and dilations beyond this are no model's
  if (k <= 0 || stride <= 0 || dilation <= 0 || k > kMaxDim || in > kMaxDim || stride > kMaxStep || dilation > kMaxStep)
    fail(ErrorCode::kInvalidInput, "{}: window {}, stride {} and dilation {} must be positive (and the stride and "
                                   "dilation at most {})", axis, k, stride, dilation, kMaxStep);
  const int64_t eff = (k - 1) * dilation + 1;
  Window w;
  if (padding == fb::Padding_SAME) {
    w.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((w.out - 1) * stride + eff - in, 0);
    w.before = total / 2;
    w.after = total - w.before;
  } else if (padding == fb::Padding_VALID) {
    if (in < eff) fail(ErrorCode::kInvalidInput, "{}: window {} (dilated) is larger than the input {} (VALID)", axis, eff, in);
    w.out = (in - eff + stride) / stride;
  } else {
    fail(ErrorCode::kInvalidInput, "padding {} is neither SAME nor VALID", static_cast<int>(padding));
  }
  return w;
}

std::vector<int64_t> pads(const Window& h, const Window& w) { return {h.before, w.before, h.after, w.after}; }

}  // namespace

void Importer::conv2d() {
  expectInputs(2, 3);
  expectOutputs(1);
  const fb::Conv2DOptions* o = options<fb::Conv2DOptions>();
  const int32_t wt = weights(1, "the filter");
  ir::ValueId x = get(input(0), true);
  const Shape xs = shapeOf(x), ws = declaredShape(wt);
  if (xs.size() != 4 || ws.size() != 4)
    fail(ErrorCode::kInvalidInput, "input shape {} and filter shape {}: CONV_2D takes 4-D ones", shapeStr(permuted(xs, kToChannelsLast)), shapeStr(ws));
  if (ws[3] <= 0 || xs[1] % ws[3] != 0 || ws[0] % (xs[1] / ws[3]) != 0)
    fail(ErrorCode::kInvalidInput, "filter {} for {} input channels: its last dim must divide them (groups)", shapeStr(ws), xs[1]);
  const int64_t sh = o ? o->stride_h() : 0, sw = o ? o->stride_w() : 0, dh = o ? o->dilation_h_factor() : 1,
                dw = o ? o->dilation_w_factor() : 1;
  const fb::Padding pad = o ? o->padding() : fb::Padding_SAME;
  Window h = window(xs[2], ws[1], sh, dh, pad, "height"), w = window(xs[3], ws[2], sw, dw, pad, "width");
  std::vector<ir::ValueId> ins = {x, constantValue(wt, {0, 3, 1, 2})};
  if (hasInput(2)) ins.push_back(constantValue(weights(2, "the bias")));
  ir::ValueId y = apply("Conv", ins,
                        {{"kernel_shape", std::vector<int64_t>{ws[1], ws[2]}}, {"strides", std::vector<int64_t>{sh, sw}},
                         {"dilations", std::vector<int64_t>{dh, dw}}, {"pads", pads(h, w)}, {"group", xs[1] / ws[3]}});
  bindOutput(0, activation(y, o ? o->fused_activation_function() : fb::ActivationFunctionType_NONE), true);
}

void Importer::depthwiseConv2d() {
  expectInputs(2, 3);
  expectOutputs(1);
  const fb::DepthwiseConv2DOptions* o = options<fb::DepthwiseConv2DOptions>();
  const int32_t wt = weights(1, "the filter");
  ir::ValueId x = get(input(0), true);
  const Shape xs = shapeOf(x), ws = declaredShape(wt);
  if (xs.size() != 4 || ws.size() != 4 || ws[0] != 1)
    fail(ErrorCode::kInvalidInput, "input shape {} and filter shape {}: DEPTHWISE_CONV_2D takes a 4-D input and a "
                                   "[1, H, W, C * multiplier] filter", shapeStr(permuted(xs, kToChannelsLast)), shapeStr(ws));
  // Output channel c * multiplier + m reads input channel c: ONNX's grouped convolution with one group per channel.
  if (xs[1] <= 0 || ws[3] % xs[1] != 0)
    fail(ErrorCode::kInvalidInput, "filter {} for {} input channels: its channels must be a multiple of them", shapeStr(ws), xs[1]);
  if (o && o->depth_multiplier() > 0 && o->depth_multiplier() != ws[3] / xs[1])
    fail(ErrorCode::kInvalidInput, "depth_multiplier {} but the filter has {} channels for {} input channels",
         o->depth_multiplier(), ws[3], xs[1]);
  const int64_t sh = o ? o->stride_h() : 0, sw = o ? o->stride_w() : 0, dh = o ? o->dilation_h_factor() : 1,
                dw = o ? o->dilation_w_factor() : 1;
  const fb::Padding pad = o ? o->padding() : fb::Padding_SAME;
  Window h = window(xs[2], ws[1], sh, dh, pad, "height"), w = window(xs[3], ws[2], sw, dw, pad, "width");
  std::vector<ir::ValueId> ins = {x, constantValue(wt, {3, 0, 1, 2})};
  if (hasInput(2)) ins.push_back(constantValue(weights(2, "the bias")));
  ir::ValueId y = apply("Conv", ins,
                        {{"kernel_shape", std::vector<int64_t>{ws[1], ws[2]}}, {"strides", std::vector<int64_t>{sh, sw}},
                         {"dilations", std::vector<int64_t>{dh, dw}}, {"pads", pads(h, w)}, {"group", xs[1]}});
  bindOutput(0, activation(y, o ? o->fused_activation_function() : fb::ActivationFunctionType_NONE), true);
}

void Importer::transposeConv() {
  expectInputs(3, 4);
  expectOutputs(1);
  const fb::TransposeConvOptions* o = options<fb::TransposeConvOptions>();
  transposeConvolution(input(2), 1, hasInput(3) ? 3 : -1, constInput(0, "output_shape"), o ? o->padding() : fb::Padding_SAME,
                       o ? o->stride_h() : 0, o ? o->stride_w() : 0,
                       o ? o->fused_activation_function() : fb::ActivationFunctionType_NONE);
}

void Importer::transposeConvBias() {
  expectInputs(3, 3);
  expectOutputs(1);
  // MediaPipe's operator: TRANSPOSE_CONV with a bias, its parameters the C struct TfLiteTransposeConvParams as
  // custom options (int32 padding: 1 SAME, 2 VALID; int32 stride_width, stride_height); the output's shape is the
  // output tensor's.
  const auto* raw = op_.op->custom_options();
  if (!raw || raw->size() < 12)
    fail(ErrorCode::kInvalidInput, "custom_options hold {} bytes; the 12 of its parameters (padding, strides) are expected",
         raw ? raw->size() : 0);
  int32_t v[3];
  std::memcpy(v, raw->data(), sizeof v);
  if (v[0] != 1 && v[0] != 2) fail(ErrorCode::kInvalidInput, "padding {} is neither 1 (SAME) nor 2 (VALID)", v[0]);
  const Shape out = declaredShape(output(0));
  transposeConvolution(input(0), 1, 2, std::vector<int64_t>(out.begin(), out.end()),
                       v[0] == 1 ? fb::Padding_SAME : fb::Padding_VALID, v[2], v[1], fb::ActivationFunctionType_NONE);
}

void Importer::transposeConvolution(int32_t xt, int w_input, int bias_input, const std::vector<int64_t>& out_shape,
                                    fb::Padding pad, int64_t sh, int64_t sw, fb::ActivationFunctionType act) {
  const int32_t wt = weights(w_input, "the filter");
  ir::ValueId x = get(xt, true);
  const Shape xs = shapeOf(x), ws = declaredShape(wt);
  for (int64_t d : out_shape)
    if (d <= 0 || d > kMaxDim) fail(ErrorCode::kInvalidInput, "output_shape {} holds a dimension that is not a size", shapeStr(out_shape));
  if (xs.size() != 4 || ws.size() != 4 || out_shape.size() != 4 || ws[3] != xs[1] || out_shape[3] != ws[0] ||
      out_shape[0] != xs[0])
    fail(ErrorCode::kInvalidInput, "input {}, filter {} (out channels, H, W, in channels) and output_shape {} do not agree",
         shapeStr(permuted(xs, kToChannelsLast)), shapeStr(ws), shapeStr(out_shape));
  // TFLite pads as the convolution from output_shape back to the input would: the full transposed convolution
  // (stride * (in - 1) + k) cropped by that padding at the start, and to output_shape at the end.
  std::vector<int64_t> p(4), extra(2);
  for (int a = 0; a < 2; ++a) {
    const int64_t in = xs[2 + a], k = ws[1 + a], s = a ? sw : sh, out = out_shape[1 + a];
    Window win = window(out, k, s, 1, pad, a ? "width" : "height");
    if (win.out != in)
      fail(ErrorCode::kInvalidInput, "output_shape {} gives {} input rows/columns along {}; the input has {}",
           shapeStr(out_shape), win.out, a ? "width" : "height", in);
    const int64_t full = s * (in - 1) + k, end = full - win.before - out;
    p[a] = win.before;
    p[2 + a] = std::max<int64_t>(end, 0);
    extra[a] = std::max<int64_t>(-end, 0);
  }
  std::vector<ir::ValueId> ins = {x, constantValue(wt, {3, 0, 1, 2})};
  if (bias_input >= 0) ins.push_back(constantValue(weights(bias_input, "the bias")));
  std::map<std::string, ir::Attr> attrs = {{"kernel_shape", std::vector<int64_t>{ws[1], ws[2]}},
                                           {"strides", std::vector<int64_t>{sh, sw}}, {"pads", p}};
  if (extra[0] || extra[1]) attrs["output_padding"] = extra;
  ir::ValueId y = apply("ConvTranspose", ins, attrs);
  bindOutput(0, activation(y, act), true);
}

void Importer::fullyConnected() {
  expectInputs(2, 3);
  expectOutputs(1);
  const fb::FullyConnectedOptions* o = options<fb::FullyConnectedOptions>();
  if (o && o->weights_format() != fb::FullyConnectedOptionsWeightsFormat_DEFAULT)
    fail(ErrorCode::kUnsupported, "weights_format {} (shuffled weights) is not imported", static_cast<int>(o->weights_format()));
  const int32_t wt = weights(1, "the weights");
  const Shape ws = declaredShape(wt);
  if (ws.size() != 2) fail(ErrorCode::kInvalidInput, "weights of shape {}; FULLY_CONNECTED takes [N, K]", shapeStr(ws));
  ir::ValueId x = get(input(0), false);
  const Shape xs = shapeOf(x);
  const int64_t k = ws[1], n = ws[0], total = product(xs);
  if (k <= 0 || total % k != 0)
    fail(ErrorCode::kInvalidInput, "an input of shape {} does not split into rows of the weights' K = {}", shapeStr(xs), k);
  // TFLite's rows: every K consecutive values (the input flattened); the output keeps the input's leading dims
  // with keep_num_dims.
  ir::ValueId rows = reshape(x, {total / k, k});
  std::vector<ir::ValueId> ins = {rows, constantValue(wt)};
  if (hasInput(2)) ins.push_back(constantValue(weights(2, "the bias")));
  ir::ValueId y = apply("Gemm", ins, {{"transB", int64_t{1}}});
  if (o && o->keep_num_dims()) {
    Shape out = xs;
    out.back() = n;
    y = reshape(y, out);
  }
  bindOutput(0, activation(y, o ? o->fused_activation_function() : fb::ActivationFunctionType_NONE), false);
}

void Importer::pool2d() {
  expectInputs(1, 1);
  expectOutputs(1);
  const fb::Pool2DOptions* o = options<fb::Pool2DOptions>();
  if (!o) fail(ErrorCode::kInvalidInput, "no Pool2DOptions (the window size)");
  ir::ValueId x = get(input(0), true);
  const Shape xs = shapeOf(x);
  if (xs.size() != 4) fail(ErrorCode::kInvalidInput, "an input of shape {}; pooling takes 4-D ones", shapeStr(xs));
  Window h = window(xs[2], o->filter_height(), o->stride_h(), 1, o->padding(), "height"),
         w = window(xs[3], o->filter_width(), o->stride_w(), 1, o->padding(), "width");
  const bool avg = op_.code == fb::BuiltinOperator_AVERAGE_POOL_2D;
  std::map<std::string, ir::Attr> attrs = {{"kernel_shape", std::vector<int64_t>{o->filter_height(), o->filter_width()}},
                                           {"strides", std::vector<int64_t>{o->stride_h(), o->stride_w()}},
                                           {"pads", pads(h, w)}};
  // TFLite averages over the window's taps inside the input (padding not counted).
  if (avg) attrs["count_include_pad"] = int64_t{0};
  ir::ValueId y = apply(avg ? "AveragePool" : "MaxPool", {x}, attrs);
  bindOutput(0, activation(y, o->fused_activation_function()), true);
}

void Importer::resize() {
  expectInputs(2, 2);
  expectOutputs(1);
  const bool bilinear = op_.code == fb::BuiltinOperator_RESIZE_BILINEAR;
  bool align = false, half = false;
  if (bilinear) {
    if (const auto* o = options<fb::ResizeBilinearOptions>()) align = o->align_corners(), half = o->half_pixel_centers();
  } else if (const auto* o = options<fb::ResizeNearestNeighborOptions>()) {
    align = o->align_corners(), half = o->half_pixel_centers();
  }
  if (align && half) fail(ErrorCode::kInvalidInput, "align_corners and half_pixel_centers are both set (TFLite refuses it)");
  const std::vector<int64_t> size = constInput(1, "size");
  ir::ValueId x = get(input(0), true);
  const Shape xs = shapeOf(x);
  if (xs.size() != 4 || size.size() != 2 || size[0] <= 0 || size[1] <= 0 || size[0] > kMaxDim || size[1] > kMaxDim)
    fail(ErrorCode::kInvalidInput, "input {} and size {}: a 4-D input and two positive sizes are expected",
         shapeStr(permuted(xs, kToChannelsLast)), shapeStr(size));
  // TFLite's source coordinate: align_corners out * (in - 1) / (out - 1); half_pixel_centers (out + 0.5) * in / out
  // (- 0.5 for bilinear); otherwise out * in / out. Nearest rounds it down (half away from zero with align_corners).
  std::string coord = align ? "align_corners" : half ? (bilinear ? "half_pixel" : "tf_half_pixel_for_nn") : "asymmetric";
  std::map<std::string, ir::Attr> attrs = {{"mode", std::string(bilinear ? "linear" : "nearest")},
                                           {"coordinate_transformation_mode", coord}};
  if (!bilinear) attrs["nearest_mode"] = std::string(align ? "round_prefer_ceil" : "floor");
  ir::ValueId none = ir::kNoValue;
  ir::ValueId y = apply("Resize", {x, none, none, ints(fmt::format("op{}/sizes", op_.index), {xs[0], xs[1], size[0], size[1]})}, attrs);
  bindOutput(0, y, true);
}

}  // namespace npuc::tflite_io
