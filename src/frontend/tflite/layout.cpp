// The tensors' IR values and their forms. TFLite is channel-last; npuc's IR and kernels are channels-first. A rank-4
// activation is kept channels-first from the operator that writes it (convolutions, pooling, resizing) through every
// operator that can read it so (elementwise, concatenation, padding, reductions, slicing: their axes and constant
// operands are mapped), and converted back only where an operator needs the framework's order (a reshape, a fully
// connected layer, a transpose) and at the graph's outputs: one conversion per tensor, made once — the forms are held
// by channel_last::Builder (shared with the TensorFlow importer), keyed by each tensor's unique name (key()). Also the
// constants (quantized ones behind a DequantizeLinear) and the quantization of operator outputs.
#include "frontend/tflite/importer.hpp"

#include "support/error.hpp"
#include "support/fp16.hpp"

#include <algorithm>
#include <cstring>

namespace npuc::tflite_io {

std::string Importer::baseName(int32_t t) const {
  const fb::Tensor& ten = tensor(t);
  return ten.name() && ten.name()->size() ? ten.name()->str() : fmt::format("tensor{}", t);
}

std::string Importer::valueName(int32_t t, const std::string& suffix) {
  return g_->uniqueValueName(baseName(t) + suffix);
}

const std::string& Importer::key(int32_t t) {
  auto it = keys_.find(t);
  if (it != keys_.end()) return it->second;
  const fb::Tensor& ten = tensor(t);
  std::string k = ten.name() && ten.name()->size() ? ten.name()->str() : "";
  if (k.empty() || used_keys_.count(k)) k += fmt::format("#{}", t);
  used_keys_.insert(k);
  return keys_[t] = k;
}

bool Importer::isChannelsFirst(int32_t t) const {
  auto it = keys_.find(t);
  return it != keys_.end() && cl_->bound(it->second) && cl_->form(it->second) == channel_last::Form::kChannelsFirst;
}

const Shape& Importer::shapeOf(ir::ValueId v) const {
  const ir::Value& val = g_->value(v);
  if (!val.type.isStatic()) fail(ErrorCode::kInternal, "the shape of '{}' is not known", val.name);
  return val.type.shape;
}

ir::ValueId Importer::get(int32_t t, bool cf) {
  const std::string& k = key(t);
  if (!cl_->bound(k)) {
    if (!isConstant(t)) fail(ErrorCode::kInvalidInput, "{} has no value yet", tensorLabel(t));
    cl_->bind(k, constantValue(t), channel_last::Form::kFramework);
  }
  if (cf && cl_->rank(k) != 4) fail(ErrorCode::kInternal, "{}: a channels-first form of a rank-{} tensor", tensorLabel(t), cl_->rank(k));
  return cf ? cl_->channelsFirst(k) : cl_->framework(k);
}

ir::ValueId Importer::constantValue(int32_t t, const std::vector<int64_t>& perm, size_t rank) {
  Tensor data = constantData(t);
  auto q = quantOf(t);
  if (q && q->from_uint8) {  // int8 codes: code - 128 (the zero point moved with them)
    Tensor i8(DType::kI8, data.shape());
    for (int64_t i = 0; i < data.numel(); ++i) i8.data<int8_t>()[i] = static_cast<int8_t>(int{data.data<uint8_t>()[i]} - 128);
    data = i8;
  }
  int64_t axis = q ? q->axis : 0;
  if (rank > data.shape().size()) {
    Shape s(rank - data.shape().size(), 1);
    axis += static_cast<int64_t>(s.size());
    s.insert(s.end(), data.shape().begin(), data.shape().end());
    Tensor r(data.dtype(), s);
    if (data.nbytes()) std::memcpy(r.raw(), data.raw(), data.nbytes());
    data = r;
  }
  if (!perm.empty()) {
    if (perm.size() != data.shape().size())
      fail(ErrorCode::kInvalidInput, "{} has shape {}; rank {} is expected", tensorLabel(t), shapeStr(data.shape()), perm.size());
    data = permuted(data, perm);
    axis = std::find(perm.begin(), perm.end(), axis) - perm.begin();
  }
  const std::string name = valueName(t, "");
  if (data.dtype() == DType::kF16) {
    Tensor f(DType::kF32, data.shape());
    const auto* h = static_cast<const uint16_t*>(data.raw());
    for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = halfToFloat(h[i]);
    return g_->addConstant(name, f).id;
  }
  if (!q) return g_->addConstant(name, data).id;
  // A quantized constant stays integer: DequantizeLinear with its own scale(s) and zero point(s).
  ir::ValueId raw = g_->addConstant(g_->uniqueValueName(name + "/quantized"), data).id;
  const int64_t n = static_cast<int64_t>(q->scale.size());
  Tensor zp(data.dtype(), q->perChannel() ? Shape{n} : Shape{});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t z = q->zero_point[static_cast<size_t>(i)];
    switch (data.dtype()) {
      case DType::kI8: zp.data<int8_t>()[i] = static_cast<int8_t>(z); break;
      case DType::kI32: zp.data<int32_t>()[i] = static_cast<int32_t>(z); break;
      default: fail(ErrorCode::kUnsupported, "{}: a quantized constant of {}; npuc reads int8, uint8 and int32 ones",
                    tensorLabel(t), dtypeName(data.dtype()));
    }
  }
  Tensor sc = q->perChannel() ? Tensor::fromVector<float>({n}, q->scale) : Tensor::scalar<float>(q->scale[0]);
  ir::ValueId v = g_->addValue(name).id;
  std::map<std::string, ir::Attr> attrs;
  if (q->perChannel()) attrs["axis"] = axis;
  ir::Node& dq = g_->addNode("DequantizeLinear", name + "/dequantize",
                             {raw, constant(name + "/scale", sc), constant(name + "/zero_point", zp)}, {v});
  dq.attrs = std::move(attrs);
  ops::inferNodeTypes(*g_, dq.id);
  return v;
}

