// TFLite file -> ir::Graph: the bytes verified (FlatBuffers' Verifier over npuc's schema), subgraph 0's interface and
// tensors read with every index checked, then each operator mapped in order (ops_*.cpp).
#include "frontend/tflite/importer.hpp"

#include "support/error.hpp"
#include "support/file.hpp"
#include "support/fp16.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace npuc::tflite_io {

namespace {

/// A .tflite file larger than this is not one FlatBuffers can address (2 GiB; larger models keep buffers outside).
constexpr uint64_t kMaxFileBytes = (uint64_t{1} << 31) - 1;

struct Mapping {
  fb::BuiltinOperator code;
  void (Importer::*fn)();
};

/// The builtin operators the importer maps, in docs/frontends.md's order.
const std::vector<Mapping>& mappings() {
  using B = fb::BuiltinOperator;
  using I = Importer;
  static const std::vector<Mapping> kTable = {
      {B::BuiltinOperator_CONV_2D, &I::conv2d},
      {B::BuiltinOperator_DEPTHWISE_CONV_2D, &I::depthwiseConv2d},
      {B::BuiltinOperator_TRANSPOSE_CONV, &I::transposeConv},
      {B::BuiltinOperator_FULLY_CONNECTED, &I::fullyConnected},
      {B::BuiltinOperator_AVERAGE_POOL_2D, &I::pool2d},
      {B::BuiltinOperator_MAX_POOL_2D, &I::pool2d},
      {B::BuiltinOperator_RESIZE_BILINEAR, &I::resize},
      {B::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, &I::resize},
      {B::BuiltinOperator_ADD, &I::binary},
      {B::BuiltinOperator_SUB, &I::binary},
      {B::BuiltinOperator_MUL, &I::binary},
      {B::BuiltinOperator_DIV, &I::binary},
      {B::BuiltinOperator_MAXIMUM, &I::binary},
      {B::BuiltinOperator_MINIMUM, &I::binary},
      {B::BuiltinOperator_PRELU, &I::binary},
      {B::BuiltinOperator_RELU, &I::unary},
      {B::BuiltinOperator_RELU6, &I::unary},
      {B::BuiltinOperator_RELU_N1_TO_1, &I::unary},
      {B::BuiltinOperator_LEAKY_RELU, &I::unary},
      {B::BuiltinOperator_LOGISTIC, &I::unary},
      {B::BuiltinOperator_TANH, &I::unary},
      {B::BuiltinOperator_HARD_SWISH, &I::unary},
      {B::BuiltinOperator_EXP, &I::unary},
      {B::BuiltinOperator_SQRT, &I::unary},
      {B::BuiltinOperator_RSQRT, &I::unary},
      {B::BuiltinOperator_SOFTMAX, &I::softmax},
      {B::BuiltinOperator_DEQUANTIZE, &I::quantizeOps},
      {B::BuiltinOperator_QUANTIZE, &I::quantizeOps},
      {B::BuiltinOperator_DENSIFY, &I::densify},
      {B::BuiltinOperator_CONCATENATION, &I::concatenation},
      {B::BuiltinOperator_RESHAPE, &I::reshapeOp},
      {B::BuiltinOperator_SQUEEZE, &I::squeeze},
      {B::BuiltinOperator_PAD, &I::pad},
      {B::BuiltinOperator_PADV2, &I::pad},
      {B::BuiltinOperator_MEAN, &I::mean},
      {B::BuiltinOperator_SLICE, &I::slice},
      {B::BuiltinOperator_STRIDED_SLICE, &I::stridedSlice},
      {B::BuiltinOperator_SPLIT, &I::split},
      {B::BuiltinOperator_SPLIT_V, &I::split},
      {B::BuiltinOperator_TRANSPOSE, &I::transpose},
      {B::BuiltinOperator_DEPTH_TO_SPACE, &I::depthToSpace},
      {B::BuiltinOperator_SPACE_TO_DEPTH, &I::depthToSpace},
      {B::BuiltinOperator_GATHER, &I::gather},
      {B::BuiltinOperator_ARG_MAX, &I::argMax},
  };
  return kTable;
}

const fb::Model& verified(const void* data, size_t size, const std::string& name) {
  if (size < 8 || !flatbuffers::BufferHasIdentifier(data, fb::ModelIdentifier()))
    fail(ErrorCode::kInvalidInput, "{}: not a TensorFlow Lite model (a FlatBuffer whose bytes 4..7 are \"TFL3\")", name);
  if (size > kMaxFileBytes)
    fail(ErrorCode::kUnsupported, "{}: {} bytes, more than the 2 GiB a FlatBuffer can address", name, size);
  flatbuffers::Verifier v(static_cast<const uint8_t*>(data), size);
  if (!fb::VerifyModelBuffer(v))
    fail(ErrorCode::kInvalidInput, "{}: not a valid TensorFlow Lite model (the FlatBuffer verifier refuses it: an "
                                   "offset or a length points outside the file, or a table is malformed; the file is "
                                   "truncated or corrupt)", name);
  return *fb::GetModel(data);
}

}  // namespace

