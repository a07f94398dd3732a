// Typed element-wise kernels (kernels/typed.hpp): the specification of the ONNX ops on integer, bool and float
// operands, shared by the engine and the runtime.
#include "kernels/typed.hpp"

#include "kernels/ref/typed_dispatch.hpp"

#include "support/error.hpp"
#include "support/fp16.hpp"

#include <cstring>

namespace npuc::kernels {

namespace {

using detail::dispatch;
using detail::isHalf;
using detail::narrow;
using detail::widen;
using detail::wrap;

struct OpInfo {
  const char* name;
  bool predicate;
};
constexpr OpInfo kBinaryOps[] = {
#define NPUC_TYPED_BINARY_OP(e, name, pred) {name, pred != 0},
#include "kernels/elementwise_ops.def"
#undef NPUC_TYPED_BINARY_OP
};
constexpr OpInfo kUnaryOps[] = {
#define NPUC_TYPED_UNARY_OP(e, name, pred) {name, pred != 0},
#include "kernels/elementwise_ops.def"
#undef NPUC_TYPED_UNARY_OP
};

/// bool bytes as 0 / 1 (a package's bytes may hold any value; non-zero is true).
std::vector<uint8_t> bools(const void* x, int64_t n) {
  std::vector<uint8_t> b(static_cast<size_t>(n));
  const auto* p = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < n; ++i) b[static_cast<size_t>(i)] = p[i] != 0;
  return b;
}
int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

template <typename T, typename R, typename F>
void loop(const std::vector<int64_t>& as, const T* pa, const std::vector<int64_t>& bs, const T* pb,
          const std::vector<int64_t>& ys, R* py, F&& f) {
  forEachBroadcast<2>(ys, {&as, &bs}, [&](int64_t o, std::array<int64_t, 2> off, std::array<int64_t, 2> st, int64_t n) {
    const T* xa = pa + off[0];
    const T* xb = pb + off[1];
    R* xy = py + o;
    for (int64_t i = 0; i < n; ++i) xy[i] = static_cast<R>(f(xa[i * st[0]], xb[i * st[1]]));
  });
}

template <typename T>
T signOf(T v) {
  if constexpr (std::is_unsigned_v<T>) return v > 0 ? T(1) : T(0);
  else return v > 0 ? T(1) : (v < 0 ? T(-1) : T(0));
}

template <typename T>
void binaryOf(TypedBinaryOp op, const std::vector<int64_t>& as, const T* a, const std::vector<int64_t>& bs,
              const T* b, const std::vector<int64_t>& ys, void* yv) {
  using O = TypedBinaryOp;
  T* y = static_cast<T*>(yv);
  auto* yb = static_cast<uint8_t*>(yv);
  constexpr bool kFloat = std::is_floating_point_v<T>;
  switch (op) {
    case O::kAdd: return loop(as, a, bs, b, ys, y, [](T x, T z) { return wrap(x, z, [](auto p, auto q) { return p + q; }); });
    case O::kSub: return loop(as, a, bs, b, ys, y, [](T x, T z) { return wrap(x, z, [](auto p, auto q) { return p - q; }); });
    case O::kMul: return loop(as, a, bs, b, ys, y, [](T x, T z) { return wrap(x, z, [](auto p, auto q) { return p * q; }); });
    case O::kDiv:
      return loop(as, a, bs, b, ys, y, [](T x, T z) {
        if constexpr (kFloat) {
          return x / z;
        } else {
          if (z == 0) return T(0);  // undefined in ONNX; never trap
          if constexpr (std::is_signed_v<T>) if (z == T(-1)) return wrap(T(0), x, [](auto p, auto q) { return p - q; });
          return static_cast<T>(x / z);
        }
      });
    case O::kMod:
    case O::kFMod: {
      const bool fm = op == O::kFMod;
      return loop(as, a, bs, b, ys, y, [fm](T x, T z) {
        if constexpr (kFloat) {
          T r = std::fmod(x, z);
          if (!fm && r != 0 && ((r < 0) != (z < 0))) r += z;
          return r;
        } else {
          (void)fm;
          if (z == 0) return T(0);
          if constexpr (std::is_signed_v<T>) if (z == T(-1)) return T(0);
          T r = static_cast<T>(x % z);
          if constexpr (std::is_signed_v<T>) if (!fm && r != 0 && ((r < 0) != (z < 0))) r = static_cast<T>(r + z);
          return r;
        }
      });
    }
    case O::kMax:
      return loop(as, a, bs, b, ys, y, [](T x, T z) {
        if constexpr (kFloat) if (std::isnan(x) || std::isnan(z)) return std::numeric_limits<T>::quiet_NaN();
        return x < z ? z : x;
      });
    case O::kMin:
      return loop(as, a, bs, b, ys, y, [](T x, T z) {
        if constexpr (kFloat) if (std::isnan(x) || std::isnan(z)) return std::numeric_limits<T>::quiet_NaN();
        return z < x ? z : x;
      });
    case O::kPow:
      return loop(as, a, bs, b, ys, y, [](T x, T z) {
        if constexpr (kFloat) return static_cast<T>(std::pow(x, z));
        else return convertValue<T>(std::pow(static_cast<double>(x), static_cast<double>(z)));
      });
    case O::kPRelu:
      return loop(as, a, bs, b, ys, y, [](T x, T z) { return x < T(0) ? wrap(x, z, [](auto p, auto q) { return p * q; }) : x; });
    case O::kBitShiftLeft:
    case O::kBitShiftRight:
      if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {  // typedBinaryRule: unsigned only
        if (op == O::kBitShiftLeft) return loop(as, a, bs, b, ys, y, [](T x, T z) { return z >= sizeof(T) * 8 ? T(0) : static_cast<T>(x << z); });
        return loop(as, a, bs, b, ys, y, [](T x, T z) { return z >= sizeof(T) * 8 ? T(0) : static_cast<T>(x >> z); });
      }
      return;
    case O::kEqual: return loop(as, a, bs, b, ys, yb, [](T x, T z) { return x == z; });
    case O::kGreater: return loop(as, a, bs, b, ys, yb, [](T x, T z) { return x > z; });
    case O::kLess: return loop(as, a, bs, b, ys, yb, [](T x, T z) { return x < z; });
    case O::kGreaterOrEqual: return loop(as, a, bs, b, ys, yb, [](T x, T z) { return x >= z; });
    case O::kLessOrEqual: return loop(as, a, bs, b, ys, yb, [](T x, T z) { return x <= z; });
    case O::kAnd: return loop(as, a, bs, b, ys, yb, [](T x, T z) { return x != T(0) && z != T(0); });
    case O::kOr: return loop(as, a, bs, b, ys, yb, [](T x, T z) { return x != T(0) || z != T(0); });
    case O::kXor: return loop(as, a, bs, b, ys, yb, [](T x, T z) { return (x != T(0)) != (z != T(0)); });
    case O::kCount: break;
  }
}

template <typename T>
void unaryOf(TypedUnaryOp op, int64_t n, const T* x, void* yv, uint32_t flags) {
  using O = TypedUnaryOp;
  T* y = static_cast<T*>(yv);
  auto* yb = static_cast<uint8_t*>(yv);
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    switch (op) {
      case O::kNot: yb[i] = v == T(0); break;
      case O::kAbs:
        if constexpr (std::is_unsigned_v<T>) y[i] = v;
        else y[i] = v < T(0) ? wrap(T(0), v, [](auto p, auto q) { return p - q; }) : v;
        break;
      case O::kNeg:
        if constexpr (std::is_unsigned_v<T>) y[i] = static_cast<T>(T(0) - v);
        else y[i] = wrap(T(0), v, [](auto p, auto q) { return p - q; });
        break;
      case O::kSign: y[i] = signOf(v); break;
      case O::kRelu: y[i] = v < T(0) ? T(0) : v; break;
      case O::kCeil: if constexpr (std::is_floating_point_v<T>) y[i] = std::ceil(v); else y[i] = v; break;
      case O::kFloor: if constexpr (std::is_floating_point_v<T>) y[i] = std::floor(v); else y[i] = v; break;
      case O::kIsNaN: if constexpr (std::is_floating_point_v<T>) yb[i] = std::isnan(v); else yb[i] = 0; break;
      case O::kIsInf:
        if constexpr (std::is_floating_point_v<T>) yb[i] = std::isinf(v) && ((v > 0 && (flags & 2)) || (v < 0 && (flags & 1)));
        else yb[i] = 0;
        break;
      case O::kCount: break;
    }
  }
}

}  // namespace

