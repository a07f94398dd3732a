// Activations that kernels can apply in their epilogue (fused into the producing op).
// The scalar definitions below are the specification; SIMD epilogues must give the same bits.
#pragma once

namespace npuc::kernels {

enum class ActKind { kNone, kRelu, kClip, kLeakyRelu };

struct Activation {
  ActKind kind = ActKind::kNone;
  float a = 0.0f;  // kClip: lower bound; kLeakyRelu: alpha
  float b = 0.0f;  // kClip: upper bound
};

inline float applyActivation(float v, const Activation& act) {
  switch (act.kind) {
    case ActKind::kNone: return v;
    case ActKind::kRelu: return v < 0.0f ? 0.0f : v;  // NaN passes through
    case ActKind::kClip: return v < act.a ? act.a : (v > act.b ? act.b : v);
    case ActKind::kLeakyRelu: return v < 0.0f ? v * act.a : v;
  }
  return v;
}

}  // namespace npuc::kernels