std::string builtinName(int32_t code) {
  const char* n = code >= 0 && code <= static_cast<int32_t>(fb::BuiltinOperator_MAX)
                      ? fb::EnumNameBuiltinOperator(static_cast<fb::BuiltinOperator>(code))
                      : "";
  return n && *n ? std::string(n) : fmt::format("BUILTIN_{}", code);
}

/// CUSTOM operators the importer maps, by their custom code (operators other converters' runtimes register).
const std::map<std::string, void (Importer::*)()>& customMappings() {
  static const std::map<std::string, void (Importer::*)()> kTable = {
      {"Convolution2DTransposeBias", &Importer::transposeConvBias},  // MediaPipe's
  };
  return kTable;
}

const std::vector<std::string>& supportedOps() {
  static const std::vector<std::string> kOps = [] {
    std::vector<std::string> r;
    for (const Mapping& m : mappings()) r.push_back(builtinName(m.code));
    for (const auto& [code, fn] : customMappings()) r.push_back(code);
    return r;
  }();
  return kOps;
}

std::vector<std::string> operatorsUsed(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = readFileBytes(path, kMaxFileBytes, "a TensorFlow Lite model (FlatBuffers' 2 GiB)");
  const fb::Model& m = verified(bytes.data(), bytes.size(), path.string());
  std::set<std::string> names;
  const auto* codes = m.operator_codes();
  if (m.subgraphs() && m.subgraphs()->size() > 0 && m.subgraphs()->Get(0)->operators() && codes)
    for (const fb::Operator* op : *m.subgraphs()->Get(0)->operators()) {
      if (op->opcode_index() >= codes->size()) continue;
      const fb::OperatorCode* c = codes->Get(op->opcode_index());
      const int32_t code = std::max<int32_t>(c->deprecated_builtin_code(), c->builtin_code());
      names.insert(code == fb::BuiltinOperator_CUSTOM && c->custom_code() ? c->custom_code()->str() : builtinName(code));
    }
  return {names.begin(), names.end()};
}

bool looksLikeTflite(const void* data, size_t size) {
  return size >= 8 && std::memcmp(static_cast<const char*>(data) + 4, "TFL3", 4) == 0;
}

// --- tensors ---

const fb::Tensor& Importer::tensor(int32_t index) const {
  const auto* ts = sg_->tensors();
  const int32_t n = ts ? static_cast<int32_t>(ts->size()) : 0;
  if (index < 0 || index >= n)
    fail(ErrorCode::kInvalidInput, "tensor index {} is out of range (subgraph 0 has {} tensors)", index, n);
  return *ts->Get(static_cast<flatbuffers::uoffset_t>(index));
}

std::string Importer::tensorLabel(int32_t index) const {
  const fb::Tensor& t = tensor(index);
  return t.name() && t.name()->size() ? fmt::format("tensor {} ('{}')", index, t.name()->str())
                                      : fmt::format("tensor {}", index);
}

Shape Importer::declaredShape(int32_t index) const {
  const fb::Tensor& t = tensor(index);
  Shape s;
  if (t.shape())
    for (int32_t d : *t.shape()) {
      if (d < 0)
        fail(ErrorCode::kInvalidInput, "{}: shape dimension {} is not a size", tensorLabel(index), d);
      s.push_back(d);
    }
  if (product(s) > kMaxElements) fail(ErrorCode::kInvalidInput, "{}: shape {} is too large", tensorLabel(index), shapeStr(s));
  return s;
}

