// The reader's checks of the element-wise layer kinds (validate.hpp): unary and binary ops (elementwise_ops.def
// gives their codes), where, and the typed (integer / bool) unary and binary ops.
#include "package/validate.hpp"

#include "kernels/quant.hpp"
#include "kernels/typed.hpp"

#include <string_view>

namespace npuc::package {

namespace {

/// The checks of this family, members of a LayerCheck: they read the descriptor (d, x, y, w, what) by name.
struct ElementwiseChecks : LayerCheck {
  void binary() const {
    const TensorRef& b = d.in(1);
    if (w[0] >= binaryOpNames().size()) bad("{}: unknown binary op {}", what, w[0]);
    if (x.type == ElemType::kI8 && binaryOpNames()[w[0]] == std::string_view("Mul")) return int8Product();
    if (x.type == ElemType::kI8) {  // the int8 form (int8-affine packages): an addition (docs/numerics.md)
      if (!numericsTraits(p.numerics).affine_codes) bad("{}: int8 additions belong to int8-affine packages", what);
      if (binaryOpNames()[w[0]] != std::string_view("Add")) bad("{}: the int8 form is an addition or a product, not {}", what, binaryOpNames()[w[0]]);
      if (d.n_in != 3) bad("{}: the int8 form takes 3 inputs (a, b, requantization), got {}", what, d.n_in);
      typeIs(b, ElemType::kI8, "b");
      typeIs(y, ElemType::kI8, "y");
      if (dimsOf(x) != dimsOf(y) || dimsOf(b) != dimsOf(y))
        bad("{}: the int8 form adds tensors of one shape, got {} + {} -> {}", what, dimsStr(x), dimsStr(b), dimsStr(y));
      const std::vector<int32_t> t = int8Table(d.in(2), 8, 5, what);
      for (int k = 5; k < 7; ++k)
        if (t[k] < 0 || t[k] >= 32768) bad("{}: multiplier {} is outside [0, 2^15)", what, t[k]);
      if (t[7] < 1 || t[7] > 30) bad("{}: shift {} is outside [1, 30]", what, t[7]);
      if (d.act != Act::kNone || d.act_a || d.act_b) bad("{}: the int8 form has no activation (its clamp is in the table)", what);
      return;
    }
    if (d.n_in != 2) bad("{}: {} inputs (the float form takes 2)", what, d.n_in);
    isFloat(x, "a"); isFloat(b, "b"); isFloat(y, "y");
    broadcastsToY(x);
    broadcastsToY(b);
  }

  /// The int8 product (int8-affine): a, b int8 — b of a's dims, or a's leading dims then 1s — and the requantization
  /// table [za, zb, zy, lo, hi, multiplier, shift] (docs/numerics.md).
  void int8Product() const {
    const TensorRef& b = d.in(1);
    if (!numericsTraits(p.numerics).affine_codes) bad("{}: int8 products belong to int8-affine packages", what);
    if (d.n_in != 3) bad("{}: the int8 form takes 3 inputs (a, b, requantization), got {}", what, d.n_in);
    typeIs(b, ElemType::kI8, "b");
    typeIs(y, ElemType::kI8, "y");
    const bool ok = dimsOf(x) == dimsOf(y) && kernels::qmulShapes(x.dims, b.dims, x.rank, b.rank);
    if (!ok) bad("{}: the int8 product takes b of a's dims or a's leading dims then 1s, got {} * {} -> {}", what, dimsStr(x), dimsStr(b), dimsStr(y));
    const std::vector<int32_t> t = int8Table(d.in(2), 7, 5, what);
    if (t[5] < 0 || (t[5] != 0 && t[5] < (1 << 30))) bad("{}: multiplier {} is neither 0 nor in [2^30, 2^31)", what, t[5]);
    if (t[6] < -31 || t[6] > 30) bad("{}: shift {} is outside [-31, 30]", what, t[6]);
    if (d.act != Act::kNone || d.act_a || d.act_b) bad("{}: the int8 form has no activation (its clamp is in the table)", what);
  }

  /// r's dims broadcast numpy-style to y's.
  void broadcastsToY(const TensorRef& r) const {
    if (r.rank > y.rank) bad("{}: input {} has a higher rank than the output {}", what, dimsStr(r), dimsStr(y));
    for (int i = 0; i < r.rank; ++i) {
      uint32_t rd = r.dims[static_cast<size_t>(i)], yd = y.dims[static_cast<size_t>(y.rank - r.rank + i)];
      if (rd != yd && rd != 1) bad("{}: {} does not broadcast to {}", what, dimsStr(r), dimsStr(y));
    }
  }