const char* typedBinaryOpName(TypedBinaryOp op) {
  return op < TypedBinaryOp::kCount ? kBinaryOps[static_cast<size_t>(op)].name : "?";
}
const char* typedUnaryOpName(TypedUnaryOp op) {
  return op < TypedUnaryOp::kCount ? kUnaryOps[static_cast<size_t>(op)].name : "?";
}
TypedBinaryOp typedBinaryOpFromName(const std::string& name) {
  for (size_t i = 0; i < std::size(kBinaryOps); ++i)
    if (name == kBinaryOps[i].name) return static_cast<TypedBinaryOp>(i);
  return TypedBinaryOp::kCount;
}
TypedUnaryOp typedUnaryOpFromName(const std::string& name) {
  for (size_t i = 0; i < std::size(kUnaryOps); ++i)
    if (name == kUnaryOps[i].name) return static_cast<TypedUnaryOp>(i);
  return TypedUnaryOp::kCount;
}
TypedBinaryOp typedBinaryOpForOnnx(const std::string& onnx_op, int64_t fmod, bool shift_left) {
  if (onnx_op == "Mod") return fmod ? TypedBinaryOp::kFMod : TypedBinaryOp::kMod;
  if (onnx_op == "BitShift") return shift_left ? TypedBinaryOp::kBitShiftLeft : TypedBinaryOp::kBitShiftRight;
  if (onnx_op == "FMod" || onnx_op == "BitShiftLeft" || onnx_op == "BitShiftRight") return TypedBinaryOp::kCount;
  return typedBinaryOpFromName(onnx_op);
}
bool typedBinaryIsPredicate(TypedBinaryOp op) { return op < TypedBinaryOp::kCount && kBinaryOps[static_cast<size_t>(op)].predicate; }
bool typedUnaryIsPredicate(TypedUnaryOp op) { return op < TypedUnaryOp::kCount && kUnaryOps[static_cast<size_t>(op)].predicate; }

