// Kernels of element-wise ops: unary math and activations, binary arithmetic/comparison/logic with numpy
// broadcasting, variadic Max/Min/Sum/Mean, Where, Clip, Cast, Identity, Dropout.
// Float16 inputs are computed in float32 and rounded back once per output.
#include "engine/elementwise_util.hpp"
#include "kernels/layers.hpp"
#include "ops/registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace npuc::engine {

void computeHalfAsFloat(KernelCall& call, const std::function<void(KernelCall&)>& body) {
  DType half = DType::kUndefined;
  for (auto& t : call.in)
    if (t.defined() && isHalfType(t.dtype())) half = t.dtype();
  if (half == DType::kUndefined) {
    body(call);
    return;
  }
  KernelCall wide{call.node, call.opset, {}, call.out_types, {}, call.pool};
  for (auto& t : call.in) wide.in.push_back(t.defined() && isHalfType(t.dtype()) ? castTensor(t, DType::kF32, call) : t);
  for (auto& t : wide.out_types)
    if (isHalfType(t.dtype)) t.dtype = DType::kF32;
  wide.out.resize(wide.out_types.size());
  body(wide);
  for (size_t i = 0; i < call.out.size(); ++i)
    if (wide.out[i].defined()) call.out[i] = castTensor(wide.out[i], call.out_types[i].dtype, call);
}

std::function<float(float)> activationFn(const std::string& name, float alpha, float beta) {
  using kernels::UnaryOp;
  UnaryOp op = kernels::unaryOpFromName(name.c_str());
  switch (op) {
    case UnaryOp::kRelu: case UnaryOp::kClip: case UnaryOp::kLeakyRelu: case UnaryOp::kSigmoid: case UnaryOp::kTanh:
    case UnaryOp::kHardSigmoid: case UnaryOp::kHardSwish: case UnaryOp::kSwish: case UnaryOp::kMish:
      return [op, alpha, beta](float x) { return kernels::unaryScalar(op, x, alpha, beta); };
    default: break;
  }
  fail(ErrorCode::kUnsupported, "activation '{}' is not supported", name);
}

Tensor castTensor(const Tensor& t, DType to, const KernelCall& call) {
  if (t.dtype() == to) return t;
  if (!kernels::typedKernelType(t.dtype()) || !kernels::typedKernelType(to))
    call.unsupported("a cast from {} to {} is not supported", dtypeName(t.dtype()), dtypeName(to));
  Tensor out(to, t.shape());
  kernels::castValues(t.dtype(), t.raw(), to, out.raw(), t.numel());
  return out;
}

