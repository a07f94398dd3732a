// Each Caffe layer type as ai.onnx nodes with Caffe's semantics (docs/frontends.md, "Caffe": the table and the notes).
#include "frontend/caffe/importer.hpp"

#include "ops/shape_util.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace npuc::caffe_io {

void Importer::input(const caffe::LayerParameter& l) {
  expectBottoms(l, 0, 0);
  const auto& shapes = l.input_param().shape();
  if (shapes.size() != 1 && shapes.size() != l.top_size())
    fail(ErrorCode::kInvalidInput, "input_param has {} shape(s) for {} top(s) (one for all, or one per top)",
         shapes.size(), l.top_size());
  for (int i = 0; i < l.top_size(); ++i) addInput(l.top(i), blobShape(shapes[shapes.size() == 1 ? 0 : i]));
}

void Importer::convolution(const caffe::LayerParameter& l) {
  const bool deconv = l.type() == "Deconvolution";
  expectBottoms(l, 1, 1);
  const caffe::ConvolutionParameter& p = l.convolution_param();
  ir::ValueId x = bottom(l, 0);
  const Shape& xs = shapeOf(x);
  if (p.axis() != 1 && p.axis() != 1 - static_cast<int>(xs.size()))
    fail(ErrorCode::kUnsupported, "axis {}: npuc imports convolutions over channel axis 1 only", p.axis());
  if (xs.size() < 3) fail(ErrorCode::kInvalidInput, "the bottom has shape {}; a convolution needs N, C and spatial axes", shapeStr(xs));
  const size_t n = xs.size() - 2;
  auto kernel = spatial(p.kernel_size(), p.has_kernel_h(), p.kernel_h(), p.has_kernel_w(), p.kernel_w(), n, 0, "kernel");
  auto pad = spatial(p.pad(), p.has_pad_h(), p.pad_h(), p.has_pad_w(), p.pad_w(), n, 0, "pad");
  auto stride = spatial(p.stride(), p.has_stride_h(), p.stride_h(), p.has_stride_w(), p.stride_w(), n, 1, "stride");
  auto dilation = spatial(p.dilation(), false, 0, false, 0, n, 1, "dilation");
  for (int64_t k : kernel)
    if (k <= 0) fail(ErrorCode::kInvalidInput, "kernel size {}: every kernel size must be positive (kernel_size or kernel_h / kernel_w)", k);
  for (int64_t s : stride)
    if (s <= 0) fail(ErrorCode::kInvalidInput, "stride {} must be positive", s);
  for (int64_t d : dilation)
    if (d <= 0) fail(ErrorCode::kInvalidInput, "dilation {} must be positive", d);
  const int64_t outc = p.num_output(), group = p.group(), inc = xs[1];
  if (outc <= 0) fail(ErrorCode::kInvalidInput, "num_output must be positive");
  if (group <= 0 || inc % group != 0 || outc % group != 0)
    fail(ErrorCode::kInvalidInput, "group {} must divide the input channels ({}) and num_output ({})", group, inc, outc);
  Shape wshape = deconv ? Shape{inc, outc / group} : Shape{outc, inc / group};
  wshape.insert(wshape.end(), kernel.begin(), kernel.end());
  std::vector<ir::ValueId> ins = {x, constant(l, "weights", blob(l, 0, wshape, "weights"))};
  if (p.bias_term()) ins.push_back(constant(l, "bias", blob(l, 1, {outc}, "bias")));
  std::vector<int64_t> pads = pad;
  pads.insert(pads.end(), pad.begin(), pad.end());
  simple(l, deconv ? "ConvTranspose" : "Conv", std::move(ins),
         {{"kernel_shape", kernel}, {"strides", stride}, {"pads", pads}, {"dilations", dilation}, {"group", group}});
}

