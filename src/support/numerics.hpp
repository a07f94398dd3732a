// Numerics: how a target and its packages compute. One enum for the target files, the translator, the package
// format and the runtime; the names are what target files and manifests spell.
#pragma once

#include "npuc/dtype.hpp"

#include <optional>
#include <string_view>

namespace npuc {

enum class Numerics : uint8_t {
  kFp32,  // float32 weights and activations: the reference engine's bits
  kFp16,  // float16 storage, float32 accumulation, rounded once per layer output (docs/numerics.md)
  kInt8,  // integer targets (tidl): checked and estimated; no package until their profile (docs/roadmap.md)
  kInt8Affine,  // int8-affine (docs/numerics.md): int8 tensors between quantize / dequantize layers, float32 elsewhere
  kInt8Radix,   // int8-radix (Kneron, docs/numerics.md): int8-affine with every activation symmetric (zero point 0) at a
                // power-of-two scale 2^-radix, so that float = fixed / scale / 2^radix with scale 1
  kInt8Pow2,    // int8-pow2 (TIDL, docs/numerics.md): 8-bit codes at 2^-q chosen per frame (or frozen), numParamBits
                // weights, exact wide sums, quantRoundAdd rounding; float32 layers between conversion layers
};

inline std::string_view numericsName(Numerics n) {
  switch (n) {
    case Numerics::kFp32: return "fp32";
    case Numerics::kFp16: return "fp16";
    case Numerics::kInt8: return "int8";
    case Numerics::kInt8Affine: return "int8-affine";
    case Numerics::kInt8Radix: return "int8-radix";
    case Numerics::kInt8Pow2: return "int8-pow2";
  }
  return "?";
}

inline std::optional<Numerics> numericsFromName(std::string_view s) {
  for (Numerics n : {Numerics::kFp32, Numerics::kFp16, Numerics::kInt8, Numerics::kInt8Affine, Numerics::kInt8Radix, Numerics::kInt8Pow2})
    if (s == numericsName(n)) return n;
  return std::nullopt;
}

/// Numerics whose packages hold int8-affine codes (int8-radix is a restriction of int8-affine: the same layers,
/// kernels and package forms).
inline bool isInt8AffineFamily(Numerics n) { return n == Numerics::kInt8Affine || n == Numerics::kInt8Radix; }

/// Whether packages exist for these numerics yet.
inline bool numericsHasPackages(Numerics n) { return n != Numerics::kInt8; }

/// The element type of float activations and weights in a package of these numerics (kUndefined: none yet). An
/// int8-affine package's float layers (those without an integer form yet) compute in float32.
inline DType numericsFloatType(Numerics n) {
  return n == Numerics::kFp32 || isInt8AffineFamily(n) || n == Numerics::kInt8Pow2 ? DType::kF32 : n == Numerics::kFp16 ? DType::kF16 : DType::kUndefined;
}

}  // namespace npuc