namespace {

/// The kernel-library op of a float32 ONNX unary op, with its attributes in alpha / beta; kCount when the library
/// has none. ONNX Mish is not mapped: it rounds once (x * tanh(softplus(x)) in double), while the library's Mish is
/// the fused Softplus-Tanh-Mul chain (ai.npuc.Mish) that rounds after each op.
kernels::UnaryOp libraryUnary(const ir::Node& n, float& alpha, float& beta) {
  using kernels::UnaryOp;
  UnaryOp op = kernels::unaryOpFromName(n.op.c_str());
  // Clip's bounds are inputs from opset 11 (clipKernel); Swish and Mish are ai.npuc ops (their own kernels).
  if (op == UnaryOp::kMish || op == UnaryOp::kSwish || op == UnaryOp::kClip) return UnaryOp::kCount;
  const kernels::UnaryAttrs attrs = kernels::unaryOpAttrs(op);  // the attributes alpha and beta come from
  alpha = *attrs.alpha ? ops::attrFloat(n, attrs.alpha) : 0.0f;
  beta = *attrs.beta ? ops::attrFloat(n, attrs.beta) : 0.0f;
  return op;
}

// Unary float op: fn(double-or-float x) with attributes captured (float64 tensors, and the float32 ops the kernel
// library lacks).
using UnaryF = std::function<double(double)>;

UnaryF unaryFloatFn(const ir::Node& n) {
  const std::string& op = n.op;
  if (op == "Exp") return [](double x) { return std::exp(x); };
  if (op == "Log") return [](double x) { return std::log(x); };
  if (op == "Sqrt") return [](double x) { return std::sqrt(x); };
  if (op == "Erf") return [](double x) { return std::erf(x); };
  if (op == "Reciprocal") return [](double x) { return 1.0 / x; };
  if (op == "Sigmoid") return [](double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); };
  if (op == "Tanh") return [](double x) { return std::tanh(x); };
  if (op == "Softplus") return [](double x) { return x > 30 ? x : std::log1p(std::exp(x)); };
  if (op == "Softsign") return [](double x) { return x / (1.0 + std::fabs(x)); };
  if (op == "Mish") return [](double x) { return x * std::tanh(x > 30 ? x : std::log1p(std::exp(x))); };
  if (op == "Sin") return [](double x) { return std::sin(x); };
  if (op == "Cos") return [](double x) { return std::cos(x); };
  if (op == "Tan") return [](double x) { return std::tan(x); };
  if (op == "Asin") return [](double x) { return std::asin(x); };
  if (op == "Acos") return [](double x) { return std::acos(x); };
  if (op == "Atan") return [](double x) { return std::atan(x); };
  if (op == "Sinh") return [](double x) { return std::sinh(x); };
  if (op == "Cosh") return [](double x) { return std::cosh(x); };
  if (op == "Asinh") return [](double x) { return std::asinh(x); };
  if (op == "Acosh") return [](double x) { return std::acosh(x); };
  if (op == "Atanh") return [](double x) { return std::atanh(x); };
  if (op == "Round") return [](double x) { return std::nearbyint(x); };
  if (op == "Elu") {
    double a = ops::attrFloat(n, "alpha");
    return [a](double x) { return x < 0 ? a * (std::exp(x) - 1.0) : x; };
  }
  if (op == "Celu") {
    double a = ops::attrFloat(n, "alpha");
    return [a](double x) { return std::max(0.0, x) + std::min(0.0, a * (std::exp(x / a) - 1.0)); };
  }
  if (op == "Selu") {
    double a = ops::attrFloat(n, "alpha"), g = ops::attrFloat(n, "gamma");
    return [a, g](double x) { return x <= 0 ? g * (a * std::exp(x) - a) : g * x; };
  }
  if (op == "LeakyRelu") {
    double a = ops::attrFloat(n, "alpha");
    return [a](double x) { return x < 0 ? a * x : x; };
  }
  if (op == "ThresholdedRelu") {
    double a = ops::attrFloat(n, "alpha");
    return [a](double x) { return x > a ? x : 0.0; };
  }
  if (op == "HardSigmoid") {
    double a = ops::attrFloat(n, "alpha"), b = ops::attrFloat(n, "beta");
    return [a, b](double x) { return std::clamp(a * x + b, 0.0, 1.0); };
  }
  if (op == "HardSwish") return [](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); };
  if (op == "Shrink") {
    double bias = ops::attrFloat(n, "bias"), l = ops::attrFloat(n, "lambd");
    return [bias, l](double x) { return x < -l ? x + bias : (x > l ? x - bias : 0.0); };
  }
  return nullptr;
}