  void typedBinary() const {
    const TensorRef& b = d.in(1);
    if (w[0] >= static_cast<uint32_t>(kernels::TypedBinaryOp::kCount)) bad("{}: unknown typed binary op {}", what, w[0]);
    const auto op = static_cast<kernels::TypedBinaryOp>(w[0]);
    if (b.type != x.type) bad("{}: operands of two types ({}, {})", what, elemName(x.type), elemName(b.type));
    const std::string why = kernels::typedBinaryRule(op, x.type);
    if (!why.empty()) bad("{}: {}", what, why);
    const ElemType yt = kernels::typedBinaryIsPredicate(op) ? ElemType::kBool : x.type;
    if (y.type != yt) bad("{}: {} of {} writes {}, not {}", what, kernels::typedBinaryOpName(op), elemName(x.type), elemName(yt), elemName(y.type));
    if (d.act != Act::kNone || d.act_a || d.act_b) bad("{}: typed layers have no activation", what);
    broadcastsToY(x);
    broadcastsToY(b);
  }

  void typedUnary() const {
    if (w[0] >= static_cast<uint32_t>(kernels::TypedUnaryOp::kCount)) bad("{}: unknown typed unary op {}", what, w[0]);
    const auto op = static_cast<kernels::TypedUnaryOp>(w[0]);
    const std::string why = kernels::typedUnaryRule(op, x.type);
    if (!why.empty()) bad("{}: {}", what, why);
    if (w[1] > 3) bad("{}: flags {} (bits 0 and 1 only)", what, w[1]);
    const ElemType yt = kernels::typedUnaryIsPredicate(op) ? ElemType::kBool : x.type;
    if (y.type != yt) bad("{}: {} of {} writes {}, not {}", what, kernels::typedUnaryOpName(op), elemName(x.type), elemName(yt), elemName(y.type));
    if (dimsOf(x) != dimsOf(y)) bad("{}: {} -> {} changes the shape", what, dimsStr(x), dimsStr(y));
    if (d.act != Act::kNone || d.act_a || d.act_b) bad("{}: typed layers have no activation", what);
  }

  void unary() const {
    if (w[0] >= unaryOpNames().size()) bad("{}: unknown unary op {}", what, w[0]);
    if (x.type == ElemType::kI8) {  // the int8 form: the op's results over every code, as a table
      if (!numericsTraits(p.numerics).affine_codes) bad("{}: the int8 form belongs to int8-affine packages", what);
      if (d.n_in != 2) bad("{}: the int8 form reads x and its table, not {} inputs", what, d.n_in);
      const TensorRef& t = d.in(1);
      typeIs(t, ElemType::kI8, "table");
      if (t.rank != 1 || t.dims[0] != 256) bad("{}: the table is {}, not [256]", what, dimsStr(t));
      weightRef(t, what + ": table");
      typeIs(y, ElemType::kI8, "y");
      if (dimsOf(x) != dimsOf(y)) bad("{}: {} -> {} changes the shape", what, dimsStr(x), dimsStr(y));
      return;
    }
    if (d.n_in != 1) bad("{}: the float form reads x only, not {} inputs", what, d.n_in);
    floatSameShape();
  }

  void where() const {
    const TensorRef &a = d.in(1), &b = d.in(2);
    if (x.type != ElemType::kU8 && x.type != ElemType::kBool)
      bad("{}: the condition is {}, this kind needs bool or uint8", what, elemName(x.type));
    if (a.type != y.type || b.type != y.type)
      bad("{}: selects {} / {} into {}", what, elemName(a.type), elemName(b.type), elemName(y.type));
    for (const TensorRef* r : {&x, &a, &b}) broadcastsToY(*r);
  }
};

/// clip: x, then the bounds its flags name, each one element of x's type.
void checkClip(const LayerCheck& c) {
  const uint32_t flags = c.w[0];
  const int bounds = (flags & 1) + ((flags >> 1) & 1);
  if (flags > 3 || c.d.n_in != 1 + bounds) c.bad("{}: flags {} for {} inputs", c.what, flags, c.d.n_in);
  if (c.x.type != c.y.type || dimsOf(c.x) != dimsOf(c.y))
    c.bad("{}: {} {} -> {} {}", c.what, elemName(c.x.type), dimsStr(c.x), elemName(c.y.type), dimsStr(c.y));
  if (c.x.type == ElemType::kBool || !(kernels::typedKernelType(c.x.type))) c.bad("{}: Clip of {}", c.what, elemName(c.x.type));
  for (int i = 1; i < c.d.n_in; ++i)
    if (c.d.in(i).type != c.x.type || c.d.in(i).numel() != 1)
      c.bad("{}: bound {} is {} {}, not one {}", c.what, i, elemName(c.d.in(i).type), dimsStr(c.d.in(i)), elemName(c.x.type));
}

}  // namespace

const KindCheck kind_checks::kBinary = [](const LayerCheck& c) { ElementwiseChecks{c}.binary(); };
const KindCheck kind_checks::kUnary = [](const LayerCheck& c) { ElementwiseChecks{c}.unary(); };
const KindCheck kind_checks::kWhere = [](const LayerCheck& c) { ElementwiseChecks{c}.where(); };
const KindCheck kind_checks::kTypedBinary = [](const LayerCheck& c) { ElementwiseChecks{c}.typedBinary(); };
const KindCheck kind_checks::kTypedUnary = [](const LayerCheck& c) { ElementwiseChecks{c}.typedUnary(); };

const KindCheck kind_checks::kClip = &checkClip;

}  // namespace npuc::package
