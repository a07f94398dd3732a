// Shape ranges (docs/package-format.md, "Shape ranges"): one package serving every size of an input's ranged
// dimensions (Ascend ATC's --input_shape "data:1,3,224~448,224~448"). The package is written at its capacity — its
// descriptors, address map and weights are an ordinary package's, every tensor at the largest size it takes over the
// ranges — and its manifest's "shape_ranges" says, for each reference dimension that follows a ranged one, its value
// at every size of that range (a table the translator computed from the model's own shape inference). The runtime
// specializes the package to the sizes an inference gives (specializeShapes: those dims and byte counts, then the
// reader's whole check again) and runs it as an ordinary package: no kind needs code of its own for it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace npuc::package {

struct Package;

/// A ranged dimension: dimension `dim` of the model tensor `value` (a package input, or the output of the package's
/// dynamic AIPP layer: the picture it makes) takes any size in [lo, hi], and the dims in `also` with it.
struct RangeSymbol {
  std::string value;
  uint32_t dim = 0;
  uint32_t lo = 1, hi = 1;
  /// Other ranged dims the model needs of the same size (an image and its mask): they take this one's size.
  std::vector<std::pair<std::string, uint32_t>> also;
  bool operator==(const RangeSymbol&) const = default;
};
/// A dimension as a function of one symbol: values[v - lo] at size v.
struct RangeFunction {
  uint32_t symbol = 0;
  std::vector<uint32_t> values;
  bool operator==(const RangeFunction&) const = default;
};
/// Dimension `dim` of reference `ref` (inputs then outputs) of the descriptor of program order `seq` follows function
/// `fn`.
struct RangedDim {
  uint32_t seq = 0, ref = 0, dim = 0, fn = 0;
  bool operator==(const RangedDim&) const = default;
};
/// Dimension `dim` of package input (or output) `index` follows function `fn`.
struct RangedIo {
  bool output = false;
  uint32_t index = 0, dim = 0, fn = 0;
  bool operator==(const RangedIo&) const = default;
};
struct ShapeRanges {
  std::vector<RangeSymbol> symbols;
  std::vector<RangeFunction> functions;
  std::vector<RangedDim> dims;
  std::vector<RangedIo> io;
  bool operator==(const ShapeRanges&) const = default;
};
/// The most sizes one symbol may span, and the most symbols.
inline constexpr uint32_t kMaxRangeSpan = 1u << 16;
inline constexpr size_t kMaxRangeSymbols = 8;

/// The checks of validatePackage: symbols within kMaxRangeSpan, each naming a package input or a dynamic AIPP layer's
/// output; functions of the symbol's length with every value from 1 to the reference's own dimension (the package's
/// capacity: a specialized tensor never outgrows its memory); every index inside the program, once.
void checkShapeRanges(const Package& p, const std::string& where);

/// `p` at the sizes `at` (one per symbol, each inside its range; else kInvalidArgument naming the symbol and range):
/// the ranged dimensions and the byte counts of their references set, no ranges left, checked by validatePackage.
Package specializeShapes(const Package& p, const std::vector<int64_t>& at, const std::string& where);
/// "data[2] 224~448, data[3] 224~448" for messages.
std::string rangesText(const ShapeRanges& r);

}  // namespace npuc::package
