// Activations that kernels can apply in their epilogue (fused into the producing op).
// The scalar definitions below are the specification; SIMD epilogues must give the same bits.
#pragma once

namespace npuc::kernels {

enum class ActKind { kNone, kRelu, kClip, kLeakyRelu, kHardSwish };

struct Activation {
  ActKind kind = ActKind::kNone;
  float a = 0.0f;  // kClip: lower bound; kLeakyRelu: alpha (kHardSwish: none)
  float b = 0.0f;  // kClip: upper bound
};

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
  }
  return v;
}

}  // namespace npuc::kernels