void Importer::pooling(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  const caffe::PoolingParameter& p = l.pooling_param();
  ir::ValueId x = bottom(l, 0);
  const Shape& xs = shapeOf(x);
  if (xs.size() != 4) fail(ErrorCode::kInvalidInput, "the bottom has shape {}; Caffe pools 4-D blobs", shapeStr(xs));
  if (p.pool() == caffe::PoolingParameter::STOCHASTIC)
    fail(ErrorCode::kUnsupported, "pool: STOCHASTIC is not imported (only MAX and AVE)");
  const bool max = p.pool() == caffe::PoolingParameter::MAX;
  if (p.global_pooling()) {
    if (p.pad() || p.pad_h() || p.pad_w() || p.stride_h() > 1 || p.stride_w() > 1 || p.stride() > 1)
      fail(ErrorCode::kInvalidInput, "global_pooling takes no pad and stride 1 (Caffe's rule)");
    simple(l, max ? "GlobalMaxPool" : "GlobalAveragePool", {x});
    return;
  }
  auto pick = [](bool has_h, uint32_t h, bool has_w, uint32_t w, bool has, uint32_t v, const char* field) {
    if (has_h != has_w) fail(ErrorCode::kInvalidInput, "{}_h and {}_w go together", field, field);
    if (has_h && has) fail(ErrorCode::kInvalidInput, "gives both {} and {}_h / {}_w", field, field, field);
    return has_h ? std::vector<int64_t>{h, w} : std::vector<int64_t>{v, v};
  };
  if (!p.has_kernel_size() && !p.has_kernel_h()) fail(ErrorCode::kInvalidInput, "no kernel_size (or kernel_h / kernel_w) and not global_pooling");
  auto kernel = pick(p.has_kernel_h(), p.kernel_h(), p.has_kernel_w(), p.kernel_w(), p.has_kernel_size(), p.kernel_size(), "kernel");
  auto pad = pick(p.has_pad_h() || p.has_pad_w(), p.pad_h(), p.has_pad_h() || p.has_pad_w(), p.pad_w(), p.has_pad(), p.pad(), "pad");
  auto stride = pick(p.has_stride_h(), p.stride_h(), p.has_stride_w(), p.stride_w(), p.has_stride(), p.stride(), "stride");
  bool ceil_needed = false;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = xs[2 + i], k = kernel[i], s = stride[i], pd = pad[i];
    if (k <= 0 || s <= 0) fail(ErrorCode::kInvalidInput, "kernel {} and stride {} must be positive", k, s);
    if (pd >= k) fail(ErrorCode::kInvalidInput, "pad {} must be smaller than the kernel {} (Caffe's rule)", pd, k);
    if (in + 2 * pd < k) fail(ErrorCode::kInvalidInput, "kernel {} is larger than the padded input {}", k, in + 2 * pd);
    // Caffe's output size: rounded up (round_mode CEIL, the default) or down; with padding, a last window that
    // would start in the right padding is dropped.
    const int64_t span = in + 2 * pd - k;
    int64_t out = (p.round_mode() == caffe::PoolingParameter::CEIL ? (span + s - 1) / s : span / s) + 1;
    if (pd > 0 && (out - 1) * s >= in + pd) --out;
    const int64_t floor_out = span / s + 1;
    if (out == floor_out) continue;
    // ONNX's ceil_mode has the same rounding and drops a window starting beyond the input and left padding:
    // equal to Caffe's whenever padding is there; without it only a stride above the kernel can differ.
    if (ops::windowOutput(in, k, s, 1, pd, pd, true) != out)
      fail(ErrorCode::kUnsupported, "Caffe's rounding gives {} outputs along axis {} (kernel {}, stride {}, pad {}, "
                                    "input {}), which no ONNX pooling reproduces", out, 2 + i, k, s, pd, in);
    ceil_needed = true;
  }
  std::map<std::string, ir::Attr> attrs = {{"kernel_shape", kernel},
                                           {"strides", stride},
                                           {"pads", std::vector<int64_t>{pad[0], pad[1], pad[0], pad[1]}},
                                           {"ceil_mode", int64_t{ceil_needed}}};
  // Caffe divides an average by the window's taps inside the padded input (padding counted, taps beyond it —
  // where rounding up adds a partial window — not): ONNX's count_include_pad as npuc's kernels implement it.
  if (!max) attrs["count_include_pad"] = int64_t{1};
  simple(l, max ? "MaxPool" : "AveragePool", {x}, std::move(attrs));
}