DType Importer::dtypeOf(int32_t index) const {
  switch (tensor(index).type()) {
    case fb::TensorType_FLOAT32: return DType::kF32;
    case fb::TensorType_FLOAT16: return DType::kF16;
    case fb::TensorType_INT32: return DType::kI32;
    case fb::TensorType_UINT8: return DType::kU8;
    case fb::TensorType_INT64: return DType::kI64;
    case fb::TensorType_BOOL: return DType::kBool;
    case fb::TensorType_INT16: return DType::kI16;
    case fb::TensorType_INT8: return DType::kI8;
    default:
      fail(ErrorCode::kUnsupported, "{}: element type {} is not one npuc reads (float32, float16, int8, uint8, int16, "
                                    "int32, int64, bool)", tensorLabel(index),
           fb::EnumNameTensorType(tensor(index).type())[0] ? fb::EnumNameTensorType(tensor(index).type())
                                                           : std::to_string(int(tensor(index).type())).c_str());
  }
}

bool Importer::isConstant(int32_t index) const {
  const uint32_t b = tensor(index).buffer();
  const auto* bufs = model_.buffers();
  if (b == 0 || !bufs) return false;
  if (b >= bufs->size())
    fail(ErrorCode::kInvalidInput, "{}: buffer index {} is out of range (the model has {} buffers)", tensorLabel(index),
         b, bufs->size());
  const fb::Buffer* buf = bufs->Get(b);
  if (buf->offset() > 1)
    fail(ErrorCode::kUnsupported, "{}: buffer {} is stored outside the FlatBuffer (a model over 2 GB); npuc reads "
                                  "buffers inside the file only", tensorLabel(index), b);
  return buf->data() && buf->data()->size() > 0;
}

Tensor Importer::constantData(int32_t index) const {
  if (!isConstant(index)) fail(ErrorCode::kInvalidInput, "{} has no data (it is not a constant)", tensorLabel(index));
  if (tensor(index).sparsity()) return sparseData(index);
  const Shape s = declaredShape(index);
  const DType dt = dtypeOf(index);
  const auto* data = model_.buffers()->Get(tensor(index).buffer())->data();
  const uint64_t want = static_cast<uint64_t>(product(s)) * dtypeSize(dt);
  if (data->size() != want)
    fail(ErrorCode::kInvalidInput, "{}: buffer {} holds {} bytes; shape {} of {} needs {}", tensorLabel(index),
         tensor(index).buffer(), data->size(), shapeStr(s), dtypeName(dt), want);
  Tensor t(dt, s);
  if (want) std::memcpy(t.raw(), data->data(), want);
  return t;
}

std::vector<int64_t> Importer::constantInts(int32_t index) const {
  DType dt = dtypeOf(index);
  if (dt != DType::kI32 && dt != DType::kI64)
    fail(ErrorCode::kInvalidInput, "{} holds {}; int32 or int64 values are expected", tensorLabel(index), dtypeName(dt));
  return constantData(index).toInt64();
}