bool typedKernelType(DType t) {
  switch (t) {
    case DType::kUndefined: case DType::kString: return false;
    default: return true;
  }
}

std::string typedBinaryRule(TypedBinaryOp op, DType t) {
  using O = TypedBinaryOp;
  const std::string name = typedBinaryOpName(op);
  if (op >= O::kCount) return "unknown op";
  if (!typedKernelType(t)) return fmt::format("{} is not defined for {}", name, dtypeName(t));
  const bool is_bool = t == DType::kBool;
  switch (op) {
    case O::kAnd: case O::kOr: case O::kXor:
      return is_bool ? "" : fmt::format("{} needs bool operands, got {}", name, dtypeName(t));
    case O::kEqual: return "";
    case O::kBitShiftLeft: case O::kBitShiftRight:
      return isInteger(t) && !isSigned(t) ? "" : fmt::format("{} needs unsigned integers, got {}", name, dtypeName(t));
    default:
      return is_bool ? fmt::format("{} is not defined for bool", name) : "";
  }
}

std::string typedUnaryRule(TypedUnaryOp op, DType t) {
  using O = TypedUnaryOp;
  if (op >= O::kCount) return "unknown op";
  const std::string name = typedUnaryOpName(op);
  if (!typedKernelType(t)) return fmt::format("{} is not defined for {}", name, dtypeName(t));
  switch (op) {
    case O::kNot: return t == DType::kBool ? "" : fmt::format("Not needs a bool input, got {}", dtypeName(t));
    case O::kIsNaN: case O::kIsInf: return isFloat(t) ? "" : fmt::format("{} needs a floating-point input, got {}", name, dtypeName(t));
    default: return t == DType::kBool ? fmt::format("{} is not defined for bool", name) : "";
  }
}

void typedBinary(TypedBinaryOp op, DType t, const std::vector<int64_t>& as, const void* a,
                 const std::vector<int64_t>& bs, const void* b, const std::vector<int64_t>& ys, void* y) {
  const std::string why = typedBinaryRule(op, t);
  if (!why.empty()) fail(ErrorCode::kUnsupported, "{}", why);
  if (isHalf(t)) {
    std::vector<float> fa = widen(t, a, numel(as)), fb = widen(t, b, numel(bs));
    const int64_t n = numel(ys);
    if (typedBinaryIsPredicate(op)) return binaryOf<float>(op, as, fa.data(), bs, fb.data(), ys, y);
    std::vector<float> fy(static_cast<size_t>(n));
    binaryOf<float>(op, as, fa.data(), bs, fb.data(), ys, fy.data());
    return narrow(t, fy.data(), y, n);
  }
  if (t == DType::kBool) {
    std::vector<uint8_t> ba = bools(a, numel(as)), bb = bools(b, numel(bs));
    return binaryOf<uint8_t>(op, as, ba.data(), bs, bb.data(), ys, y);
  }
  dispatch(t, [&]<typename T>() { binaryOf<T>(op, as, static_cast<const T*>(a), bs, static_cast<const T*>(b), ys, y); });
}

