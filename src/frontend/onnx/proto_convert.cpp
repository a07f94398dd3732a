// TensorProto / TypeProto / AttributeProto <-> IR.
#include "frontend/onnx/proto_convert.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"
#include "support/file.hpp"

#include <cstring>
#include <fstream>

namespace npuc::onnx_io {

namespace {

template <typename Src, typename Dst>
void copyField(const google::protobuf::RepeatedField<Src>& f, Tensor& t, const char* field) {
  if (f.size() != t.numel())
    fail(ErrorCode::kInvalidInput, "{} has {} values but dims {} need {}", field, f.size(), shapeStr(t.shape()), t.numel());
  Dst* d = static_cast<Dst*>(t.raw());
  for (int i = 0; i < f.size(); ++i) d[i] = static_cast<Dst>(f.Get(i));
}

int64_t parseCount(const std::string& v, const char* key) {
  int64_t r = 0;
  if (v.empty() || v.size() > 18) fail(ErrorCode::kInvalidInput, "external data {} '{}' is not a byte count", key, v);
  for (char c : v) {
    if (c < '0' || c > '9') fail(ErrorCode::kInvalidInput, "external data {} '{}' is not a byte count", key, v);
    r = r * 10 + (c - '0');
  }
  return r;
}

std::vector<uint8_t> readExternal(const onnx::TensorProto& t, const std::filesystem::path& base_dir) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parseCount(kv.value(), "offset");
    else if (kv.key() == "length") length = parseCount(kv.value(), "length");
  }
  if (location.empty()) fail(ErrorCode::kInvalidInput, "external data has no 'location'");
  std::filesystem::path p(location);
  if (p.is_absolute() || location.find("..") != std::string::npos)
    fail(ErrorCode::kInvalidInput, "external data location '{}' must be a relative path inside the model's folder", location);
  p = base_dir / p;
  std::error_code ec;
  // The file, once every symbolic link is resolved, must still lie inside the model's folder and be a regular file:
  // a link out of the folder (to /etc/passwd, a device, another user's files) is not followed.
  std::filesystem::path real = std::filesystem::canonical(p, ec);
  if (ec) fail(ErrorCode::kIo, "external data file '{}' cannot be read: {}", p.string(), ec.message());
  std::filesystem::path root = std::filesystem::canonical(base_dir.empty() ? "." : base_dir, ec);
  if (ec) fail(ErrorCode::kIo, "the model's folder '{}' cannot be read: {}", base_dir.string(), ec.message());
  auto rel = real.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..")
    fail(ErrorCode::kInvalidInput, "external data location '{}' resolves to '{}', outside the model's folder '{}' (symbolic links "
         "out of the folder are not followed)", location, real.string(), root.string());
  if (!std::filesystem::is_regular_file(real, ec))
    fail(ErrorCode::kInvalidInput, "external data location '{}' is not a regular file", location);
  auto fsize = std::filesystem::file_size(real, ec);
  if (ec) fail(ErrorCode::kIo, "external data file '{}' cannot be read: {}", p.string(), ec.message());
  if (offset < 0 || static_cast<uint64_t>(offset) > fsize)
    fail(ErrorCode::kInvalidInput, "external data offset {} is past the end of '{}' ({} bytes)", offset, p.string(), fsize);
  if (length < 0) length = static_cast<int64_t>(fsize) - offset;
  if (static_cast<uint64_t>(offset + length) > fsize)
    fail(ErrorCode::kInvalidInput, "external data [{}, +{}) is past the end of '{}' ({} bytes)", offset, length, p.string(), fsize);
  std::ifstream f(real, std::ios::binary);
  f.seekg(offset);
  std::vector<uint8_t> buf(static_cast<size_t>(length));
  if (length && !f.read(reinterpret_cast<char*>(buf.data()), length))
    fail(ErrorCode::kIo, "external data file '{}': read failed", p.string());
  return buf;
}

}  // namespace

