// Placeholder and Const, and the layout-sensitive ops: convolutions, bias, batch normalisation, pooling and
// resizing, taken and given channels-first (NHWC graphs) or as they are (data_format NCHW).
#include "frontend/tf/importer.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace npuc::tf_io {

void Importer::placeholder(const tf::NodeDef& n) {
  expectInputs(n, 0, 0);
  tf::DataType t = attrType(n, "dtype");
  if (t != tf::DT_FLOAT)
    fail(ErrorCode::kUnsupported, "attr 'dtype' is {}; npuc imports float32 inputs", tf::DataType_Name(t));
  const std::string& name = n.name();
  Shape s;
  auto given = opts_.input_shapes.find(name);
  if (given != opts_.input_shapes.end()) {
    fixed_.insert(name);
    s = given->second;
  } else {
    const tf::AttrValue* a = attr(n, "shape");
    bool unknown_rank = a == nullptr;
    if (a && a->value_case() != tf::AttrValue::kShape) fail(ErrorCode::kInvalidInput, "attr 'shape' is not a shape");
    if (a) s = shapeOf(a->shape(), &unknown_rank);
    if (unknown_rank)
      fail(ErrorCode::kInvalidInput, "input '{}' has no shape (attr 'shape' missing or of unknown rank); give one with "
                                     "--input-shape {}=…", name, name);
    if (!s.empty() && s[0] == -1) s[0] = opts_.default_batch;  // the batch
    for (int64_t d : s)
      if (d == -1)
        fail(ErrorCode::kInvalidInput, "input '{}' has shape {} with an unknown size beyond the batch; give it with "
                                       "--input-shape {}=…", name, shapeStr(s), name);
  }
  for (int64_t d : s)
    if (d <= 0 || d > kMaxDim) fail(ErrorCode::kInvalidInput, "input '{}': dimension {} in shape {} is not a size", name, d, shapeStr(s));
  if (product(s) > kMaxElements) fail(ErrorCode::kInvalidInput, "input '{}': shape {} is too large", name, shapeStr(s));
  setOut(0, cl_->input(name, s, DType::kF32), false);
}

void Importer::constOp(const tf::NodeDef& n) {
  expectInputs(n, 0, 0);
  const tf::AttrValue* a = attr(n, "value");
  if (!a) fail(ErrorCode::kInvalidInput, "attr 'value' (the constant) is missing");
  if (a->value_case() != tf::AttrValue::kTensor) fail(ErrorCode::kInvalidInput, "attr 'value' is not a tensor");
  DType dt = DType::kF32;
  Tensor t = decodeTensor(a->tensor(), &dt, "attr 'value'");
  setHost(0, std::move(t), dt);
}

void Importer::identity(const tf::NodeDef& n) {
  expectInputs(n, 1, 1);
  alias(n, 0);  // the same tensor under a second name (its conversions shared)
}

std::pair<int64_t, int64_t> Importer::padding(const tf::NodeDef& n, const std::string& mode, int64_t in, int64_t k,
                                              int64_t s, int64_t d, size_t axis,
                                              const std::vector<int64_t>& explicit_pads) const {
  (void)n;
  const int64_t eff = (k - 1) * d + 1;
  if (mode == "VALID") {
    if (in < eff) fail(ErrorCode::kInvalidInput, "padding VALID: the window ({} with dilation) is larger than the input ({})", eff, in);
    return {0, 0};
  }
  if (mode == "SAME") {
    // TensorFlow: out = ceil(in / s); the total padding split with the odd one at the end.
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>((out - 1) * s + eff - in, 0);
    return {total / 2, total - total / 2};
  }
  if (mode == "EXPLICIT") {
    if (explicit_pads.size() != 8) fail(ErrorCode::kInvalidInput, "attr 'explicit_paddings' has {} values; padding EXPLICIT needs 8", explicit_pads.size());
    int64_t b = explicit_pads[2 * axis], e = explicit_pads[2 * axis + 1];
    if (b < 0 || e < 0 || in + b + e < eff) fail(ErrorCode::kInvalidInput, "attr 'explicit_paddings': {} and {} along axis {} do not fit the window", b, e, axis);
    return {b, e};
  }
  fail(ErrorCode::kUnsupported, "attr 'padding' is '{}'; TensorFlow's are SAME, VALID and EXPLICIT", mode);
}

