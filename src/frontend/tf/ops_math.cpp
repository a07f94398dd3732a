// Element-wise ops (on whichever layout their input has; a broadcast operand aligned to it), MatMul, Softmax, the
// reductions, ArgMax and Cast. Integer ops on values known at import time (shape arithmetic) are evaluated here.
#include "frontend/tf/importer.hpp"

#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace npuc::tf_io {

namespace {

bool isFloat(tf::DataType t) { return t == tf::DT_FLOAT || t == tf::DT_HALF; }

/// a op b over int64 tensors with numpy broadcasting.
Tensor hostBinary(const Tensor& a, const Tensor& b, const std::function<int64_t(int64_t, int64_t)>& op) {
  const Shape &sa = a.shape(), &sb = b.shape();
  const size_t r = std::max(sa.size(), sb.size());
  Shape out(r), pa(r, 1), pb(r, 1);
  std::copy(sa.begin(), sa.end(), pa.begin() + static_cast<long>(r - sa.size()));
  std::copy(sb.begin(), sb.end(), pb.begin() + static_cast<long>(r - sb.size()));
  for (size_t i = 0; i < r; ++i) {
    if (pa[i] != pb[i] && pa[i] != 1 && pb[i] != 1)
      fail(ErrorCode::kInvalidInput, "shapes {} and {} do not broadcast", shapeStr(sa), shapeStr(sb));
    out[i] = pa[i] == 1 ? pb[i] : pa[i];
  }
  if (product(out) > kMaxHostElements)
    fail(ErrorCode::kUnsupported, "integer math of shape {} at import: more than {} elements", shapeStr(out), kMaxHostElements);
  std::vector<int64_t> va = a.toInt64(), vb = b.toInt64(), res;
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < product(out); ++o) {
    int64_t ia = 0, ib = 0;
    for (size_t i = 0; i < r; ++i) {
      ia = ia * pa[i] + (pa[i] == 1 ? 0 : idx[i]);
      ib = ib * pb[i] + (pb[i] == 1 ? 0 : idx[i]);
    }
    res.push_back(op(va[static_cast<size_t>(ia)], vb[static_cast<size_t>(ib)]));
    for (size_t i = r; i-- > 0;) {
      if (++idx[i] < out[i]) break;
      idx[i] = 0;
    }
  }
  return Tensor::fromVector<int64_t>(out, res);
}

}  // namespace

void Importer::unary(const tf::NodeDef& n) {
  expectInputs(n, 1, 1);
  Val& x = in(n, 0);
  if (x.dtype != DType::kF32) fail(ErrorCode::kUnsupported, "{} of a {} tensor (npuc imports float math)", n.op(), dtypeName(x.dtype));
  const bool cf = isCf(x);
  ir::ValueId xv = cf ? held(x) : asTf(x);
  setOut(0, activation(n.op(), xv, n.op() == "LeakyRelu" ? attrFloat(n, "alpha", 0.2f) : 0.0f, ""), cf);
}

ir::ValueId Importer::activation(const std::string& op, ir::ValueId xv, float alpha, const std::string& suffix) {
  if (op == "Relu6")
    return emit("Clip", {xv, constant("min", Tensor::scalar<float>(0.0f)), constant("max", Tensor::scalar<float>(6.0f))},
                {}, suffix);
  if (op == "LeakyRelu") return emit("LeakyRelu", {xv}, {{"alpha", alpha}}, suffix);
  if (op == "Elu") return emit("Elu", {xv}, {{"alpha", 1.0f}}, suffix);
  if (op == "Rsqrt") return emit("Reciprocal", {emit("Sqrt", {xv}, {}, suffix + "/sqrt")}, {}, suffix);
  if (op == "Square") return emit("Mul", {xv, xv}, {}, suffix);
  if (op == "Neg") return emit("Neg", {xv}, {}, suffix);
  return emit(op, {xv}, {}, suffix);  // Relu, Sigmoid, Tanh, Sqrt, Abs, Exp, Log, Floor: the same name in ai.onnx
}