void typedUnary(TypedUnaryOp op, DType t, int64_t n, const void* x, void* y, uint32_t flags) {
  const std::string why = typedUnaryRule(op, t);
  if (!why.empty()) fail(ErrorCode::kUnsupported, "{}", why);
  if (isHalf(t)) {
    std::vector<float> fx = widen(t, x, n);
    if (typedUnaryIsPredicate(op)) return unaryOf<float>(op, n, fx.data(), y, flags);
    std::vector<float> fy(static_cast<size_t>(n));
    unaryOf<float>(op, n, fx.data(), fy.data(), flags);
    return narrow(t, fy.data(), y, n);
  }
  if (t == DType::kBool) {
    std::vector<uint8_t> bx = bools(x, n);
    return unaryOf<uint8_t>(op, n, bx.data(), y, flags);
  }
  dispatch(t, [&]<typename T>() { unaryOf<T>(op, n, static_cast<const T*>(x), y, flags); });
}

void castValues(DType from, const void* x, DType to, void* y, int64_t n) {
  if (!typedKernelType(from) || !typedKernelType(to))
    fail(ErrorCode::kUnsupported, "a cast from {} to {} is not defined", dtypeName(from), dtypeName(to));
  if (from == to) {
    if (from == DType::kBool) {
      const auto* s = static_cast<const uint8_t*>(x);
      auto* d = static_cast<uint8_t*>(y);
      for (int64_t i = 0; i < n; ++i) d[i] = s[i] != 0;
    } else if (n > 0) {
      std::memmove(y, x, static_cast<size_t>(n) * dtypeSize(from));
    }
    return;
  }
  if (isHalf(from)) {
    std::vector<float> f = widen(from, x, n);
    return castValues(DType::kF32, f.data(), to, y, n);
  }
  if (isHalf(to)) {
    std::vector<float> f(static_cast<size_t>(n));
    castValues(from, x, DType::kF32, f.data(), n);
    return narrow(to, f.data(), y, n);
  }
  std::vector<uint8_t> b;
  if (from == DType::kBool) {
    b = bools(x, n);
    x = b.data();
  }
  dispatch(from, [&]<typename F>() {
    const F* s = static_cast<const F*>(x);
    if (to == DType::kBool) {
      auto* d = static_cast<uint8_t*>(y);
      for (int64_t i = 0; i < n; ++i) d[i] = s[i] != F(0);
      return;
    }
    dispatch(to, [&]<typename T>() {
      T* d = static_cast<T*>(y);
      for (int64_t i = 0; i < n; ++i) d[i] = convertValue<T>(s[i]);
    });
  });
}

void argReduce(bool max, bool last, DType t, int64_t outer, int64_t n, int64_t inner, const void* xv, int64_t* y) {
  if (outer * inner == 0) return;
  if (n <= 0) fail(ErrorCode::kInvalidInput, "{} over an empty axis", max ? "ArgMax" : "ArgMin");
  std::vector<float> wide;
  if (isHalf(t)) {
    wide = widen(t, xv, outer * n * inner);
    xv = wide.data();
    t = DType::kF32;
  }
  std::vector<uint8_t> b;
  if (t == DType::kBool) {
    b = bools(xv, outer * n * inner);
    xv = b.data();
  }
  const bool ok = dispatch(t, [&]<typename T>() {
    const T* p = static_cast<const T*>(xv);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        int64_t bi = 0;
        T bv = p[base];
        for (int64_t j = 1; j < n; ++j) {
          const T v = p[base + j * inner];
          bool better;
          if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(bv)) better = last && std::isnan(v);
            else if (std::isnan(v)) better = true;
            else better = max ? (v > bv || (last && v == bv)) : (v < bv || (last && v == bv));
          } else {
            better = max ? (v > bv || (last && v == bv)) : (v < bv || (last && v == bv));
          }
          if (better) {
            bi = j;
            bv = v;
          }
        }
        y[o * inner + i] = bi;
      }
    }
  });
  if (!ok) fail(ErrorCode::kUnsupported, "{} is not defined for {}", max ? "ArgMax" : "ArgMin", dtypeName(t));
}

void trilu(bool upper, int64_t k, int64_t mats, int64_t rows, int64_t cols, size_t es, const void* xv, void* yv) {
  const auto* s = static_cast<const uint8_t*>(xv);
  auto* d = static_cast<uint8_t*>(yv);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? j - i >= k : j - i <= k;
        const size_t off = static_cast<size_t>((m * rows + i) * cols + j) * es;
        if (keep) std::memcpy(d + off, s + off, es);
        else std::memset(d + off, 0, es);
      }
}