namespace {
/// The two spatial values of a 4-entry attr (strides, dilations, ksize) in data_format order; the batch and
/// channel entries must be 1.
std::pair<int64_t, int64_t> spatial(const std::vector<int64_t>& v, bool nhwc, const char* field) {
  if (v.size() != 4) fail(ErrorCode::kInvalidInput, "attr '{}' has {} values; it takes 4", field, v.size());
  const size_t h = nhwc ? 1 : 2, w = nhwc ? 2 : 3, c = nhwc ? 3 : 1;
  if (v[0] != 1 || v[c] != 1)
    fail(ErrorCode::kUnsupported, "attr '{}' is [{}]: npuc imports windows over the spatial axes only (batch and channel 1)",
         field, fmt::join(v, ", "));
  if (v[h] <= 0 || v[w] <= 0 || v[h] > kMaxDim || v[w] > kMaxDim) fail(ErrorCode::kInvalidInput, "attr '{}' has a value that is not positive", field);
  return {v[h], v[w]};
}
}  // namespace

void Importer::conv2d(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  const bool nhwc = channelLast(n);
  setOut(0, convolution(n, n.op() == "DepthwiseConv2dNative"), nhwc);
}

ir::ValueId Importer::convolution(const tf::NodeDef& n, bool depthwise) {
  const bool nhwc = channelLast(n);
  Val& x = in(n, 0);
  Val& f = in(n, 1);
  if (x.shape.size() != 4) fail(ErrorCode::kInvalidInput, "input 0 has shape {}; a 2-D convolution takes 4-D input", shapeStr(x.shape));
  if (f.shape.size() != 4) fail(ErrorCode::kInvalidInput, "the filter has shape {}; it must be [height, width, in, out]", shapeStr(f.shape));
  if (x.dtype != DType::kF32 || f.dtype != DType::kF32) fail(ErrorCode::kUnsupported, "a convolution of integer tensors");
  if (product(x.shape) <= 0 || product(f.shape) <= 0)
    fail(ErrorCode::kInvalidInput, "input {} and filter {}: a convolution of empty tensors", shapeStr(x.shape), shapeStr(f.shape));
  ir::ValueId xv = asLayout(x, nhwc);
  const Shape xs = irShape(xv);  // N, C, H, W
  const int64_t kh = f.shape[0], kw = f.shape[1], fin = f.shape[2], fout = f.shape[3], cin = xs[1];
  auto [sh, sw] = spatial(attrInts(n, "strides"), nhwc, "strides");
  auto [dh, dw] = spatial(attrInts(n, "dilations", std::vector<int64_t>{1, 1, 1, 1}), nhwc, "dilations");
  int64_t group = 1, outc = fout;
  ir::ValueId w;
  if (depthwise) {
    // [kh, kw, C, multiplier] -> [C * multiplier, 1, kh, kw]: output channel c * multiplier + m.
    if (fin != cin) fail(ErrorCode::kInvalidInput, "the filter has {} input channels; the input has {}", fin, cin);
    group = cin;
    outc = cin * fout;
    if (f.host) {
      w = constant("filter", permuted(f.host->reshaped({kh, kw, outc}), {2, 0, 1}).reshaped({outc, 1, kh, kw}));
    } else {
      ir::ValueId r = emit("Reshape", {asTf(f), ints("shape", {kh, kw, outc})}, {}, "/filter_flat");
      ir::ValueId t = emit("Transpose", {r}, {{"perm", std::vector<int64_t>{2, 0, 1}}}, "/filter_t");
      w = emit("Reshape", {t, ints("shape", {outc, 1, kh, kw})}, {}, "/filter");
    }
  } else {
    // [kh, kw, in, out] -> [out, in, kh, kw]; an input with a multiple of the filter's channels is a grouped one.
    if (fin <= 0 || cin % fin != 0 || fout % (cin / fin) != 0)
      fail(ErrorCode::kInvalidInput, "the filter has {} input channels; the input's {} are not a multiple of them (groups "
                                     "dividing the {} outputs)", fin, cin, fout);
    group = cin / fin;
    w = transposed(f, {3, 2, 0, 1}, "filter");
  }
  const std::string mode = attrStr(n, "padding");
  std::vector<int64_t> ex = mode == "EXPLICIT" ? attrInts(n, "explicit_paddings") : std::vector<int64_t>{};
  auto [pt, pb] = padding(n, mode, xs[2], kh, sh, dh, nhwc ? 1 : 2, ex);
  auto [pl, pr] = padding(n, mode, xs[3], kw, sw, dw, nhwc ? 2 : 3, ex);
  (void)outc;
  return emit("Conv", {xv, w},
              {{"kernel_shape", std::vector<int64_t>{kh, kw}}, {"strides", std::vector<int64_t>{sh, sw}},
               {"dilations", std::vector<int64_t>{dh, dw}}, {"pads", std::vector<int64_t>{pt, pl, pb, pr}},
               {"group", group}});
}