std::optional<QuantParams> Importer::quantOf(int32_t index) const {
  const fb::Tensor& t = tensor(index);
  const DType dt = dtypeOf(index);
  const fb::QuantizationParameters* q = t.quantization();
  if (dt == DType::kF32 || dt == DType::kF16 || dt == DType::kBool || !q || !q->scale() || q->scale()->size() == 0)
    return std::nullopt;
  if (q->details()) fail(ErrorCode::kUnsupported, "{}: custom quantization (details) is not read", tensorLabel(index));
  QuantParams p;
  p.scale.assign(q->scale()->begin(), q->scale()->end());
  if (q->zero_point()) p.zero_point.assign(q->zero_point()->begin(), q->zero_point()->end());
  if (p.zero_point.empty()) p.zero_point.assign(p.scale.size(), 0);
  p.axis = q->quantized_dimension();
  if (p.zero_point.size() != p.scale.size())
    fail(ErrorCode::kInvalidInput, "{}: {} scales and {} zero points (one each per channel)", tensorLabel(index),
         p.scale.size(), p.zero_point.size());
  for (float s : p.scale)
    if (!(s > 0) || !std::isfinite(s)) fail(ErrorCode::kInvalidInput, "{}: quantization scale {} is not positive", tensorLabel(index), s);
  const Shape shape = declaredShape(index);
  if (p.perChannel() && (p.axis < 0 || static_cast<size_t>(p.axis) >= shape.size() ||
                         shape[static_cast<size_t>(p.axis)] != static_cast<int64_t>(p.scale.size())))
    fail(ErrorCode::kInvalidInput, "{}: {} scales along quantized_dimension {} of shape {}", tensorLabel(index),
         p.scale.size(), p.axis, shapeStr(shape));
  for (int64_t z : p.zero_point) {
    const bool ok = dt == DType::kU8 ? z >= 0 && z <= 255 : dt == DType::kI8 ? z >= -128 && z <= 127
                                                                              : z >= INT32_MIN && z <= INT32_MAX;
    if (!ok) fail(ErrorCode::kInvalidInput, "{}: zero point {} is outside {}", tensorLabel(index), z, dtypeName(dt));
  }
  if (dt == DType::kU8) {
    for (int64_t& z : p.zero_point) z -= 128;
    p.from_uint8 = true;
  }
  return p;
}

// --- the operator ---

int32_t Importer::input(int i) const {
  if (!hasInput(i)) fail(ErrorCode::kInvalidInput, "input {} is missing", i);
  return op_.inputs[static_cast<size_t>(i)];
}

int32_t Importer::output(int i) const {
  if (i >= static_cast<int>(op_.outputs.size())) fail(ErrorCode::kInvalidInput, "output {} is missing", i);
  return op_.outputs[static_cast<size_t>(i)];
}

void Importer::expectInputs(int lo, int hi) const {
  const int n = static_cast<int>(op_.inputs.size());
  if (n < lo || n > hi)
    fail(ErrorCode::kInvalidInput, "has {} input(s); {} takes {}", n, op_.name,
         lo == hi ? std::to_string(lo) : fmt::format("{} to {}", lo, hi));
}

void Importer::expectOutputs(int n) const {
  if (static_cast<int>(op_.outputs.size()) != n)
    fail(ErrorCode::kInvalidInput, "has {} output(s); {} writes {}", op_.outputs.size(), op_.name, n);
}

int32_t Importer::weights(int i, const char* what) const {
  const int32_t t = input(i);
  if (isConstant(t)) return t;
  auto it = dequantized_.find(t);
  if (it != dequantized_.end()) return it->second;
  fail(ErrorCode::kUnsupported, "{} (input {}) is computed by the model; npuc imports constant ones (or a DEQUANTIZE of "
                                "constant ones)", what, i);
}

std::vector<int64_t> Importer::constInput(int i, const char* what) const {
  const int32_t t = input(i);
  if (!isConstant(t))
    fail(ErrorCode::kUnsupported, "input {} ({}) is computed by the model; npuc imports it as a constant only "
                                  "(static shapes)", i, what);
  return constantInts(t);
}

// --- the subgraph ---