void Importer::binary(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  Val& a = in(n, 0);
  Val& b = in(n, 1);
  const std::string& op = n.op();
  if (a.host && b.host && a.host->dtype() == DType::kI64 && b.host->dtype() == DType::kI64) {
    std::function<int64_t(int64_t, int64_t)> f;
    if (op == "Add" || op == "AddV2") f = [](int64_t p, int64_t q) { return p + q; };
    else if (op == "Sub") f = [](int64_t p, int64_t q) { return p - q; };
    else if (op == "Mul") f = [](int64_t p, int64_t q) { return p * q; };
    else if (op == "Maximum") f = [](int64_t p, int64_t q) { return std::max(p, q); };
    else if (op == "Minimum") f = [](int64_t p, int64_t q) { return std::min(p, q); };
    else fail(ErrorCode::kUnsupported, "{} of integers", op);
    setHost(0, hostBinary(*a.host, *b.host, f), a.dtype);
    return;
  }
  if (a.dtype != DType::kF32 || b.dtype != DType::kF32)
    fail(ErrorCode::kUnsupported, "{} of {} and {} tensors (npuc imports float math, and integer math on constants)", op,
         dtypeName(a.dtype), dtypeName(b.dtype));
  static const std::map<std::string, std::string> kOnnx = {{"Add", "Add"}, {"AddV2", "Add"}, {"Sub", "Sub"}, {"Mul", "Mul"},
                                                           {"RealDiv", "Div"}, {"Maximum", "Max"}, {"Minimum", "Min"}};
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  const bool cf = rank == 4 && ((isCf(a) && a.shape.size() == 4) || (isCf(b) && b.shape.size() == 4));
  ir::ValueId av = cf ? alignCf(a) : asTf(a), bv = cf ? alignCf(b) : asTf(b);
  setOut(0, emit(kOnnx.at(op), {av, bv}), cf);
}

void Importer::matmul(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  setOut(0, matrixProduct(n), false);
}

ir::ValueId Importer::matrixProduct(const tf::NodeDef& n) {
  Val& a = in(n, 0);
  Val& b = in(n, 1);
  if (a.shape.size() != 2 || b.shape.size() != 2)
    fail(ErrorCode::kInvalidInput, "inputs of shapes {} and {}; MatMul multiplies matrices", shapeStr(a.shape), shapeStr(b.shape));
  const bool ta = attrBool(n, "transpose_a", false), tb = attrBool(n, "transpose_b", false);
  const int64_t k1 = a.shape[ta ? 0 : 1], k2 = b.shape[tb ? 1 : 0];
  if (k1 != k2) fail(ErrorCode::kInvalidInput, "inputs of shapes {} and {} (transpose_a {}, transpose_b {}) do not multiply",
                     shapeStr(a.shape), shapeStr(b.shape), ta, tb);
  // Gemm: the same product of matrices, with TensorFlow's transposes as its own (the fully-connected layer of the
  // targets). A constant B is stored [N, K] (transB), as fully-connected weights are.
  const std::vector<int64_t> swap = {1, 0};
  ir::ValueId bv = b.host && !tb ? transposed(b, swap, "weights") : asTf(b);
  return emit("Gemm", {asTf(a), bv}, {{"transA", int64_t{ta}}, {"transB", int64_t{tb || b.host}}});
}

void Importer::softmax(const tf::NodeDef& n) {
  expectInputs(n, 1, 1);
  Val& x = in(n, 0);
  if (x.shape.empty()) fail(ErrorCode::kInvalidInput, "Softmax of a scalar");
  // Over the last axis: axis 1 of a channels-first value.
  if (isCf(x)) return setOut(0, emit("Softmax", {held(x)}, {{"axis", int64_t{1}}}), true);
  setOut(0, emit("Softmax", {asTf(x)}, {{"axis", static_cast<int64_t>(x.shape.size()) - 1}}), false);
}

void Importer::reduce(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  Val& x = in(n, 0);
  const size_t rank = x.shape.size();
  std::vector<int64_t> axes = hostInts(n, 1, "reduction_indices");
  for (int64_t& a : axes) a = axisOf(a, rank, "reduction index");
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const bool keep = attrBool(n, "keep_dims", false);
  if (n.op() == "Prod") {  // shape arithmetic only: the product of a known 1-D integer tensor
    if (!x.host || x.host->dtype() != DType::kI64 || rank != 1 || axes != std::vector<int64_t>{0})
      fail(ErrorCode::kUnsupported, "Prod is imported over a known 1-D integer tensor (shape arithmetic) only");
    int64_t p = 1;
    for (int64_t v : x.host->values<int64_t>()) p *= v;
    setHost(0, keep ? Tensor::fromVector<int64_t>({1}, {p}) : Tensor::scalar<int64_t>(p), x.dtype);
    return;
  }
  if (x.dtype != DType::kF32) fail(ErrorCode::kUnsupported, "{} of a {} tensor", n.op(), dtypeName(x.dtype));
  if (axes.empty()) return setOut(0, emit("Identity", {isCf(x) ? held(x) : asTf(x)}), isCf(x));
  static const std::map<std::string, std::pair<const char*, const char*>> kForms = {
      {"Mean", {"ReduceMean", "GlobalAveragePool"}}, {"Max", {"ReduceMax", "GlobalMaxPool"}},
      {"Min", {"ReduceMin", nullptr}}, {"Sum", {"ReduceSum", nullptr}}};
  const auto [reduce_op, global_pool] = kForms.at(n.op());
  if (global_pool && isCf(x) && axes == std::vector<int64_t>{1, 2}) {  // over H, W of a feature map: global pooling
    ir::ValueId pooled = emit(global_pool, {held(x)}, {}, keep ? "" : "/pool");
    if (keep) return setOut(0, pooled, true);
    const Shape& ps = irShape(pooled);
    return setOut(0, emit("Reshape", {pooled, ints("shape", {ps[0], ps[1]})}), false);
  }
  std::vector<int64_t> ir_axes = axes, kept;  // kept: the TensorFlow axes of the IR result, in IR order
  ir::ValueId xv = isCf(x) ? held(x) : asTf(x);
  for (size_t i = 0; i < rank; ++i) {
    int64_t tf_axis = isCf(x) ? kCfToTf[i] : static_cast<int64_t>(i);
    if (std::binary_search(axes.begin(), axes.end(), tf_axis)) {
      if (isCf(x)) ir_axes[static_cast<size_t>(std::lower_bound(axes.begin(), axes.end(), tf_axis) - axes.begin())] = static_cast<int64_t>(i);
      if (keep) kept.push_back(tf_axis);
    } else {
      kept.push_back(tf_axis);
    }
  }
  std::sort(ir_axes.begin(), ir_axes.end());
  ir::ValueId y = n.op() == "Sum" ? emit(reduce_op, {xv, ints("axes", ir_axes)}, {{"keepdims", int64_t{keep}}})
                                  : emit(reduce_op, {xv}, {{"axes", ir_axes}, {"keepdims", int64_t{keep}}});
  setOutAxes(0, y, kept);
}