void Importer::conv2dBackpropInput(const tf::NodeDef& n) {
  expectInputs(n, 3, 3);
  const bool nhwc = channelLast(n);
  std::vector<int64_t> sizes = hostInts(n, 0, "input_sizes");
  Val& f = in(n, 1);
  Val& x = in(n, 2);
  if (sizes.size() != 4 || x.shape.size() != 4 || f.shape.size() != 4)
    fail(ErrorCode::kInvalidInput, "input_sizes, filter and out_backprop must each describe 4-D tensors");
  if (product(x.shape) <= 0 || product(f.shape) <= 0 || x.dtype != DType::kF32 || f.dtype != DType::kF32)
    fail(ErrorCode::kInvalidInput, "out_backprop {} and filter {} must be non-empty float tensors", shapeStr(x.shape), shapeStr(f.shape));
  for (int64_t d : sizes)
    if (d <= 0 || d > kMaxDim) fail(ErrorCode::kInvalidInput, "input_sizes [{}] are not sizes", fmt::join(sizes, ", "));
  ir::ValueId xv = asLayout(x, nhwc);
  const Shape xs = irShape(xv);
  // The filter is the forward convolution's [kh, kw, out channels of this op, its input channels].
  const int64_t kh = f.shape[0], kw = f.shape[1], oc = f.shape[2], ic = f.shape[3];
  if (ic != xs[1]) fail(ErrorCode::kInvalidInput, "the filter reads {} channels; out_backprop has {}", ic, xs[1]);
  const int64_t oh = sizes[nhwc ? 1 : 2], ow = sizes[nhwc ? 2 : 3];
  if (sizes[0] != xs[0] || sizes[nhwc ? 3 : 1] != oc)
    fail(ErrorCode::kInvalidInput, "input_sizes [{}] do not match the batch and the filter's {} channels", fmt::join(sizes, ", "), oc);
  auto [sh, sw] = spatial(attrInts(n, "strides"), nhwc, "strides");
  auto [dh, dw] = spatial(attrInts(n, "dilations", std::vector<int64_t>{1, 1, 1, 1}), nhwc, "dilations");
  const std::string mode = attrStr(n, "padding");
  std::vector<int64_t> ex = mode == "EXPLICIT" ? attrInts(n, "explicit_paddings") : std::vector<int64_t>{};
  // The padding of the forward convolution from an [oh, ow] input; the forward output must be out_backprop's size.
  auto [pt, pb] = padding(n, mode, oh, kh, sh, dh, nhwc ? 1 : 2, ex);
  auto [pl, pr] = padding(n, mode, ow, kw, sw, dw, nhwc ? 2 : 3, ex);
  auto fwd = [](int64_t in, int64_t p, int64_t k, int64_t d, int64_t s) { return (in + p - (k - 1) * d - 1) / s + 1; };
  if (fwd(oh, pt + pb, kh, dh, sh) != xs[2] || fwd(ow, pl + pr, kw, dw, sw) != xs[3])
    fail(ErrorCode::kInvalidInput, "input_sizes [{}] is not an input size the forward convolution maps to out_backprop's "
                                   "{}x{}", fmt::join(sizes, ", "), xs[2], xs[3]);
  const int64_t extra_h = oh - ((xs[2] - 1) * sh + (kh - 1) * dh + 1 - pt - pb);
  const int64_t extra_w = ow - ((xs[3] - 1) * sw + (kw - 1) * dw + 1 - pl - pr);
  ir::ValueId w = transposed(f, {3, 2, 0, 1}, "filter");
  ir::ValueId y = emit("ConvTranspose", {xv, w},
                       {{"kernel_shape", std::vector<int64_t>{kh, kw}}, {"strides", std::vector<int64_t>{sh, sw}},
                        {"dilations", std::vector<int64_t>{dh, dw}}, {"pads", std::vector<int64_t>{pt, pl, pb, pr}},
                        {"output_padding", std::vector<int64_t>{extra_h, extra_w}}});
  setOut(0, y, nhwc);
}

