// The importer's values: each TensorFlow tensor's IR value in either layout (conversions made once), constants,
// nodes with their types inferred as they are added, attributes read with TensorFlow's defaults, TensorProto decoded.
#include "frontend/tf/importer.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace npuc::tf_io {

Val& Importer::in(const tf::NodeDef& n, int i) {
  const auto& ins = ins_.at(static_cast<size_t>(cur_));
  if (i < 0 || static_cast<size_t>(i) >= ins.size())
    fail(ErrorCode::kInvalidInput, "has {} data input(s); input {} is missing", ins.size(), i);
  auto [node, k] = ins[static_cast<size_t>(i)];
  auto it = vals_.find({node, k});
  if (it == vals_.end()) {
    const tf::NodeDef& m = gd_.node(node);
    fail(ErrorCode::kInvalidInput, "input {} '{}' reads output {} of node '{}' ({}), which it does not have", i,
         n.input(i), k, m.name(), m.op());
  }
  return *it->second;
}

void Importer::alias(const tf::NodeDef& n, int i) {
  in(n, i);  // (checks it)
  vals_[{cur_, 0}] = vals_.at(ins_.at(static_cast<size_t>(cur_))[static_cast<size_t>(i)]);
}

void Importer::expectInputs(const tf::NodeDef& n, int lo, int hi) const {
  int have = static_cast<int>(ins_.at(static_cast<size_t>(cur_)).size());
  (void)n;
  if (have < lo || have > hi)
    fail(ErrorCode::kInvalidInput, "has {} data input(s); this op takes {}", have,
         lo == hi ? std::to_string(lo) : hi == INT32_MAX ? fmt::format("{} or more", lo) : fmt::format("{} to {}", lo, hi));
}

const Shape& Importer::irShape(ir::ValueId v) const {
  const ir::Value& val = g_->value(v);
  if (!val.type.isStatic()) fail(ErrorCode::kInternal, "the shape of '{}' is not known", val.name);
  return val.type.shape;
}

ir::Node& Importer::node(const std::string& op, std::vector<ir::ValueId> ins, std::vector<ir::ValueId> outs,
                         std::map<std::string, ir::Attr> attrs, const std::string& suffix) {
  return cl_->node(op, gd_.node(cur_).name() + suffix, std::move(ins), std::move(outs), std::move(attrs));
}

ir::ValueId Importer::emit(const std::string& op, std::vector<ir::ValueId> ins, std::map<std::string, ir::Attr> attrs,
                           const std::string& suffix) {
  ir::ValueId y = g_->addValue(g_->uniqueValueName(gd_.node(cur_).name() + suffix)).id;
  node(op, std::move(ins), {y}, std::move(attrs), suffix);
  return y;
}

ir::ValueId Importer::constant(const std::string& what, Tensor t) {
  return g_->addConstant(g_->uniqueValueName(gd_.node(cur_).name() + "/" + what), std::move(t)).id;
}