void Importer::inputs() {
  if (!sg_->inputs() || sg_->inputs()->size() == 0) fail(ErrorCode::kInvalidInput, "subgraph 0 has no input");
  std::set<std::string> seen;
  for (int32_t t : *sg_->inputs()) {
    if (bound(t)) fail(ErrorCode::kInvalidInput, "{} is listed twice as an input", tensorLabel(t));
    if (isConstant(t)) continue;  // a constant listed as an input (some converters do): it stays a constant
    Shape s = declaredShape(t);
    for (int64_t d : s)
      if (d == 0) fail(ErrorCode::kInvalidInput, "input {} has shape {}: an empty tensor", tensorLabel(t), shapeStr(s));
    const std::string name = valueName(t, "");  // (two inputs of one name: the second is told apart)
    auto it = opts_.input_shapes.find(name);
    if (it != opts_.input_shapes.end()) {
      s = it->second;
      seen.insert(name);
      shapes_overridden_ = true;
      for (int64_t d : s)
        if (d <= 0 || d > kMaxDim) fail(ErrorCode::kInvalidInput, "input '{}': dimension {} in shape {} is not a size", name, d, shapeStr(s));
      if (product(s) > kMaxElements) fail(ErrorCode::kInvalidInput, "input '{}': shape {} is too large", name, shapeStr(s));
    }
    const DType dt = dtypeOf(t);
    auto q = quantOf(t);
    ir::ValueId v = g_->addValue(name, ir::makeType(q && q->from_uint8 ? DType::kI8 : dt, s)).id;
    g_->inputs().push_back(v);
    if (q) {
      if (q->perChannel()) fail(ErrorCode::kUnsupported, "{}: an input quantized per channel", tensorLabel(t));
      ir::ValueId dq = g_->addValue(g_->uniqueValueName(name + "/dequantized")).id;
      ir::Node& n = g_->addNode("DequantizeLinear", name + "/dequantize",
                                {v, constant(name + "/scale", Tensor::scalar<float>(q->scale[0])),
                                 constant(name + "/zero_point", dt == DType::kU8 || dt == DType::kI8
                                                                    ? Tensor::scalar<int8_t>(static_cast<int8_t>(q->zero_point[0]))
                                                                    : Tensor::scalar<int32_t>(static_cast<int32_t>(q->zero_point[0])))},
                                {dq});
      ops::inferNodeTypes(*g_, n.id);
      v = dq;
    } else if (dt != DType::kF32) {
      fail(ErrorCode::kUnsupported, "{}: an input of {} without quantization parameters; npuc takes float32 inputs "
                                    "and quantized int8 / uint8 ones", tensorLabel(t), dtypeName(dt));
    }
    cl_->bind(key(t), v, channel_last::Form::kFramework);
  }
  for (auto& [name, s] : opts_.input_shapes)
    if (!seen.count(name)) {
      auto origin = opts_.input_shape_origin.find(name);
      std::string names;
      for (ir::ValueId v : g_->inputs()) names += (names.empty() ? "" : ", ") + g_->value(v).name;
      fail(ErrorCode::kInvalidArgument, "{} names '{}', which is not an input of the model (its inputs: {})",
           origin == opts_.input_shape_origin.end() ? "--input-shape" : origin->second, name, names);
    }
}

void Importer::mapOperator(int index) {
  const fb::Operator* o = sg_->operators()->Get(static_cast<flatbuffers::uoffset_t>(index));
  const auto* codes = model_.operator_codes();
  const uint32_t ci = o->opcode_index();
  if (!codes || ci >= codes->size())
    fail(ErrorCode::kInvalidInput, "operator {}: opcode_index {} is out of range (the model has {} operator codes)",
         index, ci, codes ? codes->size() : 0);
  const fb::OperatorCode* c = codes->Get(ci);
  op_ = Op{};
  op_.index = index;
  op_.op = o;
  // The larger of the two fields: old files hold the code in deprecated_builtin_code only.
  op_.code = std::max<int32_t>(c->deprecated_builtin_code(), static_cast<int32_t>(c->builtin_code()));
  op_.name = op_.code == fb::BuiltinOperator_CUSTOM
                 ? fmt::format("CUSTOM '{}'", c->custom_code() ? c->custom_code()->str() : std::string())
                 : builtinName(op_.code);
  if (o->inputs()) op_.inputs.assign(o->inputs()->begin(), o->inputs()->end());
  if (o->outputs()) op_.outputs.assign(o->outputs()->begin(), o->outputs()->end());
  withContext(fmt::format("operator {} ({})", index, op_.name), [&] {
    const auto& table = mappings();
    auto it = std::find_if(table.begin(), table.end(), [&](const Mapping& m) { return m.code == op_.code; });
    void (Importer::*fn)() = it == table.end() ? nullptr : it->fn;
    if (op_.code == fb::BuiltinOperator_CUSTOM && c->custom_code()) {
      auto cu = customMappings().find(c->custom_code()->str());
      if (cu != customMappings().end()) fn = cu->second;
    }
    if (!fn) {
      std::string known;
      for (const std::string& n : supportedOps()) known += (known.empty() ? "" : ", ") + n;
      fail(ErrorCode::kUnsupported, "{} is not an operator npuc imports (it imports: {})", op_.name, known);
    }
    for (int32_t t : op_.inputs)
      if (t >= 0 && !bound(t) && !isConstant(t))
        fail(ErrorCode::kInvalidInput, "{} is read before any operator writes it (operators run in the subgraph's "
                                       "order; a cycle cannot be written otherwise)", tensorLabel(t));
    for (int32_t t : op_.outputs) {
      if (t < 0) fail(ErrorCode::kInvalidInput, "an output names no tensor ({})", t);
      if (bound(t) || isConstant(t))
        fail(ErrorCode::kInvalidInput, "{} is written twice (by an earlier operator, as an input or as a constant)",
             tensorLabel(t));
    }
    (this->*fn)();
  });
}

