// Lowering of ONNX's linear quantization ops into int8-affine packages (docs/numerics.md): a per-tensor
// QuantizeLinear / DequantizeLinear with int8 on its integer side becomes a quantize / dequantize layer.
#include "codegen/lowerer.hpp"
#include "ops/window.hpp"  // (kernels::pow2, the tables: through package/package.hpp)

#include <algorithm>

#include <cstring>

namespace npuc::codegen::detail {

namespace {
std::vector<uint8_t> i32bytes(const std::vector<int32_t>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}
}  // namespace

void Lowerer::requireAffineCodes(const ir::Node& n, std::string_view form) const {
  if (!numericsTraits(t_.numerics).affine_codes)
    unsupported(n, "{} has a package form in int8-affine packages only (target '{}' has {} numerics)", form, t_.name,
                numericsName(t_.numerics));
}

void Lowerer::quantizeNode(const ir::Node& n) {
  const bool q = n.op == "QuantizeLinear";
  requireAffineCodes(n, n.op);
  const Tensor* scale = constIn(n, 1);
  const Tensor* zp = constIn(n, 2);
  if (!scale || scale->numel() != 1) unsupported(n, "the scale must be one constant value (per-tensor quantization)");
  if (!n.hasInput(2) || !zp || zp->numel() != 1 || zp->dtype() != DType::kI8)
    unsupported(n, "the zero point must be one constant int8 value (int8-affine)");
  const ir::Type& xt = g_.value(n.inputs[0]).type;
  if (q ? xt.dtype != DType::kF32 : xt.dtype != DType::kI8)
    unsupported(n, "{} of {} has no package form ({})", n.op, dtypeName(xt.dtype), q ? "float32 → int8" : "int8 → float32");
  if (xt.shape.size() > package::kMaxRank) unsupported(n, "rank {} above {}", xt.shape.size(), package::kMaxRank);
  const float s = static_cast<float>(scale->toDouble()[0]);
  if (!(s > 0) || !std::isfinite(s)) unsupported(n, "scale {} is not a finite positive number", s);
  const int32_t z = static_cast<int32_t>(zp->toInt64()[0]);
  emit(n, q ? LayerKind::kQuantize : LayerKind::kDequantize, {in(n, 0)}, outVal(n, n.outputs[0]),
       {package::floatParam(s), static_cast<uint32_t>(z)});
}

/// ai.npuc QConv -> a conv layer in its int8 form: x int8, w int8, bias int32, and the requantization table int32
/// [x_zero_point, y_zero_point, y_min, y_max, then (multiplier, shift) per output channel]; the parameter words are
/// the float conv's.
void Lowerer::qconvNode(const ir::Node& n) {
  requireAffineCodes(n, "QConv");
  const Shape& xs = shapeOf(n, 0);
  if (xs.size() != 4) unsupported(n, "{}-D integer convolution has no package form (2-D)", xs.size() - 2);
  const Tensor* w = constIn(n, 1);
  if (!w || w->dtype() != DType::kI8) unsupported(n, "the weights must be a constant int8 tensor");
  const Tensor* b = constIn(n, 2);
  if (n.hasInput(2) && (!b || b->dtype() != DType::kI32)) unsupported(n, "the bias must be a constant int32 tensor");
  const int64_t M = w->dim(0);
  std::vector<int64_t> sp(xs.begin() + 2, xs.end()), ks(w->shape().begin() + 2, w->shape().end());
  ops::Window win = ops::resolveWindow(n, sp, ks, false);
  std::vector<uint32_t> p = {u32(n.attrInt("group", 1)), u32(win.kernel[0]), u32(win.kernel[1]), u32(win.stride[0]),
                             u32(win.stride[1]), u32(win.dilation[0]), u32(win.dilation[1]), u32(win.pad_begin[0]),
                             u32(win.pad_begin[1])};
  auto bytesOf = [](const Tensor& t) {
    const auto* s = static_cast<const uint8_t*>(t.raw());
    return std::vector<uint8_t>(s, s + t.nbytes());
  };
  int x = in(n, 0);
  int wv = weightVal(g_.value(n.inputs[1]).name, w->shape(), bytesOf(*w), ElemType::kI8);
  std::vector<int32_t> bias(static_cast<size_t>(M), 0);
  if (b) std::copy(b->data<int32_t>(), b->data<int32_t>() + M, bias.begin());
  std::vector<int32_t> table = {static_cast<int32_t>(n.attrInt("x_zero_point", 0)), static_cast<int32_t>(n.attrInt("y_zero_point", 0)),
                                static_cast<int32_t>(n.attrInt("y_min", -128)), static_cast<int32_t>(n.attrInt("y_max", 127))};
  auto mult = n.attrInts("multipliers"), shift = n.attrInts("shifts");
  for (int64_t m = 0; m < M; ++m) {
    size_t k = mult.size() == 1 ? 0 : static_cast<size_t>(m);
    table.push_back(static_cast<int32_t>(mult.at(k)));
    table.push_back(static_cast<int32_t>(shift.at(k)));
  }
  int bv = weightVal(b ? g_.value(n.inputs[2]).name : n.name + "/bias", {M}, i32bytes(bias), ElemType::kI32);
  int tv = weightVal(n.name + "/requantization", {static_cast<int64_t>(table.size())}, i32bytes(table), ElemType::kI32);
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  LDesc& d = emit(n, LayerKind::kConv, {x, wv, bv, tv}, outVal(n, n.outputs[0]), p);
  d.views = {xs, w->shape(), {M}, {static_cast<int64_t>(table.size())}, ys};
}

/// ai.npuc QAdd -> a binary layer (add) in its int8 form: a, b int8 of one shape, and the requantization table int32
/// [a_zero_point, b_zero_point, y_zero_point, y_min, y_max, multiplier of a, multiplier of b, shift].
void Lowerer::qaddNode(const ir::Node& n) {
  requireAffineCodes(n, "QAdd");
  std::vector<int32_t> table;
  for (const char* a : {"a_zero_point", "b_zero_point", "y_zero_point", "y_min", "y_max"})
    table.push_back(static_cast<int32_t>(n.attrInt(a, 0)));
  table[3] = static_cast<int32_t>(n.attrInt("y_min", -128));
  table[4] = static_cast<int32_t>(n.attrInt("y_max", 127));
  auto mult = n.attrInts("multipliers");
  table.push_back(static_cast<int32_t>(mult.at(0)));
  table.push_back(static_cast<int32_t>(mult.at(1)));
  table.push_back(static_cast<int32_t>(n.attrInt("shift", 1)));
  const int a = in(n, 0), b = in(n, 1);
  int tv = weightVal(n.name + "/requantization", {static_cast<int64_t>(table.size())}, i32bytes(table), ElemType::kI32);
  emit(n, LayerKind::kBinary, {a, b, tv}, outVal(n, n.outputs[0]), {binaryCode("Add")});
}

/// ai.npuc QMatMul -> a matmul layer in its int8 form: a, b int8 (the operands at the output's rank, leading 1s, as the
/// float form's references), and the requantization table int32 [a_zero_point, b_zero_point, y_zero_point, y_min,
/// The requantization table of a QMatMul or QMul: int32 [a_zero_point, b_zero_point, y_zero_point, y_min, y_max,
/// multiplier, shift].
static std::vector<int32_t> twoOperandTable(const ir::Node& n) {
  std::vector<int32_t> table;
  for (auto [a, def] : {std::pair{"a_zero_point", 0}, {"b_zero_point", 0}, {"y_zero_point", 0}, {"y_min", -128}, {"y_max", 127},
                        {"multiplier", 0}, {"shift", 0}})
    table.push_back(static_cast<int32_t>(n.attrInt(a, def)));
  return table;
}

/// y_max, multiplier, shift]; parameter word 0 (no bias).
void Lowerer::qmatmulNode(const ir::Node& n) {
  requireAffineCodes(n, "QMatMul");
  Shape sa = shapeOf(n, 0), sb = shapeOf(n, 1);
  const Shape& ys = g_.value(n.outputs[0]).type.shape;
  if (ys.size() > package::kMaxRank) unsupported(n, "rank {} above {}", ys.size(), package::kMaxRank);
  while (sa.size() < ys.size()) sa.insert(sa.begin(), 1);
  while (sb.size() < ys.size()) sb.insert(sb.begin(), 1);
  const std::vector<int32_t> table = twoOperandTable(n);
  const int a = in(n, 0), b = in(n, 1);
  int tv = weightVal(n.name + "/requantization", {static_cast<int64_t>(table.size())}, i32bytes(table), ElemType::kI32);
  LDesc& d = emit(n, LayerKind::kMatMul, {a, b, tv}, outVal(n, n.outputs[0]), {0u});
  d.views = {sa, sb, {static_cast<int64_t>(table.size())}, ys};
}

/// ai.npuc QGlobalAvgPool -> a global_avg_pool layer in its int8 form: x int8, and the requantization table int32
/// [x_zero_point, y_zero_point, y_min, y_max, multiplier, shift].
void Lowerer::qglobalAvgPoolNode(const ir::Node& n) {
  requireAffineCodes(n, "QGlobalAvgPool");
  std::vector<int32_t> table = {static_cast<int32_t>(n.attrInt("x_zero_point", 0)), static_cast<int32_t>(n.attrInt("y_zero_point", 0)),
                                static_cast<int32_t>(n.attrInt("y_min", -128)), static_cast<int32_t>(n.attrInt("y_max", 127)),
                                static_cast<int32_t>(n.attrInt("multiplier", 0)), static_cast<int32_t>(n.attrInt("shift", 0))};
  int tv = weightVal(n.name + "/requantization", {static_cast<int64_t>(table.size())}, i32bytes(table), ElemType::kI32);
  emit(n, LayerKind::kGlobalAvgPool, {in(n, 0), tv}, outVal(n, n.outputs[0]));
}

/// ai.npuc QAvgPool -> an avg_pool layer in its int8 form: x int8, and the requantization table int32 [x_zero_point,
/// y_zero_point, y_min, y_max, then multiplier, shift for each divisor 1 .. kh * kw].
void Lowerer::qavgPoolNode(const ir::Node& n) {
  requireAffineCodes(n, "QAvgPool");
  std::vector<int32_t> table = {static_cast<int32_t>(n.attrInt("x_zero_point", 0)), static_cast<int32_t>(n.attrInt("y_zero_point", 0)),
                                static_cast<int32_t>(n.attrInt("y_min", -128)), static_cast<int32_t>(n.attrInt("y_max", 127))};
  const std::vector<int64_t> m = n.attrInts("multipliers"), sh = n.attrInts("shifts");
  for (size_t i = 0; i < m.size() && i < sh.size(); ++i) table.push_back(static_cast<int32_t>(m[i])), table.push_back(static_cast<int32_t>(sh[i]));
  int tv = weightVal(n.name + "/requantization", {static_cast<int64_t>(table.size())}, i32bytes(table), ElemType::kI32);
  poolLayer(n, {in(n, 0), tv});
}

/// The int8-pow2 ops (quant/pow2.hpp) -> layers in their int8-pow2 forms, the table (attribute "table") as the
/// layer's last input: P2Conv -> conv (4-D x) or gemm (2-D x), P2ConvTranspose -> conv_transpose, P2Add / P2Max / P2Mul / P2PRelu -> binary add / max / mul / prelu, P2Concat -> concat, P2AvgPool -> avg_pool, P2Resize -> resize, P2Softmax -> softmax, P2GlobalAvgPool ->
/// global_avg_pool, P2Quantize -> quantize, P2Dequantize -> dequantize (docs/numerics.md, "int8-pow2").
void Lowerer::pow2Node(const ir::Node& n) {
  if (!numericsTraits(t_.numerics).pow2_codes)
    unsupported(n, "{} has a package form in int8-pow2 packages only (target '{}' has {} numerics)", n.op, t_.name,
                numericsName(t_.numerics));
  auto words = n.attrInts("table");
  std::vector<int32_t> table(words.begin(), words.end());
  kernels::pow2::Table t;
  if (std::string why = kernels::pow2::decodeTable(table.data(), table.size(), &t); !why.empty()) unsupported(n, "table: {}", why);
  pow2_slots_ = std::max(pow2_slots_, t.out.slot + 1);
  auto bytesOf = [](const Tensor& v) {
    const auto* s = static_cast<const uint8_t*>(v.raw());
    return std::vector<uint8_t>(s, s + v.nbytes());
  };
  const int out = outVal(n, n.outputs[0]);
  int tv = weightVal(n.name + "/pow2_table", {static_cast<int64_t>(table.size())}, i32bytes(table), ElemType::kI32);
  if (n.op == "P2Quantize" || n.op == "P2Dequantize") {
    emit(n, n.op == "P2Quantize" ? LayerKind::kQuantize : LayerKind::kDequantize, {in(n, 0), tv}, out, {0u, 0u});
    return;
  }
  if (n.op == "P2Add" || n.op == "P2Max" || n.op == "P2Mul") {
    emit(n, LayerKind::kBinary, {in(n, 0), in(n, 1), tv}, out, {binaryCode(n.op.substr(2).c_str())});
    return;
  }
  if (n.op == "P2PRelu") {  // the slopes' codes as b: one, or one per channel ([1, C, 1, ...] against x)
    const Tensor* s = constIn(n, 1);
    if (!s || s->dtype() != DType::kI16) unsupported(n, "the slopes must be an int16 constant");
    const Shape& xs = shapeOf(n, 0);
    Shape bs(xs.size(), 1);
    if (s->numel() > 1) bs[1] = s->numel();
    emit(n, LayerKind::kBinary, {in(n, 0), weightVal(g_.value(n.inputs[1]).name, bs, bytesOf(*s), ElemType::kI16), tv}, out,
         {binaryCode("PRelu")});
    return;
  }
  if (n.op == "P2Concat") {
    std::vector<int> ins;
    for (int i = 0; i < n.numInputs(); ++i) ins.push_back(in(n, i));
    ins.push_back(tv);
    int64_t axis = n.attrInt("axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(shapeOf(n, 0).size());
    emit(n, LayerKind::kConcat, ins, out, {u32(axis)});
    return;
  }
  if (n.op == "P2AvgPool") {
    poolLayer(n, {in(n, 0), tv});
    return;
  }
  if (n.op == "P2Resize") {  // an interpolating resize: the float form's words, its table last
    bool sizes_in = false, scales_in = false;
    const kernels::ResizeSpec spec = resizeSpec(n, n.attrInt("upsample", 0) != 0, &sizes_in, &scales_in);
    if (sizes_in || scales_in) unsupported(n, "the int8-pow2 resize takes constant sizes / scales");
    emit(n, LayerKind::kResize, {in(n, 0), tv}, out, package::resizeParams(spec));
    return;
  }
  if (n.op == "P2Softmax") {  // the float form's words: kind 0 (Softmax), axis
    emit(n, LayerKind::kSoftmax, {in(n, 0), tv}, out, {0u, u32(n.attrInt("axis", 0))});
    return;
  }
  if (n.op == "P2GlobalAvgPool") {
    emit(n, LayerKind::kGlobalAvgPool, {in(n, 0), tv}, out);
    return;
  }
  // P2Conv, P2ConvTranspose
  const bool tr = n.op == "P2ConvTranspose";
  const Shape& xs = shapeOf(n, 0);
  const Tensor* w = constIn(n, 1);
  const Tensor* b = constIn(n, 2);
  if (!w || w->dtype() != DType::kI16 || !b || b->dtype() != DType::kI32) unsupported(n, "the weights and bias must be constants (int16, int32)");
  int x = in(n, 0);
  int wv = weightVal(g_.value(n.inputs[1]).name, w->shape(), bytesOf(*w), ElemType::kI16);
  int bv = weightVal(g_.value(n.inputs[2]).name, b->shape(), bytesOf(*b), ElemType::kI32);
  if (xs.size() == 2) {
    emit(n, LayerKind::kGemm, {x, wv, bv, tv}, out);
    return;
  }
  std::vector<int64_t> sp(xs.begin() + 2, xs.end()), ks(w->shape().begin() + 2, w->shape().end());
  ops::Window win = tr ? ops::resolveTransposedWindow(n, sp, ks) : ops::resolveWindow(n, sp, ks, false);
  const bool one = xs.size() == 3;  // a 1-D convolution: an NC1W view, its window 1 high
  auto at = [one](const std::vector<int64_t>& v, int i, int64_t one_d) { return hw(v, i, one_d, one); };
  std::vector<uint32_t> p = {u32(n.attrInt("group", 1)), u32(at(win.kernel, 0, 1)), u32(at(win.kernel, 1, 1)),
                             u32(at(win.stride, 0, 1)), u32(at(win.stride, 1, 1)), u32(at(win.dilation, 0, 1)),
                             u32(at(win.dilation, 1, 1)), u32(at(win.pad_begin, 0, 0)), u32(at(win.pad_begin, 1, 0))};
  LDesc& d = emit(n, tr ? LayerKind::kConvTranspose : LayerKind::kConv, {x, wv, bv, tv}, out, p);
  if (one) d.views = {as4d(xs), as4d(w->shape()), b->shape(), {static_cast<int64_t>(table.size())}, as4d(g_.value(n.outputs[0]).type.shape)};
}

namespace {
/// ai.npuc QLookup -> a unary layer in its int8 form: x int8, the table int8 [256] (y = table[x + 128]); the op word
/// names the function the table holds (its first fused op).
void qlookupNode(Lowerer& l, const ir::Node& n) {
  l.requireAffineCodes(n, "QLookup");
  const std::vector<int64_t> t = n.attrInts("table");
  if (t.size() != 256) l.unsupported(n, "the table holds {} values (256)", t.size());
  std::vector<uint8_t> bytes(256);
  for (size_t i = 0; i < 256; ++i) bytes[i] = static_cast<uint8_t>(static_cast<int8_t>(t[i]));
  const int tv = l.weightVal(n.name + "/table", {256}, std::move(bytes), ElemType::kI8);
  std::vector<std::string> fused;
  if (auto a = n.attrs.find("fused"); a != n.attrs.end())
    if (const auto* v = a->second.get<std::vector<std::string>>()) fused = *v;
  const std::vector<std::string>& names = package::unaryOpNames();
  const auto op = fused.empty() ? names.end() : std::find(names.begin(), names.end(), fused[0]);
  if (op == names.end()) l.unsupported(n, "the table's function '{}' is not a unary op of the package", fused.empty() ? "" : fused[0]);
  l.emit(n, LayerKind::kUnary, {l.in(n, 0), tv}, l.outVal(n, n.outputs[0]), {static_cast<uint32_t>(op - names.begin()), 0, 0});
}
}  // namespace

namespace {
/// ai.npuc QMul -> a binary Mul layer in its int8 form: a, b int8 (b: a's shape or one value per plane), and the
/// requantization table int32 [a_zero_point, b_zero_point, y_zero_point, y_min, y_max, multiplier, shift].
void qmulNode(Lowerer& l, const ir::Node& n) {
  l.requireAffineCodes(n, "QMul");
  const std::vector<int32_t> table = twoOperandTable(n);
  const int a = l.in(n, 0), b = l.in(n, 1);
  const int tv = l.weightVal(n.name + "/requantization", {static_cast<int64_t>(table.size())}, i32bytes(table), ElemType::kI32);
  l.emit(n, LayerKind::kBinary, {a, b, tv}, l.outVal(n, n.outputs[0]), {Lowerer::binaryCode("Mul")});
}
}  // namespace

void registerQuantLowerings(LowerTable& t) {
  t[{"ai.npuc", "QLookup"}] = &qlookupNode;
  t[{"ai.npuc", "QMul"}] = &qmulNode;
  for (const char* op : {"P2Quantize", "P2Dequantize", "P2Conv", "P2ConvTranspose", "P2Add", "P2Max", "P2Mul", "P2PRelu", "P2Concat", "P2AvgPool", "P2Resize", "P2Softmax", "P2GlobalAvgPool"}) t[{"ai.npuc", op}] = &Lowerer::pow2Node;
  t[{"ai.npuc", "QConv"}] = &Lowerer::qconvNode;
  t[{"ai.npuc", "QAdd"}] = &Lowerer::qaddNode;
  t[{"ai.npuc", "QMatMul"}] = &Lowerer::qmatmulNode;
  t[{"ai.npuc", "QGlobalAvgPool"}] = &Lowerer::qglobalAvgPoolNode;
  t[{"ai.npuc", "QAvgPool"}] = &Lowerer::qavgPoolNode;
  t[{"", "QuantizeLinear"}] = &Lowerer::quantizeNode;
  t[{"", "DequantizeLinear"}] = &Lowerer::quantizeNode;
}

}  // namespace npuc::codegen::detail
