#include "support/npy.hpp"

#include "support/error.hpp"
#include "support/file.hpp"

#include <algorithm>
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

/// The header dict of a .npy file, read strictly: exactly the keys 'descr', 'fortran_order' and 'shape', each once,
/// with a string, a boolean and a tuple of non-negative integers; nothing but spaces and a final newline after it.
struct Header {
  std::string descr;
  bool fortran = false;
  Shape shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& h, const std::string& name) : h_(h), name_(name) {}

  Header run() {
    Header r;
    bool have[3] = {false, false, false};
    skip();
    expect('{');
    for (;;) {
      skip();
      if (peek() == '}') break;
      std::string key = str();
      skip();
      expect(':');
      skip();
      int k = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
      if (k < 0) bad(fmt::format("unknown key '{}' (a .npy header has 'descr', 'fortran_order' and 'shape')", key));
      if (have[k]) bad(fmt::format("key '{}' appears twice", key));
      have[k] = true;
      if (k == 0) r.descr = str();
      else if (k == 1) r.fortran = boolean();
      else r.shape = tuple();
      skip();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip();
      if (peek() != '}') bad("expected ',' or '}' after a value");
    }
    ++pos_;  // '}'
    for (int k = 0; k < 3; ++k)
      if (!have[k]) bad(fmt::format("no '{}' field", k == 0 ? "descr" : k == 1 ? "fortran_order" : "shape"));
    // Padding: spaces, then the newline that ends every header numpy writes (a NUL-padded one is accepted too).
    while (pos_ < h_.size() && (h_[pos_] == ' ' || h_[pos_] == '\0')) ++pos_;
    if (pos_ < h_.size() && h_[pos_] == '\n') ++pos_;
    if (pos_ != h_.size()) bad(fmt::format("unexpected bytes after the header dict at offset {}", pos_));
    return r;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    fail(ErrorCode::kInvalidInput, "{}: malformed .npy header: {}", name_, why);
  }
  char peek() const { return pos_ < h_.size() ? h_[pos_] : '\0'; }
  void skip() {
    while (pos_ < h_.size() && (h_[pos_] == ' ' || h_[pos_] == '\t' || h_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) bad(fmt::format("expected '{}' at offset {}", c, pos_));
    ++pos_;
  }
  std::string str() {
    char q = peek();
    if (q != '\'' && q != '"') bad(fmt::format("expected a quoted string at offset {}", pos_));
    size_t e = h_.find(q, pos_ + 1);
    if (e == std::string::npos) bad("unterminated string");
    std::string v = h_.substr(pos_ + 1, e - pos_ - 1);
    pos_ = e + 1;
    return v;
  }
  bool boolean() {
    if (h_.compare(pos_, 4, "True") == 0) return pos_ += 4, true;
    if (h_.compare(pos_, 5, "False") == 0) return pos_ += 5, false;
    bad("'fortran_order' must be True or False");
  }
  Shape tuple() {
    expect('(');
    Shape s;
    for (;;) {
      skip();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') bad(fmt::format("the shape holds something other than a non-negative integer at offset {}", pos_));
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        int d = peek() - '0';
        if (v > (INT64_MAX - d) / 10) bad("a dimension of the shape is too large");
        v = v * 10 + d;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs
      s.push_back(v);
      if (s.size() > 32) bad("the shape has more than 32 dimensions");
      skip();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') bad("expected ',' or ')' in the shape");
    }
    ++pos_;
    return s;
  }

  const std::string& h_;
  const std::string& name_;
  size_t pos_ = 0;
};

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
  if (hlen > size - hoff) fail(ErrorCode::kInvalidInput, "{}: truncated .npy header", name);
  std::string h(reinterpret_cast<const char*>(data + hoff), hlen);
  Header hd = HeaderParser(h, name).run();
  DType dt = dtypeForDescr(hd.descr, name);
  // Fortran order would need a transpose; refusing it is clearer than reading it as C order (a silent transpose).
  if (hd.fortran && hd.shape.size() > 1)
    fail(ErrorCode::kUnsupported, "{}: Fortran-order .npy arrays are not supported; save with C order (np.ascontiguousarray)", name);
  // The size the shape declares, checked against the file before anything is allocated (a 99-digit or huge
  // dimension is a clear error, not an overflow or an allocation of petabytes).
  const size_t avail = size - hoff - hlen;
  bool empty = std::any_of(hd.shape.begin(), hd.shape.end(), [](int64_t d) { return d == 0; });
  uint64_t need = dtypeSize(dt);
  for (int64_t d : hd.shape) {
    if (empty) break;
    if (need > avail / static_cast<uint64_t>(d))
      fail(ErrorCode::kInvalidInput, "{}: .npy data is {} bytes, far less than shape {} of {} needs", name, avail,
           shapeStr(hd.shape), dtypeName(dt));
    need *= static_cast<uint64_t>(d);
  }
  Tensor t(dt, hd.shape);
  if (avail != t.nbytes())
    fail(ErrorCode::kInvalidInput, "{}: .npy data is {} bytes, shape {} of {} needs {}{}", name, avail, shapeStr(hd.shape),
         dtypeName(dt), t.nbytes(), avail > t.nbytes() ? " (extra bytes after the array)" : "");
  if (t.nbytes()) std::memcpy(t.raw(), data + hoff + hlen, t.nbytes());
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