void cumSum(DType t, bool excl, bool rev, int64_t outer, int64_t dim, int64_t inner, const void* xv, void* yv) {
  if (t == DType::kBool || !typedKernelType(t)) fail(ErrorCode::kUnsupported, "CumSum is not defined for {}", dtypeName(t));
  const int64_t n = outer * dim * inner;
  if (isHalf(t)) {
    std::vector<float> f = widen(t, xv, n), g(static_cast<size_t>(n));
    cumSum(DType::kF32, excl, rev, outer, dim, inner, f.data(), g.data());
    return narrow(t, g.data(), yv, n);
  }
  dispatch(t, [&]<typename T>() {
    const T* s = static_cast<const T*>(xv);
    T* d = static_cast<T*>(yv);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        T acc = T(0);
        for (int64_t k = 0; k < dim; ++k) {
          const int64_t i = rev ? dim - 1 - k : k;
          const int64_t off = (o * dim + i) * inner + in;
          const T next = wrap(acc, s[off], [](auto p, auto q) { return p + q; });
          d[off] = excl ? acc : next;
          acc = next;
        }
      }
  });
}

void clip(DType t, int64_t n, const void* xv, const void* lov, const void* hiv, void* yv) {
  if (t == DType::kBool) fail(ErrorCode::kUnsupported, "Clip is not defined for bool");
  if (isHalf(t)) {
    std::vector<float> x = widen(t, xv, n), lo = lov ? widen(t, lov, 1) : std::vector<float>{},
                       hi = hiv ? widen(t, hiv, 1) : std::vector<float>{};
    clip(DType::kF32, n, x.data(), lov ? lo.data() : nullptr, hiv ? hi.data() : nullptr, x.data());
    return narrow(t, x.data(), yv, n);
  }
  const bool ok = dispatch(t, [&]<typename T>() {
    const T lo = lov ? *static_cast<const T*>(lov) : std::numeric_limits<T>::lowest();
    const T hi = hiv ? *static_cast<const T*>(hiv) : std::numeric_limits<T>::max();
    const T* x = static_cast<const T*>(xv);
    T* y = static_cast<T*>(yv);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
  });
  if (!ok) fail(ErrorCode::kUnsupported, "Clip is not defined for {}", dtypeName(t));
}

int64_t rangeCount(double s, double l, double d) {
  if (d == 0) fail(ErrorCode::kInvalidInput, "Range: delta is 0");
  // The count, checked before it becomes an integer: a NaN, an infinity or a count past 2^40 (the most elements a
  // tensor holds) is an error, not an empty or wrapped tensor.
  const double count = std::ceil((l - s) / d);
  if (!std::isfinite(count)) fail(ErrorCode::kInvalidInput, "Range: start {}, limit {}, delta {}: the element count is not a number", s, l, d);
  if (count > static_cast<double>(int64_t{1} << 40))
    fail(ErrorCode::kInvalidInput, "Range: start {}, limit {}, delta {} give {:.0f} elements, more than a tensor holds (2^40)", s, l, d, count);
  return count > 0 ? static_cast<int64_t>(count) : 0;
}

double elementAsDouble(DType t, const void* p) {
  if (isHalf(t)) return widen(t, p, 1)[0];
  double v = 0;
  if (!dispatch(t, [&]<typename T>() { v = static_cast<double>(*static_cast<const T*>(p)); }))
    fail(ErrorCode::kUnsupported, "no number of type {}", dtypeName(t));
  return v;
}

void range(DType t, int64_t n, const void* start, const void* delta, void* yv) {
  if (t == DType::kBool) fail(ErrorCode::kUnsupported, "Range is not defined for bool");
  if (isHalf(t)) {
    std::vector<float> f(static_cast<size_t>(n));
    const double s = elementAsDouble(t, start), d = elementAsDouble(t, delta);
    for (int64_t i = 0; i < n; ++i) f[static_cast<size_t>(i)] = static_cast<float>(s + static_cast<double>(i) * d);
    return narrow(t, f.data(), yv, n);
  }
  const bool ok = dispatch(t, [&]<typename T>() {
    T* y = static_cast<T*>(yv);
    if constexpr (std::is_floating_point_v<T>) {
      const double s = *static_cast<const T*>(start), d = *static_cast<const T*>(delta);
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(s + static_cast<double>(i) * d);
    } else {  // wraps, no UB
      const auto s = static_cast<uint64_t>(*static_cast<const T*>(start)), d = static_cast<uint64_t>(*static_cast<const T*>(delta));
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(s + static_cast<uint64_t>(i) * d);
    }
  });
  if (!ok) fail(ErrorCode::kUnsupported, "Range is not defined for {}", dtypeName(t));
}

}  // namespace npuc::kernels