void unaryKernel(KernelCall& call) {
  const Tensor& x = call.input(0);
  const std::string& op = call.node.op;
  int64_t n = x.numel();
  if (op == "Identity") { call.alias(0, x); return; }
  if (op == "Not" || op == "IsNaN" || op == "IsInf") {  // bool results: the typed kernels (kernels/typed.hpp)
    const kernels::TypedUnaryOp k = kernels::typedUnaryOpFromName(op);
    const std::string why = kernels::typedUnaryRule(k, x.dtype());
    if (!why.empty()) call.error("{}", why);
    const uint32_t flags = (call.node.attrInt("detect_negative", 1) ? 1u : 0u) | (call.node.attrInt("detect_positive", 1) ? 2u : 0u);
    kernels::typedUnary(k, x.dtype(), n, x.raw(), call.alloc(0).raw(), flags);
    return;
  }
  computeHalfAsFloat(call, [&](KernelCall& c) {
    const Tensor& in = c.input(0);
    Tensor& y = c.alloc(0);
    DType t = in.dtype();
    if (t == DType::kF32) {
      float alpha, beta;
      kernels::UnaryOp k = libraryUnary(c.node, alpha, beta);
      if (k != kernels::UnaryOp::kCount) {
        kernels::unaryFast(k, alpha, beta, n, in.data<float>(), y.data<float>(), c.pool);
        return;
      }
    }
    if (op == "Abs" || op == "Neg" || op == "Sign" || op == "Relu" || op == "Ceil" || op == "Floor") {
      const kernels::TypedUnaryOp k = kernels::typedUnaryOpFromName(op);
      const std::string why = kernels::typedUnaryRule(k, t);
      if (!why.empty()) c.unsupported("{}", why);
      kernels::typedUnary(k, t, n, in.raw(), y.raw());
      return;
    }
    UnaryF f = unaryFloatFn(c.node);
    if (!f) c.unsupported("no kernel for {}", op);
    if (t == DType::kF32) {
      const float* s = in.data<float>();
      float* d = y.data<float>();
      c.pool->parallelFor(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) d[i] = static_cast<float>(f(static_cast<double>(s[i])));
      }, std::max<int64_t>(4096, n / (4 * c.pool->size()) + 1));
    } else if (t == DType::kF64) {
      const double* s = in.data<double>();
      double* d = y.data<double>();
      for (int64_t i = 0; i < n; ++i) d[i] = f(s[i]);
    } else {
      c.unsupported("{} needs a floating-point input, got {}", op, dtypeName(t));
    }
  });
}

// Clip: the kernel the package's clip layer runs (opset 11 on; before, the bounds are float attributes).
void clipKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.alloc(0);
  if (x.dtype() == DType::kBool) c.unsupported("Clip is not defined for bool");
  Tensor b[2];
  const void* bp[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    if (c.opset < 11) {
      const float big = std::numeric_limits<float>::max();
      b[i] = castTensor(Tensor::scalar<float>(c.node.attrFloat(i ? "max" : "min", i ? big : -big)), x.dtype(), c);
    } else if (c.has(i + 1)) {
      b[i] = castTensor(c.input(i + 1), x.dtype(), c);
    } else {
      continue;
    }
    bp[i] = b[i].raw();
  }
  kernels::clip(x.dtype(), x.numel(), x.raw(), bp[0], bp[1], y.raw());
}

kernels::TypedBinaryOp typedBinaryOpOf(const ir::Node& node) {
  return kernels::typedBinaryOpForOnnx(node.op, node.attrInt("fmod", 0), node.attrString("direction", "") == "LEFT");
}

/// y = op(a, b) with broadcasting; a and b have the same dtype: the typed kernels (kernels/typed.hpp).
void binaryApply(kernels::TypedBinaryOp k, const Tensor& a, const Tensor& b, Tensor& y, const KernelCall& c) {
  if (k == kernels::TypedBinaryOp::kCount) c.unsupported("no kernel for {}", c.node.op);
  const std::string why = kernels::typedBinaryRule(k, a.dtype());
  if (!why.empty()) c.unsupported("{}", why);
  kernels::typedBinary(k, a.dtype(), a.shape(), a.raw(), b.shape(), b.raw(), y.shape(), y.raw());
}

void binaryKernel(KernelCall& call) {
  computeHalfAsFloat(call, [](KernelCall& c) {
    const Tensor& a = c.input(0);
    Tensor b = c.input(1);
    if (b.dtype() != a.dtype()) b = castTensor(b, a.dtype(), c);  // Pow / PRelu with mixed types
    Tensor& y = c.alloc(0);
    binaryApply(typedBinaryOpOf(c.node), a, b, y, c);
  });
}