void Importer::checkShape(int32_t t, const Shape& fw) const {
  if (shapes_overridden_) return;  // --input-shape changes what the file declares downstream
  const Shape declared = declaredShape(t);
  if (declared.empty() && !fw.empty()) return;  // some converters leave intermediate shapes out
  if (declared != fw)
    fail(ErrorCode::kInvalidInput, "{}: the model declares shape {}; the operator computes {} from its inputs",
         tensorLabel(t), shapeStr(declared), shapeStr(fw));
}

void Importer::bindOutput(int i, ir::ValueId v, bool cf) {
  const int32_t t = output(i);
  const Shape& s = shapeOf(v);
  if (cf && s.size() != 4) fail(ErrorCode::kInternal, "a channels-first value of rank {}", s.size());
  checkShape(t, cf ? permuted(s, kToChannelsLast) : s);
  const DType dt = dtypeOf(t);
  if (auto q = quantOf(t)) {
    // TFLite computes the operator on integers and writes codes with the output's own parameters: the float result
    // quantized and dequantized again with those parameters.
    if (q->perChannel()) fail(ErrorCode::kUnsupported, "{}: an activation quantized per channel", tensorLabel(t));
    if (dt != DType::kI8 && dt != DType::kU8)
      fail(ErrorCode::kUnsupported, "{}: a quantized activation of {}; npuc reads int8 and uint8 ones", tensorLabel(t), dtypeName(dt));
    const std::string name = valueName(t, "");
    Tensor zp = Tensor::scalar<int8_t>(static_cast<int8_t>(q->zero_point[0]));
    ir::ValueId sc = constant(name + "/scale", Tensor::scalar<float>(q->scale[0])), z = constant(name + "/zero_point", zp);
    ir::ValueId qv = apply("QuantizeLinear", {v, sc, z}, {}, "/quantize");
    v = apply("DequantizeLinear", {qv, sc, z}, {}, "/dequantize");
    quantized_out_[t] = qv;
  } else if (isFloat(dt) && g_->value(v).type.dtype != DType::kF32) {
    fail(ErrorCode::kInternal, "{}: computed as {}", tensorLabel(t), dtypeName(g_->value(v).type.dtype));
  }
  const std::string want = valueName(t, cf ? "/nchw" : "");
  if (g_->value(v).producer != ir::kNoNode && !g_->value(v).constant) g_->renameValue(v, want);
  cl_->bind(key(t), v, cf ? channel_last::Form::kChannelsFirst : channel_last::Form::kFramework);
}

ir::ValueId Importer::temp(const std::string& what) {
  return g_->addValue(g_->uniqueValueName(fmt::format("op{}/{}", op_.index, what))).id;
}

ir::ValueId Importer::constant(const std::string& what, Tensor t) {
  return g_->addConstant(g_->uniqueValueName(what), std::move(t)).id;
}

ir::ValueId Importer::ints(const std::string& what, const std::vector<int64_t>& v) {
  return constant(what, Tensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

ir::ValueId Importer::scalarF(const std::string& what, float v) {
  return constant(fmt::format("op{}/{}", op_.index, what), Tensor::scalar<float>(v));
}

ir::Node& Importer::node(const std::string& op, std::vector<ir::ValueId> ins, std::vector<ir::ValueId> outs,
                         std::map<std::string, ir::Attr> attrs, const std::string& suffix) {
  std::string base = fmt::format("op{}_{}", op_.index, op_.name);
  if (!op_.outputs.empty() && op_.outputs[0] >= 0) {
    const fb::Tensor& t = tensor(op_.outputs[0]);
    if (t.name() && t.name()->size()) base = t.name()->str();
  }
  return cl_->node(op, base + suffix, std::move(ins), std::move(outs), std::move(attrs));
}

ir::ValueId Importer::apply(const std::string& op, std::vector<ir::ValueId> ins, std::map<std::string, ir::Attr> attrs,
                            const std::string& suffix) {
  ir::ValueId out = temp(op);
  node(op, std::move(ins), {out}, std::move(attrs), suffix);
  return out;
}

ir::ValueId Importer::reshape(ir::ValueId v, const Shape& to) {
  if (shapeOf(v) == to) return v;
  return apply("Reshape", {v, ints(fmt::format("op{}/shape", op_.index), to)}, {}, "/reshape");
}

ir::ValueId Importer::activation(ir::ValueId v, fb::ActivationFunctionType act) {
  switch (act) {
    case fb::ActivationFunctionType_NONE: return v;
    case fb::ActivationFunctionType_RELU: return apply("Relu", {v}, {}, "/relu");
    case fb::ActivationFunctionType_RELU_N1_TO_1:
      return apply("Clip", {v, scalarF("min", -1.0f), scalarF("max", 1.0f)}, {}, "/relu_n1_to_1");
    case fb::ActivationFunctionType_RELU6:
      return apply("Clip", {v, scalarF("min", 0.0f), scalarF("max", 6.0f)}, {}, "/relu6");
    case fb::ActivationFunctionType_TANH: return apply("Tanh", {v}, {}, "/tanh");
    default:
      fail(ErrorCode::kUnsupported, "fused_activation_function {} is not imported (NONE, RELU, RELU_N1_TO_1, RELU6, "
                                    "TANH are)", static_cast<int>(act));
  }
}

}  // namespace npuc::tflite_io
