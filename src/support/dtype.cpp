#include "support/dtype.hpp"

namespace npuc {

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kF16: case DType::kBF16: case DType::kI16: case DType::kU16: return 2;
    case DType::kF64: case DType::kI64: case DType::kU64: return 8;
    case DType::kI8: case DType::kU8: case DType::kBool: return 1;
    case DType::kUndefined: case DType::kString: return 0;
  }
  return 0;
}

std::string_view dtypeName(DType t) {
  switch (t) {
    case DType::kUndefined: return "undefined";
    case DType::kF32: return "float32";
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kF64: return "float64";
    case DType::kI8: return "int8";
    case DType::kU8: return "uint8";
    case DType::kI16: return "int16";
    case DType::kU16: return "uint16";
    case DType::kI32: return "int32";
    case DType::kU32: return "uint32";
    case DType::kI64: return "int64";
    case DType::kU64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
  }
  return "?";
}

DType dtypeFromOnnxCode(int64_t code) {
  switch (code) {
    case 1: return DType::kF32;
    case 2: return DType::kU8;
    case 3: return DType::kI8;
    case 4: return DType::kU16;
    case 5: return DType::kI16;
    case 6: return DType::kI32;
    case 7: return DType::kI64;
    case 8: return DType::kString;
    case 9: return DType::kBool;
    case 10: return DType::kF16;
    case 11: return DType::kF64;
    case 12: return DType::kU32;
    case 13: return DType::kU64;
    case 16: return DType::kBF16;
    default: return DType::kUndefined;
  }
}

int64_t onnxCodeOf(DType t) {
  for (int64_t c = 1; c <= 16; ++c)
    if (dtypeFromOnnxCode(c) == t) return c;
  return -1;
}

bool isFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64; }
bool isInteger(DType t) {
  switch (t) {
    case DType::kI8: case DType::kU8: case DType::kI16: case DType::kU16:
    case DType::kI32: case DType::kU32: case DType::kI64: case DType::kU64: return true;
    default: return false;
  }
}
bool isSigned(DType t) {
  return isFloat(t) || t == DType::kI8 || t == DType::kI16 || t == DType::kI32 || t == DType::kI64;
}

}  // namespace npuc
