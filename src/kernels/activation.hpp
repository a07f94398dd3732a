// Activations that kernels can apply in their epilogue (fused into the producing op).
// The scalar definitions below are the specification; SIMD epilogues must give the same bits.
#pragma once

namespace npuc::kernels {

// kHardSigmoid: ONNX HardSigmoid, clamp(a * x + b, 0, 1); kHardSigmoidMul: x * HardSigmoid(x; a, b), the
// HardSigmoid rounded to float before the product (the two ONNX ops as the engine fuses them into their producer).
enum class ActKind { kNone, kRelu, kClip, kLeakyRelu, kHardSwish, kHardSigmoid, kHardSigmoidMul };

struct Activation {
  ActKind kind = ActKind::kNone;
  float a = 0.0f;  // kClip: lower bound; kLeakyRelu, kHardSigmoid(Mul): alpha (kHardSwish: none)
  float b = 0.0f;  // kClip: upper bound; kHardSigmoid(Mul): beta
};

/// ONNX HardSigmoid as the unary op computes it: in double (the product exact), one rounding to float.
inline float hardSigmoid(float v, float alpha, float beta) {
  const double t = static_cast<double>(alpha) * static_cast<double>(v) + static_cast<double>(beta);
  return static_cast<float>(t < 0.0 ? 0.0 : (1.0 < t ? 1.0 : t));
}

inline float applyActivation(float v, const Activation& act) {
  switch (act.kind) {
    case ActKind::kNone: return v;
    case ActKind::kRelu: return v < 0.0f ? 0.0f : v;  // NaN passes through
    case ActKind::kClip: return v < act.a ? act.a : (v > act.b ? act.b : v);
    case ActKind::kLeakyRelu: return v < 0.0f ? v * act.a : v;
    case ActKind::kHardSwish: {  // (the unary op's definition: in double, one rounding; x / 6 as x * (1 / 6) gives
                                 // the same float for every x: kernels/x86/sigmoid_avx512.cpp)
      const double x = v, t = x * (1.0 / 6.0) + 0.5;
      return static_cast<float>(x * (t < 0.0 ? 0.0 : (1.0 < t ? 1.0 : t)));
    }
    case ActKind::kHardSigmoid: return hardSigmoid(v, act.a, act.b);
    case ActKind::kHardSigmoidMul: return v * hardSigmoid(v, act.a, act.b);
  }
  return v;
}

}  // namespace npuc::kernels
