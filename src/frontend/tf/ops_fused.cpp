// What an optimized graph carries beyond the plain ops: grappler's fused products (_FusedConv2D, _FusedMatMul, and
// TensorFlow.js's FusedDepthwiseConv2dNative — a product followed by attr fused_ops applied in order, each taking its
// operands from the inputs after the product's two), AddN (grappler's AddOpsRewrite), Prelu (TensorFlow.js), Split,
// SplitV, DepthToSpace and SpaceToDepth. Each becomes the plain ops it stands for, so the optimizer sees what it sees
// in an unfused graph.
#include "frontend/tf/importer.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <climits>

namespace npuc::tf_io {

void Importer::fusedConv2d(const tf::NodeDef& n) {
  expectInputs(n, 2, INT32_MAX);
  const bool nhwc = channelLast(n);
  ir::ValueId y = convolution(n, n.op() == "FusedDepthwiseConv2dNative");
  setOut(0, applyFusedOps(n, y, nhwc), nhwc);
}

void Importer::fusedMatMul(const tf::NodeDef& n) {
  expectInputs(n, 2, INT32_MAX);
  setOut(0, applyFusedOps(n, matrixProduct(n), false), false);
}

ir::ValueId Importer::applyFusedOps(const tf::NodeDef& n, ir::ValueId y, bool cf) {
  const std::vector<std::string> ops = attrStrs(n, "fused_ops");
  const int args = numInputs(n) - 2;
  if (attrInt(n, "num_args", args) != args)
    fail(ErrorCode::kInvalidInput, "attr 'num_args' is {}; the node has {} inputs after the product's two",
         attrInt(n, "num_args", args), args);
  // A convolution's IR value is channels-first whatever the graph's data_format (cf: NHWC in TensorFlow's form).
  const bool rank4 = irShape(y).size() == 4;
  const int64_t c = rank4 ? irShape(y)[1] : irShape(y).back();
  int next = 2;
  auto operand = [&](const char* what) -> Val& {
    if (next >= numInputs(n))
      fail(ErrorCode::kInvalidInput, "attr 'fused_ops' [{}] needs more operands than the node's {} ({} missing)",
           fmt::join(ops, ", "), args, what);
    return in(n, next++);
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string& op = ops[i];
    const std::string suffix = "/" + op;
    if (op == "BiasAdd") {
      Val& b = operand("a bias");
      if (b.shape != Shape{c} || b.dtype != DType::kF32)
        fail(ErrorCode::kInvalidInput, "the fused bias has shape {}; the product has {} channels", shapeStr(b.shape), c);
      if (!rank4) {  // a fully-connected layer: the bias is the Gemm's C
        const ir::NodeId p = g_->value(y).producer;
        if (i == 0 && g_->node(p).op == "Gemm" && g_->node(p).inputs.size() == 2) {
          g_->node(p).inputs.push_back(asTf(b));
          ops::inferNodeTypes(*g_, p);
          continue;
        }
        y = emit("Add", {y, asTf(b)}, {}, suffix);
        continue;
      }
      y = emit("Add", {y, emit("Reshape", {asTf(b), ints("shape", {c, 1, 1})}, {}, suffix + "/bias")}, {}, suffix);
    } else if (op == "FusedBatchNorm" || op == "FusedBatchNormV3") {
      if (!rank4) fail(ErrorCode::kUnsupported, "a fused batch norm after a {}-D product", irShape(y).size());
      std::vector<ir::ValueId> ins = {y};
      for (const char* what : {"scale", "offset", "mean", "variance"}) {
        Val& p = operand(what);
        if (p.shape != Shape{c})
          fail(ErrorCode::kInvalidInput, "the fused batch norm's {} has shape {}; the product has {} channels", what,
               shapeStr(p.shape), c);
        ins.push_back(asTf(p));
      }
      y = emit("BatchNormalization", ins, {{"epsilon", attrFloat(n, "epsilon", 0.0001f)}}, suffix);
    } else if (op == "Add" || op == "AddV2") {
      Val& r = operand("an addend");
      y = emit("Add", {y, cf && rank4 ? alignCf(r) : asTf(r)}, {}, suffix);
    } else if (op == "Prelu") {
      Val& a = operand("the slopes");
      y = emit("PRelu", {y, cf && rank4 ? alignCf(a) : asTf(a)}, {}, suffix);
    } else if (op == "Relu" || op == "Relu6" || op == "Elu" || op == "LeakyRelu" || op == "Sigmoid" || op == "Tanh") {
      y = activation(op, y, attrFloat(n, "leakyrelu_alpha", 0.2f), suffix);
    } else {
      fail(ErrorCode::kUnsupported, "attr 'fused_ops' [{}]: '{}' is not one npuc imports (BiasAdd, FusedBatchNorm, Add, "
                                    "Prelu, Relu, Relu6, Elu, LeakyRelu, Sigmoid, Tanh)", fmt::join(ops, ", "), op);
    }
  }
  if (next != numInputs(n))
    fail(ErrorCode::kInvalidInput, "attr 'fused_ops' [{}] reads {} of the node's {} operands", fmt::join(ops, ", "),
         next - 2, args);
  return y;
}

void Importer::addN(const tf::NodeDef& n) {
  expectInputs(n, 1, INT32_MAX);
  const int count = numInputs(n);
  bool cf = false;
  for (int i = 0; i < count; ++i) {
    if (in(n, i).dtype != DType::kF32) fail(ErrorCode::kUnsupported, "AddN of {} tensors", dtypeName(in(n, i).dtype));
    if (in(n, i).shape != in(n, 0).shape)
      fail(ErrorCode::kInvalidInput, "inputs of shapes {} and {}; AddN adds tensors of one shape",
           shapeStr(in(n, 0).shape), shapeStr(in(n, i).shape));
    cf |= isCf(in(n, i));
  }
  cf &= in(n, 0).shape.size() == 4;
  if (count == 1) return alias(n, 0);
  // TensorFlow's kernel adds the inputs in order: a chain of Adds, left to right.
  ir::ValueId y = asLayout(in(n, 0), cf);
  for (int i = 1; i < count; ++i)
    y = emit("Add", {y, asLayout(in(n, i), cf)}, {}, i + 1 == count ? "" : fmt::format("/sum{}", i));
  setOut(0, y, cf);
}

void Importer::prelu(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  Val& x = in(n, 0);
  Val& a = in(n, 1);
  if (x.dtype != DType::kF32 || a.dtype != DType::kF32) fail(ErrorCode::kUnsupported, "Prelu of integer tensors");
  const bool cf = isCf(x) && x.shape.size() == 4;
  setOut(0, emit("PRelu", {cf ? held(x) : asTf(x), cf ? alignCf(a) : asTf(a)}), cf);
}

void Importer::depthToSpace(const tf::NodeDef& n) {
  expectInputs(n, 1, 1);
  const bool nhwc = channelLast(n), d2s = n.op() == "DepthToSpace";
  Val& x = in(n, 0);
  if (x.shape.size() != 4) fail(ErrorCode::kInvalidInput, "input 0 has shape {}; {} takes 4-D input", shapeStr(x.shape), n.op());
  const int64_t b = attrInt(n, "block_size");
  if (b < 2 || b > 64) fail(ErrorCode::kInvalidInput, "attr 'block_size' is {}; it is 2 to 64", b);
  ir::ValueId xv = asLayout(x, nhwc);
  const Shape& s = irShape(xv);
  if (d2s ? s[1] % (b * b) != 0 : s[2] % b != 0 || s[3] % b != 0)
    fail(ErrorCode::kInvalidInput, "input of shape {} does not divide into blocks of {}", shapeStr(x.shape), b);
  // TensorFlow's channel order within a block is row, column, channel: ONNX's DCR.
  std::map<std::string, ir::Attr> attrs = {{"blocksize", b}};
  if (d2s) attrs["mode"] = std::string("DCR");
  setOut(0, emit(n.op(), {xv}, std::move(attrs)), nhwc);
}

void Importer::split(const tf::NodeDef& n) {
  const bool v = n.op() == "SplitV";
  expectInputs(n, v ? 3 : 2, v ? 3 : 2);
  Val& x = in(n, v ? 0 : 1);
  std::vector<int64_t> a = hostInts(n, v ? 2 : 0, "axis");
  if (a.size() != 1) fail(ErrorCode::kInvalidInput, "the axis holds {} values; it is one axis", a.size());
  const int64_t axis = axisOf(a[0], x.shape.size(), "axis");
  const int64_t d = x.shape[static_cast<size_t>(axis)];
  const int64_t count = attrInt(n, "num_split");
  if (count <= 0 || count > 4096) fail(ErrorCode::kInvalidInput, "attr 'num_split' is {}", count);
  std::vector<int64_t> sizes;
  if (v) {
    sizes = hostInts(n, 1, "size_splits");
    if (static_cast<int64_t>(sizes.size()) != count)
      fail(ErrorCode::kInvalidInput, "size_splits has {} values for num_split {}", sizes.size(), count);
    int64_t known = 0, unknown = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1 && unknown < 0) unknown = static_cast<int64_t>(i);
      else if (sizes[i] < 0) fail(ErrorCode::kInvalidInput, "size_splits [{}]: sizes are >= 0, one may be -1", fmt::join(sizes, ", "));
      else known += sizes[i];
    }
    if (unknown >= 0) sizes[static_cast<size_t>(unknown)] = d - known;
  } else {
    if (d % count != 0) fail(ErrorCode::kInvalidInput, "axis {} has {} elements; they do not split into {} equal parts", axis, d, count);
    sizes.assign(static_cast<size_t>(count), d / count);
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != d || (!sizes.empty() && *std::min_element(sizes.begin(), sizes.end()) < 0))
    fail(ErrorCode::kInvalidInput, "sizes [{}] do not split axis {}'s {} elements", fmt::join(sizes, ", "), axis, d);
  int64_t begin = 0;
  for (int64_t k = 0; k < count; ++k) {  // one slice per output, on the form x is held in
    SliceSpec s;
    for (size_t i = 0; i < x.shape.size(); ++i) {
      const bool cut = static_cast<int64_t>(i) == axis;
      s.begin.push_back(cut ? begin : 0);
      s.end.push_back(cut ? begin + sizes[static_cast<size_t>(k)] : x.shape[i]);
      s.step.push_back(1);
      s.count.push_back(s.end.back() - s.begin.back());
      s.out.push_back(s.count.back());
    }
    applySlice(x, s, static_cast<int>(k));
    begin += sizes[static_cast<size_t>(k)];
  }
}

}  // namespace npuc::tf_io