void Importer::innerProduct(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  expectTops(l, 1);
  const caffe::InnerProductParameter& p = l.inner_product_param();
  ir::ValueId x = bottom(l, 0);
  const Shape xs = shapeOf(x);
  const int64_t axis = axisOf(p.axis(), xs.size(), "axis");
  const int64_t outc = p.num_output();
  if (outc <= 0) fail(ErrorCode::kInvalidInput, "num_output must be positive");
  const int64_t k = product(xs, static_cast<size_t>(axis)), m = product(xs, 0, static_cast<size_t>(axis));
  Shape wshape = p.transpose() ? Shape{k, outc} : Shape{outc, k};
  std::vector<ir::ValueId> ins = {x, constant(l, "weights", blob(l, 0, wshape, "weights"))};
  if (p.bias_term()) ins.push_back(constant(l, "bias", blob(l, 1, {outc}, "bias")));
  Shape out(xs.begin(), xs.begin() + axis);
  out.push_back(outc);
  ir::ValueId y = bindTop(l.top(0));
  // Gemm takes [M, K]: the axes before `axis` become M, the others K (Caffe's view of the bottom).
  if (xs.size() != 2 || axis != 1) {
    ir::ValueId flat = temp(l, "flat");
    reshape(l, x, {m, k}, flat, "flatten");
    ins[0] = flat;
  }
  ir::ValueId gemm_out = axis == 1 ? y : temp(l, "gemm");
  node("Gemm", l.name(), std::move(ins), {gemm_out}, {{"transB", int64_t{p.transpose() ? 0 : 1}}});
  if (gemm_out != y) reshape(l, gemm_out, out, y, "reshape");
}

void Importer::relu(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  float slope = l.relu_param().negative_slope();
  ir::ValueId x = bottom(l, 0);
  if (slope == 0.0f)
    simple(l, "Relu", {x});
  else
    simple(l, "LeakyRelu", {x}, {{"alpha", slope}});
}

void Importer::prelu(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  ir::ValueId x = bottom(l, 0);
  const Shape xs = shapeOf(x);
  if (xs.size() < 2) fail(ErrorCode::kInvalidInput, "the bottom has shape {}; PReLU needs a channel axis", shapeStr(xs));
  const bool shared = l.prelu_param().channel_shared();
  Tensor slope = blob(l, 0, {shared ? 1 : xs[1]}, "slope");
  Shape bshape = {shared ? 1 : xs[1]};  // one slope per channel (axis 1), broadcast over the axes after it
  bshape.insert(bshape.end(), xs.size() - 2, 1);
  simple(l, "PRelu", {x, constant(l, "slope", Tensor::fromVector<float>(bshape, {slope.values<float>().begin(), slope.values<float>().end()}))});
}

void Importer::unary(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  simple(l, l.type() == "Sigmoid" ? "Sigmoid" : "Tanh", {bottom(l, 0)});
}

void Importer::softmax(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  ir::ValueId x = bottom(l, 0);
  simple(l, "Softmax", {x}, {{"axis", axisOf(l.softmax_param().axis(), shapeOf(x).size(), "axis")}});
}

void Importer::concat(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, INT_MAX);
  const caffe::ConcatParameter& p = l.concat_param();
  std::vector<ir::ValueId> ins = bottoms(l);
  int64_t axis = p.has_axis() || !p.has_concat_dim() ? p.axis() : p.concat_dim();
  simple(l, "Concat", ins, {{"axis", axisOf(axis, shapeOf(ins[0]).size(), "axis")}});
}

void Importer::eltwise(const caffe::LayerParameter& l) {
  expectBottoms(l, 2, INT_MAX);
  expectTops(l, 1);
  const caffe::EltwiseParameter& p = l.eltwise_param();
  std::vector<ir::ValueId> ins = bottoms(l);
  const Shape& s0 = shapeOf(ins[0]);
  for (ir::ValueId v : ins)
    if (shapeOf(v) != s0)
      fail(ErrorCode::kInvalidInput, "bottoms of shapes {} and {}: Eltwise takes blobs of one shape", shapeStr(s0), shapeStr(shapeOf(v)));
  if (p.coeff_size() > 0 && p.operation() != caffe::EltwiseParameter::SUM)
    fail(ErrorCode::kInvalidInput, "coeff is for operation SUM only");
  if (p.coeff_size() > 0 && p.coeff_size() != l.bottom_size())
    fail(ErrorCode::kInvalidInput, "{} coeff values for {} bottoms (one per bottom)", p.coeff_size(), l.bottom_size());
  const char* op = p.operation() == caffe::EltwiseParameter::SUM ? "Add" : p.operation() == caffe::EltwiseParameter::PROD ? "Mul" : "Max";
  // SUM with coefficients: each bottom times its coefficient (a coefficient of 1 leaves it as it is), then the sum.
  if (p.coeff_size() > 0)
    for (size_t i = 0; i < ins.size(); ++i) {
      float c = p.coeff(static_cast<int>(i));
      if (c == 1.0f) continue;
      ir::ValueId scaled = temp(l, "scaled");
      node("Mul", l.name() + "/coeff" + std::to_string(i), {ins[i], constant(l, "coeff", Tensor::scalar<float>(c))}, {scaled});
      ins[i] = scaled;
    }
  // Caffe accumulates bottom by bottom: a chain of binary nodes, in order.
  ir::ValueId acc = ins[0];
  for (size_t i = 1; i < ins.size(); ++i) {
    ir::ValueId out = i + 1 == ins.size() ? bindTop(l.top(0)) : temp(l, "partial");
    node(op, i + 1 == ins.size() ? l.name() : l.name() + "/" + std::to_string(i), {acc, ins[i]}, {out});
    acc = out;
  }
}