/// Float32 Add/Sub/Mul/Div of same-shape inputs (the residual connections of CNNs), split across threads by
/// output ranges, with an optional activation applied in the same pass: y = act(a op b). Every element is the
/// same computation as the separate ops, so the bits are those of the unfused graph at any thread count.
class ArithKernel : public Kernel {
  template <int K>
  static float apply(float a, float b) {
    if constexpr (K == 0) return a + b;
    else if constexpr (K == 1) return a - b;
    else if constexpr (K == 2) return a * b;
    else return a / b;
  }
  // Straight loops per (operator, activation) so that they vectorise.
  template <int K>
  static void run(const float* a, const float* b, float* y, int64_t s, int64_t e, const kernels::Activation& act) {
    if (act.kind == kernels::ActKind::kNone) {
      for (int64_t i = s; i < e; ++i) y[i] = apply<K>(a[i], b[i]);
    } else if (act.kind == kernels::ActKind::kRelu) {
      for (int64_t i = s; i < e; ++i) {
        float v = apply<K>(a[i], b[i]);
        y[i] = v < 0.0f ? 0.0f : v;
      }
    } else {
      for (int64_t i = s; i < e; ++i) y[i] = kernels::applyActivation(apply<K>(a[i], b[i]), act);
    }
  }

  /// One operand whole, the other one value per row of the first's trailing dims (an SE gate's [N, C, H, W] x
  /// [N, C, 1, 1], a per-channel bias): the rows and their length, and which operand is the per-row one; false
  /// otherwise.
  static bool rowwise(const Shape& as, const Shape& bs, int64_t& rows, int64_t& len, bool& b_small) {
    const size_t r = std::max(as.size(), bs.size());
    auto dim = [&](const Shape& s, size_t k) { return k < r - s.size() ? int64_t{1} : s[k - (r - s.size())]; };
    for (int side = 0; side < 2; ++side) {
      const Shape &big = side == 0 ? as : bs, &small = side == 0 ? bs : as;
      if (big.size() != r) continue;
      size_t k = r;  // small = big on [0, k), 1 on [k, r)
      while (k > 0 && dim(small, k - 1) == 1) --k;
      bool ok = k < r;
      for (size_t i = 0; ok && i < k; ++i) ok = dim(small, i) == big[i];
      if (!ok) continue;
      rows = 1, len = 1;
      for (size_t i = 0; i < r; ++i) (i < k ? rows : len) *= big[i];
      b_small = side == 0;
      return len > 1;
    }
    return false;
  }
  template <int K>
  static void runRows(const float* big, const float* small, bool b_small, float* y, int64_t len, int64_t s, int64_t e,
                      const kernels::Activation& act) {
    for (int64_t r = s; r < e; ++r) {
      const float v = small[r];
      const float* x = big + r * len;
      float* o = y + r * len;
      if (b_small) {
        for (int64_t i = 0; i < len; ++i) o[i] = apply<K>(x[i], v);
      } else {
        for (int64_t i = 0; i < len; ++i) o[i] = apply<K>(v, x[i]);
      }
      if (act.kind != kernels::ActKind::kNone)
        for (int64_t i = 0; i < len; ++i) o[i] = kernels::applyActivation(o[i], act);
    }
  }

