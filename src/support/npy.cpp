#include "support/npy.hpp"

#include "support/error.hpp"
#include "support/file.hpp"

#include <cstring>

namespace npuc {

namespace {

const char* descrFor(DType t) {
  switch (t) {
    case DType::kF32: return "<f4";
    case DType::kF16: return "<f2";
    case DType::kF64: return "<f8";
    case DType::kI8: return "|i1";
    case DType::kU8: return "|u1";
    case DType::kI16: return "<i2";
    case DType::kU16: return "<u2";
    case DType::kI32: return "<i4";
    case DType::kU32: return "<u4";
    case DType::kI64: return "<i8";
    case DType::kU64: return "<u8";
    case DType::kBool: return "|b1";
    default: fail(ErrorCode::kUnsupported, "cannot write {} tensors as .npy", dtypeName(t));
  }
}

DType dtypeForDescr(const std::string& d, const std::string& name) {
  static const std::pair<const char*, DType> table[] = {
      {"<f4", DType::kF32}, {"<f2", DType::kF16}, {"<f8", DType::kF64}, {"|i1", DType::kI8}, {"|u1", DType::kU8},
      {"<i2", DType::kI16}, {"<u2", DType::kU16}, {"<i4", DType::kI32}, {"<u4", DType::kU32}, {"<i8", DType::kI64},
      {"<u8", DType::kU64}, {"|b1", DType::kBool}, {"<b1", DType::kBool}, {"|?", DType::kBool}, {"<i1", DType::kI8},
      {"<u1", DType::kU8}};
  for (auto& [s, t] : table)
    if (d == s) return t;
  fail(ErrorCode::kUnsupported, "{}: unsupported .npy dtype '{}' (big-endian or non-numeric)", name, d);
}

// Finds the value text after 'key': in the header dict.
std::string field(const std::string& h, const std::string& key, const std::string& name) {
  auto k = h.find("'" + key + "'");
  if (k == std::string::npos) fail(ErrorCode::kInvalidInput, "{}: .npy header has no '{}' field", name, key);
  auto c = h.find(':', k);
  if (c == std::string::npos) fail(ErrorCode::kInvalidInput, "{}: .npy header field '{}' has no value", name, key);
  size_t b = h.find_first_not_of(' ', c + 1);
  if (b == std::string::npos) fail(ErrorCode::kInvalidInput, "{}: .npy header field '{}' has no value", name, key);
  size_t e;
  if (h[b] == '\'') {
    e = h.find('\'', b + 1);
    if (e == std::string::npos) fail(ErrorCode::kInvalidInput, "{}: .npy header: unterminated string", name);
    return h.substr(b + 1, e - b - 1);
  }
  if (h[b] == '(') {
    e = h.find(')', b);
    if (e == std::string::npos) fail(ErrorCode::kInvalidInput, "{}: .npy header: unterminated shape", name);
    return h.substr(b, e - b + 1);
  }
  e = h.find_first_of(",}", b);
  return h.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

}  // namespace

Tensor parseNpy(const uint8_t* data, size_t size, const std::string& name) {
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0)
    fail(ErrorCode::kInvalidInput, "{}: not a .npy file (bad magic)", name);
  int major = data[6];
  size_t hlen, hoff;
  if (major == 1) {
    hlen = data[8] | (static_cast<size_t>(data[9]) << 8);
    hoff = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(ErrorCode::kInvalidInput, "{}: truncated .npy header", name);
    hlen = data[8] | (static_cast<size_t>(data[9]) << 8) | (static_cast<size_t>(data[10]) << 16) |
           (static_cast<size_t>(data[11]) << 24);
    hoff = 12;
  } else {
    fail(ErrorCode::kUnsupported, "{}: .npy format version {} is not supported", name, major);
  }
  if (hoff + hlen > size) fail(ErrorCode::kInvalidInput, "{}: truncated .npy header", name);
  std::string h(reinterpret_cast<const char*>(data + hoff), hlen);
  DType dt = dtypeForDescr(field(h, "descr", name), name);
  if (field(h, "fortran_order", name).find("True") != std::string::npos)
    fail(ErrorCode::kUnsupported, "{}: Fortran-order .npy arrays are not supported; save with C order", name);
  std::string s = field(h, "shape", name);
  Shape shape;
  size_t i = 1;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
    if (i >= s.size() || s[i] == ')') break;
    size_t e = i;
    while (e < s.size() && s[e] >= '0' && s[e] <= '9') ++e;
    if (e == i) fail(ErrorCode::kInvalidInput, "{}: bad .npy shape '{}'", name, s);
    shape.push_back(std::stoll(s.substr(i, e - i)));
    i = e;
    if (i < s.size() && s[i] == 'L') ++i;
  }
  Tensor t(dt, shape);
  size_t off = hoff + hlen;
  if (size - off < t.nbytes())
    fail(ErrorCode::kInvalidInput, "{}: .npy data is {} bytes, shape {} of {} needs {}", name, size - off,
         shapeStr(shape), dtypeName(dt), t.nbytes());
  if (t.nbytes()) std::memcpy(t.raw(), data + off, t.nbytes());
  return t;
}

Tensor readNpy(const std::filesystem::path& path) {
  auto bytes = readFileBytes(path);
  return parseNpy(bytes.data(), bytes.size(), path.string());
}

std::string encodeNpy(const Tensor& t) {
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    shape += std::to_string(t.shape()[i]);
    shape += (t.shape().size() == 1 || i + 1 < t.shape().size()) ? "," : "";
    if (i + 1 < t.shape().size()) shape += " ";
  }
  shape += ")";
  std::string h = std::string("{'descr': '") + descrFor(t.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>((h.size() >> 8) & 0xff);
  out += h;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

void writeNpy(const std::filesystem::path& path, const Tensor& t) { writeFileAtomic(path, encodeNpy(t)); }

}  // namespace npuc