void Importer::batchNorm(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  const caffe::BatchNormParameter& p = l.batch_norm_param();
  if (p.has_use_global_stats() && !p.use_global_stats())
    fail(ErrorCode::kUnsupported, "use_global_stats: false normalises by each batch's own statistics (training); "
                                  "npuc uses the stored ones (remove the field, as Caffe's TEST phase does)");
  ir::ValueId x = bottom(l, 0);
  const Shape xs = shapeOf(x);
  if (xs.size() < 2) fail(ErrorCode::kInvalidInput, "the bottom has shape {}; BatchNorm needs a channel axis", shapeStr(xs));
  const int64_t c = xs[1];
  Tensor mean = blob(l, 0, {c}, "mean"), var = blob(l, 1, {c}, "variance"), factor = blob(l, 2, {1}, "scale factor");
  // Caffe stores running sums and the factor they were accumulated with: the statistics are the sums divided by
  // it (a factor of 0, an untrained layer, gives zeros).
  const float f = factor.values<float>()[0];
  const float k = f == 0.0f ? 0.0f : 1.0f / f;
  std::vector<float> m(static_cast<size_t>(c)), v(static_cast<size_t>(c));
  for (size_t i = 0; i < m.size(); ++i) {
    m[i] = mean.values<float>()[i] * k;
    v[i] = var.values<float>()[i] * k;
  }
  simple(l, "BatchNormalization",
         {x, constant(l, "scale", Tensor::fromVector<float>({c}, std::vector<float>(m.size(), 1.0f))),
          constant(l, "bias", Tensor::fromVector<float>({c}, std::vector<float>(m.size(), 0.0f))),
          constant(l, "mean", Tensor::fromVector<float>({c}, m)), constant(l, "var", Tensor::fromVector<float>({c}, v))},
         {{"epsilon", p.eps()}});
}

/// The operand of Scale and Bias: it covers axes [axis, axis + num_axes) of `x` (num_axes -1: all the rest), from
/// the second bottom or from blob `blob_index`; shaped with a 1 for each axis after those, as ONNX broadcasting
/// aligns trailing axes.
ir::ValueId Importer::axesOperand(const caffe::LayerParameter& l, const Shape& xs, int32_t axis_field, int32_t num_axes, bool from_bottom, int blob_index, const std::string& what) {
  const int64_t axis = axisOf(axis_field, xs.size(), "axis");
  const int64_t end = num_axes == -1 ? static_cast<int64_t>(xs.size()) : axis + num_axes;
  if (num_axes < -1 || end > static_cast<int64_t>(xs.size()))
    fail(ErrorCode::kInvalidInput, "num_axes {} from axis {} goes past the {} axes of the bottom", num_axes, axis, xs.size());
  Shape sshape(xs.begin() + axis, xs.begin() + end);
  Shape bshape = sshape;
  bshape.insert(bshape.end(), xs.size() - static_cast<size_t>(end), 1);
  if (from_bottom) {
    ir::ValueId s = bottom(l, 1);
    if (shapeOf(s) != sshape)
      fail(ErrorCode::kInvalidInput, "the {} bottom has shape {}; axes {}..{} of the first bottom are {}", what,
           shapeStr(shapeOf(s)), axis, end - 1, shapeStr(sshape));
    if (bshape == sshape) return s;
    ir::ValueId r = temp(l, what);
    reshape(l, s, bshape, r, what);
    return r;
  }
  Tensor t = blob(l, blob_index, sshape, what);
  return constant(l, what, Tensor::fromVector<float>(bshape, {t.values<float>().begin(), t.values<float>().end()}));
}