 public:
  void run(KernelCall& c) override {
    const std::string& op = c.node.op;
    const bool f32 = c.has(0) && c.has(1) && c.input(0).dtype() == DType::kF32 && c.input(1).dtype() == DType::kF32;
    bool fast = f32 && c.input(0).shape() == c.input(1).shape();
    int64_t rows = 0, len = 0;
    bool b_small = false;
    if (f32 && !fast && rowwise(c.input(0).shape(), c.input(1).shape(), rows, len, b_small)) {
      // (each element the broadcast op's own computation: the bits of the general kernel at any thread count)
      const float* big = (b_small ? c.input(0) : c.input(1)).data<float>();
      const float* small = (b_small ? c.input(1) : c.input(0)).data<float>();
      float* y = c.alloc(0).data<float>();
      const int kind = op == "Add" ? 0 : op == "Sub" ? 1 : op == "Mul" ? 2 : 3;
      const kernels::Activation act = act_;
      c.pool->parallelFor(rows, [&](int64_t s, int64_t e) {
        switch (kind) {
          case 0: runRows<0>(big, small, b_small, y, len, s, e, act); break;
          case 1: runRows<1>(big, small, b_small, y, len, s, e, act); break;
          case 2: runRows<2>(big, small, b_small, y, len, s, e, act); break;
          default: runRows<3>(big, small, b_small, y, len, s, e, act); break;
        }
      }, std::max<int64_t>(1, 16384 / len));
      return;
    }
    if (!fast) {
      binaryKernel(c);
      if (act_.kind != kernels::ActKind::kNone) {
        Tensor& y = c.out[0];
        for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = kernels::applyActivation(y.data<float>()[i], act_);
      }
      return;
    }
    const float* a = c.input(0).data<float>();
    const float* b = c.input(1).data<float>();
    Tensor& yt = c.alloc(0);
    float* y = yt.data<float>();
    int kind = op == "Add" ? 0 : op == "Sub" ? 1 : op == "Mul" ? 2 : 3;
    const kernels::Activation act = act_;
    c.pool->parallelFor(yt.numel(), [&](int64_t s, int64_t e) {
      switch (kind) {
        case 0: run<0>(a, b, y, s, e, act); break;
        case 1: run<1>(a, b, y, s, e, act); break;
        case 2: run<2>(a, b, y, s, e, act); break;
        default: run<3>(a, b, y, s, e, act); break;
      }
    }, std::max<int64_t>(16384, yt.numel() / (4 * c.pool->size()) + 1));
  }
  bool fuseActivation(const kernels::Activation& act) override {
    if (act_.kind != kernels::ActKind::kNone) return false;
    act_ = act;
    return true;
  }

 private:
  kernels::Activation act_;
};

void variadicKernel(KernelCall& call) {
  computeHalfAsFloat(call, [](KernelCall& c) {
    const std::string& op = c.node.op;
    std::string pair = op == "Sum" || op == "Mean" ? "Add" : op;
    Tensor acc = c.input(0);
    for (int i = 1; i < static_cast<int>(c.in.size()); ++i) {
      const Tensor& b = c.input(i);
      Shape s;
      Tensor next(acc.dtype(), [&] { Shape o; (void)s; std::vector<int64_t> r; Shape out; 
        size_t rk = std::max(acc.shape().size(), b.shape().size()); out.assign(rk, 1);
        for (size_t k = 0; k < rk; ++k) {
          int64_t da = k < rk - acc.shape().size() ? 1 : acc.shape()[k - (rk - acc.shape().size())];
          int64_t db = k < rk - b.shape().size() ? 1 : b.shape()[k - (rk - b.shape().size())];
          out[k] = da == 1 ? db : da;
        }
        return out; }());
      binaryApply(kernels::typedBinaryOpFromName(pair), acc, b, next, c);
      acc = next;
    }
    Tensor& y = c.alloc(0);
    if (acc.shape() != y.shape()) c.error("internal: variadic result shape mismatch");
    if (op == "Mean") {
      int64_t k = static_cast<int64_t>(c.in.size());
      dispatchNumeric(acc.dtype(), c, [&]<typename T>() {
        if constexpr (std::is_floating_point_v<T>)
          for (int64_t i = 0; i < y.numel(); ++i) y.data<T>()[i] = acc.data<T>()[i] / static_cast<T>(k);
        else c.unsupported("Mean needs floating point");
      });
    } else {
      std::memcpy(y.raw(), acc.raw(), y.nbytes());
    }
  });
}

