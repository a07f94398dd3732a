// Numerics: how a target and its packages compute. One enum for the target files, the translator, the package
// format and the runtime; the names are what target files and manifests spell.
#pragma once

#include "npuc/dtype.hpp"

#include <iterator>
#include <optional>
#include <string>
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
  kInt8Symmetric,  // int8-symmetric (docs/numerics.md): int8-affine with every activation symmetric (zero point 0) at
                   // any scale (max |x| / 127): the worked example of adding a family
};

constexpr Numerics kLastNumerics = Numerics::kInt8Symmetric;

inline std::string_view numericsName(Numerics n) {
  switch (n) {
    case Numerics::kFp32: return "fp32";
    case Numerics::kFp16: return "fp16";
    case Numerics::kInt8: return "int8";
    case Numerics::kInt8Affine: return "int8-affine";
    case Numerics::kInt8Radix: return "int8-radix";
    case Numerics::kInt8Pow2: return "int8-pow2";
    case Numerics::kInt8Symmetric: return "int8-symmetric";
  }
  return "?";
}

inline std::optional<Numerics> numericsFromName(std::string_view s) {
  for (int i = 0; i <= static_cast<int>(kLastNumerics); ++i)
    if (s == numericsName(static_cast<Numerics>(i))) return static_cast<Numerics>(i);
  return std::nullopt;
}

/// Every family's name, "fp32, fp16, …" (for messages listing what is accepted).
inline std::string numericsNames() {
  std::string s;
  for (int i = 0; i <= static_cast<int>(kLastNumerics); ++i) s += std::string(i ? ", " : "") + std::string(numericsName(static_cast<Numerics>(i)));
  return s;
}

/// What a package of each numerics family holds: the facts the package format, its validator, the runtime and the
/// lowering ask (never the family itself). One row per family; the compiler's side of a family (calibration, graph
/// rewrites, files beside the package) is its strategy in src/driver/numerics/ (docs/numerics.md, "Adding a family").
struct NumericsTraits {
  Numerics id;
  bool packages;           // object packages exist (else: checked and estimated only)
  DType float_type;        // the element type of its float layers and weights (kUndefined: no packages)
  int activation_bytes;    // bytes of a stored activation value (the time estimate's data movement)
  bool affine_codes;       // int8 codes with a scale and zero point per tensor: the integer layers of quant.hpp
  bool symmetric_codes;    // ... every one symmetric (zero point 0)
  bool radix_codes;        // ... and at a power-of-two scale (Kneron's fixed point: float = fixed / 2^radix)
  bool pow2_codes;         // 8-bit codes at 2^-q chosen per frame in slots (TIDL's): pow2 layers, the manifest's pow2 block
  bool concat_in_place;    // a Concat's inputs may be written in place in its result (pow2: each input has its own q)
};

inline const NumericsTraits& numericsTraits(Numerics n) {
  static constexpr NumericsTraits kTable[] = {
      // id                     packages float_type    bytes affine symmetric radix pow2  concat in place
      {Numerics::kFp32,          true,  DType::kF32,       4, false, false, false, false, true},
      {Numerics::kFp16,          true,  DType::kF16,       2, false, false, false, false, true},
      {Numerics::kInt8,          false, DType::kUndefined, 1, false, false, false, false, true},
      {Numerics::kInt8Affine,    true,  DType::kF32,       1, true,  false, false, false, true},
      {Numerics::kInt8Radix,     true,  DType::kF32,       1, true,  true,  true,  false, true},
      {Numerics::kInt8Pow2,      true,  DType::kF32,       1, false, false, false, true,  false},
      {Numerics::kInt8Symmetric, true,  DType::kF32,       1, true,  true,  false, false, true},
  };
  static_assert([] {
    for (size_t i = 0; i < std::size(kTable); ++i)
      if (static_cast<size_t>(kTable[i].id) != i) return false;
    return std::size(kTable) == static_cast<size_t>(kLastNumerics) + 1;
  }(), "one row per Numerics value, in the enum's order");
  return kTable[static_cast<size_t>(n)];
}

/// The families whose packages exist, "fp32, fp16, …" (for messages).
inline std::string familiesWithPackages() {
  std::string s;
  for (int i = 0; i <= static_cast<int>(kLastNumerics); ++i)
    if (numericsTraits(static_cast<Numerics>(i)).packages) s += std::string(s.empty() ? "" : ", ") + std::string(numericsName(static_cast<Numerics>(i)));
  return s;
}

}  // namespace npuc