void Importer::scale(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 2);
  expectTops(l, 1);
  const caffe::ScaleParameter& p = l.scale_param();
  ir::ValueId x = bottom(l, 0);
  const Shape xs = shapeOf(x);
  // The scale: the second bottom, else blob 0; the bias (bias_term) the next blob.
  ir::ValueId s = axesOperand(l, xs, p.axis(), p.num_axes(), l.bottom_size() == 2, 0, "scale");
  ir::ValueId y = bindTop(l.top(0));
  if (!p.bias_term()) {
    node("Mul", l.name(), {x, s}, {y});
    return;
  }
  ir::ValueId b = axesOperand(l, xs, p.axis(), p.num_axes(), false, l.bottom_size() == 2 ? 0 : 1, "bias");
  ir::ValueId scaled = temp(l, "scaled");
  node("Mul", l.name() + "/scale", {x, s}, {scaled});
  node("Add", l.name(), {scaled, b}, {y});
}

void Importer::bias(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 2);
  const caffe::BiasParameter& p = l.bias_param();
  ir::ValueId x = bottom(l, 0);
  const Shape xs = shapeOf(x);
  simple(l, "Add", {x, axesOperand(l, xs, p.axis(), p.num_axes(), l.bottom_size() == 2, 0, "bias")});
}

void Importer::crop(const caffe::LayerParameter& l) {
  expectBottoms(l, 2, 2);
  const caffe::CropParameter& p = l.crop_param();
  ir::ValueId x = bottom(l, 0);
  const Shape xs = shapeOf(x), ref = shapeOf(bottom(l, 1));
  if (ref.size() != xs.size())
    fail(ErrorCode::kInvalidInput, "the bottoms have {} and {} axes; Crop takes two of the same rank", xs.size(), ref.size());
  const int64_t axis = axisOf(p.axis(), xs.size(), "axis");
  const size_t n = xs.size() - static_cast<size_t>(axis);
  if (p.offset_size() > 1 && static_cast<size_t>(p.offset_size()) != n)
    fail(ErrorCode::kInvalidInput, "{} offset values for the {} cropped axes (none, one for all, or one per axis)",
         p.offset_size(), n);
  // Axes from `axis` on take the second bottom's size, starting at the offset; the ones before it are kept.
  std::vector<int64_t> starts, ends, axes;
  for (size_t i = 0; i < n; ++i) {
    const size_t a = static_cast<size_t>(axis) + i;
    const int64_t off = p.offset_size() == 0 ? 0 : p.offset(p.offset_size() == 1 ? 0 : static_cast<int>(i));
    if (off + ref[a] > xs[a])
      fail(ErrorCode::kInvalidInput, "axis {}: offset {} + size {} goes past the first bottom's {}", a, off, ref[a], xs[a]);
    starts.push_back(off);
    ends.push_back(off + ref[a]);
    axes.push_back(static_cast<int64_t>(a));
  }
  auto ints = [&](const char* what, const std::vector<int64_t>& v) {
    return constant(l, what, Tensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, v));
  };
  simple(l, "Slice", {x, ints("starts", starts), ints("ends", ends), ints("axes", axes)});
}

/// Dropout (Caffe scales while training, so it passes blobs through at test time) and Split (one blob under
/// several names): an Identity per top, which the resolve pipeline removes.
void Importer::identity(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  if (l.type() == "Dropout") expectTops(l, 1);
  if (l.top_size() < 1) fail(ErrorCode::kInvalidInput, "has no top");
  ir::ValueId x = bottom(l, 0);
  for (int i = 0; i < l.top_size(); ++i)
    node("Identity", l.top_size() == 1 ? l.name() : l.name() + "/" + std::to_string(i), {x}, {bindTop(l.top(i))});
}