Tensor tensorFromProto(const onnx::TensorProto& t, const std::filesystem::path& base_dir) {
  DType dt = dtypeFromOnnxCode(t.data_type());
  if (dt == DType::kUndefined) fail(ErrorCode::kUnsupported, "tensor element type {} is not supported", t.data_type());
  if (dt == DType::kString) fail(ErrorCode::kUnsupported, "string tensors are not supported");
  Shape shape;
  for (int64_t d : t.dims()) {
    if (d < 0) fail(ErrorCode::kInvalidInput, "tensor has a negative dimension {}", d);
    shape.push_back(d);
  }
  if (t.has_segment()) fail(ErrorCode::kUnsupported, "segmented tensors are not supported");
  // Check the declared size against the data before allocating anything.
  size_t nbytes = static_cast<size_t>(shapeNumel(shape)) * dtypeSize(dt);
  if (t.data_location() != onnx::TensorProto::EXTERNAL && t.has_raw_data() && t.raw_data().size() != nbytes)
    fail(ErrorCode::kInvalidInput, "raw_data has {} bytes, {} {} needs {}", t.raw_data().size(), dtypeName(dt),
         shapeStr(shape), nbytes);
  if (t.data_location() != onnx::TensorProto::EXTERNAL && !t.has_raw_data()) {
    int64_t have = t.float_data_size() + t.double_data_size() + t.int64_data_size() + t.uint64_data_size() +
                   t.int32_data_size();
    if (have != shapeNumel(shape))
      fail(ErrorCode::kInvalidInput, "tensor data has {} values but dims {} need {}", have, shapeStr(shape),
           shapeNumel(shape));
  }
  Tensor out(dt, shape);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    auto buf = readExternal(t, base_dir);
    if (buf.size() != nbytes)
      fail(ErrorCode::kInvalidInput, "external data has {} bytes, {} {} needs {}", buf.size(), dtypeName(dt), shapeStr(shape), nbytes);
    if (nbytes) std::memcpy(out.raw(), buf.data(), nbytes);
    return out;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != nbytes)
      fail(ErrorCode::kInvalidInput, "raw_data has {} bytes, {} {} needs {}", t.raw_data().size(), dtypeName(dt),
           shapeStr(shape), nbytes);
    if (nbytes) std::memcpy(out.raw(), t.raw_data().data(), nbytes);
    return out;
  }
  switch (dt) {
    case DType::kF32: copyField<float, float>(t.float_data(), out, "float_data"); break;
    case DType::kF64: copyField<double, double>(t.double_data(), out, "double_data"); break;
    case DType::kI64: copyField<int64_t, int64_t>(t.int64_data(), out, "int64_data"); break;
    case DType::kU64: copyField<uint64_t, uint64_t>(t.uint64_data(), out, "uint64_data"); break;
    case DType::kU32: copyField<uint64_t, uint32_t>(t.uint64_data(), out, "uint64_data"); break;
    case DType::kI32: copyField<int32_t, int32_t>(t.int32_data(), out, "int32_data"); break;
    case DType::kI16: copyField<int32_t, int16_t>(t.int32_data(), out, "int32_data"); break;
    case DType::kU16: case DType::kF16: case DType::kBF16: copyField<int32_t, uint16_t>(t.int32_data(), out, "int32_data"); break;
    case DType::kI8: copyField<int32_t, int8_t>(t.int32_data(), out, "int32_data"); break;
    case DType::kU8: copyField<int32_t, uint8_t>(t.int32_data(), out, "int32_data"); break;
    case DType::kBool: copyField<int32_t, bool>(t.int32_data(), out, "int32_data"); break;
    default: fail(ErrorCode::kUnsupported, "tensor element type {} is not supported", dtypeName(dt));
  }
  return out;
}

void tensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto& out) {
  out.set_name(name);
  int64_t code = onnxCodeOf(t.dtype());
  if (code < 0) fail(ErrorCode::kUnsupported, "cannot export {} tensors to ONNX", dtypeName(t.dtype()));
  out.set_data_type(static_cast<int32_t>(code));
  for (int64_t d : t.shape()) out.add_dims(d);
  out.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

ir::Type typeFromProto(const onnx::TypeProto& t, const std::string& what, bool allow_unknown) {
  if (!t.has_tensor_type()) {
    if (allow_unknown) return {};
    fail(ErrorCode::kUnsupported, "{} is not a tensor (sequences, maps and optionals are not supported)", what);
  }
  ir::Type r;
  r.dtype = dtypeFromOnnxCode(t.tensor_type().elem_type());
  if (r.dtype == DType::kString) fail(ErrorCode::kUnsupported, "{} is a string tensor; strings are not supported", what);
  if (!t.tensor_type().has_shape()) return r;
  r.rank_known = true;
  for (auto& d : t.tensor_type().shape().dim()) r.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return r;
}

void typeToProto(const ir::Type& t, onnx::TypeProto& out) {
  auto* tt = out.mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(std::max<int64_t>(0, onnxCodeOf(t.dtype))));
  if (!t.rank_known) return;
  auto* s = tt->mutable_shape();
  for (int64_t d : t.shape) {
    auto* dim = s->add_dim();
    if (d >= 0) dim->set_dim_value(d);
  }
}

ir::Attr attrFromProto(const onnx::AttributeProto& a, const std::filesystem::path& base_dir) {
  auto ctx = "attribute '" + a.name() + "'";
  if (!a.ref_attr_name().empty()) fail(ErrorCode::kUnsupported, "{}: attribute references are not supported", ctx);
  switch (a.type()) {
    case onnx::AttributeProto::INT: return ir::Attr(static_cast<int64_t>(a.i()));
    case onnx::AttributeProto::FLOAT: return ir::Attr(a.f());
    case onnx::AttributeProto::STRING: return ir::Attr(a.s());
    case onnx::AttributeProto::TENSOR: return withContext(ctx, [&] { return ir::Attr(tensorFromProto(a.t(), base_dir)); });
    case onnx::AttributeProto::INTS: return ir::Attr(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case onnx::AttributeProto::FLOATS: return ir::Attr(std::vector<float>(a.floats().begin(), a.floats().end()));
    case onnx::AttributeProto::STRINGS: return ir::Attr(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case onnx::AttributeProto::GRAPH:
    case onnx::AttributeProto::GRAPHS:
      fail(ErrorCode::kUnsupported, "{}: subgraphs (If/Loop/Scan bodies) are not supported", ctx);
    default: fail(ErrorCode::kUnsupported, "{}: attribute type {} is not supported", ctx, static_cast<int>(a.type()));
  }
}

void attrToProto(const std::string& name, const ir::Attr& a, onnx::AttributeProto& out) {
  out.set_name(name);
  if (auto v = a.get<int64_t>()) { out.set_type(onnx::AttributeProto::INT); out.set_i(*v); }
  else if (auto f = a.get<float>()) { out.set_type(onnx::AttributeProto::FLOAT); out.set_f(*f); }
  else if (auto s = a.get<std::string>()) { out.set_type(onnx::AttributeProto::STRING); out.set_s(*s); }
  else if (auto t = a.get<Tensor>()) { out.set_type(onnx::AttributeProto::TENSOR); tensorToProto(*t, "", *out.mutable_t()); }
  else if (auto is = a.get<std::vector<int64_t>>()) { out.set_type(onnx::AttributeProto::INTS); for (auto x : *is) out.add_ints(x); }
  else if (auto fs = a.get<std::vector<float>>()) { out.set_type(onnx::AttributeProto::FLOATS); for (auto x : *fs) out.add_floats(x); }
  else if (auto ss = a.get<std::vector<std::string>>()) { out.set_type(onnx::AttributeProto::STRINGS); for (auto& x : *ss) out.add_strings(x); }
}

}  // namespace npuc::onnx_io
