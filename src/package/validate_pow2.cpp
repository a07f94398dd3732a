// The int8-pow2 forms of layer kinds (TIDL, docs/numerics.md): codes (int8 / uint8) at a power-of-two scale per slot,
// each form carrying its table (kernels/pow2.hpp) as its last input. What every form shares is checked once — the
// table, its slots, the codes' types — then what each kind adds; the geometry of a convolution's and the poolings'
// forms is their float form's (kind_checks, with LayerCheck::pow2 set).
#include "package/validate.hpp"

#include "kernels/layers.hpp"

#include <algorithm>

namespace npuc::package {

namespace {

bool isCodes(ElemType t) { return t == ElemType::kI8 || t == ElemType::kU8; }

/// The table of a form with a table: decoded, its slots within the package's, the types of x and y as it says.
void checkTable(const LayerCheck& c, std::map<uint32_t, kernels::pow2::Table>& tables) {
  const Descriptor& d = c.d;
  const std::string& what = c.what;
  const bool concat = d.kind == LayerKind::kConcat;
  const bool product = d.kind == LayerKind::kConv || d.kind == LayerKind::kConvTranspose || d.kind == LayerKind::kGemm;
  const int n_in = product ? 4 : d.kind == LayerKind::kBinary ? 3
                   : concat ? std::max<int>(d.n_in, 2) : 2;
  if (d.n_in != n_in) c.bad("{}: the int8-pow2 form takes {} inputs (the last its table), got {}", what, n_in, d.n_in);
  const TensorRef& tab = d.in(n_in - 1);
  if (tab.type != ElemType::kI32 || tab.rank != 1 || tab.dims[0] < 11 || tab.dims[0] > 19)
    c.bad("{}: the int8-pow2 table must be int32 [11..19], got {} {}", what, elemName(tab.type), dimsStr(tab));
  c.weightRef(tab, what + ": table");
  std::vector<int32_t> words(tab.dims[0]);
  for (size_t k = 0; k < words.size(); ++k) words[k] = c.weightWord(tab, static_cast<int64_t>(k));
  kernels::pow2::Table t;
  std::string why = kernels::pow2::decodeTable(words.data(), words.size(), &t);
  if (!why.empty()) c.bad("{}: table: {}", what, why);
  tables[d.seq] = t;
  const bool prelu = d.kind == LayerKind::kBinary && c.w[0] < binaryOpNames().size() && binaryOpNames()[c.w[0]] == "PRelu";
  const size_t want_in = d.kind == LayerKind::kQuantize ? 0 : d.kind == LayerKind::kBinary && !prelu ? 2 : concat ? d.n_in - 1 : 1;
  if (t.in_slots.size() != want_in) c.bad("{}: table: {} input slots, this layer reads {}", what, t.in_slots.size(), want_in);
  const uint32_t S = c.p.pow2 ? c.p.pow2->slots : 0;
  for (int32_t sl : t.in_slots)
    if (static_cast<uint32_t>(sl) >= S) c.bad("{}: table: input slot {} is not below the package's {} slots", what, sl, S);
  const bool writes = d.kind != LayerKind::kDequantize;
  if (writes ? (t.out.slot < 0 || static_cast<uint32_t>(t.out.slot) >= S) : t.out.slot != -1)
    c.bad("{}: table: output slot {} ({})", what, t.out.slot, writes ? fmt::format("must be below {}", S) : "a dequantize writes none: -1");
  const TensorRef &x = c.x, &y = c.y;
  if (writes && y.type != (t.out.is_signed ? ElemType::kI8 : ElemType::kU8))
    c.bad("{}: y is {}, the table says {}", what, elemName(y.type), t.out.is_signed ? "int8" : "uint8");
  if (!writes && y.type != ElemType::kF32) c.bad("{}: y is {}, a dequantize writes float32", what, elemName(y.type));
  if (d.kind == LayerKind::kQuantize ? x.type != ElemType::kF32 : !isCodes(x.type)) c.bad("{}: x is {}", what, elemName(x.type));
  if ((d.kind == LayerKind::kQuantize || d.kind == LayerKind::kDequantize || d.kind == LayerKind::kBinary ||
       d.kind == LayerKind::kSoftmax) && dimsOf(x) != dimsOf(y))
    c.bad("{}: {} -> {} changes the shape", what, dimsStr(x), dimsStr(y));
  if (t.out.act != kernels::pow2::Act::kNone && !(product || d.kind == LayerKind::kBinary)) c.bad("{}: table: this layer has no activation", what);
}

/// An addition, maximum or product of two code tensors of one shape (only an addition fuses a Relu), or a PRelu of
/// codes by int16 slope codes (one, or one per channel: [1, C, 1, ...]) at 2^-qw, qw in [0, kMaxQ].
void checkBinary(const LayerCheck& c, const kernels::pow2::Table& t) {
  const uint32_t op = c.w[0];
  const std::string_view name = op < binaryOpNames().size() ? std::string_view(binaryOpNames()[op]) : std::string_view();
  if (name != "Add" && name != "Max" && name != "Mul" && name != "PRelu")
    c.bad("{}: the int8-pow2 form is an addition, a maximum, a product or a PRelu", c.what);
  if (name != "Add" && t.out.act != kernels::pow2::Act::kNone) c.bad("{}: table: an int8-pow2 {} has no activation", c.what, name);
  if (name == "PRelu") {
    const TensorRef& s = c.d.in(1);
    bool ok = s.type == ElemType::kI16 && s.rank == c.x.rank && c.x.rank >= 2 && t.qw >= 0 && t.qw <= kernels::pow2::kMaxQ;
    for (int k = 0; ok && k < s.rank; ++k) ok = s.dims[k] == 1 || (k == 1 && s.dims[k] == c.x.dims[1]);
    if (!ok) c.bad("{}: PRelu slopes {} {} at 2^-{}: int16 [1, C or 1, 1, ...] against x {}, q in [0, {}]", c.what,
                   elemName(s.type), dimsStr(s), t.qw, dimsStr(c.x), kernels::pow2::kMaxQ);
    c.weightRef(s, c.what + ": slopes");
    return;
  }
  if (!isCodes(c.d.in(1).type) || dimsOf(c.d.in(1)) != dimsOf(c.x)) c.bad("{}: b must be codes of a's shape", c.what);
}

/// A softmax of codes (kind 0, an axis of x) into unsigned codes at the fixed 2^-8 (kernels::pow2::kSoftmaxQ).
void checkSoftmax(const LayerCheck& c, const kernels::pow2::Table& t) {
  if (c.w[0] != 0 || c.w[1] >= c.x.rank) c.bad("{}: the int8-pow2 softmax is kind 0 over an axis of x, got kind {} axis {}", c.what, c.w[0], c.w[1]);
  if (t.out.is_signed || t.out.fixed_q != kernels::pow2::kSoftmaxQ)
    c.bad("{}: table: the int8-pow2 softmax writes unsigned codes at the fixed q {}, got {} q {}", c.what,
          kernels::pow2::kSoftmaxQ, t.out.is_signed ? "signed" : "unsigned", t.out.fixed_q);
}

/// Codes of any q and signedness joined along the axis (parameter word 0).
void checkConcat(const LayerCheck& c) {
  const TensorRef& y = c.y;
  const uint32_t axis = c.w[0];
  if (axis >= y.rank) c.bad("{}: axis {} out of range for rank {}", c.what, axis, y.rank);
  uint64_t sum = 0;
  for (int i = 0; i + 1 < c.d.n_in; ++i) {
    const TensorRef& r = c.d.in(i);
    if (!isCodes(r.type) || r.rank != y.rank) c.bad("{}: input {} is {} {}, output {}", c.what, i, elemName(r.type), dimsStr(r), dimsStr(y));
    for (int k = 0; k < r.rank; ++k)
      if (static_cast<uint32_t>(k) != axis && r.dims[static_cast<size_t>(k)] != y.dims[static_cast<size_t>(k)])
        c.bad("{}: input {} {} does not match output {} off the axis", c.what, i, dimsStr(r), dimsStr(y));
    sum += r.dims[axis];
  }
  if (sum != y.dims[axis]) c.bad("{}: inputs sum to {} along axis {}, output has {}", c.what, sum, axis, y.dims[axis]);
}

/// A convolution or Gemm: int16 weight codes, int32 bias, sums within the device's 40-bit accumulator. Returns whether
/// the descriptor is checked (a convolution's geometry is its float form's).
bool checkProduct(const LayerCheck& c) {
  const TensorRef &x = c.x, &y = c.y, &wt = c.d.in(1), &b = c.d.in(2);
  if (wt.type != ElemType::kI16) c.bad("{}: int8-pow2 weights are int16 codes, got {}", c.what, elemName(wt.type));
  c.weightRef(wt, c.what + ": weights");
  c.weightRef(b, c.what + ": bias");
  const bool tr = c.d.kind == LayerKind::kConvTranspose;  // (w [C, M/g, kh, kw]: y's channels are M)
  const uint32_t M = tr ? y.dims[1] : wt.dims[0];
  if (b.type != ElemType::kI32 || b.rank != 1 || b.dims[0] != M) c.bad("{}: bias must be int32 [{}], got {} {}", c.what, M, elemName(b.type), dimsStr(b));
  uint64_t K = 1;  // terms per output: a convolution's C/g taps of its window; a transposed one's at most C/g windows
  for (int i = tr ? 2 : 1; i < wt.rank; ++i) K *= wt.dims[static_cast<size_t>(i)];
  if (tr) K *= c.w[0] >= 1 ? wt.dims[0] / c.w[0] : wt.dims[0];  // (the group is checked with the geometry)
  // The device's 40-bit accumulator: 8-bit codes times 12-bit weights (the widest numParamBits), K terms.
  if (static_cast<double>(K) * 255.0 * 2047.0 >= 0x1p39) c.bad("{}: {} terms per output could exceed a 40-bit accumulator", c.what, K);
  if (c.d.kind == LayerKind::kConv || tr) {
    if (x.rank != 4 || wt.rank != 4 || y.rank != 4) c.bad("{}: x, w and y must be 4-D", c.what);
    return false;  // the geometry is the float form's (checked next, with int8-pow2 types)
  }
  if (x.rank != 2 || wt.rank != 2 || y.rank != 2 || wt.dims[1] != x.dims[1] || y.dims[0] != x.dims[0] || y.dims[1] != M)
    c.bad("{}: {} x {}^T -> {} is inconsistent", c.what, dimsStr(x), dimsStr(wt), dimsStr(y));
  return true;
}

}  // namespace

bool checkPow2Form(const LayerCheck& c, std::map<uint32_t, kernels::pow2::Table>& tables) {
  const Descriptor& d = c.d;
  if (pow2Form(c.p.numerics, d) == Pow2Form::kNone) return false;
  if (d.act != Act::kNone || d.act_a || d.act_b) c.bad("{}: int8-pow2 layers have no descriptor activation (it is in their table)", c.what);
  if (d.kind == LayerKind::kMaxPool || d.kind == LayerKind::kGlobalMaxPool) {  // codes of one q, no table: the input's slot
    if (c.y.type != c.x.type) c.bad("{}: max pooling keeps the codes' type ({} -> {})", c.what, elemName(c.x.type), elemName(c.y.type));
    return false;  // the geometry is the float form's
  }
  checkTable(c, tables);
  switch (d.kind) {
    case LayerKind::kBinary: checkBinary(c, tables.at(d.seq)); return true;
    case LayerKind::kConcat: checkConcat(c); return true;
    case LayerKind::kSoftmax: checkSoftmax(c, tables.at(d.seq)); return true;
    case LayerKind::kConv:
    case LayerKind::kConvTranspose:
    case LayerKind::kGemm: return checkProduct(c);
    case LayerKind::kResize:
      if (c.x.rank > 4) c.bad("{}: the int8-pow2 resize takes rank 4 at most, got {}", c.what, c.x.rank);
      return false;  // the specification is the float form's
    case LayerKind::kAvgPool:
    case LayerKind::kGlobalAvgPool: return false;  // the geometry is the float form's
    default: return true;                          // quantize, dequantize: the table is the form
  }
}

}  // namespace npuc::package