void Importer::flatten(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  expectTops(l, 1);
  ir::ValueId x = bottom(l, 0);
  const Shape xs = shapeOf(x);
  const int64_t a = axisOf(l.flatten_param().axis(), xs.size(), "axis");
  const int64_t e = axisOf(l.flatten_param().end_axis(), xs.size(), "end_axis");
  if (e < a) fail(ErrorCode::kInvalidInput, "end_axis {} comes before axis {}", e, a);
  Shape out(xs.begin(), xs.begin() + a);
  out.push_back(product(xs, static_cast<size_t>(a), static_cast<size_t>(e) + 1));
  out.insert(out.end(), xs.begin() + e + 1, xs.end());
  reshape(l, x, out, bindTop(l.top(0)));
}

void Importer::reshapeLayer(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  expectTops(l, 1);
  const caffe::ReshapeParameter& p = l.reshape_param();
  ir::ValueId x = bottom(l, 0);
  const Shape xs = shapeOf(x);
  const int64_t rank = static_cast<int64_t>(xs.size());
  int64_t a = p.axis() < 0 ? p.axis() + rank + 1 : p.axis();
  if (a < 0 || a > rank) fail(ErrorCode::kInvalidInput, "axis {} is out of range for a blob of {} axes", p.axis(), rank);
  int64_t n = p.num_axes() == -1 ? rank - a : p.num_axes();
  if (n < 0 || a + n > rank) fail(ErrorCode::kInvalidInput, "num_axes {} from axis {} goes past the {} axes of the bottom", p.num_axes(), a, rank);
  // Caffe's rule: the dims [a, a + n) are replaced by shape's; 0 copies the bottom's dim at that place, one -1 is
  // whatever makes the count equal.
  Shape out(xs.begin(), xs.begin() + a);
  int infer = -1;
  for (int i = 0; i < p.shape().dim_size(); ++i) {
    int64_t d = p.shape().dim(i);
    if (d == 0) {
      if (a + i >= rank) fail(ErrorCode::kInvalidInput, "shape dim {} is 0 (copy) but the bottom has no axis {}", i, a + i);
      d = xs[static_cast<size_t>(a + i)];
    } else if (d == -1) {
      if (infer >= 0) fail(ErrorCode::kInvalidInput, "shape has more than one -1");
      infer = static_cast<int>(out.size());
      d = 1;
    } else if (d < 0 || d > kMaxDim) {
      fail(ErrorCode::kInvalidInput, "shape dim {} is {}, not a size", i, d);
    }
    out.push_back(d);
  }
  out.insert(out.end(), xs.begin() + a + n, xs.end());
  const int64_t total = product(xs), have = product(out);
  if (infer >= 0) {
    if (have == 0 || total % have != 0) fail(ErrorCode::kInvalidInput, "no size for the -1 in shape makes {} elements from {}", total, shapeStr(xs));
    out[static_cast<size_t>(infer)] = total / have;
  } else if (have != total) {
    fail(ErrorCode::kInvalidInput, "shape {} holds {} elements; the bottom {} has {}", shapeStr(out), have, shapeStr(xs), total);
  }
  reshape(l, x, out, bindTop(l.top(0)));
}

void Importer::slice(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  const caffe::SliceParameter& p = l.slice_param();
  ir::ValueId x = bottom(l, 0);
  const Shape xs = shapeOf(x);
  const int64_t axis = axisOf(p.has_axis() || !p.has_slice_dim() ? p.axis() : p.slice_dim(), xs.size(), "axis");
  const int64_t dim = xs[static_cast<size_t>(axis)];
  const int tops = l.top_size();
  if (tops < 1) fail(ErrorCode::kInvalidInput, "has no top");
  std::vector<int64_t> sizes;
  if (p.slice_point_size() > 0) {
    if (p.slice_point_size() != tops - 1)
      fail(ErrorCode::kInvalidInput, "{} slice_point values for {} tops (one fewer than the tops)", p.slice_point_size(), tops);
    int64_t prev = 0;
    for (int i = 0; i <= p.slice_point_size(); ++i) {
      int64_t pt = i < p.slice_point_size() ? int64_t{p.slice_point(i)} : dim;
      if (pt <= prev || pt > dim)
        fail(ErrorCode::kInvalidInput, "slice_point values must increase within the axis of size {} (got {} after {})", dim, pt, prev);
      sizes.push_back(pt - prev);
      prev = pt;
    }
  } else {
    if (dim % tops != 0) fail(ErrorCode::kInvalidInput, "axis {} of size {} does not split into {} equal tops", axis, dim, tops);
    sizes.assign(static_cast<size_t>(tops), dim / tops);
  }
  std::vector<ir::ValueId> outs;
  for (int i = 0; i < tops; ++i) outs.push_back(bindTop(l.top(i)));
  if (tops == 1) {
    node("Identity", l.name(), {x}, outs);
    return;
  }
  node("Split", l.name(), {x, constant(l, "split", Tensor::fromVector<int64_t>({tops}, sizes))}, outs, {{"axis", axis}});
}