void Importer::biasAdd(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  const bool nhwc = channelLast(n);
  Val& x = in(n, 0);
  Val& b = in(n, 1);
  if (b.shape.size() != 1 || x.shape.empty())
    fail(ErrorCode::kInvalidInput, "the bias has shape {} for an input of shape {}; it must be 1-D", shapeStr(b.shape), shapeStr(x.shape));
  const size_t caxis = nhwc || x.shape.size() < 3 ? x.shape.size() - 1 : 1;
  if (b.shape[0] != x.shape[caxis])
    fail(ErrorCode::kInvalidInput, "the bias has {} values; the input has {} channels", b.shape[0], x.shape[caxis]);
  if (x.shape.size() == 4) {
    // The channel axis is axis 1 of the IR value either way: NHWC taken channels-first, NCHW as it is.
    ir::ValueId xv = asLayout(x, nhwc);
    ir::ValueId bv = emit("Reshape", {asTf(b), ints("shape", {b.shape[0], 1, 1})}, {}, "/bias");
    setOut(0, emit("Add", {xv, bv}), nhwc);
    return;
  }
  if (caxis != x.shape.size() - 1) fail(ErrorCode::kUnsupported, "data_format NCHW with a {}-D input", x.shape.size());
  // MatMul + BiasAdd, the matrix product read by this op only: the bias becomes the Gemm's C (one fully-connected
  // layer, as the targets have it).
  const ir::NodeId p = x.host ? ir::kNoNode : g_->value(held(x)).producer;
  if (p != ir::kNoNode && g_->node(p).op == "Gemm" && g_->node(p).inputs.size() == 2 && b.dtype == DType::kF32 &&
      readers_[ins_.at(static_cast<size_t>(cur_))[0]] == 1) {
    g_->node(p).inputs.push_back(asTf(b));
    ops::inferNodeTypes(*g_, p);
    return alias(n, 0);
  }
  setOut(0, emit("Add", {asTf(x), asTf(b)}), false);
}

void Importer::fusedBatchNorm(const tf::NodeDef& n) {
  expectInputs(n, 5, 5);
  if (attrBool(n, "is_training", true))
    fail(ErrorCode::kUnsupported, "attr 'is_training' is true (TensorFlow's default): the op normalises by the batch's "
                                  "own statistics; a frozen inference graph sets it false");
  const bool nhwc = channelLast(n);
  Val& x = in(n, 0);
  if (x.shape.size() != 4) fail(ErrorCode::kInvalidInput, "input 0 has shape {}; FusedBatchNorm takes 4-D input", shapeStr(x.shape));
  ir::ValueId xv = asLayout(x, nhwc);
  const int64_t c = irShape(xv)[1];
  std::vector<ir::ValueId> ins = {xv};
  const char* names[] = {"scale", "offset", "mean", "variance"};
  for (int i = 1; i <= 4; ++i) {
    Val& p = in(n, i);
    if (p.shape != Shape{c}) fail(ErrorCode::kInvalidInput, "input {} ({}) has shape {}; the input has {} channels", i, names[i - 1], shapeStr(p.shape), c);
    ins.push_back(asTf(p));
  }
  const float eps = attrFloat(n, "epsilon", 0.0001f);
  setOut(0, emit("BatchNormalization", ins, {{"epsilon", eps}}), nhwc);
}