ir::ValueId Importer::ints(const std::string& what, const std::vector<int64_t>& v) {
  return constant(what, Tensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

namespace {

/// A host integer tensor as the IR constant of its TensorFlow type.
Tensor irConstant(const Tensor& t, DType dtype) {
  if (t.dtype() != DType::kI64 || dtype == DType::kI64) return t;
  if (dtype != DType::kI32) return t;
  std::vector<int32_t> v;
  for (int64_t x : t.values<int64_t>()) v.push_back(static_cast<int32_t>(x));
  return Tensor::fromVector<int32_t>(t.shape(), v);
}

}  // namespace

ir::ValueId Importer::transposed(Val& x, const std::vector<int64_t>& perm, const std::string& what) {
  if (x.host) return constant(what, permuted(irConstant(*x.host, x.dtype), perm));
  return emit("Transpose", {asTf(x)}, {{"perm", perm}}, "/" + what);
}

ir::ValueId Importer::permute(ir::ValueId v, const Shape& from, const std::vector<int64_t>& perm, const std::string& what) {
  Shape to(perm.size());
  std::vector<int64_t> moved;  // the axes of size > 1, in their new order
  for (size_t i = 0; i < perm.size(); ++i) {
    to[i] = from[static_cast<size_t>(perm[i])];
    if (to[i] != 1) moved.push_back(perm[i]);
  }
  if (std::is_sorted(moved.begin(), moved.end())) return emit("Reshape", {v, ints("shape", to)}, {}, what);
  return emit("Transpose", {v}, {{"perm", perm}}, what);
}

ir::ValueId Importer::asTf(Val& x) {
  if (!x.host) return cl_->framework(x.key);
  if (x.tf_const == ir::kNoValue) x.tf_const = constant("const", irConstant(*x.host, x.dtype));
  return x.tf_const;
}

ir::ValueId Importer::asCf(Val& x) {
  if (x.shape.size() != 4)
    fail(ErrorCode::kInternal, "a tensor of shape {} taken channels-first", shapeStr(x.shape));
  if (!x.host) return cl_->channelsFirst(x.key);
  if (x.cf_const == ir::kNoValue)  // weights permuted here
    x.cf_const = constant("const_nchw", permuted(irConstant(*x.host, x.dtype), {kCfToTf.begin(), kCfToTf.end()}));
  return x.cf_const;
}

ir::ValueId Importer::alignCf(Val& x) {
  if (x.shape.size() == 4) return asCf(x);
  if (x.shape.size() > 4) fail(ErrorCode::kUnsupported, "an operand of shape {} broadcast against a 4-D tensor", shapeStr(x.shape));
  if (product(x.shape) == 1 || x.shape.empty()) return asTf(x);  // a single value broadcasts either way
  if (!x.host) return cl_->alignedTo(x.key, 4);
  if (x.cf_const == ir::kNoValue) {  // a constant raised to rank 4 and permuted here
    Shape s4(4 - x.shape.size(), 1);
    s4.insert(s4.end(), x.shape.begin(), x.shape.end());
    x.cf_const = constant("const_nchw", permuted(irConstant(*x.host, x.dtype).reshaped(s4), {kCfToTf.begin(), kCfToTf.end()}));
  }
  return x.cf_const;
}

void Importer::setOut(int k, ir::ValueId v, bool cf, DType dtype) {
  Val x;
  x.dtype = dtype;
  x.key = tensorName(gd_.node(cur_).name(), k);
  cl_->bind(x.key, v, cf && irShape(v).size() == 4 ? channel_last::Form::kChannelsFirst : channel_last::Form::kFramework);
  x.shape = cl_->shape(x.key);
  if (product(x.shape) > kMaxElements) fail(ErrorCode::kInvalidInput, "output {} would have the shape {}: too large", k, shapeStr(x.shape));
  vals_[{cur_, k}] = std::make_shared<Val>(std::move(x));
}

void Importer::setHost(int k, Tensor t, DType dtype) {
  Val x;
  x.dtype = dtype;
  x.shape = t.shape();
  x.host = std::move(t);
  vals_[{cur_, k}] = std::make_shared<Val>(std::move(x));
}

void Importer::setOutAxes(int k, ir::ValueId v, const std::vector<int64_t>& tf_axes, DType dtype) {
  if (tf_axes.size() == 4 && std::equal(tf_axes.begin(), tf_axes.end(), kCfToTf.begin())) return setOut(k, v, true, dtype);
  if (std::is_sorted(tf_axes.begin(), tf_axes.end())) return setOut(k, v, false, dtype);
  // IR axis i holds TensorFlow axis tf_axes[i]: out axis j takes the IR axis holding the j-th smallest.
  std::vector<int64_t> perm(tf_axes.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return tf_axes[static_cast<size_t>(a)] < tf_axes[static_cast<size_t>(b)]; });
  setOut(k, permute(v, irShape(v), perm, "/order"), false, dtype);
}

// --- attributes ---

const tf::AttrValue* Importer::attr(const tf::NodeDef& n, const std::string& name) const {
  auto it = n.attr().find(name);
  return it == n.attr().end() ? nullptr : &it->second;
}

namespace {
[[noreturn]] void missing(const std::string& name, const char* kind) {
  fail(ErrorCode::kInvalidInput, "attr '{}' ({}) is missing, and the op has no default for it", name, kind);
}
[[noreturn]] void wrongKind(const std::string& name, const char* kind) {
  fail(ErrorCode::kInvalidInput, "attr '{}' is not a {}", name, kind);
}
}  // namespace

int64_t Importer::attrInt(const tf::NodeDef& n, const std::string& name, std::optional<int64_t> def) const {
  const tf::AttrValue* a = attr(n, name);
  if (!a) return def ? *def : (missing(name, "int"), 0);
  if (a->value_case() != tf::AttrValue::kI) wrongKind(name, "int");
  return a->i();
}
float Importer::attrFloat(const tf::NodeDef& n, const std::string& name, std::optional<float> def) const {
  const tf::AttrValue* a = attr(n, name);
  if (!a) return def ? *def : (missing(name, "float"), 0.0f);
  if (a->value_case() != tf::AttrValue::kF) wrongKind(name, "float");
  return a->f();
}
bool Importer::attrBool(const tf::NodeDef& n, const std::string& name, std::optional<bool> def) const {
  const tf::AttrValue* a = attr(n, name);
  if (!a) return def ? *def : (missing(name, "bool"), false);
  if (a->value_case() != tf::AttrValue::kB) wrongKind(name, "bool");
  return a->b();
}
std::string Importer::attrStr(const tf::NodeDef& n, const std::string& name, std::optional<std::string> def) const {
  const tf::AttrValue* a = attr(n, name);
  if (!a) return def ? *def : (missing(name, "string"), std::string());
  if (a->value_case() != tf::AttrValue::kS) wrongKind(name, "string");
  return a->s();
}
std::vector<std::string> Importer::attrStrs(const tf::NodeDef& n, const std::string& name) const {
  const tf::AttrValue* a = attr(n, name);
  if (!a) return {};
  if (a->value_case() != tf::AttrValue::kList) wrongKind(name, "list(string)");
  return {a->list().s().begin(), a->list().s().end()};
}
std::vector<int64_t> Importer::attrInts(const tf::NodeDef& n, const std::string& name, std::optional<std::vector<int64_t>> def) const {
  const tf::AttrValue* a = attr(n, name);
  if (!a) return def ? *def : (missing(name, "list(int)"), std::vector<int64_t>());
  if (a->value_case() != tf::AttrValue::kList) wrongKind(name, "list(int)");
  return {a->list().i().begin(), a->list().i().end()};
}
tf::DataType Importer::attrType(const tf::NodeDef& n, const std::string& name, std::optional<tf::DataType> def) const {
  const tf::AttrValue* a = attr(n, name);
  if (!a) return def ? *def : (missing(name, "type"), tf::DT_INVALID);
  if (a->value_case() != tf::AttrValue::kType) wrongKind(name, "type");
  return a->type();
}

bool Importer::channelLast(const tf::NodeDef& n) const {
  std::string f = attrStr(n, "data_format", std::string("NHWC"));
  if (f == "NHWC") return true;
  if (f == "NCHW") return false;
  fail(ErrorCode::kUnsupported, "attr 'data_format' is '{}'; npuc reads NHWC and NCHW", f);
}

const Tensor& Importer::hostInput(const tf::NodeDef& n, int i, const char* what) {
  Val& x = in(n, i);
  if (!x.host)
    fail(ErrorCode::kUnsupported, "input {} ({}, '{}') is computed from the graph's inputs at run time; npuc imports "
                                  "graphs whose {} is a constant (or follows from static shapes)", i, what, n.input(i), what);
  return *x.host;
}

std::vector<int64_t> Importer::hostInts(const tf::NodeDef& n, int i, const char* what) {
  const Tensor& t = hostInput(n, i, what);
  if (t.dtype() != DType::kI64) fail(ErrorCode::kInvalidInput, "input {} ({}) holds {} values, not integers", i, what, dtypeName(t.dtype()));
  return {t.values<int64_t>().begin(), t.values<int64_t>().end()};
}

int64_t Importer::axisOf(int64_t a, size_t rank, const char* field) {
  int64_t r = static_cast<int64_t>(rank);
  if (a < -r || a >= r) fail(ErrorCode::kInvalidInput, "{} {} is out of range for a tensor of {} axes", field, a, r);
  return a < 0 ? a + r : a;
}

Shape Importer::shapeOf(const tf::TensorShapeProto& s, bool* unknown_rank) {
  *unknown_rank = s.unknown_rank();
  Shape out;
  for (const auto& d : s.dim()) {
    if (d.size() < -1 || d.size() > kMaxDim) fail(ErrorCode::kInvalidInput, "dimension {} is not a size", d.size());
    out.push_back(d.size());
  }
  return out;
}

Tensor Importer::decodeTensor(const tf::TensorProto& p, DType* dtype, const std::string& field) {
  bool unknown = false;
  Shape s = shapeOf(p.tensor_shape(), &unknown);
  for (int64_t d : s)
    if (d < 0 || unknown) fail(ErrorCode::kInvalidInput, "{}: a constant of shape {} (sizes must be known)", field, shapeStr(s));
  const int64_t count = product(s);
  if (count > kMaxElements) fail(ErrorCode::kInvalidInput, "{}: shape {} is too large", field, shapeStr(s));
  const std::string& raw = p.tensor_content();
  auto fill = [&](auto&& vals, const char* list, auto convert) {
    using T = decltype(convert(vals[0]));
    std::vector<T> out(static_cast<size_t>(count));
    const int64_t have = vals.size();
    if (have > count) fail(ErrorCode::kInvalidInput, "{}: {} holds {} values for shape {} ({})", field, list, have, shapeStr(s), count);
    if (have < count && count > kMaxHostElements)
      fail(ErrorCode::kUnsupported, "{}: {} value(s) filling shape {}: more than the {} elements npuc fills from a short "
                                    "list", field, have, shapeStr(s), kMaxHostElements);
    for (int64_t i = 0; i < count; ++i)  // a shorter list is filled with its last value (TensorFlow's rule)
      out[static_cast<size_t>(i)] = have == 0 ? T{} : convert(vals[static_cast<int>(std::min(i, have - 1))]);
    return Tensor::fromVector<T>(s, out);
  };
  auto fromRaw = [&](size_t es, auto convert) {
    using T = decltype(convert(static_cast<const uint8_t*>(nullptr)));
    if (raw.size() != static_cast<size_t>(count) * es)
      fail(ErrorCode::kInvalidInput, "{}: tensor_content has {} bytes; shape {} of {}-byte values needs {}", field,
           raw.size(), shapeStr(s), es, static_cast<size_t>(count) * es);
    std::vector<T> out(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = convert(reinterpret_cast<const uint8_t*>(raw.data()) + i * static_cast<int64_t>(es));
    return Tensor::fromVector<T>(s, out);
  };
  auto load = [](const uint8_t* b, auto v) { std::memcpy(&v, b, sizeof v); return v; };
  switch (p.dtype()) {
    case tf::DT_FLOAT:
      *dtype = DType::kF32;
      if (!raw.empty()) return fromRaw(4, [&](const uint8_t* b) { return load(b, 0.0f); });
      return fill(p.float_val(), "float_val", [](float v) { return v; });
    case tf::DT_HALF:
      *dtype = DType::kF32;  // float16 weights are widened
      if (!raw.empty()) return fromRaw(2, [&](const uint8_t* b) { return halfToFloat(load(b, uint16_t{0})); });
      return fill(p.half_val(), "half_val", [](int32_t v) { return halfToFloat(static_cast<uint16_t>(v)); });
    case tf::DT_INT32:
    case tf::DT_INT16:
    case tf::DT_INT8:
    case tf::DT_UINT8:
      *dtype = p.dtype() == tf::DT_INT32 ? DType::kI32 : DType::kI64;
      if (!raw.empty()) {
        if (p.dtype() == tf::DT_INT32) return fromRaw(4, [&](const uint8_t* b) { return int64_t{load(b, int32_t{0})}; });
        if (p.dtype() == tf::DT_INT16) return fromRaw(2, [&](const uint8_t* b) { return int64_t{load(b, int16_t{0})}; });
        if (p.dtype() == tf::DT_INT8) return fromRaw(1, [&](const uint8_t* b) { return int64_t{static_cast<int8_t>(*b)}; });
        return fromRaw(1, [&](const uint8_t* b) { return int64_t{*b}; });
      }
      return fill(p.int_val(), "int_val", [](int32_t v) { return int64_t{v}; });
    case tf::DT_INT64:
      *dtype = DType::kI64;
      if (!raw.empty()) return fromRaw(8, [&](const uint8_t* b) { return load(b, int64_t{0}); });
      return fill(p.int64_val(), "int64_val", [](int64_t v) { return v; });
    default:
      fail(ErrorCode::kUnsupported, "{}: a constant of type {} ({}); npuc reads float, half and integer constants",
           field, tf::DataType_Name(p.dtype()), static_cast<int>(p.dtype()));
  }
}

}  // namespace npuc::tf_io