void Importer::lrn(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  expectTops(l, 1);
  const caffe::LRNParameter& p = l.lrn_param();
  if (p.local_size() % 2 == 0) fail(ErrorCode::kInvalidInput, "local_size {} must be odd (Caffe's rule)", p.local_size());
  ir::ValueId x = bottom(l, 0);
  if (shapeOf(x).size() != 4) fail(ErrorCode::kInvalidInput, "the bottom has shape {}; LRN needs a 4-D blob", shapeStr(shapeOf(x)));
  const int64_t size = p.local_size();
  if (p.norm_region() == caffe::LRNParameter::ACROSS_CHANNELS) {
    // Caffe and ONNX share the formula: x / (k + alpha / size * sum of squares over the window) ^ beta.
    simple(l, "LRN", {x}, {{"size", size}, {"alpha", p.alpha()}, {"beta", p.beta()}, {"bias", p.k()}});
    return;
  }
  // WITHIN_CHANNEL, as Caffe builds it from other layers: x / (1 + alpha * mean of x² over a size x size window,
  // zero-padded by (size - 1) / 2)^beta (k is not used); the window always counts size² taps.
  const int64_t pad = (size - 1) / 2;
  auto scalar = [&](const char* what, float v) { return constant(l, what, Tensor::scalar<float>(v)); };
  ir::ValueId sq = temp(l, "square"), avg = temp(l, "mean"), scaled = temp(l, "scaled"), base = temp(l, "base"),
              den = temp(l, "factor");
  node("Mul", l.name() + "/square", {x, x}, {sq});
  node("AveragePool", l.name() + "/mean", {sq}, {avg},
       {{"kernel_shape", std::vector<int64_t>{size, size}}, {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
        {"count_include_pad", int64_t{1}}});
  node("Mul", l.name() + "/alpha", {avg, scalar("alpha", p.alpha())}, {scaled});
  node("Add", l.name() + "/one", {scaled, scalar("one", 1.0f)}, {base});
  node("Pow", l.name() + "/beta", {base, scalar("beta", -p.beta())}, {den});
  node("Mul", l.name(), {x, den}, {bindTop(l.top(0))});
}

void Importer::permute(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  ir::ValueId x = bottom(l, 0);
  const size_t rank = shapeOf(x).size();
  // The SSD fork's rule: the axes listed first, then the others in their order.
  std::vector<int64_t> perm;
  std::vector<bool> used(rank, false);
  for (uint32_t a : l.permute_param().order()) {
    if (a >= rank || used[a]) fail(ErrorCode::kInvalidInput, "order lists axis {}, out of range or twice (the blob has {} axes)", a, rank);
    used[a] = true;
    perm.push_back(a);
  }
  for (size_t a = 0; a < rank; ++a)
    if (!used[a]) perm.push_back(static_cast<int64_t>(a));
  simple(l, "Transpose", {x}, {{"perm", perm}});
}

void Importer::argmax(const caffe::LayerParameter& l) {
  expectBottoms(l, 1, 1);
  expectTops(l, 1);
  const caffe::ArgMaxParameter& p = l.argmax_param();
  if (!p.has_axis() || p.top_k() != 1 || p.out_max_val())
    fail(ErrorCode::kUnsupported, "ArgMax is imported with an axis, top_k 1 and no out_max_val only");
  ir::ValueId x = bottom(l, 0);
  const int64_t axis = axisOf(p.axis(), shapeOf(x).size(), "axis");
  // Caffe writes the index as a float blob.
  ir::ValueId idx = temp(l, "index");
  node("ArgMax", l.name() + "/index", {x}, {idx}, {{"axis", axis}, {"keepdims", int64_t{1}}});
  node("Cast", l.name(), {idx}, {bindTop(l.top(0))}, {{"to", int64_t{1}}});  // 1: FLOAT
}

}  // namespace npuc::caffe_io