void whereKernel(KernelCall& c) {
  const Tensor& cond = c.input(0);
  const Tensor& a = c.input(1);
  const Tensor& b = c.input(2);
  if (cond.dtype() != DType::kBool) c.error("the condition must be bool, got {}", dtypeName(cond.dtype()));
  if (a.dtype() != b.dtype()) c.error("X and Y differ in type ({} and {})", dtypeName(a.dtype()), dtypeName(b.dtype()));
  Tensor& y = c.alloc(0);
  // Bits selected, any element type (bool is one byte, 0 or 1); the package's where layer runs this same kernel.
  kernels::where(cond.shape(), static_cast<const uint8_t*>(cond.raw()), a.shape(), a.raw(), b.shape(), b.raw(), y.shape(),
                 dtypeSize(a.dtype()), y.raw(), c.pool);
}

/// Cast / CastLike. Narrowing to bfloat16 truncates, as the ONNX reference of these opsets does (npuc's own
/// float -> bfloat16 rounding elsewhere is to nearest even).
void castKernel(KernelCall& c) {
  DType to = c.out_types[0].dtype;
  const Tensor& x = c.input(0);
  if (to == DType::kBF16 && x.dtype() != DType::kBF16) {
    Tensor f = castTensor(x, DType::kF32, c);
    Tensor& y = c.alloc(0);
    const float* s = f.data<float>();
    uint16_t* d = static_cast<uint16_t*>(y.raw());
    for (int64_t i = 0; i < f.numel(); ++i) d[i] = floatToBf16Truncate(s[i]);
    return;
  }
  c.out[0] = castTensor(x, to, c);
}

}  // namespace

void registerElementwiseKernels(KernelRegistry& r) {
  for (const char* op : {"Abs", "Ceil", "Floor", "Neg", "Sqrt", "Exp", "Log", "Erf", "Reciprocal", "Sigmoid", "Tanh",
                         "Relu", "Sign", "Softplus", "Softsign", "Elu", "Selu", "LeakyRelu", "HardSigmoid", "HardSwish",
                         "Mish", "Not", "Identity", "Round", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
                         "Asinh", "Acosh", "Atanh", "IsNaN", "IsInf", "ThresholdedRelu", "Celu", "Shrink"})
    r.addFn(op, unaryKernel);
  r.addFn("Clip", clipKernel);
  r.addFn("Dropout", [](KernelCall& c) {
    // Training mode drops at random, unless the ratio is 0: then nothing is dropped and the scale 1 / (1 - ratio)
    // is 1 — an identity, as torchvision's exports of Swin-T and ViT ask for.
    if (c.has(2) && c.input(2).toDouble().at(0) != 0) {
      double ratio = c.has(1) ? c.input(1).toDouble().at(0) : 0.5;
      if (ratio != 0)
        c.unsupported("training_mode=true with ratio {} (random dropout) is not supported; npuc runs inference", ratio);
    }
    c.alias(0, c.input(0));
    if (c.numOutputs() > 1 && c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoValue) {
      Tensor& m = c.alloc(1);
      std::memset(m.raw(), 1, m.nbytes());
    }
  });
  r.addFn("Cast", castKernel);
  r.addFn("CastLike", castKernel);
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    r.add(op, [](const ir::Node&, const ir::Graph&) { return std::make_unique<ArithKernel>(); });
  for (const char* op : {"Pow", "PRelu", "Mod", "BitShift", "Equal", "Greater", "Less",
                         "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor"})
    r.addFn(op, binaryKernel);
  for (const char* op : {"Max", "Min", "Mean", "Sum"}) r.addFn(op, variadicKernel);
  r.addFn("Where", whereKernel);
  for (const char* op : {"Swish", "Mish", "HardSwish"})
    r.addFn(op, [](KernelCall& c) {
      kernels::UnaryOp op = kernels::unaryOpFromName(c.node.op.c_str());
      computeHalfAsFloat(c, [&](KernelCall& k) {
        const Tensor& x = k.input(0);
        if (x.dtype() != DType::kF32) k.unsupported("{} needs float input", k.node.op);
        Tensor& y = k.alloc(0);
        kernels::unaryFast(op, 0.0f, 0.0f, x.numel(), x.data<float>(), y.data<float>(), k.pool);
      });
    }, "ai.npuc");
}

}  // namespace npuc::engine