void Importer::pool(const tf::NodeDef& n) {
  expectInputs(n, 1, 1);
  const bool max = n.op() == "MaxPool", nhwc = channelLast(n);
  Val& x = in(n, 0);
  if (x.shape.size() != 4) fail(ErrorCode::kInvalidInput, "input 0 has shape {}; {} takes 4-D input", shapeStr(x.shape), n.op());
  ir::ValueId xv = asLayout(x, nhwc);
  const Shape xs = irShape(xv);
  auto [kh, kw] = spatial(attrInts(n, "ksize"), nhwc, "ksize");
  auto [sh, sw] = spatial(attrInts(n, "strides"), nhwc, "strides");
  const std::string mode = attrStr(n, "padding");
  if (mode == "EXPLICIT") fail(ErrorCode::kUnsupported, "padding EXPLICIT for pooling");
  auto [pt, pb] = padding(n, mode, xs[2], kh, sh, 1, 1, {});
  auto [pl, pr] = padding(n, mode, xs[3], kw, sw, 1, 2, {});
  std::map<std::string, ir::Attr> attrs = {{"kernel_shape", std::vector<int64_t>{kh, kw}},
                                           {"strides", std::vector<int64_t>{sh, sw}},
                                           {"pads", std::vector<int64_t>{pt, pl, pb, pr}}};
  // TensorFlow's SAME average divides by the taps inside the input only: ONNX's count_include_pad 0.
  if (!max) attrs["count_include_pad"] = int64_t{0};
  setOut(0, emit(max ? "MaxPool" : "AveragePool", {xv}, std::move(attrs)), nhwc);
}

void Importer::resize(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  const bool bilinear = n.op() == "ResizeBilinear";
  Val& x = in(n, 0);
  if (x.shape.size() != 4) fail(ErrorCode::kInvalidInput, "input 0 has shape {}; {} takes NHWC images", shapeStr(x.shape), n.op());
  std::vector<int64_t> size = hostInts(n, 1, "size");
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0 || size[0] > kMaxDim || size[1] > kMaxDim)
    fail(ErrorCode::kInvalidInput, "input 1 (size) must be two positive sizes");
  const bool align = attrBool(n, "align_corners", false), half = attrBool(n, "half_pixel_centers", false);
  if (align && half) fail(ErrorCode::kInvalidInput, "align_corners and half_pixel_centers are both true (TensorFlow refuses it)");
  // TensorFlow's source coordinate, as ONNX's coordinate_transformation_mode; nearest: its rounding.
  std::string coord = align ? "align_corners" : half ? (bilinear ? "half_pixel" : "tf_half_pixel_for_nn") : "asymmetric";
  std::map<std::string, ir::Attr> attrs = {{"mode", std::string(bilinear ? "linear" : "nearest")},
                                           {"coordinate_transformation_mode", coord}};
  if (!bilinear) attrs["nearest_mode"] = std::string(align ? "round_prefer_ceil" : "floor");
  ir::ValueId xv = asCf(x);
  const Shape xs = irShape(xv);
  ir::ValueId roi = constant("roi", Tensor::fromVector<float>({0}, {}));
  ir::ValueId scales = constant("scales", Tensor::fromVector<float>({0}, {}));
  setOut(0, emit("Resize", {xv, roi, scales, ints("sizes", {xs[0], xs[1], size[0], size[1]})}, std::move(attrs)), true);
}

}  // namespace npuc::tf_io