void Importer::outputs() {
  if (!sg_->outputs() || sg_->outputs()->size() == 0) fail(ErrorCode::kInvalidInput, "subgraph 0 has no output");
  for (int32_t t : *sg_->outputs()) {
    if (!bound(t)) {
      if (isConstant(t)) fail(ErrorCode::kUnsupported, "output {} is a constant", tensorLabel(t));
      fail(ErrorCode::kInvalidInput, "output {} is written by no operator", tensorLabel(t));
    }
    ir::ValueId v = get(t, false);
    const std::string name = baseName(t);
    if (auto q = quantOf(t)) {  // the integer codes, as TFLite gives them (a uint8 model's as int8: code - 128)
      v = apply("QuantizeLinear", {v, constant(name + "/out_scale", Tensor::scalar<float>(q->scale[0])),
                                   constant(name + "/out_zero_point", Tensor::scalar<int8_t>(static_cast<int8_t>(q->zero_point[0])))},
                {}, "/output");
    } else if (g_->value(v).producer == ir::kNoNode || std::count(g_->outputs().begin(), g_->outputs().end(), v)) {
      v = apply("Identity", {v}, {}, "/output");
    }
    if (g_->value(v).name != name) {
      if (auto other = g_->findValue(name)) g_->renameValue(*other, g_->uniqueValueName(name + "/value"));
      g_->renameValue(v, name);
    }
    g_->outputs().push_back(v);
  }
}

std::unique_ptr<ir::Graph> Importer::run() {
  g_ = std::make_unique<ir::Graph>();
  cl_ = std::make_unique<channel_last::Builder>(*g_);
  g_->opset = 14;  // HardSwish; Softmax along one axis, Split sizes and Squeeze axes as inputs
  g_->producer = "tflite";
  if (!model_.subgraphs() || model_.subgraphs()->size() == 0) fail(ErrorCode::kInvalidInput, "the model has no subgraph");
  if (model_.version() != 3)
    fail(ErrorCode::kUnsupported, "schema version {}; npuc reads version 3 (every converter since 2018 writes it)",
         model_.version());
  sg_ = model_.subgraphs()->Get(0);
  g_->name = sg_->name() ? sg_->name()->str() : "";
  withContext("subgraph 0", [&] {
    inputs();
    const int n = sg_->operators() ? static_cast<int>(sg_->operators()->size()) : 0;
    for (int i = 0; i < n; ++i) mapOperator(i);
    outputs();
  });
  g_->topoSort();
  ir::verify(*g_, ErrorCode::kInvalidInput);
  return std::move(g_);
}

std::unique_ptr<ir::Graph> importBytes(const void* data, size_t size, const std::string& name,
                                       const onnx_io::ImportOptions& opts) {
  const fb::Model& model = verified(data, size, name);
  return withContext(name, [&] {
    auto g = Importer(model, name, opts).run();
    g->source = name;
    return g;
  });
}

std::unique_ptr<ir::Graph> importFile(const std::filesystem::path& path, const onnx_io::ImportOptions& opts) {
  std::vector<uint8_t> bytes = readFileBytes(path, kMaxFileBytes, "a TensorFlow Lite model (FlatBuffers' 2 GiB)");
  return importBytes(bytes.data(), bytes.size(), path.string(), opts);
}

}  // namespace npuc::tflite_io