void Importer::argmax(const tf::NodeDef& n) {
  expectInputs(n, 2, 2);
  Val& x = in(n, 0);
  std::vector<int64_t> d = hostInts(n, 1, "dimension");
  if (d.size() != 1) fail(ErrorCode::kInvalidInput, "input 1 (dimension) holds {} values; it is one axis", d.size());
  const int64_t axis = axisOf(d[0], x.shape.size(), "dimension");
  tf::DataType ot = attrType(n, "output_type", tf::DT_INT64);
  if (ot != tf::DT_INT64 && ot != tf::DT_INT32) fail(ErrorCode::kUnsupported, "attr 'output_type' {}", tf::DataType_Name(ot));
  ir::ValueId xv = isCf(x) ? held(x) : asTf(x);
  const int64_t ir_axis = isCf(x) ? kTfToCf[static_cast<size_t>(axis)] : axis;
  ir::ValueId y = emit("ArgMax", {xv}, {{"axis", ir_axis}, {"keepdims", int64_t{0}}}, ot == tf::DT_INT32 ? "/int64" : "");
  if (ot == tf::DT_INT32) y = emit("Cast", {y}, {{"to", int64_t{6}}});  // 6: INT32
  std::vector<int64_t> kept;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    int64_t tf_axis = isCf(x) ? kCfToTf[i] : static_cast<int64_t>(i);
    if (tf_axis != axis) kept.push_back(tf_axis);
  }
  setOutAxes(0, y, kept, ot == tf::DT_INT32 ? DType::kI32 : DType::kI64);
}

void Importer::cast(const tf::NodeDef& n) {
  expectInputs(n, 1, 1);
  Val& x = in(n, 0);
  tf::DataType to = attrType(n, "DstT");
  if (x.host) {
    if (isFloat(to)) {
      std::vector<double> v = x.host->toDouble();
      std::vector<float> f(v.begin(), v.end());
      return setHost(0, Tensor::fromVector<float>(x.shape, f), DType::kF32);
    }
    if (to == tf::DT_INT32 || to == tf::DT_INT64) {
      std::vector<double> v = x.host->toDouble();
      std::vector<int64_t> r;
      for (double e : v) r.push_back(static_cast<int64_t>(std::trunc(e)));
      return setHost(0, Tensor::fromVector<int64_t>(x.shape, r), to == tf::DT_INT32 ? DType::kI32 : DType::kI64);
    }
  }
  if (isFloat(to)) {
    if (x.dtype == DType::kF32) return alias(n, 0);
    return setOut(0, emit("Cast", {isCf(x) ? held(x) : asTf(x)}, {{"to", int64_t{1}}}), isCf(x));
  }
  if (to == tf::DT_INT32 || to == tf::DT_INT64)
    return setOut(0, emit("Cast", {isCf(x) ? held(x) : asTf(x)}, {{"to", int64_t{to == tf::DT_INT32 ? 6 : 7}}}), isCf(x),
                  to == tf::DT_INT32 ? DType::kI32 : DType::kI64);
  fail(ErrorCode::kUnsupported, "Cast to {} (npuc imports casts to float, int32 and int64)", tf::DataType_Name(to));
}

}  // namespace npuc::tf_io
